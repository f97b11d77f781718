"""torch.amp: autocast's state and checks as PyTorch's (its casts are documented as not done), and
GradScaler("cpu") step for step against PyTorch's."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

import lightgrad as lg

torch = pytest.importorskip("torch")


def _state(T: Any, device_type: str, **kw: Any) -> tuple[Any, ...]:
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        with T.autocast(device_type, **kw):
            inside = (T.is_autocast_enabled(device_type), str(T.get_autocast_dtype(device_type)).split(".")[-1],
                      T.is_autocast_enabled())
    messages = sorted(str(m.message) for m in w if "lightgrad's autocast" not in str(m.message))
    return inside, T.is_autocast_enabled(device_type), messages


@pytest.mark.parametrize("device_type, kw", [
    ("cpu", {"dtype": "float16"}), ("cpu", {"dtype": "float32"}), ("cpu", {"dtype": "float64"}),
    ("cpu", {"dtype": "float16", "enabled": False}), ("cuda", {}), ("mps", {}),
])
def test_autocast_state_and_warnings_match_pytorch(device_type: str, kw: dict[str, Any]) -> None:
    def args(T: Any) -> dict[str, Any]:
        return {k: getattr(T, v) if k == "dtype" else v for k, v in kw.items()}
    assert _state(lg, device_type, **args(lg)) == _state(torch, device_type, **args(torch))


def test_autocast_nesting_restores_and_default_dtype() -> None:
    assert str(lg.get_autocast_dtype("cuda")).split(".")[-1] == str(torch.get_autocast_dtype("cuda")).split(".")[-1]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with lg.autocast("cpu", dtype=lg.float16):
            with lg.autocast("cpu", enabled=False):
                assert not lg.is_autocast_enabled("cpu")
            assert lg.is_autocast_enabled("cpu")
    assert not lg.is_autocast_enabled("cpu")


def test_autocast_argument_errors_match_pytorch() -> None:
    for bad, exc in ((3, ValueError), ("foo", RuntimeError)):
        msgs = []
        for T in (torch, lg):
            with pytest.raises(exc) as e:
                T.autocast(bad)
            msgs.append(str(e.value))
        assert msgs[0] == msgs[1]


def test_autocast_is_a_documented_noop_that_warns_once() -> None:
    x = lg.randn(3, 3)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        with lg.autocast("cpu", dtype=lg.float16):
            y = x @ x
        with lg.autocast("cpu", dtype=lg.float16):
            pass
    assert y.dtype == lg.float32  # (PyTorch: float16) - the documented difference
    noted = [m for m in w if "does not change dtypes" in str(m.message)]
    assert len(noted) <= 1  # once per process (an earlier test may have had it)
    assert "no-op" in (lg.amp.__doc__ or "")


def test_autocast_as_decorator() -> None:
    @lg.autocast("cpu", enabled=False)
    def f() -> bool:
        return lg.is_autocast_enabled("cpu")
    assert f() is False


def test_cuda_grad_scaler_is_disabled_as_pytorchs_without_cuda() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for s in (lg.amp.GradScaler(), lg.cuda.amp.GradScaler(), torch.amp.GradScaler()):
            assert not s.is_enabled() and s.get_scale() == 1.0 and s.state_dict() == {}


def _train(T: Any, steps: int, poison: set[int]) -> tuple[list[float], list[float], np.ndarray, dict[str, Any]]:
    T.manual_seed(0)
    w = T.tensor(np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3), requires_grad=True)
    opt = T.optim.SGD([w], lr=0.1)
    scaler = T.amp.GradScaler("cpu", init_scale=4.0, growth_interval=2)
    x = T.tensor(np.arange(6, dtype=np.float32).reshape(3, 2) / 10)
    losses, scales = [], []
    for i in range(steps):
        opt.zero_grad()
        loss = (x @ w).square().mean() * (float("inf") if i in poison else 1.0)
        scaled = scaler.scale(loss)
        losses.append(float(scaled.item()))
        scaled.backward()
        scaler.step(opt)
        scaler.update()
        scales.append(scaler.get_scale())
    return losses, scales, w.detach().numpy(), scaler.state_dict()


def test_cpu_grad_scaler_matches_pytorch_step_for_step() -> None:
    ours, theirs = _train(lg, 7, {2, 3}), _train(torch, 7, {2, 3})
    # (the losses themselves may round differently in the last bit: matmul and mean, not the scaler)
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-6)
    assert ours[1] == theirs[1] and ours[3] == theirs[3]  # scales skip and grow at the same steps
    np.testing.assert_allclose(ours[2], theirs[2], rtol=1e-6)


@pytest.mark.parametrize("misuse", ["unscale_twice", "step_twice", "update_first", "closure", "empty_state"])
def test_cpu_grad_scaler_errors_match_pytorch(misuse: str) -> None:
    def run(T: Any) -> tuple[str, str]:
        w = T.ones(2, requires_grad=True)
        opt = T.optim.SGD([w], lr=0.1)
        s = T.amp.GradScaler("cpu")
        s.scale(w.sum()).backward()
        try:
            if misuse == "unscale_twice":
                s.unscale_(opt)
                s.unscale_(opt)
            elif misuse == "step_twice":
                s.step(opt)
                s.step(opt)
            elif misuse == "update_first":
                s.update()
            elif misuse == "closure":
                s.step(opt, closure=lambda: 0)
            else:
                s.load_state_dict({})
        except (RuntimeError, AssertionError) as e:
            return type(e).__name__, str(e)
        return "ok", ""
    assert run(lg) == run(torch)
