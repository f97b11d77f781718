"""nn.utils.rnn (PackedSequence and the pack/pad helpers) and RNN/LSTM/GRU over packed input: values,
batch sizes, indices and every gradient against PyTorch on the same weights and inputs, plus the
error cases with PyTorch's exception types and messages."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import lightgrad as lg
import lightgrad.nn as nn
from lightgrad.nn.utils import rnn as L

torch = pytest.importorskip("torch")
R = torch.nn.utils.rnn
RNG = np.random.default_rng(0)
DT = {"float64": (lg.float64, torch.float64, 1e-10), "float32": (lg.float32, torch.float32, 1e-5)}


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


# ---- the helpers -------------------------------------------------------------------------------------------

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


@pytest.mark.parametrize("name,call", ERRORS, ids=[e[0] for e in ERRORS])
def test_errors_match_torch(name, call):
    x = RNG.standard_normal((4, 3, 2))
    with pytest.raises(Exception) as theirs:
        call(R, torch.tensor(x) if name != "lengths_2d" else torch.tensor(x))
    with pytest.raises(type(theirs.value)) as ours:
        call(L, lg.tensor(x))
    if name != "lengths_2d":  # PyTorch names its tensor type ("Long"), lightgrad says int64
        assert str(ours.value) == str(theirs.value)


# ---- recurrent layers over packed input --------------------------------------------------------------------

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
