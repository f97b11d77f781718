"""dtypes and PyTorch's type-promotion rules."""

from __future__ import annotations

from typing import Any

import numpy as np


class dtype:
    """A tensor element type, e.g. ``lightgrad.float32``."""

    __slots__ = ("name", "np", "is_floating_point", "is_signed", "itemsize", "_cat")

    def __init__(self, name: str, npdtype: Any, cat: int) -> None:
        self.name = name
        self.np = np.dtype(npdtype)
        self._cat = cat  # 0 bool, 1 integer, 2 floating: the promotion category
        self.is_floating_point = cat == 2
        self.is_signed = self.np.kind in "fi"
        self.itemsize = self.np.itemsize

    @property
    def is_complex(self) -> bool:
        return False

    def __repr__(self) -> str:
        return f"lightgrad.{self.name}"

    def __reduce__(self) -> str:
        return self.name


bool_ = dtype("bool", np.bool_, 0)
uint8 = dtype("uint8", np.uint8, 1)
int8 = dtype("int8", np.int8, 1)
int16 = dtype("int16", np.int16, 1)
int32 = dtype("int32", np.int32, 1)
int64 = dtype("int64", np.int64, 1)
float16 = dtype("float16", np.float16, 2)
float32 = dtype("float32", np.float32, 2)
float64 = dtype("float64", np.float64, 2)

ALL = (bool_, uint8, int8, int16, int32, int64, float16, float32, float64)
_BY_NP = {d.np: d for d in ALL}
_BY_NAME: dict[str, dtype] = {d.name: d for d in ALL}
_BY_NAME.update(
    float=float32, double=float64, half=float16, long=int64, int=int32, short=int16,
    bool_=bool_,
)

# how PyTorch's messages name a dtype: by its ScalarType ("Float"), or by its C++ type ("float")
SCALAR_NAMES = {"float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16", "int64": "Long",
                "int32": "Int", "bool": "Bool", "int16": "Short", "int8": "Char", "uint8": "Byte"}
CPP_NAMES = {"float32": "float", "float64": "double", "float16": "c10::Half", "bfloat16": "c10::BFloat16",
             "int64": "long int", "int32": "int", "int16": "short int", "int8": "signed char",
             "uint8": "unsigned char", "bool": "bool"}

_default_float = float32


def get_default_dtype() -> dtype:
    """The dtype of tensors made from Python floats: ``lightgrad.get_default_dtype()``."""
    return _default_float


def set_default_dtype(d: dtype) -> None:
    """Set the float dtype used for Python floats: ``set_default_dtype(lightgrad.float64)``."""
    global _default_float
    d = to_dtype(d)
    if not d.is_floating_point:
        raise TypeError(f"only floating-point types are supported as the default type, got {d}")
    _default_float = d


def to_dtype(d: Any) -> dtype:
    """Map a lightgrad dtype, NumPy dtype, string or Python type to a lightgrad dtype."""
    if isinstance(d, dtype):
        return d
    if d is float:
        return _default_float
    if d is int:
        return int64
    if d is bool:
        return bool_
    if isinstance(d, str) and d in _BY_NAME:
        return _BY_NAME[d]
    try:
        return _BY_NP[np.dtype(d)]
    except (TypeError, KeyError):
        raise TypeError(f"expected a lightgrad dtype ({', '.join(x.name for x in ALL)}), got {d!r}") from None


class finfo:
    """Limits of a float dtype, as ``torch.finfo``: ``finfo(lightgrad.float32).eps`` (the default dtype's
    when no dtype is given)."""

    __slots__ = ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution", "dtype")

    def __init__(self, type: Any = None) -> None:  # noqa: A002 (PyTorch's name)
        d = _default_float if type is None else to_dtype(type)
        if not d.is_floating_point:
            raise TypeError("torch.finfo() requires a floating point input type. Use torch.iinfo to handle 'torch.finfo'")
        i = np.finfo(d.np)
        self.bits, self.dtype = i.bits, d.name
        self.eps, self.max, self.min = float(i.eps), float(i.max), float(i.min)
        self.tiny = self.smallest_normal = float(i.smallest_normal)
        self.resolution = 10.0 ** -i.precision  # (exactly, as PyTorch gives it; NumPy rounds it to the dtype)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, finfo) and other.dtype == self.dtype

    def __hash__(self) -> int:
        return hash(("finfo", self.dtype))

    def __repr__(self) -> str:
        return (f"finfo(resolution={self.resolution:g}, min={self.min:g}, max={self.max:g}, eps={self.eps:g}, "
                f"smallest_normal={self.smallest_normal:g}, tiny={self.tiny:g}, dtype={self.dtype})")


class iinfo:
    """Limits of an integer dtype, as ``torch.iinfo``: ``iinfo(lightgrad.int32).max``."""

    __slots__ = ("bits", "max", "min", "dtype")

    def __init__(self, type: Any) -> None:  # noqa: A002 (PyTorch's name)
        d = to_dtype(type)
        if d is bool_:
            raise TypeError("torch.bool is not supported by torch.iinfo")
        if d.is_floating_point:
            raise TypeError("torch.iinfo() requires an integer input type. Use torch.finfo to handle 'torch.iinfo'")
        i = np.iinfo(d.np)
        self.bits, self.max, self.min, self.dtype = i.bits, int(i.max), int(i.min), d.name

    def __eq__(self, other: object) -> bool:
        return isinstance(other, iinfo) and other.dtype == self.dtype

    def __hash__(self) -> int:
        return hash(("iinfo", self.dtype))

    def __repr__(self) -> str:
        return f"iinfo(min={self.min:g}, max={self.max:g}, dtype={self.dtype})"


def from_numpy_dtype(npd: np.dtype) -> dtype:
    """The lightgrad dtype of a NumPy array's dtype (raises for unsupported kinds)."""
    try:
        return _BY_NP[npd]
    except KeyError:
        raise TypeError(f"can't convert NumPy array of dtype {npd}; supported: "
                        f"{', '.join(x.name for x in ALL)}") from None


def promote_types(a: dtype, b: dtype) -> dtype:
    """PyTorch's promote_types: ``promote_types(int32, float16)`` is float16 (NumPy says float64)."""
    if a is b:
        return a
    if a._cat != b._cat and max(a._cat, b._cat) == 2:
        return a if a._cat == 2 else b  # an integer never widens a float in PyTorch
    return _BY_NP[np.promote_types(a.np, b.np)]


def scalar_dtype(x: Any) -> dtype:
    """The dtype a Python scalar takes when wrapped: bool, int64 or the default float."""
    if isinstance(x, bool | np.bool_):
        return bool_
    if isinstance(x, int | np.integer):
        return int64
    return _default_float


def _combine(higher: dtype | None, lower: dtype | None) -> dtype | None:
    # c10's combine_categories: a lower-priority group only matters when it is of a higher
    # category (bool < int < float) than the result so far.
    if higher is None:
        return lower
    if lower is None or higher._cat == 2:
        return higher
    if higher is bool_ or lower._cat == 2:
        return promote_types(higher, lower)
    return higher


def result_type(*args: Any) -> dtype:
    """Result dtype of an op on tensors and scalars, following PyTorch's three priority groups:
    dimensioned tensors, zero-dim tensors, then Python numbers."""
    dim = zero = wrapped = None
    for a in args:
        d = getattr(a, "dtype", None)
        if isinstance(d, dtype):
            if a.ndim:
                dim = d if dim is None else promote_types(dim, d)
            else:
                zero = d if zero is None else promote_types(zero, d)
        else:
            s = scalar_dtype(a)
            wrapped = s if wrapped is None else promote_types(wrapped, s)
    out = _combine(dim, _combine(zero, wrapped))
    assert out is not None  # internal: called with at least one argument
    return out
