"""In-place methods: each computes the out-of-place op and writes it back into self's storage through
``Tensor._inplace`` (which bumps the version and rewires the graph). Those that are nothing more are
generated from one table (``_form``); the rest, with checks, other arguments or a fast path, are
written out."""

from __future__ import annotations

import builtins
import functools
from collections.abc import Callable
from operator import methodcaller
from typing import TYPE_CHECKING, Any

from .. import backend as B
from .. import dtypes as D
from ..grad_mode import _enabled
from ..memory import reclaimed_error
from .common import Number, _as_tensor, _bump, _scalar_of
from .creation import ones
from .elementwise import ElementwiseMixin
from .reduce import ReduceMixin
from .shape import ShapeMixin

if TYPE_CHECKING:  # bound at run time by tensor.py, once Tensor exists (see _ops/__init__.py)
    from .. import function as F
    from ..tensor import Tensor
    from .common import TensorSelf


def _form(name: str) -> Callable[..., Tensor]:
    """``x.<name>_(...)``: ``x.<name>(...)`` written back into x, as the one-liner
    ``return self._inplace(lambda s: s.<name>(...))`` would (``methodcaller(name, *args)(s)`` is
    ``s.<name>(*args)``, in C). Its signature is <name>'s (``__wrapped__`` says so to inspect.signature):
    an op of no arguments gets exactly that one; the others take their arguments as they come, to pass
    them on."""
    op = next(vars(m)[name] for m in (ElementwiseMixin, ReduceMixin, ShapeMixin) if name in vars(m))
    call = methodcaller(name)

    def bare(self: Any) -> Tensor:
        return self._inplace(call)

    def passing(self: Any, *args: Any, **kwargs: Any) -> Tensor:
        return self._inplace(methodcaller(name, *args, **kwargs))

    alone = op.__code__.co_argcount == 1 and not op.__code__.co_kwonlyargcount  # (self alone; none has *args)
    inplace = bare if alone else passing
    inplace.__name__ = f"{name}_"
    inplace.__doc__ = f"In-place version of ``{name}``: the result written into self, which is returned."
    return functools.update_wrapper(inplace, op, assigned=(), updated=())


class InplaceMixin:
    """Tensor's in-place methods (the random fills are in _ops/random.py)."""

    __slots__ = ()

    # ---- generated: x.op_(...) is x.op(...) written back into x (see _form) -------------------------
    # exponentials, logarithms and powers
    exp_ = _form("exp")
    log_ = _form("log")
    log1p_ = _form("log1p")
    expm1_ = _form("expm1")
    log2_ = _form("log2")
    log10_ = _form("log10")
    exp2_ = _form("exp2")
    sqrt_ = _form("sqrt")
    rsqrt_ = _form("rsqrt")
    reciprocal_ = _form("reciprocal")
    square_ = _form("square")
    # trigonometric and hyperbolic
    sin_ = _form("sin")
    cos_ = _form("cos")
    tan_ = _form("tan")
    sinh_ = _form("sinh")
    cosh_ = _form("cosh")
    tanh_ = _form("tanh")
    asin_ = _form("asin")
    acos_ = _form("acos")
    atan_ = _form("atan")
    asinh_ = _form("asinh")
    acosh_ = _form("acosh")
    atanh_ = _form("atanh")
    sinc_ = _form("sinc")
    deg2rad_ = _form("deg2rad")
    rad2deg_ = _form("rad2deg")
    # special functions and activations
    erf_ = _form("erf")
    erfc_ = _form("erfc")
    erfinv_ = _form("erfinv")
    lgamma_ = _form("lgamma")
    digamma_ = _form("digamma")
    polygamma_ = _form("polygamma")
    logit_ = _form("logit")
    sigmoid_ = _form("sigmoid")
    relu_ = _form("relu")
    # sign and rounding
    abs_ = _form("abs")
    sign_ = _form("sign")
    sgn_ = _form("sgn")
    ceil_ = _form("ceil")
    floor_ = _form("floor")
    round_ = _form("round")
    trunc_ = _form("trunc")
    frac_ = _form("frac")
    nan_to_num_ = _form("nan_to_num")
    nextafter_ = _form("nextafter")
    # logical and bitwise
    logical_not_ = _form("logical_not")
    bitwise_and_ = _form("bitwise_and")
    bitwise_or_ = _form("bitwise_or")
    bitwise_xor_ = _form("bitwise_xor")
    bitwise_not_ = _form("bitwise_not")
    bitwise_left_shift_ = _form("bitwise_left_shift")
    bitwise_right_shift_ = _form("bitwise_right_shift")
    gcd_ = _form("gcd")
    lcm_ = _form("lcm")
    # scans, norms, triangles
    cumprod_ = _form("cumprod")
    renorm_ = _form("renorm")
    tril_ = _form("tril")
    triu_ = _form("triu")

    # ---- arithmetic ------------------------------------------------------------------------------
    def add_(self: TensorSelf, other: Any, *, alpha: Number = 1) -> Tensor:
        """In-place version of ``add``: the result written into self, which is returned."""
        if self._axpy_(other, alpha):
            return self
        return self._inplace(lambda s: s.add(other, alpha=alpha), other)

    def sub_(self: TensorSelf, other: Any, *, alpha: Number = 1) -> Tensor:
        """In-place version of ``sub``: the result written into self, which is returned."""
        if isinstance(alpha, builtins.int | builtins.float) and self._axpy_(other, -alpha):
            return self
        return self._inplace(lambda s: s.sub(other, alpha=alpha), other)

    def _axpy_(self: TensorSelf, other: Any, alpha: Any) -> builtins.bool:
        """self += alpha * other straight into self's storage when no graph is recorded and both
        are float tensors of one shape and dtype (every optimizer update): one temporary instead
        of three arrays and a copy. False when that does not apply."""
        if not (isinstance(other, Tensor) and isinstance(alpha, builtins.int | builtins.float)):
            return False
        d, o = self._data, other._data
        if d.dtype != o.dtype or d.dtype.kind != "f" or d.shape != o.shape or not d.flags.writeable:
            return False
        if _enabled.get() and (self.requires_grad or other.requires_grad):
            return False
        for m in (self._mem, other._mem):
            if m is not None and not m[0]:
                raise reclaimed_error(m)
        if alpha == 1:
            B.iadd(d, o)
        else:
            B.axpy_(d, o, alpha)
        _bump(self)
        return True

    def mul_(self: TensorSelf, other: Any) -> Tensor:
        """In-place version of ``mul``: the result written into self, which is returned."""
        return self._inplace(lambda s: s * other, other)

    def div_(self: TensorSelf, other: Any, *, rounding_mode: str | None = None) -> Tensor:
        """In-place version of ``div``: the result written into self, which is returned."""
        return self._inplace(lambda s: s.div(other, rounding_mode=rounding_mode), other)

    def pow_(self: TensorSelf, e: Any) -> Tensor:
        """In-place version of ``pow``: the result written into self, which is returned."""
        return self._inplace(lambda s: s ** e, e)

    def neg_(self: TensorSelf) -> Tensor:
        """In-place version of ``neg``: the result written into self, which is returned."""
        return self._inplace(lambda s: -s)

    def negative_(self: TensorSelf) -> Tensor:
        """In-place version of ``negative``: the result written into self, which is returned."""
        return self._inplace(lambda s: -s)

    def subtract_(self: TensorSelf, other: Any, *, alpha: Number = 1) -> Tensor:
        """In-place version of ``subtract``: the result written into self, which is returned."""
        return self.sub_(other, alpha=alpha)

    def multiply_(self: TensorSelf, other: Any) -> Tensor:
        """In-place version of ``multiply``: the result written into self, which is returned."""
        return self.mul_(other)

    def divide_(self: TensorSelf, other: Any, *, rounding_mode: str | None = None) -> Tensor:
        """In-place version of ``divide``: the result written into self, which is returned."""
        return self.div_(other, rounding_mode=rounding_mode)

    def true_divide_(self: TensorSelf, other: Any) -> Tensor:
        """In-place version of ``true_divide``: the result written into self, which is returned."""
        return self._inplace(lambda s: s.true_divide(other), other)

    def floor_divide_(self: TensorSelf, other: Any) -> Tensor:
        """In-place version of ``floor_divide``: the result written into self, which is returned."""
        return self._inplace(lambda s: s.floor_divide(other), other)

    def remainder_(self: TensorSelf, other: Any) -> Tensor:
        """In-place version of ``remainder``: the result written into self, which is returned."""
        return self._inplace(lambda s: s.remainder(other), other)

    def fmod_(self: TensorSelf, other: Any) -> Tensor:
        """In-place version of ``fmod``: the result written into self, which is returned."""
        return self._inplace(lambda s: s.fmod(other), other)

    def addcmul_(self: TensorSelf, t1: Tensor, t2: Tensor, *, value: Number = 1) -> Tensor:
        """In-place version of ``addcmul``: the result written into self, which is returned."""
        return self._inplace(lambda s: s + t1 * t2 * value, t1, t2)

    def addcdiv_(self: TensorSelf, t1: Tensor, t2: Tensor, *, value: Number = 1) -> Tensor:
        """In-place version of ``addcdiv``: the result written into self, which is returned."""
        return self._inplace(lambda s: s + t1 / t2 * value, t1, t2)

    def lerp_(self: TensorSelf, end: Any, weight: Any) -> Tensor:
        """In-place version of ``lerp``: the result written into self, which is returned."""
        return self._inplace(lambda s: s.lerp(end, weight), end, weight)

    # ---- math ------------------------------------------------------------------------------------
    def absolute_(self: TensorSelf) -> Tensor:
        """In-place version of ``absolute``: the result written into self, which is returned."""
        return self._inplace(lambda s: s.abs())

    def fix_(self: TensorSelf) -> Tensor:
        """In-place version of ``fix``: the result written into self, which is returned."""
        return self._inplace(lambda s: s.trunc())

    def float_power_(self: TensorSelf, exponent: Any) -> Tensor:
        """In-place version of ``float_power``: the result written into self, which is returned."""
        if self._data.dtype != B.xp.float64:
            raise RuntimeError(f"the base given to float_power_ has dtype {self.dtype.name.capitalize()} but "
                               f"the operation's result requires dtype Double")
        return self._inplace(lambda s: s.float_power(exponent), exponent)

    def heaviside_(self: TensorSelf, values: Tensor) -> Tensor:
        """In-place version of ``heaviside``: the result written into self, which is returned."""
        return self._inplace(lambda s: s._heaviside(values, "heaviside_"), values)

    def atan2_(self: TensorSelf, other: Any) -> Tensor:
        """In-place version of ``arctan2``: the result written into self, which is returned."""
        return self._inplace(lambda s: s.atan2(other), other)

    arcsin_, arccos_, arctan_, arcsinh_, arccosh_, arctanh_, arctan2_ = (
        asin_, acos_, atan_, asinh_, acosh_, atanh_, atan2_)

    def xlogy_(self: TensorSelf, other: Any) -> Tensor:
        """In-place version of ``xlogy``: the result written into self, which is returned."""
        return self._inplace(lambda s: s.xlogy(other), other)

    def hypot_(self: TensorSelf, other: Any) -> Tensor:
        """In-place version of ``hypot``: the result written into self, which is returned."""
        return self._inplace(lambda s: s.hypot(other), other)

    def copysign_(self: TensorSelf, other: Any) -> Tensor:
        """In-place version of ``copysign``: the result written into self, which is returned."""
        return self._inplace(lambda s: s.copysign(other), other)

    def ldexp_(self: TensorSelf, other: Any) -> Tensor:
        """In-place version of ``ldexp``: the result written into self, which is returned."""
        return self._inplace(lambda s: s.ldexp(other), other)

    def clamp_(self: TensorSelf, min: Any = None, max: Any = None) -> Tensor:  # noqa: A002
        """In-place version of ``clamp``: the result written into self, which is returned."""
        return self._inplace(lambda s: s.clamp(min, max), min, max)

    clip_ = clamp_

    def clamp_min_(self: TensorSelf, min: Any) -> Tensor:  # noqa: A002
        """In-place version of ``clamp_min``: the result written into self, which is returned."""
        return self._inplace(lambda s: s.clamp_min(min), min)

    def clamp_max_(self: TensorSelf, max: Any) -> Tensor:  # noqa: A002
        """In-place version of ``clamp_max``: the result written into self, which is returned."""
        return self._inplace(lambda s: s.clamp_max(max), max)

    def cumsum_(self: TensorSelf, dim: builtins.int, *, dtype: Any = None) -> Tensor:
        """In-place version of ``cumsum``: the result written into self, which is returned."""
        # (accumulates in self's dtype, as PyTorch: ints are not widened to int64 first)
        return self._inplace(lambda s: s.cumsum(dim, dtype=self.dtype if dtype is None else dtype))

    # ---- comparisons and logical ops (self keeps its dtype: the bool result is cast into it, as PyTorch's) ---
    def eq_(self: TensorSelf, other: Any) -> Tensor:
        """In-place version of ``eq``: the result written into self, which is returned."""
        return self._inplace(lambda s: s.eq(other), other)

    def ne_(self: TensorSelf, other: Any) -> Tensor:
        """In-place version of ``ne``: the result written into self, which is returned."""
        return self._inplace(lambda s: s.ne(other), other)

    def lt_(self: TensorSelf, other: Any) -> Tensor:
        """In-place version of ``less``: the result written into self, which is returned."""
        return self._inplace(lambda s: s.lt(other), other)

    def le_(self: TensorSelf, other: Any) -> Tensor:
        """In-place version of ``le``: the result written into self, which is returned."""
        return self._inplace(lambda s: s.le(other), other)

    def gt_(self: TensorSelf, other: Any) -> Tensor:
        """In-place version of ``greater``: the result written into self, which is returned."""
        return self._inplace(lambda s: s.gt(other), other)

    def ge_(self: TensorSelf, other: Any) -> Tensor:
        """In-place version of ``ge``: the result written into self, which is returned."""
        return self._inplace(lambda s: s.ge(other), other)

    greater_, greater_equal_, less_, less_equal_, not_equal_ = gt_, ge_, lt_, le_, ne_

    def logical_and_(self: TensorSelf, other: Any) -> Tensor:
        """In-place version of ``logical_and``: the result written into self, which is returned."""
        return self._inplace(lambda s: s.logical_and(other), other)

    def logical_or_(self: TensorSelf, other: Any) -> Tensor:
        """In-place version of ``logical_or``: the result written into self, which is returned."""
        return self._inplace(lambda s: s.logical_or(other), other)

    def logical_xor_(self: TensorSelf, other: Any) -> Tensor:
        """In-place version of ``logical_xor``: the result written into self, which is returned."""
        return self._inplace(lambda s: s.logical_xor(other), other)

    # ---- linear algebra --------------------------------------------------------------------------
    def addmm_(self: TensorSelf, mat1: Tensor, mat2: Tensor, *, beta: Number = 1, alpha: Number = 1) -> Tensor:
        """In-place version of ``addmm``: the result written into self, which is returned."""
        return self._inplace(lambda s: s.addmm(mat1, mat2, beta=beta, alpha=alpha), mat1, mat2)

    def addmv_(self: TensorSelf, mat: Tensor, vec: Tensor, *, beta: Number = 1, alpha: Number = 1) -> Tensor:
        """In-place version of ``addmv``: the result written into self, which is returned."""
        return self._inplace(lambda s: s.addmv(mat, vec, beta=beta, alpha=alpha), mat, vec)

    def addbmm_(self: TensorSelf, batch1: Tensor, batch2: Tensor, *, beta: Number = 1, alpha: Number = 1) -> Tensor:
        """In-place version of ``addbmm``: the result written into self, which is returned."""
        return self._inplace(lambda s: s.addbmm(batch1, batch2, beta=beta, alpha=alpha), batch1, batch2)

    def baddbmm_(self: TensorSelf, batch1: Tensor, batch2: Tensor, *, beta: Number = 1, alpha: Number = 1) -> Tensor:
        """In-place version of ``baddbmm``: the result written into self, which is returned."""
        return self._inplace(lambda s: s.baddbmm(batch1, batch2, beta=beta, alpha=alpha), batch1, batch2)

    def addr_(self: TensorSelf, vec1: Tensor, vec2: Tensor, *, beta: Number = 1, alpha: Number = 1) -> Tensor:
        """In-place version of ``addr``: the result written into self, which is returned."""
        return self._inplace(lambda s: s.addr(vec1, vec2, beta=beta, alpha=alpha), vec1, vec2)

    # ---- indexing, scatter and masks -------------------------------------------------------------
    def masked_fill_(self: TensorSelf, mask: Any, value: Any) -> Tensor:
        """In-place version of ``masked_fill``: the result written into self, which is returned."""
        return self._inplace(lambda s: s.masked_fill(mask, value), value)

    def masked_scatter_(self: TensorSelf, mask: Tensor, source: Tensor) -> Tensor:
        """In-place version of ``masked_scatter``: the result written into self, which is returned."""
        return self._inplace(lambda s: s.masked_scatter(mask, source), source)

    def scatter_(self: TensorSelf, dim: builtins.int, index: Tensor, src: Any = None, *, value: Any = None,
                 reduce: str | None = None) -> Tensor:
        """In-place version of ``scatter``: the result written into self, which is returned."""
        return self._inplace(lambda s: s.scatter(dim, index, src, value=value, reduce=reduce), src)

    def scatter_add_(self: TensorSelf, dim: builtins.int, index: Tensor, src: Tensor) -> Tensor:
        """In-place version of ``scatter_add``: the result written into self, which is returned."""
        return self._inplace(lambda s: s.scatter_add(dim, index, src), src)

    def scatter_reduce_(self: TensorSelf, dim: builtins.int, index: Tensor, src: Tensor, reduce: str, *,
                        include_self: builtins.bool = True) -> Tensor:
        """In-place version of ``scatter_reduce``: the result written into self, which is returned."""
        if reduce not in ("sum", "prod", "mean", "amax", "amin", "max", "min"):
            raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce}")
        return self._inplace(lambda s: s.scatter_reduce(dim, index, src, reduce, include_self=include_self), src)

    def index_add_(self: TensorSelf, dim: builtins.int, index: Tensor, source: Tensor, *, alpha: Number = 1) -> Tensor:
        """In-place version of ``index_add``: the result written into self, which is returned."""
        self._index_along("index_add", dim, index, source, alpha)
        return self._inplace(lambda s: s.index_add(dim, index, source, alpha=alpha), source)

    def index_copy_(self: TensorSelf, dim: builtins.int, index: Tensor, source: Tensor) -> Tensor:
        """In-place version of ``index_copy``: the result written into self, which is returned."""
        self._index_along("index_copy", dim, index, source)
        return self._inplace(lambda s: s.index_copy(dim, index, source), source)

    def index_fill_(self: TensorSelf, dim: builtins.int, index: Tensor, value: Any) -> Tensor:
        """In-place version of ``index_fill``: the result written into self, which is returned."""
        self._index_along("index_fill", dim, index, value)
        return self._inplace(lambda s: s.index_fill(dim, index, value), value)

    def index_reduce_(self: TensorSelf, dim: builtins.int, index: Tensor, source: Tensor, reduce: str, *,
                      include_self: builtins.bool = True) -> Tensor:
        """In-place version of ``index_reduce``: the result written into self, which is returned."""
        return self._inplace(lambda s: s.index_reduce(dim, index, source, reduce, include_self=include_self),
                             source)

    def put_(self: TensorSelf, index: Tensor, source: Tensor, accumulate: builtins.bool = False) -> Tensor:
        """In-place version of ``put``: the result written into self, which is returned."""
        return self._inplace(lambda s: s.put(index, source, accumulate), source)

    def fill_diagonal_(self: TensorSelf, fill_value: Any, wrap: builtins.bool = False) -> Tensor:
        """Fill the main diagonal in place (all dims equal when more than 2; ``wrap`` for tall matrices)."""
        if self.ndim < 2:
            raise RuntimeError(f"dimensions must larger than 1, got {self.ndim}")
        if self.ndim > 2 and len(set(self.shape)) != 1:
            raise RuntimeError(f"all dimensions of input must be of equal length, got {list(self.shape)}")
        m = B.xp.zeros(self._data.shape, B.xp.bool_)
        B.xp.fill_diagonal(m, True, wrap=wrap)
        return self._inplace(lambda s: s.masked_fill(Tensor._make(m), fill_value), fill_value)

    # ---- views in place: self becomes the view (Tensor._view_) -----------------------------------
    def unsqueeze_(self: TensorSelf, dim: builtins.int) -> Tensor:
        """In-place version of ``unsqueeze``: self's own shape gains the size-1 dim."""
        return self._view_(lambda t: t.unsqueeze(dim))

    def squeeze_(self: TensorSelf, dim: Any = None) -> Tensor:
        """In-place version of ``squeeze``: self's own shape loses its size-1 dims."""
        return self._view_(lambda t: t.squeeze() if dim is None else t.squeeze(dim))

    def t_(self: TensorSelf) -> Tensor:
        """In-place version of ``t``: self's own shape and strides are transposed."""
        return self._view_(lambda t: t.t())

    def transpose_(self: TensorSelf, dim0: builtins.int, dim1: builtins.int) -> Tensor:
        """In-place version of ``swapaxes``: self's own shape and strides swap the two dims."""
        return self._view_(lambda t: t.transpose(dim0, dim1))

    swapaxes_ = swapdims_ = transpose_

    # ---- filling and copying ---------------------------------------------------------------------
    def zero_(self: TensorSelf) -> Tensor:
        """Fills self with zeros, in place; returns self."""
        return self.fill_(0)

    def fill_(self: TensorSelf, value: Any) -> Tensor:
        """Fills self with ``value`` (a number or a 0-d tensor), in place; returns self."""
        if isinstance(value, Tensor) and value.requires_grad:
            return self._inplace(lambda s: s * 0 + value, value)
        if self._grad_fn is not None and _enabled.get():
            # the new values depend on nothing: the old graph gets a zero gradient, as PyTorch's
            return self._inplace(lambda s: s.masked_fill(ones(s.shape, dtype=D.bool_), value))
        self._check_leaf_inplace()
        d = self._data
        if not d.flags.writeable:  # an expanded tensor takes a number, written to its storage, as PyTorch's
            if isinstance(value, Tensor):
                _check_overlap(d)
            d = _writable(d)
        B.copyto(d, _scalar_of(value), casting="unsafe")
        _bump(self)
        return self

    def copy_(self: TensorSelf, src: Any, non_blocking: builtins.bool = False) -> Tensor:
        """Copy ``src`` (broadcast, cast to self's dtype) into self's storage."""
        s = _as_tensor(src, self)
        try:
            B.xp.broadcast_shapes(s.shape, self.shape)
        except ValueError:
            raise RuntimeError(f"The size of tensor a ({self.shape[-1] if self.ndim else 1}) must match the size of "
                               f"tensor b ({s.shape[-1] if s.ndim else 1}): copy_ from shape {list(s.shape)} "
                               f"to {list(self.shape)}") from None
        return self._inplace(lambda t: s.to(self.dtype).expand(self.shape) + t * 0
                             if s.requires_grad or t.requires_grad else
                             Tensor._make(B.cast(B.broadcast_to(s._data, self.shape), self._data.dtype)), s)

    def apply_(self: TensorSelf, fn: Any) -> Tensor:
        """Applies the Python function ``fn`` to each element, in place (no gradient; slow, as in PyTorch)."""
        self._data[...] = B.xp.vectorize(fn)(self._data)
        return self


# ---- writes to memory that elements share --------------------------------------------------------
_OVERLAP = ("unsupported operation: more than one element of the written-to tensor refers to a single memory "
            "location. Please clone() the tensor before performing the operation.")


def _check_overlap(a: Any) -> None:
    """Raise PyTorch's error for an in-place write to a tensor of which some elements are one
    memory location (a dim of stride 0: an expanded tensor); only ``fill_`` and ``zero_`` with a
    number write there."""
    if any(s == 0 and n > 1 for n, s in zip(a.shape, a.strides)):
        raise RuntimeError(_OVERLAP)


def _check_windows_overlap(a: Any) -> None:
    """Raise the same error for an in-place op computing into a view whose elements may share memory
    (overlapping unfold windows, as_strided). PyTorch updates such a view element by element, so a
    shared element is updated once per element that reaches it; computing the op out of place and
    copying in (as lightgrad does) would update it once: a silently different answer, refused
    instead. Proven apart: the dims of size > 1 by stride, each stride at least the span of the
    smaller ones (the test that PyTorch's own overlap check is built on)."""
    span = a.itemsize
    for s, n in sorted((abs(s), n) for n, s in zip(a.shape, a.strides) if n > 1):
        if s < span:
            raise RuntimeError(_OVERLAP)
        span += s * (n - 1)


def _writable(a: Any) -> Any:
    """A view of a read-only array's memory (a broadcast) that writes reach, where its storage
    is writable (else ``a``: the write raises as before)."""
    flat, at = F.storage(a)
    if not flat.flags.writeable:
        return a
    return B.as_strided(flat[at:], a.shape, a.strides)
