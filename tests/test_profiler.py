"""lightgrad.profiler: what it records (names, nesting, self times), its schedule, table, Chrome
trace, and that it leaves every patched method as it was (no cost when no profiler records)."""

from __future__ import annotations

import json
import warnings

import pytest

import lightgrad as lg
from lightgrad.function import Function
from lightgrad.profiler import (ProfilerAction, ProfilerActivity, profile, record_function, schedule,
                                tensorboard_trace_handler)


def _step() -> None:
    x = lg.randn(4, 3, requires_grad=True)
    w = lg.randn(3, 2)
    with record_function("outer"):
        y = (x @ w).relu().sum()
        with record_function("inner"):
            x + 1
    y.backward()


def test_records_ops_backward_nodes_and_ranges() -> None:
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        _step()
    keys = {e.key: e for e in prof.key_averages()}
    for name in ("outer", "inner", "aten::matmul", "aten::relu", "aten::sum", "aten::add", "SumBackward0",
                 "ReluBackward0", "MatMulBackward0"):
        assert name in keys, name
    assert keys["aten::add"].count == 1


def test_self_time_excludes_children() -> None:
    with profile() as prof:
        _step()
    ev = {e.name: e for e in prof.events()}
    outer, inner = ev["outer"], ev["inner"]
    assert inner.cpu_parent is outer and inner in outer.cpu_children
    children = sum(c.cpu_time_total for c in outer.cpu_children)
    assert outer.self_cpu_time_total == pytest.approx(outer.cpu_time_total - children)
    assert 0 < outer.self_cpu_time_total < outer.cpu_time_total
    assert ev["aten::add"].cpu_parent is inner


def test_counts_and_input_shapes() -> None:
    a, b = lg.randn(2, 3), lg.randn(3)
    with profile(record_shapes=True) as prof:
        for _ in range(3):
            a + b
        a + a
    grouped = prof.key_averages(group_by_input_shape=True)
    shapes = {str(e.input_shapes): e.count for e in grouped if e.key == "aten::add"}
    assert shapes == {"[[2, 3], [3]]": 3, "[[2, 3], [2, 3]]": 1}
    table = grouped.table(sort_by="count", row_limit=10)
    assert "Input Shapes" in table and "[[2, 3], [3]]" in table


def test_table_has_pytorchs_columns() -> None:
    torch = pytest.importorskip("torch")
    with profile() as prof:
        _step()
    ours = prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=5).splitlines()
    with torch.profiler.profile() as tprof:
        torch.ones(2) + 1
    theirs = tprof.key_averages().table(sort_by="self_cpu_time_total", row_limit=5).splitlines()
    assert ours[1].split() == theirs[1].split()  # the header row
    assert len(ours) == 5 + 5  # separators, header, five rows, total
    assert ours[-1].startswith("Self CPU time total: ")
    rows = [r.split() for r in ours[3:8]]
    self_times = [float(r[-5].rstrip("usm")) * (1000 if r[-5].endswith("ms") else 1) for r in rows]
    assert self_times == sorted(self_times, reverse=True)


def test_schedule_matches_pytorch() -> None:
    torch = pytest.importorskip("torch")
    args = dict(wait=1, warmup=1, active=2, repeat=2, skip_first=1)
    ours, theirs = schedule(**args), torch.profiler.schedule(**args)
    assert [ours(i).name for i in range(14)] == [theirs(i).name for i in range(14)]
    with pytest.raises(AssertionError, match="Invalid profiler schedule arguments"):
        schedule(wait=0, warmup=1, active=0)
    with pytest.warns(UserWarning, match="won't be using warmup"):
        schedule(wait=1, warmup=0, active=1)
    assert ours(3) is ProfilerAction.RECORD


def test_schedule_records_active_steps_only() -> None:
    ready: list[tuple[int, dict[str, int]]] = []

    def on_ready(p: profile) -> None:
        ready.append((p.step_num, {e.key: e.count for e in p.key_averages()}))

    x = lg.ones(2)
    with profile(schedule=schedule(wait=1, warmup=1, active=2, repeat=2), on_trace_ready=on_ready) as prof:
        for _ in range(10):
            x * 2
            prof.step()
    # as PyTorch: trace ready after steps 3 and 7, two active steps each, one mul per step
    assert [s for s, _ in ready] == [4, 8]
    for _, counts in ready:
        assert counts["aten::mul"] == 2 and counts["ProfilerStep*"] == 2


def test_chrome_trace(tmp_path) -> None:
    with profile(record_shapes=True) as prof:
        _step()
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    doc = json.loads(path.read_text())
    spans = [e for e in doc["traceEvents"] if e["ph"] == "X"]
    names = {e["name"] for e in spans}
    assert {"outer", "inner", "aten::matmul", "SumBackward0"} <= names
    for e in spans:
        assert {"pid", "tid", "ts", "dur", "cat"} <= set(e) and e["dur"] >= 0
    by = {e["name"]: e for e in spans}
    outer, inner = by["outer"], by["inner"]  # nesting, in microseconds
    assert outer["ts"] <= inner["ts"] and inner["ts"] + inner["dur"] <= outer["ts"] + outer["dur"] + 1e-3
    assert by["aten::matmul"]["args"]["Input Dims"] == [[4, 3], [3, 2]]


def test_tensorboard_trace_handler(tmp_path) -> None:
    with profile(on_trace_ready=tensorboard_trace_handler(str(tmp_path / "tb"), worker_name="w")):
        lg.ones(2) + 1
    files = list((tmp_path / "tb").glob("w.*.pt.trace.json"))
    assert len(files) == 1
    assert any(e["name"] == "aten::add" for e in json.loads(files[0].read_text())["traceEvents"])


def test_record_function_as_decorator_and_outside_a_profiler() -> None:
    @record_function("decorated")
    def f(t):
        return t * 2

    f(lg.ones(1))  # no profiler: runs, records nothing
    with profile() as prof:
        f(lg.ones(1))
    ev = {e.name: e for e in prof.events()}
    assert ev["aten::mul"].cpu_parent is ev["decorated"]


def test_optimizer_steps_and_custom_functions() -> None:
    class Square(lg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * x * g

    p = lg.nn.Parameter(lg.ones(3))
    opt = lg.optim.SGD([p], lr=0.1)
    with profile() as prof:
        Square.apply(p).sum().backward()
        opt.step()
        opt.zero_grad()
    keys = [e.key for e in prof.key_averages()]
    assert "Square" in keys and "Optimizer.step#SGD.step" in keys and "Optimizer.zero_grad#SGD.zero_grad" in keys


def test_patches_are_undone() -> None:
    """No profiler recording means the original methods, the very same objects."""
    def snapshot():
        todo, seen = [Function], []
        while todo:
            for sub in todo.pop().__subclasses__():
                seen.append(sub)
                todo.append(sub)
        return {(c, n): c.__dict__[n] for c in [Function, *seen, lg.optim.SGD, lg.optim.Optimizer,
                                                  lg.autograd.Function]
                for n in ("apply", "backward", "step", "zero_grad") if n in c.__dict__}

    before = snapshot()
    with profile():
        with profile():  # nested profilers share the recording
            _step()
    after = snapshot()
    assert after == before and all(after[k] is before[k] for k in before)


def test_errors_and_warnings_as_pytorch() -> None:
    with pytest.raises(AssertionError, match="Profiler must be initialized before getting key averages"):
        profile().key_averages()
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA])
    assert any("CUDA is not available, disabling CUDA profiling" in str(m.message) for m in w)


def test_profile_memory_counts_new_arrays() -> None:
    x = lg.zeros(1000, dtype=lg.float32)
    with profile(profile_memory=True) as prof:
        x + 1  # a new 4000-byte array
        x.view(10, 100)  # a view: no new bytes
    ev = {e.name: e for e in prof.events()}
    assert ev["aten::add"].self_cpu_memory_usage == 4000
    assert "CPU Mem" in prof.key_averages().table()


def test_torch_alias_names() -> None:
    assert lg.profiler.profile is profile and lg.profiler.record_function is record_function
