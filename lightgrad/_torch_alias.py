"""``import torch.nn as nn`` and the like in a module whose ``import torch`` became
``import lightgrad as torch``.

An import statement names a module, not a variable: after ``import lightgrad as torch``, the line
``import torch.nn as nn`` still looks for a package called ``torch`` (PyTorch, or nothing). Anything
that answered it through ``sys.modules`` or ``sys.meta_path`` would leave lightgrad in
``sys.modules['torch']`` for the rest of the process (the import statement needs the entry until it
returns), and every library imported later (``import safetensors.torch``) or importing PyTorch
lazily inside a function would get lightgrad. So the alias wraps ``builtins.__import__`` instead:

- an import *statement* (the caller's current instruction is ``IMPORT_NAME``) of ``torch`` or
  ``torch.X``, run by code whose global ``torch`` is lightgrad, is answered from lightgrad's own
  modules and attributes (``torch.nn`` is ``lightgrad.nn``, ``torch.backends.cudnn`` is the object
  ``lightgrad.backends.cudnn``; a name lightgrad lacks raises ``ModuleNotFoundError: No module named
  'torch.X'``), and ``sys.modules`` is not touched;
- every other import goes straight to the original ``__import__``: other modules, other importers,
  and the imports the interpreter makes on a script's behalf (``pickle`` finding ``torch._utils``
  for a real PyTorch tensor, ``copy``), so those get the installed PyTorch or the usual error.

``importlib.import_module("torch.nn")`` and an explicit ``__import__("torch")`` are calls, not
import statements: they bypass the alias and give the installed PyTorch (or raise), as they would
anywhere else. The wrapper costs one Python call per import statement: a cached ``import os`` takes
about 120 ns instead of 55 ns (a loop of a million, this machine); nothing else changes.
"""

from __future__ import annotations

import builtins
import dis
import importlib
import sys
from types import ModuleType
from typing import Any

_IMPORT_NAME = dis.opmap["IMPORT_NAME"]
_MISSING = object()


def _lightgrad() -> ModuleType:
    return sys.modules[__package__]


def _submodule(obj: Any, modname: str) -> Any:
    """The module ``modname`` when ``obj`` is a package that has it, else _MISSING."""
    if not (isinstance(obj, ModuleType) and hasattr(obj, "__path__")):
        return _MISSING
    try:
        return importlib.import_module(modname)
    except ModuleNotFoundError as e:
        if e.name != modname:  # (a module that exists and fails to import itself: its own error)
            raise
        return _MISSING


def _resolve(name: str) -> Any:
    """``torch.a.b`` as lightgrad's: each step a submodule where the package has one (as Python's own
    import prefers), else an attribute (``cuda``, ``backends`` are objects standing in for modules)."""
    obj: Any = _lightgrad()
    modname = obj.__name__
    parts = name.split(".")
    for k, part in enumerate(parts[1:], 1):
        modname += "." + part
        sub = _submodule(obj, modname)
        if sub is _MISSING:
            sub = getattr(obj, part, _MISSING)
        if sub is _MISSING or sub is None:
            missing = ".".join(parts[:k + 1])
            raise ModuleNotFoundError(f"No module named '{missing}'", name=missing)
        obj = sub
    return obj


def _aliased_import(name: str, globals: Any = None, locals: Any = None, fromlist: Any = (),  # noqa: A002
                    level: int = 0) -> Any:
    """``builtins.__import__`` with ``torch`` answered by lightgrad for aliased import statements."""
    if name[:5] != "torch":  # (the fast path first: every import statement of the process comes here)
        return _original_import(name, globals, locals, fromlist, level)
    if (level == 0 and (len(name) == 5 or name[5] == ".") and globals is not None
            and globals.get("torch") is sys.modules.get(__package__)):
        f = sys._getframe(1)
        if f.f_code.co_code[f.f_lasti] == _IMPORT_NAME:
            leaf = _resolve(name)
            if not fromlist:
                return _lightgrad()  # ``import torch.nn``: binds the top package, as Python's does
            for item in fromlist:  # ``from torch.nn import functional``: submodules load, as Python's
                if item != "*" and isinstance(leaf, ModuleType) and not hasattr(leaf, item):
                    _submodule(leaf, f"{leaf.__name__}.{item}")
            return leaf
    return _original_import(name, globals, locals, fromlist, level)


_original_import = builtins.__import__


def install() -> None:
    """Wrap ``builtins.__import__`` once (a reload of lightgrad does not wrap it twice)."""
    global _original_import
    current = builtins.__import__
    if getattr(current, "__qualname__", "") == "_aliased_import" and getattr(current, "__module__", "") == __name__:
        return
    _original_import = current
    builtins.__import__ = _aliased_import
