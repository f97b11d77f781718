"""Gathers and scatters by index: take, take_rows (an embedding lookup), assign, add_at (repeated
indices accumulate) and scatter_extreme (scatter_reduce's amax, amin and prod)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..memory import _current
from .elementwise import empty
from .shapes import Array


def take(x: Array, index: Any) -> Array:
    """``x[index]`` for an advanced (copying) index."""
    return x[index]


def take_rows(x: Array, index: Array) -> Array:
    """``x[index]`` for one integer index array on the first axis (an embedding lookup), written
    into arena storage when an arena is active."""
    a = _current.get()
    n = x.shape[0]
    if a is None or (index.size and (index.max() >= n or index.min() < -n)):
        return x[index]  # NumPy raises the IndexError for an index out of range
    out = a.empty(index.shape + x.shape[1:], x.dtype)
    np.take(x, index, axis=0, out=out, mode="wrap")  # in range (checked): wrap only maps negatives,
    return out  # and unlike mode="raise" it writes straight into out without a buffer


def assign(out: Array, index: Any, v: Array) -> None:
    """``out[index] = v`` in place."""
    out[index] = v


def add_at(out: Array, index: Any, v: Array) -> None:
    """``np.add.at(out, index, v)``: repeated indices accumulate. Rows picked by one integer array
    (an embedding's backward) are summed by sorting instead, about 5x faster than np.add.at
    there (the sums are pairwise, so they may round differently in the last bits)."""
    idx = index[0] if isinstance(index, tuple) and len(index) == 1 else index
    if (isinstance(idx, np.ndarray) and idx.dtype.kind in "iu" and idx.size >= 64 and isinstance(v, np.ndarray)
            and isinstance(out, np.ndarray) and out.flags.c_contiguous and out.ndim >= 1
            and v.shape == idx.shape + out.shape[1:]):
        flat = idx.reshape(-1)
        if flat.min() < 0:
            flat = flat % out.shape[0]
        order = np.argsort(flat, kind="stable")
        rows = flat[order]
        starts = np.flatnonzero(np.concatenate(([True], rows[1:] != rows[:-1])))
        # the gathered rows and their sums are as large as v: from the arena when one is active
        vv = v.reshape(flat.size, -1)
        if starts.size == flat.size:  # no row repeats (positions 0..L-1): each adds to its own row
            o2 = out.reshape(out.shape[0], -1)
            picked = empty(vv.shape, vv.dtype)
            np.take(o2, flat, axis=0, out=picked, mode="wrap")
            np.add(picked, vv, out=picked)
            o2[flat] = picked
            return
        picked = empty(vv.shape, vv.dtype)
        np.take(vv, order, axis=0, out=picked, mode="wrap")  # (in range: mode="raise" would copy via a buffer)
        sums = empty((starts.size, vv.shape[1]), vv.dtype)
        np.add.reduceat(picked, starts, axis=0, out=sums)
        o2 = out.reshape(out.shape[0], -1)
        u = rows[starts]  # distinct rows: a plain gather, add and scatter (o2[u] += sums would copy o2[u])
        np.take(o2, u, axis=0, out=picked[:u.size], mode="wrap")
        np.add(picked[:u.size], sums, out=sums)
        o2[u] = sums
        return
    np.add.at(out, index, v)


def scatter_extreme(x: Array, index: Array, src: Array, axis: int, reduce: str, include_self: bool) -> Array:
    """scatter_reduce's values for "amax", "amin" and "prod": a copy of x with src folded in at
    ``index`` along ``axis`` (positions addressed start from the identity when not include_self)."""
    f = {"amax": np.maximum, "amin": np.minimum, "prod": np.multiply}[reduce]
    out = x.copy()
    grids = list(np.indices(index.shape, sparse=True))
    grids[axis] = index
    at = tuple(grids)
    if not include_self:
        if reduce == "prod":
            ident: Any = 1
        elif out.dtype.kind == "f":
            ident = -np.inf if reduce == "amax" else np.inf
        else:
            info = np.iinfo(out.dtype) if out.dtype.kind in "iu" else None
            ident = (info.min if reduce == "amax" else info.max) if info else reduce == "amin"
        out[at] = ident
    f.at(out, at, src[tuple(slice(0, n) for n in index.shape)])
    return out
