"""The Gumbel (type-I extreme value) distribution."""

from __future__ import annotations

import math
from numbers import Number
from typing import Any

import lightgrad as lg
from lightgrad.tensor import Tensor

from . import constraints
from .transformed_distribution import TransformedDistribution
from .transforms import AffineTransform, ExpTransform
from .uniform import Uniform
from .utils import broadcast_all

_EULER_GAMMA = 0.57721566490153286060


class Gumbel(TransformedDistribution):
    """The Gumbel distribution: ``Gumbel(torch.tensor([1.0]), torch.tensor([2.0])).sample()``."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real

    def __init__(self, loc: Any, scale: Any, validate_args: bool | None = None) -> None:
        self.loc, self.scale = broadcast_all(loc, scale)
        fi = lg.finfo(self.loc.dtype)
        # uniform on [tiny, 1 - eps], so both logs of -log(-log(u)) stay finite
        if isinstance(loc, Number) and isinstance(scale, Number):
            base_dist = Uniform(fi.tiny, 1 - fi.eps, validate_args=validate_args)
        else:
            base_dist = Uniform(lg.full_like(self.loc, fi.tiny), lg.full_like(self.loc, 1 - fi.eps),
                                validate_args=validate_args)
        transforms = [ExpTransform().inv, AffineTransform(loc=0, scale=-lg.ones_like(self.scale)),
                      ExpTransform().inv, AffineTransform(loc=self.loc, scale=-self.scale)]
        super().__init__(base_dist, transforms, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Gumbel:
        """A distribution of this kind with its parameters broadcast to ``batch_shape``."""
        new = self._get_checked_instance(Gumbel, _instance)
        new.loc = self.loc.expand(batch_shape)
        new.scale = self.scale.expand(batch_shape)
        return super().expand(batch_shape, _instance=new)  # type: ignore[return-value]

    def log_prob(self, value: Tensor) -> Tensor:
        """The log of the density (or mass) at ``value``."""
        if self._validate_args:
            self._validate_sample(value)
        y = (self.loc - value) / self.scale
        return (y - y.exp()) - self.scale.log()

    @property
    def mean(self) -> Tensor:
        """``loc + scale * euler_gamma``."""
        return self.loc + self.scale * _EULER_GAMMA

    @property
    def mode(self) -> Tensor:
        """``loc``."""
        return self.loc

    @property
    def stddev(self) -> Tensor:
        """``scale * pi / sqrt(6)``."""
        return (math.pi / math.sqrt(6)) * self.scale

    @property
    def variance(self) -> Tensor:
        """``(scale * pi) ** 2 / 6``."""
        return self.stddev.pow(2)

    def entropy(self) -> Tensor:
        """The entropy, per batch element."""
        return self.scale.log() + (1 + _EULER_GAMMA)
