"""Tensor's methods by subject, as mixins (Tensor's bases: see tensor.py), each with its subject's free
functions: elementwise, reduce, shape, index, sort, linalg, creation, random, inplace; common holds what
they all use.

The one late binding. Tensor's methods call the primitives (function.py) and the primitives make
Tensors; the mixins, being Tensor's bases, load before Tensor exists, and so before function.py can
(it imports Tensor). A module here therefore names ``Tensor`` and ``F`` (function) for the type checker
only, and ``bind`` gives it both at run time (and ``TensorSelf``, the type its methods give ``self``,
as Tensor, for ``typing.get_type_hints``): tensor.py calls it once, as soon as it has defined Tensor
and imported function. Importing these modules only defines things, so nothing here runs before that.
"""

from __future__ import annotations

import types
from typing import Any

from . import common, creation, elementwise, index, inplace, linalg, random, reduce, shape, sort


def bind(tensor: type, function: Any) -> None:
    """Give every module here its ``Tensor`` and ``F`` (see above); and name the mixins' methods as
    Tensor's (``__qualname__`` ``Tensor.sum``, not ``ReduceMixin.sum``): they are called as Tensor's,
    and Python's argument errors say that name (``Tensor.sum() takes from 1 to 3 positional ...``)."""
    for module in (common, creation, elementwise, index, inplace, linalg, random, reduce, shape, sort):
        vars(module).update(Tensor=tensor, TensorSelf=tensor, F=function)  # (TensorSelf: see common)
    for mixin in tensor.__mro__[1:-1]:
        for fn in vars(mixin).values():
            if isinstance(fn, types.FunctionType):
                fn.__qualname__ = f"{tensor.__name__}.{fn.__name__}"
