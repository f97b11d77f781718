"""Issue 9's attention and layer-norm fast paths give PyTorch's results: the batched product with a
transposed right operand (q @ k^T, and g @ v^T in p @ v's backward) copies that operand to
row-major first, and layer norm's backward takes every row and column sum as a BLAS product and
rstd w as one outer-product matrix, by blocks of rows."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import lightgrad as lg
from lightgrad import backend as B

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(0)


def _grads(T: Any, f: Any, arrays: list[np.ndarray], seed: np.ndarray, need: list[bool] | None = None) -> list[Any]:
    """The output of f and the gradients of (f * seed).sum() for the inputs that require them."""
    need = need or [True] * len(arrays)
    xs = [T.tensor(a, requires_grad=r) for a, r in zip(arrays, need)]
    y = f(T, *xs)
    (y * T.tensor(seed)).sum().backward()
    return [y.detach().numpy()] + [x.grad.numpy() if r else None for x, r in zip(xs, need)]


def _attention(T: Any, q: Any, k: Any, v: Any) -> Any:
    att = (q @ k.transpose(-2, -1)) * 0.25
    mask = T.triu(T.ones(q.shape[-2], q.shape[-2]), diagonal=1) > 0
    return att.masked_fill(mask, float("-inf")).softmax(-1) @ v


def test_bmm_copies_a_small_transposed_right_operand_and_keeps_the_product() -> None:
    qkv = RNG.standard_normal((2, 16, 3 * 32)).astype(np.float32)
    q = qkv[..., :32].reshape(2, 16, 4, 8).transpose(0, 2, 1, 3)  # (B, nh, L, hs): strided views
    k = qkv[..., 32:64].reshape(2, 16, 4, 8).transpose(0, 2, 1, 3)
    kt = k.swapaxes(-1, -2)
    assert B._bmm_copies(q, kt)  # the transposed layout takes the copy
    assert not B._bmm_copies(kt, q.swapaxes(-1, -2).copy())  # a row-major one does not
    assert not B._bmm_copies(q[0, 0], kt[0, 0])  # nor a single 2-D product
    np.testing.assert_allclose(B.bmm(q, kt), np.matmul(q.astype(np.float64), kt), rtol=1e-5, atol=1e-5)
    assert B.bmm.raw(q, kt) is None and B.bmm.raw(kt, q)[0] is np.matmul


@pytest.mark.parametrize("shape", [(2, 4, 16, 8), (3, 2, 64, 32)], ids=["small", "bench_heads"])
def test_attention_products_match_torch(shape: tuple[int, ...]) -> None:
    q0, k0, v0 = (RNG.standard_normal(shape).astype(np.float32) for _ in range(3))
    seed = RNG.standard_normal(shape).astype(np.float32)
    ours = _grads(lg, _attention, [q0, k0, v0], seed)
    theirs = _grads(torch, _attention, [q0, k0, v0], seed)
    for o, t in zip(ours, theirs):
        np.testing.assert_allclose(o, t, rtol=1e-4, atol=1e-5)


def _ln(T: Any, x: Any, w: Any, b: Any) -> Any:
    return T.nn.functional.layer_norm(x, (x.shape[-1],), w, b)


def _ln_plain(T: Any, x: Any) -> Any:
    return T.nn.functional.layer_norm(x, (x.shape[-1],))


# (3, 700, 128): 2100 rows, five blocks of rows, the last one partial
@pytest.mark.parametrize("need", [[True, True, True], [True, False, False], [False, True, True], [False, True, False]],
                         ids=["all", "input_only", "affine_only", "weight_only"])
def test_layer_norm_backward_blocks_match_torch(need: list[bool]) -> None:
    shape = (3, 700, 128)
    x0 = (RNG.standard_normal(shape) * 3 + 5).astype(np.float32)  # a mean far from 0
    w0, b0 = RNG.standard_normal(128).astype(np.float32), RNG.standard_normal(128).astype(np.float32)
    seed = RNG.standard_normal(shape).astype(np.float32)
    ours = _grads(lg, _ln, [x0, w0, b0], seed, need)
    theirs = _grads(torch, _ln, [x0, w0, b0], seed, need)
    for o, t in zip(ours, theirs):
        if t is None:
            assert o is None
        else:
            np.testing.assert_allclose(o, t, rtol=1e-4, atol=5e-5)


def test_layer_norm_without_affine_over_blocks_matches_finite_differences() -> None:
    x0 = RNG.standard_normal((9000, 16))  # float64, 9000 rows: two blocks, the last one partial
    seed = RNG.standard_normal((9000, 16))
    x = lg.tensor(x0, requires_grad=True)
    (_ln_plain(lg, x) * lg.tensor(seed)).sum().backward()

    def loss(a: np.ndarray) -> float:
        return float((_ln_plain(lg, lg.tensor(a)) * lg.tensor(seed)).sum().item())
    eps = 1e-6
    for i, j in [(0, 0), (4100, 5), (8999, 15)]:
        d = np.zeros_like(x0)
        d[i, j] = eps
        fd = (loss(x0 + d) - loss(x0 - d)) / (2 * eps)
        np.testing.assert_allclose(x.grad.numpy()[i, j], fd, rtol=1e-5, atol=1e-7)
