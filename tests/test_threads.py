"""Threads: kernels split across worker threads give one call's bits; workers keep the caller's error state.

``lightgrad.set_num_threads`` checks its argument as PyTorch's does."""

from __future__ import annotations

import threading
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from helpers import needs_torch, torch

import lightgrad as lg
from lightgrad import backend as B


RNG = np.random.default_rng(0)
X = RNG.standard_normal((8, 64, 130)).astype(np.float32)
Y = RNG.standard_normal((8, 64, 130)).astype(np.float32)
ROW = RNG.standard_normal(130).astype(np.float32)
COL = RNG.standard_normal((8, 64, 1)).astype(np.float32)


THREADED: list[tuple[str, Callable[[], Any]]] = [
    ("exp", lambda: B.exp(X)),
    ("tanh_transposed", lambda: B.tanh(X.transpose(2, 0, 1))),
    ("add_row", lambda: B.add(X, ROW)),
    ("sub_col", lambda: B.subtract(COL, X)),
    ("mul_scalar", lambda: B.multiply(X, 3.0)),
    ("div_strided", lambda: B.divide(X[:, ::2], Y[:, ::2])),
    ("greater", lambda: B.greater(X, Y)),
    ("where", lambda: B.where(X > 0, -np.inf, Y)),
    ("mask", lambda: B.mask(X, Y > 0)),
    ("cast", lambda: B.cast(X, np.float64)),
    ("copy", lambda: B.copy(X.transpose(1, 0, 2))),
    ("sum_last", lambda: B.reduce(B.add, X, (2,), True)),
    ("sum_middle", lambda: B.reduce(B.add, X, (1,), False)),
    ("max_lead", lambda: B.reduce(B.maximum, X, (0, 1), False)),
    ("gelu", lambda: B.gelu(X, "none", True)[1]),
]


@pytest.mark.parametrize("name,op", THREADED, ids=[n for n, _ in THREADED])
def test_threaded_ops_are_bit_identical(name: str, op: Callable[[], Any], monkeypatch: Any) -> None:
    monkeypatch.setattr(B.threads, "PARALLEL_MIN", 1)  # (read there, by every threaded path)
    lg.set_num_threads(1)
    one = np.asarray(op())
    lg.set_num_threads(2)
    try:
        two = np.asarray(op())
    finally:
        lg.set_num_threads(1)
    assert one.dtype == two.dtype and one.shape == two.shape
    assert one.tobytes() == two.tobytes()


def test_workers_carry_the_callers_error_state_and_raise_its_errors() -> None:
    seen: list[Any] = []

    def divide(out: np.ndarray) -> None:
        seen.append((threading.get_ident(), np.geterr()["divide"]))
        np.divide(1.0, np.zeros(3), out=out)
    outs = [np.empty(3) for _ in range(3)]
    with np.errstate(divide="raise"), pytest.raises(FloatingPointError):
        B.concurrently([(divide, (o,), {}) for o in outs])
    assert len({t for t, _ in seen}) == 3 and all(e == "raise" for _, e in seen)
    seen.clear()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with np.errstate(divide="ignore"):
            B.concurrently([(divide, (o,), {}) for o in outs])  # no warning from any thread
    assert all(e == "ignore" for _, e in seen) and all(np.isinf(o).all() for o in outs)


def test_workers_taken_by_another_thread_run_in_the_caller() -> None:
    inner: list[int] = []

    def outer_job() -> None:  # a job that itself asks for workers while the caller holds them
        B.concurrently([(inner.append, (threading.get_ident(),), {}), (inner.append, (-1,), {})])
    B.concurrently([(outer_job, (), {}), (lambda: None, (), {})])
    assert inner == [threading.get_ident(), -1]


@needs_torch
def test_set_num_threads_checks_like_torch() -> None:
    with pytest.raises(RuntimeError):
        torch.set_num_threads(0)
    with pytest.raises(RuntimeError):
        lg.set_num_threads(0)
    lg.set_num_threads(3)
    try:
        assert lg.get_num_threads() == 3
    finally:
        lg.set_num_threads(1)
