"""The decompositions: Cholesky, SVD, QR and eigh, each factor a primitive (LAPACK through the
backend, forward beside backward), and cholesky, cholesky_ex, svd, svdvals, qr, eigh, eigvalsh with
torch.svd's and torch.qr's older forms.

Each factor of a decomposition is its own node that shares the one factorization computed up front:
the backward of a decomposition is linear in the factors' gradients, so the engine's sum of the
nodes' gradients is the whole formula (PyTorch's svd_backward, linalg_qr_backward, eigh's).
Under create_graph the node sees its input as a Tensor and refactors it differentiably.
"""

from __future__ import annotations

import builtins
import math
import warnings
from collections import namedtuple
from typing import Any

from .. import backend as B
from ..function import Function
from ..tensor import Tensor
from .checks import LinAlgError, _cholesky_info, _info_tensor, _matrix_input, _not_pd, _square, _uplo
from .common import _cat_last, _col, _diag_embed, _dtype, _mT, _register, _row
from .inverse import _inv_any
from .solve import _solve_any

linalg_cholesky_ex = namedtuple("linalg_cholesky_ex", ["L", "info"])
linalg_svd = namedtuple("linalg_svd", ["U", "S", "Vh"])
svd_result = namedtuple("svd", ["U", "S", "V"])  # type: ignore[name-match]  # torch.return_types.svd
linalg_qr = namedtuple("linalg_qr", ["Q", "R"])
qr_result = namedtuple("qr", ["Q", "R"])  # type: ignore[name-match]  # torch.return_types.qr
linalg_eigh = namedtuple("linalg_eigh", ["eigenvalues", "eigenvectors"])
_register(linalg_cholesky_ex, linalg_svd, svd_result, linalg_qr, qr_result, linalg_eigh)


def _factors(F: type[Function], A: Tensor, arrays: tuple[Any, ...], count: builtins.int, **kw: Any) -> list[Tensor]:
    """Tensors of the first ``count`` factors, each a node of F when A requires grad."""
    if not A.requires_grad:
        return [Tensor._make(a) for a in arrays[:count]]
    return [F.apply(A, factors=arrays, which=i, **kw) for i in range(count)]


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


def cholesky(A: Tensor, *, upper: builtins.bool = False) -> Tensor:
    """Lower-triangular L with L L^T = A for symmetric positive-definite A (L^T when upper=True)."""
    L = Cholesky.apply(_square(A, "cholesky"))
    return L.mT if upper else L


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
    L = B.full(mats.shape, math.nan, A._data.dtype)
    for i, m in enumerate(mats):
        if not info.reshape(-1)[i]:
            L[i] = B.cholesky(m)
    L = L.reshape(A.shape)
    return linalg_cholesky_ex(Tensor._make(_mT(L) if upper else L), _info_tensor(info))


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
        if isinstance(A, Tensor):
            U, S, Vh = svd(A, full_matrices=False)
        k = S.shape[-1]
        if self.which == 0:
            return (_svd_grad(U, S, Vh, g[..., :, :k], None, None),)
        if self.which == 1:
            return (_svd_grad(U, S, Vh, None, g, None),)
        return (_svd_grad(U, S, Vh, None, None, g[..., :k, :]),)


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
        if isinstance(A, Tensor):
            Q, R = qr(A)
        return (_qr_grad(Q, R, g, None) if self.which == 0 else _qr_grad(Q, R, None, g),)


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
        if isinstance(A, Tensor):
            L, V = eigh(A, self.uplo)
        return (_eigh_grad(L, V, g, None) if self.which == 0 else _eigh_grad(L, V, None, g),)


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
