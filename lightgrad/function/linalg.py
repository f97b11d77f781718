"""Linear-algebra primitives (LAPACK through the backend, forward beside backward): Inv, Det,
LogAbsDet, Solve, SolveTriangular and LuFactor; with LinAlgError, the array-level reports of which
matrix of a batch failed and where, and the matrix pieces the gradient formulas share.

The input checks (shapes, dtypes) are the callers': Tensor's methods and lightgrad.linalg. Under
create_graph a backward sees Tensors and builds its graph from the primitives here, called
directly: their inputs were checked when the forward ran. The decompositions (Cholesky, SVD, QR,
eigh) are in ``decompositions``.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from .. import backend as B
from .base import Function
from .shape import Cat

if TYPE_CHECKING:
    from ..tensor import Tensor
else:
    Tensor = None  # bound by lightgrad.tensor (the one late binding: function.bind)


class LinAlgError(RuntimeError):
    """A matrix was singular or not positive-definite (``torch.linalg.LinAlgError``)."""


# ---- singular and indefinite matrices: PyTorch's messages and LAPACK's info -----------------------

def _batch_of(A: B.ndarray) -> str:
    """'(Batch element i): ' naming the first singular matrix of a batch, '' for a single matrix."""
    if A.ndim == 2:
        return ""
    for i, m in enumerate(A.reshape(-1, *A.shape[-2:])):
        try:
            B.inv(m)
        except B.LinAlgError:
            return f"(Batch element {i}): "
    return ""


def _not_pd(A: B.ndarray) -> str:
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


def _cholesky_info(A: B.ndarray) -> B.ndarray:
    """LAPACK potrf's info per matrix: the order of the first leading minor that is not positive-definite."""
    mats = A.reshape(-1, *A.shape[-2:])
    info = B.xp.zeros(mats.shape[0], B.xp.int32)
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


def _lu_info(A: B.ndarray) -> B.ndarray:
    """LAPACK getrf's info per matrix: 0, or the 1-based index of the first zero pivot of U."""
    return B.lu_factor(A)[2]


def _first_bad(info: B.ndarray) -> tuple[str, int]:
    """('(Batch element i): ' or '', info) for the first matrix whose info is nonzero."""
    flat = info.reshape(-1)
    i = int(B.xp.flatnonzero(flat)[0])
    return (f"(Batch element {i}): " if info.ndim else ""), int(flat[i])


# ---- matrix pieces, on arrays and Tensors alike (a backward sees Tensors under create_graph) --------

def _mT(x: Any) -> Any:
    return B.swapaxes(x, -1, -2)


def _col(v: Any) -> Any:
    """(..., k) -> (..., k, 1), for arrays and Tensors alike."""
    return B.reshape(v, tuple(v.shape) + (1,))


def _row(v: Any) -> Any:
    return B.reshape(v, tuple(v.shape[:-1]) + (1, v.shape[-1]))


def _dtype(x: Any) -> Any:
    return x._data.dtype if isinstance(x, Tensor) else x.dtype


def _diag_embed(v: Any) -> Any:
    return B.multiply(_col(v), B.eye(v.shape[-1], dtype=_dtype(v)))


def _cat_last(a: Any, b: Any) -> Any:
    """a and b joined along their last dim (the Cat primitive, with its graph, when either is a Tensor)."""
    if isinstance(a, Tensor) or isinstance(b, Tensor):
        return Cat.apply(a, b, dim=a.ndim - 1)
    return B.concatenate([a, b], -1)


def _cat_rows(a: Any, b: Any) -> Any:
    return _mT(_cat_last(_mT(a), _mT(b)))


def _stack(ts: list[Tensor], dim: int) -> Tensor:
    """Tensors of one shape joined along a new dim, recording the graph (``lightgrad.stack``'s)."""
    d = dim % (ts[0].ndim + 1)
    return Cat.apply(*[t.unsqueeze(d) for t in ts], dim=d)


def _tri_mask(n: int, dt: Any, upper: bool, strict: bool) -> Any:
    """1 on the (strict when ``strict``) upper or lower triangle of an n x n matrix, 0 elsewhere."""
    mask = B.tril_mask(n, k=-1 if strict else 0, dtype=dt)
    return _mT(mask) if upper else mask


def _triangle(A: Any, upper: bool, unit: bool) -> Any:
    """The triangle that a triangular solve reads from A (its diagonal taken as 1 when ``unit``)."""
    n, dt = A.shape[-1], _dtype(A)
    T = B.multiply(A, _tri_mask(n, dt, upper, unit))
    return B.add(T, B.eye(n, dtype=dt)) if unit else T


# ---- inverses and determinants ---------------------------------------------------------------------

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


def _inv_any(A: Any) -> Any:
    """A^-1 for an array, or a differentiable inverse for a Tensor (create_graph)."""
    return Inv.apply(A) if isinstance(A, Tensor) else B.inv(A)


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
                cof = _stack([_stack([Det.apply(A[..., keep[i], :][..., :, keep[j]]) * (-1.0) ** (i + j)
                                      for j in range(n)], -1) for i in range(n)], -2)
            else:
                cof = out.unsqueeze(-1).unsqueeze(-1) * Inv.apply(A).mT
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
            Ai = Inv.apply(A)
        else:
            try:
                Ai = B.inv(A)
            except B.LinAlgError:  # log|det| is -inf at a singular matrix: no gradient there
                Ai = B.full(A.shape, math.nan, A.dtype)
        return (B.multiply(B.reshape(g, tuple(g.shape) + (1, 1)), _mT(Ai)),)


# ---- linear systems: A X = b, and T X = b for a triangle T of A --------------------------------------

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
        gb = Solve.apply(_mT(A), g) if isinstance(A, Tensor) else B.solve(_mT(A), g)
        gA = B.negative(B.matmul(gb, _mT(X))) if self.needs(0) else None
        return gA, (gb if self.needs(1) else None)


def _solve_any(A: Any, b: Any) -> Any:
    """A^-1 b for arrays, or differentiably when either is a Tensor (create_graph)."""
    return Solve.apply(A, b) if isinstance(A, Tensor) or isinstance(b, Tensor) else B.solve(A, b)


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
            gb = SolveTriangular.apply(A.mT, g, upper=not self.upper, unit=self.unit)
        else:
            gb = B.solve_triangular(_mT(_triangle(A, self.upper, self.unit)), g)
        gA = None
        if self.needs(0):
            gA = B.multiply(B.negative(B.matmul(gb, _mT(X))),
                            _tri_mask(A.shape[-1], _dtype(A), self.upper, self.unit))
        return gA, (gb if self.needs(1) else None)


def _trsolve(T: Any, X: Any, upper: bool, unit: bool = False) -> Any:
    """T^-1 X for the triangle of T, on arrays, or differentiably when either is a Tensor (create_graph)."""
    if isinstance(T, Tensor) or isinstance(X, Tensor):
        return SolveTriangular.apply(T, X, upper=upper, unit=unit)
    return B.solve_triangular(_triangle(T, upper, unit), X)


# ---- LU with partial pivoting: A = P L U -----------------------------------------------------------

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
            _, L, U = _lu_nodes(A, (0, 1, 2))[0]
        if self.which == 1:
            return (_lu_grad(L, U, P, g, None),)
        if self.which == 2:
            return (_lu_grad(L, U, P, None, g),)
        m, n = g.shape[-2:]  # the packed LU is (L - I) + U: split its gradient between them
        k, dt = min(m, n), _dtype(L)
        gL = B.multiply(g[..., :, :k], B.tril_mask(m, k, k=-1, dtype=dt))
        gU = B.multiply(g[..., :k, :], _mT(B.tril_mask(n, k, dtype=dt)))
        return (_lu_grad(L, U, P, gL, gU),)


def _unpack(lu_: B.ndarray, piv: B.ndarray) -> tuple[B.ndarray, B.ndarray, B.ndarray]:
    """(P, L, U) arrays from a packed LU (..., m, n) and its pivots."""
    m, n = lu_.shape[-2:]
    k = min(m, n)
    dt = lu_.dtype
    L = (lu_[..., :, :k] * B.tril_mask(m, k, k=-1, dtype=dt)) + B.eye(m, k, dtype=dt)
    U = lu_[..., :k, :] * _mT(B.tril_mask(n, k, dtype=dt))
    return B.lu_permutation(piv, m).astype(dt), L, U


def _lu_nodes(A: Tensor, want: tuple[int, ...]) -> tuple[list[Tensor], B.ndarray, B.ndarray]:
    """Tensors of the wanted LU outputs (0: P, 1: L, 2: U, 3: packed LU) of a checked A, with the
    pivots and info."""
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
