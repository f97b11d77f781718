"""``gradcheck`` and ``gradgradcheck``: analytical gradients against central finite differences, with
PyTorch's tolerances, checks and messages (its slow mode: the full Jacobians are compared)."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any

from .. import dtypes as D
from .._ops.shape import stack
from ..tensor import Tensor
from .differentiate import grad as _grad


class GradcheckError(RuntimeError):
    """Raised by gradcheck and gradgradcheck when a check fails."""


def _as_tuple(x: Any) -> tuple[Any, ...]:
    return tuple(x) if isinstance(x, list | tuple) else (x,)


def _outputs(func: Callable[..., Any], inputs: tuple[Any, ...]) -> tuple[Tensor, ...]:
    return tuple(o for o in _as_tuple(func(*inputs)) if isinstance(o, Tensor))


def _numerical(func: Callable[..., Any], inputs: tuple[Any, ...], i: int, outs: tuple[Tensor, ...],
               eps: float) -> list[Tensor]:
    """d(outputs)/d(inputs[i]) by central differences: one (numel_in, numel_out) matrix per output."""
    x = inputs[i]
    flat = x.detach().reshape(-1)  # a view: perturbing it perturbs what func reads
    n = flat.numel()
    cols: list[list[Tensor]] = [[] for _ in outs]
    for j in range(n):  # (func runs with grad mode as it is: gradgradcheck's func calls autograd.grad)
        orig = flat[j].item()
        flat[j] = orig - eps
        lo = [o.detach().reshape(-1).clone() for o in _outputs(func, inputs)]
        flat[j] = orig + eps
        hi = [o.detach().reshape(-1).clone() for o in _outputs(func, inputs)]
        flat[j] = orig
        for k, (a, b) in enumerate(zip(lo, hi)):
            cols[k].append((b - a) / (2 * eps))
    return [stack(cols[k]) if n else x.new_zeros((0, o.numel())) for k, o in enumerate(outs)]


def _analytical(outs: tuple[Tensor, ...], inputs: tuple[Any, ...], i: int) -> list[Tensor]:
    """d(outputs)/d(inputs[i]) by backward, one output element at a time: (numel_in, numel_out) each."""
    x = inputs[i]
    mats = []
    for o in outs:
        m = o.numel()
        cols = []
        for k in range(m):
            go = o.new_zeros(o.shape).reshape(-1)
            go[k] = 1
            if not o.requires_grad:
                cols.append(x.new_zeros(x.shape).reshape(-1))
                continue
            (g,) = _grad(o, x, go.reshape(o.shape), retain_graph=True, allow_unused=True)
            cols.append(x.new_zeros(x.shape).reshape(-1) if g is None else g.reshape(-1))
        mats.append(stack(cols, 1) if m else x.new_zeros((x.numel(), 0)))
    return mats


def _fail(msg: str, raise_exception: bool) -> bool:
    if raise_exception:
        raise GradcheckError(msg)
    return False


def gradcheck(func: Callable[..., Any], inputs: Any, *, eps: float = 1e-6, atol: float = 1e-5, rtol: float = 1e-3,
              raise_exception: bool = True, nondet_tol: float = 0.0, check_undefined_grad: bool = True,
              check_grad_dtypes: bool = False, check_batched_grad: bool = False,
              check_batched_forward_grad: bool = False, check_forward_ad: bool = False,
              check_backward_ad: bool = True, fast_mode: bool = False, masked: bool | None = None) -> bool:
    """Check ``func``'s gradients against finite differences for the inputs that require grad.

    >>> x = lightgrad.randn(3, dtype=lightgrad.float64, requires_grad=True)
    >>> lightgrad.autograd.gradcheck(lambda t: (t * t).sum(), (x,))
    True
    """
    inputs = _as_tuple(inputs)
    diff = [i for i, x in enumerate(inputs) if isinstance(x, Tensor) and x.requires_grad]
    if not diff:
        raise ValueError("gradcheck expects at least one input tensor to require gradient, but none of the them "
                         "have requires_grad=True.")
    for i in diff:
        if inputs[i].dtype not in (D.float64,) and not getattr(inputs[i].dtype, "is_complex", False):
            warnings.warn(f"Input #{i} requires gradient and is not a double precision floating point or complex. "
                          "This check will likely fail if all the inputs are not of double precision floating point "
                          "or complex. ", stacklevel=2)
    outs = _outputs(func, inputs)
    if check_grad_dtypes:
        for i in diff:
            for g in _analytical(outs, inputs, i):
                if g.dtype != inputs[i].dtype:
                    return _fail("Gradient has dtype mismatch", raise_exception)
    # every backward first: the finite differences perturb the inputs in place, which the graph refuses
    analyticals = {i: (_analytical(outs, inputs, i), _analytical(outs, inputs, i)) for i in diff}
    for i in diff:
        numerical = _numerical(func, inputs, i, outs, eps)
        analytical, again = analyticals[i]
        for k, (n, a, a2) in enumerate(zip(numerical, analytical, again)):
            a = a.to(n.dtype)
            if not ((a - n).abs() <= atol + rtol * n.abs()).all():
                return _fail(f"Jacobian mismatch for output {k} with respect to input {i},\nnumerical:{n}\n"
                             f"analytical:{a}\n", raise_exception)
            if a.numel() and (a - a2.to(a.dtype)).abs().max().item() > nondet_tol:
                return _fail("Backward is not reentrant, i.e., running backward with same input and grad_output "
                             "multiple times gives different values, although analytical gradient matches "
                             f"numerical gradient.The tolerance for nondeterminism was {nondet_tol}.", raise_exception)
    return True


def gradgradcheck(func: Callable[..., Any], inputs: Any, grad_outputs: Sequence[Tensor] | Tensor | None = None, *,
                  eps: float = 1e-6, atol: float = 1e-5, rtol: float = 1e-3, gen_non_contig_grad_outputs: bool = False,
                  raise_exception: bool = True, nondet_tol: float = 0.0, check_undefined_grad: bool = True,
                  check_grad_dtypes: bool = False, check_batched_grad: bool = False, check_fwd_over_rev: bool = False,
                  check_rev_over_rev: bool = True, fast_mode: bool = False, masked: bool = False) -> bool:
    """Check ``func``'s second derivatives: gradcheck of its gradient (random grad_outputs by default)."""
    inputs = _as_tuple(inputs)
    outs = _outputs(func, inputs)
    if grad_outputs is None:
        gos = tuple(o.detach().clone().uniform_(-1, 1).requires_grad_() for o in outs)
    else:
        gos = _as_tuple(grad_outputs)
    n_in = len(inputs)

    def new_func(*args: Any) -> Any:
        ins, g_out = args[:n_in], args[n_in:]
        o = _outputs(func, ins)
        d = [x for x in ins if isinstance(x, Tensor) and x.requires_grad]
        got = _grad(o, d, g_out, create_graph=True, allow_unused=True)
        return tuple(g for g in got if g is not None)
    return gradcheck(new_func, inputs + tuple(gos), eps=eps, atol=atol, rtol=rtol, raise_exception=raise_exception,
                     nondet_tol=nondet_tol, check_undefined_grad=check_undefined_grad,
                     check_grad_dtypes=check_grad_dtypes)
