"""Datasets: map-style (``__getitem__`` + ``__len__``) and iterable, and ways to combine them."""

from __future__ import annotations

import bisect
import itertools
import math
import warnings
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Generic, TypeVar

from ... import random as _random
from ...tensor import Tensor

T_co = TypeVar("T_co", covariant=True)
T = TypeVar("T")


class Dataset(Generic[T_co]):
    """A map-style dataset: subclasses define ``__getitem__`` (and usually ``__len__``).

    >>> class Squares(Dataset):
    ...     def __getitem__(self, i): return i * i
    ...     def __len__(self): return 10
    """

    def __getitem__(self, index: Any) -> T_co:
        raise NotImplementedError("Subclasses of Dataset should implement __getitem__.")

    def __add__(self, other: Dataset[T_co]) -> ConcatDataset[T_co]:
        return ConcatDataset([self, other])


class IterableDataset(Dataset[T_co], Iterable[T_co]):
    """A dataset read as a stream: subclasses define ``__iter__``.

    With ``num_workers > 0`` every worker iterates the dataset; use ``get_worker_info()`` in
    ``__iter__`` to give each worker its share, as in PyTorch.
    """

    def __add__(self, other: Dataset[T_co]) -> ChainDataset:  # type: ignore[override]
        return ChainDataset([self, other])


class TensorDataset(Dataset[tuple[Tensor, ...]]):
    """Samples are the rows of tensors of equal first size: ``TensorDataset(x, y)[i] == (x[i], y[i])``."""

    tensors: tuple[Tensor, ...]

    def __init__(self, *tensors: Tensor) -> None:
        sizes = [t.size(0) for t in tensors]
        for i, s in enumerate(sizes):
            if s != sizes[0]:
                # AssertionError is PyTorch's type here
                raise AssertionError(f"Size mismatch between tensors: tensor 0 has size {sizes[0]} in dim 0, "
                                     f"but tensor {i} has size {s} (sizes: {sizes})")
        self.tensors = tensors

    def __getitem__(self, index: Any) -> tuple[Tensor, ...]:
        return tuple(tensor[index] for tensor in self.tensors)

    def __len__(self) -> int:
        return self.tensors[0].size(0)


class StackDataset(Dataset[T_co]):
    """Zips datasets of equal length: ``StackDataset(a, b)[i] == (a[i], b[i])``; keywords give dicts."""

    def __init__(self, *args: Dataset[Any], **kwargs: Dataset[Any]) -> None:
        if args and kwargs:
            raise ValueError("Supported either ``tuple``- (via ``args``) or``dict``- (via ``kwargs``) like input/"
                             "output, but both types are given.")
        if not args and not kwargs:
            raise ValueError("At least one dataset should be passed")
        datasets = list(args) if args else list(kwargs.values())
        self._length = len(datasets[0])  # type: ignore[arg-type]
        for d in datasets:
            if len(d) != self._length:  # type: ignore[arg-type]
                raise ValueError(f"Size mismatch between datasets: {len(d)} != {self._length}")  # type: ignore[arg-type]
        self.datasets: Any = args if args else kwargs

    def __getitem__(self, index: Any) -> Any:
        if isinstance(self.datasets, dict):
            return {k: d[index] for k, d in self.datasets.items()}
        return tuple(d[index] for d in self.datasets)

    def __len__(self) -> int:
        return self._length


class ConcatDataset(Dataset[T_co]):
    """Datasets one after another: ``len`` is the sum, index ``i`` falls in the dataset that holds it."""

    datasets: list[Dataset[T_co]]
    cumulative_sizes: list[int]

    @staticmethod
    def cumsum(sequence: Sequence[Any]) -> list[int]:
        """Running totals of the datasets' lengths: where each ends in the concatenation."""
        return list(itertools.accumulate(len(e) for e in sequence))

    def __init__(self, datasets: Iterable[Dataset[Any]]) -> None:
        self.datasets = list(datasets)
        if len(self.datasets) == 0:
            raise AssertionError("datasets should not be an empty iterable")
        for d in self.datasets:
            if isinstance(d, IterableDataset):
                raise AssertionError("ConcatDataset does not support IterableDataset")
        self.cumulative_sizes = self.cumsum(self.datasets)

    def __len__(self) -> int:
        return self.cumulative_sizes[-1]

    def __getitem__(self, idx: int) -> T_co:
        n = len(self)
        if idx < 0:
            if -idx > n:
                raise ValueError(f"absolute value of index should not exceed dataset length (got index {idx} "
                                 f"for length {n})")
            idx = n + idx
        if idx >= n:
            raise IndexError(f"index {idx} is out of range for ConcatDataset of length {n}")
        dataset_idx = bisect.bisect_right(self.cumulative_sizes, idx)
        sample_idx = idx if dataset_idx == 0 else idx - self.cumulative_sizes[dataset_idx - 1]
        return self.datasets[dataset_idx][sample_idx]


class ChainDataset(IterableDataset):
    """IterableDatasets one after another (``a + b`` for iterable datasets)."""

    def __init__(self, datasets: Iterable[Dataset[Any]]) -> None:
        self.datasets = datasets

    def __iter__(self) -> Iterator[Any]:
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise AssertionError(f"ChainDataset only supports IterableDataset, got {type(d).__name__}")
            yield from d

    def __len__(self) -> int:
        total = 0
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise AssertionError(f"ChainDataset only supports IterableDataset, got {type(d).__name__}")
            total += len(d)  # type: ignore[arg-type]
        return total


class Subset(Dataset[T_co]):
    """The samples of ``dataset`` at ``indices``: ``Subset(ds, [0, 2])[1] == ds[2]``."""

    dataset: Dataset[T_co]
    indices: Sequence[int]

    def __init__(self, dataset: Dataset[T_co], indices: Sequence[int]) -> None:
        self.dataset = dataset
        self.indices = indices

    def __getitem__(self, idx: Any) -> Any:
        if isinstance(idx, list):
            return self.dataset[[self.indices[i] for i in idx]]
        return self.dataset[self.indices[idx]]

    def __getitems__(self, indices: list[int]) -> list[T_co]:
        # a batch in one call when the parent dataset can (see the DataLoader's fetcher)
        if callable(getattr(self.dataset, "__getitems__", None)):
            return self.dataset.__getitems__([self.indices[idx] for idx in indices])  # type: ignore[attr-defined]
        return [self.dataset[self.indices[idx]] for idx in indices]

    def __len__(self) -> int:
        return len(self.indices)


def random_split(dataset: Dataset[T], lengths: Sequence[int | float],
                 generator: _random.Generator | None = None) -> list[Subset[T]]:
    """Split into non-overlapping random subsets of the given lengths (or fractions summing to 1).

    >>> train, val = random_split(range(10), [0.8, 0.2], generator=lightgrad.Generator().manual_seed(0))
    """
    n = len(dataset)  # type: ignore[arg-type]
    total = sum(lengths)
    if math.isclose(total, 1) and total <= 1:
        sizes: list[int] = []
        for i, frac in enumerate(lengths):
            if frac < 0 or frac > 1:
                raise ValueError(f"Fraction at index {i} is not between 0 and 1")
            sizes.append(int(math.floor(n * frac)))
        # hand the items the floors left over to the splits in turn
        for i in range(n - sum(sizes)):
            sizes[i % len(sizes)] += 1
        for i, length in enumerate(sizes):
            if length == 0:
                warnings.warn(f"Length of split at index {i} is 0. This might result in an empty dataset.",
                              stacklevel=2)
    else:
        sizes = [int(x) for x in lengths]
        for i, (x, s) in enumerate(zip(lengths, sizes)):
            if x != s or s < 0:
                raise ValueError(f"Lengths must be non-negative integers or fractions summing to 1, "
                                 f"got {lengths[i]} at index {i}")
    if sum(sizes) != n:
        raise ValueError(f"Sum of input lengths does not equal the length of the input dataset! "
                         f"(sum of lengths {sum(sizes)}, dataset length {n})")
    indices = _random.randperm(n, generator=generator).tolist()
    return [Subset(dataset, indices[offset - length:offset])
            for offset, length in zip(itertools.accumulate(sizes), sizes)]
