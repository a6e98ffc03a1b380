from attnkata.cli.app import main

main()
