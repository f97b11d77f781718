"""``Independent``: reinterpret batch dims of a distribution as event dims."""

from __future__ import annotations

from typing import Any

from lightgrad.tensor import Size, Tensor

from . import constraints
from .distribution import Distribution
from .utils import _size, _sum_rightmost


class Independent(Distribution):
    """Treat the ``reinterpreted_batch_ndims`` rightmost batch dims as event dims (log-probs summed over them):
    ``Independent(Normal(torch.zeros(3), 1.0), 1).event_shape == (3,)``."""

    arg_constraints: dict[str, constraints.Constraint] = {}

    def __init__(self, base_distribution: Distribution, reinterpreted_batch_ndims: int,
                 validate_args: bool | None = None) -> None:
        if reinterpreted_batch_ndims > len(base_distribution.batch_shape):
            raise ValueError("Expected reinterpreted_batch_ndims <= len(base_distribution.batch_shape), "
                             f"actual {reinterpreted_batch_ndims} vs {len(base_distribution.batch_shape)}")
        shape = tuple(base_distribution.batch_shape) + tuple(base_distribution.event_shape)
        event_dim = reinterpreted_batch_ndims + len(base_distribution.event_shape)
        self.base_dist = base_distribution
        self.reinterpreted_batch_ndims = reinterpreted_batch_ndims
        super().__init__(shape[:len(shape) - event_dim], shape[len(shape) - event_dim:], validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Independent:
        """A distribution of this kind with its parameters broadcast to ``batch_shape``."""
        new = self._get_checked_instance(Independent, _instance)
        batch_shape = _size(batch_shape)
        base_shape = tuple(batch_shape) + tuple(self.event_shape[:self.reinterpreted_batch_ndims])
        new.base_dist = self.base_dist.expand(base_shape)
        new.reinterpreted_batch_ndims = self.reinterpreted_batch_ndims
        super(Independent, new).__init__(batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def has_rsample(self) -> bool:  # type: ignore[override]
        """Whether the base distribution can ``rsample``."""
        return self.base_dist.has_rsample

    @property
    def has_enumerate_support(self) -> bool:  # type: ignore[override]
        """Whether the support can be enumerated: the base's, and no dims reinterpreted."""
        return False if self.reinterpreted_batch_ndims > 0 else self.base_dist.has_enumerate_support

    @constraints.dependent_property
    def support(self) -> Any:
        """The base's support with the reinterpreted dims made part of the event."""
        result = self.base_dist.support
        if self.reinterpreted_batch_ndims:
            result = constraints.independent(result, self.reinterpreted_batch_ndims)
        return result

    @property
    def mean(self) -> Tensor:
        """The base distribution's mean."""
        return self.base_dist.mean

    @property
    def mode(self) -> Tensor:
        """The base distribution's mode."""
        return self.base_dist.mode

    @property
    def variance(self) -> Tensor:
        """The base distribution's variance."""
        return self.base_dist.variance

    def sample(self, sample_shape: Any = Size(())) -> Tensor:
        """Draw samples of shape ``sample_shape + batch_shape + event_shape``, without gradient."""
        return self.base_dist.sample(sample_shape)

    def rsample(self, sample_shape: Any = Size(())) -> Tensor:
        """Draw samples of shape ``sample_shape + batch_shape + event_shape`` that carry gradients to the parameters."""
        return self.base_dist.rsample(sample_shape)

    def log_prob(self, value: Tensor) -> Tensor:
        """The base's log-probability summed over the reinterpreted dims."""
        return _sum_rightmost(self.base_dist.log_prob(value), self.reinterpreted_batch_ndims)

    def entropy(self) -> Tensor:
        """The base's entropy summed over the reinterpreted dims."""
        return _sum_rightmost(self.base_dist.entropy(), self.reinterpreted_batch_ndims)

    def enumerate_support(self, expand: bool = True) -> Tensor:
        """Every value of the support along a new first dim (broadcast to the batch shape when ``expand``)."""
        if self.reinterpreted_batch_ndims > 0:
            raise NotImplementedError("Enumeration over cartesian product is not implemented")
        return self.base_dist.enumerate_support(expand=expand)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}({self.base_dist}, {self.reinterpreted_batch_ndims})"
