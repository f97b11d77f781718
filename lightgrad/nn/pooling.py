"""Pooling and upsampling layers, as ``torch.nn``: thin wrappers over ``nn.functional``.

>>> nn.MaxPool2d(2)(lightgrad.randn(1, 3, 8, 8)).shape
lightgrad.Size([1, 3, 4, 4])
"""

from __future__ import annotations

from typing import Any

from ..tensor import Tensor
from . import functional as F
from .module import Module

__all__ = [
    "MaxPool1d", "MaxPool2d", "MaxPool3d", "MaxUnpool1d", "MaxUnpool2d", "MaxUnpool3d", "AvgPool1d", "AvgPool2d",
    "AvgPool3d", "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveAvgPool3d", "AdaptiveMaxPool1d",
    "AdaptiveMaxPool2d", "AdaptiveMaxPool3d", "LPPool1d", "LPPool2d", "LPPool3d", "FractionalMaxPool2d",
    "FractionalMaxPool3d", "Upsample", "UpsamplingNearest2d", "UpsamplingBilinear2d",
]


def _single(v: Any) -> tuple[int, ...]:
    return tuple(v) if isinstance(v, tuple | list) else (v,)


# ---- max pooling -------------------------------------------------------------------------------

class _MaxPoolNd(Module):
    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0, dilation: Any = 1,
                 return_indices: bool = False, ceil_mode: bool = False) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding, self.dilation = padding, dilation
        self.return_indices, self.ceil_mode = return_indices, ceil_mode

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
                f"dilation={self.dilation}, ceil_mode={self.ceil_mode}")


class MaxPool1d(_MaxPoolNd):
    """1-D max pooling over (N, C, L).

    >>> nn.MaxPool1d(2)(lightgrad.randn(1, 2, 8)).shape
    lightgrad.Size([1, 2, 4])
    """

    def forward(self, input: Tensor) -> Any:
        """The maximum of each window (with the flat indices when ``return_indices``)."""
        return F.max_pool1d(input, self.kernel_size, self.stride, self.padding, self.dilation,
                            ceil_mode=self.ceil_mode, return_indices=self.return_indices)


class MaxPool2d(_MaxPoolNd):
    """2-D max pooling over (N, C, H, W); the gradient goes to the first maximum of each window.

    >>> nn.MaxPool2d(3, stride=2, padding=1)(lightgrad.randn(1, 2, 8, 8)).shape
    lightgrad.Size([1, 2, 4, 4])
    """

    def forward(self, input: Tensor) -> Any:
        """The maximum of each window (with the flat indices when ``return_indices``)."""
        return F.max_pool2d(input, self.kernel_size, self.stride, self.padding, self.dilation,
                            ceil_mode=self.ceil_mode, return_indices=self.return_indices)


class MaxPool3d(_MaxPoolNd):
    """3-D max pooling over (N, C, D, H, W).

    >>> nn.MaxPool3d(2)(lightgrad.randn(1, 2, 4, 4, 4)).shape
    lightgrad.Size([1, 2, 2, 2, 2])
    """

    def forward(self, input: Tensor) -> Any:
        """The maximum of each window (with the flat indices when ``return_indices``)."""
        return F.max_pool3d(input, self.kernel_size, self.stride, self.padding, self.dilation,
                            ceil_mode=self.ceil_mode, return_indices=self.return_indices)


# ---- max unpooling -----------------------------------------------------------------------------

class _MaxUnpoolNd(Module):
    nd = 1

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0) -> None:
        super().__init__()
        def tup(v: Any) -> tuple[int, ...]:
            return tuple(v) if isinstance(v, tuple | list) else (v,) * self.nd
        self.kernel_size = tup(kernel_size)
        self.stride = tup(stride if stride is not None else kernel_size)
        self.padding = tup(padding)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxUnpool1d(_MaxUnpoolNd):
    """Partial inverse of MaxPool1d: values back at the pooled ``indices``, zeros elsewhere.

    >>> y, i = nn.MaxPool1d(2, return_indices=True)(lightgrad.randn(1, 1, 4)); nn.MaxUnpool1d(2)(y, i).shape
    lightgrad.Size([1, 1, 4])
    """
    nd = 1

    def forward(self, input: Tensor, indices: Tensor, output_size: Any = None) -> Tensor:
        """Put each value at its max-pool index in zeros of the pre-pooling size (or ``output_size``)."""
        return F.max_unpool1d(input, indices, self.kernel_size, self.stride, self.padding, output_size)


class MaxUnpool2d(_MaxUnpoolNd):
    """Partial inverse of MaxPool2d: values back at the pooled flat H*W ``indices``, zeros elsewhere.

    >>> y, i = nn.MaxPool2d(2, return_indices=True)(lightgrad.randn(1, 1, 4, 4)); nn.MaxUnpool2d(2)(y, i).shape
    lightgrad.Size([1, 1, 4, 4])
    """
    nd = 2

    def forward(self, input: Tensor, indices: Tensor, output_size: Any = None) -> Tensor:
        """Put each value at its max-pool index in zeros of the pre-pooling size (or ``output_size``)."""
        return F.max_unpool2d(input, indices, self.kernel_size, self.stride, self.padding, output_size)


class MaxUnpool3d(_MaxUnpoolNd):
    """Partial inverse of MaxPool3d."""
    nd = 3

    def forward(self, input: Tensor, indices: Tensor, output_size: Any = None) -> Tensor:
        """Put each value at its max-pool index in zeros of the pre-pooling size (or ``output_size``)."""
        return F.max_unpool3d(input, indices, self.kernel_size, self.stride, self.padding, output_size)


# ---- average pooling ---------------------------------------------------------------------------

class AvgPool1d(Module):
    """1-D average pooling over (N, C, L).

    >>> nn.AvgPool1d(2)(lightgrad.ones(1, 1, 4))
    tensor([[[1., 1.]]])
    """

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0, ceil_mode: bool = False,
                 count_include_pad: bool = True) -> None:
        super().__init__()
        self.kernel_size = _single(kernel_size)  # PyTorch keeps 1-tuples here (unlike AvgPool2d)
        self.stride = _single(stride if stride is not None else kernel_size)
        self.padding, self.ceil_mode, self.count_include_pad = _single(padding), ceil_mode, count_include_pad

    def forward(self, input: Tensor) -> Tensor:
        """The mean of each window."""
        return F.avg_pool1d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad)

    def extra_repr(self) -> str:
        """The constructor options the module's repr shows."""
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class _AvgPoolNd(Module):
    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0, ceil_mode: bool = False,
                 count_include_pad: bool = True, divisor_override: int | None = None) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding, self.ceil_mode, self.count_include_pad = padding, ceil_mode, count_include_pad
        self.divisor_override = divisor_override

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool2d(_AvgPoolNd):
    """2-D average pooling over (N, C, H, W).

    >>> nn.AvgPool2d(2)(lightgrad.randn(1, 3, 8, 8)).shape
    lightgrad.Size([1, 3, 4, 4])
    """

    def forward(self, input: Tensor) -> Tensor:
        """The mean of each window."""
        return F.avg_pool2d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad, self.divisor_override)


class AvgPool3d(_AvgPoolNd):
    """3-D average pooling over (N, C, D, H, W).

    >>> nn.AvgPool3d(2)(lightgrad.randn(1, 2, 4, 4, 4)).shape
    lightgrad.Size([1, 2, 2, 2, 2])
    """

    def forward(self, input: Tensor) -> Tensor:
        """The mean of each window."""
        return F.avg_pool3d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad, self.divisor_override)


# ---- adaptive pooling --------------------------------------------------------------------------

class _AdaptiveNd(Module):
    def __init__(self, output_size: Any) -> None:
        super().__init__()
        self.output_size = output_size

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveAvgPool1d(_AdaptiveNd):
    """Average over adaptive windows to a fixed length.

    >>> nn.AdaptiveAvgPool1d(3)(lightgrad.randn(1, 2, 10)).shape
    lightgrad.Size([1, 2, 3])
    """

    def forward(self, input: Tensor) -> Tensor:
        """Mean-pool to ``output_size`` with windows spread evenly over the input."""
        return F.adaptive_avg_pool1d(input, self.output_size)


class AdaptiveAvgPool2d(_AdaptiveNd):
    """Average over adaptive windows to a fixed (H, W); ``AdaptiveAvgPool2d(1)`` is global pooling.

    >>> nn.AdaptiveAvgPool2d((1, 1))(lightgrad.randn(2, 8, 5, 7)).shape
    lightgrad.Size([2, 8, 1, 1])
    """

    def forward(self, input: Tensor) -> Tensor:
        """Mean-pool to ``output_size`` with windows spread evenly over the input."""
        return F.adaptive_avg_pool2d(input, self.output_size)


class AdaptiveAvgPool3d(_AdaptiveNd):
    """Average over adaptive windows to a fixed (D, H, W).

    >>> nn.AdaptiveAvgPool3d(1)(lightgrad.randn(1, 2, 3, 4, 5)).shape
    lightgrad.Size([1, 2, 1, 1, 1])
    """

    def forward(self, input: Tensor) -> Tensor:
        """Mean-pool to ``output_size`` with windows spread evenly over the input."""
        return F.adaptive_avg_pool3d(input, self.output_size)


class AdaptiveMaxPool1d(_AdaptiveNd):
    """Max over adaptive windows to a fixed length.

    >>> nn.AdaptiveMaxPool1d(3)(lightgrad.randn(1, 2, 10)).shape
    lightgrad.Size([1, 2, 3])
    """

    def __init__(self, output_size: Any, return_indices: bool = False) -> None:
        super().__init__(output_size)
        self.return_indices = return_indices

    def forward(self, input: Tensor) -> Any:
        """Max-pool to ``output_size``, windows spread evenly (indices if ``return_indices``)."""
        return F.adaptive_max_pool1d(input, self.output_size, self.return_indices)


class AdaptiveMaxPool2d(_AdaptiveNd):
    """Max over adaptive windows to a fixed (H, W).

    >>> nn.AdaptiveMaxPool2d(2)(lightgrad.randn(1, 2, 5, 7)).shape
    lightgrad.Size([1, 2, 2, 2])
    """

    def __init__(self, output_size: Any, return_indices: bool = False) -> None:
        super().__init__(output_size)
        self.return_indices = return_indices

    def forward(self, input: Tensor) -> Any:
        """Max-pool to ``output_size``, windows spread evenly (indices if ``return_indices``)."""
        return F.adaptive_max_pool2d(input, self.output_size, self.return_indices)


class AdaptiveMaxPool3d(_AdaptiveNd):
    """Max over adaptive windows to a fixed (D, H, W).

    >>> nn.AdaptiveMaxPool3d(2)(lightgrad.randn(1, 2, 3, 4, 5)).shape
    lightgrad.Size([1, 2, 2, 2, 2])
    """

    def __init__(self, output_size: Any, return_indices: bool = False) -> None:
        super().__init__(output_size)
        self.return_indices = return_indices

    def forward(self, input: Tensor) -> Any:
        """Max-pool to ``output_size``, windows spread evenly (indices if ``return_indices``)."""
        return F.adaptive_max_pool3d(input, self.output_size, self.return_indices)


# ---- power-average (LP) pooling ----------------------------------------------------------------

class _LPPoolNd(Module):
    def __init__(self, norm_type: float, kernel_size: Any, stride: Any = None, ceil_mode: bool = False) -> None:
        super().__init__()
        self.norm_type, self.kernel_size, self.stride, self.ceil_mode = norm_type, kernel_size, stride, ceil_mode

    def extra_repr(self) -> str:
        return (f"norm_type={self.norm_type}, kernel_size={self.kernel_size}, stride={self.stride}, "
                f"ceil_mode={self.ceil_mode}")


class LPPool1d(_LPPoolNd):
    """Power-average pooling over (N, C, L) or (C, L).

    >>> nn.LPPool1d(2, 3)(lightgrad.rand(1, 2, 9)).shape
    lightgrad.Size([1, 2, 3])
    """

    def forward(self, input: Tensor) -> Tensor:
        """Each window's ``(sum of x ** p) ** (1 / p)``, p being ``norm_type``."""
        return F.lp_pool1d(input, float(self.norm_type), self.kernel_size, self.stride, self.ceil_mode)


class LPPool2d(_LPPoolNd):
    """Power-average pooling over (N, C, H, W) or (C, H, W)."""

    def forward(self, input: Tensor) -> Tensor:
        """Each window's ``(sum of x ** p) ** (1 / p)``, p being ``norm_type``."""
        return F.lp_pool2d(input, float(self.norm_type), self.kernel_size, self.stride, self.ceil_mode)


class LPPool3d(_LPPoolNd):
    """Power-average pooling over (N, C, D, H, W) or (C, D, H, W)."""

    def forward(self, input: Tensor) -> Tensor:
        """Each window's ``(sum of x ** p) ** (1 / p)``, p being ``norm_type``."""
        return F.lp_pool3d(input, float(self.norm_type), self.kernel_size, self.stride, self.ceil_mode)


# ---- fractional max pooling --------------------------------------------------------------------

class _FractionalMaxPoolNd(Module):
    _nd = 2

    def __init__(self, kernel_size: Any, output_size: Any = None, output_ratio: Any = None,
                 return_indices: bool = False, _random_samples: Tensor | None = None) -> None:
        name, nd = type(self).__name__, self._nd
        if output_size is None and output_ratio is None:
            raise ValueError(f"{name} requires specifying either an output size, or a pooling ratio")
        if output_size is not None and output_ratio is not None:
            raise ValueError("only one of output_size and output_ratio may be specified")
        ratio = None if output_ratio is None else _ntuple(output_ratio, nd)
        if ratio is not None and not all(0 < r < 1 for r in ratio):
            raise ValueError(f"output_ratio must be between 0 and 1 (got {output_ratio})")
        super().__init__()
        self.kernel_size = _ntuple(kernel_size, nd)
        self.return_indices = return_indices
        self.register_buffer("_random_samples", _random_samples)
        self.output_size = None if output_size is None else _ntuple(output_size, nd)
        self.output_ratio = ratio


def _ntuple(v: Any, n: int) -> tuple[Any, ...]:
    return tuple(v) if isinstance(v, tuple | list) else (v,) * n


class FractionalMaxPool2d(_FractionalMaxPoolNd):
    """Max pooling over pseudo-random overlapping windows of (N, C, H, W) or (C, H, W).

    >>> nn.FractionalMaxPool2d(3, output_ratio=0.5)(lightgrad.randn(1, 2, 10, 10)).shape
    lightgrad.Size([1, 2, 5, 5])
    """

    _nd = 2

    def forward(self, input: Tensor) -> Any:
        """Max-pool over pseudo-random windows to ``output_size`` or ``output_ratio`` (indices too if asked)."""
        return F.fractional_max_pool2d(input, self.kernel_size, self.output_size, self.output_ratio,
                                       self.return_indices, _random_samples=self._random_samples)


class FractionalMaxPool3d(_FractionalMaxPoolNd):
    """Fractional max pooling of (N, C, D, H, W) or (C, D, H, W)."""

    _nd = 3

    def forward(self, input: Tensor) -> Any:
        """Max-pool over pseudo-random windows to ``output_size`` or ``output_ratio`` (indices too if asked)."""
        return F.fractional_max_pool3d(input, self.kernel_size, self.output_size, self.output_ratio,
                                       self.return_indices, _random_samples=self._random_samples)


# ---- upsampling --------------------------------------------------------------------------------

class Upsample(Module):
    """Resize by ``scale_factor`` or to ``size`` with nearest, (bi/tri)linear, bicubic or area.

    >>> nn.Upsample(scale_factor=2, mode="bilinear")(lightgrad.randn(1, 1, 3, 3)).shape
    lightgrad.Size([1, 1, 6, 6])
    """

    def __init__(self, size: Any = None, scale_factor: Any = None, mode: str = "nearest",
                 align_corners: bool | None = None, recompute_scale_factor: bool | None = None) -> None:
        super().__init__()
        self.name = type(self).__name__
        self.size = size
        if isinstance(scale_factor, tuple | list):
            self.scale_factor: Any = tuple(float(f) for f in scale_factor)
        else:
            self.scale_factor = float(scale_factor) if scale_factor else None
        self.mode, self.align_corners = mode, align_corners
        self.recompute_scale_factor = recompute_scale_factor

    def forward(self, input: Tensor) -> Tensor:
        """Resize ``input`` to ``size`` or by ``scale_factor`` with ``mode`` interpolation."""
        return F.interpolate(input, self.size, self.scale_factor, self.mode, self.align_corners,
                             recompute_scale_factor=self.recompute_scale_factor)

    def extra_repr(self) -> str:
        """The constructor options the module's repr shows."""
        info = f"scale_factor={self.scale_factor!r}" if self.scale_factor is not None else f"size={self.size!r}"
        return info + f", mode={self.mode!r}"


class UpsamplingNearest2d(Upsample):
    """``Upsample(mode='nearest')`` for (N, C, H, W).

    >>> nn.UpsamplingNearest2d(scale_factor=2)(lightgrad.randn(1, 1, 2, 2)).shape
    lightgrad.Size([1, 1, 4, 4])
    """

    def __init__(self, size: Any = None, scale_factor: Any = None) -> None:
        super().__init__(size, scale_factor, mode="nearest")


class UpsamplingBilinear2d(Upsample):
    """``Upsample(mode='bilinear', align_corners=True)`` for (N, C, H, W).

    >>> nn.UpsamplingBilinear2d(scale_factor=2)(lightgrad.randn(1, 1, 2, 2)).shape
    lightgrad.Size([1, 1, 4, 4])
    """

    def __init__(self, size: Any = None, scale_factor: Any = None) -> None:
        super().__init__(size, scale_factor, mode="bilinear", align_corners=True)
