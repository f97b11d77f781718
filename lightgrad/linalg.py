"""torch.linalg's common functions: norms, inverse, determinants, solve, matrix power, Cholesky,
and the decompositions (svd, qr, eigh) with what is built on them (pinv, lstsq, matrix_rank, cond).

Every function works on batches of matrices (..., m, n) as PyTorch's does. inv, det, slogdet,
solve, cholesky and the factors of svd, qr and eigh are primitives here (LAPACK through the
backend, forward beside backward); the others are built from them and from Tensor ops.

>>> import lightgrad as torch
>>> torch.linalg.inv(torch.tensor([[2.0, 0.0], [0.0, 4.0]]))
tensor([[0.5000, 0.0000],
        [0.0000, 0.2500]])
"""

from __future__ import annotations

import builtins
import math
import warnings
from collections import namedtuple
from typing import Any

import numpy as np

from . import backend as B
from . import dtypes as D
from .function import Function
from .tensor import Tensor, _as_tensor, _dim, return_types, stack, where

__all__ = ["LinAlgError", "vector_norm", "matrix_norm", "norm", "inv", "det", "slogdet", "logdet", "solve",
           "matrix_power", "cholesky", "cross", "svd", "svdvals", "qr", "eigh", "eigvalsh", "pinv", "lstsq",
           "matrix_rank", "cond"]

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
        if isinstance(A, Tensor):  # create_graph: the cofactors as differentiable functions of A
            n = A.shape[-1]
            if n > 1 and (B.matrix_rank(A._data) < n).any():
                # a singular A: each cofactor is the signed determinant of its minor (det A^-T is
                # not defined there, and inv's huge entries times det's ~0 gave a wrong answer)
                keep = [[k for k in range(n) if k != i] for i in range(n)]
                cof = stack([stack([A[..., keep[i], :][..., :, keep[j]].det() * (-1.0) ** (i + j)
                                    for j in range(n)], -1) for i in range(n)], -2)
            else:
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
    if ord not in _MATRIX_ORDS and ord not in ("nuc", 2, -2):
        raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")
    d0, d1 = _dim(dim[0], A.ndim), _dim(dim[1], A.ndim)
    if ord in ("nuc", 2, -2):  # from the singular values of the matrices moved to the last two dims
        rest = [d for d in range(A.ndim) if d not in (d0, d1)]
        S = svdvals(A.permute(*rest, d0, d1))
        out = S.sum(-1) if ord == "nuc" else S.amax(-1) if ord == 2 else S.amin(-1)
        return out.unsqueeze(builtins.min(d0, d1)).unsqueeze(builtins.max(d0, d1)) if keepdim else out
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


# ---- decompositions: SVD, QR, eigh -------------------------------------------------------------
# Each factor of a decomposition is its own node that shares the one factorization computed up front:
# the backward of a decomposition is linear in the factors' gradients, so the engine's sum of the
# nodes' gradients is the whole formula (PyTorch's svd_backward, linalg_qr_backward, eigh's).
# Under create_graph the node sees its input as a Tensor and refactors it differentiably.

linalg_svd = namedtuple("linalg_svd", ["U", "S", "Vh"])
svd_result = namedtuple("svd", ["U", "S", "V"])  # type: ignore[name-match]  # torch.return_types.svd
linalg_qr = namedtuple("linalg_qr", ["Q", "R"])
qr_result = namedtuple("qr", ["Q", "R"])  # type: ignore[name-match]  # torch.return_types.qr
linalg_eigh = namedtuple("linalg_eigh", ["eigenvalues", "eigenvectors"])
linalg_lstsq = namedtuple("linalg_lstsq", ["solution", "residuals", "rank", "singular_values"])
for _kind in (slogdet_result, linalg_svd, svd_result, linalg_qr, qr_result, linalg_eigh, linalg_lstsq):
    setattr(return_types, _kind.__name__, _kind)  # lightgrad.return_types.linalg_svd, as torch.return_types


def _col(v: Any) -> Any:
    """(..., k) -> (..., k, 1), for arrays and Tensors alike."""
    return B.reshape(v, tuple(v.shape) + (1,))


def _row(v: Any) -> Any:
    return B.reshape(v, tuple(v.shape[:-1]) + (1, v.shape[-1]))


def _dtype(x: Any) -> Any:
    return x._data.dtype if isinstance(x, Tensor) else x.dtype


def _diag_embed(v: Any) -> Any:
    return B.multiply(_col(v), B.eye(v.shape[-1], dtype=_dtype(v)))


def _solve_any(A: Any, b: Any) -> Any:
    return solve(A, b) if isinstance(A, Tensor) or isinstance(b, Tensor) else B.solve(A, b)


def _cat_last(a: Any, b: Any) -> Any:
    if isinstance(a, Tensor) or isinstance(b, Tensor):
        from .tensor import cat
        return cat([_as_tensor(a), _as_tensor(b)], -1)
    return B.concatenate([a, b], -1)


def _svd_grad(U: Any, S: Any, Vh: Any, gU: Any, gS: Any, gVh: Any) -> Any:
    """PyTorch's svd_backward (real case) for the reduced SVD A = U diag(S) Vh."""
    if gU is None and gVh is None:
        return B.matmul(B.multiply(U, _row(gS)), Vh)
    m, n, k = U.shape[-2], Vh.shape[-1], S.shape[-1]
    dt = _dtype(U)
    eye = B.eye(k, dtype=dt)
    S2 = B.multiply(S, S)
    E = B.add(B.subtract(_row(S2), _col(S2)), eye)  # S_j^2 - S_i^2 off the diagonal, 1 on it
    V = _mT(Vh)
    gA: Any = None
    if gU is not None:
        UhgU = B.matmul(_mT(U), gU)
        gA = B.multiply(B.subtract(UhgU, _mT(UhgU)), _row(S))
    if gVh is not None:
        VhgV = B.matmul(Vh, _mT(gVh))
        term = B.multiply(_col(S), B.subtract(VhgV, _mT(VhgV)))
        gA = term if gA is None else B.add(gA, term)
    gA = B.divide(gA, E)
    if gS is not None:
        gA = B.add(gA, _diag_embed(gS))
    if m > k and gU is not None:  # + (I - U U^T) gU S^-1 V^T
        gA = B.matmul(U, gA)
        gUSinv = B.divide(gU, _row(S))
        gA = B.add(gA, B.subtract(gUSinv, B.matmul(U, B.matmul(_mT(U), gUSinv))))
        return B.matmul(gA, Vh)
    if n > k and gVh is not None:  # + U S^-1 gV^T (I - V V^T)
        gA = B.matmul(gA, Vh)
        SinvgVh = B.divide(gVh, _col(S))
        gA = B.add(gA, B.subtract(SinvgVh, B.matmul(B.matmul(SinvgVh, V), Vh)))
        return B.matmul(U, gA)
    return B.matmul(U, B.matmul(gA, Vh))


class SvdFactor(Function):
    """One factor (0: U, 1: S, 2: Vh) of an SVD computed by the caller; k = min(m, n) columns of it count."""

    def forward(self, A, factors, which):
        u, s, vh = factors
        k = s.shape[-1]
        self.saved = (A, u[..., :, :k], s, vh[..., :k, :])
        self.which = which
        return factors[which]

    def backward(self, g):
        A, U, S, Vh = self.saved
        if isinstance(A, Tensor):
            U, S, Vh = svd(A, full_matrices=False)
        k = S.shape[-1]
        if self.which == 0:
            return (_svd_grad(U, S, Vh, g[..., :, :k], None, None),)
        if self.which == 1:
            return (_svd_grad(U, S, Vh, None, g, None),)
        return (_svd_grad(U, S, Vh, None, None, g[..., :k, :]),)


def _qr_grad(Q: Any, R: Any, gQ: Any, gR: Any) -> Any:
    """PyTorch's linalg_qr_backward (real case) for A = Q R, Q (m, k), R (k, n), k = min(m, n)."""
    m, n = Q.shape[-2], R.shape[-1]
    if m < n:  # R = [X | Y] with A[:, :m] = Q X and A[:, m:] = Q Y: Y feeds back into gQ
        X, Y = R[..., :, :m], R[..., :, m:]
        gY = B.zeros(Y.shape, _dtype(R)) if gR is None else gR[..., :, m:]
        gX = None if gR is None else gR[..., :, :m]
        gQY = B.matmul(Q, B.matmul(Y, _mT(gY)))
        gQ = gQY if gQ is None else B.add(gQ, gQY)
        return _cat_last(_qr_grad(Q, X, gQ, gX), B.matmul(Q, gY))
    dt = _dtype(R)
    M: Any = B.zeros(R.shape[:-2] + (n, n), dt)
    if gR is not None:
        M = B.matmul(gR, _mT(R))
    if gQ is not None:
        M = B.subtract(M, B.matmul(_mT(Q), gQ))
    M = B.multiply(M, _mT(B.tril_mask(n, dtype=dt)))  # triu
    M = B.subtract(B.add(M, _mT(M)), B.multiply(M, B.eye(n, dtype=dt)))  # syminvadj: X + X^T - diag X
    gA = B.matmul(Q, M)
    if gQ is not None:
        gA = B.add(gA, gQ)
    return _mT(_solve_any(R, _mT(gA)))  # gA R^-T


class QrFactor(Function):
    def forward(self, A, factors, which):
        self.saved = (A,) + factors
        self.which = which
        return factors[which]

    def backward(self, g):
        A, Q, R = self.saved
        if isinstance(A, Tensor):
            Q, R = qr(A)
        return (_qr_grad(Q, R, g, None) if self.which == 0 else _qr_grad(Q, R, None, g),)


def _eigh_grad(L: Any, V: Any, gL: Any, gV: Any) -> Any:
    """PyTorch's eigh backward: gA = V (diag(gL) + skew(V^T gV) / E) V^T, E_ij = L_j - L_i."""
    if gV is None:
        return B.matmul(B.multiply(V, _row(gL)), _mT(V))
    dt = _dtype(V)
    n = L.shape[-1]
    eye = B.eye(n, dtype=dt)
    VhgV = B.matmul(_mT(V), gV)
    VhgV = B.multiply(B.subtract(VhgV, _mT(VhgV)), 0.5)
    E = B.add(B.subtract(_row(L), _col(L)), eye)
    inner = B.multiply(B.divide(VhgV, E), B.subtract(1.0, eye))
    if gL is not None:
        inner = B.add(inner, _diag_embed(gL))
    return B.matmul(V, B.matmul(inner, _mT(V)))


class EighFactor(Function):
    def forward(self, A, factors, which, uplo):
        self.saved = (A,) + factors
        self.which, self.uplo = which, uplo
        return factors[which]

    def backward(self, g):
        A, L, V = self.saved
        if isinstance(A, Tensor):
            L, V = eigh(A, self.uplo)
        return (_eigh_grad(L, V, g, None) if self.which == 0 else _eigh_grad(L, V, None, g),)


def _matrix_input(A: Any, name: str) -> Tensor:
    A = _as_tensor(A)
    if A.ndim < 2:
        raise RuntimeError(f"linalg.{name}: The input tensor A must have at least 2 dimensions.")
    _floating_input(A, name)
    return A


def _factors(F: type[Function], A: Tensor, arrays: tuple[Any, ...], count: builtins.int, **kw: Any) -> list[Tensor]:
    """Tensors of the first ``count`` factors, each a node of F when A requires grad."""
    if not A.requires_grad:
        return [Tensor._make(a) for a in arrays[:count]]
    return [F.apply(A, factors=arrays, which=i, **kw) for i in range(count)]


def svd(A: Tensor, full_matrices: builtins.bool = True, *, driver: Any = None) -> linalg_svd:
    """(U, S, Vh) with A = U diag(S) Vh, S descending: ``U, S, Vh = torch.linalg.svd(A)``.

    With full_matrices=True the gradients of the extra columns of U and rows of Vh are ignored, as in
    PyTorch (they are any bases of the complements)."""
    A = _matrix_input(A, "svd")
    if driver is not None:
        raise RuntimeError("torch.linalg.svd: keyword argument `driver=` is only supported on CUDA inputs with "
                           "cuSOLVER backend.")
    u, s, vh = B.svd(A._data, full_matrices=full_matrices)
    return linalg_svd(*_factors(SvdFactor, A, (u, s, vh), 3))


def svdvals(A: Tensor, *, driver: Any = None) -> Tensor:
    """Singular values of each matrix, descending: ``torch.linalg.svdvals(A)``."""
    A = _matrix_input(A, "svd")
    if driver is not None:
        raise RuntimeError("torch.linalg.svd: keyword argument `driver=` is only supported on CUDA inputs with "
                           "cuSOLVER backend.")
    if not A.requires_grad:
        return Tensor._make(B.svd(A._data, compute_uv=False))
    u, s, vh = B.svd(A._data, full_matrices=False)
    return SvdFactor.apply(A, factors=(u, s, vh), which=1)


def _svd_old(input: Tensor, some: builtins.bool = True, compute_uv: builtins.bool = True) -> svd_result:  # noqa: A002
    """torch.svd: (U, S, V) with A = U diag(S) V^T (reduced unless some=False)."""
    A = _matrix_input(input, "svd")
    if not compute_uv:  # PyTorch fills U and V with zeros then
        m, n = A.shape[-2:]
        z = A._data.dtype
        S = svdvals(A)
        return svd_result(Tensor._make(B.zeros(A.shape[:-2] + (m, m), z)), S,
                          Tensor._make(B.zeros(A.shape[:-2] + (n, n), z)))
    U, S, Vh = svd(A, full_matrices=not some)
    return svd_result(U, S, Vh.mT)


_QR_MODES = ("reduced", "complete", "r")


def qr(A: Tensor, mode: str = "reduced") -> linalg_qr:
    """(Q, R) with A = Q R, Q orthonormal columns, R upper-triangular; mode 'reduced', 'complete' or 'r'."""
    A = _matrix_input(A, "qr")
    if mode not in _QR_MODES:
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of 'reduced' (default), "
                           f"'r', or 'complete'")
    m, n = A.shape[-2:]
    if mode == "r":
        R = Tensor._make(B.qr(A._data, mode="r"))
        if A.requires_grad:
            R = _NoGrad.apply(A, out=R._data, msg="The derivative of linalg.qr depends on Q, which is not computed when "
                              "mode='r'. Please use linalg.qr(A, mode='reduced') if you are going to differentiate "
                              "through linalg.qr.")
        return linalg_qr(Tensor._make(B.zeros((0,), A._data.dtype)), R)
    q, r = B.qr(A._data, mode=mode)
    if mode == "complete" and m > n and A.requires_grad:
        msg = "The QR decomposition is not differentiable when mode='complete' and nrows > ncols."
        return linalg_qr(_NoGrad.apply(A, out=q, msg=msg), _NoGrad.apply(A, out=r, msg=msg))
    return linalg_qr(*_factors(QrFactor, A, (q, r), 2))


class _NoGrad(Function):
    """An output whose backward is not defined: the backward raises PyTorch's message."""

    def forward(self, A, out, msg):
        self.msg = msg
        return out

    def backward(self, g):
        raise RuntimeError(self.msg)


def _qr_old(input: Tensor, some: builtins.bool = True) -> qr_result:  # noqa: A002
    """torch.qr: (Q, R), reduced unless some=False."""
    warnings.warn("torch.qr is deprecated in favor of torch.linalg.qr and will be removed in a future PyTorch "
                  "release.\nThe boolean parameter 'some' has been replaced with a string parameter 'mode'.\n"
                  "Q, R = torch.qr(A, some)\nshould be replaced with\n"
                  "Q, R = torch.linalg.qr(A, 'reduced' if some else 'complete')", UserWarning, stacklevel=3)
    return qr_result(*qr(input, "reduced" if some else "complete"))


def _uplo(UPLO: str) -> str:
    if UPLO not in ("L", "U", "l", "u"):
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {UPLO}")
    return UPLO.upper()


def eigh(A: Tensor, UPLO: str = "L") -> linalg_eigh:
    """(eigenvalues ascending, eigenvectors as columns) of symmetric A, read from its UPLO triangle."""
    A = _square(A, "eigh")
    uplo = _uplo(UPLO)
    L, V = B.eigh(A._data, UPLO=uplo)
    return linalg_eigh(*_factors(EighFactor, A, (L, V), 2, uplo=uplo))


def eigvalsh(A: Tensor, UPLO: str = "L") -> Tensor:
    """Eigenvalues (ascending) of symmetric A, read from its UPLO triangle."""
    A = _square(A, "eigh")
    uplo = _uplo(UPLO)
    L, V = B.eigh(A._data, UPLO=uplo)
    return _factors(EighFactor, A, (L, V), 1, uplo=uplo)[0]


def _tolerance(S: Tensor, m: builtins.int, n: builtins.int, atol: Any, rtol: Any) -> Tensor:
    """max(atol, rtol * S_max) per matrix as (..., 1), with PyTorch's default rtol = eps * max(m, n)."""
    if rtol is None:
        rtol = np.finfo(S._data.dtype).eps * builtins.max(m, n) if atol is None or _is_zero(atol) else 0.0
    smax = S.detach().amax(-1, keepdim=True) if S.shape[-1] else S.detach().sum(-1, keepdim=True)
    tol = smax * _as_tensor(rtol, S).unsqueeze(-1) if isinstance(rtol, Tensor) else smax * rtol
    if atol is not None:
        at = _as_tensor(atol, S)
        tol = tol.maximum(at.unsqueeze(-1) if at.ndim else at)
    return tol


def _is_zero(x: Any) -> builtins.bool:
    return not isinstance(x, Tensor) and x == 0


_SCALAR_NAMES = D.SCALAR_NAMES


def pinv(A: Tensor, *, atol: Any = None, rtol: Any = None, hermitian: builtins.bool = False) -> Tensor:
    """Moore-Penrose pseudo-inverse from the SVD (eigh when hermitian), dropping values <= tolerance."""
    A = _as_tensor(A)
    if A.ndim < 2 or A._data.dtype.kind != "f":
        kind = _SCALAR_NAMES.get(A.dtype.name, A.dtype.name.capitalize())
        raise RuntimeError(f"linalg.pinv({kind}{{{list(A.shape)}}}): expected a tensor with 2 or more dimensions "
                           f"of float, double, cfloat or cdouble types")
    m, n = A.shape[-2:]
    if hermitian:
        L, V = eigh(A)
        tol = _tolerance(L.abs(), m, n, atol, rtol)
        keep = L.abs() > tol
        Linv = where(keep, 1.0 / where(keep, L, 1.0), 0.0)
        return (V * Linv.unsqueeze(-2)) @ V.mT
    U, S, Vh = svd(A, full_matrices=False)
    tol = _tolerance(S, m, n, atol, rtol)
    keep = S > tol
    Sinv = where(keep, 1.0 / where(keep, S, 1.0), 0.0)  # (the inner where keeps 1/0 out of the gradient)
    return (Vh.mT * Sinv.unsqueeze(-2)) @ U.mT


def matrix_rank(A: Tensor, tol: Any = None, hermitian: builtins.bool = False, *, atol: Any = None,
                rtol: Any = None) -> Tensor:
    """Number of singular values above max(atol, rtol * S_max) per matrix (int64)."""
    A = _as_tensor(A)
    if A.ndim < 2:
        raise RuntimeError("torch.linalg.matrix_rank: The input tensor input must have at least 2 dimensions.")
    _floating_input(A, "matrix_rank")
    if tol is not None:  # the old overload: tol is an absolute tolerance
        atol, rtol = tol, 0.0
    m, n = A.shape[-2:]
    A = A.detach()
    S = eigvalsh(A).abs() if hermitian else svdvals(A)
    return (S > _tolerance(S, m, n, atol, rtol)).sum(-1)


def cond(A: Tensor, p: Any = None) -> Tensor:
    """Condition number ||A||_p ||A^-1||_p; by singular values for p = None, 2, -2 (any shape)."""
    A = _as_tensor(A)
    if p not in (None, 2, -2, "fro", "nuc", 1, -1, math.inf, -math.inf):
        raise RuntimeError(f"linalg.cond got an invalid norm type: {p}")
    if p in (None, 2, -2):
        S = svdvals(_matrix_input(A, "cond"))
        if not S.shape[-1]:
            return S.sum(-1)
        big, small = S[..., 0], S[..., -1]
        with B.errstate(divide="ignore", invalid="ignore"):  # inf or nan for a singular matrix, as PyTorch
            return big / small if p != -2 else small / big
    if A.ndim < 2 or A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"linalg.cond(ord={p}): A must be batches of square matrices, but they are "
                           f"{A.shape[-2] if A.ndim > 1 else 1} by {A.shape[-1] if A.ndim else 1} matrices")
    _floating_input(A, "cond")
    try:
        Ai = inv(A)
    except LinAlgError:  # PyTorch gives inf for a singular matrix instead of raising
        mats = A._data.reshape(-1, *A.shape[-2:])
        singular = np.array([np.linalg.matrix_rank(x) < x.shape[-1] for x in mats]).reshape(A.shape[:-2])
        safe = where(Tensor._make(singular).unsqueeze(-1).unsqueeze(-1),
                     Tensor._make(B.eye(A.shape[-1], dtype=A._data.dtype)), A)
        out = matrix_norm(safe, p) * matrix_norm(inv(safe), p)
        # (PyTorch's 'nuc' takes the SVD of a NaN inverse there: NaN; the other orders give inf)
        return where(Tensor._make(singular), math.nan if p == "nuc" else math.inf, out)
    return matrix_norm(A, p) * matrix_norm(Ai, p)


_DRIVERS = ("gels", "gelsy", "gelsd", "gelss")


def lstsq(A: Tensor, B_: Tensor, rcond: Any = None, *, driver: Any = None) -> linalg_lstsq:
    """Least-squares X minimising ||A X - B|| (minimum norm where A is rank-deficient), via the SVD.

    Returns (solution, residuals, rank, singular_values), filled per driver as PyTorch does on CPU:
    residuals (squared column norms of A X - B) when m > n and every matrix has full rank (not for
    the default 'gelsy'); rank for all drivers but 'gels'; singular values for 'gelsd' and 'gelss'."""
    A = _as_tensor(A)
    b = _as_tensor(B_, A)
    if driver is None:
        driver = "gelsy"
    if driver not in _DRIVERS:
        raise RuntimeError("torch.linalg.lstsq: parameter `driver` should be one of (gels, gelsy, gelsd, gelss)")
    if A.ndim < 2:
        raise RuntimeError("torch.linalg.lstsq: input must have at least 2 dimensions.")
    _floating_input(A, "lstsq")
    if b.dtype != A.dtype:
        raise RuntimeError(f"torch.linalg.lstsq: Expected input and other to have the same dtype, but got "
                           f"input's dtype {A.dtype} and other's dtype {b.dtype}")
    vector = b.ndim == A.ndim - 1
    bm = b.unsqueeze(-1) if vector else b
    if bm.ndim < 2 or bm.shape[-2] != A.shape[-2]:
        raise RuntimeError("torch.linalg.lstsq: input.size(-2) should match other.size(-2)")
    m, n = A.shape[-2:]
    dt = A._data.dtype
    U, S, Vh = svd(A, full_matrices=False)
    rtol = np.finfo(dt).eps * builtins.max(m, n) if rcond is None or rcond < 0 else rcond
    tol = _tolerance(S, m, n, None, rtol)
    keep = S > tol
    Sinv = where(keep, 1.0 / where(keep, S, 1.0), 0.0)
    X = (Vh.mT * Sinv.unsqueeze(-2)) @ (U.mT @ bm)
    rank = keep.sum(-1)
    empty = Tensor._make(B.zeros((0,), dt))
    residuals = empty
    if driver != "gelsy" and m > n and builtins.bool((rank == n).all()):
        residuals = ((A @ X - bm) ** 2).sum(-2).detach()
        if vector:
            residuals = residuals.squeeze(-1)
    rank_out = rank if driver != "gels" else Tensor._make(B.zeros((0,), np.int64))
    svals = S.detach() if driver in ("gelsd", "gelss") else empty
    return linalg_lstsq(X.squeeze(-1) if vector else X, residuals, rank_out, svals)


# ---- triangular solve, the _ex variants, LU, and more (linalg extras) ---------------------------------

linalg_solve_triangular_old = namedtuple("triangular_solve", ["solution", "cloned_coefficient"])  # type: ignore[name-match]
linalg_cholesky_ex = namedtuple("linalg_cholesky_ex", ["L", "info"])
linalg_inv_ex = namedtuple("linalg_inv_ex", ["inverse", "info"])
linalg_solve_ex = namedtuple("linalg_solve_ex", ["result", "info"])
linalg_lu_factor = namedtuple("linalg_lu_factor", ["LU", "pivots"])
linalg_lu_factor_ex = namedtuple("linalg_lu_factor_ex", ["LU", "pivots", "info"])
linalg_lu = namedtuple("linalg_lu", ["P", "L", "U"])
lu_unpack_result = namedtuple("lu_unpack", ["P", "L", "U"])  # type: ignore[name-match]
for _extra in (linalg_solve_triangular_old, linalg_cholesky_ex, linalg_inv_ex, linalg_solve_ex, linalg_lu_factor,
              linalg_lu_factor_ex, linalg_lu, lu_unpack_result):
    setattr(return_types, _extra.__name__, _extra)

__all__ += ["solve_triangular", "cholesky_ex", "inv_ex", "solve_ex", "lu_factor", "lu_factor_ex", "lu", "lu_solve",
            "multi_dot", "vecdot", "matrix_exp", "tensorinv", "tensorsolve", "diagonal"]


def _tri_mask(n: builtins.int, dt: Any, upper: builtins.bool, strict: builtins.bool) -> Any:
    """1 on the (strict when ``strict``) upper or lower triangle of an n x n matrix, 0 elsewhere."""
    mask = B.tril_mask(n, k=-1 if strict else 0, dtype=dt)
    return _mT(mask) if upper else mask


def _triangle(A: Any, upper: builtins.bool, unit: builtins.bool) -> Any:
    """The triangle that a triangular solve reads from A (its diagonal taken as 1 when ``unit``)."""
    n, dt = A.shape[-1], _dtype(A)
    T = B.multiply(A, _tri_mask(n, dt, upper, unit))
    return B.add(T, B.eye(n, dtype=dt)) if unit else T


class SolveTriangular(Function):
    saves_out = True

    def forward(self, A, b, upper, unit):
        self.upper, self.unit = upper, unit
        out = B.solve_triangular(_triangle(A, upper, unit), b)
        self.saved = (A, out)
        return out

    def backward(self, g):
        A, X = self.saved
        # T X = b: gb = T^-T g, gA = -gb X^T on the triangle T reads (off the diagonal when unit)
        if isinstance(A, Tensor):
            gb = solve_triangular(A.mT, g, upper=not self.upper, unitriangular=self.unit)
        else:
            gb = B.solve_triangular(_mT(_triangle(A, self.upper, self.unit)), g)
        gA = None
        if self.needs(0):
            gA = B.multiply(B.negative(B.matmul(gb, _mT(X))),
                            _tri_mask(A.shape[-1], _dtype(A), self.upper, self.unit))
        return gA, (gb if self.needs(1) else None)


def _broadcast_pair(A: Tensor, b: Tensor, name: str) -> tuple[Tensor, Tensor]:
    """A (..., n, n) and b (..., n, k) expanded to their common batch shape."""
    try:
        batch = B.broadcast_shape(A.shape[:-2], b.shape[:-2])
    except ValueError:
        raise RuntimeError(f"{name}: the batch dims of A {list(A.shape[:-2])} and B {list(b.shape[:-2])} do not "
                           f"broadcast") from None
    Ab = A.expand(batch + A.shape[-2:]) if A.shape[:-2] != batch else A
    bb = b.expand(batch + b.shape[-2:]) if b.shape[:-2] != batch else b
    return Ab, bb


def solve_triangular(A: Tensor, B_: Tensor, *, upper: builtins.bool, left: builtins.bool = True,
                     unitriangular: builtins.bool = False) -> Tensor:
    """X with T X = B for the upper or lower triangle T of A (X T = B when left=False).

    >>> torch.linalg.solve_triangular(torch.tensor([[2.0, 1.0], [0.0, 4.0]]), torch.ones(2, 1), upper=True)
    tensor([[0.3750],
            [0.2500]])"""
    A = _as_tensor(A)
    b = _as_tensor(B_, A)
    if A.ndim < 2 or A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"linalg.solve_triangular: A must be batches of square matrices, but they are "
                           f"{A.shape[-2] if A.ndim > 1 else 1} by {A.shape[-1] if A.ndim else 1} matrices")
    if b.ndim < 2:
        raise RuntimeError("linalg.solve_triangular: The input tensor B must have at least 2 dimensions.")
    if A._data.dtype.kind != "f" or b._data.dtype.kind != "f":
        raise NotImplementedError(f"\"triangular_solve_cpu\" not implemented for "
                                  f"'{_SCALAR_NAMES.get(A.dtype.name, A.dtype.name)}'")
    if b.dtype != A.dtype:  # PyTorch promotes the two
        wide = A.dtype if A._data.dtype.itemsize >= b._data.dtype.itemsize else b.dtype
        A, b = A.to(wide), b.to(wide)
    if not left:  # X T = B is T^T X^T = B^T
        return solve_triangular(A.mT, b.mT, upper=not upper, unitriangular=unitriangular).mT
    n = A.shape[-1]
    if b.shape[-2] != n:
        raise RuntimeError(f"linalg.solve_triangular: Incompatible shapes of A and B for the equation AX = B "
                           f"({A.shape[-2]}x{A.shape[-1]} and {b.shape[-2]}x{b.shape[-1]})")
    Ab, bb = _broadcast_pair(A, b, "linalg.solve_triangular")
    return SolveTriangular.apply(Ab, bb, upper=builtins.bool(upper), unit=builtins.bool(unitriangular))


def _triangular_solve_old(input: Tensor, A: Tensor, upper: builtins.bool = True,  # noqa: A002
                          transpose: builtins.bool = False,
                          unitriangular: builtins.bool = False) -> linalg_solve_triangular_old:
    """torch.triangular_solve(b, A): (X, A.clone()) with T X = b, T^T X = b when transpose=True."""
    A = _as_tensor(A)
    if A.ndim < 2 or A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"A must be batches of square matrices, but they are "
                           f"{A.shape[-2] if A.ndim > 1 else 1} by {A.shape[-1] if A.ndim else 1} matrices")
    T = A.mT if transpose else A
    X = solve_triangular(T, input, upper=upper != builtins.bool(transpose), unitriangular=unitriangular)
    return linalg_solve_triangular_old(X, A.clone())


# ---- the _ex variants: an int32 info per matrix instead of an error ----------------------------------

def _info_tensor(info: Any) -> Tensor:
    return Tensor._make(np.asarray(info, np.int32))


def _cholesky_info(A: np.ndarray) -> np.ndarray:
    """LAPACK potrf's info per matrix: the order of the first leading minor that is not positive-definite."""
    mats = A.reshape(-1, *A.shape[-2:])
    info = np.zeros(mats.shape[0], np.int32)
    for bi, m in enumerate(mats):
        try:
            B.cholesky(m)
            continue
        except B.LinAlgError:
            pass
        for k in range(1, m.shape[-1] + 1):
            try:
                B.cholesky(m[:k, :k])
            except B.LinAlgError:
                info[bi] = k
                break
    return info.reshape(A.shape[:-2])


def cholesky_ex(A: Tensor, *, upper: builtins.bool = False, check_errors: builtins.bool = False) -> linalg_cholesky_ex:
    """(L, info): Cholesky factor and, per matrix, 0 or the order of the first minor that is not positive-definite.

    Where info != 0 the factor holds NaN (PyTorch leaves a partial factorization) and has no gradient."""
    A = _square(A, "cholesky")
    info = _cholesky_info(A._data)
    if not info.any():
        return linalg_cholesky_ex(cholesky(A, upper=upper), _info_tensor(info))
    if check_errors:
        raise LinAlgError(_not_pd(A._data).replace("linalg.cholesky:", "linalg.cholesky_ex:"))
    mats = A._data.reshape(-1, *A.shape[-2:])
    L = np.full(mats.shape, np.nan, A._data.dtype)
    for i, m in enumerate(mats):
        if not info.reshape(-1)[i]:
            L[i] = B.cholesky(m)
    L = L.reshape(A.shape)
    return linalg_cholesky_ex(Tensor._make(_mT(L) if upper else L), _info_tensor(info))


def _lu_info(A: np.ndarray) -> np.ndarray:
    return B.lu_factor(A)[2]


def _first_bad(info: np.ndarray) -> tuple[str, builtins.int]:
    """('(Batch element i): ' or '', info) for the first matrix whose info is nonzero."""
    flat = info.reshape(-1)
    i = builtins.int(np.flatnonzero(flat)[0])
    return (f"(Batch element {i}): " if info.ndim else ""), builtins.int(flat[i])


def inv_ex(A: Tensor, *, check_errors: builtins.bool = False) -> linalg_inv_ex:
    """(inverse, info): info is 0, or the 1-based index of the zero diagonal element of U in A = P L U."""
    A = _square(A, "inv")
    info = _lu_info(A._data)
    if not info.any():
        return linalg_inv_ex(Inv.apply(A), _info_tensor(info))
    if check_errors:
        batch, k = _first_bad(info)
        raise LinAlgError(f"linalg.inv_ex: {batch}The diagonal element {k} is zero, the inversion could not be "
                          f"completed because the input matrix is singular.")
    with B.errstate(divide="ignore", invalid="ignore"):
        X = lu_solve(*lu_factor_ex(A.detach())[:2], _eye_like(A))
    return linalg_inv_ex(X, _info_tensor(info))


def _eye_like(A: Tensor) -> Tensor:
    return Tensor._make(B.eye(A.shape[-1], dtype=A._data.dtype)).expand(A.shape)


def solve_ex(A: Tensor, B_: Tensor, *, left: builtins.bool = True,
             check_errors: builtins.bool = False) -> linalg_solve_ex:
    """(result, info) of ``solve``: info is nonzero for a singular matrix instead of an error."""
    A = _square(A, "solve")
    info = _lu_info(A._data)
    if not info.any():
        return linalg_solve_ex(solve(A, B_, left=left), _info_tensor(info))
    if check_errors:
        raise LinAlgError("torch.linalg.solve_ex: The solver failed because the input matrix is singular.")
    with B.errstate(divide="ignore", invalid="ignore"):
        LU, piv = lu_factor_ex(A.detach())[:2]
        b = _as_tensor(B_, A)
        vector = b.ndim == 1 or (b.ndim == A.ndim - 1 and b.shape == A.shape[:-1])
        X = lu_solve(LU, piv, b.unsqueeze(-1) if vector else b, left=left)
    return linalg_solve_ex(X.squeeze(-1) if vector else X, _info_tensor(info))


# ---- LU: A = P L U with partial pivoting (LAPACK's getrf in the backend) -----------------------------

def _trsolve(T: Any, X: Any, upper: builtins.bool, unit: builtins.bool = False) -> Any:
    """T^-1 X for the triangle of T, on arrays, or differentiably when either is a Tensor (create_graph)."""
    if isinstance(T, Tensor) or isinstance(X, Tensor):
        return solve_triangular(_as_tensor(T), _as_tensor(X), upper=upper, unitriangular=unit)
    return B.solve_triangular(_triangle(T, upper, unit), X)


def _cat_rows(a: Any, b: Any) -> Any:
    return _mT(_cat_last(_mT(a), _mT(b)))


def _lu_grad(L: Any, U: Any, P: Any, gL: Any, gU: Any) -> Any:
    """PyTorch's linalg_lu_backward for A = P L U, L (m, k) unit lower, U (k, n) upper, k = min(m, n).

    With L1, U1 the square k x k blocks: phi = tril(L1^T gL1 - gU2 U2^T, -1) + triu(gU1 U1^T - L2^T gL2)
    and gA = P [L1^-T phi U1^-T, L1^-T gU2] (wide) or P [L1^-T phi U1^-T; gL2 U1^-T] (tall); the extra
    blocks L2 = B2 U1^-1 and U2 = L1^-1 B2 pass their gradients straight through one solve."""
    m, n = L.shape[-2], U.shape[-1]
    k, dt = L.shape[-1], _dtype(L)
    L1, U1 = L[..., :k, :], U[..., :, :k]
    lower_part: Any = None  # adjoint of L1^-1 dL1 (strictly lower) and of dU1 U1^-1 (upper)
    upper_part: Any = None
    if gL is not None:
        lower_part = B.matmul(_mT(L1), gL[..., :k, :])
        if m > k:
            upper_part = B.negative(B.matmul(_mT(L[..., k:, :]), gL[..., k:, :]))
    if gU is not None:
        term = B.matmul(gU[..., :, :k], _mT(U1))
        upper_part = term if upper_part is None else B.add(upper_part, term)
        if n > k:
            term = B.negative(B.matmul(gU[..., :, k:], _mT(U[..., :, k:])))
            lower_part = term if lower_part is None else B.add(lower_part, term)
    phi: Any = None
    if lower_part is not None:
        phi = B.multiply(lower_part, B.tril_mask(k, k=-1, dtype=dt))
    if upper_part is not None:
        term = B.multiply(upper_part, _mT(B.tril_mask(k, dtype=dt)))
        phi = term if phi is None else B.add(phi, term)
    if phi is None:
        phi = B.zeros(tuple(L.shape[:-2]) + (k, k), dt)
    # L1^-T phi U1^-T, the right solve as the transpose of U1^-1 (.)^T
    core = _mT(_trsolve(U1, _mT(_trsolve(_mT(L1), phi, upper=True, unit=True)), upper=True))
    if n > k:
        extra = _trsolve(_mT(L1), gU[..., :, k:], upper=True, unit=True) if gU is not None else \
            B.zeros(tuple(L.shape[:-2]) + (k, n - k), dt)
        core = _cat_last(core, extra)
    elif m > k:
        extra = _mT(_trsolve(U1, _mT(gL[..., k:, :]), upper=True)) if gL is not None else \
            B.zeros(tuple(L.shape[:-2]) + (m - k, k), dt)
        core = _cat_rows(core, extra)
    return B.matmul(P, core)


class LuFactor(Function):
    """One output of an LU computed by the caller: which = 1 (L), 2 (U), or 3 (the packed LU)."""

    def forward(self, A, factors, which):
        self.which = which
        P, L, U, LU = factors
        self.saved = (A, P, L, U)
        return (P, L, U, LU)[which]

    def backward(self, g):
        A, P, L, U = self.saved
        if isinstance(A, Tensor):  # create_graph: refactor differentiably (P is a constant)
            _, L, U = lu(A)
        if self.which == 1:
            return (_lu_grad(L, U, P, g, None),)
        if self.which == 2:
            return (_lu_grad(L, U, P, None, g),)
        m, n = g.shape[-2:]  # the packed LU is (L - I) + U: split its gradient between them
        k, dt = builtins.min(m, n), _dtype(L)
        gL = B.multiply(g[..., :, :k], B.tril_mask(m, k, k=-1, dtype=dt))
        gU = B.multiply(g[..., :k, :], _mT(B.tril_mask(n, k, dtype=dt)))
        return (_lu_grad(L, U, P, gL, gU),)


def _lu_input(A: Any, name: str, prefix: str = "linalg") -> Tensor:
    A = _as_tensor(A)
    if A.ndim < 2:
        raise RuntimeError(f"{prefix}.{name}: Expected tensor with 2 or more dimensions. Got size: {list(A.shape)} "
                           f"instead")
    if A._data.dtype.kind != "f":
        raise NotImplementedError(f"\"lu_cpu\" not implemented for '{_SCALAR_NAMES.get(A.dtype.name, A.dtype.name)}'")
    return A


def _unpack(lu_: np.ndarray, piv: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(P, L, U) arrays from a packed LU (..., m, n) and its pivots."""
    m, n = lu_.shape[-2:]
    k = builtins.min(m, n)
    dt = lu_.dtype
    L = (lu_[..., :, :k] * B.tril_mask(m, k, k=-1, dtype=dt)) + B.eye(m, k, dtype=dt)
    U = lu_[..., :k, :] * _mT(B.tril_mask(n, k, dtype=dt))
    return B.lu_permutation(piv, m).astype(dt), L, U


def _lu_nodes(A: Tensor, want: tuple[builtins.int, ...]) -> tuple[list[Tensor], np.ndarray, np.ndarray]:
    """Tensors of the wanted LU outputs (0: P, 1: L, 2: U, 3: packed LU), with the pivots and info."""
    lu_, piv, info = B.lu_factor(A._data)
    P, L, U = _unpack(lu_, piv)
    arrays = (P, L, U, lu_)
    out = []
    for w in want:
        if not A.requires_grad or w == 0:  # (P is piecewise constant: no gradient, as PyTorch)
            out.append(Tensor._make(arrays[w]))
        else:
            out.append(LuFactor.apply(A, factors=arrays, which=w))
    return out, piv, info


def lu_factor_ex(A: Tensor, *, pivot: builtins.bool = True,
                 check_errors: builtins.bool = False) -> linalg_lu_factor_ex:
    """(LU, pivots, info): L below the diagonal (unit diagonal implied) and U on and above it, packed in one
    matrix; pivots are LAPACK's 1-based int32 row swaps; info is 0 or the first zero pivot (1-based)."""
    A = _lu_input(A, "lu_factor_ex", "torch")
    if not pivot:
        raise RuntimeError("linalg.lu_factor: LU without pivoting is not implemented on the CPU")
    (LU,), piv, info = _lu_nodes(A, (3,))
    if check_errors and info.any():
        batch, k = _first_bad(info)
        raise RuntimeError(f"torch.linalg.lu_factor_ex: {batch}U[{k},{k}] is zero and using it on lu_solve would "
                           f"result in a division by zero. If you still want to perform the factorization, consider "
                           f"calling linalg.lu(A, pivot) or linalg.lu_factor_ex(A, pivot)")
    return linalg_lu_factor_ex(LU, Tensor._make(piv), _info_tensor(info))


def lu_factor(A: Tensor, *, pivot: builtins.bool = True) -> linalg_lu_factor:
    """(LU, pivots) of A = P L U, packed as LAPACK's getrf; raises for a singular A (use lu_factor_ex).

    >>> LU, pivots = torch.linalg.lu_factor(torch.tensor([[1.0, 2.0], [3.0, 4.0]]))"""
    A = _lu_input(A, "lu_factor", "torch")
    if not pivot:
        raise RuntimeError("linalg.lu_factor: LU without pivoting is not implemented on the CPU")
    (LU,), piv, info = _lu_nodes(A, (3,))
    if info.any():
        batch, k = _first_bad(info)
        raise RuntimeError(f"torch.linalg.lu_factor: {batch}U[{k},{k}] is zero and using it on lu_solve would "
                           f"result in a division by zero. If you still want to perform the factorization, consider "
                           f"calling linalg.lu(A, pivot) or linalg.lu_factor_ex(A, pivot)")
    return linalg_lu_factor(LU, Tensor._make(piv))


def lu(A: Tensor, *, pivot: builtins.bool = True) -> linalg_lu:
    """(P, L, U) with A = P L U: P a permutation, L unit lower-triangular (m x k), U upper (k x n)."""
    A = _lu_input(A, "lu")
    if not pivot:
        raise RuntimeError("linalg.lu_factor: LU without pivoting is not implemented on the CPU")
    (P, L, U), _, _ = _lu_nodes(A, (0, 1, 2))
    return linalg_lu(P, L, U)


def lu_unpack(LU_data: Tensor, LU_pivots: Tensor, unpack_data: builtins.bool = True,
              unpack_pivots: builtins.bool = True) -> lu_unpack_result:
    """torch.lu_unpack: (P, L, U) from the packed LU and pivots of ``lu_factor`` (differentiable in LU)."""
    LU = _as_tensor(LU_data)
    piv = _as_tensor(LU_pivots)
    m, n = LU.shape[-2:]
    k = builtins.min(m, n)
    empty = Tensor._make(B.zeros((0,), LU._data.dtype))
    L = U = P = empty
    if unpack_data:
        L = LU[..., :, :k].tril(-1) + Tensor._make(B.eye(m, k, dtype=LU._data.dtype))
        U = LU[..., :k, :].triu()
    if unpack_pivots:
        P = Tensor._make(B.lu_permutation(piv._data, m).astype(LU._data.dtype))
    return lu_unpack_result(P, L, U)


def lu_solve(LU: Tensor, pivots: Tensor, B_: Tensor, *, left: builtins.bool = True,
             adjoint: builtins.bool = False) -> Tensor:
    """X with A X = B given ``LU, pivots = lu_factor(A)`` (X A = B when left=False, A^T for adjoint=True).

    Built from two triangular solves, so it differentiates in both B and LU."""
    LU = _as_tensor(LU)
    b = _as_tensor(B_, LU)
    if LU.ndim < 2 or LU.shape[-1] != LU.shape[-2]:
        raise RuntimeError(f"torch.linalg.lu_solve: A must be batches of square matrices, but they are "
                           f"{LU.shape[-2] if LU.ndim > 1 else 1} by {LU.shape[-1] if LU.ndim else 1} matrices")
    if b.ndim < 2:
        raise RuntimeError("linalg.lu_solve: The input tensor B must have at least 2 dimensions.")
    n = LU.shape[-1]
    if b.shape[-2 if left else -1] != n:
        eq, shp = ("AX = B", f"{b.shape[-2]}x{b.shape[-1]}") if left else ("XA = B", f"{b.shape[-2]}x{b.shape[-1]}")
        raise RuntimeError(f"linalg.lu_solve: Incompatible shapes of A and B for the equation {eq} ({n}x{n} and "
                           f"{shp})")
    if not left:  # X A = B is A^T X^T = B^T
        return lu_solve(LU, pivots, b.mT, adjoint=not adjoint).mT
    P, _, _ = lu_unpack(LU.detach(), pivots, unpack_data=False)
    if adjoint:  # A^T X = B with A = P L U: X = P L^-T U^-T B
        Y = solve_triangular(LU.mT, b, upper=False)  # U^T is the lower triangle of LU^T
        return P @ solve_triangular(LU.mT, Y, upper=True, unitriangular=True)
    Y = solve_triangular(LU, P.mT @ b, upper=False, unitriangular=True)
    return solve_triangular(LU, Y, upper=True)


# ---- products, exponential, tensor inverse and solve (composites) ---------------------------------------

def multi_dot(tensors: Any) -> Tensor:
    """A @ B @ ... of a list of matrices; the first may be a row vector and the last a column (1-D)."""
    ts = [_as_tensor(t) for t in tensors]
    if len(ts) < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {len(ts)}")
    if ts[0].ndim not in (1, 2):
        raise RuntimeError(f"multi_dot(): the first tensor must be 1D or 2D but got {ts[0].ndim}D")
    if ts[-1].ndim not in (1, 2):
        raise RuntimeError(f"multi_dot(): the last tensor must be 1D or 2D but got {ts[-1].ndim}D")
    for i, t in enumerate(ts[1:-1], 1):
        if t.ndim != 2:
            raise RuntimeError(f"multi_dot(): tensor {i} must be 2D but got {t.ndim}D")
    first_vec, last_vec = ts[0].ndim == 1, ts[-1].ndim == 1
    mats = [ts[0].unsqueeze(0) if first_vec else ts[0]] + ts[1:-1] + [ts[-1].unsqueeze(-1) if last_vec else ts[-1]]
    for i in range(len(mats) - 1):
        if mats[i].shape[-1] != mats[i + 1].shape[-2]:
            raise RuntimeError(f"multi_dot(): tensors {i} and {i + 1} with shapes {list(ts[i].shape)} and "
                               f"{list(ts[i + 1].shape)} cannot be multiplied")
    out = mats[0]
    for m in mats[1:]:
        out = out @ m
    if last_vec:
        out = out.squeeze(-1)
    return out.squeeze(0) if first_vec else out


def vecdot(x: Tensor, y: Tensor, *, dim: builtins.int = -1) -> Tensor:
    """Dot product of x and y along ``dim``, broadcasting the other dims: ``(x * y).sum(dim)``."""
    x, y = _as_tensor(x), _as_tensor(y)
    if x.shape[dim] != y.shape[dim]:
        raise RuntimeError(f"linalg.vecdot: Expected x and y to have the same size along dim {dim}, but got "
                           f"{x.shape[dim]} and {y.shape[dim]}")
    return (x * y).sum(dim)


_EXP_TERMS = 18  # Taylor terms after scaling to ||A|| <= 1/2: 0.5^19 / 19! is far below float64's eps


def matrix_exp(A: Tensor) -> Tensor:
    """exp(A) = I + A + A^2/2! + ... by scaling and squaring of a Taylor polynomial (Tensor ops, so it
    differentiates itself).

    >>> torch.linalg.matrix_exp(torch.zeros(2, 2))
    tensor([[1., 0.],
            [0., 1.]])"""
    A = _square(A, "matrix_exp")
    n = A.shape[-1]
    eye = Tensor._make(B.eye(n, dtype=A._data.dtype))
    if n == 0 or A.numel() == 0:
        return A.clone()
    norm1 = builtins.float(np.max(np.sum(np.abs(A._data), axis=-2))) if A.numel() else 0.0
    if not math.isfinite(norm1):
        s = 0
    else:
        s = builtins.max(0, math.ceil(math.log2(norm1 / 0.5))) if norm1 > 0.5 else 0
    X = A * (2.0 ** -s) if s else A
    # Horner: I + X (I + X/2 (I + X/3 (...)))
    out = eye + X / _EXP_TERMS
    for k in range(_EXP_TERMS - 1, 0, -1):
        out = eye + (X @ out) / k
    for _ in range(s):
        out = out @ out
    return out


def tensorinv(A: Tensor, ind: builtins.int = 2) -> Tensor:
    """The tensor X with tensordot(A, X, ind) = I: inv of A seen as a (prod(shape[:ind]), rest) matrix."""
    A = _as_tensor(A)
    if ind <= 0:
        raise RuntimeError(f"Expected a strictly positive integer for 'ind', but got {ind}")
    rows, cols = math.prod(A.shape[:ind]), math.prod(A.shape[ind:])
    if rows != cols:
        raise RuntimeError(f"Expected self to satisfy the requirement prod(self.shape[ind:]) == "
                           f"prod(self.shape[:ind]), but got {cols} != {rows}")
    return inv(A.reshape(rows, cols)).reshape(*A.shape[ind:], *A.shape[:ind])


def tensorsolve(A: Tensor, B_: Tensor, dims: Any = None) -> Tensor:
    """X with tensordot(A, X, X.ndim) = B; ``dims`` of A are moved to the end first."""
    A = _as_tensor(A)
    b = _as_tensor(B_, A)
    if dims is not None:
        dims = [d % A.ndim for d in dims]
        A = A.permute(*[d for d in range(A.ndim) if d not in dims], *dims)
    rest = A.shape[b.ndim:]
    rows, cols = math.prod(A.shape[:b.ndim]), math.prod(rest)
    if rows != cols:
        raise RuntimeError(f"Expected self to satisfy the requirement prod(self.shape[other.ndim:]) == "
                           f"prod(self.shape[:other.ndim]), but got {cols} != {rows}")
    return solve(A.reshape(rows, cols), b.reshape(rows)).reshape(*rest)


def diagonal(A: Tensor, *, offset: builtins.int = 0, dim1: builtins.int = -2, dim2: builtins.int = -1) -> Tensor:
    """The diagonal of each matrix (over dims dim1, dim2): ``A.diagonal(offset, dim1, dim2)``."""
    return _as_tensor(A).diagonal(offset, dim1, dim2)
