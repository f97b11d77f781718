"""Run under mpiexec -n 2 with a mode: rank 1 fails; rank 0 must raise a clear timeout error.

raise: rank 1 raises before an all_reduce.   hang: rank 1 stalls instead of a DDP backward.
die: rank 1's process ends abruptly (no MPI_Finalize); mpiexec tears the job down by itself.
"""

import os
import sys
import time

import lightgrad as lg
import lightgrad.distributed as dist
from lightgrad import nn
from lightgrad.nn.parallel import DistributedDataParallel as DDP


def main() -> None:
    mode, timeout = sys.argv[1], float(sys.argv[2])
    dist.init_process_group("mpi", timeout=timeout)
    r = dist.get_rank()
    dist.barrier()  # everyone is alive up to here
    print(f"rank {r} started", flush=True)
    if mode in ("raise", "die"):
        if r == 1 and mode == "raise":
            raise ValueError("rank 1 fails on purpose")
        if r == 1:
            os._exit(3)
        dist.all_reduce(lg.ones(3))
    elif mode == "hang":
        model = DDP(nn.Linear(4, 2))
        if r == 1:
            time.sleep(120)  # stuck (the job must be torn down long before this ends)
        model(lg.ones(2, 4)).sum().backward()
    print(f"rank {r} finished unexpectedly", flush=True)


if __name__ == "__main__":
    main()
