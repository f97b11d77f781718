"""``python -m lightgrad.distributed -n 2 train.py [args...]``: run a script in N MPI processes."""

from .launch import main

main()
