"""The normal (Gaussian) distribution."""

from __future__ import annotations

import math
from typing import Any

from lightgrad.tensor import Size, Tensor

from . import constraints
from . import utils as _u
from .exp_family import ExponentialFamily
from .utils import _batch_shape_of, broadcast_all


class Normal(ExponentialFamily):
    """The normal distribution: ``Normal(torch.tensor([0.0]), torch.tensor([1.0])).rsample()``."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, loc: Any, scale: Any, validate_args: bool | None = None) -> None:
        self.loc, self.scale = broadcast_all(loc, scale)
        super().__init__(_batch_shape_of((loc, scale), self.loc), validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Normal:
        """A distribution of this kind with its parameters broadcast to ``batch_shape``."""
        return self._expanded(Normal, batch_shape, _instance, "loc", "scale")

    @property
    def mean(self) -> Tensor:
        """``loc``."""
        return self.loc

    @property
    def mode(self) -> Tensor:
        """``loc``."""
        return self.loc

    @property
    def stddev(self) -> Tensor:
        """``scale``."""
        return self.scale

    @property
    def variance(self) -> Tensor:
        """``scale ** 2``."""
        return self.stddev.pow(2)

    def rsample(self, sample_shape: Any = Size(())) -> Tensor:
        """Draw samples of shape ``sample_shape + batch_shape + event_shape`` that carry gradients to the parameters."""
        eps = _u._standard_normal(self._extended_shape(sample_shape), self.loc.dtype)
        return self.loc + eps * self.scale

    def log_prob(self, value: Tensor) -> Tensor:
        """The log of the density (or mass) at ``value``."""
        if self._validate_args:
            self._validate_sample(value)
        var = self.scale ** 2
        return -((value - self.loc) ** 2) / (2 * var) - self.scale.log() - math.log(math.sqrt(2 * math.pi))

    def cdf(self, value: Tensor) -> Tensor:
        """The cumulative distribution function at ``value``."""
        if self._validate_args:
            self._validate_sample(value)
        return 0.5 * (1 + ((value - self.loc) * self.scale.reciprocal() / math.sqrt(2)).erf())

    def icdf(self, value: Tensor) -> Tensor:
        """The inverse CDF (the quantile function) at probability ``value``."""
        return self.loc + self.scale * (2 * value - 1).erfinv() * math.sqrt(2)

    def entropy(self) -> Tensor:
        """The entropy, per batch element."""
        return 0.5 + 0.5 * math.log(2 * math.pi) + self.scale.log()
