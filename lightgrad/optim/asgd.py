"""ASGD: SGD with a decaying step size and a running (Polyak) average of the parameters in ``ax``."""

from __future__ import annotations

from typing import Any, ClassVar

from .. import backend as B
from .optimizer import Optimizer, Rule, _scalar, check, check_lr, const, make_add_, make_grad


class ASGD(Optimizer):
    """``torch.optim.ASGD``: ``p = p (1 - lambd eta) - eta g``, then ``eta = lr / (1 + lambd lr step)^alpha``;
    ``ax`` averages the parameters from step ``t0`` on (``mu = 1 / max(1, step - t0)``).

    >>> opt = lightgrad.optim.ASGD(model.parameters(), lr=1e-2, t0=100)
    """

    # eta and mu are per-parameter scalars as in PyTorch (float32 0-d tensors in the state)
    _scalars: ClassVar[dict[str, float]] = {"step": 0.0, "eta": 0.0, "mu": 1.0}
    _n_scratch = 2
    _flat = True

    def __init__(self, params: Any, lr: float = 1e-2, lambd: float = 1e-4, alpha: float = 0.75, t0: float = 1e6,
                 weight_decay: float = 0, foreach: bool | None = None, maximize: bool = False,
                 differentiable: bool = False, capturable: bool = False) -> None:
        check_lr(lr)
        check("weight_decay value", weight_decay, 0.0 <= weight_decay)
        defaults = dict(lr=lr, lambd=lambd, alpha=alpha, t0=t0, weight_decay=weight_decay, foreach=foreach,
                        maximize=maximize, differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    def _buffers(self, group: dict[str, Any]) -> tuple[str, ...]:
        return ("ax",)

    def _advance(self, group: dict[str, Any], sc: dict[str, float]) -> None:
        lr, lambd = _scalar(group["lr"]), float(group["lambd"])
        # this step uses the eta and mu of the state (a new state's eta is lr, as a float32 tensor), then
        # stores the next ones; the rule reads these two from the extra keys
        sc["eta_now"] = float(B.xp.float32(lr)) if sc["step"] == 0 else sc["eta"]
        sc["mu_now"] = sc["mu"]
        step = sc["step"] + 1
        sc["step"] = step
        sc["eta"] = lr / ((1 + lambd * lr * step) ** float(group["alpha"]))
        sc["mu"] = 1 / max(1, step - float(group["t0"]))

    def _rule(self, group: dict[str, Any], sc: dict[str, float], first: bool, dtype: B.xp.dtype) -> Rule:
        eta, mu = sc["eta_now"], sc["mu_now"]
        grad = make_grad(group["maximize"], float(group["weight_decay"]), dtype)
        decay = const(1 - float(group["lambd"]) * eta, dtype)
        step = make_add_(-eta, dtype)
        m = const(mu, dtype)

        def rule(p: B.ndarray, g: B.ndarray, s: dict[str, B.ndarray], t: list[B.ndarray]) -> None:
            if grad is not None:
                g = grad(p, g, t[0])
            B.xp.multiply(p, decay, p)
            step(p, g, t[1])
            ax = s["ax"]
            if mu != 1:
                B.xp.subtract(p, ax, t[1])
                B.xp.multiply(t[1], m, t[1])
                B.xp.add(ax, t[1], ax)
            else:
                B.copyto(ax, p)
        return rule
