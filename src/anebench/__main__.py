from anebench.cli import main

main()
