"""lightgrad.distributed and DistributedDataParallel.

The MPI tests launch ``mpiexec -n 2`` / ``-n 3`` jobs running tests/dist_scripts/*.py; each
script checks its results itself (against NumPy or a non-distributed replica) and prints one
``OK rank r of n`` line per rank. They are skipped when mpi4py is not installed.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import lightgrad as lg
import lightgrad.distributed as dist

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = ROOT / "tests" / "dist_scripts"


def _mpi_ready() -> bool:
    """mpi4py is installed and an mpiexec can be found to start jobs with."""
    if not dist.is_available():
        return False
    try:
        dist.launch_command(1)
    except RuntimeError:
        return False
    return True


needs_mpi = pytest.mark.skipif(not _mpi_ready(), reason="mpi4py or mpiexec is not installed")


def run_mpi(n: int, *args: str, timeout: float = 60) -> tuple[int, str, float]:
    """Run ``args`` (a script and its arguments) in ``n`` MPI processes; (exit code, output, seconds)."""
    cmd = dist.launch_command(n) + list(args)
    # one BLAS thread per rank: the ranks already share the cores
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    start = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                            cwd=ROOT, start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)  # mpiexec and every rank it started
        out, _ = proc.communicate()
        pytest.fail(f"MPI job hung for more than {timeout} s: {' '.join(cmd)}\n{out}")
    return proc.returncode, out, time.monotonic() - start


def assert_all_ok(n: int, rc: int, out: str) -> None:
    assert rc == 0, out
    for r in range(n):
        assert f"OK rank {r} of {n}" in out, out


# ---- collectives and DDP across processes --------------------------------------------------------

@needs_mpi
@pytest.mark.parametrize("n", [2, 3])
def test_collectives(n: int) -> None:
    rc, out, _ = run_mpi(n, str(SCRIPTS / "collectives.py"))
    assert_all_ok(n, rc, out)


@needs_mpi
@pytest.mark.parametrize("n", [2, 3])
def test_ddp_matches_single_process(n: int, tmp_path: Path) -> None:
    rc, out, _ = run_mpi(n, str(SCRIPTS / "ddp.py"), str(tmp_path / "ckpt.safetensors"))
    assert_all_ok(n, rc, out)


@needs_mpi
@pytest.mark.parametrize("mode, collective", [("raise", "all_reduce(SUM)"),
                                              ("hang", "DistributedDataParallel's gradient all_reduce")])
def test_failed_rank_makes_others_raise(mode: str, collective: str) -> None:
    timeout = 4  # also the limit for the ranks' start-up skew (imports) on a loaded machine
    rc, out, took = run_mpi(2, str(SCRIPTS / "failure.py"), mode, str(timeout))
    assert rc != 0, out
    assert "rank 0 started" in out and "rank 1 started" in out, out
    assert f"DistBackendError: lightgrad.distributed: {collective}" in out, out
    assert f"timed out after {timeout} s on rank 0 of 2" in out, out
    assert "finished unexpectedly" not in out, out
    # launch (~2 s) + timeout; 'hang' also shows that the job is aborted rather than waiting for rank 1
    assert took < timeout + 20, (took, out)


@needs_mpi
def test_dead_rank_ends_the_job() -> None:
    timeout = 60  # far longer than the test allows: the launcher must end the job, not the timeout
    rc, out, took = run_mpi(2, str(SCRIPTS / "failure.py"), "die", str(timeout), timeout=40)
    assert rc != 0, out
    assert "finished unexpectedly" not in out, out
    assert took < 30, (took, out)


@needs_mpi
def test_example_trains() -> None:
    rc, out, _ = run_mpi(2, str(ROOT / "examples" / "ddp_train.py"), "--epochs", "2", "--samples", "512")
    assert rc == 0, out
    assert "rank 0: epoch 2" in out, out


# ---- in-process: errors and helpers that need no MPI job ---------------------------------------

def test_backend_names_and_errors_before_init() -> None:
    assert not dist.is_initialized()
    with pytest.raises(RuntimeError, match="nccl"):
        dist.init_process_group("nccl")
    with pytest.raises(ValueError, match="Invalid backend"):
        dist.init_process_group("bogus")
    with pytest.raises(ValueError, match="timeout"):
        dist.init_process_group("gloo", timeout=0)
    with pytest.raises(ValueError, match="has not been initialized"):
        dist.get_rank()
    with pytest.raises(ValueError, match="has not been initialized"):
        dist.all_reduce(lg.ones(2))
    assert not dist.is_initialized() and not dist.is_nccl_available()


def test_ddp_needs_a_process_group() -> None:
    from lightgrad import nn
    from lightgrad.nn.parallel import DistributedDataParallel
    with pytest.raises(ValueError, match="has not been initialized"):
        DistributedDataParallel(nn.Linear(2, 2))


@needs_mpi
def test_launch_command() -> None:
    cmd = dist.launch_command(3)
    assert cmd[-3:] == ["-n", "3", sys.executable] and "mpiexec" in Path(cmd[0]).name
    with pytest.raises(ValueError, match="nproc"):
        dist.launch_command(0)


# ---- DistributedSampler (lightgrad.utils.data.distributed) --------------------------------------

@pytest.mark.parametrize("size", [1, 5, 10, 11])
@pytest.mark.parametrize("replicas", [1, 2, 3, 4])
@pytest.mark.parametrize("drop_last", [False, True])
def test_sampler_matches_torch_unshuffled(size: int, replicas: int, drop_last: bool) -> None:
    torch = pytest.importorskip("torch")
    from lightgrad.utils.data.distributed import DistributedSampler
    data = list(range(size))
    for rank in range(replicas):
        ours = DistributedSampler(data, replicas, rank, shuffle=False, drop_last=drop_last)
        theirs = torch.utils.data.distributed.DistributedSampler(data, replicas, rank, shuffle=False,
                                                                 drop_last=drop_last)
        assert list(ours) == list(theirs) and len(ours) == len(theirs)


def test_sampler_shuffle_partitions_each_epoch() -> None:
    from lightgrad.utils.data.distributed import DistributedSampler
    data = list(range(10))

    def epoch(e: int, seed: int = 0) -> list[list[int]]:
        out = []
        for rank in range(3):
            s = DistributedSampler(data, num_replicas=3, rank=rank, seed=seed)
            s.set_epoch(e)
            out.append(list(s))
        return out

    shares = epoch(0)
    assert [len(s) for s in shares] == [4, 4, 4]
    every = sorted(sum(shares, []))
    assert set(every) == set(data) and len(every) == 12  # all ten, two padded repeats
    assert epoch(0) == shares and epoch(1) != shares and epoch(0, seed=1) != shares
    with pytest.raises(ValueError, match="Invalid rank"):
        DistributedSampler(data, num_replicas=2, rank=2)
