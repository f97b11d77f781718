"""Pooling (max, average, adaptive, 3-D, LP, fractional) and max unpooling, and their modules, against PyTorch.

The functional table checks values and every input gradient against PyTorch and central
differences in float64; the both-precisions table runs each row in float64 (tight) and float32
on the same inputs and upstream gradient; modules get PyTorch's weights through state_dict.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from helpers import (check_case_against_torch, check_case_finite_differences, check_double_backward_against_torch,
                     check_error_case, check_module_case_against_torch, needs_torch, torch)
from helpers import (CV, Case, G, assert_close_by_dtype, assert_error_like_torch, check_case_in_precision,
                     compare_functions, numpy_of)

import lightgrad as lg
import lightgrad.nn.functional as F

TF = None if torch is None else torch.nn.functional
RNG = np.random.default_rng(0)


# ---- the functional table: (id, fn(F, *inputs), input shapes, constant arrays) -------------------

CASES: list[tuple[str, Callable[..., Any], list[tuple[int, ...]], list[np.ndarray]]] = [
    ("max_pool2d_2x2", lambda F, x: F.max_pool2d(x, 2), [(2, 3, 4, 6)], []),
    ("max_pool2d_2x2_odd", lambda F, x: F.max_pool2d(x, 2), [(1, 2, 5, 7)], []),
    ("max_pool2d_k3_s2_p1_ceil", lambda F, x: F.max_pool2d(x, 3, 2, 1, ceil_mode=True), [(2, 2, 6, 5)], []),
    ("max_pool2d_dilation", lambda F, x: F.max_pool2d(x, (2, 3), (1, 2), (1, 1), dilation=2), [(1, 2, 7, 6)], []),
    ("max_pool2d_unbatched", lambda F, x: F.max_pool2d(x, 2, 1), [(2, 4, 4)], []),
    ("max_pool1d_ceil", lambda F, x: F.max_pool1d(x, 3, 2, 1, ceil_mode=True), [(2, 3, 8)], []),
    ("avg_pool2d", lambda F, x: F.avg_pool2d(x, 2), [(2, 2, 4, 6)], []),
    ("avg_pool2d_pad_ceil", lambda F, x: F.avg_pool2d(x, 3, 2, 1, ceil_mode=True), [(1, 2, 6, 5)], []),
    ("avg_pool2d_exclude_pad", lambda F, x: F.avg_pool2d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False),
     [(1, 2, 6, 5)], []),
    ("avg_pool2d_divisor", lambda F, x: F.avg_pool2d(x, (2, 3), divisor_override=4), [(1, 2, 4, 6)], []),
    ("avg_pool1d", lambda F, x: F.avg_pool1d(x, 4, 3, 2, ceil_mode=True, count_include_pad=False), [(2, 2, 9)], []),
    ("adaptive_avg_pool2d", lambda F, x: F.adaptive_avg_pool2d(x, (3, 4)), [(2, 2, 7, 6)], []),
    ("adaptive_avg_pool2d_none", lambda F, x: F.adaptive_avg_pool2d(x, (None, 1)), [(1, 2, 5, 6)], []),
    ("adaptive_avg_pool1d", lambda F, x: F.adaptive_avg_pool1d(x, 4), [(2, 2, 10)], []),
    ("adaptive_max_pool2d", lambda F, x: F.adaptive_max_pool2d(x, (3, 4)), [(2, 2, 7, 6)], []),
    ("adaptive_max_pool1d", lambda F, x: F.adaptive_max_pool1d(x, 3), [(2, 2, 10)], []),
]


@needs_torch
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_matches_torch(case: Any) -> None:
    """Values and gradients of every input equal PyTorch's (float64)."""
    check_case_against_torch(case, RNG)


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_gradient_matches_finite_differences(case: Any) -> None:
    """Autograd equals central differences of the lightgrad forward (float64)."""
    check_case_finite_differences(case, RNG)


# ---- max pool: ties and indices ------------------------------------------------------------------

@needs_torch
@pytest.mark.parametrize("args", [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True),
                                  dict(kernel_size=(2, 3), stride=1, dilation=2)], ids=["2x2", "3x3_ceil", "dil"])
def test_max_pool_ties_and_indices_match_torch(args: dict[str, Any]) -> None:
    """With many ties (ReLU zeros, repeated values) the gradient goes to the first maximum, and
    return_indices gives PyTorch's flat indices."""
    x = np.maximum(RNG.integers(-2, 3, (2, 3, 7, 8)), 0).astype(np.float64)
    lx, tx = lg.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    lo, li = F.max_pool2d(lx, return_indices=True, **args)
    to, ti = TF.max_pool2d(tx, return_indices=True, **args)
    np.testing.assert_array_equal(lo.numpy(force=True), to.detach().numpy())
    np.testing.assert_array_equal(li.numpy(), ti.numpy())
    assert li.dtype == lg.int64
    r = RNG.standard_normal(tuple(to.shape))
    (lo * lg.tensor(r)).sum().backward()
    (to * torch.tensor(r)).sum().backward()
    np.testing.assert_allclose(lx.grad.numpy(), tx.grad.numpy())


@needs_torch
def test_max_pool1d_and_adaptive_max_indices_match_torch() -> None:
    x = np.maximum(RNG.integers(-2, 3, (2, 3, 11)), 0).astype(np.float64)
    li = F.max_pool1d(lg.tensor(x), 3, 2, 1, return_indices=True)[1]
    ti = TF.max_pool1d(torch.tensor(x), 3, 2, 1, return_indices=True)[1]
    np.testing.assert_array_equal(li.numpy(), ti.numpy())
    x2 = np.maximum(RNG.integers(-2, 3, (2, 3, 7, 9)), 0).astype(np.float64)
    lx, tx = lg.tensor(x2, requires_grad=True), torch.tensor(x2, requires_grad=True)
    lo, li = F.adaptive_max_pool2d(lx, (3, 4), return_indices=True)
    to, ti = TF.adaptive_max_pool2d(tx, (3, 4), return_indices=True)
    np.testing.assert_array_equal(li.numpy(), ti.numpy())
    lo.sum().backward()
    to.sum().backward()
    np.testing.assert_allclose(lx.grad.numpy(), tx.grad.numpy())


def test_max_pool_propagates_nan() -> None:
    x = np.arange(16.0).reshape(1, 1, 4, 4)
    x[0, 0, 1, 0] = np.nan
    for k in (2, 3):
        out = F.max_pool2d(lg.tensor(x), k, 1).numpy()
        assert np.isnan(out[0, 0, 0, 0]) and not np.isnan(out[0, 0, -1, -1])


@needs_torch
def test_maxpool3d_ties_route_gradient_like_torch() -> None:
    x = np.zeros((1, 1, 2, 2, 2))
    x[0, 0, 1, 0, 1] = x[0, 0, 0, 1, 1] = 1.0  # two maxima in one window
    lx, tx = lg.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    ly, li = lg.nn.functional.max_pool3d(lx, 2, return_indices=True)
    ty, ti = torch.nn.functional.max_pool3d(tx, 2, return_indices=True)
    ly.sum().backward()
    ty.sum().backward()
    np.testing.assert_array_equal(li.numpy(), ti.numpy())
    np.testing.assert_array_equal(lx.grad.numpy(), tx.grad.numpy())


# ---- double backward -----------------------------------------------------------------------------

DOUBLE = [
    ("max_pool2d", lambda F, x, w: F.max_pool2d(x * w, 3, 2, 1), [(1, 2, 5, 5), (1, 2, 5, 5)]),
    ("max_pool2d_2x2", lambda F, x, w: F.max_pool2d(x * w, 2), [(1, 2, 4, 4), (1, 2, 4, 4)]),
    ("avg_pool2d", lambda F, x, w: F.avg_pool2d(x * w, 3, 2, 1, count_include_pad=False), [(1, 2, 5, 5), (1, 2, 5, 5)]),
]


@needs_torch
@pytest.mark.parametrize("case", DOUBLE, ids=[c[0] for c in DOUBLE])
def test_double_backward_matches_torch(case: Any) -> None:
    """create_graph=True: the gradient of (sum of squared first gradients) equals PyTorch's."""
    check_double_backward_against_torch(case, RNG)


# ---- modules with weights from PyTorch -----------------------------------------------------------

MODULES = [
    ("MaxPool2d", lambda nn: nn.MaxPool2d(3, 2, 1, ceil_mode=True), (2, 3, 7, 6)),
    ("MaxPool1d", lambda nn: nn.MaxPool1d(2), (2, 3, 7)),
    ("AvgPool2d", lambda nn: nn.AvgPool2d(2, 1, 1, count_include_pad=False), (2, 3, 5, 4)),
    ("AvgPool1d", lambda nn: nn.AvgPool1d(3, 2), (2, 3, 7)),
    ("AdaptiveAvgPool2d", lambda nn: nn.AdaptiveAvgPool2d(1), (2, 3, 5, 4)),
    ("AdaptiveAvgPool1d", lambda nn: nn.AdaptiveAvgPool1d(3), (2, 3, 7)),
    ("AdaptiveMaxPool2d", lambda nn: nn.AdaptiveMaxPool2d((2, 3)), (2, 3, 5, 7)),
    ("AdaptiveMaxPool1d", lambda nn: nn.AdaptiveMaxPool1d(2), (2, 3, 5)),
]


@needs_torch
@pytest.mark.parametrize("case", MODULES, ids=[c[0] for c in MODULES])
def test_module_matches_torch(case: Any) -> None:
    """Output, input gradient and parameter gradients with identical weights; same repr."""
    check_module_case_against_torch(case, RNG)


# ---- error cases ---------------------------------------------------------------------------------

ERRORS = [
    ("max_pool_pad", lambda F, T: F.max_pool2d(T.zeros(1, 1, 5, 5), 2, padding=2), "pad should be"),
    ("max_pool_pad_dilated", lambda F, T: F.max_pool2d(T.zeros(1, 1, 5, 5), 3, padding=2, dilation=2), "pad should be"),
    ("avg_pool_pad", lambda F, T: F.avg_pool2d(T.zeros(1, 1, 5, 5), 2, padding=2), "pad should be"),
    ("max_pool_too_small", lambda F, T: F.max_pool2d(T.zeros(1, 1, 2, 2), 3), "too small"),
]


@pytest.mark.parametrize("case", ERRORS, ids=[c[0] for c in ERRORS])
def test_errors(case: Any) -> None:
    """Bad shapes raise RuntimeError saying expected vs got (PyTorch's exception type)."""
    check_error_case(case)


# ---- 3-D pools, max unpooling, *_with_indices: float64 and float32 (rows: name, fn(T, ...), specs, fd) ----

def _pool_indices(x: np.ndarray, nd: int, k: int) -> np.ndarray:
    f = {1: torch.nn.functional.max_pool1d, 2: torch.nn.functional.max_pool2d, 3: torch.nn.functional.max_pool3d}[nd]
    return f(torch.tensor(x), k, return_indices=True)[1].numpy()


_R = np.random.default_rng(7)
_X2 = _R.standard_normal((2, 3, 4, 4))
_X1 = _R.standard_normal((2, 3, 6))
_X3 = _R.standard_normal((1, 2, 4, 4, 4))


PRECISION_CASES: list[Case] = [
    # pools
    ("max_pool1d_with_indices", lambda T, x: T.nn.functional.max_pool1d_with_indices(x, 3, 2, 1), [G(2, 3, 7)],
     False),
    ("max_pool2d_with_indices", lambda T, x: T.nn.functional.max_pool2d_with_indices(x, 2, 1), [G(3, 4, 5)], False),
    ("maxpool2d_return_indices", lambda T, x: T.nn.MaxPool2d(2, return_indices=True)(x), [G(1, 2, 4, 4)], False),
]
if torch is not None:  # (max_unpool's indices come from PyTorch's max_pool, at import)
    PRECISION_CASES += [
        ("max_unpool1d", lambda T, x, i: T.nn.MaxUnpool1d(2)(x, i), [G(2, 3, 3), CV(_pool_indices(_X1, 1, 2))], True),
        ("max_unpool1d_size", lambda T, x, i: T.nn.functional.max_unpool1d(x, i, 2, output_size=[7]),
         [G(2, 3, 3), CV(_pool_indices(_X1, 1, 2))], False),
        ("max_unpool2d", lambda T, x, i: T.nn.MaxUnpool2d(2)(x, i), [G(2, 3, 2, 2), CV(_pool_indices(_X2, 2, 2))],
         True),
        ("max_unpool2d_size", lambda T, x, i: T.nn.MaxUnpool2d(2, stride=2)(x, i, output_size=(2, 3, 5, 5)),
         [G(2, 3, 2, 2), CV(_pool_indices(_X2, 2, 2))], False),
        ("max_unpool2d_unb", lambda T, x, i: T.nn.functional.max_unpool2d(x, i, 2),
         [G(3, 2, 2), CV(_pool_indices(_X2, 2, 2)[0])], False),
        ("max_unpool2d_overlap", lambda T, x, i: T.nn.functional.max_unpool2d(x, i, 3, 1),
         [G(2, 3, 2, 2), CV(torch.nn.functional.max_pool2d(torch.tensor(_X2), 3, 1, return_indices=True)[1].numpy())],
         False),
        ("max_unpool3d", lambda T, x, i: T.nn.MaxUnpool3d(2)(x, i), [G(1, 2, 2, 2, 2), CV(_pool_indices(_X3, 3, 2))],
         False),
    ]
PRECISION_CASES += [
    ("maxpool3d", lambda T, x: T.nn.MaxPool3d(2)(x), [G(1, 2, 4, 4, 4)], True),
    ("maxpool3d_geom", lambda T, x: T.nn.MaxPool3d((3, 2, 3), stride=(2, 1, 2), padding=(1, 0, 1), dilation=(1, 2, 1),
                                                   ceil_mode=True, return_indices=True)(x), [G(2, 2, 5, 5, 6)], False),
    ("maxpool3d_unb", lambda T, x: T.nn.functional.max_pool3d(x, 2, 1, return_indices=True), [G(2, 3, 3, 4)], False),
    ("avgpool3d", lambda T, x: T.nn.AvgPool3d(2)(x), [G(1, 2, 4, 4, 4)], True),
    ("avgpool3d_geom", lambda T, x: T.nn.AvgPool3d((3, 2, 3), stride=(2, 1, 2), padding=(1, 1, 0), ceil_mode=True,
                                                   count_include_pad=False)(x), [G(2, 2, 5, 5, 6)], False),
    ("avgpool3d_ceil_incl", lambda T, x: T.nn.functional.avg_pool3d(x, 2, 2, 1, ceil_mode=True), [G(1, 2, 3, 5, 5)],
     False),
    ("avgpool3d_pad", lambda T, x: T.nn.functional.avg_pool3d(x, 3, 2, 1), [G(2, 5, 4, 6)], False),
    ("avgpool3d_div", lambda T, x: T.nn.AvgPool3d(2, stride=1, padding=1, divisor_override=3)(x),
     [G(1, 1, 3, 3, 3)], True),
    ("adaptive_avg3d", lambda T, x: T.nn.AdaptiveAvgPool3d((2, 3, None))(x), [G(2, 2, 5, 7, 3)], True),
    ("adaptive_avg3d_unb", lambda T, x: T.nn.functional.adaptive_avg_pool3d(x, 1), [G(2, 3, 4, 5)], False),
    ("adaptive_max3d", lambda T, x: T.nn.AdaptiveMaxPool3d((2, 3, 2), return_indices=True)(x), [G(2, 2, 5, 7, 3)],
     False),
    ("adaptive_max3d_unb", lambda T, x: T.nn.functional.adaptive_max_pool3d(x, (None, 2, 1)), [G(2, 3, 4, 5)], True),
    ("adaptive_max3d_with_indices", lambda T, x: T.nn.functional.adaptive_max_pool3d_with_indices(x, 2),
     [G(1, 2, 3, 4, 5)], False),
]


@needs_torch
@pytest.mark.parametrize("name,fn,specs,fd", PRECISION_CASES, ids=[c[0] for c in PRECISION_CASES])
@pytest.mark.parametrize("precision", ["float64", "float32"])
def test_against_torch(name: str, fn: Callable[..., Any], specs: list[Any], fd: bool, precision: str) -> None:
    check_case_in_precision(name, fn, specs, fd, precision)


def _ti(*shape: int) -> Any:
    return lambda T: T.zeros(*shape, dtype=T.int64)


MESSAGE_ERRORS: list[tuple[str, Callable[[Any], Any]]] = [
    ("unpool_output_size", lambda T: T.nn.functional.max_unpool2d(T.zeros(1, 1, 2, 2), T.zeros(1, 1, 2, 2,
                                                                                                 dtype=T.int64),
                                                                  2, output_size=(5, 9))),
    ("unpool_index", lambda T: T.nn.functional.max_unpool2d(T.zeros(1, 1, 2, 2), T.full((1, 1, 2, 2), 99), 2)),
    ("unpool_index_shape", lambda T: T.nn.functional.max_unpool2d(T.zeros(1, 1, 2, 2), _ti(1, 1, 2, 1)(T), 2)),
    ("unpool_index_dtype", lambda T: T.nn.functional.max_unpool2d(T.zeros(1, 1, 2, 2), T.zeros(1, 1, 2, 2), 2)),
    ("unpool_dims", lambda T: T.nn.functional.max_unpool2d(T.zeros(2, 2), _ti(2, 2)(T), 2)),
    ("pool3d_dims", lambda T: T.nn.functional.max_pool3d(T.zeros(2, 3, 4), 2)),
]


# (PyTorch's message refers to its C++ internals: the type has to match, and the message has to
# name what was expected and what was got)
_OWN_WORDING = {"pool3d_dims"}


@needs_torch
@pytest.mark.parametrize("name,call", MESSAGE_ERRORS, ids=[e[0] for e in MESSAGE_ERRORS])
def test_errors_match_torch(name: str, call: Callable[[Any], Any]) -> None:
    assert_error_like_torch(name, call, _OWN_WORDING)


# ---- LPPool, FractionalMaxPool -------------------------------------------------------------------

@needs_torch
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_lp_pool_matches_torch(dtype: str) -> None:
    rng = np.random.default_rng(9)
    for nd in (1, 2, 3):
        for batch in ((2,), ()):
            shape = batch + (3,) + (7,) * nd
            for p, k, s, ceil in [(2, 2, None, False), (3, 3, 2, True), (1.5, (2, 3, 1)[:nd] if nd > 1 else 2, 1,
                                                                        False), (math.inf, 2, None, False)]:
                x = rng.uniform(0.2, 1.5, shape) * rng.choice([-1, 1], shape) if p in (2, math.inf) else \
                    rng.uniform(0.2, 1.5, shape)
                lf = lambda t, p=p, k=k, s=s, ceil=ceil, nd=nd: getattr(F, f"lp_pool{nd}d")(t, p, k, s,
                                                                                            ceil)  # noqa: E731
                tf = lambda t, p=p, k=k, s=s, ceil=ceil, nd=nd: getattr(TF, f"lp_pool{nd}d")(t, p, k, s, ceil)  # noqa: E731
                compare_functions(lf, tf, [x], dtype, rng)
            lm, tm = getattr(lg.nn, f"LPPool{nd}d")(2, 2, 1), getattr(torch.nn, f"LPPool{nd}d")(2, 2, 1)
            assert repr(lm) == repr(tm)
            x = rng.uniform(0.2, 1.5, shape).astype(dtype)
            assert_close_by_dtype(numpy_of(lm(lg.tensor(x))), numpy_of(tm(torch.tensor(x))), dtype)


@needs_torch
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_fractional_max_pool_matches_torch(dtype: str) -> None:
    rng = np.random.default_rng(10)
    cases = [(2, (2, 3, 9, 11), 2, dict(output_size=(5, 4))), (2, (3, 8, 8), 3, dict(output_size=6)),
             (2, (2, 2, 10, 7), (2, 3), dict(output_ratio=(0.5, 0.6))), (2, (1, 1, 5, 5), 2, dict(output_size=1)),
             (3, (2, 2, 6, 9, 7), 2, dict(output_size=(3, 5, 4))), (3, (2, 5, 6, 6), (1, 2, 3), dict(output_ratio=0.5))]
    for nd, shape, k, kw in cases:
        n = shape[0] if len(shape) == nd + 2 else 1
        c = shape[-nd - 1]
        samples = rng.random((n, c, nd)).astype(dtype)
        x = rng.standard_normal(shape).astype(dtype)
        tx, lx = torch.tensor(x, requires_grad=True), lg.tensor(x, requires_grad=True)
        to, ti = getattr(TF, f"fractional_max_pool{nd}d")(tx, k, return_indices=True,
                                                            _random_samples=torch.tensor(samples), **kw)
        lo, li = getattr(F, f"fractional_max_pool{nd}d")(lx, k, return_indices=True,
                                                            _random_samples=lg.tensor(samples), **kw)
        assert_close_by_dtype(numpy_of(lo), numpy_of(to), dtype, str(shape))
        np.testing.assert_array_equal(li.numpy(), ti.numpy())
        g = rng.standard_normal(tuple(to.shape)).astype(dtype)
        to.backward(torch.tensor(g))
        lo.backward(lg.tensor(g))
        assert_close_by_dtype(numpy_of(lx.grad), numpy_of(tx.grad), dtype)
        # the module, with its samples as a buffer
        tm = getattr(torch.nn, f"FractionalMaxPool{nd}d")(k, _random_samples=torch.tensor(samples), **kw)
        lm = getattr(lg.nn, f"FractionalMaxPool{nd}d")(k, _random_samples=lg.tensor(samples), **kw)
        assert list(lm.state_dict()) == list(tm.state_dict())
        assert_close_by_dtype(numpy_of(lm(lg.tensor(x))), numpy_of(tm(torch.tensor(x))), dtype)
    # random windows: the output is still a max over a k-window of the input, and changes with the seed
    lg.manual_seed(0)
    x = lg.randn(2, 3, 12, 12)
    a = lg.nn.FractionalMaxPool2d(2, output_size=7)(x)
    b = lg.nn.FractionalMaxPool2d(2, output_size=7)(x)
    assert a.shape == (2, 3, 7, 7) and not np.array_equal(a.numpy(), b.numpy())
    assert np.isin(a.numpy(), x.numpy()).all()


@needs_torch
def test_fractional_max_pool_errors() -> None:
    for mod in (torch, lg):
        with pytest.raises(ValueError):
            mod.nn.FractionalMaxPool2d(2)
        with pytest.raises(ValueError):
            mod.nn.FractionalMaxPool2d(2, output_size=3, output_ratio=0.5)
        with pytest.raises(ValueError):
            mod.nn.FractionalMaxPool3d(2, output_ratio=1.5)
        with pytest.raises(RuntimeError):
            mod.nn.functional.fractional_max_pool2d(mod.randn(1, 1, 5, 5), 3, output_size=4)  # windows too large
        with pytest.raises(ValueError):
            mod.nn.functional.fractional_max_pool2d(mod.randn(1, 1, 5, 5), 2)
