"""Attention against PyTorch: scaled_dot_product_attention, nn.MultiheadAttention, the products attention takes.

The functional table checks values and every input gradient against PyTorch and central
differences in float64; MultiheadAttention gets PyTorch's weights through state_dict and is
compared over the mask kinds; the batched product with a transposed right operand (q @ k^T, and
g @ v^T in p @ v's backward) copies that operand to row-major first.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from helpers import (check_case_against_torch, check_case_finite_differences, check_error_case, load_from_torch,
                     needs_torch, torch)
from helpers import outputs_and_grads, random_arrays

import lightgrad as lg
import lightgrad.nn as nn
from lightgrad import backend as B

RNG = np.random.default_rng(0)


# ---- the functional table: (id, fn(F, *inputs), input shapes, constant arrays) -------------------

bool_mask = RNG.random((4, 6)) > 0.4
bool_mask[:, 0] = True
dead_mask = bool_mask.copy()
dead_mask[2] = False  # query 2 may attend to nothing: PyTorch returns zeros there


CASES: list[tuple[str, Callable[..., Any], list[tuple[int, ...]], list[np.ndarray]]] = [
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


@needs_torch
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_matches_torch(case: Any) -> None:
    """Values and gradients of every input equal PyTorch's (float64)."""
    check_case_against_torch(case, RNG)


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_gradient_matches_finite_differences(case: Any) -> None:
    """Autograd equals central differences of the lightgrad forward (float64)."""
    check_case_finite_differences(case, RNG)


ERRORS = [
    ("sdpa_causal_and_mask", lambda F, T: F.scaled_dot_product_attention(T.zeros(1, 4, 2), T.zeros(1, 4, 2), T.zeros(1, 4, 3),
                                                                          attn_mask=T.ones(4, 4), is_causal=True),
     "should not be set"),
]


@pytest.mark.parametrize("case", ERRORS, ids=[c[0] for c in ERRORS])
def test_errors(case: Any) -> None:
    """Bad shapes raise RuntimeError saying expected vs got (PyTorch's exception type)."""
    check_error_case(case)


# ---- MultiheadAttention --------------------------------------------------------------------------

@needs_torch
@pytest.mark.parametrize("kw", [dict(), dict(batch_first=True), dict(kdim=5, vdim=3), dict(add_bias_kv=True, add_zero_attn=True),
                                dict(bias=False)], ids=["plain", "batch_first", "kdim_vdim", "bias_kv", "nobias"])
@pytest.mark.parametrize("call", ["weights", "per_head", "no_weights", "masks", "masks_no_weights", "causal"])
def test_multihead_attention_matches_torch(kw: dict[str, Any], call: str) -> None:
    """state_dict keys, outputs, attention weights and all gradients, across mask kinds."""
    e, h, L, S, N = 8, 2, 4, 5, 3
    tm = torch.nn.MultiheadAttention(e, h, **kw).double()
    lm = nn.MultiheadAttention(e, h, **kw).to(lg.float64)
    load_from_torch(lm, tm)
    bf = kw.get("batch_first", False)
    qs = (N, L, e) if bf else (L, N, e)
    ks = (N, S, kw.get("kdim", e)) if bf else (S, N, kw.get("kdim", e))
    vs = (N, S, kw.get("vdim", e)) if bf else (S, N, kw.get("vdim", e))
    if call == "causal":  # S = L: self-attention (cross-attention when kdim/vdim differ)
        ks, vs = ((N, L, ks[2]), (N, L, vs[2])) if bf else ((L, N, ks[2]), (L, N, vs[2]))
    xs = random_arrays(RNG, [qs, ks, vs])
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


# ---- the batched products of attention -----------------------------------------------------------

def _attention(T: Any, q: Any, k: Any, v: Any) -> Any:
    att = (q @ k.transpose(-2, -1)) * 0.25
    mask = T.triu(T.ones(q.shape[-2], q.shape[-2]), diagonal=1) > 0
    return att.masked_fill(mask, float("-inf")).softmax(-1) @ v


def test_bmm_copies_a_small_transposed_right_operand_and_keeps_the_product() -> None:
    qkv = RNG.standard_normal((2, 16, 3 * 32)).astype(np.float32)
    q = qkv[..., :32].reshape(2, 16, 4, 8).transpose(0, 2, 1, 3)  # (B, nh, L, hs): strided views
    k = qkv[..., 32:64].reshape(2, 16, 4, 8).transpose(0, 2, 1, 3)
    kt = k.swapaxes(-1, -2)
    assert B._bmm_copies(q, kt)  # the transposed layout takes the copy
    assert not B._bmm_copies(kt, q.swapaxes(-1, -2).copy())  # a row-major one does not
    assert not B._bmm_copies(q[0, 0], kt[0, 0])  # nor a single 2-D product
    np.testing.assert_allclose(B.bmm(q, kt), np.matmul(q.astype(np.float64), kt), rtol=1e-5, atol=1e-5)
    assert B.bmm.raw(q, kt) is None and B.bmm.raw(kt, q)[0] is np.matmul


@needs_torch
@pytest.mark.parametrize("shape", [(2, 4, 16, 8), (3, 2, 64, 32)], ids=["small", "bench_heads"])
def test_attention_products_match_torch(shape: tuple[int, ...]) -> None:
    q0, k0, v0 = (RNG.standard_normal(shape).astype(np.float32) for _ in range(3))
    seed = RNG.standard_normal(shape).astype(np.float32)
    ours = outputs_and_grads(lg, _attention, [q0, k0, v0], seed)
    theirs = outputs_and_grads(torch, _attention, [q0, k0, v0], seed)
    for o, t in zip(ours, theirs):
        np.testing.assert_allclose(o, t, rtol=1e-4, atol=1e-5)
