"""Tensor methods as free functions, as in PyTorch: ``lightgrad.exp(x)`` is ``x.exp()``; with the
free functions that are a Tensor query (``is_tensor``, ``numel``, ``broadcast_shapes``), a process setting (threads,
print options) or linear algebra under PyTorch's top-level name (``lu_unpack``). ``compile``, ``save``
and ``load`` are the compiler's and serialization's own, loaded on first use (``lightgrad.__getattr__``).

>>> lightgrad.exp(lightgrad.tensor([0.0]))
tensor([1.])
"""

from __future__ import annotations

import builtins
import inspect
import warnings
from collections.abc import Sequence  # noqa: F401  (below)
from typing import Any

from . import backend as B
from . import linalg as _linalg
from .device import backends
from ._repr import set_printoptions  # noqa: F401  (exported with the process settings)
from ._ops.common import Number  # noqa: F401  (below)
from .tensor import Size, Tensor, as_tensor

# (Number and Sequence: names the methods' string annotations use, so that tools resolving the free
# functions' signatures in this module, pdoc and typing.get_type_hints, find every one of them here)

# The Tensor methods that are functions too, one subject a line (numel is a function of its own below)
METHODS = " ".join([
    # arithmetic
    "add sub subtract mul multiply div divide true_divide pow float_power neg negative positive reciprocal square "
    "floor_divide remainder fmod lerp addcmul addcdiv xlogy gcd gcd_ lcm lcm_ ldexp frexp",
    # exponential, logarithm, powers and special functions
    "exp exp2 expm1 log log1p log2 log10 logaddexp logaddexp2 sqrt rsqrt sigmoid logit erf erfc erfinv lgamma "
    "digamma sinc",
    # trigonometry and angles
    "sin cos tan sinh cosh tanh asin acos atan asinh acosh atanh arcsin arccos arctan arcsinh arccosh arctanh "
    "atan2 arctan2 hypot deg2rad rad2deg",
    # sign, rounding and clamping
    "abs absolute sign sgn signbit copysign heaviside floor ceil round trunc fix frac clamp clip clamp_min clamp_max "
    "maximum minimum fmax fmin nan_to_num nextafter",
    # activations
    "relu hardshrink prelu softmax log_softmax",
    # comparison and logic
    "eq ne lt le gt ge greater greater_equal less less_equal not_equal equal allclose isclose isnan isinf isfinite "
    "isneginf isposinf logical_not logical_and logical_or logical_xor is_nonzero is_same_size is_signed",
    # bitwise
    "bitwise_and bitwise_or bitwise_xor bitwise_not bitwise_left_shift bitwise_right_shift",
    # reductions and scans
    "sum nansum mean nanmean var std prod amax amin aminmax max min argmax argmin logsumexp norm dist renorm all any "
    "count_nonzero cumsum cumprod cummax cummin logcumsumexp diff trace quantile nanquantile cov corrcoef bincount "
    "histc",
    # shape
    "reshape ravel flatten unflatten squeeze unsqueeze permute transpose swapaxes swapdims t adjoint movedim moveaxis "
    "broadcast_to tile repeat_interleave split split_with_sizes chunk tensor_split hsplit vsplit dsplit unbind "
    "narrow narrow_copy flip fliplr flipud roll rot90 tril triu diagonal diag diag_embed diagflat kron",
    # indexing
    "gather take take_along_dim put index_put scatter scatter_add scatter_reduce index_select index_add index_copy "
    "index_fill index_reduce masked_fill masked_select masked_scatter nonzero argwhere select select_scatter "
    "slice_scatter diagonal_scatter",
    # sorting and selection
    "sort argsort msort topk kthvalue median nanmedian mode unique unique_consecutive",
    # linear algebra
    "matmul mm bmm mv dot vdot inner outer ger cross addmm addmv addbmm baddbmm addr inverse det logdet slogdet "
    "matrix_power matrix_exp cholesky cholesky_solve cholesky_inverse svd qr pinverse triangular_solve lu lu_solve",
    # copies and the graph
    "clone detach",
    # complex numbers
    "angle conj conj_physical resolve_conj is_conj is_complex",
]).split()


def _function(name: str) -> Any:
    method = getattr(Tensor, name)

    def fn(input: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: A002
        return method(input if isinstance(input, Tensor) else as_tensor(input), *args, **kwargs)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = method.__doc__
    # help() and inspect.signature show the method's parameters with `input` for `self` (PyTorch's
    # name); the call itself keeps its cheap pass-through (~2 ms at import for the whole table)
    sig = inspect.signature(method)
    params = list(sig.parameters.values())
    params[0] = inspect.Parameter("input", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation="Tensor")
    fn.__signature__ = sig.replace(parameters=params)  # type: ignore[attr-defined]
    return fn


for _n in METHODS:
    globals()[_n] = _function(_n)
del _n
__all__ = METHODS  # what ``from ._functions import *`` gives lightgrad: the table (the rest it names)


# ---- Tensor queries and shapes --------------------------------------------------------------------
def is_tensor(x: Any) -> builtins.bool:
    """True for lightgrad Tensors."""
    return isinstance(x, Tensor)


def numel(x: Tensor) -> builtins.int:
    """The number of elements of ``x`` (the product of its shape)."""
    return x.numel()


def is_floating_point(x: Tensor) -> builtins.bool:
    """True if ``x`` has a floating-point dtype (float16, bfloat16, float32, float64)."""
    return x.is_floating_point()


def real(input: Tensor) -> Tensor:  # noqa: A002 - PyTorch's name
    """The real part (a view of a complex tensor; a real tensor itself)."""
    return input.real


def imag(input: Tensor) -> Tensor:  # noqa: A002 - PyTorch's name
    """The imaginary part of a complex tensor (a view)."""
    return input.imag


def broadcast_shapes(*shapes: Any) -> Size:
    """The shape the given shapes broadcast to, as ``Size``: ``broadcast_shapes((2, 1), (3,))`` is ``Size([2, 3])``."""
    return Size(B.xp.broadcast_shapes(*shapes))


def broadcast_tensors(*tensors: Tensor) -> tuple[Tensor, ...]:
    """The tensors expanded (as views) to their common broadcast shape."""
    shape = broadcast_shapes(*[t.shape for t in tensors])
    return tuple(t.expand(shape) for t in tensors)


# ---- process settings ----------------------------------------------------------------------------
def set_num_threads(n: builtins.int) -> None:
    """Threads for the native kernels (default: the usable cores) and for the NumPy path's large ufuncs
    and reductions (sliced only once this is called); BLAS keeps its own.

    >>> lightgrad.set_num_threads(2); lightgrad.get_num_threads()
    2
    """
    B.set_num_threads(n)


def get_num_threads() -> builtins.int:
    """The number of threads set by ``set_num_threads`` (by default the usable cores, or OMP_NUM_THREADS)."""
    return B.get_num_threads()


_deterministic = [False, False]  # [mode, warn_only]


def use_deterministic_algorithms(mode: builtins.bool, *, warn_only: builtins.bool = False) -> None:
    """Ask for deterministic algorithms. lightgrad's CPU kernels all are (its threaded reductions split
    work so the result is bit-identical to one thread), so this only records the setting."""
    if not isinstance(mode, builtins.bool):
        raise TypeError(f"use_deterministic_algorithms(): argument 'mode' (position 1) must be bool, not "
                        f"{type(mode).__name__}")
    _deterministic[0], _deterministic[1] = mode, builtins.bool(warn_only)


def are_deterministic_algorithms_enabled() -> builtins.bool:
    """Whether use_deterministic_algorithms(True) is in effect."""
    return _deterministic[0]


def is_deterministic_algorithms_warn_only_enabled() -> builtins.bool:
    """Whether deterministic algorithms are on with ``warn_only=True``."""
    return _deterministic[0] and _deterministic[1]


_matmul_precision = ["highest"]


def set_float32_matmul_precision(precision: str) -> None:
    """Recorded as PyTorch does (and mirrored in ``backends.cuda.matmul.allow_tf32``); lightgrad's
    float32 matmuls are always computed at full precision."""
    if not isinstance(precision, str):
        raise RuntimeError(f"set_float32_matmul_precision expects a str, but got {type(precision).__name__}")
    if precision not in ("highest", "high", "medium"):
        warnings.warn(f"{precision} is not one of 'highest', 'high', or 'medium'; the current"
                      "setFloat32MatmulPrecision call has no effect.", stacklevel=2)
        return
    _matmul_precision[0] = precision
    backends.cuda.matmul.allow_tf32 = precision != "highest"


def get_float32_matmul_precision() -> str:
    """The value last set by ``set_float32_matmul_precision`` ("highest" by default)."""
    return _matmul_precision[0]


# ---- linear algebra with PyTorch's top-level names ------------------------------------------------

def lu_unpack(LU_data: Any, LU_pivots: Any, unpack_data: Any = True, unpack_pivots: Any = True) -> Any:
    """(P, L, U) from ``torch.linalg.lu_factor``'s packed LU and pivots."""
    return _linalg.lu_unpack(LU_data, LU_pivots, unpack_data, unpack_pivots)
