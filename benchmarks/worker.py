"""Times one workload under one framework in a fresh process; prints one JSON line.

``python -m benchmarks.worker MODULE WORKLOAD FRAMEWORK`` where FRAMEWORK is lightgrad, torch or
numpy (the module's FLOORS entry: a hand-written NumPy step, the floor for a NumPy library).
BENCH_THREADS=n sets PyTorch's threads, or the threads of lightgrad's native kernels.
"""

from __future__ import annotations

import importlib
import json
import os
import resource
import statistics
import sys
import time


def measure(step, min_sample_s: float = 0.15, samples: int = 7) -> tuple[float, int]:
    step()  # warm-up: first calls allocate, trace or fill caches
    step()
    t0 = time.perf_counter()
    step()
    once = max(time.perf_counter() - t0, 1e-7)
    n = max(1, int(min_sample_s / once))
    times = []
    for _ in range(samples):
        t0 = time.perf_counter()
        for _ in range(n):
            step()
        times.append((time.perf_counter() - t0) / n)
    return statistics.median(times) * 1e3, n


def peak_rss_kb() -> int:
    """This process's peak resident memory. /proc's VmHWM belongs to the address space made at
    exec; getrusage's ru_maxrss is not reset by exec on Linux and would report the parent's peak."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def main() -> None:
    mod_name, workload, framework = sys.argv[1:4]
    mod = importlib.import_module(f"benchmarks.{mod_name}")
    if framework == "numpy":
        step = mod.FLOORS[workload]()
    else:
        fw = importlib.import_module(framework)
        if framework == "torch":
            fw.manual_seed(0)
        threads = os.environ.get("BENCH_THREADS")
        if threads:  # the kernel table's thread counts
            if framework == "torch":
                fw.set_num_threads(int(threads))
            elif fw.backend.native._loaded is not None:
                fw.backend.native._loaded.set_num_threads(int(threads))  # the kernels only, not NumPy ufunc slicing
        step = mod.WORKLOADS[workload](fw)
    ms, n = measure(step)
    rss_kb = peak_rss_kb()
    print(json.dumps({"module": mod_name, "workload": workload, "framework": framework,
                      "ms": ms, "inner": n, "peak_rss_mb": rss_kb / 1024}))


if __name__ == "__main__":
    main()
