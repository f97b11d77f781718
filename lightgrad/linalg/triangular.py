"""Triangular solves: the SolveTriangular primitive (forward beside backward), solve_triangular, and
torch.triangular_solve's older form."""

from __future__ import annotations

import builtins
from collections import namedtuple
from typing import Any

from .. import backend as B
from ..function import Function
from ..tensor import Tensor, _as_tensor
from .checks import _SCALAR_NAMES, _broadcast_pair
from .common import _dtype, _mT, _register, _tri_mask, _triangle

linalg_solve_triangular_old = namedtuple("triangular_solve", ["solution", "cloned_coefficient"])  # type: ignore[name-match]
_register(linalg_solve_triangular_old)


class SolveTriangular(Function):
    saves_out = True

    def forward(self, A, b, upper, unit):
        self.upper, self.unit = upper, unit
        out = B.solve_triangular(_triangle(A, upper, unit), b)
        self.saved = (A, out)
        return out

    def backward(self, g):
        A, X = self.saved
        # T X = b: gb = T^-T g, gA = -gb X^T on the triangle T reads (off the diagonal when unit)
        if isinstance(A, Tensor):
            gb = solve_triangular(A.mT, g, upper=not self.upper, unitriangular=self.unit)
        else:
            gb = B.solve_triangular(_mT(_triangle(A, self.upper, self.unit)), g)
        gA = None
        if self.needs(0):
            gA = B.multiply(B.negative(B.matmul(gb, _mT(X))),
                            _tri_mask(A.shape[-1], _dtype(A), self.upper, self.unit))
        return gA, (gb if self.needs(1) else None)


def _trsolve(T: Any, X: Any, upper: builtins.bool, unit: builtins.bool = False) -> Any:
    """T^-1 X for the triangle of T, on arrays, or differentiably when either is a Tensor (create_graph)."""
    if isinstance(T, Tensor) or isinstance(X, Tensor):
        return solve_triangular(_as_tensor(T), _as_tensor(X), upper=upper, unitriangular=unit)
    return B.solve_triangular(_triangle(T, upper, unit), X)


def solve_triangular(A: Tensor, B_: Tensor, *, upper: builtins.bool, left: builtins.bool = True,
                     unitriangular: builtins.bool = False) -> Tensor:
    """X with T X = B for the upper or lower triangle T of A (X T = B when left=False).

    >>> torch.linalg.solve_triangular(torch.tensor([[2.0, 1.0], [0.0, 4.0]]), torch.ones(2, 1), upper=True)
    tensor([[0.3750],
            [0.2500]])"""
    A = _as_tensor(A)
    b = _as_tensor(B_, A)
    if A.ndim < 2 or A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"linalg.solve_triangular: A must be batches of square matrices, but they are "
                           f"{A.shape[-2] if A.ndim > 1 else 1} by {A.shape[-1] if A.ndim else 1} matrices")
    if b.ndim < 2:
        raise RuntimeError("linalg.solve_triangular: The input tensor B must have at least 2 dimensions.")
    if A._data.dtype.kind != "f" or b._data.dtype.kind != "f":
        raise NotImplementedError(f"\"triangular_solve_cpu\" not implemented for "
                                  f"'{_SCALAR_NAMES.get(A.dtype.name, A.dtype.name)}'")
    if b.dtype != A.dtype:  # PyTorch promotes the two
        wide = A.dtype if A._data.dtype.itemsize >= b._data.dtype.itemsize else b.dtype
        A, b = A.to(wide), b.to(wide)
    if not left:  # X T = B is T^T X^T = B^T
        return solve_triangular(A.mT, b.mT, upper=not upper, unitriangular=unitriangular).mT
    n = A.shape[-1]
    if b.shape[-2] != n:
        raise RuntimeError(f"linalg.solve_triangular: Incompatible shapes of A and B for the equation AX = B "
                           f"({A.shape[-2]}x{A.shape[-1]} and {b.shape[-2]}x{b.shape[-1]})")
    Ab, bb = _broadcast_pair(A, b, "linalg.solve_triangular")
    return SolveTriangular.apply(Ab, bb, upper=builtins.bool(upper), unit=builtins.bool(unitriangular))


def _triangular_solve_old(input: Tensor, A: Tensor, upper: builtins.bool = True,  # noqa: A002
                          transpose: builtins.bool = False,
                          unitriangular: builtins.bool = False) -> linalg_solve_triangular_old:
    """torch.triangular_solve(b, A): (X, A.clone()) with T X = b, T^T X = b when transpose=True."""
    A = _as_tensor(A)
    if A.ndim < 2 or A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"A must be batches of square matrices, but they are "
                           f"{A.shape[-2] if A.ndim > 1 else 1} by {A.shape[-1] if A.ndim else 1} matrices")
    T = A.mT if transpose else A
    X = solve_triangular(T, input, upper=upper != builtins.bool(transpose), unitriangular=unitriangular)
    return linalg_solve_triangular_old(X, A.clone())
