"""Core workloads: per-op overhead, large elementwise ops, 1024 matmul forward and backward."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np


def _xwb(T: Any, n: int) -> Callable[[], None]:
    x = T.ones(n, n) if n > 1 else T.ones(1)
    w = T.full(x.shape, 0.5, requires_grad=True)
    b = T.full(x.shape, 0.25, requires_grad=True)

    def step() -> None:
        y = (x * w + b).sum()
        y.backward()
    return step


def _elementwise(T: Any) -> Callable[[], None]:
    x = T.rand(1000, 1000)

    def step() -> None:
        ((x * 2.0 + 1.0).exp() / (x + 1.0)).sum()
    return step


def _matmul(T: Any) -> Callable[[], None]:
    T.manual_seed(0)
    a = T.randn(1024, 1024, requires_grad=True)
    b = T.randn(1024, 1024, requires_grad=True)

    def step() -> None:
        a.grad = b.grad = None
        (a @ b).sum().backward()
    return step


WORKLOADS: dict[str, Callable[[Any], Callable[[], None]]] = {
    "per_op_1elem": lambda T: _xwb(T, 1),
    "per_op_1000x1000": lambda T: _xwb(T, 1000),
    "elementwise_1m": _elementwise,
    "matmul_1024_fwd_bwd": _matmul,
}


def _floor_xwb() -> Callable[[], None]:
    x = np.ones((1000, 1000), np.float32)
    w = np.full_like(x, 0.5)
    b = np.full_like(x, 0.25)

    def step() -> None:
        (x * w + b).sum()
        gw = x.copy()  # d/dw = x, d/db = 1, as the autograd step materialises them
        gb = np.ones_like(b)
        del gw, gb
    return step


def _floor_matmul() -> Callable[[], None]:
    rng = np.random.default_rng(0)
    a = rng.standard_normal((1024, 1024), dtype=np.float32)
    b = rng.standard_normal((1024, 1024), dtype=np.float32)
    g = np.ones((1024, 1024), np.float32)

    def step() -> None:
        (a @ b).sum()
        g @ b.T
        a.T @ g
    return step


FLOORS = {"per_op_1000x1000": _floor_xwb, "matmul_1024_fwd_bwd": _floor_matmul}
