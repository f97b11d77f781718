"""Normalization layers: BatchNorm1d/2d/3d, LayerNorm, GroupNorm, RMSNorm, InstanceNorm1d/2d/3d.

>>> bn = nn.BatchNorm1d(3); bn(lightgrad.randn(8, 3)).shape, bn.num_batches_tracked
(lightgrad.Size([8, 3]), tensor(1))
"""

from __future__ import annotations

import warnings
from typing import Any

from .. import backend as B
from .. import dtypes as D
from ..tensor import Tensor, empty, ones, tensor, zeros
from . import functional as F
from . import init
from .module import Module
from .parameter import Parameter


def _affine(m: Module, shape: Any, weight: bool, bias: bool, dtype: Any, device: Any) -> None:
    """Register a norm layer's scale (``weight``) and shift (``bias``), or None in their place."""
    m.register_parameter("weight", Parameter(empty(shape, dtype=dtype, device=device)) if weight else None)
    m.register_parameter("bias", Parameter(empty(shape, dtype=dtype, device=device)) if weight and bias else None)


def _reset_affine(m: Module) -> None:
    """Scale ones, shift zeros: every norm layer's initial affine map is the identity."""
    if m.weight is not None:
        init.ones_(m.weight)
    if getattr(m, "bias", None) is not None:
        init.zeros_(m.bias)


class _NormBase(Module):
    """Shared by the batch and instance norms: per-channel scale and shift, running statistics."""

    _dims: tuple[int, ...] = ()

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = True,
                 track_running_stats: bool = True, device: Any = None, dtype: Any = None, *,
                 bias: bool = True) -> None:
        super().__init__()
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        _affine(self, num_features, affine, bias, dtype, device)
        if track_running_stats:
            self.register_buffer("running_mean", zeros(num_features, dtype=dtype))
            self.register_buffer("running_var", ones(num_features, dtype=dtype))
            self.register_buffer("num_batches_tracked", tensor(0, dtype=D.int64))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)
        self.reset_parameters()

    def reset_running_stats(self) -> None:
        if self.track_running_stats:
            self.running_mean._data[...] = 0
            self.running_var._data[...] = 1
            self.num_batches_tracked._data[...] = 0

    def reset_parameters(self) -> None:
        self.reset_running_stats()
        _reset_affine(self)

    def extra_repr(self) -> str:
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
                f"bias={self.bias is not None}, track_running_stats={self.track_running_stats}")


class _BatchNorm(_NormBase):
    """Shared by BatchNorm1d/2d/3d: per-channel (dim 1) normalisation with running statistics."""

    def _check_input_dim(self, input: Tensor) -> None:
        if input.ndim not in self._dims:
            want = " or ".join(f"{d}D" for d in self._dims)
            raise ValueError(f"expected {want} input (got {input.ndim}D input)")

    def forward(self, input: Tensor) -> Tensor:
        self._check_input_dim(input)
        if input.ndim > 1 and input.shape[1] != self.num_features:
            raise RuntimeError(f"running_mean should contain {input.shape[1]} elements not {self.num_features}")
        if self.training and input.numel() // max(input.shape[1], 1) <= 1:
            raise ValueError(f"Expected more than 1 value per channel when training, got input size {input.shape}")
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            B.iadd(self.num_batches_tracked._data, 1)  # through the backend: lightgrad.compile records it
            self.num_batches_tracked._version[0] += 1
            if self.momentum is None:  # cumulative moving average (a value read: compile runs it eagerly)
                factor = 1.0 / self.num_batches_tracked.item()
        use_batch = self.training or (self.running_mean is None and self.running_var is None)
        track = not self.training or self.track_running_stats
        return F.batch_norm(input, self.running_mean if track else None, self.running_var if track else None,
                            self.weight, self.bias, use_batch, factor, self.eps)


class BatchNorm1d(_BatchNorm):
    """Batch normalisation of (N, C) or (N, C, L) input."""

    _dims = (2, 3)


class BatchNorm2d(_BatchNorm):
    """Batch normalisation of (N, C, H, W) input."""

    _dims = (4,)


class BatchNorm3d(_BatchNorm):
    """Batch normalisation of (N, C, D, H, W) input."""

    _dims = (5,)


class SyncBatchNorm(_BatchNorm):
    """BatchNorm over any (N, C, ...) input whose statistics would be synchronised across processes
    in distributed training; outside it (and on CPU, as PyTorch) it is plain batch normalisation.

    >>> nn.SyncBatchNorm(3)(lightgrad.randn(4, 3, 5)).shape
    lightgrad.Size([4, 3, 5])
    """

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = True,
                 track_running_stats: bool = True, process_group: Any = None, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype)
        self.process_group = process_group

    def _check_input_dim(self, input: Tensor) -> None:
        if input.ndim < 2:
            raise ValueError(f"expected at least 2D input (got {input.ndim}D input)")
        if input.shape[1] == 0:
            raise ValueError("SyncBatchNorm number of input channels should be non-zero")

    @classmethod
    def convert_sync_batchnorm(cls, module: Module, process_group: Any = None) -> Module:
        """``module`` with every BatchNorm*d replaced by a SyncBatchNorm sharing its parameters and buffers."""
        out = module
        if isinstance(module, _BatchNorm):
            out = cls(module.num_features, module.eps, module.momentum, module.affine, module.track_running_stats,
                      process_group)
            if module.affine:
                out.weight, out.bias = module.weight, module.bias
            out.running_mean, out.running_var = module.running_mean, module.running_var
            out.num_batches_tracked = module.num_batches_tracked
            out.training = module.training
            if hasattr(module, "qconfig"):
                out.qconfig = module.qconfig
        for name, child in module.named_children():
            out.add_module(name, cls.convert_sync_batchnorm(child, process_group))
        return out


def _as_shape(normalized_shape: Any) -> tuple[int, ...]:
    return (int(normalized_shape),) if isinstance(normalized_shape, int) else tuple(int(s) for s in normalized_shape)


class LayerNorm(Module):
    """Normalise over the trailing ``normalized_shape`` dims; weight ones, bias zeros."""

    def __init__(self, normalized_shape: Any, eps: float = 1e-5, elementwise_affine: bool = True, bias: bool = True,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        self.normalized_shape = _as_shape(normalized_shape)
        self.eps, self.elementwise_affine = eps, elementwise_affine
        _affine(self, self.normalized_shape, elementwise_affine, bias, dtype, device)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Set the weight to ones and the bias to zeros."""
        _reset_affine(self)

    def forward(self, input: Tensor) -> Tensor:
        """Normalize over the trailing ``normalized_shape`` dims, then scale and shift elementwise."""
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        """The constructor options the module's repr shows."""
        return (f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}, "
                f"bias={self.bias is not None}")


class RMSNorm(Module):
    """x / sqrt(mean(x^2) + eps) over the trailing dims, times a weight of ones."""

    def __init__(self, normalized_shape: Any, eps: float | None = None, elementwise_affine: bool = True,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        self.normalized_shape = _as_shape(normalized_shape)
        self.eps, self.elementwise_affine = eps, elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(empty(self.normalized_shape, dtype=dtype, device=device))
        else:
            self.register_parameter("weight", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Set the weight to ones."""
        if self.weight is not None:
            init.ones_(self.weight)

    def forward(self, input: Tensor) -> Tensor:
        """Divide by the root mean square over the trailing ``normalized_shape`` dims, then scale."""
        return F.rms_norm(input, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self) -> str:
        """The constructor options the module's repr shows."""
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"


class GroupNorm(Module):
    """Normalise groups of channels per sample: ``nn.GroupNorm(num_groups, num_channels)``."""

    def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5, affine: bool = True,
                 device: Any = None, dtype: Any = None, *, bias: bool = True) -> None:
        super().__init__()
        if num_channels % num_groups != 0:
            raise ValueError(f"num_channels ({num_channels}) must be divisible by num_groups ({num_groups})")
        self.num_groups, self.num_channels, self.eps, self.affine = num_groups, num_channels, eps, affine
        _affine(self, num_channels, affine, bias, dtype, device)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Set the weight to ones and the bias to zeros."""
        _reset_affine(self)

    def forward(self, input: Tensor) -> Tensor:
        """Normalize each group of channels, then scale and shift per channel."""
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        """The constructor options the module's repr shows."""
        return f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, bias={self.bias is not None}"


class _InstanceNorm(_NormBase):
    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = False,
                 track_running_stats: bool = False, device: Any = None, dtype: Any = None) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype)

    def forward(self, input: Tensor) -> Tensor:
        if input.ndim not in self._dims:
            want = " or ".join(f"{d}D" for d in self._dims)
            raise ValueError(f"expected {want} input (got {input.ndim}D input)")
        unbatched = input.ndim == self._dims[0]
        c = input.shape[1 - unbatched]
        if c != self.num_features and self.affine:
            raise ValueError(f"expected input's size at dim={1 - unbatched} to match num_features "
                             f"({self.num_features}), but got: {c}.")
        if c != self.num_features:
            warnings.warn(f"input's size at dim={1 - unbatched} does not match num_features. You can silence this "
                          "warning by not passing in num_features, which is not used because affine=False",
                          stacklevel=2)
        x = input.unsqueeze(0) if unbatched else input
        out = F.instance_norm(x, self.running_mean, self.running_var, self.weight, self.bias,
                              self.training or not self.track_running_stats,
                              self.momentum if self.momentum is not None else 0.0, self.eps)
        return out.squeeze(0) if unbatched else out


class InstanceNorm1d(_InstanceNorm):
    """Normalise each channel of each sample of (N, C, L) or (C, L) input."""

    _dims = (2, 3)


class InstanceNorm2d(_InstanceNorm):
    """Normalise each channel of each sample of (N, C, H, W) or (C, H, W) input."""

    _dims = (3, 4)


class InstanceNorm3d(_InstanceNorm):
    """Normalise each channel of each sample of (N, C, D, H, W) or (C, D, H, W) input.

    >>> nn.InstanceNorm3d(2)(lightgrad.randn(1, 2, 3, 4, 4)).shape
    lightgrad.Size([1, 2, 3, 4, 4])
    """

    _dims = (4, 5)


class LocalResponseNorm(Module):
    """Divide each channel by (k + alpha * mean of x^2 over ``size`` neighbouring channels)^beta.

    >>> nn.LocalResponseNorm(2)(lightgrad.randn(1, 4, 3, 3)).shape
    lightgrad.Size([1, 4, 3, 3])
    """

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0) -> None:
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input: Tensor) -> Tensor:
        """Divide each value by a power of the sum of squares over ``size`` neighbouring channels."""
        return F.local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self) -> str:
        """The constructor options the module's repr shows."""
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"


__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "GroupNorm", "InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d",
           "LayerNorm", "LocalResponseNorm", "RMSNorm", "SyncBatchNorm"]
