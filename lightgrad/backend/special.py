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
    return r if x.dtype == np.float64 else r.astype(x.dtype)


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
