"""Reductions and products: sum and reduce (short sums by BLAS matrix-vector products), softmax and
its exponential sums, row and axis dot products, and matmul, bmm and matmul_into."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..dtypes import LOW_PRECISION as _LOW
from ..memory import _current
from . import native
from .elementwise import _plain, add, copy, empty, exp, log, maximum, multiply, subtract
from .graph import on_graph
from .shapes import Array, broadcast_shape
from .threads import _big, _threads, _ufunc_into, parallel


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
    if not isinstance(x, np.ndarray):
        if not _plain(x):
            return on_graph("reduce", f, x, axes, keepdims, dtype)  # (a Tensor: create_graph)
    elif f is np.add:
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


def sum(x: Array, axis: Any = None, keepdims: bool = False) -> Array:  # noqa: A001
    """Arena-aware ``np.sum`` (also used by backward formulas, so it accepts Tensors)."""
    if not isinstance(x, np.ndarray):
        return np.sum(x, axis=axis, keepdims=keepdims) if _plain(x) else on_graph("sum", x, axis, keepdims)
    if isinstance(axis, int):
        axis = (axis % x.ndim,)
    if x.dtype is _LOW[0]:  # bfloat16: accumulated in float32 and rounded once, as PyTorch (a gradient unbroadcast)
        return reduce(np.add, x.astype(np.float32), axis, keepdims).astype(x.dtype)
    return reduce(np.add, x, axis, keepdims)


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


def _native_rows(x: Any, axis: int) -> Any:
    """The native kernels if they take a (log-)softmax of ``x`` along ``axis``: its last axis, of a
    float32 C-contiguous array that is not empty; else None."""
    k = native.kernels
    if k is None or type(x) is not np.ndarray or x.dtype != np.float32 or not x.ndim or axis % x.ndim != x.ndim - 1 \
            or x.size < max(native.MIN_SIZE, 1) or not x.flags.c_contiguous:
        return None
    return k


def softmax(x: Array, axis: int) -> Array:
    """exp(x - max) / sum(exp(x - max)) along ``axis``, in one fresh array: the exponentials times
    1 / sum, as PyTorch's kernel computes it (a multiply per entry, 20% faster than a divide)."""
    k = _native_rows(x, axis)
    if k is not None:  # over the last axis: one pass per row in cache (unless rows this short run faster here)
        out = empty(x.shape, x.dtype)
        if k.softmax(x, out, x.shape[-1], False):
            return out
    e, s, _ = exp_sums(x, axis)
    return _ufunc_into(np.multiply, (e, _ufunc_into(np.true_divide, (1, s), s)), e)  # (s is fresh)


def log_softmax(x: Array, axis: int) -> Array:
    """x - max - log(sum(exp(x - max))) along ``axis`` (not empty), in one fresh array."""
    k = _native_rows(x, axis)
    if k is not None:
        out = empty(x.shape, x.dtype)
        if k.softmax(x, out, x.shape[-1], True):
            return out
    sh = subtract(x, reduce(maximum, x, (axis,), True))
    return _ufunc_into(np.subtract, (sh, log(reduce(add, exp(sh), (axis,), True))), sh)


def softmax_backward(g: Array, y: Array, axis: int, log_form: bool) -> Array:
    """The input gradient of softmax (y (g - sum(g y))) or of log-softmax (g - exp(y) sum(g)) along
    ``axis``, from the output ``y`` and an array ``g`` of y's shape, in a fresh array."""
    k = _native_rows(y, axis)
    if k is not None and type(g) is np.ndarray and g.dtype == y.dtype and g.shape == y.shape and g.flags.c_contiguous:
        gx = empty(y.shape, y.dtype)
        k.softmax_backward(g, y, gx, y.shape[-1], log_form)
        return gx
    if log_form:
        return subtract(g, multiply(exp(y), sum(g, axis=axis, keepdims=True)))
    # y (g - sum(g y)): the sums by one dot-product pass (no g y temporary), then one fresh array
    # updated in place (0.44 -> 0.32 ms on (16, 4, 64, 64) attention scores)
    out = subtract(g, dot_along(g, y, axis))
    return _ufunc_into(np.multiply, (out, y), out)


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


def matmul(x: Array, y: Array) -> Array:
    a = _current.get()
    if a is None or not (isinstance(x, np.ndarray) and isinstance(y, np.ndarray)):
        if type(x) is np.ndarray and type(y) is np.ndarray or _plain(x) and _plain(y):
            return np.matmul(x, y)
        return on_graph("matmul", x, y)  # (a Tensor: create_graph)
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


def einsum(spec: str, *operands: Array, **kw: Any) -> Array:
    """``np.einsum(spec, *operands)``."""
    for o in operands:
        if not _plain(o):
            return on_graph("einsum", spec, *operands, **kw)  # (a Tensor: create_graph)
    return np.einsum(spec, *operands, **kw)


def matmul_into(x: Array, y: Array, out: Array) -> Array:
    """``x @ y`` written into ``out`` (a C-contiguous block of a larger result): one BLAS call
    per block lets a caller compute a product block by block while each block is in cache."""
    return np.matmul(x, y, out=out)
