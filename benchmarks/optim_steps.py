"""Optimizer workloads: one ``optimizer.step()`` on many small or a few large parameter tensors.

Gradients come from a real backward pass in setup (so lightgrad's land in the optimizer's flat gradient
buffer, as in training) and stay fixed; each timed step is ``optimizer.step()`` alone. PyTorch runs its
defaults (on CPU: the per-tensor for-loop implementation).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np


def _params_with_grads(T: Any, n: int, size: int, make_opt: Callable[[list[Any]], Any]) -> Any:
    T.manual_seed(0)
    params = [T.randn(size, requires_grad=True) for _ in range(n)]
    opt = make_opt(params)  # before backward: lightgrad's gradients then land in the flat buffer
    for p in params:
        (p * T.randn(size)).sum().backward()
    return opt


def _workload(n: int, size: int, kind: str) -> Callable[[Any], Callable[[], None]]:
    def make(T: Any) -> Callable[[], None]:
        if kind == "adam":
            opt = _params_with_grads(T, n, size, lambda ps: T.optim.Adam(ps, lr=1e-3))
        else:
            opt = _params_with_grads(T, n, size, lambda ps: T.optim.SGD(ps, lr=1e-3, momentum=0.9))
        return opt.step
    return make


WORKLOADS: dict[str, Callable[[Any], Callable[[], None]]] = {
    "adam_100x1k": _workload(100, 1000, "adam"),
    "sgdm_100x1k": _workload(100, 1000, "sgdm"),
    "adam_4x1m": _workload(4, 1_000_000, "adam"),
    "sgdm_4x1m": _workload(4, 1_000_000, "sgdm"),
}


def _floor(n: int, size: int, kind: str) -> Callable[[], Callable[[], None]]:
    """Whole-array NumPy passes over one flat float32 vector: the update with no framework around it."""
    def make() -> Callable[[], None]:
        rng = np.random.default_rng(0)
        p = rng.standard_normal(n * size, dtype=np.float32)
        g = rng.standard_normal(n * size, dtype=np.float32)
        m, v, t = np.zeros_like(p), np.zeros_like(p), np.empty_like(p)
        lr, b1, b2, eps = 1e-3, 0.9, 0.999, 1e-8
        count = [0]

        def adam() -> None:  # NumPy's out= forms: closures cannot rebind p, m, v with `+=`
            count[0] += 1
            np.subtract(g, m, out=t)
            np.multiply(t, 1 - b1, out=t)
            np.add(m, t, out=m)
            np.multiply(v, b2, out=v)
            np.multiply(g, g, out=t)
            np.multiply(t, 1 - b2, out=t)
            np.add(v, t, out=v)
            np.sqrt(v, out=t)
            np.divide(t, (1 - b2 ** count[0]) ** 0.5, out=t)
            np.add(t, eps, out=t)
            np.divide(m, t, out=t)
            np.multiply(t, -lr / (1 - b1 ** count[0]), out=t)
            np.add(p, t, out=p)

        def sgdm() -> None:
            np.multiply(m, 0.9, out=m)
            np.add(m, g, out=m)
            np.multiply(m, -lr, out=t)
            np.add(p, t, out=p)
        return adam if kind == "adam" else sgdm
    return make


FLOORS: dict[str, Callable[[], Callable[[], None]]] = {
    "adam_100x1k": _floor(100, 1000, "adam"),
    "sgdm_100x1k": _floor(100, 1000, "sgdm"),
    "adam_4x1m": _floor(4, 1_000_000, "adam"),
    "sgdm_4x1m": _floor(4, 1_000_000, "sgdm"),
}
