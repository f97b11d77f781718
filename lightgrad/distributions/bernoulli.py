"""The Bernoulli distribution."""

from __future__ import annotations

import math
from numbers import Number
from typing import Any

import lightgrad as lg
from lightgrad.nn.functional import binary_cross_entropy_with_logits
from lightgrad.tensor import Size, Tensor

from . import constraints
from . import utils as _u
from .exp_family import ExponentialFamily
from .utils import _size, broadcast_all, lazy_property, logits_to_probs, probs_to_logits


class Bernoulli(ExponentialFamily):
    """Bernoulli: 1 with probability ``probs`` (or ``sigmoid(logits)``): ``Bernoulli(probs=torch.tensor([0.3]))``."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.boolean
    has_enumerate_support = True

    def __init__(self, probs: Any = None, logits: Any = None, validate_args: bool | None = None) -> None:
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            is_scalar = isinstance(probs, Number)
            (self.probs,) = broadcast_all(probs)
        else:
            is_scalar = isinstance(logits, Number)
            (self.logits,) = broadcast_all(logits)
        self._param = self.probs if probs is not None else self.logits
        super().__init__(Size(()) if is_scalar else self._param.size(), validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Bernoulli:
        """A distribution of this kind with its parameters broadcast to ``batch_shape``."""
        new = self._get_checked_instance(Bernoulli, _instance)
        batch_shape = _size(batch_shape)
        if "probs" in self.__dict__:
            new.probs = self.probs.expand(batch_shape)
            new._param = new.probs
        if "logits" in self.__dict__:
            new.logits = self.logits.expand(batch_shape)
            new._param = new.logits
        super(Bernoulli, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @lazy_property
    def logits(self) -> Tensor:
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self) -> Tensor:
        return logits_to_probs(self.logits, is_binary=True)

    @property
    def param_shape(self) -> Size:
        """The shape of the parameter tensor (``probs`` or ``logits``)."""
        return self._param.size()

    @property
    def mean(self) -> Tensor:
        """``probs``."""
        return self.probs

    @property
    def mode(self) -> Tensor:
        """1 where ``probs`` > 0.5, 0 below, NaN at exactly 0.5."""
        mode = (self.probs >= 0.5).to(self.probs.dtype)
        return mode.masked_fill(self.probs == 0.5, math.nan)

    @property
    def variance(self) -> Tensor:
        """``probs * (1 - probs)``."""
        return self.probs * (1 - self.probs)

    def sample(self, sample_shape: Any = Size(())) -> Tensor:
        """Draw samples of shape ``sample_shape + batch_shape + event_shape``, without gradient."""
        shape = self._extended_shape(sample_shape)
        with lg.no_grad():
            probs = self.probs.expand(shape)
            return (_u._uniform(shape, probs.dtype) < probs).to(probs.dtype)

    def log_prob(self, value: Tensor) -> Tensor:
        """The log of the density (or mass) at ``value``."""
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        return -binary_cross_entropy_with_logits(logits, value, reduction="none")

    def entropy(self) -> Tensor:
        """The entropy, per batch element."""
        return binary_cross_entropy_with_logits(self.logits, self.probs, reduction="none")

    def enumerate_support(self, expand: bool = True) -> Tensor:
        """Every value of the support along a new first dim (broadcast to the batch shape when ``expand``)."""
        values = lg.arange(2, dtype=self._param.dtype).reshape((-1,) + (1,) * len(self._batch_shape))
        return values.expand((-1,) + tuple(self._batch_shape)) if expand else values
