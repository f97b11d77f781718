"""Activation modules. Each activation is written once, as a function in ``functional``; the
module is a thin wrapper generated from it (its constructor takes the function's options).

>>> nn.LeakyReLU(0.2)(lightgrad.tensor([-1.0, 2.0]))
tensor([-0.2000,  2.0000])
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from ..tensor import Tensor, empty
from . import functional as F
from . import init
from .module import Module
from .parameter import Parameter


def _activation(name: str, fn: Callable[..., Tensor], *options: str,
                repr_fn: Callable[[Module], str] | None = None) -> type[Module]:
    """A Module class ``name`` whose constructor takes ``options`` (with ``fn``'s defaults) and
    whose forward is ``fn(input, **options)``."""
    sig = inspect.signature(fn)
    params = [inspect.Parameter(o, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=sig.parameters[o].default)
              for o in options]
    init_sig = inspect.Signature(params)

    def __init__(self: Module, *args: Any, **kwargs: Any) -> None:
        try:
            bound = init_sig.bind(*args, **kwargs)
        except TypeError as e:
            raise TypeError(f"{name}.__init__(): {e}") from None
        bound.apply_defaults()
        Module.__init__(self)
        for k, v in bound.arguments.items():
            setattr(self, k, v)

    def forward(self: Module, input: Tensor) -> Tensor:
        """Apply the activation to ``input`` with this module's options."""
        return fn(input, **{o: getattr(self, o) for o in options})

    def extra_repr(self: Module) -> str:
        # PyTorch's style: every option as name=value, except inplace, shown only when True
        """The module's options as ``name=value`` for its repr (``inplace`` only when True)."""
        parts = [f"{o}={getattr(self, o)!r}" for o in options if o != "inplace"]
        if getattr(self, "inplace", False):
            parts.append("inplace=True")
        return ", ".join(parts)

    __init__.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [inspect.Parameter("self", inspect.Parameter.POSITIONAL_ONLY)] + params)
    doc = (f"Module form of ``F.{fn.__name__}``: ``nn.{name}({', '.join(options)})``.\n\n"
           f"{(fn.__doc__ or '').strip()}")
    cls = type(name, (Module,), {"__init__": __init__, "forward": forward,
                                 "extra_repr": repr_fn or extra_repr, "__doc__": doc,
                                 "__module__": __name__, "__qualname__": name})
    return cls


def _lambd_repr(module: Module) -> str:
    """The repr of a shrink module: its ``lambd`` alone, as PyTorch shows it."""
    return str(module.lambd)


ReLU = _activation("ReLU", F.relu, "inplace")
ReLU6 = _activation("ReLU6", F.relu6, "inplace")
LeakyReLU = _activation("LeakyReLU", F.leaky_relu, "negative_slope", "inplace")
ELU = _activation("ELU", F.elu, "alpha", "inplace")
CELU = _activation("CELU", F.celu, "alpha", "inplace")
SELU = _activation("SELU", F.selu, "inplace")
GELU = _activation("GELU", F.gelu, "approximate")
SiLU = _activation("SiLU", F.silu, "inplace")
Mish = _activation("Mish", F.mish, "inplace")
Sigmoid = _activation("Sigmoid", F.sigmoid)
Tanh = _activation("Tanh", F.tanh)
Hardtanh = _activation("Hardtanh", F.hardtanh, "min_val", "max_val", "inplace")
Hardsigmoid = _activation("Hardsigmoid", F.hardsigmoid, "inplace")
Hardswish = _activation("Hardswish", F.hardswish, "inplace")
Softplus = _activation("Softplus", F.softplus, "beta", "threshold")
Softsign = _activation("Softsign", F.softsign)
LogSigmoid = _activation("LogSigmoid", F.logsigmoid)
Tanhshrink = _activation("Tanhshrink", F.tanhshrink)
Softshrink = _activation("Softshrink", F.softshrink, "lambd", repr_fn=_lambd_repr)
Hardshrink = _activation("Hardshrink", F.hardshrink, "lambd", repr_fn=_lambd_repr)
Threshold = _activation("Threshold", F.threshold, "threshold", "value", "inplace")
GLU = _activation("GLU", F.glu, "dim")
Softmax = _activation("Softmax", F.softmax, "dim")
LogSoftmax = _activation("LogSoftmax", F.log_softmax, "dim")
Softmin = _activation("Softmin", F.softmin, "dim")

class Softmax2d(Module):
    """Softmax over channels (dim -3) of (N, C, H, W) or (C, H, W) input."""

    def forward(self, input: Tensor) -> Tensor:
        """Softmax over the channel dim (-3) of a 3-D or 4-D input."""
        if input.ndim not in (3, 4):
            raise ValueError(f"Softmax2d: expected input to be 3D or 4D, got {input.ndim}D instead")
        return input.softmax(-3)


class PReLU(Module):
    """Leaky ReLU with a learned slope, one shared or one per channel: ``nn.PReLU(num_parameters=C)``."""

    def __init__(self, num_parameters: int = 1, init: float = 0.25, device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        self.num_parameters = num_parameters
        self.init = init
        self.weight = Parameter(empty(num_parameters, dtype=dtype, device=device))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Set every slope back to ``init``."""
        init.constant_(self.weight, self.init)

    def forward(self, input: Tensor) -> Tensor:
        """``max(0, x) + weight * min(0, x)``, the slope per channel or shared."""
        return F.prelu(input, self.weight)

    def extra_repr(self) -> str:
        """The constructor options the module's repr shows."""
        return f"num_parameters={self.num_parameters}"


class RReLU(Module):
    """Randomized leaky ReLU: a random slope in [lower, upper] while training, their mean in eval."""

    def __init__(self, lower: float = 1.0 / 8, upper: float = 1.0 / 3, inplace: bool = False) -> None:
        super().__init__()
        self.lower, self.upper, self.inplace = lower, upper, inplace

    def forward(self, input: Tensor) -> Tensor:
        """Leaky ReLU with a random slope in ``[lower, upper]`` while training, their mean in eval."""
        return F.rrelu(input, self.lower, self.upper, self.training, self.inplace)

    def extra_repr(self) -> str:
        """The constructor options the module's repr shows."""
        return f"lower={self.lower}, upper={self.upper}" + (", inplace=True" if self.inplace else "")


__all__ = ["CELU", "ELU", "GELU", "GLU", "Hardshrink", "Hardsigmoid", "Hardswish", "Hardtanh", "LeakyReLU",
           "LogSigmoid", "LogSoftmax", "Mish", "PReLU", "RReLU", "ReLU", "ReLU6", "SELU", "SiLU", "Sigmoid",
           "Softmax", "Softmax2d", "Softmin", "Softplus", "Softshrink", "Softsign", "Tanh", "Tanhshrink",
           "Threshold"]
