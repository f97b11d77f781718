"""Padding and pixel-rearranging layers, as ``torch.nn``: thin wrappers over ``F.pad``,
``F.pixel_shuffle``, ``F.pixel_unshuffle`` and ``F.channel_shuffle``.

>>> nn.ReflectionPad2d(1)(lightgrad.randn(1, 3, 4, 4)).shape
lightgrad.Size([1, 3, 6, 6])
"""

from __future__ import annotations

from collections.abc import Sequence

from ..tensor import Tensor
from . import functional as F
from .module import Module

__all__ = [
    "ZeroPad1d", "ZeroPad2d", "ZeroPad3d", "ConstantPad1d", "ConstantPad2d", "ConstantPad3d",
    "ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d", "ReplicationPad1d", "ReplicationPad2d",
    "ReplicationPad3d", "CircularPad1d", "CircularPad2d", "CircularPad3d", "PixelShuffle", "PixelUnshuffle",
    "ChannelShuffle",
]

IntOrSeq = int | Sequence[int]


def _pads(padding: IntOrSeq, nd: int) -> tuple[int, ...]:
    """An int for every side, or the (left, right[, top, bottom[, front, back]]) tuple itself."""
    if isinstance(padding, int):
        return (padding,) * (2 * nd)
    t = tuple(int(p) for p in padding)
    if len(t) != 2 * nd:
        raise ValueError(f"padding of a {nd}-D padding layer must be an int or {2 * nd} values, got {padding}")
    return t


class _PadNd(Module):
    mode = "constant"
    nd = 1

    def __init__(self, padding: IntOrSeq) -> None:
        super().__init__()
        self.padding = _pads(padding, self.nd)

    def forward(self, input: Tensor) -> Tensor:
        return F.pad(input, self.padding, self.mode)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class _ConstantPadNd(_PadNd):
    def __init__(self, padding: IntOrSeq, value: float) -> None:
        super().__init__(padding)
        self.value = value

    def forward(self, input: Tensor) -> Tensor:
        return F.pad(input, self.padding, "constant", self.value)

    def extra_repr(self) -> str:
        return f"padding={self.padding}, value={self.value}"


class ConstantPad1d(_ConstantPadNd):
    """Pad the last dim with ``value``: ``nn.ConstantPad1d((1, 2), 3.5)``."""
    nd = 1


class ConstantPad2d(_ConstantPadNd):
    """Pad the last two dims with ``value``: ``nn.ConstantPad2d(1, 0.5)``."""
    nd = 2


class ConstantPad3d(_ConstantPadNd):
    """Pad the last three dims with ``value``: ``nn.ConstantPad3d(1, 0.5)``."""
    nd = 3


class _ZeroPadNd(_ConstantPadNd):
    def __init__(self, padding: IntOrSeq) -> None:
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class ZeroPad1d(_ZeroPadNd):
    """Pad the last dim with zeros: ``nn.ZeroPad1d((1, 2))``."""
    nd = 1


class ZeroPad2d(_ZeroPadNd):
    """Pad the last two dims with zeros: ``nn.ZeroPad2d((left, right, top, bottom))``."""
    nd = 2


class ZeroPad3d(_ZeroPadNd):
    """Pad the last three dims with zeros: ``nn.ZeroPad3d(1)``."""
    nd = 3


class ReflectionPad1d(_PadNd):
    """Mirror the last dim about its edges (edge not repeated): ``nn.ReflectionPad1d(2)``."""
    mode, nd = "reflect", 1


class ReflectionPad2d(_PadNd):
    """Mirror the last two dims about their edges: ``nn.ReflectionPad2d(1)``."""
    mode, nd = "reflect", 2


class ReflectionPad3d(_PadNd):
    """Mirror the last three dims about their edges: ``nn.ReflectionPad3d(1)``."""
    mode, nd = "reflect", 3


class ReplicationPad1d(_PadNd):
    """Repeat the edge values of the last dim: ``nn.ReplicationPad1d(2)``."""
    mode, nd = "replicate", 1


class ReplicationPad2d(_PadNd):
    """Repeat the edge values of the last two dims: ``nn.ReplicationPad2d(1)``."""
    mode, nd = "replicate", 2


class ReplicationPad3d(_PadNd):
    """Repeat the edge values of the last three dims: ``nn.ReplicationPad3d(1)``."""
    mode, nd = "replicate", 3


class _CircularPadNd(_PadNd):
    mode = "circular"

    def forward(self, input: Tensor) -> Tensor:
        if input.ndim not in (self.nd + 1, self.nd + 2):
            raise ValueError(f"expected {self.nd + 1}D or {self.nd + 2}D input (got {input.ndim}D input)")
        return F.pad(input, self.padding, "circular")


class CircularPad1d(_CircularPadNd):
    """Wrap the last dim around (periodic padding): ``nn.CircularPad1d(2)``."""
    nd = 1


class CircularPad2d(_CircularPadNd):
    """Wrap the last two dims around: ``nn.CircularPad2d(1)``."""
    nd = 2


class CircularPad3d(_CircularPadNd):
    """Wrap the last three dims around: ``nn.CircularPad3d(1)``."""
    nd = 3


class PixelShuffle(Module):
    """(*, C r^2, H, W) -> (*, C, H r, W r).

    >>> nn.PixelShuffle(2)(lightgrad.randn(1, 8, 3, 3)).shape
    lightgrad.Size([1, 2, 6, 6])
    """

    def __init__(self, upscale_factor: int) -> None:
        super().__init__()
        self.upscale_factor = upscale_factor

    def forward(self, input: Tensor) -> Tensor:
        """Rearrange (*, C * r^2, H, W) into (*, C, H * r, W * r), r the upscale factor."""
        return F.pixel_shuffle(input, self.upscale_factor)

    def extra_repr(self) -> str:
        """The constructor options the module's repr shows."""
        return f"upscale_factor={self.upscale_factor}"


class PixelUnshuffle(Module):
    """(*, C, H r, W r) -> (*, C r^2, H, W).

    >>> nn.PixelUnshuffle(2)(lightgrad.randn(1, 2, 6, 6)).shape
    lightgrad.Size([1, 8, 3, 3])
    """

    def __init__(self, downscale_factor: int) -> None:
        super().__init__()
        self.downscale_factor = downscale_factor

    def forward(self, input: Tensor) -> Tensor:
        """Rearrange (*, C, H * r, W * r) into (*, C * r^2, H, W), r the downscale factor."""
        return F.pixel_unshuffle(input, self.downscale_factor)

    def extra_repr(self) -> str:
        """The constructor options the module's repr shows."""
        return f"downscale_factor={self.downscale_factor}"


class ChannelShuffle(Module):
    """Interleave the channels of ``groups`` groups (ShuffleNet).

    >>> nn.ChannelShuffle(2)(lightgrad.randn(1, 4, 3, 3)).shape
    lightgrad.Size([1, 4, 3, 3])
    """

    def __init__(self, groups: int) -> None:
        super().__init__()
        self.groups = groups

    def forward(self, input: Tensor) -> Tensor:
        """Split the channels into ``groups`` and interleave them."""
        return F.channel_shuffle(input, self.groups)

    def extra_repr(self) -> str:
        """The constructor options the module's repr shows."""
        return f"groups={self.groups}"
