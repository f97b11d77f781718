"""The package's structure, read from its source with the AST: imports point one way, only the
backend (and the modules that own files, processes and datasets) use NumPy, and files stay small.

Layers, bottom to top (a module may import its own layer and the ones below it, never above):
leaves (dtypes, memory, device, grad mode, the reference-count tricks), backend, function (the
primitives), engine, tensor (the core class and its method mixins), then autograd / linalg /
random / distributed (collectives on tensors), nn, then optim / func / distributions (which build
on nn), and on top the compiler, serialization, data and the package itself. The one mutual need of the core (primitives make Tensors; Tensor's methods
call primitives) is a late binding done by lightgrad.tensor, not an import.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent / "lightgrad"

# (module prefix, layer): the longest matching prefix gives a module its layer
LAYERS: list[tuple[str, int]] = [
    ("lightgrad.dtypes", 0), ("lightgrad.memory", 0), ("lightgrad.device", 0), ("lightgrad.grad_mode", 0),
    ("lightgrad._refcount", 0), ("lightgrad._generator", 0), ("lightgrad._hooks", 0),
    ("lightgrad.backend", 1),
    ("lightgrad.function", 2),
    ("lightgrad.engine", 3),
    ("lightgrad.tensor", 4), ("lightgrad._ops", 4), ("lightgrad._repr", 4), ("lightgrad._numpy_dispatch", 4),
    ("lightgrad.autograd", 5), ("lightgrad.linalg", 5), ("lightgrad.random", 5), ("lightgrad._functions", 5),
    ("lightgrad.distributed", 5), ("lightgrad.fft", 5), ("lightgrad.special", 5),
    ("lightgrad.nn", 6),
    ("lightgrad.optim", 7), ("lightgrad.func", 7), ("lightgrad.distributions", 7),
    ("lightgrad.compiler", 8), ("lightgrad.serialization", 8), ("lightgrad.testing", 8), ("lightgrad.jit", 0), ("lightgrad.hub", 0), ("lightgrad.utils", 8), ("lightgrad.datasets", 8),
    ("lightgrad._torch_alias", 8), ("lightgrad", 9),
]

# modules that may use NumPy directly: the backend, and the owners of bytes on disk, of datasets and
# of other processes' buffers
NUMPY_ALLOWED = ("lightgrad.backend", "lightgrad.memory", "lightgrad.dtypes", "lightgrad.serialization",
                 "lightgrad.utils.data", "lightgrad.datasets", "lightgrad.distributed")

MAX_LINES = 1200
# The core is the machinery every op and layer stands on: the leaves, the backend's namespace, the
# primitives' base (Function, AccumulateGrad, custom functions), the engine and Tensor's core class.
# The op set around it (the backend's kernels, the primitives' forward and backward formulas, Tensor's
# method mixins) grows with the API and is held to the per-file limit instead.
CORE = ("lightgrad.dtypes", "lightgrad.memory", "lightgrad.device", "lightgrad.grad_mode", "lightgrad._refcount",
        "lightgrad.backend", "lightgrad.function", "lightgrad.function.base", "lightgrad.engine", "lightgrad.tensor")
CORE_BUDGET = 3500


def _modules() -> dict[str, Path]:
    mods = {}
    for path in ROOT.rglob("*.py"):
        parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        mods[".".join(parts)] = path
    return mods


MODULES = _modules()


def _layer(mod: str) -> int:
    best = max((p for p, _ in LAYERS if mod == p or mod.startswith(p + ".")), key=len)
    return dict(LAYERS)[best]


def _targets(mod: str, node: ast.Import | ast.ImportFrom) -> list[str]:
    """The lightgrad modules an import statement loads (a name imported from a package counts as
    its submodule when it is one)."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names if a.name.split(".")[0] == "lightgrad"]
    package = mod.split(".") if MODULES[mod].name == "__init__.py" else mod.split(".")[:-1]
    if node.level:
        base = ".".join(package[:len(package) - node.level + 1] + ([node.module] if node.module else []))
    else:
        base = node.module or ""
    if base.split(".")[0] != "lightgrad":
        return []
    return [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names]


def _type_checking(node: ast.If) -> bool:
    return "TYPE_CHECKING" in ast.unparse(node.test)


def _imports(mod: str) -> tuple[set[str], list[tuple[int, str]], bool]:
    """(modules imported at load time, (line, module) imported inside functions, imports NumPy)."""
    tree = ast.parse(MODULES[mod].read_text())
    top: set[str] = set()
    inner: list[tuple[int, str]] = []
    numpy = False

    def visit(node: ast.AST, in_function: bool) -> None:
        nonlocal numpy
        if isinstance(node, ast.If) and _type_checking(node):
            for child in node.orelse:
                visit(child, in_function)
            return  # imports for annotations only
        if isinstance(node, ast.Import | ast.ImportFrom):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            numpy |= any(n.split(".")[0] == "numpy" for n in names) and not getattr(node, "level", 0)
            for target in _targets(mod, node):
                if target != mod:
                    (inner.append((node.lineno, target)) if in_function else top.add(target))
        for child in ast.iter_child_nodes(node):
            visit(child, in_function or isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda))

    visit(tree, False)
    return top, inner, numpy


IMPORTS = {m: _imports(m) for m in MODULES}


def test_every_module_has_a_layer() -> None:
    assert all(_layer(m) >= 0 for m in MODULES)


def test_imports_point_down() -> None:
    wrong = [f"{m} (layer {_layer(m)}) imports {t} (layer {_layer(t)})"
             for m, (top, inner, _) in IMPORTS.items() for t in top | {t for _, t in inner}
             if _layer(t) > _layer(m) and not (t == "lightgrad" or m.startswith(t + "."))]
    assert not wrong, "imports pointing up:\n" + "\n".join(sorted(wrong))


def test_no_import_cycle() -> None:
    """No cycle among load-time imports (a package importing its own submodules is not a cycle
    unless one of them imports the package back)."""
    graph = {m: {t for t in top if t != "lightgrad"} for m, (top, _, _) in IMPORTS.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    cycles: list[list[str]] = []

    def strong(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                cycles.append(sorted(comp))

    for v in graph:
        if v not in index:
            strong(v)
    assert not cycles, f"import cycles: {cycles}"


def test_no_function_level_imports_of_lightgrad() -> None:
    """An import inside a function either breaks a cycle (forbidden: see the layers) or breaks none
    (then it belongs at the top)."""
    found = [f"{MODULES[m].relative_to(ROOT.parent)}:{line} imports {t}"
             for m, (_, inner, _) in IMPORTS.items() for line, t in inner]
    assert not found, "function-level imports:\n" + "\n".join(sorted(found))


def test_numpy_only_behind_the_backend() -> None:
    users = sorted(m for m, (_, _, numpy) in IMPORTS.items() if numpy
                   and not any(m == p or m.startswith(p + ".") for p in NUMPY_ALLOWED))
    assert not users, f"modules importing NumPy outside the backend: {users}"


@pytest.mark.parametrize("mod", sorted(MODULES))
def test_file_size(mod: str) -> None:
    lines = MODULES[mod].read_text().count("\n")
    assert lines <= MAX_LINES, f"{MODULES[mod].relative_to(ROOT.parent)} has {lines} lines (at most {MAX_LINES})"


def test_core_size() -> None:
    core = {m: MODULES[m].read_text().count("\n") for m in CORE}
    assert sum(core.values()) <= CORE_BUDGET, f"the core has {sum(core.values())} lines: {core}"


def test_the_checks_can_fail(tmp_path: Path) -> None:
    """The AST reading sees the imports these tests are about."""
    global MODULES
    saved = MODULES
    try:
        path = tmp_path / "probe.py"
        path.write_text("import numpy as np\nfrom . import nn\nfrom .backend import xp\n"
                        "if TYPE_CHECKING:\n    from .compiler import x\n"
                        "def f():\n    from .optim import SGD\n")
        MODULES = {**saved, "lightgrad.probe": path}
        top, inner, numpy = _imports("lightgrad.probe")
        assert numpy and top == {"lightgrad.nn", "lightgrad.backend"}
        assert [t for _, t in inner] == ["lightgrad.optim"]
    finally:
        MODULES = saved
