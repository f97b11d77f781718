"""RMSprop: divide the gradient by a running root mean square of recent gradients."""

from __future__ import annotations

from typing import Any

from .. import backend as B
from .optimizer import (Optimizer, Rule, _scalar, check, check_lr, const, make_add_, make_addcdiv_, make_addcmul_,
                        make_grad, make_lerp_)


class RMSprop(Optimizer):
    """``torch.optim.RMSprop`` (``alpha`` smoothing, ``centered``, ``momentum``, ``weight_decay``).

    >>> opt = lightgrad.optim.RMSprop(model.parameters(), lr=1e-2, alpha=0.99, momentum=0.9)
    """

    _n_scratch = 3
    _flat = True

    def __init__(self, params: Any, lr: float = 1e-2, alpha: float = 0.99, eps: float = 1e-8,
                 weight_decay: float = 0, momentum: float = 0, centered: bool = False,
                 capturable: bool = False, foreach: bool | None = None, maximize: bool = False,
                 differentiable: bool = False) -> None:
        check_lr(lr)
        check("epsilon value", eps, 0.0 <= eps)
        check("momentum value", momentum, 0.0 <= momentum)
        check("weight_decay value", weight_decay, 0.0 <= weight_decay)
        check("alpha value", alpha, 0.0 <= alpha)
        defaults = dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps, centered=centered,
                        weight_decay=weight_decay, capturable=capturable, foreach=foreach, maximize=maximize,
                        differentiable=differentiable)
        super().__init__(params, defaults)

    def _buffers(self, group: dict[str, Any]) -> tuple[str, ...]:
        return (("square_avg",) + (("momentum_buffer",) if group["momentum"] > 0 else ())
                + (("grad_avg",) if group["centered"] else ()))

    def _rule(self, group: dict[str, Any], sc: dict[str, float], first: bool, dtype: B.xp.dtype) -> Rule:
        lr, alpha = _scalar(group["lr"]), float(group["alpha"])
        grad = make_grad(group["maximize"], float(group["weight_decay"]), dtype)
        a, eps, mom = const(alpha, dtype), const(float(group["eps"]), dtype), const(float(group["momentum"]), dtype)
        momentum, centered = float(group["momentum"]) > 0, group["centered"]
        accumulate = make_addcmul_(1 - alpha, dtype)
        lerp_ = make_lerp_(1 - alpha, dtype)
        add_buf = make_addcdiv_(1.0, dtype)
        step = make_add_(-lr, dtype)
        step_div = make_addcdiv_(-lr, dtype)

        def rule(p: B.ndarray, g: B.ndarray, s: dict[str, B.ndarray], t: list[B.ndarray]) -> None:
            if grad is not None:
                g = grad(p, g, t[0])
            v = s["square_avg"]
            B.xp.multiply(v, a, v)
            accumulate(v, g, g, t[1])
            avg = t[1]
            if centered:
                ga = s["grad_avg"]
                lerp_(ga, g, t[2])
                B.xp.multiply(ga, ga, avg)
                B.xp.subtract(v, avg, avg)  # square_avg.addcmul(grad_avg, grad_avg, value=-1)
                B.xp.sqrt(avg, avg)
            else:
                B.xp.sqrt(v, avg)
            B.xp.add(avg, eps, avg)
            if momentum:
                buf = s["momentum_buffer"]
                B.xp.multiply(buf, mom, buf)
                add_buf(buf, g, avg, t[2])
                step(p, buf, t[2])
            else:
                step_div(p, g, avg, t[2])
        return rule
