"""Sorting and selection: sort, topk, order statistics (median, quantile, ...), running extremes,
distinct values; and searchsorted, bucketize, isin."""

from __future__ import annotations

import builtins
from typing import TYPE_CHECKING, Any

from .. import backend as B
from .. import dtypes as D
from .common import _as_tensor, _dim, _floating, _raw, return_types
from .index import _int_index
from .reduce import _check_nonempty

if TYPE_CHECKING:  # bound at run time by tensor.py, once Tensor exists (see _ops/__init__.py)
    from .. import function as F
    from ..tensor import Tensor
    from .common import TensorSelf


class SortMixin:
    """Tensor's sorting and selection methods."""

    __slots__ = ()

    # ---- selection by sorting (sort, topk) and its helper ----------------------------------------
    # Sorting and selection compute indices over the raw array (backend, no graph) and take the
    # values with a differentiable gather, so the gradient reaches exactly the selected elements.
    def _picked(self: TensorSelf, x: Tensor, d: builtins.int, idx: B.ndarray, keepdim: builtins.bool, kind: Any) -> Any:
        """x's values at ``idx`` along d (differentiable) and the indices, as a ``kind`` named tuple."""
        vals, ind = F.Gather.apply(x, dim=d, index=idx), Tensor._make(idx)
        if not keepdim:
            vals, ind = vals.squeeze(d), ind.squeeze(d)
        if not self.ndim:
            vals, ind = vals.reshape(()), ind.reshape(())
        return kind(vals, ind)

    def sort(self: TensorSelf, dim: builtins.int = -1, descending: builtins.bool = False, *,
             stable: builtins.bool = False) -> Any:
        """(values, indices) sorted along ``dim``; NaN sorts as the largest; always stable.

        >>> lightgrad.tensor([3.0, 1.0, 2.0]).sort().indices
        tensor([1, 2, 0])
        """
        x, d = self._along(dim)
        return self._picked(x, d, B.sort_indices(x._data, d, descending), True, return_types.sort)

    def argsort(self: TensorSelf, dim: builtins.int = -1, descending: builtins.bool = False,
                stable: builtins.bool = False) -> Tensor:
        """The indices that sort ``dim``: ``tensor([3, 1, 2]).argsort()`` is ``tensor([1, 2, 0])``."""
        x, d = self._along(dim)
        ind = Tensor._make(B.sort_indices(x._data, d, descending))
        return ind if self.ndim else ind.reshape(())

    def msort(self: TensorSelf) -> Tensor:
        """Sorted along dim 0: ``x.msort()`` is ``x.sort(0).values``."""
        return self.sort(0).values

    def topk(self: TensorSelf, k: builtins.int, dim: builtins.int = -1, largest: builtins.bool = True,
             sorted: builtins.bool = True) -> Any:  # noqa: A002
        """The k largest (smallest) values along ``dim`` and their indices, largest first.

        >>> lightgrad.tensor([1.0, 5.0, 3.0]).topk(2)
        topk(values=tensor([5., 3.]), indices=tensor([1, 2]))
        """
        D.check_bare_unsigned("topk_cpu", self._arr.dtype)
        x, d = self._along(dim)
        n = x.shape[d]
        if not 0 <= k <= n:
            raise RuntimeError(f"selected index k out of range: expected k in [0, {n}] for dimension {d}, got {k}")
        return self._picked(x, d, B.topk_indices(x._data, k, d, largest), True, return_types.topk)

    # ---- order statistics ------------------------------------------------------------------------
    def kthvalue(self: TensorSelf, k: builtins.int, dim: builtins.int = -1, keepdim: builtins.bool = False) -> Any:
        """The k-th smallest value (k from 1) along ``dim`` and its index: ``x.kthvalue(1)`` is the min."""
        x, d = self._along(dim)
        _check_nonempty(x, d, "kthvalue")
        n = x.shape[d]
        if not 1 <= k <= n:
            raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {d}: "
                               f"expected k in [1, {n}], got {k}")
        idx = B.sort_indices(x._data, d)[(slice(None),) * d + (slice(k - 1, k),)]
        return self._picked(x, d, idx, keepdim, return_types.kthvalue)

    def median(self: TensorSelf, dim: builtins.int | None = None, keepdim: builtins.bool = False) -> Any:
        """The lower of the two middle values (NaN if any is NaN); with ``dim``, (values, indices).

        >>> lightgrad.tensor([4.0, 1.0, 3.0, 2.0]).median()
        tensor(2.)
        """
        return self._median(dim, keepdim, False)

    def nanmedian(self: TensorSelf, dim: builtins.int | None = None, keepdim: builtins.bool = False) -> Any:
        """median ignoring NaNs (NaN only where all are NaN)."""
        return self._median(dim, keepdim, True)

    def _median(self: TensorSelf, dim: builtins.int | None, keepdim: builtins.bool, ignore_nan: builtins.bool) -> Any:
        if dim is None:
            x = self.reshape(-1)
            if not x.numel():
                return Tensor._make(B.full((), B.xp.nan, _floating(self)._data.dtype))
            return F.Gather.apply(x, dim=0, index=B.median_indices(x._data, 0, ignore_nan)).reshape(())
        x, d = self._along(dim)
        name = "nanmedian" if ignore_nan else "median"
        _check_nonempty(x, d, name)
        kind = return_types.nanmedian if ignore_nan else return_types.median
        return self._picked(x, d, B.median_indices(x._data, d, ignore_nan), keepdim, kind)

    def mode(self: TensorSelf, dim: builtins.int = -1, keepdim: builtins.bool = False) -> Any:
        """The most frequent value along ``dim`` (the smallest if several) and its last index.

        >>> lightgrad.tensor([2, 1, 2, 1, 3]).mode()
        mode(values=tensor(1), indices=tensor(3))
        """
        x, d = self._along(dim)
        _check_nonempty(x, d, "mode")
        return self._picked(x, d, B.mode_indices(x._data, d), keepdim, return_types.mode)

    def quantile(self: TensorSelf, q: Any, dim: builtins.int | None = None, keepdim: builtins.bool = False, *,
                 interpolation: str = "linear") -> Tensor:
        """The q-th quantiles along ``dim`` (of all elements when None), differentiable through the
        selected values: ``tensor([1., 2., 4.]).quantile(0.5)`` is ``tensor(2.)``."""
        return self._quantile(q, dim, keepdim, interpolation, ignore_nan=False)

    def nanquantile(self: TensorSelf, q: Any, dim: builtins.int | None = None, keepdim: builtins.bool = False, *,
                    interpolation: str = "linear") -> Tensor:
        """quantile ignoring NaNs (NaN where a whole slice is NaN)."""
        return self._quantile(q, dim, keepdim, interpolation, ignore_nan=True)

    def _quantile(self: TensorSelf, q: Any, dim: builtins.int | None, keepdim: builtins.bool, interpolation: str,
                  ignore_nan: builtins.bool) -> Tensor:
        name = "nanquantile" if ignore_nan else "quantile"
        if not D.is_floating(self._data.dtype):
            raise RuntimeError(f"{name}() input tensor must be either float or double dtype")
        if isinstance(q, Tensor):
            if q._data.dtype != self._data.dtype:
                raise RuntimeError(f"{name}() q tensor must be same dtype as the input tensor")
            if q.ndim > 1:
                raise RuntimeError(f"{name}() q must be a scalar or 1D tensor")
            qs = q._data.astype(B.xp.float64)
        else:
            qs = B.asarray(q, B.xp.float64)
        if qs.size and not (builtins.bool((qs >= 0).all()) and builtins.bool((qs <= 1).all())):
            raise RuntimeError(f"{name}() q values must be in the range [0, 1]" if isinstance(q, Tensor)
                               else f"{name}() q must be in the range [0, 1] but got {q}")
        if self.numel() == 0:
            raise RuntimeError(f"{name}() input tensor must be non-empty")
        if dim is None:
            x, out_shape = self.reshape(-1), ((1,) * self.ndim if keepdim else ())
        else:
            d = _dim(dim, max(self.ndim, 1))
            x = self.reshape(1) if not self.ndim else self.movedim(d, -1)
            shape = list(self.shape)
            if shape:
                shape[d] = 1
                if not keepdim:
                    del shape[d]
            out_shape = tuple(shape)
        v = x.sort(-1).values  # NaNs sort last
        n = v.shape[-1]
        nan = B.isnan(v._data)
        if ignore_nan:
            ranks = qs.reshape(qs.shape + (1,) * v.ndim) * ((~nan).sum(-1, keepdims=True) - 1)
            ranks = B.xp.where(ranks < 0, 0, ranks)
        else:
            ranks = qs.reshape(qs.shape + (1,) * v.ndim) * (n - 1) + B.xp.zeros(nan.shape[:-1] + (1,))
            ranks = B.xp.where(nan.any(-1, keepdims=True), n - 1, ranks)
        ranks = ranks.astype(self._data.dtype).astype(B.xp.float64)  # (PyTorch computes ranks in input's dtype)
        if interpolation == "lower":
            ranks = B.xp.floor(ranks)
        elif interpolation == "higher":
            ranks = B.xp.ceil(ranks)
        elif interpolation == "nearest":
            ranks = B.xp.round(ranks)
        elif interpolation not in ("linear", "midpoint"):
            raise RuntimeError(f"{name}() interpolation must be one of linear, lower, higher, midpoint or "
                               f"nearest, but got {interpolation}")
        vb = v.expand(ranks.shape[:-1] + (n,))
        below = ranks.astype(B.xp.int64)
        r = vb.gather(-1, Tensor._make(below))
        if interpolation in ("linear", "midpoint"):
            above = vb.gather(-1, Tensor._make(B.xp.ceil(ranks).astype(B.xp.int64)))
            w = B.full(ranks.shape, 0.5) if interpolation == "midpoint" else ranks - below
            r = r.lerp(above, Tensor._make(w.astype(self._data.dtype)))
        return r.reshape(qs.shape + out_shape)

    # ---- running extremes ------------------------------------------------------------------------
    def _cum_along(self: TensorSelf, dim: builtins.int, name: str) -> tuple[Tensor, builtins.int]:
        if not self.ndim and dim not in (0, -1):  # (cummax and cummin word it their own way)
            raise IndexError(f"{name}(): Expected reduction dim -1 or 0 for scalar but got {dim}")
        return self._along(dim)

    def cummax(self: TensorSelf, dim: builtins.int) -> Any:
        """Running max along ``dim`` and where it was taken (the latest such index).

        >>> lightgrad.tensor([1.0, 3.0, 2.0]).cummax(0).values
        tensor([1., 3., 3.])
        """
        x, d = self._cum_along(dim, "cummax")
        return self._picked(x, d, B.cumext_indices(x._data, d, True), True, return_types.cummax)

    def cummin(self: TensorSelf, dim: builtins.int) -> Any:
        """(values, indices): the running minimum along ``dim`` and where it was found."""
        x, d = self._cum_along(dim, "cummin")
        return self._picked(x, d, B.cumext_indices(x._data, d, False), True, return_types.cummin)

    # ---- distinct values -------------------------------------------------------------------------
    def unique(self: TensorSelf, sorted: builtins.bool = True, return_inverse: builtins.bool = False,  # noqa: A002
               return_counts: builtins.bool = False, dim: builtins.int | None = None) -> Any:
        """The distinct values (slices along ``dim``), sorted; optionally the inverse and counts.

        >>> lightgrad.tensor([3, 1, 3]).unique(return_counts=True)
        (tensor([1, 3]), tensor([1, 2]))
        """
        d = None if dim is None else _dim(dim, self.ndim)
        u, inv, cnt = B.unique(self._data, d)
        return _unique_result(u, inv, cnt, return_inverse, return_counts)

    def unique_consecutive(self: TensorSelf, return_inverse: builtins.bool = False, return_counts: builtins.bool = False,
                           dim: builtins.int | None = None) -> Any:
        """Runs of equal consecutive values (slices along ``dim``) collapsed to one."""
        d = None if dim is None else _dim(dim, self.ndim, scalar=False)
        u, inv, cnt = B.unique_consecutive(self._data, d)
        return _unique_result(u, inv, cnt, return_inverse, return_counts)


# ---- free functions ------------------------------------------------------------------------------
def searchsorted(sorted_sequence: Tensor, values: Any, *, out_int32: builtins.bool = False,
                 right: builtins.bool = False, side: str | None = None, sorter: Tensor | None = None) -> Tensor:
    """Where ``values`` would be inserted into ``sorted_sequence`` (its last dim) to keep it sorted."""
    if side is not None:
        if side not in ("left", "right"):
            raise RuntimeError(f"torch.searchsorted(): side can only be 'left' or 'right' but got {side}")
        if right and side == "left":
            raise RuntimeError("torch.searchsorted(): side and right can't be set to opposites, got side of "
                               "left while right was True")
        right = side == "right"
    seq = _raw(_as_tensor(sorted_sequence))
    if sorter is not None:
        seq = B.take_along_axis(seq, _int_index(sorter, "searchsorted"), -1)
    scalar = not isinstance(values, Tensor)
    v = _raw(_as_tensor(values))
    if seq.ndim > 1 and (v.ndim != seq.ndim or v.shape[:-1] != seq.shape[:-1]):
        raise RuntimeError(f"torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 "
                           f"dimensions of boundaries tensor and input value tensor must match, but we got "
                           f"boundaries tensor {list(seq.shape)} and input value tensor {list(v.shape)}")
    if scalar and seq.ndim > 1:
        raise RuntimeError("torch.searchsorted(): input value can be a scalar only when boundaries tensor "
                           f"dimension is 1, but we got boundaries tensor dim({seq.ndim})")
    out = B.searchsorted(seq, v, right)
    return Tensor._make(B.asarray(out, B.xp.int32 if out_int32 else B.xp.int64))


def bucketize(input: Any, boundaries: Tensor, *, out_int32: builtins.bool = False,  # noqa: A002
              right: builtins.bool = False) -> Tensor:
    """The bucket of each element: i with boundaries[i-1] < x <= boundaries[i] (< with ``right``)."""
    b = _as_tensor(boundaries)
    if b.ndim != 1:
        raise RuntimeError(f"boundaries tensor must be 1 dimension, but got dim({b.ndim})")
    return searchsorted(b, input, out_int32=out_int32, right=right)


def isin(elements: Any, test_elements: Any, *, assume_unique: builtins.bool = False,
         invert: builtins.bool = False) -> Tensor:
    """Whether each element is in ``test_elements``: ``isin(tensor([1, 2]), tensor([2]))`` is [False, True]."""
    e, t = _raw(_as_tensor(elements)), _raw(_as_tensor(test_elements))
    return Tensor._make(B.asarray(B.isin(e, t, assume_unique=assume_unique, invert=invert)))


# ---- helpers -------------------------------------------------------------------------------------
def _unique_result(u: B.ndarray, inv: B.ndarray, cnt: B.ndarray, return_inverse: builtins.bool,
                   return_counts: builtins.bool) -> Any:
    out = [Tensor._make(u)]
    if return_inverse:
        out.append(Tensor._make(inv))
    if return_counts:
        out.append(Tensor._make(cnt))
    return out[0] if len(out) == 1 else tuple(out)
