"""The fast paths of the backend and engine give the results of the plain ones: threaded ops are
bit-identical to one call, fused GELU matches PyTorch (also differentiated twice), slices of one
tensor (split, chunk, unbind) get the gradient PyTorch gives, sorted row sums match np.add.at."""

from __future__ import annotations

import threading
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import lightgrad as lg
from lightgrad import backend as B

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(0)
X = RNG.standard_normal((8, 64, 130)).astype(np.float32)
Y = RNG.standard_normal((8, 64, 130)).astype(np.float32)
ROW = RNG.standard_normal(130).astype(np.float32)
COL = RNG.standard_normal((8, 64, 1)).astype(np.float32)

THREADED: list[tuple[str, Callable[[], Any]]] = [
    ("exp", lambda: B.exp(X)),
    ("tanh_transposed", lambda: B.tanh(X.transpose(2, 0, 1))),
    ("add_row", lambda: B.add(X, ROW)),
    ("sub_col", lambda: B.subtract(COL, X)),
    ("mul_scalar", lambda: B.multiply(X, 3.0)),
    ("div_strided", lambda: B.divide(X[:, ::2], Y[:, ::2])),
    ("greater", lambda: B.greater(X, Y)),
    ("where", lambda: B.where(X > 0, -np.inf, Y)),
    ("mask", lambda: B.mask(X, Y > 0)),
    ("cast", lambda: B.cast(X, np.float64)),
    ("copy", lambda: B.copy(X.transpose(1, 0, 2))),
    ("sum_last", lambda: B.reduce(B.add, X, (2,), True)),
    ("sum_middle", lambda: B.reduce(B.add, X, (1,), False)),
    ("max_lead", lambda: B.reduce(B.maximum, X, (0, 1), False)),
    ("gelu", lambda: B.gelu(X, "none", True)[1]),
]


@pytest.mark.parametrize("name,op", THREADED, ids=[n for n, _ in THREADED])
def test_threaded_ops_are_bit_identical(name: str, op: Callable[[], Any], monkeypatch: Any) -> None:
    monkeypatch.setattr(B, "PARALLEL_MIN", 1)
    lg.set_num_threads(1)
    one = np.asarray(op())
    lg.set_num_threads(2)
    try:
        two = np.asarray(op())
    finally:
        lg.set_num_threads(1)
    assert one.dtype == two.dtype and one.shape == two.shape
    assert one.tobytes() == two.tobytes()


def test_workers_carry_the_callers_error_state_and_raise_its_errors() -> None:
    seen: list[Any] = []

    def divide(out: np.ndarray) -> None:
        seen.append((threading.get_ident(), np.geterr()["divide"]))
        np.divide(1.0, np.zeros(3), out=out)
    outs = [np.empty(3) for _ in range(3)]
    with np.errstate(divide="raise"), pytest.raises(FloatingPointError):
        B.concurrently([(divide, (o,), {}) for o in outs])
    assert len({t for t, _ in seen}) == 3 and all(e == "raise" for _, e in seen)
    seen.clear()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with np.errstate(divide="ignore"):
            B.concurrently([(divide, (o,), {}) for o in outs])  # no warning from any thread
    assert all(e == "ignore" for _, e in seen) and all(np.isinf(o).all() for o in outs)


def test_workers_taken_by_another_thread_run_in_the_caller() -> None:
    inner: list[int] = []

    def outer_job() -> None:  # a job that itself asks for workers while the caller holds them
        B.concurrently([(inner.append, (threading.get_ident(),), {}), (inner.append, (-1,), {})])
    B.concurrently([(outer_job, (), {}), (lambda: None, (), {})])
    assert inner == [threading.get_ident(), -1]


def test_set_num_threads_checks_like_torch() -> None:
    with pytest.raises(RuntimeError):
        torch.set_num_threads(0)
    with pytest.raises(RuntimeError):
        lg.set_num_threads(0)
    lg.set_num_threads(3)
    try:
        assert lg.get_num_threads() == 3
    finally:
        lg.set_num_threads(1)


@pytest.mark.parametrize("approximate", ["none", "tanh"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gelu_matches_torch_to_second_order(approximate: str, dtype: Any) -> None:
    x0 = (RNG.standard_normal((4, 33)) * 3).astype(dtype)
    res = []
    for T in (torch, lg):
        x = T.tensor(x0, requires_grad=True)
        y = T.nn.functional.gelu(x, approximate=approximate)
        (g,) = T.autograd.grad((y * y).sum(), x, create_graph=True)
        (gg,) = T.autograd.grad(g.sum(), x)
        res.append([y.detach().numpy(), g.detach().numpy(), gg.numpy()])
    tol = 2e-6 if dtype == np.float32 else 1e-12
    for k, (ours, theirs) in enumerate(zip(res[1], res[0])):
        # float32 second derivatives differ in rounding: 1 - tanh^2 cancels where tanh is near 1
        rtol = 1e-4 if k == 2 and dtype == np.float32 else tol * 10
        np.testing.assert_allclose(ours, theirs, rtol=rtol, atol=tol)


def test_gelu_without_grad_and_on_ints() -> None:
    with lg.no_grad():
        y = lg.nn.functional.gelu(lg.tensor([1.0, -1.0]))
    np.testing.assert_allclose(y.numpy(), torch.nn.functional.gelu(torch.tensor([1.0, -1.0])).numpy(), rtol=1e-6)
    with pytest.raises(NotImplementedError):
        torch.nn.functional.gelu(torch.tensor([1, 2]))
    with pytest.raises(NotImplementedError):
        lg.nn.functional.gelu(lg.tensor([1, 2]))


def _split_graph(T: Any, x0: np.ndarray) -> list[np.ndarray]:
    x = T.tensor(x0, requires_grad=True)
    h = x * 2  # a non-leaf: its pieces' gradients meet in the engine
    a, b, c, _unused = h.split([2, 3, 1, 2], dim=1)
    p, q = h.chunk(2, dim=0)
    r = h.unbind(0)[1]
    loss = (a * a).sum() + (b * c).sum() + (p * 3).sum() + (q[:, 1:] ** 2).sum() + r.sum() + h[..., 0].sum() + h.sum()
    loss.backward()
    return [x.grad.numpy()]


def test_slices_of_one_tensor_get_torch_gradients() -> None:
    x0 = RNG.standard_normal((4, 8, 3))
    np.testing.assert_allclose(_split_graph(lg, x0)[0], _split_graph(torch, x0)[0], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("sizes", [[4, 4, 4], [4, 8], [12]])
@pytest.mark.parametrize("dim", [0, 2, -1])
def test_pieces_that_tile_a_tensor_give_its_gradient_without_zeros(sizes: list[int], dim: int,
                                                                   monkeypatch: Any) -> None:
    # a split's pieces cover the tensor once: their gradients are copied into one array, no zero fill
    x0 = RNG.standard_normal((12, 3, 12))
    zeros: list[Any] = []
    real = B.zeros
    monkeypatch.setattr(B, "zeros", lambda *a: zeros.append(a) or real(*a))
    res = []
    for T in (torch, lg):
        x = T.tensor(x0, requires_grad=True)
        h = x * 2
        parts = h.split(sizes, dim=dim)
        sum(((p * (i + 1)) ** 2).sum() for i, p in enumerate(parts)).backward()
        res.append(x.grad.numpy())
    np.testing.assert_allclose(res[1], res[0], rtol=1e-12, atol=1e-12)
    assert not zeros or len(sizes) == 1


def test_overlapping_and_partial_pieces_add_into_zeros() -> None:
    res, x0 = [], RNG.standard_normal((5, 6))
    for T in (torch, lg):
        x = T.tensor(x0, requires_grad=True)
        h = x * 2
        (h[:, :4].sum() * 2 + (h[:, 2:] ** 2).sum() + h[:, 1:3].sum() + h[1:3].sum()).backward()
        res.append(x.grad.numpy())
    np.testing.assert_allclose(res[1], res[0], rtol=1e-12, atol=1e-12)


def test_slice_gradient_of_a_leaf_and_a_scalar_piece() -> None:
    res = []
    for T in (torch, lg):
        x = T.tensor([1.0, 2.0, 3.0], requires_grad=True)
        (x[0] * x[2] + x[1:].sum() * x[0]).backward()
        res.append(x.grad.numpy())
    np.testing.assert_allclose(res[1], res[0])


def test_sorted_row_sums_match_add_at() -> None:
    idx = RNG.integers(-7, 7, (40, 5))
    v = RNG.standard_normal((40, 5, 3))
    ours, ref = np.zeros((7, 3)), np.zeros((7, 3))
    B.add_at(ours, (idx,), v)
    np.add.at(ref, (idx,), v)
    np.testing.assert_allclose(ours, ref, rtol=1e-12, atol=1e-12)


# ---- the engine: edges, order, leaf-gradient handover ----------------------------------------

def test_inplace_after_use_does_not_reroute_earlier_gradients() -> None:
    """An op records where its inputs' gradients go when it runs (PyTorch's edges): a later in-place
    op that gives the input a new grad_fn must not send the earlier use through it."""
    res = []
    for T in (torch, lg):
        a = T.tensor([1.0, -2.0], requires_grad=True)
        x = a * 2
        y = x + 0  # a use of x that saves nothing, so no version check stops it
        x.mul_(3)
        (y.sum() + (x * x).sum()).backward()
        res.append(a.grad.numpy())
    np.testing.assert_allclose(res[1], res[0])


def test_next_functions_name_nodes_and_leaves_like_torch() -> None:
    names = []
    for T in (torch, lg):
        w = T.tensor([1.0], requires_grad=True)
        x = T.tensor([2.0])
        y = (w * x).exp() + w
        nf = y.grad_fn.next_functions
        leaf = nf[1][0]
        assert leaf.variable is w
        assert w.grad_fn is None and (w * x).grad_fn.next_functions[1] == (None, 0)
        names.append((nf[0][0].name(), leaf.name(), [i for _, i in nf]))
    assert names[0] == names[1]


def test_grad_fn_names_of_sums_and_means_are_torch_s() -> None:
    names = []
    for T in (torch, lg):
        x = T.ones(2, 3, requires_grad=True)
        names.append([y.grad_fn.name() for y in (x.sum(), x.sum(0), x.sum((0, 1)), x.sum(1, keepdim=True),
                                                 x.mean(), x.mean(0), x.mean((0, 1)), x.mean(-1, keepdim=True))])
    assert names[0] == names[1]


def test_backward_of_several_outputs_where_one_feeds_another() -> None:
    res = []
    for T in (torch, lg):
        a = T.tensor([0.5, 1.5, -1.0], requires_grad=True)
        y = a.sin() * a  # y is an output and also feeds z
        z = (y * y).sum() + y[1:].sum()
        T.autograd.backward([z, y.sum()], [T.tensor(2.0), T.tensor(3.0)])
        res.append(a.grad.numpy())
    np.testing.assert_allclose(res[1], res[0], rtol=1e-6)


def test_nodes_that_receive_no_gradient_are_skipped() -> None:
    """A node whose only consumer returns None for it never runs, and the rest still do."""
    res = []
    for T in (torch, lg):
        class FirstOnly(T.autograd.Function):
            @staticmethod
            def forward(ctx: Any, x: Any, y: Any) -> Any:
                return x * 2 + y

            @staticmethod
            def backward(ctx: Any, g: Any) -> Any:
                return g * 2, None

        a = T.tensor([1.0, 2.0], requires_grad=True)
        b = T.tensor([0.5, -1.0], requires_grad=True)
        (FirstOnly.apply(a.sin(), (b * 3).exp()).sum() + b.sum()).backward()
        res.append([a.grad.numpy(), b.grad.numpy()])
    for ours, theirs in zip(res[1], res[0]):
        np.testing.assert_allclose(ours, theirs, rtol=1e-6)


def test_fresh_leaf_gradient_is_handed_over_without_a_copy(monkeypatch: Any) -> None:
    """A gradient array only the engine holds becomes ``.grad`` as it is (the refcount check in
    ``engine._accumulate``); one that two leaves share is copied for each of them."""
    from lightgrad import engine as E
    copies = []
    orig = E.empty_like_home
    monkeypatch.setattr(E, "empty_like_home", lambda *a: copies.append(a[1]) or orig(*a))
    x = lg.tensor(RNG.standard_normal((16, 8)).astype(np.float32))
    w = lg.tensor(RNG.standard_normal((8, 4)).astype(np.float32), requires_grad=True)
    (x @ w).sum().backward()
    assert copies == []
    np.testing.assert_allclose(w.grad.numpy(), x.numpy().sum(0)[:, None].repeat(4, 1), rtol=1e-5)
    a = lg.zeros(5, requires_grad=True)
    b = lg.zeros(5, requires_grad=True)
    (a + b).sum().backward()
    assert len(copies) == 2 and not np.shares_memory(a.grad.numpy(), b.grad.numpy())
    (a + b).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), 2.0)
    np.testing.assert_allclose(b.grad.numpy(), 2.0)


def test_gradient_of_a_sum_through_mul_is_the_other_factor_handed_over() -> None:
    """d/dw sum(x * w) is x itself: passed on as the gradient (no product, no fresh array), never
    written into."""
    x0 = RNG.standard_normal((300, 200)).astype(np.float32)
    res = []
    for T in (torch, lg):
        x = T.tensor(x0)
        w = T.tensor(np.full_like(x0, 0.5), requires_grad=True)
        h = T.tensor(np.full_like(x0, 2.0), requires_grad=True)
        for _ in range(2):
            (x * w).sum().backward()
            (h * w).sum().backward()  # w's gradient goes to h's node too
        res.append([w.grad.numpy().copy(), h.grad.numpy().copy(), x.numpy().copy()])
    for ours, theirs in zip(res[1], res[0]):
        np.testing.assert_allclose(ours, theirs, rtol=1e-6)
    np.testing.assert_array_equal(res[1][2], x0)


@pytest.mark.parametrize("shape", [(1000, 1000), (64, 40, 30), (2, 70000)])
def test_full_sum_of_a_large_array_matches_torch(shape: tuple[int, ...]) -> None:
    x0 = RNG.standard_normal(shape).astype(np.float32)
    exact = x0.astype(np.float64).sum()
    ours, theirs = lg.tensor(x0).sum().item(), torch.tensor(x0).sum().item()
    assert abs(ours - exact) <= 4 * abs(theirs - exact) + 1e-6 * np.abs(x0).sum()
    kept = lg.tensor(x0).sum(dim=tuple(range(len(shape))), keepdim=True)
    assert tuple(kept.shape) == (1,) * len(shape)
    assert kept.item() == pytest.approx(ours)


# ---- the fused LSTM layer ------------------------------------------------------------------

@pytest.mark.parametrize("t_len", [1, 8, 19])
def test_lstm_over_several_backward_blocks_matches_torch(t_len: int) -> None:
    """Sequences shorter, as long as and longer than the backward's block of steps (8), both
    directions, with and without biases: outputs, input, state and parameter gradients as
    PyTorch's (float64)."""
    x0 = RNG.standard_normal((t_len, 3, 5))
    h0 = RNG.standard_normal((4, 3, 6))
    c0 = RNG.standard_normal((4, 3, 6))
    bias = t_len != 8
    tm = torch.nn.LSTM(5, 6, num_layers=2, bidirectional=True, bias=bias).double()
    lm = lg.nn.LSTM(5, 6, num_layers=2, bidirectional=True, bias=bias).to(lg.float64)
    lm.load_state_dict({k: lg.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    res = []
    for T, m in ((torch, tm), (lg, lm)):
        x, h, c = (T.tensor(a, requires_grad=True) for a in (x0, h0, c0))
        out, (hn, cn) = m(x, (h, c))
        (out * out).sum().backward(retain_graph=True)
        (hn.sum() + (cn * cn).sum()).backward()
        res.append([out.detach().numpy(), x.grad.numpy(), h.grad.numpy(), c.grad.numpy()]
                   + [p.grad.numpy() for _, p in m.named_parameters()])
    for ours, theirs in zip(res[1], res[0]):
        np.testing.assert_allclose(ours, theirs, rtol=1e-9, atol=1e-11)


def test_lstm_of_an_empty_sequence_raises_like_torch() -> None:
    for T in (torch, lg):
        with pytest.raises(RuntimeError, match="sequence length to be larger than 0"):
            T.nn.LSTM(3, 4)(T.zeros(0, 2, 3))


@pytest.mark.parametrize("n", [5, B._AXPY_CHUNK, B._AXPY_CHUNK + 1, 3 * B._AXPY_CHUNK + 17])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_add_alpha_in_place_by_chunks_gives_the_full_size_values(n: int, dtype: Any) -> None:
    rng = np.random.default_rng(n)
    p0, g0 = rng.standard_normal(n).astype(dtype), rng.standard_normal(n).astype(dtype)
    p, g = lg.tensor(p0.reshape(-1, 1) if n % 2 else p0), lg.tensor(g0.reshape(p0.shape if not n % 2 else (-1, 1)))
    p.add_(g, alpha=-0.37)
    # the product rounded to the dtype first, then the sum: what the one-pass-per-op NumPy gives
    expected = p0 + (g0 * dtype(-0.37)).astype(dtype)
    np.testing.assert_array_equal(p.numpy().reshape(-1), expected)


def test_add_alpha_in_place_on_overlapping_and_strided_views() -> None:
    n = B._AXPY_CHUNK * 2 + 3
    base = np.arange(n + 1, dtype=np.float32)
    a = lg.from_numpy(base.copy())
    a[1:].add_(a[:-1], alpha=2.0)  # overlapping: the product of the old values, as NumPy computes it
    ref = base.copy()
    ref[1:] += 2.0 * base[:-1]
    np.testing.assert_array_equal(a.numpy(), ref)
    m = lg.from_numpy(np.ones((n, 2), np.float32))
    m[:, 0].add_(lg.ones(n), alpha=3.0)  # a strided view: in place through the view
    np.testing.assert_array_equal(m.numpy()[:, 0], np.full(n, 4, np.float32))
    np.testing.assert_array_equal(m.numpy()[:, 1], np.ones(n, np.float32))


@pytest.mark.parametrize("dim,keepdim", [(None, False), (0, False), ((0, 1), True), (-1, True)])
def test_mean_to_second_order_matches_torch(dim: Any, keepdim: bool) -> None:
    x0 = np.random.default_rng(1).standard_normal((3, 4)).astype(np.float64)
    grads = []
    for T in (torch, lg):
        x = T.tensor(x0, requires_grad=True)
        m = x.mean() if dim is None else x.mean(dim, keepdim=keepdim)
        f = (m * m * m).sum() + (x * x).mean()
        (g,) = T.autograd.grad(f, x, create_graph=True)
        (g * g).sum().backward()
        grads.append((g.detach().numpy(), x.grad.numpy()))
    np.testing.assert_allclose(grads[1][0], grads[0][0], rtol=1e-12)
    np.testing.assert_allclose(grads[1][1], grads[0][1], rtol=1e-12)
