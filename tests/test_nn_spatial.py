"""Convolution, pooling, interpolation, fold/unfold and attention: one table of functional cases
checked against PyTorch (values and every input gradient) and against central differences in
float64; modules checked with weights loaded from PyTorch's state_dict; error cases; double
backward; and a small CNN trained end to end."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import lightgrad as lg
import lightgrad.nn as nn
import lightgrad.nn.functional as F

try:
    import torch
    import torch.nn.functional as TF
except ImportError:  # the parity checks are skipped without PyTorch
    torch = None
    TF = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed")
pytestmark = pytest.mark.filterwarnings("ignore:Using padding='same'")
RNG = np.random.default_rng(0)


# ---- helpers -----------------------------------------------------------------------------------

def central_diff(f: Callable[[list[np.ndarray]], np.ndarray], xs: list[np.ndarray], r: np.ndarray,
                 eps: float = 1e-6) -> list[np.ndarray]:
    """d/dx of sum(f(xs) * r) for every element of every array in xs, by central differences."""
    grads = []
    for x in xs:
        g = np.zeros_like(x)
        for idx in np.ndindex(x.shape):
            old = x[idx]
            x[idx] = old + eps
            hi = float(np.sum(f(xs) * r))
            x[idx] = old - eps
            lo = float(np.sum(f(xs) * r))
            x[idx] = old
            g[idx] = (hi - lo) / (2 * eps)
        grads.append(g)
    return grads


def lg_call(fn: Callable[..., Any], xs: list[np.ndarray], consts: list[np.ndarray], grad: bool) -> Any:
    ts = [lg.tensor(a, requires_grad=grad) for a in xs]
    out = fn(F, *ts, *[lg.tensor(c) for c in consts])
    return (out[0] if isinstance(out, tuple) else out), ts


def torch_call(fn: Callable[..., Any], xs: list[np.ndarray], consts: list[np.ndarray]) -> Any:
    ts = [torch.tensor(a, requires_grad=True) for a in xs]
    out = fn(TF, *ts, *[torch.tensor(c) for c in consts])
    return (out[0] if isinstance(out, tuple) else out), ts


def arrays(shapes: list[tuple[int, ...]], dtype: Any = np.float64) -> list[np.ndarray]:
    return [RNG.standard_normal(s).astype(dtype) for s in shapes]


# ---- the table: (id, fn(F, *inputs, *consts), input shapes, constant arrays) ------------------

bool_mask = RNG.random((4, 6)) > 0.4
bool_mask[:, 0] = True
dead_mask = bool_mask.copy()
dead_mask[2] = False  # query 2 may attend to nothing: PyTorch returns zeros there

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
    ("nearest_size", lambda F, x: F.interpolate(x, size=(5, 7)), [(1, 2, 3, 4)], []),
    ("nearest_scale2", lambda F, x: F.interpolate(x, scale_factor=2), [(1, 2, 3, 4)], []),
    ("nearest_scale_frac", lambda F, x: F.interpolate(x, scale_factor=(1.5, 0.7)), [(1, 2, 4, 6)], []),
    ("nearest_exact", lambda F, x: F.interpolate(x, size=(5, 3), mode="nearest-exact"), [(1, 2, 4, 6)], []),
    ("nearest_1d", lambda F, x: F.interpolate(x, size=7), [(2, 2, 3)], []),
    ("bilinear", lambda F, x: F.interpolate(x, size=(5, 7), mode="bilinear"), [(1, 2, 3, 4)], []),
    ("bilinear_align", lambda F, x: F.interpolate(x, size=(5, 7), mode="bilinear", align_corners=True),
     [(1, 2, 3, 4)], []),
    ("bilinear_down_scale", lambda F, x: F.interpolate(x, scale_factor=0.6, mode="bilinear"), [(1, 2, 5, 6)], []),
    ("bilinear_scale_align", lambda F, x: F.interpolate(x, scale_factor=(2, 1.5), mode="bilinear", align_corners=True),
     [(1, 1, 3, 4)], []),
    ("bicubic", lambda F, x: F.interpolate(x, size=(6, 5), mode="bicubic"), [(1, 2, 4, 3)], []),
    ("bicubic_align", lambda F, x: F.interpolate(x, scale_factor=2, mode="bicubic", align_corners=True),
     [(1, 1, 3, 3)], []),
    ("linear_1d", lambda F, x: F.interpolate(x, size=7, mode="linear"), [(2, 2, 4)], []),
    ("trilinear", lambda F, x: F.interpolate(x, size=(3, 4, 2), mode="trilinear"), [(1, 1, 2, 3, 3)], []),
    ("area", lambda F, x: F.interpolate(x, size=(2, 3), mode="area"), [(1, 2, 5, 7)], []),
    ("unfold", lambda F, x: F.unfold(x, (2, 3), dilation=(1, 2), padding=1, stride=(2, 1)), [(2, 2, 5, 6)], []),
    ("fold", lambda F, x: F.fold(x, (5, 6), (2, 3), dilation=(1, 2), padding=1, stride=(2, 1)), [(2, 12, 12)], []),
    ("fold_overlap", lambda F, x: F.fold(x, (4, 4), 2), [(1, 8, 9)], []),
    ("sdpa", lambda F, q, k, v: F.scaled_dot_product_attention(q, k, v), [(2, 2, 4, 3), (2, 2, 6, 3), (2, 2, 6, 5)], []),
    ("sdpa_causal_scale", lambda F, q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=0.3),
     [(1, 2, 4, 3), (1, 2, 6, 3), (1, 2, 6, 2)], []),
    ("sdpa_bool_mask", lambda F, q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m),
     [(2, 1, 4, 3), (2, 1, 6, 3), (2, 1, 6, 2)], [bool_mask]),
    ("sdpa_dead_row", lambda F, q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m),
     [(1, 2, 4, 3), (1, 2, 6, 3), (1, 2, 6, 2)], [dead_mask]),
    ("sdpa_float_mask", lambda F, q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m),
     [(1, 2, 4, 3), (1, 2, 6, 3), (1, 2, 6, 2), (4, 6)], []),
    ("sdpa_gqa", lambda F, q, k, v: F.scaled_dot_product_attention(q, k, v, enable_gqa=True),
     [(1, 4, 3, 2), (1, 2, 5, 2), (1, 2, 5, 3)], []),
    ("sdpa_3d", lambda F, q, k, v: F.scaled_dot_product_attention(q, k, v), [(2, 4, 3), (2, 6, 3), (2, 6, 2)], []),
]
IDS = [c[0] for c in CASES]


@needs_torch
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_matches_torch(case: Any) -> None:
    """Values and gradients of every input equal PyTorch's (float64)."""
    _, fn, shapes, consts = case
    xs = arrays(shapes)
    lo, lts = lg_call(fn, xs, consts, True)
    to, tts = torch_call(fn, xs, consts)
    assert tuple(lo.shape) == tuple(to.shape)
    np.testing.assert_allclose(lo.detach().numpy(), to.detach().numpy(), rtol=1e-10, atol=1e-12)
    r = RNG.standard_normal(tuple(to.shape))
    (lo * lg.tensor(r)).sum().backward()
    (to * torch.tensor(r)).sum().backward()
    for a, b in zip(lts, tts):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-9, atol=1e-11)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_gradient_matches_finite_differences(case: Any) -> None:
    """Autograd equals central differences of the lightgrad forward (float64)."""
    _, fn, shapes, consts = case
    xs = arrays(shapes)
    out, ts = lg_call(fn, xs, consts, True)
    r = RNG.standard_normal(tuple(out.shape))
    (out * lg.tensor(r)).sum().backward()

    def value(arrs: list[np.ndarray]) -> np.ndarray:
        with lg.no_grad():
            return lg_call(fn, arrs, consts, False)[0].numpy()

    for t, num in zip(ts, central_diff(value, xs, r)):
        np.testing.assert_allclose(t.grad.numpy(), num, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_float32_and_float64_keep_their_dtype(dtype: Any) -> None:
    x = lg.tensor(RNG.standard_normal((1, 2, 6, 6)).astype(dtype), requires_grad=True)
    w = lg.tensor(RNG.standard_normal((3, 2, 3, 3)).astype(dtype), requires_grad=True)
    y = F.max_pool2d(F.conv2d(x, w, padding=1), 2)
    y = F.interpolate(F.avg_pool2d(y, 1), scale_factor=2, mode="bilinear")
    y.sum().backward()
    assert y.dtype == x.dtype and x.grad.dtype == x.dtype and w.grad.dtype == x.dtype


# ---- max pool: ties and indices ----------------------------------------------------------------

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


# ---- double backward ---------------------------------------------------------------------------

DOUBLE = [
    ("conv2d", lambda F, x, w: F.conv2d(x, w, stride=2, padding=1, groups=2), [(1, 4, 5, 5), (2, 2, 3, 3)]),
    ("conv_transpose2d", lambda F, x, w: F.conv_transpose2d(x, w, stride=2, padding=1), [(1, 2, 3, 3), (2, 3, 3, 3)]),
    ("max_pool2d", lambda F, x, w: F.max_pool2d(x * w, 3, 2, 1), [(1, 2, 5, 5), (1, 2, 5, 5)]),
    ("max_pool2d_2x2", lambda F, x, w: F.max_pool2d(x * w, 2), [(1, 2, 4, 4), (1, 2, 4, 4)]),
    ("avg_pool2d", lambda F, x, w: F.avg_pool2d(x * w, 3, 2, 1, count_include_pad=False), [(1, 2, 5, 5), (1, 2, 5, 5)]),
    ("unfold", lambda F, x, w: F.unfold(x * w, 2, padding=1), [(1, 2, 3, 3), (1, 2, 3, 3)]),
]


@needs_torch
@pytest.mark.parametrize("case", DOUBLE, ids=[c[0] for c in DOUBLE])
def test_double_backward_matches_torch(case: Any) -> None:
    """create_graph=True: the gradient of (sum of squared first gradients) equals PyTorch's."""
    _, fn, shapes = case
    xs = arrays(shapes)
    outs = []
    for mod, Fm, grad in ((lg, F, lg.autograd.grad), (torch, TF, torch.autograd.grad)):
        ts = [mod.tensor(a, requires_grad=True) for a in xs]
        y = fn(Fm, *ts)
        gs = grad((y * y).sum(), ts, create_graph=True)
        sum((g * g).sum() for g in gs).backward()
        outs.append([t.grad.numpy() if mod is lg else t.grad.detach().numpy() for t in ts])
    for a, b in zip(*outs):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-10)


# ---- modules with weights from PyTorch ---------------------------------------------------------

def _load_from_torch(lm: Any, tm: Any) -> None:
    assert list(lm.state_dict().keys()) == list(tm.state_dict().keys())
    for k, v in tm.state_dict().items():
        assert tuple(lm.state_dict()[k].shape) == tuple(v.shape), k
    lm.load_state_dict({k: lg.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})


MODULES = [
    ("Conv1d", lambda nn: nn.Conv1d(3, 4, 3, stride=2, padding=1), (2, 3, 9)),
    ("Conv1d_reflect_same", lambda nn: nn.Conv1d(2, 4, 4, padding="same", padding_mode="reflect", bias=False), (2, 2, 8)),
    ("Conv2d", lambda nn: nn.Conv2d(3, 4, 3, stride=(2, 1), padding=(1, 2), dilation=(1, 2)), (2, 3, 7, 6)),
    ("Conv2d_groups_circular", lambda nn: nn.Conv2d(4, 6, 3, padding=1, groups=2, padding_mode="circular"), (2, 4, 5, 5)),
    ("Conv2d_replicate", lambda nn: nn.Conv2d(2, 3, (2, 3), padding=(1, 1), padding_mode="replicate"), (1, 2, 4, 5)),
    ("ConvTranspose1d", lambda nn: nn.ConvTranspose1d(3, 2, 4, stride=2, padding=1), (2, 3, 5)),
    ("ConvTranspose2d", lambda nn: nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1, output_padding=1, groups=2),
     (2, 4, 4, 3)),
    ("MaxPool2d", lambda nn: nn.MaxPool2d(3, 2, 1, ceil_mode=True), (2, 3, 7, 6)),
    ("MaxPool1d", lambda nn: nn.MaxPool1d(2), (2, 3, 7)),
    ("AvgPool2d", lambda nn: nn.AvgPool2d(2, 1, 1, count_include_pad=False), (2, 3, 5, 4)),
    ("AvgPool1d", lambda nn: nn.AvgPool1d(3, 2), (2, 3, 7)),
    ("AdaptiveAvgPool2d", lambda nn: nn.AdaptiveAvgPool2d(1), (2, 3, 5, 4)),
    ("AdaptiveAvgPool1d", lambda nn: nn.AdaptiveAvgPool1d(3), (2, 3, 7)),
    ("AdaptiveMaxPool2d", lambda nn: nn.AdaptiveMaxPool2d((2, 3)), (2, 3, 5, 7)),
    ("AdaptiveMaxPool1d", lambda nn: nn.AdaptiveMaxPool1d(2), (2, 3, 5)),
    ("Upsample_nearest", lambda nn: nn.Upsample(scale_factor=2), (1, 2, 3, 3)),
    ("Upsample_bilinear", lambda nn: nn.Upsample(size=(5, 4), mode="bilinear"), (1, 2, 3, 3)),
    ("UpsamplingNearest2d", lambda nn: nn.UpsamplingNearest2d(size=5), (1, 2, 3, 3)),
    ("UpsamplingBilinear2d", lambda nn: nn.UpsamplingBilinear2d(scale_factor=2), (1, 2, 3, 3)),
    ("Unfold", lambda nn: nn.Unfold(2, padding=1, stride=2), (1, 2, 5, 4)),
    ("Fold", lambda nn: nn.Fold((3, 4), 2), (1, 8, 6)),
]


@needs_torch
@pytest.mark.parametrize("case", MODULES, ids=[c[0] for c in MODULES])
def test_module_matches_torch(case: Any) -> None:
    """Output, input gradient and parameter gradients with identical weights; same repr."""
    _, make, shape = case
    tm = make(torch.nn).double()
    lm = make(nn).to(lg.float64)
    _load_from_torch(lm, tm)
    assert repr(lm) == repr(tm)
    x = RNG.standard_normal(shape)
    lx, tx = lg.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    lo, to = lm(lx), tm(tx)
    np.testing.assert_allclose(lo.detach().numpy(), to.detach().numpy(), rtol=1e-10, atol=1e-12)
    r = RNG.standard_normal(tuple(to.shape))
    (lo * lg.tensor(r)).sum().backward()
    (to * torch.tensor(r)).sum().backward()
    np.testing.assert_allclose(lx.grad.numpy(), tx.grad.numpy(), rtol=1e-9, atol=1e-11)
    tp = dict(tm.named_parameters())
    for name, p in lm.named_parameters():
        np.testing.assert_allclose(p.grad.numpy(), tp[name].grad.numpy(), rtol=1e-9, atol=1e-11)


@needs_torch
def test_conv_transpose_output_size_matches_torch() -> None:
    tm = torch.nn.ConvTranspose2d(2, 3, 3, stride=2, padding=1).double()
    lm = nn.ConvTranspose2d(2, 3, 3, stride=2, padding=1).to(lg.float64)
    _load_from_torch(lm, tm)
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


@needs_torch
@pytest.mark.parametrize("kw", [dict(), dict(batch_first=True), dict(kdim=5, vdim=3), dict(add_bias_kv=True, add_zero_attn=True),
                                dict(bias=False)], ids=["plain", "batch_first", "kdim_vdim", "bias_kv", "nobias"])
@pytest.mark.parametrize("call", ["weights", "per_head", "no_weights", "masks", "masks_no_weights", "causal"])
def test_multihead_attention_matches_torch(kw: dict[str, Any], call: str) -> None:
    """state_dict keys, outputs, attention weights and all gradients, across mask kinds."""
    e, h, L, S, N = 8, 2, 4, 5, 3
    tm = torch.nn.MultiheadAttention(e, h, **kw).double()
    lm = nn.MultiheadAttention(e, h, **kw).to(lg.float64)
    _load_from_torch(lm, tm)
    bf = kw.get("batch_first", False)
    qs = (N, L, e) if bf else (L, N, e)
    ks = (N, S, kw.get("kdim", e)) if bf else (S, N, kw.get("kdim", e))
    vs = (N, S, kw.get("vdim", e)) if bf else (S, N, kw.get("vdim", e))
    if call == "causal":  # S = L: self-attention (cross-attention when kdim/vdim differ)
        ks, vs = ((N, L, ks[2]), (N, L, vs[2])) if bf else ((L, N, ks[2]), (L, N, vs[2]))
    xs = arrays([qs, ks, vs])
    if call == "causal" and "kdim" not in kw:
        xs = [xs[0], xs[0], xs[0]]  # self-attention, the packed-projection path
    kwargs: dict[str, Any] = {}
    consts: dict[str, np.ndarray] = {}
    if call == "per_head":
        kwargs["average_attn_weights"] = False
    if call in ("no_weights", "masks_no_weights"):
        kwargs["need_weights"] = False
    if call.startswith("masks"):
        kpm = RNG.random((N, S)) > 0.6
        kpm[:, 0] = False
        consts = {"key_padding_mask": kpm, "attn_mask": RNG.standard_normal((L, S))}
    if call == "causal":
        consts = {"attn_mask": np.triu(np.ones((L, L), bool), 1)}
        kwargs["is_causal"] = True
    res = []
    for mod, m in ((lg, lm), (torch, tm)):
        ts = [mod.tensor(a, requires_grad=True) for a in xs]
        if xs[0] is xs[1]:
            ts = [ts[0]] * 3
        extra = {k: mod.tensor(v) for k, v in consts.items()}
        out, w = m(*ts, **kwargs, **extra)
        loss = (out * mod.tensor(np.cos(np.arange(out.numel())).reshape(tuple(out.shape)))).sum()
        if w is not None:
            loss = loss + (w * w).sum()
        loss.backward()
        params = dict(m.named_parameters())
        res.append((out.detach().numpy(), None if w is None else w.detach().numpy(),
                    [t.grad.numpy() for t in ts], {k: p.grad.numpy() for k, p in params.items()}))
    (lo, lw, lgx, lgp), (to, tw, tgx, tgp) = res
    np.testing.assert_allclose(lo, to, rtol=1e-9, atol=1e-12)
    assert (lw is None) == (tw is None)
    if lw is not None:
        np.testing.assert_allclose(lw, tw, rtol=1e-9, atol=1e-12)
    for a, b in zip(lgx, tgx):
        np.testing.assert_allclose(a, b, rtol=1e-8, atol=1e-11)
    for k in tgp:
        np.testing.assert_allclose(lgp[k], tgp[k], rtol=1e-8, atol=1e-11)


def test_multihead_attention_parameters_and_errors() -> None:
    m = nn.MultiheadAttention(8, 2)
    assert [n for n, _ in m.named_parameters()] == ["in_proj_weight", "in_proj_bias", "out_proj.weight", "out_proj.bias"]
    assert tuple(m.in_proj_weight.shape) == (24, 8)
    assert float(np.abs(m.in_proj_bias.detach().numpy()).max()) == 0.0
    m2 = nn.MultiheadAttention(8, 2, kdim=4, vdim=6)
    assert [tuple(p.shape) for p in (m2.q_proj_weight, m2.k_proj_weight, m2.v_proj_weight)] == [(8, 8), (8, 4), (8, 6)]
    assert m2.in_proj_weight is None
    with pytest.raises(AssertionError, match="divisible"):
        nn.MultiheadAttention(10, 3)
    x = lg.randn(4, 2, 8)
    with pytest.raises(RuntimeError, match="Need attn_mask"):
        m(x, x, x, is_causal=True)
    with pytest.raises(RuntimeError, match="should be"):
        m(x, x, x, attn_mask=lg.zeros(3, 4))


def test_multihead_attention_dropout_only_in_training() -> None:
    lg.manual_seed(0)
    m = nn.MultiheadAttention(8, 2, dropout=0.5)
    x = lg.randn(5, 2, 8)
    a, b = m(x, x, x)[0], m(x, x, x)[0]
    assert not np.allclose(a.numpy(force=True), b.numpy(force=True))
    m.eval()
    a, b = m(x, x, x)[0], m(x, x, x)[0]
    np.testing.assert_array_equal(a.numpy(force=True), b.numpy(force=True))


# ---- error cases -------------------------------------------------------------------------------

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
    ("max_pool_pad", lambda F, T: F.max_pool2d(T.zeros(1, 1, 5, 5), 2, padding=2), "pad should be"),
    ("max_pool_pad_dilated", lambda F, T: F.max_pool2d(T.zeros(1, 1, 5, 5), 3, padding=2, dilation=2), "pad should be"),
    ("avg_pool_pad", lambda F, T: F.avg_pool2d(T.zeros(1, 1, 5, 5), 2, padding=2), "pad should be"),
    ("max_pool_too_small", lambda F, T: F.max_pool2d(T.zeros(1, 1, 2, 2), 3), "too small"),
    ("sdpa_causal_and_mask", lambda F, T: F.scaled_dot_product_attention(T.zeros(1, 4, 2), T.zeros(1, 4, 2), T.zeros(1, 4, 3),
                                                                          attn_mask=T.ones(4, 4), is_causal=True),
     "should not be set"),
    ("fold_blocks", lambda F, T: F.fold(T.zeros(1, 4, 8), (4, 4), 2), "sliding blocks 3 \\* 3 = 9"),
]


@pytest.mark.parametrize("case", ERRORS, ids=[c[0] for c in ERRORS])
def test_errors(case: Any) -> None:
    """Bad shapes raise RuntimeError saying expected vs got (PyTorch's exception type)."""
    _, fn, pattern = case
    with pytest.raises(RuntimeError, match=pattern):
        fn(F, lg)
    if torch is not None:
        with pytest.raises(RuntimeError):
            fn(TF, torch)


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


# ---- end to end --------------------------------------------------------------------------------

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
