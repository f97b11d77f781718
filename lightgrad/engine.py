"""The backward engine: graph nodes run most recent first, each once all its gradient has arrived."""

from __future__ import annotations

from heapq import heapify, heappop, heappush
from typing import TYPE_CHECKING, Any

from . import _refcount as R
from . import backend as B
from .function import Function, SliceGrad, unbroadcast
from .grad_mode import _anomaly, _enabled, _recording, not_differentiable_twice
from .memory import _STAMP  # counts in-place modifications anywhere (and arena resets): see memory
from .memory import _current as _arena
from .memory import empty_like_home, reclaimed_error

if TYPE_CHECKING:
    from .tensor import Tensor
else:
    Tensor = None  # bound by lightgrad.tensor (the one late binding)

_FREED = ("Trying to backward through the graph a second time (or directly access saved tensors after "
          "they have already been freed). Saved intermediate values of the graph are freed when you call "
          ".backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the "
          "graph a second time or if you need to access saved tensors after calling backward.")


def _holds(saved: Any, p: Tensor) -> bool:
    """Whether a node saved p's array, or one p had before an in-place view op (``unsqueeze_``
    gives p a new view of the same memory: ``_was`` keeps the old ones)."""
    arr = p._data
    was = p.__dict__.get("_was", ())
    return any(s is arr or any(s is w for w in was) for s in saved) if was else any(s is arr for s in saved)


def _broadcasts(a: tuple[int, ...], b: tuple[int, ...]) -> bool:
    return len(a) <= len(b) and all(x == y or x == 1 for x, y in zip(reversed(a), reversed(b)))


def _shape_at_use(p: Tensor, shape: tuple[int, ...]) -> tuple[int, ...]:
    """The shape p had when the node whose gradient has ``shape`` used it: p's own, or, after an
    in-place view op changed it (``unsqueeze_``), the latest earlier one the gradient broadcasts from."""
    now = p._data.shape
    was = p.__dict__.get("_was")
    if was and not _broadcasts(now, shape):
        for w in reversed(was):
            if _broadcasts(w.shape, shape):
                return w.shape
    return now


def _check_versions(node: Function) -> None:
    """Refuse a backward whose saved inputs or output were modified in place after the forward, or
    whose storage in an arena was reclaimed by its reset() since."""
    for m in node.mems or ():
        if not m[0]:
            raise reclaimed_error(m)
    saved = node.saved
    for i, p in enumerate(node.parents):
        if isinstance(p, Tensor) and p._version[1] > node.stamp and _holds(saved, p):
            raise RuntimeError(
                "one of the variables needed for gradient computation has been modified by an inplace "
                f"operation: [{p.dtype.name} {list(p.shape)}], which is input {i} of {node.name()}, is at "
                f"version {p._version[0]}; expected an earlier version instead.")
    if node.saves_out and node.out_version[0] != 0:
        raise RuntimeError("one of the variables needed for gradient computation has been modified by an "
                           f"inplace operation: the output of {node.name()} is at version "
                           f"{node.out_version[0]}; expected version 0 instead.")


def _graph_backward(node: Function, g: Tensor) -> tuple[Any, ...]:
    """Run a node's backward on Tensors so that it records a graph (create_graph=True).

    A formula that gives a plain array there computed it outside the graph (its derivative would
    silently be 0), and so does any NumPy call inside it that takes a Tensor that requires grad to
    a float array (``_numpy_dispatch``): both raise, naming the node."""
    saved = node.saved
    if not saved:
        return _recorded(node, g)
    by_id = {id(p._data): p for p in node.parents if isinstance(p, Tensor)}
    mapped = [by_id.get(id(s), s) for s in saved]
    if node.saves_out:
        out = Tensor._make(saved[-1])
        out.requires_grad, out._grad_fn = True, node
        mapped[-1] = out
    node.saved = tuple(mapped)
    try:
        return _recorded(node, g)
    finally:
        node.saved = saved


def _recorded(node: Function, g: Tensor) -> tuple[Any, ...]:
    token = _recording.set(node)
    try:
        grads = node.backward(g)
        for e, pg in zip(node.edges, grads):
            if e is not None and isinstance(pg, B.ndarray):
                raise not_differentiable_twice("its result")
        return grads
    finally:
        _recording.reset(token)


_ONES: dict[Any, B.ndarray] = {}


def _check_nan(node: Function, grads: tuple[Any, ...]) -> None:
    """Anomaly mode: refuse a backward formula that produced NaN, naming its node (so its op)."""
    for i, g in enumerate(grads):
        if g is not None and type(g) is not SliceGrad:
            arr = g._data if isinstance(g, Tensor) else g
            if arr.dtype.kind in "fc" and B.isnan(arr).any():
                raise RuntimeError(f"Function '{node.name()}' returned nan values in its {i}th output.")


def _hook_name(hook: Any) -> str:
    return getattr(hook, "__name__", type(hook).__name__)


def _run_hooks(hooks: Any, g: Any, create_graph: bool) -> Any:
    """Pass a gradient (an array, or a Tensor under create_graph) through a tensor's hooks in the
    order they were registered; a hook that returns a Tensor replaces it (PyTorch's checks)."""
    if not hooks:
        return g
    t = g if isinstance(g, Tensor) else Tensor._make(g.dense() if type(g) is SliceGrad else g)
    for hook in list(hooks.values()):
        r = hook(t)
        if r is None:
            continue
        if not isinstance(r, Tensor):
            raise TypeError(f"expected Variable, but hook returned '{type(r).__name__}'")
        if r._arr.shape != t._arr.shape:
            raise RuntimeError(f"hook '{_hook_name(hook)}' has changed the size of value")
        t = r
    return t if create_graph else t._data


def _run_post_hooks(t: Tensor) -> None:
    for hook in list(t._post_hooks.values()):
        hook(t)


def _seed_grad(t: Tensor, g: Any) -> Any:
    if g is None:
        d = t._arr  # (metadata; the nodes check their storage: Function.mems)
        one = _ONES.get((d.dtype, d.shape))  # (only one-entry shapes are ever stored)
        if one is None:
            if d.size != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            if d.dtype.kind == "c":  # (never stored: it raises every time)
                raise RuntimeError("grad can be implicitly created only for real scalar outputs but got "
                                   f"{t.dtype!r}")
            one = _ONES[(d.dtype, d.shape)] = B.ones(d.shape, d.dtype)
            one.flags.writeable = False
        return one
    garr = g._data if isinstance(g, Tensor) else B.asarray(g, t._arr.dtype)
    if garr.shape != t._arr.shape:
        raise RuntimeError(f"Mismatch in shape: grad_output[0] has a shape of {tuple(garr.shape)} and "
                           f"output[0] has a shape of {tuple(t.shape)}.")
    return garr


def _add_grad(prev: Any, pg: Any, owned: set[int]) -> Any:
    """prev + pg for array gradients; ``owned`` holds the ids of sums this backward made itself,
    which it may therefore add into in place (the others may be shared with other nodes)."""
    if type(pg) is SliceGrad or type(prev) is SliceGrad:
        sl, dense = (pg, prev) if type(pg) is SliceGrad else (prev, pg)
        if type(dense) is SliceGrad:  # two sums of slices: one sum of slices, still no array
            return dense.plus(sl)
        if id(dense) not in owned:
            dense = B.copy(dense)
        owned.add(id(dense))
        sl.add_to(dense)
        return dense
    if id(prev) in owned and prev.dtype == pg.dtype and prev.shape == pg.shape:
        B.iadd(prev, pg)
        return prev
    owned.discard(id(prev))
    out = B.add(prev, pg)
    if isinstance(out, B.ndarray):  # (0-d sums come back as NumPy scalars: not writable)
        owned.add(id(out))
    return out


def run_backward(outputs: list[Tensor], grad_outputs: list[Any], retain_graph: bool = False,
                 create_graph: bool = False, inputs: list[Tensor] | None = None,
                 accumulate_only: Any = None) -> list[Any]:
    """Backpropagate from ``outputs``; accumulate into leaves' ``.grad``, or, with ``inputs``,
    return the gradients of those tensors instead."""
    if not create_graph and inputs is None and accumulate_only is None and len(outputs) == 1:
        fn = outputs[0]._grad_fn
        if fn is not None:  # the common case: loss.backward()
            _walk({fn: _seed_grad(outputs[0], grad_outputs[0])}, [(fn.seq, fn)], retain_graph, False, None, None)
            return []
    grads: dict[Any, Any] = {}  # node (or leaf tensor, with inputs=) -> gradient so far
    # Nodes run most recent first (smallest seq): every node was made after the nodes its edges
    # point to, so all that send it a gradient have run before it (PyTorch orders its ready queue
    # the same way). A node joins the heap when its first gradient arrives; one that gets none
    # never runs.
    heap: list[tuple[int, Function]] = []
    only = None if accumulate_only is None else {
        id(t) for t in ([accumulate_only] if isinstance(accumulate_only, Tensor) else accumulate_only)}
    seeds = []  # outputs that are leaves: delivered by the walk, which can undo what it stored
    for t, g in zip(outputs, grad_outputs):
        if not t.requires_grad:
            raise RuntimeError("element 0 of tensors does not require grad and does not have a grad_fn")
        garr = _seed_grad(t, g)
        if create_graph:
            garr = g if isinstance(g, Tensor) else Tensor._make(garr)
        fn = t._grad_fn
        if fn is None:
            seeds.append((t, garr))
        else:
            prev = grads.get(fn)
            if prev is None:
                grads[fn] = garr
                heap.append((fn.seq, fn))
            else:
                grads[fn] = prev + garr
    capture = inputs is not None
    # a non-leaf input of autograd.grad is read off its grad_fn when that node is reached
    taken: dict[Any, Any] | None = {t._grad_fn: None for t in inputs if t._grad_fn is not None} if inputs else None
    heapify(heap)
    _walk(grads, heap, retain_graph, create_graph, taken, (capture, only), seeds)
    if not capture:
        return []
    res = [taken.get(t._grad_fn) if taken and t._grad_fn is not None else grads.get(t) for t in inputs or ()]
    if create_graph:
        return [r if r is None or isinstance(r, Tensor) else Tensor._make(r) for r in res]
    return [None if r is None else Tensor._make(r if r.flags.writeable and r.base is None else B.array(r))
            for r in res]


def _walk(grads: dict[Any, Any], heap: list[tuple[int, Function]], retain_graph: bool, create_graph: bool,
          taken: dict[Any, Any] | None, deliver: tuple[bool, Any] | None,
          seeds: list[tuple[Tensor, Any]] | None = None) -> None:
    """The backward walk from the nodes in ``heap`` (their gradients in ``grads``). Leaves accumulate
    into ``.grad``, or, with ``deliver`` = (capture, only), go through _deliver_leaf, as do ``seeds``
    (outputs that are leaves, and their gradients); ``taken`` collects the gradients of non-leaf
    inputs of autograd.grad.

    All or nothing: a walk that raises (an arena full in the middle of backward) leaves every
    ``.grad`` as it was. A tensor whose ``.grad`` is None takes its gradient at once (undone by
    setting it back to None: ``fresh``); one that has a gradient, which the sum would change in
    place, gets it once the walk is done (``later``, kept meanwhile)."""
    stamp = _STAMP[0]
    owned: set[int] = set()
    fresh: list[Tensor] = []
    later: list[tuple[Tensor, Any]] = []
    last: list[tuple[Function, Any]] = []
    hooked: dict[Any, Any] = {}  # leaf with hooks -> its gradient so far
    token = _enabled.set(create_graph)
    try:
        if deliver is not None and not deliver[0] and deliver[1] is None:
            deliver = None  # (plain accumulation: the common case's path)
        if seeds:
            for t, sg in seeds:
                if t._hooks is not None or t._post_hooks is not None:
                    _hold_hooked(hooked, t, sg, create_graph)
                else:
                    _deliver_leaf(t, sg, grads, deliver, create_graph, fresh, later)
        while heap:
            node = heappop(heap)[1]
            g = grads.pop(node)
            if not create_graph:
                if type(g) is SliceGrad:
                    g = g.dense()
                elif owned:
                    owned.discard(id(g))
            saved = node.saved
            if saved is None:
                raise RuntimeError(_FREED)
            if node.stamp != stamp:  # (an in-place change or an arena reset since the node ran)
                _check_versions(node)
            if node.hooks is not None:  # a non-leaf's register_hook (before retain_grad, as PyTorch)
                g = _run_hooks(node.hooks, g, create_graph)
            if node.retained is not None:
                _store(node.retained, g, create_graph, fresh, later)
            if taken and node in taken:
                taken[node] = g
            if node.runs_last:
                last.append((node, g))
                continue
            pgrads = _graph_backward(node, g) if create_graph else node.backward(g)
            if _anomaly[0] and _anomaly[1]:
                _check_nan(node, pgrads)
            for p, e, pg in zip(node.parents, node.edges, pgrads):
                if e is None or pg is None:
                    continue
                if pg.shape != p._arr.shape:  # (metadata: the node checked its inputs' storage, mems)
                    pg = unbroadcast(pg, _shape_at_use(p, pg.shape))
                if not isinstance(e, Function):  # a leaf
                    if type(pg) is SliceGrad:
                        pg = pg.dense()
                    if e._hooks is not None or e._post_hooks is not None:
                        _hold_hooked(hooked, e, pg, create_graph)
                        continue
                    if deliver is not None:
                        _deliver_leaf(e, pg, grads, deliver, create_graph, fresh, later)
                    elif e._grad is None:  # the common case: leaves just accumulate .grad
                        fresh.append(e)
                        _accumulate(e, pg, create_graph, steal=True)
                    else:
                        later.append((e, pg))
                    continue
                prev = grads.get(e)
                if prev is None:
                    grads[e] = pg
                    heappush(heap, (e.seq, e))
                else:
                    grads[e] = prev + pg if create_graph else _add_grad(prev, pg, owned)
            if saved and not retain_graph:
                node.saved = None
        if hooked:  # leaves with hooks: their whole gradient through the hooks, then delivered
            for t, hg in hooked.items():
                if t._hooks is not None:
                    hg = _run_hooks(t._hooks, hg, create_graph)
                _deliver_leaf(t, hg, grads, deliver, create_graph, fresh, later)
        if later:
            _add_later(later, create_graph)
    except BaseException:
        for t in fresh:
            t._grad = None
        _enabled.reset(token)
        raise
    try:
        if hooked and (deliver is None or not deliver[0]):
            for t in hooked:  # register_post_accumulate_grad_hook: once .grad holds the sum
                if t._post_hooks and (deliver is None or deliver[1] is None or id(t) in deliver[1]):
                    _run_post_hooks(t)
        for node, g in last:  # (once every .grad is in place: DDP's gradient reduction)
            node.backward(g)
    finally:
        _enabled.reset(token)


def _hold_hooked(hooked: dict[Any, Any], t: Tensor, g: Any, create_graph: bool) -> None:
    """Sum a hooked leaf's gradients over the walk: its hooks see the whole gradient once, as
    PyTorch's AccumulateGrad node does."""
    prev = hooked.get(t)
    hooked[t] = g if prev is None else prev + g if create_graph else B.add(prev, g)


def _deliver_leaf(t: Tensor, g: Any, grads: dict[Any, Any], deliver: tuple[bool, Any] | None,
                  create_graph: bool, fresh: list[Tensor], later: list[tuple[Tensor, Any]]) -> None:
    """A leaf's gradient: collected in ``grads`` (autograd.grad), or accumulated into ``.grad``
    unless ``backward(inputs=)`` leaves this leaf out."""
    if deliver is not None and deliver[0]:  # autograd.grad: gradients of leaves are collected, .grad is left alone
        prev = grads.get(t)
        grads[t] = g if prev is None else prev + g
    elif deliver is None or deliver[1] is None or id(t) in deliver[1]:
        _store(t, g, create_graph, fresh, later)


def _store(t: Tensor, g: Any, create_graph: bool, fresh: list[Tensor], later: list[tuple[Tensor, Any]]) -> None:
    """Accumulate into ``t.grad`` now if it is None, else once the walk is done (see _walk)."""
    if t._grad is None:
        fresh.append(t)
        _accumulate(t, g, create_graph)
    else:
        later.append((t, g))


def _add_later(later: list[tuple[Tensor, Any]], create_graph: bool) -> None:
    """Add the walk's gradients of tensors that had one: first those that give ``.grad`` a new
    tensor (create_graph; a gradient that cannot take the sum in place), put back if one fails;
    then the sums in place, which allocate nothing and so cannot fail halfway."""
    for t, _ in later:
        if t._mem is not None:
            break
    else:
        if not create_graph:  # every new .grad would come from the heap: no arena can be full
            for t, g in later:
                _accumulate(t, g, False)
            return
    in_place = []
    new: list[tuple[Tensor, Any]] = []
    for t, g in later:
        gd = t.grad._arr  # type: ignore[union-attr]
        if create_graph or gd.shape != g.shape or not gd.flags.writeable:
            new.append((t, g))
        else:
            in_place.append((t, g))
    if new:
        was = [(t, t.grad) for t, _ in new]
        try:
            for t, g in new:
                _accumulate(t, g, create_graph)
        except BaseException:
            for t, old in reversed(was):
                t._grad = old
            raise
    for t, g in in_place:
        _accumulate(t, g, create_graph)


_FIRST = [(0,) * n for n in range(33)]  # the index of a one-entry array's entry, by ndim


def _accumulate(t: Tensor, g: Any, create_graph: bool, steal: bool = False) -> None:
    # (below, gradients made with the leaf's shape and dtype go to `_grad`, past the setter's checks)
    if create_graph:
        g = g if isinstance(g, Tensor) else Tensor._make(g)
        t.grad = g if t.grad is None else t.grad + g
        return
    if g.dtype != t._arr.dtype:
        g = g.astype(t._arr.dtype)
    grad = t._grad
    if grad is not None:
        m = grad._mem  # (Tensor._data's check, inlined: the sum writes into it)
        if m is not None and not m[0]:
            raise reclaimed_error(m)
        gd = grad._arr
        if gd.shape == g.shape and gd.flags.writeable:
            if gd.size == 1:
                # one entry (a scalar parameter): NumPy's scalar add gives the same bits as the
                # in-place ufunc, whose out= setup costs 4x the add on one element
                i = _FIRST[gd.ndim]
                gd[i] += g[i]
            else:
                B.iadd(gd, g)
        else:
            arr = empty_like_home(t._mem, g.shape, g.dtype)
            B.add_into(gd, g, arr)
            t._grad = Tensor._make(arr)  # (its token is its storage's: the leaf's arena, or None)
    else:
        buf = t._grad_buf
        if buf is None and t._mem is not None and t._mem[0]:
            # a leaf made inside an arena (a parameter in the permanent arena) gets one fixed
            # gradient home there, reused by every backward: steps then allocate nothing for it
            buf = t._grad_buf = empty_like_home(t._mem, t._arr.shape, t._arr.dtype)
        if (steal and buf is None and t._mem is None and type(g) is B.ndarray and g.base is None
                and g.flags.writeable and _arena.get() is None and R.owns(g)):
            # a fresh heap gradient nobody else holds becomes .grad as it is (PyTorch steals it
            # too): no copy of every weight's gradient on every backward. R.owns counts this call
            # chain's references (_walk's loop, here): see _refcount; tests/test_refcount.py
            # checks both sides
            t._grad = Tensor._make(g)
        elif buf is not None and buf.shape == g.shape and buf.dtype == g.dtype:
            # an optimizer's flat gradient buffer: the gradient lands in its slice, no allocation
            B.copyto(buf, g)
            t._grad = Tensor._make(buf)
        else:
            # a copy (g may be shared with other nodes, or a view) that lives where the leaf lives:
            # a parameter made on the heap keeps its gradient on the heap, not in a step's arena
            arr = empty_like_home(t._mem, g.shape, g.dtype)
            B.copyto(arr, g)
            t._grad = Tensor._make(arr)  # (its token is its storage's: the leaf's arena, or None)
