"""The benchmark runner: lightgrad and PyTorch side by side, each workload in its own subprocess.

    python -m benchmarks                 # every workload, writes docs/benchmarks.md and a PNG chart
    python -m benchmarks per_op mlp      # only workloads whose name contains one of the words
    python -m benchmarks --kernel-table  # the per-kernel table (benchmarks/kernels.py) in 5 settings

Medians of 7 samples per workload; ratio = lightgrad / PyTorch from the same run. The NumPy floor
(a hand-written NumPy step with no autograd) is measured where a module defines one. Run it with
OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE unset (``make bench`` does): they slow NumPy's BLAS.
"""

from __future__ import annotations

import argparse
import datetime
import importlib
import json
import os
import pkgutil
import platform
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


KERNEL_TABLE_START = "<!-- kernel table -->"
KERNEL_TABLE_END = "<!-- end of kernel table -->"
# the kernel table's columns: (heading, framework, environment)
KERNEL_SETTINGS = [("lightgrad NumPy path", "lightgrad", {"LIGHTGRAD_NATIVE": "0"}),
                   ("native 1 thread", "lightgrad", {"BENCH_THREADS": "1"}),
                   ("native 2 threads", "lightgrad", {"BENCH_THREADS": "2"}),
                   ("PyTorch 1 thread", "torch", {"BENCH_THREADS": "1"}),
                   ("PyTorch 2 threads", "torch", {"BENCH_THREADS": "2"})]


def discover(kernels: bool = False) -> list[tuple[str, str, bool]]:
    """(module, workload, has_floor) for every WORKLOADS entry under benchmarks/ (the per-kernel
    module's alone when ``kernels``, else every other module's)."""
    out = []
    for info in pkgutil.iter_modules([str(Path(__file__).parent)]):
        if info.name in ("run", "worker", "__main__") or (info.name == "kernels") != kernels:
            continue
        mod = importlib.import_module(f"benchmarks.{info.name}")
        floors = getattr(mod, "FLOORS", {})
        for name in getattr(mod, "WORKLOADS", {}):
            out.append((info.name, name, name in floors))
    return out


def run_one(mod: str, workload: str, framework: str, timeout: float = 600,
            env_extra: dict[str, str] | None = None) -> dict | None:
    env = dict(os.environ, **(env_extra or {}))
    r = subprocess.run([sys.executable, "-m", "benchmarks.worker", mod, workload, framework],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
    if r.returncode != 0:
        print(f"  {framework:9s} {workload}: failed\n{r.stderr[-2000:]}", file=sys.stderr)
        return None
    return json.loads(r.stdout.strip().splitlines()[-1])


def machine() -> dict[str, str]:
    info = {"python": platform.python_version(), "machine": platform.machine(),
            "cpus": str(os.cpu_count()), "load": " ".join(f"{x:.2f}" for x in os.getloadavg())}
    try:
        import numpy
        info["numpy"] = numpy.__version__
        from threadpoolctl import threadpool_info
        blas = [p for p in threadpool_info() if p.get("user_api") == "blas"]
        if blas:
            info["blas"] = f"{blas[0].get('internal_api')} {blas[0].get('version')} " \
                           f"kernel={blas[0].get('architecture')} threads={blas[0].get('num_threads')}"
    except ImportError:
        pass
    try:
        import torch
        info["torch"] = torch.__version__
    except ImportError:
        info["torch"] = "not installed"
    info["OPENBLAS_CORETYPE"] = os.environ.get("OPENBLAS_CORETYPE", "unset")
    info["OPENBLAS_L2_SIZE"] = os.environ.get("OPENBLAS_L2_SIZE", "unset")
    return info


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("filters", nargs="*", help="run only workloads whose name contains one of these")
    ap.add_argument("--no-torch", action="store_true")
    ap.add_argument("--out", default=str(ROOT / "docs" / "benchmarks.md"))
    ap.add_argument("--json", default=None, help="also write raw results here")
    ap.add_argument("--kernel-table", action="store_true",
                    help="time the per-kernel workloads in every setting and update that table in --out")
    args = ap.parse_args(argv)
    if os.environ.get("OPENBLAS_CORETYPE") or os.environ.get("OPENBLAS_L2_SIZE"):
        print("note: OPENBLAS_CORETYPE/OPENBLAS_L2_SIZE are set and slow NumPy's BLAS; "
              "run with `env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE` (make bench does)", file=sys.stderr)
    info = machine()
    print("machine:", json.dumps(info))
    if args.kernel_table:
        kernel_table(info, Path(args.out), args.filters)
        return
    rows = []
    for mod, name, has_floor in discover():
        if args.filters and not any(f in name or f in mod for f in args.filters):
            continue
        frameworks = ["lightgrad"] + ([] if args.no_torch else ["torch"]) + (["numpy"] if has_floor else [])
        res = {fw: run_one(mod, name, fw) for fw in frameworks}
        row = {"workload": name, **{fw: r for fw, r in res.items() if r}}
        rows.append(row)
        lgr, tr, fl = row.get("lightgrad"), row.get("torch"), row.get("numpy")
        ratio = f"{lgr['ms'] / tr['ms']:.2f}x" if lgr and tr else "-"
        print(f"{name:28s} lightgrad {lgr['ms'] if lgr else float('nan'):9.3f} ms   "
              f"torch {tr['ms'] if tr else float('nan'):9.3f} ms   ratio {ratio:>7s}   "
              f"floor {fl['ms'] if fl else float('nan'):9.3f} ms", flush=True)
    write_report(rows, info, Path(args.out))
    if args.json:
        Path(args.json).write_text(json.dumps({"machine": info, "rows": rows}, indent=1))


def kernel_table(info: dict[str, str], out: Path, filters: list[str]) -> None:
    """Time each per-kernel workload in every KERNEL_SETTINGS column; splice the table into ``out``."""
    lines = [KERNEL_TABLE_START, "", "## Kernels", "",
             f"Generated by `python -m benchmarks --kernel-table` on {datetime.date.today().isoformat()} "
             f"(load {info['load']}). Forward and backward of one op (benchmarks/kernels.py), ms, median of 7.",
             "", "| kernel | " + " | ".join(h for h, _, _ in KERNEL_SETTINGS) + " |",
             "|---|" + "---:|" * len(KERNEL_SETTINGS)]
    for mod, name, _ in discover(kernels=True):
        if filters and not any(f in name for f in filters):
            continue
        cells = []
        for _, fw, env in KERNEL_SETTINGS:
            r = run_one(mod, name, fw, env_extra=env)
            cells.append(_fmt(r))
        print(f"{name:36s} " + "  ".join(f"{c:>8s}" for c in cells), flush=True)
        lines.append(f"| {name.removeprefix('kernel_')} | " + " | ".join(cells) + " |")
    lines += ["", KERNEL_TABLE_END]
    head, _, tail = _split_kernel_table(out)
    gap = "\n" if head and not head.endswith("\n\n") else ""  # one blank line before the table
    out.write_text(head + gap + "\n".join(lines) + (tail or "\n"))
    print(f"wrote {out}")


def _split_kernel_table(out: Path) -> tuple[str, str, str]:
    """``out``'s text before the kernel table, the table (markers included; "" when absent), after it."""
    text = out.read_text() if out.exists() else ""
    if KERNEL_TABLE_START not in text or KERNEL_TABLE_END not in text:
        return text, "", ""
    head, rest = text.split(KERNEL_TABLE_START, 1)
    table, tail = rest.split(KERNEL_TABLE_END, 1)
    return head, KERNEL_TABLE_START + table + KERNEL_TABLE_END, tail


def _kept_kernel_table(out: Path) -> str:
    """The kernel table already in ``out`` (a full run rewrites the rest of the file and keeps it)."""
    table = _split_kernel_table(out)[1]
    return "\n" + table + "\n" if table else ""


def _fmt(r: dict | None, key: str = "ms", digits: int = 3) -> str:
    return f"{r[key]:.{digits}f}" if r else "-"


def write_report(rows: list[dict], info: dict[str, str], out: Path) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    lines = [
        "# Benchmarks",
        "",
        f"Generated by `python -m benchmarks` on {datetime.date.today().isoformat()}. "
        "Milliseconds per step (median of 7 samples), each workload and framework in its own process; "
        "ratio = lightgrad / PyTorch in the same run (lower is better). The NumPy floor is a "
        "hand-written NumPy version of the same step without autograd, where one exists.",
        "",
        "| workload | lightgrad ms | PyTorch ms | ratio | NumPy floor ms | lightgrad peak RSS MB | PyTorch peak RSS MB |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        lgr, tr, fl = row.get("lightgrad"), row.get("torch"), row.get("numpy")
        ratio = f"{lgr['ms'] / tr['ms']:.2f}x" if lgr and tr else "-"
        lines.append(f"| {row['workload']} | {_fmt(lgr)} | {_fmt(tr)} | {ratio} | {_fmt(fl)} | "
                     f"{_fmt(lgr, 'peak_rss_mb', 0)} | {_fmt(tr, 'peak_rss_mb', 0)} |")
    lines += ["", "Machine:", ""] + [f"- {k}: {v}" for k, v in info.items()]
    out.write_text("\n".join(lines) + "\n" + _kept_kernel_table(out))
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        named = [r for r in rows if r.get("lightgrad") and r.get("torch")]
        if named:
            fig, ax = plt.subplots(figsize=(8, 0.35 * len(named) + 1.2))
            ratios = [r["lightgrad"]["ms"] / r["torch"]["ms"] for r in named]
            ax.barh([r["workload"] for r in named], ratios, color=["#3a7" if x <= 1 else "#c53" for x in ratios])
            ax.axvline(1.0, color="k", lw=0.8)
            ax.set_xscale("log")
            ax.set_xlabel("time per step, lightgrad / PyTorch (log scale; < 1 is faster)")
            ax.invert_yaxis()
            fig.tight_layout()
            fig.savefig(out.with_suffix(".png"), dpi=110)
    except ImportError:
        pass
    print(f"wrote {out}")
