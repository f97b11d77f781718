"""lightgrad.utils.tensorboard.SummaryWriter: event files written with tensorboardX, read back
record by record (TFRecord framing, Event protobufs) and checked for tags, steps and values."""

from __future__ import annotations

import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import lightgrad as lg

pytest.importorskip("tensorboardX")
from tensorboardX.proto.event_pb2 import Event  # noqa: E402

from lightgrad.utils.tensorboard import SummaryWriter  # noqa: E402


def _events(logdir: Path) -> list[tuple[str, Event]]:
    """Every (run directory, Event) under logdir, from the TFRecord framing: length (8 bytes), its
    CRC (4), the record, its CRC (4)."""
    out = []
    for path in sorted(logdir.rglob("events.out.tfevents.*")):
        data = path.read_bytes()
        i = 0
        while i < len(data):
            (n,) = struct.unpack("<Q", data[i:i + 8])
            out.append((str(path.parent.relative_to(logdir)), Event.FromString(data[i + 12:i + 12 + n])))
            i += 12 + n + 4
    return out


def _values(logdir: Path) -> dict[tuple[str, str, int], object]:
    return {(run, v.tag, ev.step): v for run, ev in _events(logdir) for v in ev.summary.value}


def test_scalars(tmp_path: Path) -> None:
    with SummaryWriter(str(tmp_path)) as w:
        for step in range(3):
            w.add_scalar("loss", lg.tensor(1.0 / (step + 1)), step)
        w.add_scalar("lr", 0.5, 7)
        w.add_scalars("pair", {"a": lg.tensor(1.5), "b": 2.5}, 1)
    vals = _values(tmp_path)
    assert [round(vals[(".", "loss", s)].simple_value, 6) for s in range(3)] == [1.0, 0.5, round(1 / 3, 6)]
    assert vals[(".", "lr", 7)].simple_value == 0.5
    pair = {run: v.simple_value for (run, tag, _), v in vals.items() if tag == "pair"}
    assert sorted(pair.values()) == [1.5, 2.5] and len(pair) == 2  # one run directory per curve


def test_histogram(tmp_path: Path) -> None:
    data = lg.tensor(np.arange(100, dtype=np.float32))
    with SummaryWriter(str(tmp_path)) as w:
        w.add_histogram("weights", data, 3)
    h = _values(tmp_path)[(".", "weights", 3)].histo
    assert (h.min, h.max, h.num, h.sum) == (0.0, 99.0, 100, 4950.0)
    assert sum(h.bucket) == 100


@pytest.mark.parametrize("fmt,shape", [("CHW", (3, 4, 6)), ("HWC", (4, 6, 3)), ("HW", (4, 6))])
def test_image(tmp_path: Path, fmt: str, shape: tuple[int, ...]) -> None:
    with SummaryWriter(str(tmp_path)) as w:
        w.add_image("img", lg.rand(*shape), 0, dataformats=fmt)
    img = _values(tmp_path)[(".", "img", 0)].image
    assert (img.height, img.width) == (4, 6)
    assert img.encoded_image_string.startswith(b"\x89PNG")


def test_images_grid(tmp_path: Path) -> None:
    with SummaryWriter(str(tmp_path)) as w:
        w.add_images("batch", lg.rand(4, 3, 8, 8), 2)
    img = _values(tmp_path)[(".", "batch", 2)].image
    assert img.height >= 8 and img.width >= 8 and img.encoded_image_string.startswith(b"\x89PNG")


def test_text_and_hparams(tmp_path: Path) -> None:
    with SummaryWriter(str(tmp_path)) as w:
        w.add_text("note", "hello **world**", 0)
        w.add_hparams({"lr": 0.1, "batch": lg.tensor(32)}, {"acc": lg.tensor(0.75)}, run_name="trial")
    vals = _values(tmp_path)
    assert b"hello **world**" in vals[(".", "note/text_summary", 0)].tensor.string_val[0]
    assert vals[("trial", "acc", 0)].simple_value == 0.75
    tags = {tag for (_, tag, _) in vals}
    assert {"_hparams_/experiment", "_hparams_/session_start_info"} <= tags


def test_add_graph_and_flush(tmp_path: Path) -> None:
    w = SummaryWriter(str(tmp_path))
    with pytest.raises(NotImplementedError, match="TorchScript"):
        w.add_graph(lg.nn.Linear(2, 2), lg.ones(1, 2))
    w.add_scalar("x", 1.0, 0)
    w.flush()
    assert (".", "x", 0) in _values(tmp_path)
    assert w.get_logdir() == str(tmp_path)
    w.close()


def test_missing_tensorboardx_names_the_install() -> None:
    code = ("import sys; sys.modules['tensorboardX'] = None\n"
            "from lightgrad.utils.tensorboard import SummaryWriter\n"
            "try:\n    SummaryWriter('/tmp/never')\nexcept ImportError as e:\n    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "pip install tensorboardX" in out.stdout
