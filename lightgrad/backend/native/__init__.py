"""The native kernel library: float32 kernels in C (kernels.c), used by the backend's functions
when it is built and loaded, else their NumPy path runs; ``random`` holds the random-number
transforms of backend/random.py (random.c, bit-identical to its NumPy path), or None likewise.

``kernels`` is the extension module (None when it is missing or ``LIGHTGRAD_NATIVE=0``) and
``available`` says whether it loaded. A backend function calls a kernel when ``kernels`` is set
and its arrays are float32, C-contiguous and at least ``MIN_SIZE`` elements (``MIN_SIZE`` lets
them through at any size where the native call already beats NumPy's); anything else, float64
included, takes the NumPy path, which stays complete. ``disabled()`` turns the kernels off for a
block (the tests compare both paths with it)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from types import ModuleType

kernels: ModuleType | None = None
random: ModuleType | None = None  # the random-number transforms (random.c), a module of their own
if os.environ.get("LIGHTGRAD_NATIVE", "1") != "0":
    try:
        from . import _kernels as kernels  # type: ignore[attr-defined, no-redef]
    except ImportError:  # not built (no compiler at install): the NumPy path
        kernels = None
    try:
        from . import _random as random  # type: ignore[attr-defined, no-redef]
    except ImportError:
        random = None
available = kernels is not None
_loaded = kernels

# Elements from which a kernel is used. A call costs ~0.1 us (METH_FASTCALL, buffers taken with
# PyBUF_SIMPLE; relu of 16 floats: 0.09 us against 0.6 us for np.maximum into a given output), and
# each kernel replaces one to two dozen NumPy calls, so the kernels pay at every size: no threshold.
MIN_SIZE = 1


@contextlib.contextmanager
def disabled() -> Iterator[None]:
    """Run a block on the NumPy path (the kernels set aside, then restored)."""
    global kernels, random
    saved, kernels = kernels, None
    saved_random, random = random, None
    try:
        yield
    finally:
        kernels, random = saved, saved_random
