"""Spectral normalisation (the old hook API): ``weight = weight_orig / sigma``, sigma the largest
singular value of weight_orig as a matrix, estimated by power iteration on the buffers
``weight_u`` and ``weight_v`` (one step per training forward), as ``torch.nn.utils.spectral_norm``.

>>> m = nn.utils.spectral_norm(nn.Linear(4, 3)); m.weight_u.shape, m.weight_v.shape
(lightgrad.Size([3]), lightgrad.Size([4]))
"""

from __future__ import annotations

from typing import TypeVar

from ...grad_mode import no_grad
from ...tensor import Tensor
from .. import functional as F
from ..conv import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from ..module import Module
from ..parameter import Parameter, is_lazy
from .weight_norm import _add_hook, _hooks, _remove

__all__ = ["remove_spectral_norm", "spectral_norm"]

T = TypeVar("T", bound=Module)


class SpectralNorm:
    """The hook that recomputes ``module.<name>`` from ``<name>_orig`` and the power-iteration vectors."""

    def __init__(self, name: str = "weight", n_power_iterations: int = 1, dim: int = 0, eps: float = 1e-12) -> None:
        if n_power_iterations <= 0:
            raise ValueError(f"Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.name, self.dim, self.n_power_iterations, self.eps = name, dim, n_power_iterations, eps

    def reshape_weight_to_matrix(self, weight: Tensor) -> Tensor:
        """(size of ``dim``, everything else): ``dim`` moved first."""
        w = weight
        if self.dim != 0:
            d = self.dim % w.ndim
            w = w.permute(d, *[i for i in range(w.ndim) if i != d])
        return w.reshape(w.shape[0], -1)

    def compute_weight(self, module: Module, do_power_iteration: bool) -> Tensor:
        weight = getattr(module, self.name + "_orig")
        u, v = getattr(module, self.name + "_u"), getattr(module, self.name + "_v")
        mat = self.reshape_weight_to_matrix(weight)
        if do_power_iteration:
            with no_grad():
                m = mat.detach()
                for _ in range(self.n_power_iterations):
                    # in place, as PyTorch: the buffers carry the estimate to the next forward
                    v.copy_(F.normalize(m.t() @ u, dim=0, eps=self.eps))
                    u.copy_(F.normalize(m @ v, dim=0, eps=self.eps))
            u, v = u.clone(), v.clone()
        sigma = u.dot(mat @ v)
        return weight / sigma

    def __call__(self, module: Module) -> None:
        setattr(module, self.name, self.compute_weight(module, do_power_iteration=module.training))

    def remove(self, module: Module) -> None:
        with no_grad():
            weight = self.compute_weight(module, do_power_iteration=False)
        delattr(module, self.name)
        delattr(module, self.name + "_u")
        delattr(module, self.name + "_v")
        delattr(module, self.name + "_orig")
        module.register_parameter(self.name, Parameter(weight.detach()))


def spectral_norm(module: T, name: str = "weight", n_power_iterations: int = 1, eps: float = 1e-12,
                  dim: int | None = None) -> T:
    """Divide ``module.<name>`` by its spectral norm before every forward (``dim``: the output
    dim, 1 for transposed convolutions by default).

    >>> nn.utils.spectral_norm(nn.Linear(4, 3)).weight_orig.shape
    lightgrad.Size([3, 4])
    """
    if dim is None:
        dim = 1 if isinstance(module, ConvTranspose1d | ConvTranspose2d | ConvTranspose3d) else 0
    for hook in _hooks(module):
        if isinstance(hook, SpectralNorm) and hook.name == name:
            raise RuntimeError(f"Cannot register two spectral_norm hooks on the same parameter {name}")
    fn = SpectralNorm(name, n_power_iterations, dim, eps)
    weight = module._parameters.get(name)
    if weight is None:
        raise KeyError(f"spectral_norm: '{name}' is not a parameter of {type(module).__name__}")
    if is_lazy(weight):
        raise ValueError("The module passed to `SpectralNorm` can't have uninitialized parameters. Make sure to "
                         "run the dummy forward before applying spectral normalization")
    with no_grad():
        mat = fn.reshape_weight_to_matrix(weight)
        h, w = mat.shape
        u = F.normalize(weight.new_empty(h).normal_(0, 1), dim=0, eps=fn.eps)
        v = F.normalize(weight.new_empty(w).normal_(0, 1), dim=0, eps=fn.eps)
    delattr(module, name)
    module.register_parameter(name + "_orig", weight)
    setattr(module, name, weight.detach())
    module.register_buffer(name + "_u", u)
    module.register_buffer(name + "_v", v)
    _add_hook(module, fn)
    return module


def remove_spectral_norm(module: T, name: str = "weight") -> T:
    """Undo ``spectral_norm``: ``module.<name>`` is a plain Parameter (weight_orig / sigma) again."""
    return _remove(module, SpectralNorm, name, "spectral_norm")
