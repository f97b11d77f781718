"""``grad`` and ``backward``: reverse-mode differentiation of outputs with respect to inputs."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..engine import run_backward
from ..tensor import Tensor


def grad(outputs: Tensor | Sequence[Tensor], inputs: Tensor | Sequence[Tensor],
         grad_outputs: Tensor | Sequence[Tensor | None] | None = None,
         retain_graph: bool | None = None, create_graph: bool = False,
         allow_unused: bool = False) -> tuple[Tensor | None, ...]:
    """Gradients of ``outputs`` w.r.t. ``inputs``, without touching ``.grad``.

    >>> x = lightgrad.tensor(3.0, requires_grad=True); lightgrad.autograd.grad(x * x, x)
    (tensor(6.),)
    """

    outs = [outputs] if isinstance(outputs, Tensor) else list(outputs)
    ins = [inputs] if isinstance(inputs, Tensor) else list(inputs)
    if grad_outputs is None or isinstance(grad_outputs, Tensor):
        gos: list[Any] = [grad_outputs] * len(outs) if len(outs) == 1 or grad_outputs is None \
            else [grad_outputs]
    else:
        gos = list(grad_outputs)
    if len(gos) != len(outs):
        raise RuntimeError(f"grad_outputs has {len(gos)} entries but outputs has {len(outs)}")
    for i, t in enumerate(ins):
        if not t.requires_grad:
            raise RuntimeError(f"One of the differentiated Tensors (input {i}) does not require grad")
    res = run_backward(outs, gos, retain_graph=create_graph if retain_graph is None else retain_graph,
                       create_graph=create_graph, inputs=ins)
    for i, r in enumerate(res):
        if r is None and not allow_unused:
            raise RuntimeError(f"One of the differentiated Tensors (input {i}) appears to not have "
                               "been used in the graph. Set allow_unused=True if this is desired.")
    return tuple(res)


def backward(tensors: Tensor | Sequence[Tensor], grad_tensors: Any = None,
             retain_graph: bool | None = None, create_graph: bool = False) -> None:
    """``lightgrad.autograd.backward([y1, y2], [g1, g2])``: accumulate into leaves' ``.grad``."""

    ts = [tensors] if isinstance(tensors, Tensor) else list(tensors)
    gs = [grad_tensors] * len(ts) if grad_tensors is None or isinstance(grad_tensors, Tensor) \
        else list(grad_tensors)
    run_backward(ts, gs, retain_graph=create_graph if retain_graph is None else retain_graph,
                 create_graph=create_graph)
