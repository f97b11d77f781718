"""Distance layers, as ``torch.nn``: thin wrappers over ``F.cosine_similarity`` and
``F.pairwise_distance``.

>>> nn.PairwiseDistance()(lightgrad.zeros(2, 3), lightgrad.ones(2, 3)).shape
lightgrad.Size([2])
"""

from __future__ import annotations

from ..tensor import Tensor
from . import functional as F
from .module import Module

__all__ = ["CosineSimilarity", "PairwiseDistance"]


class CosineSimilarity(Module):
    """Cosine of the angle between x1 and x2 along ``dim``.

    >>> nn.CosineSimilarity(dim=1)(lightgrad.ones(2, 3), lightgrad.ones(2, 3))
    tensor([1.0000, 1.0000])
    """

    def __init__(self, dim: int = 1, eps: float = 1e-8) -> None:
        super().__init__()
        self.dim, self.eps = dim, eps

    def forward(self, x1: Tensor, x2: Tensor) -> Tensor:
        """The cosine of the angle between ``x1`` and ``x2`` along ``dim``."""
        return F.cosine_similarity(x1, x2, self.dim, self.eps)


class PairwiseDistance(Module):
    """||x1 - x2 + eps||_p over the last dim.

    >>> nn.PairwiseDistance(p=1.0)(lightgrad.zeros(1, 2), lightgrad.ones(1, 2))
    tensor([2.0000])
    """

    def __init__(self, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False) -> None:
        super().__init__()
        self.norm, self.eps, self.keepdim = p, eps, keepdim

    def forward(self, x1: Tensor, x2: Tensor) -> Tensor:
        """The ``p``-norm of ``x1 - x2 + eps`` along the last dim."""
        return F.pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)
