"""Writes docs/api.md from the public API's signatures and docstrings: ``python docs/gen_api.py``."""

from __future__ import annotations

import importlib
import inspect
from pathlib import Path

MODULES = ["lightgrad", "lightgrad.autograd", "lightgrad.autograd.functional", "lightgrad.func", "lightgrad.linalg",
           "lightgrad.distributions", "lightgrad.memory", "lightgrad.compiler", "lightgrad.nn", "lightgrad.nn.functional",
           "lightgrad.nn.init", "lightgrad.nn.utils", "lightgrad.optim", "lightgrad.optim.lr_scheduler",
           "lightgrad.utils.data", "lightgrad.datasets", "lightgrad.serialization", "lightgrad.distributed"]


def first_paragraph(obj: object) -> str:
    doc = inspect.getdoc(obj) or ""
    return doc.split("\n\n")[0].replace("\n", " ")


def signature(obj: object) -> str:
    try:
        return str(inspect.signature(obj))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return "(...)"


def main() -> None:
    out = ["# API reference", "", "Generated from docstrings by `python docs/gen_api.py`.", ""]
    for name in MODULES:
        try:
            mod = importlib.import_module(name)
        except ImportError as e:  # an optional extra that is not installed
            out += [f"## {name}", "", f"(not importable here: {e})", ""]
            continue
        out += [f"## {name}", "", first_paragraph(mod), ""]
        names = getattr(mod, "__all__", None) or [n for n in vars(mod) if not n.startswith("_")]
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
        out.append(f"- `Tensor.{n}{signature(obj)}`: {first_paragraph(obj)}")
    Path(__file__).with_name("api.md").write_text("\n".join(line.rstrip() for line in out) + "\n")


if __name__ == "__main__":
    main()
