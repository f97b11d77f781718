"""Sorting, scans and indexing ops against PyTorch: named-tuple results, ties, NaNs, zeros,
in-place variants and the inverse/counts of unique (what the op table in test_ops.py cannot say)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import lightgrad as lg

torch = pytest.importorskip("torch")

NAN = float("nan")
TIES = np.array([[2.0, 1.0, 1.0, 3.0, 1.0, 3.0], [0.0, 0.0, 5.0, 5.0, 0.0, 5.0]])
WITH_NAN = np.array([[1.0, 3.0, 3.0, NAN, 2.0, NAN, 0.0], [5.0, 1.0, 1.0, 2.0, 2.0, 0.0, 7.0],
                     [NAN, NAN, NAN, NAN, NAN, NAN, NAN]])


def both(fn: Any, *arrays: np.ndarray) -> tuple[Any, Any]:
    return fn(lg, *[lg.tensor(a) for a in arrays]), fn(torch, *[torch.tensor(a) for a in arrays])


def same(a: Any, b: Any) -> None:
    a = a.detach().numpy() if isinstance(a, lg.Tensor) else np.asarray(a)
    b = b.detach().numpy()
    assert a.shape == b.shape and a.dtype == b.dtype, (a.shape, a.dtype, b.shape, b.dtype)
    np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("call", [
    lambda T, x: x.sort(1), lambda T, x: T.topk(x, 2), lambda T, x: x.kthvalue(2),
    lambda T, x: x.median(0), lambda T, x: T.nanmedian(x, 1), lambda T, x: x.mode(1),
    lambda T, x: x.cummax(1), lambda T, x: T.cummin(x, 0),
])
def test_named_tuples(call: Any) -> None:
    r, t = both(call, TIES)
    assert type(r).__name__ == type(t).__name__
    assert r._fields == ("values", "indices")
    values, indices = r
    assert values is r.values and indices is r.indices
    assert r.indices.dtype == lg.int64
    same(r.values, t.values)


def test_aminmax_fields() -> None:
    r, t = both(lambda T, x: T.aminmax(x, dim=1, keepdim=True), TIES)
    assert type(r).__name__ == "aminmax" and r._fields == ("min", "max")
    same(r.min, t.min)
    same(r.max, t.max)


@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize("data", [TIES, WITH_NAN])
def test_stable_sort_matches_torch_indices(descending: bool, data: np.ndarray) -> None:
    r, t = both(lambda T, x: x.sort(dim=1, descending=descending, stable=True), data)
    np.testing.assert_array_equal(r.values.numpy(), t.values.numpy())
    same(r.indices, t.indices)
    same(*both(lambda T, x: T.argsort(x, dim=1, descending=descending, stable=True), data))


@pytest.mark.parametrize("call,dim", [
    (lambda T, x: T.topk(x, 3, 1), 1), (lambda T, x: x.topk(4, largest=False), 1), (lambda T, x: x.kthvalue(3, 1), 1),
    (lambda T, x: x.median(1), 1), (lambda T, x: x.median(0, keepdim=True), 0), (lambda T, x: x.nanmedian(1), 1),
    (lambda T, x: x.mode(1), 1), (lambda T, x: x.mode(0, True), 0),
])
def test_ties_values_and_indices_consistent(call: Any, dim: int) -> None:
    """With ties PyTorch documents no particular index: compare values, and check that the
    indices point at them."""
    r, t = both(call, TIES)
    same(r.values, t.values)
    assert tuple(r.indices.shape) == tuple(t.indices.shape)
    x = lg.tensor(TIES)
    ind = r.indices if r.indices.ndim == 2 else r.indices.unsqueeze(dim)
    vals = r.values if r.values.ndim == 2 else r.values.unsqueeze(dim)
    np.testing.assert_array_equal(x.gather(dim, ind).numpy(), vals.numpy())


def test_mode_picks_smallest_value_at_last_occurrence() -> None:
    data = np.array([[3.0, 1.0, 3.0, 1.0, 2.0, 2.0], [5.0, 5.0, 1.0, 1.0, 1.0, 0.0]])
    r, t = both(lambda T, x: x.mode(1), data)
    same(r.values, t.values)
    same(r.indices, t.indices)


@pytest.mark.parametrize("call", [
    lambda T, x: x.median(1), lambda T, x: x.nanmedian(1), lambda T, x: x.cummax(1),
    lambda T, x: x.cummin(1), lambda T, x: x.sort(1, descending=True),
])
def test_nan_values_and_indices(call: Any) -> None:
    r, t = both(call, WITH_NAN)
    np.testing.assert_array_equal(r.values.numpy(), t.values.numpy())  # NaN == NaN here
    # (an all-NaN row's nanmedian index is whichever NaN PyTorch's selection leaves there)
    same(r.indices[:2], t.indices[:2])


def test_median_all_nan_and_lower_middle() -> None:
    for data in (WITH_NAN, TIES, np.arange(6.0)):
        np.testing.assert_array_equal(*[v.numpy() for v in both(lambda T, x: x.median(), data)])
        np.testing.assert_array_equal(*[v.numpy() for v in both(lambda T, x: T.nanmedian(x), data)])


def test_ties_cummax_indices() -> None:
    data = np.array([[2.0, 1.0, 1.0, 3.0, 1.0, 3.0, 3.0], [1.0, 1.0, 1.0, 0.0, 0.0, 1.0, 0.0]])
    for f in (lambda T, x: x.cummax(1), lambda T, x: x.cummin(1)):
        r, t = both(f, data)
        same(r.values, t.values)
        same(r.indices, t.indices)


def grads(fn: Any, data: np.ndarray, g: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    a = lg.tensor(data, requires_grad=True)
    b = torch.tensor(data, requires_grad=True)
    ra, rb = fn(lg, a), fn(torch, b)
    w = np.random.default_rng(0).normal(size=tuple(rb.shape)) if g is None else g
    (ra * lg.tensor(w)).sum().backward()
    (rb * torch.tensor(w)).sum().backward()
    return a.grad.numpy(), b.grad.numpy()


@pytest.mark.parametrize("data", [
    np.array([[2.0, 0.0, 3.0, -1.5, 0.5]]),  # one zero
    np.array([[0.0, 2.0, 0.0, 3.0], [1.5, -2.0, 0.5, 0.0]]),  # two zeros; a zero at the end
    np.array([[0.0, 0.0, 0.0]]),
])
def test_cumprod_gradient_with_zeros(data: np.ndarray) -> None:
    a = lg.tensor(data)
    same(a.cumprod(1), torch.tensor(data).cumprod(1))
    np.testing.assert_allclose(*grads(lambda T, x: x.cumprod(1), data), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(*grads(lambda T, x: x.cumprod(0), data.T.copy()), rtol=1e-12, atol=1e-12)


def test_cumprod_double_backward() -> None:
    data = np.array([[1.5, -0.5, 2.0, 0.7]])
    out = []
    for T in (lg, torch):
        x = T.tensor(data, requires_grad=True)
        (g,) = T.autograd.grad(x.cumprod(1).sum(), x, create_graph=True)
        (g * g).sum().backward()
        out.append(x.grad.detach().numpy())
    np.testing.assert_allclose(out[0], out[1], rtol=1e-10)


def test_cumprod_int_and_0d() -> None:
    same(*both(lambda T, x: x.cumprod(0), np.array([1, 2, 3, 4])))
    same(*both(lambda T, x: x.cumprod(0), np.array(2.5)))
    same(*both(lambda T, x: x.cummax(0).values, np.array(2.5)))
    same(*both(lambda T, x: x.sort().values, np.array(2.5)))
    same(*both(lambda T, x: x.median(0).indices, np.array(2.5)))


def test_logcumsumexp_extreme_values() -> None:
    data = np.array([[-1000.0, 0.0, 1000.0, 999.0], [-np.inf, -np.inf, 1.0, -np.inf]])
    r, t = both(lambda T, x: x.logcumsumexp(1), data)
    np.testing.assert_allclose(r.numpy(), t.numpy(), rtol=1e-12)
    g = np.array([[1.0, -2.0, 0.5, 3.0], [-1.0, 2.0, 0.0, 1.0]])  # mixed signs and a zero
    np.testing.assert_allclose(*grads(lambda T, x: x.logcumsumexp(1), data, g), rtol=1e-10, atol=1e-300)


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
    same(*both(lambda T, x: x.scatter_reduce(0, T.tensor([0, 0, 2]), T.tensor([2.0, -1.0, 4.0], dtype=T.float64),
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


@pytest.mark.parametrize("kw", [{}, {"return_inverse": True}, {"return_counts": True},
                                {"return_inverse": True, "return_counts": True}])
@pytest.mark.parametrize("dim", [None, 0, 1])
def test_unique_inverse_counts(kw: dict[str, bool], dim: int | None) -> None:
    data = np.array([[2, 1, 2], [2, 1, 2], [0, 3, 0], [2, 1, 2]])
    r, t = both(lambda T, x: T.unique(x, dim=dim, **kw), data)
    r, t = (r, t) if kw else ((r,), (t,))
    assert len(r) == len(t)
    for a, b in zip(r, t):
        same(a, b)


@pytest.mark.parametrize("dim", [None, 0, 1])
def test_unique_consecutive(dim: int | None) -> None:
    data = np.array([[1, 1, 2, 2, 3, 1, 1, 2], [1, 1, 2, 0, 3, 1, 1, 2], [1, 1, 2, 0, 3, 1, 1, 2]])
    r, t = both(lambda T, x: x.unique_consecutive(return_inverse=True, return_counts=True, dim=dim), data)
    for a, b in zip(r, t):
        same(a, b)


def test_searchsorted_forms() -> None:
    seq = np.array([1.0, 3.0, 3.0, 5.0])
    same(*both(lambda T, s: T.searchsorted(s, 3.0), seq))
    same(*both(lambda T, s: T.searchsorted(s, T.tensor([[3.0, 0.0], [6.0, 3.0]], dtype=T.float64), side="right"), seq))
    same(*both(lambda T, s: T.searchsorted(s, T.tensor([3.0, 4.0], dtype=T.float64), out_int32=True), seq))
    rows = np.array([[1.0, 3.0, 5.0], [2.0, 4.0, 6.0]])
    same(*both(lambda T, s: T.searchsorted(s, T.tensor([[3.0], [5.0]], dtype=T.float64), right=True), rows))
    shuffled = np.array([5.0, 1.0, 3.0])
    same(*both(lambda T, s: T.searchsorted(s, T.tensor([2.0, 5.0], dtype=T.float64), sorter=s.argsort()), shuffled))
    same(*both(lambda T, b: T.bucketize(T.tensor([[0.0, 3.0], [4.0, 9.0]], dtype=T.float64), b, right=True), seq))


def test_bincount_and_histc() -> None:
    x = np.array([0, 2, 2, 5])
    same(*both(lambda T, a: a.bincount(), x))
    same(*both(lambda T, a: T.bincount(a, minlength=9), x))
    for w in (np.array([1.0, 2.0, 3.0, 4.0], np.float32), np.array([1, 2, 3, 4])):
        same(lg.tensor(x).bincount(lg.tensor(w)), torch.tensor(x).bincount(torch.tensor(w)))
    same(*both(lambda T, a: a.histc(4), np.array([1.0, 2.0, 1.0])))
    same(*both(lambda T, a: a.histc(3), np.array([2.0, 2.0])))  # min == max: widened by 1 each side
    same(*both(lambda T, a: T.histc(a, 4, 0, 3), np.array([1.0, 2.0, 1.0, 7.0, -1.0, 3.0])))


def test_isin_invert_and_scalars() -> None:
    x = np.array([[1, 2], [3, 4]])
    same(*both(lambda T, a: T.isin(a, T.tensor([2, 4])), x))
    same(*both(lambda T, a: T.isin(a, T.tensor([2, 4]), invert=True), x))
    same(*both(lambda T, a: T.isin(a, 3), x))


def test_take_put_and_functions() -> None:
    data = np.arange(6.0).reshape(2, 3)
    same(*both(lambda T, a: T.take(a, T.tensor([[-1, 0], [2, 2]])), data))
    same(*both(lambda T, a: T.put(a, T.tensor([1, 1]), T.tensor([5.0, 6.0], dtype=T.float64), accumulate=True), data))
    same(*both(lambda T, a: T.msort(a), data[::-1].copy()))
    same(*both(lambda T, a: T.std_mean(a, 1, keepdim=True)[0], data))
    same(*both(lambda T, a: T.var_mean(a, unbiased=False)[1], data))


def test_nan_reductions() -> None:
    for f in (lambda T, a: a.nansum(), lambda T, a: T.nansum(a, 1, keepdim=True), lambda T, a: a.nanmean(1),
              lambda T, a: T.nanmean(a)):
        np.testing.assert_allclose(*[v.numpy() for v in both(f, WITH_NAN)])
    np.testing.assert_allclose(*grads(lambda T, a: T.nansum(a, 1), WITH_NAN))
    np.testing.assert_allclose(*grads(lambda T, a: a.nanmean(1), WITH_NAN[:2]))
    same(*both(lambda T, a: a.nansum(), np.array([1, 2, 3])))


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


@pytest.mark.parametrize("k", [1, 3, 10, 40, 100])
@pytest.mark.parametrize("largest", [True, False])
def test_topk_partition_path(k: int, largest: bool) -> None:
    """Small k goes through a partition, large k through a full sort: both agree with PyTorch."""
    x = np.random.default_rng(k).normal(size=(4, 100))
    x[0, 3] = NAN  # one NaN: the largest value, never a tie
    r, t = both(lambda T, a: a.topk(k, 1, largest=largest), x)
    np.testing.assert_array_equal(r.values.numpy(), t.values.numpy())
    same(r.indices, t.indices)


def test_cumprod_inplace() -> None:
    vals = []
    for T in (lg, torch):
        leaf = T.tensor([[1.5, 0.0, 2.0], [3.0, -1.0, 0.5]], requires_grad=True)
        x = leaf * 1
        assert x.cumprod_(1) is x
        (x * T.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])).sum().backward()
        vals.append((x.detach().numpy(), leaf.grad.numpy()))
    for a, b in zip(*vals):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("w", [np.ones((2, 4)), np.array([[1.0, -2.0, 0.5, 3.0], [-1.0, 2.0, 0.0, 1.0]])])
def test_logcumsumexp_double_backward(w: np.ndarray) -> None:
    data = np.array([[-1.0, 0.5, 2.0, 1.5], [0.3, -2.0, 1.0, 0.0]])
    res = []
    for T in (lg, torch):
        x = T.tensor(data, requires_grad=True)
        (g,) = T.autograd.grad((x.logcumsumexp(1) * T.tensor(w)).sum(), x, create_graph=True)
        (g * g).sum().backward()
        res.append((g.detach().numpy(), x.grad.numpy()))
    for a, b in zip(*res):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


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
    same(*both(lambda T, x, s: x.scatter_reduce(1, T.tensor([[0, 0, 2]]), s, reduce, include_self=include_self),
               np.array([[5, 2, 7, 1]]), np.array([[3, 9, 4]])))


@pytest.mark.parametrize("call", [
    lambda T, x: x.sort().values, lambda T, x: x.argsort(), lambda T, x: x.topk(0).values,
    lambda T, x: x.cummax(0).indices, lambda T, x: x.cumprod(0), lambda T, x: x.logcumsumexp(0),
    lambda T, x: x.unique(), lambda T, x: x.histc(3), lambda T, x: x.nansum(), lambda T, x: x.median(),
])
def test_empty_inputs(call: Any) -> None:
    r, t = both(call, np.zeros(0))
    np.testing.assert_array_equal(r.numpy(), t.numpy())
    assert tuple(r.shape) == tuple(t.shape) and r.dtype.name == str(t.dtype).replace("torch.", "")


def test_unique_keeps_each_nan() -> None:
    r, t = both(lambda T, x: T.unique(x, return_inverse=True, return_counts=True), np.array([1.0, NAN, NAN, 0.0, 1.0]))
    for a, b in zip(r, t):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
