"""lightgrad.compile: traced once, replayed after; bit-identical to eager execution."""

from __future__ import annotations

import importlib
import pkgutil
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import lightgrad as lg
from benchmarks import nn_models, nn_spatial_models
from helpers import allocations

ROOT = Path(__file__).resolve().parent.parent


def _model(name: str) -> tuple[Any, Any, Any, Callable[[Any, Any, Any], Any]]:
    lg.manual_seed(0)
    rng = np.random.default_rng(0)
    ce = lg.nn.functional.cross_entropy
    if name == "mlp":
        return (nn_models.mlp(lg), lg.tensor(rng.standard_normal((16, 784)).astype(np.float32)),
                lg.tensor(rng.integers(0, 10, 16)), lambda m, x, y: ce(m(x), y))
    if name == "cnn":
        return (nn_spatial_models.cnn(lg), lg.tensor(rng.standard_normal((4, 1, 28, 28)).astype(np.float32)),
                lg.tensor(rng.integers(0, 10, 4)), lambda m, x, y: ce(m(x), y))
    if name == "transformer":
        data = rng.integers(0, 65, (2, 17))
        return (nn_models.transformer_block_lm(lg, seq=16), lg.tensor(data[:, :-1]), lg.tensor(data[:, 1:]),
                lambda m, x, y: ce(m(x).reshape(-1, 65), y.reshape(-1)))
    lstm = nn_spatial_models._LSTMClassifier(lg)
    model = lg.nn.ModuleList([lstm.lstm, lstm.head])
    return (model, lg.tensor(rng.standard_normal((8, 4, 64)).astype(np.float32)), lg.tensor(rng.integers(0, 10, 4)),
            lambda m, x, y: ce(m[1](m[0](x)[0][-1]), y))


def _trainer(name: str, optim: str) -> tuple[list[Any], Callable[[Any, Any], Any], Any, Any]:
    model, x, y, loss_of = _model(name)
    params = list(model.parameters())
    opt = (lg.optim.Adam(params, lr=1e-3) if optim == "adam" else
           lg.optim.SGD(params, lr=0.01, momentum=0.9) if optim == "sgdm" else None)

    def step(x: Any, y: Any) -> Any:
        if opt is not None:
            opt.zero_grad()
        else:
            for p in params:
                p.grad = None
        loss = loss_of(model, x, y)
        loss.backward()
        if opt is not None:
            opt.step()
        else:
            with lg.no_grad():
                for p in params:
                    p -= 0.01 * p.grad
        return loss
    return params, step, x, y


@pytest.mark.parametrize("optim", ["manual", "sgdm", "adam"])
@pytest.mark.parametrize("name", ["mlp", "cnn", "transformer", "lstm"])
def test_100_compiled_steps_are_bit_identical_to_eager(name: str, optim: str) -> None:
    p_eager, eager, x, y = _trainer(name, optim)
    p_comp, step, _, _ = _trainer(name, optim)
    compiled = lg.compile(step)
    for i in range(100):
        le, lc = eager(x, y).item(), compiled(x, y).item()
        assert le == lc, f"step {i}: eager loss {le}, compiled {lc}"
    for a, b in zip(p_eager, p_comp):
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
    stats = list(compiled.stats().values())
    assert len(stats) == 1 and isinstance(stats[0], dict), stats  # traced once, no fallback


def test_xor_example_compiled_matches_eager(monkeypatch: Any) -> None:
    monkeypatch.syspath_prepend(str(ROOT / "examples"))
    monkeypatch.setenv("FRAMEWORK", "lightgrad")
    sys.modules.pop("xor", None)
    import xor
    eager = xor.main(epochs=500, log=False)
    compiled = xor.main(epochs=500, log=False, compiled=True)
    assert eager == compiled
    assert compiled[-1] < 0.05


@pytest.mark.parametrize("name", ["mlp", "cnn", "transformer"])
def test_replayed_steps_allocate_nothing_and_plan_reuses_memory(name: str) -> None:
    _, step, x, y = _trainer(name, "sgdm")
    compiled = lg.compile(step)
    for _ in range(3):  # trace, measure, first planned replay
        compiled(x, y)
    peak, left, _ = allocations(lambda: compiled(x, y))
    assert left == 0
    # no array storage was made: the peak is the iteration buffers NumPy's ufunc loops take for
    # broadcast, strided or casting operands (32 KiB per operand, freed on return) plus a few
    # Python objects; one eager step of these models makes arrays of megabytes
    assert peak < 128 * 1024, f"peak traced allocation {peak} bytes"
    (st,) = compiled.stats().values()
    # (0.71: the native ReLU gradient makes no boolean mask, so the mlp's intermediates shrink by
    # 24 KiB while its plan stays 1.64 MB: 0.700 of them, 0.693 on the NumPy path)
    assert st["plan_bytes"] <= 0.71 * st["intermediate_bytes"], st


def test_new_shapes_trace_again_and_stay_exact() -> None:
    _, eager, x, y = _trainer("mlp", "sgdm")
    _, step, _, _ = _trainer("mlp", "sgdm")
    compiled = lg.compile(step)
    for i in range(6):
        xs, ys = (x, y) if i % 2 else (x[:8], y[:8])
        assert eager(xs, ys).item() == compiled(xs, ys).item()
    assert len(compiled.stats()) == 2


def test_value_reads_and_dropout_fall_back_to_eager_with_a_warning() -> None:
    w = lg.ones(3, requires_grad=True)

    def reads(x: Any) -> Any:
        loss = (x * w).sum()
        if loss.item() > 0:  # Python control flow on a value
            loss = loss * 2
        return loss

    compiled = lg.compile(reads)
    with pytest.warns(UserWarning, match="runs eagerly"):
        compiled(lg.ones(3))
    assert compiled(-lg.ones(3)).item() == -3.0  # eager again: the branch follows the value
    drop = lg.compile(lambda x: lg.nn.functional.dropout(x, 0.5).sum())
    with pytest.warns(UserWarning, match="random numbers"):
        drop(lg.ones(100))
    lg.manual_seed(1)
    a = drop(lg.ones(100)).item()
    lg.manual_seed(1)
    assert a == lg.nn.functional.dropout(lg.ones(100), 0.5).sum().item()


def test_results_of_a_replay_are_valid_until_the_next_call() -> None:
    w = lg.ones(1000, requires_grad=True)
    for n in (1000, 4):  # buffers of 4 KB and of a few bytes: both replayed in the planned arena
        compiled = lg.compile(lambda x, n=n: x * w[:n])
        outs = [compiled(lg.full((n,), float(i))) for i in range(4)]
        assert outs[-1][0].item() == 3.0
        with pytest.raises(RuntimeError, match="reclaimed"):
            outs[-2].sum()


def test_compile_forms() -> None:
    m = lg.nn.Linear(2, 2)
    assert lg.compile(m) is m

    @lg.compile
    def f(x: Any) -> Any:
        return x * 2

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(3):
            np.testing.assert_array_equal(f(lg.ones(2)).numpy(), [2.0, 2.0])
    with pytest.raises(TypeError, match="NumPy array"):
        f(np.ones(2))


def test_batchnorm_running_statistics_and_in_place_writes_are_replayed() -> None:
    def build() -> tuple[Any, Callable[[Any, Any], Any]]:
        lg.manual_seed(0)
        nn = lg.nn
        model = nn.Sequential(nn.Conv2d(1, 4, 3), nn.BatchNorm2d(4), nn.ReLU(), nn.Flatten(), nn.Linear(4 * 6 * 6, 3))
        opt = lg.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
        scratch = lg.zeros(3)

        def step(x: Any, y: Any) -> Any:
            opt.zero_grad()
            loss = lg.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            scratch.fill_(1.0)
            scratch.copy_(loss.detach().expand(3))  # in-place writes of a tensor made outside the step
            return loss
        return model, step

    rng = np.random.default_rng(1)
    batches = [(lg.tensor(rng.standard_normal((5, 1, 8, 8)).astype(np.float32)), lg.tensor(rng.integers(0, 3, 5)))
               for _ in range(4)]
    (m1, eager), (m2, step) = build(), build()
    compiled = lg.compile(step)
    for i in range(12):
        x, y = batches[i % 4]
        assert eager(x, y).item() == compiled(x, y).item()
    for (k, a), (_, b) in zip(m1.state_dict().items(), m2.state_dict().items()):
        np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=k)
    assert int(m2[1].num_batches_tracked.item()) == 12
    assert isinstance(next(iter(compiled.stats().values())), dict)


def _small_models() -> dict[str, Callable[[], tuple[Any, Any, Any, Callable[[Any, Any, Any], Any]]]]:
    nn, F = lg.nn, lg.nn.functional
    rng = np.random.default_rng(2)

    def seq(n: int = 6) -> Any:
        return lg.tensor(rng.standard_normal((3, n, 8)).astype(np.float32))

    def classes(n: int = 3) -> Any:
        return lg.tensor(rng.integers(0, 4, n))

    class Attn(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.mha = nn.MultiheadAttention(8, 2, batch_first=True)
            self.ln = nn.LayerNorm(8)
            self.head = nn.Linear(8, 4)

        def forward(self, x: Any) -> Any:
            mask = lg.triu(lg.ones(x.shape[1], x.shape[1], dtype=lg.bool), diagonal=1)
            y, _ = self.mha(x, x, x, attn_mask=mask, need_weights=False)
            return self.head(F.gelu(self.ln(x + y), approximate="tanh")).mean(1)

    class Rec(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.gru = nn.GRU(8, 8, num_layers=2, batch_first=True, bidirectional=True)
            self.head = nn.Linear(16, 4)

        def forward(self, x: Any) -> Any:
            return self.head(self.gru(x)[0][:, -1])

    class Emb(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.emb = nn.Embedding(10, 8, padding_idx=0)
            self.conv = nn.Conv1d(8, 4, 3, padding="same")
            self.pool = nn.AdaptiveAvgPool1d(1)

        def forward(self, idx: Any) -> Any:
            return self.pool(self.conv(self.emb(idx).transpose(1, 2)).tanh()).flatten(1)

    return {
        "attention": lambda: (Attn(), seq(), classes(), lambda m, x, y: F.cross_entropy(m(x), y, label_smoothing=0.1)),
        "gru": lambda: (Rec(), seq(), classes(), lambda m, x, y: F.cross_entropy(m(x), y)),
        "embedding_conv1d": lambda: (Emb(), lg.tensor(rng.integers(0, 10, (3, 7))), classes(),
                                     lambda m, x, y: F.nll_loss(F.log_softmax(m(x), 1), y)),
        "mse_rmsnorm": lambda: (nn.Sequential(nn.Linear(8, 8), nn.RMSNorm(8), nn.SiLU(), nn.Linear(8, 1)), seq(),
                                lg.tensor(rng.standard_normal((3, 6, 1)).astype(np.float32)),
                                lambda m, x, y: F.smooth_l1_loss(m(x), y) + F.mse_loss(m(x), y)),
    }


@pytest.mark.parametrize("name", list(_small_models()))
def test_more_layers_compile_without_falling_back(name: str) -> None:
    def build() -> tuple[Any, Callable[[], Any], Any]:
        lg.manual_seed(0)
        model, x, y, loss_of = _small_models()[name]()
        opt = lg.optim.AdamW(model.parameters(), lr=1e-2)
        sched = lg.optim.lr_scheduler.StepLR(opt, 2, gamma=0.5)

        def step() -> Any:
            opt.zero_grad()
            loss = loss_of(model, x, y)
            loss.backward()
            lg.nn.utils.clip_grad_norm_(model.parameters(), 0.5)
            opt.step()
            sched.step()
            return loss
        return model, step, opt

    (m1, eager, o1), (m2, step, o2) = build(), build()
    compiled = lg.compile(step)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a fallback to eager warns: fail on it
        for i in range(6):
            assert eager().item() == compiled().item(), f"step {i}"
    for (k, a), (_, b) in zip(m1.state_dict().items(), m2.state_dict().items()):
        np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=k)
    assert o1.param_groups[0]["lr"] == o2.param_groups[0]["lr"] == 1e-2 * 0.5 ** 3


def test_replay_runs_traceable_primitives_as_numpy_calls_into_the_plan() -> None:
    # Linear and Sigmoid are replayed as the backend calls they made, lowered to NumPy calls that
    # write into planned buffers: no node method is called and nothing is allocated
    lg.manual_seed(0)
    lin = lg.nn.Linear(3, 2)

    def step(x: Any) -> Any:
        lin.zero_grad()
        loss = lin(x).sigmoid().sum()
        loss.backward()
        return loss
    compiled = lg.compile(step)
    x = lg.tensor(np.random.default_rng(0).standard_normal((4, 3)).astype(np.float32))
    for _ in range(3):
        compiled(x)
    (prog,) = compiled.programs.values()
    assert ".forward(" not in prog.source and ".backward(" not in prog.source
    assert "out=" in prog.source
    want = step(x).item(), lin.weight.grad.numpy().copy()
    assert compiled(x).item() == want[0]
    np.testing.assert_array_equal(lin.weight.grad.numpy(), want[1])


def test_replay_decides_value_dependent_handovers_again() -> None:
    # a product's gradient hands y over when the incoming gradient is a broadcast 1: that is
    # decided by value at each replay, not once when tracing (s is 1 when traced, then 2)
    w = lg.ones(1 << 14, requires_grad=True)

    def step(x: Any, s: Any) -> Any:
        w.grad = None
        loss = (x * w).sum() * s
        loss.backward()
        return loss
    compiled = lg.compile(step)
    x = lg.arange(1 << 14, dtype=lg.float32)
    for s in (1.0, 1.0, 2.0, 3.0):
        compiled(x, lg.tensor(s))
        got = w.grad.numpy().copy()
        step(x, lg.tensor(s))
        np.testing.assert_array_equal(got, w.grad.numpy())


def test_replay_keeps_the_floating_point_error_settings_of_each_op() -> None:
    # sigmoid ignores exp's overflow where it runs (1 / (1 + inf) is its right limit): so does its replay
    w = lg.ones(3, requires_grad=True)
    compiled = lg.compile(lambda x: (x * w).sigmoid().sum())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(3):
            assert compiled(lg.tensor([-1000.0, 0.0, 1000.0])).item() == 1.5


@pytest.mark.parametrize("zero", [True, False])
def test_gradients_computed_into_the_leaf_gradient_home_accumulate_as_eager(zero: bool) -> None:
    # a leaf's gradient is written straight into its gradient home only while .grad is None; a
    # step that does not zero gradients, or a weight used twice, still sums like the eager step
    def build() -> tuple[Any, Any, Callable[[Any], Any]]:
        lg.manual_seed(0)
        a, b = lg.nn.Linear(3, 3), lg.nn.Linear(3, 1)

        def step(x: Any) -> Any:
            if zero:
                a.zero_grad()
                b.zero_grad()
            loss = b(a(a(x).tanh())).sum()  # a used twice
            loss.backward()
            return loss
        return a, b, step
    x = lg.tensor(np.random.default_rng(0).standard_normal((5, 3)).astype(np.float32))
    (a1, b1, eager), (a2, b2, step) = build(), build()
    compiled = lg.compile(step)
    for _ in range(4):
        assert eager(x).item() == compiled(x).item()
        for p, q in zip([*a1.parameters(), *b1.parameters()], [*a2.parameters(), *b2.parameters()]):
            np.testing.assert_array_equal(p.grad.numpy(), q.grad.numpy())


def test_autograd_grad_falls_back_to_eager_with_its_reason() -> None:
    w = lg.ones(3, requires_grad=True)

    def step(x: Any) -> Any:
        (g,) = lg.autograd.grad((x * w * w).sum(), [w])
        return g

    compiled = lg.compile(step)
    with pytest.warns(UserWarning, match="autograd.grad"):
        compiled(lg.ones(3))
    np.testing.assert_array_equal(compiled(lg.full((3,), 2.0)).numpy(), [4.0, 4.0, 4.0])


@pytest.mark.parametrize("name, defined_in", [("_new", "lightgrad._ops.creation"), ("_gen", "lightgrad._generator"),
                                              ("run_backward", "lightgrad.engine")])
def test_the_trace_replaces_a_function_in_every_module_that_imported_it(name: str, defined_in: str) -> None:
    """A function that modules bind at import (``from ..random import _gen``) is replaced while a
    step is traced in the modules the compiler's table lists: exactly those that hold it (its own
    module counts when its callers there look it up at call time)."""
    compiler = importlib.import_module("lightgrad.compiler")
    for info in pkgutil.walk_packages(lg.__path__, "lightgrad."):
        if not info.name.endswith("__main__"):
            importlib.import_module(info.name)
    fn = getattr(sys.modules[defined_in], name)
    holders = {m for m, mod in list(sys.modules.items()) if m.startswith("lightgrad.") and getattr(mod, name, None) is fn}
    listed = {h.__name__ for hs, names, _ in compiler._patch_points() if name in names for h in hs}
    assert holders - {defined_in} <= listed, f"not replaced while tracing: {sorted(holders - {defined_in} - listed)}"
    assert listed <= holders, f"listed but not holding {name}: {sorted(listed - holders)}"


class _Counting:
    """Stands in for the native kernel module and counts each kernel's calls."""

    def __init__(self, k: Any) -> None:
        self.k, self.calls = k, {}

    def __getattr__(self, name: str) -> Any:
        fn = getattr(self.k, name)

        def counted(*args: Any) -> Any:
            self.calls[name] = self.calls.get(name, 0) + 1
            return fn(*args)
        return counted


@pytest.mark.skipif(not lg.backend.native.available, reason="the native kernels are off (LIGHTGRAD_NATIVE=0) or not built")
def test_replays_call_the_native_kernels(monkeypatch: pytest.MonkeyPatch) -> None:
    """A compiled step's replay runs the same native kernels as the eager step (GELU, layer norm forward
    and backward, softmax for the loss, max-pool, ReLU, Adam), each call into the replay's buffers."""
    from lightgrad.backend import native
    counting = _Counting(native.kernels)
    calls = counting.calls
    monkeypatch.setattr(native, "kernels", counting)
    nn, F = lg.nn, lg.nn.functional
    lg.manual_seed(0)
    conv = nn.Conv2d(1, 4, 3, padding=1)
    mlp = nn.Sequential(nn.Linear(64, 32), nn.GELU(), nn.LayerNorm(32), nn.Linear(32, 10))
    params = list(conv.parameters()) + list(mlp.parameters())
    opt = lg.optim.Adam(params)
    x, y = lg.randn(8, 1, 16, 16), lg.randint(0, 10, (8,))

    def step(x: lg.Tensor, y: lg.Tensor) -> lg.Tensor:
        opt.zero_grad()
        h = F.max_pool2d(F.relu(conv(x)), 2).reshape(8, 4, 64).mean(1)
        loss = F.nll_loss(F.log_softmax(mlp(h), -1), y)
        loss.backward()
        opt.step()
        return loss
    compiled = lg.compile(step)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a fallback to eager warns: fail on it
        for _ in range(3):
            compiled(x, y)
    stats = list(compiled.stats().values())
    assert len(stats) == 1 and isinstance(stats[0], dict), stats  # traced once, replayed since
    calls.clear()
    compiled(x, y)
    for name in ("gelu", "layer_norm", "layer_norm_backward", "softmax", "softmax_backward", "relu",
                 "relu_backward", "max_pool2x2", "max_pool2x2_backward", "adam"):
        assert calls.get(name, 0) >= 1, (name, calls)


@pytest.mark.skipif(not lg.backend.native.available, reason="the native kernels are off (LIGHTGRAD_NATIVE=0) or not built")
def test_replays_call_the_lstm_layer_kernels(monkeypatch: pytest.MonkeyPatch) -> None:
    """A compiled LSTM step's replay runs the whole-layer kernels (hidden size 128), forward and backward."""
    from lightgrad.backend import native
    if not native.kernels.gemm_variant():
        pytest.skip("no AVX2+FMA: the layers run a native pass a step")
    counting = _Counting(native.kernels)
    calls = counting.calls
    monkeypatch.setattr(native, "kernels", counting)
    _, step, x, y = _trainer("lstm", "sgdm")
    compiled = lg.compile(step)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a fallback to eager warns: fail on it
        for _ in range(3):
            compiled(x, y)
    calls.clear()
    compiled(x, y)
    assert calls.get("lstm_layer") == 1 and calls.get("lstm_layer_backward") == 1, calls
    assert "lstm_cell" not in calls
