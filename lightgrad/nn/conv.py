"""Convolution layers (Conv1d/2d/3d, ConvTranspose1d/2d/3d) and Fold/Unfold, as ``torch.nn``.

>>> nn.Conv2d(3, 8, 3, padding=1)(lightgrad.randn(2, 3, 16, 16)).shape
lightgrad.Size([2, 8, 16, 16])
"""

from __future__ import annotations

from typing import Any

from ..tensor import Tensor
from . import functional as F
from . import init
from .functional import _tuple
from .module import Module
from .parameter import _weight_and_bias

__all__ = ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d", "Fold", "Unfold"]

_PADDING_MODES = ("zeros", "reflect", "replicate", "circular")


class _ConvNd(Module):
    """Shared by convolutions: argument checks, the weight and bias, and PyTorch's default init
    (kaiming_uniform_ with a=sqrt(5); bias U(-1/sqrt(fan_in), 1/sqrt(fan_in)))."""

    _nd = 2
    transposed = False

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1,
                 padding: Any = 0, dilation: Any = 1, groups: int = 1, bias: bool = True,
                 padding_mode: str = "zeros", device: Any = None, dtype: Any = None,
                 output_padding: Any = 0) -> None:
        super().__init__()
        nd = self._nd
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups:
            raise ValueError(f"in_channels must be divisible by groups, got in_channels={in_channels} and "
                             f"groups={groups}")
        if out_channels % groups:
            raise ValueError(f"out_channels must be divisible by groups, got out_channels={out_channels} and "
                             f"groups={groups}")
        if isinstance(padding, str):
            if padding not in ("same", "valid"):
                raise ValueError(f"Invalid padding string {padding!r}, should be one of {{'valid', 'same'}}")
            if padding == "same" and any(s != 1 for s in _tuple(stride, nd, "stride")):
                raise ValueError("padding='same' is not supported for strided convolutions")
        if padding_mode not in _PADDING_MODES:
            raise ValueError(f"padding_mode must be one of {list(_PADDING_MODES)}, but got "
                             f"padding_mode='{padding_mode}'")
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size = _tuple(kernel_size, nd, "kernel_size")
        self.stride = _tuple(stride, nd, "stride")
        self.padding = padding if isinstance(padding, str) else _tuple(padding, nd, "padding")
        self.dilation = _tuple(dilation, nd, "dilation")
        self.output_padding = _tuple(output_padding, nd, "output_padding")
        self.groups, self.padding_mode = groups, padding_mode
        # F.pad's (left, right) pairs, last dim first, for the non-zero padding modes
        if isinstance(self.padding, str):
            rev: list[int] = []
            if self.padding == "same":
                for d, k in zip(reversed(self.dilation), reversed(self.kernel_size)):
                    tot = d * (k - 1)
                    rev += [tot // 2, tot - tot // 2]
            else:
                rev = [0, 0] * nd
        else:
            rev = [p for p in reversed(self.padding) for _ in range(2)]
        self._reversed_padding_repeated_twice = rev
        shape = ((in_channels, out_channels // groups) if self.transposed
                 else (out_channels, in_channels // groups)) + self.kernel_size
        _weight_and_bias(self, shape, out_channels, bias, dtype, device)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        init._layer_default_(self.weight, self.bias)

    def extra_repr(self) -> str:
        s = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}"
        if self.padding != (0,) * self._nd:
            s += f", padding={self.padding}"
        if self.dilation != (1,) * self._nd:
            s += f", dilation={self.dilation}"
        if self.output_padding != (0,) * self._nd:
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        return s

    def _conv(self, input: Tensor, fn: Any) -> Tensor:
        if self.padding_mode != "zeros":
            x = F.pad(input, self._reversed_padding_repeated_twice, mode=self.padding_mode)
            return fn(x, self.weight, self.bias, self.stride, 0, self.dilation, self.groups)
        return fn(input, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)


class Conv1d(_ConvNd):
    """1-D convolution over (N, C_in, L); weight (C_out, C_in/groups, k).

    >>> nn.Conv1d(2, 4, 3)(lightgrad.randn(1, 2, 10)).shape
    lightgrad.Size([1, 4, 8])
    """

    _nd = 1

    def forward(self, input: Tensor) -> Tensor:
        """Convolve ``input`` (N, C_in, L) or (C_in, L) with the weight and add the bias."""
        return self._conv(input, F.conv1d)


class Conv2d(_ConvNd):
    """2-D convolution over (N, C_in, H, W); weight (C_out, C_in/groups, kh, kw).

    >>> nn.Conv2d(1, 4, 3, stride=2)(lightgrad.randn(1, 1, 9, 9)).shape
    lightgrad.Size([1, 4, 4, 4])
    """

    _nd = 2

    def forward(self, input: Tensor) -> Tensor:
        """Convolve ``input`` (N, C_in, H, W) or (C_in, H, W) with the weight and add the bias."""
        return self._conv(input, F.conv2d)


class Conv3d(_ConvNd):
    """3-D convolution over (N, C_in, D, H, W); weight (C_out, C_in/groups, kd, kh, kw).

    >>> nn.Conv3d(1, 4, 3)(lightgrad.randn(1, 1, 5, 6, 6)).shape
    lightgrad.Size([1, 4, 3, 4, 4])
    """

    _nd = 3

    def forward(self, input: Tensor) -> Tensor:
        """Convolve ``input`` (N, C_in, D, H, W) or (C_in, D, H, W) with the weight and add the bias."""
        return self._conv(input, F.conv3d)


class _ConvTransposeNd(_ConvNd):
    transposed = True

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1,
                 padding: Any = 0, output_padding: Any = 0, groups: int = 1, bias: bool = True,
                 dilation: Any = 1, padding_mode: str = "zeros", device: Any = None, dtype: Any = None) -> None:
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for {type(self).__name__}')
        if isinstance(padding, str):
            raise ValueError(f"{type(self).__name__} does not support string padding, got padding={padding!r}")
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
                         padding_mode, device, dtype, output_padding)

    @property
    def _tpad(self) -> tuple[int, ...]:
        assert not isinstance(self.padding, str)  # refused in __init__
        return self.padding

    def _output_padding(self, input: Tensor, output_size: Any) -> tuple[int, ...]:
        """The output_padding that makes the output ``output_size`` (PyTorch's rule and checks)."""
        if output_size is None:
            return self.output_padding
        nd = self._nd
        sizes = [int(s) for s in output_size][-nd:]
        if len(sizes) != nd:
            raise ValueError(f"ConvTranspose{nd}D: for {input.ndim}D input, output_size must have {nd} or "
                             f"{nd + 2} elements (got {len(list(output_size))})")
        out = []
        for i in range(nd):
            base = ((input.shape[input.ndim - nd + i] - 1) * self.stride[i] - 2 * self.padding[i]
                    + self.dilation[i] * (self.kernel_size[i] - 1) + 1)
            if not base <= sizes[i] < base + max(self.stride[i], self.dilation[i]):
                raise ValueError(f"requested an output size of {sizes}, but valid sizes range from {base} to "
                                 f"{base + max(self.stride[i], self.dilation[i]) - 1} (for an input of "
                                 f"{list(input.shape[2:])})")
            out.append(sizes[i] - base)
        return tuple(out)


class ConvTranspose1d(_ConvTransposeNd):
    """1-D transposed convolution over (N, C_in, L); weight (C_in, C_out/groups, k).

    >>> nn.ConvTranspose1d(4, 2, 3, stride=2)(lightgrad.randn(1, 4, 5)).shape
    lightgrad.Size([1, 2, 11])
    """

    _nd = 1

    def forward(self, input: Tensor, output_size: Any = None) -> Tensor:
        """Transposed 1d convolution of ``input``; ``output_size`` picks the output padding."""
        op = self._output_padding(input, output_size)
        return F.conv_transpose1d(input, self.weight, self.bias, self.stride, self._tpad, op, self.groups,
                                  self.dilation)


class ConvTranspose2d(_ConvTransposeNd):
    """2-D transposed convolution over (N, C_in, H, W); weight (C_in, C_out/groups, kh, kw).

    >>> nn.ConvTranspose2d(4, 2, 3, stride=2, padding=1, output_padding=1)(lightgrad.randn(1, 4, 5, 5)).shape
    lightgrad.Size([1, 2, 10, 10])
    """

    _nd = 2

    def forward(self, input: Tensor, output_size: Any = None) -> Tensor:
        """Transposed 2d convolution of ``input``; ``output_size`` picks the output padding."""
        op = self._output_padding(input, output_size)
        return F.conv_transpose2d(input, self.weight, self.bias, self.stride, self._tpad, op, self.groups,
                                  self.dilation)


class ConvTranspose3d(_ConvTransposeNd):
    """3-D transposed convolution over (N, C_in, D, H, W); weight (C_in, C_out/groups, kd, kh, kw).

    >>> nn.ConvTranspose3d(4, 2, 3, stride=2)(lightgrad.randn(1, 4, 2, 3, 3)).shape
    lightgrad.Size([1, 2, 5, 7, 7])
    """

    _nd = 3

    def forward(self, input: Tensor, output_size: Any = None) -> Tensor:
        """Transposed 3d convolution of ``input``; ``output_size`` picks the output padding."""
        op = self._output_padding(input, output_size)
        return F.conv_transpose3d(input, self.weight, self.bias, self.stride, self._tpad, op, self.groups,
                                  self.dilation)


class Unfold(Module):
    """Extract sliding local blocks: (N, C, H, W) -> (N, C*kh*kw, L), as ``F.unfold``.

    >>> nn.Unfold(2)(lightgrad.randn(1, 3, 4, 4)).shape
    lightgrad.Size([1, 12, 9])
    """

    def __init__(self, kernel_size: Any, dilation: Any = 1, padding: Any = 0, stride: Any = 1) -> None:
        super().__init__()
        self.kernel_size, self.dilation, self.padding, self.stride = kernel_size, dilation, padding, stride

    def forward(self, input: Tensor) -> Tensor:
        """Extract the sliding blocks of ``input`` as columns: (N, C * prod(kernel_size), L)."""
        return F.unfold(input, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self) -> str:
        """The constructor options the module's repr shows."""
        return (f"kernel_size={self.kernel_size}, dilation={self.dilation}, padding={self.padding}, "
                f"stride={self.stride}")


class Fold(Module):
    """Combine sliding local blocks into an image: (N, C*kh*kw, L) -> (N, C, H, W), as ``F.fold``.

    >>> nn.Fold((4, 4), 2)(lightgrad.randn(1, 12, 9)).shape
    lightgrad.Size([1, 3, 4, 4])
    """

    def __init__(self, output_size: Any, kernel_size: Any, dilation: Any = 1, padding: Any = 0,
                 stride: Any = 1) -> None:
        super().__init__()
        self.output_size, self.kernel_size = output_size, kernel_size
        self.dilation, self.padding, self.stride = dilation, padding, stride

    def forward(self, input: Tensor) -> Tensor:
        """Sum columns of blocks back into an image of ``output_size``: the inverse layout of Unfold."""
        return F.fold(input, self.output_size, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self) -> str:
        """The constructor options the module's repr shows."""
        return (f"output_size={self.output_size}, kernel_size={self.kernel_size}, dilation={self.dilation}, "
                f"padding={self.padding}, stride={self.stride}")
