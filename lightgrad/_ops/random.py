"""Random methods: fills in place from a generator (normal_, uniform_, ...), and samples by self's values
(bernoulli, multinomial: lightgrad.random's functions of those names call these).

The generators are lightgrad.random's; the methods draw from them through the leaf
lightgrad._generator (``_gen``), which sits below Tensor."""

from __future__ import annotations

import builtins
from typing import TYPE_CHECKING, Any

from .. import backend as B
from .. import dtypes as D
from .._generator import _gen
from . import creation  # (its _new looked up there at call time: the compiler replaces it there while tracing)
from .common import _bump

if TYPE_CHECKING:  # bound at run time by tensor.py, once Tensor exists (see _ops/__init__.py)
    from ..tensor import Tensor
    from .common import TensorSelf


class RandomMixin:
    """Tensor's random methods (the generators are lightgrad.random's, drawn from through _generator)."""

    __slots__ = ()

    # ---- fills in place --------------------------------------------------------------------------
    def uniform_(self: TensorSelf, a: builtins.float = 0.0, b: builtins.float = 1.0, *, generator: Any = None) -> Tensor:
        self._check_leaf_inplace()
        self._data[...] = _gen(generator).uniform(a, b, self.shape)
        _bump(self)
        return self

    def normal_(self: TensorSelf, mean: builtins.float = 0.0, std: builtins.float = 1.0, *, generator: Any = None) -> Tensor:
        self._check_leaf_inplace()
        self._data[...] = _gen(generator).normal(mean, std, self.shape)
        _bump(self)
        return self

    def bernoulli_(self: TensorSelf, p: builtins.float = 0.5, *, generator: Any = None) -> Tensor:
        self._check_leaf_inplace()
        self._data[...] = _gen(generator).random(self.shape) < p
        _bump(self)
        return self

    def log_normal_(self: TensorSelf, mean: builtins.float = 1.0, std: builtins.float = 2.0, *, generator: Any = None) -> Tensor:
        self._check_leaf_inplace()
        self._data[...] = _gen(generator).lognormal(mean, std, self.shape)
        _bump(self)
        return self

    def cauchy_(self: TensorSelf, median: builtins.float = 0.0, sigma: builtins.float = 1.0, *, generator: Any = None) -> Tensor:
        self._check_leaf_inplace()
        self._data[...] = median + sigma * _gen(generator).standard_cauchy(self.shape)
        _bump(self)
        return self

    def geometric_(self: TensorSelf, p: builtins.float, *, generator: Any = None) -> Tensor:
        self._check_leaf_inplace()
        self._data[...] = _gen(generator).geometric(p, self.shape)
        _bump(self)
        return self

    def exponential_(self: TensorSelf, lambd: builtins.float = 1.0, *, generator: Any = None) -> Tensor:
        self._data[...] = _gen(generator).exponential(1.0 / lambd, self.shape)
        _bump(self)
        return self

    def random_(self: TensorSelf, low: builtins.int = 0, high: builtins.int | None = None, *, generator: Any = None) -> Tensor:
        if high is None:
            low, high = 0, low if low else 2 ** 24
        self._data[...] = _gen(generator).integers(low, high, self.shape)
        _bump(self)
        return self

    # ---- samples by self's values ----------------------------------------------------------------
    def bernoulli(self: TensorSelf, *, generator: Any = None) -> Tensor:
        """1 with probability self, elementwise: ``lightgrad.bernoulli(self)``."""
        return creation._new((_gen(generator).random(self.shape) < self._data).astype(self.dtype.np, copy=False), False)

    def multinomial(self: TensorSelf, num_samples: builtins.int, replacement: builtins.bool = False, *,
                    generator: Any = None) -> Tensor:
        """``lightgrad.multinomial(self, ...)``: category indices drawn by the rows' weights."""
        p = B.asarray(self._data, B.xp.float64)
        rows = p.reshape(-1, p.shape[-1])
        if (rows < 0).any() or not B.isfinite(rows).all():
            raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
        if (rows.sum(-1) == 0).any():
            raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
        if not replacement and num_samples > rows.shape[-1]:
            raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without replacement")
        rng = _gen(generator)
        out = B.stack([rng.choice(rows.shape[-1], num_samples, replace=replacement, p=r / r.sum()) for r in rows])
        return creation._new(out.reshape(p.shape[:-1] + (num_samples,)).astype(D.int64.np, copy=False), False)
