"""Linear algebra methods: matrix products, BLAS-style fused ops, and the decompositions and solves
(which live in lightgrad.linalg); and tensordot, einsum, vander."""

from __future__ import annotations

import builtins
import math
from typing import TYPE_CHECKING, Any

from .. import backend as B
from .. import dtypes as D
from .common import Number, _as_tensor, _dim, _promote
from .creation import eye, ones, zeros
from .elementwise import where
from .shape import cat, stack

if TYPE_CHECKING:  # bound at run time by tensor.py, once Tensor exists (see _ops/__init__.py)
    from .. import function as F
    from ..tensor import Tensor
    from .common import TensorSelf


class LinalgMixin:
    """Tensor's linear algebra methods."""

    __slots__ = ()

    # ---- products --------------------------------------------------------------------------------
    def matmul(self: TensorSelf, other: Any) -> Tensor:
        """Matrix product with PyTorch's rules for 1-D, 2-D and batched operands."""
        a = self
        b = _as_tensor(other, self)
        if a.ndim == 0 or b.ndim == 0:
            raise RuntimeError(f"both arguments to matmul need to be at least 1D, but they are {a.ndim}D and {b.ndim}D")
        mixed = a._arr.dtype != b._arr.dtype
        if mixed and a.ndim == 1 and b.ndim == 1:
            _mixed_matmul(a, b)  # (dot checks dtypes first; the other kernels sizes first)
        k1 = a.shape[-1]
        k2 = b.shape[-2] if b.ndim > 1 else b.shape[0]
        if k1 != k2 and b.ndim == 1 and a.ndim > 1:
            rows = math.prod(a.shape[:-1])
            raise RuntimeError(f"size mismatch, got input ({rows}), mat ({rows}x{k1}), vec ({k2})")
        if k1 != k2:
            sa = "x".join(map(str, a.shape)) if a.ndim <= 2 else str(list(a.shape))
            sb = "x".join(map(str, b.shape)) if b.ndim <= 2 else str(list(b.shape))
            raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({sa} and {sb})")
        if a.ndim > 2 and b.ndim > 2:
            try:
                B.broadcast_shape(a.shape[:-2], b.shape[:-2])
            except ValueError:
                raise RuntimeError(f"The size of batch dimensions {list(a.shape[:-2])} and "
                                   f"{list(b.shape[:-2])} must match or broadcast") from None
        if mixed:
            _mixed_matmul(a, b)
        if a.ndim == 1 and b.ndim == 1:
            return F.MatMul.apply(a.reshape(1, -1), b.reshape(-1, 1)).reshape(())
        if a.ndim == 1:
            return F.MatMul.apply(a.reshape(1, -1), b).squeeze(-2)
        if b.ndim == 1:
            return F.MatMul.apply(a, b.reshape(-1, 1)).squeeze(-1)
        return F.MatMul.apply(a, b)

    def mm(self: TensorSelf, other: Tensor) -> Tensor:
        if self.ndim != 2 or other.ndim != 2:
            raise RuntimeError(f"mm: expected 2D tensors, got {self.ndim}D and {other.ndim}D")
        return self.matmul(other)

    def bmm(self: TensorSelf, other: Tensor) -> Tensor:
        if self.ndim != 3 or other.ndim != 3:
            raise RuntimeError(f"batch1 must be a 3D tensor, got {self.ndim}D and {other.ndim}D")
        if self.shape[0] != other.shape[0]:
            raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                               f"[{self.shape[0]}, {self.shape[2]}] but got: [{other.shape[0]}, {other.shape[1]}].")
        return self.matmul(other)

    def mv(self: TensorSelf, v: Tensor) -> Tensor:
        return self.matmul(v)

    def dot(self: TensorSelf, other: Tensor) -> Tensor:
        if self.ndim != 1 or other.ndim != 1:
            raise RuntimeError(f"1D tensors expected, but got {self.ndim}D and {other.ndim}D tensors")
        if self.shape != other.shape:
            raise RuntimeError(f"inconsistent tensor size, expected tensor [{self.shape[0]}] and src "
                               f"[{other.shape[0]}] to have the same number of elements, but got "
                               f"{self.shape[0]} and {other.shape[0]} elements respectively")
        return self.matmul(other)

    inner = dot

    def vdot(self: TensorSelf, other: Tensor) -> Tensor:
        """Dot product of two 1-D tensors (no conjugation needed for real dtypes)."""
        return self.dot(other)

    def outer(self: TensorSelf, other: Tensor) -> Tensor:
        return self.reshape(-1, 1) * other.reshape(1, -1)

    ger = outer

    def kron(self: TensorSelf, other: Tensor) -> Tensor:
        """Kronecker product: block (i, j) of the result is self[i, j] * other."""
        o = _as_tensor(other, self)
        nd = max(self.ndim, o.ndim)
        sa = (1,) * (nd - self.ndim) + self.shape
        sb = (1,) * (nd - o.ndim) + o.shape
        a = self.reshape(tuple(v for s in sa for v in (s, 1)))  # (a0, 1, a1, 1, ...)
        b = o.reshape(tuple(v for s in sb for v in (1, s)))  # (1, b0, 1, b1, ...)
        return (a * b).reshape(tuple(x * y for x, y in zip(sa, sb)))

    def cross(self: TensorSelf, other: Tensor, dim: builtins.int | None = None) -> Tensor:
        """Cross product of 3-vectors along ``dim`` (default: the first dim of size 3)."""
        o = _as_tensor(other, self)
        if self.ndim != o.ndim:
            raise RuntimeError(f"linalg.cross: inputs must have the same number of dimensions, got "
                               f"{self.ndim} and {o.ndim}")
        try:
            shape = B.broadcast_shape(self.shape, o.shape)
        except ValueError:
            raise RuntimeError(f"linalg.cross: the shapes {list(self.shape)} and {list(o.shape)} do not "
                               f"broadcast") from None
        if dim is None:
            d = next((i for i, s in enumerate(shape) if s == 3), None)
            if d is None:
                raise RuntimeError(f"no dimension of size 3 in input (shape {list(shape)})")
        else:
            d = _dim(dim, len(shape))
            if self.shape[d] != 3 or o.shape[d] != 3:
                raise RuntimeError(f"linalg.cross: inputs dimension {dim} must have length 3. Got "
                                   f"{self.shape[d]} and {o.shape[d]}")
        a, b = _promote(self.expand(shape), o.expand(shape))
        pre = (slice(None),) * d
        a1, a2, a3 = (a[pre + (i,)] for i in range(3))
        b1, b2, b3 = (b[pre + (i,)] for i in range(3))
        return stack([a2 * b3 - a3 * b2, a3 * b1 - a1 * b3, a1 * b2 - a2 * b1], d)

    # ---- BLAS-style fused ops: beta * self + alpha * (product), self broadcast to the product's shape ---
    def _scaled_sum(self: TensorSelf, prod: Tensor, beta: Number, alpha: Number) -> Tensor:
        _check_expand(self.shape, prod.shape)
        out = prod if alpha == 1 else prod * alpha
        if beta == 0:  # self is ignored, NaN and inf included, as in BLAS; its gradient is 0
            return out + where(Tensor._make(B.asarray(False)), self, 0.0) if self.requires_grad else out
        return out + (self if beta == 1 else self * beta)

    def addmm(self: TensorSelf, mat1: Tensor, mat2: Tensor, *, beta: Number = 1, alpha: Number = 1) -> Tensor:
        """beta * self + alpha * (mat1 @ mat2) for 2-D mat1, mat2."""
        for name, m in (("mat1", mat1), ("mat2", mat2)):
            if m.ndim != 2:
                raise RuntimeError(f"{name} must be a matrix, got {m.ndim}-D tensor")
        return self._scaled_sum(mat1.matmul(mat2), beta, alpha)

    def addmv(self: TensorSelf, mat: Tensor, vec: Tensor, *, beta: Number = 1, alpha: Number = 1) -> Tensor:
        """beta * self + alpha * (mat @ vec) for 2-D mat and 1-D vec."""
        if mat.ndim != 2 or vec.ndim != 1 or self.ndim > 1:
            raise RuntimeError(f"vector + matrix @ vector expected, got {self.ndim}, {mat.ndim}, {vec.ndim}")
        if mat.shape[1] != vec.shape[0]:
            raise RuntimeError(f"size mismatch, got input ({mat.shape[0]}), mat ({mat.shape[0]}x{mat.shape[1]}), "
                               f"vec ({vec.shape[0]})")
        return self._scaled_sum(mat.matmul(vec), beta, alpha)

    def addbmm(self: TensorSelf, batch1: Tensor, batch2: Tensor, *, beta: Number = 1, alpha: Number = 1) -> Tensor:
        """beta * self + alpha * sum_b(batch1[b] @ batch2[b]) for 3-D batches."""
        return self._scaled_sum(batch1.bmm(batch2).sum(0), beta, alpha)

    def baddbmm(self: TensorSelf, batch1: Tensor, batch2: Tensor, *, beta: Number = 1, alpha: Number = 1) -> Tensor:
        """beta * self + alpha * (batch1 @ batch2) for 3-D batches."""
        return self._scaled_sum(batch1.bmm(batch2), beta, alpha)

    def addr(self: TensorSelf, vec1: Tensor, vec2: Tensor, *, beta: Number = 1, alpha: Number = 1) -> Tensor:
        """beta * self + alpha * outer(vec1, vec2)."""
        for name, v in (("vec1", vec1), ("vec2", vec2)):
            if v.ndim != 1:
                raise RuntimeError(f"addr: Expected 1-D argument {name}, but got {v.ndim}-D")
        return self._scaled_sum(vec1.outer(vec2), beta, alpha)

    # ---- decompositions, inverses and solves (the functions live in lightgrad.linalg) ------------
    # (each imports lightgrad.linalg in the call: that module is above Tensor, importing tensor.py,
    # until its primitives move to the primitive level, lightgrad.function)
    def inverse(self: TensorSelf) -> Tensor:
        from ..linalg import inv
        return inv(self)

    def pinverse(self: TensorSelf, rcond: builtins.float = 1e-15) -> Tensor:
        """Pseudo-inverse, dropping singular values <= rcond * the largest."""
        from ..linalg import pinv
        return pinv(self, rtol=rcond)

    def det(self: TensorSelf) -> Tensor:
        from ..linalg import det
        return det(self)

    def logdet(self: TensorSelf) -> Tensor:
        from ..linalg import logdet
        return logdet(self)

    def slogdet(self: TensorSelf) -> tuple[Tensor, Tensor]:
        from ..linalg import slogdet
        return slogdet(self)

    def matrix_power(self: TensorSelf, n: builtins.int) -> Tensor:
        from ..linalg import matrix_power
        return matrix_power(self, n)

    def matrix_exp(self: TensorSelf) -> Tensor:
        """exp of each square matrix: ``torch.linalg.matrix_exp(self)``."""
        from ..linalg import matrix_exp
        return matrix_exp(self)

    def cholesky(self: TensorSelf, upper: builtins.bool = False) -> Tensor:
        from ..linalg import cholesky
        return cholesky(self, upper=upper)

    def cholesky_solve(self: TensorSelf, input2: Tensor, upper: builtins.bool = False) -> Tensor:
        """X with A X = self, A = L L^T given its Cholesky factor L (or U^T U with ``upper``)."""
        from ..linalg import solve_triangular
        if upper:
            return solve_triangular(input2, solve_triangular(input2.mT, self, upper=False), upper=True)
        return solve_triangular(input2.mT, solve_triangular(input2, self, upper=False), upper=True)

    def cholesky_inverse(self: TensorSelf, upper: builtins.bool = False) -> Tensor:
        """The inverse of A = L L^T (or U^T U with ``upper``) from its Cholesky factor."""
        return eye(self.shape[-1], dtype=self.dtype).expand(self.shape).cholesky_solve(self, upper)

    def lu(self: TensorSelf, pivot: builtins.bool = True, get_infos: builtins.bool = False) -> Any:
        """(LU, pivots[, infos]) of self (torch.lu): ``torch.linalg.lu_factor_ex``'s outputs."""
        from ..linalg import lu_factor_ex
        LU, piv, info = lu_factor_ex(self, pivot=pivot)
        return (LU, piv, info) if get_infos else (LU, piv)

    def lu_solve(self: TensorSelf, LU_data: Any, LU_pivots: Any) -> Tensor:
        """X with A X = self given ``LU_data, LU_pivots = torch.linalg.lu_factor(A)`` (torch.lu_solve)."""
        from ..linalg import lu_solve
        return lu_solve(LU_data, LU_pivots, self)

    def qr(self: TensorSelf, some: builtins.bool = True) -> Any:
        """(Q, R) with self = Q R, reduced unless some=False."""
        from ..linalg import _qr_old
        return _qr_old(self, some)

    def svd(self: TensorSelf, some: builtins.bool = True, compute_uv: builtins.bool = True) -> Any:
        """(U, S, V) with self = U diag(S) V^T (torch.svd's old API: V, not Vh)."""
        from ..linalg import _svd_old
        return _svd_old(self, some, compute_uv)

    def triangular_solve(self: TensorSelf, A: Any, upper: builtins.bool = True, transpose: builtins.bool = False,
                         unitriangular: builtins.bool = False) -> Any:
        """(X, A.clone()) with T X = self for the triangle T of A (torch.triangular_solve)."""
        from ..linalg import _triangular_solve_old
        return _triangular_solve_old(self, A, upper, transpose, unitriangular)

    def adjoint(self: TensorSelf) -> Tensor:
        """The conjugate transpose of the last two dims (the transpose: no complex tensors here)."""
        return self.mT


# ---- free functions ------------------------------------------------------------------------------
def tensordot(a: Tensor, b: Tensor, dims: Any = 2) -> Tensor:
    """Sum over paired dims: ``dims=n`` pairs a's last n with b's first n; or ``([a dims], [b dims])``."""
    if isinstance(dims, builtins.int):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        da, db = list(range(a.ndim - dims, a.ndim)), list(range(dims))
    else:
        da, db = ([dims[0]] if isinstance(dims[0], builtins.int) else list(dims[0]),
                  [dims[1]] if isinstance(dims[1], builtins.int) else list(dims[1]))
        if isinstance(dims, Tensor):
            da, db = [builtins.int(v) for v in dims[0].tolist()], [builtins.int(v) for v in dims[1].tolist()]
    if len(da) != len(db):
        raise RuntimeError(f"both dimension lists should have same length, got {len(da)} and {len(db)}")
    da, db = [_dim(d, a.ndim) for d in da], [_dim(d, b.ndim) for d in db]
    for x, y in zip(da, db):
        if a.shape[x] != b.shape[y]:
            raise RuntimeError(f"contracted dimensions need to match, but first has size {a.shape[x]} in dim {x} "
                               f"and second has size {b.shape[y]} in dim {y}")
    fa = [d for d in range(a.ndim) if d not in da]
    fb = [d for d in range(b.ndim) if d not in db]
    k = math.prod(a.shape[d] for d in da)
    am = a.permute(*(fa + da)).reshape(-1, k)  # (free a, contracted)
    bm = b.permute(*(db + fb)).reshape(k, -1)  # (contracted, free b)
    return am.matmul(bm).reshape(tuple(a.shape[d] for d in fa) + tuple(b.shape[d] for d in fb))


def einsum(equation: str, *operands: Any) -> Tensor:
    """Einstein summation, e.g. ``einsum('bij,bjk->bik', a, b)``; '...' is supported."""
    ops = list(operands[0]) if len(operands) == 1 and isinstance(operands[0], list | tuple) else list(operands)
    ops = [_as_tensor(o) for o in ops]
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    ins = given = lhs.split(",")
    if len(ins) != len(ops):
        raise RuntimeError("einsum(): more operands were provided than specified in the equation"
                           if len(ops) > len(ins) else "einsum(): fewer operands were provided than specified in the equation")
    used = set(eq)
    spare = iter(c for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz" if c not in used)
    nell = max((o.ndim - (len(s) - 3) for s, o in zip(ins, ops) if "..." in s), default=0)
    ell = "".join(next(spare) for _ in range(nell))
    ins = [s.replace("...", ell[len(ell) - (o.ndim - (len(s) - 3)):]) if "..." in s else s for s, o in zip(ins, ops)]
    for s, o in zip(ins, ops):
        if len(s) != o.ndim:
            raise RuntimeError(f"einsum(): the number of subscripts in the equation ({len(s)}) does not match "
                               f"the number of dimensions ({o.ndim}) for operand {ins.index(s)}")
    if arrow:
        out = rhs.replace("...", ell)
    else:
        counts: dict[str, int] = {}
        for s in ins:
            for ch in s:
                counts[ch] = counts.get(ch, 0) + 1
        out = ell + "".join(sorted(c for c, n in counts.items() if n == 1 and c not in ell))
    dt = D.result_type(*ops)
    try:
        return F.Einsum.apply(*[o.to(dt) for o in ops], ins=tuple(ins), out=out)
    except ValueError:  # sizes that do not match: PyTorch's words (checked only then), not NumPy's
        _check_einsum_sizes(given, ops)
        raise


def vander(x: Tensor, N: builtins.int | None = None, increasing: builtins.bool = False) -> Tensor:  # noqa: N803
    """Vandermonde matrix of a 1-D x: columns x**(N-1), ..., x**0 (reversed when ``increasing``)."""
    if x.ndim != 1:
        raise RuntimeError(f"x must be a one-dimensional tensor, got {x.ndim} dimensions")
    n = x.shape[0] if N is None else N
    if n < 0:
        raise RuntimeError(f"N must be non-negative, got {n}")
    dt = D.int64 if x._data.dtype.kind in "biu" else x.dtype
    xs = x.to(dt).unsqueeze(1)
    cols = [ones(x.shape[0], 1, dtype=dt)][:n]
    if n > 1:
        cols.append(xs.expand(x.shape[0], n - 1).cumprod(1))
    r = cat(cols, 1) if cols else zeros(x.shape[0], 0, dtype=dt)
    return r if increasing else r.flip(1)


def cdist(x1: Tensor, x2: Tensor, p: builtins.float = 2.0) -> Tensor:
    return (x1.unsqueeze(-2) - x2.unsqueeze(-3)).norm(p, dim=-1)


# ---- helpers -------------------------------------------------------------------------------------
def _check_einsum_sizes(ins: list[str], ops: list[Tensor]) -> None:
    """PyTorch's einsum size errors, in its order: operand by operand, a repeated subscript's sizes
    must agree, and a subscript's (or an ellipsis dim's, aligned from the right) size must equal or
    broadcast (1) with what earlier operands had."""
    seen: dict[str, builtins.int] = {}
    ell: dict[builtins.int, builtins.int] = {}  # ellipsis dims counted from the right
    for i, (sub, op) in enumerate(zip(ins, ops)):
        shape, dim = list(op.shape), 0
        first: dict[str, builtins.int] = {}  # a subscript's first dim in this operand
        for ch in sub.replace("...", "."):
            if ch == ".":
                k = op.ndim - (len(sub) - 3)
                for j in range(k):
                    n, prev = shape[dim], ell.get(k - j, 1)
                    if n != 1 and prev not in (1, n):
                        raise RuntimeError(f"einsum(): dimension {dim} covered by ellipsis in operand {i}has size {n} "
                                           f"which does not broadcast with previously seen ellipsis with size {prev} "
                                           "for the respective dimension")
                    ell[k - j] = n if n != 1 else prev
                    dim += 1
            elif ch in first:  # a diagonal: the dim goes, as PyTorch takes it
                if shape[dim] != shape[first[ch]]:
                    raise RuntimeError(f"einsum(): subscript {ch} is repeated for operand {i} but the sizes don't "
                                       f"match, {shape[dim]} != {shape[first[ch]]}")
                del shape[dim]
            else:
                n, prev = shape[dim], seen.get(ch, 1)
                if n != 1 and prev not in (1, n):
                    raise RuntimeError(f"einsum(): subscript {ch} has size {n} for operand {i} which does not "
                                       f"broadcast with previously seen size {prev}")
                seen[ch] = n if n != 1 else prev
                first[ch] = dim
                dim += 1


def _mixed_matmul(a: Tensor, b: Tensor) -> None:
    """PyTorch's error for a matrix product of two dtypes (it promotes neither), in the words of
    the kernel its shapes reach: dot, addmv, mm or bmm."""
    sa, sb = D.SCALAR_NAMES.get(a.dtype.name, a.dtype.name), D.SCALAR_NAMES.get(b.dtype.name, b.dtype.name)
    if a.ndim == 0 or b.ndim == 0:
        return  # (matmul's own 0-d error says it)
    if a.ndim == 1 and b.ndim == 1:
        raise RuntimeError(f"dot : expected both vectors to have same dtype, but found {sa} and {sb}")
    if b.ndim == 1:
        raise RuntimeError(f"addmv input tensors must have the same dtype, but got {sb}, {sa}, and {sb}")
    if b.ndim == 2:
        ca, cb = D.CPP_NAMES.get(a.dtype.name, a.dtype.name), D.CPP_NAMES.get(b.dtype.name, b.dtype.name)
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: {ca} != {cb}")
    raise RuntimeError(f"expected scalar type {sa} but found {sb}")


def _check_expand(shape: tuple[builtins.int, ...], target: tuple[builtins.int, ...]) -> None:
    """Raise as PyTorch's expand does unless ``shape`` broadcasts to ``target`` unchanged."""
    lead = len(target) - len(shape)
    if lead < 0 or any(s != t and s != 1 for s, t in zip(shape, target[lead:])):
        bad = next((i for i in range(len(shape)) if lead < 0 or shape[i] not in (1, target[i + lead])), 0)
        raise RuntimeError(f"The expanded size of the tensor ({target[bad + lead] if bad + lead >= 0 else '?'}) "
                           f"must match the existing size ({shape[bad]}) at non-singleton dimension "
                           f"{bad + max(lead, 0)}.  Target sizes: {list(target)}.  Tensor sizes: {list(shape)}")
