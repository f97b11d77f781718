"""Random numbers: one seeded default generator, and ``Generator`` objects like PyTorch's (PCG64 through
the backend), with the samplers that make Tensors (rand, randn, randint, normal, multinomial, ...).
The default generator is also reachable below Tensor, through lightgrad._generator."""

from __future__ import annotations

import json
from typing import Any

from . import _generator
from . import backend as B
from . import dtypes as D
from ._generator import _gen
from .tensor import Tensor, _check_size, _new, _raw, _size_arg


class Generator:
    """A random-number generator: ``g = lightgrad.Generator().manual_seed(0)``."""

    def __init__(self, device: Any = "cpu") -> None:
        self._seed = 0
        self._rng: Any = None  # the array library's Generator, made on first use: numpy.random imports slowly

    @property
    def rng(self) -> Any:
        if self._rng is None:
            self._rng = B.xp.random.Generator(B.xp.random.PCG64(self._seed))
        return self._rng

    def manual_seed(self, seed: int) -> Generator:
        self._seed = int(seed)
        self._rng = None
        return self

    def seed(self) -> int:
        s = int(B.xp.random.SeedSequence().entropy) % (2 ** 63)  # type: ignore[arg-type]
        self.manual_seed(s)
        return s

    def initial_seed(self) -> int:
        return self._seed

    def get_state(self) -> Any:
        """The generator's state as a uint8 tensor (can be saved and restored)."""
        raw = json.dumps(self.rng.bit_generator.state).encode()
        return Tensor._make(B.xp.frombuffer(raw, B.xp.uint8).copy())

    def set_state(self, state: Any) -> None:
        data = bytes(B.asarray(state._data if hasattr(state, "_data") else state, B.xp.uint8))
        self.rng.bit_generator.state = json.loads(data.decode())

    # numpy-like draws used by ops
    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):  # (copy and pickle probe attributes before __init__ has run)
            raise AttributeError(name)
        return getattr(self.rng, name)


default_generator = _generator.default_generator = Generator()  # (the samplers below Tensor draw from it too)


def manual_seed(seed: int) -> Generator:
    """Seed the default generator: ``lightgrad.manual_seed(0)`` makes results reproducible."""
    return default_generator.manual_seed(seed)


def seed() -> int:
    return default_generator.seed()


def initial_seed() -> int:
    return default_generator.initial_seed()


def get_rng_state() -> Any:
    return default_generator.get_state()


def set_rng_state(state: Any) -> None:
    default_generator.set_state(state)


def _shape(size: tuple[Any, ...], fn: str) -> tuple[int, ...]:
    """A sampler's size, read and checked as the creation functions read theirs (PyTorch's errors)."""
    shape = _size_arg(size, fn)
    _check_size(shape, 8, fn)
    return shape


def _out(arr: B.ndarray, dtype: Any, requires_grad: bool) -> Any:
    dt = D.to_dtype(dtype) if dtype is not None else D.get_default_dtype()
    return _new(arr.astype(dt.np, copy=False), requires_grad)


def rand(*size: Any, generator: Generator | None = None, dtype: Any = None, device: Any = None,
         requires_grad: bool = False) -> Any:
    """Uniform samples in [0, 1): ``rand(2, 3)``."""
    return _out(_gen(generator).random(_shape(size, "rand")), dtype, requires_grad)


def randn(*size: Any, generator: Generator | None = None, dtype: Any = None, device: Any = None,
          requires_grad: bool = False) -> Any:
    """Standard normal samples: ``randn(2, 3)``."""
    return _out(_gen(generator).standard_normal(_shape(size, "randn")), dtype, requires_grad)


def randint(low: int, high: int | None = None, size: Any = (), *, generator: Generator | None = None,
            dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Any:
    """Integers in [low, high): ``randint(0, 10, (3,))``."""
    if isinstance(high, tuple | list):  # randint(high, size), as PyTorch's overload
        low, high, size = 0, low, high
    elif high is None:
        low, high = 0, low
    shape = _shape((size,), "randint")
    if low >= high:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}")
    return _out(_gen(generator).integers(low, high, shape), dtype or D.int64, requires_grad)


def randperm(n: int, *, generator: Generator | None = None, dtype: Any = None, device: Any = None,
             requires_grad: bool = False) -> Any:
    _shape((n,), "randperm")
    return _out(_gen(generator).permutation(n), dtype or D.int64, requires_grad)


def rand_like(x: Any, *, dtype: Any = None, **kw: Any) -> Any:
    return rand(*x.shape, dtype=dtype or x.dtype)


def randn_like(x: Any, *, dtype: Any = None, **kw: Any) -> Any:
    return randn(*x.shape, dtype=dtype or x.dtype)


def randint_like(x: Any, low: int, high: int | None = None, *, dtype: Any = None, **kw: Any) -> Any:
    return randint(low, high, tuple(x.shape), dtype=dtype or x.dtype)


def normal(mean: Any, std: Any = 1.0, size: Any = None, *, generator: Generator | None = None) -> Any:
    m, s = _raw(mean), _raw(std)
    shape = tuple(size) if size is not None else B.xp.broadcast_shapes(B.xp.shape(m), B.xp.shape(s))
    dt = mean.dtype if isinstance(mean, Tensor) else None
    return _out(_gen(generator).normal(m, s, shape), dt, False)


# (bernoulli and multinomial draw by a tensor's values: the draws are Tensor's methods, below this layer)
def bernoulli(p: Any, *, generator: Generator | None = None) -> Any:
    return p.bernoulli(generator=generator)


def multinomial(probs: Any, num_samples: int, replacement: bool = False, *,
                generator: Generator | None = None) -> Any:
    """Draw category indices with probabilities proportional to the rows of ``probs``."""
    return probs.multinomial(num_samples, replacement, generator=generator)
