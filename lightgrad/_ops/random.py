"""Random methods: fills in place from a generator (normal_, uniform_, ...), and samples by self's values."""

from __future__ import annotations

import builtins
from typing import TYPE_CHECKING, Any

from .common import _bump

if TYPE_CHECKING:  # bound at run time by tensor.py, once Tensor exists (see _ops/__init__.py)
    from ..tensor import Tensor
    from .common import TensorSelf


class RandomMixin:
    """Tensor's random methods (the generators are lightgrad.random's).

    Each imports lightgrad.random in the call: that module is above Tensor (it imports tensor.py),
    until its generator state moves to a leaf module that this one can import at the top."""

    __slots__ = ()

    # ---- fills in place --------------------------------------------------------------------------
    def uniform_(self: TensorSelf, a: builtins.float = 0.0, b: builtins.float = 1.0, *, generator: Any = None) -> Tensor:
        from ..random import _gen
        self._check_leaf_inplace()
        self._data[...] = _gen(generator).uniform(a, b, self.shape)
        _bump(self)
        return self

    def normal_(self: TensorSelf, mean: builtins.float = 0.0, std: builtins.float = 1.0, *, generator: Any = None) -> Tensor:
        from ..random import _gen
        self._check_leaf_inplace()
        self._data[...] = _gen(generator).normal(mean, std, self.shape)
        _bump(self)
        return self

    def bernoulli_(self: TensorSelf, p: builtins.float = 0.5, *, generator: Any = None) -> Tensor:
        from ..random import _gen
        self._check_leaf_inplace()
        self._data[...] = _gen(generator).random(self.shape) < p
        _bump(self)
        return self

    def log_normal_(self: TensorSelf, mean: builtins.float = 1.0, std: builtins.float = 2.0, *, generator: Any = None) -> Tensor:
        from ..random import _gen
        self._check_leaf_inplace()
        self._data[...] = _gen(generator).lognormal(mean, std, self.shape)
        _bump(self)
        return self

    def cauchy_(self: TensorSelf, median: builtins.float = 0.0, sigma: builtins.float = 1.0, *, generator: Any = None) -> Tensor:
        from ..random import _gen
        self._check_leaf_inplace()
        self._data[...] = median + sigma * _gen(generator).standard_cauchy(self.shape)
        _bump(self)
        return self

    def geometric_(self: TensorSelf, p: builtins.float, *, generator: Any = None) -> Tensor:
        from ..random import _gen
        self._check_leaf_inplace()
        self._data[...] = _gen(generator).geometric(p, self.shape)
        _bump(self)
        return self

    def exponential_(self: TensorSelf, lambd: builtins.float = 1.0, *, generator: Any = None) -> Tensor:
        from ..random import _gen
        self._data[...] = _gen(generator).exponential(1.0 / lambd, self.shape)
        _bump(self)
        return self

    def random_(self: TensorSelf, low: builtins.int = 0, high: builtins.int | None = None, *, generator: Any = None) -> Tensor:
        from ..random import _gen
        if high is None:
            low, high = 0, low if low else 2 ** 24
        self._data[...] = _gen(generator).integers(low, high, self.shape)
        _bump(self)
        return self

    # ---- samples by self's values ----------------------------------------------------------------
    def bernoulli(self: TensorSelf, *, generator: Any = None) -> Tensor:
        """1 with probability self, elementwise: ``lightgrad.bernoulli(self)``."""
        from ..random import bernoulli
        return bernoulli(self, generator=generator)

    def multinomial(self: TensorSelf, num_samples: builtins.int, replacement: builtins.bool = False, *,
                    generator: Any = None) -> Tensor:
        """``lightgrad.multinomial(self, ...)``: category indices drawn by the rows' weights."""
        from ..random import multinomial
        return multinomial(self, num_samples, replacement, generator=generator)
