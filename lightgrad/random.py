"""Random numbers as PyTorch's CPU generator makes them, bit for bit: ``Generator`` objects (mt19937,
PyTorch's seeding and 5056-byte state, through the backend's engine), one seeded default generator,
``fork_rng``, and the samplers that make Tensors (rand, randn, randint, randperm, normal, ...).

>>> lightgrad.manual_seed(0); lightgrad.randn(3)  # PyTorch's tensor([ 1.5410, -0.2934, -2.1788])

The default generator is also reachable below Tensor, through lightgrad._generator."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import Any

from . import _generator
from . import backend as B
from . import dtypes as D
from ._generator import _gen
from .backend import random as R
from .device import device as _device
from .tensor import Tensor, _check_size, _new, _size_arg

_U64 = 1 << 64


def _seed_value(seed: Any) -> int:
    """A seed as PyTorch takes it: any int in [-2**63, 2**64), negative ones wrapped to 64 bits."""
    s = int(seed)
    if not -(1 << 63) <= s < _U64:
        raise ValueError("Overflow when unpacking long long")
    return s % _U64


class Generator:
    """A random-number generator with PyTorch's CPU stream: ``g = lightgrad.Generator().manual_seed(0)``."""

    def __init__(self, device: Any = "cpu") -> None:
        self.device = _device(device) if isinstance(device, str) else device
        self._engine = R.Engine()

    def manual_seed(self, seed: Any) -> Generator:
        """Seed the stream (PyTorch's: the engine takes the low 32 bits, initial_seed keeps all 64)."""
        self._engine.manual_seed(_seed_value(seed))
        return self

    def seed(self) -> int:
        """Seed from the operating system's entropy and return the seed."""
        s = int.from_bytes(os.urandom(8), "little")
        self._engine.manual_seed(s)
        return s

    def initial_seed(self) -> int:
        """The seed this generator was last seeded with."""
        return self._engine.initial_seed()

    def get_state(self) -> Tensor:
        """The state as PyTorch's uint8 tensor of 5056 bytes: ``torch.Generator().set_state`` takes it."""
        return Tensor._make(self._engine.get_state())

    def set_state(self, new_state: Any) -> Generator:
        """Restore a state from ``get_state`` (lightgrad's or PyTorch's bytes)."""
        data = getattr(new_state, "_data", None)
        if data is None:
            data = _numpy_of(new_state)
        if data is None or data.dtype != B.xp.uint8:
            raise TypeError("RNG state must be a torch.ByteTensor")
        if data.size != R.STATE_BYTES:
            raise RuntimeError(f"Expected a CPUGeneratorImplState of size {R.STATE_BYTES} but found the input "
                               f"RNG state size to be {data.size}")
        self._engine.set_state(data)
        return self

    def __repr__(self) -> str:
        return f"<lightgrad.Generator object at {id(self):#x}>"


def _numpy_of(state: Any) -> Any:
    """A PyTorch tensor's (or array's) bytes, when one is passed: its ``numpy()``."""
    to_np = getattr(state, "numpy", None)
    return B.asarray(to_np()) if callable(to_np) else None


default_generator = _generator.default_generator = Generator()  # (the samplers below Tensor draw from it too)


def manual_seed(seed: Any) -> Generator:
    """Seed the default generator: ``lightgrad.manual_seed(0)`` makes results reproducible (and PyTorch's)."""
    return default_generator.manual_seed(seed)


def seed() -> int:
    """Seed the default generator from the operating system's entropy; returns the seed."""
    return default_generator.seed()


def initial_seed() -> int:
    """The default generator's seed (67280421310721 in a fresh process, as PyTorch's)."""
    return default_generator.initial_seed()


def get_rng_state() -> Tensor:
    """The default generator's state: PyTorch's 5056-byte uint8 tensor."""
    return default_generator.get_state()


def set_rng_state(new_state: Any) -> None:
    """Restore the default generator's state (from ``get_rng_state``, lightgrad's or PyTorch's)."""
    default_generator.set_state(new_state)


@contextlib.contextmanager
def fork_rng(devices: Any = None, enabled: bool = True, _caller: str = "fork_rng",
             _devices_kw: str = "devices", device_type: str = "cuda") -> Iterator[None]:
    """Restore the default generator's state on exit (there are no device generators on the CPU)."""
    if not enabled:
        yield
        return
    state = get_rng_state()
    try:
        yield
    finally:
        set_rng_state(state)


# ---- samplers ----------------------------------------------------------------------------------

_FACTORY_KW = ("layout", "pin_memory", "names", "memory_format")


def _shape(size: tuple[Any, ...], kw: dict[str, Any], fn: str) -> tuple[int, ...]:
    """A sampler's size, positional or ``size=``, read and checked as the creation functions read theirs."""
    if "size" in kw:
        if size:
            raise TypeError(f"{fn}() got multiple values for argument 'size'")
        size = (kw.pop("size"),)
    for k in kw:
        if k not in _FACTORY_KW:
            raise TypeError(f"{fn}() got an unexpected keyword argument '{k}'")
    shape = _size_arg(size, fn)
    _check_size(shape, 8, fn)
    return shape


def _dtype(dtype: Any, default: Any = None) -> Any:
    return D.to_dtype(dtype) if dtype is not None else (default or D.get_default_dtype())


def _result(arr: B.ndarray, requires_grad: bool, out: Any) -> Any:
    """The sampler's tensor, or ``out`` holding its values (resized as PyTorch resizes it)."""
    if out is None:
        return _new(arr, requires_grad)
    if tuple(out.shape) == arr.shape:
        out._data[...] = arr
    else:
        out._data = arr
    out._version[0] += 1
    return out


def _filled(shape: tuple[int, ...], dt: Any, fill: Any, generator: Generator | None, *args: Any) -> B.ndarray:
    arr = B.empty(shape, dt.np)
    if arr.size:
        fill(_gen(generator), arr, *args)
    return arr


def _check_float(dt: Any, kernel: str) -> None:
    if not dt.is_floating_point:
        names = {"bool": "Bool", "uint8": "Byte", "int8": "Char", "int16": "Short", "int32": "Int", "int64": "Long"}
        raise NotImplementedError(f'"{kernel}" not implemented for \'{names.get(dt.name, dt.name)}\'')


def rand(*size: Any, generator: Generator | None = None, out: Any = None, dtype: Any = None, device: Any = None,
         requires_grad: bool = False, **kw: Any) -> Any:
    """Uniform samples in [0, 1): ``rand(2, 3)``."""
    shape = _shape(size, kw, "rand")
    dt = _dtype(dtype, out.dtype if out is not None else None)
    _check_float(dt, "check_uniform_bounds")
    return _result(_filled(shape, dt, R.uniform_, generator, 0.0, 1.0), requires_grad, out)


def randn(*size: Any, generator: Generator | None = None, out: Any = None, dtype: Any = None, device: Any = None,
          requires_grad: bool = False, **kw: Any) -> Any:
    """Standard normal samples: ``randn(2, 3)``."""
    shape = _shape(size, kw, "randn")
    dt = _dtype(dtype, out.dtype if out is not None else None)
    _check_float(dt, "normal_kernel_cpu")
    return _result(_filled(shape, dt, R.normal_, generator, 0.0, 1.0), requires_grad, out)


def randint(low: int = 0, high: Any = None, size: Any = None, *, generator: Generator | None = None, out: Any = None,
            dtype: Any = None, device: Any = None, requires_grad: bool = False, **kw: Any) -> Any:
    """Integers in [low, high): ``randint(0, 10, (3,))`` or ``randint(10, (3,))``, drawn as
    ``empty(size).random_(low, high)``."""
    if size is None and (isinstance(high, tuple | list) or hasattr(high, "numel")):
        low, high, size = 0, low, high  # randint(high, size)
    elif high is None:
        low, high = 0, low  # randint(high, size=...)
    if size is None:
        raise TypeError("randint() missing required argument 'size'")
    shape = _shape((size,), kw, "randint")
    t = _new(B.empty(shape, _dtype(dtype, out.dtype if out is not None else D.int64).np), False)
    t.random_(int(low), int(high), generator=generator)
    return _result(t._data, requires_grad, out)


def randperm(n: int, *, generator: Generator | None = None, out: Any = None, dtype: Any = None, device: Any = None,
             requires_grad: bool = False, **kw: Any) -> Any:
    """A random permutation of 0..n-1, as PyTorch's swap loop draws it: ``randperm(5)``."""
    _shape((n,), kw, "randperm")
    if n < 0:
        raise RuntimeError(f"n must be non-negative, got{n}")
    dt = _dtype(dtype, out.dtype if out is not None else D.int64)
    perm = R.randperm(_gen(generator), int(n))
    return _result(perm.astype(dt.np, copy=False), requires_grad, out)


def _like(x: Any, dtype: Any) -> B.ndarray:
    """empty_like(x): x's memory layout kept (the order a fill runs in follows it, as PyTorch's)."""
    return B.xp.empty_like(x._data, dtype=_dtype(dtype, x.dtype).np, order="K")


def rand_like(input: Any, *, dtype: Any = None, layout: Any = None, device: Any = None, requires_grad: bool = False,
              memory_format: Any = None, generator: Generator | None = None) -> Any:
    """``rand`` in input's shape and dtype."""
    arr = _like(input, dtype)
    _check_float(_dtype(dtype, input.dtype), "check_uniform_bounds")
    if arr.size:
        R.uniform_(_gen(generator), arr, 0.0, 1.0)
    return _new(B.xp.ascontiguousarray(arr), requires_grad)


def randn_like(input: Any, *, dtype: Any = None, layout: Any = None, device: Any = None, requires_grad: bool = False,
               memory_format: Any = None, generator: Generator | None = None) -> Any:
    """``randn`` in input's shape and dtype."""
    arr = _like(input, dtype)
    _check_float(_dtype(dtype, input.dtype), "normal_kernel_cpu")
    if arr.size:
        R.normal_(_gen(generator), arr, 0.0, 1.0)
    return _new(B.xp.ascontiguousarray(arr), requires_grad)


def randint_like(input: Any, low: int, high: int | None = None, *, dtype: Any = None, layout: Any = None,
                 device: Any = None, requires_grad: bool = False, memory_format: Any = None,
                 generator: Generator | None = None) -> Any:
    """``randint`` in input's shape and dtype: ``randint_like(x, 10)`` or ``randint_like(x, 0, 10)``."""
    if high is None:
        low, high = 0, low
    t = Tensor._make(_like(input, dtype))
    t.random_(low, high, generator=generator)
    return _new(B.xp.ascontiguousarray(t._data), requires_grad)


def normal(mean: Any, std: Any = 1.0, size: Any = None, *, generator: Generator | None = None, out: Any = None,
           dtype: Any = None, layout: Any = None, device: Any = None, requires_grad: bool = False) -> Any:
    """Normal samples: ``normal(mean_tensor, std_tensor)``, or ``normal(0.0, 1.0, (2, 3))``."""
    m_t, s_t = isinstance(mean, Tensor), isinstance(std, Tensor)
    if not m_t and not s_t:
        if size is None:
            raise TypeError("normal() received an invalid combination of arguments: a float mean and std need size")
        if std < 0:
            raise RuntimeError(f"normal expects std >= 0.0, but found std {std:g}")
        shape = _shape((size,), {}, "normal")
        dt = _dtype(dtype, out.dtype if out is not None else None)
        return _result(_filled(shape, dt, R.normal_, generator, float(mean), float(std)), requires_grad, out)
    if s_t and std.numel() and bool((std._data < 0).any()):
        raise RuntimeError("normal expects all elements of std >= 0.0")
    if m_t and not s_t:
        if std < 0:
            raise RuntimeError(f"normal expects std >= 0.0, but found std {std:g}")
        arr = _filled(tuple(mean.shape), mean.dtype, R.normal_, generator, 0.0, float(std))
        arr = (arr + mean._data).astype(arr.dtype, copy=False)  # add_(mean)
        return _result(arr, False, out)
    m = mean._data if m_t else None
    shape = B.broadcast_shape(tuple(mean.shape) if m_t else (), tuple(std.shape))
    dt = mean.dtype if m_t else std.dtype
    arr = _filled(shape, dt, R.normal_, generator, 0.0, 1.0)
    arr = (arr * std._data).astype(dt.np, copy=False)  # mul_(std)
    arr = (arr + (m if m is not None else dt.np.type(mean))).astype(dt.np, copy=False)  # add_(mean)
    return _result(arr, False, out)


# (bernoulli and multinomial draw by a tensor's values: the draws are Tensor's methods, below this layer)
def bernoulli(input: Any, p: Any = None, *, generator: Generator | None = None, out: Any = None) -> Any:
    """1 with probability ``input`` (or ``p``) per element: ``bernoulli(lightgrad.full((3,), 0.5))``."""
    return _result(input.bernoulli(p, generator=generator)._data, False, out)


def multinomial(input: Any, num_samples: int, replacement: bool = False, *, generator: Generator | None = None,
                out: Any = None) -> Any:
    """Draw category indices with probabilities proportional to the rows of ``input``."""
    return _result(input.multinomial(num_samples, replacement, generator=generator)._data, False, out)


def poisson(input: Any, generator: Generator | None = None) -> Any:
    """Poisson samples with the rates of ``input``, as PyTorch's sampler draws them."""
    rates = B.xp.ascontiguousarray(input._data, dtype=B.xp.float64)
    return _new(R.poisson(_gen(generator), rates).astype(input.dtype.np, copy=False), False)

