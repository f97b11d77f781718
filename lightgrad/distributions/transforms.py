"""Transforms: invertible maps with the log-determinant of their Jacobian (``torch.distributions.transforms``).

``TransformedDistribution`` pushes a base distribution through a list of them; its ``log_prob`` subtracts
``log_abs_det_jacobian`` from the base's, transform by transform, from the last to the first.
"""

from __future__ import annotations

import math
import weakref
from numbers import Number
from typing import Any

import lightgrad as lg
from lightgrad.nn.functional import softplus
from lightgrad.tensor import Size, Tensor

from . import constraints
from .utils import _sum_rightmost

__all__ = ["AffineTransform", "ComposeTransform", "ExpTransform", "SigmoidTransform", "TanhTransform",
           "Transform", "identity_transform"]


class Transform:
    """An invertible map ``y = t(x)`` with ``t.inv(y)`` and ``t.log_abs_det_jacobian(x, y)``:
    ``ExpTransform()(torch.zeros(2))``. ``cache_size=1`` remembers the last pair, so ``inv(t(x))`` is ``x``."""

    bijective = False
    domain: constraints.Constraint
    codomain: constraints.Constraint

    def __init__(self, cache_size: int = 0) -> None:
        if cache_size not in (0, 1):
            raise ValueError("cache_size must be 0 or 1")
        self._cache_size = cache_size
        self._inv: Any = None
        self._cached_x_y: tuple[Any, Any] = (None, None)

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        if isinstance(state["_inv"], weakref.ref):
            state["_inv"] = None  # (a weak reference does not pickle; an inverse's strong one does)
        return state

    @property
    def event_dim(self) -> int:
        """The number of rightmost dims that form one event (the same for domain and codomain)."""
        if self.domain.event_dim == self.codomain.event_dim:
            return self.domain.event_dim
        raise ValueError("Please use either .domain.event_dim or .codomain.event_dim")

    @property
    def inv(self) -> Transform:
        """The inverse transform: ``t.inv(t(x))`` gives ``x`` back."""
        inv = self._inv() if self._inv is not None else None
        if inv is None:
            inv = _InverseTransform(self)
            self._inv = weakref.ref(inv)
        return inv

    @property
    def sign(self) -> Any:
        """+1 or -1 for monotone increasing or decreasing maps of one variable."""
        raise NotImplementedError

    def with_cache(self, cache_size: int = 1) -> Transform:
        """This transform with a cache of ``cache_size`` (0 or 1) entries, which inverts its last output for free."""
        if self._cache_size == cache_size:
            return self
        if type(self).__init__ is Transform.__init__:
            return type(self)(cache_size=cache_size)
        raise NotImplementedError(f"{type(self)}.with_cache is not implemented")

    def __eq__(self, other: object) -> bool:
        return self is other

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    __hash__ = object.__hash__

    def __call__(self, x: Tensor) -> Tensor:
        """``y = t(x)``."""
        if self._cache_size == 0:
            return self._call(x)
        x_old, y_old = self._cached_x_y
        if x is x_old:
            return y_old
        y = self._call(x)
        self._cached_x_y = x, y
        return y

    def _inv_call(self, y: Tensor) -> Tensor:
        if self._cache_size == 0:
            return self._inverse(y)
        x_old, y_old = self._cached_x_y
        if y is y_old:
            return x_old
        x = self._inverse(y)
        self._cached_x_y = x, y
        return x

    def _call(self, x: Tensor) -> Tensor:
        raise NotImplementedError

    def _inverse(self, y: Tensor) -> Tensor:
        raise NotImplementedError

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        """``log |dy/dx|`` at ``x`` (with ``y = t(x)``), summed over the transform's event dims."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return self.__class__.__name__ + "()"

    def forward_shape(self, shape: Any) -> Any:
        """The shape of ``t(x)`` for an ``x`` of ``shape``."""
        return shape

    def inverse_shape(self, shape: Any) -> Any:
        """The shape of ``t.inv(y)`` for a ``y`` of ``shape``."""
        return shape


class _InverseTransform(Transform):
    """``t.inv``: swaps the roles of ``x`` and ``y``."""

    def __init__(self, transform: Transform) -> None:
        super().__init__(cache_size=transform._cache_size)
        self._inv = transform  # a strong reference back, so the forward transform lives as long

    @property
    def domain(self) -> constraints.Constraint:  # type: ignore[override]
        return self._inv.codomain  # type: ignore[no-any-return]

    @property
    def codomain(self) -> constraints.Constraint:  # type: ignore[override]
        return self._inv.domain  # type: ignore[no-any-return]

    @property
    def bijective(self) -> bool:  # type: ignore[override]
        return bool(self._inv.bijective)

    @property
    def sign(self) -> Any:
        return self._inv.sign

    @property
    def inv(self) -> Transform:
        return self._inv  # type: ignore[no-any-return]

    def with_cache(self, cache_size: int = 1) -> Transform:
        return self._inv.with_cache(cache_size).inv

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _InverseTransform) and self._inv == other._inv

    __hash__ = object.__hash__

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}({self._inv!r})"

    def __call__(self, x: Tensor) -> Tensor:
        return self._inv._inv_call(x)  # type: ignore[no-any-return]

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return -self._inv.log_abs_det_jacobian(y, x)  # type: ignore[no-any-return]

    def forward_shape(self, shape: Any) -> Any:
        return self._inv.inverse_shape(shape)

    def inverse_shape(self, shape: Any) -> Any:
        return self._inv.forward_shape(shape)


class ComposeTransform(Transform):
    """Several transforms applied in order: ``ComposeTransform([ExpTransform(), AffineTransform(1., 2.)])``."""

    def __init__(self, parts: list[Transform], cache_size: int = 0) -> None:
        if not isinstance(parts, (list, tuple)) or not all(isinstance(p, Transform) for p in parts):
            raise ValueError(f"parts must be a list of Transforms, got {parts!r}")
        if cache_size:
            parts = [part.with_cache(cache_size) for part in parts]
        super().__init__(cache_size=cache_size)
        self.parts = list(parts)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ComposeTransform) and self.parts == other.parts

    __hash__ = object.__hash__

    @property
    def domain(self) -> constraints.Constraint:  # type: ignore[override]
        """The first part's domain, over as many event dims as the whole chain needs."""
        if not self.parts:
            return constraints.real
        domain = self.parts[0].domain
        # the event dim is the largest any part needs, traced back to the input
        event_dim = self.parts[-1].codomain.event_dim
        for part in reversed(self.parts):
            event_dim += part.domain.event_dim - part.codomain.event_dim
            event_dim = max(event_dim, part.domain.event_dim)
        if event_dim > domain.event_dim:
            domain = constraints.independent(domain, event_dim - domain.event_dim)
        return domain

    @property
    def codomain(self) -> constraints.Constraint:  # type: ignore[override]
        """The last part's codomain, over as many event dims as the chain produces."""
        if not self.parts:
            return constraints.real
        codomain = self.parts[-1].codomain
        event_dim = self.parts[0].domain.event_dim
        for part in self.parts:
            event_dim += part.codomain.event_dim - part.domain.event_dim
            event_dim = max(event_dim, part.codomain.event_dim)
        if event_dim > codomain.event_dim:
            codomain = constraints.independent(codomain, event_dim - codomain.event_dim)
        return codomain

    @property
    def bijective(self) -> bool:  # type: ignore[override]
        """Whether every part is bijective."""
        return all(p.bijective for p in self.parts)

    @property
    def sign(self) -> Any:
        """The product of the parts' signs: +1 for an increasing chain, -1 for a decreasing one."""
        sign: Any = 1
        for p in self.parts:
            sign = sign * p.sign
        return sign

    @property
    def inv(self) -> Transform:
        """The inverse chain: each part's inverse, in reverse order (each refers to the other)."""
        inv = self._inv() if self._inv is not None else None
        if inv is None:
            inv = ComposeTransform([p.inv for p in reversed(self.parts)])
            self._inv = weakref.ref(inv)
            inv._inv = weakref.ref(self)
        return inv

    def with_cache(self, cache_size: int = 1) -> Transform:
        """This transform with a cache of ``cache_size`` (0 or 1) entries, which inverts its last output for free."""
        if self._cache_size == cache_size:
            return self
        return ComposeTransform(self.parts, cache_size=cache_size)

    def __call__(self, x: Tensor) -> Tensor:
        for part in self.parts:
            x = part(x)
        return x

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        """log |dy/dx| of the chain: the parts' terms summed, over event dims as needed."""
        if not self.parts:
            return lg.zeros_like(x)
        xs = [x]
        for part in self.parts[:-1]:
            xs.append(part(xs[-1]))
        xs.append(y)
        result: Any = None
        event_dim = self.domain.event_dim
        for part, xi, yi in zip(self.parts, xs[:-1], xs[1:]):
            term = _sum_rightmost(part.log_abs_det_jacobian(xi, yi), event_dim - part.domain.event_dim)
            result = term if result is None else result + term
            event_dim += part.codomain.event_dim - part.domain.event_dim
        return result  # type: ignore[no-any-return]

    def forward_shape(self, shape: Any) -> Any:
        """The output shape for an input of ``shape``."""
        for part in self.parts:
            shape = part.forward_shape(shape)
        return shape

    def inverse_shape(self, shape: Any) -> Any:
        """The input shape for an output of ``shape``."""
        for part in reversed(self.parts):
            shape = part.inverse_shape(shape)
        return shape

    def __repr__(self) -> str:
        inner = ",\n    ".join(repr(p) for p in self.parts)
        return f"{self.__class__.__name__}(\n    {inner}\n)"


identity_transform = ComposeTransform([])


class ExpTransform(Transform):
    """``y = exp(x)``: ``ExpTransform().inv(torch.ones(2))`` is zeros."""

    domain = constraints.real
    codomain = constraints.positive
    bijective = True
    sign = +1

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ExpTransform)

    __hash__ = object.__hash__

    def _call(self, x: Tensor) -> Tensor:
        return x.exp()

    def _inverse(self, y: Tensor) -> Tensor:
        return y.log()

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        """log |dy/dx| of ``exp``: ``x`` itself."""
        return x


class SigmoidTransform(Transform):
    """``y = sigmoid(x)``, clipped into [tiny, 1 - eps] so the inverse stays finite."""

    domain = constraints.real
    codomain = constraints.unit_interval
    bijective = True
    sign = +1

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SigmoidTransform)

    __hash__ = object.__hash__

    def _call(self, x: Tensor) -> Tensor:
        fi = lg.finfo(x.dtype)
        return x.sigmoid().clamp(min=fi.tiny, max=1.0 - fi.eps)

    def _inverse(self, y: Tensor) -> Tensor:
        fi = lg.finfo(y.dtype)
        y = y.clamp(min=fi.tiny, max=1.0 - fi.eps)
        return y.log() - (-y).log1p()

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        """log |dy/dx| of the sigmoid: ``-softplus(-x) - softplus(x)``."""
        return -softplus(-x) - softplus(x)


class TanhTransform(Transform):
    """``y = tanh(x)`` (the squashing of SAC policies); ``cache_size=1`` avoids ``atanh`` of a sample."""

    domain = constraints.real
    codomain = constraints.interval(-1.0, 1.0)
    bijective = True
    sign = +1

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TanhTransform)

    __hash__ = object.__hash__

    def _call(self, x: Tensor) -> Tensor:
        return x.tanh()

    def _inverse(self, y: Tensor) -> Tensor:
        return y.atanh()

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        # log(1 - tanh(x)^2) written through softplus: stable where tanh(x) rounds to +-1
        """log |dy/dx| of tanh: ``log(1 - tanh(x) ** 2)``, in a form stable for large ``x``."""
        return 2.0 * (math.log(2.0) - x - softplus(-2.0 * x))


class AffineTransform(Transform):
    """``y = loc + scale * x``: ``AffineTransform(1.0, 2.0)(torch.zeros(2))`` is ones; ``event_dim`` dims
    at the right form one event (their log-determinants are summed)."""

    bijective = True

    def __init__(self, loc: Any, scale: Any, event_dim: int = 0, cache_size: int = 0) -> None:
        super().__init__(cache_size=cache_size)
        self.loc = loc
        self.scale = scale
        self._event_dim = event_dim

    @property
    def event_dim(self) -> int:
        """How many rightmost dims form one event."""
        return self._event_dim

    @property
    def domain(self) -> constraints.Constraint:  # type: ignore[override]
        """The reals, over ``event_dim`` dims."""
        if self.event_dim == 0:
            return constraints.real
        return constraints.independent(constraints.real, self.event_dim)

    @property
    def codomain(self) -> constraints.Constraint:  # type: ignore[override]
        """The reals, over ``event_dim`` dims."""
        return self.domain

    def with_cache(self, cache_size: int = 1) -> Transform:
        """This transform with a cache of ``cache_size`` (0 or 1) entries, which inverts its last output for free."""
        if self._cache_size == cache_size:
            return self
        return AffineTransform(self.loc, self.scale, self.event_dim, cache_size=cache_size)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, AffineTransform):
            return False
        for a, b in ((self.loc, other.loc), (self.scale, other.scale)):
            if isinstance(a, Number) and isinstance(b, Number):
                if a != b:
                    return False
            elif not bool((lg.as_tensor(a) == lg.as_tensor(b)).all()):
                return False
        return True

    __hash__ = object.__hash__

    @property
    def sign(self) -> Any:
        """The sign of ``scale``."""
        scale: Any = self.scale
        if not isinstance(scale, Tensor):  # a Python number
            return 1 if float(scale) > 0 else -1 if float(scale) < 0 else 0
        return scale.sign()

    def _call(self, x: Tensor) -> Tensor:
        return self.loc + self.scale * x

    def _inverse(self, y: Tensor) -> Tensor:
        return (y - self.loc) / self.scale

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        """``log |scale|`` broadcast to ``x``, summed over the event dims."""
        shape = tuple(x.shape)
        scale: Any = self.scale
        if not isinstance(scale, Tensor):  # a Python number
            result = lg.full_like(x, math.log(abs(scale)))
        else:
            result = scale.abs().log()
        if self.event_dim:
            result = result.reshape(tuple(result.shape[:result.dim() - self.event_dim]) + (-1,)).sum(-1)
            shape = shape[:len(shape) - self.event_dim]
        return result.expand(shape)

    def forward_shape(self, shape: Any) -> Any:
        """``shape`` broadcast with the shapes of ``loc`` and ``scale``."""
        return Size(lg.broadcast_shapes(tuple(shape), tuple(getattr(self.loc, "shape", ())),
                                        tuple(getattr(self.scale, "shape", ()))))

    def inverse_shape(self, shape: Any) -> Any:
        """``shape`` broadcast with the shapes of ``loc`` and ``scale``."""
        return self.forward_shape(shape)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}(loc={self.loc}, scale={self.scale}, event_dim={self.event_dim})"
