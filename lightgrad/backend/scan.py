"""Cumulative scans and their gradients: cumsum, cumprod, logcumsumexp, and the gradients of cumprod
and logcumsumexp (which also run on Tensors under create_graph: by the backend's named functions,
each of which sends a Tensor to its differentiable op, see graph)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .elementwise import _plain, add, divide, exp, greater, less, log, multiply, negative, subtract, where
from .graph import on_graph
from .reductions import reduce, sum
from .shapes import Array, flip
from .sort import _arange_along


def cumsum(x: Array, axis: Any = None) -> Array:
    """``np.cumsum(x, axis)``."""
    return np.cumsum(x, axis) if _plain(x) or isinstance(x, list | tuple) else on_graph("cumsum", x, axis)


def cumprod(x: Array, axis: Any = None) -> Array:
    """``np.cumprod(x, axis)``."""
    return np.cumprod(x, axis) if _plain(x) or isinstance(x, list | tuple) else on_graph("cumprod", x, axis)


def values(x: Any) -> Array:
    """x's values as a plain array, outside any graph: for masks and indices that a backward formula
    needs while it records a graph (create_graph), where np.asarray on a Tensor that requires grad
    raises (it would silently make a differentiable value a constant)."""
    return x if isinstance(x, np.ndarray | np.generic) else x.detach().numpy()


def cumprod_grad(x: Array, out: Array, g: Any, axis: int) -> Any:
    """Gradient of ``cumprod`` along ``axis``, exact when x holds zeros (no division by one).

    With z the first zero of a slice: before z it is rev_cumsum(g * out) / x; at z it is
    prod(x[:z]) * sum_{j >= z} g[j] prod(x[z+1..j]); after z it is 0. g may be a Tensor
    (create_graph): every call on it here is a named backend function (a differentiable op then).
    """
    n = x.shape[axis]
    xa = values(x)  # (the masks need no graph)
    pos = _arange_along(n, axis, x.ndim)
    zero = xa == 0
    if n == 0:
        return multiply(g, 0)
    z = np.where(zero.any(axis, keepdims=True), np.argmax(zero, axis, keepdims=True), n)
    before = pos < z
    rev = flip(cumsum(flip(multiply(g, out), axis), axis), axis)
    head = where(before, divide(rev, where(before, x, 1)), 0)
    if not zero.any():
        return head
    lead = reduce(multiply, where(before, x, 1), (axis,), True)
    after = cumprod(where(pos <= z, 1, x), axis)
    at = multiply(lead, sum(where(pos >= z, multiply(g, after), 0), axis, keepdims=True))
    return add(head, where(pos == z, at, 0))


def logcumsumexp(x: Array, axis: int) -> Array:
    """log(cumsum(exp(x))) along ``axis``, stably (pairwise logaddexp)."""
    with np.errstate(invalid="ignore"):  # (NaN inputs give NaN, as in PyTorch)
        return np.logaddexp.accumulate(x, axis)


def logcumsumexp_grad(x: Array, out: Array, g: Any, axis: int, scan: Any = None) -> Any:
    """Gradient of logcumsumexp: exp(x_k) sum_{j>=k} g_j exp(-out_j), in log space, the positive
    and negative parts of g apart (each a reversed logcumsumexp), so nothing overflows. With
    create_graph the arguments are Tensors and ``scan`` is their (differentiable) logcumsumexp."""
    def rev(a: Any) -> Any:
        if scan is not None:
            return flip(scan(flip(a, axis)), axis)
        return np.flip(np.logaddexp.accumulate(np.flip(a, axis), axis), axis)

    # log v where pos, else the lowest finite number (as PyTorch: -inf - -inf would give NaN); the
    # inner where keeps log's gradient finite where masked
    lowest = float(np.finfo(values(out).dtype).min)

    def log_part(pos: Any, v: Any) -> Any:
        return where(pos, log(where(pos, v, 1.0)), lowest)

    # (-inf inputs give NaN gradients, as in PyTorch)
    with np.errstate(invalid="ignore"):
        lp = subtract(log_part(greater(g, 0), g), out)
        ln = subtract(log_part(less(g, 0), negative(g)), out)
        return subtract(exp(add(x, rev(lp))), exp(add(x, rev(ln))))
