"""Arenas: bump allocation, O(1) reset, safety checks, nesting, threads and zero-allocation steps."""

from __future__ import annotations

import contextlib
import threading
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import lightgrad as lg
from helpers import allocations
from lightgrad import memory


def test_parse_size() -> None:
    assert memory.parse_size("256MB") == 256 * 2**20
    assert memory.parse_size("1GB") == 2**30 and memory.parse_size("64KiB") == 64 * 1024
    assert memory.parse_size(1000) == 1000
    with pytest.raises(ValueError, match="size like"):
        memory.parse_size("lots")


def test_bump_allocation_is_aligned_and_counted() -> None:
    a = memory.Arena("1MB", name="t")
    x = a.empty((3,), np.float32)
    y = a.empty((5,), np.float64)
    assert x.ctypes.data % 64 == 0 and y.ctypes.data % 64 == 0
    assert a.used == 64 + 40 and a.peak == a.used and a.capacity == 2**20
    a.reset()
    assert a.used == 0 and a.peak == 104 and a.generation == 1
    z = a.empty((3,), np.float32)
    assert z.ctypes.data in (x.ctypes.data, y.ctypes.data)  # storage is reused after reset


def _chain(a: memory.Arena, keep: list[np.ndarray] | None = None) -> int:
    """A step of four 1 KiB requests, each array dropped before the next unless kept; returns
    the step's high-water mark."""
    for i in range(4):
        x = a.empty((256,), np.float32)
        x.fill(i)
        if keep is not None:
            keep.append(x)
    return a.used


def test_a_reset_plans_the_next_step_so_dead_arrays_share_memory() -> None:
    a = memory.Arena("1MB", name="t")
    first = _chain(a)
    a.reset()
    second = _chain(a)
    # each array dies once the next request has returned (the name is rebound after the call):
    # two buffers take turns
    assert first == 4 * 1024 and second == 2 * 1024


def test_a_step_that_keeps_arrays_longer_than_planned_is_not_overwritten() -> None:
    a = memory.Arena("1MB", name="t")
    _chain(a)
    a.reset()
    kept: list[np.ndarray] = []
    _chain(a, kept)  # the plan reuses two places; the arrays are alive, so the later two go elsewhere
    assert [float(k[0]) for k in kept] == [0.0, 1.0, 2.0, 3.0]
    assert len({k.ctypes.data for k in kept}) == 4
    a.reset()
    del kept
    assert _chain(a, []) == 4 * 1024  # planned again from that step: four places


def test_a_planned_step_hands_out_its_arrays_again_only_when_nothing_holds_them() -> None:
    a = memory.Arena("1MB", name="t")
    _chain(a, [])  # learnt, every array alive to the end: four places
    a.reset()
    first: list[np.ndarray] = []
    _chain(a, first)  # on plan
    a.reset()
    was = [weakref.ref(x) for x in first]  # (weak: they don't count as holding the arrays)
    held, frozen = first[0], first[1]
    frozen.flags.writeable = False
    del first, frozen
    again: list[np.ndarray] = []
    _chain(a, again)
    # the held array and the read-only one are not handed out again; the others are, as they were
    assert again[0] is not held and again[1] is not was[1]() and again[1].flags.writeable
    assert again[2] is was[2]() and again[3] is was[3]()
    assert [float(x[0]) for x in again] == [0.0, 1.0, 2.0, 3.0]
    assert np.shares_memory(again[0], held)  # (the bytes are the plan's: held is stale, as after any reset)


def test_op_outputs_and_gradients_come_from_the_arena() -> None:
    w = lg.randn(8, 4, requires_grad=True)
    x = lg.randn(16, 8)
    with memory.Arena("4MB", name="temp") as temp:
        y = (x @ w).relu().sum()
        block = temp._blocks[0]
        assert np.shares_memory(y._data, block)
        y.backward()
    assert temp.used > 0
    assert not np.shares_memory(w.grad._data, block)  # the leaf lives on the heap, so does its grad


def test_reclaimed_tensor_raises_and_kept_results_stay_valid() -> None:
    temp = memory.Arena("1MB", name="temp")
    with temp:
        t = lg.ones(4) * 3
        total = t.sum().item()
    kept = t.clone()  # outside the arena: copied to the heap
    temp.reset()
    assert total == 12.0 and kept.tolist() == [3.0] * 4
    for use in (lambda: t.item(), lambda: t.numpy(), lambda: t.tolist(), lambda: t + 1, lambda: np.asarray(t)):
        with pytest.raises(RuntimeError, match="reclaimed by reset\\(\\) of arena 'temp'"):
            use()
    assert "reclaimed" in repr(t)


_RECLAIMED = "reclaimed by reset\\(\\) of arena 'temp'"


def _reset_under(y_of: Callable[[], lg.Tensor]) -> tuple[lg.Tensor, lg.Tensor, memory.Arena]:
    """y made in an arena by ``y_of``, the arena reset, and the same step run again: z, a live
    tensor, now holds y's bytes."""
    temp = memory.Arena("1MB", name="temp")
    with temp:
        y_of()  # a step learnt: the next ones are planned alike
    temp.reset()
    with temp:
        y = y_of()
    temp.reset()
    with temp:
        z = y_of()
    assert z.data_ptr() == y.data_ptr()  # (the plan puts the step's arrays where they were)
    return y, z, temp


def _step() -> lg.Tensor:
    return lg.arange(4.0) * 2 + 1


_READS: dict[str, Callable[[lg.Tensor, lg.Tensor], Any]] = {
    "detach": lambda y, z: y.detach(),
    "data": lambda y, z: y.data,
    "to(float64)": lambda y, z: y.to(lg.float64),
    "double": lambda y, z: y.double(),
    "eq": lambda y, z: y == y,
    "argmax": lambda y, z: y.argmax(),
    "stack": lambda y, z: lg.stack([y]),
    "from_dlpack": lambda y, z: np.from_dlpack(y),
    # these returned a tensor that raised only when read later
    "contiguous": lambda y, z: y.contiguous(),
    "float": lambda y, z: y.float(),
    "cat": lambda y, z: lg.cat([y]),
}
_WRITES: dict[str, Callable[[lg.Tensor, lg.Tensor], Any]] = {
    "copy_": lambda y, z: y.copy_(lg.zeros(4)),
    "fill_": lambda y, z: y.fill_(0),
    "zero_": lambda y, z: y.zero_(),
    "data.fill_": lambda y, z: y.data.fill_(0),
    "detach().add_": lambda y, z: y.detach().add_(1),
}


@pytest.mark.parametrize("name", list(_READS))
def test_a_reclaimed_tensor_is_not_read(name: str) -> None:
    y, z, _ = _reset_under(_step)
    with pytest.raises(RuntimeError, match=_RECLAIMED):
        _READS[name](y, z)


@pytest.mark.parametrize("name", list(_WRITES))
def test_a_reclaimed_tensor_is_not_written_and_the_new_occupant_keeps_its_values(name: str) -> None:
    y, z, _ = _reset_under(_step)
    with pytest.raises(RuntimeError, match=_RECLAIMED):
        _WRITES[name](y, z)
    assert z.tolist() == [1.0, 3.0, 5.0, 7.0]


_VIEWS: dict[str, Callable[[lg.Tensor], lg.Tensor]] = {
    "detach": lambda t: t.detach(),
    "data": lambda t: t.data,
    "view(-1)": lambda t: t.view(-1),
    "[:2]": lambda t: t[:2],
    "reshape": lambda t: t.reshape(2, 2),
    "t()": lambda t: t.reshape(2, 2).t(),
    "expand": lambda t: t[None].expand(2, 4),
    "unbind": lambda t: t.unbind(0)[1],
    "narrow": lambda t: t.narrow(0, 1, 2),
    "split": lambda t: t.split(2)[1],
    "unsqueeze": lambda t: t.unsqueeze(0),
}


@pytest.mark.parametrize("where", ["inside", "outside"])
@pytest.mark.parametrize("name", list(_VIEWS))
def test_views_taken_before_the_reset_are_reclaimed_with_their_base(name: str, where: str) -> None:
    """A view shares its base's storage, so it shares its base's arena generation, wherever it was
    taken: inside the arena or after leaving it, before the reset."""
    temp = memory.Arena("1MB", name="temp")
    with temp:
        y = _step()
        v = _VIEWS[name](y) if where == "inside" else None
    if v is None:
        v = _VIEWS[name](y)
    assert v.tolist() == _VIEWS[name](lg.arange(4.0) * 2 + 1).tolist()  # (a view, valid before the reset)
    temp.reset()
    with temp:
        _step()  # the bytes' next occupant
    for use in (lambda: v.tolist(), lambda: v + 1, lambda: v.sum(), lambda: v.clone(), lambda: v.fill_(0),
                lambda: v.detach().numpy(), lambda: lg.stack([v])):
        with pytest.raises(RuntimeError, match=_RECLAIMED):
            use()
    assert v.shape == _VIEWS[name](lg.zeros(4)).shape  # (what it was, not its data: still there)


@pytest.mark.parametrize("name", list(_VIEWS))
def test_views_of_a_heap_tensor_taken_inside_an_arena_outlive_its_reset(name: str) -> None:
    base = lg.arange(4.0) * 2 + 1
    perm = memory.Arena("1MB", name="permanent")
    with perm:
        p = _step()
    temp = memory.Arena("1MB", name="temp")
    with temp:
        views = [_VIEWS[name](base), _VIEWS[name](p)]  # the heap's and another arena's storage
    temp.reset()
    with temp:
        _step()
    for v in views:
        assert v.tolist() == _VIEWS[name](base).tolist()
        if 0 not in v.stride():  # (an expanded view refuses in-place writes anyway)
            v.add_(0)  # and written


def test_results_kept_from_an_arena_loop_are_refused_after_the_reset() -> None:
    """``kept.append(logits.detach())`` inside the loop kept views of reclaimed storage: reading
    them read later steps' logits. Copies taken outside the arena stay valid."""
    w = lg.arange(4.0)
    temp = memory.Arena("1MB", name="temp")
    kept, copies = [], []
    for step in range(3):
        with temp:
            logits = w * (step + 1)
            kept.append(logits.detach())
        copies.append(logits.clone())
        temp.reset()
    assert lg.stack(copies).tolist() == [[0.0, 1.0, 2.0, 3.0], [0.0, 2.0, 4.0, 6.0], [0.0, 3.0, 6.0, 9.0]]
    for t in kept:
        with pytest.raises(RuntimeError, match=_RECLAIMED):
            lg.stack([t])
        with pytest.raises(RuntimeError, match=_RECLAIMED):
            t.max()


def test_backward_through_a_graph_whose_arena_was_reset_raises() -> None:
    w = lg.ones(4, requires_grad=True)
    temp = memory.Arena("1MB", name="temp")
    with temp:
        loss = (w * 2).exp().sum()  # Exp saves its output, in the arena
        h = (w * 3).exp()
    outside = h.sum()  # made on the heap from a tensor in the arena
    temp.reset()
    with temp:
        (w * 5).exp().sum()  # the bytes' next occupants
    for t in (loss, outside):
        with pytest.raises(RuntimeError, match=_RECLAIMED):
            t.backward()
    assert w.grad is None


def _three_leaf_loss() -> tuple[list[lg.Tensor], lg.Tensor]:
    lg.manual_seed(0)
    leaves = [lg.ones(256, requires_grad=True) for _ in range(3)]
    x = lg.randn(256)
    return leaves, sum(((p * x).sum() for p in leaves[1:]), (leaves[0] * x).sum())


def test_an_arena_full_in_the_middle_of_backward_leaves_every_grad_as_it_was() -> None:
    leaves, loss = _three_leaf_loss()
    probe = memory.Arena("1MB", name="probe")
    with probe:
        loss.backward(retain_graph=True)  # how much the backward takes
    need = probe.used
    leaves, loss = _three_leaf_loss()
    a, b, c = leaves
    a.grad = lg.full((256,), 5.0)
    small = memory.Arena(need // 2, name="small")
    with small, pytest.raises(MemoryError, match="arena 'small' is full"):
        loss.backward(retain_graph=True)
    assert a.grad.tolist() == [5.0] * 256 and b.grad is None and c.grad is None
    with memory.Arena(need, name="enough"):
        loss.backward()  # and the same backward then works: d/dp of (p * x).sum() is x for each
    assert b.grad is not None and c.grad is not None
    np.testing.assert_array_equal(b.grad.numpy(), c.grad.numpy())
    np.testing.assert_array_equal(a.grad.numpy(), 5.0 + b.grad.numpy())


def test_a_full_gradient_home_in_the_middle_of_backward_leaves_every_grad_as_it_was() -> None:
    x = lg.randn(256)
    # no gradients yet: the second leaf's gradient home does not fit in the permanent arena
    perm = memory.Arena(3 * 1024, name="permanent")
    with perm:
        a, b = lg.zeros(256, requires_grad=True), lg.zeros(256, requires_grad=True)
    with pytest.raises(MemoryError, match="arena 'permanent' is full"):
        ((a * x).sum() + (b * x).sum()).backward()
    assert a.grad is None and b.grad is None
    # gradients there: a's is read-only, so its sum needs a new home, which does not fit; b's sum,
    # in place, is not done either
    perm = memory.Arena(3 * 1024, name="permanent")
    with perm:
        a, b = lg.zeros(256, requires_grad=True), lg.zeros(256, requires_grad=True)
        b.grad = lg.ones(256)
    a.grad = lg.ones(1).expand(256)
    with pytest.raises(MemoryError, match="arena 'permanent' is full"):
        ((a * x).sum() + (b * x).sum()).backward()
    assert a.grad.tolist() == [1.0] * 256 and a.grad.stride() == (0,) and b.grad.tolist() == [1.0] * 256


def test_an_arena_entered_from_a_second_thread_says_what_is_wrong() -> None:
    shared = memory.Arena("1MB", name="shared")
    entered, leave = threading.Event(), threading.Event()
    errors: list[BaseException] = []

    def hold() -> None:
        try:
            with shared:
                entered.set()
                leave.wait(10)
        except BaseException as e:  # noqa: BLE001 - reported to the test's thread
            errors.append(e)

    t = threading.Thread(target=hold)
    t.start()
    assert entered.wait(10)
    try:
        with pytest.raises(RuntimeError, match="arena 'shared' is already in use by another thread"), shared:
            pass
        assert memory.active() is None
    finally:
        leave.set()
        t.join()
    assert errors == []
    with shared, shared:  # once the other thread has left, this one may (nested, too)
        assert memory.active() is shared
    assert memory.active() is None


def test_overflow_raises_and_changes_nothing() -> None:
    a = memory.Arena(1024, name="small")
    a.empty((100,), np.float32)
    used = a.used
    with pytest.raises(MemoryError) as info:
        a.empty((1000,), np.float32)
    msg = str(info.value)
    assert "'small'" in msg and "capacity 1024" in msg and f"{used} used" in msg and "4000 requested" in msg
    assert a.used == used
    with a, pytest.raises(MemoryError):
        lg.ones(10_000) * 2


def test_growing_arena_adds_blocks() -> None:
    a = memory.Arena(1024, name="grow", grow=True)
    x = a.empty((100,), np.float32)
    y = a.empty((1000,), np.float32)
    x[:] = 1
    y[:] = 2
    assert len(a._blocks) == 2 and a.used >= 4400 and x.sum() == 100
    a.reset()
    a.empty((1000,), np.float32)
    assert len(a._blocks) == 2  # blocks are kept and reused


def test_nesting_restores_previous_arena_even_on_error() -> None:
    outer, inner = memory.Arena("1MB", name="outer"), memory.Arena("1MB", name="inner")
    with outer:
        with pytest.raises(ValueError), inner:
            assert memory.active() is inner
            raise ValueError
        assert memory.active() is outer
    assert memory.active() is None


def test_arenas_are_per_thread() -> None:
    seen: list[Any] = []
    with memory.Arena("1MB", name="main"):
        t = threading.Thread(target=lambda: seen.append(memory.active()))
        t.start()
        t.join()
        assert memory.active() is not None
    assert seen == [None]


def test_stats_lists_arenas() -> None:
    a = memory.Arena("2MB", name="statsarena")
    a.empty((1000,), np.float32)
    s = memory.stats()
    assert "statsarena" in s and "peak" in s and "capacity" in s


def test_parameter_gradient_lives_in_the_permanent_arena() -> None:
    perm = memory.Arena("1MB", name="permanent")
    with perm:
        w = lg.ones(4, requires_grad=True)
    temp = memory.Arena("1MB", name="temp")
    for _ in range(3):
        with temp:
            w.grad = None
            (w * 2).sum().backward()
        temp.reset()
    used = perm.used
    assert w.grad is not None
    assert w.grad.tolist() == [2.0] * 4 and np.shares_memory(w.grad._data, perm._blocks[0])
    with temp:
        w.grad = None
        (w * 3).sum().backward()
    assert perm.used == used  # the gradient's home is reused, not reallocated


def _mlp_step(use_arena: bool) -> tuple[Callable[[], float], memory.Arena]:
    lg.manual_seed(0)
    perm = memory.Arena("16MB", name="permanent")
    with perm:
        w1 = (lg.randn(784, 256) * 0.03).requires_grad_()
        b1 = lg.zeros(256, requires_grad=True)
        w2 = (lg.randn(256, 10) * 0.03).requires_grad_()
        b2 = lg.zeros(10, requires_grad=True)
        x, y = lg.randn(64, 784), lg.randint(0, 10, (64,))
    params = [w1, b1, w2, b2]
    temp = memory.Arena("32MB", name="temp")

    def step() -> float:
        with temp if use_arena else contextlib.nullcontext():
            logits = (x @ w1 + b1).relu() @ w2 + b2
            loss = -logits.log_softmax(-1).gather(1, y.unsqueeze(1)).mean()
            for p in params:
                p.grad = None
            loss.backward()
            with lg.no_grad():
                for p in params:
                    p.sub_(p.grad * 0.1)
            value = loss.item()
        temp.reset()
        return value
    return step, temp


def test_training_step_allocates_no_array_storage() -> None:
    """After a warm-up step, 10 steps under the arenas allocate no NumPy storage larger than 1 KiB.

    tracemalloc shows live blocks and one global peak: we check that no NumPy block > 1 KiB is left
    behind, and that the peak stays within what Python objects need (the graph's nodes), far below
    the step's array traffic, which the heap path shows as a peak of megabytes."""
    step, temp = _mlp_step(use_arena=True)
    step()
    peak, leaked, losses = allocations(step)
    heap_step, _ = _mlp_step(use_arena=False)
    heap_step()
    heap_peak, _, heap_losses = allocations(heap_step)
    assert leaked == 0
    assert peak < 96 * 1024, f"peak traced allocation {peak} bytes"
    assert heap_peak > 10 * peak
    assert losses == heap_losses  # the arena changes where memory lives, not the results
    assert losses[-1] < losses[0]
    assert temp.peak > 1_000_000  # the step's intermediates really went through the arena


def test_parameters_and_optimizer_state_live_in_the_permanent_arena() -> None:
    perm = memory.Arena("8MB", name="permanent")
    temp = memory.Arena("8MB", name="temp")
    with perm:
        model = lg.nn.Sequential(lg.nn.Linear(16, 32), lg.nn.ReLU(), lg.nn.Linear(32, 4))
        opt = lg.optim.Adam(model.parameters(), lr=1e-2)
    x, y = lg.randn(8, 16), lg.randint(0, 4, (8,))
    used = []
    for _ in range(3):
        with temp:
            opt.zero_grad()
            lg.nn.functional.cross_entropy(model(x), y).backward()
            opt.step()
        temp.reset()
        used.append(perm.used)
    block = perm._blocks[0]
    for p in model.parameters():
        assert p.grad is not None
        assert np.shares_memory(p._data, block) and np.shares_memory(p.grad._data, block)
        assert np.shares_memory(opt.state[p]["exp_avg"]._data, block)
    assert used[1] == used[2]  # after the first step (which packs the buffers) nothing more is taken
    assert all(np.isfinite(p.detach().numpy()).all() for p in model.parameters())


def test_optimizer_refuses_to_step_after_its_arena_is_reset() -> None:
    home = memory.Arena("1MB", name="short-lived")
    with home:
        w = lg.zeros(4, requires_grad=True)
        opt = lg.optim.SGD([w], lr=0.1)
    (w * 2).sum().backward()
    home.reset()
    with pytest.raises(RuntimeError, match="reclaimed by reset\\(\\) of arena 'short-lived'"):
        opt.step()


def _model_step(name: str) -> tuple[Callable[[], float], Callable[[], float], memory.Arena]:
    """The benchmark models' training step (forward, cross-entropy, backward, Adam), under the
    arenas and on the heap, from identical weights."""
    nn, F = lg.nn, lg.nn.functional

    def build() -> tuple[Any, Any, Any, Callable[[Any, Any, Any], Any]]:
        lg.manual_seed(0)
        if name == "mlp":
            m = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(), nn.Linear(256, 10))
            return m, lg.randn(128, 784), lg.randint(0, 10, (128,)), lambda m, x, y: F.cross_entropy(m(x), y)
        if name == "cnn":
            m = nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                              nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                              nn.Flatten(), nn.Linear(1568, 10))
            return m, lg.randn(64, 1, 28, 28), lg.randint(0, 10, (64,)), lambda m, x, y: F.cross_entropy(m(x), y)
        import sys
        from pathlib import Path
        sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
        from benchmarks.nn_models import transformer_block_lm
        m = transformer_block_lm(lg)
        data = lg.randint(0, 65, (16, 65))
        return m, data[:, :-1].contiguous(), data[:, 1:].contiguous(), \
            lambda m, x, y: F.cross_entropy(m(x).reshape(-1, 65), y.reshape(-1))

    steps = []
    temp = memory.Arena("256MB", name="temp")
    for use in (True, False):
        perm = memory.Arena("64MB", name="permanent") if use else contextlib.nullcontext()
        with perm:
            model, x, y, loss_of = build()
            opt = lg.optim.Adam(model.parameters(), lr=1e-3)

        def step(model=model, x=x, y=y, loss_of=loss_of, opt=opt, use=use) -> float:
            with temp if use else contextlib.nullcontext():
                opt.zero_grad()
                loss = loss_of(model, x, y)
                loss.backward()
                opt.step()
                value = loss.item()
            temp.reset()
            return value
        steps.append(step)
    return steps[0], steps[1], temp


def _outputs_outside(step: Callable[[], float], temp: memory.Arena) -> list[str]:
    """Run one step recording every primitive's output and every gradient its backward returns
    that is larger than 1 KiB and lies neither in ``temp`` nor in an input's storage (a view)."""
    from lightgrad import function as Fn

    def home(arr: Any, sources: Any) -> bool:
        if not isinstance(arr, np.ndarray) or arr.nbytes <= 1024:
            return True
        if any(np.shares_memory(arr, b) for b in temp._blocks):
            return True
        return any(isinstance(s, lg.Tensor) and np.shares_memory(arr, s._data) for s in sources)

    outside: list[str] = []
    apply = Fn.Function.__dict__["apply"]

    def traced_apply(cls: Any, *args: Any, **kw: Any) -> Any:
        t = apply.__func__(cls, *args, **kw)
        if memory.active() is temp and not home(t._data, args):
            outside.append(f"{cls.__name__}.forward {t._data.shape}")
        return t

    def subclasses(c: Any) -> list[Any]:
        subs: list[Any] = c.__subclasses__()
        return [s for k in subs for s in [k, *subclasses(k)]]
    patched: dict[Any, Any] = {}
    for cls in subclasses(Fn.Function):
        if "backward" in cls.__dict__:
            def traced_backward(self: Any, g: Any, _orig: Any = cls.__dict__["backward"]) -> Any:
                grads = _orig(self, g)
                for x in grads:
                    if x is not None and not home(x, list(self.parents) + [lg.Tensor._make(g)]):
                        outside.append(f"{type(self).__name__}.backward {x.shape}")
                return grads
            patched[cls] = cls.__dict__["backward"]
            cls.backward = traced_backward
    Fn.Function.apply = classmethod(traced_apply)  # type: ignore[method-assign,assignment]
    try:
        step()
    finally:
        Fn.Function.apply = apply  # type: ignore[method-assign]
        for cls, orig in patched.items():
            cls.backward = orig
    return outside


@pytest.mark.parametrize("name", ["mlp", "cnn", "transformer"])
def test_benchmark_model_steps_allocate_nothing(name: str) -> None:
    """The MLP, CNN and transformer benchmark steps (forward, loss, backward, Adam, reset) under the
    arenas: after a warm-up step, every op output and gradient larger than 1 KiB is carved from the
    temporary arena, no NumPy block larger than 1 KiB is left behind by 10 steps, and the traced
    peak is a small fraction of the same steps on the heap (what remains is Python objects and
    NumPy's own scratch inside single calls, which tracemalloc's one global peak cannot separate)."""
    arena_step, heap_step, temp = _model_step(name)
    arena_step()
    heap_step()
    assert _outputs_outside(arena_step, temp) == []
    heap_step()  # keep the two runs at the same step
    peak, leaked, losses = allocations(arena_step, steps=10)
    heap_peak, _, heap_losses = allocations(heap_step, steps=10)
    assert leaked == 0
    assert heap_peak > 20 * peak, f"{name}: arena peak {peak} bytes vs heap {heap_peak}"
    assert peak < 256 * 1024, f"{name}: arena peak {peak} bytes"  # not one activation-sized array (512 KiB+)
    np.testing.assert_allclose(losses, heap_losses, rtol=1e-6)
    assert temp.peak > 1_000_000
