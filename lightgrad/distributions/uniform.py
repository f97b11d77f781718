"""The continuous uniform distribution."""

from __future__ import annotations

import math
from typing import Any

from lightgrad.tensor import Size, Tensor

from . import constraints
from . import utils as _u
from .distribution import Distribution
from .utils import _batch_shape_of, broadcast_all


class Uniform(Distribution):
    """Uniform on the half-open interval [low, high): ``Uniform(0.0, 2.0).sample((3,))``."""

    has_rsample = True

    @property
    def arg_constraints(self) -> dict[str, constraints.Constraint]:  # type: ignore[override]
        """The constraints on ``low`` and ``high``: each bounded by the other."""
        return {"low": constraints.less_than(self.high), "high": constraints.greater_than(self.low)}

    def __init__(self, low: Any, high: Any, validate_args: bool | None = None) -> None:
        self.low, self.high = broadcast_all(low, high)
        super().__init__(_batch_shape_of((low, high), self.low), validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Uniform:
        """A distribution of this kind with its parameters broadcast to ``batch_shape``."""
        return self._expanded(Uniform, batch_shape, _instance, "low", "high")

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self) -> Any:
        """The interval ``[low, high)``."""
        return constraints.interval(self.low, self.high)

    @property
    def mean(self) -> Tensor:
        """``(low + high) / 2``."""
        return (self.high + self.low) / 2

    @property
    def mode(self) -> Tensor:
        """NaN: every point is as likely."""
        return math.nan * self.high

    @property
    def stddev(self) -> Tensor:
        """``(high - low) / sqrt(12)``."""
        return (self.high - self.low) / 12 ** 0.5

    @property
    def variance(self) -> Tensor:
        """``(high - low) ** 2 / 12``."""
        return (self.high - self.low).pow(2) / 12

    def rsample(self, sample_shape: Any = Size(())) -> Tensor:
        """Draw samples of shape ``sample_shape + batch_shape + event_shape`` that carry gradients to the parameters."""
        rand = _u._uniform(self._extended_shape(sample_shape), self.low.dtype)
        return self.low + rand * (self.high - self.low)

    def log_prob(self, value: Tensor) -> Tensor:
        """The log of the density (or mass) at ``value``."""
        if self._validate_args:
            self._validate_sample(value)
        lb = self.low.le(value).type_as(self.low)
        ub = self.high.gt(value).type_as(self.low)
        return lb.mul(ub).log() - (self.high - self.low).log()

    def cdf(self, value: Tensor) -> Tensor:
        """The cumulative distribution function at ``value``."""
        if self._validate_args:
            self._validate_sample(value)
        return ((value - self.low) / (self.high - self.low)).clamp(min=0, max=1)

    def icdf(self, value: Tensor) -> Tensor:
        """The inverse CDF (the quantile function) at probability ``value``."""
        return value * (self.high - self.low) + self.low

    def entropy(self) -> Tensor:
        """The entropy, per batch element."""
        return (self.high - self.low).log()
