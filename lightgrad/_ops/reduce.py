"""Reductions: sums, means and moments, extremes, norms, counts, statistics; scans and softmax along a dim."""

from __future__ import annotations

import builtins
import math
from collections import namedtuple
from typing import TYPE_CHECKING, Any

from .. import backend as B
from .. import dtypes as D
from .common import _SCALAR_TYPE, Number, _dim, _dims, _floating, _raw, _shape_arg, return_types
from .elementwise import where
from .linalg import matrix_norm

if TYPE_CHECKING:  # bound at run time by tensor.py, once Tensor exists (see _ops/__init__.py)
    from .. import function as F
    from ..tensor import Tensor
    from .common import TensorSelf


class ReduceMixin:
    """Tensor's reductions, and its scans and softmax along a dim."""

    __slots__ = ()

    # ---- sums, means and moments -----------------------------------------------------------------
    def sum(self: TensorSelf, dim: Any = None, keepdim: builtins.bool = False, *, dtype: Any = None) -> Tensor:
        """Sum over ``dim`` (int, tuple or None for all); integers and bools sum as int64."""
        x = self
        if dtype is not None:
            x = x.to(dtype)
        elif x._arr.dtype.kind in "biu":
            x = x.to(D.int64)
        return F.Sum.apply(x, None if dim is None else _dims(dim, x._arr.ndim), keepdim)

    def nansum(self: TensorSelf, dim: Any = None, keepdim: builtins.bool = False, *, dtype: Any = None) -> Tensor:
        """sum treating NaN as zero (which gets no gradient)."""
        x = where(self.isnan(), 0.0, self) if D.is_inexact(self._data.dtype) else self
        return x.sum(dim, keepdim, dtype=dtype)

    def mean(self: TensorSelf, dim: Any = None, keepdim: builtins.bool = False, *, dtype: Any = None) -> Tensor:
        """The mean over ``dim`` (all elements if None), of a floating-point or complex tensor.

        >>> lightgrad.tensor([[1.0, 2.0], [3.0, 4.0]]).mean(dim=0)
        tensor([2., 3.])
        """
        x = self.to(dtype) if dtype is not None else self
        if not D.is_inexact(x._data.dtype):
            raise RuntimeError("mean(): could not infer output dtype. Input dtype must be either a "
                               f"floating point or complex dtype. Got: {D.SCALAR_NAMES[x.dtype.name]}")
        axes = _dims(dim, x.ndim)
        n = x.numel() if axes is None else math.prod(x.shape[a] for a in axes)
        if not n:
            return x.sum(dim, keepdim) * float("nan")
        return F.Mean.apply(x, None if dim is None else _dims(dim, x._data.ndim), keepdim, n)

    def nanmean(self: TensorSelf, dim: Any = None, keepdim: builtins.bool = False, *, dtype: Any = None) -> Tensor:
        """mean over the elements that are not NaN."""
        x = self.to(dtype) if dtype is not None else self
        if not D.is_inexact(x._data.dtype):
            raise RuntimeError("nanmean(): expected input to have floating point or complex dtype but got "
                               f"{D.SCALAR_NAMES[x.dtype.name]}")
        return x.nansum(dim, keepdim) / (~x.isnan()).sum(dim, keepdim)

    def var(self: TensorSelf, dim: Any = None, unbiased: builtins.bool | None = None, keepdim: builtins.bool = False, *,
            correction: builtins.float | None = None) -> Tensor:
        """Variance with Bessel's ``correction`` (default 1), as ``torch.var``."""
        if isinstance(dim, bool):  # legacy torch.var(x, unbiased)
            dim, unbiased = None, dim
        c = correction if correction is not None else (1 if unbiased is None or unbiased else 0)
        axes = _dims(dim, self.ndim)
        n = self.numel() if axes is None else math.prod(self.shape[a] for a in axes)
        d = self - self.mean(dim, keepdim=True)
        return (d * d).sum(dim, keepdim) / max(n - c, 0)

    def std(self: TensorSelf, dim: Any = None, unbiased: builtins.bool | None = None, keepdim: builtins.bool = False, *,
            correction: builtins.float | None = None) -> Tensor:
        """Standard deviation with Bessel's ``correction`` (default 1); its gradient is 0 where it is 0."""
        return F.Std.apply(self.var(dim, unbiased, keepdim, correction=correction))

    def prod(self: TensorSelf, dim: builtins.int | None = None, keepdim: builtins.bool = False, *, dtype: Any = None) -> Tensor:
        """The product over ``dim`` (all elements if None); integers multiply as int64."""
        x = self.to(dtype) if dtype is not None else (self.to(D.int64) if self._data.dtype.kind in "biu" else self)
        return F.Prod.apply(x, axes=_dims(dim, x.ndim), keepdim=keepdim)

    def logsumexp(self: TensorSelf, dim: Any, keepdim: builtins.bool = False) -> Tensor:
        """log(sum(exp(x))) computed stably: the max is taken out first (and has no gradient)."""
        if not self._data.size:  # nothing to overflow, and no max to take out: log(0) = -inf
            return self.exp().sum(dim, keepdim).log()
        m = self.detach().amax(dim, keepdim=True)
        m = m.masked_fill(m.isinf(), 0)
        out = (self - m).exp().sum(dim, keepdim=True).log() + m
        return out if keepdim else out.squeeze(_dims(dim, self.ndim))

    def sum_to_size(self: TensorSelf, *size: Any) -> Tensor:
        """Sum broadcast dims away to reach ``size``: ``ones(2, 3).sum_to_size(1, 3)`` is ``[[2, 2, 2]]``."""
        s = _shape_arg(size)
        n = len(s)
        if n > self.ndim or builtins.any(t != 1 and t != x for t, x in zip(s, self.shape[self.ndim - n:])):
            raise RuntimeError(f"size {{{list(s)}}} is not expandable to size {{{list(self.shape)}}}.")
        lead = tuple(range(self.ndim - n))
        keep = tuple(i for i, t in enumerate(s) if t == 1 and self.shape[self.ndim - n + i] != 1)
        r = self.sum(lead) if lead else self
        return r.sum(keep, keepdim=True) if keep else r

    # ---- extremes --------------------------------------------------------------------------------
    def amax(self: TensorSelf, dim: Any = (), keepdim: builtins.bool = False) -> Tensor:
        """The maximum over ``dim`` (all dims if empty); the gradient is shared evenly among ties."""
        axes = _dims(dim, self.ndim) if dim != () else None
        _check_nonempty(self, dim, "amax")
        return F.Amax.apply(self, axes=axes, keepdim=keepdim)

    def amin(self: TensorSelf, dim: Any = (), keepdim: builtins.bool = False) -> Tensor:
        """The minimum over ``dim`` (all dims if empty); the gradient is shared evenly among ties."""
        axes = _dims(dim, self.ndim) if dim != () else None
        _check_nonempty(self, dim, "amin")
        return F.Amin.apply(self, axes=axes, keepdim=keepdim)

    def aminmax(self: TensorSelf, *, dim: builtins.int | None = None, keepdim: builtins.bool = False) -> Any:
        """(min, max) over ``dim`` (all elements by default), as amin and amax."""
        dims = () if dim is None else dim
        _check_nonempty(self, dim, "aminmax")
        return return_types.aminmax(self.amin(dims, keepdim), self.amax(dims, keepdim))

    def max(self: TensorSelf, dim: Any = None, keepdim: builtins.bool = False) -> Any:
        """``x.max()`` the largest value; ``x.max(dim)`` (values, indices); ``x.max(other)``."""
        return self._extreme(dim, keepdim, "max")

    def min(self: TensorSelf, dim: Any = None, keepdim: builtins.bool = False) -> Any:
        """``x.min()`` the smallest value; ``x.min(dim)`` (values, indices); ``x.min(other)``."""
        return self._extreme(dim, keepdim, "min")

    def _extreme(self: TensorSelf, dim: Any, keepdim: builtins.bool, name: str) -> Any:
        """max or min (``name``): elementwise against a Tensor, over everything, or along ``dim``."""
        if isinstance(dim, Tensor):
            return self.maximum(dim) if name == "max" else self.minimum(dim)
        D.check_bare_unsigned(f"{name}_all" if dim is None else f"{name}_cpu", self._arr.dtype)
        if dim is None:
            _check_nonempty(self, None, name)
            return self.amax() if name == "max" else self.amin()
        return self._extreme_dim(dim, keepdim, B.argmax if name == "max" else B.argmin, name)

    def _extreme_dim(self: TensorSelf, dim: builtins.int, keepdim: builtins.bool, arg: Any, name: str) -> Any:
        d = _dim(dim, self.ndim)
        x = self if self.ndim else self.reshape(1)
        _check_nonempty(x, d, name)
        idx = arg(x._data, axis=d)
        vals = F.MaxDim.apply(x, dim=d, keepdim=keepdim or not self.ndim, idx=idx)
        ind = Tensor._make(B.expand_dims(idx, d) if keepdim else idx)
        if not self.ndim:
            vals, ind = vals.reshape(()), ind.reshape(())
        return values_indices(vals, ind)

    def argmax(self: TensorSelf, dim: builtins.int | None = None, keepdim: builtins.bool = False) -> Tensor:
        """The index of the largest value (of the flattened tensor if dim is None; the first among ties).

        >>> lightgrad.tensor([[1, 5], [7, 2]]).argmax(dim=1)
        tensor([1, 0])
        """
        return self._arg_extreme(dim, keepdim, B.argmax, "argmax")

    def argmin(self: TensorSelf, dim: builtins.int | None = None, keepdim: builtins.bool = False) -> Tensor:
        """The index of the smallest value (of the flattened tensor if dim is None; the first among ties)."""
        return self._arg_extreme(dim, keepdim, B.argmin, "argmin")

    def _arg_extreme(self: TensorSelf, dim: builtins.int | None, keepdim: builtins.bool, arg: Any, name: str) -> Tensor:
        D.check_bare_unsigned(f"{name}_cpu", self._arr.dtype)
        _check_nonempty(self, dim, name)
        if dim is None:  # (the flat index; keepdim keeps every dim, as size 1)
            flat = B.asarray(arg(self._data), B.xp.int64)
            return Tensor._make(flat.reshape((1,) * self.ndim) if keepdim else flat)
        return Tensor._make(arg(self._data, axis=_dim(dim, self.ndim), keepdims=keepdim))

    # ---- logical and counting --------------------------------------------------------------------
    def all(self: TensorSelf, dim: Any = None, keepdim: builtins.bool = False) -> Tensor:
        """True where every element over ``dim`` is nonzero (all elements if None), as a bool tensor."""
        return Tensor._make(B.xp.all(self._data, axis=_dims(dim, self.ndim), keepdims=keepdim))

    def any(self: TensorSelf, dim: Any = None, keepdim: builtins.bool = False) -> Tensor:
        """True where any element over ``dim`` is nonzero (all elements if None), as a bool tensor."""
        return Tensor._make(B.xp.any(self._data, axis=_dims(dim, self.ndim), keepdims=keepdim))

    def count_nonzero(self: TensorSelf, dim: Any = None) -> Tensor:
        """The number of nonzero elements over ``dim`` (all elements if None), as int64."""
        D.check_bare_unsigned("nonzero_count_cpu", self._arr.dtype)
        return Tensor._make(B.asarray(B.xp.count_nonzero(self._data, axis=_dims(dim, self.ndim)), B.xp.int64))

    def bincount(self: TensorSelf, weights: Tensor | None = None, minlength: builtins.int = 0) -> Tensor:
        """Counts of each non-negative integer (summed weights when given): [0, 2, 2] gives [1, 0, 2]."""
        x = self._data
        if x.dtype.kind not in "iu" or x.dtype == B.xp.bool_:
            raise NotImplementedError(f'"bincount_cpu" not implemented for \'{self.dtype.name.capitalize()}\'')
        if x.ndim != 1 or (x.size and x.min() < 0):
            raise RuntimeError(f"bincount only supports 1-d non-negative integral inputs (got {x.ndim}-d, "
                               f"min {x.min() if x.size else None})")
        if weights is not None and tuple(weights.shape) != tuple(self.shape):
            raise RuntimeError(f"weights should be 1-d and have the same length as input: got {list(weights.shape)} "
                               f"for input {list(self.shape)}")
        w = None if weights is None else _raw(weights)
        out = B.bincount(x, w, minlength)
        if w is None:
            return Tensor._make(out.astype(B.xp.int64))
        return Tensor._make(out.astype(w.dtype if w.dtype.kind == "f" else B.xp.float64))

    def histc(self: TensorSelf, bins: builtins.int = 100, min: Number = 0, max: Number = 0) -> Tensor:  # noqa: A002
        """Histogram of ``bins`` equal bins over [min, max] (the data's range when both are 0)."""
        if not D.is_floating(self._data.dtype):
            raise RuntimeError(f"torch.histc: input tensor and bins tensors should have the same dtype, "
                               f"expected a floating point input, got {self.dtype.name.capitalize()}")
        if bins <= 0:
            raise RuntimeError(f"torch.histc(): bins must be > 0, but got {bins} for dimension 0")
        lo, hi = builtins.float(min), builtins.float(max)
        if lo == hi and self.numel():
            lo, hi = builtins.float(self._data.min()), builtins.float(self._data.max())
        if lo == hi:
            lo, hi = lo - 1, hi + 1
        if lo > hi:
            raise RuntimeError(f"torch.histc(): max must be larger than min, got min {lo} and max {hi}")
        counts, _ = B.histogram(self._data, bins, (lo, hi))
        return Tensor._make(counts.astype(self._data.dtype))

    # ---- norms -----------------------------------------------------------------------------------
    def norm(self: TensorSelf, p: Any = "fro", dim: Any = None, keepdim: builtins.bool = False) -> Tensor:
        """Vector p-norm over ``dim`` (all elements by default); 'fro' is the 2-norm."""
        x = _floating(self)
        if p == "nuc":  # the sum of singular values of the matrices in the last two dims (or ``dim``)
            if dim is None and x.ndim != 2:
                raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got {' '.join(map(str, range(x.ndim)))}")
            return matrix_norm(x, "nuc", (-2, -1) if dim is None else tuple(dim), keepdim)
        if p in ("fro", 2, 2.0):
            s = (x * x).sum(dim, keepdim)
            # sqrt'(0) is infinite; PyTorch's norm takes the subgradient 0 there
            return where(s == 0, s, s.clamp(min=B.finfo(x._data.dtype).tiny).sqrt())
        if p in (math.inf, "inf", -math.inf, "-inf"):
            sign = "-" if p in (-math.inf, "-inf") else ""
            if not x._data.size:  # the max (or min) of nothing: PyTorch's words, not amax's
                if dim is None:
                    raise RuntimeError(f"linalg.vector_norm cannot compute the {sign}inf norm on an empty tensor "
                                       "because the operation does not have an identity")
                empty = [d for d in _dims(dim, x.ndim) or () if not x.shape[d]]
                if empty:
                    raise RuntimeError(f"linalg.vector_norm cannot compute the {sign}inf norm on the dimension "
                                       f"{empty[0]}because this dimension is empty and the operation does not "
                                       "have an identity")
            ext = x.abs().amin if sign else x.abs().amax
            return ext(dim if dim is not None else (), keepdim)
        if p == 1:
            return x.abs().sum(dim, keepdim)
        if p == 0:
            return (x != 0).to(x.dtype).sum(dim, keepdim)
        s = (x.abs() ** p).sum(dim, keepdim)
        # (s ** (1/p))' is infinite at s == 0 (a zero vector): PyTorch takes the subgradient 0 there
        return where(s == 0, s, s.clamp(min=B.finfo(x._data.dtype).tiny) ** (1.0 / p))

    def dist(self: TensorSelf, other: Any, p: Number = 2) -> Tensor:
        """The p-norm of ``self - other``: ``tensor([3.]).dist(tensor([0.]))`` is ``tensor(3.)``."""
        return (self - other).norm(p)

    def renorm(self: TensorSelf, p: Number, dim: builtins.int, maxnorm: Number) -> Tensor:
        """Each slice along ``dim`` scaled down to p-norm ``maxnorm`` where its norm exceeds it."""
        if not D.is_floating(self._data.dtype):
            raise RuntimeError(f"renorm: expected a floating point tensor, got {self.dtype}")
        if p <= 0:
            raise RuntimeError(f"renorm: non-positive-norm not supported, got p = {p}")
        if maxnorm < 0:
            raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm}")
        if self.ndim < 2:
            raise RuntimeError(f"renorm: input needs at least 2 dimensions, got {self.ndim} dimensions")
        d = _dim(dim, self.ndim)
        others = tuple(i for i in range(self.ndim) if i != d)
        norm = self.norm(p, others, keepdim=True) if others else self.abs()
        # PyTorch's factor: maxnorm / (norm + 1e-7) where the norm exceeds maxnorm, else 1
        return self * where(norm > maxnorm, maxnorm / (norm + 1e-7), 1.0).to(self.dtype)

    # ---- statistics ------------------------------------------------------------------------------
    def cov(self: TensorSelf, *, correction: builtins.int = 1, fweights: Tensor | None = None,
            aweights: Tensor | None = None) -> Tensor:
        """Covariance of the variables in rows, observations in columns (a 1-D input is one variable)."""
        if self.ndim > 2:
            raise RuntimeError(f"cov(): expected input to have two or fewer dimensions but got an input with "
                               f"{self.ndim} dimensions")
        x = self if self.ndim == 2 else self.reshape(1, -1)
        if not D.is_floating(x._data.dtype):
            x = x.to(D.get_default_dtype())
        n = x.shape[1]
        w = fweights
        if fweights is not None:
            if fweights._data.dtype.kind not in "iu":
                raise RuntimeError(f"cov(): expected fweights to have integral dtype but got fweights with "
                                   f"{fweights.dtype.name.capitalize()} dtype")
            if fweights.ndim > 1:
                raise RuntimeError(f"cov(): expected fweights to have one or fewer dimensions but got fweights "
                                   f"with {fweights.ndim} dimensions")
            if fweights.numel() != n:
                raise RuntimeError(f"cov(): expected fweights to have the same numel as there are observations "
                                   f"in the input but got {fweights.numel()} != {n}")
        if aweights is not None:
            if aweights._data.dtype.kind != "f":
                raise RuntimeError(f"cov(): expected aweights to have floating point dtype but got aweights with "
                                   f"{aweights.dtype.name.capitalize()} dtype")
            if aweights.ndim > 1:
                raise RuntimeError(f"cov(): expected aweights to have one or fewer dimensions but got aweights "
                                   f"with {aweights.ndim} dimensions")
            if aweights.numel() != n:
                raise RuntimeError(f"cov(): expected aweights to have the same numel as there are observations "
                                   f"in the input but got {aweights.numel()} != {n}")
            w = aweights if w is None else w * aweights
        if w is None:
            w_sum: Any = n
            avg = x.mean(1)
        else:
            w = w.to(x.dtype)
            w_sum = w.sum()
            avg = (x * w).sum(1) / w_sum
        if w is not None and aweights is not None and correction != 0:
            norm = w_sum - correction * (w * aweights.to(x.dtype)).sum() / w_sum
        else:
            norm = w_sum - correction
        norm = norm.clamp_min(0) if isinstance(norm, Tensor) else builtins.max(norm, 0)
        xc = x - avg.unsqueeze(1)
        c = xc @ (xc if w is None else xc * w).t()
        return (c / norm).squeeze()

    def corrcoef(self: TensorSelf) -> Tensor:
        """Pearson correlation coefficients of the variables in rows (see ``cov``)."""
        c = self.cov()
        if c.ndim == 0:
            return c / c
        sd = c.diagonal().sqrt()
        c = c / sd.unsqueeze(1) / sd.unsqueeze(0)
        return c.clamp(-1, 1)

    # ---- along a dim: scans and softmax ----------------------------------------------------------
    def _along(self: TensorSelf, dim: builtins.int) -> tuple[Tensor, builtins.int]:
        """self (a 0-d tensor as shape (1,)) and ``dim`` as a non-negative axis."""
        d = _dim(dim, self.ndim)
        return (self if self.ndim else self.reshape(1)), d

    def cumsum(self: TensorSelf, dim: builtins.int, *, dtype: Any = None) -> Tensor:
        """Running sum along ``dim``; integers and bools add as int64.

        >>> lightgrad.tensor([1, 2, 3]).cumsum(0)
        tensor([1, 3, 6])
        """
        x = self.to(dtype) if dtype is not None else (self.to(D.int64) if self._data.dtype.kind in "biu" else self)
        y, d = x._along(dim)
        out = F.Cumsum.apply(y, dim=d)
        return out if x.ndim else out.reshape(())

    def cumprod(self: TensorSelf, dim: builtins.int, *, dtype: Any = None) -> Tensor:
        """Running product along ``dim``; integers and bools multiply as int64: [1, 2, 3] gives [1, 2, 6]."""
        x = self.to(dtype) if dtype is not None else (self.to(D.int64) if self._data.dtype.kind in "biu" else self)
        y, d = x._along(dim)
        out = F.Cumprod.apply(y, dim=d)
        return out if x.ndim else out.reshape(())

    def logcumsumexp(self: TensorSelf, dim: builtins.int) -> Tensor:
        """log(cumsum(exp(x))) along ``dim``, without overflow."""
        x, d = _floating(self)._along(dim)
        out = F.Logcumsumexp.apply(x, dim=d)
        return out if self.ndim else out.reshape(())

    def softmax(self: TensorSelf, dim: builtins.int, dtype: Any = None) -> Tensor:
        """exp(x) / exp(x).sum(dim), computed stably: the values along ``dim`` become probabilities.

        >>> lightgrad.tensor([0.0, 0.0]).softmax(dim=0)
        tensor([0.5000, 0.5000])
        """
        return self._softmax(F.Softmax, "softmax", dim, dtype)

    def log_softmax(self: TensorSelf, dim: builtins.int, dtype: Any = None) -> Tensor:
        """log(softmax(x, dim)), computed stably (x - logsumexp(x, dim))."""
        return self._softmax(F.LogSoftmax, "log_softmax", dim, dtype)

    def _softmax(self: TensorSelf, fn: Any, name: str, dim: builtins.int, dtype: Any) -> Tensor:
        """softmax or log_softmax in ``dtype``: a 0-d tensor along dim 0 or -1 is one of one element;
        integers have no kernel in PyTorch (pass a float ``dtype``)."""
        x = self.to(dtype) if dtype is not None else self
        y, d = x._along(dim)
        if not D.is_floating(y._data.dtype):
            if y._data.size:
                kernel = f"{name}_lastdim_kernel_impl" if d == y.ndim - 1 else f"{name}_kernel_impl"
                raise NotImplementedError(f"\"{kernel}\" not implemented for '{_SCALAR_TYPE[x.dtype.name]}'")
            return x.clone()
        out = fn.apply(y, dim=d)
        return out if x.ndim else out.reshape(())


# ---- free functions ------------------------------------------------------------------------------
def std_mean(input: Tensor, dim: Any = None, unbiased: builtins.bool | None = None,  # noqa: A002
             keepdim: builtins.bool = False, *, correction: builtins.float | None = None) -> tuple[Tensor, Tensor]:
    """(std, mean) over ``dim``, as two reductions: ``std_mean(x, 0)``."""
    if isinstance(dim, bool):  # legacy std_mean(x, unbiased)
        dim, unbiased = None, dim
    return (input.std(dim, unbiased, keepdim, correction=correction), input.mean(dim, keepdim))


def var_mean(input: Tensor, dim: Any = None, unbiased: builtins.bool | None = None,  # noqa: A002
             keepdim: builtins.bool = False, *, correction: builtins.float | None = None) -> tuple[Tensor, Tensor]:
    """(var, mean) over ``dim``: ``var_mean(x, 0)``."""
    if isinstance(dim, bool):
        dim, unbiased = None, dim
    return (input.var(dim, unbiased, keepdim, correction=correction), input.mean(dim, keepdim))


def _trapezoid_parts(y: Tensor, x: Any, dx: Any, dim: builtins.int) -> tuple[Tensor, Any]:
    d = _dim(dim, y.ndim)
    n = y.shape[d]
    mid = (y.narrow(d, 1, n - 1) + y.narrow(d, 0, n - 1)) if n else y
    if x is None:
        return mid, (1 if dx is None else dx)
    if x.ndim == 1:
        if x.shape[0] != n:
            raise RuntimeError(f"trapezoid: There must be one `x` value for each sample point, got {x.shape[0]} "
                               f"values for {n} samples")
        view = [1] * y.ndim
        view[d] = n - 1
        return mid, x.diff().reshape(view)
    return mid, x.diff(dim=d)


def trapezoid(y: Tensor, x: Tensor | None = None, *, dx: Number | None = None, dim: builtins.int = -1) -> Tensor:
    """Trapezoid rule along ``dim``, with sample points ``x`` or spacing ``dx`` (default 1)."""
    mid, step = _trapezoid_parts(y, x, dx, dim)
    if y.shape[_dim(dim, y.ndim)] == 0:
        return y.sum(dim)
    return (mid * step).sum(dim) / 2


def trapz(y: Tensor, x: Tensor | None = None, *, dx: Number | None = None, dim: builtins.int = -1) -> Tensor:
    """Alias of ``trapezoid``."""
    return trapezoid(y, x, dx=dx, dim=dim)


def cumulative_trapezoid(y: Tensor, x: Tensor | None = None, *, dx: Number | None = None,
                         dim: builtins.int = -1) -> Tensor:
    """Running trapezoid integral along ``dim`` (one element shorter than y there)."""
    mid, step = _trapezoid_parts(y, x, dx, dim)
    return (mid * step).cumsum(dim) / 2


values_indices = namedtuple("values_indices", ["values", "indices"])


# ---- helpers -------------------------------------------------------------------------------------
def _check_nonempty(x: Tensor, dim: Any, name: str) -> None:
    """PyTorch's errors for a reduction without identity (max, argmax, ...) over no elements; ``dim``
    as the caller was given it (None or (): all dims)."""
    if x._data.size:
        return
    if dim is None or not isinstance(dim, int | B.xp.integer) and not len(dim):
        if name in ("argmax", "argmin"):
            raise IndexError(f"{name}(): Expected reduction dim to be specified for input.numel() == 0.")
        if name == "aminmax":
            raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as the operation has no "
                               "identity.")
        raise RuntimeError(f"{name}(): Expected reduction dim to be specified for input.numel() == 0. "
                           "Specify the reduction dim with the 'dim' argument.")
    for d in (builtins.int(dim),) if isinstance(dim, int | B.xp.integer) else dim:
        if not x.shape[_dim(d, x.ndim)]:
            shown = d if name in ("amax", "amin") else _dim(d, x.ndim)  # (amax and amin say it as given)
            raise IndexError(f"{name}{':' if name == 'aminmax' else '():'} Expected reduction dim {shown} to "
                             "have non-zero size.")
