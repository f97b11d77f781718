"""Property tests: random shapes and broadcast pairs for elementwise ops and reductions."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import lightgrad as lg

SETTINGS = settings(max_examples=40, deadline=None)
floats = st.floats(-3, 3, allow_nan=False, width=64)

BINARY = {
    "add": (lambda a, b: a + b, lambda a, b, g: (g, g)),
    "sub": (lambda a, b: a - b, lambda a, b, g: (g, -g)),
    "mul": (lambda a, b: a * b, lambda a, b, g: (g * b, g * a)),
    "maximum": (lambda a, b: lg.maximum(a, b) if isinstance(a, lg.Tensor) else np.maximum(a, b),
                lambda a, b, g: (g * ((a > b) + 0.5 * (a == b)), g * ((b > a) + 0.5 * (a == b)))),
}


def _sum_to(g: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    while g.ndim > len(shape):
        g = g.sum(0)
    for i, s in enumerate(shape):
        if s == 1 and g.shape[i] != 1:
            g = g.sum(i, keepdims=True)
    return g


@SETTINGS
@given(st.sampled_from(sorted(BINARY)), hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=4,
                                                                          max_side=4), st.data())
def test_binary_broadcasting_forward_and_backward(name, shapes, data) -> None:
    f, df = BINARY[name]
    sa, sb = shapes.input_shapes
    a = data.draw(hnp.arrays(np.float64, sa, elements=floats))
    b = data.draw(hnp.arrays(np.float64, sb, elements=floats))
    ta = lg.tensor(a, requires_grad=True)
    tb = lg.tensor(b, requires_grad=True)
    out = f(ta, tb)
    np.testing.assert_allclose(out.detach().numpy(), f(a, b), rtol=1e-12)
    g = np.random.default_rng(0).normal(size=out.shape)
    out.backward(lg.tensor(g))
    ga, gb = df(np.broadcast_to(a, out.shape), np.broadcast_to(b, out.shape), g)
    np.testing.assert_allclose(ta.grad.numpy(), _sum_to(np.asarray(ga, np.float64), sa), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(tb.grad.numpy(), _sum_to(np.asarray(gb, np.float64), sb), rtol=1e-10, atol=1e-12)


UNARY = {
    "exp": (np.exp, lambda x: np.exp(x)),
    "tanh": (np.tanh, lambda x: 1 - np.tanh(x) ** 2),
    "sin": (np.sin, np.cos),
    "sigmoid": (lambda x: 1 / (1 + np.exp(-x)), lambda x: np.exp(-x) / (1 + np.exp(-x)) ** 2),
    "neg": (np.negative, lambda x: -np.ones_like(x)),
}


@SETTINGS
@given(st.sampled_from(sorted(UNARY)), hnp.arrays(np.float64, hnp.array_shapes(min_dims=0, max_dims=4, max_side=5),
                                                  elements=floats))
def test_unary_forward_and_backward(name, x) -> None:
    f, df = UNARY[name]
    t = lg.tensor(x, requires_grad=True)
    out = getattr(t, name)()
    np.testing.assert_allclose(out.detach().numpy(), f(x), rtol=1e-12, atol=1e-14)
    out.sum().backward()
    np.testing.assert_allclose(t.grad.numpy(), df(x), rtol=1e-10, atol=1e-12)


@st.composite
def array_and_dims(draw):
    x = draw(hnp.arrays(np.float64, hnp.array_shapes(min_dims=1, max_dims=4, max_side=4), elements=floats))
    dims = draw(st.lists(st.integers(0, x.ndim - 1), unique=True, min_size=1, max_size=x.ndim))
    signed = tuple(d - x.ndim if draw(st.booleans()) else d for d in dims)
    return x, signed, draw(st.booleans())


@SETTINGS
@given(array_and_dims())
def test_sum_and_mean_over_dims(case) -> None:
    x, dims, keep = case
    axes = tuple(d % x.ndim for d in dims)
    t = lg.tensor(x, requires_grad=True)
    s = t.sum(dims, keepdim=keep)
    np.testing.assert_allclose(s.detach().numpy(), x.sum(axes, keepdims=keep), rtol=1e-12, atol=1e-12)
    m = t.mean(dims, keepdim=keep)
    np.testing.assert_allclose(m.detach().numpy(), x.mean(axes, keepdims=keep), rtol=1e-12, atol=1e-12)
    (s.sum() + m.sum()).backward()
    n = np.prod([x.shape[a] for a in axes])
    np.testing.assert_allclose(t.grad.numpy(), np.full(x.shape, 1 + 1 / n), rtol=1e-12)


@SETTINGS
@given(array_and_dims())
def test_amax_and_var_over_dims(case) -> None:
    x, dims, keep = case
    axes = tuple(d % x.ndim for d in dims)
    t = lg.tensor(x, requires_grad=True)
    mx = t.amax(dims, keepdim=keep)
    np.testing.assert_allclose(mx.detach().numpy(), x.max(axes, keepdims=keep))
    mx.sum().backward()
    hits = (x == x.max(axes, keepdims=True))
    np.testing.assert_allclose(t.grad.numpy(), hits / hits.sum(axes, keepdims=True), rtol=1e-12)
    n = np.prod([x.shape[a] for a in axes])
    if n > 1:
        v = lg.tensor(x).var(dims, keepdim=keep)
        np.testing.assert_allclose(v.numpy(), x.var(axes, ddof=1, keepdims=keep), rtol=1e-9, atol=1e-12)
