"""Functional forms of the layers, activations and losses, as ``torch.nn.functional``.

Everything here is composed from Tensor ops, so gradients come for free; formulas are written
in their numerically stable forms (no ``exp`` of a large argument is ever taken, even in a branch
that ``where`` discards, because its gradient would be ``0 * inf = nan``).

>>> F.cross_entropy(lightgrad.tensor([[2.0, 0.5]]), lightgrad.tensor([0]))
tensor(0.2014)
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .. import backend as B
from .. import dtypes as D
from .. import function as Fn
from . import _kernels as K
from ..grad_mode import is_grad_enabled, no_grad
from ..random import _gen
from ..tensor import _SCALAR_TYPE, Tensor, _dim, where

_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def _const(arr: Any, like: Tensor) -> Tensor:
    """A constant (no-grad) tensor in ``like``'s dtype."""
    return Tensor._make(np.asarray(arr, like._arr.dtype))


def _inplace(x: Tensor, inplace: bool, f: Callable[[Tensor], Tensor]) -> Tensor:
    """``f(x)``, or with ``inplace`` its result written into x (PyTorch's ``relu_`` and friends)."""
    return x._inplace(f) if inplace else f(x)


# ---- activations -------------------------------------------------------------------------------

def relu(input: Tensor, inplace: bool = False) -> Tensor:
    """max(x, 0): ``F.relu(x)``."""
    return input.relu_() if inplace else input.relu()


def relu_(input: Tensor) -> Tensor:
    return input.relu_()


def hardtanh(input: Tensor, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False) -> Tensor:
    """x clipped to [min_val, max_val]; the gradient is 1 strictly inside, as in PyTorch."""
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    return _inplace(input, inplace, lambda x: _hardtanh(x, min_val, max_val))


def _hardtanh(x: Tensor, lo: float, hi: float) -> Tensor:
    # where, not clamp: the gradient is 0 at the bounds themselves (relu6'(0) = 0, as in PyTorch;
    # exact zeros are common after a ReLU)
    return where((x > lo) & (x < hi), x, x.detach().clamp(lo, hi))


def hardtanh_(input: Tensor, min_val: float = -1.0, max_val: float = 1.0) -> Tensor:
    return hardtanh(input, min_val, max_val, True)


def relu6(input: Tensor, inplace: bool = False) -> Tensor:
    """min(max(x, 0), 6)."""
    return hardtanh(input, 0.0, 6.0, inplace)


def leaky_relu(input: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    """x for x > 0, else negative_slope * x."""
    return _inplace(input, inplace, lambda x: where(x > 0, x, x * negative_slope))


def leaky_relu_(input: Tensor, negative_slope: float = 0.01) -> Tensor:
    return leaky_relu(input, negative_slope, True)


def elu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """x for x > 0, else alpha * (exp(x) - 1)."""
    # expm1 of min(x, 0): the discarded branch never overflows
    return _inplace(input, inplace, lambda x: where(x > 0, x, x.clamp(max=0).expm1() * alpha))


def elu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    return elu(input, alpha, True)


def celu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """max(0, x) + min(0, alpha * (exp(x / alpha) - 1))."""
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError: alpha cannot be 0 for CELU")
    return _inplace(input, inplace, lambda x: where(x > 0, x, (x.clamp(max=0) / alpha).expm1() * alpha))


def selu(input: Tensor, inplace: bool = False) -> Tensor:
    """scale * elu(x, alpha) with the self-normalising constants."""
    return _inplace(input, inplace,
                    lambda x: where(x > 0, x * _SELU_SCALE, x.clamp(max=0).expm1() * (_SELU_ALPHA * _SELU_SCALE)))


def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    """x * Phi(x), exactly via erf ('none') or with the tanh approximation ('tanh')."""
    if approximate not in ("none", "tanh"):
        raise RuntimeError("approximate argument must be either none or tanh.")
    if input._arr.dtype.kind != "f":
        raise NotImplementedError(f'"GeluKernelImpl" not implemented for {input.dtype}')
    # one fused node; the derivative is computed alongside the output only when it will be used
    return K.Gelu.apply(input, approximate=approximate, deriv=input.requires_grad and is_grad_enabled())


def silu(input: Tensor, inplace: bool = False) -> Tensor:
    """x * sigmoid(x) (swish)."""
    return _inplace(input, inplace, lambda x: x * x.sigmoid())


def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """log(1 + exp(beta * x)) / beta, and x itself where beta * x > threshold.

    >>> F.softplus(lightgrad.tensor([0.0]))
    tensor([0.6931])
    """
    return Fn.Softplus.apply(input, beta, threshold)


def mish(input: Tensor, inplace: bool = False) -> Tensor:
    """x * tanh(softplus(x))."""
    return _inplace(input, inplace, lambda x: x * softplus(x).tanh())


def sigmoid(input: Tensor) -> Tensor:
    return input.sigmoid()


def tanh(input: Tensor) -> Tensor:
    return input.tanh()


def hardsigmoid(input: Tensor, inplace: bool = False) -> Tensor:
    """relu6(x + 3) / 6."""
    return _inplace(input, inplace, lambda x: _hardtanh(x + 3, 0.0, 6.0) / 6)


def hardswish(input: Tensor, inplace: bool = False) -> Tensor:
    """x * relu6(x + 3) / 6."""
    return _inplace(input, inplace, lambda x: x * _hardtanh(x + 3, 0.0, 6.0) / 6)


def softsign(input: Tensor) -> Tensor:
    """x / (1 + |x|)."""
    return input / (input.abs() + 1)


def logsigmoid(input: Tensor) -> Tensor:
    """log(sigmoid(x)), finite for any x; its gradient sigmoid(-x) is exact at 0."""
    return Fn.LogSigmoid.apply(input)


def tanhshrink(input: Tensor) -> Tensor:
    """x - tanh(x)."""
    return input - input.tanh()


def softshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """x - lambd above lambd, x + lambd below -lambd, else 0."""
    if lambd < 0:
        raise RuntimeError(f"lambda must be greater or equal to 0, but found to be {lambd}.")
    return where(input > lambd, input - lambd, where(input < -lambd, input + lambd, 0.0))


def hardshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """x where |x| > lambd, else 0."""
    return where((input > lambd) | (input < -lambd), input, 0.0)


def threshold(input: Tensor, threshold: float, value: float, inplace: bool = False) -> Tensor:
    """x where x > threshold, else value."""
    return _inplace(input, inplace, lambda x: where(x > threshold, x, float(value)))


def threshold_(input: Tensor, threshold: float, value: float) -> Tensor:
    return globals()["threshold"](input, threshold, value, True)


def glu(input: Tensor, dim: int = -1) -> Tensor:
    """a * sigmoid(b), where a and b are the two halves of ``input`` along ``dim``."""
    if input.ndim == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    d = _dim(dim, input.ndim)
    if input.shape[d] % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {d} is size {input.shape[d]}")
    a, b = input.chunk(2, d)
    return a * b.sigmoid()


def prelu(input: Tensor, weight: Tensor) -> Tensor:
    """x for x > 0, else weight * x; a weight of several values applies per channel (dim 1)."""
    w = weight
    if weight.numel() > 1:
        if input.ndim < 2 or input.shape[1] != weight.numel():
            c = input.shape[1] if input.ndim >= 2 else 1
            raise RuntimeError(f"Mismatch of parameter numbers and input channel size. Found parameter numbers = "
                               f"{weight.numel()} and channel size = {c}.")
        w = weight.reshape((1, -1) + (1,) * (input.ndim - 2))
    return where(input > 0, input, input * w)


def rrelu(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False,
          inplace: bool = False) -> Tensor:
    """Leaky ReLU with a random slope in [lower, upper] per element when training, else the mean."""
    if not training:
        return leaky_relu(input, (lower + upper) / 2, inplace)
    slope = _const(_gen(None).uniform(lower, upper, input.shape), input)
    return _inplace(input, inplace, lambda x: where(x >= 0, x, x * slope))


def _softmax_dim(name: str, ndim: int) -> int:
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call to include "
                  "dim=X as an argument.", stacklevel=3)
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype: Any = None) -> Tensor:
    """exp(x) / sum(exp(x)) along ``dim``, computed stably."""
    if dim is None:
        dim = _softmax_dim("softmax", input.ndim)
    return input.softmax(dim, dtype=dtype)


def log_softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype: Any = None) -> Tensor:
    """x - logsumexp(x) along ``dim``, finite for logits of any size."""
    if dim is None:
        dim = _softmax_dim("log_softmax", input.ndim)
    return input.log_softmax(dim, dtype=dtype)


def softmin(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype: Any = None) -> Tensor:
    """softmax(-x) along ``dim``."""
    if dim is None:
        dim = _softmax_dim("softmin", input.ndim)
    return (-input).softmax(dim, dtype=dtype)


# ---- linear ------------------------------------------------------------------------------------

def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """x @ weight.T + bias, with weight of shape (out_features, in_features)."""
    if weight.ndim == 2 and input.ndim >= 1 and input.shape[-1] == weight.shape[1] and \
            input._arr.dtype == weight._arr.dtype and (bias is None or bias._arr.dtype == weight._arr.dtype):
        if bias is not None and tuple(bias.shape) not in ((weight.shape[0],), (1,), ()):
            raise RuntimeError(f"linear: bias of shape {list(bias.shape)} does not match out_features "
                               f"{weight.shape[0]}")
        return K.Linear.apply(input, weight, bias)
    _check_linear_dtypes(input, weight, bias)
    if input.ndim > 2 and weight.ndim == 2:
        # one (B*T, in) x (in, out) product: the weight gradient is one GEMM, not a batch of them
        lead = input.shape[:-1]
        out = input.reshape(-1, input.shape[-1]).matmul(weight.T).reshape(lead + (weight.shape[0],))
    else:
        out = input.matmul(weight.T) if weight.ndim == 2 else input.matmul(weight)
    return out + bias if bias is not None else out


# C++'s names of the dtypes, as the error of PyTorch's matrix product without a bias says them
_CPP_TYPE = D.CPP_NAMES


def _check_linear_dtypes(input: Tensor, weight: Tensor, bias: Tensor | None) -> None:
    """PyTorch's errors for operands of different dtypes (it promotes none): addmm's words with a
    bias (checked before the sizes), mm's without (after them: matmul says a size mismatch)."""
    x, w = input.dtype.name, weight.dtype.name
    if bias is not None:
        if bias.dtype.name != w:
            raise RuntimeError(f"self and mat2 must have the same dtype, but got {_SCALAR_TYPE[bias.dtype.name]} and "
                               f"{_SCALAR_TYPE[w]}")
        if x != w:
            raise RuntimeError(f"mat1 and mat2 must have the same dtype, but got {_SCALAR_TYPE[x]} and {_SCALAR_TYPE[w]}")
    elif x != w and input.ndim and input.shape[-1] == weight.shape[-1]:
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: {_CPP_TYPE[x]} != {_CPP_TYPE[w]}")


def bilinear(input1: Tensor, input2: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """y_o = x1 A_o x2 + b_o with weight (out, in1, in2)."""
    if weight.ndim != 3:
        raise RuntimeError(f"bilinear(): weight must be three-dimensional, but got {weight.ndim} dimension(s)")
    if input1.shape[-1] != weight.shape[1]:
        raise RuntimeError(f"bilinear(): input1 size does not match weight size: got {input1.shape[-1]} but "
                           f"expected {weight.shape[1]}")
    if input2.shape[-1] != weight.shape[2]:
        raise RuntimeError(f"bilinear(): input2 size does not match weight size: got {input2.shape[-1]} but "
                           f"expected {weight.shape[2]}")
    if input1.shape[:-1] != input2.shape[:-1]:
        raise RuntimeError(f"bilinear(): input batch dimensions do not match: got {list(input1.shape[:-1])} "
                           f"and {list(input2.shape[:-1])}")
    from ..tensor import einsum
    out = einsum("...i,oij,...j->...o", input1, weight, input2)
    return out + bias if bias is not None else out


def embedding(input: Tensor, weight: Tensor, padding_idx: int | None = None, max_norm: float | None = None,
              norm_type: float = 2.0, scale_grad_by_freq: bool = False, sparse: bool = False) -> Tensor:
    """Rows of ``weight`` picked by integer ``input``: shape input.shape + (embedding_dim,).
    The ``padding_idx`` row receives no gradient."""
    n = weight.shape[0]
    if padding_idx is not None:
        if padding_idx >= n or padding_idx < -n:
            raise AssertionError("Padding_idx must be within num_embeddings")
        padding_idx = padding_idx % n
    idx = input._data if isinstance(input, Tensor) else np.asarray(input)
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
        counts = np.bincount(idx.reshape(-1), minlength=n)
        s = _const((1.0 / counts[idx])[..., None], weight)
        out = out * s + (out * (1 - s)).detach()
    if padding_idx is not None and weight.requires_grad:
        keep = Tensor._make(np.expand_dims(np.not_equal(idx, padding_idx), -1))
        out = where(keep, out, out.detach())
    return out


def _embedding_renorm(weight: Tensor, idx: np.ndarray, max_norm: float, norm_type: float) -> None:
    """Rescale, in place, the rows used by ``idx`` whose norm exceeds ``max_norm``."""
    rows = np.unique(idx)
    w = weight._data
    norms = np.linalg.norm(w[rows].astype(np.float64), ord=norm_type, axis=1)
    big = norms > max_norm
    if big.any():
        w[rows[big]] *= (max_norm / (norms[big] + 1e-7))[:, None].astype(w.dtype)
        weight._version[0] += 1


def _index_data(t: Any) -> np.ndarray:
    return t._data if isinstance(t, Tensor) else np.asarray(t)


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
        offs = np.arange(input.shape[0]) * input.shape[1]
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
        if (np.diff(offs) < 0).any():
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
    ar = np.arange(m)
    bag = np.searchsorted(offs[:nbags], ar, side="right") - 1  # each position's bag, positions sorted
    keep = (bag >= 0) & (ar < end)
    if padding_idx is not None:
        keep &= idx != padding_idx
    pos = np.nonzero(keep)[0]
    bag, rows = bag[pos], idx[pos]
    out = weight.new_zeros((nbags, weight.shape[1]))
    if not pos.size:  # (still a function of weight, so that backward reaches it with zeros)
        return out + weight[:0].sum()
    e = weight[Tensor._make(rows)]  # (K, D)
    if scale_grad_by_freq and weight.requires_grad:
        # forward unchanged, gradient of each row divided by how often it occurs in the input
        s = _const((1.0 / np.bincount(idx, minlength=n)[rows])[:, None], weight)
        e = e * s + (e * (1 - s)).detach()
    if mode == "max":
        # the first maximum of each bag and feature (PyTorch's tie rule) gets the gradient
        vals = weight._data[rows]
        bags, first = np.unique(bag, return_index=True)
        mx = np.maximum.reduceat(vals, first, axis=0)
        at = np.where(vals == mx[np.searchsorted(bags, bag)], ar[:pos.size, None], pos.size)
        arg = np.minimum.reduceat(at, first, axis=0)  # (bags hit, D) rows of e
        return out.index_add(0, Tensor._make(bags), e.gather(0, Tensor._make(arg)))
    if psw is not None:
        e = e * psw[Tensor._make(pos)].unsqueeze(1)
    out = out.index_add(0, Tensor._make(bag), e)
    if mode == "mean":
        out = out / _const(np.maximum(np.bincount(bag, minlength=nbags), 1)[:, None], weight)
    return out


def one_hot(tensor: Tensor, num_classes: int = -1) -> Tensor:
    """int64 one-hot encoding: shape tensor.shape + (num_classes,)."""
    a = tensor._data
    if a.dtype != np.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    if a.size and a.min() < 0:
        raise RuntimeError("Class values must be non-negative.")
    if num_classes == -1:
        if a.size == 0:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
        num_classes = int(a.max()) + 1
    elif a.size and a.max() >= num_classes:
        raise RuntimeError("Class values must be smaller than num_classes.")
    return Tensor._make((a[..., None] == np.arange(num_classes)).astype(np.int64))


# ---- dropout -----------------------------------------------------------------------------------

def _check_p(p: float) -> None:
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def _dropout_mask(input: Tensor, p: float, shape: tuple[int, ...]) -> Tensor:
    """Keep-mask scaled by 1 / (1 - p), drawn from the global generator."""
    dt = input._arr.dtype
    if p == 1:
        return Tensor._make(np.zeros(shape, dt))
    keep = _gen(None).random(shape, dtype=np.float64 if dt == np.float64 else np.float32) >= p
    return Tensor._make(np.multiply(keep, 1.0 / (1.0 - p), dtype=dt))


def dropout(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero each element with probability p while training, scaling the rest by 1 / (1 - p)."""
    _check_p(p)
    if not training or p == 0:
        return input
    mask = _dropout_mask(input, p, input.shape)
    return _inplace(input, inplace, lambda x: x * mask)


def _feature_dropout(input: Tensor, p: float, training: bool, inplace: bool, batched: bool) -> Tensor:
    """Dropout of whole channels: one draw per (sample, channel), broadcast over the rest."""
    _check_p(p)
    if not training or p == 0:
        return input
    keep = 2 if batched else 1
    shape = input.shape[:keep] + (1,) * (input.ndim - keep)
    mask = _dropout_mask(input, p, shape)
    return _inplace(input, inplace, lambda x: x * mask)


def dropout1d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Channel dropout for (N, C, L) or (C, L) inputs."""
    if input.ndim not in (2, 3):
        raise RuntimeError(f"dropout1d: Expected 2D or 3D input, but received a {input.ndim}D input. Note that "
                           "dropout1d exists to provide channel-wise dropout on inputs with 1 spatial dimension, a "
                           "channel dimension, and an optional batch dimension (i.e. 2D or 3D inputs).")
    return _feature_dropout(input, p, training, inplace, input.ndim == 3)


def dropout2d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Channel dropout for (N, C, H, W) inputs (3-D inputs are taken as (N, C, L), as PyTorch does)."""
    if input.ndim not in (3, 4):
        warnings.warn(f"dropout2d: Received a {input.ndim}-D input to dropout2d, which is deprecated and will "
                      "result in an error in a future release.", stacklevel=2)
    return _feature_dropout(input, p, training, inplace, input.ndim >= 2)


def dropout3d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Channel dropout for (N, C, D, H, W) or (C, D, H, W) inputs."""
    if input.ndim not in (4, 5):
        warnings.warn(f"dropout3d: Received a {input.ndim}-D input to dropout3d, which is deprecated and will "
                      "result in an error in a future release.", stacklevel=2)
    return _feature_dropout(input, p, training, inplace, input.ndim != 4)


def alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False, inplace: bool = False) -> Tensor:
    """Dropout that keeps SELU's self-normalising mean and variance."""
    _check_p(p)
    if not training or p == 0:
        return input
    if p == 1:
        return input * 0
    alpha = _SELU_ALPHA * _SELU_SCALE
    a = 1.0 / math.sqrt((alpha * alpha * p + 1) * (1 - p))
    keep = _gen(None).random(input.shape) >= p
    # dropped units are set to SELU's negative saturation, then an affine map restores mean 0, var 1
    mult = _const(keep * a, input)
    add = _const((keep - 1.0) * (alpha * a) + alpha * a * p, input)
    return _inplace(input, inplace, lambda x: x * mult + add)


# ---- normalization -----------------------------------------------------------------------------

def _bshape(c: int, ndim: int) -> tuple[int, ...]:
    """Shape that broadcasts a per-channel vector over (N, C, *)."""
    return (1, c) + (1,) * (ndim - 2)


def batch_norm(input: Tensor, running_mean: Tensor | None, running_var: Tensor | None,
               weight: Tensor | None = None, bias: Tensor | None = None, training: bool = False,
               momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """Normalise each channel (dim 1) by batch statistics when training (updating the running
    statistics in place), else by the running statistics."""
    if input.ndim < 2:
        raise ValueError(f"Expected 2D or more input (got {input.ndim}D input)")
    c = input.shape[1]
    n = input.numel() // c if c else 0
    if training and n <= 1:
        raise ValueError(f"Expected more than 1 value per channel when training, got input size {input.shape}")
    for name, t in (("running_mean", running_mean), ("running_var", running_var), ("weight", weight),
                    ("bias", bias)):
        if t is not None and t.numel() != c:
            raise RuntimeError(f"{name} should contain {c} elements not {t.numel()}")
    bs = _bshape(c, input.ndim)
    if training or running_mean is None or running_var is None:
        axes = (0,) + tuple(range(2, input.ndim))
        mean = input.mean(axes, keepdim=True)
        xc = input - mean
        var = (xc * xc).mean(axes, keepdim=True)
        if training and running_mean is not None and running_var is not None:
            with no_grad():
                _update_running(running_mean, mean._data, momentum)
                _update_running(running_var, B.multiply(var._data, n / (n - 1)), momentum)
        scale = (var + eps).rsqrt()
        if weight is not None:
            scale = scale * weight.reshape(bs)
        out = xc * scale  # (N, C, *): the per-channel factors are folded before touching the big tensor
    else:
        scale = (running_var.reshape(bs) + eps).rsqrt()
        if weight is not None:
            scale = scale * weight.reshape(bs)
        out = (input - running_mean.reshape(bs)) * scale
    return out + bias.reshape(bs) if bias is not None else out


def _update_running(stat: Tensor, batch: np.ndarray, momentum: float) -> None:
    """stat = (1 - momentum) * stat + momentum * batch, in place."""
    s = stat._data  # (through the backend, so that lightgrad.compile records the update)
    B.imul(s, 1 - momentum)
    B.iadd(s, B.cast(B.multiply(B.reshape(batch, s.shape), momentum), s.dtype))
    stat._version[0] += 1


def _check_normalized(input: Tensor, normalized_shape: Sequence[int]) -> tuple[int, ...]:
    ns = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    k = len(ns)
    if k == 0 or input.ndim < k or tuple(input.shape[-k:]) != ns:
        raise RuntimeError(f"Given normalized_shape={list(ns)}, expected input with shape "
                           f"[*, {', '.join(map(str, ns))}], but got input of size{list(input.shape)}")
    return tuple(range(input.ndim - k, input.ndim))


def layer_norm(input: Tensor, normalized_shape: Sequence[int], weight: Tensor | None = None,
               bias: Tensor | None = None, eps: float = 1e-5) -> Tensor:
    """Normalise over the trailing ``normalized_shape`` dims, then scale and shift."""
    axes = _check_normalized(input, normalized_shape)
    ns = tuple(input.shape[axes[0]:])
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and tuple(t.shape) != ns:
            raise RuntimeError(f"Expected {name} to be of same shape as normalized_shape, but got {name} of shape "
                               f"{list(t.shape)} and normalized_shape = {list(ns)}")
    if input._arr.dtype.kind != "f":
        raise RuntimeError(f"layer_norm expects a floating point input, got {input.dtype}")
    return K.LayerNorm.apply(input, weight, bias, k=len(axes), eps=eps)


def rms_norm(input: Tensor, normalized_shape: Sequence[int], weight: Tensor | None = None,
             eps: float | None = None) -> Tensor:
    """x / sqrt(mean(x^2) + eps) over the trailing dims, times weight."""
    axes = _check_normalized(input, normalized_shape)
    if eps is None:
        eps = float(np.finfo(input._arr.dtype).eps)
    out = input * ((input * input).mean(axes, keepdim=True) + eps).rsqrt()
    return out * weight if weight is not None else out


def group_norm(input: Tensor, num_groups: int, weight: Tensor | None = None, bias: Tensor | None = None,
               eps: float = 1e-5) -> Tensor:
    """Normalise each group of channels of each sample, then scale and shift per channel."""
    if input.ndim < 2 or input.shape[1] % num_groups:
        raise RuntimeError("Expected number of channels in input to be divisible by num_groups, but got input "
                           f"of shape {list(input.shape)} and num_groups={num_groups}")
    n, c = input.shape[:2]
    x = input.reshape(n, num_groups, -1)  # (N, G, C/G * spatial)
    mean = x.mean(-1, keepdim=True)
    xc = x - mean
    out = (xc * ((xc * xc).mean(-1, keepdim=True) + eps).rsqrt()).reshape(input.shape)
    bs = _bshape(c, input.ndim)
    if weight is not None:
        out = out * weight.reshape(bs)
    return out + bias.reshape(bs) if bias is not None else out


def instance_norm(input: Tensor, running_mean: Tensor | None = None, running_var: Tensor | None = None,
                  weight: Tensor | None = None, bias: Tensor | None = None, use_input_stats: bool = True,
                  momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """Normalise each channel of each sample over its spatial dims; with ``running_mean`` and
    ``running_var`` given, training (``use_input_stats``) updates them with the batch's average
    per-sample statistics, and evaluation normalises with them instead."""
    n, c = input.shape[:2]
    bs = _bshape(c, input.ndim)
    if not use_input_stats:
        if running_mean is None or running_var is None:
            raise ValueError("Expected running_mean and running_var to be defined when use_input_stats is false")
        out = (input - running_mean.reshape(bs)) / (running_var.reshape(bs) + eps).sqrt()
        if weight is not None:
            out = out * weight.reshape(bs)
        return out + bias.reshape(bs) if bias is not None else out
    if running_mean is not None or running_var is not None:
        with no_grad():
            axes = tuple(range(2, input.ndim))
            m = float(momentum)
            if running_mean is not None:
                running_mean._data[...] = (1 - m) * running_mean._data + m * input._data.mean(axes).mean(0)
                running_mean._version[0] += 1
            if running_var is not None:
                var = input._data.var(axes, ddof=1) if input[0, 0].numel() > 1 else np.full((n, c), np.nan)
                running_var._data[...] = (1 - m) * running_var._data + m * var.mean(0)
                running_var._version[0] += 1
    out = group_norm(input.reshape((1, n * c) + input.shape[2:]), n * c, eps=eps).reshape(input.shape)
    if weight is not None:
        out = out * weight.reshape(bs)
    return out + bias.reshape(bs) if bias is not None else out


def normalize(input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12, out: Any = None) -> Tensor:
    """x / max(||x||_p, eps) along ``dim``."""
    return input / input.norm(p, dim, keepdim=True).clamp(min=eps)


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


# ---- padding -----------------------------------------------------------------------------------

def pad(input: Tensor, pad: Sequence[int], mode: str = "constant", value: float | None = None) -> Tensor:
    """Pad the last len(pad)//2 dims; ``pad`` lists (left, right) for the last dim first.
    Modes: constant (``value``), reflect, replicate, circular; negative pads crop."""
    pads = [int(p) for p in pad]
    if len(pads) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    k = len(pads) // 2
    if k > input.ndim:
        raise RuntimeError(f"Padding length should be less than or equal to two times the input dimension but "
                           f"got padding length {len(pads)} and input of dimension {input.ndim}")
    pairs = [(pads[2 * i], pads[2 * i + 1]) for i in range(k)]  # pairs[i] pads dim -1 - i
    if mode == "constant":
        for i, (a, b) in enumerate(pairs):
            d = input.ndim - 1 - i
            if input.shape[d] + a + b < 0:
                raise RuntimeError(f"The input size {input.shape[d]}, plus negative padding {a} and {b} resulted in "
                                   f"a negative output size, which is invalid. Check dimension {d} of your input.")
        np_pads = ((0, 0),) * (input.ndim - k) + tuple(reversed(pairs))
        return Fn.Pad.apply(input, pads=np_pads, value=0 if value is None else value)
    if mode not in ("reflect", "replicate", "circular"):
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    if k == 0 or k > 3 or input.ndim not in (k + 1, k + 2):
        raise NotImplementedError(
            f"Padding size {len(pads)} is not supported for {input.ndim}D input tensor.\nSupported combinations for "
            "non-constant padding:\n  - 2D or 3D input: padding size = 2 (pads last dimension)\n  - 3D or 4D "
            "input: padding size = 4 (pads last 2 dimensions)\n  - 4D or 5D input: padding size = 6 (pads last 3 "
            "dimensions)")
    out = input
    for i, (a, b) in enumerate(pairs):
        d = input.ndim - 1 - i
        n = input.shape[d]
        if mode == "reflect" and (a >= n or b >= n):
            raise RuntimeError(f"Argument #4: Padding size should be less than the corresponding input dimension, "
                               f"but got: padding ({a}, {b}) at dimension {d} of input {list(input.shape)}")
        if mode == "circular" and (a > n or b > n):
            raise RuntimeError("Padding value causes wrapping around more than once.")
        pos = np.arange(-a, n + b)  # source position of every output position
        if mode == "reflect":
            idx = np.abs(pos)
            idx = np.where(idx > n - 1, 2 * (n - 1) - idx, idx)
        elif mode == "replicate":
            idx = np.clip(pos, 0, n - 1)
        else:
            idx = pos % n
        out = out.index_select(d, Tensor._make(idx))
    return out


# ---- losses ------------------------------------------------------------------------------------

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


def _class_target(input: Tensor, target: Tensor) -> np.ndarray:
    """Validate a class-index target against (N, C, *d) or (C,) scores, in PyTorch's order; returns
    it as int64."""
    t = target._data
    if input.ndim == 1:
        _check_target_dtype(target)
        if t.ndim != 0:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
        return t.astype(np.int64, copy=False)
    if t.ndim == 0 or t.shape[0] != input.shape[0]:
        got = t.shape[0] if t.ndim else 1
        raise ValueError(f"Expected input batch_size ({input.shape[0]}) to match target batch_size ({got}).")
    want = (input.shape[0],) + tuple(input.shape[2:])
    if t.shape != want:
        if input.ndim == 2:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
        raise RuntimeError(f"Expected target size {list(want)}, got {list(t.shape)}")
    _check_target_dtype(target)
    return t.astype(np.int64, copy=False)


def _check_target_dtype(target: Tensor) -> None:
    """Class indices are int64 or uint8 only, as PyTorch's NLL kernels take them (no int32)."""
    if target._arr.dtype not in (np.int64, np.uint8):
        raise RuntimeError(f"expected target dtype to be Long or Byte, but got {_SCALAR_TYPE[target.dtype.name]}")


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


def _check_class_weight(input: Tensor, weight: Tensor | None) -> None:
    c = input.shape[1 if input.ndim > 1 else 0]
    if weight is not None and (weight.ndim != 1 or weight.numel() != c):
        raise RuntimeError(f"weight tensor should be defined either for all {c} classes or no classes but got "
                           f"weight tensor of shape: {list(weight.shape)}")


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


def poisson_nll_loss(input: Tensor, target: Tensor, log_input: bool = True, full: bool = False,
                     size_average: bool | None = None, eps: float = 1e-8, reduce: bool | None = None,
                     reduction: str = "mean") -> Tensor:
    """exp(x) - t x for log-rates (or x - t log(x + eps) for rates), plus Stirling's term if ``full``."""
    reduction = _reduction(size_average, reduce, reduction)
    loss = input.exp() - target * input if log_input else input - target * (input + eps).log()
    if full:
        t = target._data
        safe = np.where(t > 1, t, 2.0)
        stirling = np.where(t > 1, safe * np.log(safe) - safe + 0.5 * np.log(2 * np.pi * safe), 0.0)
        loss = loss + _const(stirling, loss)
    return _reduce(loss, reduction)


from ._spatial import *  # noqa: E402, F401, F403


# ---- compat layers -----------------------------------------------------------------------------
# Layers PyTorch code commonly reaches for, all composed from Tensor ops (gradients come for free);
# the 3-D pools run as two 2-D pools, because max and box sums are separable across axes.

from ._spatial import _adaptive_avg, _batched, _tuple  # noqa: E402
from ._spatial import adaptive_max_pool1d as _adaptive_max_pool1d  # noqa: E402
from ._spatial import adaptive_max_pool2d as _adaptive_max_pool2d  # noqa: E402
from ._spatial import avg_pool2d as _avg_pool2d  # noqa: E402
from ._spatial import max_pool1d as _max_pool1d  # noqa: E402
from ._spatial import max_pool2d as _max_pool2d  # noqa: E402


def pixel_shuffle(input: Tensor, upscale_factor: int) -> Tensor:
    """(*, C r^2, H, W) -> (*, C, H r, W r).

    >>> F.pixel_shuffle(lightgrad.randn(1, 8, 3, 3), 2).shape
    lightgrad.Size([1, 2, 6, 6])
    """
    r = int(upscale_factor)
    if input.ndim < 3:
        raise RuntimeError(f"pixel_shuffle expects input to have at least 3 dimensions, but got input with "
                           f"{input.ndim} dimension(s)")
    if r <= 0:
        raise RuntimeError(f"pixel_shuffle expects a positive upscale_factor, but got {r}")
    *lead, c, h, w = input.shape
    if c % (r * r):
        raise RuntimeError(f"pixel_shuffle expects its input's 'channel' dimension to be divisible by the square of "
                           f"upscale_factor, but input.size(-3)={c} is not divisible by {r * r}")
    n = len(lead)
    x = input.reshape(*lead, c // (r * r), r, r, h, w)
    x = x.permute(*range(n), n, n + 3, n + 1, n + 4, n + 2)  # (*, C, H, r, W, r)
    return x.reshape(*lead, c // (r * r), h * r, w * r)


def pixel_unshuffle(input: Tensor, downscale_factor: int) -> Tensor:
    """(*, C, H r, W r) -> (*, C r^2, H, W), the inverse of pixel_shuffle.

    >>> F.pixel_unshuffle(lightgrad.randn(1, 2, 6, 6), 2).shape
    lightgrad.Size([1, 8, 3, 3])
    """
    r = int(downscale_factor)
    if input.ndim < 3:
        raise RuntimeError(f"pixel_unshuffle expects input to have at least 3 dimensions, but got input with "
                           f"{input.ndim} dimension(s)")
    if r <= 0:
        raise RuntimeError(f"pixel_unshuffle expects a positive downscale_factor, but got {r}")
    *lead, c, h, w = input.shape
    if h % r:
        raise RuntimeError(f"pixel_unshuffle expects height to be divisible by downscale_factor, but "
                           f"input.size(-2)={h} is not divisible by {r}")
    if w % r:
        raise RuntimeError(f"pixel_unshuffle expects width to be divisible by downscale_factor, but "
                           f"input.size(-1)={w} is not divisible by {r}")
    n = len(lead)
    x = input.reshape(*lead, c, h // r, r, w // r, r)
    x = x.permute(*range(n), n, n + 2, n + 4, n + 1, n + 3)  # (*, C, r, r, H, W)
    return x.reshape(*lead, c * r * r, h // r, w // r)


def channel_shuffle(input: Tensor, groups: int) -> Tensor:
    """Interleave the channels (dim 1) of ``groups`` groups: (N, g*k, *) viewed (N, g, k, *) -> (N, k, g, *).

    >>> F.channel_shuffle(lightgrad.arange(4.0).reshape(1, 4, 1), 2).flatten().tolist()
    [0.0, 2.0, 1.0, 3.0]
    """
    if input.ndim <= 2:
        raise RuntimeError(f"channel_shuffle expects input with > 2 dims, but got input with sizes "
                           f"{list(input.shape)}")
    if groups <= 0:
        raise RuntimeError(f"Number of groups to divide channels in must be positive. Value of groups:{groups}")
    n, c, *rest = input.shape
    if c % groups:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {c} channels and {groups} groups.")
    return input.reshape(n, groups, c // groups, *rest).transpose(1, 2).reshape(n, c, *rest)


native_channel_shuffle = channel_shuffle


def pdist(input: Tensor, p: float = 2) -> Tensor:
    """p-norm distances between all row pairs i < j of an (N, M) input, shape (N(N-1)/2,).

    >>> F.pdist(lightgrad.tensor([[0.0, 0.0], [3.0, 4.0]]))
    tensor([5.])
    """
    if input.ndim != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.ndim}D")
    if p < 0:
        raise RuntimeError("pdist only supports non-negative p values")
    i, j = np.triu_indices(input.shape[0], 1)
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


def local_response_norm(input: Tensor, size: int, alpha: float = 1e-4, beta: float = 0.75,
                        k: float = 1.0) -> Tensor:
    """x / (k + alpha * mean of x^2 over ``size`` neighbouring channels)^beta (zero-padded).

    >>> F.local_response_norm(lightgrad.ones(1, 4, 2, 2), 2).shape
    lightgrad.Size([1, 4, 2, 2])
    """
    if input.ndim < 3:
        raise ValueError(f"Expected 3D or higher dimensionality input (got {input.ndim} dimensions)")
    if input.numel() == 0:
        return input
    sq = input * input
    c = input.shape[1]
    padded = pad(sq.movedim(1, -1), (size // 2, (size - 1) // 2))  # channels last, zero-padded
    win = padded.narrow(-1, 0, c)
    for s in range(1, size):
        win = win + padded.narrow(-1, s, c)
    div = (win.movedim(-1, 1) * (alpha / size) + k) ** beta
    return input / div


def gumbel_softmax(logits: Tensor, tau: float = 1, hard: bool = False, eps: float = 1e-10,
                   dim: int = -1) -> Tensor:
    """softmax((logits + Gumbel noise) / tau); with ``hard`` a one-hot of its argmax whose gradient is
    the soft sample's (straight-through). The noise comes from lightgrad's global generator.

    >>> F.gumbel_softmax(lightgrad.zeros(2, 3), hard=True).sum(-1).tolist()
    [1.0, 1.0]
    """
    if eps != 1e-10:
        warnings.warn("`eps` parameter is deprecated and has no effect.", stacklevel=2)
    from ..tensor import empty_like, zeros_like
    gumbels = -empty_like(logits.detach()).exponential_().log()
    y_soft = ((logits + gumbels) / tau).softmax(dim)
    if not hard:
        return y_soft
    index = y_soft.detach().argmax(dim, keepdim=True)
    y_hard = zeros_like(logits.detach()).scatter(dim, index, 1.0)
    return y_hard - y_soft.detach() + y_soft


# ---- compat layers: losses

def _check_margin_target(name: str, input: Tensor, target: Tensor) -> tuple[Tensor, Tensor, np.ndarray]:
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
    return x, target, t.astype(np.int64)


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
    other = Tensor._make(np.arange(c)[None, :] != t[:, None])
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
    t = target._data.reshape(x.shape).astype(np.int64)
    n, c = x.shape
    if t.size and (t.min() < -1 or t.max() >= c):
        raise RuntimeError("argument #2 'target' is out of range")
    # valid[i, j]: target slot j is before row i's first -1
    valid = np.cumprod(t != -1, axis=1).astype(bool)
    safe = np.where(valid, t, 0)
    is_target = np.zeros((n, c), bool)
    rows = np.broadcast_to(np.arange(n)[:, None], t.shape)
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


def gaussian_nll_loss(input: Tensor, target: Tensor, var: Tensor | float, full: bool = False, eps: float = 1e-6,
                      reduction: str = "mean") -> Tensor:
    """0.5 (log var + (input - target)^2 / var) (+ 0.5 log 2 pi if ``full``); var is clamped at eps in value only.

    >>> F.gaussian_nll_loss(lightgrad.zeros(2), lightgrad.zeros(2), lightgrad.ones(2))
    tensor(0.)
    """
    if isinstance(var, float | int):
        if var < 0:
            raise ValueError("var has negative entry/entries")
        var = _const(np.full(input.shape, float(var)), input)
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


# ---- compat layers: pooling

def max_pool1d_with_indices(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
                            dilation: Any = 1, ceil_mode: bool = False, return_indices: bool = False) -> Any:
    """``max_pool1d(..., return_indices=True)``: (values, argmax positions along L)."""
    return _max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool2d_with_indices(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
                            dilation: Any = 1, ceil_mode: bool = False, return_indices: bool = False) -> Any:
    """``max_pool2d(..., return_indices=True)``: (values, flat argmax positions in each H*W plane)."""
    return _max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def _pool3d_input(name: str, input: Tensor) -> tuple[Tensor, bool]:
    if input.ndim not in (4, 5):
        raise RuntimeError(f"{name}: Expected 4D or 5D (batch mode) tensor for input, but got: "
                           f"{list(input.shape)}")
    return _batched(input, 3, name)


def _merge3d(idx_hw: Tensor, idx_d: Tensor, hw: int, plane: int) -> Tensor:
    """Flat D*H*W argmax from a first pass's H*W indices (N, C, D, P) and the second pass's (N, C, Do, P)
    positions in its (D, P) plane."""
    d = Tensor._make(idx_d._data // plane)
    j = idx_hw.gather(2, d)
    return Tensor._make(d._data * hw + j._data)


def max_pool3d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, dilation: Any = 1,
               ceil_mode: bool = False, return_indices: bool = False) -> Any:
    """3-D max pooling over (N, C, D, H, W): a 2-D pool over (H, W), then one over D.

    >>> F.max_pool3d(lightgrad.randn(1, 1, 4, 4, 4), 2).shape
    lightgrad.Size([1, 1, 2, 2, 2])
    """
    x, batched = _pool3d_input("max_pool3d", input)
    k = _tuple(kernel_size, 3, "kernel_size")
    s = k if stride is None or (isinstance(stride, Sequence) and not len(stride)) else _tuple(stride, 3, "stride")
    p, dl = _tuple(padding, 3, "padding"), _tuple(dilation, 3, "dilation")
    n, c, dd, h, w = x.shape
    y, i1 = _max_pool2d(x.reshape(n, c * dd, h, w), k[1:], s[1:], p[1:], dl[1:], ceil_mode, True)
    ho, wo = y.shape[2:]
    y, i2 = _max_pool2d(y.reshape(n, c, dd, ho * wo), (k[0], 1), (s[0], 1), (p[0], 0), (dl[0], 1), ceil_mode, True)
    out = y.reshape(n, c, -1, ho, wo)
    if not batched:
        out = out.squeeze(0)
    if not return_indices:
        return out
    idx = _merge3d(i1.reshape(n, c, dd, ho * wo), i2, h * w, ho * wo).reshape(n, c, -1, ho, wo)
    return out, idx if batched else idx.squeeze(0)


def max_pool3d_with_indices(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
                            dilation: Any = 1, ceil_mode: bool = False, return_indices: bool = False) -> Any:
    """``max_pool3d(..., return_indices=True)``."""
    return max_pool3d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def avg_pool3d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, ceil_mode: bool = False,
               count_include_pad: bool = True, divisor_override: int | None = None) -> Tensor:
    """3-D average pooling over (N, C, D, H, W): window sums and counts factor over the axes.

    >>> F.avg_pool3d(lightgrad.ones(1, 1, 4, 4, 4), 2).shape
    lightgrad.Size([1, 1, 2, 2, 2])
    """
    x, batched = _pool3d_input("avg_pool3d", input)
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    k = _tuple(kernel_size, 3, "kernel_size")
    s = k if stride is None or (isinstance(stride, Sequence) and not len(stride)) else _tuple(stride, 3, "stride")
    p = _tuple(padding, 3, "padding")
    n, c, dd, h, w = x.shape
    div = None if divisor_override is None else 1  # sums, divided once at the end
    y = _avg_pool2d(x.reshape(n, c * dd, h, w), k[1:], s[1:], p[1:], ceil_mode, count_include_pad, div)
    ho, wo = y.shape[2:]
    y = _avg_pool2d(y.reshape(n, c, dd, ho * wo), (k[0], 1), (s[0], 1), (p[0], 0), ceil_mode, count_include_pad, div)
    out = y.reshape(n, c, -1, ho, wo)
    if divisor_override is not None:
        out = out / divisor_override
    return out if batched else out.squeeze(0)


def adaptive_avg_pool3d(input: Tensor, output_size: Any) -> Tensor:
    """Average over adaptive windows to a fixed (D, H, W) output (None keeps a size).

    >>> F.adaptive_avg_pool3d(lightgrad.randn(1, 2, 5, 6, 7), 1).shape
    lightgrad.Size([1, 2, 1, 1, 1])
    """
    return _adaptive_avg("adaptive_avg_pool3d", 3, input, output_size)


def adaptive_max_pool3d(input: Tensor, output_size: Any, return_indices: bool = False) -> Any:
    """Max over adaptive windows to a fixed (D, H, W) output: a 2-D adaptive pool over (H, W), then over D.

    >>> F.adaptive_max_pool3d(lightgrad.randn(1, 2, 5, 6, 7), 2).shape
    lightgrad.Size([1, 2, 2, 2, 2])
    """
    x, batched = _pool3d_input("adaptive_max_pool3d", input)
    if isinstance(output_size, int | np.integer) or output_size is None:
        output_size = (output_size,) * 3
    if len(output_size) != 3:
        raise ValueError(f"adaptive_max_pool3d: output_size must be an int or 3 values, got {output_size}")
    o = tuple(x.shape[2 + i] if v is None else int(v) for i, v in enumerate(output_size))
    n, c, dd, h, w = x.shape
    y, i1 = _adaptive_max_pool2d(x.reshape(n, c * dd, h, w), o[1:], True)
    ho, wo = y.shape[2:]
    y, i2 = _adaptive_max_pool2d(y.reshape(n, c, dd, ho * wo), (o[0], ho * wo), True)
    out = y.reshape(n, c, o[0], ho, wo)
    idx = _merge3d(i1.reshape(n, c, dd, ho * wo), i2, h * w, ho * wo).reshape(out.shape) if return_indices else None
    if not batched:
        out = out.squeeze(0)
        idx = idx.squeeze(0) if idx is not None else None
    return (out, idx) if return_indices else out


def adaptive_max_pool1d_with_indices(input: Tensor, output_size: Any, return_indices: bool = False) -> Any:
    return _adaptive_max_pool1d(input, output_size, True)


def adaptive_max_pool2d_with_indices(input: Tensor, output_size: Any, return_indices: bool = False) -> Any:
    return _adaptive_max_pool2d(input, output_size, True)


def adaptive_max_pool3d_with_indices(input: Tensor, output_size: Any, return_indices: bool = False) -> Any:
    return adaptive_max_pool3d(input, output_size, True)


def _unpool_output_size(x: Tensor, k: tuple[int, ...], s: tuple[int, ...], p: tuple[int, ...],
                        output_size: Any) -> tuple[int, ...]:
    nd = len(k)
    default = tuple((x.shape[-nd + i] - 1) * s[i] + k[i] - 2 * p[i] for i in range(nd))
    if output_size is None:
        return default
    out = tuple(int(v) for v in output_size)
    if len(out) == nd + 2:
        out = out[2:]
    if len(out) != nd:
        raise ValueError(f"output_size should be a sequence containing {nd} or {nd + 2} elements, but it has a "
                         f"length of '{len(out)}'")
    for i in range(nd):
        lo, hi = default[i] - s[i], default[i] + s[i]
        if not lo < out[i] < hi:
            raise ValueError(f'invalid output_size "{tuple(output_size)}" (dim {i} must be between {lo} and {hi})')
    return out


def _max_unpool(nd: int, input: Tensor, indices: Tensor, kernel_size: Any, stride: Any, padding: Any,
                output_size: Any) -> Tensor:
    if input.ndim not in (nd + 1, nd + 2):
        raise RuntimeError(f"Input to max_unpooling{nd}d should be a {nd + 1}d or {nd + 2}d Tensor, but got a "
                           f"tensor with {input.ndim} dimensions.")
    if indices._arr.dtype != np.int64:
        scalar = indices.type().split(".")[-1][:-len("Tensor")]  # PyTorch's scalar-type name: Float, Int, ...
        raise RuntimeError(f"elements in indices should be type int64 but got: {scalar}")
    if indices.shape != input.shape:
        raise RuntimeError(f"Expected shape of indices to be same as that of the input tensor ({list(input.shape)}) "
                           f"but got indices tensor with shape: {list(indices.shape)}")
    k = _tuple(kernel_size, nd, "kernel_size")
    s = k if stride is None or (isinstance(stride, Sequence) and not len(stride)) else _tuple(stride, nd, "stride")
    p = _tuple(padding, nd, "padding")
    out = _unpool_output_size(input, k, s, p, output_size)
    size = math.prod(out)
    ix = indices._data
    if ix.size and (ix.min() < 0 or ix.max() >= size):
        bad = int(ix.min()) if ix.min() < 0 else int(ix.max())
        raise RuntimeError(f"Found an invalid max index: {bad} (output volumes are of size "
                           f"{'x'.join(map(str, out))})")
    lead = tuple(input.shape[:-nd])
    m = math.prod(input.shape[-nd:])
    flat = input.reshape(*lead, m)
    base = Tensor._make(np.zeros(lead + (size,), input._arr.dtype))
    return base.scatter(-1, Tensor._make(ix.reshape(lead + (m,))), flat).reshape(*lead, *out)


def max_unpool1d(input: Tensor, indices: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
                 output_size: Any = None) -> Tensor:
    """Partial inverse of max_pool1d: values put back at their ``indices``, zeros elsewhere.

    >>> y, i = F.max_pool1d(lightgrad.randn(1, 1, 4), 2, return_indices=True); F.max_unpool1d(y, i, 2).shape
    lightgrad.Size([1, 1, 4])
    """
    return _max_unpool(1, input, indices, kernel_size, stride, padding, output_size)


def max_unpool2d(input: Tensor, indices: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
                 output_size: Any = None) -> Tensor:
    """Partial inverse of max_pool2d: values put back at their flat H*W ``indices``, zeros elsewhere.

    >>> y, i = F.max_pool2d(lightgrad.randn(1, 1, 4, 4), 2, return_indices=True); F.max_unpool2d(y, i, 2).shape
    lightgrad.Size([1, 1, 4, 4])
    """
    return _max_unpool(2, input, indices, kernel_size, stride, padding, output_size)


def max_unpool3d(input: Tensor, indices: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
                 output_size: Any = None) -> Tensor:
    """Partial inverse of max_pool3d."""
    return _max_unpool(3, input, indices, kernel_size, stride, padding, output_size)


# ---- compat layers: spatial transformers

def _align_default(align_corners: bool | None) -> bool:
    if align_corners is None:
        warnings.warn("Default grid_sample and affine_grid behavior has changed to align_corners=False since 1.3.0. "
                      "Please specify align_corners=True if the old behavior is desired. See the documentation of "
                      "grid_sample for details.", stacklevel=3)
        return False
    return align_corners


def _base_coords(steps: int, align_corners: bool) -> np.ndarray:
    if steps <= 1:
        return np.zeros(max(steps, 0))
    r = np.linspace(-1.0, 1.0, steps)
    return r if align_corners else r * (steps - 1) / steps


def affine_grid(theta: Tensor, size: Sequence[int], align_corners: bool | None = None) -> Tensor:
    """Sampling grid (N, H, W, 2) (or (N, D, H, W, 3)) of the affine maps ``theta`` (N, 2, 3) (or (N, 3, 4)),
    in [-1, 1] coordinates, for grid_sample.

    >>> F.affine_grid(lightgrad.eye(2, 3).unsqueeze(0), (1, 1, 4, 4), align_corners=False).shape
    lightgrad.Size([1, 4, 4, 2])
    """
    align = _align_default(align_corners)
    size = tuple(int(v) for v in size)
    if theta._arr.dtype.kind != "f":
        raise ValueError(f"Expected theta to have floating point type, but got {theta.dtype}")
    if len(size) not in (4, 5):
        raise NotImplementedError(f"affine_grid only supports 4D and 5D sizes, for 2D and 3D affine transforms, "
                                  f"respectively. Got size {size}.")
    nd = len(size) - 2
    if theta.ndim != 3 or tuple(theta.shape[-2:]) != (nd, nd + 1):
        raise ValueError(f"Expected a batch of {nd}D affine matrices of shape Nx{nd}x{nd + 1} for size {size}. "
                         f"Got {theta.shape}.")
    spatial = size[2:]
    if min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {size}")
    if theta.shape[0] != size[0]:
        raise RuntimeError(f"affine_grid: expected theta batch size {size[0]}, got {theta.shape[0]} "
                           f"(theta of shape {list(theta.shape)})")
    if align and max(spatial) == 1:
        warnings.warn("Since version 1.3.0, affine_grid behavior has changed for unit-size grids when "
                      "align_corners=True. This is not an intended use case of affine_grid. See the "
                      "documentation of affine_grid for details.", stacklevel=2)
    # base (*spatial, nd + 1): x varies along the last axis (W), then y (H), then z (D); last column is 1
    mesh = np.meshgrid(*[_base_coords(n, align) for n in spatial], indexing="ij")  # [z,] y, x order
    base = np.stack(list(reversed(mesh)) + [np.ones(spatial)], -1).astype(theta._arr.dtype)
    npts = math.prod(spatial)
    grid = Tensor._make(base.reshape(1, npts, -1)).matmul(theta.transpose(1, 2))  # (N, npts, nd)
    return grid.reshape(size[0], *spatial, len(spatial))


def _unnormalize(coord: Tensor, size: int, align: bool) -> Tensor:
    if align:
        return (coord + 1) * ((size - 1) / 2)
    return ((coord + 1) * size - 1) / 2


def _reflect(x: Tensor, twice_low: int, twice_high: int) -> Tensor:
    """Reflect coordinates into [twice_low / 2, twice_high / 2] as PyTorch's reflect_coordinates."""
    if twice_low == twice_high:
        return x * 0
    lo = twice_low / 2
    span = (twice_high - twice_low) / 2
    a = (x - lo).abs()
    flips = np.floor(a._data / span)
    extra = a - _const(flips * span, a)  # fmod(a, span) for a >= 0, written so the gradient flows
    even = Tensor._make(flips % 2 == 0)
    return where(even, extra + lo, span - extra + lo)


def _source_index(coord: Tensor, size: int, padding_mode: str, align: bool) -> Tensor:
    x = _unnormalize(coord, size, align)
    if padding_mode == "border":
        x = _hardtanh(x, 0.0, size - 1.0)
    elif padding_mode == "reflection":
        x = _reflect(x, 0, 2 * (size - 1)) if align else _reflect(x, -1, 2 * size - 1)
        x = _hardtanh(x, 0.0, size - 1.0)
    return x


def _bounded_np(x: np.ndarray, size: int, padding_mode: str, align: bool) -> np.ndarray:
    """Integer tap positions mapped through the padding mode (PyTorch's compute_coordinates)."""
    if padding_mode == "border":
        return np.clip(x, 0, size - 1)
    if padding_mode == "reflection":
        lo2, hi2 = (0, 2 * (size - 1)) if align else (-1, 2 * size - 1)
        if lo2 == hi2:
            return np.zeros_like(x)
        lo, span = lo2 / 2, (hi2 - lo2) / 2
        a = np.abs(x - lo)
        extra, flips = np.fmod(a, span), np.floor(a / span)
        return np.clip(np.where(flips % 2 == 0, extra + lo, span - extra + lo), 0, size - 1)
    return x


def _cubic_weights(t: Tensor) -> list[Tensor]:
    """Keys' cubic convolution weights (A = -0.75) of the taps at -1, 0, 1, 2 for a fraction t."""
    a = -0.75

    def near(x: Tensor) -> Tensor:  # |x| <= 1
        return ((x * (a + 2) - (a + 3)) * x) * x + 1

    def far(x: Tensor) -> Tensor:  # 1 < |x| < 2
        return ((x * a - 5 * a) * x + 8 * a) * x - 4 * a
    return [far(t + 1), near(t), near(1 - t), far(2 - t)]


def _bicubic_sample(grid: Tensor, tap: Callable[[np.ndarray, np.ndarray], tuple[Tensor, np.ndarray]],
                    hw: tuple[int, int], padding_mode: str, align: bool) -> Tensor:
    """Bicubic grid sampling over 4x4 taps; padding applies to each tap (not to the coordinate)."""
    h, w = hw
    ix = _unnormalize(grid[..., 0], w, align)
    iy = _unnormalize(grid[..., 1], h, align)
    x0, y0 = np.floor(ix._data), np.floor(iy._data)
    wxs = _cubic_weights(ix - _const(x0, ix))
    wys = _cubic_weights(iy - _const(y0, iy))
    out: list[Tensor] = []
    for i, wy in enumerate(wys):
        yi = _bounded_np(y0 - 1 + i, h, padding_mode, align).astype(np.int64)
        for j, wx in enumerate(wxs):
            xi = _bounded_np(x0 - 1 + j, w, padding_mode, align).astype(np.int64)
            v, inside = tap(yi, xi)
            out.append(where(Tensor._make(inside[:, None]), v, 0.0) * (wy * wx).unsqueeze(1))
    total = out[0]
    for t in out[1:]:
        total = total + t
    return total


def grid_sample(input: Tensor, grid: Tensor, mode: str = "bilinear", padding_mode: str = "zeros",
                align_corners: bool | None = None) -> Tensor:
    """Sample (N, C, H, W) ``input`` at the [-1, 1] locations of ``grid`` (N, Ho, Wo, 2), x first;
    2-D, bilinear, nearest or bicubic, zeros/border/reflection padding, gradients to input and grid.

    >>> g = F.affine_grid(lightgrad.eye(2, 3).unsqueeze(0), (1, 1, 3, 3), align_corners=False)
    >>> F.grid_sample(lightgrad.randn(1, 1, 3, 3), g, align_corners=False).shape
    lightgrad.Size([1, 1, 3, 3])
    """
    if mode not in ("bilinear", "nearest", "bicubic"):
        raise ValueError(f"nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or 'bicubic', "
                         f"but got: '{mode}'")
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError(f"nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', or "
                         f"'reflection', but got: '{padding_mode}'")
    align = _align_default(align_corners)
    if input.ndim != grid.ndim or grid.shape[0] != input.shape[0]:
        raise RuntimeError(f"grid_sampler(): expected grid and input to have same batch size, but got input with "
                           f"sizes {list(input.shape)} and grid with sizes {list(grid.shape)}")
    if grid.shape[-1] != input.ndim - 2:
        raise RuntimeError(f"grid_sampler(): expected grid to have size {input.ndim - 2} in last dimension, but got "
                           f"grid with sizes {list(grid.shape)}")
    if input._arr.dtype != grid._arr.dtype:
        raise RuntimeError(f"grid_sampler(): expected input and grid to have same dtype, but input has "
                           f"{input.dtype} and grid has {grid.dtype}")
    if input.ndim != 4:
        raise NotImplementedError(f"grid_sample: only 4-D input (2-D sampling) is implemented in lightgrad, got "
                                  f"input of size {list(input.shape)}")
    n, c, h, w = input.shape
    ho, wo = grid.shape[1:3]
    flat_in = input.reshape(n, c, h * w)

    def tap(yi: np.ndarray, xi: np.ndarray) -> tuple[Tensor, np.ndarray]:
        """input at integer (yi, xi) of shape (N, Ho, Wo), as (N, C, Ho, Wo), and where it lies inside."""
        inside = (xi >= 0) & (xi < w) & (yi >= 0) & (yi < h)
        flat = np.where(inside, yi * w + xi, 0).reshape(n, 1, ho * wo)
        v = flat_in.gather(2, Tensor._make(np.broadcast_to(flat, (n, c, ho * wo))))
        return v.reshape(n, c, ho, wo), inside

    if mode == "bicubic":
        return _bicubic_sample(grid, tap, (h, w), padding_mode, align)
    ix = _source_index(grid[..., 0], w, padding_mode, align)  # (N, Ho, Wo)
    iy = _source_index(grid[..., 1], h, padding_mode, align)
    if mode == "nearest":
        v, inside = tap(np.rint(iy._data).astype(np.int64), np.rint(ix._data).astype(np.int64))
        out = where(Tensor._make(inside[:, None]), v, 0.0)
        # nearest sampling is flat in the grid: its gradient is zero there, as in PyTorch (not absent)
        return out + (grid * 0).sum() if grid.requires_grad and is_grad_enabled() else out
    x0, y0 = np.floor(ix._data).astype(np.int64), np.floor(iy._data).astype(np.int64)
    fx = ix - _const(x0, ix)  # weight of the right neighbour, (N, Ho, Wo)
    fy = iy - _const(y0, iy)
    terms = []
    for dy, wy in ((0, 1 - fy), (1, fy)):
        for dx, wx in ((0, 1 - fx), (1, fx)):
            v, inside = tap(y0 + dy, x0 + dx)
            terms.append(where(Tensor._make(inside[:, None]), v, 0.0) * (wy * wx).unsqueeze(1))
    return terms[0] + terms[1] + terms[2] + terms[3]


# ---- compat layers 3 ---------------------------------------------------------------------------

from ._spatial import avg_pool1d as _avg_pool1d  # noqa: E402

def celu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    return celu(input, alpha, True)


def selu_(input: Tensor) -> Tensor:
    return selu(input, True)


def rrelu_(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False) -> Tensor:
    return rrelu(input, lower, upper, training, True)


def feature_alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False, inplace: bool = False) -> Tensor:
    """Alpha dropout of whole channels: one draw per (sample, channel) of an (N, C, ...) input."""
    _check_p(p)
    if not training or p == 0 or input.numel() == 0:
        return input
    if p == 1:
        return _inplace(input, inplace, lambda x: x * 0)
    if input.ndim < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    alpha = _SELU_ALPHA * _SELU_SCALE
    a = 1.0 / math.sqrt((alpha * alpha * p + 1) * (1 - p))
    shape = input.shape[:2] + (1,) * (input.ndim - 2)
    keep = _gen(None).random(shape) >= p
    # as alpha_dropout, with the mask broadcast over each channel
    mult = _const(keep * a, input)
    add = _const((keep - 1.0) * (alpha * a) + alpha * a * p, input)
    return _inplace(input, inplace, lambda x: x * mult + add)


def _lp_pool(nd: int, input: Tensor, norm_type: float, kernel_size: Any, stride: Any, ceil_mode: bool) -> Tensor:
    pool_max = (_max_pool1d, _max_pool2d, max_pool3d)[nd - 1]
    pool_avg = (_avg_pool1d, _avg_pool2d, avg_pool3d)[nd - 1]
    if norm_type == math.inf:
        return pool_max(input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    if norm_type == -math.inf:
        return -pool_max(-input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    out = pool_avg(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    # sum of |x|^p over the window = mean * window size; sign * relu(abs) keeps PyTorch's gradient
    return (out.sign() * relu(out.abs())).mul(math.prod(_tuple(kernel_size, nd, "kernel_size"))).pow(1.0 / norm_type)


def lp_pool1d(input: Tensor, norm_type: float, kernel_size: int, stride: Any = None,
              ceil_mode: bool = False) -> Tensor:
    """Power-average pooling: (sum over the window of x^p)^(1/p), over (N, C, L) or (C, L)."""
    return _lp_pool(1, input, norm_type, kernel_size, stride, ceil_mode)


def lp_pool2d(input: Tensor, norm_type: float, kernel_size: Any, stride: Any = None,
              ceil_mode: bool = False) -> Tensor:
    """Power-average pooling over (N, C, H, W) or (C, H, W)."""
    return _lp_pool(2, input, norm_type, kernel_size, stride, ceil_mode)


def lp_pool3d(input: Tensor, norm_type: float, kernel_size: Any, stride: Any = None,
              ceil_mode: bool = False) -> Tensor:
    """Power-average pooling over (N, C, D, H, W) or (C, D, H, W)."""
    return _lp_pool(3, input, norm_type, kernel_size, stride, ceil_mode)


def _fractional_starts(sample: np.ndarray, in_size: int, out_size: int, pool: int) -> np.ndarray:
    """Window starts per (N, C) sample, PyTorch's interval rule computed in the samples' precision."""
    starts = np.empty(sample.shape + (out_size,), np.int64)
    starts[..., -1] = in_size - pool
    if out_size > 1:
        alpha = sample.dtype.type(in_size - pool) / sample.dtype.type(out_size - 1)
        i = np.arange(out_size - 1, dtype=sample.dtype)
        starts[..., :-1] = ((i + sample[..., None]) * alpha).astype(np.int64) - \
            (sample * alpha).astype(np.int64)[..., None]
    return starts


def _fractional_max_pool(nd: int, input: Tensor, kernel_size: Any, output_size: Any, output_ratio: Any,
                         return_indices: bool, _random_samples: Tensor | None) -> Any:
    name = f"fractional_max_pool{nd}d"
    if output_size is None and output_ratio is None:
        raise ValueError(f"{name} requires specifying either an output_size or an output_ratio")
    x, batched = _batched(input, nd, name)
    spatial = x.shape[2:]
    k = _tuple(kernel_size, nd, "kernel_size")
    if output_size is None:
        ratio = output_ratio if isinstance(output_ratio, tuple | list) else (output_ratio,) * nd
        out = tuple(int(s * r) for s, r in zip(spatial, ratio, strict=True))
    else:
        out = _tuple(output_size, nd, "output_size")
    n, c = x.shape[0], x.shape[1]
    for d in range(nd):
        if out[d] + k[d] - 1 > spatial[d]:
            raise RuntimeError(f"{name}_out(): pool size {k[d]} too large relative to input size {spatial[d]} "
                               f"(output size {out[d]}) in dim {d}")
    if _random_samples is None:
        samples = _gen(None).random((n, c, nd)).astype(x._arr.dtype)
    else:
        if tuple(_random_samples.shape) != (n, c, nd):
            raise RuntimeError(f"{name}(): expected _random_samples of shape {(n, c, nd)}, "
                               f"got {tuple(_random_samples.shape)}")
        samples = _random_samples._data.astype(x._arr.dtype)
    # PyTorch's sample order: (W, H) for 2-d, (T, H, W) for 3-d
    order = (0,) if nd == 1 else ((1, 0) if nd == 2 else (0, 1, 2))
    # flat input index of every tap of every window: (N, C, *out, *k)
    strides = [math.prod(spatial[d + 1:]) for d in range(nd)]
    flat = np.zeros((n, c) + out + k, np.int64)
    for d in range(nd):
        starts = _fractional_starts(samples[..., order[d]], spatial[d], out[d], k[d])  # (N, C, out_d)
        pos = starts[..., :, None] + np.arange(k[d])  # (N, C, out_d, k_d)
        shape = [n, c] + [1] * (2 * nd)
        shape[2 + d], shape[2 + nd + d] = out[d], k[d]
        flat = flat + pos.reshape(shape) * strides[d]
    flat = flat.reshape(n, c, math.prod(out), math.prod(k))
    plane = x.reshape(n, c, -1)._data
    taps = np.take_along_axis(plane[:, :, :, None], flat.reshape(n, c, -1, 1), axis=2).reshape(flat.shape)
    best = np.where(np.isnan(taps).any(-1), np.isnan(taps).argmax(-1), taps.argmax(-1))
    index = np.take_along_axis(flat, best[..., None], -1)[..., 0]  # (N, C, prod(out))
    idx = Tensor._make(index)
    y = x.reshape(n, c, -1).gather(2, idx).reshape((n, c) + out)
    idx = idx.reshape((n, c) + out)
    if not batched:
        y, idx = y.squeeze(0), idx.squeeze(0)
    return (y, idx) if return_indices else y


def fractional_max_pool2d_with_indices(input: Tensor, kernel_size: Any, output_size: Any = None,
                                       output_ratio: Any = None, return_indices: bool = False,
                                       _random_samples: Tensor | None = None) -> tuple[Tensor, Tensor]:
    return _fractional_max_pool(2, input, kernel_size, output_size, output_ratio, True, _random_samples)


def fractional_max_pool2d(input: Tensor, kernel_size: Any, output_size: Any = None, output_ratio: Any = None,
                          return_indices: bool = False, _random_samples: Tensor | None = None) -> Any:
    """Max pooling over pseudo-random overlapping windows, to ``output_size`` or ``output_ratio`` of
    (N, C, H, W) or (C, H, W) input; ``_random_samples`` (N, C, 2) in [0, 1) fixes the windows."""
    return _fractional_max_pool(2, input, kernel_size, output_size, output_ratio, return_indices, _random_samples)


def fractional_max_pool3d_with_indices(input: Tensor, kernel_size: Any, output_size: Any = None,
                                       output_ratio: Any = None, return_indices: bool = False,
                                       _random_samples: Tensor | None = None) -> tuple[Tensor, Tensor]:
    return _fractional_max_pool(3, input, kernel_size, output_size, output_ratio, True, _random_samples)


def fractional_max_pool3d(input: Tensor, kernel_size: Any, output_size: Any = None, output_ratio: Any = None,
                          return_indices: bool = False, _random_samples: Tensor | None = None) -> Any:
    """3-D fractional max pooling over (N, C, D, H, W) or (C, D, H, W); samples (N, C, 3)."""
    return _fractional_max_pool(3, input, kernel_size, output_size, output_ratio, return_indices, _random_samples)


def _lengths(v: Any, name: str) -> np.ndarray:
    arr = np.asarray(v._data if isinstance(v, Tensor) else v)
    if arr.dtype.kind not in "iu":
        raise RuntimeError(f"{name} must be integral, got dtype {arr.dtype}")
    return arr.reshape(-1).astype(np.int64)


def ctc_loss(log_probs: Tensor, targets: Tensor, input_lengths: Any, target_lengths: Any, blank: int = 0,
             reduction: str = "mean", zero_infinity: bool = False) -> Tensor:
    """Connectionist temporal classification loss of (T, N, C) or (T, C) log-probabilities against
    padded (N, S) or concatenated targets, by the forward (alpha) recursion in log space."""
    from ..tensor import cat
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
    tg = targets._data if isinstance(targets, Tensor) else np.asarray(targets)
    if tg.ndim == 2:
        if (tgt_len > tg.shape[1]).any():
            raise RuntimeError(f"Expected tensor to have size at least {int(tgt_len.max())} at dimension 1, "
                               f"but got size {tg.shape[1]} for argument #2 'targets'")
        rows = [tg[i, :tgt_len[i]] for i in range(n)]
    else:
        if tg.size < tgt_len.sum():
            raise RuntimeError(f"Expected tensor to have size at least {int(tgt_len.sum())} at dimension 0, "
                               f"but got size {tg.size} for argument #2 'targets'")
        offsets = np.concatenate([[0], np.cumsum(tgt_len)])
        rows = [tg.reshape(-1)[offsets[i]:offsets[i + 1]] for i in range(n)]
    # extended labels: blank, l1, blank, l2, ..., blank; padded with blanks to a common length L
    s_max = int(tgt_len.max()) if n else 0
    ext_len = 2 * s_max + 1
    ext = np.full((n, ext_len), blank, np.int64)
    skip = np.zeros((n, ext_len), bool)  # may alpha[s] come from alpha[s - 2]?
    for i, row in enumerate(rows):
        ext[i, 1:2 * len(row):2] = row
        s = np.arange(3, 2 * len(row), 2)
        skip[i, s] = ext[i, s] != ext[i, s - 2]
    # a finite stand-in for log(0): -inf would give nan gradients in logsumexp
    neg = -1e30 if lp._arr.dtype != np.float16 else -6e4
    emit = lp.gather(2, Tensor._make(np.broadcast_to(ext, (t_max, n, ext_len)).copy()))  # (T, N, L)
    start = np.full((n, ext_len), neg)
    start[:, :2] = 0.0
    start[tgt_len == 0, 1] = neg
    alpha = emit[0] + _const(start, lp)
    pad1, pad2 = _const(np.full((n, 1), neg), lp), _const(np.full((n, 2), neg), lp)
    no_skip = _const(np.where(skip, 0.0, neg), lp)
    for t in range(1, t_max):
        s1 = cat([pad1, alpha[:, :-1]], 1)
        s2 = cat([pad2, alpha[:, :-2]], 1) + no_skip if ext_len > 2 else no_skip
        new = emit[t] + _stack3(alpha, s1, s2).logsumexp(0)  # (N, L)
        alpha = where(_const((t < in_len)[:, None], lp).bool(), new, alpha)  # finished sequences stay
    last = Tensor._make(np.stack([2 * tgt_len, np.maximum(2 * tgt_len - 1, 0)], 1))
    ends = alpha.gather(1, last)  # (N, 2)
    end_mask = _const(np.where(tgt_len[:, None] > 0, 0.0, np.array([[0.0, neg]])), lp)
    nll = -(ends + end_mask).logsumexp(1)
    feasible = (nll._data < -neg / 2) & (in_len > 0) | ((in_len == 0) & (tgt_len == 0))
    if (in_len == 0).any():  # nothing emitted: probability 1 for an empty target, 0 otherwise
        nll = where(_const(in_len == 0, lp).bool(), 0.0, nll)
    infeasible = Tensor._make(~feasible)
    nll = where(infeasible, 0.0 if zero_infinity else math.inf, nll)
    if reduction == "mean":
        nll = (nll / _const(np.maximum(tgt_len, 1), lp)).mean()
    elif reduction == "sum":
        nll = nll.sum()
    elif not batched:
        nll = nll.squeeze(0)
    return nll


def _stack3(a: Tensor, b: Tensor, c: Tensor) -> Tensor:
    from ..tensor import stack
    return stack([a, b, c], 0)
