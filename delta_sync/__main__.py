from delta_sync.launch import main

main()
