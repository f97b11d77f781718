"""``torch.func``'s ``functional_call``: a module as a function of its parameters and buffers.

>>> lin = nn.Linear(2, 1); params = {k: v.detach().requires_grad_() for k, v in lin.named_parameters()}
>>> lightgrad.func.functional_call(lin, params, (lightgrad.ones(3, 2),)).shape
lightgrad.Size([3, 1])

The transforms of ``torch.func`` (grad, vmap, jacrev, ...) are not here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .nn.module import Module
from .nn.utils.stateless import _functional_call
from .tensor import Tensor

__all__ = ["functional_call"]


def functional_call(module: Module, parameter_and_buffer_dicts: Mapping[str, Tensor] | Sequence[Mapping[str, Tensor]],
                    args: Any = None, kwargs: dict[str, Any] | None = None, *, tie_weights: bool = True,
                    strict: bool = False) -> Any:
    """``module(*args, **kwargs)`` with the given tensors (one dict, or several with distinct keys) in
    place of the module's parameters and buffers; gradients flow to those tensors.

    >>> functional_call(nn.Linear(2, 1), {}, lightgrad.ones(1, 2)).shape
    lightgrad.Size([1, 1])
    """
    if isinstance(parameter_and_buffer_dicts, Mapping):
        merged = dict(parameter_and_buffer_dicts)
    elif isinstance(parameter_and_buffer_dicts, Sequence):
        if not all(isinstance(d, Mapping) for d in parameter_and_buffer_dicts):
            raise ValueError("Expected all elements of parameter_and_buffer_dicts to be dictionaries")
        seen: dict[str, int] = {}
        for d in parameter_and_buffer_dicts:
            for k in d:
                seen[k] = seen.get(k, 0) + 1
        repeated = [k for k, n in seen.items() if n > 1]
        if repeated:
            raise ValueError(f"{repeated} appeared in multiple dictionaries; behavior of functional call is ambiguous")
        merged = {k: v for d in parameter_and_buffer_dicts for k, v in d.items()}
    else:
        raise ValueError(f"Expected parameter_and_buffer_dicts to be a dict, or a list/tuple of dicts, "
                         f"but got {type(parameter_and_buffer_dicts)}")
    return _functional_call(module, merged, args, kwargs, tie_weights=tie_weights, strict=strict)
