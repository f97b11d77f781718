"""nn.Transformer and its encoder and decoder layers and stacks against PyTorch.

nn.TransformerEncoderLayer / Encoder / DecoderLayer / Decoder / Transformer against PyTorch:
weights copied through state_dict (both ways), outputs and every gradient compared in float64 and
float32 over the mask kinds, parameter layout and init, dropout in train and eval, PyTorch's
error types, and a tiny encoder trained end to end on a copy task."""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import lightgrad as lg
import lightgrad.nn as nn

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(0)
D, H, FF = 8, 2, 12  # d_model, nhead, dim_feedforward: small, so every case runs in milliseconds
TOL = {"float64": {"rtol": 1e-9, "atol": 1e-11}, "float32": {"rtol": 2e-4, "atol": 2e-5}}


def _dt(lib: Any, name: str) -> Any:
    return getattr(lib, name)


def _load_from_torch(ours: nn.Module, theirs: Any) -> None:
    ours.load_state_dict({k: lg.tensor(v.detach().numpy().copy()) for k, v in theirs.state_dict().items()})


def _pair(make: Callable[[Any, Any], Any], dtype: str) -> tuple[Any, Any]:
    """(lightgrad module, torch module) built by make(nn namespace, dtype), torch's weights in both."""
    torch.manual_seed(0)
    theirs = make(torch.nn, _dt(torch, dtype))
    ours = make(nn, _dt(lg, dtype))
    _load_from_torch(ours, theirs)
    return ours, theirs


def _inputs(shapes: list[tuple[int, ...]], dtype: str) -> tuple[list[Any], list[Any]]:
    arrays = [RNG.standard_normal(s).astype(dtype) for s in shapes]
    return ([lg.tensor(a, requires_grad=True) for a in arrays], [torch.tensor(a, requires_grad=True) for a in arrays])


def _masks(kind: str, lq: int, lk: int, n: int, dtype: str, prefix: str = "") -> tuple[dict, dict]:
    """Keyword masks for both libraries: an attention mask (bool or float) and/or a key padding mask."""
    ours: dict[str, Any] = {}
    theirs: dict[str, Any] = {}
    attn_name, kpm_name = prefix + "mask", prefix + "key_padding_mask"
    if kind in ("bool", "float", "bool+kpm", "float+kpm"):
        blocked = RNG.random((lq, lk)) < 0.3
        blocked[np.arange(lq), np.arange(lq) % lk] = False  # no query loses every key
        if kind.startswith("bool"):
            m = blocked
        else:
            m = RNG.standard_normal((lq, lk)).astype(dtype)
            m[blocked] = -np.inf
        ours[attn_name], theirs[attn_name] = lg.tensor(m), torch.tensor(m)
    if kind.endswith("kpm"):
        pad = np.zeros((n, lk), bool)
        pad[0, lk - 2:] = True  # item 0 is padded at its end, the others not at all
        if kind.startswith("float"):  # torch warns on a mixed pair: keep the types alike
            pad = np.where(pad, -np.inf, 0.0).astype(dtype)
        ours[kpm_name], theirs[kpm_name] = lg.tensor(pad), torch.tensor(pad)
    return ours, theirs


def _check(ours_mod: Any, theirs_mod: Any, ours_out: Any, theirs_out: Any, ours_in: list[Any],
           theirs_in: list[Any], dtype: str) -> None:
    """Outputs equal; after backward of sum(out * r), input grads and every parameter grad equal."""
    tol = TOL[dtype]
    np.testing.assert_allclose(ours_out.detach().numpy(), theirs_out.detach().numpy(), **tol)
    r = RNG.standard_normal(tuple(theirs_out.shape)).astype(dtype)
    (ours_out * lg.tensor(r)).sum().backward()
    (theirs_out * torch.tensor(r)).sum().backward()
    for a, b in zip(ours_in, theirs_in):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), **tol)
    ours_params = dict(ours_mod.named_parameters())
    theirs_params = dict(theirs_mod.named_parameters())
    assert list(ours_params) == list(theirs_params)
    for name, p in theirs_params.items():
        assert p.grad is not None, name
        np.testing.assert_allclose(ours_params[name].grad.numpy(), p.grad.numpy(), err_msg=name, **tol)


DTYPES = ["float64", "float32"]
MASKS = ["none", "bool", "float", "kpm", "bool+kpm", "float+kpm"]


# ---- layers against PyTorch -----------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("mask", MASKS)
@pytest.mark.parametrize("norm_first", [False, True], ids=["post_norm", "pre_norm"])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
@pytest.mark.parametrize("batch_first", [False, True], ids=["seq_first", "batch_first"])
def test_encoder_layer_matches_torch(dtype: str, mask: str, norm_first: bool, activation: str,
                                     batch_first: bool) -> None:
    s, n = 5, 3

    def make(nn_: Any, dt: Any) -> Any:
        return nn_.TransformerEncoderLayer(D, H, FF, dropout=0.0, activation=activation, batch_first=batch_first,
                                           norm_first=norm_first, dtype=dt)

    ours, theirs = _pair(make, dtype)
    (x,), (tx,) = _inputs([(n, s, D) if batch_first else (s, n, D)], dtype)
    mo, mt = _masks(mask, s, s, n, dtype, prefix="src_")
    _check(ours, theirs, ours(x, **mo), theirs(tx, **mt), [x], [tx], dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("activation", [lambda lib: lib.nn.functional.gelu, lambda lib: lib.nn.Tanh()],
                         ids=["F.gelu", "nn.Tanh()"])
def test_encoder_layer_callable_activation_and_no_bias(dtype: str, activation: Any) -> None:
    def make(nn_: Any, dt: Any) -> Any:
        lib = torch if nn_ is torch.nn else lg
        return nn_.TransformerEncoderLayer(D, H, FF, dropout=0.0, activation=activation(lib), bias=False,
                                           layer_norm_eps=1e-3, dtype=dt)

    ours, theirs = _pair(make, dtype)
    assert ours.activation_relu_or_gelu == theirs.activation_relu_or_gelu
    (x,), (tx,) = _inputs([(4, 2, D)], dtype)
    _check(ours, theirs, ours(x), theirs(tx), [x], [tx], dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("mask", ["none", "bool", "float+kpm"])
@pytest.mark.parametrize("norm_first", [False, True], ids=["post_norm", "pre_norm"])
@pytest.mark.parametrize("batch_first", [False, True], ids=["seq_first", "batch_first"])
def test_decoder_layer_matches_torch(dtype: str, mask: str, norm_first: bool, batch_first: bool) -> None:
    t, s, n = 4, 6, 2

    def make(nn_: Any, dt: Any) -> Any:
        return nn_.TransformerDecoderLayer(D, H, FF, dropout=0.0, activation="gelu", batch_first=batch_first,
                                           norm_first=norm_first, dtype=dt)

    ours, theirs = _pair(make, dtype)
    shape = (lambda length: (n, length, D)) if batch_first else (lambda length: (length, n, D))
    (x, mem), (tx, tmem) = _inputs([shape(t), shape(s)], dtype)
    tgt_o, tgt_t = _masks(mask, t, t, n, dtype, prefix="tgt_")
    mem_o, mem_t = _masks(mask, t, s, n, dtype, prefix="memory_")
    _check(ours, theirs, ours(x, mem, **tgt_o, **mem_o), theirs(tx, tmem, **tgt_t, **mem_t), [x, mem], [tx, tmem],
           dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_fully_padded_item_matches_torch(dtype: str) -> None:
    """An item whose keys are all padded attends to nothing: zeros from attention, no NaN
    (PyTorch's training path; its eval fast path gives NaN there)."""
    def make(nn_: Any, dt: Any) -> Any:
        return nn_.TransformerEncoderLayer(D, H, FF, dropout=0.0, batch_first=True, dtype=dt)

    ours, theirs = _pair(make, dtype)
    (x,), (tx,) = _inputs([(3, 5, D)], dtype)
    pad = np.zeros((3, 5), bool)
    pad[1] = True
    out = ours(x, src_key_padding_mask=lg.tensor(pad))
    _check(ours, theirs, out, theirs(tx, src_key_padding_mask=torch.tensor(pad)), [x], [tx], dtype)
    assert not np.isnan(x.grad.numpy()).any()


@pytest.mark.parametrize("dtype", DTYPES)
def test_unbatched_layers_match_torch(dtype: str) -> None:
    def make(nn_: Any, dt: Any) -> Any:
        return nn_.TransformerDecoderLayer(D, H, FF, dropout=0.0, dtype=dt)

    ours, theirs = _pair(make, dtype)
    (x, mem), (tx, tmem) = _inputs([(4, D), (5, D)], dtype)
    pad = np.array([False, False, False, True, True])
    out = ours(x, mem, memory_key_padding_mask=lg.tensor(pad))
    _check(ours, theirs, out, theirs(tx, tmem, memory_key_padding_mask=torch.tensor(pad)), [x, mem], [tx, tmem],
           dtype)


# ---- stacks and the full model ---------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("is_causal", [None, True, False])
@pytest.mark.parametrize("mask", ["causal_float", "causal_bool", "kpm"])
def test_encoder_stack_matches_torch(dtype: str, is_causal: bool | None, mask: str) -> None:
    s, n = 5, 2

    def make(nn_: Any, dt: Any) -> Any:
        layer = nn_.TransformerEncoderLayer(D, H, FF, dropout=0.0, batch_first=True, dtype=dt)
        return nn_.TransformerEncoder(layer, 2, norm=nn_.LayerNorm(D, dtype=dt), enable_nested_tensor=False)

    ours, theirs = _pair(make, dtype)
    (x,), (tx,) = _inputs([(n, s, D)], dtype)
    if mask == "kpm":
        if is_causal:
            pytest.skip("is_causal needs an attention mask")
        mo, mt = _masks("kpm", s, s, n, dtype, prefix="src_")
    else:
        m = nn.Transformer.generate_square_subsequent_mask(s, dtype=_dt(lg, dtype)).numpy()
        if mask == "causal_bool":
            m = np.isinf(m)
        mo, mt = {"mask": lg.tensor(m)}, {"mask": torch.tensor(m)}
    _check(ours, theirs, ours(x, is_causal=is_causal, **mo), theirs(tx, is_causal=is_causal, **mt), [x], [tx], dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("batch_first", [False, True], ids=["seq_first", "batch_first"])
@pytest.mark.parametrize("norm_first", [False, True], ids=["post_norm", "pre_norm"])
def test_transformer_matches_torch(dtype: str, batch_first: bool, norm_first: bool) -> None:
    s, t, n = 6, 5, 2

    def make(nn_: Any, dt: Any) -> Any:
        return nn_.Transformer(D, H, num_encoder_layers=2, num_decoder_layers=2, dim_feedforward=FF, dropout=0.0,
                               batch_first=batch_first, norm_first=norm_first, dtype=dt)

    ours, theirs = _pair(make, dtype)
    shape = (lambda length: (n, length, D)) if batch_first else (lambda length: (length, n, D))
    (src, tgt), (tsrc, ttgt) = _inputs([shape(s), shape(t)], dtype)
    causal = nn.Transformer.generate_square_subsequent_mask(t, dtype=_dt(lg, dtype))
    tcausal = torch.nn.Transformer.generate_square_subsequent_mask(t, dtype=_dt(torch, dtype))
    src_pad = np.zeros((n, s), bool)
    src_pad[1, -2:] = True
    tgt_pad = np.zeros((n, t), bool)
    tgt_pad[0, -1] = True
    out = ours(src, tgt, tgt_mask=causal, src_key_padding_mask=lg.tensor(src_pad),
               memory_key_padding_mask=lg.tensor(src_pad), tgt_key_padding_mask=lg.tensor(tgt_pad))
    tout = theirs(tsrc, ttgt, tgt_mask=tcausal, src_key_padding_mask=torch.tensor(src_pad),
                  memory_key_padding_mask=torch.tensor(src_pad), tgt_key_padding_mask=torch.tensor(tgt_pad))
    _check(ours, theirs, out, tout, [src, tgt], [tsrc, ttgt], dtype)


@pytest.mark.parametrize("kpm", [False, True], ids=["no_kpm", "kpm"])
def test_is_causal_hint_is_trusted_like_torch(kpm: bool) -> None:
    """With is_causal=True and no padding mask PyTorch ignores the given mask and attends causally;
    with a padding mask it uses the given mask instead."""
    def make(nn_: Any, dt: Any) -> Any:
        return nn_.TransformerEncoderLayer(D, H, FF, dropout=0.0, dtype=dt)

    ours, theirs = _pair(make, "float64")
    (x,), (tx,) = _inputs([(5, 2, D)], "float64")
    mo, mt = _masks("float+kpm" if kpm else "float", 5, 5, 2, "float64", prefix="src_")
    _check(ours, theirs, ours(x, is_causal=True, **mo), theirs(tx, is_causal=True, **mt), [x], [tx], "float64")


@pytest.mark.parametrize("dtype", DTYPES)
def test_generate_square_subsequent_mask_matches_torch(dtype: str) -> None:
    ours = nn.Transformer.generate_square_subsequent_mask(5, dtype=_dt(lg, dtype))
    theirs = torch.nn.Transformer.generate_square_subsequent_mask(5, dtype=_dt(torch, dtype))
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    assert nn.Transformer.generate_square_subsequent_mask(3).dtype == lg.get_default_dtype()


@pytest.mark.parametrize("left_aligned", [True, False])
@pytest.mark.parametrize("kind", ["bool", "float"])
def test_encoder_inference_with_padding_matches_torch(left_aligned: bool, kind: str) -> None:
    """Eval without gradients takes PyTorch's nested-tensor path: padded positions come out as 0
    before the final norm (unless the padding is not at the end)."""
    s, n = 6, 3

    def make(nn_: Any, dt: Any) -> Any:
        layer = nn_.TransformerEncoderLayer(D, H, FF, dropout=0.1, batch_first=True, dtype=dt)
        return nn_.TransformerEncoder(layer, 2, norm=nn_.LayerNorm(D, dtype=dt))

    ours, theirs = _pair(make, "float32")
    ours.eval()
    theirs.eval()
    x = RNG.standard_normal((n, s, D)).astype(np.float32)
    pad = np.zeros((n, s), bool)
    pad[0, -3:] = True
    pad[2, -1:] = True
    if not left_aligned:
        pad[1, 0] = True
    m = pad if kind == "bool" else np.where(pad, -np.inf, 0.0).astype(np.float32)
    with lg.no_grad():
        out = ours(lg.tensor(x), src_key_padding_mask=lg.tensor(m)).numpy()
    with torch.no_grad():
        want = theirs(torch.tensor(x), src_key_padding_mask=torch.tensor(m)).numpy()
    np.testing.assert_allclose(out, want, **TOL["float32"])


# ---- state_dict, structure, init --------------------------------------------------------------

def _small_transformer(nn_: Any, dt: Any = None) -> Any:
    return nn_.Transformer(D, H, num_encoder_layers=2, num_decoder_layers=1, dim_feedforward=FF, dropout=0.0,
                           dtype=dt)


def test_state_dict_keys_and_shapes_match_torch() -> None:
    ours, theirs = _small_transformer(nn), _small_transformer(torch.nn)
    ours_sd, theirs_sd = ours.state_dict(), theirs.state_dict()
    assert list(ours_sd) == list(theirs_sd)
    for k, v in theirs_sd.items():
        assert tuple(ours_sd[k].shape) == tuple(v.shape), k
    assert [n for n, _ in ours.named_modules()] == [n for n, _ in theirs.named_modules()]


def test_state_dict_loads_into_torch() -> None:
    lg.manual_seed(1)
    ours = _small_transformer(nn, lg.float64)
    theirs = _small_transformer(torch.nn, torch.float64)
    theirs.load_state_dict({k: torch.from_numpy(v.detach().numpy().copy()) for k, v in ours.state_dict().items()})
    src, tgt = RNG.standard_normal((6, 2, D)), RNG.standard_normal((4, 2, D))
    with lg.no_grad():
        out = ours(lg.tensor(src), lg.tensor(tgt)).numpy()
    with torch.no_grad():
        want = theirs(torch.tensor(src), torch.tensor(tgt)).numpy()
    np.testing.assert_allclose(out, want, **TOL["float64"])


def test_encoder_deep_copies_its_layer() -> None:
    layer = nn.TransformerEncoderLayer(D, H, FF)
    enc = nn.TransformerEncoder(layer, 3)
    w = [m.linear1.weight for m in enc.layers]
    assert len({id(p) for p in w}) == 3 and all(p is not layer.linear1.weight for p in w)
    for p in w:  # copies start equal (as in PyTorch) but are independent
        np.testing.assert_array_equal(p.detach().numpy(), layer.linear1.weight.detach().numpy())
    with lg.no_grad():
        w[0].add_(1.0)
    assert not np.allclose(w[0].detach().numpy(), w[1].detach().numpy())
    assert len(list(enc.parameters())) == 3 * len(list(layer.parameters()))


def test_transformer_init_is_torch_scheme() -> None:
    """Matrices xavier-uniform (bound sqrt(6/(fan_in+fan_out))); attention biases 0, LayerNorm 1/0,
    feed-forward biases keep Linear's U(+-1/sqrt(fan_in)); same for torch's model."""
    lg.manual_seed(0)
    torch.manual_seed(0)
    for model in (nn.Transformer(16, 4, 1, 1, 64), torch.nn.Transformer(16, 4, 1, 1, 64)):
        for name, p in model.named_parameters():
            a = p.detach().numpy()
            if a.ndim > 1:
                bound = math.sqrt(6.0 / (a.shape[0] + a.shape[1]))
                assert np.abs(a).max() <= bound and np.abs(a).max() > 0.8 * bound, name
                assert abs(a.std() - bound / math.sqrt(3)) < 0.25 * bound / math.sqrt(3), name
            elif "norm" in name:
                np.testing.assert_array_equal(a, np.ones_like(a) if name.endswith("weight") else np.zeros_like(a))
            elif "attn" in name:
                np.testing.assert_array_equal(a, np.zeros_like(a), err_msg=name)
            else:  # linear1/linear2 biases
                fan_in = 16 if "linear1" in name else 64
                assert 0 < np.abs(a).max() <= 1 / math.sqrt(fan_in), name


def test_constructor_defaults_match_torch() -> None:
    ours, theirs = nn.TransformerEncoderLayer(16, 4), torch.nn.TransformerEncoderLayer(16, 4)
    assert ours.linear1.out_features == theirs.linear1.out_features == 2048
    assert ours.dropout.p == theirs.dropout.p == 0.1
    assert ours.norm1.eps == theirs.norm1.eps == 1e-5
    assert ours.self_attn.batch_first is theirs.self_attn.batch_first is False
    assert ours.norm_first is theirs.norm_first is False
    t = nn.Transformer()
    assert (t.d_model, t.nhead, len(t.encoder.layers), len(t.decoder.layers)) == (512, 8, 6, 6)
    assert t.encoder.layers[0].linear1.out_features == 2048
    assert nn.TransformerEncoder(nn.TransformerEncoderLayer(16, 4, batch_first=True), 1).mask_check is True


@pytest.mark.parametrize("kw", [{"batch_first": True}, {}, {"batch_first": True, "norm_first": True},
                                {"batch_first": True, "bias": False}, {"batch_first": True, "activation": "gelu"}],
                         ids=["fast", "seq_first", "norm_first", "no_bias", "gelu"])
def test_nested_tensor_eligibility_and_warning_match_torch(kw: dict) -> None:
    def nested_warnings(lib: Any) -> tuple[bool, list[str]]:
        with warnings.catch_warnings(record=True) as rec:
            warnings.simplefilter("always")
            enc = lib.nn.TransformerEncoder(lib.nn.TransformerEncoderLayer(16, 4, **kw), 1)
        return enc.use_nested_tensor, [str(w.message) for w in rec if "nested" in str(w.message)]

    assert nested_warnings(lg) == nested_warnings(torch)


# ---- dropout -----------------------------------------------------------------------------------

def test_dropout_in_train_not_in_eval() -> None:
    lg.manual_seed(0)
    torch.manual_seed(0)
    theirs = torch.nn.TransformerEncoderLayer(D, H, FF, dropout=0.5)
    ours = nn.TransformerEncoderLayer(D, H, FF, dropout=0.5)
    _load_from_torch(ours, theirs)
    x = RNG.standard_normal((5, 3, D)).astype(np.float32)
    a, b = ours(lg.tensor(x)).detach().numpy(), ours(lg.tensor(x)).detach().numpy()
    assert not np.allclose(a, b)  # fresh masks each call
    ours.eval()
    theirs.eval()
    c, d = ours(lg.tensor(x)).detach().numpy(), ours(lg.tensor(x)).detach().numpy()
    np.testing.assert_array_equal(c, d)
    assert not np.allclose(a, c)
    with torch.no_grad():
        np.testing.assert_allclose(c, theirs(torch.tensor(x)).numpy(), **TOL["float32"])


# ---- errors, with PyTorch's exception types -----------------------------------------------------

def _raises_like(fn: Callable[[Any], Any]) -> None:
    """fn(lib) raises in torch and in lightgrad, with the same exception type."""
    with pytest.raises(Exception) as want:
        fn(torch)
    with pytest.raises(want.type):
        fn(lg)


def _x(lib: Any, *shape: int) -> Any:
    return lib.tensor(RNG.standard_normal(shape).astype(np.float32))


ERRORS: dict[str, Callable[[Any], Any]] = {
    "d_model_not_divisible": lambda lib: lib.nn.TransformerEncoderLayer(10, 3),
    "decoder_not_divisible": lambda lib: lib.nn.TransformerDecoderLayer(10, 4),
    "bad_activation": lambda lib: lib.nn.TransformerEncoderLayer(8, 2, activation="tanh"),
    "src_mask_shape": lambda lib: lib.nn.TransformerEncoderLayer(8, 2, 16)(
        _x(lib, 5, 2, 8), src_mask=lib.zeros(4, 5)),
    "src_mask_3d_shape": lambda lib: lib.nn.TransformerEncoderLayer(8, 2, 16)(
        _x(lib, 5, 2, 8), src_mask=lib.zeros(3, 5, 5)),
    "key_padding_mask_shape": lambda lib: lib.nn.TransformerEncoderLayer(8, 2, 16)(
        _x(lib, 5, 2, 8), src_key_padding_mask=lib.zeros(2, 4, dtype=lib.bool)),
    "int_mask": lambda lib: lib.nn.TransformerEncoderLayer(8, 2, 16)(
        _x(lib, 5, 2, 8), src_mask=lib.zeros(5, 5, dtype=lib.int64)),
    "memory_mask_shape": lambda lib: lib.nn.TransformerDecoderLayer(8, 2, 16)(
        _x(lib, 4, 2, 8), _x(lib, 6, 2, 8), memory_mask=lib.zeros(4, 5)),
    "is_causal_without_mask": lambda lib: lib.nn.TransformerEncoderLayer(8, 2, 16)(_x(lib, 5, 2, 8), is_causal=True),
    "feature_size": lambda lib: lib.nn.TransformerEncoderLayer(8, 2, 16)(_x(lib, 5, 2, 6)),
    "transformer_batch": lambda lib: lib.nn.Transformer(8, 2, 1, 1, 16)(_x(lib, 5, 2, 8), _x(lib, 4, 3, 8)),
    "transformer_d_model": lambda lib: lib.nn.Transformer(8, 2, 1, 1, 16)(_x(lib, 5, 2, 6), _x(lib, 4, 2, 6)),
}


@pytest.mark.parametrize("name", list(ERRORS))
def test_errors_match_torch_types(name: str) -> None:
    _raises_like(ERRORS[name])


# ---- end to end -------------------------------------------------------------------------------

def test_tiny_encoder_learns_to_copy_reversed() -> None:
    """Embedding + positions + 2-layer encoder + head, trained 60 Adam steps to output its input
    sequence reversed (needs attention: each position must read another one); the cross-entropy
    must fall below a tenth of its start (chance level is log(vocab))."""
    lg.manual_seed(0)
    gen = np.random.default_rng(0)
    vocab, length, batch, d = 6, 5, 32, 32
    emb = nn.Embedding(vocab, d)
    pos = nn.Parameter(lg.randn(length, d) * 0.5)
    layer = nn.TransformerEncoderLayer(d, 4, 64, dropout=0.0, batch_first=True)
    enc = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
    head = nn.Linear(d, vocab)
    params = [*emb.parameters(), pos, *enc.parameters(), *head.parameters()]
    opt = lg.optim.Adam(params, lr=3e-3)
    losses = []
    for _ in range(60):
        tokens = gen.integers(0, vocab, (batch, length))
        x = emb(lg.tensor(tokens)) + pos
        logits = head(enc(x))  # (N, L, vocab)
        target = lg.tensor(tokens[:, ::-1].copy())
        loss = nn.functional.cross_entropy(logits.reshape(-1, vocab), target.reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    start, end = np.mean(losses[:3]), np.mean(losses[-3:])
    assert start > 0.8 * math.log(vocab)
    assert end < start / 10, (start, end)
