"""torch.linalg's common functions: norms, inverse, determinants, solve, matrix power, Cholesky,
and the decompositions (svd, qr, eigh) with what is built on them (pinv, lstsq, matrix_rank, cond).

Every function works on batches of matrices (..., m, n) as PyTorch's does. inv, det, slogdet,
solve, cholesky and the factors of svd, qr and eigh are primitives here (LAPACK through the
backend, forward beside backward); the others are built from them and from Tensor ops.

>>> import lightgrad as torch
>>> torch.linalg.inv(torch.tensor([[2.0, 0.0], [0.0, 4.0]]))
tensor([[0.5000, 0.0000],
        [0.0000, 0.2500]])

The package by subject: checks (input checks, LinAlgError, the _ex variants' info), common (the
matrix pieces the gradient formulas share), inverse (inv, det, slogdet), solve, triangular
(solve_triangular), lu, decompositions (Cholesky, SVD, QR, eigh), norms (and cond), least_squares
(pinv, matrix_rank, lstsq), products (multi_dot, vecdot, cross, matrix_power, matrix_exp).
"""

from __future__ import annotations

from .checks import LinAlgError
from .decompositions import (Cholesky, EighFactor, QrFactor, SvdFactor, _qr_old, _svd_old, cholesky, cholesky_ex,
                             eigh, eigvalsh, linalg_cholesky_ex, linalg_eigh, linalg_qr, linalg_svd, qr, qr_result,
                             svd, svd_result, svdvals)
from .inverse import Det, Inv, LogAbsDet, det, inv, inv_ex, linalg_inv_ex, logdet, slogdet, slogdet_result, tensorinv
from .least_squares import linalg_lstsq, lstsq, matrix_rank, pinv
from .lu import (LuFactor, linalg_lu, linalg_lu_factor, linalg_lu_factor_ex, lu, lu_factor, lu_factor_ex, lu_solve,
                 lu_unpack, lu_unpack_result)
from .norms import cond, matrix_norm, norm, vector_norm
from .products import cross, diagonal, matrix_exp, matrix_power, multi_dot, vecdot
from .solve import Solve, linalg_solve_ex, solve, solve_ex, tensorsolve
from .triangular import SolveTriangular, _triangular_solve_old, linalg_solve_triangular_old, solve_triangular

__all__ = ["LinAlgError", "vector_norm", "matrix_norm", "norm", "inv", "det", "slogdet", "logdet", "solve",
           "matrix_power", "cholesky", "cross", "svd", "svdvals", "qr", "eigh", "eigvalsh", "pinv", "lstsq",
           "matrix_rank", "cond",
           "solve_triangular", "cholesky_ex", "inv_ex", "solve_ex", "lu_factor", "lu_factor_ex", "lu", "lu_solve",
           "multi_dot", "vecdot", "matrix_exp", "tensorinv", "tensorsolve", "diagonal"]

