"""The decompositions' primitives: Cholesky, and one node per factor of SVD, QR and eigh (LAPACK
through the backend, forward beside backward); ``_NoGrad`` for outputs whose derivative PyTorch
leaves undefined.

Each factor of a decomposition is its own node that shares the one factorization computed up front
by the caller (``_factors``): the backward of a decomposition is linear in the factors' gradients,
so the engine's sum of the nodes' gradients is the whole formula (PyTorch's svd_backward,
linalg_qr_backward, eigh's). Under create_graph the node sees its input as a Tensor and refactors it
differentiably.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .. import backend as B
from .base import Function
from .linalg import LinAlgError, _cat_last, _col, _diag_embed, _dtype, _inv_any, _mT, _not_pd, _row, _solve_any

if TYPE_CHECKING:
    from ..tensor import Tensor
else:
    Tensor = None  # bound by lightgrad.tensor (the one late binding: function.bind)


def _factors(F: type[Function], A: Tensor, arrays: tuple[Any, ...], count: int, **kw: Any) -> list[Tensor]:
    """Tensors of the first ``count`` factors, each a node of F when A requires grad."""
    if not A.requires_grad:
        return [Tensor._make(a) for a in arrays[:count]]
    return [F.apply(A, factors=arrays, which=i, **kw) for i in range(count)]


class _NoGrad(Function):
    """An output whose backward is not defined: the backward raises PyTorch's message."""

    def forward(self, A, out, msg):
        self.msg = msg
        return out

    def backward(self, g):
        raise RuntimeError(self.msg)


# ---- Cholesky: A = L L^T -------------------------------------------------------------------------

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
        dt = g.dtype if isinstance(g, B.ndarray) else g._data.dtype
        half_tril = B.subtract(B.tril_mask(n, dtype=dt), B.multiply(B.eye(n, dtype=dt), 0.5))
        phi = B.multiply(B.matmul(_mT(L), g), half_tril)
        Li = _inv_any(L)
        gA = B.matmul(B.matmul(_mT(Li), phi), Li)
        return (B.multiply(B.add(gA, _mT(gA)), 0.5),)


# ---- SVD: A = U diag(S) Vh ----------------------------------------------------------------------

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
        if isinstance(A, Tensor):  # create_graph: the reduced SVD again, as nodes
            u, s, vh = B.svd(A._data, full_matrices=False)
            U, S, Vh = _factors(SvdFactor, A, (u, s, vh), 3)
        k = S.shape[-1]
        if self.which == 0:
            return (_svd_grad(U, S, Vh, g[..., :, :k], None, None),)
        if self.which == 1:
            return (_svd_grad(U, S, Vh, None, g, None),)
        return (_svd_grad(U, S, Vh, None, None, g[..., :k, :]),)


# ---- QR: A = Q R --------------------------------------------------------------------------------

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
        if isinstance(A, Tensor):  # create_graph: the reduced QR again, as nodes
            q, r = B.qr(A._data, mode="reduced")
            Q, R = _factors(QrFactor, A, (q, r), 2)
        return (_qr_grad(Q, R, g, None) if self.which == 0 else _qr_grad(Q, R, None, g),)


# ---- eigh: A = V diag(L) V^T for symmetric A -------------------------------------------------------

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
        if isinstance(A, Tensor):  # create_graph: the eigendecomposition again, as nodes
            lam, vec = B.eigh(A._data, UPLO=self.uplo)
            L, V = _factors(EighFactor, A, (lam, vec), 2, uplo=self.uplo)
        return (_eigh_grad(L, V, g, None) if self.which == 0 else _eigh_grad(L, V, None, g),)
