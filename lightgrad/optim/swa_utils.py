"""Stochastic weight averaging and EMA (PyTorch's ``torch.optim.swa_utils``): ``AveragedModel`` keeps a
running average of a model's parameters, ``SWALR`` anneals the learning rate to a constant SWA rate, and
``update_bn`` recomputes BatchNorm statistics for the averaged weights.

>>> swa = AveragedModel(model); ...; swa.update_parameters(model); update_bn(loader, swa)
"""

from __future__ import annotations

import copy
import itertools
import math
from collections.abc import Callable, Iterable
from typing import Any

from ..grad_mode import no_grad
from ..nn.module import Module
from ..nn.norm import _BatchNorm
from ..tensor import Tensor, tensor
from .lr_scheduler import LRScheduler, _format_param
from .optimizer import Optimizer

__all__ = ["SWALR", "AveragedModel", "get_ema_avg_fn", "get_ema_multi_avg_fn", "get_swa_avg_fn",
           "get_swa_multi_avg_fn", "update_bn"]


def get_ema_multi_avg_fn(decay: float = 0.999) -> Callable[..., None]:
    """EMA over lists of tensors, in place: ``ema += (1 - decay) * (current - ema)`` (PyTorch's lerp)."""
    def ema_update(ema_param_list: list[Tensor], current_param_list: list[Tensor], _: Any) -> None:
        for e, c in zip(ema_param_list, current_param_list):
            e.lerp_(c, 1 - decay)
    return ema_update


def get_swa_multi_avg_fn() -> Callable[..., None]:
    """The running mean over lists of tensors, in place."""
    def swa_update(averaged_param_list: list[Tensor], current_param_list: list[Tensor], num_averaged: Any) -> None:
        for a, c in zip(averaged_param_list, current_param_list):
            a.add_((c - a) / (num_averaged + 1))
    return swa_update


def get_ema_avg_fn(decay: float = 0.999) -> Callable[[Tensor, Tensor, Any], Tensor]:
    """``decay * ema + (1 - decay) * current``."""
    def ema_update(ema_param: Tensor, current_param: Tensor, num_averaged: Any) -> Tensor:
        return decay * ema_param + (1 - decay) * current_param
    return ema_update


def get_swa_avg_fn() -> Callable[[Tensor, Tensor, Any], Tensor]:
    """The running mean: ``averaged + (current - averaged) / (num_averaged + 1)``."""
    def swa_update(averaged_param: Tensor, current_param: Tensor, num_averaged: Any) -> Tensor:
        return averaged_param + (current_param - averaged_param) / (num_averaged + 1)
    return swa_update


class AveragedModel(Module):
    """A copy of ``model`` whose parameters are the average (or EMA) of the ones ``update_parameters``
    is given; calling it runs the copy."""

    n_averaged: Tensor

    def __init__(self, model: Module, device: Any = None, avg_fn: Callable[..., Tensor] | None = None,
                 multi_avg_fn: Callable[..., None] | None = None, use_buffers: bool = False) -> None:
        super().__init__()
        if avg_fn is not None and multi_avg_fn is not None:
            raise AssertionError("Only one of avg_fn and multi_avg_fn should be provided")
        self.module = copy.deepcopy(model)
        self.register_buffer("n_averaged", tensor(0))  # (int64, as PyTorch's)
        self.avg_fn, self.multi_avg_fn, self.use_buffers = avg_fn, multi_avg_fn, use_buffers

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        """Run the averaged copy of the module."""
        return self.module(*args, **kwargs)

    def update_parameters(self, model: Module) -> None:
        """Fold ``model``'s current parameters (and buffers, with use_buffers) into the average."""
        ours: Iterable[Tensor] = (itertools.chain(self.module.parameters(), self.module.buffers())
                                  if self.use_buffers else self.parameters())
        theirs: Iterable[Tensor] = (itertools.chain(model.parameters(), model.buffers())
                                    if self.use_buffers else model.parameters())
        pairs = [(a.detach(), m.detach()) for a, m in zip(ours, theirs)]
        n = self.n_averaged
        with no_grad():
            if n.item() == 0:
                for a, m in pairs:
                    a.copy_(m)
            elif self.multi_avg_fn is not None:
                floats = [(a, m) for a, m in pairs if a.is_floating_point()]
                self.multi_avg_fn([a for a, _ in floats], [m for _, m in floats], n)
            else:
                avg = self.avg_fn or get_swa_avg_fn()
                for a, m in pairs:
                    if a.is_floating_point():
                        a.copy_(avg(a, m, n))
            if not self.use_buffers:  # the copy's buffers follow the model's
                for b_swa, b_model in zip(self.module.buffers(), model.buffers()):
                    b_swa.detach().copy_(b_model.detach())
            self.n_averaged.add_(1)


class SWALR(LRScheduler):
    """Anneal each group's learning rate to ``swa_lr`` over ``anneal_epochs`` steps ("cos" or "linear"), then
    hold it there."""

    def __init__(self, optimizer: Optimizer, swa_lr: float | list[float], anneal_epochs: int = 10,
                 anneal_strategy: str = "cos", last_epoch: int = -1) -> None:
        swa_lrs = _format_param("swa_lr", optimizer, swa_lr)
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"anneal_strategy must by one of 'cos' or 'linear', instead got {anneal_strategy}")
        if not isinstance(anneal_epochs, int) or anneal_epochs < 0:
            raise ValueError(f"anneal_epochs must be equal or greater than 0, got {anneal_epochs}")
        for lr, group in zip(swa_lrs, optimizer.param_groups):
            group["swa_lr"] = lr
        self.anneal_func = self._cosine_anneal if anneal_strategy == "cos" else self._linear_anneal
        self.anneal_epochs = anneal_epochs
        super().__init__(optimizer, last_epoch)

    @staticmethod
    def _linear_anneal(t: float) -> float:
        return t

    @staticmethod
    def _cosine_anneal(t: float) -> float:
        return (1 - math.cos(math.pi * t)) / 2

    @staticmethod
    def _get_initial_lr(lr: float, swa_lr: float, alpha: float) -> float:
        return swa_lr if alpha == 1 else (lr - alpha * swa_lr) / (1 - alpha)

    def get_lr(self) -> list[Any]:
        """This step's learning rates: annealed from each group's lr to ``swa_lr`` in ``anneal_epochs``."""
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        prev_alpha = self.anneal_func(max(0, min(1, (step - 1) / max(1, self.anneal_epochs))))
        prev_lrs = [self._get_initial_lr(g["lr"], g["swa_lr"], prev_alpha) for g in self.optimizer.param_groups]
        alpha = self.anneal_func(max(0, min(1, step / max(1, self.anneal_epochs))))
        return [g["swa_lr"] * alpha + lr * (1 - alpha) for g, lr in zip(self.optimizer.param_groups, prev_lrs)]


def update_bn(loader: Iterable[Any], model: Module, device: Any = None) -> None:
    """Recompute every BatchNorm's running statistics with one pass over ``loader`` (a cumulative average)."""
    momenta: dict[Module, Any] = {}
    for module in model.modules():
        if isinstance(module, _BatchNorm):
            module.reset_running_stats()
            momenta[module] = module.momentum
    if not momenta:
        return
    was_training = model.training
    model.train()
    for module in momenta:
        module.momentum = None
    for batch in loader:
        if isinstance(batch, list | tuple):
            batch = batch[0]
        if device is not None:
            batch = batch.to(device)
        model(batch)
    for module, momentum in momenta.items():
        module.momentum = momentum
    model.train(was_training)
