"""What every primitive is built on: ``Function`` (apply runs forward and records the node), the
helpers the primitives share (gradient zeros, undoing a broadcast), the nodes for derivatives that
are zero, not implemented or first-order only, and nodes with several outputs (``MultiOutput``: custom
Functions returning tuples, module backward hooks)."""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING, Any

from .. import backend as B
from .. import dtypes as D
from ..grad_mode import _enabled
from ..memory import _STAMP  # counts in-place modifications anywhere (and arena resets): see memory
from ..memory import home as _home
from ..memory import reclaimed_error

if TYPE_CHECKING:
    from ..tensor import Tensor
else:
    Tensor = None  # bound by lightgrad.tensor (the one late binding: function.bind)

_new_object = object.__new__
_SEQ = itertools.count(0, -1)
_LOW = D.LOW_PRECISION  # [bfloat16's NumPy dtype], [None] until ml_dtypes is loaded
_GUARDED = D.GUARDED  # [the NumPy dtypes checked for], [None] until an array of one is made
_ndarray = B.ndarray


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
    hooks: Any = None  # the output tensor's register_hook hooks (an OrderedDict), run on its gradient
    # PyTorch's error for an in-place op on this node's output, where it forbids one (the outputs of a
    # module's backward-hook identity), or None
    forbids_inplace: str | None = None
    # its backward runs once the walk is over, every leaf's .grad in place (gradients that add to an
    # existing .grad land only then: engine._walk); it gives its inputs no gradient (DDP's reduction)
    runs_last = False
    # the liveness tokens of the arena storage the backward may read (its inputs' and its output's,
    # which the arena active at forward also gave its saved temporaries), or None when all is on the
    # heap: the engine refuses to run a node one of whose arenas was reset since it ran
    mems: tuple[list[Any], ...] | None = None
    # whether forward does arithmetic: bfloat16 inputs are then given to it in float32 and its
    # result rounded to bfloat16 once, as PyTorch computes bfloat16 ops (_forward_low); ops that
    # move, copy or select elements (views among them) take bfloat16 arrays as they are
    computes = True
    low_compute: Any = B.xp.float32  # the dtype bfloat16 inputs are computed in (exp: float64, see function/)
    rounds_scalars = False  # whether Python numbers are rounded to bfloat16 first, as PyTorch's add does
    # whether uint16/32/64 inputs are accepted, as PyTorch has few kernels for them (else its
    # NotImplementedError, naming ``kernel``: "<name>_cpu" by default)
    bare_unsigned = False
    kernel: str | None = None
    low_inputs: tuple[bool, ...] = ()  # per input, whether it was bfloat16 (set by _forward_low)
    # whether backward is right for complex inputs (PyTorch's conjugates: function/complex), or the
    # subclass that is; given complex inputs, an op with neither gets a backward that raises
    complex_grad: Any = False

    def forward(self, *args: Any, **kw: Any) -> Any:
        """The op's output arrays from its input arrays (every primitive overrides it)."""
        raise NotImplementedError  # pragma: no cover - every primitive overrides it

    def backward(self, g: Any) -> tuple[Any, ...]:
        """The inputs' gradients from the output's gradient ``g`` (every primitive overrides it)."""
        raise NotImplementedError  # pragma: no cover

    @classmethod
    def apply(cls, *args: Any, **kw: Any) -> Any:
        """Run the op on tensors, recording a graph node when an input requires a gradient."""
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
        guarded = _GUARDED[0]  # (None, one test, in a process that never made a bfloat16 or uint16 array)
        if guarded is not None and cls.computes:
            for r in raw:
                if r.__class__ is _ndarray and r.dtype in guarded:  # (__class__: a third of type()'s time)
                    out = _forward_guarded(ctx, raw, kw)
                    break
            else:
                out = ctx.forward(*raw, **kw) if kw else ctx.forward(*raw)
        else:
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

    def join(self, inputs: tuple[Any, ...]) -> None:
        """Record this node as made now from ``inputs`` (what apply does for a primitive; custom
        Functions and MultiOutput nodes call it themselves)."""
        self.parents = inputs
        self.edges = [(a._grad_fn or a) if isinstance(a, Tensor) and a.requires_grad else None for a in inputs]
        self.seq = next(_SEQ)
        self.stamp = _STAMP[0]

    def needs(self, i: int) -> bool:
        """Whether input ``i`` needs a gradient (skip costly work when it does not)."""
        return self.edges[i] is not None

    def name(self) -> str:
        """The node's name in ``grad_fn`` reprs: ``<Op>Backward0``, as PyTorch names it."""
        return type(self).__name__ + "Backward0"

    def __repr__(self) -> str:
        return f"<{self.name()}>"

    @property
    def next_functions(self) -> tuple[tuple[Any, int], ...]:
        """Each input's node (a leaf's as ``AccumulateGrad``) paired with 0, as ``grad_fn.next_functions``."""
        return tuple((AccumulateGrad(e) if isinstance(e, Tensor) else e, 0) for e in self.edges)


# ---- bfloat16: computed in float32, rounded once per op ------------------------------------------

def _forward_guarded(ctx: Function, raw: list[Any], kw: dict[str, Any]) -> Any:
    """Forward where an input has a dtype the primitives check for: PyTorch's error for a uint16,
    uint32 or uint64 input the op has no kernel for, float32 arithmetic for bfloat16 inputs, and for
    complex inputs (checked once a complex tensor can get a gradient) the class whose backward has
    PyTorch's complex gradient (``complex_grad``), or one that raises."""
    if not ctx.bare_unsigned:
        for r in raw:
            if isinstance(r, B.ndarray) and r.dtype in D.BARE_UNSIGNED_NP:
                raise D.not_implemented(ctx.kernel or type(ctx).__name__.lower() + "_cpu", r.dtype)
    if ctx.complex_grad is not True and any(isinstance(r, B.ndarray) and r.dtype.kind == "c" for r in raw):
        ctx.__class__ = ctx.complex_grad or _no_complex_class(type(ctx))
    low = _LOW[0]
    if low is not None and any(isinstance(r, B.ndarray) and r.dtype is low for r in raw):
        return _forward_low(ctx, raw, kw)
    return ctx.forward(*raw, **kw)


_NO_COMPLEX: dict[type, type] = {}


def _no_complex_class(cls: type[Function]) -> type[Function]:
    """``cls`` with a backward that raises: its formula is a real one, and complex inputs need the
    conjugates of PyTorch's convention (a gradient would be silently wrong)."""
    no = _NO_COMPLEX.get(cls)
    if no is None:
        def backward(self: Any, g: Any) -> tuple[Any, ...]:
            raise RuntimeError(f"{self.name()}: lightgrad does not differentiate {cls.__name__.lower()} of complex "
                               "tensors yet")
        no = _NO_COMPLEX[cls] = type(cls.__name__, (cls,), {
            "backward": backward, "__module__": cls.__module__, "__qualname__": cls.__qualname__})
    return no


def _forward_low(ctx: Function, raw: list[Any], kw: dict[str, Any]) -> Any:
    """Forward with every bfloat16 input array in float32, the floating result rounded back to
    bfloat16 (round to nearest even), as PyTorch's CPU kernels compute bfloat16 ops; the node's
    class becomes one whose backward does the same with the gradients (_low_class)."""
    low = _LOW[0]
    lows = tuple(isinstance(r, B.ndarray) and r.dtype is low for r in raw)
    wide = ctx.low_compute
    raw = [B.cast(r, wide) if is_low else r for r, is_low in zip(raw, lows)]
    if ctx.rounds_scalars:
        raw = [float(B.asarray(r, low)) if type(r) in (int, float) else r for r in raw]
    # (an out= buffer of bfloat16 that forward writes into takes the float32 result rounded)
    out = B.asarray(ctx.forward(*raw, **kw))
    if out.dtype is not low and D.is_floating(out.dtype):
        # (through float32, as PyTorch rounds its float32 result)
        out = B.cast(out if out.dtype == B.xp.float32 else B.cast(out, B.xp.float32), low)
        if ctx.saves_out and ctx.saved:  # backward reads the output PyTorch keeps: the rounded one
            ctx.saved = (*ctx.saved[:-1], B.cast(out, wide))
    ctx.low_inputs = lows
    ctx.__class__ = _low_class(type(ctx))
    return out


_LOW_CLASSES: dict[type, type] = {}


def _low_class(cls: type[Function]) -> type[Function]:
    """``cls`` with a backward that takes the bfloat16 gradient in float32 and rounds the gradients
    of bfloat16 inputs back to bfloat16 (a subclass of the same name, so grad_fn names are kept)."""
    low_cls = _LOW_CLASSES.get(cls)
    if low_cls is None:
        def backward(self: Any, g: Any) -> tuple[Any, ...]:
            if not isinstance(g, B.ndarray | B.xp.generic):
                raise RuntimeError(f"{self.name()}: differentiating bfloat16 ops twice (create_graph=True) is not "
                                   "supported; compute in float32 for higher-order gradients")
            low = _LOW[0]
            grads = cls.backward(self, B.cast(g, self.low_compute) if g.dtype is low else g)
            return tuple(B.cast(gr, low) if is_low and gr is not None and D.is_floating(gr.dtype) else gr
                         for gr, is_low in zip(grads, self.low_inputs))
        low_cls = _LOW_CLASSES[cls] = type(cls.__name__, (cls,), {
            "backward": backward, "__module__": cls.__module__, "__qualname__": cls.__qualname__})
    return low_cls


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


# ---- nodes with several outputs -------------------------------------------------------------------
# The engine gives a node one gradient. A node with n outputs (a custom Function returning a tuple, the
# identity behind a module's backward hooks) is one ``MultiOutput`` node plus one ``_OutputSlot`` per
# output: each output's grad_fn is its slot, whose backward files the output's gradient with the node
# and sends it a 0-d token. The node is older than its slots, so the engine runs it once every slot
# that gets a gradient has run (nodes run newest first), and its backward sees them all at once.

_TOKEN = B.zeros((), B.xp.float64)
_TOKEN.flags.writeable = False


class MultiOutput(Function):
    """A node with several outputs: ``backward_all`` gets one gradient per output (None where none
    arrived) and returns one per input."""

    pending: list[Any]

    def backward_all(self, grads: list[Any]) -> tuple[Any, ...]:
        raise NotImplementedError  # pragma: no cover

    def backward(self, g: Any) -> tuple[Any, ...]:
        grads, self.pending = self.pending, [None] * len(self.pending)
        return self.backward_all(grads)

    def record(self, inputs: tuple[Any, ...], arrays: list[Any], differentiable: list[bool]) -> list[Any]:
        """Join this node to the graph of ``inputs`` and make its outputs from ``arrays`` (those not
        ``differentiable`` come out as plain tensors, None arrays as None): the outputs as Tensors."""
        self.join(inputs)
        self.pending = [None] * len(arrays)
        if not _TOKEN_TENSOR:
            _TOKEN_TENSOR.append(Tensor._make(_TOKEN))
        token = _TOKEN_TENSOR[0]
        outs: list[Any] = []
        for i, (arr, diff) in enumerate(zip(arrays, differentiable)):
            if arr is None:  # (an output that is not a tensor)
                outs.append(None)
                continue
            t = Tensor._make(arr)
            if diff:
                slot = _OutputSlot()
                slot.core, slot.index = self, i
                slot.parents, slot.edges = (token,), [self]
                slot.seq = next(_SEQ)
                slot.stamp = _STAMP[0]
                t.requires_grad, t._grad_fn = True, slot
            outs.append(t)
        return outs


class _OutputSlot(Function):
    """One output of a MultiOutput node: files the output's gradient with it."""

    core: MultiOutput
    index: int

    def backward(self, g: Any) -> tuple[Any, ...]:
        self.core.pending[self.index] = g
        return (Tensor._make(_TOKEN) if isinstance(g, Tensor) else _TOKEN,)

    def name(self) -> str:
        return self.core.name()


_TOKEN_TENSOR: list[Any] = []  # the slots' one input: a 0-d Tensor, made on first use (Tensor is bound late)
