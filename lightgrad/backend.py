"""The array backend: the only module that computes with arrays (NumPy today).

Every function here takes and returns raw arrays. When an arena is active (``lightgrad.memory``),
outputs are written into storage carved from it with NumPy's ``out=``; otherwise NumPy allocates
from the heap as usual. Op code never chooses, so an arena takes over without touching it.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .memory import _current

ndarray = np.ndarray
Array = Any

# Functions that never allocate (views, metadata) or are cold paths: used as they are.
asarray = np.asarray
array = np.array
broadcast_to = np.broadcast_to
transpose = np.transpose
reshape = np.reshape
expand_dims = np.expand_dims
flip = np.flip
take_along_axis = np.take_along_axis
put_along_axis = np.put_along_axis
add_at = np.add.at
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


# ---- elementwise -------------------------------------------------------------------------------

def where(c: Array, x: Array, y: Array) -> Array:
    a = _current.get()
    if a is None or not (_arr(x) and _arr(y)):
        return np.where(c, x, y)
    shape = broadcast_shape(broadcast_shape(_shape(c), _shape(x)), _shape(y))
    dt = x.dtype if isinstance(x, np.ndarray) else y.dtype
    out = a.empty(shape, dt)
    np.copyto(out, y)
    np.copyto(out, x, where=c)
    return out


def cast(x: Array, dtype: Any) -> Array:
    """A copy of x converted to ``dtype``."""
    a = _current.get()
    if a is None:
        return x.astype(dtype)
    out = a.empty(x.shape, dtype)
    np.copyto(out, x, casting="unsafe")
    return out


def copy(x: Array) -> Array:
    """A contiguous copy of x."""
    a = _current.get()
    if a is None:
        return np.array(x, copy=True, order="C")
    out = a.empty(x.shape, x.dtype)
    np.copyto(out, x)
    return out


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


def _unary_op(f: np.ufunc) -> Any:
    def op(x: Array) -> Array:
        a = _current.get()
        if a is None or not isinstance(x, np.ndarray):
            return f(x)
        return f(x, out=a.empty(x.shape, x.dtype))
    op.__name__ = f.__name__
    return op


def _binary_op(f: np.ufunc, out_dtype: Any = None) -> Any:
    def op(x: Array, y: Array) -> Array:
        a = _current.get()
        if a is None or not (_arr(x) and _arr(y)):
            return f(x, y)
        dt = out_dtype or np.result_type(x, y)
        return f(x, y, out=a.empty(broadcast_shape(_shape(x), _shape(y)), dt))
    op.__name__ = f.__name__
    op.ufunc = f  # type: ignore[attr-defined]
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
    a = _current.get()
    if a is None:
        return np.multiply(g, keep, dtype=g.dtype)
    return np.multiply(g, keep, dtype=g.dtype, out=a.empty(broadcast_shape(g.shape, _shape(keep)), g.dtype))


def expand(x: Array, shape: tuple[int, ...]) -> Array:
    """A read-only broadcast view of x as ``shape`` (np.broadcast_to's Python wrapper costs ~5 us;
    this builds the strided view directly). x's shape is ``shape`` with some sizes 1, or ()."""
    if not isinstance(x, np.ndarray):
        return np.broadcast_to(x, shape)
    if x.shape == shape:
        return x
    lead = len(shape) - x.ndim
    if lead < 0 or not x.flags.c_contiguous and x.size != 1:
        return np.broadcast_to(x, shape)
    strides = [0] * lead + [0 if n == 1 else s for n, s in zip(x.shape, x.strides)]
    v = np.ndarray(shape, x.dtype, x, 0, strides)
    v.flags.writeable = False
    return v


def add_into(x: Array, y: Array, out: Array) -> None:
    """``out = x + y`` into given storage."""
    np.add(x, y, out=out)


def iadd(x: Array, y: Array) -> None:
    """``x += y`` in place (x's storage is kept)."""
    np.add(x, y, out=x)


def sum(x: Array, axis: Any = None, keepdims: bool = False) -> Array:  # noqa: A001
    """Arena-aware ``np.sum`` (also used by backward formulas, so it accepts Tensors)."""
    if not isinstance(x, np.ndarray):
        return np.sum(x, axis=axis, keepdims=keepdims)
    if isinstance(axis, int):
        axis = (axis % x.ndim,)
    return reduce(np.add, x, axis, keepdims)


_erf64 = np.frompyfunc(math.erf, 1, 1)


def erf(x: Array) -> Array:
    """Gauss error function. float64 is exact (math.erf per element, slow); other dtypes use
    Abramowitz-Stegun 7.1.26 computed in x's dtype (absolute error < 1.5e-7, float32's scale),
    several times faster than working in float64."""
    if x.dtype == np.float64:
        return np.asarray(_erf64(x), np.float64)
    a = np.abs(x)
    t = np.multiply(a, 0.3275911)
    t += 1
    np.reciprocal(t, out=t)
    poly = np.multiply(t, 1.061405429)
    for c in (-1.453152027, 1.421413741, -0.284496736, 0.254829592):
        poly += c
        poly *= t
    np.multiply(a, a, out=a)
    np.negative(a, out=a)
    np.exp(a, out=a)
    poly *= a
    np.subtract(1, poly, out=poly)
    r = np.copysign(poly, x, out=poly)
    ar = _current.get()
    if ar is None:
        return r
    out = ar.empty(x.shape, x.dtype)
    np.copyto(out, r)
    return out


# ---- reductions and products -------------------------------------------------------------------

def _reduced(shape: tuple[int, ...], axes: tuple[int, ...], keepdims: bool) -> tuple[int, ...]:
    if keepdims:
        return tuple(1 if i in axes else s for i, s in enumerate(shape))
    return tuple(s for i, s in enumerate(shape) if i not in axes)


def reduce(f: np.ufunc, x: Array, axes: tuple[int, ...] | None, keepdims: bool = False,
           dtype: Any = None) -> Array:
    """``f.reduce`` over ``axes`` (None: all); ``f`` is a ufunc or a binary op of this module."""
    f = getattr(f, "ufunc", f)
    a = _current.get()
    if a is None:
        return f.reduce(x, axis=axes, keepdims=keepdims, dtype=dtype)
    ax = tuple(range(x.ndim)) if axes is None else axes
    out = a.empty(_reduced(x.shape, ax, keepdims), x.dtype if dtype is None else dtype)
    return f.reduce(x, axis=ax, keepdims=keepdims, dtype=dtype, out=out)


def matmul(x: Array, y: Array) -> Array:
    a = _current.get()
    if a is None or not (isinstance(x, np.ndarray) and isinstance(y, np.ndarray)):
        return np.matmul(x, y)
    shape = broadcast_shape(x.shape[:-2], y.shape[:-2]) + (x.shape[-2], y.shape[-1])
    return np.matmul(x, y, out=a.empty(shape, np.result_type(x, y)))


def take(x: Array, index: Any) -> Array:
    """``x[index]`` for an advanced (copying) index."""
    return x[index]
