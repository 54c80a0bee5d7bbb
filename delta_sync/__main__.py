from delta_sync.cli.launch import main

main()
