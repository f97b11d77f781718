"""The examples: each trains under lightgrad, and matches PyTorch step for step from the same start."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from helpers import torch

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
sys.path.insert(0, str(EXAMPLES))


def run(monkeypatch: Any, name: str, framework: str, **kwargs: Any) -> Any:
    monkeypatch.setenv("FRAMEWORK", framework)
    module = importlib.reload(importlib.import_module(name))
    return module.main(log=False, **kwargs)


PARITY = [
    ("xor", {"epochs": 20}),
    ("regression", {"steps": 20}),
    ("lstm_sequence", {"steps": 5}),
    ("autoencoder", {"steps": 5}),
    ("char_transformer", {"steps": 5, "sample_chars": 0}),
    ("digits_cnn", {"epochs": 1, "max_steps": 5, "deterministic": True}),
]


@pytest.mark.skipif(torch is None, reason="PyTorch not installed")
@pytest.mark.parametrize("name,kwargs", PARITY, ids=[p[0] for p in PARITY])
def test_first_steps_match_pytorch(monkeypatch: Any, tmp_path: Path, name: str, kwargs: dict[str, Any]) -> None:
    if name == "digits_cnn":
        kwargs = {**kwargs, "out": str(tmp_path)}
    ours = run(monkeypatch, name, "lightgrad", **kwargs)
    theirs = run(monkeypatch, name, "torch", **kwargs)
    if isinstance(ours, dict):
        ours, theirs = ours["losses"], theirs["losses"]
    assert len(ours) == len(theirs) > 0
    np.testing.assert_allclose(ours, theirs, rtol=1e-4)


def test_xor_converges_with_arenas(monkeypatch: Any) -> None:
    losses = run(monkeypatch, "xor", "lightgrad")
    assert len(losses) == 500 and losses[-1] < 0.05


def test_regression_fits(monkeypatch: Any) -> None:
    losses = run(monkeypatch, "regression", "lightgrad")
    assert np.mean(losses[-20:]) < 0.05 < losses[0]


def test_lstm_learns_sine(monkeypatch: Any) -> None:
    losses = run(monkeypatch, "lstm_sequence", "lightgrad", steps=100)
    assert losses[-1] < 0.05 < losses[0]


def test_autoencoder_reconstructs(monkeypatch: Any) -> None:
    losses = run(monkeypatch, "autoencoder", "lightgrad", steps=150)
    assert np.isfinite(losses).all() and losses[-1] < 0.5 * losses[0]


def test_char_transformer_learns_the_language(monkeypatch: Any) -> None:
    losses = run(monkeypatch, "char_transformer", "lightgrad", steps=150, sample_chars=0)
    assert np.mean(losses[-10:]) < 1.0 < losses[0]


def test_demo_reaches_97_percent_and_reloads(monkeypatch: Any, tmp_path: Path) -> None:
    result = run(monkeypatch, "digits_cnn", "lightgrad", out=str(tmp_path))
    assert result["test_acc"] >= 0.97
    assert result["agree"] == 1.0
    assert (tmp_path / "digits_cnn.safetensors").exists() and (tmp_path / "digits_cnn_curves.png").exists()
