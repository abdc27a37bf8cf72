from planner.cli.app import main

main()
