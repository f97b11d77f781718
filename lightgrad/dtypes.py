"""dtypes and PyTorch's type-promotion rules.

``bfloat16`` comes from the ml_dtypes package (the one JAX uses), imported on first use rather than
with lightgrad: the dtype object exists always, so dtype tables in scripts work, and only code that
makes a bfloat16 array pays for the import (or gets told to ``pip install ml_dtypes``)."""

from __future__ import annotations

import importlib
from typing import Any

import numpy as np


class dtype:
    """A tensor element type, e.g. ``lightgrad.float32``."""

    __slots__ = ("name", "np", "is_floating_point", "is_complex", "is_signed", "itemsize", "_cat")
    np: Any  # the NumPy dtype of its arrays

    def __init__(self, name: str, npdtype: Any, cat: int, itemsize: int = 0) -> None:
        self.name = name
        if npdtype is not None:
            _NP_SLOT.__set__(self, np.dtype(npdtype))  # (past a subclass's read-only np)
            itemsize = np.dtype(npdtype).itemsize
        self._cat = cat  # 0 bool, 1 integer, 2 floating, 3 complex: the promotion category
        self.is_floating_point = cat == 2
        self.is_complex = cat == 3
        self.is_signed = cat >= 2 or name.startswith("int")
        self.itemsize = itemsize

    def to_real(self) -> dtype:
        """The real dtype of a complex one (complex64 -> float32); real dtypes are their own."""
        return _REAL.get(self, self)

    def to_complex(self) -> dtype:
        """The complex dtype whose parts are this float dtype (float64 -> complex128)."""
        return _COMPLEX[self]

    def __repr__(self) -> str:
        return f"lightgrad.{self.name}"

    def __reduce__(self) -> str:
        return self.name


_NP_SLOT = dtype.__dict__["np"]  # the slot itself, for the lazily filled bfloat16.np


class _MLDtype(dtype):
    """A dtype whose NumPy type lives in ml_dtypes; ``.np`` imports it on first use."""

    __slots__ = ()

    @property  # type: ignore[override]  # (a read-only view of the slot, filled on first use)
    def np(self) -> Any:
        try:
            return _NP_SLOT.__get__(self)
        except AttributeError:
            return _load_ml_dtypes(self)


class _BareUnsigned(dtype):
    """uint16, uint32, uint64: PyTorch gives them storage, casts and a handful of ops. ``.np``
    opens the primitives' dtype guard (GUARDED) the first time it makes an array of one."""

    __slots__ = ()

    @property  # type: ignore[override]  # (a read-only view of the slot)
    def np(self) -> Any:
        v = _NP_SLOT.__get__(self)
        if GUARDED[0] is None or v not in GUARDED[0]:
            guard(v)
        return v


bool_ = dtype("bool", np.bool_, 0)
uint8 = dtype("uint8", np.uint8, 1)
int8 = dtype("int8", np.int8, 1)
int16 = dtype("int16", np.int16, 1)
int32 = dtype("int32", np.int32, 1)
int64 = dtype("int64", np.int64, 1)
# PyTorch's "barebones" unsigned types: storage, casts and a handful of ops; no promotion with other
# integer types (see promote_types)
uint16 = _BareUnsigned("uint16", np.uint16, 1)
uint32 = _BareUnsigned("uint32", np.uint32, 1)
uint64 = _BareUnsigned("uint64", np.uint64, 1)
float16 = dtype("float16", np.float16, 2)
bfloat16 = _MLDtype("bfloat16", None, 2, itemsize=2)
float32 = dtype("float32", np.float32, 2)
float64 = dtype("float64", np.float64, 2)
complex64 = dtype("complex64", np.complex64, 3)
complex128 = dtype("complex128", np.complex128, 3)

ALL = (bool_, uint8, int8, int16, int32, int64, uint16, uint32, uint64, float16, bfloat16, float32, float64,
       complex64, complex128)
_BARE_UNSIGNED = (uint16, uint32, uint64)
_REAL = {complex64: float32, complex128: float64}
_COMPLEX = {float16: complex64, bfloat16: complex64, float32: complex64, float64: complex128,
            complex64: complex64, complex128: complex128}
_BY_NP = {_NP_SLOT.__get__(d): d for d in ALL if d is not bfloat16}  # (bfloat16's joins when ml_dtypes is loaded)
BARE_UNSIGNED_NP = frozenset(_NP_SLOT.__get__(d) for d in _BARE_UNSIGNED)
_BY_NAME: dict[str, dtype] = {d.name: d for d in ALL}
_BY_NAME.update(
    float=float32, double=float64, half=float16, long=int64, int=int32, short=int16,
    bool_=bool_, cfloat=complex64, cdouble=complex128,
)

# The NumPy dtype of bfloat16 once ml_dtypes is loaded (None before), and the ml_dtypes module.
LOW_PRECISION: list[Any] = [None]
ML_DTYPES: list[Any] = [None]
# The NumPy dtypes the primitives treat specially (bfloat16 computed in float32, the bare unsigned
# types refused by most ops), once an array of one has been made (None before): a process that
# never makes one pays one test per op and no more.
GUARDED: list[frozenset[Any] | None] = [None]


def guard(npd: Any) -> None:
    """Add a NumPy dtype to the ones the primitives check for (GUARDED)."""
    GUARDED[0] = frozenset((GUARDED[0] or frozenset()) | {npd})

# how PyTorch's messages name a dtype: by its ScalarType ("Float"), or by its C++ type ("float")
SCALAR_NAMES = {"float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16", "int64": "Long",
                "int32": "Int", "bool": "Bool", "int16": "Short", "int8": "Char", "uint8": "Byte",
                "uint16": "UInt16", "uint32": "UInt32", "uint64": "UInt64", "complex64": "ComplexFloat",
                "complex128": "ComplexDouble"}
CPP_NAMES = {"float32": "float", "float64": "double", "float16": "c10::Half", "bfloat16": "c10::BFloat16",
             "int64": "long int", "int32": "int", "int16": "short int", "int8": "signed char",
             "uint8": "unsigned char", "bool": "bool", "uint16": "short unsigned int", "uint32": "unsigned int",
             "uint64": "long unsigned int", "complex64": "c10::complex<float>",
             "complex128": "c10::complex<double>"}


def _load_ml_dtypes(d: dtype) -> Any:
    """Import ml_dtypes, fill in bfloat16's NumPy dtype and register it (once)."""
    try:
        ml = importlib.import_module("ml_dtypes")
    except ImportError:
        raise ModuleNotFoundError(f"lightgrad.{d.name} needs the ml_dtypes package (NumPy has no {d.name}): "
                                  "pip install ml_dtypes", name="ml_dtypes") from None
    npd = np.dtype(getattr(ml, d.name))
    _NP_SLOT.__set__(d, npd)
    _BY_NP[npd] = d
    ML_DTYPES[0] = ml
    LOW_PRECISION[0] = npd
    guard(npd)
    return npd


def is_low_precision(npd: Any) -> bool:
    """Whether an array dtype is one NumPy cannot compute in (bfloat16): ops compute in float32."""
    return npd is LOW_PRECISION[0] and npd is not None


def is_floating(npd: Any) -> bool:
    """Whether an array dtype is a floating one (NumPy's kind "f", or bfloat16)."""
    return npd.kind == "f" or npd is LOW_PRECISION[0]


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


def default_complex() -> dtype:
    """The dtype of tensors made from Python complex numbers: complex64, or complex128 when the
    default float dtype is float64 (as PyTorch)."""
    return complex128 if _default_float is float64 else complex64


def to_dtype(d: Any) -> dtype:
    """Map a lightgrad dtype, NumPy dtype, string or Python type to a lightgrad dtype (as PyTorch,
    the Python types ``float`` and ``complex`` are float64 and complex128)."""
    if isinstance(d, dtype):
        return d
    if d is float:
        return float64
    if d is int:
        return int64
    if d is bool:
        return bool_
    if d is complex:
        return complex128
    if isinstance(d, str) and d in _BY_NAME:
        return _BY_NAME[d]
    try:
        return from_numpy_dtype(np.dtype(d))
    except TypeError:
        raise TypeError(f"expected a lightgrad dtype ({', '.join(x.name for x in ALL)}), got {d!r}") from None


# bfloat16's limits, exact (NumPy's finfo knows no bfloat16, and these need no ml_dtypes)
_BF16_INFO = {"bits": 16, "eps": 2.0 ** -7, "max": (2 - 2.0 ** -7) * 2.0 ** 127, "tiny": 2.0 ** -126,
              "resolution": 0.01}


class finfo:
    """Limits of a float dtype, as ``torch.finfo``: ``finfo(lightgrad.float32).eps`` (the default dtype's
    when no dtype is given; a complex dtype's are its real part's)."""

    __slots__ = ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution", "dtype")

    def __init__(self, type: Any = None) -> None:  # noqa: A002 (PyTorch's name)
        d = _default_float if type is None else to_dtype(type)
        if not (d.is_floating_point or d.is_complex):
            raise TypeError("torch.finfo() requires a floating point input type. Use torch.iinfo to handle 'torch.finfo'")
        d = d.to_real()
        self.dtype = d.name
        if d is bfloat16:
            v = _BF16_INFO
            self.bits, self.eps, self.max, self.resolution = v["bits"], v["eps"], v["max"], v["resolution"]
            self.min, self.tiny = -self.max, v["tiny"]
        else:
            i = np.finfo(d.np)
            self.bits, self.eps, self.max, self.min = i.bits, float(i.eps), float(i.max), float(i.min)
            self.tiny = float(i.smallest_normal)
            self.resolution = 10.0 ** -i.precision  # (exactly, as PyTorch gives it; NumPy rounds it to the dtype)
        self.smallest_normal = self.tiny

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
        if d._cat != 1:
            raise TypeError("torch.iinfo() requires an integer input type. Use torch.finfo to handle 'torch.iinfo'")
        i = np.iinfo(d.np)
        self.bits, self.max, self.min, self.dtype = i.bits, int(i.max), int(i.min), d.name

    def __eq__(self, other: object) -> bool:
        return isinstance(other, iinfo) and other.dtype == self.dtype

    def __hash__(self) -> int:
        return hash(("iinfo", self.dtype))

    def __repr__(self) -> str:
        return f"iinfo(min={self.min:g}, max={self.max:g}, dtype={self.dtype})"


# the NumPy dtypes PyTorch converts from, in the order its message lists them (no bfloat16: NumPy has none)
_FROM_NUMPY = "float64, float32, float16, complex64, complex128, int64, int32, int16, int8, uint64, uint32, uint16, uint8, and bool"


def _unsupported(npd: np.dtype) -> TypeError:
    t = npd.type
    return TypeError(f"can't convert np.ndarray of type {t.__module__}.{t.__name__}. The only supported types are: "
                     f"{_FROM_NUMPY}.")


def from_numpy_dtype(npd: np.dtype) -> dtype:
    """The lightgrad dtype of an array's dtype, bfloat16's included (raises for unsupported kinds)."""
    try:
        return _BY_NP[npd]
    except KeyError:
        if npd.type.__name__ == "bfloat16" and npd.type.__module__ == "ml_dtypes" and bfloat16.np == npd:
            return bfloat16  # (an ml_dtypes array met before lightgrad loaded ml_dtypes)
        raise _unsupported(npd) from None


def numpy_dtype(npd: np.dtype) -> dtype:
    """The lightgrad dtype of a NumPy array given to from_numpy or tensor(): PyTorch refuses
    ml_dtypes' bfloat16 there (it is no NumPy type), and so does lightgrad."""
    d = from_numpy_dtype(npd)
    if d is bfloat16:
        raise _unsupported(npd)
    if d in _BARE_UNSIGNED:
        d.np  # noqa: B018 (opens the guard for it)
    return d


def _promote(x: dtype, y: dtype) -> dtype:
    a, b = (y, x) if x._cat < y._cat else (x, y)  # a: the higher category
    if a in _BARE_UNSIGNED or b in _BARE_UNSIGNED:
        if a._cat != 2:  # only a float absorbs them
            raise RuntimeError("Promotion for uint16, uint32, uint64 types is not supported, attempted to promote "
                               f"{SCALAR_NAMES[x.name]} and {SCALAR_NAMES[y.name]}")
        return a
    if a._cat != b._cat:
        if a._cat == 3 and b._cat == 2:  # complex64 + float64: complex128
            return complex128 if complex128 in (a, b) or b is float64 else a
        return a  # an integer never widens a float in PyTorch
    if a is bfloat16 or b is bfloat16:
        o = b if a is bfloat16 else a
        return float32 if o is float16 else o  # (no common 16-bit type: float32)
    return _BY_NP[np.promote_types(a.np, b.np)]


_PROMOTED: dict[tuple[dtype, dtype], dtype] = {}


def promote_types(a: dtype, b: dtype) -> dtype:
    """PyTorch's promote_types: ``promote_types(int32, float16)`` is float16 (NumPy says float64),
    ``promote_types(bfloat16, float16)`` float32."""
    if a is b:
        return a
    try:
        return _PROMOTED[(a, b)]
    except KeyError:
        out = _PROMOTED[(a, b)] = _promote(a, b)
        return out


def can_cast(from_: dtype, to: dtype) -> bool:
    """PyTorch's can_cast: a cast that keeps the category or raises it (bool < integer < float < complex)."""
    if from_._cat == 0:
        return True
    return to._cat >= from_._cat


def scalar_dtype(x: Any) -> dtype:
    """The dtype a Python scalar takes when wrapped: bool, int64, the default float or complex."""
    if isinstance(x, bool | np.bool_):
        return bool_
    if isinstance(x, int | np.integer):
        return int64
    if isinstance(x, complex | np.complexfloating):
        return default_complex()
    return _default_float


def _combine(higher: dtype | None, lower: dtype | None) -> dtype | None:
    # c10's combine_categories: a lower-priority group only matters when it is of a higher
    # category (bool < int < float < complex) than the result so far; a complex one keeps a float's
    # precision (a float64 tensor times 1j is complex128, a uint16 one complex64)
    if higher is None:
        return lower
    if lower is None or lower._cat <= higher._cat:
        if higher is bool_ and lower is not None:
            return promote_types(higher, lower)
        return higher
    if lower._cat == 3:
        return higher.to_complex() if higher._cat == 2 else lower
    return promote_types(higher, lower)


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


def is_inexact(npd: Any) -> bool:
    """Whether an array dtype is floating or complex (the dtypes of the results of exp, sqrt, /)."""
    return npd.kind in "fc" or npd is LOW_PRECISION[0]


def not_implemented(kernel: str, npd: Any) -> NotImplementedError:
    """PyTorch's error for an op without a kernel for a dtype: ``"add_stub" not implemented for 'UInt16'``."""
    return NotImplementedError(f"\"{kernel}\" not implemented for '{SCALAR_NAMES[_BY_NP[npd].name]}'")


def check_bare_unsigned(kernel: str, npd: Any) -> None:
    """Raise PyTorch's NotImplementedError where an op has no kernel for uint16, uint32 or uint64."""
    if GUARDED[0] is not None and npd in BARE_UNSIGNED_NP:
        raise not_implemented(kernel, npd)
