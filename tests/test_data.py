"""lightgrad.utils.data and lightgrad.datasets: against torch.utils.data where installed, plus standalone checks."""

from __future__ import annotations

import gc
import gzip
import math
import struct
import threading
import time
from collections import OrderedDict, namedtuple

import numpy as np
import pytest

import lightgrad as lg
from lightgrad import datasets
from lightgrad.utils import data as lgd
from lightgrad.utils.data._utils.fetch import _MapDatasetFetcher

try:
    import torch
    import torch.utils.data as tud
except ImportError:  # the parity checks are skipped without PyTorch
    torch = None
    tud = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch not installed")

Point = namedtuple("Point", ["x", "y"])


def dtype_name(d) -> str:
    return str(d).split(".")[-1]


def assert_same(a, b) -> None:
    """``a`` (lightgrad) has the structure, types, dtypes and values of ``b`` (torch or plain)."""
    if torch is not None and isinstance(b, torch.Tensor):
        assert isinstance(a, lg.Tensor), f"expected a Tensor, got {type(a).__name__}"
        assert dtype_name(a.dtype) == dtype_name(b.dtype)
        assert tuple(a.shape) == tuple(b.shape)
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
    elif isinstance(b, lg.Tensor):
        assert isinstance(a, lg.Tensor), f"expected a Tensor, got {type(a).__name__}"
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
    elif isinstance(b, np.ndarray):
        assert isinstance(a, np.ndarray)
        np.testing.assert_array_equal(a, b)
    elif isinstance(b, dict):
        assert type(a) is type(b) and list(a.keys()) == list(b.keys())
        for k in b:
            assert_same(a[k], b[k])
    elif isinstance(b, list | tuple):
        assert type(a) is type(b) and len(a) == len(b), f"{type(a).__name__}[{len(a)}] vs {type(b).__name__}[{len(b)}]"
        for x, y in zip(a, b):
            assert_same(x, y)
    else:
        assert type(a) is type(b) and a == b


# ---- collation -----------------------------------------------------------------------------------

def sample_sets(fw):
    """Lists of samples of every supported kind; tensors are made by ``fw`` (lightgrad or torch)."""
    rng = np.random.default_rng(0)
    arrs = [rng.standard_normal((3, 2)).astype(np.float32) for _ in range(4)]
    ints = [rng.integers(0, 9, (2,)) for _ in range(4)]
    return {
        "tensor_f32": [fw.from_numpy(a.copy()) for a in arrs],
        "tensor_i64_0d": [fw.tensor(int(i[0])) for i in ints],
        "tensor_bool": [fw.from_numpy(a > 0) for a in arrs],
        "numpy_f64": [a.astype(np.float64) for a in arrs],
        "numpy_i32": [i.astype(np.int32) for i in ints],
        "numpy_u8": [i.astype(np.uint8) for i in ints],
        "numpy_bool": [a > 0 for a in arrs],
        "numpy_0d": [np.array(1.5, np.float32) for _ in range(3)],
        "py_float": [1.5, -2.0, 3.25],
        "py_int": [1, -2, 3],
        "py_bool": [True, False, True],
        "py_mixed_number": [1, 2.5],
        "np_f32_scalar": [np.float32(1.5), np.float32(2)],
        "np_f64_scalar": [np.float64(1.5), np.float64(2)],
        "np_i16_scalar": [np.int16(1), np.int16(-2)],
        "np_bool_scalar": [np.bool_(True), np.bool_(False)],
        "str": ["a", "bc", "d"],
        "bytes": [b"a", b"bc"],
        "dict": [{"x": fw.from_numpy(a.copy()), "y": int(i[0]), "name": "s"} for a, i in zip(arrs, ints)],
        "ordered_dict": [OrderedDict(b=float(i[1]), a=int(i[0])) for i in ints],
        "tuple": [(fw.from_numpy(a.copy()), int(i[0])) for a, i in zip(arrs, ints)],
        "list": [[float(i[0]), int(i[1])] for i in ints],
        "namedtuple": [Point(fw.from_numpy(a.copy()), float(i[0])) for a, i in zip(arrs, ints)],
        "nested": [{"pair": (a.astype(np.float64), [int(i[0]), "t"]), "p": Point(1, 2.0)} for a, i in zip(arrs, ints)],
    }


@needs_torch
@pytest.mark.parametrize("kind", list(sample_sets(lg)))
def test_default_collate_and_convert_match_torch(kind):
    ours, theirs = sample_sets(lg)[kind], sample_sets(torch)[kind]
    assert_same(lgd.default_collate(ours), tud.default_collate(theirs))
    assert_same([lgd.default_convert(s) for s in ours], [tud.default_convert(s) for s in theirs])
    assert_same(lgd.default_convert(ours), tud.default_convert(theirs))


def test_default_collate_standalone():
    a, b = lg.tensor([[1.0, 2.0]]), lg.tensor([[3.0, 4.0]])
    out = lgd.default_collate([(a, 1, 0.5, "x"), (b, 2, 1.5, "y")])
    assert isinstance(out, list) and len(out) == 4
    assert out[0].shape == (2, 1, 2) and out[0].dtype == lg.float32
    np.testing.assert_array_equal(out[0].numpy(), np.stack([a.numpy(), b.numpy()]))
    assert out[1].dtype == lg.int64 and out[1].tolist() == [1, 2]
    assert out[2].dtype == lg.float64 and out[2].tolist() == [0.5, 1.5]
    assert out[3] == ("x", "y")  # the transposed tuple, as PyTorch returns it
    d = lgd.default_collate([{"k": np.ones(2, np.int32)}, {"k": np.zeros(2, np.int32)}])
    assert d["k"].dtype == lg.int32 and d["k"].tolist() == [[1, 1], [0, 0]]
    p = lgd.default_collate([Point(1, 2.0), Point(3, 4.0)])
    assert isinstance(p, Point) and p.x.tolist() == [1, 3] and p.y.dtype == lg.float64
    assert lgd.default_convert(np.float64(2.5)).dtype == lg.float64


def test_default_collate_keeps_gradients():
    x = lg.tensor([1.0, 2.0], requires_grad=True)
    y = lg.tensor([3.0, 4.0], requires_grad=True)
    out = lgd.default_collate([x, y])
    assert out.requires_grad
    (out * lg.tensor([[1.0, 2.0], [3.0, 4.0]])).sum().backward()
    assert x.grad.tolist() == [1.0, 2.0] and y.grad.tolist() == [3.0, 4.0]


@pytest.mark.parametrize("batch, exc", [
    ([np.array(["a", "b"]), np.array(["c", "d"])], TypeError),   # string arrays have no tensor form
    ([object(), object()], TypeError),                            # unsupported type
    ([[1, 2], [3]], RuntimeError),                                # sequences of unequal length
    ([np.zeros(2), np.zeros(3)], RuntimeError),                   # arrays of unequal shape
])
def test_default_collate_errors(batch, exc):
    with pytest.raises(exc):
        lgd.default_collate(batch)
    if torch is not None:
        with pytest.raises(exc):
            tud.default_collate(batch)


def test_default_collate_tensor_size_mismatch_matches_torch():
    with pytest.raises(RuntimeError, match="equal size"):
        lgd.default_collate([lg.zeros(2), lg.zeros(3)])
    if torch is not None:
        with pytest.raises(RuntimeError, match="equal size"):
            tud.default_collate([torch.zeros(2), torch.zeros(3)])


# ---- datasets ------------------------------------------------------------------------------------

def test_tensor_dataset():
    x, y = lg.arange(12.0).reshape(6, 2), lg.arange(6)
    ds = lgd.TensorDataset(x, y)
    assert len(ds) == 6
    a, b = ds[4]
    assert a.tolist() == x.numpy()[4].tolist() and b.item() == 4
    with pytest.raises(AssertionError, match=r"6.*5|5.*6"):
        lgd.TensorDataset(x, lg.arange(5))
    if torch is not None:
        with pytest.raises(AssertionError):
            tud.TensorDataset(torch.zeros(6), torch.zeros(5))


def test_concat_dataset_indexing():
    parts = [list(range(0, 3)), list(range(10, 12)), [], list(range(20, 25))]
    ours = lgd.ConcatDataset(parts)
    flat = [v for p in parts for v in p]
    assert len(ours) == len(flat)
    for i in range(-len(flat), len(flat)):
        assert ours[i] == flat[i]
    with pytest.raises(ValueError):
        ours[-len(flat) - 1]
    with pytest.raises(IndexError):
        ours[len(flat)]
    with pytest.raises(AssertionError):
        lgd.ConcatDataset([])
    if torch is not None:
        theirs = tud.ConcatDataset(parts)
        assert ours.cumulative_sizes == theirs.cumulative_sizes
        assert [ours[i] for i in range(-len(flat), len(flat))] == [theirs[i] for i in range(-len(flat), len(flat))]
        with pytest.raises(ValueError):
            theirs[-len(flat) - 1]
        with pytest.raises(IndexError):
            theirs[len(flat)]


class ListDataset(lgd.Dataset):
    def __init__(self, items):
        self.items = items

    def __getitem__(self, i):
        return self.items[i]

    def __len__(self):
        return len(self.items)


def test_dataset_add_stack_chain_subset():
    a, b = ListDataset([1, 2]), ListDataset([3])
    c = a + b
    assert isinstance(c, lgd.ConcatDataset) and [c[i] for i in range(len(c))] == [1, 2, 3]
    s = lgd.StackDataset(a, ListDataset(["x", "y"]))
    assert s[1] == (2, "y") and len(s) == 2
    assert lgd.StackDataset(n=a, m=a)[0] == {"n": 1, "m": 1}
    with pytest.raises(ValueError):
        lgd.StackDataset(a, b)
    sub = lgd.Subset(ListDataset([5, 6, 7, 8]), [3, 1])
    assert len(sub) == 2 and sub[0] == 8 and sub[-1] == 6 and sub.__getitems__([1, 0]) == [6, 8]

    class Stream(lgd.IterableDataset):
        def __init__(self, n):
            self.n = n

        def __iter__(self):
            return iter(range(self.n))

        def __len__(self):
            return self.n

    chain = Stream(2) + Stream(3)
    assert isinstance(chain, lgd.ChainDataset) and list(chain) == [0, 1, 0, 1, 2] and len(chain) == 5


@pytest.mark.filterwarnings("ignore:Length of split")
@pytest.mark.parametrize("n, lengths", [(10, [3, 7]), (10, [0.5, 0.5]), (10, [0.33, 0.33, 0.34]), (7, [0.6, 0.4]),
                                        (5, [1.0, 0.0]), (11, [0.1, 0.2, 0.3, 0.4])])
def test_random_split_sizes_and_disjointness(n, lengths):
    g = lg.Generator().manual_seed(3)
    parts = lgd.random_split(range(n), lengths, generator=g)
    seen = [v for p in parts for v in (p[i] for i in range(len(p)))]
    assert sorted(seen) == list(range(n))  # disjoint and covering
    if torch is not None:
        theirs = tud.random_split(range(n), lengths, generator=torch.Generator().manual_seed(0))
        assert [len(p) for p in parts] == [len(p) for p in theirs]
    else:
        assert sum(len(p) for p in parts) == n
    again = lgd.random_split(range(n), lengths, generator=lg.Generator().manual_seed(3))
    assert [list(p.indices) for p in again] == [list(p.indices) for p in parts]


def test_random_split_errors():
    with pytest.raises(ValueError):
        lgd.random_split(range(10), [3, 3])
    with pytest.raises(ValueError):
        lgd.random_split(range(10), [1.5, -0.5])
    if torch is not None:
        with pytest.raises(ValueError):
            tud.random_split(range(10), [3, 3])
        with pytest.raises(ValueError):
            tud.random_split(range(10), [1.5, -0.5])


def test_random_split_uses_global_seed():
    lg.manual_seed(5)
    a = [list(p.indices) for p in lgd.random_split(range(20), [10, 10])]
    lg.manual_seed(5)
    b = [list(p.indices) for p in lgd.random_split(range(20), [10, 10])]
    assert a == b


# ---- samplers ------------------------------------------------------------------------------------

@pytest.mark.parametrize("n, bs, drop_last", [(10, 3, False), (10, 3, True), (9, 3, True), (9, 3, False), (2, 5, False),
                                              (2, 5, True), (1, 1, False), (0, 4, False)])
def test_batch_sampler(n, bs, drop_last):
    ours = lgd.BatchSampler(lgd.SequentialSampler(range(n)), bs, drop_last)
    batches = list(ours)
    assert len(batches) == len(ours)
    assert all(len(b) == bs for b in batches[:-1])
    flat = [i for b in batches for i in b]
    assert flat == list(range(len(flat)))
    assert len(flat) == (n - n % bs if drop_last else n)
    if torch is not None:
        theirs = tud.BatchSampler(tud.SequentialSampler(range(n)), bs, drop_last)
        assert batches == list(theirs) and len(ours) == len(theirs)


@pytest.mark.parametrize("kwargs", [dict(batch_size=0, drop_last=False), dict(batch_size=True, drop_last=False),
                                    dict(batch_size=2, drop_last=1)])
def test_batch_sampler_errors(kwargs):
    with pytest.raises(ValueError):
        lgd.BatchSampler(range(4), **kwargs)
    if torch is not None:
        with pytest.raises(ValueError):
            tud.BatchSampler(range(4), **kwargs)


def test_random_sampler():
    data = range(10)
    perm = list(lgd.RandomSampler(data))
    assert sorted(perm) == list(range(10))
    more = list(lgd.RandomSampler(data, num_samples=25))
    assert len(more) == 25 and all(more.count(i) in (2, 3) for i in range(10))
    assert sorted(more[:10]) == list(range(10)) and sorted(more[10:20]) == list(range(10))
    rep = lgd.RandomSampler(data, replacement=True, num_samples=100)
    draws = list(rep)
    assert len(draws) == len(rep) == 100 and set(draws) <= set(range(10)) and len(set(draws)) > 5
    g1, g2 = lg.Generator().manual_seed(7), lg.Generator().manual_seed(7)
    assert list(lgd.RandomSampler(data, generator=g1)) == list(lgd.RandomSampler(data, generator=g2))
    lg.manual_seed(1)
    a = list(lgd.RandomSampler(data))
    lg.manual_seed(1)
    assert list(lgd.RandomSampler(data)) == a


@pytest.mark.parametrize("kwargs, exc", [(dict(replacement=1), TypeError), (dict(num_samples=0), ValueError),
                                         (dict(num_samples=2.5), ValueError)])
def test_random_sampler_errors(kwargs, exc):
    with pytest.raises(exc):
        lgd.RandomSampler(range(4), **kwargs)
    with pytest.raises(ValueError):
        lgd.RandomSampler([])  # nothing to sample
    if torch is not None:
        with pytest.raises(exc):
            tud.RandomSampler(range(4), **kwargs)
        with pytest.raises(ValueError):
            tud.RandomSampler([])


def test_subset_random_and_weighted_samplers():
    idx = [3, 9, 4, 12]
    s = lgd.SubsetRandomSampler(idx)
    assert sorted(s) == sorted(idx) and len(s) == 4
    w = lgd.WeightedRandomSampler([0.0, 1.0, 0.0, 3.0], num_samples=200)
    draws = list(w)
    assert len(draws) == len(w) == 200 and set(draws) == {1, 3}
    assert draws.count(3) > draws.count(1)  # 3:1 odds over 200 draws
    nr = list(lgd.WeightedRandomSampler([1.0, 1.0, 1.0], num_samples=3, replacement=False))
    assert sorted(nr) == [0, 1, 2]
    g = lambda: lg.Generator().manual_seed(2)  # noqa: E731
    assert list(lgd.WeightedRandomSampler([1, 2, 3], 10, generator=g())) == list(
        lgd.WeightedRandomSampler([1, 2, 3], 10, generator=g()))
    for fw in [lgd] + ([tud] if torch is not None else []):
        with pytest.raises(ValueError):
            fw.WeightedRandomSampler([[1.0, 2.0]], 2)
        with pytest.raises(ValueError):
            fw.WeightedRandomSampler([1.0, 2.0], 0)
        with pytest.raises(RuntimeError):
            list(fw.WeightedRandomSampler([1.0, 2.0], 3, replacement=False))


@pytest.mark.parametrize("n, replicas, drop_last", [(10, 3, False), (10, 3, True), (9, 3, False), (2, 4, False),
                                                    (7, 2, True)])
def test_distributed_sampler(n, replicas, drop_last):
    shares = [list(lgd.DistributedSampler(range(n), replicas, r, shuffle=False, drop_last=drop_last))
              for r in range(replicas)]
    assert len({len(s) for s in shares}) == 1
    if torch is not None:
        theirs = [list(tud.DistributedSampler(range(n), replicas, r, shuffle=False, drop_last=drop_last))
                  for r in range(replicas)]
        assert shares == theirs
    shuffled = [lgd.DistributedSampler(range(n), replicas, r, seed=4, drop_last=drop_last) for r in range(replicas)]
    got = [i for s in shuffled for i in s]
    assert set(got) <= set(range(n)) and len(got) == sum(len(s) for s in shuffled)
    if not drop_last:
        assert set(got) == set(range(n))
    else:
        assert len(set(got)) == len(got)
    with pytest.raises(ValueError):
        lgd.DistributedSampler(range(n), replicas, replicas)


# ---- DataLoader ------------------------------------------------------------------------------------

class DictDataset(lgd.Dataset):
    """Samples of several kinds, the same values whatever the framework."""

    def __init__(self, fw, n=11):
        rng = np.random.default_rng(1)
        self.fw, self.x, self.y = fw, rng.standard_normal((n, 3)).astype(np.float32), rng.integers(0, 5, n)

    def __getitem__(self, i):
        return {"x": self.fw.from_numpy(self.x[i].copy()), "y": int(self.y[i]), "w": float(self.y[i]) / 2,
                "pair": (self.x[i, 0].item(), f"id{i}")}

    def __len__(self):
        return len(self.x)


def tensor_pair(fw, n=11):
    rng = np.random.default_rng(2)
    return fw.from_numpy(rng.standard_normal((n, 2, 3)).astype(np.float32)), fw.from_numpy(rng.integers(0, 9, n))


LOADER_CASES = [
    dict(batch_size=1), dict(batch_size=4), dict(batch_size=4, drop_last=True), dict(batch_size=11),
    dict(batch_size=20), dict(batch_size=None), dict(batch_size=3, sampler=[5, 1, 1, 9, 0]),
    dict(batch_sampler=[[3, 2], [0], [10, 4, 7]]), dict(batch_size=None, sampler=[4, 2]),
]


@needs_torch
@pytest.mark.parametrize("case", range(len(LOADER_CASES)))
@pytest.mark.parametrize("which", ["dict", "tensor"])
def test_dataloader_matches_torch(case, which):
    kw = LOADER_CASES[case]
    if which == "dict":
        ours, theirs = DictDataset(lg), DictDataset(torch)
    else:
        ours, theirs = lgd.TensorDataset(*tensor_pair(lg)), tud.TensorDataset(*tensor_pair(torch))
    lo, to = lgd.DataLoader(ours, **kw), tud.DataLoader(theirs, **kw)
    assert len(lo) == len(to)
    assert_same(list(lo), list(to))


@needs_torch
@pytest.mark.parametrize("n", [0, 1, 7, 8, 9])
@pytest.mark.parametrize("bs", [1, 3, 8])
@pytest.mark.parametrize("drop_last", [False, True])
def test_len_arithmetic_matches_torch(n, bs, drop_last):
    lo = lgd.DataLoader(range(n), batch_size=bs, drop_last=drop_last)
    to = tud.DataLoader(range(n), batch_size=bs, drop_last=drop_last)
    assert len(lo) == len(to) == len(list(lo))


def test_len_and_drop_last_standalone():
    for n, bs in [(10, 3), (9, 3), (1, 2)]:
        assert len(lgd.DataLoader(range(n), batch_size=bs)) == math.ceil(n / bs) == len(list(
            lgd.DataLoader(range(n), batch_size=bs)))
        batches = list(lgd.DataLoader(range(n), batch_size=bs, drop_last=True))
        assert len(batches) == n // bs and all(len(b) == bs for b in batches)


def test_shuffle_reproducible():
    ds = range(50)

    def epoch(**kw):
        return [i for b in lgd.DataLoader(ds, batch_size=8, shuffle=True, **kw) for i in b.tolist()]

    lg.manual_seed(0)
    a1, a2 = epoch(), epoch()
    lg.manual_seed(0)
    assert epoch() == a1 and epoch() == a2
    assert sorted(a1) == list(range(50)) and a1 != a2 and a1 != list(range(50))
    g = lg.Generator().manual_seed(9)
    b1 = epoch(generator=g)
    g.manual_seed(9)
    assert epoch(generator=g) == b1 and sorted(b1) == list(range(50))
    # a generator leaves the global stream alone, as in PyTorch
    lg.manual_seed(4)
    epoch(generator=lg.Generator().manual_seed(1))
    after = lg.rand(3).tolist()
    lg.manual_seed(4)
    assert lg.rand(3).tolist() == after


@pytest.mark.parametrize("kwargs", [
    dict(shuffle=True, sampler=[0, 1]), dict(batch_sampler=[[0]], batch_size=2), dict(batch_sampler=[[0]], shuffle=True),
    dict(batch_sampler=[[0]], sampler=[0]), dict(batch_sampler=[[0]], drop_last=True),
    dict(batch_size=None, drop_last=True), dict(num_workers=-1), dict(timeout=-1), dict(prefetch_factor=2),
    dict(persistent_workers=True), dict(num_workers=1, prefetch_factor=-1),
])
def test_dataloader_option_errors(kwargs):
    with pytest.raises(ValueError):
        lgd.DataLoader(range(4), **kwargs)
    if torch is not None:
        with pytest.raises(ValueError):
            tud.DataLoader(range(4), **kwargs)


class Stream(lgd.IterableDataset):
    """0..n-1, split between workers by get_worker_info() like PyTorch's documented pattern."""

    def __init__(self, n, sized=True):
        self.n, self.sized = n, sized

    def __iter__(self):
        info = lgd.get_worker_info()
        if info is None:
            return iter(range(self.n))
        return iter(range(info.id, self.n, info.num_workers))

    def __len__(self):
        if not self.sized:
            raise TypeError("no len")
        return self.n


if torch is not None:
    class TorchStream(tud.IterableDataset):
        def __init__(self, n):
            self.n = n

        def __iter__(self):
            info = tud.get_worker_info()
            if info is None:
                return iter(range(self.n))
            return iter(range(info.id, self.n, info.num_workers))

        def __len__(self):
            return self.n


@pytest.mark.parametrize("kw", [dict(batch_size=3), dict(batch_size=3, drop_last=True), dict(batch_size=None),
                                dict(batch_size=5)])
def test_iterable_dataset(kw):
    lo = lgd.DataLoader(Stream(10), **kw)
    got = list(lo)
    if torch is not None:
        assert len(lo) == len(tud.DataLoader(TorchStream(10), **kw))
        assert_same(got, list(tud.DataLoader(TorchStream(10), **kw)))
    bs = kw.get("batch_size")
    if bs is None:
        assert got == list(range(10))  # default_convert leaves Python ints alone
    else:
        flat = [i for b in got for i in b.tolist()]
        assert flat == list(range(len(flat))) and len(got) == len(lo)
    with pytest.raises(ValueError):
        lgd.DataLoader(Stream(10), shuffle=True)


@needs_torch
def test_iterable_dataset_workers_match_torch():
    # each worker reads its own share; batches interleave worker by worker, as in PyTorch
    ours = list(lgd.DataLoader(Stream(11), batch_size=2, num_workers=2))
    theirs = list(tud.DataLoader(TorchStream(11), batch_size=2, num_workers=2))
    assert_same(ours, theirs)


def test_iterable_dataset_workers_standalone():
    got = [b.tolist() for b in lgd.DataLoader(Stream(11), batch_size=2, num_workers=2)]
    assert got == [[0, 2], [1, 3], [4, 6], [5, 7], [8, 10], [9]]
    got = [b.tolist() for b in lgd.DataLoader(Stream(11, sized=False), batch_size=2, num_workers=3, drop_last=True)]
    assert got == [[0, 3], [1, 4], [2, 5], [6, 9], [7, 10]]


class SlowDataset(lgd.Dataset):
    """Random per-item delays, so worker threads finish out of order; records what was fetched."""

    def __init__(self, n=40, fail_at=None, exc=ValueError):
        self.n, self.fail_at, self.exc = n, fail_at, exc
        self.fetched: list[int] = []
        self.lock = threading.Lock()

    def __getitem__(self, i):
        with self.lock:
            self.fetched.append(i)
        time.sleep(0.0005 * ((i * 7919) % 5))
        if i == self.fail_at:
            raise self.exc(f"bad index {i}")
        return {"i": i, "v": lg.full((2,), float(i)), "info": lgd.get_worker_info() is not None}

    def __len__(self):
        return self.n


def test_workers_give_identical_batches():
    def run(num_workers, **kw):
        g = lg.Generator().manual_seed(11)
        loader = lgd.DataLoader(SlowDataset(), batch_size=3, shuffle=True, generator=g, num_workers=num_workers, **kw)
        return list(loader)

    base = run(0)
    for nw, kw in [(1, {}), (2, {}), (3, dict(prefetch_factor=1)), (4, dict(prefetch_factor=5))]:
        got = run(nw, **kw)
        assert [b["i"].tolist() for b in got] == [b["i"].tolist() for b in base]
        assert all(b["info"].tolist() == [True] * len(b["i"]) for b in got)  # fetched in workers
        for x, y in zip(got, base):
            assert_same(x["v"], y["v"])
    assert all(not b["info"].any().item() for b in base)


def test_workers_global_seed_reproducible():
    def run(nw):
        lg.manual_seed(3)
        return [b.tolist() for b in lgd.DataLoader(range(30), batch_size=4, shuffle=True, num_workers=nw)]

    assert run(0) == run(2) == run(0)


def test_worker_info_and_init_fn():
    seen = []

    def init(worker_id):
        info = lgd.get_worker_info()
        seen.append((worker_id, info.id, info.num_workers))

    class WhoAmI(lgd.Dataset):
        def __getitem__(self, i):
            info = lgd.get_worker_info()
            return info.id

        def __len__(self):
            return 12

    ids = [i for b in lgd.DataLoader(WhoAmI(), batch_size=2, num_workers=3, worker_init_fn=init) for i in b.tolist()]
    assert sorted(seen) == [(0, 0, 3), (1, 1, 3), (2, 2, 3)]
    assert ids == [0, 0, 1, 1, 2, 2, 0, 0, 1, 1, 2, 2]  # batch k goes to worker k mod 3
    assert lgd.get_worker_info() is None
    with pytest.raises(RuntimeError):
        info = lgd.WorkerInfo(id=0, num_workers=1, seed=0, dataset=None)
        info.id = 1


@pytest.mark.parametrize("exc", [ValueError, KeyError, IndexError])
def test_worker_errors_propagate(exc):
    ds = SlowDataset(n=12, fail_at=7, exc=exc)
    with pytest.raises(exc) as plain:
        list(lgd.DataLoader(ds, batch_size=2))
    it = iter(lgd.DataLoader(ds, batch_size=2, num_workers=2))
    assert [next(it)["i"].tolist() for _ in range(3)] == [[0, 1], [2, 3], [4, 5]]
    with pytest.raises(exc) as threaded:
        next(it)
    msg = str(threaded.value)
    assert "bad index 7" in str(plain.value) and "bad index 7" in msg
    assert "Caught " + exc.__name__ in msg and "Original Traceback" in msg and "__getitem__" in msg
    assert type(threaded.value.__cause__) is exc  # the original exception, with its traceback
    assert threaded.value.__cause__.__traceback__ is not None
    workers = it._workers
    del it, threaded  # the traceback's frames hold the iterator too
    gc.collect()
    deadline = time.time() + 5
    while any(w.is_alive() for w in workers) and time.time() < deadline:
        time.sleep(0.01)
    assert not any(w.is_alive() for w in workers)


def test_worker_init_error_propagates():
    def init(worker_id):
        raise ZeroDivisionError(f"init failed in {worker_id}")

    with pytest.raises(ZeroDivisionError, match="init failed in"):
        list(lgd.DataLoader(range(4), num_workers=2, worker_init_fn=init))


def test_workers_shut_down_when_exhausted_or_collected():
    it = iter(lgd.DataLoader(range(20), batch_size=2, num_workers=3))
    workers = list(it._workers)
    assert len(workers) == 3 and all(w.is_alive() for w in workers)
    assert len(list(it)) == 10
    assert not any(w.is_alive() for w in workers)  # joined on exhaustion
    it = iter(lgd.DataLoader(range(20), batch_size=2, num_workers=3))
    next(it)
    workers = list(it._workers)
    del it
    gc.collect()
    deadline = time.time() + 5
    while any(w.is_alive() for w in workers) and time.time() < deadline:
        time.sleep(0.01)
    assert not any(w.is_alive() for w in workers)


def test_prefetch_is_bounded():
    ds = SlowDataset(n=100)
    it = iter(lgd.DataLoader(ds, batch_size=1, num_workers=2, prefetch_factor=2))
    next(it)
    time.sleep(0.1)
    assert len(ds.fetched) <= 2 * 2 + 1  # the primed tasks plus the one sent after the first batch
    del it


def test_timeout():
    class Stuck(lgd.Dataset):
        def __getitem__(self, i):
            time.sleep(0.3)
            return i

        def __len__(self):
            return 4

    with pytest.raises(RuntimeError, match="timed out"):
        next(iter(lgd.DataLoader(Stuck(), num_workers=1, timeout=0.05)))


def test_persistent_workers():
    def epochs(num_workers):
        kw = dict(num_workers=num_workers, persistent_workers=True) if num_workers else {}
        loader = lgd.DataLoader(range(17), batch_size=4, shuffle=True, generator=lg.Generator().manual_seed(2), **kw)
        it = iter(loader)
        workers = list(getattr(it, "_workers", []))
        out = [[b.tolist() for b in it]]
        assert all(w.is_alive() for w in workers)  # kept for the next epoch
        it2 = iter(loader)
        out.append([next(it2).tolist()])  # an unfinished epoch ...
        it3 = iter(loader)  # ... then a fresh one
        assert it3 is it2 if num_workers else it3 is not it2
        assert list(getattr(it3, "_workers", [])) == workers
        out.append([b.tolist() for b in it3])
        return out

    ours = epochs(2)
    assert ours == epochs(2)
    assert sorted(i for b in ours[0] for i in b) == sorted(i for b in ours[2] for i in b) == list(range(17))
    assert ours[0] == epochs(0)[0]  # the first epoch is the same as without workers
    streams = lgd.DataLoader(Stream(9), batch_size=2, num_workers=2, persistent_workers=True)
    assert [b.tolist() for b in streams] == [b.tolist() for b in streams]


def test_setattr_after_init_raises():
    loader = lgd.DataLoader(range(4))
    with pytest.raises(ValueError, match="batch_size"):
        loader.batch_size = 3
    loader.num_workers = 0  # not guarded, as in PyTorch


# ---- the TensorDataset fast path -------------------------------------------------------------------

def general_collate(batch):
    return lgd.default_collate(batch)  # not ``default_collate`` itself, so the general path runs


@pytest.mark.parametrize("make", [
    lambda: lgd.TensorDataset(lg.randn(23, 3, 2), lg.randint(0, 5, (23,)), lg.tensor([True, False] * 11 + [True]),
                              lg.randn(23).to(lg.float64)),
    lambda: lgd.random_split(lgd.TensorDataset(lg.arange(30.0).reshape(15, 2), lg.arange(15)), [10, 5])[0],
    lambda: lgd.Subset(lgd.Subset(lgd.TensorDataset(lg.arange(40).reshape(20, 2)), list(range(19, -1, -1))),
                       lg.tensor([0, 3, 5, -1, 7])),
])
@pytest.mark.parametrize("kw", [dict(batch_size=4), dict(batch_size=4, shuffle=True, drop_last=True),
                                dict(batch_sampler=[[2, 0, 2], [1, -1]]), dict(batch_size=3, num_workers=2)])
def test_tensor_dataset_fast_path_equals_general_path(make, kw):
    lg.manual_seed(0)
    ds = make()
    assert _MapDatasetFetcher(ds, True, lgd.default_collate, False)._gather is not None
    assert _MapDatasetFetcher(ds, True, general_collate, False)._gather is None
    lg.manual_seed(1)
    fast = list(lgd.DataLoader(ds, **kw))
    lg.manual_seed(1)
    slow = list(lgd.DataLoader(ds, collate_fn=general_collate, **kw))
    assert len(fast) == len(slow) > 0
    assert_same(fast, slow)


def test_fast_path_not_used_for_overridden_getitem():
    class Doubled(lgd.TensorDataset):
        def __getitem__(self, i):
            return tuple(t[i] * 2 for t in self.tensors)

    ds = Doubled(lg.arange(6.0))
    assert _MapDatasetFetcher(ds, True, lgd.default_collate, False)._gather is None
    assert [b[0].tolist() for b in lgd.DataLoader(ds, batch_size=3)] == [[0.0, 2.0, 4.0], [6.0, 8.0, 10.0]]


def test_fast_path_gradients_match_general_path():
    w = lg.randn(6, 2, requires_grad=True)
    ds = lgd.TensorDataset(w)
    (b,) = next(iter(lgd.DataLoader(ds, batch_sampler=[[4, 1, 4]])))
    (b * b).sum().backward()
    fast_grad = w.grad.numpy().copy()
    w.grad = None
    (c,) = next(iter(lgd.DataLoader(ds, batch_sampler=[[4, 1, 4]], collate_fn=general_collate)))
    (c * c).sum().backward()
    np.testing.assert_allclose(fast_grad, w.grad.numpy())


@needs_torch
def test_tensor_dataset_matches_torch_batches():
    x, y = np.random.default_rng(3).standard_normal((9, 4)).astype(np.float32), np.arange(9)
    ours = lgd.DataLoader(lgd.TensorDataset(lg.from_numpy(x), lg.from_numpy(y)), batch_size=4, sampler=[8, 0, 3, 3, 5])
    theirs = tud.DataLoader(tud.TensorDataset(torch.from_numpy(x), torch.from_numpy(y)), batch_size=4,
                            sampler=[8, 0, 3, 3, 5])
    assert_same(list(ours), list(theirs))


# ---- MNIST -------------------------------------------------------------------------------------------

def idx_bytes(arr: np.ndarray, code: int = 0x08) -> bytes:
    header = struct.pack(">BBBB", 0, 0, code, arr.ndim) + struct.pack(f">{arr.ndim}I", *arr.shape)
    return header + arr.astype(arr.dtype.newbyteorder(">")).tobytes()


def write_mnist(folder, split, images, labels, gz=False):
    folder.mkdir(parents=True, exist_ok=True)
    for name, blob in [(f"{split}-images-idx3-ubyte", idx_bytes(images)), (f"{split}-labels-idx1-ubyte", idx_bytes(labels))]:
        if gz:
            (folder / (name + ".gz")).write_bytes(gzip.compress(blob))
        else:
            (folder / name).write_bytes(blob)


def fake_digits(n, seed):
    rng = np.random.default_rng(seed)
    return rng.integers(0, 256, (n, 28, 28), dtype=np.uint8), rng.integers(0, 10, n, dtype=np.uint8)


def test_mnist_reads_idx_files(tmp_path):
    train_x, train_y = fake_digits(7, 0)
    test_x, test_y = fake_digits(3, 1)
    write_mnist(tmp_path, "train", train_x, train_y)
    write_mnist(tmp_path, "t10k", test_x, test_y, gz=True)
    train = datasets.MNIST(tmp_path)
    test = datasets.MNIST(str(tmp_path), train=False)
    for ds, x, y in [(train, train_x, train_y), (test, test_x, test_y)]:
        assert len(ds) == len(x)
        assert ds.data.dtype == lg.uint8 and tuple(ds.data.shape) == x.shape
        assert ds.targets.dtype == lg.int64
        np.testing.assert_array_equal(ds.data.numpy(), x)
        np.testing.assert_array_equal(ds.targets.numpy(), y)
        img, label = ds[2]
        assert isinstance(label, int) and label == int(y[2])
        assert img.dtype == lg.uint8 and tuple(img.shape) == (28, 28)
        np.testing.assert_array_equal(img.numpy(), x[2])
    assert "Split: Test" in repr(test) and len(train.classes) == 10
    xb, yb = next(iter(lgd.DataLoader(train, batch_size=4)))
    assert tuple(xb.shape) == (4, 28, 28) and xb.dtype == lg.uint8 and yb.tolist() == train_y[:4].tolist()


def test_mnist_transforms_and_torchvision_layout(tmp_path):
    x, y = fake_digits(5, 2)
    write_mnist(tmp_path / "MNIST" / "raw", "train", x, y, gz=True)
    ds = datasets.MNIST(tmp_path, transform=lambda im: im.float() / 255, target_transform=lambda t: t + 100)
    img, label = ds[-1]
    assert img.dtype == lg.float32 and label == int(y[-1]) + 100
    np.testing.assert_allclose(img.numpy(), x[-1].astype(np.float32) / 255, rtol=1e-6)
    # download=True is accepted when the files are already there
    assert len(datasets.MNIST(tmp_path, download=True)) == 5


def test_read_idx_other_types(tmp_path):
    a = np.random.default_rng(4).standard_normal((3, 2)).astype(np.float32)
    (tmp_path / "f.idx").write_bytes(idx_bytes(a, 0x0D))
    np.testing.assert_array_equal(datasets.read_idx(tmp_path / "f.idx"), a)
    b = np.arange(-3, 3, dtype=np.int32)
    (tmp_path / "i.idx").write_bytes(idx_bytes(b, 0x0C))
    np.testing.assert_array_equal(datasets.read_idx(tmp_path / "i.idx"), b)


def test_mnist_errors(tmp_path):
    with pytest.raises(RuntimeError, match="not found.*train-images-idx3-ubyte"):
        datasets.MNIST(tmp_path)
    with pytest.raises(RuntimeError, match="does not download.*place"):
        datasets.MNIST(tmp_path, download=True)
    x, y = fake_digits(4, 3)
    bad = tmp_path / "bad_magic"
    write_mnist(bad, "train", x, y)
    (bad / "train-labels-idx1-ubyte").write_bytes(idx_bytes(x))  # images where labels belong
    with pytest.raises(RuntimeError, match="magic number: expected 2049"):
        datasets.MNIST(bad)
    short = tmp_path / "short"
    write_mnist(short, "train", x, y)
    blob = (short / "train-images-idx3-ubyte").read_bytes()
    (short / "train-images-idx3-ubyte").write_bytes(blob[:-5])
    with pytest.raises(RuntimeError, match=r"shape \(4, 28, 28\).*3136 bytes.*3131"):
        datasets.MNIST(short)
    (short / "train-images-idx3-ubyte").write_bytes(blob[:10])
    with pytest.raises(RuntimeError, match="truncated"):
        datasets.MNIST(short)
    count = tmp_path / "count"
    write_mnist(count, "train", x, y[:3])
    with pytest.raises(RuntimeError, match="4 images but .* 3 labels"):
        datasets.MNIST(count)
