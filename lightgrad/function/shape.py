"""Shape and indexing primitives: views and movement (reshape, permute, expand, flip, roll), strided
views of a tensor's memory (diagonal, unfold, as_strided; ``storage``), joining and padding, indexing reads and writes, gather and scatter; ``SliceGrad``, the lazy sum of
slices a basic index's backward returns."""

from __future__ import annotations

import math
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


# ---- strided views: diagonal, unfold, as_strided ------------------------------------------------

class AsStrided(Function):
    """A view of x's storage: ``size`` and ``stride`` in elements from ``offset`` elements into it
    (``storage(x)``), writable where x's storage is. Backward, as PyTorch's: the gradient is added
    into zeros of the storage at the view's positions (overlapping ones add), then read at x's
    positions, divided by how many of x's elements share one position."""

    def forward(self, x, size, stride, offset):
        flat, at = storage(x)
        self.describe(x, size, stride, offset, at)
        return B.as_strided(flat[offset:], size, tuple(s * x.itemsize for s in stride),
                            writeable=x.flags.writeable)

    def describe(self, x, size, stride, offset, at=None):
        """Keep what backward and ``index`` read: the view's geometry and x's (its positions in
        the storage), without making the view (a view made with no graph records it: _view)."""
        self.xshape, self.args = x.shape, (size, stride, offset)
        self.xgeometry = (x.shape, _elements(x), storage(x)[1] if at is None else at)

    def backward(self, g):
        size, stride, offset = self.args
        out, inp = _positions(size, stride, offset), _positions(*self.xgeometry)
        lo = min(int(out.min(initial=0)), int(inp.min(initial=0)))
        n = max(int(out.max(initial=0)), int(inp.max(initial=0))) - lo + 1
        acc = _put(_zeros(g, (n,)), out - lo, g, True)
        count = B.xp.bincount((inp - lo).ravel(), minlength=n)
        gx = acc[inp - lo]
        if inp.size and count.max() > 1:  # x's elements overlap (an expanded x): each share once
            gx = gx / count[inp - lo].astype(g.dtype if isinstance(g, B.ndarray) else g.dtype.np)
        return (gx,)

    def index(self, shape):
        """The advanced index into x (of ``shape``) of the view's elements, or None where the view
        reaches storage outside x (in-place writes through it cannot be recorded then)."""
        size, stride, offset = self.args
        out, inp = _positions(size, stride, offset).ravel(), _positions(*self.xgeometry).ravel()
        order = B.argsort(inp, kind="stable")
        at = B.xp.searchsorted(inp[order], out).clip(0, max(inp.size - 1, 0))
        if out.size and (not inp.size or (inp[order][at] != out).any()):
            return None
        return B.unravel_index(order[at].reshape(size), shape)


class Diagonal(AsStrided):
    """``x.diagonal(offset, dim1, dim2)``: NumPy's view, writable where x is. Backward writes the
    gradient onto the diagonal of zeros of x's shape (x's elements, not its storage, as PyTorch's)."""

    def forward(self, x, offset, dim1, dim2):
        self.describe(x, offset, dim1, dim2)
        return self.view(x)

    def describe(self, x, *args):
        self.xshape, self.args = x.shape, args

    def view(self, x):
        v = B.xp.diagonal(x, *self.args)
        if x.flags.writeable:  # (NumPy's diagonal is read-only; the memory is x's)
            v.flags.writeable = True
        return v

    def backward(self, g):
        if isinstance(g, B.ndarray):  # (the view of zeros takes the gradient)
            gx = B.zeros(self.xshape, g.dtype)
            B.copyto(self.view(gx), g)
            return (gx,)
        n = math.prod(self.xshape)  # create_graph: a differentiable scatter, at x's positions
        at = self.view(B.arange(n).reshape(self.xshape))
        return (B.reshape(_put(_zeros(g, (n,)), at, g, self.overlaps()), self.xshape),)

    def overlaps(self):
        """Whether two of the view's elements may be one of x's (their gradients add)."""
        return False

    def index(self, shape):
        return B.unravel_index(self.view(B.arange(math.prod(shape)).reshape(shape)), shape)


class Unfold(Diagonal):
    """``x.unfold(dim, size, step)``: the windows along dim, a view (NumPy's sliding windows, writable
    where x is); the gradients of overlapping windows add."""

    def forward(self, x, dim, size, step):
        self.describe(x, dim, size, step)
        return self.view(x)

    def view(self, x):
        dim, size, step = self.args
        w = B.xp.lib.stride_tricks.sliding_window_view(x, size, axis=dim, writeable=x.flags.writeable)
        return w[(slice(None),) * dim + (slice(None, None, step),)]

    def overlaps(self):
        return self.args[2] < self.args[1]  # (step < size)

    def backward(self, g):
        if not isinstance(g, B.ndarray):  # (create_graph: the differentiable scatter of Diagonal's)
            return super().backward(g)
        dim, size, step = self.args
        gx, w = B.zeros(self.xshape, g.dtype), g.shape[dim]
        for j in range(size):  # the j-th element of every window: one strided slice of x
            B.iadd(gx[(slice(None),) * dim + (slice(j, j + step * (w - 1) + 1, step),)], g[..., j])
        return (gx,)


def storage(x: Any) -> tuple[Any, int]:
    """x's storage, as PyTorch's: the memory of the array that owns x's bytes (the last array up
    x's chain of bases), as a flat array of x's dtype (writable where the owner is), and x's
    offset in it, in elements."""
    root, b = x, x.base
    while b is not None:
        if isinstance(b, B.ndarray):
            root = b
        b = getattr(b, "base", None)  # (as_strided's views wrap their base in an object of its own)
    if not x.size or not (root.flags.c_contiguous or root.flags.f_contiguous):
        # (no storage beyond x's elements; an owner of no contiguous layout, never seen: a copy)
        root = x if x.flags.c_contiguous else B.xp.ascontiguousarray(x)
    raw = root.ravel(order="K").view(B.xp.uint8)
    at = x.__array_interface__["data"][0] - raw.__array_interface__["data"][0]
    r, i = at % x.itemsize, x.itemsize
    return raw[r:r + (raw.size - r) // i * i].view(x.dtype), at // i


def _elements(x: Any) -> tuple[int, ...]:
    return tuple(s // x.itemsize for s in x.strides)


def _positions(size: tuple[int, ...], stride: tuple[int, ...], offset: int) -> Any:
    """The storage position of each element of a strided view, as an array of its shape."""
    at = B.xp.full(tuple(size), offset, dtype=B.xp.int64)
    for d, (n, s) in enumerate(zip(size, stride)):
        at += (B.arange(n, dtype=B.xp.int64) * s).reshape((n,) + (1,) * (len(size) - d - 1))
    return at


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
        """The gradient's dtype: that of its parts."""
        return self.parts[0][1].dtype

    def plus(self, other: SliceGrad) -> SliceGrad:
        """The sum of both, as one SliceGrad (nothing computed yet)."""
        out = SliceGrad.__new__(SliceGrad)
        out.shape, out.parts = self.shape, self.parts + other.parts
        return out

    def dense(self) -> Any:
        """The gradient as one array: the parts written (or added) into an array of ``shape``."""
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
