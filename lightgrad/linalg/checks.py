"""Input checks and error reports of lightgrad.linalg: LinAlgError, PyTorch's messages for a wrong
shape or dtype, and the LAPACK-style info (which matrix of a batch failed, and where)."""

from __future__ import annotations

import builtins
from typing import Any

from .. import backend as B
from .. import dtypes as D
from ..tensor import Tensor, _as_tensor

_SCALAR_NAMES = D.SCALAR_NAMES


class LinAlgError(RuntimeError):
    """A matrix was singular or not positive-definite (``torch.linalg.LinAlgError``)."""


# ---- shapes and dtypes ---------------------------------------------------------------------------

def _square(A: Any, name: str) -> Tensor:
    """A as a floating tensor of (batches of) square matrices, or PyTorch's error."""
    A = _as_tensor(A)
    if A.ndim < 2:
        raise RuntimeError(f"linalg.{name}: The input tensor A must have at least 2 dimensions.")
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"linalg.{name}: A must be batches of square matrices, but they are "
                           f"{A.shape[-2]} by {A.shape[-1]} matrices")
    _floating_input(A, name)
    return A


def _floating_input(A: Tensor, name: str) -> None:
    if A._data.dtype.kind != "f":
        raise RuntimeError(f"linalg.{name}: Expected a floating point or complex tensor as input. "
                           f"Got {A.dtype.name.capitalize() if A.dtype.name != 'int64' else 'Long'}")


def _matrix_input(A: Any, name: str) -> Tensor:
    A = _as_tensor(A)
    if A.ndim < 2:
        raise RuntimeError(f"linalg.{name}: The input tensor A must have at least 2 dimensions.")
    _floating_input(A, name)
    return A


def _lu_input(A: Any, name: str, prefix: str = "linalg") -> Tensor:
    A = _as_tensor(A)
    if A.ndim < 2:
        raise RuntimeError(f"{prefix}.{name}: Expected tensor with 2 or more dimensions. Got size: {list(A.shape)} "
                           f"instead")
    if A._data.dtype.kind != "f":
        raise NotImplementedError(f"\"lu_cpu\" not implemented for '{_SCALAR_NAMES.get(A.dtype.name, A.dtype.name)}'")
    return A


def _uplo(UPLO: str) -> str:
    if UPLO not in ("L", "U", "l", "u"):
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {UPLO}")
    return UPLO.upper()


def _broadcast_pair(A: Tensor, b: Tensor, name: str) -> tuple[Tensor, Tensor]:
    """A (..., n, n) and b (..., n, k) expanded to their common batch shape."""
    try:
        batch = B.broadcast_shape(A.shape[:-2], b.shape[:-2])
    except ValueError:
        raise RuntimeError(f"{name}: the batch dims of A {list(A.shape[:-2])} and B {list(b.shape[:-2])} do not "
                           f"broadcast") from None
    Ab = A.expand(batch + A.shape[-2:]) if A.shape[:-2] != batch else A
    bb = b.expand(batch + b.shape[-2:]) if b.shape[:-2] != batch else b
    return Ab, bb


# ---- singular and indefinite matrices --------------------------------------------------------------

def _batch_of(A: B.ndarray) -> str:
    """'(Batch element i): ' naming the first singular matrix of a batch, '' for a single matrix."""
    if A.ndim == 2:
        return ""
    for i, m in enumerate(A.reshape(-1, *A.shape[-2:])):
        try:
            B.inv(m)
        except B.LinAlgError:
            return f"(Batch element {i}): "
    return ""


def _not_pd(A: B.ndarray) -> str:
    """PyTorch's message for a matrix that is not positive-definite, naming the failing minor."""
    mats = A.reshape(-1, *A.shape[-2:])
    for bi, m in enumerate(mats):
        for k in range(1, m.shape[-1] + 1):
            try:
                B.cholesky(m[:k, :k])
            except B.LinAlgError:
                batch = f"(Batch element {bi}): " if A.ndim > 2 else ""
                return (f"linalg.cholesky: {batch}The factorization could not be completed because the input "
                        f"is not positive-definite (the leading minor of order {k} is not positive-definite).")
    return "linalg.cholesky: The factorization could not be completed because the input is not positive-definite."


# ---- the info of the _ex variants: an int32 per matrix instead of an error --------------------------

def _info_tensor(info: Any) -> Tensor:
    return Tensor._make(B.asarray(info, B.xp.int32))


def _cholesky_info(A: B.ndarray) -> B.ndarray:
    """LAPACK potrf's info per matrix: the order of the first leading minor that is not positive-definite."""
    mats = A.reshape(-1, *A.shape[-2:])
    info = B.xp.zeros(mats.shape[0], B.xp.int32)
    for bi, m in enumerate(mats):
        try:
            B.cholesky(m)
            continue
        except B.LinAlgError:
            pass
        for k in range(1, m.shape[-1] + 1):
            try:
                B.cholesky(m[:k, :k])
            except B.LinAlgError:
                info[bi] = k
                break
    return info.reshape(A.shape[:-2])


def _lu_info(A: B.ndarray) -> B.ndarray:
    return B.lu_factor(A)[2]


def _first_bad(info: B.ndarray) -> tuple[str, builtins.int]:
    """('(Batch element i): ' or '', info) for the first matrix whose info is nonzero."""
    flat = info.reshape(-1)
    i = builtins.int(B.xp.flatnonzero(flat)[0])
    return (f"(Batch element {i}): " if info.ndim else ""), builtins.int(flat[i])
