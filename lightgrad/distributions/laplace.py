"""The Laplace distribution."""

from __future__ import annotations

from typing import Any

from lightgrad.tensor import Size, Tensor

from . import constraints
from . import utils as _u
from .distribution import Distribution
from .utils import _batch_shape_of, broadcast_all


class Laplace(Distribution):
    """The Laplace distribution: ``Laplace(torch.tensor([0.0]), torch.tensor([1.0])).sample()``."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, loc: Any, scale: Any, validate_args: bool | None = None) -> None:
        self.loc, self.scale = broadcast_all(loc, scale)
        super().__init__(_batch_shape_of((loc, scale), self.loc), validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Laplace:
        """A distribution of this kind with its parameters broadcast to ``batch_shape``."""
        return self._expanded(Laplace, batch_shape, _instance, "loc", "scale")

    @property
    def mean(self) -> Tensor:
        """``loc``."""
        return self.loc

    @property
    def mode(self) -> Tensor:
        """``loc``."""
        return self.loc

    @property
    def variance(self) -> Tensor:
        """``2 * scale ** 2``."""
        return 2 * self.scale.pow(2)

    @property
    def stddev(self) -> Tensor:
        """``sqrt(2) * scale``."""
        return (2 ** 0.5) * self.scale

    def rsample(self, sample_shape: Any = Size(())) -> Tensor:
        """Draw samples of shape ``sample_shape + batch_shape + event_shape`` that carry gradients to the parameters."""
        eps = _u._eps(self.loc.dtype)
        # u uniform in [eps - 1, 1), as PyTorch draws it, so log1p(-|u|) stays finite
        u = _u._uniform(self._extended_shape(sample_shape), self.loc.dtype) * (2 - eps) + (eps - 1)
        return self.loc - self.scale * u.sign() * (-u.abs()).log1p()

    def log_prob(self, value: Tensor) -> Tensor:
        """The log of the density (or mass) at ``value``."""
        if self._validate_args:
            self._validate_sample(value)
        return -(2 * self.scale).log() - (value - self.loc).abs() / self.scale

    def cdf(self, value: Tensor) -> Tensor:
        """The cumulative distribution function at ``value``."""
        if self._validate_args:
            self._validate_sample(value)
        d = value - self.loc
        return 0.5 - 0.5 * d.sign() * (-d.abs() / self.scale).expm1()

    def icdf(self, value: Tensor) -> Tensor:
        """The inverse CDF (the quantile function) at probability ``value``."""
        term = value - 0.5
        return self.loc - self.scale * term.sign() * (-2 * term.abs()).log1p()

    def entropy(self) -> Tensor:
        """The entropy, per batch element."""
        return 1 + (2 * self.scale).log()
