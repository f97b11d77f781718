"""Random methods: fills in place from a generator (normal_, uniform_, ...), and samples by self's values
(bernoulli, multinomial: lightgrad.random's functions of those names call these). Every draw is
PyTorch's, word for word (backend/random.py), with PyTorch's argument checks and messages.

The generators are lightgrad.random's; the methods draw from them through the leaf
lightgrad._generator (``_gen``), which sits below Tensor."""

from __future__ import annotations

import builtins
from typing import TYPE_CHECKING, Any

from .. import backend as B
from .. import dtypes as D
from .._generator import _gen
from ..backend import random as R
from . import creation  # (its _new looked up there at call time: the compiler replaces it there while tracing)
from .common import _bump

if TYPE_CHECKING:  # bound at run time by tensor.py, once Tensor exists (see _ops/__init__.py)
    from ..tensor import Tensor
    from .common import TensorSelf

_UNSET: Any = object()  # random_'s ``to`` when not given (None means "up to the dtype's maximum")
_INT64_MIN = -(1 << 63)


def _num(x: builtins.float) -> str:
    """A double as ATen's messages print it (C++ ostream: 6 significant digits, no trailing zeros)."""
    return f"{x:g}"


# dtype names as ATen's messages print them: ScalarType's, and C++ type names (caffe2::TypeMeta's)
_SCALAR_NAMES = {"bool": "Bool", "uint8": "Byte", "int8": "Char", "int16": "Short", "int32": "Int", "int64": "Long",
                 "float16": "Half", "bfloat16": "BFloat16", "float32": "Float", "float64": "Double"}
_CPP_NAMES = {"bool": "bool", "uint8": "unsigned char", "int8": "signed char", "int16": "short int", "int32": "int",
              "int64": "long int", "float16": "c10::Half", "bfloat16": "c10::BFloat16", "float32": "float",
              "float64": "double"}


def _float_only(t: Any, what: str, kernel: str | None = None) -> None:
    """PyTorch's refusal of an integer tensor: a dispatch error (``kernel``) or a sentence."""
    if t.dtype.is_floating_point:
        return
    name = t.dtype.name
    if kernel is not None:
        raise NotImplementedError(f'"{kernel}" not implemented for \'{_SCALAR_NAMES.get(name, name)}\'')
    cpp = what.startswith("Cauchy")  # (cauchy_'s message names the C++ type)
    raise RuntimeError(f"{what} is a continuous probability distribution. dtype must be a floating point but you "
                       f"specified {(_CPP_NAMES if cpp else _SCALAR_NAMES).get(name, name)}")


def _is_float(dt: Any) -> builtins.bool:
    return builtins.bool(dt.is_floating_point)


def _range_max(dt: Any) -> builtins.int:
    """The largest value random_ reaches for a dtype: 2**digits for floats, the maximum for integers."""
    if _is_float(dt):
        return 1 << R._digits(dt.np)
    if dt == D.bool_:
        return 1
    return builtins.int(B.xp.iinfo(dt.np).max)


def _check_bounds(value: builtins.int, name: str, dt: Any) -> None:
    if _is_float(dt) or dt == D.bool_:
        return  # (PyTorch only warns for floats beyond 2**digits)
    info = B.xp.iinfo(dt.np)
    if not info.min <= value <= info.max:
        raise RuntimeError(f"{name} is out of bounds for {_CPP_NAMES.get(dt.name, dt.name)}")


class RandomMixin:
    """Tensor's random methods (the generators are lightgrad.random's, drawn from through _generator)."""

    __slots__ = ()

    def _fill_random(self: TensorSelf, fill: Any, *args: Any) -> Tensor:
        """Run a backend fill on self's storage in place, and record the modification."""
        self._check_leaf_inplace()
        if self._data.size:
            fill(*args)
            _bump(self)
        return self

    # ---- fills in place --------------------------------------------------------------------------
    def uniform_(self: TensorSelf, from_: builtins.float = 0.0, to: builtins.float = 1.0, *,
                 generator: Any = None, **kw: Any) -> Tensor:
        """Fill with U(from, to): ``x.uniform_(-1, 1)``."""
        from_ = kw.pop("from", from_)
        _float_only(self, "uniform_", "check_uniform_bounds")
        if from_ > to:
            raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found from={_num(from_)} > "
                               f"to={_num(to)}")
        return self._fill_random(R.uniform_, _gen(generator), self._data, from_, to)

    def normal_(self: TensorSelf, mean: builtins.float = 0.0, std: builtins.float = 1.0, *,
                generator: Any = None) -> Tensor:
        """Fill with N(mean, std^2): ``x.normal_(0, 0.02)``."""
        if std < 0:
            raise RuntimeError(f"normal expects std >= 0.0, but found std {_num(std)}")
        _float_only(self, "normal_", "normal_kernel_cpu")
        return self._fill_random(R.normal_, _gen(generator), self._data, mean, std)

    def bernoulli_(self: TensorSelf, p: Any = 0.5, *, generator: Any = None) -> Tensor:
        """Fill with 1 at probability p (a float, or a tensor broadcast to self), else 0."""
        if hasattr(p, "_data"):
            return self._fill_random(R.bernoulli_tensor_, _gen(generator), self._data, p._data)
        if not 0 <= p <= 1:
            raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={_num(p)}")
        return self._fill_random(R.bernoulli_scalar_, _gen(generator), self._data, p)

    def log_normal_(self: TensorSelf, mean: builtins.float = 1.0, std: builtins.float = 2.0, *,
                    generator: Any = None) -> Tensor:
        """Fill with exp of N(mean, std^2) samples."""
        if not std > 0:
            raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={_num(std)}")
        _float_only(self, "log_normal_", "log_normal_cpu")
        return self._fill_random(R.log_normal_, _gen(generator), self._data, mean, std)

    def cauchy_(self: TensorSelf, median: builtins.float = 0.0, sigma: builtins.float = 1.0, *,
                generator: Any = None) -> Tensor:
        """Fill with Cauchy(median, sigma) samples."""
        if not sigma > 0:
            raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={_num(sigma)}")
        _float_only(self, "Cauchy distribution")
        return self._fill_random(R.cauchy_, _gen(generator), self._data, median, sigma)

    def geometric_(self: TensorSelf, p: builtins.float, *, generator: Any = None) -> Tensor:
        """Fill with the number of Bernoulli(p) trials up to the first success."""
        if not 0 < p < 1:
            raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={_num(p)}")
        return self._fill_random(R.geometric_, _gen(generator), self._data, p)

    def exponential_(self: TensorSelf, lambd: builtins.float = 1.0, *, generator: Any = None) -> Tensor:
        """Fill with Exp(lambd) samples."""
        if not lambd > 0:
            raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={_num(lambd)}")
        _float_only(self, "Exponential distribution")
        return self._fill_random(R.exponential_, _gen(generator), self._data, lambd)

    def random_(self: TensorSelf, from_: builtins.int | None = None, to: Any = _UNSET, *, generator: Any = None,
                **kw: Any) -> Tensor:
        """Fill with integers: ``random_()`` over the dtype's range, ``random_(to)`` in [0, to),
        ``random_(from, to)`` in [from, to), ``random_(from, None)`` from ``from`` to the dtype's maximum."""
        from_ = kw.pop("from", from_)
        if "to" in kw:
            to = kw.pop("to")
        eng, dt = _gen(generator), self.dtype
        if from_ is None and to is _UNSET:
            return self._fill_random(R.random_, eng, self._data)
        if to is _UNSET:  # random_(to)
            from_, to = 0, from_
        for v in (from_, to):
            if v is not None and not _INT64_MIN <= builtins.int(v) < -_INT64_MIN:
                raise ValueError("Overflow when unpacking long long")
        lo = builtins.int(from_ or 0)
        if to is not None:
            hi = builtins.int(to)
            if lo >= hi:
                raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={lo} >= to={hi}")
            _check_bounds(lo, "from", dt)
            _check_bounds(hi - 1, "to - 1", dt)
            return self._fill_random(R.random_from_to_, eng, self._data, hi - lo, lo)
        if lo == _INT64_MIN and dt in (D.int64, D.float64, D.float32) or lo == _INT64_MIN and dt.name == "bfloat16":
            return self._fill_random(R.random_from_to_, eng, self._data, 1 << 64, lo)
        top = _range_max(dt)
        if lo > top:
            raise RuntimeError(f"random_ expects 'from' casted to dtype to be less than or equal to 'to_inc' casted "
                               f"to dtype, but got from={lo} > to_inc={top}")
        _check_bounds(lo, "from", dt)
        return self._fill_random(R.random_from_to_, eng, self._data, top - lo + 1, lo)

    # ---- samples by self's values ----------------------------------------------------------------
    def bernoulli(self: TensorSelf, p: Any = None, *, generator: Any = None) -> Tensor:
        """1 with probability self (or ``p``), elementwise: ``lightgrad.bernoulli(self)``."""
        out = creation._new(B.empty(self.shape, self.dtype.np), False)
        if p is None:
            R.bernoulli_tensor_(_gen(generator), out._data, self._data)
        else:
            out.bernoulli_(p, generator=generator)
        return out

    def multinomial(self: TensorSelf, num_samples: builtins.int, replacement: builtins.bool = False, *,
                    generator: Any = None) -> Tensor:
        """``lightgrad.multinomial(self, ...)``: category indices drawn by the rows' weights."""
        if self.ndim not in (1, 2):
            raise RuntimeError("prob_dist must be 1 or 2 dim")
        if not _is_float(self.dtype):
            raise RuntimeError(f"multinomial only supports floating-point dtypes for input, got: "
                               f"{_SCALAR_NAMES.get(self.dtype.name, self.dtype.name)}")
        if num_samples <= 0:
            raise RuntimeError("cannot sample n_sample <= 0 samples")
        n_cat = self.shape[-1]
        if not replacement and num_samples > n_cat:
            raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without replacement")
        rows = B.xp.ascontiguousarray(self._data).reshape(-1, n_cat)
        with B.errstate(invalid="ignore"):
            if not replacement or num_samples == 1:
                if rows.size and not (B.isfinite(rows).all() and (rows >= 0).all()):
                    raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
                if (rows.sum(-1) == 0).any():
                    raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
            else:
                if (rows < 0).any():
                    raise RuntimeError("invalid multinomial distribution (encountering probability entry < 0)")
                if not B.isfinite(rows).all():
                    raise RuntimeError("invalid multinomial distribution (encountering probability entry = "
                                       "infinity or NaN)")
                if (rows.sum(-1) <= 0).any():
                    raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
        out = R.multinomial(_gen(generator), rows, num_samples, replacement)
        return creation._new(out.reshape(self.shape[:-1] + (num_samples,)).astype(D.int64.np, copy=False), False)
