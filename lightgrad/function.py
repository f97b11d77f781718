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
from .grad_mode import _enabled
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
        from .grad_mode import no_grad

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
