"""Adamax: Adam with the infinity norm in place of the second moment."""

from __future__ import annotations

from typing import Any

from .. import backend as B
from .optimizer import (Optimizer, Rule, _scalar, check, check_betas, check_lr, const, make_addcdiv_, make_grad,
                        make_lerp_)


class Adamax(Optimizer):
    """``torch.optim.Adamax``: ``u = max(beta2 * u, |g| + eps)``, ``p -= lr / (1 - beta1^t) * m / u``.

    >>> opt = lightgrad.optim.Adamax(model.parameters(), lr=2e-3)
    """

    _n_scratch = 2
    _flat = True

    def __init__(self, params: Any, lr: float = 2e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0, foreach: bool | None = None, *,
                 maximize: bool = False, differentiable: bool = False, capturable: bool = False) -> None:
        check_lr(lr)
        check("epsilon value", eps, 0.0 <= eps)
        check_betas(betas)
        check("weight_decay value", weight_decay, 0.0 <= weight_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, foreach=foreach,
                        maximize=maximize, differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    def _buffers(self, group: dict[str, Any]) -> tuple[str, ...]:
        return ("exp_avg", "exp_inf")

    def _rule(self, group: dict[str, Any], sc: dict[str, float], first: bool, dtype: B.xp.dtype) -> Rule:
        beta1, beta2 = (float(b) for b in group["betas"])
        grad = make_grad(group["maximize"], float(group["weight_decay"]), dtype)
        b2, eps = const(beta2, dtype), const(float(group["eps"]), dtype)
        lerp_ = make_lerp_(1 - beta1, dtype)
        step = make_addcdiv_(-_scalar(group["lr"]) / (1 - beta1 ** sc["step"]), dtype)

        def rule(p: B.ndarray, g: B.ndarray, s: dict[str, B.ndarray], t: list[B.ndarray]) -> None:
            if grad is not None:
                g = grad(p, g, t[0])
            m, u = s["exp_avg"], s["exp_inf"]
            lerp_(m, g, t[1])
            B.xp.multiply(u, b2, u)
            bound = B.xp.abs(g, t[1])
            B.xp.add(bound, eps, bound)
            B.xp.maximum(u, bound, out=u)  # out= by name: NumPy's maximum deprecates it positionally
            step(p, m, u, t[1])
        return rule
