"""The multivariate normal distribution, parameterized by a Cholesky factor underneath."""

from __future__ import annotations

import math
from typing import Any

import lightgrad as lg
from lightgrad import linalg
from lightgrad.tensor import Size, Tensor

from . import constraints
from . import utils as _u
from .distribution import Distribution
from .utils import _size, lazy_property


def _batch_mv(bmat: Tensor, bvec: Tensor) -> Tensor:
    """Matrix-vector product over broadcast batch dims: (..., n, n) x (..., n) -> (..., n)."""
    return bmat.matmul(bvec.unsqueeze(-1)).squeeze(-1)


def _batch_mahalanobis(bL: Tensor, bx: Tensor) -> Tensor:
    """``x^T (L L^T)^-1 x`` = ``|L^-1 x|^2`` over broadcast batch dims of ``bL`` (..., n, n) and ``bx`` (..., n)."""
    n = bx.shape[-1]
    batch = lg.broadcast_shapes(tuple(bL.shape[:-2]), tuple(bx.shape[:-1]))
    # a general solve of tril(L) is solve_triangular's answer and gradient (which ignore the upper part)
    z = linalg.solve(bL.tril().expand(tuple(batch) + (n, n)), bx.expand(tuple(batch) + (n,)).unsqueeze(-1))
    return z.squeeze(-1).pow(2).sum(-1)


def _precision_to_scale_tril(P: Tensor) -> Tensor:
    """The lower Cholesky factor of ``P^-1``, from the Cholesky factor of P with rows and columns reversed."""
    Lf = linalg.cholesky(P.flip((-2, -1)))
    L_inv = Lf.flip((-2, -1)).mT
    eye = lg.eye(P.shape[-1], dtype=P.dtype)
    return linalg.solve(L_inv, eye.expand(tuple(L_inv.shape)))


class MultivariateNormal(Distribution):
    """The normal distribution over vectors, from ``loc`` and one of ``covariance_matrix``,
    ``precision_matrix`` or ``scale_tril``: ``MultivariateNormal(torch.zeros(2), torch.eye(2)).sample()``."""

    arg_constraints = {"loc": constraints.real_vector, "covariance_matrix": constraints.positive_definite,
                       "precision_matrix": constraints.positive_definite, "scale_tril": constraints.lower_cholesky}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc: Tensor, covariance_matrix: Tensor | None = None, precision_matrix: Tensor | None = None,
                 scale_tril: Tensor | None = None, validate_args: bool | None = None) -> None:
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        if (covariance_matrix is not None) + (scale_tril is not None) + (precision_matrix is not None) != 1:
            raise ValueError("Exactly one of covariance_matrix or precision_matrix or scale_tril may be specified.")
        if scale_tril is not None:
            if scale_tril.dim() < 2:
                raise ValueError("scale_tril matrix must be at least two-dimensional, "
                                 "with optional leading batch dimensions")
            batch_shape = Size(lg.broadcast_shapes(tuple(scale_tril.shape[:-2]), tuple(loc.shape[:-1])))
            self.scale_tril = scale_tril.expand(tuple(batch_shape) + (-1, -1))
        elif covariance_matrix is not None:
            if covariance_matrix.dim() < 2:
                raise ValueError("covariance_matrix must be at least two-dimensional, "
                                 "with optional leading batch dimensions")
            batch_shape = Size(lg.broadcast_shapes(tuple(covariance_matrix.shape[:-2]), tuple(loc.shape[:-1])))
            self.covariance_matrix = covariance_matrix.expand(tuple(batch_shape) + (-1, -1))
        else:
            assert precision_matrix is not None  # (exactly one is given, checked above)
            if precision_matrix.dim() < 2:
                raise ValueError("precision_matrix must be at least two-dimensional, "
                                 "with optional leading batch dimensions")
            batch_shape = Size(lg.broadcast_shapes(tuple(precision_matrix.shape[:-2]), tuple(loc.shape[:-1])))
            self.precision_matrix = precision_matrix.expand(tuple(batch_shape) + (-1, -1))
        self.loc = loc.expand(tuple(batch_shape) + (-1,))
        super().__init__(batch_shape, self.loc.shape[-1:], validate_args=validate_args)
        if scale_tril is not None:
            self._unbroadcasted_scale_tril = scale_tril
        elif covariance_matrix is not None:
            self._unbroadcasted_scale_tril = linalg.cholesky(covariance_matrix)
        else:
            assert precision_matrix is not None
            self._unbroadcasted_scale_tril = _precision_to_scale_tril(precision_matrix)

    def expand(self, batch_shape: Any, _instance: Any = None) -> MultivariateNormal:
        """A distribution of this kind with its parameters broadcast to ``batch_shape``."""
        new = self._get_checked_instance(MultivariateNormal, _instance)
        batch_shape = _size(batch_shape)
        loc_shape = tuple(batch_shape) + tuple(self.event_shape)
        cov_shape = loc_shape + tuple(self.event_shape)
        new.loc = self.loc.expand(loc_shape)
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril
        for name in ("covariance_matrix", "scale_tril", "precision_matrix"):
            if name in self.__dict__:
                setattr(new, name, self.__dict__[name].expand(cov_shape))
        super(MultivariateNormal, new).__init__(batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _matrix_shape(self) -> tuple[int, ...]:
        return tuple(self._batch_shape) + tuple(self._event_shape) + tuple(self._event_shape)

    @lazy_property
    def scale_tril(self) -> Tensor:
        return self._unbroadcasted_scale_tril.expand(self._matrix_shape())

    @lazy_property
    def covariance_matrix(self) -> Tensor:
        L = self._unbroadcasted_scale_tril
        return L.matmul(L.mT).expand(self._matrix_shape())

    @lazy_property
    def precision_matrix(self) -> Tensor:
        L_inv = linalg.inv(self._unbroadcasted_scale_tril)
        return L_inv.mT.matmul(L_inv).expand(self._matrix_shape())

    @property
    def mean(self) -> Tensor:
        """``loc``."""
        return self.loc

    @property
    def mode(self) -> Tensor:
        """``loc``."""
        return self.loc

    @property
    def variance(self) -> Tensor:
        """The diagonal of the covariance matrix."""
        return self._unbroadcasted_scale_tril.pow(2).sum(-1).expand(tuple(self._batch_shape + self._event_shape))

    def rsample(self, sample_shape: Any = Size(())) -> Tensor:
        """Draw samples of shape ``sample_shape + batch_shape + event_shape`` that carry gradients to the parameters."""
        eps = _u._standard_normal(self._extended_shape(sample_shape), self.loc.dtype)
        return self.loc + _batch_mv(self._unbroadcasted_scale_tril, eps)

    def _half_log_det(self) -> Tensor:
        return self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)

    def log_prob(self, value: Tensor) -> Tensor:
        """The log of the density (or mass) at ``value``."""
        if self._validate_args:
            self._validate_sample(value)
        M = _batch_mahalanobis(self._unbroadcasted_scale_tril, value - self.loc)
        return -0.5 * (self._event_shape[0] * math.log(2 * math.pi) + M) - self._half_log_det()

    def entropy(self) -> Tensor:
        """The entropy, per batch element."""
        H = 0.5 * self._event_shape[0] * (1.0 + math.log(2 * math.pi)) + self._half_log_det()
        return H if len(self._batch_shape) == 0 else H.expand(tuple(self._batch_shape))
