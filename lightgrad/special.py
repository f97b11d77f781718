"""torch.special: the special functions, with PyTorch's gradients.

>>> import lightgrad as torch
>>> torch.special.ndtr(torch.tensor([0.0, 1.0]))
tensor([0.5000, 0.8413])

Functions lightgrad already has are re-exported (``expit`` is ``sigmoid``, ``gammaln`` is ``lgamma``,
``psi`` is ``digamma``); those with kernels of their own are primitives (lightgrad.function.elementwise,
computed in float64 by lightgrad.backend.special from series, asymptotic expansions, continued
fractions and recurrences). As in PyTorch, the Bessel functions and the orthogonal polynomials have
no gradient (their results do not require grad), and gammainc/gammaincc and zeta are differentiable
in their second argument only.
"""

from __future__ import annotations

import builtins
import math
from typing import Any

from . import backend as B
from . import dtypes as D
from ._ops.common import _floating
from ._ops.creation import _into
from .function.elementwise import (I0, I1, Entr, Erfcx, Gammainc, I0e, I1e, LogNdtr, Ndtri, Xlog1py, Zeta)
from .tensor import Tensor, tensor

__all__ = ["airy_ai", "digamma", "entr", "erf", "erfc", "erfcx", "erfinv", "exp2", "expit", "expm1", "gammainc", "gammaincc",
           "gammaln", "i0", "i0e", "i1", "i1e", "log1p", "log_ndtr", "log_softmax", "logit", "logsumexp",
           "modified_bessel_i0", "modified_bessel_i1", "modified_bessel_k0", "modified_bessel_k1",
           "scaled_modified_bessel_k0", "scaled_modified_bessel_k1", "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1",
           "multigammaln", "ndtr", "ndtri", "polygamma", "psi", "round",
           "sinc", "softmax", "spherical_bessel_j0", "xlog1py", "xlogy", "zeta", "chebyshev_polynomial_t",
           "chebyshev_polynomial_u", "chebyshev_polynomial_v", "chebyshev_polynomial_w", "hermite_polynomial_h",
           "hermite_polynomial_he", "laguerre_polynomial_l", "legendre_polynomial_p", "shifted_chebyshev_polynomial_t",
           "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v", "shifted_chebyshev_polynomial_w"]


def _float(x: Any, name: str) -> Tensor:
    if not isinstance(x, Tensor):
        raise TypeError(f"special_{name}(): argument 'input' (position 1) must be Tensor, not {type(x).__name__}")
    return _floating(x)


def _pair(a: Any, b: Any) -> tuple[Any, Any]:
    """Two arguments (tensors or numbers) in their common floating dtype, as PyTorch promotes them."""
    dt = D.result_type(a, b)
    if not (dt.is_floating_point or dt.is_complex):
        dt = D.get_default_dtype()
    return tuple(x.to(dt) if isinstance(x, Tensor) else tensor(x, dtype=dt) for x in (a, b))  # type: ignore[return-value]


def _out(result: Tensor, out: Tensor | None) -> Tensor:
    return _into(out, result, "special")


# ---- what lightgrad has under other names ---------------------------------------------------------

def digamma(input: Tensor, *, out: Tensor | None = None) -> Tensor:  # noqa: A002
    """The logarithmic derivative of the gamma function."""
    return _out(input.digamma(), out)


psi = digamma


def erf(input: Tensor, *, out: Tensor | None = None) -> Tensor:  # noqa: A002
    """The error function."""
    return _out(input.erf(), out)


def erfc(input: Tensor, *, out: Tensor | None = None) -> Tensor:  # noqa: A002
    """The complementary error function 1 - erf(x)."""
    return _out(input.erfc(), out)


def erfinv(input: Tensor, *, out: Tensor | None = None) -> Tensor:  # noqa: A002
    """The inverse error function."""
    return _out(input.erfinv(), out)


def exp2(input: Tensor, *, out: Tensor | None = None) -> Tensor:  # noqa: A002
    """2 ** x."""
    return _out(input.exp2(), out)


def expm1(input: Tensor, *, out: Tensor | None = None) -> Tensor:  # noqa: A002
    """exp(x) - 1, accurate near 0."""
    return _out(input.expm1(), out)


def expit(input: Tensor, *, out: Tensor | None = None) -> Tensor:  # noqa: A002
    """The logistic sigmoid 1 / (1 + exp(-x))."""
    return _out(input.sigmoid(), out)


def gammaln(input: Tensor, *, out: Tensor | None = None) -> Tensor:  # noqa: A002
    """log |Gamma(x)|."""
    return _out(input.lgamma(), out)


def log1p(input: Tensor, *, out: Tensor | None = None) -> Tensor:  # noqa: A002
    """log(1 + x), accurate near 0."""
    return _out(input.log1p(), out)


def logit(input: Tensor, eps: float | None = None, *, out: Tensor | None = None) -> Tensor:  # noqa: A002
    """log(p / (1 - p)), p clamped to [eps, 1 - eps] when eps is given."""
    return _out(input.logit(eps), out)


def logsumexp(input: Tensor, dim: Any, keepdim: builtins.bool = False, *,  # noqa: A002
              out: Tensor | None = None) -> Tensor:
    """log of the sum of exp(x) over ``dim``, without overflow."""
    return _out(input.logsumexp(dim, keepdim), out)


def log_softmax(input: Tensor, dim: int, *, dtype: Any = None) -> Tensor:  # noqa: A002
    """log(softmax(x)) along ``dim``, computed in ``dtype`` when given."""
    return input.log_softmax(dim, dtype=dtype)


def softmax(input: Tensor, dim: int, *, dtype: Any = None) -> Tensor:  # noqa: A002
    """exp(x) / sum(exp(x)) along ``dim``, computed in ``dtype`` when given."""
    return input.softmax(dim, dtype=dtype)


def polygamma(n: int, input: Tensor, *, out: Tensor | None = None) -> Tensor:  # noqa: A002
    """The n-th derivative of digamma."""
    return _out(input.polygamma(n), out)


def round(input: Tensor, *, decimals: int = 0, out: Tensor | None = None) -> Tensor:  # noqa: A001, A002
    """Round half to even (to ``decimals`` places)."""
    return _out(input.round(decimals=decimals), out)


def sinc(input: Tensor, *, out: Tensor | None = None) -> Tensor:  # noqa: A002
    """sin(pi x) / (pi x), 1 at 0."""
    return _out(input.sinc(), out)


def xlogy(input: Any, other: Any, *, out: Tensor | None = None) -> Tensor:  # noqa: A002
    """x log y, 0 where x is 0 (unless y is NaN)."""
    x = input if isinstance(input, Tensor) else tensor(input, dtype=D.result_type(input, other))
    return _out(x.xlogy(other), out)


# ---- the normal distribution, entropy, log1p products ---------------------------------------------

def ndtr(input: Tensor, *, out: Tensor | None = None) -> Tensor:  # noqa: A002
    """The standard normal distribution function Phi(x) = (1 + erf(x / sqrt 2)) / 2."""
    # (as PyTorch computes it, whose lower tail rounds to 0 below x = -8.3: erfc(-x / sqrt 2) / 2 or
    # exp(log_ndtr(x)) keep it)
    return _out(((_float(input, "ndtr") * math.sqrt(0.5)).erf() + 1) * 0.5, out)


def log_ndtr(input: Tensor, *, out: Tensor | None = None) -> Tensor:  # noqa: A002
    """log Phi(x), accurate in both tails."""
    return _out(LogNdtr.apply(_float(input, "log_ndtr")), out)


def ndtri(input: Tensor, *, out: Tensor | None = None) -> Tensor:  # noqa: A002
    """The inverse of Phi: the x with Phi(x) = p."""
    return _out(Ndtri.apply(_float(input, "ndtri")), out)


def erfcx(input: Tensor, *, out: Tensor | None = None) -> Tensor:  # noqa: A002
    """The scaled complementary error function exp(x^2) erfc(x)."""
    return _out(Erfcx.apply(_float(input, "erfcx")), out)


def entr(input: Tensor, *, out: Tensor | None = None) -> Tensor:  # noqa: A002
    """The elementwise entropy -x log x (0 at 0, -inf for x < 0)."""
    return _out(Entr.apply(_float(input, "entr")), out)


def xlog1py(input: Any, other: Any, *, out: Tensor | None = None) -> Tensor:  # noqa: A002
    """x log(1 + y), 0 where x is 0 (unless y is NaN)."""
    return _out(Xlog1py.apply(*_pair(input, other)), out)


def multigammaln(input: Tensor, p: int, *, out: Tensor | None = None) -> Tensor:  # noqa: A002
    """The log of the multivariate gamma function of dimension p: sum of lgamma(x - j / 2) for j < p,
    plus p (p - 1) / 4 log(pi)."""
    x = _float(input, "multigammaln")
    if p < 1:
        raise RuntimeError("p has to be greater than or equal to 1")
    shifts = tensor([-j / 2 for j in range(p)], dtype=x.dtype)
    return _out((x.unsqueeze(-1) + shifts).lgamma().sum(-1) + p * (p - 1) / 4 * math.log(math.pi), out)


# ---- Bessel functions and the incomplete gamma and zeta functions ---------------------------------

def i0(input: Tensor, *, out: Tensor | None = None) -> Tensor:  # noqa: A002
    """The modified Bessel function of the first kind of order 0."""
    return _out(I0.apply(_float(input, "i0")), out)


def i0e(input: Tensor, *, out: Tensor | None = None) -> Tensor:  # noqa: A002
    """i0(x) exp(-|x|)."""
    return _out(I0e.apply(_float(input, "i0e")), out)


def i1(input: Tensor, *, out: Tensor | None = None) -> Tensor:  # noqa: A002
    """The modified Bessel function of the first kind of order 1."""
    return _out(I1.apply(_float(input, "i1")), out)


def i1e(input: Tensor, *, out: Tensor | None = None) -> Tensor:  # noqa: A002
    """i1(x) exp(-|x|)."""
    return _out(I1e.apply(_float(input, "i1e")), out)


def _constant(arr: Any) -> Tensor:
    return Tensor._make(arr)  # (no gradient: PyTorch defines none for these)


def airy_ai(input: Tensor, *, out: Tensor | None = None) -> Tensor:  # noqa: A002
    """The Airy function Ai(x), without a gradient (as PyTorch's)."""
    return _out(_constant(B.special.airy_ai(_float(input, "airy_ai")._data)), out)


def modified_bessel_i0(input: Tensor, *, out: Tensor | None = None) -> Tensor:  # noqa: A002
    """I0(x), as i0 but without a gradient (as PyTorch's)."""
    return _out(_constant(B.special.i0(_float(input, "modified_bessel_i0")._data)), out)


def modified_bessel_i1(input: Tensor, *, out: Tensor | None = None) -> Tensor:  # noqa: A002
    """I1(x), as i1 but without a gradient (as PyTorch's)."""
    return _out(_constant(B.special.i1(_float(input, "modified_bessel_i1")._data)), out)


def bessel_j0(input: Tensor, *, out: Tensor | None = None) -> Tensor:  # noqa: A002
    """The Bessel function of the first kind of order 0."""
    return _out(_constant(B.special.bessel_j0(_float(input, "bessel_j0")._data)), out)


def bessel_j1(input: Tensor, *, out: Tensor | None = None) -> Tensor:  # noqa: A002
    """The Bessel function of the first kind of order 1."""
    return _out(_constant(B.special.bessel_j1(_float(input, "bessel_j1")._data)), out)


def bessel_y0(input: Tensor, *, out: Tensor | None = None) -> Tensor:  # noqa: A002
    """The Bessel function of the second kind of order 0 (NaN for x < 0)."""
    return _out(_constant(B.special.bessel_y0(_float(input, "bessel_y0")._data)), out)


def bessel_y1(input: Tensor, *, out: Tensor | None = None) -> Tensor:  # noqa: A002
    """The Bessel function of the second kind of order 1 (NaN for x < 0)."""
    return _out(_constant(B.special.bessel_y1(_float(input, "bessel_y1")._data)), out)


def modified_bessel_k0(input: Tensor, *, out: Tensor | None = None) -> Tensor:  # noqa: A002
    """The modified Bessel function of the second kind of order 0 (NaN for x < 0)."""
    return _out(_constant(B.special.modified_bessel_k(_float(input, "modified_bessel_k0")._data, 0, False)), out)


def modified_bessel_k1(input: Tensor, *, out: Tensor | None = None) -> Tensor:  # noqa: A002
    """The modified Bessel function of the second kind of order 1 (NaN for x < 0)."""
    return _out(_constant(B.special.modified_bessel_k(_float(input, "modified_bessel_k1")._data, 1, False)), out)


def scaled_modified_bessel_k0(input: Tensor, *, out: Tensor | None = None) -> Tensor:  # noqa: A002
    """K0(x) exp(x), finite for large x."""
    x = _float(input, "scaled_modified_bessel_k0")
    return _out(_constant(B.special.modified_bessel_k(x._data, 0, True)), out)


def scaled_modified_bessel_k1(input: Tensor, *, out: Tensor | None = None) -> Tensor:  # noqa: A002
    """K1(x) exp(x), finite for large x."""
    x = _float(input, "scaled_modified_bessel_k1")
    return _out(_constant(B.special.modified_bessel_k(x._data, 1, True)), out)


def spherical_bessel_j0(input: Tensor, *, out: Tensor | None = None) -> Tensor:  # noqa: A002
    """The spherical Bessel function of the first kind of order 0, sin(x) / x."""
    return _out(_constant(B.special.spherical_bessel_j0(_float(input, "spherical_bessel_j0")._data)), out)


def gammainc(input: Any, other: Any, *, out: Tensor | None = None) -> Tensor:  # noqa: A002
    """The regularized lower incomplete gamma function P(a, x)."""
    return _out(Gammainc.apply(*_pair(input, other), upper=False), out)


def gammaincc(input: Any, other: Any, *, out: Tensor | None = None) -> Tensor:  # noqa: A002
    """The regularized upper incomplete gamma function Q(a, x) = 1 - P(a, x)."""
    return _out(Gammainc.apply(*_pair(input, other), upper=True), out)


def zeta(input: Any, other: Any, *, out: Tensor | None = None) -> Tensor:  # noqa: A002
    """The Hurwitz zeta function zeta(x, q), the sum over k >= 0 of (q + k)^-x."""
    return _out(Zeta.apply(*_pair(input, other)), out)


# ---- orthogonal polynomials (no gradient, as PyTorch's) ----------------------------------------------

def _polynomial(kind: str, x: Any, n: Any, out: Tensor | None) -> Tensor:
    a, b = _pair(x, n)
    return _out(_constant(B.special.polynomial(kind, a._data, b._data)), out)


def chebyshev_polynomial_t(input: Any, n: Any, *, out: Tensor | None = None) -> Tensor:  # noqa: A002
    """The Chebyshev polynomial of the first kind T_n(x)."""
    return _polynomial("t", input, n, out)


def chebyshev_polynomial_u(input: Any, n: Any, *, out: Tensor | None = None) -> Tensor:  # noqa: A002
    """The Chebyshev polynomial of the second kind U_n(x)."""
    return _polynomial("u", input, n, out)


def chebyshev_polynomial_v(input: Any, n: Any, *, out: Tensor | None = None) -> Tensor:  # noqa: A002
    """The Chebyshev polynomial of the third kind V_n(x)."""
    return _polynomial("v", input, n, out)


def chebyshev_polynomial_w(input: Any, n: Any, *, out: Tensor | None = None) -> Tensor:  # noqa: A002
    """The Chebyshev polynomial of the fourth kind W_n(x)."""
    return _polynomial("w", input, n, out)


def shifted_chebyshev_polynomial_t(input: Any, n: Any, *, out: Tensor | None = None) -> Tensor:  # noqa: A002
    """T_n(2x - 1)."""
    return _polynomial("shifted_t", input, n, out)


def shifted_chebyshev_polynomial_u(input: Any, n: Any, *, out: Tensor | None = None) -> Tensor:  # noqa: A002
    """U_n(2x - 1)."""
    return _polynomial("shifted_u", input, n, out)


def shifted_chebyshev_polynomial_v(input: Any, n: Any, *, out: Tensor | None = None) -> Tensor:  # noqa: A002
    """V_n(2x - 1)."""
    return _polynomial("shifted_v", input, n, out)


def shifted_chebyshev_polynomial_w(input: Any, n: Any, *, out: Tensor | None = None) -> Tensor:  # noqa: A002
    """W_n(2x - 1)."""
    return _polynomial("shifted_w", input, n, out)


def hermite_polynomial_h(input: Any, n: Any, *, out: Tensor | None = None) -> Tensor:  # noqa: A002
    """The physicists' Hermite polynomial H_n(x)."""
    return _polynomial("h", input, n, out)


def hermite_polynomial_he(input: Any, n: Any, *, out: Tensor | None = None) -> Tensor:  # noqa: A002
    """The probabilists' Hermite polynomial He_n(x)."""
    return _polynomial("he", input, n, out)


def laguerre_polynomial_l(input: Any, n: Any, *, out: Tensor | None = None) -> Tensor:  # noqa: A002
    """The Laguerre polynomial L_n(x)."""
    return _polynomial("l", input, n, out)


def legendre_polynomial_p(input: Any, n: Any, *, out: Tensor | None = None) -> Tensor:  # noqa: A002
    """The Legendre polynomial P_n(x)."""
    return _polynomial("p", input, n, out)
