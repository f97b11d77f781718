"""What every subject of Tensor's methods uses: dim wrapping, operands as tensors and their promotion,
broadcasting checks, result types, and the record of an in-place change (_bump)."""

from __future__ import annotations

import builtins
import math
from collections import namedtuple
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

from .. import backend as B
from .. import dtypes as D
from ..grad_mode import _enabled
from ..memory import _STAMP  # counts in-place modifications anywhere (and arena resets): see memory

if TYPE_CHECKING:  # bound at run time by tensor.py, once Tensor exists (see _ops/__init__.py)
    from .. import function as F
    from ..tensor import Tensor

    class TensorSelf(Tensor, Protocol):  # type: ignore[misc]  # (a protocol's bases are protocols, but for this one)
        """``self`` in the mixins' methods, for the type checker: Tensor, which has them all as its bases.

        A mixin's ``self`` has Tensor's core and its other mixins' methods only once Tensor is made,
        and mypy accepts no explicit ``self`` type but a supertype of the class (a mixin's one has
        none of them) or a Protocol; a Protocol of all of Tensor, checked where a method is called
        (on a Tensor: it matches), lets every mixin body be checked as Tensor's own."""


Number = int | builtins.float | builtins.bool
_SCALARS = (int, float, bool, B.xp.generic)


# ---- dims ----------------------------------------------------------------------------------------
def _dim(d: builtins.int, ndim: builtins.int, scalar: builtins.bool = True) -> builtins.int:
    """A dim in [-ndim, ndim) as a non-negative axis; PyTorch's IndexError otherwise.

    As PyTorch's dim wrapping, a 0-d tensor takes dim 0 or -1 (as if it had one dim of size 1: the
    caller handles that case) unless ``scalar`` is False, as for ops that need a real dim (size,
    unbind, roll)."""
    if not ndim and not scalar:
        raise IndexError(f"Dimension specified as {d} but tensor has no dimensions")
    n = max(ndim, 1)
    if not -n <= d < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {d})")
    return d % n


def _dims(dim: builtins.int | Sequence[builtins.int] | None, ndim: builtins.int) -> tuple[builtins.int, ...] | None:
    """Reduction dims as non-negative axes (None: all); () for a 0-d tensor, whose only valid dims
    are 0 and -1 (checked all the same). No dims (``dim=()``) are all of them, as in PyTorch."""
    if dim is None:
        return None
    if isinstance(dim, int | B.xp.integer):
        d = _dim(int(dim), ndim)
        return (d,) if ndim else ()
    out = tuple(_dim(d, ndim) for d in dim)
    if not out:
        return tuple(range(ndim))
    if len(set(out)) != len(out):
        raise RuntimeError(f"dim {next(d for i, d in enumerate(out) if d in out[:i])} appears multiple times "
                           "in the list of dims")
    return out if ndim else ()


def _shape_arg(shape: tuple[Any, ...]) -> tuple[builtins.int, ...]:
    """Accept ``f(2, 3)``, ``f((2, 3))`` and ``f([2, 3])`` like PyTorch."""
    if len(shape) == 1 and isinstance(shape[0], Sequence | B.ndarray):
        shape = tuple(shape[0])
    return tuple(int(s) for s in shape)


# ---- dtypes and result types ---------------------------------------------------------------------
# PyTorch's scalar type names, as its messages and Tensor.type() say them
_SCALAR_TYPE = D.SCALAR_NAMES


class return_types:  # noqa: N801 - PyTorch's name
    """One named tuple type per result kind, as ``torch.return_types``: ``x.sort()`` is a ``sort``."""

    sort = namedtuple("sort", ["values", "indices"])
    topk = namedtuple("topk", ["values", "indices"])
    kthvalue = namedtuple("kthvalue", ["values", "indices"])
    median = namedtuple("median", ["values", "indices"])
    nanmedian = namedtuple("nanmedian", ["values", "indices"])
    mode = namedtuple("mode", ["values", "indices"])
    cummax = namedtuple("cummax", ["values", "indices"])
    cummin = namedtuple("cummin", ["values", "indices"])
    aminmax = namedtuple("aminmax", ["min", "max"])
    frexp = namedtuple("frexp", ["mantissa", "exponent"])


# ---- operands: as tensors, promoted, broadcast ---------------------------------------------------
def _as_tensor(x: Any, like: Tensor | None = None) -> Tensor:
    """x as a Tensor (no copy for Tensors; Python numbers take ``like``'s dtype if compatible)."""
    if isinstance(x, Tensor):
        return x
    if isinstance(x, B.ndarray):
        return Tensor._make(x)
    if like is not None and isinstance(x, _SCALARS):
        dt = D.result_type(like, x)
        return Tensor._make(B.asarray(x, dt.np))
    return Tensor(x)


def _raw(x: Any) -> Any:
    return x._data if isinstance(x, Tensor) else x


def _scalar_of(v: Any) -> Any:
    return v.item() if isinstance(v, Tensor) else v


def _floating(x: Tensor) -> Tensor:
    """Integer tensors become the default float dtype for floating ops, as in PyTorch."""
    return x if D.is_inexact(x._data.dtype) else x.to(D.get_default_dtype())


def _promote(a: Any, b: Any) -> tuple[Any, Any]:
    """Cast operands to PyTorch's result dtype; Python numbers stay numbers when that is exact."""
    if isinstance(a, Tensor) and isinstance(b, Tensor):
        if a._data.dtype == b._data.dtype:
            return a, b
        dt = D.result_type(a, b)
        return a.to(dt), b.to(dt)
    t, s, swap = (a, b, False) if isinstance(a, Tensor) else (b, a, True)
    if isinstance(s, _SCALARS):
        dt = D.result_type(t, s)
        if dt.np != t._data.dtype:
            t = t.to(dt)
        if isinstance(s, B.xp.generic):
            s = s.item()  # NumPy scalars would not be weak in NumPy's own promotion
        if t._data.dtype.kind in "iub" and isinstance(s, float):
            s = t._data.dtype.type(s)
        return (s, t) if swap else (t, s)
    s = _as_tensor(s)
    return _promote(s, t) if swap else _promote(t, s)


_PY_NUMBERS = (float, int)  # (not bool: True * a float tensor still goes through promotion, as before)


def _binary(fn: Any, a: Any, b: Any, floating: builtins.bool = False) -> Tensor:
    if isinstance(a, Tensor):
        ad = a._arr  # (metadata only: fn.apply checks the storage)
        if isinstance(b, Tensor):
            bd = b._arr
            if ad.dtype == bd.dtype and (not floating or ad.dtype.kind == "f"):  # the common case
                if ad.shape != bd.shape:
                    _check_broadcast(ad.shape, bd.shape)
                return fn.apply(a, b)
        elif type(b) in _PY_NUMBERS and ad.dtype.kind == "f":
            return fn.apply(a, b)  # a float tensor and a Python number: the tensor's dtype, no cast
    elif type(a) in _PY_NUMBERS and isinstance(b, Tensor) and b._arr.dtype.kind == "f":
        return fn.apply(a, b)
    a, b = _promote(a, b)
    if floating:
        if isinstance(a, Tensor) and not D.is_inexact(a._data.dtype):
            a, b = _promote(a.to(D.get_default_dtype()), b)
        elif isinstance(b, Tensor) and not D.is_inexact(b._data.dtype):
            a, b = _promote(a, b.to(D.get_default_dtype()))
    if isinstance(a, Tensor) and isinstance(b, Tensor) and a._data.shape != b._data.shape:
        _check_broadcast(a._data.shape, b._data.shape)
    return fn.apply(a, b)


def _check_broadcast(s1: tuple[builtins.int, ...], s2: tuple[builtins.int, ...]) -> None:
    n = max(len(s1), len(s2))
    p1, p2 = (1,) * (n - len(s1)) + s1, (1,) * (n - len(s2)) + s2
    for i, (x, y) in enumerate(zip(p1, p2)):
        if x != y and x != 1 and y != 1:
            raise RuntimeError(f"The size of tensor a ({x}) must match the size of tensor b ({y}) at "
                               f"non-singleton dimension {i}")


def _check_divisor(a: Any, b: Any) -> None:
    """PyTorch's error for an integer division or modulo (both operands integral) by zero, where
    NumPy gives 0 and a warning. (Float operands, the usual case, are one dtype test.)"""
    def integral(v: Any) -> builtins.bool:
        return v._data.dtype.kind in "biu" if isinstance(v, Tensor) else isinstance(v, int | B.xp.integer)
    if integral(b) and integral(a) and not B.xp.all(_raw(b)):
        try:
            n = math.prod(B.xp.broadcast_shapes(B.xp.shape(_raw(a)), B.xp.shape(_raw(b))))
        except ValueError:
            return  # (the op's own shape error says it)
        if n:  # (a zero that divides nothing is no error: PyTorch checks each quotient)
            raise RuntimeError("ZeroDivisionError")


# ---- results, and the record of an in-place change -----------------------------------------------
def _zero_grad(x: Tensor, arr: B.ndarray) -> Tensor:
    """The result ``arr`` of a step function of x (floor, sign): in the graph with a zero gradient
    when x requires grad, as PyTorch records it, not cut from it."""
    if x.requires_grad and _enabled.get():
        return F.ZeroGrad.apply(arr, x)
    return Tensor._make(arr)


def _bump(t: Tensor) -> None:
    """Record an in-place modification of t, and of the bases it is a view of (a diagonal, a copy,
    has its values written back)."""
    _STAMP[0] += 1
    v = t._version
    v[0] += 1
    v[1] = _STAMP[0]
    view = getattr(t, "_view", None)
    while view is not None:
        base, index = view
        # (a copy, as a diagonal is, writes back; a reshape or permute of its base never copies)
        if type(index) is not F.Reshape and type(index) is not F.Permute \
                and not B.xp.may_share_memory(base._data, t._data):
            B.assign(base._data, index, t._data)
        v = base._version
        if v[1] != _STAMP[0]:  # (a view shares its base's counter: bumped once)
            v[0] += 1
            v[1] = _STAMP[0]
        t, view = base, getattr(base, "_view", None)
