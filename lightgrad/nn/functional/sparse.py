"""Lookups by index: ``F.embedding``, ``F.embedding_bag`` and ``F.one_hot``."""

from __future__ import annotations

from typing import Any

from ... import backend as B
from ...tensor import Tensor, where
from ._common import _const

# ---- embeddings --------------------------------------------------------------------------------

def embedding(input: Tensor, weight: Tensor, padding_idx: int | None = None, max_norm: float | None = None,
              norm_type: float = 2.0, scale_grad_by_freq: bool = False, sparse: bool = False) -> Tensor:
    """Rows of ``weight`` picked by integer ``input``: shape input.shape + (embedding_dim,).
    The ``padding_idx`` row receives no gradient."""
    n = weight.shape[0]
    if padding_idx is not None:
        if padding_idx >= n or padding_idx < -n:
            raise AssertionError("Padding_idx must be within num_embeddings")
        padding_idx = padding_idx % n
    idx = input._data if isinstance(input, Tensor) else B.asarray(input)
    if idx.dtype.kind not in "iu":
        name = input.type() if isinstance(input, Tensor) else str(idx.dtype)
        raise RuntimeError("Expected tensor for argument #1 'indices' to have one of the following scalar types: "
                           f"Long, Int; but got {name} instead (while checking arguments for embedding)")
    if idx.size and (idx.min() < 0 or idx.max() >= n):
        raise IndexError("index out of range in self")
    if max_norm is not None:
        _embedding_renorm(weight, idx, max_norm, norm_type)
    out = weight[Tensor._make(idx)]
    if scale_grad_by_freq and weight.requires_grad:
        # forward unchanged, gradient of each row divided by how often it occurs in the batch
        counts = B.xp.bincount(idx.reshape(-1), minlength=n)
        s = _const((1.0 / counts[idx])[..., None], weight)
        out = out * s + (out * (1 - s)).detach()
    if padding_idx is not None and weight.requires_grad:
        keep = Tensor._make(B.expand_dims(B.xp.not_equal(idx, padding_idx), -1))
        out = where(keep, out, out.detach())
    return out


def _embedding_renorm(weight: Tensor, idx: B.ndarray, max_norm: float, norm_type: float) -> None:
    """Rescale, in place, the rows used by ``idx`` whose norm exceeds ``max_norm``."""
    rows = B.xp.unique(idx)
    w = weight._data
    norms = B.xp.linalg.norm(w[rows].astype(B.xp.float64), ord=norm_type, axis=1)
    big = norms > max_norm
    if big.any():
        w[rows[big]] *= (max_norm / (norms[big] + 1e-7))[:, None].astype(w.dtype)
        weight._version[0] += 1


def _index_data(t: Any) -> B.ndarray:
    return t._data if isinstance(t, Tensor) else B.asarray(t)


def embedding_bag(input: Tensor, weight: Tensor, offsets: Tensor | None = None, max_norm: float | None = None,
                  norm_type: float = 2.0, scale_grad_by_freq: bool = False, mode: str = "mean",
                  sparse: bool = False, per_sample_weights: Tensor | None = None,
                  include_last_offset: bool = False, padding_idx: int | None = None) -> Tensor:
    """Sum, mean or max of the ``weight`` rows in each bag: the rows of a 2-D ``input``, or the
    slices of a 1-D ``input`` that ``offsets`` start; empty bags give zeros. Composite: the
    rows are gathered and summed into their bags with ``index_add`` (max: the first maximum of
    each bag, as PyTorch, is gathered), so gradients come for free.

    >>> F.embedding_bag(lightgrad.tensor([[0, 2], [1, 1]]), lightgrad.ones(3, 4), mode="sum").shape
    lightgrad.Size([2, 4])
    """
    psw = per_sample_weights
    if psw is not None and tuple(input.shape) != tuple(psw.shape):
        raise ValueError(f"embedding_bag: If per_sample_weights ({psw.shape}) is not None, then it must have the "
                         f"same shape as the input ({input.shape})")
    if weight.ndim != 2:
        raise ValueError(f"weight has to be a 2D Tensor, but got Tensor of dimension {weight.ndim}")
    idx = _index_data(input)
    if input.ndim == 2:
        if offsets is not None:
            raise ValueError("if input is 2D, then offsets has to be None, as input is treated is a mini-batch of "
                             f"fixed length sequences. However, found offsets of type {type(offsets)}")
        offs = B.arange(input.shape[0]) * input.shape[1]
        include_last_offset = False
        idx = idx.reshape(-1)
        psw = psw.reshape(-1) if psw is not None else None
    elif input.ndim == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        offs = _index_data(offsets)
        if offs.ndim != 1:
            raise ValueError("offsets has to be a 1D Tensor")
    else:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension {input.ndim}")
    if mode not in ("sum", "mean", "max"):
        raise ValueError("mode has to be one of sum, mean or max")
    if mode == "max" and scale_grad_by_freq:
        raise ValueError("max mode does not support scaling the gradient by the frequency")
    if mode == "max" and sparse:
        raise ValueError("max mode does not support sparse weights")
    if psw is not None and mode != "sum":
        raise NotImplementedError("embedding_bag: per_sample_weights was not None. per_sample_weights is only "
                                  f"supported for mode='sum' (got mode='{mode}'). Please open a feature request "
                                  "on GitHub.")
    for name, a in (("indices", idx), ("offsets", offs)):
        if a.dtype.kind not in "iu":
            raise RuntimeError(f"Expected tensor for argument #1 '{name}' to have one of the following scalar "
                               f"types: Long, Int; but got {a.dtype} instead (while checking arguments for "
                               "embedding_bag)")
    if psw is not None and psw.dtype != weight.dtype:
        raise RuntimeError(f"Expected tensor for argument #1 'weight' to have the same type as tensor for argument "
                           f"#1 'per_sample_weights'; but type {weight.dtype} does not equal {psw.dtype} (while "
                           "checking arguments for embedding_bag)")
    n, m = weight.shape[0], idx.size
    if offs.size:
        if offs[0] != 0:
            raise RuntimeError("offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start "
                               f"from position 0. However, got {int(offs[0])}")
        if offs[-1] > m:
            raise RuntimeError(f"offsets[-1] can not be greater than input's length {m} but got offsets[-1] of "
                               f"{int(offs[-1])}")
        if (B.xp.diff(offs) < 0).any():
            raise RuntimeError(f"offsets must be non-decreasing, but got offsets={offs.tolist()}")
    if m and (idx.min() < 0 or idx.max() >= n):
        bad = int(idx.min()) if idx.min() < 0 else int(idx.max())
        raise IndexError(f"embedding_bag: index {bad} is out of range for num_embeddings {n}")
    if padding_idx is not None:
        if not -n <= padding_idx < n:
            raise AssertionError("padding_idx must be within num_embeddings")
        padding_idx = padding_idx % n
    if max_norm is not None:
        _embedding_renorm(weight, idx, max_norm, norm_type)
    nbags = max(offs.size - 1, 0) if include_last_offset else offs.size
    end = (int(offs[nbags]) if include_last_offset else m) if nbags else 0
    ar = B.arange(m)
    bag = B.xp.searchsorted(offs[:nbags], ar, side="right") - 1  # each position's bag, positions sorted
    keep = (bag >= 0) & (ar < end)
    if padding_idx is not None:
        keep &= idx != padding_idx
    pos = B.nonzero(keep)[0]
    bag, rows = bag[pos], idx[pos]
    out = weight.new_zeros((nbags, weight.shape[1]))
    if not pos.size:  # (still a function of weight, so that backward reaches it with zeros)
        return out + weight[:0].sum()
    e = weight[Tensor._make(rows)]  # (K, D)
    if scale_grad_by_freq and weight.requires_grad:
        # forward unchanged, gradient of each row divided by how often it occurs in the input
        s = _const((1.0 / B.xp.bincount(idx, minlength=n)[rows])[:, None], weight)
        e = e * s + (e * (1 - s)).detach()
    if mode == "max":
        # the first maximum of each bag and feature (PyTorch's tie rule) gets the gradient
        vals = weight._data[rows]
        bags, first = B.xp.unique(bag, return_index=True)
        mx = B.xp.maximum.reduceat(vals, first, axis=0)
        at = B.xp.where(vals == mx[B.xp.searchsorted(bags, bag)], ar[:pos.size, None], pos.size)
        arg = B.xp.minimum.reduceat(at, first, axis=0)  # (bags hit, D) rows of e
        return out.index_add(0, Tensor._make(bags), e.gather(0, Tensor._make(arg)))
    if psw is not None:
        e = e * psw[Tensor._make(pos)].unsqueeze(1)
    out = out.index_add(0, Tensor._make(bag), e)
    if mode == "mean":
        out = out / _const(B.xp.maximum(B.xp.bincount(bag, minlength=nbags), 1)[:, None], weight)
    return out


# ---- one-hot -----------------------------------------------------------------------------------

def one_hot(tensor: Tensor, num_classes: int = -1) -> Tensor:
    """int64 one-hot encoding: shape tensor.shape + (num_classes,)."""
    a = tensor._data
    if a.dtype != B.xp.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    if a.size and a.min() < 0:
        raise RuntimeError("Class values must be non-negative.")
    if num_classes == -1:
        if a.size == 0:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
        num_classes = int(a.max()) + 1
    elif a.size and a.max() >= num_classes:
        raise RuntimeError("Class values must be smaller than num_classes.")
    return Tensor._make((a[..., None] == B.arange(num_classes)).astype(B.xp.int64))
