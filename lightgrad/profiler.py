"""``torch.profiler`` for lightgrad: CPU time per op, ranges, schedules and Chrome traces.

>>> import lightgrad as torch
>>> from lightgrad.profiler import profile, record_function
>>> x = torch.randn(64, 64)
>>> with profile() as prof:
...     with record_function("step"):
...         y = (x @ x).relu().sum()
>>> print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=5))  # doctest: +SKIP

What is recorded, and under which names:

- every primitive's forward (``Function.apply``), named ``aten::`` plus PyTorch's name for the op
  (``aten::add``, ``aten::matmul``, ``aten::relu``, ``aten::linear``). lightgrad's primitives are not
  ATen's: a composite op shows the primitives it is built from (``x @ x`` of two vectors is
  ``aten::matmul`` then ``aten::reshape``), and ATen's internal calls (``aten::empty``,
  ``aten::resolve_conj``) do not appear. lightgrad's own plumbing nodes are named ``lightgrad::...``;
- each graph node's backward when the engine runs it, under its ``grad_fn`` name (``MulBackward0``);
- a custom ``autograd.Function``'s forward, under its class name, as PyTorch records it;
- optimizer steps, as ``Optimizer.step#SGD.step`` and ``Optimizer.zero_grad#SGD.zero_grad``;
- ``record_function`` ranges, and ``ProfilerStep#N`` ranges when a ``schedule`` is given.

Recording costs nothing while no profiler records: the recording stand-ins (of ``Function.apply``,
each node class's ``backward``, the optimizers' ``step``) are swapped in when recording starts and
the originals put back when it stops, as ``lightgrad.compile`` patches ``Function.apply`` while it
traces; no op checks a flag. ``profile_memory`` counts the bytes of each op's new output arrays (a
view counts none); frees are not tracked, so ``Self CPU Mem`` is never negative as PyTorch's can be.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import re
import socket
import sys
import threading
import time
import warnings
from collections.abc import Callable, Iterable
from enum import Enum
from typing import Any

from . import autograd
from .function import Function
from .optim import Optimizer
from .tensor import Tensor

__all__ = ["FunctionEvent", "FunctionEventAvg", "EventList", "ProfilerAction", "ProfilerActivity", "profile",
           "record_function", "schedule", "supported_activities", "tensorboard_trace_handler"]


class ProfilerActivity(Enum):
    """The activity groups a profiler can record (lightgrad records CPU only)."""

    CPU = 0
    XPU = 1
    MTIA = 2
    CUDA = 3
    HPU = 4
    PrivateUse1 = 5


class ProfilerAction(Enum):
    """What a profiler does at a step, as a ``schedule`` returns it."""

    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3


def supported_activities() -> set[ProfilerActivity]:
    """The activities this build can record: ``{ProfilerActivity.CPU}``."""
    return {ProfilerActivity.CPU}


# ---- events ---------------------------------------------------------------------------------------

def _format_time(us: float) -> str:
    if us >= 1e6:
        return f"{us / 1e6:.3f}s"
    if us >= 1e3:
        return f"{us / 1e3:.3f}ms"
    return f"{us:.3f}us"


def _format_share(us: float, total: float) -> str:
    return "NaN" if total == 0 else f"{us * 100.0 / total:.2f}%"


def _format_memory(nbytes: int) -> str:
    for unit, size in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if abs(nbytes) >= size:
            return f"{nbytes / size:.2f} {unit}"
    return f"{nbytes} B"


class _Interval:
    """An event's start and end in microseconds since its profiler began (``time_range``)."""

    __slots__ = ("start", "end")

    def __init__(self, start: float, end: float) -> None:
        self.start = start
        self.end = end

    def elapsed_us(self) -> float:
        """The interval's length in microseconds."""
        return self.end - self.start


class _TimesMixin:
    """The formatted forms of an event's times (``cpu_time_str`` and the like)."""

    cpu_time_total: float
    self_cpu_time_total: float
    count: int
    # no device: the device columns read zero, as PyTorch's do on a CPU-only run
    device_time_total = self_device_time_total = device_time = 0.0
    cuda_time_total = self_cuda_time_total = cuda_time = 0.0
    device_memory_usage = self_device_memory_usage = 0
    is_async = False
    is_remote = False
    is_legacy = False
    node_id = -1
    use_device = None
    flops = 0
    overload_name = ""

    @property
    def cpu_time(self) -> float:
        return self.cpu_time_total / max(self.count, 1)

    @property
    def cpu_time_str(self) -> str:
        return _format_time(self.cpu_time)

    @property
    def cpu_time_total_str(self) -> str:
        return _format_time(self.cpu_time_total)

    @property
    def self_cpu_time_total_str(self) -> str:
        return _format_time(self.self_cpu_time_total)


class FunctionEvent(_TimesMixin):
    """One recorded call: an op, a backward node, a range; times in microseconds."""

    count = 1

    def __init__(self, name: str, cat: str, start_ns: int, thread: int, parent: FunctionEvent | None) -> None:
        self.name = name
        self.cat = cat  # the Chrome trace's category: "cpu_op" or "user_annotation"
        self.start_ns = start_ns
        self.end_ns = start_ns
        self.thread = thread
        self.cpu_parent = parent
        self.cpu_children: list[FunctionEvent] = []
        self.input_shapes: list[list[int]] = []
        self.stack: list[str] = []
        self.self_cpu_memory_usage = 0
        self.owner: Any = None  # the node or optimizer whose method this is (nested repeats are not recorded)
        self.base_ns = 0  # the profiler's start, for time_range

    @property
    def key(self) -> str:
        """The name ``key_averages`` groups events by."""
        return self.name

    @property
    def is_user_annotation(self) -> bool:
        """Whether the event is a ``record_function`` range rather than an op."""
        return self.cat == "user_annotation"

    @property
    def cpu_time_total(self) -> float:  # type: ignore[override]
        """The event's duration in microseconds, its children included."""
        return (self.end_ns - self.start_ns) / 1e3

    @property
    def self_cpu_time_total(self) -> float:  # type: ignore[override]
        """The event's duration in microseconds less its children's."""
        return self.cpu_time_total - sum(c.cpu_time_total for c in self.cpu_children)

    @property
    def cpu_memory_usage(self) -> int:
        """Bytes allocated by the event and its children."""
        return self.self_cpu_memory_usage + sum(c.cpu_memory_usage for c in self.cpu_children)

    @property
    def time_range(self) -> _Interval:
        """The event's start and end, in microseconds since profiling began."""
        return _Interval((self.start_ns - self.base_ns) / 1e3, (self.end_ns - self.base_ns) / 1e3)

    def __repr__(self) -> str:
        return (f"<FunctionEvent name={self.name} cpu_time={self.cpu_time_str} "
                f"self_cpu_time={self.self_cpu_time_total_str} thread={self.thread} input_shapes={self.input_shapes}>")


class FunctionEventAvg(_TimesMixin):
    """Events of one key (and input shapes or stack, when grouped by them) added up."""

    def __init__(self, key: str | None = None) -> None:
        self.key = key
        self.count = 0
        self.cpu_time_total = 0.0
        self.self_cpu_time_total = 0.0
        self.cpu_memory_usage = 0
        self.self_cpu_memory_usage = 0
        self.input_shapes: Any = ""
        self.stack: list[str] = []
        self.is_user_annotation = False

    def add(self, other: FunctionEvent | FunctionEventAvg) -> FunctionEventAvg:
        """Add an event's (or another average's) times and counts to this one."""
        self.count += other.count
        self.cpu_time_total += other.cpu_time_total
        self.self_cpu_time_total += other.self_cpu_time_total
        self.cpu_memory_usage += other.cpu_memory_usage
        self.self_cpu_memory_usage += other.self_cpu_memory_usage
        self.is_user_annotation = other.is_user_annotation
        return self

    def __repr__(self) -> str:
        return (f"<FunctionEventAvg key={self.key} self_cpu_time={self.self_cpu_time_total_str} "
                f"cpu_time={self.cpu_time_str} input_shapes={self.input_shapes} cpu_memory_usage={self.cpu_memory_usage}>")


class EventList(list):  # type: ignore[type-arg]
    """A list of events (``prof.events()``) or of their averages (``prof.key_averages()``)."""

    def __init__(self, events: Iterable[Any] = (), profile_memory: bool = False, with_flops: bool = False,
                 use_device: str | None = None) -> None:
        super().__init__(events)
        self._profile_memory = profile_memory

    def table(self, sort_by: str | None = None, row_limit: int = 100, max_src_column_width: int = 75,
              max_name_column_width: int = 55, max_shapes_column_width: int = 80, header: str | None = None,
              top_level_events_only: bool = False, time_unit: str | None = None) -> str:
        """The events as PyTorch's text table: name, self and total CPU time, calls (input shapes
        when grouped by them, source lines with ``with_stack``), sorted by ``sort_by`` descending."""
        return _table(self, sort_by, row_limit, max_src_column_width, max_name_column_width,
                      max_shapes_column_width, header, top_level_events_only, time_unit, self._profile_memory)

    def key_averages(self, group_by_input_shapes: bool = False, group_by_stack_n: int = 0) -> EventList:
        """The events averaged over their keys (and input shapes / top ``group_by_stack_n`` frames)."""
        groups: dict[tuple[Any, ...], FunctionEventAvg] = {}
        for e in self:
            name = "ProfilerStep*" if e.key.startswith("ProfilerStep#") else e.key
            key: tuple[Any, ...] = (name,)
            if group_by_input_shapes:
                key += (str(e.input_shapes),)
            if group_by_stack_n:
                key += tuple(e.stack[:group_by_stack_n])
            avg = groups.get(key)
            if avg is None:
                avg = groups[key] = FunctionEventAvg(name)
                if group_by_input_shapes:
                    avg.input_shapes = e.input_shapes
                if group_by_stack_n:
                    avg.stack = e.stack[:group_by_stack_n]
            avg.add(e)
        return EventList(groups.values(), profile_memory=self._profile_memory)

    def total_average(self) -> FunctionEventAvg:
        """All events added up, under the key ``Total``."""
        total = FunctionEventAvg("Total")
        for e in self:
            total.add(e)
        total.key = "Total"
        return total

    def __str__(self) -> str:
        return self.table()


def _table(events: list[Any], sort_by: str | None, row_limit: int, max_src: int | None, max_name: int | None,
           max_shapes: int | None, header: str | None, top_level_only: bool, time_unit: str | None,
           profile_memory: bool) -> str:
    if not events:
        return ""
    if sort_by is not None:
        attr = sort_by.replace("cuda", "device").replace("xpu", "device").replace("privateuse1", "device")
        events = sorted(events, key=lambda e: getattr(e, attr), reverse=True)
    has_shapes = any(e.input_shapes for e in events)
    stacks = [e.stack for e in events if e.stack]
    name_w = max(len(e.key) for e in events) + 4
    name_w = min(name_w, max_name) if max_name is not None else name_w
    shapes_w = max(len(str(e.input_shapes)) for e in events) + 4
    shapes_w = min(shapes_w, max_shapes) if max_shapes is not None else shapes_w
    src_w = max(len(line) for s in stacks for line in s) + 4 if stacks else 0
    src_w = min(src_w, max_src) if max_src is not None and stacks else src_w

    heads = ["Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg"]
    if profile_memory:
        heads += ["CPU Mem", "Self CPU Mem"]
    heads.append("# of Calls")
    widths = [name_w] + [12] * (len(heads) - 1)
    aligns = [">"] * len(heads)
    if has_shapes:
        heads.append("Input Shapes")
        widths.append(shapes_w)
        aligns.append(">")
    if stacks:
        heads.append("Source Location")
        widths.append(src_w)
        aligns.append("<")
    row = "".join("{:" + a + str(w) + "}  " for a, w in zip(aligns, widths))
    sep = "".join("-" * w + "  " for w in widths)
    line_length = sum(w + 2 for w in widths) - 2

    def fmt_time(us: float) -> str:
        scale = {"s": 1e6, "ms": 1e3, "us": 1.0}.get(time_unit or "")
        return _format_time(us) if scale is None else f"{us / scale:.3f}{time_unit}"

    def trim(path: str) -> str:
        if len(path) > src_w:
            path = path[len(path) - src_w:]
            if len(path) > 3:
                path = "..." + path[3:]
        return path

    total_self = sum(e.self_cpu_time_total for e in events)
    out: list[str] = []
    if header is not None:
        out += ["=" * line_length, header]
    if top_level_only:
        out += ["=" * line_length, "This report only display top-level ops statistics"]
    out += [sep, row.format(*heads), sep]
    shown = 0
    for e in events:
        if shown == row_limit:
            break
        if top_level_only and getattr(e, "cpu_parent", None) is not None:
            continue
        shown += 1
        name = e.key
        if max_name is not None and len(name) >= max_name - 3:
            name = name[:max_name - 3] + "..."
        values: list[Any] = [name, _format_share(e.self_cpu_time_total, total_self), fmt_time(e.self_cpu_time_total),
                             _format_share(e.cpu_time_total, total_self), fmt_time(e.cpu_time_total),
                             fmt_time(e.cpu_time)]
        if profile_memory:
            values += [_format_memory(e.cpu_memory_usage), _format_memory(e.self_cpu_memory_usage)]
        values.append(e.count)
        if has_shapes:
            values.append(str(e.input_shapes)[:shapes_w])
        if stacks:
            values.append(trim(e.stack[0]) if e.stack else "")
        out.append(row.format(*values))
        if stacks:
            blank = [""] * (len(heads) - 1)
            out += [row.format(*blank, trim(line)) for line in e.stack[1:]]
            out.append(row.format(*blank, ""))
    out += [sep, f"Self CPU time total: {fmt_time(total_self)}"]
    return "".join(s + "\n" for s in out)


# ---- recording ------------------------------------------------------------------------------------

class _Recorder:
    """The events of the profilers now recording (``sinks``), each thread's open ranges, and the
    stand-ins that are installed while any profiler records."""

    def __init__(self) -> None:
        self.sinks: list[profile] = []
        self.local = threading.local()
        self.lock = threading.Lock()
        self.patches: list[tuple[Any, str, Any, Any]] = []  # (holder, name, original, stand-in)
        self.record_shapes = False
        self.profile_memory = False
        self.with_stack = False

    def stack(self) -> list[FunctionEvent]:
        st = getattr(self.local, "stack", None)
        if st is None:
            st = self.local.stack = []
        return st

    def open(self, name: str, cat: str, owner: Any = None) -> FunctionEvent | None:
        """Start an event on this thread (None when a profiler stopped recording meanwhile, or when
        ``owner``'s same method is already the innermost event: an override calling ``super()``)."""
        st = self.stack()
        parent = st[-1] if st else None
        if not self.sinks or owner is not None and parent is not None and parent.owner is owner and parent.name == name:
            return None
        ev = FunctionEvent(name, cat, 0, threading.get_native_id(), parent)
        ev.owner = owner
        if self.with_stack:
            ev.stack = _user_stack()
        st.append(ev)
        ev.start_ns = time.perf_counter_ns()
        return ev

    def close(self, ev: FunctionEvent) -> None:
        ev.end_ns = time.perf_counter_ns()
        st = self.stack()
        if st and st[-1] is ev:
            st.pop()
        elif ev in st:  # (a range closed out of order: its inner ones end with it)
            del st[st.index(ev):]
        if ev.cpu_parent is not None:
            ev.cpu_parent.cpu_children.append(ev)
        for sink in self.sinks:
            sink._events.append(ev)

    def add_sink(self, prof: profile) -> None:
        with self.lock:
            if not self.sinks:
                self.record_shapes, self.profile_memory, self.with_stack = (
                    prof.record_shapes, prof.profile_memory, prof.with_stack)
                self.install()
            else:  # nested profilers share the events; the options are the union of theirs
                self.record_shapes |= prof.record_shapes
                self.profile_memory |= prof.profile_memory
                self.with_stack |= prof.with_stack
            self.sinks.append(prof)

    def remove_sink(self, prof: profile) -> None:
        with self.lock:
            if prof in self.sinks:
                self.sinks.remove(prof)
                if not self.sinks:
                    self.uninstall()

    def patch(self, holder: Any, name: str, make: Callable[[Any], Any]) -> None:
        original = holder.__dict__[name]
        standin = make(original)
        setattr(holder, name, standin)
        self.patches.append((holder, name, original, standin))

    def install(self) -> None:
        self.patch(Function, "apply", _recording_apply)
        for cls in _subclasses(Function):
            if "backward" in cls.__dict__:
                self.patch(cls, "backward", _recording_backward)
        custom = autograd.Function
        if "apply" in custom.__dict__:
            self.patch(custom, "apply", _recording_custom_apply)
        for cls in [Optimizer, *_subclasses(Optimizer)]:
            for method in ("step", "zero_grad"):
                if method in cls.__dict__:
                    self.patch(cls, method, _recording_method(method))

    def uninstall(self) -> None:
        while self.patches:
            holder, name, original, standin = self.patches.pop()
            # (a later patcher, lightgrad.compile tracing, replaced ours: leave its in place; it puts
            # back ours when it ends, which then calls through to the original unrecorded)
            if holder.__dict__.get(name) is standin:
                setattr(holder, name, original)


_REC = _Recorder()
_LIGHTGRAD_DIR = os.path.dirname(os.path.abspath(__file__))


def _subclasses(cls: type) -> list[type]:
    found: list[type] = []
    todo = [cls]
    while todo:
        sub: type
        for sub in todo.pop().__subclasses__():
            if sub not in found:
                found.append(sub)
                todo.append(sub)
    return found


def _user_stack() -> list[str]:
    """The caller's Python frames outside lightgrad, innermost first ("file(line): function")."""
    out = []
    f: Any = sys._getframe(2)
    while f is not None:
        path = f.f_code.co_filename
        if not os.path.abspath(path).startswith(_LIGHTGRAD_DIR):
            out.append(f"{path}({f.f_lineno}): {f.f_code.co_name}")
        f = f.f_back
    return out


def _shapes(args: tuple[Any, ...]) -> list[list[int]]:
    return [list(a._arr.shape) if isinstance(a, Tensor) else [] for a in args]


def _new_bytes(out: Any) -> int:
    outs = out if isinstance(out, tuple | list) else (out,)
    return sum(o._arr.nbytes for o in outs if isinstance(o, Tensor) and o._arr.base is None)


# PyTorch's op names where lightgrad's primitive is named differently (the rest are aten:: plus the
# class name in snake case: LogSoftmax is aten::log_softmax); keyed by class name, or by module and
# class name where two primitives share a name
_ATEN = {
    "MatMul": "matmul", "GetItem": "index", "IndexPut": "index_put_", "Copy": "copy_", "Cast": "to",
    "MaxDim": "max", "Pad": "constant_pad_nd", "CrossEntropy": "cross_entropy_loss", "LSTMLayer": "lstm",
    "GRULayer": "gru", "RNNLayer": "rnn_tanh", "ConvStride1": "conv2d", "LuFactor": "linalg_lu_factor",
    "QrFactor": "linalg_qr", "SvdFactor": "linalg_svd", "EighFactor": "linalg_eigh", "Cholesky": "linalg_cholesky",
    "Inv": "linalg_inv", "Det": "linalg_det", "LogAbsDet": "linalg_slogdet", "Solve": "linalg_solve",
    "SolveTriangular": "linalg_solve_triangular", "LogSigmoid": "log_sigmoid",
    "lightgrad.nn.functional._window_kernels.Unfold": "im2col",
    "lightgrad.nn.functional._window_kernels.Fold": "col2im",
}
_names: dict[type, str] = {}


def _op_name(cls: type) -> str:
    """The name a primitive's forward is recorded under (``aten::add`` for ``Add``)."""
    name = _names.get(cls)
    if name is None:
        base = cls.__name__
        aten = _ATEN.get(f"{cls.__module__}.{base}", _ATEN.get(base))
        if aten is not None:
            name = "aten::" + aten
        elif base.startswith("_") or not cls.__module__.startswith("lightgrad."):
            name = "lightgrad::" + base.lstrip("_")  # lightgrad's plumbing, or a user's own primitive
        elif base in ("ZeroGrad", "NotDifferentiable", "OnceDifferentiable", "MultiOutput"):
            name = "lightgrad::" + base
        else:
            name = "aten::" + re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", base).lower()
        _names[cls] = name
    return name


def _recording_apply(original: Any) -> Any:
    apply = original.__func__

    def recorded(cls: Any, *args: Any, **kw: Any) -> Any:
        ev = _REC.open(_op_name(cls), "cpu_op")
        if ev is None:
            return apply(cls, *args, **kw)
        if _REC.record_shapes:
            ev.input_shapes = _shapes(args)
        try:
            out = apply(cls, *args, **kw)
        finally:
            _REC.close(ev)
        if _REC.profile_memory:
            ev.self_cpu_memory_usage = _new_bytes(out)
        return out
    return classmethod(recorded)


def _recording_custom_apply(original: Any) -> Any:
    apply = original.__func__

    def recorded(cls: Any, *args: Any, **kw: Any) -> Any:
        ev = _REC.open(cls.__name__, "cpu_op")
        if ev is None:
            return apply(cls, *args, **kw)
        if _REC.record_shapes:
            ev.input_shapes = _shapes(args)
        try:
            return apply(cls, *args, **kw)
        finally:
            _REC.close(ev)
    return classmethod(recorded)


def _recording_backward(backward: Callable[..., Any]) -> Callable[..., Any]:
    def recorded(self: Any, *args: Any, **kw: Any) -> Any:
        # (a bfloat16 node's class calls its base class's backward: one event, not two)
        ev = _REC.open(self.name(), "cpu_op", owner=self)
        if ev is None:
            return backward(self, *args, **kw)
        try:
            return backward(self, *args, **kw)
        finally:
            _REC.close(ev)
    recorded.__wrapped__ = backward  # type: ignore[attr-defined]
    return recorded


def _recording_method(method: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    def make(fn: Callable[..., Any]) -> Callable[..., Any]:
        def recorded(self: Any, *args: Any, **kw: Any) -> Any:
            ev = _REC.open(f"Optimizer.{method}#{type(self).__name__}.{method}", "cpu_op", owner=self)
            if ev is None:
                return fn(self, *args, **kw)
            try:
                return fn(self, *args, **kw)
            finally:
                _REC.close(ev)
        recorded.__wrapped__ = fn  # type: ignore[attr-defined]
        return recorded
    return make


class record_function(contextlib.ContextDecorator):
    """A named range in the profile (``with record_function("name"):``, or as a decorator); its
    self time excludes the ops and ranges inside it. Costs one check when no profiler records."""

    def __init__(self, name: str, args: str | None = None) -> None:
        self.name = name
        self.args = args
        self._events: list[FunctionEvent | None] = []  # (a decorated function may recurse)

    def __enter__(self) -> record_function:
        self._events.append(_REC.open(self.name, "user_annotation") if _REC.sinks else None)
        return self

    def __exit__(self, *exc: Any) -> None:
        ev = self._events.pop() if self._events else None
        if ev is not None:
            _REC.close(ev)


# ---- schedules ------------------------------------------------------------------------------------

def schedule(*, wait: int, warmup: int, active: int, repeat: int = 0, skip_first: int = 0,
             skip_first_wait: int = 0) -> Callable[[int], ProfilerAction]:
    """A profiler schedule: skip ``skip_first`` steps, then cycles of ``wait`` idle steps, ``warmup``
    steps and ``active`` recorded steps (the last of which saves), ``repeat`` times (0: forever)."""
    if wait < 0 or warmup < 0 or active <= 0 or repeat < 0 or skip_first < 0:
        raise AssertionError(
            f"Invalid profiler schedule arguments. Got wait={wait} (need >= 0), warmup={warmup} (need >= 0), "
            f"active={active} (need > 0), repeat={repeat} (need >= 0), skip_first={skip_first} (need >= 0).")
    if warmup == 0:
        warnings.warn("Profiler won't be using warmup, this can skew profiler results", stacklevel=2)
    cycle = wait + warmup + active

    def schedule_fn(step: int) -> ProfilerAction:
        if step < 0:
            raise AssertionError(f"Step must be non-negative. Got {step}.")
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        if skip_first_wait != 0:  # the first cycle starts without its wait
            step += wait
        if repeat > 0 and step / cycle >= repeat:
            return ProfilerAction.NONE
        phase = step % cycle
        if phase < wait:
            return ProfilerAction.NONE
        if phase < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD if phase < cycle - 1 else ProfilerAction.RECORD_AND_SAVE
    return schedule_fn


def _always_record(step: int) -> ProfilerAction:
    return ProfilerAction.RECORD


def tensorboard_trace_handler(dir_name: str, worker_name: str | None = None, use_gzip: bool = False,
                              use_python_export: bool = False) -> Callable[[profile], None]:
    """An ``on_trace_ready`` that writes each cycle's Chrome trace into ``dir_name`` as
    ``{worker}.{time_ns}.pt.trace.json`` (TensorBoard's profiler plugin reads that directory)."""
    def handler(prof: profile) -> None:
        nonlocal worker_name
        if not os.path.isdir(dir_name):
            try:
                os.makedirs(dir_name, exist_ok=True)
            except Exception as e:
                raise RuntimeError("Can't create directory: " + dir_name) from e
        if not worker_name:
            worker_name = f"{socket.gethostname()}_{os.getpid()}"
        name = f"{worker_name}.{time.time_ns()}.pt.trace.json" + (".gz" if use_gzip else "")
        prof.export_chrome_trace(os.path.join(dir_name, name))
    return handler


# ---- the profiler ---------------------------------------------------------------------------------

_T = ProfilerAction


class profile:
    """Record the ops run inside it (``with profile() as prof:``), then read them with
    ``prof.key_averages().table()`` or ``prof.export_chrome_trace(path)``; with a ``schedule``,
    call ``prof.step()`` once per step and only the active steps are recorded."""

    def __init__(self, activities: Iterable[ProfilerActivity] | None = None, *,
                 schedule: Callable[[int], ProfilerAction] | None = None,
                 on_trace_ready: Callable[[profile], Any] | None = None, record_shapes: bool = False,
                 profile_memory: bool = False, with_stack: bool = False, with_flops: bool = False,
                 with_modules: bool = False, experimental_config: Any = None,
                 execution_trace_observer: Any = None, acc_events: bool = False, use_cuda: bool | None = None,
                 custom_trace_id_callback: Callable[[], str] | None = None) -> None:
        acts = set(activities) if activities is not None else {ProfilerActivity.CPU}
        if use_cuda:
            acts.add(ProfilerActivity.CUDA)
        for act in sorted(acts - {ProfilerActivity.CPU}, key=lambda a: a.value):
            warnings.warn(f"{act.name} is not available, disabling {act.name} profiling", stacklevel=2)
        self.activities = acts
        self.record_shapes = record_shapes
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.with_flops = with_flops
        self.acc_events = acc_events
        self.record_steps = schedule is not None
        self.schedule = schedule or _always_record
        self.on_trace_ready = on_trace_ready
        self.step_num = 0
        self.current_action = self.schedule(0)
        self._step_range: record_function | None = None
        self._events: list[FunctionEvent] = []  # the events being recorded (in the order they end)
        self._finished: EventList | None = None  # the last stopped recording's events, by start time
        self._started = False
        self._base_ns = 0
        self._wall_ns = 0

    # the actions at each change of schedule state (PyTorch's table): "prepare" clears, "start" and
    # "stop" bound the recording, "ready" calls on_trace_ready; "warn" an unexpected order
    _TRANSITIONS: dict[tuple[ProfilerAction, ProfilerAction | None], tuple[str, ...]] = {
        (_T.NONE, _T.WARMUP): ("prepare",), (_T.NONE, _T.RECORD): ("prepare", "start"),
        (_T.NONE, _T.RECORD_AND_SAVE): ("prepare", "start"),
        (_T.WARMUP, _T.NONE): ("warn", "start", "stop"), (_T.WARMUP, _T.RECORD): ("start",),
        (_T.WARMUP, _T.RECORD_AND_SAVE): ("start",),
        (_T.RECORD, _T.NONE): ("warn", "stop"), (_T.RECORD, _T.WARMUP): ("warn", "stop"),
        (_T.RECORD_AND_SAVE, _T.NONE): ("stop", "ready"),
        (_T.RECORD_AND_SAVE, _T.WARMUP): ("stop", "ready", "prepare"),
        (_T.RECORD_AND_SAVE, _T.RECORD): ("stop", "ready", "prepare", "start"),
        (_T.RECORD_AND_SAVE, _T.RECORD_AND_SAVE): ("stop", "ready", "prepare", "start"),
        (_T.WARMUP, None): ("start", "stop"), (_T.RECORD, None): ("stop", "ready"),
        (_T.RECORD_AND_SAVE, None): ("stop", "ready"),
    }

    def _transit(self, prev: ProfilerAction, current: ProfilerAction | None) -> None:
        for action in self._TRANSITIONS.get((prev, current), ()):
            if action == "warn":
                warnings.warn(f"Incorrect schedule: {prev.name} followed by {current.name if current else None}",
                              stacklevel=3)
            elif action == "prepare":
                self._started = True
                if not self.acc_events:
                    self._events = []
            elif action == "start":
                self._started = True
                if not self._events:
                    self._base_ns, self._wall_ns = time.perf_counter_ns(), time.time_ns()
                _REC.add_sink(self)
            elif action == "stop":
                _REC.remove_sink(self)
                self._finish()
            elif action == "ready" and self.on_trace_ready is not None:
                self.on_trace_ready(self)

    def _finish(self) -> None:
        events = sorted(self._events, key=lambda e: e.start_ns)
        for e in events:
            e.base_ns = self._base_ns
        self._finished = EventList(events, profile_memory=self.profile_memory)

    def start(self) -> None:
        """Begin (the schedule's step 0)."""
        self._transit(_T.NONE, self.current_action)
        if self.record_steps:
            self._step_range = record_function(f"ProfilerStep#{self.step_num}")
            self._step_range.__enter__()

    def stop(self) -> None:
        """End: the recording stops and ``on_trace_ready`` runs if a cycle was being recorded."""
        if self._step_range is not None:
            self._step_range.__exit__(None, None, None)
            self._step_range = None
        self._transit(self.current_action, None)

    def step(self) -> None:
        """Mark the start of the next step (moves the schedule on)."""
        if self._step_range is not None:
            self._step_range.__exit__(None, None, None)
            self._step_range = None
        prev = self.current_action
        self.step_num += 1
        self.current_action = self.schedule(self.step_num)
        self._transit(prev, self.current_action)
        if self.record_steps:
            self._step_range = record_function(f"ProfilerStep#{self.step_num}")
            self._step_range.__enter__()

    def __enter__(self) -> profile:
        self.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def events(self) -> EventList:
        """The events of the last recording, in start order."""
        if self._finished is None:
            if not self._started:
                raise AssertionError("Profiler must be initialized before getting events")
            return EventList([], profile_memory=self.profile_memory)
        return self._finished

    def key_averages(self, group_by_input_shape: bool = False, group_by_stack_n: int = 0,
                     group_by_overload_name: bool = False) -> EventList:
        """The events averaged over their names (and input shapes, or the top stack frames)."""
        if not self._started:
            raise AssertionError("Profiler must be initialized before getting key averages")
        return self.events().key_averages(group_by_input_shape, group_by_stack_n)

    def export_chrome_trace(self, path: str) -> None:
        """Write the Chrome trace event JSON (chrome://tracing, https://ui.perfetto.dev) to ``path``
        (gzip-compressed when it ends in ``.gz``)."""
        pid = os.getpid()
        # ts are microseconds after baseTimeNanoseconds (the start's wall clock, to the second)
        base_time = self._wall_ns - self._wall_ns % 1_000_000_000
        base, wall = self._base_ns, self._wall_ns - base_time
        events = self.events()
        trace: list[dict[str, Any]] = [
            {"ph": "M", "name": "process_name", "ts": wall / 1e3, "pid": pid, "tid": 0, "args": {"name": "python"}},
            {"ph": "M", "name": "process_labels", "ts": wall / 1e3, "pid": pid, "tid": 0, "args": {"labels": "CPU"}}]
        for tid in sorted({e.thread for e in events}):
            trace.append({"ph": "M", "name": "thread_name", "ts": wall / 1e3, "pid": pid, "tid": tid,
                          "args": {"name": f"thread {tid} (python)"}})
        for i, e in enumerate(events):
            args: dict[str, Any] = {"External id": i + 1, "Ev Idx": i}
            if e.input_shapes:
                args["Input Dims"] = e.input_shapes
            if e.stack:
                args["Call stack"] = ";".join(reversed(e.stack))
            trace.append({"ph": "X", "cat": e.cat, "name": e.name, "pid": pid, "tid": e.thread,
                          "ts": (wall + e.start_ns - base) / 1e3, "dur": (e.end_ns - e.start_ns) / 1e3,
                          "args": args})
        doc = {"schemaVersion": 1, "deviceProperties": [], "record_shapes": int(self.record_shapes),
               "displayTimeUnit": "ms", "baseTimeNanoseconds": base_time,
               "traceEvents": trace, "traceName": path}
        text = json.dumps(doc)
        if path.endswith(".gz"):
            with gzip.open(path, "wt") as f:
                f.write(text)
        else:
            with open(path, "w") as f:
                f.write(text)

