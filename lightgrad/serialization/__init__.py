"""Checkpoints: ``save``/``load`` in the safetensors format, verified, written atomically, never pickled.

>>> lightgrad.save({"model": model.state_dict(), "epoch": 3}, "ckpt.safetensors")
>>> lightgrad.load("ckpt.safetensors")["epoch"]
3

File format (version 1). A plain safetensors file: an 8-byte little-endian header length N, N bytes of
JSON header (tensor name -> dtype, shape, data offsets), then the tensor bytes. Tensor names are the
dotted paths to the tensors in the saved object (``model.fc.weight``, ``optim.state.0.exp_avg``), so a
flat state_dict keeps its own keys and ``safetensors.torch.load_file`` hands PyTorch that state_dict.
Everything else lives in the header's ``__metadata__`` (string -> string):

    lightgrad.format          "checkpoint"
    lightgrad.format_version  "1"
    lightgrad.version         the lightgrad version that wrote the file
    lightgrad.structure       the saved object as JSON (encoding below)
    lightgrad.sha256          the checksum (definition below), 64 hex digits

Structure encoding: None, bools, ints, finite floats, strings and lists are themselves; every JSON
object is a tagged node: ``{"tensor": name}`` (plus ``"requires_grad": true`` and ``"parameter": true``
when they apply), ``{"ndarray": name}``, ``{"tuple": [...]}``, ``{"dict": [[key, value], ...]}``
(keys encoded the same way, so int keys stay ints; ``"ordered": true`` for an OrderedDict),
``{"float": "nan" | "inf" | "-inf"}`` and ``{"dtype": "float32"}``. A tensor stored twice in the object
is written twice (identity is not preserved).

Both JSON texts (the header, and the structure inside it) are read strictly, by one reader: UTF-8 only
(no BOM, no UTF-16), nested at most 127 levels deep (what safetensors' parser reads; a dict of the
structure takes three levels, so 42 nested dicts), no key twice in one object, no NaN/Infinity. In
the header, strings must be Unicode (no lone surrogate) and numbers must fit where safetensors puts
them, so a file object (which gets no second opinion from safetensors) is judged as a path is. Anything
else fails as a CheckpointError naming the file and the field.

Checksum: SHA-256 over, in order,
  1. ``b"lightgrad.sha256/1\\n"``;
  2. ``json.dumps(metadata without lightgrad.sha256, sort_keys=True, separators=(",", ":"))`` in
     ASCII, then ``b"\\n"`` (so the structure and versions are covered, not only the tensors);
  3. for each tensor in ``sorted(names)`` order: ``json.dumps([name, dtype, shape, nbytes],
     separators=(",", ":"))`` then ``b"\\n"``, where dtype is the safetensors code ("F32", "BOOL", ...);
     then the 32-byte SHA-256 digest of each consecutive 4 MiB chunk of the tensor's little-endian bytes
     (none for an empty tensor).
The per-chunk digests (a one-level hash list) let several threads hash at once, overlapped with the
file I/O: a single SHA-256 stream runs at ~1 GB/s, slower than reading a cached file. The checksum guards
against corruption (truncation, flipped bits, half-written files), not against a deliberate edit: the
digest sits in the same file, so whoever can edit the file can recompute it.

Files from other tools (e.g. ``safetensors.torch.save_file(model.state_dict(), path)``) carry no
lightgrad metadata: they load as a flat ``{name: Tensor}`` dict sorted by name, with no checksum to check.
BF16 tensors load as lightgrad.bfloat16 (and bfloat16 tensors save as BF16); where the ml_dtypes package
is missing they load as float32 (exactly: bfloat16 is float32's upper half).

Files are written and read with NumPy alone: safetensors' own writer first builds the whole file in
memory (about 3x slower than a raw write in our measurements), and its NumPy reader returns copies that
can't overlap the hashing. The optional ``safetensors`` package (``pip install safetensors``), when
installed, double-checks every file that ``load`` accepts with its reference parser.

Saving copies every tensor a slice at a time and hashes and writes the copy, never the tensor itself:
another thread may change a tensor during the save, and the file must hold exactly the bytes that its
checksum covers. Before the new file is renamed over the old one, it is read back and verified as
``load`` would (after a streamed save, from the disk: the read and the second hash take about as long
as the save itself). A killed save leaves its temporary file (``.<name>.<8 hex digits>.tmp``) behind;
the next save to the same target removes those that no live save holds locked (see ``_LIVE``).

I/O. Checkpoints with 64 MiB of tensors or more are streamed: the pool's threads copy the header and
the tensors into a ring of four 16 MiB page-aligned buffers, one 4 MiB hash chunk per task, hashing each
256 KiB slice right after copying it (while it is in the CPU cache); a writer thread writes each buffer
as soon as it is full. A task waits only for the buffer it fills next to be on disk, so the hashing (the
CPUs' work) and the writing (the disk's) run side by side, never in lockstep. On Linux the buffers go
out with O_DIRECT, straight to the disk: no page-cache copy to compete with the hash for the CPUs, no
writeback left for the fsync, and no page cache evicted for a file that is rarely read back soon; a
load right after such a save reads from the disk. The first blocks, which hold the checksum, go last.
Saving over a file holds it open across the rename and closes it on a background thread once the new
file and its name are on disk: freeing a large file's blocks (discards, on an SSD) can take a third as
long as writing them. Loads read each 4 MiB chunk with ``os.preadv`` on the pool's threads, each slice
hashed as soon as it is read.
"""

from __future__ import annotations

import bisect
import contextlib
import errno
import io
import hashlib
import json
import mmap as _mmap
import os
import re
import secrets
import stat
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import IO, Any

import numpy as np

import lightgrad

from ..device import device
from .atomic import _FREE_THREAD, _close_later, _fsync_dir, _hold, _new_temp, _remove_stale, replace_atomically  # noqa: F401
from .checksum import _bytes_of, _cancel, _checksum, _copies, _copy_chunks, _digests, _pool
from .format import (_CHUNK, _CODE_OF, _MAX_DEPTH, _MAX_HEADER, _SLICE, FORMAT, FORMAT_VERSION, CheckpointError,
                     _check_magic, _depth, _display, _is_path, _json, _K_FORMAT, _K_LIB, _K_SHA, _K_STRUCT, _K_VERSION,
                     _parse_header)
from . import torch_format
from .read import _finish, _read_copies, _views
from .structure import _Decoder, _Flattener, _tensor

__all__ = ["CheckpointError", "save", "load", "verify"]

_STREAM_MIN = 64 << 20  # checkpoints with this much tensor data are written through aligned buffers
_WINDOW = 16 << 20  # bytes per buffer (and per write) when streaming
_RING = 4  # buffers when streaming: some being filled while the others are written
_BLOCK = 4096  # O_DIRECT's alignment of offsets, lengths and memory (any sector size up to 4 KiB)
_O_DIRECT = getattr(os, "O_DIRECT", 0)
_PWRITE = hasattr(os, "pwrite")
_PREADV = hasattr(os, "preadv")
_PLACEHOLDER = "0" * 64  # the checksum's place in the header, filled in once the hash is known


def _safetensors() -> Any:
    """The safetensors package, or None: it is optional (``pip install safetensors``); when present,
    its parser double-checks every file that ``load`` accepts."""
    try:
        import safetensors
    except ImportError:
        return None
    return safetensors


# ---- save -------------------------------------------------------------------------------------

def save(obj: Any, f: str | os.PathLike[str] | IO[bytes], pickle_module: Any = None,
         pickle_protocol: Any = None, _use_new_zipfile_serialization: bool = True) -> None:
    """Save tensors, state dicts and plain values: a verified safetensors checkpoint, or PyTorch's
    zip format for a ``.pt``, ``.pth`` or ``.bin`` name.

    >>> lightgrad.save({"model": model.state_dict(), "optim": opt.state_dict(), "epoch": 3}, "ckpt.pt")

    The format follows the name: a path (or a file object whose ``name``) ending in ``.pt``, ``.pth`` or
    ``.bin`` gets ``torch.save``'s zip format (which ``torch.load(f, weights_only=True)`` reads, and
    lightgrad.load; see lightgrad.serialization.torch_format), with a SHA-256 record that lightgrad checks
    and PyTorch ignores; any other name gets safetensors. A whole ``nn.Module`` (or any other object
    beyond tensors, numbers, strings and containers) is pickled, as PyTorch does, into the zip format
    only: it loads with ``load(f, weights_only=False)``, for a file you trust. Safetensors files are never
    pickles, so saving such an object under another name raises TypeError, except to a file object
    without a name (a BytesIO), which then gets the zip format, as ``torch.save`` writes.

    A path is written atomically: to a temporary file in the same folder, flushed, fsynced and read back
    to verify it, then renamed over the target, so an error or crash mid-save leaves the previous file
    intact (the temporary files that crashed saves left behind are removed by the next save). The
    pickle arguments exist for PyTorch compatibility and are ignored (the pickle is always
    protocol 2, torch.save's default); ``_use_new_zipfile_serialization=False`` writes PyTorch's legacy
    format, as torch.save does (state only, and without the checksum, which that format has no place for).
    """
    if _torch_name(f) or not _use_new_zipfile_serialization:
        torch_format.save(obj, f, legacy=not _use_new_zipfile_serialization)
        return
    if not _is_path(f) and getattr(f, "name", None) is None:
        try:
            _Flattener().encode(obj, [])
        except TypeError:  # not safetensors material: torch.save's format, as torch would write
            torch_format.save(obj, f)
            return
    flat = _Flattener()
    structure = flat.encode(obj, [])  # raises before anything is written
    arrays = flat.arrays
    text = json.dumps(structure, separators=(",", ":"), allow_nan=False)
    depth = _depth(text)
    if depth > _MAX_DEPTH:  # load refuses deeper structures: never write a file that doesn't load
        raise ValueError(f"can't save an object whose structure nests {depth} levels of JSON deep: a checkpoint's "
                         f"structure nests at most {_MAX_DEPTH} levels of JSON (a dict takes 3, a tuple 2, a list 1)")
    meta = {_K_FORMAT: FORMAT, _K_VERSION: str(FORMAT_VERSION), _K_LIB: _lib_version(), _K_STRUCT: text}
    entries = {n: (_CODE_OF[np.dtype(a.dtype.name)], list(a.shape), a.nbytes) for n, a in arrays.items()}
    with _pool() as pool:
        if isinstance(f, str | os.PathLike):
            _save_atomic(arrays, meta, entries, pool, os.fspath(f))
            return
        chunks = _copy_chunks(pool, arrays)
        try:
            # a stream may not seek back to patch the header, so the hash comes first here, and with it
            # a copy of every tensor: the bytes hashed are the bytes written, whatever other threads do
            # to the tensors meanwhile (this holds the whole checkpoint in memory twice)
            meta[_K_SHA] = _checksum(meta, entries, _digests(chunks))
            header, order, _ = _header(meta, arrays, entries)
            _write_file(f, header, _copies(chunks, order))
        finally:
            _cancel(chunks)



def _torch_name(f: Any) -> bool:
    name = os.fspath(f) if _is_path(f) else getattr(f, "name", None)
    return isinstance(name, str) and name.lower().endswith(torch_format.SUFFIXES)


def _lib_version() -> str:
    return lightgrad.__version__  # (read when saving: the package may still be loading when this module is)


def _header(meta: dict[str, str], arrays: dict[str, np.ndarray],
            entries: dict[str, tuple[str, list[int], int]]) -> tuple[bytes, list[str], int]:
    """The 8-byte length and the JSON header, the tensors' order in the file, and where in the
    returned bytes the checksum's 64 hex digits start.

    Tensors are laid out by falling item size, then name (as safetensors' own writer does): with the
    header padded to a multiple of 8 bytes, every tensor is aligned for its dtype in a memory map."""
    order = sorted(arrays, key=lambda n: (-arrays[n].itemsize, n))
    header: dict[str, Any] = {"__metadata__": meta}
    pos = 0
    for n in order:
        code, shape, nbytes = entries[n]
        header[n] = {"dtype": code, "shape": shape, "data_offsets": [pos, pos + nbytes]}
        pos += nbytes
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    needle = f'"{_K_SHA}":"{meta[_K_SHA]}"'.encode()
    at = text.find(needle)  # unique: metadata values are JSON strings, where every " is escaped
    return len(text).to_bytes(8, "little") + text, order, 8 + at + len(needle) - 65


def _write_file(fh: IO[bytes], header: bytes, parts: Iterable[np.ndarray]) -> None:
    """Write the header, then each part (a seam: tests fail it midway)."""
    fh.write(header)
    for a in parts:
        if a.size:
            fh.write(_bytes_of(a))


def _save_atomic(arrays: dict[str, np.ndarray], meta: dict[str, str],
                 entries: dict[str, tuple[str, list[int], int]], pool: ThreadPoolExecutor, target: str) -> None:
    replace_atomically(target, lambda fd: _write_temp(fd, arrays, meta, entries, pool),
                       lambda tmp: _verify_written(tmp, os.path.realpath(target)))


def _write_temp(fd: int, arrays: dict[str, np.ndarray], meta: dict[str, str],
                entries: dict[str, tuple[str, list[int], int]], pool: ThreadPoolExecutor) -> None:
    """Write the checkpoint to ``fd`` (the temporary file) and fsync it."""
    header, order, at = _header(dict(meta, **{_K_SHA: _PLACEHOLDER}), arrays, entries)
    if _PWRITE and sum(a.nbytes for a in arrays.values()) >= _STREAM_MIN:
        _write_streamed(fd, header, [(n, arrays[n]) for n in order], at, pool,
                        lambda digests: _checksum(meta, entries, digests))
    else:
        chunks = _copy_chunks(pool, arrays)
        try:
            with open(fd, "wb", closefd=False) as fh:
                # each copy is written as soon as it is hashed; the checksum is patched in last
                _write_file(fh, header, _copies(chunks, order))
                digest = _checksum(meta, entries, _digests(chunks))
                fh.seek(at)
                fh.write(digest.encode())
        finally:
            _cancel(chunks)
    os.fsync(fd)


def _verify_written(tmp: str, target: str) -> None:
    """Read the temporary file back as ``load`` would, before it replaces anything: a save that returns
    has left a file that loads. (The copy-then-hash above makes this hold by construction; the read-back
    guards the construction, and costs a read of a file still in the page cache, or of the disk after
    O_DIRECT writes.)"""
    try:
        _read(tmp, "verify")
    except CheckpointError as e:
        raise CheckpointError(f"save to {target!r} failed, the previous file is unchanged: the file written "
                              f"does not verify ({e})") from None


def _write_streamed(fd: int, header: bytes, named: list[tuple[str, np.ndarray]], at: int,
                    pool: ThreadPoolExecutor, seal: Callable[[dict[str, list[bytes]]], str]) -> None:
    """Write the header and the arrays through a ring of aligned buffers: the pool's threads copy and
    hash the data into them, one 4 MiB chunk per task, while a writer thread writes each buffer as soon
    as it is full. Nothing waits in lockstep: a task waits only for the buffer it is about to fill to be
    on disk, so the hashing (the CPUs' work) and the writing (the disk's) both run without a break.
    ``seal`` turns the arrays' chunk digests into the checksum, which goes into the file's first blocks,
    written last.

    Where the file system allows it (Linux), the buffers are written with O_DIRECT: straight to the
    disk, without the page-cache copy (CPU time that the hash needs) and without leaving the whole
    file's writeback to the final fsync."""
    direct = [_set_direct(fd, True)]
    hashes = [[hashlib.sha256() for _ in range(0, a.nbytes, _CHUNK)] for _, a in named]
    # (bytes, file offset, hash): the header, then each array's 4 MiB chunks, in file order
    head = np.frombuffer(header, np.uint8)
    parts: list[tuple[np.ndarray, int, Any]] = [(head[i:i + _CHUNK], i, None) for i in range(0, head.size, _CHUNK)]
    pos = head.size
    for (_, a), hs in zip(named, hashes):
        b = a.reshape(-1).view(np.uint8)
        parts += [(b[i * _CHUNK:(i + 1) * _CHUNK], pos + i * _CHUNK, h) for i, h in enumerate(hs)]
        pos += b.size
    first = min(pos, -(-(at + 64) // _BLOCK) * _BLOCK)  # the blocks up to the checksum's end
    tasks: list[Future[None]] = []
    with ThreadPoolExecutor(1, thread_name_prefix="lightgrad-write") as writer:
        ring = _Ring(fd, first, pos, writer, direct)
        try:
            task: list[tuple[int, np.ndarray, np.ndarray, Any]] = []
            size = 0
            for src, off, h in parts:  # small consecutive parts (the header, small tensors) share a task
                task += ring.pieces(src, off, h)
                size += src.size
                if size >= _CHUNK:
                    tasks.append(pool.submit(_copy_and_hash, task, ring))
                    task, size = [], 0
            if task:
                tasks.append(pool.submit(_copy_and_hash, task, ring))
            for t in tasks:
                t.result()
            for w in ring.writes:  # complete now: the task that filled a window queued its write
                w.result()
        except BaseException as e:
            ring.fail(e)  # wakes the tasks waiting for a buffer, and stops the queued writes
            for t in tasks:
                t.cancel()
            err = ring.failed
            if err is None or err is e:
                raise
            raise err from None  # the first error (say a failed write), not a task that it stopped
    digest = seal({name: [h.digest() for h in hs] for (name, _), hs in zip(named, hashes)})
    ring.head[at:at + 64] = np.frombuffer(digest.encode(), np.uint8)
    _write_window(fd, ring.head, first, 0, direct)
    if pos % _BLOCK:
        os.ftruncate(fd, pos)  # direct writes were rounded up to whole blocks


class _Stopped(Exception):
    """Raised in a copy task when the save has already failed elsewhere."""


class _Ring:
    """The streamed writer's buffers. Window 0 holds the file's first ``first`` bytes (the header up to
    the checksum's place) and is written last, by the caller. The windows k >= 1 follow it: the first
    few smaller (an eighth, a quarter, a half of _WINDOW bytes), so that the disk starts sooner, then
    _WINDOW bytes each. Window k goes in buffer (k-1) % _RING, free again once window k - _RING is on
    disk. Each window counts the pieces still to be copied into it; the task that copies its last piece
    queues its write."""

    def __init__(self, fd: int, first: int, total: int, writer: ThreadPoolExecutor, direct: list[bool]) -> None:
        self.fd, self.first, self.total, self.writer, self.direct = fd, first, total, writer, direct
        self.starts = [0, first]  # where each window starts in the file, then the file's end
        for k in range(3, 0, -1):
            if self.starts[-1] < total:
                self.starts.append(self.starts[-1] + max(_BLOCK, (_WINDOW >> k) // _BLOCK * _BLOCK))
        self.starts += range(self.starts[-1] + _WINDOW, total, _WINDOW)
        self.starts = [min(x, total) for x in self.starts]
        if self.starts[-1] < total:
            self.starts.append(total)
        self.n = len(self.starts) - 1  # windows, 0 included
        self.slots = min(_RING, self.n - 1)
        self.head = _aligned(-(-first // _BLOCK) * _BLOCK)
        self.bufs = [_aligned(_WINDOW) for _ in range(self.slots)]
        self.left = [0] * self.n
        self.written = [threading.Event() for _ in range(self.n)]
        self.writes: list[Future[None]] = []
        self.lock = threading.Lock()
        self.failed: BaseException | None = None

    def _bounds(self, k: int) -> tuple[int, int]:
        return self.starts[k], self.starts[k + 1]

    def _buf(self, k: int) -> np.ndarray:
        return self.head if k == 0 else self.bufs[(k - 1) % self.slots]

    def pieces(self, src: np.ndarray, off: int, h: Any) -> list[tuple[int, np.ndarray, np.ndarray, Any]]:
        """``src`` (the file's bytes from ``off``) cut at window ends: (window, buffer view, bytes, hash)."""
        out = []
        x, end = off, off + src.size
        k = bisect.bisect_right(self.starts, x) - 1
        while x < end:
            lo, hi = self._bounds(k)
            y = min(end, hi)
            out.append((k, self._buf(k)[x - lo:y - lo], src[x - off:y - off], h))
            self.left[k] += 1
            x, k = y, k + 1
        return out

    def claim(self, k: int) -> None:
        """Wait until window ``k``'s buffer is free (the window that used it before is on disk)."""
        if k > self.slots:
            self.written[k - self.slots].wait()
        if self.failed is not None:
            raise _Stopped

    def filled(self, k: int) -> None:
        with self.lock:  # under the lock that ``fail`` takes: no write is queued once the save has failed
            self.left[k] -= 1
            if k and not self.left[k] and self.failed is None:
                self.writes.append(self.writer.submit(self._write, k))

    def _write(self, k: int) -> None:
        try:
            if self.failed is None:
                lo, hi = self._bounds(k)
                _write_window(self.fd, self._buf(k), hi - lo, lo, self.direct)
        except BaseException as e:
            self.fail(e)
            raise
        finally:
            self.written[k].set()

    def fail(self, e: BaseException) -> None:
        with self.lock:
            if self.failed is None:
                self.failed = e
        for ev in self.written:
            ev.set()


def _copy_and_hash(pieces: list[tuple[int, np.ndarray, np.ndarray, Any]], ring: _Ring) -> None:
    """Copy each piece's bytes into its window's buffer and feed them to its hash, a slice at a time:
    the hash then reads bytes that the copy just brought into the CPU cache (here 1.25 GB/s a core for
    copy and hash together, against 1.05 GB/s for the hash alone from memory)."""
    try:
        for k, dst, src, h in pieces:
            ring.claim(k)
            for i in range(0, src.size, _SLICE):
                d = dst[i:i + _SLICE]
                d[:] = src[i:i + d.size]  # NumPy and hashlib both release the GIL on buffers this large
                if h is not None:
                    h.update(d)  # the buffer that is written, not the tensor, which may change meanwhile
            ring.filled(k)
    except _Stopped:
        raise
    except BaseException as e:
        ring.fail(e)
        raise


def _aligned(n: int) -> np.ndarray:
    """``n`` uninitialised bytes at a page boundary (as O_DIRECT needs)."""
    raw = np.empty(n + _BLOCK, np.uint8)
    skip = -raw.ctypes.data % _BLOCK
    return raw[skip:skip + n]


def _set_direct(fd: int, on: bool) -> bool:
    """Turn O_DIRECT on or off for ``fd``; returns whether it is on (never where the OS or the file
    system has no direct I/O: tmpfs, macOS, Windows)."""
    if not _O_DIRECT:
        return False
    import fcntl
    try:
        flags = fcntl.fcntl(fd, fcntl.F_GETFL)
        fcntl.fcntl(fd, fcntl.F_SETFL, flags | _O_DIRECT if on else flags & ~_O_DIRECT)
    except OSError:
        return False
    return on


def _write_window(fd: int, buf: np.ndarray, n: int, offset: int, direct: list[bool]) -> None:
    """Write ``buf[:n]`` at ``offset``; with O_DIRECT rounded up to whole blocks (the caller truncates)."""
    if direct[0]:
        try:
            _pwrite_all(fd, buf[:n + -n % _BLOCK], offset)
            return
        except OSError as e:
            if e.errno != errno.EINVAL:
                raise
            # O_DIRECT accepted, but not at this alignment: carry on through the page cache
            direct[0] = _set_direct(fd, False)
    _pwrite_all(fd, buf[:n], offset)


def _pwrite_all(fd: int, buf: np.ndarray, offset: int) -> None:
    """Write all of ``buf`` at ``offset`` (a seam: tests fail it midway)."""
    view = buf.data
    while view:
        n = os.pwrite(fd, view, offset)
        view, offset = view[n:], offset + n


# ---- load -------------------------------------------------------------------------------------

def load(f: str | os.PathLike[str] | IO[bytes], map_location: Any = None, pickle_module: Any = None, *,
         weights_only: bool | None = None, mmap: bool | None = None, **pickle_load_args: Any) -> Any:
    """Load a checkpoint: what ``save`` wrote, any safetensors file, or any ``torch.save`` file.

    >>> model.load_state_dict(lightgrad.load("pytorch_model.bin"))

    The format is read from the file's first bytes. PyTorch's files (the zip format and the legacy
    one) load as ``torch.load(weights_only=True)`` loads them, and by default (``weights_only=None``,
    True since PyTorch 2.6) without running code from the file: only tensors, Parameters, dtypes,
    sizes and plain containers are admitted (lightgrad.serialization.unpickler), and any other
    pickle, such as a whole pickled Module, is refused with PyTorch's message. ``weights_only=False``
    unpickles anything, for a file you trust. Views that shared a storage share memory again.

    ``mmap=True`` maps the tensors copy-on-write instead of reading them (zero-copy: a PyTorch zip's
    records are 64-byte aligned); for PyTorch's formats only with a path and the zip format, as in
    PyTorch. Everything loads on the CPU: ``map_location`` is applied as PyTorch applies it (a device
    or string, a dict of locations, or a callable ``(storage, location)``) and must end on the CPU.
    Safetensors files are never pickles, so ``weights_only`` is moot for them. A corrupted or refused
    file raises ``CheckpointError`` (a ValueError) naming the file and the problem.
    """
    if map_location is not None and not (callable(map_location) or isinstance(map_location, dict)):
        device(map_location)  # raises for a device lightgrad doesn't have, as PyTorch does
    if weights_only is None:
        weights_only = True
    if weights_only and pickle_module is not None:
        raise RuntimeError("Can not safely load weights when explicit pickle_module is specified")
    unknown = sorted(set(pickle_load_args) - {"encoding"})
    if unknown:
        raise TypeError(f"load() got unexpected keyword arguments {unknown}")
    name = _display(f)
    data = None
    if isinstance(f, str | os.PathLike):
        with open(f, "rb") as fh:
            head = fh.read(16)
    else:
        got = f.read()
        if not isinstance(got, bytes | bytearray):
            raise TypeError(f"expected a binary file object, but read() returned {type(got).__name__}")
        data, head = bytes(got), bytes(got[:16])
    if torch_format.kind(head) is not None:
        return torch_format.load(f, name, data, map_location, bool(weights_only), bool(mmap))
    if data is not None:  # the bytes already read, under the file object's name (for messages)
        buf: Any = io.BytesIO(data)
        shown = getattr(f, "name", None)
        if shown:
            buf.name = shown
        f = buf
    meta, arrays, name = _read(f, "map" if mmap else "copy")
    if _K_FORMAT not in meta:
        return {n: _tensor(arrays[n]) for n in sorted(arrays)}
    structure = _json(meta[_K_STRUCT], f"the structure metadata ({_K_STRUCT})",
                      lambda what: CheckpointError(f"checkpoint {name}: {what}"), header=False)
    dec = _Decoder(arrays, name)
    obj = dec.decode(structure)
    unused = sorted(set(arrays) - dec.used)
    if unused:
        raise CheckpointError(f"checkpoint {name}: tensors {unused[:5]} are in the file but not in its structure")
    return obj


def verify(f: str | os.PathLike[str] | IO[bytes]) -> dict[str, Any]:
    """Check a checkpoint's header, version and checksum without loading it; returns a summary.

    >>> lightgrad.serialization.verify("ckpt.safetensors")["checksum_verified"]
    True
    """
    meta, arrays, _ = _read(f, "verify")
    return {"format_version": int(meta[_K_VERSION]) if _K_FORMAT in meta else None,
            "lightgrad_version": meta.get(_K_LIB),
            "checksum_verified": _K_FORMAT in meta,
            "tensors": {n: (str(a.dtype), tuple(a.shape)) for n, a in sorted(arrays.items())}}


def _read(f: Any, mode: str) -> tuple[dict[str, str], dict[str, np.ndarray], str]:
    """Open, validate and checksum a file. ``mode``: "copy" (arrays own their memory), "map" (arrays
    are copy-on-write views of a memory map) or "verify" (views, only for checking)."""
    name = _display(f)
    if not _is_path(f):
        buf = f.read()
        if not isinstance(buf, bytes | bytearray):
            raise TypeError(f"expected a binary file object, but read() returned {type(buf).__name__}")
        _check_magic(bytes(buf[:8]), len(buf), name)
        entries, meta, start = _parse_header(buf, len(buf), name)
        return _finish(meta, entries, _views(buf, entries, start), mode, name)
    with open(f, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        head = fh.read(8)
        _check_magic(head, size, name)
        n = int.from_bytes(head, "little")
        # the header alone (the checks in _parse_header come before it is used)
        entries, meta, start = _parse_header(head + fh.read(min(n, _MAX_HEADER)), size, name)
        st = _safetensors()
        if st is not None:
            # a second opinion from the reference parser: whatever we accept, safetensors accepts
            try:
                with st.safe_open(os.fspath(f), framework="numpy") as sf:
                    sf.keys()
            except Exception as e:  # noqa: BLE001 (its exception types vary between versions)
                raise CheckpointError(f"checkpoint {name} is not a valid safetensors file ({e})") from None
        if mode == "copy" and _PREADV:
            return _read_copies(fh.fileno(), meta, entries, start, name)
        access = _mmap.ACCESS_COPY if mode == "map" else _mmap.ACCESS_READ
        mm = _mmap.mmap(fh.fileno(), 0, access=access)
    try:
        return _finish(meta, entries, _views(mm, entries, start), mode, name)
    finally:
        if mode == "copy":
            with contextlib.suppress(BufferError):  # views still alive (an exception's traceback)
                mm.close()
