"""Adadelta: step sizes from the ratio of running RMS of updates to running RMS of gradients."""

from __future__ import annotations

from typing import Any

from .. import backend as B
from .optimizer import Optimizer, Rule, _scalar, check, check_lr, const, make_add_, make_addcmul_, make_grad


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

    def _rule(self, group: dict[str, Any], sc: dict[str, float], first: bool, dtype: B.xp.dtype) -> Rule:
        rho = float(group["rho"])
        grad = make_grad(group["maximize"], float(group["weight_decay"]), dtype)
        r, eps = const(rho, dtype), const(float(group["eps"]), dtype)
        accumulate = make_addcmul_(1 - rho, dtype)
        step = make_add_(-_scalar(group["lr"]), dtype)

        def rule(p: B.ndarray, g: B.ndarray, s: dict[str, B.ndarray], t: list[B.ndarray]) -> None:
            if grad is not None:
                g = grad(p, g, t[0])
            v, acc = s["square_avg"], s["acc_delta"]
            B.xp.multiply(v, r, v)
            accumulate(v, g, g, t[1])
            std = B.xp.add(v, eps, t[1])
            B.xp.sqrt(std, std)
            delta = B.xp.add(acc, eps, t[2])
            B.xp.sqrt(delta, delta)
            B.xp.divide(delta, std, delta)
            B.xp.multiply(delta, g, delta)
            B.xp.multiply(acc, r, acc)
            accumulate(acc, delta, delta, t[1])
            step(p, delta, t[1])
        return rule
