"""``autograd.graph``: hooks on the tensors custom Functions save (``saved_tensors_hooks``,
``save_on_cpu``, ``disable_saved_tensors_hooks``) and the graph's node type.

The hooks apply to what ``ctx.save_for_backward`` keeps: pack runs when it is saved, unpack when
backward reads ``ctx.saved_tensors``. lightgrad's built-in ops keep their saved arrays as they are
(on the CPU, where every tensor lives), so under these hooks they behave as without them.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

from ..function import Function as Node  # noqa: F401  (isinstance(t.grad_fn, autograd.graph.Node))

_STACK: list[tuple[Callable[[Any], Any], Callable[[Any], Any]] | None] = []


def _pack_hooks() -> tuple[Callable[[Any], Any], Callable[[Any], Any]] | None:
    """The innermost (pack, unpack) pair in effect, or None."""
    return _STACK[-1] if _STACK else None


class saved_tensors_hooks:
    """``with saved_tensors_hooks(pack, unpack):`` custom Functions' saved tensors go through ``pack`` when
    saved and ``unpack`` when backward reads them."""

    def __init__(self, pack_hook: Callable[[Any], Any], unpack_hook: Callable[[Any], Any]) -> None:
        self.pack_hook, self.unpack_hook = pack_hook, unpack_hook

    def __enter__(self) -> saved_tensors_hooks:
        if _STACK and _STACK[-1] is None:
            raise RuntimeError(_DISABLED[-1])
        _STACK.append((self.pack_hook, self.unpack_hook))
        return self

    def __exit__(self, *exc: object) -> None:
        _STACK.pop()


class save_on_cpu(saved_tensors_hooks):
    """Keep saved tensors on the CPU: lightgrad's tensors all live there, so this changes nothing."""

    def __init__(self, pin_memory: bool = False, device_type: str = "cuda") -> None:
        super().__init__(lambda t: t, lambda t: t)


_DISABLED: list[str] = []


@contextlib.contextmanager
def disable_saved_tensors_hooks(error_message: str) -> Iterator[None]:
    """Refuse saved_tensors_hooks inside this block, with ``error_message``."""
    _STACK.append(None)
    _DISABLED.append(error_message)
    try:
        yield
    finally:
        _STACK.pop()
        _DISABLED.pop()
