"""torch.linalg's common functions: norms, inverse, determinants, solve, matrix power, Cholesky,
and the decompositions (svd, qr, eigh) with what is built on them (pinv, lstsq, matrix_rank, cond).

Every function works on batches of matrices (..., m, n) as PyTorch's does. inv, det, slogdet,
solve, cholesky and the factors of svd, qr and eigh are primitives (lightgrad.function: LAPACK
through the backend, forward beside backward); the others are built from them and from Tensor ops.

>>> import lightgrad as torch
>>> torch.linalg.inv(torch.tensor([[2.0, 0.0], [0.0, 4.0]]))
tensor([[0.5000, 0.0000],
        [0.0000, 0.2500]])

Where a Tensor method computes the same thing (inv, det, slogdet, cholesky, svd, qr, pinv,
matrix_norm, ...) the function is Tensor's, in lightgrad._ops.linalg, re-exported here; the primitives
and LinAlgError are lightgrad.function's (linalg, decompositions). The rest by subject: inverse
(inv_ex, tensorinv), solve, lu (lu, lu_factor), decompositions (cholesky_ex, eigvalsh), norms (norm,
cond), least_squares (matrix_rank, lstsq), products (multi_dot, vecdot, cross, diagonal).
"""

from __future__ import annotations

from .._ops.linalg import (_qr_old, _svd_old, _triangular_solve_old, cholesky, det, eigh, inv, linalg_eigh,
                           linalg_lu_factor_ex, linalg_qr, linalg_solve_triangular_old, linalg_svd, logdet,
                           lu_factor_ex, lu_solve, lu_unpack, lu_unpack_result, matrix_exp, matrix_norm, matrix_power,
                           pinv, qr, qr_result, slogdet, slogdet_result, solve_triangular, svd, svd_result, svdvals,
                           vector_norm)
from ..function import (Cholesky, Det, EighFactor, Inv, LinAlgError, LogAbsDet, LuFactor, QrFactor, Solve,
                        SolveTriangular, SvdFactor)
from .decompositions import cholesky_ex, eigvalsh, linalg_cholesky_ex
from .inverse import inv_ex, linalg_inv_ex, tensorinv
from .least_squares import linalg_lstsq, lstsq, matrix_rank
from .lu import linalg_lu, linalg_lu_factor, lu, lu_factor
from .norms import cond, norm
from .products import cross, diagonal, multi_dot, vecdot
from .solve import linalg_solve_ex, solve, solve_ex, tensorsolve

__all__ = ["LinAlgError", "vector_norm", "matrix_norm", "norm", "inv", "det", "slogdet", "logdet", "solve",
           "matrix_power", "cholesky", "cross", "svd", "svdvals", "qr", "eigh", "eigvalsh", "pinv", "lstsq",
           "matrix_rank", "cond",
           "solve_triangular", "cholesky_ex", "inv_ex", "solve_ex", "lu_factor", "lu_factor_ex", "lu", "lu_solve",
           "multi_dot", "vecdot", "matrix_exp", "tensorinv", "tensorsolve", "diagonal"]

