"""Constraints: the regions where parameters and values of a distribution live (``torch.distributions.constraints``).

``constraint.check(value)`` gives a bool tensor: one entry per event (``event_dim`` rightmost dims are reduced).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import lightgrad as lg
from lightgrad import linalg
from lightgrad.tensor import Tensor

__all__ = ["Constraint", "boolean", "dependent", "dependent_property", "greater_than", "greater_than_eq",
           "half_open_interval", "independent", "integer_interval", "interval", "is_dependent",
           "less_than", "lower_cholesky", "lower_triangular", "nonnegative", "nonnegative_integer",
           "one_hot", "positive", "positive_definite", "positive_integer", "real", "real_vector",
           "simplex", "symmetric", "unit_interval"]


class Constraint:
    """A region of valid values: ``constraints.positive.check(torch.tensor([1., -1.]))``."""

    is_discrete = False
    event_dim = 0

    def check(self, value: Tensor) -> Tensor:
        """A bool tensor: whether each event of ``value`` lies in the region (each constraint defines it)."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return self.__class__.__name__[1:] + "()"


class _Dependent(Constraint):
    """A placeholder for a constraint that depends on other parameters (``Uniform``'s ``low``)."""

    def __init__(self, *, is_discrete: Any = NotImplemented, event_dim: Any = NotImplemented) -> None:
        self._is_discrete = is_discrete
        self._event_dim = event_dim

    @property
    def is_discrete(self) -> bool:  # type: ignore[override]
        """Whether the values are discrete, when it was given (else NotImplementedError)."""
        if self._is_discrete is NotImplemented:
            raise NotImplementedError(".is_discrete cannot be determined statically")
        return bool(self._is_discrete)

    @property
    def event_dim(self) -> int:  # type: ignore[override]
        """How many rightmost dims form one event, when it was given (else NotImplementedError)."""
        if self._event_dim is NotImplemented:
            raise NotImplementedError(".event_dim cannot be determined statically")
        return int(self._event_dim)

    def __call__(self, *, is_discrete: Any = NotImplemented, event_dim: Any = NotImplemented) -> _Dependent:
        if is_discrete is NotImplemented:
            is_discrete = self._is_discrete
        if event_dim is NotImplemented:
            event_dim = self._event_dim
        return _Dependent(is_discrete=is_discrete, event_dim=event_dim)

    def check(self, value: Tensor) -> Tensor:
        """Raises ValueError: a dependent constraint cannot be checked on its own."""
        raise ValueError("Cannot determine validity of dependent constraint")


def is_dependent(constraint: Any) -> bool:
    """True for ``dependent`` and ``dependent_property`` placeholders."""
    return isinstance(constraint, _Dependent)


class _DependentProperty(property, _Dependent):
    """A property whose value is a constraint computed from the instance (``Uniform.support``)."""

    def __init__(self, fn: Callable[..., Any] | None = None, *, is_discrete: Any = NotImplemented,
                 event_dim: Any = NotImplemented) -> None:
        property.__init__(self, fn)
        _Dependent.__init__(self, is_discrete=is_discrete, event_dim=event_dim)

    def __call__(self, fn: Callable[..., Any]) -> _DependentProperty:  # type: ignore[override]
        return _DependentProperty(fn, is_discrete=self._is_discrete, event_dim=self._event_dim)


class _IndependentConstraint(Constraint):
    """``base_constraint`` with ``reinterpreted_batch_ndims`` more dims treated as the event."""

    def __init__(self, base_constraint: Constraint, reinterpreted_batch_ndims: int) -> None:
        if not isinstance(reinterpreted_batch_ndims, int) or reinterpreted_batch_ndims < 0:
            raise ValueError(f"reinterpreted_batch_ndims must be a non-negative int, got {reinterpreted_batch_ndims}")
        self.base_constraint = base_constraint
        self.reinterpreted_batch_ndims = reinterpreted_batch_ndims

    @property
    def is_discrete(self) -> bool:  # type: ignore[override]
        """Whether the base constraint is discrete."""
        return self.base_constraint.is_discrete

    @property
    def event_dim(self) -> int:  # type: ignore[override]
        """The base constraint's event dims plus the reinterpreted ones."""
        return self.base_constraint.event_dim + self.reinterpreted_batch_ndims

    def check(self, value: Tensor) -> Tensor:
        """The base check, all-reduced over the reinterpreted dims."""
        result = self.base_constraint.check(value)
        if result.dim() < self.reinterpreted_batch_ndims:
            expected = self.base_constraint.event_dim + self.reinterpreted_batch_ndims
            raise ValueError(f"Expected value.dim() >= {expected} but got {value.dim()}")
        n = self.reinterpreted_batch_ndims
        return result.reshape(tuple(result.shape[:result.dim() - n]) + (-1,)).all(-1)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__[1:]}({self.base_constraint!r}, {self.reinterpreted_batch_ndims})"


class _Boolean(Constraint):
    is_discrete = True

    def check(self, value: Tensor) -> Tensor:
        """Whether each value is 0 or 1."""
        return (value == 0) | (value == 1)


class _OneHot(Constraint):
    is_discrete = True
    event_dim = 1

    def check(self, value: Tensor) -> Tensor:
        """Whether each vector along the last dim is one-hot."""
        is_boolean = (value == 0) | (value == 1)
        return is_boolean.all(-1) & value.sum(-1).eq(1)


class _IntegerInterval(Constraint):
    """The integers in ``[lower_bound, upper_bound]``."""

    is_discrete = True

    def __init__(self, lower_bound: Any, upper_bound: Any) -> None:
        self.lower_bound, self.upper_bound = lower_bound, upper_bound

    def check(self, value: Tensor) -> Tensor:
        """Whether each value is a whole number in ``[lower_bound, upper_bound]``."""
        inside = (value >= self.lower_bound) & (value <= self.upper_bound)
        return inside & (value % 1 == 0) if value.is_floating_point() else inside

    def __repr__(self) -> str:
        return f"{self.__class__.__name__[1:]}(lower_bound={self.lower_bound}, upper_bound={self.upper_bound})"


class _IntegerGreaterThan(Constraint):
    is_discrete = True

    def __init__(self, lower_bound: Any) -> None:
        self.lower_bound = lower_bound

    def check(self, value: Tensor) -> Tensor:
        """Whether each value is a whole number of at least ``lower_bound``."""
        inside = value >= self.lower_bound
        return inside & (value % 1 == 0) if value.is_floating_point() else inside

    def __repr__(self) -> str:
        return f"{self.__class__.__name__[1:]}(lower_bound={self.lower_bound})"


class _Real(Constraint):
    def check(self, value: Tensor) -> Tensor:
        """Whether each value is a real number: not NaN."""
        return value == value  # False only for NaN


class _GreaterThan(Constraint):
    """The reals above ``lower_bound``."""

    def __init__(self, lower_bound: Any) -> None:
        self.lower_bound = lower_bound

    def check(self, value: Tensor) -> Tensor:
        """Whether each value is above ``lower_bound``."""
        return self.lower_bound < value

    def __repr__(self) -> str:
        return f"{self.__class__.__name__[1:]}(lower_bound={self.lower_bound})"


class _GreaterThanEq(_GreaterThan):
    """The reals at or above ``lower_bound``."""

    def check(self, value: Tensor) -> Tensor:
        """Whether each value is at least ``lower_bound``."""
        return self.lower_bound <= value


class _LessThan(Constraint):
    """The reals below ``upper_bound``."""

    def __init__(self, upper_bound: Any) -> None:
        self.upper_bound = upper_bound

    def check(self, value: Tensor) -> Tensor:
        """Whether each value is below ``upper_bound``."""
        return value < self.upper_bound

    def __repr__(self) -> str:
        return f"{self.__class__.__name__[1:]}(upper_bound={self.upper_bound})"


class _Interval(Constraint):
    """The closed interval ``[lower_bound, upper_bound]``."""

    def __init__(self, lower_bound: Any, upper_bound: Any) -> None:
        self.lower_bound, self.upper_bound = lower_bound, upper_bound

    def check(self, value: Tensor) -> Tensor:
        """Whether each value lies in ``[lower_bound, upper_bound]``."""
        return (self.lower_bound <= value) & (value <= self.upper_bound)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__[1:]}(lower_bound={self.lower_bound}, upper_bound={self.upper_bound})"


class _HalfOpenInterval(_Interval):
    """The half-open interval ``[lower_bound, upper_bound)``."""

    def check(self, value: Tensor) -> Tensor:
        """Whether each value lies in ``[lower_bound, upper_bound)``."""
        return (self.lower_bound <= value) & (value < self.upper_bound)


class _Simplex(Constraint):
    event_dim = 1

    def check(self, value: Tensor) -> Tensor:
        """Whether each vector along the last dim is non-negative and sums to 1."""
        return (value >= 0).all(-1) & ((value.sum(-1) - 1).abs() < 1e-6)


class _LowerTriangular(Constraint):
    event_dim = 2

    def check(self, value: Tensor) -> Tensor:
        """Whether each matrix is lower triangular."""
        return (value.tril() == value).reshape(tuple(value.shape[:-2]) + (-1,)).all(-1)


class _LowerCholesky(Constraint):
    event_dim = 2

    def check(self, value: Tensor) -> Tensor:
        """Whether each matrix is lower triangular with a positive diagonal."""
        lower = (value.tril() == value).reshape(tuple(value.shape[:-2]) + (-1,)).all(-1)
        return lower & (value.diagonal(dim1=-2, dim2=-1) > 0).all(-1)


class _Symmetric(Constraint):
    event_dim = 2

    def check(self, value: Tensor) -> Tensor:
        """Whether each matrix is square and symmetric (within 1e-6)."""
        if value.dim() < 2 or value.shape[-1] != value.shape[-2]:
            return lg.zeros(tuple(value.shape[:-2]), dtype=lg.bool)
        return value.isclose(value.mT, atol=1e-6).reshape(tuple(value.shape[:-2]) + (-1,)).all(-1)


class _PositiveDefinite(_Symmetric):
    def check(self, value: Tensor) -> Tensor:
        """Whether each matrix is symmetric with a Cholesky factor: positive definite."""
        sym = super().check(value)
        if not bool(sym.all()):
            return sym
        # one Cholesky for the whole batch; matrix by matrix only to say which ones fail
        try:
            linalg.cholesky(value.detach())
            return sym
        except RuntimeError:
            pass
        flat = value.detach().reshape((-1,) + tuple(value.shape[-2:]))
        ok = []
        for m in flat.unbind(0):
            try:
                linalg.cholesky(m)
                ok.append(True)
            except RuntimeError:
                ok.append(False)
        return lg.tensor(ok).reshape(tuple(value.shape[:-2]))


# PyTorch's public names
dependent = _Dependent()
dependent_property = _DependentProperty
independent = _IndependentConstraint
boolean = _Boolean()
one_hot = _OneHot()
nonnegative_integer = _IntegerGreaterThan(0)
positive_integer = _IntegerGreaterThan(1)
integer_interval = _IntegerInterval
real = _Real()
real_vector = independent(real, 1)
positive = _GreaterThan(0.0)
nonnegative = _GreaterThanEq(0.0)
greater_than = _GreaterThan
greater_than_eq = _GreaterThanEq
less_than = _LessThan
unit_interval = _Interval(0.0, 1.0)
interval = _Interval
half_open_interval = _HalfOpenInterval
simplex = _Simplex()
lower_triangular = _LowerTriangular()
lower_cholesky = _LowerCholesky()
symmetric = _Symmetric()
positive_definite = _PositiveDefinite()
