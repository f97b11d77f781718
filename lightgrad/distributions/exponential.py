"""The exponential distribution."""

from __future__ import annotations

from typing import Any

import lightgrad as lg
from lightgrad.tensor import Size, Tensor

from . import constraints
from .exp_family import ExponentialFamily
from .utils import _batch_shape_of, broadcast_all


class Exponential(ExponentialFamily):
    """The exponential distribution with rate ``rate``: ``Exponential(torch.tensor([2.0])).mean``."""

    arg_constraints = {"rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True

    def __init__(self, rate: Any, validate_args: bool | None = None) -> None:
        (self.rate,) = broadcast_all(rate)
        super().__init__(_batch_shape_of((rate,), self.rate), validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Exponential:
        """A distribution of this kind with its parameters broadcast to ``batch_shape``."""
        return self._expanded(Exponential, batch_shape, _instance, "rate")

    @property
    def mean(self) -> Tensor:
        """``1 / rate``."""
        return self.rate.reciprocal()

    @property
    def mode(self) -> Tensor:
        """0."""
        return lg.zeros_like(self.rate)

    @property
    def stddev(self) -> Tensor:
        """``1 / rate``."""
        return self.rate.reciprocal()

    @property
    def variance(self) -> Tensor:
        """``rate ** -2``."""
        return self.rate.pow(-2)

    def rsample(self, sample_shape: Any = Size(())) -> Tensor:
        # PyTorch's draws: exponential_() samples, scaled by the rate (the gradient flows through 1 / rate)
        """Draw samples of shape ``sample_shape + batch_shape + event_shape`` that carry gradients to the parameters."""
        eps = lg.empty(tuple(self._extended_shape(sample_shape)), dtype=self.rate.dtype).exponential_()
        return eps / self.rate

    def log_prob(self, value: Tensor) -> Tensor:
        """The log of the density (or mass) at ``value``."""
        if self._validate_args:
            self._validate_sample(value)
        return self.rate.log() - self.rate * value

    def cdf(self, value: Tensor) -> Tensor:
        """The cumulative distribution function at ``value``."""
        if self._validate_args:
            self._validate_sample(value)
        return 1 - (-self.rate * value).exp()

    def icdf(self, value: Tensor) -> Tensor:
        """The inverse CDF (the quantile function) at probability ``value``."""
        return -(-value).log1p() / self.rate

    def entropy(self) -> Tensor:
        """The entropy, per batch element."""
        return 1.0 - self.rate.log()
