"""Containers: Sequential, ModuleList, ModuleDict, ParameterList, ParameterDict, and the shape
helpers Identity, Flatten, Unflatten.

>>> net = nn.Sequential(nn.Linear(4, 8), nn.ReLU()); len(net), type(net[0]).__name__
(2, 'Linear')
"""

from __future__ import annotations

import operator
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping
from itertools import chain
from typing import Any

from ..tensor import Tensor
from .module import Module, _addindent
from .parameter import Parameter


def _abs_index(idx: int, n: int, what: str) -> int:
    idx = operator.index(idx)
    if not -n <= idx < n:
        raise IndexError(f"index {idx} is out of range")
    return idx % n


class Identity(Module):
    """Returns its input unchanged (any constructor arguments are ignored)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__()

    def forward(self, input: Any) -> Any:
        """Return ``input`` unchanged."""
        return input


class Flatten(Module):
    """Flatten dims ``start_dim`` .. ``end_dim`` (default: all but the batch dim)."""

    def __init__(self, start_dim: int = 1, end_dim: int = -1) -> None:
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, input: Tensor) -> Tensor:
        """Flatten dims ``start_dim`` through ``end_dim`` into one."""
        return input.flatten(self.start_dim, self.end_dim)

    def extra_repr(self) -> str:
        """The constructor options the module's repr shows."""
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    """Split dim ``dim`` into ``unflattened_size``: ``nn.Unflatten(1, (2, 5))``."""

    def __init__(self, dim: int, unflattened_size: Any) -> None:
        super().__init__()
        if not isinstance(unflattened_size, list | tuple):
            raise TypeError(f"unflattened_size must be tuple of ints, but found type {type(unflattened_size).__name__}")
        self.dim, self.unflattened_size = dim, unflattened_size

    def forward(self, input: Tensor) -> Tensor:
        """Split dim ``dim`` into ``unflattened_size``."""
        return input.unflatten(self.dim, self.unflattened_size)

    def extra_repr(self) -> str:
        """The constructor options the module's repr shows."""
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"


class Sequential(Module):
    """Modules applied in order: ``nn.Sequential(nn.Linear(2, 3), nn.ReLU())``, or from an
    OrderedDict of named modules."""

    def __init__(self, *args: Module) -> None:
        super().__init__()
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            for key, module in args[0].items():
                self.add_module(key, module)
        else:
            for idx, module in enumerate(args):
                self.add_module(str(idx), module)

    def forward(self, input: Any) -> Any:
        """Feed ``input`` through each module in order and return the last output."""
        for module in self._modules.values():
            input = module(input)  # type: ignore[misc]
        return input

    def __getitem__(self, idx: int | slice) -> Any:
        if isinstance(idx, slice):
            return type(self)(OrderedDict(list(self._modules.items())[idx]))  # type: ignore[arg-type]
        key = list(self._modules)[_abs_index(idx, len(self), "Sequential")]
        return self._modules[key]

    def __setitem__(self, idx: int, module: Module) -> None:
        key = list(self._modules)[_abs_index(idx, len(self), "Sequential")]
        setattr(self, key, module)

    def __delitem__(self, idx: int | slice) -> None:
        keys = list(self._modules)
        for key in (keys[idx] if isinstance(idx, slice) else [keys[_abs_index(idx, len(self), "Sequential")]]):
            delattr(self, key)
        # keep the numbering contiguous, as PyTorch does
        self._modules = OrderedDict((str(i), m) for i, m in enumerate(self._modules.values()))  # type: ignore

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())  # type: ignore[arg-type]

    def __add__(self, other: Sequential) -> Sequential:
        if not isinstance(other, Sequential):
            raise ValueError(f"add operator supports only objects of Sequential class, but {type(other)} is given.")
        return Sequential(*self, *other)

    def __iadd__(self, other: Sequential) -> Sequential:
        if not isinstance(other, Sequential):
            raise ValueError(f"add operator supports only objects of Sequential class, but {type(other)} is given.")
        for m in list(other):
            self.append(m)
        return self

    def __dir__(self) -> list[str]:
        return [k for k in super().__dir__() if not k.isdigit()]

    def append(self, module: Module) -> Sequential:
        """Add ``module`` at the end; returns self."""
        self.add_module(str(len(self)), module)
        return self

    def extend(self, sequential: Iterable[Module]) -> Sequential:
        """Append each module of ``sequential``; returns self."""
        for m in sequential:
            self.append(m)
        return self

    def insert(self, index: int, module: Module) -> Sequential:
        """Insert ``module`` before position ``index``; returns self."""
        if not isinstance(module, Module):
            raise AssertionError(f"module should be of type: {Module}")
        n = len(self)
        if not -n <= index <= n:
            raise IndexError(f"Index out of range: {index}")
        index = index % (n + 1) if index < 0 else index
        mods = list(self._modules.values())
        mods.insert(index, module)
        self._modules = OrderedDict((str(i), m) for i, m in enumerate(mods))  # type: ignore[misc]
        return self

    def pop(self, key: int | slice) -> Module:
        """Remove the module at ``key`` and return it."""
        v = self[key]
        del self[key]
        return v


class ModuleList(Module):
    """A list of modules, registered so their parameters are found: ``nn.ModuleList([...])``."""

    def __init__(self, modules: Iterable[Module] | None = None) -> None:
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def __getitem__(self, idx: int | slice) -> Any:
        if isinstance(idx, slice):
            return type(self)(list(self._modules.values())[idx])  # type: ignore[arg-type]
        return self._modules[str(_abs_index(idx, len(self), "ModuleList"))]

    def __setitem__(self, idx: int, module: Module) -> None:
        setattr(self, str(_abs_index(idx, len(self), "ModuleList")), module)

    def __delitem__(self, idx: int | slice) -> None:
        keys = list(self._modules)
        for key in (keys[idx] if isinstance(idx, slice) else [str(_abs_index(idx, len(self), "ModuleList"))]):
            delattr(self, key)
        self._modules = OrderedDict((str(i), m) for i, m in enumerate(self._modules.values()))  # type: ignore

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())  # type: ignore[arg-type]

    def __iadd__(self, modules: Iterable[Module]) -> ModuleList:
        return self.extend(modules)

    def __add__(self, other: Iterable[Module]) -> ModuleList:
        return ModuleList(chain(self, other))

    def __dir__(self) -> list[str]:
        return [k for k in super().__dir__() if not k.isdigit()]

    def append(self, module: Module) -> ModuleList:
        """Add ``module`` at the end; returns self."""
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules: Iterable[Module]) -> ModuleList:
        """Add each module of ``modules`` at the end; returns self."""
        if not isinstance(modules, Iterable):
            raise TypeError("ModuleList.extend should be called with an iterable, but got " + type(modules).__name__)
        for m in modules:
            self.append(m)
        return self

    def insert(self, index: int, module: Module) -> None:
        """Insert ``module`` before position ``index``."""
        mods = list(self._modules.values())
        mods.insert(index, module)
        self._modules = OrderedDict()  # type: ignore[misc]
        for m in mods:
            self.append(m)  # type: ignore[arg-type]

    def pop(self, key: int | slice) -> Module:
        """Remove the module at ``key`` and return it."""
        v = self[key]
        del self[key]
        return v

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        """Not a layer: raises NotImplementedError (call the modules it holds)."""
        raise NotImplementedError("ModuleList is a container: call its modules, not the list")

    def __repr__(self) -> str:
        # runs of identical children print once, as PyTorch does: "(0-2): 3 x Linear(...)"
        reprs = [repr(m) for m in self]
        if not reprs:
            return self._get_name() + "()"
        lines, start = [], 0
        for i in range(1, len(reprs) + 1):
            if i == len(reprs) or reprs[i] != reprs[start]:
                body = _addindent(reprs[start], 2)
                if i - start == 1:
                    lines.append(f"({start}): {body}")
                else:
                    lines.append(f"({start}-{i - 1}): {i - start} x {body}")
                start = i
        return self._get_name() + "(\n  " + "\n  ".join(lines) + "\n)"


class ModuleDict(Module):
    """A dict of modules, registered in insertion order: ``nn.ModuleDict({'enc': enc})``."""

    def __init__(self, modules: Mapping[str, Module] | Iterable[tuple[str, Module]] | None = None) -> None:
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key: str) -> Module:
        return self._modules[key]  # type: ignore[return-value]

    def __setitem__(self, key: str, module: Module) -> None:
        self.add_module(key, module)

    def __delitem__(self, key: str) -> None:
        del self._modules[key]

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[str]:
        return iter(self._modules)

    def __contains__(self, key: object) -> bool:
        return key in self._modules

    def clear(self) -> None:
        """Remove every module."""
        self._modules.clear()

    def pop(self, key: str) -> Module:
        """Remove the module under ``key`` and return it."""
        v = self[key]
        del self[key]
        return v

    def keys(self) -> Any:
        """The names of the modules, in insertion order."""
        return self._modules.keys()

    def items(self) -> Any:
        """The (name, module) pairs, in insertion order."""
        return self._modules.items()

    def values(self) -> Any:
        """The modules, in insertion order."""
        return self._modules.values()

    def update(self, modules: Mapping[str, Module] | Iterable[tuple[str, Module]]) -> None:
        """Add or replace modules from a mapping or from (name, module) pairs."""
        if isinstance(modules, Mapping):
            for k, m in modules.items():
                self[k] = m
            return
        for j, item in enumerate(modules):
            if not isinstance(item, list | tuple) or len(item) != 2:
                raise ValueError(f"ModuleDict update sequence element #{j} should be a (key, module) pair")
            self[item[0]] = item[1]

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        """Not a layer: raises NotImplementedError (call the modules it holds)."""
        raise NotImplementedError("ModuleDict is a container: call its modules, not the dict")


def _param_line(key: Any, p: Any, typename: bool = False) -> str:
    # PyTorch prints the dtype in ParameterList and the tensor type name in ParameterDict
    if isinstance(p, Tensor):
        size = "x".join(str(s) for s in p.shape)
        kind = "Parameter" if isinstance(p, Parameter) else "Tensor"
        return f"  ({key}): {kind} containing: [{p.type() if typename else p.dtype} of size {size}]"
    return f"  ({key}): Object of type: {type(p).__name__}"


class ParameterList(Module):
    """A list of Parameters (plain tensors are wrapped): ``nn.ParameterList([nn.Parameter(w)])``."""

    def __init__(self, values: Iterable[Any] | None = None) -> None:
        super().__init__()
        self._size = 0
        if values is not None:
            self.extend(values)

    def __getitem__(self, idx: int | slice) -> Any:
        if isinstance(idx, slice):
            return ParameterList([self[i] for i in range(len(self))[idx]])
        return getattr(self, str(_abs_index(idx, self._size, "ParameterList")))

    def __setitem__(self, idx: int, param: Any) -> None:
        idx = _abs_index(idx, self._size, "ParameterList")
        if isinstance(param, Tensor) and not isinstance(param, Parameter):
            param = Parameter(param)
        setattr(self, str(idx), param)

    def __len__(self) -> int:
        return self._size

    def __iter__(self) -> Iterator[Any]:
        return (self[i] for i in range(self._size))

    def __iadd__(self, parameters: Iterable[Any]) -> ParameterList:
        return self.extend(parameters)

    def __dir__(self) -> list[str]:
        return [k for k in super().__dir__() if not k.isdigit()]

    def append(self, value: Any) -> ParameterList:
        """Add ``value`` at the end (a tensor becomes a Parameter); returns self."""
        self._size += 1
        self[self._size - 1] = value
        return self

    def extend(self, values: Iterable[Any]) -> ParameterList:
        """Add each value of ``values`` at the end; returns self."""
        if not isinstance(values, Iterable) or isinstance(values, Tensor):
            raise TypeError("ParameterList.extend should be called with an iterable, but got "
                            + type(values).__name__)
        for v in values:
            self.append(v)
        return self

    def extra_repr(self) -> str:
        """One line per entry with its type, shape and dtype, for the repr."""
        return "\n".join(_param_line(k, p) for k, p in enumerate(self))

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        """Not a layer: raises NotImplementedError."""
        raise NotImplementedError("ParameterList is a container, not a layer")


class ParameterDict(Module):
    """A dict of Parameters (plain tensors are wrapped): ``nn.ParameterDict({'a': p})``."""

    def __init__(self, parameters: Any = None) -> None:
        super().__init__()
        self._keys: dict[str, None] = {}
        if parameters is not None:
            self.update(parameters)

    def __getitem__(self, key: str) -> Any:
        return getattr(self, key)

    def __setitem__(self, key: str, value: Any) -> None:
        self._keys[key] = None
        if isinstance(value, Tensor) and not isinstance(value, Parameter):
            value = Parameter(value)
        setattr(self, key, value)

    def __delitem__(self, key: str) -> None:
        del self._keys[key]
        delattr(self, key)

    def __len__(self) -> int:
        return len(self._keys)

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys)

    def __contains__(self, key: object) -> bool:
        return key in self._keys

    def keys(self) -> Any:
        """The names of the parameters, in insertion order."""
        return self._keys.keys()

    def items(self) -> Any:
        """The (name, parameter) pairs, in insertion order."""
        return ((k, self[k]) for k in self._keys)

    def values(self) -> Any:
        """The parameters, in insertion order."""
        return (self[k] for k in self._keys)

    def get(self, key: str, default: Any = None) -> Any:
        """The parameter under ``key``, or ``default`` when there is none."""
        return self[key] if key in self else default

    def pop(self, key: str) -> Any:
        """Remove the parameter under ``key`` and return it."""
        v = self[key]
        del self[key]
        return v

    def clear(self) -> None:
        """Remove every parameter."""
        for k in list(self._keys):
            del self[k]

    def update(self, parameters: Any) -> None:
        """Add or replace parameters from a mapping or from (name, parameter) pairs."""
        items = parameters.items() if isinstance(parameters, Mapping | ParameterDict) else parameters
        if isinstance(parameters, dict) and not isinstance(parameters, OrderedDict):
            items = parameters.items()
        for j, item in enumerate(items):
            if not isinstance(item, list | tuple) or len(item) != 2:
                raise ValueError(f"ParameterDict update sequence element #{j} should be a (key, parameter) pair")
            self[item[0]] = item[1]

    def extra_repr(self) -> str:
        """One line per entry with its name, type, shape and dtype, for the repr."""
        return "\n".join(_param_line(k, self[k], typename=True) for k in self._keys)

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        """Not a layer: raises NotImplementedError."""
        raise NotImplementedError("ParameterDict is a container, not a layer")


__all__ = ["Flatten", "Identity", "ModuleDict", "ModuleList", "ParameterDict", "ParameterList", "Sequential",
           "Unflatten"]
