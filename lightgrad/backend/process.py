"""Process setup the backend does once at import: glibc's malloc told to keep freed memory."""

from __future__ import annotations

import ctypes
import os
import sys


def _retain_freed_memory() -> None:
    """Make glibc's malloc keep freed memory for reuse instead of handing it back to the OS.

    By default glibc serves large blocks with mmap and trims the heap as soon as its top is free,
    so the temporaries of every training step come back as fresh pages: thousands of page faults
    per step (a third of a transformer step's time was the kernel zeroing pages). With these
    thresholds the blocks freed by one step serve the next (a caching allocator, as in PyTorch);
    the cost is that the process keeps up to 256 MiB of freed memory. Not done when the user set
    glibc's own MALLOC_TRIM_THRESHOLD_/MALLOC_MMAP_THRESHOLD_, or off glibc."""
    if not sys.platform.startswith("linux") or {"MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_THRESHOLD_"} & set(os.environ):
        return
    try:
        libc = ctypes.CDLL(None)
    except OSError:
        return
    # glibc only: other C libraries read mallopt's parameters differently, or lack it
    if not (hasattr(libc, "gnu_get_libc_version") and hasattr(libc, "mallopt")):
        return
    mallopt = libc.mallopt
    mallopt(-3, 32 << 20)  # M_MMAP_THRESHOLD: blocks up to 32 MiB come from the reusable heap
    mallopt(-1, 256 << 20)  # M_TRIM_THRESHOLD: keep up to 256 MiB of free heap top


_retain_freed_memory()
