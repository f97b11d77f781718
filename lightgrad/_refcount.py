"""Reference counts as proof that nobody else holds an object: the CPython-specific speed tricks.

Three hot paths skip an allocation or a copy when an exact reference count proves that only the
code at hand can see an array. The counts are facts about CPython's interpreter and about the
exact call structure of the code that asks, so they are written down here, in one place:

1. Operators write into a temporary operand (lightgrad/tensor.py, ``_reusable``). In ``x * w + b``
   the product is a temporary that only the interpreter's stack holds; ``+`` may write its result
   into the product's array (as NumPy itself does for plain arrays), saving an allocation and a
   third of the memory traffic. ``sole_temporary(x, a)`` is called by ``_reusable``, called by the
   operator (``Tensor.__add__`` ...), called by the interpreter's BINARY_OP. Then x, the operand,
   is held by exactly 5 references: the caller's value stack (the expression's temporary), the
   operator's parameter, ``_reusable``'s parameter, ``sole_temporary``'s parameter and
   getrefcount's argument; a named operand (``t = x * w; t + b``) has a 6th, its variable. The
   array a is held by exactly 4: x's ``_arr`` slot, ``_reusable``'s local, ``sole_temporary``'s
   parameter and getrefcount's argument; a ``detach()``, ``.numpy()`` or ``.data`` of it kept
   anywhere adds one (a view adds one too, and makes ``a.base`` not None: ``_reusable`` checks
   that). ``from_binary_op()`` checks that the frame that called the operator is executing
   BINARY_OP (three frames up: itself, ``_reusable``, the operator), so that a direct call
   (``t.__add__(b)``, ``operator.add``, ``sum()``) whose counts mean something else never reuses.

2. The engine takes a gradient array as ``.grad`` without copying it (lightgrad/engine.py,
   ``_accumulate``), as PyTorch steals a fresh gradient. ``owns(g)`` is called by ``_accumulate``,
   called by the walk's loop ``for p, e, pg in zip(node.parents, node.edges, pgrads)``. A
   gradient only the engine holds has at most 6 references: the backward's result tuple (every
   ``Function.backward`` returns a tuple or list), zip's cached result tuple, the loop variable
   ``pg``, ``_accumulate``'s parameter, ``owns``' parameter and getrefcount's argument; one that
   the loop replaced (densified, unbroadcast, cast) has fewer. An array anything else holds (a
   saved input handed back as a gradient, the same gradient sent to two inputs, a user's tensor)
   has at least one more. (The engine checks the rest: a heap array that owns its memory, is
   writeable, and no arena open.)

3. An arena follows its plan for a step only while the arrays of that step planned into the same
   bytes are gone, and then hands out the arrays of the step before again (lightgrad/memory.py,
   ``Arena.empty``). It reads a slot's (flat, arr) pair, ``arr = flat.reshape(shape)``, as
   ``getrefcount(pair[0])`` and ``getrefcount(pair[1])`` (each subscript a new reference, passed as
   getrefcount's argument): nothing but the slot holds them when flat has exactly
   ``SLOT_FLAT_REFS`` = 3 references (the pair, arr's base, the argument) and arr exactly
   ``SLOT_ARRAY_REFS`` = 2 (the pair, the argument). Any user variable, list, view or tensor of
   them adds one. The arena compares the counts inline, not through a function here: its loop
   runs once for every earlier request a request overlaps (dozens per request on a long step),
   and a call there made a 64-request planned step 1.7x slower (240 against 140 us).

What breaks the counts: a wrapper added around any function of these call chains (a decorator on
an operator, a patched ``_accumulate``) adds a frame and a reference, a debugger or tracer that
reads ``f_locals`` holds references of its own, and another Python version may count differently:
CPython 3.14 borrows stack references without counting them (LOAD_FAST_BORROW), so counts come
out lower, and a free-threaded build lets another thread take a reference meanwhile. A count that
is higher than expected only turns the trick off (the fallback: the operator allocates its
result, the engine copies the gradient, the arena bump-allocates past its plan), never a wrong
answer; a count that is lower than expected would reuse an array someone still holds. So the
tricks are on only on the interpreters the counts were verified on (``VERIFIED``: CPython 3.11.7,
3.12.1 and 3.13.0 with the GIL, running tests/test_refcount.py, tests/test_tensor.py,
tests/test_autograd.py and tests/test_memory.py). Elsewhere ``BINARY_OP`` is None (``_reusable``
returns at once: no operator reuses), ``owns`` answers No and no arena slot's counts read as free.
tests/test_refcount.py fails when a refactor turns a trick off, not only when values change.

This module is a leaf: it imports nothing of lightgrad.
"""

from __future__ import annotations

import dis
import sys
from typing import Any

VERIFIED = ((3, 11), (3, 12), (3, 13))  # (major, minor) of the CPython versions the counts were checked on
ENABLED: bool = (sys.implementation.name == "cpython" and sys.version_info[:2] in VERIFIED
                 and getattr(sys, "_is_gil_enabled", lambda: True)())

# the opcode of ``a + b`` and the other binary operators (None: operators never reuse an operand)
BINARY_OP: int | None = dis.opmap["BINARY_OP"] if ENABLED else None

OPERAND_REFS = 5  # references to a temporary operand inside sole_temporary (1. above)
OPERAND_ARRAY_REFS = 4  # references to its array there
GRADIENT_REFS = 6  # the most references to a gradient only the engine holds, inside owns (2. above)
# the references to an arena slot's flat array and to its shaped array when only the slot holds
# them (3. above); 0 where the counts were not verified: no count is that low, so no slot is free
SLOT_FLAT_REFS = 3 if ENABLED else 0
SLOT_ARRAY_REFS = 2 if ENABLED else 0

_count = sys.getrefcount


def sole_temporary(x: Any, a: Any) -> bool:
    """Whether operand x of a Tensor operator and its array ``a`` are held by nothing but the
    expression being evaluated (call chain and counts: 1. above)."""
    return _count(x) == OPERAND_REFS and _count(a) == OPERAND_ARRAY_REFS


def from_binary_op() -> bool:
    """Whether the operator that called ``_reusable`` (which called this) was called by the
    interpreter's BINARY_OP, not directly (1. above)."""
    f = sys._getframe(3)
    return f.f_code.co_code[f.f_lasti] == BINARY_OP


if ENABLED:
    def owns(g: Any) -> bool:
        """Whether gradient array g is held by the engine's walk alone (call chain and counts: 2. above)."""
        return _count(g) <= GRADIENT_REFS
else:
    def owns(g: Any) -> bool:
        """Counts not verified on this interpreter: never (the engine copies)."""
        return False
