"""PyTorch's checkpoint files (``torch.save``'s ``.pt``/``.pth``/``.bin``), read and written without
running code from them.

The zip format (PyTorch 1.6+): an uncompressed zip whose records sit in one folder (the file's stem,
``archive`` for a file object): ``data.pkl`` (the pickle, see lightgrad.serialization.pickler),
``data/<key>`` (one record of raw little-endian bytes per storage), ``byteorder``, ``version``,
``.format_version``, ``.storage_alignment`` and ``.data/serialization_id``. Every record's bytes start
at a multiple of 64 in the file (an ``FB`` extra field pads the local header), which lets a memory
map hand out aligned arrays. The legacy format (``_use_new_zipfile_serialization=False``): five
pickles in a row (a magic number, a protocol version, system info, the object, the storage keys),
then each storage as an 8-byte element count and its bytes.

Integrity: lightgrad adds the record ``.lightgrad/sha256`` (PyTorch ignores it): 64 hex digits of a
SHA-256 over ``b"lightgrad.pt.sha256/1\\n"`` and then, for each other record in sorted order of its
name inside the folder, ``json.dumps([name, size])``, ``b"\\n"`` and the 32-byte SHA-256 digests of
its consecutive 4 MiB chunks. ``load`` checks it when present, and otherwise each record's CRC-32 (that
torch.save writes too); legacy files have neither.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import mmap as _mmap
import os
import pickle
import secrets
import struct
import zipfile
import zlib
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import IO, Any

import numpy as np

from .atomic import replace_atomically
from .checksum import _copy_and_digest, _hash_chunks, _pool, _results
from .format import _CHUNK, CheckpointError
from .pickler import pickle_object
from .unpickler import (FullUnpickler, Refused, Storage, WeightsUnpickler, as_array, lightgrad_dtype,
                        rebuild_parameter, restore_location, storage_id, storage_nbytes, strided,
                        weights_only_message, _tensor)

SUFFIXES = (".pt", ".pth", ".bin")
MAGIC = 0x1950A86A20F9469CFC6C  # the legacy format's first pickle
PROTOCOL_VERSION = 1001
ALIGN = 64  # where every record's data starts, as torch.save aligns them
SUM = ".lightgrad/sha256"
_SUM_TAG = b"lightgrad.pt.sha256/1\n"
_ZIP64_LIMIT = 0xFFFFFFFF  # sizes and offsets from here on go in zip64 fields (a seam: tests lower it)
_IN_FLIGHT = 16  # 4 MiB chunks copied ahead of the writer: bounds the memory a save holds twice


def kind(head: bytes) -> str | None:
    """"zip" or "pickle" for PyTorch's formats (judged from a file's first bytes), else None."""
    if head[:4] in (b"PK\x03\x04", b"PK\x05\x06"):
        return "zip"
    if head[4:8] == b"\0\0\0\0" and head[8:9] == b"{":
        return None  # a safetensors file: a header length (under 100 MB), then the JSON header's "{"
    if head[:1] == b"\x80" and head[1:2] in (b"\x00", b"\x01", b"\x02", b"\x03", b"\x04", b"\x05"):
        return "pickle"
    # protocol 0 and 1 pickles start with an opcode
    if len(head) >= 8 and head[4:8] != b"\0\0\0\0" and head[:1] in b"(c]})NILFSVXKJMUTGi":
        return "pickle"
    return None


# ---- save -------------------------------------------------------------------------------------

def save(obj: Any, f: str | os.PathLike[str] | IO[bytes], legacy: bool = False) -> None:
    """Write ``obj`` in PyTorch's zip format (or its legacy format, which holds state only; see the
    module docstring); atomically to a path."""
    data, arrays, numels = pickle_object(obj, legacy)

    def out(write: Callable[[Any], Any], prefix: str) -> None:
        if legacy:
            assert numels is not None
            _write_legacy(write, data, arrays, numels)
        else:
            _write_zip(write, prefix, data, arrays)

    if isinstance(f, str | os.PathLike):
        path = os.fspath(f)
        prefix = os.path.splitext(os.path.basename(path))[0] or "archive"

        def write(fd: int) -> None:
            with open(fd, "wb", closefd=False) as fh:
                out(fh.write, prefix)
            os.fsync(fd)

        replace_atomically(path, write, lambda tmp: _verify_written(tmp, os.path.realpath(path), legacy))
        return
    out(f.write, "archive")


def _write_legacy(write: Callable[[Any], Any], data: bytes, arrays: dict[str, np.ndarray],
                  numels: dict[str, int]) -> None:
    """torch.save(..., _use_new_zipfile_serialization=False)'s layout: five pickles, then each storage
    as its element count (8 bytes, little-endian) and its bytes."""
    info = {"protocol_version": PROTOCOL_VERSION, "little_endian": True, "type_sizes": {"short": 2, "int": 4, "long": 4}}
    keys = sorted(arrays, key=int)
    for head in (pickle.dumps(MAGIC, protocol=2), pickle.dumps(PROTOCOL_VERSION, protocol=2),
                 pickle.dumps(info, protocol=2), data, pickle.dumps(keys, protocol=2)):
        write(head)
    for key in keys:
        write(numels[key].to_bytes(8, "little"))
        if arrays[key].size:
            write(arrays[key].copy().data)  # (a snapshot, as the zip writer writes)


def _verify_written(tmp: str, target: str, legacy: bool = False) -> None:
    try:
        if legacy:  # (no checksum in this format: the file is read back whole)
            with open(tmp, "rb") as fh:
                _load_legacy(fh.read(), repr(target), None, True)
            return
        with _Archive(tmp, "verify") as z:
            z.check()
    except CheckpointError as e:
        raise CheckpointError(f"save to {target!r} failed, the previous file is unchanged: the file written "
                              f"does not verify ({e})") from None


def _snapshots(pool: ThreadPoolExecutor, raw: np.ndarray) -> Iterator[tuple[np.ndarray, bytes]]:
    """Copies of ``raw``'s consecutive 4 MiB chunks and their SHA-256 digests, in order, copied and
    hashed on the pool a few chunks ahead: the bytes written are the bytes hashed, whatever another
    thread does to the tensor meanwhile."""
    buf = raw.data
    starts = list(range(0, raw.size, _CHUNK))
    futs: list[Future[tuple[np.ndarray, bytes]]] = []
    try:
        for i, s in enumerate(starts):
            futs.append(pool.submit(_copy_and_digest, buf[s:s + _CHUNK]))
            if i >= _IN_FLIGHT:
                yield futs[i - _IN_FLIGHT].result()
                futs[i - _IN_FLIGHT] = None  # type: ignore[call-overload]  # (frees the copy)
        for fut in futs[max(0, len(starts) - _IN_FLIGHT):]:
            yield fut.result()
    finally:
        for fut in futs:
            if fut is not None:
                fut.cancel()


def _write_zip(write: Callable[[Any], Any], prefix: str, data: bytes, arrays: dict[str, np.ndarray]) -> None:
    """Write the archive as torch.save lays it out, each record's data 64-byte aligned and followed
    by a data descriptor (CRC-32 and sizes), the checksum record last."""
    z = _ZipWriter(write)
    digests: dict[str, tuple[int, list[bytes]]] = {}

    def small(name: str, content: bytes) -> None:
        z.record(f"{prefix}/{name}", [content], len(content))
        digests[name] = (len(content), [hashlib.sha256(content[i:i + _CHUNK]).digest()
                                        for i in range(0, len(content), _CHUNK)])

    small("data.pkl", data)
    small(".format_version", b"1")
    small(".storage_alignment", str(ALIGN).encode())
    small("byteorder", b"little")
    with _pool() as pool:
        for key in sorted(arrays, key=int):
            raw = arrays[key]
            got: list[bytes] = []

            def parts(raw: np.ndarray = raw, got: list[bytes] = got) -> Iterator[Any]:
                for copy, digest in _snapshots(pool, raw):
                    got.append(digest)
                    yield copy

            z.record(f"{prefix}/data/{key}", parts(), raw.size)
            digests[f"data/{key}"] = (raw.size, got)
    small("version", b"3\n")
    small(".data/serialization_id", "".join(secrets.choice("0123456789") for _ in range(40)).encode())
    z.record(f"{prefix}/{SUM}", [_checksum(digests).encode()], 64)
    z.finish()


def _checksum(digests: dict[str, tuple[int, list[bytes]]]) -> str:
    h = hashlib.sha256(_SUM_TAG)
    for name in sorted(digests):
        size, ds = digests[name]
        h.update(json.dumps([name, size], separators=(",", ":")).encode() + b"\n")
        for d in ds:
            h.update(d)
    return h.hexdigest()


class _ZipWriter:
    """A zip of stored (uncompressed) records, written front to back: local header (padded so the
    data starts at a multiple of 64), data, data descriptor; then the central directory."""

    def __init__(self, write: Callable[[Any], Any]) -> None:
        self.write, self.pos = write, 0
        self.entries: list[tuple[bytes, int, int, int]] = []  # name, CRC-32, size, local header offset

    def _out(self, b: Any) -> None:
        self.write(b)
        self.pos += len(b) if isinstance(b, bytes) else b.nbytes

    def record(self, name: str, parts: Any, size: int) -> None:
        nb = name.encode("utf-8")
        offset = self.pos
        big = size >= _ZIP64_LIMIT or offset >= _ZIP64_LIMIT
        extra = struct.pack("<HHQQ", 1, 16, 0, 0) if big else b""
        fixed = 30 + len(nb) + len(extra) + 4
        pad = -(offset + fixed) % ALIGN
        extra += b"FB" + struct.pack("<H", pad) + b"\0" * pad
        # flags: sizes and CRC follow the data (bit 3), names are UTF-8 (bit 11), as torch.save writes
        self._out(struct.pack("<IHHHHHIIIHH", 0x04034B50, 45 if big else 20, 0x0808, 0, 0, 0x21, 0,
                              0xFFFFFFFF if big else 0, 0xFFFFFFFF if big else 0, len(nb), len(extra)) + nb + extra)
        crc, n = 0, 0
        for p in parts:
            if len(p):
                crc = zlib.crc32(p, crc)
                self._out(p)
                n += len(p)
        if n != size:
            raise RuntimeError(f"record {name!r}: wrote {n} bytes, expected {size}")
        self._out(struct.pack("<IIQQ", 0x08074B50, crc, size, size) if big
                  else struct.pack("<IIII", 0x08074B50, crc, size, size))
        self.entries.append((nb, crc, size, offset))

    def finish(self) -> None:
        start = self.pos
        for nb, crc, size, offset in self.entries:
            fields = [v for v in (size, size, offset) if v >= _ZIP64_LIMIT]
            extra = struct.pack("<HH", 1, 8 * len(fields)) + struct.pack(f"<{len(fields)}Q", *fields) if fields else b""
            cap = [min(v, 0xFFFFFFFF) if v < _ZIP64_LIMIT else 0xFFFFFFFF for v in (size, size, offset)]
            ver = 45 if fields else 20
            self._out(struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, ver, ver, 0x0808, 0, 0, 0x21, crc, cap[0], cap[1],
                                  len(nb), len(extra), 0, 0, 0, 0, cap[2]) + nb + extra)
        size_cd, n = self.pos - start, len(self.entries)
        if n >= 0xFFFF or start >= _ZIP64_LIMIT or size_cd >= _ZIP64_LIMIT:
            at = self.pos
            self._out(struct.pack("<IQHHIIQQQQ", 0x06064B50, 44, 45, 45, 0, 0, n, n, size_cd, start))
            self._out(struct.pack("<IIQI", 0x07064B50, 0, at, 1))
            self._out(struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, 0xFFFF, 0xFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0))
        else:
            self._out(struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, n, n, size_cd, start, 0))


# ---- load -------------------------------------------------------------------------------------

class _Archive:
    """A zip checkpoint opened for reading: its records (name inside the folder -> data offset, size,
    CRC, ZipInfo) over a memory map of the file ("map": copy-on-write, "copy"/"verify": read-only) or
    over the bytes of a file object."""

    def __init__(self, f: Any, mode: str, data: bytes | None = None, name: str | None = None) -> None:
        self.name = name or repr(os.fspath(f))
        self.mode = mode
        self.mm: Any = None
        if data is None:
            with open(f, "rb") as fh:
                size = os.fstat(fh.fileno()).st_size
                if size == 0:
                    raise CheckpointError(f"checkpoint {self.name} is empty")
                access = _mmap.ACCESS_COPY if mode == "map" else _mmap.ACCESS_READ
                self.mm = _mmap.mmap(fh.fileno(), 0, access=access)
            self.buf: Any = self.mm
        else:
            self.buf = data
        try:
            self.zf = zipfile.ZipFile(io.BytesIO(self.buf) if data is not None else _MapFile(self.mm))
            self._index()
        except zipfile.BadZipFile as e:
            self.close()
            raise CheckpointError(f"checkpoint {self.name} is not a valid zip archive (truncated or corrupted: "
                                  f"{e})") from None
        except BaseException:
            self.close()
            raise

    def __enter__(self) -> _Archive:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self.mm is not None:
            with contextlib.suppress(BufferError):  # views still alive (the tensors of a mapped load)
                self.mm.close()

    def _bad(self, what: str) -> CheckpointError:
        return CheckpointError(f"checkpoint {self.name}: {what}")

    def _index(self) -> None:
        infos = self.zf.infolist()
        pkl = [i.filename for i in infos if i.filename.endswith("/data.pkl") and i.filename.count("/") == 1]
        if not pkl:
            if any(i.filename.endswith("constants.pkl") for i in infos):
                raise self._bad("is a TorchScript archive (torch.jit.save), which lightgrad can't run")
            raise self._bad("record 'data.pkl' is missing (not a torch.save archive, or truncated)")
        if len(pkl) > 1:
            raise self._bad(f"has several archives in one file ({pkl[:3]})")
        self.prefix = pkl[0][:-len("data.pkl")]
        if any(i.filename.startswith(self.prefix + "code/") for i in infos):
            raise self._bad("is a TorchScript archive (torch.jit.save), which lightgrad can't run")
        self.records: dict[str, tuple[int, int, int, zipfile.ZipInfo]] = {}
        size = len(self.buf)
        for info in infos:
            if not info.filename.startswith(self.prefix):
                raise self._bad(f"record {info.filename!r} lies outside the archive's folder {self.prefix!r}")
            rel = info.filename[len(self.prefix):]
            if rel in self.records:
                raise self._bad(f"record {rel!r} appears twice")
            if info.flag_bits & 1:
                raise self._bad(f"record {rel!r} is encrypted")
            off = info.header_offset
            if off + 30 > size:
                raise self._bad(f"record {rel!r} is truncated (its header lies past the end of the file)")
            sig, n, e = struct.unpack_from("<I", self.buf, off)[0], *struct.unpack_from("<HH", self.buf, off + 26)
            if sig != 0x04034B50:
                raise self._bad(f"record {rel!r} has a corrupted local header")
            start = off + 30 + n + e
            if start + info.compress_size > size:
                raise self._bad(f"record {rel!r} is truncated: it needs {info.compress_size} bytes from byte "
                                f"{start}, but the file has {size}")
            self.records[rel] = (start, info.file_size, info.CRC, info)
        bo = self.records.get("byteorder")
        self.big = False
        if bo is not None:
            order = bytes(self.raw("byteorder"))
            if order not in (b"little", b"big"):
                raise self._bad(f"record 'byteorder' says {order[:20]!r}: Unknown endianness type "
                                "(expected 'little' or 'big')")
            self.big = order == b"big"

    def raw(self, rel: str) -> np.ndarray:
        """A record's bytes, as a uint8 array (a view of the map or the bytes where stored plainly)."""
        start, size, _, info = self.records[rel]
        if info.compress_type == zipfile.ZIP_STORED:
            return np.frombuffer(self.buf, np.uint8, size, start)
        try:
            return np.frombuffer(self.zf.read(info), np.uint8)
        except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError) as e:
            raise self._bad(f"record {rel!r} can't be decompressed ({e})") from None

    def start_check(self, pool: ThreadPoolExecutor) -> Callable[[], None]:
        """Start checking the records' integrity on the pool (the checksum record, else CRC-32s);
        returns the function that waits for the result and raises on a mismatch."""
        if SUM in self.records:
            want = bytes(self.raw(SUM))
            if len(want) != 64 or not all(c in b"0123456789abcdef" for c in want):
                raise self._bad(f"record {SUM!r} is corrupted (expected 64 hex digits)")
            names = sorted(r for r in self.records if r != SUM)
            chunks = _hash_chunks(pool, {r: self.raw(r) for r in names})

            def check_sum() -> None:
                got = _checksum({r: (self.records[r][1], ds) for r, ds in _results(chunks).items()})
                if got != want.decode():
                    raise self._bad(f"is corrupted: checksum mismatch (record {SUM!r} says {want[:16].decode()}..., "
                                    f"the records hash to {got[:16]}...); the file changed after it was saved")
            return check_sum
        jobs = {r: pool.submit(zlib.crc32, self.raw(r).data) for r, (_, size, crc, _) in self.records.items()
                if crc and size}  # (CRC 0: the writer skipped it, as torch.save can be told to)

        def check_crc() -> None:
            for r, job in jobs.items():
                if job.result() != self.records[r][2]:
                    raise self._bad(f"record {r!r} is corrupted: its CRC-32 does not match")
        return check_crc

    def check(self) -> None:
        with _pool() as pool:
            self.start_check(pool)()

    def storage_bytes(self, key: str, nbytes: int) -> np.ndarray:
        rel = f"data/{key}"
        if rel not in self.records:
            raise self._bad(f"record {rel!r} is missing (the pickle refers to storage {key!r})")
        size = self.records[rel][1]
        if size != nbytes:
            raise self._bad(f"record {rel!r} has {size} bytes, but its storage needs {nbytes}")
        raw = self.raw(rel)
        if self.mode != "map" or not raw.flags.writeable:
            raw = raw.copy()  # memory of its own (and writable, where the source is bytes)
        return raw


class _MapFile(io.RawIOBase):
    """A read-only file over a memory map, for zipfile (which reads the central directory through it)."""

    def __init__(self, mm: Any) -> None:
        self.mm, self.at = mm, 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def seek(self, pos: int, whence: int = 0) -> int:
        self.at = pos if whence == 0 else self.at + pos if whence == 1 else len(self.mm) + pos
        return self.at

    def tell(self) -> int:
        return self.at

    def read(self, n: int = -1) -> bytes:  # type: ignore[override]
        end = len(self.mm) if n is None or n < 0 else min(len(self.mm), self.at + n)
        out = self.mm[self.at:end]
        self.at = max(self.at, end)
        return out


class _Escape(Exception):
    """Carries an error out of the unpickler untouched (it is the caller's, not the file's)."""

    def __init__(self, error: BaseException) -> None:
        super().__init__(str(error))
        self.error = error


class _Loader:
    """The persistent ids of one load: storages by key (one Storage per key, so views share memory)."""

    def __init__(self, name: str, map_location: Any, read: Callable[[str, Any, Any, int, np.dtype], Storage]) -> None:
        self.name, self.map_location, self.read = name, map_location, read
        self.storages: dict[str, Storage] = {}
        self.tensors: dict[int, Any] = {}

    def storage(self, pid: tuple[Any, ...], legacy: bool = False) -> Storage:
        stype, key, location, numel, view = storage_id(pid, legacy)
        st = self.storages.get(key)
        if st is None:
            d, npd, nbytes = storage_nbytes(stype, numel)
            try:
                st = restore_location(self.map_location, self.read(key, d, npd, numel, npd), location)
            except (RuntimeError, TypeError) as e:  # map_location's errors, raised as they are (not as corruption)
                raise _Escape(e) from None
            self.storages[key] = st
        elif st.dtype is not lightgrad_dtype(stype.dtype_name or "") and stype.dtype_name is not None:
            raise Refused(f"storage {key!r} is used as {stype!r} and as {st.dtype!r}")
        if view is not None:
            st = self._view(st, view)
        return st

    def _view(self, root: Storage, view: Any) -> Storage:
        # legacy files of PyTorch < 0.4: (view key, offset, size) of a root storage
        if not (isinstance(view, tuple) and len(view) == 3 and type(view[1]) is int and type(view[2]) is int):
            raise Refused("a storage's view metadata must be (key, offset, size)")
        vkey, off, n = view
        if off < 0 or n < 0 or off + n > root.array.size:
            raise Refused(f"storage view {vkey!r} [{off}, {off + n}) lies outside its storage of {root.array.size}")
        got = self.storages.get(f"view:{vkey}")
        if got is None:
            got = self.storages[f"view:{vkey}"] = Storage(str(vkey), root.dtype, root.array[off:off + n], root.location)
        return got

    def tensor(self, pid: tuple[Any, ...]) -> Any:
        # lightgrad's own ids, in files of whole objects (weights_only=False only)
        _, n, key, dtype, offset, shape, strides, rg, param = pid
        if n in self.tensors:
            return self.tensors[n]
        d = lightgrad_dtype(dtype)
        if d is None:
            raise Refused(f"unknown dtype {dtype!r}")
        st = self.storages.get(key)
        if st is None:
            st = self.storages[key] = self.read(key, None, np.dtype(np.uint8), -1, np.dtype(np.uint8))
        t = _tensor(strided(st, offset, shape, strides, d))
        if rg:
            t.requires_grad = True
        out = rebuild_parameter(t, rg) if param else t
        self.tensors[n] = out
        return out


def _unpickle(data: Any, loader: _Loader, weights_only: bool, legacy: bool = False,
              encoding: str = "utf-8") -> Any:
    f = data if isinstance(data, io.BytesIO) else io.BytesIO(data)

    def storage(pid: Any) -> Any:
        return loader.storage(pid, legacy)
    if weights_only:
        return WeightsUnpickler(f, storage).load()
    u = FullUnpickler(f, storage, loader.tensor)
    return u.load()


def _refused(name: str, where: str, e: BaseException, weights_only: bool) -> CheckpointError:
    if isinstance(e, Refused) and weights_only:
        return CheckpointError(f"checkpoint {name}: {weights_only_message(str(e))}")
    return CheckpointError(f"checkpoint {name}: {where} is corrupted or not a checkpoint pickle "
                           f"({type(e).__name__}: {e})")


def load(f: Any, name: str, data: bytes | None, map_location: Any, weights_only: bool, mmap: bool) -> Any:
    """Load a PyTorch checkpoint: ``f`` a path (``data`` None) or the bytes of a file object."""
    head = (data[:16] if data is not None else _head(f))
    if kind(head) == "pickle":
        if mmap:
            shown = f"{f}, " if isinstance(f, str) else ""
            raise RuntimeError("mmap can only be used with files saved with "
                               f"`torch.save({shown}_use_new_zipfile_serialization=True), "
                               "please torch.save your checkpoint with this option in order to use mmap.")
        if data is None:
            with open(f, "rb") as fh:
                data = fh.read()
        return _load_legacy(data, name, map_location, weights_only)
    if mmap and data is not None:
        raise ValueError("f must be a file path in order to use the mmap argument")
    with _Archive(f, "map" if mmap else "copy", data, name) as z:
        def read(key: str, d: Any, npd: np.dtype, numel: int, _: np.dtype) -> Storage:
            if numel < 0:  # lightgrad's tensor ids: the record's bytes, untyped
                rel = f"data/{key}"
                if rel not in z.records:
                    raise z._bad(f"record {rel!r} is missing")
                return Storage(key, None, z.storage_bytes(key, z.records[rel][1]), "cpu")
            raw = z.storage_bytes(key, numel * npd.itemsize)
            return Storage(key, d, as_array(raw, npd, numel, z.big), "cpu")

        loader = _Loader(name, map_location, read)
        with _pool() as pool:
            finish = z.start_check(pool)
            obj = _unpickle_checked(z.raw("data.pkl"), loader, weights_only, name, "record 'data.pkl'")
            finish()
        return obj


def _unpickle_checked(src: Any, loader: Any, weights_only: bool, name: str, what: str, legacy: bool = False) -> Any:
    """_unpickle, its failures as CheckpointErrors naming the file and ``what`` (a full unpickle of a
    trusted file lets the object's own errors through, as pickle does)."""
    try:
        return _unpickle(src, loader, weights_only, legacy=legacy)
    except _Escape as e:
        raise e.error from None
    except CheckpointError:
        raise
    except Exception as e:
        if not weights_only and not isinstance(e, pickle.UnpicklingError | Refused | EOFError):
            raise
        raise _refused(name, what, e, weights_only) from None


def _head(f: Any) -> bytes:
    with open(f, "rb") as fh:
        return fh.read(16)


def _load_legacy(data: bytes, name: str, map_location: Any, weights_only: bool) -> Any:
    f = io.BytesIO(data)
    pending: dict[str, tuple[Storage, int]] = {}

    def read(key: str, d: Any, npd: np.dtype, numel: int, _: np.dtype) -> Storage:
        if numel * npd.itemsize > len(data):  # the bytes must be in the file: no allocation beyond its size
            raise CheckpointError(f"checkpoint {name}: storage {key!r} of {numel} elements is larger than the file")
        st = Storage(key, d, np.zeros(numel, npd), "cpu")
        pending[key] = (st, numel)
        return st

    loader = _Loader(name, map_location, read)

    def plain(what: str) -> Any:
        try:
            return WeightsUnpickler(f, _no_storage).load()
        except CheckpointError:
            raise
        except Exception as e:
            raise _refused(name, what, e, True) from None

    magic = plain("the magic number")
    if type(magic) is not int or magic != MAGIC:
        raise CheckpointError(f"checkpoint {name}: Invalid magic number; corrupt file? (not a torch.save file)")
    version = plain("the protocol version")
    if version != PROTOCOL_VERSION:
        raise CheckpointError(f"checkpoint {name}: Invalid protocol version: {version!r}")
    info = plain("the system info")
    little = info.get("little_endian", True) if isinstance(info, dict) else True
    obj = _unpickle_checked(f, loader, weights_only, name, "the pickle", legacy=True)
    keys = plain("the storage keys")
    if not (isinstance(keys, list) and all(isinstance(k, str) for k in keys)):
        raise CheckpointError(f"checkpoint {name}: the storage keys are corrupted")
    pos = f.tell()
    for key in keys:
        if key not in pending:
            raise CheckpointError(f"checkpoint {name}: storage {key!r} is listed, but no tensor uses it")
        st, numel = pending.pop(key)
        if pos + 8 > len(data):
            raise CheckpointError(f"checkpoint {name} is truncated: storage {key!r} is missing")
        count = int.from_bytes(data[pos:pos + 8], "little")
        nbytes = st.array.nbytes
        if count != numel:
            raise CheckpointError(f"checkpoint {name}: storage {key!r} has {count} elements in the file, but "
                                  f"the pickle says {numel}")
        if pos + 8 + nbytes > len(data):
            raise CheckpointError(f"checkpoint {name} is truncated: storage {key!r} needs {nbytes} bytes")
        st.array.view(np.uint8)[:] = np.frombuffer(data, np.uint8, nbytes, pos + 8)
        if not little and st.array.itemsize > 1:
            st.array.byteswap(inplace=True)
        pos += 8 + nbytes
    if pending:
        raise CheckpointError(f"checkpoint {name}: storages {sorted(pending)[:5]} are missing from the file")
    return obj


def _no_storage(pid: Any) -> Any:
    raise Refused("unexpected persistent id outside the pickle of the object")
