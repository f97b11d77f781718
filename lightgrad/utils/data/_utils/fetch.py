"""Fetchers: turn what the sampler yields (an index, or a list of indices) into a (collated) batch."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ....tensor import Tensor
from ..dataset import Subset, TensorDataset
from .collate import default_collate


class _BaseDatasetFetcher:
    def __init__(self, dataset: Any, auto_collation: bool, collate_fn: Callable[[Any], Any], drop_last: bool) -> None:
        self.dataset = dataset
        self.auto_collation = auto_collation
        self.collate_fn = collate_fn
        self.drop_last = drop_last


class _IterableDatasetFetcher(_BaseDatasetFetcher):
    """Reads an IterableDataset: ``len(index)`` items a batch; raises StopIteration when done."""

    def __init__(self, dataset: Any, auto_collation: bool, collate_fn: Callable[[Any], Any], drop_last: bool) -> None:
        super().__init__(dataset, auto_collation, collate_fn, drop_last)
        self.dataset_iter = iter(dataset)
        self.ended = False

    def fetch(self, possibly_batched_index: Any) -> Any:
        if self.ended:
            raise StopIteration
        if self.auto_collation:
            data = []
            for _ in possibly_batched_index:
                try:
                    data.append(next(self.dataset_iter))
                except StopIteration:
                    self.ended = True
                    break
            if len(data) == 0 or (self.drop_last and len(data) < len(possibly_batched_index)):
                raise StopIteration
        else:
            data = next(self.dataset_iter)
        return self.collate_fn(data)


class _MapDatasetFetcher(_BaseDatasetFetcher):
    """Reads a map-style dataset by index; a TensorDataset batch is one gather per tensor."""

    def __init__(self, dataset: Any, auto_collation: bool, collate_fn: Callable[[Any], Any], drop_last: bool) -> None:
        super().__init__(dataset, auto_collation, collate_fn, drop_last)
        fast = auto_collation and collate_fn is default_collate
        self._gather = _TensorGather.build(dataset) if fast else None

    def fetch(self, possibly_batched_index: Any) -> Any:
        if self.auto_collation:
            if self._gather is not None:
                batch = self._gather(possibly_batched_index)
                if batch is not None:
                    return batch
            if callable(getattr(self.dataset, "__getitems__", None)):
                data = self.dataset.__getitems__(possibly_batched_index)
            else:
                data = [self.dataset[idx] for idx in possibly_batched_index]
        else:
            data = self.dataset[possibly_batched_index]
        return self.collate_fn(data)


def _inherits(obj: Any, base: type, *names: str) -> bool:
    """True when ``type(obj)`` uses ``base``'s own versions of the methods ``names`` (none overridden)."""
    return all(getattr(type(obj), n, None) is getattr(base, n, None) for n in names)


class _TensorGather:
    """Builds a batch of a TensorDataset, possibly inside Subsets (random_split), as ``[t[indices] ...]``.

    ``default_collate`` of the samples ``(t0[i], t1[i], ...)`` stacks each position into a list of
    tensors; indexing every tensor once with all the indices gives the same tensors without making
    and stacking a tensor per sample (tens of times faster for small samples).
    """

    def __init__(self, tensors: Sequence[Tensor], maps: list[np.ndarray]) -> None:
        self.tensors = tensors
        self.maps = maps  # Subset index arrays, outermost first

    @classmethod
    def build(cls, dataset: Any) -> _TensorGather | None:
        maps = []
        while isinstance(dataset, Subset) and _inherits(dataset, Subset, "__getitem__", "__getitems__"):
            try:
                ix = np.asarray(dataset.indices)
            except Exception:
                return None
            if ix.ndim != 1 or ix.dtype.kind not in "iu":
                return None
            maps.append(ix)
            dataset = dataset.dataset
        if not (isinstance(dataset, TensorDataset) and _inherits(dataset, TensorDataset, "__getitem__", "__getitems__")):
            return None
        tensors = dataset.tensors
        if not tensors or not all(isinstance(t, Tensor) and t.ndim >= 1 for t in tensors):
            return None
        return cls(tensors, maps)

    def __call__(self, index: Any) -> list[Tensor] | None:
        """The batch for the indices ``index``, or None when they are not plain integers."""
        try:
            ix = np.asarray(index)
        except Exception:
            return None
        if ix.ndim != 1 or ix.size == 0 or ix.dtype.kind not in "iu":
            return None
        for m in self.maps:
            ix = m[ix]
        return [t[ix] for t in self.tensors]
