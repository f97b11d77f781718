"""The array backend: the only module that computes with arrays (NumPy today).

Every function here takes and returns raw arrays. When an arena is active (``lightgrad.memory``),
outputs are written into storage carved from it with NumPy's ``out=``; otherwise NumPy allocates
from the heap as usual. Op code never chooses, so an arena takes over without touching it.
"""

from __future__ import annotations

import _thread
import contextvars
import ctypes
import math
import os
import sys
import threading
from typing import Any

import numpy as np

from .memory import _current

xp = np  # the array namespace (NumPy today, CuPy later): code outside the backend says B.xp.name, never np
ndarray = np.ndarray
Array = Any

# Functions that never allocate (views, metadata) or are cold paths: used as they are.
asarray = np.asarray
array = np.array
broadcast_to = np.broadcast_to
expand_dims = np.expand_dims
flip = np.flip
take_along_axis = np.take_along_axis
put_along_axis = np.put_along_axis
einsum = np.einsum
errstate = np.errstate
isfinite = np.isfinite
tril_mask = np.tri
result_type = np.result_type
can_cast = np.can_cast
pad = np.pad
roll = np.roll
cumsum = np.cumsum
zeros_like = np.zeros_like
cumprod = np.cumprod
argmax = np.argmax
argmin = np.argmin
concatenate = np.concatenate
stack = np.stack
arange = np.arange
linspace = np.linspace
eye = np.eye
full = np.full
copyto = np.copyto
nonzero = np.nonzero
unravel_index = np.unravel_index
as_strided = np.lib.stride_tricks.as_strided  # sliding-window views for convolution and pooling


def reshape(x: Array, shape: Any) -> Array:
    """``np.reshape(x, shape)``; an array's own method is 4x cheaper than NumPy's dispatch."""
    return x.reshape(shape) if isinstance(x, np.ndarray) else np.reshape(x, shape)


def transpose(x: Array, axes: Any = None) -> Array:
    """``np.transpose(x, axes)``, by the array's own method where it has one (as reshape)."""
    return x.transpose(axes) if isinstance(x, np.ndarray) else np.transpose(x, axes)


def _retain_freed_memory() -> None:
    """Make glibc's malloc keep freed memory for reuse instead of handing it back to the OS.

    By default glibc serves large blocks with mmap and trims the heap as soon as its top is free,
    so the temporaries of every training step come back as fresh pages: thousands of page faults
    per step (a third of a transformer step's time was the kernel zeroing pages). With these
    thresholds the blocks freed by one step serve the next (a caching allocator, as in PyTorch);
    the cost is that the process keeps up to 256 MiB of freed memory. Not done when the user set
    glibc's own MALLOC_TRIM_THRESHOLD_/MALLOC_MMAP_THRESHOLD_, or off glibc."""
    if not sys.platform.startswith("linux") or {"MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_THRESHOLD_"} & set(os.environ):
        return
    try:
        libc = ctypes.CDLL(None)
    except OSError:
        return
    # glibc only: other C libraries read mallopt's parameters differently, or lack it
    if not (hasattr(libc, "gnu_get_libc_version") and hasattr(libc, "mallopt")):
        return
    mallopt = libc.mallopt
    mallopt(-3, 32 << 20)  # M_MMAP_THRESHOLD: blocks up to 32 MiB come from the reusable heap
    mallopt(-1, 256 << 20)  # M_TRIM_THRESHOLD: keep up to 256 MiB of free heap top


_retain_freed_memory()


def broadcast_shape(s1: tuple[int, ...], s2: tuple[int, ...]) -> tuple[int, ...]:
    """NumPy's broadcast of two shapes, without NumPy's slow general path; raises ValueError."""
    if s1 == s2:
        return s1
    n1, n2 = len(s1), len(s2)
    if n1 < n2:
        s1 = (1,) * (n2 - n1) + s1
    elif n2 < n1:
        s2 = (1,) * (n1 - n2) + s2
    out = []
    for a, b in zip(s1, s2):
        if a == b or b == 1:
            out.append(a)
        elif a == 1:
            out.append(b)
        else:
            raise ValueError(f"shapes {s1} and {s2} do not broadcast")
    return tuple(out)


def _shape(x: Any) -> tuple[int, ...]:
    return x.shape if isinstance(x, np.ndarray) else ()


# ---- threads -----------------------------------------------------------------------------------
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
_threads = [1]
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
    """Threads used by large elementwise ops and reductions (1: everything in the caller)."""
    if n < 1:
        raise RuntimeError(f"set_num_threads expects a positive integer, got {n}")
    _threads[0] = n


def get_num_threads() -> int:
    return _threads[0]


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


# ---- elementwise -------------------------------------------------------------------------------

_BITS: dict[Any, Any] = {np.dtype(np.float32): np.uint32, np.dtype(np.float64): np.uint64}  # same-size unsigned views
_WHERE_BITS_MIN = 1 << 14  # below this many entries the mask's setup costs more than a copy saves


def _plus_zero(v: Any) -> bool:
    """Whether v is a scalar +0 (a Python number, NumPy scalar or 0-d array; not -0.0)."""
    if isinstance(v, np.ndarray) and v.ndim == 0 or isinstance(v, int | float | np.integer | np.floating):
        return bool(v == 0) and not np.signbit(v)
    return False


def where(c: Array, x: Array, y: Array) -> Array:
    if not (_arr(x) and _arr(y) and isinstance(c, np.ndarray) and c.dtype == np.bool_):
        return np.where(c, x, y)
    shape = broadcast_shape(broadcast_shape(c.shape, _shape(x)), _shape(y))
    out = empty(shape, np.result_type(x, y))
    bits = _BITS.get(out.dtype)
    if bits is not None and c.size < out.size and out.size >= _WHERE_BITS_MIN:
        # one branch +0.0 and the other an array of the result's dtype (a masked_fill's backward):
        # the array's bits ANDed with all-ones or all-zeros per position of the broadcast mask, in
        # one pass instead of two copies (0.6x the time; NaN and -0.0 kept bit for bit)
        if _plus_zero(x) and isinstance(y, np.ndarray) and y.dtype == out.dtype:
            _ufunc_into(np.bitwise_and, (y.view(bits), np.where(c, bits(0), ~bits(0))), out.view(bits))
            return out
        if _plus_zero(y) and isinstance(x, np.ndarray) and x.dtype == out.dtype:
            _ufunc_into(np.bitwise_and, (x.view(bits), np.where(c, ~bits(0), bits(0))), out.view(bits))
            return out
    # two copies, the second masked: several times faster than np.where when c or a value is
    # broadcast (a causal mask over a batch of attention scores)
    _copy_into(out, y)
    _copy_into(out, x, c)
    return out


def _copy_into(out: np.ndarray, x: Any, where_: Any = True) -> None:
    """``np.copyto(out, x, where=where_)``, sliced across threads when out is large."""
    axis = _split_axis(out.shape) if _big(out) else -1
    if axis < 0:
        np.copyto(out, x, where=where_)
        return
    px, pw = _slicer(x, axis, out.ndim), _slicer(where_, axis, out.ndim)
    pre = (slice(None),) * axis
    parallel(lambda lo, hi: (np.copyto, (out[pre + (slice(lo, hi),)], px(lo, hi)), {"where": pw(lo, hi)}),
             out.shape[axis])


def cast(x: Array, dtype: Any) -> Array:
    """A copy of x converted to ``dtype``."""
    if _current.get() is None and not _big(x):
        return x.astype(dtype)
    out = empty(x.shape, dtype)
    _copy_into_unsafe(out, x)
    return out


def copy(x: Array) -> Array:
    """A contiguous copy of x."""
    if _current.get() is None and not _big(x):
        return np.array(x, copy=True, order="C")
    out = empty(x.shape, x.dtype)
    _copy_into(out, x)
    return out


def _copy_into_unsafe(out: np.ndarray, x: np.ndarray) -> None:
    axis = _split_axis(out.shape) if _big(out) else -1
    if axis < 0:
        np.copyto(out, x, casting="unsafe")
        return
    px = _slicer(x, axis, out.ndim)
    pre = (slice(None),) * axis
    parallel(lambda lo, hi: (np.copyto, (out[pre + (slice(lo, hi),)], px(lo, hi)), {"casting": "unsafe"}),
             out.shape[axis])


def zeros(shape: tuple[int, ...], dtype: Any) -> Array:
    a = _current.get()
    if a is None:
        return np.zeros(shape, dtype)
    out = a.empty(shape, dtype)
    out.fill(0)
    return out


def empty(shape: tuple[int, ...], dtype: Any) -> Array:
    a = _current.get()
    return np.empty(shape, dtype) if a is None else a.empty(shape, dtype)


def _arr(x: Any) -> bool:
    return isinstance(x, np.ndarray | int | float | np.generic)


_NUMBERS = (float, int)


def _unary_op(f: np.ufunc) -> Any:
    def op(x: Array) -> Array:
        a = _current.get()
        if a is None and _threads[0] == 1 or not isinstance(x, np.ndarray):
            return f(x)
        if a is not None and _threads[0] == 1:
            return f(x, out=a.empty(x.shape, x.dtype))
        if a is None:
            # threads only for floats, whose result keeps x's dtype (exp of ints is float64)
            if x.dtype.kind != "f" or not _big(x):
                return f(x)
            return _ufunc_into(f, (x,), np.empty(x.shape, x.dtype))
        return _ufunc_into(f, (x,), a.empty(x.shape, x.dtype))
    op.__name__ = f.__name__
    op.ufunc = f  # type: ignore[attr-defined]
    op.raw = lambda x: (f, (0,), {}) if isinstance(x, np.ndarray) else None  # type: ignore[attr-defined]
    return op


def _binary_op(f: np.ufunc, out_dtype: Any = None) -> Any:
    def op(x: Array, y: Array, out: Array | None = None) -> Array:
        if out is not None:  # into given storage (an operator reusing a temporary operand's array)
            return _ufunc_into(f, (x, y), out)
        a = _current.get()
        if a is None and _threads[0] == 1:
            return f(x, y)  # the common case first: NumPy allocates (Tensors dispatch themselves)
        if a is not None and _threads[0] == 1:  # the usual operands, without working out dtypes
            if type(x) is np.ndarray:
                if type(y) is np.ndarray and x.shape == y.shape and x.dtype is y.dtype \
                        or type(y) in _NUMBERS and x.dtype.kind == "f":
                    return f(x, y, out=a.empty(x.shape, out_dtype or x.dtype))
            elif type(y) is np.ndarray and type(x) in _NUMBERS and y.dtype.kind == "f":
                return f(x, y, out=a.empty(y.shape, out_dtype or y.dtype))
        if not (_arr(x) and _arr(y)):
            return f(x, y)
        if a is None:
            # threads only where the result dtype is plain to see: float results, or bool
            xl = x if isinstance(x, np.ndarray) else y
            if not isinstance(xl, np.ndarray) or xl.size < PARALLEL_MIN or _threads[0] == 1:
                return f(x, y)
            dt = out_dtype or np.result_type(x, y)
            if out_dtype is None and dt.kind != "f":
                return f(x, y)
            return _ufunc_into(f, (x, y), np.empty(broadcast_shape(_shape(x), _shape(y)), dt))
        dt = out_dtype or np.result_type(x, y)
        return _ufunc_into(f, (x, y), a.empty(broadcast_shape(_shape(x), _shape(y)), dt))
    op.__name__ = f.__name__
    op.ufunc = f  # type: ignore[attr-defined]
    op.raw = lambda x, y, out=None: (f, (0, 1), {}) if out is None else None  # type: ignore[attr-defined]
    return op


add, subtract, multiply, divide, power = (
    _binary_op(f) for f in (np.add, np.subtract, np.multiply, np.true_divide, np.power))
floor_divide, remainder, fmod, maximum, minimum = (
    _binary_op(f) for f in (np.floor_divide, np.remainder, np.fmod, np.maximum, np.minimum))
greater, greater_equal, less, less_equal, equal, not_equal = (
    _binary_op(f, np.bool_) for f in (np.greater, np.greater_equal, np.less, np.less_equal,
                                       np.equal, np.not_equal))
logical_and, logical_or, logical_xor = (
    _binary_op(f, np.bool_) for f in (np.logical_and, np.logical_or, np.logical_xor))
bitwise_and, bitwise_or, bitwise_xor = (
    _binary_op(f) for f in (np.bitwise_and, np.bitwise_or, np.bitwise_xor))
negative, absolute, sign, exp, log, log1p, expm1, sqrt, sin, cos, tan, tanh = (
    _unary_op(f) for f in (np.negative, np.absolute, np.sign, np.exp, np.log, np.log1p, np.expm1,
                           np.sqrt, np.sin, np.cos, np.tan, np.tanh))
floor, ceil, round_, trunc, reciprocal, invert = (
    _unary_op(f) for f in (np.floor, np.ceil, np.rint, np.trunc, np.reciprocal, np.invert))


_HANDOVER_MIN = 1 << 14  # (below this many entries, checking costs more than the product)


def times(g: Array, y: Array) -> Array:
    """g * y for a product's gradient. The gradient of a sum arrives as a read-only broadcast of a
    single 1 (all strides 0): times y that is y itself, handed over with no pass over memory and
    no fresh array (the engine writes only into arrays it made, so a shared one is safe there)."""
    if (type(g) is np.ndarray and g.size >= _HANDOVER_MIN and type(y) is np.ndarray and g.shape == y.shape
            and g.dtype == y.dtype and not any(g.strides) and g.flat[0] == 1):
        return y
    return multiply(g, y)


# (a replay checks the value when the shapes allow the handover; otherwise it is a product)
times.raw = lambda g, y: (  # type: ignore[attr-defined]
    None if type(g) is np.ndarray and g.size >= _HANDOVER_MIN and not any(g.strides) else (np.multiply, (0, 1), {}))


def logical_not(x: Array) -> Array:
    a = _current.get()
    if a is None or not isinstance(x, np.ndarray):
        return np.logical_not(x)
    return np.logical_not(x, out=a.empty(x.shape, np.bool_))


isnan, isinf = np.isnan, np.isinf
swapaxes = np.swapaxes
squeeze = np.squeeze
indices = np.indices
ones = np.ones
argsort = np.argsort


def mask(g: Array, keep: Array) -> Array:
    """``g`` where ``keep`` is True, else 0, as a multiply by the mask: 8x faster than np.where
    for float arrays. Unlike where, a NaN in g at a masked-out position stays NaN."""
    if not isinstance(g, np.ndarray):
        return np.where(keep, g, 0)  # a Tensor (create_graph): the differentiable where
    if _current.get() is None and not _big(g):
        return np.multiply(g, keep, dtype=g.dtype)
    out = empty(broadcast_shape(g.shape, _shape(keep)), g.dtype)
    return _ufunc_into(np.multiply, (g, keep), out, dtype=g.dtype)


def assign(out: Array, index: Any, v: Array) -> None:
    """``out[index] = v`` in place."""
    out[index] = v


def add_at(out: Array, index: Any, v: Array) -> None:
    """``np.add.at(out, index, v)``: repeated indices accumulate. Rows picked by one integer array
    (an embedding's backward) are summed by sorting instead, about 5x faster than np.add.at
    there (the sums are pairwise, so they may round differently in the last bits)."""
    idx = index[0] if isinstance(index, tuple) and len(index) == 1 else index
    if (isinstance(idx, np.ndarray) and idx.dtype.kind in "iu" and idx.size >= 64 and isinstance(v, np.ndarray)
            and isinstance(out, np.ndarray) and out.flags.c_contiguous and out.ndim >= 1
            and v.shape == idx.shape + out.shape[1:]):
        flat = idx.reshape(-1)
        if flat.min() < 0:
            flat = flat % out.shape[0]
        order = np.argsort(flat, kind="stable")
        rows = flat[order]
        starts = np.flatnonzero(np.concatenate(([True], rows[1:] != rows[:-1])))
        # the gathered rows and their sums are as large as v: from the arena when one is active
        vv = v.reshape(flat.size, -1)
        if starts.size == flat.size:  # no row repeats (positions 0..L-1): each adds to its own row
            o2 = out.reshape(out.shape[0], -1)
            picked = empty(vv.shape, vv.dtype)
            np.take(o2, flat, axis=0, out=picked, mode="wrap")
            np.add(picked, vv, out=picked)
            o2[flat] = picked
            return
        picked = empty(vv.shape, vv.dtype)
        np.take(vv, order, axis=0, out=picked, mode="wrap")  # (in range: mode="raise" would copy via a buffer)
        sums = empty((starts.size, vv.shape[1]), vv.dtype)
        np.add.reduceat(picked, starts, axis=0, out=sums)
        o2 = out.reshape(out.shape[0], -1)
        u = rows[starts]  # distinct rows: a plain gather, add and scatter (o2[u] += sums would copy o2[u])
        np.take(o2, u, axis=0, out=picked[:u.size], mode="wrap")
        np.add(picked[:u.size], sums, out=sums)
        o2[u] = sums
        return
    np.add.at(out, index, v)


def expand(x: Array, shape: tuple[int, ...]) -> Array:
    """A read-only broadcast view of x as ``shape`` (np.broadcast_to's Python wrapper costs ~5 us;
    this builds the strided view directly). x's shape is ``shape`` with some sizes 1, or ()."""
    if not isinstance(x, np.ndarray):
        return np.broadcast_to(x, shape)
    if x.shape == shape:
        return x
    lead = len(shape) - x.ndim
    if x.size == 1:
        strides: Any = (0,) * len(shape)  # a scalar gradient (the grad of a full sum)
    elif lead < 0 or not x.flags.c_contiguous:
        return np.broadcast_to(x, shape)
    else:
        strides = [0] * lead + [0 if n == 1 else s for n, s in zip(x.shape, x.strides)]
    v = np.ndarray(shape, x.dtype, x, 0, strides)
    if v.flags.writeable:  # (a view of a read-only array, such as the seed gradient, is one already)
        v.flags.writeable = False
    return v


def add_into(x: Array, y: Array, out: Array) -> None:
    """``out = x + y`` into given storage."""
    _ufunc_into(np.add, (x, y), out)


def iadd(x: Array, y: Array) -> Array:
    """``x += y`` in place (x's storage is kept); returns x."""
    if _threads[0] == 1:  # every gradient accumulation: skip the threads wrapper's call
        return np.add(x, y, out=x)
    return _ufunc_into(np.add, (x, y), x)


iadd.raw = lambda x, y: (np.add, (0, 1), {}, 0) if isinstance(x, np.ndarray) else None  # type: ignore[attr-defined]


_AXPY_CHUNK = 1 << 16  # entries per chunk of axpy_: its product (256 KB of float32) stays in cache


def axpy_(y: Array, x: Array, alpha: float) -> Array:
    """``y += alpha * x`` in place (one shape and dtype; a manual SGD step's ``p.add_(g, alpha=-lr)``)
    by chunks, each product added while it is still in cache: a third faster on large arrays than a
    full-size product and a sum over it, with the same values."""
    n = y.size
    if (n <= _AXPY_CHUNK or _threads[0] > 1 or not (y.flags.c_contiguous and x.flags.c_contiguous)
            or np.may_share_memory(x, y)):  # (overlap: the product must be whole before y changes)
        return iadd(y, multiply(x, alpha))
    yf, xf = y.reshape(-1), x.reshape(-1)
    scratch = empty((_AXPY_CHUNK,), y.dtype)
    for i in range(0, n, _AXPY_CHUNK):
        j = min(i + _AXPY_CHUNK, n)
        t = scratch if j - i == _AXPY_CHUNK else scratch[:j - i]
        np.multiply(xf[i:j], alpha, out=t)
        np.add(yf[i:j], t, out=yf[i:j])
    return y


def isub(x: Array, y: Array) -> Array:
    """``x -= y`` in place; returns x."""
    return _ufunc_into(np.subtract, (x, y), x)


def imul(x: Array, y: Array) -> Array:
    """``x *= y`` in place; returns x."""
    return _ufunc_into(np.multiply, (x, y), x)


_LN_BLOCK = 1 << 16  # entries per block of layer_norm_backward_: fewer, larger blocks pay there (fewer calls)


def _row_outer(left: np.ndarray, r: np.ndarray, right: np.ndarray, out: np.ndarray) -> np.ndarray:
    """out[i, j] = r[i] * right[0, j] for a (k, 1) column r: one BLAS product of (k, 2) by (2, n)
    (``left``'s second column and ``right``'s second row are zeros). NumPy's own loop takes a K = 1
    product (9x slower), and a broadcast multiply of r by a row runs a slow strided loop."""
    np.copyto(left[:, :1], r)
    return np.matmul(left, right, out=out)


def layer_norm_backward_(g: Array, xhat: Array, rstd: Array, w: Array | None, inv_n: float,
                         need: tuple[bool, bool, bool]) -> tuple[Array | None, Array | None, Array | None]:
    """The gradients (input, weight, bias) of a layer norm over the rows of (N, n) arrays, as
    ``need`` asks: gx = rstd (g w - mean(g w) - xhat mean(g w xhat)) (w: (n,) or None), written
    over ``xhat`` (when asked for), gw = column sums of g xhat, gb = column sums of g. Done by
    blocks of rows, so each block's passes run in cache and no full-size array is made (a fresh
    one's memory is cold: writing it costs as much as the arithmetic). Every row and column sum is
    a BLAS matrix-vector product (over g, or over p = g xhat), and rstd w enters as one
    outer-product matrix: g w is never formed, and only two passes broadcast a column."""
    N, n = xhat.shape
    rows = max(1, min(N, _LN_BLOCK // max(n, 1)))
    dt = xhat.dtype
    ones = _ones(max(n, rows), dt)
    wv = ones[:n] if w is None else w
    gw: Any = None
    gb: Any = None
    col: Any = None
    if need[1] or need[2]:
        col = empty((n,), dt)
    if need[1]:
        gw = zeros((n,), dt)
    if need[2]:
        gb = zeros((n,), dt)
    if need[0] or need[1]:
        p = empty((rows, n), dt)
    if need[0]:
        a, c = empty((rows, 1), dt), empty((rows, 1), dt)
        left, right = zeros((rows, 2), dt), zeros((2, n), dt)
        right[0] = wv
    for i in range(0, N, rows):
        gc = g[i:i + rows]
        k = gc.shape[0]
        xc, r = xhat[i:i + k], rstd[i:i + k]
        if need[2]:
            np.matmul(ones[:k], gc, out=col)  # column sums by BLAS (see _sum_gemv)
            gb += col
        if not (need[0] or need[1]):
            continue
        pk = p[:k]
        np.multiply(gc, xc, out=pk)
        if need[1]:
            np.matmul(ones[:k], pk, out=col)
            gw += col
        if not need[0]:
            continue
        ak, ck = a[:k], c[:k]
        np.matmul(gc, wv, out=ak.reshape(-1))  # sum_j g w
        np.matmul(pk, wv, out=ck.reshape(-1))  # sum_j g w xhat
        # gx = g (rstd w) - rstd mean(g w) - xhat rstd mean(g w xhat)
        ak *= r
        ak *= -inv_n
        ck *= r
        ck *= -inv_n
        xc *= ck
        xc += ak
        rk = _row_outer(left[:k], r, right, pk)  # (p is spent: its block takes rstd w)
        rk *= gc
        xc += rk
    return (xhat if need[0] else None), gw, gb


def rowdot(x: Array, y: Array) -> Array:
    """Row-wise dot products of two (N, n) arrays, as (N, 1): one pass, no temporary."""
    out = empty((x.shape[0], 1), np.result_type(x, y))
    np.einsum("ij,ij->i", x, y, out=out.reshape(-1))
    return out


def dot_along(x: Array, y: Array, axis: int) -> Array:
    """sum(x * y, axis, keepdims=True) in one pass (einsum), without the product as a temporary."""
    nd = max(x.ndim, y.ndim)
    axis %= nd
    letters = "abcdefghijklmnopqrstuvwxyz"[:nd]
    shape = broadcast_shape(x.shape, y.shape)
    out = empty(shape[:axis] + (1,) + shape[axis + 1:], np.result_type(x, y))
    np.einsum(f"{letters[nd - x.ndim:]},{letters[nd - y.ndim:]}->{letters.replace(letters[axis], '')}", x, y,
              out=out.reshape(shape[:axis] + shape[axis + 1:]))
    return out


def sum(x: Array, axis: Any = None, keepdims: bool = False) -> Array:  # noqa: A001
    """Arena-aware ``np.sum`` (also used by backward formulas, so it accepts Tensors)."""
    if not isinstance(x, np.ndarray):
        return np.sum(x, axis=axis, keepdims=keepdims)
    if isinstance(axis, int):
        axis = (axis % x.ndim,)
    return reduce(np.add, x, axis, keepdims)


_erf64 = np.frompyfunc(math.erf, 1, 1)

# ---- fused kernels over cache blocks -------------------------------------------------------------
# A formula of many passes (erf is ~20) runs block by block, so each pass reads and writes a
# block that stays in the CPU cache instead of whole arrays in memory: about 1.5x faster, and
# the blocks are shared out to the worker threads.

_BLOCK = 1 << 15  # elements per block: 128 KiB of float32, a few of them fit in L2
_SIGN32 = np.uint32(0x80000000)
# Abramowitz-Stegun 7.1.26: erf(z) = 1 - t (a1 + t (a2 + ...)) exp(-z^2), t = 1 / (1 + p z), z >= 0
_AS_P = 0.3275911
_AS_A = (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429)  # a1 .. a5


def _blocked(kernel: Any, x: np.ndarray, nout: int, nscratch: int) -> list[np.ndarray]:
    """``kernel(x_block, out_blocks, scratch_blocks)`` over cache-sized blocks of flat x; returns
    the ``nout`` outputs (x's shape and dtype)."""
    xf = np.ascontiguousarray(x).reshape(-1)
    outs = [empty(x.shape, x.dtype) for _ in range(nout)]
    flat = [o.reshape(-1) for o in outs]
    n = xf.size
    nb = -(-n // _BLOCK)

    def run(lo: int, hi: int, scratch: list[np.ndarray] | None = None) -> None:
        if scratch is None:  # a range of its own (one per thread): its own scratch
            scratch = [np.empty(min(_BLOCK, n), x.dtype) for _ in range(nscratch)]
        for b in range(lo, hi):
            s, e = b * _BLOCK, min((b + 1) * _BLOCK, n)
            kernel(xf[s:e], [f[s:e] for f in flat], [t[:e - s] for t in scratch])
    if n >= PARALLEL_MIN and _threads[0] > 1:
        parallel(lambda lo, hi: (run, (lo, hi), {}), nb)
    else:
        run(0, nb, [empty((min(_BLOCK, n),), x.dtype) for _ in range(nscratch)])  # from the arena if one is active
    return outs


def _as_tail(t: np.ndarray, out: np.ndarray, coef: tuple[float, ...]) -> None:
    """out = t (c0 + t (c1 + ...)) by Horner."""
    np.multiply(t, coef[-1], out=out)
    for c in coef[-2::-1]:
        out += c
        out *= t


def _set_sign(out: np.ndarray, x: np.ndarray, tmp: np.ndarray) -> None:
    """out = copysign(out, x) for out >= 0, float32: one OR of sign bits (np.copysign is a slow
    scalar loop)."""
    u = tmp.view(np.uint32)
    np.bitwise_and(x.view(np.uint32), _SIGN32, out=u)
    o = out.view(np.uint32)
    np.bitwise_or(o, u, out=o)


def _erf_block(x: np.ndarray, outs: list[np.ndarray], s: list[np.ndarray]) -> None:
    out, (a, t) = outs[0], s
    np.absolute(x, out=a)
    np.multiply(a, _AS_P, out=t)
    t += 1
    np.divide(1.0, t, out=t)
    _as_tail(t, out, _AS_A)
    np.multiply(a, a, out=a)
    np.negative(a, out=a)
    np.exp(a, out=a)
    out *= a
    np.subtract(1.0, out, out=out)
    _set_sign(out, x, a)


def erf(x: Array) -> Array:
    """Gauss error function. float64 is exact (math.erf per element, slow); other dtypes use
    Abramowitz-Stegun 7.1.26 in float32 (absolute error < 1.5e-7, float32's scale)."""
    if x.dtype == np.float64:
        return np.asarray(_erf64(x), np.float64)
    if x.dtype != np.float32:
        return cast(erf(x.astype(np.float32)), x.dtype)
    return _blocked(_erf_block, x, 1, 2)[0]


_SQRT1_2 = 1 / math.sqrt(2)
_INV_SQRT_2PI = 1 / math.sqrt(2 * math.pi)
_GELU_A = tuple(0.5 * c for c in _AS_A)  # Phi(-|x|) = 0.5 erfc(|x|/sqrt 2): the 0.5 folded in
_TANH_C = math.sqrt(2 / math.pi)


# Phi(-|x|) = t P(t) exp(-x^2/2) with t = 1 / (1 + p |x| / sqrt 2) (Abramowitz-Stegun 7.1.26, the
# 0.5 of Phi folded in). Scaled to t' = s t with s^5 = a5 / 2, P is monic in t' (Horner saves its
# first multiply), and t' = K2 / (-|x|/2 - K) comes from -|x|/2, which also gives -x^2/2: 23 passes
# over a block for output and derivative instead of 25. The constants are 0-d float32 arrays (the
# kernel runs on float32 only): NumPy takes them faster than Python floats, 4% of the kernel.
_GELU_S = _GELU_A[4] ** 0.2
_GELU_K = math.sqrt(2) / (2 * _AS_P)
_G32 = {name: np.array(v, np.float32) for name, v in [
    ("K", _GELU_K), ("K2", -_GELU_S * _GELU_K), ("half", 0.5), ("-half", -0.5), ("c", _INV_SQRT_2PI)]}
_GELU_B = [np.array(c * _GELU_S ** -(i + 1), np.float32) for i, c in enumerate(_GELU_A[:4])]  # of t'^1 .. t'^4


def _gelu_block(x: np.ndarray, outs: list[np.ndarray], s: list[np.ndarray]) -> None:
    """out = x Phi(x) and, when asked, its derivative Phi(x) + x phi(x), in one pass over a float32
    block."""
    out, deriv = outs[0], (outs[1] if len(outs) > 1 else None)
    h, t, q = s
    c = _G32
    a = out  # |x| lives in the output until the output is written
    np.absolute(x, out=a)
    np.multiply(a, c["-half"], out=h)
    np.subtract(h, c["K"], out=t)
    np.divide(c["K2"], t, out=t)  # t'
    np.multiply(a, h, out=h)
    np.exp(h, out=h)  # exp(-x^2/2), shared by Phi and its derivative
    np.add(t, _GELU_B[3], out=q)
    for b in _GELU_B[2::-1]:
        np.multiply(q, t, out=q)
        np.add(q, b, out=q)
    np.multiply(q, t, out=q)
    np.multiply(q, h, out=q)  # Phi(-|x|)
    np.subtract(c["half"], q, out=q)
    _set_sign(q, x, t)
    np.add(q, c["half"], out=q)  # Phi(x) = 0.5 + copysign(0.5 - Phi(-|x|), x)
    np.multiply(x, q, out=out)
    if deriv is not None:
        np.multiply(x, h, out=deriv)
        np.multiply(deriv, c["c"], out=deriv)
        np.add(deriv, q, out=deriv)


def _gelu_tanh_block(x: np.ndarray, outs: list[np.ndarray], s: list[np.ndarray]) -> None:
    """The tanh approximation: Phi(x) ~ (1 + tanh(c (x + 0.044715 x^3))) / 2, and its derivative."""
    out, deriv = outs[0], (outs[1] if len(outs) > 1 else None)
    x2, u, h = s
    np.multiply(x, x, out=x2)
    np.multiply(x2, _TANH_C * 0.044715, out=u)
    u += _TANH_C
    u *= x
    np.tanh(u, out=u)
    np.multiply(u, 0.5, out=h)
    h += 0.5  # Phi
    np.multiply(x, h, out=out)
    if deriv is not None:
        # d/dx = Phi + x (1 - tanh^2) c (1 + 3 * 0.044715 x^2) / 2
        np.multiply(u, u, out=u)
        np.subtract(1.0, u, out=u)
        u *= x
        x2 *= 0.5 * _TANH_C * 3 * 0.044715
        x2 += 0.5 * _TANH_C
        u *= x2
        np.add(u, h, out=deriv)


def gelu(x: Array, approximate: str, deriv: bool) -> tuple[Array, Array | None]:
    """GELU of a float array, x * Phi(x), and (if ``deriv``) its derivative, each in one blocked
    pass. 'none' is exact through erf (as ``erf`` above for float32; float64 exact); 'tanh' is the
    tanh approximation."""
    if x.dtype == np.float64 and approximate == "none":  # exact: no approximation of erf
        phi = multiply(add(erf(multiply(x, _SQRT1_2)), 1.0), 0.5)
        d = add(phi, multiply(x, multiply(exp(multiply(multiply(x, x), -0.5)), _INV_SQRT_2PI))) if deriv else None
        return multiply(x, phi), d
    if x.dtype not in (np.float32, np.float64):
        out, d = gelu(x.astype(np.float32), approximate, deriv)
        return cast(out, x.dtype), (None if d is None else cast(d, x.dtype))
    kernel = _gelu_block if approximate == "none" else _gelu_tanh_block
    res = _blocked(kernel, x, 2 if deriv else 1, 3)
    return res[0], (res[1] if deriv else None)


# ---- reductions and products -------------------------------------------------------------------

def _reduced(shape: tuple[int, ...], axes: tuple[int, ...], keepdims: bool) -> tuple[int, ...]:
    if keepdims:
        return tuple(1 if i in axes else s for i, s in enumerate(shape))
    return tuple(s for i, s in enumerate(shape) if i not in axes)


_ONES: dict[Any, np.ndarray] = {}  # per dtype, _GEMV_MAX ones; a sum of n entries uses the first n
_GEMV_MAX = 8192  # longest sum done by BLAS: its float32 accumulators drift on much longer ones
_GEMV_MIN = 2048  # smaller sums: NumPy's reduction (0.8-3 us) beats the ~4.5 us of getting to BLAS
_GEMV_FULL_MIN = 1 << 16  # full sums of this many entries or more go by rows through BLAS


def _ones(n: int, dt: Any) -> np.ndarray:
    """n ones of dtype ``dt`` (not to be written): a slice of the cached vector, or fresh beyond its length."""
    ones = _ONES.get(dt)
    if ones is None:
        ones = _ONES[dt] = np.ones(_GEMV_MAX, dt)
    return ones[:n] if n <= _GEMV_MAX else np.ones(n, dt)


def _gemv_form(x: np.ndarray, axes: tuple[int, ...], dtype: Any) -> tuple[int, bool] | None:
    """(length, leading) of a float sum over the leading or the trailing axes of a contiguous
    array that BLAS does faster than NumPy's reduction (see _sum_gemv), or None."""
    if x.size < _GEMV_MIN:
        return None
    if x.dtype not in (np.float32, np.float64) or (dtype is not None and dtype != x.dtype) \
            or not x.flags.c_contiguous:
        return None
    nd = x.ndim
    ax = sorted(i % nd for i in axes) if nd else []
    k = len(ax)
    if k == 0 or k == nd or ax != list(range(ax[0], ax[0] + k)) or (ax[0] != 0 and ax[-1] != nd - 1):
        return None
    lead = ax[0] == 0
    n = math.prod(x.shape[:k]) if lead else math.prod(x.shape[nd - k:])
    if n > _GEMV_MAX or n < 2 or x.size == 0:
        return None
    return n, lead


def _sum_gemv(x: np.ndarray, axes: tuple[int, ...], keepdims: bool, dtype: Any) -> Array | None:
    """A float sum over the leading or the trailing axes of a contiguous array, as one BLAS
    matrix-vector product with a vector of ones: 3-6x faster than NumPy's reduction, whose
    per-row overhead dominates short rows (layer norm, softmax, bias gradients). None if the
    sum is not of that form."""
    form = _gemv_form(x, axes, dtype)
    if form is None:
        return None
    n, lead = form
    ones = _ones(n, x.dtype)
    out = empty(_reduced(x.shape, tuple(i % x.ndim for i in axes), keepdims), x.dtype)
    flat = out.reshape(-1)
    if lead:
        np.matmul(ones, x.reshape(n, -1), out=flat)
    else:
        np.matmul(x.reshape(-1, n), ones, out=flat)
    return out


def reduce(f: np.ufunc, x: Array, axes: tuple[int, ...] | None, keepdims: bool = False,
           dtype: Any = None) -> Array:
    """``f.reduce`` over ``axes`` (None: all); ``f`` is a ufunc or a binary op of this module."""
    f = getattr(f, "ufunc", f)
    if f is np.add and isinstance(x, np.ndarray):
        if axes is not None:
            r = _sum_gemv(x, axes, keepdims, dtype)
            if r is not None:
                return r
        elif x.size >= _GEMV_FULL_MIN and x.ndim > 1:
            # a full sum of a large array: its rows by BLAS (on all of BLAS's threads), then
            # their sums (NumPy's one-thread reduction is 3x slower on 1000 x 1000)
            r = _sum_gemv(x, (x.ndim - 1,), False, dtype)
            if r is not None:
                total = f.reduce(r, axis=None, dtype=dtype)
                return np.reshape(total, (1,) * x.ndim) if keepdims else total
    kw = {}
    if (f is np.maximum or f is np.minimum) and isinstance(x, np.ndarray) and x.dtype.kind == "f" and x.size:
        # with an initial value NumPy takes its vector loop over short rows: 3x faster
        kw["initial"] = -np.inf if f is np.maximum else np.inf
    a = _current.get()
    if a is None and not (_big(x) and x.dtype.kind == "f"):
        if not kw:  # (NumPy's call with an empty **kw costs a third of a small sum)
            return f.reduce(x, axis=axes, keepdims=keepdims, dtype=dtype)  # type: ignore[arg-type]
        return f.reduce(x, axis=axes, keepdims=keepdims, dtype=dtype, **kw)  # type: ignore[arg-type]
    ax = tuple(range(x.ndim)) if axes is None else axes
    out = empty(_reduced(x.shape, ax, keepdims), x.dtype if dtype is None else dtype)
    if _threads[0] == 1:
        return f.reduce(x, axis=ax, keepdims=keepdims, dtype=dtype, out=out, **kw)
    # threads take slices along a kept axis only: each output entry is then summed in the same
    # order as by one call (bit-identical)
    keep = [i for i in range(x.ndim) if i not in ax and x.shape[i] > 1]
    if not _big(x) or not keep:
        return f.reduce(x, axis=ax, keepdims=keepdims, dtype=dtype, out=out, **kw)
    k = keep[0]
    ko = k if keepdims else k - len([i for i in ax if i < k])
    pre_x, pre_o = (slice(None),) * k, (slice(None),) * ko
    parallel(lambda lo, hi: (f.reduce, (x[pre_x + (slice(lo, hi),)],),
                             dict(axis=ax, keepdims=keepdims, dtype=dtype, out=out[pre_o + (slice(lo, hi),)], **kw)),
             x.shape[k])
    return out


def _reduce_raw(f: Any, x: Any, axes: tuple[int, ...] | None, keepdims: bool, dtype: Any) -> Any:
    """``reduce``'s call as one NumPy reduction given its output buffer, or None where it takes
    another way (BLAS sums)."""
    f = getattr(f, "ufunc", f)
    if not isinstance(x, np.ndarray) or f is np.add and (
            _gemv_form(x, axes, dtype) if axes is not None else x.size >= _GEMV_FULL_MIN and x.ndim > 1):
        return None
    kw = dict(axis=tuple(range(x.ndim)) if axes is None else axes, keepdims=keepdims, dtype=dtype)
    if (f is np.maximum or f is np.minimum) and x.dtype.kind == "f" and x.size:
        kw["initial"] = -np.inf if f is np.maximum else np.inf
    return f.reduce, kw


# ``fn.raw(*args)``: how a call of fn lowers to one NumPy call writing into a fresh buffer, as
# (function, positions of the arguments it takes, keywords), or into its argument at position k,
# as (function, positions, keywords, k); None when it does not (see compiler._lower)
def _reduce_lowered(f: Any, x: Any, axes: Any, keepdims: bool = False, dtype: Any = None) -> Any:
    r = _reduce_raw(f, x, axes, keepdims, dtype)
    return None if r is None else (r[0], (1,), r[1])


def _sum_lowered(x: Any, axis: Any = None, keepdims: bool = False) -> Any:
    if isinstance(axis, int) and isinstance(x, np.ndarray):
        axis = (axis % x.ndim,)
    r = _reduce_raw(np.add, x, axis, keepdims, None)
    return None if r is None else (r[0], (0,), r[1])


reduce.raw = _reduce_lowered  # type: ignore[attr-defined]
sum.raw = _sum_lowered  # type: ignore[attr-defined]


_SOFTMAX_SHIFTLESS_MIN = 1 << 14  # below this the two extra checks cost more than they save


def exp_sums(x: Array, axis: int) -> tuple[Array, Array, Array | None]:
    """(e, s, m): e = exp(x - m) (fresh) and its sums s along ``axis`` (kept), m the maxima along
    ``axis``; or m None and e = exp(x) itself, where no row can overflow or vanish: every entry <= 60
    and every row's sum >= 1e-3 (checked on the sums). The row maxima, a slow reduction over short
    rows, are then not needed."""
    if isinstance(x, np.ndarray) and x.dtype in (np.float32, np.float64) and x.size >= _SOFTMAX_SHIFTLESS_MIN \
            and x.shape[axis] > 1 and float(np.max(x)) <= 60.0:
        e = exp(x)
        s = reduce(add, e, (axis,), True)
        if float(np.min(s)) >= 1e-3:
            return e, s, None
    m = reduce(maximum, x, (axis,), True)
    e = subtract(x, m)
    _ufunc_into(np.exp, (e,), e)
    return e, reduce(add, e, (axis,), True), m


def softmax(x: Array, axis: int) -> Array:
    """exp(x - max) / sum(exp(x - max)) along ``axis``, in one fresh array: the exponentials times
    1 / sum, as PyTorch's kernel computes it (a multiply per entry, 20% faster than a divide)."""
    e, s, _ = exp_sums(x, axis)
    return _ufunc_into(np.multiply, (e, _ufunc_into(np.true_divide, (1, s), s)), e)  # (s is fresh)


def matmul(x: Array, y: Array) -> Array:
    a = _current.get()
    if a is None or not (isinstance(x, np.ndarray) and isinstance(y, np.ndarray)):
        return np.matmul(x, y)
    if x.ndim == 2 == y.ndim and x.dtype is y.dtype:  # (the usual product: its shape and dtype at sight)
        return np.matmul(x, y, out=a.empty((x.shape[0], y.shape[1]), x.dtype))
    shape = broadcast_shape(x.shape[:-2], y.shape[:-2]) + (x.shape[-2], y.shape[-1])
    return np.matmul(x, y, out=a.empty(shape, np.result_type(x, y)))


matmul.raw = lambda x, y: (np.matmul, (0, 1), {})  # type: ignore[attr-defined]


_NT_MAX = 256  # largest side of a transposed right operand that bmm copies to row-major first


def bmm(x: Array, y: Array) -> Array:
    """``matmul(x, y)`` for the matrix-product primitive. In a stack of small products whose right
    operands are transposed views (q @ k^T and g @ v^T in attention), those operands are copied
    to row-major first: OpenBLAS's small-matrix kernel takes about twice as long for a transposed
    right operand, more than the copy costs (64 products of 64x32x64: 221 -> 36 + 130 us)."""
    if _bmm_copies(x, y):
        y = copy(y)
    return matmul(x, y)


def _bmm_copies(x: Any, y: Any) -> bool:
    return (type(y) is np.ndarray and type(x) is np.ndarray and y.ndim > 2 and y.strides[-2] == y.itemsize
            and 1 < y.shape[-1] <= _NT_MAX and 1 < y.shape[-2] <= _NT_MAX)


bmm.raw = lambda x, y: None if _bmm_copies(x, y) else (np.matmul, (0, 1), {})  # type: ignore[attr-defined]


def take(x: Array, index: Any) -> Array:
    """``x[index]`` for an advanced (copying) index."""
    return x[index]


def reshapes_as_view(x: Array, shape: tuple[int, ...]) -> bool:
    """Whether ``x`` takes ``shape`` without a copy (its strides allow it): torch's rule for ``view``."""
    if x.flags.c_contiguous:
        return True
    try:
        np.reshape(x, shape, copy=False)
    except ValueError:
        return False
    return True


def reshape_any(x: Array, shape: tuple[int, ...]) -> Array:
    """``x.reshape(shape)``: a view when the layout allows, else a contiguous copy (from the arena
    when one is active, so a reshape of a transposed tensor allocates nothing inside a step)."""
    if not isinstance(x, np.ndarray):
        return np.reshape(x, shape)
    try:
        return np.reshape(x, shape, copy=False)
    except ValueError:
        a = _current.get()
        if a is None:
            return np.reshape(x, shape)
        out = a.empty(x.shape, x.dtype)
        np.copyto(out, x)
        return out.reshape(shape)


def take_rows(x: Array, index: Array) -> Array:
    """``x[index]`` for one integer index array on the first axis (an embedding lookup), written
    into arena storage when an arena is active."""
    a = _current.get()
    n = x.shape[0]
    if a is None or (index.size and (index.max() >= n or index.min() < -n)):
        return x[index]  # NumPy raises the IndexError for an index out of range
    out = a.empty(index.shape + x.shape[1:], x.dtype)
    np.take(x, index, axis=0, out=out, mode="wrap")  # in range (checked): wrap only maps negatives,
    return out  # and unlike mode="raise" it writes straight into out without a buffer


def matmul_into(x: Array, y: Array, out: Array) -> Array:
    """``x @ y`` written into ``out`` (a C-contiguous block of a larger result): one BLAS call
    per block lets a caller compute a product block by block while each block is in cache."""
    return np.matmul(x, y, out=out)


# ---- sorting and searching -----------------------------------------------------------------------
# Index computations over raw arrays (no graph): tensor.py takes the values with a differentiable
# gather, so these ops need no backward of their own. Indices are int64, as PyTorch's. NaN sorts as
# the largest value (NumPy's order too).

def _arange_along(n: int, axis: int, ndim: int) -> np.ndarray:
    shape = [1] * ndim
    shape[axis] = n
    return np.arange(n, dtype=np.int64).reshape(shape)


def sort_indices(x: Array, axis: int, descending: bool = False) -> Array:
    """A stable argsort along ``axis``; descending keeps equal elements in their original order."""
    if not descending:
        return np.argsort(x, axis=axis, kind="stable").astype(np.int64, copy=False)
    # the ascending stable order of the reversed array, reversed: ties stay first-come first
    n = x.shape[axis]
    r = np.flip(np.argsort(np.flip(x, axis), axis=axis, kind="stable"), axis)
    return (n - 1 - r).astype(np.int64, copy=False)


def topk_indices(x: Array, k: int, axis: int, largest: bool) -> Array:
    """Indices of the k largest (smallest) along ``axis``, in order; a partition first when k is
    small (O(n) instead of a full sort)."""
    n = x.shape[axis]
    lead = (slice(None),) * axis
    if 4 * k >= n:
        return sort_indices(x, axis, largest)[lead + (slice(0, k),)]
    part = np.argpartition(x, n - k if largest else k - 1, axis=axis)
    part = part[lead + ((slice(n - k, None) if largest else slice(0, k)),)]
    order = sort_indices(np.take_along_axis(x, part, axis), axis, largest)
    return np.take_along_axis(part, order, axis).astype(np.int64, copy=False)


def _isnan(x: Array) -> Array:
    return np.isnan(x) if x.dtype.kind == "f" else np.zeros(x.shape, bool)


def median_indices(x: Array, axis: int, ignore_nan: bool) -> Array:
    """Index (keepdims) of the lower median along ``axis``; a NaN's (the first) when NaNs count."""
    order = sort_indices(x, axis)
    nan = _isnan(x)
    n = x.shape[axis]
    if ignore_nan:
        pos = (np.maximum(n - nan.sum(axis, keepdims=True), 1) - 1) // 2  # all NaN: the first one
    else:
        pos = np.full(_reduced(x.shape, (axis,), True), (n - 1) // 2, np.int64)
    idx = np.take_along_axis(order, pos.astype(np.int64), axis)
    if not ignore_nan and nan.any():
        idx = np.where(nan.any(axis, keepdims=True), np.argmax(nan, axis, keepdims=True), idx)
    return idx


def mode_indices(x: Array, axis: int) -> Array:
    """Index (keepdims) of the most frequent value along ``axis``: the smallest such value, at its
    last occurrence, as PyTorch's mode."""
    order = sort_indices(x, axis)
    s = np.take_along_axis(x, order, axis)
    n = x.shape[axis]
    pos = _arange_along(n, axis, x.ndim)
    first = np.ones(s.shape, bool)
    lead = [slice(None)] * x.ndim
    lead[axis] = slice(1, None)
    tail = list(lead)
    tail[axis] = slice(None, -1)
    first[tuple(lead)] = s[tuple(lead)] != s[tuple(tail)]
    start = np.maximum.accumulate(np.where(first, pos, 0), axis)
    # the run length reaches its maximum first at the end of the smallest most-frequent value's run,
    # whose last element (stable order) is the value's last occurrence
    j = np.argmax(pos - start, axis, keepdims=True)
    return np.take_along_axis(order, j, axis)


def cumext_indices(x: Array, axis: int, largest: bool) -> Array:
    """Indices of the running max (min) along ``axis``: the latest position holding it (NaN wins)."""
    run = (np.maximum if largest else np.minimum).accumulate(x, axis)
    hit = (x == run) | (_isnan(x) & _isnan(run))
    pos = np.where(hit, _arange_along(x.shape[axis], axis, x.ndim), 0)
    return np.maximum.accumulate(pos, axis)


def values(x: Any) -> Array:
    """x's values as a plain array, outside any graph: for masks and indices that a backward formula
    needs while it records a graph (create_graph), where np.asarray on a Tensor that requires grad
    raises (it would silently make a differentiable value a constant)."""
    return x if isinstance(x, np.ndarray | np.generic) else x.detach().numpy()


def cumprod_grad(x: Array, out: Array, g: Any, axis: int) -> Any:
    """Gradient of ``cumprod`` along ``axis``, exact when x holds zeros (no division by one).

    With z the first zero of a slice: before z it is rev_cumsum(g * out) / x; at z it is
    prod(x[:z]) * sum_{j >= z} g[j] prod(x[z+1..j]); after z it is 0. g may be a Tensor
    (create_graph): every call on it here dispatches to a differentiable op.
    """
    n = x.shape[axis]
    xa = values(x)  # (the masks need no graph)
    pos = _arange_along(n, axis, x.ndim)
    zero = xa == 0
    if n == 0:
        return np.multiply(g, 0)
    z = np.where(zero.any(axis, keepdims=True), np.argmax(zero, axis, keepdims=True), n)
    before = pos < z
    rev = np.flip(np.cumsum(np.flip(np.multiply(g, out), axis), axis), axis)
    head = np.where(before, np.true_divide(rev, np.where(before, x, 1)), 0)
    if not zero.any():
        return head
    lead = np.prod(np.where(before, x, 1), axis, keepdims=True)
    after = np.cumprod(np.where(pos <= z, 1, x), axis)
    at = np.multiply(lead, np.sum(np.where(pos >= z, np.multiply(g, after), 0), axis, keepdims=True))
    return np.add(head, np.where(pos == z, at, 0))


def logcumsumexp(x: Array, axis: int) -> Array:
    """log(cumsum(exp(x))) along ``axis``, stably (pairwise logaddexp)."""
    with np.errstate(invalid="ignore"):  # (NaN inputs give NaN, as in PyTorch)
        return np.logaddexp.accumulate(x, axis)


def logcumsumexp_grad(x: Array, out: Array, g: Any, axis: int, scan: Any = None) -> Any:
    """Gradient of logcumsumexp: exp(x_k) sum_{j>=k} g_j exp(-out_j), in log space, the positive
    and negative parts of g apart (each a reversed logcumsumexp), so nothing overflows. With
    create_graph the arguments are Tensors and ``scan`` is their (differentiable) logcumsumexp."""
    def rev(a: Any) -> Any:
        if scan is not None:
            return np.flip(scan(np.flip(a, axis)), axis)
        return np.flip(np.logaddexp.accumulate(np.flip(a, axis), axis), axis)

    # log v where pos, else the lowest finite number (as PyTorch: -inf - -inf would give NaN); the
    # inner where keeps log's gradient finite where masked
    lowest = float(np.finfo(values(out).dtype).min)

    def log_part(pos: Any, v: Any) -> Any:
        return np.where(pos, np.log(np.where(pos, v, 1.0)), lowest)

    # (-inf inputs give NaN gradients, as in PyTorch)
    with np.errstate(invalid="ignore"):
        lp = np.subtract(log_part(g > 0, g), out)
        ln = np.subtract(log_part(g < 0, np.negative(g)), out)
        return np.subtract(np.exp(np.add(x, rev(lp))), np.exp(np.add(x, rev(ln))))


def scatter_extreme(x: Array, index: Array, src: Array, axis: int, reduce: str, include_self: bool) -> Array:
    """scatter_reduce's values for "amax", "amin" and "prod": a copy of x with src folded in at
    ``index`` along ``axis`` (positions addressed start from the identity when not include_self)."""
    f = {"amax": np.maximum, "amin": np.minimum, "prod": np.multiply}[reduce]
    out = x.copy()
    grids = list(np.indices(index.shape, sparse=True))
    grids[axis] = index
    at = tuple(grids)
    if not include_self:
        if reduce == "prod":
            ident: Any = 1
        elif out.dtype.kind == "f":
            ident = -np.inf if reduce == "amax" else np.inf
        else:
            info = np.iinfo(out.dtype) if out.dtype.kind in "iu" else None
            ident = (info.min if reduce == "amax" else info.max) if info else reduce == "amin"
        out[at] = ident
    f.at(out, at, src[tuple(slice(0, n) for n in index.shape)])
    return out


isin = np.isin
searchsorted_1d = np.searchsorted
histogram = np.histogram


def unique(x: Array, axis: int | None) -> tuple[Array, Array, Array]:
    """Sorted unique values (or slices along ``axis``), the inverse (int64, shaped as PyTorch's) and
    the counts."""
    # (each NaN is its own value, as in PyTorch)
    u, inv, cnt = np.unique(x, return_inverse=True, return_counts=True, axis=axis, equal_nan=False)
    inv = inv.reshape(x.shape if axis is None else (x.shape[axis],))
    return u, inv.astype(np.int64), cnt.astype(np.int64)


def unique_consecutive(x: Array, axis: int | None) -> tuple[Array, Array, Array]:
    """Collapse runs of equal consecutive values (slices along ``axis``): values, inverse, counts."""
    a = x.reshape(-1) if axis is None else np.moveaxis(x, axis, 0)
    n = a.shape[0]
    new = np.ones(n, bool)
    if n > 1:
        diff = a[1:] != a[:-1]
        new[1:] = diff.reshape(n - 1, -1).any(1)
    inv = np.cumsum(new) - 1
    starts = np.flatnonzero(new)
    cnt = np.diff(np.append(starts, n))
    u = a[starts]
    if axis is not None:
        u = np.moveaxis(u, 0, axis)
    return u, inv.reshape(x.shape if axis is None else (n,)).astype(np.int64), cnt.astype(np.int64)


def searchsorted(seq: Array, values: Array, right: bool) -> Array:
    """Insertion points of ``values`` in ``seq`` (1-D, or rows matching values' leading dims)."""
    side: Any = "right" if right else "left"
    if seq.ndim == 1:
        return np.searchsorted(seq, values, side=side).astype(np.int64)
    s2, v2 = seq.reshape(-1, seq.shape[-1]), values.reshape(-1, values.shape[-1])
    out = np.stack([np.searchsorted(s, v, side=side) for s, v in zip(s2, v2)]) if len(s2) else v2.astype(np.int64)
    return out.reshape(values.shape).astype(np.int64)


def bincount(x: Array, weights: Array | None, minlength: int) -> Array:
    return np.bincount(x, weights, minlength)


# ---- more math (compat) --------------------------------------------------------------------------
# Inverse trigonometric and hyperbolic functions, NaN-aware binary ops, and the special functions
# NumPy has no ufunc for (erfc, erfinv, lgamma, digamma, trigamma), computed in float64 to ~1e-15.

arcsin, arccos, arctan, arcsinh, arccosh, arctanh = (
    _unary_op(f) for f in (np.arcsin, np.arccos, np.arctan, np.arcsinh, np.arccosh, np.arctanh))
arctan2, hypot, copysign, fmax, fmin, logaddexp, logaddexp2 = (
    _binary_op(f) for f in (np.arctan2, np.hypot, np.copysign, np.fmax, np.fmin, np.logaddexp, np.logaddexp2))
signbit = np.signbit
nan_to_num = np.nan_to_num
isneginf, isposinf = np.isneginf, np.isposinf
tril_indices, triu_indices = np.tril_indices, np.triu_indices
heaviside = np.heaviside
finfo = np.finfo

_erfc1 = np.frompyfunc(math.erfc, 1, 1)


def _in_f64(f: Any, x: Array) -> Array:
    """``f`` computed in float64 and returned in x's (float) dtype."""
    r = np.asarray(f(np.asarray(x, np.float64)), np.float64)
    return r if x.dtype == np.float64 else r.astype(x.dtype)


def erfc(x: Array) -> Array:
    """Complementary error function 1 - erf(x), without erf's cancellation for large x."""
    return _in_f64(_erfc1, x)


def _lgamma_scalar(v: float) -> float:
    try:
        return math.lgamma(v)
    except ValueError:  # a pole (0, -1, -2, ...): PyTorch gives +inf
        return math.inf


_lgamma1 = np.frompyfunc(_lgamma_scalar, 1, 1)


def lgamma(x: Array) -> Array:
    """log|Gamma(x)| (math.lgamma per element)."""
    return _in_f64(_lgamma1, x)


# Giles' single-precision erfinv ("Approximating the erfinv function", GPU Computing Gems, 2011):
# relative error ~1e-7, polished to float64 by two Newton steps on erf (or on erfc near +-1).
_GILES_LO = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
             -0.00125372503, -0.00417768164, 0.246640727, 1.50140941)
_GILES_HI = (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
             -0.0076224613, 0.00943887047, 1.00167406, 2.83297682)


def _poly(c: tuple[float, ...], w: np.ndarray) -> np.ndarray:
    p = np.full_like(w, c[0])
    for ci in c[1:]:
        p = p * w + ci
    return p


def _erfinv64(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        w = -np.log((1.0 - x) * (1.0 + x))
        lo = w < 5.0
        y = np.where(lo, _poly(_GILES_LO, w - 2.5), _poly(_GILES_HI, np.sqrt(np.where(lo, 5.0, w)) - 3.0)) * x
        ok = np.isfinite(y)
        ax, ay = np.abs(x[ok]), np.abs(y[ok])
        far = ax > 0.5  # near +-1: Newton on erfc(y) = 1 - |x|, where 1 - |x| is exact
        q = 1.0 - ax
        for _ in range(4):  # (the guess is rough for |x| > 1 - 1e-7, beyond Giles' float32 range)
            d = 2 / math.sqrt(math.pi) * np.exp(-ay * ay)
            ec = np.asarray(_erfc1(ay), np.float64)
            # near +-1, Newton on log erfc(y) = log(1 - |x|): nearly linear there, so it converges
            # from a rough guess; elsewhere on erf(y) = |x|
            step = np.where(far, (np.log(np.where(far, ec, 1.0)) - np.log(np.where(far, q, 1.0))) * ec / d,
                            (ax - np.asarray(_erf64(ay), np.float64)) / d)
            ay = ay + step
        y[ok] = np.copysign(ay, x[ok])
        y[np.abs(x) == 1.0] = np.copysign(np.inf, x[np.abs(x) == 1.0])
        y[(np.abs(x) > 1.0) | np.isnan(x)] = np.nan
    return y


def erfinv(x: Array) -> Array:
    """Inverse error function on [-1, 1] (+-inf at +-1, NaN outside)."""
    return _in_f64(_erfinv64, x)


# digamma and trigamma: shift x up to >= 10 by the recurrences psi(x) = psi(x + 1) - 1/x and
# psi1(x) = psi1(x + 1) + 1/x^2, then the asymptotic series (Abramowitz-Stegun 6.3.18, 6.4.12);
# x < 0.5 by the reflection formulas. The series' next term at x = 10 is below 1e-16 relative.
_PSI_B = (1 / 12, -1 / 120, 1 / 252, -1 / 240, 1 / 132, -691 / 32760, 1 / 12)  # B_2k / (2k)
_PSI1_B = (1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6)  # B_2k


def _psi_pos(x: np.ndarray, order: int) -> np.ndarray:
    """digamma (order 0) or trigamma (order 1) for x >= 0.5."""
    acc = np.zeros_like(x)
    while True:
        small = x < 10.0
        if not small.any():
            break
        acc = acc - np.where(small, 1.0 / x, 0.0) if order == 0 else acc + np.where(small, 1.0 / (x * x), 0.0)
        x = np.where(small, x + 1.0, x)
    inv2 = 1.0 / (x * x)
    if order == 0:
        s = _poly(_PSI_B[::-1], inv2) * inv2
        return acc + np.log(x) - 0.5 / x - s
    s = _poly(_PSI1_B[::-1], inv2) * inv2 / x
    return acc + 1.0 / x + 0.5 * inv2 + s


def _polygamma64(x: np.ndarray, order: int) -> np.ndarray:
    x = np.asarray(x, np.float64)
    out = np.empty_like(x)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        fin = np.isfinite(x)
        pos = fin & (x >= 0.5)
        neg = fin & (x < 0.5)
        out[pos] = _psi_pos(x[pos], order)
        xn = x[neg]
        r = _psi_pos(1.0 - xn, order)
        sp = np.sin(np.pi * (xn - np.round(xn)))  # (reduced first: exact, and sin^2, tan have period pi)
        if order == 0:  # psi(x) = psi(1 - x) - pi / tan(pi x)
            val = r - np.pi / np.tan(np.pi * (xn - np.round(xn)))
            pole = (xn == np.floor(xn)) & (xn != 0)
            val[pole] = np.nan  # a negative integer: PyTorch gives NaN
            zero = xn == 0
            val[zero] = np.where(np.signbit(xn[zero]), np.inf, -np.inf)
        else:  # psi1(x) = pi^2 / sin^2(pi x) - psi1(1 - x)
            val = np.pi * np.pi / (sp * sp) - r
            val[xn == np.floor(xn)] = np.inf
        out[neg] = val
        out[x == np.inf] = np.inf if order == 0 else 0.0
        out[(x == -np.inf) | np.isnan(x)] = np.nan
    return out


def digamma(x: Array) -> Array:
    """The digamma function psi(x) = d/dx log Gamma(x)."""
    return _in_f64(lambda v: _polygamma64(v, 0), x)


def trigamma(x: Array) -> Array:
    """The trigamma function psi'(x) (polygamma of order 1)."""
    return _in_f64(lambda v: _polygamma64(v, 1), x)


# polygamma of order n >= 2: (-1)^(n+1) n! zeta(n + 1, x), with the Hurwitz zeta function summed
# directly until x + k >= 10 + n, then the Euler-Maclaurin tail (DLMF 25.11.6) with 12 Bernoulli
# terms, whose last is below 1e-17 relative there; the sum runs through negative x as well, and x
# at a pole (0, -1, -2, ...) gives the sign of the limit from the right times inf, as PyTorch's
_B2K = (1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6, -3617 / 510, 43867 / 798,
        -174611 / 330, 854513 / 138, -236364091 / 2730)


def _hurwitz_zeta(s: int, q: np.ndarray) -> np.ndarray:
    """zeta(s, q) = sum over k >= 0 of (q + k)^-s, for an integer s >= 2."""
    q = np.asarray(q, np.float64)
    acc = np.zeros_like(q)
    lo = 10.0 + s
    while True:
        small = q < lo
        if not small.any():
            break
        acc = acc + np.where(small, q ** -float(s), 0.0)
        q = np.where(small, q + 1.0, q)
    tail = q ** (1.0 - s) / (s - 1) + 0.5 * q ** -float(s)
    rising = float(s)  # s (s + 1) ... (s + 2j - 2), over (2j)!
    term = q ** -float(s + 1)
    fact = 2.0
    inv2 = 1.0 / (q * q)
    for j, b in enumerate(_B2K, 1):
        tail = tail + b / fact * rising * term
        rising *= (s + 2 * j - 1) * (s + 2 * j)
        fact *= (2 * j + 1) * (2 * j + 2)
        term = term * inv2
    return acc + tail


def _polygamma_n64(x: np.ndarray, n: int) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        x = np.asarray(x, np.float64)
        fin = np.isfinite(x)
        out = np.full_like(x, np.nan)
        pole = fin & (x <= 0) & (x == np.floor(x))
        ok = fin & ~pole
        out[ok] = (-1.0) ** (n + 1) * math.factorial(n) * _hurwitz_zeta(n + 1, x[ok])
        out[pole] = (-1.0) ** (n + 1) * np.inf  # (and NaN at +-inf, as PyTorch's)
    return out


def polygamma(n: int, x: Array) -> Array:
    """The n-th derivative of digamma (n = 0 is digamma itself)."""
    if n == 0:
        return digamma(x)
    if n == 1:
        return trigamma(x)
    return _in_f64(lambda v: _polygamma_n64(v, n), x)


# ---- linear algebra (compat): NumPy's LAPACK wrappers, batched over leading dims ----------------
LinAlgError = np.linalg.LinAlgError
inv = np.linalg.inv
det = np.linalg.det
slogdet = np.linalg.slogdet
solve = np.linalg.solve
cholesky = np.linalg.cholesky
matrix_rank = np.linalg.matrix_rank
# (typed Any: NumPy's overloads want literal mode strings, which the callers check themselves)
svd: Any = np.linalg.svd
qr: Any = np.linalg.qr
eigh: Any = np.linalg.eigh


def cofactor(a: Array) -> Array:
    """The cofactor matrix det(A) A^-T of each matrix in ``a`` (..., n, n), also where A is
    singular: from A = U S V^T, cof(A) = det(U) det(V) U diag(prod_{j != i} s_j) V^T."""
    u, s, vh = np.linalg.svd(a)
    n = s.shape[-1]
    ones = np.ones(s.shape[:-1] + (1,), s.dtype)
    before = np.cumprod(np.concatenate([ones, s[..., :-1]], -1), -1)  # prod of s_j, j < i
    after = np.cumprod(np.concatenate([ones, s[..., :0:-1]], -1), -1)[..., ::-1]  # j > i
    sign = np.linalg.det(u) * np.linalg.det(vh)
    return (u * (before * after)[..., None, :]) @ vh * sign[..., None, None] if n else u


# ---- more ops (compat 2) --------------------------------------------------------------------------
left_shift, right_shift, gcd, lcm, nextafter = (
    _binary_op(f) for f in (np.left_shift, np.right_shift, np.gcd, np.lcm, np.nextafter))
frexp = np.frexp
ldexp = np.ldexp


# ---- triangular solve and LU (linalg extras): NumPy has neither ------------------------------------

def solve_triangular(a: Array, b: Array) -> Array:
    """X with T X = b for (batches of) triangular T already masked by the caller. np.linalg.solve
    is exact on a triangle; a singular T falls back to substitution, giving inf/nan as BLAS trsm does."""
    try:
        return np.linalg.solve(a, b)
    except np.linalg.LinAlgError:
        pass
    lower = bool(np.all(np.triu(a, 1) == 0))
    x = np.array(np.broadcast_to(b, np.broadcast_shapes(a.shape[:-2], b.shape[:-2]) + b.shape[-2:]), a.dtype)
    n = a.shape[-1]
    with np.errstate(divide="ignore", invalid="ignore"):
        for i in range(n) if lower else range(n - 1, -1, -1):  # one row at a time, vectorised over batch
            rest = slice(0, i) if lower else slice(i + 1, n)
            acc = np.einsum("...k,...kj->...j", a[..., i, rest], x[..., rest, :])
            x[..., i, :] = (x[..., i, :] - acc) / a[..., i, i, None]
    return x


def lu_factor(a: Array) -> tuple[Array, Array, Array]:
    """(LU, pivots, info) of LAPACK's getrf with partial pivoting, batched: pivots are int32 and 1-based,
    info is the 1-based index of the first zero pivot (0 if none). A loop over columns; fine for small n."""
    lu = np.array(a, copy=True)
    m, n = a.shape[-2:]
    k = min(m, n)
    batch = a.shape[:-2]
    flat = lu.reshape(-1, m, n)
    piv = np.zeros((flat.shape[0], k), np.int32)
    info = np.zeros(flat.shape[0], np.int32)
    rows = np.arange(flat.shape[0])
    for j in range(k):
        p = j + np.argmax(np.abs(flat[:, j:, j]), axis=-1)
        piv[:, j] = p + 1
        top = flat[rows, j].copy()
        flat[rows, j] = flat[rows, p]
        flat[rows, p] = top
        d = flat[:, j, j]
        zero = d == 0
        info[zero & (info == 0)] = j + 1
        # (where the pivot is 0, LAPACK skips the scaling and goes on with the next column)
        scale = np.where(zero, 1.0, d).astype(a.dtype)
        flat[:, j + 1:, j] = np.where(zero[:, None], flat[:, j + 1:, j], flat[:, j + 1:, j] / scale[:, None])
        flat[:, j + 1:, j + 1:] -= flat[:, j + 1:, j, None] * flat[:, j, None, j + 1:]
    return flat.reshape(a.shape), piv.reshape(batch + (k,)), info.reshape(batch)


def lu_permutation(piv: Array, m: int) -> Array:
    """P (..., m, m) with A = P L U from 1-based LAPACK pivots (..., k)."""
    batch = piv.shape[:-1]
    flat = piv.reshape(-1, piv.shape[-1]).astype(np.int64) - 1
    perm = np.broadcast_to(np.arange(m), (flat.shape[0], m)).copy()
    rows = np.arange(flat.shape[0])
    for i in range(flat.shape[1]):
        top = perm[rows, i].copy()
        perm[rows, i] = perm[rows, flat[:, i]]
        perm[rows, flat[:, i]] = top
    P = np.zeros((flat.shape[0], m, m))
    P[rows[:, None], perm, np.arange(m)] = 1.0  # row i of L U is row perm[i] of A
    return P.reshape(batch + (m, m))
