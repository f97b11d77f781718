"""Adagrad: per-element learning rates scaled by the root of the summed squared gradients."""

from __future__ import annotations

from typing import Any

from .. import backend as B
from .optimizer import Optimizer, Rule, _scalar, check, check_lr, const, make_addcdiv_, make_addcmul_, make_grad


class Adagrad(Optimizer):
    """``torch.optim.Adagrad`` (``lr_decay``, ``initial_accumulator_value``, ``weight_decay``); as in
    PyTorch, its state exists from construction.

    >>> opt = lightgrad.optim.Adagrad(model.parameters(), lr=1e-2, initial_accumulator_value=0.1)
    """

    _n_scratch = 3
    _flat = True

    def __init__(self, params: Any, lr: float = 1e-2, lr_decay: float = 0, weight_decay: float = 0,
                 initial_accumulator_value: float = 0, eps: float = 1e-10, foreach: bool | None = None, *,
                 maximize: bool = False, differentiable: bool = False, fused: bool | None = None) -> None:
        check_lr(lr)
        check("lr_decay value", lr_decay, 0.0 <= lr_decay)
        check("weight_decay value", weight_decay, 0.0 <= weight_decay)
        check("initial_accumulator_value value", initial_accumulator_value, 0.0 <= initial_accumulator_value)
        check("epsilon value", eps, 0.0 <= eps)
        defaults = dict(lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay,
                        initial_accumulator_value=initial_accumulator_value, foreach=foreach, maximize=maximize,
                        differentiable=differentiable, fused=fused)
        super().__init__(params, defaults)
        for group in self.param_groups:
            for pack in self._group_packs(group):
                if pack.params:
                    self._init_params(group, pack, 0, len(pack.params))

    def _buffers(self, group: dict[str, Any]) -> tuple[str, ...]:
        return ("sum",)

    def _init_value(self, group: dict[str, Any], name: str) -> float:
        # PyTorch starts every group's sum at the constructor's value, whatever the group says
        return float(self.defaults["initial_accumulator_value"])

    def _rule(self, group: dict[str, Any], sc: dict[str, float], first: bool, dtype: B.xp.dtype) -> Rule:
        clr = _scalar(group["lr"]) / (1 + (sc["step"] - 1) * float(group["lr_decay"]))
        grad = make_grad(group["maximize"], float(group["weight_decay"]), dtype)
        eps = const(float(group["eps"]), dtype)
        accumulate = make_addcmul_(1.0, dtype)
        step = make_addcdiv_(-clr, dtype)

        def rule(p: B.ndarray, g: B.ndarray, s: dict[str, B.ndarray], t: list[B.ndarray]) -> None:
            if grad is not None:
                g = grad(p, g, t[0])
            acc = s["sum"]
            accumulate(acc, g, g, t[1])
            std = B.xp.sqrt(acc, t[1])
            B.xp.add(std, eps, std)
            step(p, g, std, t[2])
        return rule
