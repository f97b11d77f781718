"""Primitive ops: one ``Function`` each, forward beside backward.

Forward and backward take and return raw arrays and compute only through ``backend``. A backward
returns one gradient per input (None for inputs that need none); gradients of broadcast inputs
are summed back to the input's shape by the engine, in one place. Backward formulas are written
with backend (NumPy) calls, which Tensors also accept: with ``create_graph=True`` the engine
passes Tensors instead of arrays, and the same formulas build a differentiable graph.

``saved`` holds the arrays backward needs; it is freed after backward unless the graph is
retained. Saved items are inputs, constants (masks, indices), or, when ``saves_out`` is set, the
output as the last item.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np

from . import backend as B
from . import dtypes as D
from .autograd import _enabled
from .memory import home as _home
from .memory import reclaimed_error

_new_object = object.__new__
_SEQ = itertools.count(0, -1)


class Function:
    """Base of primitive ops; ``Op.apply(*tensors, **params)`` runs forward and records a node."""

    saved: Any = ()
    saves_out = False
    # forward and backward compute only by backend calls on arrays they were given or those calls
    # made (no ndarray operators or methods, no Python branch on values): lightgrad.compile then
    # replays those calls themselves, not the node's methods
    traceable = False
    parents: tuple[Any, ...]
    # per input, where its gradient goes, fixed when the op runs (as PyTorch's edges): the node
    # that made it, the leaf Tensor itself, or None when it needs no gradient; an in-place op that
    # later gives the input a new grad_fn does not reroute this node's gradient
    edges: list[Any]
    seq: int  # creation order (counting down): backward runs nodes in increasing seq, newest first
    stamp: int
    out_version: list[int]
    retained: Any = None  # the output tensor, when it asked retain_grad()
    # its backward runs once the walk is over, every leaf's .grad in place (gradients that add to an
    # existing .grad land only then: engine._walk); it gives its inputs no gradient (DDP's reduction)
    runs_last = False
    # the liveness tokens of the arena storage the backward may read (its inputs' and its output's,
    # which the arena active at forward also gave its saved temporaries), or None when all is on the
    # heap: the engine refuses to run a node one of whose arenas was reset since it ran
    mems: tuple[list[Any], ...] | None = None

    def forward(self, *args: Any, **kw: Any) -> Any:
        raise NotImplementedError  # pragma: no cover - every primitive overrides it

    def backward(self, g: Any) -> tuple[Any, ...]:
        raise NotImplementedError  # pragma: no cover

    @classmethod
    def apply(cls, *args: Any, **kw: Any) -> Any:
        ctx = cls()
        raw = []
        edges = []
        need = False
        mems: tuple[list[Any], ...] | None = None
        for a in args:
            if isinstance(a, Tensor):
                m = a._mem
                if m is not None:
                    if not m[0]:
                        raise reclaimed_error(m)  # its arena was reset: the data is gone
                    mems = (m,) if mems is None else mems if m is mems[-1] else (*mems, m)
                raw.append(a._arr)  # (checked just above: Tensor._data's check, inlined)
                if a.requires_grad:
                    need = True
                    edges.append(a._grad_fn or a)
                else:
                    edges.append(None)
            else:
                raw.append(a)
                edges.append(None)
        # (a call that unpacks an empty **kw costs a tenth of a one-element op)
        out = ctx.forward(*raw, **kw) if kw else ctx.forward(*raw)
        # Tensor._make, written out: this runs for every op
        t = _new_object(Tensor)
        t._arr = arr = out if type(out) is np.ndarray else np.asarray(out)
        t._grad = None
        t._version = version = [0, 0]
        # the token of the output's bytes (memory.home): a view of an input gets the input's; an
        # array that owns its bytes, or a view of one (a reshaped reduction), is the heap's
        b = arr.base
        t._mem = m = None if b is None or type(b) is np.ndarray and b.base is None else _home(arr)
        if need and _enabled.get():
            if m is not None:
                mems = (m,) if mems is None else mems if m is mems[-1] else (*mems, m)
            if mems is not None:
                ctx.mems = mems
            ctx.parents = args
            ctx.edges = edges
            ctx.seq = next(_SEQ)
            ctx.stamp = _STAMP[0]  # saved inputs modified in place after this are refused
            if cls.saves_out:
                ctx.out_version = version
            t.requires_grad = True
            t._grad_fn = ctx
        else:
            t.requires_grad = False
            t._grad_fn = None
        return t

    def needs(self, i: int) -> bool:
        """Whether input ``i`` needs a gradient (skip costly work when it does not)."""
        return self.edges[i] is not None

    def name(self) -> str:
        return type(self).__name__ + "Backward0"

    def __repr__(self) -> str:
        return f"<{self.name()}>"

    @property
    def next_functions(self) -> tuple[tuple[Any, int], ...]:
        return tuple((AccumulateGrad(e) if isinstance(e, Tensor) else e, 0) for e in self.edges)


class AccumulateGrad:
    """What ``next_functions`` shows for a leaf that requires grad, as in PyTorch."""

    __slots__ = ("variable",)

    def __init__(self, variable: Any) -> None:
        self.variable = variable

    def name(self) -> str:
        return "torch::autograd::AccumulateGrad"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, AccumulateGrad) and other.variable is self.variable

    def __hash__(self) -> int:
        return id(self.variable)


def unbroadcast(g: Any, shape: tuple[int, ...]) -> Any:
    """Sum a broadcast gradient back to ``shape`` (the one place broadcasting is undone)."""
    if g.shape == shape:
        return g
    lead = g.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(i + lead for i, s in enumerate(shape) if s == 1 and g.shape[i + lead] != 1)
    if axes:
        g = B.sum(g, axis=axes, keepdims=True)
    return B.reshape(g, shape)


# ---- elementwise binary ------------------------------------------------------------------------

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


class Where(Function):
    traceable = True

    def forward(self, c, x, y):
        self.saved = (c,)
        return B.where(c, x, y)

    def backward(self, g):
        (c,) = self.saved
        return (None, B.where(c, g, 0) if self.needs(1) else None,
                B.where(c, 0, g) if self.needs(2) else None)


# ---- elementwise unary -------------------------------------------------------------------------

class Neg(Function):
    traceable = True

    def forward(self, x):
        return B.negative(x)

    def backward(self, g):
        return (B.negative(g),)


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
        out = B.maximum(x, x.dtype.type(0))
        self.saved = (out,)
        return out

    def backward(self, g):
        # written with the output: relu'(x) = [out > 0], 0 at x == 0 as in PyTorch
        return (B.mask(g, B.greater(self.saved[0], 0)),)


class Abs(Function):
    def forward(self, x):
        self.saved = (x,)
        return B.absolute(x)

    def backward(self, g):
        return (B.multiply(g, B.sign(self.saved[0])),)


class Erf(Function):
    def forward(self, x):
        self.saved = (x,)
        return B.erf(x)

    def backward(self, g):
        x = self.saved[0]
        return (B.multiply(g, B.multiply(B.exp(B.negative(B.multiply(x, x))), 2 / math.sqrt(math.pi))),)


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
        return (B.cast(g, self.dtype) if isinstance(g, np.ndarray) else g.to(D._BY_NP[self.dtype])),


class Copy(Function):
    """A contiguous copy (``clone``); the gradient passes through."""

    def forward(self, x):
        return B.copy(x)

    def backward(self, g):
        return (g,)


# more math (compat): inverse trigonometric and hyperbolic functions, atan2, special functions

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


# ---- reductions --------------------------------------------------------------------------------

_ZERO: dict[Any, np.ndarray] = {}  # a 0-d zero per dtype (adding an array: half the cost of adding 0)


class Sum(Function):
    traceable = True

    def forward(self, x, axes, keepdim):
        self.shape, self.axes, self.keepdim = x.shape, axes, keepdim
        if axes is None and not keepdim:  # a full sum (a loss): a 0-d array, not a NumPy scalar
            if x.size == 1 and x.dtype.kind in "fi":
                # one entry: NumPy's reduction adds it to the identity 0 (-0.0 sums to 0.0), and
                # so does this, without the reduction's setup (a third of a one-element op)
                zero = _ZERO.get(x.dtype)
                if zero is None:
                    zero = _ZERO[x.dtype] = np.zeros((), x.dtype)
                    zero.flags.writeable = False
                return B.reshape(B.add(x, zero), ())
            return B.reshape(B.reduce(B.add, x, None, True), ())
        # (every axis named is a full sum too: the same summation, so the same bits as sum())
        return B.reduce(B.add, x, None if axes is not None and len(axes) == x.ndim else axes, keepdim)

    def name(self) -> str:
        return "SumBackward0" if self.axes is None else "SumBackward1"  # (PyTorch's: all, or over dims)

    def backward(self, g):
        shape = self.shape
        if isinstance(g, np.generic):  # (a 0-d quotient, as a mean's, comes back as a NumPy scalar)
            g = np.asarray(g)
        if shape == (1,):
            # one entry summed: its gradient is g (one entry too) as a view of shape (1,), no
            # broadcast view to build (cheaper by half on a one-element loss)
            return (B.reshape(g, shape),)
        if not self.keepdim and self.axes:
            g = B.reshape(g, B._reduced(shape, self.axes, True))
        return (B.expand(g, shape),)


class Mean(Sum):
    """The sum over axes divided by their count ``n``, as PyTorch computes a mean; one node."""

    def forward(self, x, axes, keepdim, n):
        self.n = n
        return B.divide(Sum.forward(self, x, axes, keepdim), n)

    def name(self) -> str:
        return "MeanBackward0" if self.axes is None else "MeanBackward1"

    def backward(self, g):
        return Sum.backward(self, B.divide(g, self.n))


class Amax(Function):
    """max/min over axes; the gradient is shared evenly among tied extremes (PyTorch's amax)."""

    saves_out = True

    def forward(self, x, axes, keepdim, f=B.maximum):
        axes = tuple(range(x.ndim)) if axes is None else axes
        out = B.reduce(f, x, axes, True)
        self.saved = (x, out)
        self.keepdim, self.axes = keepdim, axes
        return out if keepdim else np.reshape(out, B._reduced(x.shape, axes, False))

    def backward(self, g):
        x, out = self.saved
        if not self.keepdim:
            g = np.reshape(g, out.shape)
            out = np.reshape(out, out.shape)
        mask = x == out
        count = B.sum(mask, axis=self.axes, keepdims=True)
        return (B.where(mask, B.divide(g, count), 0),)


class Amin(Amax):
    def forward(self, x, axes, keepdim):
        return super().forward(x, axes, keepdim, B.minimum)


class MaxDim(Function):
    """Values of max/min along one dim; the gradient goes to the returned index only."""

    def forward(self, x, dim, keepdim, idx):
        self.shape, self.dim, self.keepdim = x.shape, dim, keepdim
        idx = np.expand_dims(idx, dim)
        self.saved = (idx,)
        out = B.take_along_axis(x, idx, dim)
        return out if keepdim else np.squeeze(out, dim)

    def backward(self, g):
        (idx,) = self.saved
        if not self.keepdim:
            g = np.expand_dims(g, self.dim)
        return (_put(_zeros(g, self.shape), _along(idx, self.dim), g, False),)


class Prod(Function):
    def forward(self, x, axes, keepdim):
        self.saved = (x,)
        self.axes, self.keepdim = axes, keepdim
        return B.reduce(B.multiply, x, axes, keepdim)

    def backward(self, g):
        (x,) = self.saved
        axes = self.axes if self.axes is not None else tuple(range(x.ndim))
        if not self.keepdim:
            g = np.reshape(g, B._reduced(x.shape, axes, True))
        if 0 in x.shape:  # no elements: an empty gradient of x's shape (g broadcast over it)
            return (B.multiply(g, x),)
        # product of all other elements = exclusive cumprod from the left times from the right,
        # exact when some elements are zero (unlike out / x)
        rest = [i for i in range(x.ndim) if i not in axes]
        perm = rest + list(axes)
        back = tuple(int(i) for i in np.argsort(perm))
        if isinstance(x, Tensor):  # create_graph: the same products from Tensor ops, differentiable again
            from .tensor import cat
            xt = x.permute(*perm)
            flat = xt.reshape(tuple(xt.shape[:len(rest)]) + (-1,))
            ones = Tensor._make(np.ones(tuple(flat.shape[:-1]) + (1,), x._data.dtype))
            left = cat([ones, flat[..., :-1]], -1).cumprod(-1)
            right = cat([flat[..., 1:], ones], -1).flip(-1).cumprod(-1).flip(-1)
            others = (left * right).reshape(xt.shape).permute(*back)
        else:
            xt = np.transpose(x, perm)
            flat = np.reshape(xt, xt.shape[:len(rest)] + (-1,))
            ones = np.ones(flat.shape[:-1] + (1,), x.dtype)
            left = np.cumprod(np.concatenate([ones, flat[..., :-1]], -1), -1)
            right = np.flip(np.cumprod(np.flip(np.concatenate([flat[..., 1:], ones], -1), -1), -1), -1)
            others = np.transpose(np.reshape(left * right, xt.shape), back)
        return (B.multiply(g, others),)


class Cumsum(Function):
    def forward(self, x, dim):
        self.dim = dim
        return B.cumsum(x, dim)

    def backward(self, g):
        return (np.flip(np.cumsum(np.flip(g, self.dim), self.dim), self.dim),)


class LogSoftmax(Function):
    saves_out = True

    def forward(self, x, dim):
        self.dim = dim
        if not x.shape[dim]:  # (an empty dim: an empty result; its maximum has no identity)
            self.saved = (B.copy(x),)
            return self.saved[0]
        m = B.reduce(B.maximum, x, (dim,), True)
        sh = B.subtract(x, m)
        lse = B.log(B.reduce(B.add, B.exp(sh), (dim,), True))
        sh -= lse
        self.saved = (sh,)
        return sh

    def backward(self, g):
        out = self.saved[0]
        return (B.subtract(g, B.multiply(B.exp(out), B.sum(g, axis=self.dim, keepdims=True))),)


class Softmax(Function):
    saves_out = True

    def forward(self, x, dim):
        self.dim = dim
        e = B.softmax(x, dim) if x.shape[dim] else B.copy(x)  # (an empty dim: an empty result)
        self.saved = (e,)
        return e

    def backward(self, g):
        y = self.saved[0]
        if isinstance(g, np.ndarray) and g.shape == y.shape:
            # y (g - sum(g y)): the sums by one dot-product pass (no g y temporary), then one fresh
            # array updated in place (0.44 -> 0.32 ms on (16, 4, 64, 64) attention scores)
            return (B.imul(B.subtract(g, B.dot_along(g, y, self.dim)), y),)
        gy = B.multiply(g, y)
        return (B.subtract(gy, B.multiply(y, B.sum(gy, axis=self.dim, keepdims=True))),)


class Cumprod(Function):
    """Running product along ``dim``; its gradient is exact also where x holds zeros."""

    saves_out = True

    def forward(self, x, dim):
        self.dim = dim
        out = B.cumprod(x, dim)
        self.saved = (x, out)
        return out

    def backward(self, g):
        x, out = self.saved
        return (B.cumprod_grad(x, out, g, self.dim),)


class Logcumsumexp(Function):
    """log(cumsum(exp(x))) along ``dim``, stable in forward and backward (log-space scans)."""

    saves_out = True

    def forward(self, x, dim):
        self.dim = dim
        out = B.logcumsumexp(x, dim)
        self.saved = (x, out)
        return out

    def backward(self, g):
        x, out = self.saved
        if isinstance(g, np.ndarray):
            return (B.logcumsumexp_grad(x, out, g, self.dim),)
        # create_graph: the same formula on Tensors, its scans recorded through this op
        return (B.logcumsumexp_grad(x, out, g, self.dim, lambda a: Logcumsumexp.apply(a, dim=self.dim)),)


# ---- shape and indexing ------------------------------------------------------------------------

class Reshape(Function):
    traceable = True

    def forward(self, x, shape):
        self.shape = x.shape
        return B.reshape_any(x, shape)

    def backward(self, g):
        return (B.reshape_any(g, self.shape),)


class Permute(Function):
    traceable = True

    def forward(self, x, order):
        self.order = order
        return np.transpose(x, order)

    def backward(self, g):
        return (np.transpose(g, np.argsort(self.order)),)


class Expand(Function):
    """A broadcast view; the engine sums the gradient back to the input shape."""

    traceable = True

    def forward(self, x, shape):
        return np.broadcast_to(x, shape)

    def backward(self, g):
        return (g,)


class SliceGrad:
    """A gradient that is zero outside the places ``index`` (basic indices) of its ``parts`` in an
    array of ``shape``: a sum of slices. A basic slice returns one from its backward; the engine
    adds slices to it without making an array, and makes the one dense gradient when the node
    that was sliced runs. Slices that tile the array (a split's pieces) are copied into it with no
    zero fill; others are added into zeros."""

    __slots__ = ("shape", "parts")

    def __init__(self, shape: tuple[int, ...], index: Any, value: Any) -> None:
        self.shape, self.parts = shape, [(index, value)]

    @property
    def dtype(self) -> Any:
        return self.parts[0][1].dtype

    def plus(self, other: SliceGrad) -> SliceGrad:
        """The sum of both, as one SliceGrad (nothing computed yet)."""
        out = SliceGrad.__new__(SliceGrad)
        out.shape, out.parts = self.shape, self.parts + other.parts
        return out

    def dense(self) -> Any:
        if self._tiles():
            out = B.empty(self.shape, self.dtype)
            for index, value in self.parts:
                out[index] = value
            return out
        out = B.zeros(self.shape, self.dtype)
        self.add_to(out)
        return out

    def _tiles(self) -> bool:
        """Whether the parts are slices along one axis that cover it once, in any order."""
        if len(self.parts) < 2:
            return False
        axis, spans = -1, []
        for index, _ in self.parts:
            if not isinstance(index, tuple) or not index or not isinstance(index[-1], slice) \
                    or any(i != slice(None) for i in index[:-1]) or axis not in (-1, len(index) - 1):
                return False
            axis = len(index) - 1
            if axis >= len(self.shape):
                return False
            start, stop, step = index[-1].indices(self.shape[axis])
            if step != 1:
                return False
            spans.append((start, stop))
        spans.sort()
        end = 0
        for start, stop in spans:
            if start != end or stop <= start:
                return False
            end = stop
        return end == self.shape[axis]

    def add_to(self, dense: Any) -> None:
        """dense[index] += value for each part, in place."""
        for index, value in self.parts:
            part = dense[index]
            if isinstance(part, np.ndarray):
                B.iadd(part, value)
            else:  # a single element: indexing gave a scalar, not a view
                dense[index] = part + value


class GetItem(Function):
    def forward(self, x, index, advanced):
        self.shape, self.index, self.advanced = x.shape, index, advanced
        if advanced and isinstance(index, np.ndarray) and index.dtype.kind in "iu":
            return B.take_rows(x, index)  # rows by integer index (embeddings): into the arena
        out = x[index]
        if isinstance(out, np.generic):  # one element: a 0-d view, as PyTorch's (NumPy gives a copy)
            out = x[(index if isinstance(index, tuple) else (index,)) + (Ellipsis,)]
        return out

    def backward(self, g):
        if not self.advanced and isinstance(g, np.ndarray):
            return (SliceGrad(self.shape, self.index, g),)
        # repeated advanced indices accumulate
        return (_put(_zeros(g, self.shape), self.index, g, self.advanced),)


class IndexPut(Function):
    """``x[index] = v`` as a new value: the gradient of x is zero where v was written."""

    def forward(self, x, v, index, accumulate):
        self.index, self.vshape, self.accumulate = index, np.shape(v), accumulate
        out = B.copy(x)
        if accumulate:
            np.add.at(out, index, v)
        else:
            out[index] = v
        return out

    def backward(self, g):
        gx = g
        if not self.accumulate and self.needs(0):
            gx = _put(_fresh(g), self.index, 0, False)
        gv = None
        if self.needs(1):
            gv = g[self.index]
        return gx, gv


class Cat(Function):
    def forward(self, *xs, dim):
        self.dim = dim
        self.shapes = [x.shape for x in xs]
        nd = max(x.ndim for x in xs)
        # (a 1-d empty input among inputs of more dims, which PyTorch's cat lets join anything,
        # adds nothing: it is left out here and gets an empty gradient of its own shape)
        return B.concatenate([x for x in xs if x.ndim == nd], axis=dim)

    def backward(self, g):
        out, start = [], 0
        for i, s in enumerate(self.shapes):
            if not self.needs(i):
                out.append(None)
            elif len(s) != g.ndim:
                out.append(_zeros(g, s))
            else:
                out.append(g[(slice(None),) * self.dim + (slice(start, start + s[self.dim]),)])
            start += s[self.dim] if len(s) == g.ndim else 0
        return tuple(out)


class Flip(Function):
    def forward(self, x, dims):
        self.dims = dims
        return np.flip(x, dims)

    def backward(self, g):
        return (np.flip(g, self.dims),)


class Roll(Function):
    def forward(self, x, shifts, dims):
        self.shifts, self.dims = shifts, dims
        return B.roll(x, shifts, dims)

    def backward(self, g):
        neg = tuple(-s for s in self.shifts) if isinstance(self.shifts, tuple) else -self.shifts
        return (np.roll(g, neg, self.dims),)


class Pad(Function):
    """Constant padding; ``pads`` is NumPy's ((before, after), ...) per axis (negatives crop)."""

    def forward(self, x, pads, value):
        self.crop = tuple(slice(max(-a, 0) + 0, None if b >= 0 else b) for a, b in pads)
        grow = [(max(a, 0), max(b, 0)) for a, b in pads]
        self.inner = tuple(slice(a, a + n) for (a, _), n in zip(grow, x.shape))
        crop_in = tuple(slice(max(-a, 0), s - max(-b, 0)) for (a, b), s in zip(pads, x.shape))
        self.shape, self.crop_in = x.shape, crop_in
        xc = x[crop_in]
        out = B.full(tuple(n + a + b for n, (a, b) in zip(xc.shape, grow)), value, x.dtype)
        self.inner = tuple(slice(a, a + n) for (a, _), n in zip(grow, xc.shape))
        out[self.inner] = xc
        return out

    def backward(self, g):
        gi = g[self.inner]
        if gi.shape == self.shape:
            return (gi,)
        return (_put(_zeros(g, self.shape), self.crop_in, gi, False),)


class Gather(Function):
    def forward(self, x, dim, index):
        self.shape, self.dim = x.shape, dim
        self.saved = (index,)
        return B.take_along_axis(x, index, dim)

    def backward(self, g):
        (index,) = self.saved
        return (_put(_zeros(g, self.shape), _along(index, self.dim), g, True),)


def _zeros(g: Any, shape: tuple[int, ...]) -> Any:
    """Zeros of ``shape`` in g's dtype: an array, or a Tensor when g is one (create_graph)."""
    if isinstance(g, np.ndarray | np.generic):  # NumPy returns scalars for 0-d results
        return B.zeros(shape, g.dtype)
    return Tensor._make(np.zeros(shape, g.dtype.np))


def _fresh(g: Any) -> Any:
    """A writable copy of an array gradient (g may be shared); Tensors are never written."""
    return B.copy(g) if isinstance(g, np.ndarray) else g


def _put(out: Any, index: Any, v: Any, accumulate: bool) -> Any:
    """``out[index] = v`` (or ``+=`` with repeats accumulating) on an array in place, or as a
    differentiable op on a Tensor."""
    if isinstance(out, np.ndarray) and not isinstance(v, Tensor):
        if accumulate:
            B.add_at(out, index, v)
        else:
            out[index] = v
        return out
    if not isinstance(out, Tensor):
        out = Tensor._make(out)
    return IndexPut.apply(out, v, index=index, accumulate=accumulate)


def _along(index: Any, dim: int) -> tuple[Any, ...]:
    """Full advanced-index tuple addressing ``x[..., index[...], ...]`` along ``dim``."""
    grids = list(np.indices(index.shape, sparse=True))
    grids[dim] = index
    return tuple(grids)


class Scatter(Function):
    """``scatter``/``scatter_add``: write (or add) ``src`` into a copy of x at ``index`` along dim."""

    def forward(self, x, src, dim, index, add):
        self.dim, self.add = dim, add
        self.saved = (index,)
        out = B.copy(x)
        ix = _along(index, dim)
        src = np.broadcast_to(src, index.shape) if np.ndim(src) == 0 else src[tuple(slice(0, n) for n in index.shape)]
        if add:
            np.add.at(out, ix, src)
        else:
            out[ix] = src
        self.srcshape = np.shape(src)
        return out

    def backward(self, g):
        (index,) = self.saved
        ix = _along(index, self.dim)
        gx = g
        if not self.add and self.needs(0):
            gx = _put(_fresh(g), ix, 0, False)
        gs = None
        if self.needs(1):
            gs = _put(_zeros(g, self.parents[1].shape), tuple(slice(0, n) for n in index.shape), g[ix], False)
        return gx, gs


# ---- linear algebra ----------------------------------------------------------------------------

class MatMul(Function):
    """Batched matrix product of operands with at least 2 dims (1-D cases are reshaped around it)."""

    traceable = True

    def forward(self, x, y):
        self.saved = (x, y)
        return B.bmm(x, y)

    def backward(self, g):
        x, y = self.saved
        gx = B.bmm(g, B.swapaxes(y, -1, -2)) if self.needs(0) else None
        gy = B.bmm(B.swapaxes(x, -1, -2), g) if self.needs(1) else None
        return gx, gy


class Einsum(Function):
    def forward(self, *xs, ins, out):
        self.ins, self.out = ins, out
        self.saved = xs
        return B.einsum(",".join(ins) + "->" + out, *xs)

    def backward(self, g):
        xs = self.saved
        grads = []
        for i, sub in enumerate(self.ins):
            if not self.needs(i):
                grads.append(None)
                continue
            others = [s for j, s in enumerate(self.ins) if j != i]
            uniq = "".join(dict.fromkeys(sub))
            have = set(self.out).union(*others) if others else set(self.out)
            target = "".join(c for c in uniq if c in have)
            spec = ",".join([self.out] + others) + "->" + target
            gi = np.einsum(spec, g, *[x for j, x in enumerate(xs) if j != i])
            shape = xs[i].shape
            sizes = dict(zip(sub, shape))
            if target != uniq:  # letters only this operand has: the gradient is broadcast
                idx = tuple(slice(None) if c in target else None for c in uniq)
                gi = np.broadcast_to(gi[idx], tuple(sizes[c] for c in uniq))
            if uniq != sub:  # repeated letters (a diagonal): place the gradient on it
                # by gathering it at each position's letters and masking the off-diagonal ones out
                # (no writes: the same steps record a graph when gi is a Tensor, under create_graph)
                diag = np.zeros(shape, np.bool_)
                np.einsum(sub + "->" + uniq, diag)[...] = True
                at = np.indices(shape, sparse=True)
                gi = B.where(diag, gi[tuple(at[sub.index(c)] for c in uniq)], 0.0)
            grads.append(gi)
        return tuple(grads)


# ---- convolution and pooling -------------------------------------------------------------------
# Images are (N, C, H, W); 1-D ops reshape to H = 1 before calling these. Geometry arrives as
# pairs: kernel k, stride s, dilation d, and pads = (top, bottom, left, right), uneven so that
# padding='same' and ceil_mode pooling need no special case. Each op reads its input through a
# strided view of kernel windows (no copy) and loops over the kh*kw kernel taps, never pixels.

def _padded(x, pads, value=0):
    """x with its last two axes padded by ``pads`` and filled with ``value`` (x itself if no pads)."""
    pt, pb, pl, pr = pads
    if not (pt or pb or pl or pr):
        return x
    n, c, h, w = x.shape
    out = B.empty((n, c, h + pt + pb, w + pl + pr), x.dtype)
    out.fill(value)
    out[:, :, pt:pt + h, pl:pl + w] = x
    return out


def _out_hw(hw, k, s, d, pads):
    """Output size of a window op: (H + pads - d*(k-1) - 1) // s + 1 per axis."""
    return ((hw[0] + pads[0] + pads[1] - d[0] * (k[0] - 1) - 1) // s[0] + 1,
            (hw[1] + pads[2] + pads[3] - d[1] * (k[1] - 1) - 1) // s[1] + 1)


def _windows(xp, k, s, d, out_hw):
    """A read-only view (N, C, kh, kw, Ho, Wo) of every kernel window of padded ``xp``."""
    s0, s1, s2, s3 = xp.strides
    return B.as_strided(xp, (xp.shape[0], xp.shape[1], k[0], k[1], out_hw[0], out_hw[1]),
                        (s0, s1, s2 * d[0], s3 * d[1], s2 * s[0], s3 * s[1]), writeable=False)


def _tap(a, i, j, s, d, out_hw):
    """The strided slice of padded image ``a`` that kernel tap (i, j) covers, one entry per output."""
    h0, w0 = i * d[0], j * d[1]
    return a[:, :, h0:h0 + s[0] * (out_hw[0] - 1) + 1:s[0], w0:w0 + s[1] * (out_hw[1] - 1) + 1:s[1]]


def _im2col(x, k, s, d, pads, out_hw=None):
    """Columns (N, C*kh*kw, Ho*Wo) of zero-padded x (one copy); a matrix product then convolves.
    ``out_hw`` may ask for fewer windows than fit (a transposed conv's output_padding)."""
    out_hw = out_hw or _out_hw(x.shape[2:], k, s, d, pads)
    cols = B.copy(_windows(_padded(x, pads), k, s, d, out_hw))
    return B.reshape(cols, (x.shape[0], x.shape[1] * k[0] * k[1], out_hw[0] * out_hw[1]))


def _col2im(cols, shape, k, s, d, pads, out_hw=None):
    """The adjoint of ``_im2col``: adds every column entry back onto the pixel it was read from
    (one strided add per kernel tap) and returns the (N, C, H, W) image of ``shape``."""
    n, c, h, w = shape
    pt, pb, pl, pr = pads
    out_hw = out_hw or _out_hw((h, w), k, s, d, pads)
    c6 = B.reshape(cols, (n, c, k[0], k[1], out_hw[0], out_hw[1]))
    out = B.zeros((n, c, max(h + pt + pb, (out_hw[0] - 1) * s[0] + d[0] * (k[0] - 1) + 1),
                   max(w + pl + pr, (out_hw[1] - 1) * s[1] + d[1] * (k[1] - 1) + 1)), cols.dtype)
    for i in range(k[0]):
        for j in range(k[1]):
            B.iadd(_tap(out, i, j, s, d, out_hw), c6[:, :, i, j])
    return out[:, :, pt:pt + h, pl:pl + w]


def _unfold(x, k, s, d, pads, out_hw=None):
    """im2col of an array, or the differentiable op on a Tensor (backward under create_graph)."""
    if isinstance(x, Tensor):
        return Unfold.apply(x, k=k, s=s, d=d, pads=pads, out_hw=out_hw)
    return _im2col(x, k, s, d, pads, out_hw)


def _fold(cols, shape, k, s, d, pads, out_hw=None):
    if isinstance(cols, Tensor):
        return Fold.apply(cols, shape=shape, k=k, s=s, d=d, pads=pads, out_hw=out_hw)
    return _col2im(cols, shape, k, s, d, pads, out_hw)


class Unfold(Function):
    """Sliding blocks (im2col): (N, C, H, W) -> (N, C*kh*kw, L), as ``F.unfold``."""

    def forward(self, x, k, s, d, pads, out_hw=None):
        self.shape, self.geom = x.shape, (k, s, d, pads, out_hw)
        return _im2col(x, k, s, d, pads, out_hw)

    def backward(self, g):
        return (_fold(g, self.shape, *self.geom),)


class Fold(Function):
    """Sum sliding blocks back into an image (col2im), as ``F.fold``; the adjoint of Unfold."""

    def forward(self, cols, shape, k, s, d, pads, out_hw=None):
        self.geom = (k, s, d, pads, out_hw)
        return _col2im(cols, shape, k, s, d, pads, out_hw)

    def backward(self, g):
        return (_unfold(g, *self.geom),)


class Conv2d(Function):
    """Cross-correlation of x (N, C, H, W) with w (O, C/groups, kh, kw) and optional bias b (O,):
    im2col, then one batched matrix product laid out so its result already is (N, O, Ho, Wo)."""

    def forward(self, x, w, b, s, d, pads, groups):
        n, o, k = x.shape[0], w.shape[0], w.shape[2:]
        kk = w.shape[1] * k[0] * k[1]
        ho, wo = _out_hw(x.shape[2:], k, s, d, pads)
        cols = _im2col(x, k, s, d, pads)
        out = B.matmul(B.reshape(w, (groups, o // groups, kk)), B.reshape(cols, (n, groups, kk, ho * wo)))
        out = B.reshape(out, (n, o, ho, wo))  # (N, G, O/G, L) is (N, O, Ho, Wo) in memory
        if b is not None:
            out += B.reshape(b, (o, 1, 1))
        self.geom, self.groups = (k, s, d, pads), groups
        self.saved = (x, w, cols)
        return out

    def backward(self, g):
        x, w, cols = self.saved
        k, s, d, pads = self.geom
        n, o, ho, wo = g.shape
        grp, kk = self.groups, w.shape[1] * k[0] * k[1]
        g4 = B.reshape(g, (n, grp, o // grp, ho * wo))
        gx = gw = gb = None
        if self.needs(0):
            wt = B.swapaxes(B.reshape(w, (grp, o // grp, kk)), 1, 2)  # (G, kk, O/G)
            gx = _fold(B.reshape(B.matmul(wt, g4), (n, -1, ho * wo)), x.shape, k, s, d, pads)
        if self.needs(1):
            if isinstance(g, Tensor):  # create_graph: the columns must be a function of x
                cols = _unfold(x, k, s, d, pads)
            ct = B.swapaxes(B.reshape(cols, (n, grp, kk, ho * wo)), 2, 3)  # (N, G, L, kk)
            gw = B.reshape(B.sum(B.matmul(g4, ct), axis=0), w.shape)
        if self.needs(2):
            gb = B.sum(g, axis=(0, 2, 3))
        return gx, gw, gb


class ConvTranspose2d(Function):
    """Transposed convolution, x (N, C_in, H, W) with w (C_in, C_out/groups, kh, kw): the map
    Conv2d's backward sends to its input, i.e. one matrix product, then col2im into ``out_hw``."""

    def forward(self, x, w, b, s, d, pads, groups, out_hw):
        n, cin, h, wd = x.shape
        og, k = w.shape[1], w.shape[2:]
        cg, kk = cin // groups, og * k[0] * k[1]
        wt = B.swapaxes(B.reshape(w, (groups, cg, kk)), 1, 2)  # (G, kk, C_in/G)
        cols = B.matmul(wt, B.reshape(x, (n, groups, cg, h * wd)))  # (N, G, kk, H*W)
        out = _col2im(B.reshape(cols, (n, groups * kk, h * wd)), (n, groups * og, *out_hw), k, s, d, pads,
                      (h, wd))
        if b is not None:
            out += B.reshape(b, (-1, 1, 1))
        self.geom, self.groups = (k, s, d, pads), groups
        self.saved = (x, w)
        return out

    def backward(self, g):
        x, w = self.saved
        k, s, d, pads = self.geom
        n, cin, h, wd = x.shape
        grp = self.groups
        cg, kk = cin // grp, w.shape[1] * k[0] * k[1]
        gcols = B.reshape(_unfold(g, k, s, d, pads, (h, wd)), (n, grp, kk, h * wd))
        gx = gw = gb = None
        if self.needs(0):
            gx = B.reshape(B.matmul(B.reshape(w, (grp, cg, kk)), gcols), x.shape)
        if self.needs(1):
            x4 = B.reshape(x, (n, grp, cg, h * wd))
            gw = B.reshape(B.sum(B.matmul(x4, B.swapaxes(gcols, 2, 3)), axis=0), w.shape)
        if self.needs(2):
            gb = B.sum(g, axis=(0, 2, 3))
        return gx, gw, gb


def _scatter_taps(v, dtype, shape, k, s, d, pads, out_hw):
    """Route per-tap values v(t) (each (N, C, Ho, Wo)) back to the pixels tap t read; when
    windows cannot overlap (stride >= window) they are written instead of added."""
    n, c, h, w = shape
    pt, pb, pl, pr = pads
    out = B.zeros((n, c, h + pt + pb, w + pl + pr), dtype)
    overlap = s[0] < d[0] * (k[0] - 1) + 1 or s[1] < d[1] * (k[1] - 1) + 1
    for t in range(k[0] * k[1]):
        i, j = divmod(t, k[1])
        dst = _tap(out, i, j, s, d, out_hw)
        vt = v(t)
        if overlap:
            B.iadd(dst, vt)
        else:
            B.copyto(dst, vt)
    return out[:, :, pt:pt + h, pl:pl + w]


class MaxPool2d(Function):
    """Max over each window; its gradient goes to the first maximum of the window, as PyTorch's.
    ``sink``, when given a list, receives the argmax as flat indices into each input plane."""

    def forward(self, x, k, s, d, pads, out_hw, sink=None):
        self.shape, self.geom = x.shape, (k, s, d, pads, out_hw)
        self.pair = k == s == (2, 2) and d == (1, 1) and not any(pads)
        if self.pair:
            out = self._forward_pairs(x, out_hw)
        else:
            low = -np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).min
            v = _windows(_padded(x, pads, low), k, s, d, out_hw)
            out = B.copy(v[:, :, 0, 0])
            arg = B.zeros(out.shape, np.uint8 if k[0] * k[1] < 256 else np.int32)  # the winning tap
            for t in range(1, k[0] * k[1]):
                tap = v[:, :, t // k[1], t % k[1]]
                np.putmask(arg, B.greater(tap, out), t)  # strict: the first maximum wins ties
                np.maximum(out, tap, out=out)  # and NaN propagates, as in PyTorch
            self.saved = (arg,)
        if sink is not None:
            tap = self._arg().astype(np.int64)
            rows = np.arange(out_hw[0]).reshape(-1, 1) * s[0] + (tap // k[1]) * d[0] - pads[0]
            cols = np.arange(out_hw[1]) * s[1] + (tap % k[1]) * d[1] - pads[2]
            sink.append(rows * x.shape[3] + cols)
        return out

    def _forward_pairs(self, x, out_hw):
        """The common 2x2, stride-2 pool as two pairwise maxima: first along W, then along H."""
        n, c = x.shape[:2]
        ho, wo = out_hw
        if x.shape[2:] != (2 * ho, 2 * wo):
            x = x[:, :, :2 * ho, :2 * wo]
        v = B.reshape(x, (n, c, ho, 2, wo, 2))
        left, right = v[..., 0], v[..., 1]
        m = B.maximum(left, right)  # (N, C, Ho, 2, Wo)
        top, bottom = m[:, :, :, 0], m[:, :, :, 1]
        # the right/bottom element wins only when strictly greater: ties go to the first maximum
        self.saved = (B.greater(right, left), B.greater(bottom, top))
        return B.maximum(top, bottom)

    def _arg(self):
        """The winning tap of each window (0 .. kh*kw-1, row-major)."""
        if not self.pair:
            return self.saved[0]
        wsel, hsel = self.saved
        return B.add(B.multiply(hsel, 2), B.where(hsel, wsel[:, :, :, 1], wsel[:, :, :, 0])).astype(np.uint8)

    def backward(self, g):
        k, s, d, pads, out_hw = self.geom
        if isinstance(g, Tensor):  # create_graph: one-hot columns folded back, differentiably
            nk = k[0] * k[1]
            hot = B.equal(np.expand_dims(self._arg(), 2), np.arange(nk).reshape(nk, 1, 1)).astype(g.dtype.np)
            cols = g.unsqueeze(2) * Tensor._make(hot)
            return (Fold.apply(cols.reshape(g.shape[0], -1, out_hw[0] * out_hw[1]), shape=self.shape,
                               k=k, s=s, d=d, pads=pads),)
        if not self.pair:
            arg = self.saved[0]
            # multiplying by the mask is several times faster than np.where here
            return (_scatter_taps(lambda t: B.multiply(g, B.equal(arg, t)), g.dtype, self.shape, k, s, d, pads,
                                  out_hw),)
        wsel, hsel = self.saved
        n, c, h, w = self.shape
        ho, wo = out_hw
        gh = B.empty((n, c, ho, 2, wo), g.dtype)  # the gradient routed to the winning row ...
        np.multiply(g, hsel, out=gh[:, :, :, 1])
        np.multiply(g, B.logical_not(hsel), out=gh[:, :, :, 0])
        gx = B.empty((n, c, ho, 2, wo, 2), g.dtype)  # ... then to the winning column
        np.multiply(gh, wsel, out=gx[..., 1])
        np.multiply(gh, B.logical_not(wsel), out=gx[..., 0])
        gx = B.reshape(gx, (n, c, 2 * ho, 2 * wo))
        if (h, w) != (2 * ho, 2 * wo):  # odd sizes: the last row/column was never read
            gx = _put(_zeros(gx, self.shape), (slice(None), slice(None), slice(0, 2 * ho), slice(0, 2 * wo)),
                      gx, False)
        return (gx,)


class AvgPool2d(Function):
    """Window sums divided by ``div`` (a number, or per-output (Ho, Wo) counts); zero padding."""

    def forward(self, x, k, s, pads, out_hw, div):
        one = (1, 1)
        v = _windows(_padded(x, pads), k, s, one, out_hw)
        out = B.copy(v[:, :, 0, 0])
        for t in range(1, k[0] * k[1]):
            B.iadd(out, v[:, :, t // k[1], t % k[1]])
        out /= div
        self.shape, self.geom, self.div = x.shape, (k, s, one, pads, out_hw), div
        return out

    def backward(self, g):
        k, s, d, pads, out_hw = self.geom
        gd = B.divide(g, self.div)
        if isinstance(g, Tensor):
            nk = k[0] * k[1]
            cols = gd.unsqueeze(2).expand(g.shape[0], g.shape[1], nk, *out_hw)
            return (Fold.apply(cols.reshape(g.shape[0], -1, out_hw[0] * out_hw[1]), shape=self.shape,
                               k=k, s=s, d=d, pads=pads),)
        return (_scatter_taps(lambda t: gd, gd.dtype, self.shape, k, s, d, pads, out_hw),)


# ---- recurrent layers --------------------------------------------------------------------------
# One primitive per layer and direction runs the whole time loop in NumPy: for RNN and GRU the
# input projections xp (T, B, G) of every step come in precomputed (one matmul per layer,
# outside), so a step is one (B, H) x (H, G) product plus pointwise work; LSTM puts x_t and the
# bias into that product instead. The graph has one node instead of ~15 per step. Backward is
# backpropagation through time over the saved activations; the weights' gradients are one
# matrix product over all steps at the end.

_NO_DOUBLE = ("double backward through a fused RNN/LSTM/GRU layer is not supported "
              "(create_graph=True); unroll RNNCell/LSTMCell/GRUCell in a loop instead")


def _steps(t_len, reverse):
    return range(t_len - 1, -1, -1) if reverse else range(t_len)


def _prev_states(out, h0, reverse):
    """(T, B, H) state each step started from: h0, then the outputs in processing order."""
    t_len = out.shape[0]
    prev = B.empty(out.shape, out.dtype)
    if reverse:
        prev[:t_len - 1] = out[1:]
        prev[t_len - 1] = h0
    else:
        prev[1:] = out[:t_len - 1]
        prev[0] = h0
    return prev


def _sigmoid_(a):
    """In-place logistic sigmoid, as 0.5 * (1 + tanh(x / 2)), which never overflows."""
    a *= 0.5
    np.tanh(a, out=a)
    a += 1
    a *= 0.5


class RNNLayer(Function):
    """Elman RNN over a sequence: h_t = act(xp_t + h_{t-1} W_hh^T); returns the (T, B, H) outputs."""

    def forward(self, xp, w_hh, h0, relu, reverse):
        t_len = xp.shape[0]
        out = B.empty((t_len, *h0.shape), xp.dtype)
        whT = B.copy(B.transpose(w_hh))  # contiguous: a faster GEMM per step
        h = h0
        for t in _steps(t_len, reverse):
            a = out[t]
            np.matmul(h, whT, out=a)
            a += xp[t]
            if relu:
                np.maximum(a, 0, out=a)
            else:
                np.tanh(a, out=a)
            h = a
        self.relu, self.reverse = relu, reverse
        self.saved = (w_hh, h0, out)
        return out

    def backward(self, g):
        if isinstance(g, Tensor):
            raise RuntimeError(_NO_DOUBLE)
        w_hh, h0, out = self.saved
        da = B.empty(out.shape, out.dtype)
        dh = B.zeros(h0.shape, out.dtype)
        for t in _steps(out.shape[0], not self.reverse):
            d = da[t]
            np.add(g[t], dh, out=d)
            if self.relu:
                d *= out[t] > 0
            else:
                d *= 1 - out[t] * out[t]
            dh = B.matmul(d, w_hh)
        flat = B.reshape(da, (-1, da.shape[2]))
        gw = B.matmul(B.transpose(flat), B.reshape(_prev_states(out, h0, self.reverse), flat.shape))
        return da, gw, dh


class LSTMLayer(Function):
    """LSTM over a sequence x (T, B, I) with PyTorch's gate order (i, f, g, o); the biases may be
    None. Returns (T + 1, B, H): the T outputs, then the final cell state.

    Each step is one product [h_{t-1}, x_t, 1] (B, K) @ W (K, 4H), W = [W_hh^T; W_ih^T; b_ih + b_hh]:
    the input projection and both biases ride in the recurrent GEMM (no separate (T, B, 4H)
    array to read back and add each step), and the weight gradients are one product over all
    steps. The i, f, o columns of W are halved (exact: a power of two) because
    sigmoid(x) = (1 + tanh(x/2)) / 2: one tanh activates all four gates, and one multiply-add
    maps the i, f, o parts to (1 + tanh) / 2; every op is a whole, contiguous (B, 4H) block."""

    def forward(self, x, w_ih, w_hh, b_ih, b_hh, h0, c0, reverse):
        t_len, batch, n_in = x.shape
        hid = h0.shape[1]
        h2, h3 = 2 * hid, 3 * hid
        k = hid + n_in + (b_ih is not None)
        half = np.ones(4 * hid, x.dtype)
        half[:h2] = half[h3:] = 0.5
        shift = np.subtract(1, half)  # 0.5 for i, f, o; 0 for g
        w = B.empty((k, 4 * hid), x.dtype)
        np.multiply(B.transpose(w_hh), half, out=w[:hid])
        np.multiply(B.transpose(w_ih), half, out=w[hid:hid + n_in])
        hx = B.empty((t_len, batch, k), x.dtype)  # step t's [h_{t-1}, x_t, 1], saved for backward
        hx[:, :, hid:hid + n_in] = x
        if b_ih is not None:
            np.add(b_ih, b_hh, out=w[-1])
            w[-1] *= half
            hx[:, :, -1] = 1
        steps = _steps(t_len, reverse)
        hx[steps[0], :, :hid] = h0
        out = B.empty((t_len + 1, batch, hid), x.dtype)
        gates = B.empty((t_len, batch, 4 * hid), x.dtype)  # activated gates, saved for backward
        cells = B.empty((t_len, batch, hid), x.dtype)
        tanh_c = B.empty((t_len, batch, hid), x.dtype)
        tmp = np.empty((batch, hid), x.dtype)
        mm, add, mul, tanh = np.matmul, np.add, np.multiply, np.tanh
        c = c0
        step = -1 if reverse else 1
        for t in steps:
            z, cn, th, o = gates[t], cells[t], tanh_c[t], out[t]
            mm(hx[t], w, out=z)
            tanh(z, out=z)
            mul(z, half, out=z)
            add(z, shift, out=z)
            mul(z[:, hid:h2], c, out=cn)  # c' = f c + i g
            mul(z[:, :hid], z[:, h2:h3], out=tmp)
            add(cn, tmp, out=cn)
            tanh(cn, out=th)
            mul(z[:, h3:], th, out=o)  # h' = o tanh(c')
            if 0 <= t + step < t_len:
                hx[t + step, :, :hid] = o
            c = cn
        out[t_len] = c
        self.reverse = reverse
        self.saved = (w_ih, w_hh, c0, hx, out, gates, cells, tanh_c)
        return out

    def backward(self, g):
        if isinstance(g, Tensor):
            raise RuntimeError(_NO_DOUBLE)
        w_ih, w_hh, c0, hx, out, gates, cells, tanh_c = self.saved
        t_len, batch, k = hx.shape
        hid, n_in = c0.shape[1], w_ih.shape[1]
        # everything that does not depend on the recurrence first, so that the step loop is only
        # dh -> dc -> gate gradients -> dh through W_hh; in blocks of steps whose arrays stay
        # in the CPU cache across the dozen passes (whole arrays: ~3% slower per training step)
        dz = B.empty(gates.shape, gates.dtype)
        to_c = B.empty(tanh_c.shape, gates.dtype)
        for lo in range(0, t_len, _LSTM_BLOCK):
            _lstm_factors(gates, cells, tanh_c, c0, lo, min(lo + _LSTM_BLOCK, t_len), self.reverse, dz, to_c)
        z4 = B.reshape(dz, (t_len, batch, 4, hid))
        f = B.reshape(gates, z4.shape)[:, :, 1]
        dh = B.zeros((batch, hid), gates.dtype)
        dc = B.copy(g[t_len])
        tmp = np.empty((batch, hid), gates.dtype)
        for t in _steps(t_len, not self.reverse):
            dh += g[t]
            np.multiply(dh, to_c[t], out=tmp)
            dc += tmp
            zt = z4[t]
            np.multiply(zt[:, :3], dc[:, None, :], out=zt[:, :3])
            np.multiply(zt[:, 3], dh, out=zt[:, 3])
            dc *= f[t]
            np.matmul(dz[t], w_hh, out=dh)
        flat = B.reshape(dz, (-1, 4 * hid))
        gw = B.matmul(B.transpose(flat), B.reshape(hx, (-1, k)))  # (4H, K): [dW_hh, dW_ih, db]
        gb = gw[:, -1] if k > hid + n_in else None
        gx = B.reshape(B.matmul(flat, w_ih), (t_len, batch, n_in)) if self.needs(0) else None
        return gx, gw[:, hid:hid + n_in], gw[:, :hid], gb, gb, dh, dc


_LSTM_BLOCK = 8  # time steps per block of the backward's step-independent passes


def _lstm_factors(gates, cells, tanh_c, c0, lo, hi, reverse, dz, to_c):
    """For steps lo..hi-1: dz = each gate's factor, its derivative (s (1 - s) for i, f, o;
    1 - g^2 for g) times what the gate multiplies (g, c_{t-1}, i, tanh(c_t)), which the step
    loop scales by dc (i, f, g) or dh (o); to_c = d c_t / d h_t = o (1 - tanh(c_t)^2). Written
    in place: passes over memory, not temporaries, are what this costs."""
    t_len, hid = gates.shape[0], c0.shape[1]
    h2, h3 = 2 * hid, 3 * hid
    ga, d = gates[lo:hi], dz[lo:hi]
    g4, d4 = B.reshape(ga, (*ga.shape[:2], 4, hid)), B.reshape(d, (*d.shape[:2], 4, hid))
    np.multiply(ga, ga, out=d)
    np.subtract(ga[..., :h2], d[..., :h2], out=d[..., :h2])
    np.subtract(ga[..., h3:], d[..., h3:], out=d[..., h3:])
    np.subtract(1, d[..., h2:h3], out=d[..., h2:h3])
    np.multiply(d4[:, :, 0], g4[:, :, 2], out=d4[:, :, 0])
    # c_{t-1} is the cell of the step processed before (t + 1 when reversed), c0 for the first
    first = t_len - 1 if reverse else 0
    a, b, shift = (lo, min(hi, t_len - 1), 1) if reverse else (max(lo, 1), hi, -1)
    np.multiply(d4[a - lo:b - lo, :, 1], cells[a + shift:b + shift], out=d4[a - lo:b - lo, :, 1])
    if lo <= first < hi:
        np.multiply(d4[first - lo, :, 1], c0, out=d4[first - lo, :, 1])
    np.multiply(d4[:, :, 2], g4[:, :, 0], out=d4[:, :, 2])
    th, tc = tanh_c[lo:hi], to_c[lo:hi]
    np.multiply(d4[:, :, 3], th, out=d4[:, :, 3])
    np.multiply(th, th, out=tc)
    np.subtract(1, tc, out=tc)
    np.multiply(tc, g4[:, :, 3], out=tc)


class GRULayer(Function):
    """GRU over a sequence with PyTorch's gate order (r, z, n); xp holds b_ih, and b_hh stays
    inside (n = tanh(xp_n + r * (h W_hn^T + b_hn))). Returns the (T, B, H) outputs."""

    def forward(self, xp, w_hh, b_hh, h0, reverse):
        t_len, hid = xp.shape[0], h0.shape[1]
        out = B.empty((t_len, *h0.shape), xp.dtype)
        gates = B.empty(xp.shape, xp.dtype)  # activated r, z, n
        hn = B.empty((t_len, *h0.shape), xp.dtype)  # h W_hn^T + b_hn, saved for backward
        whT = B.copy(B.transpose(w_hh))  # contiguous: a faster GEMM per step
        h = h0
        for t in _steps(t_len, reverse):
            hp = B.matmul(h, whT)
            if b_hh is not None:
                hp += b_hh
            z = gates[t]
            np.add(xp[t, :, :2 * hid], hp[:, :2 * hid], out=z[:, :2 * hid])
            _sigmoid_(z[:, :2 * hid])
            hn[t] = hp[:, 2 * hid:]
            n = z[:, 2 * hid:]
            np.multiply(z[:, :hid], hn[t], out=n)
            n += xp[t, :, 2 * hid:]
            np.tanh(n, out=n)
            o = out[t]
            np.subtract(h, n, out=o)  # h' = n + u * (h - n)
            o *= z[:, hid:2 * hid]
            o += n
            h = o
        self.reverse = reverse
        self.saved = (w_hh, h0, out, gates, hn)
        return out

    def backward(self, g):
        if isinstance(g, Tensor):
            raise RuntimeError(_NO_DOUBLE)
        w_hh, h0, out, gates, hn = self.saved
        t_len, hid = gates.shape[0], h0.shape[1]
        prev = _prev_states(out, h0, self.reverse)
        g3 = B.reshape(gates, (*gates.shape[:2], 3, hid))
        r, u, n = g3[:, :, 0], g3[:, :, 1], g3[:, :, 2]
        # the factors that do not depend on the recurrence, for all steps at once
        to_n = B.multiply(B.subtract(1, u), B.subtract(1, B.multiply(n, n)))  # dh -> n's input
        to_r = B.multiply(hn, B.multiply(r, B.subtract(1, r)))  # n's input -> r's input
        to_u = B.multiply(B.subtract(prev, n), B.multiply(u, B.subtract(1, u)))  # dh -> u's input
        dx = B.empty(g3.shape, gates.dtype)  # gradient of the input projections
        dhp = B.empty(g3.shape, gates.dtype)  # gradient of h W_hh^T + b_hh
        dh = B.zeros(h0.shape, gates.dtype)
        for t in _steps(t_len, not self.reverse):
            dh += g[t]
            dn = dx[t, :, 2]
            np.multiply(dh, to_n[t], out=dn)
            np.multiply(dn, r[t], out=dhp[t, :, 2])
            np.multiply(dn, to_r[t], out=dhp[t, :, 0])
            np.multiply(dh, to_u[t], out=dhp[t, :, 1])
            dh *= u[t]
            dh += B.matmul(B.reshape(dhp[t], (-1, 3 * hid)), w_hh)
        dx[:, :, :2] = dhp[:, :, :2]
        flat = B.reshape(dhp, (-1, 3 * hid))
        gw = B.matmul(B.transpose(flat), B.reshape(prev, (-1, hid)))
        gb = B.sum(flat, axis=0) if self.needs(2) else None
        return B.reshape(dx, gates.shape), gw, gb, dh


# ---- layers, losses and normalization ----------------------------------------------------------

class Linear(Function):
    """x @ w.T + b with x (..., in), w (out, in), b (out,) or None: one node, the leading dims
    folded into one GEMM, and the weight gradient g.T @ x computed directly in w's layout."""

    traceable = True

    def forward(self, x, w, b):
        self.saved = (x, w)
        flat = x.ndim == 2  # (the usual batch of rows: no reshapes to make)
        out = B.matmul(x if flat else B.reshape(x, (-1, x.shape[-1])), B.transpose(w))  # (N, out)
        if b is not None:
            B.iadd(out, b)  # out is fresh: add the bias in place
        return out if flat else B.reshape(out, x.shape[:-1] + (w.shape[0],))

    def backward(self, g):
        x, w = self.saved
        e = self.edges
        flat = x.ndim == 2
        g2 = g if flat else B.reshape(g, (-1, g.shape[-1]))  # (N, out)
        gx = None if e[0] is None else B.matmul(g2, w) if flat else B.reshape(B.matmul(g2, w), x.shape)
        gw = None if e[1] is None else B.matmul(B.transpose(g2), x if flat else B.reshape(x, (-1, x.shape[-1])))
        gb = None if e[2] is None else B.sum(g2, axis=0)
        return gx, gw, gb


class LayerNorm(Function):
    """(x - mean) / sqrt(var + eps) over the last ``k`` axes, times ``w`` plus ``b`` (either may
    be None). One node instead of a dozen. Backward uses the saved normalised input and 1/std,
    and writes the input gradient over the normalised input (recomputed from x if a retained graph
    is walked again); under create_graph it recomputes them from x with differentiable ops, so
    higher-order gradients stay exact."""

    def forward(self, x, w, b, k, eps):
        self.axes = tuple(range(x.ndim - k, x.ndim))
        n = math.prod(x.shape[x.ndim - k:])
        self.n, self.inv_n, self.eps = n, 1.0 / max(n, 1), eps
        # rows of n entries: row sums are matrix-vector products, row dot products einsums, and
        # the full-size temporaries are updated in place (two allocations instead of five)
        xhat, rstd = self._normalized(x, n)
        self.saved = (x, w, xhat, rstd)
        if w is None and b is None:
            return B.reshape(B.copy(xhat), x.shape)  # the saved xhat must not be the output
        out = B.multiply(xhat, B.reshape(w, (n,))) if w is not None else B.copy(xhat)
        if b is not None:
            B.iadd(out, B.reshape(b, (n,)))
        return B.reshape(out, x.shape)

    def _normalized(self, x, n):
        """(xhat, rstd): x as rows of n entries, normalised, and the rows' 1/std as (N, 1)."""
        x2 = B.reshape(x, (-1, n))
        xc = B.subtract(x2, B.multiply(B.reduce(B.add, x2, (1,), True), self.inv_n))
        var = B.multiply(B.rowdot(xc, xc), self.inv_n)
        rstd = B.divide(1.0, B.sqrt(B.add(var, self.eps)))
        return B.imul(xc, rstd), rstd

    def backward(self, g):
        x, w, xhat, rstd = self.saved
        axes, inv_n = self.axes, self.inv_n
        if xhat is None and not isinstance(g, Tensor):  # a second backward (retained graph): the first used xhat up
            xhat, rstd = self._normalized(x, self.n)
        if isinstance(g, Tensor):  # create_graph: the statistics as differentiable functions of x
            xc = B.subtract(x, B.multiply(B.sum(x, axis=axes, keepdims=True), inv_n))
            var = B.multiply(B.sum(B.multiply(xc, xc), axis=axes, keepdims=True), inv_n)
            rstd = B.divide(1.0, B.sqrt(B.add(var, self.eps)))
            xhat = B.multiply(xc, rstd)
            gx = gw = None
            if self.needs(0):
                gy = B.multiply(g, w) if w is not None else g
                m1 = B.multiply(B.sum(gy, axis=axes, keepdims=True), inv_n)
                m2 = B.multiply(B.sum(B.multiply(gy, xhat), axis=axes, keepdims=True), inv_n)
                gx = B.multiply(B.subtract(B.subtract(gy, m1), B.multiply(xhat, m2)), rstd)
            if self.needs(1):
                gw = B.multiply(g, xhat)  # summed over the leading axes by the engine
            return gx, gw, (g if self.needs(2) else None)
        n = xhat.shape[1]
        g2 = B.reshape(g, (-1, n))
        if g2.dtype != xhat.dtype:  # (a gradient handed in another dtype: computed in the input's, as PyTorch)
            g2 = B.cast(g2, xhat.dtype)
        need = (self.needs(0), self.needs(1), self.needs(2))
        if need[0]:
            # xhat is this node's own array, not needed after this: the input gradient is written
            # over it, block by block in cache (a retained graph recomputes it from x)
            self.saved = (x, w, None, rstd)
        gx, gw, gb = B.layer_norm_backward_(g2, xhat, rstd, None if w is None else B.reshape(w, (n,)), inv_n, need)
        return (None if gx is None else B.reshape(gx, x.shape), None if gw is None else B.reshape(gw, w.shape),
                None if gb is None else B.reshape(gb, self.parents[2].shape))


class NllLoss(Function):
    """Negative log-likelihood: the entries of ``x`` (class dim 1, or 0 when 1-D) picked by the
    class indices ``t``, times the class ``weight``, with ``ignore_index`` targets left out;
    negated, and summed and averaged as ``reduction`` says. Cross-entropy is log_softmax then this:
    one node, no one-hot matrix. The backward needs only the indices, so it is exact under
    create_graph too."""

    def forward(self, x, t, weight, ignore_index, reduction):
        cdim = 1 if x.ndim > 1 else 0
        c = x.shape[cdim]
        t = B.asarray(t, np.int64)
        valid = B.not_equal(t, ignore_index)
        ignoring = not valid.all()
        tt = B.where(valid, t, 0) if ignoring else t
        if tt.size:
            lo, hi = tt.min(), tt.max()
            if lo < 0 or hi >= c:
                raise IndexError(f"Target {int(lo if lo < 0 else hi)} is out of bounds.")
        if cdim:
            grids = B.indices(tt.shape, sparse=True)
            index = (grids[0], tt) + tuple(grids[1:])  # picks x[n, t[n, *d], *d]
        else:
            index = (tt,)
        w = None
        if weight is not None or ignoring:
            w = B.asarray(weight[tt], x.dtype) if weight is not None else B.ones(tt.shape, x.dtype)
            if ignoring:
                w = B.asarray(B.where(valid, w, 0), x.dtype)
        if reduction == "none":
            denom = None
        elif reduction == "sum":
            denom = 1.0
        else:
            denom = float(w.sum()) if w is not None else float(tt.size)
        self.shape, self.index, self.weight, self.denom = x.shape, index, w, denom
        picked = B.take(x, index)
        if w is not None:
            picked = B.multiply(picked, w)
        if denom is None:
            return B.negative(picked)
        return B.asarray(B.reduce(B.add, picked, None) * self._scale(), x.dtype)

    def _scale(self) -> float:
        return -1.0 / self.denom if self.denom else float("nan")  # PyTorch: nan when all are ignored

    def backward(self, g):
        v = B.negative(g) if self.denom is None else B.multiply(g, self._scale())
        if self.weight is not None:
            v = B.multiply(v, self.weight)
        return (_put(_zeros(g, self.shape), self.index, v, False),)


class BinaryCrossEntropy(Function):
    """Elementwise -(t log x + (1 - t) log(1 - x)) with each log clamped at -100, as PyTorch; its
    input gradient is PyTorch's (x - t) / max(x (1 - x), 1e-12), finite where x is 0 or 1 (the
    composite of log and clamp would divide 0 by 0 there)."""

    def forward(self, x, t):
        self.saved = (x, t)
        with B.errstate(divide="ignore"):
            lx = B.maximum(B.log(x), -100.0)
            l1x = B.maximum(B.log(B.subtract(1, x)), -100.0)
        return B.negative(B.add(B.multiply(t, lx), B.multiply(B.subtract(1, t), l1x)))

    def backward(self, g):
        x, t = self.saved
        gx = gt = None
        if self.needs(0):
            gx = B.multiply(g, B.divide(B.subtract(x, t), B.maximum(B.multiply(x, B.subtract(1, x)), 1e-12)))
        if self.needs(1):
            with B.errstate(divide="ignore"):
                gt = B.multiply(g, B.subtract(B.maximum(B.log(B.subtract(1, x)), -100.0),
                                              B.maximum(B.log(x), -100.0)))
        return gx, gt


class Gelu(Function):
    """x * Phi(x), exact ('none') or with the tanh approximation ('tanh'): one blocked pass computes
    the output and, when a gradient is wanted (``deriv``), the derivative, so backward is one
    multiply. Under create_graph the derivative is rebuilt from x with differentiable ops."""

    def forward(self, x, approximate, deriv):
        out, d = B.gelu(x, approximate, deriv)
        self.approximate = approximate
        self.saved = (x, d)
        return out

    def backward(self, g):
        x, d = self.saved
        if isinstance(g, Tensor):
            return (B.multiply(g, _gelu_deriv(x, self.approximate)),)
        if d is None:  # a second backward through a retained graph: the first used d up
            d = B.gelu(x, self.approximate, True)[1]
        elif type(g) is np.ndarray and g.shape == d.shape and g.dtype == d.dtype:
            # d is this node's own array: the gradient is written into it (its memory is still
            # warm from forward; a fresh array's is not), so d is gone after this
            self.saved = (x, None)
            return (B.imul(d, g),)
        return (B.multiply(g, d),)


def _gelu_deriv(x: Any, approximate: str) -> Any:
    """d/dx of x Phi(x) from Tensor ops (so it can be differentiated again)."""
    if approximate == "none":
        phi = ((x * (1 / math.sqrt(2))).erf() + 1) * 0.5
        return phi + x * (x * x * -0.5).exp() * (1 / math.sqrt(2 * math.pi))
    c = math.sqrt(2 / math.pi)
    t = ((x + x * x * x * 0.044715) * c).tanh()
    return (t + 1) * 0.5 + x * (1 - t * t) * (x * x * (0.5 * c * 3 * 0.044715) + 0.5 * c)


# ---- custom ops --------------------------------------------------------------------------------

class FunctionCtx:
    """The ``ctx`` a custom Function's forward and backward receive."""

    def save_for_backward(self, *tensors: Any) -> None:
        self.saved_tensors = tensors

    def mark_non_differentiable(self, *tensors: Any) -> None:
        self.non_differentiable = tensors

    def set_materialize_grads(self, value: bool) -> None:
        self.materialize_grads = value


class _CustomNode(Function):
    """Graph node for a user ``autograd.Function``: calls its backward with Tensors."""

    fn: Any
    ctx: FunctionCtx

    def backward(self, g):
        wrap = not isinstance(g, Tensor)
        if wrap:
            g = Tensor._make(g)
        grads = self.fn.backward(self.ctx, g)
        if not isinstance(grads, tuple):
            grads = (grads,)
        if len(grads) != len(self.parents):
            raise RuntimeError(f"function {self.fn.__name__}.backward returned {len(grads)} gradients, "
                               f"expected {len(self.parents)} (one per forward input)")
        return tuple(gr._data if wrap and isinstance(gr, Tensor) else gr for gr in grads)

    def name(self) -> str:
        return self.fn.__name__ + "Backward"


class CustomFunction:
    """Define an op by subclassing, as with ``torch.autograd.Function``.

    >>> class Square(autograd.Function):
    ...     @staticmethod
    ...     def forward(ctx, x): ctx.save_for_backward(x); return x * x
    ...     @staticmethod
    ...     def backward(ctx, g): (x,) = ctx.saved_tensors; return 2 * x * g
    """

    @staticmethod
    def forward(ctx: FunctionCtx, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("subclasses of autograd.Function must define forward")

    @staticmethod
    def backward(ctx: FunctionCtx, *grads: Any) -> Any:
        raise NotImplementedError("subclasses of autograd.Function must define backward")

    @classmethod
    def apply(cls, *args: Any, **kwargs: Any) -> Any:
        from .autograd import no_grad

        ctx = FunctionCtx()
        with no_grad():
            out = cls.forward(ctx, *args, **kwargs)
        tensors = tuple(args)
        if _enabled.get() and any(isinstance(a, Tensor) and a.requires_grad for a in tensors):
            node = _CustomNode()
            node.fn, node.ctx, node.parents = cls, ctx, tensors
            node.edges = [(a._grad_fn or a) if isinstance(a, Tensor) and a.requires_grad else None for a in tensors]
            node.seq = next(_SEQ)
            node.stamp = _STAMP[0]
            out = Tensor._make(out._data)
            out.requires_grad = True
            out._grad_fn = node
        return out


from .tensor import _STAMP, Tensor  # noqa: E402  (Tensor uses these ops; they make Tensors)


# ---- fused cross-entropy (nn: issue 9) ----------------------------------------------------------

class CrossEntropy(Function):
    """Mean or summed cross-entropy of (N, C) logits against N class indices (``ignore_index``
    ones left out, as NllLoss): log-softmax and the pick in one node. Forward keeps exp(x) or
    exp(x - max) and its row sums (backend.exp_sums), so backward is
    softmax(x) g / N with g / N taken off at the targets: two passes where log_softmax then
    nll_loss take six, and no (N, C) one-hot or zero matrix. The targets are checked here, not by
    the caller, so a replayed step (lightgrad.compile) checks each step's targets. Under
    create_graph the softmax is rebuilt from x with differentiable ops."""

    def forward(self, x, t, ignore_index, mean):
        n, c = x.shape
        t = B.asarray(t, np.int64)
        valid = B.not_equal(t, ignore_index)
        ignoring = not valid.all()
        tt = B.where(valid, t, 0) if ignoring else t
        if n:
            lo, hi = tt.min(), tt.max()
            if lo < 0 or hi >= c:
                raise IndexError(f"Target {int(lo if lo < 0 else hi)} is out of bounds.")
        self.count = count = int(valid.sum()) if ignoring else n
        self.scale = (1.0 / count if count else float("nan")) if mean else 1.0  # PyTorch: nan when all are ignored
        self.index = index = (B.arange(n), tt)
        self.keep = B.asarray(valid, x.dtype) if ignoring else None
        e, s, m = B.exp_sums(x, 1)
        picked = B.take(x, index)
        if m is not None:
            picked = B.subtract(picked, B.reshape(m, (n,)))  # x - max at the targets
        self.saved = (e, s)
        rows = B.subtract(B.log(B.reshape(s, (n,))), picked)
        if self.keep is not None:
            rows = B.multiply(rows, self.keep)
        return B.asarray(B.reduce(B.add, rows, None) * self.scale, x.dtype)

    def backward(self, g):
        e, s = self.saved
        keep = self.keep
        if not self.count:  # every target ignored: a zero gradient (PyTorch's), not nan
            if isinstance(g, Tensor):  # still part of the graph, as PyTorch's is
                return (B.multiply(self.parents[0].softmax(1), B.multiply(g, 0.0)),)
            return (_zeros(g, e.shape),)
        if isinstance(g, Tensor):
            onehot = B.zeros(e.shape, e.dtype)
            onehot[self.index] = 1
            gx = B.multiply(B.subtract(self.parents[0].softmax(1), Tensor._make(onehot)), B.multiply(g, self.scale))
            return (gx if keep is None else B.multiply(gx, Tensor._make(B.reshape(keep, (-1, 1)))),)
        c = B.multiply(g, self.scale)  # 0-d
        gx = B.multiply(e, B.divide(c, s))  # softmax * g / N, fresh
        gx[self.index] -= c
        if keep is not None:
            B.imul(gx, B.reshape(keep, (-1, 1)))  # ignored rows: no gradient
        return (gx,)


# ---- derivatives that are zero or not implemented, hypot (compat gaps) -------------------------

class ZeroGrad(Function):
    """``x`` joined to the graph of ``others`` with a zero gradient for each, as PyTorch records
    ops whose derivative is zero (an in-place comparison or rounding; copysign's ``other``): they
    require grad and backward gives zeros, not None. x's own gradient passes through."""

    def forward(self, x, *others):
        self.like = [(o.shape, o.dtype) if isinstance(o, np.ndarray) else None for o in others]
        return x

    def backward(self, g):
        zs = tuple(None if like is None or not self.needs(i + 1) else _zeros_like(g, *like)
                   for i, like in enumerate(self.like))
        return (g if self.needs(0) else None,) + zs


class NotDifferentiable(ZeroGrad):
    """Values whose derivative PyTorch does not implement (heaviside): the result requires grad,
    and backward through it raises."""

    def forward(self, x, *others, op):
        self.op = op
        return x

    def backward(self, g):
        raise RuntimeError(f"derivative for aten::{self.op} is not implemented")

    def name(self) -> str:
        return "NotImplemented"


class OnceDifferentiable(Function):
    """Identity on the path from a composite's result to ``x``, for composites whose first
    derivative is exact but whose formula has no second (the delta trick: r + (x - x.detach()) * c
    with c computed without a graph). Its gradient passes once; under create_graph it comes out
    joined to x's graph through a node whose backward raises, never as a constant."""

    def forward(self, x, op):
        self.op = op
        return x

    def backward(self, g):
        if isinstance(g, Tensor):
            return (_FirstDerivativeOnly.apply(g, self.parents[0], op=self.op), None)
        return (g, None)


class _FirstDerivativeOnly(NotDifferentiable):
    def backward(self, g):
        raise RuntimeError(f"the derivative of {self.op} cannot be differentiated again (create_graph=True): "
                           "its second derivative is not implemented")


def _zeros_like(g: Any, shape: tuple[int, ...], dtype: Any) -> Any:
    """Zeros of ``shape`` and ``dtype``: an array, or a Tensor when g is one (create_graph)."""
    if isinstance(g, np.ndarray | np.generic):
        return B.zeros(shape, dtype)
    return Tensor._make(np.zeros(shape, dtype))


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
