"""lightgrad.special against torch.special: values on grids that reach the edges (0, negative, inf,
NaN, large arguments) in float64 and float32, gradients where PyTorch defines them and its errors
where it does not, and results without a gradient where PyTorch gives none."""

from __future__ import annotations


import numpy as np
import pytest

import lightgrad as lg

torch = pytest.importorskip("torch")

INF, NAN = np.inf, np.nan
EDGES = np.array([0.0, -0.0, 1e-300, -1e-8, 1e-8, 0.5, -0.5, 1.0, -1.0, 2.5, -7.3, 25.9, 26.1, -26.1, 29.9, 30.1,
                  -30.1, 100.0, -100.0, 700.0, 710.0, 1e5, INF, -INF, NAN])
GRID = np.concatenate([np.linspace(-40, 40, 321), EDGES])
PROB = np.concatenate([np.linspace(0, 1, 101), [5e-324, 1e-300, 1e-20, 1e-10, 1 - 1e-10, 1 - 1e-16, -0.1, 1.1, INF,
                                                 NAN]])
POSITIVE = np.concatenate([np.linspace(0.05, 30, 120), [0.0, 1e-300, 1e3, 1e6, INF, NAN, -1.0, -2.5]])

K_FUNCTIONS = ["modified_bessel_k0", "modified_bessel_k1", "scaled_modified_bessel_k0", "scaled_modified_bessel_k1"]
UNARY = [*((name, GRID) for name in K_FUNCTIONS), ("erfcx", GRID), ("log_ndtr", GRID), ("ndtr", GRID), ("ndtri", PROB), ("i0", GRID), ("i0e", GRID),
         ("i1", GRID), ("i1e", GRID), ("entr", POSITIVE), ("spherical_bessel_j0", GRID),
         ("modified_bessel_i0", GRID), ("modified_bessel_i1", GRID), ("expit", GRID), ("gammaln", POSITIVE),
         ("psi", POSITIVE), ("digamma", POSITIVE), ("erf", GRID), ("erfc", GRID), ("exp2", GRID[:-6]),
         ("expm1", GRID[:-6]), ("log1p", POSITIVE), ("sinc", GRID), ("round", GRID), ("logit", PROB),
         ("erfinv", PROB * 2 - 1)]


def _same(got: np.ndarray, want: np.ndarray, rtol: float, atol: float) -> None:
    both_nan = np.isnan(got) & np.isnan(want)
    ok = both_nan | (got == want) | np.isclose(got, want, rtol=rtol, atol=atol)
    assert ok.all(), list(zip(got[~ok][:5], want[~ok][:5]))


@pytest.mark.parametrize("name,xs", UNARY, ids=[u[0] for u in UNARY])
def test_unary_values_match_torch_float64(name: str, xs: np.ndarray) -> None:
    got = getattr(lg.special, name)(lg.tensor(xs)).numpy()
    want = getattr(torch.special, name)(torch.tensor(xs)).numpy()
    _same(got, want, rtol=1e-10, atol=1e-300)


@pytest.mark.parametrize("name,xs", UNARY, ids=[u[0] for u in UNARY])
def test_unary_values_match_torch_float32(name: str, xs: np.ndarray) -> None:
    x32 = xs.astype(np.float32)
    lo = getattr(lg.special, name)(lg.tensor(x32))
    to = getattr(torch.special, name)(torch.tensor(x32))
    assert lo.dtype == lg.float32 and to.dtype == torch.float32
    # (float32 results near 0 of differences such as 1 + erf(x) carry absolute rounding errors)
    _same(lo.numpy(), to.numpy(), rtol=4e-6, atol=1e-7)


GRADS = [("erfcx", "normal"), ("log_ndtr", "normal"), ("ndtr", "normal"), ("ndtri", "prob"), ("i0", "normal"),
         ("i0e", "normal"), ("i1", "normal"), ("i1e", "normal"), ("entr", "positive"), ("expit", "normal"),
         ("gammaln", "positive"), ("logit", "prob")]


def _points(kind: str) -> np.ndarray:
    rng = np.random.default_rng(len(kind))
    if kind == "prob":
        return rng.uniform(0.02, 0.98, 12)
    if kind == "positive":
        return rng.uniform(0.2, 6.0, 12)
    return np.concatenate([rng.normal(size=10) * 4, [0.0, 40.0]])


@pytest.mark.parametrize("name,kind", GRADS, ids=[g[0] for g in GRADS])
def test_gradient_and_second_derivative_match_torch(name: str, kind: str) -> None:
    a = _points(kind)
    res = []
    for T in (lg, torch):
        x = T.tensor(a, requires_grad=True)
        (g,) = T.autograd.grad(getattr(T.special, name)(x).sum(), [x], create_graph=True)
        (h,) = T.autograd.grad(g.sum(), [x])
        res.append((g.detach().numpy(), h.numpy()))
    np.testing.assert_allclose(res[0][0], res[1][0], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(res[0][1], res[1][1], rtol=1e-8, atol=1e-10)


def test_gradients_at_zero() -> None:
    for name in ("i1", "i1e", "entr", "i0e"):
        x, y = lg.tensor([0.0], requires_grad=True), torch.tensor([0.0], requires_grad=True)
        getattr(lg.special, name)(x).sum().backward()
        getattr(torch.special, name)(y).sum().backward()
        np.testing.assert_array_equal(x.grad.numpy(), y.grad.numpy())


BINARY = ["gammainc", "gammaincc", "zeta", "xlog1py", "xlogy"]
A_EDGES = np.array([0, 1e-3, 0.1, 0.5, 1, 1.5, 2, 3.7, 10, 30, 100, 1000, INF, -1, NAN])
X_EDGES = np.array([0, 1e-5, 0.1, 0.5, 1, 2, 3, 5, 9.5, 20, 50, 120, 1100, INF, -1, NAN])


def _grid(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    u, v = np.meshgrid(a, b)
    return u.ravel(), v.ravel()


@pytest.mark.parametrize("name", ["gammainc", "gammaincc"])
def test_incomplete_gamma_against_torch(name: str) -> None:
    a, x = _grid(A_EDGES, X_EDGES)
    got = getattr(lg.special, name)(lg.tensor(a), lg.tensor(x)).numpy()
    want = getattr(torch.special, name)(torch.tensor(a), torch.tensor(x)).numpy()
    # (PyTorch's own values are off by up to ~1e-9 for large a near x: see the mpmath test)
    _same(got, want, rtol=2e-9, atol=1e-300)


def test_incomplete_gamma_against_mpmath() -> None:
    mpmath = pytest.importorskip("mpmath")
    mpmath.mp.dps = 30
    for a, x in [(30.0, 31.0), (100.0, 120.0), (0.5, 1e-3), (2.5, 40.0), (1000.0, 1100.0), (5.0, 0.3)]:
        p = float(mpmath.gammainc(a, 0, x, regularized=True))
        q = float(mpmath.gammainc(a, x, mpmath.inf, regularized=True))
        np.testing.assert_allclose(lg.special.gammainc(lg.tensor([a], dtype=lg.float64), lg.tensor([x], dtype=lg.float64)).item(), p, rtol=1e-12)
        np.testing.assert_allclose(lg.special.gammaincc(lg.tensor([a], dtype=lg.float64), lg.tensor([x], dtype=lg.float64)).item(), q, rtol=1e-12)


def test_zeta_against_torch() -> None:
    s, q = _grid(np.array([-2, 0, 0.5, 1, 1.0001, 1.5, 2, 3, 4.5, 10, 30, 80, 200, NAN]),
                 np.array([-3, -2.5, -1, 0, 1e-3, 0.5, 1, 2, 7.5, 50, 1e4, INF, NAN]))
    got = lg.special.zeta(lg.tensor(s), lg.tensor(q)).numpy()
    want = torch.special.zeta(torch.tensor(s), torch.tensor(q)).numpy()
    _same(got, want, rtol=1e-10, atol=1e-300)
    assert lg.special.zeta(lg.tensor([2.0], dtype=lg.float64), 1.0).item() == pytest.approx(np.pi ** 2 / 6, rel=1e-14)


@pytest.mark.parametrize("name", BINARY)
def test_binary_gradients(name: str) -> None:
    rng = np.random.default_rng(3)
    a, b = rng.uniform(0.3, 4, 8), rng.uniform(0.3, 4, 8)
    if name == "zeta":
        a = a + 1.5
    first_differentiable = name in ("xlog1py", "xlogy")
    grads = []
    for T in (lg, torch):
        x, y = T.tensor(a, requires_grad=first_differentiable), T.tensor(b, requires_grad=True)
        getattr(T.special, name)(x, y).sum().backward()
        grads.append([t.grad.numpy() for t in ((x, y) if first_differentiable else (y,))])
    for g, h in zip(*grads):
        np.testing.assert_allclose(g, h, rtol=1e-10)


@pytest.mark.parametrize("name,op", [("gammainc", "igamma"), ("gammaincc", "igammac"), ("zeta", "zeta")])
def test_first_argument_derivative_not_implemented(name: str, op: str) -> None:
    msg = f"the derivative for '{op}: input' is not implemented." if op != "zeta" else \
        "the derivative for 'zeta' is not implemented."
    for T in (torch, lg):
        a = T.tensor([2.5], requires_grad=True)
        with pytest.raises(NotImplementedError) as e:
            getattr(T.special, name)(a, T.tensor([1.5])).sum().backward()
        assert str(e.value) == msg


def test_xlog1py_edges() -> None:
    x = np.array([0.0, 0.0, 1.0, 2.0, 0.0])
    y = np.array([-1.0, NAN, -2.0, 1e-20, INF])
    _same(lg.special.xlog1py(lg.tensor(x), lg.tensor(y)).numpy(),
          torch.special.xlog1py(torch.tensor(x), torch.tensor(y)).numpy(), 1e-14, 0)
    assert lg.special.xlog1py(2.0, lg.tensor([1.0])).item() == pytest.approx(2 * np.log(2))


POLYNOMIALS = ["chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
               "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u",
               "shifted_chebyshev_polynomial_v", "shifted_chebyshev_polynomial_w", "hermite_polynomial_h",
               "hermite_polynomial_he", "laguerre_polynomial_l", "legendre_polynomial_p"]


@pytest.mark.parametrize("name", POLYNOMIALS)
def test_polynomials_match_torch(name: str) -> None:
    # (no NaN x: PyTorch's result there is whatever its kernel leaves, 0 or an uninitialized value)
    x, n = _grid(np.array([-3, -1.5, -1, -0.7, 0, 0.2, 0.5, 1, 1.3, 4]), np.array([-1, 0, 1, 2, 3, 5, 7, 10, 25]))
    got = getattr(lg.special, name)(lg.tensor(x), lg.tensor(n)).numpy()
    want = getattr(torch.special, name)(torch.tensor(x), torch.tensor(n, dtype=torch.float64)).numpy()
    # (PyTorch evaluates high degrees inside [-1, 1] as cos(n acos x): equal up to rounding)
    _same(got, want, rtol=1e-10, atol=1e-12)
    lo = getattr(lg.special, name)(lg.tensor([0.3], requires_grad=True), 3)
    to = getattr(torch.special, name)(torch.tensor([0.3], requires_grad=True), 3)
    assert lo.dtype == lg.float32 and not lo.requires_grad and not to.requires_grad
    np.testing.assert_allclose(lo.numpy(), to.numpy(), rtol=1e-6)


def test_polynomial_of_integers_is_float() -> None:
    lo = lg.special.hermite_polynomial_h(lg.tensor([3]), 2)
    to = torch.special.hermite_polynomial_h(torch.tensor([3]), 2)
    assert lo.dtype.name == str(to.dtype).replace("torch.", "") and lo.tolist() == to.tolist()


def test_no_gradient_where_torch_defines_none() -> None:
    for name in ("spherical_bessel_j0", "modified_bessel_i0", "modified_bessel_i1", "bessel_j0", "bessel_y1",
                 *K_FUNCTIONS):
        assert not getattr(lg.special, name)(lg.tensor([0.5], requires_grad=True)).requires_grad
        assert not getattr(torch.special, name)(torch.tensor([0.5], requires_grad=True)).requires_grad


def test_multigammaln_and_reductions() -> None:
    a = np.random.default_rng(5).uniform(1.5, 5, 6)
    x, y = lg.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    lo, to = lg.special.multigammaln(x, 3), torch.special.multigammaln(y, 3)
    np.testing.assert_allclose(lo.detach().numpy(), to.detach().numpy(), rtol=1e-12)
    lo.sum().backward()
    to.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), y.grad.numpy(), rtol=1e-12)
    m = np.random.default_rng(6).normal(size=(3, 4))
    for name, args in [("softmax", (1,)), ("log_softmax", (0,)), ("logsumexp", (1,)), ("polygamma", ())]:
        if name == "polygamma":
            got = lg.special.polygamma(2, lg.tensor(m).abs() + 0.5).numpy()
            want = torch.special.polygamma(2, torch.tensor(m).abs() + 0.5).numpy()
        else:
            got = getattr(lg.special, name)(lg.tensor(m), *args).numpy()
            want = getattr(torch.special, name)(torch.tensor(m), *args).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-12)


def test_every_torch_special_function_is_here() -> None:
    names = {n for n in dir(torch.special) if not n.startswith("_") and callable(getattr(torch.special, n))
             and n not in ("Tensor",)}
    assert names - set(lg.special.__all__) == set()


def test_airy_ai_matches_torch() -> None:
    xs = np.concatenate([np.linspace(-40, 40, 1601), [-1000.0, -7.0001, -6.9999, 1.4999, 1.5001, 103.0, 200.0,
                                                      0.0, -0.0, INF, -INF, NAN]])
    got = lg.special.airy_ai(lg.tensor(xs)).numpy()
    want = torch.special.airy_ai(torch.tensor(xs)).numpy()
    # torch's own values err by up to ~2.3e-6 near x = -3 (its series there), so against torch
    # absolutely at that level, and against mpmath (exact to the last bit) tightly
    _same(got, want, rtol=1e-9, atol=3e-6)
    mpmath = pytest.importorskip("mpmath")
    finite = np.isfinite(xs)
    exact = np.array([float(mpmath.airyai(x)) for x in xs[finite]])
    _same(got[finite], exact, rtol=1e-11, atol=1e-12)
    f32 = lg.special.airy_ai(lg.tensor(xs[:1601], dtype=lg.float32))
    assert f32.dtype == lg.float32 and not f32.requires_grad
    # (torch computes float32 in float32: its phase at x = -40 errs by ~1e-5; ours rounds the float64 value)
    _same(f32.numpy(), torch.special.airy_ai(torch.tensor(xs[:1601], dtype=torch.float32)).numpy(), 1e-5, 5e-5)
    assert not lg.special.airy_ai(lg.tensor([1.0], requires_grad=True)).requires_grad  # (PyTorch defines no gradient)


BESSEL_JY = ["bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1"]


@pytest.mark.parametrize("name", BESSEL_JY)
def test_bessel_j_y_against_torch(name: str) -> None:
    """PyTorch's own J and Y are off by up to ~6e-7 absolute in float64 (Y1(5.25), see the mpmath test):
    within that, and the same NaN, inf and signs at the edges."""
    got = getattr(lg.special, name)(lg.tensor(GRID)).numpy()
    want = getattr(torch.special, name)(torch.tensor(GRID)).numpy()
    _same(got, want, rtol=1e-6, atol=1e-6)
    g32 = getattr(lg.special, name)(lg.tensor(GRID.astype(np.float32)))
    assert g32.dtype == lg.float32


@pytest.mark.parametrize("name", BESSEL_JY + K_FUNCTIONS)
def test_bessel_functions_against_mpmath(name: str) -> None:
    mpmath = pytest.importorskip("mpmath")
    mpmath.mp.dps = 25
    order = int(name[-1])
    exact = {"j": lambda v: mpmath.besselj(order, v), "y": lambda v: mpmath.bessely(order, v),
             "k": lambda v: mpmath.besselk(order, v)}[name[-2]]
    scaled = name.startswith("scaled")
    xs = np.concatenate([np.linspace(0.05, 40, 81), [1e-300, 1e-5, 24.99, 25.01, 1e5, 1e10]])
    if name[-2] == "j":
        xs = np.concatenate([xs, -xs[:40]])
    want = np.array([float(exact(v) * (mpmath.exp(v) if scaled else 1)) for v in xs])
    got = getattr(lg.special, name)(lg.tensor(xs)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)
