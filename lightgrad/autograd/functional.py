"""``torch.autograd.functional``: jacobian, hessian, vjp, jvp, hvp, vhp of a function of Tensors.

>>> lightgrad.autograd.functional.jacobian(lambda x: x ** 2, lightgrad.tensor([1.0, 2.0]))
tensor([[2., 0.],
        [0., 4.]])

As in PyTorch: ``inputs`` (and ``v``) are a Tensor or a tuple of Tensors and results follow that
shape; the inputs are detached copies that require grad (a clone where ``create_graph=True`` and the
caller's tensor requires grad, so the graph continues); results are detached unless ``create_graph``.
``jvp`` is exact, by the double-backward trick; ``vectorize`` and ``strategy='forward-mode'`` give
the same values as the reverse-mode loop (one backward per output element), which is what runs.
Exposed as ``lightgrad.autograd.functional`` (``lightgrad.autograd`` is a module file, not a package).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..grad_mode import enable_grad
from .differentiate import grad as _autograd_grad_raw
from ..tensor import Tensor, eye, stack, zeros, zeros_like

__all__ = ["hessian", "hvp", "jacobian", "jvp", "vhp", "vjp"]


def _as_tuple(inp: Any, arg_name: str, fn_name: str) -> tuple[bool, tuple[Tensor, ...]]:
    is_tuple = isinstance(inp, tuple)
    tup = inp if is_tuple else (inp,)
    for i, el in enumerate(tup):
        if not isinstance(el, Tensor):
            if is_tuple:
                raise TypeError(f"The {arg_name} given to {fn_name} must be either a Tensor or a tuple of Tensors "
                                f"but the value at index {i} has type {type(el)}.")
            raise TypeError(f"The {arg_name} given to {fn_name} must be either a Tensor or a tuple of Tensors but "
                            f"the given {arg_name} has type {type(el)}.")
    return is_tuple, tup


def _tuple_post(res: Any, to_unpack: Any) -> Any:
    """Undo _as_tuple: ``to_unpack`` is one flag, or two (outer, inner) for tuples of tuples."""
    if isinstance(to_unpack, tuple):
        if not to_unpack[1]:
            res = tuple(el[0] for el in res)
        if not to_unpack[0]:
            res = res[0]
    elif not to_unpack:
        res = res[0]
    return res


def _preprocess(inputs: tuple[Tensor, ...], create_graph: bool, need_graph: bool) -> tuple[Tensor, ...]:
    # with create_graph a caller's tensor that requires grad stays in the graph (through a clone);
    # otherwise a detached copy, so that nothing flows back to the caller's tensors
    return tuple(i.clone() if create_graph and i.requires_grad else i.detach().requires_grad_(need_graph)
                 for i in inputs)


def _postprocess(res: Any, create_graph: bool) -> Any:
    if isinstance(res, tuple):
        return tuple(_postprocess(r, create_graph) for r in res)
    return res if create_graph or res is None else res.detach()


def _validate_v(v: tuple[Tensor, ...], other: tuple[Tensor, ...], is_tuple: bool) -> None:
    if len(other) != len(v):
        if is_tuple:
            raise RuntimeError(f"v is a tuple of invalid length: should be {len(other)} but got {len(v)}.")
        raise RuntimeError("The given v should contain a single Tensor.")
    for idx, (el_v, el_o) in enumerate(zip(v, other)):
        if el_v.shape != el_o.shape:
            prepend = f"Entry {idx} in " if is_tuple else ""
            raise RuntimeError(f"{prepend}v has invalid size: should be {el_o.shape} but got {el_v.shape}.")


def _check_requires_grad(t: tuple[Tensor, ...], kind: str, strict: bool) -> None:
    if not strict:
        return
    for i, el in enumerate(t):
        if not el.requires_grad:
            if kind == "outputs":
                raise RuntimeError(f"Output {i} of the user-provided function does not require gradients. The "
                                   "outputs must be computed in a differentiable manner from the input when running "
                                   "in strict mode.")
            if kind == "hessian":
                raise RuntimeError(f"The hessian of the user-provided function with respect to input {i} is "
                                   "independent of the input. This is not allowed in strict mode.")
            raise RuntimeError(f"The jacobian of the user-provided function with respect to input {i} is "
                               "independent of the input. This is not allowed in strict mode.")


def _grad(outputs: tuple[Tensor | None, ...], inputs: tuple[Tensor, ...], grad_outputs: Any = None,
          create_graph: bool = False) -> tuple[Tensor | None, ...]:
    """autograd.grad over the outputs that require grad; None for every input when none does."""
    gos = (None,) * len(outputs) if grad_outputs is None else grad_outputs
    pairs = [(o, g) for o, g in zip(outputs, gos) if o is not None and o.requires_grad]
    if not pairs:
        return (None,) * len(inputs)
    return _autograd_grad_raw([o for o, _ in pairs], inputs, [g for _, g in pairs], retain_graph=True,
                              create_graph=create_graph, allow_unused=True)


def _fill_zeros(grads: tuple[Tensor | None, ...], refs: tuple[Tensor, ...], strict: bool,
                create_graph: bool, stage: str) -> tuple[Tensor, ...]:
    res = []
    for i, (g, r) in enumerate(zip(grads, refs)):
        if g is None:
            if strict:
                if stage == "back":
                    raise RuntimeError(f"The output of the user-provided function is independent of input {i}. "
                                       "This is not allowed in strict mode.")
                if stage == "double_back":
                    raise RuntimeError(f"The gradient with respect to input {i} is independent of the inputs of "
                                       "the user-provided function. This is not allowed in strict mode.")
                raise RuntimeError(f"The gradient with respect to the input is independent of entry {i} in the "
                                   "grad_outputs when using the double backward trick to compute forward mode "
                                   "gradients. This is not allowed in strict mode.")
            g = zeros_like(r)
        elif strict and create_graph and not g.requires_grad:
            raise RuntimeError(f"The jacobian of the user-provided function is independent of input {i}. This is "
                               "not allowed in strict mode when create_graph=True.")
        res.append(g)
    return tuple(res)


def _single_scalar(out: Any, fn_name: str) -> Tensor:
    if not isinstance(out, Tensor):
        raise RuntimeError(f"The function given to {fn_name} should return a single Tensor")
    if out.numel() != 1:
        raise RuntimeError(f"The Tensor returned by the function given to {fn_name} should contain a single element")
    return out


def _vectors(v: Any, like: tuple[Any, ...], is_tuple: bool, create_graph: bool, fn_name: str,
             what: str) -> tuple[Any, ...] | None:
    """The vectors ``v`` as a checked tuple matching ``like``; None (for a single one-element ``like``) when
    ``v`` is None, as PyTorch allows."""
    if v is not None:
        _, vs = _as_tuple(v, "v", fn_name)
        vs = _preprocess(vs, create_graph, False)
        _validate_v(vs, like, is_tuple)
        return vs
    if len(like) != 1 or like[0].numel() != 1:
        raise RuntimeError(f"The vector v can only be None if {what} a single Tensor with a single element.")
    return None


def vjp(func: Callable[..., Any], inputs: Any, v: Any = None, create_graph: bool = False,
        strict: bool = False) -> tuple[Any, Any]:
    """``(func(inputs), v^T J)``.

    >>> vjp(lambda x: x * 2, lightgrad.ones(2), lightgrad.ones(2))
    (tensor([2., 2.]), tensor([2., 2.]))
    """
    with enable_grad():
        is_inputs_tuple, ins = _as_tuple(inputs, "inputs", "vjp")
        ins = _preprocess(ins, create_graph, True)
        is_outputs_tuple, outs = _as_tuple(func(*ins), "outputs of the user-provided function", "vjp")
        _check_requires_grad(outs, "outputs", strict)
        vs = _vectors(v, outs, is_outputs_tuple, create_graph, "vjp", "the user-provided function returns")
        res = _fill_zeros(_grad(outs, ins, vs, create_graph), ins, strict, create_graph, "back")
    return (_tuple_post(_postprocess(outs, create_graph), is_outputs_tuple),
            _tuple_post(_postprocess(res, create_graph), is_inputs_tuple))


def jvp(func: Callable[..., Any], inputs: Any, v: Any = None, create_graph: bool = False,
        strict: bool = False) -> tuple[Any, Any]:
    """``(func(inputs), J v)``, exact, by the double-backward trick.

    >>> jvp(lambda x: x ** 2, lightgrad.tensor([3.0]), lightgrad.tensor([1.0]))
    (tensor([9.]), tensor([6.]))
    """
    with enable_grad():
        is_inputs_tuple, ins = _as_tuple(inputs, "inputs", "jvp")
        ins = _preprocess(ins, create_graph, True)
        vs = _vectors(v, ins, is_inputs_tuple, create_graph, "jvp", "the input to the user-provided function is")
        is_outputs_tuple, outs = _as_tuple(func(*ins), "outputs of the user-provided function", "jvp")
        _check_requires_grad(outs, "outputs", strict)
        # J^T u is linear in the dummy u; its vjp with v is J v
        us = tuple(zeros_like(o).requires_grad_() for o in outs)
        jt = _grad(outs, ins, us, create_graph=True)
        _check_requires_grad(tuple(g for g in jt if g is not None), "jacobian", strict)
        res = _fill_zeros(_grad(tuple(jt), us, vs, create_graph), outs, strict, create_graph, "back_trick")
    return (_tuple_post(_postprocess(outs, create_graph), is_outputs_tuple),
            _tuple_post(_postprocess(res, create_graph), is_outputs_tuple))


def jacobian(func: Callable[..., Any], inputs: Any, create_graph: bool = False, strict: bool = False,
             vectorize: bool = False, strategy: str = "reverse-mode") -> Any:
    """The Jacobian of ``func`` at ``inputs``; block (i, j) has shape ``outputs[i].shape + inputs[j].shape``.

    >>> jacobian(lambda x: x * 2, lightgrad.ones(2))
    tensor([[2., 0.],
            [0., 2.]])
    """
    if strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode". Hint: If your '
                             'function has more outputs than inputs, "forward-mode" tends to be more performant. '
                             'Otherwise, prefer to use "reverse-mode".')
    if strategy == "forward-mode":
        if create_graph:
            raise NotImplementedError("torch.autograd.functional.jacobian: `strategy=\"forward-mode\"` does not "
                                      "support `create_graph=True`")
        if not vectorize:
            raise NotImplementedError("torch.autograd.functional.jacobian: `strategy=\"forward-mode\"` is only "
                                      "implemented together with `vectorize=True`.")
    with enable_grad():
        is_inputs_tuple, ins = _as_tuple(inputs, "inputs", "jacobian")
        ins = _preprocess(ins, create_graph, True)
        is_outputs_tuple, outs = _as_tuple(func(*ins), "outputs of the user-provided function", "jacobian")
        _check_requires_grad(outs, "outputs", strict)
        jac: list[tuple[Tensor, ...]] = []
        for i, out in enumerate(outs):
            n = out.numel()
            rows: list[tuple[Tensor | None, ...]] = []
            if n:
                basis = eye(n, dtype=out.dtype)
                for k in range(n):
                    rows.append(_grad((out,), ins, (basis[k].reshape(out.shape),), create_graph))
            blocks = []
            for j, inp in enumerate(ins):
                col = [r[j] for r in rows]
                if strict and any(g is None for g in col):
                    raise RuntimeError(f"Output {i} of the user-provided function is independent of input {j}. "
                                       "This is not allowed in strict mode.")
                if strict and create_graph and any(g is not None and not g.requires_grad for g in col):
                    raise RuntimeError(f"The jacobian of the user-provided function is independent of input {j}. "
                                       "This is not allowed in strict mode when create_graph=True.")
                if not n:
                    blocks.append(zeros(tuple(out.shape) + tuple(inp.shape), dtype=inp.dtype))
                    continue
                full = [zeros_like(inp) if g is None else g for g in col]
                blocks.append(stack(full).reshape(tuple(out.shape) + tuple(inp.shape)))
            jac.append(tuple(blocks))
    return _tuple_post(_postprocess(tuple(jac), create_graph), (is_outputs_tuple, is_inputs_tuple))


def hessian(func: Callable[..., Any], inputs: Any, create_graph: bool = False, strict: bool = False,
            vectorize: bool = False, outer_jacobian_strategy: str = "reverse-mode") -> Any:
    """The Hessian of a scalar function at ``inputs`` (tuple of tuples for a tuple of inputs).

    >>> hessian(lambda x: (x ** 3).sum(), lightgrad.tensor([1.0, 2.0]))
    tensor([[ 6.,  0.],
            [ 0., 12.]])
    """
    is_inputs_tuple, ins = _as_tuple(inputs, "inputs", "hessian")
    if outer_jacobian_strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode".')

    def single_output(*inp: Tensor) -> Tensor:
        return _single_scalar(func(*inp), "hessian").squeeze()

    def jac_func(*inp: Tensor) -> Any:
        jac = jacobian(single_output, inp, create_graph=True)
        _check_requires_grad(jac, "hessian", strict)
        return jac

    res = jacobian(jac_func, ins, create_graph=create_graph, strict=strict, vectorize=vectorize)
    return _tuple_post(res, (is_inputs_tuple, is_inputs_tuple))


def _hvp_common(func: Callable[..., Any], inputs: Any, v: Any, create_graph: bool, strict: bool,
                fn_name: str) -> tuple[Any, Any]:
    with enable_grad():
        is_inputs_tuple, ins = _as_tuple(inputs, "inputs", fn_name)
        ins = _preprocess(ins, create_graph, True)
        vs = _vectors(v, ins, is_inputs_tuple, create_graph, fn_name, "the input to the user-provided function is")
        out = _single_scalar(func(*ins), fn_name)
        _check_requires_grad((out,), "outputs", strict)
        jac = _grad((out,), ins, create_graph=True)
        _check_requires_grad(tuple(g for g in jac if g is not None), "jacobian", strict)
        # the Hessian of a twice differentiable function is symmetric: v^T H = (H v)^T, one backward
        res = _fill_zeros(_grad(tuple(jac), ins, vs, create_graph), ins, strict, create_graph, "double_back")
    return (_postprocess(out, create_graph), _tuple_post(_postprocess(res, create_graph), is_inputs_tuple))


def vhp(func: Callable[..., Any], inputs: Any, v: Any = None, create_graph: bool = False,
        strict: bool = False) -> tuple[Any, Any]:
    """``(func(inputs), v^T H)`` for a scalar function.

    >>> vhp(lambda x: (x ** 3).sum(), lightgrad.tensor([2.0]), lightgrad.tensor([1.0]))
    (tensor(8.), tensor([12.]))
    """
    return _hvp_common(func, inputs, v, create_graph, strict, "vhp")


def hvp(func: Callable[..., Any], inputs: Any, v: Any = None, create_graph: bool = False,
        strict: bool = False) -> tuple[Any, Any]:
    """``(func(inputs), H v)`` for a scalar function.

    >>> hvp(lambda x: (x ** 3).sum(), lightgrad.tensor([2.0]), lightgrad.tensor([1.0]))
    (tensor(8.), tensor([12.]))
    """
    return _hvp_common(func, inputs, v, create_graph, strict, "hvp")
