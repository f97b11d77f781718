"""Special functions NumPy has no ufunc for: erfc, erfinv, lgamma, digamma, trigamma and polygamma,
computed in float64 to ~1e-15 (erf, a fused kernel, is in kernels)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .shapes import Array

_erf64 = np.frompyfunc(math.erf, 1, 1)  # exact per element: float64 erf (kernels.erf) and erfinv's Newton steps
_erfc1 = np.frompyfunc(math.erfc, 1, 1)


def _in_f64(f: Any, x: Array) -> Array:
    """``f`` computed in float64 and returned in x's (float) dtype."""
    r = np.asarray(f(np.asarray(x, np.float64)), np.float64)
    if x.dtype == np.float64:
        return r
    with np.errstate(over="ignore"):  # (past the dtype's range: inf, silently, as PyTorch's)
        return r.astype(x.dtype)


def erfc(x: Array) -> Array:
    """Complementary error function 1 - erf(x), without erf's cancellation for large x."""
    return _in_f64(_erfc1, x)


def _lgamma_scalar(v: float) -> float:
    try:
        return math.lgamma(v)
    except ValueError:  # a pole (0, -1, -2, ...): PyTorch gives +inf
        return math.inf


_lgamma1 = np.frompyfunc(_lgamma_scalar, 1, 1)


def lgamma(x: Array) -> Array:
    """log|Gamma(x)| (math.lgamma per element)."""
    return _in_f64(_lgamma1, x)


# Giles' single-precision erfinv ("Approximating the erfinv function", GPU Computing Gems, 2011):
# relative error ~1e-7, polished to float64 by two Newton steps on erf (or on erfc near +-1).
_GILES_LO = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
             -0.00125372503, -0.00417768164, 0.246640727, 1.50140941)
_GILES_HI = (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
             -0.0076224613, 0.00943887047, 1.00167406, 2.83297682)


def _poly(c: tuple[float, ...], w: np.ndarray) -> np.ndarray:
    p = np.full_like(w, c[0])
    for ci in c[1:]:
        p = p * w + ci
    return p


def _erfinv64(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        w = -np.log((1.0 - x) * (1.0 + x))
        lo = w < 5.0
        y = np.where(lo, _poly(_GILES_LO, w - 2.5), _poly(_GILES_HI, np.sqrt(np.where(lo, 5.0, w)) - 3.0)) * x
        ok = np.isfinite(y)
        ax, ay = np.abs(x[ok]), np.abs(y[ok])
        far = ax > 0.5  # near +-1: Newton on erfc(y) = 1 - |x|, where 1 - |x| is exact
        q = 1.0 - ax
        for _ in range(4):  # (the guess is rough for |x| > 1 - 1e-7, beyond Giles' float32 range)
            d = 2 / math.sqrt(math.pi) * np.exp(-ay * ay)
            ec = np.asarray(_erfc1(ay), np.float64)
            # near +-1, Newton on log erfc(y) = log(1 - |x|): nearly linear there, so it converges
            # from a rough guess; elsewhere on erf(y) = |x|
            step = np.where(far, (np.log(np.where(far, ec, 1.0)) - np.log(np.where(far, q, 1.0))) * ec / d,
                            (ax - np.asarray(_erf64(ay), np.float64)) / d)
            ay = ay + step
        y[ok] = np.copysign(ay, x[ok])
        y[np.abs(x) == 1.0] = np.copysign(np.inf, x[np.abs(x) == 1.0])
        y[(np.abs(x) > 1.0) | np.isnan(x)] = np.nan
    return y


def erfinv(x: Array) -> Array:
    """Inverse error function on [-1, 1] (+-inf at +-1, NaN outside)."""
    return _in_f64(_erfinv64, x)


# digamma and trigamma: shift x up to >= 10 by the recurrences psi(x) = psi(x + 1) - 1/x and
# psi1(x) = psi1(x + 1) + 1/x^2, then the asymptotic series (Abramowitz-Stegun 6.3.18, 6.4.12);
# x < 0.5 by the reflection formulas. The series' next term at x = 10 is below 1e-16 relative.
_PSI_B = (1 / 12, -1 / 120, 1 / 252, -1 / 240, 1 / 132, -691 / 32760, 1 / 12)  # B_2k / (2k)
_PSI1_B = (1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6)  # B_2k


def _psi_pos(x: np.ndarray, order: int) -> np.ndarray:
    """digamma (order 0) or trigamma (order 1) for x >= 0.5."""
    acc = np.zeros_like(x)
    while True:
        small = x < 10.0
        if not small.any():
            break
        acc = acc - np.where(small, 1.0 / x, 0.0) if order == 0 else acc + np.where(small, 1.0 / (x * x), 0.0)
        x = np.where(small, x + 1.0, x)
    inv2 = 1.0 / (x * x)
    if order == 0:
        s = _poly(_PSI_B[::-1], inv2) * inv2
        return acc + np.log(x) - 0.5 / x - s
    s = _poly(_PSI1_B[::-1], inv2) * inv2 / x
    return acc + 1.0 / x + 0.5 * inv2 + s


def _polygamma64(x: np.ndarray, order: int) -> np.ndarray:
    x = np.asarray(x, np.float64)
    out = np.empty_like(x)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        fin = np.isfinite(x)
        pos = fin & (x >= 0.5)
        neg = fin & (x < 0.5)
        out[pos] = _psi_pos(x[pos], order)
        xn = x[neg]
        r = _psi_pos(1.0 - xn, order)
        sp = np.sin(np.pi * (xn - np.round(xn)))  # (reduced first: exact, and sin^2, tan have period pi)
        if order == 0:  # psi(x) = psi(1 - x) - pi / tan(pi x)
            val = r - np.pi / np.tan(np.pi * (xn - np.round(xn)))
            pole = (xn == np.floor(xn)) & (xn != 0)
            val[pole] = np.nan  # a negative integer: PyTorch gives NaN
            zero = xn == 0
            val[zero] = np.where(np.signbit(xn[zero]), np.inf, -np.inf)
        else:  # psi1(x) = pi^2 / sin^2(pi x) - psi1(1 - x)
            val = np.pi * np.pi / (sp * sp) - r
            val[xn == np.floor(xn)] = np.inf
        out[neg] = val
        out[x == np.inf] = np.inf if order == 0 else 0.0
        out[(x == -np.inf) | np.isnan(x)] = np.nan
    return out


def digamma(x: Array) -> Array:
    """The digamma function psi(x) = d/dx log Gamma(x)."""
    return _in_f64(lambda v: _polygamma64(v, 0), x)


def trigamma(x: Array) -> Array:
    """The trigamma function psi'(x) (polygamma of order 1)."""
    return _in_f64(lambda v: _polygamma64(v, 1), x)


# polygamma of order n >= 2: (-1)^(n+1) n! zeta(n + 1, x), with the Hurwitz zeta function summed
# directly until x + k >= 10 + n, then the Euler-Maclaurin tail (DLMF 25.11.6) with 12 Bernoulli
# terms, whose last is below 1e-17 relative there; the sum runs through negative x as well, and x
# at a pole (0, -1, -2, ...) gives the sign of the limit from the right times inf, as PyTorch's
_B2K = (1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6, -3617 / 510, 43867 / 798,
        -174611 / 330, 854513 / 138, -236364091 / 2730)


def _hurwitz_zeta(s: int, q: np.ndarray) -> np.ndarray:
    """zeta(s, q) = sum over k >= 0 of (q + k)^-s, for an integer s >= 2."""
    q = np.asarray(q, np.float64)
    acc = np.zeros_like(q)
    lo = 10.0 + s
    while True:
        small = q < lo
        if not small.any():
            break
        acc = acc + np.where(small, q ** -float(s), 0.0)
        q = np.where(small, q + 1.0, q)
    tail = q ** (1.0 - s) / (s - 1) + 0.5 * q ** -float(s)
    rising = float(s)  # s (s + 1) ... (s + 2j - 2), over (2j)!
    term = q ** -float(s + 1)
    fact = 2.0
    inv2 = 1.0 / (q * q)
    for j, b in enumerate(_B2K, 1):
        tail = tail + b / fact * rising * term
        rising *= (s + 2 * j - 1) * (s + 2 * j)
        fact *= (2 * j + 1) * (2 * j + 2)
        term = term * inv2
    return acc + tail


def _polygamma_n64(x: np.ndarray, n: int) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        x = np.asarray(x, np.float64)
        fin = np.isfinite(x)
        out = np.full_like(x, np.nan)
        pole = fin & (x <= 0) & (x == np.floor(x))
        ok = fin & ~pole
        out[ok] = (-1.0) ** (n + 1) * math.factorial(n) * _hurwitz_zeta(n + 1, x[ok])
        out[pole] = (-1.0) ** (n + 1) * np.inf  # (and NaN at +-inf, as PyTorch's)
    return out


def polygamma(n: int, x: Array) -> Array:
    """The n-th derivative of digamma (n = 0 is digamma itself)."""
    if n == 0:
        return digamma(x)
    if n == 1:
        return trigamma(x)
    return _in_f64(lambda v: _polygamma_n64(v, n), x)


# ---- torch.special's kernels: erfcx, the normal distribution, Bessel functions of imaginary
# argument, incomplete gamma, Hurwitz zeta, orthogonal polynomials. All in float64, from series,
# asymptotic expansions, continued fractions and recurrences (no SciPy).

def _erfcx64(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        big = x >= 26.0  # exp(x^2) erfc(x) by the asymptotic series there (erfc underflows past 26.5)
        xs = np.where(big, 0.0, x)
        out = np.exp(xs * xs) * np.asarray(_erfc1(xs), np.float64)
        xb = np.where(big, x, 30.0)
        inv = 1.0 / (2.0 * xb * xb)
        term = np.ones_like(xb)
        s = np.ones_like(xb)
        for k in range(1, 14):  # (2k - 1)!! / (-2 x^2)^k: each under 0.02 of the last at x >= 26
            term = -term * (2 * k - 1) * inv
            s = s + term
        asym = s / (xb * math.sqrt(math.pi))
        return np.where(big, asym, out)


def erfcx(x: Array) -> Array:
    """The scaled complementary error function exp(x^2) erfc(x)."""
    return _in_f64(_erfcx64, x)


_SQRT1_2 = math.sqrt(0.5)
_LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)


def _log_ndtr64(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, np.float64)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        low = x < -1.0  # log(erfcx(-x / sqrt 2) / 2) - x^2 / 2: no underflow however negative x is
        xl = np.where(low, x, -2.0)
        lo = np.log(_erfcx64(-xl * _SQRT1_2) / 2) - xl * xl / 2
        xm = np.where(low, 0.0, x)
        # ndtr itself up to 0, log1p(-ndtr(-x)) above (the tail that ndtr rounds away there)
        mid = np.where(xm <= 0, np.log(0.5 * np.asarray(_erfc1(-xm * _SQRT1_2), np.float64)),
                       np.log1p(-0.5 * np.asarray(_erfc1(xm * _SQRT1_2), np.float64)))
        return np.where(low, lo, mid)


def log_ndtr(x: Array) -> Array:
    """log of the standard normal distribution function, accurate in both tails."""
    return _in_f64(_log_ndtr64, x)


def _ndtri64(p: np.ndarray) -> np.ndarray:
    p = np.asarray(p, np.float64)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        q = np.minimum(p, 1.0 - p)  # the lower tail (1 - p is exact for p >= 1/2); the sign at the end
        ok = (q > 0) & (q <= 0.5)
        qo = np.where(ok, q, 0.25)
        # first guess: Abramowitz-Stegun 26.2.23 (error < 4.5e-4), then Newton on log ndtr(y) = log q
        t = np.sqrt(-2.0 * np.log(qo))
        y = -(t - (2.515517 + 0.802853 * t + 0.010328 * t * t)
              / (1.0 + 1.432788 * t + 0.189269 * t * t + 0.001308 * t * t * t))
        logq = np.log(qo)
        for _ in range(5):
            ly = _log_ndtr64(y)
            y = y - (ly - logq) * np.exp(ly + y * y / 2 + _LOG_SQRT_2PI)
        y = np.where(q == 0.5, 0.0, y)
        y = np.where(p > 0.5, -y, y)
        y = np.where(ok, y, np.nan)
        y = np.where(p == 0, -np.inf, np.where(p == 1, np.inf, y))
    return y


def ndtri(x: Array) -> Array:
    """The inverse of the standard normal distribution function (-inf at 0, inf at 1, NaN outside)."""
    return _in_f64(_ndtri64, x)


def _bessel_i64(x: np.ndarray, order: int, scaled: bool) -> np.ndarray:
    """I_0 or I_1 (times exp(-|x|) when scaled): the power series up to |x| = 30, the asymptotic
    expansion beyond it (its terms fall below 1e-17 before they start to grow)."""
    x = np.asarray(x, np.float64)
    a = np.abs(x)
    with np.errstate(over="ignore", invalid="ignore"):
        small = a <= 30.0
        xs = np.where(small, a, 0.0)
        h = xs * xs / 4.0
        term = np.ones_like(xs) if order == 0 else xs / 2.0
        s = term.copy()
        for k in range(1, 80):  # (x^2 / 4)^k / (k! (k + order)!): below 1e-17 of the sum by k = 60 at x = 30
            term = term * h / (k * (k + order))
            s = s + term
        ser = s * np.exp(-xs) if scaled else s
        xb = np.where(small, 40.0, a)
        mu = 4.0 * order * order
        term = np.ones_like(xb)
        t = np.ones_like(xb)
        for k in range(1, 40):  # prod (mu - (2j - 1)^2) / (k! (-8 x)^k)
            term = term * (mu - (2 * k - 1) ** 2) / (k * -8.0 * xb)
            t = t + term
        asym = t / np.sqrt(2 * np.pi * xb)
        if not scaled:
            asym = asym * np.exp(xb)
        out = np.where(small, ser, asym)
        out = np.where(np.isinf(a), 0.0 if scaled else np.nan, out)  # (PyTorch: NaN for I(inf))
    return np.copysign(out, x) if order == 1 else out


def i0(x: Array) -> Array:
    """The modified Bessel function of the first kind of order 0."""
    return _in_f64(lambda v: _bessel_i64(v, 0, False), x)


def i0e(x: Array) -> Array:
    """i0(x) exp(-|x|), finite for any x."""
    return _in_f64(lambda v: _bessel_i64(v, 0, True), x)


def i1(x: Array) -> Array:
    """The modified Bessel function of the first kind of order 1."""
    return _in_f64(lambda v: _bessel_i64(v, 1, False), x)


def i1e(x: Array) -> Array:
    """i1(x) exp(-|x|), finite for any x."""
    return _in_f64(lambda v: _bessel_i64(v, 1, True), x)


def _igam64(a: np.ndarray, x: np.ndarray, upper: bool) -> np.ndarray:
    """The regularized incomplete gamma function P(a, x) (Q = 1 - P when ``upper``): its series
    below x = a + 1, the continued fraction of Q above (Lentz's method)."""
    a, x = np.broadcast_arrays(np.asarray(a, np.float64), np.asarray(x, np.float64))
    out = np.full(a.shape, np.nan)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore", under="ignore"):
        ok = (a > 0) & (x > 0) & np.isfinite(a) & np.isfinite(x)
        av, xv = a[ok], x[ok]
        logpre = av * np.log(xv) - xv - np.asarray(_lgamma1(av), np.float64)
        ser = xv < av + 1.0
        # series: P = x^a e^-x / Gamma(a + 1) * sum x^n / ((a + 1) ... (a + n))
        sa, sx = np.where(ser, av, 1.0), np.where(ser, xv, 0.5)
        term = np.ones_like(sa)
        s = term.copy()
        d = sa.copy()
        for _ in range(5000):
            d = d + 1.0
            term = term * sx / d
            s = s + term
            if np.all(np.abs(term) <= np.abs(s) * 1e-17):
                break
        p_ser = np.exp(logpre) * s / sa
        # continued fraction: Q = x^a e^-x / Gamma(a) / (x + 1 - a - 1 (1 - a) / (x + 3 - a - ...))
        ca, cx = np.where(ser, 1.0, av), np.where(ser, 2.0, xv)
        tiny = 1e-300
        b = cx + 1.0 - ca
        c = np.full_like(b, 1.0 / tiny)
        dd = 1.0 / b
        h = dd.copy()
        for i in range(1, 5000):
            an = -i * (i - ca)
            b = b + 2.0
            dd = an * dd + b
            dd = np.where(np.abs(dd) < tiny, tiny, dd)
            c = b + an / c
            c = np.where(np.abs(c) < tiny, tiny, c)
            dd = 1.0 / dd
            delta = dd * c
            h = h * delta
            if np.all(np.abs(delta - 1.0) <= 1e-16):
                break
        q_cf = np.exp(logpre) * h
        pv = np.where(ser, p_ser, 1.0 - q_cf)
        qv = np.where(ser, 1.0 - p_ser, q_cf)
        out[ok] = qv if upper else pv
        # the edges, as PyTorch's: x = 0 gives P = 0; a = 0 (x > 0) gives P = 1; x = inf gives P = 1
        lo, hi = (1.0, 0.0) if upper else (0.0, 1.0)
        out[(x == 0) & (a > 0)] = lo
        out[(a == 0) & (x > 0)] = hi
        out[(x == np.inf) & (a > 0) & np.isfinite(a)] = hi
        out[(a == np.inf) & (x >= 0) & np.isfinite(x)] = lo
        out[(a < 0) | (x < 0) | np.isnan(a) | np.isnan(x)] = np.nan
        # (PyTorch looks at x = 0 and x = inf before a's NaN, and at a = inf before x's)
        out[(x == 0) & np.isnan(a)] = lo
        out[(x == np.inf) & np.isnan(a)] = hi
        out[(a == np.inf) & np.isnan(x)] = lo
    return out


def gammainc(a: Array, x: Array) -> Array:
    """The regularized lower incomplete gamma function P(a, x)."""
    return _cast_like(_igam64(a, x, False), a, x)


def gammaincc(a: Array, x: Array) -> Array:
    """The regularized upper incomplete gamma function Q(a, x) = 1 - P(a, x)."""
    return _cast_like(_igam64(a, x, True), a, x)


def _cast_like(r: np.ndarray, *xs: Array) -> Array:
    """A float64 result in the dtype of the (float) arrays it was computed from."""
    dt = np.result_type(*[v.dtype for v in xs if isinstance(v, np.ndarray)] or [np.float64])
    if dt == np.float64:
        return r
    with np.errstate(over="ignore"):
        return r.astype(dt)


def _zeta64(x: np.ndarray, q: np.ndarray) -> np.ndarray:
    """The Hurwitz zeta function sum over k >= 0 of (q + k)^-x: the sum directly until q + k passes
    N (larger for larger x, so that the Euler-Maclaurin tail converges), then the tail (DLMF 25.11.6)."""
    x, q = np.broadcast_arrays(np.asarray(x, np.float64), np.asarray(q, np.float64))
    out = np.full(x.shape, np.nan)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore", under="ignore"):
        pole = (q <= 0) & (q == np.floor(q))
        ok = (x > 1) & ~pole & ((q > 0) | (x == np.floor(x))) & np.isfinite(q)
        xv, qv = x[ok], q[ok]
        n_min = np.minimum(np.maximum(10.0, (xv + 26.0) / np.pi), 60.0)
        acc = np.zeros_like(xv)
        while True:
            low = qv < n_min
            if not low.any():
                break
            acc = acc + np.where(low, np.power(np.where(low, qv, 1.0), -xv), 0.0)
            qv = np.where(low, qv + 1.0, qv)
        tail = np.power(qv, 1.0 - xv) / (xv - 1.0) + 0.5 * np.power(qv, -xv)
        rising = xv.copy()
        term = np.power(qv, -xv - 1.0)
        fact = 2.0
        inv2 = 1.0 / (qv * qv)
        for j, b in enumerate(_B2K, 1):
            tail = tail + b / fact * rising * term
            rising = rising * (xv + 2 * j - 1) * (xv + 2 * j)
            fact *= (2 * j + 1) * (2 * j + 2)
            term = term * inv2
        out[ok] = acc + tail
        out[(x == 1) | (pole & ~(x < 1))] = np.inf  # (x < 1 is NaN first, then a pole of q even for x NaN)
    return out


def zeta(x: Array, q: Array) -> Array:
    """The Hurwitz zeta function zeta(x, q) (the Riemann zeta function at q = 1)."""
    return _cast_like(_zeta64(x, q), x, q)


def _polynomial64(kind: str, x: np.ndarray, n: np.ndarray) -> np.ndarray:
    """An orthogonal polynomial of degree n at x by its three-term recurrence (0 for n < 0)."""
    x, n = np.broadcast_arrays(np.asarray(x, np.float64), np.asarray(n, np.float64))
    with np.errstate(over="ignore", invalid="ignore"):
        deg = np.where(np.isfinite(n), n, -1.0).astype(np.int64)
        if kind.startswith("shifted_"):
            kind, x = kind[len("shifted_"):], 2.0 * x - 1.0
        one = np.ones_like(x)
        first = {"t": x, "u": 2 * x, "v": 2 * x - 1, "w": 2 * x + 1, "h": 2 * x, "he": x, "l": 1 - x, "p": x}[kind]
        prev, cur = one, first
        out = np.where(deg == 0, one, np.where(deg == 1, first, 0.0))
        top = int(deg.max(initial=0))
        for k in range(1, top):  # cur is degree k; nxt degree k + 1
            if kind in "tuvw":
                nxt = 2 * x * cur - prev
            elif kind == "h":
                nxt = 2 * x * cur - 2 * k * prev
            elif kind == "he":
                nxt = x * cur - k * prev
            elif kind == "l":
                nxt = ((2 * k + 1 - x) * cur - k * prev) / (k + 1)
            else:
                nxt = ((2 * k + 1) * x * cur - k * prev) / (k + 1)
            prev, cur = cur, nxt
            out = np.where(deg == k + 1, cur, out)
    return out


def polynomial(kind: str, x: Array, n: Array) -> Array:
    """The polynomial ``kind`` (t, u, v, w: Chebyshev; h, he: Hermite; l: Laguerre; p: Legendre; a
    ``shifted_`` prefix for the shifted Chebyshev ones) of degree n at x, in the dtype of x and n."""
    return _cast_like(_polynomial64(kind, x, n), x, n)


def spherical_bessel_j0(x: Array) -> Array:
    """sin(x) / x (1 at 0)."""
    def f(v: np.ndarray) -> np.ndarray:
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(v == 0, 1.0, np.where(np.isinf(v), 0.0, np.sin(v) / v))
    return _in_f64(f, x)


# Bessel functions of the first and second kind, J and Y of orders 0 and 1: up to x = 25, Miller's
# backward recurrence J_{k-1} = (2k / x) J_k - J_{k+1} from k = 120, normalized by
# J_0 + 2 (J_2 + J_4 + ...) = 1, with Y from Neumann's series over the same J_k (A&S 9.1.88 and its
# derivative); below x = 1e-4 their leading terms; above 25 Hankel's asymptotic expansion, whose terms
# fall below 1e-20 there. Accurate to ~1e-16 absolute (relative, away from the zeros).
_EULER_GAMMA = 0.5772156649015329
_MILLER_TOP = 120


def _hankel(x: np.ndarray, order: int) -> tuple[np.ndarray, np.ndarray]:
    """J and Y of ``order`` for large x by the asymptotic expansion P cos - Q sin, P sin + Q cos."""
    mu = 4.0 * order * order
    p, q = np.ones_like(x), np.zeros_like(x)
    term = np.ones_like(x)
    for k in range(1, 31):
        term = term * (mu - (2 * k - 1) ** 2) / (k * 8.0 * x)
        if k % 2:
            q = q + (term if k % 4 == 1 else -term)
        else:
            p = p + (term if k % 4 == 0 else -term)
    c, s = np.cos(x), np.sin(x)
    r2 = math.sqrt(0.5)
    # chi = x - pi / 4 (order 0) or x - 3 pi / 4 (order 1), reduced through NumPy's exact sin and cos of x
    cos_chi, sin_chi = ((c + s) * r2, (s - c) * r2) if order == 0 else ((s - c) * r2, -(s + c) * r2)
    amp = np.sqrt(2.0 / (np.pi * x))
    return amp * (p * cos_chi - q * sin_chi), amp * (p * sin_chi + q * cos_chi)


def _miller(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """J0, J1, Y0, Y1 for 0 < x <= 25 (the recurrence's terms rescaled before they overflow)."""
    jp1, jk = np.zeros_like(x), np.full_like(x, 1e-30)
    norm, sy0, sy1, j1 = np.zeros_like(x), np.zeros_like(x), np.zeros_like(x), np.zeros_like(x)
    for k in range(_MILLER_TOP, 0, -1):
        jm1 = (2.0 * k / x) * jk - jp1
        i = k - 1
        if i == 0:
            norm = norm + jm1
        elif i % 2 == 0:
            m = i // 2
            norm = norm + 2.0 * jm1
            sy0 = sy0 + (-1.0) ** m * jm1 / m
        else:
            m, m_low = (i + 1) // 2, (i - 1) // 2  # J_i is J_{2m - 1} and J_{2 m_low + 1}
            coef = (-1.0) ** m / m - ((-1.0) ** m_low / m_low if m_low >= 1 else 0.0)
            sy1 = sy1 + coef * jm1
            if i == 1:
                j1 = jm1
        big = np.abs(jm1) > 1e250
        if big.any():
            sc = np.where(big, 1e-250, 1.0)
            jm1, jk, norm, sy0, sy1, j1 = jm1 * sc, jk * sc, norm * sc, sy0 * sc, sy1 * sc, j1 * sc
        jp1, jk = jk, jm1
    j0, j1 = jk / norm, j1 / norm
    lg = np.log(x / 2.0) + _EULER_GAMMA
    y0 = (2.0 / np.pi) * lg * j0 - (4.0 / np.pi) * sy0 / norm
    y1 = -(2.0 / np.pi) * (j0 / x - lg * j1) + (2.0 / np.pi) * sy1 / norm
    return j0, j1, y0, y1


def _bessel_jy64(x: np.ndarray, which: str) -> np.ndarray:
    x = np.asarray(x, np.float64)
    a = np.abs(x)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore", under="ignore"):
        tiny = a < 1e-4
        mid = ~tiny & (a <= 25.0)
        far = np.isfinite(a) & (a > 25.0)
        out = np.full(x.shape, np.nan)
        if mid.any():
            j0, j1, y0, y1 = _miller(a[mid])
            out[mid] = {"j0": j0, "j1": j1, "y0": y0, "y1": y1}[which]
        if far.any():
            jv, yv = _hankel(a[far], int(which[1]))
            out[far] = jv if which[0] == "j" else yv
        t = a[tiny]
        lg = np.log(t / 2.0) + _EULER_GAMMA
        out[tiny] = {"j0": 1.0 - t * t / 4.0, "j1": t / 2.0 - t * t * t / 16.0,
                     "y0": (2.0 / np.pi) * (lg * (1.0 - t * t / 4.0) + t * t / 4.0),
                     "y1": -2.0 / (np.pi * t) + t / np.pi * (lg - 0.5)}[which]
        if which == "j1":
            out = np.where(x < 0, -out, out)  # (odd: J1(-x) = -J1(x))
        elif which[0] == "y":
            out[x < 0] = np.nan
            out[x == 0] = -np.inf
        out[np.isinf(x)] = np.nan  # (as PyTorch's)
    return out


def bessel_j0(x: Array) -> Array:
    """The Bessel function of the first kind of order 0."""
    return _in_f64(lambda v: _bessel_jy64(v, "j0"), x)


def bessel_j1(x: Array) -> Array:
    """The Bessel function of the first kind of order 1."""
    return _in_f64(lambda v: _bessel_jy64(v, "j1"), x)


def bessel_y0(x: Array) -> Array:
    """The Bessel function of the second kind of order 0 (NaN for x < 0, -inf at 0)."""
    return _in_f64(lambda v: _bessel_jy64(v, "y0"), x)


def bessel_y1(x: Array) -> Array:
    """The Bessel function of the second kind of order 1 (NaN for x < 0, -inf at 0)."""
    return _in_f64(lambda v: _bessel_jy64(v, "y1"), x)


# K0 and K1 (modified, of the second kind): up to x = 2 their series in log(x / 2) and I (A&S 9.6.13,
# 9.6.11); above, e^x K_nu(x) as the integral of exp(-x (cosh t - 1)) cosh(nu t) over t >= 0 by the
# trapezoidal rule, which is spectrally accurate for this even, analytic integrand (256 nodes out to
# where it falls below e^-745, and a step under a quarter of its width 1 / sqrt(x)).
def _bessel_k_scaled64(x: np.ndarray, order: int) -> np.ndarray:
    x = np.asarray(x, np.float64)
    out = np.full(x.shape, np.nan)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore", under="ignore"):
        small = (x > 0) & (x <= 2.0)
        t = x[small]
        h = t * t / 4.0
        lg = np.log(t / 2.0)
        if order == 0:
            term, s, harm = np.ones_like(t), np.zeros_like(t), 0.0
            for k in range(1, 40):
                term = term * h / (k * k)
                harm += 1.0 / k
                s = s + harm * term
            k_small = -(lg + _EULER_GAMMA) * _bessel_i64(t, 0, False) + s
        else:
            # psi(k + 1) + psi(k + 2) = 2 H_k + 1 / (k + 1) - 2 gamma
            term, s, harm = np.ones_like(t), np.zeros_like(t), 0.0
            for k in range(0, 40):
                if k:
                    term = term * h / (k * (k + 1))
                    harm += 1.0 / k
                s = s + (2 * harm + 1.0 / (k + 1) - 2 * _EULER_GAMMA) * term
            k_small = 1.0 / t + lg * _bessel_i64(t, 1, False) - t / 4.0 * s
        out[small] = k_small * np.exp(t)
        large = np.isfinite(x) & (x > 2.0)
        xl = x[large][:, None]
        top = np.arccosh(1.0 + 745.0 / xl)
        step = np.minimum(top / 255.0, 0.25 / np.sqrt(xl))
        nodes = np.arange(256.0)[None, :] * step
        half = np.sinh(nodes / 2.0)
        f = np.exp(-xl * (2.0 * half * half)) * (np.cosh(order * nodes) if order else 1.0)  # (cosh t - 1, exactly)
        out[large] = step[:, 0] * (f.sum(axis=1) - 0.5 * f[:, 0])
        out[x == 0] = np.inf
        out[x == np.inf] = 0.0
    return out


def modified_bessel_k(x: Array, order: int, scaled: bool) -> Array:
    """K0 or K1 (times exp(x) when scaled): inf at 0, NaN for x < 0."""
    def f(v: np.ndarray) -> np.ndarray:
        r = _bessel_k_scaled64(v, order)
        if scaled:
            return r
        with np.errstate(under="ignore", invalid="ignore"):
            return np.where(np.isinf(v) | (v == 0), r, r * np.exp(-v))
    return _in_f64(f, x)


# The Airy function Ai: from its Maclaurin series on [-7, 1.5] (Ai = c1 f - c2 g, the two series of
# A&S 10.4.2-3, whose largest terms stay below 2e4 there, so ~1e-12 relative); above 1.5 from
# Ai(x) = sqrt(x / 3) K_{1/3}(z) / pi, z = 2/3 x^1.5, with K_nu(z) = int_0^inf exp(-z cosh t) cosh(nu t) dt
# by the trapezoid rule (an analytic, double-exponentially decaying integrand, for which the rule
# converges exponentially in 1/step); below -7 from the asymptotic expansion of A&S 10.4.60, summed to its smallest term
# (error below exp(-2 z) ~ 1e-11 relative). Non-finite inputs give NaN, as PyTorch's.

_AI0 = 0.35502805388781723926  # Ai(0) = 1 / (3^(2/3) Gamma(2/3))
_AIP0 = 0.25881940379280679840  # -Ai'(0) = 1 / (3^(1/3) Gamma(1/3))


def _airy_series(x: np.ndarray) -> np.ndarray:
    x3 = x * x * x
    t = np.ones_like(x)
    s = x.copy()
    f, g = t.copy(), s.copy()
    for k in range(1, 60):
        t = t * x3 / ((3 * k - 1) * (3 * k))
        s = s * x3 / ((3 * k) * (3 * k + 1))
        f += t
        g += s
        if np.all(np.abs(t) <= 1e-17 * np.abs(f)) and np.all(np.abs(s) <= 1e-17 * np.maximum(np.abs(g), 1e-300)):
            break
    return _AI0 * f - _AIP0 * g


def _airy_positive(x: np.ndarray) -> np.ndarray:
    z = (2.0 / 3.0) * x * np.sqrt(x)  # above 1.2 here
    # t = s / sqrt(z): the integrand's peak at t = 0 is about 1/sqrt(z) wide, so a fixed step in s
    # (0.2) resolves it for every z; s up to 9.6 reaches z (cosh t - 1) > 46, where it is below 1e-20
    s = np.arange(0.0, 9.7, 0.2)
    w = np.full(s.shape, 0.2)
    w[0] = 0.1
    t = s[None, :] / np.sqrt(z)[:, None]
    # exp(-z (cosh t - 1)) keeps the integral of order one; exp(-z) is applied in the logarithm
    integral = (np.exp(-z[:, None] * (np.cosh(t) - 1.0)) * np.cosh(t / 3.0)) @ w / np.sqrt(z)
    with np.errstate(under="ignore"):
        return np.exp(np.log(np.sqrt(x / 3.0) * integral / np.pi) - z)


def _airy_negative(x: np.ndarray) -> np.ndarray:
    r = -x
    z = (2.0 / 3.0) * r * np.sqrt(r)
    even, odd = np.ones_like(r), np.zeros_like(r)
    c, term_prev = 1.0, np.full_like(r, np.inf)
    done = np.zeros(r.shape, bool)
    zk = np.ones_like(r)
    for k in range(1, 60):
        c = c * (6 * k - 5) * (6 * k - 3) * (6 * k - 1) / (216.0 * k * (2 * k - 1))
        zk = zk / z
        term = c * zk
        done |= term >= term_prev  # (an asymptotic series: stop at its smallest term)
        add = np.where(done, 0.0, term)
        sign = -1.0 if (k // 2) % 2 else 1.0  # (-1)^(k // 2) within each of the two sums
        if k % 2:
            odd += sign * add
        else:
            even += sign * add
        term_prev = np.where(done, term_prev, term)
        if done.all():
            break
    phase = z + np.pi / 4
    return (np.sin(phase) * even - np.cos(phase) * odd) / (np.sqrt(np.pi) * np.sqrt(np.sqrt(r)))


def _airy_ai64(x: np.ndarray) -> np.ndarray:
    out = np.full(x.shape, np.nan)
    mid = (x >= -7.0) & (x <= 1.5)
    pos = x > 1.5
    neg = x < -7.0
    pos &= np.isfinite(x)
    neg &= np.isfinite(x)
    if mid.any():
        out[mid] = _airy_series(x[mid])
    if pos.any():
        out[pos] = _airy_positive(x[pos])
    if neg.any():
        out[neg] = _airy_negative(x[neg])
    return out


def airy_ai(x: Array) -> Array:
    """The Airy function Ai(x) (NaN for non-finite x, as PyTorch's)."""
    return _in_f64(_airy_ai64, x)
