"""Layers of lightgrad.nn against PyTorch: the layer table, activations, dropout, embeddings, normalization.

The layer table checks every layer and activation (linear, embedding, containers, norms,
activations, their functional forms) (a) forward and backward against central finite differences
in float64 (inputs and parameters), (b) against PyTorch with identical weights (loaded through
``state_dict``): outputs, input gradients, parameter gradients and buffers, in train and then eval
mode. Each row is (name, ctor, inputs): ``ctor(T)`` builds the layer (or a function) with T =
lightgrad or T = torch from the shared API; ``inputs`` lists input specs (see helpers.py). The
losses' rows are in test_nn_loss.py. Also the fast paths of layer norm, GELU and softmax.
"""

from __future__ import annotations

import math
import random
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from helpers import (G, GV, I, K, N, Case, Row, assert_close_by_dtype, assert_error_like_torch, check_case_in_precision,
                     check_layer_row_against_torch, check_layer_row_finite_differences, fn, needs_torch, nn, numpy_of,
                     outputs_and_grads, state_to_lg, state_to_torch, t64, torch)

import lightgrad as lg
import lightgrad.nn.functional as LF
from lightgrad import backend as B

TF = None if torch is None else torch.nn.functional
RNG = np.random.default_rng(0)


# ---- the layer table -----------------------------------------------------------------------------

def padding_row(row: int, key: Any = "weight") -> Callable[..., None]:
    """The padding row gets no gradient by definition: not the finite-difference derivative."""
    def adjust(k: Any, g: np.ndarray, arrays: list[np.ndarray]) -> None:
        if k == key:
            g[row] = 0
    return adjust


def per_frequency(k: Any, g: np.ndarray, arrays: list[np.ndarray]) -> None:
    """scale_grad_by_freq divides each row's gradient by its count in the batch."""
    if k == "weight":
        counts = np.bincount(arrays[0].reshape(-1), minlength=g.shape[0])
        g /= np.maximum(counts, 1)[:, None]


LAYERS: list[Row] = [
    ("linear", lambda T: nn(T).Linear(4, 3), [N(2, 4)]),
    ("linear_nobias", lambda T: nn(T).Linear(4, 3, bias=False), [N(2, 4)]),
    ("linear_3d", lambda T: nn(T).Linear(4, 3), [N(2, 3, 4)]),
    ("linear_1d", lambda T: nn(T).Linear(4, 3), [N(4)]),
    ("bilinear", lambda T: nn(T).Bilinear(3, 4, 2), [N(5, 3), N(5, 4)]),
    ("embedding", lambda T: nn(T).Embedding(10, 3), [I(10, 2, 4)]),
    ("embedding_padding", lambda T: nn(T).Embedding(6, 3, padding_idx=1), [I(6, 3, 5)], padding_row(1)),
    ("embedding_scale_freq", lambda T: nn(T).Embedding(4, 3, scale_grad_by_freq=True), [I(4, 3, 5)],
     per_frequency),
    ("sequential", lambda T: nn(T).Sequential(nn(T).Linear(4, 5), nn(T).Tanh(), nn(T).Linear(5, 2)), [N(3, 4)]),
    ("flatten", lambda T: nn(T).Flatten(), [N(2, 3, 2)]),
    ("unflatten", lambda T: nn(T).Unflatten(1, (2, 3)), [N(2, 6)]),
    ("identity", lambda T: nn(T).Identity(3, k=2), [N(2, 3)]),
    # normalization
    ("batchnorm1d", lambda T: nn(T).BatchNorm1d(3), [N(5, 3)]),
    ("batchnorm1d_3d", lambda T: nn(T).BatchNorm1d(3), [N(4, 3, 2)]),
    ("batchnorm1d_cma", lambda T: nn(T).BatchNorm1d(3, momentum=None), [N(5, 3)]),
    ("batchnorm1d_noaffine", lambda T: nn(T).BatchNorm1d(3, affine=False, momentum=0.3), [N(5, 3)]),
    ("batchnorm1d_nobias", lambda T: nn(T).BatchNorm1d(3, bias=False), [N(5, 3)]),
    ("batchnorm1d_notrack", lambda T: nn(T).BatchNorm1d(3, track_running_stats=False), [N(5, 3)]),
    ("batchnorm2d", lambda T: nn(T).BatchNorm2d(2, eps=1e-3), [N(3, 2, 2, 2)]),
    ("batchnorm3d", lambda T: nn(T).BatchNorm3d(2), [N(2, 2, 2, 1, 2)]),
    ("layernorm", lambda T: nn(T).LayerNorm(4), [N(2, 3, 4)]),
    ("layernorm_2d", lambda T: nn(T).LayerNorm((3, 4), eps=1e-3), [N(2, 3, 4)]),
    ("layernorm_noaffine", lambda T: nn(T).LayerNorm(4, elementwise_affine=False), [N(3, 4)]),
    ("layernorm_nobias", lambda T: nn(T).LayerNorm(4, bias=False), [N(3, 4)]),
    ("groupnorm", lambda T: nn(T).GroupNorm(2, 4), [N(2, 4, 3)]),
    ("groupnorm_2d", lambda T: nn(T).GroupNorm(3, 3, affine=False), [N(2, 3, 2, 2)]),
    ("rmsnorm", lambda T: nn(T).RMSNorm(4), [N(2, 3, 4)]),
    ("rmsnorm_eps", lambda T: nn(T).RMSNorm((2, 3), eps=1e-3), [N(2, 2, 3)]),
    ("instancenorm1d", lambda T: nn(T).InstanceNorm1d(3, affine=True), [N(2, 3, 4)]),
    ("instancenorm2d", lambda T: nn(T).InstanceNorm2d(2), [N(2, 2, 2, 3)]),
    # activations (modules)
    ("relu", lambda T: nn(T).ReLU(), [K(2, 5)]),
    ("relu6", lambda T: nn(T).ReLU6(), [K(2, 5)]),
    ("leaky_relu", lambda T: nn(T).LeakyReLU(0.2), [K(2, 5)]),
    ("elu", lambda T: nn(T).ELU(0.7), [K(2, 5)]),
    ("celu", lambda T: nn(T).CELU(1.3), [K(2, 5)]),
    ("selu", lambda T: nn(T).SELU(), [K(2, 5)]),
    ("gelu", lambda T: nn(T).GELU(), [N(2, 5)]),
    ("gelu_tanh", lambda T: nn(T).GELU("tanh"), [N(2, 5)]),
    ("silu", lambda T: nn(T).SiLU(), [N(2, 5)]),
    ("mish", lambda T: nn(T).Mish(), [N(2, 5)]),
    ("sigmoid", lambda T: nn(T).Sigmoid(), [N(2, 5)]),
    ("tanh", lambda T: nn(T).Tanh(), [N(2, 5)]),
    ("hardtanh", lambda T: nn(T).Hardtanh(-0.5, 0.8), [N(2, 5)]),
    ("hardsigmoid", lambda T: nn(T).Hardsigmoid(), [N(3, 5)]),
    ("hardswish", lambda T: nn(T).Hardswish(), [N(3, 5)]),
    ("softplus", lambda T: nn(T).Softplus(), [N(2, 5)]),
    ("softplus_beta", lambda T: nn(T).Softplus(beta=2.0, threshold=1.5), [N(2, 5)]),
    ("softsign", lambda T: nn(T).Softsign(), [K(2, 5)]),
    ("logsigmoid", lambda T: nn(T).LogSigmoid(), [N(2, 5)]),
    ("tanhshrink", lambda T: nn(T).Tanhshrink(), [N(2, 5)]),
    ("softshrink", lambda T: nn(T).Softshrink(0.3), [N(2, 5)]),
    ("hardshrink", lambda T: nn(T).Hardshrink(0.3), [N(2, 5)]),
    ("threshold", lambda T: nn(T).Threshold(0.1, 20.0), [N(2, 5)]),
    ("softmax", lambda T: nn(T).Softmax(dim=1), [N(2, 5)]),
    ("log_softmax", lambda T: nn(T).LogSoftmax(dim=-1), [N(2, 3, 4)]),
    ("softmin", lambda T: nn(T).Softmin(dim=0), [N(3, 2)]),
    ("softmax2d", lambda T: nn(T).Softmax2d(), [N(2, 3, 2, 2)]),
    ("glu", lambda T: nn(T).GLU(), [N(2, 6)]),
    ("glu_dim0", lambda T: nn(T).GLU(0), [N(4, 3)]),
    ("prelu", lambda T: nn(T).PReLU(), [K(2, 5)]),
    ("prelu_channels", lambda T: nn(T).PReLU(3), [K(2, 3, 4)]),
    ("F.rrelu_eval", fn(lambda T, x: T.nn.functional.rrelu(x, 0.1, 0.3, training=False)), [K(2, 5)]),
    # functional forms
    ("F.relu", fn(lambda T, x: T.nn.functional.relu(x)), [K(2, 5)]),
    ("F.gelu_tanh", fn(lambda T, x: T.nn.functional.gelu(x, approximate="tanh")), [N(2, 5)]),
    ("F.softplus_big", fn(lambda T, x: T.nn.functional.softplus(x * 30)), [N(2, 5)]),
    ("F.elu_big", fn(lambda T, x: T.nn.functional.elu(x * 400)), [K(2, 5)]),
    ("F.softmax_dtype", fn(lambda T, x: T.nn.functional.softmax(x, dim=-1)), [N(2, 5)]),
    ("F.linear", fn(lambda T, x, w, b: T.nn.functional.linear(x, w, b)), [N(3, 4), N(2, 4), N(2)]),
    ("F.bilinear", fn(lambda T, a, b, w: T.nn.functional.bilinear(a, b, w)), [N(2, 3), N(2, 2), N(4, 3, 2)]),
    ("F.embedding", fn(lambda T, i, w: T.nn.functional.embedding(i, w, padding_idx=0)), [I(5, 2, 3), N(5, 2)],
     padding_row(0, key=1)),
    ("F.layer_norm", fn(lambda T, x, w, b: T.nn.functional.layer_norm(x, (4,), w, b)), [N(3, 4), N(4), N(4)]),
    ("F.group_norm", fn(lambda T, x, w: T.nn.functional.group_norm(x, 2, w)), [N(2, 4, 2), N(4)]),
    ("F.rms_norm", fn(lambda T, x, w: T.nn.functional.rms_norm(x, (4,), w)), [N(3, 4), N(4)]),
    ("F.batch_norm_eval", fn(lambda T, x, w, b: T.nn.functional.batch_norm(
        x, t64(T, [0.1, -0.2, 0.3]), t64(T, [0.5, 1.5, 2.0]), w, b)), [N(4, 3), N(3), N(3)]),
    ("F.batch_norm_nostats", fn(lambda T, x: T.nn.functional.batch_norm(x, None, None, training=True)), [N(4, 3)]),
    ("F.normalize", fn(lambda T, x: T.nn.functional.normalize(x, dim=1)), [N(3, 4)]),
    ("F.normalize_p1", fn(lambda T, x: T.nn.functional.normalize(x, p=1.0, dim=0)), [K(3, 4)]),
    ("F.cosine_similarity", fn(lambda T, a, b: T.nn.functional.cosine_similarity(a, b)), [N(3, 4), N(3, 4)]),
    ("F.cosine_similarity_bcast", fn(lambda T, a, b: T.nn.functional.cosine_similarity(a, b, dim=-1)),
     [N(3, 4), N(1, 4)]),
    ("F.pairwise_distance", fn(lambda T, a, b: T.nn.functional.pairwise_distance(a, b)), [N(3, 4), N(3, 4)]),
    ("F.pairwise_distance_p1", fn(lambda T, a, b: T.nn.functional.pairwise_distance(a, b, p=1.0, keepdim=True)),
     [N(3, 4), N(3, 4)]),
    ("F.pad_constant", fn(lambda T, x: T.nn.functional.pad(x, (1, 2, 0, 1), value=0.5)), [N(2, 3, 4)]),
    ("F.pad_constant_neg", fn(lambda T, x: T.nn.functional.pad(x, (-1, 2))), [N(2, 3, 4)]),
    ("F.pad_reflect", fn(lambda T, x: T.nn.functional.pad(x, (2, 1), mode="reflect")), [N(2, 3, 4)]),
    ("F.pad_reflect_2d", fn(lambda T, x: T.nn.functional.pad(x, (1, 1, 2, 0), mode="reflect")), [N(1, 2, 3, 4)]),
    ("F.pad_replicate", fn(lambda T, x: T.nn.functional.pad(x, (2, 3, 1, 0), mode="replicate")), [N(2, 3, 4)]),
    ("F.pad_circular", fn(lambda T, x: T.nn.functional.pad(x, (1, 3), mode="circular")), [N(2, 3, 4)]),
    ("F.pad_circular_3d", fn(lambda T, x: T.nn.functional.pad(x, (1, 0, 0, 2, 1, 1), mode="circular")),
     [N(1, 2, 2, 3, 2)]),
    ("F.dropout_eval", fn(lambda T, x: T.nn.functional.dropout(x, 0.4, training=False)), [N(2, 3)]),
]


IDS = [r[0] for r in LAYERS]


@pytest.mark.parametrize("row", LAYERS, ids=IDS)
def test_finite_differences(row: Row) -> None:
    check_layer_row_finite_differences(row)


@needs_torch
@pytest.mark.parametrize("row", LAYERS, ids=IDS)
def test_against_torch(row: Row) -> None:
    check_layer_row_against_torch(row)


# ---- activations: kinks, extremes, the softplus family, in-place forms, gumbel-softmax -----------

@needs_torch
@pytest.mark.parametrize("f", ["relu", "relu6", "hardtanh", "leaky_relu", "elu", "celu", "selu", "hardsigmoid",
                               "threshold", "softshrink", "hardshrink", "prelu"])
def test_gradients_at_kinks_match_torch(f: str) -> None:
    """Inputs exactly at the kinks (0, the bounds), where finite differences cannot decide."""
    x = np.array([-3.0, -1.0, -0.5, 0.0, 0.5, 1.0, 3.0, 6.0])
    grads = []
    for T in (lg, torch):
        F = T.nn.functional
        xt = T.tensor(x, requires_grad=True)
        if f == "threshold":
            y = F.threshold(xt, 0.5, -2.0)
        elif f in ("softshrink", "hardshrink"):
            y = getattr(F, f)(xt, 0.5)
        elif f == "prelu":
            y = F.prelu(xt, T.tensor([0.25], dtype=T.float64))
        else:
            y = getattr(F, f)(xt)
        y.sum().backward()
        grads.append(xt.grad.numpy())
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-7, err_msg=f)


@pytest.mark.parametrize("f", ["softplus", "logsigmoid", "elu", "selu", "celu", "mish", "silu", "log_softmax"])
def test_activations_extreme_inputs_finite(f: str) -> None:
    x = lg.tensor([-1e4, -50.0, 0.3, 50.0, 1e4], requires_grad=True)
    fn_ = getattr(lg.nn.functional, f)
    y = fn_(x, dim=0) if f == "log_softmax" else fn_(x)
    (y * lg.tensor([1.0, 2.0, 3.0, 4.0, 5.0])).sum().backward()
    assert np.isfinite(y.detach().numpy()).all() and np.isfinite(x.grad.numpy()).all()


_LOGITS = np.array([-1e4, -40.0, -20.0, -1.5, 0.0, 0.3, 20.0, 40.0, 1e4])
_TARGET = np.random.default_rng(0).uniform(size=_LOGITS.size)


def _sig(x: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        return 1 / (1 + np.exp(-x))


# (name, f(T, x), its derivative in closed form): every function built on softplus or log-sigmoid,
# at exactly 0 and at the extremes, where composing relu/abs/clamp pieces gave the wrong gradient
_SOFTPLUS_FAMILY = [
    ("softplus", lambda T, x: T.nn.functional.softplus(x),
     lambda x: np.where(x > 20, 1.0, _sig(x))),
    ("softplus_beta", lambda T, x: T.nn.functional.softplus(x, beta=2.0, threshold=5.0),
     lambda x: np.where(2 * x > 5, 1.0, _sig(2 * x))),
    ("logsigmoid", lambda T, x: T.nn.functional.logsigmoid(x), lambda x: _sig(-x)),
    ("LogSigmoid", lambda T, x: T.nn.LogSigmoid()(x), lambda x: _sig(-x)),
    ("bce_with_logits", lambda T, x: T.nn.functional.binary_cross_entropy_with_logits(
        x, T.tensor(_TARGET), reduction="none"), lambda x: _sig(x) - _TARGET),
    ("BCEWithLogitsLoss_pos_weight", lambda T, x: T.nn.BCEWithLogitsLoss(
        reduction="none", pos_weight=T.tensor(3.0, dtype=T.float64))(x, T.tensor(_TARGET)),
     lambda x: (1 - _TARGET) - (2 * _TARGET + 1) * _sig(-x)),
    ("soft_margin_loss", lambda T, x: T.nn.functional.soft_margin_loss(
        x, T.tensor(np.where(_TARGET > 0.5, 1.0, -1.0)), reduction="none"),
     lambda x: -np.where(_TARGET > 0.5, 1.0, -1.0) * _sig(-np.where(_TARGET > 0.5, 1.0, -1.0) * x)),
    ("multilabel_soft_margin_loss", lambda T, x: T.nn.functional.multilabel_soft_margin_loss(
        x[None], T.tensor(_TARGET[None]), reduction="none"), lambda x: (_sig(x) - _TARGET) / x.size),
    ("bernoulli_log_prob", lambda T, x: T.distributions.Bernoulli(logits=x).log_prob(
        T.tensor((_TARGET > 0.5).astype(np.float64))), lambda x: (_TARGET > 0.5) - _sig(x)),
]


@pytest.mark.parametrize("name,f,deriv", _SOFTPLUS_FAMILY, ids=[c[0] for c in _SOFTPLUS_FAMILY])
def test_softplus_family_gradient_at_zero_and_extremes(name: str, f: Any, deriv: Any) -> None:
    x = lg.tensor(_LOGITS, requires_grad=True)
    y = f(lg, x)
    y.sum().backward()
    # (atol: (1 - t) - sigmoid(-x) and sigmoid(x) - t round differently, by 1e-16)
    np.testing.assert_allclose(x.grad.numpy(), deriv(_LOGITS), rtol=1e-12, atol=1e-15, err_msg=name)
    if torch is not None:  # values, gradients and second derivatives as PyTorch's
        res = []
        for T in (lg, torch):
            xt = T.tensor(_LOGITS, requires_grad=True)
            yt = f(T, xt)
            (g,) = T.autograd.grad(yt.sum(), xt, create_graph=True)
            (h,) = T.autograd.grad(g.sum(), xt)
            res.append((yt.detach().numpy(), g.detach().numpy(), h.numpy()))
        (v, g, h), (tv, tg, th) = res
        # PyTorch's soft_margin_loss computes log(1 + exp(1e4)) = inf (its gradient NaN) where
        # lightgrad's is 1e4 (gradient -1): compared where PyTorch's is finite
        for mine, theirs in ((v, tv), (g, tg)):
            finite = np.isfinite(theirs)
            np.testing.assert_allclose(mine[finite], theirs[finite], rtol=1e-10, atol=1e-15, err_msg=name)
        # PyTorch's second derivative of softplus is 0 at the threshold itself, where its first is
        # sigmoid(20); lightgrad's follows the first. Near +-40 the exact second derivatives are 4e-18,
        # and each library rounds one of them to 0.
        keep = np.isfinite(th) & ((_LOGITS != 20) if name == "softplus" else True)
        np.testing.assert_allclose(h[keep], th[keep], rtol=1e-10, atol=1e-15, err_msg=name)


@needs_torch
@pytest.mark.parametrize("beta,threshold", [(1.0, 20.0), (2.0, 5.0)])
def test_softplus_values_and_gradients_match_torch_at_zero_and_the_threshold(beta: float, threshold: float) -> None:
    x0 = np.array([-30.0, -1.0, 0.0, 1e-3, 2.0, 2.4, 2.6, 10.0, 40.0])  # (not at the threshold itself)
    res = []
    for T in (torch, lg):
        x = T.tensor(x0, requires_grad=True)
        y = T.nn.functional.softplus(x, beta, threshold)
        (g,) = T.autograd.grad(y.sum(), x, create_graph=True)
        g.sum().backward()
        res.append((y.detach().numpy(), g.detach().numpy(), x.grad.numpy()))
    for got, want in zip(res[1], res[0]):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-300)


@needs_torch
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_inplace_activations_match_torch(dtype: str) -> None:
    rng = np.random.default_rng(11)
    x = rng.standard_normal((4, 5)).astype(dtype)
    g = rng.standard_normal((4, 5)).astype(dtype)
    # alpha 0.5: PyTorch's celu rounds 1/alpha to float32 even for float64 input
    for name, kw in [("celu_", dict(alpha=0.5)), ("selu_", {}), ("rrelu_", dict(lower=0.1, upper=0.3))]:
        tx, lx = torch.tensor(x, requires_grad=True), lg.tensor(x, requires_grad=True)
        ty, ly = tx * 1, lx * 1
        tr, lr = getattr(TF, name)(ty, **kw), getattr(LF, name)(ly, **kw)
        assert lr is ly and tr is ty
        assert_close_by_dtype(numpy_of(ly), numpy_of(ty), dtype, name)
        ty.backward(torch.tensor(g))
        ly.backward(lg.tensor(g))
        assert_close_by_dtype(numpy_of(lx.grad), numpy_of(tx.grad), dtype, name)
    lx = lg.tensor(-np.abs(x), requires_grad=True)
    ly = lx * 1
    LF.rrelu_(ly, 0.1, 0.3, training=True)
    slope = ly.detach().numpy() / lx.detach().numpy()
    assert ((slope >= 0.1) & (slope <= 0.3)).all() and slope.std() > 0


@needs_torch
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


# ---- GELU: the fused kernel, its gradient written over its saved derivative ----------------------

@needs_torch
@pytest.mark.parametrize("approximate", ["none", "tanh"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gelu_matches_torch_to_second_order(approximate: str, dtype: Any) -> None:
    x0 = (RNG.standard_normal((4, 33)) * 3).astype(dtype)
    res = []
    for T in (torch, lg):
        x = T.tensor(x0, requires_grad=True)
        y = T.nn.functional.gelu(x, approximate=approximate)
        (g,) = T.autograd.grad((y * y).sum(), x, create_graph=True)
        (gg,) = T.autograd.grad(g.sum(), x)
        res.append([y.detach().numpy(), g.detach().numpy(), gg.numpy()])
    tol = 2e-6 if dtype == np.float32 else 1e-12
    for k, (ours, theirs) in enumerate(zip(res[1], res[0])):
        # float32 second derivatives differ in rounding: 1 - tanh^2 cancels where tanh is near 1
        rtol = 1e-4 if k == 2 and dtype == np.float32 else tol * 10
        np.testing.assert_allclose(ours, theirs, rtol=rtol, atol=tol)


@needs_torch
def test_gelu_without_grad_and_on_ints() -> None:
    with lg.no_grad():
        y = lg.nn.functional.gelu(lg.tensor([1.0, -1.0]))
    np.testing.assert_allclose(y.numpy(), torch.nn.functional.gelu(torch.tensor([1.0, -1.0])).numpy(), rtol=1e-6)
    with pytest.raises(NotImplementedError):
        torch.nn.functional.gelu(torch.tensor([1, 2]))
    with pytest.raises(NotImplementedError):
        lg.nn.functional.gelu(lg.tensor([1, 2]))


@needs_torch
@pytest.mark.parametrize("twice", [False, True], ids=["once", "retained"])
def test_gelu_gradient_matches_torch(twice: bool) -> None:
    x0 = (RNG.standard_normal((4, 50, 33)) * 3).astype(np.float32)
    seed = RNG.standard_normal(x0.shape).astype(np.float32)
    ours = outputs_and_grads(lg, lambda T, x: T.nn.functional.gelu(x), [x0], seed, twice=twice)
    theirs = outputs_and_grads(torch, lambda T, x: T.nn.functional.gelu(x), [x0], seed)
    for o, t in zip(ours, theirs):
        np.testing.assert_allclose(o, t, rtol=2e-5, atol=2e-6)


@needs_torch
def test_gelu_kernel_matches_erf_across_float32() -> None:
    # every float32 in [-10, 10] at a fine step, against erf in float64
    x = np.linspace(-10, 10, 400_001).astype(np.float32)
    xd = x.astype(np.float64)
    phi = 0.5 * (1 + np.array([float(torch.erf(torch.tensor(v / np.sqrt(2), dtype=torch.float64))) for v in xd[::97]]))
    out, d = B.gelu(x, "none", True)
    ref = xd[::97] * phi
    dref = phi + xd[::97] * np.exp(-0.5 * xd[::97] ** 2) / np.sqrt(2 * np.pi)
    np.testing.assert_allclose(out[::97], ref, rtol=2e-6, atol=5e-7)
    np.testing.assert_allclose(d[::97], dref, rtol=2e-6, atol=5e-7)


# ---- softmax: the backward by one dot-product pass, the shift-free path, exp times 1 / sum -------

@needs_torch
@pytest.mark.parametrize("dim", [-1, 1])
def test_softmax_gradient_matches_torch(dim: int) -> None:
    x0 = RNG.standard_normal((4, 6, 16, 16)).astype(np.float32)
    seed = RNG.standard_normal(x0.shape).astype(np.float32)
    ours = outputs_and_grads(lg, lambda T, x: x.softmax(dim), [x0], seed)
    theirs = outputs_and_grads(torch, lambda T, x: x.softmax(dim), [x0], seed)
    for o, t in zip(ours, theirs):
        np.testing.assert_allclose(o, t, rtol=1e-5, atol=1e-6)


@needs_torch
def test_softmax_gradient_of_a_sum() -> None:
    # the gradient of .sum() arrives as a broadcast of one 1 (all strides 0): softmax's rows sum
    # to 1, so the input gradient is 0
    x0 = RNG.standard_normal((8, 64, 64)).astype(np.float32)
    for T in (lg, torch):
        x = T.tensor(x0, requires_grad=True)
        x.softmax(-1).sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), 0, atol=1e-6)


def test_dot_along_matches_numpy() -> None:
    x = RNG.standard_normal((3, 4, 5))
    y = RNG.standard_normal((4, 5))
    for axis in (0, 1, 2, -1):
        a = axis if axis < 0 else axis
        np.testing.assert_allclose(B.dot_along(x, np.broadcast_to(y, x.shape), a), (x * y).sum(a, keepdims=True))
    np.testing.assert_allclose(B.dot_along(x, y, -1), (x * y).sum(-1, keepdims=True))


@needs_torch
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_softmax_is_exponentials_times_reciprocal_sum(dtype: Any) -> None:
    x = (RNG.standard_normal((4, 4, 16, 16)) * 3).astype(dtype)
    got = B.softmax(x, 3)
    e = np.exp(x - x.max(3, keepdims=True))
    s = e.sum(3, keepdims=True)
    # PyTorch's kernel multiplies by 1 / sum: within a rounding of exp / sum, and summing to 1
    np.testing.assert_allclose(got, e / s, rtol=4 * np.finfo(dtype).eps, atol=0)
    np.testing.assert_allclose(got.sum(3), 1, rtol=32 * np.finfo(dtype).eps)
    want = torch.softmax(torch.tensor(x), 3).numpy()
    np.testing.assert_allclose(got, want, rtol=8 * np.finfo(dtype).eps, atol=np.finfo(dtype).tiny)


def test_softmax_gradient_matches_finite_differences() -> None:
    x0 = RNG.standard_normal((3, 5, 7))
    seed = RNG.standard_normal((3, 5, 7))
    x = lg.tensor(x0, requires_grad=True)
    (x.softmax(1) * lg.tensor(seed)).sum().backward()

    def f(a: np.ndarray) -> float:
        e = np.exp(a - a.max(1, keepdims=True))
        return float(np.sum(e / e.sum(1, keepdims=True) * seed))

    num = np.zeros_like(x0)
    for i in np.ndindex(x0.shape):
        a = x0.copy()
        a[i] += 1e-6
        hi = f(a)
        a[i] -= 2e-6
        num[i] = (hi - f(a)) / 2e-6
    np.testing.assert_allclose(x.grad.numpy(), num, rtol=1e-6, atol=1e-8)


def _causal_scores(shift: float, scale: float) -> np.ndarray:
    a = (RNG.standard_normal((4, 2, 64, 64)) * scale + shift).astype(np.float32)
    a[..., np.triu(np.ones((64, 64), bool), 1)] = -np.inf
    return a


@needs_torch
@pytest.mark.parametrize("shift,scale", [(0.0, 1.0), (0.0, 100.0), (-30.0, 1.0), (55.0, 1.0), (-5.0, 0.1)],
                         ids=["plain", "overflowing", "vanishing", "near_limit", "small_sums"])
def test_softmax_with_and_without_the_shift_matches_torch(shift: float, scale: float) -> None:
    a = _causal_scores(shift, scale)
    assert a.size >= B._SOFTMAX_SHIFTLESS_MIN  # the size where the shift-free path is tried
    ours = B.softmax(a, 3)
    theirs = torch.softmax(torch.tensor(a), -1).numpy()
    np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-7)
    x = lg.tensor(a, requires_grad=True)
    xt = torch.tensor(a, requires_grad=True)
    g = RNG.standard_normal(a.shape).astype(np.float32)
    (x.softmax(-1) * lg.tensor(g)).sum().backward()
    (xt.softmax(-1) * torch.tensor(g)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-4, atol=1e-6)


@needs_torch
@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # NaN in, NaN out
def test_softmax_rows_of_only_minus_inf_and_nan_are_nan_like_torch() -> None:
    a = _causal_scores(0.0, 1.0)
    a[0, 0, 5] = -np.inf
    a[1, 1, 7, 3] = np.nan
    ours = B.softmax(a, 3)
    theirs = torch.softmax(torch.tensor(a), -1).numpy()
    np.testing.assert_array_equal(np.isnan(ours), np.isnan(theirs))
    ok = ~np.isnan(theirs)
    np.testing.assert_allclose(ours[ok], theirs[ok], rtol=1e-5, atol=1e-7)


@needs_torch
def test_softmax_along_a_middle_axis_matches_torch() -> None:
    a = RNG.standard_normal((8, 40, 70)).astype(np.float64)
    np.testing.assert_allclose(B.softmax(a, 1), torch.softmax(torch.tensor(a), 1).numpy(), rtol=1e-12)


# ---- randomness: dropout -------------------------------------------------------------------------

def test_dropout_statistics_and_gradient() -> None:
    lg.manual_seed(0)
    x = lg.ones(200, 50, requires_grad=True)
    y = lg.nn.functional.dropout(x, 0.3)
    kept = y.detach().numpy() != 0
    assert abs(kept.mean() - 0.7) < 0.02
    np.testing.assert_allclose(y.detach().numpy()[kept], 1 / 0.7, rtol=1e-6)
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), kept / 0.7, rtol=1e-6)


def test_dropout_seeded_and_modes() -> None:
    m = lg.nn.Dropout(0.5)
    lg.manual_seed(3)
    a = m(lg.ones(10, 10)).numpy()
    lg.manual_seed(3)
    b = m(lg.ones(10, 10)).numpy()
    np.testing.assert_array_equal(a, b)
    x = lg.randn(4, 4)
    assert m.eval()(x) is x
    assert lg.nn.functional.dropout(x, 1.0).numpy().sum() == 0
    with pytest.raises(ValueError, match="between 0 and 1"):
        lg.nn.Dropout(1.5)


def test_dropout2d_drops_whole_channels() -> None:
    lg.manual_seed(1)
    y = lg.nn.Dropout2d(0.5)(lg.ones(8, 6, 3, 3)).numpy()
    per_channel = y.reshape(8, 6, -1)
    assert ((per_channel == 0).all(-1) | (per_channel == 2.0).all(-1)).all()
    assert 0 < (per_channel == 0).all(-1).mean() < 1
    y3 = lg.nn.functional.dropout2d(lg.ones(4, 5, 7), 0.5).numpy()  # (N, C, L), as PyTorch
    assert ((y3 == 0).all(-1) | (y3 == 2.0).all(-1)).all()


def test_alpha_dropout_keeps_mean_and_variance() -> None:
    lg.manual_seed(2)
    x = lg.randn(400, 500)
    m = lg.nn.AlphaDropout(0.3)
    y = m(x).numpy()
    assert abs(y.mean()) < 0.01 and abs(y.std() - 1) < 0.01
    assert m.eval()(x) is x


@needs_torch
def test_feature_alpha_dropout() -> None:
    lg.manual_seed(1)
    p = 0.3
    x = lg.randn(40, 8, 5, requires_grad=True)
    m = lg.nn.FeatureAlphaDropout(p)
    assert repr(m) == repr(torch.nn.FeatureAlphaDropout(p))
    y = m(x)
    # PyTorch's constants: alpha' = -SELU scale * alpha; a, b from its formula
    alpha = -TF.selu(torch.tensor(-1e4, dtype=torch.float64)).item()
    a = 1.0 / math.sqrt((alpha * alpha * p + 1) * (1 - p))
    kept, dropped = numpy_of(x) * a + alpha * a * p, np.broadcast_to(-alpha * a + alpha * a * p, x.shape)
    is_kept = np.isclose(numpy_of(y), kept, rtol=1e-5, atol=1e-5).all(axis=2)
    is_dropped = np.isclose(numpy_of(y), dropped, rtol=1e-5, atol=1e-5).all(axis=2)
    assert (is_kept | is_dropped).all()  # one draw per (sample, channel)
    assert 0.15 < is_dropped.mean() < 0.45
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.broadcast_to((is_kept * a)[..., None], x.shape), rtol=1e-6)
    m.eval()
    assert m(x) is x
    z = lg.randn(4, 3)
    assert LF.feature_alpha_dropout(z, 1.0, True).abs().sum().item() == 0
    for mod in (torch, lg):
        with pytest.raises(ValueError):
            mod.nn.functional.feature_alpha_dropout(mod.ones(3, 3), 1.5, True)
        with pytest.raises(RuntimeError):
            mod.nn.functional.feature_alpha_dropout(mod.ones(3), 0.5, True)


# ---- Embedding, EmbeddingBag ---------------------------------------------------------------------

def test_embedding_padding_idx_row_gets_no_gradient() -> None:
    emb = lg.nn.Embedding(5, 3, padding_idx=2)
    np.testing.assert_array_equal(emb.weight.detach().numpy()[2], 0)
    out = emb(lg.tensor([[2, 1, 2], [4, 2, 0]]))
    out.sum().backward()
    g = emb.weight.grad.numpy()
    np.testing.assert_array_equal(g[2], 0)
    np.testing.assert_array_equal(g[1], 1)
    np.testing.assert_array_equal(g[3], 0)


def test_embedding_from_pretrained_and_errors() -> None:
    w = lg.randn(4, 2)
    emb = lg.nn.Embedding.from_pretrained(w)
    assert not emb.weight.requires_grad and emb.weight.data_ptr() == w.data_ptr()
    assert lg.nn.Embedding.from_pretrained(w, freeze=False).weight.requires_grad
    with pytest.raises(IndexError):
        emb(lg.tensor([4]))
    with pytest.raises(RuntimeError, match="Long, Int"):
        emb(lg.tensor([1.0]))
    with pytest.raises(AssertionError, match="Padding_idx"):
        lg.nn.Embedding(3, 2, padding_idx=3)


@needs_torch
def test_embedding_max_norm_renormalizes_like_torch() -> None:
    w = np.random.default_rng(0).standard_normal((6, 3)) * 3
    idx = np.array([[0, 2, 2], [5, 1, 0]])
    lw, tw = lg.tensor(w), torch.tensor(w)
    lo = lg.nn.functional.embedding(lg.tensor(idx), lw, max_norm=1.5)
    to = torch.nn.functional.embedding(torch.tensor(idx), tw, max_norm=1.5)
    np.testing.assert_allclose(lo.numpy(), to.numpy(), rtol=1e-6)
    np.testing.assert_allclose(lw.numpy(), tw.numpy(), rtol=1e-6)


@needs_torch
def test_position_embedding_gradient_matches_torch() -> None:
    # pos(arange(L)) broadcast over a batch: the rows' gradients are the batch sums, one per row
    L, d = 64, 16
    w0 = RNG.standard_normal((L, d)).astype(np.float32)
    tok0 = RNG.standard_normal((5, L, d)).astype(np.float32)
    seed = RNG.standard_normal((5, L, d)).astype(np.float32)
    grads = []
    for T in (lg, torch):
        emb = T.nn.Embedding(L, d)
        with T.no_grad():
            emb.weight.copy_(T.tensor(w0))
        y = T.tensor(tok0) + emb(T.arange(L))
        (y * T.tensor(seed)).sum().backward()
        grads.append(emb.weight.grad.numpy())
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(grads[0], seed.sum(0), rtol=1e-5, atol=1e-5)


def _bag_cases(n: int, seed: int) -> list[dict[str, Any]]:
    r = random.Random(seed)
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        num, dim = r.randint(1, 7), r.randint(1, 4)
        mode = r.choice(["sum", "mean", "max"])
        if r.random() < 0.3:
            idx, offs, last = rng.integers(0, num, (r.randint(0, 4), r.randint(1, 4))), None, False
        else:
            m, nb = r.randint(0, 10), r.randint(1, 5)
            idx = rng.integers(0, num, m)
            offs = np.sort(rng.integers(0, m + 1, nb))
            offs[0] = 0
            last = r.random() < 0.4 and nb > 1
            if last:  # (the CSR form: PyTorch's kernels disagree with each other past offsets[-1])
                offs[-1] = m
        psw = mode == "sum" and r.random() < 0.5
        out.append(dict(num=num, dim=dim, idx=idx, offs=offs, mode=mode, include_last_offset=last, psw=psw,
                        padding_idx=r.choice([None, None, 0, num - 1, -1])))
    return out


@needs_torch
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_embedding_bag_matches_torch(dtype: str) -> None:
    rng = np.random.default_rng(7)
    for c in _bag_cases(120, 8):
        w = rng.standard_normal((c["num"], c["dim"])).astype(dtype)
        psw = rng.standard_normal(c["idx"].shape).astype(dtype) if c["psw"] else None
        tw, lw = torch.tensor(w, requires_grad=True), lg.tensor(w, requires_grad=True)
        tp = torch.tensor(psw, requires_grad=True) if psw is not None else None
        lp = lg.tensor(psw, requires_grad=True) if psw is not None else None
        kw = dict(mode=c["mode"], include_last_offset=c["include_last_offset"], padding_idx=c["padding_idx"])
        offs = c["offs"]
        to = TF.embedding_bag(torch.tensor(c["idx"]), tw, None if offs is None else torch.tensor(offs),
                              per_sample_weights=tp, **kw)
        lo = LF.embedding_bag(lg.tensor(c["idx"]), lw, None if offs is None else lg.tensor(offs),
                              per_sample_weights=lp, **kw)
        assert tuple(lo.shape) == tuple(to.shape)
        assert_close_by_dtype(numpy_of(lo), numpy_of(to), dtype, str(c))
        if not to.numel():
            continue
        g = rng.standard_normal(tuple(to.shape)).astype(dtype)
        to.backward(torch.tensor(g))
        lo.backward(lg.tensor(g))
        assert_close_by_dtype(lw.grad.numpy(), tw.grad.numpy(), dtype, str(c))
        if psw is not None:
            assert_close_by_dtype(lp.grad.numpy() if lp.grad is not None else np.zeros_like(psw), tp.grad.numpy(),
                                  dtype)


@needs_torch
def test_embedding_bag_module_and_state_dict() -> None:
    rng = np.random.default_rng(9)
    for kw in [dict(mode="sum"), dict(mode="max", padding_idx=2), dict(include_last_offset=True)]:
        lg.manual_seed(0)
        tm, lm = torch.nn.EmbeddingBag(6, 3, **kw).double(), lg.nn.EmbeddingBag(6, 3, **kw).double()
        assert repr(lm) == repr(tm)
        if "padding_idx" in kw:
            assert not lm.weight.detach().numpy()[2].any()
        lm.load_state_dict(state_to_lg(tm.state_dict()))
        idx, offs = rng.integers(0, 6, 9), np.array([0, 3, 3, 9] if kw.get("include_last_offset") else [0, 4, 4])
        to, lo = tm(torch.tensor(idx), torch.tensor(offs)), lm(lg.tensor(idx), lg.tensor(offs))
        assert_close_by_dtype(numpy_of(lo), numpy_of(to), "float64")
        to.sum().backward()
        lo.sum().backward()
        assert_close_by_dtype(lm.weight.grad.numpy(), tm.weight.grad.numpy(), "float64")
        tm2 = torch.nn.EmbeddingBag(6, 3, **kw).double()
        tm2.load_state_dict(state_to_torch(lm.state_dict()))
        assert_close_by_dtype(numpy_of(tm2.weight), numpy_of(lm.weight), "float64")


@needs_torch
def test_embedding_bag_from_pretrained() -> None:
    w = np.random.default_rng(10).standard_normal((5, 2))
    for freeze in [True, False]:
        tm = torch.nn.EmbeddingBag.from_pretrained(torch.tensor(w), freeze=freeze, mode="max")
        lm = lg.nn.EmbeddingBag.from_pretrained(lg.tensor(w), freeze=freeze, mode="max")
        assert lm.weight.requires_grad == tm.weight.requires_grad == (not freeze)
        x = np.array([[0, 4], [3, 3], [1, 2]])
        assert_close_by_dtype(numpy_of(lm(lg.tensor(x))), numpy_of(tm(torch.tensor(x))), "float64")
    with pytest.raises(AssertionError):
        lg.nn.EmbeddingBag.from_pretrained(lg.ones(5))


@needs_torch
@pytest.mark.parametrize("call", [
    lambda F, t, w: F.embedding_bag(t.tensor([[0, 1]]), w, t.tensor([0])),  # 2-D input with offsets
    lambda F, t, w: F.embedding_bag(t.tensor([0, 1]), w),  # 1-D input without offsets
    lambda F, t, w: F.embedding_bag(t.tensor([[[0]]]), w),  # 3-D input
    lambda F, t, w: F.embedding_bag(t.tensor([0, 1]), w, t.tensor([0]), mode="median"),
    lambda F, t, w: F.embedding_bag(t.tensor([0, 1]), w, t.tensor([0]), per_sample_weights=t.ones(2, dtype=w.dtype)),
    lambda F, t, w: F.embedding_bag(t.tensor([0, 1]), w, t.tensor([0]), mode="sum", per_sample_weights=t.ones(3)),
    lambda F, t, w: F.embedding_bag(t.tensor([0, 1]), w, t.tensor([0]), mode="max", scale_grad_by_freq=True),
    lambda F, t, w: F.embedding_bag(t.tensor([0, 1]), w, t.tensor([1]), mode="sum"),  # offsets[0] != 0
    lambda F, t, w: F.embedding_bag(t.tensor([0, 1]), w, t.tensor([0, 5]), mode="sum"),  # offsets past the end
    lambda F, t, w: F.embedding_bag(t.tensor([0.0, 1.0]), w, t.tensor([0]), mode="sum"),  # float indices
    lambda F, t, w: F.embedding_bag(t.tensor([0, 1]), w[0], t.tensor([0])),  # 1-D weight
])
def test_embedding_bag_errors_match_torch(call: Any) -> None:
    with pytest.raises(Exception) as te:
        call(TF, torch, torch.ones(4, 2, dtype=torch.float64))
    lw = lg.ones(4, 2, dtype=lg.float64)
    with pytest.raises(type(te.value)):
        call(LF, lg, lw)


@needs_torch
def test_embedding_bag_max_norm_renormalises_before_errors_none() -> None:
    w = np.random.default_rng(11).standard_normal((5, 3)) * 3
    tw, lw = torch.tensor(w), lg.tensor(w)
    idx = np.array([0, 2, 2, 4])
    to = TF.embedding_bag(torch.tensor(idx), tw, torch.tensor([0, 1]), max_norm=1.0, mode="sum")
    lo = LF.embedding_bag(lg.tensor(idx), lw, lg.tensor([0, 1]), max_norm=1.0, mode="sum")
    assert_close_by_dtype(numpy_of(lo), numpy_of(to), "float64")
    assert_close_by_dtype(lw.numpy(), tw.numpy(), "float64")  # the used rows were rescaled in place, as PyTorch
    before = lw.numpy().copy()
    with pytest.raises(NotImplementedError):  # a bad call changes nothing
        LF.embedding_bag(lg.tensor(idx), lw, lg.tensor([0, 1]), max_norm=0.1, mode="mean",
                         per_sample_weights=lg.ones(4, dtype=lg.float64))
    np.testing.assert_array_equal(lw.numpy(), before)


# ---- normalization: batch norm, layer norm (its backward by blocks of rows), instance norms ------

@needs_torch
def test_batchnorm_running_stats_over_steps() -> None:
    for momentum in (0.1, None):
        tm, lm = torch.nn.BatchNorm2d(3, momentum=momentum), lg.nn.BatchNorm2d(3, momentum=momentum)
        for step in range(3):
            x = np.random.default_rng(step).standard_normal((4, 3, 2, 2)).astype(np.float32) * (step + 1) + step
            tm(torch.tensor(x))
            lm(lg.tensor(x))
        for k, v in tm.state_dict().items():
            np.testing.assert_allclose(lm.state_dict()[k].numpy(), v.numpy(), rtol=1e-5, atol=1e-6)
        assert int(lm.num_batches_tracked) == 3


def test_batchnorm_errors_leave_state_unchanged() -> None:
    bn = lg.nn.BatchNorm1d(3)
    with pytest.raises(ValueError, match="more than 1 value per channel"):
        bn(lg.randn(1, 3))
    with pytest.raises(ValueError, match="expected 2D or 3D input"):
        bn(lg.randn(2, 3, 4, 5))
    with pytest.raises(RuntimeError, match="running_mean should contain"):
        bn(lg.randn(2, 4))
    assert int(bn.num_batches_tracked) == 0
    np.testing.assert_array_equal(bn.running_mean.numpy(), 0)


def _ln(T: Any, x: Any, w: Any, b: Any) -> Any:
    return T.nn.functional.layer_norm(x, (x.shape[-1],), w, b)


def _ln_plain(T: Any, x: Any) -> Any:
    return T.nn.functional.layer_norm(x, (x.shape[-1],))


# (3, 300, 40): 900 rows, more than one block of rows (the last one partial)
@needs_torch
@pytest.mark.parametrize("shape", [(3, 300, 40), (5, 7)], ids=["blocks", "one_block"])
@pytest.mark.parametrize("twice", [False, True], ids=["once", "retained"])
def test_layer_norm_gradients_match_torch(shape: tuple[int, ...], twice: bool) -> None:
    x0 = (RNG.standard_normal(shape) * 3 + 5).astype(np.float32)  # a mean far from 0
    w0, b0 = RNG.standard_normal(shape[-1:]).astype(np.float32), RNG.standard_normal(shape[-1:]).astype(np.float32)
    seed = RNG.standard_normal(shape).astype(np.float32)
    ours = outputs_and_grads(lg, _ln, [x0, w0, b0], seed, twice=twice)
    theirs = outputs_and_grads(torch, _ln, [x0, w0, b0], seed)
    for o, t in zip(ours, theirs):
        np.testing.assert_allclose(o, t, rtol=1e-4, atol=2e-5)


@needs_torch
def test_layer_norm_without_affine_matches_finite_differences() -> None:
    x0 = RNG.standard_normal((600, 8))  # float64, 600 rows: several blocks
    seed = RNG.standard_normal((600, 8))
    x = lg.tensor(x0, requires_grad=True)
    (lg.nn.functional.layer_norm(x, (8,)) * lg.tensor(seed)).sum().backward()

    def loss(a: np.ndarray) -> float:
        return float((lg.nn.functional.layer_norm(lg.tensor(a), (8,)) * lg.tensor(seed)).sum().item())
    eps = 1e-6
    for i, j in [(0, 0), (311, 5), (599, 7)]:
        d = np.zeros_like(x0)
        d[i, j] = eps
        fd = (loss(x0 + d) - loss(x0 - d)) / (2 * eps)
        np.testing.assert_allclose(x.grad.numpy()[i, j], fd, rtol=1e-5, atol=1e-7)


# (3, 700, 128): 2100 rows, five blocks of rows, the last one partial
@needs_torch
@pytest.mark.parametrize("need", [[True, True, True], [True, False, False], [False, True, True], [False, True, False]],
                         ids=["all", "input_only", "affine_only", "weight_only"])
def test_layer_norm_backward_blocks_match_torch(need: list[bool]) -> None:
    shape = (3, 700, 128)
    x0 = (RNG.standard_normal(shape) * 3 + 5).astype(np.float32)  # a mean far from 0
    w0, b0 = RNG.standard_normal(128).astype(np.float32), RNG.standard_normal(128).astype(np.float32)
    seed = RNG.standard_normal(shape).astype(np.float32)
    ours = outputs_and_grads(lg, _ln, [x0, w0, b0], seed, need)
    theirs = outputs_and_grads(torch, _ln, [x0, w0, b0], seed, need)
    for o, t in zip(ours, theirs):
        if t is None:
            assert o is None
        else:
            # 2e-4: the weight and bias gradients sum 2,100 rows, where PyTorch's float32 sums err up to
            # 1.1e-4 from the float64 value (ours 2.5e-5: test_layer_norm_weight_gradient_is_accurate)
            np.testing.assert_allclose(o, t, rtol=1e-4, atol=2e-4)


def test_layer_norm_weight_gradient_is_accurate() -> None:
    """The weight gradient, a column sum over many rows that cancels, within 5e-5 of its float64 value."""
    rng = np.random.default_rng(5)
    x0 = (rng.standard_normal((3, 700, 128)) * 3 + 5).astype(np.float32)
    w0 = rng.standard_normal(128).astype(np.float32)
    seed = rng.standard_normal((3, 700, 128)).astype(np.float32)
    x, w = lg.tensor(x0, requires_grad=True), lg.tensor(w0, requires_grad=True)
    (LF.layer_norm(x, (128,), w) * lg.tensor(seed)).sum().backward()
    x64 = x0.astype(np.float64)
    xhat = (x64 - x64.mean(-1, keepdims=True)) / np.sqrt(x64.var(-1, keepdims=True) + 1e-5)
    exact = (seed.astype(np.float64) * xhat).sum((0, 1))
    np.testing.assert_allclose(w.grad.numpy(), exact, rtol=0, atol=5e-5)


@needs_torch
def test_layer_norm_without_affine_over_blocks_matches_finite_differences() -> None:
    x0 = RNG.standard_normal((9000, 16))  # float64, 9000 rows: two blocks, the last one partial
    seed = RNG.standard_normal((9000, 16))
    x = lg.tensor(x0, requires_grad=True)
    (_ln_plain(lg, x) * lg.tensor(seed)).sum().backward()

    def loss(a: np.ndarray) -> float:
        return float((_ln_plain(lg, lg.tensor(a)) * lg.tensor(seed)).sum().item())
    eps = 1e-6
    for i, j in [(0, 0), (4100, 5), (8999, 15)]:
        d = np.zeros_like(x0)
        d[i, j] = eps
        fd = (loss(x0 + d) - loss(x0 - d)) / (2 * eps)
        np.testing.assert_allclose(x.grad.numpy()[i, j], fd, rtol=1e-5, atol=1e-7)


@needs_torch
@pytest.mark.parametrize("affine", [True, False])
def test_layer_norm_double_backward(affine: bool) -> None:
    rng = np.random.default_rng(0)
    x, w, b, r = rng.standard_normal((3, 4)), rng.standard_normal(4), rng.standard_normal(4), rng.standard_normal((3, 4))
    results = []
    for T in (lg, torch):
        xt = T.tensor(x, requires_grad=True)
        wt, bt = (T.tensor(w, requires_grad=True), T.tensor(b, requires_grad=True)) if affine else (None, None)
        y = T.nn.functional.layer_norm(xt, (4,), wt, bt)
        (g,) = T.autograd.grad((y * T.tensor(r)).sum(), xt, create_graph=True)
        (g * g).sum().backward()
        results.append([xt.grad.numpy()] + ([wt.grad.numpy()] if affine else []))
    for a, e in zip(*results):
        np.testing.assert_allclose(a, e, rtol=1e-7, atol=1e-10)


@needs_torch
@pytest.mark.parametrize("cls, nd", [("InstanceNorm1d", 1), ("InstanceNorm2d", 2), ("InstanceNorm3d", 3)])
@pytest.mark.parametrize("affine, track, momentum", [(False, False, 0.1), (True, False, 0.1), (True, True, 0.3),
                                                     (False, True, None)])
def test_instance_norm_matches_torch(cls: str, nd: int, affine: bool, track: bool, momentum: Any) -> None:
    rng = np.random.default_rng(12)
    kw = dict(affine=affine, track_running_stats=track, momentum=momentum)
    tm, lm = getattr(torch.nn, cls)(3, **kw).double(), getattr(lg.nn, cls)(3, **kw).double()
    assert list(lm.state_dict()) == list(tm.state_dict()) and repr(lm) == repr(tm)
    if affine:
        with torch.no_grad():
            tm.weight.normal_()
            tm.bias.normal_()
    lm.load_state_dict(state_to_lg(tm.state_dict()))
    for train, batched in [(True, True), (True, False), (False, True), (True, True), (False, False)]:
        tm.train(train)
        lm.train(train)
        x = rng.standard_normal(((2,) if batched else ()) + (3,) + (4,) * nd)
        tx, lx = torch.tensor(x, requires_grad=True), lg.tensor(x, requires_grad=True)
        to, lo = tm(tx), lm(lx)
        g = rng.standard_normal(tuple(to.shape))
        to.backward(torch.tensor(g))
        lo.backward(lg.tensor(g))
        assert_close_by_dtype(numpy_of(lo), numpy_of(to), "float64")
        assert_close_by_dtype(lx.grad.numpy(), tx.grad.numpy(), "float64")
        for k, v in tm.state_dict().items():
            assert_close_by_dtype(lm.state_dict()[k].numpy(), v.numpy(), "float64", k)
        for name, p in tm.named_parameters():
            assert_close_by_dtype(getattr(lm, name).grad.numpy(), p.grad.numpy(), "float64", name)


def test_instance_norm3d_input_checks() -> None:
    m = lg.nn.InstanceNorm3d(3, affine=True)
    with pytest.raises(ValueError, match="expected 4D or 5D input"):
        m(lg.randn(3, 4, 4))
    with pytest.raises(ValueError, match="num_features"):
        m(lg.randn(2, 4, 2, 2, 2))
    with pytest.raises(ValueError, match="num_features"):
        m(lg.randn(4, 2, 2, 2))


# ---- distances and local response norm in float64 and float32 ------------------------------------

@needs_torch
class TestDistancesAndLocalResponseNorm:
    """Cosine similarity, pairwise distance, pdist and local response norm in float64 (tight) and
    float32 against PyTorch (the both-precisions table: see helpers.check_case_in_precision), and
    their errors with PyTorch's types and messages."""

    PRECISION_CASES: list[Case] = [
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
    ]

    MESSAGE_ERRORS: list[tuple[str, Callable[[Any], Any]]] = [
        ("pdist_3d", lambda T: T.nn.functional.pdist(T.zeros(2, 3, 4))),
        ("pdist_neg_p", lambda T: T.nn.functional.pdist(T.zeros(3, 4), p=-1)),
        ("lrn_2d", lambda T: T.nn.functional.local_response_norm(T.zeros(3, 4), 2)),
    ]

    @pytest.mark.parametrize("name,fn,specs,fd", PRECISION_CASES, ids=[c[0] for c in PRECISION_CASES])
    @pytest.mark.parametrize("precision", ["float64", "float32"])
    def test_against_torch(self, name: str, fn: Callable[..., Any], specs: list[Any], fd: bool, precision: str) -> None:
        check_case_in_precision(name, fn, specs, fd, precision)

    @pytest.mark.parametrize("name,call", MESSAGE_ERRORS, ids=[e[0] for e in MESSAGE_ERRORS])
    def test_errors_match_torch(self, name: str, call: Callable[[Any], Any]) -> None:
        assert_error_like_torch(name, call, set())


# ---- errors, one_hot -----------------------------------------------------------------------------

@needs_torch
@pytest.mark.parametrize("call", [
    lambda T: T.nn.functional.cross_entropy(T.randn(3, 5), T.tensor([0, 1, 7])),
    lambda T: T.nn.functional.cross_entropy(T.randn(3, 5), T.tensor([0, 1])),
    lambda T: T.nn.functional.cross_entropy(T.randn(3, 5, 2), T.tensor([0, 1, 2])),
    lambda T: T.nn.functional.cross_entropy(T.randn(3, 5), T.tensor([0, 1, 2]), label_smoothing=1.5),
    lambda T: T.nn.functional.nll_loss(T.randn(3, 5), T.tensor([0, 1, -1])),
    lambda T: T.nn.functional.binary_cross_entropy(T.rand(3), T.rand(3, 1)),
    lambda T: T.nn.functional.binary_cross_entropy(T.tensor([1.5]), T.rand(1)),
    lambda T: T.nn.functional.binary_cross_entropy_with_logits(T.randn(3), T.rand(4)),
    lambda T: T.nn.functional.mse_loss(T.randn(3), T.rand(3), reduction="foo"),
    lambda T: T.nn.functional.pad(T.rand(3), (1, 1), mode="reflect"),
    lambda T: T.nn.functional.pad(T.rand(2, 3), (3, 3), mode="reflect"),
    lambda T: T.nn.functional.pad(T.rand(2, 3), (1, 1, 1), mode="constant"),
    lambda T: T.nn.functional.pad(T.rand(2, 3), (4, 4), mode="circular"),
    lambda T: T.nn.functional.pad(T.rand(2, 3), (1, 1), mode="foo"),
    lambda T: T.nn.functional.one_hot(T.tensor([1, 5]), 3),
    lambda T: T.nn.functional.linear(T.rand(2, 3), T.rand(4, 5)),
    lambda T: T.nn.functional.layer_norm(T.rand(2, 3), (4,)),
    lambda T: T.nn.functional.group_norm(T.rand(2, 6, 4), 4),
    lambda T: T.nn.functional.dropout(T.randn(2), 1.5),
    lambda T: T.nn.functional.gelu(T.randn(2), approximate="foo"),
    lambda T: T.nn.BatchNorm2d(3)(T.randn(2, 3, 4)),
    lambda T: T.nn.GroupNorm(4, 6),
])
def test_errors_match_torch(call: Callable[[Any], Any]) -> None:
    with pytest.raises(Exception) as te, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        call(torch)
    with pytest.raises(type(te.value)), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        call(lg)


@needs_torch
def test_one_hot_matches_torch() -> None:
    idx = np.array([[0, 3], [2, 1]])
    np.testing.assert_array_equal(lg.nn.functional.one_hot(lg.tensor(idx)).numpy(),
                                  torch.nn.functional.one_hot(torch.tensor(idx)).numpy())
    out = lg.nn.functional.one_hot(lg.tensor(idx), 6)
    assert out.dtype == lg.int64 and tuple(out.shape) == (2, 2, 6)


# ---- default inits, linear's double backward -----------------------------------------------------

@needs_torch
def test_default_init_distributions_match_torch_bounds() -> None:
    lg.manual_seed(0)
    lin = lg.nn.Linear(50, 40)
    assert np.abs(lin.weight.detach().numpy()).max() <= 1 / np.sqrt(50)
    assert np.abs(lin.bias.detach().numpy()).max() <= 1 / np.sqrt(50)
    assert np.abs(lin.weight.detach().numpy()).max() > 0.95 / np.sqrt(50)
    emb = lg.nn.Embedding(300, 50).weight.detach().numpy()
    assert emb.std() == pytest.approx(1.0, rel=0.05)
    bil = lg.nn.Bilinear(20, 5, 3).weight.detach().numpy()
    assert np.abs(bil).max() <= 1 / np.sqrt(20)
    ln, tln = lg.nn.LayerNorm(4), torch.nn.LayerNorm(4)
    for k, v in tln.state_dict().items():
        np.testing.assert_array_equal(ln.state_dict()[k].numpy(), v.numpy())


@needs_torch
@pytest.mark.parametrize("shape", [(3, 4), (2, 3, 4), (4,)])
def test_linear_double_backward(shape: tuple[int, ...]) -> None:
    rng = np.random.default_rng(0)
    x, w, b = rng.standard_normal(shape), rng.standard_normal((5, 4)), rng.standard_normal(5)
    results = []
    for T in (lg, torch):
        xt, wt, bt = (T.tensor(a, requires_grad=True) for a in (x, w, b))
        y = T.nn.functional.linear(xt, wt, bt)
        gx, gw = T.autograd.grad((y * y).sum(), (xt, wt), create_graph=True)
        ((gx * gx).sum() + (gw * gw).sum()).backward()
        results.append([xt.grad.numpy(), wt.grad.numpy(), bt.grad.numpy()])
    for a, e in zip(*results):
        np.testing.assert_allclose(a, e, rtol=1e-7, atol=1e-10)


# ---- end to end ----------------------------------------------------------------------------------

def test_mlp_trains_with_hand_written_sgd() -> None:
    """A 2-16-3 MLP on three Gaussian blobs: cross-entropy falls below 0.15 within 150 SGD steps."""
    lg.manual_seed(0)
    rng = np.random.default_rng(0)
    centres = np.array([[0.0, 2.0], [2.0, -1.0], [-2.0, -1.0]])
    y = rng.integers(0, 3, 300)
    x = centres[y] + 0.5 * rng.standard_normal((300, 2))
    X, Y = lg.tensor(x, dtype=lg.float32), lg.tensor(y)
    model = lg.nn.Sequential(lg.nn.Linear(2, 16), lg.nn.ReLU(), lg.nn.Linear(16, 3))
    loss_fn = lg.nn.CrossEntropyLoss()
    first = None
    for _ in range(150):
        loss = loss_fn(model(X), Y)
        first = first if first is not None else loss.item()
        model.zero_grad()
        loss.backward()
        with lg.no_grad():
            for p in model.parameters():
                p -= 0.5 * p.grad
    final = loss_fn(model(X), Y).item()
    assert final < 0.15 < first
    acc = (model(X).argmax(1) == Y).float().mean().item()
    assert acc > 0.95
