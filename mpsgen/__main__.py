from mpsgen.cli import main

main()
