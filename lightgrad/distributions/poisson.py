"""The Poisson distribution."""

from __future__ import annotations

from typing import Any

from lightgrad import random as _random
from lightgrad.tensor import Size, Tensor

from . import constraints
from .exp_family import ExponentialFamily
from .utils import _batch_shape_of, broadcast_all


class Poisson(ExponentialFamily):
    """Counts with mean ``rate``: ``Poisson(torch.tensor([4.0])).sample()``."""

    arg_constraints = {"rate": constraints.nonnegative}
    support = constraints.nonnegative_integer

    def __init__(self, rate: Any, validate_args: bool | None = None) -> None:
        (self.rate,) = broadcast_all(rate)
        super().__init__(_batch_shape_of((rate,), self.rate), validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Poisson:
        """A distribution of this kind with its parameters broadcast to ``batch_shape``."""
        return self._expanded(Poisson, batch_shape, _instance, "rate")

    @property
    def mean(self) -> Tensor:
        """``rate``."""
        return self.rate

    @property
    def mode(self) -> Tensor:
        """``floor(rate)``."""
        return self.rate.floor()

    @property
    def variance(self) -> Tensor:
        """``rate``."""
        return self.rate

    def sample(self, sample_shape: Any = Size(())) -> Tensor:
        """Draw samples of shape ``sample_shape + batch_shape + event_shape``, without gradient."""
        shape = tuple(self._extended_shape(sample_shape))
        # torch.poisson's sampler and draws, from the global generator (floats, as torch's)
        return _random.poisson(self.rate.detach().expand(shape))

    def log_prob(self, value: Tensor) -> Tensor:
        """The log of the density (or mass) at ``value``."""
        if self._validate_args:
            self._validate_sample(value)
        rate, value = broadcast_all(self.rate, value)
        return value.xlogy(rate) - rate - (value + 1).lgamma()
