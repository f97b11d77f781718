"""Call a module with other parameter and buffer tensors in place of its own, as
``torch.nn.utils.stateless`` (deprecated there in favour of ``torch.func.functional_call``).

>>> lin = nn.Linear(2, 1); w = lightgrad.ones(1, 2, requires_grad=True)
>>> functional_call(lin, {"weight": w}, (lightgrad.ones(3, 2),)).shape
lightgrad.Size([3, 1])
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterator, Mapping
from typing import Any

from ...tensor import Tensor
from ..module import Module
from .parametrize import is_parametrized

__all__ = ["functional_call"]


def _tied_names(module: Module) -> dict[str, list[str]]:
    """Each parameter/buffer's first name -> every name it is registered under (tied weights)."""
    first: dict[int, str] = {}
    tied: dict[str, list[str]] = {}
    for name, t in list(module.named_parameters(remove_duplicate=False)) + \
            list(module.named_buffers(remove_duplicate=False)):
        key = first.setdefault(id(t), name)
        tied.setdefault(key, []).append(name)
    return tied


@contextlib.contextmanager
def _reparametrize(module: Module, tensors: Mapping[str, Tensor], tie_weights: bool = False,
                   strict: bool = False) -> Iterator[None]:
    """Swap ``tensors`` (by dotted name) into ``module``'s registries for the duration of the block."""
    names = dict(tensors)
    if tie_weights:
        for group in _tied_names(module).values():
            given = [n for n in group if n in names]
            if given:
                for n in given[1:]:
                    if names[n] is not names[given[0]]:
                        raise ValueError(f"functional_call got multiple values for keys {given}, which are tied. "
                                         "Consider using tie_weights=False")
                for n in group:
                    names.setdefault(n, names[given[0]])
    if strict:
        known = {n for n, _ in module.named_parameters(remove_duplicate=False)} | \
            {n for n, _ in module.named_buffers(remove_duplicate=False)}
        missing = sorted(known - set(names))
        unexpected = sorted(set(names) - known)
        if missing or unexpected:
            msg = f"Error(s) in reparametrizing for {type(module).__name__}:"
            if unexpected:
                msg += "\n\tUnexpected key(s): {}.".format(", ".join(map(repr, unexpected)))
            if missing:
                msg += "\n\tMissing key(s): {}.".format(", ".join(map(repr, missing)))
            raise RuntimeError(msg)
    # resolve every target before changing anything, so a bad name leaves the module untouched
    targets: list[tuple[Module, str, Tensor]] = []
    for name, t in names.items():
        path, _, attr = name.rpartition(".")
        targets.append((module.get_submodule(path), attr, t))
    saved: list[tuple[Module, str, str | None, Any]] = []
    try:
        for mod, attr, t in targets:
            for reg in ("_parameters", "_buffers"):
                registry = mod.__dict__[reg]
                if attr in registry:
                    saved.append((mod, attr, reg, registry[attr]))
                    registry[attr] = t  # a plain Tensor for this call only (as DistributedDataParallel)
                    break
            else:
                if isinstance(type(mod).__dict__.get(attr), property) and is_parametrized(mod, attr):
                    # a parametrized name reads t for this call (not assigned: that would run right_inverse);
                    # the property lives on the module's own injected class
                    saved.append((mod, attr, "_class", type(mod).__dict__[attr]))
                    setattr(type(mod), attr, property(_constant(t)))
                    continue
                saved.append((mod, attr, None, mod.__dict__.get(attr, _MISSING)))
                object.__setattr__(mod, attr, t)
        yield
    finally:
        for mod, attr, reg, old in reversed(saved):
            if reg == "_class":
                setattr(type(mod), attr, old)
            elif reg is not None:
                mod.__dict__[reg][attr] = old
            elif old is _MISSING:
                mod.__dict__.pop(attr, None)
            else:
                object.__setattr__(mod, attr, old)


_MISSING = object()


def _constant(t: Tensor) -> Any:
    def get(self: Module) -> Tensor:
        return t
    return get


def _functional_call(module: Module, tensors: Mapping[str, Tensor], args: Any = None,
                     kwargs: dict[str, Any] | None = None, *, tie_weights: bool = True,
                     strict: bool = False) -> Any:
    if kwargs is None:
        kwargs = {}
    if args is None:
        args = ()
    elif not isinstance(args, tuple):
        args = (args,)
    with _reparametrize(module, tensors, tie_weights=tie_weights, strict=strict):
        return module(*args, **kwargs)


def functional_call(module: Module, parameters_and_buffers: Mapping[str, Tensor], args: Any = None,
                    kwargs: dict[str, Any] | None = None, *, tie_weights: bool = True,
                    strict: bool = False) -> Any:
    """``module(*args, **kwargs)`` computed with ``parameters_and_buffers`` (dotted names) in place of
    the module's own tensors; differentiable with respect to the given tensors."""
    warnings.warn("This API is deprecated as of PyTorch 2.0 and will be removed in a future version of PyTorch. "
                  "Please use torch.func.functional_call instead which is a drop-in replacement.",
                  FutureWarning, stacklevel=2)
    return _functional_call(module, parameters_and_buffers, args, kwargs, tie_weights=tie_weights, strict=strict)
