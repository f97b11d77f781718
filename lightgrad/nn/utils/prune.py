"""Pruning (PyTorch's ``torch.nn.utils.prune``): a pruned parameter ``name`` becomes ``name_orig`` (the
parameter) and ``name_mask`` (a buffer), and a forward pre-hook sets ``module.name = name_orig *
name_mask`` before every call. Pruning the same parameter again prunes among the entries still left.

>>> prune.l1_unstructured(model.fc, "weight", amount=0.3); prune.remove(model.fc, "weight")
"""

from __future__ import annotations

import numbers
from collections.abc import Iterable
from typing import Any

from ..._ops.linalg import vector_norm
from ..._ops.creation import ones_like, zeros_like
from ..._ops.shape import cat
from ...grad_mode import no_grad
from ...random import rand
from ...tensor import Tensor
from ..module import Module
from ..parameter import Parameter

__all__ = ["BasePruningMethod", "CustomFromMask", "Identity", "L1Unstructured", "LnStructured", "PruningContainer",
           "RandomStructured", "RandomUnstructured", "custom_from_mask", "global_unstructured", "identity",
           "is_pruned", "l1_unstructured", "ln_structured", "random_structured", "random_unstructured", "remove"]


def _validate_amount(amount: Any) -> None:
    if not isinstance(amount, numbers.Real):
        raise TypeError(f"Invalid type for amount: {amount}. Must be int or float.")
    if (isinstance(amount, numbers.Integral) and amount < 0) or (
            not isinstance(amount, numbers.Integral) and (float(amount) > 1.0 or float(amount) < 0.0)):
        raise ValueError(f"amount={amount} should either be a float in the range [0, 1] or a non-negative integer")


def _compute_nparams_toprune(amount: Any, tensor_size: int) -> int:
    if isinstance(amount, numbers.Integral):
        if int(amount) > tensor_size:
            raise ValueError(f"amount={amount} should be smaller than the number of parameters to prune={tensor_size}")
        return int(amount)
    return round(amount * tensor_size)


class BasePruningMethod:
    """A way of choosing what to prune: ``compute_mask(t, default_mask)``; ``apply`` prunes a module's parameter."""

    PRUNING_TYPE = "unstructured"
    _tensor_name: str

    def __call__(self, module: Module, inputs: Any) -> None:
        setattr(module, self._tensor_name, self.apply_mask(module))

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        """Override: the new mask for ``t``, given the mask already applied."""
        raise NotImplementedError

    def apply_mask(self, module: Module) -> Tensor:
        """The pruned tensor: the module's ``<name>_orig`` times its ``<name>_mask``."""
        orig = getattr(module, self._tensor_name + "_orig")
        return orig * getattr(module, self._tensor_name + "_mask").to(dtype=orig.dtype)

    @classmethod
    def apply(cls, module: Module, name: str, *args: Any, importance_scores: Tensor | None = None,
              **kwargs: Any) -> BasePruningMethod:
        """Prune ``module.name`` with this method, combining with earlier pruning of it."""
        old = None
        for hid, hook in list(module._forward_pre_hooks.items()):
            if isinstance(hook, BasePruningMethod) and hook._tensor_name == name:
                old = hook
                del module._forward_pre_hooks[hid]
        method: BasePruningMethod = cls(*args, **kwargs)
        method._tensor_name = name
        if old is not None:
            container = old if isinstance(old, PruningContainer) else PruningContainer(old)
            container.add_pruning_method(method)
            method = container
        orig = getattr(module, name + "_orig") if old is not None else getattr(module, name)
        scores = orig if importance_scores is None else importance_scores
        try:  # (the mask first: a method that refuses leaves the module as it was)
            if importance_scores is not None and importance_scores.shape != orig.shape:
                raise ValueError(f"importance_scores should have the same shape as parameter {name} of {module}")
            default_mask = ones_like(orig) if old is None else getattr(module, name + "_mask").detach().clone()
            with no_grad():
                mask = method.compute_mask(scores.detach(), default_mask=default_mask)
        except BaseException:
            if old is not None:
                module.register_forward_pre_hook(old)
            raise
        if old is None:
            module.register_parameter(name + "_orig", orig if isinstance(orig, Parameter) else Parameter(orig))
            del module._parameters[name]
        module.register_buffer(name + "_mask", mask)
        setattr(module, name, method.apply_mask(module))
        module.register_forward_pre_hook(method)
        return method

    def prune(self, t: Tensor, default_mask: Tensor | None = None, importance_scores: Tensor | None = None) -> Tensor:
        """``t`` with this method's mask applied (ranked by ``importance_scores`` when given)."""
        scores = t if importance_scores is None else importance_scores
        mask = ones_like(t) if default_mask is None else default_mask
        return t * self.compute_mask(scores, default_mask=mask)

    def remove(self, module: Module) -> None:
        """Make the pruning permanent: the parameter holds the pruned values; mask and hook go."""
        weight = self.apply_mask(module)
        delattr(module, self._tensor_name)
        orig = module._parameters[self._tensor_name + "_orig"]
        assert orig is not None
        orig.data = weight.data
        del module._parameters[self._tensor_name + "_orig"]
        del module._buffers[self._tensor_name + "_mask"]
        setattr(module, self._tensor_name, orig)


class PruningContainer(BasePruningMethod):
    """The pruning methods applied in turn to one parameter; each prunes among what the others left."""

    def __init__(self, *args: BasePruningMethod) -> None:
        self._pruning_methods: tuple[BasePruningMethod, ...] = ()
        for m in args:
            self.add_pruning_method(m)

    def add_pruning_method(self, method: BasePruningMethod) -> None:
        """Add a pruning method for the same parameter to the sequence."""
        if not isinstance(method, BasePruningMethod) and method is not None:
            raise TypeError(f"{type(method)} is not a BasePruningMethod subclass")
        if self._pruning_methods and self._tensor_name != method._tensor_name:
            raise ValueError(f"Can only add pruning methods acting on the parameter named '{self._tensor_name}' "
                             f"to PruningContainer. Found '{method._tensor_name}'")
        self._tensor_name = method._tensor_name
        self._pruning_methods += (method,)

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        """The newest method's mask computed on the entries the earlier masks left, combined with them."""
        method = self._pruning_methods[-1]
        if method.PRUNING_TYPE == "unstructured":
            keep = default_mask == 1
            new_mask = default_mask.clone()
            new_mask[keep] = method.compute_mask(t[keep], default_mask=default_mask[keep])
            return new_mask
        if method.PRUNING_TYPE == "structured":
            return default_mask * method.compute_mask(t, default_mask=default_mask)
        return method.compute_mask(t, default_mask=default_mask)


class Identity(BasePruningMethod):
    """Prunes nothing (a mask of ones)."""

    PRUNING_TYPE = "unstructured"

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        """The mask as it is: prunes nothing."""
        return default_mask

    @classmethod
    def apply(cls, module: Module, name: str, *args: Any, **kwargs: Any) -> BasePruningMethod:  # type: ignore[override]
        """Add the pruning reparametrization to ``module.<name>`` without pruning anything."""
        return super().apply(module, name)


class _UnstructuredAmount(BasePruningMethod):
    """Prune ``amount`` entries (a fraction or a count), the ones ``_chosen`` picks."""

    PRUNING_TYPE = "unstructured"

    def __init__(self, amount: Any) -> None:
        _validate_amount(amount)
        self.amount = amount

    def _chosen(self, t: Tensor, k: int) -> Tensor:
        raise NotImplementedError  # pragma: no cover - each method says which entries

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        """Zero the ``amount`` entries this method picks."""
        k = _compute_nparams_toprune(self.amount, t.numel())
        mask = default_mask.clone()
        if k:
            mask.view(-1)[self._chosen(t, k)] = 0
        return mask


class RandomUnstructured(_UnstructuredAmount):
    """Prune ``amount`` entries chosen at random."""

    def _chosen(self, t: Tensor, k: int) -> Tensor:
        return rand(*t.shape).view(-1).topk(k).indices


class L1Unstructured(_UnstructuredAmount):
    """Prune the ``amount`` entries of smallest absolute value."""

    def _chosen(self, t: Tensor, k: int) -> Tensor:
        return t.abs().view(-1).topk(k, largest=False).indices

    @classmethod
    def apply(cls, module: Module, name: str, amount: Any = None, importance_scores: Tensor | None = None,  # type: ignore[override]
              **kwargs: Any) -> BasePruningMethod:
        """Prune ``module.<name>`` by magnitude (of ``importance_scores`` when given)."""
        return super().apply(module, name, amount=amount, importance_scores=importance_scores)


def _validate_structured(t: Tensor) -> None:
    if t.ndim <= 1:
        raise ValueError("Structured pruning can only be applied to multidimensional tensors. Found tensor of shape "
                         f"{t.shape} with {t.ndim} dims")


def _structured_mask(t: Tensor, dim: int, keep: Tensor, default_mask: Tensor) -> Tensor:
    mask = zeros_like(t)
    index: list[Any] = [slice(None)] * t.ndim
    index[dim] = keep
    mask[tuple(index)] = 1
    return mask * default_mask


class RandomStructured(BasePruningMethod):
    """Prune ``amount`` whole channels along ``dim``, chosen at random."""

    PRUNING_TYPE = "structured"

    def __init__(self, amount: Any, dim: int = -1) -> None:
        _validate_amount(amount)
        self.amount, self.dim = amount, dim

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        """Zero ``amount`` channels along ``dim`` chosen at random."""
        _validate_structured(t)
        n = t.shape[self.dim]
        k = _compute_nparams_toprune(self.amount, n)
        keep = rand(n).topk(n - k).indices
        return _structured_mask(t, self.dim, keep, default_mask)


class LnStructured(BasePruningMethod):
    """Prune the ``amount`` channels along ``dim`` of smallest L``n`` norm."""

    PRUNING_TYPE = "structured"

    def __init__(self, amount: Any, n: Any, dim: int = -1) -> None:
        _validate_amount(amount)
        self.amount, self.n, self.dim = amount, n, dim

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        """Zero the ``amount`` channels along ``dim`` of smallest L``n`` norm."""
        _validate_structured(t)
        size = t.shape[self.dim]
        k = _compute_nparams_toprune(self.amount, size)
        dims = [d for d in range(t.ndim) if d != self.dim % t.ndim]
        norm = vector_norm(t, ord=self.n, dim=dims)
        keep = norm.topk(size - k, largest=True).indices
        return _structured_mask(t, self.dim, keep, default_mask)


class CustomFromMask(BasePruningMethod):
    """Prune by a given mask."""

    PRUNING_TYPE = "global"

    def __init__(self, mask: Tensor) -> None:
        self.mask = mask

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        """The given mask, combined with the one already applied."""
        return default_mask * self.mask.to(dtype=default_mask.dtype)


def identity(module: Module, name: str) -> Module:
    """Prune nothing (adds the mask machinery with a mask of ones)."""
    Identity.apply(module, name)
    return module


def random_unstructured(module: Module, name: str, amount: Any) -> Module:
    """Prune ``amount`` random entries of ``module.name`` (a fraction or a count)."""
    RandomUnstructured.apply(module, name, amount)
    return module


def l1_unstructured(module: Module, name: str, amount: Any, importance_scores: Tensor | None = None) -> Module:
    """Prune the ``amount`` entries of ``module.name`` with the smallest absolute value."""
    L1Unstructured.apply(module, name, amount=amount, importance_scores=importance_scores)
    return module


def random_structured(module: Module, name: str, amount: Any, dim: int) -> Module:
    """Prune ``amount`` random channels of ``module.name`` along ``dim``."""
    RandomStructured.apply(module, name, amount, dim)
    return module


def ln_structured(module: Module, name: str, amount: Any, n: Any, dim: int,
                  importance_scores: Tensor | None = None) -> Module:
    """Prune the ``amount`` channels along ``dim`` of smallest L``n`` norm."""
    LnStructured.apply(module, name, amount, n, dim, importance_scores=importance_scores)
    return module


def custom_from_mask(module: Module, name: str, mask: Tensor) -> Module:
    """Prune ``module.name`` where ``mask`` is 0."""
    CustomFromMask.apply(module, name, mask)
    return module


def global_unstructured(parameters: Iterable[tuple[Module, str]], pruning_method: type[BasePruningMethod],
                        importance_scores: dict[tuple[Module, str], Tensor] | None = None, **kwargs: Any) -> None:
    """Prune across several parameters at once, ranking all their entries together."""
    params = list(parameters)
    scores = importance_scores or {}
    flat = cat([scores.get((m, n), getattr(m, n)).detach().reshape(-1) for m, n in params])
    defaults = cat([getattr(m, n + "_mask", ones_like(getattr(m, n))).reshape(-1) for m, n in params])
    container = PruningContainer()
    container._tensor_name = "temp"
    method = pruning_method(**kwargs)
    method._tensor_name = "temp"
    if method.PRUNING_TYPE != "unstructured":
        raise TypeError('Only "unstructured" PRUNING_TYPE supported for the `pruning_method`. Found method '
                        f"{pruning_method} of type {method.PRUNING_TYPE}")
    container.add_pruning_method(method)
    final = container.compute_mask(flat, defaults)
    pointer = 0
    for module, name in params:
        n = getattr(module, name).numel()
        custom_from_mask(module, name, final[pointer:pointer + n].view_as(getattr(module, name)))
        pointer += n


def remove(module: Module, name: str) -> Module:
    """Make the pruning permanent: ``module.name`` becomes a plain parameter again (zeros where pruned)."""
    for hid, hook in list(module._forward_pre_hooks.items()):
        if isinstance(hook, BasePruningMethod) and hook._tensor_name == name:
            hook.remove(module)
            del module._forward_pre_hooks[hid]
            return module
    raise ValueError(f"Parameter '{name}' of module {module} has to be pruned before pruning can be removed")


def is_pruned(module: Module) -> bool:
    """Whether any submodule of ``module`` has a pruned parameter."""
    return any(isinstance(h, BasePruningMethod) for m in module.modules() for h in m._forward_pre_hooks.values())
