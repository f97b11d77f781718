import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).parent))


def pytest_terminal_summary(terminalreporter, exitstatus, config):  # type: ignore[no-untyped-def]
    """Say loudly, at the end of the run, how many tests were skipped and why (``-q`` hides it):
    a parity test skipped because PyTorch is missing has checked nothing."""
    skipped = terminalreporter.stats.get("skipped", [])
    if not skipped:
        return
    reasons: dict[str, int] = {}
    for rep in skipped:
        longrepr = rep.longrepr
        reason = longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)
        reason = reason.removeprefix("Skipped: ")
        reasons[reason] = reasons.get(reason, 0) + 1
    tw = terminalreporter
    tw.write_sep("!", f"{len(skipped)} TESTS SKIPPED", red=True, bold=True)
    for reason, n in sorted(reasons.items(), key=lambda kv: -kv[1]):
        tw.write_line(f"  {n:5d}  {reason}")
    if any("'torch'" in r for r in reasons):
        tw.write_line("  PyTorch parity tests did not run: install the reference with "
                      "`.venv/bin/pip install torch==2.13.0` (make test does this)")
