"""RMSprop: divide the gradient by a running root mean square of recent gradients."""

from __future__ import annotations

from typing import Any

import numpy as np

from .optimizer import Optimizer, _scalar, add_, addcdiv_, addcmul_, check, check_lr, effective_grad, lerp_


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

    def _update(self, group: dict[str, Any], p: np.ndarray, g: np.ndarray, s: dict[str, np.ndarray],
                sc: dict[str, float], first: bool, t: list[np.ndarray]) -> None:
        lr, alpha, eps = _scalar(group["lr"]), float(group["alpha"]), float(group["eps"])
        momentum = float(group["momentum"])
        g = effective_grad(p, g, t[0], group["maximize"], float(group["weight_decay"]))
        v = s["square_avg"]
        v *= alpha
        addcmul_(v, g, g, 1 - alpha, t[1])
        avg = t[1]
        if group["centered"]:
            ga = s["grad_avg"]
            lerp_(ga, g, 1 - alpha, t[2])
            np.multiply(ga, ga, out=avg)
            np.subtract(v, avg, out=avg)  # square_avg.addcmul(grad_avg, grad_avg, value=-1)
            np.sqrt(avg, out=avg)
        else:
            np.sqrt(v, out=avg)
        avg += eps
        if momentum > 0:
            buf = s["momentum_buffer"]
            buf *= momentum
            addcdiv_(buf, g, avg, 1.0, t[2])
            add_(p, buf, -lr, t[2])
        else:
            addcdiv_(p, g, avg, -lr, t[2])
