"""lightgrad: a small, fast tensor library with reverse-mode autograd and PyTorch's API.

>>> import lightgrad as torch
>>> x = torch.tensor([1.0, 2.0], requires_grad=True); (x * x).sum().backward(); x.grad
tensor([2., 4.])
"""

from __future__ import annotations

import builtins
import warnings

from typing import Any

from . import autograd, memory
from .grad_mode import enable_grad, inference_mode, is_grad_enabled, no_grad, set_grad_enabled
from .device import (GradScaler, accelerator, amp, autocast, backends, cuda, device,
                     get_default_device, set_default_device)
from .dtypes import (bool_ as bool, dtype, finfo, float16, float32, float64, get_default_dtype, iinfo, int8,  # noqa: A004
                     int16, int32, int64, promote_types, set_default_dtype, uint8)
from .random import (Generator, bernoulli, default_generator, get_rng_state, initial_seed,
                     manual_seed, multinomial, normal, rand, rand_like, randint, randint_like, randn,
                     randn_like, randperm, seed, set_rng_state)
from .tensor import (Size, Tensor, arange, as_tensor, cat, concat, concatenate, einsum, empty,
                     empty_like, eye, from_dlpack, from_numpy, full, full_like, linspace, logspace,
                     ones, ones_like, stack, tensor, where, zeros, zeros_like)
from .tensor import bucketize, isin, polygamma, return_types, searchsorted, std_mean, var_mean
from .tensor import (atleast_1d, atleast_2d, atleast_3d, block_diag, cartesian_prod, column_stack, tensordot,
                     tril_indices, triu_indices)
from .tensor import cumulative_trapezoid, trapezoid, trapz, unravel_index, vander
from . import linalg

__version__ = "0.1.0"

# NumPy warns where a float op gives inf or nan (log(0), x / 0, overflow); PyTorch is silent. The
# filter is by module: NumPy calls made by lightgrad's code (and its compiled replays) stay silent,
# the user's own NumPy calls still warn, and np.seterr(all="raise") still raises.
warnings.filterwarnings("ignore", category=RuntimeWarning, module=r"lightgrad(\.|$)")

float = float32  # noqa: A001
double = float64
half = float16
long = int64
int = int32  # noqa: A001
short = int16
uint8 = uint8
FloatTensor = DoubleTensor = LongTensor = Tensor

# Every Tensor method below is also a function, as in PyTorch: lightgrad.exp(x) is x.exp().
_METHODS = (
    "add sub subtract mul multiply div divide true_divide pow neg negative reciprocal square "
    "floor_divide remainder fmod exp log log1p expm1 log2 log10 exp2 sqrt rsqrt sin cos tan tanh "
    "sinh cosh sigmoid relu abs absolute sign sgn erf floor ceil round trunc frac isnan isinf "
    "isfinite clamp clip clamp_min clamp_max maximum minimum lerp masked_fill logical_not "
    "logical_and logical_or logical_xor eq ne lt le gt ge greater greater_equal less less_equal "
    "not_equal equal allclose isclose sum mean var std prod amax amin max min argmax argmin "
    "logsumexp cumsum norm all any count_nonzero softmax log_softmax reshape flatten unflatten "
    "squeeze unsqueeze permute transpose swapaxes swapdims t movedim moveaxis broadcast_to "
    "repeat_interleave split chunk tensor_split unbind narrow flip fliplr flipud roll tril triu "
    "diagonal diag trace gather take_along_dim scatter scatter_add index_select masked_select "
    "nonzero matmul mm bmm mv dot inner outer ger clone detach numel index_put "
    "sort argsort msort topk kthvalue median nanmedian mode cumprod cummax cummin logcumsumexp nansum nanmean aminmax index_add index_copy index_fill scatter_reduce take put unique unique_consecutive bincount histc"
    " asin acos atan asinh acosh atanh arcsin arccos arctan arcsinh arccosh arctanh atan2 arctan2 erfc erfinv lgamma digamma logit xlogy logaddexp logaddexp2 hypot nan_to_num fmax fmin copysign signbit isneginf isposinf positive float_power heaviside sinc deg2rad rad2deg fix addmm addmv addbmm baddbmm addr addcmul addcdiv tile ravel diff kron vdot cross rot90 hsplit vsplit dsplit diag_embed diagflat is_nonzero is_same_size is_signed inverse det logdet slogdet matrix_power cholesky svd qr pinverse triangular_solve matrix_exp lu_solve lu cholesky_solve cholesky_inverse adjoint narrow_copy hardshrink prelu"
    " bitwise_and bitwise_or bitwise_xor bitwise_not bitwise_left_shift bitwise_right_shift gcd gcd_ lcm lcm_ ldexp frexp nextafter select select_scatter slice_scatter diagonal_scatter split_with_sizes masked_scatter argwhere renorm dist quantile nanquantile cov corrcoef index_reduce"
).split()


def _function(name: str) -> Any:
    method = getattr(Tensor, name)

    def fn(input: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: A002
        return method(input if isinstance(input, Tensor) else as_tensor(input), *args, **kwargs)
    fn.__name__ = name
    fn.__doc__ = method.__doc__
    return fn


for _n in _METHODS:
    globals()[_n] = _function(_n)
del _n



def is_tensor(x: Any) -> builtins.bool:
    """True for lightgrad Tensors."""
    return isinstance(x, Tensor)


def numel(x: Tensor) -> builtins.int:
    return x.numel()


def is_floating_point(x: Tensor) -> builtins.bool:
    return x.is_floating_point()


def broadcast_shapes(*shapes: Any) -> Size:
    import numpy as _np
    return Size(_np.broadcast_shapes(*shapes))


def broadcast_tensors(*tensors: Tensor) -> tuple[Tensor, ...]:
    shape = broadcast_shapes(*[t.shape for t in tensors])
    return tuple(t.expand(shape) for t in tensors)


def meshgrid(*tensors: Any, indexing: str = "ij") -> tuple[Tensor, ...]:
    ts = list(tensors[0]) if len(tensors) == 1 and isinstance(tensors[0], list | tuple) else list(tensors)
    n = len(ts)
    if indexing == "xy" and n >= 2:
        ts[0], ts[1] = ts[1], ts[0]
    shape = tuple(t.numel() for t in ts)
    out = [t.reshape((1,) * i + (-1,) + (1,) * (n - i - 1)).expand(shape) for i, t in enumerate(ts)]
    if indexing == "xy" and n >= 2:
        out = [o.transpose(0, 1) for o in out]
        out[0], out[1] = out[1], out[0]
    return tuple(out)


def hstack(tensors: Any) -> Tensor:
    return cat(tensors, 1 if tensors[0].ndim > 1 else 0)


def vstack(tensors: Any) -> Tensor:
    return cat([t.reshape(1, -1) if t.ndim == 1 else t for t in tensors], 0)


def dstack(tensors: Any) -> Tensor:
    return stack(tensors, -1) if tensors[0].ndim < 3 else cat(tensors, 2)


def combinations(input: Tensor, r: builtins.int = 2, with_replacement: builtins.bool = False) -> Tensor:  # noqa: A002
    """The length-r combinations of a 1-D tensor's entries, one per row (differentiable).

    >>> lightgrad.combinations(lightgrad.tensor([1, 2, 3])).tolist()
    [[1, 2], [1, 3], [2, 3]]
    """
    import itertools
    if input.ndim != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(input.shape)}")
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    pick = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    rows = list(pick(range(input.shape[0]), r))
    if not rows or r == 0:
        return input[tensor([], dtype=int64)].reshape(0, r) if r else input[:0]
    return input[tensor(rows)]


def cdist(x1: Tensor, x2: Tensor, p: builtins.float = 2.0) -> Tensor:
    return (x1.unsqueeze(-2) - x2.unsqueeze(-3)).norm(p, dim=-1)


def set_printoptions(**kwargs: Any) -> None:
    pass


def set_num_threads(n: builtins.int) -> None:
    """Threads for large elementwise ops and reductions (1, the default: none); BLAS keeps its own.

    >>> lightgrad.set_num_threads(2); lightgrad.get_num_threads()
    2
    """
    from . import backend
    backend.set_num_threads(n)


def get_num_threads() -> builtins.int:
    from . import backend
    return backend.get_num_threads()


def use_deterministic_algorithms(mode: builtins.bool, *, warn_only: builtins.bool = False) -> None:
    pass


def compile(model: Any = None, **kwargs: Any) -> Any:  # noqa: A001
    """Trace a training step once per input signature and replay it: ``step = compile(train_step)``.

    A module is returned unchanged (its forward alone runs eagerly); see ``lightgrad.compiler``'s
    module documentation for what a step may do.
    """
    from .compiler import compile as _compile
    return _compile(model, **kwargs)


def lu_unpack(LU_data: Any, LU_pivots: Any, unpack_data: Any = True, unpack_pivots: Any = True) -> Any:
    """(P, L, U) from ``torch.linalg.lu_factor``'s packed LU and pivots."""
    from .linalg import lu_unpack as _lu_unpack
    return _lu_unpack(LU_data, LU_pivots, unpack_data, unpack_pivots)


def save(obj: Any, f: Any, **kwargs: Any) -> None:
    """Save tensors, state dicts and plain values to a safetensors checkpoint."""
    from .serialization import save as _save
    _save(obj, f, **kwargs)


def load(f: Any, map_location: Any = None, weights_only: Any = None, **kwargs: Any) -> Any:
    """Load what ``save`` wrote; never executes code from the file."""
    from .serialization import load as _load
    return _load(f, map_location, weights_only, **kwargs)


def __getattr__(name: str) -> Any:
    # the nn, optim and utils packages load on first use, to keep `import lightgrad` fast
    import importlib
    if name in ("nn", "optim", "utils", "serialization", "datasets", "distributed", "linalg", "func",
                "distributions"):
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'lightgrad' has no attribute '{name}'")


from ._torch_alias import install as _install_torch_alias  # noqa: E402

_install_torch_alias()  # import torch.nn as nn, after import lightgrad as torch (see _torch_alias)
