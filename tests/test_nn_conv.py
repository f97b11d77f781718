"""Convolutions (1-D, 2-D, 3-D, transposed, fold/unfold) and their modules, against PyTorch.

The functional table checks values and every input gradient against PyTorch and central
differences in float64; modules get PyTorch's weights through state_dict. ``ConvStride1``, the
stride-1 path the CNN training step takes, has its own classes below: which convolutions take it,
its gradients in both column layouts, by blocks and chunks of images, under compile and arenas.
"""

from __future__ import annotations

import math
import random
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from helpers import (assert_close_by_dtype, check_case_against_torch, check_case_finite_differences,
                     check_double_backward_against_torch, check_error_case, check_module_case_against_torch,
                     compare_functions, load_from_torch, needs_torch, numeric_grads, numpy_of, state_to_lg,
                     state_to_torch, torch)

import lightgrad as lg
import lightgrad.nn as nn
import lightgrad.nn.functional as F
from lightgrad.nn.functional import _window_kernels as K
from lightgrad.nn.functional._window_kernels import _LAST_MIN_CHANNELS, ConvStride1, _grid_input_grad

TF = None if torch is None else torch.nn.functional
pytestmark = pytest.mark.filterwarnings("ignore:Using padding='same'")
RNG = np.random.default_rng(0)


# ---- the functional table: (id, fn(F, *inputs), input shapes, constant arrays) -------------------

CASES: list[tuple[str, Callable[..., Any], list[tuple[int, ...]], list[np.ndarray]]] = [
    ("conv2d", lambda F, x, w, b: F.conv2d(x, w, b), [(2, 3, 5, 5), (4, 3, 3, 3), (4,)], []),
    ("conv2d_stride_pad", lambda F, x, w, b: F.conv2d(x, w, b, stride=2, padding=1), [(2, 2, 6, 5), (3, 2, 3, 3), (3,)], []),
    ("conv2d_tuples_dilation", lambda F, x, w: F.conv2d(x, w, None, (1, 2), (2, 1), (2, 1)), [(1, 2, 7, 6), (3, 2, 3, 2)], []),
    ("conv2d_groups", lambda F, x, w, b: F.conv2d(x, w, b, padding=1, groups=2), [(2, 4, 4, 4), (6, 2, 3, 3), (6,)], []),
    ("conv2d_depthwise", lambda F, x, w: F.conv2d(x, w, stride=2, groups=3), [(1, 3, 5, 5), (3, 1, 2, 2)], []),
    ("conv2d_same_even", lambda F, x, w: F.conv2d(x, w, padding="same", dilation=(1, 2)), [(1, 2, 5, 6), (2, 2, 4, 3)], []),
    ("conv2d_valid", lambda F, x, w: F.conv2d(x, w, padding="valid"), [(1, 2, 5, 4), (2, 2, 2, 2)], []),
    ("conv2d_unbatched", lambda F, x, w, b: F.conv2d(x, w, b, padding=1), [(2, 4, 4), (3, 2, 3, 3), (3,)], []),
    ("conv1d", lambda F, x, w, b: F.conv1d(x, w, b, stride=2, padding=1, dilation=2), [(2, 3, 9), (4, 3, 3), (4,)], []),
    ("conv1d_groups_same", lambda F, x, w: F.conv1d(x, w, padding="same", groups=2), [(2, 4, 7), (2, 2, 4)], []),
    ("conv_transpose2d", lambda F, x, w, b: F.conv_transpose2d(x, w, b, stride=2, padding=1, output_padding=1),
     [(2, 3, 3, 3), (3, 2, 3, 3), (2,)], []),
    ("conv_transpose2d_groups_dil", lambda F, x, w: F.conv_transpose2d(x, w, None, (2, 1), (0, 1), 0, 2, 2),
     [(1, 4, 3, 3), (4, 2, 3, 2)], []),
    ("conv_transpose2d_op_lt_dil", lambda F, x, w: F.conv_transpose2d(x, w, dilation=3, output_padding=2),
     [(1, 2, 3, 3), (2, 1, 2, 2)], []),
    ("conv_transpose1d", lambda F, x, w, b: F.conv_transpose1d(x, w, b, stride=3, padding=1), [(2, 3, 4), (3, 2, 3), (2,)], []),
    ("unfold", lambda F, x: F.unfold(x, (2, 3), dilation=(1, 2), padding=1, stride=(2, 1)), [(2, 2, 5, 6)], []),
    ("fold", lambda F, x: F.fold(x, (5, 6), (2, 3), dilation=(1, 2), padding=1, stride=(2, 1)), [(2, 12, 12)], []),
    ("fold_overlap", lambda F, x: F.fold(x, (4, 4), 2), [(1, 8, 9)], []),
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


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_float32_and_float64_keep_their_dtype(dtype: Any) -> None:
    x = lg.tensor(RNG.standard_normal((1, 2, 6, 6)).astype(dtype), requires_grad=True)
    w = lg.tensor(RNG.standard_normal((3, 2, 3, 3)).astype(dtype), requires_grad=True)
    y = F.max_pool2d(F.conv2d(x, w, padding=1), 2)
    y = F.interpolate(F.avg_pool2d(y, 1), scale_factor=2, mode="bilinear")
    y.sum().backward()
    assert y.dtype == x.dtype and x.grad.dtype == x.dtype and w.grad.dtype == x.dtype


# ---- double backward -----------------------------------------------------------------------------

DOUBLE = [
    ("conv2d", lambda F, x, w: F.conv2d(x, w, stride=2, padding=1, groups=2), [(1, 4, 5, 5), (2, 2, 3, 3)]),
    ("conv_transpose2d", lambda F, x, w: F.conv_transpose2d(x, w, stride=2, padding=1), [(1, 2, 3, 3), (2, 3, 3, 3)]),
    ("unfold", lambda F, x, w: F.unfold(x * w, 2, padding=1), [(1, 2, 3, 3), (1, 2, 3, 3)]),
]


@needs_torch
@pytest.mark.parametrize("case", DOUBLE, ids=[c[0] for c in DOUBLE])
def test_double_backward_matches_torch(case: Any) -> None:
    """create_graph=True: the gradient of (sum of squared first gradients) equals PyTorch's."""
    check_double_backward_against_torch(case, RNG)


# ---- modules with weights from PyTorch -----------------------------------------------------------

MODULES = [
    ("Conv1d", lambda nn: nn.Conv1d(3, 4, 3, stride=2, padding=1), (2, 3, 9)),
    ("Conv1d_reflect_same", lambda nn: nn.Conv1d(2, 4, 4, padding="same", padding_mode="reflect", bias=False), (2, 2, 8)),
    ("Conv2d", lambda nn: nn.Conv2d(3, 4, 3, stride=(2, 1), padding=(1, 2), dilation=(1, 2)), (2, 3, 7, 6)),
    ("Conv2d_groups_circular", lambda nn: nn.Conv2d(4, 6, 3, padding=1, groups=2, padding_mode="circular"), (2, 4, 5, 5)),
    ("Conv2d_replicate", lambda nn: nn.Conv2d(2, 3, (2, 3), padding=(1, 1), padding_mode="replicate"), (1, 2, 4, 5)),
    ("ConvTranspose1d", lambda nn: nn.ConvTranspose1d(3, 2, 4, stride=2, padding=1), (2, 3, 5)),
    ("ConvTranspose2d", lambda nn: nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1, output_padding=1, groups=2),
     (2, 4, 4, 3)),
    ("Unfold", lambda nn: nn.Unfold(2, padding=1, stride=2), (1, 2, 5, 4)),
    ("Fold", lambda nn: nn.Fold((3, 4), 2), (1, 8, 6)),
]


@needs_torch
@pytest.mark.parametrize("case", MODULES, ids=[c[0] for c in MODULES])
def test_module_matches_torch(case: Any) -> None:
    """Output, input gradient and parameter gradients with identical weights; same repr."""
    check_module_case_against_torch(case, RNG)


@needs_torch
def test_conv_transpose_output_size_matches_torch() -> None:
    tm = torch.nn.ConvTranspose2d(2, 3, 3, stride=2, padding=1).double()
    lm = nn.ConvTranspose2d(2, 3, 3, stride=2, padding=1).to(lg.float64)
    load_from_torch(lm, tm)
    x = RNG.standard_normal((1, 2, 4, 4))
    for size in [(7, 7), (8, 7), [1, 3, 8, 8]]:
        lo, to = lm(lg.tensor(x), output_size=size), tm(torch.tensor(x), output_size=size)
        np.testing.assert_allclose(lo.numpy(force=True), to.detach().numpy(), rtol=1e-10)
    with pytest.raises(ValueError):
        lm(lg.tensor(x), output_size=(10, 10))


@pytest.mark.parametrize("make, fan_in", [(lambda: nn.Conv2d(4, 6, (3, 2), groups=2), 2 * 3 * 2),
                                          (lambda: nn.Conv1d(3, 5, 4), 3 * 4),
                                          (lambda: nn.ConvTranspose2d(4, 6, 3, groups=2), 3 * 9)])
def test_conv_default_init_bounds(make: Any, fan_in: int) -> None:
    """kaiming_uniform_(a=sqrt(5)) and the bias both draw from U(-1/sqrt(fan_in), 1/sqrt(fan_in))."""
    lg.manual_seed(0)
    m = make()
    bound = 1 / math.sqrt(fan_in)
    for p in (m.weight, m.bias):
        v = np.abs(p.detach().numpy())
        assert v.max() <= bound + 1e-7
    assert np.abs(m.weight.detach().numpy()).max() > 0.7 * bound  # not a degenerate init


# ---- error cases ---------------------------------------------------------------------------------

ERRORS = [
    ("conv2d_channels", lambda F, T: F.conv2d(T.zeros(2, 4, 8, 8), T.zeros(16, 3, 3, 3)), "3 channels, but got 4"),
    ("conv2d_dims", lambda F, T: F.conv2d(T.zeros(8, 8), T.zeros(16, 1, 3, 3)), "input of size: \\[8, 8\\]"),
    ("conv2d_kernel_too_big", lambda F, T: F.conv2d(T.zeros(1, 1, 5, 5), T.zeros(2, 1, 7, 7)), "Kernel size can't be greater"),
    ("conv2d_groups_weight", lambda F, T: F.conv2d(T.zeros(1, 2, 5, 5), T.zeros(3, 1, 3, 3), groups=2), "divisible by 2"),
    ("conv2d_same_strided", lambda F, T: F.conv2d(T.zeros(1, 1, 5, 5), T.zeros(2, 1, 3, 3), stride=2, padding="same"),
     "strided"),
    ("conv2d_dtype", lambda F, T: F.conv2d(T.zeros(1, 1, 5, 5, dtype=T.float64), T.zeros(2, 1, 3, 3)), "type"),
    ("conv1d_stride_pair", lambda F, T: F.conv1d(T.zeros(1, 1, 5), T.zeros(2, 1, 3), stride=(1, 1)), "stride"),
    ("conv_transpose_channels", lambda F, T: F.conv_transpose2d(T.zeros(1, 1, 5, 5), T.zeros(2, 1, 3, 3)),
     "2 channels, but got 1"),
    ("fold_blocks", lambda F, T: F.fold(T.zeros(1, 4, 8), (4, 4), 2), "sliding blocks 3 \\* 3 = 9"),
]


@pytest.mark.parametrize("case", ERRORS, ids=[c[0] for c in ERRORS])
def test_errors(case: Any) -> None:
    """Bad shapes raise RuntimeError saying expected vs got (PyTorch's exception type)."""
    check_error_case(case)


def test_module_argument_errors() -> None:
    with pytest.raises(ValueError, match="divisible by groups"):
        nn.Conv2d(3, 4, 3, groups=2)
    with pytest.raises(ValueError, match="strided"):
        nn.Conv2d(3, 4, 3, stride=2, padding="same")
    with pytest.raises(ValueError, match="padding_mode"):
        nn.Conv2d(3, 4, 3, padding_mode="mirror")
    with pytest.raises(ValueError, match="zeros"):
        nn.ConvTranspose2d(3, 4, 3, padding_mode="reflect")
    with pytest.raises(ValueError, match="only one of size or scale_factor"):
        F.interpolate(lg.zeros(1, 1, 2, 2))
    with pytest.raises(NotImplementedError):
        F.interpolate(lg.zeros(1, 1, 2, 2), scale_factor=2, mode="bilinear", antialias=True)


# ---- 3-D convolution: functional -----------------------------------------------------------------

def _conv3d_cases(n: int, seed: int) -> list[dict[str, Any]]:
    """Random valid geometries: groups, kernel, stride, padding, dilation per axis, (un)batched."""
    r = random.Random(seed)
    out = []
    while len(out) < n:
        g, cg, og = r.choice([1, 2]), r.choice([1, 2, 3]), r.choice([1, 2])
        k = tuple(r.choice([1, 2, 3]) for _ in range(3))
        s = tuple(r.choice([1, 2]) for _ in range(3))
        d = tuple(r.choice([1, 2]) for _ in range(3))
        p = tuple(r.choice([0, 1, 2]) for _ in range(3))
        sp = tuple(r.randint(max(1, d[i] * (k[i] - 1) + 1 - 2 * p[i]), 6) for i in range(3))
        batch = (2,) if r.random() < 0.7 else ()
        out.append(dict(x=batch + (g * cg,) + sp, w=(g * og, cg) + k, b=r.random() < 0.6, stride=s, padding=p,
                        dilation=d, groups=g))
    return out


@needs_torch
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_conv3d_matches_torch(dtype: str) -> None:
    rng = np.random.default_rng(0)
    for c in _conv3d_cases(25, 1):
        arrays = [rng.standard_normal(c["x"]), rng.standard_normal(c["w"]),
                  rng.standard_normal(c["w"][0]) if c["b"] else None]
        compare_functions(F.conv3d, TF.conv3d, arrays, dtype, rng, stride=c["stride"], padding=c["padding"],
                          dilation=c["dilation"], groups=c["groups"])


@needs_torch
@pytest.mark.parametrize("padding", ["same", "valid"])
def test_conv3d_string_padding(padding: str) -> None:
    rng = np.random.default_rng(1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # PyTorch warns about even kernels with 'same'
        for k, d, g in [((3, 3, 3), 1, 1), ((2, 3, 1), (1, 2, 3), 2), ((1, 2, 3), 2, 1)]:
            arrays = [rng.standard_normal((2, 2 * g, 5, 6, 7)), rng.standard_normal((2 * g, 2) + k),
                      rng.standard_normal(2 * g)]
            compare_functions(F.conv3d, TF.conv3d, arrays, "float64", rng, padding=padding, dilation=d, groups=g)


def _conv_t3d_cases(n: int, seed: int) -> list[dict[str, Any]]:
    r = random.Random(seed)
    out = []
    while len(out) < n:
        g, cg, og = r.choice([1, 2]), r.choice([1, 2, 3]), r.choice([1, 2])
        k = tuple(r.choice([1, 2, 3]) for _ in range(3))
        s = tuple(r.choice([1, 2, 3]) for _ in range(3))
        d = tuple(r.choice([1, 2]) for _ in range(3))
        p = tuple(r.choice([0, 1, 2]) for _ in range(3))
        op = tuple(r.randint(0, max(s[i], d[i]) - 1) for i in range(3))
        sp = tuple(r.randint(1, 4) for _ in range(3))
        size = [(sp[i] - 1) * s[i] - 2 * p[i] + d[i] * (k[i] - 1) + op[i] + 1 for i in range(3)]
        if min(size) <= 0:
            continue
        batch = (2,) if r.random() < 0.7 else ()
        out.append(dict(x=batch + (g * cg,) + sp, w=(g * cg, og) + k, b=r.random() < 0.6, stride=s, padding=p,
                        output_padding=op, groups=g, dilation=d))
    return out


@needs_torch
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_conv_transpose3d_matches_torch(dtype: str) -> None:
    rng = np.random.default_rng(2)
    for c in _conv_t3d_cases(25, 3):
        arrays = [rng.standard_normal(c["x"]), rng.standard_normal(c["w"]),
                  rng.standard_normal(c["w"][1] * c["groups"]) if c["b"] else None]
        compare_functions(F.conv_transpose3d, TF.conv_transpose3d, arrays, dtype, rng, stride=c["stride"],
                          padding=c["padding"], output_padding=c["output_padding"], groups=c["groups"],
                          dilation=c["dilation"])


@pytest.mark.parametrize("fn, kw, shapes", [
    (F.conv3d, dict(stride=(2, 1, 1), padding=(1, 0, 1), dilation=(1, 2, 1), groups=2),
     [(1, 2, 4, 5, 3), (2, 1, 2, 2, 2), (2,)]),
    (F.conv_transpose3d, dict(stride=(2, 1, 2), padding=(1, 0, 0), output_padding=(1, 0, 0), dilation=(1, 1, 2)),
     [(1, 2, 2, 3, 2), (2, 2, 2, 2, 2), (2,)]),
])
def test_conv3d_finite_differences(fn: Any, kw: dict[str, Any], shapes: list[tuple[int, ...]]) -> None:
    rng = np.random.default_rng(4)
    xs = [rng.standard_normal(s) for s in shapes]
    ts = [lg.tensor(a, requires_grad=True) for a in xs]
    out = fn(*ts, **kw)
    r = rng.standard_normal(tuple(out.shape))
    out.backward(lg.tensor(r))
    num = numeric_grads(lambda *a: fn(*[lg.tensor(v) for v in a], **kw).numpy(), xs, r)
    for t, n in zip(ts, num):
        np.testing.assert_allclose(t.grad.numpy(), n, rtol=1e-6, atol=1e-7)


@needs_torch
@pytest.mark.parametrize("call", [
    lambda F, t: F.conv3d(t.randn(1, 2, 4, 4, 4), t.randn(3, 3, 3, 3, 3)),  # channels
    lambda F, t: F.conv3d(t.randn(1, 2, 2, 4, 4), t.randn(3, 2, 3, 3, 3)),  # kernel larger than input
    lambda F, t: F.conv3d(t.randn(1, 2, 3, 4, 4, 4), t.randn(3, 2, 3, 3, 3)),  # 6-D input
    lambda F, t: F.conv3d(t.randn(1, 4, 4, 4, 4), t.randn(3, 2, 3, 3, 3), groups=2),  # O % groups
    lambda F, t: F.conv3d(t.randn(1, 2, 4, 4, 4), t.randn(3, 2, 3, 3, 3), stride=2, padding="same"),
    lambda F, t: F.conv3d(t.randn(1, 2, 4, 4, 4), t.randn(3, 2, 3, 3, 3), stride=(1, 2)),
    lambda F, t: F.conv3d(t.randn(1, 2, 4, 4, 4), t.randn(3, 2, 3, 3, 3), padding=-1),
    lambda F, t: F.conv3d(t.randn(1, 2, 4, 4, 4, dtype=t.float64), t.randn(3, 2, 3, 3, 3)),
    lambda F, t: F.conv_transpose3d(t.randn(1, 2, 4, 4, 4), t.randn(3, 2, 3, 3, 3)),
    lambda F, t: F.conv_transpose3d(t.randn(1, 2, 4, 4, 4), t.randn(2, 2, 3, 3, 3), stride=2, output_padding=2),
    lambda F, t: F.conv_transpose3d(t.randn(1, 2, 1, 1, 1), t.randn(2, 2, 1, 1, 1), padding=1),
])
def test_conv3d_errors_match_torch(call: Any) -> None:
    with pytest.raises(Exception) as te:
        call(TF, torch)
    with pytest.raises(type(te.value)):
        call(F, lg)


# ---- 3-D convolution: modules --------------------------------------------------------------------

@needs_torch
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("cls, kw, xshape", [
    ("Conv3d", dict(in_channels=2, out_channels=4, kernel_size=3), (2, 2, 5, 5, 5)),
    ("Conv3d", dict(in_channels=4, out_channels=2, kernel_size=(1, 3, 2), stride=(1, 2, 1), padding=(0, 1, 1),
                    groups=2, bias=False), (4, 4, 6, 5)),
    ("Conv3d", dict(in_channels=2, out_channels=3, kernel_size=3, padding="same", dilation=(1, 2, 1)),
     (1, 2, 4, 6, 5)),
    ("Conv3d", dict(in_channels=2, out_channels=3, kernel_size=2, padding="valid"), (1, 2, 3, 4, 3)),
    ("Conv3d", dict(in_channels=2, out_channels=2, kernel_size=3, padding=(1, 2, 1), padding_mode="reflect"),
     (1, 2, 4, 5, 4)),
    ("Conv3d", dict(in_channels=2, out_channels=2, kernel_size=3, padding=1, padding_mode="replicate",
                    stride=2), (2, 2, 5, 4, 4)),
    ("Conv3d", dict(in_channels=2, out_channels=2, kernel_size=(2, 3, 3), padding="same",
                    padding_mode="circular"), (2, 4, 5, 5)),
    ("ConvTranspose3d", dict(in_channels=2, out_channels=4, kernel_size=3, stride=2, padding=1,
                             output_padding=1), (2, 2, 3, 3, 2)),
    ("ConvTranspose3d", dict(in_channels=4, out_channels=2, kernel_size=(2, 1, 3), groups=2, dilation=(2, 1, 1),
                             bias=False), (4, 2, 3, 3)),
])
def test_conv3d_modules_match_torch(cls: str, kw: dict[str, Any], xshape: tuple[int, ...], dtype: str) -> None:
    rng = np.random.default_rng(5)
    tdt = getattr(torch, dtype)
    tm = getattr(torch.nn, cls)(**kw).to(tdt)
    lm = getattr(lg.nn, cls)(**kw).to(getattr(lg, dtype))
    assert repr(lm) == repr(tm)
    assert {k: tuple(v.shape) for k, v in lm.state_dict().items()} == \
        {k: tuple(v.shape) for k, v in tm.state_dict().items()}
    lm.load_state_dict(state_to_lg(tm.state_dict()))
    x = rng.standard_normal(xshape).astype(dtype)
    tx, lx = torch.tensor(x, requires_grad=True), lg.tensor(x, requires_grad=True)
    to, lo = tm(tx), lm(lx)
    assert_close_by_dtype(numpy_of(lo), numpy_of(to), dtype)
    g = rng.standard_normal(tuple(to.shape)).astype(dtype)
    to.backward(torch.tensor(g))
    lo.backward(lg.tensor(g))
    assert_close_by_dtype(lx.grad.numpy(), tx.grad.numpy(), dtype)
    for name, p in tm.named_parameters():
        assert_close_by_dtype(getattr(lm, name).grad.numpy(), p.grad.numpy(), dtype, name)
    # and back: a fresh torch module loads lightgrad's state
    tm2 = getattr(torch.nn, cls)(**kw).to(tdt)
    tm2.load_state_dict(state_to_torch(lm.state_dict()))
    assert_close_by_dtype(numpy_of(tm2(torch.tensor(x))), numpy_of(lo), dtype)


@needs_torch
def test_conv_transpose3d_output_size() -> None:
    rng = np.random.default_rng(6)
    tm = torch.nn.ConvTranspose3d(2, 3, 3, stride=2, padding=1).double()
    lm = lg.nn.ConvTranspose3d(2, 3, 3, stride=2, padding=1).double()
    lm.load_state_dict(state_to_lg(tm.state_dict()))
    x = rng.standard_normal((1, 2, 3, 3, 4))
    for size in [(5, 6, 8), (1, 3, 6, 5, 7)]:
        assert_close_by_dtype(numpy_of(lm(lg.tensor(x), output_size=size)), numpy_of(tm(torch.tensor(x),
                                                                                        output_size=size)), "float64")
    with pytest.raises(ValueError):
        tm(torch.tensor(x), output_size=(9, 9, 9))
    with pytest.raises(ValueError):
        lm(lg.tensor(x), output_size=(9, 9, 9))


@pytest.mark.parametrize("cls, transposed", [("Conv3d", False), ("ConvTranspose3d", True)])
def test_conv3d_default_init(cls: str, transposed: bool) -> None:
    lg.manual_seed(0)
    m = getattr(lg.nn, cls)(6, 8, (2, 3, 3), groups=2)
    fan_in = m.weight.shape[1] * 18
    w, b = m.weight.detach().numpy(), m.bias.detach().numpy()
    assert m.weight.shape == ((6, 4, 2, 3, 3) if transposed else (8, 3, 2, 3, 3))
    bound = 1 / np.sqrt(fan_in)  # kaiming_uniform_(a=sqrt(5)) and the bias share this bound
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.9 * bound
    assert np.abs(b).max() <= bound and w.std() > 0.4 * bound


@needs_torch
@pytest.mark.parametrize("kw", [
    dict(in_channels=3, out_channels=4, kernel_size=3, groups=2),
    dict(in_channels=4, out_channels=3, kernel_size=3, groups=2),
    dict(in_channels=2, out_channels=2, kernel_size=3, padding="full"),
    dict(in_channels=2, out_channels=2, kernel_size=3, padding="same", stride=2),
    dict(in_channels=2, out_channels=2, kernel_size=3, padding_mode="mirror"),
])
def test_conv3d_constructor_errors(kw: dict[str, Any]) -> None:
    with pytest.raises(Exception) as te:
        torch.nn.Conv3d(**kw)
    with pytest.raises(type(te.value)):
        lg.nn.Conv3d(**kw)


@needs_torch
def test_conv_transpose3d_constructor_errors() -> None:
    with pytest.raises(ValueError):
        torch.nn.ConvTranspose3d(2, 2, 3, padding_mode="reflect")
    with pytest.raises(ValueError, match="padding mode"):
        lg.nn.ConvTranspose3d(2, 2, 3, padding_mode="reflect")
    # stricter than PyTorch, whose constructors accept these and fail later (or never)
    with pytest.raises(ValueError, match="string padding"):
        lg.nn.ConvTranspose3d(2, 2, 3, padding="same")
    with pytest.raises(RuntimeError, match="list of 3 values"):
        lg.nn.Conv3d(2, 2, (3, 3))


# ---- the stride-1 path: ConvStride1 --------------------------------------------------------------

# (input shape, weight shape, keyword arguments): both column layouts (C below and at/above
# _LAST_MIN_CHANNELS) and the three input gradients (col2im for NCHW columns; with channels-last
# ones the grid product where C < O, im2col of the padded gradient else), odd and even kernels,
# asymmetric 'same' padding, dilation
FAST = [
    ((2, 1, 6, 7), (3, 1, 3, 3), dict(padding=1)),
    ((2, 3, 6, 7), (4, 3, 3, 3), dict(padding=1)),
    ((2, 3, 8, 9), (4, 3, 3, 2), dict(padding="same", dilation=(2, 1))),
    ((2, 16, 7, 6), (8, 16, 3, 3), dict(padding=1)),
    ((2, 8, 7, 6), (40, 8, 3, 3), dict(padding=1)),
    ((2, 9, 6, 7), (4, 9, 3, 2), dict(padding=(1, 0))),
    ((2, 9, 8, 9), (3, 9, 3, 3), dict(padding=2, dilation=2)),
    ((2, 9, 8, 9), (3, 9, 4, 3), dict(padding="same", dilation=(2, 1))),
    ((1, 10, 8, 9), (3, 10, 2, 4), dict(padding="same")),
    ((2, 12, 5, 5), (4, 12, 1, 1), dict()),
    ((2, 12, 5, 5), (4, 12, 3, 3), dict(padding="valid")),
    ((2, 12, 5, 5), (4, 12, 3, 3), dict(padding=(2, 1))),
    ((2, 8, 6, 7), (12, 8, 3, 2), dict(padding="same", dilation=(2, 1))),
    ((2, 8, 7, 6), (10, 8, 3, 3), dict(padding="valid")),
    ((2, 8, 5, 6), (9, 8, 1, 1), dict()),
    ((2, 8, 8, 9), (11, 8, 3, 3), dict(padding=(2, 0), dilation=(1, 2))),
]


# convolutions that keep the general Conv2d op: stride, groups, padding beyond the kernel's reach
GENERAL = [
    ((2, 5, 8, 9), (3, 5, 3, 3), dict(stride=2, padding=1)),
    ((2, 4, 6, 7), (6, 2, 3, 3), dict(groups=2, padding=1)),
    ((2, 4, 6, 7), (3, 4, 3, 3), dict(padding=3)),
    ((2, 4, 6, 7), (3, 4, 1, 1), dict(padding=1)),
]


def _route(xs: tuple[int, ...], ws: tuple[int, ...]) -> str:
    """The input gradient ConvStride1.backward takes for these shapes."""
    if xs[1] < _LAST_MIN_CHANNELS:
        return "col2im"
    return "grid" if xs[1] < ws[0] else "im2col"


def _both(xs: tuple[int, ...], ws: tuple[int, ...], kw: dict[str, Any], bias: bool, dtype: Any,
          create_graph: bool = False) -> tuple[list[np.ndarray], list[np.ndarray], Any]:
    """Output and input/weight/bias gradients from lightgrad and PyTorch on the same data."""
    x = RNG.standard_normal(xs).astype(dtype)
    w = RNG.standard_normal(ws).astype(dtype)
    b = RNG.standard_normal(ws[0]).astype(dtype) if bias else None
    res, node = [], None
    for T in (lg, torch):
        ts = [T.tensor(a, requires_grad=True) for a in (x, w) + ((b,) if bias else ())]
        out = T.nn.functional.conv2d(ts[0], ts[1], ts[2] if bias else None, **kw)
        r = RNG.standard_normal(tuple(out.shape)).astype(dtype) if not res else res[0][-1]
        if T is lg:
            node = out.grad_fn
        loss = (out * T.tensor(r)).sum()
        if create_graph:  # the second derivative of <out, r>^2 reaches through the backward
            grads = T.autograd.grad(loss, ts, create_graph=True)
            sum(((gi * gi).sum() for gi in grads), T.tensor(0.0, dtype=out.dtype)).backward()
            vals = [t.grad for t in ts[:2]]  # the bias's gradient is constant in every input
        else:
            loss.backward()
            vals = [out] + [t.grad for t in ts]
        res.append([np.asarray(v.detach().numpy(), np.float64) for v in vals] + [r])
    return res[0][:-1], res[1][:-1], node


def _cnn(T: Any, c: int) -> tuple[Any, Any]:
    """A two-conv net (both column layouts) and its SGD optimizer."""
    T.manual_seed(0)
    nn = T.nn
    model = nn.Sequential(nn.Conv2d(1, c, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Conv2d(c, 2 * c, 3, padding=1), nn.ReLU(), nn.Flatten(), nn.Linear(2 * c * 16, 3))
    return model, T.optim.SGD(model.parameters(), lr=0.1)


@needs_torch
class TestConvStride1:
    """The stride-1 convolution path (``ConvStride1``: bias folded into the product, channels-last
    columns for several input channels, the input gradient as a full convolution) against PyTorch,
    finite differences, double backward, compile and arenas; and which convolutions take it."""

    def test_cases_cover_every_route(self) -> None:
        """NCHW columns with col2im, channels-last with the grid product and with im2col of the gradient."""
        assert {_route(xs, ws) for xs, ws, _ in FAST} == {"col2im", "grid", "im2col"}
        assert sum(_route(xs, ws) == "grid" for xs, ws, _ in FAST) >= 4  # and the grid's geometries

    def test_input_gradient_routes(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """The route _route names is the one backward takes (the grid product is called exactly there)."""
        calls = []

        def spy(*args: Any) -> np.ndarray:
            calls.append(args)
            return _grid_input_grad(*args)
        monkeypatch.setattr("lightgrad.nn.functional._window_kernels._grid_input_grad", spy)
        for xs, ws, kw in FAST:
            calls.clear()
            x = lg.tensor(RNG.standard_normal(xs), requires_grad=True)
            F.conv2d(x, lg.tensor(RNG.standard_normal(ws)), **kw).sum().backward()
            assert bool(calls) == (_route(xs, ws) == "grid"), (xs, ws, kw)

    @pytest.mark.parametrize("bias", [True, False], ids=["bias", "nobias"])
    @pytest.mark.parametrize("xs, ws, kw", FAST + GENERAL)
    def test_matches_torch_float64(self, xs: tuple[int, ...], ws: tuple[int, ...], kw: dict[str, Any],
                                   bias: bool) -> None:
        mine, ref, node = _both(xs, ws, kw, bias, np.float64)
        for a, e in zip(mine, ref):
            np.testing.assert_allclose(a, e, rtol=1e-10, atol=1e-10)
        fast = (xs, ws, kw) in FAST
        assert (type(node) is ConvStride1) == fast
        assert isinstance(node, K.Conv2d) and node.name() == "Conv2dBackward0"

    @pytest.mark.parametrize("xs, ws, kw", [FAST[1], FAST[3], FAST[4], FAST[7], FAST[12]])
    def test_matches_torch_float32(self, xs: tuple[int, ...], ws: tuple[int, ...], kw: dict[str, Any]) -> None:
        mine, ref, _ = _both(xs, ws, kw, True, np.float32)
        for a, e in zip(mine, ref):
            np.testing.assert_allclose(a, e, rtol=1e-4, atol=1e-4)

    @pytest.mark.parametrize("xs, ws, kw", [FAST[2], FAST[5], FAST[7], FAST[12], FAST[15]])
    def test_gradients_match_finite_differences(self, xs: tuple[int, ...], ws: tuple[int, ...],
                                                kw: dict[str, Any]) -> None:
        x, w, b = RNG.standard_normal(xs), RNG.standard_normal(ws), RNG.standard_normal(ws[0])

        def f(x: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
            with lg.no_grad():
                return F.conv2d(lg.tensor(x), lg.tensor(w), lg.tensor(b), **kw).numpy()

        r = RNG.standard_normal(f(x, w, b).shape)
        ts = [lg.tensor(a, requires_grad=True) for a in (x, w, b)]
        out = F.conv2d(*ts, **kw)
        assert type(out.grad_fn) is ConvStride1
        (out * lg.tensor(r)).sum().backward()
        for t, e in zip(ts, numeric_grads(f, [x, w, b], r)):
            np.testing.assert_allclose(t.grad.numpy(), e, rtol=1e-6, atol=1e-7)

    @pytest.mark.parametrize("xs, ws, kw", [FAST[1], FAST[3], FAST[7]])
    def test_double_backward_matches_torch(self, xs: tuple[int, ...], ws: tuple[int, ...], kw: dict[str, Any]) -> None:
        mine, ref, _ = _both(xs, ws, kw, True, np.float64, create_graph=True)
        for a, e in zip(mine, ref):
            np.testing.assert_allclose(a, e, rtol=1e-9, atol=1e-9)

    def test_only_needed_gradients_and_unbatched_and_1d(self) -> None:
        """A frozen input or weight gets no gradient; unbatched 2-D and 1-D inputs go through too."""
        xa, wa = RNG.standard_normal((8, 5, 7)), RNG.standard_normal((4, 8, 3, 3))
        x, w = lg.tensor(xa, requires_grad=True), lg.tensor(wa)
        out = F.conv2d(x, w, padding=1)
        assert type(out.grad_fn.next_functions[0][0]) is ConvStride1 and out.shape == (4, 5, 7)
        out.sum().backward()
        tx = torch.tensor(xa, requires_grad=True)
        ref = torch.nn.functional.conv2d(tx, torch.tensor(wa), padding=1)
        ref.sum().backward()
        np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), rtol=1e-10)
        np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-10)
        assert w.grad is None
        x1 = RNG.standard_normal((2, 9, 9))
        w1 = RNG.standard_normal((3, 9, 3))
        lw = lg.tensor(w1, requires_grad=True)
        lo = F.conv1d(lg.tensor(x1), lw, padding=2, dilation=2)
        tw = torch.tensor(w1, requires_grad=True)
        to = torch.nn.functional.conv1d(torch.tensor(x1), tw, padding=2, dilation=2)
        lo.sum().backward()
        to.sum().backward()
        np.testing.assert_allclose(lo.detach().numpy(), to.detach().numpy(), rtol=1e-10)
        np.testing.assert_allclose(lw.grad.numpy(), tw.grad.numpy(), rtol=1e-10)

    def test_compiled_and_arena_steps_match_eager(self) -> None:
        c = _LAST_MIN_CHANNELS
        x = lg.tensor(RNG.standard_normal((4, 1, 8, 8)).astype(np.float32))
        y = lg.tensor(RNG.integers(0, 3, 4))
        runs = []
        for how in ("eager", "compile", "arena"):
            model, opt = _cnn(lg, c)

            def step(model: Any = model, opt: Any = opt) -> Any:
                opt.zero_grad()
                loss = F.cross_entropy(model(x), y)
                loss.backward()
                opt.step()
                return loss
            if how == "compile":
                step = lg.compile(step)
            arena = lg.memory.Arena("16MB", name="t") if how == "arena" else None
            losses = []
            for _ in range(4):
                if arena is not None:
                    with arena:
                        losses.append(step().item())
                    arena.reset()
                else:
                    losses.append(step().item())
            runs.append((losses, [p.detach().numpy().copy() for p in model.parameters()]))
        for losses, params in runs[1:]:
            np.testing.assert_allclose(losses, runs[0][0], rtol=1e-6)
            for a, e in zip(params, runs[0][1]):
                np.testing.assert_allclose(a, e, rtol=1e-5, atol=1e-6)


# ---- ConvStride1's gradients by blocks of images -------------------------------------------------

# (input, weight, conv2d arguments): NCHW columns (C < _LAST_MIN_CHANNELS), channels-last with
# col2im (4*C < O) and channels-last with the full convolution (4*C >= O); padding, 'same' with
# an even kernel, dilation; batches of several images so that the per-image sums matter
GEOMETRY = [
    ((5, 2, 7, 6), (6, 2, 3, 3), dict(padding=1)),
    ((4, 8, 6, 7), (40, 8, 3, 3), dict(padding=1)),
    ((5, 9, 7, 6), (12, 9, 3, 3), dict(padding=1)),
    ((3, 10, 8, 9), (4, 10, 4, 3), dict(padding="same", dilation=(2, 1))),
    ((4, 8, 9, 8), (5, 8, 3, 3), dict(padding=(2, 1), dilation=2)),
    ((3, 12, 5, 6), (7, 12, 2, 2), dict()),
]


IDS = ["nchw", "last_col2im", "last_full", "same_dilated", "pad_dilated", "valid_even"]


def _grads(T: Any, x: np.ndarray, w: np.ndarray, b: np.ndarray | None, r: np.ndarray, kw: dict[str, Any],
           needs: tuple[bool, bool, bool], permuted: bool) -> list[np.ndarray | None]:
    ts = [T.tensor(a, requires_grad=n) if a is not None else None for a, n in zip((x, w, b), needs)]
    out = T.nn.functional.conv2d(ts[0], ts[1], ts[2], **kw)
    if T is lg:
        assert type(out.grad_fn) is ConvStride1
    if permuted:  # the gradient reaches the convolution as a non-contiguous (transposed) array
        loss = (out.permute(0, 2, 3, 1) * T.tensor(r.transpose(0, 2, 3, 1).copy())).sum()
    else:
        loss = (out * T.tensor(r)).sum()
    loss.backward()
    return [t.grad.numpy() if t is not None and t.requires_grad else None for t in ts]


# (input, weight, conv2d arguments): C >= 8 and 4*C >= O, so channels-last with the input
# gradient as a full convolution; the second with uneven padding and dilation
BLOCK_GEOMETRY = [((7, 8, 6, 5), (12, 8, 3, 3), dict(padding=1)),
                  ((7, 9, 8, 9), (3, 9, 4, 3), dict(padding="same", dilation=(2, 1)))]


@needs_torch
class TestConvStride1BlockedGradients:
    """``ConvStride1``'s gradients as the CNN training step computes them: the weight and bias
    gradients as one product per image summed over the batch (both column layouts), the input
    gradient as a blocked full convolution read straight from the NCHW gradient (a few images at a
    time, also on shapes larger than the other tests use); against PyTorch and finite differences,
    with every subset of gradients asked for and gradients that arrive non-contiguous or broadcast."""

    def test_geometry_covers_both_layouts_and_input_gradients(self) -> None:
        last = [xs[1] >= _LAST_MIN_CHANNELS for xs, _, _ in GEOMETRY]
        routes = {(la, la and 4 * xs[1] >= ws[0]) for la, (xs, ws, _) in zip(last, GEOMETRY)}
        assert routes == {(False, False), (True, False), (True, True)}

    @pytest.mark.parametrize("xs, ws, kw", GEOMETRY, ids=IDS)
    @pytest.mark.parametrize("needs", [(True, True, True), (False, True, True), (False, True, False),
                                       (False, False, True), (True, False, False)],
                             ids=["all", "weight_bias", "weight", "bias", "input"])
    @pytest.mark.parametrize("permuted", [False, True], ids=["contiguous", "permuted"])
    def test_gradients_match_torch_float64(self, xs: tuple[int, ...], ws: tuple[int, ...], kw: dict[str, Any],
                                           needs: tuple[bool, bool, bool], permuted: bool) -> None:
        x, w, b = (RNG.standard_normal(s) for s in (xs, ws, (ws[0],)))
        with torch.no_grad():
            r = RNG.standard_normal(tuple(torch.nn.functional.conv2d(torch.tensor(x), torch.tensor(w), **kw).shape))
        got = _grads(lg, x, w, b, r, kw, needs, permuted)
        want = _grads(torch, x, w, b, r, kw, needs, permuted)
        for name, a, e in zip(("input", "weight", "bias"), got, want):
            assert (a is None) == (e is None), name
            if a is not None:
                np.testing.assert_allclose(a, e, rtol=1e-10, atol=1e-10, err_msg=name)

    @pytest.mark.parametrize("xs, ws, kw", GEOMETRY, ids=IDS)
    def test_gradients_match_torch_float32_without_bias(self, xs: tuple[int, ...], ws: tuple[int, ...],
                                                        kw: dict[str, Any]) -> None:
        x, w = (RNG.standard_normal(s).astype(np.float32) for s in (xs, ws))
        with torch.no_grad():
            r = RNG.standard_normal(tuple(torch.nn.functional.conv2d(torch.tensor(x), torch.tensor(w), **kw).shape))
        r = r.astype(np.float32)
        got = _grads(lg, x, w, None, r, kw, (True, True, False), False)
        want = _grads(torch, x, w, None, r, kw, (True, True, False), False)
        for a, e in zip(got[:2], want[:2]):
            assert a is not None and a.dtype == np.float32
            np.testing.assert_allclose(a, e, rtol=1e-4, atol=1e-4)

    def test_broadcast_gradient_of_a_sum(self) -> None:
        """out.sum().backward() hands the op a broadcast (zero-stride) gradient of ones."""
        x, w, b = (RNG.standard_normal(s) for s in ((3, 9, 6, 5), (12, 9, 3, 3), (12,)))
        res = []
        for T in (lg, torch):
            ts = [T.tensor(a, requires_grad=True) for a in (x, w, b)]
            T.nn.functional.conv2d(*ts, padding=1).sum().backward()
            res.append([t.grad.numpy() for t in ts])
        for a, e in zip(*res):
            np.testing.assert_allclose(a, e, rtol=1e-10, atol=1e-10)

    @pytest.mark.parametrize("xs, ws, kw", [GEOMETRY[0], GEOMETRY[2], GEOMETRY[3]], ids=[IDS[0], IDS[2], IDS[3]])
    def test_gradients_match_finite_differences(self, xs: tuple[int, ...], ws: tuple[int, ...],
                                                kw: dict[str, Any]) -> None:
        small = (2,) + xs[1:]
        x, w, b = (RNG.standard_normal(s) for s in (small, ws, (ws[0],)))
        out_shape = lg.nn.functional.conv2d(lg.tensor(x), lg.tensor(w), **kw).shape
        r = RNG.standard_normal(tuple(out_shape))

        def f(*arrs: np.ndarray) -> np.ndarray:
            return lg.nn.functional.conv2d(*(lg.tensor(a) for a in arrs), **kw).numpy()

        ts = [lg.tensor(a, requires_grad=True) for a in (x, w, b)]
        (lg.nn.functional.conv2d(*ts, **kw) * lg.tensor(r)).sum().backward()
        for t, num in zip(ts, numeric_grads(f, [x, w, b], r)):
            np.testing.assert_allclose(t.grad.numpy(), num, rtol=1e-6, atol=1e-6)

    @pytest.mark.parametrize("images_per_block", [1, 2, 100])
    def test_blocked_input_gradient_from_nchw(self, monkeypatch: pytest.MonkeyPatch, images_per_block: int) -> None:
        """The full convolution a few images at a time, straight from the NCHW gradient: blocks of
        1 and 2 of 5 images (a last block with fewer images) and one block, input gradient only."""
        xs, ws = (5, 9, 7, 6), (12, 9, 3, 3)
        monkeypatch.setattr(K, "_BLOCK_BYTES", images_per_block * xs[2] * xs[3] * 9 * ws[0] * 8)
        x, w = (RNG.standard_normal(s) for s in (xs, ws))
        r = RNG.standard_normal((xs[0], ws[0], xs[2], xs[3]))
        got = _grads(lg, x, w, None, r, dict(padding=1), (True, False, False), True)
        want = _grads(torch, x, w, None, r, dict(padding=1), (True, False, False), True)
        np.testing.assert_allclose(got[0], want[0], rtol=1e-10, atol=1e-10)

    @pytest.mark.parametrize("xs, ws, kw", [GEOMETRY[0], GEOMETRY[2]], ids=[IDS[0], IDS[2]])
    @pytest.mark.parametrize("images_per_chunk", [1, 2, 100])
    def test_weight_gradient_summed_in_chunks_of_images(self, monkeypatch: pytest.MonkeyPatch, xs: tuple[int, ...],
                                                        ws: tuple[int, ...], kw: dict[str, Any],
                                                        images_per_chunk: int) -> None:
        """The per-image products summed 1 and 2 images at a time (a last chunk with fewer) and all
        at once: the same weight and bias gradients, in both column layouts."""
        k = xs[1] * ws[2] * ws[3] + 1  # one image's product is O x (kh*kw*C + 1), the bias column included
        monkeypatch.setattr(K, "_SUM_BYTES", images_per_chunk * ws[0] * k * 8)
        x, w, b = (RNG.standard_normal(s) for s in (xs, ws, (ws[0],)))
        with torch.no_grad():
            r = RNG.standard_normal(tuple(torch.nn.functional.conv2d(torch.tensor(x), torch.tensor(w), **kw).shape))
        got = _grads(lg, x, w, b, r, kw, (False, True, True), False)
        want = _grads(torch, x, w, b, r, kw, (False, True, True), False)
        for a, e in zip(got[1:], want[1:]):
            np.testing.assert_allclose(a, e, rtol=1e-10, atol=1e-10)

    @pytest.mark.parametrize("xs, ws, kw", BLOCK_GEOMETRY, ids=["3x3", "same_dilated"])
    @pytest.mark.parametrize("images_per_block", [1, 3, 7, 100])
    @pytest.mark.parametrize("dtype, tol", [(np.float64, 1e-10), (np.float32, 1e-4)], ids=["f64", "f32"])
    @pytest.mark.parametrize("weight_grad", [True, False], ids=["all", "input_only"])
    def test_blocked_input_gradient_matches_torch(self, monkeypatch: pytest.MonkeyPatch, xs: tuple[int, ...],
                                                  ws: tuple[int, ...], kw: dict[str, Any], images_per_block: int,
                                                  dtype: np.dtype, tol: float, weight_grad: bool) -> None:
        """7 images in blocks of 1, 3 (3 + 3 + 1), 7 and more than 7: the same gradients as PyTorch,
        with and without the weight's gradient asked for."""
        kk_bytes = xs[2] * xs[3] * ws[2] * ws[3] * ws[0] * np.dtype(dtype).itemsize  # one image's gradient columns
        monkeypatch.setattr(K, "_BLOCK_BYTES", images_per_block * kk_bytes)
        x, w, b = (RNG.standard_normal(s).astype(dtype) for s in (xs, ws, (ws[0],)))
        grads: list[list[np.ndarray]] = []
        r = None
        for T in (lg, torch):
            ts = [T.tensor(a, requires_grad=i == 0 or weight_grad) for i, a in enumerate((x, w, b))]
            out = T.nn.functional.conv2d(*ts, **kw)
            if T is lg:
                assert type(out.grad_fn) is ConvStride1
                r = RNG.standard_normal(tuple(out.shape)).astype(dtype)
            (out * T.tensor(r)).sum().backward()
            grads.append([t.grad.numpy() for t in ts if t.requires_grad])
        for a, e in zip(*grads):
            np.testing.assert_allclose(a, e, rtol=tol, atol=tol)


# ---- end to end ----------------------------------------------------------------------------------

def _bars(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """8x8 images with one horizontal (class 0) or vertical (class 1) bright bar, plus noise."""
    y = rng.integers(0, 2, n)
    x = rng.normal(0, 0.3, (n, 1, 8, 8)).astype(np.float32)
    pos = rng.integers(1, 7, n)
    for i in range(n):
        if y[i]:
            x[i, 0, :, pos[i]] += 1.5
        else:
            x[i, 0, pos[i], :] += 1.5
    return x, y


def test_small_cnn_learns_bars() -> None:
    """Conv -> ReLU -> MaxPool -> Linear trained with plain SGD under no_grad: the cross-entropy
    falls from ~log 2 to below 0.1 and held-out accuracy exceeds 95%."""
    lg.manual_seed(0)
    rng = np.random.default_rng(0)
    model = nn.Sequential(nn.Conv2d(1, 6, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Conv2d(6, 8, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                          nn.Linear(8, 2))
    params = list(model.parameters())
    first = None
    for _ in range(120):
        x, y = _bars(32, rng)
        loss = F.cross_entropy(model(lg.tensor(x)), lg.tensor(y))
        first = loss.item() if first is None else first
        for p in params:
            p.grad = None
        loss.backward()
        with lg.no_grad():
            for p in params:
                p -= 0.2 * p.grad
    x, y = _bars(256, rng)
    with lg.no_grad():
        logits = model(lg.tensor(x))
        final = F.cross_entropy(logits, lg.tensor(y)).item()
    acc = float((logits.argmax(1).numpy() == y).mean())
    assert first > 0.5 and final < 0.1 and acc > 0.95, (first, final, acc)
