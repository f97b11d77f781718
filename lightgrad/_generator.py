"""The default random generator as the layers below lightgrad.random reach it: ``_gen(generator)``, the
engine (``backend.random.Engine``: PyTorch's mt19937 stream and state) that every sampler draws from,
the given generator's or the default's.

A leaf: it imports nothing of lightgrad. The generator itself (``lightgrad.Generator``, its state as a
uint8 Tensor) is lightgrad.random's, which sits above Tensor; the Tensor methods that fill in place
(``uniform_``, ``normal_``, ...) sit below it and draw through here. lightgrad.random binds its default
generator here when the package loads, before anything draws: the one late binding of this module. The
compiler swaps ``_gen`` for a checking wrapper while it traces, in every module that imported it.
"""

from __future__ import annotations

from typing import Any

default_generator: Any = None  # lightgrad.random.default_generator, bound by lightgrad.random


def _gen(generator: Any) -> Any:
    """The engine of ``generator``, or of the default generator when it is None."""
    return (default_generator if generator is None else generator)._engine
