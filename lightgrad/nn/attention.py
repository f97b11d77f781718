"""Multi-head attention, as ``torch.nn.MultiheadAttention`` (same parameters and state_dict keys).

>>> mha = nn.MultiheadAttention(16, 4, batch_first=True); x = lightgrad.randn(2, 5, 16)
>>> out, w = mha(x, x, x); out.shape, w.shape
(lightgrad.Size([2, 5, 16]), lightgrad.Size([2, 5, 5]))
"""

from __future__ import annotations

import math
from typing import Any

from .. import backend as B
from ..tensor import Tensor, cat, empty, zeros
from . import functional as F
from . import init
from .linear import Linear
from .module import Module
from .parameter import Parameter

__all__ = ["MultiheadAttention"]


class NonDynamicallyQuantizableLinear(Linear):
    """The out projection's class in PyTorch (a plain Linear); kept so that reprs match."""


def _float_mask(mask: Tensor | None, dtype: Any, name: str) -> Tensor | None:
    """PyTorch's _canonical_mask: a bool mask (True = masked out) becomes an additive -inf mask."""
    if mask is None:
        return None
    kind = mask._data.dtype.kind
    if kind == "b":
        return Tensor._make(B.cast(B.where(mask._data, -B.xp.inf, 0.0), dtype.np))
    if kind != "f":
        raise AssertionError(f"only bool and floating types of {name} are supported")
    return mask


class MultiheadAttention(Module):
    """Attention over ``num_heads`` heads of size embed_dim/num_heads, with PyTorch's mask rules
    (bool masks: True means *not* allowed; float masks are added) and its parameter layout:
    ``in_proj_weight`` (3E, E) or ``q/k/v_proj_weight`` when kdim/vdim differ, ``in_proj_bias``,
    ``out_proj`` (a Linear), optional ``bias_k``/``bias_v``."""

    bias_k: Parameter | None
    bias_v: Parameter | None

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0, bias: bool = True,
                 add_bias_kv: bool = False, add_zero_attn: bool = False, kdim: int | None = None,
                 vdim: int | None = None, batch_first: bool = False, device: Any = None, dtype: Any = None) -> None:
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(f"embed_dim and num_heads must be greater than 0, got embed_dim={embed_dim} and "
                             f"num_heads={num_heads} instead")
        super().__init__()
        self.embed_dim = embed_dim
        self.kdim = kdim if kdim is not None else embed_dim
        self.vdim = vdim if vdim is not None else embed_dim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.num_heads, self.dropout, self.batch_first = num_heads, dropout, batch_first
        self.head_dim = embed_dim // num_heads
        if self.head_dim * num_heads != embed_dim:
            raise AssertionError(f"embed_dim must be divisible by num_heads, got embed_dim={embed_dim} and "
                                 f"num_heads={num_heads}")
        kw = {"dtype": dtype, "device": device}
        if not self._qkv_same_embed_dim:
            self.q_proj_weight = Parameter(empty(embed_dim, embed_dim, **kw))
            self.k_proj_weight = Parameter(empty(embed_dim, self.kdim, **kw))
            self.v_proj_weight = Parameter(empty(embed_dim, self.vdim, **kw))
            self.register_parameter("in_proj_weight", None)
        else:
            self.in_proj_weight = Parameter(empty(3 * embed_dim, embed_dim, **kw))
            self.register_parameter("q_proj_weight", None)
            self.register_parameter("k_proj_weight", None)
            self.register_parameter("v_proj_weight", None)
        if bias:
            self.in_proj_bias = Parameter(empty(3 * embed_dim, **kw))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = NonDynamicallyQuantizableLinear(embed_dim, embed_dim, bias=bias, **kw)
        if add_bias_kv:
            self.bias_k = Parameter(empty(1, 1, embed_dim, **kw))
            self.bias_v = Parameter(empty(1, 1, embed_dim, **kw))
        else:
            self.bias_k = self.bias_v = None
        self.add_zero_attn = add_zero_attn
        self._reset_parameters()

    def _reset_parameters(self) -> None:
        if self._qkv_same_embed_dim:
            init.xavier_uniform_(self.in_proj_weight)
        else:
            init.xavier_uniform_(self.q_proj_weight)
            init.xavier_uniform_(self.k_proj_weight)
            init.xavier_uniform_(self.v_proj_weight)
        if self.in_proj_bias is not None:
            init.constant_(self.in_proj_bias, 0.0)
            init.constant_(self.out_proj.bias, 0.0)
        if self.bias_k is not None and self.bias_v is not None:
            init.xavier_normal_(self.bias_k)
            init.xavier_normal_(self.bias_v)

    def _project(self, query: Tensor, key: Tensor, value: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """q, k, v in-projections; self-attention with packed weights is one matrix product."""
        b = self.in_proj_bias.chunk(3) if self.in_proj_bias is not None else (None, None, None)
        if self._qkv_same_embed_dim:
            if query is key and key is value:
                q, k, v = F.linear(query, self.in_proj_weight, self.in_proj_bias).chunk(3, -1)
                return q, k, v
            ws = self.in_proj_weight.chunk(3)
        else:
            ws = (self.q_proj_weight, self.k_proj_weight, self.v_proj_weight)
        return F.linear(query, ws[0], b[0]), F.linear(key, ws[1], b[1]), F.linear(value, ws[2], b[2])

    def forward(self, query: Tensor, key: Tensor, value: Tensor, key_padding_mask: Tensor | None = None,
                need_weights: bool = True, attn_mask: Tensor | None = None, average_attn_weights: bool = True,
                is_causal: bool = False) -> tuple[Tensor, Tensor | None]:
        """Attend from query (L, N, E) to key/value (S, N, kdim/vdim) (batch first with
        ``batch_first``); returns (output, weights averaged over heads or per head, or None)."""
        batched = query.ndim == 3
        if query.ndim not in (2, 3):
            raise AssertionError(f"query should be unbatched 2D or batched 3D tensor but received {query.ndim}-D "
                                 "query tensor")
        if key.ndim != query.ndim or value.ndim != query.ndim:
            raise AssertionError(f"For {'batched (3-D)' if batched else 'unbatched (2-D)'} `query`, expected "
                                 f"`key` and `value` to be {query.ndim}-D but found {key.ndim}-D and "
                                 f"{value.ndim}-D tensors respectively")
        same_kv, same_qk = key is value, query is key
        if batched and self.batch_first:
            query, key, value = (t.transpose(0, 1) for t in (query, key, value))
        if not batched:
            query, key, value = (t.unsqueeze(1) for t in (query, key, value))
            if key_padding_mask is not None:
                key_padding_mask = key_padding_mask.unsqueeze(0)
        if same_kv:
            value = key
            if same_qk:
                query = key
        tgt, bsz, e = query.shape
        if e != self.embed_dim:
            raise AssertionError(f"was expecting embedding dimension of {self.embed_dim}, but got {e}")
        if key.shape[-1] != self.kdim or value.shape[-1] != self.vdim:
            raise AssertionError(f"expected key and value feature sizes {self.kdim} and {self.vdim}, got "
                                 f"{key.shape[-1]} and {value.shape[-1]}")
        if key.shape[:2] != value.shape[:2]:
            raise AssertionError(f"key's sequence and batch dims {tuple(key.shape[:2])} do not match value's "
                                 f"{tuple(value.shape[:2])}")
        if is_causal and attn_mask is None:
            raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use the Transformer "
                               "module method `generate_square_subsequent_mask` to create this mask.")
        # PyTorch trusts the hint when nothing else needs the mask: it drops attn_mask (unchecked)
        # and lets scaled_dot_product_attention build the causal mask
        causal = is_causal and key_padding_mask is None and not need_weights
        if causal:
            attn_mask = None
        dt = query.dtype
        kpm = _float_mask(key_padding_mask, dt, "key_padding_mask")
        mask = _float_mask(attn_mask, dt, "attn_mask")
        src = key.shape[0]
        if mask is not None:
            want = (tgt, src) if mask.ndim == 2 else (bsz * self.num_heads, tgt, src)
            if mask.ndim not in (2, 3):
                raise RuntimeError(f"attn_mask's dimension {mask.ndim} is not supported")
            if tuple(mask.shape) != want:
                raise RuntimeError(f"The shape of the {mask.ndim}D attn_mask is {list(mask.shape)}, but should be "
                                   f"{want}.")
            if mask.ndim == 2:
                mask = mask.unsqueeze(0)
        q, k, v = self._project(query, key, value)  # (L, N, E), (S, N, E), (S, N, E)
        if self.bias_k is not None and self.bias_v is not None:
            k = cat([k, self.bias_k.expand(1, bsz, e)])
            v = cat([v, self.bias_v.expand(1, bsz, e)])
            mask = F.pad(mask, (0, 1)) if mask is not None else None
            kpm = F.pad(kpm, (0, 1)) if kpm is not None else None
        h, hd = self.num_heads, self.head_dim
        q = q.reshape(tgt, bsz * h, hd).transpose(0, 1)  # (N*h, L, hd)
        k = k.reshape(k.shape[0], bsz * h, hd).transpose(0, 1)  # (N*h, S, hd)
        v = v.reshape(v.shape[0], bsz * h, hd).transpose(0, 1)
        if self.add_zero_attn:
            k = cat([k, zeros(bsz * h, 1, hd, dtype=dt)], 1)
            v = cat([v, zeros(bsz * h, 1, hd, dtype=dt)], 1)
            mask = F.pad(mask, (0, 1)) if mask is not None else None
            kpm = F.pad(kpm, (0, 1)) if kpm is not None else None
        src = k.shape[1]
        if kpm is not None:
            if tuple(kpm.shape) != (bsz, src):
                raise AssertionError(f"expecting key_padding_mask shape of {(bsz, src)}, but got "
                                     f"{tuple(kpm.shape)}")
            kpm = kpm.reshape(bsz, 1, 1, src).expand(bsz, h, 1, src).reshape(bsz * h, 1, src)
            mask = kpm if mask is None else mask + kpm
        p = self.dropout if self.training else 0.0
        if need_weights:
            scores = (q * math.sqrt(1.0 / hd)).matmul(k.transpose(-2, -1))  # (N*h, L, S)
            if mask is not None:
                scores = scores + mask
            weights = scores.softmax(-1)
            if p > 0.0:
                weights = F.dropout(weights, p)
            out = weights.matmul(v)  # (N*h, L, hd)
        else:
            if mask is not None:
                mask = mask.unsqueeze(0) if mask.shape[0] == 1 else mask.reshape(bsz, h, -1, src)
            out = F.scaled_dot_product_attention(q.reshape(bsz, h, tgt, hd), k.reshape(bsz, h, src, hd),
                                                 v.reshape(bsz, h, src, hd), mask, p, is_causal=causal)
            out = out.reshape(bsz * h, tgt, hd)
        out = out.transpose(0, 1).reshape(tgt * bsz, e)
        out = self.out_proj(out).reshape(tgt, bsz, e)
        if batched and self.batch_first:
            out = out.transpose(0, 1)
        if not batched:
            out = out.squeeze(1)
        if not need_weights:
            return out, None
        w = weights.reshape(bsz, h, tgt, src)
        if average_attn_weights:
            w = w.mean(1)
        return out, (w if batched else w.squeeze(0))

    def extra_repr(self) -> str:
        """The constructor options the module's repr shows."""
        return ""
