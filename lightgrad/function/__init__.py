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
``linalg`` (inverses, determinants, solves, LU; LinAlgError), ``decompositions`` (Cholesky, SVD, QR, eigh),
``complex`` (the parts of complex numbers, and PyTorch's complex gradients) and ``fft`` (Fourier transforms: loaded
with lightgrad.fft, on first use).
"""

from __future__ import annotations

from .. import backend as B
from . import base, complex, decompositions, elementwise, linalg, matmul, reduce, shape
from .base import (AccumulateGrad, Function, MultiOutput, NotDifferentiable, OnceDifferentiable, ZeroGrad, _zeros,
                   unbroadcast)
from .decompositions import Cholesky, EighFactor, QrFactor, SvdFactor
from .elementwise import (Abs, Acos, Acosh, Add, Asin, Asinh, Atan, Atan2, Atanh, Cast, Clamp, Copy, Cos, Digamma,
                          Div, Erf, Erfc, Erfinv, Exp, Expm1, Fmod, Hypot, Lgamma, Log, Log1p, LogSigmoid, Maximum,
                          Minimum, Mul, Neg, Polygamma, Pow, Relu, Remainder, Sigmoid, Sin, Softplus, Sqrt, Std, Sub,
                          Tan, Tanh, Where)
from .linalg import Det, Inv, LinAlgError, LogAbsDet, LuFactor, Solve, SolveTriangular
from .matmul import Einsum, MatMul
from .complex import Angle, Complex, Conj, Imag, Real, ViewAsComplex, ViewAsReal
from .reduce import Amax, Amin, Cumprod, Cumsum, Logcumsumexp, LogSoftmax, MaxDim, Mean, Prod, Softmax, Sum
from .shape import (AsStrided, Cat, Diagonal, Expand, Flip, Gather, GetItem, IndexPut, Pad, Permute, Reshape, Roll,
                    Scatter, SliceGrad, Unfold, _put, storage)

_MODULES = (base, elementwise, reduce, shape, linalg, decompositions, complex)  # the ones that make or recognise Tensors


def bind(tensor: type) -> None:
    """The one late binding: the primitives make Tensors and Tensor's methods call the primitives,
    so lightgrad.tensor, once it has defined Tensor, gives it to the modules here that need it
    (this package imports nothing above the backend)."""
    for module in _MODULES:
        vars(module)["Tensor"] = tensor

# The primitives that move, copy or select elements (the views among them) take bfloat16 arrays as
# they are; every other one computes in float32 and rounds its result (Function.computes). (Where
# computes: NumPy would make bfloat16 and a Python number float64.)
_op: type[Function]
for _op in [*(v for v in vars(shape).values() if isinstance(v, type) and issubclass(v, Function)
              and v.__module__ == shape.__name__), Cast, Copy, ZeroGrad, OnceDifferentiable]:
    _op.computes = False
# PyTorch's add and sub round a Python number to bfloat16 before adding (mul and div do not), and its
# exp is accurate to the float32 result, which NumPy's float32 exp is not always: computed in float64.
Add.rounds_scalars = Sub.rounds_scalars = True
Exp.low_compute = B.xp.float64
# PyTorch 2.13's kernels for uint16/32/64 that the primitives have (the rest raise, naming the kernel)
Mul.bare_unsigned = True
Add.kernel = Sub.kernel = "add_stub"
Pow.kernel = "pow"
Clamp.kernel = "clamp_scalar_cpu"
