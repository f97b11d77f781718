"""Parametrizations, as ``torch.nn.utils.parametrize``: ``module.weight`` becomes the output of a
small module applied to the stored tensor ``module.parametrizations.weight.original``.

>>> class Sym(nn.Module):
...     def forward(self, x): return x.triu() + x.triu(1).mT
>>> m = register_parametrization(nn.Linear(3, 3), "weight", Sym())
>>> sorted(m.state_dict())
['bias', 'parametrizations.weight.original']

How: as PyTorch, the module's class is swapped for a one-off subclass with a property per
parametrized name. Reading the property runs the ParametrizationList (under ``cached()`` once per
context); assigning to it stores ``right_inverse(value)`` into ``original``.
"""

from __future__ import annotations

import collections.abc
import contextlib
import copy
from collections.abc import Iterator
from typing import Any, TypeVar

from ... import backend as B
from ...grad_mode import no_grad
from ...tensor import Tensor
from ..container import ModuleDict, ModuleList
from ..module import Module
from ..parameter import Parameter

__all__ = ["ParametrizationList", "cached", "is_parametrized", "register_parametrization",
           "remove_parametrizations", "type_before_parametrizations"]

M = TypeVar("M", bound=Module)

_cache_enabled = 0
_cache: dict[tuple[int, str], Tensor] = {}


@contextlib.contextmanager
def cached() -> Iterator[None]:
    """Inside this context each parametrized tensor is computed once, at its first use."""
    global _cache_enabled
    _cache_enabled += 1
    try:
        yield
    finally:
        _cache_enabled -= 1
        if not _cache_enabled:
            _cache.clear()


def _register_parameter_or_buffer(module: Module, name: str, x: Tensor) -> None:
    if isinstance(x, Parameter):
        module.register_parameter(name, x)
    else:
        module.register_buffer(name, x)


def _set(dst: Tensor, src: Tensor) -> None:
    """PyTorch's ``original.set_(src)``: ``dst`` keeps its identity and takes ``src``'s values and shape."""
    data = src.detach()._data
    if data.shape == dst._data.shape and dst._data.flags.writeable:
        # in place, so an optimizer's flat buffer that views dst stays in step (as load_state_dict)
        B.copyto(dst._data, data, casting="unsafe")
    else:
        dst._data = B.array(data, dtype=dst._data.dtype, copy=True)
    dst._version[0] += 1


def _check_result(z: Any, dtype: Any, shape: Any, what: str) -> None:
    if not isinstance(z, Tensor):
        raise ValueError(f"A parametrization must return a tensor. Got {type(z).__name__}.")
    if z.dtype != dtype:
        raise ValueError(f"{what} may not change the dtype of the tensor, unless `unsafe` flag is enabled.\n"
                         f"unparametrized dtype: {dtype}\nparametrized dtype: {z.dtype}")
    if z.shape != shape:
        raise ValueError(f"{what} may not change the shape of the tensor, unless `unsafe` flag is enabled.\n"
                         f"unparametrized shape: {shape}\nparametrized shape: {z.shape}")


class ParametrizationList(ModuleList):
    """The parametrizations of one tensor, applied in order to ``original`` (or ``original0..n``)."""

    def __init__(self, modules: Any, original: Tensor, unsafe: bool = False) -> None:
        modules = list(modules)
        if len(modules) == 0:
            raise ValueError("ParametrizationList requires one or more modules.")
        super().__init__(modules)
        self.unsafe = unsafe
        shape, dtype = original.shape, original.dtype
        with no_grad():
            new: Any = original
            for module in reversed(modules):
                if hasattr(module, "right_inverse"):
                    try:
                        new = module.right_inverse(new)
                    except NotImplementedError:
                        pass
        if not isinstance(new, (Tensor, collections.abc.Sequence)):
            raise ValueError("'right_inverse' must return a Tensor or a Sequence of tensors (list, tuple...). "
                             f"Got {type(new).__name__}")
        self.is_tensor = isinstance(new, Tensor)
        self.ntensors = 1 if isinstance(new, Tensor) else len(new)
        if isinstance(new, Tensor):
            if original.dtype != new.dtype:
                raise ValueError("When `right_inverse` outputs one tensor, it may not change the dtype.\n"
                                 f"original.dtype: {original.dtype}\nright_inverse(original).dtype: {new.dtype}")
            if new is not original:
                _set(original, new)
            _register_parameter_or_buffer(self, "original", original)
        else:
            for i, t in enumerate(new):
                if not isinstance(t, Tensor):
                    raise ValueError("'right_inverse' must return a Tensor or a Sequence of tensors "
                                     f"(list, tuple...). Got element {i} of the sequence with type {type(t).__name__}.")
                t = t.detach()
                if isinstance(original, Parameter):
                    t = Parameter(t, original.requires_grad)
                t.requires_grad_(original.requires_grad)
                _register_parameter_or_buffer(self, f"original{i}", t)
        if not self.unsafe:
            _check_result(self(), dtype, shape, "Registering a parametrization")

    def right_inverse(self, value: Tensor) -> None:
        """Store ``value`` by running each parametrization's ``right_inverse`` in reverse order."""
        with no_grad():
            new: Any = value
            for module in reversed(list(self)):
                if not hasattr(module, "right_inverse"):
                    raise RuntimeError(f"parametrization {type(module).__name__} does not implement right_inverse.")
                new = module.right_inverse(new)
            if self.is_tensor:
                if not isinstance(new, Tensor):
                    raise ValueError(f"`right_inverse` should return a tensor. Got {type(new).__name__}")
                if new.dtype != self.original.dtype:
                    raise ValueError(f"The tensor returned by `right_inverse` has dtype {new.dtype} while "
                                     f"`original` has dtype {self.original.dtype}")
                _set(self.original, new)
            else:
                if not isinstance(new, collections.abc.Sequence) or len(new) != self.ntensors:
                    raise ValueError(f"'right_inverse' must return a sequence of tensors of length {self.ntensors}.")
                for i, t in enumerate(new):
                    _set(getattr(self, f"original{i}"), t)

    def forward(self) -> Tensor:
        """The parametrized tensor: the original(s) passed through each parametrization in turn."""
        mods = list(self)
        if self.is_tensor:
            x = mods[0](self.original)
        else:
            x = mods[0](*(getattr(self, f"original{i}") for i in range(self.ntensors)))
        for m in mods[1:]:
            x = m(x)
        return x


def _inject_new_class(module: Module) -> None:
    cls = module.__class__

    def getstate(self: Any) -> Any:
        raise RuntimeError("Serialization of parametrized modules is only supported through state_dict().")

    def deepcopy(self: Any, memo: dict[int, Any]) -> Any:
        # pickling is refused above, so copy.deepcopy copies the instance dict itself (as PyTorch)
        if id(self) in memo:
            return memo[id(self)]
        replica = self.__new__(self.__class__)
        memo[id(self)] = replica
        object.__setattr__(replica, "__dict__", copy.deepcopy(self.__dict__, memo))
        return replica

    dct: dict[str, Any] = {"__getstate__": getstate}
    if not hasattr(cls, "__deepcopy__"):
        dct["__deepcopy__"] = deepcopy
    object.__setattr__(module, "__class__", type(f"Parametrized{cls.__name__}", (cls,), dct))


def _inject_property(module: Module, tensor_name: str) -> None:
    def get_parametrized(self: Module) -> Tensor:
        plist = self.parametrizations[tensor_name]
        if _cache_enabled:
            key = (id(self), tensor_name)
            t = _cache.get(key)
            if t is None:
                t = _cache[key] = plist()
            return t
        return plist()

    def set_original(self: Module, value: Tensor) -> None:
        self.parametrizations[tensor_name].right_inverse(value)

    setattr(module.__class__, tensor_name, property(get_parametrized, set_original))


def is_parametrized(module: Module, tensor_name: str | None = None) -> bool:
    """Whether ``module`` has any parametrization (or one on ``tensor_name``)."""
    plists = getattr(module, "parametrizations", None)
    if plists is None or not isinstance(plists, ModuleDict):
        return False
    return len(plists) > 0 if tensor_name is None else tensor_name in plists


def type_before_parametrizations(module: Module) -> type:
    """The class ``module`` had before its first parametrization."""
    return module.__class__.__bases__[0] if is_parametrized(module) else type(module)


def register_parametrization(module: M, tensor_name: str, parametrization: Module, *, unsafe: bool = False) -> M:
    """Make ``module.<tensor_name>`` the output of ``parametrization`` applied to the stored tensor.

    >>> m = register_parametrization(nn.Linear(3, 3), "weight", nn.Tanh()); is_parametrized(m, "weight")
    True
    """
    parametrization.train(module.training)
    if is_parametrized(module, tensor_name):
        if not unsafe:
            y = getattr(module, tensor_name)
            x = parametrization(y)
            _check_result(x, y.dtype, y.shape, "Registering a parametrization")
            if hasattr(parametrization, "right_inverse"):
                try:
                    z = parametrization.right_inverse(x)
                except NotImplementedError:
                    pass
                else:
                    if not isinstance(z, Tensor):
                        raise ValueError(f"parametrization.right_inverse must return a tensor. Got: {type(z).__name__}")
                    _check_result(z, y.dtype, y.shape, "The tensor returned by parametrization.right_inverse")
        plist = module.parametrizations[tensor_name]
        plist.append(parametrization)
        plist.unsafe |= unsafe
    elif tensor_name in module._buffers or tensor_name in module._parameters:
        original = getattr(module, tensor_name)
        plist = ParametrizationList([parametrization], original, unsafe=unsafe)
        delattr(module, tensor_name)
        if not is_parametrized(module):
            _inject_new_class(module)
            module.parametrizations = ModuleDict()
        module.parametrizations[tensor_name] = plist
        _inject_property(module, tensor_name)
    else:
        raise ValueError(f"Module '{module}' does not have a parameter, a buffer, or a parametrized element with "
                         f"name '{tensor_name}'")
    return module


def remove_parametrizations(module: M, tensor_name: str, leave_parametrized: bool = True) -> M:
    """Undo the parametrizations of ``tensor_name``: it becomes a plain parameter (or buffer) again,
    holding the current parametrized value (``leave_parametrized``) or the stored original."""
    if not is_parametrized(module, tensor_name):
        raise ValueError(f"Module {module} does not have a parametrization on {tensor_name}")
    plist = module.parametrizations[tensor_name]
    if plist.is_tensor:
        original = plist.original
        if leave_parametrized:
            with no_grad():
                t = getattr(module, tensor_name)
            _set(original, t)
    else:
        if not leave_parametrized:
            raise ValueError("Cannot leave unparametrized (`leave_parametrized=False`) a tensor that is "
                             "parametrized in terms of a sequence of tensors.")
        with no_grad():
            t = getattr(module, tensor_name).detach()
        requires_grad = plist.original0.requires_grad
        original = Parameter(t, requires_grad) if isinstance(plist.original0, Parameter) else t
    delattr(module.__class__, tensor_name)
    del module.parametrizations[tensor_name]
    _register_parameter_or_buffer(module, tensor_name, original)
    if not is_parametrized(module):
        delattr(module, "parametrizations")
        object.__setattr__(module, "__class__", module.__class__.__bases__[0])
    return module
