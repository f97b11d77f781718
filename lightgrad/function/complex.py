"""Complex numbers in the graph: the parts of a complex tensor (real, imag, angle, conj, the real view
and its inverse), making one from parts, and the products, quotients and magnitudes of complex ones.

Gradients follow PyTorch's convention: for a real loss L of a complex z = a + ib, z's gradient is the
conjugate Wirtinger derivative scaled by 2, dL/da + i dL/db. A holomorphic f then passes back
g * conj(f'(z)), and a real input that met complex numbers keeps the real part of its gradient.

An op whose backward is not written for complex inputs must not give them a gradient silently: the
primitives' forward sees complex inputs on the guarded path (``base._forward_guarded``), which swaps
in the class named by ``Function.complex_grad`` (below) or one whose backward raises.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .. import backend as B
from .. import dtypes as D
from .base import Function
from .elementwise import Abs, Add, Div, Mul, Neg, Sub, Where
from .reduce import Cumsum, Mean, Sum

if TYPE_CHECKING:
    from ..tensor import Tensor
else:
    Tensor = None  # bound by lightgrad.tensor (the one late binding: function.bind)

_COMPLEX_OF = {"float16": B.xp.complex64, "float32": B.xp.complex64, "float64": B.xp.complex128}


def guard() -> None:
    """Send every op on complex arrays through the primitives' guarded path (once a complex tensor
    can get a gradient): a process that never differentiates complex numbers pays nothing."""
    D.guard(B.xp.dtype(B.xp.complex64))
    D.guard(B.xp.dtype(B.xp.complex128))


def is_complex(v: Any) -> bool:
    """Whether an array, Tensor or number is complex."""
    if isinstance(v, Tensor):
        return bool(v.dtype.is_complex)
    return isinstance(v, complex) or (hasattr(v, "dtype") and v.dtype.kind == "c")


def conj(a: Any) -> Any:
    """The conjugate of an array, number or Tensor (a node when it is a Tensor: create_graph)."""
    if isinstance(a, Tensor):
        return Conj.apply(a) if a.dtype.is_complex else a
    return B.xp.conjugate(a) if is_complex(a) else a


def real(a: Any) -> Any:
    """The real part of an array or Tensor (a node when it is a Tensor)."""
    if isinstance(a, Tensor):
        return Real.apply(a) if a.dtype.is_complex else a
    return a.real if is_complex(a) else a


def for_input(grad: Any, like: Any) -> Any:
    """A gradient for an input like ``like``: its real part when the input is real."""
    return grad if grad is None or is_complex(like) else real(grad)


def to_complex(a: Any) -> Any:
    """A real array or Tensor as complex numbers with no imaginary part (differentiable)."""
    if isinstance(a, Tensor):
        return Complex.apply(a, None)
    return B.cast(a, _COMPLEX_OF[a.dtype.name])


# ---- the parts of a complex number ---------------------------------------------------------------

class Real(Function):
    def forward(self, x):
        self.dtype = x.dtype
        return x.real

    def backward(self, g):
        return (Complex.apply(g, None) if isinstance(g, Tensor) else B.cast(g, self.dtype)),


class Imag(Function):
    def forward(self, x):
        self.dtype = x.dtype
        return x.imag

    def backward(self, g):  # dL/db = g, so the gradient is i g
        if isinstance(g, Tensor):
            return (Complex.apply(None, g),)
        out = B.zeros(g.shape, self.dtype)
        out.imag = g
        return (out,)


class Complex(Function):
    """re + i im (either may be None: 0), as ``torch.complex``; the gradients are g's parts."""

    def forward(self, re, im):
        part = re if re is not None else im
        self.shapes = (None if re is None else re.shape, None if im is None else im.shape)
        shape = part.shape if re is None or im is None else B.broadcast_shape(re.shape, im.shape)
        out = B.zeros(shape, _COMPLEX_OF[part.dtype.name])
        if re is not None:
            out.real = re
        if im is not None:
            out.imag = im
        guard()
        return out

    def backward(self, g):
        return (real(g) if self.needs(0) else None,
                (Imag.apply(g) if isinstance(g, Tensor) else g.imag) if self.needs(1) else None)


class Conj(Function):
    def forward(self, x):
        return B.xp.conjugate(x)

    def backward(self, g):
        return (conj(g),)


class Angle(Function):
    """arg z; its gradient g i z / |z|^2, 0 at z = 0 as PyTorch's."""

    def forward(self, x):
        self.saved = (x,)
        return B.xp.angle(x)

    def backward(self, g):
        (x,) = self.saved
        a = B.absolute(x)
        zero = B.equal(a, 0)
        r = B.divide(g, B.where(zero, 1.0, B.multiply(a, a)))
        return (B.where(zero, 0.0, B.multiply(B.multiply(to_complex(r), x), 1j)),)


class ViewAsReal(Function):
    """A complex tensor's memory as real numbers, its last dim (real, imaginary)."""

    def forward(self, x):
        re = x.real  # (the same strides in the real dtype: the imaginary part is one real item further)
        return B.as_strided(re, x.shape + (2,), x.strides + (re.itemsize,))

    def backward(self, g):
        if isinstance(g, Tensor):
            return (Complex.apply(g[..., 0], g[..., 1]),)
        return (Complex().forward(g[..., 0], g[..., 1]),)


class ViewAsComplex(Function):
    """A float tensor whose last dim is 2 (real, imaginary) as complex numbers, sharing its memory."""

    def forward(self, x):
        guard()
        return x.view(_COMPLEX_OF[x.dtype.name])[..., 0]

    def backward(self, g):
        if isinstance(g, Tensor):
            return (ViewAsReal.apply(g),)
        return (B.stack([g.real, g.imag], -1),)


# ---- arithmetic with complex inputs: the conjugates of PyTorch's convention ----------------------

class ComplexMul(Mul):
    def backward(self, g):
        x, y = self.saved
        return (for_input(B.multiply(g, conj(y)), x) if self.needs(0) else None,
                for_input(B.multiply(g, conj(x)), y) if self.needs(1) else None)


class ComplexDiv(Div):
    def backward(self, g):
        x, y = self.saved
        gx = B.divide(g, conj(y))
        gy = B.negative(B.multiply(gx, conj(B.divide(x, y)))) if self.needs(1) else None
        return for_input(gx, x) if self.needs(0) else None, for_input(gy, y)


class ComplexAbs(Abs):
    """|z|, whose gradient is g z / |z| (0 at z = 0), with a graph under create_graph (sign's has none)."""

    def backward(self, g):
        (x,) = self.saved
        if not is_complex(x):
            return super().backward(g)
        a = B.absolute(x)
        zero = B.equal(a, 0)
        return (B.where(zero, 0.0, B.multiply(to_complex(B.divide(g, B.where(zero, 1.0, a))), x)),)


class _LinearComplex:
    """Mixed into sums, differences and selections of complex inputs: real inputs take the real part."""

    def backward(self, g):
        grads = super().backward(g)  # type: ignore[misc]
        return tuple(for_input(gr, p) for gr, p in zip(grads, self.parents))  # type: ignore[attr-defined]


def _linear(cls: type) -> type:
    return type(cls.__name__, (_LinearComplex, cls), {"__module__": cls.__module__, "__qualname__": cls.__qualname__})


# what the guard swaps in for an op given complex inputs (base._forward_guarded); ops left out raise
Mul.complex_grad = ComplexMul
Div.complex_grad = ComplexDiv
Abs.complex_grad = ComplexAbs
_op: type[Function]
for _op in (Add, Sub, Where):
    _op.complex_grad = _linear(_op)
for _op in (Neg, Sum, Mean, Cumsum, Real, Imag, Complex, Conj, Angle, ViewAsReal, ViewAsComplex):
    _op.complex_grad = True
