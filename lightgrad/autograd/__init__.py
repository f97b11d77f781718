"""The autograd API: ``grad``, ``backward``, grad mode, custom ``Function``s, gradient checks, anomaly
detection, ``graph`` (saved-tensor hooks) and ``functional``."""

from ..grad_mode import enable_grad, inference_mode, is_grad_enabled, no_grad, set_grad_enabled
from . import functional, graph
from .anomaly_mode import detect_anomaly, set_detect_anomaly
from .differentiate import backward, grad
from .function import BackwardCFunction, Function, FunctionCtx, once_differentiable
from .gradcheck import gradcheck, gradgradcheck

__all__ = ["BackwardCFunction", "Function", "FunctionCtx", "backward", "detect_anomaly", "enable_grad", "functional",
           "grad", "gradcheck", "gradgradcheck", "graph", "inference_mode", "is_grad_enabled", "no_grad",
           "once_differentiable", "set_detect_anomaly", "set_grad_enabled"]
