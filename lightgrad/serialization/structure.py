"""A saved object as (structure JSON, named arrays) and back: the encoding of the checkpoint's
lightgrad.structure metadata, as lightgrad.serialization describes it."""

from __future__ import annotations

import json
import math
from collections import OrderedDict
from typing import Any

import numpy as np

from .. import dtypes as D
from ..nn.parameter import Parameter
from ..tensor import Tensor
from .format import _CODE_OF, _MAX_DEPTH, CheckpointError

# ---- the object <-> (structure JSON, named arrays) ----------------------------------------------

class _Flattener:
    """Turns a saved object into the structure JSON and a dict of named, contiguous arrays."""

    def __init__(self) -> None:
        self.arrays: dict[str, np.ndarray] = {}
        self._open: set[int] = set()  # containers on the current path, to refuse cycles

    def encode(self, x: Any, path: list[str]) -> Any:
        if isinstance(x, np.generic):  # NumPy scalars become Python ones (np.float64 is a float)
            x = x.item()
        if x is None or isinstance(x, bool | int | str):
            return x
        if isinstance(x, float):
            return x if math.isfinite(x) else {"float": repr(x)}
        if isinstance(x, Tensor):
            node: dict[str, Any] = {"tensor": self._add(x._live(), path)}
            if x.requires_grad:
                node["requires_grad"] = True
            if _is_parameter(x):
                node["parameter"] = True
            return node
        if isinstance(x, np.ndarray):
            return {"ndarray": self._add(x, path)}
        if isinstance(x, D.dtype):
            return {"dtype": x.name}
        if isinstance(x, list | tuple | dict):
            if id(x) in self._open:
                raise ValueError(f"can't save a circular reference at {_where(path)}")
            if len(path) >= _MAX_DEPTH:  # each container adds at least one level of JSON; see save()
                raise ValueError(f"can't save containers nested {len(path) + 1} deep at {_where(path[:4] + ['...'])}"
                                 f": a checkpoint's structure nests at most {_MAX_DEPTH} levels of JSON")
            self._open.add(id(x))
            try:
                if isinstance(x, dict):
                    items = [[self.key(k, path), self.encode(v, path + [str(k)])] for k, v in x.items()]
                    return {"dict": items, "ordered": True} if isinstance(x, OrderedDict) else {"dict": items}
                items = [self.encode(v, path + [str(i)]) for i, v in enumerate(x)]
                return items if isinstance(x, list) else {"tuple": items}
            finally:
                self._open.discard(id(x))
        hint = "; save its state_dict() instead" if callable(getattr(x, "state_dict", None)) else ""
        raise TypeError(f"can't save an object of type {_type_name(x)} at {_where(path)}: checkpoints "
                        "hold tensors, NumPy arrays, dtypes, numbers, strings, bools, None, and "
                        f"lists, tuples and dicts of these (never code){hint}")

    def key(self, k: Any, path: list[str], depth: int = 0) -> Any:
        if isinstance(k, np.generic):
            k = k.item()
        if k is None or isinstance(k, bool | int | float | str):
            return self.encode(k, path)
        if isinstance(k, tuple):
            if depth >= _MAX_DEPTH:
                raise ValueError(f"can't save a dict key of tuples nested {depth + 1} deep at {_where(path)}: a "
                                 f"checkpoint's structure nests at most {_MAX_DEPTH} levels of JSON")
            return {"tuple": [self.key(v, path, depth + 1) for v in k]}
        raise TypeError(f"can't save a dict key of type {_type_name(k)} at {_where(path)}: keys must be "
                        "strings, numbers, bools, None or tuples of these")

    def _add(self, arr: np.ndarray, path: list[str]) -> str:
        if np.dtype(arr.dtype.name) not in _CODE_OF:
            raise TypeError(f"can't save an array of dtype {arr.dtype} at {_where(path)}; supported: "
                            f"{', '.join(str(d) for d in _CODE_OF)}")
        # a str may hold a lone surrogate, which a safetensors header can't (it must be Unicode): such a
        # name is written with the surrogate escaped (the structure keeps the key itself)
        base = (".".join(path) or "tensor").encode("utf-8", "backslashreplace").decode("utf-8")
        name, k = base, 0
        while name in self.arrays or name == "__metadata__":  # "a.b" and {"a": {"b"}} would collide
            k += 1
            name = f"{base}#{k}"
        # 0-d arrays stay 0-d (np.ascontiguousarray would make them 1-d); files are little-endian
        if not arr.flags.c_contiguous:
            arr = arr.copy(order="C")
        if arr.dtype.byteorder == ">":
            arr = arr.astype(arr.dtype.newbyteorder("<"))
        self.arrays[name] = arr
        return name


def _tensor(arr: np.ndarray) -> Tensor:
    t = Tensor._make(arr)
    t._mem = None  # read from a file, never carved from an arena: an arena reset must not reclaim it
    return t


def _is_parameter(x: Tensor) -> bool:
    # (by name too, as when nn was imported here lazily: a subclass named otherwise saves as a plain tensor)
    return type(x).__name__ == "Parameter" and isinstance(x, Parameter)


def _type_name(x: Any) -> str:
    t = type(x)
    return t.__qualname__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__qualname__}"


def _where(path: list[str]) -> str:
    return repr(".".join(path)) if path else "the top level"


class _Decoder:
    """Rebuilds the saved object from the structure JSON and the arrays read from the file."""

    def __init__(self, arrays: dict[str, np.ndarray], name: str) -> None:
        self.arrays = arrays
        self.name = name
        self.used: set[str] = set()

    def fail(self, what: str) -> CheckpointError:
        return CheckpointError(f"checkpoint {self.name}: {what}")

    def decode(self, node: Any) -> Any:
        # recursive, but only as deep as _json let the structure nest (_MAX_DEPTH); every value is
        # type-checked before it is used as a key or an index, so a crafted node fails with its text
        if node is None or isinstance(node, bool | int | float | str):
            return node
        if isinstance(node, list):
            return [self.decode(v) for v in node]
        if not isinstance(node, dict) or not node:
            raise self.fail(f"unexpected structure node {node!r}")
        if "tensor" in node or "ndarray" in node:
            return self.array(node)
        if isinstance(node.get("tuple"), list):
            return tuple(self.decode(v) for v in node["tuple"])
        if isinstance(node.get("dict"), list):
            out: dict[Any, Any] = OrderedDict() if node.get("ordered") else {}
            for pair in node["dict"]:
                if not (isinstance(pair, list) and len(pair) == 2):
                    raise self.fail(f"a dict item must be a [key, value] pair, got {json.dumps(pair)[:200]}")
                key, value = self.decode(pair[0]), self.decode(pair[1])
                try:
                    out[key] = value
                except TypeError:
                    raise self.fail(f"unhashable dict key {json.dumps(pair[0])[:200]}") from None
            return out
        if isinstance(node.get("float"), str) and node["float"] in ("nan", "inf", "-inf"):
            return float(node["float"])
        if isinstance(node.get("dtype"), str) and node["dtype"] in D._BY_NAME:
            return D._BY_NAME[node["dtype"]]
        raise self.fail(f"unknown structure node {json.dumps(node)[:200]}")

    def array(self, node: dict[str, Any]) -> Any:
        ref = node.get("tensor", node.get("ndarray"))
        if not isinstance(ref, str) or ref not in self.arrays:
            raise self.fail(f"the structure refers to tensor {ref!r}, which is not in the file")
        self.used.add(ref)
        arr = self.arrays[ref]
        if "ndarray" in node:
            return arr
        t = _tensor(arr)
        if node.get("requires_grad"):
            if arr.dtype.kind != "f":
                raise self.fail(f"tensor {ref!r} of dtype {arr.dtype} is marked requires_grad")
            t.requires_grad = True
        if node.get("parameter"):
            t = Parameter(t, requires_grad=bool(node.get("requires_grad")))
        return t
