"""The reads behind lightgrad.serialization.load: the tensors as views of a buffer or a memory map, or
copies read with preadv on the pool's threads and hashed as they arrive; the checksum check; and the
widening of BF16 tensors from other tools' files."""

from __future__ import annotations

import hashlib
import math
import os
from typing import Any

import numpy as np

from .checksum import _cancel, _checksum, _hash_chunks, _pool, _results
from .format import _CHUNK, _CODES, _K_SHA, _SLICE, CheckpointError, _check_meta

_BF16 = np.dtype("<u2")  # BF16 without ml_dtypes: read as raw bits, widened to float32


def _views(buf: Any, entries: dict[str, tuple[str, list[int], int, int]], start: int) -> dict[str, np.ndarray]:
    return {n: np.frombuffer(buf, dtype=_CODES.get(code, _BF16), count=math.prod(shape),
                             offset=start + begin).reshape(shape)
            for n, (code, shape, begin, _end) in entries.items()}


def _ours(meta: dict[str, str], name: str) -> bool:
    ours = any(k.startswith("lightgrad.") for k in meta)
    if ours:
        _check_meta(meta, name)
    return ours


def _finish(meta: dict[str, str], entries: dict[str, tuple[str, list[int], int, int]],
            views: dict[str, np.ndarray], mode: str, name: str) -> tuple[dict[str, str], dict[str, np.ndarray], str]:
    """Checksum the arrays in ``views`` (of a memory map or of bytes), copied in "copy" mode."""
    ours = _ours(meta, name)
    with _pool() as pool:
        chunks = _hash_chunks(pool, views) if ours else {}
        try:
            # copying (in this thread) overlaps the hashing (in the pool); both release the GIL
            arrays = {n: v.copy() for n, v in views.items()} if mode == "copy" else views
            if ours:
                _check_sum(meta, entries, _results(chunks), name)
        finally:
            _cancel(chunks)
    del views, chunks
    return meta, _widen(arrays, entries, mode == "map"), name


def _read_copies(fd: int, meta: dict[str, str], entries: dict[str, tuple[str, list[int], int, int]],
                 start: int, name: str) -> tuple[dict[str, str], dict[str, np.ndarray], str]:
    """Read every array into memory of its own, a slice at a time, each slice hashed while it is
    still in the CPU cache; the pool's threads read and hash different 4 MiB chunks at once."""
    ours = _ours(meta, name)
    arrays = {n: np.empty(shape, _CODES.get(code, _BF16)) for n, (code, shape, _b, _e) in entries.items()}
    hashes: dict[str, list[Any]] = {}
    with _pool() as pool:
        jobs = []
        for n, (_c, _s, begin, end) in entries.items():
            dst = arrays[n].reshape(-1).view(np.uint8)
            hashes[n] = [hashlib.sha256() if ours else None for _ in range(0, end - begin, _CHUNK)]
            jobs += [pool.submit(_read_and_hash, fd, dst[i * _CHUNK:(i + 1) * _CHUNK],
                                 start + begin + i * _CHUNK, h, name) for i, h in enumerate(hashes[n])]
        try:
            for j in jobs:
                j.result()
        finally:
            for j in jobs:
                j.cancel()
    if ours:
        _check_sum(meta, entries, {n: [h.digest() for h in hs] for n, hs in hashes.items()}, name)
    return meta, _widen(arrays, entries, False), name


def _read_and_hash(fd: int, dst: np.ndarray, offset: int, h: Any, name: str) -> None:
    for i in range(0, dst.size, _SLICE):
        d = dst[i:i + _SLICE]
        view = d.data
        while view:
            got = os.preadv(fd, [view], offset + i + d.size - len(view))
            if not got:
                raise CheckpointError(f"checkpoint {name} is truncated: it got shorter while being read")
            view = view[got:]
        if h is not None:
            h.update(d)


def _check_sum(meta: dict[str, str], entries: dict[str, tuple[str, list[int], int, int]],
               digests: dict[str, list[bytes]], name: str) -> None:
    info = {n: (code, shape, end - begin) for n, (code, shape, begin, end) in entries.items()}
    digest = _checksum(meta, info, digests)
    if digest != meta[_K_SHA]:
        raise CheckpointError(
            f"checkpoint {name} is corrupted: checksum mismatch (header says "
            f"{meta[_K_SHA][:16]}..., data and header hash to {digest[:16]}...); "
            "the file changed after it was saved (e.g. a flipped byte or a partial copy)")


def _widen(arrays: dict[str, np.ndarray], entries: dict[str, tuple[str, list[int], int, int]],
           mapped: bool) -> dict[str, np.ndarray]:
    for n, (code, _s, _b, _e) in entries.items():
        a = arrays[n]
        if code == "BF16" and a.dtype == _BF16:  # (no ml_dtypes: raw bits, widened)
            arrays[n] = (a.astype(np.uint32) << 16).view(np.float32)
        elif mapped and not (a.flags.writeable and a.flags.aligned):
            # tensors must be writable (a bytes buffer is not) and aligned (a foreign file's may not be)
            arrays[n] = a.copy()
    return arrays
