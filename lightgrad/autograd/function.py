"""Custom ops: ``autograd.Function`` with PyTorch's whole contract.

Both styles of forward (``forward(ctx, *args)``, or ``forward(*args)`` with ``setup_context(ctx,
inputs, output)``), several outputs, ``ctx.save_for_backward`` of inputs or outputs (refused in
backward once modified in place, or once freed by a backward), ``ctx.needs_input_grad``,
``mark_dirty`` (an input modified in place and returned), ``mark_non_differentiable``,
``set_materialize_grads``, and ``once_differentiable``. The ctx is the graph node itself, as in
PyTorch (``y.grad_fn.saved_tensors``); a Function with several outputs is a MultiOutput node.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from .. import backend as B
from ..function import MultiOutput, NotDifferentiable
from ..grad_mode import _enabled, no_grad
from ..tensor import Tensor
from .graph import _pack_hooks

_FREED = ("Trying to backward through the graph a second time (or directly access saved tensors after they have "
          "already been freed). Saved intermediate values of the graph are freed when you call .backward() or "
          "autograd.grad(). Specify retain_graph=True if you need to backward through the graph a second time or "
          "if you need to access saved tensors after calling backward.")


class FunctionCtx:
    """What a custom Function's forward (or setup_context) and backward receive as ``ctx``."""

    needs_input_grad: tuple[bool, ...] = ()
    materialize_grads = True

    def save_for_backward(self, *tensors: Tensor | None) -> None:
        """Keep tensors (inputs, outputs or None) for backward, where ``ctx.saved_tensors`` returns them."""
        for t in tensors:
            if t is not None and not isinstance(t, Tensor):
                raise TypeError("save_for_backward can only save variables, but argument "
                                f"{tensors.index(t)} is of type {type(t).__name__}")
        hooks = _pack_hooks()
        self._to_save: tuple[tuple[Any, Any, Any], ...]
        if hooks is not None:  # saved_tensors_hooks: each saved tensor is packed now, unpacked in backward
            pack, unpack = hooks
            self._to_save = tuple((None, None, None) if t is None else (pack(t), unpack, None) for t in tensors)
        else:
            self._to_save = tuple((t, None, None if t is None else t._version[0]) for t in tensors)

    def save_for_forward(self, *tensors: Tensor | None) -> None:
        """Keep tensors for the forward-mode ``jvp`` to use."""
        self.saved_for_forward = tensors

    @property
    def saved_tensors(self) -> tuple[Tensor | None, ...]:
        """The tensors ``save_for_backward`` kept (PyTorch's errors once they are freed or modified)."""
        if getattr(self, "saved", ()) is None:
            raise RuntimeError(_FREED)
        out = []
        for i, (t, unpack, version) in enumerate(getattr(self, "_to_save", ())):
            if unpack is not None:
                out.append(unpack(t))
                continue
            if t is not None and version is not None and t._version[0] != version:
                raise RuntimeError(
                    "one of the variables needed for gradient computation has been modified by an inplace "
                    f"operation: [{t.dtype.name} {list(t.shape)}], which is output 0 of {self.name()}, is at "
                    f"version {t._version[0]}; expected version {version} instead. (saved tensor {i})")
            out.append(t)
        return tuple(out)

    def mark_dirty(self, *tensors: Tensor) -> None:
        """Declare inputs that forward modified in place (and returns)."""
        self.dirty_tensors = tensors

    def mark_non_differentiable(self, *tensors: Tensor) -> None:
        """Declare outputs that have no gradient (their gradients in backward are zeros, or None)."""
        self.non_differentiable = tensors

    def set_materialize_grads(self, value: bool) -> None:
        """With False, backward gets None (not zeros) for outputs that received no gradient."""
        self.materialize_grads = value

    def name(self) -> str:
        """The node's name, as ``grad_fn`` reprs show it (its class name)."""
        return type(self).__name__


class BackwardCFunction(MultiOutput, FunctionCtx):
    """The graph node of one call of a custom Function; also its ctx."""

    fn: Any
    outputs_meta: list[Any]  # per output: (shape, dtype) of a Tensor output, or None
    single = False  # one Tensor output: the node is its grad_fn (no slots)

    def forward(self) -> None:  # pragma: no cover - the user's forward runs in apply
        """Never called: the user's forward runs inside ``Function.apply``."""
        raise NotImplementedError

    def backward_all(self, grads: list[Any]) -> tuple[Any, ...]:
        """Call the user's ``backward`` with every output's gradient and check what it returns."""
        wrap = not any(isinstance(g, Tensor) for g in grads)  # (create_graph passes Tensors)
        gs = []
        for g, meta in zip(grads, self.outputs_meta):
            if g is None and meta is not None and self.materialize_grads:
                g = Tensor._make(_zeros(meta))
            elif g is not None and not isinstance(g, Tensor):
                g = Tensor._make(g)
            gs.append(g)
        grads_in = self.fn.backward(self, *gs)
        if not isinstance(grads_in, tuple):
            grads_in = (grads_in,)
        n = len(self.parents)
        if len(grads_in) < n or any(g is not None for g in grads_in[n:]):
            raise RuntimeError(f"function {self.name()} returned an incorrect number of gradients (expected {n}, "
                               f"got {len(grads_in)})")
        out = []
        for i, (g, p) in enumerate(zip(grads_in, self.parents)):
            if g is not None and not isinstance(p, Tensor):
                raise RuntimeError(f"function {self.name()} returned a gradient different than None at position "
                                   f"{i + 1}, but the corresponding forward input was not a Variable")
            if g is not None and not isinstance(g, Tensor):
                raise TypeError(f"function {self.name()} returned a gradient of type {type(g).__name__} at position "
                                f"{i + 1}; expected a Tensor or None")
            out.append(None if g is None or self.edges[i] is None else g._data if wrap else g)
        return tuple(out)

    def backward(self, g: Any) -> tuple[Any, ...]:
        """The inputs' gradients from the output gradient ``g``, through the user's ``backward``."""
        if self.single:  # one output: the node is its grad_fn, g its gradient
            return self.backward_all([g])
        return super().backward(g)

    def name(self) -> str:
        """``<Function>Backward``: the node's name in ``grad_fn`` reprs."""
        return self.fn.__name__ + "Backward"


def _zeros(meta: tuple[Any, Any]) -> Any:
    return B.zeros(*meta)


class _OnceDifferentiated(NotDifferentiable):
    def backward(self, g: Any) -> Any:
        raise RuntimeError("trying to differentiate twice a function that was marked with @once_differentiable")


class Function:
    """Define an op by subclassing, as with ``torch.autograd.Function``.

    >>> class Square(autograd.Function):
    ...     @staticmethod
    ...     def forward(ctx, x): ctx.save_for_backward(x); return x * x
    ...     @staticmethod
    ...     def backward(ctx, g): (x,) = ctx.saved_tensors; return 2 * x * g
    >>> Square.apply(lightgrad.tensor(3.0, requires_grad=True))
    tensor(9., grad_fn=<SquareBackward>)
    """

    generate_vmap_rule = False

    @staticmethod
    def forward(*args: Any, **kwargs: Any) -> Any:
        """Override: compute the outputs from the inputs (``ctx`` first unless ``setup_context`` is defined)."""
        raise NotImplementedError("You must implement the forward function for custom autograd.Function.")

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple[Any, ...], output: Any) -> Any:
        """Override to save what backward needs from ``inputs`` and ``output``, for a ctx-free forward."""
        raise NotImplementedError("setup_context is not implemented.")

    @staticmethod
    def backward(ctx: Any, *grad_outputs: Any) -> Any:
        """Override: the inputs' gradients, given ``ctx`` and the outputs' gradients (also ``vjp``)."""
        raise NotImplementedError("You must implement either the backward or vjp method for your custom "
                                  "autograd.Function to use it with backward mode AD.")

    vjp = backward

    @staticmethod
    def jvp(ctx: Any, *grad_inputs: Any) -> Any:
        """Override for forward mode: the outputs' tangents, given ``ctx`` and the inputs' tangents."""
        raise NotImplementedError("You must implement the jvp function for custom autograd.Function to use it "
                                  "with forward mode AD.")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise RuntimeError("Legacy autograd function with non-static forward method is deprecated. Please use new-"
                           "style autograd function with static forward method. (Example: "
                           "https://pytorch.org/docs/stable/autograd.html#torch.autograd.Function)")

    @classmethod
    def apply(cls, *args: Any, **kwargs: Any) -> Any:
        """Run forward and record one graph node whose backward is ``cls.backward``."""
        node = BackwardCFunction()
        node.fn = cls
        record = _enabled.get()
        node.needs_input_grad = tuple(record and isinstance(a, Tensor) and a.requires_grad for a in args)
        separate = cls.setup_context is not Function.setup_context  # (the style functorch asks for)
        with no_grad():
            if separate:
                output = cls.forward(*args, **kwargs)
                cls.setup_context(node, args, output)
            else:
                output = cls.forward(node, *args, **kwargs)
        return _wrap_outputs(node, args, output, any(node.needs_input_grad))


def _wrap_outputs(node: BackwardCFunction, args: tuple[Any, ...], output: Any, record: bool) -> Any:
    """The forward's outputs as the graph sees them: new Tensors whose grad_fn is the node (or its
    slots), the dirty inputs themselves, non-differentiable ones detached."""
    single = not isinstance(output, tuple)
    outs = (output,) if single else output
    dirty = {id(t) for t in getattr(node, "dirty_tensors", ())}
    nondiff = {id(t) for t in getattr(node, "non_differentiable", ())}
    for t in getattr(node, "dirty_tensors", ()):
        if t.requires_grad and t._grad_fn is None and record:
            raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
    node.outputs_meta = [(o._arr.shape, o._arr.dtype) if isinstance(o, Tensor) else None for o in outs]
    if not record:
        result = [o if not isinstance(o, Tensor) or id(o) in dirty else Tensor._make(o._data) for o in outs]
        return result[0] if single else tuple(result)
    to_save = getattr(node, "_to_save", ())
    node.saved = tuple(t._arr for t, unpack, _ in to_save if t is not None and unpack is None) or ()
    diff = [isinstance(o, Tensor) and id(o) not in nondiff and o._arr.dtype.kind in "fc" for o in outs]
    arrays = [o._arr if isinstance(o, Tensor) else None for o in outs]
    node.single = single and isinstance(output, Tensor)
    if node.single:
        node.join(args)
        made = [_result(outs[0], dirty, node if diff[0] else None)]
    else:
        tensors = node.record(args, arrays, diff)
        made = []
        for o, t in zip(outs, tensors):
            if not isinstance(o, Tensor):
                made.append(o)
            elif id(o) in dirty:
                made.append(_result(o, dirty, t._grad_fn))
            else:
                made.append(t)
    # outputs saved for backward are the Tensors handed out (their grad_fn this node), as in PyTorch
    if to_save:
        by_id = {id(o): m for o, m in zip(outs, made) if isinstance(o, Tensor)}
        node._to_save = tuple((by_id.get(id(t), t), unpack, None if t is None or unpack is not None
                               else by_id.get(id(t), t)._version[0]) for t, unpack, _ in to_save)
    return made[0] if single else tuple(made)


def _result(o: Tensor, dirty: set[int], grad_fn: Any) -> Tensor:
    if id(o) in dirty:  # the input itself, now the output of this node
        o._version[0] += 1
        if grad_fn is not None:
            o.requires_grad, o._grad_fn = True, grad_fn
        return o
    t = Tensor._make(o._data)
    if grad_fn is not None:
        t.requires_grad, t._grad_fn = True, grad_fn
    return t


def once_differentiable(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Decorate a custom Function's backward that cannot itself be differentiated: it runs without
    recording, and a create_graph backward through it gets gradients whose backward raises."""
    @functools.wraps(fn)
    def wrapper(ctx: Any, *args: Any) -> Any:
        with no_grad():
            outputs = fn(ctx, *args)
        if not _enabled.get():
            return outputs
        needs = any(isinstance(a, Tensor) and a.requires_grad for a in args)
        if not needs:
            return outputs
        single = not isinstance(outputs, tuple)
        outs = (outputs,) if single else outputs
        wrapped = tuple(o if not isinstance(o, Tensor) else
                        _OnceDifferentiated.apply(o, *[a for a in args if isinstance(a, Tensor)], op="once_differentiable")
                        for o in outs)
        return wrapped[0] if single else wrapped
    return wrapper
