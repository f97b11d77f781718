"""Recurrent layers against PyTorch: RNN, LSTM, GRU and their cells, packed sequences (nn.utils.rnn).

Outputs, states and every gradient against PyTorch with weights loaded through state_dict,
gradients against central differences in float64, parameter layout and init, error cases, and a
small LSTM trained end to end; PackedSequence and the pack/pad helpers, and the layers over
packed input: values, batch sizes, indices and every gradient, and the errors."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from helpers import needs_torch, torch

import lightgrad as lg
import lightgrad.nn as nn
import lightgrad.nn.functional as F
from lightgrad.nn.utils import rnn as L

if torch is not None:
    R = torch.nn.utils.rnn
    DT = {"float64": (lg.float64, torch.float64, 1e-10), "float32": (lg.float32, torch.float32, 1e-5)}

RNG = np.random.default_rng(0)


def central_diff(f: Any, xs: list[np.ndarray], r: list[np.ndarray], eps: float = 1e-6) -> list[np.ndarray]:
    """d/dx of sum_i sum(f(xs)[i] * r[i]) for every element of every array in xs."""
    def total() -> float:
        return float(sum(np.sum(o * w) for o, w in zip(f(xs), r)))
    grads = []
    for x in xs:
        g = np.zeros_like(x)
        for idx in np.ndindex(x.shape):
            old = x[idx]
            x[idx] = old + eps
            hi = total()
            x[idx] = old - eps
            lo = total()
            x[idx] = old
            g[idx] = (hi - lo) / (2 * eps)
        grads.append(g)
    return grads


def flat_outputs(res: Any) -> list[Any]:
    """(output, h_n) / (output, (h_n, c_n)) / h / (h, c) as one flat list of tensors."""
    if isinstance(res, tuple | list):
        return [t for r in res for t in flat_outputs(r)]
    return [res]


# (id, constructor taking the nn namespace, input shape, hidden-state shapes or None)
CASES: list[tuple[str, Any, tuple[int, ...], list[tuple[int, ...]] | None]] = [
    ("rnn_tanh", lambda nn: nn.RNN(3, 4), (5, 2, 3), None),
    ("rnn_relu_2layer_h0", lambda nn: nn.RNN(3, 4, num_layers=2, nonlinearity="relu"), (4, 2, 3), [(2, 2, 4)]),
    ("rnn_bidirectional_batch_first", lambda nn: nn.RNN(3, 4, batch_first=True, bidirectional=True), (2, 5, 3), None),
    ("lstm", lambda nn: nn.LSTM(3, 4), (5, 2, 3), None),
    ("lstm_h0_c0", lambda nn: nn.LSTM(3, 4), (4, 3, 3), [(1, 3, 4), (1, 3, 4)]),
    ("lstm_2layer_bi_batch_first", lambda nn: nn.LSTM(3, 4, num_layers=2, bidirectional=True, batch_first=True),
     (2, 4, 3), [(4, 2, 4), (4, 2, 4)]),
    ("lstm_no_bias", lambda nn: nn.LSTM(3, 4, bias=False), (4, 2, 3), None),
    ("lstm_unbatched", lambda nn: nn.LSTM(3, 4, bidirectional=True), (4, 3), [(2, 4), (2, 4)]),
    ("gru", lambda nn: nn.GRU(3, 4), (5, 2, 3), [(1, 2, 4)]),
    ("gru_2layer_bi", lambda nn: nn.GRU(3, 4, num_layers=2, bidirectional=True), (4, 2, 3), None),
    ("gru_no_bias_batch_first", lambda nn: nn.GRU(3, 4, bias=False, batch_first=True), (2, 4, 3), None),
    ("rnn_cell", lambda nn: nn.RNNCell(3, 4), (2, 3), [(2, 4)]),
    ("rnn_cell_relu_no_state", lambda nn: nn.RNNCell(3, 4, nonlinearity="relu"), (2, 3), None),
    ("lstm_cell", lambda nn: nn.LSTMCell(3, 4), (2, 3), [(2, 4), (2, 4)]),
    ("lstm_cell_unbatched", lambda nn: nn.LSTMCell(3, 4, bias=False), (3,), [(4,), (4,)]),
    ("gru_cell", lambda nn: nn.GRUCell(3, 4), (2, 3), [(2, 4)]),
]
IDS = [c[0] for c in CASES]


def _state(mod: Any, hs: list[Any] | None) -> list[Any]:
    if hs is None:
        return []
    return [tuple(hs)] if len(hs) == 2 else [hs[0]]


def _load(lm: Any, tm: Any) -> None:
    assert list(lm.state_dict().keys()) == list(tm.state_dict().keys())
    lm.load_state_dict({k: lg.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})


@needs_torch
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_matches_torch(case: Any) -> None:
    """Outputs, final states, input and initial-state gradients and parameter gradients (float64)."""
    _, make, shape, hshapes = case
    tm = make(torch.nn).double()
    lm = make(nn).to(lg.float64)
    _load(lm, tm)
    assert repr(lm) == repr(tm)
    arrs = [RNG.standard_normal(shape)] + [RNG.standard_normal(s) for s in hshapes or []]
    lts = [lg.tensor(a, requires_grad=True) for a in arrs]
    tts = [torch.tensor(a, requires_grad=True) for a in arrs]
    lo = flat_outputs(lm(lts[0], *_state(lg, lts[1:] if hshapes else None)))
    to = flat_outputs(tm(tts[0], *_state(torch, tts[1:] if hshapes else None)))
    assert [tuple(a.shape) for a in lo] == [tuple(b.shape) for b in to]
    for a, b in zip(lo, to):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-10, atol=1e-12)
    ws = [RNG.standard_normal(tuple(b.shape)) for b in to]
    sum((a * lg.tensor(w)).sum() for a, w in zip(lo, ws)).backward()
    sum((b * torch.tensor(w)).sum() for b, w in zip(to, ws)).backward()
    for a, b in zip(lts, tts):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-9, atol=1e-11)
    tp = dict(tm.named_parameters())
    for name, p in lm.named_parameters():
        np.testing.assert_allclose(p.grad.numpy(), tp[name].grad.numpy(), rtol=1e-9, atol=1e-11, err_msg=name)


FD_CASES = [c for c in CASES if c[0] in ("rnn_relu_2layer_h0", "rnn_bidirectional_batch_first", "lstm_h0_c0",
                                          "lstm_2layer_bi_batch_first", "gru", "gru_2layer_bi", "lstm_cell",
                                          "gru_cell")]


@pytest.mark.parametrize("case", FD_CASES, ids=[c[0] for c in FD_CASES])
def test_gradients_match_finite_differences(case: Any) -> None:
    """Gradients of the input, the initial states and every parameter equal central differences."""
    _, make, shape, hshapes = case
    lg.manual_seed(0)
    m = make(nn).to(lg.float64)
    arrs = [RNG.standard_normal(shape)] + [RNG.standard_normal(s) for s in hshapes or []]
    names = [n for n, _ in m.named_parameters()]
    params = [p.detach().numpy().copy() for _, p in m.named_parameters()]

    def run(xs: list[np.ndarray], grad: bool) -> tuple[list[Any], list[Any]]:
        with lg.no_grad():
            for n, a in zip(names, xs[len(arrs):]):
                getattr(m, n).copy_(lg.tensor(a))
        ts = [lg.tensor(a, requires_grad=grad) for a in xs[:len(arrs)]]
        return flat_outputs(m(ts[0], *_state(lg, ts[1:] if hshapes else None))), ts

    outs, ts = run(arrs + params, True)
    ws = [RNG.standard_normal(tuple(o.shape)) for o in outs]
    for p in m.parameters():
        p.grad = None
    sum((o * lg.tensor(w)).sum() for o, w in zip(outs, ws)).backward()
    analytic = [t.grad.numpy() for t in ts] + [getattr(m, n).grad.numpy().copy() for n in names]

    def values(xs: list[np.ndarray]) -> list[np.ndarray]:
        with lg.no_grad():
            return [o.numpy() for o in run(xs, False)[0]]

    numeric = central_diff(values, arrs + params, ws)
    labels = ["input"] + [f"state{i}" for i in range(len(arrs) - 1)] + names
    for a, n, label in zip(analytic, numeric, labels):
        np.testing.assert_allclose(a, n, rtol=1e-5, atol=1e-6, err_msg=label)


@needs_torch
def test_lstm_float32_matches_torch() -> None:
    tm, lm = torch.nn.LSTM(8, 16, num_layers=2), nn.LSTM(8, 16, num_layers=2)
    _load(lm, tm)
    x = RNG.standard_normal((12, 4, 8)).astype(np.float32)
    lo, (lh, lc) = lm(lg.tensor(x))
    to, (th, tc) = tm(torch.tensor(x))
    assert lo.dtype == lg.float32
    for a, b in ((lo, to), (lh, th), (lc, tc)):
        np.testing.assert_allclose(a.numpy(force=True), b.detach().numpy(), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("make, gates", [(lambda: nn.LSTM(5, 6, num_layers=2, bidirectional=True), 4),
                                         (lambda: nn.GRU(5, 6, bias=False), 3), (lambda: nn.RNN(5, 6), 1),
                                         (lambda: nn.LSTMCell(5, 6), 4)])
def test_parameter_layout_and_init(make: Any, gates: int) -> None:
    """PyTorch's parameter names and shapes; every parameter drawn from U(-1/sqrt(H), 1/sqrt(H))."""
    lg.manual_seed(0)
    m = make()
    bound = 1 / math.sqrt(6)
    for name, p in m.named_parameters():
        assert p.shape[0] == gates * 6, name
        if name.startswith("weight_hh"):
            assert tuple(p.shape) == (gates * 6, 6)
        v = np.abs(p.detach().numpy())
        assert v.max() <= bound and v.max() > 0.5 * bound, name
    if isinstance(m, nn.LSTM):
        assert [n for n, _ in m.named_parameters()][:8] == [
            "weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0",
            "weight_ih_l0_reverse", "weight_hh_l0_reverse", "bias_ih_l0_reverse", "bias_hh_l0_reverse"]
        assert tuple(m.weight_ih_l1.shape) == (24, 12)  # layer 1 reads both directions


@needs_torch
def test_dropout_between_layers_only_in_training() -> None:
    tm, lm = torch.nn.GRU(3, 4, num_layers=3, dropout=0.5).double(), nn.GRU(3, 4, num_layers=3, dropout=0.5)
    lm = lm.to(lg.float64)
    _load(lm, tm)
    x = RNG.standard_normal((5, 2, 3))
    lg.manual_seed(0)
    a, b = lm(lg.tensor(x))[0], lm(lg.tensor(x))[0]
    assert not np.allclose(a.numpy(force=True), b.numpy(force=True))
    lm.eval()
    tm.eval()
    np.testing.assert_allclose(lm(lg.tensor(x))[0].numpy(force=True), tm(torch.tensor(x))[0].detach().numpy(),
                               rtol=1e-10)


def test_errors() -> None:
    m = nn.LSTM(3, 4, num_layers=2)
    with pytest.raises(RuntimeError, match="Expected 3, got 5"):
        m(lg.zeros(4, 2, 5))
    with pytest.raises(RuntimeError, match=r"Expected hidden size \(2, 2, 4\), got \[1, 2, 4\]"):
        m(lg.zeros(4, 2, 3), (lg.zeros(1, 2, 4), lg.zeros(1, 2, 4)))
    with pytest.raises(RuntimeError, match="tuple"):
        m(lg.zeros(4, 2, 3), lg.zeros(2, 2, 4))
    with pytest.raises(ValueError, match="2D or 3D"):
        m(lg.zeros(4, 2, 3, 1))
    with pytest.raises(ValueError, match="nonlinearity"):
        nn.RNN(3, 4, nonlinearity="gelu")
    with pytest.raises(ValueError, match="dropout"):
        nn.GRU(3, 4, dropout=1.5)
    with pytest.raises(RuntimeError, match="inconsistent input_size: got 5 expected 3"):
        nn.GRUCell(3, 4)(lg.zeros(2, 5))
    with pytest.raises(RuntimeError, match="hidden state has inconsistent size"):
        nn.LSTMCell(3, 4)(lg.zeros(2, 3), (lg.zeros(3, 4), lg.zeros(3, 4)))
    with pytest.warns(UserWarning, match="num_layers greater than 1"):
        nn.LSTM(3, 4, dropout=0.2)


def test_double_backward_through_fused_layer_says_so() -> None:
    m = nn.GRU(2, 3)
    x = lg.randn(4, 1, 2, requires_grad=True)
    (g,) = lg.autograd.grad(m(x)[0].sum(), x, create_graph=False)
    assert tuple(g.shape) == (4, 1, 2)
    with pytest.raises(RuntimeError, match="double backward"):
        lg.autograd.grad(m(x)[0].sum(), x, create_graph=True)


def test_small_lstm_learns_to_remember() -> None:
    """Classify a sequence by the sign of its *first* element (which the LSTM must carry through
    the 5 steps), trained with Adam: cross-entropy falls below 0.05. (Plain SGD at lr 1.0 reached
    0.1 or 0.26 by float32 rounding alone, on either path: its trajectory is chaotic; Adam at 0.01
    ends at 0.007-0.014 for seeds 0-2 on both paths.)"""
    lg.manual_seed(0)
    rng = np.random.default_rng(0)
    lstm, head = nn.LSTM(1, 16, batch_first=True), nn.Linear(16, 2)
    params = list(lstm.parameters()) + list(head.parameters())
    opt = lg.optim.Adam(params, lr=0.01)

    def batch(n: int) -> tuple[lg.Tensor, lg.Tensor]:
        x = rng.standard_normal((n, 5, 1)).astype(np.float32)
        return lg.tensor(x), lg.tensor((x[:, 0, 0] > 0).astype(np.int64))

    first = None
    for _ in range(500):
        x, y = batch(32)
        out, _ = lstm(x)
        loss = F.cross_entropy(head(out[:, -1]), y)
        first = loss.item() if first is None else first
        opt.zero_grad()
        loss.backward()
        opt.step()
    x, y = batch(512)
    with lg.no_grad():
        final = F.cross_entropy(head(lstm(x)[0][:, -1]), y).item()
    assert first > 0.6 and final < 0.05, (first, final)


# ---- the fused LSTM layer ------------------------------------------------------------------------

@needs_torch
@pytest.mark.parametrize("t_len", [1, 8, 19])
def test_lstm_over_several_backward_blocks_matches_torch(t_len: int) -> None:
    """Sequences shorter, as long as and longer than the backward's block of steps (8), both
    directions, with and without biases: outputs, input, state and parameter gradients as
    PyTorch's (float64)."""
    x0 = RNG.standard_normal((t_len, 3, 5))
    h0 = RNG.standard_normal((4, 3, 6))
    c0 = RNG.standard_normal((4, 3, 6))
    bias = t_len != 8
    tm = torch.nn.LSTM(5, 6, num_layers=2, bidirectional=True, bias=bias).double()
    lm = lg.nn.LSTM(5, 6, num_layers=2, bidirectional=True, bias=bias).to(lg.float64)
    lm.load_state_dict({k: lg.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    res = []
    for T, m in ((torch, tm), (lg, lm)):
        x, h, c = (T.tensor(a, requires_grad=True) for a in (x0, h0, c0))
        out, (hn, cn) = m(x, (h, c))
        (out * out).sum().backward(retain_graph=True)
        (hn.sum() + (cn * cn).sum()).backward()
        res.append([out.detach().numpy(), x.grad.numpy(), h.grad.numpy(), c.grad.numpy()]
                   + [p.grad.numpy() for _, p in m.named_parameters()])
    for ours, theirs in zip(res[1], res[0]):
        np.testing.assert_allclose(ours, theirs, rtol=1e-9, atol=1e-11)


@needs_torch
def test_lstm_of_an_empty_sequence_raises_like_torch() -> None:
    for T in (torch, lg):
        with pytest.raises(RuntimeError, match="sequence length to be larger than 0"):
            T.nn.LSTM(3, 4)(T.zeros(0, 2, 3))


# ---- nn.utils.rnn: PackedSequence and the pack/pad helpers ---------------------------------------

def _both(a: np.ndarray, dtype: str) -> tuple[Any, Any]:
    ld, td, _ = DT[dtype]
    return lg.tensor(a, dtype=ld, requires_grad=True), torch.tensor(a, dtype=td, requires_grad=True)


def _close(a: Any, b: Any, tol: float) -> None:
    an = a.detach().numpy() if hasattr(a, "detach") else np.asarray(a)
    bn = b.detach().numpy()
    assert an.shape == bn.shape, (an.shape, bn.shape)
    np.testing.assert_allclose(an, bn, rtol=tol, atol=tol)


def _same_packed(pa: Any, pb: Any, tol: float) -> None:
    _close(pa.data, pb.data, tol)
    assert pa.batch_sizes.tolist() == pb.batch_sizes.tolist()
    for a, b in ((pa.sorted_indices, pb.sorted_indices), (pa.unsorted_indices, pb.unsorted_indices)):
        assert (a is None) == (b is None)
        if a is not None:
            assert a.tolist() == b.tolist()


@needs_torch
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("lengths,enforce_sorted", [([5, 3, 3, 1], True), ([2, 5, 2, 4], False),
                                                    ([1, 1, 1, 1], True), ([3, 5, 3, 3], False)])
def test_pack_pad_round_trip_matches_torch(dtype, batch_first, lengths, enforce_sorted):
    x = RNG.standard_normal((4, 5, 3) if batch_first else (5, 4, 3))
    a, b = _both(x, dtype)
    tol = DT[dtype][2]
    pa = L.pack_padded_sequence(a, lengths, batch_first, enforce_sorted)
    pb = R.pack_padded_sequence(b, lengths, batch_first, enforce_sorted)
    assert isinstance(pa, L.PackedSequence) and isinstance(pa, tuple)
    _same_packed(pa, pb, tol)
    ua, la = L.pad_packed_sequence(pa, batch_first, padding_value=-2.5, total_length=7)
    ub, lb = R.pad_packed_sequence(pb, batch_first, padding_value=-2.5, total_length=7)
    _close(ua, ub, tol)
    assert la.tolist() == lb.tolist() and la.dtype == lg.int64
    w = RNG.standard_normal(ua.shape)
    (ua * lg.tensor(w, dtype=DT[dtype][0])).sum().backward()
    (ub * torch.tensor(w, dtype=DT[dtype][1])).sum().backward()
    _close(a.grad, b.grad, tol)


@needs_torch
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("padding_side", ["right", "left"])
def test_pad_sequence_and_unpad_match_torch(batch_first, padding_side):
    xs = [RNG.standard_normal((n, 2, 3)) for n in (3, 5, 1)]
    la = [lg.tensor(x, requires_grad=True) for x in xs]
    tb = [torch.tensor(x, requires_grad=True) for x in xs]
    pa = L.pad_sequence(la, batch_first, 0.5, padding_side)
    pb = R.pad_sequence(tb, batch_first, 0.5, padding_side)
    _close(pa, pb, 1e-12)
    w = RNG.standard_normal(pa.shape)
    (pa * lg.tensor(w)).sum().backward()
    (pb * torch.tensor(w)).sum().backward()
    for a, b in zip(la, tb):
        _close(a.grad, b.grad, 1e-12)
    if padding_side == "right":
        ua = L.unpad_sequence(pa, lg.tensor([3, 5, 1]), batch_first)
        ub = R.unpad_sequence(pb, torch.tensor([3, 5, 1]), batch_first)
        assert len(ua) == len(ub)
        for a, b in zip(ua, ub):
            _close(a, b, 1e-12)


@needs_torch
@pytest.mark.parametrize("enforce_sorted", [True, False])
def test_pack_and_unpack_sequence_match_torch(enforce_sorted):
    lengths = (4, 3, 1) if enforce_sorted else (2, 4, 1)
    xs = [RNG.standard_normal((n, 3)) for n in lengths]
    la = [lg.tensor(x, requires_grad=True) for x in xs]
    tb = [torch.tensor(x, requires_grad=True) for x in xs]
    pa, pb = L.pack_sequence(la, enforce_sorted), R.pack_sequence(tb, enforce_sorted)
    _same_packed(pa, pb, 1e-12)
    ua, ub = L.unpack_sequence(pa), R.unpack_sequence(pb)
    w = [RNG.standard_normal(x.shape) for x in xs]
    sum((a * lg.tensor(v)).sum() for a, v in zip(ua, w)).backward()
    sum((b * torch.tensor(v)).sum() for b, v in zip(ub, w)).backward()
    for a, b, x in zip(ua, ub, xs):
        _close(a, b, 0)
        np.testing.assert_array_equal(a.detach().numpy(), x)
    for a, b in zip(la, tb):
        _close(a.grad, b.grad, 1e-12)


@needs_torch
def test_packed_sequence_is_reachable_and_converts():
    assert nn.utils.rnn.PackedSequence is L.PackedSequence
    p = L.pack_sequence([lg.ones(3, 2), lg.ones(1, 2)])
    assert p._fields == R.PackedSequence._fields
    assert p.double().data.dtype == lg.float64 and p.double().batch_sizes is p.batch_sizes
    q = L.PackedSequence(p.data, p.batch_sizes, lg.tensor([1, 0]))
    assert q.unsorted_indices.tolist() == [1, 0]


ERRORS = [
    ("unsorted", lambda m, x: m.pack_padded_sequence(x, [4, 2, 3])),
    ("wrong_count", lambda m, x: m.pack_padded_sequence(x, [4, 2])),
    ("zero_length", lambda m, x: m.pack_padded_sequence(x, [4, 2, 0])),
    ("lengths_2d", lambda m, x: m.pack_padded_sequence(x, [[4, 2, 1]])),
    ("total_length", lambda m, x: m.pad_packed_sequence(m.pack_padded_sequence(x, [4, 2, 1]), total_length=3)),
    ("padding_side", lambda m, x: m.pad_sequence([x[0], x[1]], padding_side="mid")),
    ("empty", lambda m, x: m.pad_sequence([])),
]


@needs_torch
@pytest.mark.parametrize("name,call", ERRORS, ids=[e[0] for e in ERRORS])
def test_errors_match_torch(name, call):
    x = RNG.standard_normal((4, 3, 2))
    with pytest.raises(Exception) as theirs:
        call(R, torch.tensor(x) if name != "lengths_2d" else torch.tensor(x))
    with pytest.raises(type(theirs.value)) as ours:
        call(L, lg.tensor(x))
    if name != "lengths_2d":  # PyTorch names its tensor type ("Long"), lightgrad says int64
        assert str(ours.value) == str(theirs.value)


# ---- recurrent layers over packed input ----------------------------------------------------------

LAYERS = [
    ("rnn_tanh", lambda nn: nn.RNN(3, 4)),
    ("rnn_relu_2layer_bi", lambda nn: nn.RNN(3, 4, num_layers=2, nonlinearity="relu", bidirectional=True)),
    ("lstm", lambda nn: nn.LSTM(3, 4)),
    ("lstm_2layer_bi", lambda nn: nn.LSTM(3, 4, num_layers=2, bidirectional=True)),
    ("gru", lambda nn: nn.GRU(3, 4)),
    ("gru_2layer_bi_nobias", lambda nn: nn.GRU(3, 4, num_layers=2, bidirectional=True, bias=False)),
]


def _pair(make: Any, dtype: str) -> tuple[Any, Any]:
    ld, td, _ = DT[dtype]
    tm = make(torch.nn).to(td)
    lm = make(nn).to(ld)
    lm.load_state_dict({k: lg.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    return lm, tm


@needs_torch
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("batch_first,lengths,enforce_sorted,with_hx", [
    (False, [5, 4, 2], True, False),
    (True, [2, 5, 1, 5], False, True),
    (False, [3, 1, 4, 3], False, False),
])
@pytest.mark.parametrize("name,make", LAYERS, ids=[c[0] for c in LAYERS])
def test_layers_on_packed_input_match_torch(name, make, batch_first, lengths, enforce_sorted, with_hx, dtype):
    tol = DT[dtype][2] * (1 if dtype == "float64" else 10)
    lm, tm = _pair(make, dtype)
    lstm = name.startswith("lstm")
    batch, steps = len(lengths), max(lengths)
    xa, xb = _both(RNG.standard_normal((batch, steps, 3) if batch_first else (steps, batch, 3)), dtype)
    states = [RNG.standard_normal((tm.num_layers * (2 if tm.bidirectional else 1), batch, 4))
              for _ in range(2 if lstm else 1)] if with_hx else []
    sa = [_both(s, dtype) for s in states]
    hx_a = (tuple(s[0] for s in sa) if lstm else sa[0][0]) if with_hx else None
    hx_b = (tuple(s[1] for s in sa) if lstm else sa[0][1]) if with_hx else None
    out_a, st_a = lm(L.pack_padded_sequence(xa, lengths, batch_first, enforce_sorted), hx_a)
    out_b, st_b = tm(R.pack_padded_sequence(xb, lengths, batch_first, enforce_sorted), hx_b)
    assert isinstance(out_a, L.PackedSequence)
    _same_packed(out_a, out_b, tol)
    fa = [out_a.data, *(st_a if lstm else (st_a,))]
    fb = [out_b.data, *(st_b if lstm else (st_b,))]
    for a, b in zip(fa, fb):
        _close(a, b, tol)
    ws = [RNG.standard_normal(tuple(b.shape)) for b in fb]
    sum((a * lg.tensor(w, dtype=DT[dtype][0])).sum() for a, w in zip(fa, ws)).backward()
    sum((b * torch.tensor(w, dtype=DT[dtype][1])).sum() for b, w in zip(fb, ws)).backward()
    _close(xa.grad, xb.grad, tol)
    for a, b in sa:
        _close(a.grad, b.grad, tol)
    tp = dict(tm.named_parameters())
    for k, p in lm.named_parameters():
        _close(p.grad, tp[k].grad, tol)


def test_packed_states_are_each_sequences_last_step():
    """h_n of a packed batch equals running each sequence alone, unpadded (independent of torch)."""
    m = nn.LSTM(3, 4, bidirectional=True, num_layers=2).double().requires_grad_(False)
    xs = [lg.tensor(RNG.standard_normal((n, 3))) for n in (2, 5, 3)]
    out, (h, c) = m(L.pack_sequence(xs, enforce_sorted=False))
    seqs = L.unpack_sequence(out)
    for i, x in enumerate(xs):
        o1, (h1, c1) = m(x.unsqueeze(1))
        np.testing.assert_allclose(seqs[i].numpy(), o1[:, 0].numpy(), atol=1e-12)
        np.testing.assert_allclose(h[:, i].numpy(), h1[:, 0].numpy(), atol=1e-12)
        np.testing.assert_allclose(c[:, i].numpy(), c1[:, 0].numpy(), atol=1e-12)


@needs_torch
def test_packed_input_errors_match_torch():
    lm, tm = _pair(lambda nn: nn.GRU(3, 4), "float64")
    x = RNG.standard_normal((4, 2, 3))
    for hx_shape in [(1, 3, 4), (2, 2, 4)]:
        with pytest.raises(RuntimeError) as theirs:
            tm(R.pack_padded_sequence(torch.tensor(x), [4, 2]), torch.zeros(hx_shape, dtype=torch.float64))
        with pytest.raises(RuntimeError) as ours:
            lm(L.pack_padded_sequence(lg.tensor(x), [4, 2]), lg.zeros(hx_shape, dtype=lg.float64))
        assert str(ours.value) == str(theirs.value)
    with pytest.raises(RuntimeError) as theirs:
        tm(R.pack_padded_sequence(torch.tensor(x[..., :2]), [4, 2]))
    with pytest.raises(RuntimeError) as ours:
        lm(L.pack_padded_sequence(lg.tensor(x[..., :2]), [4, 2]))
    assert str(ours.value) == str(theirs.value)
