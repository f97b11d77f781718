"""Parameter and Buffer: tensors that a Module registers when they are assigned to it."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..tensor import Tensor, _to_array


def _adopt(self: Tensor, data: Any, requires_grad: bool) -> None:
    """Initialise ``self`` as a tensor over ``data``'s storage: every field the core defines is
    filled by ``Tensor._make``, then storage-bound state (version counter, arena token) is shared
    with ``data`` when it is a Tensor, as PyTorch's Parameter shares storage with what it wraps."""
    base = Tensor._make(_storage(data))
    for slot in Tensor.__slots__:
        if slot not in ("__weakref__", "__dict__") and hasattr(base, slot):
            object.__setattr__(self, slot, getattr(base, slot))
    if isinstance(data, Tensor):
        self._version = data._version
        if hasattr(data, "_mem"):
            self._mem = data._mem
    self.requires_grad = bool(requires_grad)


def _storage(data: Any) -> np.ndarray:
    """The array a Parameter wraps: a Tensor's own storage (shared, as in PyTorch), else a copy."""
    if data is None:
        return np.empty((0,), np.float32)
    if isinstance(data, Tensor):
        return data._data
    return _to_array(data, None)


class Parameter(Tensor):
    """A Tensor that is a module parameter: ``Parameter(lightgrad.zeros(3))`` requires grad and
    shares storage with the tensor it wraps.

    >>> p = nn.Parameter(lightgrad.ones(2)); p.requires_grad
    True
    """

    def __init__(self, data: Any = None, requires_grad: bool = True) -> None:
        arr = _storage(data)
        if requires_grad and arr.dtype.kind != "f":
            raise RuntimeError(f"Only Tensors of floating point dtype can require gradients, got "
                               f"{Tensor._make(arr).dtype}")
        _adopt(self, data, requires_grad)

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()

    def __reduce_ex__(self, proto: Any) -> Any:
        return (_rebuild_parameter, (self._data, self.requires_grad))

    def __deepcopy__(self, memo: dict[int, Any]) -> Parameter:
        if id(self) in memo:
            return memo[id(self)]
        t = Parameter(Tensor._make(self._data.copy()), self.requires_grad)
        if self.grad is not None:
            t.grad = Tensor._make(self.grad._data.copy())
        # an optimizer's flat-buffer slot belongs to the original, never to a copy
        for k, v in self.__dict__.items():
            if k != "_grad_buf":
                setattr(t, k, v)
        memo[id(self)] = t
        return t


def _rebuild_parameter(data: np.ndarray, requires_grad: bool) -> Parameter:
    return Parameter(Tensor._make(data), requires_grad)


class Buffer(Tensor):
    """Marks a tensor to be registered as a buffer when assigned to a module (``nn.Buffer``).

    >>> m.stats = nn.Buffer(lightgrad.zeros(3), persistent=False)
    """

    def __init__(self, data: Any = None, *, persistent: bool = True) -> None:
        _adopt(self, data, False)
        self.persistent = persistent


def is_lazy(param: Any) -> bool:
    """Lazy (uninitialized) parameters do not exist here: always False."""
    return False


def _weight_and_bias(m: Any, weight_shape: tuple[int, ...], out: int, bias: bool, dtype: Any, device: Any) -> None:
    """Register a layer's weight and, if ``bias``, its bias of size ``out`` (uninitialised: the
    layer's reset_parameters fills them), or None in the bias's place."""
    from ..tensor import empty
    m.weight = Parameter(empty(*weight_shape, dtype=dtype, device=device))
    m.register_parameter("bias", Parameter(empty(out, dtype=dtype, device=device)) if bias else None)


__all__ = ["Buffer", "Parameter"]
