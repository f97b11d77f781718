"""``import lightgrad as torch``: PyTorch's other import lines give lightgrad's modules.

``import lightgrad as torch`` followed by PyTorch's other import lines (``import torch.nn as nn``,
``from torch.utils.data import DataLoader``): lightgrad's modules for that code, what is installed
for everyone else. Each case runs in a fresh interpreter (imports are process-wide)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import textwrap
from typing import Any

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
                  DataLoader is lightgrad.utils.data.DataLoader, sys.modules.get("torch") is not lightgrad,
                  "torch.nn" not in sys.modules]
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
def test_an_aliased_script_gets_lightgrad_and_the_real_name_keeps_pytorch() -> None:
    # the alias follows the importer's global ``torch``: here lightgrad, though PyTorch is loaded too
    out = _run("""
        import sys
        import torch as real
        import lightgrad as torch
        import torch.optim as optim
        print(optim.__name__, real.__name__, sys.modules["torch"] is real, "lightgrad" in real.optim.__file__)
    """)
    assert out == "lightgrad.optim torch True False"


HIDE_TORCH = """
import sys, importlib.abc
class Hide(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "torch" or name.startswith("torch."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
sys.meta_path.insert(0, Hide())
"""


@pytest.mark.parametrize("hide", [False, True], ids=["torch-installed", "torch-absent"])
def test_the_alias_never_enters_sys_modules(hide: bool) -> None:
    if not hide and not HAVE_TORCH:
        pytest.skip("PyTorch not installed")
    out = _run((HIDE_TORCH if hide else "") + textwrap.dedent("""
        import sys
        import lightgrad as torch
        import torch.nn as nn
        import torch.nn.functional as F
        from torch import optim
        from torch.nn import functional
        import lightgrad
        assert nn is lightgrad.nn and F is functional is lightgrad.nn.functional and optim is lightgrad.optim
        assert not any(k == "torch" or k.startswith("torch.") for k, v in sys.modules.items()
                       if v is not None and getattr(v, "__name__", "").startswith("lightgrad"))
        try:
            import torch_helper_probe  # (a module that does not exist: the usual error)
        except ModuleNotFoundError as e:
            print(e.name)
        print(sys.modules.get("torch") is not lightgrad)
    """))
    assert out == "torch_helper_probe\nTrue"


@pytest.mark.parametrize("hide", [False, True], ids=["torch-installed", "torch-absent"])
def test_a_library_imported_after_the_alias_gets_what_is_installed(hide: bool, tmp_path: Any) -> None:
    if not hide and not HAVE_TORCH:
        pytest.skip("PyTorch not installed")
    (tmp_path / "helper_lib.py").write_text("import torch\nNAME = torch.__name__\n")
    out = _run((HIDE_TORCH if hide else "") + textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(tmp_path)!r})
        import lightgrad as torch
        import torch.nn as nn
        try:
            import helper_lib
            print(helper_lib.NAME, helper_lib.torch is torch)
        except ModuleNotFoundError as e:
            print("missing", e)
    """))
    assert out == ("missing No module named 'torch'" if hide else "torch False")


@pytest.mark.skipif(not HAVE_TORCH, reason="PyTorch not installed")
def test_safetensors_torch_after_the_alias_gets_pytorch() -> None:
    pytest.importorskip("safetensors")
    out = _run("""
        import lightgrad as torch
        import torch.nn as nn
        import safetensors.torch
        import lightgrad
        t = safetensors.torch.torch
        print(t.__name__, t is lightgrad, hasattr(t, "bfloat16"))
    """)
    assert out == "torch False True"


def test_a_library_imported_before_the_alias_imports_lazily(tmp_path: Any) -> None:
    (tmp_path / "lazy_lib.py").write_text(textwrap.dedent("""
        def which():
            try:
                import torch
            except ModuleNotFoundError:
                return "absent"
            return torch.__name__
    """))
    out = _run(f"""
        import sys
        sys.path.insert(0, {str(tmp_path)!r})
        import lazy_lib
        import lightgrad as torch
        import torch.nn as nn
        print(lazy_lib.which(), sys.modules.get("torch") is not torch)
    """)
    assert out == ("torch True" if HAVE_TORCH else "absent True")


@pytest.mark.skipif(not HAVE_TORCH, reason="PyTorch not installed")
def test_pickle_and_copy_of_pytorch_objects_are_unaffected() -> None:
    # pickle's own import of ``torch._utils`` runs with the script's globals: it must get PyTorch
    out = _run("""
        import pickle, copy
        import torch as real
        blob = pickle.dumps(real.arange(3))
        import lightgrad as torch
        import torch.nn as nn
        t = pickle.loads(blob)
        print(type(t).__module__, t.tolist(), type(copy.deepcopy(t)).__module__)
        x = torch.arange(3)
        print(type(pickle.loads(pickle.dumps(x))).__module__, type(copy.deepcopy(x)).__module__)
    """)
    assert out == "torch [0, 1, 2] torch\nlightgrad.tensor lightgrad.tensor"


def test_import_module_bypasses_the_alias() -> None:
    out = _run("""
        import importlib, lightgrad
        import lightgrad as torch
        try:
            m = importlib.import_module("torch.nn")
            print(m is not lightgrad.nn)
        except ModuleNotFoundError:
            print(True)
    """)
    assert out == "True"


def test_modules_scripts_import() -> None:
    out = _run("""
        import lightgrad as torch
        import lightgrad
        import torch.backends.cudnn as cudnn
        cudnn.benchmark = True
        import torch.nn.modules
        from torch.nn.modules.loss import _Loss
        from torch.nn.modules.module import Module
        from torch.nn.modules.batchnorm import _BatchNorm
        import torch.nn.modules.conv as conv
        from torch.nn.parameter import Parameter
        import torch.utils.data
        import torch.optim.lr_scheduler as sched
        from torch.amp import GradScaler, autocast
        from torch.cuda.amp import GradScaler as CudaScaler, autocast as cuda_autocast
        checks = [torch.backends.cudnn.benchmark is True, torch.backends.mps.is_available() is False,
                  torch.backends.cuda.matmul.allow_tf32 is False, _Loss is lightgrad.nn.loss._Loss,
                  Module is lightgrad.nn.Module, _BatchNorm is lightgrad.nn.norm._BatchNorm,
                  conv is lightgrad.nn.conv, Parameter is lightgrad.nn.Parameter,
                  sched is lightgrad.optim.lr_scheduler, GradScaler is lightgrad.amp.GradScaler,
                  autocast is lightgrad.amp.autocast, torch.nn.modules.Linear is lightgrad.nn.Linear,
                  torch.utils.data.DataLoader is lightgrad.utils.data.DataLoader]
        print(checks)
    """)
    assert out == str([True] * 13)


def test_import_statement_cost_is_small() -> None:
    # the wrapper adds one Python call per import statement; a generous bound against regressions
    out = _run("""
        import time
        def loop():
            t = time.perf_counter()
            for _ in range(200000):
                import os
            return time.perf_counter() - t
        before = min(loop() for _ in range(3))
        import lightgrad
        after = min(loop() for _ in range(3))
        print((after - before) / 200000 * 1e9 < 2000)
    """)
    assert out == "True"
