"""The checkpoint format's constants (codes, limits, metadata keys), CheckpointError, and the strict
reading of a header: the 8-byte length, the JSON (one reader for the header and the structure), the
tensor entries and the metadata. The format itself is described in lightgrad.serialization."""

from __future__ import annotations

import json
import math
import os
import re
import sys
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import dtypes as D

FORMAT = "checkpoint"
FORMAT_VERSION = 1
_CHUNK = 4 << 20  # bytes per hashed chunk (part of the checksum's definition)
_SLICE = 256 << 10  # bytes copied, then hashed while still in the CPU's cache
_MAX_HEADER = 100 << 20  # safetensors' own limit on the JSON header
_MAX_DEPTH = 127  # the deepest nesting safetensors' parser (serde_json, recursion limit 128) reads
_MAX_DIMS = 64 if np.lib.NumpyVersion(np.__version__) >= "2.0.0" else 32  # NumPy's NPY_MAXDIMS
_MAX_EXTENT = int(np.iinfo(np.intp).max)  # bytes NumPy can index in one array
_SURROGATE = re.compile(r"\\u[dD][89a-fA-F]")  # the escape of a surrogate, paired or not
_K_FORMAT, _K_VERSION, _K_LIB, _K_STRUCT, _K_SHA = (
    "lightgrad.format", "lightgrad.format_version", "lightgrad.version", "lightgrad.structure",
    "lightgrad.sha256")
_REQUIRED = (_K_FORMAT, _K_VERSION, _K_LIB, _K_STRUCT, _K_SHA)
_CODES: dict[str, np.dtype] = {
    "F64": np.dtype(np.float64), "F32": np.dtype(np.float32), "F16": np.dtype(np.float16),
    "I64": np.dtype(np.int64), "I32": np.dtype(np.int32), "I16": np.dtype(np.int16),
    "I8": np.dtype(np.int8), "U8": np.dtype(np.uint8), "BOOL": np.dtype(np.bool_),
    "U16": np.dtype(np.uint16), "U32": np.dtype(np.uint32), "U64": np.dtype(np.uint64),
}
try:  # bfloat16 is lightgrad's where ml_dtypes is installed; BF16 is read as float32 where it isn't
    _CODES["BF16"] = np.dtype(D.bfloat16.np)
except (AttributeError, ModuleNotFoundError):
    pass
_CODE_OF = {v: k for k, v in _CODES.items()}


class CheckpointError(ValueError):
    """A checkpoint that can't be loaded: truncated, corrupted, of an unknown version, or a pickle."""


def _is_path(f: Any) -> bool:
    return isinstance(f, str | os.PathLike)


def _display(f: Any) -> str:
    if _is_path(f):
        return repr(os.fspath(f))
    return repr(getattr(f, "name", None) or f"<{type(f).__name__}>")


# ---- the header: length, strict JSON, entries and metadata ---------------------------------------

def _check_magic(head: bytes, size: int, name: str) -> None:
    zip_file = head[:4] == b"PK\x03\x04"
    if zip_file or (len(head) >= 2 and head[0] == 0x80 and 2 <= head[1] <= 5):
        kind = "zip archive (torch.save's format)" if zip_file else "pickle (torch.save's legacy format)"
        raise CheckpointError(f"checkpoint {name} is a PyTorch {kind}: lightgrad.load reads it (as "
                              "torch.load(weights_only=True) does); verify() checks safetensors checkpoints only")
    if size < 8:
        raise CheckpointError(f"checkpoint {name} is truncated: {size} bytes, but a safetensors file "
                              "starts with an 8-byte header length")


def _parse_header(buf: Any, size: int, name: str) -> tuple[dict[str, tuple[str, list[int], int, int]],
                                                           dict[str, str], int]:
    """Validate the header; returns {name: (dtype code, shape, begin, end)}, the metadata and the
    offset of the data section. Checks everything the tensors will be read with."""
    def bad(what: str) -> CheckpointError:
        return CheckpointError(f"checkpoint {name} is corrupted or not a safetensors file: {what}")

    n = int.from_bytes(bytes(buf[:8]), "little")
    if n > _MAX_HEADER:
        raise bad(f"header length {n} exceeds the {_MAX_HEADER}-byte limit")
    if 8 + n > size:
        raise CheckpointError(f"checkpoint {name} is truncated: the header needs {n} bytes after the "
                              f"8-byte length, but the file has only {size - 8}")
    header = _json(bytes(buf[8:8 + n]), "the header", bad, header=True)
    if not isinstance(header, dict):
        raise bad(f"the header is a JSON {type(header).__name__}, expected an object")
    meta = header.pop("__metadata__", None)
    if meta is None:  # absent or null, as safetensors allows; any other non-object is refused (not `or {}`)
        meta = {}
    if not isinstance(meta, dict) or not all(isinstance(v, str) for v in meta.values()):
        raise bad("__metadata__ must map strings to strings")
    entries = {}
    for key, info in header.items():
        if not (isinstance(info, dict) and {"dtype", "shape", "data_offsets"} <= info.keys()):
            raise bad(f"tensor {key!r} needs dtype, shape and data_offsets, got {info!r}")
        code, shape, offsets = info["dtype"], info["shape"], info["data_offsets"]
        if not isinstance(code, str):
            raise bad(f"tensor {key!r} has dtype {code!r}, expected a string such as 'F32'")
        if code not in _CODES and code != "BF16":
            raise CheckpointError(f"checkpoint {name}: tensor {key!r} has dtype {code!r}, which lightgrad "
                                  f"can't hold (supported: {', '.join(_CODES)}{'' if 'BF16' in _CODES else ', and BF16 as float32'})")
        if not (isinstance(shape, list) and all(type(s) is int and s >= 0 for s in shape)):
            raise bad(f"tensor {key!r} has shape {shape!r}, expected a list of non-negative integers")
        if len(shape) > _MAX_DIMS:
            raise bad(f"tensor {key!r} has {len(shape)} dimensions, but NumPy holds at most {_MAX_DIMS}")
        itemsize = 2 if code == "BF16" else _CODES[code].itemsize
        nbytes = math.prod(shape) * itemsize
        # NumPy refuses a shape whose product (empty dimensions counted as 1) overflows its index type,
        # even when the array holds no element: [0, 2**62] of F32 is "too big"
        extent = nbytes or math.prod(s or 1 for s in shape) * itemsize
        if extent > _MAX_EXTENT:
            raise bad(f"tensor {key!r} of dtype {code} has shape {shape}, which spans {extent} bytes (empty "
                      f"dimensions counted as 1), but NumPy indexes at most {_MAX_EXTENT}")
        if not (isinstance(offsets, list) and len(offsets) == 2 and all(type(o) is int for o in offsets)
                and 0 <= offsets[0] <= offsets[1]):
            raise bad(f"tensor {key!r} has data_offsets {offsets!r}, expected [begin, end] with 0 <= begin <= end")
        if offsets[1] - offsets[0] != nbytes:
            raise bad(f"tensor {key!r} of dtype {code} and shape {shape} needs "
                      f"{nbytes} bytes, but its offsets span {offsets[1] - offsets[0]}")
        entries[key] = (code, shape, offsets[0], offsets[1])
    have = size - 8 - n
    need = max((e for _c, _s, _b, e in entries.values()), default=0)
    if need > have:
        raise CheckpointError(f"checkpoint {name} is truncated: its tensors need {need} bytes of data, "
                              f"but the file has only {have}")
    pos = 0
    for key, (_c, _s, begin, end) in sorted(entries.items(), key=lambda kv: (kv[1][2], kv[1][3])):
        if begin != pos:
            raise bad(f"tensor {key!r} starts at byte {begin} of the data, expected {pos} "
                      "(tensors must tile the data section without gaps or overlaps)")
        pos = end
    if pos != have:
        raise bad(f"{have - pos} bytes follow the last tensor")
    return entries, meta, 8 + n


class _BadJSON(Exception):
    """Raised by the JSON reader's hooks; ``_json`` turns it into the caller's CheckpointError."""


def _json(data: bytes | str, field: str, fail: Callable[[str], CheckpointError], *, header: bool) -> Any:
    """Parse the header (``header=True``) or the structure metadata, strictly: every JSON text of a
    checkpoint goes through here, so every malformed one becomes ``fail(message naming field)``.

    Refused: anything but UTF-8 (``json.loads`` of bytes would guess UTF-16 or skip a BOM), nesting
    deeper than _MAX_DEPTH (checked before parsing, so neither the parser nor the decoders that walk
    the result can run out of stack), a key twice in one object (which value wins is a guess; lightgrad
    never writes one), and NaN/Infinity (not JSON). In the header, also what safetensors' parser
    (serde_json) refuses, so a file object, which gets no second opinion, is judged the same as a path:
    strings with a lone surrogate (``"\\ud800"``), and numbers that don't fit an f64; integers that
    serde_json reads as floats (beyond the 64-bit range, and ``-0``) become floats, which no integer
    field of the header takes. The structure keeps Python's semantics: any int Python can read, and
    lone surrogates (a saved ``str`` may hold one: ``json.dumps`` escapes it)."""
    if isinstance(data, bytes):
        try:
            data = data.decode("utf-8")  # strict: no BOM skipped, no surrogate passed
        except UnicodeDecodeError as e:
            raise fail(f"{field} is not UTF-8 ({e})") from None
    depth = _depth(data)
    if depth > _MAX_DEPTH:
        raise fail(f"{field} nests {depth} levels deep, more than the {_MAX_DEPTH} that safetensors' "
                   "parser (serde_json) reads")
    try:
        out = json.loads(data, object_pairs_hook=_object, parse_constant=_constant,
                         parse_int=_header_int if header else _int)
        if header and _SURROGATE.search(data):  # a lone surrogate can only come from such an escape
            json.dumps(out, ensure_ascii=False).encode("utf-8")
    except _BadJSON as e:
        raise fail(f"{field} {e}") from None
    except UnicodeEncodeError as e:
        raise fail(f"{field} has a string with the lone surrogate {e.object[e.start:e.end]!r}, which is not "
                   "Unicode") from None
    except (ValueError, RecursionError) as e:  # JSONDecodeError is a ValueError
        raise fail(f"{field} is not valid JSON ({e})") from None
    return out


def _depth(text: str) -> int:
    """How deeply the brackets of JSON ``text`` nest, ignoring those in strings; without recursion, and
    at C speed. With the escaped backslashes, then the escaped quotes, gone (paired left to right, as
    JSON reads them), every quote left opens or closes a string, so the text between the even and the
    odd quotes is outside strings."""
    bare = text.replace("\\\\", "").replace('\\"', "")
    b = np.frombuffer("".join(bare.split('"')[0::2]).encode("utf-8", "replace"), np.uint8)
    steps = (b == ord("[")).astype(np.int32) + (b == ord("{")) - (b == ord("]")) - (b == ord("}"))
    return int(np.cumsum(steps).max(initial=0))


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        for k, _ in pairs:
            if k in seen:
                raise _BadJSON(f"has the key {k!r} twice in one object")
            seen.add(k)
    return out


def _constant(word: str) -> Any:
    raise _BadJSON(f"has {word}, which is not JSON")


def _int(digits: str) -> int:
    try:
        return int(digits)
    except ValueError:  # more digits than Python converts (sys.set_int_max_str_digits)
        raise _BadJSON(f"has an integer of {len(digits)} digits ({digits[:12]}...), more than Python reads "
                       f"(at most {sys.get_int_max_str_digits()})") from None


def _header_int(digits: str) -> int | float:
    # as serde_json reads a JSON integer: an i64 or u64 if it fits (and isn't -0), else an f64
    if len(digits) <= 20 and digits != "-0" and -(1 << 63) <= (v := int(digits)) < (1 << 64):
        return v
    f = float(digits)
    if math.isinf(f):
        raise _BadJSON(f"has a number of {len(digits)} digits ({digits[:12]}...), out of range")
    return f


def _check_meta(meta: dict[str, str], name: str) -> None:
    missing = [k for k in _REQUIRED if k not in meta]
    if missing:
        raise CheckpointError(f"checkpoint {name} is corrupted: lightgrad metadata {missing} missing "
                              f"(found {sorted(meta)})")
    if meta[_K_FORMAT] != FORMAT:
        raise CheckpointError(f"checkpoint {name}: unknown {_K_FORMAT} {meta[_K_FORMAT]!r}, expected {FORMAT!r}")
    version = meta[_K_VERSION]
    if version != str(FORMAT_VERSION):
        digits = version.lstrip("0")
        # compared as digit strings: int() refuses more than 4300 digits, and "²".isdigit() is true
        if version.isascii() and version.isdigit() and (len(digits), digits) > (1, str(FORMAT_VERSION)):
            raise CheckpointError(f"checkpoint {name} has format version {version}, written by a newer "
                                  f"lightgrad ({meta[_K_LIB]!r}); this one reads version {FORMAT_VERSION}: "
                                  "upgrade lightgrad")
        raise CheckpointError(f"checkpoint {name} has unknown format version {version!r}, "
                              f"expected {FORMAT_VERSION}")
