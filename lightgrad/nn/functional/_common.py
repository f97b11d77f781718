"""Argument helpers and small tensor helpers the subjects of ``nn.functional`` share: int-or-tuple
arguments, optional batch dimensions, constants shaped like an input, and ``inplace=``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ... import backend as B
from ...tensor import Tensor

# ---- argument helpers --------------------------------------------------------------------------

IntOr = int | Sequence[int]


def _tuple(v: Any, n: int, name: str) -> tuple[int, ...]:
    """An int or a length-n sequence as an n-tuple of ints (PyTorch's _pair/_single)."""
    if isinstance(v, Tensor):
        v = v.tolist()
    if isinstance(v, int | B.xp.integer):
        return (int(v),) * n
    t = tuple(int(a) for a in v)
    if len(t) == 1:
        return t * n
    if len(t) != n:
        raise RuntimeError(f"expected {name} to be a single integer value or a list of {n} values to match "
                           f"the convolution dimensions, but got {name}={list(t)}")
    return t


def _batched(x: Tensor, nd: int, name: str) -> tuple[Tensor, bool]:
    """Accept a batched (N, C, *spatial) or unbatched (C, *spatial) input; says which it was."""
    if x.ndim == nd + 2:
        return x, True
    if x.ndim == nd + 1:
        return x.unsqueeze(0), False
    raise RuntimeError(f"Expected {nd + 1}D (unbatched) or {nd + 2}D (batched) input to {name}, but got "
                       f"input of size: {list(x.shape)}")


def _as_2d(x: Tensor) -> Tensor:
    """(N, C, L) -> (N, C, 1, L): 1-D ops run as 2-D ops on a height-1 image."""
    return x.unsqueeze(2)


# ---- tensor helpers ----------------------------------------------------------------------------

def _const(arr: Any, like: Tensor) -> Tensor:
    """A constant (no-grad) tensor in ``like``'s dtype."""
    return Tensor._make(B.asarray(arr, like._arr.dtype))


def _inplace(x: Tensor, inplace: bool, f: Callable[[Tensor], Tensor]) -> Tensor:
    """``f(x)``, or with ``inplace`` its result written into x (PyTorch's ``relu_`` and friends)."""
    return x._inplace(f) if inplace else f(x)
