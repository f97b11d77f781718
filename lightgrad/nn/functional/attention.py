"""Attention: ``F.scaled_dot_product_attention``, composed from Tensor ops."""

from __future__ import annotations

import math

from ... import backend as B
from ...grad_mode import no_grad
from ...backend import random as R
from ...random import _gen
from ...tensor import Tensor, _as_tensor

# ---- scaled dot-product attention --------------------------------------------------------------

def _dropout(x: Tensor, p: float) -> Tensor:
    """F.dropout's inverted dropout with the default generator, PyTorch's masks (kept local: functional
    imports this module): noise = bernoulli_(1 - p) on empty_like(x), divided by 1 - p."""
    if p <= 0.0:
        return x
    if p >= 1.0:
        return x * 0.0
    dt = x._data.dtype
    noise = B.xp.empty_like(x._data, order="K")
    R.bernoulli_scalar_(_gen(None), noise, 1.0 - p)
    return x * Tensor._make(B.xp.divide(noise, dt.type(1.0 - p), dtype=dt))


def scaled_dot_product_attention(query: Tensor, key: Tensor, value: Tensor, attn_mask: Tensor | None = None,
                                 dropout_p: float = 0.0, is_causal: bool = False, scale: float | None = None,
                                 enable_gqa: bool = False) -> Tensor:
    """softmax(q k^T * scale + mask) v over (..., L, E) queries and (..., S, E) keys; a bool mask
    is True where attention is allowed, a float mask is added to the scores.

    >>> q = lightgrad.randn(2, 4, 5, 8); scaled_dot_product_attention(q, q, q, is_causal=True).shape
    lightgrad.Size([2, 4, 5, 8])
    """
    q, k, v = _as_tensor(query), _as_tensor(key), _as_tensor(value)
    if q.ndim < 2 or k.ndim < 2 or v.ndim < 2:
        raise RuntimeError(f"scaled_dot_product_attention: expected query, key and value to be at least 2-D, "
                           f"got {list(q.shape)}, {list(k.shape)} and {list(v.shape)}")
    if q.shape[-1] != k.shape[-1] or k.shape[-2] != v.shape[-2]:
        raise RuntimeError(f"scaled_dot_product_attention: expected query (..., L, E), key (..., S, E) and "
                           f"value (..., S, Ev), got {list(q.shape)}, {list(k.shape)} and {list(v.shape)}")
    if is_causal and attn_mask is not None:
        # PyTorch documents this as an error (its fused CPU kernel alone accepts it)
        raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be set when is_causal=True")
    if enable_gqa and q.ndim >= 3 and k.shape[-3] != q.shape[-3]:
        hq, hk = q.shape[-3], k.shape[-3]
        if hq % hk:
            raise RuntimeError(f"number of heads in key/value must divide number of heads in query, "
                               f"got {hk} and {hq}")
        k, v = k.repeat_interleave(hq // hk, -3), v.repeat_interleave(hq // hk, -3)
    L, S = q.shape[-2], k.shape[-2]
    sc = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    scores = q.matmul(k.transpose(-2, -1)) * sc  # (..., L, S)
    if is_causal:
        scores = scores.masked_fill(Tensor._make(B.logical_not(B.tril_mask(L, S, dtype=bool))), -math.inf)
    if attn_mask is not None:
        m = _as_tensor(attn_mask)
        if m._data.dtype == B.xp.bool_:
            scores = scores.masked_fill(m.logical_not(), -math.inf)
        else:
            scores = scores + m
    if is_causal or attn_mask is not None:
        # a query that may attend to nothing gets zeros, not NaN (PyTorch's safe softmax); its
        # scores are zeroed first so that no NaN reaches the gradient either. Done whether or not
        # such a row exists: no branch on values (lightgrad.compile replays one path)
        with no_grad():
            dead = (scores == -math.inf).all(-1, keepdim=True)
        attn = scores.masked_fill(dead, 0.0).softmax(-1).masked_fill(dead, 0.0)
    else:
        attn = scores.softmax(-1)
    if dropout_p > 0.0:
        attn = _dropout(attn, dropout_p)
    return attn.matmul(v)
