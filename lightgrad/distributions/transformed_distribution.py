"""``TransformedDistribution``: a base distribution pushed through a list of transforms."""

from __future__ import annotations

from typing import Any

import lightgrad as lg
from lightgrad.tensor import Size, Tensor

from . import constraints
from .distribution import Distribution
from .independent import Independent
from .transforms import ComposeTransform, Transform
from .utils import _size, _sum_rightmost


class TransformedDistribution(Distribution):
    """``Y = f_n(... f_1(X))`` for ``X ~ base_distribution``:
    ``TransformedDistribution(Normal(0., 1.), [ExpTransform()])`` is a log-normal."""

    arg_constraints: dict[str, constraints.Constraint] = {}

    def __init__(self, base_distribution: Distribution, transforms: Any, validate_args: bool | None = None) -> None:
        if isinstance(transforms, Transform):
            self.transforms = [transforms]
        elif isinstance(transforms, list):
            if not all(isinstance(t, Transform) for t in transforms):
                raise ValueError("transforms must be a Transform or a list of Transforms")
            self.transforms = transforms
        else:
            raise ValueError(f"transforms must be a Transform or list, but was {transforms}")
        base_shape = base_distribution.batch_shape + base_distribution.event_shape
        base_event_dim = len(base_distribution.event_shape)
        transform = ComposeTransform(self.transforms)
        if len(base_shape) < transform.domain.event_dim:
            raise ValueError(f"base_distribution needs to have shape with size at least "
                             f"{transform.domain.event_dim}, but got {base_shape}.")
        forward_shape = _size(transform.forward_shape(base_shape))
        expanded_base_shape = _size(transform.inverse_shape(forward_shape))
        if base_shape != expanded_base_shape:
            # (a transform with batched parameters, e.g. AffineTransform(loc of shape (3,)), widens the batch)
            base_distribution = base_distribution.expand(expanded_base_shape[:len(expanded_base_shape) - base_event_dim])
        reinterpreted_batch_ndims = transform.domain.event_dim - base_event_dim
        if reinterpreted_batch_ndims > 0:
            base_distribution = Independent(base_distribution, reinterpreted_batch_ndims)
        self.base_dist = base_distribution
        change = transform.codomain.event_dim - transform.domain.event_dim
        event_dim = max(transform.codomain.event_dim, base_event_dim + change)
        cut = len(forward_shape) - event_dim
        super().__init__(forward_shape[:cut], forward_shape[cut:], validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> TransformedDistribution:
        """A distribution of this kind with its parameters broadcast to ``batch_shape``."""
        new = self._get_checked_instance(TransformedDistribution, _instance)
        batch_shape = _size(batch_shape)
        shape: Any = batch_shape + self.event_shape
        for t in reversed(self.transforms):
            shape = t.inverse_shape(shape)
        new.base_dist = self.base_dist.expand(shape[:len(shape) - len(self.base_dist.event_shape)])
        new.transforms = self.transforms
        super(TransformedDistribution, new).__init__(batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new  # type: ignore[no-any-return]

    @constraints.dependent_property(is_discrete=False)
    def support(self) -> Any:
        """The last transform's codomain (the base's support when there are no transforms)."""
        if not self.transforms:
            return self.base_dist.support
        support = self.transforms[-1].codomain
        if len(self.event_shape) > support.event_dim:
            support = constraints.independent(support, len(self.event_shape) - support.event_dim)
        return support

    @property
    def has_rsample(self) -> bool:  # type: ignore[override]
        """Whether the base distribution can ``rsample``."""
        return self.base_dist.has_rsample

    def sample(self, sample_shape: Any = Size(())) -> Tensor:
        """Base samples pushed through the transforms, without gradient."""
        with lg.no_grad():
            x = self.base_dist.sample(sample_shape)
            for transform in self.transforms:
                x = transform(x)
            return x

    def rsample(self, sample_shape: Any = Size(())) -> Tensor:
        """Reparameterized base samples pushed through the transforms."""
        x = self.base_dist.rsample(sample_shape)
        for transform in self.transforms:
            x = transform(x)
        return x

    def log_prob(self, value: Tensor) -> Tensor:
        """The base's log-density at the inverted value minus the transforms' log-abs-det-Jacobians."""
        if self._validate_args:
            self._validate_sample(value)
        event_dim = len(self.event_shape)
        log_prob: Any = 0.0
        y = value
        for transform in reversed(self.transforms):
            x = transform.inv(y)
            event_dim += transform.domain.event_dim - transform.codomain.event_dim
            log_prob = log_prob - _sum_rightmost(transform.log_abs_det_jacobian(x, y),
                                                 event_dim - transform.domain.event_dim)
            y = x
        return log_prob + _sum_rightmost(self.base_dist.log_prob(y), event_dim - len(self.base_dist.event_shape))

    def _monotonize_cdf(self, value: Tensor) -> Tensor:
        """``value`` for increasing maps, ``1 - value`` where the composed map decreases."""
        sign: Any = 1
        for transform in self.transforms:
            sign = sign * transform.sign
        if isinstance(sign, int) and sign == 1:
            return value
        return sign * (value - 0.5) + 0.5  # type: ignore[no-any-return]

    def cdf(self, value: Tensor) -> Tensor:
        """The base's CDF at the inverted value (flipped where the transforms decrease)."""
        for transform in self.transforms[::-1]:
            value = transform.inv(value)
        if self._validate_args:
            self.base_dist._validate_sample(value)
        return self._monotonize_cdf(self.base_dist.cdf(value))

    def icdf(self, value: Tensor) -> Tensor:
        """The base's quantile pushed through the transforms (flipped where they decrease)."""
        value = self.base_dist.icdf(self._monotonize_cdf(value))
        for transform in self.transforms:
            value = transform(value)
        return value
