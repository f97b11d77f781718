"""Tensor: an array, its gradient, its version and views, conversions, the Python protocol and the
operators.

Tensor's other methods live in ``_ops/``, one mixin per subject (elementwise, reduce, shape, index,
sort, linalg, creation, random, inplace): Tensor's bases. The free functions (``where``, ``cat``,
``zeros``, ...) sit there by subject too, and are re-exported here. Primitive ops live in
``function.py``; everything else is built from them and needs no backward of its own.
"""

from __future__ import annotations

import builtins
import math
from collections import OrderedDict
from collections.abc import Callable, Iterator
from typing import Any

from . import _numpy_dispatch as N
from . import _refcount as R
from . import backend as B
from . import dtypes as D
from . import engine as E
from . import function as F
from ._hooks import RemovableHandle, add_hook
from ._ops import bind as _bind_ops
from ._ops.common import (_PY_NUMBERS, _SCALAR_TYPE, Number, _as_tensor, _binary, _bump, _check_broadcast,
                          _check_divisor, _dim, _promote, _raw)
from ._ops.creation import CreationMixin, _to_array, empty, tensor
from ._ops.elementwise import ElementwiseMixin
from ._ops.index import IndexMixin
from ._ops.inplace import InplaceMixin, _check_overlap, _check_windows_overlap
from ._ops.linalg import LinalgMixin
from ._ops.random import RandomMixin
from ._ops.reduce import ReduceMixin
from ._ops.shape import ShapeMixin
from ._ops.sort import SortMixin
from ._repr import tensor_repr
from .device import _CPU, strided
from .device import device as _device
from .engine import run_backward  # (Tensor.backward's; lightgrad.compiler patches it here while tracing)
from .grad_mode import _enabled, _recording, is_grad_enabled, no_grad, not_differentiable_twice
from .memory import _STAMP  # counts in-place modifications anywhere (and arena resets): see memory
from .memory import _current as _arena
from .memory import home as _home
from .memory import reclaimed_error

# the free functions, each with its subject in _ops/, where other modules have always imported them
from ._ops.common import return_types  # noqa: F401
from ._ops.creation import (_CHANNELS_LAST, _check_size, _dense_in, _memory_format, _new, _size_arg,  # noqa: F401
                            arange, as_tensor, empty_like, eye, from_dlpack,
                            from_numpy, full, full_like, linspace, logspace, ones, ones_like, tril_indices,
                            triu_indices, zeros, zeros_like)
from ._ops.elementwise import polygamma, view_as_complex, view_as_real, where  # noqa: F401
from ._ops.index import unravel_index  # noqa: F401
from ._ops.linalg import einsum, tensordot, vander  # noqa: F401
from ._ops.reduce import cumulative_trapezoid, std_mean, trapezoid, trapz, values_indices, var_mean  # noqa: F401
from ._ops.shape import (atleast_1d, atleast_2d, atleast_3d, block_diag, cartesian_prod, cat,  # noqa: F401
                         column_stack, concat, concatenate, stack)
from ._ops.sort import bucketize, isin, searchsorted  # noqa: F401


# the array API namespace's getter, bound by lightgrad.array_api when it loads (with the package)
ARRAY_NAMESPACE: list[Any] = [None]


class Size(tuple):
    """A shape, as ``torch.Size``: a tuple with ``numel()``; sums and repeats stay Sizes."""

    def numel(self) -> builtins.int:
        """How many elements a tensor of this shape holds: the product of the sizes."""
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


class Tensor(ElementwiseMixin, ReduceMixin, ShapeMixin, IndexMixin, SortMixin, LinalgMixin, CreationMixin,
             RandomMixin, InplaceMixin):
    """An n-dimensional array with reverse-mode autograd, like ``torch.Tensor``.

    >>> x = lightgrad.tensor([1.0, 2.0], requires_grad=True); (x * x).sum().backward(); x.grad
    tensor([2., 4.])
    """

    # the gradient lives in `_grad`, behind the checked `grad` property; internal writers that make a
    # gradient of the right shape and dtype by construction may set `_grad` directly
    # the array lives in `_arr`, behind the checked `_data` property (see memory.home for `_mem`)
    __slots__ = ("_arr", "requires_grad", "_grad", "_grad_fn", "_version", "_mem", "__weakref__", "__dict__")
    _view: tuple[Tensor, Any]  # (base, how) on a view with no grad_fn to its base: see _view_link
    __array_priority__ = 1000  # ndarray op Tensor defers to Tensor's reflected operator
    _grad_buf: Any = None  # an optimizer's flat-buffer slice that receives this leaf's gradient
    _hooks: Any = None  # a leaf's register_hook hooks (a non-leaf's sit on its grad_fn): engine._run_hooks
    _post_hooks: Any = None  # a leaf's register_post_accumulate_grad_hook hooks

    def __init__(self, data: Any = None, *, dtype: Any = None, requires_grad: builtins.bool = False) -> None:
        arr = _to_array(data if data is not None else [], dtype)
        self._arr = arr
        self.requires_grad = bool(requires_grad)
        self._grad: Tensor | None = None
        self._grad_fn: Any = None
        self._version = [0, 0]  # [in-place modifications, stamp of the last one]
        self._mem = _home(arr)  # None on the heap; the liveness token of an arena's bytes

    @classmethod
    def _make(cls, data: B.ndarray) -> Tensor:
        """Wrap an array without copying or checking (the hot path of every op)."""
        t = object.__new__(Tensor)
        # NumPy returns 0-d results as scalars; a tensor always holds an array (in-place ops, views)
        t._arr = arr = data if type(data) is B.ndarray else B.asarray(data)
        t.requires_grad = False
        t._grad = None
        t._grad_fn = None
        t._version = [0, 0]
        b = arr.base  # (an array that owns its bytes, or a view of one, is the heap's: memory.home)
        t._mem = None if b is None or type(b) is B.ndarray and b.base is None else _home(arr)
        return t

    # The one way to a tensor's storage: every read or write of the array goes through here (or
    # checks _mem itself before touching _arr), so a tensor, or any view of it, whose arena was
    # reset raises instead of reading or writing the bytes' new occupant (memory.home).
    @property
    def _data(self) -> B.ndarray:
        m = self._mem
        if m is not None and not m[0]:
            raise reclaimed_error(m)
        return self._arr

    @_data.setter
    def _data(self, arr: B.ndarray) -> None:  # new storage: its token comes with it
        self._arr = arr
        self._mem = None if arr.base is None else _home(arr)

    # ---- attributes ------------------------------------------------------------------------------
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
        return _CPU

    @property
    def is_cuda(self) -> builtins.bool:
        return False

    is_cpu = property(lambda self: True, doc="True: every lightgrad tensor is a dense CPU tensor.")
    # PyTorch's other devices and storage kinds, none of which a lightgrad tensor has
    is_xpu = is_mps = is_meta = is_quantized = is_nested = is_mkldnn = is_vulkan = is_ipu = is_maia = \
        is_sparse_csr = property(lambda self: False)

    @property
    def ndim(self) -> builtins.int:
        return self._arr.ndim

    def dim(self) -> builtins.int:
        """The number of dims (``ndim``; ``ndimension`` is the same)."""
        return self._arr.ndim

    ndimension = dim

    def numel(self) -> builtins.int:
        """The number of elements (the product of the shape; ``nelement`` is the same)."""
        return self._arr.size

    nelement = numel

    def element_size(self) -> builtins.int:
        """The size of one element in bytes (4 for float32)."""
        return self._arr.itemsize

    @property
    def itemsize(self) -> builtins.int:
        return self._arr.itemsize

    @property
    def nbytes(self) -> builtins.int:
        return self._arr.nbytes

    def is_floating_point(self) -> builtins.bool:
        """True if the dtype is a floating-point one (float16, bfloat16, float32, float64)."""
        return D.is_floating(self._arr.dtype)

    def is_complex(self) -> builtins.bool:
        """True if the dtype is complex (complex64, complex128)."""
        return self._arr.dtype.kind == "c"

    def is_signed(self) -> builtins.bool:
        """True if the dtype is signed (every dtype except bool and the unsigned integers)."""
        return self.dtype.is_signed

    def is_contiguous(self, *, memory_format: Any = None) -> builtins.bool:
        """Row-major dense (or dense in ``memory_format``'s order, by PyTorch's rule: a dim of size 1
        constrains nothing), from the real strides."""
        fmt = _memory_format(memory_format, None, "is_contiguous")
        if fmt in _CHANNELS_LAST:
            return _dense_in(self._arr.shape, self.stride(), fmt)
        return bool(self._arr.flags.c_contiguous)

    def is_same_size(self, other: Tensor) -> builtins.bool:
        """True if both tensors have the same shape."""
        return self.shape == other.shape

    def stride(self, dim: builtins.int | None = None) -> Any:
        """The strides in elements, a tuple (or the stride of ``dim`` alone)."""
        st = tuple(s // self._arr.itemsize for s in self._arr.strides)
        return st if dim is None else st[_dim(dim, self.ndim, scalar=False)]

    def data_ptr(self) -> builtins.int:
        """The address of the first element in memory."""
        return int(self._arr.__array_interface__["data"][0])

    def get_device(self) -> builtins.int:
        """-1, the device index PyTorch gives a CPU tensor."""
        return -1  # (PyTorch's answer for a CPU tensor)

    def is_inference(self) -> builtins.bool:
        """False: lightgrad's inference mode makes ordinary tensors."""
        return False

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
    def layout(self) -> Any:
        return strided

    @property
    def _version_count(self) -> builtins.int:
        return self._version[0]

    # ---- conversion and interop ------------------------------------------------------------------
    def _live(self) -> B.ndarray:
        """The array, after checking that an arena reset has not reclaimed it (as ``_data`` does)."""
        return self._data

    def item(self) -> Number:
        """The value of a one-element tensor as a Python number."""
        self._live()
        if self._data.size != 1:
            raise RuntimeError(f"a Tensor with {self._data.size} elements cannot be converted to Scalar")
        return self._data.reshape(()).item()

    def tolist(self) -> Any:
        """The elements as (nested) Python lists of numbers; a 0-d tensor gives a number."""
        return self._live().tolist()

    def numpy(self, *, force: builtins.bool = False) -> B.ndarray:
        """The underlying array (shared memory); refuses when grad is required, like PyTorch.

        The array is not checked afterwards: for a tensor made in an arena it is valid until that
        arena's ``reset()``, after which it shows the bytes' next occupant (copy it, or ``clone()``
        the tensor outside the arena, to keep it)."""
        self._live()
        if self.requires_grad and not force:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. "
                               "Use tensor.detach().numpy() instead.")
        if D.is_low_precision(self._arr.dtype):  # (NumPy has no bfloat16: PyTorch refuses, and so do we)
            raise TypeError(f"Got unsupported ScalarType {_SCALAR_TYPE[self.dtype.name]}")
        return self._data if not force else self._data.copy()

    def __array__(self, dtype: Any = None, copy: builtins.bool | None = None) -> B.ndarray:
        a = self._live()
        if self.requires_grad and _recording.get() is not None:
            raise not_differentiable_twice("np.asarray")
        if dtype is not None and a.dtype != dtype:
            return a.astype(dtype)
        return a.copy() if copy else a

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kw: Any) -> Any:
        return N.array_ufunc(ufunc, method, inputs, kw)  # (user code: see _numpy_dispatch)

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        return N.array_function(func, args, kwargs)

    def __dlpack__(self, *args: Any, **kwargs: Any) -> Any:
        return self._data.__dlpack__(*args, **kwargs)

    def __dlpack_device__(self) -> tuple[builtins.int, int]:
        return self._data.__dlpack_device__()

    def __array_namespace__(self, *, api_version: str | None = None) -> Any:
        """The Python array API standard's namespace for tensors: ``lightgrad.array_api``."""
        return ARRAY_NAMESPACE[0](api_version)

    def to(self, *args: Any, **kwargs: Any) -> Tensor:
        """``x.to(lightgrad.float64)``, ``x.to('cpu')``, ``x.to(other)``; no copy if nothing changes
        (``memory_format`` is checked as PyTorch does; the layout stays lightgrad's row-major one)."""
        dt = kwargs.get("dtype")
        if kwargs.get("memory_format") is not None:
            _memory_format(kwargs["memory_format"], self.ndim, "to")
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
        if dt.is_complex and not self.is_complex():  # (the gradient back is the real part of g's)
            return F.Complex.apply(self.to(dt.to_real()), None)
        return F.Cast.apply(self, dtype=dt.np)

    def type(self, dtype: Any = None) -> Any:
        """The type name (``"torch.FloatTensor"``) with no argument, else this tensor converted to ``dtype``."""
        if dtype is None:
            return f"torch.{_SCALAR_TYPE[self.dtype.name]}Tensor"
        if isinstance(dtype, str) and dtype.endswith("Tensor"):  # "torch.DoubleTensor": by its scalar type's name
            names = {f"torch.{v}Tensor": k for k, v in _SCALAR_TYPE.items()}
            if dtype not in names:
                raise ValueError(f"invalid type: '{dtype}'")
            dtype = names[dtype]
        return self.to(dtype)

    def type_as(self, other: Tensor) -> Tensor:
        """This tensor converted to ``other``'s dtype."""
        return self.to(other.dtype)

    def float(self) -> Tensor:
        """Converted to float32 (``self.to(lightgrad.float32)``)."""
        return self.to(D.float32)

    def double(self) -> Tensor:
        """Converted to float64."""
        return self.to(D.float64)

    def half(self) -> Tensor:
        """Converted to float16."""
        return self.to(D.float16)

    def bfloat16(self) -> Tensor:
        """Converted to bfloat16."""
        return self.to(D.bfloat16)

    def cfloat(self) -> Tensor:
        """Converted to complex64."""
        return self.to(D.complex64)

    def cdouble(self) -> Tensor:
        """Converted to complex128."""
        return self.to(D.complex128)

    def long(self) -> Tensor:
        """Converted to int64."""
        return self.to(D.int64)

    def int(self) -> Tensor:
        """Converted to int32."""
        return self.to(D.int32)

    def short(self) -> Tensor:
        """Converted to int16."""
        return self.to(D.int16)

    def bool(self) -> Tensor:
        """Converted to bool (nonzero is True)."""
        return self.to(D.bool_)

    def byte(self) -> Tensor:
        """Converted to uint8."""
        return self.to(D.uint8)

    def cpu(self) -> Tensor:
        """This tensor: it is on the CPU already."""
        return self

    def cuda(self, device: Any = None) -> Tensor:
        """Raises: lightgrad has no CUDA device (as PyTorch built without CUDA)."""
        raise RuntimeError("lightgrad has no CUDA device here (lightgrad.cuda.is_available() is False)")

    def pin_memory(self) -> Tensor:
        """This tensor (pinned memory only matters for GPU copies)."""
        return self

    def share_memory_(self) -> Tensor:
        """This tensor (processes share memory through the DataLoader's own means)."""
        return self

    def clone(self, *, memory_format: Any = None) -> Tensor:
        """A copy (row-major: ``memory_format`` is checked as PyTorch does, the layout kept lightgrad's)."""
        _memory_format(memory_format, self.ndim, "clone")
        return F.Copy.apply(self)

    def contiguous(self, *, memory_format: Any = None) -> Tensor:
        """Self if row-major dense, else a row-major copy. lightgrad keeps its own layout: a
        ``memory_format=channels_last`` request is checked as PyTorch does and gives the same values,
        row-major."""
        _memory_format(memory_format, self.ndim, "contiguous")
        return self if self._data.flags.c_contiguous else self.clone()

    def detach(self) -> Tensor:
        """A Tensor sharing storage (and version counter) that is cut from the graph."""
        t = Tensor._make(self._data)
        t._version = self._version
        return t

    def detach_(self) -> Tensor:
        """Detaches this tensor from the graph in place: no grad_fn, requires_grad False."""
        self._grad_fn = None
        self.requires_grad = False
        return self

    def requires_grad_(self, requires_grad: builtins.bool = True) -> Tensor:
        """Sets ``requires_grad`` in place (leaf tensors only) and returns self.

        >>> lightgrad.ones(2).requires_grad_().requires_grad
        True
        """
        if not requires_grad and self._grad_fn is not None:
            raise RuntimeError("you can only change requires_grad flags of leaf variables. If you want "
                               "to use a computed variable in a subgraph that doesn't require "
                               "differentiation use var_no_grad = var.detach().")
        if requires_grad and not D.is_floating(self._data.dtype):
            if self._data.dtype.kind == "c":
                F.complex.guard()  # (complex ops take the path that checks their gradients: function/complex)
                self.requires_grad = requires_grad
                return self
            raise RuntimeError(f"only Tensors of floating point dtype can require gradients, got {self.dtype}")
        self.requires_grad = requires_grad
        return self

    def new(self, *args: Any, **kwargs: Any) -> Tensor:
        """Legacy constructor: ``x.new(2, 3)`` is uninitialised of x's dtype, ``x.new([1, 2])`` a tensor."""
        if len(args) == 1 and isinstance(args[0], Tensor):
            return args[0].detach()
        if len(args) == 1 and not isinstance(args[0], builtins.int | Size):
            return tensor(args[0], dtype=self.dtype)
        return empty(*args, dtype=self.dtype) if args else empty(0, dtype=self.dtype)

    # ---- autograd entry points -------------------------------------------------------------------
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

    def register_hook(self, hook: Callable[[Tensor], Tensor | None]) -> RemovableHandle:
        """Call ``hook(grad)`` whenever this tensor's gradient is computed; a Tensor it returns
        replaces the gradient: ``h = x.register_hook(lambda g: g.clamp(-1, 1))``, then ``h.remove()``."""
        if not self.requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        fn = self._grad_fn
        if fn is None:
            hooks = self.__dict__.get("_hooks")
            if hooks is None:
                hooks = self.__dict__["_hooks"] = OrderedDict()
        else:
            hooks = fn.hooks
            if hooks is None:
                hooks = fn.hooks = OrderedDict()
        return add_hook(hooks, hook)

    def register_post_accumulate_grad_hook(self, hook: Callable[[Tensor], None]) -> RemovableHandle:
        """Call ``hook(tensor)`` after backward has accumulated this leaf's ``.grad``."""
        if self._grad_fn is not None:
            raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf tensors")
        if not self.requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        hooks = self.__dict__.get("_post_hooks")
        if hooks is None:
            hooks = self.__dict__["_post_hooks"] = OrderedDict()
        return add_hook(hooks, hook)

    # ---- Python protocol -------------------------------------------------------------------------
    def __repr__(self) -> str:
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

    def is_nonzero(self) -> builtins.bool:
        """The value of a one-element tensor as a Python bool (raises for more or fewer elements)."""
        n = self._data.size
        if n != 1:
            raise RuntimeError("Boolean value of Tensor with no values is ambiguous" if n == 0 else
                               "Boolean value of Tensor with more than one value is ambiguous")
        return builtins.bool(self._data.reshape(()))

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

    # ---- operators (their method forms are in _ops/elementwise.py) -------------------------------
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
        D.check_bare_unsigned("div_floor_cpu", self._arr.dtype)
        _check_divisor(self, o)
        return self._nograd_binary(B.floor_divide, o)

    def __rfloordiv__(self, o: Any) -> Tensor:
        _check_divisor(o, self)
        return _as_tensor(o, self)._nograd_binary(B.floor_divide, self)

    def __mod__(self, o: Any) -> Tensor:
        D.check_bare_unsigned("remainder_cpu", self._arr.dtype)
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
        D.check_bare_unsigned("bitwise_not_cpu", self._arr.dtype)
        if self._data.dtype == B.xp.bool_:
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
        if D.GUARDED[0] is not None:  # (uint16/32/64 have no ordering kernels in PyTorch)
            D.check_bare_unsigned("lt_cpu", self._arr.dtype)
        return self._compare(B.less, o)

    def __le__(self, o: Any) -> Tensor:
        if D.GUARDED[0] is not None:
            D.check_bare_unsigned("le_cpu", self._arr.dtype)
        return self._compare(B.less_equal, o)

    def __gt__(self, o: Any) -> Tensor:
        if D.GUARDED[0] is not None:
            D.check_bare_unsigned("gt_cpu", self._arr.dtype)
        return self._compare(B.greater, o)

    def __ge__(self, o: Any) -> Tensor:
        if D.GUARDED[0] is not None:
            D.check_bare_unsigned("ge_cpu", self._arr.dtype)
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

    # ---- in place and views: the storage written, the version bumped, the graph rewired ----------
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

    def _inplace(self, compute: Any, *others: Any) -> Tensor:
        """Run ``compute(self)`` and store the result in self's storage, as PyTorch's in-place ops:
        the tensor takes the result's place in the graph and its version counter is bumped."""
        graph = _enabled.get() and (self.requires_grad or any(isinstance(o, Tensor) and o.requires_grad for o in others))
        if graph and self.requires_grad and self._grad_fn is None:
            raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
        if graph and self._grad_fn is not None and self._grad_fn.forbids_inplace:
            raise RuntimeError(self._grad_fn.forbids_inplace)
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
        if r._data.dtype != self._data.dtype and not B.can_cast(r._data.dtype, self._data.dtype, "same_kind"):
            raise RuntimeError(f"result type {r.dtype.name.capitalize()} can't be cast to the desired output type "
                               f"{self.dtype.name.capitalize()}")
        if r._data is not self._data:
            if not self._data.flags.c_contiguous:
                _check_windows_overlap(self._data)
            try:
                B.copyto(self._data, r._data, casting="unsafe")
            except ValueError:  # read-only: a broadcast (an expanded tensor), or read-only memory
                _check_overlap(self._data)
                raise
        _bump(self)
        if graph:
            self._grad_fn, self.requires_grad = r._grad_fn, r.requires_grad
        if graph and view is not None:
            _write_through(view, self)
        return self

    def _check_leaf_inplace(self) -> None:
        if self.requires_grad and self._grad_fn is None and _enabled.get():
            raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")


def _rebuild(data: B.ndarray, requires_grad: builtins.bool) -> Tensor:
    t = Tensor._make(data)
    t.requires_grad = requires_grad
    return t


# ---- versions and views ---------------------------------------------------------------------------

# _viewed: a tensor t that reshape, permute, diagonal, unfold or as_strided made sharing its base's
# memory shares the base's version counter too, as PyTorch's views do, and, when it has no grad_fn
# that leads to the base (the base needs no grad, or grad mode is off), records
# ``t._view = (base, how)``, ``how`` the node that says how t was made (see _view_link), so that a
# value that requires grad written into t in place reaches the base (_write_through). Written out in
# reshape and permute (they run often), and in _ops/shape.py's _strided_view.

def _view_link(t: Tensor) -> tuple[Tensor, Any] | None:
    """(base, how) when t is a view of the Tensor base: ``how`` is the index of basic indexing
    (recorded on t), or the Reshape, Permute or strided-view node (diagonal, unfold, as_strided:
    function.shape.AsStrided) that made t from base sharing its memory."""
    d = t.__dict__
    if "_view" in d:  # (kept by _inplace and _write_through; None: not a view)
        return d["_view"]  # type: ignore[no-any-return]
    node = t._grad_fn
    if type(node) is F.Reshape or type(node) is F.Permute or isinstance(node, F.AsStrided):
        base = node.parents[0]
        if isinstance(base, Tensor) and B.xp.may_share_memory(base._data, t._data):
            return base, node
    return None


def _write_through(view: tuple[Tensor, Any] | None, value: Tensor) -> None:
    """After an in-place op on ``value`` recorded in the graph, ``value`` a view of a base (see
    _view_link): the base's place in the graph taken by the base rebuilt around the new value
    (``base[index] = value``, the index a strided view's positions in base, or the view undone for
    a reshape or permute), as PyTorch rebases a view's base, up the chain of views (``_bump`` has written the values)."""
    while view is not None:
        base, how = view
        up = _view_link(base)  # (before base's place in the graph changes)
        if type(how) is F.Reshape:
            value = value.reshape(base.shape)
            if base._version[1] != _STAMP[0]:  # (not when it shares the view's counter, bumped already)
                _bump(base)
        elif type(how) is F.Permute:
            value = value.permute(B.argsort(how.order).tolist())
            if base._version[1] != _STAMP[0]:
                _bump(base)
        else:
            old = Tensor._make(base._data)  # base's old place in the graph (its values are not read)
            old.requires_grad, old._grad_fn = base.requires_grad, base._grad_fn
            index = how.index(base._data.shape) if isinstance(how, F.AsStrided) else how
            if index is None:
                raise RuntimeError("an in-place operation on an as_strided view that reaches storage outside "
                                   "its base cannot be recorded by autograd")
            value = F.IndexPut.apply(old, value, index=index, accumulate=False)
        base._grad_fn, base.requires_grad = value._grad_fn, value.requires_grad
        base.__dict__.setdefault("_view", up)  # (its place in the graph now reads the view: keep the link)
        view = up


# ---- temporaries ---------------------------------------------------------------------------------
# In ``x * w + b`` NumPy would write the sum into the product's buffer: a temporary that only the
# expression holds (it checks reference counts in C). A Tensor hides its array from that check, so
# the operators make it themselves: an operand that is a large temporary lends its array to the
# result. That saves the allocation and a third of the memory traffic (in place, an elementwise op
# streams two arrays instead of three: 0.31 against 0.48 ms on 1M float32 here). The operand is a
# temporary when the interpreter's stack holds its only reference and its array has no other
# reference (the counts, the interpreters they hold on and what breaks them: lightgrad/_refcount.py,
# whose checks answer No elsewhere), its array owns its memory (no views of it anywhere), and no
# backward reads it: + and - read no operand, * and / by a Python number read only the number, and
# no backward runs for * and / between tensors when no graph is recorded.
_REUSE_MIN = 1 << 16  # (smaller arrays: the check costs more than it saves; the operators test size first)


def _reusable(t: Tensor, o: Any, tensors: builtins.bool) -> B.ndarray | None:
    """The array of an operand of ``t op o`` (t: the operator's self, which has checked that one is
    large) that may take the result (see above), or None. ``tensors``: whether that may be a
    Tensor's when ``o`` is one (+ and -); * and / take a Tensor's only when no graph is recorded
    (their backward reads the factors), else ``o`` must be a Python number.

    Called by the operator only, and calls R.sole_temporary and R.from_binary_op itself: their
    counts and frames are those of this call chain (see _refcount)."""
    if R.BINARY_OP is None:
        return None
    d = t._data
    if isinstance(o, Tensor):
        od = o._data
        if od.dtype != d.dtype or not tensors and (t.requires_grad or o.requires_grad) and _enabled.get():
            return None
        # t's array if the result has t's shape, else o's if it has o's
        if _fits(od.shape, d.shape) and _lendable(t, d) and R.sole_temporary(t, d):
            a = d
        elif _fits(d.shape, od.shape) and _lendable(o, od) and R.sole_temporary(o, od):
            a = od
        else:
            return None
    elif type(o) in _PY_NUMBERS and d.dtype.kind == "f" and _lendable(t, d) and R.sole_temporary(t, d):
        a = d
    else:
        return None
    return a if R.from_binary_op() else None


def _fits(small: tuple[builtins.int, ...], big: tuple[builtins.int, ...]) -> builtins.bool:
    """Whether ``small`` broadcasts to exactly ``big``."""
    return small == big or (len(small) <= len(big) and all(m == n or m == 1 for m, n in zip(reversed(small), reversed(big))))


def _lendable(x: Tensor, a: B.ndarray) -> builtins.bool:
    """Whether operand x's array ``a`` may take the result if nothing but the expression holds x
    or a (R.sole_temporary): it owns its memory (views of it would hold a reference), is
    writeable, is not arena storage, and x is not a leaf that requires grad."""
    return (a.base is None and a.flags.writeable and x._mem is None and not (x.requires_grad and x._grad_fn is None)
            and _arena.get() is None)  # (inside an arena, results are carved from it: memory.py)


# ---- the one late binding -------------------------------------------------------------------------
# Tensor's methods call the primitives and the primitives make Tensors. Now that Tensor exists, the
# primitives (lightgrad.function, which imports nothing above the backend) get it by F.bind; the _ops
# modules, Tensor's bases and so loaded before it, get Tensor and the primitives as globals (see
# _ops/__init__.py); the backend's functions send Tensors (create_graph) to the differentiable ops of
# _numpy_dispatch's table, registered by N.bind.
E.Tensor = Tensor  # type: ignore[misc]  # the engine (imported above: it imports no Tensor) makes and checks Tensors
F.bind(Tensor)
_bind_ops(Tensor, F)
N.bind(Tensor)

# how a view made by reshape records its base when no grad_fn leads there (_viewed)
_RESHAPED = F.Reshape()
