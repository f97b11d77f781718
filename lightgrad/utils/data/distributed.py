"""DistributedSampler: each of ``num_replicas`` processes reads its own share of a dataset."""

from __future__ import annotations

import importlib
import math
from collections.abc import Iterator, Sized
from typing import Any

from ... import random as _random
from .sampler import Sampler


def _dist() -> Any:
    try:
        dist = importlib.import_module("lightgrad.distributed")
    except ModuleNotFoundError:
        dist = None
    if dist is None or not getattr(dist, "is_available", lambda: False)():
        raise RuntimeError("Requires distributed package to be available (or pass num_replicas and rank)")
    return dist


class DistributedSampler(Sampler[int]):
    """Every ``num_replicas``-th index from ``rank``, padded (or cut with ``drop_last``) to equal shares.

    With ``shuffle`` the order is a permutation seeded by ``seed + epoch``: call ``set_epoch`` each
    epoch. ``DistributedSampler(ds, num_replicas=2, rank=0, shuffle=False)``.
    """

    def __init__(self, dataset: Sized, num_replicas: int | None = None, rank: int | None = None,
                 shuffle: bool = True, seed: int = 0, drop_last: bool = False) -> None:
        if num_replicas is None:
            num_replicas = _dist().get_world_size()
        if rank is None:
            rank = _dist().get_rank()
        if rank >= num_replicas or rank < 0:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval [0, {num_replicas - 1}]")
        self.dataset = dataset
        self.num_replicas = num_replicas
        self.rank = rank
        self.epoch = 0
        self.drop_last = drop_last
        n = len(dataset)
        if drop_last and n % num_replicas != 0:
            self.num_samples = math.ceil((n - num_replicas) / num_replicas)
        else:
            self.num_samples = math.ceil(n / num_replicas)
        self.total_size = self.num_samples * num_replicas
        self.shuffle = shuffle
        self.seed = seed

    def __iter__(self) -> Iterator[int]:
        n = len(self.dataset)
        if self.shuffle:
            g = _random.Generator().manual_seed(self.seed + self.epoch)
            indices = _random.randperm(n, generator=g).tolist()
        else:
            indices = list(range(n))
        if not self.drop_last:
            padding_size = self.total_size - len(indices)
            if padding_size <= len(indices):
                indices += indices[:padding_size]
            else:
                indices += (indices * math.ceil(padding_size / len(indices)))[:padding_size]
        else:
            indices = indices[:self.total_size]
        return iter(indices[self.rank:self.total_size:self.num_replicas])

    def __len__(self) -> int:
        return self.num_samples

    def set_epoch(self, epoch: int) -> None:
        """Use a different shuffle for each epoch (the same on every replica)."""
        self.epoch = epoch
