"""In-place ops and views: one version counter for a base and its views, writes through views, in-place forms.

In-place ops on views reach the base (values and gradients, as in PyTorch); copies into views of
tensors that need no grad; in-place comparisons and roundings stay in the graph with zero
gradients; in-place view ops (unsqueeze_, t_, ...); version counters, leaves and saved tensors;
dtypes of in-place forms; add_ with alpha by chunks."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from helpers import assert_same_results, needs_torch, results_on_both, torch

import lightgrad as lg
from lightgrad import backend as B

MODIFIED = "modified by an inplace operation"


def _version(t: Any) -> int:
    return t._version_count if isinstance(t, lg.Tensor) else t._version


# ---- views: view never copies; one version counter for a base and its views ----------------------

# (make the base, the view's shape, whether the strides allow a view): view never copies
_VIEWS = [
    (lambda T: T.arange(12.0).reshape(3, 4).t(), (12,), False),
    (lambda T: T.arange(12.0).reshape(3, 4).t(), (2, 6), False),
    (lambda T: T.arange(12.0).reshape(3, 4).t(), (4, 3), True),
    (lambda T: T.arange(12.0).reshape(3, 4).t(), (4, 3, 1), True),
    (lambda T: T.arange(24.0).reshape(2, 3, 4).permute(1, 0, 2), (3, 8), False),
    (lambda T: T.arange(24.0).reshape(2, 3, 4).permute(1, 0, 2), (6, 4), False),
    (lambda T: T.arange(24.0).reshape(2, 3, 4)[:, 1:], (4, 4), False),
    (lambda T: T.arange(24.0).reshape(2, 3, 4)[:, :, :2], (2, 3, 2, 1), True),
    (lambda T: T.arange(24.0).reshape(2, 3, 4)[:, :, ::2], (12,), True),  # (strides 12, 4, 2: one run)
    (lambda T: T.arange(24.0).reshape(2, 3, 4)[:, :2, ::2], (8,), False),
    (lambda T: T.arange(24.0).reshape(2, 3, 4)[:, :2, ::2], (2, 4), True),
    (lambda T: T.arange(24.0).reshape(4, 6)[1:3], (3, 4), True),
    (lambda T: T.arange(24.0).reshape(2, 12), (-1, 3), True),
]


@pytest.mark.parametrize("make,shape,ok", _VIEWS)
def test_view_is_a_view_or_raises(make, shape, ok) -> None:
    a = make(lg)
    if not ok:
        with pytest.raises(RuntimeError, match="view size is not compatible with input tensor's size and stride"):
            a.view(shape)
        assert a.reshape(shape).shape == a.reshape(-1).reshape(shape).shape  # reshape copies instead
    else:
        v = a.view(shape)
        v.fill_(-1.0)  # writes through the view reach the base
        assert (a.numpy() == -1.0).all()
    if torch is not None:  # the same cases view (or raise) in PyTorch
        ta = make(torch)
        if ok:
            assert ta.view(shape).data_ptr() == ta.data_ptr()
        else:
            with pytest.raises(RuntimeError, match="view size is not compatible"):
                ta.view(shape)


def test_view_as_views_and_reshape_as_copies() -> None:
    a = lg.arange(6.0).reshape(2, 3).t()
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        a.view_as(lg.zeros(6))
    assert a.reshape_as(lg.zeros(6)).tolist() == [0.0, 3.0, 1.0, 4.0, 2.0, 5.0]


VIEWS: dict[str, Callable[[Any], Any]] = {
    "index": lambda a: a[0],
    "slice": lambda a: a[:, 1:],
    "narrow": lambda a: a.narrow(1, 0, 2),
    "select": lambda a: a.select(1, 2),
    "view": lambda a: a.view(6),
    "reshape": lambda a: a.reshape(3, 2),
    "flatten": lambda a: a.flatten(),
    "unsqueeze": lambda a: a.unsqueeze(0),
    "t": lambda a: a.t(),
    "permute": lambda a: a.permute(1, 0),
    "transpose": lambda a: a.transpose(0, 1),
    "expand": lambda a: a[:, None].expand(2, 4, 3),
    "diagonal": lambda a: a.diagonal(),
    "view_of_view": lambda a: a.view(6)[2:5],
}


@needs_torch
@pytest.mark.parametrize("name", list(VIEWS))
def test_base_modified_in_place_invalidates_saved_view(name: str) -> None:
    def f(T: Any) -> Any:
        p = T.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
        a = p * 1
        x = VIEWS[name](a)
        y = x * x  # saves x
        a.add_(1)
        y.sum().backward()
        return (p.grad,)

    got, want = results_on_both(f)
    assert isinstance(want, RuntimeError) and MODIFIED in str(want)
    assert isinstance(got, RuntimeError) and MODIFIED in str(got), got


@needs_torch
@pytest.mark.parametrize("name", ["index", "view", "t", "diagonal"])
def test_view_of_buffer_modified_in_place_invalidates_saved_base(name: str) -> None:
    def f(T: Any) -> Any:
        buf = T.tensor(np.arange(6.0).reshape(2, 3))
        w = T.ones(2, 3, requires_grad=True)
        y = buf * w  # saves buf
        VIEWS[name](buf).mul_(2)
        y.sum().backward()
        return (w.grad,)

    got, want = results_on_both(f)
    assert isinstance(want, RuntimeError) and MODIFIED in str(want)
    assert isinstance(got, RuntimeError) and MODIFIED in str(got), got


@needs_torch
@pytest.mark.parametrize("name", list(VIEWS))
def test_versions_of_base_and_views_move_together(name: str) -> None:
    def f(T: Any) -> Any:
        a = T.zeros(2, 3)
        x = VIEWS[name](a)
        out = [_version(a), _version(x)]
        a.add_(1)
        out += [_version(a), _version(x)]
        if name != "expand":  # (an expanded view cannot be written)
            x.mul_(2)
        out += [_version(a), _version(x)]
        a.zero_()
        out += [_version(a), _version(x)]
        return out

    got, want = results_on_both(f)
    assert got == want


@needs_torch
def test_views_that_copy_do_not_share_the_counter() -> None:
    def f(T: Any) -> Any:
        a = T.zeros(2, 3)
        c = a.t().reshape(6)  # (not contiguous: reshape copies)
        a.add_(1)
        return [_version(a), _version(c)]

    got, want = results_on_both(f)
    assert got == want


@needs_torch
def test_unchanged_base_keeps_gradients_of_its_views() -> None:
    def f(T: Any) -> Any:
        p = T.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
        a = p * 2
        y = (a[0] * a.t()[1:, :1].reshape(2)[0] + a.view(6)).sum()
        y.backward()
        return (p.grad, y)

    assert_same_results(*results_on_both(f))


# ---- in-place ops through views reach the base ---------------------------------------------------

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
    a.diagonal().add_(2.0)  # a diagonal is a view: any in-place method writes the base
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


UNARY_INPLACE = ["absolute_", "sin_", "cos_", "tan_", "sinh_", "cosh_", "exp2_", "expm1_", "log1p_",
                 "reciprocal_", "negative_", "square_", "erf_", "frac_"]


def _both(fn: Any, *arrays: np.ndarray) -> tuple[Any, Any, list[Any], list[Any]]:
    """Run fn on lightgrad and torch float64 leaves holding the same values."""
    lts = [lg.tensor(a, requires_grad=True) for a in arrays]
    tts = [torch.tensor(a, requires_grad=True) for a in arrays]
    return fn(lg, *lts), fn(torch, *tts), lts, tts


@needs_torch
@pytest.mark.parametrize("name", UNARY_INPLACE)
def test_unary_inplace_on_view_reaches_base_and_grad(name: str) -> None:
    x = np.random.default_rng(0).uniform(0.2, 0.9, (3, 4))
    lb, tb = lg.tensor(x), torch.tensor(x)
    getattr(lb[1:, ::2], name)()  # an in-place op on a strided view writes into its base
    getattr(tb[1:, ::2], name)()
    np.testing.assert_allclose(lb.numpy(), tb.numpy(), rtol=1e-12)

    def fn(T: Any, a: Any) -> Any:
        return getattr(a * 2, name)() * a  # the in-place result takes the tensor's place in the graph

    lo, to, lts, tts = _both(fn, x)
    np.testing.assert_allclose(lo.detach().numpy(), to.detach().numpy(), rtol=1e-12)
    lo.sum().backward()
    to.sum().backward()
    np.testing.assert_allclose(lts[0].grad.numpy(), tts[0].grad.numpy(), rtol=1e-10, atol=1e-12)


# ---- in-place copies into views of tensors that need no grad -------------------------------------

BUFFER_VIEWS: dict[str, Callable[[Any], Any]] = {
    "view": lambda b: b.view(6),
    "reshape": lambda b: b.reshape(3, 2),
    "flatten": lambda b: b.flatten(),
    "unsqueeze": lambda b: b.unsqueeze(1),
    "t": lambda b: b.t(),
    "permute": lambda b: b.permute(1, 0),
    "transpose": lambda b: b.transpose(1, 0),
    "view_then_slice": lambda b: b.view(6)[1:4],
    "t_then_index": lambda b: b.t()[1],
    "slice_then_view": lambda b: b[1:].view(3),
    "view_then_t": lambda b: b.view(3, 2).t(),
    "index": lambda b: b[:, 1],
    "diagonal": lambda b: b.diagonal(),
    "unfold": lambda b: b.unfold(1, 2, 1)[:, 1:],  # (windows that do not overlap: torch's writes are then defined)
    "as_strided": lambda b: b.as_strided((2, 2), (1, 3), 1),
}


@needs_torch
@pytest.mark.parametrize("op", ["copy_", "add_", "mul_"])
@pytest.mark.parametrize("name", list(BUFFER_VIEWS))
def test_value_that_requires_grad_written_into_a_view_of_a_buffer(name: str, op: str) -> None:
    def f(T: Any) -> Any:
        buf = T.tensor(np.linspace(-1.0, 1.0, 6).reshape(2, 3))
        v = BUFFER_VIEWS[name](buf)
        h = T.tensor(np.arange(1.0, 1.0 + v.numel()).reshape(tuple(v.shape)), requires_grad=True)
        getattr(v, op)(h * 2)
        (buf * T.tensor(np.arange(6.0).reshape(2, 3))).sum().backward()
        return (buf, h.grad, buf.requires_grad, _version(buf), _version(v))

    assert_same_results(*results_on_both(f))


@needs_torch
def test_view_of_buffer_written_in_place_under_no_grad() -> None:
    def f(T: Any) -> Any:
        buf = T.zeros(2, 3)
        v = buf.view(6)
        h = T.arange(6.0, requires_grad=True)
        with T.no_grad():
            v.copy_(h.sin())
        return (buf, buf.requires_grad, buf.grad_fn is None, _version(buf))

    assert_same_results(*results_on_both(f))


@needs_torch
def test_diagonal_over_leading_dims_writes_back() -> None:
    def f(T: Any) -> Any:
        p = T.tensor(np.arange(18.0).reshape(3, 3, 2), requires_grad=True)
        a = p * 1
        d = a.diagonal(0, 0, 1)  # (2, 3)
        d.mul_(T.tensor([[2.0], [3.0]]))
        (a * a).sum().backward()
        return (a, p.grad, _version(a))

    assert_same_results(*results_on_both(f))


# ---- strided views: diagonal, unfold and as_strided share their base's memory ----------------------

STRIDED_VIEWS: dict[str, Callable[[Any], Any]] = {
    "diagonal": lambda b: b.diagonal(),
    "diagonal_offset": lambda b: b.diagonal(-1, 1, 0),
    "unfold": lambda b: b.unfold(1, 2, 1),
    "unfold_step": lambda b: b.unfold(0, 1, 2),
    "as_strided": lambda b: b.as_strided((2, 2), (4, 1), 1),
    "as_strided_of_transposed": lambda b: b.t().as_strided((3,), (2,)),
    "unfold_of_transposed": lambda b: b.t().unfold(0, 2, 2),
}


@needs_torch
@pytest.mark.parametrize("name", list(STRIDED_VIEWS))
def test_strided_views_share_memory_and_versions_both_ways(name: str) -> None:
    def f(T: Any) -> Any:
        base = T.tensor(np.arange(12.0).reshape(3, 4))
        v = STRIDED_VIEWS[name](base)
        same_ptr = v.data_ptr() - base.data_ptr()
        before = _version(v)
        base.add_(1)  # a write to the base shows in the view
        seen = v.clone()
        v.mul_(-1) if name != "unfold" else v.fill_(-1)  # and one to the view in the base
        return (seen, base, same_ptr, before, _version(v), _version(base), tuple(v.stride()))

    assert_same_results(*results_on_both(f))


@needs_torch
@pytest.mark.parametrize("name", ["diagonal", "diagonal_offset", "unfold_step", "as_strided",
                                  "as_strided_of_transposed", "unfold_of_transposed"])
def test_in_place_op_on_a_strided_view_is_recorded_by_autograd(name: str) -> None:
    def f(T: Any) -> Any:
        x = T.tensor(np.random.default_rng(0).normal(size=(3, 4)), requires_grad=True)
        y = x * 1
        v = STRIDED_VIEWS[name](y)
        v.mul_(T.arange(1.0, 1.0 + v.numel(), dtype=v.dtype).reshape(tuple(v.shape)))
        (y * y).sum().backward()
        return (y, x.grad)

    assert_same_results(*results_on_both(f))


@needs_torch
def test_diagonal_mul_in_place_gives_torch_gradient() -> None:
    def f(T: Any) -> Any:
        x = T.tensor(np.random.default_rng(1).normal(size=(3, 3)), requires_grad=True)
        y = x.clone()
        y.diagonal().mul_(2)
        y.sum().backward()
        return (y, x.grad, y.diagonal().grad_fn.name())

    assert_same_results(*results_on_both(f))


@needs_torch
def test_value_that_requires_grad_written_into_strided_views_of_a_buffer() -> None:
    def f(T: Any) -> Any:
        buf = T.zeros(3, 3)
        h = T.tensor([1.0, 2.0, 3.0], requires_grad=True)
        buf.diagonal().copy_(h * 2)
        buf.unfold(1, 1, 2)[:, 0, 0].add_(h)  # column 0, through windows of one
        (buf * buf).sum().backward()
        return (buf, h.grad, buf.requires_grad)

    assert_same_results(*results_on_both(f))


@needs_torch
@pytest.mark.parametrize("op", ["fill_(1.5)", "zero_()", "fill_(T.tensor(2.0))", "add_(1)", "mul_(2)",
                                "copy_(T.ones(3))", "exp_()"])
def test_in_place_writes_to_an_expanded_tensor_as_torch(op: str) -> None:
    """fill_ and zero_ with a number write the one element an expanded tensor's elements share;
    other in-place ops raise RuntimeError: more than one element refers to a single memory location."""
    def f(T: Any) -> Any:
        base = T.full((1,), 3.0)
        e = base.expand(3)
        eval(f"e.{op}")  # noqa: S307 - the op strings above
        return (base, e, _version(base))

    assert_same_results(*results_on_both(f))


@needs_torch
@pytest.mark.parametrize("make", [lambda T: T.zeros(1).expand(3), lambda T: T.zeros(1).expand(2, 2).diagonal()],
                         ids=["expand", "diagonal_of_expanded"])
def test_overlapping_write_raises_torch_error(make: Callable[[Any], Any]) -> None:
    for T in (lg, torch):
        with pytest.raises(RuntimeError, match="more than one element of the written-to tensor refers to a single"):
            make(T).add_(1)


@needs_torch
def test_unfold_overlapping_windows_gradients_add_and_second_derivative() -> None:
    def f(T: Any) -> Any:
        x = T.tensor(np.random.default_rng(2).normal(size=(2, 5)), requires_grad=True)
        g = T.autograd.grad((x.unfold(1, 3, 1) ** 3).sum(), x, create_graph=True)[0]
        h = T.autograd.grad((g * g).sum(), x)[0]
        return (g, h)

    assert_same_results(*results_on_both(f))


@needs_torch
def test_as_strided_of_a_slice_reads_the_storage_and_its_gradient_stays_in_the_slice() -> None:
    def f(T: Any) -> Any:
        p = T.tensor(np.arange(8.0), requires_grad=True)
        s = p * 1
        x = s[::2]  # storage offset 0, stride 2
        v = x.as_strided((2, 3), (3, 1), 1)  # reads elements of the storage between x's
        (v * T.arange(6.0, dtype=v.dtype).reshape(2, 3)).sum().backward()
        return (v, p.grad, v.grad_fn.name())

    assert_same_results(*results_on_both(f))


@needs_torch
def test_as_strided_of_an_expanded_tensor_divides_its_gradient_as_torch() -> None:
    def f(T: Any) -> Any:
        p = T.tensor([2.0, 3.0], requires_grad=True)
        e = (p * 1).unsqueeze(0).expand(3, 2)
        (e.as_strided((2,), (1,)) * T.tensor([5.0, 7.0], dtype=p.dtype)).sum().backward()
        return (p.grad,)

    assert_same_results(*results_on_both(f))


def test_unfold_of_0d_and_as_strided_shapes() -> None:
    assert lg.tensor(1.5).unfold(0, 0, 1).shape == (0,)
    assert lg.tensor(1.5).unfold(0, 1, 1).shape == (1,)
    assert lg.arange(3.0).unfold(0, 0, 1).shape == (4, 0)
    assert lg.arange(4.0).as_strided((2,), (2,)).tolist() == [0.0, 2.0]
    assert lg.arange(4.0).as_strided((0,), (2,), 10).shape == (0,)

def test_in_place_arithmetic_on_overlapping_windows_raises_and_changes_nothing() -> None:
    """PyTorch updates overlapping unfold windows element by element (x.unfold(0, 2, 1).add_(1) on
    zeros(3) gives [1, 2, 1]); computed out of place and copied in it would silently be [1, 1, 1]:
    refused, with PyTorch's overlap error, before anything is written."""
    x = lg.zeros(3)
    w = x.unfold(0, 2, 1)
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        w.add_(1)
    assert x.tolist() == [0.0, 0.0, 0.0]
    w.fill_(2.0)  # one value for every element: the same answer either way, allowed as in PyTorch
    assert x.tolist() == [2.0, 2.0, 2.0]
    a = lg.zeros(6)
    a.as_strided((2, 2), (1, 2)).add_(1)  # strided but apart: computed as PyTorch does
    assert a.tolist() == [1.0, 1.0, 1.0, 1.0, 0.0, 0.0]
    d = lg.zeros(3, 3)
    d.diagonal().add_(1)
    assert d.tolist() == [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]


# ---- in-place view ops: unsqueeze_, squeeze_, t_, transpose_, swapdims_ --------------------------

_VIEW_OPS = [("unsqueeze_", lambda t: t.unsqueeze_(1)), ("squeeze_", lambda t: t.squeeze_()),
             ("squeeze_dim", lambda t: t.squeeze_(0)), ("t_", lambda t: t.t_()),
             ("transpose_", lambda t: t.transpose_(0, 1)), ("swapdims_", lambda t: t.swapdims_(1, 0))]


@needs_torch
@pytest.mark.parametrize("name,op", _VIEW_OPS)
def test_in_place_view_ops_match_torch(name: str, op: Callable[[Any], Any]) -> None:
    x0 = np.arange(6.0).reshape(1, 2, 3)[0] if name != "squeeze_dim" else np.arange(6.0).reshape(1, 6)
    res = []
    for T in (torch, lg):
        x = T.tensor(x0, requires_grad=True)
        y = x * 2
        count = (lambda t: t._version) if T is torch else (lambda t: t._version[0])  # (lightgrad's: [count, stamp])
        v0 = count(y)
        r = op(y)
        assert r is y and count(y) == v0 + 1
        w = T.tensor(np.arange(float(np.prod(tuple(y.shape)))).reshape(tuple(y.shape)))
        (y * w).sum().backward()
        res.append((tuple(y.shape), y.detach().numpy(), x.grad.numpy()))
        plain = T.tensor(x0)
        assert op(plain) is plain and tuple(plain.shape) == tuple(y.shape)
        leaf = T.tensor(x0, requires_grad=True)
        with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
            op(leaf)
    assert res[1][0] == res[0][0]
    np.testing.assert_array_equal(res[1][1], res[0][1])
    np.testing.assert_array_equal(res[1][2], res[0][2])


@needs_torch
def test_in_place_view_op_after_a_save_is_refused_as_torch() -> None:
    for T in (torch, lg):
        x = T.ones(2, 3, requires_grad=True)
        y = x * 2
        z = (y * y).sum()  # saves y
        y.unsqueeze_(0)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            z.backward()


@needs_torch
@pytest.mark.parametrize("name,op", _VIEW_OPS)
def test_uses_before_and_after_an_in_place_view_op_get_torch_gradients(name: str, op: Callable[[Any], Any]) -> None:
    x0 = np.arange(6.0).reshape(2, 3) / 10 if name != "squeeze_dim" else np.arange(6.0).reshape(1, 6) / 10
    res = []
    for T in (torch, lg):
        x = T.tensor(x0, requires_grad=True)
        y = x * 2
        before = (y.exp() * T.tensor(np.arange(6.0).reshape(x0.shape))).sum()  # exp saves its output, not y
        op(y)
        after = (y * T.tensor(np.arange(6.0).reshape(tuple(y.shape)))).sum()
        (before + after).backward()
        res.append(x.grad.numpy())
    np.testing.assert_allclose(res[1], res[0], rtol=1e-12)


# ---- version counters, leaves, saved outputs -----------------------------------------------------

@pytest.mark.parametrize("name,arg", [("clamp_min_", 0.5), ("fmod_", 0.7), ("tril_", 0), ("cumsum_", 0),
                                      ("ldexp_", None), ("renorm_", None)])
def test_inplace_bumps_version_and_rejects_grad_leaf(name: str, arg: Any) -> None:
    args: tuple[Any, ...] = (arg,) if arg is not None else ()
    if name == "ldexp_":
        args = (lg.tensor([1, 2]),)
    elif name == "renorm_":
        args = (2, 0, 0.5)
    x = lg.ones(2, 2) * 3
    v = x._version_count
    assert getattr(x, name)(*args) is x
    assert x._version_count == v + 1
    with pytest.raises(RuntimeError, match="leaf"):
        getattr(lg.ones(2, 2, requires_grad=True), name)(*args)
    with lg.no_grad():  # allowed without a graph, as in PyTorch
        getattr(lg.ones(2, 2, requires_grad=True), name)(*args)


@needs_torch
def test_inplace_on_saved_output_is_detected() -> None:
    for T in (lg, torch):
        x = T.ones(3, requires_grad=True)
        y = x.exp()
        y.sin_()  # exp saved its output for backward; now it is stale
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            y.sum().backward()


# ---- in-place comparisons and roundings stay in the graph; dtypes of in-place forms --------------

CMP = ["eq_", "ne_", "lt_", "le_", "gt_", "ge_"]
# (not logical_not_: PyTorch passes the gradient through it unchanged, a quirk not copied here)
STEP = ["floor_", "ceil_", "round_", "trunc_", "sign_", "sgn_", "fix_"]


@needs_torch
@pytest.mark.parametrize("op", CMP + STEP)
def test_non_differentiable_in_place_op_on_tensor_that_requires_grad(op: str) -> None:
    def f(T: Any) -> Any:
        p = T.tensor([1.5, -2.0, 2.0, 0.0], requires_grad=True)
        x = p * 1
        y = getattr(x, op)(2.0) if op in CMP else getattr(x, op)()
        assert y is x
        state = (y.requires_grad, y.grad_fn is not None, _version(x))
        (y * T.tensor([1.0, 2.0, 3.0, 4.0])).sum().backward()
        return (y, p.grad) + state

    assert_same_results(*results_on_both(f))


@needs_torch
@pytest.mark.parametrize("op", CMP)
def test_comparison_in_place_with_other_that_requires_grad(op: str) -> None:
    def f(T: Any) -> Any:
        o = T.tensor([2.0, 1.0, 0.0], requires_grad=True)
        p = T.tensor([1.0, 1.0, 1.0], requires_grad=True)
        buf = T.tensor([1.0, 2.0, 3.0])  # needs no grad: the result does, through other
        a = p * 1
        y, z = getattr(buf, op)(o), getattr(a, op)(o)
        state = (y.requires_grad, z.requires_grad)
        (y + z).sum().backward()
        return (y, z, o.grad, p.grad) + state

    assert_same_results(*results_on_both(f))


@needs_torch
def test_comparison_in_place_keeps_integer_dtype_and_leaf_check() -> None:
    def f(T: Any) -> Any:
        i = T.tensor([1, 2, 3])
        return (i.eq_(2), i.lt_(T.tensor([3, 3, 3])))

    assert_same_results(*results_on_both(f))

    def leaf(T: Any) -> Any:
        return (T.ones(2, requires_grad=True).eq_(1.0),)

    got, want = results_on_both(leaf)
    assert isinstance(want, RuntimeError) and isinstance(got, RuntimeError)
    assert str(got) == str(want)


@needs_torch
@pytest.mark.parametrize("op", ["floor", "ceil", "round", "trunc", "sign", "sgn", "fix"])
def test_step_functions_have_zero_gradient(op: str) -> None:
    def f(T: Any) -> Any:
        p = T.tensor([1.5, -2.5, 0.2], requires_grad=True)
        y = getattr(p, op)()
        state = (y.requires_grad, y.grad_fn is not None)
        (y * 3).sum().backward()
        with T.no_grad():
            nograd = getattr(p, op)().requires_grad
        return (y, p.grad, nograd) + state

    assert_same_results(*results_on_both(f))


@needs_torch
def test_floor_division_has_zero_gradient() -> None:
    def f(T: Any) -> Any:
        p = T.tensor([1.5, -2.5, 7.0], requires_grad=True)
        y = p.div(2.0, rounding_mode="floor") + p.div(2.0, rounding_mode="trunc")
        y.sum().backward()
        return (y, p.grad, y.requires_grad)

    assert_same_results(*results_on_both(f))


@needs_torch
@pytest.mark.parametrize("dtype", ["float32", "int64", "int32", "bool"])
@pytest.mark.parametrize("name", ["eq_", "ne_", "lt_", "le_", "gt_", "ge_", "greater_", "less_equal_",
                                  "not_equal_", "logical_and_", "logical_or_", "logical_xor_"])
def test_comparison_inplace_keeps_dtype(name: str, dtype: str) -> None:
    a = np.array([0, 1, 2, 3])
    b = np.array([1, 1, 0, 3])
    lo = getattr(lg.tensor(a, dtype=getattr(lg, dtype)), name)(lg.tensor(b, dtype=getattr(lg, dtype)))
    to = getattr(torch.tensor(a, dtype=getattr(torch, dtype)), name)(torch.tensor(b, dtype=getattr(torch, dtype)))
    assert lo.dtype.name == str(to.dtype).replace("torch.", "")
    np.testing.assert_array_equal(lo.numpy(), to.numpy())


@needs_torch
@pytest.mark.parametrize("dtype", ["int32", "int64", "uint8"])
def test_integer_round_and_inplace_forms_keep_dtype(dtype: str) -> None:
    a = np.array([3, 7, 0, 12]).astype(getattr(np, dtype))
    for name, args in [("round_", ()), ("floor_", ()), ("ceil_", ()), ("trunc_", ()), ("square_", ()),
                       ("floor_divide_", (3,)), ("remainder_", (5,)), ("cumsum_", (0,)), ("clamp_max_", (6,)),
                       ("multiply_", (2,)), ("tril_", ())]:
        x = a.reshape(2, 2) if name == "tril_" else a
        lo = getattr(lg.tensor(x), name)(*args)
        to = getattr(torch.tensor(x), name)(*args)
        assert lo.dtype.name == str(to.dtype).replace("torch.", ""), name
        np.testing.assert_array_equal(lo.numpy(), to.numpy(), err_msg=name)


# ---- add_ with alpha, by chunks ------------------------------------------------------------------

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
