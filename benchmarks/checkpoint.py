"""Checkpoint save/load against raw NumPy ``tofile``/``fromfile`` of the same bytes.

Two ways to run it:

- ``python -m benchmarks checkpoint``: the runner times WORKLOADS below (256 MB and 1 GB state_dicts):
  lightgrad.save/load vs torch.save/torch.load, with FLOORS = NumPy ``tofile``/``fromfile`` of the same
  bytes. Each process repeats its step back to back, every save overwriting the file of the one before.
- ``python -m benchmarks.checkpoint [--size-mb 1024] [--dir DIR] [--repeat 5]``: ``main()`` measures a
  1 GB checkpoint against raw NumPy I/O, interleaved so that machine noise hits both alike, and prints
  the medians and the ratios (the target is save and load within 2x of raw NumPy).

Both include everything a user waits for: lightgrad's save hashes the data (overlapped with the
write), fsyncs the file and renames it into place; its load checks the header and the checksum. The
raw NumPy numbers are given with and without an fsync, since only the fsynced one is as durable.

Reading the numbers: a plain ``tofile`` returns once the bytes are in the page cache, and in the
runner's loop the next ``tofile`` truncates them before they ever reach the disk. A save that is on disk
when it returns pays the disk's write time, and in a back-to-back loop also the freeing of the checkpoint
it replaced (on an SSD, or a VM disk mounted with ``discard``, freeing written blocks takes device time:
about a third of writing them on the machine measured). ``main()`` compares each saver overwriting a file
that is on disk.
"""

from __future__ import annotations

import argparse
import atexit
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

import numpy as np

_N_TENSORS = 16


def _folder() -> str:
    d = tempfile.mkdtemp(prefix="lightgrad-bench-ckpt-")
    atexit.register(shutil.rmtree, d, True)
    return d


def _state(T: Any, size_mb: int) -> dict[str, Any]:
    # a model-like state_dict: 16 float32 matrices of equal size
    rows = size_mb * (1 << 20) // (4 * 1024 * _N_TENSORS)
    rng = np.random.default_rng(0)
    return {f"layers.{i}.weight": T.from_numpy(rng.standard_normal((rows, 1024), dtype=np.float32))
            for i in range(_N_TENSORS)}


def _save(size_mb: int) -> Callable[[Any], Callable[[], None]]:
    def make(T: Any) -> Callable[[], None]:
        state = _state(T, size_mb)
        path = os.path.join(_folder(), "ckpt")

        def step() -> None:
            T.save(state, path)
        return step
    return make


def _load(size_mb: int) -> Callable[[Any], Callable[[], None]]:
    def make(T: Any) -> Callable[[], None]:
        path = os.path.join(_folder(), "ckpt")
        T.save(_state(T, size_mb), path)
        kw = {"weights_only": True} if T.__name__ == "torch" else {}

        def step() -> None:
            T.load(path, **kw)
        return step
    return make


def _raw_arrays(size_mb: int) -> list[np.ndarray]:
    rows = size_mb * (1 << 20) // (4 * 1024 * _N_TENSORS)
    rng = np.random.default_rng(0)
    return [rng.standard_normal((rows, 1024), dtype=np.float32) for _ in range(_N_TENSORS)]


def _raw_save(arrays: list[np.ndarray], path: str, fsync: bool) -> None:
    with open(path, "wb") as f:
        for a in arrays:
            a.tofile(f)
        if fsync:
            f.flush()
            os.fsync(f.fileno())


def _raw_load(shapes: list[tuple[int, ...]], path: str) -> list[np.ndarray]:
    with open(path, "rb") as f:
        return [np.fromfile(f, np.float32, count=int(np.prod(s))).reshape(s) for s in shapes]


def _cache(path: str) -> None:
    """Read ``path`` once, so that it is in the page cache."""
    buf = bytearray(16 << 20)
    with open(path, "rb", buffering=0) as f:
        while f.readinto(buf):
            pass


def _uncache(path: str) -> None:
    """Drop ``path`` from the page cache (its pages are clean: both writers fsync before this runs)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fdatasync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def _prime(nbytes: int) -> None:
    """Touch, then free, ``nbytes`` of fresh memory (see main)."""
    np.ones(nbytes, np.uint8)


def _floor_save(size_mb: int) -> Callable[[], Callable[[], None]]:
    def make() -> Callable[[], None]:
        arrays = _raw_arrays(size_mb)
        path = os.path.join(_folder(), "raw")
        return lambda: _raw_save(arrays, path, fsync=False)
    return make


def _floor_load(size_mb: int) -> Callable[[], Callable[[], None]]:
    def make() -> Callable[[], None]:
        arrays = _raw_arrays(size_mb)
        path = os.path.join(_folder(), "raw")
        _raw_save(arrays, path, fsync=False)
        shapes = [a.shape for a in arrays]
        return lambda: None if _raw_load(shapes, path) is None else None
    return make


WORKLOADS: dict[str, Callable[[Any], Callable[[], None]]] = {
    "checkpoint_save_256MB": _save(256),
    "checkpoint_load_256MB": _load(256),
    "checkpoint_save_1GB": _save(1024),
    "checkpoint_load_1GB": _load(1024),
}
FLOORS: dict[str, Callable[[], Callable[[], None]]] = {
    "checkpoint_save_256MB": _floor_save(256),
    "checkpoint_load_256MB": _floor_load(256),
    "checkpoint_save_1GB": _floor_save(1024),
    "checkpoint_load_1GB": _floor_load(1024),
}


def main(argv: list[str] | None = None) -> dict[str, float]:
    """Time a ``size_mb`` checkpoint's save and load against raw NumPy I/O; print and return medians."""
    import lightgrad
    from lightgrad import serialization

    ap = argparse.ArgumentParser(description="checkpoint save/load vs raw NumPy tofile/fromfile")
    ap.add_argument("--size-mb", type=int, default=1024)
    ap.add_argument("--dir", default=None, help="folder for the files (default: the temp folder)")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args(argv)
    folder = tempfile.mkdtemp(prefix="lightgrad-bench-ckpt-", dir=args.dir)
    atexit.register(shutil.rmtree, folder, True)
    arrays = _raw_arrays(args.size_mb)
    shapes = [a.shape for a in arrays]
    state = {f"layers.{i}.weight": lightgrad.from_numpy(a) for i, a in enumerate(arrays)}
    raw, ckpt = os.path.join(folder, "raw.bin"), os.path.join(folder, "ckpt.safetensors")
    # Both savers overwrite a file that is on disk (tofile the one tofile+fsync just made durable, save its
    # own last checkpoint), so both free the old file's blocks: tofile while timed (in the truncation), save
    # after it returns (on a background thread, overlapping the next cases). Loads are timed with the file
    # in the page cache and, where the OS can drop it, out of it, the same for both readers: save writes
    # large checkpoints around the page cache (O_DIRECT), so a load right after it would otherwise be
    # compared from disk against a fromfile from memory. Before each load, _prime touches and frees as
    # much memory as the load is about to allocate: a VM that hands freed memory back to its host (free
    # page reporting) makes the first touch of it cost up to 10x more, whichever reader gets it.
    nothing: Callable[[], None] = lambda: None
    nbytes = sum(a.nbytes for a in arrays)

    def ready(path: str, cached: bool = True) -> Callable[[], None]:
        def prep() -> None:
            if cached:
                _cache(path)
            else:
                _uncache(path)
            _prime(nbytes)
        return prep
    cases: dict[str, tuple[Callable[[], None], Callable[[], Any]]] = {
        "numpy tofile": (nothing, lambda: _raw_save(arrays, raw, fsync=False)),
        "numpy tofile+fsync": (nothing, lambda: _raw_save(arrays, raw, fsync=True)),
        "lightgrad.save": (nothing, lambda: lightgrad.save(state, ckpt)),
        "numpy fromfile": (ready(raw), lambda: _raw_load(shapes, raw)),
        "lightgrad.load": (ready(ckpt), lambda: lightgrad.load(ckpt)),
        "lightgrad.load(mmap=True)": (ready(ckpt), lambda: lightgrad.load(ckpt, mmap=True)),
        "serialization.verify": (ready(ckpt), lambda: serialization.verify(ckpt)),
    }
    if hasattr(os, "posix_fadvise"):
        cases["numpy fromfile, uncached"] = (ready(raw, cached=False), lambda: _raw_load(shapes, raw))
        cases["lightgrad.load, uncached"] = (ready(ckpt, cached=False), lambda: lightgrad.load(ckpt))
    times: dict[str, list[float]] = {k: [] for k in cases}
    cpu: dict[str, list[float]] = {k: [] for k in cases}
    for _ in range(args.repeat):  # interleaved: a noisy moment slows every case, not just one
        for k, (prep, fn) in cases.items():
            prep()
            c0, t0 = time.process_time(), time.perf_counter()
            out = fn()
            times[k].append(time.perf_counter() - t0)
            cpu[k].append(time.process_time() - c0)  # all threads: robust to a busy machine
            del out
    med = {k: statistics.median(v) for k, v in times.items()}
    gb = sum(a.nbytes for a in arrays) / 1e9
    print(f"{gb:.2f} GB in {_N_TENSORS} tensors, {args.repeat} interleaved runs, {os.cpu_count()} CPUs, "
          f"load average {os.getloadavg()[0]:.1f}, folder {folder}")
    for k, v in med.items():
        print(f"  {k:28s} median {v:7.3f} s  ({gb / v:5.2f} GB/s)  min {min(times[k]):7.3f} s  "
              f"CPU {statistics.median(cpu[k]):7.3f} s")
    print(f"  save / tofile        {med['lightgrad.save'] / med['numpy tofile']:5.2f}x   "
          f"save / tofile+fsync  {med['lightgrad.save'] / med['numpy tofile+fsync']:5.2f}x")
    print(f"  load / fromfile      {med['lightgrad.load'] / med['numpy fromfile']:5.2f}x   "
          f"load(mmap) / fromfile {med['lightgrad.load(mmap=True)'] / med['numpy fromfile']:5.2f}x")
    if "lightgrad.load, uncached" in med:
        print(f"  uncached: load / fromfile {med['lightgrad.load, uncached'] / med['numpy fromfile, uncached']:5.2f}x")
    return med


if __name__ == "__main__":
    main(sys.argv[1:])
