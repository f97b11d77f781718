"""The reference-count tricks (lightgrad/_refcount.py): operators that write into a temporary
operand's array, the engine taking a gradient array as ``.grad`` without a copy.

Each trick is checked from both sides: that it happens where the counts say nobody else holds the
array (these tests fail when a refactor silently turns a trick off, not only when values change),
and that it does not where something else does (the fallback: a fresh array, a copy). The arena's
use of the counts (a planned step handing out its arrays again) is tested with the arena, in
tests/test_memory.py (its planned-step tests fail when the check answers No)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import lightgrad as lg
from lightgrad import _refcount as R
from lightgrad import engine as E
from lightgrad import function as F

N = 300  # 90,000 entries: above the size where operands are considered for reuse
RNG = np.random.default_rng(0)
XA, WA, BA = (RNG.standard_normal((N, N)).astype(np.float32) for _ in range(3))

verified = pytest.mark.skipif(not R.ENABLED, reason="the counts were not verified on this Python: the tricks are off")


# ---- the switch: on exactly where the counts were verified ---------------------------------------

def test_the_tricks_are_on_on_the_verified_interpreters_and_off_elsewhere() -> None:
    gil = getattr(sys, "_is_gil_enabled", lambda: True)()
    verified_here = sys.implementation.name == "cpython" and sys.version_info[:2] in R.VERIFIED and gil
    assert R.ENABLED is verified_here
    assert (R.BINARY_OP is not None) is verified_here
    if not verified_here:  # every check answers No: operators allocate, the engine copies, arenas leave their plan
        assert not R.owns(np.empty(3)) and R.SLOT_FLAT_REFS == R.SLOT_ARRAY_REFS == 0


# ---- operators: a large temporary operand's array takes the result (as NumPy does for a * b + c) --

def _product_pointers(monkeypatch: Any) -> list[int]:
    """The data pointers of the arrays Mul's forward makes (numbers: holding the arrays would add
    references and so turn the reuse off)."""
    ptrs: list[int] = []
    orig = F.Mul.forward

    def forward(self: Any, x: Any, y: Any, out: Any = None) -> Any:
        r = orig(self, x, y, out)
        ptrs.append(r.ctypes.data)
        return r
    monkeypatch.setattr(F.Mul, "forward", forward)
    return ptrs


@verified
@pytest.mark.parametrize("grad", [False, True])
def test_a_sum_of_a_temporary_product_is_written_into_the_product(grad: bool, monkeypatch: Any) -> None:
    ptrs = _product_pointers(monkeypatch)
    a, b, c = lg.tensor(XA), lg.tensor(WA, requires_grad=grad), lg.tensor(BA)
    y = (a * b) + c
    # (the product is alive while the sum is made: a fresh result could not have its address)
    assert y.data_ptr() == ptrs[-1]
    np.testing.assert_array_equal(y.detach().numpy(), XA * WA + BA)


@verified
def test_a_named_product_is_left_unchanged_and_the_sum_is_fresh(monkeypatch: Any) -> None:
    ptrs = _product_pointers(monkeypatch)
    a, b, c = lg.tensor(XA), lg.tensor(WA), lg.tensor(BA)
    t = a * b
    y = t + c
    assert t.data_ptr() == ptrs[-1] and y.data_ptr() != t.data_ptr()
    np.testing.assert_array_equal(t.numpy(), XA * WA)
    np.testing.assert_array_equal(y.numpy(), XA * WA + BA)


@pytest.fixture
def lent(monkeypatch: Any) -> list[bool]:
    """Records, for each +, -, * and / forward, whether it wrote into an operand's array."""
    seen: list[bool] = []
    for cls in (F.Add, F.Sub, F.Mul, F.Div):
        def forward(self: Any, x: Any, y: Any, out: Any = None, _orig: Any = cls.forward) -> Any:
            seen.append(out is not None)
            return _orig(self, x, y, out)
        monkeypatch.setattr(cls, "forward", forward)
    return seen


def _leaves() -> tuple[lg.Tensor, lg.Tensor, lg.Tensor]:
    return lg.tensor(XA), lg.tensor(WA, requires_grad=True), lg.tensor(BA, requires_grad=True)


# name, expression, whether its last operator reuses an operand's array
CASES: list[tuple[str, Callable[[Any, Any, Any], Any], bool]] = [
    ("temp_plus", lambda x, w, b: x * w + b, True),
    ("plus_temp", lambda x, w, b: b + x * w, True),
    ("temp_minus", lambda x, w, b: x * w - b, True),
    ("minus_temp", lambda x, w, b: b - x * w, True),
    ("number_minus_temp", lambda x, w, b: 1.5 - x * w, True),
    ("temp_times_number", lambda x, w, b: (x * w) * 2.0, True),
    ("number_times_temp", lambda x, w, b: 2.0 * (x * w), True),
    ("temp_over_number", lambda x, w, b: (x * w) / 4.0, True),
    ("temp_plus_row", lambda x, w, b: x * w + b[0], True),
    ("row_temp_plus_matrix", lambda x, w, b: w[0] * 2.0 + b, False),  # the result is not the row's shape
    ("temp_times_tensor", lambda x, w, b: (x * w) * b, False),  # Mul saves both factors
    ("temp_over_tensor", lambda x, w, b: (x * w) / b, False),
    ("constants_temp_times_tensor", lambda x, w, b: (x * 2.0) * x, True),  # no graph: nothing saved
    ("constants_tensor_over_temp", lambda x, w, b: x / (x + 1.0), True),
    ("saved_output_plus", lambda x, w, b: (x * w).exp() + b, False),  # exp's backward reads its output
    ("leaf_plus", lambda x, w, b: lg.ones(N, N, requires_grad=True) + b, False),
    ("small_temp_plus", lambda x, w, b: x[:100, :100] * w[:100, :100] + b[:100, :100], False),
]


@verified
@pytest.mark.parametrize("name,fn,reuses", CASES, ids=[c[0] for c in CASES])
def test_reuse_decision_and_identical_results(name: str, fn: Callable[..., Any], reuses: bool, lent: list[bool],
                                              monkeypatch: Any) -> None:
    x, w, b = _leaves()
    y = fn(x, w, b)
    assert lent[-1] is reuses
    if y.requires_grad:
        y.sum().backward()
    monkeypatch.setattr(R, "BINARY_OP", None)  # reuse off: the plain path
    x2, w2, b2 = _leaves()
    y2 = fn(x2, w2, b2)
    if y2.requires_grad:
        y2.sum().backward()
    assert lent[-1] is False
    np.testing.assert_array_equal(y.numpy(force=True) if y.requires_grad else y.numpy(), y2.detach().numpy())
    for p, q in ((w, w2), (b, b2)):
        if q.grad is None:
            assert p.grad is None
        else:
            np.testing.assert_array_equal(p.grad.numpy(), q.grad.numpy())


@verified
def test_products_of_tensors_reuse_only_without_a_graph(lent: list[bool]) -> None:
    x, w, b = _leaves()
    with lg.no_grad():
        y = (x * w) * b
    assert lent[-1] is True
    np.testing.assert_array_equal(y.numpy(), XA * WA * BA)
    y = (x * w) * b  # recorded: Mul's backward reads both factors
    assert lent[-1] is False and y.requires_grad


@verified
def test_named_operands_are_never_written(lent: list[bool]) -> None:
    x, w, b = _leaves()
    t = x * w
    before = t.detach().numpy().copy()
    y = t + b
    z = t * 3.0
    assert lent[-2:] == [False, False]
    np.testing.assert_array_equal(t.detach().numpy(), before)
    np.testing.assert_array_equal(y.detach().numpy(), before + BA)
    np.testing.assert_array_equal(z.detach().numpy(), before * np.float32(3.0))


@verified
@pytest.mark.parametrize("keep", ["detach", "numpy", "view", "data"])
def test_an_array_still_seen_elsewhere_is_not_written(keep: str, lent: list[bool]) -> None:
    kept: list[Any] = []

    def make(x: lg.Tensor) -> lg.Tensor:
        r = x * 2.0  # returned as a temporary, but its memory is also kept below
        with lg.no_grad():
            kept.append({"detach": lambda: r.detach(), "numpy": lambda: r.detach().numpy(),
                         "view": lambda: r.detach().view(-1), "data": lambda: r.data}[keep]())
        return r

    x = lg.tensor(XA)
    y = make(x) + 1.0
    assert lent[-1] is False
    got = kept[0].numpy() if isinstance(kept[0], lg.Tensor) else kept[0]
    np.testing.assert_array_equal(np.reshape(got, (N, N)), XA * np.float32(2.0))
    np.testing.assert_array_equal(y.numpy(), XA * np.float32(2.0) + np.float32(1.0))


@verified
def test_direct_method_calls_and_arena_tensors_are_not_reused(lent: list[bool]) -> None:
    x, w, b = _leaves()
    (x * w).__add__(b)  # not called by the interpreter's operator: its counts say nothing
    assert lent[-1] is False
    with lg.memory.Arena("8MB", name="reuse-test"):
        x * w + b  # arena storage belongs to the arena's bookkeeping
    assert lent[-1] is False


@verified
def test_reuse_under_compile_replays_identically() -> None:
    x, w, b = _leaves()

    def step(x: lg.Tensor) -> lg.Tensor:
        return ((x * w + b) * 0.5 - 1.0).sum()

    compiled = lg.compile(step)
    for _ in range(3):
        got = compiled(x)
        want = step(x)
        np.testing.assert_array_equal(got.detach().numpy(), want.detach().numpy())


def _random_expression(rng: np.random.Generator, leaves: list[lg.Tensor], depth: int) -> Callable[[], Any]:
    """A random expression over the leaves with +, -, * and / (operands: leaves, Python numbers,
    subexpressions; each as the left or the right operand), as a function that evaluates it."""
    if depth == 0 or rng.random() < 0.2:
        k = int(rng.integers(len(leaves) + 1))
        if k == len(leaves):
            c = float(rng.choice([0.5, 2.0, -1.5]))
            return lambda: c
        return lambda: leaves[k]
    a, b = _random_expression(rng, leaves, depth - 1), _random_expression(rng, leaves, depth - 1)
    op = ["+", "-", "*", "/"][int(rng.integers(4))]
    if op == "+":
        return lambda: a() + b()
    if op == "-":
        return lambda: a() - b()
    if op == "*":
        return lambda: a() * b()
    return lambda: a() / (b() if not isinstance(b(), float) else 4.0)


@verified
@pytest.mark.parametrize("seed", range(12))
@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # (a random denominator may be 0: both runs agree on inf)
def test_random_expressions_give_the_same_values_and_gradients(seed: int, monkeypatch: Any) -> None:
    rng = np.random.default_rng(seed)
    arrays = [rng.standard_normal((N, N)).astype(np.float32) + 3 for _ in range(2)] + [
        rng.standard_normal(N).astype(np.float32) + 3]

    def run() -> tuple[np.ndarray, list[Any]]:
        leaves = [lg.tensor(a, requires_grad=i != 1) for i, a in enumerate(arrays)]  # one constant
        expr = _random_expression(np.random.default_rng(seed + 100), leaves, 4)
        y = expr()
        if not isinstance(y, lg.Tensor) or not y.requires_grad:
            return np.asarray(y if not isinstance(y, lg.Tensor) else y.numpy()), []
        y.sum().backward()
        return y.detach().numpy(), [None if t.grad is None else t.grad.numpy() for t in leaves]

    got, grads = run()
    monkeypatch.setattr(R, "BINARY_OP", None)
    want, want_grads = run()
    np.testing.assert_array_equal(got, want)
    for g, w in zip(grads, want_grads):
        assert (g is None) == (w is None)
        if g is not None:
            np.testing.assert_array_equal(g, w)


# ---- the engine: a gradient array nobody else holds becomes .grad as it is -----------------------

def _backward_pointers(monkeypatch: Any, cls: type) -> list[int]:
    """The data pointers of the gradient arrays ``cls.backward`` returns (numbers, as above)."""
    ptrs: list[int] = []
    orig = cls.backward

    def backward(self: Any, g: Any) -> Any:
        r = orig(self, g)
        ptrs.extend(p.ctypes.data for p in r if isinstance(p, np.ndarray))
        return r
    monkeypatch.setattr(cls, "backward", backward)
    return ptrs


@verified
def test_a_fresh_gradient_becomes_grad_without_a_copy(monkeypatch: Any) -> None:
    ptrs = _backward_pointers(monkeypatch, F.MatMul)
    x = lg.tensor(RNG.standard_normal((16, 8)).astype(np.float32))
    w = lg.tensor(RNG.standard_normal((8, 4)).astype(np.float32), requires_grad=True)
    (x @ w).sum().backward()
    assert w.grad is not None and w.grad.data_ptr() in ptrs  # the array MatMul's backward made
    np.testing.assert_allclose(w.grad.numpy(), x.numpy().sum(0)[:, None].repeat(4, 1), rtol=1e-5)


@verified
@pytest.mark.parametrize("kept", [False, True])
def test_a_gradient_held_elsewhere_is_copied(kept: bool) -> None:
    """A custom backward's result becomes ``.grad`` as it is, unless the function keeps it too."""
    keep: list[lg.Tensor] = []
    made: list[int] = []

    class Twice(lg.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: Any) -> Any:
            return x * 2

        @staticmethod
        def backward(ctx: Any, g: Any) -> Any:
            r = g * 2
            made.append(r.data_ptr())
            if kept:
                keep.append(r)
            return r

    x = lg.ones(4, requires_grad=True)
    Twice.apply(x).sum().backward()
    assert x.grad is not None and (x.grad.data_ptr() == made[0]) is not kept
    if kept:
        keep[0].add_(1.0)  # the function's own array changes; the gradient does not
    np.testing.assert_array_equal(x.grad.numpy(), np.full(4, 2.0, np.float32))


def test_fresh_leaf_gradient_is_handed_over_without_a_copy(monkeypatch: Any) -> None:
    """A gradient array only the engine holds becomes ``.grad`` as it is (``_refcount.owns`` in
    ``engine._accumulate``); one that two leaves share is copied for each of them."""
    copies = []
    orig = E.empty_like_home
    monkeypatch.setattr(E, "empty_like_home", lambda *a: copies.append(a[1]) or orig(*a))
    x = lg.tensor(RNG.standard_normal((16, 8)).astype(np.float32))
    w = lg.tensor(RNG.standard_normal((8, 4)).astype(np.float32), requires_grad=True)
    (x @ w).sum().backward()
    assert copies == [] or not R.ENABLED
    np.testing.assert_allclose(w.grad.numpy(), x.numpy().sum(0)[:, None].repeat(4, 1), rtol=1e-5)
    a = lg.zeros(5, requires_grad=True)
    b = lg.zeros(5, requires_grad=True)
    (a + b).sum().backward()
    assert len(copies) == (2 if R.ENABLED else 3) and not np.shares_memory(a.grad.numpy(), b.grad.numpy())
    (a + b).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), 2.0)
    np.testing.assert_allclose(b.grad.numpy(), 2.0)
