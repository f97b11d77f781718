"""The array backend: the only package that computes with arrays (NumPy today).

Every function here takes and returns raw arrays. When an arena is active (``lightgrad.memory``),
outputs are written into storage carved from it with NumPy's ``out=``; otherwise NumPy allocates
from the heap as usual. Op code never chooses, so an arena takes over without touching it.

Code outside the backend reaches it as ``from .. import backend as B`` and calls ``B.name``: this
module is that namespace. It holds the array namespace ``xp``, the array type, and plain aliases
of NumPy functions that never allocate or are cold paths; everything else comes from the modules
below, by subject, re-exported as the same objects:

- ``threads``: worker threads for large ops (set_num_threads, parallel, concurrently)
- ``shapes``: broadcast_shape, reshape, transpose, swapaxes, expand (a broadcast view), broadcast_to,
  expand_dims, flip, roll, reshape_any
- ``elementwise``: the ufunc wrappers, where, mask, cast, copy, zeros, empty, in-place updates
- ``indexing``: take, take_rows, assign, add_at, scatter_extreme
- ``reductions``: sum, reduce, softmax, log_softmax and their gradient, exp_sums, rowdot, dot_along,
  matmul, bmm, einsum
- ``kernels``: the fused kernels (erf, gelu, layer_norm, relu, the Adam update, 2x2 max pooling, the LSTM and GRU steps)
- ``native``: the optional C kernels those call on float32 arrays (NumPy is the fallback)
- ``sort``: sort, top-k, median and mode indices, unique, searchsorted, bincount, histogram
- ``scan``: cumsum, cumprod, logcumsumexp and the gradients of cumprod and logcumsumexp
- ``graph``: the backend's functions called on Tensors (create_graph=True): the table of their
  differentiable ops, filled by the tensor layer
- ``special``: erfc, erfinv, lgamma, digamma, trigamma, polygamma
- ``linalg``: NumPy's LAPACK wrappers, cofactor, solve_triangular, LU
- ``process``: what the backend sets up for the process at import (glibc's malloc keeps freed memory)

They import one another downward only, never this package: native, graph, threads, shapes, special, linalg
and process at the bottom (shapes on graph); elementwise on threads and shapes; indexing and
reductions on elementwise; kernels and sort on reductions; scan on sort. Module-level tunables
(``threads.PARALLEL_MIN``, ``elementwise._AXPY_CHUNK``, ...) are read from the module that uses
them: change them there.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..dtypes import LOW_PRECISION, ML_DTYPES
from . import graph, process
from .elementwise import (_AXPY_CHUNK, absolute, add, add_into, arccos, arccosh, arcsin, arcsinh, arctan, arctan2,
                          arctanh, axpy_, bitwise_and, bitwise_or, bitwise_xor, cast, ceil, copy, copysign, cos,
                          divide, empty, equal, exp, expm1, floor, floor_divide, fmax, fmin, fmod, gcd, greater,
                          greater_equal, hypot, iadd, imul, invert, isub, lcm, left_shift, less, less_equal, log,
                          log1p, logaddexp, logaddexp2, logical_and, logical_not, logical_or, logical_xor, mask,
                          maximum, minimum, multiply, negative, nextafter, not_equal, power, reciprocal, remainder,
                          right_shift, round_, sign, sin, sqrt, subtract, tan, tanh, times, trunc, where, zeros)
from .indexing import add_at, assign, scatter_extreme, take, take_rows
from .kernels import (adam_, erf, gelu, gru_cell, gru_cell_backward, gru_layer, gru_layer_backward, layer_norm,
                      layer_norm_backward_, lstm_cell, lstm_cell_backward, lstm_layer, lstm_layer_backward,
                      max_pool2x2, max_pool2x2_backward, relu, relu_backward, rnn_layer_takes, rnn_native)
from .linalg import (LinAlgError, cholesky, cofactor, det, eigh, inv, lu_factor, lu_permutation, matrix_rank, qr,
                     slogdet, solve, solve_triangular, svd)
from .reductions import (_SOFTMAX_SHIFTLESS_MIN, _bmm_copies, _reduced, bmm, dot_along, einsum, exp_sums, log_softmax,
                         matmul, matmul_into, reduce, rowdot, softmax, softmax_backward, sum)
from .scan import cumprod, cumprod_grad, cumsum, logcumsumexp, logcumsumexp_grad, values
from .shapes import (Array, broadcast_shape, broadcast_to, expand, expand_dims, flip, reshape, reshape_any,
                     reshapes_as_view, roll, swapaxes, transpose)
from .sort import (bincount, cumext_indices, histogram, isin, median_indices, mode_indices, searchsorted,
                   searchsorted_1d, sort_indices, topk_indices, unique, unique_consecutive)
from .special import digamma, erfc, erfinv, lgamma, polygamma, trigamma
from .threads import PARALLEL_MIN, concurrently, get_num_threads, parallel, set_num_threads

xp = np  # the array namespace (NumPy today, CuPy later): code outside the backend says B.xp.name, never np
ndarray = np.ndarray

# Functions that never allocate (views, metadata) or are cold paths: used as they are.
asarray = np.asarray
array = np.array
squeeze = np.squeeze
take_along_axis = np.take_along_axis
put_along_axis = np.put_along_axis
errstate = np.errstate
isfinite = np.isfinite
isnan, isinf = np.isnan, np.isinf
isneginf, isposinf = np.isneginf, np.isposinf
signbit = np.signbit
nan_to_num = np.nan_to_num
heaviside = np.heaviside
frexp = np.frexp
ldexp = np.ldexp


def finfo(dtype: Any) -> Any:
    """``np.finfo``, bfloat16's included (from ml_dtypes: NumPy's knows no bfloat16)."""
    if dtype is LOW_PRECISION[0] and dtype is not None:
        return ML_DTYPES[0].finfo(dtype)
    return np.finfo(dtype)


result_type = np.result_type
can_cast = np.can_cast
pad = np.pad
argmax = np.argmax
argmin = np.argmin
argsort = np.argsort
concatenate = np.concatenate
stack = np.stack
arange = np.arange
linspace = np.linspace
eye = np.eye
ones = np.ones
full = np.full
zeros_like = np.zeros_like
copyto = np.copyto
nonzero = np.nonzero
unravel_index = np.unravel_index
indices = np.indices
tril_mask = np.tri
tril_indices, triu_indices = np.tril_indices, np.triu_indices
as_strided = np.lib.stride_tricks.as_strided  # sliding-window views for convolution and pooling
