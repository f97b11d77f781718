"""Shape methods: reshape and view, permute, expand and repeat, split and narrow, flips, triangles and
diagonals; and cat, stack and their kin."""

from __future__ import annotations

import builtins
import itertools
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .. import backend as B
from .. import dtypes as D
from ..grad_mode import _enabled
from .common import _as_tensor, _dim, _dims, _shape_arg
from .creation import tensor, zeros
from .elementwise import where

if TYPE_CHECKING:  # bound at run time by tensor.py, once Tensor exists (see _ops/__init__.py)
    from .. import function as F
    from ..tensor import Tensor
    from .common import TensorSelf


class ShapeMixin:
    """Tensor's shape methods (views where the strides allow, as PyTorch's)."""

    __slots__ = ()

    # ---- reshaping -------------------------------------------------------------------------------
    def reshape(self: TensorSelf, *shape: Any) -> Tensor:
        """A tensor of the same data with a new shape (one size may be -1): a view where the
        strides allow one, else a copy."""
        s = _shape_arg(shape)
        _check_reshape(s, self._data.size)
        return self._reshaped(s)

    def view(self: TensorSelf, *shape: Any) -> Tensor:
        """The same memory with a new shape, never a copy: raises where the strides do not allow
        it, as PyTorch does (``reshape`` copies then).

        >>> lightgrad.arange(6).view(2, -1).shape
        lightgrad.Size([2, 3])
        """
        if len(shape) == 1 and isinstance(shape[0], D.dtype):
            return self._view_dtype(shape[0])
        s = _shape_arg(shape)
        _check_reshape(s, self._data.size)
        if not B.reshapes_as_view(self._data, s):
            raise RuntimeError("view size is not compatible with input tensor's size and stride (at least one "
                               "dimension spans across two contiguous subspaces). Use .reshape(...) instead.")
        return self._reshaped(s)

    def _view_dtype(self: TensorSelf, dt: D.dtype) -> Tensor:
        """The same bytes read as ``dt`` (``x.view(lightgrad.int16)``): the last dim scales by the ratio
        of the item sizes; no gradient flows through it, as in PyTorch."""
        a = self._data
        if dt.itemsize != a.itemsize:
            names = f"{D.SCALAR_NAMES[self.dtype.name]} as {D.SCALAR_NAMES[dt.name]} (different element sizes)"
            if a.ndim and a.strides[-1] != a.itemsize and a.shape[-1] != 1:
                raise RuntimeError(f"self.stride(-1) must be 1 to view {names}, but got {a.strides[-1] // a.itemsize}")
            if not a.ndim or (a.shape[-1] * a.itemsize) % dt.itemsize:
                raise RuntimeError(f"self.size(-1) must be divisible by {dt.itemsize // a.itemsize or 1} to view "
                                   f"{names}, but got {a.shape[-1] if a.ndim else 1}")
        return Tensor._make(a.view(dt.np))

    def view_as(self: TensorSelf, other: Tensor) -> Tensor:
        """A view of this tensor with ``other``'s shape."""
        return self.view(other.shape)

    def reshape_as(self: TensorSelf, other: Tensor) -> Tensor:
        """This tensor reshaped to ``other``'s shape (a view where possible)."""
        return self.reshape(other.shape)

    def flatten(self: TensorSelf, start_dim: builtins.int = 0, end_dim: builtins.int = -1) -> Tensor:
        """Dims ``start_dim`` to ``end_dim`` merged into one (a view where possible).

        >>> lightgrad.zeros(2, 3, 4).flatten(1).shape
        lightgrad.Size([2, 12])
        """
        s, e = _dim(start_dim, self.ndim), _dim(end_dim, self.ndim)
        if not self.ndim:
            return self.reshape(1)
        if s > e:
            raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
        sh = self.shape
        return self.reshape(sh[:s] + (math.prod(sh[s:e + 1]),) + sh[e + 1:])

    def ravel(self: TensorSelf) -> Tensor:
        """The elements as a 1-D tensor (a view where possible)."""
        return self.reshape(-1)

    def unflatten(self: TensorSelf, dim: builtins.int, sizes: Sequence[builtins.int]) -> Tensor:
        """Dim ``dim`` split into ``sizes`` (one of them may be -1)."""
        if not self.ndim:
            raise RuntimeError(f"unflatten got an unexpected error:\nDimension specified as {dim} but tensor has no "
                               "dimensions")
        d = _dim(dim, self.ndim)
        sizes = list(sizes)
        if -1 in sizes:
            known = math.prod(x for x in sizes if x != -1)
            sizes[sizes.index(-1)] = self.shape[d] // known if known else 0
        if math.prod(sizes) != self.shape[d]:
            raise RuntimeError(f"unflatten: Provided sizes {list(sizes)} don't multiply up to the size of "
                               f"dim {dim} ({self.shape[d]}) in the input tensor")
        return self.reshape(self.shape[:d] + tuple(sizes) + self.shape[d + 1:])

    def squeeze(self: TensorSelf, dim: Any = None) -> Tensor:
        """Size-1 dims removed (only ``dim``, an int or a tuple, if given), as a view.

        >>> lightgrad.zeros(2, 1, 3).squeeze().shape
        lightgrad.Size([2, 3])
        """
        if dim is None:
            return self.reshape(tuple(s for s in self.shape if s != 1))
        axes = _dims(dim, self.ndim) or ()
        return self.reshape(tuple(s for i, s in enumerate(self.shape) if not (i in axes and s == 1)))

    def unsqueeze(self: TensorSelf, dim: builtins.int) -> Tensor:
        """A view with a size-1 dim inserted at ``dim``.

        >>> lightgrad.zeros(2, 3).unsqueeze(0).shape
        lightgrad.Size([1, 2, 3])
        """
        d = _dim(dim, self.ndim + 1)
        return self.reshape(self.shape[:d] + (1,) + self.shape[d:])

    # ---- permuting -------------------------------------------------------------------------------
    def permute(self: TensorSelf, *dims: Any) -> Tensor:
        """A view with the dims reordered: ``x.permute(2, 0, 1)`` puts dim 2 first.

        >>> lightgrad.zeros(2, 3, 4).permute(2, 0, 1).shape
        lightgrad.Size([4, 2, 3])
        """
        order = tuple(_dim(d, self.ndim) for d in _shape_arg(dims)) if self.ndim else ()
        if sorted(order) != list(range(self.ndim)):
            raise RuntimeError(f"permute(sparse_coo): number of dimensions in the tensor input does not match "
                               f"the length of the desired ordering of dimensions i.e. input.dim() = "
                               f"{self.ndim} is not equal to len(dims) = {len(order)}")
        if order == tuple(range(self.ndim)):
            return self
        t = F.Permute.apply(self, order=order)
        t._version = self._version  # (always a view: see tensor.py's _viewed)
        if t._grad_fn is None:
            t._view = (self, _permuted(order))
        return t

    def transpose(self: TensorSelf, dim0: builtins.int, dim1: builtins.int) -> Tensor:
        """A view with dims ``dim0`` and ``dim1`` swapped (``swapaxes`` and ``swapdims`` are the same)."""
        a, b = _dim(dim0, self.ndim), _dim(dim1, self.ndim)
        if not self.ndim:
            return self
        order = list(range(self.ndim))
        order[a], order[b] = order[b], order[a]
        return self.permute(order)

    swapaxes = swapdims = transpose

    def t(self: TensorSelf) -> Tensor:
        """The transpose of a tensor of at most 2 dims (a view; 0-d and 1-d come back as they are)."""
        if self.ndim > 2:
            raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {self.ndim}D")
        return self.T

    def movedim(self: TensorSelf, source: Any, destination: Any) -> Tensor:
        """Move dim(s) ``source`` to position(s) ``destination``, the others keeping their order."""
        src = (source,) if isinstance(source, int | B.xp.integer) else tuple(source)
        dst = (destination,) if isinstance(destination, int | B.xp.integer) else tuple(destination)
        if len(src) != len(dst):
            raise RuntimeError(f"movedim: Invalid source or destination dims: source ({list(src)} dims) should "
                               f"contain the same number of dims as destination ({list(dst)} dims)")
        s, t = [_dim(d, self.ndim) for d in src], [_dim(d, self.ndim) for d in dst]
        if len(set(s)) != len(s):
            raise RuntimeError(f"movedim: repeated dim in `source` ({list(src)})")
        if len(set(t)) != len(t):
            raise RuntimeError(f"movedim: repeated dim in `destination` ({list(dst)})")
        if not self.ndim:
            return self
        moved = dict(zip(t, s))
        rest = iter(i for i in range(self.ndim) if i not in s)
        return self.permute([moved[i] if i in moved else next(rest) for i in range(self.ndim)])

    moveaxis = movedim

    # ---- broadcasting and repeating --------------------------------------------------------------
    def expand(self: TensorSelf, *sizes: Any) -> Tensor:
        """A broadcast view to ``sizes`` (-1 keeps a size)."""
        s = _shape_arg(sizes)
        if len(s) < self.ndim:
            raise RuntimeError(f"expand: the number of sizes provided ({len(s)}) must be greater or equal "
                               f"to the number of dimensions in the tensor ({self.ndim})")
        lead = len(s) - self.ndim
        full = tuple(self.shape[i - lead] if d == -1 else d for i, d in enumerate(s))
        for i, d in enumerate(self.shape):
            if d != 1 and d != full[i + lead]:
                raise RuntimeError(f"The expanded size of the tensor ({full[i + lead]}) must match the existing "
                                   f"size ({d}) at non-singleton dimension {i + lead}.  Target sizes: "
                                   f"{list(s)}.  Tensor sizes: {list(self.shape)}")
        if full == self.shape:
            return self
        t = F.Expand.apply(self, shape=full)
        t._version = self._version  # (a view: one version counter)
        return t

    def expand_as(self: TensorSelf, other: Tensor) -> Tensor:
        """A view of this tensor expanded to ``other``'s shape."""
        return self.expand(other.shape)

    def broadcast_to(self: TensorSelf, shape: Sequence[builtins.int]) -> Tensor:
        """A view broadcast to ``shape`` (as ``expand``)."""
        return self.expand(tuple(shape))

    def repeat(self: TensorSelf, *sizes: Any) -> Tensor:
        """Tile the tensor ``sizes`` times along each dim (as ``torch.Tensor.repeat``)."""
        reps = _shape_arg(sizes)
        if len(reps) < self.ndim:
            raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number of "
                               "dimensions of tensor")
        x = self.reshape((1,) * (len(reps) - self.ndim) + self.shape)
        inter = tuple(v for s in x.shape for v in (1, s))
        tiled = tuple(v for r, s in zip(reps, x.shape) for v in (r, s))
        return x.reshape(inter).expand(tiled).reshape(tuple(r * s for r, s in zip(reps, x.shape)))

    def tile(self: TensorSelf, *dims: Any) -> Tensor:
        """Repeat along each dim; fewer dims than the tensor has are padded with 1s in front."""
        reps = _shape_arg(dims)
        return self.repeat(*((1,) * (self.ndim - len(reps)) + reps))

    def repeat_interleave(self: TensorSelf, repeats: builtins.int, dim: builtins.int | None = None) -> Tensor:
        """Each element repeated ``repeats`` times along ``dim`` (of the flattened tensor if dim is None)."""
        x = self.flatten() if dim is None else self
        d = 0 if dim is None else _dim(dim, x.ndim)
        if not x.ndim:  # (PyTorch's words for a 0-d input along a dim: it looks for dim 1 of the repeats)
            raise IndexError("Dimension out of range (expected to be in range of [-1, 0], but got 1)")
        idx = B.xp.repeat(B.arange(x.shape[d]), repeats)
        return x.index_select(d, Tensor._make(idx))

    # ---- splitting and narrowing -----------------------------------------------------------------
    def split(self: TensorSelf, split_size: Any, dim: builtins.int = 0) -> tuple[Tensor, ...]:
        """Pieces of ``split_size`` along ``dim`` (the last one shorter), or of the given sizes."""
        if not self.ndim:
            raise RuntimeError("split expects at least a 1-dimensional tensor")
        d = _dim(dim, self.ndim)
        n = self.shape[d]
        if isinstance(split_size, int | B.xp.integer):
            if split_size < 0:
                raise RuntimeError(f"split expects split_size be non-negative, but got split_size={split_size}")
            if split_size == 0 and n:
                raise RuntimeError(f"split_size can only be 0 if dimension size is 0, but got dimension size of {n}")
            k = max(-(-n // split_size), 1) if split_size else 1  # (at least one piece, as PyTorch)
            sizes = [int(split_size)] * (k - 1) + [n - int(split_size) * (k - 1)]
        else:
            if not isinstance(split_size, Sequence):
                raise TypeError(f"split_with_sizes(): argument 'split_sizes' (position 2) must be tuple of ints, "
                                f"not {type(split_size).__name__}")
            sizes = list(split_size)
            if any(s < 0 for s in sizes):
                raise RuntimeError(f"split_with_sizes expects split_sizes have only non-negative entries, but got "
                                   f"split_sizes={sizes}")
            if sum(sizes) != n:
                raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {n} (input tensor's "
                                   f"size at dimension {dim}), but got split_sizes={sizes}")
        out, start = [], 0
        for s in sizes:
            out.append(self.narrow(d, start, s))
            start += s
        return tuple(out)

    def split_with_sizes(self: TensorSelf, split_sizes: Sequence[builtins.int], dim: builtins.int = 0) -> tuple[Tensor, ...]:
        """Pieces of the given sizes along ``dim`` (they must add up to its length)."""
        return self.split(list(split_sizes), dim)

    def chunk(self: TensorSelf, chunks: builtins.int, dim: builtins.int = 0) -> tuple[Tensor, ...]:
        """``chunks`` pieces of ceil(n / chunks) along ``dim`` (fewer where they run out)."""
        if not self.ndim:
            raise RuntimeError("chunk expects at least a 1-dimensional tensor")
        if chunks <= 0:
            raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
        n = self.shape[_dim(dim, self.ndim)]
        if not n:  # `chunks` empty pieces (split(0) would give one)
            return self.split([0] * chunks, dim)
        return self.split(-(-n // chunks), dim)

    def tensor_split(self: TensorSelf, indices_or_sections: Any, dim: builtins.int = 0) -> tuple[Tensor, ...]:
        """``sections`` pieces as even as can be (the first ones one longer), or pieces between the
        given indices along ``dim``."""
        if not self.ndim:
            raise RuntimeError(f"tensor_split expected at least a 1-dimensional tensor, but got a tensor with "
                               f"{self.ndim} dims")
        d = _dim(dim, self.ndim)
        cut = indices_or_sections.tolist() if isinstance(indices_or_sections, Tensor) else indices_or_sections
        if isinstance(cut, int | B.xp.integer):
            if cut <= 0:
                raise RuntimeError(f"number of sections must be larger than 0, got {cut}")
            q, r = divmod(self.shape[d], int(cut))
            return self.split([q + 1] * r + [q] * (int(cut) - r), dim)
        bounds = [0, *cut, None]  # (slices, as PyTorch's: negative indices count from the end)
        return tuple(self[(slice(None),) * d + (slice(a, b),)] for a, b in zip(bounds, bounds[1:]))

    def _split_at(self: TensorSelf, sections: Any, d: builtins.int, name: str) -> tuple[Tensor, ...]:
        n = self.shape[d]
        if isinstance(sections, builtins.int):
            if sections <= 0 or n % sections:
                raise RuntimeError(f"torch.{name} attempted to split along dimension {d}, but the size of the "
                                   f"dimension {n} is not divisible by the split_size {sections}!")
            return self.split(n // sections, d) if n else (self,) * sections
        bounds = [0] + [min(max(i if i >= 0 else i + n, 0), n) for i in sections] + [n]
        return tuple(self.narrow(d, lo, max(hi - lo, 0)) for lo, hi in zip(bounds, bounds[1:]))

    def hsplit(self: TensorSelf, sections: Any) -> tuple[Tensor, ...]:
        """Split along dim 1 (dim 0 for 1-D): into ``sections`` equal parts, or at the given indices."""
        if self.ndim < 1:
            raise RuntimeError("torch.hsplit requires a tensor with at least 1 dimension, but got a tensor "
                               f"with {self.ndim} dimensions!")
        return self._split_at(sections, 1 if self.ndim > 1 else 0, "hsplit")

    def vsplit(self: TensorSelf, sections: Any) -> tuple[Tensor, ...]:
        """Split along dim 0 (rows) into ``sections`` equal parts or at the given indices."""
        if self.ndim < 2:
            raise RuntimeError("torch.vsplit requires a tensor with at least 2 dimension, but got a tensor "
                               f"with {self.ndim} dimensions!")
        return self._split_at(sections, 0, "vsplit")

    def dsplit(self: TensorSelf, sections: Any) -> tuple[Tensor, ...]:
        """Split along dim 2 (depth) into ``sections`` equal parts or at the given indices."""
        if self.ndim < 3:
            raise RuntimeError("torch.dsplit requires a tensor with at least 3 dimension, but got a tensor "
                               f"with {self.ndim} dimensions!")
        return self._split_at(sections, 2, "dsplit")

    def unbind(self: TensorSelf, dim: builtins.int = 0) -> tuple[Tensor, ...]:
        """The slices along ``dim`` as a tuple of views, that dim removed."""
        d = _dim(_dim(dim, self.ndim), self.ndim, scalar=False)  # (PyTorch wraps -1 before it looks)
        return tuple(self[(slice(None),) * d + (i,)] for i in range(self.shape[d]))

    def narrow(self: TensorSelf, dim: builtins.int, start: builtins.int, length: builtins.int) -> Tensor:
        """The ``length`` entries from ``start`` along ``dim`` (a view); ``start`` may count from the end."""
        if not self.ndim:
            raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
        if length < 0:
            raise RuntimeError("narrow(): length must be non-negative.")
        d = _dim(dim, self.ndim)
        n, start = self.shape[d], builtins.int(start)
        if not -n <= start <= n:
            raise IndexError(f"start out of range (expected to be in range of [{-n}, {n}], but got {start})")
        if start < 0:
            start += n
        if start > n - length:
            raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({n}).")
        return self[(slice(None),) * d + (slice(start, start + length),)]

    def narrow_copy(self: TensorSelf, dim: builtins.int, start: builtins.int, length: builtins.int) -> Tensor:
        """``narrow``, copied: ``length`` elements from ``start`` along ``dim``."""
        return self.narrow(dim, start, length).clone()

    def select(self: TensorSelf, dim: builtins.int, index: builtins.int) -> Tensor:
        """The slice at ``index`` along ``dim``, that dim removed: ``x.select(1, 0)`` is ``x[:, 0]``."""
        if not self.ndim:
            raise IndexError("select() cannot be applied to a 0-dim tensor.")
        d = _dim(dim, self.ndim)
        n = self.shape[d]
        if not -n <= index < n:
            raise IndexError(f"select(): index {index} out of range for tensor of size {list(self.shape)} "
                             f"at dimension {d}")
        return self[(slice(None),) * d + (index,)]

    def unfold(self: TensorSelf, dimension: builtins.int, size: builtins.int, step: builtins.int) -> Tensor:
        """Sliding windows of ``size`` every ``step`` along ``dimension``, as a new last dim (a view:
        overlapping windows share elements): ``arange(5.).unfold(0, 2, 2)`` is ``[[0, 1], [2, 3]]``."""
        d = _dim(dimension, max(self.ndim, 1))
        n = self.shape[d] if self.ndim else 1
        if size > n:
            raise RuntimeError(f"maximum size for tensor at dimension {d} is {n} but size is {size}")
        if step <= 0:
            raise RuntimeError(f"step is {step} but must be > 0")
        if not self.ndim:  # (PyTorch's: the one element, or none, with no window dim)
            return self.reshape(1) if size else self.reshape(1)[:0]
        return _strided_view(self, F.Unfold, d, size, step)

    def as_strided(self: TensorSelf, size: Sequence[builtins.int], stride: Sequence[builtins.int],
                   storage_offset: builtins.int | None = None) -> Tensor:
        """A view of the tensor's storage with the given sizes and strides (in elements), from
        ``storage_offset`` (by default the tensor's own): ``arange(4.).as_strided((2,), (2,))`` is
        ``[0., 2.]``. Storage is that of the array that owns the tensor's memory."""
        size, stride = tuple(builtins.int(n) for n in size), tuple(builtins.int(s) for s in stride)
        if len(size) != len(stride):
            raise RuntimeError("mismatch in length of strides and shape")
        if any(s < 0 for s in stride):
            raise RuntimeError(f"as_strided: Negative strides are not supported at the moment, got strides: "
                               f"{list(stride)}")
        if any(n < 0 for n in size):
            raise RuntimeError(f"Storage size calculation overflowed with sizes={list(size)} and strides={list(stride)}")
        flat, at = F.storage(self._data)
        offset = at if storage_offset is None else builtins.int(storage_offset)
        if offset < 0:
            raise RuntimeError(f"Tensor: invalid storage offset {offset}")
        need = offset + 1 + builtins.sum((n - 1) * s for n, s in zip(size, stride)) if all(size) else 0
        if need > flat.size:
            i = self._data.itemsize
            raise RuntimeError(f"setStorage: sizes {list(size)}, strides {list(stride)}, storage offset {offset}, "
                               f"and itemsize {i} requiring a storage size of {need * i} are out of bounds for "
                               f"storage of size {flat.size * i}")
        return _strided_view(self, F.AsStrided, size, stride, offset)

    # ---- flips, rolls and differences ------------------------------------------------------------
    def flip(self: TensorSelf, *args: Any, dims: Any = None) -> Tensor:
        """Reverse the order along ``dims``: ``x.flip(0)``, ``x.flip(0, 1)``, ``x.flip(dims=(0, 1))``."""
        D.check_bare_unsigned("flip_cpu", self._arr.dtype)
        if dims is not None and args:
            raise TypeError("flip() got multiple values for argument 'dims'")
        axes = _dims(_shape_arg(args if dims is None else (dims,)), self.ndim)
        return F.Flip.apply(self, dims=axes)

    def fliplr(self: TensorSelf) -> Tensor:
        """Flipped left to right (along dim 1)."""
        return self.flip(1)

    def flipud(self: TensorSelf) -> Tensor:
        """Flipped up to down (along dim 0)."""
        return self.flip(0)

    def roll(self: TensorSelf, shifts: Any, dims: Any = None) -> Tensor:
        """Elements rolled by ``shifts`` along ``dims`` (of the flattened tensor if None), wrapping around."""
        if dims is None:
            return self.flatten().roll(shifts, 0).reshape(self.shape)
        if not self.ndim:  # (a 0-d tensor has no dim to roll along, not even 0)
            _dim(builtins.int(dims if isinstance(dims, int | B.xp.integer) else dims[0]), 0, scalar=False)
        axes = _dims(dims, self.ndim)
        sh = tuple(shifts) if isinstance(shifts, Sequence) else (shifts,)
        return F.Roll.apply(self, shifts=sh, dims=axes)

    def rot90(self: TensorSelf, k: builtins.int = 1, dims: Sequence[builtins.int] = (0, 1)) -> Tensor:
        """Rotate by 90 degrees k times in the plane of ``dims``, from the first towards the second."""
        if len(dims) != 2:
            raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
        if self.ndim < 2:
            raise RuntimeError(f"expected total dims >= 2, but got total dims = {self.ndim}")
        d0, d1 = _dim(dims[0], self.ndim), _dim(dims[1], self.ndim)
        if d0 == d1:
            raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {d0} and dim1 = {d1}")
        k %= 4
        if k == 1:
            return self.flip(d1).transpose(d0, d1)
        if k == 2:
            return self.flip((d0, d1))
        if k == 3:
            return self.flip(d0).transpose(d0, d1)
        return self.clone()

    def diff(self: TensorSelf, n: builtins.int = 1, dim: builtins.int = -1, prepend: Tensor | None = None,
             append: Tensor | None = None) -> Tensor:
        """n-th forward difference along ``dim``: ``tensor([1, 4, 9]).diff()`` is ``tensor([3, 5])``."""
        if self.ndim == 0:
            raise RuntimeError("diff expects input to be at least one-dimensional")
        if n < 0:
            raise RuntimeError(f"order must be non-negative but got {n}")
        d = _dim(dim, self.ndim)
        parts = [p for p in (prepend, self, append) if p is not None]
        x = cat([_as_tensor(p, self) for p in parts], d) if len(parts) > 1 else self
        for _ in range(n):
            m = max(x.shape[d] - 1, 0)
            hi, lo = x.narrow(d, min(1, x.shape[d]), m), x.narrow(d, 0, m)
            x = hi.logical_xor(lo) if x._data.dtype == B.xp.bool_ else hi - lo
        return x

    # ---- triangles and diagonals -----------------------------------------------------------------
    def tril(self: TensorSelf, diagonal: builtins.int = 0) -> Tensor:
        """The lower triangle (on and below the ``diagonal``-th diagonal) of the last two dims, the rest 0."""
        n, m = self.shape[-2:]
        keep = B.tril_mask(n, m, diagonal, dtype=bool)
        return where(Tensor._make(keep), self, Tensor._make(B.zeros((), self._data.dtype)))  # keeps the dtype

    def triu(self: TensorSelf, diagonal: builtins.int = 0) -> Tensor:
        """The upper triangle (on and above the ``diagonal``-th diagonal) of the last two dims, the rest 0."""
        n, m = self.shape[-2:]
        keep = B.logical_not(B.tril_mask(n, m, diagonal - 1, dtype=bool))
        return where(Tensor._make(keep), self, Tensor._make(B.zeros((), self._data.dtype)))

    def diagonal(self: TensorSelf, offset: builtins.int = 0, dim1: builtins.int = 0, dim2: builtins.int = 1) -> Tensor:
        """The ``offset`` diagonal of the matrices in dims dim1, dim2, as a new last dim (a view)."""
        d1, d2 = _dim(dim1, self.ndim), _dim(dim2, self.ndim)
        if d1 == d2:
            raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
        return _strided_view(self, F.Diagonal, offset, d1, d2)

    def diag(self: TensorSelf, diagonal: builtins.int = 0) -> Tensor:
        """A 1-D tensor's values as the ``diagonal``-th diagonal of a square matrix, or a matrix's diagonal as 1-D."""
        if self.ndim == 2:
            return self.diagonal(diagonal)
        n = self.shape[0] + abs(diagonal)
        i = B.arange(self.shape[0])
        r, c = (i, i + diagonal) if diagonal >= 0 else (i - diagonal, i)
        return zeros(n, n, dtype=self.dtype).index_put((Tensor._make(r), Tensor._make(c)), self)

    def diag_embed(self: TensorSelf, offset: builtins.int = 0, dim1: builtins.int = -2, dim2: builtins.int = -1) -> Tensor:
        """Matrices (in dims dim1, dim2) whose ``offset`` diagonal holds the last dim of self."""
        nd = self.ndim + 1
        d1, d2 = _dim(dim1, nd), _dim(dim2, nd)
        if d1 == d2:
            raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
        n, k = (self.shape[-1] if self.ndim else 1), abs(offset)
        x = self.reshape(1) if self.ndim == 0 else self
        eye_ = Tensor._make(B.eye(n, dtype=B.xp.bool_))
        out = where(eye_, x.unsqueeze(-1).expand(x.shape + (n,)), 0.0).to(x.dtype)  # (..., n, n)
        if k:
            batch = x.shape[:-1]
            cols = zeros(*batch, n, k, dtype=x.dtype)
            rows = zeros(*batch, k, n + k, dtype=x.dtype)
            # offset > 0: entry (i, i + k), zeros left and below; offset < 0: (i + k, i), above and right
            out = cat([cols, out], -1) if offset > 0 else cat([out, cols], -1)
            out = cat([out, rows], -2) if offset > 0 else cat([rows, out], -2)
        rest = iter(range(nd - 2))
        return out.permute(*[nd - 2 if j == d1 else nd - 1 if j == d2 else next(rest) for j in range(nd)])

    def diagflat(self: TensorSelf, offset: builtins.int = 0) -> Tensor:
        """A 2-D matrix with the flattened input on its ``offset`` diagonal."""
        return self.flatten().diag_embed(offset)

    def trace(self: TensorSelf) -> Tensor:
        """The sum of the main diagonal of a 2-D tensor."""
        return self.diagonal().sum()


# ---- free functions: joining and its kin ---------------------------------------------------------
def cat(tensors: Sequence[Tensor], dim: builtins.int = 0) -> Tensor:
    """Concatenate along an existing dim: ``cat([a, b], dim=1)`` (always a new tensor)."""
    ts = list(tensors)
    if not ts:
        raise RuntimeError("torch.cat(): expected a non-empty list of Tensors")
    # PyTorch's legacy rule: a 1-d empty tensor joins tensors of any shape (it still counts for the
    # dtype and gets a gradient)
    skip = [t.ndim == 1 and t.shape[0] == 0 for t in ts]
    ref = next((t for t, s in zip(ts, skip) if not s), ts[0])
    for i, t in enumerate(ts):
        if not t.ndim:
            raise RuntimeError(f"zero-dimensional tensor (at position {i}) cannot be concatenated")
    d = _dim(dim, ref.ndim)
    for i, t in enumerate(ts):
        if skip[i] and t.ndim != ref.ndim:
            continue
        if t.ndim != ref.ndim:
            raise RuntimeError(f"Tensors must have same number of dimensions: got {ref.ndim} and {t.ndim}")
        for j in range(t.ndim):
            if j != d and t.shape[j] != ref.shape[j]:
                raise RuntimeError(f"Sizes of tensors must match except in dimension {d}. Expected size "
                                   f"{ref.shape[j]} but got size {t.shape[j]} for tensor number {i} in the list.")
    dt = D.result_type(*ts) if len({t._data.dtype for t in ts}) > 1 else None
    if dt is not None:
        ts = [t.to(dt) for t in ts]
    return F.Cat.apply(*ts, dim=d)


concat = concatenate = cat


def stack(tensors: Sequence[Tensor], dim: builtins.int = 0) -> Tensor:
    """Join along a new dim: ``stack([a, b])`` has shape (2, *a.shape)."""
    ts = list(tensors)
    if not ts:
        raise RuntimeError("stack expects a non-empty TensorList")
    for i, t in enumerate(ts):
        if t.shape != ts[0].shape:
            raise RuntimeError(f"stack expects each tensor to be equal size, but got {list(ts[0].shape)} at "
                               f"entry 0 and {list(t.shape)} at entry {i}")
    d = _dim(dim, ts[0].ndim + 1)
    if not (_enabled.get() and any(t.requires_grad for t in ts)) and len({t._data.dtype for t in ts}) == 1:
        return Tensor._make(B.stack([t._data for t in ts], d))  # no graph: one NumPy call
    return cat([t.unsqueeze(d) for t in ts], d)


def column_stack(tensors: Sequence[Tensor]) -> Tensor:
    """Stack as columns: 0-d and 1-d tensors become (n, 1) columns, then join along dim 1."""
    return cat([t.reshape(-1, 1) if t.ndim <= 1 else t for t in tensors], 1)


def hstack(tensors: Any) -> Tensor:
    """Tensors concatenated column-wise (along dim 1; dim 0 for 1-D tensors)."""
    return cat(tensors, 1 if tensors[0].ndim > 1 else 0)


def vstack(tensors: Any) -> Tensor:
    """Tensors concatenated row-wise (along dim 0), 1-D tensors as rows."""
    return cat([t.reshape(1, -1) if t.ndim == 1 else t for t in tensors], 0)


def dstack(tensors: Any) -> Tensor:
    """Tensors concatenated depth-wise (along dim 2), made at least 3-D first."""
    return stack(tensors, -1) if tensors[0].ndim < 3 else cat(tensors, 2)


def _atleast(tensors: tuple[Any, ...], fix: Any) -> Any:
    seq = len(tensors) == 1 and isinstance(tensors[0], list | tuple)
    ts = [fix(_as_tensor(t)) for t in (tensors[0] if seq else tensors)]
    return tuple(ts) if seq or len(ts) != 1 else ts[0]


def atleast_1d(*tensors: Any) -> Any:
    """Tensors with at least one dim (0-d becomes shape (1,)); a tuple for several inputs."""
    return _atleast(tensors, lambda t: t.reshape(1) if t.ndim == 0 else t)


def atleast_2d(*tensors: Any) -> Any:
    """Tensors with at least two dims: 0-d becomes (1, 1), 1-d (n,) becomes (1, n)."""
    return _atleast(tensors, lambda t: t.reshape((1,) * (2 - t.ndim) + t.shape) if t.ndim < 2 else t)


def atleast_3d(*tensors: Any) -> Any:
    """Tensors with at least three dims: 0-d (1, 1, 1), 1-d (1, n, 1), 2-d (m, n, 1)."""
    def fix(t: Tensor) -> Tensor:
        if t.ndim == 0:
            return t.reshape(1, 1, 1)
        if t.ndim == 1:
            return t.reshape(1, -1, 1)
        return t.unsqueeze(-1) if t.ndim == 2 else t
    return _atleast(tensors, fix)


def cartesian_prod(*tensors: Tensor) -> Tensor:
    """All combinations of the entries of 1-D tensors, as rows: shape (prod of sizes, n)."""
    for i, t in enumerate(tensors):
        if t.ndim != 1:
            raise RuntimeError(f"Expect a 1D vector, but got shape {list(t.shape)} for input {i}")
    if len(tensors) == 1:
        return tensors[0]
    n = len(tensors)
    shape = tuple(t.shape[0] for t in tensors)
    grids = [t.reshape((1,) * i + (-1,) + (1,) * (n - i - 1)).expand(shape) for i, t in enumerate(tensors)]
    return stack(grids, -1).reshape(-1, n)


def meshgrid(*tensors: Any, indexing: str = "ij") -> tuple[Tensor, ...]:
    """Coordinate grids from 1-D tensors (``indexing="ij"``: matrix indexing; ``"xy"``: Cartesian)."""
    ts = list(tensors[0]) if len(tensors) == 1 and isinstance(tensors[0], list | tuple) else list(tensors)
    n = len(ts)
    if indexing == "xy" and n >= 2:
        ts[0], ts[1] = ts[1], ts[0]
    shape = tuple(t.numel() for t in ts)
    out = [t.reshape((1,) * i + (-1,) + (1,) * (n - i - 1)).expand(shape) for i, t in enumerate(ts)]
    if indexing == "xy" and n >= 2:
        out = [o.transpose(0, 1) for o in out]
        out[0], out[1] = out[1], out[0]
    return tuple(out)


def combinations(input: Tensor, r: builtins.int = 2, with_replacement: builtins.bool = False) -> Tensor:  # noqa: A002
    """The length-r combinations of a 1-D tensor's entries, one per row (differentiable).

    >>> lightgrad.combinations(lightgrad.tensor([1, 2, 3])).tolist()
    [[1, 2], [1, 3], [2, 3]]
    """
    if input.ndim != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(input.shape)}")
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    pick = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    rows = list(pick(range(input.shape[0]), r))
    if not rows or r == 0:
        return input[tensor([], dtype=D.int64)].reshape(0, r) if r else input[:0]
    return input[tensor(rows)]


def block_diag(*tensors: Tensor) -> Tensor:
    """A block-diagonal matrix of the inputs (0-d is 1 x 1, 1-d (n,) is 1 x n)."""
    blocks = []
    for i, t in enumerate(tensors):
        if t.ndim > 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer dimensions. Input {i} "
                               f"has {t.ndim} dimensions")
        blocks.append(t.reshape(1, -1) if t.ndim < 2 else t)
    if not blocks:
        return zeros(1, 0)
    dt = D.result_type(*[b for b in blocks])
    cols = builtins.sum(b.shape[1] for b in blocks)
    rows, left = [], 0
    for b in blocks:
        r, c = b.shape
        parts = [zeros(r, left, dtype=dt), b.to(dt), zeros(r, cols - left - c, dtype=dt)]
        rows.append(cat([p for p in parts if p.shape[1]] or [parts[1]], 1))
        left += c
    return cat(rows, 0)


# ---- helpers -------------------------------------------------------------------------------------
def _check_reshape(s: tuple[builtins.int, ...], n: builtins.int) -> None:
    """Raise PyTorch's error where shape ``s`` (one size may be -1) cannot hold ``n`` elements."""
    for i, d in enumerate(s):
        if d < -1:
            raise RuntimeError(f"invalid shape dimension {d} at index {i} of shape {list(s)}")
    if s.count(-1) > 1:
        raise RuntimeError("only one dimension can be inferred")
    known = math.prod(d for d in s if d != -1)
    if (-1 in s and (known == 0 or n % known)) or (-1 not in s and known != n):
        raise RuntimeError(f"shape '{list(s)}' is invalid for input of size {n}")


def _strided_view(x: Tensor, node: Any, *args: Any) -> Tensor:
    """``node``'s view of x (a Diagonal, Unfold or AsStrided of function.shape), sharing x's memory
    and version counter; with no grad_fn leading to x, it records its base as reshape and permute
    do (tensor.py's _viewed), for in-place writes that require grad."""
    t = node.apply(x, *args)
    t._version = x._version
    # (not for a view with no element of x's memory range: empty, or as_strided's reaching outside
    # it, whose writes _bump would take for a copy's to write back)
    if t._grad_fn is None and B.xp.may_share_memory(x._data, t._data):
        geometry = node()
        geometry.describe(x._data, *args)
        t._view = (x, geometry)
    return t


def _permuted(order: tuple[builtins.int, ...]) -> Any:
    """A Permute node that says how a view was made (tensor.py's _viewed)."""
    node = F.Permute()
    node.order = order
    return node
