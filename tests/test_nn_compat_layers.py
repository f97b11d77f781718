"""Compat layers checked against PyTorch: padding modules, pixel/channel shuffle, distance modules,
pdist, local response norm, gumbel-softmax, the margin/Gaussian/triplet losses, 3-D pools, max
unpooling, affine_grid/grid_sample (bilinear, nearest, bicubic) and nn.init.eye_/dirac_.

Every row of CASES runs in float64 (tight) and float32: same inputs, same upstream gradient, outputs
and every input gradient compared with PyTorch; rows marked ``fd`` also check the float64 gradients
against central finite differences. Errors are compared with PyTorch's (type and message).
"""

from __future__ import annotations

import warnings
import zlib
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from helpers import numeric_grads

import lightgrad as lg

torch = pytest.importorskip("torch")


# ---- input specs -------------------------------------------------------------------------------

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


class C:
    """A constant (not differentiated) input, int or float."""

    def __init__(self, value: Any) -> None:
        self.value = np.asarray(value)

    def make(self, rng: np.random.Generator) -> np.ndarray:
        return self.value.copy()


Case = tuple[str, Callable[..., Any], list[Any], bool]


def _pool_indices(x: np.ndarray, nd: int, k: int) -> np.ndarray:
    f = {1: torch.nn.functional.max_pool1d, 2: torch.nn.functional.max_pool2d, 3: torch.nn.functional.max_pool3d}[nd]
    return f(torch.tensor(x), k, return_indices=True)[1].numpy()


_R = np.random.default_rng(7)
_X2 = _R.standard_normal((2, 3, 4, 4))
_X1 = _R.standard_normal((2, 3, 6))
_X3 = _R.standard_normal((1, 2, 4, 4, 4))

CASES: list[Case] = [
    # padding modules (batched and unbatched)
    ("zeropad1d", lambda T, x: T.nn.ZeroPad1d((1, 2))(x), [G(2, 3, 5)], True),
    ("zeropad2d", lambda T, x: T.nn.ZeroPad2d(1)(x), [G(3, 4, 4)], False),
    ("zeropad2d_crop", lambda T, x: T.nn.ZeroPad2d((-1, 1, 0, -1))(x), [G(1, 2, 4, 4)], False),
    ("zeropad3d", lambda T, x: T.nn.ZeroPad3d((1, 0, 2, 1, 0, 1))(x), [G(1, 2, 3, 3, 3)], False),
    ("constpad1d", lambda T, x: T.nn.ConstantPad1d(2, 3.5)(x), [G(3, 4)], False),
    ("constpad2d", lambda T, x: T.nn.ConstantPad2d((1, 0, 2, 1), -1.0)(x), [G(2, 2, 3, 3)], False),
    ("constpad3d", lambda T, x: T.nn.ConstantPad3d(1, 0.5)(x), [G(2, 2, 2, 3)], False),
    ("reflpad1d", lambda T, x: T.nn.ReflectionPad1d((2, 1))(x), [G(2, 3, 5)], True),
    ("reflpad1d_unb", lambda T, x: T.nn.ReflectionPad1d(3)(x), [G(3, 5)], False),
    ("reflpad2d", lambda T, x: T.nn.ReflectionPad2d((1, 2, 2, 1))(x), [G(1, 2, 4, 4)], True),
    ("reflpad3d", lambda T, x: T.nn.ReflectionPad3d(1)(x), [G(1, 2, 3, 3, 3)], False),
    ("reflpad3d_unb", lambda T, x: T.nn.ReflectionPad3d((1, 2, 0, 1, 2, 0))(x), [G(2, 3, 3, 4)], False),
    ("replpad1d", lambda T, x: T.nn.ReplicationPad1d((3, 1))(x), [G(2, 3, 4)], True),
    ("replpad2d", lambda T, x: T.nn.ReplicationPad2d(2)(x), [G(2, 3, 3)], True),
    ("replpad3d", lambda T, x: T.nn.ReplicationPad3d((1, 2, 0, 1, 2, 0))(x), [G(1, 2, 2, 3, 3)], False),
    ("circpad1d", lambda T, x: T.nn.CircularPad1d((2, 1))(x), [G(2, 3, 4)], True),
    ("circpad2d", lambda T, x: T.nn.CircularPad2d(1)(x), [G(2, 3, 3)], False),
    ("circpad3d", lambda T, x: T.nn.CircularPad3d((1, 0, 0, 2, 1, 1))(x), [G(1, 2, 2, 3, 3)], False),
    # pixel and channel shuffles
    ("pixel_shuffle", lambda T, x: T.nn.PixelShuffle(2)(x), [G(2, 8, 3, 2)], False),
    ("pixel_shuffle_unb", lambda T, x: T.nn.functional.pixel_shuffle(x, 3), [G(9, 2, 1)], False),
    ("pixel_shuffle_5d", lambda T, x: T.nn.functional.pixel_shuffle(x, 2), [G(2, 1, 4, 2, 3)], False),
    ("pixel_unshuffle", lambda T, x: T.nn.PixelUnshuffle(2)(x), [G(2, 2, 4, 6)], True),
    ("pixel_unshuffle_unb", lambda T, x: T.nn.functional.pixel_unshuffle(x, 3), [G(1, 3, 6)], False),
    ("channel_shuffle", lambda T, x: T.nn.functional.channel_shuffle(x, 3), [G(2, 6, 3)], False),
    ("channel_shuffle_mod", lambda T, x: T.nn.ChannelShuffle(2)(x), [G(2, 4, 2, 2)], True),
    # distances and normalisation
    ("cosine_similarity", lambda T, a, b: T.nn.CosineSimilarity()(a, b), [G(4, 5), G(4, 5)], True),
    ("cosine_similarity_d0", lambda T, a, b: T.nn.CosineSimilarity(dim=0, eps=1e-6)(a, b), [G(3, 2, 4), G(3, 2, 4)],
     False),
    ("pairwise_distance", lambda T, a, b: T.nn.PairwiseDistance()(a, b), [G(4, 5), G(4, 5)], True),
    ("pairwise_distance_p1", lambda T, a, b: T.nn.PairwiseDistance(p=1.0, keepdim=True)(a, b),
     [G(4, 5, away=True), G(4, 5)], False),
    ("pairwise_distance_p3", lambda T, a, b: T.nn.PairwiseDistance(p=3.0, eps=1e-3)(a, b), [G(4, 5), G(5)], False),
    ("pdist", lambda T, x: T.nn.functional.pdist(x), [G(5, 3)], True),
    ("pdist_p1", lambda T, x: T.nn.functional.pdist(x, p=1), [G(4, 3)], True),
    ("pdist_p3", lambda T, x: T.nn.functional.pdist(x, 3.0), [G(4, 3)], True),
    ("pdist_inf", lambda T, x: T.nn.functional.pdist(x, float("inf")), [G(4, 3)], True),
    ("pdist_dup_rows_ties", lambda T, x: [T.nn.functional.pdist(x, p) for p in (2.0, 1.0, 3.0, 0.5, 0.0,
                                                                              float("inf"))],
     [GV([[1.0, 2.0], [1.0, 2.0], [0.0, 1.0], [3.0, -1.0]])], False),
    ("pdist_one_row", lambda T, x: T.nn.functional.pdist(x), [G(1, 3)], False),
    ("lrn_3d", lambda T, x: T.nn.LocalResponseNorm(3)(x), [G(2, 5, 4)], True),
    ("lrn_4d", lambda T, x: T.nn.LocalResponseNorm(2, alpha=0.1, beta=0.5, k=2.0)(x), [G(2, 5, 3, 3)], True),
    ("lrn_5d", lambda T, x: T.nn.functional.local_response_norm(x, 4, 0.3, 0.9, 1.5), [G(1, 6, 2, 2, 2)], False),
    # losses
    ("multi_margin", lambda T, x, t: T.nn.MultiMarginLoss()(x, t), [G(4, 5), C([0, 3, 4, 1])], True),
    ("multi_margin_p2_w", lambda T, x, t, w: T.nn.MultiMarginLoss(p=2, margin=0.7, weight=w, reduction="sum")(x, t),
     [G(4, 5), C([0, 3, 4, 1]), C([0.5, 1.0, 2.0, 0.3, 1.5])], True),
    ("multi_margin_none", lambda T, x, t: T.nn.functional.multi_margin_loss(x, t, reduction="none"),
     [G(3, 4), C([2, 2, 0])], False),
    ("multi_margin_unb", lambda T, x, t: T.nn.functional.multi_margin_loss(x, t, reduction="none"),
     [G(4), C(1)], True),
    ("multi_margin_unb_mean", lambda T, x, t: T.nn.functional.multi_margin_loss(x, t), [G(4), C(1)], False),
    ("multilabel_margin", lambda T, x, t: T.nn.MultiLabelMarginLoss()(x, t),
     [G(3, 5), C([[3, 0, -1, 1, 2], [4, 4, 1, 0, 2], [1, 2, 3, 0, 4]])], True),
    ("multilabel_margin_none", lambda T, x, t: T.nn.MultiLabelMarginLoss(reduction="none")(x, t),
     [G(3, 4), C([[-1, 0, 1, 2], [2, 1, -1, 0], [0, -1, -1, -1]])], False),
    ("multilabel_margin_unb", lambda T, x, t: T.nn.functional.multilabel_margin_loss(x, t, reduction="sum"),
     [G(4), C([3, 1, -1, 0])], True),
    ("multilabel_margin_unb_none", lambda T, x, t: T.nn.functional.multilabel_margin_loss(x, t, reduction="none"),
     [G(4), C([3, 1, -1, 0])], False),
    ("multilabel_soft_margin", lambda T, x, t: T.nn.MultiLabelSoftMarginLoss()(x, t),
     [G(3, 4), C(np.array([[1, 0, 1, 1], [0, 0, 1, 0], [1, 1, 1, 0]], float))], True),
    ("multilabel_soft_margin_w", lambda T, x, t, w: T.nn.MultiLabelSoftMarginLoss(weight=w, reduction="none")(x, t),
     [G(3, 4), G(3, 4, lo=0.0, hi=1.0), C([0.5, 2.0, 1.0, 0.1])], True),
    ("gaussian_nll", lambda T, x, y, v: T.nn.GaussianNLLLoss()(x, y, v),
     [G(3, 4), G(3, 4), G(3, 4, lo=0.2, hi=2.0)], True),
    ("gaussian_nll_full_sum", lambda T, x, y, v: T.nn.GaussianNLLLoss(full=True, reduction="sum")(x, y, v),
     [G(3, 4), G(3, 4), G(3, lo=0.2, hi=2.0)], True),
    ("gaussian_nll_bcast", lambda T, x, y, v: T.nn.functional.gaussian_nll_loss(x, y, v, reduction="none"),
     [G(2, 3, 4), G(2, 3, 4), G(2, 1, 4, lo=0.2, hi=2.0)], False),
    ("gaussian_nll_eps", lambda T, x, y, v: T.nn.functional.gaussian_nll_loss(x, y, v, eps=0.5, reduction="none"),
     [G(3, 4), G(3, 4), G(3, 4, lo=0.01, hi=1.0)], False),
    ("gaussian_nll_float_var", lambda T, x, y: T.nn.functional.gaussian_nll_loss(x, y, 0.7), [G(3, 4), G(3, 4)],
     False),
    ("triplet_dist", lambda T, a, p, n: T.nn.TripletMarginWithDistanceLoss()(a, p, n),
     [G(4, 3), G(4, 3), G(4, 3)], True),
    ("triplet_dist_cos_swap", lambda T, a, p, n: T.nn.TripletMarginWithDistanceLoss(
        distance_function=lambda x, y: 1.0 - T.nn.functional.cosine_similarity(x, y), margin=0.5, swap=True,
        reduction="none")(a, p, n), [G(5, 3), G(5, 3), G(5, 3)], True),
    ("triplet_dist_fn", lambda T, a, p, n: T.nn.functional.triplet_margin_with_distance_loss(
        a, p, n, distance_function=T.nn.PairwiseDistance(p=1.0), margin=2.0, reduction="sum"),
     [G(4, 3), G(4, 3), G(4, 3)], False),
    # pools
    ("max_pool1d_with_indices", lambda T, x: T.nn.functional.max_pool1d_with_indices(x, 3, 2, 1), [G(2, 3, 7)],
     False),
    ("max_pool2d_with_indices", lambda T, x: T.nn.functional.max_pool2d_with_indices(x, 2, 1), [G(3, 4, 5)], False),
    ("maxpool2d_return_indices", lambda T, x: T.nn.MaxPool2d(2, return_indices=True)(x), [G(1, 2, 4, 4)], False),
    ("max_unpool1d", lambda T, x, i: T.nn.MaxUnpool1d(2)(x, i), [G(2, 3, 3), C(_pool_indices(_X1, 1, 2))], True),
    ("max_unpool1d_size", lambda T, x, i: T.nn.functional.max_unpool1d(x, i, 2, output_size=[7]),
     [G(2, 3, 3), C(_pool_indices(_X1, 1, 2))], False),
    ("max_unpool2d", lambda T, x, i: T.nn.MaxUnpool2d(2)(x, i), [G(2, 3, 2, 2), C(_pool_indices(_X2, 2, 2))], True),
    ("max_unpool2d_size", lambda T, x, i: T.nn.MaxUnpool2d(2, stride=2)(x, i, output_size=(2, 3, 5, 5)),
     [G(2, 3, 2, 2), C(_pool_indices(_X2, 2, 2))], False),
    ("max_unpool2d_unb", lambda T, x, i: T.nn.functional.max_unpool2d(x, i, 2),
     [G(3, 2, 2), C(_pool_indices(_X2, 2, 2)[0])], False),
    ("max_unpool2d_overlap", lambda T, x, i: T.nn.functional.max_unpool2d(x, i, 3, 1),
     [G(2, 3, 2, 2), C(torch.nn.functional.max_pool2d(torch.tensor(_X2), 3, 1, return_indices=True)[1].numpy())],
     False),
    ("max_unpool3d", lambda T, x, i: T.nn.MaxUnpool3d(2)(x, i), [G(1, 2, 2, 2, 2), C(_pool_indices(_X3, 3, 2))],
     False),
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
    # spatial transformers
    ("affine_grid_2d", lambda T, th: T.nn.functional.affine_grid(th, (2, 3, 4, 5), align_corners=False),
     [G(2, 2, 3)], True),
    ("affine_grid_2d_ac", lambda T, th: T.nn.functional.affine_grid(th, [2, 1, 3, 1], align_corners=True),
     [G(2, 2, 3)], False),
    ("affine_grid_3d", lambda T, th: T.nn.functional.affine_grid(th, (1, 2, 3, 2, 4), align_corners=True),
     [G(1, 3, 4)], True),
    ("affine_grid_3d_nac", lambda T, th: T.nn.functional.affine_grid(th, (2, 2, 2, 3, 1), align_corners=False),
     [G(2, 3, 4)], False),
]

for _mode in ("bilinear", "nearest", "bicubic"):
    for _pm in ("zeros", "border", "reflection"):
        for _ac in (False, True):
            CASES.append((f"grid_sample_{_mode}_{_pm}_{_ac}",
                          lambda T, x, g, m=_mode, p=_pm, a=_ac: T.nn.functional.grid_sample(
                              x, g, mode=m, padding_mode=p, align_corners=a),
                          [G(2, 2, 4, 5), G(2, 3, 4, 2, lo=-1.4, hi=1.4)], _mode != "nearest" and not _ac))

CASES.append(("grid_sample_affine", lambda T, x, th: T.nn.functional.grid_sample(
    x, T.nn.functional.affine_grid(th, (1, 2, 3, 3), align_corners=False), align_corners=False),
    [G(1, 2, 4, 4), G(1, 2, 3, scale=0.7)], True))


def _run(T: Any, fn: Callable[..., Any], arrays: list[np.ndarray], specs: list[Any], dtype: Any,
         upstream: list[np.ndarray] | None) -> tuple[list[np.ndarray], list[np.ndarray | None], list[np.ndarray]]:
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


@pytest.mark.parametrize("name,fn,specs,fd", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("precision", ["float64", "float32"])
def test_against_torch(name: str, fn: Callable[..., Any], specs: list[Any], fd: bool, precision: str) -> None:
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    arrays = [s.make(rng) for s in specs]
    tol = dict(rtol=1e-9, atol=1e-10) if precision == "float64" else dict(rtol=2e-4, atol=2e-5)
    t_vals, t_grads, up = _run(torch, fn, arrays, specs, getattr(torch, precision), None)
    l_vals, l_grads, _ = _run(lg, fn, arrays, specs, getattr(lg, precision), up)
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


# ---- gumbel-softmax ----------------------------------------------------------------------------

@pytest.mark.parametrize("hard", [False, True])
@pytest.mark.parametrize("dim", [-1, 0])
def test_gumbel_softmax_matches_torch_formula(hard: bool, dim: int) -> None:
    """The noise is drawn from lightgrad's generator as Exp(1) samples; given that noise, forward and
    gradient equal PyTorch's formula (softmax((logits - log E) / tau), straight-through when hard)."""
    x = np.random.default_rng(0).standard_normal((3, 5))
    r = np.random.default_rng(1).standard_normal((3, 5))
    lg.manual_seed(123)
    noise = lg.empty(3, 5, dtype=lg.float64).exponential_().numpy()
    lg.manual_seed(123)
    lx = lg.tensor(x, requires_grad=True)
    ly = lg.nn.functional.gumbel_softmax(lx, tau=0.7, hard=hard, dim=dim)
    (ly * lg.tensor(r)).sum().backward()
    tx = torch.tensor(x, requires_grad=True)
    soft = ((tx - torch.tensor(noise).log()) / 0.7).softmax(dim)
    if hard:
        oh = torch.zeros_like(soft).scatter_(dim, soft.argmax(dim, keepdim=True), 1.0)
        ty = oh - soft.detach() + soft
    else:
        ty = soft
    (ty * torch.tensor(r)).sum().backward()
    np.testing.assert_allclose(ly.detach().numpy(), ty.detach().numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(lx.grad.numpy(), tx.grad.numpy(), rtol=1e-10, atol=1e-12)
    if hard:
        assert set(np.unique(ly.detach().numpy())) <= {0.0, 1.0}
        np.testing.assert_array_equal(ly.detach().numpy().sum(dim), np.ones(ly.shape[1 - dim % 2]))


def test_gumbel_softmax_seeded_and_distribution() -> None:
    lg.manual_seed(5)
    a = lg.nn.functional.gumbel_softmax(lg.zeros(4, 3)).numpy()
    lg.manual_seed(5)
    b = lg.nn.functional.gumbel_softmax(lg.zeros(4, 3)).numpy()
    np.testing.assert_array_equal(a, b)
    # argmax frequencies follow softmax(logits): a Gumbel-max sample
    logits = np.log(np.array([0.2, 0.3, 0.5]))
    lg.manual_seed(0)
    y = lg.nn.functional.gumbel_softmax(lg.tensor(np.tile(logits, (4000, 1))), tau=0.5, hard=True).numpy()
    np.testing.assert_allclose(y.mean(0), [0.2, 0.3, 0.5], atol=0.03)
    assert lg.nn.functional.gumbel_softmax(lg.zeros(2, 3, dtype=lg.float32)).dtype == lg.float32


# ---- init --------------------------------------------------------------------------------------

@pytest.mark.parametrize("shape", [(3, 5), (5, 3), (4, 4)])
def test_eye_(shape: tuple[int, ...]) -> None:
    w = lg.nn.init.eye_(lg.empty(*shape))
    np.testing.assert_array_equal(w.numpy(), torch.nn.init.eye_(torch.empty(*shape)).numpy())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # PyTorch's spelling without "_" is deprecated
        np.testing.assert_array_equal(lg.nn.init.eye(lg.empty(*shape)).numpy(),
                                      torch.nn.init.eye(torch.empty(*shape)).numpy())


@pytest.mark.parametrize("shape,groups", [((4, 3, 3), 1), ((6, 2, 3, 3), 2), ((4, 6, 1, 3, 2), 2), ((2, 5, 3, 3), 1)])
def test_dirac_(shape: tuple[int, ...], groups: int) -> None:
    w = lg.nn.init.dirac_(lg.empty(*shape), groups)
    np.testing.assert_array_equal(w.numpy(), torch.nn.init.dirac_(torch.empty(*shape), groups).numpy())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        np.testing.assert_array_equal(lg.nn.init.dirac(lg.empty(*shape), groups).numpy(),
                                      torch.nn.init.dirac(torch.empty(*shape), groups).numpy())


# ---- reprs -------------------------------------------------------------------------------------

@pytest.mark.parametrize("ctor", [
    lambda T: T.nn.ZeroPad2d(1), lambda T: T.nn.ConstantPad1d(2, 3.5), lambda T: T.nn.ReflectionPad3d(1),
    lambda T: T.nn.CircularPad1d((1, 2)), lambda T: T.nn.ReplicationPad2d((1, 2, 3, 4)),
    lambda T: T.nn.PixelShuffle(2), lambda T: T.nn.PixelUnshuffle(3), lambda T: T.nn.ChannelShuffle(2),
    lambda T: T.nn.LocalResponseNorm(2), lambda T: T.nn.MaxUnpool2d(2), lambda T: T.nn.MaxUnpool1d(3, 2),
    lambda T: T.nn.AvgPool3d(2), lambda T: T.nn.MaxPool3d(2), lambda T: T.nn.AdaptiveAvgPool3d(2),
    lambda T: T.nn.AdaptiveMaxPool3d((1, 2, 3)), lambda T: T.nn.MultiMarginLoss(), lambda T: T.nn.GaussianNLLLoss(),
    lambda T: T.nn.TripletMarginWithDistanceLoss(), lambda T: T.nn.CosineSimilarity(),
    lambda T: T.nn.PairwiseDistance(), lambda T: T.nn.MultiLabelSoftMarginLoss(), lambda T: T.nn.MaxUnpool3d(2),
])
def test_repr(ctor: Callable[[Any], Any]) -> None:
    assert repr(ctor(lg)) == repr(ctor(torch))


def test_padding_attribute() -> None:
    for name in ("ZeroPad1d", "ZeroPad3d", "ConstantPad2d", "ReflectionPad1d", "CircularPad3d"):
        args = (2,) if "Constant" not in name else (2, 0.0)
        assert getattr(lg.nn, name)(*args).padding == getattr(torch.nn, name)(*args).padding


# ---- errors ------------------------------------------------------------------------------------

def _ti(*shape: int) -> Any:
    return lambda T: T.zeros(*shape, dtype=T.int64)


ERRORS: list[tuple[str, Callable[[Any], Any]]] = [
    ("pixel_shuffle_2d", lambda T: T.nn.functional.pixel_shuffle(T.zeros(2, 3), 2)),
    ("pixel_shuffle_channels", lambda T: T.nn.functional.pixel_shuffle(T.zeros(5, 3, 3), 2)),
    ("pixel_shuffle_factor", lambda T: T.nn.functional.pixel_shuffle(T.zeros(4, 3, 3), 0)),
    ("pixel_unshuffle_h", lambda T: T.nn.functional.pixel_unshuffle(T.zeros(4, 5, 4), 2)),
    ("pixel_unshuffle_w", lambda T: T.nn.functional.pixel_unshuffle(T.zeros(4, 4, 5), 2)),
    ("channel_shuffle_2d", lambda T: T.nn.functional.channel_shuffle(T.zeros(4, 6), 2)),
    ("channel_shuffle_groups", lambda T: T.nn.functional.channel_shuffle(T.zeros(4, 6, 2), 4)),
    ("channel_shuffle_zero", lambda T: T.nn.functional.channel_shuffle(T.zeros(4, 6, 2), 0)),
    ("pdist_3d", lambda T: T.nn.functional.pdist(T.zeros(2, 3, 4))),
    ("pdist_neg_p", lambda T: T.nn.functional.pdist(T.zeros(3, 4), p=-1)),
    ("mm_p", lambda T: T.nn.functional.multi_margin_loss(T.zeros(3, 4), T.tensor([0, 1, 2]), p=3)),
    ("mm_target_range", lambda T: T.nn.functional.multi_margin_loss(T.zeros(3, 4), T.tensor([0, 1, 5]))),
    ("mm_target_size", lambda T: T.nn.functional.multi_margin_loss(T.zeros(3, 4), T.tensor([0, 1]))),
    ("mm_weight_dim", lambda T: T.nn.functional.multi_margin_loss(T.zeros(3, 4), T.tensor([0, 1, 2]),
                                                                   weight=T.ones(2, 2))),
    ("mm_weight_size", lambda T: T.nn.functional.multi_margin_loss(T.zeros(3, 4), T.tensor([0, 1, 2]),
                                                                    weight=T.ones(3))),
    ("mm_3d", lambda T: T.nn.functional.multi_margin_loss(T.zeros(2, 3, 4), T.tensor([[1]]))),
    ("mm_module_p", lambda T: T.nn.MultiMarginLoss(p=3)),
    ("mm_module_weight", lambda T: T.nn.MultiMarginLoss(weight=T.ones(2, 2))),
    ("mlm_target_size", lambda T: T.nn.functional.multilabel_margin_loss(T.zeros(3, 4), T.tensor([0, 1, 2]))),
    ("mlm_target_range", lambda T: T.nn.functional.multilabel_margin_loss(
        T.zeros(2, 4), T.tensor([[0, 5, -1, 2], [0, 0, 0, 0]]))),
    ("gnll_var_size", lambda T: T.nn.functional.gaussian_nll_loss(T.zeros(3, 4), T.zeros(3, 4), T.ones(2, 4))),
    ("gnll_var_neg", lambda T: T.nn.functional.gaussian_nll_loss(T.zeros(3, 4), T.zeros(3, 4), -T.ones(3, 4))),
    ("gnll_var_neg_float", lambda T: T.nn.functional.gaussian_nll_loss(T.zeros(3, 4), T.zeros(3, 4), -1.0)),
    ("gnll_reduction", lambda T: T.nn.functional.gaussian_nll_loss(T.zeros(3), T.zeros(3), T.ones(3),
                                                                    reduction="bad")),
    ("tmwd_margin", lambda T: T.nn.functional.triplet_margin_with_distance_loss(
        T.zeros(3, 4), T.zeros(3, 4), T.zeros(3, 4), margin=0)),
    ("tmwd_dims", lambda T: T.nn.functional.triplet_margin_with_distance_loss(
        T.zeros(3, 4), T.zeros(3, 4), T.zeros(4))),
    ("tmwd_module_margin", lambda T: T.nn.TripletMarginWithDistanceLoss(margin=-1.0)),
    ("lrn_2d", lambda T: T.nn.functional.local_response_norm(T.zeros(3, 4), 2)),
    ("circpad_dims", lambda T: T.nn.CircularPad2d(1)(T.zeros(3, 4))),
    ("reflpad_dims", lambda T: T.nn.ReflectionPad2d(1)(T.zeros(3, 4))),
    ("reflpad_too_big", lambda T: T.nn.ReflectionPad1d(3)(T.zeros(1, 2, 3))),
    ("unpool_output_size", lambda T: T.nn.functional.max_unpool2d(T.zeros(1, 1, 2, 2), T.zeros(1, 1, 2, 2,
                                                                                                 dtype=T.int64),
                                                                  2, output_size=(5, 9))),
    ("unpool_index", lambda T: T.nn.functional.max_unpool2d(T.zeros(1, 1, 2, 2), T.full((1, 1, 2, 2), 99), 2)),
    ("unpool_index_shape", lambda T: T.nn.functional.max_unpool2d(T.zeros(1, 1, 2, 2), _ti(1, 1, 2, 1)(T), 2)),
    ("unpool_index_dtype", lambda T: T.nn.functional.max_unpool2d(T.zeros(1, 1, 2, 2), T.zeros(1, 1, 2, 2), 2)),
    ("unpool_dims", lambda T: T.nn.functional.max_unpool2d(T.zeros(2, 2), _ti(2, 2)(T), 2)),
    ("affine_theta_shape", lambda T: T.nn.functional.affine_grid(T.zeros(2, 3, 3), (2, 1, 4, 4),
                                                                 align_corners=False)),
    ("affine_size", lambda T: T.nn.functional.affine_grid(T.zeros(2, 2, 3), (2, 1, 4), align_corners=False)),
    ("grid_mode", lambda T: T.nn.functional.grid_sample(T.zeros(2, 1, 4, 4), T.zeros(2, 3, 3, 2), mode="foo")),
    ("grid_padding", lambda T: T.nn.functional.grid_sample(T.zeros(2, 1, 4, 4), T.zeros(2, 3, 3, 2),
                                                           padding_mode="foo")),
    ("grid_batch", lambda T: T.nn.functional.grid_sample(T.zeros(2, 1, 4, 4), T.zeros(3, 3, 3, 2),
                                                         align_corners=False)),
    ("grid_last", lambda T: T.nn.functional.grid_sample(T.zeros(2, 1, 4, 4), T.zeros(2, 3, 3, 3),
                                                        align_corners=False)),
    ("affine_batch", lambda T: T.nn.functional.affine_grid(T.zeros(2, 2, 3), (3, 1, 4, 4), align_corners=False)),
    ("pool3d_dims", lambda T: T.nn.functional.max_pool3d(T.zeros(2, 3, 4), 2)),
    ("eye_dims", lambda T: T.nn.init.eye_(T.zeros(2, 3, 4))),
    ("dirac_dims", lambda T: T.nn.init.dirac_(T.zeros(2, 3))),
    ("dirac_groups", lambda T: T.nn.init.dirac_(T.zeros(3, 3, 3), 2)),
]

# messages that differ from PyTorch's wording (PyTorch's own is terse or refers to its C++ internals);
# the type still has to match and the message has to name what was expected and what was got
_OWN_WORDING = {"gnll_var_size", "pool3d_dims", "affine_batch"}


@pytest.mark.parametrize("name,call", ERRORS, ids=[e[0] for e in ERRORS])
def test_errors_match_torch(name: str, call: Callable[[Any], Any]) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(Exception) as t_err:
            call(torch)
        with pytest.raises(Exception) as l_err:
            call(lg)
    assert type(l_err.value) is type(t_err.value)
    if name not in _OWN_WORDING:
        # PyTorch's messages name its own types (torch.Size) and one carries stray source indentation
        want = str(t_err.value).replace("                          ", " ")
        assert str(l_err.value).replace("lightgrad.", "torch.") == want


def test_errors_leave_state_unchanged() -> None:
    w = lg.ones(3, 4)
    before = w.numpy().copy()
    with pytest.raises(ValueError):
        lg.nn.init.eye_(lg.ones(2, 3, 4))
    with pytest.raises(RuntimeError):
        lg.nn.functional.max_unpool2d(w.reshape(1, 1, 3, 4), lg.full((1, 1, 3, 4), 99), 2)
    np.testing.assert_array_equal(w.numpy(), before)
    x = lg.ones(2, 3, requires_grad=True)
    with pytest.raises(RuntimeError):
        lg.nn.functional.pixel_shuffle(x, 2)
    assert x.grad is None and x._version[0] == 0


def test_grid_sample_default_align_warns() -> None:
    with pytest.warns(UserWarning, match="align_corners=False"):
        lg.nn.functional.grid_sample(lg.zeros(1, 1, 2, 2), lg.zeros(1, 1, 1, 2))
    with pytest.warns(UserWarning, match="align_corners=False"):
        lg.nn.functional.affine_grid(lg.zeros(1, 2, 3), (1, 1, 2, 2))


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
