"""The optimizer base: parameter groups, per-parameter state, and the one update loop every optimizer shares.

An optimizer subclass is two small methods: ``_advance`` (the per-parameter scalars, e.g. ``step += 1``)
and ``_rule`` (this step's elementwise update, as a function of arrays). The base class does everything else.

Speed comes from flat buffers. At construction each group's parameters of one dtype are laid end to end
in one contiguous array (a ``_Pack``) and every parameter's storage is rebound to its slice, so the
parameter *is* a view of the flat buffer (the Tensor objects stay the same). Each parameter also gets
``_grad_buf``, its slice of a flat gradient buffer, where the backward engine writes its first gradient
(``engine._accumulate``). After backward, when every gradient is such a view, one step is a fixed handful
of NumPy passes over the flat arrays, whatever the number of parameter tensors. State buffers (``exp_avg``
...) are flat too, and ``state[p]`` holds Tensor views into them, so ``state_dict`` has PyTorch's layout.
The rule runs chunk by chunk, each chunk small enough to stay in cache across its passes, and long runs
are shared by two threads (NumPy releases the GIL); every element goes through the same passes either way,
so the result does not depend on the chunking or the threads.

Anything unusual falls back to a correct slower path: a parameter whose grad is None is skipped (its state
does not advance), a gradient the user assigned (``p.grad = g``) is read from where it is, and a parameter
whose storage was replaced (``p.data = x``) or a changed group is re-packed, state carried over.
"""

from __future__ import annotations

import operator
import os
import warnings
from collections import defaultdict
from collections.abc import Callable
from copy import deepcopy
from itertools import chain
from typing import Any, ClassVar

from .. import backend as B
from .. import dtypes as D
from .. import memory
from ..grad_mode import enable_grad
from ..tensor import _STAMP, Tensor

# Cache blocking. A rule is 4-12 NumPy passes over the same arrays; run pass by pass over 16 MB arrays,
# each pass streams every array from memory again. Run chunk by chunk, where one chunk of every array
# the rule touches (parameters, gradients, states, scratch) fits in the 2 MiB L2 cache together, only the
# first read and the last write of each element leave the cache. Measured on 4M float32 elements, one
# thread: Adam 9.2 ms chunked vs 14.9 ms in whole-array passes, SGD with momentum 3.2 vs 5.1 ms.
_CHUNK_BYTES = 1 << 20  # one chunk of all the rule's arrays together: Adam's 7 float32 arrays -> 36 K elements
# Two threads need longer NumPy calls. Each call hands the GIL back and forth; a thread that finds it
# taken sleeps, and waking a thread on the other core takes ~30 us here. When the calls are not much
# longer than that, the threads fall into step, each waiting for the other's wake-up on most calls. On 4M
# float32 elements with 2 threads: SGD with momentum 3.6 ms with 32 K-element chunks (one thread: 3.2),
# 2.0 ms with 160 K; Adam 9.6 and 6.6 ms (two processes, without a GIL, run SGD's passes in 1.4 ms with
# 32 K). So these chunks are sized per array, long enough for the calls to outlast a wake-up, although
# they then spill out of L2.
_THREAD_CHUNK_BYTES = 640 << 10  # per array: 160 K float32 elements

# Runs whose arrays (all the rule touches) add up to this many bytes are shared by _THREADS threads: below
# it the handoff to the other thread (~100 us here) costs more than it saves (measured: Adam breaks even at
# 300 K float32 elements, 7 arrays; SGD with momentum at 700 K, 5 arrays).
_THREADED_BYTES = 12 << 20
_THREADS = min(len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1, 2)


# an update rule, or a piece of one: a function applied in place to one chunk of the flat arrays
Rule = Callable[..., Any]
# one planned update of a pack: parameters i0:i1, their gradient (None: their slice of the flat gradient),
# their scalars after it, and its rule
_Update = tuple[int, int, B.ndarray | None, dict[str, float], Rule]

_DATA = operator.attrgetter("_arr")  # (identity checks only: no storage read)
_GRAD = operator.attrgetter("_grad")
_is = operator.is_


class _RequiredParameter:
    """Marks a hyper-parameter a param group must give (``defaults={"lr": required}``)."""

    def __repr__(self) -> str:
        return "<required parameter>"


required = _RequiredParameter()


def _scalar(v: Any) -> float:
    """A hyper-parameter as a Python float (a one-element Tensor is accepted, as PyTorch's ``lr``).

    Python floats matter: NumPy treats them as weak scalars, so ``float32_array * 0.9`` stays float32
    and rounds like PyTorch's kernels, where a NumPy float64 scalar would compute in float64.
    """
    return float(v.item()) if isinstance(v, Tensor) else float(v)


def _own(arr: B.ndarray, home: Any) -> Tensor:
    """A Tensor over optimizer-owned storage: it lives where the optimizer lives (``home``, the arena
    active when the optimizer was built, or the heap), never in the temporary arena of a step."""
    t = Tensor._make(arr)
    t._mem = home
    return t


def _bump_versions(versions: list[list[int]]) -> None:
    """Record an in-place change of these parameters, as ``tensor._bump`` does for one: a graph that
    saved a parameter before the step refuses to backward through it afterwards, as in PyTorch."""
    _STAMP[0] += 1
    stamp = _STAMP[0]
    for v in versions:
        v[0] += 1
        v[1] = stamp


class _Pack:
    """The parameters of one group and dtype, their gradients and states, laid out in flat arrays."""

    __slots__ = ("params", "bounds", "flat", "grad", "views", "gviews", "versions", "bufs", "scal",
                 "inited", "n_inited", "uniform", "scratch", "chunks", "repeats")

    def __init__(self, params: list[Tensor], dtype: B.xp.dtype, home: Any) -> None:
        self.params = params
        self.bounds: list[tuple[int, int]] = []
        n = 0
        for p in params:
            self.bounds.append((n, n + p._data.size))
            n += p._data.size
        # the optimizer's home (the permanent arena it was built in, or the heap): never the
        # temporary arena active when the first step packs the parameters
        self.flat = memory.empty_like_home(home, (n,), dtype)
        self.grad = memory.empty_like_home(home, (n,), dtype)
        self.grad.fill(0)
        self.views: list[B.ndarray] = []
        self.gviews: list[B.ndarray] = []
        self.versions = [p._version for p in params]
        self.bufs: dict[str, B.ndarray] = {}
        self.scal: dict[str, B.ndarray] = {}
        self.inited = [False] * len(params)
        self.n_inited = 0
        self.uniform = True
        self.scratch: list[list[B.ndarray]] = []  # per thread: the rule's scratch arrays, one chunk long
        # (start, stop, chunk length) -> the chunks of that run of the flat arrays: parameter, gradient
        # and state views, made once rather than every step
        self.chunks: dict[tuple[int, int, int], list[tuple[B.ndarray, B.ndarray, dict[str, B.ndarray]]]] = {}
        # (index, extra updates) of the parameters the group lists more than once
        self.repeats: list[tuple[int, int]] = []

    @property
    def size(self) -> int:
        return self.flat.size


class Optimizer:
    """Base class of all optimizers, as ``torch.optim.Optimizer``.

    >>> opt = lightgrad.optim.SGD(model.parameters(), lr=0.1); loss.backward(); opt.step(); opt.zero_grad()
    """

    # per-parameter scalar states and their initial values, kept in state[p] as 0-d float32 tensors
    _scalars: ClassVar[dict[str, float]] = {"step": 0.0}
    # scratch arrays the rule needs, each the size of the slice it is given
    _n_scratch: ClassVar[int] = 0
    # True: lay parameters out in flat buffers (the built-in optimizers); a subclass that writes its own
    # `step` in PyTorch's style gets plain parameters unless it asks for packing
    _flat: ClassVar[bool] = False

    def __init__(self, params: Any, defaults: dict[str, Any]) -> None:
        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of Tensors or "
                            f"dicts, but got {type(params).__module__}.{type(params).__name__}")
        self.defaults = defaults
        # where flat buffers and state live: the arena active now (the permanent one, in bare-lm's
        # model) or the heap; a later reset of that arena makes step() refuse to run
        self._home = memory.token()
        self.state: defaultdict[Tensor, Any] = defaultdict(dict)
        self.param_groups: list[dict[str, Any]] = []
        self._packs: dict[int, tuple[dict[str, Any], list[Tensor], list[_Pack]]] = {}
        self._packing = self._flat or type(self).step is Optimizer.step
        groups = list(params)
        if len(groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for g in groups:
            self.add_param_group(g)

    # ---- what a subclass provides ------------------------------------------------------------------
    def _buffers(self, group: dict[str, Any]) -> tuple[str, ...]:
        """Names of the per-element state buffers this group's update keeps (e.g. ``exp_avg``)."""
        return ()

    def _init_value(self, group: dict[str, Any], name: str) -> float:
        """The value a state buffer starts at."""
        return 0.0

    def _advance(self, group: dict[str, Any], sc: dict[str, float]) -> None:
        """Advance the per-parameter scalars in ``sc`` for one update (default: ``step += 1``)."""
        sc["step"] += 1

    def _rule(self, group: dict[str, Any], sc: dict[str, float], first: bool, dtype: B.xp.dtype) -> Rule:
        """This step's update rule: a function ``rule(p, g, s, t)`` that updates ``p`` in place, given
        ``p`` parameters, ``g`` gradients (read only), ``s`` state buffers by name and ``t`` scratch
        arrays, all 1-D slices of one length and of ``dtype``. ``sc`` holds the scalars after
        ``_advance``; ``first`` is True when the state was just created. The rule is called once per
        cache-sized chunk, so whatever depends only on the hyper-parameters is worked out here, once per
        step (the ``make_*`` pieces below do that for the common kernels)."""
        raise NotImplementedError(f"{type(self).__name__} must define _rule or override step")

    # ---- param groups ------------------------------------------------------------------------------
    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Add a group of parameters with its own hyper-parameters: ``opt.add_param_group({"params": w})``."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group)}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            params = [params]
        elif isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, but the "
                            "ordering of tensors in sets will change between runs. Please use a list instead.")
        else:
            params = list(params)
        names = [p[0] for p in params if isinstance(p, tuple)]
        tensors = [p[1] if isinstance(p, tuple) else p for p in params]
        if names and len(names) != len(tensors):
            raise ValueError("all optimizer params should be with/without names. Some param names are missing")
        for p in tensors:
            if not isinstance(p, Tensor):
                raise TypeError("optimizer can only optimize Tensors, but one of the params is "
                                f"{type(p).__module__}.{type(p).__name__}")
            if p._grad_fn is not None and not p.retains_grad:
                raise ValueError("can't optimize a non-leaf Tensor")
        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError(f"parameter group didn't specify a value of required optimization parameter {name}")
        ids = {id(p) for p in tensors}
        if len(ids) != len(tensors):
            warnings.warn("optimizer contains a parameter group with duplicate parameters; in future, this will "
                          "cause an error; see github.com/pytorch/pytorch/issues/40967 for more information",
                          stacklevel=3)
        for group in self.param_groups:
            if ("param_names" in group) != bool(names):
                raise ValueError("all optimizer param groups should be with/without names. cannot add param "
                                 f"group {'with' if names else 'without'} names to the optimizer")
            if any(id(p) in ids for p in group["params"]):
                raise ValueError("some parameters appear in more than one parameter group")
        param_group["params"] = tensors
        if names:
            param_group["param_names"] = names
        for name, default in self.defaults.items():
            param_group.setdefault(name, default)
        self.param_groups.append(param_group)
        if self._packing:
            self._group_packs(param_group)

    # ---- flat buffers ------------------------------------------------------------------------------
    def _group_packs(self, group: dict[str, Any]) -> list[_Pack]:
        """The packs of ``group``, rebuilt when its parameter list changed."""
        rec = self._packs.get(id(group))
        ps = group["params"]
        if rec is None or rec[0] is not group or len(rec[1]) != len(ps) or not all(map(_is, ps, rec[1])):
            if len(self._packs) >= len(self.param_groups):  # drop packs of groups that are gone
                live = {id(g) for g in self.param_groups}
                self._packs = {k: v for k, v in self._packs.items() if k in live}
            rec = (group, list(ps), self._build_packs(group))
            self._packs[id(group)] = rec
        return rec[2]

    def _build_packs(self, group: dict[str, Any]) -> list[_Pack]:
        """Lay the group's parameters out in flat buffers, one per (dtype, requires_grad), moving each
        parameter's values, in-buffer gradient and existing state into its new slices."""
        buckets: dict[tuple[B.xp.dtype, bool], list[Tensor]] = {}
        count: dict[int, int] = {}
        for p in group["params"]:
            if id(p) not in count:  # a duplicate has one slice, updated once per entry (see _plan_repeats)
                count[id(p)] = 0
                # frozen parameters get their own pack, so they do not split the trainable ones into runs
                buckets.setdefault((p._data.dtype, p.requires_grad), []).append(p)
            count[id(p)] += 1
        packs = []
        for (dtype, _), ps in buckets.items():
            pack = _Pack(ps, dtype, self._home)
            pack.repeats = [(i, count[id(p)] - 1) for i, p in enumerate(ps) if count[id(p)] > 1]
            for p, (a, b) in zip(ps, pack.bounds):
                view = pack.flat[a:b].reshape(p._data.shape)
                B.copyto(view, p._data)
                gview = pack.grad[a:b].reshape(p._data.shape)
                old = p.__dict__.get("_grad_buf")
                if p.grad is not None and old is not None and p.grad._data is old and old.shape == view.shape:
                    B.copyto(gview, old)  # the gradient moves with its parameter; the Tensor stays
                    p.grad._data = gview
                    p.grad._mem = self._home
                p._data = view
                p._mem = self._home  # its storage is now the optimizer's buffer, in the optimizer's home
                p._grad_buf = gview
                pack.views.append(view)
                pack.gviews.append(gview)
            self._adopt_state(group, pack)
            packs.append(pack)
        return packs

    def _adopt_state(self, group: dict[str, Any], pack: _Pack) -> None:
        """Allocate the pack's state storage, copy each parameter's existing state into it, and make the
        ``state[p]`` entries views of it. A parameter counts as started when it has every scalar (or, for
        an optimizer without scalars, every buffer); a buffer it lacks starts at its initial value."""
        names = self._buffers(group)
        need = tuple(self._scalars) or names
        inited = []
        for p in pack.params:
            st = self.state.get(p) or {}
            inited.append(bool(need) and all(k in st for k in need))
        pack.inited = inited
        pack.n_inited = sum(inited)
        for name in names:
            buf = memory.empty_like_home(self._home, (pack.size,), pack.flat.dtype)
            init = self._init_value(group, name)
            for p, (a, b), ok in zip(pack.params, pack.bounds, inited):
                view = buf[a:b].reshape(p._data.shape)
                val = self.state[p].get(name) if ok else None
                if val is not None:
                    arr = val._data if isinstance(val, Tensor) else B.asarray(val)
                    if arr.shape != view.shape:
                        raise RuntimeError(f"optimizer state '{name}' has shape {tuple(arr.shape)} but its "
                                           f"parameter has shape {tuple(view.shape)}")
                    B.copyto(view, arr, casting="unsafe")
                else:
                    view.fill(init)
                if ok:
                    self.state[p][name] = _own(view, self._home)
            pack.bufs[name] = buf
        for name, init in self._scalars.items():
            arr = B.full(len(pack.params), init, B.xp.float32)
            for i, (p, ok) in enumerate(zip(pack.params, inited)):
                if ok:
                    arr[i] = _scalar(self.state[p][name])
                    self.state[p][name] = _own(arr[i:i + 1].reshape(()), self._home)
            pack.scal[name] = arr
        self._check_uniform(pack)
        pack.scratch = []
        pack.chunks = {}  # views of the old state buffers

    def _check_uniform(self, pack: _Pack) -> None:
        """Whether all started parameters share their scalars (so one update can serve them all)."""
        mask = B.asarray(pack.inited, bool)
        pack.uniform = all(_same(arr[mask]) for arr in pack.scal.values())

    def _init_params(self, group: dict[str, Any], pack: _Pack, i0: int, i1: int) -> None:
        """Create fresh state for parameters ``i0:i1`` of the pack (their first update)."""
        names = self._buffers(group)
        if not names and not self._scalars:
            return
        a, b = pack.bounds[i0][0], pack.bounds[i1 - 1][1]
        for name in names:
            pack.bufs[name][a:b] = self._init_value(group, name)
        for name, init in self._scalars.items():
            pack.scal[name][i0:i1] = init
        for i in range(i0, i1):
            p = pack.params[i]
            pa, pb = pack.bounds[i]
            st = self.state[p]
            for name in self._scalars:
                st[name] = _own(pack.scal[name][i:i + 1].reshape(()), self._home)
            for name in names:
                st[name] = _own(pack.bufs[name][pa:pb].reshape(p._data.shape), self._home)
            pack.inited[i] = True
        pack.n_inited += i1 - i0

    def _ensure_buffers(self, group: dict[str, Any], pack: _Pack) -> None:
        """Re-adopt state when the group now needs buffers the pack lacks (e.g. amsgrad switched on)."""
        bufs = pack.bufs
        for name in self._buffers(group):  # (a loop: a generator costs more than the check on most steps)
            if name not in bufs:
                self._adopt_state(group, pack)
                return

    # ---- the step ----------------------------------------------------------------------------------
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Update every parameter that has a gradient; ``closure`` (re-evaluating the loss) is called
        first under grad mode and its loss returned."""
        if self._home is not None and not self._home[0]:
            raise memory.reclaimed_error(self._home)
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        # every update is planned (gradients checked, rules made) before the first is applied, so a step
        # that raises (an integer parameter, a bad hyper-parameter, a gradient of the wrong shape) has
        # changed nothing, where PyTorch raises inside its kernels with the earlier groups updated
        plans = [(group, pack, self._plan(group, pack))
                 for group in self.param_groups for pack in self._packs_for_step(group)]
        for group, pack, plan in plans:
            self._execute(group, pack, plan)
        return loss

    def _packs_for_step(self, group: dict[str, Any]) -> list[_Pack]:
        """The group's packs, re-packed first when a parameter's storage was replaced."""
        packs = self._group_packs(group)
        for pack in packs:
            if not all(map(_is, map(_DATA, pack.params), pack.views)):
                rec = self._packs[id(group)]
                packs = self._build_packs(group)
                self._packs[id(group)] = (rec[0], rec[1], packs)
                break
        for pack in packs:
            self._ensure_buffers(group, pack)
        return packs

    def _plan(self, group: dict[str, Any], pack: _Pack) -> tuple[list[_Update], bool]:
        """This step's updates of the pack, in order, and whether its scalars may diverge (so that
        ``pack.uniform`` is to be checked again afterwards). Changes nothing."""
        ps = pack.params
        try:
            fast = all(map(_is, map(_DATA, map(_GRAD, ps)), pack.gviews))
        except AttributeError:  # some grad is None
            fast = False
        if fast and pack.uniform and pack.n_inited in (0, len(ps)):
            runs: list[tuple[int, int, B.ndarray | None]] = [(0, len(ps), None)]
            fast = True
        else:
            runs, fast = self._runs(pack), False
        if not runs:
            return [], False
        if pack.flat.dtype.kind != "f" and pack.flat.dtype is not D.LOW_PRECISION[0]:  # (bfloat16 is a float)
            msg = self._dtype_error(group, pack.flat.dtype)
            if msg is not None:
                p = ps[runs[0][0]]
                g = next(i for i, q in enumerate(self.param_groups) if q is group)
                j = next(i for i, q in enumerate(group["params"]) if q is p)
                raise RuntimeError(f"{msg} (parameter {j} of param group {g} is {p.dtype})")
        plan = [self._plan_update(group, pack, i0, i1, g, not pack.inited[i0], None) for i0, i1, g in runs]
        if pack.repeats:
            plan += self._plan_repeats(group, pack, plan)
        return plan, not fast or bool(pack.repeats)

    def _dtype_error(self, group: dict[str, Any], dtype: B.xp.dtype) -> str | None:
        """Why this group's update cannot run on parameters of ``dtype``, a non-floating dtype (None
        when it can). PyTorch's kernels refuse them one way or another."""
        return f"{type(self).__name__} can only update floating point parameters"

    def _plan_update(self, group: dict[str, Any], pack: _Pack, i0: int, i1: int, g: B.ndarray | None,
                     first: bool, after: _Update | None) -> _Update:
        """One update of parameters ``i0:i1`` (gradient ``g``, or their slice of the flat gradient):
        their scalars after it and its rule. The scalars start from the state, from their initial values
        when ``first``, or from those ``after`` (an update planned before it) leaves."""
        if after is not None:
            sc = {k: float(B.xp.float32(after[3][k])) for k in pack.scal}  # as stored: float32
        elif first:
            sc = {k: float(B.xp.float32(self._scalars[k])) for k in pack.scal}
        else:
            sc = {k: float(v[i0]) for k, v in pack.scal.items()} if pack.scal else {}
        self._advance(group, sc)
        return i0, i1, g, sc, self._rule(group, sc, first, pack.flat.dtype)

    def _plan_repeats(self, group: dict[str, Any], pack: _Pack, plan: list[_Update]) -> list[_Update]:
        """The extra updates of parameters listed more than once in the group. PyTorch updates once per
        entry, each entry from the state the one before left, except that on the first step every entry
        starts from fresh state (SGD's buffer is the gradient each time): ``first`` is kept."""
        extra = []
        for i, n in pack.repeats:
            done = next((u for u in plan if u[0] <= i < u[1]), None)
            if done is None:  # no gradient: not updated at all
                continue
            first = not pack.inited[i]  # (planning changes no state)
            for _ in range(n):
                done = self._plan_update(group, pack, i, i + 1, done[2], first, done)
                extra.append(done)
        return extra

    def _execute(self, group: dict[str, Any], pack: _Pack, planned: tuple[list[_Update], bool]) -> None:
        """Apply the updates ``_plan`` made, in order."""
        plan, recheck = planned
        for i0, i1, g, sc, rule in plan:
            if not pack.inited[i0]:
                self._init_params(group, pack, i0, i1)
            for k, v in pack.scal.items():
                v[i0:i1] = sc[k]
            self._run(pack, i0, i1, g, rule)
        if recheck:
            self._check_uniform(pack)

    def _runs(self, pack: _Pack) -> list[tuple[int, int, B.ndarray | None]]:
        """Split the pack into runs that can each be updated as one flat slice: consecutive parameters
        whose gradients sit in the flat buffer and whose state is alike. A gradient elsewhere is a run
        of its own, read from where it is; a parameter without a gradient is skipped."""
        runs: list[tuple[int, int, B.ndarray | None]] = []
        start, key = -1, None
        for i, p in enumerate(pack.params):
            g = p.grad
            own = g is not None and g._data is pack.gviews[i]
            k = (pack.inited[i], tuple(float(a[i]) for a in pack.scal.values())) if own else None
            if start >= 0 and k != key:
                runs.append((start, i, None))
                start = -1
            if own:
                if start < 0:
                    start, key = i, k
            elif g is not None:
                arr = g._data
                if arr.shape != p._data.shape:
                    raise RuntimeError(f"gradient of shape {tuple(arr.shape)} does not match its parameter "
                                       f"of shape {tuple(p._data.shape)}")
                runs.append((i, i + 1, B.xp.ascontiguousarray(arr, pack.flat.dtype).reshape(-1)))
        if start >= 0:
            runs.append((start, len(pack.params), None))
        return runs

    def _run(self, pack: _Pack, i0: int, i1: int, g: B.ndarray | None, rule: Rule) -> None:
        """Run ``rule`` over parameters ``i0:i1`` (gradient ``g``, or their slice of the flat gradient),
        chunk by chunk, on one thread or two."""
        a, b = pack.bounds[i0][0], pack.bounds[i1 - 1][1]
        workers, chunk = self._split(pack, a, b)
        work = self._chunks(pack, a, b, chunk, g)
        workers = min(workers, len(work))
        if len(pack.scratch) < workers or self._n_scratch and pack.scratch[0][0].size < chunk:
            pack.scratch = [[memory.empty_like_home(self._home, (chunk,), pack.flat.dtype)
                             for _ in range(self._n_scratch)] for _ in range(max(workers, len(pack.scratch)))]
        if workers == 1:
            _run_chunks(rule, work, pack.scratch[0])
        else:
            # NumPy releases the GIL inside each pass, so the threads update chunks in parallel; each takes
            # the next chunk when it is free, and every element goes through the same passes either way
            chunks = iter(work)
            B.concurrently([(_run_chunks, (rule, chunks, pack.scratch[w]), {}) for w in range(workers)])
        _bump_versions(pack.versions[i0:i1])

    def _memo(self, key: tuple[Any, ...], make: Callable[..., Rule]) -> Rule:
        """``make(*key)``, kept for the next steps with the same key (a rule of plain hyper-parameters:
        made once, not every step)."""
        memo = self.__dict__.setdefault("_rules", {})
        rule = memo.get(key)
        if rule is None:
            if len(memo) >= 64:  # (a schedule changing the learning rate every step)
                memo.clear()
            rule = memo[key] = make(*key)
        return rule

    def _split(self, pack: _Pack, a: int, b: int) -> tuple[int, int]:
        """(threads, chunk length) for an update of elements ``a:b`` of the pack."""
        arrays = 2 + len(pack.bufs) + self._n_scratch
        workers = _THREADS if (b - a) * arrays * pack.flat.itemsize >= _THREADED_BYTES else 1
        if workers == 1:
            chunk = _CHUNK_BYTES // (arrays * pack.flat.itemsize)
        else:
            chunk = _THREAD_CHUNK_BYTES // pack.flat.itemsize
        if chunk > 1024:
            chunk -= chunk % 1024  # whole 1024s of elements: every chunk starts as aligned as the first
        return workers, min(max(chunk, 1), b - a)

    def _chunks(self, pack: _Pack, a: int, b: int, chunk: int,
                g: B.ndarray | None) -> list[tuple[B.ndarray, B.ndarray, dict[str, B.ndarray]]]:
        """Views of elements ``a:b`` of the pack in pieces of ``chunk``: (parameters, gradient, states); the
        gradient is ``g``, or the flat gradient when ``g`` is None (then the views are kept for next time)."""
        if g is None:
            key = (a, b, chunk)
            work = pack.chunks.get(key)
            if work is None:
                if len(pack.chunks) >= 64:  # runs that change every step (a changing subset has gradients)
                    pack.chunks.clear()
                work = pack.chunks[key] = self._chunks(pack, a, b, chunk, pack.grad[a:b])
            return work
        bufs = pack.bufs.items()
        cuts = [*range(a, b, chunk), b]
        return [(pack.flat[c:d], g[c - a:d - a], {k: v[c:d] for k, v in bufs}) for c, d in zip(cuts, cuts[1:])]

    # ---- gradients ---------------------------------------------------------------------------------
    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset gradients: to None (default, as PyTorch), or to zeros in place with ``set_to_none=False``."""
        for group in self.param_groups:
            for p in group["params"]:
                g = p.grad
                if g is None:
                    continue
                if set_to_none:
                    p.grad = None
                else:
                    g._grad_fn = None
                    g.requires_grad = False
                    g._data[...] = 0
                    _bump_versions([g._version])

    # ---- state dict --------------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """``{"state": {index: {...}}, "param_groups": [{..., "params": [indices]}]}`` as PyTorch lays it out;
        the state values are the optimizer's own tensors (not copies), as in PyTorch."""
        mapping: dict[int, int] = {}
        start = 0
        groups = []
        for group in self.param_groups:
            packed = {k: v for k, v in group.items() if k != "params"}
            # as PyTorch: a parameter listed twice in a group takes the index of its last entry
            mapping.update({id(p): i for i, p in enumerate(group["params"], start) if id(p) not in mapping})
            packed["params"] = [mapping[id(p)] for p in group["params"]]
            start += len(packed["params"])
            groups.append(packed)
        state = {(mapping[id(k)] if isinstance(k, Tensor) else k): v for k, v in self.state.items()}
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Load what ``state_dict`` returned (from lightgrad or PyTorch): hyper-parameters and state.

        Everything is checked before anything is changed: a load that raises leaves the optimizer as it was.
        Where PyTorch would load a value that fails later, at every step (a state buffer of the wrong shape,
        a ``step`` that is not a number, a hyper-parameter of the wrong kind), this raises here."""
        groups = self.param_groups
        saved_groups = deepcopy(state_dict["param_groups"])
        if len(groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(g["params"]) != len(s["params"]) for g, s in zip(groups, saved_groups)):
            raise ValueError("loaded state dict contains a parameter group that doesn't match the size of "
                             "optimizer's group")
        for i, s in enumerate(saved_groups):
            self._check_loaded_group(i, s)
        id_map = dict(zip(chain.from_iterable(g["params"] for g in saved_groups),
                          chain.from_iterable(g["params"] for g in groups)))
        group_of = {k: s for s in saved_groups for k in s["params"]}
        state: defaultdict[Any, Any] = defaultdict(dict)
        for k, v in state_dict["state"].items():
            if k in id_map:
                state[id_map[k]] = self._loaded_state(k, id_map[k], group_of[k], v)
            else:
                state[k] = v
        new_groups = []
        for g, s in zip(groups, saved_groups):
            s["params"] = g["params"]
            if "param_names" in g and "param_names" not in s:
                s["param_names"] = g["param_names"]
            new_groups.append(s)
        self.state = state
        self.param_groups = new_groups
        self._packs = {}
        if self._packing:
            for g in self.param_groups:
                self._group_packs(g)

    def _check_loaded_group(self, i: int, group: dict[str, Any]) -> None:
        """Check loaded param group ``i`` against the defaults: a flag it lacks (from an older checkpoint)
        takes its default, as PyTorch's ``__setstate__`` sets them; any other hyper-parameter must be there,
        a number where its default is one (or a tuple of them, as ``betas``)."""
        for name, default in self.defaults.items():
            if name not in group:
                if default is None or isinstance(default, bool):
                    group[name] = default
                    continue
                raise ValueError(f"loaded state dict has a parameter group ({i}) without '{name}'")
            value = group[name]
            if isinstance(default, tuple):
                ok = isinstance(value, tuple | list) and len(value) == len(default) and all(
                    _is_number(v) or v is None and d is None for v, d in zip(value, default))
            else:
                ok = not isinstance(default, int | float) or isinstance(default, bool) or _is_number(value)
            if not ok:
                raise ValueError(f"loaded state dict has a parameter group ({i}) with '{name}' = {value!r}, "
                                 f"where {type(self).__name__} expects a value like {default!r}")

    def _loaded_state(self, k: Any, p: Tensor, group: dict[str, Any], st: Any) -> dict[str, Any]:
        """The loaded state ``st`` of ``p`` (parameter ``k`` of the state dict), copied; raises unless the
        update of ``group`` can use it: its scalars (``step``) are numbers and its buffers (``exp_avg``)
        arrays of numbers of the parameter's shape. Buffers take the parameter's dtype, as in PyTorch."""
        if not isinstance(st, dict):
            raise TypeError(f"state of parameter {k} should be a dict, got {type(st).__name__}")
        if not self._packing:  # a subclass with its own step keeps its state as it likes
            return {name: _copy_value(val) for name, val in st.items()}
        buffers = self._buffers(group)
        out = {}
        for name, val in st.items():
            arr = _numbers(val)
            if name in self._scalars:
                if arr is None or arr.size != 1 or arr.dtype.kind == "c":
                    raise ValueError(f"loaded state dict has a '{name}' of {val!r} for parameter {k}, where a "
                                     "number is expected")
                out[name] = _own(B.array(arr.reshape(()), B.xp.float32), None)
            elif name in buffers and val is not None:
                if arr is None:
                    what = f"dtype {val.dtype}" if hasattr(val, "dtype") else f"type {type(val).__name__}"
                    raise ValueError(f"loaded state dict has a '{name}' of {what} for parameter {k}, where a "
                                     "tensor of numbers is expected")
                if arr.shape != p._data.shape:
                    raise ValueError(f"loaded state dict has a '{name}' of shape {tuple(arr.shape)} for parameter "
                                     f"{k} of shape {tuple(p._data.shape)}")
                out[name] = _own(B.array(arr, dtype=p._data.dtype), None)
            else:
                out[name] = _copy_value(val)
        return out

    def __repr__(self) -> str:
        s = type(self).__name__ + " ("
        for i, group in enumerate(self.param_groups):
            s += f"\nParameter Group {i}\n"
            for key in sorted(group):
                if key != "params":
                    s += f"    {key}: {group[key]}\n"
        return s + ")"

    def __getstate__(self) -> dict[str, Any]:
        return {"defaults": self.defaults, "state": self.state, "param_groups": self.param_groups}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._packs = {}
        self._packing = self._flat or type(self).step is Optimizer.step


def _run_chunks(rule: Rule, chunks: Any, scratch: list[B.ndarray]) -> None:
    """Apply ``rule`` to each (parameters, gradient, states) chunk, with ``scratch`` cut to its length."""
    for p, g, s in chunks:
        n = p.size
        rule(p, g, s, scratch if not scratch or scratch[0].size == n else [t[:n] for t in scratch])


def _same(a: B.ndarray) -> bool:
    return a.size == 0 or bool((a == a[0]).all())


def _numbers(v: Any) -> B.ndarray | None:
    """The array of numbers behind a loaded state value (a Tensor, a NumPy array, a PyTorch tensor, a
    number), or None when it is something else (a string, None, an array of strings)."""
    if isinstance(v, Tensor):
        arr = v._data
    elif v is None or isinstance(v, str | bytes):
        return None
    else:
        if hasattr(v, "detach"):  # a tensor of another framework, which may require grad
            v = v.detach()
        try:
            arr = B.asarray(v)
        except (TypeError, ValueError, RuntimeError):
            return None
    return arr if arr.dtype.kind in "biufc" else None


def _is_number(v: Any) -> bool:
    """Whether a hyper-parameter is a real number (or a one-element tensor of one, as a Tensor ``lr``)."""
    arr = _numbers(v)
    return arr is not None and arr.size == 1 and arr.dtype.kind != "c"


def _copy_value(v: Any) -> Any:
    """A loaded state value, copied so the optimizer never shares storage with the dict it was given."""
    if isinstance(v, Tensor):
        return _own(v._data.copy(), None)
    if isinstance(v, list | tuple):
        return type(v)(_copy_value(x) for x in v)
    return v


# ---- pieces of update rules ------------------------------------------------------------------------
# Each ``make_*`` works out once per step what a piece of a rule needs and returns a function that applies
# it in place to one chunk. Each mirrors one PyTorch kernel's order of operations, so float32 results round
# as PyTorch's do up to its fused multiply-adds. The per-chunk functions are straight lines of NumPy calls
# with their scalars ready as 0-d arrays and their outputs passed positionally (``B.xp.add(x, t, x)`` is
# ``x += t``), because Python time between the calls is time the other thread may wait for the GIL: NumPy
# converts a Python float scalar again on every call (600 ns against 270 ns for a 0-d array), and that
# alone made SGD with momentum 15% slower on 4M elements with two threads; an ``out=`` keyword cost 3%.
# The hottest rules (SGD, the Adam moments) go further and write their kernels out inline.
def const(x: float, dtype: B.xp.dtype) -> B.ndarray:
    """``x`` as a 0-d array of ``dtype``, rounded as NumPy rounds a Python float against that dtype."""
    return B.array(x, dtype)


def make_grad(maximize: bool, weight_decay: float, dtype: B.xp.dtype) -> Rule | None:
    """The gradient an update uses, ``grad(p, g, t)``: ``-g`` when maximizing, plus ``weight_decay * p``
    (L2, coupled). ``g`` itself is never changed (it is the user's ``p.grad``): the result is scratch
    ``t``. None when the gradient is used as it is."""
    wd = const(weight_decay, dtype)
    if weight_decay != 0:
        def decayed(p: B.ndarray, g: B.ndarray, t: B.ndarray) -> B.ndarray:
            B.xp.multiply(p, wd, t)
            return B.xp.subtract(t, g, t) if maximize else B.xp.add(g, t, t)
        return decayed
    if maximize:
        return lambda p, g, t: B.xp.negative(g, t)
    return None


def make_lerp_(w: float, dtype: B.xp.dtype) -> Rule:
    """``lerp_(x, end, t)``: ``x.lerp_(end, w)`` with PyTorch's two formulas (the second is exact at
    ``w = 1``), ``t`` scratch."""
    if abs(w) < 0.5:
        k = const(w, dtype)

        def lerp_(x: B.ndarray, end: B.ndarray, t: B.ndarray) -> None:
            B.xp.subtract(end, x, t)
            B.xp.multiply(t, k, t)
            B.xp.add(x, t, x)
    else:
        k = const(1 - w, dtype)

        def lerp_(x: B.ndarray, end: B.ndarray, t: B.ndarray) -> None:
            B.xp.subtract(end, x, t)
            B.xp.multiply(t, k, t)
            B.xp.subtract(end, t, x)
    return lerp_


def _make_addc(op: B.xp.ufunc, value: float, dtype: B.xp.dtype) -> Rule:
    """``addc_(x, a, b, t)``: ``x + value * op(a, b)`` in place (``op`` multiply or divide)."""
    k = const(value, dtype)
    if value == 1:
        def addc_(x: B.ndarray, a: B.ndarray, b: B.ndarray, t: B.ndarray) -> None:
            op(a, b, t)
            B.xp.add(x, t, x)
    else:
        def addc_(x: B.ndarray, a: B.ndarray, b: B.ndarray, t: B.ndarray) -> None:
            B.xp.multiply(a, k, t)
            op(t, b, t)
            B.xp.add(x, t, x)
    return addc_


def make_addcmul_(value: float, dtype: B.xp.dtype) -> Rule:
    """``addcmul_(x, a, b, t)``: ``x.addcmul_(a, b, value=value)``, ``x + value * a * b``."""
    return _make_addc(B.xp.multiply, value, dtype)


def make_addcdiv_(value: float, dtype: B.xp.dtype) -> Rule:
    """``addcdiv_(x, a, b, t)``: ``x.addcdiv_(a, b, value=value)``, ``x + value * a / b``."""
    return _make_addc(B.xp.divide, value, dtype)


def make_add_(alpha: float, dtype: B.xp.dtype) -> Rule:
    """``add_(x, a, t)``: ``x.add_(a, alpha=alpha)``, ``x + alpha * a``."""
    k = const(alpha, dtype)
    if alpha == 1:
        return lambda x, a, t: B.xp.add(x, a, x)
    if alpha == -1:
        return lambda x, a, t: B.xp.subtract(x, a, x)

    def add_(x: B.ndarray, a: B.ndarray, t: B.ndarray) -> None:
        B.xp.multiply(a, k, t)
        B.xp.add(x, t, x)
    return add_


def make_adam_moments(group: dict[str, Any], lr: float, weight_decay: float, beta1: float, beta2: float,
                      dtype: B.xp.dtype) -> Rule:
    """The Adam family's shared first half, ``moments(p, g, s, t)``: weight decay (decoupled, as AdamW,
    or added to the gradient), then ``exp_avg = lerp(exp_avg, g, 1 - beta1)`` and
    ``exp_avg_sq = beta2 exp_avg_sq + (1 - beta2) g^2``; returns the gradient that was used (``g`` or
    ``t[0]``). Uses scratch ``t[0]`` and ``t[1]``."""
    shrink = None
    if weight_decay != 0 and group["decoupled_weight_decay"]:
        shrink = const(1 - lr * weight_decay, dtype)
        weight_decay = 0.0
    grad = make_grad(group["maximize"], weight_decay, dtype)
    # exp_avg.lerp_(g, 1 - beta1) and exp_avg_sq.mul_(beta2).addcmul_(g, g, value=1 - beta2) written out,
    # as the SGD rule is, since they run on every chunk; lerp's second formula (beta1 <= 0.5) is rare
    lerp_ = make_lerp_(1 - beta1, dtype) if 1 - beta1 >= 0.5 else None
    w1, b2, w2 = const(1 - beta1, dtype), const(beta2, dtype), const(1 - beta2, dtype)

    def moments(p: B.ndarray, g: B.ndarray, s: dict[str, B.ndarray], t: list[B.ndarray]) -> B.ndarray:
        if shrink is not None:
            B.xp.multiply(p, shrink, p)
        if grad is not None:
            g = grad(p, g, t[0])
        m, v, u = s["exp_avg"], s["exp_avg_sq"], t[1]
        if lerp_ is None:
            B.xp.subtract(g, m, u)
            B.xp.multiply(u, w1, u)
            B.xp.add(m, u, m)
        else:
            lerp_(m, g, u)
        B.xp.multiply(v, b2, v)
        B.xp.multiply(g, w2, u)
        B.xp.multiply(u, g, u)
        B.xp.add(v, u, v)
        return g
    return moments


def check_betas(betas: Any) -> tuple[float, float]:
    """Validate ``betas`` as PyTorch does (``Invalid beta parameter at index 0: 1.5``)."""
    b = tuple(_scalar(x) if isinstance(x, Tensor) else x for x in betas)
    if len(b) != 2:
        raise ValueError(f"betas should be a pair (beta1, beta2), got {len(b)} values")
    for i in (0, 1):
        if not 0.0 <= b[i] < 1.0:
            raise ValueError(f"Invalid beta parameter at index {i}: {betas[i]}")
    return b[0], b[1]


def check(name: str, value: Any, ok: bool) -> None:
    """Raise PyTorch's ``Invalid <name>: <value>`` ValueError unless ``ok``."""
    if not ok:
        raise ValueError(f"Invalid {name}: {value}")


def check_lr(lr: Any) -> None:
    if isinstance(lr, Tensor) and lr.numel() != 1:
        raise ValueError("Tensor lr must be 1-element")
    check("learning rate", lr, 0.0 <= lr)


__all__ = ["Optimizer", "required"]
