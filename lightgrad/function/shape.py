"""Shape and indexing primitives: views and movement (reshape, permute, expand, flip, roll),
joining and padding, indexing reads and writes, gather and scatter; ``SliceGrad``, the lazy sum of
slices a basic index's backward returns."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .. import backend as B
from .base import Function, _zeros

if TYPE_CHECKING:
    from ..tensor import Tensor
else:
    Tensor = None  # bound by lightgrad.tensor (the one late binding: function.bind)


# ---- views and movement --------------------------------------------------------------------------

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
        return B.transpose(x, order)

    def backward(self, g):
        return (B.transpose(g, B.argsort(self.order)),)


class Expand(Function):
    """A broadcast view; the engine sums the gradient back to the input shape."""

    traceable = True

    def forward(self, x, shape):
        return B.broadcast_to(x, shape)

    def backward(self, g):
        return (g,)


class Flip(Function):
    def forward(self, x, dims):
        self.dims = dims
        return B.flip(x, dims)

    def backward(self, g):
        return (B.flip(g, self.dims),)


class Roll(Function):
    def forward(self, x, shifts, dims):
        self.shifts, self.dims = shifts, dims
        return B.roll(x, shifts, dims)

    def backward(self, g):
        neg = tuple(-s for s in self.shifts) if isinstance(self.shifts, tuple) else -self.shifts
        return (B.roll(g, neg, self.dims),)


# ---- joining and padding -------------------------------------------------------------------------

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


# ---- indexing ------------------------------------------------------------------------------------

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
            if isinstance(part, B.ndarray):
                B.iadd(part, value)
            else:  # a single element: indexing gave a scalar, not a view
                dense[index] = part + value


class GetItem(Function):
    def forward(self, x, index, advanced):
        self.shape, self.index, self.advanced = x.shape, index, advanced
        if advanced and isinstance(index, B.ndarray) and index.dtype.kind in "iu":
            return B.take_rows(x, index)  # rows by integer index (embeddings): into the arena
        out = x[index]
        if isinstance(out, B.xp.generic):  # one element: a 0-d view, as PyTorch's (NumPy gives a copy)
            out = x[(index if isinstance(index, tuple) else (index,)) + (Ellipsis,)]
        return out

    def backward(self, g):
        if not self.advanced and isinstance(g, B.ndarray):
            return (SliceGrad(self.shape, self.index, g),)
        # repeated advanced indices accumulate
        return (_put(_zeros(g, self.shape), self.index, g, self.advanced),)


class IndexPut(Function):
    """``x[index] = v`` as a new value: the gradient of x is zero where v was written."""

    def forward(self, x, v, index, accumulate):
        self.index, self.vshape, self.accumulate = index, B.xp.shape(v), accumulate
        out = B.copy(x)
        if accumulate:
            B.xp.add.at(out, index, v)
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


def _fresh(g: Any) -> Any:
    """A writable copy of an array gradient (g may be shared); Tensors are never written."""
    return B.copy(g) if isinstance(g, B.ndarray) else g


def _put(out: Any, index: Any, v: Any, accumulate: bool) -> Any:
    """``out[index] = v`` (or ``+=`` with repeats accumulating) on an array in place, or as a
    differentiable op on a Tensor."""
    if isinstance(out, B.ndarray) and not isinstance(v, Tensor):
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
    grids = list(B.indices(index.shape, sparse=True))
    grids[dim] = index
    return tuple(grids)


class Gather(Function):
    def forward(self, x, dim, index):
        self.shape, self.dim = x.shape, dim
        self.saved = (index,)
        return B.take_along_axis(x, index, dim)

    def backward(self, g):
        (index,) = self.saved
        return (_put(_zeros(g, self.shape), _along(index, self.dim), g, True),)


class Scatter(Function):
    """``scatter``/``scatter_add``: write (or add) ``src`` into a copy of x at ``index`` along dim."""

    def forward(self, x, src, dim, index, add):
        self.dim, self.add = dim, add
        self.saved = (index,)
        out = B.copy(x)
        ix = _along(index, dim)
        src = B.broadcast_to(src, index.shape) if B.xp.ndim(src) == 0 else src[tuple(slice(0, n) for n in index.shape)]
        if add:
            B.xp.add.at(out, ix, src)
        else:
            out[ix] = src
        self.srcshape = B.xp.shape(src)
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
