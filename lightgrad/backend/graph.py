"""Backend calls on Tensors: how backward formulas record their own graph (create_graph=True).

Backward formulas compute with the backend's named functions (``multiply``, ``where``, ``sum``,
``reshape``, ...). With ``create_graph=True`` the engine hands them Tensors instead of arrays, and
each of those functions sends a call with an argument that is not an array or a number here, on
the slow side of a type test it makes anyway: ``on_graph`` runs the differentiable op registered
under the function's name. The table is empty in the backend, which knows no Tensor; the tensor
layer fills it once at import (``bind``, from lightgrad/_numpy_dispatch.py). A function with no
entry cannot record a graph, and raises (the derivative of that node cannot be differentiated again).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..grad_mode import not_differentiable_twice

GRAPH: dict[str, Callable[..., Any]] = {}  # backend name -> the differentiable op on Tensors


def bind(table: dict[str, Callable[..., Any]]) -> None:
    """Register the Tensor ops for the backend's names (the tensor layer, once, at import)."""
    GRAPH.update(table)


def on_graph(name: str, *args: Any, **kw: Any) -> Any:
    """The backend's ``name`` called on Tensors: the differentiable op, or RuntimeError without one."""
    f = GRAPH.get(name)
    if f is None:
        raise not_differentiable_twice(f"the backend's {name}")
    return f(*args, **kw)
