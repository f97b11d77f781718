"""Array storage: the one place lightgrad allocates arrays.

Without an arena, storage comes from NumPy's heap. Inside ``with arena(...)``, every op output and
gradient is carved from the arena's preallocated buffer by bump allocation (bare-lm's model).
"""

from __future__ import annotations

import contextvars
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

_ALIGN = 64
_current: contextvars.ContextVar[Arena | None] = contextvars.ContextVar("lightgrad_arena", default=None)
_arenas: list[Any] = []  # weak references to every arena made, for stats()


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


def _aligned_block(n: int) -> np.ndarray:
    """n bytes whose first byte sits on a 64-byte boundary (cache lines, SIMD loads)."""
    raw = np.empty(n + _ALIGN, np.uint8)
    shift = -raw.ctypes.data % _ALIGN
    return raw[shift:shift + n]


class Arena:
    """A preallocated byte buffer with aligned bump allocation and an O(1) ``reset()``.

    >>> a = Arena("1MB", name="temp"); x = a.empty((4,), np.float32); a.used
    64
    """

    def __init__(self, capacity: int | str, name: str = "arena", grow: bool = False) -> None:
        import weakref

        self.name = name
        self.capacity = parse_size(capacity)
        self.grow = grow
        self._blocks = [_aligned_block(self.capacity)]
        self._block = 0
        self._offset = 0
        self._used_before = 0  # bytes used in earlier blocks (growing arenas only)
        self.peak = 0
        self.generation = 0  # bumped by reset(): storage handed out before is reclaimed
        # Tensors made while this arena is active hold this token; reset() clears it, so a tensor
        # whose storage was reclaimed raises instead of returning stale data (bare-lm has no check).
        self._token: list[Any] = [True, self]
        _arenas.append(weakref.ref(self))

    @property
    def used(self) -> int:
        return self._used_before + self._offset

    def empty(self, shape: tuple[int, ...], dt: Any) -> np.ndarray:
        """An uninitialised array of ``shape`` and NumPy dtype ``dt`` carved from the arena."""
        dt = np.dtype(dt)
        n = dt.itemsize
        for s in shape:
            n *= s
        start = -(-self._offset // _ALIGN) * _ALIGN
        buf = self._blocks[self._block]
        if start + n > buf.size:
            buf, start = self._next_block(n)
        self._offset = start + n
        if self.used > self.peak:
            self.peak = self.used
        return buf[start:start + n].view(dt).reshape(shape)

    def _next_block(self, n: int) -> tuple[np.ndarray, int]:
        if not self.grow:
            raise MemoryError(
                f"arena '{self.name}' is full: capacity {self.capacity} bytes, {self.used} used, "
                f"{n} requested; make it larger or pass grow=True")
        self._used_before += self._offset
        self._block += 1
        if self._block == len(self._blocks) or self._blocks[self._block].size < n:
            self._blocks.insert(self._block, _aligned_block(max(n, self.capacity)))
        self._offset = 0
        return self._blocks[self._block], 0

    def reset(self) -> None:
        """Reclaim everything allocated so far, in O(1); tensors made before can no longer be read."""
        self._token[0] = False
        self._token = [True, self]
        self._block = 0
        self._offset = 0
        self._used_before = 0
        self.generation += 1

    def __enter__(self) -> Arena:
        self._tokens = getattr(self, "_tokens", [])
        self._tokens.append(_current.set(self))
        return self

    def __exit__(self, *exc: object) -> None:
        _current.reset(self._tokens.pop())

    def __repr__(self) -> str:
        return (f"Arena(name={self.name!r}, capacity={self.capacity}, used={self.used}, "
                f"peak={self.peak})")


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
    """The liveness token new tensors take: None on the heap, else the active arena's generation."""
    a = _current.get()
    return None if a is None else a._token


def empty_like_home(home: list[Any] | None, shape: tuple[int, ...], dt: Any) -> np.ndarray:
    """Storage that lives as long as the tensor whose token is ``home`` (its arena, or the heap):
    a leaf's gradient is kept beside the leaf, not in the temporary arena of the step."""
    if home is None or not home[0]:
        return np.empty(shape, dt)
    return home[1].empty(shape, dt)


def reclaimed_error(home: list[Any]) -> RuntimeError:
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
