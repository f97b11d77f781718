"""lightgrad: a small, fast tensor library with reverse-mode autograd and PyTorch's API.

>>> import lightgrad as torch
>>> x = torch.tensor([1.0, 2.0], requires_grad=True); (x * x).sum().backward(); x.grad
tensor([2., 4.])
"""

from __future__ import annotations

import builtins  # (unused here, but lightgrad.builtins has always been reachable)
import importlib as _importlib
import warnings
from typing import Any

from . import autograd, memory
from .autograd.anomaly_mode import is_anomaly_check_nan_enabled, is_anomaly_enabled
from .grad_mode import enable_grad, inference_mode, is_grad_enabled, no_grad, set_grad_enabled
from .device import (OutOfMemoryError, accelerator, backends, channels_last, channels_last_3d, contiguous_format,
                     device, get_default_device, layout, memory_format, preserve_format, set_default_device,
                     sparse_coo, sparse_csr, strided)
from .dtypes import (bool_ as bool, dtype, finfo, float16, float32, float64, get_default_dtype, iinfo, int8,  # noqa: A004
                     int16, int32, int64, promote_types, set_default_dtype, uint8)
from .dtypes import bfloat16, can_cast, complex64, complex128, result_type, uint16, uint32, uint64
from .random import (Generator, bernoulli, default_generator, get_rng_state, initial_seed,
                     manual_seed, multinomial, normal, poisson, rand, rand_like, randint, randint_like, randn,
                     randn_like, randperm, seed, set_rng_state)
from .tensor import (Size, Tensor, arange, as_tensor, cat, concat, concatenate, einsum, empty,
                     empty_like, eye, from_dlpack, from_numpy, full, full_like, linspace, logspace,
                     ones, ones_like, stack, tensor, where, zeros, zeros_like)
from .tensor import bucketize, isin, polygamma, return_types, searchsorted, std_mean, var_mean
from .tensor import (atleast_1d, atleast_2d, atleast_3d, block_diag, cartesian_prod, column_stack, tensordot,
                     tril_indices, triu_indices)
from .tensor import cumulative_trapezoid, trapezoid, trapz, unravel_index, vander
from ._ops.linalg import cdist
from ._ops.creation import empty_strided
from ._ops.shape import combinations, dstack, hstack, meshgrid, vstack
from . import linalg
from ._functions import *  # noqa: F403 - every Tensor method as a function (lightgrad.exp(x) is x.exp())
from ._functions import imag, real
from .tensor import view_as_complex, view_as_real
from ._functions import (broadcast_shapes, broadcast_tensors, get_num_threads, is_floating_point,
                         is_tensor, lu_unpack, numel, set_num_threads, set_printoptions,
                         use_deterministic_algorithms, are_deterministic_algorithms_enabled,
                         is_deterministic_algorithms_warn_only_enabled)
from ._functions import get_float32_matmul_precision, set_float32_matmul_precision
from . import amp, cuda
from .amp import GradScaler, autocast, get_autocast_dtype, is_autocast_available, is_autocast_enabled
from ._torch_alias import install as _install_torch_alias
from . import array_api  # (binds Tensor.__array_namespace__; under a millisecond)
from ._einops_backend import install as _install_einops_backend

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
cfloat = complex64
cdouble = complex128
FloatTensor = DoubleTensor = LongTensor = Tensor


# Subpackages and the functions of the top layers load on first use, to keep `import lightgrad` fast:
# importing nn, optim, serialization and the compiler with it would add about two thirds to it (~160
# ms to ~240, python -X importtime, 2-core machine). They are listed here and nowhere else.
_LAZY_MODULES = ("nn", "optim", "utils", "serialization", "datasets", "distributed", "func",
                 "distributions", "compiler", "testing", "jit", "hub", "profiler",
                 "fft", "special")
_LAZY_FUNCTIONS = {"compile": "compiler", "save": "serialization", "load": "serialization"}


def __getattr__(name: str) -> Any:
    if name in _LAZY_MODULES:
        return _importlib.import_module(f".{name}", __name__)
    if name in _LAZY_FUNCTIONS:
        value = getattr(_importlib.import_module(f".{_LAZY_FUNCTIONS[name]}", __name__), name)
        globals()[name] = value  # found directly from now on
        return value
    raise AttributeError(f"module 'lightgrad' has no attribute '{name}'")


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY_FUNCTIONS})


_install_torch_alias()  # import torch.nn as nn, after import lightgrad as torch (see _torch_alias)
_install_einops_backend()  # einops.rearrange(tensor, ...), whether einops loads before or after lightgrad
