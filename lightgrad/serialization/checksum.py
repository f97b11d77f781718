"""The checkpoint's checksum: SHA-256 over the metadata, the entries and the digests of 4 MiB chunks,
hashed on a pool of threads (the definition is in lightgrad.serialization's docstring)."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import numpy as np

from .format import _CHUNK, _K_SHA, _SLICE

# ---- checksum ---------------------------------------------------------------------------------

def _bytes_of(arr: np.ndarray) -> memoryview:
    return arr.reshape(-1).view(np.uint8).data


def _sha256(chunk: memoryview) -> bytes:
    """SHA-256 of ``chunk``, hashed from a small scratch copy a slice at a time: the copy pulls the bytes
    into the CPU cache faster than the hash does by itself (here ~1.25x faster overall). Both release
    the GIL, so chunks hash in parallel."""
    src = np.frombuffer(chunk, np.uint8)
    scratch = np.empty(min(_SLICE, src.size), np.uint8)
    h = hashlib.sha256()
    for i in range(0, src.size, _SLICE):
        s = src[i:i + _SLICE]
        t = scratch[:s.size]
        t[:] = s
        h.update(t.data)
    return h.digest()


def _hash_chunks(pool: ThreadPoolExecutor, arrays: dict[str, np.ndarray]) -> dict[str, list[Future[bytes]]]:
    """Start hashing every 4 MiB chunk of every array on the pool; returns the futures by name."""
    out = {}
    for name, arr in arrays.items():
        buf = _bytes_of(arr)
        out[name] = [pool.submit(_sha256, buf[i:i + _CHUNK]) for i in range(0, len(buf), _CHUNK)]
    return out


def _results(chunks: dict[str, list[Future[bytes]]]) -> dict[str, list[bytes]]:
    return {name: [fut.result() for fut in futs] for name, futs in chunks.items()}


def _copy_and_digest(chunk: memoryview) -> tuple[np.ndarray, bytes]:
    """A copy of ``chunk`` and the SHA-256 of that copy, made a slice at a time (each slice hashed while
    it is in the CPU cache). The copy, not the source, is hashed and then written: another thread may
    change the tensor meanwhile, and the file must hold exactly the bytes its checksum covers."""
    src = np.frombuffer(chunk, np.uint8)
    out = np.empty_like(src)
    h = hashlib.sha256()
    for i in range(0, src.size, _SLICE):
        d = out[i:i + _SLICE]
        d[:] = src[i:i + _SLICE]
        h.update(d.data)
    return out, h.digest()


def _copy_chunks(pool: ThreadPoolExecutor,
                 arrays: dict[str, np.ndarray]) -> dict[str, list[Future[tuple[np.ndarray, bytes]]]]:
    """Start copying and hashing every 4 MiB chunk of every array on the pool; the futures by name."""
    out = {}
    for name, arr in arrays.items():
        buf = _bytes_of(arr)
        out[name] = [pool.submit(_copy_and_digest, buf[i:i + _CHUNK]) for i in range(0, len(buf), _CHUNK)]
    return out


def _digests(chunks: dict[str, list[Future[tuple[np.ndarray, bytes]]]]) -> dict[str, list[bytes]]:
    return {name: [fut.result()[1] for fut in futs] for name, futs in chunks.items()}


def _copies(chunks: dict[str, list[Future[tuple[np.ndarray, bytes]]]], order: list[str]) -> Iterator[np.ndarray]:
    """The chunks' copies in file order, each as soon as it is ready."""
    for name in order:
        for fut in chunks[name]:
            yield fut.result()[0]


def _checksum(meta: dict[str, str], entries: dict[str, tuple[str, list[int], int]],
              digests: dict[str, list[bytes]]) -> str:
    """The checksum defined in the module docstring; ``entries`` maps name -> (dtype code, shape, nbytes)
    and ``digests`` name -> the SHA-256 digests of its 4 MiB chunks."""
    h = hashlib.sha256(b"lightgrad.sha256/1\n")
    rest = {k: v for k, v in meta.items() if k != _K_SHA}
    h.update(json.dumps(rest, sort_keys=True, separators=(",", ":")).encode() + b"\n")
    for name in sorted(entries):
        code, shape, nbytes = entries[name]
        h.update(json.dumps([name, code, list(shape), nbytes], separators=(",", ":")).encode() + b"\n")
        for d in digests[name]:
            h.update(d)
    return h.hexdigest()

def _cancel(chunks: dict[str, list[Future[Any]]]) -> None:
    for futs in chunks.values():  # on error, don't keep hashing what won't be written
        for fut in futs:
            fut.cancel()


def _pool() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=min(8, os.cpu_count() or 1), thread_name_prefix="lightgrad-hash")
