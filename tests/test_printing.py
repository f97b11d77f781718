"""Tensor printing and set_printoptions, compared with PyTorch's text."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

import lightgrad as lg

torch = pytest.importorskip("torch")


@pytest.fixture(autouse=True)
def _default_options() -> Iterator[None]:
    yield
    lg.set_printoptions(profile="default")
    torch.set_printoptions(profile="default")


def _text(lib: Any, options: dict[str, Any], make: Any) -> str:
    lib.set_printoptions(**options)
    try:
        return repr(make(lib)).replace("torch.", "").replace("lightgrad.", "")
    finally:
        lib.set_printoptions(profile="default")


CASES = [
    ({}, lambda T: T.tensor([1.0, 2000.0])),  # integral values over 3 orders of magnitude: scientific
    ({}, lambda T: T.tensor([1e-5, 1.0])),
    ({}, lambda T: T.tensor([1.0, 2.5, -3.25])),
    ({"precision": 2}, lambda T: T.tensor([1.0 / 3, 2.0])),
    ({"precision": 2, "sci_mode": False}, lambda T: T.tensor([1e-5, 1.0])),
    ({"sci_mode": True}, lambda T: T.tensor([1.5, 2.0])),
    ({"profile": "full"}, lambda T: T.arange(1200.0)[-3:]),
    ({"threshold": 5}, lambda T: T.arange(10.0)),
    ({"threshold": 5}, lambda T: T.arange(100.0).reshape(10, 10)),
    ({"threshold": 5, "edgeitems": 1}, lambda T: T.arange(10)),
    ({"profile": "short"}, lambda T: T.arange(10.0) / 3),
    ({"linewidth": 30}, lambda T: T.arange(10.0) / 3),
]


@pytest.mark.parametrize("i", range(len(CASES)))
def test_printing_matches_pytorch(i: int) -> None:
    options, make = CASES[i]
    assert _text(lg, options, make) == _text(torch, options, make)


def test_full_profile_prints_every_entry() -> None:
    lg.set_printoptions(profile="full")
    assert "..." not in repr(lg.arange(2000))
    lg.set_printoptions(profile="default")
    assert "..." in repr(lg.arange(2000))


def test_deterministic_algorithms_setting_is_answered_truthfully() -> None:
    assert not lg.are_deterministic_algorithms_enabled()
    lg.use_deterministic_algorithms(True, warn_only=True)
    try:
        assert lg.are_deterministic_algorithms_enabled() and lg.is_deterministic_algorithms_warn_only_enabled()
    finally:
        lg.use_deterministic_algorithms(False)
    assert not lg.are_deterministic_algorithms_enabled()
