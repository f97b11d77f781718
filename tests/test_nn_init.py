"""nn.init against PyTorch: gains, fans, the initialisers' statistics, eye_ and dirac_, errors."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from helpers import assert_error_like_torch, needs_torch, torch

import lightgrad as lg


@needs_torch
def test_init_statistics_and_gain() -> None:
    lg.manual_seed(0)
    w = lg.empty(400, 300)
    for name in ("linear", "relu", "tanh", "selu", "sigmoid"):
        assert lg.nn.init.calculate_gain(name) == pytest.approx(torch.nn.init.calculate_gain(name))
    assert lg.nn.init.calculate_gain("leaky_relu", 0.2) == pytest.approx(torch.nn.init.calculate_gain("leaky_relu", 0.2))
    assert lg.nn.init._calculate_fan_in_and_fan_out(lg.empty(8, 3, 5, 5)) == \
        torch.nn.init._calculate_fan_in_and_fan_out(torch.empty(8, 3, 5, 5))
    lg.nn.init.kaiming_uniform_(w, a=5 ** 0.5)
    bound = np.sqrt(1 / 300)  # gain sqrt(2 / 6) * sqrt(3 / fan_in)
    a = w.numpy()
    assert np.abs(a).max() <= bound and np.abs(a).max() > 0.99 * bound
    lg.nn.init.kaiming_normal_(w, mode="fan_out", nonlinearity="relu")
    assert w.numpy().std() == pytest.approx(np.sqrt(2 / 400), rel=0.02)
    lg.nn.init.xavier_uniform_(w, gain=2.0)
    assert np.abs(w.numpy()).max() <= 2.0 * np.sqrt(6 / 700)
    lg.nn.init.xavier_normal_(w)
    assert w.numpy().std() == pytest.approx(np.sqrt(2 / 700), rel=0.02)
    lg.nn.init.trunc_normal_(w, std=2.0, a=-1.0, b=1.5)
    assert w.numpy().min() >= -1.0 and w.numpy().max() <= 1.5
    lg.nn.init.orthogonal_(w)
    np.testing.assert_allclose(w.numpy().T @ w.numpy(), np.eye(300), atol=1e-4)
    lg.nn.init.eye_(w)
    np.testing.assert_array_equal(w.numpy(), np.eye(400, 300))
    lg.nn.init.constant_(w, 0.3)
    np.testing.assert_allclose(w.numpy(), 0.3)
    k = lg.empty(4, 2, 3, 3)
    lg.nn.init.dirac_(k, groups=2)
    tk = torch.empty(4, 2, 3, 3)
    torch.nn.init.dirac_(tk, groups=2)
    np.testing.assert_array_equal(k.numpy(), tk.numpy())
    with pytest.raises(ValueError):
        lg.nn.init.calculate_gain("nope")
    with pytest.raises(ValueError):
        lg.nn.init.xavier_uniform_(lg.empty(3))


def test_init_modifies_in_place_without_graph() -> None:
    lin = lg.nn.Linear(3, 2)
    w = lin.weight
    ptr = w.data_ptr()
    lg.nn.init.normal_(w)  # a leaf that requires grad: allowed because init runs under no_grad
    assert lin.weight is w and w.data_ptr() == ptr and w.grad_fn is None and w.requires_grad


@needs_torch
@pytest.mark.parametrize("shape", [(3, 5), (5, 3), (4, 4)])
def test_eye_(shape: tuple[int, ...]) -> None:
    w = lg.nn.init.eye_(lg.empty(*shape))
    np.testing.assert_array_equal(w.numpy(), torch.nn.init.eye_(torch.empty(*shape)).numpy())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # PyTorch's spelling without "_" is deprecated
        np.testing.assert_array_equal(lg.nn.init.eye(lg.empty(*shape)).numpy(),
                                      torch.nn.init.eye(torch.empty(*shape)).numpy())


@needs_torch
@pytest.mark.parametrize("shape,groups", [((4, 3, 3), 1), ((6, 2, 3, 3), 2), ((4, 6, 1, 3, 2), 2), ((2, 5, 3, 3), 1)])
def test_dirac_(shape: tuple[int, ...], groups: int) -> None:
    w = lg.nn.init.dirac_(lg.empty(*shape), groups)
    np.testing.assert_array_equal(w.numpy(), torch.nn.init.dirac_(torch.empty(*shape), groups).numpy())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        np.testing.assert_array_equal(lg.nn.init.dirac(lg.empty(*shape), groups).numpy(),
                                      torch.nn.init.dirac(torch.empty(*shape), groups).numpy())


MESSAGE_ERRORS: list[tuple[str, Callable[[Any], Any]]] = [
    ("eye_dims", lambda T: T.nn.init.eye_(T.zeros(2, 3, 4))),
    ("dirac_dims", lambda T: T.nn.init.dirac_(T.zeros(2, 3))),
    ("dirac_groups", lambda T: T.nn.init.dirac_(T.zeros(3, 3, 3), 2)),
]


@needs_torch
@pytest.mark.parametrize("name,call", MESSAGE_ERRORS, ids=[e[0] for e in MESSAGE_ERRORS])
def test_errors_match_torch(name: str, call: Callable[[Any], Any]) -> None:
    assert_error_like_torch(name, call, set())
