"""Grad mode, per thread and context: whether ops record a graph, and which backward is recording one.

A leaf of the package (it imports nothing of lightgrad): the primitives, the engine and Tensor read
it, and ``lightgrad.autograd`` re-exports its public part."""

from __future__ import annotations

import contextvars
import functools
from collections.abc import Callable
from typing import Any, TypeVar

_enabled: contextvars.ContextVar[bool] = contextvars.ContextVar("lightgrad_grad", default=True)
# the node whose backward formula is running on Tensors to record a graph (create_graph=True), or
# None: there a NumPy call that would turn a Tensor that requires grad into a plain array raises
# instead of cutting the graph (a second derivative silently 0)
_recording: contextvars.ContextVar[Any] = contextvars.ContextVar("lightgrad_recording", default=None)


# anomaly detection (autograd.detect_anomaly): [enabled, check_nan]; the engine checks each node's
# gradients for NaN while it is on
_anomaly = [False, True]


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
