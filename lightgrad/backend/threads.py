"""The threading policy, ``set_num_threads``/``get_num_threads``, and the worker threads for large NumPy
ops (``parallel``, ``concurrently``, and ``_ufunc_into``: a ufunc into its output, sliced across the
threads).

One setting, ``set_num_threads(n)`` (default: the cores this process may run on, or OMP_NUM_THREADS as
PyTorch reads it), gives n threads to the native kernels (backend/native/pool.h: workers that sleep
between calls, so they never fight OpenBLAS's spinning workers for a core) and, once set explicitly,
to the NumPy path's sliced ufuncs below. The ufunc slicing is off until then: Python threads hand
work over in ~30 us and the NumPy path gains nothing from them next to BLAS (measured below). The
native pool makes each kernel 1.2-1.5x faster on 2 threads (docs/benchmarks.md's kernel table) and
changed the 2-core benchmark models' whole steps by under 3% either way (they are bound by BLAS).
"""

from __future__ import annotations

import _thread
import contextvars
import os
import threading
from typing import Any

import numpy as np

from . import native

# NumPy's ufuncs release the GIL, so with ``set_num_threads(n > 1)`` large elementwise ops and
# reductions run over slices of their output on persistent worker threads. Each slice runs the same
# ufunc on the same memory layout, so results are bit-identical to one call. A worker sleeps on a
# lock of its own: waking it is one futex call (a ThreadPoolExecutor's future and condition cost
# 3-4x more, 100+ us a handoff here). The caller takes a larger slice than each worker because it
# starts at once, while a worker starts a wake-up later. Below PARALLEL_MIN elements a handoff
# never pays. Off by default: on the 2-core machine we measure on, a wake-up takes ~30 us and
# OpenBLAS's own threads keep spinning after each BLAS call, so a worker competes with them for
# the second core: (x * w + b).sum() forward and backward on 1000 x 1000 took 2.71 ms with 2
# threads against 2.20 with 1 (2.09 against 2.24 with BLAS held to one thread).

PARALLEL_MIN = 1 << 18
_CALLER_SHARE = 1.25  # the caller's slice against a worker's (measured best on 1M float32 products)
_threads = [1]  # threads for the NumPy path's sliced ufuncs (1 until set_num_threads is called)


def _default_threads() -> int:
    """OMP_NUM_THREADS when it is a positive integer (PyTorch's rule), else the usable cores."""
    env = os.environ.get("OMP_NUM_THREADS", "")
    if env.isdigit() and int(env) > 0:
        return int(env)
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0)) or 1
    return os.cpu_count() or 1


_setting = [_default_threads()]  # what get_num_threads reports; the native kernels' thread count
if native._loaded is not None:
    native._loaded.set_num_threads(_setting[0])
_workers: list[_Worker] = []
_busy = [_thread.allocate_lock()]  # one caller at a time has the workers; others run alone


class _Worker:
    """A daemon thread that runs one job at a time, handed over through two locks."""

    __slots__ = ("go", "done", "job", "error")

    def __init__(self) -> None:
        self.go, self.done = _thread.allocate_lock(), _thread.allocate_lock()
        self.go.acquire()
        self.done.acquire()
        self.job: tuple[Any, ...] = ()
        self.error: BaseException | None = None
        threading.Thread(target=self._loop, name="lightgrad", daemon=True).start()

    def _loop(self) -> None:
        while True:
            self.go.acquire()
            ctx, fn, args, kw = self.job
            try:
                ctx.run(fn, *args, **kw)  # in the caller's context: its NumPy error state and arena
            except BaseException as e:  # noqa: BLE001 - re-raised in the caller
                self.error = e
            self.job = ()
            self.done.release()


def _forget_workers() -> None:
    _workers.clear()  # a forked child has the objects but not their threads
    _busy[0] = _thread.allocate_lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_workers)


def set_num_threads(n: int) -> None:
    """Threads for large kernels, elementwise ops and reductions (1: everything in the caller)."""
    if n < 1:
        raise RuntimeError(f"set_num_threads expects a positive integer, got {n}")
    _threads[0] = _setting[0] = n
    if native._loaded is not None:
        native._loaded.set_num_threads(n)


def get_num_threads() -> int:
    return _setting[0]


_Call = tuple[Any, tuple[Any, ...], dict[str, Any]]  # fn, args, keyword args: a call ready to run


def concurrently(jobs: list[_Call]) -> None:
    """Run each ``fn(*args, **kw)`` of ``jobs``: the first in the caller, the others on worker
    threads (all in the caller when another thread has the workers); returns when all are done and
    re-raises the first error. The calls come prepared so that a worker, once woken, finds the GIL
    free: the caller goes straight into its own call (a NumPy call that releases the GIL)."""
    busy = _busy[0]
    if len(jobs) == 1 or not busy.acquire(blocking=False):
        for fn, args, kw in jobs:
            fn(*args, **kw)
        return
    try:
        while len(_workers) < len(jobs) - 1:
            _workers.append(_Worker())
        ctx = contextvars.copy_context()
        started: list[_Worker] = []
        for w, (fn, args, kw) in zip(_workers, jobs[1:]):
            w.job = (ctx.copy() if started else ctx, fn, args, kw)  # a context runs in one thread at a time
            w.go.release()
            started.append(w)
        first: BaseException | None = None
        fn, args, kw = jobs[0]
        try:
            fn(*args, **kw)
        except BaseException as e:  # noqa: BLE001 - raised once every worker is done
            first = e
        for w in started:
            w.done.acquire()
            if w.error is not None:
                first, w.error = first or w.error, None
        if first is not None:
            raise first
    finally:
        busy.release()


def parallel(part: Any, n: int) -> None:
    """Run the calls ``part(lo, hi)`` returns (fn, args, kwargs) for contiguous ranges covering
    ``range(n)``, one per thread; the caller runs the first (largest) range itself."""
    k = min(_threads[0], n)
    if k <= 1:
        fn, args, kw = part(0, n)
        fn(*args, **kw)
        return
    weights = [_CALLER_SHARE] + [1.0] * (k - 1)
    total = sum(weights)
    bounds, acc = [0], 0.0
    for wt in weights:
        acc += wt
        bounds.append(min(n, round(n * acc / total)))
    concurrently([part(bounds[i], bounds[i + 1]) for i in range(k) if bounds[i] < bounds[i + 1]])


def _split_axis(shape: tuple[int, ...]) -> int:
    """The axis to slice an output of ``shape`` along: its first with more than one entry."""
    for i, s in enumerate(shape):
        if s > 1:
            return i
    return -1


def _slicer(arr: Any, axis: int, ndim: int) -> Any:
    """A function (lo, hi) -> the part of ``arr`` that broadcasts onto out[..., lo:hi, ...] sliced
    at ``axis`` of an ``ndim``-dim output (arr itself where it is broadcast along that axis)."""
    if not isinstance(arr, np.ndarray):
        return lambda lo, hi: arr
    ax = axis - (ndim - arr.ndim)
    if ax < 0 or arr.shape[ax] == 1:
        return lambda lo, hi: arr
    pre = (slice(None),) * ax
    return lambda lo, hi: arr[pre + (slice(lo, hi),)]


def _big(out: np.ndarray) -> bool:
    return _threads[0] > 1 and out.size >= PARALLEL_MIN


def _ufunc_into(f: Any, args: tuple[Any, ...], out: np.ndarray, **kw: Any) -> np.ndarray:
    """``f(*args, out=out, **kw)``, sliced across threads when ``out`` is large."""
    if _threads[0] == 1:
        return f(*args, out=out, **kw)
    axis = _split_axis(out.shape) if _big(out) else -1
    if axis < 0:
        return f(*args, out=out, **kw)
    parts = [_slicer(x, axis, out.ndim) for x in args]
    pre = (slice(None),) * axis
    where_ = kw.pop("where", None)
    wpart = _slicer(where_, axis, out.ndim) if where_ is not None else None

    def run(lo: int, hi: int) -> _Call:
        part_kw = dict(kw, out=out[pre + (slice(lo, hi),)])  # one dict per thread
        if wpart is not None:
            part_kw["where"] = wpart(lo, hi)
        return f, tuple(p(lo, hi) for p in parts), part_kw
    parallel(run, out.shape[axis])
    return out
