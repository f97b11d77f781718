"""``Distribution``: the base class of every distribution (``torch.distributions.Distribution``)."""

from __future__ import annotations

import warnings
from typing import Any

import lightgrad as lg
from lightgrad.tensor import Size, Tensor

from . import constraints
from .utils import _size, lazy_property


class Distribution:
    """A family of probability distributions with a ``batch_shape`` of independent members, each over
    values of ``event_shape``: ``Normal(torch.zeros(3), 1.0).batch_shape == (3,)``."""

    has_rsample = False
    has_enumerate_support = False
    _validate_args = __debug__

    @staticmethod
    def set_default_validate_args(value: bool) -> None:
        """Turn argument and sample checks on or off for all distributions (on by default, like PyTorch)."""
        if value not in (True, False):
            raise ValueError(f"Expected True or False for validate_args, got {value!r}")
        Distribution._validate_args = value

    def __init__(self, batch_shape: Any = Size(()), event_shape: Any = Size(()),
                 validate_args: bool | None = None) -> None:
        self._batch_shape = _size(batch_shape)
        self._event_shape = _size(event_shape)
        if validate_args is not None:
            self._validate_args = validate_args
        if self._validate_args:
            try:
                arg_constraints = self.arg_constraints
            except NotImplementedError:
                arg_constraints = {}
            for param, constraint in arg_constraints.items():
                if constraints.is_dependent(constraint):
                    continue  # (checked by the subclass, e.g. Uniform's low < high)
                if param not in self.__dict__ and isinstance(getattr(type(self), param), lazy_property):
                    continue  # (probs when given logits: valid by construction)
                value = getattr(self, param)
                if not bool(constraint.check(value).all()):
                    raise ValueError(
                        f"Expected parameter {param} ({type(value).__name__} of shape {tuple(value.shape)}) "
                        f"of distribution {self!r} to satisfy the constraint {constraint!r}, "
                        f"but found invalid values:\n{value}")

    def expand(self, batch_shape: Any, _instance: Any = None) -> Distribution:
        """The same distribution with its parameters expanded to ``batch_shape`` (no copy)."""
        raise NotImplementedError

    @property
    def batch_shape(self) -> Size:
        """The shape over which parameters are batched."""
        return self._batch_shape

    @property
    def event_shape(self) -> Size:
        """The shape of a single sample (without batching)."""
        return self._event_shape

    @property
    def arg_constraints(self) -> dict[str, constraints.Constraint]:
        """Parameter name -> the constraint it must satisfy."""
        raise NotImplementedError

    @property
    def support(self) -> Any:
        """The constraint that valid samples satisfy."""
        raise NotImplementedError

    @property
    def mean(self) -> Tensor:
        """The distribution's mean (each distribution defines it)."""
        raise NotImplementedError(f"{self.__class__} does not implement mean")

    @property
    def mode(self) -> Tensor:
        """The distribution's mode (each distribution defines it)."""
        raise NotImplementedError(f"{self.__class__} does not implement mode")

    @property
    def variance(self) -> Tensor:
        """The distribution's variance (each distribution defines it)."""
        raise NotImplementedError(f"{self.__class__} does not implement variance")

    @property
    def stddev(self) -> Tensor:
        """The standard deviation: the square root of ``variance``."""
        return self.variance.sqrt()

    def sample(self, sample_shape: Any = Size(())) -> Tensor:
        """A sample of shape ``sample_shape + batch_shape + event_shape``, without gradient."""
        with lg.no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape: Any = Size(())) -> Tensor:
        """A reparameterized sample: gradients flow back to the parameters."""
        raise NotImplementedError

    def sample_n(self, n: int) -> Tensor:
        """Deprecated spelling of ``sample((n,))``."""
        warnings.warn("sample_n will be deprecated. Use .sample((n,)) instead", UserWarning, stacklevel=2)
        return self.sample(Size((n,)))

    def log_prob(self, value: Tensor) -> Tensor:
        """The log of the density (or mass) at ``value``."""
        raise NotImplementedError

    def cdf(self, value: Tensor) -> Tensor:
        """The cumulative distribution function at ``value`` (where the distribution defines one)."""
        raise NotImplementedError

    def icdf(self, value: Tensor) -> Tensor:
        """The inverse CDF at probability ``value`` (where the distribution defines one)."""
        raise NotImplementedError

    def enumerate_support(self, expand: bool = True) -> Tensor:
        """Every value of a discrete support along a new first dim (where defined)."""
        raise NotImplementedError

    def entropy(self) -> Tensor:
        """The entropy, per batch element (where the distribution defines it)."""
        raise NotImplementedError

    def perplexity(self) -> Tensor:
        """``exp(entropy())``."""
        return self.entropy().exp()

    def _extended_shape(self, sample_shape: Any = Size(())) -> Size:
        """``sample_shape + batch_shape + event_shape``."""
        return Size(tuple(sample_shape) + tuple(self._batch_shape) + tuple(self._event_shape))

    def _validate_sample(self, value: Tensor) -> None:
        """Raise ValueError unless ``value`` is a tensor of a broadcastable shape inside the support."""
        if not isinstance(value, Tensor):
            raise ValueError("The value argument to log_prob must be a Tensor")
        event_dim_start = value.dim() - len(self._event_shape)
        if tuple(value.shape[event_dim_start:]) != tuple(self._event_shape):
            raise ValueError(f"The right-most size of value must match event_shape: "
                             f"{value.size()} vs {self._event_shape}.")
        actual, expected = value.size(), self._batch_shape + self._event_shape
        for i, j in zip(reversed(actual), reversed(expected)):
            if i != 1 and j != 1 and i != j:
                raise ValueError(f"Value is not broadcastable with batch_shape+event_shape: "
                                 f"{actual} vs {Size(expected)}.")
        try:
            support = self.support
        except NotImplementedError:
            warnings.warn(f"{self.__class__} does not define `support` to enable sample validation. "
                          "Please initialize the distribution with `validate_args=False` "
                          "to turn off validation.", stacklevel=2)
            return
        if not bool(support.check(value).all()):
            raise ValueError(f"Expected value argument ({type(value).__name__} of shape {tuple(value.shape)}) "
                             f"to be within the support ({support!r}) of the distribution {self!r}, "
                             f"but found invalid values:\n{value}")

    def _get_checked_instance(self, cls: type, _instance: Any = None) -> Any:
        if _instance is None and type(self).__init__ is not cls.__init__:  # type: ignore[misc]
            raise NotImplementedError(
                f"Subclass {self.__class__.__name__} of {cls.__name__} that defines a custom __init__ method "
                "must also define a custom .expand() method.")
        return self.__new__(type(self)) if _instance is None else _instance

    def _expanded(self, cls: type, batch_shape: Any, _instance: Any, *names: str) -> Any:
        """``expand`` of a distribution whose parameters are the tensors ``names`` and nothing else."""
        new = self._get_checked_instance(cls, _instance)
        batch_shape = _size(batch_shape)
        for name in names:
            setattr(new, name, getattr(self, name).expand(batch_shape))
        Distribution.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def __repr__(self) -> str:
        names = [k for k in self.arg_constraints if k in self.__dict__]
        args = ", ".join(f"{p}: {self.__dict__[p] if self.__dict__[p].numel() == 1 else self.__dict__[p].size()}"
                         for p in names)
        return f"{self.__class__.__name__}({args})"
