"""Adam and AdamW: moment estimates with bias correction; AdamW decays weights decoupled from the gradient."""

from __future__ import annotations

from typing import Any

from .. import backend as B
from .optimizer import Optimizer, Rule, _scalar, check, check_betas, check_lr, const, make_adam_moments


class Adam(Optimizer):
    """``torch.optim.Adam`` (with ``amsgrad``, ``maximize``, L2 ``weight_decay``; ``decoupled_weight_decay=True``
    is AdamW).

    >>> opt = lightgrad.optim.Adam(model.parameters(), lr=1e-3, betas=(0.9, 0.999))
    """

    _n_scratch = 3
    _flat = True

    def __init__(self, params: Any, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0, amsgrad: bool = False, *,
                 foreach: bool | None = None, maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False, fused: bool | None = None,
                 decoupled_weight_decay: bool = False) -> None:
        check_lr(lr)
        check("epsilon value", eps, 0.0 <= eps)
        betas = check_betas(betas)
        check("weight_decay value", weight_decay, 0.0 <= weight_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
                        maximize=maximize, foreach=foreach, capturable=capturable,
                        differentiable=differentiable, fused=fused, decoupled_weight_decay=decoupled_weight_decay)
        super().__init__(params, defaults)

    def _buffers(self, group: dict[str, Any]) -> tuple[str, ...]:
        return ("exp_avg", "exp_avg_sq", "max_exp_avg_sq") if group["amsgrad"] else ("exp_avg", "exp_avg_sq")

    def _rule(self, group: dict[str, Any], sc: dict[str, float], first: bool, dtype: B.xp.dtype) -> Rule:
        lr, eps, wd = _scalar(group["lr"]), float(group["eps"]), float(group["weight_decay"])
        beta1, beta2 = (_scalar(b) for b in group["betas"])
        step = sc["step"]
        moments = make_adam_moments(group, lr, wd, beta1, beta2, dtype)
        amsgrad = group["amsgrad"]
        # PyTorch: p -= lr / bc1 * m / (sqrt(v) / sqrt(bc2) + eps) with bc = 1 - beta^step. Scaling the
        # denominator by sqrt(bc2) leaves the quotient as it is and saves a pass over the arrays:
        # p -= (lr / bc1 * sqrt(bc2)) * m / (sqrt(v) + eps * sqrt(bc2)).
        bc2_sqrt = (1 - beta2 ** step) ** 0.5
        neg_step = const(-lr / (1 - beta1 ** step) * bc2_sqrt, dtype)
        eps_scaled = const(eps * bc2_sqrt, dtype)

        fused = _fused_args(group, lr, wd, beta1, beta2, neg_step, eps_scaled, dtype)

        def rule(p: B.ndarray, g: B.ndarray, s: dict[str, B.ndarray], t: list[B.ndarray]) -> None:
            if fused is not None and B.adam_(p, g, s["exp_avg"], s["exp_avg_sq"], s.get("max_exp_avg_sq"), *fused):
                return  # one native pass, the same float32 operations as below
            moments(p, g, s, t)
            v = s["exp_avg_sq"]
            if amsgrad:  # out= by name: NumPy's maximum deprecates it positionally
                v = B.xp.maximum(s["max_exp_avg_sq"], v, out=s["max_exp_avg_sq"])
            denom = B.xp.sqrt(v, t[1])
            B.xp.add(denom, eps_scaled, denom)
            upd = B.xp.multiply(s["exp_avg"], neg_step, t[2])
            B.xp.divide(upd, denom, upd)
            B.xp.add(p, upd, p)
        return rule


def _fused_args(group: dict[str, Any], lr: float, wd: float, beta1: float, beta2: float, neg_step: B.ndarray,
                eps_scaled: B.ndarray, dtype: B.xp.dtype) -> tuple[Any, ...] | None:
    """The arguments after the arrays of ``B.adam_`` for this rule: the float32 constants of
    make_adam_moments and the rule above, as those round them (None for other dtypes)."""
    if dtype != B.xp.float32:
        return None
    decoupled = wd != 0 and group["decoupled_weight_decay"]
    shrink = float(const(1 - lr * wd, dtype)) if decoupled else None
    lerp_mode = 1 - beta1 >= 0.5  # make_lerp_'s second formula, g - (g - m) beta1
    lerp_k = float(const(1 - (1 - beta1), dtype)) if lerp_mode else float(const(1 - beta1, dtype))
    return (shrink, 0.0 if decoupled else float(const(wd, dtype)), bool(group["maximize"]), lerp_mode, lerp_k,
            float(const(beta2, dtype)), float(const(1 - beta2, dtype)), float(neg_step), float(eps_scaled))


class AdamW(Adam):
    """``torch.optim.AdamW``: Adam with decoupled weight decay ``p *= 1 - lr * weight_decay`` (default 1e-2).

    >>> opt = lightgrad.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
    """

    def __init__(self, params: Any, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 1e-2, amsgrad: bool = False, *,
                 maximize: bool = False, foreach: bool | None = None, capturable: bool = False,
                 differentiable: bool = False, fused: bool | None = None) -> None:
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, foreach=foreach, maximize=maximize,
                         capturable=capturable, differentiable=differentiable, fused=fused,
                         decoupled_weight_decay=True)
