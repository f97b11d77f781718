"""Array storage: the one place lightgrad allocates arrays.

Without an arena, storage comes from NumPy's heap. Inside ``with arena(...)``, every op output and
gradient is carved from the arena's preallocated buffer by bump allocation (bare-lm's model).
"""

from __future__ import annotations

import contextvars
import functools
import re
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from ._refcount import SLOT_ARRAY_REFS, SLOT_FLAT_REFS

_ALIGN = 64
_current: contextvars.ContextVar[Arena | None] = contextvars.ContextVar("lightgrad_arena", default=None)
_arenas: list[Any] = []  # weak references to every arena made, for stats()
# Moves on every change that may leave what a graph saved unreadable: an in-place modification
# anywhere (tensor._bump) or an arena reset. The engine checks a node's saved tensors (versions,
# arenas: Function.mems) only when it moved since the node ran.
_STAMP = [0]


def parse_size(size: int | str) -> int:
    """``parse_size("256MB")`` is 268435456; plain ints are bytes."""
    if isinstance(size, int):
        if size <= 0:
            raise ValueError(f"arena size must be positive, got {size}")
        return size
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMG]?i?B?)\s*", size, re.IGNORECASE)
    if not m:
        raise ValueError(f"expected a size like 1024, '64KB', '256MB' or '1GB', got {size!r}")
    unit = m.group(2).upper().rstrip("B").rstrip("I")
    return int(float(m.group(1)) * {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}[unit])


def _nobody() -> None:
    return None


class _Block(np.ndarray):
    """An arena's bytes, as an array that knows its arena (weakly: the arena owns its blocks), so
    that every array over them can tell whose storage it is (``home``). It never leaves this
    module: the arena's blocks are plain arrays over a memoryview of it."""

    arena: Any = staticmethod(_nobody)  # the arena's weak reference, set when it is made


def _aligned_block(n: int, arena: Arena) -> np.ndarray:
    """n bytes of ``arena`` whose first byte sits on a 64-byte boundary (cache lines, SIMD loads):
    a plain uint8 array whose base is a memoryview of the _Block that names the arena."""
    import weakref

    raw = np.empty(n + _ALIGN, np.uint8)
    shift = -raw.ctypes.data % _ALIGN
    tagged = raw[shift:shift + n].view(_Block)
    tagged.arena = weakref.ref(arena)
    return np.frombuffer(memoryview(tagged), np.uint8)  # type: ignore[arg-type]


class Arena:
    """A preallocated byte buffer with aligned bump allocation and an O(1) ``reset()``.

    An arena learns the step it serves: while a step runs it notes each request's size and when
    the array it handed out dies; at ``reset()`` it plans the next step's requests so that arrays
    whose lifetimes do not overlap share memory (the step's memory stays hot in the CPU caches, as
    a heap's freed blocks do). A request that differs from the plan, or whose planned place still
    holds a live array, is bump-allocated above the plan instead, so planning never changes results.

    >>> a = Arena("1MB", name="temp"); x = a.empty((4,), np.float32); a.used
    64
    """

    def __init__(self, capacity: int | str, name: str = "arena", grow: bool = False) -> None:
        import weakref

        self.name = name
        self.capacity = parse_size(capacity)
        self.grow = grow
        self._blocks = [_aligned_block(self.capacity, self)]
        self._views: list[Any] = [self._blocks[0].base]  # the memoryview of each block's _Block
        self._block = 0
        self._offset = 0
        self._used_before = 0  # bytes used in earlier blocks (growing arenas only)
        self.peak = 0
        self.generation = 0  # bumped by reset(): storage handed out before is reclaimed
        # Every tensor over this arena's bytes holds this token (see ``home``); reset() clears it, so
        # a tensor whose storage was reclaimed raises instead of returning stale data (bare-lm has no check).
        self._token: list[Any] = [True, self]
        self._tokens: list[contextvars.Token[Arena | None]] = []  # one per open ``with``, innermost last
        self._thread: int | None = None  # the thread inside ``with`` this arena, while one is
        self._lock = threading.Lock()
        # this step's requests (sizes), weak references to its arrays and when each died (request
        # count): kept while a step is learnt, for its plan
        self._sizes: list[int] = []
        self._refs: list[Any] = []
        self._death: dict[int, int] = {}
        self._slots: list[tuple[np.ndarray, np.ndarray] | None] = []  # per planned request: its last arrays
        self._plan: tuple[list[int], list[int], list[list[int]]] | None = None  # sizes, offsets, conflicts
        self._top = 0  # end of the planned region: unplanned requests go above it
        self._on_plan = True  # every request of this step so far followed the plan
        self._weakref = weakref.ref
        _arenas.append(weakref.ref(self))

    @property
    def used(self) -> int:
        """Bytes the arena has handed out so far."""
        return self._used_before + self._offset

    def empty(self, shape: tuple[int, ...], dt: Any) -> np.ndarray:
        """An uninitialised array of ``shape`` and NumPy dtype ``dt`` carved from the arena."""
        dt = np.dtype(dt)
        n = dt.itemsize
        for s in shape:
            n *= s
        i = len(self._sizes)
        self._sizes.append(n)
        plan = self._plan
        if plan is not None and self._on_plan:
            if i < len(plan[0]) and plan[0][i] == n and self._block == 0:
                # the earlier arrays of this step planned into the same bytes must be gone: nothing
                # but their slot holds them (the counts: lightgrad/_refcount.py, item 3; compared
                # here, not in a call: this loop runs for every earlier request a request overlaps)
                slots = self._slots
                for j in plan[2][i]:
                    pair = slots[j]
                    if _count(pair[0]) != SLOT_FLAT_REFS or _count(pair[1]) != SLOT_ARRAY_REFS:  # type: ignore[index]
                        break
                else:
                    end = plan[1][i] + n
                    if end > self._offset:  # (on plan, all in the first block: used is the offset)
                        self._offset = end
                        if end > self.peak:
                            self.peak = end
                    # the arrays handed out here in an earlier step, again, when nothing holds them
                    # any more: the step then makes no array objects (a weak reference and its
                    # callback per request, as while learning, cost 3x the rest of an allocation)
                    pair = slots[i]
                    if pair is not None and _count(pair[0]) == SLOT_FLAT_REFS and _count(pair[1]) == SLOT_ARRAY_REFS:
                        arr = pair[1]
                        if arr.dtype is dt and arr.shape == shape and arr.flags.writeable:
                            return arr
                    flat = np.frombuffer(self._views[0][plan[1][i]:end], dt)
                    arr = flat.reshape(shape)
                    slots[i] = (flat, arr)
                    return arr
            self._on_plan = False  # the step went its own way: bump-allocate the rest of it
        start = -(-max(self._offset, self._top if self._block == 0 else 0) // _ALIGN) * _ALIGN
        if start + n > self._blocks[self._block].size:
            self._next_block(n)  # (raises when full, before anything is recorded)
            start = 0
        self._bump(start + n)
        # an array of its own over the bytes (its base is a memoryview, not the block), so that
        # it and every view of it keep it alive: its death says the bytes are free
        owner = np.frombuffer(self._views[self._block][start:start + n], dt)
        if plan is None:  # a step being learnt: note when each array dies, for the plan
            self._refs.append(self._weakref(owner, functools.partial(self._died, i, self.generation)))
        return owner.reshape(shape)

    def _bump(self, end: int) -> None:
        self._offset = max(self._offset, end)
        if self.used > self.peak:
            self.peak = self.used

    def _died(self, i: int, generation: int, _ref: Any = None) -> None:
        if generation == self.generation:  # (an array of an earlier step says nothing of this one)
            self._death[i] = len(self._sizes)

    def _next_block(self, n: int) -> None:
        if not self.grow:
            raise MemoryError(
                f"arena '{self.name}' is full: capacity {self.capacity} bytes, {self.used} used, "
                f"{n} requested; make it larger or pass grow=True")
        self._used_before += self._offset
        self._block += 1
        if self._block == len(self._blocks) or self._blocks[self._block].size < n:
            self._blocks.insert(self._block, _aligned_block(max(n, self.capacity), self))
            self._views.insert(self._block, self._blocks[self._block].base)
        self._offset = 0
        self._on_plan = False

    def reset(self) -> None:
        """Reclaim everything allocated so far, in O(1); tensors made before can no longer be read.
        After a step that did not follow the plan, the next step is learnt and planned afresh."""
        if self._sizes:
            if self._plan is None:
                if self._block == 0:  # (a step that needed more blocks is not planned)
                    self._plan, self._top = _planned(self._sizes, self._death)
                    self._slots = [None] * len(self._sizes)
            elif not self._on_plan or len(self._sizes) != len(self._plan[0]):
                self._plan, self._top = None, 0
        self._sizes, self._refs, self._death = [], [], {}
        self._on_plan = True
        self._token[0] = False
        self._token = [True, self]
        _STAMP[0] += 1
        self._block = 0
        self._offset = 0
        self._used_before = 0
        self.generation += 1

    def __enter__(self) -> Arena:
        # one thread at a time: bump allocation is not thread-safe, and a reset() would reclaim the
        # other thread's tensors under it (nested ``with`` of the same arena in one thread is fine)
        me = threading.get_ident()
        with self._lock:
            if self._thread not in (None, me):
                raise RuntimeError(
                    f"arena '{self.name}' is already in use by another thread (entered in thread "
                    f"{self._thread}, now entered from thread {me}); an arena serves one thread at a "
                    "time: give each thread its own Arena")
            self._thread = me
            self._tokens.append(_current.set(self))
        return self

    def __exit__(self, *exc: object) -> None:
        with self._lock:
            _current.reset(self._tokens.pop())
            if not self._tokens:
                self._thread = None

    def __repr__(self) -> str:
        return (f"Arena(name={self.name!r}, capacity={self.capacity}, used={self.used}, "
                f"peak={self.peak})")


_count = sys.getrefcount


def plan(sizes: list[int], death: dict[int, int]) -> tuple[list[int], int]:
    """Offsets for buffers alive over [i, death[i]) in request counts (still alive: to the end),
    so that buffers alive at once never overlap: the largest first, each at the lowest offset that
    fits among those it coexists with. Returns the offsets and the plan's total size."""
    n = len(sizes)
    life = [(i, death.get(i, n)) for i in range(n)]
    order = sorted(range(n), key=lambda i: (-sizes[i], i))
    placed: list[tuple[int, int, int, int]] = []  # (offset, end, birth, death)
    offsets = [0] * n
    top = 0
    for i in order:
        b, d = life[i]
        size = -(-max(sizes[i], 1) // _ALIGN) * _ALIGN
        off = 0
        for o, e in sorted((o, e) for o, e, pb, pd in placed if pb < d and b < pd):
            if off + size <= o:
                break
            off = max(off, e)
        offsets[i] = off
        placed.append((off, off + size, b, d))
        top = max(top, off + size)
    return offsets, top


def _planned(sizes: list[int], death: dict[int, int]) -> tuple[tuple[list[int], list[int], list[list[int]]], int]:
    """An arena's plan: offsets, and per request the earlier ones planned into overlapping bytes."""
    offsets, top = plan(sizes, death)
    by_offset = sorted(range(len(sizes)), key=lambda i: offsets[i])
    conflicts: list[list[int]] = [[] for _ in sizes]
    for k, i in enumerate(by_offset):  # pairs that overlap in bytes: a sweep over offsets
        end = offsets[i] + sizes[i]
        for j in by_offset[k + 1:]:
            if offsets[j] >= end:
                break
            a, b = (i, j) if i > j else (j, i)
            conflicts[a].append(b)
    return (sizes, offsets, conflicts), top


def active() -> Arena | None:
    """The arena now used for storage in this thread or context, or None for the heap."""
    return _current.get()


def empty(shape: tuple[int, ...], dt: Any) -> np.ndarray:
    """The allocation point: uninitialised storage from the active arena, else the heap."""
    a = _current.get()
    if a is None:
        return np.empty(shape, dt)
    return a.empty(shape, dt)


def token() -> list[Any] | None:
    """The liveness token of storage allocated now: None on the heap, else the active arena's."""
    a = _current.get()
    return None if a is None else a._token


# The invariant that keeps reclaimed storage from being read or written: a Tensor's ``_mem`` is
# ``home(its array)``, the token of the arena generation whose bytes the array views (None for the
# heap). It follows the bytes, not the arena active when the Tensor was made: every view of a tensor
# (detach, .data, view, a slice, a transpose, ..., made inside the arena or outside, before the
# reset) shares its base's token, and a view of a heap tensor made inside an arena has none.
# - set: Tensor._make, Function.apply and the ``Tensor._data`` setter, from the array;
# - checked: the ``Tensor._data`` getter, the one way to the array, raises reclaimed_error once
#   reset() has cleared the token; hot paths read the raw ``_arr`` slot only after that check of
#   their own (Function.apply), or for metadata (shape, dtype, strides);
# - backward: a node keeps the tokens of its inputs and output (Function.mems), checked when the
#   node runs after _STAMP moved (every reset moves it).
# ``home`` finds the arena from the array: every array over an arena's bytes has, down its chain of
# bases, a memoryview of the arena's _Block (NumPy's view bases stop at the first array that does
# not own its bytes, and as_strided adds a wrapper with a ``base``). The arena's current token is
# the right one: a tensor's array is read through the check (or freshly allocated) before a view of
# it is made. An array handed out raw (``.numpy()``, ``np.asarray(t)``) cannot be checked: it is
# valid until the reset.
def home(arr: np.ndarray) -> list[Any] | None:
    """The liveness token of the storage ``arr`` views: its arena's, or None for the heap (and for
    an arena that no longer exists, which no reset can reclaim)."""
    b = arr.base
    while b is not None:  # (a view's base is its storage's first owner; as_strided adds a wrapper)
        if type(b) is memoryview:
            b = b.obj
            if type(b) is _Block:
                a = b.arena()
                return None if a is None else a._token
        b = getattr(b, "base", None)
    return None


def empty_like_home(home: list[Any] | None, shape: tuple[int, ...], dt: Any) -> np.ndarray:
    """Storage that lives as long as the tensor whose token is ``home`` (its arena, or the heap):
    a leaf's gradient is kept beside the leaf, not in the temporary arena of the step."""
    if home is None or not home[0]:
        return np.empty(shape, dt)
    return home[1].empty(shape, dt)


def reclaimed_error(home: list[Any]) -> RuntimeError:
    """The RuntimeError for a tensor whose arena storage was reclaimed by ``reset()``."""
    a = home[1]
    return RuntimeError(f"this tensor's storage was reclaimed by reset() of arena '{a.name}' "
                        f"(now at generation {a.generation}); keep results with .item(), or copy "
                        "tensors out with .clone() outside the arena before resetting it")


@contextmanager
def arena(capacity: int | str = "256MB", name: str = "temp", grow: bool = False) -> Iterator[Arena]:
    """Use a fresh arena for storage inside the block: ``with memory.arena("64MB") as a: ...``."""
    with Arena(capacity, name=name, grow=grow) as a:
        yield a


def stats() -> str:
    """Peak and current bytes of every live arena, one line each (bare-lm's ``mem_stats``)."""
    lines = []
    for ref in _arenas:
        a = ref()
        if a is not None:
            lines.append(f"{a.name:>12}: used {a.used / 2**20:9.3f} MiB  peak {a.peak / 2**20:9.3f} MiB"
                         f"  capacity {a.capacity / 2**20:9.3f} MiB")
    return "\n".join(lines)
