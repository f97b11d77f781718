"""``lightgrad.testing``: ``assert_close`` (PyTorch's default tolerances per dtype and its mismatch
report) and ``make_tensor`` (random test tensors in a range)."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from . import dtypes as D
from ._ops.creation import empty
from .random import rand, randint
from .tensor import Tensor

# (rtol, atol) by dtype name, PyTorch's defaults; others (integers, bool) compare exactly
_TOLERANCES = {"float16": (1e-3, 1e-5), "bfloat16": (1.6e-2, 1e-5), "float32": (1.3e-6, 1e-5),
               "float64": (1e-7, 1e-7), "complex32": (1e-3, 1e-5), "complex64": (1.3e-6, 1e-5),
               "complex128": (1e-7, 1e-7)}

_NUMBERS = (bool, int, float, complex)


class _Mismatch(AssertionError):
    pass


def _default_tolerances(*dts: Any) -> tuple[float, float]:
    pairs = [_TOLERANCES.get(getattr(d, "name", ""), (0.0, 0.0)) for d in dts]
    return max(p[0] for p in pairs), max(p[1] for p in pairs)


def _diff_msg(kind: str, diff: Any, idx: Any, tol: float, equality: bool) -> str:
    msg = f"{kind.title()} difference: {diff}" if idx is None else f"Greatest {kind} difference: {diff} at index {idx}"
    return msg + ("" if equality else f" (up to {tol} allowed)") + "\n"


def _mismatch_msg(default_identifier: str, extra: str, abs_diff: Any, abs_idx: Any, atol: float, rel_diff: Any,
                  rel_idx: Any, rtol: float) -> str:
    equality = rtol == 0 and atol == 0
    msg = f"{default_identifier} are not {'equal' if equality else 'close'}!\n\n{extra.strip()}\n"
    msg += _diff_msg("absolute", abs_diff, abs_idx, atol, equality)
    msg += _diff_msg("relative", rel_diff, rel_idx, rtol, equality)
    return msg.strip()


def _scalar_msg(actual: Any, expected: Any, rtol: float, atol: float) -> str:
    abs_diff = abs(actual - expected)
    rel_diff = float("inf") if expected == 0 else abs_diff / abs(expected)
    return _mismatch_msg("Scalars", f"Expected {expected} but got {actual}.", abs_diff, None, atol, rel_diff, None,
                         rtol)


def _close_scalars(actual: Any, expected: Any, rtol: float | None, atol: float | None, equal_nan: bool) -> None:
    if rtol is None or atol is None:
        floating = isinstance(actual, float | complex) or isinstance(expected, float | complex)
        rtol, atol = (1e-7, 1e-7) if floating else (0.0, 0.0)
    if actual == expected:
        return
    if isinstance(actual, float | complex) or isinstance(expected, float | complex):
        a, e = complex(actual), complex(expected)
        if equal_nan and (math.isnan(a.real) or math.isnan(a.imag)) and (math.isnan(e.real) or math.isnan(e.imag)):
            return
        if abs(a - e) <= atol + rtol * abs(e):
            return
    raise _Mismatch(_scalar_msg(actual, expected, rtol, atol))


def _index(flat: int, shape: tuple[int, ...]) -> tuple[int, ...]:
    out = []
    for s in reversed(shape):
        flat, r = divmod(flat, s)
        out.append(r)
    return tuple(reversed(out))


def _close_tensors(actual: Tensor, expected: Tensor, rtol: float | None, atol: float | None, equal_nan: bool,
                   check_dtype: bool) -> None:
    if actual.shape != expected.shape:
        raise _Mismatch(f"The values for attribute 'shape' do not match: {actual.shape} != {expected.shape}.")
    if check_dtype and actual.dtype != expected.dtype:
        raise _Mismatch(f"The values for attribute 'dtype' do not match: {actual.dtype} != {expected.dtype}.")
    if rtol is None or atol is None:
        rtol, atol = _default_tolerances(actual.dtype, expected.dtype)
    a, e = actual.detach(), expected.detach()
    if a.dtype != e.dtype:
        common = D.promote_types(a.dtype, e.dtype)
        a, e = a.to(common), e.to(common)
    if a.dtype == D.bool_:
        a, e = a.to(D.int64), e.to(D.int64)
    matches = a.isclose(e, rtol=rtol, atol=atol, equal_nan=equal_nan) if a.is_floating_point() else a == e
    if matches.all().item():
        return
    if a.ndim == 0:
        raise _Mismatch(_scalar_msg(a.item(), e.item(), rtol, atol))
    n = matches.numel()
    bad = n - int(matches.sum().item())
    extra = f"Mismatched elements: {bad} / {n} ({bad / n:.1%})"
    af, ef, mf = a.flatten(), e.flatten(), matches.flatten()
    if not a.is_floating_point():
        af, ef = af.to(D.int64), ef.to(D.int64)
    abs_diff = (af - ef).abs()
    abs_diff[mf] = 0
    i_abs = int(abs_diff.argmax().item()) if not abs_diff.isnan().any().item() else int(abs_diff.isnan().int().argmax().item())
    rel_diff = abs_diff / ef.abs()
    rel_diff[mf] = 0
    i_rel = int(rel_diff.argmax().item()) if not rel_diff.isnan().any().item() else int(rel_diff.isnan().int().argmax().item())
    raise _Mismatch(_mismatch_msg("Tensor-likes", extra, abs_diff[i_abs].item(), _index(i_abs, tuple(a.shape)), atol,
                                  rel_diff[i_rel].item(), _index(i_rel, tuple(a.shape)), rtol))


def _compare(actual: Any, expected: Any, path: str, **kw: Any) -> None:
    try:
        if isinstance(actual, Tensor) and isinstance(expected, Tensor):
            _close_tensors(actual, expected, kw["rtol"], kw["atol"], kw["equal_nan"], kw["check_dtype"])
        elif isinstance(actual, _NUMBERS) and isinstance(expected, _NUMBERS):
            _close_scalars(actual, expected, kw["rtol"], kw["atol"], kw["equal_nan"])
        elif isinstance(actual, Mapping) and isinstance(expected, Mapping):
            missing = [k for k in expected if k not in actual]
            additional = [k for k in actual if k not in expected]
            if missing or additional:
                raise _Mismatch(f"The keys of the mappings do not match:\nMissing keys in the actual mapping: "
                                f"{sorted(missing, key=repr)}\nAdditional keys in the actual mapping: "
                                f"{sorted(additional, key=repr)}")
            for k in expected:
                _compare(actual[k], expected[k], path + f"[{k!r}]", **kw)
        elif (isinstance(actual, Sequence) and isinstance(expected, Sequence)
              and not isinstance(actual, str) and not isinstance(expected, str)):
            if len(actual) != len(expected):
                raise _Mismatch(f"The length of the sequences mismatch: {len(actual)} != {len(expected)}")
            for i, (a, e) in enumerate(zip(actual, expected)):
                _compare(a, e, path + f"[{i}]", **kw)
        else:
            raise TypeError(f"No comparison pair was able to handle inputs of type {type(actual)} and "
                            f"{type(expected)}.")
    except _Mismatch as err:
        if path and "\n\nThe failure occurred for item" not in str(err):
            raise _Mismatch(f"{err}\n\nThe failure occurred for item {path}") from None
        raise


def assert_close(actual: Any, expected: Any, *, allow_subclasses: bool = True, rtol: float | None = None,
                 atol: float | None = None, equal_nan: bool = False, check_device: bool = True,
                 check_dtype: bool = True, check_layout: bool = True, check_stride: bool = False,
                 msg: str | Callable[[str], str] | None = None) -> None:
    """Raise AssertionError unless ``actual`` and ``expected`` are close (tensors, numbers, or sequences and
    mappings of them), with PyTorch's default tolerances for their dtype and its mismatch report.

    >>> lightgrad.testing.assert_close(lightgrad.tensor([1.0]), lightgrad.tensor([1.0 + 1e-7]))
    """
    if (rtol is None) != (atol is None):
        raise ValueError(f"Both 'rtol' and 'atol' must be either specified or omitted, but got no "
                         f"{'rtol' if rtol is None else 'atol'}.")
    try:
        _compare(actual, expected, "", rtol=rtol, atol=atol, equal_nan=equal_nan, check_dtype=check_dtype)
    except _Mismatch as err:
        text = str(err)
        if msg is not None:
            text = msg(text) if callable(msg) else msg
        raise AssertionError(text) from None


def make_tensor(*shape: Any, dtype: Any, device: Any = None, low: float | None = None, high: float | None = None,
                requires_grad: bool = False, noncontiguous: bool = False, exclude_zero: bool = False,
                memory_format: Any = None) -> Tensor:
    """A tensor of ``shape`` with random values in [low, high) (PyTorch's defaults: -9 to 9 for floats and
    signed integers, 0 to 10 for unsigned, random bools): ``make_tensor(2, 3, dtype=lightgrad.float32, device="cpu")``."""
    if len(shape) == 1 and isinstance(shape[0], Sequence):
        shape = tuple(shape[0])
    dt = D.to_dtype(dtype)
    if low is not None and high is not None and low > high:
        raise ValueError(f"`low` must be less than or equal to `high`, but got {low} > {high}")
    if dt == D.bool_:
        out = randint(0, 2, tuple(shape)).to(D.bool_)
    elif dt.is_floating_point:
        lo = -9.0 if low is None else low
        hi = 9.0 if high is None else high
        out = (rand(*shape, dtype=D.float64) * (hi - lo) + lo).to(dt)
    else:
        lo = (0 if not dt.is_signed else -9) if low is None else math.ceil(low)
        hi = 10 if high is None else math.ceil(high)
        out = randint(int(lo), max(int(hi), int(lo) + 1), tuple(shape), dtype=dt)
    if exclude_zero:
        tiny = 1 if not dt.is_floating_point else D.finfo(dt).tiny
        out = out.masked_fill(out == 0, tiny)
    if noncontiguous and out.numel() > 1:
        wide = empty(*shape[:-1], shape[-1] * 2, dtype=dt) if shape else out
        if shape:
            wide[..., ::2] = out
            out = wide[..., ::2]
    return out.requires_grad_(requires_grad) if requires_grad else out
