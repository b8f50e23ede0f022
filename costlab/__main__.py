from costlab.cli import main

main()
