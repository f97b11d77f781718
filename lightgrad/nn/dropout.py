"""Dropout layers: active in training mode, the identity in eval mode.

>>> nn.Dropout(0.5).eval()(lightgrad.ones(3))
tensor([1., 1., 1.])
"""

from __future__ import annotations

from ..tensor import Tensor
from . import functional as F
from .module import Module


class _DropoutNd(Module):
    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        super().__init__()
        if p < 0 or p > 1:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p, self.inplace = p, inplace

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"


class Dropout(_DropoutNd):
    """Zero each element with probability p while training (others scaled by 1/(1-p))."""

    def forward(self, input: Tensor) -> Tensor:
        """Zero each element with probability ``p`` while training, scaling the rest by 1 / (1 - p); the identity in eval."""
        return F.dropout(input, self.p, self.training, self.inplace)


class Dropout1d(_DropoutNd):
    """Zero whole channels of (N, C, L) or (C, L) input while training."""

    def forward(self, input: Tensor) -> Tensor:
        """Zero each channel of (N, C, L) input with probability ``p`` while training, scaling the rest by 1 / (1 - p)."""
        return F.dropout1d(input, self.p, self.training, self.inplace)


class Dropout2d(_DropoutNd):
    """Zero whole channels of (N, C, H, W) input while training."""

    def forward(self, input: Tensor) -> Tensor:
        """Zero each channel of (N, C, H, W) input with probability ``p`` while training, scaling the rest by 1 / (1 - p)."""
        return F.dropout2d(input, self.p, self.training, self.inplace)


class Dropout3d(_DropoutNd):
    """Zero whole channels of (N, C, D, H, W) input while training."""

    def forward(self, input: Tensor) -> Tensor:
        """Zero each channel of (N, C, D, H, W) with probability ``p`` while training, scaling the rest by 1 / (1 - p)."""
        return F.dropout3d(input, self.p, self.training, self.inplace)


class AlphaDropout(_DropoutNd):
    """Dropout that keeps SELU activations at zero mean and unit variance."""

    def forward(self, input: Tensor) -> Tensor:
        """Dropout that keeps SELU's zero mean and unit variance, while training; the identity in eval."""
        return F.alpha_dropout(input, self.p, self.training)


class FeatureAlphaDropout(_DropoutNd):
    """Alpha dropout of whole channels of (N, C, ...) input while training."""

    def forward(self, input: Tensor) -> Tensor:
        """Alpha dropout of whole channels, while training; the identity in eval."""
        return F.feature_alpha_dropout(input, self.p, self.training)


__all__ = ["AlphaDropout", "Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "FeatureAlphaDropout"]
