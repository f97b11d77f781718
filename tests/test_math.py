"""Elementwise math and reductions beyond the op table, checked against PyTorch.

What the op table in test_ops.py cannot express: aliases, in-place forms, special functions and
special values, dtype and NaN rules, hypot without overflow, copysign's zero gradient and
heaviside's missing derivative, BLAS-style ops, silent inf/NaN results, second derivatives."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from helpers import assert_like_torch, assert_same_results, numeric_grads, numpy_forced, results_on_both, tensor_pair

import lightgrad as lg

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(0)


# ---- aliases and functions -----------------------------------------------------------------------

ALIASES = [("arcsin", "asin"), ("arccos", "acos"), ("arctan", "atan"), ("arcsinh", "asinh"),
           ("arccosh", "acosh"), ("arctanh", "atanh"), ("arctan2", "atan2"), ("fix", "trunc")]


@pytest.mark.parametrize("alias,name", ALIASES)
def test_aliases(alias: str, name: str) -> None:
    x = np.array([0.2, -0.7, 0.5]) if name != "acosh" else np.array([1.5, 2.0, 3.0])
    args = (lg.tensor(x), lg.tensor(x[::-1].copy())) if name == "atan2" else (lg.tensor(x),)
    targs = (torch.tensor(x), torch.tensor(x[::-1].copy())) if name == "atan2" else (torch.tensor(x),)
    assert_like_torch(getattr(lg, alias)(*args), getattr(torch, alias)(*targs))
    assert_like_torch(getattr(args[0], alias)(*args[1:]), getattr(targs[0], name)(*targs[1:]))


# ---- in-place forms: same values, gradients through the modified tensor, version bumped ----------

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
    la, ta = tensor_pair(x, True)
    largs = [lg.tensor(r, requires_grad=True) if isinstance(r, np.ndarray) else r for r in raw]
    targs = [torch.tensor(r, requires_grad=True) if isinstance(r, np.ndarray) else r for r in raw]
    lx, tx = la * 1.0, ta * 1.0  # non-leaf, so in-place is allowed under autograd
    v = lx._version[0]  # (the in-place count)
    assert getattr(lx, name)(*largs) is lx
    getattr(tx, name)(*targs)
    assert lx._version[0] == v + 1
    assert_like_torch(lx, tx, rtol=1e-11, atol=1e-13)
    if name in ("fix_", "asinh_", "acosh_", "atanh_"):
        return  # trunc's gradient is zero (no graph here); PyTorch has no in-place gradient for the others
    r = rng.normal(size=tuple(tx.shape))
    (lx * lg.tensor(r)).sum().backward()
    (tx * torch.tensor(r)).sum().backward()
    np.testing.assert_allclose(la.grad.numpy(), ta.grad.numpy(), rtol=1e-9, atol=1e-12)
    for lt, tt in zip(largs, targs):
        if isinstance(lt, lg.Tensor) and tt.grad is not None and tt.grad.abs().sum() > 0:
            np.testing.assert_allclose(lt.grad.numpy(), tt.grad.numpy(), rtol=1e-9, atol=1e-12)


# ---- special functions: accuracy and special values ----------------------------------------------

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
    assert_like_torch(getattr(lg, f)(lg.tensor(x)), getattr(torch, f)(torch.tensor(x)), rtol=1e-12)


@pytest.mark.parametrize("dtype", ["float32", "int64"])
@pytest.mark.parametrize("f", ["asin", "atan", "erfc", "erfinv", "lgamma", "digamma", "sinc", "deg2rad", "logit"])
def test_unary_dtypes(f: str, dtype: str) -> None:
    x = np.array([0, 1, 0]) if dtype == "int64" else np.array([0.25, -0.5, 0.0])
    lt, tt = lg.tensor(x, dtype=getattr(lg, dtype)), torch.tensor(x, dtype=getattr(torch, dtype))
    assert_like_torch(getattr(lt, f)(), getattr(tt, f)(), rtol=1e-5)  # (float32: each side rounds its own way)


def test_binary_dtypes() -> None:
    i, f = np.array([1, -2, 0]), np.array([0.5, 2.0, -1.0])
    # (hypot and logaddexp also take two integer tensors here, where PyTorch raises "not implemented
    # for 'Long'")
    for name in ("atan2", "copysign", "xlogy", "logaddexp", "float_power", "fmax", "fmin", "hypot"):
        for a, b in ((i, i), (i, f), (f, i)) if name not in ("hypot", "logaddexp") else ((i, f), (f, i)):
            lt = getattr(lg, name)(lg.tensor(a), lg.tensor(b))
            tt = getattr(torch, name)(torch.tensor(a), torch.tensor(b))
            assert_like_torch(lt, tt, rtol=1e-6)
    assert_like_torch(lg.xlogy(2.0, lg.tensor(f)), torch.xlogy(2.0, torch.tensor(f)), rtol=1e-6)
    assert_like_torch(lg.tensor(f).copysign(-0.0), torch.tensor(f).copysign(-0.0))
    assert_like_torch(lg.heaviside(lg.tensor(i), lg.tensor(7)), torch.heaviside(torch.tensor(i), torch.tensor(7)))


def test_nan_and_inf_rules() -> None:
    a = np.array([math.nan, 1.0, math.nan, -math.inf, math.inf, 0.0])
    b = np.array([2.0, math.nan, math.nan, -math.inf, math.inf, -0.0])
    for name in ("fmax", "fmin", "logaddexp", "logaddexp2", "xlogy", "hypot", "atan2"):
        assert_like_torch(getattr(lg, name)(lg.tensor(a), lg.tensor(b)), getattr(torch, name)(torch.tensor(a),
                                                                                              torch.tensor(b)))
    assert_like_torch(lg.xlogy(lg.zeros(3), lg.tensor([0.0, math.nan, 2.0])),
                      torch.xlogy(torch.zeros(3), torch.tensor([0.0, math.nan, 2.0])))
    x = np.array([math.nan, math.inf, -math.inf, 1.0], np.float32)
    assert_like_torch(lg.tensor(x).nan_to_num(), torch.tensor(x).nan_to_num())
    assert_like_torch(lg.tensor(a).nan_to_num(posinf=5.0), torch.tensor(a).nan_to_num(posinf=5.0))
    assert_like_torch(lg.tensor(a).signbit(), torch.tensor(a).signbit())
    assert_like_torch(lg.tensor(a).isneginf(), torch.tensor(a).isneginf())
    assert_like_torch(lg.tensor(a).isposinf(), torch.tensor(a).isposinf())
    assert_like_torch(lg.tensor([1, 2]).nan_to_num(), torch.tensor([1, 2]).nan_to_num())


def test_fmax_gradient_goes_to_the_non_nan_side() -> None:
    a = np.array([math.nan, 1.0, 3.0, 2.0])
    b = np.array([2.0, math.nan, 1.0, 2.0])
    for name in ("fmax", "fmin"):
        (la, ta), (lb, tb) = tensor_pair(a, True), tensor_pair(b, True)
        getattr(lg, name)(la, lb).sum().backward()
        getattr(torch, name)(ta, tb).sum().backward()
        np.testing.assert_array_equal(la.grad.numpy(), ta.grad.numpy())
        np.testing.assert_array_equal(lb.grad.numpy(), tb.grad.numpy())


def test_sinc_and_logit_at_edges() -> None:
    (lx, tx) = tensor_pair(np.array([0.0, 1.0, -2.0, 0.5]), True)
    lg.sinc(lx).sum().backward()
    torch.sinc(tx).sum().backward()
    np.testing.assert_allclose(lx.grad.numpy(), tx.grad.numpy(), rtol=1e-12, atol=1e-15)
    p = np.array([0.0, 1.0, 0.05, 0.5, 0.97])
    for eps in (None, 0.1):
        assert_like_torch(lg.tensor(p).logit(eps), torch.tensor(p).logit(eps))
        (lp, tp) = tensor_pair(p, True)
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
    (lx, tx) = tensor_pair(x, True)
    lx.digamma().sum().backward()
    tx.digamma().sum().backward()
    np.testing.assert_allclose(lx.grad.numpy(), tx.grad.numpy(), rtol=1e-8)  # PyTorch's trigamma: ~1e-9
    one = lg.tensor([1.0], dtype=lg.float64, requires_grad=True)
    one.digamma().sum().backward()
    np.testing.assert_allclose(one.grad.numpy(), [math.pi ** 2 / 6], rtol=1e-15)  # trigamma(1) = pi^2 / 6


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("op", ["bitwise_not_", "bitwise_and"])
def test_integer_only_ops_name_the_dtype_as_torch(dtype: str, op: str) -> None:
    msgs = []
    for T in (torch, lg):
        x = T.ones(2, dtype=getattr(T, dtype))
        with pytest.raises(NotImplementedError) as e:
            getattr(x, op)() if op.endswith("_") else getattr(x, op)(x)
        msgs.append(str(e.value))
    assert msgs[1] == msgs[0]


@pytest.mark.parametrize("dtype", ["int64", "int32", "int16", "uint8", "bool"])
def test_bitwise_dtypes_match_torch(dtype: str) -> None:
    a = np.array([0, 1, 5, 6, 12]).astype(np.bool_ if dtype == "bool" else getattr(np, dtype))
    b = np.array([3, 1, 4, 0, 10]).astype(a.dtype)
    la, lb = lg.tensor(a), lg.tensor(b)
    ta, tb = torch.tensor(a), torch.tensor(b)
    ops = ["bitwise_and", "bitwise_or", "bitwise_xor"]
    if dtype != "bool":
        ops += ["bitwise_left_shift", "bitwise_right_shift", "gcd", "lcm"]
    for op in ops:
        lo, to = getattr(lg, op)(la, lb), getattr(torch, op)(ta, tb)
        assert lo.dtype.name == str(to.dtype).replace("torch.", ""), op
        np.testing.assert_array_equal(lo.numpy(), to.numpy(), err_msg=op)
        lo, to = getattr(la.clone(), op + "_")(lb), getattr(ta.clone(), op + "_")(tb)
        np.testing.assert_array_equal(lo.numpy(), to.numpy(), err_msg=op + "_")
    np.testing.assert_array_equal(la.bitwise_not().numpy(), ta.bitwise_not().numpy())
    np.testing.assert_array_equal(lg.bitwise_and(la, 3).numpy(), torch.bitwise_and(ta, 3).numpy())


def test_vander_gradient_finite_differences() -> None:
    # (PyTorch's own vander fails in backward, so the op table checks only its forward)
    x = np.random.default_rng(3).normal(size=4)
    r = np.random.default_rng(4).normal(size=(4, 3))
    t = lg.tensor(x, requires_grad=True)
    (lg.vander(t, 3, increasing=False) * lg.tensor(r)).sum().backward()
    num = numeric_grads(lambda a: lg.vander(lg.tensor(a), 3).numpy(), [x.copy()], r)
    np.testing.assert_allclose(t.grad.numpy(), num[0], rtol=1e-6, atol=1e-8)


def test_inf_and_nan_results_are_silent_as_in_torch_and_numpy_still_warns() -> None:
    # log(0), x / 0 and exp overflow give inf silently, as PyTorch's do, eagerly and replayed; the
    # user's own NumPy calls keep NumPy's warnings
    import subprocess
    import sys
    code = (
        "import lightgrad as lg\n"
        "lg.log(lg.tensor([0.0])); lg.tensor([1.0]) / 0; lg.tensor([1e30]).exp()\n"
        "x = lg.tensor([0.0], requires_grad=True); lg.log(x).sum().backward(); assert x.grad.item() == float('inf')\n"
        "step = lg.compile(lambda t: (t / 0).sum())\n"
        "[step(lg.ones(3)) for _ in range(3)]\n"
        "print('numpy', flush=True)\n"
        "import numpy as np; np.log(np.zeros(1))\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                       env={**__import__("os").environ, "PYTHONWARNINGS": ""})
    assert r.returncode == 0, r.stderr
    assert r.stdout == "numpy\n"
    assert r.stderr.count("RuntimeWarning") == 1 and "divide by zero encountered in log" in r.stderr


# ---- hypot ---------------------------------------------------------------------------------------

def test_hypot_does_not_overflow_in_float32() -> None:
    xs = np.array([3e19, 1e30, -2e38, 0.5, 1e-30], np.float32)
    ys = np.array([4e19, 1.0, 1e38, -1.2, 2e-30], np.float32)

    def f(T: Any) -> Any:
        x, y = T.tensor(xs, requires_grad=True), T.tensor(ys, requires_grad=True)
        h = T.hypot(x, y)
        h.backward(T.ones(5))
        return (h, x.grad, y.grad)

    got, want = results_on_both(f)
    assert np.isfinite(numpy_forced(want[0])).all()
    assert_same_results(got, want, rtol=1e-6)


def test_hypot_broadcasts_and_second_derivative() -> None:
    xs = np.array([[1.0, -2.0, 3.0], [0.5, 4.0, -1.0]])
    ys = np.array([2.0, -1.0, 0.25])

    def f(T: Any) -> Any:
        x, y = T.tensor(xs, requires_grad=True), T.tensor(ys, requires_grad=True)
        h = x.hypot(y)
        gx, gy = T.autograd.grad(h.sum(), (x, y), create_graph=True)
        (gx.sum() + (gy * gy).sum()).backward()
        return (h, gx, gy, x.grad, y.grad)

    assert_same_results(*results_on_both(f), rtol=1e-10)


def test_hypot_gradient_matches_finite_differences() -> None:
    rng = np.random.default_rng(0)
    xs, ys, r = rng.normal(size=(3, 4)), rng.normal(size=(4,)), rng.normal(size=(3, 4))
    x, y = lg.tensor(xs, requires_grad=True), lg.tensor(ys, requires_grad=True)
    (x.hypot(y) * lg.tensor(r)).sum().backward()
    nx, ny = numeric_grads(np.hypot, [xs.copy(), ys.copy()], r)
    np.testing.assert_allclose(x.grad._data, nx, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(y.grad._data, ny, rtol=1e-6, atol=1e-8)


def test_hypot_in_place() -> None:
    def f(T: Any) -> Any:
        p = T.tensor([3e19, 5.0], requires_grad=True)
        a = p * 1
        a.hypot_(T.tensor([4e19, 12.0]))
        a.sum().backward()
        return (a, p.grad)

    assert_same_results(*results_on_both(f))


# ---- copysign and heaviside ----------------------------------------------------------------------

def test_copysign_gives_other_a_zero_gradient() -> None:
    def f(T: Any) -> Any:
        x = T.tensor([1.0, -2.0, 0.0, 3.0], requires_grad=True)
        y = T.tensor([-1.0, 1.0, -0.0, 2.0], requires_grad=True)
        out = T.copysign(x, y)
        out.backward(T.tensor([1.0, 2.0, 3.0, 4.0]))
        z = T.copysign(x.detach(), y)  # only other requires grad: still in the graph
        state = (z.requires_grad, T.copysign(x, y.detach()).requires_grad)
        z.sum().backward()
        return (out, x.grad, y.grad) + state

    assert_same_results(*results_on_both(f))


@pytest.mark.parametrize("which", ["input", "values", "in_place"])
def test_heaviside_backward_raises(which: str) -> None:
    def f(T: Any) -> Any:
        x = T.tensor([-1.0, 0.0, 2.0], requires_grad=which == "input")
        v = T.tensor([0.5, 0.5, 0.5], requires_grad=which == "values")
        if which == "in_place":
            p = T.tensor([-1.0, 0.0, 2.0], requires_grad=True)
            out = (p * 1).heaviside_(v)
        else:
            out = T.heaviside(x, v)
        assert out.requires_grad and out.grad_fn is not None
        out.sum().backward()

    got, want = results_on_both(f)
    assert isinstance(want, RuntimeError) and isinstance(got, RuntimeError)
    assert str(got) == str(want)


def test_heaviside_without_grad_is_a_plain_tensor() -> None:
    def f(T: Any) -> Any:
        out = T.heaviside(T.tensor([-1.0, 0.0, 2.0]), T.tensor([0.5]))
        return (out, out.requires_grad)

    assert_same_results(*results_on_both(f))


# ---- BLAS-style ops ------------------------------------------------------------------------------

def test_beta_zero_ignores_nan_input() -> None:
    rng = np.random.default_rng(3)
    m1, m2 = rng.normal(size=(2, 3)), rng.normal(size=(3, 4))
    nan_in = np.full((2, 4), math.nan)
    assert_like_torch(lg.addmm(lg.tensor(nan_in), lg.tensor(m1), lg.tensor(m2), beta=0),
                      torch.addmm(torch.tensor(nan_in), torch.tensor(m1), torch.tensor(m2), beta=0))
    v = rng.normal(size=3)
    assert_like_torch(lg.addmv(lg.full((2,), math.inf, dtype=lg.float64), lg.tensor(m1), lg.tensor(v), beta=0, alpha=2),
                      torch.addmv(torch.full((2,), math.inf, dtype=torch.float64), torch.tensor(m1), torch.tensor(v),
                                  beta=0, alpha=2))


def test_addcmul_broadcasts_to_a_larger_shape() -> None:
    rng = np.random.default_rng(4)
    a, b, c = rng.normal(size=(3,)), rng.normal(size=(2, 1)), rng.normal(size=(2, 3))
    assert_like_torch(lg.addcmul(lg.tensor(a), lg.tensor(b), lg.tensor(c), value=-2),
                      torch.addcmul(torch.tensor(a), torch.tensor(b), torch.tensor(c), value=-2))
    assert_like_torch(lg.addcdiv(lg.tensor(a), lg.tensor(b), lg.tensor(c) + 3, value=0.5),
                      torch.addcdiv(torch.tensor(a), torch.tensor(b), torch.tensor(c) + 3, value=0.5))


# ---- reductions ----------------------------------------------------------------------------------

@pytest.mark.parametrize("shape", [(1000, 1000), (64, 40, 30), (2, 70000)])
def test_full_sum_of_a_large_array_matches_torch(shape: tuple[int, ...]) -> None:
    x0 = RNG.standard_normal(shape).astype(np.float32)
    exact = x0.astype(np.float64).sum()
    ours, theirs = lg.tensor(x0).sum().item(), torch.tensor(x0).sum().item()
    assert abs(ours - exact) <= 4 * abs(theirs - exact) + 1e-6 * np.abs(x0).sum()
    kept = lg.tensor(x0).sum(dim=tuple(range(len(shape))), keepdim=True)
    assert tuple(kept.shape) == (1,) * len(shape)
    assert kept.item() == pytest.approx(ours)


@pytest.mark.parametrize("dim", [None, 0, 1])
def test_prod_second_derivative_matches_torch(dim: Any) -> None:
    x0 = np.array([[1.5, -2.0, 0.5], [0.0, 3.0, 2.0]])  # a zero: the exclusive products, not out / x
    w = np.arange(6.0).reshape(2, 3)
    res = []
    for T in (torch, lg):
        x = T.tensor(x0, requires_grad=True)
        y = x.prod() if dim is None else x.prod(dim).sum()
        (g,) = T.autograd.grad(y, x, create_graph=True)
        (g * T.tensor(w)).sum().backward()
        res.append((g.detach().numpy(), x.grad.numpy()))
    np.testing.assert_allclose(res[1][0], res[0][0], rtol=1e-12)
    np.testing.assert_allclose(res[1][1], res[0][1], rtol=1e-12)


@pytest.mark.parametrize("dim,keepdim", [(None, False), (0, False), ((0, 1), True), (-1, True)])
def test_mean_to_second_order_matches_torch(dim: Any, keepdim: bool) -> None:
    x0 = np.random.default_rng(1).standard_normal((3, 4)).astype(np.float64)
    grads = []
    for T in (torch, lg):
        x = T.tensor(x0, requires_grad=True)
        m = x.mean() if dim is None else x.mean(dim, keepdim=keepdim)
        f = (m * m * m).sum() + (x * x).mean()
        (g,) = T.autograd.grad(f, x, create_graph=True)
        (g * g).sum().backward()
        grads.append((g.detach().numpy(), x.grad.numpy()))
    np.testing.assert_allclose(grads[1][0], grads[0][0], rtol=1e-12)
    np.testing.assert_allclose(grads[1][1], grads[0][1], rtol=1e-12)
