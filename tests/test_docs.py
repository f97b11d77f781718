"""docs/api.md is what docs/gen_api.py writes from the code today: a stale API reference fails here
(regenerate it with ``python docs/gen_api.py``)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_api_reference_is_up_to_date(tmp_path: Path) -> None:
    out = tmp_path / "api.md"
    # (a process of its own: what earlier tests imported or changed cannot leak into the listing)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    subprocess.run([sys.executable, str(ROOT / "docs" / "gen_api.py"), str(out)], cwd=ROOT, env=env, check=True)
    text = out.read_text()
    if "(not importable here:" in text:
        pytest.skip("an optional extra is not installed here, so its section cannot match")
    assert text == (ROOT / "docs" / "api.md").read_text(), \
        "docs/api.md is stale: regenerate it with `python docs/gen_api.py`"


def test_every_api_entry_has_a_description(tmp_path: Path) -> None:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    run = subprocess.run([sys.executable, str(ROOT / "docs" / "gen_api.py"), str(tmp_path / "api.md"), "--undocumented"],
                         cwd=ROOT, env=env, check=True, capture_output=True, text=True)
    assert run.stdout.rstrip().endswith(" 0 without a description"), run.stdout
    # the classes' own public methods and properties too (nn layers' forward, schedulers' get_lr, ...)
    assert " 0 of their public methods without a docstring\n" in run.stdout, run.stdout


def test_undocumented_methods_counts_a_class_own_methods_not_inherited_docstrings() -> None:
    sys.path.insert(0, str(ROOT / "docs"))
    try:
        import gen_api
    finally:
        sys.path.remove(str(ROOT / "docs"))
    import lightgrad

    classes = gen_api.public_classes()
    assert lightgrad.nn.Linear in classes and lightgrad.optim.lr_scheduler.StepLR in classes
    assert lightgrad.Tensor not in classes  # (its methods are API entries of their own)

    class Base:
        def step(self) -> None:
            """Documented here."""

    class Child(Base):
        def step(self) -> None:  # an override: inspect.getdoc would lend it Base's docstring
            pass

    real = gen_api.public_classes
    try:
        gen_api.public_classes = lambda: [Child]
        assert gen_api.undocumented_methods() == [f"{__name__}.{Child.__qualname__}.step"]
    finally:
        gen_api.public_classes = real


def test_free_functions_show_the_methods_signature_with_input_first() -> None:
    import inspect
    import pydoc

    import lightgrad
    from lightgrad import _functions

    for name in _functions.METHODS:
        fn, method = getattr(lightgrad, name), getattr(lightgrad.Tensor, name)
        params = list(inspect.signature(fn).parameters.values())
        expected = list(inspect.signature(method).parameters.values())
        assert params[0].name == "input" and expected[0].name == "self", name
        assert params[1:] == expected[1:], name
        assert fn.__doc__ == method.__doc__ and fn.__name__ == name, name
        # every annotation the signature names resolves where tools look it up (pdoc, get_type_hints)
        sig = inspect.signature(fn)
        for ann in [p.annotation for p in params] + [sig.return_annotation]:
            if isinstance(ann, str):
                eval(ann, vars(_functions))  # raises NameError for a name the module lacks
    text = pydoc.render_doc(lightgrad.add, renderer=pydoc.plaintext)
    assert "add(input: 'Tensor', other: 'Any', *, alpha: 'Number' = 1)" in text
    assert "*args" not in text and "alpha * other" in text


def test_free_functions_still_convert_and_forward_their_arguments() -> None:
    import lightgrad

    assert lightgrad.add([1.0, 2.0], 1, alpha=2).tolist() == [3.0, 4.0]  # a list becomes a tensor, as torch.add
    assert lightgrad.sum(lightgrad.ones(2, 3), dim=1).tolist() == [3.0, 3.0]


def test_generated_in_place_methods_say_what_they_are() -> None:
    import lightgrad

    assert lightgrad.Tensor.exp_.__doc__.startswith("In-place version of ``exp``")
    x = lightgrad.tensor([0.0])
    assert x.exp_() is x and x.tolist() == [1.0]


def test_site_documents_what_the_api_reference_lists() -> None:
    import importlib.util

    import lightgrad

    path = list(sys.path)
    try:  # (gen_site puts docs/ on sys.path to import gen_api beside it)
        spec = importlib.util.spec_from_file_location("gen_site", ROOT / "docs" / "gen_site.py")
        assert spec is not None and spec.loader is not None
        gen_site = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(gen_site)
        names = gen_site.gen_api.members(lightgrad)
    finally:
        sys.path[:] = path
    assert {"add", "Tensor", "tensor", "no_grad", "manual_seed"} <= set(names)
    assert not {"nn", "float32", "builtins"} & set(names) and not any(n.startswith("_") for n in names)
    assert (ROOT / "docs" / "differences.md").read_text().startswith("# Differences from PyTorch")


def test_the_package_ships_its_type_information() -> None:
    """PEP 561: mypy checks code that uses lightgrad only if the installed package holds py.typed."""
    assert (ROOT / "lightgrad" / "py.typed").exists()
    assert 'lightgrad = ["py.typed"]' in (ROOT / "pyproject.toml").read_text()
