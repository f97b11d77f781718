"""Fold an eval-mode BatchNorm into the conv or linear layer before it, as ``torch.nn.utils.fusion``.

>>> conv, bn = nn.Conv2d(3, 4, 3).eval(), nn.BatchNorm2d(4).eval()
>>> fused = nn.utils.fuse_conv_bn_eval(conv, bn)  # fused(x) == bn(conv(x))
"""

from __future__ import annotations

import copy
from typing import Any, TypeVar

from ...tensor import Tensor, ones_like, zeros_like
from ..module import Module
from ..parameter import Parameter

__all__ = ["fuse_conv_bn_eval", "fuse_conv_bn_weights", "fuse_linear_bn_eval", "fuse_linear_bn_weights"]

M = TypeVar("M", bound=Module)


def _check_eval(*modules: Module) -> None:
    # PyTorch asserts here; the same exception type, raised explicitly
    if any(m.training for m in modules):
        raise AssertionError("Fusion only for eval!")


def fuse_conv_bn_eval(conv: M, bn: Module, transpose: bool = False) -> M:
    """A copy of ``conv`` whose weight and bias include the eval-mode ``bn`` that follows it."""
    _check_eval(conv, bn)
    fused = copy.deepcopy(conv)
    if bn.running_mean is None or bn.running_var is None:
        raise AssertionError("bn.running_mean and bn.running_var must not be None")
    fused.weight, fused.bias = fuse_conv_bn_weights(fused.weight, fused.bias, bn.running_mean, bn.running_var,
                                                    bn.eps, bn.weight, bn.bias, transpose)
    return fused


def fuse_conv_bn_weights(conv_w: Tensor, conv_b: Tensor | None, bn_rm: Tensor, bn_rv: Tensor, bn_eps: float,
                         bn_w: Tensor | None, bn_b: Tensor | None,
                         transpose: bool = False) -> tuple[Parameter, Parameter]:
    """(weight, bias) of the conv that computes ``bn(conv(x))`` with BatchNorm's running statistics."""
    w_dtype = conv_w.dtype
    b_dtype = conv_b.dtype if conv_b is not None else w_dtype
    b = zeros_like(bn_rm) if conv_b is None else conv_b
    bn_w = ones_like(bn_rm) if bn_w is None else bn_w
    bn_b = zeros_like(bn_rm) if bn_b is None else bn_b
    rsqrt = (bn_rv + bn_eps).rsqrt()
    # the output channel is dim 1 of a transposed conv's weight, dim 0 otherwise
    shape: list[int] = ([1, -1] if transpose else [-1, 1]) + [1] * (conv_w.ndim - 2)
    w = (conv_w * (bn_w * rsqrt).reshape(shape)).to(w_dtype)
    fused_b = ((b - bn_rm) * rsqrt * bn_w + bn_b).to(b_dtype)
    return Parameter(w.detach(), conv_w.requires_grad), Parameter(fused_b.detach(), b.requires_grad)


def fuse_linear_bn_eval(linear: M, bn: Module) -> M:
    """A copy of ``linear`` whose weight and bias include the eval-mode ``bn`` that follows it."""
    _check_eval(linear, bn)
    if not (linear.out_features == bn.num_features or bn.num_features == 1):
        raise AssertionError("To fuse, linear.out_features must equal bn.num_features or "
                             "bn.num_features must be 1")
    if bn.running_mean is None or bn.running_var is None:
        raise AssertionError("bn.running_mean and bn.running_var must not be None")
    fused = copy.deepcopy(linear)
    fused.weight, fused.bias = fuse_linear_bn_weights(fused.weight, fused.bias, bn.running_mean, bn.running_var,
                                                      bn.eps, bn.weight, bn.bias)
    return fused


def fuse_linear_bn_weights(linear_w: Tensor, linear_b: Tensor | None, bn_rm: Tensor, bn_rv: Tensor,
                           bn_eps: float, bn_w: Tensor, bn_b: Tensor) -> tuple[Parameter, Parameter]:
    """(weight, bias) of the linear layer that computes ``bn(linear(x))`` with running statistics."""
    w_dtype = linear_w.dtype
    b_dtype = linear_b.dtype if linear_b is not None else w_dtype
    b: Any = zeros_like(bn_rm) if linear_b is None else linear_b
    scale = bn_w * (bn_rv + bn_eps).rsqrt()
    w = linear_w * scale.unsqueeze(-1).to(w_dtype)
    fused_b = ((b - bn_rm) * scale + bn_b).to(b_dtype)
    return Parameter(w.detach(), linear_w.requires_grad), Parameter(fused_b.detach(), b.requires_grad)
