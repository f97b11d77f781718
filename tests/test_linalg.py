"""lightgrad.linalg against PyTorch: decompositions, solvers, inverses, determinants, norms, products.

Factors are unique only up to signs of columns, so decompositions are compared through sign-free
quantities (reconstructions, singular values, projectors, squared entries) and their gradients
through losses invariant to those signs, against PyTorch and against finite differences in float64.
Values are checked in float64 and float32, batched inputs, and PyTorch's errors.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from helpers import assert_like_torch, check_scalar_against_torch, numeric_grads

import lightgrad as lg

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


def _rand(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(sum(shape) * 31 + len(shape) + seed).standard_normal(shape)


def _well(*shape: int, seed: int = 0) -> np.ndarray:
    """Well-conditioned square matrices (diagonally dominated), so solves are accurate."""
    n = shape[-1]
    return _rand(*shape, seed=seed) + 3 * n ** 0.5 * np.eye(n)


def _same(ours: Any, ref: Any, tol: float = 1e-10) -> None:
    np.testing.assert_allclose(ours.detach().numpy(), ref.detach().numpy(), rtol=tol, atol=tol)


def _raises_like(f: Callable[[Any], Any]) -> None:
    """f(lightgrad) raises what f(torch) raises: the same type (by name) and message."""
    with pytest.raises(Exception) as ref:
        f(torch)
    with pytest.raises(Exception) as ours:
        f(lg)
    assert type(ours.value).__name__.lstrip("_") == type(ref.value).__name__.lstrip("_")
    assert isinstance(ours.value, type(ref.value).__mro__[1] if ref.type.__name__.startswith("_") else ref.type)
    assert str(ours.value).split("\n")[0] == str(ref.value).split("\n")[0]


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
    check_scalar_against_torch(_svd_loss, RNG.standard_normal(shape))


@pytest.mark.parametrize("shape", [(4, 3), (3, 4), (3, 3)])
def test_svd_full_matrices_grad_ignores_extra_columns(shape: tuple[int, ...]) -> None:
    # PyTorch does not raise here: the gradients of the columns past min(m, n) are dropped
    g, g_ref, _, _ = _both(_svd_full_loss, RNG.standard_normal(shape))
    np.testing.assert_allclose(g[0], g_ref[0], atol=1e-9)


@pytest.mark.parametrize("shape", [(4, 3), (2, 3, 5)])
def test_svdvals_grad(shape: tuple[int, ...]) -> None:
    check_scalar_against_torch(lambda L, A: (L.linalg.svdvals(A) * L.tensor(_weights(min(shape[-2:])))).sum(),
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
    check_scalar_against_torch(_qr_loss, RNG.standard_normal(shape))


@pytest.mark.parametrize("shape", [(3, 4), (3, 3)])
def test_qr_complete_grad_where_defined(shape: tuple[int, ...]) -> None:
    check_scalar_against_torch(lambda L, A: _qr_loss(L, A, "complete"), RNG.standard_normal(shape), fd=False)


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
    check_scalar_against_torch(lambda L, X: _eigh_loss(L, X, uplo), RNG.standard_normal(shape))


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


# ---- pinv, lstsq, matrix_rank, cond --------------------------------------------------------------

@pytest.mark.parametrize("shape", [(4, 3), (3, 5), (2, 3, 3)])
def test_pinv(shape: tuple[int, ...]) -> None:
    w = _weights(shape[-1], shape[-2])
    check_scalar_against_torch(lambda L, A: (L.linalg.pinv(A) * L.tensor(w)).sum(), RNG.standard_normal(shape))


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
    check_scalar_against_torch(lambda L, X: (L.linalg.pinv(X + X.mT, hermitian=True) * L.tensor(w)).sum(),
                               RNG.standard_normal((4, 4)))


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
    check_scalar_against_torch(lambda L, A, B: (L.linalg.lstsq(A, B).solution ** 2).sum(), RNG.standard_normal((5, 3)),
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
    check_scalar_against_torch(lambda L, A: L.linalg.cond(A), RNG.standard_normal((4, 3)))


# ---- norms from singular values ------------------------------------------------------------------

@pytest.mark.parametrize("ord", ["nuc", 2, -2])
@pytest.mark.parametrize("shape,dim", [((4, 3), (-2, -1)), ((2, 3, 5), (-2, -1)), ((3, 2, 4), (0, 2)),
                                       ((3, 2, 4), (2, 0))])
def test_matrix_norm_svd_orders(ord: Any, shape: tuple[int, ...], dim: tuple[int, int]) -> None:
    for keepdim in (False, True):
        check_scalar_against_torch(lambda L, A, kd=keepdim: (L.linalg.matrix_norm(A, ord, dim, kd) ** 2).sum(),
                                   RNG.standard_normal(shape),
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


# ---- errors: PyTorch's exception type (and message where it is ours to match) --------------------

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


# ---- solve_triangular, triangular_solve ----------------------------------------------------------

@pytest.mark.parametrize("upper", [True, False])
@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("unit", [True, False])
def test_solve_triangular_values_and_grads(upper: bool, left: bool, unit: bool) -> None:
    A = _well(2, 4, 4)
    b = _rand(2, 4, 3) if left else _rand(2, 3, 4)

    def f(L: Any, A: Any, b: Any) -> Any:
        X = L.linalg.solve_triangular(A, b, upper=upper, left=left, unitriangular=unit)
        return (X * X.sin()).sum()  # a generic loss, not a plain sum
    check_scalar_against_torch(f, A, b)


def test_solve_triangular_broadcast_float32_and_singular() -> None:
    A, b = _well(2, 1, 3, 3).astype(np.float32), _rand(4, 3, 2).astype(np.float32)
    _same(lg.linalg.solve_triangular(lg.tensor(A), lg.tensor(b), upper=False),
          torch.linalg.solve_triangular(torch.tensor(A), torch.tensor(b), upper=False), 1e-5)
    S = np.array([[0.0, 1.0], [0.0, 1.0]])
    ours = lg.linalg.solve_triangular(lg.tensor(S), lg.ones(2, 1, dtype=lg.float64), upper=True).numpy()
    ref = torch.linalg.solve_triangular(torch.tensor(S), torch.ones(2, 1, dtype=torch.float64), upper=True).numpy()
    np.testing.assert_array_equal(np.isnan(ours), np.isnan(ref))
    np.testing.assert_allclose(ours[~np.isnan(ours)], ref[~np.isnan(ref)])


@pytest.mark.parametrize("transpose", [True, False])
@pytest.mark.parametrize("upper", [True, False])
def test_triangular_solve_old(transpose: bool, upper: bool) -> None:
    A, b = _well(2, 3, 3), _rand(2, 3, 2)

    def f(L: Any, b: Any, A: Any) -> Any:
        X, Ac = L.triangular_solve(b, A, upper=upper, transpose=transpose, unitriangular=False)
        return (X ** 2).sum() + Ac.sum()
    check_scalar_against_torch(f, b, A)
    res = lg.triangular_solve(lg.tensor(b), lg.tensor(A))
    assert type(res).__name__ == "triangular_solve" and res._fields == ("solution", "cloned_coefficient")
    _same(res.cloned_coefficient, torch.tensor(A))
    _same(lg.tensor(b).triangular_solve(lg.tensor(A), False)[0],
          torch.tensor(b).triangular_solve(torch.tensor(A), False)[0])


@pytest.mark.parametrize("f", [
    lambda L: L.linalg.solve_triangular(L.zeros(2, 3, dtype=L.float64), L.zeros(2, 3, dtype=L.float64), upper=True),
    lambda L: L.linalg.solve_triangular(L.eye(3, dtype=L.float64), L.zeros(2, 2, dtype=L.float64), upper=True),
    lambda L: L.linalg.solve_triangular(L.eye(3, dtype=L.float64), L.zeros(3, dtype=L.float64), upper=True),
    lambda L: L.linalg.solve_triangular(L.eye(3, dtype=L.int64), L.eye(3, dtype=L.int64), upper=True),
    lambda L: L.triangular_solve(L.eye(3, dtype=L.float64), L.zeros(2, 3, dtype=L.float64)),
])
def test_solve_triangular_errors(f: Callable[[Any], Any]) -> None:
    _raises_like(f)


# ---- cholesky_ex, inv_ex, solve_ex ---------------------------------------------------------------

def _spd(*shape: int) -> np.ndarray:
    a = _rand(*shape)
    return a @ np.swapaxes(a, -1, -2) + shape[-1] * np.eye(shape[-1])


def test_cholesky_ex() -> None:
    def f(L: Any, A: Any) -> Any:
        Lc, info = L.linalg.cholesky_ex((A + A.mT) / 2, upper=True)  # (symmetric, so FD sees PyTorch's gradient)
        assert info.dtype == L.int32 and not info.any()
        return (Lc * Lc.cos()).sum()
    check_scalar_against_torch(f, _spd(2, 3, 3))
    bad = np.stack([np.eye(3), np.diag([1.0, 1.0, -1.0]), -np.eye(3)])
    np.testing.assert_array_equal(lg.linalg.cholesky_ex(lg.tensor(bad)).info.numpy(),
                                  torch.linalg.cholesky_ex(torch.tensor(bad)).info.numpy())
    _same(lg.linalg.cholesky_ex(lg.tensor(bad)).L[0], torch.linalg.cholesky_ex(torch.tensor(bad)).L[0])
    _raises_like(lambda L: L.linalg.cholesky_ex(L.tensor(bad), check_errors=True))
    _raises_like(lambda L: L.linalg.cholesky_ex(-L.eye(3, dtype=L.float64), check_errors=True))


def test_inv_ex_and_solve_ex() -> None:
    def f(L: Any, A: Any, b: Any) -> Any:
        Ai, info = L.linalg.inv_ex(A)
        X, info2 = L.linalg.solve_ex(A, b)
        assert info.dtype == L.int32 and not info.any() and not info2.any()
        return (Ai * Ai.sin()).sum() + (X ** 2).sum()
    check_scalar_against_torch(f, _well(2, 3, 3), _rand(2, 3, 2))
    sing = np.stack([np.eye(3), np.zeros((3, 3)), np.array([[1.0, 2, 3], [2, 4, 6], [0, 0, 1]])])
    for fn in ("inv_ex",):
        np.testing.assert_array_equal(getattr(lg.linalg, fn)(lg.tensor(sing)).info.numpy(),
                                      getattr(torch.linalg, fn)(torch.tensor(sing)).info.numpy())
    np.testing.assert_array_equal(lg.linalg.solve_ex(lg.tensor(sing), lg.tensor(np.ones((3, 3, 1)))).info.numpy(),
                                  torch.linalg.solve_ex(torch.tensor(sing), torch.ones(3, 3, 1,
                                                                                       dtype=torch.float64)).info.numpy())
    assert lg.linalg.solve_ex(lg.tensor(sing), lg.ones(3, 3, dtype=lg.float64)).result.shape == (3, 3)
    _raises_like(lambda L: L.linalg.inv_ex(L.zeros(3, 3, dtype=L.float64), check_errors=True))
    _raises_like(lambda L: L.linalg.inv_ex(L.tensor(sing), check_errors=True))
    _raises_like(lambda L: L.linalg.solve_ex(L.zeros(3, 3, dtype=L.float64), L.eye(3, dtype=L.float64),
                                             check_errors=True))


# ---- LU ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("shape", [(4, 4), (2, 3, 3), (3, 5), (5, 3), (2, 1, 4, 2)])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_lu_values(shape: tuple[int, ...], dtype: Any) -> None:
    a = _rand(*shape).astype(dtype)
    tol = 1e-10 if dtype == np.float64 else 1e-5
    LU, piv = lg.linalg.lu_factor(lg.tensor(a))
    LU_r, piv_r = torch.linalg.lu_factor(torch.tensor(a))
    _same(LU, LU_r, tol)
    assert piv.dtype == lg.int32
    np.testing.assert_array_equal(piv.numpy(), piv_r.numpy())
    for x, y in zip(lg.linalg.lu(lg.tensor(a)), torch.linalg.lu(torch.tensor(a)), strict=True):
        _same(x, y, tol)
    for x, y in zip(lg.lu_unpack(LU, piv), torch.lu_unpack(LU_r, piv_r), strict=True):
        _same(x, y, tol)
    ex, ex_r = lg.linalg.lu_factor_ex(lg.tensor(a)), torch.linalg.lu_factor_ex(torch.tensor(a))
    np.testing.assert_array_equal(ex.info.numpy(), ex_r.info.numpy())
    assert ex.info.dtype == lg.int32


def test_lu_singular_info_and_errors() -> None:
    sing = np.stack([np.eye(3), np.zeros((3, 3)), np.array([[1.0, 2, 3], [2, 4, 6], [0, 0, 1]])])
    ex, ex_r = lg.linalg.lu_factor_ex(lg.tensor(sing)), torch.linalg.lu_factor_ex(torch.tensor(sing))
    np.testing.assert_array_equal(ex.info.numpy(), ex_r.info.numpy())
    _same(ex.LU, ex_r.LU)
    np.testing.assert_array_equal(ex.pivots.numpy(), ex_r.pivots.numpy())
    _raises_like(lambda L: L.linalg.lu_factor(L.tensor(sing)))
    _raises_like(lambda L: L.linalg.lu_factor(L.zeros(3, 3, dtype=L.float64)))
    _raises_like(lambda L: L.linalg.lu_factor(L.zeros(3, dtype=L.float64)))
    _raises_like(lambda L: L.linalg.lu(L.zeros(3, dtype=L.float64)))
    _raises_like(lambda L: L.linalg.lu_factor(L.eye(3, dtype=L.int64)))
    A = np.eye(3)
    _raises_like(lambda L: L.linalg.lu_solve(*L.linalg.lu_factor(L.tensor(A)), L.zeros(2, 3, dtype=L.float64)))


@pytest.mark.parametrize("shape", [(2, 4, 4), (3, 5), (5, 3), (2, 2, 3)])
def test_lu_grads(shape: tuple[int, ...]) -> None:
    def f(L: Any, A: Any) -> Any:
        P, Lo, U = L.linalg.lu(A)
        return (Lo * Lo.sin()).sum() + (U * U.cos()).sum()
    check_scalar_against_torch(f, _rand(*shape))

    def g(L: Any, A: Any) -> Any:
        LU = L.linalg.lu_factor_ex(A)[0]
        return (LU * LU.sin()).sum()
    check_scalar_against_torch(g, _rand(*shape))


@pytest.mark.parametrize("name", ["solve_triangular", "lu", "lu_solve", "matrix_exp", "inv_ex"])
def test_second_order(name: str) -> None:
    """Gradients taken with create_graph=True differentiate again, as PyTorch's."""
    a = _well(3, 3) * 0.3
    b = _rand(3, 2)
    fs: dict[str, Callable[..., Any]] = {
        "solve_triangular": lambda L, A, b: (L.linalg.solve_triangular(A, b, upper=True) ** 3).sum(),
        "lu": lambda L, A, b: (L.linalg.lu(A)[1] ** 3).sum() + (L.linalg.lu(A)[2] ** 3).sum() + (b ** 2).sum(),
        "lu_solve": lambda L, A, b: (L.linalg.lu_solve(*L.linalg.lu_factor(A), b) ** 3).sum(),
        "matrix_exp": lambda L, A, b: (L.linalg.matrix_exp(A) ** 3).sum() + (b ** 2).sum(),
        "inv_ex": lambda L, A, b: (L.linalg.inv_ex(A)[0] ** 3).sum() + (L.linalg.solve_ex(A, b)[0] ** 3).sum(),
    }
    grads = []
    for L in (lg, torch):
        A, bt = L.tensor(a, requires_grad=True), L.tensor(b, requires_grad=True)
        gA, gb = L.autograd.grad(fs[name](L, A, bt), (A, bt), create_graph=True)
        (gA.sin().sum() + (gb ** 2).sum()).backward()
        grads.append((A.grad.numpy(), bt.grad.numpy()))
    for o, r in zip(*grads, strict=True):
        np.testing.assert_allclose(o, r, rtol=1e-8, atol=1e-8)


@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("adjoint", [True, False])
def test_lu_solve(left: bool, adjoint: bool) -> None:
    A = _well(2, 3, 3)
    b = _rand(2, 3, 2) if left else _rand(2, 2, 3)

    def f(L: Any, LU: Any, b: Any) -> Any:  # gradients in LU and B, as PyTorch's lu_solve backward
        piv = L.tensor(np.array([[1, 2, 3], [1, 2, 3]], np.int32))
        X = L.linalg.lu_solve(LU, piv, b, left=left, adjoint=adjoint)
        return (X * X.sin()).sum()
    LU = np.triu(A) + np.tril(_rand(2, 3, 3), -1) * 0.3
    check_scalar_against_torch(f, LU, b)

    def g(L: Any, A: Any, b: Any) -> Any:  # through lu_factor, against PyTorch's solve
        LU, piv = L.linalg.lu_factor(A)
        X = L.linalg.lu_solve(LU, piv, b, left=left, adjoint=adjoint)
        return (X * X.sin()).sum()

    def h(L: Any, A: Any, b: Any) -> Any:
        A2 = A.mT if adjoint else A
        X = L.linalg.solve(A2, b, left=left)
        return (X * X.sin()).sum()
    ours = [lg.tensor(x, requires_grad=True) for x in (A, b)]
    ref = [torch.tensor(x, requires_grad=True) for x in (A, b)]
    g(lg, *ours).backward()
    h(torch, *ref).backward()
    for o, r in zip(ours, ref, strict=True):
        np.testing.assert_allclose(o.grad.numpy(), r.grad.numpy(), rtol=1e-9, atol=1e-9)
    # a pivoted A, against torch.linalg.lu_solve's values
    a = _rand(2, 4, 4)
    bb = _rand(2, 4, 2) if left else _rand(2, 2, 4)
    _same(lg.linalg.lu_solve(*lg.linalg.lu_factor(lg.tensor(a)), lg.tensor(bb), left=left, adjoint=adjoint),
          torch.linalg.lu_solve(*torch.linalg.lu_factor(torch.tensor(a)), torch.tensor(bb), left=left,
                                adjoint=adjoint), 1e-9)


def test_old_lu_api() -> None:
    a, b = _rand(3, 3), _rand(3, 2)
    _same(lg.lu_solve(lg.tensor(b), *lg.linalg.lu_factor(lg.tensor(a))),
          torch.lu_solve(torch.tensor(b), *torch.linalg.lu_factor(torch.tensor(a))))
    for x, y in zip(lg.tensor(a).lu(get_infos=True), torch.tensor(a).lu(get_infos=True), strict=True):
        _same(x, y)


# ---- multi_dot, vecdot, matrix_exp, tensorinv, tensorsolve, diagonal -----------------------------

@pytest.mark.parametrize("shapes", [[(3,), (3, 4), (4,)], [(2, 3), (3, 4), (4, 5), (5, 2)], [(3, 4), (4,)],
                                    [(3,), (3, 2)]])
def test_multi_dot(shapes: list[tuple[int, ...]]) -> None:
    arrays = [_rand(*s, seed=i) for i, s in enumerate(shapes)]
    check_scalar_against_torch(lambda L, *xs: (L.linalg.multi_dot(list(xs)) ** 2).sum(), *arrays)


@pytest.mark.parametrize("f", [
    lambda L: L.linalg.multi_dot([L.eye(3)]),
    lambda L: L.linalg.multi_dot([L.eye(3), L.zeros(2, 3)]),
    lambda L: L.linalg.multi_dot([L.eye(3), L.zeros(2, 3, 3)]),
    lambda L: L.linalg.matrix_exp(L.zeros(2, 3)),
    lambda L: L.linalg.matrix_exp(L.eye(3, dtype=L.int64)),
    lambda L: L.linalg.tensorinv(L.zeros(4, 6), ind=1),
    lambda L: L.linalg.tensorinv(L.zeros(4, 6), ind=0),
    lambda L: L.linalg.tensorsolve(L.zeros(4, 6), L.zeros(4)),
    lambda L: L.linalg.multi_dot([L.eye(3), L.zeros(3, 3, 3), L.eye(3)]),
    lambda L: L.linalg.cholesky_ex(L.zeros(3, dtype=L.float64)),
    lambda L: L.linalg.inv_ex(L.zeros(2, 3, dtype=L.float64)),
    lambda L: L.linalg.solve_ex(L.zeros(2, 3, dtype=L.float64), L.zeros(2, 1, dtype=L.float64)),
    lambda L: L.linalg.lu_solve(L.zeros(2, 3, dtype=L.float64), L.ones(2, dtype=L.int32), L.zeros(2, 1,
                                                                                              dtype=L.float64)),
    lambda L: L.linalg.lu_factor_ex(L.zeros(2, 2, 2, dtype=L.float64), check_errors=True),
    lambda L: L.linalg.lu(L.eye(3, dtype=L.float64), pivot=False),
])
def test_multi_dot_matrix_exp_tensor_ex_and_lu_errors(f: Callable[[Any], Any]) -> None:
    _raises_like(f)


def test_vecdot_and_diagonal() -> None:
    check_scalar_against_torch(lambda L, x, y: (L.linalg.vecdot(x, y, dim=-2) ** 2).sum(), _rand(2, 3, 4), _rand(3, 4))
    check_scalar_against_torch(lambda L, A: (L.linalg.diagonal(A, offset=1, dim1=0, dim2=2) ** 2).sum(), _rand(3, 2, 4))


@pytest.mark.parametrize("scale", [0.1, 1.0, 6.0])
def test_matrix_exp(scale: float) -> None:
    a = _rand(2, 4, 4) * scale

    def f(L: Any, A: Any) -> Any:
        E = L.linalg.matrix_exp(A)
        return (E * E.sin()).sum()
    check_scalar_against_torch(f, a, tol=1e-9 * max(1.0, scale ** 4), fd=scale <= 1)
    np.testing.assert_allclose(lg.matrix_exp(lg.tensor(a.astype(np.float32))).numpy(),
                               torch.matrix_exp(torch.tensor(a.astype(np.float32))).numpy(), rtol=1e-4, atol=1e-4)
    _same(lg.tensor(a).matrix_exp(), torch.tensor(a).matrix_exp(), 1e-9 * max(1.0, scale ** 4))


def test_tensorinv_and_tensorsolve() -> None:
    a = _rand(4, 6, 8, 3)
    check_scalar_against_torch(lambda L, A: (L.linalg.tensorinv(A, ind=2) ** 2).sum(), a, fd=False)
    A, b = _rand(2, 3, 6), _rand(2, 3)
    check_scalar_against_torch(lambda L, A, b: (L.linalg.tensorsolve(A, b) ** 2).sum(), A, b, fd=False)
    A2 = _rand(6, 2, 3)
    check_scalar_against_torch(lambda L, A, b: (L.linalg.tensorsolve(A, b, dims=(0,)) ** 2).sum(), A2, b, fd=False)


# ---- batching, singular matrices, norms and second derivatives -----------------------------------

def _random_spd(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    a = rng.normal(size=shape)
    return a @ a.swapaxes(-1, -2) + np.eye(shape[-1])


def _grad_pair(fn: Any, *arrays: np.ndarray, rtol: float = 1e-9) -> None:
    """fn(T, *tensors) forward and backward against PyTorch, in float64."""
    lts = [lg.tensor(a, requires_grad=True) for a in arrays]
    tts = [torch.tensor(a, requires_grad=True) for a in arrays]
    lo, to = fn(lg, *lts), fn(torch, *tts)
    assert_like_torch(lo, to, rtol=rtol, atol=1e-12)
    r = np.random.default_rng(9).normal(size=tuple(to.shape))
    (lo * lg.tensor(r)).sum().backward()
    (to * torch.tensor(r)).sum().backward()
    for lt, tt in zip(lts, tts):
        np.testing.assert_allclose(lt.grad.numpy(), tt.grad.numpy(), rtol=rtol, atol=1e-10)


def test_linalg_batched() -> None:
    rng = np.random.default_rng(5)
    a = rng.normal(size=(2, 2, 3, 3)) + 3 * np.eye(3)
    _grad_pair(lambda T, x: T.linalg.inv(x), a)
    _grad_pair(lambda T, x: T.linalg.det(x), a)
    _grad_pair(lambda T, x: T.linalg.slogdet(x).logabsdet, a)
    _grad_pair(lambda T, x, y: T.linalg.solve(x, y), a[0, 0], rng.normal(size=(2, 3, 2)))  # A broadcast
    _grad_pair(lambda T, x, y: T.linalg.solve(x, y), a, rng.normal(size=(1, 3, 4)))  # B broadcast
    _grad_pair(lambda T, x, y: T.linalg.solve(x, y, left=False), a, rng.normal(size=(2, 2, 5, 3)))
    _grad_pair(lambda T, x: T.linalg.matrix_power(x, 5), a / 3)
    _grad_pair(lambda T, x: T.linalg.matrix_power(x, -3), a)
    _grad_pair(lambda T, x: T.linalg.cholesky(x, upper=True), _random_spd(rng, (2, 4, 4)))
    s, ld = lg.linalg.slogdet(lg.tensor(a))
    ts, tld = torch.linalg.slogdet(torch.tensor(a))
    assert_like_torch(s, ts)
    assert_like_torch(ld, tld)


def test_det_and_logdet_of_singular_and_negative() -> None:
    rng = np.random.default_rng(6)
    a = rng.normal(size=(4, 4))
    sing = a.copy()
    sing[3] = sing[0] - 2 * sing[1]  # rank 3: the gradient (the cofactor matrix) is not zero
    _grad_pair(lambda T, x: T.det(x), a[None], rtol=1e-7)
    rank2 = sing.copy()
    rank2[2] = sing[0]
    # at a singular matrix PyTorch's gradient depends on its LAPACK path (0 on some machines, where
    # the cofactors are not 0): checked against finite differences of det, a polynomial
    for m, rank in ((np.stack([a, sing]), 3), (rank2, 2)):
        x = lg.tensor(m, requires_grad=True)
        lg.det(x).sum().backward()
        num = numeric_grads(lambda v: np.linalg.det(v), [m.copy()], np.ones(m.shape[:-2]))[0]
        np.testing.assert_allclose(x.grad.numpy(), num, rtol=1e-6, atol=1e-8)
        assert (np.abs(num) > 1e-3).any() == (rank == 3)  # (rank 2: every cofactor is 0)
    neg = np.diag([1.0, -2.0, 3.0])
    assert_like_torch(lg.logdet(lg.tensor(neg)), torch.logdet(torch.tensor(neg)))
    assert_like_torch(lg.tensor(np.zeros((2, 2))).logdet(), torch.tensor(np.zeros((2, 2))).logdet())
    assert_like_torch(lg.linalg.slogdet(lg.tensor(neg)).sign, torch.linalg.slogdet(torch.tensor(neg)).sign)


def test_linalg_errors_are_linalg_errors() -> None:
    assert issubclass(lg.linalg.LinAlgError, RuntimeError)
    with pytest.raises(lg.linalg.LinAlgError, match="singular"):
        lg.inverse(lg.zeros(2, 2))
    with pytest.raises(lg.linalg.LinAlgError, match="Batch element 1"):
        lg.linalg.cholesky(lg.stack([lg.eye(2), -lg.eye(2)]))
    x = lg.zeros(2, 2, requires_grad=True)
    with pytest.raises(lg.linalg.LinAlgError):
        lg.linalg.inv(x * 1.0)
    assert x.grad is None


def test_matrix_power_zero_and_one() -> None:
    a = np.random.default_rng(7).normal(size=(2, 3, 3))
    for n in (0, 1, 2):
        assert_like_torch(lg.tensor(a).matrix_power(n), torch.tensor(a).matrix_power(n))
    assert_like_torch(lg.tensor(a, dtype=lg.float32).matrix_power(0), torch.tensor(a,
                                                                                   dtype=torch.float32).matrix_power(0))


@pytest.mark.parametrize("ord", [None, 2, 1, 0, 3.5, -1, math.inf, -math.inf])
@pytest.mark.parametrize("dim", [None, 1, (0, 2)])
def test_vector_norm(ord: Any, dim: Any) -> None:
    x = np.random.default_rng(8).normal(size=(2, 3, 4))
    if ord is None:
        assert_like_torch(lg.linalg.norm(lg.tensor(x), dim=dim), torch.linalg.norm(torch.tensor(x), dim=dim),
                          rtol=1e-12)
        return
    for keepdim in (False, True):
        assert_like_torch(lg.linalg.vector_norm(lg.tensor(x), ord, dim, keepdim),
                          torch.linalg.vector_norm(torch.tensor(x), ord, dim, keepdim), rtol=1e-12)


@pytest.mark.parametrize("ord", ["fro", 1, -1, math.inf, -math.inf])
def test_matrix_norm(ord: Any) -> None:
    x = np.random.default_rng(9).normal(size=(2, 3, 4))
    for dim, keepdim in (((-2, -1), False), ((2, 0), True), ((0, 1), False)):
        assert_like_torch(lg.linalg.matrix_norm(lg.tensor(x), ord, dim, keepdim),
                          torch.linalg.matrix_norm(torch.tensor(x), ord, dim, keepdim), rtol=1e-12)
    assert_like_torch(lg.linalg.norm(lg.tensor(x[0]), ord), torch.linalg.norm(torch.tensor(x[0]), ord), rtol=1e-12)
    # (the orders from singular values, 'nuc', 2 and -2, are tested in test_matrix_norm_svd_orders)
    assert_like_torch(lg.linalg.matrix_norm(lg.tensor(x), "nuc"), torch.linalg.matrix_norm(torch.tensor(x), "nuc"),
                      rtol=1e-12)


def test_linalg_second_derivatives() -> None:
    rng = np.random.default_rng(10)
    a, b = rng.normal(size=(3, 3)) + 3 * np.eye(3), rng.normal(size=(3, 2))
    results = []
    for T in (lg, torch):
        x = T.tensor(a, requires_grad=True)
        y = T.tensor(b, requires_grad=True)
        out = (T.linalg.inv(x) ** 2).sum() + T.linalg.det(x) ** 2 + (T.linalg.solve(x, y) ** 2).sum()
        gx, gy = T.autograd.grad(out, (x, y), create_graph=True)
        hx, hy = T.autograd.grad((gx ** 2).sum() + (gy ** 2).sum(), (x, y))
        results.append([v.detach().numpy() for v in (gx, gy, hx, hy)])
    for u, v in zip(*results):
        np.testing.assert_allclose(u, v, rtol=1e-9)


@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_solve_and_inverse_match_torch(upper: bool) -> None:
    rng = np.random.default_rng(1)
    m = rng.standard_normal((2, 4, 4))
    a0 = m @ m.transpose(0, 2, 1) + 4 * np.eye(4)
    b0 = rng.standard_normal((2, 4, 3))
    res = []
    for T in (torch, lg):
        a, b = T.tensor(a0, requires_grad=True), T.tensor(b0, requires_grad=True)
        f = T.linalg.cholesky(a, upper=upper)
        x = T.cholesky_solve(b, f, upper=upper)
        inv = f.cholesky_inverse(upper=upper)
        (x.sum() + (inv * inv).sum()).backward()
        res.append([x.detach().numpy(), inv.detach().numpy(), a.grad.numpy(), b.grad.numpy()])
    for got, want in zip(res[1], res[0]):
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)
