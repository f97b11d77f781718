"""The transformer step's fast paths give PyTorch's results: layer norm's input gradient written
over its saved normalised input (by blocks of rows, also with a retained graph), GELU's gradient
written over its saved derivative, softmax's backward by one dot-product pass."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import lightgrad as lg
from lightgrad import backend as B

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(0)


def _grads(T: Any, f: Any, arrays: list[np.ndarray], seed: np.ndarray, twice: bool = False) -> list[np.ndarray]:
    """The output of f and the gradients of (f * seed).sum() for each input (backward twice on a
    retained graph when ``twice``: the second must equal the first)."""
    xs = [T.tensor(a, requires_grad=True) for a in arrays]
    y = f(T, *xs)
    loss = (y * T.tensor(seed)).sum()
    loss.backward(retain_graph=twice)
    first = [x.grad.numpy().copy() for x in xs]
    if twice:
        for x in xs:
            x.grad = None
        loss.backward()
        for a, x in zip(first, xs):
            np.testing.assert_array_equal(x.grad.numpy(), a)
    return [y.detach().numpy()] + first


def _ln(T: Any, x: Any, w: Any, b: Any) -> Any:
    return T.nn.functional.layer_norm(x, (x.shape[-1],), w, b)


# (3, 300, 40): 900 rows, more than one block of rows (the last one partial)
@pytest.mark.parametrize("shape", [(3, 300, 40), (5, 7)], ids=["blocks", "one_block"])
@pytest.mark.parametrize("twice", [False, True], ids=["once", "retained"])
def test_layer_norm_gradients_match_torch(shape: tuple[int, ...], twice: bool) -> None:
    x0 = (RNG.standard_normal(shape) * 3 + 5).astype(np.float32)  # a mean far from 0
    w0, b0 = RNG.standard_normal(shape[-1:]).astype(np.float32), RNG.standard_normal(shape[-1:]).astype(np.float32)
    seed = RNG.standard_normal(shape).astype(np.float32)
    ours = _grads(lg, _ln, [x0, w0, b0], seed, twice)
    theirs = _grads(torch, _ln, [x0, w0, b0], seed)
    for o, t in zip(ours, theirs):
        np.testing.assert_allclose(o, t, rtol=1e-4, atol=2e-5)


def test_layer_norm_without_affine_matches_finite_differences() -> None:
    x0 = RNG.standard_normal((600, 8))  # float64, 600 rows: several blocks
    seed = RNG.standard_normal((600, 8))
    x = lg.tensor(x0, requires_grad=True)
    (lg.nn.functional.layer_norm(x, (8,)) * lg.tensor(seed)).sum().backward()

    def loss(a: np.ndarray) -> float:
        return float((lg.nn.functional.layer_norm(lg.tensor(a), (8,)) * lg.tensor(seed)).sum().item())
    eps = 1e-6
    for i, j in [(0, 0), (311, 5), (599, 7)]:
        d = np.zeros_like(x0)
        d[i, j] = eps
        fd = (loss(x0 + d) - loss(x0 - d)) / (2 * eps)
        np.testing.assert_allclose(x.grad.numpy()[i, j], fd, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("twice", [False, True], ids=["once", "retained"])
def test_gelu_gradient_matches_torch(twice: bool) -> None:
    x0 = (RNG.standard_normal((4, 50, 33)) * 3).astype(np.float32)
    seed = RNG.standard_normal(x0.shape).astype(np.float32)
    ours = _grads(lg, lambda T, x: T.nn.functional.gelu(x), [x0], seed, twice)
    theirs = _grads(torch, lambda T, x: T.nn.functional.gelu(x), [x0], seed)
    for o, t in zip(ours, theirs):
        np.testing.assert_allclose(o, t, rtol=2e-5, atol=2e-6)


def test_gelu_kernel_matches_erf_across_float32() -> None:
    # every float32 in [-10, 10] at a fine step, against erf in float64
    x = np.linspace(-10, 10, 400_001).astype(np.float32)
    xd = x.astype(np.float64)
    phi = 0.5 * (1 + np.array([float(torch.erf(torch.tensor(v / np.sqrt(2), dtype=torch.float64))) for v in xd[::97]]))
    out, d = B.gelu(x, "none", True)
    ref = xd[::97] * phi
    dref = phi + xd[::97] * np.exp(-0.5 * xd[::97] ** 2) / np.sqrt(2 * np.pi)
    np.testing.assert_allclose(out[::97], ref, rtol=2e-6, atol=5e-7)
    np.testing.assert_allclose(d[::97], dref, rtol=2e-6, atol=5e-7)


@pytest.mark.parametrize("dim", [-1, 1])
def test_softmax_gradient_matches_torch(dim: int) -> None:
    x0 = RNG.standard_normal((4, 6, 16, 16)).astype(np.float32)
    seed = RNG.standard_normal(x0.shape).astype(np.float32)
    ours = _grads(lg, lambda T, x: x.softmax(dim), [x0], seed)
    theirs = _grads(torch, lambda T, x: x.softmax(dim), [x0], seed)
    for o, t in zip(ours, theirs):
        np.testing.assert_allclose(o, t, rtol=1e-5, atol=1e-6)


def test_softmax_gradient_of_a_sum() -> None:
    # the gradient of .sum() arrives as a broadcast of one 1 (all strides 0): softmax's rows sum
    # to 1, so the input gradient is 0
    x0 = RNG.standard_normal((8, 64, 64)).astype(np.float32)
    for T in (lg, torch):
        x = T.tensor(x0, requires_grad=True)
        x.softmax(-1).sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), 0, atol=1e-6)


def test_dot_along_matches_numpy() -> None:
    x = RNG.standard_normal((3, 4, 5))
    y = RNG.standard_normal((4, 5))
    for axis in (0, 1, 2, -1):
        a = axis if axis < 0 else axis
        np.testing.assert_allclose(B.dot_along(x, np.broadcast_to(y, x.shape), a), (x * y).sum(a, keepdims=True))
    np.testing.assert_allclose(B.dot_along(x, y, -1), (x * y).sum(-1, keepdims=True))
