"""Adafactor: Adam-like steps whose second moment is kept factored (a row and a column mean) for matrices."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .. import backend as B
from ..grad_mode import enable_grad
from ..tensor import Tensor
from .optimizer import Optimizer, _bump_versions, _own, _scalar, make_lerp_


def _norm(x: B.ndarray, axis: int | None = None) -> Any:
    """The 2-norm (of all of ``x`` as a float, or along ``axis`` keeping it), as ``torch.norm``."""
    sq = B.xp.sum(x * x, axis=axis, keepdims=axis is not None)
    return float(B.xp.sqrt(sq)) if axis is None else B.xp.sqrt(sq)


class Adafactor(Optimizer):
    """``torch.optim.Adafactor`` (PyTorch 2.13's variant): relative step ``min(lr, 1/sqrt(step))`` scaled by
    the parameter's RMS, second moments factored over the last two dims of >=2-D parameters, update
    clipping at RMS ``d``, decoupled weight decay ``lr * weight_decay``.

    >>> opt = lightgrad.optim.Adafactor(model.parameters(), lr=1e-2)
    """

    def __init__(self, params: Any, lr: float = 1e-2, beta2_decay: float = -0.8,
                 eps: tuple[float | None, float] = (None, 1e-3), d: float = 1.0, weight_decay: float = 0.0, *,
                 foreach: bool | None = None, maximize: bool = False) -> None:
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 >= beta2_decay:
            raise ValueError(f"beta2_decay should be <= 0 but is: {beta2_decay}")
        if eps[0] is not None and not 0.0 <= eps[0]:
            raise ValueError(f"epsilon1 should be >= 0 but is: {eps[0]}")
        if not 0.0 <= eps[1]:
            raise ValueError(f"epsilon2 should be >= 0 but is: {eps[1]}")
        if not 1.0 <= d:
            raise ValueError(f"Clipping threshold d should be >= 1 but is: {d}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight_decay should be >= 0 but is: {weight_decay}")
        defaults = dict(lr=lr, beta2_decay=beta2_decay, eps=eps, d=d, weight_decay=weight_decay, foreach=foreach,
                        maximize=maximize)
        super().__init__(params, defaults)

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """One update of every parameter that has a gradient. Each parameter needs its own norms and
        factored means, so this loops over parameters (PyTorch's single-tensor loop, step for step)."""
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        # everything is read and checked before the first parameter changes: a step that raises has
        # changed nothing
        work: list[tuple[tuple[Any, ...], list[tuple[Tensor, B.ndarray]]]] = []
        for group in self.param_groups:
            eps1, eps2 = group["eps"]
            hyper = (_scalar(group["lr"]), float(group["beta2_decay"]), float(group["d"]),
                     float(group["weight_decay"]), bool(group["maximize"]),
                     None if eps1 is None else float(eps1), float(eps2))
            ps = [(p, p.grad._data) for p in group["params"] if p.grad is not None]
            for p, g in ps:
                x = p._data
                if g.shape != x.shape:
                    raise RuntimeError(f"gradient of shape {tuple(g.shape)} does not match its parameter of shape "
                                       f"{tuple(x.shape)}")
                if x.dtype.kind != "f":
                    raise RuntimeError(f"Adafactor can only update floating point parameters (parameter "
                                       f"{next(i for i, q in enumerate(group['params']) if q is p)} of param group "
                                       f"{len(work)} is {p.dtype})")
            work.append((hyper, ps))
        for (lr, decay, d, wd, maximize, eps1, eps2), ps in work:
            for p, g in ps:
                x = p._data
                g = -g if maximize else g
                if eps1 is None:  # as PyTorch: the first parameter's dtype sets it for the whole group
                    eps1 = float(B.finfo(x.dtype).eps)
                st = self.state[p]
                if not st:
                    st["step"] = _own(B.xp.zeros((), B.xp.float32), None)
                    if g.ndim > 1:
                        st["row_var"] = _own(B.xp.zeros((*g.shape[:-1], 1), x.dtype), None)
                        st["col_var"] = _own(B.xp.zeros((*g.shape[:-2], 1, g.shape[-1]), x.dtype), None)
                    else:
                        st["variance"] = _own(B.xp.zeros(g.shape, x.dtype), None)
                step_arr = st["step"]._data
                step_arr += 1
                step = float(step_arr)
                w = step ** decay  # 1 - beta2_t
                rho = min(lr, 1 / step ** 0.5)
                alpha = max(eps2, _norm(x) / x.size ** 0.5) * rho
                if wd != 0:
                    B.xp.multiply(x, x.dtype.type(1 - lr * wd), x)
                lerp_ = make_lerp_(w, x.dtype)
                if g.ndim > 1:
                    row, col = st["row_var"]._data, st["col_var"]._data
                    row_mean = B.xp.square(_norm(g, -1)) / x.dtype.type(g.shape[-1])
                    lerp_(row, row_mean, B.xp.empty_like(row))
                    col_mean = B.xp.square(_norm(g, -2)) / x.dtype.type(g.shape[-2])
                    lerp_(col, col_mean, B.xp.empty_like(col))
                    var = B.xp.matmul(row, col)
                    var /= B.xp.maximum(row.mean(axis=-2, keepdims=True), x.dtype.type(eps1))
                else:
                    v = st["variance"]._data
                    lerp_(v, g * g, B.xp.empty_like(v))
                    var = v.copy()
                B.xp.maximum(var, x.dtype.type(eps1 * eps1), out=var)
                update = B.xp.reciprocal(B.xp.sqrt(var, var), var)  # rsqrt
                update *= g
                denom = max(1.0, _norm(update) / (update.size ** 0.5 * d))
                update *= x.dtype.type(-alpha / denom)
                x += update
                _bump_versions([p._version])
        return loss
