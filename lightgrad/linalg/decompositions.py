"""The decompositions' functions that Tensor has no method for: cholesky_ex (the Cholesky factor
with LAPACK's info instead of an error) and eigvalsh. cholesky, svd, svdvals, qr and eigh, with
torch.svd's and torch.qr's older forms, are Tensor's (lightgrad._ops.linalg), on the primitives of
lightgrad.function.decompositions."""

from __future__ import annotations

import builtins
import math
from collections import namedtuple

from .. import backend as B
from .._ops.linalg import _info_tensor, _register, _square, _uplo, cholesky
from ..function import EighFactor, LinAlgError
from ..function.decompositions import _factors
from ..function.linalg import _cholesky_info, _mT, _not_pd
from ..tensor import Tensor

linalg_cholesky_ex = namedtuple("linalg_cholesky_ex", ["L", "info"])
_register(linalg_cholesky_ex)


def cholesky_ex(A: Tensor, *, upper: builtins.bool = False, check_errors: builtins.bool = False) -> linalg_cholesky_ex:
    """(L, info): Cholesky factor and, per matrix, 0 or the order of the first minor that is not positive-definite.

    Where info != 0 the factor holds NaN (PyTorch leaves a partial factorization) and has no gradient."""
    A = _square(A, "cholesky")
    info = _cholesky_info(A._data)
    if not info.any():
        return linalg_cholesky_ex(cholesky(A, upper=upper), _info_tensor(info))
    if check_errors:
        raise LinAlgError(_not_pd(A._data).replace("linalg.cholesky:", "linalg.cholesky_ex:"))
    mats = A._data.reshape(-1, *A.shape[-2:])
    L = B.full(mats.shape, math.nan, A._data.dtype)
    for i, m in enumerate(mats):
        if not info.reshape(-1)[i]:
            L[i] = B.cholesky(m)
    L = L.reshape(A.shape)
    return linalg_cholesky_ex(Tensor._make(_mT(L) if upper else L), _info_tensor(info))


def eigvalsh(A: Tensor, UPLO: str = "L") -> Tensor:
    """Eigenvalues (ascending) of symmetric A, read from its UPLO triangle."""
    A = _square(A, "eigh")
    uplo = _uplo(UPLO)
    L, V = B.eigh(A._data, UPLO=uplo)
    return _factors(EighFactor, A, (L, V), 1, uplo=uplo)[0]
