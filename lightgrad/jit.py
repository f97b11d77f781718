"""``lightgrad.jit``: TorchScript's decorators run the code as it is (lightgrad has no script
compiler; ``lightgrad.compile`` traces training steps instead), so scripts that decorate with them
work; saving or loading a TorchScript archive raises, saying what to do instead."""

from __future__ import annotations

from typing import Any, Final, TypeVar

T = TypeVar("T")  # (Final, imported above, is ``torch.jit.Final[int]`` in class annotations)

__all__ = ["Final", "ScriptFunction", "ScriptModule", "annotate", "export", "freeze", "ignore", "interface",
           "is_scripting", "is_tracing", "load", "optimize_for_inference", "save", "script", "script_if_tracing",
           "trace", "trace_module", "unused"]

_NO_ARCHIVE = ("lightgrad.jit cannot {what} TorchScript archives: lightgrad runs scripted code eagerly and "
               "has no TorchScript format. Save the weights instead, lightgrad.save(model.state_dict(), "
               "'model.pt'), and rebuild the model in Python to load them (model.load_state_dict(lightgrad.load(...))).")


class ScriptModule:
    """Stands for TorchScript's module class in isinstance checks; lightgrad never makes one."""


class ScriptFunction:
    """Stands for TorchScript's function class in isinstance checks; lightgrad never makes one."""


def script(obj: T, optimize: Any = None, _frames_up: int = 0, _rcb: Any = None, example_inputs: Any = None) -> T:
    """Return ``obj`` unchanged (a module, function or class runs eagerly): ``@lightgrad.jit.script``."""
    return obj


def trace(func: T, example_inputs: Any = None, optimize: Any = None, check_trace: bool = True,
          check_inputs: Any = None, check_tolerance: float = 1e-5, strict: bool = True, _force_outplace: bool = False,
          _module_class: Any = None, _compilation_unit: Any = None, example_kwarg_inputs: Any = None,
          _store_inputs: bool = True) -> T:
    """Return ``func`` unchanged: it runs eagerly on every call."""
    return func


def trace_module(mod: T, inputs: Any, optimize: Any = None, check_trace: bool = True, check_inputs: Any = None,
                 check_tolerance: float = 1e-5, strict: bool = True, _force_outplace: bool = False,
                 _module_class: Any = None, _compilation_unit: Any = None, example_inputs_is_kwarg: bool = False,
                 _store_inputs: bool = True) -> T:
    """Return ``mod`` unchanged."""
    return mod


def script_if_tracing(fn: T) -> T:
    """``fn`` itself: lightgrad runs everything eagerly."""
    return fn


def _decorator(drop: Any = False, **kwargs: Any) -> Any:
    if callable(drop):  # used bare: @ignore
        return drop
    return lambda fn: fn


def ignore(drop: Any = False, **kwargs: Any) -> Any:
    """``@jit.ignore`` / ``@jit.ignore(drop=True)``: the function runs as Python (as everything does here)."""
    return _decorator(drop, **kwargs)


def unused(fn: T) -> T:
    """``@jit.unused``: the function is left as it is."""
    return fn


def export(fn: T) -> T:
    """``fn`` itself (marks a method for TorchScript export in PyTorch; lightgrad runs it eagerly)."""
    return fn


def interface(obj: T) -> T:
    """``obj`` itself (declares a TorchScript interface in PyTorch; nothing to do eagerly)."""
    return obj


def annotate(the_type: Any, the_value: T) -> T:
    """Return ``the_value`` (TorchScript's type annotation)."""
    return the_value


def is_scripting() -> bool:
    """False: lightgrad never runs code as TorchScript."""
    return False


def is_tracing() -> bool:
    """False: lightgrad.jit.trace does not trace."""
    return False


def freeze(mod: T, preserved_attrs: Any = None, optimize_numerics: bool = True) -> T:
    """``mod`` itself: there is no TorchScript module to freeze."""
    return mod


def optimize_for_inference(mod: T, other_methods: Any = None) -> T:
    """``mod`` itself: there is no TorchScript graph to optimise."""
    return mod


def save(m: Any, f: Any, _extra_files: Any = None) -> None:
    """Raises: lightgrad has no TorchScript archives (save the state_dict with lightgrad.save)."""
    raise RuntimeError(_NO_ARCHIVE.format(what="save"))


def load(f: Any, map_location: Any = None, _extra_files: Any = None, _restore_shapes: bool = False) -> Any:
    """Raises: lightgrad cannot read TorchScript archives (load a state_dict with lightgrad.load)."""
    raise RuntimeError(_NO_ARCHIVE.format(what="load"))


