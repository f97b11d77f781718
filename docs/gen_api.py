"""Writes docs/api.md from the public API's signatures and docstrings: ``python docs/gen_api.py [OUT]``.

The output depends on the code alone: default values print without memory addresses (a function
or class as its qualified name), sets in sorted order, and every listing is sorted, so two runs
give the same bytes (tests/test_docs.py checks that docs/api.md is up to date).
"""

from __future__ import annotations

import importlib
import inspect
import re
import sys
from pathlib import Path

MODULES = ["lightgrad", "lightgrad.autograd", "lightgrad.autograd.functional", "lightgrad.func", "lightgrad.linalg",
           "lightgrad.distributions", "lightgrad.memory", "lightgrad.compiler", "lightgrad.nn", "lightgrad.nn.functional",
           "lightgrad.nn.init", "lightgrad.nn.utils", "lightgrad.optim", "lightgrad.optim.lr_scheduler",
           "lightgrad.utils.data", "lightgrad.datasets", "lightgrad.serialization", "lightgrad.distributed"]

_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


class _Shown:
    """A default value as the signature shows it (inspect prints a default's repr)."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text


def shown(value: object) -> str:
    """A default value's repr with nothing in it that changes from run to run."""
    if inspect.isfunction(value) or inspect.isclass(value) or inspect.ismethod(value) or inspect.isbuiltin(value):
        return getattr(value, "__qualname__", None) or getattr(value, "__name__", repr(value))
    if inspect.ismodule(value):
        return value.__name__
    if isinstance(value, set | frozenset):
        items = ", ".join(sorted(shown(v) for v in value))
        return f"{{{items}}}" if isinstance(value, set) and value else f"{type(value).__name__}({{{items}}})"
    return _ADDRESS.sub("", repr(value))


def first_paragraph(obj: object) -> str:
    doc = inspect.getdoc(obj) or ""
    return doc.split("\n\n")[0].replace("\n", " ")


def signature(obj: object, method: bool = False) -> str:
    """``obj``'s signature; a method's ``self`` bare (what the type checker takes it for is Tensor)."""
    try:
        sig = inspect.signature(obj)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return "(...)"
    params = []
    for i, p in enumerate(sig.parameters.values()):
        if p.default is not p.empty:
            p = p.replace(default=_Shown(shown(p.default)))
        if method and i == 0 and p.name == "self":
            p = p.replace(annotation=p.empty)
        params.append(p)
    return str(sig.replace(parameters=params))


def render() -> str:
    out = ["# API reference", "", "Generated from docstrings by `python docs/gen_api.py`.", ""]
    for name in MODULES:
        try:
            mod = importlib.import_module(name)
        except ImportError as e:  # an optional extra that is not installed
            out += [f"## {name}", "", f"(not importable here: {e})", ""]
            continue
        out += [f"## {name}", "", first_paragraph(mod), ""]
        names = getattr(mod, "__all__", None) or [n for n in dir(mod) if not n.startswith("_")]
        for n in sorted(set(names)):
            obj = getattr(mod, n, None)
            if obj is None or inspect.ismodule(obj):
                continue
            home = getattr(obj, "__module__", "") or ""
            if not home.startswith("lightgrad"):
                continue
            if inspect.isclass(obj) or inspect.isfunction(obj) or callable(obj):
                kind = "class" if inspect.isclass(obj) else "def"
                out.append(f"- `{kind} {n}{signature(obj)}`: {first_paragraph(obj)}")
        out.append("")
    tensor = importlib.import_module("lightgrad").Tensor
    out += ["## lightgrad.Tensor methods", ""]
    members: dict[str, object] = {}
    for klass in reversed(tensor.__mro__[:-1]):  # its mixins' methods (lightgrad/_ops), then its own
        members.update(vars(klass))
    for n, obj in sorted(members.items()):
        if n.startswith("_") or not callable(obj):
            continue
        out.append(f"- `Tensor.{n}{signature(obj, method=True)}`: {first_paragraph(obj)}")
    return "\n".join(line.rstrip() for line in out) + "\n"


def main(argv: list[str]) -> None:
    path = Path(argv[0]) if argv else Path(__file__).with_name("api.md")
    path.write_text(render())


if __name__ == "__main__":
    main(sys.argv[1:])
