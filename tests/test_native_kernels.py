"""The native kernels (lightgrad/backend/native): each against PyTorch and against the NumPy path,
finite differences in float64 (the NumPy path), the routing rules (what reaches a kernel and what
stays on NumPy), NaN/inf, and a check that the extension loads where it was built."""

from __future__ import annotations

import contextlib
import math
import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import lightgrad as lg
from lightgrad.backend import native
from tests.helpers import numeric_grads

torch = pytest.importorskip("torch")

needs_native = pytest.mark.skipif(not native.available, reason="the native kernels are off (LIGHTGRAD_NATIVE=0) or not built")


@contextlib.contextmanager
def path(which: str) -> Iterator[None]:
    """Run on the native kernels ("native") or the NumPy path ("numpy")."""
    if which == "native":
        if not native.available:
            pytest.skip("the native kernels are off or not built")
        yield
    else:
        with native.disabled():
            yield


class Spy:
    """Stands in for the kernel module and records which kernels were called."""

    def __init__(self, kernels: Any) -> None:
        self.kernels, self.calls = kernels, []

    def __getattr__(self, name: str) -> Any:
        fn = getattr(self.kernels, name)

        def call(*args: Any) -> Any:
            self.calls.append(name)
            return fn(*args)
        return call


@pytest.fixture
def spy(monkeypatch: pytest.MonkeyPatch) -> Spy:
    if not native.available:
        pytest.skip("the native kernels are off or not built")
    s = Spy(native.kernels)
    monkeypatch.setattr(native, "kernels", s)
    return s


# ---- the op table: lightgrad vs PyTorch (float32) on both paths ---------------------------------

def _ln(m: Any, x: Any, w: Any, b: Any) -> Any:
    return m.nn.functional.layer_norm(x, (x.shape[-1],), w, b, 1e-5)


# name -> (function of the module and tensors, input shapes); the shapes include the issue's
OPS: dict[str, tuple[Callable[..., Any], list[tuple[int, ...]]]] = {
    "gelu": (lambda m, x: m.nn.functional.gelu(x), [(1024, 512)]),
    "gelu_tanh": (lambda m, x: m.nn.functional.gelu(x, approximate="tanh"), [(1024, 512)]),
    "gelu_small": (lambda m, x: m.nn.functional.gelu(x), [(3, 5)]),
    "layer_norm": (_ln, [(1024, 128), (128,), (128,)]),
    "layer_norm_3d": (_ln, [(4, 7, 33), (33,), (33,)]),
    "layer_norm_plain": (lambda m, x: m.nn.functional.layer_norm(x, (x.shape[-1],)), [(8, 300)]),
    "layer_norm_weight_only": (lambda m, x, w: m.nn.functional.layer_norm(x, (x.shape[-1],), w), [(6, 20), (20,)]),
    "layer_norm_long_rows": (_ln, [(3, 5000), (5000,), (5000,)]),
    "softmax": (lambda m, x: x.softmax(-1), [(16, 4, 64, 64)]),
    "softmax_odd": (lambda m, x: x.softmax(-1), [(5, 37)]),
    "log_softmax": (lambda m, x: x.log_softmax(-1), [(64, 1000)]),
    "log_softmax_odd": (lambda m, x: x.log_softmax(1), [(3, 17)]),
    "relu": (lambda m, x: x.relu(), [(64, 16, 28, 28)]),
    "relu_small": (lambda m, x: m.relu(x), [(7,)]),
    "max_pool2d": (lambda m, x: m.nn.functional.max_pool2d(x, 2), [(64, 16, 28, 28)]),
    "max_pool2d_odd": (lambda m, x: m.nn.functional.max_pool2d(x, 2), [(2, 3, 7, 9)]),
    "max_pool2d_7_windows": (lambda m, x: m.nn.functional.max_pool2d(x, 2), [(8, 32, 14, 14)]),  # the CNN's second
    "max_pool2d_3x3": (lambda m, x: m.nn.functional.max_pool2d(x, 3, 2), [(2, 3, 9, 9)]),
}


def _run(module: Any, fn: Callable[..., Any], arrays: list[np.ndarray], r: np.ndarray) -> tuple[np.ndarray, list]:
    ts = [module.tensor(a, requires_grad=True) for a in arrays]
    out = fn(module, *ts)
    (out * module.tensor(r)).sum().backward()
    val = out.detach().numpy() if module is torch else out.detach()._data
    grads = [t.grad.numpy() if module is torch else t.grad._data for t in ts]
    return np.asarray(val), [np.asarray(g) for g in grads]


def _inputs(name: str, shapes: list[tuple[int, ...]], seed: int = 0) -> tuple[list[np.ndarray], np.ndarray]:
    rng = np.random.default_rng(seed)
    arrays = [(rng.standard_normal(s) * 2).astype(np.float32) for s in shapes]
    if name.startswith("layer_norm") and len(arrays) > 1:
        arrays[1] = (1 + 0.1 * arrays[1]).astype(np.float32)
    out_shape = OPS[name][0](torch, *[torch.from_numpy(a) for a in arrays]).shape
    return arrays, rng.standard_normal(tuple(out_shape)).astype(np.float32)


@pytest.mark.parametrize("which", ["native", "numpy"])
@pytest.mark.parametrize("name", list(OPS))
def test_against_torch(name: str, which: str) -> None:
    fn, shapes = OPS[name]
    arrays, r = _inputs(name, shapes)
    torch.set_num_threads(1)
    t_val, t_grads = _run(torch, fn, arrays, r)
    with path(which):
        val, grads = _run(lg, fn, arrays, r)
    # float32 tolerances at PyTorch's own float32 error (its results against float64 are within these)
    np.testing.assert_allclose(val, t_val, rtol=2e-5, atol=2e-6)
    for g, tg in zip(grads, t_grads):
        scale = max(1.0, float(np.abs(tg).max()))
        np.testing.assert_allclose(g, tg, rtol=2e-4, atol=2e-5 * scale)


@needs_native
@pytest.mark.parametrize("name", list(OPS))
def test_native_agrees_with_numpy_path(name: str) -> None:
    fn, shapes = OPS[name]
    arrays, r = _inputs(name, shapes, seed=1)
    val, grads = _run(lg, fn, arrays, r)
    with native.disabled():
        nval, ngrads = _run(lg, fn, arrays, r)
    np.testing.assert_allclose(val, nval, rtol=1e-5, atol=1e-6)
    for g, ng in zip(grads, ngrads):
        np.testing.assert_allclose(g, ng, rtol=1e-4, atol=1e-5 * max(1.0, float(np.abs(ng).max())))


def test_gelu_erf_accuracy_matches_or_beats_torch() -> None:
    """The exact GELU's float32 error against float64 is no larger than PyTorch's float32 error
    (absolute, and relative in the lower tail where x Phi(x) is tiny)."""
    if not native.available:
        pytest.skip("the native kernels are off or not built")
    x = np.concatenate([np.linspace(-12, 12, 200001), -np.geomspace(1e-6, 1, 2001)]).astype(np.float32)
    # float64 reference through erfc (PyTorch's float64 1 + erf cancels in the lower tail)
    ref = x.astype(np.float64) * 0.5 * np.vectorize(math.erfc)(-x.astype(np.float64) / math.sqrt(2))
    ours = lg.nn.functional.gelu(lg.tensor(x))._data.astype(np.float64)
    theirs = torch.nn.functional.gelu(torch.from_numpy(x)).numpy().astype(np.float64)
    assert np.abs(ours - ref).max() <= np.abs(theirs - ref).max()
    tail = (x < -3) & (np.abs(ref) > 1e-30)
    rel = lambda a: float(np.max(np.abs(a[tail] - ref[tail]) / np.abs(ref[tail])))  # noqa: E731
    assert rel(ours) < 1e-5 < rel(theirs)


# ---- NaN, inf and the edges of PyTorch's formulas ----------------------------------------------

SPECIAL = np.array([np.nan, np.inf, -np.inf, -10.0, -50.0, 0.0, -0.0, 3.0, -1.0], np.float32)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # (NumPy warns of the NaN it computes)
@pytest.mark.parametrize("which", ["native", "numpy"])
@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_special_values(approximate: str, which: str) -> None:
    xt = torch.tensor(SPECIAL, requires_grad=True)
    torch.nn.functional.gelu(xt, approximate=approximate).sum().backward()
    with path(which):
        x = lg.tensor(SPECIAL, requires_grad=True)
        y = lg.nn.functional.gelu(x, approximate=approximate)
        y.sum().backward()
    ty = torch.nn.functional.gelu(torch.tensor(SPECIAL), approximate=approximate).numpy()
    finite = ~np.isinf(SPECIAL)  # PyTorch's erf GELU gives NaN at +inf; lightgrad gives the limit, inf
    np.testing.assert_allclose(y._data[finite], ty[finite], atol=1e-6)
    np.testing.assert_allclose(x.grad._data, xt.grad.numpy(), atol=1e-6)
    assert y._data[1] == np.inf


@pytest.mark.parametrize("which", ["native", "numpy"])
def test_relu_special_values(which: str) -> None:
    """NaN stays NaN and passes its gradient (PyTorch's threshold_backward), zero gets none."""
    xt = torch.tensor(SPECIAL, requires_grad=True)
    torch.relu(xt).backward(torch.ones(len(SPECIAL)))
    with path(which):
        x = lg.tensor(SPECIAL, requires_grad=True)
        y = x.relu()
        y.backward(lg.ones(len(SPECIAL)))
    np.testing.assert_array_equal(y._data, torch.relu(torch.tensor(SPECIAL)).numpy())
    np.testing.assert_array_equal(x.grad._data, xt.grad.numpy())


@needs_native
def test_relu_keeps_negative_zero_as_torch() -> None:
    y = lg.tensor([-0.0, 0.0, -1.0]).relu()._data
    assert list(np.signbit(y)) == list(np.signbit(torch.tensor([-0.0, 0.0, -1.0]).relu().numpy()))


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # (NumPy warns of the NaN it computes)
@pytest.mark.parametrize("which", ["native", "numpy"])
@pytest.mark.parametrize("op", ["softmax", "log_softmax"])
def test_softmax_special_rows(op: str, which: str) -> None:
    rows = np.array([[1.0, np.nan, 2.0, 0.5], [-np.inf, -np.inf, -np.inf, -np.inf], [-np.inf, 0.0, 1.0, -np.inf],
                     [np.inf, 1.0, 2.0, 3.0], [1e30, -1e30, 0.0, 1.0], [100.0, 100.0, 100.0, 100.0]], np.float32)
    rows = np.tile(rows, (1000, 1))  # enough rows that the kernel takes rows this short (it splits them)
    g = np.tile(np.arange(24, dtype=np.float32).reshape(6, 4) / 10, (1000, 1))
    xt = torch.tensor(rows, requires_grad=True)
    getattr(xt, op)(-1).backward(torch.tensor(g))
    with path(which), split_rows():
        x = lg.tensor(rows, requires_grad=True)
        y = getattr(x, op)(-1)
        y.backward(lg.tensor(g))
    np.testing.assert_allclose(y._data, getattr(torch.tensor(rows), op)(-1).numpy(), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(x.grad._data, xt.grad.numpy(), rtol=1e-5, atol=1e-6)


@contextlib.contextmanager
def split_rows() -> Iterator[None]:
    """Two kernel threads: the softmax kernel leaves rows under 128 to NumPy unless it splits them."""
    k = native._loaded
    if k is None:
        yield
        return
    saved = k.get_num_threads()
    k.set_num_threads(2)
    try:
        yield
    finally:
        k.set_num_threads(saved)


@needs_native
def test_softmax_kernel_leaves_short_rows_on_one_thread_to_numpy(spy: Spy) -> None:
    """Rows under 128 that one thread would run take NumPy's path (faster there); longer rows, or rows
    split between threads, take the kernel, and give the same values."""
    k = spy.kernels
    x = np.random.default_rng(3).standard_normal((4096, 64)).astype(np.float32)
    saved = k.get_num_threads()
    try:
        k.set_num_threads(1)
        assert k.softmax(x, np.empty_like(x), 64, False) is False
        wide = x.reshape(1024, 256)
        assert k.softmax(wide, np.empty_like(wide), 256, False) is True
        k.set_num_threads(2)
        y = np.empty_like(x)
        assert k.softmax(x, y, 64, False) is True
    finally:
        k.set_num_threads(saved)
    k.set_num_threads(1)
    try:
        with native.disabled():
            want = lg.tensor(x).softmax(-1)._data
        got = lg.tensor(x).softmax(-1)._data  # declined: NumPy's path, its bits
    finally:
        k.set_num_threads(saved)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_allclose(y, want, rtol=2e-6, atol=1e-8)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("which", ["native", "numpy"])
@pytest.mark.parametrize("op", ["softmax", "log_softmax"])
def test_softmax_long_rows_with_specials(op: str, which: str) -> None:
    """Rows of 40 (the kernel's vector lanes and its tail): a NaN or an infinity inside the vector part,
    masked -inf entries, and values whose exponentials are denormal (-90 .. -104) or round to 0."""
    rng = np.random.default_rng(5)
    rows = rng.standard_normal((5, 40)).astype(np.float32)
    rows[0, 7] = np.nan
    rows[1, 20:] = -np.inf  # a causal mask's row
    rows[2, 3] = np.inf
    rows[3, :6] = [-90.0, -100.0, -103.9, -104.1, -200.0, -np.inf]
    rows[4, 30] = np.nan  # in the tail
    rows = np.tile(rows, (200, 1))  # enough rows that the kernel takes them (it splits them)
    g = rng.standard_normal(rows.shape).astype(np.float32)
    xt = torch.tensor(rows, requires_grad=True)
    want = getattr(xt, op)(-1)
    want.backward(torch.tensor(g))
    with path(which), split_rows():
        x = lg.tensor(rows, requires_grad=True)
        y = getattr(x, op)(-1)
        y.backward(lg.tensor(g))
    np.testing.assert_allclose(y._data, want.detach().numpy(), rtol=2e-6, atol=1e-7)
    np.testing.assert_allclose(x.grad._data, xt.grad.numpy(), rtol=1e-5, atol=1e-6)
    if op == "softmax":  # the denormal probabilities themselves, to a few ulp of PyTorch's
        np.testing.assert_allclose(y._data[3, :5], want.detach().numpy()[3, :5], rtol=1e-5, atol=0)


@pytest.mark.parametrize("which", ["native", "numpy"])
def test_layer_norm_constant_rows(which: str) -> None:
    """A constant row has variance 0: xhat 0, rstd 1 / sqrt(eps), as PyTorch."""
    x = np.full((3, 16), 2.5, np.float32)
    x[1] = np.linspace(-1, 1, 16)
    xt = torch.tensor(x, requires_grad=True)
    torch.nn.functional.layer_norm(xt, (16,)).pow(2).sum().backward()
    with path(which):
        xl = lg.tensor(x, requires_grad=True)
        y = lg.nn.functional.layer_norm(xl, (16,))
        y.pow(2).sum().backward()
    np.testing.assert_allclose(y._data, torch.nn.functional.layer_norm(torch.tensor(x), (16,)).numpy(), atol=1e-5)
    np.testing.assert_allclose(xl.grad._data, xt.grad.numpy(), atol=1e-4)


def _nan_windows() -> np.ndarray:
    x = (np.arange(2 * 3 * 8 * 9, dtype=np.float32).reshape(2, 3, 8, 9) % 5)
    x[0, 0, 0, 1] = x[0, 0, 1, 0] = np.nan  # two NaNs in a window: the last gets the gradient
    x[0, 1, 2, 3] = np.nan
    x[1, 2, 5, 4] = np.nan
    x[1, 0, 7, 8] = np.nan  # in the row and column a 2x2 pool never reads
    x[1, 1, 3, 3] = np.inf
    return x


def _nan_wide() -> np.ndarray:
    """rows of 18 windows (the kernel's blocks of 8, the last overlapping) with ties and NaNs"""
    rng = np.random.default_rng(8)
    x = rng.integers(0, 4, (2, 3, 21, 37)).astype(np.float32)
    x[rng.random(x.shape) < 0.05] = np.nan
    return x


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("which", ["native", "numpy"])
@pytest.mark.parametrize("k,s,make", [(2, 2, _nan_windows), (3, 2, _nan_windows), (2, 1, _nan_windows),
                                      (2, 2, _nan_wide)])
def test_max_pool_nan_windows_as_torch(which: str, k: int, s: int, make: Callable[[], np.ndarray]) -> None:
    """PyTorch's scan takes `v > max || isnan(v)`: ties to the first maximum, a window's gradient
    (and its index) to its last NaN."""
    x = make()
    xt = torch.tensor(x, requires_grad=True)
    tv, ti = torch.nn.functional.max_pool2d(xt, k, s, return_indices=True)
    tv.backward(torch.ones_like(tv))
    with path(which):
        xl = lg.tensor(x, requires_grad=True)
        v, i = lg.nn.functional.max_pool2d(xl, k, s, return_indices=True)
        v.backward(lg.ones(*v.shape))
    np.testing.assert_array_equal(v._data, tv.detach().numpy())
    np.testing.assert_array_equal(i._data, ti.numpy())
    np.testing.assert_array_equal(xl.grad._data, xt.grad.numpy())


# ---- routing: what reaches a kernel, what stays on NumPy -----------------------------------------

def test_contiguous_float32_reaches_the_kernels(spy: Spy) -> None:
    x = lg.randn(8, 32, requires_grad=True)
    w, b = lg.ones(32, requires_grad=True), lg.zeros(32, requires_grad=True)
    r = lg.randn(8, 32)  # (a gradient of .sum() alone is a broadcast view: that stays on NumPy)
    (lg.nn.functional.gelu(x) * r).sum().backward()
    (lg.nn.functional.layer_norm(x, (32,), w, b) * r).sum().backward()
    (x.softmax(-1) * r).sum().backward()
    (x.log_softmax(-1) * r).sum().backward()
    (x.relu() * r).sum().backward()
    (lg.nn.functional.max_pool2d(x.reshape(2, 1, 4, 32), 2) * lg.randn(2, 1, 2, 16)).sum().backward()
    assert set(spy.calls) >= {"gelu", "layer_norm", "layer_norm_backward", "softmax", "softmax_backward", "relu",
                              "relu_backward", "max_pool2x2", "max_pool2x2_backward"}


@pytest.mark.parametrize("case", ["float64", "empty", "transposed", "broadcast", "softmax_dim0"])
def test_other_arrays_stay_on_numpy(spy: Spy, case: str) -> None:
    a = np.random.default_rng(3).standard_normal((6, 5))
    a32 = a.astype(np.float32)
    x = {"float64": lambda: lg.tensor(a), "empty": lambda: lg.zeros(0, 5), "transposed": lambda: lg.tensor(a32).T,
         "broadcast": lambda: lg.tensor(a32[:1]).expand(6, 5), "softmax_dim0": lambda: lg.tensor(a32)}[case]()
    ops: list[Callable[[Any], Any]] = [lambda t: t.relu(), lambda t: lg.nn.functional.gelu(t),
                                       lambda t: t.softmax(-1), lambda t: t.log_softmax(-1)]
    if case == "softmax_dim0":
        ops = [lambda t: t.softmax(0), lambda t: t.log_softmax(0)]
    for op in ops:
        with lg.no_grad():
            got = op(x)._data
        with native.disabled(), lg.no_grad():
            want = op(x)._data
        np.testing.assert_array_equal(got, want)
    assert spy.calls == []


@pytest.mark.parametrize("which", ["native", "numpy"])
def test_views_give_torch_results(which: str) -> None:
    """Non-contiguous and broadcast float32 inputs (NumPy path) still match PyTorch."""
    a = np.random.default_rng(4).standard_normal((6, 5)).astype(np.float32)
    cases = [(lambda m, t: m.nn.functional.gelu(t.T)), (lambda m, t: t.T.softmax(-1)), (lambda m, t: t.T.relu()),
             (lambda m, t: t[:1].expand(6, 5).log_softmax(-1))]
    with path(which):
        for f in cases:
            got = f(lg, lg.tensor(a)).detach()._data
            np.testing.assert_allclose(got, f(torch, torch.tensor(a)).numpy(), rtol=1e-5, atol=1e-6)


# ---- finite differences (float64: the NumPy path) ----------------------------------------------

FD_OPS: dict[str, Callable[..., Any]] = {
    "gelu": lambda m, x: m.nn.functional.gelu(x),
    "gelu_tanh": lambda m, x: m.nn.functional.gelu(x, approximate="tanh"),
    "softmax": lambda m, x: x.softmax(-1),
    "log_softmax": lambda m, x: x.log_softmax(-1),
    "relu": lambda m, x: x.relu(),
    "layer_norm": lambda m, x: m.nn.functional.layer_norm(x, (x.shape[-1],)),
}


@pytest.mark.parametrize("name", list(FD_OPS))
def test_finite_differences_float64(name: str) -> None:
    fn = FD_OPS[name]
    rng = np.random.default_rng(5)
    x = rng.standard_normal((3, 7))
    x[np.abs(x) < 0.05] = 0.3  # away from relu's kink
    r = rng.standard_normal((3, 7))
    _, (g,) = _run(lg, fn, [x], r)
    num = numeric_grads(lambda a: fn(lg, lg.tensor(a))._data, [x.copy()], r)[0]
    np.testing.assert_allclose(g, num, rtol=1e-6, atol=1e-7)


# ---- Adam: the same float32 operations as the NumPy rule ---------------------------------------

ADAM_CASES = [
    ("Adam", {}),
    ("Adam", {"weight_decay": 0.1, "maximize": True}),
    ("Adam", {"amsgrad": True, "betas": (0.3, 0.9)}),
    ("AdamW", {"weight_decay": 0.05}),
    ("AdamW", {"amsgrad": True, "maximize": True, "lr": 0.01}),
]


def _adam_trajectory(opt_name: str, kw: dict[str, Any], module: Any, steps: int = 5) -> list[np.ndarray]:
    rng = np.random.default_rng(6)
    inits = [rng.standard_normal(s).astype(np.float32) for s in [(40000,), (7, 3), (5,)]]
    grads = [[rng.standard_normal(a.shape).astype(np.float32) for a in inits] for _ in range(steps)]
    params = [module.tensor(a, requires_grad=True) for a in inits]
    opt = getattr(module.optim, opt_name)(params, **kw)
    for gs in grads:
        for p, g in zip(params, gs):
            p.grad = module.tensor(g)
        opt.step()
    return [p.detach().numpy() if module is torch else p.detach()._data.copy() for p in params]


@needs_native
@pytest.mark.parametrize("opt_name,kw", ADAM_CASES)
def test_adam_bit_identical_to_numpy_rule(spy: Spy, opt_name: str, kw: dict[str, Any]) -> None:
    fused = _adam_trajectory(opt_name, kw, lg)
    assert "adam" in spy.calls
    with native.disabled():
        plain = _adam_trajectory(opt_name, kw, lg)
    for a, b in zip(fused, plain):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("which", ["native", "numpy"])
@pytest.mark.parametrize("opt_name,kw", ADAM_CASES)
def test_adam_matches_torch(which: str, opt_name: str, kw: dict[str, Any]) -> None:
    want = _adam_trajectory(opt_name, kw, torch)
    with path(which):
        got = _adam_trajectory(opt_name, kw, lg)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_adam_float64_stays_on_numpy(spy: Spy) -> None:
    p = lg.tensor(np.ones(100), requires_grad=True)
    p.grad = lg.ones(100, dtype=lg.float64)
    lg.optim.Adam([p]).step()
    assert "adam" not in spy.calls


# ---- the extension itself --------------------------------------------------------------------------

def test_extension_loads_where_it_was_built() -> None:
    """With a C compiler and the package installed (pip install -e . builds the extension), the
    kernels load unless LIGHTGRAD_NATIVE=0: a build that silently stopped working fails here."""
    if os.environ.get("LIGHTGRAD_NATIVE") == "0":
        assert not native.available and native.kernels is None
        return
    if shutil.which("gcc") is None and shutil.which("cc") is None:
        pytest.skip("no C compiler: the NumPy path only")
    sources = [p for p in Path(native.__file__).parent.iterdir() if p.suffix in (".c", ".h")]
    built = list(Path(native.__file__).parent.glob("_kernels*.so")) + list(Path(native.__file__).parent.glob("_kernels*.pyd"))
    assert built, "the native kernels are not built: run `pip install -e .`"
    assert native.available, "the native kernels are built but did not load"
    assert max(p.stat().st_mtime for p in built) >= max(s.stat().st_mtime for s in sources) - 1, \
        "the native kernels are older than their sources: rebuild with `pip install -e .`"


@needs_native
def test_kernels_check_their_buffers() -> None:
    """A wrong call raises instead of reading or writing memory it does not own."""
    k = native.kernels
    assert k is not None
    with pytest.raises(ValueError, match="float32"):
        k.relu(np.zeros(4, np.float32), np.zeros(3, np.float32))
    with pytest.raises(ValueError, match="float32"):
        k.relu(np.zeros(4), np.zeros(4))
    with pytest.raises((BufferError, ValueError), match="contiguous"):
        k.relu(np.zeros((4, 4), np.float32)[:, :2], np.zeros(8, np.float32))
    with pytest.raises((BufferError, ValueError), match="read-only"):  # a read-only output
        k.relu(np.zeros(4, np.float32), np.frombuffer(bytes(16), np.float32))
    with pytest.raises(ValueError, match="rows"):
        k.softmax(np.zeros(10, np.float32), np.zeros(10, np.float32), 3, False)
    with pytest.raises(TypeError):
        k.gelu(np.zeros(4, np.float32))


# ---- the LSTM step: nn.LSTM on both paths against PyTorch ---------------------------------------

# (num_layers, bidirectional, bias, batch_first, with (h0, c0)); the first is the benchmark's layer
LSTM_CASES = {
    "bench": (1, False, True, False, False, (32, 32, 64, 128)),
    "h0_c0": (1, False, True, False, True, (7, 3, 5, 6)),
    "bidirectional_2_layers": (2, True, True, False, True, (5, 4, 3, 8)),
    "no_bias_batch_first": (1, False, False, True, True, (4, 2, 3, 5)),
    "3_layers_reverse_only_grads": (3, True, True, False, False, (6, 2, 4, 7)),
    # hidden sizes the whole-layer kernel takes (multiples of 32), batches that leave tail rows
    "layer_kernel_tail_rows_2_layers": (2, True, True, False, True, (6, 13, 5, 32)),
    "layer_kernel_no_bias_batch_first": (1, False, False, True, True, (5, 3, 4, 64)),
    # 21 rows: on two threads the pool splits them into chunks of 11 and 10 (a tile and a tail each)
    "layer_kernel_split_rows_bidirectional": (1, True, True, False, True, (4, 21, 6, 32)),
}
LAYER_KERNEL_CASES = ["bench", "layer_kernel_tail_rows_2_layers", "layer_kernel_no_bias_batch_first",
                      "layer_kernel_split_rows_bidirectional"]


def _lstm_run(module: Any, case: str, dtype: Any = np.float32) -> tuple[list[np.ndarray], dict[str, np.ndarray]]:
    """(values and input gradients, parameter gradients) of a loss that reaches every output of an
    LSTM: its outputs, h_n and c_n."""
    layers, bi, bias, batch_first, with_state, (t_len, batch, n_in, hid) = LSTM_CASES[case]
    rng = np.random.default_rng(11)
    torch.manual_seed(11)  # the same weights on every call
    ref = torch.nn.LSTM(n_in, hid, layers, bias=bias, batch_first=batch_first, bidirectional=bi)
    state = {k: v.detach().numpy().astype(dtype) for k, v in ref.state_dict().items()}
    d = 2 if bi else 1
    x = (rng.standard_normal((batch, t_len, n_in) if batch_first else (t_len, batch, n_in)) * 2).astype(dtype)
    hc = [rng.standard_normal((layers * d, batch, hid)).astype(dtype) for _ in range(2)]
    r = rng.standard_normal((batch, t_len, d * hid) if batch_first else (t_len, batch, d * hid)).astype(dtype)
    rh, rc = (rng.standard_normal((layers * d, batch, hid)).astype(dtype) for _ in range(2))
    m = module.nn.LSTM(n_in, hid, layers, bias=bias, batch_first=batch_first, bidirectional=bi)
    if dtype == np.float64:
        m = m.double()
    m.load_state_dict({k: module.tensor(v) for k, v in state.items()})
    xt = module.tensor(x, requires_grad=True)
    ins = [xt] + ([module.tensor(a, requires_grad=True) for a in hc] if with_state else [])
    out, (hn, cn) = m(xt, (ins[1], ins[2]) if with_state else None)
    loss = (out * module.tensor(r)).sum() + (hn * module.tensor(rh)).sum() + (cn * module.tensor(rc)).sum()
    loss.backward()

    def arr(t: Any) -> np.ndarray:
        return np.asarray(t.detach().numpy() if module is torch else t.detach()._data)
    vals = [arr(out), arr(hn), arr(cn)] + [arr(t.grad) for t in ins]
    return vals, {k: arr(p.grad) for k, p in m.named_parameters()}


@pytest.mark.parametrize("which", ["native", "numpy"])
@pytest.mark.parametrize("case", list(LSTM_CASES))
def test_lstm_against_torch(case: str, which: str) -> None:
    torch.set_num_threads(1)
    t_vals, t_grads = _lstm_run(torch, case)
    with path(which):
        vals, grads = _lstm_run(lg, case)
    assert grads.keys() == t_grads.keys()
    for v, tv in zip(vals, t_vals):  # outputs, h_n, c_n, then the gradients of x (h0, c0)
        np.testing.assert_allclose(v, tv, rtol=1e-4, atol=2e-5 * max(1.0, float(np.abs(tv).max())))
    for k, g in grads.items():
        np.testing.assert_allclose(g, t_grads[k], rtol=1e-4, atol=2e-5 * max(1.0, float(np.abs(t_grads[k]).max())),
                                   err_msg=k)


@needs_native
@pytest.mark.parametrize("case", list(LSTM_CASES))
def test_lstm_native_agrees_with_numpy_path(case: str) -> None:
    vals, grads = _lstm_run(lg, case)
    with native.disabled():
        nvals, ngrads = _lstm_run(lg, case)
    for v, nv in zip(vals, nvals):
        np.testing.assert_allclose(v, nv, rtol=1e-5, atol=1e-6 * max(1.0, float(np.abs(nv).max())))
    for k, g in grads.items():
        np.testing.assert_allclose(g, ngrads[k], rtol=1e-5, atol=1e-6 * max(1.0, float(np.abs(ngrads[k]).max())),
                                   err_msg=k)


def test_lstm_float64_against_torch_float64_and_finite_differences() -> None:
    """float64 stays on the NumPy path; it matches PyTorch's float64 LSTM and central differences."""
    vals, grads = _lstm_run(lg, "bidirectional_2_layers", np.float64)
    t_vals, t_grads = _lstm_run(torch, "bidirectional_2_layers", np.float64)
    for v, tv in zip(vals, t_vals):
        np.testing.assert_allclose(v, tv, rtol=1e-10, atol=1e-12)
    for k, g in grads.items():
        np.testing.assert_allclose(g, t_grads[k], rtol=1e-10, atol=1e-12, err_msg=k)
    rng = np.random.default_rng(12)
    m = lg.nn.LSTM(3, 4, 2, bidirectional=True).double()
    x, h0, c0 = rng.standard_normal((5, 2, 3)), rng.standard_normal((4, 2, 4)), rng.standard_normal((4, 2, 4))
    r = rng.standard_normal((5, 2, 8))

    def f(a: np.ndarray, h: np.ndarray, c: np.ndarray) -> np.ndarray:
        with lg.no_grad():
            return m(lg.tensor(a), (lg.tensor(h), lg.tensor(c)))[0]._data
    xt, ht, ct = (lg.tensor(a, requires_grad=True) for a in (x, h0, c0))
    (m(xt, (ht, ct))[0] * lg.tensor(r)).sum().backward()
    num = numeric_grads(f, [x.copy(), h0.copy(), c0.copy()], r)
    for t, n in zip((xt, ht, ct), num):
        np.testing.assert_allclose(t.grad._data, n, rtol=1e-6, atol=1e-8)


def test_lstm_reaches_the_step_kernels(spy: Spy) -> None:
    m = lg.nn.LSTM(3, 4)
    (m(lg.randn(5, 2, 3))[0] * lg.randn(5, 2, 4)).sum().backward()
    assert spy.calls.count("lstm_cell") == 5 and spy.calls.count("lstm_cell_backward") == 5
    spy.calls.clear()
    (m.double()(lg.randn(5, 2, 3).double())[0]).sum().backward()  # float64: the NumPy path
    assert "lstm_cell" not in spy.calls and "lstm_cell_backward" not in spy.calls


def test_lstm_reaches_the_layer_kernels(spy: Spy) -> None:
    """A hidden size that is a multiple of 32 runs each layer and direction's time loop in one call
    (forward and backward), no step kernel."""
    if not spy.kernels.gemm_variant():
        pytest.skip("no AVX2+FMA: the layers run a native pass a step")
    m = lg.nn.LSTM(3, 32, bidirectional=True)
    (m(lg.randn(5, 2, 3))[0] * lg.randn(5, 2, 64)).sum().backward()
    assert spy.calls.count("lstm_layer") == 2 and spy.calls.count("lstm_layer_backward") == 2, spy.calls
    assert "lstm_cell" not in spy.calls and "lstm_cell_backward" not in spy.calls


def _gemm_variants() -> list[int]:
    """The product kernel's variants this CPU runs (512: AVX-512, 256: AVX2 and FMA)."""
    k = native.kernels
    assert k is not None
    k.set_gemm_variant(-1)
    best = k.gemm_variant()
    return [v for v in (512, 256) if v <= best]


@needs_native
def test_lstm_layer_kernels_check_their_buffers() -> None:
    k = native.kernels
    assert k is not None
    if not k.gemm_variant():
        pytest.skip("no AVX2+FMA: the layer kernels refuse every call")
    t, b, hid = 2, 3, 32
    z = np.zeros((t, b, 4 * hid), np.float32)
    w = np.zeros((hid, 4 * hid), np.float32)
    s = np.zeros((b, hid), np.float32)
    cells = np.zeros((t, b, hid), np.float32)
    out = np.zeros((t + 1, b, hid), np.float32)
    hx = np.zeros((t, b, hid + 5), np.float32)
    pack = np.zeros(4 * hid * hid, np.float32)

    def fwd(**kw: Any) -> None:
        a = dict(gates=z, w_hh=w.T.copy(), bias=None, h0=s, c0=s, cells=cells, tanh_c=cells.copy(), out=out, hx=hx, pack=pack,
                 hid=hid, ld=hid + 5, reverse=False)
        a.update(kw)
        k.lstm_layer(*a.values())
    fwd()  # the shapes above are right
    with pytest.raises(ValueError, match="multiple of 32"):
        fwd(hid=16)
    with pytest.raises(ValueError, match="float32"):  # gates must be (T, B, 4 hid)
        fwd(gates=z[:, :, :-1].copy())
    with pytest.raises(ValueError, match="float32"):  # out holds T + 1 blocks
        fwd(out=out[:t].copy())
    with pytest.raises(ValueError, match="float32"):  # the scratch holds hid * 4 hid
        fwd(pack=pack[:-1].copy())
    with pytest.raises(ValueError, match="row stride"):
        fwd(ld=hid - 1)
    with pytest.raises(ValueError, match="float32"):  # the bias is (4 hid)
        fwd(bias=np.zeros(4 * hid - 1, np.float32))
    with pytest.raises(ValueError, match="rows"):
        fwd(cells=np.zeros((t, b, hid + 1), np.float32))
    g = np.zeros((t + 1, b, hid), np.float32)
    k.lstm_layer_backward(g, z.copy(), s.copy(), s.copy(), z, cells, cells, s, w.T.copy(), pack, hid, False)
    with pytest.raises(ValueError, match="float32"):  # g holds T + 1 blocks
        k.lstm_layer_backward(g[:t].copy(), z.copy(), s.copy(), s.copy(), z, cells, cells, s, w.T.copy(), pack, hid,
                              False)
    with pytest.raises(ValueError, match="multiple of 32"):
        k.lstm_layer_backward(g, z.copy(), s.copy(), s.copy(), z, cells, cells, s, w.T.copy(), pack, 33, False)
    with pytest.raises(ValueError, match="set_gemm_variant"):
        k.set_gemm_variant(128)
    with pytest.raises(TypeError):
        k.lstm_layer(z, w)


@needs_native
def test_lstm_cell_kernel_accuracy_as_torch() -> None:
    """The kernel's sigmoid and tanh are as accurate as PyTorch's float32 ones (against float64), over
    small, moderate and saturating inputs, and keep NaN, +-inf and -0.0 as PyTorch does."""
    k = native.kernels
    assert k is not None
    hid = 64
    grid = np.concatenate([np.linspace(-1e-3, 1e-3, 200), np.linspace(-2, 2, 2000), np.linspace(-40, 40, 2000),
                           [-1e-30, 1e-30, 0.3, 0.62, 0.63, 100.0, -100.0]]).astype(np.float32)
    grid = np.resize(grid, (grid.size + hid - 1) // hid * hid).reshape(-1, hid)
    rows = grid.shape[0]
    # gate i = x (given halved), f = 0, g = x, o = 1e6 (h = tanh(c)); c_prev = 0 so c = i * g
    z = np.empty((rows, 4 * hid), np.float32)
    z[:, :hid], z[:, hid:2 * hid], z[:, 2 * hid:3 * hid], z[:, 3 * hid:] = grid / 2, 0, grid, 1e6
    zero = np.zeros((rows, hid), np.float32)
    c, th, h = (np.empty((rows, hid), np.float32) for _ in range(3))
    k.lstm_cell(z, None, None, zero, c, th, h, None, hid, hid)
    x64 = grid.astype(np.float64)
    for got, ref, torch_fn in [(z[:, :hid], 1 / (1 + np.exp(-x64)), torch.sigmoid),
                               (z[:, 2 * hid:3 * hid], np.tanh(x64), torch.tanh)]:
        t32 = torch_fn(torch.from_numpy(grid)).numpy().astype(np.float64)
        ulp = np.spacing(np.abs(ref).astype(np.float32)).astype(np.float64)
        assert np.max(np.abs(got - ref) / ulp) <= max(2.0, 1.5 * float(np.max(np.abs(t32 - ref) / ulp)))
    np.testing.assert_allclose(th, np.tanh(c.astype(np.float64)), rtol=3e-7, atol=0)
    special = np.array([np.nan, np.inf, -np.inf, -0.0], np.float32)
    zs = np.zeros((1, 4 * 4), np.float32)
    zs[0, :4], zs[0, 8:12], zs[0, 12:] = special / 2, special, 1e6
    cs, ts, hs = (np.empty((1, 4), np.float32) for _ in range(3))
    k.lstm_cell(zs, None, None, np.zeros((1, 4), np.float32), cs, ts, hs, None, 4, 4)
    ref_s, ref_t = torch.sigmoid(torch.from_numpy(special)).numpy(), torch.tanh(torch.from_numpy(special)).numpy()
    np.testing.assert_array_equal(zs[0, :4], ref_s)
    np.testing.assert_array_equal(zs[0, 8:12], ref_t)
    assert np.signbit(zs[0, 11]) and np.signbit(ref_t[3])  # tanh(-0.0) = -0.0


@needs_native
def test_lstm_cell_adds_the_step_product_and_bias() -> None:
    """z + zh + bias given apart gives the same gates and states as their float32 sum given whole,
    these match the LSTM cell's definition in float64, and h lands in the first H columns of
    h_next's rows, the rest untouched."""
    k = native.kernels
    assert k is not None
    rng = np.random.default_rng(13)
    rows, hid, ld = 3, 5, 9
    z, zh = (rng.standard_normal((rows, 4 * hid)).astype(np.float32) for _ in range(2))
    bias, cp = rng.standard_normal(4 * hid).astype(np.float32), rng.standard_normal((rows, hid)).astype(np.float32)
    whole = (z + zh) + bias
    pre = whole.astype(np.float64) * np.repeat([2.0, 2.0, 1.0, 2.0], hid)  # (i, f, o arrive halved)
    sig = 1 / (1 + np.exp(-pre))
    i, f, g, o = sig[:, :hid], sig[:, hid:2 * hid], np.tanh(pre[:, 2 * hid:3 * hid]), sig[:, 3 * hid:]
    c = f * cp + i * g
    outs = [[np.empty((rows, hid), np.float32) for _ in range(3)] for _ in range(2)]
    nxt = np.full((rows, ld), 7.0, np.float32)
    k.lstm_cell(z, zh, bias, cp, *outs[0], nxt, hid, ld)
    k.lstm_cell(whole, None, None, cp, *outs[1], None, hid, hid)
    np.testing.assert_array_equal(z, whole)  # the activated gates
    for a, b in zip(*outs):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(nxt[:, :hid], outs[0][2])
    assert (nxt[:, hid:] == 7.0).all()
    np.testing.assert_allclose(z, np.concatenate([i, f, g, o], 1), rtol=1e-6, atol=1e-7)
    for got, want in zip(outs[0], [c, np.tanh(c), o * np.tanh(c)]):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


@needs_native
def test_lstm_kernels_check_their_buffers() -> None:
    k = native.kernels
    assert k is not None
    f = np.zeros((2, 3), np.float32)
    with pytest.raises(ValueError, match="float32"):  # z must be (rows, 4 hid)
        k.lstm_cell(np.zeros((2, 11), np.float32), None, None, f, f.copy(), f.copy(), f.copy(), None, 3, 3)
    z = np.zeros((2, 12), np.float32)
    with pytest.raises(ValueError, match="row stride"):
        k.lstm_cell(z, None, None, f, f.copy(), f.copy(), f.copy(), np.zeros((2, 2), np.float32), 3, 2)
    with pytest.raises(ValueError, match="float32"):  # h_next too small for its row stride
        k.lstm_cell(z, None, None, f, f.copy(), f.copy(), f.copy(), np.zeros((2, 4), np.float32), 3, 5)
    with pytest.raises(ValueError, match="float32"):  # the bias is (4 hid)
        k.lstm_cell(z, z.copy(), np.zeros(11, np.float32), f, f.copy(), f.copy(), f.copy(), None, 3, 3)
    with pytest.raises(ValueError, match="needs zh"):
        k.lstm_cell(z, None, np.zeros(12, np.float32), f, f.copy(), f.copy(), f.copy(), None, 3, 3)
    with pytest.raises(ValueError, match="rows"):
        k.lstm_cell_backward(f, f, np.zeros(7, np.float32), np.zeros((2, 12), np.float32), f, f,
                             np.zeros((2, 12), np.float32), 3)
    with pytest.raises(TypeError):
        k.lstm_cell_backward(f, f, f)


# ---- the GRU step ------------------------------------------------------------------------------

# (num_layers, bidirectional, bias, batch_first, with h0, (T, B, I, H))
GRU_CASES = {
    "one_layer": (1, False, True, False, False, (16, 8, 12, 32)),
    "h0_bidirectional_2_layers": (2, True, True, False, True, (5, 4, 3, 8)),
    "no_bias_batch_first": (1, False, False, True, True, (4, 2, 3, 5)),
    # the whole-layer kernel's: tail rows, and 21 rows that two threads split into 11 and 10
    "layer_kernel_no_bias_tail_rows": (1, False, False, True, True, (5, 3, 4, 64)),
    "layer_kernel_split_rows_bidirectional_2_layers": (2, True, True, False, True, (4, 21, 6, 32)),
}
GRU_LAYER_KERNEL_CASES = ["one_layer", "layer_kernel_no_bias_tail_rows", "layer_kernel_split_rows_bidirectional_2_layers"]


def _gru_run(module: Any, case: str, dtype: Any = np.float32) -> tuple[list[np.ndarray], dict[str, np.ndarray]]:
    """(outputs, h_n and the input gradients, parameter gradients) of a loss on a GRU's outputs and h_n."""
    layers, bi, bias, batch_first, with_h0, (t_len, batch, n_in, hid) = GRU_CASES[case]
    rng = np.random.default_rng(14)
    torch.manual_seed(14)
    ref = torch.nn.GRU(n_in, hid, layers, bias=bias, batch_first=batch_first, bidirectional=bi)
    state = {k: v.detach().numpy().astype(dtype) for k, v in ref.state_dict().items()}
    d = 2 if bi else 1
    x = (rng.standard_normal((batch, t_len, n_in) if batch_first else (t_len, batch, n_in)) * 2).astype(dtype)
    h0 = rng.standard_normal((layers * d, batch, hid)).astype(dtype)
    r = rng.standard_normal((batch, t_len, d * hid) if batch_first else (t_len, batch, d * hid)).astype(dtype)
    rh = rng.standard_normal((layers * d, batch, hid)).astype(dtype)
    m = module.nn.GRU(n_in, hid, layers, bias=bias, batch_first=batch_first, bidirectional=bi)
    if dtype == np.float64:
        m = m.double()
    m.load_state_dict({k: module.tensor(v) for k, v in state.items()})
    ins = [module.tensor(x, requires_grad=True)] + ([module.tensor(h0, requires_grad=True)] if with_h0 else [])
    out, hn = m(ins[0], ins[1] if with_h0 else None)
    ((out * module.tensor(r)).sum() + (hn * module.tensor(rh)).sum()).backward()

    def arr(t: Any) -> np.ndarray:
        return np.asarray(t.detach().numpy() if module is torch else t.detach()._data)
    return [arr(out), arr(hn)] + [arr(t.grad) for t in ins], {k: arr(p.grad) for k, p in m.named_parameters()}


@pytest.mark.parametrize("which", ["native", "numpy"])
@pytest.mark.parametrize("case", list(GRU_CASES))
def test_gru_against_torch(case: str, which: str) -> None:
    torch.set_num_threads(1)
    t_vals, t_grads = _gru_run(torch, case)
    with path(which):
        vals, grads = _gru_run(lg, case)
    assert grads.keys() == t_grads.keys()
    for v, tv in zip(vals, t_vals):
        np.testing.assert_allclose(v, tv, rtol=1e-4, atol=2e-5 * max(1.0, float(np.abs(tv).max())))
    for k, g in grads.items():
        np.testing.assert_allclose(g, t_grads[k], rtol=1e-4, atol=2e-5 * max(1.0, float(np.abs(t_grads[k]).max())),
                                   err_msg=k)


@needs_native
@pytest.mark.parametrize("case", list(GRU_CASES))
def test_gru_native_agrees_with_numpy_path(case: str) -> None:
    vals, grads = _gru_run(lg, case)
    with native.disabled():
        nvals, ngrads = _gru_run(lg, case)
    for v, nv in zip(vals, nvals):
        np.testing.assert_allclose(v, nv, rtol=1e-5, atol=1e-6 * max(1.0, float(np.abs(nv).max())))
    for k, g in grads.items():
        np.testing.assert_allclose(g, ngrads[k], rtol=1e-5, atol=1e-6 * max(1.0, float(np.abs(ngrads[k]).max())),
                                   err_msg=k)


def test_gru_float64_against_torch_float64_and_finite_differences() -> None:
    """float64 stays on the NumPy path; it matches PyTorch's float64 GRU and central differences."""
    vals, grads = _gru_run(lg, "h0_bidirectional_2_layers", np.float64)
    t_vals, t_grads = _gru_run(torch, "h0_bidirectional_2_layers", np.float64)
    for v, tv in zip(vals, t_vals):
        np.testing.assert_allclose(v, tv, rtol=1e-10, atol=1e-12)
    for k, g in grads.items():
        np.testing.assert_allclose(g, t_grads[k], rtol=1e-10, atol=1e-12, err_msg=k)
    rng = np.random.default_rng(15)
    m = lg.nn.GRU(3, 4, 2, bidirectional=True).double()
    x, h0, r = rng.standard_normal((5, 2, 3)), rng.standard_normal((4, 2, 4)), rng.standard_normal((5, 2, 8))

    def f(a: np.ndarray, h: np.ndarray) -> np.ndarray:
        with lg.no_grad():
            return m(lg.tensor(a), lg.tensor(h))[0]._data
    xt, ht = lg.tensor(x, requires_grad=True), lg.tensor(h0, requires_grad=True)
    (m(xt, ht)[0] * lg.tensor(r)).sum().backward()
    for t, n in zip((xt, ht), numeric_grads(f, [x.copy(), h0.copy()], r)):
        np.testing.assert_allclose(t.grad._data, n, rtol=1e-6, atol=1e-8)


@needs_native
@pytest.mark.parametrize("mode,case", [("LSTM", c) for c in LAYER_KERNEL_CASES] +
                         [("GRU", c) for c in GRU_LAYER_KERNEL_CASES])
def test_rnn_layer_kernel_variants(mode: str, case: str) -> None:
    """The whole-layer kernels give the same bits with AVX-512 and with AVX2 (each entry's products are
    added in the same order), and both agree with PyTorch and with the per-step path (variant 0: BLAS's
    products and a native pass a step), which this also tests at these shapes."""
    k = native.kernels
    assert k is not None
    run = _lstm_run if mode == "LSTM" else _gru_run
    variants = _gemm_variants()
    runs = {}
    try:
        for v in variants + [0]:
            k.set_gemm_variant(v)
            runs[v] = run(lg, case)
    finally:
        k.set_gemm_variant(-1)
    torch.set_num_threads(1)
    t_vals, t_grads = run(torch, case)
    for v, (vals, grads) in runs.items():
        for a, ta in zip(vals, t_vals):
            np.testing.assert_allclose(a, ta, rtol=1e-4, atol=2e-5 * max(1.0, float(np.abs(ta).max())), err_msg=str(v))
        for name, g in grads.items():
            np.testing.assert_allclose(g, t_grads[name], rtol=1e-4,
                                       atol=2e-5 * max(1.0, float(np.abs(t_grads[name]).max())), err_msg=f"{v} {name}")
    if len(variants) == 2:
        for a, b in zip(runs[512][0], runs[256][0]):
            np.testing.assert_array_equal(a, b)
        for name in runs[512][1]:
            np.testing.assert_array_equal(runs[512][1][name], runs[256][1][name], err_msg=name)
    if not variants:
        pytest.skip("no AVX2+FMA: only the per-step path ran")


def test_gru_reaches_the_layer_kernels(spy: Spy) -> None:
    """A hidden size that is a multiple of 32 runs each layer and direction's time loop in one call."""
    if not spy.kernels.gemm_variant():
        pytest.skip("no AVX2+FMA: the layers run a native pass a step")
    m = lg.nn.GRU(3, 32, bidirectional=True)
    (m(lg.randn(5, 2, 3))[0] * lg.randn(5, 2, 64)).sum().backward()
    assert spy.calls.count("gru_layer") == 2 and spy.calls.count("gru_layer_backward") == 2, spy.calls
    assert "gru_cell" not in spy.calls and "gru_cell_backward" not in spy.calls


@needs_native
def test_gru_layer_kernels_check_their_buffers() -> None:
    k = native.kernels
    assert k is not None
    if not k.gemm_variant():
        pytest.skip("no AVX2+FMA: the layer kernels refuse every call")
    t, b, hid = 2, 3, 32
    x3, s, s3 = np.zeros((t, b, 3 * hid), np.float32), np.zeros((b, hid), np.float32), np.zeros((b, 3 * hid), np.float32)
    o, w, pack = np.zeros((t, b, hid), np.float32), np.zeros((3 * hid, hid), np.float32), np.zeros(3 * hid * hid, np.float32)
    k.gru_layer(x3, w, None, s, s3, x3.copy(), o.copy(), o.copy(), pack, hid, False)  # the right shapes
    with pytest.raises(ValueError, match="multiple of 32"):
        k.gru_layer(x3, w, None, s, s3, x3.copy(), o.copy(), o.copy(), pack, 48, False)
    with pytest.raises(ValueError, match="float32"):  # hp is (rows, 3 hid)
        k.gru_layer(x3, w, None, s, s3[:, :-1].copy(), x3.copy(), o.copy(), o.copy(), pack, hid, False)
    with pytest.raises(ValueError, match="float32"):  # b_hh is (3 hid)
        k.gru_layer(x3, w, np.zeros(3 * hid - 1, np.float32), s, s3, x3.copy(), o.copy(), o.copy(), pack, hid, False)
    k.gru_layer_backward(o, s.copy(), s.copy(), x3, o, o, x3.copy(), x3.copy(), w, pack, hid, True)
    with pytest.raises(ValueError, match="float32"):  # dx is (T, rows, 3 hid)
        k.gru_layer_backward(o, s.copy(), s.copy(), x3, o, o, o.copy(), x3.copy(), w, pack, hid, True)
    with pytest.raises(ValueError, match="rows"):
        k.gru_layer_backward(o, np.zeros(7, np.float32), s.copy(), x3, o, o, x3.copy(), x3.copy(), w, pack, hid,
                             True)


def test_gru_reaches_the_step_kernels(spy: Spy) -> None:
    m = lg.nn.GRU(3, 4)
    (m(lg.randn(5, 2, 3))[0] * lg.randn(5, 2, 4)).sum().backward()
    assert spy.calls.count("gru_cell") == 5 and spy.calls.count("gru_cell_backward") == 5
    spy.calls.clear()
    (m.double()(lg.randn(5, 2, 3).double())[0]).sum().backward()  # float64: the NumPy path
    assert "gru_cell" not in spy.calls and "gru_cell_backward" not in spy.calls


@needs_native
def test_gru_kernels_check_their_buffers() -> None:
    k = native.kernels
    assert k is not None
    f, f3 = np.zeros((2, 3), np.float32), np.zeros((2, 9), np.float32)
    with pytest.raises(ValueError, match="float32"):  # hp must be (rows, 3 hid)
        k.gru_cell(f3, np.zeros((2, 8), np.float32), None, f, f3.copy(), f.copy(), f.copy(), 3)
    with pytest.raises(ValueError, match="float32"):  # b_hh is (3 hid)
        k.gru_cell(f3, f3, np.zeros(8, np.float32), f, f3.copy(), f.copy(), f.copy(), 3)
    with pytest.raises(ValueError, match="rows"):
        k.gru_cell_backward(f, np.zeros(7, np.float32), f, f3, f, f, f3.copy(), f3.copy(), 3)
    with pytest.raises(TypeError):
        k.gru_cell(f3, f3)


@pytest.mark.parametrize("mode", ["LSTM", "GRU"])
def test_rnn_strided_states_give_the_contiguous_results(mode: str) -> None:
    """h0 / c0 that are strided views (they take the NumPy path) give the results of their
    contiguous copies (the native path where built)."""
    rng = np.random.default_rng(16)
    m = getattr(lg.nn, mode)(3, 4)
    x = lg.tensor(rng.standard_normal((5, 2, 3)).astype(np.float32))
    states = [rng.standard_normal((1, 2, 8)).astype(np.float32) for _ in range(2)]  # every other entry taken
    strided = [lg.tensor(s)[:, :, ::2] for s in states]
    assert not strided[0]._data.flags.c_contiguous
    packed = [lg.tensor(np.ascontiguousarray(s[:, :, ::2])) for s in states]
    with lg.no_grad():
        a = m(x, tuple(strided) if mode == "LSTM" else strided[0])
        b = m(x, tuple(packed) if mode == "LSTM" else packed[0])
    np.testing.assert_allclose(a[0]._data, b[0]._data, rtol=1e-5, atol=1e-6)
