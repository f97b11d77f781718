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


# ---- the native kernels' pool (backend/native/pool.h) ---------------------------------------------

def _native_calls() -> dict[str, Callable[[Any], list[np.ndarray]]]:
    """Each pooled kernel called on inputs above the pool's threshold; returns every output."""
    rng = np.random.default_rng(1)
    x = rng.standard_normal((1024, 512)).astype(np.float32)
    g = rng.standard_normal((1024, 512)).astype(np.float32)
    x[3, 5] = np.nan
    planes = rng.standard_normal((64 * 16, 28, 28)).astype(np.float32)
    pg = rng.standard_normal((64 * 16, 14, 14)).astype(np.float32)
    w = rng.standard_normal(512).astype(np.float32)

    def gelu(k: Any) -> list[np.ndarray]:
        out, d = np.empty_like(x), np.empty_like(x)
        k.gelu(x, out, d, True)
        out2, d2 = np.empty_like(x), np.empty_like(x)
        k.gelu(x, out2, d2, False)
        return [out, d, out2, d2]

    def relu(k: Any) -> list[np.ndarray]:
        out, gx = np.empty_like(x), np.empty_like(x)
        k.relu(x, out)
        k.relu_backward(g, out, gx)
        return [out, gx]

    def layer_norm(k: Any) -> list[np.ndarray]:
        out, xhat, rstd = np.empty_like(x), np.empty_like(x), np.empty(1024, np.float32)
        k.layer_norm(x, w, w, out, xhat, rstd, 512, 1e-5)
        gx, gw, gb = np.empty_like(x), np.empty_like(w), np.empty_like(w)
        k.layer_norm_backward(g, xhat, rstd, w, gx, gw, gb, 512)
        return [out, xhat, rstd, gx, gw, gb]

    def softmax(k: Any) -> list[np.ndarray]:
        res = []
        for log in (False, True):
            y, gx = np.empty_like(x), np.empty_like(x)
            k.softmax(x, y, 512, log)
            k.softmax_backward(g, y, gx, 512, log)
            res += [y, gx]
        return res

    def max_pool(k: Any) -> list[np.ndarray]:
        out, arg = np.empty_like(pg), np.empty(pg.shape, np.uint8)
        k.max_pool2x2(planes, out, arg, 28, 28)
        gx = np.empty_like(planes)
        k.max_pool2x2_backward(pg, arg, gx, 28, 28)
        return [out, arg, gx]

    def adam(k: Any) -> list[np.ndarray]:
        p, m, v, vmax = x.ravel().copy(), np.zeros(x.size, np.float32), np.zeros(x.size, np.float32), \
            np.zeros(x.size, np.float32)
        f = np.float32
        for _ in range(2):
            k.adam(p, g.ravel(), m, v, vmax, f(0.99), f(0.01), False, True, f(0.1), f(0.999), f(0.001), f(-1e-3),
                   f(1e-8))
        return [p, m, v, vmax]

    t, b, hid = 6, 40, 32  # the LSTM layer's: 40 rows, five chunks of 8
    proj = rng.standard_normal((t, b, 4 * hid)).astype(np.float32)
    w_hh = (rng.standard_normal((4 * hid, hid)) * 0.2).astype(np.float32)
    bias = rng.standard_normal(4 * hid).astype(np.float32)
    h0, c0 = (rng.standard_normal((b, hid)).astype(np.float32) for _ in range(2))
    gout = rng.standard_normal((t + 1, b, hid)).astype(np.float32)

    def lstm_layer(k: Any) -> list[np.ndarray]:
        if not k.gemm_variant():
            pytest.skip("no AVX2+FMA: no whole-layer LSTM kernel")
        res = []
        for reverse in (False, True):
            gates = proj.copy()
            cells, tanh_c = np.empty((t, b, hid), np.float32), np.empty((t, b, hid), np.float32)
            out, hx = np.empty((t + 1, b, hid), np.float32), np.zeros((t, b, hid + 3), np.float32)
            pack = np.empty(4 * hid * hid, np.float32)
            k.lstm_layer(gates, w_hh, bias, h0, c0, cells, tanh_c, out, hx, pack, hid, hid + 3, reverse)
            dz, dh, dc = np.empty_like(gates), np.zeros((b, hid), np.float32), gout[t].copy()
            k.lstm_layer_backward(gout, dz, dh, dc, gates, cells, tanh_c, c0, w_hh, pack, hid, reverse)
            res += [gates, cells, tanh_c, out[:t], hx, dz, dh, dc]
        return res

    xp3 = rng.standard_normal((t, b, 3 * hid)).astype(np.float32)
    w3 = (rng.standard_normal((3 * hid, hid)) * 0.2).astype(np.float32)

    def gru_layer(k: Any) -> list[np.ndarray]:
        if not k.gemm_variant():
            pytest.skip("no AVX2+FMA: no whole-layer GRU kernel")
        res = []
        for reverse in (False, True):
            gates, hn, out = np.empty_like(xp3), np.empty((t, b, hid), np.float32), np.empty((t, b, hid), np.float32)
            pack, hp = np.empty(3 * hid * hid, np.float32), np.empty((b, 3 * hid), np.float32)
            k.gru_layer(xp3, w3, bias[:3 * hid].copy(), h0, hp, gates, hn, out, pack, hid, reverse)
            carry, dm = np.zeros((b, hid), np.float32), np.zeros((b, hid), np.float32)
            dx, dhp = np.empty_like(xp3), np.empty_like(xp3)
            k.gru_layer_backward(gout[:t].copy(), carry, dm, gates, hn, out, dx, dhp, w3, pack, hid, reverse)
            res += [gates, hn, out, carry, dm, dx, dhp]
        return res

    return {"gelu": gelu, "relu": relu, "layer_norm": layer_norm, "softmax": softmax, "max_pool": max_pool,
            "adam": adam, "lstm_layer": lstm_layer, "gru_layer": gru_layer}


needs_native = pytest.mark.skipif(not B.native.available, reason="the native kernels are off (LIGHTGRAD_NATIVE=0) or not built")


@needs_native
@pytest.mark.parametrize("name", list(_native_calls()))
def test_native_kernels_give_the_same_bits_on_any_thread_count(name: str) -> None:
    k = B.native._loaded
    call = _native_calls()[name]
    saved = k.get_num_threads()
    try:
        k.set_num_threads(1)
        one = call(k)
        for n in (2, 3, 5):
            k.set_num_threads(n)
            for a, b in zip(one, call(k)):
                np.testing.assert_array_equal(a, b)  # NaN in the same places, bit for bit elsewhere
    finally:
        k.set_num_threads(saved)
    assert k.pool_workers() >= 4  # the calls above were split: 5 threads ran them


@needs_native
def test_pool_workers_stay_off_the_callers_cpu() -> None:
    """After a split call the workers' affinity leaves out the CPU the caller ran on (pool.h: so the
    kernel does not queue a woken worker behind the caller while OpenBLAS spins on the other core)."""
    import os
    import sys
    if not sys.platform.startswith("linux") or len(os.sched_getaffinity(0)) < 2:
        pytest.skip("needs Linux and two usable CPUs")
    k = B.native._loaded
    saved = k.get_num_threads()
    x = np.ones((1024, 512), np.float32)
    try:
        k.set_num_threads(2)
        k.relu(x, np.empty_like(x))  # large enough to split
        assert k.pool_workers() >= 1
        allowed = os.sched_getaffinity(0)
        masks = {}
        for tid in os.listdir("/proc/self/task"):
            with open(f"/proc/self/task/{tid}/status") as f:
                line = next(s for s in f if s.startswith("Cpus_allowed_list"))
            masks[tid] = line.split(":", 1)[1].strip()
        narrowed = [m for t, m in masks.items() if _cpus(m) < allowed]
        assert narrowed, masks  # a worker's mask lost the caller's CPU
        assert all(len(allowed - _cpus(m)) == 1 for m in narrowed), masks
    finally:
        k.set_num_threads(saved)


def _cpus(listing: str) -> set[int]:
    """The CPUs of a /proc Cpus_allowed_list ("0-3,5")."""
    out: set[int] = set()
    for part in listing.split(","):
        lo, _, hi = part.partition("-")
        out.update(range(int(lo), int(hi or lo) + 1))
    return out


@needs_native
def test_set_num_threads_sets_the_kernel_threads() -> None:
    saved = lg.get_num_threads()
    try:
        lg.set_num_threads(3)
        assert B.native._loaded.get_num_threads() == 3
        assert lg.get_num_threads() == 3
    finally:
        lg.set_num_threads(saved)
        B.threads._threads[0] = 1  # the NumPy path's ufunc slicing back off, as at import


def _python(code: str, **env: str) -> str:
    import os
    import subprocess
    import sys
    full = {k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"}
    full.update(env)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=full, timeout=120)
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


def test_default_threads_are_the_usable_cores_or_omp_num_threads() -> None:
    import os
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    assert _python("import lightgrad; print(lightgrad.get_num_threads())") == str(cores)
    assert _python("import lightgrad; print(lightgrad.get_num_threads())", OMP_NUM_THREADS="3") == "3"
    code = ("import lightgrad; from lightgrad.backend import native, threads;"
            "print(native._loaded.get_num_threads() if native._loaded else 3, threads._threads[0])")
    assert _python(code, OMP_NUM_THREADS="3") == "3 1"  # kernels follow it; ufunc slicing stays off


@needs_native
def test_a_forked_child_runs_pooled_kernels() -> None:
    import os
    if not hasattr(os, "fork"):
        pytest.skip("no fork")
    code = """
import os, numpy as np
from lightgrad.backend import native
k = native._loaded
k.set_num_threads(2)
x = np.ones(1 << 20, np.float32); out = np.empty_like(x)
k.gelu(x, out, None, True)
assert k.pool_workers() == 1
pid = os.fork()
if pid == 0:
    k.gelu(x, out, None, True)  # the parent's worker does not exist here: the pool starts afresh
    os._exit(0 if k.pool_workers() == 1 and np.allclose(out, 0.84119, atol=1e-4) else 1)
_, status = os.waitpid(pid, 0)
print(os.WEXITSTATUS(status))
"""
    assert _python(code) == "0"
