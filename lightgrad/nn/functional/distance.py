"""Distances and similarities: ``F.cosine_similarity``, ``F.pairwise_distance``, ``F.pdist``."""

from __future__ import annotations

import math

from ... import backend as B
from ...tensor import Tensor, where
from ._common import _const

# ---- distances ---------------------------------------------------------------------------------

def _clamp_value_only(x: Tensor, lo: float) -> Tensor:
    """max(x, lo) in value, with x's own gradient (PyTorch clamps these under no_grad)."""
    return x + (x.detach().clamp(min=lo) - x.detach())


def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """sum(x1 * x2) / (max(||x1||, eps) * max(||x2||, eps)) along ``dim``."""
    n1 = _clamp_value_only(x1.norm(2, dim, keepdim=True), eps)
    n2 = _clamp_value_only(x2.norm(2, dim, keepdim=True), eps)
    return ((x1 / n1) * (x2 / n2)).sum(dim)


def pairwise_distance(x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False) -> Tensor:
    """||x1 - x2 + eps||_p over the last dim."""
    d = x1 - x2 + eps
    return d.norm(p, -1 if d.ndim else None, keepdim)


def pdist(input: Tensor, p: float = 2) -> Tensor:
    """p-norm distances between all row pairs i < j of an (N, M) input, shape (N(N-1)/2,).

    >>> F.pdist(lightgrad.tensor([[0.0, 0.0], [3.0, 4.0]]))
    tensor([5.])
    """
    if input.ndim != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.ndim}D")
    if p < 0:
        raise RuntimeError("pdist only supports non-negative p values")
    i, j = B.triu_indices(input.shape[0], 1)
    d = input[Tensor._make(i)] - input[Tensor._make(j)]  # (P, M)
    if p == math.inf:
        # PyTorch's gradient goes in full to every tied maximum (not split between them as amax's does)
        a = d.abs()
        top = Tensor._make(a._data == a._data.max(1, keepdims=True, initial=0))
        tied = where(top, a, 0.0).sum(1)
        return a.detach().amax(1) + (tied - tied.detach()) if d.shape[1] else tied
    if p == 0:  # the number of differing coordinates: a zero gradient, though still a graph node
        return (d * 0).sum(1) + _const((d._data != 0).sum(1), d)
    # identical rows: distance 0 with gradient 0, as PyTorch (a p-norm's gradient is 0/0 there)
    same = Tensor._make((d._data == 0).all(1, keepdims=True))
    return where(same.squeeze(1), 0.0, where(same, 1.0, d).norm(p, 1))
