"""Matrix decompositions in lightgrad.linalg (svd, qr, eigh, pinv, lstsq, ...) against PyTorch.

Factors are unique only up to signs of columns, so values are compared through sign-free
quantities (reconstructions, singular values, projectors, squared entries) and gradients through
losses invariant to those signs, against PyTorch and against finite differences in float64.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import lightgrad as lg
from tests.helpers import numeric_grads

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(7)
SHAPES = [(4, 3), (3, 4), (3, 3), (2, 4, 3), (2, 1, 3, 5)]


def _weights(*shape: int) -> np.ndarray:
    return np.random.default_rng(sum(shape) + len(shape)).standard_normal(shape)


def _both(f: Callable[..., Any], *arrays: np.ndarray) -> tuple[list[np.ndarray], list[np.ndarray], Any, Any]:
    """Gradients of the scalar f(L, *inputs) for lightgrad and torch, and both values."""
    ours = [lg.tensor(a, requires_grad=True) for a in arrays]
    ref = [torch.tensor(a, requires_grad=True) for a in arrays]
    out, out_ref = f(lg, *ours), f(torch, *ref)
    out.backward()
    out_ref.backward()
    return [t.grad.numpy() for t in ours], [t.grad.numpy() for t in ref], out, out_ref


def _check(f: Callable[..., Any], *arrays: np.ndarray, fd: bool = True, tol: float = 1e-9) -> None:
    """f's value and gradient match PyTorch; in float64 also finite differences."""
    g, g_ref, out, out_ref = _both(f, *arrays)
    np.testing.assert_allclose(out.detach().numpy(), out_ref.detach().numpy(), rtol=tol * 100, atol=tol * 100)
    for a, b in zip(g, g_ref, strict=True):
        np.testing.assert_allclose(a, b, rtol=tol * 1e3, atol=tol * 1e3)
    if fd:
        xs = [a.copy() for a in arrays]
        num = numeric_grads(lambda *v: f(lg, *[lg.tensor(x) for x in v]).numpy(), xs, np.array(1.0))
        for a, n in zip(g, num, strict=True):
            np.testing.assert_allclose(a, n, rtol=1e-5, atol=1e-6)


# ---- losses, written once for both frameworks (sign-free) ----------------------------------------

def _svd_loss(L: Any, A: Any) -> Any:
    U, S, Vh = L.linalg.svd(A, full_matrices=False)
    m, n = A.shape[-2:]
    k = S.shape[-1]
    recon = (U * S.unsqueeze(-2)) @ Vh
    coef = L.tensor(_weights(k), dtype=A.dtype)
    proj_u = (U * coef) @ U.mT  # sum_i c_i u_i u_i^T: free of each column's sign
    proj_v = (Vh.mT * coef) @ Vh
    return ((recon * L.tensor(_weights(m, n), dtype=A.dtype)).sum() + (proj_u * L.tensor(_weights(m, m), dtype=A.dtype)).sum()
            + (proj_v * L.tensor(_weights(n, n), dtype=A.dtype)).sum() + (S ** 3).sum())


def _svd_full_loss(L: Any, A: Any) -> Any:
    U, S, Vh = L.linalg.svd(A, full_matrices=True)
    m, n = A.shape[-2:]
    return ((U ** 2 * L.tensor(_weights(m, m), dtype=A.dtype)).sum() + (Vh ** 2 * L.tensor(_weights(n, n), dtype=A.dtype)).sum()
            + S.sum())


def _qr_loss(L: Any, A: Any, mode: str = "reduced") -> Any:
    Q, R = L.linalg.qr(A, mode=mode)
    return ((Q ** 2 * L.tensor(_weights(*Q.shape[-2:]), dtype=A.dtype)).sum() + (R ** 2 * L.tensor(_weights(*R.shape[-2:]), dtype=A.dtype)).sum()
            + ((Q @ R) * L.tensor(_weights(*A.shape[-2:]), dtype=A.dtype)).sum())


def _eigh_loss(L: Any, X: Any, uplo: str = "L") -> Any:
    w, V = L.linalg.eigh(X + X.mT, UPLO=uplo)
    n = X.shape[-1]
    return ((w * L.tensor(_weights(n), dtype=X.dtype)).sum() + (V ** 2 * L.tensor(_weights(n, n), dtype=X.dtype)).sum()
            + (L.linalg.eigvalsh(X + X.mT, UPLO=uplo) ** 2).sum())


# ---- SVD -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("shape", SHAPES)
def test_svd_values(shape: tuple[int, ...]) -> None:
    a = RNG.standard_normal(shape)
    for full in (False, True):
        U, S, Vh = lg.linalg.svd(lg.tensor(a), full_matrices=full)
        Ut, St, Vht = torch.linalg.svd(torch.tensor(a), full_matrices=full)
        assert U.shape == Ut.shape and S.shape == St.shape and Vh.shape == Vht.shape
        np.testing.assert_allclose(S.numpy(), St.numpy(), atol=1e-12)
        k = S.shape[-1]
        recon = (U.numpy()[..., :k] * S.numpy()[..., None, :]) @ Vh.numpy()[..., :k, :]
        np.testing.assert_allclose(recon, a, atol=1e-12)
        for Q in (U.numpy(), np.swapaxes(Vh.numpy(), -1, -2)):
            np.testing.assert_allclose(np.swapaxes(Q, -1, -2) @ Q, np.broadcast_to(np.eye(Q.shape[-1]), Q.shape[:-2]
                                                                                   + (Q.shape[-1],) * 2), atol=1e-12)
    np.testing.assert_allclose(lg.linalg.svdvals(lg.tensor(a)).numpy(), torch.linalg.svdvals(torch.tensor(a)).numpy(),
                               atol=1e-12)


@pytest.mark.parametrize("shape", SHAPES[:4])
def test_svd_grad(shape: tuple[int, ...]) -> None:
    _check(_svd_loss, RNG.standard_normal(shape))


@pytest.mark.parametrize("shape", [(4, 3), (3, 4), (3, 3)])
def test_svd_full_matrices_grad_ignores_extra_columns(shape: tuple[int, ...]) -> None:
    # PyTorch does not raise here: the gradients of the columns past min(m, n) are dropped
    g, g_ref, _, _ = _both(_svd_full_loss, RNG.standard_normal(shape))
    np.testing.assert_allclose(g[0], g_ref[0], atol=1e-9)


@pytest.mark.parametrize("shape", [(4, 3), (2, 3, 5)])
def test_svdvals_grad(shape: tuple[int, ...]) -> None:
    _check(lambda L, A: (L.linalg.svdvals(A) * L.tensor(_weights(min(shape[-2:])))).sum(),
           RNG.standard_normal(shape))


def test_svd_float32() -> None:
    a = RNG.standard_normal((2, 5, 3)).astype(np.float32)
    U, S, Vh = lg.linalg.svd(lg.tensor(a), full_matrices=False)
    assert U.dtype == lg.float32 and S.dtype == lg.float32 and Vh.dtype == lg.float32
    np.testing.assert_allclose(S.numpy(), torch.linalg.svdvals(torch.tensor(a)).numpy(), rtol=1e-5)
    g, g_ref, _, _ = _both(_svd_loss, a)
    assert g[0].dtype == np.float32
    np.testing.assert_allclose(g[0], g_ref[0], rtol=1e-3, atol=1e-3)


def test_svd_double_backward() -> None:
    a = RNG.standard_normal((4, 3))
    w = _weights(4, 3)
    out = []
    for L in (lg, torch):
        A = L.tensor(a, requires_grad=True)
        (g,) = L.autograd.grad(_svd_loss(L, A), A, create_graph=True)
        (gg,) = L.autograd.grad((g * L.tensor(w)).sum(), A)
        out.append(gg.numpy())
    np.testing.assert_allclose(out[0], out[1], rtol=1e-7, atol=1e-7)


def test_svd_old_api() -> None:
    a = RNG.standard_normal((2, 4, 3))
    for some in (True, False):
        U, S, V = lg.svd(lg.tensor(a), some=some)
        Ut, St, Vt = torch.svd(torch.tensor(a), some=some)
        assert type(lg.svd(lg.tensor(a))).__name__ == "svd"
        assert (U.shape, S.shape, V.shape) == (Ut.shape, St.shape, Vt.shape)
        np.testing.assert_allclose(((U.numpy()[..., :3] * S.numpy()[..., None, :]) @ np.swapaxes(V.numpy(), -1, -2)),
                                   a, atol=1e-12)
    U, S, V = lg.tensor(a).svd(compute_uv=False)
    Ut, St, Vt = torch.tensor(a).svd(compute_uv=False)
    assert (U.shape, V.shape) == (Ut.shape, Vt.shape) and not U.numpy().any() and not V.numpy().any()
    np.testing.assert_allclose(S.numpy(), St.numpy(), atol=1e-12)


# ---- QR ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("mode", ["reduced", "complete", "r"])
def test_qr_values(shape: tuple[int, ...], mode: str) -> None:
    a = RNG.standard_normal(shape)
    Q, R = lg.linalg.qr(lg.tensor(a), mode=mode)
    Qt, Rt = torch.linalg.qr(torch.tensor(a), mode=mode)
    assert Q.shape == Qt.shape and R.shape == Rt.shape
    r = R.numpy()
    np.testing.assert_allclose(np.abs(r), np.abs(Rt.numpy()), atol=1e-12)  # unique up to row signs
    assert not np.tril(r, -1).any()
    if mode != "r":
        np.testing.assert_allclose(Q.numpy() @ r, a, atol=1e-12)
        q = Q.numpy()
        np.testing.assert_allclose(np.swapaxes(q, -1, -2) @ q, np.broadcast_to(np.eye(q.shape[-1]), q.shape[:-2]
                                                                               + (q.shape[-1],) * 2), atol=1e-12)


@pytest.mark.parametrize("shape", [(4, 3), (3, 4), (3, 3), (2, 5, 3), (2, 2, 4)])
def test_qr_grad(shape: tuple[int, ...]) -> None:
    _check(_qr_loss, RNG.standard_normal(shape))


@pytest.mark.parametrize("shape", [(3, 4), (3, 3)])
def test_qr_complete_grad_where_defined(shape: tuple[int, ...]) -> None:
    _check(lambda L, A: _qr_loss(L, A, "complete"), RNG.standard_normal(shape), fd=False)


@pytest.mark.parametrize("mode,shape", [("r", (3, 3)), ("complete", (4, 3))])
def test_qr_backward_errors(mode: str, shape: tuple[int, ...]) -> None:
    msgs = []
    for L in (lg, torch):
        A = L.tensor(RNG.standard_normal(shape), requires_grad=True)
        Q, R = L.linalg.qr(A, mode=mode)
        with pytest.raises(RuntimeError) as info:
            R.sum().backward()
        msgs.append(str(info.value))
    assert msgs[0] == msgs[1]


def test_qr_old_api() -> None:
    a = RNG.standard_normal((4, 3))
    for some in (True, False):
        with pytest.warns(UserWarning, match="torch.qr is deprecated"):  # as PyTorch's (once per process there)
            Q, R = lg.qr(lg.tensor(a), some=some)
        Qt, Rt = torch.linalg.qr(torch.tensor(a), "reduced" if some else "complete")
        assert (Q.shape, R.shape) == (Qt.shape, Rt.shape)
        np.testing.assert_allclose(Q.numpy() @ R.numpy(), a, atol=1e-12)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert lg.tensor(a).qr().Q.shape == (4, 3)
        assert type(lg.qr(lg.tensor(a))).__name__ == type(torch.qr(torch.tensor(a))).__name__ == "qr"


# ---- eigh ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("shape", [(3, 3), (2, 4, 4), (1, 2, 3, 3)])
@pytest.mark.parametrize("uplo", ["L", "U"])
def test_eigh_values(shape: tuple[int, ...], uplo: str) -> None:
    a = RNG.standard_normal(shape)  # not symmetric: only the UPLO triangle is read, as in PyTorch
    w, V = lg.linalg.eigh(lg.tensor(a), UPLO=uplo)
    wt, Vt = torch.linalg.eigh(torch.tensor(a), UPLO=uplo)
    assert type(lg.linalg.eigh(lg.tensor(a))).__name__ == "linalg_eigh"
    np.testing.assert_allclose(w.numpy(), wt.numpy(), atol=1e-12)
    np.testing.assert_allclose(lg.linalg.eigvalsh(lg.tensor(a), uplo).numpy(), wt.numpy(), atol=1e-12)
    v = V.numpy()
    np.testing.assert_allclose(v * w.numpy()[..., None, :] @ np.swapaxes(v, -1, -2),
                               (Vt * wt.unsqueeze(-2) @ Vt.mT).numpy(), atol=1e-12)


@pytest.mark.parametrize("shape", [(3, 3), (2, 4, 4)])
@pytest.mark.parametrize("uplo", ["L", "U"])
def test_eigh_grad(shape: tuple[int, ...], uplo: str) -> None:
    _check(lambda L, X: _eigh_loss(L, X, uplo), RNG.standard_normal(shape))


def test_eigh_grad_of_nonsymmetric_input_matches_torch() -> None:
    # the gradient is PyTorch's symmetric one, not that of the triangle actually read
    a = RNG.standard_normal((4, 4))
    g, g_ref, _, _ = _both(lambda L, A: (L.linalg.eigh(A).eigenvectors[..., :2] ** 2
                                         * L.tensor(_weights(4, 2))).sum(), a)
    np.testing.assert_allclose(g[0], g_ref[0], atol=1e-9)


def test_eigh_float32() -> None:
    a = RNG.standard_normal((2, 3, 3)).astype(np.float32)
    g, g_ref, out, out_ref = _both(lambda L, X: _eigh_loss(L, X), a)
    assert g[0].dtype == np.float32
    np.testing.assert_allclose(out.detach().numpy(), out_ref.detach().numpy(), rtol=1e-4)
    np.testing.assert_allclose(g[0], g_ref[0], rtol=1e-3, atol=1e-3)


# ---- derived: pinv, lstsq, matrix_rank, cond, norms -------------------------------------------------

@pytest.mark.parametrize("shape", [(4, 3), (3, 5), (2, 3, 3)])
def test_pinv(shape: tuple[int, ...]) -> None:
    w = _weights(shape[-1], shape[-2])
    _check(lambda L, A: (L.linalg.pinv(A) * L.tensor(w)).sum(), RNG.standard_normal(shape))


def test_pinv_rank_deficient_and_hermitian() -> None:
    a = RNG.standard_normal((5, 2)) @ RNG.standard_normal((2, 4))
    np.testing.assert_allclose(lg.linalg.pinv(lg.tensor(a)).numpy(), torch.linalg.pinv(torch.tensor(a)).numpy(),
                               atol=1e-10)
    for kw in ({"atol": 1.0}, {"rtol": 0.5}, {"atol": 0.1, "rtol": 0.2}):
        np.testing.assert_allclose(lg.linalg.pinv(lg.tensor(a), **kw).numpy(),
                                   torch.linalg.pinv(torch.tensor(a), **kw).numpy(), atol=1e-10)
    s = a @ a.T
    np.testing.assert_allclose(lg.linalg.pinv(lg.tensor(s), hermitian=True).numpy(),
                               torch.linalg.pinv(torch.tensor(s), hermitian=True).numpy(), atol=1e-8)
    np.testing.assert_allclose(lg.tensor(a).pinverse().numpy(), torch.tensor(a).pinverse().numpy(), atol=1e-10)
    w = _weights(4, 4)
    _check(lambda L, X: (L.linalg.pinv(X + X.mT, hermitian=True) * L.tensor(w)).sum(), RNG.standard_normal((4, 4)))


@pytest.mark.parametrize("driver", [None, "gels", "gelsy", "gelsd", "gelss"])
def test_lstsq_fields(driver: str | None) -> None:
    a, b = RNG.standard_normal((2, 5, 3)), RNG.standard_normal((2, 5, 2))
    ours = lg.linalg.lstsq(lg.tensor(a), lg.tensor(b), driver=driver)
    ref = torch.linalg.lstsq(torch.tensor(a), torch.tensor(b), driver=driver)
    assert type(ours).__name__ == "linalg_lstsq"
    for x, y in zip(ours, ref, strict=True):
        assert x.shape == y.shape and str(x.dtype).split(".")[-1] == str(y.dtype).split(".")[-1]
        np.testing.assert_allclose(x.numpy(), y.numpy(), atol=1e-10)


def test_lstsq_rank_deficient_wide_and_vector() -> None:
    a = RNG.standard_normal((5, 2)) @ RNG.standard_normal((2, 3))
    b = RNG.standard_normal((5, 2))
    ours = lg.linalg.lstsq(lg.tensor(a), lg.tensor(b), driver="gelsd")
    ref = torch.linalg.lstsq(torch.tensor(a), torch.tensor(b), driver="gelsd")
    assert int(ours.rank) == int(ref.rank) == 2 and ours.residuals.shape == ref.residuals.shape == (0,)
    np.testing.assert_allclose(ours.solution.numpy(), ref.solution.numpy(), atol=1e-10)
    wide, bw = RNG.standard_normal((3, 4)), RNG.standard_normal(3)
    x = lg.linalg.lstsq(lg.tensor(wide), lg.tensor(bw)).solution
    assert x.shape == torch.linalg.lstsq(torch.tensor(wide), torch.tensor(bw)).solution.shape == (4,)
    np.testing.assert_allclose(wide @ x.numpy(), bw, atol=1e-10)


def test_lstsq_grad() -> None:
    _check(lambda L, A, B: (L.linalg.lstsq(A, B).solution ** 2).sum(), RNG.standard_normal((5, 3)),
           RNG.standard_normal((5, 2)))


def test_matrix_rank() -> None:
    a = np.stack([RNG.standard_normal((5, k)) @ RNG.standard_normal((k, 4)) for k in (1, 2, 4)])
    for kw in ({}, {"atol": 1.0}, {"rtol": 0.3}, {"hermitian": True}):
        x = a @ np.swapaxes(a, -1, -2) if kw.get("hermitian") else a
        ours = lg.linalg.matrix_rank(lg.tensor(x), **kw)
        ref = torch.linalg.matrix_rank(torch.tensor(x), **kw)
        assert ours.dtype == lg.int64
        np.testing.assert_array_equal(ours.numpy(), ref.numpy())
    assert int(lg.linalg.matrix_rank(lg.tensor(a[2]), 0.5)) == int(torch.linalg.matrix_rank(torch.tensor(a[2]), 0.5))


@pytest.mark.parametrize("p", [None, 2, -2, "fro", "nuc", 1, -1, math.inf, -math.inf])
def test_cond(p: Any) -> None:
    a = RNG.standard_normal((2, 3, 3))
    np.testing.assert_allclose(lg.linalg.cond(lg.tensor(a), p).numpy(), torch.linalg.cond(torch.tensor(a), p).numpy(),
                               rtol=1e-10)
    z = np.zeros((3, 3))
    np.testing.assert_array_equal(lg.linalg.cond(lg.tensor(z), p).numpy(), torch.linalg.cond(torch.tensor(z), p).numpy())


def test_cond_grad() -> None:
    _check(lambda L, A: L.linalg.cond(A), RNG.standard_normal((4, 3)))


@pytest.mark.parametrize("ord", ["nuc", 2, -2])
@pytest.mark.parametrize("shape,dim", [((4, 3), (-2, -1)), ((2, 3, 5), (-2, -1)), ((3, 2, 4), (0, 2)),
                                       ((3, 2, 4), (2, 0))])
def test_matrix_norm_svd_orders(ord: Any, shape: tuple[int, ...], dim: tuple[int, int]) -> None:
    for keepdim in (False, True):
        _check(lambda L, A, kd=keepdim: (L.linalg.matrix_norm(A, ord, dim, kd) ** 2).sum(), RNG.standard_normal(shape),
               fd=not keepdim)
        ours = lg.linalg.matrix_norm(lg.tensor(np.ones(shape)), ord, dim, keepdim)
        assert ours.shape == torch.linalg.matrix_norm(torch.ones(shape, dtype=torch.float64), ord, dim, keepdim).shape
    a = RNG.standard_normal(shape[-2:])
    np.testing.assert_allclose(lg.linalg.norm(lg.tensor(a), ord).numpy(), torch.linalg.norm(torch.tensor(a), ord).numpy(),
                               rtol=1e-12)


def test_tensor_norm_nuc() -> None:
    a = RNG.standard_normal((2, 3, 4))
    np.testing.assert_allclose(lg.tensor(a).norm("nuc", dim=(1, 2)).numpy(),
                               torch.tensor(a).norm("nuc", dim=(1, 2)).numpy(), rtol=1e-12)
    np.testing.assert_allclose(lg.norm(lg.tensor(a[0]), "nuc").numpy(), torch.norm(torch.tensor(a[0]), "nuc").numpy(),
                               rtol=1e-12)


# ---- errors: PyTorch's exception type (and message where it is ours to match) ------------------------

_INT = np.arange(9).reshape(3, 3)
ERRORS = [
    ("svd 1-D", lambda L: L.linalg.svd(L.ones(3))),
    ("svdvals 1-D", lambda L: L.linalg.svdvals(L.ones(3))),
    ("svd int", lambda L: L.linalg.svd(L.tensor(_INT))),
    ("svd driver", lambda L: L.linalg.svd(L.ones(3, 3), driver="gesvd")),
    ("eigh non-square", lambda L: L.linalg.eigh(L.ones(3, 4))),
    ("eigh 1-D", lambda L: L.linalg.eigh(L.ones(3))),
    ("eigh UPLO", lambda L: L.linalg.eigh(L.ones(3, 3), UPLO="X")),
    ("eigvalsh UPLO", lambda L: L.linalg.eigvalsh(L.ones(3, 3), UPLO="upper")),
    ("qr 1-D", lambda L: L.linalg.qr(L.ones(3))),
    ("qr mode", lambda L: L.linalg.qr(L.ones(3, 3), mode="full")),
    ("qr int", lambda L: L.linalg.qr(L.tensor(_INT))),
    ("pinv 1-D", lambda L: L.linalg.pinv(L.ones(3))),
    ("lstsq rows", lambda L: L.linalg.lstsq(L.ones(4, 3), L.ones(5, 2))),
    ("lstsq driver", lambda L: L.linalg.lstsq(L.ones(4, 3), L.ones(4, 2), driver="gelsx")),
    ("matrix_rank 1-D", lambda L: L.linalg.matrix_rank(L.ones(3))),
    ("cond non-square", lambda L: L.linalg.cond(L.ones(3, 4), 1)),
    ("cond ord", lambda L: L.linalg.cond(L.ones(3, 3), 3)),
    ("matrix_norm 3-D nuc without dim", lambda L: L.linalg.norm(L.ones(2, 3, 3), "nuc")),
    ("Tensor.norm 3-D nuc without dim", lambda L: L.ones(2, 3, 3).norm("nuc")),
]
# (messages differ only where PyTorch's names an internal kernel)
_SAME_MESSAGE_SKIP = {"eigh 1-D"}


@pytest.mark.parametrize("name,f", ERRORS, ids=[e[0] for e in ERRORS])
def test_errors(name: str, f: Callable[[Any], Any]) -> None:
    with pytest.raises(Exception) as ref:
        f(torch)
    with pytest.raises(type(ref.value)) as ours:
        f(lg)
    if name not in _SAME_MESSAGE_SKIP:
        assert str(ours.value) == str(ref.value)
