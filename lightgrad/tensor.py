"""Tensor: an array, its gradient, the backward engine, and composite ops by section.

Primitive ops live in ``function.py``; everything here that is not a primitive is built from
them and needs no backward of its own.
"""

from __future__ import annotations

import builtins
import dis
import math
import sys
from collections import namedtuple
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from . import backend as B
from . import dtypes as D
from .autograd import _enabled, is_grad_enabled, no_grad
from .memory import _current as _arena
from .memory import reclaimed_error
from .memory import token as _token

Number = int | builtins.float | builtins.bool
_SCALARS = (int, float, bool, np.generic)
values_indices = namedtuple("values_indices", ["values", "indices"])


class Size(tuple):
    """A shape, as ``torch.Size``: a tuple with ``numel()``."""

    def numel(self) -> builtins.int:
        return math.prod(self)

    def __repr__(self) -> str:
        return f"lightgrad.Size({list(self)})"


def _dim(d: builtins.int, ndim: builtins.int) -> builtins.int:
    """A dim in [-ndim, ndim) as a non-negative axis; PyTorch's IndexError otherwise."""
    n = max(ndim, 1)
    if not -n <= d < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {d})")
    return d % n


def _dims(dim: builtins.int | Sequence[builtins.int] | None, ndim: builtins.int) -> tuple[builtins.int, ...] | None:
    if dim is None:
        return None
    if isinstance(dim, int | np.integer):
        return (_dim(int(dim), ndim),) if ndim else ()
    out = tuple(_dim(d, ndim) for d in dim) if ndim else ()
    if len(set(out)) != len(out):
        raise RuntimeError(f"dim {list(dim)} appears multiple times in the list of dims")
    return out


def _shape_arg(shape: tuple[Any, ...]) -> tuple[builtins.int, ...]:
    """Accept ``f(2, 3)``, ``f((2, 3))`` and ``f([2, 3])`` like PyTorch."""
    if len(shape) == 1 and isinstance(shape[0], Sequence | np.ndarray):
        shape = tuple(shape[0])
    return tuple(int(s) for s in shape)


class Tensor:
    """An n-dimensional array with reverse-mode autograd, like ``torch.Tensor``.

    >>> x = lightgrad.tensor([1.0, 2.0], requires_grad=True); (x * x).sum().backward(); x.grad
    tensor([2., 4.])
    """

    __slots__ = ("_data", "requires_grad", "grad", "_grad_fn", "_version", "_mem", "__weakref__", "__dict__")
    __array_priority__ = 1000  # ndarray op Tensor defers to Tensor's reflected operator
    _grad_buf: Any = None  # an optimizer's flat-buffer slice that receives this leaf's gradient

    def __init__(self, data: Any = None, *, dtype: Any = None, requires_grad: builtins.bool = False) -> None:
        arr = _to_array(data if data is not None else [], dtype)
        self._data = arr
        self.requires_grad = bool(requires_grad)
        self.grad: Tensor | None = None
        self._grad_fn: Any = None
        self._version = [0, 0]  # [in-place modifications, stamp of the last one]
        self._mem = _token()  # None on the heap; an arena's liveness token inside one

    @classmethod
    def _make(cls, data: np.ndarray) -> Tensor:
        """Wrap an array without copying or checking (the hot path of every op)."""
        t = object.__new__(Tensor)
        # NumPy returns 0-d results as scalars; a tensor always holds an array (in-place ops, views)
        t._data = data if type(data) is np.ndarray else np.asarray(data)
        t.requires_grad = False
        t.grad = None
        t._grad_fn = None
        t._version = [0, 0]
        a = _arena.get()
        t._mem = None if a is None else a._token
        return t

    # ---- attributes ----------------------------------------------------------------------------
    @property
    def shape(self) -> Size:
        return Size(self._data.shape)

    def size(self, dim: builtins.int | None = None) -> Any:
        """``x.size()`` is the shape; ``x.size(0)`` one of its sizes."""
        if dim is None:
            return Size(self._data.shape)
        return self._data.shape[_dim(dim, self._data.ndim)]

    @property
    def dtype(self) -> D.dtype:
        return D._BY_NP[self._data.dtype]

    @property
    def device(self) -> Any:
        from .device import _CPU
        return _CPU

    @property
    def is_cuda(self) -> builtins.bool:
        return False

    @property
    def ndim(self) -> builtins.int:
        return self._data.ndim

    def dim(self) -> builtins.int:
        return self._data.ndim

    ndimension = dim

    def numel(self) -> builtins.int:
        return self._data.size

    nelement = numel

    def element_size(self) -> builtins.int:
        return self._data.itemsize

    @property
    def itemsize(self) -> builtins.int:
        return self._data.itemsize

    @property
    def nbytes(self) -> builtins.int:
        return self._data.nbytes

    def is_floating_point(self) -> builtins.bool:
        return self._data.dtype.kind == "f"

    def is_contiguous(self) -> builtins.bool:
        return bool(self._data.flags.c_contiguous)

    def stride(self, dim: builtins.int | None = None) -> Any:
        st = tuple(s // self._data.itemsize for s in self._data.strides)
        return st if dim is None else st[_dim(dim, self.ndim)]

    def data_ptr(self) -> builtins.int:
        return int(self._data.__array_interface__["data"][0])

    @property
    def grad_fn(self) -> Any:
        return self._grad_fn

    @property
    def is_leaf(self) -> builtins.bool:
        return self._grad_fn is None

    @property
    def data(self) -> Tensor:
        """A detached Tensor sharing storage, whose in-place changes autograd does not track."""
        return Tensor._make(self._data)

    @data.setter
    def data(self, value: Tensor) -> None:
        self._data = value._data if isinstance(value, Tensor) else _to_array(value, None)

    @property
    def T(self) -> Tensor:
        return self.permute(*reversed(range(self.ndim)))

    @property
    def mT(self) -> Tensor:
        return self.transpose(-2, -1)

    @property
    def H(self) -> Tensor:
        return self.T

    @property
    def mH(self) -> Tensor:
        return self.mT

    @property
    def is_sparse(self) -> builtins.bool:
        return False

    @property
    def layout(self) -> str:
        return "torch.strided"

    @property
    def _version_count(self) -> builtins.int:
        return self._version[0]

    # ---- conversion ----------------------------------------------------------------------------
    def _live(self) -> np.ndarray:
        """The array, after checking that an arena reset has not reclaimed it."""
        m = self._mem
        if m is not None and not m[0]:
            raise reclaimed_error(m)
        return self._data

    def item(self) -> Number:
        """The value of a one-element tensor as a Python number."""
        self._live()
        if self._data.size != 1:
            raise RuntimeError(f"a Tensor with {self._data.size} elements cannot be converted to Scalar")
        return self._data.reshape(()).item()

    def tolist(self) -> Any:
        return self._live().tolist()

    def numpy(self, *, force: builtins.bool = False) -> np.ndarray:
        """The underlying array (shared memory); refuses when grad is required, like PyTorch."""
        self._live()
        if self.requires_grad and not force:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. "
                               "Use tensor.detach().numpy() instead.")
        return self._data if not force else self._data.copy()

    def __array__(self, dtype: Any = None, copy: builtins.bool | None = None) -> np.ndarray:
        a = self._live()
        if dtype is not None and a.dtype != dtype:
            return a.astype(dtype)
        return a.copy() if copy else a

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kw: Any) -> Any:
        from ._numpy_dispatch import array_ufunc
        return array_ufunc(ufunc, method, inputs, kw)

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        from ._numpy_dispatch import array_function
        return array_function(func, args, kwargs)

    def __dlpack__(self, *args: Any, **kwargs: Any) -> Any:
        return self._data.__dlpack__(*args, **kwargs)

    def __dlpack_device__(self) -> tuple[builtins.int, int]:
        return self._data.__dlpack_device__()

    def to(self, *args: Any, **kwargs: Any) -> Tensor:
        """``x.to(lightgrad.float64)``, ``x.to('cpu')``, ``x.to(other)``; no copy if nothing changes."""
        from .device import device as _device
        dt = kwargs.get("dtype")
        for a in list(args) + [kwargs.get("device")]:
            if isinstance(a, Tensor):
                dt = a.dtype
            elif isinstance(a, D.dtype | type) or (isinstance(a, str) and a in D._BY_NAME):
                dt = a
            elif a is not None:
                _device(a)  # validates: only the CPU exists here
        if dt is None:
            return self
        dt = D.to_dtype(dt)
        if dt.np == self._data.dtype:
            return self if not kwargs.get("copy") else self.clone()
        if not self.requires_grad or not is_grad_enabled():
            return Tensor._make(B.cast(self._data, dt.np))
        return F.Cast.apply(self, dtype=dt.np)

    def type(self, dtype: Any = None) -> Any:
        if dtype is None:
            return f"torch.{ {'float32': 'Float', 'float64': 'Double', 'float16': 'Half', 'int64': 'Long', 'int32': 'Int', 'bool': 'Bool', 'int16': 'Short', 'int8': 'Char', 'uint8': 'Byte'}[self.dtype.name]}Tensor"
        return self.to(dtype)

    def float(self) -> Tensor:
        return self.to(D.float32)

    def double(self) -> Tensor:
        return self.to(D.float64)

    def half(self) -> Tensor:
        return self.to(D.float16)

    def long(self) -> Tensor:
        return self.to(D.int64)

    def int(self) -> Tensor:
        return self.to(D.int32)

    def short(self) -> Tensor:
        return self.to(D.int16)

    def bool(self) -> Tensor:
        return self.to(D.bool_)

    def byte(self) -> Tensor:
        return self.to(D.uint8)

    def cpu(self) -> Tensor:
        return self

    def cuda(self, device: Any = None) -> Tensor:
        raise RuntimeError("lightgrad has no CUDA device here (lightgrad.cuda.is_available() is False)")

    def clone(self, *, memory_format: Any = None) -> Tensor:
        return F.Copy.apply(self)

    def contiguous(self, memory_format: Any = None) -> Tensor:
        return self if self._data.flags.c_contiguous else self.clone()

    def detach(self) -> Tensor:
        """A Tensor sharing storage (and version counter) that is cut from the graph."""
        t = Tensor._make(self._data)
        t._version = self._version
        return t

    def detach_(self) -> Tensor:
        self._grad_fn = None
        self.requires_grad = False
        return self

    def requires_grad_(self, requires_grad: builtins.bool = True) -> Tensor:
        if not requires_grad and self._grad_fn is not None:
            raise RuntimeError("you can only change requires_grad flags of leaf variables. If you want "
                               "to use a computed variable in a subgraph that doesn't require "
                               "differentiation use var_no_grad = var.detach().")
        if requires_grad and self._data.dtype.kind != "f":
            raise RuntimeError(f"only Tensors of floating point dtype can require gradients, got {self.dtype}")
        self.requires_grad = requires_grad
        return self

    def retain_grad(self) -> None:
        """Keep ``.grad`` for this non-leaf tensor after backward."""
        if self._grad_fn is None:
            if not self.requires_grad:
                raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
            return
        self._grad_fn.retained = self

    @property
    def retains_grad(self) -> builtins.bool:
        return self._grad_fn is not None and self._grad_fn.retained is self

    def backward(self, gradient: Any = None, retain_graph: builtins.bool | None = None,
                 create_graph: builtins.bool = False, inputs: Any = None) -> None:
        """Accumulate d(self)/d(leaf) into every leaf's ``.grad``."""
        run_backward([self], [gradient], create_graph if retain_graph is None else retain_graph,
                     create_graph, None, inputs)  # (positional: keywords cost on every backward)

    def register_hook(self, hook: Any) -> Any:
        raise RuntimeError("lightgrad does not support tensor hooks; use autograd.grad instead")

    # ---- Python protocol -----------------------------------------------------------------------
    def __repr__(self) -> str:
        from ._repr import tensor_repr
        m = self._mem
        if m is not None and not m[0]:
            return f"<tensor reclaimed by reset() of arena '{m[1].name}'>"
        return tensor_repr(self)

    def __len__(self) -> builtins.int:
        if not self._data.ndim:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    def __iter__(self) -> Iterator[Tensor]:
        if not self._data.ndim:
            raise TypeError("iteration over a 0-d tensor")
        return iter(self.unbind(0))

    def __bool__(self) -> builtins.bool:
        if self._data.size != 1:
            raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
        return bool(self._data.reshape(()))

    def __float__(self) -> builtins.float:
        return float(self.item())

    def __int__(self) -> builtins.int:
        return int(self.item())

    def __index__(self) -> builtins.int:
        if self._data.dtype.kind not in "iub" or self._data.size != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self.item())

    def __complex__(self) -> complex:
        return complex(self.item())

    def __format__(self, spec: str) -> str:
        if self._data.ndim == 0:
            return format(self.item(), spec)
        return format(repr(self), spec)

    __hash__ = object.__hash__

    def __reduce_ex__(self, proto: Any) -> Any:
        return (_rebuild, (self._data, self.requires_grad))

    def __deepcopy__(self, memo: dict[builtins.int, Any]) -> Tensor:
        if self._grad_fn is not None:
            raise RuntimeError("Only Tensors created explicitly by the user (graph leaves) support "
                               "the deepcopy protocol at the moment.")
        t = type(self).__new__(type(self))
        Tensor.__init__(t, None)
        t._data = self._data.copy()
        t.requires_grad = self.requires_grad
        if self.grad is not None:
            t.grad = self.grad.__deepcopy__(memo)
        for k, v in getattr(self, "__dict__", {}).items():
            if k != "_grad_buf":  # an optimizer's flat-buffer slot belongs to the original, not a copy
                setattr(t, k, v)
        memo[id(self)] = t
        return t

    # ---- arithmetic (operators and their method forms) -----------------------------------------
    def __add__(self, o: Any) -> Tensor:
        if self._data.size >= _REUSE_MIN or isinstance(o, Tensor) and o._data.size >= _REUSE_MIN:
            out = _reusable(self, o, True)
            if out is not None:
                return F.Add.apply(self, o, out=out)
        return _binary(F.Add, self, o)

    def __radd__(self, o: Any) -> Tensor:
        if self._data.size >= _REUSE_MIN:  # (o is a number: a Tensor's own operator ran first)
            out = _reusable(self, o, True)
            if out is not None:
                return F.Add.apply(o, self, out=out)
        return _binary(F.Add, o, self)

    def __sub__(self, o: Any) -> Tensor:
        if self._data.size >= _REUSE_MIN or isinstance(o, Tensor) and o._data.size >= _REUSE_MIN:
            out = _reusable(self, o, True)
            if out is not None:
                return F.Sub.apply(self, o, out=out)
        return _binary(F.Sub, self, o)

    def __rsub__(self, o: Any) -> Tensor:
        if self._data.size >= _REUSE_MIN:  # (o is a number: a Tensor's own operator ran first)
            out = _reusable(self, o, True)
            if out is not None:
                return F.Sub.apply(o, self, out=out)
        return _binary(F.Sub, o, self)

    def __mul__(self, o: Any) -> Tensor:
        if self._data.size >= _REUSE_MIN or isinstance(o, Tensor) and o._data.size >= _REUSE_MIN:
            out = _reusable(self, o, False)
            if out is not None:
                return F.Mul.apply(self, o, out=out)
        return _binary(F.Mul, self, o)

    def __rmul__(self, o: Any) -> Tensor:
        if self._data.size >= _REUSE_MIN:
            out = _reusable(self, o, False)
            if out is not None:
                return F.Mul.apply(o, self, out=out)
        return _binary(F.Mul, o, self)

    def __truediv__(self, o: Any) -> Tensor:
        if self._data.size >= _REUSE_MIN or isinstance(o, Tensor) and o._data.size >= _REUSE_MIN:
            out = _reusable(self, o, False)
            if out is not None:
                return F.Div.apply(self, o, out=out)
        return _binary(F.Div, self, o, floating=True)

    def __rtruediv__(self, o: Any) -> Tensor:
        return _binary(F.Div, o, self, floating=True)

    def __pow__(self, o: Any) -> Tensor:
        return _binary(F.Pow, self, o)

    def __rpow__(self, o: Any) -> Tensor:
        return _binary(F.Pow, o, self)

    def __matmul__(self, o: Any) -> Tensor:
        return self.matmul(o)

    def __rmatmul__(self, o: Any) -> Tensor:
        return _as_tensor(o).matmul(self)

    def __floordiv__(self, o: Any) -> Tensor:
        return self._nograd_binary(B.floor_divide, o)

    def __rfloordiv__(self, o: Any) -> Tensor:
        return _as_tensor(o, self)._nograd_binary(B.floor_divide, self)

    def __mod__(self, o: Any) -> Tensor:
        return self._nograd_binary(B.remainder, o)

    def __neg__(self) -> Tensor:
        return F.Neg.apply(self)

    def __pos__(self) -> Tensor:
        return self

    def __abs__(self) -> Tensor:
        return self.abs()

    def __invert__(self) -> Tensor:
        if self._data.dtype == np.bool_:
            return Tensor._make(B.logical_not(self._data))
        return Tensor._make(B.invert(self._data))

    def __and__(self, o: Any) -> Tensor:
        return self._nograd_binary(B.bitwise_and, o)

    def __or__(self, o: Any) -> Tensor:
        return self._nograd_binary(B.bitwise_or, o)

    def __xor__(self, o: Any) -> Tensor:
        return self._nograd_binary(B.bitwise_xor, o)

    __rand__, __ror__, __rxor__ = __and__, __or__, __xor__

    def __eq__(self, o: Any) -> Tensor:  # type: ignore[override]
        return self._compare(B.equal, o)

    def __ne__(self, o: Any) -> Tensor:  # type: ignore[override]
        return self._compare(B.not_equal, o)

    def __lt__(self, o: Any) -> Tensor:
        return self._compare(B.less, o)

    def __le__(self, o: Any) -> Tensor:
        return self._compare(B.less_equal, o)

    def __gt__(self, o: Any) -> Tensor:
        return self._compare(B.greater, o)

    def __ge__(self, o: Any) -> Tensor:
        return self._compare(B.greater_equal, o)

    def _compare(self, f: Any, o: Any) -> Tensor:
        a, b = _promote(self, o)
        return Tensor._make(f(a._data, _raw(b)))

    def _nograd_binary(self, f: Any, o: Any) -> Tensor:
        a, b = _promote(self, o)
        return Tensor._make(f(a._data, _raw(b)))

    def add(self, other: Any, *, alpha: Number = 1) -> Tensor:
        return self + (other if alpha == 1 else other * alpha)

    def sub(self, other: Any, *, alpha: Number = 1) -> Tensor:
        return self - (other if alpha == 1 else other * alpha)

    subtract = sub

    def mul(self, other: Any) -> Tensor:
        return self * other

    multiply = mul

    def div(self, other: Any, *, rounding_mode: str | None = None) -> Tensor:
        if rounding_mode is None:
            return self / other
        q = self / other
        return (q.floor() if rounding_mode == "floor" else q.trunc()).to(_promote(self, other)[0].dtype)

    divide = true_divide = div

    def pow(self, exponent: Any) -> Tensor:
        return self ** exponent

    def neg(self) -> Tensor:
        return -self

    negative = neg

    def reciprocal(self) -> Tensor:
        return 1 / self

    def square(self) -> Tensor:
        return self * self

    def floor_divide(self, o: Any) -> Tensor:
        return self // o

    def remainder(self, o: Any) -> Tensor:
        return self % o

    def fmod(self, o: Any) -> Tensor:
        return self._nograd_binary(B.fmod, o)

    # ---- elementwise math ----------------------------------------------------------------------
    def exp(self) -> Tensor:
        return F.Exp.apply(_floating(self))

    def log(self) -> Tensor:
        return F.Log.apply(_floating(self))

    def log1p(self) -> Tensor:
        return F.Log1p.apply(_floating(self))

    def expm1(self) -> Tensor:
        return F.Expm1.apply(_floating(self))

    def log2(self) -> Tensor:
        return self.log() / math.log(2)

    def log10(self) -> Tensor:
        return self.log() / math.log(10)

    def exp2(self) -> Tensor:
        return (self * math.log(2)).exp()

    def sqrt(self) -> Tensor:
        return F.Sqrt.apply(_floating(self))

    def rsqrt(self) -> Tensor:
        return 1 / self.sqrt()

    def sin(self) -> Tensor:
        return F.Sin.apply(_floating(self))

    def cos(self) -> Tensor:
        return F.Cos.apply(_floating(self))

    def tan(self) -> Tensor:
        return F.Tan.apply(_floating(self))

    def tanh(self) -> Tensor:
        return F.Tanh.apply(_floating(self))

    def sinh(self) -> Tensor:
        return (self.exp() - (-self).exp()) / 2

    def cosh(self) -> Tensor:
        return (self.exp() + (-self).exp()) / 2

    def sigmoid(self) -> Tensor:
        return F.Sigmoid.apply(_floating(self))

    def relu(self) -> Tensor:
        return F.Relu.apply(self)

    def abs(self) -> Tensor:
        return F.Abs.apply(self)

    absolute = abs

    def sign(self) -> Tensor:
        return Tensor._make(B.sign(self._data))

    sgn = sign

    def erf(self) -> Tensor:
        return F.Erf.apply(_floating(self))

    def floor(self) -> Tensor:
        return Tensor._make(B.floor(self._data))

    def ceil(self) -> Tensor:
        return Tensor._make(B.ceil(self._data))

    def round(self, decimals: builtins.int = 0) -> Tensor:
        if decimals:
            s = 10.0 ** decimals
            return Tensor._make(B.divide(B.round_(B.multiply(self._data, s)), s).astype(self._data.dtype))
        return Tensor._make(B.round_(self._data))

    def trunc(self) -> Tensor:
        return Tensor._make(B.trunc(self._data))

    def frac(self) -> Tensor:
        return self - self.detach().trunc()

    def isnan(self) -> Tensor:
        return Tensor._make(B.isnan(self._data))

    def isinf(self) -> Tensor:
        return Tensor._make(B.isinf(self._data))

    def isfinite(self) -> Tensor:
        return Tensor._make(B.isfinite(self._data))

    def clamp(self, min: Any = None, max: Any = None) -> Tensor:  # noqa: A002
        """Limit values to [min, max]; bounds may be numbers or tensors."""
        if min is None and max is None:
            raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
        lo = _clamp_bound(self, min)
        hi = _clamp_bound(self, max)
        if isinstance(lo, Tensor) or isinstance(hi, Tensor):
            lo_t = lo if lo is None or isinstance(lo, Tensor) else _as_tensor(lo, self)
            hi_t = hi if hi is None or isinstance(hi, Tensor) else _as_tensor(hi, self)
            return F.Clamp.apply(self, lo_t, hi_t)
        return F.Clamp.apply(self, lo, hi)

    clip = clamp

    def clamp_min(self, m: Any) -> Tensor:
        return self.clamp(min=m)

    def clamp_max(self, m: Any) -> Tensor:
        return self.clamp(max=m)

    def maximum(self, o: Any) -> Tensor:
        return _binary(F.Maximum, self, o)

    def minimum(self, o: Any) -> Tensor:
        return _binary(F.Minimum, self, o)

    def lerp(self, end: Any, weight: Any) -> Tensor:
        return self + (end - self) * weight

    def where(self, condition: Any, other: Any) -> Tensor:
        return where(condition, self, other)

    def masked_fill(self, mask: Any, value: Any) -> Tensor:
        """Set positions where ``mask`` is True to ``value`` (mask broadcasts)."""
        m = _as_tensor(mask)
        if m._data.dtype != np.bool_:
            raise RuntimeError(f"masked_fill_ only supports boolean masks, but got mask with dtype {m.dtype}")
        if isinstance(value, Tensor) and value.ndim:
            raise RuntimeError(f"masked_fill_ only supports a 0-dimensional value tensor, but got tensor "
                               f"with {value.ndim} dimension(s).")
        v = value if isinstance(value, Tensor) and value.requires_grad else _scalar_of(value)
        if not isinstance(v, Tensor):
            v = np.asarray(v, self._data.dtype)
        return where(m, v, self)

    def logical_not(self) -> Tensor:
        return Tensor._make(B.logical_not(self._data))

    def logical_and(self, o: Any) -> Tensor:
        return Tensor._make(B.logical_and(self._data, _raw(o)))

    def logical_or(self, o: Any) -> Tensor:
        return Tensor._make(B.logical_or(self._data, _raw(o)))

    def logical_xor(self, o: Any) -> Tensor:
        return Tensor._make(B.logical_xor(self._data, _raw(o)))

    def eq(self, o: Any) -> Tensor:
        return self == o

    def ne(self, o: Any) -> Tensor:
        return self != o

    def lt(self, o: Any) -> Tensor:
        return self < o

    def le(self, o: Any) -> Tensor:
        return self <= o

    def gt(self, o: Any) -> Tensor:
        return self > o

    def ge(self, o: Any) -> Tensor:
        return self >= o

    greater, greater_equal, less, less_equal, not_equal = gt, ge, lt, le, ne

    def equal(self, o: Tensor) -> builtins.bool:
        return self.shape == o.shape and bool(np.array_equal(self._data, o._data))

    def allclose(self, o: Tensor, rtol: builtins.float = 1e-5, atol: builtins.float = 1e-8, equal_nan: builtins.bool = False) -> builtins.bool:
        return bool(np.allclose(self._data, _raw(o), rtol=rtol, atol=atol, equal_nan=equal_nan))

    def isclose(self, o: Any, rtol: builtins.float = 1e-5, atol: builtins.float = 1e-8, equal_nan: builtins.bool = False) -> Tensor:
        return Tensor._make(np.isclose(self._data, _raw(o), rtol=rtol, atol=atol, equal_nan=equal_nan))

    # ---- reductions ----------------------------------------------------------------------------
    def sum(self, dim: Any = None, keepdim: builtins.bool = False, *, dtype: Any = None) -> Tensor:
        """Sum over ``dim`` (int, tuple or None for all); integers and bools sum as int64."""
        x = self
        if dtype is not None:
            x = x.to(dtype)
        elif x._data.dtype.kind in "biu":
            x = x.to(D.int64)
        return F.Sum.apply(x, None if dim is None else _dims(dim, x._data.ndim), keepdim)

    def mean(self, dim: Any = None, keepdim: builtins.bool = False, *, dtype: Any = None) -> Tensor:
        x = self.to(dtype) if dtype is not None else self
        if x._data.dtype.kind != "f":
            raise RuntimeError("mean(): could not infer output dtype. Input dtype must be either a "
                               f"floating point or complex dtype. Got: {x.dtype.name.capitalize()}")
        axes = _dims(dim, x.ndim)
        n = x.numel() if axes is None else math.prod(x.shape[a] for a in axes)
        if not n:
            return x.sum(dim, keepdim) * float("nan")
        return F.Mean.apply(x, None if dim is None else _dims(dim, x._data.ndim), keepdim, n)

    def var(self, dim: Any = None, unbiased: builtins.bool | None = None, keepdim: builtins.bool = False, *,
            correction: builtins.float | None = None) -> Tensor:
        """Variance with Bessel's ``correction`` (default 1), as ``torch.var``."""
        if isinstance(dim, bool):  # legacy torch.var(x, unbiased)
            dim, unbiased = None, dim
        c = correction if correction is not None else (1 if unbiased is None or unbiased else 0)
        axes = _dims(dim, self.ndim)
        n = self.numel() if axes is None else math.prod(self.shape[a] for a in axes)
        d = self - self.mean(dim, keepdim=True)
        return (d * d).sum(dim, keepdim) / max(n - c, 0)

    def std(self, dim: Any = None, unbiased: builtins.bool | None = None, keepdim: builtins.bool = False, *,
            correction: builtins.float | None = None) -> Tensor:
        return self.var(dim, unbiased, keepdim, correction=correction).sqrt()

    def prod(self, dim: builtins.int | None = None, keepdim: builtins.bool = False, *, dtype: Any = None) -> Tensor:
        x = self.to(dtype) if dtype is not None else (self.to(D.int64) if self._data.dtype.kind in "biu" else self)
        return F.Prod.apply(x, axes=_dims(dim, x.ndim), keepdim=keepdim)

    def amax(self, dim: Any = (), keepdim: builtins.bool = False) -> Tensor:
        axes = _dims(dim, self.ndim) if dim != () else None
        _check_nonempty(self, axes, "amax")
        return F.Amax.apply(self, axes=axes, keepdim=keepdim)

    def amin(self, dim: Any = (), keepdim: builtins.bool = False) -> Tensor:
        axes = _dims(dim, self.ndim) if dim != () else None
        _check_nonempty(self, axes, "amin")
        return F.Amin.apply(self, axes=axes, keepdim=keepdim)

    def max(self, dim: Any = None, keepdim: builtins.bool = False) -> Any:
        """``x.max()`` the largest value; ``x.max(dim)`` (values, indices); ``x.max(other)``."""
        if isinstance(dim, Tensor):
            return self.maximum(dim)
        if dim is None:
            return self.amax()
        return self._extreme_dim(dim, keepdim, B.argmax)

    def min(self, dim: Any = None, keepdim: builtins.bool = False) -> Any:
        if isinstance(dim, Tensor):
            return self.minimum(dim)
        if dim is None:
            return self.amin()
        return self._extreme_dim(dim, keepdim, B.argmin)

    def _extreme_dim(self, dim: builtins.int, keepdim: builtins.bool, arg: Any) -> Any:
        d = _dim(dim, self.ndim)
        x = self if self.ndim else self.reshape(1)
        _check_nonempty(x, (d,), "max")
        idx = arg(x._data, axis=d)
        vals = F.MaxDim.apply(x, dim=d, keepdim=keepdim or not self.ndim, idx=idx)
        ind = Tensor._make(np.expand_dims(idx, d) if keepdim else idx)
        if not self.ndim:
            vals, ind = vals.reshape(()), ind.reshape(())
        return values_indices(vals, ind)

    def argmax(self, dim: builtins.int | None = None, keepdim: builtins.bool = False) -> Tensor:
        if dim is None:
            return Tensor._make(np.asarray(B.argmax(self._data), np.int64))
        d = _dim(dim, self.ndim)
        return Tensor._make(B.argmax(self._data, axis=d, keepdims=keepdim))

    def argmin(self, dim: builtins.int | None = None, keepdim: builtins.bool = False) -> Tensor:
        if dim is None:
            return Tensor._make(np.asarray(B.argmin(self._data), np.int64))
        d = _dim(dim, self.ndim)
        return Tensor._make(B.argmin(self._data, axis=d, keepdims=keepdim))

    def logsumexp(self, dim: Any, keepdim: builtins.bool = False) -> Tensor:
        """log(sum(exp(x))) computed stably: the max is taken out first (and has no gradient)."""
        m = self.detach().amax(dim, keepdim=True)
        m = m.masked_fill(m.isinf(), 0)
        out = (self - m).exp().sum(dim, keepdim=True).log() + m
        return out if keepdim else out.squeeze(_dims(dim, self.ndim))

    def cumsum(self, dim: builtins.int, *, dtype: Any = None) -> Tensor:
        x = self.to(dtype) if dtype is not None else (self.to(D.int64) if self._data.dtype.kind in "biu" else self)
        return F.Cumsum.apply(x, dim=_dim(dim, x.ndim))

    def norm(self, p: Any = "fro", dim: Any = None, keepdim: builtins.bool = False) -> Tensor:
        """Vector p-norm over ``dim`` (all elements by default); 'fro' is the 2-norm."""
        x = _floating(self)
        if p in ("fro", 2, 2.0):
            s = (x * x).sum(dim, keepdim)
            # sqrt'(0) is infinite; PyTorch's norm takes the subgradient 0 there
            return where(s == 0, s, s.clamp(min=np.finfo(x._data.dtype).tiny).sqrt())
        if p in (math.inf, "inf"):
            return x.abs().amax(dim if dim is not None else (), keepdim)
        if p in (-math.inf, "-inf"):
            return x.abs().amin(dim if dim is not None else (), keepdim)
        if p == 1:
            return x.abs().sum(dim, keepdim)
        if p == 0:
            return (x != 0).to(x.dtype).sum(dim, keepdim)
        return (x.abs() ** p).sum(dim, keepdim) ** (1.0 / p)

    def all(self, dim: Any = None, keepdim: builtins.bool = False) -> Tensor:
        return Tensor._make(np.all(self._data, axis=_dims(dim, self.ndim), keepdims=keepdim))

    def any(self, dim: Any = None, keepdim: builtins.bool = False) -> Tensor:
        return Tensor._make(np.any(self._data, axis=_dims(dim, self.ndim), keepdims=keepdim))

    def count_nonzero(self, dim: Any = None) -> Tensor:
        return Tensor._make(np.asarray(np.count_nonzero(self._data, axis=_dims(dim, self.ndim)), np.int64))

    def softmax(self, dim: builtins.int, dtype: Any = None) -> Tensor:
        x = _floating(self.to(dtype) if dtype is not None else self)
        return F.Softmax.apply(x, dim=_dim(dim, x.ndim))

    def log_softmax(self, dim: builtins.int, dtype: Any = None) -> Tensor:
        x = _floating(self.to(dtype) if dtype is not None else self)
        return F.LogSoftmax.apply(x, dim=_dim(dim, x.ndim))

    # ---- shape ---------------------------------------------------------------------------------
    def reshape(self, *shape: Any) -> Tensor:
        """A tensor of the same data with a new shape (one size may be -1)."""
        s = _shape_arg(shape)
        n = self._data.size
        known = math.prod(d for d in s if d != -1)
        if s.count(-1) > 1:
            raise RuntimeError("only one dimension can be inferred")
        if (-1 in s and (known == 0 or n % known)) or (-1 not in s and known != n) or any(d < -1 for d in s):
            raise RuntimeError(f"shape '{list(s)}' is invalid for input of size {n}")
        if s == self._data.shape:
            return self
        return F.Reshape.apply(self, shape=s)

    view = reshape

    def view_as(self, other: Tensor) -> Tensor:
        return self.reshape(other.shape)

    reshape_as = view_as

    def flatten(self, start_dim: builtins.int = 0, end_dim: builtins.int = -1) -> Tensor:
        if not self.ndim:
            return self.reshape(1)
        s, e = _dim(start_dim, self.ndim), _dim(end_dim, self.ndim)
        if s > e:
            raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
        sh = self.shape
        return self.reshape(sh[:s] + (math.prod(sh[s:e + 1]),) + sh[e + 1:])

    def unflatten(self, dim: builtins.int, sizes: Sequence[builtins.int]) -> Tensor:
        d = _dim(dim, self.ndim)
        sizes = list(sizes)
        if -1 in sizes:
            known = math.prod(x for x in sizes if x != -1)
            sizes[sizes.index(-1)] = self.shape[d] // known if known else 0
        if math.prod(sizes) != self.shape[d]:
            raise RuntimeError(f"unflatten: Provided sizes {list(sizes)} don't multiply up to the size of "
                               f"dim {dim} ({self.shape[d]}) in the input tensor")
        return self.reshape(self.shape[:d] + tuple(sizes) + self.shape[d + 1:])

    def squeeze(self, dim: Any = None) -> Tensor:
        if dim is None:
            return self.reshape(tuple(s for s in self.shape if s != 1))
        axes = _dims(dim, self.ndim) or ()
        return self.reshape(tuple(s for i, s in enumerate(self.shape) if not (i in axes and s == 1)))

    def unsqueeze(self, dim: builtins.int) -> Tensor:
        d = _dim(dim, self.ndim + 1)
        return self.reshape(self.shape[:d] + (1,) + self.shape[d:])

    def permute(self, *dims: Any) -> Tensor:
        order = tuple(_dim(d, self.ndim) for d in _shape_arg(dims)) if self.ndim else ()
        if sorted(order) != list(range(self.ndim)):
            raise RuntimeError(f"permute(sparse_coo): number of dimensions in the tensor input does not match "
                               f"the length of the desired ordering of dimensions i.e. input.dim() = "
                               f"{self.ndim} is not equal to len(dims) = {len(order)}")
        if order == tuple(range(self.ndim)):
            return self
        return F.Permute.apply(self, order=order)

    def transpose(self, dim0: builtins.int, dim1: builtins.int) -> Tensor:
        if not self.ndim:
            return self
        order = list(range(self.ndim))
        a, b = _dim(dim0, self.ndim), _dim(dim1, self.ndim)
        order[a], order[b] = order[b], order[a]
        return self.permute(order)

    swapaxes = swapdims = transpose

    def t(self) -> Tensor:
        if self.ndim > 2:
            raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {self.ndim}D")
        return self.T

    def movedim(self, source: builtins.int, destination: builtins.int) -> Tensor:
        order = list(range(self.ndim))
        s = _dim(source, self.ndim)
        order.pop(s)
        order.insert(_dim(destination, self.ndim), s)
        return self.permute(order)

    moveaxis = movedim

    def expand(self, *sizes: Any) -> Tensor:
        """A broadcast view to ``sizes`` (-1 keeps a size)."""
        s = _shape_arg(sizes)
        if len(s) < self.ndim:
            raise RuntimeError(f"expand: the number of sizes provided ({len(s)}) must be greater or equal "
                               f"to the number of dimensions in the tensor ({self.ndim})")
        lead = len(s) - self.ndim
        full = tuple(self.shape[i - lead] if d == -1 else d for i, d in enumerate(s))
        for i, d in enumerate(self.shape):
            if d != 1 and d != full[i + lead]:
                raise RuntimeError(f"The expanded size of the tensor ({full[i + lead]}) must match the existing "
                                   f"size ({d}) at non-singleton dimension {i + lead}.  Target sizes: "
                                   f"{list(s)}.  Tensor sizes: {list(self.shape)}")
        if full == self.shape:
            return self
        return F.Expand.apply(self, shape=full)

    def expand_as(self, other: Tensor) -> Tensor:
        return self.expand(other.shape)

    def broadcast_to(self, shape: Sequence[builtins.int]) -> Tensor:
        return self.expand(tuple(shape))

    def repeat(self, *sizes: Any) -> Tensor:
        """Tile the tensor ``sizes`` times along each dim (as ``torch.Tensor.repeat``)."""
        reps = _shape_arg(sizes)
        if len(reps) < self.ndim:
            raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number of "
                               "dimensions of tensor")
        x = self.reshape((1,) * (len(reps) - self.ndim) + self.shape)
        inter = tuple(v for s in x.shape for v in (1, s))
        tiled = tuple(v for r, s in zip(reps, x.shape) for v in (r, s))
        return x.reshape(inter).expand(tiled).reshape(tuple(r * s for r, s in zip(reps, x.shape)))

    def repeat_interleave(self, repeats: builtins.int, dim: builtins.int | None = None) -> Tensor:
        x = self.flatten() if dim is None else self
        d = 0 if dim is None else _dim(dim, x.ndim)
        idx = np.repeat(np.arange(x.shape[d]), repeats)
        return x.index_select(d, Tensor._make(idx))

    def split(self, split_size: Any, dim: builtins.int = 0) -> tuple[Tensor, ...]:
        d = _dim(dim, self.ndim)
        n = self.shape[d]
        if isinstance(split_size, int):
            sizes = [split_size] * (n // split_size) + ([n % split_size] if n % split_size else [])
        else:
            sizes = list(split_size)
            if sum(sizes) != n:
                raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {n} (input tensor's "
                                   f"size at dimension {dim}), but got split_sizes={sizes}")
        out, start = [], 0
        for s in sizes:
            out.append(self.narrow(d, start, s))
            start += s
        return tuple(out)

    def chunk(self, chunks: builtins.int, dim: builtins.int = 0) -> tuple[Tensor, ...]:
        n = self.shape[_dim(dim, self.ndim)]
        return self.split(max(-(-n // chunks), 1), dim)

    def tensor_split(self, sections: builtins.int, dim: builtins.int = 0) -> tuple[Tensor, ...]:
        n = self.shape[_dim(dim, self.ndim)]
        q, r = divmod(n, sections)
        return self.split([q + 1] * r + [q] * (sections - r), dim)

    def unbind(self, dim: builtins.int = 0) -> tuple[Tensor, ...]:
        d = _dim(dim, self.ndim)
        return tuple(self[(slice(None),) * d + (i,)] for i in range(self.shape[d]))

    def narrow(self, dim: builtins.int, start: builtins.int, length: builtins.int) -> Tensor:
        d = _dim(dim, self.ndim)
        return self[(slice(None),) * d + (slice(start, start + length),)]

    def flip(self, *dims: Any) -> Tensor:
        axes = _dims(_shape_arg(dims), self.ndim)
        return F.Flip.apply(self, dims=axes)

    def fliplr(self) -> Tensor:
        return self.flip(1)

    def flipud(self) -> Tensor:
        return self.flip(0)

    def roll(self, shifts: Any, dims: Any = None) -> Tensor:
        if dims is None:
            return self.flatten().roll(shifts, 0).reshape(self.shape)
        axes = _dims(dims, self.ndim)
        sh = tuple(shifts) if isinstance(shifts, Sequence) else (shifts,)
        return F.Roll.apply(self, shifts=sh, dims=axes)

    def tril(self, diagonal: builtins.int = 0) -> Tensor:
        n, m = self.shape[-2:]
        keep = B.tril_mask(n, m, diagonal, dtype=bool)
        return where(Tensor._make(keep), self, Tensor._make(B.zeros((), self._data.dtype)))  # keeps the dtype

    def triu(self, diagonal: builtins.int = 0) -> Tensor:
        n, m = self.shape[-2:]
        keep = B.logical_not(B.tril_mask(n, m, diagonal - 1, dtype=bool))
        return where(Tensor._make(keep), self, Tensor._make(B.zeros((), self._data.dtype)))

    def diagonal(self, offset: builtins.int = 0, dim1: builtins.int = 0, dim2: builtins.int = 1) -> Tensor:
        x = self.movedim(dim1, -2).movedim(dim2 if dim2 > dim1 else dim2 + 1, -1) if (dim1, dim2) != (-2, -1) else self
        n, m = x.shape[-2:]
        i = np.arange(max(0, -offset), min(n, m - offset))
        return x[..., i, i + offset]

    def diag(self, diagonal: builtins.int = 0) -> Tensor:
        if self.ndim == 2:
            return self.diagonal(diagonal)
        n = self.shape[0] + abs(diagonal)
        i = np.arange(self.shape[0])
        r, c = (i, i + diagonal) if diagonal >= 0 else (i - diagonal, i)
        return zeros(n, n, dtype=self.dtype).index_put((Tensor._make(r), Tensor._make(c)), self)

    def trace(self) -> Tensor:
        return self.diagonal().sum()

    # ---- indexing ------------------------------------------------------------------------------
    def __getitem__(self, index: Any) -> Tensor:
        idx, advanced = _index(self, index)
        try:
            return F.GetItem.apply(self, index=idx, advanced=advanced)
        except IndexError as e:
            raise IndexError(str(e).replace("axis", "dimension")) from None

    def __setitem__(self, index: Any, value: Any) -> None:
        idx, advanced = _index(self, index)
        self._assign(F.IndexPut, value, index=idx, accumulate=False)

    def index_put(self, indices: Any, values: Any, accumulate: builtins.bool = False) -> Tensor:
        idx, _ = _index(self, tuple(indices))
        v = _as_tensor(values, self)
        return F.IndexPut.apply(self, v.to(self.dtype), index=idx, accumulate=accumulate)

    def index_put_(self, indices: Any, values: Any, accumulate: builtins.bool = False) -> Tensor:
        idx, _ = _index(self, tuple(indices))
        self._assign(F.IndexPut, values, index=idx, accumulate=accumulate)
        return self

    def _assign(self, op: Any, value: Any, **kw: Any) -> None:
        v = value if isinstance(value, Tensor) else Tensor._make(np.asarray(_scalar_of(value), self._data.dtype))
        if v._data.dtype != self._data.dtype:
            v = v.to(self.dtype)
        try:
            np.broadcast_shapes(np.shape(self._data[kw["index"]]), v.shape)
        except ValueError:
            raise RuntimeError(f"shape mismatch: value tensor of shape {list(v.shape)} cannot be broadcast "
                               f"to indexing result of shape {list(np.shape(self._data[kw['index']]))}") from None
        except IndexError as e:
            raise IndexError(str(e).replace("axis", "dimension")) from None
        self._inplace(lambda s: op.apply(s, v, **kw), v)

    def gather(self, dim: builtins.int, index: Tensor) -> Tensor:
        """``out[i][j] = x[i][index[i][j]]`` along ``dim`` (index has x's number of dims)."""
        d = _dim(dim, self.ndim)
        ix = _int_index(index, "gather")
        if ix.ndim != self.ndim:
            raise RuntimeError("Index tensor must have the same number of dimensions as input tensor")
        _check_bounds(ix, self.shape[d], d)
        x = self[tuple(slice(0, n) if i != d else slice(None) for i, n in enumerate(ix.shape))]
        return F.Gather.apply(x, dim=d, index=ix)

    def take_along_dim(self, indices: Tensor, dim: builtins.int | None = None) -> Tensor:
        if dim is None:
            return self.flatten().gather(0, _as_tensor(indices).flatten())
        d = _dim(dim, self.ndim)
        ix = _int_index(indices, "take_along_dim")
        shape = list(np.broadcast_shapes(tuple(1 if i == d else s for i, s in enumerate(self.shape)),
                                         tuple(1 if i == d else s for i, s in enumerate(ix.shape))))
        xs = shape.copy()
        xs[d] = self.shape[d]
        shape[d] = ix.shape[d]
        return self.expand(xs).gather(d, Tensor._make(np.broadcast_to(ix, shape)))

    def scatter(self, dim: builtins.int, index: Tensor, src: Any = None, *, value: Any = None,
                reduce: str | None = None) -> Tensor:
        """A copy with ``src`` values written at ``index`` along ``dim``."""
        s = src if src is not None else value
        add = reduce == "add"
        return self._scatter(dim, index, s, add)

    def scatter_add(self, dim: builtins.int, index: Tensor, src: Tensor) -> Tensor:
        return self._scatter(dim, index, src, True)

    def _scatter(self, dim: builtins.int, index: Tensor, src: Any, add: builtins.bool) -> Tensor:
        d = _dim(dim, self.ndim)
        ix = _int_index(index, "scatter")
        _check_bounds(ix, self.shape[d], d)
        s = src if isinstance(src, Tensor) else Tensor._make(np.asarray(src, self._data.dtype))
        return F.Scatter.apply(self, s.to(self.dtype), dim=d, index=ix, add=add)

    def index_select(self, dim: builtins.int, index: Tensor) -> Tensor:
        d = _dim(dim, self.ndim)
        ix = _int_index(index, "index_select")
        if ix.ndim > 1:
            raise IndexError("index_select(): Index is supposed to be a vector")
        _check_bounds(ix, self.shape[d], d)
        return self[(slice(None),) * d + (Tensor._make(ix.reshape(-1)),)]

    def masked_select(self, mask: Tensor) -> Tensor:
        m = _as_tensor(mask)
        return self.expand(np.broadcast_shapes(self.shape, m.shape))[m.expand(np.broadcast_shapes(self.shape, m.shape))]

    def nonzero(self, *, as_tuple: builtins.bool = False) -> Any:
        nz = np.nonzero(self._data)
        if as_tuple:
            return tuple(Tensor._make(i) for i in nz)
        return Tensor._make(np.stack(nz, -1) if nz else np.zeros((0, 0), np.int64))

    # ---- linear algebra ------------------------------------------------------------------------
    def matmul(self, other: Any) -> Tensor:
        """Matrix product with PyTorch's rules for 1-D, 2-D and batched operands."""
        o = _as_tensor(other, self)
        a, b = _promote(self, o)
        if a.ndim == 0 or b.ndim == 0:
            raise RuntimeError(f"both arguments to matmul need to be at least 1D, but they are {a.ndim}D and {b.ndim}D")
        k1 = a.shape[-1]
        k2 = b.shape[-2] if b.ndim > 1 else b.shape[0]
        if k1 != k2:
            sa = "x".join(map(str, a.shape)) if a.ndim <= 2 else str(list(a.shape))
            sb = "x".join(map(str, b.shape)) if b.ndim <= 2 else str(list(b.shape))
            raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({sa} and {sb})")
        if a.ndim > 2 and b.ndim > 2:
            try:
                B.broadcast_shape(a.shape[:-2], b.shape[:-2])
            except ValueError:
                raise RuntimeError(f"The size of batch dimensions {list(a.shape[:-2])} and "
                                   f"{list(b.shape[:-2])} must match or broadcast") from None
        if a.ndim == 1 and b.ndim == 1:
            return F.MatMul.apply(a.reshape(1, -1), b.reshape(-1, 1)).reshape(())
        if a.ndim == 1:
            return F.MatMul.apply(a.reshape(1, -1), b).squeeze(-2)
        if b.ndim == 1:
            return F.MatMul.apply(a, b.reshape(-1, 1)).squeeze(-1)
        return F.MatMul.apply(a, b)

    def mm(self, other: Tensor) -> Tensor:
        if self.ndim != 2 or other.ndim != 2:
            raise RuntimeError(f"mm: expected 2D tensors, got {self.ndim}D and {other.ndim}D")
        return self.matmul(other)

    def bmm(self, other: Tensor) -> Tensor:
        if self.ndim != 3 or other.ndim != 3:
            raise RuntimeError(f"batch1 must be a 3D tensor, got {self.ndim}D and {other.ndim}D")
        if self.shape[0] != other.shape[0]:
            raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                               f"[{self.shape[0]}, {self.shape[2]}] but got: [{other.shape[0]}, {other.shape[1]}].")
        return self.matmul(other)

    def mv(self, v: Tensor) -> Tensor:
        return self.matmul(v)

    def dot(self, other: Tensor) -> Tensor:
        if self.ndim != 1 or other.ndim != 1:
            raise RuntimeError(f"1D tensors expected, but got {self.ndim}D and {other.ndim}D tensors")
        if self.shape != other.shape:
            raise RuntimeError(f"inconsistent tensor size, expected tensor [{self.shape[0]}] and src "
                               f"[{other.shape[0]}] to have the same number of elements, but got "
                               f"{self.shape[0]} and {other.shape[0]} elements respectively")
        return self.matmul(other)

    inner = dot

    def outer(self, other: Tensor) -> Tensor:
        return self.reshape(-1, 1) * other.reshape(1, -1)

    ger = outer

    # ---- in-place ------------------------------------------------------------------------------
    def _inplace(self, compute: Any, *others: Any) -> Tensor:
        """Run ``compute(self)`` and store the result in self's storage, as PyTorch's in-place ops:
        the tensor takes the result's place in the graph and its version counter is bumped."""
        graph = _enabled.get() and (self.requires_grad or any(isinstance(o, Tensor) and o.requires_grad for o in others))
        if graph and self.requires_grad and self._grad_fn is None:
            raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
        if graph:
            # the op reads the old value through a copy that keeps self's place in the graph
            old = Tensor._make(B.copy(self._data))
            old.requires_grad, old._grad_fn = self.requires_grad, self._grad_fn
            r = compute(old)
        else:
            with no_grad():
                r = compute(self)
        if r._data.shape != self._data.shape:
            raise RuntimeError(f"output with shape {list(self.shape)} doesn't match the broadcast shape {list(r.shape)}")
        if r._data.dtype != self._data.dtype and not np.can_cast(r._data.dtype, self._data.dtype, "same_kind"):
            raise RuntimeError(f"result type {r.dtype.name.capitalize()} can't be cast to the desired output type "
                               f"{self.dtype.name.capitalize()}")
        if r._data is not self._data:
            B.copyto(self._data, r._data, casting="unsafe")
        _bump(self)
        if graph:
            self._grad_fn, self.requires_grad = r._grad_fn, r.requires_grad
        return self

    def add_(self, other: Any, *, alpha: Number = 1) -> Tensor:
        if self._axpy_(other, alpha):
            return self
        return self._inplace(lambda s: s.add(other, alpha=alpha), other)

    def sub_(self, other: Any, *, alpha: Number = 1) -> Tensor:
        if isinstance(alpha, builtins.int | builtins.float) and self._axpy_(other, -alpha):
            return self
        return self._inplace(lambda s: s.sub(other, alpha=alpha), other)

    def _axpy_(self, other: Any, alpha: Any) -> builtins.bool:
        """self += alpha * other straight into self's storage when no graph is recorded and both
        are float tensors of one shape and dtype (every optimizer update): one temporary instead
        of three arrays and a copy. False when that does not apply."""
        if not (isinstance(other, Tensor) and isinstance(alpha, builtins.int | builtins.float)):
            return False
        d, o = self._data, other._data
        if d.dtype != o.dtype or d.dtype.kind != "f" or d.shape != o.shape or not d.flags.writeable:
            return False
        if _enabled.get() and (self.requires_grad or other.requires_grad):
            return False
        for m in (self._mem, other._mem):
            if m is not None and not m[0]:
                raise reclaimed_error(m)
        if alpha == 1:
            B.iadd(d, o)
        else:
            B.axpy_(d, o, alpha)
        _bump(self)
        return True

    def mul_(self, other: Any) -> Tensor:
        return self._inplace(lambda s: s * other, other)

    def div_(self, other: Any, *, rounding_mode: str | None = None) -> Tensor:
        return self._inplace(lambda s: s.div(other, rounding_mode=rounding_mode), other)

    def pow_(self, e: Any) -> Tensor:
        return self._inplace(lambda s: s ** e, e)

    def neg_(self) -> Tensor:
        return self._inplace(lambda s: -s)

    def abs_(self) -> Tensor:
        return self._inplace(lambda s: s.abs())

    def exp_(self) -> Tensor:
        return self._inplace(lambda s: s.exp())

    def log_(self) -> Tensor:
        return self._inplace(lambda s: s.log())

    def sqrt_(self) -> Tensor:
        return self._inplace(lambda s: s.sqrt())

    def sigmoid_(self) -> Tensor:
        return self._inplace(lambda s: s.sigmoid())

    def tanh_(self) -> Tensor:
        return self._inplace(lambda s: s.tanh())

    def relu_(self) -> Tensor:
        return self._inplace(lambda s: s.relu())

    def clamp_(self, min: Any = None, max: Any = None) -> Tensor:  # noqa: A002
        return self._inplace(lambda s: s.clamp(min, max), min, max)

    clip_ = clamp_

    def masked_fill_(self, mask: Any, value: Any) -> Tensor:
        return self._inplace(lambda s: s.masked_fill(mask, value), value)

    def addcmul_(self, t1: Tensor, t2: Tensor, *, value: Number = 1) -> Tensor:
        return self._inplace(lambda s: s + t1 * t2 * value, t1, t2)

    def addcdiv_(self, t1: Tensor, t2: Tensor, *, value: Number = 1) -> Tensor:
        return self._inplace(lambda s: s + t1 / t2 * value, t1, t2)

    def lerp_(self, end: Any, weight: Any) -> Tensor:
        return self._inplace(lambda s: s.lerp(end, weight), end, weight)

    def scatter_(self, dim: builtins.int, index: Tensor, src: Any = None, *, value: Any = None,
                 reduce: str | None = None) -> Tensor:
        return self._inplace(lambda s: s.scatter(dim, index, src, value=value, reduce=reduce), src)

    def scatter_add_(self, dim: builtins.int, index: Tensor, src: Tensor) -> Tensor:
        return self._inplace(lambda s: s.scatter_add(dim, index, src), src)

    def zero_(self) -> Tensor:
        return self.fill_(0)

    def fill_(self, value: Any) -> Tensor:
        if isinstance(value, Tensor) and value.requires_grad:
            return self._inplace(lambda s: s * 0 + value, value)
        self._check_leaf_inplace()
        B.copyto(self._data, _scalar_of(value), casting="unsafe")
        _bump(self)
        return self

    def copy_(self, src: Any, non_blocking: builtins.bool = False) -> Tensor:
        """Copy ``src`` (broadcast, cast to self's dtype) into self's storage."""
        s = _as_tensor(src, self)
        try:
            np.broadcast_shapes(s.shape, self.shape)
        except ValueError:
            raise RuntimeError(f"The size of tensor a ({self.shape[-1] if self.ndim else 1}) must match the size of "
                               f"tensor b ({s.shape[-1] if s.ndim else 1}): copy_ from shape {list(s.shape)} "
                               f"to {list(self.shape)}") from None
        return self._inplace(lambda t: s.to(self.dtype).expand(self.shape) + t * 0
                             if s.requires_grad or t.requires_grad else
                             Tensor._make(B.cast(B.broadcast_to(s._data, self.shape), self._data.dtype)), s)

    def _check_leaf_inplace(self) -> None:
        if self.requires_grad and self._grad_fn is None and _enabled.get():
            raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")

    def uniform_(self, a: builtins.float = 0.0, b: builtins.float = 1.0, *, generator: Any = None) -> Tensor:
        from .random import _gen
        self._check_leaf_inplace()
        self._data[...] = _gen(generator).uniform(a, b, self.shape)
        _bump(self)
        return self

    def normal_(self, mean: builtins.float = 0.0, std: builtins.float = 1.0, *, generator: Any = None) -> Tensor:
        from .random import _gen
        self._check_leaf_inplace()
        self._data[...] = _gen(generator).normal(mean, std, self.shape)
        _bump(self)
        return self

    def bernoulli_(self, p: builtins.float = 0.5, *, generator: Any = None) -> Tensor:
        from .random import _gen
        self._check_leaf_inplace()
        self._data[...] = _gen(generator).random(self.shape) < p
        _bump(self)
        return self

    def exponential_(self, lambd: builtins.float = 1.0, *, generator: Any = None) -> Tensor:
        from .random import _gen
        self._data[...] = _gen(generator).exponential(1.0 / lambd, self.shape)
        _bump(self)
        return self

    def random_(self, low: builtins.int = 0, high: builtins.int | None = None, *, generator: Any = None) -> Tensor:
        from .random import _gen
        if high is None:
            low, high = 0, low if low else 2 ** 24
        self._data[...] = _gen(generator).integers(low, high, self.shape)
        _bump(self)
        return self

    def __iadd__(self, o: Any) -> Tensor:
        return self.add_(o)

    def __isub__(self, o: Any) -> Tensor:
        return self.sub_(o)

    def __imul__(self, o: Any) -> Tensor:
        return self.mul_(o)

    def __itruediv__(self, o: Any) -> Tensor:
        return self.div_(o)

    def __ipow__(self, o: Any) -> Tensor:
        return self.pow_(o)

    # ---- creation helpers as methods -----------------------------------------------------------
    def new_zeros(self, *size: Any, dtype: Any = None, device: Any = None, requires_grad: builtins.bool = False) -> Tensor:
        return zeros(*size, dtype=dtype or self.dtype, requires_grad=requires_grad)

    def new_ones(self, *size: Any, dtype: Any = None, device: Any = None, requires_grad: builtins.bool = False) -> Tensor:
        return ones(*size, dtype=dtype or self.dtype, requires_grad=requires_grad)

    def new_full(self, size: Any, fill_value: Any, *, dtype: Any = None, device: Any = None,
                 requires_grad: builtins.bool = False) -> Tensor:
        return full(size, fill_value, dtype=dtype or self.dtype, requires_grad=requires_grad)

    def new_empty(self, *size: Any, dtype: Any = None, device: Any = None, requires_grad: builtins.bool = False) -> Tensor:
        return empty(*size, dtype=dtype or self.dtype, requires_grad=requires_grad)

    def new_tensor(self, data: Any, dtype: Any = None, device: Any = None, requires_grad: builtins.bool = False) -> Tensor:
        return tensor(data, dtype=dtype or self.dtype, requires_grad=requires_grad)

    def type_as(self, other: Tensor) -> Tensor:
        return self.to(other.dtype)

    def apply_(self, fn: Any) -> Tensor:
        self._data[...] = np.vectorize(fn)(self._data)
        return self

    def pin_memory(self) -> Tensor:
        return self

    def share_memory_(self) -> Tensor:
        return self


_STAMP = [0]  # counts in-place modifications anywhere: saved tensors need checking only if it moved


def _bump(t: Tensor) -> None:
    """Record an in-place modification of t (its version counter is shared with its views)."""
    _STAMP[0] += 1
    v = t._version
    v[0] += 1
    v[1] = _STAMP[0]


def _rebuild(data: np.ndarray, requires_grad: builtins.bool) -> Tensor:
    t = Tensor._make(data)
    t.requires_grad = requires_grad
    return t


# ---- conversion helpers ------------------------------------------------------------------------

def _to_array(data: Any, dtype: Any) -> np.ndarray:
    """A fresh array for ``tensor(data)``: PyTorch's default dtypes, unsupported kinds refused."""
    dt = D.to_dtype(dtype).np if dtype is not None else None
    if isinstance(data, Tensor):
        arr = data._data.copy()
    elif isinstance(data, np.ndarray):
        arr = np.array(data, copy=True)
    else:
        if isinstance(data, list | tuple) and data and any(isinstance(d, Tensor) for d in _flat(data)):
            data = _nested_tolist(data)
        arr = np.array(data)
        # NumPy scalars keep their dtype, as in PyTorch; Python numbers take PyTorch's defaults
        numpy_scalars = isinstance(data, np.generic) or (
            isinstance(data, list | tuple) and data and all(isinstance(d, np.generic) for d in _flat(data)))
        if dt is None and not numpy_scalars:
            if arr.dtype.kind == "f":
                dt = D.get_default_dtype().np
            elif arr.dtype.kind in "iu":
                dt = np.dtype(np.int64)
            elif arr.dtype.kind == "O" or arr.dtype.kind in "USV":
                raise TypeError(f"can't convert {type(data).__name__} of {arr.dtype} to a tensor; "
                                "expected numbers, nested lists of numbers, or an array")
    if dt is not None and arr.dtype != dt:
        arr = arr.astype(dt)
    D.from_numpy_dtype(arr.dtype)  # refuses unsupported dtypes (complex, strings, objects)
    return arr


def _flat(xs: Any) -> Iterator[Any]:
    for x in xs:
        if isinstance(x, list | tuple):
            yield from _flat(x)
        else:
            yield x


def _nested_tolist(xs: Any) -> Any:
    if isinstance(xs, Tensor):
        return xs._data.tolist()
    if isinstance(xs, list | tuple):
        return [_nested_tolist(x) for x in xs]
    return xs


def _as_tensor(x: Any, like: Tensor | None = None) -> Tensor:
    """x as a Tensor (no copy for Tensors; Python numbers take ``like``'s dtype if compatible)."""
    if isinstance(x, Tensor):
        return x
    if isinstance(x, np.ndarray):
        return Tensor._make(x)
    if like is not None and isinstance(x, _SCALARS):
        dt = D.result_type(like, x)
        return Tensor._make(np.asarray(x, dt.np))
    return Tensor(x)


def _raw(x: Any) -> Any:
    return x._data if isinstance(x, Tensor) else x


def _scalar_of(v: Any) -> Any:
    return v.item() if isinstance(v, Tensor) else v


def _floating(x: Tensor) -> Tensor:
    """Integer tensors become the default float dtype for floating ops, as in PyTorch."""
    return x if x._data.dtype.kind == "f" else x.to(D.get_default_dtype())


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
        if isinstance(s, np.generic):
            s = s.item()  # NumPy scalars would not be weak in NumPy's own promotion
        if t._data.dtype.kind in "iub" and isinstance(s, float):
            s = t._data.dtype.type(s)
        return (s, t) if swap else (t, s)
    s = _as_tensor(s)
    return _promote(s, t) if swap else _promote(t, s)


_PY_NUMBERS = (float, int)  # (not bool: True * a float tensor still goes through promotion, as before)

# ---- temporaries ----------------------------------------------------------------------------------
# In ``x * w + b`` NumPy would write the sum into the product's buffer: a temporary that only the
# expression holds (it checks reference counts in C). A Tensor hides its array from that check, so
# the operators make it themselves: an operand that is a large temporary lends its array to the
# result. That saves the allocation and a third of the memory traffic (in place, an elementwise op
# streams two arrays instead of three: 0.31 against 0.48 ms on 1M float32 here). The operand is a
# temporary when the interpreter's stack holds its only reference (counts measured on CPython 3.11-3.13;
# 3.14 may lend stack references without counting them, so elsewhere nothing is reused), its array
# has no other reference and owns its memory (no views of it anywhere), and no backward reads it:
# + and - read no operand, * and / by a Python number read only the number, and no backward runs
# for * and / between tensors when no graph is recorded.
_REUSE_MIN = 1 << 16  # (smaller arrays: the check costs more than it saves; the operators test size first)
_BINARY_OP = (dis.opmap.get("BINARY_OP") if sys.implementation.name == "cpython"
              and (3, 11) <= sys.version_info[:2] <= (3, 13) and getattr(sys, "_is_gil_enabled", lambda: True)()
              else None)  # (nor without the GIL, where another thread may take a reference meanwhile)


def _reusable(t: Tensor, o: Any, tensors: builtins.bool) -> np.ndarray | None:
    """The array of an operand of ``t op o`` (t: the operator's self, which has checked that one is
    large) that may take the result (see above), or None. ``tensors``: whether that may be a
    Tensor's when ``o`` is one (+ and -); * and / take a Tensor's only when no graph is recorded
    (their backward reads the factors), else ``o`` must be a Python number."""
    if _BINARY_OP is None:
        return None
    d = t._data
    if isinstance(o, Tensor):
        od = o._data
        if od.dtype != d.dtype or not tensors and (t.requires_grad or o.requires_grad) and _enabled.get():
            return None
        # t's array if the result has t's shape, else o's if it has o's
        if _fits(od.shape, d.shape) and _lent(t, d):
            a = d
        elif _fits(d.shape, od.shape) and _lent(o, od):
            a = od
        else:
            return None
    elif type(o) in _PY_NUMBERS and d.dtype.kind == "f" and _lent(t, d):
        a = d
    else:
        return None
    f = sys._getframe(2)  # called by the interpreter's operator?
    return a if f.f_code.co_code[f.f_lasti] == _BINARY_OP else None


def _fits(small: tuple[builtins.int, ...], big: tuple[builtins.int, ...]) -> builtins.bool:
    """Whether ``small`` broadcasts to exactly ``big``."""
    return small == big or (len(small) <= len(big) and all(m == n or m == 1 for m, n in zip(reversed(small), reversed(big))))


def _lent(x: Tensor, a: np.ndarray) -> builtins.bool:
    """Whether operand x's array ``a`` may take the result: it owns its memory (views of it would
    hold a reference), is writeable, is not arena storage, x is not a leaf that requires grad, and
    nothing but the expression holds x or a."""
    # references to x: the interpreter's stack, the operator's parameter, _reusable's, ours and
    # getrefcount's argument; to a: x's slot, _reusable's local, ours and the argument
    return (a.base is None and a.flags.writeable and x._mem is None and not (x.requires_grad and x._grad_fn is None)
            and sys.getrefcount(x) == 5 and sys.getrefcount(a) == 4)


def _binary(fn: Any, a: Any, b: Any, floating: builtins.bool = False) -> Tensor:
    if isinstance(a, Tensor):
        ad = a._data
        if isinstance(b, Tensor):
            bd = b._data
            if ad.dtype == bd.dtype and (not floating or ad.dtype.kind == "f"):  # the common case
                if ad.shape != bd.shape:
                    _check_broadcast(ad.shape, bd.shape)
                return fn.apply(a, b)
        elif type(b) in _PY_NUMBERS and ad.dtype.kind == "f":
            return fn.apply(a, b)  # a float tensor and a Python number: the tensor's dtype, no cast
    elif type(a) in _PY_NUMBERS and isinstance(b, Tensor) and b._data.dtype.kind == "f":
        return fn.apply(a, b)
    a, b = _promote(a, b)
    if floating:
        if isinstance(a, Tensor) and a._data.dtype.kind != "f":
            a, b = _promote(a.to(D.get_default_dtype()), b)
        elif isinstance(b, Tensor) and b._data.dtype.kind != "f":
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


def _clamp_bound(x: Tensor, v: Any) -> Any:
    if v is None or isinstance(v, Tensor):
        return v.to(x.dtype) if isinstance(v, Tensor) else None
    return np.asarray(v, x._data.dtype) if x._data.dtype.kind == "f" else v


def _check_nonempty(x: Tensor, axes: tuple[builtins.int, ...] | None, name: str) -> None:
    if x.numel() == 0 and (axes is None or any(x.shape[a] == 0 for a in axes)):
        raise IndexError(f"{name}(): Expected reduction dim to be specified for input.numel() == 0. "
                         "Specify the reduction dim with the 'dim' argument.")


def _int_index(index: Any, op: str) -> np.ndarray:
    ix = _raw(index) if isinstance(index, Tensor) else np.asarray(index)
    if ix.dtype.kind not in "iu":
        raise RuntimeError(f"{op}(): Expected dtype int64 for index, got {D._BY_NP.get(ix.dtype, ix.dtype)}")
    return ix.astype(np.int64, copy=False)


def _check_bounds(ix: np.ndarray, n: builtins.int, d: builtins.int) -> None:
    if ix.size and (ix.max() >= n or ix.min() < -n):
        bad = int(ix.max() if ix.max() >= n else ix.min())
        raise IndexError(f"index {bad} is out of bounds for dimension {d} with size {n}")


def _index(x: Tensor, index: Any) -> tuple[Any, bool]:
    """Translate a PyTorch index to a NumPy one; says whether it is advanced (copying)."""
    items = index if isinstance(index, tuple) else (index,)
    out: list[Any] = []
    advanced = False
    for it in items:
        if isinstance(it, Tensor):
            it = it._data
        elif isinstance(it, list):
            it = np.asarray([i._data if isinstance(i, Tensor) else i for i in it])
            if it.dtype.kind == "f":
                raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
        if isinstance(it, np.ndarray):
            if it.dtype.kind not in "iub":
                raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
            if it.dtype == np.uint8:
                it = it.astype(bool)
            if it.ndim == 0 and it.dtype.kind in "iu":
                it = int(it)
            else:
                advanced = True
        elif isinstance(it, float):
            raise IndexError("only integers, slices (`:`), ellipsis (`...`), None and long or byte "
                             "Variables are valid indices (got float)")
        elif not (it is None or it is Ellipsis or isinstance(it, int | slice | np.integer)):
            raise IndexError(f"only integers, slices (`:`), ellipsis (`...`), None and long or byte "
                             f"Variables are valid indices (got {type(it).__name__})")
        if isinstance(it, slice) and it.step is not None and it.step <= 0:
            raise ValueError("step must be greater than zero")
        out.append(it)
    nd = sum(1 for it in out if it is not None and it is not Ellipsis
             and not (isinstance(it, np.ndarray) and it.dtype == bool)) + sum(
        it.ndim for it in out if isinstance(it, np.ndarray) and it.dtype == bool)
    if nd > x.ndim:
        raise IndexError(f"too many indices for tensor of dimension {x.ndim}")
    return (tuple(out) if isinstance(index, tuple) or len(out) != 1 else out[0]), advanced


# ---- free functions that are not methods -------------------------------------------------------

def where(condition: Any, input: Any = None, other: Any = None) -> Any:  # noqa: A002
    """``where(c, a, b)`` picks a where c is True, else b; ``where(c)`` is ``c.nonzero(as_tuple=True)``."""
    c = _as_tensor(condition)
    if input is None and other is None:
        return c.nonzero(as_tuple=True)
    if c._data.dtype != np.bool_:
        raise RuntimeError(f"where expected condition to be a boolean tensor, but got a tensor with dtype {c.dtype}")
    a, b = input, other
    if isinstance(a, np.ndarray) and a.ndim == 0:
        a = a.item()
    if isinstance(b, np.ndarray) and b.ndim == 0:
        b = b.item()
    if not isinstance(a, Tensor) and not isinstance(b, Tensor):
        a = _as_tensor(a)
    a, b = _promote(a, b)
    shapes = [tuple(c.shape)] + [tuple(t.shape) for t in (a, b) if isinstance(t, Tensor)]
    s = shapes[0]
    for sh in shapes[1:]:
        _check_broadcast(s, sh)
        s = tuple(np.broadcast_shapes(s, sh))
    return F.Where.apply(c, a, b)


def cat(tensors: Sequence[Tensor], dim: builtins.int = 0) -> Tensor:
    """Concatenate along an existing dim: ``cat([a, b], dim=1)``."""
    ts = [t for t in tensors if not (t.ndim == 1 and t.shape[0] == 0)] or list(tensors)[:1]
    if not ts:
        raise RuntimeError("torch.cat(): expected a non-empty list of Tensors")
    d = _dim(dim, ts[0].ndim)
    for i, t in enumerate(ts):
        if t.ndim != ts[0].ndim:
            raise RuntimeError(f"Tensors must have same number of dimensions: got {ts[0].ndim} and {t.ndim}")
        for j in range(t.ndim):
            if j != d and t.shape[j] != ts[0].shape[j]:
                raise RuntimeError(f"Sizes of tensors must match except in dimension {d}. Expected size "
                                   f"{ts[0].shape[j]} but got size {t.shape[j]} for tensor number {i} in the list.")
    dt = D.result_type(*ts) if len({t._data.dtype for t in ts}) > 1 else None
    if dt is not None:
        ts = [t.to(dt) for t in ts]
    if len(ts) == 1:
        return ts[0]
    return F.Cat.apply(*ts, dim=d)


concat = concatenate = cat


def stack(tensors: Sequence[Tensor], dim: builtins.int = 0) -> Tensor:
    """Join along a new dim: ``stack([a, b])`` has shape (2, *a.shape)."""
    ts = list(tensors)
    if not ts:
        raise RuntimeError("stack expects a non-empty TensorList")
    for i, t in enumerate(ts):
        if t.shape != ts[0].shape:
            raise RuntimeError(f"stack expects each tensor to be equal size, but got {list(ts[0].shape)} at "
                               f"entry 0 and {list(t.shape)} at entry {i}")
    d = _dim(dim, ts[0].ndim + 1)
    if not (_enabled.get() and any(t.requires_grad for t in ts)) and len({t._data.dtype for t in ts}) == 1:
        return Tensor._make(B.stack([t._data for t in ts], d))  # no graph: one NumPy call
    return cat([t.unsqueeze(d) for t in ts], d)


def einsum(equation: str, *operands: Any) -> Tensor:
    """Einstein summation, e.g. ``einsum('bij,bjk->bik', a, b)``; '...' is supported."""
    ops = list(operands[0]) if len(operands) == 1 and isinstance(operands[0], list | tuple) else list(operands)
    ops = [_as_tensor(o) for o in ops]
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    ins = lhs.split(",")
    if len(ins) != len(ops):
        raise RuntimeError("einsum(): more operands were provided than specified in the equation"
                           if len(ops) > len(ins) else "einsum(): fewer operands were provided than specified in the equation")
    used = set(eq)
    spare = iter(c for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz" if c not in used)
    nell = max((o.ndim - (len(s) - 3) for s, o in zip(ins, ops) if "..." in s), default=0)
    ell = "".join(next(spare) for _ in range(nell))
    ins = [s.replace("...", ell[len(ell) - (o.ndim - (len(s) - 3)):]) if "..." in s else s for s, o in zip(ins, ops)]
    for s, o in zip(ins, ops):
        if len(s) != o.ndim:
            raise RuntimeError(f"einsum(): the number of subscripts in the equation ({len(s)}) does not match "
                               f"the number of dimensions ({o.ndim}) for operand {ins.index(s)}")
    if arrow:
        out = rhs.replace("...", ell)
    else:
        counts: dict[str, int] = {}
        for s in ins:
            for ch in s:
                counts[ch] = counts.get(ch, 0) + 1
        out = ell + "".join(sorted(c for c, n in counts.items() if n == 1 and c not in ell))
    dt = D.result_type(*ops)
    return F.Einsum.apply(*[o.to(dt) for o in ops], ins=tuple(ins), out=out)


# ---- creation ----------------------------------------------------------------------------------

def _check_device(device: Any) -> None:
    if device is not None:
        from .device import device as _device
        _device(device)


def _new(arr: np.ndarray, requires_grad: builtins.bool, heap: builtins.bool = False) -> Tensor:
    t = Tensor._make(arr)
    if heap:
        t._mem = None  # the array came from the heap (a copy or the caller's), not an arena
    if requires_grad:
        t.requires_grad_(True)
    return t


def tensor(data: Any, dtype: Any = None, device: Any = None, requires_grad: builtins.bool = False,
           pin_memory: builtins.bool = False) -> Tensor:
    """A new tensor copying ``data``: ``tensor([[1., 2.], [3., 4.]])``."""
    _check_device(device)
    return _new(_to_array(data, dtype), requires_grad, heap=True)


def as_tensor(data: Any, dtype: Any = None, device: Any = None) -> Tensor:
    """Like ``tensor`` but shares memory with a Tensor or array when no conversion is needed."""
    _check_device(device)
    if isinstance(data, Tensor):
        return data if dtype is None else data.to(dtype)
    if isinstance(data, np.ndarray):
        D.from_numpy_dtype(data.dtype)
        if dtype is None or D.to_dtype(dtype).np == data.dtype:
            return _new(data, False, heap=True)
    return tensor(data, dtype)


def from_numpy(a: np.ndarray) -> Tensor:
    """A tensor sharing memory with the NumPy array ``a``."""
    if not isinstance(a, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(a).__name__})")
    D.from_numpy_dtype(a.dtype)
    return _new(a, False, heap=True)


def from_dlpack(ext: Any) -> Tensor:
    """A tensor sharing memory with any object exporting ``__dlpack__``."""
    if isinstance(ext, Tensor):
        return ext
    return from_numpy(np.from_dlpack(ext))


def _fill(size: tuple[Any, ...], value: Any, dtype: Any, requires_grad: builtins.bool, device: Any) -> Tensor:
    _check_device(device)
    shape = _shape_arg(size)
    if dtype is None:
        dt = D.scalar_dtype(value) if value is not None else D.get_default_dtype()
    else:
        dt = D.to_dtype(dtype)
    arr = B.empty(shape, dt.np)
    if value is not None:
        arr.fill(value)
    return _new(arr, requires_grad)


def zeros(*size: Any, dtype: Any = None, device: Any = None, requires_grad: builtins.bool = False, out: Any = None) -> Tensor:
    """``zeros(2, 3)``: a float32 tensor of zeros."""
    return _fill(size, 0.0, dtype, requires_grad, device)


def ones(*size: Any, dtype: Any = None, device: Any = None, requires_grad: builtins.bool = False, out: Any = None) -> Tensor:
    return _fill(size, 1.0, dtype, requires_grad, device)


def empty(*size: Any, dtype: Any = None, device: Any = None, requires_grad: builtins.bool = False, **kw: Any) -> Tensor:
    return _fill(size, None, dtype, requires_grad, device)


def full(size: Any, fill_value: Any, *, dtype: Any = None, device: Any = None, requires_grad: builtins.bool = False) -> Tensor:
    """``full((2, 2), 7)`` is an int64 tensor of sevens (dtype follows the value)."""
    return _fill((size,) if isinstance(size, int) else tuple(size), _scalar_of(fill_value), dtype, requires_grad, device)


def _like(x: Tensor, value: Any, dtype: Any, requires_grad: builtins.bool) -> Tensor:
    return _fill(x.shape, value, dtype or x.dtype, requires_grad, None)


def zeros_like(x: Tensor, *, dtype: Any = None, device: Any = None, requires_grad: builtins.bool = False, **kw: Any) -> Tensor:
    return _like(x, 0, dtype, requires_grad)


def ones_like(x: Tensor, *, dtype: Any = None, device: Any = None, requires_grad: builtins.bool = False, **kw: Any) -> Tensor:
    return _like(x, 1, dtype, requires_grad)


def empty_like(x: Tensor, *, dtype: Any = None, device: Any = None, requires_grad: builtins.bool = False, **kw: Any) -> Tensor:
    return _like(x, None, dtype, requires_grad)


def full_like(x: Tensor, fill_value: Any, *, dtype: Any = None, device: Any = None,
              requires_grad: builtins.bool = False, **kw: Any) -> Tensor:
    return _like(x, fill_value, dtype, requires_grad)


def arange(start: Number, end: Number | None = None, step: Number = 1, *, dtype: Any = None,
           device: Any = None, requires_grad: builtins.bool = False) -> Tensor:
    """``arange(5)`` is int64 0..4; a float bound or step gives the default float dtype."""
    _check_device(device)
    if end is None:
        start, end = 0, start
    start, end, step = (_scalar_of(v) for v in (start, end, step))
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if dtype is None:
        dt = D.int64 if all(isinstance(v, int) for v in (start, end, step)) else D.get_default_dtype()
    else:
        dt = D.to_dtype(dtype)
    return _new(B.arange(start, end, step, dtype=np.float64 if dt.is_floating_point else None).astype(dt.np), requires_grad)


def linspace(start: builtins.float, end: builtins.float, steps: builtins.int, *, dtype: Any = None, device: Any = None,
             requires_grad: builtins.bool = False) -> Tensor:
    _check_device(device)
    dt = D.to_dtype(dtype) if dtype is not None else D.get_default_dtype()
    return _new(B.linspace(_scalar_of(start), _scalar_of(end), steps).astype(dt.np), requires_grad)


def logspace(start: builtins.float, end: builtins.float, steps: builtins.int, base: builtins.float = 10.0, *, dtype: Any = None,
             device: Any = None, requires_grad: builtins.bool = False) -> Tensor:
    dt = D.to_dtype(dtype) if dtype is not None else D.get_default_dtype()
    return _new(np.logspace(start, end, steps, base=base).astype(dt.np), requires_grad)


def eye(n: builtins.int, m: builtins.int | None = None, *, dtype: Any = None, device: Any = None,
        requires_grad: builtins.bool = False) -> Tensor:
    _check_device(device)
    dt = D.to_dtype(dtype) if dtype is not None else D.get_default_dtype()
    return _new(B.eye(n, m, dtype=dt.np), requires_grad)


from . import function as F  # noqa: E402  (primitives import Tensor from here)
from .engine import run_backward  # noqa: E402, F401
