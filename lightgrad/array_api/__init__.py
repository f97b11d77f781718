"""The Python array API standard's namespace for lightgrad tensors (``x.__array_namespace__()``).

>>> import lightgrad
>>> x = lightgrad.tensor([[1.0, 2.0], [3.0, 4.0]])
>>> xp = x.__array_namespace__()
>>> xp.permute_dims(xp.concat([x, x], axis=0), (1, 0)).shape
lightgrad.Size([2, 4])

Each function is the standard's name and signature (``axis``, ``keepdims``, ``correction``) over
lightgrad's PyTorch-named one; gradients flow through them as through those. What the namespace
lacks (it is a subset of the 2023.12 standard): ``unique_all`` (indices of first occurrences),
the ``fft`` extension, and copy=False guarantees (``asarray(copy=False)`` copies when it must
convert instead of raising).
"""

from __future__ import annotations

import builtins
import math
import sys
from typing import Any

from .. import dtypes as D
from .. import _functions as _fn
from .._functions import broadcast_tensors
from .._ops.shape import meshgrid
from ..dtypes import bool_ as bool  # noqa: A004
from ..dtypes import can_cast, complex64, complex128, finfo, float32, float64, iinfo, int8, int16, int32, int64, uint8
from ..dtypes import uint16, uint32, uint64
from ..tensor import Tensor, as_tensor, cat, empty, empty_like, eye, from_dlpack, full, full_like, linspace
from ..tensor import ones, ones_like, where, zeros, zeros_like
from ..tensor import searchsorted as _searchsorted
from ..tensor import stack as _stack
from ..tensor import arange as _arange
from ..tensor import ARRAY_NAMESPACE as _BINDING
from . import linalg
from .linalg import matmul, matrix_transpose, tensordot, vecdot

__array_api_version__ = "2023.12"
_VERSIONS = ("2021.12", "2022.12", "2023.12")

e = math.e
inf = math.inf
nan = math.nan
pi = math.pi
newaxis = None

_KINDS = {"bool": (bool,), "signed integer": (int8, int16, int32, int64),
          "unsigned integer": (uint8, uint16, uint32, uint64), "real floating": (float32, float64, D.float16, D.bfloat16),
          "complex floating": (complex64, complex128)}
_KINDS["integral"] = _KINDS["signed integer"] + _KINDS["unsigned integer"]
_KINDS["numeric"] = _KINDS["integral"] + _KINDS["real floating"] + _KINDS["complex floating"]


# lightgrad's functions whose standard name is PyTorch's, and those the standard renames; _functions
# makes them from Tensor's methods at import, so they are taken from it by name
_SAME = ("abs", "acos", "acosh", "asin", "asinh", "atan", "atan2", "atanh", "bitwise_and",
         "bitwise_left_shift", "bitwise_or", "bitwise_right_shift", "bitwise_xor", "ceil", "conj", "copysign",
         "cos", "cosh", "exp", "expm1", "floor", "hypot", "imag", "isfinite", "isinf", "isnan", "log", "log1p",
         "log2", "log10", "logaddexp", "logical_and", "logical_not", "logical_or", "logical_xor", "maximum",
         "minimum", "real", "remainder", "sign", "signbit", "sin", "sinh", "sqrt", "square", "tan", "tanh",
         "trunc", "add", "floor_divide", "pow", "broadcast_to", "tril", "triu")
_RENAMED = {"bitwise_invert": "bitwise_not", "divide": "div", "equal": "eq", "greater": "gt",
            "greater_equal": "ge", "less": "lt", "less_equal": "le", "multiply": "mul",
            "negative": "neg", "not_equal": "ne", "subtract": "sub"}
globals().update({n: getattr(_fn, n) for n in _SAME})
globals().update({n: getattr(_fn, t) for n, t in _RENAMED.items()})


def _namespace(api_version: str | None) -> Any:
    if api_version is not None and api_version not in _VERSIONS:
        raise ValueError(f"Unrecognized array API version: {api_version!r}; lightgrad implements "
                         f"{', '.join(_VERSIONS)}")
    return _MODULE


# ---- creation and data types ----------------------------------------------------------------------

def asarray(obj: Any, /, *, dtype: Any = None, device: Any = None, copy: builtins.bool | None = None) -> Tensor:
    """A tensor of ``obj`` (the same tensor when it is one of that dtype and copy is not True)."""
    if isinstance(obj, Tensor) and (dtype is None or obj.dtype == dtype):
        return obj.clone() if copy else obj
    t = as_tensor(obj, dtype=dtype)
    return t.clone() if copy and t is obj else t


def arange(start: int | float, /, stop: int | float | None = None, step: int | float = 1, *, dtype: Any = None,
           device: Any = None) -> Tensor:
    """Evenly spaced values in [start, stop) (in [0, start) when stop is None)."""
    if stop is None:
        start, stop = 0, start
    return _arange(start, stop, step, dtype=dtype)


def astype(x: Tensor, dtype: Any, /, *, copy: builtins.bool = True, device: Any = None) -> Tensor:
    """x in ``dtype`` (a copy unless copy=False and it already is)."""
    if x.dtype == dtype:
        return x.clone() if copy else x
    return x.to(dtype)


def isdtype(dtype: Any, kind: Any) -> builtins.bool:
    """Whether ``dtype`` is ``kind``: a dtype, a kind name ("real floating", ...) or a tuple of them."""
    if isinstance(kind, tuple):
        return builtins.any(isdtype(dtype, k) for k in kind)
    if isinstance(kind, str):
        if kind not in _KINDS:
            raise ValueError(f"Unrecognized data type kind: {kind!r}")
        return dtype in _KINDS[kind]
    return dtype == kind


def result_type(*arrays_and_dtypes: Any) -> Any:
    """The dtype the standard's promotion gives the arguments."""
    out = None
    for a in arrays_and_dtypes:
        dt = a.dtype if isinstance(a, Tensor) else a
        out = dt if out is None else D.promote_types(out, dt)
    return out


# ---- elementwise names the standard spells differently ---------------------------------------------

def clip(x: Tensor, /, min: Any = None, max: Any = None) -> Tensor:  # noqa: A002
    """x limited to [min, max] (either may be None)."""
    return x if min is None and max is None else x.clamp(min, max)


def positive(x: Tensor, /) -> Tensor:
    """+x."""
    return x.clone()


def round(x: Tensor, /) -> Tensor:  # noqa: A001
    """x rounded half to even."""
    return x.round()




# ---- manipulation ---------------------------------------------------------------------------------

def _axes(axis: Any, ndim: int) -> Any:
    return tuple(range(ndim)) if axis is None else axis


def broadcast_arrays(*arrays: Tensor) -> list[Tensor]:
    """The arrays broadcast to their common shape."""
    return list(broadcast_tensors(*arrays))


def concat(arrays: Any, /, *, axis: int | None = 0) -> Tensor:
    """The arrays joined along ``axis`` (flattened first when axis is None)."""
    arrays = list(arrays)
    if axis is None:
        return cat([a.reshape(-1) for a in arrays])
    return cat(arrays, dim=axis)


def expand_dims(x: Tensor, /, *, axis: int = 0) -> Tensor:
    """x with a new axis of length one at ``axis``."""
    return x.unsqueeze(axis)


def flip(x: Tensor, /, *, axis: Any = None) -> Tensor:
    """x reversed along ``axis`` (every axis when None)."""
    axes = _axes(axis, x.ndim)
    return x.flip(axes if isinstance(axes, tuple | list) else (axes,))


def moveaxis(x: Tensor, source: Any, destination: Any, /) -> Tensor:
    """x with axes ``source`` moved to ``destination``."""
    return x.movedim(source, destination)


def permute_dims(x: Tensor, /, axes: tuple[int, ...]) -> Tensor:
    """x with its axes in the order ``axes``."""
    return x.permute(axes)


def reshape(x: Tensor, /, shape: tuple[int, ...], *, copy: builtins.bool | None = None) -> Tensor:
    """x in ``shape`` (a view where possible)."""
    out = x.reshape(shape)
    return out.clone() if copy else out


def repeat(x: Tensor, repeats: Any, /, *, axis: int | None = None) -> Tensor:
    """Each element repeated ``repeats`` times along ``axis`` (of the flattened x when None)."""
    return x.repeat_interleave(repeats, dim=axis)


def roll(x: Tensor, /, shift: Any, *, axis: Any = None) -> Tensor:
    """x shifted cyclically by ``shift`` along ``axis`` (the flattened x when None)."""
    return x.roll(shift, axis)


def squeeze(x: Tensor, /, axis: Any) -> Tensor:
    """x without the length-one axes ``axis`` (an error for an axis whose length is not one)."""
    axes = axis if isinstance(axis, tuple) else (axis,)
    for a in axes:
        if x.shape[a] != 1:
            raise ValueError(f"cannot squeeze axis {a}: its length is {x.shape[a]}, not 1")
    return x.squeeze(axes)


def stack(arrays: Any, /, *, axis: int = 0) -> Tensor:
    """The arrays (of one shape) joined along a new axis ``axis``."""
    return _stack(list(arrays), dim=axis)


def tile(x: Tensor, repetitions: tuple[int, ...], /) -> Tensor:
    """x repeated ``repetitions`` times along each axis."""
    return x.tile(repetitions)


def unstack(x: Tensor, /, *, axis: int = 0) -> tuple[Tensor, ...]:
    """The slices of x along ``axis``."""
    return tuple(x.unbind(axis))


def take(x: Tensor, indices: Tensor, /, *, axis: int | None = None) -> Tensor:
    """The elements at ``indices`` along ``axis`` (x must be one-dimensional when None)."""
    if axis is None:
        if x.ndim != 1:
            raise ValueError("take: axis must be given for an array of more than one dimension")
        axis = 0
    return x.index_select(axis, indices)


def take_along_axis(x: Tensor, indices: Tensor, /, *, axis: int = -1) -> Tensor:
    """The elements at ``indices``, which has x's number of axes, along ``axis``."""
    return x.take_along_dim(indices, dim=axis)


# ---- searching, sets, sorting ---------------------------------------------------------------------

def argmax(x: Tensor, /, *, axis: int | None = None, keepdims: builtins.bool = False) -> Tensor:
    """The index of the largest element (along ``axis``)."""
    return x.argmax(dim=axis, keepdim=keepdims)


def argmin(x: Tensor, /, *, axis: int | None = None, keepdims: builtins.bool = False) -> Tensor:
    """The index of the smallest element (along ``axis``)."""
    return x.argmin(dim=axis, keepdim=keepdims)


def nonzero(x: Tensor, /) -> tuple[Tensor, ...]:
    """The indices of the non-zero elements, one tensor per axis."""
    return tuple(x.nonzero(as_tuple=True))


def searchsorted(x1: Tensor, x2: Tensor, /, *, side: str = "left", sorter: Tensor | None = None) -> Tensor:
    """Where the elements of x2 would go in the sorted one-dimensional x1."""
    return _searchsorted(x1, x2, side=side, sorter=sorter)


def unique_values(x: Tensor, /) -> Tensor:
    """The distinct elements of x."""
    return x.unique()


def unique_counts(x: Tensor, /) -> tuple[Tensor, Tensor]:
    """The distinct elements and how often each occurs."""
    values, counts = x.unique(return_counts=True)
    return values, counts


def unique_inverse(x: Tensor, /) -> tuple[Tensor, Tensor]:
    """The distinct elements and, per element of x, its index among them (x's shape)."""
    values, inverse = x.unique(return_inverse=True)
    return values, inverse.reshape(x.shape)


def sort(x: Tensor, /, *, axis: int = -1, descending: builtins.bool = False, stable: builtins.bool = True) -> Tensor:
    """x sorted along ``axis``."""
    return x.sort(dim=axis, descending=descending, stable=stable).values


def argsort(x: Tensor, /, *, axis: int = -1, descending: builtins.bool = False,
            stable: builtins.bool = True) -> Tensor:
    """The indices that sort x along ``axis``."""
    return x.sort(dim=axis, descending=descending, stable=stable).indices


# ---- statistics -----------------------------------------------------------------------------------

def _dims(x: Tensor, axis: Any) -> Any:
    return tuple(range(x.ndim)) if axis is None else axis


def max(x: Tensor, /, *, axis: Any = None, keepdims: builtins.bool = False) -> Tensor:  # noqa: A001
    """The largest element (along ``axis``)."""
    return x.amax(dim=_dims(x, axis), keepdim=keepdims)


def min(x: Tensor, /, *, axis: Any = None, keepdims: builtins.bool = False) -> Tensor:  # noqa: A001
    """The smallest element (along ``axis``)."""
    return x.amin(dim=_dims(x, axis), keepdim=keepdims)


def sum(x: Tensor, /, *, axis: Any = None, dtype: Any = None, keepdims: builtins.bool = False) -> Tensor:  # noqa: A001
    """The sum (along ``axis``)."""
    return x.sum(dim=_dims(x, axis), keepdim=keepdims, dtype=dtype)


def prod(x: Tensor, /, *, axis: Any = None, dtype: Any = None, keepdims: builtins.bool = False) -> Tensor:
    """The product (along ``axis``)."""
    if dtype is not None:
        x = x.to(dtype)
    axes = sorted({a % x.ndim for a in _axes_tuple(x, axis)}) if x.ndim else []
    for a in reversed(axes):  # (one axis at a time, as PyTorch's prod takes one)
        x = x.prod(dim=a, keepdim=keepdims)
    return x


def _axes_tuple(x: Tensor, axis: Any) -> tuple[int, ...]:
    axes = _dims(x, axis)
    return tuple(axes) if isinstance(axes, tuple | list) else (axes,)


def mean(x: Tensor, /, *, axis: Any = None, keepdims: builtins.bool = False) -> Tensor:
    """The mean (along ``axis``)."""
    return x.mean(dim=_dims(x, axis), keepdim=keepdims)


def std(x: Tensor, /, *, axis: Any = None, correction: int | float = 0.0, keepdims: builtins.bool = False) -> Tensor:
    """The standard deviation (along ``axis``), dividing by N - correction."""
    return x.std(dim=_dims(x, axis), correction=correction, keepdim=keepdims)


def var(x: Tensor, /, *, axis: Any = None, correction: int | float = 0.0, keepdims: builtins.bool = False) -> Tensor:
    """The variance (along ``axis``), dividing by N - correction."""
    return x.var(dim=_dims(x, axis), correction=correction, keepdim=keepdims)


def cumulative_sum(x: Tensor, /, *, axis: int | None = None, dtype: Any = None,
                   include_initial: builtins.bool = False) -> Tensor:
    """Running sums along ``axis`` (which may be None only for one-dimensional x)."""
    if axis is None:
        if x.ndim != 1:
            raise ValueError("cumulative_sum: axis must be given for an array of more than one dimension")
        axis = 0
    out = x.cumsum(dim=axis, dtype=dtype)
    if include_initial:
        shape = list(out.shape)
        shape[axis] = 1
        out = cat([zeros(shape, dtype=out.dtype), out], dim=axis)
    return out


def all(x: Tensor, /, *, axis: Any = None, keepdims: builtins.bool = False) -> Tensor:  # noqa: A001
    """Whether every element (along ``axis``) is true."""
    return (x != 0).sum(dim=_dims(x, axis), keepdim=keepdims) == _count(x, axis)


def any(x: Tensor, /, *, axis: Any = None, keepdims: builtins.bool = False) -> Tensor:  # noqa: A001
    """Whether some element (along ``axis``) is true."""
    return (x != 0).sum(dim=_dims(x, axis), keepdim=keepdims) > 0


def _count(x: Tensor, axis: Any) -> int:
    n = 1
    for a in _axes_tuple(x, axis):
        n *= x.shape[a]
    return n


# ---- inspection -----------------------------------------------------------------------------------

class _Info:
    """What ``__array_namespace_info__()`` reports: capabilities, devices and dtypes."""

    def capabilities(self) -> dict[str, Any]:
        return {"boolean indexing": True, "data-dependent shapes": True, "max dimensions": 64}

    def default_device(self) -> Any:
        return _CPU

    def devices(self) -> list[Any]:
        return [_CPU]

    def default_dtypes(self, *, device: Any = None) -> dict[str, Any]:
        return {"real floating": D.get_default_dtype(), "complex floating": complex64 if D.get_default_dtype()
                == float32 else complex128, "integral": int64, "indexing": int64}

    def dtypes(self, *, device: Any = None, kind: Any = None) -> dict[str, Any]:
        names = {"bool": bool, "int8": int8, "int16": int16, "int32": int32, "int64": int64, "uint8": uint8,
                 "uint16": uint16, "uint32": uint32, "uint64": uint64, "float32": float32, "float64": float64,
                 "complex64": complex64, "complex128": complex128}
        return {n: d for n, d in names.items() if kind is None or isdtype(d, kind)}


def __array_namespace_info__() -> _Info:
    """The namespace's inspection object (devices, dtypes, capabilities)."""
    return _Info()


_CPU = empty(0).device
_MODULE = sys.modules[__name__]
_BINDING[0] = _namespace  # Tensor.__array_namespace__ answers with this module from now on

__all__ = [n for n in dir() if not n.startswith("_") and n not in ("annotations", "builtins", "math", "sys", "D",
                                                                    "Any", "Tensor")]
