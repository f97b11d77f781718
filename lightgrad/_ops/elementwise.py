"""Elementwise methods: arithmetic's method forms, math, activations, comparisons, bitwise and integer
ops; and the functions where and polygamma."""

from __future__ import annotations

import builtins
import math
from typing import TYPE_CHECKING, Any

from .. import backend as B
from .. import dtypes as D
from ..grad_mode import _enabled
from .common import (_SCALAR_TYPE, Number, _as_tensor, _binary, _check_broadcast, _check_divisor, _floating, _promote,
                     _raw, _zero_grad, return_types)

if TYPE_CHECKING:  # bound at run time by tensor.py, once Tensor exists (see _ops/__init__.py)
    from .. import function as F
    from ..tensor import Tensor
    from .common import TensorSelf


class ElementwiseMixin:
    """Tensor's elementwise methods (the operators themselves are in tensor.py)."""

    __slots__ = ()

    # ---- arithmetic: the operators' method forms -------------------------------------------------
    def add(self: TensorSelf, other: Any, *, alpha: Number = 1) -> Tensor:
        """self + alpha * other, broadcast and type-promoted.

        >>> lightgrad.tensor([1.0, 2.0]).add(lightgrad.tensor([3.0, 4.0]), alpha=2)
        tensor([ 7., 10.])
        """
        if alpha != 1 and isinstance(other, Tensor) and _low_result(self, other):
            return _low_axpy(self, other, alpha)
        return self + (other if alpha == 1 else other * alpha)

    def sub(self: TensorSelf, other: Any, *, alpha: Number = 1) -> Tensor:
        """self - alpha * other, broadcast and type-promoted (``subtract`` is the same)."""
        if alpha != 1 and isinstance(other, Tensor) and _low_result(self, other):
            return _low_axpy(self, other, -alpha)
        return self - (other if alpha == 1 else other * alpha)

    subtract = sub

    def mul(self: TensorSelf, other: Any) -> Tensor:
        """Elementwise product, broadcast (``multiply`` is the same).

        >>> lightgrad.tensor([1.0, 2.0]).mul(3)
        tensor([3., 6.])
        """
        return self * other

    multiply = mul

    def div(self: TensorSelf, other: Any, *, rounding_mode: str | None = None) -> Tensor:
        """Elementwise division: true division, or rounded down (``rounding_mode="floor"``) or toward zero (``"trunc"``).

        >>> lightgrad.tensor([-7.0, 7.0]).div(2, rounding_mode="floor")
        tensor([-4.,  3.])
        """
        if rounding_mode is None:
            return self / other
        _check_divisor(self, other)
        q = self / other
        return (q.floor() if rounding_mode == "floor" else q.trunc()).to(_promote(self, other)[0].dtype)

    divide = true_divide = div

    def pow(self: TensorSelf, exponent: Any) -> Tensor:
        """self ** exponent, elementwise (the exponent a tensor or a number)."""
        return self ** exponent

    def neg(self: TensorSelf) -> Tensor:
        """-self, elementwise (``negative`` is the same)."""
        return -self

    negative = neg

    def reciprocal(self: TensorSelf) -> Tensor:
        """1 / self, elementwise (integers give floats)."""
        return 1 / self

    def square(self: TensorSelf) -> Tensor:
        """self ** 2, elementwise."""
        return self ** 2  # one node, whose gradient is 2 x g (x * x would sum two products)

    def floor_divide(self: TensorSelf, o: Any) -> Tensor:
        """Division rounded down to an integer value (Python's ``//``), elementwise."""
        return self // o

    def remainder(self: TensorSelf, o: Any) -> Tensor:
        """Python's modulus: the remainder takes the sign of the divisor."""
        return self % o

    def fmod(self: TensorSelf, o: Any) -> Tensor:
        """C's fmod: the remainder takes the sign of the dividend."""
        _check_divisor(self, o)
        return _binary(F.Fmod, self, o)

    def addcmul(self: TensorSelf, tensor1: Tensor, tensor2: Tensor, *, value: Number = 1) -> Tensor:
        """self + value * tensor1 * tensor2 (all broadcast)."""
        p = tensor1 * tensor2
        return self + (p if value == 1 else p * value)

    def addcdiv(self: TensorSelf, tensor1: Tensor, tensor2: Tensor, *, value: Number = 1) -> Tensor:
        """self + value * tensor1 / tensor2 (all broadcast)."""
        if not (_as_tensor(tensor1).is_floating_point() or _as_tensor(tensor2).is_floating_point()):
            raise RuntimeError("Integer division with addcdiv is no longer supported, and in a future release "
                               "addcdiv will perform a true division of tensor1 and tensor2. Got integer "
                               f"tensors of dtype {_as_tensor(tensor1).dtype} and {_as_tensor(tensor2).dtype}.")
        q = tensor1 / tensor2
        return self + (q if value == 1 else q * value)

    # ---- exponentials, logarithms and powers -----------------------------------------------------
    def exp(self: TensorSelf) -> Tensor:
        """e ** x, elementwise.

        >>> lightgrad.tensor([0.0, 1.0]).exp()
        tensor([1.0000, 2.7183])
        """
        return F.Exp.apply(_floating(self))

    def log(self: TensorSelf) -> Tensor:
        """Natural logarithm, elementwise (``-inf`` at 0, NaN below)."""
        return F.Log.apply(_floating(self))

    def log1p(self: TensorSelf) -> Tensor:
        """log(1 + x), accurate for small x."""
        return F.Log1p.apply(_floating(self))

    def expm1(self: TensorSelf) -> Tensor:
        """exp(x) - 1, accurate for small x."""
        return F.Expm1.apply(_floating(self))

    def log2(self: TensorSelf) -> Tensor:
        """Base-2 logarithm, elementwise."""
        return self.log() / math.log(2)

    def log10(self: TensorSelf) -> Tensor:
        """Base-10 logarithm, elementwise."""
        return self.log() / math.log(10)

    def exp2(self: TensorSelf) -> Tensor:
        """2 ** x, elementwise."""
        return (self * math.log(2)).exp()

    def sqrt(self: TensorSelf) -> Tensor:
        """Square root, elementwise (NaN for negative inputs)."""
        return F.Sqrt.apply(_floating(self))

    def rsqrt(self: TensorSelf) -> Tensor:
        """1 / sqrt(x), elementwise."""
        return 1 / self.sqrt()

    def logaddexp(self: TensorSelf, other: Any) -> Tensor:
        """log(exp(x) + exp(y)) without overflow."""
        x, y = _float_operands(self, other)
        m = x.detach().maximum(y.detach() if isinstance(y, Tensor) else y)
        m = where(m.isinf(), 0.0, m)  # both -inf (or an inf): shift by 0 so that -inf - -inf is no NaN
        return m + ((x - m).exp() + (y - m).exp()).log()

    def logaddexp2(self: TensorSelf, other: Any) -> Tensor:
        """log2(2**x + 2**y) without overflow."""
        x, y = _float_operands(self, other)
        return (x * _LN2).logaddexp(y * _LN2) / _LN2

    def xlogy(self: TensorSelf, other: Any) -> Tensor:
        """x * log(y), 0 where x == 0 (unless y is NaN): ``xlogy(0, 0)`` is 0."""
        x, y = _float_operands(self, other)
        y = _as_tensor(y, x)
        return where((x == 0) & ~y.isnan(), 0.0, x * y.log())

    def float_power(self: TensorSelf, exponent: Any) -> Tensor:
        """self ** exponent computed in float64 (the result is always float64)."""
        e = exponent.double() if isinstance(exponent, Tensor) else exponent
        return self.double() ** e

    def ldexp(self: TensorSelf, other: Any) -> Tensor:
        """x * 2**other (PyTorch's composite, differentiable in both): ``tensor([1.]).ldexp(tensor([3]))``
        is ``tensor([8.])``."""
        return self * (2.0 ** _as_tensor(other))

    def frexp(self: TensorSelf) -> Any:
        """(mantissa, exponent) with x = mantissa * 2**exponent, |mantissa| in [0.5, 1): the
        mantissa is differentiable (x / 2**exponent)."""
        if not D.is_floating(self._data.dtype):
            raise RuntimeError(f"torch.frexp() only supports floating-point dtypes, got {self.dtype}")
        e = Tensor._make(B.frexp(self._data)[1].astype(B.xp.int32))
        return return_types.frexp(self * Tensor._make(B.ldexp(B.ones((), self._data.dtype), -e._data)), e)

    # ---- trigonometric and hyperbolic ------------------------------------------------------------
    def sin(self: TensorSelf) -> Tensor:
        """Sine (radians), elementwise."""
        return F.Sin.apply(_floating(self))

    def cos(self: TensorSelf) -> Tensor:
        """Cosine (radians), elementwise."""
        return F.Cos.apply(_floating(self))

    def tan(self: TensorSelf) -> Tensor:
        """Tangent (radians), elementwise."""
        return F.Tan.apply(_floating(self))

    def tanh(self: TensorSelf) -> Tensor:
        """Hyperbolic tangent, elementwise."""
        return F.Tanh.apply(_floating(self))

    def sinh(self: TensorSelf) -> Tensor:
        """Hyperbolic sine, elementwise."""
        return (self.exp() - (-self).exp()) / 2

    def cosh(self: TensorSelf) -> Tensor:
        """Hyperbolic cosine, elementwise."""
        return (self.exp() + (-self).exp()) / 2

    def asin(self: TensorSelf) -> Tensor:
        """Inverse sine, elementwise: ``lightgrad.tensor([0.5]).asin()`` is ``tensor([0.5236])``."""
        return F.Asin.apply(_floating(self))

    def acos(self: TensorSelf) -> Tensor:
        """Inverse cosine (radians, in [0, pi]), elementwise (``arccos`` is the same)."""
        return F.Acos.apply(_floating(self))

    def atan(self: TensorSelf) -> Tensor:
        """Inverse tangent (radians, in (-pi/2, pi/2)), elementwise (``arctan`` is the same)."""
        return F.Atan.apply(_floating(self))

    def asinh(self: TensorSelf) -> Tensor:
        """Inverse hyperbolic sine, elementwise (``arcsinh`` is the same)."""
        return F.Asinh.apply(_floating(self))

    def acosh(self: TensorSelf) -> Tensor:
        """Inverse hyperbolic cosine (x >= 1), elementwise (``arccosh`` is the same)."""
        return F.Acosh.apply(_floating(self))

    def atanh(self: TensorSelf) -> Tensor:
        """Inverse hyperbolic tangent (-1 < x < 1), elementwise (``arctanh`` is the same)."""
        return F.Atanh.apply(_floating(self))

    def atan2(self: TensorSelf, other: Any) -> Tensor:
        """Angle of (other, self) in (-pi, pi]: ``torch.atan2(y, x)``."""
        return _binary(F.Atan2, self, other, floating=True)

    arcsin, arccos, arctan, arcsinh, arccosh, arctanh, arctan2 = asin, acos, atan, asinh, acosh, atanh, atan2

    def hypot(self: TensorSelf, other: Any) -> Tensor:
        """sqrt(x**2 + y**2), elementwise."""
        x, y = _float_operands(self, other)
        return F.Hypot.apply(x, _as_tensor(y, x))  # (not sqrt(x*x + y*y): that overflows above ~1.8e19 in float32)

    def sinc(self: TensorSelf) -> Tensor:
        """sin(pi x) / (pi x), 1 at 0."""
        x = _floating(self)
        zero = x == 0
        px = where(zero, 1.0, x * math.pi)  # (safe denominator: the gradient at 0 stays 0, not NaN)
        return where(zero, 1.0, px.sin() / px)

    def deg2rad(self: TensorSelf) -> Tensor:
        """Degrees converted to radians."""
        return _floating(self) * (math.pi / 180)

    def rad2deg(self: TensorSelf) -> Tensor:
        """Radians converted to degrees."""
        return _floating(self) * (180 / math.pi)

    # ---- special functions -----------------------------------------------------------------------
    def erf(self: TensorSelf) -> Tensor:
        """The Gauss error function, elementwise."""
        return F.Erf.apply(_floating(self))

    def erfc(self: TensorSelf) -> Tensor:
        """1 - erf(x), accurate where erf(x) is near 1: ``tensor([5.]).erfc()`` is 1.5375e-12."""
        return F.Erfc.apply(_floating(self))

    def erfinv(self: TensorSelf) -> Tensor:
        """Inverse of erf on [-1, 1]: ``tensor([0.5]).erfinv()`` is ``tensor([0.4769])``."""
        return F.Erfinv.apply(_floating(self))

    def lgamma(self: TensorSelf) -> Tensor:
        """log|Gamma(x)|: ``tensor([5.]).lgamma()`` is log(24)."""
        return F.Lgamma.apply(_floating(self))

    def digamma(self: TensorSelf) -> Tensor:
        """d/dx lgamma(x): ``tensor([1.]).digamma()`` is -0.5772 (minus Euler's constant)."""
        return F.Digamma.apply(_floating(self))

    def polygamma(self: TensorSelf, n: builtins.int) -> Tensor:
        """The n-th derivative of digamma: ``tensor([1.]).polygamma(1)`` is pi^2 / 6."""
        if not isinstance(n, builtins.int) or isinstance(n, builtins.bool):
            raise TypeError(f"polygamma(): argument 'n' (position 1) must be int, not {type(n).__name__}")
        if n < 0:
            raise RuntimeError("polygamma(n, x) does not support negative n.")
        return F.Polygamma.apply(_floating(self), n)

    def logit(self: TensorSelf, eps: builtins.float | None = None) -> Tensor:
        """log(p / (1 - p)), p clamped to [eps, 1 - eps] when eps is given."""
        x = _floating(self)
        if eps is not None:
            x = x.clamp(eps, 1 - eps)
        return (x / (1 - x)).log()

    # ---- activations -----------------------------------------------------------------------------
    def sigmoid(self: TensorSelf) -> Tensor:
        """The logistic function 1 / (1 + exp(-x)), elementwise."""
        return F.Sigmoid.apply(_floating(self))

    def relu(self: TensorSelf) -> Tensor:
        """max(x, 0), elementwise (gradient 0 at 0, as PyTorch's).

        >>> lightgrad.tensor([-1.0, 2.0]).relu()
        tensor([0., 2.])
        """
        return F.Relu.apply(self)

    def hardshrink(self: TensorSelf, lambd: builtins.float = 0.5) -> Tensor:
        """x where abs(x) > lambd, else 0."""
        return where((self > lambd) | (self < -lambd), self, 0.0)

    def prelu(self: TensorSelf, weight: Tensor) -> Tensor:
        """PReLU: x where x >= 0, else weight * x (weight per channel, dim 1, or one for all)."""
        w = weight  # (one weight for all, or one per channel: dim 1)
        if weight.numel() > 1:
            if self.ndim < 2 or self.shape[1] != weight.numel():
                c = self.shape[1] if self.ndim >= 2 else 1
                raise RuntimeError(f"Mismatch of parameter numbers and input channel size. Found parameter numbers = "
                                   f"{weight.numel()} and channel size = {c}.")
            w = weight.reshape((1, -1) + (1,) * (self.ndim - 2))
        return where(self > 0, self, self * w)

    # ---- complex numbers: parts, conjugate, angle ------------------------------------------------
    # (in the graph, each is its primitive in function/complex, with PyTorch's complex gradient)
    def _complex_part(self: TensorSelf, arr: B.ndarray, op: str) -> Tensor:
        if self.requires_grad and _enabled.get():
            return getattr(F, _COMPLEX_PARTS[op]).apply(self)
        return Tensor._make(arr)

    @property
    def real(self: TensorSelf) -> Tensor:
        """The real part, a view of a complex tensor's memory (a real tensor is its own)."""
        return self._complex_part(self._data.real, "real") if self.is_complex() else self

    @property
    def imag(self: TensorSelf) -> Tensor:
        """The imaginary part, a view of a complex tensor's memory."""
        if not self.is_complex():
            raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")
        return self._complex_part(self._data.imag, "imag")

    def conj(self: TensorSelf) -> Tensor:
        """The complex conjugate (a copy; PyTorch's is a lazy view); a real tensor is its own."""
        return self._complex_part(B.xp.conjugate(self._data), "conj") if self.is_complex() else self

    conj_physical = conj

    def resolve_conj(self: TensorSelf) -> Tensor:
        """Self: no tensor here is a lazy conjugate (conj() copies), so there is none to resolve."""
        return self  # type: ignore[return-value]

    def is_conj(self: TensorSelf) -> builtins.bool:
        """Whether this tensor is a lazily conjugated view: always False in lightgrad (``conj`` copies)."""
        return False  # (conj() copies: no tensor here is a lazy conjugate)

    def angle(self: TensorSelf) -> Tensor:
        """The argument of each complex number; of a real one 0, or pi where it is negative."""
        if self.is_complex():
            return self._complex_part(B.xp.angle(self._data), "angle")
        x = _floating(self)
        return _zero_grad(x, B.where(B.less(x._data, 0), B.asarray(math.pi, x._data.dtype),
                                     B.multiply(x._data, 0)))  # (x * 0 keeps NaN)

    # ---- sign, rounding and floating-point classes -----------------------------------------------
    def abs(self: TensorSelf) -> Tensor:
        """Absolute value, elementwise (``absolute`` is the same)."""
        return F.Abs.apply(self)

    absolute = abs

    def sign(self: TensorSelf) -> Tensor:
        """The sign (-1, 0 or 1), elementwise (``sgn``: z / abs(z) for complex)."""
        D.check_bare_unsigned("sign_cpu", self._arr.dtype)
        return _zero_grad(self, B.sign(self._data))

    sgn = sign

    def signbit(self: TensorSelf) -> Tensor:
        """True where the sign bit is set (negative numbers, -0.0 included)."""
        return Tensor._make(B.signbit(self._data))

    def copysign(self: TensorSelf, other: Any) -> Tensor:
        """|x| with the sign (bit) of other: ``tensor([2.]).copysign(-0.0)`` is ``tensor([-2.])``."""
        x, y = _float_operands(self, other)
        yd = y._data if isinstance(y, Tensor) else B.asarray(y, x._data.dtype)
        sign = Tensor._make(B.where(B.signbit(yd), x._data.dtype.type(-1), x._data.dtype.type(1)))
        out = x.abs() * sign
        if isinstance(y, Tensor) and y.requires_grad and _enabled.get():
            return F.ZeroGrad.apply(out, y)  # other's gradient is zero, not None, as PyTorch's
        return out

    def positive(self: TensorSelf) -> Tensor:
        """self itself (unary plus); bool tensors raise, as in PyTorch."""
        if self._data.dtype == B.xp.bool_:
            raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
        return self

    def floor(self: TensorSelf) -> Tensor:
        """Rounded down to an integer value, elementwise."""
        return _zero_grad(self, B.floor(self._data))

    def ceil(self: TensorSelf) -> Tensor:
        """Rounded up to an integer value, elementwise."""
        return _zero_grad(self, B.ceil(self._data))

    def round(self: TensorSelf, decimals: builtins.int = 0) -> Tensor:
        """Rounded to the nearest integer value (halves to even), or to ``decimals`` decimal places."""
        if self._data.dtype.kind in "iu":
            return Tensor._make(B.copy(self._data))  # integers are already round (np.rint would give float64)
        if decimals:
            s = 10.0 ** decimals
            return _zero_grad(self, B.divide(B.round_(B.multiply(self._data, s)), s).astype(self._data.dtype))
        return _zero_grad(self, B.round_(self._data))

    def trunc(self: TensorSelf) -> Tensor:
        """Rounded toward zero to an integer value, elementwise (``fix`` is the same)."""
        return _zero_grad(self, B.trunc(self._data))

    def fix(self: TensorSelf) -> Tensor:
        """Rounded toward zero to an integer value (an alias of ``trunc``)."""
        return self.trunc()

    def frac(self: TensorSelf) -> Tensor:
        """The fractional part x - trunc(x), elementwise."""
        return self - self.detach().trunc()

    def nextafter(self: TensorSelf, other: Any) -> Tensor:
        """The next representable float after x towards other (no gradient)."""
        a, b = _promote(self, other)
        if not D.is_floating(a._data.dtype):
            raise NotImplementedError(f"\"nextafter_cpu\" not implemented for '{a.dtype.name.capitalize()}'")
        return Tensor._make(B.nextafter(a._data, _raw(b)))

    def isnan(self: TensorSelf) -> Tensor:
        """True where the element is NaN."""
        return Tensor._make(B.isnan(self._data))

    def isinf(self: TensorSelf) -> Tensor:
        """True where the element is +inf or -inf."""
        return Tensor._make(B.isinf(self._data))

    def isfinite(self: TensorSelf) -> Tensor:
        """True where the element is finite (not inf, not NaN)."""
        return Tensor._make(B.isfinite(self._data))

    def isneginf(self: TensorSelf) -> Tensor:
        """True where the element is -inf."""
        return Tensor._make(B.isneginf(self._data))

    def isposinf(self: TensorSelf) -> Tensor:
        """True where the element is +inf."""
        return Tensor._make(B.isposinf(self._data))

    def nan_to_num(self: TensorSelf, nan: builtins.float = 0.0, posinf: builtins.float | None = None,
                   neginf: builtins.float | None = None) -> Tensor:
        """NaN, +inf and -inf replaced (by 0 and the dtype's largest and lowest finite values)."""
        if not D.is_floating(self._data.dtype):
            return self.clone()
        repl = Tensor._make(B.nan_to_num(self._data, nan=nan, posinf=posinf, neginf=neginf))
        return where(self.isfinite(), self, repl)  # gradient 0 where a value was replaced, as PyTorch

    def heaviside(self: TensorSelf, values: Tensor) -> Tensor:
        """Step function: 0 where x < 0, ``values`` where x == 0, 1 where x > 0 (no gradient)."""
        return self._heaviside(values, "heaviside")

    def _heaviside(self: TensorSelf, values: Tensor, op: str) -> Tensor:
        v = _as_tensor(values, self)
        if v._data.dtype != self._data.dtype:
            raise RuntimeError(f"heaviside is not yet implemented for tensors with different dtypes: "
                               f"got {self.dtype} and {v.dtype}")
        _check_broadcast(self.shape, v.shape)
        out = B.heaviside(self._data, v._data).astype(self._data.dtype)
        if (self.requires_grad or v.requires_grad) and _enabled.get():
            # requires grad, but backward raises: PyTorch implements no derivative for heaviside
            return F.NotDifferentiable.apply(out, self, v, op=op)
        return Tensor._make(out)

    # ---- clamping, extremes and blending ---------------------------------------------------------
    def clamp(self: TensorSelf, min: Any = None, max: Any = None) -> Tensor:  # noqa: A002
        """Limit values to [min, max]; bounds may be numbers or tensors."""
        if min is None and max is None:
            raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
        lo = _clamp_bound(self, min)
        hi = _clamp_bound(self, max)
        if isinstance(lo, Tensor) or isinstance(hi, Tensor):
            lo_t = lo if lo is None or isinstance(lo, Tensor) else _as_tensor(lo, self)
            hi_t = hi if hi is None or isinstance(hi, Tensor) else _as_tensor(hi, self)
            return F.Clamp.apply(self, lo_t, hi_t)
        return F.Clamp.apply(self, lo, hi)

    clip = clamp

    def clamp_min(self: TensorSelf, m: Any) -> Tensor:
        """max(self, m), elementwise: clamped from below."""
        return self.clamp(min=m)

    def clamp_max(self: TensorSelf, m: Any) -> Tensor:
        """min(self, m), elementwise: clamped from above."""
        return self.clamp(max=m)

    def maximum(self: TensorSelf, o: Any) -> Tensor:
        """Elementwise maximum of two tensors (NaN if either is NaN)."""
        return _binary(F.Maximum, self, o)

    def minimum(self: TensorSelf, o: Any) -> Tensor:
        """Elementwise minimum of two tensors (NaN if either is NaN)."""
        return _binary(F.Minimum, self, o)

    def fmax(self: TensorSelf, other: Tensor) -> Tensor:
        """Elementwise maximum that ignores NaN (NaN only where both are NaN)."""
        x, y = _promote(self, _as_tensor(other, self))
        return where((x >= y) | y.isnan(), x, y)

    def fmin(self: TensorSelf, other: Tensor) -> Tensor:
        """Elementwise minimum that ignores NaN (NaN only where both are NaN)."""
        x, y = _promote(self, _as_tensor(other, self))
        return where((x <= y) | y.isnan(), x, y)

    def lerp(self: TensorSelf, end: Any, weight: Any) -> Tensor:
        """Linear interpolation self + weight * (end - self)."""
        return self + (end - self) * weight

    def where(self: TensorSelf, condition: Any, other: Any) -> Tensor:
        """self where ``condition`` holds, else ``other`` (``lightgrad.where(condition, self, other)``)."""
        return where(condition, self, other)

    # ---- comparisons and logical ops -------------------------------------------------------------
    def eq(self: TensorSelf, o: Any) -> Tensor:
        """self == o, elementwise, as a bool tensor."""
        return self == o

    def ne(self: TensorSelf, o: Any) -> Tensor:
        """self != o, elementwise, as a bool tensor (``not_equal`` is the same)."""
        return self != o

    def lt(self: TensorSelf, o: Any) -> Tensor:
        """self < o, elementwise, as a bool tensor (``less`` is the same)."""
        return self < o

    def le(self: TensorSelf, o: Any) -> Tensor:
        """self <= o, elementwise, as a bool tensor (``less_equal`` is the same)."""
        return self <= o

    def gt(self: TensorSelf, o: Any) -> Tensor:
        """self > o, elementwise, as a bool tensor (``greater`` is the same)."""
        return self > o

    def ge(self: TensorSelf, o: Any) -> Tensor:
        """self >= o, elementwise, as a bool tensor (``greater_equal`` is the same)."""
        return self >= o

    greater, greater_equal, less, less_equal, not_equal = gt, ge, lt, le, ne

    def equal(self: TensorSelf, o: Tensor) -> builtins.bool:
        """True if both tensors have the same shape and the same elements (a Python bool)."""
        return self.shape == o.shape and bool(B.xp.array_equal(self._data, o._data))

    def allclose(self: TensorSelf, o: Tensor, rtol: builtins.float = 1e-5, atol: builtins.float = 1e-8, equal_nan: builtins.bool = False) -> builtins.bool:
        """True if every element satisfies abs(self - o) <= atol + rtol * abs(o) (a Python bool)."""
        return bool(B.xp.allclose(self._data, _raw(o), rtol=rtol, atol=atol, equal_nan=equal_nan))

    def isclose(self: TensorSelf, o: Any, rtol: builtins.float = 1e-5, atol: builtins.float = 1e-8, equal_nan: builtins.bool = False) -> Tensor:
        """abs(self - o) <= atol + rtol * abs(o), elementwise, as a bool tensor."""
        return Tensor._make(B.xp.isclose(self._data, _raw(o), rtol=rtol, atol=atol, equal_nan=equal_nan))

    def logical_not(self: TensorSelf) -> Tensor:
        """Logical NOT (nonzero is True), elementwise, as a bool tensor."""
        return Tensor._make(B.logical_not(self._data))

    def logical_and(self: TensorSelf, o: Any) -> Tensor:
        """Logical AND (nonzero is True), elementwise, as a bool tensor."""
        return Tensor._make(B.logical_and(self._data, _raw(o)))

    def logical_or(self: TensorSelf, o: Any) -> Tensor:
        """Logical OR (nonzero is True), elementwise, as a bool tensor."""
        return Tensor._make(B.logical_or(self._data, _raw(o)))

    def logical_xor(self: TensorSelf, o: Any) -> Tensor:
        """Logical XOR (nonzero is True), elementwise, as a bool tensor."""
        return Tensor._make(B.logical_xor(self._data, _raw(o)))

    # ---- bitwise and integer ops: no gradient (PyTorch defines none); ints and bools only --------
    def _integral(self: TensorSelf, o: Any, name: str, bools: builtins.bool = True) -> tuple[Tensor, Any]:
        a, b = _promote(self, o)
        for t in (a, b):
            kind = t._data.dtype.kind if isinstance(t, Tensor) else ("b" if isinstance(t, bool) else "f"
                                                                      if isinstance(t, float) else "i")
            if kind not in ("iub" if bools else "iu"):
                dt = _SCALAR_TYPE.get(t.dtype.name, t.dtype.name) if isinstance(t, Tensor) else "Float"
                raise NotImplementedError(f'"{name}_cpu" not implemented for \'{dt}\'')
        return a, b

    def bitwise_and(self: TensorSelf, other: Any) -> Tensor:
        """Bitwise AND of ints or bools: ``tensor([6]).bitwise_and(3)`` is ``tensor([2])``."""
        a, b = self._integral(other, "bitwise_and")
        return Tensor._make(B.bitwise_and(a._data, _raw(b)))

    def bitwise_or(self: TensorSelf, other: Any) -> Tensor:
        """Bitwise OR of ints or bools: ``tensor([6]).bitwise_or(3)`` is ``tensor([7])``."""
        a, b = self._integral(other, "bitwise_or")
        return Tensor._make(B.bitwise_or(a._data, _raw(b)))

    def bitwise_xor(self: TensorSelf, other: Any) -> Tensor:
        """Bitwise XOR of ints or bools: ``tensor([6]).bitwise_xor(3)`` is ``tensor([5])``."""
        a, b = self._integral(other, "bitwise_xor")
        return Tensor._make(B.bitwise_xor(a._data, _raw(b)))

    def bitwise_not(self: TensorSelf) -> Tensor:
        """Bitwise NOT of ints or bools: ``tensor([0]).bitwise_not()`` is ``tensor([-1])``."""
        self._integral(self, "bitwise_not")
        return ~self

    def bitwise_left_shift(self: TensorSelf, other: Any) -> Tensor:
        """``x << other`` for ints: ``tensor([1]).bitwise_left_shift(3)`` is ``tensor([8])``."""
        D.check_bare_unsigned("lshift_cpu", self._arr.dtype)
        a, b = self._integral(other, "lshift", bools=False)
        return Tensor._make(B.left_shift(a._data, _raw(b)))

    def bitwise_right_shift(self: TensorSelf, other: Any) -> Tensor:
        """``x >> other`` for ints: ``tensor([8]).bitwise_right_shift(3)`` is ``tensor([1])``."""
        D.check_bare_unsigned("rshift_cpu", self._arr.dtype)
        a, b = self._integral(other, "rshift", bools=False)
        return Tensor._make(B.right_shift(a._data, _raw(b)))

    def gcd(self: TensorSelf, other: Any) -> Tensor:
        """Greatest common divisor of ints: ``tensor([12]).gcd(tensor([8]))`` is ``tensor([4])``."""
        a, b = self._integral(other, "gcd", bools=False)
        return Tensor._make(B.gcd(a._data, _raw(b)))

    def lcm(self: TensorSelf, other: Any) -> Tensor:
        """Least common multiple of ints: ``tensor([4]).lcm(tensor([6]))`` is ``tensor([12])``."""
        a, b = self._integral(other, "lcm", bools=False)
        return Tensor._make(B.lcm(a._data, _raw(b)))


# (by name: the primitives are bound late)
_COMPLEX_PARTS = {"real": "Real", "imag": "Imag", "conj": "Conj", "angle": "Angle", "view_as_real": "ViewAsReal",
                  "view_as_complex": "ViewAsComplex"}


# ---- free functions ------------------------------------------------------------------------------
def view_as_real(input: Tensor) -> Tensor:  # noqa: A002 - PyTorch's name
    """A complex tensor's memory seen as real numbers, with a last dim of 2 (real, imaginary)."""
    if not input.is_complex():
        raise RuntimeError("view_as_real is only supported for complex tensors")
    a = input._data
    re = a.real  # (the same strides, in the real dtype: the imaginary part is one real item further)
    out = B.as_strided(re, a.shape + (2,), a.strides + (re.itemsize,))
    return input._complex_part(out, "view_as_real")


def view_as_complex(input: Tensor) -> Tensor:  # noqa: A002 - PyTorch's name
    """A float tensor whose last dim is 2 (real, imaginary) seen as complex numbers, sharing its memory."""
    a = input._data
    if a.dtype not in (B.xp.float32, B.xp.float64):
        raise RuntimeError("view_as_complex is only supported for half, float and double tensors, but got a "
                           f"tensor of scalar type: {_SCALAR_TYPE[input.dtype.name]}")
    if not a.ndim or a.shape[-1] != 2:
        raise RuntimeError("Tensor must have a last dimension of size 2")
    if a.strides[-1] != a.itemsize:
        raise RuntimeError("Tensor must have a last dimension with stride 1")
    if any(st % (2 * a.itemsize) for st in a.strides[:-1]):
        raise RuntimeError("Tensor must have a stride divisible by 2 for all but last dimension")
    # (NumPy views a last axis of two contiguous items as one item of twice the size)
    out = a.view(B.xp.complex64 if a.dtype == B.xp.float32 else B.xp.complex128)[..., 0]
    return input._complex_part(out, "view_as_complex")


def where(condition: Any, input: Any = None, other: Any = None) -> Any:  # noqa: A002
    """``where(c, a, b)`` picks a where c is True, else b; ``where(c)`` is ``c.nonzero(as_tuple=True)``."""
    c = _as_tensor(condition)
    if input is None and other is None:
        return c.nonzero(as_tuple=True)
    if c._data.dtype != B.xp.bool_:
        raise RuntimeError(f"where expected condition to be a boolean tensor, but got a tensor with dtype {c.dtype}")
    a, b = input, other
    if isinstance(a, B.ndarray) and a.ndim == 0:
        a = a.item()
    if isinstance(b, B.ndarray) and b.ndim == 0:
        b = b.item()
    if not isinstance(a, Tensor) and not isinstance(b, Tensor):
        a = _as_tensor(a)
    a, b = _promote(a, b)
    shapes = [tuple(c.shape)] + [tuple(t.shape) for t in (a, b) if isinstance(t, Tensor)]
    s = shapes[0]
    for sh in shapes[1:]:
        _check_broadcast(s, sh)
        s = tuple(B.xp.broadcast_shapes(s, sh))
    return F.Where.apply(c, a, b)


def polygamma(n: builtins.int, input: Tensor) -> Tensor:  # noqa: A002
    """``torch.polygamma(n, x)``: the n-th derivative of digamma (the order comes first)."""
    return input.polygamma(n)


# ---- helpers -------------------------------------------------------------------------------------
_LN2 = math.log(2)


def _low_result(a: Tensor, b: Tensor) -> builtins.bool:
    """Whether a op b is a bfloat16 tensor."""
    return D.LOW_PRECISION[0] is not None and D.result_type(a, b) is D.bfloat16


def _low_axpy(a: Tensor, b: Tensor, alpha: Number) -> Tensor:
    # a + alpha * b with alpha rounded to bfloat16 and the sum rounded once, as PyTorch's vectorised
    # add kernel (its scalar loop, for the last few elements of a row, rounds the product too)
    return (a.float() + b.float() * float(B.asarray(alpha, D.bfloat16.np))).to(D.bfloat16)


def _float_operands(a: Tensor, b: Any) -> tuple[Tensor, Any]:
    """a and b promoted to their common dtype, integers to the default float (b may stay a number)."""
    x, y = _promote(a, b)
    if not D.is_inexact(x._data.dtype):
        x, y = _promote(x.to(D.get_default_dtype()), y)
    if isinstance(y, Tensor) and not D.is_inexact(y._data.dtype):
        x, y = _promote(x, y.to(D.get_default_dtype()))
    if isinstance(y, Tensor) and x._data.shape != y._data.shape:
        _check_broadcast(x._data.shape, y._data.shape)
    return x, y


def _clamp_bound(x: Tensor, v: Any) -> Any:
    if v is None or isinstance(v, Tensor):
        return v.to(x.dtype) if isinstance(v, Tensor) else None
    return B.asarray(v, x._data.dtype) if D.is_floating(x._data.dtype) else v
