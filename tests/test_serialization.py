"""Checkpoints (lightgrad.save and load): round trips, format, integrity, safety, PyTorch interchange.

Round trips, the documented format and checksum, corruption, pickle refusal, PyTorch
interchange, atomic saves and bit-exact resumption in a fresh process."""

from __future__ import annotations

import errno
import hashlib
import io
import json
import math
import os
import pickle
import re
import runpy
import signal
import subprocess
import sys
import textwrap
import threading
from collections import OrderedDict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import lightgrad
from lightgrad import serialization as S
from lightgrad.serialization import CheckpointError

st_numpy = pytest.importorskip("safetensors.numpy")
from safetensors import safe_open  # noqa: E402

try:
    import fcntl
except ImportError:  # Windows: no file locks, and saves leave stale temporary files alone there
    fcntl = None  # type: ignore[assignment]
try:
    import torch
except ImportError:  # the interchange tests skip
    torch = None  # type: ignore[assignment]
needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch not installed")

DTYPES = [lightgrad.float32, lightgrad.float64, lightgrad.float16, lightgrad.int8, lightgrad.int16,
          lightgrad.int32, lightgrad.int64, lightgrad.uint8, lightgrad.bool]
# the safetensors dtype codes, written out here independently of the code under test
CODES = {"float32": "F32", "float64": "F64", "float16": "F16", "int8": "I8", "int16": "I16",
         "int32": "I32", "int64": "I64", "uint8": "U8", "bool": "BOOL"}


def _values(dt: lightgrad.dtype, shape: tuple[int, ...], seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if dt is lightgrad.bool:
        return np.asarray(rng.random(shape) < 0.5)
    if dt.is_floating_point:
        a = rng.standard_normal(shape).astype(dt.np)
        if a.size >= 4:  # values that a lossy path would change
            a.reshape(-1)[:4] = [np.nan, np.inf, -np.inf, -0.0]
        return a
    info = np.iinfo(dt.np)
    return rng.integers(info.min, info.max, shape, dtype=dt.np, endpoint=True)


def _same(a: Any, b: Any) -> None:
    """Deep equality that also checks types, dtypes, bit patterns and requires_grad."""
    assert type(a) is type(b), (type(a), type(b))
    if isinstance(a, lightgrad.Tensor):
        assert a.dtype == b.dtype and a.shape == b.shape and a.requires_grad == b.requires_grad
        assert a.detach().numpy().tobytes() == b.detach().numpy().tobytes()
    elif isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
    elif isinstance(a, dict):
        assert list(a.keys()) == list(b.keys())
        for k in a:
            assert type(k) is type(next(kb for kb in b if kb == k))
            _same(a[k], b[k])
    elif isinstance(a, list | tuple):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            _same(x, y)
    elif isinstance(a, float) and math.isnan(a):
        assert math.isnan(b)
    elif isinstance(a, float):
        assert a == b and math.copysign(1, a) == math.copysign(1, b)
    else:
        assert a == b


def _roundtrip(obj: Any, path: Path) -> Any:
    lightgrad.save(obj, path)
    return lightgrad.load(path)


# ---- round trips ----------------------------------------------------------------------------

@pytest.mark.parametrize("dt", DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("shape", [(), (0,), (3, 0, 2), (5,), (2, 3, 4)], ids=str)
def test_roundtrip_every_dtype_and_shape(tmp_path: Path, dt: lightgrad.dtype, shape: tuple[int, ...]) -> None:
    t = lightgrad.from_numpy(_values(dt, shape))
    back = _roundtrip(t, tmp_path / "t.safetensors")
    _same(t, back)
    assert back.numpy().flags.writeable and back.numpy().flags.c_contiguous


@pytest.mark.parametrize("view", ["transpose", "step", "flip", "expand"])
def test_roundtrip_non_contiguous(tmp_path: Path, view: str) -> None:
    base = lightgrad.from_numpy(_values(lightgrad.float64, (4, 6)))
    t = {"transpose": lambda: base.t(), "step": lambda: base[::2, 1::3], "flip": lambda: base.flip(1),
         "expand": lambda: base[:1].expand(3, 6)}[view]()
    assert not t.is_contiguous()
    back = _roundtrip({"x": t}, tmp_path / "t.safetensors")["x"]
    assert back.shape == t.shape and back.numpy().tobytes() == np.ascontiguousarray(t.numpy()).tobytes()


def test_roundtrip_nested_structure(tmp_path: Path) -> None:
    obj = {
        "model": OrderedDict([("fc.weight", lightgrad.randn(3, 2)), ("fc.bias", lightgrad.zeros(3))]),
        "optim": {"state": {0: {"step": lightgrad.tensor(7.0), "exp_avg": lightgrad.ones(3, 2)},
                            1: {"step": lightgrad.tensor(7.0), "exp_avg": lightgrad.ones(3)}},
                  "param_groups": [{"lr": 1e-3, "betas": (0.9, 0.999), "eps": 1e-8, "params": [0, 1],
                                    "amsgrad": False, "foreach": None}]},
        "epoch": 3, "big": 2 ** 70, "neg": -5, "floats": [0.1, -0.0, float("nan"), float("inf"), -float("inf")],
        "text": "naïve ☃ \"quoted\" \\", "flags": (True, False, None), "empty": ([], {}, ()),
        (1, "a"): "tuple key", 2.5: "float key", None: "none key", True: "bool key",
        "dtype": lightgrad.float16, "array": np.arange(6, dtype=np.int16).reshape(2, 3),
        "leaf": lightgrad.ones(2, requires_grad=True), "nested": [[lightgrad.tensor([1, 2])], {"deep": {"x": 1}}],
        "np_scalars": [np.float32(1.5), np.int64(4), np.bool_(True)],
    }
    back = _roundtrip(obj, tmp_path / "ckpt.safetensors")
    expected = {**obj, "np_scalars": [1.5, 4, True]}  # NumPy scalars come back as Python ones
    _same(expected, back)


def test_parameter_and_ordereddict_types_preserved(tmp_path: Path) -> None:
    nn = lightgrad.nn
    p = nn.Parameter(lightgrad.randn(2, 2))
    back = _roundtrip({"p": p, "od": OrderedDict(a=1)}, tmp_path / "p.safetensors")
    assert isinstance(back["p"], nn.Parameter) and back["p"].requires_grad
    assert back["p"].detach().numpy().tobytes() == p.detach().numpy().tobytes()
    assert type(back["od"]) is OrderedDict


def test_file_objects(tmp_path: Path) -> None:
    obj = {"a": lightgrad.arange(5), "b": [1, 2.0, "x"]}
    buf = io.BytesIO()
    lightgrad.save(obj, buf)
    buf.seek(0)
    back = lightgrad.load(buf)
    _same(obj, back)
    back["a"].add_(1)  # loaded from a read-only bytes buffer, yet writable
    (tmp_path / "f.safetensors").write_bytes(buf.getvalue())
    _same(obj, lightgrad.load(tmp_path / "f.safetensors"))  # the same bytes as a path


def test_loaded_tensors_own_their_memory_and_mmap_is_copy_on_write(tmp_path: Path) -> None:
    path = tmp_path / "m.safetensors"
    lightgrad.save({"a": lightgrad.ones(4), "b": lightgrad.zeros(4)}, path)
    before = path.read_bytes()
    for mmap in (False, True):
        back = lightgrad.load(path, mmap=mmap)
        back["a"].mul_(3)
        back["b"].add_(2)
        assert back["a"].tolist() == [3.0] * 4 and back["b"].tolist() == [2.0] * 4
        assert path.read_bytes() == before  # neither mode writes through to the file
    assert lightgrad.load(path)["a"].tolist() == [1.0] * 4


def test_tensor_names_flat_and_nested(tmp_path: Path) -> None:
    sd = OrderedDict([("encoder.0.weight", lightgrad.randn(2, 3)), ("encoder.0.bias", lightgrad.randn(2)),
                      ("ünï☃.scale", lightgrad.ones(1))])
    lightgrad.save(sd, tmp_path / "flat.safetensors")
    raw = st_numpy.load_file(tmp_path / "flat.safetensors")
    assert set(raw) == set(sd)  # a flat state_dict's keys are the tensor names
    for k in sd:
        assert raw[k].tobytes() == sd[k].numpy().tobytes()
    nested = {"model": sd, "optim": {"state": {0: {"m": lightgrad.ones(1)}}}, "rng": [lightgrad.zeros(1)],
              "a.b": lightgrad.ones(1), "a": {"b": lightgrad.zeros(1)}}
    lightgrad.save(nested, tmp_path / "nested.safetensors")
    names = set(st_numpy.load_file(tmp_path / "nested.safetensors"))
    assert {"model.encoder.0.weight", "model.encoder.0.bias", "optim.state.0.m", "rng.0", "a.b"} <= names
    assert len(names) == 7  # the colliding second "a.b" got a name of its own
    _same(nested, lightgrad.load(tmp_path / "nested.safetensors"))


def test_unsupported_objects_raise_before_writing(tmp_path: Path) -> None:
    path = tmp_path / "x.safetensors"
    with pytest.raises(TypeError, match=r"set.*'a\.b'"):
        lightgrad.save({"a": {"b": {1, 2}}}, path)
    with pytest.raises(TypeError, match="dict key of type lightgrad.tensor.Tensor"):
        lightgrad.save({lightgrad.ones(1): 1}, path)
    with pytest.raises(TypeError, match=r"Linear at the top level.*save its state_dict\(\) instead"):
        lightgrad.save(lightgrad.nn.Linear(2, 2), path)
    loop: list[Any] = []
    loop.append(loop)
    with pytest.raises(ValueError, match="circular"):
        lightgrad.save(loop, path)
    assert not path.exists() and os.listdir(tmp_path) == []


def _nested(depth: int, wrap: Any) -> Any:
    obj: Any = 1
    for _ in range(depth):
        obj = wrap(obj)
    return obj


def test_structure_nesting_limit(tmp_path: Path) -> None:
    # the structure's JSON nests at most 127 levels (what safetensors' parser reads, and what load reads):
    # a list is one level, a dict three ({"dict": [[key, value]]}); save refuses more, before writing
    path = tmp_path / "deep.safetensors"
    for depth, wrap in ((127, lambda x: [x]), (42, lambda x: {"k": x})):
        obj = _nested(depth, wrap)
        assert _roundtrip(obj, path) == obj
    path.unlink()
    # 1000 lists: deeper than the recursion limit would let save walk
    for depth, wrap in ((128, lambda x: [x]), (43, lambda x: {"k": x}), (1000, lambda x: [x])):
        with pytest.raises(ValueError, match="nests at most 127 levels of JSON"):
            lightgrad.save(_nested(depth, wrap), path)
    assert os.listdir(tmp_path) == []


def test_tensor_names_with_a_lone_surrogate(tmp_path: Path) -> None:
    # a str key may hold a lone surrogate, which a safetensors header can't: the tensor's name is written
    # escaped, the key itself comes back
    path = tmp_path / "s.safetensors"
    obj = {"a\udc80b": lightgrad.ones(2), "n": {"\ud800": lightgrad.zeros(1)}}
    _same(obj, _roundtrip(obj, path))
    assert set(st_numpy.load_file(path)) == {"a\\udc80b", "n.\\ud800"}  # the reference parser reads it


def test_loaded_tensors_survive_an_arena_reset(tmp_path: Path) -> None:
    path = tmp_path / "a.safetensors"
    lightgrad.save({"w": lightgrad.ones(3)}, path)
    with lightgrad.memory.arena("1MB") as arena:
        w = lightgrad.load(path)["w"]
        arena.reset()
    assert w.tolist() == [1.0] * 3  # file data isn't arena storage, so the reset doesn't reclaim it


def test_map_location_and_weights_only(tmp_path: Path) -> None:
    path = tmp_path / "w.safetensors"
    lightgrad.save({"w": lightgrad.ones(2)}, path)
    for kw in ({"map_location": "cpu"}, {"map_location": lightgrad.device("cpu")}, {"weights_only": True},
               {"weights_only": False}, {"map_location": {"cuda:0": "cpu"}}):
        assert lightgrad.load(path, **kw)["w"].tolist() == [1.0, 1.0]
    with pytest.raises(RuntimeError, match="cuda"):
        lightgrad.load(path, map_location="cuda")


# ---- the documented format and checksum ---------------------------------------------------------

def _reference_checksum(meta: dict[str, str], arrays: dict[str, np.ndarray]) -> str:
    """The checksum exactly as the module docstring defines it, written independently."""
    h = hashlib.sha256(b"lightgrad.sha256/1\n")
    rest = {k: v for k, v in meta.items() if k != "lightgrad.sha256"}
    h.update(json.dumps(rest, sort_keys=True, separators=(",", ":")).encode() + b"\n")
    for name in sorted(arrays):
        a = arrays[name]
        data = a.astype(a.dtype.newbyteorder("<")).tobytes()
        h.update(json.dumps([name, CODES[a.dtype.name], list(a.shape), len(data)], separators=(",", ":")).encode())
        h.update(b"\n")
        for i in range(0, len(data), 4 << 20):
            h.update(hashlib.sha256(data[i:i + (4 << 20)]).digest())
    return h.hexdigest()


def _file_parts(path: Path) -> tuple[dict[str, str], dict[str, np.ndarray]]:
    with safe_open(str(path), framework="numpy") as f:
        meta = f.metadata()
    return meta, st_numpy.load_file(path)


def test_metadata_and_checksum_follow_the_documented_format(tmp_path: Path) -> None:
    path = tmp_path / "c.safetensors"
    big = lightgrad.from_numpy(_values(lightgrad.uint8, (9 << 20,)))  # > 2 hash chunks
    obj = {"big": big, "small": lightgrad.ones(3, dtype=lightgrad.float16), "none": lightgrad.zeros(0), "n": 1}
    lightgrad.save(obj, path)
    meta, arrays = _file_parts(path)
    assert meta["lightgrad.format"] == "checkpoint" and meta["lightgrad.format_version"] == "1"
    assert meta["lightgrad.version"] == lightgrad.__version__
    structure = json.loads(meta["lightgrad.structure"])
    assert structure == {"dict": [["big", {"tensor": "big"}], ["small", {"tensor": "small"}],
                                  ["none", {"tensor": "none"}], ["n", 1]]}
    assert meta["lightgrad.sha256"] == _reference_checksum(meta, arrays)
    assert S.verify(path)["checksum_verified"] is True


# ---- corruption --------------------------------------------------------------------------------

@pytest.fixture
def ckpt(tmp_path: Path) -> Path:
    path = tmp_path / "ckpt.safetensors"
    lightgrad.save({"w": lightgrad.randn(3, 2), "i": lightgrad.tensor([1, 2], dtype=lightgrad.int64),
                    "meta": {"epoch": 3, 0: (1.5, "x")}}, path)
    return path


def _load_bytes(data: bytes) -> Any:
    return lightgrad.load(io.BytesIO(data))


def test_truncated_files(ckpt: Path, tmp_path: Path) -> None:
    data = ckpt.read_bytes()
    header_end = 8 + int.from_bytes(data[:8], "little")
    bad = tmp_path / "bad.safetensors"
    for n in sorted({0, 3, 8, 20, header_end - 1, header_end, header_end + 5, len(data) - 1}):
        bad.write_bytes(data[:n])
        with pytest.raises(CheckpointError, match="truncated") as e:
            lightgrad.load(bad)
        assert "bad.safetensors" in str(e.value)
        with pytest.raises(CheckpointError):
            S.verify(bad)


def test_every_flipped_byte_is_detected(ckpt: Path) -> None:
    data = ckpt.read_bytes()
    for pos in range(len(data)):
        for mask in (0x01, 0xFF):
            flipped = bytearray(data)
            flipped[pos] ^= mask
            with pytest.raises(CheckpointError):
                _load_bytes(bytes(flipped))


def test_flipped_data_byte_on_disk_names_file_and_mismatch(ckpt: Path) -> None:
    data = bytearray(ckpt.read_bytes())
    data[-3] ^= 0x10
    ckpt.write_bytes(bytes(data))
    with pytest.raises(CheckpointError, match=r"ckpt\.safetensors.*checksum mismatch"):
        lightgrad.load(ckpt)
    with pytest.raises(CheckpointError, match="checksum mismatch"):
        S.verify(ckpt)


def _rewrite(src: Path, dst: Path, meta_changes: dict[str, str | None],
             arrays_changes: dict[str, np.ndarray | None] | None = None, rehash: bool = True) -> None:
    """Copy a checkpoint with edited metadata/tensors, with a valid checksum unless rehash=False."""
    meta, arrays = _file_parts(src)
    for k, v in meta_changes.items():
        if v is None:
            meta.pop(k)
        else:
            meta[k] = v
    for k, a in (arrays_changes or {}).items():
        if a is None:
            arrays.pop(k)
        else:
            arrays[k] = a
    if rehash:
        meta["lightgrad.sha256"] = _reference_checksum(meta, arrays)
    st_numpy.save_file(arrays, dst, metadata=meta)


@pytest.mark.parametrize("version, message", [("2", "newer lightgrad.*upgrade"), ("0", "unknown format version"),
                                              ("one", "unknown format version"), ("9" * 5001, "newer lightgrad"),
                                              ("0001", "unknown format version"), ("²", "unknown format version")],
                         ids=["2", "0", "one", "5001-digits", "0001", "superscript-2"])
def test_wrong_format_version(ckpt: Path, tmp_path: Path, version: str, message: str) -> None:
    bad = tmp_path / "v.safetensors"
    _rewrite(ckpt, bad, {"lightgrad.format_version": version})
    with pytest.raises(CheckpointError, match=message):
        lightgrad.load(bad)


def test_missing_metadata_and_bad_structure(ckpt: Path, tmp_path: Path) -> None:
    bad = tmp_path / "m.safetensors"
    _rewrite(ckpt, bad, {"lightgrad.sha256": None}, rehash=False)
    with pytest.raises(CheckpointError, match="lightgrad.sha256"):
        lightgrad.load(bad)
    meta, _ = _file_parts(ckpt)
    structure = meta["lightgrad.structure"].replace('{"tensor":"w"}', '{"tensor":"gone"}')
    _rewrite(ckpt, bad, {"lightgrad.structure": structure}, {"w": None})
    with pytest.raises(CheckpointError, match="'gone', which is not in the file"):
        lightgrad.load(bad)
    _rewrite(ckpt, bad, {"lightgrad.structure": meta["lightgrad.structure"][:-3]})
    with pytest.raises(CheckpointError, match="not valid JSON"):
        lightgrad.load(bad)
    _rewrite(ckpt, bad, {}, {"extra": np.zeros(2, np.float32)})
    with pytest.raises(CheckpointError, match="not in its structure"):
        lightgrad.load(bad)


def test_hash_mismatch_with_valid_layout(ckpt: Path, tmp_path: Path) -> None:
    _, arrays = _file_parts(ckpt)
    bad = tmp_path / "h.safetensors"
    _rewrite(ckpt, bad, {}, {"w": arrays["w"] + 1}, rehash=False)
    with pytest.raises(CheckpointError, match="checksum mismatch"):
        lightgrad.load(bad)


def test_failed_load_changes_nothing(ckpt: Path) -> None:
    model = lightgrad.nn.Linear(2, 3)
    before = {k: v.numpy().copy() for k, v in model.state_dict().items()}
    lightgrad.save(model.state_dict(), ckpt)
    data = bytearray(ckpt.read_bytes())
    data[-1] ^= 0xFF
    ckpt.write_bytes(bytes(data))
    with pytest.raises(CheckpointError):
        model.load_state_dict(lightgrad.load(ckpt))
    for k, v in model.state_dict().items():
        assert np.array_equal(v.numpy(), before[k])


# ---- crafted headers ------------------------------------------------------------------------------

_T = '"t":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}'  # a valid entry for 4 bytes of data


def _raw(header: str | bytes, data: bytes = b"\0" * 4) -> bytes:
    """A safetensors file with exactly this header text (a ``str`` is written as UTF-8, surrogates and all)."""
    h = header.encode("utf-8", "surrogatepass") if isinstance(header, str) else header
    return len(h).to_bytes(8, "little") + h + data


def _deep(levels: int) -> str:
    """A valid header whose brackets nest ``levels`` deep, in a field that safetensors ignores."""
    n = levels - 2  # the header's own object and the tensor's
    return '{"t":{"dtype":"F32","shape":[1],"data_offsets":[0,4],"x":' + "[" * n + "]" * n + "}}"


def _refused_alone(data: bytes, message: str, path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``data`` fails to load, with ``message``, as a file object and as a path, with lightgrad's own parser
    only (a path gets a second opinion from safetensors, which would hide what lightgrad's lets through)."""
    with pytest.raises(CheckpointError, match=r"'<BytesIO>' is corrupted.*" + message):
        _load_bytes(data)
    path.write_bytes(data)
    with monkeypatch.context() as m:
        m.setattr(S, "_safetensors", lambda: None)
        with pytest.raises(CheckpointError, match=re.escape(repr(str(path))) + " is corrupted.*" + message):
            lightgrad.load(path)


# each of these raised TypeError, ValueError (from NumPy or int()) or RecursionError
_CRAFTED = {
    "dtype-not-a-string": ('{"t":{"dtype":["F32"],"shape":[1],"data_offsets":[0,4]}}', 4,
                           r"tensor 't' has dtype \['F32'\], expected a string"),
    "65-dimensions": ('{"t":{"dtype":"F32","shape":' + json.dumps([1] * 65) + ',"data_offsets":[0,4]}}', 4,
                      r"tensor 't' has 65 dimensions, but NumPy holds at most"),
    "empty-with-a-huge-dimension": ('{"t":{"dtype":"F32","shape":[0,4611686018427387904],"data_offsets":[0,0]}}', 0,
                                    r"tensor 't' of dtype F32 has shape \[0, 4611686018427387904\].*NumPy indexes"),
    "nested-990-deep": (_deep(990), 4, r"the header nests 990 levels deep"),
    "5001-digit-integer": ('{"t":{"dtype":"F32","shape":[' + "1" * 5001 + '],"data_offsets":[0,4]}}', 4,
                           r"the header has a number of 5001 digits"),
}


@pytest.mark.parametrize("case", _CRAFTED, ids=list(_CRAFTED))
def test_crafted_header_names_file_and_field(tmp_path: Path, case: str) -> None:
    header, nbytes, field = _CRAFTED[case]
    data = _raw(header, b"\0" * nbytes)
    with pytest.raises(CheckpointError, match=r"'<BytesIO>' is corrupted.*" + field):
        _load_bytes(data)
    path = tmp_path / "crafted.safetensors"
    path.write_bytes(data)
    for read in (lightgrad.load, S.verify):
        with pytest.raises(CheckpointError, match=r"crafted\.safetensors' is corrupted.*" + field):
            read(path)


@pytest.mark.parametrize(("structure", "message"), [
    ("[" * 990 + "]" * 990, r"structure metadata \(lightgrad.structure\) nests 990 levels deep"),
    ('{"dict":[["n",' + "9" * 5001 + "]]}", r"structure metadata \(lightgrad.structure\) has an integer of 5001 digits"),
    ('{"dtype":["float32"]}', r"unknown structure node \{\"dtype\": \[\"float32\"\]\}"),
    ('{"dict":[[["a"],1]]}', r"unhashable dict key \[\"a\"\]"),
    ('{"tuple":[],"tuple":[1]}', r"structure metadata \(lightgrad.structure\) has the key 'tuple' twice"),
    ('{"float":NaN}', r"structure metadata \(lightgrad.structure\) has NaN, which is not JSON"),
], ids=["nested-990-deep", "5001-digit-integer", "dtype-not-a-string", "list-as-key", "duplicated-key", "NaN"])
def test_crafted_structure_names_file_and_field(ckpt: Path, tmp_path: Path, structure: str, message: str) -> None:
    bad = tmp_path / "s.safetensors"
    _rewrite(ckpt, bad, {"lightgrad.structure": structure})  # with a valid checksum: only the structure is wrong
    with pytest.raises(CheckpointError, match=r"s\.safetensors'.*" + message):
        lightgrad.load(bad)


# Files that safetensors' reference parser refuses, each accepted by lightgrad's own parser before, and
# why lightgrad refuses them now
_REFUSED = {
    "utf8-bom": (b"\xef\xbb\xbf{" + _T.encode() + b"}", "Unexpected UTF-8 BOM"),
    "utf16-le": (("{" + _T + "}").encode("utf-16-le"), "the header is not valid JSON"),
    "utf16-with-bom": (("{" + _T + "}").encode("utf-16"), "the header is not UTF-8"),
    "surrogate-bytes": (b'{"\xed\xa0\x80":' + _T[4:].encode() + b"}", "the header is not UTF-8"),
    "lone-surrogate-in-name": ('{"\\ud800":' + _T[4:] + "}", r"lone surrogate '\\ud800'"),
    "lone-low-surrogate-in-metadata": ('{"__metadata__":{"a":"x\\udc00"},' + _T + "}", r"lone surrogate '\\udc00'"),
    "duplicated-__metadata__": ('{"__metadata__":{"a":"b"},"__metadata__":{"a":"c"},' + _T + "}",
                                "the key '__metadata__' twice"),
    "duplicated-field": ('{"t":{"dtype":"F32","dtype":"F32","shape":[1],"data_offsets":[0,4]}}', "the key 'dtype' twice"),
    "metadata-a-list": ('{"__metadata__":[],' + _T + "}", "__metadata__ must map strings to strings"),
    "metadata-an-empty-string": ('{"__metadata__":"",' + _T + "}", "__metadata__ must map strings to strings"),
    "negative-zero": ('{"t":{"dtype":"F32","shape":[-0],"data_offsets":[0,0]}}', r"tensor 't' has shape \[-0.0\]"),
    "nested-128-deep": (_deep(128), "the header nests 128 levels deep"),
}
# ... and variations that both accept
_ACCEPTED = {
    "padded": "{" + _T + "}    ",
    "whitespace-around": " \t\n{ " + _T + " }\r\n",
    "surrogate-pair": '{"\\ud83d\\ude00":' + _T[4:] + "}",
    "escaped-nul-in-name": '{"t\\u0000":' + _T[4:] + "}",
    "unknown-field": '{"t":{"dtype":"F32","shape":[1],"data_offsets":[0,4],"x":[1.5,-1,null]}}',
    "metadata-null": '{"__metadata__":null,' + _T + "}",
    "nested-127-deep": _deep(127),
}


@pytest.mark.parametrize("case", _REFUSED, ids=list(_REFUSED))
def test_header_parser_refuses_what_safetensors_refuses(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        case: str) -> None:
    header, message = _REFUSED[case]
    data = _raw(header, b"" if case == "negative-zero" else b"\0" * 4)
    _refused_alone(data, message, tmp_path / "h.safetensors", monkeypatch)
    st = pytest.importorskip("safetensors")
    with pytest.raises(Exception, match="(?i)invalid|error"):  # the reference: its exception types vary
        st.deserialize(data)


@pytest.mark.parametrize("case", _ACCEPTED, ids=list(_ACCEPTED))
def test_header_parser_accepts_what_safetensors_accepts(tmp_path: Path, case: str) -> None:
    data = _raw(_ACCEPTED[case], np.float32(2.5).tobytes())
    [t] = _load_bytes(data).values()
    assert t.tolist() == [2.5]
    path = tmp_path / "h.safetensors"
    path.write_bytes(data)
    assert [v.tolist() for v in lightgrad.load(path).values()] == [[2.5]]  # with the second opinion, too
    st = pytest.importorskip("safetensors")
    [(_, info)] = st.deserialize(data)
    assert info["shape"] == [1]


def test_duplicated_tensor_names_are_refused(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # stricter than safetensors, whose parser keeps the last: any key twice in one object is ambiguous
    _refused_alone(_raw("{" + _T + "," + _T + "}"), "the key 't' twice", tmp_path / "d.safetensors", monkeypatch)


# ---- foreign files and pickles -------------------------------------------------------------------

def test_plain_safetensors_file_loads_as_flat_dict(tmp_path: Path) -> None:
    path = tmp_path / "plain.safetensors"
    arrays: dict[str, np.ndarray] = {"b": np.arange(3, dtype=np.int32), "a": np.ones((2, 2), np.float64)}
    st_numpy.save_file(arrays, path, metadata={"format": "pt"})
    back = lightgrad.load(path)
    assert list(back) == ["a", "b"]
    for k, a in arrays.items():
        assert back[k].dtype == lightgrad.float64 if k == "a" else back[k].dtype == lightgrad.int32
        assert back[k].numpy().tobytes() == a.tobytes()
    assert S.verify(path)["checksum_verified"] is False
    unsigned = {f"u{bits}": np.arange(3, dtype=f"uint{bits}") * 7 for bits in (16, 32, 64)}
    st_numpy.save_file(unsigned, path)  # (U16/U32/U64, which PyTorch 2.13 reads and writes too)
    back = lightgrad.load(path)
    for k, a in unsigned.items():
        assert back[k].dtype == getattr(lightgrad, "uint" + k[1:]) and back[k].numpy().tobytes() == a.tobytes()
    lightgrad.save(back, path)
    again = st_numpy.load_file(path)
    assert all(again[k].dtype == a.dtype and (again[k] == a).all() for k, a in unsigned.items())


class _Marker:
    """Unpickling this creates a file: proof that a loader ran code from the checkpoint."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self) -> Any:
        return (Path.touch, (Path(self.path),))


def test_pickles_are_refused_without_running_them(tmp_path: Path) -> None:
    # a bare pickle goes to the reader of torch.save's legacy format, whose weights-only unpickler
    # refuses the global (more cases in test_serialization_pytorch.py)
    marker = tmp_path / "pwned"
    path = tmp_path / "evil.pt"
    for proto in (2, 4, 5):
        path.write_bytes(pickle.dumps(_Marker(str(marker)), protocol=proto))
        with pytest.raises(CheckpointError, match=r"(?s)evil\.pt.*Weights only load failed.*GLOBAL"):
            lightgrad.load(path)
        assert not marker.exists()


@needs_torch
def test_torch_save_files_load(tmp_path: Path) -> None:
    path = tmp_path / "model.pt"
    for new_format in (True, False):
        torch.save({"w": torch.ones(2)}, path, _use_new_zipfile_serialization=new_format)
        assert lightgrad.load(path)["w"].tolist() == [1.0, 1.0]
    with pytest.raises(CheckpointError, match="PyTorch pickle.*verify"):
        S.verify(path)


# ---- PyTorch interchange ------------------------------------------------------------------------

def _torch_net() -> Any:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.BatchNorm1d(8), torch.nn.ReLU(),
                               torch.nn.Linear(8, 3))


def _lightgrad_net() -> Any:
    nn = lightgrad.nn
    lightgrad.manual_seed(1)
    return nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 3))


@needs_torch
def test_torch_state_dict_loads_into_lightgrad(tmp_path: Path) -> None:
    st_torch = pytest.importorskip("safetensors.torch")
    tnet = _torch_net()
    tnet.train()(torch.randn(16, 4))  # move BatchNorm's running stats off their defaults
    tnet.eval()
    path = tmp_path / "torch.safetensors"
    st_torch.save_file(tnet.state_dict(), str(path))
    sd = lightgrad.load(path)
    assert set(sd) == set(tnet.state_dict())
    for k, v in tnet.state_dict().items():
        assert str(sd[k].dtype).split(".")[-1] == str(v.dtype).split(".")[-1]
        assert np.array_equal(sd[k].numpy(), v.numpy())
    lnet = _lightgrad_net()
    lnet.load_state_dict(sd)
    lnet.eval()
    x = np.random.default_rng(0).standard_normal((5, 4)).astype(np.float32)
    with torch.no_grad():
        expected = tnet(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(lnet(lightgrad.from_numpy(x)).detach().numpy(), expected, rtol=1e-6, atol=1e-6)


@needs_torch
def test_lightgrad_checkpoint_loads_into_torch(tmp_path: Path) -> None:
    st_torch = pytest.importorskip("safetensors.torch")
    lnet = _lightgrad_net()
    lnet.train()(lightgrad.randn(16, 4))
    lnet.eval()
    path = tmp_path / "lg.safetensors"
    lightgrad.save(lnet.state_dict(), path)
    sd = st_torch.load_file(str(path))
    assert sorted(sd) == sorted(lnet.state_dict())  # exactly the state_dict's keys
    tnet = _torch_net()
    tnet.load_state_dict(sd)  # strict: names, shapes and dtypes all fit
    tnet.eval()
    x = np.random.default_rng(0).standard_normal((5, 4)).astype(np.float32)
    with torch.no_grad():
        got = tnet(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(got, lnet(lightgrad.from_numpy(x)).detach().numpy(), rtol=1e-6, atol=1e-6)
    # a nested checkpoint reads in PyTorch too, under dotted names
    lightgrad.save({"model": lnet.state_dict(), "epoch": 2}, path)
    assert set(st_torch.load_file(str(path))) == {"model." + k for k in lnet.state_dict()}


@needs_torch
def test_bfloat16_round_trips(tmp_path: Path) -> None:
    pytest.importorskip("ml_dtypes")
    st_torch = pytest.importorskip("safetensors.torch")
    t = torch.randn(7, dtype=torch.float32).to(torch.bfloat16)
    st_torch.save_file({"t": t}, str(tmp_path / "bf.safetensors"))
    back = lightgrad.load(tmp_path / "bf.safetensors")["t"]
    assert back.dtype == lightgrad.bfloat16
    assert back.float().numpy().tobytes() == t.float().numpy().tobytes()  # bit for bit (widening is exact)
    lightgrad.save({"t": back}, tmp_path / "lg.safetensors")  # and back out as BF16, which PyTorch reads
    assert torch.equal(st_torch.load_file(str(tmp_path / "lg.safetensors"))["t"], t)
    assert lightgrad.load(tmp_path / "lg.safetensors")["t"].dtype == lightgrad.bfloat16


# ---- atomic saves --------------------------------------------------------------------------------

def test_failed_save_leaves_previous_checkpoint_intact(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "ckpt.safetensors"
    lightgrad.save({"w": lightgrad.ones(1000)}, path)
    before = path.read_bytes()
    real = S._write_file

    def fail_midway(fh: Any, header: bytes, parts: Iterable[np.ndarray]) -> None:
        fh.write(header)
        fh.write(next(iter(parts)).tobytes()[:100])  # as if the disk filled up halfway through
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(S, "_write_file", fail_midway)
    with pytest.raises(OSError, match="No space left"):
        lightgrad.save({"w": lightgrad.zeros(5000)}, path)
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["ckpt.safetensors"]  # no temporary file left behind

    monkeypatch.setattr(S, "_write_file", real)
    monkeypatch.setattr(os, "replace", lambda *a: (_ for _ in ()).throw(KeyboardInterrupt()))
    with pytest.raises(KeyboardInterrupt):
        lightgrad.save({"w": lightgrad.zeros(5000)}, path)
    assert path.read_bytes() == before and os.listdir(tmp_path) == ["ckpt.safetensors"]


def test_save_fsyncs_file_then_renames_then_fsyncs_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    events: list[str] = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd: int) -> None:
        events.append("fsync dir" if os.path.isdir(f"/proc/self/fd/{fd}") else "fsync file")
        real_fsync(fd)

    def replace(src: Any, dst: Any) -> None:
        events.append("replace")
        real_replace(src, dst)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    lightgrad.save({"w": lightgrad.ones(3)}, tmp_path / "c.safetensors")
    if sys.platform == "linux":
        assert events == ["fsync file", "replace", "fsync dir"]
    else:
        assert events[1] == "replace" and len(events) >= 2


def test_save_replaces_and_uses_default_permissions(tmp_path: Path) -> None:
    path = tmp_path / "ckpt.safetensors"
    lightgrad.save({"w": lightgrad.ones(2)}, path)
    lightgrad.save({"w": lightgrad.zeros(3)}, path)
    assert lightgrad.load(path)["w"].tolist() == [0.0] * 3
    plain = tmp_path / "plain"
    plain.write_bytes(b"")
    assert (path.stat().st_mode & 0o777) == (plain.stat().st_mode & 0o777)
    assert sorted(os.listdir(tmp_path)) == ["ckpt.safetensors", "plain"]
    link = tmp_path / "latest"
    link.symlink_to(path)
    lightgrad.save({"w": lightgrad.full((2,), 5.0)}, link)  # replaces the file the link points at
    assert link.is_symlink() and lightgrad.load(path)["w"].tolist() == [5.0, 5.0]
    with pytest.raises(FileNotFoundError, match="does not exist"):
        lightgrad.save({"w": lightgrad.ones(1)}, tmp_path / "missing" / "ckpt.safetensors")


@pytest.mark.parametrize("target", ["buffered", "streamed", "file-object"])
def test_save_while_another_thread_writes_the_tensor(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     target: str) -> None:
    # each save may catch the tensor half-updated, but must write exactly the bytes it hashed
    if target == "streamed":
        monkeypatch.setattr(S, "_STREAM_MIN", 0)
    t = lightgrad.zeros(2 << 20)  # 8 MiB: two hash chunks
    arr = t.numpy()
    stop = threading.Event()

    def scribble() -> None:
        while not stop.is_set():
            np.add(arr, 1, out=arr)  # in place, without the GIL: it runs during the copy and the hash

    writer = threading.Thread(target=scribble, daemon=True)
    writer.start()
    path = tmp_path / "ckpt.safetensors"
    try:
        for _ in range(5):
            if target == "file-object":
                buf = io.BytesIO()
                lightgrad.save({"w": t}, buf)
                back = _load_bytes(buf.getvalue())["w"]
            else:
                lightgrad.save({"w": t}, path)
                assert S.verify(path)["checksum_verified"]
                back = lightgrad.load(path)["w"]
            assert back.shape == (2 << 20,)
    finally:
        stop.set()
        writer.join()


def _flip_last_byte_at_fsync(monkeypatch: pytest.MonkeyPatch) -> None:
    """From now on, fsyncing a regular file first flips its last byte: as if the disk (or a bug between
    the hash and the write) kept other bytes than were hashed."""
    real = os.fsync

    def fsync(fd: int) -> None:
        if os.path.isfile(f"/proc/self/fd/{fd}"):
            with open(f"/proc/self/fd/{fd}", "r+b") as f:  # a descriptor of its own: the save's may be O_DIRECT
                f.seek(-1, os.SEEK_END)
                last = f.read(1)[0]
                f.seek(-1, os.SEEK_END)
                f.write(bytes([last ^ 0x01]))
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc")
@pytest.mark.parametrize("stream", [False, True], ids=["buffered", "streamed"])
def test_save_verifies_the_file_before_the_rename(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                  stream: bool) -> None:
    path, before, fds = _previous_checkpoint(tmp_path)
    monkeypatch.setattr(S, "_STREAM_MIN", 0 if stream else 1 << 40)
    _flip_last_byte_at_fsync(monkeypatch)
    with pytest.raises(CheckpointError, match=r"previous file is unchanged.*checksum mismatch"):
        lightgrad.save({"w": lightgrad.zeros(5000)}, path)
    _assert_untouched(path, before, fds)


def _temp_name(target: Path, hex8: str) -> Path:
    return target.parent / f".{target.name}.{hex8}.tmp"  # the name save gives its temporary file


@pytest.mark.skipif(fcntl is None, reason="no file locks (Windows): stale temporary files are left alone")
def test_save_removes_stale_temporary_files_of_its_target(tmp_path: Path) -> None:
    path = tmp_path / "ckpt.safetensors"
    stale = [_temp_name(path, "0123abcd"), _temp_name(path, "deadbeef")]
    keep = [_temp_name(tmp_path / "other.safetensors", "0123abcd"),  # another target's
            tmp_path / ".ckpt.safetensors.notes.tmp", tmp_path / "ckpt.safetensors.0123abcd.tmp",  # other names
            tmp_path / "elsewhere"]
    link = _temp_name(path, "00000000")  # a link with a temporary file's name: neither it nor its target goes
    live = _temp_name(path, "89abcdef")  # a save in progress, in another process say: it holds the lock
    for f in stale + keep + [live]:
        f.write_bytes(b"half a checkpoint")
    link.symlink_to(tmp_path / "elsewhere")
    with open(live, "r+b") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        lightgrad.save({"w": lightgrad.ones(2)}, path)
        assert sorted(os.listdir(tmp_path)) == sorted([path.name, link.name, live.name, *(f.name for f in keep)])
    lightgrad.save({"w": lightgrad.ones(2)}, path)  # the "live" save's lock is gone: it died
    assert not live.exists() and link.is_symlink() and all(f.exists() for f in keep)
    assert lightgrad.load(path)["w"].tolist() == [1.0, 1.0]


_KILLED_MIDWAY = """
import os, signal, sys
import lightgrad
from lightgrad import serialization as S


def write_and_die(fh, header, parts):
    fh.write(header)
    fh.flush()
    os.kill(os.getpid(), signal.SIGKILL)  # kill -9, halfway through the save


S._write_file = write_and_die
lightgrad.save({"w": lightgrad.ones(1000)}, sys.argv[1])
"""


@pytest.mark.skipif(fcntl is None or not hasattr(signal, "SIGKILL"), reason="POSIX only")
def test_save_removes_the_temporary_file_of_a_killed_save(tmp_path: Path) -> None:
    folder = tmp_path / "ckpts"
    folder.mkdir()
    path = folder / "ckpt.safetensors"
    lightgrad.save({"w": lightgrad.zeros(3)}, path)
    script = tmp_path / "die.py"
    script.write_text(_KILLED_MIDWAY)
    left: list[set[str]] = []
    for _ in range(2):
        done = subprocess.run([sys.executable, str(script), str(path)], capture_output=True, timeout=120)
        assert done.returncode == -signal.SIGKILL, done.stderr.decode()[-2000:]
        left.append(set(os.listdir(folder)) - {path.name})
    # each killed save left its temporary file; the second removed the first's
    assert len(left[0]) == 1 and len(left[1]) == 1 and left[0] != left[1]
    assert next(iter(left[1])).startswith(".ckpt.safetensors.")
    assert lightgrad.load(path)["w"].tolist() == [0.0] * 3
    lightgrad.save({"w": lightgrad.ones(3)}, path)
    assert os.listdir(folder) == [path.name]


def test_concurrent_saves_to_one_target_keep_each_others_files(tmp_path: Path) -> None:
    # each save removes stale temporary files of its target: never those of saves still running
    path = tmp_path / "ckpt.safetensors"
    errors: list[BaseException] = []

    def saves(k: int) -> None:
        try:
            for i in range(8):
                lightgrad.save({"w": lightgrad.full((1 << 16,), float(k)), "i": i}, path)
        except BaseException as e:  # noqa: BLE001 (reported below, in the test's thread)
            errors.append(e)

    threads = [threading.Thread(target=saves, args=(k,)) for k in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert os.listdir(tmp_path) == [path.name]
    back = lightgrad.load(path)
    assert back["i"] == 7 and len(set(back["w"].tolist())) == 1


# ---- large checkpoints: the streamed writer, the background free, parallel reads ---------------------

def _big_state() -> dict[str, Any]:
    # tensors of several hash chunks with sizes that are no multiple of anything, of mixed item sizes
    return {"a": lightgrad.from_numpy(_values(lightgrad.float32, (1_300_001,), seed=1)),
            "b": lightgrad.from_numpy(_values(lightgrad.float64, (3, 1001), seed=2)),
            "c": lightgrad.from_numpy(_values(lightgrad.uint8, (4 << 20,), seed=3)),
            "d": lightgrad.from_numpy(_values(lightgrad.int16, (7,), seed=4)), "e": lightgrad.zeros(0),
            "step": 12, "note": "x" * 5000}


@pytest.fixture
def streamed(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every path save takes the streamed writer, with windows small enough that many 4 MiB hash chunks
    (and the header) are cut between two windows."""
    monkeypatch.setattr(S, "_STREAM_MIN", 0)
    monkeypatch.setattr(S, "_WINDOW", 3 * 4096)


def _join_background() -> None:
    for t in threading.enumerate():
        if t.name == S._FREE_THREAD:
            t.join(10)


@pytest.mark.parametrize("direct", [True, False], ids=["O_DIRECT-if-supported", "page-cache"])
def test_streamed_save_writes_the_same_bytes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, direct: bool) -> None:
    obj = _big_state()
    lightgrad.save(obj, tmp_path / "plain.safetensors")  # below _STREAM_MIN: one buffered write
    monkeypatch.setattr(S, "_STREAM_MIN", 0)
    monkeypatch.setattr(S, "_WINDOW", 3 * 4096)
    if not direct:
        monkeypatch.setattr(S, "_set_direct", lambda fd, on: False)
    path = tmp_path / "streamed.safetensors"
    lightgrad.save(obj, path)
    assert path.read_bytes() == (tmp_path / "plain.safetensors").read_bytes()
    meta, arrays = _file_parts(path)
    assert meta["lightgrad.sha256"] == _reference_checksum(meta, arrays)
    _same(obj, lightgrad.load(path))
    assert sorted(os.listdir(tmp_path)) == ["plain.safetensors", "streamed.safetensors"]


def test_streamed_save_falls_back_when_direct_io_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                            streamed: None) -> None:
    obj = _big_state()
    real, calls = S._pwrite_all, []

    def refuse_first(fd: int, buf: np.ndarray, offset: int) -> None:
        calls.append(offset)
        if len(calls) == 1:  # a file system that takes O_DIRECT but not our alignment
            raise OSError(errno.EINVAL, "Invalid argument")
        real(fd, buf, offset)

    monkeypatch.setattr(S, "_pwrite_all", refuse_first)
    path = tmp_path / "c.safetensors"
    lightgrad.save(obj, path)
    assert len(calls) > 2 and calls[1] == calls[0]  # the refused window was written again
    _same(obj, lightgrad.load(path))
    meta, arrays = _file_parts(path)
    assert meta["lightgrad.sha256"] == _reference_checksum(meta, arrays)


def _open_fds() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


def _previous_checkpoint(tmp_path: Path) -> tuple[Path, bytes, set[str]]:
    """A small checkpoint already on disk, its bytes, and the open descriptors before a save over it."""
    path = tmp_path / "ckpt.safetensors"
    lightgrad.save({"w": lightgrad.ones(1000)}, path)
    return path, path.read_bytes(), _open_fds()


def _assert_untouched(path: Path, before: bytes, fds: set[str]) -> None:
    """After a failed save: the previous checkpoint as it was, and nothing of the save left over."""
    assert path.read_bytes() == before
    assert os.listdir(path.parent) == [path.name]  # no temporary file left behind
    assert _open_fds() == fds  # the temporary file's descriptor is closed
    assert not [t for t in threading.enumerate()  # nor threads of the save
                if t.name.startswith(("lightgrad-hash", "lightgrad-write", "lightgrad-free"))]


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc")
def test_failed_streamed_save_leaves_previous_checkpoint_intact(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                streamed: None) -> None:
    path, before, fds = _previous_checkpoint(tmp_path)
    real, calls = S._pwrite_all, []

    def fail_midway(fd: int, buf: np.ndarray, offset: int) -> None:
        calls.append(offset)
        if len(calls) == 3:
            real(fd, buf[:4096], offset)  # as if the disk filled up halfway through (a whole block: O_DIRECT)
            raise OSError(errno.ENOSPC, "No space left on device")
        real(fd, buf, offset)

    monkeypatch.setattr(S, "_pwrite_all", fail_midway)
    with pytest.raises(OSError, match="No space left"):
        lightgrad.save(_big_state(), path)
    assert 3 <= len(calls) <= 3 + S._RING  # writes already queued may run
    _assert_untouched(path, before, fds)


@pytest.mark.parametrize(("ring", "workers"), [(1, 1), (2, 3)])
def test_streamed_save_waits_for_free_buffers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, streamed: None,
                                              ring: int, workers: int) -> None:
    # so few buffers that the copy tasks keep waiting for the writer (one hash chunk spans ~340 windows),
    # with one copying thread (must not wait on itself) or more threads than buffers
    obj = _big_state()
    with monkeypatch.context() as m:
        m.setattr(S, "_STREAM_MIN", 1 << 40)
        lightgrad.save(obj, tmp_path / "plain.safetensors")
    monkeypatch.setattr(S, "_RING", ring)
    monkeypatch.setattr(S, "_pool", lambda: S.ThreadPoolExecutor(workers, thread_name_prefix="lightgrad-hash"))
    path = tmp_path / "streamed.safetensors"
    lightgrad.save(obj, path)
    assert path.read_bytes() == (tmp_path / "plain.safetensors").read_bytes()
    _same(obj, lightgrad.load(path))


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc")
def test_failed_copy_task_leaves_previous_checkpoint_intact(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                            streamed: None) -> None:
    path, before, fds = _previous_checkpoint(tmp_path)
    real, calls = S._Ring.filled, []

    def fail_midway(ring: Any, k: int) -> None:
        calls.append(k)
        if len(calls) == 50:  # as if copying a piece ran out of memory, with writes and other tasks in flight
            raise MemoryError("out of memory while copying")
        real(ring, k)

    monkeypatch.setattr(S._Ring, "filled", fail_midway)
    with pytest.raises(MemoryError, match="while copying"):  # the error itself, not a task stopped by it
        lightgrad.save(_big_state(), path)
    assert len(calls) >= 50
    _assert_untouched(path, before, fds)


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc")
@pytest.mark.parametrize("stream", [False, True], ids=["buffered", "streamed"])
def test_replaced_file_is_freed_in_the_background(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                  stream: bool) -> None:
    if stream:
        monkeypatch.setattr(S, "_STREAM_MIN", 0)
    path = tmp_path / "ckpt.safetensors"
    lightgrad.save({"w": lightgrad.ones(4)}, path)
    _join_background()
    fds = _open_fds()
    old = os.stat(path)
    lightgrad.save({"w": lightgrad.zeros(4)}, path)  # replaces the first file
    _join_background()
    assert _open_fds() == fds  # its descriptor, held across the rename, is closed
    assert os.stat(path).st_ino != old.st_ino and lightgrad.load(path)["w"].tolist() == [0.0] * 4
    assert os.listdir(tmp_path) == ["ckpt.safetensors"]


def test_save_over_a_folder_or_a_fifo(tmp_path: Path) -> None:
    folder = tmp_path / "folder"
    folder.mkdir()
    with pytest.raises(OSError):
        lightgrad.save({"w": lightgrad.ones(2)}, folder)
    assert os.listdir(tmp_path) == ["folder"]
    if hasattr(os, "mkfifo"):
        fifo = tmp_path / "fifo"
        os.mkfifo(fifo)
        lightgrad.save({"w": lightgrad.ones(2)}, fifo)  # hangs if save opens the FIFO and waits for a writer
        assert lightgrad.load(fifo)["w"].tolist() == [1.0, 1.0]


def test_file_that_shrinks_while_loading(ckpt: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if not hasattr(os, "preadv"):
        pytest.skip("reads through a memory map here")
    monkeypatch.setattr(os, "preadv", lambda fd, buffers, offset: 0)  # as if truncated after the header check
    with pytest.raises(CheckpointError, match="truncated.*got shorter"):
        lightgrad.load(ckpt)


def test_verify_summary(ckpt: Path) -> None:
    info = S.verify(ckpt)
    assert info == {"format_version": 1, "lightgrad_version": lightgrad.__version__, "checksum_verified": True,
                    "tensors": {"i": ("int64", (2,)), "w": ("float32", (3, 2))}}


# ---- resuming training in a fresh process --------------------------------------------------------

_TRAIN = '''
import sys
import numpy as np
import lightgrad
from lightgrad import nn, optim


def build():
    lightgrad.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Dropout(0.3), nn.Linear(16, 1))
    opt = optim.Adam(model.parameters(), lr=0.05)
    sched = optim.lr_scheduler.StepLR(opt, step_size=3, gamma=0.5)
    return model, opt, sched


def train(model, opt, sched, steps):
    model.train()
    for _ in range(steps):
        x = lightgrad.randn(8, 4)  # data and dropout masks both draw from the global generator
        loss = ((model(x) - x.sum(1, keepdim=True)) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()


def checkpoint(model, opt, sched):
    return {"model": model.state_dict(), "optim": opt.state_dict(), "sched": sched.state_dict(),
            "rng": lightgrad.get_rng_state()}


if __name__ == "__main__":
    src, steps, out, restore_rng = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4] == "1"
    model, opt, sched = build()
    lightgrad.manual_seed(12345)  # a fresh process's generator is elsewhere until the state is restored
    ck = lightgrad.load(src)
    model.load_state_dict(ck["model"])
    opt.load_state_dict(ck["optim"])
    sched.load_state_dict(ck["sched"])
    if restore_rng:
        lightgrad.set_rng_state(ck["rng"])
    train(model, opt, sched, steps)
    lightgrad.save(checkpoint(model, opt, sched), out)
'''


def test_resume_in_fresh_process_is_bit_identical(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent(_TRAIN))
    ns = runpy.run_path(str(script))
    n, m = 4, 5
    model, opt, sched = ns["build"]()
    ns["train"](model, opt, sched, n + m)
    uninterrupted = {k: v.numpy().copy() for k, v in model.state_dict().items()}
    final_lr = opt.param_groups[0]["lr"]

    model, opt, sched = ns["build"]()
    ns["train"](model, opt, sched, n)
    lightgrad.save(ns["checkpoint"](model, opt, sched), tmp_path / "step4.safetensors")
    for restore_rng in ("1", "0"):
        out = tmp_path / f"resumed{restore_rng}.safetensors"
        subprocess.run([sys.executable, str(script), str(tmp_path / "step4.safetensors"), str(m), str(out),
                        restore_rng], check=True, capture_output=True, timeout=120)
        resumed = lightgrad.load(out)
        same = [np.array_equal(uninterrupted[k], v.numpy()) and uninterrupted[k].tobytes() == v.numpy().tobytes()
                for k, v in resumed["model"].items()]
        if restore_rng == "1":
            assert all(same) and set(resumed["model"]) == set(uninterrupted)
            assert resumed["optim"]["param_groups"][0]["lr"] == final_lr
        else:  # control: without the RNG state the run diverges, so the test above can fail
            assert not all(same)
