"""Grad mode (per thread and context) and the functional autograd API."""

from __future__ import annotations

import contextvars
import functools
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from .tensor import Tensor

_enabled: contextvars.ContextVar[bool] = contextvars.ContextVar("lightgrad_grad", default=True)
# the node whose backward formula is running on Tensors to record a graph (create_graph=True), or
# None: there a NumPy call that would turn a Tensor that requires grad into a plain array raises
# instead of cutting the graph (a second derivative silently 0)
_recording: contextvars.ContextVar[Any] = contextvars.ContextVar("lightgrad_recording", default=None)


def not_differentiable_twice(what: str) -> RuntimeError:
    """The error for a backward formula that cannot record its own graph (create_graph=True)."""
    node = _recording.get()
    name = node.name() if node is not None else "this op"
    return RuntimeError(f"the derivative of {name} cannot be differentiated again (create_graph=True): its "
                        f"backward formula computes {what} on a Tensor that requires grad as a plain array")
F = TypeVar("F", bound=Callable[..., Any])


def is_grad_enabled() -> bool:
    """True when ops record a graph for backward: ``lightgrad.is_grad_enabled()``."""
    return _enabled.get()


class _GradMode:
    """A context manager and decorator that sets grad mode and restores it on exit."""

    mode = True

    def __init__(self) -> None:
        self._tokens: list[contextvars.Token[bool]] = []

    def __enter__(self) -> None:
        self._tokens.append(_enabled.set(self.mode))

    def __exit__(self, *exc: object) -> None:
        _enabled.reset(self._tokens.pop())

    def __call__(self, fn: F) -> F:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with type(self)():
                return fn(*args, **kwargs)
        return wrapper  # type: ignore[return-value]


class no_grad(_GradMode):
    """Disable graph recording: ``with lightgrad.no_grad(): y = x * 2``."""

    mode = False


class enable_grad(_GradMode):
    """Enable graph recording inside a ``no_grad`` block."""

    mode = True


class inference_mode(no_grad):
    """Same as ``no_grad`` here: ``with lightgrad.inference_mode(): ...``."""

    def __init__(self, mode: bool = True) -> None:
        super().__init__()
        self.mode = not mode


class set_grad_enabled(_GradMode):
    """Set grad mode: ``with set_grad_enabled(False): ...`` or call ``set_grad_enabled(True)``."""

    def __init__(self, mode: bool) -> None:
        super().__init__()
        self.mode = bool(mode)
        self._prev = _enabled.set(self.mode)  # takes effect at once, like PyTorch's

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc: object) -> None:
        _enabled.reset(self._prev)

    def __call__(self, fn: F) -> F:
        _enabled.reset(self._prev)
        mode = self.mode

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with set_grad_enabled(mode):
                return fn(*args, **kwargs)
        return wrapper  # type: ignore[return-value]


def grad(outputs: Tensor | Sequence[Tensor], inputs: Tensor | Sequence[Tensor],
         grad_outputs: Tensor | Sequence[Tensor | None] | None = None,
         retain_graph: bool | None = None, create_graph: bool = False,
         allow_unused: bool = False) -> tuple[Tensor | None, ...]:
    """Gradients of ``outputs`` w.r.t. ``inputs``, without touching ``.grad``.

    >>> x = lightgrad.tensor(3.0, requires_grad=True); lightgrad.autograd.grad(x * x, x)
    (tensor(6.),)
    """
    from .tensor import Tensor, run_backward

    outs = [outputs] if isinstance(outputs, Tensor) else list(outputs)
    ins = [inputs] if isinstance(inputs, Tensor) else list(inputs)
    if grad_outputs is None or isinstance(grad_outputs, Tensor):
        gos: list[Any] = [grad_outputs] * len(outs) if len(outs) == 1 or grad_outputs is None \
            else [grad_outputs]
    else:
        gos = list(grad_outputs)
    if len(gos) != len(outs):
        raise RuntimeError(f"grad_outputs has {len(gos)} entries but outputs has {len(outs)}")
    for i, t in enumerate(ins):
        if not t.requires_grad:
            raise RuntimeError(f"One of the differentiated Tensors (input {i}) does not require grad")
    res = run_backward(outs, gos, retain_graph=create_graph if retain_graph is None else retain_graph,
                       create_graph=create_graph, inputs=ins)
    for i, r in enumerate(res):
        if r is None and not allow_unused:
            raise RuntimeError(f"One of the differentiated Tensors (input {i}) appears to not have "
                               "been used in the graph. Set allow_unused=True if this is desired.")
    return tuple(res)


def backward(tensors: Tensor | Sequence[Tensor], grad_tensors: Any = None,
             retain_graph: bool | None = None, create_graph: bool = False) -> None:
    """``lightgrad.autograd.backward([y1, y2], [g1, g2])``: accumulate into leaves' ``.grad``."""
    from .tensor import Tensor, run_backward

    ts = [tensors] if isinstance(tensors, Tensor) else list(tensors)
    gs = [grad_tensors] * len(ts) if grad_tensors is None or isinstance(grad_tensors, Tensor) \
        else list(grad_tensors)
    run_backward(ts, gs, retain_graph=create_graph if retain_graph is None else retain_graph,
                 create_graph=create_graph)


from .function import CustomFunction as Function  # noqa: E402
from .function import FunctionCtx  # noqa: E402
from . import autograd_functional as functional  # noqa: E402

# `import lightgrad.autograd.functional` (and torch.autograd.functional under the alias): this module
# is a file, so the submodule is registered under its full name, and an empty __path__ lets the
# import system look for submodules at all (finding none on disk)
sys.modules[__name__ + ".functional"] = functional
__path__: list[str] = []

__all__ = ["Function", "FunctionCtx", "backward", "enable_grad", "functional", "grad", "inference_mode",
           "is_grad_enabled", "no_grad", "set_grad_enabled"]
