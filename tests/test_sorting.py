"""Sorting, selection and scans against PyTorch, and the sort-based unique, searchsorted, bincount, quantile.

What the op table in test_ops.py cannot say: named-tuple results, ties, NaNs, zeros, empty inputs,
in-place scans, the inverse and counts of unique."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from helpers import assert_same_exactly, grads_on_both, on_both

import lightgrad as lg

torch = pytest.importorskip("torch")


NAN = float("nan")
TIES = np.array([[2.0, 1.0, 1.0, 3.0, 1.0, 3.0], [0.0, 0.0, 5.0, 5.0, 0.0, 5.0]])
WITH_NAN = np.array([[1.0, 3.0, 3.0, NAN, 2.0, NAN, 0.0], [5.0, 1.0, 1.0, 2.0, 2.0, 0.0, 7.0],
                     [NAN, NAN, NAN, NAN, NAN, NAN, NAN]])


# ---- sort, topk, kthvalue, median, mode: values, indices, ties, NaNs -----------------------------

@pytest.mark.parametrize("call", [
    lambda T, x: x.sort(1), lambda T, x: T.topk(x, 2), lambda T, x: x.kthvalue(2),
    lambda T, x: x.median(0), lambda T, x: T.nanmedian(x, 1), lambda T, x: x.mode(1),
    lambda T, x: x.cummax(1), lambda T, x: T.cummin(x, 0),
])
def test_named_tuples(call: Any) -> None:
    r, t = on_both(call, TIES)
    assert type(r).__name__ == type(t).__name__
    assert r._fields == ("values", "indices")
    values, indices = r
    assert values is r.values and indices is r.indices
    assert r.indices.dtype == lg.int64
    assert_same_exactly(r.values, t.values)


def test_aminmax_fields() -> None:
    r, t = on_both(lambda T, x: T.aminmax(x, dim=1, keepdim=True), TIES)
    assert type(r).__name__ == "aminmax" and r._fields == ("min", "max")
    assert_same_exactly(r.min, t.min)
    assert_same_exactly(r.max, t.max)


@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize("data", [TIES, WITH_NAN])
def test_stable_sort_matches_torch_indices(descending: bool, data: np.ndarray) -> None:
    r, t = on_both(lambda T, x: x.sort(dim=1, descending=descending, stable=True), data)
    np.testing.assert_array_equal(r.values.numpy(), t.values.numpy())
    assert_same_exactly(r.indices, t.indices)
    assert_same_exactly(*on_both(lambda T, x: T.argsort(x, dim=1, descending=descending, stable=True), data))


@pytest.mark.parametrize("call,dim", [
    (lambda T, x: T.topk(x, 3, 1), 1), (lambda T, x: x.topk(4, largest=False), 1), (lambda T, x: x.kthvalue(3, 1), 1),
    (lambda T, x: x.median(1), 1), (lambda T, x: x.median(0, keepdim=True), 0), (lambda T, x: x.nanmedian(1), 1),
    (lambda T, x: x.mode(1), 1), (lambda T, x: x.mode(0, True), 0),
])
def test_ties_values_and_indices_consistent(call: Any, dim: int) -> None:
    """With ties PyTorch documents no particular index: compare values, and check that the
    indices point at them."""
    r, t = on_both(call, TIES)
    assert_same_exactly(r.values, t.values)
    assert tuple(r.indices.shape) == tuple(t.indices.shape)
    x = lg.tensor(TIES)
    ind = r.indices if r.indices.ndim == 2 else r.indices.unsqueeze(dim)
    vals = r.values if r.values.ndim == 2 else r.values.unsqueeze(dim)
    np.testing.assert_array_equal(x.gather(dim, ind).numpy(), vals.numpy())


def test_mode_picks_smallest_value_at_last_occurrence() -> None:
    data = np.array([[3.0, 1.0, 3.0, 1.0, 2.0, 2.0], [5.0, 5.0, 1.0, 1.0, 1.0, 0.0]])
    r, t = on_both(lambda T, x: x.mode(1), data)
    assert_same_exactly(r.values, t.values)
    assert_same_exactly(r.indices, t.indices)


@pytest.mark.parametrize("call", [
    lambda T, x: x.median(1), lambda T, x: x.nanmedian(1), lambda T, x: x.cummax(1),
    lambda T, x: x.cummin(1), lambda T, x: x.sort(1, descending=True),
])
def test_nan_values_and_indices(call: Any) -> None:
    r, t = on_both(call, WITH_NAN)
    np.testing.assert_array_equal(r.values.numpy(), t.values.numpy())  # NaN == NaN here
    # (an all-NaN row's nanmedian index is whichever NaN PyTorch's selection leaves there)
    assert_same_exactly(r.indices[:2], t.indices[:2])


def test_median_all_nan_and_lower_middle() -> None:
    for data in (WITH_NAN, TIES, np.arange(6.0)):
        np.testing.assert_array_equal(*[v.numpy() for v in on_both(lambda T, x: x.median(), data)])
        np.testing.assert_array_equal(*[v.numpy() for v in on_both(lambda T, x: T.nanmedian(x), data)])


def test_ties_cummax_indices() -> None:
    data = np.array([[2.0, 1.0, 1.0, 3.0, 1.0, 3.0, 3.0], [1.0, 1.0, 1.0, 0.0, 0.0, 1.0, 0.0]])
    for f in (lambda T, x: x.cummax(1), lambda T, x: x.cummin(1)):
        r, t = on_both(f, data)
        assert_same_exactly(r.values, t.values)
        assert_same_exactly(r.indices, t.indices)


# ---- scans: cumprod, logcumsumexp ----------------------------------------------------------------

@pytest.mark.parametrize("data", [
    np.array([[2.0, 0.0, 3.0, -1.5, 0.5]]),  # one zero
    np.array([[0.0, 2.0, 0.0, 3.0], [1.5, -2.0, 0.5, 0.0]]),  # two zeros; a zero at the end
    np.array([[0.0, 0.0, 0.0]]),
])
def test_cumprod_gradient_with_zeros(data: np.ndarray) -> None:
    a = lg.tensor(data)
    assert_same_exactly(a.cumprod(1), torch.tensor(data).cumprod(1))
    np.testing.assert_allclose(*grads_on_both(lambda T, x: x.cumprod(1), data), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(*grads_on_both(lambda T, x: x.cumprod(0), data.T.copy()), rtol=1e-12, atol=1e-12)


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
    assert_same_exactly(*on_both(lambda T, x: x.cumprod(0), np.array([1, 2, 3, 4])))
    assert_same_exactly(*on_both(lambda T, x: x.cumprod(0), np.array(2.5)))
    assert_same_exactly(*on_both(lambda T, x: x.cummax(0).values, np.array(2.5)))
    assert_same_exactly(*on_both(lambda T, x: x.sort().values, np.array(2.5)))
    assert_same_exactly(*on_both(lambda T, x: x.median(0).indices, np.array(2.5)))


def test_logcumsumexp_extreme_values() -> None:
    data = np.array([[-1000.0, 0.0, 1000.0, 999.0], [-np.inf, -np.inf, 1.0, -np.inf]])
    r, t = on_both(lambda T, x: x.logcumsumexp(1), data)
    np.testing.assert_allclose(r.numpy(), t.numpy(), rtol=1e-12)
    g = np.array([[1.0, -2.0, 0.5, 3.0], [-1.0, 2.0, 0.0, 1.0]])  # mixed signs and a zero
    np.testing.assert_allclose(*grads_on_both(lambda T, x: x.logcumsumexp(1), data, g), rtol=1e-10, atol=1e-300)


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


# ---- unique, searchsorted, bincount, histc, isin, NaN reductions, quantile -----------------------

@pytest.mark.parametrize("kw", [{}, {"return_inverse": True}, {"return_counts": True},
                                {"return_inverse": True, "return_counts": True}])
@pytest.mark.parametrize("dim", [None, 0, 1])
def test_unique_inverse_counts(kw: dict[str, bool], dim: int | None) -> None:
    data = np.array([[2, 1, 2], [2, 1, 2], [0, 3, 0], [2, 1, 2]])
    r, t = on_both(lambda T, x: T.unique(x, dim=dim, **kw), data)
    r, t = (r, t) if kw else ((r,), (t,))
    assert len(r) == len(t)
    for a, b in zip(r, t):
        assert_same_exactly(a, b)


@pytest.mark.parametrize("dim", [None, 0, 1])
def test_unique_consecutive(dim: int | None) -> None:
    data = np.array([[1, 1, 2, 2, 3, 1, 1, 2], [1, 1, 2, 0, 3, 1, 1, 2], [1, 1, 2, 0, 3, 1, 1, 2]])
    r, t = on_both(lambda T, x: x.unique_consecutive(return_inverse=True, return_counts=True, dim=dim), data)
    for a, b in zip(r, t):
        assert_same_exactly(a, b)


def test_searchsorted_forms() -> None:
    seq = np.array([1.0, 3.0, 3.0, 5.0])
    assert_same_exactly(*on_both(lambda T, s: T.searchsorted(s, 3.0), seq))
    assert_same_exactly(*on_both(lambda T, s: T.searchsorted(s, T.tensor([[3.0, 0.0], [6.0, 3.0]], dtype=T.float64),
                                                             side="right"), seq))
    assert_same_exactly(*on_both(lambda T, s: T.searchsorted(s, T.tensor([3.0, 4.0], dtype=T.float64), out_int32=True),
                                 seq))
    rows = np.array([[1.0, 3.0, 5.0], [2.0, 4.0, 6.0]])
    assert_same_exactly(*on_both(lambda T, s: T.searchsorted(s, T.tensor([[3.0], [5.0]], dtype=T.float64), right=True),
                                 rows))
    shuffled = np.array([5.0, 1.0, 3.0])
    assert_same_exactly(*on_both(lambda T, s: T.searchsorted(s, T.tensor([2.0, 5.0], dtype=T.float64),
                                                             sorter=s.argsort()), shuffled))
    assert_same_exactly(*on_both(lambda T, b: T.bucketize(T.tensor([[0.0, 3.0], [4.0, 9.0]], dtype=T.float64), b,
                                                          right=True), seq))


def test_bincount_and_histc() -> None:
    x = np.array([0, 2, 2, 5])
    assert_same_exactly(*on_both(lambda T, a: a.bincount(), x))
    assert_same_exactly(*on_both(lambda T, a: T.bincount(a, minlength=9), x))
    for w in (np.array([1.0, 2.0, 3.0, 4.0], np.float32), np.array([1, 2, 3, 4])):
        assert_same_exactly(lg.tensor(x).bincount(lg.tensor(w)), torch.tensor(x).bincount(torch.tensor(w)))
    assert_same_exactly(*on_both(lambda T, a: a.histc(4), np.array([1.0, 2.0, 1.0])))
    assert_same_exactly(*on_both(lambda T, a: a.histc(3), np.array([2.0, 2.0])))  # min == max: widened by 1 each side
    assert_same_exactly(*on_both(lambda T, a: T.histc(a, 4, 0, 3), np.array([1.0, 2.0, 1.0, 7.0, -1.0, 3.0])))


def test_isin_invert_and_scalars() -> None:
    x = np.array([[1, 2], [3, 4]])
    assert_same_exactly(*on_both(lambda T, a: T.isin(a, T.tensor([2, 4])), x))
    assert_same_exactly(*on_both(lambda T, a: T.isin(a, T.tensor([2, 4]), invert=True), x))
    assert_same_exactly(*on_both(lambda T, a: T.isin(a, 3), x))


def test_nan_reductions() -> None:
    for f in (lambda T, a: a.nansum(), lambda T, a: T.nansum(a, 1, keepdim=True), lambda T, a: a.nanmean(1),
              lambda T, a: T.nanmean(a)):
        np.testing.assert_allclose(*[v.numpy() for v in on_both(f, WITH_NAN)])
    np.testing.assert_allclose(*grads_on_both(lambda T, a: T.nansum(a, 1), WITH_NAN))
    np.testing.assert_allclose(*grads_on_both(lambda T, a: a.nanmean(1), WITH_NAN[:2]))
    assert_same_exactly(*on_both(lambda T, a: a.nansum(), np.array([1, 2, 3])))


@pytest.mark.parametrize("k", [1, 3, 10, 40, 100])
@pytest.mark.parametrize("largest", [True, False])
def test_topk_partition_path(k: int, largest: bool) -> None:
    """Small k goes through a partition, large k through a full sort: both agree with PyTorch."""
    x = np.random.default_rng(k).normal(size=(4, 100))
    x[0, 3] = NAN  # one NaN: the largest value, never a tie
    r, t = on_both(lambda T, a: a.topk(k, 1, largest=largest), x)
    np.testing.assert_array_equal(r.values.numpy(), t.values.numpy())
    assert_same_exactly(r.indices, t.indices)


@pytest.mark.parametrize("call", [
    lambda T, x: x.sort().values, lambda T, x: x.argsort(), lambda T, x: x.topk(0).values,
    lambda T, x: x.cummax(0).indices, lambda T, x: x.cumprod(0), lambda T, x: x.logcumsumexp(0),
    lambda T, x: x.unique(), lambda T, x: x.histc(3), lambda T, x: x.nansum(), lambda T, x: x.median(),
])
def test_empty_inputs(call: Any) -> None:
    r, t = on_both(call, np.zeros(0))
    np.testing.assert_array_equal(r.numpy(), t.numpy())
    assert tuple(r.shape) == tuple(t.shape) and r.dtype.name == str(t.dtype).replace("torch.", "")


def test_unique_keeps_each_nan() -> None:
    r, t = on_both(lambda T, x: T.unique(x, return_inverse=True, return_counts=True),
                   np.array([1.0, NAN, NAN, 0.0, 1.0]))
    for a, b in zip(r, t):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_quantile_shapes_and_nan_rows_match_torch() -> None:
    a = np.random.default_rng(5).normal(size=(3, 4, 5)).astype(np.float32)
    a[1, 2, 3] = np.nan
    a[2, 0, :] = np.nan
    q = np.array([0.0, 0.5, 0.9], np.float32)
    for dim in (None, 0, -1):
        for keepdim in (False, True):
            for fn in ("quantile", "nanquantile"):
                for qq in (0.25, q):
                    lq = lg.tensor(qq) if isinstance(qq, np.ndarray) else qq
                    tq = torch.tensor(qq) if isinstance(qq, np.ndarray) else qq
                    lo = getattr(lg.tensor(a), fn)(lq, dim, keepdim)
                    to = getattr(torch.tensor(a), fn)(tq, dim, keepdim)
                    assert tuple(lo.shape) == tuple(to.shape), (fn, dim, keepdim)
                    np.testing.assert_allclose(lo.numpy(), to.numpy(), rtol=1e-5, err_msg=f"{fn} {dim}")
