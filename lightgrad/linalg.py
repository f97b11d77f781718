"""torch.linalg's common functions: norms, inverse, determinants, solve, matrix power, Cholesky.

Every function works on batches of matrices (..., n, n) as PyTorch's does. inv, det, slogdet,
solve and cholesky are primitives here (LAPACK through the backend, forward beside backward);
the others are built from them and from Tensor ops.

>>> import lightgrad as torch
>>> torch.linalg.inv(torch.tensor([[2.0, 0.0], [0.0, 4.0]]))
tensor([[0.5000, 0.0000],
        [0.0000, 0.2500]])
"""

from __future__ import annotations

import builtins
import math
from collections import namedtuple
from typing import Any

import numpy as np

from . import backend as B
from .function import Function
from .tensor import Tensor, _as_tensor, _dim, where

__all__ = ["LinAlgError", "vector_norm", "matrix_norm", "norm", "inv", "det", "slogdet", "logdet", "solve",
           "matrix_power", "cholesky", "cross"]

slogdet_result = namedtuple("slogdet_result", ["sign", "logabsdet"])


class LinAlgError(RuntimeError):
    """A matrix was singular or not positive-definite (``torch.linalg.LinAlgError``)."""


# ---- checks ------------------------------------------------------------------------------------

def _square(A: Any, name: str) -> Tensor:
    """A as a floating tensor of (batches of) square matrices, or PyTorch's error."""
    A = _as_tensor(A)
    if A.ndim < 2:
        raise RuntimeError(f"linalg.{name}: The input tensor A must have at least 2 dimensions.")
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"linalg.{name}: A must be batches of square matrices, but they are "
                           f"{A.shape[-2]} by {A.shape[-1]} matrices")
    _floating_input(A, name)
    return A


def _floating_input(A: Tensor, name: str) -> None:
    if A._data.dtype.kind != "f":
        raise RuntimeError(f"linalg.{name}: Expected a floating point or complex tensor as input. "
                           f"Got {A.dtype.name.capitalize() if A.dtype.name != 'int64' else 'Long'}")


def _batch_of(A: np.ndarray) -> str:
    """'(Batch element i): ' naming the first singular matrix of a batch, '' for a single matrix."""
    if A.ndim == 2:
        return ""
    for i, m in enumerate(A.reshape(-1, *A.shape[-2:])):
        try:
            B.inv(m)
        except B.LinAlgError:
            return f"(Batch element {i}): "
    return ""


def _mT(x: Any) -> Any:
    return B.swapaxes(x, -1, -2)


def _inv_any(A: Any) -> Any:
    """A^-1 for an array, or a differentiable inverse for a Tensor (create_graph)."""
    return inv(A) if isinstance(A, Tensor) else B.inv(A)


# ---- primitives --------------------------------------------------------------------------------

class Inv(Function):
    saves_out = True

    def forward(self, A):
        try:
            out = B.inv(A)
        except B.LinAlgError:
            raise LinAlgError(f"linalg.inv: {_batch_of(A)}The inversion could not be completed because "
                              f"the input matrix is singular.") from None
        self.saved = (out,)
        return out

    def backward(self, g):
        Ai_t = _mT(self.saved[0])  # d(A^-1) = -A^-1 dA A^-1, so gA = -A^-T g A^-T
        return (B.negative(B.matmul(B.matmul(Ai_t, g), Ai_t)),)


class Det(Function):
    saves_out = True

    def forward(self, A):
        out = B.det(A)
        out = B.asarray(out, A.dtype)
        self.saved = (A, out)
        return out

    def backward(self, g):
        A, out = self.saved
        if isinstance(A, Tensor):  # create_graph: det(A) A^-T, differentiable (A invertible)
            cof = out.unsqueeze(-1).unsqueeze(-1) * inv(A).mT
        else:  # the cofactor matrix: also right where A is singular (det A^-T is not defined there)
            cof = B.cofactor(A)
        return (B.multiply(B.reshape(g, tuple(g.shape) + (1, 1)), cof),)


class LogAbsDet(Function):
    def forward(self, A):
        _, out = B.slogdet(A)
        self.saved = (A,)
        return B.asarray(out, A.dtype)

    def backward(self, g):
        A = self.saved[0]
        if isinstance(A, Tensor):
            Ai = inv(A)
        else:
            try:
                Ai = B.inv(A)
            except B.LinAlgError:  # log|det| is -inf at a singular matrix: no gradient there
                Ai = B.full(A.shape, np.nan, A.dtype)
        return (B.multiply(B.reshape(g, tuple(g.shape) + (1, 1)), _mT(Ai)),)


class Solve(Function):
    saves_out = True

    def forward(self, A, b):
        try:
            out = B.solve(A, b)
        except B.LinAlgError:
            raise LinAlgError("torch.linalg.solve: The solver failed because the input matrix is "
                              "singular.") from None
        self.saved = (A, out)
        return out

    def backward(self, g):
        A, X = self.saved
        # A X = b: gb = A^-T g, gA = -gb X^T
        gb = solve(_mT(A), g) if isinstance(A, Tensor) else B.solve(_mT(A), g)
        gA = B.negative(B.matmul(gb, _mT(X))) if self.needs(0) else None
        return gA, (gb if self.needs(1) else None)


class Cholesky(Function):
    saves_out = True

    def forward(self, A):
        try:
            out = B.cholesky(A)
        except B.LinAlgError:
            raise LinAlgError(_not_pd(A)) from None
        self.saved = (out,)
        return out

    def backward(self, g):
        L = self.saved[0]
        n = L.shape[-1]
        # PyTorch's rule: Phi = tril(L^T gL) with its diagonal halved, gA = sym(L^-T Phi L^-1)
        dt = g.dtype if isinstance(g, np.ndarray) else g._data.dtype
        half_tril = B.subtract(B.tril_mask(n, dtype=dt), B.multiply(B.eye(n, dtype=dt), 0.5))
        phi = B.multiply(B.matmul(_mT(L), g), half_tril)
        Li = _inv_any(L)
        gA = B.matmul(B.matmul(_mT(Li), phi), Li)
        return (B.multiply(B.add(gA, _mT(gA)), 0.5),)


def _not_pd(A: np.ndarray) -> str:
    """PyTorch's message for a matrix that is not positive-definite, naming the failing minor."""
    mats = A.reshape(-1, *A.shape[-2:])
    for bi, m in enumerate(mats):
        for k in range(1, m.shape[-1] + 1):
            try:
                B.cholesky(m[:k, :k])
            except B.LinAlgError:
                batch = f"(Batch element {bi}): " if A.ndim > 2 else ""
                return (f"linalg.cholesky: {batch}The factorization could not be completed because the input "
                        f"is not positive-definite (the leading minor of order {k} is not positive-definite).")
    return "linalg.cholesky: The factorization could not be completed because the input is not positive-definite."


# ---- public functions ----------------------------------------------------------------------------

def inv(A: Tensor) -> Tensor:
    """Inverse of each square matrix: ``inv(A) @ A`` is the identity; singular A raises LinAlgError."""
    return Inv.apply(_square(A, "inv"))


def det(A: Tensor) -> Tensor:
    """Determinant of each square matrix (shape: the batch dims)."""
    return Det.apply(_square(A, "det"))


def slogdet(A: Tensor) -> slogdet_result:
    """(sign, log|det|) of each square matrix; log|det| is -inf for a singular one."""
    A = _square(A, "slogdet")
    sign, _ = B.slogdet(A._data)
    return slogdet_result(Tensor._make(B.asarray(sign, A._data.dtype)), LogAbsDet.apply(A))


def logdet(A: Tensor) -> Tensor:
    """log det A: NaN where det A < 0, -inf where it is 0."""
    sign, lad = slogdet(_square(A, "logdet"))
    return where(sign < 0, math.nan, lad)


def solve(A: Tensor, B_: Tensor, *, left: builtins.bool = True) -> Tensor:
    """X with A X = B (X A = B when left=False); B may be a vector or a batch of either."""
    A = _square(A, "solve")
    b = _as_tensor(B_, A)
    if b.dtype != A.dtype:
        raise RuntimeError(f"linalg.solve: Expected A and B to have the same dtype, but found A of type "
                           f"{A.dtype} and B of type {b.dtype} instead")
    if not left:
        return solve(A.mT, b.mT).mT
    n = A.shape[-1]
    vector = b.ndim == 1 or (b.ndim == A.ndim - 1 and b.shape == A.shape[:-1])
    bm = b.unsqueeze(-1) if vector else b
    if bm.ndim < 2 or bm.shape[-2] != n:
        raise RuntimeError(f"linalg.solve: Incompatible shapes of A and B for the equation AX = B "
                           f"({A.shape[-2]}x{A.shape[-1]} and {bm.shape[-2] if bm.ndim > 1 else bm.shape[0]}x"
                           f"{bm.shape[-1] if bm.ndim > 1 else 1})")
    try:
        batch = B.broadcast_shape(A.shape[:-2], bm.shape[:-2])
    except ValueError:
        raise RuntimeError(f"linalg.solve: the batch dims of A {list(A.shape[:-2])} and B "
                           f"{list(bm.shape[:-2])} do not broadcast") from None
    Ab = A.expand(batch + A.shape[-2:]) if A.shape[:-2] != batch else A
    bb = bm.expand(batch + bm.shape[-2:]) if bm.shape[:-2] != batch else bm
    x = Solve.apply(Ab, bb)
    return x.squeeze(-1) if vector else x


def matrix_power(A: Tensor, n: builtins.int) -> Tensor:
    """A @ A @ ... (n times) by repeated squaring; n = 0 gives the identity, n < 0 powers of inv(A)."""
    A = _as_tensor(A)
    if A.ndim < 2 or A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"linalg.matrix_power: A must be batches of square matrices, but they are "
                           f"{A.shape[-2] if A.ndim > 1 else 1} by {A.shape[-1] if A.ndim else 1} matrices")
    if n == 0:
        eye = Tensor._make(B.eye(A.shape[-1], dtype=A._data.dtype))
        return eye.expand(A.shape).clone()
    if n < 0:
        A, n = inv(A), -n
    base = A
    while not n & 1:  # the lowest set bit of n starts the product (n > 0 here)
        base = base.matmul(base)
        n >>= 1
    result = base
    n >>= 1
    while n:
        base = base.matmul(base)
        if n & 1:
            result = result.matmul(base)
        n >>= 1
    return result


def cholesky(A: Tensor, *, upper: builtins.bool = False) -> Tensor:
    """Lower-triangular L with L L^T = A for symmetric positive-definite A (L^T when upper=True)."""
    L = Cholesky.apply(_square(A, "cholesky"))
    return L.mT if upper else L


def cross(input: Tensor, other: Tensor, *, dim: builtins.int = -1) -> Tensor:  # noqa: A002
    """Cross product of 3-vectors along ``dim`` (the last by default, unlike ``torch.cross``)."""
    return _as_tensor(input).cross(other, dim)


def vector_norm(x: Tensor, ord: Any = 2, dim: Any = None, keepdim: builtins.bool = False, *,  # noqa: A002
                dtype: Any = None) -> Tensor:
    """(sum |x|^ord)^(1/ord) over ``dim`` (all elements by default); ord may be inf, -inf or 0."""
    x = _as_tensor(x)
    if dtype is not None:
        x = x.to(dtype)
    _floating_input(x, "vector_norm")
    if isinstance(ord, str):
        raise RuntimeError(f"linalg.vector_norm: ord must be a number, got {ord!r}")
    d = dim if dim is None or isinstance(dim, builtins.int) else tuple(dim)
    if ord < 0 and ord != -math.inf:
        return (x.abs() ** ord).sum(d, keepdim) ** (1.0 / ord)
    return x.norm(ord, d, keepdim)


_MATRIX_ORDS = ("fro", 1, -1, math.inf, -math.inf)


def matrix_norm(A: Tensor, ord: Any = "fro", dim: tuple[builtins.int, builtins.int] = (-2, -1),  # noqa: A002
                keepdim: builtins.bool = False, *, dtype: Any = None) -> Tensor:
    """Matrix norm over the two ``dim`` dims: 'fro', 1 / -1 (max / min column sum), inf / -inf (rows)."""
    A = _as_tensor(A)
    if dtype is not None:
        A = A.to(dtype)
    _floating_input(A, "matrix_norm")
    if A.ndim < 2:
        raise RuntimeError("linalg.matrix_norm: The input tensor A must have at least 2 dimensions.")
    if ord in ("nuc", 2, -2):
        raise NotImplementedError(f"linalg.matrix_norm: ord={ord!r} needs singular values, which lightgrad "
                                  f"does not compute; supported: 'fro', 1, -1, inf, -inf")
    if ord not in _MATRIX_ORDS:
        raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")
    d0, d1 = _dim(dim[0], A.ndim), _dim(dim[1], A.ndim)
    if ord == "fro":
        return vector_norm(A, 2, (d0, d1), keepdim)
    # 1: the largest column sum (sum over rows d0, then the max over d1); inf: the transpose of that
    inner, outer = (d0, d1) if ord in (1, -1) else (d1, d0)
    s = A.abs().sum(inner, keepdim=True)
    out = s.amax(outer, keepdim=True) if ord > 0 else s.amin(outer, keepdim=True)
    return out if keepdim else out.squeeze((d0, d1))


def norm(A: Tensor, ord: Any = None, dim: Any = None, keepdim: builtins.bool = False, *,  # noqa: A002
         dtype: Any = None) -> Tensor:
    """vector_norm or matrix_norm, chosen as PyTorch does from ord and dim."""
    A = _as_tensor(A)
    if dim is not None and not isinstance(dim, builtins.int) and len(dim) == 2:
        return matrix_norm(A, "fro" if ord is None else ord, tuple(dim), keepdim, dtype=dtype)
    if ord is None:
        return vector_norm(A, 2, dim, keepdim, dtype=dtype)
    if dim is None:
        if A.ndim not in (1, 2):
            raise RuntimeError(f"linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. "
                               f"Got {A.ndim}D.")
        if A.ndim == 2:
            return matrix_norm(A, ord, (-2, -1), keepdim, dtype=dtype)
    return vector_norm(A, ord, dim, keepdim, dtype=dtype)
