"""Weight normalisation (the old hook API): ``weight = g * v / ||v||``, recomputed before every
forward from the parameters ``weight_g`` and ``weight_v``, as ``torch.nn.utils.weight_norm``.

>>> m = nn.utils.weight_norm(nn.Linear(4, 3)); sorted(n for n, _ in m.named_parameters())
['bias', 'weight_g', 'weight_v']
"""

from __future__ import annotations

import warnings
from typing import Any, TypeVar

from ...grad_mode import no_grad
from ...tensor import Tensor
from ..module import Module
from ..parameter import Parameter, is_lazy

__all__ = ["remove_weight_norm", "weight_norm"]

T = TypeVar("T", bound=Module)


# ---- forward pre-hooks -------------------------------------------------------------------------
# Module has no hook registry, so a module with reparametrised weights gets an instance-level
# ``forward`` that runs its hooks, then the class's forward. It is an object holding the module
# (not a closure), so that deepcopy and pickle carry it over to the copy.

class _HookedForward:
    def __init__(self, module: Module) -> None:
        self.module = module
        self.hooks: list[Any] = []

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        for hook in list(self.hooks):
            hook(self.module)
        return type(self.module).forward(self.module, *args, **kwargs)


def _hooks(module: Module) -> list[Any]:
    fwd = module.__dict__.get("forward")
    return fwd.hooks if isinstance(fwd, _HookedForward) else []


def _add_hook(module: Module, hook: Any) -> None:
    fwd = module.__dict__.get("forward")
    if not isinstance(fwd, _HookedForward):
        fwd = _HookedForward(module)
        object.__setattr__(module, "forward", fwd)
    fwd.hooks.append(hook)


def _remove_hook(module: Module, hook: Any) -> None:
    fwd = module.__dict__["forward"]
    fwd.hooks.remove(hook)
    if not fwd.hooks:
        del module.__dict__["forward"]


# ---- weight norm -------------------------------------------------------------------------------

def norm_except_dim(v: Tensor, pow: float = 2, dim: int = 0) -> Tensor:
    """The ``pow``-norm of ``v`` over every dim but ``dim`` (kept, size 1 elsewhere); dim -1: of all of v."""
    if dim == -1:
        return v.norm(pow)
    d = dim % v.ndim
    others = tuple(i for i in range(v.ndim) if i != d)
    return v.norm(pow, dim=others, keepdim=True) if others else v.abs()


class WeightNorm:
    """The hook that recomputes ``module.<name>`` from ``<name>_g`` and ``<name>_v``."""

    def __init__(self, name: str, dim: int) -> None:
        self.name, self.dim = name, dim

    def compute_weight(self, module: Module) -> Tensor:
        g, v = getattr(module, self.name + "_g"), getattr(module, self.name + "_v")
        return v * (g / norm_except_dim(v, 2, self.dim))

    def __call__(self, module: Module) -> None:
        setattr(module, self.name, self.compute_weight(module))

    def remove(self, module: Module) -> None:
        with no_grad():
            weight = self.compute_weight(module)
        delattr(module, self.name)
        del module._parameters[self.name + "_g"]
        del module._parameters[self.name + "_v"]
        setattr(module, self.name, Parameter(weight.detach()))


def weight_norm(module: T, name: str = "weight", dim: int | None = 0) -> T:
    """Reparametrise ``module.<name>`` as ``g * v / ||v||`` (norm over all dims but ``dim``; None: all).

    >>> nn.utils.weight_norm(nn.Linear(4, 3)).weight_g.shape
    lightgrad.Size([3, 1])
    """
    warnings.warn("`torch.nn.utils.weight_norm` is deprecated in favor of "
                  "`torch.nn.utils.parametrizations.weight_norm`.", FutureWarning, stacklevel=2)
    for hook in _hooks(module):
        if isinstance(hook, WeightNorm) and hook.name == name:
            raise RuntimeError(f"Cannot register two weight_norm hooks on the same parameter {name}")
    weight = getattr(module, name)
    if is_lazy(weight):
        raise ValueError("The module passed to `WeightNorm` can't have uninitialized parameters. Make sure to run "
                         "the dummy forward before applying weight normalization")
    if name not in module._parameters:
        raise KeyError(f"weight_norm: '{name}' is not a parameter of {type(module).__name__}")
    fn = WeightNorm(name, -1 if dim is None else dim)
    del module._parameters[name]
    with no_grad():
        g = norm_except_dim(weight, 2, fn.dim)
    module.register_parameter(name + "_g", Parameter(g.detach()))
    module.register_parameter(name + "_v", Parameter(weight.detach()))
    setattr(module, name, fn.compute_weight(module))
    _add_hook(module, fn)
    return module


def _remove(module: T, kind: type[Any], name: str, what: str) -> T:
    """Undo the ``kind`` reparametrization of ``module.<name>`` (weight_norm, spectral_norm)."""
    for hook in _hooks(module):
        if isinstance(hook, kind) and hook.name == name:
            hook.remove(module)
            _remove_hook(module, hook)
            return module
    raise ValueError(f"{what} of '{name}' not found in {module}")


def remove_weight_norm(module: T, name: str = "weight") -> T:
    """Undo ``weight_norm``: ``module.<name>`` is a plain Parameter (the current g * v / ||v||) again."""
    return _remove(module, WeightNorm, name, "weight_norm")
