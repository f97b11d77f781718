"""Activation functions (``F.relu``, ``F.gelu``, ...), their in-place forms, and the softmax family."""

from __future__ import annotations

import warnings
from typing import Any

from ... import function as Fn
from ...backend import random as R
from ...grad_mode import is_grad_enabled
from ...random import _gen
from ...tensor import Tensor, _dim, empty_like, where, zeros_like
from . import _layer_kernels as K
from ._common import _const, _inplace

# ---- pointwise activations ---------------------------------------------------------------------

_SELU_ALPHA = 1.6732632423543772848170429916717


_SELU_SCALE = 1.0507009873554804934193349852946


def relu(input: Tensor, inplace: bool = False) -> Tensor:
    """max(x, 0): ``F.relu(x)``."""
    return input.relu_() if inplace else input.relu()


def relu_(input: Tensor) -> Tensor:
    """In-place version of ``relu``."""
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
    """In-place version of ``hardtanh``."""
    return hardtanh(input, min_val, max_val, True)


def relu6(input: Tensor, inplace: bool = False) -> Tensor:
    """min(max(x, 0), 6)."""
    return hardtanh(input, 0.0, 6.0, inplace)


def leaky_relu(input: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    """x for x > 0, else negative_slope * x."""
    return _inplace(input, inplace, lambda x: where(x > 0, x, x * negative_slope))


def leaky_relu_(input: Tensor, negative_slope: float = 0.01) -> Tensor:
    """In-place version of ``leaky_relu``."""
    return leaky_relu(input, negative_slope, True)


def elu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """x for x > 0, else alpha * (exp(x) - 1)."""
    # expm1 of min(x, 0): the discarded branch never overflows
    return _inplace(input, inplace, lambda x: where(x > 0, x, x.clamp(max=0).expm1() * alpha))


def elu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    """In-place version of ``elu``."""
    return elu(input, alpha, True)


def celu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """max(0, x) + min(0, alpha * (exp(x / alpha) - 1))."""
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError: alpha cannot be 0 for CELU")
    return _inplace(input, inplace, lambda x: where(x > 0, x, (x.clamp(max=0) / alpha).expm1() * alpha))


def celu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    """In-place version of ``celu``."""
    return celu(input, alpha, True)


def selu(input: Tensor, inplace: bool = False) -> Tensor:
    """scale * elu(x, alpha) with the self-normalising constants."""
    return _inplace(input, inplace,
                    lambda x: where(x > 0, x * _SELU_SCALE, x.clamp(max=0).expm1() * (_SELU_ALPHA * _SELU_SCALE)))


def selu_(input: Tensor) -> Tensor:
    """In-place version of ``selu``."""
    return selu(input, True)


def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    """x * Phi(x), exactly via erf ('none') or with the tanh approximation ('tanh')."""
    if approximate not in ("none", "tanh"):
        raise RuntimeError("approximate argument must be either none or tanh.")
    if not input.is_floating_point():
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
    """The logistic function 1 / (1 + exp(-x)), elementwise."""
    return input.sigmoid()


def tanh(input: Tensor) -> Tensor:
    """Hyperbolic tangent, elementwise."""
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
    return input.hardshrink(lambd)


def threshold(input: Tensor, threshold: float, value: float, inplace: bool = False) -> Tensor:
    """x where x > threshold, else value."""
    return _inplace(input, inplace, lambda x: where(x > threshold, x, float(value)))


def threshold_(input: Tensor, threshold: float, value: float) -> Tensor:
    """In-place version of ``threshold``."""
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
    return input.prelu(weight)


def rrelu(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False,
          inplace: bool = False) -> Tensor:
    """Leaky ReLU with a random slope in [lower, upper] per element when training, else the mean."""
    if not training:
        return leaky_relu(input, (lower + upper) / 2, inplace)
    # PyTorch's draws: one double uniform per element <= 0, in order; the slope is 1 elsewhere
    slope = _const(R.rrelu_noise(_gen(None), input._arr, lower, upper), input)
    return _inplace(input, inplace, lambda x: x * slope)


def rrelu_(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False) -> Tensor:
    """In-place version of ``rrelu``."""
    return rrelu(input, lower, upper, training, True)


# ---- softmax family ----------------------------------------------------------------------------

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


def gumbel_softmax(logits: Tensor, tau: float = 1, hard: bool = False, eps: float = 1e-10,
                   dim: int = -1) -> Tensor:
    """softmax((logits + Gumbel noise) / tau); with ``hard`` a one-hot of its argmax whose gradient is
    the soft sample's (straight-through). The noise comes from lightgrad's global generator.

    >>> F.gumbel_softmax(lightgrad.zeros(2, 3), hard=True).sum(-1).tolist()
    [1.0, 1.0]
    """
    if eps != 1e-10:
        warnings.warn("`eps` parameter is deprecated and has no effect.", stacklevel=2)
    gumbels = -empty_like(logits.detach()).exponential_().log()
    y_soft = ((logits + gumbels) / tau).softmax(dim)
    if not hard:
        return y_soft
    index = y_soft.detach().argmax(dim, keepdim=True)
    y_hard = zeros_like(logits.detach()).scatter(dim, index, 1.0)
    return y_hard - y_soft.detach() + y_soft
