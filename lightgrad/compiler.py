"""Capture and replay of training steps: ``step = lightgrad.compile(train_step)``.

The first call with a given signature (shapes and dtypes of the tensor arguments, the other
arguments' values) runs ``fn`` eagerly while recording every array computation it makes, at the
level where lightgrad computes: the backend calls of primitives marked ``traceable`` (the others'
forward and backward as calls of their own), the engine's gradient sums and accumulation into
leaves, backend calls made by composite code, tensor creation, and the optimizer and scheduler
steps (kept as live calls: they read Python state such as the step count and learning rate). The
record becomes one generated Python function of plain NumPy-level calls: no Tensors, no graph, no
engine walk. The second call runs it with a measuring allocator that records each buffer's size
and lifetime, line by line; buffers whose lifetimes do not overlap are then planned into one
arena, and the function is generated again with the plan in it (``_lower``): every later call
replays into those fixed buffers without allocating.

What is not recorded makes the signature fall back to eager execution, with a warning that says
why: reading tensor values in the step (``.item()``, ``bool(t)``, ``.tolist()``, ``.numpy()``),
drawing random numbers outside a primitive (dropout, ``randn``), ``autograd.grad``,
``create_graph``/``retain_graph``, ``retain_grad``, an optimizer closure, or an array made by code
that bypasses lightgrad's ops. Python side effects other than those (printing, appending to a list)
happen on the tracing call only. Tensors returned by a replayed call live in the plan's arena:
they are valid until the next call, and reading one after that raises (copy with ``.clone()`` or
take ``.item()`` to keep a value).
"""

from __future__ import annotations

import builtins
import functools
import gc
import re
import sys
import threading
import traceback
import warnings
import weakref
from collections.abc import Callable
from typing import Any

from . import _generator
from . import backend as B
from . import memory as M
from ._ops import creation as _creation
from ._ops import random as _tensor_random
from .autograd import differentiate as _differentiate
from .function import Function, SliceGrad
from .nn.functional import activation as _activation
from .nn.functional import attention as _attention
from .nn.functional import dropouts as _dropouts
from .nn.functional import pooling as _pooling
from .nn.module import Module as _Module  # (underscored: lightgrad.compiler's public names stay its own)
from .optim.lr_scheduler import LRScheduler as _LRScheduler
from .optim.optimizer import Optimizer as _Optimizer
from .tensor import Tensor

# the modules themselves (the package exports functions named ``tensor`` and the like)
E = sys.modules[__package__ + ".engine"]
R = sys.modules[__package__ + ".random"]
T = sys.modules[__package__ + ".tensor"]

# The real array namespace and error settings, for the compiler's own array work. Everyone else
# looks ``B.xp`` up at call time; the compiler may not, because it is what swaps ``B.xp`` (and
# ``B.errstate``) for recording stand-ins while a step is traced, and its own calls then (a leaf's
# gradient home, the value of a tensor made in the step) must not be recorded as the step's.
_xp = B.xp
_errstate = B.errstate

# backend functions that only compute metadata or configure: not recorded
_METADATA = {"errstate", "broadcast_shape", "result_type", "can_cast", "set_num_threads", "get_num_threads",
             "parallel", "concurrently"}
_lock = threading.Lock()  # one trace at a time: tracing patches classes and modules

_Maker = Callable[["_Tracer", Any, str, Any], Any]  # (tracer, holder, name, original) -> the stand-in


# ---- what a trace replaces ------------------------------------------------------------------------

# Tensor methods that read values or change the graph: a step that calls one runs eagerly
_VALUE_READS = ("item", "tolist", "numpy", "__array__", "__bool__", "__float__", "__int__", "__index__",
                "retain_grad", "register_hook")


def _patch_points() -> list[tuple[tuple[Any, ...], tuple[str, ...], _Maker]]:
    """Every attribute a trace replaces: (holders, names, maker) rows, applied in order by
    ``_install`` (each named attribute of each holder that has it becomes ``maker(tracer, holder,
    name, original)``) and undone in reverse when the trace ends. A function that callers look up
    through its module at call time (``B.exp``, ``E._accumulate``) is replaced there alone; one that
    modules bind at import (``from ..random import _gen``) in each module that holds it, listed here
    (tests/test_compile.py checks the lists against every module of lightgrad that holds it). Read
    at each trace: classes gain subclasses (a user's optimizer)."""
    return [
        # a primitive's call: its forward and backward recorded as the backend calls they make (each
        # class's forward and backward are replaced on its first call, see _trace_apply)
        ((Function,), ("apply",), _trace_apply),
        # the engine's array work between primitives: sums of broadcast gradients, the implicit
        # gradient of a scalar, sums of a value's gradients, accumulation into leaves
        ((E,), ("unbroadcast",), _recorder("")),
        ((E,), ("_seed_grad",), _trace_seed),
        ((E,), ("_add_grad",), _trace_add_grad),
        ((E,), ("_accumulate",), _trace_accumulate),
        ((SliceGrad,), ("dense",), _recorder("SliceGrad.")),
        # backward passes a replay cannot repeat (autograd.grad, create_graph, retain_graph) are
        # refused: Tensor.backward reaches the engine through tensor, autograd's functions through
        # their own module (both bind run_backward at import)
        ((T, _differentiate), ("run_backward",), _check_backward),
        # composite code's array work: the backend's named functions, its error settings and its
        # array namespace (``B.xp.name``), all looked up through the backend at call time
        ((B,), _backend_functions(), _recorder("backend.")),
        ((B,), ("errstate",), _trace_errstate),
        ((B,), ("xp",), _trace_xp),
        # tensors made in the step (zeros, arange, tensor([...])); _new is defined in _ops.creation
        # (whose creation functions call it there), tensor and random bind it at import
        ((_creation, T, R), ("_new",), _trace_new),
        ((Tensor,), ("grad",), _trace_grad),
        # what a replay cannot repeat: reading values, changing the graph, drawing random numbers
        # (``_gen`` is defined in _generator; the samplers bind it at import)
        ((Tensor,), _VALUE_READS, _refuser("Tensor.{}() (reads values or changes the graph)")),
        # hooks run Python code on values in the step (tensor and module hooks)
        ((E,), ("_run_hooks", "_run_post_hooks"), _refuser("a tensor hook ({})")),
        ((_Module,), ("_call_with_hooks",), _refuser("a module hook ({})")),
        ((_generator, R, _tensor_random, _activation, _attention, _dropouts, _pooling), ("_gen",),
         _refuser("random numbers drawn in the step (dropout, rand, randn)")),
        # optimizer and scheduler steps: replayed as live calls (they read Python state such as the
        # step count and the learning rate), in every class that defines one
        (_defining(_Optimizer, "step"), ("step",), _live),
        (_defining(_Optimizer, "zero_grad"), ("zero_grad",), _live),
        (_defining(_Module, "zero_grad"), ("zero_grad",), _live),
        (_defining(_LRScheduler, "step"), ("step",), _live),
    ]


def _install(tr: _Tracer) -> None:
    for holders, names, make in _patch_points():
        for holder in holders:
            for name in names:
                if hasattr(holder, name):  # (a Tensor without __index__, say)
                    tr.patches.set(holder, name, make(tr, holder, name, getattr(holder, name)))


class _Unsupported(Exception):
    pass


def _flatten(obj: Any, out: list[Tensor]) -> Any:
    """The structure of ``obj`` with every Tensor replaced by its index in ``out`` (a signature)."""
    if isinstance(obj, Tensor):
        out.append(obj)
        return ("T", obj._data.shape, obj._data.dtype.str, obj.requires_grad)
    if isinstance(obj, list | tuple):
        return (type(obj).__name__, tuple(_flatten(o, out) for o in obj))
    if isinstance(obj, dict):
        return ("dict", tuple((k, _flatten(v, out)) for k, v in obj.items()))
    if isinstance(obj, B.ndarray):
        raise TypeError("compile: pass arrays as Tensors (lightgrad.from_numpy(a)), got a NumPy array")
    hash(obj)  # other arguments are part of the signature: they must be hashable values
    return ("V", obj)


# ---- tracing ----------------------------------------------------------------------------------

class _Tracer:
    """Records one eager run of a step as lines of generated code over named values."""

    def __init__(self, inputs: list[Tensor]) -> None:
        self.thread = threading.get_ident()
        self.patches = _Patches()  # what the trace replaced (see _patch_points), undone when it ends
        self.depth = 0  # > 0 inside a recorded call: what it does inside is not recorded again
        self.reason: str | None = None
        self.vals: dict[int, str] = {}  # id(array or gradient object) -> value name
        self.keep: list[Any] = []  # keeps traced objects alive, so their ids stay unique
        self.ns: dict[str, Any] = {"_asarray": _xp.asarray}
        self.lines: list[Any] = []
        self.sink = self.lines  # where recorded lines go: the step's, or a primitive's inner record
        self.node: _Node | None = None  # the primitive whose forward or backward is being recorded
        # a primitive's apply is running: the slot its forward puts its record in (its first call)
        self.pending: list[Any] | None = None
        self.recs: dict[int, _Node] = {}  # id(traced Function node) -> its record
        self.ext_tensors: dict[int, str] = {}  # id(tensor) -> name of the value read at the start
        self.prologue: list[str] = []
        self.n = 0
        # arrays that existed before the trace (tensors' data): external state read live
        # (type(), not isinstance: some objects of other libraries answer __class__ with a warning)
        # (_arr: only the ids, of every Tensor, those an arena reset reclaimed too)
        self.before = {id(o._arr) for o in gc.get_objects() if issubclass(type(o), Tensor)}
        self.args = []
        for t in inputs:
            name = self.value(t._data)
            self.args.append(name)

    def fail(self, why: str) -> None:
        if self.node is not None:  # inside a primitive: that primitive replays as one call instead
            self.node.ok = False
        elif self.reason is None:
            self.reason = why + _where()

    def emit(self, line: Any) -> None:
        self.sink.append(line)

    def inner(self, rec: _Node, part: list[Any], fn: Any, *args: Any) -> Any:
        """``fn(*args)`` (a primitive's forward or backward) with the backend calls it makes
        recorded into ``part`` of the primitive's record, at depth 0 for the time of the call."""
        depth, sink, node = self.depth, self.sink, self.node
        self.depth, self.sink, self.node = 0, part, rec
        try:
            return fn(*args)
        finally:
            self.depth, self.sink, self.node = depth, sink, node

    def value(self, obj: Any) -> str:
        """A fresh name for an object the trace produced."""
        self.n += 1
        name = f"v{self.n}"
        self.vals[id(obj)] = name
        self.keep.append(obj)
        return name

    def const(self, obj: Any) -> str:
        self.n += 1
        name = f"c{self.n}"
        self.ns[name] = obj
        return name

    def ref(self, x: Any, who: str) -> str:
        """The expression for an argument of a recorded call."""
        if isinstance(x, Tensor):
            name = self.vals.get(id(x._data))
            if name is not None:
                return name
            if id(x._data) not in self.before:
                if not x._data.flags.writeable:
                    return self.const(x._data)  # a read-only constant (shape-derived tables)
                self.fail(f"{who} reads a tensor made outside lightgrad's recorded ops")
            name = self.ext_tensors.get(id(x))
            if name is None:
                tname = self.const(x)
                name = self.value(x._data)
                self.ext_tensors[id(x)] = name
                self.prologue.append(f"{name} = {tname}._data")
            return name
        if isinstance(x, B.ndarray | SliceGrad):
            name = self.vals.get(id(x))
            if name is not None:
                return name
            if id(x) not in self.before and not (isinstance(x, B.ndarray) and not x.flags.writeable):
                self.fail(f"{who} reads an array made outside lightgrad's recorded ops")
            return self.const(x)  # read-only constants (the engine's seed ones) and raw external arrays
        if isinstance(x, list | tuple):
            inner = "".join(self.ref(o, who) + ", " for o in x)
            return f"({inner})" if isinstance(x, tuple) else f"[{inner}]"
        if isinstance(x, dict):
            return "{" + ", ".join(f"{k!r}: {self.ref(v, who)}" for k, v in x.items()) + "}"
        return self.const(x)

    def call(self, fn_expr: str, args: tuple[Any, ...], kw: dict[str, Any], who: str) -> str:
        parts = [self.ref(a, who) for a in args] + [f"{k}={self.ref(v, who)}" for k, v in kw.items()]
        return f"{fn_expr}({', '.join(parts)})"

    def out(self, result: Any, reuse: bool = False) -> str:
        """The assignment target for a call's result: a name per array (tuples unpacked); with
        ``reuse``, an array that already has a name keeps it."""
        if isinstance(result, tuple):
            return "(" + "".join(self.out(r, reuse) + ", " for r in result) + ")"
        if isinstance(result, B.ndarray | SliceGrad):
            name = self.vals.get(id(result)) if reuse else None
            return name or self.value(result)
        return "_"

    def active(self) -> bool:
        return self.depth == 0 and self.reason is None and threading.get_ident() == self.thread

    def inside(self, fn: Any, *args: Any, **kw: Any) -> Any:
        """``fn(*args, **kw)`` as one recorded call: what it does inside is not recorded again."""
        self.depth += 1
        try:
            return fn(*args, **kw)
        finally:
            self.depth -= 1


def _where() -> str:
    """Where the step was when tracing stopped: its own innermost line, and lightgrad's."""
    here = __file__.rsplit("/", 1)[0]
    user = ours = None
    for fr in reversed(traceback.extract_stack()[:-2]):
        if fr.filename.startswith(here):
            if ours is None and not fr.filename.endswith("compiler.py"):
                ours = f"{fr.filename[len(here) - len(__package__):]}:{fr.lineno}"
        elif user is None:
            user = f"{fr.filename}:{fr.lineno}"
            break
    return f" (at {user}{', in ' + ours if ours else ''})"


class _Call:
    """A recorded call ``target = fn(*args, **kw)`` (argument expressions as text), kept in parts
    so that the plan can lower it: a NumPy call into a planned buffer, or a view made once."""

    __slots__ = ("target", "fn", "fname", "args", "kw", "wrap", "raw")

    def __init__(self, fn: Any, fname: str, args: list[str], kw: dict[str, str], wrap: bool, raw: Any) -> None:
        self.target, self.fn, self.fname, self.args, self.kw, self.wrap = "_", fn, fname, args, kw, wrap
        self.raw = raw  # the backend's word on it as one NumPy call into a buffer (backend.reduce.raw)

    def __str__(self) -> str:
        call = f"{self.fname}({', '.join(self.args + [f'{k}={v}' for k, v in self.kw.items()])})"
        return f"{self.target} = {'_asarray(' + call + ')' if self.wrap else call}"


class _Node:
    """A traced primitive, recorded two ways: its forward and backward as calls of the node's own
    methods, and as the backend calls they made (``fwd``, ``bwd``). The replay takes the second,
    which skips the node's Python, when both recorded cleanly (``ok``)."""

    __slots__ = ("name", "ok", "first", "fwd", "bwd", "fwd_call", "bwd_call")

    def __init__(self, first: int) -> None:
        self.name, self.ok, self.first = "", True, first  # first: the name count before its forward
        self.fwd: list[Any] = []
        self.bwd: list[Any] = []
        self.fwd_call: list[Any] = []
        self.bwd_call: list[Any] = []


def _recorded(tr: _Tracer, fn: Any, name: str) -> Any:
    """Wrap a backend or engine function: a call from composite code (depth 0) becomes a line."""
    @functools.wraps(fn)
    def wrapper(*args: Any, **kw: Any) -> Any:
        if not tr.active():
            return fn(*args, **kw)
        r = tr.inside(fn, *args, **kw)
        wrap = isinstance(r, _xp.generic)
        if wrap:
            r = _xp.asarray(r)
        lower = getattr(fn, "raw", None)
        line = _Call(fn, tr.const(fn), [tr.ref(a, name) for a in args], {k: tr.ref(v, name) for k, v in kw.items()},
                     wrap, lower and lower(*args, **kw))
        # inside a primitive, an array handed back as it is keeps its name: a fresh one would be
        # defined only by this record, which the replay may not take (see _expand)
        line.target = tr.out(r, reuse=tr.node is not None)
        tr.emit(line)
        return r
    return wrapper


def _results(tr: _Tracer, rec: _Node, part: list[Any], result: Any, first: int) -> str:
    """The target naming a primitive's result: the names its inner record gave the arrays (names
    after ``first``), or fresh ones, aliased in the inner record to the arrays' older names (an
    input handed back as it is); an array with no name at all leaves only the node's own call."""
    if isinstance(result, tuple):
        return "(" + "".join(_results(tr, rec, part, r, first) + ", " for r in result) + ")"
    if not isinstance(result, B.ndarray | SliceGrad):
        return "_"
    name = tr.vals.get(id(result))
    if name is not None and int(name[1:]) > first:
        return name
    fresh = tr.value(result)
    if name is None:
        rec.ok = False
    else:
        part.append(f"{fresh} = {name}")
    return fresh


def _recorded_forward(tr: _Tracer, fn: Any) -> Any:
    def forward(self: Any, *args: Any, **kw: Any) -> Any:
        slot = tr.pending
        if slot is None or threading.get_ident() != tr.thread:
            return fn(self, *args, **kw)
        tr.pending = None  # the primitive's own forward: what it calls inside is plain
        rec = slot[0] = _Node(tr.n)
        if not self.traceable:
            rec.ok = False
            return fn(self, *args, **kw)  # (inside apply's call: nothing in it is recorded)
        return tr.inner(rec, rec.fwd, functools.partial(fn, self, *args, **kw))
    return forward


def _recorded_backward(tr: _Tracer, fn: Any) -> Any:
    def backward(self: Any, g: Any) -> Any:
        rec = tr.recs.get(id(self))
        if rec is None or tr.node is rec or not tr.active():  # (tr.node is rec: an inherited wrapper)
            return fn(self, g)
        gname = tr.ref(g, type(self).__name__ + ".backward")
        first = tr.n
        r = tuple(tr.inner(rec, rec.bwd, fn, self, g) if rec.ok else tr.inside(fn, self, g))
        target = _results(tr, rec, rec.bwd, r, first)
        rec.bwd_call = [f"{target} = {rec.name}.backward({gname})",
                        f"{rec.name}.saved = None"]  # as the engine frees it (retain_graph is refused)
        tr.emit(("bwd", rec))
        return r
    return backward


# NumPy keeps its floating-point error settings in a context variable: a replay sets and resets
# it directly (0.2 us against 1.9 for an errstate block). Settings a replayed op did not name are then
# those of the tracing call.
_ERRVAR = getattr(getattr(getattr(_xp, "_core", None), "_ufunc_config", None), "_extobj_contextvar", None)


class _Errstate:
    """``B.errstate`` (and ``B.xp.errstate``) as traced code sees it: entering and leaving are
    recorded as lines too."""

    def __init__(self, tr: _Tracer, **kw: Any) -> None:
        self.tr, self.kw, self.cm, self.name = tr, kw, _errstate(**kw), ""

    def __enter__(self) -> None:
        self.cm.__enter__()
        tr = self.tr
        if tr.active():
            tr.n += 1
            self.name = name = f"e{tr.n}"
            if _ERRVAR is not None:
                tr.emit(f"{name} = {tr.const(_ERRVAR.set)}({tr.const(_ERRVAR.get())})")
            else:
                tr.emit(f"{name} = {tr.const(functools.partial(_errstate, **self.kw))}(); {name}.__enter__()")

    def __exit__(self, *exc: Any) -> Any:
        if self.name and self.tr.active():
            self.tr.emit(f"{self.tr.const(_ERRVAR.reset)}({self.name})" if _ERRVAR is not None else
                         f"{self.name}.__exit__(None, None, None)")
        return self.cm.__exit__(*exc)


class _UfuncProxy:
    """A ufunc whose calls and ``reduce``/``accumulate`` calls are recorded."""

    def __init__(self, tr: _Tracer, f: Any) -> None:
        self._f = f
        self._call = _recorded(tr, f, f"numpy.{f.__name__}")
        for m in ("reduce", "accumulate", "reduceat", "outer"):
            setattr(self, m, _recorded(tr, getattr(f, m), f"numpy.{f.__name__}.{m}"))

    def __call__(self, *args: Any, **kw: Any) -> Any:
        return self._call(*args, **kw)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._f, name)


class _NumPy:
    """The array namespace as composite code sees it during a trace (``B.xp``): its functions and
    ufuncs record a line when called from the step itself; types, constants and submodules are the
    namespace's own."""

    def __init__(self, tr: _Tracer) -> None:
        self._tr = tr
        self._cache: dict[str, Any] = {}

    def __getattr__(self, name: str) -> Any:
        got = self._cache.get(name)
        if got is not None:
            return got
        obj = getattr(_xp, name)
        if name == "errstate":
            got = functools.partial(_Errstate, self._tr)
        elif isinstance(obj, _xp.ufunc):
            got = _UfuncProxy(self._tr, obj)
        elif callable(obj) and not isinstance(obj, type) and name not in _NP_METADATA:
            got = _recorded(self._tr, obj, f"numpy.{name}")
        else:
            got = obj
        self._cache[name] = got
        return got


_NP_METADATA = {"errstate", "broadcast_shapes", "result_type", "can_cast", "promote_types", "iinfo", "finfo",
                "dtype", "shape", "ndim", "size", "isscalar", "issubdtype", "may_share_memory", "shares_memory",
                "get_printoptions", "geterr", "seterr", "printoptions", "array2string", "array_repr", "array_str"}


class _Patches:
    """Attribute replacements undone in reverse order."""

    def __init__(self) -> None:
        self.undo: list[tuple[Any, str, Any, bool]] = []

    def set(self, obj: Any, attr: str, value: Any) -> None:
        own = attr in vars(obj)
        self.undo.append((obj, attr, vars(obj).get(attr), own))
        setattr(obj, attr, value)

    def restore(self) -> None:
        for obj, attr, old, own in reversed(self.undo):
            if own:
                setattr(obj, attr, old)
            else:
                delattr(obj, attr)
        self.undo.clear()


def _subclasses(cls: type) -> list[type]:
    out, todo = [], [cls]
    while todo:
        c = todo.pop()
        out.append(c)
        todo.extend(c.__subclasses__())
    return out


def _ghost(p: Any) -> Any:
    """A data-less stand-in for a node's parent: backward formulas read only shape, dtype and
    requires_grad from their parents, and the traced graph's arrays can then be freed."""
    if not isinstance(p, Tensor):
        return p
    g = Tensor._make(_xp.broadcast_to(_xp.empty((), p._data.dtype), p._data.shape))
    g.requires_grad = p.requires_grad
    return g


def _defining(base: type, meth: str) -> tuple[type, ...]:
    """``base`` and its subclasses that define ``meth`` themselves."""
    return tuple(c for c in _subclasses(base) if meth in vars(c))


def _backend_functions() -> tuple[str, ...]:
    """The backend's public functions that compute on arrays."""
    return tuple(name for name, fn in vars(B).items() if callable(fn) and not isinstance(fn, type)
                 and not name.startswith("_") and name not in _METADATA)


# ---- the stand-ins a trace installs (see _patch_points) ---------------------------------------------

def _recorder(prefix: str) -> _Maker:
    """A backend or engine function whose calls from composite code become lines."""
    return lambda tr, holder, name, fn: _recorded(tr, fn, prefix + name)


def _refuser(what: str) -> _Maker:
    """A function whose call in the step makes the step run eagerly (``what``: why, ``{}`` its name)."""
    def make(tr: _Tracer, holder: Any, name: str, fn: Any) -> Any:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kw: Any) -> Any:
            if tr.active():
                tr.fail(what.format(name))
            return fn(*args, **kw)
        return wrapper
    return make


def _trace_apply(tr: _Tracer, holder: Any, name: str, bound: Any) -> Any:
    orig_apply = bound.__func__
    patched: set[type] = set()

    def apply(cls: Any, *args: Any, **kw: Any) -> Any:
        if not tr.active():
            return orig_apply(cls, *args, **kw)
        if cls not in patched:
            patched.add(cls)
            tr.patches.set(cls, "forward", _recorded_forward(tr, cls.forward))
            tr.patches.set(cls, "backward", _recorded_backward(tr, cls.backward))
        for a in (*args, *kw.values()):
            if isinstance(a, Tensor):
                tr.ref(a, cls.__name__)  # named before the forward runs, so its inner record reads them live
        slot: list[Any] = [None]
        tr.pending = slot
        try:
            t = tr.inside(orig_apply, cls, *args, **kw)
        finally:
            tr.pending = None
        rec = slot[0]
        if rec is None:
            raise _Unsupported(f"{cls.__name__}.apply did not call its forward")
        node = t._grad_fn
        if node is None:
            node = cls()
            node.parents = tuple(_ghost(a) for a in args)
            node.edges = [None] * len(args)  # no input needs a gradient (needs() reads edges)
        rec.name = tr.const(node)
        tr.recs[id(node)] = rec
        expr = tr.call(f"{rec.name}.forward", args, kw, cls.__name__)
        if t._data.ndim == 0:
            expr = f"_asarray({expr})"  # Tensor._make turns NumPy scalars into 0-d arrays
        rec.fwd_call = [f"{_results(tr, rec, rec.fwd, t._data, rec.first)} = {expr}"]
        tr.emit(("fwd", rec))
        return t

    return classmethod(apply)


def _trace_seed(tr: _Tracer, holder: Any, name: str, orig_seed: Any) -> Any:
    def seed(t: Tensor, g: Any) -> Any:
        if not tr.active() or g is not None:
            return orig_seed(t, g)
        r = tr.inside(orig_seed, t, g)
        tr.vals[id(r)] = tr.const(r)  # the implicit gradient of a scalar: a read-only one
        return r
    return seed


def _trace_add_grad(tr: _Tracer, holder: Any, name: str, orig_add: Any) -> Any:
    # the sums' in-place fast path keys on ids, which a replay cannot carry over: replayed sums
    # start from an empty set of owned arrays (same values, one more buffer)
    add_fresh = _recorded(tr, _add_grad_fresh, "gradient sum")
    return lambda prev, pg, owned: add_fresh(prev, pg) if tr.active() else orig_add(prev, pg, owned)


def _trace_accumulate(tr: _Tracer, holder: Any, name: str, orig_accumulate: Any) -> Any:
    def accumulate(t: Tensor, g: Any, create_graph: bool, steal: bool = False) -> None:
        if not tr.active():
            return orig_accumulate(t, g, create_graph, steal)
        if t._grad_buf is None and t._mem is None and t.grad is None:
            # a fixed home for this leaf's gradient, as an optimizer's flat buffer gives: replayed
            # steps then write gradients there instead of allocating one per step
            t._grad_buf = _xp.empty_like(t._data)
        tr.inside(orig_accumulate, t, g, create_graph)
        acc = _Acc(t, tr.const(t), tr.ref(g, "gradient accumulation"), tr.const(_accumulate_into))
        acc.target = tr.value(t.grad._data)  # type: ignore[union-attr]
        tr.emit(acc)
        return None
    return accumulate


def _check_backward(tr: _Tracer, holder: Any, name: str, orig_run: Any) -> Any:
    def run_backward(outputs: list[Tensor], grad_outputs: list[Any], retain_graph: bool = False,
                     create_graph: bool = False, inputs: Any = None, accumulate_only: Any = None) -> Any:
        if tr.active():
            if inputs is not None or create_graph or retain_graph or accumulate_only is not None or len(outputs) != 1:
                tr.fail("autograd.grad, create_graph, retain_graph, backward(inputs=) or several outputs")
        return orig_run(outputs, grad_outputs, retain_graph, create_graph, inputs, accumulate_only)
    return run_backward


def _trace_errstate(tr: _Tracer, holder: Any, name: str, orig: Any) -> Any:
    return functools.partial(_Errstate, tr)


def _trace_xp(tr: _Tracer, holder: Any, name: str, orig: Any) -> Any:
    return _NumPy(tr)


def _trace_new(tr: _Tracer, holder: Any, name: str, orig_new: Any) -> Any:
    def new(arr: B.ndarray, requires_grad: bool, heap: bool = False) -> Tensor:
        t = orig_new(arr, requires_grad, heap)
        if tr.active() and heap:
            tr.fail("tensor()/as_tensor()/from_numpy() in the step (pass data in as arguments)")
        elif tr.active():
            # a tensor made in the step (zeros, arange, tensor([...])): replayed as a copy of its
            # value then, so in-place updates of it in the step start from the same value each time
            snap = _xp.array(t._data, copy=True)
            snap.flags.writeable = False
            tr.emit(f"{tr.value(t._data)} = copy({tr.const(snap)})")
        return t
    return new


def _trace_grad(tr: _Tracer, holder: Any, name: str, slot: Any) -> Any:
    def set_grad(t: Tensor, value: Any) -> None:
        if tr.active():
            if value is not None:
                tr.fail("assigning a tensor to .grad in the step")
            tr.emit(f"{tr.const(t)}.grad = None")  # set_to_none by hand: replayed
        slot.__set__(t, value)
    return property(slot.__get__, set_grad)


def _live(tr: _Tracer, cls: Any, meth: str, fn: Any) -> Any:
    """A method that a replay calls as it is (optimizer and scheduler steps)."""
    what = f"{cls.__name__}.{meth}"

    @functools.wraps(fn)
    def wrapper(self: Any, *args: Any, **kw: Any) -> Any:
        if not tr.active():
            return fn(self, *args, **kw)
        if any(isinstance(a, Tensor) or callable(a) for a in (*args, *kw.values())):
            tr.fail(f"{what} with a tensor or closure argument")
        try:
            return tr.inside(fn, self, *args, **kw)
        finally:
            tr.emit(f"{tr.const(functools.partial(fn, self, *args, **kw))}()")
    return wrapper


def _add_grad_fresh(prev: Any, pg: Any) -> Any:
    return E._add_grad(prev, pg, set())


class _Acc:
    """A recorded accumulation of gradient ``g`` into leaf ``t``."""

    __slots__ = ("t", "tname", "g", "fname", "target")

    def __init__(self, t: Tensor, tname: str, g: str, fname: str) -> None:
        self.t, self.tname, self.g, self.fname, self.target = t, tname, g, fname, "_"

    def __str__(self) -> str:
        return f"{self.target} = {self.fname}({self.tname}, {self.g})"


def _accumulate_into(t: Tensor, g: Any) -> B.ndarray:
    if g is t._grad_buf and t.grad is None:  # computed straight into the leaf's gradient home (_lower)
        grad = t.grad = Tensor._make(g)
        grad._mem = t._mem
        return g
    E._accumulate(t, g, False)
    return t.grad._data  # type: ignore[union-attr]


# ---- planning -----------------------------------------------------------------------------------

class _Measure(M.Arena):
    """An allocator that hands out heap arrays and records each one's size, birth and death (in
    allocation counts), so that a plan can put buffers with disjoint lifetimes in one place."""

    def __init__(self) -> None:
        super().__init__(64, name="compile-measure")
        M._arenas.pop()  # a passing tool, not listed by memory.stats()
        self.sizes: list[int] = []
        self.shapes: list[tuple[tuple[int, ...], B.xp.dtype]] = []
        self.death: dict[int, int] = {}
        self.line = -1
        self.line_of: list[int] = []  # the replay line that made each buffer

    def at(self, line: int) -> None:
        self.line = line

    def empty(self, shape: tuple[int, ...], dt: Any) -> B.ndarray:
        a = _xp.empty(shape, dt)
        i = len(self.sizes)
        self.sizes.append(a.nbytes)
        self.line_of.append(self.line)
        self.shapes.append((a.shape, a.dtype))
        weakref.finalize(a, self._gone, i)
        return a

    def _gone(self, i: int) -> None:
        self.death[i] = len(self.sizes)


class _Planned(M.Arena):
    """The replay allocator: the i-th request of a step gets the i-th planned buffer, a view made
    once when the plan was made. Each line that allocates sets the span of the plan it may take
    (``i``, ``cap``); a request outside it or unlike the plan's buffer (a primitive replayed as its
    own calls whose allocations depend on values, as cross-entropy's ignored targets) is served
    by the heap, so that it never takes memory another value may still hold."""

    def __init__(self, shapes: list[tuple[tuple[int, ...], B.xp.dtype]], sizes: list[int], offsets: list[int],
                 top: int) -> None:
        super().__init__(max(top, 64), name="compile")
        buf = self._blocks[0]
        self.views = [buf[o:o + n].view(dt).reshape(shape) for (shape, dt), n, o in zip(shapes, sizes, offsets)]
        self.i = self.cap = 0
        self.peak = top

    def empty(self, shape: tuple[int, ...], dt: Any) -> B.ndarray:
        i = self.i
        self.i = i + 1
        if i < self.cap:
            v = self.views[i]
            if v.shape == tuple(shape) and v.dtype == dt:
                return v
        return _xp.empty(shape, dt)

    def reset(self) -> None:
        super().reset()
        self.i = self.cap = 0


# ---- the compiled function ----------------------------------------------------------------------

class _Program:
    """One traced signature: the generated replay function and its memory plan. The first run
    measures each buffer's size and lifetime, line by line; the plan then puts buffers whose
    lifetimes do not overlap in one place, and the replay is generated again with the plan in it
    (see ``_lower``)."""

    def __init__(self, lines: list[Any], args: list[str], ret: str, ns: dict[str, Any], out_struct: Any) -> None:
        self.lines, self.args, self.ret, self.ns, self.out_struct = lines, args, ret, ns, out_struct
        self.code, self.source = _define(args, [f"_at({k}); {line}" for k, line in enumerate(map(str, lines))],
                                         ret, ns)
        self.arena: M.Arena | None = None  # the measuring allocator first, then the plan
        self.intermediate_bytes = 0

    def run(self, inputs: list[Tensor]) -> Any:
        arena = self.arena
        if arena is None:
            arena = _Measure()
            self.ns["_at"] = arena.at
        else:
            arena.reset()
        token = M._current.set(arena)
        try:
            outs = self.code(*[t._data for t in inputs])
        finally:
            M._current.reset(token)
        if isinstance(arena, _Measure):
            sizes = arena.sizes
            self.intermediate_bytes = sum(sizes)
            offsets, top = M.plan(sizes, dict(arena.death))
            self.arena = planned = _Planned(arena.shapes, sizes, offsets, top)
            self.ns["_A"] = planned
            self.code, self.source = _define(self.args, _lower(self.lines, self.ns, arena.line_of, planned),
                                             self.ret, self.ns)
            return _rebuild(self.out_struct, outs, None)
        return _rebuild(self.out_struct, outs, arena._token)


def _define(args: list[str], lines: list[str], ret: str, ns: dict[str, Any]) -> tuple[Callable[..., Any], str]:
    src = f"def _replay({', '.join(args)}):\n" + "".join(f"    {line}\n" for line in _free_after_last_use(lines, ret))
    exec(builtins.compile(src, "<lightgrad.compile>", "exec"), ns)  # noqa: S102 - our own generated code
    return ns["_replay"], src


_VIEWS = {B.reshape, B.transpose, B.expand}  # backend calls that make views: of a planned buffer, made once


def _operand(expr: str, ns: dict[str, Any], dt: B.xp.dtype, const: Callable[[Any], str]) -> str:
    """A number operand of a lowered call as a 0-d array (NumPy converts a Python number on every
    call: 0.6 us against 0.27): of the float result's dtype, which is what NumPy rounds a Python
    number to against it, or of a NumPy scalar's own dtype."""
    v = ns.get(expr, ns)
    if type(v) in (int, float) and dt.kind == "f" or isinstance(v, _xp.generic):
        a = _xp.array(v, dt if type(v) in (int, float) else None)
        a.flags.writeable = False
        return const(a)
    return expr


def _lower(lines: list[Any], ns: dict[str, Any], line_of: list[int], plan: _Planned) -> list[str]:
    """The replay's lines with the plan in them. A backend call that made one buffer (an
    elementwise op, a matrix product, a reduction) becomes the NumPy call writing into that
    buffer's planned place, or into its operand for an in-place one (``fn.raw`` in the backend
    says which call it is); such a call of constants alone is computed here, once, as is a
    reshape, transpose or broadcast of a buffer the plan fixed. Every other call that allocates
    is told its span of the plan (``_A.i``, ``_A.cap``) and takes its buffers there."""
    made: dict[int, list[int]] = {}
    for i, k in enumerate(line_of):
        made.setdefault(k, []).append(i)
    fixed: dict[str, B.ndarray] = {}  # value name -> its array: in the plan's block, or a constant
    out = []
    # a gradient used only to be accumulated into a leaf that gets no other gradient is computed
    # straight into the leaf's gradient home when the leaf has no gradient yet (as PyTorch steals it)
    uses: dict[str, int] = {}
    leaves: dict[int, int] = {}
    for line in lines:
        for name in _NAME.findall(str(line)):
            uses[name] = uses.get(name, 0) + 1
        if isinstance(line, _Acc):
            leaves[id(line.t)] = leaves.get(id(line.t), 0) + 1
    home = {line.g: line for line in lines if isinstance(line, _Acc) and uses.get(line.g) == 2
            and leaves[id(line.t)] == 1 and isinstance(line.t._grad_buf, B.ndarray)}

    def const(obj: Any) -> str:
        name = f"k{len(ns)}"
        ns[name] = obj
        return name

    def value(expr: str) -> Any:  # an argument's value here, if it is fixed (NameError if not)
        return eval(expr, ns, fixed)  # noqa: S307 - our own expressions

    for k, line in enumerate(lines):
        bufs = made.get(k, [])
        if isinstance(line, _Call) and _NAME.fullmatch(line.target):
            raw = line.raw
            if raw is not None and max(raw[1]) < len(line.args) and len(bufs) == (len(raw) == 3):
                fn, pos, kw = raw[:3]
                args = [line.args[i] for i in pos]
                if len(raw) == 3:  # into a fresh buffer
                    view = plan.views[bufs[0]]
                    vals = [ns[a] if a in ns else None for a in args]
                    if all(isinstance(v, int | float) or isinstance(v, B.ndarray) and not v.flags.writeable
                           for v in vals):  # of read-only constants alone (the seed gradient): once
                        folded = fn(*vals, **kw, out=_xp.empty_like(view))
                        folded.flags.writeable = False
                        fixed[line.target] = folded
                        out.append(f"{line.target} = {const(folded)}")
                        continue
                    dest = const(view)
                    args = [_operand(a, ns, view.dtype, const) for a in args]
                    acc = home.get(line.target)
                    gbuf = acc.t._grad_buf if acc is not None else None
                    if acc is not None and gbuf is not None and gbuf.shape == view.shape \
                            and gbuf.dtype == view.dtype == acc.t._data.dtype:
                        gb = const(gbuf)
                        dest = f"({gb} if {acc.tname}.grad is None and {acc.tname}._grad_buf is {gb} else {dest})"
                    else:
                        fixed[line.target] = view
                else:  # in place, into an operand
                    dest = line.args[raw[3]]
                kws = [f"{key}={const(v)}" for key, v in kw.items()]
                out.append(f"{line.target} = {const(fn)}({', '.join(args + kws)}, out={dest})")
                continue
            if line.fn in _VIEWS and not bufs:
                try:
                    args = [value(a) for a in line.args]
                except NameError:  # a value made at replay (an input, or a buffer not in the plan)
                    pass
                else:
                    view = line.fn(*args)
                    if isinstance(view, B.ndarray) and _xp.may_share_memory(view, args[0]):
                        fixed[line.target] = view
                        out.append(f"{line.target} = {const(view)}")
                        continue
        if bufs:
            out.append(f"_A.i, _A.cap = {bufs[0]}, {bufs[-1] + 1}")
        out.append(str(line))
    return out


def _rebuild(struct: Any, outs: tuple[Any, ...], token: Any) -> Any:
    it = iter(outs)

    def build(s: Any) -> Any:
        kind = s[0]
        if kind == "T":
            t = Tensor._make(next(it))
            t._mem = token
            return t
        if kind == "V":
            return s[1]
        if kind == "dict":
            return {k: build(v) for k, v in s[1]}
        items = [build(v) for v in s[1]]
        return tuple(items) if kind == "tuple" else items
    return build(struct)


class Compiled:
    """A step function that is traced once per signature and replayed after (``lightgrad.compile``)."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        functools.update_wrapper(self, fn)
        self.fn = fn
        self.programs: dict[Any, _Program | str] = {}  # signature -> program, or why it runs eagerly

    def __call__(self, *args: Any, **kw: Any) -> Any:
        inputs: list[Tensor] = []
        sig = (_flatten(args, inputs), _flatten(kw, inputs), T._enabled.get())
        prog = self.programs.get(sig)
        if prog is None:
            return self._trace(sig, inputs, args, kw)
        if isinstance(prog, str):
            return self.fn(*args, **kw)
        return prog.run(inputs)

    def _trace(self, sig: Any, inputs: list[Tensor], args: Any, kw: Any) -> Any:
        with _lock:
            tr = _Tracer(inputs)
            try:
                _install(tr)
                result = self.fn(*args, **kw)
            finally:
                tr.patches.restore()
        if tr.reason is None:
            try:
                self.programs[sig] = _generate(tr, result)
            except _Unsupported as e:
                tr.fail(str(e))
        if tr.reason is not None:
            self.programs[sig] = tr.reason
            warnings.warn(f"lightgrad.compile: {getattr(self.fn, '__name__', 'step')} runs eagerly: "
                          f"{tr.reason}", stacklevel=3)
        return result

    def stats(self) -> dict[str, Any]:
        """Per signature: the replay plan's arena bytes vs the sum of its intermediates, or why
        the signature runs eagerly."""
        out: dict[str, Any] = {}
        for sig, p in self.programs.items():
            if isinstance(p, str):
                out[repr(sig)] = p
            else:
                peak = p.arena.peak if isinstance(p.arena, _Planned) else None
                out[repr(sig)] = {"plan_bytes": peak, "intermediate_bytes": p.intermediate_bytes,
                                  "lines": p.source.count("\n")}
        return out


def _generate(tr: _Tracer, result: Any) -> _Program:
    outs: list[Tensor] = []
    struct = _flatten_out(result, outs)
    names = [tr.ref(t, "the step's result") for t in outs]
    if tr.reason is not None:
        raise _Unsupported(tr.reason)
    ns = dict(tr.ns)
    ns["copy"] = B.copy
    ns["__name__"] = __name__  # (the replay's NumPy calls are lightgrad's: see the warnings filter in __init__)
    ret = "(" + "".join(n + ", " for n in names) + ")"
    prog = _Program(_expand(tr.prologue + tr.lines), tr.args, ret, ns, struct)
    # the traced nodes keep their parents only for shapes and requires_grad: drop the arrays
    for rec in tr.recs.values():
        node = ns[rec.name]
        node.parents = tuple(_ghost(p) for p in node.parents)
        node.saved = None
    return prog


def _expand(lines: list[Any]) -> list[Any]:
    """The recorded lines with each primitive's forward and backward in the form it replays in:
    the backend calls it made when both recorded cleanly, else the node's own calls."""
    out: list[Any] = []
    for line in lines:
        if isinstance(line, tuple):
            part, rec = line
            out.extend(_expand((rec.fwd if part == "fwd" else rec.bwd) if rec.ok else
                               (rec.fwd_call if part == "fwd" else rec.bwd_call)))
        else:
            out.append(line)
    return out


def _free_after_last_use(lines: list[str], ret: str) -> list[str]:
    """The lines with ``del`` statements after each value's last use, so that buffers die (and
    their planned memory is reused) as early as in the eager step, then the return."""
    last: dict[str, int] = {}
    for i, line in enumerate(lines):
        for name in _NAME.findall(line):
            last[name] = i
    for name in _NAME.findall(ret):
        last[name] = len(lines)
    dels: dict[int, list[str]] = {}
    for name, i in last.items():
        if i < len(lines):
            dels.setdefault(i, []).append(name)
    out = []
    for i, line in enumerate(lines):
        out.append(line)
        if i in dels:
            out.append("del " + ", ".join(dels[i]))
    return out + [f"return {ret}"]


_NAME = re.compile(r"\bv\d+\b")


def _flatten_out(obj: Any, out: list[Tensor]) -> Any:
    try:
        return _flatten(obj, out)
    except TypeError as e:
        raise _Unsupported(f"the step returns {type(obj).__name__}: {e}") from None


def compile(model: Callable[..., Any] | None = None, **options: Any) -> Any:  # noqa: A001
    """Trace ``model`` (a training step) once per input signature and replay it
    (``step = lightgrad.compile(train_step)``); PyTorch's signature, its options accepted and unused.

    >>> step = compile(lambda x: (x * 2).sum())
    """
    if model is None:
        return lambda f: compile(f, **options)
    if isinstance(model, Compiled):
        return model
    if isinstance(model, _Module):
        return model  # a module's forward alone is not a step (no backward or update): run eagerly
    return Compiled(model)
