"""lightgrad.linalg extras (solve_triangular, the _ex variants, LU, multi_dot, vecdot, matrix_exp,
tensorinv, tensorsolve, diagonal) against PyTorch: values in float64 and float32, gradients against
PyTorch and finite differences in float64, batched inputs and PyTorch's errors."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import lightgrad as lg
from tests.helpers import numeric_grads

torch = pytest.importorskip("torch")


def _rand(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(sum(shape) * 31 + len(shape) + seed).standard_normal(shape)


def _well(*shape: int, seed: int = 0) -> np.ndarray:
    """Well-conditioned square matrices (diagonally dominated), so solves are accurate."""
    n = shape[-1]
    return _rand(*shape, seed=seed) + 3 * n ** 0.5 * np.eye(n)


def _check(f: Callable[..., Any], *arrays: np.ndarray, fd: bool = True, tol: float = 1e-9) -> None:
    """f(L, *inputs) (a scalar) and its gradients match PyTorch; in float64 also finite differences."""
    ours = [lg.tensor(a, requires_grad=True) for a in arrays]
    ref = [torch.tensor(a, requires_grad=True) for a in arrays]
    out, out_ref = f(lg, *ours), f(torch, *ref)
    out.backward()
    out_ref.backward()
    np.testing.assert_allclose(out.detach().numpy(), out_ref.detach().numpy(), rtol=tol * 100, atol=tol * 100)
    for t, r in zip(ours, ref, strict=True):
        np.testing.assert_allclose(t.grad.numpy(), r.grad.numpy(), rtol=tol * 1e3, atol=tol * 1e3)
    if fd:
        num = numeric_grads(lambda *v: f(lg, *[lg.tensor(x) for x in v]).numpy(), [a.copy() for a in arrays],
                            np.array(1.0))
        for t, n in zip(ours, num, strict=True):
            np.testing.assert_allclose(t.grad.numpy(), n, rtol=1e-5, atol=1e-6)


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


# ---- solve_triangular, triangular_solve ---------------------------------------------------------------

@pytest.mark.parametrize("upper", [True, False])
@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("unit", [True, False])
def test_solve_triangular_values_and_grads(upper: bool, left: bool, unit: bool) -> None:
    A = _well(2, 4, 4)
    b = _rand(2, 4, 3) if left else _rand(2, 3, 4)

    def f(L: Any, A: Any, b: Any) -> Any:
        X = L.linalg.solve_triangular(A, b, upper=upper, left=left, unitriangular=unit)
        return (X * X.sin()).sum()  # a generic loss, not a plain sum
    _check(f, A, b)


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
    _check(f, b, A)
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


# ---- cholesky_ex, inv_ex, solve_ex ----------------------------------------------------------------------

def _spd(*shape: int) -> np.ndarray:
    a = _rand(*shape)
    return a @ np.swapaxes(a, -1, -2) + shape[-1] * np.eye(shape[-1])


def test_cholesky_ex() -> None:
    def f(L: Any, A: Any) -> Any:
        Lc, info = L.linalg.cholesky_ex((A + A.mT) / 2, upper=True)  # (symmetric, so FD sees PyTorch's gradient)
        assert info.dtype == L.int32 and not info.any()
        return (Lc * Lc.cos()).sum()
    _check(f, _spd(2, 3, 3))
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
    _check(f, _well(2, 3, 3), _rand(2, 3, 2))
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


# ---- LU ------------------------------------------------------------------------------------------------

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
    _check(f, _rand(*shape))

    def g(L: Any, A: Any) -> Any:
        LU = L.linalg.lu_factor_ex(A)[0]
        return (LU * LU.sin()).sum()
    _check(g, _rand(*shape))


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
    _check(f, LU, b)

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


# ---- multi_dot, vecdot, matrix_exp, tensorinv, tensorsolve, diagonal ---------------------------------------

@pytest.mark.parametrize("shapes", [[(3,), (3, 4), (4,)], [(2, 3), (3, 4), (4, 5), (5, 2)], [(3, 4), (4,)],
                                    [(3,), (3, 2)]])
def test_multi_dot(shapes: list[tuple[int, ...]]) -> None:
    arrays = [_rand(*s, seed=i) for i, s in enumerate(shapes)]
    _check(lambda L, *xs: (L.linalg.multi_dot(list(xs)) ** 2).sum(), *arrays)


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
def test_extra_errors(f: Callable[[Any], Any]) -> None:
    _raises_like(f)


def test_vecdot_and_diagonal() -> None:
    _check(lambda L, x, y: (L.linalg.vecdot(x, y, dim=-2) ** 2).sum(), _rand(2, 3, 4), _rand(3, 4))
    _check(lambda L, A: (L.linalg.diagonal(A, offset=1, dim1=0, dim2=2) ** 2).sum(), _rand(3, 2, 4))


@pytest.mark.parametrize("scale", [0.1, 1.0, 6.0])
def test_matrix_exp(scale: float) -> None:
    a = _rand(2, 4, 4) * scale

    def f(L: Any, A: Any) -> Any:
        E = L.linalg.matrix_exp(A)
        return (E * E.sin()).sum()
    _check(f, a, tol=1e-9 * max(1.0, scale ** 4), fd=scale <= 1)
    np.testing.assert_allclose(lg.matrix_exp(lg.tensor(a.astype(np.float32))).numpy(),
                               torch.matrix_exp(torch.tensor(a.astype(np.float32))).numpy(), rtol=1e-4, atol=1e-4)
    _same(lg.tensor(a).matrix_exp(), torch.tensor(a).matrix_exp(), 1e-9 * max(1.0, scale ** 4))


def test_tensorinv_and_tensorsolve() -> None:
    a = _rand(4, 6, 8, 3)
    _check(lambda L, A: (L.linalg.tensorinv(A, ind=2) ** 2).sum(), a, fd=False)
    A, b = _rand(2, 3, 6), _rand(2, 3)
    _check(lambda L, A, b: (L.linalg.tensorsolve(A, b) ** 2).sum(), A, b, fd=False)
    A2 = _rand(6, 2, 3)
    _check(lambda L, A, b: (L.linalg.tensorsolve(A, b, dims=(0,)) ** 2).sum(), A2, b, fd=False)
