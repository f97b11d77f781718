"""The native random-number transforms (lightgrad/backend/native/random.c): bit for bit against
PyTorch's CPU generator and against backend/random.py's NumPy path (the float32 Box-Muller over
every 24-bit uniform, randperm's shuffles, glibc's double functions), their argument checks, and that
the backend reaches them."""

from __future__ import annotations

import math
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import lightgrad as lg
from lightgrad.backend import native
from lightgrad.backend import random as R

needs_native = pytest.mark.skipif(native.random is None,
                                  reason="the native kernels are off (LIGHTGRAD_NATIVE=0) or not built")


def _bits(a: np.ndarray) -> np.ndarray:
    return a.view({2: np.uint16, 4: np.uint32, 8: np.uint64}[a.dtype.itemsize])


def _both_paths(fill: Callable[[R.Engine], np.ndarray], seed: int = 1234) -> tuple[Any, Any]:
    """fill on a fresh engine with the native kernels and on the NumPy path: (values, state bytes) each."""
    e = R.Engine(seed)
    native_out = (fill(e), e.get_state())
    with native.disabled():
        e = R.Engine(seed)
        numpy_out = (fill(e), e.get_state())
    return native_out, numpy_out


def _assert_identical(a: tuple[Any, Any], b: tuple[Any, Any]) -> None:
    (va, sa), (vb, sb) = a, b
    assert va.dtype == vb.dtype and va.shape == vb.shape
    assert np.array_equal(_bits(va), _bits(vb)), f"{np.sum(_bits(va) != _bits(vb))} of {va.size} values differ"
    assert np.array_equal(sa, sb), "the streams end at different places"


# ---- float32 Box-Muller -------------------------------------------------------------------------

@needs_native
@pytest.mark.parametrize("n", [16, 17, 31, 32, 100, 4095, 4096, 4111, 70000])
@pytest.mark.parametrize("dt", [np.float32, np.float16])
@pytest.mark.parametrize("mean,std", [(0.0, 1.0), (0.0, 2.5), (1.5, 0.3), (1e-50, 1.0), (-3.0, 1.0), (0.0, -2.0)])
def test_normal_float_agrees_with_numpy_path(n: int, dt: type, mean: float, std: float) -> None:
    def fill(e: R.Engine) -> np.ndarray:
        a, b = np.empty(n, dt), np.empty(n, dt)
        R.normal_(e, a, mean, std)
        R.normal_(e, b, mean, std)  # (a second draw: the stream after the first is the same too)
        return np.concatenate([a, b])
    _assert_identical(*_both_paths(fill))


@needs_native
def test_normal_kernel_on_every_uniform() -> None:
    # each of the 2**24 float uniforms once as a radius (first half of a row) and once as an angle
    words = np.arange(1 << 24, dtype=np.uint32)
    for w in (words, np.roll(words, 8)):
        ours = np.empty(w.size, np.float32)
        native.random.normal_f32(w, ours, 0, 1.0, 0.0)
        with native.disabled():
            ref = R._box_muller16_f32(R._u24(w).reshape(-1, 16)).ravel()
        assert np.array_equal(_bits(ours), _bits(ref)), f"{np.sum(_bits(ours) != _bits(ref))} values differ"


@needs_native
def test_normal_kernel_keeps_signed_zeros_as_numpy_path() -> None:
    # word 0 gives u = 0: log(1) = 0, radius sqrt(-0) = -0; the mean-0 affine step makes it +0
    w = np.zeros(16, np.uint32)
    for affine, std, mean in [(0, 1.0, 0.0), (1, 2.0, 0.0), (2, 2.0, 1.0)]:
        ours = np.empty(16, np.float32)
        native.random.normal_f32(w, ours, affine, std, mean)
        with native.disabled():
            ref = R._box_muller16_f32(R._u24(w).reshape(-1, 16)).ravel()
            if affine:
                ref = R._fma(ref, std, mean, np.dtype(np.float32))
        assert np.array_equal(_bits(ours), _bits(ref))
        if affine < 2:
            assert ours[0] == 0 and np.signbit(ours[0]) == (affine == 0)


def test_randn_float32_as_torch() -> None:
    torch = pytest.importorskip("torch")
    for seed in (0, 7):
        torch.manual_seed(seed)
        want = (torch.randn(1 << 18), torch.empty(100003).normal_(0.7, 1.3), torch.randn(4096, dtype=torch.float16))
        lg.manual_seed(seed)
        got = (lg.randn(1 << 18), lg.empty(100003).normal_(0.7, 1.3), lg.randn(4096, dtype=lg.float16))
        for a, b in zip(want, got, strict=True):
            assert np.array_equal(_bits(a.numpy()), _bits(b.numpy()))


# ---- randperm ------------------------------------------------------------------------------------

@needs_native
@pytest.mark.parametrize("n", [0, 1, 2, 3, 17, 4096, 60000])
def test_randperm_agrees_with_numpy_path(n: int) -> None:
    _assert_identical(*_both_paths(lambda e: R.randperm(e, n)))


def test_randperm_as_torch() -> None:
    torch = pytest.importorskip("torch")
    torch.manual_seed(3)
    want = [torch.randperm(n).numpy() for n in (5000, 60000)]
    lg.manual_seed(3)
    got = [lg.randperm(n).numpy() for n in (5000, 60000)]
    for a, b in zip(want, got, strict=True):
        assert a.dtype == b.dtype and np.array_equal(a, b)


@needs_native
def test_randperm_inside_out_kernel() -> None:
    # the shuffle ATen runs from n >= 2**32 / 20 (too large to draw here), written out from its definition
    words = np.random.default_rng(0).integers(0, 1 << 63, 1000, dtype=np.uint64) * np.uint64(2) + np.uint64(1)
    want = [0] * words.size
    for i, w in enumerate(words.tolist()):
        k = w % (i + 1)
        want[i] = want[k]
        want[k] = i
    got = np.empty(words.size, np.int64)
    native.random.randperm(words, got, True)
    assert got.tolist() == want


# ---- glibc's double functions -------------------------------------------------------------------

_SPECIAL = [0.0, -0.0, 5e-324, 1e-310, 1e-20, 0.5, 1.0, 2.0, 3.141592653589793, 700.0, 1e22, -0.999999, -1e-300]


@needs_native
@pytest.mark.parametrize("f", [math.log, math.log1p, math.exp, math.tan, math.cos, math.sin])
def test_libm_kernel_is_math_module(f: Any) -> None:
    x = np.concatenate([np.random.default_rng(1).random(100000) * 4 - 1, _SPECIAL])
    out = np.empty_like(x)
    native.random.libm(R._LIBM_OPS[f], x, out)
    for xi, oi in zip(x.tolist(), out.tolist(), strict=True):
        try:
            want = f(xi)
        except (ValueError, OverflowError):  # (math raises where C gives -inf, NaN or inf)
            continue
        assert math.copysign(1, want) == math.copysign(1, oi) and (want == oi or want != want and oi != oi), (xi, want, oi)


@needs_native
def test_libm_kernel_edges_as_c() -> None:
    x = np.array([0.0, -1.0, 710.0, -np.inf, np.nan])
    for f, op in [(R._c_log, 0), (R._c_exp, 2)]:
        out = np.empty_like(x)
        native.random.libm(op, x, out)
        want = np.array([f(v) for v in x.tolist()])
        assert np.array_equal(out, want, equal_nan=True)


@needs_native
@pytest.mark.parametrize("n", [1, 5, 40, 300, 40000])
@pytest.mark.parametrize("name", ["exponential", "log_normal", "cauchy", "geometric", "normal", "normal_strided"])
def test_double_samplers_agree_with_numpy_path(n: int, name: str) -> None:
    fills = {"exponential": lambda e, o: R.exponential_(e, o, 1.5), "log_normal": lambda e, o: R.log_normal_(e, o, 0.5, 2.0),
             "cauchy": lambda e, o: R.cauchy_(e, o, 0.0, 1.0), "geometric": lambda e, o: R.geometric_(e, o, 0.3),
             "normal": lambda e, o: R.normal_(e, o, 0.0, 1.0), "normal_strided": lambda e, o: R.normal_(e, o[::2], 0.0, 1.0)}

    def fill(e: R.Engine) -> np.ndarray:
        o = np.zeros(n, np.float64)
        fills[name](e, o)
        return o
    _assert_identical(*_both_paths(fill))


def test_log_normal_overflow_is_inf_as_torch() -> None:
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    want = torch.empty(50, dtype=torch.float64).log_normal_(0.0, 1000.0).numpy()
    for ctx in (native.disabled, lambda: np.errstate()):  # the NumPy path and the native one
        with ctx():
            lg.manual_seed(0)
            got = lg.empty(50, dtype=lg.float64).log_normal_(0.0, 1000.0).numpy()
        assert np.isinf(want).any() and np.array_equal(got, want)


# ---- the build, argument checks and routing -------------------------------------------------------

def test_extension_loads_where_it_was_built() -> None:
    """With a C compiler and the package built, the transforms load unless LIGHTGRAD_NATIVE=0, and
    are no older than random.c: a build that silently stopped working fails here."""
    if os.environ.get("LIGHTGRAD_NATIVE") == "0":
        assert native.random is None
        return
    if shutil.which("gcc") is None and shutil.which("cc") is None:
        pytest.skip("no C compiler: the NumPy path only")
    here = Path(native.__file__).parent
    built = list(here.glob("_random*.so")) + list(here.glob("_random*.pyd"))
    assert built, "the native random transforms are not built: run `pip install -e .`"
    assert native.random is not None, "the native random transforms are built but did not load"
    assert max(p.stat().st_mtime for p in built) >= (here / "random.c").stat().st_mtime - 1, \
        "the native random transforms are older than random.c: rebuild with `pip install -e .`"


@needs_native
def test_kernels_check_their_buffers() -> None:
    k = native.random
    with pytest.raises(ValueError, match="rows of 16"):
        k.normal_f32(np.zeros(17, np.uint32), np.empty(17, np.float32), 0, 1.0, 0.0)
    with pytest.raises(ValueError, match="words"):
        k.normal_f32(np.zeros(15, np.uint32), np.empty(16, np.float32), 0, 1.0, 0.0)
    with pytest.raises(ValueError, match="words"):
        k.normal_f32(np.zeros(16, np.uint16), np.empty(16, np.float32), 0, 1.0, 0.0)
    with pytest.raises(ValueError, match="affine"):
        k.normal_f32(np.zeros(16, np.uint32), np.empty(16, np.float32), 3, 1.0, 0.0)
    with pytest.raises(ValueError, match="words"):
        k.randperm(np.zeros(5, np.uint32), np.empty(5, np.int64), False)
    with pytest.raises(ValueError, match="no function"):
        k.libm(6, np.zeros(3), np.empty(3))
    with pytest.raises(ValueError, match="out"):
        k.libm(0, np.zeros(3), np.empty(2))
    with pytest.raises(TypeError, match="expects 3 arguments"):
        k.libm(0, np.zeros(3))
    read_only = np.zeros(3)
    read_only.setflags(write=False)
    with pytest.raises(ValueError, match="read-only"):
        k.libm(0, np.zeros(3), read_only)


@needs_native
def test_backend_reaches_the_kernels(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    real = native.random

    class Spy:
        def __getattr__(self, name: str) -> Any:
            calls.append(name)
            return getattr(real, name)

    monkeypatch.setattr(native, "random", Spy())
    lg.randn(64)
    lg.randperm(10)
    lg.empty(10, dtype=lg.float64).exponential_()
    assert calls == ["normal_f32", "randperm", "libm"]


@needs_native
@pytest.mark.parametrize("n", [4096, 4097, 5000, 624 * 9 + 3, 1 << 20])
@pytest.mark.parametrize("skip", [0, 1, 623, 624])
def test_native_mt19937_words_equal_numpys_and_leave_the_same_state(n: int, skip: int) -> None:
    """Engine.random's native words (random.c's mt_words on NumPy's MT19937 state) equal NumPy's, from
    any position in the key, and the stream goes on where NumPy's would (the state bytes too)."""
    assert R._mt_layout_checked(native.random)  # the layout check passed: the native words are in use
    a, b = _both_paths(lambda e: (e.random(skip + 1), e.random(n))[1])
    _assert_identical(a, b)
    e1, e2 = R.Engine(99), R.Engine(99)
    w1 = e1.random(n)
    with native.disabled():
        w2 = e2.random(n)
    np.testing.assert_array_equal(w1, w2)
    np.testing.assert_array_equal(e1.random(10), e2.random(10))
