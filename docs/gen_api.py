"""Writes docs/api.md from the public API's signatures and docstrings: ``python docs/gen_api.py [OUT]``.

It prints how many entries have no description, and how many public methods of the classes it lists
(their own, properties included; Tensor's are entries) have no docstring; ``--undocumented`` lists both.

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

MODULES = ["lightgrad", "lightgrad.autograd", "lightgrad.autograd.functional", "lightgrad.autograd.graph",
           "lightgrad.func", "lightgrad.linalg", "lightgrad.fft", "lightgrad.special", "lightgrad.random",
           "lightgrad.distributions", "lightgrad.memory", "lightgrad.amp", "lightgrad.cuda", "lightgrad.compiler",
           "lightgrad.jit", "lightgrad.nn", "lightgrad.nn.functional", "lightgrad.nn.init", "lightgrad.nn.utils",
           "lightgrad.nn.utils.parametrize", "lightgrad.nn.utils.prune", "lightgrad.nn.utils.rnn", "lightgrad.optim",
           "lightgrad.optim.lr_scheduler", "lightgrad.optim.swa_utils", "lightgrad.utils.data",
           "lightgrad.utils.checkpoint", "lightgrad.utils.tensorboard", "lightgrad.datasets", "lightgrad.serialization",
           "lightgrad.distributed", "lightgrad.testing", "lightgrad.profiler", "lightgrad.hub",
           "lightgrad.distributions.constraints", "lightgrad.distributions.transforms", "lightgrad.nn.parallel"]

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


def members(mod: object) -> list[str]:
    """The names listed for a module: of its ``__all__`` (or public names), the classes and functions
    defined in lightgrad, sorted."""
    names = getattr(mod, "__all__", None) or [n for n in dir(mod) if not n.startswith("_")]
    out = []
    for n in sorted(set(names)):
        obj = getattr(mod, n, None)
        if obj is None or inspect.ismodule(obj) or not callable(obj):
            continue
        if (getattr(obj, "__module__", "") or "").startswith("lightgrad"):
            out.append(n)
    return out


def entries() -> list[tuple[str | None, str, str]]:
    """The reference's lines in order: (section, entry, description); a section heading has entry ""."""
    rows: list[tuple[str | None, str, str]] = []
    for name in MODULES:
        try:
            mod = importlib.import_module(name)
        except ImportError as e:  # an optional extra that is not installed
            rows.append((name, "", f"(not importable here: {e})"))
            continue
        rows.append((name, "", first_paragraph(mod)))
        for n in members(mod):
            obj = getattr(mod, n)
            kind = "class" if inspect.isclass(obj) else "def"
            rows.append((None, f"{kind} {n}{signature(obj)}", first_paragraph(obj)))
    tensor = importlib.import_module("lightgrad").Tensor
    rows.append(("lightgrad.Tensor methods", "", ""))
    methods: dict[str, object] = {}
    for klass in reversed(tensor.__mro__[:-1]):  # its mixins' methods (lightgrad/_ops), then its own
        methods.update(vars(klass))
    for n, obj in sorted(methods.items()):
        if n.startswith("_") or not callable(obj):
            continue
        rows.append((None, f"Tensor.{n}{signature(obj, method=True)}", first_paragraph(obj)))
    return rows


def render(rows: list[tuple[str | None, str, str]] | None = None) -> str:
    out = ["# API reference", "", "Generated from docstrings by `python docs/gen_api.py`.", ""]
    previous: str | None = None
    for section, entry, text in entries() if rows is None else rows:
        if not entry:
            if previous is not None:
                out.append("")
            out += [f"## {section}", ""] + ([text, ""] if text or section != "lightgrad.Tensor methods" else [])
            previous = section
        else:
            out.append(f"- `{entry}`: {text}")
    return "\n".join(line.rstrip() for line in out) + "\n"


def undocumented(rows: list[tuple[str | None, str, str]]) -> list[str]:
    """The entries whose docstring is empty."""
    return [entry for _, entry, text in rows if entry and not text.strip()]


def public_classes() -> list[type]:
    """Each class the listed modules export (Tensor aside: its methods are entries), once, in listing order."""
    seen: dict[type, None] = {}
    for name in MODULES:
        try:
            mod = importlib.import_module(name)
        except ImportError:
            continue
        for n in members(mod):
            obj = getattr(mod, n)
            if inspect.isclass(obj) and obj.__name__ != "Tensor":
                seen.setdefault(obj, None)
    return list(seen)


def undocumented_methods() -> list[str]:
    """The public methods and properties a public class defines itself (not inherited) with no docstring
    of its own: ``inspect.getdoc`` would lend them the base method's, which may say something else."""
    out = []
    for klass in public_classes():
        for n, value in vars(klass).items():
            fn = value.fget if isinstance(value, property) else getattr(value, "__func__", value)
            if n.startswith("_") or not inspect.isfunction(fn):
                continue
            if not (fn.__doc__ or "").strip():
                out.append(f"{klass.__module__}.{klass.__qualname__}.{n}")
    return sorted(out)


def main(argv: list[str]) -> None:
    listing = "--undocumented" in argv
    argv = [a for a in argv if a != "--undocumented"]
    path = Path(argv[0]) if argv else Path(__file__).with_name("api.md")
    rows = entries()
    path.write_text(render(rows))
    methods = undocumented_methods()
    for method in methods if listing else []:
        print(f"  {method}")
    print(f"{len(public_classes())} public classes, {len(methods)} of their public methods without a docstring")
    missing = undocumented(rows)
    for entry in missing if listing else []:
        print(f"  {entry}")
    print(f"{path}: {sum(1 for _, entry, _ in rows if entry)} API entries, {len(missing)} without a description")


if __name__ == "__main__":
    main(sys.argv[1:])
