"""lightgrad.testing: assert_close's tolerances and mismatch reports as PyTorch's, make_tensor's ranges."""

from __future__ import annotations

from typing import Any

import pytest

import lightgrad as lg

torch = pytest.importorskip("torch")


def _cases(lib: Any) -> list[tuple[Any, Any]]:
    t = lib.tensor
    return [(t([1.0, 2.0, 3.0]), t([1.0, 2.5, 3.0])), (t([1, 2, 3]), t([1, 4, 3])), (t([1.0, 2.0]), t([1.0, 2.0, 3.0])),
            (t([1.0, 2.0]), t([1.0, 2.0], dtype=lib.float64)), (1.0, 1.5), (1, 2),
            ([t(1.0), t(2.0)], [t(1.0), t(3.0)]), ({"a": t([1.0])}, {"a": t([2.0])}),
            (t([float("nan")]), t([float("nan")])), (t([[1.0, 2.0], [3.0, 4.0]]), t([[1.0, 2.0], [3.0, 5.0]])),
            (t([True, False]), t([True, True])), (t(1.0), t(2.0)), (t([1.0, 2.0]), t([0.0, 3.0])),
            ([1, [2, 3]], [1, [2, 4]]), ({"a": 1}, {"b": 1}), ([1, 2], [1, 2, 3]),
            (t([1.0, 2.0]), t([1.0, 2.0 + 1e-7])), (t([1.0, 2.0], dtype=lib.float64), t([1.0, 2.0 + 1e-6], dtype=lib.float64)),
            (t([1.0, 2.0], dtype=lib.float16), t([1.0, 2.001], dtype=lib.float16))]


def _outcome(lib: Any, a: Any, b: Any, **kw: Any) -> Any:
    try:
        lib.testing.assert_close(a, b, **kw)
        return "ok"
    except (AssertionError, TypeError, ValueError) as e:
        return type(e).__name__, str(e).replace("torch.", "").replace("lightgrad.", "")


@pytest.mark.parametrize("i", range(len(_cases(lg))))
def test_assert_close_reports_as_pytorch(i: int) -> None:
    assert _outcome(lg, *_cases(lg)[i]) == _outcome(torch, *_cases(torch)[i])


def test_assert_close_options() -> None:
    for lib in (lg, torch):
        t = lib.tensor
        lib.testing.assert_close(t([float("nan"), 1.0]), t([float("nan"), 1.0]), equal_nan=True)
        lib.testing.assert_close(t([1.0, 2.0]), t([1.1, 2.0]), rtol=0.0, atol=0.2)
        lib.testing.assert_close(t([1, 2]), t([1.0, 2.0]), check_dtype=False)
        assert _outcome(lib, t([1.0]), t([2.0]), msg="custom") == ("AssertionError", "custom")
        assert _outcome(lib, t([1.0]), t([1.0]), rtol=1e-3)[0] == "ValueError"


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "uint8", "bool"])
def test_make_tensor_ranges(dtype: str) -> None:
    dt = getattr(lg, dtype)
    x = lg.testing.make_tensor(4, 50, dtype=dt, device="cpu")
    assert x.shape == (4, 50) and x.dtype == dt
    if dtype != "bool":
        lo, hi = (0, 10) if dtype == "uint8" else (-9, 9 if dt.is_floating_point else 10)
        assert x.min().item() >= lo and x.max().item() <= hi
    y = lg.testing.make_tensor((3, 3), dtype=lg.float32, device="cpu", low=1.0, high=2.0, requires_grad=True,
                               noncontiguous=True)
    assert y.requires_grad and not y.is_contiguous() and 1.0 <= y.min().item() and y.max().item() <= 2.0
    z = lg.testing.make_tensor(100, dtype=lg.int64, device="cpu", low=-1, high=2, exclude_zero=True)
    assert (z != 0).all().item()
