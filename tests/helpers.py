"""Shared test helpers: finite differences and framework-neutral comparisons."""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

import lightgrad as lg

try:
    import torch
except ImportError:  # the parity checks are skipped without PyTorch
    torch = None


def numeric_grads(f: Callable[..., np.ndarray], xs: Sequence[np.ndarray], r: np.ndarray,
                  eps: float = 1e-6) -> list[np.ndarray]:
    """Central differences of ``sum(f(*xs) * r)`` with respect to each float input."""
    out = []
    for x in xs:
        g = np.zeros_like(x)
        if x.dtype.kind != "f":
            out.append(g)
            continue
        it = np.nditer(x, flags=["multi_index"])
        for _ in it:
            idx = it.multi_index
            old = x[idx]
            x[idx] = old + eps
            hi = float(np.sum(f(*xs) * r))
            x[idx] = old - eps
            lo = float(np.sum(f(*xs) * r))
            x[idx] = old
            g[idx] = (hi - lo) / (2 * eps)
        out.append(g)
    return out


def lg_value(f: Callable[..., Any], arrays: Sequence[np.ndarray]) -> np.ndarray:
    with lg.no_grad():
        return np.asarray(f(lg, *[lg.tensor(a) for a in arrays])._data, np.float64)


def to_np(t: Any) -> np.ndarray:
    if isinstance(t, lg.Tensor):
        return t.detach()._data
    return t.detach().numpy()


def allocations(step: Callable[[], Any], steps: int = 10) -> tuple[int, int, list[Any]]:
    """Runs ``step`` ``steps`` times under tracemalloc: (peak traced bytes above the start, NumPy
    blocks over 1 KiB left behind, the step's results)."""
    tracemalloc.start()
    try:
        start, _ = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        before = tracemalloc.take_snapshot()
        results = [step() for _ in range(steps)]
        _, peak = tracemalloc.get_traced_memory()
        after = tracemalloc.take_snapshot()
    finally:
        tracemalloc.stop()
    dom = [tracemalloc.DomainFilter(True, np.lib.tracemalloc_domain)]
    old = {t.traceback for t in before.filter_traces(dom).traces}
    leaked = [t for t in after.filter_traces(dom).traces if t.size > 1024 and t.traceback not in old]
    return peak - start, len(leaked), results


# ---- parity with PyTorch: one function, written against the shared API, run in both ----------------

def _leaves(T: Any, arrays: Sequence[np.ndarray], grad: bool) -> list[Any]:
    return [T.tensor(np.array(a), requires_grad=grad and a.dtype.kind == "f") for a in arrays]


def _outputs(out: Any) -> list[Any]:
    return list(out) if isinstance(out, tuple | list) else [out]


def builtin_type(e: BaseException) -> type[BaseException]:
    """The first built-in class of a PyTorch exception (``torch._C._LinAlgError`` is a RuntimeError)."""
    return next(c for c in type(e).__mro__ if c.__module__ == "builtins")


def _dtype_name(t: Any) -> str:
    return str(t.dtype).rsplit(".", 1)[-1]


def attempt(f: Callable[[], Any]) -> tuple[Any, BaseException | None]:
    try:
        return f(), None
    except Exception as e:  # compared by the caller
        return None, e


def assert_same_outcome(lg_err: BaseException | None, torch_err: BaseException | None, what: str) -> None:
    """Either both raised an exception of the same built-in type, or neither did."""
    if torch_err is None and lg_err is not None:
        raise AssertionError(f"{what}: lightgrad raised where PyTorch did not") from lg_err
    if torch_err is not None:
        want = builtin_type(torch_err)
        assert lg_err is not None, f"{what}: PyTorch raised {want.__name__}({torch_err}), lightgrad did not"
        assert isinstance(lg_err, want), \
            f"{what}: PyTorch raised {want.__name__}({torch_err}), lightgrad {type(lg_err).__name__}({lg_err})"


def assert_close_to_torch(lo: Any, to: Any, rtol: float, atol: float, what: str) -> None:
    """Same shape, dtype and values (NaNs in the same places)."""
    assert tuple(lo.shape) == tuple(to.shape), f"{what}: shape {tuple(lo.shape)} != torch {tuple(to.shape)}"
    assert _dtype_name(lo) == _dtype_name(to), f"{what}: dtype {lo.dtype} != torch {to.dtype}"
    got, want = to_np(lo), to_np(to)
    if want.dtype.kind == "f":
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, equal_nan=True, err_msg=what)
    else:
        np.testing.assert_array_equal(got, want, err_msg=what)


def torch_parity(fn: Callable[..., Any], arrays: Sequence[np.ndarray], *, grad: bool = True, rtol: float = 1e-9,
                 atol: float = 1e-12, what: str = "") -> tuple[Any, Any]:
    """Runs ``fn(T, *tensors)`` with T = lightgrad and T = torch on the same arrays (float ones require
    grad) and checks that both raise the same type of exception, or that the outputs (a tensor or a
    tuple of them) agree in shape, dtype and value, and so do the gradients of ``sum(out_i * r_i)``
    over the float outputs, ``r_i`` fixed random weights. Returns the two outputs (None on raising).
    ``torch_parity(lambda T, a, b: a * b, [np.ones(3), np.ones(())])`` checks a broadcast product."""
    lts, tts = _leaves(lg, arrays, grad), _leaves(torch, arrays, grad)
    to, t_err = attempt(lambda: fn(torch, *tts))
    lo, l_err = attempt(lambda: fn(lg, *lts))
    assert_same_outcome(l_err, t_err, what)
    if t_err is not None:
        return None, None
    louts, touts = _outputs(lo), _outputs(to)
    assert len(louts) == len(touts), f"{what}: {len(louts)} outputs, torch {len(touts)}"
    for i, (a, b) in enumerate(zip(louts, touts)):
        assert_close_to_torch(a, b, rtol, atol, f"{what} output {i}")
        assert a.requires_grad == b.requires_grad, f"{what} output {i}: requires_grad {a.requires_grad}, torch's not"
    diff = [(a, b) for a, b in zip(louts, touts) if b.requires_grad]
    if not diff:
        return lo, to
    rng = np.random.default_rng(0)
    weights = [np.asarray(rng.normal(size=tuple(b.shape))) for _, b in diff]  # (float64 when 0-d too)
    sum((a * lg.tensor(r)).sum() for (a, _), r in zip(diff, weights)).backward()
    sum((b * torch.tensor(r)).sum() for (_, b), r in zip(diff, weights)).backward()
    for i, (lt, tt) in enumerate(zip(lts, tts)):
        if not tt.requires_grad:
            continue
        want = np.zeros(tt.shape) if tt.grad is None else tt.grad.numpy()
        got = np.zeros(tuple(lt.shape)) if lt.grad is None else to_np(lt.grad)
        assert got.shape == want.shape, f"{what}: grad {i} shape {got.shape} != torch {want.shape}"
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, equal_nan=True, err_msg=f"{what}: grad {i}")
    return lo, to
