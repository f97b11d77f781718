"""Affine maps: ``F.linear`` (one fused kernel) and ``F.bilinear``.

(Named ``dense`` rather than ``linear``: a submodule named after a function it holds would be
shadowed by that function on the package.)"""

from __future__ import annotations

from ... import dtypes as D
from ...tensor import _SCALAR_TYPE, Tensor, einsum
from . import _layer_kernels as K

# ---- linear and bilinear -----------------------------------------------------------------------

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
    out = einsum("...i,oij,...j->...o", input1, weight, input2)
    return out + bias if bias is not None else out
