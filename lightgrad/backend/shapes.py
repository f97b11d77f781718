"""Shapes and views: broadcasting two shapes, reshapes, transposes and broadcast views, computed
without arithmetic on the values (a reshape that cannot be a view copies, into the arena when one is
active)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..memory import _current
from .graph import on_graph

Array = Any  # an array of the namespace (np.ndarray today)
_PLAIN = (np.generic, int, float, complex, list, tuple)  # values NumPy takes as arrays, besides arrays


# Each takes an array by the first branch; a Tensor (create_graph: see graph) on the slow side of it.
def reshape(x: Array, shape: Any) -> Array:
    """``np.reshape(x, shape)``; an array's own method is 4x cheaper than NumPy's dispatch."""
    if isinstance(x, np.ndarray):
        return x.reshape(shape)
    return np.reshape(x, shape) if isinstance(x, _PLAIN) else on_graph("reshape", x, shape)


def transpose(x: Array, axes: Any = None) -> Array:
    """``np.transpose(x, axes)``, by the array's own method where it has one (as reshape)."""
    if isinstance(x, np.ndarray):
        return x.transpose(axes)
    return np.transpose(x, axes) if isinstance(x, _PLAIN) else on_graph("transpose", x, axes)


def swapaxes(x: Array, a: int, b: int) -> Array:
    """``np.swapaxes(x, a, b)``, by the array's own method (as reshape)."""
    if isinstance(x, np.ndarray):
        return x.swapaxes(a, b)
    return np.swapaxes(x, a, b) if isinstance(x, _PLAIN) else on_graph("swapaxes", x, a, b)


def broadcast_to(x: Array, shape: Any) -> Array:
    """``np.broadcast_to(x, shape)``: a read-only broadcast view."""
    if isinstance(x, np.ndarray) or isinstance(x, _PLAIN):
        return np.broadcast_to(x, shape)
    return on_graph("broadcast_to", x, shape)


def expand_dims(x: Array, axis: Any) -> Array:
    """``np.expand_dims(x, axis)``: a view with new axes of size 1."""
    if isinstance(x, np.ndarray) or isinstance(x, _PLAIN):
        return np.expand_dims(x, axis)
    return on_graph("expand_dims", x, axis)


def flip(x: Array, axis: Any = None) -> Array:
    """``np.flip(x, axis)``: a reversed view."""
    if isinstance(x, np.ndarray) or isinstance(x, _PLAIN):
        return np.flip(x, axis)
    return on_graph("flip", x, axis)


def roll(x: Array, shift: Any, axis: Any = None) -> Array:
    """``np.roll(x, shift, axis)``: a copy shifted circularly."""
    if isinstance(x, np.ndarray) or isinstance(x, _PLAIN):
        return np.roll(x, shift, axis)
    return on_graph("roll", x, shift, axis)


def broadcast_shape(s1: tuple[int, ...], s2: tuple[int, ...]) -> tuple[int, ...]:
    """NumPy's broadcast of two shapes, without NumPy's slow general path; raises ValueError."""
    if s1 == s2:
        return s1
    n1, n2 = len(s1), len(s2)
    if n1 < n2:
        s1 = (1,) * (n2 - n1) + s1
    elif n2 < n1:
        s2 = (1,) * (n1 - n2) + s2
    out = []
    for a, b in zip(s1, s2):
        if a == b or b == 1:
            out.append(a)
        elif a == 1:
            out.append(b)
        else:
            raise ValueError(f"shapes {s1} and {s2} do not broadcast")
    return tuple(out)


def _shape(x: Any) -> tuple[int, ...]:
    return x.shape if isinstance(x, np.ndarray) else ()


def expand(x: Array, shape: tuple[int, ...]) -> Array:
    """A read-only broadcast view of x as ``shape`` (np.broadcast_to's Python wrapper costs ~5 us;
    this builds the strided view directly). x's shape is ``shape`` with some sizes 1, or ()."""
    if not isinstance(x, np.ndarray):
        return np.broadcast_to(x, shape) if isinstance(x, _PLAIN) else on_graph("expand", x, shape)
    if x.shape == shape:
        return x
    lead = len(shape) - x.ndim
    if x.size == 1:
        strides: Any = (0,) * len(shape)  # a scalar gradient (the grad of a full sum)
    elif lead < 0 or not x.flags.c_contiguous:
        return np.broadcast_to(x, shape)
    else:
        strides = [0] * lead + [0 if n == 1 else s for n, s in zip(x.shape, x.strides)]
    v = np.ndarray(shape, x.dtype, x, 0, strides)
    if v.flags.writeable:  # (a view of a read-only array, such as the seed gradient, is one already)
        v.flags.writeable = False
    return v


def reshapes_as_view(x: Array, shape: tuple[int, ...]) -> bool:
    """Whether ``x`` takes ``shape`` without a copy (its strides allow it): torch's rule for ``view``."""
    if x.flags.c_contiguous:
        return True
    try:
        np.reshape(x, shape, copy=False)
    except ValueError:
        return False
    return True


def reshape_any(x: Array, shape: tuple[int, ...]) -> Array:
    """``x.reshape(shape)``: a view when the layout allows, else a contiguous copy (from the arena
    when one is active, so a reshape of a transposed tensor allocates nothing inside a step)."""
    if not isinstance(x, np.ndarray):
        return np.reshape(x, shape) if isinstance(x, _PLAIN) else on_graph("reshape", x, shape)
    try:
        return np.reshape(x, shape, copy=False)
    except ValueError:
        a = _current.get()
        if a is None:
            return np.reshape(x, shape)
        out = a.empty(x.shape, x.dtype)
        np.copyto(out, x)
        return out.reshape(shape)
