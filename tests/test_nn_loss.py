"""Losses of lightgrad.nn against PyTorch: the layer table's losses, fused cross-entropy, margin losses, CTC.

Each loss of the layer table runs with every reduction, (a) against central finite differences in
float64, (b) against PyTorch (see helpers.check_layer_row_*). The fused cross-entropy node gives
PyTorch's values, gradients (also differentiated twice) and errors on both sides of every condition
that picks it; the margin, Gaussian-NLL and triplet-with-distance losses run in float64 and
float32; CTC over targets given padded or concatenated.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from helpers import (C, CV, D, G, I, N, P, S, Case, Row, assert_close_by_dtype, assert_error_like_torch,
                     check_case_in_precision, check_layer_row_against_torch, check_layer_row_finite_differences,
                     compare_functions, needs_torch, nn, numpy_of, t64, torch)

import lightgrad as lg
import lightgrad.nn.functional as LF

TF = None if torch is None else torch.nn.functional
RNG = np.random.default_rng(0)


# ---- the layer table (see test_nn_layers.py), its losses -----------------------------------------

# losses: every one with each reduction
_LOSSES: list[tuple[str, Callable[[Any, str], Any], list[tuple]]] = [
    ("mse", lambda T, r: nn(T).MSELoss(reduction=r), [N(3, 4), N(3, 4)]),
    ("l1", lambda T, r: nn(T).L1Loss(reduction=r), [N(3, 4), C(3, 4)]),
    ("smooth_l1", lambda T, r: nn(T).SmoothL1Loss(reduction=r, beta=0.5), [N(3, 4), C(3, 4)]),
    ("smooth_l1_beta0", lambda T, r: nn(T).SmoothL1Loss(reduction=r, beta=0.0), [N(3, 4), C(3, 4)]),
    ("huber", lambda T, r: nn(T).HuberLoss(reduction=r, delta=0.7), [N(3, 4), C(3, 4)]),
    ("cross_entropy", lambda T, r: nn(T).CrossEntropyLoss(reduction=r), [N(4, 5), I(5, 4)]),
    ("cross_entropy_weight", lambda T, r: nn(T).CrossEntropyLoss(t64(T, [0.2, 1.0, 2.0, 0.5, 1.5]), reduction=r),
     [N(4, 5), I(5, 4)]),
    ("cross_entropy_ignore", lambda T, r: nn(T).CrossEntropyLoss(ignore_index=2, reduction=r),
     [N(6, 5), I(5, 6, ignore=2)]),
    ("cross_entropy_smoothing", lambda T, r: nn(T).CrossEntropyLoss(label_smoothing=0.2, reduction=r),
     [N(4, 5), I(5, 4)]),
    ("cross_entropy_all_options", lambda T, r: nn(T).CrossEntropyLoss(
        t64(T, [0.2, 1.0, 2.0, 0.5, 1.5]), ignore_index=-100, label_smoothing=0.1, reduction=r),
     [N(6, 5), I(5, 6, ignore=-100)]),
    ("cross_entropy_nd", lambda T, r: nn(T).CrossEntropyLoss(reduction=r), [N(2, 4, 3, 2), I(4, 2, 3, 2)]),
    ("cross_entropy_nd_weight_ls", lambda T, r: nn(T).CrossEntropyLoss(
        t64(T, [1.0, 0.5, 2.0]), label_smoothing=0.3, ignore_index=1, reduction=r), [N(2, 3, 4), I(3, 2, 4)]),
    ("cross_entropy_unbatched", lambda T, r: nn(T).CrossEntropyLoss(reduction=r), [N(5), I(5)]),
    ("cross_entropy_probs", lambda T, r: nn(T).CrossEntropyLoss(reduction=r), [N(4, 5), D(4, 5)]),
    ("cross_entropy_probs_all", lambda T, r: nn(T).CrossEntropyLoss(
        t64(T, [0.2, 1.0, 2.0]), label_smoothing=0.25, reduction=r), [N(2, 3, 2), D(2, 3, 2)]),
    ("nll", lambda T, r: nn(T).NLLLoss(reduction=r), [N(4, 5), I(5, 4)]),
    ("nll_weight_ignore", lambda T, r: nn(T).NLLLoss(t64(T, [0.2, 1.0, 2.0, 0.5]), ignore_index=0, reduction=r),
     [N(6, 4), I(4, 6, ignore=0)]),
    ("nll_nd", lambda T, r: nn(T).NLLLoss(reduction=r), [N(2, 3, 4), I(3, 2, 4)]),
    ("bce", lambda T, r: nn(T).BCELoss(reduction=r), [P(3, 4), P(3, 4, grad=False)]),
    ("bce_weight", lambda T, r: nn(T).BCELoss(t64(T, [0.5, 1.0, 2.0, 1.5]), reduction=r),
     [P(3, 4), P(3, 4, grad=False)]),
    ("bce_logits", lambda T, r: nn(T).BCEWithLogitsLoss(reduction=r), [N(3, 4), P(3, 4)]),
    ("bce_logits_weights", lambda T, r: nn(T).BCEWithLogitsLoss(
        t64(T, [0.5, 1.0, 2.0, 1.5]), reduction=r, pos_weight=t64(T, [3.0, 0.5, 1.0, 2.0])),
     [N(3, 4), P(3, 4, grad=False)]),
    ("kl_div_batchmean", lambda T, r: nn(T).KLDivLoss(reduction="batchmean" if r == "mean" else r),
     [N(3, 4), D(3, 4)]),
    ("kl_div_log_target", lambda T, r: nn(T).KLDivLoss(reduction=r, log_target=True), [N(3, 4), N(3, 4)]),
    ("cosine_embedding", lambda T, r: nn(T).CosineEmbeddingLoss(margin=0.1, reduction=r),
     [N(5, 3), N(5, 3), S(5)]),
    ("margin_ranking", lambda T, r: nn(T).MarginRankingLoss(margin=0.2, reduction=r), [N(6), N(6), S(6)]),
    ("hinge_embedding", lambda T, r: nn(T).HingeEmbeddingLoss(margin=0.7, reduction=r), [N(6), S(6)]),
    ("soft_margin", lambda T, r: nn(T).SoftMarginLoss(reduction=r), [N(6), S(6)]),
    ("triplet_margin", lambda T, r: nn(T).TripletMarginLoss(margin=0.5, reduction=r), [N(4, 3), N(4, 3), N(4, 3)]),
    ("poisson_nll", lambda T, r: nn(T).PoissonNLLLoss(reduction=r), [N(3, 4), P(3, 4, grad=False)]),
    ("poisson_nll_full", lambda T, r: nn(T).PoissonNLLLoss(log_input=False, full=True, reduction=r),
     [P(3, 4), P(3, 4, grad=False)]),
]


ROWS: list[Row] = []
for _name, _ctor, _ins in _LOSSES:
    for _red in ("mean", "sum", "none"):
        ROWS.append((f"{_name}_{_red}", (lambda c, r: lambda T: c(T, r))(_ctor, _red), _ins))


IDS = [r[0] for r in ROWS]


@pytest.mark.parametrize("row", ROWS, ids=IDS)
def test_finite_differences(row: Row) -> None:
    check_layer_row_finite_differences(row)


@needs_torch
@pytest.mark.parametrize("row", ROWS, ids=IDS)
def test_against_torch(row: Row) -> None:
    check_layer_row_against_torch(row)


# ---- stability for extreme logits ----------------------------------------------------------------

@pytest.mark.parametrize("scale", [1e4, -1e4])
def test_cross_entropy_extreme_logits(scale: float) -> None:
    logits = np.array([[1.0, -2.0, 0.5], [0.0, 3.0, -1.0]]) * scale
    target = np.array([1, 1])
    for dt in (lg.float32, lg.float64):
        x = lg.tensor(logits, dtype=dt, requires_grad=True)
        for smoothing in (0.0, 0.1):
            loss = lg.nn.functional.cross_entropy(x, lg.tensor(target), label_smoothing=smoothing)
            loss.backward()
            assert np.isfinite(loss.item()) and np.isfinite(x.grad.numpy()).all()
            if torch is not None:
                tx = torch.tensor(logits, dtype=torch.float64, requires_grad=True)
                tl = torch.nn.functional.cross_entropy(tx, torch.tensor(target), label_smoothing=smoothing)
                tl.backward()
                np.testing.assert_allclose(loss.item(), tl.item(), rtol=1e-5)
                np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-5, atol=1e-6)
            x.grad = None


@pytest.mark.parametrize("scale", [1e4, -1e4])
def test_bce_with_logits_extreme(scale: float) -> None:
    logits = np.array([1.0, -1.0, 0.5, -3.0]) * scale
    target = np.array([1.0, 0.0, 0.0, 1.0])
    pos_weight = np.array([2.0, 1.0, 0.5, 3.0])
    x = lg.tensor(logits, dtype=lg.float32, requires_grad=True)
    loss = lg.nn.functional.binary_cross_entropy_with_logits(x, lg.tensor(target, dtype=lg.float32),
                                                             pos_weight=lg.tensor(pos_weight, dtype=lg.float32))
    loss.backward()
    assert np.isfinite(loss.item()) and np.isfinite(x.grad.numpy()).all()
    if torch is not None:
        tx = torch.tensor(logits, dtype=torch.float64, requires_grad=True)
        tl = torch.nn.functional.binary_cross_entropy_with_logits(tx, torch.tensor(target),
                                                                  pos_weight=torch.tensor(pos_weight))
        tl.backward()
        np.testing.assert_allclose(loss.item(), tl.item(), rtol=1e-5)
        np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-5, atol=1e-6)


# ---- cross-entropy: the fused node, off the fused path, twice differentiated ---------------------

def _xent_grads(T: Any, x0: np.ndarray, t0: np.ndarray, **kw: Any) -> list[np.ndarray]:
    x = T.tensor(x0, requires_grad=True)
    loss = T.nn.functional.cross_entropy(x, T.tensor(t0), **kw)
    (g,) = T.autograd.grad(loss, x, create_graph=True)
    (gg,) = T.autograd.grad((g * g).sum(), x)
    return [loss.detach().numpy(), g.detach().numpy(), gg.numpy()]


@needs_torch
@pytest.mark.parametrize("shape", [(37, 11), (300, 65)], ids=["small", "shift_free_sized"])
@pytest.mark.parametrize("row_shift", [0.0, 200.0, -40.0], ids=["plain", "overflowing_row", "vanishing_row"])
@pytest.mark.parametrize("reduction", ["mean", "sum"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_fused_cross_entropy_matches_torch_to_second_order(reduction: str, dtype: Any, row_shift: float,
                                                           shape: tuple[int, int]) -> None:
    # (300, 65) logits are large enough for backend.exp_sums to try the shift-free path
    x0 = (RNG.standard_normal(shape) * 5).astype(dtype)
    x0[3] += row_shift  # one row far from the others: the row maxima are needed again
    t0 = RNG.integers(0, shape[1], shape[0])
    theirs = _xent_grads(torch, x0, t0, reduction=reduction)
    ours = _xent_grads(lg, x0, t0, reduction=reduction)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


@needs_torch
def test_fused_cross_entropy_is_one_node_and_backward_matches_torch() -> None:
    x0 = RNG.standard_normal((64, 65)).astype(np.float32)
    t0 = RNG.integers(0, 65, 64)
    res = []
    for T in (torch, lg):
        x = T.tensor(x0, requires_grad=True)
        loss = T.nn.functional.cross_entropy(x * 2, T.tensor(t0))
        loss.backward()
        res.append((loss.detach().numpy(), x.grad.numpy()))
        if T is lg:
            assert type(loss.grad_fn).__name__ == "CrossEntropy"
    np.testing.assert_allclose(res[1][0], res[0][0], rtol=1e-5)
    np.testing.assert_allclose(res[1][1], res[0][1], rtol=1e-5, atol=1e-7)


def test_fused_cross_entropy_gradient_matches_finite_differences() -> None:
    x0 = RNG.standard_normal((5, 4))
    t0 = np.array([0, 3, 1, 1, 2])
    x = lg.tensor(x0, requires_grad=True)
    lg.nn.functional.cross_entropy(x, lg.tensor(t0)).backward()

    def f(v: np.ndarray) -> float:
        return float(lg.nn.functional.cross_entropy(lg.tensor(v), lg.tensor(t0)).item())
    eps = 1e-6
    num = np.zeros_like(x0)
    for i in np.ndindex(x0.shape):
        d = np.zeros_like(x0)
        d[i] = eps
        num[i] = (f(x0 + d) - f(x0 - d)) / (2 * eps)
    np.testing.assert_allclose(x.grad.numpy(), num, rtol=1e-6, atol=1e-8)


@needs_torch
@pytest.mark.parametrize("ignore", ["default", "in_range", "all"])
@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_fused_cross_entropy_with_ignored_targets_matches_torch_to_second_order(reduction: str, ignore: str) -> None:
    x0 = RNG.standard_normal((9, 5))
    t0 = RNG.integers(0, 5, 9)
    kw: dict[str, Any] = {"reduction": reduction}
    if ignore == "default":
        t0[[1, 4, 5]] = -100
    elif ignore == "in_range":
        kw["ignore_index"] = int(t0[0])
    else:
        t0[:] = -100  # mean over no targets: nan, as PyTorch
    theirs = _xent_grads(torch, x0, t0, **kw)
    ours = _xent_grads(lg, x0, t0, **kw)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)


def test_compiled_step_checks_the_targets_of_every_step() -> None:
    # the fused path is chosen by shapes only, so a replay sees each batch's ignored and bad targets
    w = lg.zeros(4, 3, requires_grad=True)

    def step(x: lg.Tensor, t: lg.Tensor) -> lg.Tensor:
        w.grad = None
        loss = lg.nn.functional.cross_entropy(x @ w, t)
        loss.backward()
        return loss
    compiled = lg.compile(step)
    x = lg.tensor(RNG.standard_normal((6, 4)).astype(np.float32))
    for t0 in ([0, 1, 2, 0, 1, 2], [0, -100, 2, -100, 1, 2], [-100] * 6):
        t = lg.tensor(t0)
        got = (compiled(x, t).item(), w.grad.numpy().copy())
        want = (step(x, t).item(), w.grad.numpy().copy())
        np.testing.assert_array_equal(got[1], want[1])
        assert got[0] == want[0] or np.isnan(got[0]) and np.isnan(want[0])
    assert all(isinstance(v, dict) for v in compiled.stats().values())  # replayed, not eager
    with pytest.raises(IndexError):
        compiled(x, lg.tensor([0, 1, 2, 3, 1, 2]))


@needs_torch
@pytest.mark.parametrize("case", ["weight", "smoothing", "none", "3d"])
def test_cross_entropy_off_the_fused_path_matches_torch(case: str) -> None:
    x0 = RNG.standard_normal((6, 5)).astype(np.float64)
    t0 = np.array([0, 2, 4, 1, 2, 3])
    kw: dict[str, Any] = {}
    if case == "weight":
        w = RNG.random(5)
        kw["weight"] = w
    elif case == "smoothing":
        kw["label_smoothing"] = 0.1
    elif case == "none":
        kw["reduction"] = "none"
    else:
        x0 = RNG.standard_normal((6, 5, 3))
        t0 = RNG.integers(0, 5, (6, 3))
    res = []
    for T in (torch, lg):
        kwt = {k: (T.tensor(v) if isinstance(v, np.ndarray) else v) for k, v in kw.items()}
        x = T.tensor(x0, requires_grad=True)
        loss = T.nn.functional.cross_entropy(x, T.tensor(t0), **kwt)
        loss.sum().backward()
        res.append((loss.detach().numpy(), x.grad.numpy()))
    np.testing.assert_allclose(res[1][0], res[0][0], rtol=1e-10)
    np.testing.assert_allclose(res[1][1], res[0][1], rtol=1e-10, atol=1e-12)


@needs_torch
@pytest.mark.parametrize("bad", [5, -1])
def test_cross_entropy_target_out_of_range_raises_like_torch(bad: int) -> None:
    x0 = RNG.standard_normal((3, 5)).astype(np.float32)
    t0 = np.array([0, bad, 1])
    with pytest.raises(IndexError):
        torch.nn.functional.cross_entropy(torch.tensor(x0), torch.tensor(t0))
    with pytest.raises(IndexError):
        lg.nn.functional.cross_entropy(lg.tensor(x0), lg.tensor(t0))


@needs_torch
@pytest.mark.parametrize("kw", [{}, {"weight": [0.5, 2.0, 1.0, 1.5], "ignore_index": 1}, {"label_smoothing": 0.2},
                                {"reduction": "none"}])
def test_cross_entropy_double_backward(kw: dict) -> None:
    """Gradient of a gradient (create_graph) through cross-entropy, as a gradient penalty uses it."""
    rng = np.random.default_rng(0)
    x, t = rng.standard_normal((5, 4)), np.array([0, 1, 3, 1, 2])
    results = []
    for T in (lg, torch):
        args = {k: (T.tensor(np.asarray(v, np.float64)) if k == "weight" else v) for k, v in kw.items()}
        xt = T.tensor(x, requires_grad=True)
        loss = T.nn.functional.cross_entropy(xt, T.tensor(t), **args).sum()
        (g,) = T.autograd.grad(loss, xt, create_graph=True)
        (g * g).sum().backward()
        results.append((g.detach().numpy(), xt.grad.numpy()))
    np.testing.assert_allclose(results[0][0], results[1][0], rtol=1e-7, atol=1e-10)
    np.testing.assert_allclose(results[0][1], results[1][1], rtol=1e-7, atol=1e-10)


# ---- margin, Gaussian-NLL and triplet-with-distance losses in float64 and float32 ----------------

@needs_torch
class TestMarginGaussianAndTripletLosses:
    """MultiMargin, MultiLabelMargin, MultiLabelSoftMargin, GaussianNLL and TripletMarginWithDistance
    losses in float64 (tight) and float32 against PyTorch (the both-precisions table: see
    helpers.check_case_in_precision), and their errors with PyTorch's types and messages."""

    PRECISION_CASES: list[Case] = [
        # losses
        ("multi_margin", lambda T, x, t: T.nn.MultiMarginLoss()(x, t), [G(4, 5), CV([0, 3, 4, 1])], True),
        ("multi_margin_p2_w", lambda T, x, t, w: T.nn.MultiMarginLoss(p=2, margin=0.7, weight=w, reduction="sum")(x, t),
         [G(4, 5), CV([0, 3, 4, 1]), CV([0.5, 1.0, 2.0, 0.3, 1.5])], True),
        ("multi_margin_none", lambda T, x, t: T.nn.functional.multi_margin_loss(x, t, reduction="none"),
         [G(3, 4), CV([2, 2, 0])], False),
        ("multi_margin_unb", lambda T, x, t: T.nn.functional.multi_margin_loss(x, t, reduction="none"),
         [G(4), CV(1)], True),
        ("multi_margin_unb_mean", lambda T, x, t: T.nn.functional.multi_margin_loss(x, t), [G(4), CV(1)], False),
        ("multilabel_margin", lambda T, x, t: T.nn.MultiLabelMarginLoss()(x, t),
         [G(3, 5), CV([[3, 0, -1, 1, 2], [4, 4, 1, 0, 2], [1, 2, 3, 0, 4]])], True),
        ("multilabel_margin_none", lambda T, x, t: T.nn.MultiLabelMarginLoss(reduction="none")(x, t),
         [G(3, 4), CV([[-1, 0, 1, 2], [2, 1, -1, 0], [0, -1, -1, -1]])], False),
        ("multilabel_margin_unb", lambda T, x, t: T.nn.functional.multilabel_margin_loss(x, t, reduction="sum"),
         [G(4), CV([3, 1, -1, 0])], True),
        ("multilabel_margin_unb_none", lambda T, x, t: T.nn.functional.multilabel_margin_loss(x, t, reduction="none"),
         [G(4), CV([3, 1, -1, 0])], False),
        ("multilabel_soft_margin", lambda T, x, t: T.nn.MultiLabelSoftMarginLoss()(x, t),
         [G(3, 4), CV(np.array([[1, 0, 1, 1], [0, 0, 1, 0], [1, 1, 1, 0]], float))], True),
        ("multilabel_soft_margin_w", lambda T, x, t, w: T.nn.MultiLabelSoftMarginLoss(weight=w, reduction="none")(x, t),
         [G(3, 4), G(3, 4, lo=0.0, hi=1.0), CV([0.5, 2.0, 1.0, 0.1])], True),
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
    ]

    MESSAGE_ERRORS: list[tuple[str, Callable[[Any], Any]]] = [
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
    ]

    @pytest.mark.parametrize("name,fn,specs,fd", PRECISION_CASES, ids=[c[0] for c in PRECISION_CASES])
    @pytest.mark.parametrize("precision", ["float64", "float32"])
    def test_against_torch(self, name: str, fn: Callable[..., Any], specs: list[Any], fd: bool, precision: str) -> None:
        check_case_in_precision(name, fn, specs, fd, precision)

    @pytest.mark.parametrize("name,call", MESSAGE_ERRORS, ids=[e[0] for e in MESSAGE_ERRORS])
    def test_errors_match_torch(self, name: str, call: Callable[[Any], Any]) -> None:
        assert_error_like_torch(name, call, {"gnll_var_size"})


# ---- CTC loss ------------------------------------------------------------------------------------

def _ctc_case(rng: np.random.Generator, T: int, N: int, C: int, S: int) -> tuple[Any, ...]:
    tg = rng.integers(1, C, (N, S))
    tg[0, 1] = tg[0, 0]  # a repeated label needs a blank in between
    il = rng.integers(S + 2, T + 1, N)
    il[0] = T
    tl = rng.integers(0, S + 1, N)
    tl[0] = S
    return tg, il, tl


@needs_torch
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_ctc_loss_matches_torch(dtype: str) -> None:
    rng = np.random.default_rng(12)
    T, N, C, S = 12, 4, 5, 4
    tg, il, tl = _ctc_case(rng, T, N, C, S)
    tl[-1] = 0  # an empty target
    concat = np.concatenate([tg[i, :tl[i]] for i in range(N)])
    for red in ("none", "mean", "sum"):
        for blank in (0, C - 1):
            tgb = np.where(tg == blank, 0 if blank else 1, tg) if blank else tg
            cat_b = np.concatenate([tgb[i, :tl[i]] for i in range(N)])
            for targets in (tgb, cat_b):
                for tgt_form in ("tensor", "list"):
                    def lf(x: Any, targets: Any = targets, red: str = red, blank: int = blank,
                           tgt_form: str = tgt_form) -> Any:
                        lens = (lg.tensor(il), lg.tensor(tl)) if tgt_form == "tensor" else (il.tolist(), tl.tolist())
                        return LF.ctc_loss(x.log_softmax(2), lg.tensor(targets), *lens, blank=blank, reduction=red)

                    def tf(x: Any, targets: Any = targets, red: str = red, blank: int = blank,
                           tgt_form: str = tgt_form) -> Any:
                        lens = (torch.tensor(il), torch.tensor(tl)) if tgt_form == "tensor" else \
                            (il.tolist(), tl.tolist())
                        return TF.ctc_loss(x.log_softmax(2), torch.tensor(targets), *lens, blank=blank, reduction=red)

                    compare_functions(lf, tf, [rng.standard_normal((T, N, C))], dtype, rng)
    assert concat.ndim == 1
    # the module, unbatched input
    x = rng.standard_normal((T, C))
    tx, lx = torch.tensor(x, requires_grad=True), lg.tensor(x, requires_grad=True)
    to = torch.nn.CTCLoss(reduction="none")(tx.log_softmax(1), torch.tensor(tg[0]), torch.tensor(T), torch.tensor(S))
    lo = lg.nn.CTCLoss(reduction="none")(lx.log_softmax(1), lg.tensor(tg[0]), lg.tensor(T), lg.tensor(S))
    assert lo.shape == to.shape == ()
    assert_close_by_dtype(numpy_of(lo), numpy_of(to), "float64")
    to.backward()
    lo.backward()
    assert_close_by_dtype(numpy_of(lx.grad), numpy_of(tx.grad), "float64")


@needs_torch
def test_ctc_loss_infeasible_and_zero_infinity() -> None:
    rng = np.random.default_rng(13)
    T, N, C = 6, 3, 4
    tg = np.array([[1, 1, 2, 3], [1, 2, 3, 1], [2, 2, 2, 2]])
    il = np.array([6, 3, 6])  # sample 1: 4 labels in 3 steps; sample 2: 4 repeats need 7 steps
    tl = np.array([4, 4, 4])
    x = rng.standard_normal((T, N, C))
    for zi in (False, True):
        for red in ("none", "sum"):
            tx, lx = torch.tensor(x, requires_grad=True), lg.tensor(x, requires_grad=True)
            to = TF.ctc_loss(tx.log_softmax(2), torch.tensor(tg), torch.tensor(il), torch.tensor(tl),
                             reduction=red, zero_infinity=zi)
            lo = LF.ctc_loss(lx.log_softmax(2), lg.tensor(tg), lg.tensor(il), lg.tensor(tl),
                             reduction=red, zero_infinity=zi)
            np.testing.assert_allclose(numpy_of(lo), numpy_of(to), rtol=1e-10)
            if zi:
                to.sum().backward()
                lo.sum().backward()
                assert_close_by_dtype(numpy_of(lx.grad), numpy_of(tx.grad), "float64")


@needs_torch
def test_ctc_loss_errors() -> None:
    for mod in (torch, lg):
        lp = mod.randn(5, 2, 4).log_softmax(2)
        tg = mod.tensor([[1, 2], [3, 1]])
        with pytest.raises(RuntimeError):  # input length beyond T
            mod.nn.functional.ctc_loss(lp, tg, mod.tensor([6, 5]), mod.tensor([2, 2]))
        with pytest.raises(RuntimeError):  # target length beyond the padded targets
            mod.nn.functional.ctc_loss(lp, tg, mod.tensor([5, 5]), mod.tensor([3, 2]))
        with pytest.raises(RuntimeError):  # blank out of range
            mod.nn.functional.ctc_loss(lp, tg, mod.tensor([5, 5]), mod.tensor([2, 2]), blank=4)
        with pytest.raises(ValueError):
            mod.nn.CTCLoss(reduction="avg")(lp, tg, mod.tensor([5, 5]), mod.tensor([2, 2]))
