"""The categorical distribution."""

from __future__ import annotations

import math
from typing import Any

import lightgrad as lg
from lightgrad.tensor import Size, Tensor

from . import constraints
from . import utils as _u
from .distribution import Distribution
from .utils import _size, lazy_property, logits_to_probs, probs_to_logits


class Categorical(Distribution):
    """A categorical distribution over ``{0, ..., K-1}`` given by the last dim of ``probs`` or ``logits``:
    ``Categorical(logits=torch.zeros(4)).sample((2,))``."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    has_enumerate_support = True

    def __init__(self, probs: Any = None, logits: Any = None, validate_args: bool | None = None) -> None:
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            if probs.dim() < 1:
                raise ValueError("`probs` parameter must be at least one-dimensional.")
            self.probs = probs / probs.sum(-1, keepdim=True)
        else:
            if logits.dim() < 1:
                raise ValueError("`logits` parameter must be at least one-dimensional.")
            # normalized: PyTorch writes logits - logsumexp; log_softmax is the same value, one fused op
            self.logits = logits.log_softmax(-1)
        self._param = self.probs if probs is not None else self.logits
        self._num_events = self._param.size()[-1]
        batch_shape = self._param.size()[:-1] if self._param.dim() > 1 else Size(())
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Categorical:
        """A distribution of this kind with its parameters broadcast to ``batch_shape``."""
        new = self._get_checked_instance(Categorical, _instance)
        batch_shape = _size(batch_shape)
        param_shape = tuple(batch_shape) + (self._num_events,)
        if "probs" in self.__dict__:
            new.probs = self.probs.expand(param_shape)
            new._param = new.probs
        if "logits" in self.__dict__:
            new.logits = self.logits.expand(param_shape)
            new._param = new.logits
        new._num_events = self._num_events
        super(Categorical, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self) -> Any:
        """Integers in ``[0, num_categories)``."""
        return constraints.integer_interval(0, self._num_events - 1)

    @lazy_property
    def logits(self) -> Tensor:
        return probs_to_logits(self.probs)

    @lazy_property
    def probs(self) -> Tensor:
        return logits_to_probs(self.logits)

    @property
    def param_shape(self) -> Size:
        """The shape of the parameter tensor: the batch shape plus the categories."""
        return self._param.size()

    @property
    def mean(self) -> Tensor:
        """NaN: categories have no mean."""
        return lg.full(tuple(self._extended_shape()), math.nan, dtype=self.probs.dtype)

    @property
    def mode(self) -> Tensor:
        """The most probable category."""
        return self.probs.argmax(dim=-1)

    @property
    def variance(self) -> Tensor:
        """NaN: categories have no variance."""
        return lg.full(tuple(self._extended_shape()), math.nan, dtype=self.probs.dtype)

    def sample(self, sample_shape: Any = Size(())) -> Tensor:
        # PyTorch's draws: multinomial with replacement, one row per batch entry, samples along it
        """Draw samples of shape ``sample_shape + batch_shape + event_shape``, without gradient."""
        shape = tuple(self._extended_shape(sample_shape))
        n = math.prod(tuple(sample_shape))
        with lg.no_grad():
            rows = self.probs.detach().reshape(-1, self._num_events)
            return lg.multinomial(rows, n, True).T.reshape(shape)

    def log_prob(self, value: Tensor) -> Tensor:
        """The log of the density (or mass) at ``value``."""
        if self._validate_args:
            self._validate_sample(value)
        value = value.long().unsqueeze(-1)
        if tuple(value.shape[:-1]) == tuple(self._batch_shape):  # (the usual case: one value per member)
            return self.logits.gather(-1, value).squeeze(-1)
        value, log_pmf = lg.broadcast_tensors(value, self.logits)
        return log_pmf.gather(-1, value[..., :1]).squeeze(-1)

    def entropy(self) -> Tensor:
        """The entropy, per batch element."""
        logits = self.logits.clamp(min=_u._min(self.logits.dtype))  # -inf logits (p = 0) add 0, not nan
        return -(logits * self.probs).sum(-1)

    def enumerate_support(self, expand: bool = True) -> Tensor:
        """Every value of the support along a new first dim (broadcast to the batch shape when ``expand``)."""
        values = lg.arange(self._num_events, dtype=lg.long).reshape((-1,) + (1,) * len(self._batch_shape))
        return values.expand((-1,) + tuple(self._batch_shape)) if expand else values
