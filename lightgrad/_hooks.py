"""Hook registries: ``RemovableHandle``, what every ``register_*_hook`` returns (PyTorch's
``torch.utils.hooks.RemovableHandle``), and ``add_hook``, which every registration goes through.

A leaf: it imports nothing of lightgrad (tensors and modules keep their hooks in OrderedDicts keyed by
the handle's id; the engine runs tensor hooks, Module.__call__ module hooks).
"""

from __future__ import annotations

import itertools
import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterable
from typing import Any

_ids = itertools.count()


class RemovableHandle:
    """Removes the hook it was returned for: ``h = t.register_hook(fn); ...; h.remove()``.

    Also a context manager (the hook is removed on exit). It holds its registries weakly, so a
    handle kept after its tensor or module is gone keeps nothing alive.
    """

    __slots__ = ("hooks_dict_ref", "id", "extra_dict_ref", "__weakref__")

    def __init__(self, hooks_dict: Any, *, extra_dict: Any = None) -> None:
        self.hooks_dict_ref = weakref.ref(hooks_dict)
        self.id = next(_ids)
        extras = () if extra_dict is None else extra_dict if isinstance(extra_dict, list | tuple) else (extra_dict,)
        self.extra_dict_ref = tuple(weakref.ref(d) for d in extras)

    def remove(self) -> None:
        """Unregister the hook (a second call does nothing)."""
        for ref in (self.hooks_dict_ref, *self.extra_dict_ref):
            d = ref()
            if d is not None:
                d.pop(self.id, None)

    def __enter__(self) -> RemovableHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.remove()


def add_hook(registry: OrderedDict[int, Any], hook: Callable[..., Any], prepend: bool = False,
             extra: Iterable[OrderedDict[int, Any]] = ()) -> RemovableHandle:
    """Register ``hook`` in ``registry`` (first when ``prepend``), its handle also removing its entry
    from each ``extra`` registry (the flags kept beside it: with_kwargs, always_call)."""
    extras = list(extra)
    handle = RemovableHandle(registry, extra_dict=extras or None)
    registry[handle.id] = hook
    if prepend:
        registry.move_to_end(handle.id, last=False)
    return handle
