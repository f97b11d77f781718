"""Sorting and searching: stable sort indices, top-k, median, mode and running-extreme indices,
unique values and runs, searchsorted, bincount and histogram."""

from __future__ import annotations

from typing import Any

import numpy as np

from .reductions import _reduced
from .shapes import Array

# Index computations over raw arrays (no graph): tensor.py takes the values with a differentiable
# gather, so these ops need no backward of their own. Indices are int64, as PyTorch's. NaN sorts as
# the largest value (NumPy's order too).

def _arange_along(n: int, axis: int, ndim: int) -> np.ndarray:
    shape = [1] * ndim
    shape[axis] = n
    return np.arange(n, dtype=np.int64).reshape(shape)


def sort_indices(x: Array, axis: int, descending: bool = False) -> Array:
    """A stable argsort along ``axis``; descending keeps equal elements in their original order."""
    if not descending:
        return np.argsort(x, axis=axis, kind="stable").astype(np.int64, copy=False)
    # the ascending stable order of the reversed array, reversed: ties stay first-come first
    n = x.shape[axis]
    r = np.flip(np.argsort(np.flip(x, axis), axis=axis, kind="stable"), axis)
    return (n - 1 - r).astype(np.int64, copy=False)


def topk_indices(x: Array, k: int, axis: int, largest: bool) -> Array:
    """Indices of the k largest (smallest) along ``axis``, in order; a partition first when k is
    small (O(n) instead of a full sort)."""
    n = x.shape[axis]
    lead = (slice(None),) * axis
    if 4 * k >= n:
        return sort_indices(x, axis, largest)[lead + (slice(0, k),)]
    part = np.argpartition(x, n - k if largest else k - 1, axis=axis)
    part = part[lead + ((slice(n - k, None) if largest else slice(0, k)),)]
    order = sort_indices(np.take_along_axis(x, part, axis), axis, largest)
    return np.take_along_axis(part, order, axis).astype(np.int64, copy=False)


def _isnan(x: Array) -> Array:
    return np.isnan(x) if x.dtype.kind == "f" else np.zeros(x.shape, bool)


def median_indices(x: Array, axis: int, ignore_nan: bool) -> Array:
    """Index (keepdims) of the lower median along ``axis``; a NaN's (the first) when NaNs count."""
    order = sort_indices(x, axis)
    nan = _isnan(x)
    n = x.shape[axis]
    if ignore_nan:
        pos = (np.maximum(n - nan.sum(axis, keepdims=True), 1) - 1) // 2  # all NaN: the first one
    else:
        pos = np.full(_reduced(x.shape, (axis,), True), (n - 1) // 2, np.int64)
    idx = np.take_along_axis(order, pos.astype(np.int64), axis)
    if not ignore_nan and nan.any():
        idx = np.where(nan.any(axis, keepdims=True), np.argmax(nan, axis, keepdims=True), idx)
    return idx


def mode_indices(x: Array, axis: int) -> Array:
    """Index (keepdims) of the most frequent value along ``axis``: the smallest such value, at its
    last occurrence, as PyTorch's mode."""
    order = sort_indices(x, axis)
    s = np.take_along_axis(x, order, axis)
    n = x.shape[axis]
    pos = _arange_along(n, axis, x.ndim)
    first = np.ones(s.shape, bool)
    lead = [slice(None)] * x.ndim
    lead[axis] = slice(1, None)
    tail = list(lead)
    tail[axis] = slice(None, -1)
    first[tuple(lead)] = s[tuple(lead)] != s[tuple(tail)]
    start = np.maximum.accumulate(np.where(first, pos, 0), axis)
    # the run length reaches its maximum first at the end of the smallest most-frequent value's run,
    # whose last element (stable order) is the value's last occurrence
    j = np.argmax(pos - start, axis, keepdims=True)
    return np.take_along_axis(order, j, axis)


def cumext_indices(x: Array, axis: int, largest: bool) -> Array:
    """Indices of the running max (min) along ``axis``: the latest position holding it (NaN wins)."""
    run = (np.maximum if largest else np.minimum).accumulate(x, axis)
    hit = (x == run) | (_isnan(x) & _isnan(run))
    pos = np.where(hit, _arange_along(x.shape[axis], axis, x.ndim), 0)
    return np.maximum.accumulate(pos, axis)


isin = np.isin
searchsorted_1d = np.searchsorted
histogram = np.histogram


def unique(x: Array, axis: int | None) -> tuple[Array, Array, Array]:
    """Sorted unique values (or slices along ``axis``), the inverse (int64, shaped as PyTorch's) and
    the counts."""
    # (each NaN is its own value, as in PyTorch)
    u, inv, cnt = np.unique(x, return_inverse=True, return_counts=True, axis=axis, equal_nan=False)
    inv = inv.reshape(x.shape if axis is None else (x.shape[axis],))
    return u, inv.astype(np.int64), cnt.astype(np.int64)


def unique_consecutive(x: Array, axis: int | None) -> tuple[Array, Array, Array]:
    """Collapse runs of equal consecutive values (slices along ``axis``): values, inverse, counts."""
    a = x.reshape(-1) if axis is None else np.moveaxis(x, axis, 0)
    n = a.shape[0]
    new = np.ones(n, bool)
    if n > 1:
        diff = a[1:] != a[:-1]
        new[1:] = diff.reshape(n - 1, -1).any(1)
    inv = np.cumsum(new) - 1
    starts = np.flatnonzero(new)
    cnt = np.diff(np.append(starts, n))
    u = a[starts]
    if axis is not None:
        u = np.moveaxis(u, 0, axis)
    return u, inv.reshape(x.shape if axis is None else (n,)).astype(np.int64), cnt.astype(np.int64)


def searchsorted(seq: Array, values: Array, right: bool) -> Array:
    """Insertion points of ``values`` in ``seq`` (1-D, or rows matching values' leading dims)."""
    side: Any = "right" if right else "left"
    if seq.ndim == 1:
        return np.searchsorted(seq, values, side=side).astype(np.int64)
    s2, v2 = seq.reshape(-1, seq.shape[-1]), values.reshape(-1, values.shape[-1])
    out = np.stack([np.searchsorted(s, v, side=side) for s, v in zip(s2, v2)]) if len(s2) else v2.astype(np.int64)
    return out.reshape(values.shape).astype(np.int64)


def bincount(x: Array, weights: Array | None, minlength: int) -> Array:
    return np.bincount(x, weights, minlength)
