"""Linear algebra methods: matrix products, BLAS-style fused ops, and the decompositions and solves;
and tensordot, einsum, vander, cdist.

The decompositions, inverses and solves that Tensor's methods reach are computed here once, on the
primitives of lightgrad.function (linalg, decompositions): inv, det, slogdet, logdet, cholesky,
solve_triangular, the LU (lu_factor_ex, lu_unpack, lu_solve), svd, svdvals, qr, eigh, pinv,
matrix_power, matrix_exp, vector_norm and matrix_norm, with their input checks and result types.
lightgrad.linalg, the layer above, re-exports them and builds the rest of torch.linalg on them."""

from __future__ import annotations

import builtins
import math
import warnings
from collections import namedtuple
from typing import TYPE_CHECKING, Any

from .. import backend as B
from .. import dtypes as D
from ..function.decompositions import _factors, _NoGrad
from ..function.linalg import _first_bad, _lu_nodes
from .common import _SCALAR_TYPE, Number, _as_tensor, _dim, _promote, return_types
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
        """Matrix product of two 2-D tensors (no broadcasting)."""
        if self.ndim != 2 or other.ndim != 2:
            raise RuntimeError(f"mm: expected 2D tensors, got {self.ndim}D and {other.ndim}D")
        return self.matmul(other)

    def bmm(self: TensorSelf, other: Tensor) -> Tensor:
        """Batched matrix product of two 3-D tensors: (b, n, m) @ (b, m, p) is (b, n, p)."""
        if self.ndim != 3 or other.ndim != 3:
            raise RuntimeError(f"batch1 must be a 3D tensor, got {self.ndim}D and {other.ndim}D")
        if self.shape[0] != other.shape[0]:
            raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                               f"[{self.shape[0]}, {self.shape[2]}] but got: [{other.shape[0]}, {other.shape[1]}].")
        return self.matmul(other)

    def mv(self: TensorSelf, v: Tensor) -> Tensor:
        """Matrix-vector product: (n, m) @ (m,) is (n,)."""
        return self.matmul(v)

    def dot(self: TensorSelf, other: Tensor) -> Tensor:
        """Dot product of two 1-D tensors, a 0-d tensor (``inner`` is this too: 1-D only, unlike PyTorch's n-D inner)."""
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
        """Outer product of two 1-D tensors: (n,) and (m,) give (n, m) (``ger`` is the same)."""
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

    # ---- decompositions, inverses and solves (computed by the functions below, which lightgrad.linalg shares) ---
    # (a method named as its function calls the module's function: a method's body does not see the class's names)
    def inverse(self: TensorSelf) -> Tensor:
        """The inverse of a square matrix (or of each in a batch)."""
        return inv(self)

    def pinverse(self: TensorSelf, rcond: builtins.float = 1e-15) -> Tensor:
        """Pseudo-inverse, dropping singular values <= rcond * the largest."""
        return pinv(self, rtol=rcond)

    def det(self: TensorSelf) -> Tensor:
        """The determinant of a square matrix (or of each in a batch)."""
        return det(self)

    def logdet(self: TensorSelf) -> Tensor:
        """log of the determinant (NaN where it is negative, -inf where it is 0)."""
        return logdet(self)

    def slogdet(self: TensorSelf) -> tuple[Tensor, Tensor]:
        """(sign, log(abs(det))) of a square matrix: the determinant without overflow."""
        return slogdet(self)

    def matrix_power(self: TensorSelf, n: builtins.int) -> Tensor:
        """The matrix raised to the integer power ``n`` (the inverse's for negative n)."""
        return matrix_power(self, n)

    def matrix_exp(self: TensorSelf) -> Tensor:
        """exp of each square matrix: ``torch.linalg.matrix_exp(self)``."""
        return matrix_exp(self)

    def cholesky(self: TensorSelf, upper: builtins.bool = False) -> Tensor:
        """The Cholesky factor L with A = L L^T (U with A = U^T U if ``upper``) of a symmetric positive-definite matrix."""
        return cholesky(self, upper=upper)

    def cholesky_solve(self: TensorSelf, input2: Tensor, upper: builtins.bool = False) -> Tensor:
        """X with A X = self, A = L L^T given its Cholesky factor L (or U^T U with ``upper``)."""
        if upper:
            return solve_triangular(input2, solve_triangular(input2.mT, self, upper=False), upper=True)
        return solve_triangular(input2.mT, solve_triangular(input2, self, upper=False), upper=True)

    def cholesky_inverse(self: TensorSelf, upper: builtins.bool = False) -> Tensor:
        """The inverse of A = L L^T (or U^T U with ``upper``) from its Cholesky factor."""
        return eye(self.shape[-1], dtype=self.dtype).expand(self.shape).cholesky_solve(self, upper)

    def lu(self: TensorSelf, pivot: builtins.bool = True, get_infos: builtins.bool = False) -> Any:
        """(LU, pivots[, infos]) of self (torch.lu): ``torch.linalg.lu_factor_ex``'s outputs."""
        LU, piv, info = lu_factor_ex(self, pivot=pivot)
        return (LU, piv, info) if get_infos else (LU, piv)

    def lu_solve(self: TensorSelf, LU_data: Any, LU_pivots: Any) -> Tensor:
        """X with A X = self given ``LU_data, LU_pivots = torch.linalg.lu_factor(A)`` (torch.lu_solve)."""
        return lu_solve(LU_data, LU_pivots, self)

    def qr(self: TensorSelf, some: builtins.bool = True) -> Any:
        """(Q, R) with self = Q R, reduced unless some=False."""
        return _qr_old(self, some)

    def svd(self: TensorSelf, some: builtins.bool = True, compute_uv: builtins.bool = True) -> Any:
        """(U, S, V) with self = U diag(S) V^T (torch.svd's old API: V, not Vh)."""
        return _svd_old(self, some, compute_uv)

    def triangular_solve(self: TensorSelf, A: Any, upper: builtins.bool = True, transpose: builtins.bool = False,
                         unitriangular: builtins.bool = False) -> Any:
        """(X, A.clone()) with T X = self for the triangle T of A (torch.triangular_solve)."""
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
    """The p-norm distance between each row of x1 and each row of x2: (..., n, d) and (..., m, d) give (..., n, m)."""
    return (x1.unsqueeze(-2) - x2.unsqueeze(-3)).norm(p, dim=-1)


# ---- linear algebra: what Tensor's methods and lightgrad.linalg both compute ---------------------
# (the primitives are lightgrad.function's; lightgrad.linalg re-exports these functions and builds the
# rest of torch.linalg on them)
slogdet_result = namedtuple("slogdet_result", ["sign", "logabsdet"])
linalg_lu_factor_ex = namedtuple("linalg_lu_factor_ex", ["LU", "pivots", "info"])
lu_unpack_result = namedtuple("lu_unpack", ["P", "L", "U"])  # type: ignore[name-match]
linalg_svd = namedtuple("linalg_svd", ["U", "S", "Vh"])
svd_result = namedtuple("svd", ["U", "S", "V"])  # type: ignore[name-match]  # torch.return_types.svd
linalg_qr = namedtuple("linalg_qr", ["Q", "R"])
qr_result = namedtuple("qr", ["Q", "R"])  # type: ignore[name-match]  # torch.return_types.qr
linalg_eigh = namedtuple("linalg_eigh", ["eigenvalues", "eigenvectors"])
linalg_solve_triangular_old = namedtuple("triangular_solve", ["solution", "cloned_coefficient"])  # type: ignore[name-match]


def _register(*kinds: type) -> None:
    """lightgrad.return_types.linalg_svd and the others, as torch.return_types."""
    for kind in kinds:
        setattr(return_types, kind.__name__, kind)


_register(slogdet_result, linalg_lu_factor_ex, lu_unpack_result, linalg_svd, svd_result, linalg_qr, qr_result,
          linalg_eigh, linalg_solve_triangular_old)


# ---- linear algebra: input checks (PyTorch's messages for a wrong shape or dtype) ---------------------
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
        raise NotImplementedError(f"\"lu_cpu\" not implemented for '{_SCALAR_TYPE.get(A.dtype.name, A.dtype.name)}'")
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


def _info_tensor(info: Any) -> Tensor:
    """The info of the _ex variants (an int32 per matrix instead of an error) as a tensor."""
    return Tensor._make(B.asarray(info, B.xp.int32))


# ---- linear algebra: inverses and determinants ---------------------------------------------------
def inv(A: Tensor) -> Tensor:
    """Inverse of each square matrix: ``inv(A) @ A`` is the identity; singular A raises LinAlgError."""
    return F.Inv.apply(_square(A, "inv"))


def det(A: Tensor) -> Tensor:
    """Determinant of each square matrix (shape: the batch dims)."""
    return F.Det.apply(_square(A, "det"))


def slogdet(A: Tensor) -> slogdet_result:
    """(sign, log|det|) of each square matrix; log|det| is -inf for a singular one."""
    A = _square(A, "slogdet")
    sign, _ = B.slogdet(A._data)
    return slogdet_result(Tensor._make(B.asarray(sign, A._data.dtype)), F.LogAbsDet.apply(A))


def logdet(A: Tensor) -> Tensor:
    """log det A: NaN where det A < 0, -inf where it is 0."""
    sign, lad = slogdet(_square(A, "logdet"))
    return where(sign < 0, math.nan, lad)


# ---- linear algebra: triangular solves -----------------------------------------------------------
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
                                  f"'{_SCALAR_TYPE.get(A.dtype.name, A.dtype.name)}'")
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
    return F.SolveTriangular.apply(Ab, bb, upper=builtins.bool(upper), unit=builtins.bool(unitriangular))


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


# ---- linear algebra: LU with partial pivoting, A = P L U ----------------------------------------------
def lu_factor_ex(A: Tensor, *, pivot: builtins.bool = True,
                 check_errors: builtins.bool = False) -> linalg_lu_factor_ex:
    """(LU, pivots, info): L below the diagonal (unit diagonal implied) and U on and above it, packed in one
    matrix; pivots are LAPACK's 1-based int32 row swaps; info is 0 or the first zero pivot (1-based)."""
    A = _lu_input(A, "lu_factor_ex", "torch")
    if not pivot:
        raise RuntimeError("linalg.lu_factor: LU without pivoting is not implemented on the CPU")
    (LU,), piv, info = _lu_nodes(A, (3,))
    if check_errors and info.any():
        batch, k = _first_bad(info)
        raise RuntimeError(f"torch.linalg.lu_factor_ex: {batch}U[{k},{k}] is zero and using it on lu_solve would "
                           f"result in a division by zero. If you still want to perform the factorization, consider "
                           f"calling linalg.lu(A, pivot) or linalg.lu_factor_ex(A, pivot)")
    return linalg_lu_factor_ex(LU, Tensor._make(piv), _info_tensor(info))


def lu_unpack(LU_data: Tensor, LU_pivots: Tensor, unpack_data: builtins.bool = True,
              unpack_pivots: builtins.bool = True) -> lu_unpack_result:
    """torch.lu_unpack: (P, L, U) from the packed LU and pivots of ``lu_factor`` (differentiable in LU)."""
    LU = _as_tensor(LU_data)
    piv = _as_tensor(LU_pivots)
    m, n = LU.shape[-2:]
    k = builtins.min(m, n)
    empty = Tensor._make(B.zeros((0,), LU._data.dtype))
    L = U = P = empty
    if unpack_data:
        L = LU[..., :, :k].tril(-1) + Tensor._make(B.eye(m, k, dtype=LU._data.dtype))
        U = LU[..., :k, :].triu()
    if unpack_pivots:
        P = Tensor._make(B.lu_permutation(piv._data, m).astype(LU._data.dtype))
    return lu_unpack_result(P, L, U)


def lu_solve(LU: Tensor, pivots: Tensor, B_: Tensor, *, left: builtins.bool = True,
             adjoint: builtins.bool = False) -> Tensor:
    """X with A X = B given ``LU, pivots = lu_factor(A)`` (X A = B when left=False, A^T for adjoint=True).

    Built from two triangular solves, so it differentiates in both B and LU."""
    LU = _as_tensor(LU)
    b = _as_tensor(B_, LU)
    if LU.ndim < 2 or LU.shape[-1] != LU.shape[-2]:
        raise RuntimeError(f"torch.linalg.lu_solve: A must be batches of square matrices, but they are "
                           f"{LU.shape[-2] if LU.ndim > 1 else 1} by {LU.shape[-1] if LU.ndim else 1} matrices")
    if b.ndim < 2:
        raise RuntimeError("linalg.lu_solve: The input tensor B must have at least 2 dimensions.")
    n = LU.shape[-1]
    if b.shape[-2 if left else -1] != n:
        eq, shp = ("AX = B", f"{b.shape[-2]}x{b.shape[-1]}") if left else ("XA = B", f"{b.shape[-2]}x{b.shape[-1]}")
        raise RuntimeError(f"linalg.lu_solve: Incompatible shapes of A and B for the equation {eq} ({n}x{n} and "
                           f"{shp})")
    if not left:  # X A = B is A^T X^T = B^T
        return lu_solve(LU, pivots, b.mT, adjoint=not adjoint).mT
    P, _, _ = lu_unpack(LU.detach(), pivots, unpack_data=False)
    if adjoint:  # A^T X = B with A = P L U: X = P L^-T U^-T B
        Y = solve_triangular(LU.mT, b, upper=False)  # U^T is the lower triangle of LU^T
        return P @ solve_triangular(LU.mT, Y, upper=True, unitriangular=True)
    Y = solve_triangular(LU, P.mT @ b, upper=False, unitriangular=True)
    return solve_triangular(LU, Y, upper=True)


# ---- linear algebra: the decompositions (Cholesky, SVD, QR, eigh), each factor a primitive's node ------
def cholesky(A: Tensor, *, upper: builtins.bool = False) -> Tensor:
    """Lower-triangular L with L L^T = A for symmetric positive-definite A (L^T when upper=True)."""
    L = F.Cholesky.apply(_square(A, "cholesky"))
    return L.mT if upper else L


def svd(A: Tensor, full_matrices: builtins.bool = True, *, driver: Any = None) -> linalg_svd:
    """(U, S, Vh) with A = U diag(S) Vh, S descending: ``U, S, Vh = torch.linalg.svd(A)``.

    With full_matrices=True the gradients of the extra columns of U and rows of Vh are ignored, as in
    PyTorch (they are any bases of the complements)."""
    A = _matrix_input(A, "svd")
    if driver is not None:
        raise RuntimeError("torch.linalg.svd: keyword argument `driver=` is only supported on CUDA inputs with "
                           "cuSOLVER backend.")
    u, s, vh = B.svd(A._data, full_matrices=full_matrices)
    return linalg_svd(*_factors(F.SvdFactor, A, (u, s, vh), 3))


def svdvals(A: Tensor, *, driver: Any = None) -> Tensor:
    """Singular values of each matrix, descending: ``torch.linalg.svdvals(A)``."""
    A = _matrix_input(A, "svd")
    if driver is not None:
        raise RuntimeError("torch.linalg.svd: keyword argument `driver=` is only supported on CUDA inputs with "
                           "cuSOLVER backend.")
    if not A.requires_grad:
        return Tensor._make(B.svd(A._data, compute_uv=False))
    u, s, vh = B.svd(A._data, full_matrices=False)
    return F.SvdFactor.apply(A, factors=(u, s, vh), which=1)


def _svd_old(input: Tensor, some: builtins.bool = True, compute_uv: builtins.bool = True) -> svd_result:  # noqa: A002
    """torch.svd: (U, S, V) with A = U diag(S) V^T (reduced unless some=False)."""
    A = _matrix_input(input, "svd")
    if not compute_uv:  # PyTorch fills U and V with zeros then
        m, n = A.shape[-2:]
        z = A._data.dtype
        S = svdvals(A)
        return svd_result(Tensor._make(B.zeros(A.shape[:-2] + (m, m), z)), S,
                          Tensor._make(B.zeros(A.shape[:-2] + (n, n), z)))
    U, S, Vh = svd(A, full_matrices=not some)
    return svd_result(U, S, Vh.mT)


_QR_MODES = ("reduced", "complete", "r")


def qr(A: Tensor, mode: str = "reduced") -> linalg_qr:
    """(Q, R) with A = Q R, Q orthonormal columns, R upper-triangular; mode 'reduced', 'complete' or 'r'."""
    A = _matrix_input(A, "qr")
    if mode not in _QR_MODES:
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of 'reduced' (default), "
                           f"'r', or 'complete'")
    m, n = A.shape[-2:]
    if mode == "r":
        R = Tensor._make(B.qr(A._data, mode="r"))
        if A.requires_grad:
            R = _NoGrad.apply(A, out=R._data, msg="The derivative of linalg.qr depends on Q, which is not computed when "
                              "mode='r'. Please use linalg.qr(A, mode='reduced') if you are going to differentiate "
                              "through linalg.qr.")
        return linalg_qr(Tensor._make(B.zeros((0,), A._data.dtype)), R)
    q, r = B.qr(A._data, mode=mode)
    if mode == "complete" and m > n and A.requires_grad:
        msg = "The QR decomposition is not differentiable when mode='complete' and nrows > ncols."
        return linalg_qr(_NoGrad.apply(A, out=q, msg=msg), _NoGrad.apply(A, out=r, msg=msg))
    return linalg_qr(*_factors(F.QrFactor, A, (q, r), 2))


def _qr_old(input: Tensor, some: builtins.bool = True) -> qr_result:  # noqa: A002
    """torch.qr: (Q, R), reduced unless some=False."""
    warnings.warn("torch.qr is deprecated in favor of torch.linalg.qr and will be removed in a future PyTorch "
                  "release.\nThe boolean parameter 'some' has been replaced with a string parameter 'mode'.\n"
                  "Q, R = torch.qr(A, some)\nshould be replaced with\n"
                  "Q, R = torch.linalg.qr(A, 'reduced' if some else 'complete')", UserWarning, stacklevel=3)
    return qr_result(*qr(input, "reduced" if some else "complete"))


def eigh(A: Tensor, UPLO: str = "L") -> linalg_eigh:
    """(eigenvalues ascending, eigenvectors as columns) of symmetric A, read from its UPLO triangle."""
    A = _square(A, "eigh")
    uplo = _uplo(UPLO)
    L, V = B.eigh(A._data, UPLO=uplo)
    return linalg_eigh(*_factors(F.EighFactor, A, (L, V), 2, uplo=uplo))


# ---- linear algebra: the pseudo-inverse (the SVD with small singular values dropped) ------------------
def _tolerance(S: Tensor, m: builtins.int, n: builtins.int, atol: Any, rtol: Any) -> Tensor:
    """max(atol, rtol * S_max) per matrix as (..., 1), with PyTorch's default rtol = eps * max(m, n)."""
    if rtol is None:
        rtol = B.finfo(S._data.dtype).eps * builtins.max(m, n) if atol is None or _is_zero(atol) else 0.0
    smax = S.detach().amax(-1, keepdim=True) if S.shape[-1] else S.detach().sum(-1, keepdim=True)
    tol = smax * _as_tensor(rtol, S).unsqueeze(-1) if isinstance(rtol, Tensor) else smax * rtol
    if atol is not None:
        at = _as_tensor(atol, S)
        tol = tol.maximum(at.unsqueeze(-1) if at.ndim else at)
    return tol


def _is_zero(x: Any) -> builtins.bool:
    return not isinstance(x, Tensor) and x == 0


def pinv(A: Tensor, *, atol: Any = None, rtol: Any = None, hermitian: builtins.bool = False) -> Tensor:
    """Moore-Penrose pseudo-inverse from the SVD (eigh when hermitian), dropping values <= tolerance."""
    A = _as_tensor(A)
    if A.ndim < 2 or A._data.dtype.kind != "f":
        kind = _SCALAR_TYPE.get(A.dtype.name, A.dtype.name.capitalize())
        raise RuntimeError(f"linalg.pinv({kind}{{{list(A.shape)}}}): expected a tensor with 2 or more dimensions "
                           f"of float, double, cfloat or cdouble types")
    m, n = A.shape[-2:]
    if hermitian:
        L, V = eigh(A)
        tol = _tolerance(L.abs(), m, n, atol, rtol)
        keep = L.abs() > tol
        Linv = where(keep, 1.0 / where(keep, L, 1.0), 0.0)
        return (V * Linv.unsqueeze(-2)) @ V.mT
    U, S, Vh = svd(A, full_matrices=False)
    tol = _tolerance(S, m, n, atol, rtol)
    keep = S > tol
    Sinv = where(keep, 1.0 / where(keep, S, 1.0), 0.0)  # (the inner where keeps 1/0 out of the gradient)
    return (Vh.mT * Sinv.unsqueeze(-2)) @ U.mT


# ---- linear algebra: powers and the exponential (Tensor ops, so they differentiate themselves) ------
def matrix_power(A: Tensor, n: builtins.int) -> Tensor:
    """A @ A @ ... (n times) by repeated squaring; n = 0 gives the identity, n < 0 powers of inv(A)."""
    A = _as_tensor(A)
    if A.ndim < 2 or A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"linalg.matrix_power: A must be batches of square matrices, but they are "
                           f"{A.shape[-2] if A.ndim > 1 else 1} by {A.shape[-1] if A.ndim else 1} matrices")
    if n == 0:
        eye = Tensor._make(B.eye(A.shape[-1], dtype=A._data.dtype))
        return eye.expand(A.shape).clone()
    if n < 0:
        A, n = inv(A), -n
    base = A
    while not n & 1:  # the lowest set bit of n starts the product (n > 0 here)
        base = base.matmul(base)
        n >>= 1
    result = base
    n >>= 1
    while n:
        base = base.matmul(base)
        if n & 1:
            result = result.matmul(base)
        n >>= 1
    return result


_EXP_TERMS = 18  # Taylor terms after scaling to ||A|| <= 1/2: 0.5^19 / 19! is far below float64's eps


def matrix_exp(A: Tensor) -> Tensor:
    """exp(A) = I + A + A^2/2! + ... by scaling and squaring of a Taylor polynomial (Tensor ops, so it
    differentiates itself).

    >>> torch.linalg.matrix_exp(torch.zeros(2, 2))
    tensor([[1., 0.],
            [0., 1.]])"""
    A = _square(A, "matrix_exp")
    n = A.shape[-1]
    eye = Tensor._make(B.eye(n, dtype=A._data.dtype))
    if n == 0 or A.numel() == 0:
        return A.clone()
    norm1 = builtins.float(B.xp.max(B.xp.sum(B.xp.abs(A._data), axis=-2))) if A.numel() else 0.0
    if not math.isfinite(norm1):
        s = 0
    else:
        s = builtins.max(0, math.ceil(math.log2(norm1 / 0.5))) if norm1 > 0.5 else 0
    X = A * (2.0 ** -s) if s else A
    # Horner: I + X (I + X/2 (I + X/3 (...)))
    out = eye + X / _EXP_TERMS
    for k in range(_EXP_TERMS - 1, 0, -1):
        out = eye + (X @ out) / k
    for _ in range(s):
        out = out @ out
    return out


# ---- linear algebra: vector and matrix norms (Tensor ops and the singular values) --------------------
def vector_norm(x: Tensor, ord: Any = 2, dim: Any = None, keepdim: builtins.bool = False, *,  # noqa: A002
                dtype: Any = None) -> Tensor:
    """(sum |x|^ord)^(1/ord) over ``dim`` (all elements by default); ord may be inf, -inf or 0."""
    x = _as_tensor(x)
    if dtype is not None:
        x = x.to(dtype)
    _floating_input(x, "vector_norm")
    if isinstance(ord, str):
        raise RuntimeError(f"linalg.vector_norm: ord must be a number, got {ord!r}")
    d = dim if dim is None or isinstance(dim, builtins.int) else tuple(dim)
    if ord < 0 and ord != -math.inf:
        return (x.abs() ** ord).sum(d, keepdim) ** (1.0 / ord)
    return x.norm(ord, d, keepdim)


_MATRIX_ORDS = ("fro", 1, -1, math.inf, -math.inf)


def matrix_norm(A: Tensor, ord: Any = "fro", dim: tuple[builtins.int, builtins.int] = (-2, -1),  # noqa: A002
                keepdim: builtins.bool = False, *, dtype: Any = None) -> Tensor:
    """Matrix norm over the two ``dim`` dims: 'fro', 1 / -1 (max / min column sum), inf / -inf (rows)."""
    A = _as_tensor(A)
    if dtype is not None:
        A = A.to(dtype)
    _floating_input(A, "matrix_norm")
    if A.ndim < 2:
        raise RuntimeError("linalg.matrix_norm: The input tensor A must have at least 2 dimensions.")
    if ord not in _MATRIX_ORDS and ord not in ("nuc", 2, -2):
        raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")
    d0, d1 = _dim(dim[0], A.ndim), _dim(dim[1], A.ndim)
    if ord in ("nuc", 2, -2):  # from the singular values of the matrices moved to the last two dims
        rest = [d for d in range(A.ndim) if d not in (d0, d1)]
        S = svdvals(A.permute(*rest, d0, d1))
        out = S.sum(-1) if ord == "nuc" else S.amax(-1) if ord == 2 else S.amin(-1)
        return out.unsqueeze(builtins.min(d0, d1)).unsqueeze(builtins.max(d0, d1)) if keepdim else out
    if ord == "fro":
        return vector_norm(A, 2, (d0, d1), keepdim)
    # 1: the largest column sum (sum over rows d0, then the max over d1); inf: the transpose of that
    inner, outer = (d0, d1) if ord in (1, -1) else (d1, d0)
    s = A.abs().sum(inner, keepdim=True)
    out = s.amax(outer, keepdim=True) if ord > 0 else s.amin(outer, keepdim=True)
    return out if keepdim else out.squeeze((d0, d1))


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
