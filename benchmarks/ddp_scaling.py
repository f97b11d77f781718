"""DistributedDataParallel scaling: an MLP (or, with --model transformer, the transformer) step on 1 and 2 MPI processes.

    python -m benchmarks.ddp_scaling            # prints a table; --json for one JSON line

MLP 784-512-256-10 (float32), batch 512 per rank, SGD; every rank uses one BLAS thread, so N
ranks use N cores. 1-rank and 2-rank jobs alternate for a few rounds, and each time reported is
the fastest round's (on a shared machine, the least disturbed one). Reported: time per step and
samples per second for one process without DDP, one DDP rank, two independent processes without
DDP at once (the ceiling for two ranks on this machine at that moment), and two DDP ranks; the
throughput ratio (target: 2 ranks >= 1.6x one process); the time per step spent in DDP's gradient
reduction (copying into buckets, the allreduce, waiting for the slower rank, copying back); and
the time of a bare allreduce against message size. The load average is printed with the figures:
other processes on a 2-core machine skew them. Not a runner workload: it needs MPI processes, so
it has ``main()`` and no ``WORKLOADS``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SIZES = [1 << 12, 1 << 16, 1 << 20, 1 << 22, 1 << 24]  # allreduce message sizes, bytes


def _time_steps(step: Any, sync: Any, steps: int, repeats: int) -> float:
    """Best over ``repeats`` of the mean seconds per step of ``steps`` steps (ranks aligned).

    The best, not the median: on a shared machine the slower repeats measure the other processes.
    """
    out = []
    for _ in range(repeats):
        sync()
        t0 = time.perf_counter()
        for _ in range(steps):
            step()
        sync()
        out.append((time.perf_counter() - t0) / steps)
    return min(out)


def worker(args: argparse.Namespace) -> None:
    """One rank: time the training step (with DDP, and for 1 rank also without), then allreduce sizes."""
    import numpy as np

    import lightgrad as lg
    import lightgrad.distributed as dist
    from lightgrad import nn
    from lightgrad.nn import functional as F
    from lightgrad.nn.parallel import DistributedDataParallel as DDP

    dist.init_process_group("mpi", timeout=120)
    rank, world = dist.get_rank(), dist.get_world_size()
    lg.manual_seed(rank)
    if args.model == "transformer":
        from benchmarks.nn_models import transformer_block_lm
        x = lg.randint(0, 65, (args.batch, 64))
        y = lg.randint(0, 65, (args.batch, 64))
    else:
        x = lg.randn(args.batch, 784)
        y = lg.randint(0, 10, (args.batch,))

    def mlp() -> nn.Module:
        lg.manual_seed(0)
        if args.model == "transformer":
            return transformer_block_lm(lg)
        return nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(), nn.Linear(256, 10))

    def stepper(model: nn.Module) -> Any:
        opt = lg.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

        def step() -> None:
            opt.zero_grad()
            out = model(x)
            F.cross_entropy(out.reshape(-1, out.shape[-1]), y.reshape(-1)).backward()
            opt.step()
        return step

    res: dict[str, Any] = {"world": world, "batch_per_rank": args.batch}
    # without DDP: with 2 ranks, two processes stepping independently over the same time window
    # (aligned by barriers around each repeat, none inside), the ceiling for 2-rank DDP here and now
    plain = stepper(mlp())
    for _ in range(args.warmup):
        plain()
    cpu = time.process_time()
    res["plain_s"] = _time_steps(plain, dist.barrier, args.steps, args.repeats)
    res["plain_cpu_s"] = (time.process_time() - cpu) / (args.steps * args.repeats)

    ddp = DDP(mlp())
    reduce_times: list[float] = []
    reduce = ddp._reduce_gradients

    def timed_reduce() -> None:
        t0 = time.perf_counter()
        reduce()
        reduce_times.append(time.perf_counter() - t0)
    ddp._reduce_gradients = timed_reduce  # instrumentation only
    step = stepper(ddp)
    for _ in range(args.warmup):
        step()
    reduce_times.clear()
    cpu = time.process_time()
    res["ddp_s"] = _time_steps(step, dist.barrier, args.steps, args.repeats)
    res["ddp_cpu_s"] = (time.process_time() - cpu) / (args.steps * args.repeats)
    res["reduce_s"] = statistics.median(reduce_times)
    res["reduce_min_s"] = min(reduce_times)
    res["grad_bytes"] = sum(p.numel() * p.element_size() for p in ddp.parameters())
    alone = []  # the reduction by itself, ranks aligned: its cost without the wait for a slower rank
    for _ in range(20):
        dist.barrier()
        t0 = time.perf_counter()
        reduce()
        alone.append(time.perf_counter() - t0)
    res["reduce_alone_s"] = min(alone)

    if world > 1:
        sweep = {}
        for nbytes in SIZES:
            t = lg.tensor(np.ones(nbytes // 4, np.float32))
            reps = max(5, min(50, (1 << 26) // nbytes))
            dist.all_reduce(t)
            times = []
            for _ in range(reps):
                dist.barrier()
                t0 = time.perf_counter()
                dist.all_reduce(t)
                times.append(time.perf_counter() - t0)
            sweep[nbytes] = min(times)
        res["allreduce_s"] = sweep
    if rank == 0:
        print("RESULT " + json.dumps(res), flush=True)
    dist.destroy_process_group()


def _launch(n: int, args: argparse.Namespace) -> dict[str, Any]:
    from lightgrad.distributed import launch_command
    cmd = launch_command(n) + ["-m", "benchmarks.ddp_scaling", "--worker", "--model", args.model,
                               "--batch", str(args.batch),
                               "--steps", str(args.steps), "--warmup", str(args.warmup),
                               "--repeats", str(args.repeats)]
    # one BLAS thread per rank, so that N ranks use N cores and the comparison is per core
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    out = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env=env, timeout=900)
    for line in out.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):])
    raise RuntimeError(f"benchmark job with {n} ranks failed:\n{out.stdout}\n{out.stderr}")


def _best(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Merge rounds of one configuration: the fastest round for each time, the median for medians."""
    out = dict(runs[0])
    for key, val in runs[0].items():
        if key == "reduce_s":
            out[key] = statistics.median(r[key] for r in runs)
        elif key == "allreduce_s":
            out[key] = {k: min(r[key][k] for r in runs) for k in val}
        elif key.endswith("_s"):
            out[key] = min(r[key] for r in runs)
    return out


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", choices=["mlp", "transformer"], default="mlp")
    p.add_argument("--batch", type=int, default=None, help="per rank (default 512 for the MLP, 16 for the transformer)")
    p.add_argument("--steps", type=int, default=10, help="steps per timed repeat")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--rounds", type=int, default=3, help="1-rank and 2-rank jobs alternate this many times")
    p.add_argument("--json", action="store_true", help="print one JSON line instead of a table")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.batch is None:
        args.batch = 16 if args.model == "transformer" else 512
    if args.worker:
        worker(args)
        return
    load_before = os.getloadavg()
    # alternating rounds, fastest of each: on a shared machine that is the least disturbed figure
    rounds = [(_launch(1, args), _launch(2, args)) for _ in range(args.rounds)]
    one, two = _best([r[0] for r in rounds]), _best([r[1] for r in rounds])
    load_after = os.getloadavg()
    b = args.batch
    summary = {
        "load_avg_before": load_before, "load_avg_after": load_after, "cores": os.cpu_count(),
        "plain_1proc_samples_per_s": b / one["plain_s"], "ddp_1rank_samples_per_s": b / one["ddp_s"],
        "ddp_2rank_samples_per_s": 2 * b / two["ddp_s"],
        # against the faster single-process figure (DDP on 1 rank does no extra work), to be conservative
        "ratio_2rank_vs_1proc": 2 * min(one["plain_s"], one["ddp_s"]) / two["ddp_s"],
        "ceiling_ratio": 2 * min(one["plain_s"], one["ddp_s"]) / two["plain_s"],
        "ddp_2rank_vs_ceiling": two["plain_s"] / two["ddp_s"],
        "step_ms": {"plain_1proc": 1e3 * one["plain_s"], "ddp_1rank": 1e3 * one["ddp_s"],
                    "plain_2proc": 1e3 * two["plain_s"], "ddp_2rank": 1e3 * two["ddp_s"]},
        "cpu_ms_per_step_rank0": {"plain_1proc": 1e3 * one["plain_cpu_s"], "ddp_1rank": 1e3 * one["ddp_cpu_s"],
                                  "ddp_2rank": 1e3 * two["ddp_cpu_s"]},
        "reduce_ms_per_step": {"1rank": 1e3 * one["reduce_s"], "2rank": 1e3 * two["reduce_s"],
                               "2rank_min": 1e3 * two["reduce_min_s"], "2rank_alone": 1e3 * two["reduce_alone_s"]},
        "grad_bytes": two["grad_bytes"],
        "allreduce_ms_by_bytes": {int(k): 1e3 * v for k, v in two["allreduce_s"].items()},
    }
    if args.json:
        print(json.dumps(summary))
        return
    print(f"{'one-block transformer LM' if args.model == 'transformer' else 'MLP 784-512-256-10'}, batch {b} per rank, 1 BLAS thread per rank, {os.cpu_count()} cores; "
          f"load average before {load_before[0]:.2f}, after {load_after[0]:.2f}")
    print(f"{'':38}{'ms/step':>10}{'samples/s':>12}{'CPU ms/step':>14}")
    rows = [("1 process, no DDP", one["plain_s"], b / one["plain_s"], one["plain_cpu_s"]),
            ("1 rank, DDP", one["ddp_s"], b / one["ddp_s"], one["ddp_cpu_s"]),
            ("2 independent processes (ceiling)", two["plain_s"], 2 * b / two["plain_s"], two["plain_cpu_s"]),
            ("2 ranks, DDP", two["ddp_s"], 2 * b / two["ddp_s"], two["ddp_cpu_s"])]
    for name, ms, sps, cpu in rows:
        print(f"{name:38}{1e3 * ms:10.2f}{sps:12.0f}{1e3 * cpu:14.2f}")
    print("(CPU ms/step: rank 0's CPU time per step, all repeats; far below ms/step means the rank "
          "waited for a core)")
    print(f"throughput, 2 ranks / the faster 1-process row: {summary['ratio_2rank_vs_1proc']:.2f}x "
          f"(target >= 1.6x); the machine allowed {summary['ceiling_ratio']:.2f}x (2 independent processes)")
    print(f"gradient reduction per step ({two['grad_bytes'] / 1e6:.2f} MB of gradients): median "
          f"{1e3 * two['reduce_s']:.2f} ms, best {1e3 * two['reduce_min_s']:.2f} ms with 2 ranks (includes "
          f"waiting for the slower rank); {1e3 * two['reduce_alone_s']:.2f} ms when the ranks arrive together; "
          f"{1e3 * one['reduce_s']:.2f} ms with 1")
    print("bare allreduce, 2 ranks (best of the repeats):")
    for k, v in summary["allreduce_ms_by_bytes"].items():
        print(f"  {k / 1e6:9.3f} MB  {v:8.3f} ms  {k / v / 1e6:7.2f} GB/s")


if __name__ == "__main__":
    main()
