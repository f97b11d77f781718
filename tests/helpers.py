"""Shared test helpers: finite differences and framework-neutral comparisons."""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

import lightgrad as lg

try:
    import torch
except ImportError:  # the parity checks are skipped without PyTorch
    torch = None


def numeric_grads(f: Callable[..., np.ndarray], xs: Sequence[np.ndarray], r: np.ndarray,
                  eps: float = 1e-6) -> list[np.ndarray]:
    """Central differences of ``sum(f(*xs) * r)`` with respect to each float input."""
    out = []
    for x in xs:
        g = np.zeros_like(x)
        if x.dtype.kind != "f":
            out.append(g)
            continue
        it = np.nditer(x, flags=["multi_index"])
        for _ in it:
            idx = it.multi_index
            old = x[idx]
            x[idx] = old + eps
            hi = float(np.sum(f(*xs) * r))
            x[idx] = old - eps
            lo = float(np.sum(f(*xs) * r))
            x[idx] = old
            g[idx] = (hi - lo) / (2 * eps)
        out.append(g)
    return out


def lg_value(f: Callable[..., Any], arrays: Sequence[np.ndarray]) -> np.ndarray:
    with lg.no_grad():
        return np.asarray(f(lg, *[lg.tensor(a) for a in arrays])._data, np.float64)


def to_np(t: Any) -> np.ndarray:
    if isinstance(t, lg.Tensor):
        return t.detach()._data
    return t.detach().numpy()


def allocations(step: Callable[[], Any], steps: int = 10) -> tuple[int, int, list[Any]]:
    """Runs ``step`` ``steps`` times under tracemalloc: (peak traced bytes above the start, NumPy
    blocks over 1 KiB left behind, the step's results)."""
    tracemalloc.start()
    try:
        start, _ = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        before = tracemalloc.take_snapshot()
        results = [step() for _ in range(steps)]
        _, peak = tracemalloc.get_traced_memory()
        after = tracemalloc.take_snapshot()
    finally:
        tracemalloc.stop()
    dom = [tracemalloc.DomainFilter(True, np.lib.tracemalloc_domain)]
    old = {t.traceback for t in before.filter_traces(dom).traces}
    leaked = [t for t in after.filter_traces(dom).traces if t.size > 1024 and t.traceback not in old]
    return peak - start, len(leaked), results
