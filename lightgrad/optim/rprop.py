"""Rprop: per-element step sizes that grow while the gradient keeps its sign and shrink when it flips."""

from __future__ import annotations

from typing import Any

from .. import backend as B
from .optimizer import Optimizer, Rule, _scalar, check_lr, const, make_grad


class Rprop(Optimizer):
    """``torch.optim.Rprop``: only the sign of the gradient is used; each element's step size is
    multiplied by ``etas[1]`` while its gradient keeps its sign, by ``etas[0]`` when it flips (and that
    step is skipped), and kept within ``step_sizes``.

    >>> opt = lightgrad.optim.Rprop(model.parameters(), lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50))
    """

    _n_scratch = 3
    _flat = True

    def __init__(self, params: Any, lr: float = 1e-2, etas: tuple[float, float] = (0.5, 1.2),
                 step_sizes: tuple[float, float] = (1e-6, 50), *, capturable: bool = False,
                 foreach: bool | None = None, maximize: bool = False, differentiable: bool = False) -> None:
        check_lr(lr)
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        defaults = dict(lr=lr, etas=etas, step_sizes=step_sizes, foreach=foreach, maximize=maximize,
                        differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    def _buffers(self, group: dict[str, Any]) -> tuple[str, ...]:
        return ("prev", "step_size")

    def _init_value(self, group: dict[str, Any], name: str) -> float:
        return _scalar(group["lr"]) if name == "step_size" else 0.0

    def _rule(self, group: dict[str, Any], sc: dict[str, float], first: bool, dtype: B.xp.dtype) -> Rule:
        grad = make_grad(group["maximize"], 0.0, dtype)
        minus, plus = (const(float(e), dtype) for e in group["etas"])
        lo, hi = (const(float(s), dtype) for s in group["step_sizes"])
        one, zero = const(1.0, dtype), const(0.0, dtype)

        def rule(p: B.ndarray, g: B.ndarray, s: dict[str, B.ndarray], t: list[B.ndarray]) -> None:
            if grad is not None:
                g = grad(p, g, t[0])
            prev, size, sign, factor = s["prev"], s["step_size"], t[1], t[2]
            B.xp.multiply(g, prev, sign)
            B.xp.sign(sign, sign)
            # PyTorch: sign -> etaplus where > 0, etaminus where < 0, 1 where 0
            B.copyto(factor, one)
            B.copyto(factor, plus, where=sign > 0)
            flipped = sign < 0
            B.copyto(factor, minus, where=flipped)
            B.xp.multiply(size, factor, size)
            B.xp.clip(size, lo, hi, out=size)
            # where the sign flipped the gradient counts as 0: no step now, and no flip seen next time
            B.copyto(prev, g)
            B.copyto(prev, zero, where=flipped)
            B.xp.sign(prev, sign)
            B.xp.multiply(sign, size, sign)
            B.xp.subtract(p, sign, p)
        return rule
