"""Reductions: sums and means, extremes, products, cumulative ops, softmax."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .. import backend as B
from .base import Function, _zeros
from .shape import Cat, _along, _put

if TYPE_CHECKING:
    from ..tensor import Tensor
else:
    Tensor = None  # bound by lightgrad.tensor (the one late binding: function.bind)


# ---- sums and means ------------------------------------------------------------------------------

_ZERO: dict[Any, B.ndarray] = {}  # a 0-d zero per dtype (adding an array: half the cost of adding 0)


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
                    zero = _ZERO[x.dtype] = B.xp.zeros((), x.dtype)
                    zero.flags.writeable = False
                return B.reshape(B.add(x, zero), ())
            return B.reshape(B.reduce(B.add, x, None, True), ())
        # (every axis named is a full sum too: the same summation, so the same bits as sum())
        return B.reduce(B.add, x, None if axes is not None and len(axes) == x.ndim else axes, keepdim)

    def name(self) -> str:
        return "SumBackward0" if self.axes is None else "SumBackward1"  # (PyTorch's: all, or over dims)

    def backward(self, g):
        shape = self.shape
        if isinstance(g, B.xp.generic):  # (a 0-d quotient, as a mean's, comes back as a NumPy scalar)
            g = B.asarray(g)
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


# ---- extremes ------------------------------------------------------------------------------------

class Amax(Function):
    """max/min over axes; the gradient is shared evenly among tied extremes (PyTorch's amax)."""

    saves_out = True

    def forward(self, x, axes, keepdim, f=B.maximum):
        axes = tuple(range(x.ndim)) if axes is None else axes
        out = B.reduce(f, x, axes, True)
        self.saved = (x, out)
        self.keepdim, self.axes = keepdim, axes
        return out if keepdim else B.reshape(out, B._reduced(x.shape, axes, False))

    def backward(self, g):
        x, out = self.saved
        if not self.keepdim:
            g = B.reshape(g, out.shape)
            out = B.reshape(out, out.shape)
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
        idx = B.expand_dims(idx, dim)
        self.saved = (idx,)
        out = B.take_along_axis(x, idx, dim)
        return out if keepdim else B.squeeze(out, dim)

    def backward(self, g):
        (idx,) = self.saved
        if not self.keepdim:
            g = B.expand_dims(g, self.dim)
        return (_put(_zeros(g, self.shape), _along(idx, self.dim), g, False),)


# ---- products ------------------------------------------------------------------------------------

class Prod(Function):
    def forward(self, x, axes, keepdim):
        self.saved = (x,)
        self.axes, self.keepdim = axes, keepdim
        return B.reduce(B.multiply, x, axes, keepdim)

    def backward(self, g):
        (x,) = self.saved
        axes = self.axes if self.axes is not None else tuple(range(x.ndim))
        if not self.keepdim:
            g = B.reshape(g, B._reduced(x.shape, axes, True))
        if 0 in x.shape:  # no elements: an empty gradient of x's shape (g broadcast over it)
            return (B.multiply(g, x),)
        # product of all other elements = exclusive cumprod from the left times from the right,
        # exact when some elements are zero (unlike out / x)
        rest = [i for i in range(x.ndim) if i not in axes]
        perm = rest + list(axes)
        back = tuple(int(i) for i in B.argsort(perm))
        if isinstance(x, Tensor):  # create_graph: the same products from Tensor ops, differentiable again
            xt = x.permute(*perm)
            flat = xt.reshape(tuple(xt.shape[:len(rest)]) + (-1,))
            last = flat.ndim - 1
            ones = Tensor._make(B.ones(tuple(flat.shape[:-1]) + (1,), x._data.dtype))
            left = Cat.apply(ones, flat[..., :-1], dim=last).cumprod(-1)
            right = Cat.apply(flat[..., 1:], ones, dim=last).flip(-1).cumprod(-1).flip(-1)
            others = (left * right).reshape(xt.shape).permute(*back)
        else:
            xt = B.transpose(x, perm)
            flat = B.reshape(xt, xt.shape[:len(rest)] + (-1,))
            ones = B.ones(flat.shape[:-1] + (1,), x.dtype)
            left = B.cumprod(B.concatenate([ones, flat[..., :-1]], -1), -1)
            right = B.flip(B.cumprod(B.flip(B.concatenate([flat[..., 1:], ones], -1), -1), -1), -1)
            others = B.transpose(B.reshape(left * right, xt.shape), back)
        return (B.multiply(g, others),)


# ---- cumulative ops ------------------------------------------------------------------------------

class Cumsum(Function):
    def forward(self, x, dim):
        self.dim = dim
        return B.cumsum(x, dim)

    def backward(self, g):
        return (B.flip(B.cumsum(B.flip(g, self.dim), self.dim), self.dim),)


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
        if isinstance(g, B.ndarray):
            return (B.logcumsumexp_grad(x, out, g, self.dim),)
        # create_graph: the same formula on Tensors, its scans recorded through this op
        return (B.logcumsumexp_grad(x, out, g, self.dim, lambda a: Logcumsumexp.apply(a, dim=self.dim)),)


# ---- softmax -------------------------------------------------------------------------------------

class LogSoftmax(Function):
    saves_out = True

    def forward(self, x, dim):
        self.dim = dim
        if not x.shape[dim]:  # (an empty dim: an empty result; its maximum has no identity)
            self.saved = (B.copy(x),)
            return self.saved[0]
        sh = B.log_softmax(x, dim)
        self.saved = (sh,)
        return sh

    def backward(self, g):
        out = self.saved[0]
        if isinstance(g, B.ndarray) and g.shape == out.shape:
            return (B.softmax_backward(g, out, self.dim, True),)
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
        if isinstance(g, B.ndarray) and g.shape == y.shape:
            return (B.softmax_backward(g, y, self.dim, False),)
        gy = B.multiply(g, y)
        return (B.subtract(gy, B.multiply(y, B.sum(gy, axis=self.dim, keepdims=True))),)
