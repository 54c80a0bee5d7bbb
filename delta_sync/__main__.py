from delta_sync.cli import main

main()
