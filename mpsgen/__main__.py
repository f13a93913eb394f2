from mpsgen.console import main

main()
