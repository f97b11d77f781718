"""PyTorch's checkpoint files (torch.save's zip and legacy formats) read and written by lightgrad:
bit-for-bit interchange both ways, shared storages and strides, memory maps, whole pickled modules,
and the refusal of malicious or corrupted files without running anything from them."""

from __future__ import annotations

import io
import mmap
import os
import pickle
import struct
import zipfile
from collections import OrderedDict
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import lightgrad
from lightgrad.serialization import CheckpointError
from lightgrad.serialization import torch_format as TF

torch = pytest.importorskip("torch")

# dtype names both libraries have; bfloat16 only where ml_dtypes is installed
NAMES = ["float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
         "uint64", "bool", "complex64", "complex128"]
try:
    import ml_dtypes  # noqa: F401
    NAMES.append("bfloat16")
except ImportError:
    pass


def _torch_values(name: str, n: int = 37, seed: int = 0) -> Any:
    """A torch tensor of every dtype, floats with NaN payloads, infinities and -0."""
    g = torch.Generator().manual_seed(seed)
    dt = getattr(torch, name)
    if name == "bool":
        return torch.rand(n, generator=g) < 0.5
    if dt.is_floating_point or dt.is_complex:
        t = torch.randn(n, generator=g, dtype=torch.float64 if not dt.is_complex else torch.complex128).to(dt)
        if not dt.is_complex:
            bits = {"float16": (torch.int16, 0x7C01), "bfloat16": (torch.int16, 0x7F81),
                    "float32": (torch.int32, 0x7F800123), "float64": (torch.int64, 0x7FF0000000000ABC)}
            ity, payload = bits[name]
            t.view(ity)[0] = payload  # a signalling NaN with a payload: a lossy path would quieten it
            t[1:4] = torch.tensor([float("inf"), -float("inf"), -0.0], dtype=dt)
        return t
    if name in ("uint16", "uint32", "uint64"):
        info = np.iinfo(name)
        a = np.random.default_rng(seed).integers(0, info.max, n, dtype=name, endpoint=True)
        return torch.from_numpy(a)
    info = torch.iinfo(dt)
    return torch.randint(info.min, info.max, (n,), generator=g, dtype=dt)


def _bytes_torch(t: Any) -> bytes:
    return t.detach().contiguous().reshape(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b""


def _bytes_lg(t: lightgrad.Tensor) -> bytes:
    a = t.detach()._data
    return np.ascontiguousarray(a).view(np.uint8).tobytes()


def _same_as_torch(lg: Any, pt: Any) -> None:
    """Deep equality of a lightgrad-loaded object and a torch one: types, dtypes, shapes, strides,
    requires_grad and every byte."""
    if isinstance(pt, torch.Tensor):
        assert isinstance(lg, lightgrad.Tensor), type(lg)
        assert lg.dtype.name == str(pt.dtype).split(".")[1]
        assert tuple(lg.shape) == tuple(pt.shape) and lg.stride() == pt.stride()
        assert lg.requires_grad == pt.requires_grad
        assert isinstance(lg, lightgrad.nn.Parameter) == isinstance(pt, torch.nn.Parameter)
        assert _bytes_lg(lg) == _bytes_torch(pt)
    elif isinstance(pt, torch.Size):
        assert type(lg) is lightgrad.Size and tuple(lg) == tuple(pt)
    elif isinstance(pt, dict):
        assert type(lg) is type(pt) and list(lg) == list(pt)
        for k in pt:
            _same_as_torch(lg[k], pt[k])
    elif isinstance(pt, list | tuple):
        assert type(lg) is type(pt) and len(lg) == len(pt)
        for a, b in zip(lg, pt):
            _same_as_torch(a, b)
    elif isinstance(pt, float) and pt != pt:
        assert lg != lg
    elif isinstance(pt, torch.dtype):
        assert isinstance(lg, lightgrad.dtype) and lg.name == str(pt).split(".")[1]
    else:
        assert type(lg) is type(pt) and lg == pt, (lg, pt)


def _mapped(a: np.ndarray) -> bool:
    """Whether an array's memory comes from a memory map (walking its chain of bases)."""
    b: Any = a
    while b is not None:
        if isinstance(b, mmap.mmap):
            return True
        b = getattr(b, "base", None) if not isinstance(b, memoryview) else b.obj
    return False


def _torch_models() -> dict[str, Any]:
    torch.manual_seed(0)
    models = {"linear": torch.nn.Linear(5, 3), "conv": torch.nn.Conv2d(3, 4, 3),
              "bn": torch.nn.BatchNorm2d(4), "lstm": torch.nn.LSTM(6, 5, num_layers=2),
              "emb": torch.nn.Embedding(10, 4, padding_idx=0)}
    models["bn"].train()(torch.randn(2, 4, 5, 5))  # running stats and num_batches_tracked off their defaults
    return models


# ---- torch -> lightgrad ------------------------------------------------------------------------------

def test_torch_state_dicts_load_bit_for_bit(tmp_path: Path) -> None:
    for name, m in _torch_models().items():
        path = tmp_path / f"{name}.pth"
        torch.save(m.state_dict(), path)
        sd = lightgrad.load(path)
        _same_as_torch(sd, m.state_dict())
    bn = lightgrad.load(tmp_path / "bn.pth")
    assert bn["num_batches_tracked"].dtype == lightgrad.int64 and bn["num_batches_tracked"].item() == 1


def test_torch_optimizer_state_dicts(tmp_path: Path) -> None:
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 2)
    for opt in (torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9),
                torch.optim.Adam(model.parameters(), lr=1e-3, betas=(0.8, 0.99))):
        for _ in range(2):
            opt.zero_grad()
            model(torch.randn(3, 4)).sum().backward()
            opt.step()
        torch.save(opt.state_dict(), tmp_path / "opt.pt")
        got = lightgrad.load(tmp_path / "opt.pt")
        _same_as_torch(got, opt.state_dict())
    assert got["state"][0]["step"].dtype == lightgrad.float32  # Adam's step is a tensor in torch 2
    assert got["param_groups"][0]["betas"] == (0.8, 0.99)


def test_every_dtype_from_torch(tmp_path: Path) -> None:
    obj = {"nested": {name: _torch_values(name) for name in NAMES}, "scalar": torch.tensor(2.5),
           "empty": torch.zeros(0, 3), "list": [torch.arange(3), None, 1.5, "s", True], "dtype": torch.float16,
           "size": torch.Size([2, 3]), "tuple": (1, (2, 3)), "int_keys": {0: 1, 7: 2}}
    for legacy in (False, True):
        torch.save(obj, tmp_path / "all.pt", _use_new_zipfile_serialization=not legacy)
        _same_as_torch(lightgrad.load(tmp_path / "all.pt"), obj)


def test_torch_views_share_one_storage(tmp_path: Path) -> None:
    t = torch.arange(12, dtype=torch.float32)
    for legacy in (False, True):
        torch.save({"a": t, "b": t[1:], "c": t.view(3, 4).T}, tmp_path / "v.pt",
                   _use_new_zipfile_serialization=not legacy)
        got = lightgrad.load(tmp_path / "v.pt")
        a, b, c = got["a"], got["b"], got["c"]
        assert np.shares_memory(a._data, b._data) and np.shares_memory(a._data, c._data)
        assert c.stride() == (1, 4) and c.shape == (4, 3)
        a[5] = 100.0  # one storage: a write through one tensor is seen through the others
        assert b[4].item() == 100.0 and c[1, 1].item() == 100.0


def test_torch_non_contiguous_tensors(tmp_path: Path) -> None:
    t = torch.randn(3, 5)
    torch.save({"T": t.T, "step": t[:, ::2], "exp": torch.ones(3, 1).expand(3, 4)}, tmp_path / "s.pt")
    got = lightgrad.load(tmp_path / "s.pt")
    assert got["T"].stride() == (1, 5) and got["step"].stride() == (5, 2) and got["exp"].stride() == (1, 0)
    assert np.array_equal(got["T"].numpy(), t.T.numpy()) and np.array_equal(got["step"].numpy(), t[:, ::2].numpy())
    assert np.array_equal(got["exp"].numpy(), np.ones((3, 4), np.float32))


def test_torch_file_objects_and_bytesio(tmp_path: Path) -> None:
    buf = io.BytesIO()
    torch.save({"w": torch.arange(4)}, buf)
    buf.seek(0)
    assert lightgrad.load(buf)["w"].tolist() == [0, 1, 2, 3]
    with pytest.raises(ValueError, match="f must be a file path in order to use the mmap argument"):
        lightgrad.load(io.BytesIO(buf.getvalue()), mmap=True)


def test_mmap_is_zero_copy(tmp_path: Path) -> None:
    t = torch.randn(1000)
    torch.save({"t": t, "v": t[10:]}, tmp_path / "t.pt")
    lightgrad.save({"t": lightgrad.randn(1000)}, tmp_path / "l.pt")
    for path in (tmp_path / "t.pt", tmp_path / "l.pt"):
        mapped = lightgrad.load(path, mmap=True)["t"]
        assert _mapped(mapped._data) and mapped._data.flags.writeable
        mapped[0] = 5.0  # copy-on-write, as torch's default MAP_PRIVATE: the file is unchanged
        copied = lightgrad.load(path)["t"]
        assert not _mapped(copied._data) and copied[0].item() != 5.0
    got = lightgrad.load(tmp_path / "t.pt", mmap=True)
    assert np.shares_memory(got["t"]._data, got["v"]._data)
    torch.save({"t": t}, tmp_path / "old.pt", _use_new_zipfile_serialization=False)
    with pytest.raises(RuntimeError, match="mmap can only be used with files saved with"):
        lightgrad.load(tmp_path / "old.pt", mmap=True)


def _relocated(path: Path, location: str) -> None:
    """Rewrite a torch.save zip as if its storages were saved from ``location``."""
    with zipfile.ZipFile(path) as z:
        records = {n: z.read(n) for n in z.namelist()}
    pkl = [n for n in records if n.endswith("data.pkl")][0]
    old, new = b"X\x03\x00\x00\x00cpu", b"X" + struct.pack("<I", len(location)) + location.encode()
    assert old in records[pkl]
    records[pkl] = records[pkl].replace(old, new)
    with zipfile.ZipFile(path, "w") as z:
        for n, data in records.items():
            z.writestr(n, data)


def test_map_location(tmp_path: Path) -> None:
    path = tmp_path / "gpu.pt"
    torch.save({"w": torch.ones(3)}, path)
    _relocated(path, "cuda:0")
    with pytest.raises(RuntimeError, match=r"Attempting to deserialize object on a CUDA device but "
                                           r"torch.cuda.is_available\(\) is False"):
        lightgrad.load(path)
    seen = []

    def keep(storage: Any, location: str) -> Any:
        seen.append(location)
        return storage

    for ml in ("cpu", lightgrad.device("cpu"), {"cuda:0": "cpu"}, keep, lambda s, loc: None if False else s):
        assert lightgrad.load(path, map_location=ml)["w"].tolist() == [1.0, 1.0, 1.0]
    assert seen == ["cuda:0"]
    with pytest.raises(RuntimeError, match="CUDA"):
        lightgrad.load(path, map_location={"cuda:1": "cpu"})
    with pytest.raises(RuntimeError, match="Can not safely load weights when explicit pickle_module is specified"):
        lightgrad.load(path, map_location="cpu", pickle_module=pickle)


# ---- lightgrad -> torch ------------------------------------------------------------------------------

def _lg_values(name: str) -> lightgrad.Tensor:
    t = _torch_values(name, seed=1)
    if name != "bfloat16":
        return lightgrad.from_numpy(t.numpy())
    a = t.view(torch.int16).numpy().view(np.dtype(lightgrad.bfloat16.np))
    try:
        return lightgrad.from_numpy(a)
    except TypeError:  # (from_numpy may not take bfloat16 arrays yet: wrap the bits directly)
        return lightgrad.Tensor._make(a)


def test_every_dtype_to_torch(tmp_path: Path) -> None:
    obj = {"nested": {name: _lg_values(name) for name in NAMES}, "scalar": lightgrad.tensor(2.5),
           "empty": lightgrad.zeros(0, 3), "list": [lightgrad.arange(3), None, 1.5, "s", True],
           "dtype": lightgrad.float16, "size": lightgrad.Size([2, 3]), "tuple": (1, (2, 3)), "int_keys": {0: 1, 7: 2},
           "rg": lightgrad.ones(2, requires_grad=True), "bytes": b"\x00\xff", "big": 2 ** 70, "nan": float("nan")}
    for suffix in (".pt", ".pth", ".bin"):
        path = tmp_path / f"all{suffix}"
        lightgrad.save(obj, path)
        with zipfile.ZipFile(path) as z:
            assert z.testzip() is None  # every record's CRC-32 is right
            assert f"all/{TF.SUM}" in z.namelist() and "all/data.pkl" in z.namelist()
        back = torch.load(path, weights_only=True)
        _same_as_torch(lightgrad.load(path), back)
        for name in NAMES:
            assert _bytes_torch(back["nested"][name]) == _bytes_lg(obj["nested"][name])


def test_lightgrad_views_share_one_storage_in_torch(tmp_path: Path) -> None:
    x = lightgrad.arange(12.0).reshape(3, 4)
    lightgrad.save({"x": x, "T": x.T, "row": x[1], "col": x[:, 2]}, tmp_path / "v.pt")
    got = torch.load(tmp_path / "v.pt", weights_only=True)
    ptr = got["x"].untyped_storage().data_ptr()
    assert all(got[k].untyped_storage().data_ptr() == ptr for k in ("T", "row", "col"))
    assert got["T"].stride() == (1, 4) and got["col"].stride() == (4,) and got["col"].storage_offset() == 2
    assert np.array_equal(got["T"].numpy(), x.T.numpy())


def test_small_view_of_a_large_array_saves_its_span(tmp_path: Path) -> None:
    big = lightgrad.zeros(1_000_000)
    lightgrad.save({"v": big[500:510]}, tmp_path / "v.pt")
    assert os.path.getsize(tmp_path / "v.pt") < 10_000  # only the bytes the saved tensors cover
    assert torch.load(tmp_path / "v.pt")["v"].shape == (10,)


def test_torch_model_loads_a_lightgrad_checkpoint(tmp_path: Path) -> None:
    nn = lightgrad.nn
    lightgrad.manual_seed(3)
    lnet = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 3))
    lnet.train()(lightgrad.randn(16, 4))
    lnet.eval()
    lightgrad.save(lnet.state_dict(), tmp_path / "model.pt")
    tnet = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.BatchNorm1d(8), torch.nn.ReLU(), torch.nn.Linear(8, 3))
    tnet.load_state_dict(torch.load(tmp_path / "model.pt", weights_only=True))  # strict: every key fits
    tnet.eval()
    x = np.random.default_rng(0).standard_normal((5, 4)).astype(np.float32)
    with torch.no_grad():
        expected = tnet(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(lnet(lightgrad.from_numpy(x)).detach().numpy(), expected, rtol=1e-6, atol=1e-6)
    # and lightgrad's optimizer state, nested, with int keys and step counts
    opt = lightgrad.optim.Adam(lnet.parameters(), lr=1e-3)
    for _ in range(2):
        opt.zero_grad()
        lnet(lightgrad.randn(3, 4)).sum().backward()
        opt.step()
    ckpt = {"model": lnet.state_dict(), "optim": opt.state_dict(), "epoch": 3}
    lightgrad.save(ckpt, tmp_path / "ckpt.pt")
    _same_as_torch(lightgrad.load(tmp_path / "ckpt.pt"), torch.load(tmp_path / "ckpt.pt", weights_only=True))


def test_parameters_round_trip(tmp_path: Path) -> None:
    p = lightgrad.nn.Parameter(lightgrad.ones(3))
    frozen = lightgrad.nn.Parameter(lightgrad.ones(2), requires_grad=False)
    lightgrad.save({"p": p, "f": frozen, "again": p}, tmp_path / "p.pt")
    t = torch.load(tmp_path / "p.pt", weights_only=True)
    assert isinstance(t["p"], torch.nn.Parameter) and t["p"].requires_grad and not t["f"].requires_grad
    assert t["again"] is t["p"]  # one object saved twice stays one object
    back = lightgrad.load(tmp_path / "p.pt")
    assert type(back["p"]) is lightgrad.nn.Parameter and back["again"] is back["p"]


def test_file_objects_follow_the_name(tmp_path: Path) -> None:
    with open(tmp_path / "f.pt", "wb") as fh:
        lightgrad.save({"w": lightgrad.ones(2)}, fh)
    assert (tmp_path / "f.pt").read_bytes()[:4] == b"PK\x03\x04"
    assert torch.load(tmp_path / "f.pt", weights_only=True)["w"].tolist() == [1.0, 1.0]
    buf = io.BytesIO()
    lightgrad.save({"w": lightgrad.ones(2)}, buf)  # a nameless stream of state: safetensors, as before
    assert buf.getvalue()[:4] != b"PK\x03\x04"
    buf.seek(0)
    assert lightgrad.load(buf)["w"].tolist() == [1.0, 1.0]


def test_zip64_records(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(TF, "_ZIP64_LIMIT", 100)  # as if every size and offset passed 4 GiB
    x = lightgrad.randn(300)
    lightgrad.save({"x": x, "y": lightgrad.arange(5)}, tmp_path / "z.pt")
    with zipfile.ZipFile(tmp_path / "z.pt") as z:
        assert z.testzip() is None
    assert np.array_equal(torch.load(tmp_path / "z.pt", weights_only=True)["x"].numpy(), x.numpy())
    assert np.array_equal(lightgrad.load(tmp_path / "z.pt")["x"].numpy(), x.numpy())


def test_records_are_64_byte_aligned(tmp_path: Path) -> None:
    lightgrad.save({"a": lightgrad.ones(3), "b": lightgrad.ones(5, dtype=lightgrad.float64)}, tmp_path / "a.pt")
    raw = (tmp_path / "a.pt").read_bytes()
    with zipfile.ZipFile(tmp_path / "a.pt") as z:
        for info in z.infolist():
            n, e = struct.unpack_from("<HH", raw, info.header_offset + 26)
            assert (info.header_offset + 30 + n + e) % 64 == 0, info.filename


# ---- whole modules ------------------------------------------------------------------------------------

def test_whole_module_needs_weights_only_false(tmp_path: Path) -> None:
    nn = lightgrad.nn
    model = nn.Sequential(nn.Linear(4, 3), nn.ReLU())
    path = tmp_path / "model.pt"
    lightgrad.save(model, path)
    with pytest.raises(CheckpointError, match=r"(?s)model\.pt.*Weights only load failed.*`weights_only` set to "
                                              r"`False`.*GLOBAL lightgrad\..*Sequential was not an allowed global"):
        lightgrad.load(path)
    back = lightgrad.load(path, weights_only=False)
    assert type(back) is nn.Sequential and back[0].weight is not model[0].weight
    x = lightgrad.randn(2, 4)
    assert np.array_equal(back(x).detach().numpy(), model(x).detach().numpy())
    assert type(back[0].weight) is nn.Parameter and back[0].weight.requires_grad
    with pytest.raises(pickle.UnpicklingError, match="Weights only load failed"):
        torch.load(path)  # and PyTorch refuses it the same way
    buf = io.BytesIO()
    lightgrad.save(model, buf)  # a nameless stream: torch.save's format, as PyTorch writes
    buf.seek(0)
    assert type(lightgrad.load(buf, weights_only=False)) is nn.Sequential
    with pytest.raises(TypeError, match="state_dict"):
        lightgrad.save(model, tmp_path / "model.safetensors")  # safetensors stays pickle-free


def test_torch_whole_module_is_refused_by_default(tmp_path: Path) -> None:
    torch.save(torch.nn.Linear(2, 3), tmp_path / "m.pt")
    with pytest.raises(CheckpointError, match=r"GLOBAL torch\.nn\.modules\.linear\.Linear was not an allowed"):
        lightgrad.load(tmp_path / "m.pt")


# ---- malicious and corrupted files -------------------------------------------------------------------

class _System:
    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> Any:
        return (os.system, (f"touch {self.marker}",))


class _Exec(_System):
    def __reduce__(self) -> Any:
        return (exec, (f"open({str(self.marker)!r}, 'w').close()",))


class _Eval(_System):
    def __reduce__(self) -> Any:
        return (eval, (f"open({str(self.marker)!r}, 'w')",))


class _Touch(_System):
    def __reduce__(self) -> Any:
        return (Path.touch, (self.marker,))


def _zip(path: Path, records: dict[str, bytes], prefix: str = "archive") -> None:
    with zipfile.ZipFile(path, "w") as z:
        for name, data in records.items():
            z.writestr(f"{prefix}/{name}", data)


def _getattr_trick(marker: Path) -> bytes:
    # getattr(builtins, 'exec')(...) written by hand: GLOBAL builtins getattr, then REDUCE twice
    code = f"open({str(marker)!r}, 'w').close()".encode()
    return (b"\x80\x02cbuiltins\ngetattr\nq\x00cbuiltins\n__dict__\nX\x04\x00\x00\x00exec\x86R"
            b"X" + struct.pack("<I", len(code)) + code + b"\x85R.")


@pytest.mark.parametrize("proto", range(6))
def test_malicious_pickles_run_nothing(tmp_path: Path, proto: int) -> None:
    marker = tmp_path / "pwned"
    # (named as PyTorch names them: builtins without their module)
    cases = {"GLOBAL posix.system": _System(marker), "GLOBAL exec": _Exec(marker), "GLOBAL eval": _Eval(marker),
             "GLOBAL (pathlib|getattr)": _Touch(marker)}
    for glob, evil in cases.items():
        payload = pickle.dumps({"w": evil}, protocol=proto)
        for legacy in (True, False):
            path = tmp_path / ("evil.pt" if legacy else "evil.zip")
            if legacy:
                path.write_bytes(payload)
            else:
                _zip(path, {"data.pkl": payload, "byteorder": b"little"})
            for wo in (True, None):
                with pytest.raises(CheckpointError, match=r"(?s)evil\.(pt|zip).*" + glob.replace(".", r"\.", 1)):
                    lightgrad.load(path, weights_only=wo)
            assert not marker.exists()
    path = tmp_path / "trick.pt"
    path.write_bytes(_getattr_trick(marker))
    with pytest.raises(CheckpointError, match=r"GLOBAL getattr was not an allowed global"):
        lightgrad.load(path)
    assert not marker.exists()


def _storage_pid(key: str = "0", numel: int = 4) -> bytes:
    return (b"((X\x07\x00\x00\x00storagectorch\nFloatStorage\nX" + struct.pack("<I", len(key)) + key.encode()
            + b"X\x03\x00\x00\x00cpu" + b"J" + struct.pack("<i", numel) + b"tQ")


def _tensor_pkl(offset: int, size: tuple[int, ...], stride: tuple[int, ...], key: str = "0", numel: int = 4) -> bytes:
    ints = lambda xs: b"(" + b"".join(b"J" + struct.pack("<i", v) for v in xs) + b"t"  # noqa: E731
    return (b"\x80\x02ctorch._utils\n_rebuild_tensor_v2\n(" + _storage_pid(key, numel)[1:]
            + b"J" + struct.pack("<i", offset) + ints(size) + ints(stride)
            + b"\x89ccollections\nOrderedDict\n)RtR.")


def _pt(path: Path, pkl: bytes, data: bytes = b"\0" * 16, order: bytes = b"little") -> Path:
    _zip(path, {"data.pkl": pkl, "byteorder": order, "data/0": data, "version": b"3\n"})
    return path


def test_crafted_tensors_are_checked(tmp_path: Path) -> None:
    good = _pt(tmp_path / "ok.pt", _tensor_pkl(1, (3,), (1,)))
    assert lightgrad.load(good).shape == (3,)
    cases = {
        "outside": (_tensor_pkl(2, (3,), (1,)), "reaches element 4 of storage '0', which has 4 elements"),
        "stride": (_tensor_pkl(0, (2, 2), (3, 1)), "reaches element 4"),
        "negative": (_tensor_pkl(-1, (1,), (1,)), "negative"),
        "missing": (_tensor_pkl(0, (1,), (1,), key="7"), "record 'data/7' is missing"),
        "size": (_tensor_pkl(0, (1,), (1,), numel=5), "record 'data/0' has 16 bytes, but its storage needs 20"),
        "args": (b"\x80\x02ctorch._utils\n_rebuild_tensor_v2\n(K\x01tR.", "TypeError"),
        "newobj": (b"\x80\x02ctorch._utils\n_rebuild_tensor_v2\n)\x81.", "NEWOBJ"),
        "build": (b"\x80\x02ctorch._utils\n_rebuild_tensor_v2\n}X\x02\x00\x00\x00fnNsb.", "no attribute '__dict__'"),
        "slots": (b"\x80\x02ctorch._utils\n_rebuild_tensor_v2\nN}X\x02\x00\x00\x00fnNs\x86b.", "can't be changed"),
        "inst": (b"\x80\x02(ios\nsystem\nX\x04\x00\x00\x00true.", "posix|os.system"),
        "stack_global": (b"\x80\x04\x8c\x02os\x8c\x06system\x93\x8c\x04true\x85R.", "os.system whose module os is blocked"),
        "obj": (b"\x80\x02(ccollections\ndefaultdict\no.", "GLOBAL collections.defaultdict was not an allowed"),
        "pid": (b"\x80\x02X\x03\x00\x00\x00abcQ.", "persistent_load id must be tuple"),
        "pid_kind": (b"\x80\x02X\x06\x00\x00\x00moduleK\x01\x86Q.", "Only persistent_load of storage"),
        "truncated": (_tensor_pkl(0, (1,), (1,))[:-9], "data.pkl"),
    }
    for name, (pkl, msg) in cases.items():
        with pytest.raises(CheckpointError, match=msg):
            lightgrad.load(_pt(tmp_path / f"{name}.pt", pkl))
    with pytest.raises(CheckpointError, match="Unknown endianness type"):
        lightgrad.load(_pt(tmp_path / "order.pt", _tensor_pkl(0, (1,), (1,)), order=b"middle"))
    big = np.arange(4, dtype=">f4").tobytes()
    assert lightgrad.load(_pt(tmp_path / "be.pt", _tensor_pkl(0, (4,), (1,)), big, b"big")).tolist() == [0, 1, 2, 3]


def test_corrupted_archives(tmp_path: Path) -> None:
    path = tmp_path / "c.pt"
    torch.save({"w": torch.randn(100), "b": torch.arange(10)}, path)
    raw = path.read_bytes()
    for cut in (10, 200, len(raw) // 2, len(raw) - 30, len(raw) - 1):
        path.write_bytes(raw[:cut])
        with pytest.raises(CheckpointError, match=r"c\.pt"):
            lightgrad.load(path)
    flipped = bytearray(raw)
    flipped[raw.index(b"c/data/0") + 200] ^= 1  # a bit inside the first storage's data
    path.write_bytes(bytes(flipped))
    with pytest.raises(CheckpointError, match=r"record 'data/0' is corrupted: its CRC-32 does not match"):
        lightgrad.load(path)
    with zipfile.ZipFile(tmp_path / "nodata.pt", "w") as z:
        z.writestr("archive/byteorder", b"little")
    with pytest.raises(CheckpointError, match="record 'data.pkl' is missing"):
        lightgrad.load(tmp_path / "nodata.pt")
    (tmp_path / "plain.pt").write_bytes(pickle.dumps({"a": 1}, protocol=2))
    with pytest.raises(CheckpointError, match="Invalid magic number"):
        lightgrad.load(tmp_path / "plain.pt")


def test_checksum_mismatch_is_detected(tmp_path: Path) -> None:
    path = tmp_path / "ck.pt"
    lightgrad.save({"w": lightgrad.randn(1000)}, path)
    raw = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as z:
        info = z.getinfo("ck/data/0")
    n, e = struct.unpack_from("<HH", raw, info.header_offset + 26)
    raw[info.header_offset + 30 + n + e + 17] ^= 0x40
    path.write_bytes(bytes(raw))
    for mm in (False, True):
        with pytest.raises(CheckpointError, match=r"ck\.pt.*checksum mismatch"):
            lightgrad.load(path, mmap=mm)


def test_failed_save_leaves_previous_file_intact(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "ckpt.pt"
    lightgrad.save({"w": lightgrad.ones(1000)}, path)
    before = path.read_bytes()
    real = TF._ZipWriter.record

    def fail_on_data(self: Any, name: str, parts: Any, size: int) -> None:
        if "/data/" in name:
            raise OSError(28, "No space left on device")
        real(self, name, parts, size)

    monkeypatch.setattr(TF._ZipWriter, "record", fail_on_data)
    with pytest.raises(OSError, match="No space left"):
        lightgrad.save({"w": lightgrad.zeros(5000)}, path)
    assert path.read_bytes() == before and os.listdir(tmp_path) == ["ckpt.pt"]
    monkeypatch.setattr(TF._ZipWriter, "record", real)
    lightgrad.save(OrderedDict(w=lightgrad.zeros(3)), path)
    assert torch.load(path)["w"].tolist() == [0.0, 0.0, 0.0]


def test_legacy_format_written(tmp_path: Path) -> None:
    x = lightgrad.arange(6.0).reshape(2, 3)
    obj = {"x": x, "T": x.T, "h": _lg_values("float16"), "n": 3, "p": lightgrad.nn.Parameter(lightgrad.ones(2))}
    path = tmp_path / "old.pt"
    lightgrad.save(obj, path, _use_new_zipfile_serialization=False)
    assert path.read_bytes()[:3] == b"\x80\x02\x8a"  # the magic number's pickle, not a zip
    back = torch.load(path, weights_only=True)
    assert back["T"].untyped_storage().data_ptr() == back["x"].untyped_storage().data_ptr()
    _same_as_torch(lightgrad.load(path), back)
    # (uint16/32/64 are written as torch writes them, over an UntypedStorage, which torch 2.13's own
    # legacy reader can't read back; lightgrad can)
    lightgrad.save({"u": _lg_values("uint16")}, path, _use_new_zipfile_serialization=False)
    assert lightgrad.load(path)["u"].tolist() == _lg_values("uint16").tolist()
    with pytest.raises(TypeError, match="legacy format holds state only"):
        lightgrad.save(lightgrad.nn.ReLU(), path, _use_new_zipfile_serialization=False)
