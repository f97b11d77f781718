"""``import lightgrad as torch``: PyTorch's other import lines give lightgrad's modules.

``import lightgrad as torch`` followed by PyTorch's other import lines (``import torch.nn as nn``,
``from torch.utils.data import DataLoader``): lightgrad's modules for that code, what is installed
for everyone else. Each case runs in a fresh interpreter (imports are process-wide)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import textwrap

import pytest

HAVE_TORCH = importlib.util.find_spec("torch") is not None


def _run(code: str) -> str:
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


def test_torch_submodule_imports_give_lightgrads_modules() -> None:
    out = _run("""
        import sys
        import lightgrad as torch
        import torch.nn as nn
        import torch.nn.functional as F
        import torch.optim as optim
        from torch.utils.data import DataLoader, TensorDataset
        import lightgrad, lightgrad.nn, lightgrad.nn.functional, lightgrad.optim, lightgrad.utils.data
        checks = [nn is lightgrad.nn, F is lightgrad.nn.functional, optim is lightgrad.optim,
                  DataLoader is lightgrad.utils.data.DataLoader, sys.modules["torch"] is lightgrad,
                  sys.modules["torch.nn"] is lightgrad.nn]
        model = nn.Linear(3, 2)
        opt = optim.SGD(model.parameters(), lr=0.1)
        F.mse_loss(model(torch.ones(4, 3)), torch.zeros(4, 2)).backward()
        opt.step()
        print(all(checks), isinstance(model, lightgrad.nn.Module))
    """)
    assert out == "True True"


def test_other_importers_see_what_is_installed() -> None:
    # a library probing for PyTorch after lightgrad was imported (its own globals have no alias)
    out = _run("""
        import importlib.util
        import lightgrad
        spec = importlib.util.find_spec("torch")
        print(spec is None or type(spec.loader).__module__ != "lightgrad._torch_alias")
    """)
    assert out == "True"


def test_a_torch_module_lightgrad_lacks_is_not_found() -> None:
    out = _run("""
        import lightgrad as torch
        try:
            import torch.no_such_module
        except ModuleNotFoundError as e:
            print(e.name)
    """)
    assert out == "torch.no_such_module"


@pytest.mark.skipif(not HAVE_TORCH, reason="PyTorch not installed")
def test_an_imported_pytorch_keeps_its_own_submodules() -> None:
    out = _run("""
        import torch as real
        import lightgrad as torch
        import torch.optim as optim
        print(optim.__name__, "lightgrad" in optim.__file__)
    """)
    assert out == "torch.optim False"
