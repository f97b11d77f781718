"""Stochastic gradient descent, optionally with momentum (heavy-ball or Nesterov)."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from .optimizer import Optimizer, _scalar, add_, check, check_lr, effective_grad


class SGD(Optimizer):
    """``torch.optim.SGD``: ``b = momentum * b + (1 - dampening) * g``, ``p -= lr * b`` (the first step sets
    ``b = g``).

    >>> opt = lightgrad.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, nesterov=True)
    """

    _scalars: ClassVar[dict[str, float]] = {}  # PyTorch's SGD keeps no step count
    _n_scratch = 2
    _flat = True

    def __init__(self, params: Any, lr: float = 1e-3, momentum: float = 0, dampening: float = 0,
                 weight_decay: float = 0, nesterov: bool = False, *, maximize: bool = False,
                 foreach: bool | None = None, differentiable: bool = False, fused: bool | None = None) -> None:
        check_lr(lr)
        check("momentum value", momentum, momentum >= 0.0)
        check("weight_decay value", weight_decay, weight_decay >= 0.0)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                        nesterov=nesterov, maximize=maximize, foreach=foreach, differentiable=differentiable,
                        fused=fused)
        super().__init__(params, defaults)

    def _buffers(self, group: dict[str, Any]) -> tuple[str, ...]:
        return ("momentum_buffer",) if group["momentum"] != 0 else ()

    def _advance(self, group: dict[str, Any], sc: dict[str, float]) -> None:
        pass

    def _update(self, group: dict[str, Any], p: np.ndarray, g: np.ndarray, s: dict[str, np.ndarray],
                sc: dict[str, float], first: bool, t: list[np.ndarray]) -> None:
        lr, momentum = _scalar(group["lr"]), float(group["momentum"])
        g = effective_grad(p, g, t[0], group["maximize"], float(group["weight_decay"]))
        if momentum != 0:
            buf = s["momentum_buffer"]
            if first:
                np.copyto(buf, g)
            else:
                buf *= momentum
                add_(buf, g, 1 - float(group["dampening"]), t[1])
            if group["nesterov"]:
                np.multiply(buf, momentum, out=t[1])
                np.add(g, t[1], out=t[0])
                g = t[0]
            else:
                g = buf
        add_(p, g, -lr, t[1])
