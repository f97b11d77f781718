"""RAdam: Adam whose adaptive step is switched on once the variance of its estimate is tractable."""

from __future__ import annotations

from typing import Any

from .. import backend as B
from .optimizer import Optimizer, Rule, _scalar, check, check_betas, check_lr, const, make_adam_moments


class RAdam(Optimizer):
    """``torch.optim.RAdam`` (L2 or ``decoupled_weight_decay``).

    >>> opt = lightgrad.optim.RAdam(model.parameters(), lr=1e-3)
    """

    _n_scratch = 3
    _flat = True

    def __init__(self, params: Any, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0, decoupled_weight_decay: bool = False, *,
                 foreach: bool | None = None, maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False) -> None:
        check_lr(lr)
        check("epsilon value", eps, 0.0 <= eps)
        check_betas(betas)
        check("weight_decay value", weight_decay, 0.0 <= weight_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, maximize=maximize,
                        foreach=foreach, capturable=capturable, decoupled_weight_decay=decoupled_weight_decay,
                        differentiable=differentiable)
        super().__init__(params, defaults)

    def _buffers(self, group: dict[str, Any]) -> tuple[str, ...]:
        return ("exp_avg", "exp_avg_sq")

    def _rule(self, group: dict[str, Any], sc: dict[str, float], first: bool, dtype: B.xp.dtype) -> Rule:
        lr, eps, wd = _scalar(group["lr"]), float(group["eps"]), float(group["weight_decay"])
        beta1, beta2 = (float(b) for b in group["betas"])
        step = sc["step"]
        moments = make_adam_moments(group, lr, wd, beta1, beta2, dtype)
        bias_correction1 = 1 - beta1 ** step
        bias_correction2 = 1 - beta2 ** step
        rho_inf = 2 / (1 - beta2) - 1
        rho_t = rho_inf - 2 * step * (beta2 ** step) / bias_correction2
        adaptive = rho_t > 5.0
        if adaptive:
            rect = ((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5
            # PyTorch: p -= (m / bc1 * lr) * (sqrt(bc2) / (sqrt(v) + eps)) * rect: its scalars are one factor
            scale = const(lr / bias_correction1 * rect * bias_correction2 ** 0.5, dtype)
        else:
            scale = const(lr / bias_correction1, dtype)
        e = const(eps, dtype)

        def rule(p: B.ndarray, g: B.ndarray, s: dict[str, B.ndarray], t: list[B.ndarray]) -> None:
            moments(p, g, s, t)
            upd = B.xp.multiply(s["exp_avg"], scale, t[1])
            if adaptive:
                denom = B.xp.sqrt(s["exp_avg_sq"], t[2])
                B.xp.add(denom, e, denom)
                B.xp.divide(upd, denom, upd)
            B.xp.subtract(p, upd, p)
        return rule
