"""Indexing ops against PyTorch: scatter and index_* forms, take/put, masked_fill and masked_scatter, index_put.

Also the backend kernels behind them, checked bit for bit: ``where`` with a zero branch (a
masked_fill and its backward) and the row sums of ``add_at`` (index_put with accumulate, the
embedding backward)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from helpers import assert_same_exactly, on_both

import lightgrad as lg
from lightgrad import backend as B

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(0)


# ---- scatter_reduce, index_add, index_copy, index_fill, take, put --------------------------------

def test_scatter_reduce_amax_ties_split_gradient() -> None:
    data = np.array([[1.0, 2.0, 0.0]])
    src = np.array([[2.0, 2.0, 5.0]])
    idx = [[1, 1, 2]]
    for include_self in (True, False):
        out = []
        for T in (lg, torch):
            x = T.tensor(data, requires_grad=True)
            s = T.tensor(src, requires_grad=True)
            y = x.scatter_reduce(1, T.tensor(idx), s, "amax", include_self=include_self)
            (y * T.tensor([[1.0, 3.0, 7.0]], dtype=T.float64)).sum().backward()
            out.append((y.detach().numpy(), x.grad.numpy(), s.grad.numpy()))
        for a, b in zip(*out):
            np.testing.assert_allclose(a, b)


def test_scatter_reduce_max_alias() -> None:
    assert_same_exactly(*on_both(lambda T, x: x.scatter_reduce(0, T.tensor([0, 0, 2]), T.tensor([2.0, -1.0, 4.0],
                                                                                                dtype=T.float64),
                                                       "max"),
                              np.zeros(3)))


@pytest.mark.parametrize("op", [
    lambda x, T: x.index_add_(1, T.tensor([0, 2, 0]), T.ones(2, 3, dtype=T.float64), alpha=-2),
    lambda x, T: x.index_copy_(0, T.tensor([1]), T.full((1, 3), 9.0, dtype=T.float64)),
    lambda x, T: x.index_fill_(1, T.tensor([2]), 4.0),
    lambda x, T: x.scatter_reduce_(1, T.tensor([[0, 0], [1, 2]]), T.ones(2, 2, dtype=T.float64), "sum"),
    lambda x, T: x.put_(T.tensor([0, 5]), T.tensor([7.0, 8.0], dtype=T.float64)),
])
def test_inplace_variants(op: Any) -> None:
    data = np.arange(6.0).reshape(2, 3)
    vals = []
    for T in (lg, torch):
        x = T.tensor(data)
        r = op(x, T)
        assert r is x
        vals.append(x.numpy())
    np.testing.assert_array_equal(*vals)
    # on a non-leaf the gradient flows through the in-place op
    g = []
    for T in (lg, torch):
        leaf = T.tensor(data, requires_grad=True)
        x = leaf * 2
        op(x, T)
        (x * T.tensor(np.arange(6.0).reshape(2, 3) + 1)).sum().backward()
        g.append(leaf.grad.numpy())
    np.testing.assert_array_equal(*g)


def test_index_add_alpha_duplicates_grad() -> None:
    data = np.arange(6.0).reshape(3, 2)
    src = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    out = []
    for T in (lg, torch):
        x = T.tensor(data, requires_grad=True)
        s = T.tensor(src, requires_grad=True)
        y = T.index_add(x, 0, T.tensor([2, 2, 0]), s, alpha=0.5)
        (y * y).sum().backward()
        out.append((y.detach().numpy(), x.grad.numpy(), s.grad.numpy()))
    for a, b in zip(*out):
        np.testing.assert_allclose(a, b)


def test_take_put_and_functions() -> None:
    data = np.arange(6.0).reshape(2, 3)
    assert_same_exactly(*on_both(lambda T, a: T.take(a, T.tensor([[-1, 0], [2, 2]])), data))
    assert_same_exactly(*on_both(lambda T, a: T.put(a, T.tensor([1, 1]), T.tensor([5.0, 6.0], dtype=T.float64),
                                                    accumulate=True), data))
    assert_same_exactly(*on_both(lambda T, a: T.msort(a), data[::-1].copy()))
    assert_same_exactly(*on_both(lambda T, a: T.std_mean(a, 1, keepdim=True)[0], data))
    assert_same_exactly(*on_both(lambda T, a: T.var_mean(a, unbiased=False)[1], data))


def test_errors_leave_tensor_unchanged() -> None:
    x = lg.ones(2, 3)
    with pytest.raises(RuntimeError):
        x.index_add_(1, lg.tensor([0, 1]), lg.ones(2, 3))
    with pytest.raises(IndexError):
        x.index_fill_(1, lg.tensor([3]), 0.0)
    with pytest.raises(RuntimeError):
        x.scatter_reduce_(1, lg.tensor([[0]]), lg.ones(1, 1), "foo")
    np.testing.assert_array_equal(x.numpy(), np.ones((2, 3)))
    assert x._version[0] == 0


@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce_prod_gradient_with_zeros(include_self: bool) -> None:
    # positions: 0 gets one zero (from src), 1 two zeros, 2 a zero in self only, 3 none
    data = np.array([[2.0, 0.0, 0.0, 1.5, 4.0]])
    src = np.array([[0.0, 3.0, 0.0, -2.0, 5.0, 0.5]])
    idx = [[0, 0, 1, 3, 2, 3]]
    res = []
    for T in (lg, torch):
        x = T.tensor(data, requires_grad=True)
        s = T.tensor(src, requires_grad=True)
        y = x.scatter_reduce(1, T.tensor(idx), s, "prod", include_self=include_self)
        (y * T.tensor([[1.0, 2.0, 3.0, 4.0, 5.0]], dtype=T.float64)).sum().backward()
        res.append((y.detach().numpy(), x.grad.numpy(), s.grad.numpy()))
    for a, b in zip(*res):
        np.testing.assert_allclose(a, b, rtol=1e-12)


@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce_integers(reduce: str, include_self: bool) -> None:
    assert_same_exactly(*on_both(lambda T, x, s: x.scatter_reduce(1, T.tensor([[0, 0, 2]]), s, reduce,
                                                                  include_self=include_self),
                              np.array([[5, 2, 7, 1]]), np.array([[3, 9, 4]])))


# ---- masked_fill, masked_scatter, fill_diagonal, unfold, unravel_index, argwhere -----------------

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


def test_masked_scatter_inplace_and_unfold_view_shapes() -> None:
    base = np.arange(12.0).reshape(3, 4)
    mask = base % 3 == 0
    src = -np.arange(10.0)
    lo = lg.tensor(base).masked_scatter_(lg.tensor(mask), lg.tensor(src))
    to = torch.tensor(base).masked_scatter_(torch.tensor(mask), torch.tensor(src))
    np.testing.assert_array_equal(lo.numpy(), to.numpy())
    for args in [(0, 2, 1), (1, 3, 2), (-1, 4, 4), (1, 1, 3)]:
        lu, tu = lg.tensor(base).unfold(*args), torch.tensor(base).unfold(*args)
        np.testing.assert_array_equal(lu.numpy(), tu.numpy(), err_msg=str(args))


@pytest.mark.parametrize("shape,wrap", [((3, 3, 3), False), ((7, 3), True), ((7, 3), False), ((2, 5), True)])
def test_fill_diagonal_matches_torch(shape: tuple[int, ...], wrap: bool) -> None:
    a = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    lo = lg.tensor(a).fill_diagonal_(-1.0, wrap=wrap)
    to = torch.tensor(a).fill_diagonal_(-1.0, wrap=wrap)
    np.testing.assert_array_equal(lo.numpy(), to.numpy())


@pytest.mark.parametrize("shape", [(2, 3), (4,), (1, 5, 2), ()])
def test_unravel_index_matches_torch(shape: tuple[int, ...]) -> None:
    n = int(np.prod(shape))
    idx = np.array([0, n - 1, -1, n + 2, 2 * n - 1 if n > 1 else 0])
    lo, to = lg.unravel_index(lg.tensor(idx), shape), torch.unravel_index(torch.tensor(idx), shape)
    assert len(lo) == len(to)
    for a, b in zip(lo, to):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


@pytest.mark.parametrize("value", [0.0, 2.5])
def test_argwhere_scalar_matches_torch(value: float) -> None:
    lo, to = lg.tensor(value).argwhere(), torch.tensor(value).argwhere()
    assert tuple(lo.shape) == tuple(to.shape) and lo.dtype.name == "int64"


# ---- where with a zero branch: one AND of the other branch's bits --------------------------------

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
        before, slicing = lg.get_num_threads(), B.threads._threads[0]
        lg.set_num_threads(2)
        try:
            got = B.where(c, 0, y).view(np.uint32)
        finally:
            lg.set_num_threads(before)
            B.threads._threads[0] = slicing  # the NumPy path's ufunc slicing as it was (off unless set)
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


# ---- index_put with accumulate: add_at's row sums ------------------------------------------------

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


def test_sorted_row_sums_match_add_at() -> None:
    idx = RNG.integers(-7, 7, (40, 5))
    v = RNG.standard_normal((40, 5, 3))
    ours, ref = np.zeros((7, 3)), np.zeros((7, 3))
    B.add_at(ours, (idx,), v)
    np.add.at(ref, (idx,), v)
    np.testing.assert_allclose(ours, ref, rtol=1e-12, atol=1e-12)


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


# ---- Python sequences as indices: range, tuples inside the index, PyTorch's non-tuple rule --------
SEQUENCE_INDICES = {
    "range": lambda T, i: (range(3),),
    "range_and_tensor": lambda T, i: (range(3), i),
    "empty_range": lambda T, i: (range(0),),
    "stepped_range_and_int": lambda T, i: (range(1, 4, 2), 2),
    "slice_and_range": lambda T, i: (slice(None), range(5)),
    "two_ranges": lambda T, i: (range(4), range(4)),
    "tuple_inside": lambda T, i: ((0, 1), slice(None)),
    "list_pair": lambda T, i: ([0, 1], [1, 2]),
    "list_of_lists": lambda T, i: [[0, 1], [1, 2]],  # (non-tuple sequence read as a tuple, deprecated)
    "list_with_slice": lambda T, i: [0, slice(None)],
    "list_with_tensor": lambda T, i: [T.tensor(1), 2],
    "list_with_none": lambda T, i: [None, 0],
    "list_with_ellipsis": lambda T, i: [Ellipsis, 0],
    "list_with_range": lambda T, i: [range(2)],
    "numpy_2d": lambda T, i: (np.array([[0, 1], [1, 2]]),),
    "long_list": lambda T, i: (list(range(4)) * 10,),
}


def _seq_index(T: Any, name: str) -> Any:
    idx = SEQUENCE_INDICES[name](T, T.tensor([0, 2, 1]))
    return idx if isinstance(idx, list) else (idx[0] if len(idx) == 1 else idx)


@pytest.mark.filterwarnings("ignore:Using a non-tuple sequence")
@pytest.mark.parametrize("name", list(SEQUENCE_INDICES))
def test_sequence_index_read_and_grad(name: str) -> None:
    data = RNG.standard_normal((4, 6))
    out = []
    for T in (torch, lg):
        x = T.tensor(data, requires_grad=True)
        y = x[_seq_index(T, name)]
        (y * T.arange(y.numel(), dtype=T.float64).reshape(y.shape)).sum().backward()
        out.append((y.detach().numpy(), x.grad.numpy()))
    assert out[0][0].shape == out[1][0].shape
    np.testing.assert_array_equal(out[1][0], out[0][0])
    np.testing.assert_array_equal(out[1][1], out[0][1])


@pytest.mark.filterwarnings("ignore:Using a non-tuple sequence")
@pytest.mark.parametrize("name", [n for n in SEQUENCE_INDICES if n not in ("two_ranges", "long_list")])
def test_sequence_index_assign(name: str) -> None:
    out = []
    for T in (torch, lg):
        x = T.zeros(4, 6)
        x[_seq_index(T, name)] = 5.0
        out.append(x.numpy())
    np.testing.assert_array_equal(out[1], out[0])


def test_range_index_assign_with_gradient() -> None:
    # x[range(n), target] = v, the way a loss written by hand does it
    target, v = [1, 0, 3], RNG.standard_normal(3)
    grads = []
    for T in (torch, lg):
        w = T.tensor(v, requires_grad=True)
        x = T.zeros(3, 4, dtype=T.float64)
        x[range(3), T.tensor(target)] = w
        (x * T.arange(12.0, dtype=T.float64).reshape(3, 4)).sum().backward()
        grads.append(w.grad.numpy())
    np.testing.assert_array_equal(grads[1], grads[0])


def test_non_tuple_sequence_warns_as_pytorch() -> None:
    x = lg.zeros(4, 6)
    with pytest.warns(UserWarning, match="non-tuple sequence for multidimensional indexing"):
        x[[0, slice(None)]]


@pytest.mark.filterwarnings("ignore:Using a non-tuple sequence")
@pytest.mark.parametrize("index", [lambda: (range(3), [0, 1]), lambda: "a"], ids=["mismatch", "str"])
def test_sequence_index_errors(index: Any) -> None:
    errs = []
    for T in (torch, lg):
        with pytest.raises((IndexError, TypeError)) as e:
            T.zeros(4, 6)[index()]
        errs.append((type(e.value), str(e.value).split(" (Triggered")[0]))
    assert errs[1] == errs[0]
