"""Weight and spectral normalisation as parametrizations, as ``torch.nn.utils.parametrizations``.

>>> m = weight_norm(nn.Linear(4, 3)); sorted(m.state_dict())
['bias', 'parametrizations.weight.original0', 'parametrizations.weight.original1']
"""

from __future__ import annotations

import math
from typing import Any, TypeVar

from ... import backend as B
from ...grad_mode import no_grad
from ...linalg import solve
from ...random import randn
from ...tensor import Tensor, cat, eye
from .. import functional as F
from ..conv import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from ..module import Module
from . import parametrize
from .weight_norm import norm_except_dim

__all__ = ["orthogonal", "spectral_norm", "weight_norm"]

M = TypeVar("M", bound=Module)


class _WeightNorm(Module):
    """weight = g * v / ||v|| from ``original0`` (g) and ``original1`` (v)."""

    def __init__(self, dim: int | None = 0) -> None:
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g: Tensor, weight_v: Tensor) -> Tensor:
        return weight_v * (weight_g / norm_except_dim(weight_v, 2, self.dim))

    def right_inverse(self, weight: Tensor) -> tuple[Tensor, Tensor]:
        return norm_except_dim(weight, 2, self.dim), weight


def weight_norm(module: M, name: str = "weight", dim: int | None = 0) -> M:
    """Reparametrise ``module.<name>`` as ``g * v / ||v||`` (norm over every dim but ``dim``; None: all).

    >>> weight_norm(nn.Linear(4, 3)).parametrizations.weight.original0.shape
    lightgrad.Size([3, 1])
    """
    return parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)


class _SpectralNorm(Module):
    """weight / sigma, sigma the largest singular value estimated by power iteration (buffers _u, _v)."""

    def __init__(self, weight: Tensor, n_power_iterations: int = 1, dim: int = 0, eps: float = 1e-12) -> None:
        super().__init__()
        ndim = weight.ndim
        if dim >= ndim or dim < -ndim:
            raise IndexError(f"Dimension out of range (expected to be in range of [-{ndim}, {ndim - 1}] but got {dim})")
        if n_power_iterations <= 0:
            raise ValueError("Expected n_power_iterations to be positive, but "
                             f"got n_power_iterations={n_power_iterations}")
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            weight_mat = self._reshape_weight_to_matrix(weight)
            h, w = weight_mat.shape
            with no_grad():
                u = weight_mat.new_empty(h).normal_(0, 1)
                v = weight_mat.new_empty(w).normal_(0, 1)
            self.register_buffer("_u", F.normalize(u, dim=0, eps=self.eps))
            self.register_buffer("_v", F.normalize(v, dim=0, eps=self.eps))
            self._power_method(weight_mat, 15)

    def _reshape_weight_to_matrix(self, weight: Tensor) -> Tensor:
        if self.dim != 0:
            weight = weight.permute(self.dim, *(d for d in range(weight.ndim) if d != self.dim))
        return weight.flatten(1)

    def _power_method(self, weight_mat: Tensor, n_power_iterations: int) -> None:
        # in place, as PyTorch's ``out=``: the buffers keep their identity (and state-dict storage)
        with no_grad():
            for _ in range(n_power_iterations):
                parametrize._set(self._u, F.normalize(weight_mat.mv(self._v), dim=0, eps=self.eps))
                parametrize._set(self._v, F.normalize(weight_mat.mT.mv(self._u), dim=0, eps=self.eps))

    def forward(self, weight: Tensor) -> Tensor:
        if weight.ndim == 1:
            return F.normalize(weight, dim=0, eps=self.eps)
        weight_mat = self._reshape_weight_to_matrix(weight)
        if self.training:
            self._power_method(weight_mat, self.n_power_iterations)
        u, v = self._u.clone(), self._v.clone()
        sigma = (u * weight_mat.mv(v)).sum()
        return weight / sigma

    def right_inverse(self, value: Tensor) -> Tensor:
        return value


def spectral_norm(module: M, name: str = "weight", n_power_iterations: int = 1, eps: float = 1e-12,
                  dim: int | None = None) -> M:
    """Divide ``module.<name>`` by its spectral norm (power iteration, one step per training forward).

    >>> spectral_norm(nn.Linear(4, 3)).parametrizations.weight.original.shape
    lightgrad.Size([3, 4])
    """
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        dim = 1 if isinstance(module, (ConvTranspose1d, ConvTranspose2d, ConvTranspose3d)) else 0
    return parametrize.register_parametrization(module, name, _SpectralNorm(weight, n_power_iterations, dim, eps))


# ---- orthogonal --------------------------------------------------------------------------------

def _matrix_exp(a: Tensor) -> Tensor:
    """exp(A) of a (batch of) square matrices: scaling and squaring around a degree-18 Taylor
    polynomial (exact to rounding for ||A / 2^s|| <= 1/2); differentiable through its ops."""
    norm = float(a.detach().abs().sum(-2).amax().item()) if a.numel() else 0.0
    s = max(0, math.ceil(math.log2(norm)) + 1) if norm > 0 else 0
    b = a / (2.0 ** s)
    ident = eye(a.shape[-1], dtype=a.dtype).expand(*a.shape)
    out = ident
    for k in range(18, 0, -1):  # Horner: I + B/1 (I + B/2 (I + ... ))
        out = ident + (b @ out) / k
    for _ in range(s):
        out = out @ out
    return out


def _householder_product(a: Tensor, tau: Tensor) -> Tensor:
    """PyTorch's ``linalg.householder_product``: the first k columns of prod_i (I - tau_i v_i v_i^T),
    v_i the i-th column of ``a`` below the diagonal with a unit diagonal entry."""
    n, k = a.shape[-2], a.shape[-1]
    unit = eye(n, k, dtype=a.dtype)
    v = a.tril(-1) + unit  # (..., n, k)
    q = eye(n, dtype=a.dtype).expand(*a.shape[:-2], n, n)
    for i in reversed(range(k)):  # Q = H_0 H_1 ... H_{k-1}, applied from the right end
        vi = v[..., :, i:i + 1]  # (..., n, 1)
        q = q - (vi * tau[..., i:i + 1].unsqueeze(-1)) @ (vi.mT @ q)
    return q[..., :, :k]


def _make_orthogonal(a: Tensor) -> Tensor:
    """The Q of a = QR with R's diagonal positive (what PyTorch gets from geqrf), by modified
    Gram-Schmidt run twice (reorthogonalisation keeps it exact to rounding)."""
    cols: list[Tensor] = []
    for j in range(a.shape[-1]):
        v = a[..., :, j:j + 1]
        for _ in range(2):
            for q in cols:
                v = v - q * (q.mT @ v)
        cols.append(v / v.norm(dim=-2, keepdim=True))
    return cat(cols, -1)


def _is_orthogonal(q: Tensor) -> bool:
    n, k = q.shape[-2], q.shape[-1]
    eps = 10.0 * n * float(B.finfo(q._data.dtype).eps)
    ident = eye(k, dtype=q.dtype)
    # PyTorch's allclose(Q^T Q, I, atol=eps): |a - b| <= atol + rtol * |b| with rtol 1e-5
    return bool(((q.mT @ q) - ident).abs().le(ident * 1e-5 + eps).all().item())


class _Orthogonal(Module):
    """Q = base @ map(X): 'matrix_exp', 'cayley' or 'householder' of the stored X (PyTorch's trivialization)."""

    def __init__(self, weight: Tensor, orthogonal_map: str, *, use_trivialization: bool = True) -> None:
        super().__init__()
        self.shape = weight.shape
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, x: Tensor) -> Tensor:
        n, k = x.shape[-2], x.shape[-1]
        transposed = n < k
        if transposed:
            x = x.mT
            n, k = k, n
        if self.orthogonal_map in ("matrix_exp", "cayley"):
            x = x.tril()
            if n != k:
                x = cat([x, x.new_zeros(n, n - k).expand(*x.shape[:-2], n, n - k)], -1)
            a = x - x.mT
            if self.orthogonal_map == "matrix_exp":
                q = _matrix_exp(a)
            else:
                ident = eye(n, dtype=a.dtype)
                q = solve(ident - a * 0.5, ident + a * 0.5)
            if n != k:
                q = q[..., :k]
        else:
            a = x.tril(-1)
            tau = 2.0 / (1.0 + (a * a).sum(-2))
            q = _householder_product(a, tau)
            q = q * x.detach().diagonal(dim1=-2, dim2=-1).int().unsqueeze(-2).to(q.dtype)  # no gradient, as .int()
        if getattr(self, "base", None) is not None:
            q = self.base @ q
        return q.mT if transposed else q

    def right_inverse(self, q: Tensor) -> Any:
        if q.shape != self.shape:
            raise ValueError(f"Expected a matrix or batch of matrices of shape {self.shape}. Got a tensor of shape "
                             f"{q.shape}.")
        if "base" not in self._buffers:
            # PyTorch stores geqrf's reflectors here; there is no geqrf to reproduce them
            raise NotImplementedError("orthogonal(use_trivialization=False) is not supported by lightgrad")
        q_init = q
        n, k = q.shape[-2], q.shape[-1]
        if n < k:
            q = q.mT
            n, k = k, n
        with no_grad():
            if n == k:
                q = q.clone() if _is_orthogonal(q) else _make_orthogonal(q)
            else:
                q = _make_orthogonal(cat([q, randn(*q.shape[:-2], n, n - k, dtype=q.dtype)], -1))
            self.base = q
            # built whole: lightgrad's diagonal() is a copy, so PyTorch's diagonal().fill_(-1) would not write
            neg_id = -eye(q_init.shape[-2], q_init.shape[-1], dtype=q_init.dtype).expand(*q_init.shape).clone()
        return neg_id


def orthogonal(module: M, name: str = "weight", orthogonal_map: str | None = None, *,
               use_trivialization: bool = True) -> M:
    """Constrain ``module.<name>`` to orthogonal (semi-orthogonal) matrices, as PyTorch's.

    >>> w = orthogonal(nn.Linear(3, 3)).weight; bool(((w @ w.T) - lightgrad.eye(3)).abs().max() < 1e-5)
    True
    """
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if weight.ndim < 2:
        raise ValueError(f"Expected a matrix or batch of matrices. Got a tensor of {weight.ndim} dimensions.")
    if orthogonal_map is None:
        orthogonal_map = "matrix_exp" if weight.shape[-2] == weight.shape[-1] else "householder"
    if orthogonal_map not in ("matrix_exp", "cayley", "householder"):
        raise ValueError('orthogonal_map has to be one of "matrix_exp", "cayley", "householder". '
                         f"Got: {orthogonal_map}")
    if not use_trivialization:
        raise NotImplementedError("orthogonal(use_trivialization=False) is not supported by lightgrad")
    orth = _Orthogonal(weight, orthogonal_map, use_trivialization=use_trivialization)
    return parametrize.register_parametrization(module, name, orth, unsafe=True)
