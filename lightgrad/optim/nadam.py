"""NAdam: Adam with Nesterov momentum and a momentum-decay schedule."""

from __future__ import annotations

from typing import Any, ClassVar

from .. import backend as B
from .optimizer import Optimizer, Rule, _scalar, check, check_betas, check_lr, const, make_adam_moments


class NAdam(Optimizer):
    """``torch.optim.NAdam`` (``momentum_decay``, L2 or ``decoupled_weight_decay``).

    >>> opt = lightgrad.optim.NAdam(model.parameters(), lr=2e-3, momentum_decay=4e-3)
    """

    _scalars: ClassVar[dict[str, float]] = {"step": 0.0, "mu_product": 1.0}
    _n_scratch = 3
    _flat = True

    def __init__(self, params: Any, lr: float = 2e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0, momentum_decay: float = 4e-3,
                 decoupled_weight_decay: bool = False, *, foreach: bool | None = None, maximize: bool = False,
                 capturable: bool = False, differentiable: bool = False) -> None:
        check_lr(lr)
        check("epsilon value", eps, 0.0 <= eps)
        check_betas(betas)
        check("weight_decay value", weight_decay, 0.0 <= weight_decay)
        check("momentum_decay value", momentum_decay, 0.0 <= momentum_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, momentum_decay=momentum_decay,
                        decoupled_weight_decay=decoupled_weight_decay, maximize=maximize, foreach=foreach,
                        capturable=capturable, differentiable=differentiable)
        super().__init__(params, defaults)

    def _buffers(self, group: dict[str, Any]) -> tuple[str, ...]:
        return ("exp_avg", "exp_avg_sq")

    def _advance(self, group: dict[str, Any], sc: dict[str, float]) -> None:
        beta1, md = float(group["betas"][0]), float(group["momentum_decay"])
        step = sc["step"] = sc["step"] + 1
        mu = beta1 * (1.0 - 0.5 * 0.96 ** (step * md))
        sc["mu"] = mu
        sc["mu_next"] = beta1 * (1.0 - 0.5 * 0.96 ** ((step + 1) * md))
        # mu_product is a float32 tensor in PyTorch, so its product rounds to float32 every step
        sc["mu_product"] = float(B.xp.float32(sc["mu_product"]) * B.xp.float32(mu))

    def _rule(self, group: dict[str, Any], sc: dict[str, float], first: bool, dtype: B.xp.dtype) -> Rule:
        lr, eps, wd = _scalar(group["lr"]), float(group["eps"]), float(group["weight_decay"])
        beta1, beta2 = (float(b) for b in group["betas"])
        step, mu, mu_next, mu_product = sc["step"], sc["mu"], sc["mu_next"], sc["mu_product"]
        moments = make_adam_moments(group, lr, wd, beta1, beta2, dtype)
        # PyTorch: denom = sqrt(v / bc2) + eps, then p += c_g * g / denom and p += c_m * m / denom (two
        # addcdiv). Scaled by sqrt(bc2), denom = sqrt(v) + eps * sqrt(bc2) and both coefficients take the
        # factor (one pass fewer), and the two terms are added before the one division (two fewer).
        bc2_sqrt = (1 - beta2 ** step) ** 0.5
        c_g = const(-lr * (1.0 - mu) / (1.0 - mu_product) * bc2_sqrt, dtype)
        c_m = const((-lr * mu_next) / (1.0 - mu_product * mu_next) * bc2_sqrt, dtype)
        eps_scaled = const(eps * bc2_sqrt, dtype)

        def rule(p: B.ndarray, g: B.ndarray, s: dict[str, B.ndarray], t: list[B.ndarray]) -> None:
            g = moments(p, g, s, t)
            denom = B.xp.sqrt(s["exp_avg_sq"], t[1])
            B.xp.add(denom, eps_scaled, denom)
            upd = B.xp.multiply(s["exp_avg"], c_m, t[2])
            B.xp.add(upd, B.xp.multiply(g, c_g, t[0]), upd)  # g may be t[0] itself: not needed after
            B.xp.divide(upd, denom, upd)
            B.xp.add(p, upd, p)
        return rule
