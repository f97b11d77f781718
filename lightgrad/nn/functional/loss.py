"""Loss functions (``F.mse_loss``, ``F.cross_entropy``, ``F.ctc_loss``, ...) and their reductions.

NLL, binary cross-entropy and the plain cross-entropy run as fused kernels; the rest are composed
from Tensor ops (gradients for free)."""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import Any

from ... import backend as B
from ...tensor import _SCALAR_TYPE, Tensor, cat, stack, where
from . import _layer_kernels as K
from ._common import _const
from .activation import logsigmoid, softplus
from .distance import _clamp_value_only, pairwise_distance

# ---- reductions and target checks --------------------------------------------------------------

def _reduction(size_average: bool | None, reduce: bool | None, reduction: str) -> str:
    """The reduction string, translating PyTorch's deprecated size_average/reduce arguments."""
    if size_average is not None or reduce is not None:
        size_average = True if size_average is None else size_average
        reduce = True if reduce is None else reduce
        reduction = "none" if not reduce else ("mean" if size_average else "sum")
        warnings.warn("size_average and reduce args will be deprecated, please use reduction='"
                      f"{reduction}' instead.", stacklevel=3)
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    return reduction


def _reduce(loss: Tensor, reduction: str) -> Tensor:
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    return loss


def _warn_shape(input: Tensor, target: Tensor) -> None:
    if target.shape != input.shape:
        warnings.warn(f"Using a target size ({target.shape}) that is different to the input size ({input.shape}). "
                      "This will likely lead to incorrect results due to broadcasting. Please ensure they have "
                      "the same size.", stacklevel=3)


def _class_target(input: Tensor, target: Tensor) -> B.ndarray:
    """Validate a class-index target against (N, C, *d) or (C,) scores, in PyTorch's order; returns
    it as int64."""
    t = target._data
    if input.ndim == 1:
        _check_target_dtype(target)
        if t.ndim != 0:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
        return t.astype(B.xp.int64, copy=False)
    if t.ndim == 0 or t.shape[0] != input.shape[0]:
        got = t.shape[0] if t.ndim else 1
        raise ValueError(f"Expected input batch_size ({input.shape[0]}) to match target batch_size ({got}).")
    want = (input.shape[0],) + tuple(input.shape[2:])
    if t.shape != want:
        if input.ndim == 2:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
        raise RuntimeError(f"Expected target size {list(want)}, got {list(t.shape)}")
    _check_target_dtype(target)
    return t.astype(B.xp.int64, copy=False)


def _check_target_dtype(target: Tensor) -> None:
    """Class indices are int64 or uint8 only, as PyTorch's NLL kernels take them (no int32)."""
    if target._arr.dtype not in (B.xp.int64, B.xp.uint8):
        raise RuntimeError(f"expected target dtype to be Long or Byte, but got {_SCALAR_TYPE[target.dtype.name]}")


def _check_class_weight(input: Tensor, weight: Tensor | None) -> None:
    c = input.shape[1 if input.ndim > 1 else 0]
    if weight is not None and (weight.ndim != 1 or weight.numel() != c):
        raise RuntimeError(f"weight tensor should be defined either for all {c} classes or no classes but got "
                           f"weight tensor of shape: {list(weight.shape)}")


# ---- regression --------------------------------------------------------------------------------

def mse_loss(input: Tensor, target: Tensor, size_average: bool | None = None, reduce: bool | None = None,
             reduction: str = "mean", weight: Tensor | None = None) -> Tensor:
    """(input - target)^2, reduced."""
    reduction = _reduction(size_average, reduce, reduction)
    _warn_shape(input, target)
    loss = (input - target).square()
    return _reduce(loss * weight if weight is not None else loss, reduction)


def l1_loss(input: Tensor, target: Tensor, size_average: bool | None = None, reduce: bool | None = None,
            reduction: str = "mean", weight: Tensor | None = None) -> Tensor:
    """|input - target|, reduced."""
    reduction = _reduction(size_average, reduce, reduction)
    _warn_shape(input, target)
    loss = (input - target).abs()
    return _reduce(loss * weight if weight is not None else loss, reduction)


def smooth_l1_loss(input: Tensor, target: Tensor, size_average: bool | None = None, reduce: bool | None = None,
                   reduction: str = "mean", beta: float = 1.0) -> Tensor:
    """0.5 d^2 / beta where |d| < beta, else |d| - 0.5 beta."""
    reduction = _reduction(size_average, reduce, reduction)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    _warn_shape(input, target)
    d = (input - target).abs()
    if beta == 0:
        return _reduce(d, reduction)
    return _reduce(where(d < beta, d * d * (0.5 / beta), d - 0.5 * beta), reduction)


def huber_loss(input: Tensor, target: Tensor, reduction: str = "mean", delta: float = 1.0,
               weight: Tensor | None = None) -> Tensor:
    """0.5 d^2 where |d| < delta, else delta * (|d| - 0.5 delta)."""
    reduction = _reduction(None, None, reduction)
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    _warn_shape(input, target)
    d = (input - target).abs()
    loss = where(d < delta, d * d * 0.5, (d - 0.5 * delta) * delta)
    return _reduce(loss * weight if weight is not None else loss, reduction)


def gaussian_nll_loss(input: Tensor, target: Tensor, var: Tensor | float, full: bool = False, eps: float = 1e-6,
                      reduction: str = "mean") -> Tensor:
    """0.5 (log var + (input - target)^2 / var) (+ 0.5 log 2 pi if ``full``); var is clamped at eps in value only.

    >>> F.gaussian_nll_loss(lightgrad.zeros(2), lightgrad.zeros(2), lightgrad.ones(2))
    tensor(0.)
    """
    if isinstance(var, float | int):
        if var < 0:
            raise ValueError("var has negative entry/entries")
        var = _const(B.full(input.shape, float(var)), input)
    elif var.numel() and bool((var._data < 0).any()):
        raise ValueError("var has negative entry/entries")
    if var.shape != input.shape:
        if tuple(input.shape[:-1]) == tuple(var.shape):
            var = var.unsqueeze(-1)
        elif not (input.ndim == var.ndim and
                  sum(y for a, y in zip(input.shape, var.shape, strict=True) if a != y) == 1):
            raise ValueError(f"var is of incorrect size: expected {list(input.shape)}, "
                             f"{list(input.shape[:-1])} or one broadcast dim, got {list(var.shape)}")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    var = _clamp_value_only(var, eps)  # PyTorch clamps under no_grad: the gradient passes unclamped
    d = input - target
    loss = (var.log() + d * d / var) * 0.5
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)


def poisson_nll_loss(input: Tensor, target: Tensor, log_input: bool = True, full: bool = False,
                     size_average: bool | None = None, eps: float = 1e-8, reduce: bool | None = None,
                     reduction: str = "mean") -> Tensor:
    """exp(x) - t x for log-rates (or x - t log(x + eps) for rates), plus Stirling's term if ``full``."""
    reduction = _reduction(size_average, reduce, reduction)
    loss = input.exp() - target * input if log_input else input - target * (input + eps).log()
    if full:
        t = target._data
        safe = B.xp.where(t > 1, t, 2.0)
        stirling = B.xp.where(t > 1, safe * B.xp.log(safe) - safe + 0.5 * B.xp.log(2 * B.xp.pi * safe), 0.0)
        loss = loss + _const(stirling, loss)
    return _reduce(loss, reduction)


# ---- classification ----------------------------------------------------------------------------

def _nll(logp: Tensor, target: Tensor, weight: Tensor | None, ignore_index: int, reduction: str) -> Tensor:
    """-logp[target] per element with weights and ignored targets; class dim is 1 (0 if 1-D)."""
    return K.NllLoss.apply(logp, target, weight, ignore_index=ignore_index, reduction=reduction)


def nll_loss(input: Tensor, target: Tensor, weight: Tensor | None = None, size_average: bool | None = None,
             ignore_index: int = -100, reduce: bool | None = None, reduction: str = "mean") -> Tensor:
    """Negative log-likelihood of class indices given log-probabilities (N, C, *d)."""
    reduction = _reduction(size_average, reduce, reduction)
    _class_target(input, target)
    _check_class_weight(input, weight)
    return _nll(input, target, weight, ignore_index, reduction)


def _plain_xent(input: Tensor, weight: Tensor | None, reduction: str, label_smoothing: float) -> bool:
    """Whether cross-entropy takes the one fused node: float (N, C) logits with N >= 1, no weight or
    smoothing, a mean or a sum. Only shapes and arguments decide (never target values), so a step
    replayed by lightgrad.compile takes the same path for every batch."""
    return (input.ndim == 2 and input.shape[0] > 0 and weight is None and label_smoothing == 0
            and reduction != "none" and input._arr.dtype.kind == "f")


def cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None, size_average: bool | None = None,
                  ignore_index: int = -100, reduce: bool | None = None, reduction: str = "mean",
                  label_smoothing: float = 0.0) -> Tensor:
    """log_softmax over the class dim (1, or 0 for 1-D input) then NLL; ``target`` holds class
    indices (N, *d) or class probabilities shaped like ``input``.

    >>> F.cross_entropy(lightgrad.randn(4, 10), lightgrad.tensor([1, 0, 9, 3]))
    """
    reduction = _reduction(size_average, reduce, reduction)
    if not 0.0 <= label_smoothing <= 1.0:
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    _check_class_weight(input, weight)
    cdim = 1 if input.ndim > 1 else 0
    c = input.shape[cdim]
    if target.shape == input.shape:  # class probabilities (as PyTorch, told apart by shape alone)
        if target._arr.dtype.kind != "f":
            raise RuntimeError("Expected floating point type for target with class probabilities, got "
                               f"{_SCALAR_TYPE[target.dtype.name]}")
        logp = input.log_softmax(cdim)
        tgt = target * (1 - label_smoothing) + label_smoothing / c if label_smoothing > 0 else target
        prod = logp * tgt
        if weight is not None:
            prod = prod * weight.reshape((c,) + (1,) * (input.ndim - cdim - 1))
        if reduction == "none":
            return -prod.sum(cdim)
        total = -prod.sum()
        return total if reduction == "sum" else total / (input.numel() // c if c else float("nan"))
    t = _class_target(input, target)
    if _plain_xent(input, weight, reduction, label_smoothing):
        return K.CrossEntropy.apply(input, target, ignore_index=ignore_index, mean=reduction == "mean")
    logp = input.log_softmax(cdim)
    nll = _nll(logp, target, weight, ignore_index, reduction)
    if label_smoothing == 0:
        return nll
    # the smoothing term: -sum_c w_c logp_c / C per element, ignored targets excluded
    wl = logp * weight.reshape((c,) + (1,) * (input.ndim - cdim - 1)) if weight is not None else logp
    ignore = t == ignore_index
    smooth = -wl.sum(cdim)
    if ignore.any():
        smooth = smooth.masked_fill(Tensor._make(ignore), 0.0)
    if reduction == "mean":
        if weight is not None:
            smooth = smooth.sum() / float(weight._data[t[~ignore]].sum())
        else:
            smooth = smooth.sum() / float((~ignore).sum())
    elif reduction == "sum":
        smooth = smooth.sum()
    return nll * (1 - label_smoothing) + smooth * (label_smoothing / c)


def binary_cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None,
                         size_average: bool | None = None, reduce: bool | None = None,
                         reduction: str = "mean") -> Tensor:
    """-(t log x + (1 - t) log(1 - x)) for probabilities x; each log is clamped at -100, as PyTorch."""
    reduction = _reduction(size_average, reduce, reduction)
    if target.shape != input.shape:
        raise ValueError(f"Using a target size ({target.shape}) that is different to the input size "
                         f"({input.shape}) is deprecated. Please ensure they have the same size.")
    x = input._data
    if x.size and (x.min() < 0 or x.max() > 1):
        raise RuntimeError("all elements of input should be between 0 and 1")
    loss = K.BinaryCrossEntropy.apply(input, target.to(input.dtype))
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def binary_cross_entropy_with_logits(input: Tensor, target: Tensor, weight: Tensor | None = None,
                                     size_average: bool | None = None, reduce: bool | None = None,
                                     reduction: str = "mean", pos_weight: Tensor | None = None) -> Tensor:
    """Sigmoid + binary cross-entropy in one stable formula (finite for logits of any size)."""
    reduction = _reduction(size_average, reduce, reduction)
    if target.shape != input.shape:
        raise ValueError(f"Target size ({target.shape}) must be the same as input size ({input.shape})")
    # -log(sigmoid(x)) as one stable node: its gradient -sigmoid(-x) is exact at x = 0 (relu(-x) +
    # log1p(exp(-|x|)) gave 0 there, so the input gradient was 1 - t instead of sigmoid(0) - t)
    log_sig_neg = -logsigmoid(input)
    if pos_weight is not None:
        loss = (1 - target) * input + ((pos_weight - 1) * target + 1) * log_sig_neg
    else:
        loss = (1 - target) * input + log_sig_neg
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def kl_div(input: Tensor, target: Tensor, size_average: bool | None = None, reduce: bool | None = None,
           reduction: str = "mean", log_target: bool = False) -> Tensor:
    """target * (log target - input) with ``input`` log-probabilities; 'batchmean' divides the sum
    by the batch size (the KL divergence proper)."""
    if reduction == "batchmean":
        red = "batchmean"
    else:
        red = _reduction(size_average, reduce, reduction)
        if red == "mean":
            warnings.warn("reduction: 'mean' divides the total loss by both the batch size and the support size."
                          "'batchmean' divides only by the batch size, and aligns with the KL div math definition."
                          "'mean' will be changed to behave the same as 'batchmean' in the next major release.",
                          stacklevel=2)
    if log_target:
        loss = target.exp() * (target - input)
    else:
        pos = target > 0
        # xlogy(t, t): 0 where t == 0 (log is taken of 1 there, so no -inf enters the graph)
        loss = target * (where(pos, target, 1.0).log() - input)
    if red == "batchmean":
        return loss.sum() / input.shape[0] if input.ndim else loss.sum()
    return _reduce(loss, red)


# ---- margins and embeddings --------------------------------------------------------------------

def cosine_embedding_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0,
                          size_average: bool | None = None, reduce: bool | None = None,
                          reduction: str = "mean") -> Tensor:
    """1 - cos(x1, x2) where target is 1, max(0, cos - margin) where it is -1."""
    reduction = _reduction(size_average, reduce, reduction)
    if target.ndim not in (0, 1) or input1.ndim != target.ndim + 1 or input2.ndim != input1.ndim:
        raise RuntimeError(f"0D or 1D target tensor expected, multi-target not supported; got inputs "
                           f"{list(input1.shape)}, {list(input2.shape)} and target {list(target.shape)}")
    eps = 1e-12
    prod = (input1 * input2).sum(-1)
    m1 = (input1 * input1).sum(-1) + eps
    m2 = (input2 * input2).sum(-1) + eps
    cos = prod / (m1 * m2).sqrt()
    zero = cos * 0
    loss = where(target == 1, 1 - cos, zero) + where(target == -1, (cos - margin).clamp(min=0), zero)
    return _reduce(loss, reduction)


def margin_ranking_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0,
                        size_average: bool | None = None, reduce: bool | None = None,
                        reduction: str = "mean") -> Tensor:
    """max(0, -target * (x1 - x2) + margin)."""
    reduction = _reduction(size_average, reduce, reduction)
    if not input1.ndim == input2.ndim == target.ndim:
        raise RuntimeError(f"margin_ranking_loss : All input tensors should have same dimension but got sizes: "
                           f"input1: {input1.shape}, input2: {input2.shape}, target: {target.shape} ")
    return _reduce((-target * (input1 - input2) + margin).clamp(min=0), reduction)


def hinge_embedding_loss(input: Tensor, target: Tensor, margin: float = 1.0, size_average: bool | None = None,
                         reduce: bool | None = None, reduction: str = "mean") -> Tensor:
    """x where target is 1, max(0, margin - x) where target is -1."""
    reduction = _reduction(size_average, reduce, reduction)
    zero = input * 0
    loss = where(target != 1, (margin - input).clamp(min=0), zero) + where(target != -1, input, zero)
    return _reduce(loss, reduction)


def soft_margin_loss(input: Tensor, target: Tensor, size_average: bool | None = None,
                     reduce: bool | None = None, reduction: str = "mean") -> Tensor:
    """log(1 + exp(-target * x)), computed stably."""
    reduction = _reduction(size_average, reduce, reduction)
    return _reduce(softplus(-target * input), reduction)


def _check_margin_target(name: str, input: Tensor, target: Tensor) -> tuple[Tensor, Tensor, B.ndarray]:
    """(N, C) scores and (N,) class indices for multi_margin_loss; 1-D input is one sample."""
    if input.ndim not in (1, 2) or input.numel() == 0 and input.ndim == 1:
        raise RuntimeError(f"Expected non-empty vector or matrix with optional 0-dim batch size, but got: "
                           f"{list(input.shape)}")
    x = input if input.ndim == 2 else input.unsqueeze(0)
    t = target._data.reshape(-1) if target.ndim <= 1 else target._data
    if t.ndim != 1 or t.shape[0] != x.shape[0]:
        raise RuntimeError(f"{name}: target tensor should be 1-D with size equal to the number of input samples "
                           f"(batch size). Expected target size [{x.shape[0]}], but got {list(target.shape)}. "
                           f"Input has shape {list(input.shape)}.")
    if t.size and (t.min() < 0 or t.max() >= x.shape[1]):
        raise RuntimeError("target out of range")
    return x, target, t.astype(B.xp.int64)


def multi_margin_loss(input: Tensor, target: Tensor, p: int = 1, margin: float = 1.0, weight: Tensor | None = None,
                      size_average: bool | None = None, reduce: bool | None = None,
                      reduction: str = "mean") -> Tensor:
    """Multi-class hinge: sum over j != y of max(0, margin - x[y] + x[j])^p (times weight[y]) / C.

    >>> F.multi_margin_loss(lightgrad.tensor([[0.1, 0.2, 0.4, 0.8]]), lightgrad.tensor([3]))
    tensor(0.3250)
    """
    reduction = _reduction(size_average, reduce, reduction)
    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    if weight is not None and weight.ndim != 1:
        raise ValueError("weight must be one-dimensional")
    x, _, t = _check_margin_target("multi_margin_loss", input, target)
    c = x.shape[1]
    if weight is not None and weight.numel() != c:
        raise RuntimeError(f"inconsistent weight size, expected {c} but got {list(weight.shape)}")
    tix = Tensor._make(t[:, None])
    z = (x - x.gather(1, tix) + margin).clamp(min=0)  # (N, C)
    if p == 2:
        z = z * z
    if weight is not None:
        z = z * weight[Tensor._make(t)].unsqueeze(1)
    other = Tensor._make(B.arange(c)[None, :] != t[:, None])
    loss = where(other, z, 0.0).sum(1) / c
    if input.ndim == 1 and reduction == "none":
        loss = loss.squeeze(0)
    return _reduce(loss, reduction)


def multilabel_margin_loss(input: Tensor, target: Tensor, size_average: bool | None = None,
                           reduce: bool | None = None, reduction: str = "mean") -> Tensor:
    """Multi-label hinge: sum over target classes j and non-target k of max(0, 1 - (x[j] - x[k])) / C;
    each target row lists class indices and ends at the first -1.

    >>> F.multilabel_margin_loss(lightgrad.tensor([[0.1, 0.2, 0.4, 0.8]]), lightgrad.tensor([[3, 0, -1, 1]]))
    tensor(0.8500)
    """
    reduction = _reduction(size_average, reduce, reduction)
    if input.ndim not in (0, 1, 2) or input.ndim == 2 and input.shape[1] == 0:
        raise RuntimeError(f"Expected non-empty vector or matrix with optional 0-dim batch size, but got: "
                           f"{list(input.shape)}")
    if target.shape != input.shape:
        raise RuntimeError(f"inconsistent target size: {list(target.shape)} for input of size: "
                           f"{list(input.shape)}")
    x = input.reshape(1, -1) if input.ndim < 2 else input
    t = target._data.reshape(x.shape).astype(B.xp.int64)
    n, c = x.shape
    if t.size and (t.min() < -1 or t.max() >= c):
        raise RuntimeError("argument #2 'target' is out of range")
    # valid[i, j]: target slot j is before row i's first -1
    valid = B.cumprod(t != -1, axis=1).astype(bool)
    safe = B.xp.where(valid, t, 0)
    is_target = B.xp.zeros((n, c), bool)
    rows = B.broadcast_to(B.arange(n)[:, None], t.shape)
    is_target[rows[valid], safe[valid]] = True
    xt = x.gather(1, Tensor._make(safe))  # (N, C): the score of each listed target
    hinge = (1 - xt.unsqueeze(2) + x.unsqueeze(1)).clamp(min=0)  # (N, slot, class)
    mask = Tensor._make(valid[:, :, None] & ~is_target[:, None, :])
    loss = where(mask, hinge, 0.0).sum((1, 2)) / c
    if input.ndim < 2 and reduction == "none":
        loss = loss.reshape(())
    return _reduce(loss, reduction)


def multilabel_soft_margin_loss(input: Tensor, target: Tensor, weight: Tensor | None = None,
                                size_average: bool | None = None, reduce: bool | None = None,
                                reduction: str = "mean") -> Tensor:
    """Per-class logistic loss averaged over the C classes (last dim).

    >>> F.multilabel_soft_margin_loss(lightgrad.zeros(1, 2), lightgrad.ones(1, 2))
    tensor(0.6931)
    """
    reduction = _reduction(size_average, reduce, reduction)
    loss = -(target * logsigmoid(input) + (1 - target) * logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    cdim = input.ndim - 1
    loss = loss.sum(cdim) / input.shape[cdim]
    return _reduce(loss, reduction)


def triplet_margin_loss(anchor: Tensor, positive: Tensor, negative: Tensor, margin: float = 1.0, p: float = 2,
                        eps: float = 1e-6, swap: bool = False, size_average: bool | None = None,
                        reduce: bool | None = None, reduction: str = "mean") -> Tensor:
    """max(d(a, p) - d(a, n) + margin, 0) with pairwise p-norm distances."""
    reduction = _reduction(size_average, reduce, reduction)
    if not anchor.ndim == positive.ndim == negative.ndim:
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have the same number of "
                           f"dimensions, but got: anchor {anchor.ndim}D, positive {positive.ndim}D, and negative "
                           f"{negative.ndim}D inputs")
    d_pos = pairwise_distance(anchor, positive, p, eps)
    d_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_neg = d_neg.minimum(pairwise_distance(positive, negative, p, eps))
    return _reduce((d_pos - d_neg + margin).clamp(min=0), reduction)


def triplet_margin_with_distance_loss(anchor: Tensor, positive: Tensor, negative: Tensor, *,
                                      distance_function: Callable[[Tensor, Tensor], Tensor] | None = None,
                                      margin: float = 1.0, swap: bool = False, reduction: str = "mean") -> Tensor:
    """max(d(a, p) - d(a, n) + margin, 0) with any distance function (pairwise_distance by default).

    >>> F.triplet_margin_with_distance_loss(lightgrad.zeros(1, 2), lightgrad.zeros(1, 2), lightgrad.ones(1, 2))
    tensor(0.)
    """
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if not anchor.ndim == positive.ndim == negative.ndim:
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have the same number of "
                           f"dimensions, but got: anchor {anchor.ndim}D, positive {positive.ndim}D, and negative "
                           f"{negative.ndim}D inputs")
    dist = distance_function if distance_function is not None else pairwise_distance
    d_pos = dist(anchor, positive)
    d_neg = dist(anchor, negative)
    if swap:
        d_neg = d_neg.minimum(dist(positive, negative))
    return _reduce((d_pos - d_neg + margin).clamp(min=0), reduction)


# ---- sequences (connectionist temporal classification) -----------------------------------------

def _lengths(v: Any, name: str) -> B.ndarray:
    arr = B.asarray(v._data if isinstance(v, Tensor) else v)
    if arr.dtype.kind not in "iu":
        raise RuntimeError(f"{name} must be integral, got dtype {arr.dtype}")
    return arr.reshape(-1).astype(B.xp.int64)


def ctc_loss(log_probs: Tensor, targets: Tensor, input_lengths: Any, target_lengths: Any, blank: int = 0,
             reduction: str = "mean", zero_infinity: bool = False) -> Tensor:
    """Connectionist temporal classification loss of (T, N, C) or (T, C) log-probabilities against
    padded (N, S) or concatenated targets, by the forward (alpha) recursion in log space."""
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if log_probs.ndim not in (2, 3):
        raise RuntimeError(f"ctc_loss: expected log_probs to be 2-D (T, C) or 3-D (T, N, C), got {log_probs.ndim}-D")
    batched = log_probs.ndim == 3
    lp = log_probs if batched else log_probs.unsqueeze(1)  # (T, N, C)
    t_max, n, c = lp.shape
    in_len, tgt_len = _lengths(input_lengths, "input_lengths"), _lengths(target_lengths, "target_lengths")
    if not 0 <= blank < c:
        raise RuntimeError("blank must be in label range")
    if len(in_len) != n:
        raise RuntimeError(f"input_lengths must be of size batch_size, expected {n}, got {len(in_len)}")
    if len(tgt_len) != n:
        raise RuntimeError(f"target_lengths must be of size batch_size, expected {n}, got {len(tgt_len)}")
    if (in_len > t_max).any() or (in_len < 0).any():
        raise RuntimeError(f"Expected input_lengths to have value at most {t_max}, but got value "
                           f"{int(in_len.max())}")
    tg = targets._data if isinstance(targets, Tensor) else B.asarray(targets)
    if tg.ndim == 2:
        if (tgt_len > tg.shape[1]).any():
            raise RuntimeError(f"Expected tensor to have size at least {int(tgt_len.max())} at dimension 1, "
                               f"but got size {tg.shape[1]} for argument #2 'targets'")
        rows = [tg[i, :tgt_len[i]] for i in range(n)]
    else:
        if tg.size < tgt_len.sum():
            raise RuntimeError(f"Expected tensor to have size at least {int(tgt_len.sum())} at dimension 0, "
                               f"but got size {tg.size} for argument #2 'targets'")
        offsets = B.concatenate([[0], B.cumsum(tgt_len)])
        rows = [tg.reshape(-1)[offsets[i]:offsets[i + 1]] for i in range(n)]
    # extended labels: blank, l1, blank, l2, ..., blank; padded with blanks to a common length L
    s_max = int(tgt_len.max()) if n else 0
    ext_len = 2 * s_max + 1
    ext = B.full((n, ext_len), blank, B.xp.int64)
    skip = B.xp.zeros((n, ext_len), bool)  # may alpha[s] come from alpha[s - 2]?
    for i, row in enumerate(rows):
        ext[i, 1:2 * len(row):2] = row
        s = B.arange(3, 2 * len(row), 2)
        skip[i, s] = ext[i, s] != ext[i, s - 2]
    # a finite stand-in for log(0): -inf would give nan gradients in logsumexp
    neg = -1e30 if lp._arr.dtype != B.xp.float16 else -6e4
    emit = lp.gather(2, Tensor._make(B.broadcast_to(ext, (t_max, n, ext_len)).copy()))  # (T, N, L)
    start = B.full((n, ext_len), neg)
    start[:, :2] = 0.0
    start[tgt_len == 0, 1] = neg
    alpha = emit[0] + _const(start, lp)
    pad1, pad2 = _const(B.full((n, 1), neg), lp), _const(B.full((n, 2), neg), lp)
    no_skip = _const(B.xp.where(skip, 0.0, neg), lp)
    for t in range(1, t_max):
        s1 = cat([pad1, alpha[:, :-1]], 1)
        s2 = cat([pad2, alpha[:, :-2]], 1) + no_skip if ext_len > 2 else no_skip
        new = emit[t] + _stack3(alpha, s1, s2).logsumexp(0)  # (N, L)
        alpha = where(_const((t < in_len)[:, None], lp).bool(), new, alpha)  # finished sequences stay
    last = Tensor._make(B.stack([2 * tgt_len, B.xp.maximum(2 * tgt_len - 1, 0)], 1))
    ends = alpha.gather(1, last)  # (N, 2)
    end_mask = _const(B.xp.where(tgt_len[:, None] > 0, 0.0, B.array([[0.0, neg]])), lp)
    nll = -(ends + end_mask).logsumexp(1)
    feasible = (nll._data < -neg / 2) & (in_len > 0) | ((in_len == 0) & (tgt_len == 0))
    if (in_len == 0).any():  # nothing emitted: probability 1 for an empty target, 0 otherwise
        nll = where(_const(in_len == 0, lp).bool(), 0.0, nll)
    infeasible = Tensor._make(~feasible)
    nll = where(infeasible, 0.0 if zero_infinity else math.inf, nll)
    if reduction == "mean":
        nll = (nll / _const(B.xp.maximum(tgt_len, 1), lp)).mean()
    elif reduction == "sum":
        nll = nll.sum()
    elif not batched:
        nll = nll.squeeze(0)
    return nll


def _stack3(a: Tensor, b: Tensor, c: Tensor) -> Tensor:
    return stack([a, b, c], 0)
