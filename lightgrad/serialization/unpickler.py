"""Reading the pickle inside PyTorch's checkpoint files without running code from them.

``torch.save`` pickles the saved object: every tensor is a call of one of torch's rebuild functions
(``torch._utils._rebuild_tensor_v2(storage, offset, size, stride, requires_grad, hooks)``), every
storage a persistent id (``('storage', torch.FloatStorage, key, location, numel)``) naming a record
of raw bytes. Unpickling in general runs code: REDUCE calls whatever GLOBAL named. Here, as in
``torch.load(weights_only=True)``, ``find_class`` never imports: it answers from one fixed table
(``_ALLOWED``) of stand-ins, lightgrad's own functions that check their arguments and build NumPy
arrays and lightgrad Tensors, and refuses every other name with PyTorch's message. The stand-ins
are not types (NEWOBJ, OBJ and INST need one, so they fail), their instances have no attributes
that BUILD could set, and the only types handed out are OrderedDict, Counter, set and complex.
So the objects a pickle can reach are plain data and those stand-ins: nothing else can be called.
``persistent_load`` admits only storage ids, which it checks against the archive's records.
"""

from __future__ import annotations

import _compat_pickle
import pickle
from collections import Counter, OrderedDict
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import dtypes as D
from ..device import device
from ..nn.parameter import Parameter
from ..tensor import Size, Tensor

# PyTorch's text (torch.serialization.UNSAFE_MESSAGE and the framing of torch.load's error)
UNSAFE_MESSAGE = (
    "In PyTorch 2.6, we changed the default value of the `weights_only` argument in `torch.load` "
    "from `False` to `True`. Re-running `torch.load` with `weights_only` set to `False` will likely succeed, "
    "but it can result in arbitrary code execution. Do it only if you got the file from a "
    "trusted source.")
_DOCS = ("\n\nCheck the documentation of torch.load to learn more about types accepted by default with "
         "weights_only https://pytorch.org/docs/stable/generated/torch.load.html.")
_BLOCKED = ("sys", "os", "posix", "nt")  # torch's blocklist: named as blocked, not just unknown

# the legacy storage classes and the dtype of their elements (None: raw bytes, typed by the tensor)
STORAGE_DTYPES = {
    "FloatStorage": "float32", "DoubleStorage": "float64", "HalfStorage": "float16",
    "BFloat16Storage": "bfloat16", "LongStorage": "int64", "IntStorage": "int32", "ShortStorage": "int16",
    "CharStorage": "int8", "ByteStorage": "uint8", "BoolStorage": "bool", "ComplexFloatStorage": "complex64",
    "ComplexDoubleStorage": "complex128", "UntypedStorage": None,
}
# every dtype name torch pickles as GLOBAL torch.<name> (those lightgrad lacks are refused when met)
TORCH_DTYPES = ("float32", "float64", "float16", "bfloat16", "int64", "int32", "int16", "int8", "uint8", "bool",
                "uint16", "uint32", "uint64", "complex32", "complex64", "complex128", "float8_e5m2",
                "float8_e4m3fn", "float8_e5m2fnuz", "float8_e4m3fnuz", "float8_e8m0fnu", "float4_e2m1fn_x2",
                "quint8", "qint8", "qint32", "quint4x2", "quint2x4", "bits1x8", "bits2x4", "bits4x2",
                "bits8", "bits16", *(f"uint{i}" for i in range(1, 8)), *(f"int{i}" for i in range(1, 8)))


def weights_only_message(message: str) -> str:
    """torch.load's error text for a refused pickle (its ``_get_wo_message``), from the inner message."""
    if "was not an allowed global by default" in message:
        return ("Weights only load failed. This file can still be loaded, to do so you have two options, "
                "\033[1mdo those steps only if you trust the source of the checkpoint\033[0m. "
                f"\n\t(1) {UNSAFE_MESSAGE}\n\t(2) Alternatively, to load with `weights_only=True` please check "
                "the recommended steps in the following error message.\n\tWeightsUnpickler error: "
                + message + _DOCS)
    out = f"Weights only load failed. {UNSAFE_MESSAGE}\n"
    if "is blocked" not in message:
        out += ("Please file an issue with the following so that we can make "
                "`weights_only=True` compatible with your use case: WeightsUnpickler error: ")
    return out + "\n\n" + message + _DOCS


class Refused(pickle.UnpicklingError):
    """A pickle the weights-only unpickler refuses; the message is PyTorch's inner message."""


def lightgrad_dtype(name: str) -> D.dtype | None:
    """lightgrad's dtype of this torch dtype name, or None where lightgrad has none."""
    d = D._BY_NAME.get(name)
    return d if isinstance(d, D.dtype) and d.name == name else None


def numpy_dtype(d: D.dtype) -> np.dtype | None:
    """The NumPy dtype of ``d``; None for bfloat16 without ml_dtypes (read as float32 then)."""
    try:
        return np.dtype(d.np)
    except ModuleNotFoundError:
        return None


# ---- storages -------------------------------------------------------------------------------------

class Storage:
    """One storage of the file: its bytes as a 1-D NumPy array of its dtype (uint8 when untyped)."""

    __slots__ = ("key", "dtype", "array", "location")
    key: str
    dtype: D.dtype | None
    array: np.ndarray
    location: str

    def __init__(self, key: str, dtype: D.dtype | None, array: np.ndarray, location: str) -> None:
        object.__setattr__(self, "key", key)
        object.__setattr__(self, "dtype", dtype)
        object.__setattr__(self, "array", array)
        object.__setattr__(self, "location", location)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"a checkpoint storage is read-only (tried to set {name!r})")

    def cpu(self) -> Storage:
        """The storage itself (it is on the CPU), so ``map_location=lambda s, loc: s.cpu()`` works."""
        return self

    def nbytes(self) -> int:
        return int(self.array.nbytes)

    def size(self) -> int:
        return int(self.array.size)

    def __len__(self) -> int:
        return int(self.array.size)

    def __repr__(self) -> str:
        return f"<checkpoint storage {self.key!r} of {self.array.size} x {self.array.dtype}>"


class StorageType:
    """What GLOBAL torch.FloatStorage (and the other storage classes) stands for: a dtype name."""

    __slots__ = ("name", "dtype_name")
    name: str
    dtype_name: str | None

    def __init__(self, name: str, dtype_name: str | None) -> None:
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "dtype_name", dtype_name)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"torch.{self.name} can't be changed by a checkpoint")

    def __repr__(self) -> str:
        return f"torch.{self.name}"


class _Safe:
    """An allowed global: a named function of lightgrad's. Not a type, and without attributes that a
    pickle's BUILD could set, so a pickle can only call it (REDUCE), with arguments it then checks."""

    __slots__ = ("name", "fn")
    name: str
    fn: Callable[..., Any]

    def __init__(self, name: str, fn: Callable[..., Any]) -> None:
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "fn", fn)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{self.name} can't be changed by a checkpoint")

    def __call__(self, *args: Any) -> Any:
        return self.fn(*args)

    def __repr__(self) -> str:
        return self.name


def _bad(what: str) -> Refused:
    return Refused(what)


def _int(x: Any, what: str) -> int:
    if type(x) is not int:
        raise _bad(f"{what} must be an int, got {type(x).__name__}")
    return x


def _ints(x: Any, what: str) -> tuple[int, ...]:
    if not isinstance(x, tuple | list) or not all(type(v) is int and v >= 0 for v in x):
        raise _bad(f"{what} must be a tuple of non-negative ints, got {x!r:.200}")
    return tuple(x)


def strided(storage: Any, offset: Any, size: Any, stride: Any, dt: D.dtype | None) -> np.ndarray:
    """The view of ``storage``'s array that a tensor with this offset, size and stride (in elements)
    is: checked to lie inside the storage, then made with as_strided (no copy, so tensors that share
    a storage share memory, as in PyTorch)."""
    if not isinstance(storage, Storage):
        raise _bad(f"a tensor's storage must be a storage, got {type(storage).__name__}")
    offset = _int(offset, "a tensor's storage offset")
    size, stride = _ints(size, "a tensor's size"), _ints(stride, "a tensor's stride")
    if len(size) != len(stride):
        raise _bad(f"a tensor's size {size} and stride {stride} differ in length")
    arr = storage.array
    if storage.dtype is None:  # untyped bytes: the tensor says what they hold
        if dt is None:
            raise _bad(f"storage {storage.key!r} is untyped and the tensor names no dtype")
        npd = numpy_dtype(dt)
        if npd is None:
            npd = np.dtype("<u2")
        if arr.nbytes % npd.itemsize:
            raise _bad(f"storage {storage.key!r} has {arr.nbytes} bytes, not a whole number of {dt.name}")
        arr = arr.view(npd)
    elif dt is not None and dt is not storage.dtype:
        raise _bad(f"storage {storage.key!r} holds {storage.dtype.name}, but the tensor says {dt.name}")
    n = arr.size
    if offset < 0:
        raise _bad(f"a tensor's storage offset {offset} is negative")
    if 0 in size:
        last = offset - 1  # an empty tensor reads nothing; its offset may be the storage's end
    else:
        last = offset + sum((s - 1) * st for s, st in zip(size, stride))
    if last >= n or offset > n:
        raise _bad(f"a tensor of size {list(size)}, stride {list(stride)} and storage offset {offset} reaches "
                   f"element {last} of storage {storage.key!r}, which has {n} elements")
    return np.lib.stride_tricks.as_strided(arr[offset:] if n else arr, shape=size,
                                           strides=tuple(st * arr.itemsize for st in stride),
                                           writeable=arr.flags.writeable)


def _widen_bf16(a: np.ndarray, d: D.dtype | None) -> np.ndarray:
    if d is not None and d.name == "bfloat16" and a.dtype == np.dtype("<u2"):
        return (a.astype(np.uint32) << 16).view(np.float32)  # bfloat16 is float32's upper half
    return a


def _requires_grad(t: Tensor, flag: Any) -> Tensor:
    if type(flag) is not bool:
        raise _bad(f"requires_grad must be a bool, got {type(flag).__name__}")
    if flag:
        if not (t.dtype.is_floating_point or t.dtype.is_complex):
            raise _bad(f"a tensor of dtype {t.dtype.name} is marked requires_grad")
        t.requires_grad = True
    return t


def _hooks(h: Any) -> None:
    # backward hooks are no longer saved by torch (an empty OrderedDict); anything else is refused
    if not (isinstance(h, dict) and not h) and h is not None:
        raise _bad("a tensor's backward hooks must be empty")


def _tensor(arr: np.ndarray) -> Tensor:
    t = Tensor._make(arr)
    t._mem = None  # read from a file, never carved from an arena: an arena reset must not reclaim it
    return t


def rebuild_tensor(storage: Any, offset: Any, size: Any, stride: Any) -> Tensor:
    """torch._utils._rebuild_tensor (legacy files)."""
    dt = storage.dtype if isinstance(storage, Storage) else None
    return _tensor(_widen_bf16(strided(storage, offset, size, stride, None), dt))


def rebuild_tensor_v2(storage: Any, offset: Any, size: Any, stride: Any, requires_grad: Any = False,
                      backward_hooks: Any = None, metadata: Any = None) -> Tensor:
    """torch._utils._rebuild_tensor_v2: a tensor over a typed storage."""
    _hooks(backward_hooks)
    return _requires_grad(rebuild_tensor(storage, offset, size, stride), requires_grad)


def rebuild_tensor_v3(storage: Any, offset: Any, size: Any, stride: Any, requires_grad: Any,
                      backward_hooks: Any, dtype: Any, metadata: Any = None) -> Tensor:
    """torch._utils._rebuild_tensor_v3: a tensor over an untyped storage, of the dtype given."""
    _hooks(backward_hooks)
    if not isinstance(dtype, D.dtype):
        raise _bad(f"_rebuild_tensor_v3 needs a dtype, got {type(dtype).__name__}")
    arr = _widen_bf16(strided(storage, offset, size, stride, dtype), dtype)
    return _requires_grad(_tensor(arr), requires_grad)


def rebuild_parameter(data: Any, requires_grad: Any, backward_hooks: Any = None) -> Parameter:
    """torch._utils._rebuild_parameter: a Parameter over the tensor's storage."""
    _hooks(backward_hooks)
    if type(data) is not Tensor:
        raise _bad(f"a Parameter must wrap a tensor, got {type(data).__name__}")
    if type(requires_grad) is not bool:
        raise _bad(f"requires_grad must be a bool, got {type(requires_grad).__name__}")
    if requires_grad and not (data.dtype.is_floating_point or data.dtype.is_complex):
        raise _bad(f"a Parameter of dtype {data.dtype.name} is marked requires_grad")
    p = Parameter(data, requires_grad)
    p._mem = None
    return p


def rebuild_parameter_with_state(data: Any, requires_grad: Any, backward_hooks: Any, state: Any) -> Parameter:
    """torch._utils._rebuild_parameter_with_state: a Parameter, with Python attributes."""
    p = rebuild_parameter(data, requires_grad, backward_hooks)
    _set_state(p, state)
    return p


def _set_state(t: Tensor, state: Any) -> None:
    """Python attributes saved with a tensor (a dict, or (dict, slots)); never one the class defines,
    so a checkpoint can't replace a tensor's data, methods or properties."""
    if state is None:
        return
    if isinstance(state, tuple) and len(state) == 2:
        parts = [s for s in state if s]
    else:
        parts = [state]
    for part in parts:
        if not isinstance(part, dict):
            raise _bad(f"a tensor's state must be a dict, got {type(part).__name__}")
        for k, v in part.items():
            if type(k) is not str or k.startswith("__") or hasattr(type(t), k) or k in Tensor.__slots__:
                raise _bad(f"a checkpoint may not set the tensor attribute {k!r}")
            t.__dict__[k] = v


def rebuild_from_type_v2(func: Any, new_type: Any, args: Any, state: Any) -> Tensor:
    """torch._tensor._rebuild_from_type_v2: a tensor rebuilt, then given its class and attributes."""
    if func not in (_SAFE["torch._utils._rebuild_tensor_v2"], _SAFE["torch._utils._rebuild_tensor_v3"],
                    _SAFE["torch._utils._rebuild_parameter"], _SAFE["torch._utils._rebuild_parameter_with_state"]):
        raise _bad(f"_rebuild_from_type_v2 may only call torch's tensor rebuild functions, got {func!r}")
    if not isinstance(args, tuple):
        raise _bad("_rebuild_from_type_v2's arguments must be a tuple")
    t = func(*args)
    if new_type is _SAFE["torch.nn.parameter.Parameter"] and type(t) is Tensor:
        t = rebuild_parameter(t, t.requires_grad)
    elif new_type not in (_SAFE["torch.Tensor"], _SAFE["torch.nn.parameter.Parameter"]):
        raise _bad(f"_rebuild_from_type_v2 may only make torch.Tensor or Parameter, got {new_type!r}")
    _set_state(t, state)
    return t


def _size(*args: Any) -> Size:
    if len(args) != 1:
        raise _bad("torch.Size takes one tuple")
    return Size(_ints(args[0], "torch.Size"))


def _device(*args: Any) -> device:
    if not args or not all(type(a) in (str, int) for a in args):
        raise _bad(f"torch.device takes a string (and an index), got {args!r:.100}")
    try:
        return device(*args)
    except RuntimeError as e:
        raise _bad(str(e)) from None


def _encode(text: Any, encoding: Any = "latin1") -> bytes:
    # how protocol 2 pickles bytes: _codecs.encode(str, 'latin1'); no other codec is looked up
    if type(text) is not str or encoding not in ("latin1", "latin-1"):
        raise _bad(f"_codecs.encode is allowed for (str, 'latin1') only, got encoding {encoding!r:.50}")
    return text.encode("latin1")


def _bytearray(*args: Any) -> bytearray:
    if len(args) > 1 or args and not isinstance(args[0], bytes | bytearray | list):
        raise _bad("bytearray is allowed from bytes or a list only")  # bytearray(10**12) would allocate
    return bytearray(*args)


def _set(*args: Any) -> set[Any]:
    if len(args) > 1 or args and not isinstance(args[0], list | tuple | set | frozenset):
        raise _bad("set is allowed from a list only")
    return set(*args)


def _complex(*args: Any) -> complex:
    if len(args) > 2 or not all(type(a) in (int, float) for a in args):
        raise _bad("complex is allowed from numbers only")
    return complex(*args)


def _layout(name: Any) -> str:
    if name != "torch.strided":
        raise _bad(f"lightgrad holds strided tensors only, not layout {name!r:.50}")
    return name


def _unsupported(kind: str) -> Callable[..., Any]:
    def refuse(*args: Any) -> Any:
        raise _bad(f"this checkpoint holds {kind}, which lightgrad can't hold")
    return refuse


_SAFE: dict[str, Any] = {
    "torch._utils._rebuild_tensor": rebuild_tensor,
    "torch._utils._rebuild_tensor_v2": rebuild_tensor_v2,
    "torch._utils._rebuild_tensor_v3": rebuild_tensor_v3,
    "torch._utils._rebuild_parameter": rebuild_parameter,
    "torch._utils._rebuild_parameter_with_state": rebuild_parameter_with_state,
    "torch._tensor._rebuild_from_type_v2": rebuild_from_type_v2,
    "torch.Size": _size,
    "torch.device": _device,
    "torch.serialization._get_layout": _layout,
    "_codecs.encode": _encode,
    "builtins.bytearray": _bytearray,
    "builtins.set": _set,
    "builtins.complex": _complex,
    "torch.Tensor": _unsupported("a bare torch.Tensor call"),
    "torch.nn.parameter.Parameter": _unsupported("a bare Parameter call"),
    **{f"torch._utils.{n}": _unsupported(kind) for n, kind in [
        ("_rebuild_qtensor", "quantized tensors"), ("_rebuild_sparse_tensor", "sparse tensors"),
        ("_rebuild_meta_tensor_no_storage", "meta tensors"), ("_rebuild_nested_tensor", "nested tensors"),
        ("_rebuild_wrapper_subclass", "tensor subclasses"),
        ("_rebuild_device_tensor_from_numpy", "device tensors"),
        ("_rebuild_device_tensor_from_cpu_tensor", "device tensors")]},
}
_SAFE = {k: _Safe(k, fn) for k, fn in _SAFE.items()}
_TYPES: dict[str, Any] = {"collections.OrderedDict": OrderedDict, "collections.Counter": Counter}


def allowed(module: str, name: str) -> Any:
    """What an allowed GLOBAL ``module.name`` stands for; raises Refused (PyTorch's message) otherwise."""
    # Python 2's names, as protocol 2 writes them (``__builtin__ set``), mapped as pickle.Unpickler's
    # own find_class maps them
    if (module, name) in _compat_pickle.NAME_MAPPING:
        module, name = _compat_pickle.NAME_MAPPING[(module, name)]
    elif module in _compat_pickle.IMPORT_MAPPING:
        module = _compat_pickle.IMPORT_MAPPING[module]
    full = f"{module}.{name}"
    if full in _SAFE:
        return _SAFE[full]
    if full in _TYPES:
        return _TYPES[full]
    if module in ("torch", "torch.cuda", "torch.storage"):
        if name in STORAGE_DTYPES and (module != "torch.storage" or name == "UntypedStorage"):
            dt = STORAGE_DTYPES[name]
            if dt is not None and lightgrad_dtype(dt) is None:
                raise _bad(f"this checkpoint holds {module}.{name} tensors, and lightgrad has no {dt}")
            return StorageType(name, dt)
        if module == "torch" and name in TORCH_DTYPES:
            d = lightgrad_dtype(name)
            if d is None:
                raise _bad(f"this checkpoint holds torch.{name} values, and lightgrad has no {name}")
            return d
    if module in _BLOCKED:
        raise _bad(f"Trying to load unsupported GLOBAL {full} whose module {module} is blocked.")
    shown = full[len("builtins."):] if full.startswith("builtins.") else full
    raise _bad(f"Unsupported global: GLOBAL {shown} was not an allowed global by default. lightgrad's "
               "weights-only list is fixed (PyTorch's add_safe_globals has no lightgrad counterpart).")


# ---- the unpicklers -------------------------------------------------------------------------------

PersistentLoad = Callable[[Any], Any]


class WeightsUnpickler(pickle.Unpickler):
    """``torch.load(weights_only=True)``'s rules on the C unpickler: globals from the fixed table
    only, persistent ids for storages only."""

    def __init__(self, file: Any, storage: PersistentLoad) -> None:
        super().__init__(file, encoding="utf-8")
        self._storage = storage

    def find_class(self, module: str, name: str) -> Any:
        return allowed(module, name)

    def persistent_load(self, pid: Any) -> Any:
        if type(pid) is not tuple:
            raise _bad(f"persistent_load id must be tuple or int, but got {type(pid)}")
        if not pid or pid[0] not in ("storage", b"storage"):
            raise _bad(f"Only persistent_load of storage is allowed, but got {type(pid[0]) if pid else pid}")
        return self._storage(pid)


class FullUnpickler(pickle.Unpickler):
    """``weights_only=False``, for a file the user trusts: any global (imported as pickle does), with
    torch's tensor and storage names read as lightgrad's, and lightgrad's own tensor ids."""

    def __init__(self, file: Any, storage: PersistentLoad, tensor: PersistentLoad) -> None:
        super().__init__(file, encoding="utf-8")
        self._storage, self._tensor = storage, tensor

    def find_class(self, module: str, name: str) -> Any:
        try:
            return allowed(module, name)
        except Refused:
            return super().find_class(module, name)

    def persistent_load(self, pid: Any) -> Any:
        if isinstance(pid, tuple) and pid and pid[0] in ("storage", b"storage"):
            return self._storage(pid)
        if isinstance(pid, tuple) and pid and pid[0] == "lightgrad.tensor":
            return self._tensor(pid)
        if isinstance(pid, tuple) and pid and pid[0] == "module":  # legacy files: the class, pickled by name
            return pid[1]
        raise pickle.UnpicklingError(f"unknown persistent id {pid!r:.100}")


def storage_id(pid: tuple[Any, ...], legacy: bool) -> tuple[StorageType, str, str, int, Any]:
    """Check a storage's persistent id: (type, key, location, numel, view metadata)."""
    want = 6 if legacy else 5
    if len(pid) != want:
        raise _bad(f"a storage id has {want} fields, got {len(pid)}")
    _, stype, key, location, numel = pid[:5]
    if not isinstance(stype, StorageType):
        raise _bad(f"a storage id names {stype!r:.100}, not a storage type")
    if isinstance(key, bytes):
        key = key.decode("ascii", "replace")
    if isinstance(location, bytes):
        location = location.decode("ascii", "replace")
    if type(key) is not str or type(location) is not str:
        raise _bad("a storage id's key and location must be strings")
    if type(numel) is not int or numel < 0:
        raise _bad(f"a storage's size must be a non-negative int, got {numel!r:.50}")
    return stype, key, location, numel, pid[5] if legacy else None


def storage_nbytes(stype: StorageType, numel: int) -> tuple[D.dtype | None, np.dtype, int]:
    """A storage type's lightgrad dtype (None: untyped), the NumPy dtype its bytes are read as, and
    the bytes ``numel`` elements take."""
    if stype.dtype_name is None:
        return None, np.dtype(np.uint8), numel
    d = lightgrad_dtype(stype.dtype_name)
    assert d is not None  # (allowed() refused the storage types lightgrad can't hold)
    npd = numpy_dtype(d)
    if npd is None:
        npd = np.dtype("<u2")  # bfloat16 without ml_dtypes: raw bits, widened to float32 per tensor
    return d, npd, numel * npd.itemsize


def as_array(raw: np.ndarray, npd: np.dtype, numel: int, big_endian: bool) -> np.ndarray:
    """A storage's bytes as an array of its dtype (swapped to native order if the file is big-endian)."""
    if npd.itemsize > 1 and big_endian:
        return raw.view(npd.newbyteorder(">")).astype(npd)
    if raw.ctypes.data % max(npd.alignment, 1) and npd.alignment > 1:
        raw = raw.copy()  # a foreign file's record may be unaligned for its dtype: NumPy needs alignment
    return raw.view(npd)[:numel] if numel else raw[:0].view(npd)


def restore_location(map_location: Any, storage: Storage, location: str) -> Storage:
    """Apply ``map_location`` as torch.load does (None, a dict, a string or device, or a callable)
    and check that the result is the CPU, the only device lightgrad has."""
    if map_location is None:
        target: Any = location
    elif isinstance(map_location, dict):
        target = map_location.get(location, location)
    elif isinstance(map_location, str | bytes | device):
        target = map_location.decode() if isinstance(map_location, bytes) else str(map_location)
    else:
        result = map_location(storage, location)
        if result is None:
            target = location
        elif isinstance(result, Storage):
            return result
        else:
            raise TypeError(f"map_location returned {type(result).__name__}, expected a storage or None")
    target = str(target)
    kind = target.partition(":")[0]
    if kind == "cuda":
        raise RuntimeError("Attempting to deserialize object on a CUDA device but torch.cuda.is_available() is "
                           "False. If you are running on a CPU-only machine, please use torch.load with "
                           "map_location=torch.device('cpu') to map your storages to the CPU.")
    device(target)  # raises for any other device lightgrad doesn't have
    return storage
