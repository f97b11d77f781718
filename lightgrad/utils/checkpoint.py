"""Activation checkpointing: ``checkpoint(fn, *args)`` runs ``fn`` without keeping its intermediate
values and runs it again in backward to get them, trading compute for memory (PyTorch's
``torch.utils.checkpoint``).

Both of PyTorch's variants (``use_reentrant=True`` or ``False``) recompute the same way here: in
backward, ``fn`` runs again on detached copies of its inputs (with the random state it had, so
dropout draws the same masks), and a backward through that recomputed graph accumulates the
parameters' gradients and hands the inputs' gradients on. So gradients reach ``.grad`` through
``backward()``; ``autograd.grad`` through a checkpoint, which only PyTorch's non-reentrant variant
supports, is not supported.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Callable, Iterable
from typing import Any

from ..autograd import Function
from ..autograd import backward as _backward
from ..grad_mode import enable_grad
from ..random import get_rng_state, set_rng_state
from ..tensor import Tensor, tensor

__all__ = ["checkpoint", "checkpoint_sequential"]

_REENTRANT_WARNING = ("torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly. Starting in "
                      "PyTorch 2.9, calling checkpoint without use_reentrant will raise an exception. "
                      "use_reentrant=False is recommended, but if you need to preserve the current default behavior, "
                      "you can pass use_reentrant=True. Refer to docs for more details on the differences between the "
                      "two variants.")


def noop_context_fn() -> tuple[contextlib.AbstractContextManager[Any], contextlib.AbstractContextManager[Any]]:
    return contextlib.nullcontext(), contextlib.nullcontext()


class _Recompute(Function):
    """The node that stands for the checkpointed call: its backward runs the call again."""

    @staticmethod
    def forward(ctx: Any, run: Callable[..., Any], preserve_rng: bool, context_fn: Callable[..., Any],
                *args: Any) -> Any:
        ctx.run, ctx.context_fn = run, context_fn
        ctx.rng = get_rng_state() if preserve_rng else None
        ctx.args = args
        forward_ctx, _ = context_fn()
        with forward_ctx:
            out = run(*args)
        ctx.single = not isinstance(out, tuple)
        return out

    @staticmethod
    def backward(ctx: Any, *grads: Any) -> Any:
        inputs = [a.detach().requires_grad_(a.requires_grad) if isinstance(a, Tensor) else a for a in ctx.args]
        state = get_rng_state() if ctx.rng is not None else None
        try:
            if ctx.rng is not None:
                set_rng_state(ctx.rng)  # the same random draws as the first run (dropout masks)
            _, recompute_ctx = ctx.context_fn()
            with enable_grad(), recompute_ctx:
                out = ctx.run(*inputs)
        finally:
            if state is not None:
                set_rng_state(state)
        outs = (out,) if ctx.single else out
        pairs = [(o, g) for o, g in zip(outs, grads) if isinstance(o, Tensor) and o.requires_grad and g is not None]
        if pairs:
            _backward([o for o, _ in pairs], [g for _, g in pairs])
        return (None, None, None, *[i.grad if isinstance(i, Tensor) and i.requires_grad else None for i in inputs])


def checkpoint(function: Callable[..., Any], *args: Any, use_reentrant: bool | None = None,
               context_fn: Callable[[], tuple[Any, Any]] = noop_context_fn, determinism_check: str = "default",
               debug: bool = False, preserve_rng_state: bool = True, early_stop: bool = True, **kwargs: Any) -> Any:
    """Run ``function(*args, **kwargs)`` keeping none of its intermediate values; backward recomputes them.

    >>> y = checkpoint(block, x, use_reentrant=False)  # block's activations are not kept
    """
    if use_reentrant is None:
        warnings.warn(_REENTRANT_WARNING, stacklevel=2)
    if kwargs and use_reentrant:
        raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
    run = (lambda *a: function(*a, **kwargs)) if kwargs else function
    if not any(isinstance(a, Tensor) and a.requires_grad for a in args):
        if use_reentrant:  # PyTorch's reentrant variant: the parameters inside get no gradient
            warnings.warn("None of the inputs have requires_grad=True. Gradients will be None", stacklevel=2)
        else:
            # the non-reentrant variant differentiates the parameters inside even so: a leaf that
            # requires grad (and gets none) joins the node to the graph
            return _Recompute.apply(lambda _, *a: run(*a), preserve_rng_state, context_fn, _anchor(), *args)
    return _Recompute.apply(run, preserve_rng_state, context_fn, *args)


def _anchor() -> Tensor:
    return tensor(0.0, requires_grad=True)


def checkpoint_sequential(functions: Any, segments: int, input: Any, use_reentrant: bool | None = None,
                          **kwargs: Any) -> Any:
    """Split a Sequential (or list of modules) into ``segments`` runs, checkpointing all but the last."""
    if use_reentrant is None:
        warnings.warn(_REENTRANT_WARNING, stacklevel=2)
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
    fns: list[Any] = list(functions.children()) if hasattr(functions, "children") else list(functions)

    def run_segment(start: int, end: int, fns: Iterable[Any]) -> Callable[[Any], Any]:
        chosen = list(fns)[start:end + 1]

        def forward(x: Any) -> Any:
            for f in chosen:
                x = f(x)
            return x
        return forward

    size = len(fns) // segments
    end = -1
    for start in range(0, size * (segments - 1), size):
        end = start + size - 1
        input = checkpoint(run_segment(start, end, fns), input, use_reentrant=bool(use_reentrant),
                           preserve_rng_state=preserve)
    return run_segment(end + 1, len(fns) - 1, fns)(input)
