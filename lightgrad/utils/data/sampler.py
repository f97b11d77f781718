"""Samplers: the order in which a DataLoader visits indices, and how it groups them into batches."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Sequence, Sized
from typing import Any, Generic, TypeVar

from ... import backend as B
from ... import dtypes as D
from ... import random as _random
from ...tensor import Tensor, as_tensor

T_co = TypeVar("T_co", covariant=True)


def _check_positive_int(name: str, value: Any) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise ValueError(f"{name} should be a positive integer value, but got {name}={value}")


def _fresh_seed(generator: _random.Generator | None = None) -> int:
    """A 63-bit seed drawn from ``generator`` (the global one by default), like PyTorch's ``random_()``."""
    return int(Tensor._make(B.empty((), B.xp.int64)).random_(generator=generator).item())


class Sampler(Generic[T_co]):
    """Base class: subclasses define ``__iter__`` (indices) and usually ``__len__``."""

    def __init__(self, data_source: Sized | None = None) -> None:
        pass

    def __iter__(self) -> Iterator[T_co]:
        raise NotImplementedError


class SequentialSampler(Sampler[int]):
    """Indices 0, 1, ..., len(data_source) - 1."""

    data_source: Sized

    def __init__(self, data_source: Sized) -> None:
        self.data_source = data_source

    def __iter__(self) -> Iterator[int]:
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


class RandomSampler(Sampler[int]):
    """A random permutation each epoch (or ``num_samples`` draws with ``replacement=True``).

    Without a ``generator`` each epoch seeds a fresh one from the global generator, so
    ``lightgrad.manual_seed(s)`` fixes the order. ``RandomSampler(range(5), generator=g)``.
    """

    data_source: Sized
    replacement: bool

    def __init__(self, data_source: Sized, replacement: bool = False, num_samples: int | None = None,
                 generator: _random.Generator | None = None) -> None:
        if not isinstance(replacement, bool):
            raise TypeError(f"replacement should be a boolean value, but got replacement={replacement}")
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        _check_positive_int("num_samples", self.num_samples)

    @property
    def num_samples(self) -> int:
        """How many indices one pass yields: ``num_samples`` if given, else the dataset's length."""
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self) -> Iterator[int]:
        n = len(self.data_source)
        generator = self.generator
        if generator is None:
            generator = _random.Generator().manual_seed(_fresh_seed())
        if self.replacement:
            yield from _random.randint(0, n, (self.num_samples,), generator=generator).tolist()
        else:
            for _ in range(self.num_samples // n):
                yield from _random.randperm(n, generator=generator).tolist()
            yield from _random.randperm(n, generator=generator).tolist()[:self.num_samples % n]

    def __len__(self) -> int:
        return self.num_samples


class SubsetRandomSampler(Sampler[int]):
    """The given indices in a random order each epoch: ``SubsetRandomSampler([3, 5, 7])``."""

    indices: Sequence[int]

    def __init__(self, indices: Sequence[int], generator: _random.Generator | None = None) -> None:
        self.indices = indices
        self.generator = generator

    def __iter__(self) -> Iterator[int]:
        for i in _random.randperm(len(self.indices), generator=self.generator).tolist():
            yield self.indices[i]

    def __len__(self) -> int:
        return len(self.indices)


class WeightedRandomSampler(Sampler[int]):
    """``num_samples`` indices drawn with probabilities proportional to ``weights``.

    >>> list(WeightedRandomSampler([0.0, 1.0], 3))
    [1, 1, 1]
    """

    weights: Tensor
    num_samples: int
    replacement: bool

    def __init__(self, weights: Sequence[float] | Tensor, num_samples: int, replacement: bool = True,
                 generator: _random.Generator | None = None) -> None:
        _check_positive_int("num_samples", num_samples)
        if not isinstance(replacement, bool):
            raise ValueError(f"replacement should be a boolean value, but got replacement={replacement}")
        weights_tensor = as_tensor(weights, dtype=D.float64)
        if weights_tensor.ndim != 1:
            raise ValueError(f"weights should be a 1d sequence but given weights have shape "
                             f"{tuple(weights_tensor.shape)}")
        self.weights = weights_tensor
        self.num_samples = num_samples
        self.replacement = replacement
        self.generator = generator

    def __iter__(self) -> Iterator[int]:
        rand_tensor = _random.multinomial(self.weights, self.num_samples, self.replacement, generator=self.generator)
        yield from rand_tensor.tolist()

    def __len__(self) -> int:
        return self.num_samples


class BatchSampler(Sampler[list[int]]):
    """Groups another sampler's indices into lists of ``batch_size`` (the last one shorter unless ``drop_last``).

    >>> list(BatchSampler(SequentialSampler(range(5)), batch_size=2, drop_last=False))
    [[0, 1], [2, 3], [4]]
    """

    def __init__(self, sampler: Sampler[Any] | Iterable[Any], batch_size: int, drop_last: bool) -> None:
        _check_positive_int("batch_size", batch_size)
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got drop_last={drop_last}")
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self) -> Iterator[list[int]]:
        sampler_iter = iter(self.sampler)
        if self.drop_last:
            # zip of one iterator repeated batch_size times yields only full batches
            for full in zip(*[sampler_iter] * self.batch_size):
                yield [*full]
        else:
            batch = [*itertools.islice(sampler_iter, self.batch_size)]
            while batch:
                yield batch
                batch = [*itertools.islice(sampler_iter, self.batch_size)]

    def __len__(self) -> int:
        if self.drop_last:
            return len(self.sampler) // self.batch_size  # type: ignore[arg-type]
        return (len(self.sampler) + self.batch_size - 1) // self.batch_size  # type: ignore[arg-type]
