"""The log-normal distribution: ``exp`` of a normal."""

from __future__ import annotations

from typing import Any

from lightgrad.tensor import Tensor

from . import constraints
from .normal import Normal
from .transformed_distribution import TransformedDistribution
from .transforms import ExpTransform


class LogNormal(TransformedDistribution):
    """``exp(X)`` for ``X ~ Normal(loc, scale)``: ``LogNormal(0.0, 1.0).sample((2,))``."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.positive
    has_rsample = True
    base_dist: Normal

    def __init__(self, loc: Any, scale: Any, validate_args: bool | None = None) -> None:
        base_dist = Normal(loc, scale, validate_args=validate_args)
        super().__init__(base_dist, ExpTransform(), validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> LogNormal:
        """A distribution of this kind with its parameters broadcast to ``batch_shape``."""
        new = self._get_checked_instance(LogNormal, _instance)
        return super().expand(batch_shape, _instance=new)  # type: ignore[return-value]

    @property
    def loc(self) -> Tensor:
        """The mean of the log: the base Normal's ``loc``."""
        return self.base_dist.loc

    @property
    def scale(self) -> Tensor:
        """The standard deviation of the log: the base Normal's ``scale``."""
        return self.base_dist.scale

    @property
    def mean(self) -> Tensor:
        """``exp(loc + scale ** 2 / 2)``."""
        return (self.loc + self.scale.pow(2) / 2).exp()

    @property
    def mode(self) -> Tensor:
        """``exp(loc - scale ** 2)``."""
        return (self.loc - self.scale.square()).exp()

    @property
    def variance(self) -> Tensor:
        """``(exp(scale ** 2) - 1) * exp(2 * loc + scale ** 2)``."""
        scale2 = self.scale.pow(2)
        return scale2.expm1() * (2 * self.loc + scale2).exp()

    def entropy(self) -> Tensor:
        """The entropy, per batch element."""
        return self.base_dist.entropy() + self.loc
