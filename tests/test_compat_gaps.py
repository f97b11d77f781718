"""PyTorch behaviours that the op table cannot express, each checked against PyTorch: one version
counter for a base and its views; in-place copies into views of tensors that need no grad; in-place
comparisons and roundings, which stay in the graph with zero gradients; hypot without overflow;
copysign's zero gradient and heaviside's missing derivative; lazy modules loaded before their first
forward."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import lightgrad as lg
from helpers import numeric_grads

torch = pytest.importorskip("torch")

FRAMEWORKS = (lg, torch)
MODIFIED = "modified by an inplace operation"


def _np(t: Any) -> np.ndarray:
    return t.detach()._data if isinstance(t, lg.Tensor) else t.detach().numpy(force=True)  # (ZeroTensors too)


def _version(t: Any) -> int:
    return t._version_count if isinstance(t, lg.Tensor) else t._version


def _both(f: Callable[[Any], Any]) -> tuple[Any, Any]:
    """f run on each framework: its results, or the exception it raised."""
    out = []
    for T in FRAMEWORKS:
        try:
            out.append(f(T))
        except Exception as e:  # noqa: BLE001 - compared below
            out.append(e)
    return out[0], out[1]


def _same(a: Any, b: Any, rtol: float = 1e-6) -> None:
    if isinstance(b, Exception):
        assert type(a) is type(b), (a, b)
        return
    assert not isinstance(a, Exception), a
    for x, y in zip(a, b, strict=True):
        if y is None or isinstance(y, bool | str | int | list | tuple):
            assert x == y
        else:
            assert tuple(x.shape) == tuple(y.shape)
            assert x.dtype.name == str(y.dtype).replace("torch.", "")
            np.testing.assert_allclose(_np(x), _np(y), rtol=rtol, equal_nan=True)


# ---- 1. one version counter for a base and its views --------------------------------------------

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

    got, want = _both(f)
    assert isinstance(want, RuntimeError) and MODIFIED in str(want)
    assert isinstance(got, RuntimeError) and MODIFIED in str(got), got


@pytest.mark.parametrize("name", ["index", "view", "t", "diagonal"])
def test_view_of_buffer_modified_in_place_invalidates_saved_base(name: str) -> None:
    def f(T: Any) -> Any:
        buf = T.tensor(np.arange(6.0).reshape(2, 3))
        w = T.ones(2, 3, requires_grad=True)
        y = buf * w  # saves buf
        VIEWS[name](buf).mul_(2)
        y.sum().backward()
        return (w.grad,)

    got, want = _both(f)
    assert isinstance(want, RuntimeError) and MODIFIED in str(want)
    assert isinstance(got, RuntimeError) and MODIFIED in str(got), got


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

    got, want = _both(f)
    assert got == want


def test_views_that_copy_do_not_share_the_counter() -> None:
    def f(T: Any) -> Any:
        a = T.zeros(2, 3)
        c = a.t().reshape(6)  # (not contiguous: reshape copies)
        a.add_(1)
        return [_version(a), _version(c)]

    got, want = _both(f)
    assert got == want


def test_unchanged_base_keeps_gradients_of_its_views() -> None:
    def f(T: Any) -> Any:
        p = T.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
        a = p * 2
        y = (a[0] * a.t()[1:, :1].reshape(2)[0] + a.view(6)).sum()
        y.backward()
        return (p.grad, y)

    _same(*_both(f))


# ---- 2. in-place copies into views of tensors that need no grad ---------------------------------

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
}


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

    _same(*_both(f))


def test_view_of_buffer_written_in_place_under_no_grad() -> None:
    def f(T: Any) -> Any:
        buf = T.zeros(2, 3)
        v = buf.view(6)
        h = T.arange(6.0, requires_grad=True)
        with T.no_grad():
            v.copy_(h.sin())
        return (buf, buf.requires_grad, buf.grad_fn is None, _version(buf))

    _same(*_both(f))


def test_diagonal_over_leading_dims_writes_back() -> None:
    def f(T: Any) -> Any:
        p = T.tensor(np.arange(18.0).reshape(3, 3, 2), requires_grad=True)
        a = p * 1
        d = a.diagonal(0, 0, 1)  # (2, 3)
        d.mul_(T.tensor([[2.0], [3.0]]))
        (a * a).sum().backward()
        return (a, p.grad, _version(a))

    _same(*_both(f))


# ---- 3. in-place comparisons and roundings stay in the graph ------------------------------------

CMP = ["eq_", "ne_", "lt_", "le_", "gt_", "ge_"]
# (not logical_not_: PyTorch passes the gradient through it unchanged, a quirk not copied here)
STEP = ["floor_", "ceil_", "round_", "trunc_", "sign_", "sgn_", "fix_"]


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

    _same(*_both(f))


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

    _same(*_both(f))


def test_comparison_in_place_keeps_integer_dtype_and_leaf_check() -> None:
    def f(T: Any) -> Any:
        i = T.tensor([1, 2, 3])
        return (i.eq_(2), i.lt_(T.tensor([3, 3, 3])))

    _same(*_both(f))

    def leaf(T: Any) -> Any:
        return (T.ones(2, requires_grad=True).eq_(1.0),)

    got, want = _both(leaf)
    assert isinstance(want, RuntimeError) and isinstance(got, RuntimeError)
    assert str(got) == str(want)


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

    _same(*_both(f))


def test_floor_division_has_zero_gradient() -> None:
    def f(T: Any) -> Any:
        p = T.tensor([1.5, -2.5, 7.0], requires_grad=True)
        y = p.div(2.0, rounding_mode="floor") + p.div(2.0, rounding_mode="trunc")
        y.sum().backward()
        return (y, p.grad, y.requires_grad)

    _same(*_both(f))


# ---- 4. hypot ------------------------------------------------------------------------------------

def test_hypot_does_not_overflow_in_float32() -> None:
    xs = np.array([3e19, 1e30, -2e38, 0.5, 1e-30], np.float32)
    ys = np.array([4e19, 1.0, 1e38, -1.2, 2e-30], np.float32)

    def f(T: Any) -> Any:
        x, y = T.tensor(xs, requires_grad=True), T.tensor(ys, requires_grad=True)
        h = T.hypot(x, y)
        h.backward(T.ones(5))
        return (h, x.grad, y.grad)

    got, want = _both(f)
    assert np.isfinite(_np(want[0])).all()
    _same(got, want, rtol=1e-6)


def test_hypot_broadcasts_and_second_derivative() -> None:
    xs = np.array([[1.0, -2.0, 3.0], [0.5, 4.0, -1.0]])
    ys = np.array([2.0, -1.0, 0.25])

    def f(T: Any) -> Any:
        x, y = T.tensor(xs, requires_grad=True), T.tensor(ys, requires_grad=True)
        h = x.hypot(y)
        gx, gy = T.autograd.grad(h.sum(), (x, y), create_graph=True)
        (gx.sum() + (gy * gy).sum()).backward()
        return (h, gx, gy, x.grad, y.grad)

    _same(*_both(f), rtol=1e-10)


def test_hypot_gradient_matches_finite_differences() -> None:
    rng = np.random.default_rng(0)
    xs, ys, r = rng.normal(size=(3, 4)), rng.normal(size=(4,)), rng.normal(size=(3, 4))
    x, y = lg.tensor(xs, requires_grad=True), lg.tensor(ys, requires_grad=True)
    (x.hypot(y) * lg.tensor(r)).sum().backward()
    nx, ny = numeric_grads(np.hypot, [xs.copy(), ys.copy()], r)
    np.testing.assert_allclose(x.grad._data, nx, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(y.grad._data, ny, rtol=1e-6, atol=1e-8)


def test_hypot_in_place() -> None:
    def f(T: Any) -> Any:
        p = T.tensor([3e19, 5.0], requires_grad=True)
        a = p * 1
        a.hypot_(T.tensor([4e19, 12.0]))
        a.sum().backward()
        return (a, p.grad)

    _same(*_both(f))


# ---- 5. copysign and heaviside ------------------------------------------------------------------

def test_copysign_gives_other_a_zero_gradient() -> None:
    def f(T: Any) -> Any:
        x = T.tensor([1.0, -2.0, 0.0, 3.0], requires_grad=True)
        y = T.tensor([-1.0, 1.0, -0.0, 2.0], requires_grad=True)
        out = T.copysign(x, y)
        out.backward(T.tensor([1.0, 2.0, 3.0, 4.0]))
        z = T.copysign(x.detach(), y)  # only other requires grad: still in the graph
        state = (z.requires_grad, T.copysign(x, y.detach()).requires_grad)
        z.sum().backward()
        return (out, x.grad, y.grad) + state

    _same(*_both(f))


@pytest.mark.parametrize("which", ["input", "values", "in_place"])
def test_heaviside_backward_raises(which: str) -> None:
    def f(T: Any) -> Any:
        x = T.tensor([-1.0, 0.0, 2.0], requires_grad=which == "input")
        v = T.tensor([0.5, 0.5, 0.5], requires_grad=which == "values")
        if which == "in_place":
            p = T.tensor([-1.0, 0.0, 2.0], requires_grad=True)
            out = (p * 1).heaviside_(v)
        else:
            out = T.heaviside(x, v)
        assert out.requires_grad and out.grad_fn is not None
        out.sum().backward()

    got, want = _both(f)
    assert isinstance(want, RuntimeError) and isinstance(got, RuntimeError)
    assert str(got) == str(want)


def test_heaviside_without_grad_is_a_plain_tensor() -> None:
    def f(T: Any) -> Any:
        out = T.heaviside(T.tensor([-1.0, 0.0, 2.0]), T.tensor([0.5]))
        return (out, out.requires_grad)

    _same(*_both(f))


# ---- 6. lazy modules loaded before their first forward ------------------------------------------

def _torch_state(m: Any) -> dict[str, Any]:
    return {k: v.detach().numpy().copy() for k, v in m.state_dict().items()}


def test_lazy_linear_strict_load_then_forward() -> None:
    torch.manual_seed(0)
    ref = torch.nn.Linear(3, 2)
    sd = _torch_state(ref)
    x = np.linspace(-1, 1, 12).reshape(4, 3).astype(np.float32)
    outs = []
    for T in FRAMEWORKS:
        m = T.nn.LazyLinear(2)
        keys = m.load_state_dict({k: T.tensor(v) for k, v in sd.items()}, strict=True)
        before = (type(m).__name__, m.in_features, tuple(m.weight.shape))
        y = m(T.tensor(x))
        y.sum().backward()
        outs.append((y, m.weight.grad, m.bias.grad, list(keys.missing_keys), before,
                     type(m).__name__, m.in_features))
    _same(outs[0], outs[1])
    np.testing.assert_allclose(_np(outs[0][0]), _np(ref(torch.tensor(x))), rtol=1e-6)


def test_lazy_modules_in_a_tree_load_then_forward() -> None:
    torch.manual_seed(0)
    ref = torch.nn.Sequential(torch.nn.Conv2d(2, 4, 3), torch.nn.BatchNorm2d(4), torch.nn.Flatten(),
                              torch.nn.Linear(4 * 3 * 3, 5), torch.nn.BatchNorm1d(5))
    ref(torch.randn(6, 2, 5, 5))  # (running statistics that are not the defaults)
    sd = _torch_state(ref)
    x = np.linspace(-2, 2, 3 * 2 * 5 * 5).reshape(3, 2, 5, 5).astype(np.float32)
    outs = []
    for T in FRAMEWORKS:
        nn = T.nn
        m = nn.Sequential(nn.LazyConv2d(4, 3), nn.LazyBatchNorm2d(), nn.Flatten(), nn.LazyLinear(5),
                          nn.LazyBatchNorm1d())
        m.load_state_dict({k: T.tensor(v) for k, v in sd.items()})
        m.eval()
        outs.append((m(T.tensor(x)), [type(c).__name__ for c in m]))
    _same(outs[0], outs[1], rtol=1e-5)
    ref.eval()
    np.testing.assert_allclose(_np(outs[0][0]), _np(ref(torch.tensor(x))), rtol=1e-5, atol=1e-6)


def test_lazy_state_dict_loaded_into_lazy_module_stays_lazy() -> None:
    def f(T: Any) -> Any:
        m = T.nn.LazyLinear(3)
        keys = m.load_state_dict(T.nn.LazyLinear(3).state_dict())
        lazy = (type(m.weight).__name__, type(m.bias).__name__, list(keys.missing_keys))
        y = m(T.ones(2, 4))
        return (lazy[0], lazy[1], str(lazy[2]), type(m).__name__, tuple(y.shape) == (2, 3))

    got, want = _both(f)
    assert got == want


def test_lazy_state_dict_survives_save_and_load(tmp_path: Any) -> None:
    path = tmp_path / "lazy.pt"
    lg.save(lg.nn.LazyLinear(3).state_dict(), path)
    m = lg.nn.LazyLinear(3)
    m.load_state_dict(lg.load(path))
    assert lg.nn.parameter.is_lazy(m.weight)
    assert tuple(m(lg.ones(2, 4)).shape) == (2, 3)


def test_lazy_load_with_missing_key() -> None:
    def strict(T: Any) -> Any:
        src = T.nn.Linear(3, 2)
        T.nn.LazyLinear(2).load_state_dict({"weight": src.weight.detach()})

    got, want = _both(strict)
    assert isinstance(want, RuntimeError) and isinstance(got, RuntimeError)
    assert 'Missing key(s) in state_dict: "bias"' in str(got)

    def loose(T: Any) -> Any:
        m = T.nn.LazyLinear(2)
        keys = m.load_state_dict({"weight": T.nn.Linear(3, 2).weight.detach()}, strict=False)
        return (list(keys.missing_keys), type(m.weight).__name__, type(m.bias).__name__)

    got, want = _both(loose)
    assert got == want


def test_lazy_linear_load_then_forward_with_wrong_input_size() -> None:
    def f(T: Any) -> Any:
        m = T.nn.LazyLinear(2)
        m.load_state_dict(T.nn.Linear(3, 2).state_dict())
        m(T.ones(1, 4))

    got, want = _both(f)
    assert type(got) is type(want) and str(got) == str(want)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("op", ["bitwise_not_", "bitwise_and"])
def test_integer_only_ops_name_the_dtype_as_torch(dtype: str, op: str) -> None:
    msgs = []
    for T in (torch, lg):
        x = T.ones(2, dtype=getattr(T, dtype))
        with pytest.raises(NotImplementedError) as e:
            getattr(x, op)() if op.endswith("_") else getattr(x, op)(x)
        msgs.append(str(e.value))
    assert msgs[1] == msgs[0]


def test_inf_and_nan_results_are_silent_as_in_torch_and_numpy_still_warns() -> None:
    # log(0), x / 0 and exp overflow give inf silently, as PyTorch's do, eagerly and replayed; the
    # user's own NumPy calls keep NumPy's warnings
    import subprocess
    import sys
    code = (
        "import lightgrad as lg\n"
        "lg.log(lg.tensor([0.0])); lg.tensor([1.0]) / 0; lg.tensor([1e30]).exp()\n"
        "x = lg.tensor([0.0], requires_grad=True); lg.log(x).sum().backward(); assert x.grad.item() == float('inf')\n"
        "step = lg.compile(lambda t: (t / 0).sum())\n"
        "[step(lg.ones(3)) for _ in range(3)]\n"
        "print('numpy', flush=True)\n"
        "import numpy as np; np.log(np.zeros(1))\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                       env={**__import__("os").environ, "PYTHONWARNINGS": ""})
    assert r.returncode == 0, r.stderr
    assert r.stdout == "numpy\n"
    assert r.stderr.count("RuntimeWarning") == 1 and "divide by zero encountered in log" in r.stderr


@pytest.mark.parametrize("dim", [None, 0, 1])
def test_prod_second_derivative_matches_torch(dim: Any) -> None:
    x0 = np.array([[1.5, -2.0, 0.5], [0.0, 3.0, 2.0]])  # a zero: the exclusive products, not out / x
    w = np.arange(6.0).reshape(2, 3)
    res = []
    for T in (torch, lg):
        x = T.tensor(x0, requires_grad=True)
        y = x.prod() if dim is None else x.prod(dim).sum()
        (g,) = T.autograd.grad(y, x, create_graph=True)
        (g * T.tensor(w)).sum().backward()
        res.append((g.detach().numpy(), x.grad.numpy()))
    np.testing.assert_allclose(res[1][0], res[0][0], rtol=1e-12)
    np.testing.assert_allclose(res[1][1], res[0][1], rtol=1e-12)


@pytest.mark.parametrize("name", ["float16", "float32", "float64", None])
def test_finfo_matches_torch(name: Any) -> None:
    a = lg.finfo(getattr(lg, name)) if name else lg.finfo()
    b = torch.finfo(getattr(torch, name)) if name else torch.finfo()
    assert repr(a) == repr(b)
    for k in ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution", "dtype"):
        assert getattr(a, k) == getattr(b, k), k


@pytest.mark.parametrize("name", ["uint8", "int8", "int16", "int32", "int64"])
def test_iinfo_matches_torch(name: str) -> None:
    a, b = lg.iinfo(getattr(lg, name)), torch.iinfo(getattr(torch, name))
    assert repr(a) == repr(b) and (a.bits, a.max, a.min, a.dtype) == (b.bits, b.max, b.min, b.dtype)


@pytest.mark.parametrize("call", [lambda T: T.finfo(T.int32), lambda T: T.iinfo(T.float32), lambda T: T.iinfo(T.bool)])
def test_finfo_and_iinfo_refuse_other_kinds_as_torch(call: Callable[[Any], Any]) -> None:
    msgs = []
    for T in (torch, lg):
        with pytest.raises(TypeError) as e:
            call(T)
        msgs.append(str(e.value))
    assert msgs[1] == msgs[0]


def test_size_arithmetic_stays_a_size() -> None:
    for make in (lambda s: s + (5,), lambda s: (1,) + s, lambda s: s * 2, lambda s: 2 * s):
        a, b = make(lg.Size([2, 3, 4])), make(torch.Size([2, 3, 4]))
        assert type(a) is lg.Size and type(b) is torch.Size and tuple(a) == tuple(b)
    assert type(lg.Size([2, 3])[0]) is int


@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_solve_and_inverse_match_torch(upper: bool) -> None:
    rng = np.random.default_rng(1)
    m = rng.standard_normal((2, 4, 4))
    a0 = m @ m.transpose(0, 2, 1) + 4 * np.eye(4)
    b0 = rng.standard_normal((2, 4, 3))
    res = []
    for T in (torch, lg):
        a, b = T.tensor(a0, requires_grad=True), T.tensor(b0, requires_grad=True)
        f = T.linalg.cholesky(a, upper=upper)
        x = T.cholesky_solve(b, f, upper=upper)
        inv = f.cholesky_inverse(upper=upper)
        (x.sum() + (inv * inv).sum()).backward()
        res.append([x.detach().numpy(), inv.detach().numpy(), a.grad.numpy(), b.grad.numpy()])
    for got, want in zip(res[1], res[0]):
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)


def test_small_tensor_methods_match_torch() -> None:
    x0 = np.arange(12.0).reshape(3, 4) - 5
    for name, f in [("adjoint", lambda T, x: x.adjoint()), ("narrow_copy", lambda T, x: x.narrow_copy(1, 1, 2)),
                    ("hardshrink", lambda T, x: x.hardshrink(2.5)),
                    ("prelu", lambda T, x: x.prelu(T.tensor([0.25], dtype=x.dtype))),
                    ("combinations", lambda T, x: T.combinations(x[0], 3)),
                    ("combinations_repl", lambda T, x: T.combinations(x[1], 2, with_replacement=True)),
                    ("combinations_empty", lambda T, x: T.combinations(x[0, :2], 3))]:
        out = [f(T, T.tensor(x0)) for T in (torch, lg)]
        assert tuple(out[1].shape) == tuple(out[0].shape), name
        np.testing.assert_array_equal(out[1].numpy(), out[0].numpy(), err_msg=name)
    assert lg.ones(2).get_device() == torch.ones(2).get_device() and not lg.ones(1).is_inference()
    with pytest.raises(RuntimeError, match="Expect a 1D vector"):
        lg.combinations(lg.ones(2, 2))


_VIEW_OPS = [("unsqueeze_", lambda t: t.unsqueeze_(1)), ("squeeze_", lambda t: t.squeeze_()),
             ("squeeze_dim", lambda t: t.squeeze_(0)), ("t_", lambda t: t.t_()),
             ("transpose_", lambda t: t.transpose_(0, 1)), ("swapdims_", lambda t: t.swapdims_(1, 0))]


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


def test_in_place_view_op_after_a_save_is_refused_as_torch() -> None:
    for T in (torch, lg):
        x = T.ones(2, 3, requires_grad=True)
        y = x * 2
        z = (y * y).sum()  # saves y
        y.unsqueeze_(0)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            z.backward()


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


@pytest.mark.parametrize("beta,threshold", [(1.0, 20.0), (2.0, 5.0)])
def test_softplus_values_and_gradients_match_torch_at_zero_and_the_threshold(beta: float, threshold: float) -> None:
    x0 = np.array([-30.0, -1.0, 0.0, 1e-3, 2.0, 2.4, 2.6, 10.0, 40.0])  # (not at the threshold itself)
    res = []
    for T in (torch, lg):
        x = T.tensor(x0, requires_grad=True)
        y = T.nn.functional.softplus(x, beta, threshold)
        (g,) = T.autograd.grad(y.sum(), x, create_graph=True)
        g.sum().backward()
        res.append((y.detach().numpy(), g.detach().numpy(), x.grad.numpy()))
    for got, want in zip(res[1], res[0]):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-300)
