"""Lazy layers, as ``torch.nn``: the input size is left out of the constructor and read from the
first input, whose forward materialises the parameters and turns the module into the plain
layer (``cls_to_become``: a LazyLinear becomes a Linear).

>>> m = nn.LazyLinear(3); m(lightgrad.randn(2, 5)).shape, type(m).__name__, m.weight.shape
(lightgrad.Size([2, 3]), 'Linear', lightgrad.Size([3, 5]))
"""

from __future__ import annotations

from typing import Any

from .. import dtypes as D
from ..grad_mode import no_grad
from ..tensor import Tensor, tensor
from .conv import Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from .linear import Linear
from .norm import BatchNorm1d, BatchNorm2d, BatchNorm3d, InstanceNorm1d, InstanceNorm2d, InstanceNorm3d
from .parameter import UninitializedBuffer, UninitializedParameter, is_lazy

__all__ = [
    "LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d", "LazyConv1d", "LazyConv2d", "LazyConv3d",
    "LazyConvTranspose1d", "LazyConvTranspose2d", "LazyConvTranspose3d", "LazyInstanceNorm1d",
    "LazyInstanceNorm2d", "LazyInstanceNorm3d", "LazyLinear", "LazyModuleMixin",
]


class LazyModuleMixin:
    """Runs ``initialize_parameters`` on the first call (before the layer's own forward; bad input
    raises before anything is materialised), then becomes ``cls_to_become``."""

    cls_to_become: type | None = None

    def has_uninitialized_params(self) -> bool:
        """Whether any parameter or buffer is still an uninitialized placeholder."""
        own = list(self._parameters.values()) + list(self._buffers.values())  # type: ignore[attr-defined]
        return any(is_lazy(t) for t in own)

    def initialize_parameters(self, *args: Any, **kwargs: Any) -> None:
        """Override: infer the shapes from the first input and materialize the parameters."""
        raise NotImplementedError(f"{type(self).__name__} must implement initialize_parameters")

    def _save_to_state_dict(self, destination: dict[str, Any], prefix: str, keep_vars: bool) -> None:
        # placeholders are saved as themselves, not detached into empty tensors (as PyTorch's): a
        # lazy module's state dict loaded into another lazy module leaves it uninitialised
        for name, t in self._state_items():  # type: ignore[attr-defined]
            destination[prefix + name] = t if keep_vars or is_lazy(t) else t.detach()

    def _lazy_load_hook(self, state_dict: Any, prefix: str) -> None:
        """Before ``load_state_dict`` checks shapes and copies: each placeholder that the state dict
        holds a (materialised) value for takes that value's shape, as PyTorch's load pre-hook does;
        the first forward then keeps the loaded values."""
        for name, t in self._state_items():  # type: ignore[attr-defined]
            value = state_dict.get(prefix + name)
            if not is_lazy(t) or value is None or is_lazy(value) or not hasattr(value, "shape"):
                continue
            # (an empty 1-D value is a placeholder that went through save and load: left as it is)
            if tuple(value.shape) != (0,):
                with no_grad():
                    t.materialize(tuple(value.shape))

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        """On the first call: materialize the parameters, become the regular layer, run its forward."""
        with no_grad():
            self.initialize_parameters(*args, **kwargs)
        if self.has_uninitialized_params():
            raise RuntimeError(f"module {type(self).__name__} has not been fully initialized")
        if self.cls_to_become is not None:
            self.__class__ = self.cls_to_become
        return self.forward(*args, **kwargs)  # the materialised layer's own forward


# ---- linear ------------------------------------------------------------------------------------

class LazyLinear(LazyModuleMixin, Linear):
    """A Linear whose ``in_features`` is the last size of its first input.

    >>> nn.LazyLinear(4)(lightgrad.randn(3, 7)).shape
    lightgrad.Size([3, 4])
    """

    cls_to_become = Linear

    def __init__(self, out_features: int, bias: bool = True, device: Any = None, dtype: Any = None) -> None:
        super().__init__(0, 0, False, device, dtype)
        self.weight = UninitializedParameter(dtype=dtype)
        self.out_features = out_features
        if bias:
            self.bias = UninitializedParameter(dtype=dtype)

    def reset_parameters(self) -> None:
        """Initialize as Linear does, once the parameters have shapes."""
        if not self.has_uninitialized_params() and self.in_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input: Tensor) -> None:
        """Take ``in_features`` from the input's last dim and materialize weight and bias."""
        if self.has_uninitialized_params():
            self.in_features = input.shape[-1]
            self.weight.materialize((self.out_features, self.in_features))
            if self.bias is not None:
                self.bias.materialize((self.out_features,))
            self.reset_parameters()
        if self.in_features == 0:  # materialised by load_state_dict: the loaded weight says it
            if input.shape[-1] != self.weight.shape[-1]:
                raise AssertionError(f"The in_features inferred from input: {input.shape[-1]} is not equal to "
                                     f"in_features from self.weight: {self.weight.shape[-1]}")
            self.in_features = input.shape[-1]


# ---- convolution -------------------------------------------------------------------------------

class _LazyConvBase(LazyModuleMixin):
    in_channels: int
    out_channels: int
    groups: int
    kernel_size: tuple[int, ...]
    transposed: bool
    _nd: int
    weight: Any
    bias: Any

    def _lazy_setup(self, out_channels: int, bias: bool, dtype: Any) -> None:
        self.weight = UninitializedParameter(dtype=dtype)
        self.out_channels = out_channels
        if bias:
            self.bias = UninitializedParameter(dtype=dtype)

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.in_channels != 0:
            super().reset_parameters()  # type: ignore[misc]

    def initialize_parameters(self, input: Tensor, *args: Any, **kwargs: Any) -> None:
        if not self.has_uninitialized_params():
            if self.in_channels == 0:  # materialised by load_state_dict: the loaded weight says it
                w = self.weight.shape
                self.in_channels = w[0] if self.transposed else w[1] * self.groups
            return
        nd = self._nd
        if input.ndim not in (nd + 1, nd + 2):
            raise RuntimeError(f"Expected {nd + 1}D (unbatched) or {nd + 2}D (batched) input to "
                               f"{type(self).__name__}, but got input of size: {list(input.shape)}")
        cin = input.shape[1] if input.ndim == nd + 2 else input.shape[0]
        if cin % self.groups:
            raise ValueError("in_channels must be divisible by groups")
        self.in_channels = cin
        shape = (cin, self.out_channels // self.groups) if self.transposed else (self.out_channels, cin // self.groups)
        self.weight.materialize(shape + tuple(self.kernel_size))
        if self.bias is not None:
            self.bias.materialize((self.out_channels,))
        self.reset_parameters()


class _LazyConv(_LazyConvBase):
    """The convolution's arguments less in_channels."""

    def __init__(self, out_channels: int, kernel_size: Any, stride: Any = 1, padding: Any = 0, dilation: Any = 1,
                 groups: int = 1, bias: bool = True, padding_mode: str = "zeros", device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__(0, 0, kernel_size, stride, padding, dilation, groups, False,  # type: ignore[call-arg]
                         padding_mode, device, dtype)
        self._lazy_setup(out_channels, bias, dtype)


class _LazyConvTranspose(_LazyConvBase):
    """The transposed convolution's arguments less in_channels."""

    def __init__(self, out_channels: int, kernel_size: Any, stride: Any = 1, padding: Any = 0,
                 output_padding: Any = 0, groups: int = 1, bias: bool = True, dilation: Any = 1,
                 padding_mode: str = "zeros", device: Any = None, dtype: Any = None) -> None:
        super().__init__(0, 0, kernel_size, stride, padding, output_padding, groups,  # type: ignore[call-arg]
                         False, dilation, padding_mode, device, dtype)
        self._lazy_setup(out_channels, bias, dtype)


class LazyConv1d(_LazyConv, Conv1d):
    """A Conv1d whose ``in_channels`` is read from its first input."""

    cls_to_become = Conv1d


class LazyConv2d(_LazyConv, Conv2d):
    """A Conv2d whose ``in_channels`` is read from its first input.

    >>> nn.LazyConv2d(8, 3)(lightgrad.randn(1, 3, 6, 6)).shape
    lightgrad.Size([1, 8, 4, 4])
    """

    cls_to_become = Conv2d


class LazyConv3d(_LazyConv, Conv3d):
    """A Conv3d whose ``in_channels`` is read from its first input."""

    cls_to_become = Conv3d


class LazyConvTranspose1d(_LazyConvTranspose, ConvTranspose1d):
    """A ConvTranspose1d whose ``in_channels`` is read from its first input."""

    cls_to_become = ConvTranspose1d


class LazyConvTranspose2d(_LazyConvTranspose, ConvTranspose2d):
    """A ConvTranspose2d whose ``in_channels`` is read from its first input."""

    cls_to_become = ConvTranspose2d


class LazyConvTranspose3d(_LazyConvTranspose, ConvTranspose3d):
    """A ConvTranspose3d whose ``in_channels`` is read from its first input."""

    cls_to_become = ConvTranspose3d


# ---- normalisation -----------------------------------------------------------------------------

class _LazyNorm(LazyModuleMixin):
    """The norm layer's arguments less num_features (defaults: affine, tracking running stats, as
    PyTorch's lazy norms, instance norms included)."""

    _instance = False  # InstanceNorm's constructor takes no ``bias``; its unbatched input has channels first
    num_features: int
    affine: bool
    track_running_stats: bool
    weight: Any
    bias: Any
    running_mean: Any
    running_var: Any

    def __init__(self, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = True,
                 track_running_stats: bool = True, device: Any = None, dtype: Any = None, *,
                 bias: bool = True) -> None:
        extra = {} if self._instance else {"bias": False}
        # no affine map or running stats yet: the placeholders below take their place
        super().__init__(0, eps, momentum, False, False, device, dtype, **extra)  # type: ignore[call-arg]
        self.affine, self.track_running_stats = affine, track_running_stats
        reg = self.register_buffer  # type: ignore[attr-defined]
        if affine:
            self.weight = UninitializedParameter(dtype=dtype)
            if bias:
                self.bias = UninitializedParameter(dtype=dtype)
        if track_running_stats:
            reg("running_mean", UninitializedBuffer(dtype=dtype))
            reg("running_var", UninitializedBuffer(dtype=dtype))
            reg("num_batches_tracked", tensor(0, dtype=D.int64))

    def reset_running_stats(self) -> None:
        if not self.has_uninitialized_params():
            super().reset_running_stats()  # type: ignore[misc]

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.num_features != 0:
            super().reset_parameters()  # type: ignore[misc]

    def initialize_parameters(self, input: Tensor) -> None:
        if not self.has_uninitialized_params():
            if self.num_features == 0:  # materialised by load_state_dict: the loaded state says it
                t = self.weight if self.affine else self.running_mean if self.track_running_stats else None
                if t is not None:
                    self.num_features = t.shape[0]
            return
        dims: tuple[int, ...] = self._dims  # type: ignore[attr-defined]
        if input.ndim not in dims:
            want = " or ".join(f"{d}D" for d in dims)
            raise ValueError(f"expected {want} input (got {input.ndim}D input)")
        # (PyTorch reads dim 1 of an unbatched instance-norm input too, then fails its own check)
        c = input.shape[0] if self._instance and input.ndim == dims[0] else input.shape[1]
        self.num_features = c
        if self.affine:
            self.weight.materialize((c,))
            if self.bias is not None:
                self.bias.materialize((c,))
        if self.track_running_stats:
            self.running_mean.materialize((c,))
            self.running_var.materialize((c,))
        self.reset_parameters()


class LazyBatchNorm1d(_LazyNorm, BatchNorm1d):
    """A BatchNorm1d whose ``num_features`` is read from its first input.

    >>> bn = nn.LazyBatchNorm1d(); bn(lightgrad.randn(4, 6)).shape, bn.running_mean.shape
    (lightgrad.Size([4, 6]), lightgrad.Size([6]))
    """

    cls_to_become = BatchNorm1d


class LazyBatchNorm2d(_LazyNorm, BatchNorm2d):
    """A BatchNorm2d whose ``num_features`` is read from its first input."""

    cls_to_become = BatchNorm2d


class LazyBatchNorm3d(_LazyNorm, BatchNorm3d):
    """A BatchNorm3d whose ``num_features`` is read from its first input."""

    cls_to_become = BatchNorm3d


class LazyInstanceNorm1d(_LazyNorm, InstanceNorm1d):
    """An InstanceNorm1d whose ``num_features`` is read from its first input."""

    cls_to_become = InstanceNorm1d
    _instance = True


class LazyInstanceNorm2d(_LazyNorm, InstanceNorm2d):
    """An InstanceNorm2d whose ``num_features`` is read from its first input."""

    cls_to_become = InstanceNorm2d
    _instance = True


class LazyInstanceNorm3d(_LazyNorm, InstanceNorm3d):
    """An InstanceNorm3d whose ``num_features`` is read from its first input."""

    cls_to_become = InstanceNorm3d
    _instance = True
