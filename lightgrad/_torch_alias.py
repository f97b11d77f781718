"""``import torch.nn as nn`` and the like in a module whose ``import torch`` became
``import lightgrad as torch``.

An import statement names a module, not a variable: after ``import lightgrad as torch``, the line
``import torch.nn as nn`` still looks for a package called ``torch`` (PyTorch, or nothing). This
finder answers ``torch`` and every ``torch.X`` with lightgrad's own modules (the same objects, not
copies), but only for an import made by code whose global ``torch`` is lightgrad: a PyTorch script
runs with its import line changed and nothing else, and every other importer (a library probing
for PyTorch) sees what is installed. As with any import, the module then stays in ``sys.modules``
under the name asked for.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
from types import FrameType, ModuleType
from typing import Any


class _Existing(importlib.abc.Loader):
    """Loads a module that is already imported: the module itself."""

    def __init__(self, module: ModuleType) -> None:
        self.module = module

    def create_module(self, spec: Any) -> ModuleType:
        return self.module

    def exec_module(self, module: ModuleType) -> None:
        pass


def _importer_globals() -> dict[str, Any]:
    """The globals of the code running the import (the first frame outside the import system)."""
    f: FrameType | None = sys._getframe(2)
    while f is not None and f.f_globals.get("__name__", "").startswith(("importlib", __name__)):
        f = f.f_back
    return {} if f is None else f.f_globals


class TorchAlias(importlib.abc.MetaPathFinder):
    """``torch`` -> ``lightgrad`` and ``torch.X`` -> ``lightgrad.X`` for importers whose global
    ``torch`` is lightgrad."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name != "torch" and not name.startswith("torch."):
            return None
        ours, torch = sys.modules[__package__], sys.modules.get("torch")
        # torch.X under an aliased torch: ours too, else the path finder would load lightgrad's
        # files a second time under torch's names (their classes distinct from lightgrad's);
        # under an imported PyTorch: PyTorch's
        if torch is not ours and (torch is not None or _importer_globals().get("torch") is not ours):
            return None
        try:
            module = importlib.import_module(__package__ + name[len("torch"):])
        except ModuleNotFoundError:
            return None  # (a torch module lightgrad lacks: the usual error)
        return importlib.util.spec_from_loader(name, _Existing(module))


def install() -> None:
    if not any(isinstance(f, TorchAlias) for f in sys.meta_path):
        sys.meta_path.insert(0, TorchAlias())
