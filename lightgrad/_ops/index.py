"""Indexing: ``x[i]`` and ``x[i] = v``, gather and scatter, masks, index_* along a dim, take and put."""

from __future__ import annotations

import builtins
import re
import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .. import backend as B
from .. import dtypes as D
from ..grad_mode import _enabled, no_grad
from .common import _SCALAR_TYPE, Number, _as_tensor, _check_broadcast, _dim, _raw, _scalar_of
from .creation import ones, zeros, zeros_like
from .elementwise import where

if TYPE_CHECKING:  # bound at run time by tensor.py, once Tensor exists (see _ops/__init__.py)
    from .. import function as F
    from ..tensor import Tensor
    from .common import TensorSelf


class IndexMixin:
    """Tensor's indexing methods."""

    __slots__ = ()

    # ---- x[index] and x[index] = value -----------------------------------------------------------
    def __getitem__(self: TensorSelf, index: Any) -> Tensor:
        index = _sequences(index)
        split = _int_first(self.ndim, index)
        if split is not None:
            return self[split[0]][split[1]]
        idx, advanced = _index(self, index)
        try:
            t = F.GetItem.apply(self, index=idx, advanced=advanced)
        except IndexError as e:
            raise _index_error(e) from None
        if not advanced:
            t._view = (self, idx)  # an in-place op on t is an in-place op on self there (_inplace)
            t._version = self._version  # (one counter for a base and its views, as PyTorch's)
        return t

    def __setitem__(self: TensorSelf, index: Any, value: Any) -> None:
        index = _sequences(index)
        split = _int_first(self.ndim, index)
        if split is not None:  # (the first index is basic: a view, written through)
            self[split[0]][split[1]] = value
            return
        idx, advanced = _index(self, index)
        self._assign(F.IndexPut, value, index=idx, accumulate=False)

    def index_put(self: TensorSelf, indices: Any, values: Any, accumulate: builtins.bool = False) -> Tensor:
        """A copy with ``values`` written at the positions ``indices`` select (summed there if ``accumulate``)."""
        idx, _ = _index(self, tuple(indices))
        v = _as_tensor(values, self)
        return F.IndexPut.apply(self, v.to(self.dtype), index=idx, accumulate=accumulate)

    def index_put_(self: TensorSelf, indices: Any, values: Any, accumulate: builtins.bool = False) -> Tensor:
        """Writes ``values`` at the positions ``indices`` select (adds them if ``accumulate``), in place."""
        idx, _ = _index(self, tuple(indices))
        self._assign(F.IndexPut, values, index=idx, accumulate=accumulate)
        return self

    def _assign(self: TensorSelf, op: Any, value: Any, **kw: Any) -> None:
        v = value if isinstance(value, Tensor) else Tensor._make(B.asarray(_scalar_of(value), self._data.dtype))
        if v._data.dtype != self._data.dtype:
            v = v.to(self.dtype)
        try:
            B.xp.broadcast_shapes(B.xp.shape(self._data[kw["index"]]), v.shape)
        except ValueError:
            raise RuntimeError(f"shape mismatch: value tensor of shape {list(v.shape)} cannot be broadcast "
                               f"to indexing result of shape {list(B.xp.shape(self._data[kw['index']]))}") from None
        except IndexError as e:
            raise _index_error(e) from None
        self._inplace(lambda s: op.apply(s, v, **kw), v)

    # ---- gather and select -----------------------------------------------------------------------
    def gather(self: TensorSelf, dim: builtins.int, index: Tensor) -> Tensor:
        """``out[i][j] = x[i][index[i][j]]`` along ``dim`` (index has x's number of dims; 0-d counts as 1-d)."""
        d = _dim(dim, self.ndim)
        ix = _int_index(index, "gather")
        if max(ix.ndim, 1) != max(self.ndim, 1):
            raise RuntimeError("Index tensor must have the same number of dimensions as input tensor")
        x, i = (self if self.ndim else self.reshape(1)), (ix if ix.ndim else ix.reshape(1))
        _check_index(i, x.shape[d], d, "scatter")
        x = x[tuple(slice(0, n) if k != d else slice(None) for k, n in enumerate(i.shape))]
        out = F.Gather.apply(x, dim=d, index=i)
        return out if ix.ndim else out.reshape(())

    def take_along_dim(self: TensorSelf, indices: Tensor, dim: builtins.int | None = None) -> Tensor:
        """The values at ``indices`` along ``dim`` (of the flattened tensor if dim is None), as numpy's take_along_axis."""
        if dim is None:
            return self.flatten().gather(0, _as_tensor(indices).flatten())
        ix = _int_index(indices, "take_along_dim")
        if ix.ndim != self.ndim:
            raise RuntimeError(f"torch.take_along_dim(): input and indices should have the same number of "
                               f"dimensions, but got {self.ndim} dimensions for input, and {ix.ndim} dimensions "
                               "for indices")
        d = _dim(dim, self.ndim, scalar=False)
        a, b = (tuple(1 if i == d else s for i, s in enumerate(t.shape)) for t in (self, ix))
        _check_broadcast(a, b)
        shape = list(B.xp.broadcast_shapes(a, b))
        xs = shape.copy()
        xs[d] = n = self.shape[d]
        shape[d] = ix.shape[d]
        # along a dim, as PyTorch, a negative index counts from the end (one past either end has no
        # meaning there: PyTorch reads whatever lies there; this raises as gather does)
        _check_index(ix, n, d, "take_along_dim")
        ix = ix + n * (ix < 0)
        return self.expand(xs).gather(d, Tensor._make(B.broadcast_to(ix, shape)))

    def take(self: TensorSelf, index: Tensor) -> Tensor:
        """Elements of the flattened tensor at ``index`` (any shape): ``x.take(i)`` is ``x.flatten()[i]``."""
        ix = _int_index(index, "take")
        _check_index(ix, self.numel(), 0, "take")
        return self.reshape(-1)[Tensor._make(ix)]

    def index_select(self: TensorSelf, dim: builtins.int, index: Tensor) -> Tensor:
        """The slices along ``dim`` at ``index`` (a 1-D integer tensor), in that order."""
        d = _dim(dim, self.ndim)
        ix = _int_index(index, "index_select")
        if ix.ndim > 1:
            raise IndexError("index_select(): Index is supposed to be a vector")
        if not self.ndim:
            if ix.size != 1:
                raise RuntimeError(f"index_select(): Index to scalar can have only 1 value, got {ix.size} value(s)")
            _check_index(ix, 1, 0, "index")
            return self.reshape(1)[Tensor._make(ix.reshape(-1))].reshape(())
        if self.ndim > 1 and not self.shape[d] and ix.size:
            raise RuntimeError("index_select(): self indexing axis dim should be positive")
        # (PyTorch's CPU kernel has a path of its own, with its own words, for dim 1 of 2 or more dims)
        _check_index(ix, self.shape[d], d, "index_select_dim1" if self.ndim > 1 and d == 1 else "index")
        return self[(slice(None),) * d + (Tensor._make(ix.reshape(-1)),)]

    def masked_select(self: TensorSelf, mask: Tensor) -> Tensor:
        """The elements where ``mask`` (broadcast) is True, as a 1-D tensor."""
        m = _as_tensor(mask)
        return self.expand(B.xp.broadcast_shapes(self.shape, m.shape))[m.expand(B.xp.broadcast_shapes(self.shape, m.shape))]

    def nonzero(self: TensorSelf, *, as_tuple: builtins.bool = False) -> Any:
        """The indices of the nonzero elements: an (n, ndim) int64 tensor, or one 1-D tensor per dim with ``as_tuple``."""
        D.check_bare_unsigned("nonzero_count_cpu", self._arr.dtype)
        nz = B.nonzero(self._data)
        if as_tuple:
            return tuple(Tensor._make(i) for i in nz)
        return Tensor._make(B.stack(nz, -1) if nz else B.xp.zeros((0, 0), B.xp.int64))

    def argwhere(self: TensorSelf) -> Tensor:
        """Indices of the non-zero elements, one row each: ``tensor([0, 3]).argwhere()`` is ``[[1]]``."""
        if not self.ndim:  # (one row of no coordinates when the scalar is non-zero)
            return self.reshape(1).nonzero()[:, :0]
        return self.nonzero()

    # ---- scatter ---------------------------------------------------------------------------------
    def scatter(self: TensorSelf, dim: builtins.int, index: Tensor, src: Any = None, *, value: Any = None,
                reduce: str | None = None) -> Tensor:
        """A copy with ``src`` values written at ``index`` along ``dim``."""
        s = src if src is not None else value
        add = reduce == "add"
        return self._scatter(dim, index, s, add)

    def scatter_add(self: TensorSelf, dim: builtins.int, index: Tensor, src: Tensor) -> Tensor:
        """A copy with ``src`` added at ``index`` along ``dim`` (repeated indices add up)."""
        return self._scatter(dim, index, src, True)

    def _scatter(self: TensorSelf, dim: builtins.int, index: Tensor, src: Any, add: builtins.bool) -> Tensor:
        d = _dim(dim, self.ndim)
        ix = _int_index(index, "scatter")
        if max(ix.ndim, 1) != max(self.ndim, 1):
            raise RuntimeError("Index tensor must have the same number of dimensions as self tensor")
        x, i = (self if self.ndim else self.reshape(1)), (ix if ix.ndim else ix.reshape(1))  # (0-d as 1-d)
        _check_index(i, x.shape[d], d, "scatter")
        s = src if isinstance(src, Tensor) else Tensor._make(B.asarray(src, self._data.dtype))
        if not self.ndim and s.ndim == 0:
            s = s.reshape(1)
        out = F.Scatter.apply(x, s.to(self.dtype), dim=d, index=i, add=add)
        return out if self.ndim else out.reshape(())

    def scatter_reduce(self: TensorSelf, dim: builtins.int, index: Tensor, src: Tensor, reduce: str, *,
                       include_self: builtins.bool = True) -> Tensor:
        """scatter with ``reduce`` in sum, prod, mean, amax, amin of src (and self, if include_self)
        at each position; as PyTorch, amax/amin split the gradient evenly among equal extremes."""
        reduce = {"max": "amax", "min": "amin"}.get(reduce, reduce)  # (aliases PyTorch accepts)
        if reduce not in ("sum", "prod", "mean", "amax", "amin"):
            raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce}")
        d = _dim(dim, self.ndim)
        ix = _int_index(index, "scatter_reduce")
        if ix.ndim != self.ndim:
            raise RuntimeError("Index tensor must have the same number of dimensions as self tensor")
        _check_index(ix, self.shape[d], d, "scatter")
        idx = Tensor._make(ix)
        if src._data.dtype != self._data.dtype:
            raise RuntimeError(f"scatter_reduce(): Expected self.dtype to be equal to src.dtype, got "
                               f"{self.dtype.name.capitalize()} and {src.dtype.name.capitalize()}")
        s = src
        base = self if include_self else self.scatter(d, idx, value=0)
        if reduce in ("sum", "mean"):
            total = base.scatter_add(d, idx, s)
            if reduce == "sum":
                return total
            count = zeros_like(self).scatter_add(d, idx, ones(ix.shape, dtype=self.dtype)) + (1 if include_self else 0)
            count = count.clamp(min=1)
            return total // count if self._data.dtype.kind in "iub" else total / count
        r = Tensor._make(B.scatter_extreme(self._data, ix, s._data, d, reduce, include_self))
        if not (_enabled.get() and (self.requires_grad or s.requires_grad)):
            return r
        sv = s[tuple(slice(0, n) for n in ix.shape)]
        hit = zeros(self.shape, dtype=D.bool_).scatter(d, idx, value=True)
        own = ~hit if not include_self else ones(self.shape, dtype=D.bool_)
        if reduce == "prod":
            # each factor's gradient is the product of the others: nonzero / itself where the
            # position holds no zero, the nonzero product for a lone zero, 0 with two zeros or more
            with no_grad():
                xs, xv = self.detach(), sv.detach()
                nz = Tensor._make(B.scatter_extreme(where(xs == 0, 1, xs)._data, ix, where(xv == 0, 1, xv)._data,
                                                    d, "prod", include_self))
                zc = ((own & (xs == 0)).to(self.dtype)
                      + zeros_like(self).scatter_add(d, idx, (xv == 0).to(self.dtype)))
                c_self = where(xs == 0, nz * (zc == 1), nz / where(xs == 0, 1, xs) * (zc == 0))
                nzv, zcv = nz.gather(d, idx), zc.gather(d, idx)
                c_src = where(xv == 0, nzv * (zcv == 1), nzv / where(xv == 0, 1, xv) * (zcv == 0))
            # (exact to first order only: the coefficients are constants of the graph)
            once = F.OnceDifferentiable.apply
            ds = where(own, (once(self, op="scatter_reduce (prod)") - xs) * c_self, 0.0)
            return r + ds + zeros_like(self).scatter_add(d, idx, (once(sv, op="scatter_reduce (prod)") - xv) * c_src)
        # the delta x - x.detach() is 0 in value and 1 in gradient; each equal extreme gets 1/count
        with no_grad():
            # (as PyTorch, an excluded self equal to the result still counts in the split)
            tie = (self.detach() == r) & self.isfinite()
            own_hit = own & tie
            src_hit = (sv.detach() == r.gather(d, idx)) & sv.isfinite()
            count = (tie.to(self.dtype) + zeros_like(self).scatter_add(d, idx, src_hit.to(self.dtype))).clamp(min=1)
        ds = where(own_hit, self - self.detach(), 0.0)
        dsrc = zeros_like(self).scatter_add(d, idx, where(src_hit, sv - sv.detach(), 0.0))
        return r + (ds + dsrc) / count

    def put(self: TensorSelf, index: Tensor, source: Tensor, accumulate: builtins.bool = False) -> Tensor:
        """A copy with ``source`` written (or added) at flat positions ``index``."""
        ix = _int_index(index, "put")
        _check_index(ix, self.numel(), 0, "take")
        if source.numel() != ix.size:
            raise RuntimeError(f"put_(): Expected source and index to have the same number of elements, "
                               f"but got source.numel() = {source.numel()}, index.numel() = {ix.size}")
        flat = self.reshape(-1).index_put((Tensor._make(ix.reshape(-1)),), source.reshape(-1), accumulate)
        return flat.reshape(self.shape)

    def _scatter_into(self: TensorSelf, key: Any, src: Tensor, what: str) -> Tensor:
        out = self.clone()
        want = tuple(out[key].shape)
        if tuple(src.shape) != want:
            raise RuntimeError(f"{what}: expected src to have a size equal to the slice of self. src size = "
                               f"{list(src.shape)}, slice size = {list(want)}")
        out[key] = src
        return out

    def select_scatter(self: TensorSelf, src: Tensor, dim: builtins.int, index: builtins.int) -> Tensor:
        """A copy of self with ``src`` written at ``select(dim, index)`` (differentiable in both)."""
        self.select(dim, index)
        return self._scatter_into((slice(None),) * _dim(dim, self.ndim) + (index,), src, "select_scatter")

    def slice_scatter(self: TensorSelf, src: Tensor, dim: builtins.int = 0, start: builtins.int | None = None,
                      end: builtins.int | None = None, step: builtins.int = 1) -> Tensor:
        """A copy of self with ``src`` written at ``[start:end:step]`` along ``dim``."""
        key = (slice(None),) * _dim(dim, self.ndim) + (slice(start, end, step),)
        return self._scatter_into(key, src, "slice_scatter")

    def diagonal_scatter(self: TensorSelf, src: Tensor, offset: builtins.int = 0, dim1: builtins.int = 0,
                         dim2: builtins.int = 1) -> Tensor:
        """A copy of self with ``src`` written on ``diagonal(offset, dim1, dim2)``."""
        d1, d2 = _dim(dim1, self.ndim), _dim(dim2, self.ndim)
        want = tuple(self.diagonal(offset, d1, d2).shape)
        if tuple(src.shape) != want:
            raise RuntimeError(f"diagonal_scatter: expected src to have a size equal to the slice of self. "
                               f"src size = {list(src.shape)}, slice size = {list(want)}")
        k = want[-1]
        rows = B.arange(k) + max(-offset, 0)
        cols = B.arange(k) + max(offset, 0)
        order = [i for i in range(self.ndim) if i not in (d1, d2)] + [d1, d2]
        out = self.permute(order).clone()  # (..., n1, n2)
        out[..., Tensor._make(rows), Tensor._make(cols)] = src
        return out.permute(B.argsort(order).tolist())

    # ---- masks -----------------------------------------------------------------------------------
    def masked_fill(self: TensorSelf, mask: Any, value: Any) -> Tensor:
        """Set positions where ``mask`` is True to ``value`` (mask broadcasts)."""
        m = _as_tensor(mask)
        if m._data.dtype != B.xp.bool_:
            raise RuntimeError(f"masked_fill_ only supports boolean masks, but got mask with dtype {m.dtype}")
        if isinstance(value, Tensor) and value.ndim:
            raise RuntimeError(f"masked_fill_ only supports a 0-dimensional value tensor, but got tensor "
                               f"with {value.ndim} dimension(s).")
        v = value if isinstance(value, Tensor) and value.requires_grad else _scalar_of(value)
        if not isinstance(v, Tensor):
            v = B.asarray(v, self._data.dtype)
        return where(m, v, self)

    def masked_scatter(self: TensorSelf, mask: Tensor, source: Tensor) -> Tensor:
        """Positions where ``mask`` holds take consecutive elements of ``source`` (row-major order)."""
        if mask._data.dtype != B.xp.bool_:
            raise RuntimeError(f"masked_scatter_ only supports boolean masks, but got mask with dtype {mask.dtype}")
        if source._data.dtype != self._data.dtype:
            raise RuntimeError(f"masked_scatter: expected self and source to have same dtypes but got "
                               f"{self.dtype} and {source.dtype}")
        _check_broadcast(self._data.shape, mask._data.shape)
        shape = B.xp.broadcast_shapes(self._data.shape, mask._data.shape)
        m = B.broadcast_to(mask._data, shape)
        count = builtins.int(m.sum())
        if count > source.numel():
            raise RuntimeError(f"masked_scatter: Number of elements of source < number of ones in mask "
                               f"({source.numel()} < {count})")
        pos = B.xp.maximum(B.cumsum(m.reshape(-1)) - 1, 0).reshape(shape)  # index into source per position
        picked = source.reshape(-1)[Tensor._make(pos)] if source.numel() else self.expand(shape) * 0
        return where(Tensor._make(B.xp.ascontiguousarray(m)), picked, self.expand(shape))

    # ---- slices along a dim at an index: index_add, index_copy, index_fill, index_reduce ---------
    def _index_along(self: TensorSelf, op: str, dim: builtins.int, index: Any, source: Any,
                     alpha: Number = 1) -> tuple[builtins.int, B.ndarray]:
        """PyTorch's checks for index_add, index_copy, index_fill or index_reduce (``op``; ``source``
        is the value for index_fill), in its order and words; returns dim as an axis and the index as
        int64 (1-D), negative entries of index_fill's counted from the end."""
        ix = _raw(index) if isinstance(index, Tensor) else B.asarray(index)
        name = _SCALAR_TYPE[D._BY_NP[ix.dtype].name] if ix.dtype in D._BY_NP else str(ix.dtype)
        if op == "index_fill":
            if isinstance(source, Tensor) and source.ndim:
                raise RuntimeError(f"index_fill_ only supports a 0-dimensional value tensor, but got tensor with "
                                   f"{source.ndim} dimension(s).")
            if ix.dtype != B.xp.int64:
                raise IndexError("index_fill_(): Expected dtype int64 for index.")
            d = _dim(dim, self.ndim)
            if ix.ndim > 1:
                raise RuntimeError("Index has to be a vector/scalar")
            kind = "index_fill"
        else:
            d = _dim(dim, self.ndim)
            mine, theirs = _SCALAR_TYPE[self.dtype.name], _SCALAR_TYPE[source.dtype.name]
            if op == "index_copy":
                self._check_index_copy(d, ix, name, source, mine, theirs)
                kind = "index_copy"
            else:
                self._check_index_add(op, d, ix, name, source, mine, theirs)
                # (PyTorch's CPU kernel hands an int64 index with alpha 1 along the first or last of two
                # or more dims to scatter_add, and so says it in scatter's words)
                fast = op == "index_add" and self.ndim > 1 and d in (0, self.ndim - 1) and alpha == 1 \
                    and ix.dtype == B.xp.int64
                kind = "scatter" if fast else "index"
        ix = ix.reshape(-1).astype(B.xp.int64, copy=False)
        n = self.shape[d] if self.ndim else 1
        _check_index(ix, n, d, kind)
        return d, (ix + n * (ix < 0) if kind == "index_fill" else ix)

    def _check_index_add(self: TensorSelf, op: str, d: builtins.int, ix: B.ndarray, name: str, source: Tensor, mine: str,
                         theirs: str) -> None:
        """index_add's (and index_reduce's) checks of index and source, in PyTorch's order."""
        if ix.ndim > 1:
            raise IndexError(f"{op}_(): Index is supposed to be a vector, but got dim: {ix.ndim} with type: {name} "
                             f"and size: {list(ix.shape)}")
        if ix.dtype not in (B.xp.int64, B.xp.int32):
            raise RuntimeError(f"{op}_(): Expected dtype int32/int64 for index but got: {name}")
        if mine != theirs:
            raise RuntimeError(f"{op}_(): self ({mine}) and source ({theirs}) must have the same scalar type")
        n_src = source.shape[d] if source.ndim else 1
        if ix.size != n_src:
            raise RuntimeError(f"{op}_(): Number of indices ({ix.size}) should be equal to source.size(dim): "
                               f"({n_src}), for dim: {d}")
        both = source.ndim and self.ndim  # (the dim is left out of the comparison only where both have it)
        if [s for i, s in enumerate(self.shape) if i != d or not both] != \
                [s for i, s in enumerate(source.shape) if i != d or not both]:
            raise RuntimeError("source tensor shape must match self tensor shape, excluding the specified dimension. "
                               f"Got self.shape = {list(self.shape)} source.shape = {list(source.shape)}")

    def _check_index_copy(self: TensorSelf, d: builtins.int, ix: B.ndarray, name: str, source: Tensor, mine: str,
                          theirs: str) -> None:
        """index_copy's checks of index and source, in PyTorch's order."""
        if ix.ndim > 1:
            raise IndexError(f"index_copy_(): Index should have dimension 1 or 0 (got {ix.ndim})")
        if not source.ndim and ix.size != 1:
            raise IndexError(f"index_copy_(): When source is scalar, index should have one element (got {ix.size})")
        if source.ndim and self.ndim and source.ndim != self.ndim:
            raise IndexError(f"index_copy_(): When source and destination are not scalars, their dimensionality "
                             f"must match. Source dimensionality ({source.ndim}), destination dimensionality "
                             f"({self.ndim})")
        if ix.dtype != B.xp.int64:
            raise RuntimeError(f"index_copy_(): Expected a long tensor for index, but got {name}")
        if mine != theirs:
            raise RuntimeError(f"index_copy_(): self and source expected to have the same dtype, but got (self) "
                               f"{mine} and (source) {theirs}")
        ds = " ".join(str(s) for i, s in enumerate(self.shape) if i != d)
        ss = " ".join(str(s) for i, s in enumerate(source.shape) if i != d)
        if ds != ss:
            raise RuntimeError(f"index_copy_(): Source/destination tensor must have same slice shapes. Destination "
                               f"slice shape: {ds} at dimension {d} and source slice shape: {ss} at dimension 0.")
        if source.ndim and ix.size != source.shape[d]:
            raise IndexError(f"index_copy_(): Number of indices ({ix.size}) should be equal to source.size(dim) "
                             f"({source.shape[d]})")

    def _index_grid(self: TensorSelf, d: builtins.int, ix: B.ndarray, shape: Any) -> Tensor:
        """The 1-D index ``ix`` laid along d and broadcast to ``shape`` (for scatter)."""
        along = [1] * len(shape)
        along[d] = len(ix)
        return Tensor._make(B.broadcast_to(ix.reshape(along), tuple(shape)))

    def index_add(self: TensorSelf, dim: builtins.int, index: Tensor, source: Tensor, *, alpha: Number = 1) -> Tensor:
        """A copy with ``alpha * source`` slices added at ``index`` along ``dim`` (repeats add up).

        >>> lightgrad.zeros(3).index_add(0, lightgrad.tensor([0, 0, 2]), lightgrad.ones(3))
        tensor([2., 0., 1.])
        """
        d, ix = self._index_along("index_add", dim, index, source, alpha)
        if not self.ndim:
            return self + source.reshape(()) * alpha * len(ix)
        s = source if alpha == 1 else source * alpha
        return self.scatter_add(d, self._index_grid(d, ix, s.shape), s)

    def index_copy(self: TensorSelf, dim: builtins.int, index: Tensor, source: Tensor) -> Tensor:
        """A copy with ``source`` slices written at ``index`` along ``dim``."""
        d, ix = self._index_along("index_copy", dim, index, source)
        if not self.ndim:
            return source.reshape(()) + self * 0
        return self.scatter(d, self._index_grid(d, ix, source.shape), source)

    def index_fill(self: TensorSelf, dim: builtins.int, index: Tensor, value: Any) -> Tensor:
        """A copy with the slices at ``index`` along ``dim`` set to ``value``."""
        d, ix = self._index_along("index_fill", dim, index, value)
        n = self.shape[d] if self.ndim else 1
        mask = B.isin(B.arange(n), ix).reshape([n if i == d else 1 for i in range(self.ndim)])
        return self.masked_fill(Tensor._make(mask), value)

    def index_reduce(self: TensorSelf, dim: builtins.int, index: Tensor, source: Tensor, reduce: str, *,
                     include_self: builtins.bool = True) -> Tensor:
        """Reduce rows of ``source`` into ``self`` at ``index`` along ``dim`` with prod, mean, amax or amin."""
        if reduce not in ("prod", "mean", "amax", "amin"):
            raise RuntimeError(f"index_reduce(): Expected reduce to be one of prod, mean, amax or amin but got "
                               f"{reduce}.")
        d, _ = self._index_along("index_reduce", dim, index, source)
        src = source if source.ndim else source.reshape(1)
        view = [1] * src.ndim
        view[d] = -1
        idx = index.to(D.int64).reshape(view).expand(src.shape)
        x = self if self.ndim else self.reshape(1)
        return x.scatter_reduce(d, idx, src, reduce, include_self=include_self).reshape(self.shape)


# ---- free functions ------------------------------------------------------------------------------
def unravel_index(indices: Any, shape: Any) -> tuple[Tensor, ...]:
    """Flat indices to coordinates in ``shape``: ``unravel_index(tensor(5), (2, 3))`` is ``(1, 2)``."""
    ix = _as_tensor(indices)
    if ix._data.dtype.kind not in "iu":
        raise TypeError(f"expected 'indices' to be integer dtype, but got {ix.dtype}")
    dims = (shape,) if isinstance(shape, builtins.int) else tuple(shape)
    if builtins.any(d < 0 for d in dims):
        raise ValueError(f"'shape' cannot have negative values, but got {tuple(dims)}")
    rest, coords = ix._data.astype(B.xp.int64), []
    # floor division and modulo per dim, last first: out-of-range and negative indices wrap as in PyTorch
    for d in reversed(dims):
        coords.append(rest % d if d else rest * 0)
        rest = rest // d if d else rest * 0
    return tuple(Tensor._make(B.asarray(c, B.xp.int64)) for c in reversed(coords))


# ---- helpers: PyTorch's index as NumPy's, index checks in PyTorch's words ------------------------
_SEQUENCE_AS_TUPLE = ("Using a non-tuple sequence for multidimensional indexing is deprecated and will be changed in "
                      "pytorch 2.9; use x[tuple(seq)] instead of x[seq]. In pytorch 2.9 this will be interpreted as "
                      "tensor index, x[torch.tensor(seq)], which will result either in an error or a different result")


def _index_error(e: IndexError) -> IndexError:
    """NumPy's IndexError in PyTorch's words (dims, not axes; index shapes as lists)."""
    msg = str(e).replace("axis", "dimension")
    if msg.startswith("shape mismatch: indexing arrays"):
        shapes = re.findall(r"\(([^)]*)\)", msg)
        msg = "shape mismatch: indexing tensors could not be broadcast together with shapes " + ", ".join(
            "[" + ", ".join(d.strip() for d in sh.split(",") if d.strip()) + "]" for sh in shapes)
    return IndexError(msg)


def _is_sequence(it: Any) -> builtins.bool:
    """Python's sequence protocol, as PyTorch's indexing asks it (a dict or a set is none)."""
    return isinstance(it, Sequence | B.ndarray) and not isinstance(it, Tensor)


def _sequences(index: Any) -> Any:
    """PyTorch's reading of Python sequences in an index: a ``range``, tuple or other sequence inside
    the index is an integer (or bool) list, as a list is; a top-level non-tuple sequence of fewer
    than 32 entries of which one is a sequence, tensor, slice, None or Ellipsis is (deprecated, with
    PyTorch's warning) the tuple of its entries (NumPy's old rule: ``x[[0, slice(None)]]`` is
    ``x[0, :]``); any other one is one index (``x[range(3)]`` is ``x[[0, 1, 2]]``)."""
    if isinstance(index, builtins.int | slice | Tensor | B.ndarray) or index is None or index is Ellipsis:
        return index
    if isinstance(index, str):
        raise TypeError("new(): invalid data type 'str'")
    if not isinstance(index, tuple):
        if not _is_sequence(index):
            return index
        if len(index) >= 32 or not builtins.any(
                _is_sequence(it) or isinstance(it, Tensor | slice) or it is None or it is Ellipsis for it in index):
            return index if isinstance(index, list) else list(index)
        warnings.warn(_SEQUENCE_AS_TUPLE, UserWarning, stacklevel=3)
        index = tuple(index)
    if not builtins.any(isinstance(it, tuple | range | str) or (_is_sequence(it) and not isinstance(it, list | B.ndarray))
                        for it in index):
        return index
    out = []
    for it in index:
        if isinstance(it, str):
            raise TypeError("new(): invalid data type 'str'")
        out.append(list(it) if _is_sequence(it) and not isinstance(it, list | B.ndarray) else it)
    return tuple(out)


def _int_first(ndim: builtins.int, index: Any) -> tuple[tuple[Any, ...], tuple[Any, ...]] | None:
    """PyTorch's order for an index that mixes integers with advanced (tensor, list, mask) entries:
    the integers select first, as basic indexing, then the advanced entries index what is left, an
    Ellipsis that covers no dim separating nothing. NumPy counts integers as advanced entries and an
    Ellipsis as a separator, which moves the result's dims (``x[0, :, [0, 1]]`` of a (2, 3, 4) tensor:
    PyTorch's shape is (3, 2), NumPy's (2, 3)). Returns the two indices to apply one after the
    other, or None where NumPy's order is PyTorch's."""
    items = index if isinstance(index, tuple) else (index,)

    def kind(it: Any) -> str:
        a = it._arr if isinstance(it, Tensor) else it
        if isinstance(a, list) or isinstance(a, B.ndarray) and (a.ndim or a.dtype == B.xp.bool_):
            return "mask" if B.asarray(a).dtype == B.xp.bool_ else "array"
        if isinstance(a, builtins.int | B.xp.integer) or isinstance(a, B.ndarray):  # (a 0-d integer tensor)
            return "int"
        return "basic"
    kinds = [kind(it) for it in items]
    if "array" not in kinds and "mask" not in kinds:
        return None
    if "int" not in kinds and not builtins.any(it is Ellipsis for it in items):
        return None
    first: list[Any] = []
    then: list[Any] = []
    for it, k in zip(items, kinds):
        if k in ("array", "mask"):
            n = (it._arr if isinstance(it, Tensor) else B.asarray(it)).ndim if k == "mask" else 1
            first += [slice(None)] * n
            then.append(it)
        elif k == "int":
            first.append(it)
        else:
            first.append(it)
            then.append(it if it is Ellipsis else slice(None))  # (slices applied; None's dim now exists)
    # the Ellipsis of the second index spelled out: the dims the others leave after the first
    left = ndim - kinds.count("int") + builtins.sum(1 for it in items if it is None)
    used = builtins.sum((it._arr if isinstance(it, Tensor) else B.asarray(it)).ndim if k == "mask" else 1
                        for it, k in zip(then, [kind(t) if t is not Ellipsis else "e" for t in then]) if k != "e")
    if Ellipsis in [t for t in then if t is Ellipsis]:
        i = next(j for j, t in enumerate(then) if t is Ellipsis)
        then[i:i + 1] = [slice(None)] * builtins.max(left - used, 0)
    return tuple(first), tuple(then)


def _index(x: Tensor, index: Any) -> tuple[Any, bool]:
    """Translate a PyTorch index to a NumPy one; says whether it is advanced (copying)."""
    items = index if isinstance(index, tuple) else (index,)
    out: list[Any] = []
    advanced = False
    for it in items:
        if isinstance(it, Tensor):
            it = it._data
        elif isinstance(it, list):
            # (an empty list is an empty integer index, as PyTorch's)
            it = B.asarray([i._data if isinstance(i, Tensor) else i for i in it], None if it else B.xp.int64)
            if it.dtype.kind == "f":
                raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
        if isinstance(it, B.ndarray):
            if it.dtype.kind not in "iub":
                raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
            if it.dtype == B.xp.uint8:
                it = it.astype(bool)
            if it.ndim == 0 and it.dtype.kind in "iu":
                it = int(it)
            else:
                advanced = True
        elif isinstance(it, float):
            raise IndexError("only integers, slices (`:`), ellipsis (`...`), None and long or byte "
                             "Variables are valid indices (got float)")
        elif not (it is None or it is Ellipsis or isinstance(it, int | slice | B.xp.integer)):
            raise IndexError(f"only integers, slices (`:`), ellipsis (`...`), None and long or byte "
                             f"Variables are valid indices (got {type(it).__name__})")
        if isinstance(it, slice) and it.step is not None and it.step <= 0:
            raise ValueError("step must be greater than zero")
        out.append(it)
    nd = sum(1 for it in out if it is not None and it is not Ellipsis
             and not (isinstance(it, B.ndarray) and it.dtype == bool)) + sum(
        it.ndim for it in out if isinstance(it, B.ndarray) and it.dtype == bool)
    if nd > x.ndim:
        raise IndexError(f"too many indices for tensor of dimension {x.ndim}")
    return (tuple(out) if isinstance(index, tuple) or len(out) != 1 else out[0]), advanced


def _int_index(index: Any, op: str) -> B.ndarray:
    ix = _raw(index) if isinstance(index, Tensor) else B.asarray(index)
    if ix.dtype.kind not in "iu":
        raise RuntimeError(f"{op}(): Expected dtype int64 for index, got {D._BY_NP.get(ix.dtype, ix.dtype)}")
    return ix.astype(B.xp.int64, copy=False)


# How PyTorch's CPU kernels word an index outside its dim, by op family: (exception, message,
# whether a negative index counts from the end); {i} is the first bad index, {d} the dim, {n} its size.
_OUT_OF_RANGE = {
    # gather, scatter, scatter_add, scatter_reduce; index_add on its fast path
    "scatter": (RuntimeError, "index {i} is out of bounds for dimension {d} with size {n}", False),
    "take_along_dim": (RuntimeError, "index {i} is out of bounds for dimension {d} with size {n}", True),
    "index": (IndexError, "index out of range in self", False),  # index_select, index_add, index_reduce
    "index_select_dim1": (RuntimeError, "INDICES element is out of DATA bounds, id={i} axis_dim={n}", False),
    "index_copy": (IndexError, "index_copy_(): index {i} is out of bounds for dimension {d} with size {n}", False),
    "index_fill": (IndexError, "index {i} is out of bounds for dimension {d} with size {n}", True),
    "take": (IndexError, "out of range: tried to access index {i} on a tensor of {n} elements.", True),  # and put
}


def _check_index(ix: B.ndarray, n: builtins.int, d: builtins.int, kind: str) -> None:
    """Raise PyTorch's error for ``kind`` (see _OUT_OF_RANGE) where an entry of ``ix`` is outside a
    dim of size ``n``: one min and one max when all are inside."""
    exc, msg, negative = _OUT_OF_RANGE[kind]
    lo = -n if negative else 0
    if ix.size and (ix.max() >= n or ix.min() < lo):
        flat = ix.reshape(-1)
        bad = builtins.int(flat[B.argmax((flat >= n) | (flat < lo))])
        raise exc(msg.format(i=bad, d=d, n=n))
