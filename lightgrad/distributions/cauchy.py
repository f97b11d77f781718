"""The Cauchy (Lorentz) distribution."""

from __future__ import annotations

import math
from typing import Any

import lightgrad as lg
from lightgrad.tensor import Size, Tensor

from . import constraints
from .distribution import Distribution
from .utils import _batch_shape_of, broadcast_all


class Cauchy(Distribution):
    """The Cauchy distribution: ``Cauchy(torch.tensor([0.0]), torch.tensor([1.0])).sample()``."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, loc: Any, scale: Any, validate_args: bool | None = None) -> None:
        self.loc, self.scale = broadcast_all(loc, scale)
        super().__init__(_batch_shape_of((loc, scale), self.loc), validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Cauchy:
        """A distribution of this kind with its parameters broadcast to ``batch_shape``."""
        return self._expanded(Cauchy, batch_shape, _instance, "loc", "scale")

    @property
    def mean(self) -> Tensor:
        """NaN: the Cauchy distribution has no mean."""
        return lg.full(tuple(self._extended_shape()), math.nan, dtype=self.loc.dtype)  # (undefined)

    @property
    def mode(self) -> Tensor:
        """``loc``."""
        return self.loc

    @property
    def variance(self) -> Tensor:
        """Infinity: the Cauchy distribution has no finite variance."""
        return lg.full(tuple(self._extended_shape()), math.inf, dtype=self.loc.dtype)

    def rsample(self, sample_shape: Any = Size(())) -> Tensor:
        # PyTorch's draws: standard cauchy_() samples, moved and scaled
        """Draw samples of shape ``sample_shape + batch_shape + event_shape`` that carry gradients to the parameters."""
        eps = lg.empty(tuple(self._extended_shape(sample_shape)), dtype=self.loc.dtype).cauchy_()
        return self.loc + eps * self.scale

    def log_prob(self, value: Tensor) -> Tensor:
        """The log of the density (or mass) at ``value``."""
        if self._validate_args:
            self._validate_sample(value)
        return -math.log(math.pi) - self.scale.log() - ((value - self.loc) / self.scale).pow(2).log1p()

    def cdf(self, value: Tensor) -> Tensor:
        """The cumulative distribution function at ``value``."""
        if self._validate_args:
            self._validate_sample(value)
        return ((value - self.loc) / self.scale).atan() / math.pi + 0.5

    def icdf(self, value: Tensor) -> Tensor:
        """The inverse CDF (the quantile function) at probability ``value``."""
        return (math.pi * (value - 0.5)).tan() * self.scale + self.loc

    def entropy(self) -> Tensor:
        """The entropy, per batch element."""
        return math.log(4 * math.pi) + self.scale.log()
