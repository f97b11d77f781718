"""Builds the browsable API reference (HTML, with search) with pdoc: ``python docs/gen_site.py [OUT]``
(``make docs``; OUT is ``site/`` by default, git-ignored). Any warning fails the build (exit 1).

It documents the modules docs/api.md lists (``gen_api.MODULES``), with the same members: a module
that re-exports without an ``__all__`` (``lightgrad`` itself) is given one for the build, naming
what ``gen_api.members`` lists, because pdoc shows only what a module defines or puts in ``__all__``. The library is
unchanged by this (the build runs in a process of its own). docs/differences.md becomes a page of
its own, linked from the front page.
"""

from __future__ import annotations

import importlib
import shutil
import sys
import time
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # gen_api, beside this file
sys.path.insert(0, str(HERE.parent))  # lightgrad from this checkout

import gen_api  # noqa: E402

_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<style>body {{ font-family: system-ui, sans-serif; max-width: 58rem; margin: 2rem auto; padding: 0 1rem;
line-height: 1.5 }} code, pre {{ background: #f4f4f4 }} pre {{ padding: .6rem; overflow-x: auto }}
table {{ border-collapse: collapse }} td, th {{ border: 1px solid #ccc; padding: .2rem .5rem }}</style>
</head><body><p><a href="lightgrad.html">&larr; API reference</a></p>
{body}
</body></html>
"""


def build(out: Path) -> list[str]:
    """Writes the site into ``out``; returns the warnings raised while building it."""
    import pdoc.doc  # (the docs extra: only this script needs it)
    import pdoc.render
    import pdoc.render_helpers

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        modules = []
        for name in gen_api.MODULES:
            mod = importlib.import_module(name)
            if getattr(mod, "__all__", None) is None:
                mod.__all__ = gen_api.members(mod)  # type: ignore[attr-defined]  (this process only)
            modules.append(name)
        root = importlib.import_module("lightgrad")
        root.__doc__ = (root.__doc__ or "") + (
            "\n\nHow lightgrad differs from PyTorch, and where it is identical: "
            "[Differences from PyTorch](differences.html).\n")
        pdoc.render.configure(docformat="restructuredtext", show_source=False, search=True,
                              footer_text="lightgrad " + getattr(root, "__version__", ""))
        if out.exists():
            shutil.rmtree(out)
        out.mkdir(parents=True)
        # pdoc.pdoc() would add every submodule under each name (the backend, the primitives); the
        # same three steps over exactly these modules instead
        docs = {name: pdoc.doc.Module.from_name(name) for name in modules}
        for name, module in docs.items():
            page = out / f"{name.replace('.', '/')}.html"
            page.parent.mkdir(parents=True, exist_ok=True)
            page.write_text(pdoc.render.html_module(module, docs))
        (out / "index.html").write_text(pdoc.render.html_index(docs))
        (out / "search.js").write_text(pdoc.render.search_index(docs))
        text = (HERE / "differences.md").read_text()
        body = pdoc.render_helpers.to_html(text)
        (out / "differences.html").write_text(_PAGE.format(title="lightgrad: differences from PyTorch", body=body))
    return [f"{w.filename}:{w.lineno}: {w.category.__name__}: {w.message}" for w in caught]


def main(argv: list[str]) -> int:
    out = Path(argv[0]) if argv else HERE.parent / "site"
    start = time.perf_counter()
    problems = build(out)
    for p in problems:
        print(p, file=sys.stderr)
    pages = sum(1 for _ in out.rglob("*.html"))
    print(f"{out}: {pages} pages in {time.perf_counter() - start:.1f} s, {len(problems)} warnings")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
