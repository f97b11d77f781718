"""What every primitive is built on: ``Function`` (apply runs forward and records the node), the
helpers the primitives share (gradient zeros, undoing a broadcast), the nodes for derivatives that
are zero, not implemented or first-order only, and custom ops (``autograd.Function``)."""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING, Any

from .. import backend as B
from ..grad_mode import _enabled, no_grad
from ..memory import _STAMP  # counts in-place modifications anywhere (and arena resets): see memory
from ..memory import home as _home
from ..memory import reclaimed_error

if TYPE_CHECKING:
    from ..tensor import Tensor
else:
    Tensor = None  # bound by lightgrad.tensor (the one late binding: function.bind)

_new_object = object.__new__
_SEQ = itertools.count(0, -1)


class Function:
    """Base of primitive ops; ``Op.apply(*tensors, **params)`` runs forward and records a node."""

    saved: Any = ()
    saves_out = False
    # forward and backward compute only by backend calls on arrays they were given or those calls
    # made (no ndarray operators or methods, no Python branch on values): lightgrad.compile then
    # replays those calls themselves, not the node's methods
    traceable = False
    parents: tuple[Any, ...]
    # per input, where its gradient goes, fixed when the op runs (as PyTorch's edges): the node
    # that made it, the leaf Tensor itself, or None when it needs no gradient; an in-place op that
    # later gives the input a new grad_fn does not reroute this node's gradient
    edges: list[Any]
    seq: int  # creation order (counting down): backward runs nodes in increasing seq, newest first
    stamp: int
    out_version: list[int]
    retained: Any = None  # the output tensor, when it asked retain_grad()
    # its backward runs once the walk is over, every leaf's .grad in place (gradients that add to an
    # existing .grad land only then: engine._walk); it gives its inputs no gradient (DDP's reduction)
    runs_last = False
    # the liveness tokens of the arena storage the backward may read (its inputs' and its output's,
    # which the arena active at forward also gave its saved temporaries), or None when all is on the
    # heap: the engine refuses to run a node one of whose arenas was reset since it ran
    mems: tuple[list[Any], ...] | None = None

    def forward(self, *args: Any, **kw: Any) -> Any:
        raise NotImplementedError  # pragma: no cover - every primitive overrides it

    def backward(self, g: Any) -> tuple[Any, ...]:
        raise NotImplementedError  # pragma: no cover

    @classmethod
    def apply(cls, *args: Any, **kw: Any) -> Any:
        ctx = cls()
        raw = []
        edges = []
        need = False
        mems: tuple[list[Any], ...] | None = None
        for a in args:
            if isinstance(a, Tensor):
                m = a._mem
                if m is not None:
                    if not m[0]:
                        raise reclaimed_error(m)  # its arena was reset: the data is gone
                    mems = (m,) if mems is None else mems if m is mems[-1] else (*mems, m)
                raw.append(a._arr)  # (checked just above: Tensor._data's check, inlined)
                if a.requires_grad:
                    need = True
                    edges.append(a._grad_fn or a)
                else:
                    edges.append(None)
            else:
                raw.append(a)
                edges.append(None)
        # (a call that unpacks an empty **kw costs a tenth of a one-element op)
        out = ctx.forward(*raw, **kw) if kw else ctx.forward(*raw)
        # Tensor._make, written out: this runs for every op
        t = _new_object(Tensor)
        t._arr = arr = out if type(out) is B.ndarray else B.asarray(out)
        t._grad = None
        t._version = version = [0, 0]
        # the token of the output's bytes (memory.home): a view of an input gets the input's; an
        # array that owns its bytes, or a view of one (a reshaped reduction), is the heap's
        b = arr.base
        t._mem = m = None if b is None or type(b) is B.ndarray and b.base is None else _home(arr)
        if need and _enabled.get():
            if m is not None:
                mems = (m,) if mems is None else mems if m is mems[-1] else (*mems, m)
            if mems is not None:
                ctx.mems = mems
            ctx.parents = args
            ctx.edges = edges
            ctx.seq = next(_SEQ)
            ctx.stamp = _STAMP[0]  # saved inputs modified in place after this are refused
            if cls.saves_out:
                ctx.out_version = version
            t.requires_grad = True
            t._grad_fn = ctx
        else:
            t.requires_grad = False
            t._grad_fn = None
        return t

    def needs(self, i: int) -> bool:
        """Whether input ``i`` needs a gradient (skip costly work when it does not)."""
        return self.edges[i] is not None

    def name(self) -> str:
        return type(self).__name__ + "Backward0"

    def __repr__(self) -> str:
        return f"<{self.name()}>"

    @property
    def next_functions(self) -> tuple[tuple[Any, int], ...]:
        return tuple((AccumulateGrad(e) if isinstance(e, Tensor) else e, 0) for e in self.edges)


class AccumulateGrad:
    """What ``next_functions`` shows for a leaf that requires grad, as in PyTorch."""

    __slots__ = ("variable",)

    def __init__(self, variable: Any) -> None:
        self.variable = variable

    def name(self) -> str:
        return "torch::autograd::AccumulateGrad"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, AccumulateGrad) and other.variable is self.variable

    def __hash__(self) -> int:
        return id(self.variable)


def unbroadcast(g: Any, shape: tuple[int, ...]) -> Any:
    """Sum a broadcast gradient back to ``shape`` (the one place broadcasting is undone)."""
    if g.shape == shape:
        return g
    lead = g.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(i + lead for i, s in enumerate(shape) if s == 1 and g.shape[i + lead] != 1)
    if axes:
        g = B.sum(g, axis=axes, keepdims=True)
    return B.reshape(g, shape)


def _zeros(g: Any, shape: tuple[int, ...], dtype: Any = None) -> Any:
    """Zeros of ``shape`` in ``dtype`` (an array dtype; g's by default): an array, or a Tensor
    when g is one (create_graph)."""
    if isinstance(g, B.ndarray | B.xp.generic):  # NumPy returns scalars for 0-d results
        return B.zeros(shape, g.dtype if dtype is None else dtype)
    return Tensor._make(B.xp.zeros(shape, g.dtype.np if dtype is None else dtype))


# ---- derivatives that are zero, not implemented, or first only -----------------------------------

class ZeroGrad(Function):
    """``x`` joined to the graph of ``others`` with a zero gradient for each, as PyTorch records
    ops whose derivative is zero (an in-place comparison or rounding; copysign's ``other``): they
    require grad and backward gives zeros, not None. x's own gradient passes through."""

    def forward(self, x, *others):
        self.like = [(o.shape, o.dtype) if isinstance(o, B.ndarray) else None for o in others]
        return x

    def backward(self, g):
        zs = tuple(None if like is None or not self.needs(i + 1) else _zeros(g, *like)
                   for i, like in enumerate(self.like))
        return (g if self.needs(0) else None,) + zs


class NotDifferentiable(ZeroGrad):
    """Values whose derivative PyTorch does not implement (heaviside): the result requires grad,
    and backward through it raises."""

    def forward(self, x, *others, op):
        self.op = op
        return x

    def backward(self, g):
        raise RuntimeError(f"derivative for aten::{self.op} is not implemented")

    def name(self) -> str:
        return "NotImplemented"


class OnceDifferentiable(Function):
    """Identity on the path from a composite's result to ``x``, for composites whose first
    derivative is exact but whose formula has no second (the delta trick: r + (x - x.detach()) * c
    with c computed without a graph). Its gradient passes once; under create_graph it comes out
    joined to x's graph through a node whose backward raises, never as a constant."""

    def forward(self, x, op):
        self.op = op
        return x

    def backward(self, g):
        if isinstance(g, Tensor):
            return (_FirstDerivativeOnly.apply(g, self.parents[0], op=self.op), None)
        return (g, None)


class _FirstDerivativeOnly(NotDifferentiable):
    def backward(self, g):
        raise RuntimeError(f"the derivative of {self.op} cannot be differentiated again (create_graph=True): "
                           "its second derivative is not implemented")


# ---- custom ops ----------------------------------------------------------------------------------

class FunctionCtx:
    """The ``ctx`` a custom Function's forward and backward receive."""

    def save_for_backward(self, *tensors: Any) -> None:
        self.saved_tensors = tensors

    def mark_non_differentiable(self, *tensors: Any) -> None:
        self.non_differentiable = tensors

    def set_materialize_grads(self, value: bool) -> None:
        self.materialize_grads = value


class _CustomNode(Function):
    """Graph node for a user ``autograd.Function``: calls its backward with Tensors."""

    fn: Any
    ctx: FunctionCtx

    def backward(self, g):
        wrap = not isinstance(g, Tensor)
        if wrap:
            g = Tensor._make(g)
        grads = self.fn.backward(self.ctx, g)
        if not isinstance(grads, tuple):
            grads = (grads,)
        if len(grads) != len(self.parents):
            raise RuntimeError(f"function {self.fn.__name__}.backward returned {len(grads)} gradients, "
                               f"expected {len(self.parents)} (one per forward input)")
        return tuple(gr._data if wrap and isinstance(gr, Tensor) else gr for gr in grads)

    def name(self) -> str:
        return self.fn.__name__ + "Backward"


class CustomFunction:
    """Define an op by subclassing, as with ``torch.autograd.Function``.

    >>> class Square(autograd.Function):
    ...     @staticmethod
    ...     def forward(ctx, x): ctx.save_for_backward(x); return x * x
    ...     @staticmethod
    ...     def backward(ctx, g): (x,) = ctx.saved_tensors; return 2 * x * g
    """

    @staticmethod
    def forward(ctx: FunctionCtx, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("subclasses of autograd.Function must define forward")

    @staticmethod
    def backward(ctx: FunctionCtx, *grads: Any) -> Any:
        raise NotImplementedError("subclasses of autograd.Function must define backward")

    @classmethod
    def apply(cls, *args: Any, **kwargs: Any) -> Any:
        ctx = FunctionCtx()
        with no_grad():
            out = cls.forward(ctx, *args, **kwargs)
        tensors = tuple(args)
        if _enabled.get() and any(isinstance(a, Tensor) and a.requires_grad for a in tensors):
            node = _CustomNode()
            node.fn, node.ctx, node.parents = cls, ctx, tensors
            node.edges = [(a._grad_fn or a) if isinstance(a, Tensor) and a.requires_grad else None for a in tensors]
            node.seq = next(_SEQ)
            node.stamp = _STAMP[0]
            out = Tensor._make(out._data)
            out.requires_grad = True
            out._grad_fn = node
        return out
