"""Primitive ops: one ``Function`` each, forward beside backward.

Forward and backward take and return raw arrays and compute only through ``backend``. A backward
returns one gradient per input (None for inputs that need none); gradients of broadcast inputs
are summed back to the input's shape by the engine, in one place. Backward formulas are written
with backend calls (NumPy's functions, through ``B.xp`` or the backend's named wrappers), which
Tensors also accept: with ``create_graph=True`` the engine passes Tensors instead of arrays, and
the same formulas build a differentiable graph.

``saved`` holds the arrays backward needs; it is freed after backward unless the graph is
retained. Saved items are inputs, constants (masks, indices), or, when ``saves_out`` is set, the
output as the last item.

By subject: ``base`` (Function, the shared helpers, zero / not-implemented / first-only
derivatives, custom ops), ``elementwise``, ``reduce``, ``shape`` (views, joining, indexing), ``matmul``,
``linalg`` (inverses, determinants, solves, LU; LinAlgError) and ``decompositions`` (Cholesky, SVD, QR, eigh).
"""

from __future__ import annotations

from . import base, decompositions, elementwise, linalg, matmul, reduce, shape
from .base import (AccumulateGrad, CustomFunction, Function, FunctionCtx, NotDifferentiable, OnceDifferentiable,
                   ZeroGrad, _zeros, unbroadcast)
from .decompositions import Cholesky, EighFactor, QrFactor, SvdFactor
from .elementwise import (Abs, Acos, Acosh, Add, Asin, Asinh, Atan, Atan2, Atanh, Cast, Clamp, Copy, Cos, Digamma,
                          Div, Erf, Erfc, Erfinv, Exp, Expm1, Fmod, Hypot, Lgamma, Log, Log1p, LogSigmoid, Maximum,
                          Minimum, Mul, Neg, Polygamma, Pow, Relu, Remainder, Sigmoid, Sin, Softplus, Sqrt, Std, Sub,
                          Tan, Tanh, Where)
from .linalg import Det, Inv, LinAlgError, LogAbsDet, LuFactor, Solve, SolveTriangular
from .matmul import Einsum, MatMul
from .reduce import Amax, Amin, Cumprod, Cumsum, Logcumsumexp, LogSoftmax, MaxDim, Mean, Prod, Softmax, Sum
from .shape import (AsStrided, Cat, Diagonal, Expand, Flip, Gather, GetItem, IndexPut, Pad, Permute, Reshape, Roll,
                    Scatter, SliceGrad, Unfold, _put, storage)

_MODULES = (base, elementwise, reduce, shape, linalg, decompositions)  # the ones that make or recognise Tensors


def bind(tensor: type) -> None:
    """The one late binding: the primitives make Tensors and Tensor's methods call the primitives,
    so lightgrad.tensor, once it has defined Tensor, gives it to the modules here that need it
    (this package imports nothing above the backend)."""
    for module in _MODULES:
        vars(module)["Tensor"] = tensor
