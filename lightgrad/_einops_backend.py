"""einops on lightgrad tensors: ``einops.rearrange(t, "b c h w -> b (c h w)")``.

einops finds a framework's backend among the subclasses of its ``AbstractBackend`` whose
``framework_name`` is in ``sys.modules``, so lightgrad must define one, but importing einops with
lightgrad would cost every user its import time. The backend's methods are written here as a plain
class, and the subclass is made when einops's ``einops._backends`` module exists: at once if einops
was imported before lightgrad, else by a finder on ``sys.meta_path`` that waits for that module to
load (it answers no other import, and removes itself once it has registered the backend).
"""

from __future__ import annotations

import sys
from importlib.machinery import ModuleSpec
from types import ModuleType
from typing import Any

from . import dtypes as D
from .tensor import Tensor, arange, cat, einsum, from_numpy, stack

_EINOPS_BACKENDS = "einops._backends"
_FLOATING = (D.float16, D.bfloat16, D.float32, D.float64)


class _LightgradOps:
    """What einops asks of a framework, in lightgrad's (PyTorch's) terms; as einops's torch backend."""

    framework_name = "lightgrad"

    def is_appropriate_type(self, tensor: Any) -> bool:
        return isinstance(tensor, Tensor)

    def from_numpy(self, x: Any) -> Tensor:
        t = from_numpy(x)
        if self.is_float_type(t):  # (einops's own tests differentiate what they made)
            t.requires_grad = True
        return t

    def to_numpy(self, x: Tensor) -> Any:
        return x.detach().numpy()

    def arange(self, start: int, stop: int) -> Tensor:
        return arange(start, stop, dtype=D.int64)

    def reduce(self, x: Tensor, operation: str, reduced_axes: Any) -> Tensor:
        if operation == "min":
            return x.amin(dim=reduced_axes)
        if operation == "max":
            return x.amax(dim=reduced_axes)
        if operation in ("sum", "mean"):
            return getattr(x, operation)(dim=reduced_axes)
        if operation in ("any", "all", "prod"):  # one axis at a time, as PyTorch reduces these
            for axis in sorted(reduced_axes)[::-1]:
                x = getattr(x, operation)(dim=axis)
            return x
        raise NotImplementedError("Unknown reduction ", operation)

    def shape(self, x: Tensor) -> Any:
        return x.shape

    def reshape(self, x: Tensor, shape: Any) -> Tensor:
        return x.reshape(shape)

    def transpose(self, x: Tensor, axes: Any) -> Tensor:
        return x.permute(axes)

    def stack_on_zeroth_dimension(self, tensors: list[Tensor]) -> Tensor:
        return stack(tensors)

    def add_axis(self, x: Tensor, new_position: int) -> Tensor:
        return x.unsqueeze(new_position)

    def add_axes(self, x: Tensor, n_axes: int, pos2len: dict[int, int]) -> Tensor:
        sizes = [-1] * n_axes
        for position, length in pos2len.items():
            x = x.unsqueeze(position)
            sizes[position] = length
        return x.expand(sizes)  # a view, as einops's torch backend (its gradient sums back)

    def tile(self, x: Tensor, repeats: Any) -> Tensor:
        return x.repeat(repeats)

    def concat(self, tensors: list[Tensor], axis: int) -> Tensor:
        return cat(tensors, dim=axis)

    def is_float_type(self, x: Tensor) -> bool:
        return x.dtype in _FLOATING

    def einsum(self, pattern: str, *x: Tensor) -> Tensor:
        return einsum(pattern, *x)


_registered: list[type] = []  # (held here: __subclasses__ keeps only weak references)


def _register(backends: ModuleType) -> None:
    if not _registered:
        _registered.append(type("LightgradBackend", (_LightgradOps, backends.AbstractBackend),
                                {"__module__": __name__, "__doc__": "einops's backend for lightgrad tensors."}))


class _EinopsFinder:
    """Finds nothing itself: when einops's backend module is imported, it has the other finders find
    it and registers lightgrad's backend right after the module runs. (A finder by protocol, not a
    subclass of importlib.abc.MetaPathFinder: importing importlib.abc costs 6 ms.)"""

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> ModuleSpec | None:
        if fullname != _EINOPS_BACKENDS:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                break
        else:
            return None
        loader = spec.loader
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        run = loader.exec_module

        def exec_module(module: ModuleType) -> None:
            run(module)
            _register(module)
            if self in sys.meta_path:
                sys.meta_path.remove(self)
        loader.exec_module = exec_module  # type: ignore[method-assign]  # (this spec's own loader)
        return spec


def install() -> None:
    """Register the backend now if einops is loaded, else when it loads."""
    if _EINOPS_BACKENDS in sys.modules:
        _register(sys.modules[_EINOPS_BACKENDS])
    elif not any(isinstance(f, _EinopsFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _EinopsFinder())
