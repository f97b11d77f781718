"""Parameter and Buffer: tensors that a Module registers when they are assigned to it."""

from __future__ import annotations

from typing import Any

from .. import backend as B
from ..tensor import Tensor, _to_array, empty


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


def _storage(data: Any) -> B.ndarray:
    """The array a Parameter wraps: a Tensor's own storage (shared, as in PyTorch), else a copy."""
    if data is None:
        return B.xp.empty((0,), B.xp.float32)
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


def _rebuild_parameter(data: B.ndarray, requires_grad: bool) -> Parameter:
    return Parameter(Tensor._make(data), requires_grad)


class Buffer(Tensor):
    """Marks a tensor to be registered as a buffer when assigned to a module (``nn.Buffer``).

    >>> m.stats = nn.Buffer(lightgrad.zeros(3), persistent=False)
    """

    def __init__(self, data: Any = None, *, persistent: bool = True) -> None:
        _adopt(self, data, False)
        self.persistent = persistent


_UNINIT_SHAPE = ("Can't access the shape of an uninitialized parameter or buffer. This error usually happens in "
                 "`load_state_dict` when trying to load an uninitialized parameter into an initialized one. Call "
                 "`forward` to initialize the parameters before accessing their attributes.")


class _Uninitialized:
    """A placeholder with a dtype and no shape yet (lazy modules): ``materialize(shape)`` gives it
    storage and turns it into ``cls_to_become``, in place, so references to it stay valid."""

    cls_to_become: type = Tensor

    def materialize(self, shape: Any, device: Any = None, dtype: Any = None) -> None:
        """Give the placeholder (uninitialised) storage of ``shape``; it becomes a plain Parameter or Tensor."""
        t = empty(*tuple(shape), dtype=dtype if dtype is not None else self.dtype)  # type: ignore[attr-defined]
        _adopt(self, t, self.requires_grad)  # type: ignore[arg-type, attr-defined]
        self.__class__ = self.cls_to_become

    @property
    def shape(self) -> Any:
        raise RuntimeError(_UNINIT_SHAPE)

    def size(self, dim: Any = None) -> Any:
        raise RuntimeError(_UNINIT_SHAPE)

    def __repr__(self) -> str:
        return f"<{type(self).__name__}>"

    def __reduce_ex__(self, proto: Any) -> Any:
        return (type(self), (self.requires_grad,))  # type: ignore[attr-defined]


class UninitializedParameter(_Uninitialized, Parameter):
    """A Parameter whose shape a lazy module infers at its first forward.

    >>> p = nn.parameter.UninitializedParameter(); p.materialize((2, 3)); type(p).__name__
    'Parameter'
    """

    cls_to_become = Parameter

    def __init__(self, requires_grad: bool = True, device: Any = None, dtype: Any = None) -> None:
        _adopt(self, empty(0, dtype=dtype), requires_grad)


class UninitializedBuffer(_Uninitialized, Tensor):
    """A buffer whose shape a lazy module infers at its first forward (``running_mean`` ...)."""

    cls_to_become = Tensor

    def __init__(self, requires_grad: bool = False, device: Any = None, dtype: Any = None,
                 persistent: bool = True) -> None:
        _adopt(self, empty(0, dtype=dtype), requires_grad)


def is_lazy(param: Any) -> bool:
    """Whether ``param`` is an uninitialized placeholder of a lazy module."""
    return isinstance(param, _Uninitialized)


def _weight_and_bias(m: Any, weight_shape: tuple[int, ...], out: int, bias: bool, dtype: Any, device: Any) -> None:
    """Register a layer's weight and, if ``bias``, its bias of size ``out`` (uninitialised: the
    layer's reset_parameters fills them), or None in the bias's place."""
    m.weight = Parameter(empty(*weight_shape, dtype=dtype, device=device))
    m.register_parameter("bias", Parameter(empty(out, dtype=dtype, device=device)) if bias else None)


__all__ = ["Buffer", "Parameter", "UninitializedBuffer", "UninitializedParameter"]
