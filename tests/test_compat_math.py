"""More math, BLAS-style ops, shape helpers and torch.linalg: what the op table in test_ops.py
cannot express (aliases, in-place forms, special values, dtype rules, linalg batching and
singular matrices, second derivatives), each checked against PyTorch."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from helpers import numeric_grads

import lightgrad as lg

torch = pytest.importorskip("torch")


def _pair(a: np.ndarray, grad: bool = False) -> tuple[Any, Any]:
    return lg.tensor(a, requires_grad=grad), torch.tensor(a, requires_grad=grad)


def _same(lt: Any, tt: Any, rtol: float = 1e-12, atol: float = 0.0) -> None:
    assert tuple(lt.shape) == tuple(tt.shape)
    assert lt.dtype.name == str(tt.dtype).replace("torch.", "")
    np.testing.assert_allclose(lt.detach().numpy(), tt.detach().numpy(), rtol=rtol, atol=atol, equal_nan=True)


# ---- aliases and functions ---------------------------------------------------------------------

ALIASES = [("arcsin", "asin"), ("arccos", "acos"), ("arctan", "atan"), ("arcsinh", "asinh"),
           ("arccosh", "acosh"), ("arctanh", "atanh"), ("arctan2", "atan2"), ("fix", "trunc")]


@pytest.mark.parametrize("alias,name", ALIASES)
def test_aliases(alias: str, name: str) -> None:
    x = np.array([0.2, -0.7, 0.5]) if name != "acosh" else np.array([1.5, 2.0, 3.0])
    args = (lg.tensor(x), lg.tensor(x[::-1].copy())) if name == "atan2" else (lg.tensor(x),)
    targs = (torch.tensor(x), torch.tensor(x[::-1].copy())) if name == "atan2" else (torch.tensor(x),)
    _same(getattr(lg, alias)(*args), getattr(torch, alias)(*targs))
    _same(getattr(args[0], alias)(*args[1:]), getattr(targs[0], name)(*targs[1:]))


# ---- in-place forms: same values, gradients through the modified tensor, version bumped ---------

INPLACE = [
    ("asin_", (), "unit"), ("acos_", (), "unit"), ("atan_", (), ""), ("asinh_", (), ""), ("acosh_", (), "big"),
    ("atanh_", (), "unit"), ("arcsin_", (), "unit"), ("erfc_", (), ""), ("erfinv_", (), "unit"),
    ("lgamma_", (), "pos"), ("digamma_", (), "pos"), ("logit_", (0.1,), "prob"), ("sinc_", (), ""),
    ("deg2rad_", (), ""), ("rad2deg_", (), ""), ("nan_to_num_", (), ""), ("fix_", (), ""),
    ("atan2_", ("other",), ""), ("hypot_", ("other",), ""), ("xlogy_", ("other_pos",), ""),
    ("copysign_", ("other",), ""), ("float_power_", (2,), "pos"),
    ("addmm_", ("m23", "m34"), "m24"), ("addmv_", ("m23", "v3"), "v2"), ("addr_", ("v2", "v3"), "m23"),
    ("baddbmm_", ("b225", "b254"), "b224"), ("addbmm_", ("b225", "b254"), "m24"),
    ("addcmul_", ("other", "other"), ""), ("addcdiv_", ("other", "other_pos"), ""),
]


def _domain(kind: str, rng: np.random.Generator) -> np.ndarray:
    shapes = {"m24": (2, 4), "v2": (2,), "m23": (2, 3), "b224": (2, 2, 4)}
    x = rng.normal(size=shapes.get(kind, (2, 3)))
    return {"unit": np.tanh(x) * 0.9, "big": np.abs(x) + 1.2, "pos": np.abs(x) + 0.3,
            "prob": 1 / (1 + np.exp(-x))}.get(kind, x)


def _arg(spec: Any, rng: np.random.Generator) -> np.ndarray | Any:
    shapes = {"other": (2, 3), "other_pos": (2, 3), "m23": (2, 3), "m34": (3, 4), "v3": (3,), "v2": (2,),
              "b225": (2, 2, 5), "b254": (2, 5, 4)}
    if spec not in shapes:
        return spec
    x = rng.normal(size=shapes[spec])
    return np.abs(x) + 0.5 if spec == "other_pos" else x


@pytest.mark.parametrize("name,args,kind", INPLACE, ids=[i[0] for i in INPLACE])
def test_inplace_matches_torch(name: str, args: tuple[Any, ...], kind: str) -> None:
    rng = np.random.default_rng(len(name))
    x = _domain(kind, rng)
    raw = [_arg(a, rng) for a in args]
    la, ta = _pair(x, True)
    largs = [lg.tensor(r, requires_grad=True) if isinstance(r, np.ndarray) else r for r in raw]
    targs = [torch.tensor(r, requires_grad=True) if isinstance(r, np.ndarray) else r for r in raw]
    lx, tx = la * 1.0, ta * 1.0  # non-leaf, so in-place is allowed under autograd
    v = lx._version[0]  # (the in-place count)
    assert getattr(lx, name)(*largs) is lx
    getattr(tx, name)(*targs)
    assert lx._version[0] == v + 1
    _same(lx, tx, rtol=1e-11, atol=1e-13)
    if name in ("fix_", "asinh_", "acosh_", "atanh_"):
        return  # trunc's gradient is zero (no graph here); PyTorch has no in-place gradient for the others
    r = rng.normal(size=tuple(tx.shape))
    (lx * lg.tensor(r)).sum().backward()
    (tx * torch.tensor(r)).sum().backward()
    np.testing.assert_allclose(la.grad.numpy(), ta.grad.numpy(), rtol=1e-9, atol=1e-12)
    for lt, tt in zip(largs, targs):
        if isinstance(lt, lg.Tensor) and tt.grad is not None and tt.grad.abs().sum() > 0:
            np.testing.assert_allclose(lt.grad.numpy(), tt.grad.numpy(), rtol=1e-9, atol=1e-12)


# ---- special functions: accuracy and special values ---------------------------------------------

def _rel_err(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.max(np.abs(a - b) / np.maximum(np.abs(b), 1e-300)))


def test_special_functions_accuracy() -> None:
    rng = np.random.default_rng(0)
    # away from the poles at 0, -1, -2, ... (PyTorch's own values lose digits right next to them)
    x = np.concatenate([rng.uniform(0.01, 40, 3000), rng.uniform(-30, 0, 3000), [0.5, 1, 2, 1e-7, 1e3, 1e8]])
    x = x[np.abs(x - np.round(x)) > 1e-3]
    pos = x[x > 0]
    for f in ("digamma", "lgamma", "erfc"):
        got = getattr(lg, f)(lg.tensor(x)).numpy()
        want = getattr(torch, f)(torch.tensor(x)).numpy()
        tol = 1e-11 if f != "digamma" else 1e-9  # digamma crosses zero between the poles
        assert _rel_err(got[np.abs(want) > 1e-3], want[np.abs(want) > 1e-3]) < tol, f
    got = lg.tensor(pos).digamma().numpy()
    assert _rel_err(got, torch.tensor(pos).digamma().numpy()) < 1e-12
    u = np.concatenate([rng.uniform(-1, 1, 5000), 1 - 10.0 ** -np.arange(1, 16), -1 + 10.0 ** -np.arange(1, 16)])
    assert _rel_err(lg.tensor(u).erfinv().numpy(), torch.tensor(u).erfinv().numpy()) < 1e-13


@pytest.mark.parametrize("f", ["digamma", "lgamma", "erfinv", "erfc", "asin", "acosh", "atanh"])
def test_special_values(f: str) -> None:
    x = np.array([0.0, -0.0, 1.0, -1.0, -3.0, 2.0, math.inf, -math.inf, math.nan, 1e-300])
    _same(getattr(lg, f)(lg.tensor(x)), getattr(torch, f)(torch.tensor(x)), rtol=1e-12)


@pytest.mark.parametrize("dtype", ["float32", "int64"])
@pytest.mark.parametrize("f", ["asin", "atan", "erfc", "erfinv", "lgamma", "digamma", "sinc", "deg2rad", "logit"])
def test_unary_dtypes(f: str, dtype: str) -> None:
    x = np.array([0, 1, 0]) if dtype == "int64" else np.array([0.25, -0.5, 0.0])
    lt, tt = lg.tensor(x, dtype=getattr(lg, dtype)), torch.tensor(x, dtype=getattr(torch, dtype))
    _same(getattr(lt, f)(), getattr(tt, f)(), rtol=1e-5)  # (float32: each side rounds its own way)


def test_binary_dtypes() -> None:
    i, f = np.array([1, -2, 0]), np.array([0.5, 2.0, -1.0])
    # (hypot and logaddexp also take two integer tensors here, where PyTorch raises "not implemented
    # for 'Long'")
    for name in ("atan2", "copysign", "xlogy", "logaddexp", "float_power", "fmax", "fmin", "hypot"):
        for a, b in ((i, i), (i, f), (f, i)) if name not in ("hypot", "logaddexp") else ((i, f), (f, i)):
            lt = getattr(lg, name)(lg.tensor(a), lg.tensor(b))
            tt = getattr(torch, name)(torch.tensor(a), torch.tensor(b))
            _same(lt, tt, rtol=1e-6)
    _same(lg.xlogy(2.0, lg.tensor(f)), torch.xlogy(2.0, torch.tensor(f)), rtol=1e-6)
    _same(lg.tensor(f).copysign(-0.0), torch.tensor(f).copysign(-0.0))
    _same(lg.heaviside(lg.tensor(i), lg.tensor(7)), torch.heaviside(torch.tensor(i), torch.tensor(7)))


def test_nan_and_inf_rules() -> None:
    a = np.array([math.nan, 1.0, math.nan, -math.inf, math.inf, 0.0])
    b = np.array([2.0, math.nan, math.nan, -math.inf, math.inf, -0.0])
    for name in ("fmax", "fmin", "logaddexp", "logaddexp2", "xlogy", "hypot", "atan2"):
        _same(getattr(lg, name)(lg.tensor(a), lg.tensor(b)), getattr(torch, name)(torch.tensor(a), torch.tensor(b)))
    _same(lg.xlogy(lg.zeros(3), lg.tensor([0.0, math.nan, 2.0])),
          torch.xlogy(torch.zeros(3), torch.tensor([0.0, math.nan, 2.0])))
    x = np.array([math.nan, math.inf, -math.inf, 1.0], np.float32)
    _same(lg.tensor(x).nan_to_num(), torch.tensor(x).nan_to_num())
    _same(lg.tensor(a).nan_to_num(posinf=5.0), torch.tensor(a).nan_to_num(posinf=5.0))
    _same(lg.tensor(a).signbit(), torch.tensor(a).signbit())
    _same(lg.tensor(a).isneginf(), torch.tensor(a).isneginf())
    _same(lg.tensor(a).isposinf(), torch.tensor(a).isposinf())
    _same(lg.tensor([1, 2]).nan_to_num(), torch.tensor([1, 2]).nan_to_num())


def test_fmax_gradient_goes_to_the_non_nan_side() -> None:
    a = np.array([math.nan, 1.0, 3.0, 2.0])
    b = np.array([2.0, math.nan, 1.0, 2.0])
    for name in ("fmax", "fmin"):
        (la, ta), (lb, tb) = _pair(a, True), _pair(b, True)
        getattr(lg, name)(la, lb).sum().backward()
        getattr(torch, name)(ta, tb).sum().backward()
        np.testing.assert_array_equal(la.grad.numpy(), ta.grad.numpy())
        np.testing.assert_array_equal(lb.grad.numpy(), tb.grad.numpy())


def test_sinc_and_logit_at_edges() -> None:
    (lx, tx) = _pair(np.array([0.0, 1.0, -2.0, 0.5]), True)
    lg.sinc(lx).sum().backward()
    torch.sinc(tx).sum().backward()
    np.testing.assert_allclose(lx.grad.numpy(), tx.grad.numpy(), rtol=1e-12, atol=1e-15)
    p = np.array([0.0, 1.0, 0.05, 0.5, 0.97])
    for eps in (None, 0.1):
        _same(lg.tensor(p).logit(eps), torch.tensor(p).logit(eps))
        (lp, tp) = _pair(p, True)
        lp.logit(0.1).sum().backward()
        tp.logit(0.1).sum().backward()
        np.testing.assert_allclose(lp.grad.numpy(), tp.grad.numpy(), rtol=1e-12)


@pytest.mark.parametrize("f,x", [("asin", 0.3), ("acos", -0.4), ("atan", 1.3), ("asinh", -2.0), ("acosh", 1.7),
                                 ("atanh", 0.6), ("erfc", 0.8), ("erfinv", 0.7), ("lgamma", 2.5),
                                 ("logit", 0.3), ("sinc", 0.4)])
def test_second_derivatives(f: str, x: float) -> None:
    grads = []
    for T in (lg, torch):
        t = T.tensor([x, x * 0.8], dtype=T.float64, requires_grad=True)
        (g,) = T.autograd.grad(getattr(t, f)().sum(), t, create_graph=True)
        (gg,) = T.autograd.grad(g.sum(), t)
        grads.append((g.detach().numpy(), gg.numpy()))
    np.testing.assert_allclose(grads[0][0], grads[1][0], rtol=1e-10)
    np.testing.assert_allclose(grads[0][1], grads[1][1], rtol=1e-9)


def test_digamma_gradient_is_trigamma() -> None:
    x = np.array([0.3, 1.0, 4.5, -1.5, 30.0])
    (lx, tx) = _pair(x, True)
    lx.digamma().sum().backward()
    tx.digamma().sum().backward()
    np.testing.assert_allclose(lx.grad.numpy(), tx.grad.numpy(), rtol=1e-8)  # PyTorch's trigamma: ~1e-9
    one = lg.tensor([1.0], dtype=lg.float64, requires_grad=True)
    one.digamma().sum().backward()
    np.testing.assert_allclose(one.grad.numpy(), [math.pi ** 2 / 6], rtol=1e-15)  # trigamma(1) = pi^2 / 6


# ---- BLAS-style ops ------------------------------------------------------------------------------

def test_beta_zero_ignores_nan_input() -> None:
    rng = np.random.default_rng(3)
    m1, m2 = rng.normal(size=(2, 3)), rng.normal(size=(3, 4))
    nan_in = np.full((2, 4), math.nan)
    _same(lg.addmm(lg.tensor(nan_in), lg.tensor(m1), lg.tensor(m2), beta=0),
          torch.addmm(torch.tensor(nan_in), torch.tensor(m1), torch.tensor(m2), beta=0))
    v = rng.normal(size=3)
    _same(lg.addmv(lg.full((2,), math.inf, dtype=lg.float64), lg.tensor(m1), lg.tensor(v), beta=0, alpha=2),
          torch.addmv(torch.full((2,), math.inf, dtype=torch.float64), torch.tensor(m1), torch.tensor(v),
                      beta=0, alpha=2))


def test_addcmul_broadcasts_to_a_larger_shape() -> None:
    rng = np.random.default_rng(4)
    a, b, c = rng.normal(size=(3,)), rng.normal(size=(2, 1)), rng.normal(size=(2, 3))
    _same(lg.addcmul(lg.tensor(a), lg.tensor(b), lg.tensor(c), value=-2),
          torch.addcmul(torch.tensor(a), torch.tensor(b), torch.tensor(c), value=-2))
    _same(lg.addcdiv(lg.tensor(a), lg.tensor(b), lg.tensor(c) + 3, value=0.5),
          torch.addcdiv(torch.tensor(a), torch.tensor(b), torch.tensor(c) + 3, value=0.5))


# ---- shape helpers -------------------------------------------------------------------------------

@pytest.mark.parametrize("row,col,offset", [(3, 3, 0), (4, 3, 1), (3, 5, -2), (0, 3, 0), (2, 2, 5)])
def test_tri_indices(row: int, col: int, offset: int) -> None:
    for name in ("tril_indices", "triu_indices"):
        _same(getattr(lg, name)(row, col, offset), getattr(torch, name)(row, col, offset))
    _same(lg.tril_indices(row, col, offset, dtype=lg.int32), torch.tril_indices(row, col, offset, dtype=torch.int32))


def test_atleast_and_stacks() -> None:
    xs = [np.array(1.5), np.arange(3.0), np.ones((2, 2)), np.ones((2, 1, 2))]
    for name in ("atleast_1d", "atleast_2d", "atleast_3d"):
        f, g = getattr(lg, name), getattr(torch, name)
        for x in xs:
            _same(f(lg.tensor(x)), g(torch.tensor(x)))
        lo, to = f(*[lg.tensor(x) for x in xs]), g(*[torch.tensor(x) for x in xs])
        assert isinstance(lo, tuple) and len(lo) == len(to)
        for a, b in zip(lo, to):
            _same(a, b)
        lo1, to1 = f([lg.tensor(xs[0])]), g([torch.tensor(xs[0])])
        assert isinstance(lo1, tuple) and isinstance(to1, tuple)
        _same(lo1[0], to1[0])
    _same(lg.column_stack([lg.tensor(1.0), lg.tensor([2.0])]), torch.column_stack([torch.tensor(1.0),
                                                                                  torch.tensor([2.0])]))


@pytest.mark.parametrize("name,shape,arg", [("hsplit", (2, 6), 3), ("hsplit", (6,), [2, -1, 10]),
                                            ("hsplit", (2, 5), [4, 2]), ("vsplit", (4, 2), [1]),
                                            ("dsplit", (1, 2, 4), 2), ("vsplit", (0, 2), 2)])
def test_splits(name: str, shape: tuple[int, ...], arg: Any) -> None:
    x = np.arange(math.prod(shape), dtype=np.float64).reshape(shape)
    lo, to = getattr(lg.tensor(x), name)(arg), getattr(torch.tensor(x), name)(arg)
    assert len(lo) == len(to)
    for a, b in zip(lo, to):
        _same(a, b)
    lo2 = getattr(lg, name)(lg.tensor(x), arg)
    assert [tuple(t.shape) for t in lo2] == [tuple(t.shape) for t in to]


def test_misc_shape_helpers() -> None:
    b = np.array([True, False, False, True])
    _same(lg.tensor(b).diff(), torch.tensor(b).diff())
    i = np.array([[1, 4, 9, 16], [2, 3, 5, 7]])
    _same(lg.tensor(i).diff(n=3), torch.tensor(i).diff(n=3))
    _same(lg.tensor(i).diff(n=5), torch.tensor(i).diff(n=5))
    _same(lg.tensor(i).tile((2, 1, 1)), torch.tensor(i).tile((2, 1, 1)))
    _same(lg.kron(lg.tensor(i), lg.tensor([1, -1])), torch.kron(torch.tensor(i), torch.tensor([1, -1])))
    _same(lg.tensordot(lg.tensor(i * 1.0), lg.tensor(np.array([1.0, 2.0])), dims=0),
          torch.tensordot(torch.tensor(i * 1.0), torch.tensor(np.array([1.0, 2.0])), dims=0))
    _same(lg.cartesian_prod(lg.tensor([1, 2])), torch.cartesian_prod(torch.tensor([1, 2])))
    _same(lg.block_diag(lg.tensor([[1, 2]]), lg.tensor(3.0)), torch.block_diag(torch.tensor([[1, 2]]),
                                                                               torch.tensor(3.0)))
    x = np.arange(24.0).reshape(2, 3, 4)
    for k in range(-5, 6):
        _same(lg.tensor(x).rot90(k, (2, 0)), torch.tensor(x).rot90(k, (2, 0)))
    _same(lg.tensor([1.0, 2.0, 3.0]).cross(lg.tensor([4.0, 5.0, 6.0])),
          torch.tensor([1.0, 2.0, 3.0]).cross(torch.tensor([4.0, 5.0, 6.0]), dim=0))
    c1, c2 = np.arange(12.0).reshape(2, 2, 3), np.ones((1, 2, 3))
    _same(lg.linalg.cross(lg.tensor(c1), lg.tensor(c2)), torch.linalg.cross(torch.tensor(c1), torch.tensor(c2)))
    _same(lg.tensor(np.arange(6.0)).reshape(2, 3).diag_embed(2, 0, 1),
          torch.tensor(np.arange(6.0)).reshape(2, 3).diag_embed(2, 0, 1))
    _same(lg.tensor(3.0).diagflat(), torch.tensor(3.0).diagflat())
    assert lg.tensor([0.0]).is_nonzero() is torch.tensor([0.0]).is_nonzero() is False
    assert lg.tensor([[2]]).is_nonzero() is True
    with pytest.raises(RuntimeError, match="no values"):
        lg.tensor([]).is_nonzero()
    assert lg.ones(2, 3).is_same_size(lg.zeros(2, 3)) and not lg.ones(2, 3).is_same_size(lg.ones(3, 2))
    for dt in ("float32", "int64", "uint8", "bool", "int8"):
        assert lg.ones(1, dtype=getattr(lg, dt)).is_signed() == torch.ones(1, dtype=getattr(torch, dt)).is_signed()


# ---- linalg ----------------------------------------------------------------------------------------

def _spd(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    a = rng.normal(size=shape)
    return a @ a.swapaxes(-1, -2) + np.eye(shape[-1])


def _grad_pair(fn: Any, *arrays: np.ndarray, rtol: float = 1e-9) -> None:
    """fn(T, *tensors) forward and backward against PyTorch, in float64."""
    lts = [lg.tensor(a, requires_grad=True) for a in arrays]
    tts = [torch.tensor(a, requires_grad=True) for a in arrays]
    lo, to = fn(lg, *lts), fn(torch, *tts)
    _same(lo, to, rtol=rtol, atol=1e-12)
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
    _grad_pair(lambda T, x: T.linalg.cholesky(x, upper=True), _spd(rng, (2, 4, 4)))
    s, ld = lg.linalg.slogdet(lg.tensor(a))
    ts, tld = torch.linalg.slogdet(torch.tensor(a))
    _same(s, ts)
    _same(ld, tld)


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
    _same(lg.logdet(lg.tensor(neg)), torch.logdet(torch.tensor(neg)))
    _same(lg.tensor(np.zeros((2, 2))).logdet(), torch.tensor(np.zeros((2, 2))).logdet())
    _same(lg.linalg.slogdet(lg.tensor(neg)).sign, torch.linalg.slogdet(torch.tensor(neg)).sign)


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
        _same(lg.tensor(a).matrix_power(n), torch.tensor(a).matrix_power(n))
    _same(lg.tensor(a, dtype=lg.float32).matrix_power(0), torch.tensor(a, dtype=torch.float32).matrix_power(0))


@pytest.mark.parametrize("ord", [None, 2, 1, 0, 3.5, -1, math.inf, -math.inf])
@pytest.mark.parametrize("dim", [None, 1, (0, 2)])
def test_vector_norm(ord: Any, dim: Any) -> None:
    x = np.random.default_rng(8).normal(size=(2, 3, 4))
    if ord is None:
        _same(lg.linalg.norm(lg.tensor(x), dim=dim), torch.linalg.norm(torch.tensor(x), dim=dim), rtol=1e-12)
        return
    for keepdim in (False, True):
        _same(lg.linalg.vector_norm(lg.tensor(x), ord, dim, keepdim),
              torch.linalg.vector_norm(torch.tensor(x), ord, dim, keepdim), rtol=1e-12)


@pytest.mark.parametrize("ord", ["fro", 1, -1, math.inf, -math.inf])
def test_matrix_norm(ord: Any) -> None:
    x = np.random.default_rng(9).normal(size=(2, 3, 4))
    for dim, keepdim in (((-2, -1), False), ((2, 0), True), ((0, 1), False)):
        _same(lg.linalg.matrix_norm(lg.tensor(x), ord, dim, keepdim),
              torch.linalg.matrix_norm(torch.tensor(x), ord, dim, keepdim), rtol=1e-12)
    _same(lg.linalg.norm(lg.tensor(x[0]), ord), torch.linalg.norm(torch.tensor(x[0]), ord), rtol=1e-12)
    # (the orders from singular values, 'nuc', 2 and -2, are tested in test_linalg_decomp.py)
    _same(lg.linalg.matrix_norm(lg.tensor(x), "nuc"), torch.linalg.matrix_norm(torch.tensor(x), "nuc"), rtol=1e-12)


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
