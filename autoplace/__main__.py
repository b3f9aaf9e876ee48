from autoplace.cli import main

main()
