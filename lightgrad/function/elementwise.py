"""Elementwise primitives: binary arithmetic, unary math, trigonometric functions, activations,
clamping and casting, the error and gamma functions."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from .. import backend as B
from .. import dtypes as D
from .base import Function

if TYPE_CHECKING:
    from ..tensor import Tensor
else:
    Tensor = None  # bound by lightgrad.tensor (the one late binding: function.bind)


# ---- binary --------------------------------------------------------------------------------------

class Add(Function):
    traceable = True

    def forward(self, x, y, out=None):
        return B.add(x, y, out)

    def backward(self, g):
        return g, g


class Sub(Function):
    traceable = True

    def forward(self, x, y, out=None):
        return B.subtract(x, y, out)

    def backward(self, g):
        return g, (B.negative(g) if self.needs(1) else None)


class Mul(Function):
    traceable = True

    def forward(self, x, y, out=None):
        self.saved = (x, y)
        return B.multiply(x, y, out)

    def backward(self, g):
        x, y = self.saved
        e = self.edges  # (needs(i), written out: this runs for every product)
        return (None if e[0] is None else B.times(g, y)), (None if e[1] is None else B.times(g, x))


class Fmod(Function):
    """x - q y with q = trunc(x / y) (C's fmod); the gradient is 1 for x and -q for y."""

    _round = staticmethod(B.trunc)
    _op = staticmethod(B.fmod)

    def forward(self, x, y):
        self.saved = (x, y)
        return self._op(x, y)

    def backward(self, g):
        x, y = self.saved
        return g, (B.negative(B.multiply(g, self._round(B.divide(x, y)))) if self.needs(1) else None)


class Remainder(Fmod):
    """x - q y with q = floor(x / y) (Python's %, the result takes y's sign)."""

    _round = staticmethod(B.floor)
    _op = staticmethod(B.remainder)


class Div(Function):
    traceable = True

    def forward(self, x, y, out=None):
        self.saved = (x, y)
        return B.divide(x, y, out)

    def backward(self, g):
        x, y = self.saved
        gx = B.divide(g, y)
        return gx, (B.negative(B.multiply(gx, B.divide(x, y))) if self.needs(1) else None)


class Pow(Function):
    """``x ** y``; small integer exponents are multiplied out (float32 ``x ** 3`` is slow)."""

    saves_out = True
    traceable = True

    def forward(self, x, y):
        if isinstance(y, int | float) and y in (2, 3) and not isinstance(x, int | float):
            out = B.multiply(x, x)
            if y == 3:
                out = B.multiply(out, x)
        else:
            out = B.power(x, y)
        self.saved = (x, y, out)
        return out

    def backward(self, g):
        x, y, out = self.saved
        gx = gy = None
        if self.needs(0):
            if isinstance(y, int | float):
                gx = B.multiply(B.multiply(g, y), x if y == 2 else B.power(x, y - 1))
            else:
                gx = B.multiply(B.multiply(g, y), B.power(x, y - 1))
        if self.needs(1):
            # d/dy x**y = x**y log x; PyTorch takes 0 where x == 0 and y >= 0
            zero = B.equal(x, 0)
            logx = B.log(B.where(zero, 1, x))
            gy = B.multiply(g, B.where(B.logical_and(zero, B.greater_equal(y, 0)), 0, B.multiply(out, logx)))
        return gx, gy


class Maximum(Function):
    traceable = True

    def forward(self, x, y):
        self.saved = (x, y)
        return B.maximum(x, y)

    def backward(self, g):
        x, y = self.saved
        # ties split the gradient in half, as PyTorch does
        half = B.where(B.equal(x, y), B.multiply(g, 0.5), 0)
        return (B.where(B.greater(x, y), g, half) if self.needs(0) else None,
                B.where(B.less(x, y), g, half) if self.needs(1) else None)


class Minimum(Function):
    traceable = True

    def forward(self, x, y):
        self.saved = (x, y)
        return B.minimum(x, y)

    def backward(self, g):
        x, y = self.saved
        half = B.where(B.equal(x, y), B.multiply(g, 0.5), 0)
        return (B.where(B.less(x, y), g, half) if self.needs(0) else None,
                B.where(B.greater(x, y), g, half) if self.needs(1) else None)


class Hypot(Function):
    """sqrt(x**2 + y**2) without overflow (NumPy's hypot); the gradients are x / out and y / out."""

    saves_out = True

    def forward(self, x, y):
        out = B.hypot(x, y)
        self.saved = (x, y, out)
        return out

    def backward(self, g):
        x, y, out = self.saved
        r = B.divide(g, out)
        return (B.multiply(r, x) if self.needs(0) else None), (B.multiply(r, y) if self.needs(1) else None)


class Where(Function):
    traceable = True

    def forward(self, c, x, y):
        self.saved = (c,)
        return B.where(c, x, y)

    def backward(self, g):
        (c,) = self.saved
        return (None, B.where(c, g, 0) if self.needs(1) else None,
                B.where(c, 0, g) if self.needs(2) else None)


# ---- unary: sign, exponentials, logarithms, roots ------------------------------------------------

class Neg(Function):
    traceable = True

    def forward(self, x):
        return B.negative(x)

    def backward(self, g):
        return (B.negative(g),)


class Abs(Function):
    def forward(self, x):
        self.saved = (x,)
        return B.absolute(x)

    def backward(self, g):
        return (B.multiply(g, B.sign(self.saved[0])),)


class Exp(Function):
    saves_out = True
    traceable = True

    def forward(self, x):
        out = B.exp(x)
        self.saved = (out,)
        return out

    def backward(self, g):
        return (B.multiply(g, self.saved[0]),)


class Log(Function):
    traceable = True

    def forward(self, x):
        self.saved = (x,)
        return B.log(x)

    def backward(self, g):
        return (B.divide(g, self.saved[0]),)


class Log1p(Function):
    def forward(self, x):
        self.saved = (x,)
        return B.log1p(x)

    def backward(self, g):
        return (B.divide(g, B.add(self.saved[0], 1)),)


class Expm1(Function):
    saves_out = True

    def forward(self, x):
        out = B.expm1(x)
        self.saved = (out,)
        return out

    def backward(self, g):
        return (B.multiply(g, B.add(self.saved[0], 1)),)


class Sqrt(Function):
    saves_out = True

    def forward(self, x):
        out = B.sqrt(x)
        self.saved = (out,)
        return out

    def backward(self, g):
        return (B.divide(g, B.multiply(self.saved[0], 2)),)


class Std(Function):
    """sqrt of a variance, whose gradient is 0 where the deviation is 0 (constant input, or one
    element): PyTorch's std_backward. Plain sqrt's gradient there is inf, and inf * 0 gave NaN."""

    saves_out = True

    def forward(self, var):
        out = B.sqrt(var)
        self.saved = (out,)
        return out

    def backward(self, g):
        out = self.saved[0]
        zero = B.equal(out, 0)
        # the divisor is 1 where the result is 0, so that no inf or NaN enters the graph there
        return (B.where(zero, 0.0, B.divide(g, B.where(zero, 1.0, B.multiply(out, 2)))),)


# ---- trigonometric and hyperbolic functions, their inverses, atan2 -------------------------------

class Sin(Function):
    def forward(self, x):
        self.saved = (x,)
        return B.sin(x)

    def backward(self, g):
        return (B.multiply(g, B.cos(self.saved[0])),)


class Cos(Function):
    def forward(self, x):
        self.saved = (x,)
        return B.cos(x)

    def backward(self, g):
        return (B.negative(B.multiply(g, B.sin(self.saved[0]))),)


class Tan(Function):
    saves_out = True

    def forward(self, x):
        out = B.tan(x)
        self.saved = (out,)
        return out

    def backward(self, g):
        out = self.saved[0]
        return (B.multiply(g, B.add(B.multiply(out, out), 1)),)


class Tanh(Function):
    saves_out = True
    traceable = True

    def forward(self, x):
        out = B.tanh(x)
        self.saved = (out,)
        return out

    def backward(self, g):
        out = self.saved[0]
        return (B.multiply(g, B.subtract(1, B.multiply(out, out))),)


class Asin(Function):
    def forward(self, x):
        self.saved = (x,)
        with B.errstate(invalid="ignore", divide="ignore"):  # NaN / inf outside the domain, silently
            return B.arcsin(x)

    def backward(self, g):
        x = self.saved[0]
        return (B.divide(g, B.sqrt(B.subtract(1, B.multiply(x, x)))),)


class Acos(Function):
    def forward(self, x):
        self.saved = (x,)
        with B.errstate(invalid="ignore", divide="ignore"):  # NaN / inf outside the domain, silently
            return B.arccos(x)

    def backward(self, g):
        x = self.saved[0]
        return (B.negative(B.divide(g, B.sqrt(B.subtract(1, B.multiply(x, x))))),)


class Atan(Function):
    def forward(self, x):
        self.saved = (x,)
        return B.arctan(x)

    def backward(self, g):
        x = self.saved[0]
        return (B.divide(g, B.add(B.multiply(x, x), 1)),)


class Asinh(Function):
    def forward(self, x):
        self.saved = (x,)
        return B.arcsinh(x)

    def backward(self, g):
        x = self.saved[0]
        return (B.divide(g, B.sqrt(B.add(B.multiply(x, x), 1))),)


class Acosh(Function):
    def forward(self, x):
        self.saved = (x,)
        with B.errstate(invalid="ignore", divide="ignore"):  # NaN / inf outside the domain, silently
            return B.arccosh(x)

    def backward(self, g):
        x = self.saved[0]
        # sqrt((x - 1)(x + 1)), as PyTorch: x*x - 1 cancels near 1
        return (B.divide(g, B.sqrt(B.multiply(B.subtract(x, 1), B.add(x, 1)))),)


class Atanh(Function):
    def forward(self, x):
        self.saved = (x,)
        with B.errstate(invalid="ignore", divide="ignore"):  # NaN / inf outside the domain, silently
            return B.arctanh(x)

    def backward(self, g):
        x = self.saved[0]
        return (B.divide(g, B.subtract(1, B.multiply(x, x))),)


class Atan2(Function):
    def forward(self, y, x):
        self.saved = (y, x)
        return B.arctan2(y, x)

    def backward(self, g):
        y, x = self.saved
        # 0 where x^2 + y^2 is 0 (the origin, or both underflowing), as PyTorch's: not 0 * inf = NaN
        denom = B.add(B.multiply(x, x), B.multiply(y, y))
        zero = B.equal(denom, 0)
        r = B.where(zero, 0.0, B.divide(g, B.where(zero, 1.0, denom)))
        return (B.multiply(r, x) if self.needs(0) else None,
                B.negative(B.multiply(r, y)) if self.needs(1) else None)


# ---- activations ---------------------------------------------------------------------------------

class Sigmoid(Function):
    saves_out = True
    traceable = True

    def forward(self, x):
        # 1 / (1 + exp(-x)) keeps full relative precision for very negative x (2e-9 at -20, where
        # 0.5 * (1 + tanh(x / 2)) rounds to 0); exp overflowing to inf gives the right limit 0
        with B.errstate(over="ignore"):
            out = B.reciprocal(B.add(B.exp(B.negative(x)), 1))
        self.saved = (out,)
        return out

    def backward(self, g):
        out = self.saved[0]
        return (B.multiply(B.multiply(g, out), B.subtract(1, out)),)


class LogSigmoid(Function):
    """log(sigmoid(x)), finite for any x; one node so that its derivative sigmoid(-x) is exact at 0.

    Composed as min(x, 0) - log1p(exp(-|x|)), the pieces' derivatives at exactly 0 (1 for the
    min, 0 for |x|) give 1 where the answer is 1/2: zero logits are common (zero-initialised heads).
    """

    saves_out = True
    traceable = True

    def forward(self, x):
        out = B.subtract(B.minimum(x, 0), B.log1p(B.exp(B.negative(B.absolute(x)))))
        self.saved = (x, out)
        return out

    def backward(self, g):
        x, out = self.saved
        # sigmoid(-x) = exp(log(sigmoid(x)) - x): the exponent is <= 0, so it never overflows
        return (B.multiply(g, B.exp(B.subtract(out, x))),)


class Softplus(Function):
    """log(1 + exp(beta x)) / beta, and x itself where beta x > threshold (PyTorch's definition);
    the derivative sigmoid(beta x) (1 above the threshold) is exact at 0 and at the extremes."""

    traceable = True

    def forward(self, x, beta, threshold):
        bx = B.multiply(x, beta) if beta != 1 else x
        # exp of at most the threshold never overflows; above it x itself is taken
        soft = B.log1p(B.exp(B.minimum(bx, threshold)))
        if beta != 1:
            soft = B.divide(soft, beta)
        self.saved = (x, beta, threshold)
        return B.where(B.greater(bx, threshold), x, soft)

    def backward(self, g):
        x, beta, threshold = self.saved
        bx = B.multiply(x, beta) if beta != 1 else x
        if isinstance(x, Tensor):  # create_graph: sigmoid as its node, whose derivative is s (1 - s)
            sig = Sigmoid.apply(bx)
        else:
            with B.errstate(over="ignore"):  # (exp(-bx) = inf gives the right limit 0)
                sig = B.reciprocal(B.add(B.exp(B.negative(bx)), 1))
        return (B.multiply(g, B.where(B.greater(bx, threshold), 1.0, sig)), None, None)


class Relu(Function):
    saves_out = True
    traceable = True

    def forward(self, x):
        out = B.relu(x)
        self.saved = (out,)
        return out

    def backward(self, g):
        # written with the output: relu'(x) = [out > 0], 0 at x == 0 as in PyTorch
        if isinstance(g, B.ndarray):
            return (B.relu_backward(g, self.saved[0]),)
        return (B.mask(g, B.greater(self.saved[0], 0)),)


# ---- clamping, casting, copying ------------------------------------------------------------------

class Clamp(Function):
    def forward(self, x, lo, hi):
        self.saved = (x, lo, hi)
        out = x
        if lo is not None:
            out = B.maximum(out, lo)
        if hi is not None:
            out = B.minimum(out, hi)
        return out if out is not x else B.copy(x)

    def backward(self, g):
        x, lo, hi = self.saved
        gx = g
        if lo is not None:
            gx = B.where(B.greater_equal(x, lo), gx, 0)
        if hi is not None:
            gx = B.where(B.less_equal(x, hi), gx, 0)
        # bounds given as tensors get the gradient where they were chosen
        glo = B.where(B.less(x, lo), g, 0) if lo is not None and self.needs(1) else None
        ghi = B.where(B.greater(x, hi), g, 0) if hi is not None and self.needs(2) else None
        return gx, glo, ghi


class Cast(Function):
    def forward(self, x, dtype):
        self.dtype = x.dtype
        return B.cast(x, dtype)

    def backward(self, g):
        # (under create_graph g is a Tensor: cast through the differentiable op, by its lightgrad dtype)
        return (B.cast(g, self.dtype) if isinstance(g, B.ndarray) else g.to(D._BY_NP[self.dtype])),


class Copy(Function):
    """A contiguous copy (``clone``); the gradient passes through."""

    def forward(self, x):
        return B.copy(x)

    def backward(self, g):
        return (g,)


# ---- error and gamma functions -------------------------------------------------------------------

class Erf(Function):
    def forward(self, x):
        self.saved = (x,)
        return B.erf(x)

    def backward(self, g):
        x = self.saved[0]
        return (B.multiply(g, B.multiply(B.exp(B.negative(B.multiply(x, x))), 2 / math.sqrt(math.pi))),)


class Erfc(Function):
    def forward(self, x):
        self.saved = (x,)
        return B.erfc(x)

    def backward(self, g):
        x = self.saved[0]
        return (B.multiply(g, B.multiply(B.exp(B.negative(B.multiply(x, x))), -2 / math.sqrt(math.pi))),)


class Erfinv(Function):
    saves_out = True

    def forward(self, x):
        out = B.erfinv(x)
        self.saved = (out,)
        return out

    def backward(self, g):
        y = self.saved[0]
        return (B.multiply(g, B.multiply(B.exp(B.multiply(y, y)), math.sqrt(math.pi) / 2)),)


class Lgamma(Function):
    def forward(self, x):
        self.saved = (x,)
        return B.lgamma(x)

    def backward(self, g):
        x = self.saved[0]
        return (B.multiply(g, Digamma.apply(x) if isinstance(x, Tensor) else B.digamma(x)),)


class Digamma(Function):
    def forward(self, x):
        self.saved = (x,)
        return B.digamma(x)

    def backward(self, g):
        x = self.saved[0]
        # (under create_graph x is a Tensor: trigamma as a node, so the second derivative is polygamma(2))
        return (B.multiply(g, Polygamma.apply(x, 1) if isinstance(x, Tensor) else B.trigamma(x)),)


class Polygamma(Function):
    """The n-th derivative of digamma; its own derivative is polygamma(n + 1), to any order."""

    def forward(self, x, n):
        self.saved = (x, n)
        return B.polygamma(n, x)

    def backward(self, g):
        x, n = self.saved
        return (B.multiply(g, Polygamma.apply(x, n + 1) if isinstance(x, Tensor) else B.polygamma(n + 1, x)), None)

    def name(self) -> str:
        return "PolygammaBackward0"


# ---- torch.special: the functions with kernels of their own (backend/special) --------------------
# (appended by subject: each derivative as PyTorch's derivatives.yaml gives it)

_SQRT_2PI = math.sqrt(2 * math.pi)


def _on(op: type[Function], kernel: Any, x: Any) -> Any:
    """``op`` at x: its node when x is a Tensor (create_graph), else the backend's kernel."""
    return op.apply(x) if isinstance(x, Tensor) else kernel(x)


class Erfcx(Function):
    """exp(x^2) erfc(x); the derivative is 2 x erfcx(x) - 2 / sqrt(pi)."""

    saves_out = True

    def forward(self, x):
        out = B.special.erfcx(x)
        self.saved = (x, out)
        return out

    def backward(self, g):
        x, out = self.saved
        return (B.multiply(g, B.subtract(B.multiply(B.multiply(x, out), 2), 2 / math.sqrt(math.pi))),)


class LogNdtr(Function):
    """log Phi(x); the derivative is exp(-x^2 / 2 - log Phi(x)) / sqrt(2 pi), finite in both tails."""

    saves_out = True

    def forward(self, x):
        out = B.special.log_ndtr(x)
        self.saved = (x, out)
        return out

    def backward(self, g):
        x, out = self.saved
        e = B.exp(B.negative(B.add(B.multiply(B.multiply(x, x), 0.5), out)))
        return (B.multiply(g, B.divide(e, _SQRT_2PI)),)


class Ndtri(Function):
    """The inverse of Phi; the derivative is sqrt(2 pi) exp(y^2 / 2)."""

    saves_out = True

    def forward(self, x):
        out = B.special.ndtri(x)
        self.saved = (out,)
        return out

    def backward(self, g):
        y = self.saved[0]
        return (B.multiply(g, B.multiply(B.exp(B.multiply(B.multiply(y, y), 0.5)), _SQRT_2PI)),)


class I0(Function):
    """The modified Bessel function I0; its derivative is I1."""

    def forward(self, x):
        self.saved = (x,)
        return B.special.i0(x)

    def backward(self, g):
        return (B.multiply(g, _on(I1, B.special.i1, self.saved[0])),)


class I0e(Function):
    """I0(x) exp(-|x|); its derivative is i1e(x) - sgn(x) i0e(x)."""

    saves_out = True

    def forward(self, x):
        out = B.special.i0e(x)
        self.saved = (x, out)
        return out

    def backward(self, g):
        x, out = self.saved
        return (B.multiply(g, B.subtract(_on(I1e, B.special.i1e, x), B.multiply(B.sign(x), out))),)


class I1(Function):
    """The modified Bessel function I1; its derivative is I0(x) - I1(x) / x, 1/2 at 0."""

    saves_out = True

    def forward(self, x):
        out = B.special.i1(x)
        self.saved = (x, out)
        return out

    def backward(self, g):
        x, out = self.saved
        zero = B.equal(x, 0)
        d = B.subtract(_on(I0, B.special.i0, x), B.divide(out, B.where(zero, 1.0, x)))
        return (B.multiply(g, B.where(zero, 0.5, d)),)


class I1e(Function):
    """I1(x) exp(-|x|); its derivative is i0e(x) - i1e(x) (sgn(x) + 1 / x), 1/2 at 0."""

    saves_out = True

    def forward(self, x):
        out = B.special.i1e(x)
        self.saved = (x, out)
        return out

    def backward(self, g):
        x, out = self.saved
        zero = B.equal(x, 0)
        inv = B.divide(1.0, B.where(zero, 1.0, x))
        d = B.subtract(_on(I0e, B.special.i0e, x), B.multiply(out, B.add(B.sign(x), inv)))
        return (B.multiply(g, B.where(zero, 0.5, d)),)


class Gammainc(Function):
    """The regularized incomplete gamma function P(a, x) (Q(a, x) when ``upper``). Only x has a
    derivative, x^(a - 1) e^-x / Gamma(a) (negated for Q); a's is not implemented, as in PyTorch."""

    def forward(self, a, x, upper):
        self.saved = (a, x)
        self.upper = upper
        return B.special.gammaincc(a, x) if upper else B.special.gammainc(a, x)

    def backward(self, g):
        a, x = self.saved
        if self.needs(0):
            raise NotImplementedError(f"the derivative for '{'igammac' if self.upper else 'igamma'}: input' "
                                      "is not implemented.")
        lg = Lgamma.apply(a) if isinstance(a, Tensor) else B.lgamma(B.asarray(a, getattr(x, "dtype", None)))
        d = B.exp(B.subtract(B.subtract(B.multiply(B.subtract(a, 1), B.log(x)), x), lg))
        return None, (B.negative(B.multiply(g, d)) if self.upper else B.multiply(g, d)), None

    def name(self) -> str:
        return "IgammacBackward0" if self.upper else "IgammaBackward0"


class Zeta(Function):
    """The Hurwitz zeta function zeta(x, q); q's derivative is -x zeta(x + 1, q), x's is not
    implemented, as in PyTorch."""

    def forward(self, x, q):
        self.saved = (x, q)
        return B.special.zeta(x, q)

    def backward(self, g):
        x, q = self.saved
        if self.needs(0):
            raise NotImplementedError("the derivative for 'zeta' is not implemented.")
        up = Zeta.apply(B.add(x, 1), q) if isinstance(q, Tensor) else B.special.zeta(B.add(x, 1), q)
        return None, B.negative(B.multiply(g, B.multiply(x, up)))

    def name(self) -> str:
        return "SpecialZetaBackward0"


class Entr(Function):
    """-x log x (0 at 0, -inf below); the derivative is -(1 + log x)."""

    def forward(self, x):
        self.saved = (x,)
        with B.errstate(divide="ignore", invalid="ignore"):
            pos = B.greater(x, 0)
            v = B.negative(B.multiply(x, B.log(B.where(pos, x, 1.0))))
            return B.where(pos, v, B.where(B.equal(x, 0), 0.0, B.where(B.isnan(x), x, -math.inf)))

    def backward(self, g):
        with B.errstate(divide="ignore", invalid="ignore"):
            return (B.negative(B.multiply(g, B.add(B.log(self.saved[0]), 1))),)

    def name(self) -> str:
        return "SpecialEntrBackward0"


class Xlog1py(Function):
    """x log1p(y), 0 where x is 0 (unless y is NaN); the derivatives are log1p(y) (0 where x is 0 and
    y <= -1) and x / (1 + y)."""

    def forward(self, x, y):
        self.saved = (x, y)
        with B.errstate(divide="ignore", invalid="ignore"):
            v = B.multiply(x, B.log1p(y))
            return B.where(B.logical_and(B.equal(x, 0), B.logical_not(B.isnan(y))), 0.0, v)

    def backward(self, g):
        x, y = self.saved
        gx = gy = None
        with B.errstate(divide="ignore", invalid="ignore"):
            if self.needs(0):
                gx = B.where(B.logical_and(B.equal(x, 0), B.less_equal(y, -1)), 0.0, B.multiply(g, B.log1p(y)))
            if self.needs(1):
                gy = B.divide(B.multiply(g, x), B.add(y, 1))
        return gx, gy

    def name(self) -> str:
        return "SpecialXlog1pyBackward0"
