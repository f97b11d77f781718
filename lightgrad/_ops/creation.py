"""Creation: tensor(), zeros, arange, eye, ... as free functions, and ``x.new_zeros(...)`` and its kin."""

from __future__ import annotations

import builtins
import math
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from .. import backend as B
from .. import dtypes as D
from ..device import channels_last, channels_last_3d, memory_format, preserve_format
from ..device import device as _device
from ..grad_mode import no_grad
from ..memory import _current as _arena
from ..memory import empty as _alloc
from .common import Number, _scalar_of

if TYPE_CHECKING:  # bound at run time by tensor.py, once Tensor exists (see _ops/__init__.py)
    from ..tensor import Tensor
    from .common import TensorSelf


class CreationMixin:
    """Tensor's ``new_*`` methods: a new tensor of self's dtype unless told otherwise."""

    __slots__ = ()

    def new_zeros(self: TensorSelf, *size: Any, dtype: Any = None, device: Any = None, requires_grad: builtins.bool = False,
                  **kw: Any) -> Tensor:
        """A tensor of zeros of ``size`` with this tensor's dtype and device (unless given)."""
        return _fill(_sized(size, kw, "new_zeros"), 0.0, dtype or self.dtype, requires_grad, device, "new_zeros")

    def new_ones(self: TensorSelf, *size: Any, dtype: Any = None, device: Any = None, requires_grad: builtins.bool = False,
                 **kw: Any) -> Tensor:
        """A tensor of ones of ``size`` with this tensor's dtype and device (unless given)."""
        return _fill(_sized(size, kw, "new_ones"), 1.0, dtype or self.dtype, requires_grad, device, "new_ones")

    def new_full(self: TensorSelf, size: Any, fill_value: Any, *, dtype: Any = None, device: Any = None,
                 requires_grad: builtins.bool = False, layout: Any = None, pin_memory: builtins.bool = False) -> Tensor:
        """A tensor of ``size`` filled with ``fill_value``, with this tensor's dtype and device (unless given)."""
        return _fill((size,), _scalar_of(fill_value), dtype or self.dtype, requires_grad, device, "new_full",
                     packed=True)

    def new_empty(self: TensorSelf, *size: Any, dtype: Any = None, device: Any = None, requires_grad: builtins.bool = False,
                  **kw: Any) -> Tensor:
        """An uninitialised tensor of ``size`` with this tensor's dtype and device (unless given)."""
        return _fill(_sized(size, kw, "new_empty"), None, dtype or self.dtype, requires_grad, device, "new_empty")

    def new_tensor(self: TensorSelf, data: Any, dtype: Any = None, device: Any = None, requires_grad: builtins.bool = False,
                   layout: Any = None, pin_memory: builtins.bool = False) -> Tensor:
        """A new tensor (a copy) of ``data`` with this tensor's dtype and device (unless given)."""
        return tensor(data, dtype=dtype or self.dtype, device=device, requires_grad=requires_grad)


# ---- data to arrays (tensor(), Tensor()) ---------------------------------------------------------
def _to_array(data: Any, dtype: Any) -> B.ndarray:
    """A fresh array for ``tensor(data)``: PyTorch's default dtypes, unsupported kinds refused."""
    dt = D.to_dtype(dtype).np if dtype is not None else None
    if isinstance(data, Tensor):
        arr = data._data.copy()
    elif isinstance(data, B.ndarray):
        D.numpy_dtype(data.dtype)  # (PyTorch's TypeError for ml_dtypes' bfloat16 arrays, strings, objects)
        arr = B.array(data, copy=True)
    else:
        if isinstance(data, list | tuple) and data and any(isinstance(d, Tensor) for d in _flat(data)):
            data = _nested_tolist(data)
        arr = B.array(data)
        # NumPy scalars keep their dtype, as in PyTorch; Python numbers take PyTorch's defaults
        numpy_scalars = isinstance(data, B.xp.generic) or (
            isinstance(data, list | tuple) and data and all(isinstance(d, B.xp.generic) for d in _flat(data)))
        if dt is None and not numpy_scalars:
            if arr.dtype.kind == "f":
                dt = D.get_default_dtype().np
            elif arr.dtype.kind in "iu":
                dt = B.xp.dtype(B.xp.int64)
            elif arr.dtype.kind == "c":
                dt = D.default_complex().np
            elif arr.dtype.kind == "O" or arr.dtype.kind in "USV":
                raise TypeError(f"can't convert {type(data).__name__} of {arr.dtype} to a tensor; "
                                "expected numbers, nested lists of numbers, or an array")
    if dt is not None and arr.dtype != dt:
        arr = arr.astype(dt)
    D.from_numpy_dtype(arr.dtype)  # refuses unsupported dtypes (strings, objects, longdouble)
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


# ---- from data: tensor, as_tensor, from_numpy, from_dlpack ---------------------------------------
def _check_device(device: Any) -> None:
    if device is not None:
        _device(device)


def _new(arr: B.ndarray, requires_grad: builtins.bool, heap: builtins.bool = False) -> Tensor:
    """A creation function's tensor. ``heap``: the caller's array, or a copy of the caller's data
    (tensor(), from_numpy()), kept where it is; else an array NumPy made (randn, arange), which
    moves into the active arena, if any: inside one, storage comes from it (a parameter made in
    the permanent arena lives there, and so does its gradient)."""
    if not heap and arr.base is None and _arena.get() is not None:
        arr, src = _alloc(arr.shape, arr.dtype), arr
        B.copyto(arr, src)
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
    if isinstance(data, B.ndarray):
        D.numpy_dtype(data.dtype)
        if dtype is None or D.to_dtype(dtype).np == data.dtype:
            return _new(data, False, heap=True)
    return tensor(data, dtype)


def from_numpy(a: B.ndarray) -> Tensor:
    """A tensor sharing memory with the NumPy array ``a``."""
    if not isinstance(a, B.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(a).__name__})")
    D.numpy_dtype(a.dtype)
    return _new(a, False, heap=True)


def from_dlpack(ext: Any) -> Tensor:
    """A tensor sharing memory with any object exporting ``__dlpack__``."""
    if isinstance(ext, Tensor):
        return ext
    return from_numpy(B.xp.from_dlpack(ext))


# ---- filled: zeros, ones, empty, full and their _like forms; ranges; eye --------------------------
def _type_name(v: Any) -> str:
    """A value's type as PyTorch's argument errors name it: ``float``, ``Tensor``, ``numpy.float64``."""
    t = type(v)
    return t.__name__ if t.__module__ == "builtins" or isinstance(v, Tensor) else f"{t.__module__.split('.')[0]}.{t.__name__}"


def _int_like(v: Any) -> builtins.bool:
    return isinstance(v, int | B.xp.integer) or isinstance(v, Tensor) and v.ndim == 0 and v._data.dtype.kind in "iu"


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


def _empty(shape: tuple[builtins.int, ...], dt: Any, fn: str, make: Any = B.empty) -> B.ndarray:
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


def _sized(size: tuple[Any, ...], kw: dict[str, Any], fn: str, memory_format: builtins.bool = False) -> tuple[Any, ...]:
    """A factory's size as PyTorch's parser takes it: positionally (``zeros(2, 3)``, ``zeros((2, 3))``)
    or by keyword (``zeros(size=(2, 3))``), never both nor neither. ``layout`` (one: strided),
    ``pin_memory`` and ``names`` change nothing here; ``memory_format`` is empty's only; any other
    keyword is PyTorch's TypeError."""
    for k in kw:
        if k not in ("size", "layout", "pin_memory", "names") and not (memory_format and k == "memory_format"):
            raise TypeError(f"{fn}() got an unexpected keyword argument '{k}'")
    if "size" in kw:
        if size:
            raise TypeError(f"{fn}() got multiple values for argument 'size'")
        return (kw["size"],)
    if not size:
        raise TypeError(f'{fn}() missing 1 required positional arguments: "size"')
    return size


def _into(out: Any, t: Tensor, fn: str) -> Tensor:
    """``t`` written into ``out=`` (of t's shape) and ``out`` returned, as PyTorch's out= forms do."""
    if out is None:
        return t
    if not isinstance(out, Tensor):
        raise TypeError(f"{fn}(): argument 'out' must be Tensor, not {_type_name(out)}")
    if out.shape != t.shape:  # (PyTorch resizes out; lightgrad's tensors do not resize)
        raise RuntimeError(f"{fn}(): out= has shape {list(out.shape)}, the result {list(t.shape)}; lightgrad "
                           "writes into an out= tensor of the result's shape only")
    with no_grad():
        out.copy_(t)
    return out


def zeros(*size: Any, out: Any = None, dtype: Any = None, device: Any = None, requires_grad: builtins.bool = False,
          **kw: Any) -> Tensor:
    """``zeros(2, 3)``, ``zeros((2, 3))`` or ``zeros(size=(2, 3))``: a float32 tensor of zeros."""
    dt = dtype if dtype is not None or out is None else out.dtype
    return _into(out, _fill(_sized(size, kw, "zeros"), 0.0, dt, requires_grad, device, "zeros"), "zeros")


def ones(*size: Any, out: Any = None, dtype: Any = None, device: Any = None, requires_grad: builtins.bool = False,
         **kw: Any) -> Tensor:
    """``ones(2, 3)``: a float32 tensor of ones (sizes as ``zeros``)."""
    dt = dtype if dtype is not None or out is None else out.dtype
    return _into(out, _fill(_sized(size, kw, "ones"), 1.0, dt, requires_grad, device, "ones"), "ones")


def empty(*size: Any, out: Any = None, dtype: Any = None, device: Any = None, requires_grad: builtins.bool = False,
          **kw: Any) -> Tensor:
    """An uninitialised tensor (sizes as ``zeros``); ``memory_format`` is checked as PyTorch does,
    the layout stays row-major."""
    dt = dtype if dtype is not None or out is None else out.dtype
    t = _fill(_sized(size, kw, "empty", memory_format=True), None, dt, requires_grad, device, "empty")
    _memory_format(kw.get("memory_format"), t.ndim, "empty")
    return _into(out, t, "empty")


def empty_strided(size: Any, stride: Any, *, dtype: Any = None, layout: Any = None, device: Any = None,
                  requires_grad: builtins.bool = False, pin_memory: builtins.bool = False) -> Tensor:
    """An uninitialised tensor of ``size`` with the element strides ``stride`` (a view of a buffer
    just large enough, as PyTorch's)."""
    shape, strides = _size_arg((size,), "empty_strided", packed=True), tuple(builtins.int(v) for v in stride)
    if len(shape) != len(strides):
        raise RuntimeError("mismatch in length of strides and shape")
    n = 0 if 0 in shape else 1 + sum((s - 1) * st for s, st in zip(shape, strides))
    base = _fill(((n,),), None, dtype, False, device, "empty_strided")
    t = base.as_strided(shape, strides).detach()
    return t.requires_grad_(True) if requires_grad else t


def full(size: Any, fill_value: Any, *, out: Any = None, dtype: Any = None, layout: Any = None, device: Any = None,
         pin_memory: builtins.bool = False, requires_grad: builtins.bool = False) -> Tensor:
    """``full((2, 2), 7)`` is an int64 tensor of sevens (dtype follows the value)."""
    dt = dtype if dtype is not None or out is None else out.dtype
    return _into(out, _fill((size,), _scalar_of(fill_value), dt, requires_grad, device, "full", packed=True), "full")


def _like(x: Tensor, value: Any, dtype: Any, requires_grad: builtins.bool, kw: dict[str, Any], fn: str) -> Tensor:
    for k in kw:
        if k not in ("layout", "pin_memory", "memory_format"):
            raise TypeError(f"{fn}() got an unexpected keyword argument '{k}'")
    _memory_format(kw.get("memory_format"), x.ndim, fn)
    return _fill((x.shape,), value, dtype or x.dtype, requires_grad, None, "empty_like")


def zeros_like(input: Tensor, *, dtype: Any = None, device: Any = None, requires_grad: builtins.bool = False,  # noqa: A002
               **kw: Any) -> Tensor:
    """Zeros of ``input``'s shape and dtype (``layout``, ``memory_format`` checked, row-major)."""
    _check_device(device)
    return _like(input, 0, dtype, requires_grad, kw, "zeros_like")


def ones_like(input: Tensor, *, dtype: Any = None, device: Any = None, requires_grad: builtins.bool = False,  # noqa: A002
              **kw: Any) -> Tensor:
    """Ones of ``input``'s shape and dtype."""
    _check_device(device)
    return _like(input, 1, dtype, requires_grad, kw, "ones_like")


def empty_like(input: Tensor, *, dtype: Any = None, device: Any = None, requires_grad: builtins.bool = False,  # noqa: A002
               **kw: Any) -> Tensor:
    """An uninitialised tensor of ``input``'s shape and dtype."""
    _check_device(device)
    return _like(input, None, dtype, requires_grad, kw, "empty_like")


def full_like(input: Tensor, fill_value: Any, *, dtype: Any = None, device: Any = None,  # noqa: A002
              requires_grad: builtins.bool = False, **kw: Any) -> Tensor:
    """``fill_value`` in ``input``'s shape and dtype."""
    _check_device(device)
    return _like(input, fill_value, dtype, requires_grad, kw, "full_like")


def arange(start: Number | None = None, end: Number | None = None, step: Number = 1, *, out: Any = None,
           dtype: Any = None, layout: Any = None, device: Any = None, requires_grad: builtins.bool = False,
           pin_memory: builtins.bool = False) -> Tensor:
    """``arange(5)`` (or ``arange(end=5)``) is int64 0..4; a float bound or step gives the default float dtype."""
    _check_device(device)
    if end is None:
        if start is None:
            raise TypeError("arange() missing 1 required positional argument: 'end'")
        start, end = 0, start
    elif start is None:
        start = 0
    start, end, step = (_scalar_of(v) for v in (start, end, step))
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if not (math.isfinite(start) and math.isfinite(end)):
        raise RuntimeError(f"unsupported range: {builtins.float(start):g} -> {builtins.float(end):g}")
    if step > 0 and end < start or step < 0 and end > start:
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")
    if dtype is None and out is not None:
        dtype = out.dtype
    if dtype is None:
        dt = D.int64 if all(isinstance(v, int) for v in (start, end, step)) else D.get_default_dtype()
    else:
        dt = D.to_dtype(dtype)
    n = math.ceil((end - start) / step)
    if n > 2**63 - 1:
        raise RuntimeError("invalid size, possible overflow?")
    kind = B.xp.float64 if dt.is_floating_point else None
    arr = _empty((n,), dt.np, "arange", lambda _s, _d: B.arange(start, end, step, dtype=kind))
    return _into(out, _new(arr.astype(dt.np, copy=False), requires_grad), "arange")


def linspace(start: builtins.float, end: builtins.float, steps: builtins.int, *, out: Any = None, dtype: Any = None,
             layout: Any = None, device: Any = None, requires_grad: builtins.bool = False) -> Tensor:
    """``steps`` evenly spaced values from ``start`` to ``end``, both included."""
    _check_device(device)
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    dtype = dtype if dtype is not None or out is None else out.dtype
    dt = D.to_dtype(dtype) if dtype is not None else D.get_default_dtype()
    t = _new(B.linspace(_scalar_of(start), _scalar_of(end), steps).astype(dt.np), requires_grad)
    return _into(out, t, "linspace")


def logspace(start: builtins.float, end: builtins.float, steps: builtins.int, base: builtins.float = 10.0, *,
             out: Any = None, dtype: Any = None, layout: Any = None, device: Any = None,
             requires_grad: builtins.bool = False) -> Tensor:
    """``base ** linspace(start, end, steps)``."""
    _check_device(device)
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    dtype = dtype if dtype is not None or out is None else out.dtype
    dt = D.to_dtype(dtype) if dtype is not None else D.get_default_dtype()
    return _into(out, _new(B.xp.logspace(start, end, steps, base=base).astype(dt.np), requires_grad), "logspace")


def eye(n: builtins.int, m: builtins.int | None = None, *, out: Any = None, dtype: Any = None, layout: Any = None,
        device: Any = None, pin_memory: builtins.bool = False, requires_grad: builtins.bool = False) -> Tensor:
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
    dtype = dtype if dtype is not None or out is None else out.dtype
    dt = D.to_dtype(dtype) if dtype is not None else D.get_default_dtype()
    t = _new(_empty((rows, cols), dt.np, "eye", lambda s, d: B.eye(s[0], s[1], dtype=d)), requires_grad)
    return _into(out, t, "eye")


# ---- memory formats: accepted as PyTorch's, answered from real strides --------------------------
# a channels-last format's rank and its dims from fastest to slowest (PyTorch's stride rule)
_CHANNELS_LAST = {channels_last: (4, (1, 3, 2, 0), "channels_last"),
                  channels_last_3d: (5, (1, 4, 3, 2, 0), "channels_last_3d")}


def _memory_format(fmt: Any, ndim: builtins.int | None, fn: str) -> Any:
    """``fmt`` checked as PyTorch checks a ``memory_format`` argument of ``fn``: its type, and
    for a channels-last format the rank of the tensor to lay out (``ndim``; None: nothing to lay out)."""
    if fmt is None:
        return preserve_format
    if not isinstance(fmt, memory_format):
        raise TypeError(f"{fn}(): argument 'memory_format' must be torch.memory_format, not {_type_name(fmt)}")
    if ndim is not None and fmt in _CHANNELS_LAST and ndim != _CHANNELS_LAST[fmt][0]:
        rank, _, name = _CHANNELS_LAST[fmt]
        raise RuntimeError(f"required rank {rank} tensor to use {name} format")
    return fmt


def _dense_in(shape: tuple[builtins.int, ...], strides: tuple[builtins.int, ...], fmt: Any) -> builtins.bool:
    """PyTorch's ``is_contiguous(memory_format=fmt)`` for a channels-last ``fmt``: the strides, in the
    format's dim order, are those of a dense tensor; a dim of size 1 constrains nothing."""
    rank, order, _ = _CHANNELS_LAST[fmt]
    if len(shape) != rank:
        return False
    expected = 1
    for d in order:
        if shape[d] != 1:
            if strides[d] != expected:
                return False
            expected *= shape[d]
    return True


# ---- triangle indices ----------------------------------------------------------------------------
def _tri_indices(fn: Any, row: builtins.int, col: builtins.int, offset: builtins.int, dtype: Any) -> Tensor:
    r, c = fn(row, offset, col)
    return Tensor._make(B.stack([r, c]).astype(D.to_dtype(dtype).np if dtype is not None else B.xp.int64))


def tril_indices(row: builtins.int, col: builtins.int, offset: builtins.int = 0, *, dtype: Any = None,
                 device: Any = None) -> Tensor:
    """(2, N) row and column indices of the lower triangle of a row x col matrix."""
    return _tri_indices(B.tril_indices, row, col, offset, dtype)


def triu_indices(row: builtins.int, col: builtins.int, offset: builtins.int = 0, *, dtype: Any = None,
                 device: Any = None) -> Tensor:
    """(2, N) row and column indices of the upper triangle of a row x col matrix."""
    return _tri_indices(B.triu_indices, row, col, offset, dtype)
