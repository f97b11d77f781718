"""Stochastic gradient descent, optionally with momentum (heavy-ball or Nesterov)."""

from __future__ import annotations

from typing import Any, ClassVar

from .. import backend as B
from .optimizer import Optimizer, Rule, _scalar, check, check_lr, const, make_grad


class SGD(Optimizer):
    """``torch.optim.SGD``: ``b = momentum * b + (1 - dampening) * g``, ``p -= lr * b`` (the first step sets
    ``b = g``).

    >>> opt = lightgrad.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, nesterov=True)
    """

    _scalars: ClassVar[dict[str, float]] = {}  # PyTorch's SGD keeps no step count
    _n_scratch = 2
    _flat = True

    def __init__(self, params: Any, lr: float = 1e-3, momentum: float = 0, dampening: float = 0,
                 weight_decay: float = 0, nesterov: bool = False, *, maximize: bool = False,
                 foreach: bool | None = None, differentiable: bool = False, fused: bool | None = None) -> None:
        check_lr(lr)
        check("momentum value", momentum, momentum >= 0.0)
        check("weight_decay value", weight_decay, weight_decay >= 0.0)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                        nesterov=nesterov, maximize=maximize, foreach=foreach, differentiable=differentiable,
                        fused=fused)
        super().__init__(params, defaults)

    def _buffers(self, group: dict[str, Any]) -> tuple[str, ...]:
        return ("momentum_buffer",) if group["momentum"] != 0 else ()

    def _advance(self, group: dict[str, Any], sc: dict[str, float]) -> None:
        pass

    def _dtype_error(self, group: dict[str, Any], dtype: B.xp.dtype) -> str | None:
        # PyTorch's kernels update integer parameters when every factor is whole (lr=1): a fractional lr or
        # weight_decay is its `alpha` error; a fractional momentum fails there on the second step, here on
        # the first
        if not (_scalar(group["lr"]).is_integer() and float(group["weight_decay"]).is_integer()):
            return "For integral input tensors, argument alpha must not be a floating point number."
        momentum, dampening = float(group["momentum"]), float(group["dampening"])
        if momentum != 0 and not (momentum.is_integer() and dampening.is_integer()):
            return super()._dtype_error(group, dtype)
        if dtype.kind == "b" and group["maximize"]:
            return ("Negation, the `-` operator, on a bool tensor is not supported. If you are trying to invert "
                    "a mask, use the `~` or `logical_not()` operator instead.")
        return None

    def _rule(self, group: dict[str, Any], sc: dict[str, float], first: bool, dtype: B.xp.dtype) -> Rule:
        key = (_scalar(group["lr"]), float(group["momentum"]), float(group["dampening"]),
               float(group["weight_decay"]), bool(group["maximize"]), bool(group["nesterov"]), first, dtype)
        return self._memo(key, self._make_rule)

    def _make_rule(self, lr: float, momentum: float, dampening: float, weight_decay: float, maximize: bool,
                   nesterov: bool, first: bool, dtype: B.xp.dtype) -> Rule:
        damp = 1 - dampening
        grad = make_grad(maximize, weight_decay, dtype)
        mom, k_damp, neg_lr = const(momentum, dtype), const(damp, dtype), const(-lr, dtype)

        # written out, without helper calls: the fewer Python steps between the NumPy calls, the less the
        # threads wait for each other's GIL (3% of the step on 4M elements; see "pieces of update rules" in
        # optimizer.py)
        def rule(p: B.ndarray, g: B.ndarray, s: dict[str, B.ndarray], t: list[B.ndarray]) -> None:
            if grad is not None:
                g = grad(p, g, t[0])
            if momentum != 0:
                buf = s["momentum_buffer"]
                if first:
                    B.copyto(buf, g)
                else:
                    B.xp.multiply(buf, mom, buf)
                    B.xp.add(buf, g if damp == 1 else B.xp.multiply(g, k_damp, t[1]), buf)
                if nesterov:
                    g = B.xp.add(g, B.xp.multiply(buf, mom, t[1]), t[0])
                else:
                    g = buf
            B.xp.add(p, B.xp.multiply(g, neg_lr, t[1]), p)  # p.add_(g, alpha=-lr)
        return rule
