"""RNN, LSTM, GRU and their cells: outputs, states and every gradient against PyTorch with
weights loaded through state_dict, gradients against central differences in float64, parameter
layout and init, error cases, and a small LSTM trained end to end."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

import lightgrad as lg
import lightgrad.nn as nn
import lightgrad.nn.functional as F

try:
    import torch
except ImportError:  # the parity checks are skipped without PyTorch
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed")
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
    the 5 steps), trained with plain SGD under no_grad: cross-entropy falls below 0.1."""
    lg.manual_seed(0)
    rng = np.random.default_rng(0)
    lstm, head = nn.LSTM(1, 16, batch_first=True), nn.Linear(16, 2)
    params = list(lstm.parameters()) + list(head.parameters())

    def batch(n: int) -> tuple[lg.Tensor, lg.Tensor]:
        x = rng.standard_normal((n, 5, 1)).astype(np.float32)
        return lg.tensor(x), lg.tensor((x[:, 0, 0] > 0).astype(np.int64))

    first = None
    for _ in range(500):
        x, y = batch(32)
        out, _ = lstm(x)
        loss = F.cross_entropy(head(out[:, -1]), y)
        first = loss.item() if first is None else first
        for p in params:
            p.grad = None
        loss.backward()
        with lg.no_grad():
            for p in params:
                p -= 1.0 * p.grad
    x, y = batch(512)
    with lg.no_grad():
        final = F.cross_entropy(head(lstm(x)[0][:, -1]), y).item()
    assert first > 0.6 and final < 0.1, (first, final)
