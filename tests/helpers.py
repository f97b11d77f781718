"""Shared test helpers: finite differences, comparisons with PyTorch, and the table runners.

The table runners hold the checks of tables whose rows are split across subject files: the layer
table (test_nn_layers.py, test_nn_loss.py), the functional table (test_nn_conv.py, test_nn_pool.py,
test_nn_vision.py, test_nn_attention.py) and the both-precisions table (test_nn_vision.py,
test_nn_pool.py, test_nn_layers.py, test_nn_loss.py, test_nn_init.py)."""

from __future__ import annotations

import tracemalloc
import warnings
import zlib
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest

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


needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed")


# ---- one function run in both frameworks: its results, or the exception it raised ----------------

FRAMEWORKS = (lg, torch)


def numpy_forced(t: Any) -> np.ndarray:
    return t.detach()._data if isinstance(t, lg.Tensor) else t.detach().numpy(force=True)  # (ZeroTensors too)


def results_on_both(f: Callable[[Any], Any]) -> tuple[Any, Any]:
    """f run on each framework: its results, or the exception it raised."""
    out = []
    for T in FRAMEWORKS:
        try:
            out.append(f(T))
        except Exception as e:  # noqa: BLE001 - compared below
            out.append(e)
    return out[0], out[1]


def assert_same_results(a: Any, b: Any, rtol: float = 1e-6) -> None:
    """Two ``results_on_both``: the same exception type, or equal items (tensors by shape, dtype and value)."""
    if isinstance(b, Exception):
        assert type(a) is type(b), (a, b)
        return
    assert not isinstance(a, Exception), a
    for x, y in zip(a, b, strict=True):
        if y is None or isinstance(y, bool | str | int | list | tuple):
            assert x == y
        else:
            assert tuple(x.shape) == tuple(y.shape)
            assert x.dtype.name == str(y.dtype).replace("torch.", "")
            np.testing.assert_allclose(numpy_forced(x), numpy_forced(y), rtol=rtol, equal_nan=True)


# ---- the same array in both frameworks, and results compared -------------------------------------

def tensor_pair(a: np.ndarray, grad: bool = False) -> tuple[Any, Any]:
    return lg.tensor(a, requires_grad=grad), torch.tensor(a, requires_grad=grad)


def assert_like_torch(lt: Any, tt: Any, rtol: float = 1e-12, atol: float = 0.0) -> None:
    """Same shape, dtype and values (NaNs in the same places; every dtype compared with allclose)."""
    assert tuple(lt.shape) == tuple(tt.shape)
    assert lt.dtype.name == str(tt.dtype).replace("torch.", "")
    np.testing.assert_allclose(lt.detach().numpy(), tt.detach().numpy(), rtol=rtol, atol=atol, equal_nan=True)


def on_both(fn: Any, *arrays: np.ndarray) -> tuple[Any, Any]:
    """``fn(T, *tensors)`` with T = lightgrad and T = torch, on tensors of the same arrays."""
    return fn(lg, *[lg.tensor(a) for a in arrays]), fn(torch, *[torch.tensor(a) for a in arrays])


def assert_same_exactly(a: Any, b: Any) -> None:
    """Same shape, dtype and values, bit for bit (NaN equals NaN)."""
    a = a.detach().numpy() if isinstance(a, lg.Tensor) else np.asarray(a)
    b = b.detach().numpy()
    assert a.shape == b.shape and a.dtype == b.dtype, (a.shape, a.dtype, b.shape, b.dtype)
    np.testing.assert_array_equal(a, b)


def grads_on_both(fn: Any, data: np.ndarray, g: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The gradients of ``sum(fn(T, x) * g)`` in lightgrad and in torch (g random when not given)."""
    a = lg.tensor(data, requires_grad=True)
    b = torch.tensor(data, requires_grad=True)
    ra, rb = fn(lg, a), fn(torch, b)
    w = np.random.default_rng(0).normal(size=tuple(rb.shape)) if g is None else g
    (ra * lg.tensor(w)).sum().backward()
    (rb * torch.tensor(w)).sum().backward()
    return a.grad.numpy(), b.grad.numpy()


def check_scalar_against_torch(f: Callable[..., Any], *arrays: np.ndarray, fd: bool = True,
                               tol: float = 1e-9) -> None:
    """f(L, *inputs) (a scalar) and its gradients match PyTorch; in float64 also finite differences."""
    ours = [lg.tensor(a, requires_grad=True) for a in arrays]
    ref = [torch.tensor(a, requires_grad=True) for a in arrays]
    out, out_ref = f(lg, *ours), f(torch, *ref)
    out.backward()
    out_ref.backward()
    np.testing.assert_allclose(out.detach().numpy(), out_ref.detach().numpy(), rtol=tol * 100, atol=tol * 100)
    for t, r in zip(ours, ref, strict=True):
        np.testing.assert_allclose(t.grad.numpy(), r.grad.numpy(), rtol=tol * 1e3, atol=tol * 1e3)
    if fd:
        num = numeric_grads(lambda *v: f(lg, *[lg.tensor(x) for x in v]).numpy(), [a.copy() for a in arrays],
                            np.array(1.0))
        for t, n in zip(ours, num, strict=True):
            np.testing.assert_allclose(t.grad.numpy(), n, rtol=1e-5, atol=1e-6)


def outputs_and_grads(T: Any, f: Any, arrays: list[np.ndarray], seed: np.ndarray, need: list[bool] | None = None,
                      twice: bool = False) -> list[Any]:
    """The output of f and the gradients of (f * seed).sum() for the inputs that require them (all
    unless ``need`` says; None for the others). With ``twice``, backward runs a second time on the
    retained graph, and the second gradients must equal the first."""
    need = need or [True] * len(arrays)
    xs = [T.tensor(a, requires_grad=r) for a, r in zip(arrays, need)]
    y = f(T, *xs)
    loss = (y * T.tensor(seed)).sum()
    loss.backward(retain_graph=twice)
    first = [x.grad.numpy().copy() if r else None for x, r in zip(xs, need)]
    if twice:
        for x in xs:
            x.grad = None
        loss.backward()
        for a, x in zip(first, xs):
            np.testing.assert_array_equal(x.grad.numpy(), a)
    return [y.detach().numpy()] + first


# ---- modules and functions compared in float64 (tight) and float32 -------------------------------

DTYPE_TOL = {"float64": dict(rtol=1e-10, atol=1e-10), "float32": dict(rtol=2e-4, atol=2e-4)}


def numpy_of(t: Any) -> np.ndarray | None:
    return t.detach().numpy() if t is not None else None


def assert_close_by_dtype(a: Any, b: Any, dtype: str, what: str = "") -> None:
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), err_msg=what, **DTYPE_TOL[dtype])


def compare_functions(lg_fn: Any, t_fn: Any, arrays: list[np.ndarray | None], dtype: str, rng: np.random.Generator,
                      **kw: Any) -> None:
    """Same float inputs (None kept) through both functions: outputs and all input gradients."""
    ts = [None if a is None else torch.tensor(a.astype(dtype), requires_grad=True) for a in arrays]
    ls = [None if a is None else lg.tensor(a.astype(dtype), requires_grad=True) for a in arrays]
    to, lo = t_fn(*ts, **kw), lg_fn(*ls, **kw)
    assert tuple(lo.shape) == tuple(to.shape), (kw, lo.shape, to.shape)
    assert_close_by_dtype(numpy_of(lo), numpy_of(to), dtype, f"output {kw}")
    g = rng.standard_normal(tuple(to.shape)).astype(dtype)
    to.backward(torch.tensor(g))
    lo.backward(lg.tensor(g))
    for i, (t, lt) in enumerate(zip(ts, ls, strict=True)):
        if t is not None:
            assert_close_by_dtype(numpy_of(lt.grad), numpy_of(t.grad), dtype, f"grad {i} {kw}")


def state_to_lg(sd: dict[str, Any]) -> dict[str, Any]:
    return {k: lg.tensor(v.detach().numpy()) for k, v in sd.items()}


def state_to_torch(sd: dict[str, Any]) -> dict[str, Any]:
    return {k: torch.tensor(v.numpy()) for k, v in sd.items()}


def assert_param_grads_match(lm: Any, tm: Any, dtype: str) -> None:
    for (n, p), (tn, tp) in zip(lm.named_parameters(), tm.named_parameters(), strict=True):
        assert n == tn
        assert_close_by_dtype(numpy_of(p.grad), numpy_of(tp.grad), dtype, n)


# ---- the layer table: rows (name, ctor(T), input specs[, fd_adjust]) run in float64 -------------
# ``ctor(T)`` builds the layer (or a function) with T = lightgrad or T = torch from the shared API;
# checked (a) forward and backward against central finite differences (inputs and parameters),
# (b) against PyTorch with identical weights (loaded through ``state_dict``): outputs, input
# gradients, parameter gradients and buffers, in train and then eval mode.

# input specs: (kind, shape, extra, requires_grad)

def N(*shape: int) -> tuple:
    """Standard normal floats, differentiated."""
    return ("normal", shape, None, True)


def K(*shape: int) -> tuple:
    """Normal floats kept >= 0.05 away from 0 (for kinks at 0), differentiated."""
    return ("away", shape, None, True)


def P(*shape: int, grad: bool = True) -> tuple:
    """Probabilities in (0.05, 0.95)."""
    return ("prob", shape, None, grad)


def C(*shape: int) -> tuple:
    """Normal floats that are constants (targets)."""
    return ("normal", shape, None, False)


def I(high: int, *shape: int, ignore: int | None = None) -> tuple:  # noqa: E743
    """int64 class indices in [0, high); with ``ignore``, a few entries are set to it."""
    return ("int", shape, (high, ignore), False)


def S(*shape: int) -> tuple:
    """+1/-1 float targets."""
    return ("sign", shape, None, False)


def D(*shape: int, dim: int = 1) -> tuple:
    """Probability distributions along ``dim`` (softmax of normals), constants."""
    return ("dist", shape, dim, False)


def make_inputs(specs: list[tuple], seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    out = []
    for kind, shape, extra, _ in specs:
        if kind == "normal":
            a = rng.standard_normal(shape)
        elif kind == "away":
            a = rng.standard_normal(shape)
            a = np.where(np.abs(a) < 0.05, np.sign(a + 1e-9) * 0.3, a)
        elif kind == "prob":
            a = rng.uniform(0.05, 0.95, shape)
        elif kind == "int":
            high, ignore = extra
            a = rng.integers(0, high, shape)
            if ignore is not None:
                a.reshape(-1)[::3] = ignore
        elif kind == "sign":
            a = np.where(rng.random(shape) < 0.5, -1.0, 1.0)
        else:
            z = rng.standard_normal(shape)
            e = np.exp(z - z.max(extra, keepdims=True))
            a = e / e.sum(extra, keepdims=True)
        out.append(np.asarray(a))
    return out


def nn(T: Any) -> Any:
    return T.nn


def fn(f: Callable[..., Any]) -> Callable[[Any], Any]:
    """A row built from a functional call: ``fn(lambda T, x: T.nn.functional.gelu(x))``."""
    return lambda T: (lambda *xs: f(T, *xs))


def t64(T: Any, values: Any) -> Any:
    return T.tensor(np.asarray(values, np.float64))


Row = tuple  # (name, ctor, input specs[, fd_adjust])


def build(T: Any, ctor: Callable[[Any], Any]) -> Any:
    m = ctor(T)
    if isinstance(m, T.nn.Module):
        m.double()
    return m


def upstream(shape: tuple[int, ...]) -> np.ndarray:
    """A fixed random upstream gradient, so that every output element is checked."""
    return np.random.default_rng(1234).standard_normal(shape)


def forward_backward(T: Any, m: Any, arrays: list[np.ndarray], specs: list[tuple]) -> tuple[np.ndarray, dict]:
    """Output, and gradients of sum(out * r) by input index and parameter name."""
    xs = [T.tensor(a, requires_grad=bool(s[3])) for a, s in zip(arrays, specs)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = m(*xs)
    grads: dict[Any, np.ndarray] = {}
    out_np = np.array(out.detach().numpy(), np.float64)
    if out.requires_grad:
        (out * T.tensor(upstream(tuple(out.shape)))).sum().backward()
        for i, x in enumerate(xs):
            if x.requires_grad:
                grads[i] = x.grad.numpy().copy() if x.grad is not None else np.zeros(x.shape)
        if isinstance(m, T.nn.Module):
            for name, p in m.named_parameters():
                grads[name] = p.grad.numpy().copy() if p.grad is not None else np.zeros(tuple(p.shape))
                p.grad = None
    return out_np, grads


def randomize(m: Any, seed: int = 7) -> None:
    """Replace the default init by random values (ones/zeros would hide weight-gradient bugs)."""
    rng = np.random.default_rng(seed)
    T = lg if isinstance(m, lg.nn.Module) else torch
    with T.no_grad():
        for _, p in m.named_parameters():
            p.copy_(T.tensor(rng.standard_normal(tuple(p.shape))))


def check_layer_row_finite_differences(row: Row) -> None:
    """Forward and backward of the row against central finite differences, in train and eval mode."""
    name, ctor, specs = row[:3]
    adjust = row[3] if len(row) > 3 else None
    m = build(lg, ctor)
    arrays = make_inputs(specs)
    gi = [i for i, s in enumerate(specs) if s[3]]  # the differentiated inputs
    params: list[tuple[str, Any]] = []
    if isinstance(m, lg.nn.Module):
        randomize(m)
        params = list(m.named_parameters())
    for mode in (True, False):
        if isinstance(m, lg.nn.Module):
            m.train(mode)
        out, grads = forward_backward(lg, m, arrays, specs)
        if not grads:
            continue
        r = upstream(out.shape)

        def f(*arrs: np.ndarray) -> np.ndarray:
            xs = list(arrays)
            for k, i in enumerate(gi):
                xs[i] = arrs[k]
            with lg.no_grad(), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                return np.asarray(m(*[lg.tensor(a) for a in xs])._data, np.float64)

        wrt = [arrays[i].copy() for i in gi] + [p._data for _, p in params]
        num = numeric_grads(f, wrt, r)
        keys: list[Any] = gi + [n for n, _ in params]
        for k, g in zip(keys, num):
            if adjust is not None:
                adjust(k, g, arrays)
            np.testing.assert_allclose(grads[k], g, rtol=1e-5, atol=1e-6, err_msg=f"{name}: gradient of {k}")


def check_layer_row_against_torch(row: Row) -> None:
    """The row against PyTorch with identical weights: outputs, gradients and state, train and eval."""
    name, ctor, specs = row[:3]
    tm, lm = build(torch, ctor), build(lg, ctor)
    is_module = isinstance(tm, torch.nn.Module)
    if is_module:
        randomize(tm)
        lm.load_state_dict({k: v.numpy() for k, v in tm.state_dict().items()})
    arrays = make_inputs(specs)
    for mode in (True, False):
        if is_module:
            tm.train(mode)
            lm.train(mode)
        t_out, t_grads = forward_backward(torch, tm, arrays, specs)
        l_out, l_grads = forward_backward(lg, lm, arrays, specs)
        np.testing.assert_allclose(l_out, t_out, rtol=1e-7, atol=1e-9, err_msg=f"{name}: output (train={mode})")
        assert set(l_grads) == set(t_grads), f"{name}: gradients of {set(l_grads)} vs torch {set(t_grads)}"
        for k in t_grads:
            np.testing.assert_allclose(l_grads[k], t_grads[k], rtol=1e-7, atol=1e-9,
                                       err_msg=f"{name}: gradient of {k} (train={mode})")
        if is_module:
            ts, ls = tm.state_dict(), lm.state_dict()
            assert list(ls) == list(ts), f"{name}: state_dict keys"
            for k in ts:
                np.testing.assert_allclose(ls[k].numpy(), ts[k].numpy(), rtol=1e-7, atol=1e-9,
                                           err_msg=f"{name}: state {k} (train={mode})")


# ---- rows run in float64 (tight) and float32: (name, fn(T, *inputs), input specs, fd) -----------
# Same inputs, same upstream gradient, outputs and every input gradient compared with PyTorch; rows
# marked ``fd`` also check the float64 gradients against central finite differences.

class G:
    """A differentiated float input: standard normal times ``scale`` (values kept away from 0 if ``away``)."""

    def __init__(self, *shape: int, scale: float = 1.0, away: bool = False, lo: float | None = None,
                 hi: float | None = None) -> None:
        self.shape, self.scale, self.away, self.lo, self.hi = shape, scale, away, lo, hi

    def make(self, rng: np.random.Generator) -> np.ndarray:
        if self.lo is not None:
            return rng.uniform(self.lo, self.hi, self.shape)
        a = rng.standard_normal(self.shape) * self.scale
        if self.away:
            a = np.where(np.abs(a) < 0.1, np.sign(a + 1e-12) * 0.1 + a, a)
        return a


class GV(G):
    """A differentiated float input with fixed values (ties, duplicates)."""

    def __init__(self, value: Any) -> None:
        self.value = np.asarray(value, float)

    def make(self, rng: np.random.Generator) -> np.ndarray:
        return self.value.copy()


class CV:
    """A constant (not differentiated) input, int or float."""

    def __init__(self, value: Any) -> None:
        self.value = np.asarray(value)

    def make(self, rng: np.random.Generator) -> np.ndarray:
        return self.value.copy()


Case = tuple[str, Callable[..., Any], list[Any], bool]


def run_case_in(T: Any, fn: Callable[..., Any], arrays: list[np.ndarray], specs: list[Any], dtype: Any,
                upstream: list[np.ndarray] | None
                ) -> tuple[list[np.ndarray], list[np.ndarray | None], list[np.ndarray]]:
    """Forward and backward in framework T: (outputs, input grads, the upstream gradients used)."""
    ts = []
    for a, s in zip(arrays, specs, strict=True):
        if a.dtype.kind == "f":
            t = T.tensor(a, dtype=dtype)
        else:
            t = T.tensor(a)
        if isinstance(s, G):
            t.requires_grad_(True)
        ts.append(t)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = fn(T, *ts)
    outs = list(out) if isinstance(out, tuple | list) else [out]
    vals = [o.detach().numpy() if T is torch else o.detach().numpy() for o in outs]
    if upstream is None:
        rng = np.random.default_rng(1)
        upstream = [rng.standard_normal(v.shape) for v in vals]
    loss = None
    for o, r in zip(outs, upstream, strict=True):
        if o.dtype.is_floating_point and o.requires_grad:
            term = (o * T.tensor(r, dtype=dtype)).sum()
            loss = term if loss is None else loss + term
    if loss is not None:
        loss.backward()
    grads = [None if t.grad is None else t.grad.detach().numpy() for t in ts]
    return vals, grads, upstream


def check_case_in_precision(name: str, fn: Callable[..., Any], specs: list[Any], fd: bool, precision: str) -> None:
    """The row in ``precision`` against PyTorch (and, for ``fd`` rows in float64, finite differences)."""
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    arrays = [s.make(rng) for s in specs]
    tol = dict(rtol=1e-9, atol=1e-10) if precision == "float64" else dict(rtol=2e-4, atol=2e-5)
    t_vals, t_grads, up = run_case_in(torch, fn, arrays, specs, getattr(torch, precision), None)
    l_vals, l_grads, _ = run_case_in(lg, fn, arrays, specs, getattr(lg, precision), up)
    assert len(l_vals) == len(t_vals)
    for lv, tv in zip(l_vals, t_vals, strict=True):
        assert lv.shape == tv.shape
        assert lv.dtype == tv.dtype
        np.testing.assert_allclose(lv, tv, **tol)
    for s, lgd, tgd in zip(specs, l_grads, t_grads, strict=True):
        if isinstance(s, G):
            assert lgd is not None and tgd is not None
            assert lgd.dtype == tgd.dtype
            np.testing.assert_allclose(lgd, tgd, **tol)
    if fd and precision == "float64":
        diff = [i for i, s in enumerate(specs) if isinstance(s, G)]

        def f(*xs: np.ndarray) -> np.ndarray:
            full = list(arrays)
            for i, x in zip(diff, xs, strict=True):
                full[i] = x
            with lg.no_grad(), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                out = fn(lg, *[lg.tensor(a) for a in full])
            return (out[0] if isinstance(out, tuple) else out).numpy()

        num = numeric_grads(f, [arrays[i].copy() for i in diff], up[0])
        for i, g in zip(diff, num, strict=True):
            np.testing.assert_allclose(l_grads[i], g, rtol=1e-5, atol=1e-6)


def assert_error_like_torch(name: str, call: Callable[[Any], Any], own_wording: set[str]) -> None:
    """``call(lightgrad)`` raises PyTorch's exception type and message (the type only for the names in
    ``own_wording``, whose messages are lightgrad's own: PyTorch's is terse or names its C++ internals)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(Exception) as t_err:
            call(torch)
        with pytest.raises(Exception) as l_err:
            call(lg)
    assert type(l_err.value) is type(t_err.value)
    if name not in own_wording:
        # PyTorch's messages name its own types (torch.Size) and one carries stray source indentation
        want = str(t_err.value).replace("                          ", " ")
        assert str(l_err.value).replace("lightgrad.", "torch.") == want


# ---- functional cases: (id, fn(F, *inputs, *consts), input shapes, constant arrays) --------------
# F is lightgrad.nn.functional or torch.nn.functional; inputs are float64 standard normals from the
# caller's generator, every one differentiated.

def lg_call(fn: Callable[..., Any], xs: list[np.ndarray], consts: list[np.ndarray], grad: bool) -> Any:
    ts = [lg.tensor(a, requires_grad=grad) for a in xs]
    out = fn(lg.nn.functional, *ts, *[lg.tensor(c) for c in consts])
    return (out[0] if isinstance(out, tuple) else out), ts


def torch_call(fn: Callable[..., Any], xs: list[np.ndarray], consts: list[np.ndarray]) -> Any:
    ts = [torch.tensor(a, requires_grad=True) for a in xs]
    out = fn(torch.nn.functional, *ts, *[torch.tensor(c) for c in consts])
    return (out[0] if isinstance(out, tuple) else out), ts


def random_arrays(rng: np.random.Generator, shapes: list[tuple[int, ...]], dtype: Any = np.float64) -> list[np.ndarray]:
    return [rng.standard_normal(s).astype(dtype) for s in shapes]


def check_case_against_torch(case: Any, rng: np.random.Generator) -> None:
    """Values and gradients of every input equal PyTorch's (float64)."""
    _, fn, shapes, consts = case
    xs = random_arrays(rng, shapes)
    lo, lts = lg_call(fn, xs, consts, True)
    to, tts = torch_call(fn, xs, consts)
    assert tuple(lo.shape) == tuple(to.shape)
    np.testing.assert_allclose(lo.detach().numpy(), to.detach().numpy(), rtol=1e-10, atol=1e-12)
    r = rng.standard_normal(tuple(to.shape))
    (lo * lg.tensor(r)).sum().backward()
    (to * torch.tensor(r)).sum().backward()
    for a, b in zip(lts, tts):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-9, atol=1e-11)


def check_case_finite_differences(case: Any, rng: np.random.Generator) -> None:
    """Autograd equals central differences of the lightgrad forward (float64)."""
    _, fn, shapes, consts = case
    xs = random_arrays(rng, shapes)
    out, ts = lg_call(fn, xs, consts, True)
    r = rng.standard_normal(tuple(out.shape))
    (out * lg.tensor(r)).sum().backward()

    def value(*arrs: np.ndarray) -> np.ndarray:
        with lg.no_grad():
            return lg_call(fn, list(arrs), consts, False)[0].numpy()

    for t, num in zip(ts, numeric_grads(value, xs, r)):
        np.testing.assert_allclose(t.grad.numpy(), num, rtol=1e-5, atol=1e-6)


def check_double_backward_against_torch(case: Any, rng: np.random.Generator) -> None:
    """create_graph=True: the gradient of (sum of squared first gradients) equals PyTorch's."""
    _, fn, shapes = case
    xs = random_arrays(rng, shapes)
    outs = []
    for mod, grad in ((lg, lg.autograd.grad), (torch, torch.autograd.grad)):
        ts = [mod.tensor(a, requires_grad=True) for a in xs]
        y = fn(mod.nn.functional, *ts)
        gs = grad((y * y).sum(), ts, create_graph=True)
        sum((g * g).sum() for g in gs).backward()
        outs.append([t.grad.numpy() if mod is lg else t.grad.detach().numpy() for t in ts])
    for a, b in zip(*outs):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-10)


def load_from_torch(lm: Any, tm: Any) -> None:
    """tm's state_dict into lm: the same keys, in order, and shapes."""
    assert list(lm.state_dict().keys()) == list(tm.state_dict().keys())
    for k, v in tm.state_dict().items():
        assert tuple(lm.state_dict()[k].shape) == tuple(v.shape), k
    lm.load_state_dict({k: lg.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})


def check_module_case_against_torch(case: Any, rng: np.random.Generator) -> None:
    """(id, make(nn namespace), input shape): output, input gradient and parameter gradients with
    identical weights (float64); same repr."""
    _, make, shape = case
    tm = make(torch.nn).double()
    lm = make(lg.nn).to(lg.float64)
    load_from_torch(lm, tm)
    assert repr(lm) == repr(tm)
    x = rng.standard_normal(shape)
    lx, tx = lg.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    lo, to = lm(lx), tm(tx)
    np.testing.assert_allclose(lo.detach().numpy(), to.detach().numpy(), rtol=1e-10, atol=1e-12)
    r = rng.standard_normal(tuple(to.shape))
    (lo * lg.tensor(r)).sum().backward()
    (to * torch.tensor(r)).sum().backward()
    np.testing.assert_allclose(lx.grad.numpy(), tx.grad.numpy(), rtol=1e-9, atol=1e-11)
    tp = dict(tm.named_parameters())
    for name, p in lm.named_parameters():
        np.testing.assert_allclose(p.grad.numpy(), tp[name].grad.numpy(), rtol=1e-9, atol=1e-11)


def check_error_case(case: Any) -> None:
    """(id, fn(F, T), pattern): bad shapes raise RuntimeError saying expected vs got (PyTorch's type)."""
    _, fn, pattern = case
    with pytest.raises(RuntimeError, match=pattern):
        fn(lg.nn.functional, lg)
    if torch is not None:
        with pytest.raises(RuntimeError):
            fn(torch.nn.functional, torch)
