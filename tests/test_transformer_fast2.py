"""More of the transformer step's fast paths give PyTorch's results: a ``where`` with a +0 branch
as one AND of the other branch's bits (a masked_fill's backward), softmax as the exponentials
times 1 / sum (PyTorch's arithmetic), and the embedding backward's scatter-add when no index
repeats (position embeddings)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import lightgrad as lg
from lightgrad import backend as B

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(0)


def _special(shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    """Random values with NaN, +-inf and -0.0 among them (the AND must keep their bits)."""
    a = RNG.standard_normal(shape).astype(dtype)
    flat = a.reshape(-1)
    flat[::7] = np.nan
    flat[1::11] = np.inf
    flat[2::13] = -np.inf
    flat[3::5] = -0.0
    return a


def _mask(shape: tuple[int, ...]) -> np.ndarray:
    return np.triu(np.ones(shape, bool), 1)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("zero_first", [True, False], ids=["where(c,0,y)", "where(c,x,0)"])
@pytest.mark.parametrize("zero", [0, 0.0, np.float32(0), "0-d"], ids=["int", "float", "np32", "0d"])
def test_where_with_a_zero_branch_is_bit_exact(dtype: Any, zero_first: bool, zero: Any) -> None:
    y = _special((4, 8, 32, 32), dtype)  # 32768 entries: enough for the bit path
    c = _mask((32, 32))  # broadcast over the leading axes: the bit path
    z = np.asarray(0, dtype) if isinstance(zero, str) else zero
    got = B.where(c, z, y) if zero_first else B.where(c, y, z)
    want = np.where(c, z, y) if zero_first else np.where(c, y, z)
    assert got.dtype == want.dtype
    assert got.shape == want.shape
    # bit for bit: NaN payloads, infinities and -0.0 of the array, +0.0 where the zero goes
    np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))


def test_where_with_a_zero_branch_on_strided_and_broadcast_arrays() -> None:
    base = _special((64, 32, 32), np.float32)
    y = base[:, :, ::2].transpose(1, 0, 2)  # (32, 64, 16), not contiguous
    c = RNG.random((64, 1)) < 0.5  # broadcast along the last axis (a random mask)
    np.testing.assert_array_equal(B.where(c, 0, y).view(np.uint32), np.where(c, np.float32(0), y).view(np.uint32))
    row = _special((128,), np.float32)  # the array branch broadcast too
    c2 = RNG.random((200, 1)) < 0.5
    np.testing.assert_array_equal(B.where(c2, row, 0.0).view(np.uint32),
                                  np.where(c2, row, np.float32(0)).view(np.uint32))


@pytest.mark.parametrize("setting", ["arena", "threads"])
def test_where_with_a_zero_branch_in_an_arena_and_on_threads(setting: str) -> None:
    y = _special((16, 4, 64, 64), np.float32)  # 262144 entries: sliced across threads
    c = _mask((64, 64))
    want = np.where(c, np.float32(0), y).view(np.uint32).copy()
    if setting == "arena":
        with lg.memory.arena("16MB"):
            got = B.where(c, 0, y).view(np.uint32).copy()
    else:
        before = lg.get_num_threads()
        lg.set_num_threads(2)
        try:
            got = B.where(c, 0, y).view(np.uint32)
        finally:
            lg.set_num_threads(before)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("value", [-0.0, 1.0, np.float32(-0.0)], ids=["-0.0", "one", "np-0.0"])
def test_where_with_another_scalar_keeps_its_value(value: Any) -> None:
    # -0.0 is not +0: its sign bit must reach the output (the AND alone would write +0.0)
    y = _special((32, 32, 32), np.float32)
    c = _mask((32, 32))
    got = B.where(c, value, y)
    want = np.where(c, np.float32(value), y)
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))


def test_where_of_another_dtype_is_not_reinterpreted() -> None:
    # a float64 zero branch with a float32 array gives float64 (NumPy's promotion), by value
    y = RNG.standard_normal((32, 32, 32)).astype(np.float32)
    c = _mask((32, 32))
    z = np.asarray(0.0)
    got = B.where(c, z, y)
    want = np.where(c, z, y)
    assert got.dtype == want.dtype == np.float64
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("shape", [(4, 8, 32, 32), (6, 5)], ids=["bits", "small"])
def test_masked_fill_gradient_matches_torch(shape: tuple[int, ...]) -> None:
    x0 = RNG.standard_normal(shape).astype(np.float32)
    m0 = _mask(shape[-2:])
    seed = RNG.standard_normal(shape).astype(np.float32)
    grads = []
    for T in (lg, torch):
        x = T.tensor(x0, requires_grad=True)
        y = x.masked_fill(T.tensor(m0), float("-inf")).softmax(-1)
        (T.nan_to_num(y) * T.tensor(seed)).sum().backward()
        grads.append((y.detach().numpy(), x.grad.numpy()))
    np.testing.assert_allclose(grads[0][0], grads[1][0], rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(grads[0][1], grads[1][1], rtol=1e-5, atol=1e-6)
    assert np.all(grads[0][1][..., m0] == 0)


def test_masked_fill_zero_gradient_matches_finite_differences() -> None:
    # masked_fill(mask, 0.0) forward takes the bit path (32768 entries); its backward,
    # where(mask, 0, g), too. Central differences at 60 random entries (the rest by formula).
    shape = (2, 16, 32, 32)
    x0 = RNG.standard_normal(shape)
    m0 = _mask((32, 32))
    seed = RNG.standard_normal(shape)
    x = lg.tensor(x0, requires_grad=True)
    y = (x * x).masked_fill(lg.tensor(m0), 0.0)
    (y * lg.tensor(seed)).sum().backward()
    np.testing.assert_array_equal(y.detach().numpy(), np.where(m0, 0.0, x0 * x0))
    np.testing.assert_allclose(x.grad.numpy(), np.where(m0, 0.0, 2 * x0 * seed), rtol=1e-12)

    def f(a: np.ndarray) -> float:
        return float(np.sum(np.where(m0, 0.0, a * a) * seed))

    eps = 1e-6
    for k in RNG.choice(x0.size, 60, replace=False):
        i = np.unravel_index(k, shape)
        a = x0.copy()
        a[i] += eps
        hi = f(a)
        a[i] -= 2 * eps
        np.testing.assert_allclose(x.grad.numpy()[i], (hi - f(a)) / (2 * eps), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_softmax_is_exponentials_times_reciprocal_sum(dtype: Any) -> None:
    x = (RNG.standard_normal((4, 4, 16, 16)) * 3).astype(dtype)
    got = B.softmax(x, 3)
    e = np.exp(x - x.max(3, keepdims=True))
    s = e.sum(3, keepdims=True)
    # PyTorch's kernel multiplies by 1 / sum: within a rounding of exp / sum, and summing to 1
    np.testing.assert_allclose(got, e / s, rtol=4 * np.finfo(dtype).eps, atol=0)
    np.testing.assert_allclose(got.sum(3), 1, rtol=32 * np.finfo(dtype).eps)
    want = torch.softmax(torch.tensor(x), 3).numpy()
    np.testing.assert_allclose(got, want, rtol=8 * np.finfo(dtype).eps, atol=np.finfo(dtype).tiny)


def test_softmax_gradient_matches_finite_differences() -> None:
    x0 = RNG.standard_normal((3, 5, 7))
    seed = RNG.standard_normal((3, 5, 7))
    x = lg.tensor(x0, requires_grad=True)
    (x.softmax(1) * lg.tensor(seed)).sum().backward()

    def f(a: np.ndarray) -> float:
        e = np.exp(a - a.max(1, keepdims=True))
        return float(np.sum(e / e.sum(1, keepdims=True) * seed))

    num = np.zeros_like(x0)
    for i in np.ndindex(x0.shape):
        a = x0.copy()
        a[i] += 1e-6
        hi = f(a)
        a[i] -= 2e-6
        num[i] = (hi - f(a)) / 2e-6
    np.testing.assert_allclose(x.grad.numpy(), num, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("index", ["arange", "permuted", "negative", "repeats"])
def test_add_at_rows(index: str) -> None:
    n = 80  # at least 64 indices: the sorting path
    out0 = RNG.standard_normal((n, 3, 4))
    if index == "arange":
        idx = np.arange(n)
    elif index == "permuted":
        idx = RNG.permutation(n)[:70]
    elif index == "negative":
        idx = RNG.permutation(n)[:70] - n  # all distinct rows, written negative
    else:
        idx = RNG.integers(0, 5, 70)
    v = RNG.standard_normal(idx.shape + (3, 4))
    got = out0.copy()
    B.add_at(got, idx, v)
    want = out0.copy()
    np.add.at(want, idx, v)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_position_embedding_gradient_matches_torch() -> None:
    # pos(arange(L)) broadcast over a batch: the rows' gradients are the batch sums, one per row
    L, d = 64, 16
    w0 = RNG.standard_normal((L, d)).astype(np.float32)
    tok0 = RNG.standard_normal((5, L, d)).astype(np.float32)
    seed = RNG.standard_normal((5, L, d)).astype(np.float32)
    grads = []
    for T in (lg, torch):
        emb = T.nn.Embedding(L, d)
        with T.no_grad():
            emb.weight.copy_(T.tensor(w0))
        y = T.tensor(tok0) + emb(T.arange(L))
        (y * T.tensor(seed)).sum().backward()
        grads.append(emb.weight.grad.numpy())
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(grads[0], seed.sum(0), rtol=1e-5, atol=1e-5)


def test_unique_index_put_accumulate_matches_torch() -> None:
    x0 = RNG.standard_normal((100, 4)).astype(np.float32)
    v0 = RNG.standard_normal((70, 4)).astype(np.float32)
    idx = RNG.permutation(100)[:70]
    res = []
    for T in (lg, torch):
        x = T.tensor(x0, requires_grad=True)
        v = T.tensor(v0, requires_grad=True)
        y = x.index_put((T.tensor(idx),), v, accumulate=True)
        y.sum().backward()
        res.append((y.detach().numpy(), x.grad.numpy(), v.grad.numpy()))
    for a, b in zip(*res):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)
