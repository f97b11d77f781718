"""The encoder-decoder Transformer and its layers, as ``torch.nn.Transformer*`` (same submodule
names, so state_dicts load both ways; same forward arguments and mask rules).

>>> layer = nn.TransformerEncoderLayer(d_model=16, nhead=4, dim_feedforward=32, batch_first=True)
>>> nn.TransformerEncoder(layer, num_layers=2)(lightgrad.randn(2, 5, 16)).shape
lightgrad.Size([2, 5, 16])
"""

from __future__ import annotations

import copy
import math
import warnings
from collections.abc import Callable
from typing import Any

from .. import autograd
from .. import backend as B
from ..tensor import Tensor, full
from . import functional as F
from .activation import GELU, ReLU
from .attention import MultiheadAttention
from .container import ModuleList
from .dropout import Dropout
from .init import xavier_uniform_
from .linear import Linear
from .module import Module
from .norm import LayerNorm

__all__ = ["Transformer", "TransformerEncoder", "TransformerDecoder", "TransformerEncoderLayer",
           "TransformerDecoderLayer"]

Activation = str | Callable[[Tensor], Tensor]


def _generate_square_subsequent_mask(sz: int, device: Any = None, dtype: Any = None) -> Tensor:
    """A (sz, sz) float mask: 0 on and below the diagonal, -inf above it (position i sees j <= i)."""
    return full((sz, sz), -math.inf, dtype=dtype, device=device).triu(1)


def _activation_fn(activation: Activation) -> Callable[[Tensor], Tensor]:
    if isinstance(activation, str):
        if activation == "relu":
            return F.relu
        if activation == "gelu":
            return F.gelu
        raise RuntimeError(f"activation should be relu/gelu, not {activation}")
    return activation


def _check_mask_dtype(mask: Tensor | None, name: str) -> None:
    """PyTorch's _canonical_mask check: only bool and floating masks."""
    if mask is not None and mask._data.dtype.kind not in "bf":
        raise AssertionError(f"only bool and floating types of {name} are supported")


def _seq_len(src: Tensor, batch_first: bool) -> int:
    return src.shape[0] if src.ndim == 2 else src.shape[1 if batch_first else 0]


def _detect_is_causal_mask(mask: Tensor | None, is_causal: bool | None, size: int | None) -> bool:
    """The is_causal hint: as given, or (when None) whether the mask equals the causal mask."""
    if is_causal is not None or mask is None:
        return is_causal is True
    sz = size if size is not None else mask.shape[-2]
    m = mask._data
    if m.shape != (sz, sz):
        return False
    if m.dtype == B.xp.bool_:  # compared after PyTorch's bool -> float conversion
        m = B.xp.where(m, -B.xp.inf, 0.0)
    return bool((m == B.xp.triu(B.full((sz, sz), -B.xp.inf), 1)).all())


def _why_not_nested(layer: Module) -> str:
    """Why PyTorch's TransformerEncoder cannot use nested tensors with this layer ('' when it can)."""
    name = "encoder_layer"
    if not isinstance(layer, TransformerEncoderLayer):
        return f"{name} was not TransformerEncoderLayer"
    attn = layer.self_attn
    if layer.norm_first:
        return f"{name}.norm_first was True"
    if not attn.batch_first:
        return f"{name}.self_attn.batch_first was not True(use batch_first for better inference performance)"
    if not attn._qkv_same_embed_dim:
        return f"{name}.self_attn._qkv_same_embed_dim was not True"
    if attn.in_proj_bias is None:
        return f"{name}.self_attn was passed bias=False"
    if not layer.activation_relu_or_gelu:
        return f"{name}.activation_relu_or_gelu was not True"
    if layer.norm1.eps != layer.norm2.eps:
        return f"{name}.norm1.eps was not equal to {name}.norm2.eps"
    if attn.num_heads % 2 == 1:
        return f"{name}.self_attn.num_heads is odd"
    return ""


def _clones(module: Module, n: int) -> ModuleList:
    """n independent deep copies (each layer starts with the same parameter values, as in PyTorch)."""
    return ModuleList([copy.deepcopy(module) for _ in range(n)])


class TransformerEncoderLayer(Module):
    """Self-attention then a feed-forward block, each with a residual and LayerNorm (after each
    block, or before it with ``norm_first``).

    >>> layer = nn.TransformerEncoderLayer(d_model=8, nhead=2, dim_feedforward=16)
    >>> layer(lightgrad.randn(5, 3, 8)).shape
    lightgrad.Size([5, 3, 8])
    """

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048, dropout: float = 0.1,
                 activation: Activation = F.relu, layer_norm_eps: float = 1e-5, batch_first: bool = False,
                 norm_first: bool = False, bias: bool = True, device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        kw = {"device": device, "dtype": dtype}
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias, batch_first=batch_first, **kw)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **kw)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **kw)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        act = _activation_fn(activation)
        # PyTorch records which built-in activation is used (its fused inference path needs it)
        if act is F.relu or isinstance(act, ReLU):
            self.activation_relu_or_gelu = 1
        elif act is F.gelu or isinstance(act, GELU):
            self.activation_relu_or_gelu = 2
        else:
            self.activation_relu_or_gelu = 0
        self.activation = act

    def forward(self, src: Tensor, src_mask: Tensor | None = None, src_key_padding_mask: Tensor | None = None,
                is_causal: bool = False) -> Tensor:
        """src (S, N, E), or (N, S, E) with batch_first, or unbatched (S, E); same shape out."""
        _check_mask_dtype(src_key_padding_mask, "src_key_padding_mask")
        _check_mask_dtype(src_mask, "src_mask")
        x = src
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            x = x + self._ff_block(self.norm2(x))
        else:
            x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask, is_causal))
            x = self.norm2(x + self._ff_block(x))
        return x

    def _sa_block(self, x: Tensor, attn_mask: Tensor | None, key_padding_mask: Tensor | None,
                  is_causal: bool = False) -> Tensor:
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask, need_weights=False,
                           is_causal=is_causal)[0]
        return self.dropout1(x)

    def _ff_block(self, x: Tensor) -> Tensor:
        return self.dropout2(self.linear2(self.dropout(self.activation(self.linear1(x)))))


class TransformerDecoderLayer(Module):
    """Self-attention, attention over the encoder's ``memory``, then a feed-forward block, each
    with a residual and LayerNorm (after each block, or before it with ``norm_first``).

    >>> layer = nn.TransformerDecoderLayer(d_model=8, nhead=2, dim_feedforward=16)
    >>> layer(lightgrad.randn(4, 3, 8), lightgrad.randn(6, 3, 8)).shape
    lightgrad.Size([4, 3, 8])
    """

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048, dropout: float = 0.1,
                 activation: Activation = F.relu, layer_norm_eps: float = 1e-5, batch_first: bool = False,
                 norm_first: bool = False, bias: bool = True, device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        kw = {"device": device, "dtype": dtype}
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, batch_first=batch_first, bias=bias, **kw)
        self.multihead_attn = MultiheadAttention(d_model, nhead, dropout=dropout, batch_first=batch_first, bias=bias,
                                                 **kw)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **kw)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **kw)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.norm3 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.dropout3 = Dropout(dropout)
        self.activation = _activation_fn(activation)

    def forward(self, tgt: Tensor, memory: Tensor, tgt_mask: Tensor | None = None, memory_mask: Tensor | None = None,
                tgt_key_padding_mask: Tensor | None = None, memory_key_padding_mask: Tensor | None = None,
                tgt_is_causal: bool = False, memory_is_causal: bool = False) -> Tensor:
        """tgt (T, N, E) attending to memory (S, N, E) (batch first with batch_first); shape of tgt out."""
        x = tgt
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), tgt_mask, tgt_key_padding_mask, tgt_is_causal)
            x = x + self._mha_block(self.norm2(x), memory, memory_mask, memory_key_padding_mask, memory_is_causal)
            x = x + self._ff_block(self.norm3(x))
        else:
            x = self.norm1(x + self._sa_block(x, tgt_mask, tgt_key_padding_mask, tgt_is_causal))
            x = self.norm2(x + self._mha_block(x, memory, memory_mask, memory_key_padding_mask, memory_is_causal))
            x = self.norm3(x + self._ff_block(x))
        return x

    def _sa_block(self, x: Tensor, attn_mask: Tensor | None, key_padding_mask: Tensor | None,
                  is_causal: bool = False) -> Tensor:
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask, is_causal=is_causal,
                           need_weights=False)[0]
        return self.dropout1(x)

    def _mha_block(self, x: Tensor, mem: Tensor, attn_mask: Tensor | None, key_padding_mask: Tensor | None,
                   is_causal: bool = False) -> Tensor:
        x = self.multihead_attn(x, mem, mem, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                                is_causal=is_causal, need_weights=False)[0]
        return self.dropout2(x)

    def _ff_block(self, x: Tensor) -> Tensor:
        return self.dropout3(self.linear2(self.dropout(self.activation(self.linear1(x)))))


class TransformerEncoder(Module):
    """``num_layers`` deep copies of ``encoder_layer`` applied in turn, then the optional ``norm``.

    >>> enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16), num_layers=2)
    >>> enc(lightgrad.randn(5, 3, 8)).shape
    lightgrad.Size([5, 3, 8])
    """

    def __init__(self, encoder_layer: TransformerEncoderLayer, num_layers: int, norm: Module | None = None,
                 enable_nested_tensor: bool = True, mask_check: bool = True) -> None:
        super().__init__()
        self.layers = _clones(encoder_layer, num_layers)
        self.num_layers = num_layers
        self.norm = norm
        self.enable_nested_tensor = enable_nested_tensor
        # PyTorch's sparsity path (nested tensors) applies only to layers of this shape; lightgrad
        # has no nested tensors, but reproduces that path's visible effect (see forward)
        self.use_nested_tensor = enable_nested_tensor
        self.mask_check = mask_check
        why_not = _why_not_nested(encoder_layer)
        if enable_nested_tensor and why_not:
            warnings.warn(f"enable_nested_tensor is True, but self.use_nested_tensor is False because {why_not}",
                          stacklevel=2)
            self.use_nested_tensor = False

    def forward(self, src: Tensor, mask: Tensor | None = None, src_key_padding_mask: Tensor | None = None,
                is_causal: bool | None = None) -> Tensor:
        """src through every layer with the same masks; ``is_causal=None`` detects a causal ``mask``."""
        _check_mask_dtype(src_key_padding_mask, "src_key_padding_mask")
        _check_mask_dtype(mask, "mask")
        first = self.layers[0]
        pad = self._nested_padding(src, mask, src_key_padding_mask)
        is_causal = _detect_is_causal_mask(mask, is_causal, _seq_len(src, first.self_attn.batch_first))
        output = src
        for mod in self.layers:
            output = mod(output, src_mask=mask, is_causal=is_causal, src_key_padding_mask=src_key_padding_mask)
        if pad is not None:
            output = output.masked_fill(pad, 0.0)
        if self.norm is not None:
            output = self.norm(output)
        return output

    def _nested_padding(self, src: Tensor, mask: Tensor | None, kpm: Tensor | None) -> Tensor | None:
        """PyTorch's inference path (eval, no gradient, a left-aligned padding mask, no attention
        mask) packs the batch as a nested tensor and pads the result back with zeros, so padded
        positions come out as 0 before the final norm; returns those positions (N, S, 1), or None
        when that path would not be taken."""
        first = self.layers[0]
        if not self.use_nested_tensor or first.training or src.ndim != 3 or kpm is None or mask is not None:
            return None
        if autograd.is_grad_enabled() and (src.requires_grad or any(p.requires_grad for p in first.parameters())):
            return None
        keep = ~B.asarray(kpm._data, dtype=bool) if kpm._data.dtype == B.xp.bool_ else kpm._data == 0
        if self.mask_check and not (B.xp.sort(keep, axis=1)[:, ::-1] == keep).all():
            return None  # not left aligned: PyTorch runs the ordinary path
        return Tensor._make(~keep[:, :, None])


class TransformerDecoder(Module):
    """``num_layers`` deep copies of ``decoder_layer`` applied in turn, then the optional ``norm``.

    >>> dec = nn.TransformerDecoder(nn.TransformerDecoderLayer(8, 2, 16), num_layers=2)
    >>> dec(lightgrad.randn(4, 3, 8), lightgrad.randn(6, 3, 8)).shape
    lightgrad.Size([4, 3, 8])
    """

    def __init__(self, decoder_layer: TransformerDecoderLayer, num_layers: int, norm: Module | None = None) -> None:
        super().__init__()
        self.layers = _clones(decoder_layer, num_layers)
        self.num_layers = num_layers
        self.norm = norm

    def forward(self, tgt: Tensor, memory: Tensor, tgt_mask: Tensor | None = None, memory_mask: Tensor | None = None,
                tgt_key_padding_mask: Tensor | None = None, memory_key_padding_mask: Tensor | None = None,
                tgt_is_causal: bool | None = None, memory_is_causal: bool = False) -> Tensor:
        """tgt through every layer, each attending to memory; ``tgt_is_causal=None`` detects a causal tgt_mask."""
        output = tgt
        seq_len = _seq_len(tgt, self.layers[0].self_attn.batch_first)
        tgt_is_causal = _detect_is_causal_mask(tgt_mask, tgt_is_causal, seq_len)
        for mod in self.layers:
            output = mod(output, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                         tgt_key_padding_mask=tgt_key_padding_mask, memory_key_padding_mask=memory_key_padding_mask,
                         tgt_is_causal=tgt_is_causal, memory_is_causal=memory_is_causal)
        if self.norm is not None:
            output = self.norm(output)
        return output


class Transformer(Module):
    """The encoder-decoder model of "Attention Is All You Need": ``encoder`` (a TransformerEncoder
    with a final LayerNorm) and ``decoder`` (a TransformerDecoder with one); matrices are
    re-initialised with xavier_uniform_.

    >>> model = nn.Transformer(d_model=8, nhead=2, num_encoder_layers=1, num_decoder_layers=1, dim_feedforward=16)
    >>> model(lightgrad.randn(6, 3, 8), lightgrad.randn(4, 3, 8)).shape
    lightgrad.Size([4, 3, 8])
    """

    def __init__(self, d_model: int = 512, nhead: int = 8, num_encoder_layers: int = 6, num_decoder_layers: int = 6,
                 dim_feedforward: int = 2048, dropout: float = 0.1, activation: Activation = F.relu,
                 custom_encoder: Any | None = None, custom_decoder: Any | None = None, layer_norm_eps: float = 1e-5,
                 batch_first: bool = False, norm_first: bool = False, bias: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        kw = {"device": device, "dtype": dtype}
        layer_args = (d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps, batch_first, norm_first,
                      bias)
        if custom_encoder is not None:
            self.encoder = custom_encoder
        else:
            self.encoder = TransformerEncoder(TransformerEncoderLayer(*layer_args, **kw), num_encoder_layers,
                                              LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw))
        if custom_decoder is not None:
            self.decoder = custom_decoder
        else:
            self.decoder = TransformerDecoder(TransformerDecoderLayer(*layer_args, **kw), num_decoder_layers,
                                              LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw))
        self._reset_parameters()
        self.d_model = d_model
        self.nhead = nhead
        self.batch_first = batch_first

    def forward(self, src: Tensor, tgt: Tensor, src_mask: Tensor | None = None, tgt_mask: Tensor | None = None,
                memory_mask: Tensor | None = None, src_key_padding_mask: Tensor | None = None,
                tgt_key_padding_mask: Tensor | None = None, memory_key_padding_mask: Tensor | None = None,
                src_is_causal: bool | None = None, tgt_is_causal: bool | None = None,
                memory_is_causal: bool = False) -> Tensor:
        """Encode src (S, N, E) into memory, decode tgt (T, N, E) against it: (T, N, E) out."""
        batched = src.ndim == 3
        nb = 0 if self.batch_first else 1
        if batched and src.shape[nb] != tgt.shape[nb]:
            raise RuntimeError(f"the batch number of src and tgt must be equal, got {src.shape[nb]} and "
                               f"{tgt.shape[nb]}")
        if src.shape[-1] != self.d_model or tgt.shape[-1] != self.d_model:
            raise RuntimeError(f"the feature number of src and tgt must be equal to d_model ({self.d_model}), got "
                               f"{src.shape[-1]} and {tgt.shape[-1]}")
        memory = self.encoder(src, mask=src_mask, src_key_padding_mask=src_key_padding_mask, is_causal=src_is_causal)
        return self.decoder(tgt, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                            tgt_key_padding_mask=tgt_key_padding_mask,
                            memory_key_padding_mask=memory_key_padding_mask, tgt_is_causal=tgt_is_causal,
                            memory_is_causal=memory_is_causal)

    @staticmethod
    def generate_square_subsequent_mask(sz: int, device: Any = None, dtype: Any = None) -> Tensor:
        """The causal mask: -inf above the diagonal, 0 elsewhere.

        >>> nn.Transformer.generate_square_subsequent_mask(2)
        tensor([[  0., -inf],
                [  0.,   0.]])
        """
        return _generate_square_subsequent_mask(sz, device=device, dtype=dtype)

    def _reset_parameters(self) -> None:
        for p in self.parameters():
            if p.ndim > 1:
                xavier_uniform_(p)
