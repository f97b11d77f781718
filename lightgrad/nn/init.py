"""Weight initialisation, as ``torch.nn.init``: every function fills a tensor in place, without
recording a graph, and returns it.

>>> w = lightgrad.empty(3, 5); nn.init.kaiming_uniform_(w, a=math.sqrt(5)).shape
lightgrad.Size([3, 5])
"""

from __future__ import annotations

import math
import warnings
from typing import Any

from .. import backend as B
from ..grad_mode import no_grad
from ..random import Generator, randperm
from ..tensor import Tensor, empty_like, where

_LINEAR = ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d")


def _fill(tensor: Tensor, values: Any) -> Tensor:
    """Write ``values`` into the tensor's storage (in place: identity and views stay valid)."""
    tensor._data[...] = values
    tensor._version[0] += 1
    return tensor


def calculate_gain(nonlinearity: str, param: float | None = None) -> float:
    """The recommended gain for a nonlinearity: ``calculate_gain('relu')`` is sqrt(2)."""
    if nonlinearity in _LINEAR or nonlinearity == "sigmoid":
        return 1
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            slope = 0.01
        elif isinstance(param, int | float) and not isinstance(param, bool):
            slope = param
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def _calculate_fan_in_and_fan_out(tensor: Tensor) -> tuple[int, int]:
    """(fan_in, fan_out) of a weight of shape (out, in, *kernel)."""
    if tensor.dim() < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 dimensions")
    receptive = math.prod(tensor.shape[2:])
    return tensor.shape[1] * receptive, tensor.shape[0] * receptive


def _calculate_correct_fan(tensor: Tensor, mode: str) -> int:
    mode = mode.lower()
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"Mode {mode} not supported, please use one of ['fan_in', 'fan_out']")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def uniform_(tensor: Tensor, a: float = 0.0, b: float = 1.0, generator: Generator | None = None) -> Tensor:
    """Fill with U(a, b): ``uniform_(w, -0.1, 0.1)``."""
    with no_grad():
        return tensor.uniform_(a, b, generator=generator)


def normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, generator: Generator | None = None) -> Tensor:
    """Fill with N(mean, std^2): ``normal_(w, 0, 0.02)``."""
    with no_grad():
        return tensor.normal_(mean, std, generator=generator)


def trunc_normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, a: float = -2.0, b: float = 2.0,
                  generator: Generator | None = None) -> Tensor:
    """Fill with N(mean, std^2) truncated to [a, b], by PyTorch's rejection sampling (the same draws):
    whole-tensor normal redraws where the interval holds over 30% of the mass, else uniform proposals
    on [a, b] accepted by the density ratio."""
    if mean < a - 2 * std or mean > b + 2 * std:
        warnings.warn("mean is more than 2 std from [a, b] in nn.init.trunc_normal_. "
                      "The distribution of values may be incorrect.", stacklevel=2)

    def cdf(x: float) -> float:
        return (1.0 + math.erf(x / math.sqrt(2.0))) / 2.0

    with no_grad():
        if cdf((b - mean) / std) - cdf((a - mean) / std) > 0.3:
            # the bounds in the tensor's dtype, so the rejection matches its representable values
            lo, hi = tensor.new_tensor(a).item(), tensor.new_tensor(b).item()
            result = tensor.normal_(mean, std, generator=generator)
            while True:
                reject = (result < lo) | (result > hi)
                if not reject.any():
                    break
                result = where(reject, empty_like(result).normal_(mean, std, generator=generator), result)
            if result is not tensor:
                tensor.copy_(result)
            return tensor
        log_peak = -0.5 * ((max(a, min(mean, b)) - mean) / std) ** 2
        candidates, accept = empty_like(tensor), empty_like(tensor)

        def log_pdf(c: Tensor) -> Tensor:  # (in place: -0.5 ((c - mean) / std)^2 - log_peak)
            return c.sub_(mean).div_(std).pow_(2).mul_(-0.5).sub_(log_peak)

        tensor.uniform_(a, b, generator=generator)
        candidates.copy_(tensor)
        pending = accept.uniform_(generator=generator).log_().gt(log_pdf(candidates))
        result = tensor
        while pending.any():
            candidates.uniform_(a, b, generator=generator)
            result = where(pending, candidates, result)
            pending = where(pending, accept.uniform_(generator=generator).log_().gt(log_pdf(candidates)), pending)
        if result is not tensor:
            tensor.copy_(result)
        return tensor


def constant_(tensor: Tensor, val: float) -> Tensor:
    """Fill with ``val``."""
    with no_grad():
        return _fill(tensor, val)


def ones_(tensor: Tensor) -> Tensor:
    """Fills ``tensor`` with 1, in place (no gradient recorded)."""
    return constant_(tensor, 1.0)


def zeros_(tensor: Tensor) -> Tensor:
    """Fills ``tensor`` with 0, in place (no gradient recorded)."""
    return constant_(tensor, 0.0)


def eye_(tensor: Tensor) -> Tensor:
    """Fill a 2-D tensor with the identity matrix."""
    if tensor.ndim != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    with no_grad():
        return _fill(tensor, B.eye(*tensor.shape))


def dirac_(tensor: Tensor, groups: int = 1) -> Tensor:
    """Fill a 3-, 4- or 5-D conv weight with the Dirac delta (an identity convolution)."""
    if tensor.ndim not in (3, 4, 5):
        raise ValueError("Only tensors with 3, 4, or 5 dimensions are supported")
    sizes = tensor.shape
    if sizes[0] % groups != 0:
        raise ValueError("dim 0 must be divisible by groups")
    per_group = sizes[0] // groups
    out = B.xp.zeros(sizes)
    centre = tuple(s // 2 for s in sizes[2:])
    for g in range(groups):
        for d in range(min(per_group, sizes[1])):
            out[(g * per_group + d, d) + centre] = 1
    with no_grad():
        return _fill(tensor, out)


def xavier_uniform_(tensor: Tensor, gain: float = 1.0, generator: Generator | None = None) -> Tensor:
    """Glorot uniform: U(-a, a) with a = gain * sqrt(6 / (fan_in + fan_out))."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    a = math.sqrt(3.0) * std  # (in PyTorch's order: the bound's last bit follows it)
    return uniform_(tensor, -a, a, generator)


def xavier_normal_(tensor: Tensor, gain: float = 1.0, generator: Generator | None = None) -> Tensor:
    """Glorot normal: N(0, std^2) with std = gain * sqrt(2 / (fan_in + fan_out))."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / float(fan_in + fan_out)), generator)


def kaiming_uniform_(tensor: Tensor, a: float = 0, mode: str = "fan_in", nonlinearity: str = "leaky_relu",
                     generator: Generator | None = None) -> Tensor:
    """He uniform: U(-b, b) with b = gain * sqrt(3 / fan); Linear's default uses a=sqrt(5)."""
    if 0 in tensor.shape:
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=2)
        return tensor
    std = calculate_gain(nonlinearity, a) / math.sqrt(_calculate_correct_fan(tensor, mode))
    bound = math.sqrt(3.0) * std
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(tensor: Tensor, a: float = 0, mode: str = "fan_in", nonlinearity: str = "leaky_relu",
                    generator: Generator | None = None) -> Tensor:
    """He normal: N(0, std^2) with std = gain / sqrt(fan)."""
    if 0 in tensor.shape:
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=2)
        return tensor
    std = calculate_gain(nonlinearity, a) / math.sqrt(_calculate_correct_fan(tensor, mode))
    return normal_(tensor, 0.0, std, generator)


def orthogonal_(tensor: Tensor, gain: float = 1, generator: Generator | None = None) -> Tensor:
    """A (semi-)orthogonal matrix, trailing dims flattened (QR of a Gaussian matrix, sign-fixed)."""
    if tensor.ndim < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    if tensor.numel() == 0:
        return tensor
    rows = tensor.shape[0]
    cols = tensor.numel() // rows
    flat = Tensor._make(B.empty((rows, cols), tensor._data.dtype)).normal_(0, 1, generator=generator)._data
    if rows < cols:
        flat = flat.T
    q, r = B.xp.linalg.qr(flat)  # (LAPACK's Householder QR: PyTorch's up to rounding)
    q = q * B.xp.sign(B.xp.diag(r))  # makes Q uniformly distributed (Mezzadri 2007)
    if rows < cols:
        q = q.T
    with no_grad():
        return _fill(tensor, (gain * q).reshape(tensor.shape))


def sparse_(tensor: Tensor, sparsity: float, std: float = 0.01, generator: Generator | None = None) -> Tensor:
    """A 2-D N(0, std^2) matrix with a ``sparsity`` fraction of each column set to zero."""
    if tensor.ndim != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    rows, cols = tensor.shape
    nz = math.ceil(sparsity * rows)
    with no_grad():
        tensor.normal_(0, std, generator=generator)
        for c in range(cols):
            # (PyTorch draws the rows to zero from the global generator, not ``generator``)
            tensor[randperm(rows)[:nz], c] = 0
    return tensor


# PyTorch's deprecated spellings
uniform, normal, constant, xavier_uniform, xavier_normal = uniform_, normal_, constant_, xavier_uniform_, xavier_normal_
kaiming_uniform, kaiming_normal, orthogonal = kaiming_uniform_, kaiming_normal_, orthogonal_
eye, dirac, sparse = eye_, dirac_, sparse_

__all__ = ["calculate_gain", "constant_", "dirac_", "eye_", "kaiming_normal_", "kaiming_uniform_", "normal_",
           "ones_", "orthogonal_", "sparse_", "trunc_normal_", "uniform_", "xavier_normal_", "xavier_uniform_",
           "zeros_"]


def _layer_default_(weight: Tensor, bias: Tensor | None) -> None:
    """PyTorch's default for Linear and Conv layers: ``kaiming_uniform_(a=sqrt(5))`` for the weight
    and U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for the bias (zeros when fan_in is 0)."""
    kaiming_uniform_(weight, a=math.sqrt(5))
    if bias is not None:
        fan_in, _ = _calculate_fan_in_and_fan_out(weight)
        bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
        uniform_(bias, -bound, bound)
