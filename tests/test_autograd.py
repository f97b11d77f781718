"""Autograd behaviour: accumulation, graph lifetime, grad modes, higher order, custom ops, in-place."""

from __future__ import annotations

import math
import threading
from typing import Any

import numpy as np
import pytest
from helpers import torch

import lightgrad as lg


def test_gradients_accumulate_across_backward_calls() -> None:
    x = lg.tensor([1.0, 2.0], requires_grad=True)
    (x * x).sum().backward()
    (x * 3).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [2 + 3, 4 + 3])


def test_shared_subexpression_sums_both_paths() -> None:
    x = lg.tensor(2.0, requires_grad=True)
    y = x * x
    z = y + y * y  # dz/dx = 2x + 4x^3
    z.backward()
    assert x.grad.item() == pytest.approx(2 * 2 + 4 * 8)


def test_leaf_grad_is_not_aliased_between_leaves() -> None:
    a = lg.tensor([1.0], requires_grad=True)
    b = lg.tensor([1.0], requires_grad=True)
    (a + b).sum().backward()
    a.grad.add_(5)
    assert b.grad.item() == 1.0


def test_retain_graph_allows_second_backward() -> None:
    x = lg.tensor([1.0, 2.0], requires_grad=True)
    y = (x.exp() * x).sum()
    y.backward(retain_graph=True)
    first = x.grad.numpy().copy()
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * first)


def test_graph_is_freed_after_backward() -> None:
    x = lg.tensor([1.0, 2.0], requires_grad=True)
    y = (x * x).sum()
    y.backward()
    with pytest.raises(RuntimeError, match="second time"):
        y.backward()


def test_no_grad_enable_grad_and_set_grad_enabled() -> None:
    x = lg.ones(2, requires_grad=True)
    with lg.no_grad():
        y = x * 2
        assert not lg.is_grad_enabled()
        with lg.enable_grad():
            z = x * 2
    assert not y.requires_grad and y.grad_fn is None
    assert z.requires_grad
    with lg.set_grad_enabled(False):
        assert not (x * 2).requires_grad
    assert lg.is_grad_enabled()
    lg.set_grad_enabled(False)
    assert not lg.is_grad_enabled()
    lg.set_grad_enabled(True)
    assert lg.is_grad_enabled()


def test_no_grad_as_decorator_and_restored_on_exception() -> None:
    @lg.no_grad()
    def f(t: lg.Tensor) -> lg.Tensor:
        return t * 2

    x = lg.ones(2, requires_grad=True)
    assert not f(x).requires_grad
    with pytest.raises(ValueError), lg.no_grad():
        raise ValueError
    assert lg.is_grad_enabled()


def test_grad_mode_is_per_thread() -> None:
    seen = []

    def worker() -> None:
        seen.append(lg.is_grad_enabled())

    with lg.no_grad():
        t = threading.Thread(target=worker)
        t.start()
        t.join()
    assert seen == [True]


def test_detach_and_data_share_storage() -> None:
    x = lg.tensor([1.0, 2.0], requires_grad=True)
    d = x.detach()
    assert not d.requires_grad and d.grad_fn is None
    d[0] = 5.0
    assert x[0].item() == 5.0
    x.data.mul_(2)  # .data changes are not tracked
    assert x[0].item() == 10.0
    assert x.is_leaf


def test_requires_grad_propagation_and_is_leaf() -> None:
    a = lg.ones(2, requires_grad=True)
    b = lg.ones(2)
    c = a * b
    assert c.requires_grad and not c.is_leaf and b.is_leaf and a.is_leaf
    assert c.grad_fn is not None and "Mul" in c.grad_fn.name()


def test_retain_grad_on_non_leaf() -> None:
    x = lg.tensor([1.0, 2.0], requires_grad=True)
    y = x * 3
    y.retain_grad()
    (y * y).sum().backward()
    np.testing.assert_allclose(y.grad.numpy(), 2 * y.detach().numpy())


def test_backward_with_gradient_argument() -> None:
    x = lg.tensor([1.0, 2.0], requires_grad=True)
    y = x * x
    y.backward(lg.tensor([1.0, 0.5]))
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 2.0])


def test_autograd_grad_does_not_touch_dot_grad() -> None:
    x = lg.tensor([1.0, 2.0], requires_grad=True)
    (g,) = lg.autograd.grad((x ** 3).sum(), x)
    assert x.grad is None
    np.testing.assert_allclose(g.numpy(), [3.0, 12.0])


def test_autograd_grad_of_non_leaf_and_allow_unused() -> None:
    x = lg.tensor(2.0, requires_grad=True)
    h = x * x
    y = h * 3
    gh, gx = lg.autograd.grad(y, [h, x])
    assert gh.item() == 3.0 and gx.item() == 12.0
    unused = lg.tensor(1.0, requires_grad=True)
    with pytest.raises(RuntimeError, match="not have been used"):
        lg.autograd.grad(x * 2, [unused])
    assert lg.autograd.grad(x * 2, [unused], allow_unused=True) == (None,)


@pytest.mark.parametrize("fn,d1,d2", [
    (lambda x: x ** 3, lambda x: 3 * x ** 2, lambda x: 6 * x),
    (lambda x: x.exp() * x.sin(), lambda x: np.exp(x) * (np.sin(x) + np.cos(x)), lambda x: 2 * np.exp(x) * np.cos(x)),
    (lambda x: x.tanh(), lambda x: 1 - np.tanh(x) ** 2, lambda x: -2 * np.tanh(x) * (1 - np.tanh(x) ** 2)),
    (lambda x: x.sigmoid(), lambda x: (s := 1 / (1 + np.exp(-x))) * (1 - s),
     lambda x: (s := 1 / (1 + np.exp(-x))) * (1 - s) * (1 - 2 * s)),
    (lambda x: (x * x).log(), lambda x: 2 / x, lambda x: -2 / x ** 2),
    (lambda x: x.sqrt() / x, lambda x: -0.5 * x ** -1.5, lambda x: 0.75 * x ** -2.5),
])
def test_second_order_gradients(fn, d1, d2) -> None:
    xs = np.array([0.5, 1.3, 2.0])
    x = lg.tensor(xs, dtype=lg.float64, requires_grad=True)
    (g,) = lg.autograd.grad(fn(x).sum(), x, create_graph=True)
    np.testing.assert_allclose(g.detach().numpy(), d1(xs), rtol=1e-10)
    assert g.requires_grad
    (gg,) = lg.autograd.grad(g.sum(), x)
    np.testing.assert_allclose(gg.numpy(), d2(xs), rtol=1e-10)


def test_second_order_through_matmul_softmax_and_indexing() -> None:
    rng = np.random.default_rng(0)
    xs, ws = rng.normal(size=(3, 4)), rng.normal(size=(4, 2))

    def loss(T, x, w):
        return ((x @ w).softmax(-1)[:, 0] ** 2).sum() + x.amax(1).sum()

    def hvp(T, x, w):
        (gx,) = T.autograd.grad(loss(T, x, w), x, create_graph=True)
        (gw,) = T.autograd.grad((gx * gx).sum(), w)
        return gw

    x = lg.tensor(xs, requires_grad=True, dtype=lg.float64)
    w = lg.tensor(ws, requires_grad=True, dtype=lg.float64)
    got = hvp(lg, x, w).numpy()
    eps = 1e-6

    def gsq(wv):
        xx = lg.tensor(xs, requires_grad=True, dtype=lg.float64)
        (gx,) = lg.autograd.grad(loss(lg, xx, lg.tensor(wv, dtype=lg.float64)), xx)
        return float((gx * gx).sum().item())
    num = np.zeros_like(ws)
    for i in np.ndindex(ws.shape):
        wp, wm = ws.copy(), ws.copy()
        wp[i] += eps
        wm[i] -= eps
        num[i] = (gsq(wp) - gsq(wm)) / (2 * eps)
    np.testing.assert_allclose(got, num, rtol=1e-5, atol=1e-7)
    if torch is not None:
        tx = torch.tensor(xs, requires_grad=True)
        tw = torch.tensor(ws, requires_grad=True)
        np.testing.assert_allclose(got, hvp(torch, tx, tw).numpy(), rtol=1e-9)


def test_second_order_through_a_dtype_promotion() -> None:
    # float32 * float64 casts the float32 operand: its backward casts a Tensor gradient back
    a = lg.tensor([1.0, 2.0], requires_grad=True)
    b = lg.tensor([3.0, 4.0], dtype=lg.float64, requires_grad=True)
    ga, gb = lg.autograd.grad((a * b * a).sum(), [a, b], create_graph=True)
    assert ga.dtype == lg.float32 and gb.dtype == lg.float64
    haa, hab = lg.autograd.grad(ga.sum(), [a, b])
    np.testing.assert_allclose(haa.numpy(), 2 * b.detach().numpy())  # d(2ab)/da
    np.testing.assert_allclose(hab.numpy(), 2 * a.detach().numpy())  # d(2ab)/db


def test_backward_formula_that_cannot_record_raises_instead_of_a_constant() -> None:
    """Under create_graph a formula computed on plain arrays would make the second derivative 0."""
    class Frozen(lg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * lg.tensor(np.cos(np.asarray(x)))  # NumPy on a Tensor that requires grad

    x = lg.tensor([0.5, 1.0], dtype=lg.float64, requires_grad=True)
    (g,) = lg.autograd.grad(Frozen.apply(x).sum(), x)  # (first order: fine)
    np.testing.assert_allclose(g.numpy(), np.cos([0.5, 1.0]))
    with pytest.raises(RuntimeError, match="cannot be differentiated again"):
        lg.autograd.grad(Frozen.apply(x).sum(), x, create_graph=True)


def test_digamma_second_and_third_derivatives_are_polygammas() -> None:
    xs = np.array([-1.5, 0.3, 1.0, 2.5, 7.0])
    x = lg.tensor(xs, dtype=lg.float64, requires_grad=True)
    (g,) = lg.autograd.grad(x.digamma().sum(), x, create_graph=True)
    (h,) = lg.autograd.grad(g.sum(), x, create_graph=True)
    (k,) = lg.autograd.grad(h.sum(), x)
    # polygamma(n, 1) = (-1)^(n+1) n! zeta(n + 1): pi^2/6, -2 zeta(3), pi^4/15
    np.testing.assert_allclose([g[2].item(), h[2].item(), k[2].item()],
                               [math.pi ** 2 / 6, -2 * 1.2020569031595942, math.pi ** 4 / 15], rtol=1e-12)
    if torch is not None:
        tx = torch.tensor(xs, requires_grad=True)
        (tg,) = torch.autograd.grad(tx.digamma().sum(), tx, create_graph=True)
        (th,) = torch.autograd.grad(tg.sum(), tx, create_graph=True)
        (tk,) = torch.autograd.grad(th.sum(), tx)
        for mine, theirs in ((g, tg), (h, th), (k, tk)):  # (PyTorch's trigamma is good to ~5e-10)
            np.testing.assert_allclose(mine.detach().numpy(), theirs.detach().numpy(), rtol=1e-8)


def test_backward_create_graph_accumulates_differentiable_grad() -> None:
    x = lg.tensor(3.0, requires_grad=True)
    (x ** 3).backward(create_graph=True)
    g = x.grad
    assert g.requires_grad and g.item() == 27.0
    x.grad = None
    g.backward()
    assert x.grad.item() == 18.0


def test_deep_chain_does_not_recurse() -> None:
    x = lg.tensor(1.0, requires_grad=True)
    y = x
    for _ in range(100_000):
        y = y * 1.0
    y.backward()
    assert x.grad.item() == 1.0


class Square(lg.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 2 * x * g


class MulConst(lg.autograd.Function):
    @staticmethod
    def forward(ctx, x, k):
        ctx.k = k
        return x * k

    @staticmethod
    def backward(ctx, g):
        return g * ctx.k, None


def test_custom_function() -> None:
    x = lg.tensor([1.0, -2.0], requires_grad=True)
    y = Square.apply(x)
    assert "Square" in y.grad_fn.name()
    MulConst.apply(y, 3.0).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [6.0, -12.0])


def test_custom_function_second_order() -> None:
    x = lg.tensor(1.5, requires_grad=True)
    (g,) = lg.autograd.grad(Square.apply(x), x, create_graph=True)
    (gg,) = lg.autograd.grad(g, x)
    assert gg.item() == pytest.approx(2.0)


def test_inplace_on_saved_tensor_is_detected() -> None:
    a = lg.tensor([1.0, 2.0], requires_grad=True)
    b = a * 1
    c = b * b
    b.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        c.sum().backward()


def test_inplace_on_saved_output_is_detected() -> None:
    a = lg.tensor([1.0, 2.0], requires_grad=True)
    e = a.exp()
    e.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        e.sum().backward()


def test_inplace_ops_join_the_graph() -> None:
    a = lg.tensor([1.0, 2.0], requires_grad=True)
    b = a * 2
    b.add_(a)  # b = 3a
    b.mul_(a)  # b = 3a^2
    b.sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), [6.0, 12.0])
    assert b._version[0] == 2
    c = a * 2
    c.mul_(c)  # saves c, then overwrites it: PyTorch refuses this backward too
    with pytest.raises(RuntimeError, match="inplace"):
        c.sum().backward()


def test_setitem_builds_graph_for_value_and_base() -> None:
    a = lg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    v = lg.tensor(5.0, requires_grad=True)
    b = a * 1
    b[1] = v * 2
    (b * lg.tensor([1.0, 10.0, 100.0])).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), [1.0, 0.0, 100.0])
    assert v.grad.item() == 20.0


def test_inplace_under_no_grad_keeps_leaf() -> None:
    p = lg.ones(3, requires_grad=True)
    with lg.no_grad():
        p.sub_(0.5)
        p *= 2
    assert p.is_leaf and p.requires_grad
    np.testing.assert_allclose(p.detach().numpy(), [1.0, 1.0, 1.0])


def test_gradient_dtype_matches_parameter_after_cast() -> None:
    w = lg.ones(2, requires_grad=True)
    (w.double() * lg.tensor([1.0, 2.0], dtype=lg.float64)).sum().backward()
    assert w.grad.dtype == lg.float32
    np.testing.assert_allclose(w.grad.numpy(), [1.0, 2.0])


def test_backward_accumulates_into_broadcast_leaf() -> None:
    b = lg.zeros(3, requires_grad=True)
    x = lg.ones(4, 3)
    (x + b).sum().backward()
    np.testing.assert_allclose(b.grad.numpy(), [4.0, 4.0, 4.0])


def test_backward_inputs_restricts_accumulation() -> None:
    a = lg.ones(2, requires_grad=True)
    b = lg.ones(2, requires_grad=True)
    (a * b).sum().backward(inputs=[a])
    assert a.grad is not None and b.grad is None


def _view_cases(T: Any) -> list[Any]:
    """In-place ops through views made by basic indexing: values and gradients of the base."""
    out = []
    x = T.ones(2, 3, requires_grad=True)
    b = x * 2
    b[1].mul_(3)  # a method on a view: the base's graph must see it
    (b * b).sum().backward()
    out += [b.detach().numpy().copy(), x.grad.numpy().copy()]
    x = T.ones(2, 3, requires_grad=True)
    b = x * 2
    b[1][0].mul_(5)  # a view of a view, down to one element
    b[0, 1:].add_(b[1, :2])
    (b * b).sum().backward()
    out += [b.detach().numpy().copy(), x.grad.numpy().copy()]
    buf, h = T.zeros(2, 3), T.ones(3, requires_grad=True)
    buf[1].copy_(h * 2)  # a buffer that needs no grad gets a graph through its view
    (buf * buf).sum().backward()
    out += [buf.detach().numpy().copy(), h.grad.numpy().copy()]
    v = T.ones(3)
    e = v[1]
    e.mul_(3)  # one element of a 1-D tensor is a view too
    v.add_(1)
    out += [v.numpy().copy(), e.numpy().copy()]
    a = T.zeros(4, 4)
    a.diagonal().add_(2.0)  # a diagonal (a copy here) writes back, by any in-place method
    a.diagonal(1).fill_(5)
    a.diagonal()[1:].zero_()
    out.append(a.numpy().copy())
    x = T.ones(3, 3, requires_grad=True)
    b = x * 3
    b.diagonal().mul_(4)
    b.diagonal()[1:].add_(x[0, 1:])
    (b * b).sum().backward()
    out += [b.detach().numpy().copy(), x.grad.numpy().copy()]
    x = T.ones(2, 3, requires_grad=True)
    b = x * 2
    t = b.t()  # views by permute and reshape share memory: the base's graph is rebuilt around them
    t.mul_(T.tensor([[1.0], [2.0], [3.0]]))
    t.add_(1)  # a second op on the same view
    b.view(-1)[2:].add_(x.reshape(-1)[:4])
    b.unsqueeze(0)[0, 1].mul_(5)
    (b * b).sum().backward()
    out += [b.detach().numpy().copy(), x.grad.numpy().copy()]
    x = T.ones(2, 3, requires_grad=True)
    b = x * 2
    b[0].fill_(7)  # constant values: no gradient to what they replaced
    b.view(-1)[-1:].zero_()
    (b * b).sum().backward()
    out += [b.detach().numpy().copy(), x.grad.numpy().copy(), np.array(b.requires_grad)]
    return out


@pytest.mark.skipif(torch is None, reason="PyTorch not installed")
def test_inplace_ops_on_views_reach_the_base_as_in_torch() -> None:
    for ours, theirs in zip(_view_cases(lg), _view_cases(torch)):
        np.testing.assert_array_equal(ours, theirs)


def test_inplace_on_a_view_of_a_leaf_that_requires_grad_raises_before_writing() -> None:
    w = lg.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="view of a leaf Variable"):
        w[1:].mul_(2)
    with pytest.raises(RuntimeError, match="view of a leaf Variable"):
        w.reshape(1, 3).mul_(2)
    np.testing.assert_array_equal(w.detach().numpy(), np.ones(3))


def test_inplace_on_a_view_after_its_base_was_saved_raises_at_backward() -> None:
    x = lg.ones(3, requires_grad=True)
    b = x * 1
    y = b * b  # saves b
    b[0].mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()
