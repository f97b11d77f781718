"""jit's decorators run code eagerly; jit archives and hub downloads raise errors that say what to do."""

from __future__ import annotations

import pytest

import lightgrad as lg


def test_jit_decorators_return_what_they_get() -> None:
    @lg.jit.script
    def f(x: lg.Tensor) -> lg.Tensor:
        return x * 2

    @lg.jit.ignore
    def g(x: int) -> int:
        return x + 1

    @lg.jit.ignore(drop=True)
    def h(x: int) -> int:
        return x - 1

    lin = lg.nn.Linear(2, 2)
    assert lg.jit.script(lin) is lin and lg.jit.trace(lin, lg.ones(1, 2)) is lin
    assert f(lg.ones(2)).tolist() == [2.0, 2.0] and g(1) == 2 and h(1) == 0
    assert lg.jit.unused(g) is g and lg.jit.export(g) is g
    assert not lg.jit.is_scripting() and not lg.jit.is_tracing()
    assert lg.jit.annotate(list, [1]) == [1]


def test_jit_archives_and_hub_downloads_raise_with_advice(tmp_path: object) -> None:
    with pytest.raises(RuntimeError, match=r"Save the weights instead, lightgrad\.save\(model\.state_dict\(\)"):
        lg.jit.save(lg.nn.Linear(2, 2), "m.pt")
    with pytest.raises(RuntimeError, match="cannot load TorchScript archives"):
        lg.jit.load("m.pt")
    with pytest.raises(RuntimeError, match=r"model\.load_state_dict\(lightgrad\.load\('weights\.pt'\)\)"):
        lg.hub.load("pytorch/vision", "resnet18", pretrained=True)
    with pytest.raises(RuntimeError, match="does not download"):
        lg.hub.load_state_dict_from_url("https://example.invalid/w.pth")


def test_hub_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: object) -> None:
    monkeypatch.setenv("TORCH_HOME", "/tmp/th")
    assert lg.hub.get_dir() == "/tmp/th/hub"
    lg.hub.set_dir("/tmp/elsewhere")
    try:
        assert lg.hub.get_dir() == "/tmp/elsewhere"
    finally:
        lg.hub._hub_dir = None
