"""The autograd API: ``grad``, ``backward``, grad mode, custom ``Function``s and ``functional``."""

from ..function import CustomFunction as Function
from ..function import FunctionCtx
from ..grad_mode import enable_grad, inference_mode, is_grad_enabled, no_grad, set_grad_enabled
from . import functional
from .differentiate import backward, grad

__all__ = ["Function", "FunctionCtx", "backward", "enable_grad", "functional", "grad", "inference_mode",
           "is_grad_enabled", "no_grad", "set_grad_enabled"]
