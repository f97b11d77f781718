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
from .autograd import _enabled, _recording, is_grad_enabled, no_grad, not_differentiable_twice
from .memory import _STAMP  # counts in-place modifications anywhere (and arena resets): see memory
from .memory import _current as _arena
from .memory import empty as _alloc
from .memory import home as _home
from .memory import reclaimed_error

Number = int | builtins.float | builtins.bool
_SCALARS = (int, float, bool, np.generic)
values_indices = namedtuple("values_indices", ["values", "indices"])


class Size(tuple):
    """A shape, as ``torch.Size``: a tuple with ``numel()``; sums and repeats stay Sizes."""

    def numel(self) -> builtins.int:
        return math.prod(self)

    def __add__(self, other: Any) -> Any:
        r = tuple.__add__(self, other)
        return r if r is NotImplemented else Size(r)

    def __radd__(self, other: Any) -> Any:
        return Size(tuple(other) + tuple(self)) if isinstance(other, tuple) else NotImplemented

    def __mul__(self, n: Any) -> Any:
        r = tuple.__mul__(self, n)
        return r if r is NotImplemented else Size(r)

    __rmul__ = __mul__
    # (a slice is a plain tuple, unlike torch's: a __getitem__ in Python makes every shape[i] 10x slower)

    def __repr__(self) -> str:
        return f"lightgrad.Size({list(self)})"


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
    are 0 and -1 (checked all the same)."""
    if dim is None:
        return None
    if isinstance(dim, int | np.integer):
        d = _dim(int(dim), ndim)
        return (d,) if ndim else ()
    out = tuple(_dim(d, ndim) for d in dim)
    if len(set(out)) != len(out):
        raise RuntimeError(f"dim {next(d for i, d in enumerate(out) if d in out[:i])} appears multiple times "
                           "in the list of dims")
    return out if ndim else ()


def _shape_arg(shape: tuple[Any, ...]) -> tuple[builtins.int, ...]:
    """Accept ``f(2, 3)``, ``f((2, 3))`` and ``f([2, 3])`` like PyTorch."""
    if len(shape) == 1 and isinstance(shape[0], Sequence | np.ndarray):
        shape = tuple(shape[0])
    return tuple(int(s) for s in shape)


def _check_reshape(s: tuple[builtins.int, ...], n: builtins.int) -> None:
    """Raise PyTorch's error where shape ``s`` (one size may be -1) cannot hold ``n`` elements."""
    for i, d in enumerate(s):
        if d < -1:
            raise RuntimeError(f"invalid shape dimension {d} at index {i} of shape {list(s)}")
    if s.count(-1) > 1:
        raise RuntimeError("only one dimension can be inferred")
    known = math.prod(d for d in s if d != -1)
    if (-1 in s and (known == 0 or n % known)) or (-1 not in s and known != n):
        raise RuntimeError(f"shape '{list(s)}' is invalid for input of size {n}")


class Tensor:
    """An n-dimensional array with reverse-mode autograd, like ``torch.Tensor``.

    >>> x = lightgrad.tensor([1.0, 2.0], requires_grad=True); (x * x).sum().backward(); x.grad
    tensor([2., 4.])
    """

    # the gradient lives in `_grad`, behind the checked `grad` property; internal writers that make a
    # gradient of the right shape and dtype by construction may set `_grad` directly
    # the array lives in `_arr`, behind the checked `_data` property (see memory.home for `_mem`)
    __slots__ = ("_arr", "requires_grad", "_grad", "_grad_fn", "_version", "_mem", "__weakref__", "__dict__")
    _view: tuple[Tensor, Any]  # (base, index) on a view made by basic indexing or diagonal(): see _bump
    __array_priority__ = 1000  # ndarray op Tensor defers to Tensor's reflected operator
    _grad_buf: Any = None  # an optimizer's flat-buffer slice that receives this leaf's gradient

    def __init__(self, data: Any = None, *, dtype: Any = None, requires_grad: builtins.bool = False) -> None:
        arr = _to_array(data if data is not None else [], dtype)
        self._arr = arr
        self.requires_grad = bool(requires_grad)
        self._grad: Tensor | None = None
        self._grad_fn: Any = None
        self._version = [0, 0]  # [in-place modifications, stamp of the last one]
        self._mem = _home(arr)  # None on the heap; the liveness token of an arena's bytes

    @classmethod
    def _make(cls, data: np.ndarray) -> Tensor:
        """Wrap an array without copying or checking (the hot path of every op)."""
        t = object.__new__(Tensor)
        # NumPy returns 0-d results as scalars; a tensor always holds an array (in-place ops, views)
        t._arr = arr = data if type(data) is np.ndarray else np.asarray(data)
        t.requires_grad = False
        t._grad = None
        t._grad_fn = None
        t._version = [0, 0]
        b = arr.base  # (an array that owns its bytes, or a view of one, is the heap's: memory.home)
        t._mem = None if b is None or type(b) is np.ndarray and b.base is None else _home(arr)
        return t

    # The one way to a tensor's storage: every read or write of the array goes through here (or
    # checks _mem itself before touching _arr), so a tensor, or any view of it, whose arena was
    # reset raises instead of reading or writing the bytes' new occupant (memory.home).
    @property
    def _data(self) -> np.ndarray:
        m = self._mem
        if m is not None and not m[0]:
            raise reclaimed_error(m)
        return self._arr

    @_data.setter
    def _data(self, arr: np.ndarray) -> None:  # new storage: its token comes with it
        self._arr = arr
        self._mem = None if arr.base is None else _home(arr)

    # ---- attributes ----------------------------------------------------------------------------
    @property
    def shape(self) -> Size:
        return Size(self._arr.shape)

    def size(self, dim: builtins.int | None = None) -> Any:
        """``x.size()`` is the shape; ``x.size(0)`` one of its sizes."""
        if dim is None:
            return Size(self._arr.shape)
        return self._arr.shape[_dim(dim, self._arr.ndim, scalar=False)]

    @property
    def dtype(self) -> D.dtype:
        return D._BY_NP[self._arr.dtype]

    @property
    def device(self) -> Any:
        from .device import _CPU
        return _CPU

    @property
    def is_cuda(self) -> builtins.bool:
        return False

    @property
    def ndim(self) -> builtins.int:
        return self._arr.ndim

    def dim(self) -> builtins.int:
        return self._arr.ndim

    ndimension = dim

    def numel(self) -> builtins.int:
        return self._arr.size

    nelement = numel

    def element_size(self) -> builtins.int:
        return self._arr.itemsize

    @property
    def itemsize(self) -> builtins.int:
        return self._arr.itemsize

    @property
    def nbytes(self) -> builtins.int:
        return self._arr.nbytes

    def is_floating_point(self) -> builtins.bool:
        return self._arr.dtype.kind == "f"

    def is_contiguous(self) -> builtins.bool:
        return bool(self._arr.flags.c_contiguous)

    def stride(self, dim: builtins.int | None = None) -> Any:
        st = tuple(s // self._arr.itemsize for s in self._arr.strides)
        return st if dim is None else st[_dim(dim, self.ndim, scalar=False)]

    def data_ptr(self) -> builtins.int:
        return int(self._arr.__array_interface__["data"][0])

    @property
    def grad(self) -> Tensor | None:
        """The gradient backward accumulated here (None until then); assignable, as in PyTorch."""
        return self._grad

    @grad.setter
    def grad(self, value: Tensor | None) -> None:
        # PyTorch's checks and messages (THPVariable_set_grad); its message goes on to advise setting
        # `grad_dtype`, which lightgrad does not have, so that part is left out
        if value is not None:
            if not isinstance(value, Tensor):
                kind = type(value)  # named as PyTorch names it: 'list', 'numpy.ndarray'
                name = kind.__name__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__name__}"
                raise TypeError(f"assigned grad expected to be a Tensor or None but got grad of type {name}")
            if value is self:
                raise RuntimeError("can't assign Variable as its own grad")
            got, own = value._data, self._data
            if got.dtype != own.dtype:
                # PyTorch names the gradient's dtype as C++ does and the tensor's by its ScalarType
                g_name, t_name = got.dtype.name, own.dtype.name
                raise RuntimeError(f"attempting to assign a gradient with dtype '{D.CPP_NAMES.get(g_name, g_name)}' "
                                   f"to a tensor with grad_dtype '{D.SCALAR_NAMES.get(t_name, t_name)}'. The gradient must "
                                   "match the tensor's grad_dtype (defaults to the tensor's dtype).")
            if got.shape != own.shape:
                raise RuntimeError(f"attempting to assign a gradient of size '{list(got.shape)}' to a tensor of "
                                   f"size '{list(own.shape)}'. Please ensure that the gradient and the tensor "
                                   "are the same size")
        self._grad = value

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
        """The array, after checking that an arena reset has not reclaimed it (as ``_data`` does)."""
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
        """The underlying array (shared memory); refuses when grad is required, like PyTorch.

        The array is not checked afterwards: for a tensor made in an arena it is valid until that
        arena's ``reset()``, after which it shows the bytes' next occupant (copy it, or ``clone()``
        the tensor outside the arena, to keep it)."""
        self._live()
        if self.requires_grad and not force:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. "
                               "Use tensor.detach().numpy() instead.")
        return self._data if not force else self._data.copy()

    def __array__(self, dtype: Any = None, copy: builtins.bool | None = None) -> np.ndarray:
        a = self._live()
        if self.requires_grad and _recording.get() is not None:
            raise not_differentiable_twice("np.asarray")
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
            return f"torch.{_SCALAR_TYPE[self.dtype.name]}Tensor"
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
        if not self._arr.ndim:  # (metadata: the storage is not read)
            raise TypeError("len() of a 0-d tensor")
        return self._arr.shape[0]

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
        if self._arr.size >= _REUSE_MIN or isinstance(o, Tensor) and o._arr.size >= _REUSE_MIN:
            out = _reusable(self, o, True)
            if out is not None:
                return F.Add.apply(self, o, out=out)
        return _binary(F.Add, self, o)

    def __radd__(self, o: Any) -> Tensor:
        if self._arr.size >= _REUSE_MIN:  # (o is a number: a Tensor's own operator ran first)
            out = _reusable(self, o, True)
            if out is not None:
                return F.Add.apply(o, self, out=out)
        return _binary(F.Add, o, self)

    def __sub__(self, o: Any) -> Tensor:
        if self._arr.size >= _REUSE_MIN or isinstance(o, Tensor) and o._arr.size >= _REUSE_MIN:
            out = _reusable(self, o, True)
            if out is not None:
                return F.Sub.apply(self, o, out=out)
        return _binary(F.Sub, self, o)

    def __rsub__(self, o: Any) -> Tensor:
        if self._arr.size >= _REUSE_MIN:  # (o is a number: a Tensor's own operator ran first)
            out = _reusable(self, o, True)
            if out is not None:
                return F.Sub.apply(o, self, out=out)
        return _binary(F.Sub, o, self)

    def __mul__(self, o: Any) -> Tensor:
        if self._arr.size >= _REUSE_MIN or isinstance(o, Tensor) and o._arr.size >= _REUSE_MIN:
            out = _reusable(self, o, False)
            if out is not None:
                return F.Mul.apply(self, o, out=out)
        return _binary(F.Mul, self, o)

    def __rmul__(self, o: Any) -> Tensor:
        if self._arr.size >= _REUSE_MIN:
            out = _reusable(self, o, False)
            if out is not None:
                return F.Mul.apply(o, self, out=out)
        return _binary(F.Mul, o, self)

    def __truediv__(self, o: Any) -> Tensor:
        if self._arr.size >= _REUSE_MIN or isinstance(o, Tensor) and o._arr.size >= _REUSE_MIN:
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
        _check_divisor(self, o)
        return self._nograd_binary(B.floor_divide, o)

    def __rfloordiv__(self, o: Any) -> Tensor:
        _check_divisor(o, self)
        return _as_tensor(o, self)._nograd_binary(B.floor_divide, self)

    def __mod__(self, o: Any) -> Tensor:
        _check_divisor(self, o)
        return _binary(F.Remainder, self, o)

    def __rmod__(self, o: Any) -> Tensor:
        _check_divisor(o, self)
        return _binary(F.Remainder, o, self)

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

    def _nograd_binary(self, f: Any, o: Any) -> Tensor:
        a, b = _promote(self, o)
        try:
            return Tensor._make(f(a._data, _raw(b)))
        except ValueError:  # shapes that do not broadcast: PyTorch's words, not NumPy's
            if isinstance(b, Tensor):
                _check_broadcast(a._data.shape, b._data.shape)
            raise

    _compare = _nograd_binary

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
        _check_divisor(self, other)
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
        return self ** 2  # one node, whose gradient is 2 x g (x * x would sum two products)

    def floor_divide(self, o: Any) -> Tensor:
        return self // o

    def remainder(self, o: Any) -> Tensor:
        return self % o

    def fmod(self, o: Any) -> Tensor:
        _check_divisor(self, o)
        return _binary(F.Fmod, self, o)

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
        return _zero_grad(self, B.sign(self._data))

    sgn = sign

    def erf(self) -> Tensor:
        return F.Erf.apply(_floating(self))

    def floor(self) -> Tensor:
        return _zero_grad(self, B.floor(self._data))

    def ceil(self) -> Tensor:
        return _zero_grad(self, B.ceil(self._data))

    def round(self, decimals: builtins.int = 0) -> Tensor:
        if self._data.dtype.kind in "iu":
            return Tensor._make(B.copy(self._data))  # integers are already round (np.rint would give float64)
        if decimals:
            s = 10.0 ** decimals
            return _zero_grad(self, B.divide(B.round_(B.multiply(self._data, s)), s).astype(self._data.dtype))
        return _zero_grad(self, B.round_(self._data))

    def trunc(self) -> Tensor:
        return _zero_grad(self, B.trunc(self._data))

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

    # ---- more math, BLAS-style and shape ops (compat) -------------------------------------------
    def asin(self) -> Tensor:
        """Inverse sine, elementwise: ``lightgrad.tensor([0.5]).asin()`` is ``tensor([0.5236])``."""
        return F.Asin.apply(_floating(self))

    def acos(self) -> Tensor:
        return F.Acos.apply(_floating(self))

    def atan(self) -> Tensor:
        return F.Atan.apply(_floating(self))

    def asinh(self) -> Tensor:
        return F.Asinh.apply(_floating(self))

    def acosh(self) -> Tensor:
        return F.Acosh.apply(_floating(self))

    def atanh(self) -> Tensor:
        return F.Atanh.apply(_floating(self))

    def atan2(self, other: Any) -> Tensor:
        """Angle of (other, self) in (-pi, pi]: ``torch.atan2(y, x)``."""
        return _binary(F.Atan2, self, other, floating=True)

    arcsin, arccos, arctan, arcsinh, arccosh, arctanh, arctan2 = asin, acos, atan, asinh, acosh, atanh, atan2

    def erfc(self) -> Tensor:
        """1 - erf(x), accurate where erf(x) is near 1: ``tensor([5.]).erfc()`` is 1.5375e-12."""
        return F.Erfc.apply(_floating(self))

    def erfinv(self) -> Tensor:
        """Inverse of erf on [-1, 1]: ``tensor([0.5]).erfinv()`` is ``tensor([0.4769])``."""
        return F.Erfinv.apply(_floating(self))

    def lgamma(self) -> Tensor:
        """log|Gamma(x)|: ``tensor([5.]).lgamma()`` is log(24)."""
        return F.Lgamma.apply(_floating(self))

    def digamma(self) -> Tensor:
        """d/dx lgamma(x): ``tensor([1.]).digamma()`` is -0.5772 (minus Euler's constant)."""
        return F.Digamma.apply(_floating(self))

    def polygamma(self, n: builtins.int) -> Tensor:
        """The n-th derivative of digamma: ``tensor([1.]).polygamma(1)`` is pi^2 / 6."""
        if not isinstance(n, builtins.int) or isinstance(n, builtins.bool):
            raise TypeError(f"polygamma(): argument 'n' (position 1) must be int, not {type(n).__name__}")
        if n < 0:
            raise RuntimeError("polygamma(n, x) does not support negative n.")
        return F.Polygamma.apply(_floating(self), n)

    def logit(self, eps: builtins.float | None = None) -> Tensor:
        """log(p / (1 - p)), p clamped to [eps, 1 - eps] when eps is given."""
        x = _floating(self)
        if eps is not None:
            x = x.clamp(eps, 1 - eps)
        return (x / (1 - x)).log()

    def xlogy(self, other: Any) -> Tensor:
        """x * log(y), 0 where x == 0 (unless y is NaN): ``xlogy(0, 0)`` is 0."""
        x, y = _float_operands(self, other)
        y = _as_tensor(y, x)
        return where((x == 0) & ~y.isnan(), 0.0, x * y.log())

    def logaddexp(self, other: Any) -> Tensor:
        """log(exp(x) + exp(y)) without overflow."""
        x, y = _float_operands(self, other)
        m = x.detach().maximum(y.detach() if isinstance(y, Tensor) else y)
        m = where(m.isinf(), 0.0, m)  # both -inf (or an inf): shift by 0 so that -inf - -inf is no NaN
        return m + ((x - m).exp() + (y - m).exp()).log()

    def logaddexp2(self, other: Any) -> Tensor:
        """log2(2**x + 2**y) without overflow."""
        x, y = _float_operands(self, other)
        return (x * _LN2).logaddexp(y * _LN2) / _LN2

    def hypot(self, other: Any) -> Tensor:
        """sqrt(x**2 + y**2), elementwise."""
        x, y = _float_operands(self, other)
        return F.Hypot.apply(x, _as_tensor(y, x))  # (not sqrt(x*x + y*y): that overflows above ~1.8e19 in float32)

    def nan_to_num(self, nan: builtins.float = 0.0, posinf: builtins.float | None = None,
                   neginf: builtins.float | None = None) -> Tensor:
        """NaN, +inf and -inf replaced (by 0 and the dtype's largest and lowest finite values)."""
        if self._data.dtype.kind != "f":
            return self.clone()
        repl = Tensor._make(B.nan_to_num(self._data, nan=nan, posinf=posinf, neginf=neginf))
        return where(self.isfinite(), self, repl)  # gradient 0 where a value was replaced, as PyTorch

    def fmax(self, other: Tensor) -> Tensor:
        """Elementwise maximum that ignores NaN (NaN only where both are NaN)."""
        x, y = _promote(self, _as_tensor(other, self))
        return where((x >= y) | y.isnan(), x, y)

    def fmin(self, other: Tensor) -> Tensor:
        """Elementwise minimum that ignores NaN (NaN only where both are NaN)."""
        x, y = _promote(self, _as_tensor(other, self))
        return where((x <= y) | y.isnan(), x, y)

    def copysign(self, other: Any) -> Tensor:
        """|x| with the sign (bit) of other: ``tensor([2.]).copysign(-0.0)`` is ``tensor([-2.])``."""
        x, y = _float_operands(self, other)
        yd = y._data if isinstance(y, Tensor) else B.asarray(y, x._data.dtype)
        sign = Tensor._make(B.where(B.signbit(yd), x._data.dtype.type(-1), x._data.dtype.type(1)))
        out = x.abs() * sign
        if isinstance(y, Tensor) and y.requires_grad and _enabled.get():
            return F.ZeroGrad.apply(out, y)  # other's gradient is zero, not None, as PyTorch's
        return out

    def signbit(self) -> Tensor:
        return Tensor._make(B.signbit(self._data))

    def isneginf(self) -> Tensor:
        return Tensor._make(B.isneginf(self._data))

    def isposinf(self) -> Tensor:
        return Tensor._make(B.isposinf(self._data))

    def positive(self) -> Tensor:
        if self._data.dtype == np.bool_:
            raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
        return self

    def float_power(self, exponent: Any) -> Tensor:
        """self ** exponent computed in float64 (the result is always float64)."""
        e = exponent.double() if isinstance(exponent, Tensor) else exponent
        return self.double() ** e

    def heaviside(self, values: Tensor) -> Tensor:
        """Step function: 0 where x < 0, ``values`` where x == 0, 1 where x > 0 (no gradient)."""
        return self._heaviside(values, "heaviside")

    def _heaviside(self, values: Tensor, op: str) -> Tensor:
        v = _as_tensor(values, self)
        if v._data.dtype != self._data.dtype:
            raise RuntimeError(f"heaviside is not yet implemented for tensors with different dtypes: "
                               f"got {self.dtype} and {v.dtype}")
        _check_broadcast(self.shape, v.shape)
        out = B.heaviside(self._data, v._data).astype(self._data.dtype)
        if (self.requires_grad or v.requires_grad) and _enabled.get():
            # requires grad, but backward raises: PyTorch implements no derivative for heaviside
            return F.NotDifferentiable.apply(out, self, v, op=op)
        return Tensor._make(out)

    def sinc(self) -> Tensor:
        """sin(pi x) / (pi x), 1 at 0."""
        x = _floating(self)
        zero = x == 0
        px = where(zero, 1.0, x * math.pi)  # (safe denominator: the gradient at 0 stays 0, not NaN)
        return where(zero, 1.0, px.sin() / px)

    def deg2rad(self) -> Tensor:
        return _floating(self) * (math.pi / 180)

    def rad2deg(self) -> Tensor:
        return _floating(self) * (180 / math.pi)

    def fix(self) -> Tensor:
        return self.trunc()

    def asin_(self) -> Tensor:
        return self._inplace(lambda s: s.asin())

    def acos_(self) -> Tensor:
        return self._inplace(lambda s: s.acos())

    def atan_(self) -> Tensor:
        return self._inplace(lambda s: s.atan())

    def asinh_(self) -> Tensor:
        return self._inplace(lambda s: s.asinh())

    def acosh_(self) -> Tensor:
        return self._inplace(lambda s: s.acosh())

    def atanh_(self) -> Tensor:
        return self._inplace(lambda s: s.atanh())

    def atan2_(self, other: Any) -> Tensor:
        return self._inplace(lambda s: s.atan2(other), other)

    arcsin_, arccos_, arctan_, arcsinh_, arccosh_, arctanh_, arctan2_ = (
        asin_, acos_, atan_, asinh_, acosh_, atanh_, atan2_)

    def erfc_(self) -> Tensor:
        return self._inplace(lambda s: s.erfc())

    def erfinv_(self) -> Tensor:
        return self._inplace(lambda s: s.erfinv())

    def lgamma_(self) -> Tensor:
        return self._inplace(lambda s: s.lgamma())

    def digamma_(self) -> Tensor:
        return self._inplace(lambda s: s.digamma())

    def polygamma_(self, n: builtins.int) -> Tensor:
        return self._inplace(lambda s: s.polygamma(n))

    def logit_(self, eps: builtins.float | None = None) -> Tensor:
        return self._inplace(lambda s: s.logit(eps))

    def xlogy_(self, other: Any) -> Tensor:
        return self._inplace(lambda s: s.xlogy(other), other)

    def hypot_(self, other: Any) -> Tensor:
        return self._inplace(lambda s: s.hypot(other), other)

    def nan_to_num_(self, nan: builtins.float = 0.0, posinf: builtins.float | None = None,
                    neginf: builtins.float | None = None) -> Tensor:
        return self._inplace(lambda s: s.nan_to_num(nan, posinf, neginf))

    def copysign_(self, other: Any) -> Tensor:
        return self._inplace(lambda s: s.copysign(other), other)

    def float_power_(self, exponent: Any) -> Tensor:
        if self._data.dtype != np.float64:
            raise RuntimeError(f"the base given to float_power_ has dtype {self.dtype.name.capitalize()} but "
                               f"the operation's result requires dtype Double")
        return self._inplace(lambda s: s.float_power(exponent), exponent)

    def heaviside_(self, values: Tensor) -> Tensor:
        return self._inplace(lambda s: s._heaviside(values, "heaviside_"), values)

    def sinc_(self) -> Tensor:
        return self._inplace(lambda s: s.sinc())

    def deg2rad_(self) -> Tensor:
        return self._inplace(lambda s: s.deg2rad())

    def rad2deg_(self) -> Tensor:
        return self._inplace(lambda s: s.rad2deg())

    def fix_(self) -> Tensor:
        return self._inplace(lambda s: s.trunc())

    # BLAS-style fused ops: beta * self + alpha * (product), self broadcast to the product's shape
    def _scaled_sum(self, prod: Tensor, beta: Number, alpha: Number) -> Tensor:
        _check_expand(self.shape, prod.shape)
        out = prod if alpha == 1 else prod * alpha
        if beta == 0:  # self is ignored, NaN and inf included, as in BLAS; its gradient is 0
            return out + where(Tensor._make(B.asarray(False)), self, 0.0) if self.requires_grad else out
        return out + (self if beta == 1 else self * beta)

    def addmm(self, mat1: Tensor, mat2: Tensor, *, beta: Number = 1, alpha: Number = 1) -> Tensor:
        """beta * self + alpha * (mat1 @ mat2) for 2-D mat1, mat2."""
        for name, m in (("mat1", mat1), ("mat2", mat2)):
            if m.ndim != 2:
                raise RuntimeError(f"{name} must be a matrix, got {m.ndim}-D tensor")
        return self._scaled_sum(mat1.matmul(mat2), beta, alpha)

    def addmv(self, mat: Tensor, vec: Tensor, *, beta: Number = 1, alpha: Number = 1) -> Tensor:
        """beta * self + alpha * (mat @ vec) for 2-D mat and 1-D vec."""
        if mat.ndim != 2 or vec.ndim != 1 or self.ndim > 1:
            raise RuntimeError(f"vector + matrix @ vector expected, got {self.ndim}, {mat.ndim}, {vec.ndim}")
        if mat.shape[1] != vec.shape[0]:
            raise RuntimeError(f"size mismatch, got input ({mat.shape[0]}), mat ({mat.shape[0]}x{mat.shape[1]}), "
                               f"vec ({vec.shape[0]})")
        return self._scaled_sum(mat.matmul(vec), beta, alpha)

    def addbmm(self, batch1: Tensor, batch2: Tensor, *, beta: Number = 1, alpha: Number = 1) -> Tensor:
        """beta * self + alpha * sum_b(batch1[b] @ batch2[b]) for 3-D batches."""
        return self._scaled_sum(batch1.bmm(batch2).sum(0), beta, alpha)

    def baddbmm(self, batch1: Tensor, batch2: Tensor, *, beta: Number = 1, alpha: Number = 1) -> Tensor:
        """beta * self + alpha * (batch1 @ batch2) for 3-D batches."""
        return self._scaled_sum(batch1.bmm(batch2), beta, alpha)

    def addr(self, vec1: Tensor, vec2: Tensor, *, beta: Number = 1, alpha: Number = 1) -> Tensor:
        """beta * self + alpha * outer(vec1, vec2)."""
        for name, v in (("vec1", vec1), ("vec2", vec2)):
            if v.ndim != 1:
                raise RuntimeError(f"addr: Expected 1-D argument {name}, but got {v.ndim}-D")
        return self._scaled_sum(vec1.outer(vec2), beta, alpha)

    def addcmul(self, tensor1: Tensor, tensor2: Tensor, *, value: Number = 1) -> Tensor:
        """self + value * tensor1 * tensor2 (all broadcast)."""
        p = tensor1 * tensor2
        return self + (p if value == 1 else p * value)

    def addcdiv(self, tensor1: Tensor, tensor2: Tensor, *, value: Number = 1) -> Tensor:
        """self + value * tensor1 / tensor2 (all broadcast)."""
        if not (_as_tensor(tensor1).is_floating_point() or _as_tensor(tensor2).is_floating_point()):
            raise RuntimeError("Integer division with addcdiv is no longer supported, and in a future release "
                               "addcdiv will perform a true division of tensor1 and tensor2. Got integer "
                               f"tensors of dtype {_as_tensor(tensor1).dtype} and {_as_tensor(tensor2).dtype}.")
        q = tensor1 / tensor2
        return self + (q if value == 1 else q * value)

    def addmm_(self, mat1: Tensor, mat2: Tensor, *, beta: Number = 1, alpha: Number = 1) -> Tensor:
        return self._inplace(lambda s: s.addmm(mat1, mat2, beta=beta, alpha=alpha), mat1, mat2)

    def addmv_(self, mat: Tensor, vec: Tensor, *, beta: Number = 1, alpha: Number = 1) -> Tensor:
        return self._inplace(lambda s: s.addmv(mat, vec, beta=beta, alpha=alpha), mat, vec)

    def addbmm_(self, batch1: Tensor, batch2: Tensor, *, beta: Number = 1, alpha: Number = 1) -> Tensor:
        return self._inplace(lambda s: s.addbmm(batch1, batch2, beta=beta, alpha=alpha), batch1, batch2)

    def baddbmm_(self, batch1: Tensor, batch2: Tensor, *, beta: Number = 1, alpha: Number = 1) -> Tensor:
        return self._inplace(lambda s: s.baddbmm(batch1, batch2, beta=beta, alpha=alpha), batch1, batch2)

    def addr_(self, vec1: Tensor, vec2: Tensor, *, beta: Number = 1, alpha: Number = 1) -> Tensor:
        return self._inplace(lambda s: s.addr(vec1, vec2, beta=beta, alpha=alpha), vec1, vec2)

    # shape helpers
    def tile(self, *dims: Any) -> Tensor:
        """Repeat along each dim; fewer dims than the tensor has are padded with 1s in front."""
        reps = _shape_arg(dims)
        return self.repeat(*((1,) * (self.ndim - len(reps)) + reps))

    def ravel(self) -> Tensor:
        return self.reshape(-1)

    def diff(self, n: builtins.int = 1, dim: builtins.int = -1, prepend: Tensor | None = None,
             append: Tensor | None = None) -> Tensor:
        """n-th forward difference along ``dim``: ``tensor([1, 4, 9]).diff()`` is ``tensor([3, 5])``."""
        if self.ndim == 0:
            raise RuntimeError("diff expects input to be at least one-dimensional")
        if n < 0:
            raise RuntimeError(f"order must be non-negative but got {n}")
        d = _dim(dim, self.ndim)
        parts = [p for p in (prepend, self, append) if p is not None]
        x = cat([_as_tensor(p, self) for p in parts], d) if len(parts) > 1 else self
        for _ in range(n):
            m = max(x.shape[d] - 1, 0)
            hi, lo = x.narrow(d, min(1, x.shape[d]), m), x.narrow(d, 0, m)
            x = hi.logical_xor(lo) if x._data.dtype == np.bool_ else hi - lo
        return x

    def kron(self, other: Tensor) -> Tensor:
        """Kronecker product: block (i, j) of the result is self[i, j] * other."""
        o = _as_tensor(other, self)
        nd = max(self.ndim, o.ndim)
        sa = (1,) * (nd - self.ndim) + self.shape
        sb = (1,) * (nd - o.ndim) + o.shape
        a = self.reshape(tuple(v for s in sa for v in (s, 1)))  # (a0, 1, a1, 1, ...)
        b = o.reshape(tuple(v for s in sb for v in (1, s)))  # (1, b0, 1, b1, ...)
        return (a * b).reshape(tuple(x * y for x, y in zip(sa, sb)))

    def vdot(self, other: Tensor) -> Tensor:
        """Dot product of two 1-D tensors (no conjugation needed for real dtypes)."""
        return self.dot(other)

    def cross(self, other: Tensor, dim: builtins.int | None = None) -> Tensor:
        """Cross product of 3-vectors along ``dim`` (default: the first dim of size 3)."""
        o = _as_tensor(other, self)
        if self.ndim != o.ndim:
            raise RuntimeError(f"linalg.cross: inputs must have the same number of dimensions, got "
                               f"{self.ndim} and {o.ndim}")
        try:
            shape = B.broadcast_shape(self.shape, o.shape)
        except ValueError:
            raise RuntimeError(f"linalg.cross: the shapes {list(self.shape)} and {list(o.shape)} do not "
                               f"broadcast") from None
        if dim is None:
            d = next((i for i, s in enumerate(shape) if s == 3), None)
            if d is None:
                raise RuntimeError(f"no dimension of size 3 in input (shape {list(shape)})")
        else:
            d = _dim(dim, len(shape))
            if self.shape[d] != 3 or o.shape[d] != 3:
                raise RuntimeError(f"linalg.cross: inputs dimension {dim} must have length 3. Got "
                                   f"{self.shape[d]} and {o.shape[d]}")
        a, b = _promote(self.expand(shape), o.expand(shape))
        pre = (slice(None),) * d
        a1, a2, a3 = (a[pre + (i,)] for i in range(3))
        b1, b2, b3 = (b[pre + (i,)] for i in range(3))
        return stack([a2 * b3 - a3 * b2, a3 * b1 - a1 * b3, a1 * b2 - a2 * b1], d)

    def rot90(self, k: builtins.int = 1, dims: Sequence[builtins.int] = (0, 1)) -> Tensor:
        """Rotate by 90 degrees k times in the plane of ``dims``, from the first towards the second."""
        if len(dims) != 2:
            raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
        if self.ndim < 2:
            raise RuntimeError(f"expected total dims >= 2, but got total dims = {self.ndim}")
        d0, d1 = _dim(dims[0], self.ndim), _dim(dims[1], self.ndim)
        if d0 == d1:
            raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {d0} and dim1 = {d1}")
        k %= 4
        if k == 1:
            return self.flip(d1).transpose(d0, d1)
        if k == 2:
            return self.flip((d0, d1))
        if k == 3:
            return self.flip(d0).transpose(d0, d1)
        return self.clone()

    def _split_at(self, sections: Any, d: builtins.int, name: str) -> tuple[Tensor, ...]:
        n = self.shape[d]
        if isinstance(sections, builtins.int):
            if sections <= 0 or n % sections:
                raise RuntimeError(f"torch.{name} attempted to split along dimension {d}, but the size of the "
                                   f"dimension {n} is not divisible by the split_size {sections}!")
            return self.split(n // sections, d) if n else (self,) * sections
        bounds = [0] + [min(max(i if i >= 0 else i + n, 0), n) for i in sections] + [n]
        return tuple(self.narrow(d, lo, max(hi - lo, 0)) for lo, hi in zip(bounds, bounds[1:]))

    def hsplit(self, sections: Any) -> tuple[Tensor, ...]:
        """Split along dim 1 (dim 0 for 1-D): into ``sections`` equal parts, or at the given indices."""
        if self.ndim < 1:
            raise RuntimeError("torch.hsplit requires a tensor with at least 1 dimension, but got a tensor "
                               f"with {self.ndim} dimensions!")
        return self._split_at(sections, 1 if self.ndim > 1 else 0, "hsplit")

    def vsplit(self, sections: Any) -> tuple[Tensor, ...]:
        if self.ndim < 2:
            raise RuntimeError("torch.vsplit requires a tensor with at least 2 dimension, but got a tensor "
                               f"with {self.ndim} dimensions!")
        return self._split_at(sections, 0, "vsplit")

    def dsplit(self, sections: Any) -> tuple[Tensor, ...]:
        if self.ndim < 3:
            raise RuntimeError("torch.dsplit requires a tensor with at least 3 dimension, but got a tensor "
                               f"with {self.ndim} dimensions!")
        return self._split_at(sections, 2, "dsplit")

    def diag_embed(self, offset: builtins.int = 0, dim1: builtins.int = -2, dim2: builtins.int = -1) -> Tensor:
        """Matrices (in dims dim1, dim2) whose ``offset`` diagonal holds the last dim of self."""
        nd = self.ndim + 1
        d1, d2 = _dim(dim1, nd), _dim(dim2, nd)
        if d1 == d2:
            raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
        n, k = (self.shape[-1] if self.ndim else 1), abs(offset)
        x = self.reshape(1) if self.ndim == 0 else self
        eye_ = Tensor._make(B.eye(n, dtype=np.bool_))
        out = where(eye_, x.unsqueeze(-1).expand(x.shape + (n,)), 0.0).to(x.dtype)  # (..., n, n)
        if k:
            batch = x.shape[:-1]
            cols = zeros(*batch, n, k, dtype=x.dtype)
            rows = zeros(*batch, k, n + k, dtype=x.dtype)
            # offset > 0: entry (i, i + k), zeros left and below; offset < 0: (i + k, i), above and right
            out = cat([cols, out], -1) if offset > 0 else cat([out, cols], -1)
            out = cat([out, rows], -2) if offset > 0 else cat([rows, out], -2)
        rest = iter(range(nd - 2))
        return out.permute(*[nd - 2 if j == d1 else nd - 1 if j == d2 else next(rest) for j in range(nd)])

    def diagflat(self, offset: builtins.int = 0) -> Tensor:
        """A 2-D matrix with the flattened input on its ``offset`` diagonal."""
        return self.flatten().diag_embed(offset)

    def is_nonzero(self) -> builtins.bool:
        n = self._data.size
        if n != 1:
            raise RuntimeError("Boolean value of Tensor with no values is ambiguous" if n == 0 else
                               "Boolean value of Tensor with more than one value is ambiguous")
        return builtins.bool(self._data.reshape(()))

    def is_same_size(self, other: Tensor) -> builtins.bool:
        return self.shape == other.shape

    def is_signed(self) -> builtins.bool:
        return self._data.dtype.kind in "fi"

    # linear algebra (the functions live in lightgrad.linalg)
    def inverse(self) -> Tensor:
        from .linalg import inv
        return inv(self)

    def det(self) -> Tensor:
        from .linalg import det
        return det(self)

    def logdet(self) -> Tensor:
        from .linalg import logdet
        return logdet(self)

    def slogdet(self) -> tuple[Tensor, Tensor]:
        from .linalg import slogdet
        return slogdet(self)

    def matrix_power(self, n: builtins.int) -> Tensor:
        from .linalg import matrix_power
        return matrix_power(self, n)

    def cholesky(self, upper: builtins.bool = False) -> Tensor:
        from .linalg import cholesky
        return cholesky(self, upper=upper)

    def cholesky_solve(self, input2: Tensor, upper: builtins.bool = False) -> Tensor:
        """X with A X = self, A = L L^T given its Cholesky factor L (or U^T U with ``upper``)."""
        from .linalg import solve_triangular
        if upper:
            return solve_triangular(input2, solve_triangular(input2.mT, self, upper=False), upper=True)
        return solve_triangular(input2.mT, solve_triangular(input2, self, upper=False), upper=True)

    def cholesky_inverse(self, upper: builtins.bool = False) -> Tensor:
        """The inverse of A = L L^T (or U^T U with ``upper``) from its Cholesky factor."""
        return eye(self.shape[-1], dtype=self.dtype).expand(self.shape).cholesky_solve(self, upper)

    def adjoint(self) -> Tensor:
        """The conjugate transpose of the last two dims (the transpose: no complex tensors here)."""
        return self.mT

    def get_device(self) -> builtins.int:
        return -1  # (PyTorch's answer for a CPU tensor)

    def is_inference(self) -> builtins.bool:
        return False

    def narrow_copy(self, dim: builtins.int, start: builtins.int, length: builtins.int) -> Tensor:
        return self.narrow(dim, start, length).clone()

    def hardshrink(self, lambd: builtins.float = 0.5) -> Tensor:
        from .nn.functional import hardshrink
        return hardshrink(self, lambd)

    def prelu(self, weight: Tensor) -> Tensor:
        from .nn.functional import prelu
        return prelu(self, weight)

    def svd(self, some: builtins.bool = True, compute_uv: builtins.bool = True) -> Any:
        """(U, S, V) with self = U diag(S) V^T (torch.svd's old API: V, not Vh)."""
        from .linalg import _svd_old
        return _svd_old(self, some, compute_uv)

    def qr(self, some: builtins.bool = True) -> Any:
        """(Q, R) with self = Q R, reduced unless some=False."""
        from .linalg import _qr_old
        return _qr_old(self, some)

    def triangular_solve(self, A: Any, upper: builtins.bool = True, transpose: builtins.bool = False,
                         unitriangular: builtins.bool = False) -> Any:
        """(X, A.clone()) with T X = self for the triangle T of A (torch.triangular_solve)."""
        from .linalg import _triangular_solve_old
        return _triangular_solve_old(self, A, upper, transpose, unitriangular)

    def matrix_exp(self) -> Tensor:
        """exp of each square matrix: ``torch.linalg.matrix_exp(self)``."""
        from .linalg import matrix_exp
        return matrix_exp(self)

    def lu_solve(self, LU_data: Any, LU_pivots: Any) -> Tensor:
        """X with A X = self given ``LU_data, LU_pivots = torch.linalg.lu_factor(A)`` (torch.lu_solve)."""
        from .linalg import lu_solve
        return lu_solve(LU_data, LU_pivots, self)

    def lu(self, pivot: builtins.bool = True, get_infos: builtins.bool = False) -> Any:
        """(LU, pivots[, infos]) of self (torch.lu): ``torch.linalg.lu_factor_ex``'s outputs."""
        from .linalg import lu_factor_ex
        LU, piv, info = lu_factor_ex(self, pivot=pivot)
        return (LU, piv, info) if get_infos else (LU, piv)

    def pinverse(self, rcond: builtins.float = 1e-15) -> Tensor:
        """Pseudo-inverse, dropping singular values <= rcond * the largest."""
        from .linalg import pinv
        return pinv(self, rtol=rcond)

    # ---- reductions ----------------------------------------------------------------------------
    def sum(self, dim: Any = None, keepdim: builtins.bool = False, *, dtype: Any = None) -> Tensor:
        """Sum over ``dim`` (int, tuple or None for all); integers and bools sum as int64."""
        x = self
        if dtype is not None:
            x = x.to(dtype)
        elif x._arr.dtype.kind in "biu":
            x = x.to(D.int64)
        return F.Sum.apply(x, None if dim is None else _dims(dim, x._arr.ndim), keepdim)

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
        """Standard deviation with Bessel's ``correction`` (default 1); its gradient is 0 where it is 0."""
        return F.Std.apply(self.var(dim, unbiased, keepdim, correction=correction))

    def prod(self, dim: builtins.int | None = None, keepdim: builtins.bool = False, *, dtype: Any = None) -> Tensor:
        x = self.to(dtype) if dtype is not None else (self.to(D.int64) if self._data.dtype.kind in "biu" else self)
        return F.Prod.apply(x, axes=_dims(dim, x.ndim), keepdim=keepdim)

    def amax(self, dim: Any = (), keepdim: builtins.bool = False) -> Tensor:
        axes = _dims(dim, self.ndim) if dim != () else None
        _check_nonempty(self, dim, "amax")
        return F.Amax.apply(self, axes=axes, keepdim=keepdim)

    def amin(self, dim: Any = (), keepdim: builtins.bool = False) -> Tensor:
        axes = _dims(dim, self.ndim) if dim != () else None
        _check_nonempty(self, dim, "amin")
        return F.Amin.apply(self, axes=axes, keepdim=keepdim)

    def max(self, dim: Any = None, keepdim: builtins.bool = False) -> Any:
        """``x.max()`` the largest value; ``x.max(dim)`` (values, indices); ``x.max(other)``."""
        if isinstance(dim, Tensor):
            return self.maximum(dim)
        if dim is None:
            _check_nonempty(self, None, "max")
            return self.amax()
        return self._extreme_dim(dim, keepdim, B.argmax, "max")

    def min(self, dim: Any = None, keepdim: builtins.bool = False) -> Any:
        if isinstance(dim, Tensor):
            return self.minimum(dim)
        if dim is None:
            _check_nonempty(self, None, "min")
            return self.amin()
        return self._extreme_dim(dim, keepdim, B.argmin, "min")

    def _extreme_dim(self, dim: builtins.int, keepdim: builtins.bool, arg: Any, name: str) -> Any:
        d = _dim(dim, self.ndim)
        x = self if self.ndim else self.reshape(1)
        _check_nonempty(x, d, name)
        idx = arg(x._data, axis=d)
        vals = F.MaxDim.apply(x, dim=d, keepdim=keepdim or not self.ndim, idx=idx)
        ind = Tensor._make(np.expand_dims(idx, d) if keepdim else idx)
        if not self.ndim:
            vals, ind = vals.reshape(()), ind.reshape(())
        return values_indices(vals, ind)

    def argmax(self, dim: builtins.int | None = None, keepdim: builtins.bool = False) -> Tensor:
        _check_nonempty(self, dim, "argmax")
        if dim is None:
            return Tensor._make(np.asarray(B.argmax(self._data), np.int64))
        d = _dim(dim, self.ndim)
        return Tensor._make(B.argmax(self._data, axis=d, keepdims=keepdim))

    def argmin(self, dim: builtins.int | None = None, keepdim: builtins.bool = False) -> Tensor:
        _check_nonempty(self, dim, "argmin")
        if dim is None:
            return Tensor._make(np.asarray(B.argmin(self._data), np.int64))
        d = _dim(dim, self.ndim)
        return Tensor._make(B.argmin(self._data, axis=d, keepdims=keepdim))

    def logsumexp(self, dim: Any, keepdim: builtins.bool = False) -> Tensor:
        """log(sum(exp(x))) computed stably: the max is taken out first (and has no gradient)."""
        if not self._data.size:  # nothing to overflow, and no max to take out: log(0) = -inf
            return self.exp().sum(dim, keepdim).log()
        m = self.detach().amax(dim, keepdim=True)
        m = m.masked_fill(m.isinf(), 0)
        out = (self - m).exp().sum(dim, keepdim=True).log() + m
        return out if keepdim else out.squeeze(_dims(dim, self.ndim))

    def cumsum(self, dim: builtins.int, *, dtype: Any = None) -> Tensor:
        x = self.to(dtype) if dtype is not None else (self.to(D.int64) if self._data.dtype.kind in "biu" else self)
        y, d = x._along(dim)
        out = F.Cumsum.apply(y, dim=d)
        return out if x.ndim else out.reshape(())

    def norm(self, p: Any = "fro", dim: Any = None, keepdim: builtins.bool = False) -> Tensor:
        """Vector p-norm over ``dim`` (all elements by default); 'fro' is the 2-norm."""
        x = _floating(self)
        if p == "nuc":  # the sum of singular values of the matrices in the last two dims (or ``dim``)
            from .linalg import matrix_norm
            if dim is None and x.ndim != 2:
                raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got {' '.join(map(str, range(x.ndim)))}")
            return matrix_norm(x, "nuc", (-2, -1) if dim is None else tuple(dim), keepdim)
        if p in ("fro", 2, 2.0):
            s = (x * x).sum(dim, keepdim)
            # sqrt'(0) is infinite; PyTorch's norm takes the subgradient 0 there
            return where(s == 0, s, s.clamp(min=np.finfo(x._data.dtype).tiny).sqrt())
        if p in (math.inf, "inf", -math.inf, "-inf"):
            sign = "-" if p in (-math.inf, "-inf") else ""
            if not x._data.size:  # the max (or min) of nothing: PyTorch's words, not amax's
                if dim is None:
                    raise RuntimeError(f"linalg.vector_norm cannot compute the {sign}inf norm on an empty tensor "
                                       "because the operation does not have an identity")
                empty = [d for d in _dims(dim, x.ndim) or () if not x.shape[d]]
                if empty:
                    raise RuntimeError(f"linalg.vector_norm cannot compute the {sign}inf norm on the dimension "
                                       f"{empty[0]}because this dimension is empty and the operation does not "
                                       "have an identity")
            ext = x.abs().amin if sign else x.abs().amax
            return ext(dim if dim is not None else (), keepdim)
        if p == 1:
            return x.abs().sum(dim, keepdim)
        if p == 0:
            return (x != 0).to(x.dtype).sum(dim, keepdim)
        s = (x.abs() ** p).sum(dim, keepdim)
        # (s ** (1/p))' is infinite at s == 0 (a zero vector): PyTorch takes the subgradient 0 there
        return where(s == 0, s, s.clamp(min=np.finfo(x._data.dtype).tiny) ** (1.0 / p))

    def all(self, dim: Any = None, keepdim: builtins.bool = False) -> Tensor:
        return Tensor._make(np.all(self._data, axis=_dims(dim, self.ndim), keepdims=keepdim))

    def any(self, dim: Any = None, keepdim: builtins.bool = False) -> Tensor:
        return Tensor._make(np.any(self._data, axis=_dims(dim, self.ndim), keepdims=keepdim))

    def count_nonzero(self, dim: Any = None) -> Tensor:
        return Tensor._make(np.asarray(np.count_nonzero(self._data, axis=_dims(dim, self.ndim)), np.int64))

    def softmax(self, dim: builtins.int, dtype: Any = None) -> Tensor:
        return self._softmax(F.Softmax, "softmax", dim, dtype)

    def log_softmax(self, dim: builtins.int, dtype: Any = None) -> Tensor:
        return self._softmax(F.LogSoftmax, "log_softmax", dim, dtype)

    def _softmax(self, fn: Any, name: str, dim: builtins.int, dtype: Any) -> Tensor:
        """softmax or log_softmax in ``dtype``: a 0-d tensor along dim 0 or -1 is one of one element;
        integers have no kernel in PyTorch (pass a float ``dtype``)."""
        x = self.to(dtype) if dtype is not None else self
        y, d = x._along(dim)
        if y._data.dtype.kind != "f":
            if y._data.size:
                kernel = f"{name}_lastdim_kernel_impl" if d == y.ndim - 1 else f"{name}_kernel_impl"
                raise NotImplementedError(f"\"{kernel}\" not implemented for '{_SCALAR_TYPE[x.dtype.name]}'")
            return x.clone()
        out = fn.apply(y, dim=d)
        return out if x.ndim else out.reshape(())

    # ---- sorting, scans and indexing (compat) ---------------------------------------------------
    # Sorting and selection compute indices over the raw array (backend, no graph) and take the
    # values with a differentiable gather, so the gradient reaches exactly the selected elements.
    def _along(self, dim: builtins.int) -> tuple[Tensor, builtins.int]:
        """self (a 0-d tensor as shape (1,)) and ``dim`` as a non-negative axis."""
        d = _dim(dim, self.ndim)
        return (self if self.ndim else self.reshape(1)), d

    def _cum_along(self, dim: builtins.int, name: str) -> tuple[Tensor, builtins.int]:
        if not self.ndim and dim not in (0, -1):  # (cummax and cummin word it their own way)
            raise IndexError(f"{name}(): Expected reduction dim -1 or 0 for scalar but got {dim}")
        return self._along(dim)

    def _picked(self, x: Tensor, d: builtins.int, idx: np.ndarray, keepdim: builtins.bool, kind: Any) -> Any:
        """x's values at ``idx`` along d (differentiable) and the indices, as a ``kind`` named tuple."""
        vals, ind = F.Gather.apply(x, dim=d, index=idx), Tensor._make(idx)
        if not keepdim:
            vals, ind = vals.squeeze(d), ind.squeeze(d)
        if not self.ndim:
            vals, ind = vals.reshape(()), ind.reshape(())
        return kind(vals, ind)

    def sort(self, dim: builtins.int = -1, descending: builtins.bool = False, *,
             stable: builtins.bool = False) -> Any:
        """(values, indices) sorted along ``dim``; NaN sorts as the largest; always stable.

        >>> lightgrad.tensor([3.0, 1.0, 2.0]).sort().indices
        tensor([1, 2, 0])
        """
        x, d = self._along(dim)
        return self._picked(x, d, B.sort_indices(x._data, d, descending), True, return_types.sort)

    def argsort(self, dim: builtins.int = -1, descending: builtins.bool = False,
                stable: builtins.bool = False) -> Tensor:
        """The indices that sort ``dim``: ``tensor([3, 1, 2]).argsort()`` is ``tensor([1, 2, 0])``."""
        x, d = self._along(dim)
        ind = Tensor._make(B.sort_indices(x._data, d, descending))
        return ind if self.ndim else ind.reshape(())

    def msort(self) -> Tensor:
        """Sorted along dim 0: ``x.msort()`` is ``x.sort(0).values``."""
        return self.sort(0).values

    def topk(self, k: builtins.int, dim: builtins.int = -1, largest: builtins.bool = True,
             sorted: builtins.bool = True) -> Any:  # noqa: A002
        """The k largest (smallest) values along ``dim`` and their indices, largest first.

        >>> lightgrad.tensor([1.0, 5.0, 3.0]).topk(2)
        topk(values=tensor([5., 3.]), indices=tensor([1, 2]))
        """
        x, d = self._along(dim)
        n = x.shape[d]
        if not 0 <= k <= n:
            raise RuntimeError(f"selected index k out of range: expected k in [0, {n}] for dimension {d}, got {k}")
        return self._picked(x, d, B.topk_indices(x._data, k, d, largest), True, return_types.topk)

    def kthvalue(self, k: builtins.int, dim: builtins.int = -1, keepdim: builtins.bool = False) -> Any:
        """The k-th smallest value (k from 1) along ``dim`` and its index: ``x.kthvalue(1)`` is the min."""
        x, d = self._along(dim)
        _check_nonempty(x, d, "kthvalue")
        n = x.shape[d]
        if not 1 <= k <= n:
            raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {d}: "
                               f"expected k in [1, {n}], got {k}")
        idx = B.sort_indices(x._data, d)[(slice(None),) * d + (slice(k - 1, k),)]
        return self._picked(x, d, idx, keepdim, return_types.kthvalue)

    def median(self, dim: builtins.int | None = None, keepdim: builtins.bool = False) -> Any:
        """The lower of the two middle values (NaN if any is NaN); with ``dim``, (values, indices).

        >>> lightgrad.tensor([4.0, 1.0, 3.0, 2.0]).median()
        tensor(2.)
        """
        return self._median(dim, keepdim, False)

    def nanmedian(self, dim: builtins.int | None = None, keepdim: builtins.bool = False) -> Any:
        """median ignoring NaNs (NaN only where all are NaN)."""
        return self._median(dim, keepdim, True)

    def _median(self, dim: builtins.int | None, keepdim: builtins.bool, ignore_nan: builtins.bool) -> Any:
        if dim is None:
            x = self.reshape(-1)
            if not x.numel():
                return Tensor._make(B.full((), np.nan, _floating(self)._data.dtype))
            return F.Gather.apply(x, dim=0, index=B.median_indices(x._data, 0, ignore_nan)).reshape(())
        x, d = self._along(dim)
        name = "nanmedian" if ignore_nan else "median"
        _check_nonempty(x, d, name)
        kind = return_types.nanmedian if ignore_nan else return_types.median
        return self._picked(x, d, B.median_indices(x._data, d, ignore_nan), keepdim, kind)

    def mode(self, dim: builtins.int = -1, keepdim: builtins.bool = False) -> Any:
        """The most frequent value along ``dim`` (the smallest if several) and its last index.

        >>> lightgrad.tensor([2, 1, 2, 1, 3]).mode()
        mode(values=tensor(1), indices=tensor(3))
        """
        x, d = self._along(dim)
        _check_nonempty(x, d, "mode")
        return self._picked(x, d, B.mode_indices(x._data, d), keepdim, return_types.mode)

    def cumprod(self, dim: builtins.int, *, dtype: Any = None) -> Tensor:
        """Running product along ``dim``; integers and bools multiply as int64: [1, 2, 3] gives [1, 2, 6]."""
        x = self.to(dtype) if dtype is not None else (self.to(D.int64) if self._data.dtype.kind in "biu" else self)
        y, d = x._along(dim)
        out = F.Cumprod.apply(y, dim=d)
        return out if x.ndim else out.reshape(())

    def cumprod_(self, dim: builtins.int, *, dtype: Any = None) -> Tensor:
        return self._inplace(lambda s: s.cumprod(dim, dtype=dtype))

    def logcumsumexp(self, dim: builtins.int) -> Tensor:
        """log(cumsum(exp(x))) along ``dim``, without overflow."""
        x, d = _floating(self)._along(dim)
        out = F.Logcumsumexp.apply(x, dim=d)
        return out if self.ndim else out.reshape(())

    def cummax(self, dim: builtins.int) -> Any:
        """Running max along ``dim`` and where it was taken (the latest such index).

        >>> lightgrad.tensor([1.0, 3.0, 2.0]).cummax(0).values
        tensor([1., 3., 3.])
        """
        x, d = self._cum_along(dim, "cummax")
        return self._picked(x, d, B.cumext_indices(x._data, d, True), True, return_types.cummax)

    def cummin(self, dim: builtins.int) -> Any:
        x, d = self._cum_along(dim, "cummin")
        return self._picked(x, d, B.cumext_indices(x._data, d, False), True, return_types.cummin)

    def nansum(self, dim: Any = None, keepdim: builtins.bool = False, *, dtype: Any = None) -> Tensor:
        """sum treating NaN as zero (which gets no gradient)."""
        x = where(self.isnan(), 0.0, self) if self._data.dtype.kind == "f" else self
        return x.sum(dim, keepdim, dtype=dtype)

    def nanmean(self, dim: Any = None, keepdim: builtins.bool = False, *, dtype: Any = None) -> Tensor:
        """mean over the elements that are not NaN."""
        x = self.to(dtype) if dtype is not None else self
        if x._data.dtype.kind != "f":
            raise RuntimeError("nanmean(): expected input to have floating point or complex dtype but got "
                               f"{x.dtype.name.capitalize()}")
        return x.nansum(dim, keepdim) / (~x.isnan()).sum(dim, keepdim)

    def aminmax(self, *, dim: builtins.int | None = None, keepdim: builtins.bool = False) -> Any:
        """(min, max) over ``dim`` (all elements by default), as amin and amax."""
        dims = () if dim is None else dim
        _check_nonempty(self, dim, "aminmax")
        return return_types.aminmax(self.amin(dims, keepdim), self.amax(dims, keepdim))

    def _index_along(self, op: str, dim: builtins.int, index: Any, source: Any,
                     alpha: Number = 1) -> tuple[builtins.int, np.ndarray]:
        """PyTorch's checks for index_add, index_copy, index_fill or index_reduce (``op``; ``source``
        is the value for index_fill), in its order and words; returns dim as an axis and the index as
        int64 (1-D), negative entries of index_fill's counted from the end."""
        ix = _raw(index) if isinstance(index, Tensor) else np.asarray(index)
        name = _SCALAR_TYPE[D._BY_NP[ix.dtype].name] if ix.dtype in D._BY_NP else str(ix.dtype)
        if op == "index_fill":
            if isinstance(source, Tensor) and source.ndim:
                raise RuntimeError(f"index_fill_ only supports a 0-dimensional value tensor, but got tensor with "
                                   f"{source.ndim} dimension(s).")
            if ix.dtype != np.int64:
                raise IndexError("index_fill_(): Expected dtype int64 for index.")
            d = _dim(dim, self.ndim)
            if ix.ndim > 1:
                raise RuntimeError("Index has to be a vector/scalar")
            kind = "index_fill"
        else:
            d = _dim(dim, self.ndim)
            mine, theirs = _SCALAR_TYPE[self.dtype.name], _SCALAR_TYPE[source.dtype.name]
            if op == "index_copy":
                self._check_index_copy(d, ix, name, source, mine, theirs)
                kind = "index_copy"
            else:
                self._check_index_add(op, d, ix, name, source, mine, theirs)
                # (PyTorch's CPU kernel hands an int64 index with alpha 1 along the first or last of two
                # or more dims to scatter_add, and so says it in scatter's words)
                fast = op == "index_add" and self.ndim > 1 and d in (0, self.ndim - 1) and alpha == 1 \
                    and ix.dtype == np.int64
                kind = "scatter" if fast else "index"
        ix = ix.reshape(-1).astype(np.int64, copy=False)
        n = self.shape[d] if self.ndim else 1
        _check_index(ix, n, d, kind)
        return d, (ix + n * (ix < 0) if kind == "index_fill" else ix)

    def _check_index_add(self, op: str, d: builtins.int, ix: np.ndarray, name: str, source: Tensor, mine: str,
                         theirs: str) -> None:
        """index_add's (and index_reduce's) checks of index and source, in PyTorch's order."""
        if ix.ndim > 1:
            raise IndexError(f"{op}_(): Index is supposed to be a vector, but got dim: {ix.ndim} with type: {name} "
                             f"and size: {list(ix.shape)}")
        if ix.dtype not in (np.int64, np.int32):
            raise RuntimeError(f"{op}_(): Expected dtype int32/int64 for index but got: {name}")
        if mine != theirs:
            raise RuntimeError(f"{op}_(): self ({mine}) and source ({theirs}) must have the same scalar type")
        n_src = source.shape[d] if source.ndim else 1
        if ix.size != n_src:
            raise RuntimeError(f"{op}_(): Number of indices ({ix.size}) should be equal to source.size(dim): "
                               f"({n_src}), for dim: {d}")
        both = source.ndim and self.ndim  # (the dim is left out of the comparison only where both have it)
        if [s for i, s in enumerate(self.shape) if i != d or not both] != \
                [s for i, s in enumerate(source.shape) if i != d or not both]:
            raise RuntimeError("source tensor shape must match self tensor shape, excluding the specified dimension. "
                               f"Got self.shape = {list(self.shape)} source.shape = {list(source.shape)}")

    def _check_index_copy(self, d: builtins.int, ix: np.ndarray, name: str, source: Tensor, mine: str,
                          theirs: str) -> None:
        """index_copy's checks of index and source, in PyTorch's order."""
        if ix.ndim > 1:
            raise IndexError(f"index_copy_(): Index should have dimension 1 or 0 (got {ix.ndim})")
        if not source.ndim and ix.size != 1:
            raise IndexError(f"index_copy_(): When source is scalar, index should have one element (got {ix.size})")
        if source.ndim and self.ndim and source.ndim != self.ndim:
            raise IndexError(f"index_copy_(): When source and destination are not scalars, their dimensionality "
                             f"must match. Source dimensionality ({source.ndim}), destination dimensionality "
                             f"({self.ndim})")
        if ix.dtype != np.int64:
            raise RuntimeError(f"index_copy_(): Expected a long tensor for index, but got {name}")
        if mine != theirs:
            raise RuntimeError(f"index_copy_(): self and source expected to have the same dtype, but got (self) "
                               f"{mine} and (source) {theirs}")
        ds = " ".join(str(s) for i, s in enumerate(self.shape) if i != d)
        ss = " ".join(str(s) for i, s in enumerate(source.shape) if i != d)
        if ds != ss:
            raise RuntimeError(f"index_copy_(): Source/destination tensor must have same slice shapes. Destination "
                               f"slice shape: {ds} at dimension {d} and source slice shape: {ss} at dimension 0.")
        if source.ndim and ix.size != source.shape[d]:
            raise IndexError(f"index_copy_(): Number of indices ({ix.size}) should be equal to source.size(dim) "
                             f"({source.shape[d]})")

    def _index_grid(self, d: builtins.int, ix: np.ndarray, shape: Any) -> Tensor:
        """The 1-D index ``ix`` laid along d and broadcast to ``shape`` (for scatter)."""
        along = [1] * len(shape)
        along[d] = len(ix)
        return Tensor._make(B.broadcast_to(ix.reshape(along), tuple(shape)))

    def index_add(self, dim: builtins.int, index: Tensor, source: Tensor, *, alpha: Number = 1) -> Tensor:
        """A copy with ``alpha * source`` slices added at ``index`` along ``dim`` (repeats add up).

        >>> lightgrad.zeros(3).index_add(0, lightgrad.tensor([0, 0, 2]), lightgrad.ones(3))
        tensor([2., 0., 1.])
        """
        d, ix = self._index_along("index_add", dim, index, source, alpha)
        if not self.ndim:
            return self + source.reshape(()) * alpha * len(ix)
        s = source if alpha == 1 else source * alpha
        return self.scatter_add(d, self._index_grid(d, ix, s.shape), s)

    def index_add_(self, dim: builtins.int, index: Tensor, source: Tensor, *, alpha: Number = 1) -> Tensor:
        self._index_along("index_add", dim, index, source, alpha)
        return self._inplace(lambda s: s.index_add(dim, index, source, alpha=alpha), source)

    def index_copy(self, dim: builtins.int, index: Tensor, source: Tensor) -> Tensor:
        """A copy with ``source`` slices written at ``index`` along ``dim``."""
        d, ix = self._index_along("index_copy", dim, index, source)
        if not self.ndim:
            return source.reshape(()) + self * 0
        return self.scatter(d, self._index_grid(d, ix, source.shape), source)

    def index_copy_(self, dim: builtins.int, index: Tensor, source: Tensor) -> Tensor:
        self._index_along("index_copy", dim, index, source)
        return self._inplace(lambda s: s.index_copy(dim, index, source), source)

    def index_fill(self, dim: builtins.int, index: Tensor, value: Any) -> Tensor:
        """A copy with the slices at ``index`` along ``dim`` set to ``value``."""
        d, ix = self._index_along("index_fill", dim, index, value)
        n = self.shape[d] if self.ndim else 1
        mask = B.isin(B.arange(n), ix).reshape([n if i == d else 1 for i in range(self.ndim)])
        return self.masked_fill(Tensor._make(mask), value)

    def index_fill_(self, dim: builtins.int, index: Tensor, value: Any) -> Tensor:
        self._index_along("index_fill", dim, index, value)
        return self._inplace(lambda s: s.index_fill(dim, index, value), value)

    def scatter_reduce(self, dim: builtins.int, index: Tensor, src: Tensor, reduce: str, *,
                       include_self: builtins.bool = True) -> Tensor:
        """scatter with ``reduce`` in sum, prod, mean, amax, amin of src (and self, if include_self)
        at each position; as PyTorch, amax/amin split the gradient evenly among equal extremes."""
        reduce = {"max": "amax", "min": "amin"}.get(reduce, reduce)  # (aliases PyTorch accepts)
        if reduce not in ("sum", "prod", "mean", "amax", "amin"):
            raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce}")
        d = _dim(dim, self.ndim)
        ix = _int_index(index, "scatter_reduce")
        if ix.ndim != self.ndim:
            raise RuntimeError("Index tensor must have the same number of dimensions as self tensor")
        _check_index(ix, self.shape[d], d, "scatter")
        idx = Tensor._make(ix)
        if src._data.dtype != self._data.dtype:
            raise RuntimeError(f"scatter_reduce(): Expected self.dtype to be equal to src.dtype, got "
                               f"{self.dtype.name.capitalize()} and {src.dtype.name.capitalize()}")
        s = src
        base = self if include_self else self.scatter(d, idx, value=0)
        if reduce in ("sum", "mean"):
            total = base.scatter_add(d, idx, s)
            if reduce == "sum":
                return total
            count = zeros_like(self).scatter_add(d, idx, ones(ix.shape, dtype=self.dtype)) + (1 if include_self else 0)
            count = count.clamp(min=1)
            return total // count if self._data.dtype.kind in "iub" else total / count
        r = Tensor._make(B.scatter_extreme(self._data, ix, s._data, d, reduce, include_self))
        if not (_enabled.get() and (self.requires_grad or s.requires_grad)):
            return r
        sv = s[tuple(slice(0, n) for n in ix.shape)]
        hit = zeros(self.shape, dtype=D.bool_).scatter(d, idx, value=True)
        own = ~hit if not include_self else ones(self.shape, dtype=D.bool_)
        if reduce == "prod":
            # each factor's gradient is the product of the others: nonzero / itself where the
            # position holds no zero, the nonzero product for a lone zero, 0 with two zeros or more
            with no_grad():
                xs, xv = self.detach(), sv.detach()
                nz = Tensor._make(B.scatter_extreme(where(xs == 0, 1, xs)._data, ix, where(xv == 0, 1, xv)._data,
                                                    d, "prod", include_self))
                zc = ((own & (xs == 0)).to(self.dtype)
                      + zeros_like(self).scatter_add(d, idx, (xv == 0).to(self.dtype)))
                c_self = where(xs == 0, nz * (zc == 1), nz / where(xs == 0, 1, xs) * (zc == 0))
                nzv, zcv = nz.gather(d, idx), zc.gather(d, idx)
                c_src = where(xv == 0, nzv * (zcv == 1), nzv / where(xv == 0, 1, xv) * (zcv == 0))
            # (exact to first order only: the coefficients are constants of the graph)
            once = F.OnceDifferentiable.apply
            ds = where(own, (once(self, op="scatter_reduce (prod)") - xs) * c_self, 0.0)
            return r + ds + zeros_like(self).scatter_add(d, idx, (once(sv, op="scatter_reduce (prod)") - xv) * c_src)
        # the delta x - x.detach() is 0 in value and 1 in gradient; each equal extreme gets 1/count
        with no_grad():
            # (as PyTorch, an excluded self equal to the result still counts in the split)
            tie = (self.detach() == r) & self.isfinite()
            own_hit = own & tie
            src_hit = (sv.detach() == r.gather(d, idx)) & sv.isfinite()
            count = (tie.to(self.dtype) + zeros_like(self).scatter_add(d, idx, src_hit.to(self.dtype))).clamp(min=1)
        ds = where(own_hit, self - self.detach(), 0.0)
        dsrc = zeros_like(self).scatter_add(d, idx, where(src_hit, sv - sv.detach(), 0.0))
        return r + (ds + dsrc) / count

    def scatter_reduce_(self, dim: builtins.int, index: Tensor, src: Tensor, reduce: str, *,
                        include_self: builtins.bool = True) -> Tensor:
        if reduce not in ("sum", "prod", "mean", "amax", "amin", "max", "min"):
            raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce}")
        return self._inplace(lambda s: s.scatter_reduce(dim, index, src, reduce, include_self=include_self), src)

    def take(self, index: Tensor) -> Tensor:
        """Elements of the flattened tensor at ``index`` (any shape): ``x.take(i)`` is ``x.flatten()[i]``."""
        ix = _int_index(index, "take")
        _check_index(ix, self.numel(), 0, "take")
        return self.reshape(-1)[Tensor._make(ix)]

    def put(self, index: Tensor, source: Tensor, accumulate: builtins.bool = False) -> Tensor:
        """A copy with ``source`` written (or added) at flat positions ``index``."""
        ix = _int_index(index, "put")
        _check_index(ix, self.numel(), 0, "take")
        if source.numel() != ix.size:
            raise RuntimeError(f"put_(): Expected source and index to have the same number of elements, "
                               f"but got source.numel() = {source.numel()}, index.numel() = {ix.size}")
        flat = self.reshape(-1).index_put((Tensor._make(ix.reshape(-1)),), source.reshape(-1), accumulate)
        return flat.reshape(self.shape)

    def put_(self, index: Tensor, source: Tensor, accumulate: builtins.bool = False) -> Tensor:
        return self._inplace(lambda s: s.put(index, source, accumulate), source)

    def unique(self, sorted: builtins.bool = True, return_inverse: builtins.bool = False,  # noqa: A002
               return_counts: builtins.bool = False, dim: builtins.int | None = None) -> Any:
        """The distinct values (slices along ``dim``), sorted; optionally the inverse and counts.

        >>> lightgrad.tensor([3, 1, 3]).unique(return_counts=True)
        (tensor([1, 3]), tensor([1, 2]))
        """
        d = None if dim is None else _dim(dim, self.ndim)
        u, inv, cnt = B.unique(self._data, d)
        return _unique_result(u, inv, cnt, return_inverse, return_counts)

    def unique_consecutive(self, return_inverse: builtins.bool = False, return_counts: builtins.bool = False,
                           dim: builtins.int | None = None) -> Any:
        """Runs of equal consecutive values (slices along ``dim``) collapsed to one."""
        d = None if dim is None else _dim(dim, self.ndim, scalar=False)
        u, inv, cnt = B.unique_consecutive(self._data, d)
        return _unique_result(u, inv, cnt, return_inverse, return_counts)

    def bincount(self, weights: Tensor | None = None, minlength: builtins.int = 0) -> Tensor:
        """Counts of each non-negative integer (summed weights when given): [0, 2, 2] gives [1, 0, 2]."""
        x = self._data
        if x.dtype.kind not in "iu" or x.dtype == np.bool_:
            raise NotImplementedError(f'"bincount_cpu" not implemented for \'{self.dtype.name.capitalize()}\'')
        if x.ndim != 1 or (x.size and x.min() < 0):
            raise RuntimeError(f"bincount only supports 1-d non-negative integral inputs (got {x.ndim}-d, "
                               f"min {x.min() if x.size else None})")
        if weights is not None and tuple(weights.shape) != tuple(self.shape):
            raise RuntimeError(f"weights should be 1-d and have the same length as input: got {list(weights.shape)} "
                               f"for input {list(self.shape)}")
        w = None if weights is None else _raw(weights)
        out = B.bincount(x, w, minlength)
        if w is None:
            return Tensor._make(out.astype(np.int64))
        return Tensor._make(out.astype(w.dtype if w.dtype.kind == "f" else np.float64))

    def histc(self, bins: builtins.int = 100, min: Number = 0, max: Number = 0) -> Tensor:  # noqa: A002
        """Histogram of ``bins`` equal bins over [min, max] (the data's range when both are 0)."""
        if self._data.dtype.kind != "f":
            raise RuntimeError(f"torch.histc: input tensor and bins tensors should have the same dtype, "
                               f"expected a floating point input, got {self.dtype.name.capitalize()}")
        if bins <= 0:
            raise RuntimeError(f"torch.histc(): bins must be > 0, but got {bins} for dimension 0")
        lo, hi = builtins.float(min), builtins.float(max)
        if lo == hi and self.numel():
            lo, hi = builtins.float(self._data.min()), builtins.float(self._data.max())
        if lo == hi:
            lo, hi = lo - 1, hi + 1
        if lo > hi:
            raise RuntimeError(f"torch.histc(): max must be larger than min, got min {lo} and max {hi}")
        counts, _ = B.histogram(self._data, bins, (lo, hi))
        return Tensor._make(counts.astype(self._data.dtype))

    # ---- more methods (compat 2) ----------------------------------------------------------------
    # in-place forms: each computes the out-of-place op and writes it back through ``_inplace``
    # (comparisons keep self's dtype: the bool result is cast into self, as PyTorch does)
    def absolute_(self) -> Tensor:
        return self._inplace(lambda s: s.abs())

    def ceil_(self) -> Tensor:
        return self._inplace(lambda s: s.ceil())

    def floor_(self) -> Tensor:
        return self._inplace(lambda s: s.floor())

    def round_(self, decimals: builtins.int = 0) -> Tensor:
        return self._inplace(lambda s: s.round(decimals=decimals))

    def trunc_(self) -> Tensor:
        return self._inplace(lambda s: s.trunc())

    def frac_(self) -> Tensor:
        return self._inplace(lambda s: s.frac())

    def sin_(self) -> Tensor:
        return self._inplace(lambda s: s.sin())

    def cos_(self) -> Tensor:
        return self._inplace(lambda s: s.cos())

    def tan_(self) -> Tensor:
        return self._inplace(lambda s: s.tan())

    def sinh_(self) -> Tensor:
        return self._inplace(lambda s: s.sinh())

    def cosh_(self) -> Tensor:
        return self._inplace(lambda s: s.cosh())

    def exp2_(self) -> Tensor:
        return self._inplace(lambda s: s.exp2())

    def expm1_(self) -> Tensor:
        return self._inplace(lambda s: s.expm1())

    def log10_(self) -> Tensor:
        return self._inplace(lambda s: s.log10())

    def log1p_(self) -> Tensor:
        return self._inplace(lambda s: s.log1p())

    def log2_(self) -> Tensor:
        return self._inplace(lambda s: s.log2())

    def rsqrt_(self) -> Tensor:
        return self._inplace(lambda s: s.rsqrt())

    def reciprocal_(self) -> Tensor:
        return self._inplace(lambda s: s.reciprocal())

    def negative_(self) -> Tensor:
        return self._inplace(lambda s: -s)

    def sign_(self) -> Tensor:
        return self._inplace(lambda s: s.sign())

    def sgn_(self) -> Tensor:
        return self._inplace(lambda s: s.sgn())

    def square_(self) -> Tensor:
        return self._inplace(lambda s: s.square())

    def erf_(self) -> Tensor:
        return self._inplace(lambda s: s.erf())

    def clamp_min_(self, min: Any) -> Tensor:  # noqa: A002
        return self._inplace(lambda s: s.clamp_min(min), min)

    def clamp_max_(self, max: Any) -> Tensor:  # noqa: A002
        return self._inplace(lambda s: s.clamp_max(max), max)

    def cumsum_(self, dim: builtins.int, *, dtype: Any = None) -> Tensor:
        # (accumulates in self's dtype, as PyTorch: ints are not widened to int64 first)
        return self._inplace(lambda s: s.cumsum(dim, dtype=self.dtype if dtype is None else dtype))

    def fmod_(self, other: Any) -> Tensor:
        return self._inplace(lambda s: s.fmod(other), other)

    def remainder_(self, other: Any) -> Tensor:
        return self._inplace(lambda s: s.remainder(other), other)

    def floor_divide_(self, other: Any) -> Tensor:
        return self._inplace(lambda s: s.floor_divide(other), other)

    def true_divide_(self, other: Any) -> Tensor:
        return self._inplace(lambda s: s.true_divide(other), other)

    def divide_(self, other: Any, *, rounding_mode: str | None = None) -> Tensor:
        return self.div_(other, rounding_mode=rounding_mode)

    def multiply_(self, other: Any) -> Tensor:
        return self.mul_(other)

    def subtract_(self, other: Any, *, alpha: Number = 1) -> Tensor:
        return self.sub_(other, alpha=alpha)

    def tril_(self, diagonal: builtins.int = 0) -> Tensor:
        return self._inplace(lambda s: s.tril(diagonal))

    def triu_(self, diagonal: builtins.int = 0) -> Tensor:
        return self._inplace(lambda s: s.triu(diagonal))

    def eq_(self, other: Any) -> Tensor:
        return self._inplace(lambda s: s.eq(other), other)

    def ne_(self, other: Any) -> Tensor:
        return self._inplace(lambda s: s.ne(other), other)

    def lt_(self, other: Any) -> Tensor:
        return self._inplace(lambda s: s.lt(other), other)

    def le_(self, other: Any) -> Tensor:
        return self._inplace(lambda s: s.le(other), other)

    def gt_(self, other: Any) -> Tensor:
        return self._inplace(lambda s: s.gt(other), other)

    def ge_(self, other: Any) -> Tensor:
        return self._inplace(lambda s: s.ge(other), other)

    greater_, greater_equal_, less_, less_equal_, not_equal_ = gt_, ge_, lt_, le_, ne_

    def logical_and_(self, other: Any) -> Tensor:
        return self._inplace(lambda s: s.logical_and(other), other)

    def logical_or_(self, other: Any) -> Tensor:
        return self._inplace(lambda s: s.logical_or(other), other)

    def logical_xor_(self, other: Any) -> Tensor:
        return self._inplace(lambda s: s.logical_xor(other), other)

    def logical_not_(self) -> Tensor:
        return self._inplace(lambda s: s.logical_not())

    # bitwise and integer ops: no gradient (PyTorch defines none); ints and bools only
    def _integral(self, o: Any, name: str, bools: builtins.bool = True) -> tuple[Tensor, Any]:
        a, b = _promote(self, o)
        for t in (a, b):
            kind = t._data.dtype.kind if isinstance(t, Tensor) else ("b" if isinstance(t, bool) else "f"
                                                                      if isinstance(t, float) else "i")
            if kind not in ("iub" if bools else "iu"):
                dt = _SCALAR_TYPE.get(t.dtype.name, t.dtype.name) if isinstance(t, Tensor) else "Float"
                raise NotImplementedError(f'"{name}_cpu" not implemented for \'{dt}\'')
        return a, b

    def bitwise_and(self, other: Any) -> Tensor:
        """Bitwise AND of ints or bools: ``tensor([6]).bitwise_and(3)`` is ``tensor([2])``."""
        a, b = self._integral(other, "bitwise_and")
        return Tensor._make(B.bitwise_and(a._data, _raw(b)))

    def bitwise_or(self, other: Any) -> Tensor:
        """Bitwise OR of ints or bools: ``tensor([6]).bitwise_or(3)`` is ``tensor([7])``."""
        a, b = self._integral(other, "bitwise_or")
        return Tensor._make(B.bitwise_or(a._data, _raw(b)))

    def bitwise_xor(self, other: Any) -> Tensor:
        """Bitwise XOR of ints or bools: ``tensor([6]).bitwise_xor(3)`` is ``tensor([5])``."""
        a, b = self._integral(other, "bitwise_xor")
        return Tensor._make(B.bitwise_xor(a._data, _raw(b)))

    def bitwise_not(self) -> Tensor:
        """Bitwise NOT of ints or bools: ``tensor([0]).bitwise_not()`` is ``tensor([-1])``."""
        self._integral(self, "bitwise_not")
        return ~self

    def bitwise_left_shift(self, other: Any) -> Tensor:
        """``x << other`` for ints: ``tensor([1]).bitwise_left_shift(3)`` is ``tensor([8])``."""
        a, b = self._integral(other, "lshift", bools=False)
        return Tensor._make(B.left_shift(a._data, _raw(b)))

    def bitwise_right_shift(self, other: Any) -> Tensor:
        """``x >> other`` for ints: ``tensor([8]).bitwise_right_shift(3)`` is ``tensor([1])``."""
        a, b = self._integral(other, "rshift", bools=False)
        return Tensor._make(B.right_shift(a._data, _raw(b)))

    def gcd(self, other: Any) -> Tensor:
        """Greatest common divisor of ints: ``tensor([12]).gcd(tensor([8]))`` is ``tensor([4])``."""
        a, b = self._integral(other, "gcd", bools=False)
        return Tensor._make(B.gcd(a._data, _raw(b)))

    def lcm(self, other: Any) -> Tensor:
        """Least common multiple of ints: ``tensor([4]).lcm(tensor([6]))`` is ``tensor([12])``."""
        a, b = self._integral(other, "lcm", bools=False)
        return Tensor._make(B.lcm(a._data, _raw(b)))

    def bitwise_and_(self, other: Any) -> Tensor:
        return self._inplace(lambda s: s.bitwise_and(other))

    def bitwise_or_(self, other: Any) -> Tensor:
        return self._inplace(lambda s: s.bitwise_or(other))

    def bitwise_xor_(self, other: Any) -> Tensor:
        return self._inplace(lambda s: s.bitwise_xor(other))

    def bitwise_not_(self) -> Tensor:
        return self._inplace(lambda s: s.bitwise_not())

    def bitwise_left_shift_(self, other: Any) -> Tensor:
        return self._inplace(lambda s: s.bitwise_left_shift(other))

    def bitwise_right_shift_(self, other: Any) -> Tensor:
        return self._inplace(lambda s: s.bitwise_right_shift(other))

    def gcd_(self, other: Any) -> Tensor:
        return self._inplace(lambda s: s.gcd(other))

    def lcm_(self, other: Any) -> Tensor:
        return self._inplace(lambda s: s.lcm(other))

    def ldexp(self, other: Any) -> Tensor:
        """x * 2**other (PyTorch's composite, differentiable in both): ``tensor([1.]).ldexp(tensor([3]))``
        is ``tensor([8.])``."""
        return self * (2.0 ** _as_tensor(other))

    def ldexp_(self, other: Any) -> Tensor:
        return self._inplace(lambda s: s.ldexp(other), other)

    def frexp(self) -> Any:
        """(mantissa, exponent) with x = mantissa * 2**exponent, |mantissa| in [0.5, 1): the
        mantissa is differentiable (x / 2**exponent)."""
        if self._data.dtype.kind != "f":
            raise RuntimeError(f"torch.frexp() only supports floating-point dtypes, got {self.dtype}")
        e = Tensor._make(B.frexp(self._data)[1].astype(np.int32))
        return return_types.frexp(self * Tensor._make(B.ldexp(np.ones((), self._data.dtype), -e._data)), e)

    def nextafter(self, other: Any) -> Tensor:
        """The next representable float after x towards other (no gradient)."""
        a, b = _promote(self, other)
        if a._data.dtype.kind != "f":
            raise NotImplementedError(f"\"nextafter_cpu\" not implemented for '{a.dtype.name.capitalize()}'")
        return Tensor._make(B.nextafter(a._data, _raw(b)))

    def nextafter_(self, other: Any) -> Tensor:
        return self._inplace(lambda s: s.nextafter(other))

    # shape and scatter helpers
    def unfold(self, dimension: builtins.int, size: builtins.int, step: builtins.int) -> Tensor:
        """Sliding windows of ``size`` every ``step`` along ``dimension``, as a new last dim:
        ``arange(5.).unfold(0, 2, 2)`` is ``[[0, 1], [2, 3]]``."""
        d = _dim(dimension, max(self.ndim, 1))
        n = self.shape[d] if self.ndim else 1
        if size > n:
            raise RuntimeError(f"maximum size for tensor at dimension {d} is {n} but size is {size}")
        if step <= 0:
            raise RuntimeError(f"step is {step} but must be > 0")
        if not self.ndim:
            return self.reshape(1)
        idx = np.arange((n - size) // step + 1)[:, None] * step + np.arange(size)  # (windows, size)
        x = self.movedim(d, -1)[..., Tensor._make(idx)]  # (..., windows, size)
        return x.movedim(-2, d)

    def select(self, dim: builtins.int, index: builtins.int) -> Tensor:
        """The slice at ``index`` along ``dim``, that dim removed: ``x.select(1, 0)`` is ``x[:, 0]``."""
        if not self.ndim:
            raise IndexError("select() cannot be applied to a 0-dim tensor.")
        d = _dim(dim, self.ndim)
        n = self.shape[d]
        if not -n <= index < n:
            raise IndexError(f"select(): index {index} out of range for tensor of size {list(self.shape)} "
                             f"at dimension {d}")
        return self[(slice(None),) * d + (index,)]

    def _scatter_into(self, key: Any, src: Tensor, what: str) -> Tensor:
        out = self.clone()
        want = tuple(out[key].shape)
        if tuple(src.shape) != want:
            raise RuntimeError(f"{what}: expected src to have a size equal to the slice of self. src size = "
                               f"{list(src.shape)}, slice size = {list(want)}")
        out[key] = src
        return out

    def select_scatter(self, src: Tensor, dim: builtins.int, index: builtins.int) -> Tensor:
        """A copy of self with ``src`` written at ``select(dim, index)`` (differentiable in both)."""
        self.select(dim, index)
        return self._scatter_into((slice(None),) * _dim(dim, self.ndim) + (index,), src, "select_scatter")

    def slice_scatter(self, src: Tensor, dim: builtins.int = 0, start: builtins.int | None = None,
                      end: builtins.int | None = None, step: builtins.int = 1) -> Tensor:
        """A copy of self with ``src`` written at ``[start:end:step]`` along ``dim``."""
        key = (slice(None),) * _dim(dim, self.ndim) + (slice(start, end, step),)
        return self._scatter_into(key, src, "slice_scatter")

    def diagonal_scatter(self, src: Tensor, offset: builtins.int = 0, dim1: builtins.int = 0,
                         dim2: builtins.int = 1) -> Tensor:
        """A copy of self with ``src`` written on ``diagonal(offset, dim1, dim2)``."""
        d1, d2 = _dim(dim1, self.ndim), _dim(dim2, self.ndim)
        want = tuple(self.diagonal(offset, d1, d2).shape)
        if tuple(src.shape) != want:
            raise RuntimeError(f"diagonal_scatter: expected src to have a size equal to the slice of self. "
                               f"src size = {list(src.shape)}, slice size = {list(want)}")
        k = want[-1]
        rows = np.arange(k) + max(-offset, 0)
        cols = np.arange(k) + max(offset, 0)
        order = [i for i in range(self.ndim) if i not in (d1, d2)] + [d1, d2]
        out = self.permute(order).clone()  # (..., n1, n2)
        out[..., Tensor._make(rows), Tensor._make(cols)] = src
        return out.permute(np.argsort(order).tolist())

    def split_with_sizes(self, split_sizes: Sequence[builtins.int], dim: builtins.int = 0) -> tuple[Tensor, ...]:
        """Pieces of the given sizes along ``dim`` (they must add up to its length)."""
        return self.split(list(split_sizes), dim)

    def sum_to_size(self, *size: Any) -> Tensor:
        """Sum broadcast dims away to reach ``size``: ``ones(2, 3).sum_to_size(1, 3)`` is ``[[2, 2, 2]]``."""
        s = _shape_arg(size)
        n = len(s)
        if n > self.ndim or builtins.any(t != 1 and t != x for t, x in zip(s, self.shape[self.ndim - n:])):
            raise RuntimeError(f"size {{{list(s)}}} is not expandable to size {{{list(self.shape)}}}.")
        lead = tuple(range(self.ndim - n))
        keep = tuple(i for i, t in enumerate(s) if t == 1 and self.shape[self.ndim - n + i] != 1)
        r = self.sum(lead) if lead else self
        return r.sum(keep, keepdim=True) if keep else r

    def new(self, *args: Any, **kwargs: Any) -> Tensor:
        """Legacy constructor: ``x.new(2, 3)`` is uninitialised of x's dtype, ``x.new([1, 2])`` a tensor."""
        if len(args) == 1 and isinstance(args[0], Tensor):
            return args[0].detach()
        if len(args) == 1 and not isinstance(args[0], builtins.int | Size):
            return tensor(args[0], dtype=self.dtype)
        return empty(*args, dtype=self.dtype) if args else empty(0, dtype=self.dtype)

    def masked_scatter(self, mask: Tensor, source: Tensor) -> Tensor:
        """Positions where ``mask`` holds take consecutive elements of ``source`` (row-major order)."""
        if mask._data.dtype != np.bool_:
            raise RuntimeError(f"masked_scatter_ only supports boolean masks, but got mask with dtype {mask.dtype}")
        if source._data.dtype != self._data.dtype:
            raise RuntimeError(f"masked_scatter: expected self and source to have same dtypes but got "
                               f"{self.dtype} and {source.dtype}")
        _check_broadcast(self._data.shape, mask._data.shape)
        shape = np.broadcast_shapes(self._data.shape, mask._data.shape)
        m = np.broadcast_to(mask._data, shape)
        count = builtins.int(m.sum())
        if count > source.numel():
            raise RuntimeError(f"masked_scatter: Number of elements of source < number of ones in mask "
                               f"({source.numel()} < {count})")
        pos = np.maximum(np.cumsum(m.reshape(-1)) - 1, 0).reshape(shape)  # index into source per position
        picked = source.reshape(-1)[Tensor._make(pos)] if source.numel() else self.expand(shape) * 0
        return where(Tensor._make(np.ascontiguousarray(m)), picked, self.expand(shape))

    def masked_scatter_(self, mask: Tensor, source: Tensor) -> Tensor:
        return self._inplace(lambda s: s.masked_scatter(mask, source), source)

    def fill_diagonal_(self, fill_value: Any, wrap: builtins.bool = False) -> Tensor:
        """Fill the main diagonal in place (all dims equal when more than 2; ``wrap`` for tall matrices)."""
        if self.ndim < 2:
            raise RuntimeError(f"dimensions must larger than 1, got {self.ndim}")
        if self.ndim > 2 and len(set(self.shape)) != 1:
            raise RuntimeError(f"all dimensions of input must be of equal length, got {list(self.shape)}")
        m = np.zeros(self._data.shape, np.bool_)
        np.fill_diagonal(m, True, wrap=wrap)
        return self._inplace(lambda s: s.masked_fill(Tensor._make(m), fill_value), fill_value)

    def argwhere(self) -> Tensor:
        """Indices of the non-zero elements, one row each: ``tensor([0, 3]).argwhere()`` is ``[[1]]``."""
        if not self.ndim:  # (one row of no coordinates when the scalar is non-zero)
            return self.reshape(1).nonzero()[:, :0]
        return self.nonzero()

    def renorm(self, p: Number, dim: builtins.int, maxnorm: Number) -> Tensor:
        """Each slice along ``dim`` scaled down to p-norm ``maxnorm`` where its norm exceeds it."""
        if self._data.dtype.kind != "f":
            raise RuntimeError(f"renorm: expected a floating point tensor, got {self.dtype}")
        if p <= 0:
            raise RuntimeError(f"renorm: non-positive-norm not supported, got p = {p}")
        if maxnorm < 0:
            raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm}")
        if self.ndim < 2:
            raise RuntimeError(f"renorm: input needs at least 2 dimensions, got {self.ndim} dimensions")
        d = _dim(dim, self.ndim)
        others = tuple(i for i in range(self.ndim) if i != d)
        norm = self.norm(p, others, keepdim=True) if others else self.abs()
        # PyTorch's factor: maxnorm / (norm + 1e-7) where the norm exceeds maxnorm, else 1
        return self * where(norm > maxnorm, maxnorm / (norm + 1e-7), 1.0).to(self.dtype)

    def renorm_(self, p: Number, dim: builtins.int, maxnorm: Number) -> Tensor:
        return self._inplace(lambda s: s.renorm(p, dim, maxnorm))

    def dist(self, other: Any, p: Number = 2) -> Tensor:
        """The p-norm of ``self - other``: ``tensor([3.]).dist(tensor([0.]))`` is ``tensor(3.)``."""
        return (self - other).norm(p)

    def quantile(self, q: Any, dim: builtins.int | None = None, keepdim: builtins.bool = False, *,
                 interpolation: str = "linear") -> Tensor:
        """The q-th quantiles along ``dim`` (of all elements when None), differentiable through the
        selected values: ``tensor([1., 2., 4.]).quantile(0.5)`` is ``tensor(2.)``."""
        return self._quantile(q, dim, keepdim, interpolation, ignore_nan=False)

    def nanquantile(self, q: Any, dim: builtins.int | None = None, keepdim: builtins.bool = False, *,
                    interpolation: str = "linear") -> Tensor:
        """quantile ignoring NaNs (NaN where a whole slice is NaN)."""
        return self._quantile(q, dim, keepdim, interpolation, ignore_nan=True)

    def _quantile(self, q: Any, dim: builtins.int | None, keepdim: builtins.bool, interpolation: str,
                  ignore_nan: builtins.bool) -> Tensor:
        name = "nanquantile" if ignore_nan else "quantile"
        if self._data.dtype.kind != "f":
            raise RuntimeError(f"{name}() input tensor must be either float or double dtype")
        if isinstance(q, Tensor):
            if q._data.dtype != self._data.dtype:
                raise RuntimeError(f"{name}() q tensor must be same dtype as the input tensor")
            if q.ndim > 1:
                raise RuntimeError(f"{name}() q must be a scalar or 1D tensor")
            qs = q._data.astype(np.float64)
        else:
            qs = np.asarray(q, np.float64)
        if qs.size and not (builtins.bool((qs >= 0).all()) and builtins.bool((qs <= 1).all())):
            raise RuntimeError(f"{name}() q values must be in the range [0, 1]" if isinstance(q, Tensor)
                               else f"{name}() q must be in the range [0, 1] but got {q}")
        if self.numel() == 0:
            raise RuntimeError(f"{name}() input tensor must be non-empty")
        if dim is None:
            x, out_shape = self.reshape(-1), ((1,) * self.ndim if keepdim else ())
        else:
            d = _dim(dim, max(self.ndim, 1))
            x = self.reshape(1) if not self.ndim else self.movedim(d, -1)
            shape = list(self.shape)
            if shape:
                shape[d] = 1
                if not keepdim:
                    del shape[d]
            out_shape = tuple(shape)
        v = x.sort(-1).values  # NaNs sort last
        n = v.shape[-1]
        nan = B.isnan(v._data)
        if ignore_nan:
            ranks = qs.reshape(qs.shape + (1,) * v.ndim) * ((~nan).sum(-1, keepdims=True) - 1)
            ranks = np.where(ranks < 0, 0, ranks)
        else:
            ranks = qs.reshape(qs.shape + (1,) * v.ndim) * (n - 1) + np.zeros(nan.shape[:-1] + (1,))
            ranks = np.where(nan.any(-1, keepdims=True), n - 1, ranks)
        ranks = ranks.astype(self._data.dtype).astype(np.float64)  # (PyTorch computes ranks in input's dtype)
        if interpolation == "lower":
            ranks = np.floor(ranks)
        elif interpolation == "higher":
            ranks = np.ceil(ranks)
        elif interpolation == "nearest":
            ranks = np.round(ranks)
        elif interpolation not in ("linear", "midpoint"):
            raise RuntimeError(f"{name}() interpolation must be one of linear, lower, higher, midpoint or "
                               f"nearest, but got {interpolation}")
        vb = v.expand(ranks.shape[:-1] + (n,))
        below = ranks.astype(np.int64)
        r = vb.gather(-1, Tensor._make(below))
        if interpolation in ("linear", "midpoint"):
            above = vb.gather(-1, Tensor._make(np.ceil(ranks).astype(np.int64)))
            w = np.full(ranks.shape, 0.5) if interpolation == "midpoint" else ranks - below
            r = r.lerp(above, Tensor._make(w.astype(self._data.dtype)))
        return r.reshape(qs.shape + out_shape)

    def cov(self, *, correction: builtins.int = 1, fweights: Tensor | None = None,
            aweights: Tensor | None = None) -> Tensor:
        """Covariance of the variables in rows, observations in columns (a 1-D input is one variable)."""
        if self.ndim > 2:
            raise RuntimeError(f"cov(): expected input to have two or fewer dimensions but got an input with "
                               f"{self.ndim} dimensions")
        x = self if self.ndim == 2 else self.reshape(1, -1)
        if x._data.dtype.kind != "f":
            x = x.to(D.get_default_dtype())
        n = x.shape[1]
        w = fweights
        if fweights is not None:
            if fweights._data.dtype.kind not in "iu":
                raise RuntimeError(f"cov(): expected fweights to have integral dtype but got fweights with "
                                   f"{fweights.dtype.name.capitalize()} dtype")
            if fweights.ndim > 1:
                raise RuntimeError(f"cov(): expected fweights to have one or fewer dimensions but got fweights "
                                   f"with {fweights.ndim} dimensions")
            if fweights.numel() != n:
                raise RuntimeError(f"cov(): expected fweights to have the same numel as there are observations "
                                   f"in the input but got {fweights.numel()} != {n}")
        if aweights is not None:
            if aweights._data.dtype.kind != "f":
                raise RuntimeError(f"cov(): expected aweights to have floating point dtype but got aweights with "
                                   f"{aweights.dtype.name.capitalize()} dtype")
            if aweights.ndim > 1:
                raise RuntimeError(f"cov(): expected aweights to have one or fewer dimensions but got aweights "
                                   f"with {aweights.ndim} dimensions")
            if aweights.numel() != n:
                raise RuntimeError(f"cov(): expected aweights to have the same numel as there are observations "
                                   f"in the input but got {aweights.numel()} != {n}")
            w = aweights if w is None else w * aweights
        if w is None:
            w_sum: Any = n
            avg = x.mean(1)
        else:
            w = w.to(x.dtype)
            w_sum = w.sum()
            avg = (x * w).sum(1) / w_sum
        if w is not None and aweights is not None and correction != 0:
            norm = w_sum - correction * (w * aweights.to(x.dtype)).sum() / w_sum
        else:
            norm = w_sum - correction
        norm = norm.clamp_min(0) if isinstance(norm, Tensor) else builtins.max(norm, 0)
        xc = x - avg.unsqueeze(1)
        c = xc @ (xc if w is None else xc * w).t()
        return (c / norm).squeeze()

    def corrcoef(self) -> Tensor:
        """Pearson correlation coefficients of the variables in rows (see ``cov``)."""
        c = self.cov()
        if c.ndim == 0:
            return c / c
        sd = c.diagonal().sqrt()
        c = c / sd.unsqueeze(1) / sd.unsqueeze(0)
        return c.clamp(-1, 1)

    def index_reduce(self, dim: builtins.int, index: Tensor, source: Tensor, reduce: str, *,
                     include_self: builtins.bool = True) -> Tensor:
        """Reduce rows of ``source`` into ``self`` at ``index`` along ``dim`` with prod, mean, amax or amin."""
        if reduce not in ("prod", "mean", "amax", "amin"):
            raise RuntimeError(f"index_reduce(): Expected reduce to be one of prod, mean, amax or amin but got "
                               f"{reduce}.")
        d, _ = self._index_along("index_reduce", dim, index, source)
        src = source if source.ndim else source.reshape(1)
        view = [1] * src.ndim
        view[d] = -1
        idx = index.to(D.int64).reshape(view).expand(src.shape)
        x = self if self.ndim else self.reshape(1)
        return x.scatter_reduce(d, idx, src, reduce, include_self=include_self).reshape(self.shape)

    def index_reduce_(self, dim: builtins.int, index: Tensor, source: Tensor, reduce: str, *,
                      include_self: builtins.bool = True) -> Tensor:
        return self._inplace(lambda s: s.index_reduce(dim, index, source, reduce, include_self=include_self),
                             source)

    # ---- shape ---------------------------------------------------------------------------------
    def reshape(self, *shape: Any) -> Tensor:
        """A tensor of the same data with a new shape (one size may be -1): a view where the
        strides allow one, else a copy."""
        s = _shape_arg(shape)
        _check_reshape(s, self._data.size)
        return self._reshaped(s)

    def view(self, *shape: Any) -> Tensor:
        """The same memory with a new shape, never a copy: raises where the strides do not allow
        it, as PyTorch does (``reshape`` copies then).

        >>> lightgrad.arange(6).view(2, -1).shape
        lightgrad.Size([2, 3])
        """
        s = _shape_arg(shape)
        _check_reshape(s, self._data.size)
        if not B.reshapes_as_view(self._data, s):
            raise RuntimeError("view size is not compatible with input tensor's size and stride (at least one "
                               "dimension spans across two contiguous subspaces). Use .reshape(...) instead.")
        return self._reshaped(s)

    def _reshaped(self, s: tuple[builtins.int, ...]) -> Tensor:
        if s == self._data.shape:
            return self
        t = F.Reshape.apply(self, shape=s)
        d, o = self._data, t._data
        if o.base is d or (o.base is not None and o.base is d.base):  # a view, not a copy: see _viewed
            t._version = self._version
            if t._grad_fn is None:
                t._view = (self, _RESHAPED)
        return t

    def view_as(self, other: Tensor) -> Tensor:
        return self.view(other.shape)

    def reshape_as(self, other: Tensor) -> Tensor:
        return self.reshape(other.shape)

    def flatten(self, start_dim: builtins.int = 0, end_dim: builtins.int = -1) -> Tensor:
        s, e = _dim(start_dim, self.ndim), _dim(end_dim, self.ndim)
        if not self.ndim:
            return self.reshape(1)
        if s > e:
            raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
        sh = self.shape
        return self.reshape(sh[:s] + (math.prod(sh[s:e + 1]),) + sh[e + 1:])

    def unflatten(self, dim: builtins.int, sizes: Sequence[builtins.int]) -> Tensor:
        if not self.ndim:
            raise RuntimeError(f"unflatten got an unexpected error:\nDimension specified as {dim} but tensor has no "
                               "dimensions")
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
        t = F.Permute.apply(self, order=order)
        t._version = self._version  # (always a view: see _viewed)
        if t._grad_fn is None:
            t._view = (self, _permuted(order))
        return t

    def transpose(self, dim0: builtins.int, dim1: builtins.int) -> Tensor:
        a, b = _dim(dim0, self.ndim), _dim(dim1, self.ndim)
        if not self.ndim:
            return self
        order = list(range(self.ndim))
        order[a], order[b] = order[b], order[a]
        return self.permute(order)

    swapaxes = swapdims = transpose

    def t(self) -> Tensor:
        if self.ndim > 2:
            raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {self.ndim}D")
        return self.T

    def movedim(self, source: Any, destination: Any) -> Tensor:
        """Move dim(s) ``source`` to position(s) ``destination``, the others keeping their order."""
        src = (source,) if isinstance(source, int | np.integer) else tuple(source)
        dst = (destination,) if isinstance(destination, int | np.integer) else tuple(destination)
        if len(src) != len(dst):
            raise RuntimeError(f"movedim: Invalid source or destination dims: source ({list(src)} dims) should "
                               f"contain the same number of dims as destination ({list(dst)} dims)")
        s, t = [_dim(d, self.ndim) for d in src], [_dim(d, self.ndim) for d in dst]
        if len(set(s)) != len(s):
            raise RuntimeError(f"movedim: repeated dim in `source` ({list(src)})")
        if len(set(t)) != len(t):
            raise RuntimeError(f"movedim: repeated dim in `destination` ({list(dst)})")
        if not self.ndim:
            return self
        moved = dict(zip(t, s))
        rest = iter(i for i in range(self.ndim) if i not in s)
        return self.permute([moved[i] if i in moved else next(rest) for i in range(self.ndim)])

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
        t = F.Expand.apply(self, shape=full)
        t._version = self._version  # (a view: one version counter)
        return t

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
        if not x.ndim:  # (PyTorch's words for a 0-d input along a dim: it looks for dim 1 of the repeats)
            raise IndexError("Dimension out of range (expected to be in range of [-1, 0], but got 1)")
        idx = np.repeat(np.arange(x.shape[d]), repeats)
        return x.index_select(d, Tensor._make(idx))

    def split(self, split_size: Any, dim: builtins.int = 0) -> tuple[Tensor, ...]:
        """Pieces of ``split_size`` along ``dim`` (the last one shorter), or of the given sizes."""
        if not self.ndim:
            raise RuntimeError("split expects at least a 1-dimensional tensor")
        d = _dim(dim, self.ndim)
        n = self.shape[d]
        if isinstance(split_size, int | np.integer):
            if split_size < 0:
                raise RuntimeError(f"split expects split_size be non-negative, but got split_size={split_size}")
            if split_size == 0 and n:
                raise RuntimeError(f"split_size can only be 0 if dimension size is 0, but got dimension size of {n}")
            k = max(-(-n // split_size), 1) if split_size else 1  # (at least one piece, as PyTorch)
            sizes = [int(split_size)] * (k - 1) + [n - int(split_size) * (k - 1)]
        else:
            if not isinstance(split_size, Sequence):
                raise TypeError(f"split_with_sizes(): argument 'split_sizes' (position 2) must be tuple of ints, "
                                f"not {type(split_size).__name__}")
            sizes = list(split_size)
            if any(s < 0 for s in sizes):
                raise RuntimeError(f"split_with_sizes expects split_sizes have only non-negative entries, but got "
                                   f"split_sizes={sizes}")
            if sum(sizes) != n:
                raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {n} (input tensor's "
                                   f"size at dimension {dim}), but got split_sizes={sizes}")
        out, start = [], 0
        for s in sizes:
            out.append(self.narrow(d, start, s))
            start += s
        return tuple(out)

    def chunk(self, chunks: builtins.int, dim: builtins.int = 0) -> tuple[Tensor, ...]:
        """``chunks`` pieces of ceil(n / chunks) along ``dim`` (fewer where they run out)."""
        if not self.ndim:
            raise RuntimeError("chunk expects at least a 1-dimensional tensor")
        if chunks <= 0:
            raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
        n = self.shape[_dim(dim, self.ndim)]
        if not n:  # `chunks` empty pieces (split(0) would give one)
            return self.split([0] * chunks, dim)
        return self.split(-(-n // chunks), dim)

    def tensor_split(self, indices_or_sections: Any, dim: builtins.int = 0) -> tuple[Tensor, ...]:
        """``sections`` pieces as even as can be (the first ones one longer), or pieces between the
        given indices along ``dim``."""
        if not self.ndim:
            raise RuntimeError(f"tensor_split expected at least a 1-dimensional tensor, but got a tensor with "
                               f"{self.ndim} dims")
        d = _dim(dim, self.ndim)
        cut = indices_or_sections.tolist() if isinstance(indices_or_sections, Tensor) else indices_or_sections
        if isinstance(cut, int | np.integer):
            if cut <= 0:
                raise RuntimeError(f"number of sections must be larger than 0, got {cut}")
            q, r = divmod(self.shape[d], int(cut))
            return self.split([q + 1] * r + [q] * (int(cut) - r), dim)
        bounds = [0, *cut, None]  # (slices, as PyTorch's: negative indices count from the end)
        return tuple(self[(slice(None),) * d + (slice(a, b),)] for a, b in zip(bounds, bounds[1:]))

    def unbind(self, dim: builtins.int = 0) -> tuple[Tensor, ...]:
        d = _dim(_dim(dim, self.ndim), self.ndim, scalar=False)  # (PyTorch wraps -1 before it looks)
        return tuple(self[(slice(None),) * d + (i,)] for i in range(self.shape[d]))

    def narrow(self, dim: builtins.int, start: builtins.int, length: builtins.int) -> Tensor:
        """The ``length`` entries from ``start`` along ``dim`` (a view); ``start`` may count from the end."""
        if not self.ndim:
            raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
        if length < 0:
            raise RuntimeError("narrow(): length must be non-negative.")
        d = _dim(dim, self.ndim)
        n, start = self.shape[d], builtins.int(start)
        if not -n <= start <= n:
            raise IndexError(f"start out of range (expected to be in range of [{-n}, {n}], but got {start})")
        if start < 0:
            start += n
        if start > n - length:
            raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({n}).")
        return self[(slice(None),) * d + (slice(start, start + length),)]

    def flip(self, *args: Any, dims: Any = None) -> Tensor:
        """Reverse the order along ``dims``: ``x.flip(0)``, ``x.flip(0, 1)``, ``x.flip(dims=(0, 1))``."""
        if dims is not None and args:
            raise TypeError("flip() got multiple values for argument 'dims'")
        axes = _dims(_shape_arg(args if dims is None else (dims,)), self.ndim)
        return F.Flip.apply(self, dims=axes)

    def fliplr(self) -> Tensor:
        return self.flip(1)

    def flipud(self) -> Tensor:
        return self.flip(0)

    def roll(self, shifts: Any, dims: Any = None) -> Tensor:
        if dims is None:
            return self.flatten().roll(shifts, 0).reshape(self.shape)
        if not self.ndim:  # (a 0-d tensor has no dim to roll along, not even 0)
            _dim(builtins.int(dims if isinstance(dims, int | np.integer) else dims[0]), 0, scalar=False)
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
        d1, d2 = _dim(dim1, self.ndim), _dim(dim2, self.ndim)
        if d1 == d2:
            raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
        # (a permute, not two movedims: the second index shifts when dim2 < dim1)
        x = self.permute([i for i in range(self.ndim) if i not in (d1, d2)] + [d1, d2]) \
            if (d1, d2) != (self.ndim - 2, self.ndim - 1) else self
        n, m = x.shape[-2:]
        i = np.arange(max(0, -offset), min(n, m - offset))
        index = (Ellipsis, i, i + offset)
        t = x[index]
        # (a copy, as NumPy's fancy indexing makes: in-place ops write it back into x, a view of self)
        t._view = (x, index)
        t._version = self._version  # (a view in PyTorch: one version counter)
        return t

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
            t = F.GetItem.apply(self, index=idx, advanced=advanced)
        except IndexError as e:
            raise IndexError(str(e).replace("axis", "dimension")) from None
        if not advanced:
            t._view = (self, idx)  # an in-place op on t is an in-place op on self there (_inplace)
            t._version = self._version  # (one counter for a base and its views, as PyTorch's)
        return t

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
        """``out[i][j] = x[i][index[i][j]]`` along ``dim`` (index has x's number of dims; 0-d counts as 1-d)."""
        d = _dim(dim, self.ndim)
        ix = _int_index(index, "gather")
        if max(ix.ndim, 1) != max(self.ndim, 1):
            raise RuntimeError("Index tensor must have the same number of dimensions as input tensor")
        x, i = (self if self.ndim else self.reshape(1)), (ix if ix.ndim else ix.reshape(1))
        _check_index(i, x.shape[d], d, "scatter")
        x = x[tuple(slice(0, n) if k != d else slice(None) for k, n in enumerate(i.shape))]
        out = F.Gather.apply(x, dim=d, index=i)
        return out if ix.ndim else out.reshape(())

    def take_along_dim(self, indices: Tensor, dim: builtins.int | None = None) -> Tensor:
        if dim is None:
            return self.flatten().gather(0, _as_tensor(indices).flatten())
        ix = _int_index(indices, "take_along_dim")
        if ix.ndim != self.ndim:
            raise RuntimeError(f"torch.take_along_dim(): input and indices should have the same number of "
                               f"dimensions, but got {self.ndim} dimensions for input, and {ix.ndim} dimensions "
                               "for indices")
        d = _dim(dim, self.ndim, scalar=False)
        a, b = (tuple(1 if i == d else s for i, s in enumerate(t.shape)) for t in (self, ix))
        _check_broadcast(a, b)
        shape = list(np.broadcast_shapes(a, b))
        xs = shape.copy()
        xs[d] = n = self.shape[d]
        shape[d] = ix.shape[d]
        # along a dim, as PyTorch, a negative index counts from the end (one past either end has no
        # meaning there: PyTorch reads whatever lies there; this raises as gather does)
        _check_index(ix, n, d, "take_along_dim")
        ix = ix + n * (ix < 0)
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
        if max(ix.ndim, 1) != max(self.ndim, 1):
            raise RuntimeError("Index tensor must have the same number of dimensions as self tensor")
        x, i = (self if self.ndim else self.reshape(1)), (ix if ix.ndim else ix.reshape(1))  # (0-d as 1-d)
        _check_index(i, x.shape[d], d, "scatter")
        s = src if isinstance(src, Tensor) else Tensor._make(np.asarray(src, self._data.dtype))
        if not self.ndim and s.ndim == 0:
            s = s.reshape(1)
        out = F.Scatter.apply(x, s.to(self.dtype), dim=d, index=i, add=add)
        return out if self.ndim else out.reshape(())

    def index_select(self, dim: builtins.int, index: Tensor) -> Tensor:
        d = _dim(dim, self.ndim)
        ix = _int_index(index, "index_select")
        if ix.ndim > 1:
            raise IndexError("index_select(): Index is supposed to be a vector")
        if not self.ndim:
            if ix.size != 1:
                raise RuntimeError(f"index_select(): Index to scalar can have only 1 value, got {ix.size} value(s)")
            _check_index(ix, 1, 0, "index")
            return self.reshape(1)[Tensor._make(ix.reshape(-1))].reshape(())
        if self.ndim > 1 and not self.shape[d] and ix.size:
            raise RuntimeError("index_select(): self indexing axis dim should be positive")
        # (PyTorch's CPU kernel has a path of its own, with its own words, for dim 1 of 2 or more dims)
        _check_index(ix, self.shape[d], d, "index_select_dim1" if self.ndim > 1 and d == 1 else "index")
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
        a = self
        b = _as_tensor(other, self)
        if a.ndim == 0 or b.ndim == 0:
            raise RuntimeError(f"both arguments to matmul need to be at least 1D, but they are {a.ndim}D and {b.ndim}D")
        mixed = a._arr.dtype != b._arr.dtype
        if mixed and a.ndim == 1 and b.ndim == 1:
            _mixed_matmul(a, b)  # (dot checks dtypes first; the other kernels sizes first)
        k1 = a.shape[-1]
        k2 = b.shape[-2] if b.ndim > 1 else b.shape[0]
        if k1 != k2 and b.ndim == 1 and a.ndim > 1:
            rows = math.prod(a.shape[:-1])
            raise RuntimeError(f"size mismatch, got input ({rows}), mat ({rows}x{k1}), vec ({k2})")
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
        if mixed:
            _mixed_matmul(a, b)
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
    def _view_(self, make: Any) -> Tensor:
        """An in-place view op (``unsqueeze_``, ``t_``, ...): self becomes ``make``'s view of itself and,
        in a graph, takes its node, whose parent keeps self's old shape (what backward reduces to)."""
        graph = _enabled.get() and self.requires_grad
        if graph and self._grad_fn is None:
            raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
        old = Tensor._make(self._data)
        old.requires_grad, old._grad_fn, old._version = self.requires_grad, self._grad_fn, self._version
        r = make(old)
        self.__dict__["_was"] = (*self.__dict__.get("_was", ()), self._data)  # (saved as it was: engine._holds)
        self._data = r._data
        if graph:
            self._grad_fn = r._grad_fn
        self.__dict__.pop("_view", None)  # (its link to a base describes the old shape)
        _STAMP[0] += 1
        v = self._version
        v[0] += 1
        v[1] = _STAMP[0]
        return self

    def unsqueeze_(self, dim: builtins.int) -> Tensor:
        return self._view_(lambda t: t.unsqueeze(dim))

    def squeeze_(self, dim: Any = None) -> Tensor:
        return self._view_(lambda t: t.squeeze() if dim is None else t.squeeze(dim))

    def t_(self) -> Tensor:
        return self._view_(lambda t: t.t())

    def transpose_(self, dim0: builtins.int, dim1: builtins.int) -> Tensor:
        return self._view_(lambda t: t.transpose(dim0, dim1))

    swapaxes_ = swapdims_ = transpose_

    def _inplace(self, compute: Any, *others: Any) -> Tensor:
        """Run ``compute(self)`` and store the result in self's storage, as PyTorch's in-place ops:
        the tensor takes the result's place in the graph and its version counter is bumped."""
        graph = _enabled.get() and (self.requires_grad or any(isinstance(o, Tensor) and o.requires_grad for o in others))
        if graph and self.requires_grad and self._grad_fn is None:
            raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
        view = _view_link(self) if graph else None
        if view is not None:
            self._view = view  # (kept: after this op, self's place in the graph no longer says it)
        link = view
        while link is not None:
            if link[0].requires_grad and link[0]._grad_fn is None:
                raise RuntimeError("a view of a leaf Variable that requires grad is being used in an in-place "
                                   "operation.")
            link = _view_link(link[0])
        if graph:
            # the op reads the old value through a copy that keeps self's place in the graph
            old = Tensor._make(B.copy(self._data))
            old.requires_grad, old._grad_fn = self.requires_grad, self._grad_fn
            r = compute(old)
            if not r.requires_grad:  # (a comparison, a rounding: still in the graph, with zero gradients, as PyTorch's)
                r = F.ZeroGrad.apply(r._data, old, *[o for o in others if isinstance(o, Tensor)])
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
        if graph and view is not None:
            _write_through(view, self)
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
        if self._grad_fn is not None and _enabled.get():
            # the new values depend on nothing: the old graph gets a zero gradient, as PyTorch's
            return self._inplace(lambda s: s.masked_fill(ones(s.shape, dtype=D.bool_), value))
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

    def multinomial(self, num_samples: builtins.int, replacement: builtins.bool = False, *,
                    generator: Any = None) -> Tensor:
        """``lightgrad.multinomial(self, ...)``: category indices drawn by the rows' weights."""
        from .random import multinomial
        return multinomial(self, num_samples, replacement, generator=generator)

    def bernoulli(self, *, generator: Any = None) -> Tensor:
        """1 with probability self, elementwise: ``lightgrad.bernoulli(self)``."""
        from .random import bernoulli
        return bernoulli(self, generator=generator)

    def log_normal_(self, mean: builtins.float = 1.0, std: builtins.float = 2.0, *, generator: Any = None) -> Tensor:
        from .random import _gen
        self._check_leaf_inplace()
        self._data[...] = _gen(generator).lognormal(mean, std, self.shape)
        _bump(self)
        return self

    def cauchy_(self, median: builtins.float = 0.0, sigma: builtins.float = 1.0, *, generator: Any = None) -> Tensor:
        from .random import _gen
        self._check_leaf_inplace()
        self._data[...] = median + sigma * _gen(generator).standard_cauchy(self.shape)
        _bump(self)
        return self

    def geometric_(self, p: builtins.float, *, generator: Any = None) -> Tensor:
        from .random import _gen
        self._check_leaf_inplace()
        self._data[...] = _gen(generator).geometric(p, self.shape)
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
        return _fill(size, 0.0, dtype or self.dtype, requires_grad, device, "new_zeros")

    def new_ones(self, *size: Any, dtype: Any = None, device: Any = None, requires_grad: builtins.bool = False) -> Tensor:
        return _fill(size, 1.0, dtype or self.dtype, requires_grad, device, "new_ones")

    def new_full(self, size: Any, fill_value: Any, *, dtype: Any = None, device: Any = None,
                 requires_grad: builtins.bool = False) -> Tensor:
        return _fill((size,), _scalar_of(fill_value), dtype or self.dtype, requires_grad, device, "new_full",
                     packed=True)

    def new_empty(self, *size: Any, dtype: Any = None, device: Any = None, requires_grad: builtins.bool = False) -> Tensor:
        return _fill(size, None, dtype or self.dtype, requires_grad, device, "new_empty")

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
                and not np.may_share_memory(base._data, t._data):
            B.assign(base._data, index, t._data)
        v = base._version
        if v[1] != _STAMP[0]:  # (a view shares its base's counter: bumped once)
            v[0] += 1
            v[1] = _STAMP[0]
        t, view = base, getattr(base, "_view", None)


# _viewed: a tensor t that reshape or permute made sharing its base's memory shares the base's
# version counter too, as PyTorch's views do, and, when it has no grad_fn that leads to the base
# (the base needs no grad, or grad mode is off), records ``t._view = (base, how)``, ``how`` a
# Reshape or Permute node (see _view_link), so that a value that requires grad written into t in
# place reaches the base (_write_through). Written out in reshape and permute: they run often.

# PyTorch's scalar type names, as its messages and Tensor.type() say them
_SCALAR_TYPE = D.SCALAR_NAMES


def _permuted(order: tuple[builtins.int, ...]) -> Any:
    """A Permute node that says how a view was made (_viewed)."""
    node = F.Permute()
    node.order = order
    return node


def _zero_grad(x: Tensor, arr: np.ndarray) -> Tensor:
    """The result ``arr`` of a step function of x (floor, sign): in the graph with a zero gradient
    when x requires grad, as PyTorch records it, not cut from it."""
    if x.requires_grad and _enabled.get():
        return F.ZeroGrad.apply(arr, x)
    return Tensor._make(arr)


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


def _mixed_matmul(a: Tensor, b: Tensor) -> None:
    """PyTorch's error for a matrix product of two dtypes (it promotes neither), in the words of
    the kernel its shapes reach: dot, addmv, mm or bmm."""
    sa, sb = D.SCALAR_NAMES.get(a.dtype.name, a.dtype.name), D.SCALAR_NAMES.get(b.dtype.name, b.dtype.name)
    if a.ndim == 0 or b.ndim == 0:
        return  # (matmul's own 0-d error says it)
    if a.ndim == 1 and b.ndim == 1:
        raise RuntimeError(f"dot : expected both vectors to have same dtype, but found {sa} and {sb}")
    if b.ndim == 1:
        raise RuntimeError(f"addmv input tensors must have the same dtype, but got {sb}, {sa}, and {sb}")
    if b.ndim == 2:
        ca, cb = D.CPP_NAMES.get(a.dtype.name, a.dtype.name), D.CPP_NAMES.get(b.dtype.name, b.dtype.name)
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: {ca} != {cb}")
    raise RuntimeError(f"expected scalar type {sa} but found {sb}")


def _check_divisor(a: Any, b: Any) -> None:
    """PyTorch's error for an integer division or modulo (both operands integral) by zero, where
    NumPy gives 0 and a warning. (Float operands, the usual case, are one dtype test.)"""
    def integral(v: Any) -> builtins.bool:
        return v._data.dtype.kind in "biu" if isinstance(v, Tensor) else isinstance(v, int | np.integer)
    if integral(b) and integral(a) and not np.all(_raw(b)):
        try:
            n = math.prod(np.broadcast_shapes(np.shape(_raw(a)), np.shape(_raw(b))))
        except ValueError:
            return  # (the op's own shape error says it)
        if n:  # (a zero that divides nothing is no error: PyTorch checks each quotient)
            raise RuntimeError("ZeroDivisionError")


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
            and sys.getrefcount(x) == 5 and sys.getrefcount(a) == 4
            and _arena.get() is None)  # (inside an arena, results are carved from it: memory.py)


def _view_link(t: Tensor) -> tuple[Tensor, Any] | None:
    """(base, how) when t is a view of the Tensor base: ``how`` is the index of basic indexing or
    diagonal() (recorded on t), or the Reshape or Permute node that made t from base sharing its memory."""
    d = t.__dict__
    if "_view" in d:  # (kept by _inplace and _write_through; None: not a view)
        return d["_view"]  # type: ignore[no-any-return]
    node = t._grad_fn
    if type(node) is F.Reshape or type(node) is F.Permute:
        base = node.parents[0]
        if isinstance(base, Tensor) and np.may_share_memory(base._data, t._data):
            return base, node
    return None


def _write_through(view: tuple[Tensor, Any] | None, value: Tensor) -> None:
    """After an in-place op on ``value`` recorded in the graph, ``value`` a view of a base (see
    _view_link): the base's place in the graph taken by the base rebuilt around the new value
    (``base[index] = value``, or the view undone for a reshape or permute), as PyTorch rebases a
    view's base, up the chain of views (``_bump`` has written the values)."""
    while view is not None:
        base, how = view
        up = _view_link(base)  # (before base's place in the graph changes)
        if type(how) is F.Reshape:
            value = value.reshape(base.shape)
            if base._version[1] != _STAMP[0]:  # (not when it shares the view's counter, bumped already)
                _bump(base)
        elif type(how) is F.Permute:
            value = value.permute(np.argsort(how.order).tolist())
            if base._version[1] != _STAMP[0]:
                _bump(base)
        else:
            old = Tensor._make(base._data)  # base's old place in the graph (its values are not read)
            old.requires_grad, old._grad_fn = base.requires_grad, base._grad_fn
            value = F.IndexPut.apply(old, value, index=how, accumulate=False)
        base._grad_fn, base.requires_grad = value._grad_fn, value.requires_grad
        base.__dict__.setdefault("_view", up)  # (its place in the graph now reads the view: keep the link)
        view = up


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


def _check_nonempty(x: Tensor, dim: Any, name: str) -> None:
    """PyTorch's errors for a reduction without identity (max, argmax, ...) over no elements; ``dim``
    as the caller was given it (None or (): all dims)."""
    if x._data.size:
        return
    if dim is None or not isinstance(dim, int | np.integer) and not len(dim):
        if name in ("argmax", "argmin"):
            raise IndexError(f"{name}(): Expected reduction dim to be specified for input.numel() == 0.")
        if name == "aminmax":
            raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as the operation has no "
                               "identity.")
        raise RuntimeError(f"{name}(): Expected reduction dim to be specified for input.numel() == 0. "
                           "Specify the reduction dim with the 'dim' argument.")
    for d in (builtins.int(dim),) if isinstance(dim, int | np.integer) else dim:
        if not x.shape[_dim(d, x.ndim)]:
            shown = d if name in ("amax", "amin") else _dim(d, x.ndim)  # (amax and amin say it as given)
            raise IndexError(f"{name}{':' if name == 'aminmax' else '():'} Expected reduction dim {shown} to "
                             "have non-zero size.")


def _int_index(index: Any, op: str) -> np.ndarray:
    ix = _raw(index) if isinstance(index, Tensor) else np.asarray(index)
    if ix.dtype.kind not in "iu":
        raise RuntimeError(f"{op}(): Expected dtype int64 for index, got {D._BY_NP.get(ix.dtype, ix.dtype)}")
    return ix.astype(np.int64, copy=False)


# How PyTorch's CPU kernels word an index outside its dim, by op family: (exception, message,
# whether a negative index counts from the end); {i} is the first bad index, {d} the dim, {n} its size.
_OUT_OF_RANGE = {
    # gather, scatter, scatter_add, scatter_reduce; index_add on its fast path
    "scatter": (RuntimeError, "index {i} is out of bounds for dimension {d} with size {n}", False),
    "take_along_dim": (RuntimeError, "index {i} is out of bounds for dimension {d} with size {n}", True),
    "index": (IndexError, "index out of range in self", False),  # index_select, index_add, index_reduce
    "index_select_dim1": (RuntimeError, "INDICES element is out of DATA bounds, id={i} axis_dim={n}", False),
    "index_copy": (IndexError, "index_copy_(): index {i} is out of bounds for dimension {d} with size {n}", False),
    "index_fill": (IndexError, "index {i} is out of bounds for dimension {d} with size {n}", True),
    "take": (IndexError, "out of range: tried to access index {i} on a tensor of {n} elements.", True),  # and put
}


def _check_index(ix: np.ndarray, n: builtins.int, d: builtins.int, kind: str) -> None:
    """Raise PyTorch's error for ``kind`` (see _OUT_OF_RANGE) where an entry of ``ix`` is outside a
    dim of size ``n``: one min and one max when all are inside."""
    exc, msg, negative = _OUT_OF_RANGE[kind]
    lo = -n if negative else 0
    if ix.size and (ix.max() >= n or ix.min() < lo):
        flat = ix.reshape(-1)
        bad = builtins.int(flat[np.argmax((flat >= n) | (flat < lo))])
        raise exc(msg.format(i=bad, d=d, n=n))


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
    """Concatenate along an existing dim: ``cat([a, b], dim=1)`` (always a new tensor)."""
    ts = list(tensors)
    if not ts:
        raise RuntimeError("torch.cat(): expected a non-empty list of Tensors")
    # PyTorch's legacy rule: a 1-d empty tensor joins tensors of any shape (it still counts for the
    # dtype and gets a gradient)
    skip = [t.ndim == 1 and t.shape[0] == 0 for t in ts]
    ref = next((t for t, s in zip(ts, skip) if not s), ts[0])
    for i, t in enumerate(ts):
        if not t.ndim:
            raise RuntimeError(f"zero-dimensional tensor (at position {i}) cannot be concatenated")
    d = _dim(dim, ref.ndim)
    for i, t in enumerate(ts):
        if skip[i] and t.ndim != ref.ndim:
            continue
        if t.ndim != ref.ndim:
            raise RuntimeError(f"Tensors must have same number of dimensions: got {ref.ndim} and {t.ndim}")
        for j in range(t.ndim):
            if j != d and t.shape[j] != ref.shape[j]:
                raise RuntimeError(f"Sizes of tensors must match except in dimension {d}. Expected size "
                                   f"{ref.shape[j]} but got size {t.shape[j]} for tensor number {i} in the list.")
    dt = D.result_type(*ts) if len({t._data.dtype for t in ts}) > 1 else None
    if dt is not None:
        ts = [t.to(dt) for t in ts]
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


# more math, BLAS-style, shapes (compat): helpers and the functions that are not Tensor methods

_LN2 = math.log(2)


def _float_operands(a: Tensor, b: Any) -> tuple[Tensor, Any]:
    """a and b promoted to their common dtype, integers to the default float (b may stay a number)."""
    x, y = _promote(a, b)
    if x._data.dtype.kind != "f":
        x, y = _promote(x.to(D.get_default_dtype()), y)
    if isinstance(y, Tensor) and y._data.dtype.kind != "f":
        x, y = _promote(x, y.to(D.get_default_dtype()))
    if isinstance(y, Tensor) and x._data.shape != y._data.shape:
        _check_broadcast(x._data.shape, y._data.shape)
    return x, y


def _check_expand(shape: tuple[builtins.int, ...], target: tuple[builtins.int, ...]) -> None:
    """Raise as PyTorch's expand does unless ``shape`` broadcasts to ``target`` unchanged."""
    lead = len(target) - len(shape)
    if lead < 0 or any(s != t and s != 1 for s, t in zip(shape, target[lead:])):
        bad = next((i for i in range(len(shape)) if lead < 0 or shape[i] not in (1, target[i + lead])), 0)
        raise RuntimeError(f"The expanded size of the tensor ({target[bad + lead] if bad + lead >= 0 else '?'}) "
                           f"must match the existing size ({shape[bad]}) at non-singleton dimension "
                           f"{bad + max(lead, 0)}.  Target sizes: {list(target)}.  Tensor sizes: {list(shape)}")


def tensordot(a: Tensor, b: Tensor, dims: Any = 2) -> Tensor:
    """Sum over paired dims: ``dims=n`` pairs a's last n with b's first n; or ``([a dims], [b dims])``."""
    if isinstance(dims, builtins.int):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        da, db = list(range(a.ndim - dims, a.ndim)), list(range(dims))
    else:
        da, db = ([dims[0]] if isinstance(dims[0], builtins.int) else list(dims[0]),
                  [dims[1]] if isinstance(dims[1], builtins.int) else list(dims[1]))
        if isinstance(dims, Tensor):
            da, db = [builtins.int(v) for v in dims[0].tolist()], [builtins.int(v) for v in dims[1].tolist()]
    if len(da) != len(db):
        raise RuntimeError(f"both dimension lists should have same length, got {len(da)} and {len(db)}")
    da, db = [_dim(d, a.ndim) for d in da], [_dim(d, b.ndim) for d in db]
    for x, y in zip(da, db):
        if a.shape[x] != b.shape[y]:
            raise RuntimeError(f"contracted dimensions need to match, but first has size {a.shape[x]} in dim {x} "
                               f"and second has size {b.shape[y]} in dim {y}")
    fa = [d for d in range(a.ndim) if d not in da]
    fb = [d for d in range(b.ndim) if d not in db]
    k = math.prod(a.shape[d] for d in da)
    am = a.permute(*(fa + da)).reshape(-1, k)  # (free a, contracted)
    bm = b.permute(*(db + fb)).reshape(k, -1)  # (contracted, free b)
    return am.matmul(bm).reshape(tuple(a.shape[d] for d in fa) + tuple(b.shape[d] for d in fb))


def _atleast(tensors: tuple[Any, ...], fix: Any) -> Any:
    seq = len(tensors) == 1 and isinstance(tensors[0], list | tuple)
    ts = [fix(_as_tensor(t)) for t in (tensors[0] if seq else tensors)]
    return tuple(ts) if seq or len(ts) != 1 else ts[0]


def atleast_1d(*tensors: Any) -> Any:
    """Tensors with at least one dim (0-d becomes shape (1,)); a tuple for several inputs."""
    return _atleast(tensors, lambda t: t.reshape(1) if t.ndim == 0 else t)


def atleast_2d(*tensors: Any) -> Any:
    """Tensors with at least two dims: 0-d becomes (1, 1), 1-d (n,) becomes (1, n)."""
    return _atleast(tensors, lambda t: t.reshape((1,) * (2 - t.ndim) + t.shape) if t.ndim < 2 else t)


def atleast_3d(*tensors: Any) -> Any:
    """Tensors with at least three dims: 0-d (1, 1, 1), 1-d (1, n, 1), 2-d (m, n, 1)."""
    def fix(t: Tensor) -> Tensor:
        if t.ndim == 0:
            return t.reshape(1, 1, 1)
        if t.ndim == 1:
            return t.reshape(1, -1, 1)
        return t.unsqueeze(-1) if t.ndim == 2 else t
    return _atleast(tensors, fix)


def column_stack(tensors: Sequence[Tensor]) -> Tensor:
    """Stack as columns: 0-d and 1-d tensors become (n, 1) columns, then join along dim 1."""
    return cat([t.reshape(-1, 1) if t.ndim <= 1 else t for t in tensors], 1)


def _tri_indices(fn: Any, row: builtins.int, col: builtins.int, offset: builtins.int, dtype: Any) -> Tensor:
    r, c = fn(row, offset, col)
    return Tensor._make(B.stack([r, c]).astype(D.to_dtype(dtype).np if dtype is not None else np.int64))


def tril_indices(row: builtins.int, col: builtins.int, offset: builtins.int = 0, *, dtype: Any = None,
                 device: Any = None) -> Tensor:
    """(2, N) row and column indices of the lower triangle of a row x col matrix."""
    return _tri_indices(B.tril_indices, row, col, offset, dtype)


def triu_indices(row: builtins.int, col: builtins.int, offset: builtins.int = 0, *, dtype: Any = None,
                 device: Any = None) -> Tensor:
    """(2, N) row and column indices of the upper triangle of a row x col matrix."""
    return _tri_indices(B.triu_indices, row, col, offset, dtype)


def cartesian_prod(*tensors: Tensor) -> Tensor:
    """All combinations of the entries of 1-D tensors, as rows: shape (prod of sizes, n)."""
    for i, t in enumerate(tensors):
        if t.ndim != 1:
            raise RuntimeError(f"Expect a 1D vector, but got shape {list(t.shape)} for input {i}")
    if len(tensors) == 1:
        return tensors[0]
    n = len(tensors)
    shape = tuple(t.shape[0] for t in tensors)
    grids = [t.reshape((1,) * i + (-1,) + (1,) * (n - i - 1)).expand(shape) for i, t in enumerate(tensors)]
    return stack(grids, -1).reshape(-1, n)


def block_diag(*tensors: Tensor) -> Tensor:
    """A block-diagonal matrix of the inputs (0-d is 1 x 1, 1-d (n,) is 1 x n)."""
    blocks = []
    for i, t in enumerate(tensors):
        if t.ndim > 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer dimensions. Input {i} "
                               f"has {t.ndim} dimensions")
        blocks.append(t.reshape(1, -1) if t.ndim < 2 else t)
    if not blocks:
        return zeros(1, 0)
    dt = D.result_type(*[b for b in blocks])
    cols = builtins.sum(b.shape[1] for b in blocks)
    rows, left = [], 0
    for b in blocks:
        r, c = b.shape
        parts = [zeros(r, left, dtype=dt), b.to(dt), zeros(r, cols - left - c, dtype=dt)]
        rows.append(cat([p for p in parts if p.shape[1]] or [parts[1]], 1))
        left += c
    return cat(rows, 0)


def einsum(equation: str, *operands: Any) -> Tensor:
    """Einstein summation, e.g. ``einsum('bij,bjk->bik', a, b)``; '...' is supported."""
    ops = list(operands[0]) if len(operands) == 1 and isinstance(operands[0], list | tuple) else list(operands)
    ops = [_as_tensor(o) for o in ops]
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    ins = given = lhs.split(",")
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
    try:
        return F.Einsum.apply(*[o.to(dt) for o in ops], ins=tuple(ins), out=out)
    except ValueError:  # sizes that do not match: PyTorch's words (checked only then), not NumPy's
        _check_einsum_sizes(given, ops)
        raise


def _check_einsum_sizes(ins: list[str], ops: list[Tensor]) -> None:
    """PyTorch's einsum size errors, in its order: operand by operand, a repeated subscript's sizes
    must agree, and a subscript's (or an ellipsis dim's, aligned from the right) size must equal or
    broadcast (1) with what earlier operands had."""
    seen: dict[str, builtins.int] = {}
    ell: dict[builtins.int, builtins.int] = {}  # ellipsis dims counted from the right
    for i, (sub, op) in enumerate(zip(ins, ops)):
        shape, dim = list(op.shape), 0
        first: dict[str, builtins.int] = {}  # a subscript's first dim in this operand
        for ch in sub.replace("...", "."):
            if ch == ".":
                k = op.ndim - (len(sub) - 3)
                for j in range(k):
                    n, prev = shape[dim], ell.get(k - j, 1)
                    if n != 1 and prev not in (1, n):
                        raise RuntimeError(f"einsum(): dimension {dim} covered by ellipsis in operand {i}has size {n} "
                                           f"which does not broadcast with previously seen ellipsis with size {prev} "
                                           "for the respective dimension")
                    ell[k - j] = n if n != 1 else prev
                    dim += 1
            elif ch in first:  # a diagonal: the dim goes, as PyTorch takes it
                if shape[dim] != shape[first[ch]]:
                    raise RuntimeError(f"einsum(): subscript {ch} is repeated for operand {i} but the sizes don't "
                                       f"match, {shape[dim]} != {shape[first[ch]]}")
                del shape[dim]
            else:
                n, prev = shape[dim], seen.get(ch, 1)
                if n != 1 and prev not in (1, n):
                    raise RuntimeError(f"einsum(): subscript {ch} has size {n} for operand {i} which does not "
                                       f"broadcast with previously seen size {prev}")
                seen[ch] = n if n != 1 else prev
                first[ch] = dim
                dim += 1


# ---- sorting, searching and indexing (compat): result types and free functions ----------------
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


def _unique_result(u: np.ndarray, inv: np.ndarray, cnt: np.ndarray, return_inverse: builtins.bool,
                   return_counts: builtins.bool) -> Any:
    out = [Tensor._make(u)]
    if return_inverse:
        out.append(Tensor._make(inv))
    if return_counts:
        out.append(Tensor._make(cnt))
    return out[0] if len(out) == 1 else tuple(out)


def isin(elements: Any, test_elements: Any, *, assume_unique: builtins.bool = False,
         invert: builtins.bool = False) -> Tensor:
    """Whether each element is in ``test_elements``: ``isin(tensor([1, 2]), tensor([2]))`` is [False, True]."""
    e, t = _raw(_as_tensor(elements)), _raw(_as_tensor(test_elements))
    return Tensor._make(np.asarray(B.isin(e, t, assume_unique=assume_unique, invert=invert)))


def searchsorted(sorted_sequence: Tensor, values: Any, *, out_int32: builtins.bool = False,
                 right: builtins.bool = False, side: str | None = None, sorter: Tensor | None = None) -> Tensor:
    """Where ``values`` would be inserted into ``sorted_sequence`` (its last dim) to keep it sorted."""
    if side is not None:
        if side not in ("left", "right"):
            raise RuntimeError(f"torch.searchsorted(): side can only be 'left' or 'right' but got {side}")
        if right and side == "left":
            raise RuntimeError("torch.searchsorted(): side and right can't be set to opposites, got side of "
                               "left while right was True")
        right = side == "right"
    seq = _raw(_as_tensor(sorted_sequence))
    if sorter is not None:
        seq = B.take_along_axis(seq, _int_index(sorter, "searchsorted"), -1)
    scalar = not isinstance(values, Tensor)
    v = _raw(_as_tensor(values))
    if seq.ndim > 1 and (v.ndim != seq.ndim or v.shape[:-1] != seq.shape[:-1]):
        raise RuntimeError(f"torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 "
                           f"dimensions of boundaries tensor and input value tensor must match, but we got "
                           f"boundaries tensor {list(seq.shape)} and input value tensor {list(v.shape)}")
    if scalar and seq.ndim > 1:
        raise RuntimeError("torch.searchsorted(): input value can be a scalar only when boundaries tensor "
                           f"dimension is 1, but we got boundaries tensor dim({seq.ndim})")
    out = B.searchsorted(seq, v, right)
    return Tensor._make(np.asarray(out, np.int32 if out_int32 else np.int64))


def bucketize(input: Any, boundaries: Tensor, *, out_int32: builtins.bool = False,  # noqa: A002
              right: builtins.bool = False) -> Tensor:
    """The bucket of each element: i with boundaries[i-1] < x <= boundaries[i] (< with ``right``)."""
    b = _as_tensor(boundaries)
    if b.ndim != 1:
        raise RuntimeError(f"boundaries tensor must be 1 dimension, but got dim({b.ndim})")
    return searchsorted(b, input, out_int32=out_int32, right=right)


def polygamma(n: builtins.int, input: Tensor) -> Tensor:  # noqa: A002
    """``torch.polygamma(n, x)``: the n-th derivative of digamma (the order comes first)."""
    return input.polygamma(n)


def std_mean(input: Tensor, dim: Any = None, unbiased: builtins.bool | None = None,  # noqa: A002
             keepdim: builtins.bool = False, *, correction: builtins.float | None = None) -> tuple[Tensor, Tensor]:
    """(std, mean) over ``dim``, as two reductions: ``std_mean(x, 0)``."""
    if isinstance(dim, bool):  # legacy std_mean(x, unbiased)
        dim, unbiased = None, dim
    return (input.std(dim, unbiased, keepdim, correction=correction), input.mean(dim, keepdim))


def var_mean(input: Tensor, dim: Any = None, unbiased: builtins.bool | None = None,  # noqa: A002
             keepdim: builtins.bool = False, *, correction: builtins.float | None = None) -> tuple[Tensor, Tensor]:
    """(var, mean) over ``dim``: ``var_mean(x, 0)``."""
    if isinstance(dim, bool):
        dim, unbiased = None, dim
    return (input.var(dim, unbiased, keepdim, correction=correction), input.mean(dim, keepdim))


# ---- more free functions (compat 2) ------------------------------------------------------------

def unravel_index(indices: Any, shape: Any) -> tuple[Tensor, ...]:
    """Flat indices to coordinates in ``shape``: ``unravel_index(tensor(5), (2, 3))`` is ``(1, 2)``."""
    ix = _as_tensor(indices)
    if ix._data.dtype.kind not in "iu":
        raise TypeError(f"expected 'indices' to be integer dtype, but got {ix.dtype}")
    dims = (shape,) if isinstance(shape, builtins.int) else tuple(shape)
    if builtins.any(d < 0 for d in dims):
        raise ValueError(f"'shape' cannot have negative values, but got {tuple(dims)}")
    rest, coords = ix._data.astype(np.int64), []
    # floor division and modulo per dim, last first: out-of-range and negative indices wrap as in PyTorch
    for d in reversed(dims):
        coords.append(rest % d if d else rest * 0)
        rest = rest // d if d else rest * 0
    return tuple(Tensor._make(np.asarray(c, np.int64)) for c in reversed(coords))


def _trapezoid_parts(y: Tensor, x: Any, dx: Any, dim: builtins.int) -> tuple[Tensor, Any]:
    d = _dim(dim, y.ndim)
    n = y.shape[d]
    mid = (y.narrow(d, 1, n - 1) + y.narrow(d, 0, n - 1)) if n else y
    if x is None:
        return mid, (1 if dx is None else dx)
    if x.ndim == 1:
        if x.shape[0] != n:
            raise RuntimeError(f"trapezoid: There must be one `x` value for each sample point, got {x.shape[0]} "
                               f"values for {n} samples")
        view = [1] * y.ndim
        view[d] = n - 1
        return mid, x.diff().reshape(view)
    return mid, x.diff(dim=d)


def trapezoid(y: Tensor, x: Tensor | None = None, *, dx: Number | None = None, dim: builtins.int = -1) -> Tensor:
    """Trapezoid rule along ``dim``, with sample points ``x`` or spacing ``dx`` (default 1)."""
    mid, step = _trapezoid_parts(y, x, dx, dim)
    if y.shape[_dim(dim, y.ndim)] == 0:
        return y.sum(dim)
    return (mid * step).sum(dim) / 2


def trapz(y: Tensor, x: Tensor | None = None, *, dx: Number | None = None, dim: builtins.int = -1) -> Tensor:
    """Alias of ``trapezoid``."""
    return trapezoid(y, x, dx=dx, dim=dim)


def cumulative_trapezoid(y: Tensor, x: Tensor | None = None, *, dx: Number | None = None,
                         dim: builtins.int = -1) -> Tensor:
    """Running trapezoid integral along ``dim`` (one element shorter than y there)."""
    mid, step = _trapezoid_parts(y, x, dx, dim)
    return (mid * step).cumsum(dim) / 2


def vander(x: Tensor, N: builtins.int | None = None, increasing: builtins.bool = False) -> Tensor:  # noqa: N803
    """Vandermonde matrix of a 1-D x: columns x**(N-1), ..., x**0 (reversed when ``increasing``)."""
    if x.ndim != 1:
        raise RuntimeError(f"x must be a one-dimensional tensor, got {x.ndim} dimensions")
    n = x.shape[0] if N is None else N
    if n < 0:
        raise RuntimeError(f"N must be non-negative, got {n}")
    dt = D.int64 if x._data.dtype.kind in "biu" else x.dtype
    xs = x.to(dt).unsqueeze(1)
    cols = [ones(x.shape[0], 1, dtype=dt)][:n]
    if n > 1:
        cols.append(xs.expand(x.shape[0], n - 1).cumprod(1))
    r = cat(cols, 1) if cols else zeros(x.shape[0], 0, dtype=dt)
    return r if increasing else r.flip(1)


# ---- creation ----------------------------------------------------------------------------------

def _check_device(device: Any) -> None:
    if device is not None:
        from .device import device as _device
        _device(device)


def _new(arr: np.ndarray, requires_grad: builtins.bool, heap: builtins.bool = False) -> Tensor:
    """A creation function's tensor. ``heap``: the caller's array, or a copy of the caller's data
    (tensor(), from_numpy()), kept where it is; else an array NumPy made (randn, arange), which
    moves into the active arena, if any: inside one, storage comes from it (a parameter made in
    the permanent arena lives there, and so does its gradient)."""
    if not heap and arr.base is None and _arena.get() is not None:
        arr, src = _alloc(arr.shape, arr.dtype), arr
        np.copyto(arr, src)
    t = Tensor._make(arr)
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


def _type_name(v: Any) -> str:
    """A value's type as PyTorch's argument errors name it: ``float``, ``Tensor``, ``numpy.float64``."""
    t = type(v)
    return t.__name__ if t.__module__ == "builtins" or isinstance(v, Tensor) else f"{t.__module__.split('.')[0]}.{t.__name__}"


def _int_like(v: Any) -> builtins.bool:
    return isinstance(v, int | np.integer) or isinstance(v, Tensor) and v.ndim == 0 and v._data.dtype.kind in "iu"


def _size_arg(args: tuple[Any, ...], fn: str, packed: builtins.bool = False) -> tuple[builtins.int, ...]:
    """A creation function's size as PyTorch's argument parser reads it, with its TypeErrors:
    ``f(2, 3)``, ``f((2, 3))`` or ``f([2, 3])`` (``packed``, as full's: a sequence only), every entry
    an integer. (Negative sizes are _check_size's.)"""
    if len(args) == 1 and isinstance(args[0], tuple | list):
        seq: Sequence[Any] = args[0]
    elif len(args) == 1 or packed:
        if packed or not _int_like(args[0]) or isinstance(args[0], bool):
            raise TypeError(f"{fn}(): argument 'size' (position 1) must be tuple of ints, not {_type_name(args[0])}")
        seq = args
    elif args and (not _int_like(args[0]) or isinstance(args[0], bool)):
        raise TypeError(f"{fn}() takes 1 positional argument but {len(args)} were given")
    else:
        seq = args
    out = []
    for k, v in enumerate(seq):
        if not _int_like(v) or (k == 0 and isinstance(v, bool)):  # (a bool counts, as in PyTorch, past the first)
            if k == 0:
                raise TypeError(f"{fn}(): argument 'size' (position 1) must be tuple of ints, but found element of "
                                f"type {_type_name(v)} at pos 0")
            raise TypeError(f"{fn}(): argument 'size' failed to unpack the object at pos {k + 1} with error \"type "
                            f"must be tuple of ints,but got {_type_name(v)}\"")
        out.append(builtins.int(v))
        if not -2**63 <= out[-1] < 2**63:
            raise TypeError(f"{fn}(): argument 'size' failed to unpack the object at pos {k + 1} with error "
                            "\"Overflow when unpacking long long\"")
    return tuple(out)


def _check_size(shape: tuple[builtins.int, ...], itemsize: builtins.int, fn: str) -> None:
    """PyTorch's errors for a size no tensor can have: a negative entry, or more bytes than an int64 counts."""
    for s in shape:
        if s < 0:
            if fn == "zeros":  # (zeros has words of its own)
                raise RuntimeError("zeros: Dimension size must be non-negative.")
            raise RuntimeError(f"Trying to create tensor with negative dimension {s}: {list(shape)}")
    if math.prod(shape) * itemsize > 2**63 - 1:
        raise RuntimeError(f"Storage size calculation overflowed with sizes={list(shape)}")


def _empty(shape: tuple[builtins.int, ...], dt: Any, fn: str, make: Any = B.empty) -> np.ndarray:
    """An array for a creation function from ``make(shape, dt)`` (uninitialised by default), the size
    checked first, and a failed allocation reported, as PyTorch does."""
    _check_size(shape, dt.itemsize, fn)
    try:
        return make(shape, dt)
    except MemoryError as e:
        if type(e) is MemoryError:  # an arena's own error, in its own words
            raise
        nbytes = math.prod(shape) * dt.itemsize
        raise RuntimeError(f"[enforce fail at alloc_cpu.cpp:127] err == 0. DefaultCPUAllocator: can't allocate "
                           f"memory: you tried to allocate {nbytes} bytes. Error code 12 (Cannot allocate memory)") from None


def _fill(size: tuple[Any, ...], value: Any, dtype: Any, requires_grad: builtins.bool, device: Any,
          fn: str, packed: builtins.bool = False) -> Tensor:
    _check_device(device)
    shape = _size_arg(size, fn, packed)
    if dtype is None:
        dt = D.scalar_dtype(value) if value is not None else D.get_default_dtype()
    else:
        dt = D.to_dtype(dtype)
    arr = _empty(shape, dt.np, fn)
    if value is not None:
        arr.fill(value)
    return _new(arr, requires_grad)


def zeros(*size: Any, dtype: Any = None, device: Any = None, requires_grad: builtins.bool = False, out: Any = None,
          **kw: Any) -> Tensor:
    """``zeros(2, 3)``: a float32 tensor of zeros."""
    return _fill(_sized(size, kw, "zeros"), 0.0, dtype, requires_grad, device, "zeros")


def ones(*size: Any, dtype: Any = None, device: Any = None, requires_grad: builtins.bool = False, out: Any = None,
         **kw: Any) -> Tensor:
    return _fill(_sized(size, kw, "ones"), 1.0, dtype, requires_grad, device, "ones")


def empty(*size: Any, dtype: Any = None, device: Any = None, requires_grad: builtins.bool = False, **kw: Any) -> Tensor:
    return _fill(_sized(size, kw, "empty"), None, dtype, requires_grad, device, "empty")


def _sized(size: tuple[Any, ...], kw: dict[str, Any], fn: str) -> tuple[Any, ...]:
    """``size`` given by keyword (``zeros(size=(2, 3))``) or positionally; PyTorch's other keywords
    (layout, pin_memory, memory_format, names) change nothing here, and any more is a TypeError."""
    for k in kw:
        if k not in ("size", "layout", "pin_memory", "memory_format", "names"):
            raise TypeError(f"{fn}() got an unexpected keyword argument '{k}'")
    return (kw["size"],) if "size" in kw and not size else size


def full(size: Any, fill_value: Any, *, dtype: Any = None, device: Any = None, requires_grad: builtins.bool = False) -> Tensor:
    """``full((2, 2), 7)`` is an int64 tensor of sevens (dtype follows the value)."""
    return _fill((size,), _scalar_of(fill_value), dtype, requires_grad, device, "full", packed=True)


def _like(x: Tensor, value: Any, dtype: Any, requires_grad: builtins.bool) -> Tensor:
    return _fill((x.shape,), value, dtype or x.dtype, requires_grad, None, "empty_like")


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
    if not (math.isfinite(start) and math.isfinite(end)):
        raise RuntimeError(f"unsupported range: {builtins.float(start):g} -> {builtins.float(end):g}")
    if step > 0 and end < start or step < 0 and end > start:
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")
    if dtype is None:
        dt = D.int64 if all(isinstance(v, int) for v in (start, end, step)) else D.get_default_dtype()
    else:
        dt = D.to_dtype(dtype)
    n = math.ceil((end - start) / step)
    if n > 2**63 - 1:
        raise RuntimeError("invalid size, possible overflow?")
    kind = np.float64 if dt.is_floating_point else None
    arr = _empty((n,), dt.np, "arange", lambda _s, _d: B.arange(start, end, step, dtype=kind))
    return _new(arr.astype(dt.np, copy=False), requires_grad)


def linspace(start: builtins.float, end: builtins.float, steps: builtins.int, *, dtype: Any = None, device: Any = None,
             requires_grad: builtins.bool = False) -> Tensor:
    _check_device(device)
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    dt = D.to_dtype(dtype) if dtype is not None else D.get_default_dtype()
    return _new(B.linspace(_scalar_of(start), _scalar_of(end), steps).astype(dt.np), requires_grad)


def logspace(start: builtins.float, end: builtins.float, steps: builtins.int, base: builtins.float = 10.0, *, dtype: Any = None,
             device: Any = None, requires_grad: builtins.bool = False) -> Tensor:
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    dt = D.to_dtype(dtype) if dtype is not None else D.get_default_dtype()
    return _new(np.logspace(start, end, steps, base=base).astype(dt.np), requires_grad)


def eye(n: builtins.int, m: builtins.int | None = None, *, dtype: Any = None, device: Any = None,
        requires_grad: builtins.bool = False) -> Tensor:
    """The n x m (n x n by default) identity matrix."""
    _check_device(device)
    if not _int_like(n) or isinstance(n, bool):
        raise TypeError(f"eye(): argument 'n' (position 1) must be int, not {_type_name(n)}")
    if m is not None and (not _int_like(m) or isinstance(m, bool)):
        raise TypeError(f"eye() received an invalid combination of arguments - got ({_type_name(n)}, "
                        f"{_type_name(m)}), but expected one of: (int n), (int n, int m)")
    for name, v in (("n", n), ("m", m)):
        if v is not None and v < 0:
            raise RuntimeError(f"{name} must be greater or equal to 0, got {v}")
    rows, cols = builtins.int(n), builtins.int(n if m is None else m)
    if rows * cols > 2**63 - 1:
        raise RuntimeError("numel: integer multiplication overflow")
    dt = D.to_dtype(dtype) if dtype is not None else D.get_default_dtype()
    return _new(_empty((rows, cols), dt.np, "eye", lambda s, d: B.eye(s[0], s[1], dtype=d)), requires_grad)


from . import function as F  # noqa: E402  (primitives import Tensor from here)
from .engine import run_backward  # noqa: E402, F401

# how a view made by reshape records its base when no grad_fn leads there (_viewed)
_RESHAPED = F.Reshape()
