"""The one-hot categorical distribution."""

from __future__ import annotations

from typing import Any

import lightgrad as lg
from lightgrad.tensor import Size, Tensor

from . import constraints
from .categorical import Categorical
from .distribution import Distribution
from .utils import _size


class OneHotCategorical(Distribution):
    """``Categorical`` with samples one-hot coded: ``OneHotCategorical(probs=torch.tensor([0.2, 0.8])).sample()``."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.one_hot
    has_enumerate_support = True

    def __init__(self, probs: Any = None, logits: Any = None, validate_args: bool | None = None) -> None:
        self._categorical = Categorical(probs, logits)
        super().__init__(self._categorical.batch_shape, self._categorical.param_shape[-1:],
                         validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> OneHotCategorical:
        """A distribution of this kind with its parameters broadcast to ``batch_shape``."""
        new = self._get_checked_instance(OneHotCategorical, _instance)
        batch_shape = _size(batch_shape)
        new._categorical = self._categorical.expand(batch_shape)
        super(OneHotCategorical, new).__init__(batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def _param(self) -> Tensor:
        return self._categorical._param

    @property
    def probs(self) -> Tensor:
        """The categories' probabilities."""
        return self._categorical.probs

    @property
    def logits(self) -> Tensor:
        """The categories' log-probabilities (normalized)."""
        return self._categorical.logits

    @property
    def param_shape(self) -> Size:
        """The shape of the parameter tensor: the batch shape plus the categories."""
        return self._categorical.param_shape

    @property
    def mean(self) -> Tensor:
        """``probs``."""
        return self._categorical.probs

    @property
    def mode(self) -> Tensor:
        """The one-hot vector of the most probable category."""
        probs = self._categorical.probs
        return self._one_hot(probs.argmax(dim=-1), probs)

    @property
    def variance(self) -> Tensor:
        """``probs * (1 - probs)``."""
        return self._categorical.probs * (1 - self._categorical.probs)

    def _one_hot(self, indices: Tensor, like: Tensor) -> Tensor:
        n = self._categorical._num_events
        return (indices.unsqueeze(-1) == lg.arange(n)).to(like.dtype)

    def sample(self, sample_shape: Any = Size(())) -> Tensor:
        """Draw one-hot samples of shape ``sample_shape + batch_shape + (num_categories,)``, without gradient."""
        return self._one_hot(self._categorical.sample(sample_shape), self._categorical.probs)

    def log_prob(self, value: Tensor) -> Tensor:
        """The log of the density (or mass) at ``value``."""
        if self._validate_args:
            self._validate_sample(value)
        return self._categorical.log_prob(value.max(-1)[1])

    def entropy(self) -> Tensor:
        """The entropy, per batch element."""
        return self._categorical.entropy()

    def enumerate_support(self, expand: bool = True) -> Tensor:
        """Each category's one-hot vector along a new first dim (broadcast to the batch shape when ``expand``)."""
        n = self.event_shape[0]
        values = lg.eye(n, dtype=self._param.dtype).reshape((n,) + (1,) * len(self.batch_shape) + (n,))
        return values.expand((n,) + tuple(self.batch_shape) + (n,)) if expand else values
