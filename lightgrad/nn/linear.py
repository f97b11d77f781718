"""Linear and Bilinear layers.

>>> nn.Linear(4, 3)(lightgrad.randn(2, 4)).shape
lightgrad.Size([2, 3])
"""

from __future__ import annotations

import math
from typing import Any

from ..tensor import Tensor
from . import functional as F
from . import init
from .module import Module
from .parameter import _weight_and_bias


class Linear(Module):
    """y = x @ weight.T + bias, weight (out_features, in_features); PyTorch's default init
    (kaiming_uniform_ with a=sqrt(5), bias U(-1/sqrt(in), 1/sqrt(in)))."""

    def __init__(self, in_features: int, out_features: int, bias: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        _weight_and_bias(self, (out_features, in_features), out_features, bias, dtype, device)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Redraw the weight (Kaiming uniform) and the bias (uniform in +-1/sqrt(in_features))."""
        init._layer_default_(self.weight, self.bias)

    def forward(self, input: Tensor) -> Tensor:
        """``input @ weight.T + bias``."""
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self) -> str:
        """The constructor options the module's repr shows."""
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


class Bilinear(Module):
    """y = x1^T A x2 + b with weight (out, in1, in2), all initialised U(-1/sqrt(in1), 1/sqrt(in1))."""

    def __init__(self, in1_features: int, in2_features: int, out_features: int, bias: bool = True,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        self.in1_features, self.in2_features, self.out_features = in1_features, in2_features, out_features
        _weight_and_bias(self, (out_features, in1_features, in2_features), out_features, bias, dtype, device)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Redraw weight and bias uniform in +-1/sqrt(in1_features)."""
        bound = 1 / math.sqrt(self.weight.shape[1])
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1: Tensor, input2: Tensor) -> Tensor:
        """``input1^T A_k input2 + b_k`` for each output feature k."""
        return F.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self) -> str:
        """The constructor options the module's repr shows."""
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")


__all__ = ["Bilinear", "Linear"]
