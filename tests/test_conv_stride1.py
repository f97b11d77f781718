"""The stride-1 convolution path (``ConvStride1``: bias folded into the product, channels-last
columns for several input channels, the input gradient as a full convolution) against PyTorch,
finite differences, double backward, compile and arenas; and which convolutions take it."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import lightgrad as lg
import lightgrad.nn.functional as F
from lightgrad import function as Fn
from lightgrad.nn._spatial import _LAST_MIN_CHANNELS, ConvStride1, _grid_input_grad
from tests.helpers import numeric_grads

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(7)

# (input shape, weight shape, keyword arguments): both column layouts (C below and at/above
# _LAST_MIN_CHANNELS) and the three input gradients (col2im for NCHW columns; with channels-last
# ones the grid product where C < O, im2col of the padded gradient else), odd and even kernels,
# asymmetric 'same' padding, dilation
FAST = [
    ((2, 1, 6, 7), (3, 1, 3, 3), dict(padding=1)),
    ((2, 3, 6, 7), (4, 3, 3, 3), dict(padding=1)),
    ((2, 3, 8, 9), (4, 3, 3, 2), dict(padding="same", dilation=(2, 1))),
    ((2, 16, 7, 6), (8, 16, 3, 3), dict(padding=1)),
    ((2, 8, 7, 6), (40, 8, 3, 3), dict(padding=1)),
    ((2, 9, 6, 7), (4, 9, 3, 2), dict(padding=(1, 0))),
    ((2, 9, 8, 9), (3, 9, 3, 3), dict(padding=2, dilation=2)),
    ((2, 9, 8, 9), (3, 9, 4, 3), dict(padding="same", dilation=(2, 1))),
    ((1, 10, 8, 9), (3, 10, 2, 4), dict(padding="same")),
    ((2, 12, 5, 5), (4, 12, 1, 1), dict()),
    ((2, 12, 5, 5), (4, 12, 3, 3), dict(padding="valid")),
    ((2, 12, 5, 5), (4, 12, 3, 3), dict(padding=(2, 1))),
    ((2, 8, 6, 7), (12, 8, 3, 2), dict(padding="same", dilation=(2, 1))),
    ((2, 8, 7, 6), (10, 8, 3, 3), dict(padding="valid")),
    ((2, 8, 5, 6), (9, 8, 1, 1), dict()),
    ((2, 8, 8, 9), (11, 8, 3, 3), dict(padding=(2, 0), dilation=(1, 2))),
]
# convolutions that keep the general Conv2d op: stride, groups, padding beyond the kernel's reach
GENERAL = [
    ((2, 5, 8, 9), (3, 5, 3, 3), dict(stride=2, padding=1)),
    ((2, 4, 6, 7), (6, 2, 3, 3), dict(groups=2, padding=1)),
    ((2, 4, 6, 7), (3, 4, 3, 3), dict(padding=3)),
    ((2, 4, 6, 7), (3, 4, 1, 1), dict(padding=1)),
]


def _route(xs: tuple[int, ...], ws: tuple[int, ...]) -> str:
    """The input gradient ConvStride1.backward takes for these shapes."""
    if xs[1] < _LAST_MIN_CHANNELS:
        return "col2im"
    return "grid" if xs[1] < ws[0] else "im2col"


def test_cases_cover_every_route() -> None:
    """NCHW columns with col2im, channels-last with the grid product and with im2col of the gradient."""
    assert {_route(xs, ws) for xs, ws, _ in FAST} == {"col2im", "grid", "im2col"}
    assert sum(_route(xs, ws) == "grid" for xs, ws, _ in FAST) >= 4  # and the grid's geometries


def test_input_gradient_routes(monkeypatch: pytest.MonkeyPatch) -> None:
    """The route _route names is the one backward takes (the grid product is called exactly there)."""
    calls = []

    def spy(*args: Any) -> np.ndarray:
        calls.append(args)
        return _grid_input_grad(*args)
    monkeypatch.setattr("lightgrad.nn._spatial._grid_input_grad", spy)
    for xs, ws, kw in FAST:
        calls.clear()
        x = lg.tensor(RNG.standard_normal(xs), requires_grad=True)
        F.conv2d(x, lg.tensor(RNG.standard_normal(ws)), **kw).sum().backward()
        assert bool(calls) == (_route(xs, ws) == "grid"), (xs, ws, kw)


def _both(xs: tuple[int, ...], ws: tuple[int, ...], kw: dict[str, Any], bias: bool, dtype: Any,
          create_graph: bool = False) -> tuple[list[np.ndarray], list[np.ndarray], Any]:
    """Output and input/weight/bias gradients from lightgrad and PyTorch on the same data."""
    x = RNG.standard_normal(xs).astype(dtype)
    w = RNG.standard_normal(ws).astype(dtype)
    b = RNG.standard_normal(ws[0]).astype(dtype) if bias else None
    res, node = [], None
    for T in (lg, torch):
        ts = [T.tensor(a, requires_grad=True) for a in (x, w) + ((b,) if bias else ())]
        out = T.nn.functional.conv2d(ts[0], ts[1], ts[2] if bias else None, **kw)
        r = RNG.standard_normal(tuple(out.shape)).astype(dtype) if not res else res[0][-1]
        if T is lg:
            node = out.grad_fn
        loss = (out * T.tensor(r)).sum()
        if create_graph:  # the second derivative of <out, r>^2 reaches through the backward
            grads = T.autograd.grad(loss, ts, create_graph=True)
            sum(((gi * gi).sum() for gi in grads), T.tensor(0.0, dtype=out.dtype)).backward()
            vals = [t.grad for t in ts[:2]]  # the bias's gradient is constant in every input
        else:
            loss.backward()
            vals = [out] + [t.grad for t in ts]
        res.append([np.asarray(v.detach().numpy(), np.float64) for v in vals] + [r])
    return res[0][:-1], res[1][:-1], node


@pytest.mark.parametrize("bias", [True, False], ids=["bias", "nobias"])
@pytest.mark.parametrize("xs, ws, kw", FAST + GENERAL)
def test_matches_torch_float64(xs: tuple[int, ...], ws: tuple[int, ...], kw: dict[str, Any], bias: bool) -> None:
    mine, ref, node = _both(xs, ws, kw, bias, np.float64)
    for a, e in zip(mine, ref):
        np.testing.assert_allclose(a, e, rtol=1e-10, atol=1e-10)
    fast = (xs, ws, kw) in FAST
    assert (type(node) is ConvStride1) == fast
    assert isinstance(node, Fn.Conv2d) and node.name() == "Conv2dBackward0"


@pytest.mark.parametrize("xs, ws, kw", [FAST[1], FAST[3], FAST[4], FAST[7], FAST[12]])
def test_matches_torch_float32(xs: tuple[int, ...], ws: tuple[int, ...], kw: dict[str, Any]) -> None:
    mine, ref, _ = _both(xs, ws, kw, True, np.float32)
    for a, e in zip(mine, ref):
        np.testing.assert_allclose(a, e, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("xs, ws, kw", [FAST[2], FAST[5], FAST[7], FAST[12], FAST[15]])
def test_gradients_match_finite_differences(xs: tuple[int, ...], ws: tuple[int, ...], kw: dict[str, Any]) -> None:
    x, w, b = RNG.standard_normal(xs), RNG.standard_normal(ws), RNG.standard_normal(ws[0])

    def f(x: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
        with lg.no_grad():
            return F.conv2d(lg.tensor(x), lg.tensor(w), lg.tensor(b), **kw).numpy()

    r = RNG.standard_normal(f(x, w, b).shape)
    ts = [lg.tensor(a, requires_grad=True) for a in (x, w, b)]
    out = F.conv2d(*ts, **kw)
    assert type(out.grad_fn) is ConvStride1
    (out * lg.tensor(r)).sum().backward()
    for t, e in zip(ts, numeric_grads(f, [x, w, b], r)):
        np.testing.assert_allclose(t.grad.numpy(), e, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("xs, ws, kw", [FAST[1], FAST[3], FAST[7]])
def test_double_backward_matches_torch(xs: tuple[int, ...], ws: tuple[int, ...], kw: dict[str, Any]) -> None:
    mine, ref, _ = _both(xs, ws, kw, True, np.float64, create_graph=True)
    for a, e in zip(mine, ref):
        np.testing.assert_allclose(a, e, rtol=1e-9, atol=1e-9)


def test_only_needed_gradients_and_unbatched_and_1d() -> None:
    """A frozen input or weight gets no gradient; unbatched 2-D and 1-D inputs go through too."""
    xa, wa = RNG.standard_normal((8, 5, 7)), RNG.standard_normal((4, 8, 3, 3))
    x, w = lg.tensor(xa, requires_grad=True), lg.tensor(wa)
    out = F.conv2d(x, w, padding=1)
    assert type(out.grad_fn.next_functions[0][0]) is ConvStride1 and out.shape == (4, 5, 7)
    out.sum().backward()
    tx = torch.tensor(xa, requires_grad=True)
    ref = torch.nn.functional.conv2d(tx, torch.tensor(wa), padding=1)
    ref.sum().backward()
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), rtol=1e-10)
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-10)
    assert w.grad is None
    x1 = RNG.standard_normal((2, 9, 9))
    w1 = RNG.standard_normal((3, 9, 3))
    lw = lg.tensor(w1, requires_grad=True)
    lo = F.conv1d(lg.tensor(x1), lw, padding=2, dilation=2)
    tw = torch.tensor(w1, requires_grad=True)
    to = torch.nn.functional.conv1d(torch.tensor(x1), tw, padding=2, dilation=2)
    lo.sum().backward()
    to.sum().backward()
    np.testing.assert_allclose(lo.detach().numpy(), to.detach().numpy(), rtol=1e-10)
    np.testing.assert_allclose(lw.grad.numpy(), tw.grad.numpy(), rtol=1e-10)


def _cnn(T: Any, c: int) -> tuple[Any, Any]:
    """A two-conv net (both column layouts) and its SGD optimizer."""
    T.manual_seed(0)
    nn = T.nn
    model = nn.Sequential(nn.Conv2d(1, c, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Conv2d(c, 2 * c, 3, padding=1), nn.ReLU(), nn.Flatten(), nn.Linear(2 * c * 16, 3))
    return model, T.optim.SGD(model.parameters(), lr=0.1)


def test_compiled_and_arena_steps_match_eager() -> None:
    c = _LAST_MIN_CHANNELS
    x = lg.tensor(RNG.standard_normal((4, 1, 8, 8)).astype(np.float32))
    y = lg.tensor(RNG.integers(0, 3, 4))
    runs = []
    for how in ("eager", "compile", "arena"):
        model, opt = _cnn(lg, c)

        def step(model: Any = model, opt: Any = opt) -> Any:
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            return loss
        if how == "compile":
            step = lg.compile(step)
        arena = lg.memory.Arena("16MB", name="t") if how == "arena" else None
        losses = []
        for _ in range(4):
            if arena is not None:
                with arena:
                    losses.append(step().item())
                arena.reset()
            else:
                losses.append(step().item())
        runs.append((losses, [p.detach().numpy().copy() for p in model.parameters()]))
    for losses, params in runs[1:]:
        np.testing.assert_allclose(losses, runs[0][0], rtol=1e-6)
        for a, e in zip(params, runs[0][1]):
            np.testing.assert_allclose(a, e, rtol=1e-5, atol=1e-6)
