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
