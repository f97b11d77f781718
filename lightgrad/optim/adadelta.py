"""Adadelta: step sizes from the ratio of running RMS of updates to running RMS of gradients."""

from __future__ import annotations

from typing import Any

import numpy as np

from .optimizer import Optimizer, _scalar, add_, addcmul_, check, check_lr, effective_grad


class Adadelta(Optimizer):
    """``torch.optim.Adadelta`` (``rho``, ``eps``, ``weight_decay``, ``lr`` scales the delta).

    >>> opt = lightgrad.optim.Adadelta(model.parameters(), lr=1.0, rho=0.9)
    """

    _n_scratch = 3
    _flat = True

    def __init__(self, params: Any, lr: float = 1.0, rho: float = 0.9, eps: float = 1e-6,
                 weight_decay: float = 0, foreach: bool | None = None, *, capturable: bool = False,
                 maximize: bool = False, differentiable: bool = False) -> None:
        check_lr(lr)
        check("rho value", rho, 0.0 <= rho <= 1.0)
        check("epsilon value", eps, 0.0 <= eps)
        check("weight_decay value", weight_decay, 0.0 <= weight_decay)
        defaults = dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize,
                        capturable=capturable, foreach=foreach, differentiable=differentiable)
        super().__init__(params, defaults)

    def _buffers(self, group: dict[str, Any]) -> tuple[str, ...]:
        return ("square_avg", "acc_delta")

    def _update(self, group: dict[str, Any], p: np.ndarray, g: np.ndarray, s: dict[str, np.ndarray],
                sc: dict[str, float], first: bool, t: list[np.ndarray]) -> None:
        rho, eps = float(group["rho"]), float(group["eps"])
        g = effective_grad(p, g, t[0], group["maximize"], float(group["weight_decay"]))
        v, acc = s["square_avg"], s["acc_delta"]
        v *= rho
        addcmul_(v, g, g, 1 - rho, t[1])
        std = np.add(v, eps, out=t[1])
        np.sqrt(std, out=std)
        delta = np.add(acc, eps, out=t[2])
        np.sqrt(delta, out=delta)
        delta /= std
        delta *= g
        acc *= rho
        addcmul_(acc, delta, delta, 1 - rho, t[1])
        add_(p, delta, -_scalar(group["lr"]), t[1])
