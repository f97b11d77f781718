"""Writing the pickle of PyTorch's checkpoint files (``data.pkl``): tensors as torch's rebuild calls over
storage records, exactly as ``torch.save`` writes them, so that ``torch.load(weights_only=True)`` reads
the file.

State (what ``torch.load(weights_only=True)`` accepts: tensors, Parameters, dtypes, sizes, None, bools,
ints, floats, complex numbers, strings, bytes, and lists, tuples, sets, dicts and OrderedDicts of
these) is written by ``StateWriter``, protocol 2 opcode by opcode (torch's names can't go through
Python's pickler without importing torch). Anything else (a whole ``nn.Module``) is pickled by Python's
pickler, tensors going to the storage records all the same (``ObjectPickler``); such a file loads only
with ``weights_only=False``, as in PyTorch.

Storages: the tensors that view one NumPy buffer share one storage record, as views saved together do
in PyTorch; the record holds the span of the buffer that the saved tensors cover (PyTorch writes the
whole storage), so a small view of a large array (or of an arena) doesn't drag the rest along.
"""

from __future__ import annotations

import io
import pickle
import struct
from collections import OrderedDict
from typing import Any

import numpy as np

from .. import dtypes as D
from ..device import device
from ..nn.parameter import Parameter
from ..tensor import Size, Tensor
from .unpickler import STORAGE_DTYPES

_STORAGE_OF = {v: k for k, v in STORAGE_DTYPES.items() if v is not None}
_V3 = ("uint16", "uint32", "uint64")  # dtypes torch writes as _rebuild_tensor_v3 over an UntypedStorage
_BATCH = 1000  # items per APPENDS / SETITEMS, as Python's pickler batches them


class NotState(Exception):
    """The object holds something other than state: it is pickled by Python's pickler instead."""


class StoragePlan:
    """The storages of the tensors being saved: which NumPy buffer, which bytes, each tensor's place."""

    def __init__(self) -> None:
        self.groups: dict[tuple[int, str], list[Any]] = {}  # (buffer id, dtype) -> [root, lo, hi, key]
        self.own: list[np.ndarray] = []  # tensors saved as a copy of their own (negative strides, ...)
        self.places: dict[int, tuple[str, int, tuple[int, ...], tuple[int, ...], np.dtype]] = {}
        self.keep: list[Any] = []
        self.arrays: dict[str, np.ndarray] = {}  # key -> the storage's bytes (uint8), once finalized

    def add(self, arr: np.ndarray) -> None:
        """Pass 1: note a tensor's array."""
        if id(arr) in self.places or any(a is arr for a in self.own):
            return
        self.keep.append(arr)
        span = _span(arr)
        if span is None:
            self.own.append(arr)
            return
        root, lo, hi = span
        g = self.groups.setdefault((id(root), arr.dtype.str), [root, lo, hi, None])
        g[1], g[2] = min(g[1], lo), max(g[2], hi)

    def finalize(self) -> None:
        """Between the passes: give every storage its key and bytes, every tensor its place."""
        k = 0
        for g in self.groups.values():
            g[3] = str(k)
            self.arrays[g[3]] = _bytes(g[0])[g[1]:g[2]]
            k += 1
        for arr in self.keep:
            span = _span(arr)
            if span is None:
                key = str(k)
                k += 1
                c = np.ascontiguousarray(arr).astype(arr.dtype.newbyteorder("<"), copy=False)
                self.arrays[key] = c.reshape(-1).view(np.uint8)
                self.places[id(arr)] = (key, 0, arr.shape, _c_strides(arr.shape), arr.dtype)
                continue
            root, lo, _ = span
            g = self.groups[(id(root), arr.dtype.str)]
            start = lo - g[1]
            strides = tuple(s // arr.itemsize for s in arr.strides)
            self.places[id(arr)] = (g[3], start // arr.itemsize, arr.shape, strides, arr.dtype)

    def place(self, arr: np.ndarray) -> tuple[str, int, tuple[int, ...], tuple[int, ...], np.dtype]:
        return self.places[id(arr)]


def _c_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    out, n = [], 1
    for s in reversed(shape):
        out.append(n)
        n *= max(s, 1)
    return tuple(reversed(out))


def _root(arr: np.ndarray) -> np.ndarray:
    r = arr
    while isinstance(r.base, np.ndarray):
        r = r.base
    return r


def _bytes(root: np.ndarray) -> np.ndarray:
    return root.ravel(order="K").view(np.uint8)  # (root is contiguous: its memory, in memory order)


def _span(arr: np.ndarray) -> tuple[np.ndarray, int, int] | None:
    """(root buffer, first byte, end byte) of the array inside its root; None where it has to be
    copied into a storage of its own (negative or misaligned strides, big-endian, an empty array)."""
    if arr.size == 0 or arr.dtype.byteorder == ">" or any(s < 0 or s % arr.itemsize for s in arr.strides):
        return None
    root = _root(arr)
    if not (root.flags.c_contiguous or root.flags.f_contiguous) or root.dtype.byteorder == ">":
        return None
    base = root.__array_interface__["data"][0]
    lo = arr.__array_interface__["data"][0] - base
    hi = lo + sum((n - 1) * s for n, s in zip(arr.shape, arr.strides)) + arr.itemsize
    if lo < 0 or hi > root.nbytes or lo % arr.itemsize:
        return None
    return root, lo, hi


def _dtype_name(t: Tensor) -> str:
    return t.dtype.name


def _op_int(x: int) -> bytes:
    if 0 <= x < 256:
        return b"K" + bytes([x])
    if 0 <= x < 65536:
        return b"M" + struct.pack("<H", x)
    if -(1 << 31) <= x < (1 << 31):
        return b"J" + struct.pack("<i", x)
    n = (x.bit_length() + 8) // 8
    data = x.to_bytes(n, "little", signed=True)
    return (b"\x8a" + bytes([n]) if n < 256 else b"\x8b" + struct.pack("<i", n)) + data


def _op_str(s: str) -> bytes:
    b = s.encode("utf-8", "surrogatepass")
    return b"X" + struct.pack("<I", len(b)) + b


def _global(module: str, name: str) -> bytes:
    return b"c" + module.encode() + b"\n" + name.encode() + b"\n"


class StateWriter:
    """Protocol 2 opcodes for state (see the module docstring); raises NotState for anything else.

    ``legacy``: the persistent ids of torch's legacy format (a sixth field, the view metadata)."""

    def __init__(self, plan: StoragePlan, planning: bool, legacy: bool = False) -> None:
        self.plan, self.planning, self.legacy = plan, planning, legacy
        self.out = io.BytesIO()
        self.memo: dict[Any, int] = {}
        self.keep: list[Any] = []
        self.open: set[int] = set()
        self.numels: dict[str, int] = {}  # each storage's size as its persistent id gives it

    def dump(self, obj: Any) -> bytes:
        self.out.write(b"\x80\x02")
        self.save(obj)
        self.out.write(b".")
        return self.out.getvalue()

    # the memo: objects by identity, globals and storage ids by value
    def _put(self, key: Any, obj: Any) -> None:
        i = len(self.memo)
        self.memo[key] = i
        self.keep.append(obj)
        self.out.write(b"q" + bytes([i]) if i < 256 else b"r" + struct.pack("<I", i))

    def _get(self, key: Any) -> bool:
        i = self.memo.get(key)
        if i is None:
            return False
        self.out.write(b"h" + bytes([i]) if i < 256 else b"j" + struct.pack("<I", i))
        return True

    def _global(self, module: str, name: str) -> None:
        key = ("global", module, name)
        if not self._get(key):
            self.out.write(_global(module, name))
            self._put(key, None)

    def save(self, x: Any) -> None:
        w = self.out.write
        if isinstance(x, np.generic) and not isinstance(x, np.void):
            x = x.item()  # NumPy scalars as Python ones (np.float64 is a float anyway)
        t = type(x)
        if x is None:
            w(b"N")
        elif t is bool:
            w(b"\x88" if x else b"\x89")
        elif t is int:
            w(_op_int(x))
        elif t is float:
            w(b"G" + struct.pack(">d", x))
        elif t is str:
            w(_op_str(x))
        elif self._get(id(x)):
            pass
        elif isinstance(x, Tensor):
            self._tensor(x)
        elif t is list:
            w(b"]")
            self._put(id(x), x)
            self._items(x, b"e", b"a")
        elif t is tuple:
            self._tuple(x)
        elif t is dict or t is OrderedDict:
            self._dict(x)
        elif t is set:
            self._global("__builtin__", "set")
            w(b"]")
            self._items(list(x), b"e", b"a")
            w(b"\x85R")
            self._put(id(x), x)
        elif t is complex:
            self._global("__builtin__", "complex")
            w(b"G" + struct.pack(">d", x.real) + b"G" + struct.pack(">d", x.imag) + b"\x86R")
        elif t is bytes or t is bytearray:
            if t is bytearray:
                self._global("__builtin__", "bytearray")
            self._global("_codecs", "encode")
            w(_op_str(bytes(x).decode("latin1")) + _op_str("latin1") + b"\x86R")
            if t is bytearray:
                w(b"\x85R")
            self._put(id(x), x)
        elif isinstance(x, D.dtype):
            self._global("torch", x.name)
        elif t is Size:
            self._global("torch", "Size")
            self._tuple(tuple(x))
            w(b"\x85R")
            self._put(id(x), x)
        elif t is device:
            self._global("torch", "device")
            w(_op_str(str(x)) + b"\x85R")
        else:
            raise NotState(type(x))

    def _items(self, items: list[Any], many: bytes, one: bytes) -> None:
        for i in range(0, len(items), _BATCH):
            batch = items[i:i + _BATCH]
            if len(batch) == 1:
                self.save(batch[0])
                self.out.write(one)
                continue
            self.out.write(b"(")
            for v in batch:
                self.save(v)
            self.out.write(many)

    def _tuple(self, x: tuple[Any, ...]) -> None:
        if not x:
            self.out.write(b")")
            return
        if id(x) in self.open:
            raise ValueError("can't save a tuple that contains itself")
        self.open.add(id(x))
        try:
            if len(x) > 3:
                self.out.write(b"(")
            for v in x:
                self.save(v)
        finally:
            self.open.discard(id(x))
        self.out.write(b"t" if len(x) > 3 else b"\x85\x86\x87"[len(x) - 1:len(x)])
        self._put(id(x), x)

    def _dict(self, x: dict[Any, Any]) -> None:
        w = self.out.write
        if type(x) is OrderedDict:
            self._global("collections", "OrderedDict")
            w(b")R")
        else:
            w(b"}")
        self._put(id(x), x)
        items = list(x.items())
        for i in range(0, len(items), _BATCH):
            batch = items[i:i + _BATCH]
            w(b"(")
            for k, v in batch:
                self.save(k)
                self.save(v)
            w(b"u")
        state = getattr(x, "__dict__", None)
        if state:  # (a state_dict's _metadata, say: BUILD on an OrderedDict is what torch allows)
            self.save(dict(state))
            w(b"b")

    def _tensor(self, x: Tensor) -> None:
        w = self.out.write
        param = isinstance(x, Parameter)
        if param:
            self._global("torch._utils", "_rebuild_parameter")
            w(b"(")
        arr = x._live()
        name = _dtype_name(x)
        if self.planning:
            self.plan.add(arr)
            key, offset, shape, strides = "0", 0, arr.shape, (0,) * arr.ndim
            nbytes = 0
        else:
            key, offset, shape, strides, _ = self.plan.place(arr)
            nbytes = self.plan.arrays[key].size
        v3 = name in _V3
        self._global("torch._utils", "_rebuild_tensor_v3" if v3 else "_rebuild_tensor_v2")
        w(b"(")
        if not self._get(("storage", key)):
            w(b"(")
            w(_op_str("storage"))
            self._global("torch.storage" if v3 else "torch", "UntypedStorage" if v3 else _STORAGE_OF[name])
            self.numels[key] = numel = nbytes if v3 else nbytes // max(x.itemsize, 1)
            w(_op_str(key) + _op_str("cpu") + _op_int(numel))
            if self.legacy:
                w(b"N")
            w(b"t")
            self._put(("storage", key), None)
        w(b"Q")
        w(_op_int(offset))
        self._tuple(tuple(int(s) for s in shape))
        self._tuple(tuple(int(s) for s in strides))
        w(b"\x88" if x.requires_grad and not param else b"\x89")
        self._global("collections", "OrderedDict")
        w(b")R")
        if v3:
            self._global("torch", name)
        w(b"tR")
        if param:
            w(b"\x88" if x.requires_grad else b"\x89")
            self._global("collections", "OrderedDict")
            w(b")Rt" + b"R")
        self._put(id(x), x)


class ObjectPickler(pickle.Pickler):
    """Python's pickler for what isn't state (a whole Module): each tensor becomes a persistent id
    ``('lightgrad.tensor', n, storage key, dtype, offset, shape, strides, requires_grad, parameter)``
    over the same storage records (``n`` numbers distinct tensors, so identity survives)."""

    def __init__(self, file: Any, plan: StoragePlan, planning: bool, protocol: int = 2) -> None:
        super().__init__(file, protocol=protocol)
        self.plan, self.planning = plan, planning
        self.ids: dict[int, int] = {}
        self.keep: list[Any] = []

    def persistent_id(self, obj: Any) -> Any:
        if not isinstance(obj, Tensor):
            return None
        arr = obj._live()
        if self.planning:
            self.plan.add(arr)
            return ("lightgrad.tensor",)
        n = self.ids.setdefault(id(obj), len(self.ids))
        self.keep.append(obj)
        key, offset, shape, strides, _ = self.plan.place(arr)
        return ("lightgrad.tensor", n, key, obj.dtype.name, offset, tuple(shape), strides, bool(obj.requires_grad),
                isinstance(obj, Parameter))


def pickle_object(obj: Any, legacy: bool = False) -> tuple[bytes, dict[str, np.ndarray], dict[str, int] | None]:
    """The pickle of ``obj``, the storages (key -> bytes) it refers to, and their sizes as the
    persistent ids give them (None where ``obj`` is not state and Python's pickler wrote it)."""
    plan = StoragePlan()
    try:
        StateWriter(plan, True, legacy).dump(obj)
        state = True
    except NotState:
        if legacy:
            raise TypeError("torch.save's legacy format holds state only (tensors, numbers, strings and "
                            "containers): save a whole object in the zip format") from None
        state = False
        plan = StoragePlan()
        ObjectPickler(io.BytesIO(), plan, True).dump(obj)
    plan.finalize()
    if state:
        w = StateWriter(plan, False, legacy)
        return w.dump(obj), plan.arrays, w.numels
    buf = io.BytesIO()
    ObjectPickler(buf, plan, False).dump(obj)
    return buf.getvalue(), plan.arrays, None
