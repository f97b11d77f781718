"""dtypes against PyTorch: promotion of every pair, bfloat16 arithmetic bit for bit, finfo/iinfo,
NumPy round trips, printing, complex numbers and the bare unsigned types (uint16/32/64)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import lightgrad as lg

torch = pytest.importorskip("torch")

NAMES = ["bool", "uint8", "int8", "int16", "int32", "int64", "uint16", "uint32", "uint64", "float16", "bfloat16",
         "float32", "float64", "complex64", "complex128"]
NUMPY_NAMES = [n for n in NAMES if n != "bfloat16"]  # (NumPy has no bfloat16)


def _outcome(f, *args):
    """What a call gives: its value's name, or its exception's type and message."""
    try:
        r = f(*args)
    except Exception as e:  # noqa: BLE001 - the exception is the outcome compared
        return (type(e).__name__, str(e))
    return getattr(r, "name", None) or str(r).replace("torch.", "")


# ---- promotion --------------------------------------------------------------------------------------
@pytest.mark.parametrize("a", NAMES)
def test_promote_types_matches_torch_for_every_pair(a: str) -> None:
    for b in NAMES:
        want = _outcome(torch.promote_types, getattr(torch, a), getattr(torch, b))
        got = _outcome(lg.promote_types, getattr(lg, a), getattr(lg, b))
        assert got == want, (a, b)


def test_can_cast_matches_torch_for_every_pair() -> None:
    for a in NAMES:
        for b in NAMES:
            assert lg.can_cast(getattr(lg, a), getattr(lg, b)) == torch.can_cast(getattr(torch, a), getattr(torch, b)), \
                (a, b)


@pytest.mark.parametrize("name", ["bool", "uint8", "int32", "int64", "uint16", "float16", "bfloat16", "float32",
                                  "float64", "complex64", "complex128"])
def test_result_type_with_scalars_and_zero_dim_tensors(name: str) -> None:
    t = torch.ones(2, dtype=getattr(torch, name))
    x = lg.ones(2, dtype=getattr(lg, name))
    for scalar in (True, 3, 1.5, 1j):
        if name == "float16" and scalar == 1j:
            assert lg.result_type(x, scalar) is lg.complex64  # (PyTorch's complex32 is not in lightgrad: the next wider)
            continue
        assert _outcome(lg.result_type, x, scalar) == _outcome(torch.result_type, t, scalar), (name, scalar)
    for other in ("int32", "float64", "complex64", "bfloat16"):
        if name == "float16" and other == "complex64":
            continue  # (complex32 again)
        z = torch.tensor(1, dtype=getattr(torch, other))
        assert _outcome(lg.result_type, x, lg.tensor(1, dtype=getattr(lg, other))) == _outcome(torch.result_type, t, z)


def test_python_types_as_dtypes_are_the_double_ones() -> None:
    for py in (float, int, bool, complex):
        assert lg.zeros(1, dtype=py).dtype.name == str(torch.zeros(1, dtype=py).dtype).replace("torch.", "")


# ---- dtype attributes, finfo and iinfo ---------------------------------------------------------------
@pytest.mark.parametrize("name", NAMES)
def test_dtype_attributes_match_torch(name: str) -> None:
    d, t = getattr(lg, name), getattr(torch, name)
    assert (d.is_floating_point, d.is_complex, d.is_signed, d.itemsize) == \
        (t.is_floating_point, t.is_complex, t.is_signed, t.itemsize)
    x, y = lg.zeros(2, dtype=d), torch.zeros(2, dtype=t)
    assert (x.element_size(), x.is_floating_point(), x.is_complex(), x.is_signed(), x.type()) == \
        (y.element_size(), y.is_floating_point(), y.is_complex(), y.is_signed(), y.type())


@pytest.mark.parametrize("name", ["float16", "bfloat16", "float32", "float64", "complex64", "complex128"])
def test_finfo_matches_torch(name: str) -> None:
    a, b = lg.finfo(getattr(lg, name)), torch.finfo(getattr(torch, name))
    for field in ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution", "dtype"):
        assert getattr(a, field) == getattr(b, field), field
    assert repr(a) == repr(b)


@pytest.mark.parametrize("name", ["uint8", "int8", "int16", "int32", "int64", "uint16", "uint32", "uint64"])
def test_iinfo_matches_torch(name: str) -> None:
    a, b = lg.iinfo(getattr(lg, name)), torch.iinfo(getattr(torch, name))
    assert (a.bits, a.min, a.max, a.dtype, repr(a)) == (b.bits, b.min, b.max, b.dtype, repr(b))


# ---- NumPy round trips ----------------------------------------------------------------------------------
@pytest.mark.parametrize("name", NUMPY_NAMES)
def test_from_numpy_numpy_and_tensor_round_trips(name: str) -> None:
    a = np.array([0, 1, 3], dtype=name)
    x = lg.from_numpy(a)
    assert x.dtype is getattr(lg, name) and np.shares_memory(x.numpy(), a)
    assert x.numpy().dtype == torch.from_numpy(a).numpy().dtype
    y = lg.tensor(a)
    assert not np.shares_memory(y.numpy(), a) and y.numpy().tolist() == a.tolist()
    assert lg.tensor(a.tolist(), dtype=getattr(lg, name)).numpy().dtype == a.dtype
    assert x.tolist() == torch.from_numpy(a).tolist()


def test_bfloat16_numpy_and_from_numpy_refuse_as_torch() -> None:
    ml = pytest.importorskip("ml_dtypes")
    a = np.ones(2, ml.bfloat16)
    for f, g in ((lg.from_numpy, torch.from_numpy), (lg.tensor, torch.tensor), (lg.as_tensor, torch.as_tensor)):
        assert _outcome(f, a) == _outcome(g, a)
    assert _outcome(lambda: lg.ones(2, dtype=lg.bfloat16).numpy()) == \
        _outcome(lambda: torch.ones(2, dtype=torch.bfloat16).numpy())
    assert lg.bfloat16.np == np.dtype(ml.bfloat16)  # (the array dtype serialization writes and reads)


def test_unsupported_numpy_dtypes_are_refused_with_torchs_message() -> None:
    for a in (np.array(["a"]), np.array([object()]), np.ones(2, np.longdouble)):
        assert _outcome(lg.from_numpy, a) == _outcome(torch.from_numpy, a)


# ---- bfloat16 arithmetic, bit for bit ----------------------------------------------------------------
def _bf16_pair(rng: np.random.Generator, shape: tuple[int, ...], scale: float = 3.0, grad: bool = False):
    a = (rng.standard_normal(shape) * scale).astype(np.float32)
    return (torch.from_numpy(a).to(torch.bfloat16).requires_grad_(grad),
            lg.from_numpy(a).to(lg.bfloat16).requires_grad_(grad))


def _same_bits(t, x) -> None:
    assert x.dtype is lg.bfloat16
    want = t.detach().view(torch.int16).numpy()
    got = x.detach()._data.view(np.int16)
    assert want.shape == got.shape
    assert (want == got).all(), f"{(want != got).sum()} of {want.size} differ"


BF16_OPS = {
    "add": lambda a, b, c: a + b, "sub": lambda a, b, c: a - b, "mul": lambda a, b, c: a * b,
    "div": lambda a, b, c: a / b, "exp": lambda a, b, c: a.exp(), "tanh": lambda a, b, c: a.tanh(),
    "matmul": lambda a, b, c: a @ c, "sum": lambda a, b, c: a.sum(), "sum_dim": lambda a, b, c: a.sum(0),
    "mean": lambda a, b, c: a.mean(), "mean_dim": lambda a, b, c: a.mean(1),
    "scalars": lambda a, b, c: (a * 0.1 + 1.7) / 0.3 - 2.9, "int_scalar": lambda a, b, c: a + 257,
    "sqrt": lambda a, b, c: a.abs().sqrt(), "log": lambda a, b, c: a.abs().log(),
    "sigmoid": lambda a, b, c: a.sigmoid(), "softmax": lambda a, b, c: a.softmax(-1), "relu": lambda a, b, c: a.relu(),
    "square": lambda a, b, c: a ** 2, "max_dim": lambda a, b, c: a.max(1).values, "neg": lambda a, b, c: -a,
    "where": lambda a, b, c: (a > 0).float().bfloat16() * b,
}


@pytest.mark.parametrize("op", sorted(BF16_OPS))
def test_bfloat16_ops_round_like_torch_bit_for_bit(op: str) -> None:
    rng = np.random.default_rng(0)
    (t1, l1), (t2, l2), (t3, l3) = _bf16_pair(rng, (32, 33)), _bf16_pair(rng, (32, 33)), _bf16_pair(rng, (33, 17))
    _same_bits(BF16_OPS[op](t1, t2, t3), BF16_OPS[op](l1, l2, l3))


def test_bfloat16_exp_on_a_wide_range_bit_for_bit() -> None:
    # (NumPy's float32 exp is not always the correctly rounded float32: the bfloat16 result would differ)
    a = np.random.default_rng(1).uniform(-80, 80, 20000).astype(np.float32)
    _same_bits(torch.from_numpy(a).bfloat16().exp(), lg.from_numpy(a).bfloat16().exp())


def test_bfloat16_conversions_round_to_nearest_even() -> None:
    a = np.random.default_rng(2).standard_normal(5000)  # float64: through float32, as PyTorch
    _same_bits(torch.from_numpy(a).bfloat16(), lg.from_numpy(a).bfloat16())
    _same_bits(torch.from_numpy(a.astype(np.float32)).to(torch.bfloat16),
               lg.from_numpy(a.astype(np.float32)).to(lg.bfloat16))
    _same_bits(torch.tensor(a.tolist(), dtype=torch.bfloat16), lg.tensor(a.tolist(), dtype=lg.bfloat16))
    x = lg.from_numpy(a).bfloat16()
    assert x.float().dtype is lg.float32 and x.float().bfloat16().tolist() == x.tolist()
    assert torch.from_numpy(a).bfloat16().tolist() == x.tolist()


def test_bfloat16_promotion_in_ops() -> None:
    x = lg.tensor([1.5, 2.25], dtype=lg.bfloat16)
    assert (x + lg.tensor([1.0], dtype=lg.float16)).dtype is lg.float32
    assert (x + lg.tensor([1, 2])).dtype is lg.bfloat16
    assert (x + 1.0).dtype is lg.bfloat16 and (x * lg.tensor([1.0])).dtype is lg.float32
    assert (x * lg.tensor(2.0, dtype=lg.float64)).dtype is lg.bfloat16  # (a 0-d tensor of the same category)
    assert lg.tensor([1, 2]).to(lg.bfloat16).dtype is lg.bfloat16 and x.to("bfloat16") is x


def test_bfloat16_gradients_are_bfloat16_and_match_torch() -> None:
    rng = np.random.default_rng(3)
    (xt, xl), (wt, wl), (bt, bl) = (_bf16_pair(rng, s, 1.0, grad=True) for s in ((8, 16), (16, 4), (4,)))
    yt, yl = (xt @ wt + bt).tanh().sum(), (xl @ wl + bl).tanh().sum()
    yt.backward()
    yl.backward()
    _same_bits(yt, yl)
    for t, x in ((xt, xl), (wt, wl), (bt, bl)):
        assert x.grad.dtype is lg.bfloat16
        _same_bits(t.grad, x.grad)
    assert yl.grad_fn.name() == yt.grad_fn.name()


def test_bfloat16_views_share_memory() -> None:
    x = lg.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=lg.bfloat16)
    v = x.t()
    v[0, 1] = 9.0
    assert x[1, 0].item() == 9.0 and v.dtype is lg.bfloat16


def test_bfloat16_second_derivatives_raise_clearly() -> None:
    x = lg.tensor([1.5], dtype=lg.bfloat16, requires_grad=True)
    (g,) = lg.autograd.grad((x * x).sum(), x)
    assert g.dtype is lg.bfloat16 and g.item() == 3.0
    with pytest.raises(RuntimeError, match="bfloat16 ops twice"):
        lg.autograd.grad((x * x).sum(), x, create_graph=True)


BF16_REPRS = [[1.0, 2.0], [1.5, 2.25], [0.1, 1000.0], [1e-5, 3.0], [3.14159], 2.5, [], [[1.0, 2.0]] * 3]
COMPLEX_REPRS = [([1 + 2j, 3 - 1.5j], "complex64"), ([1 + 2j, 3 - 1j], "complex64"), ([1e-5 + 2j, 3000 - 1j], "complex64"),
                 ([1 + 2j], "complex128"), (1 + 2j, "complex64"), ([[1 + 2j, 3 - 1.5j], [0.5j, -1]], "complex64"),
                 ([], "complex64"), ([float("nan"), float("inf") + 1j], "complex64"), ([1.5, -2.0], "complex128")]


@pytest.mark.parametrize("value,name", [(v, "bfloat16") for v in BF16_REPRS] + COMPLEX_REPRS
                         + [([1, 2], "uint16"), ([1, 2], "uint32"), ([1, 2], "uint64")])
def test_repr_matches_torch(value, name: str) -> None:
    want = repr(torch.tensor(value, dtype=getattr(torch, name))).replace("torch.", "lightgrad.")
    assert repr(lg.tensor(value, dtype=getattr(lg, name))) == want
    if name == "bfloat16" and value:
        want = repr(torch.tensor(value, dtype=torch.bfloat16, requires_grad=True)).replace("torch.", "lightgrad.")
        assert repr(lg.tensor(value, dtype=lg.bfloat16, requires_grad=True)) == want


def test_without_ml_dtypes_bfloat16_exists_and_says_how_to_get_it() -> None:
    code = ("import sys; sys.modules['ml_dtypes'] = None\n"
            "import lightgrad as lg\n"
            "table = {'bfloat16': lg.bfloat16, 'float32': lg.float32}\n"
            "x = lg.ones(2) + 1\n"
            "try:\n    lg.ones(2, dtype=lg.bfloat16)\nexcept ModuleNotFoundError as e:\n    print('ERR', e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "ERR" in out and "pip install ml_dtypes" in out


def test_import_does_not_load_ml_dtypes() -> None:
    code = "import sys, lightgrad\nx = lightgrad.ones(2) * 2\nprint('ml_dtypes' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


# ---- complex numbers -------------------------------------------------------------------------------------
def _complex_pair(rng: np.random.Generator, shape: tuple[int, ...], dtype: str = "complex64"):
    a = (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
    return torch.from_numpy(a.copy()), lg.from_numpy(a.copy())


def _close(t, x) -> None:
    assert x.dtype.name == str(t.dtype).replace("torch.", "")
    np.testing.assert_allclose(x.numpy(), t.resolve_conj().numpy(), rtol=1e-5, atol=1e-6)


def _lib(t):
    """torch for a torch tensor, lightgrad for a lightgrad one."""
    return torch if isinstance(t, torch.Tensor) else lg


COMPLEX_OPS = {
    "add": lambda z, w, r: z + w, "sub": lambda z, w, r: z - w, "mul": lambda z, w, r: z * w,
    "div": lambda z, w, r: z / w, "exp": lambda z, w, r: z.exp(), "neg": lambda z, w, r: -z,
    "abs": lambda z, w, r: z.abs(), "angle": lambda z, w, r: z.angle(), "conj": lambda z, w, r: z.conj(),
    "real": lambda z, w, r: z.real, "imag": lambda z, w, r: z.imag, "sum": lambda z, w, r: z.sum(),
    "mean": lambda z, w, r: z.mean(), "sqrt": lambda z, w, r: z.sqrt(), "log": lambda z, w, r: z.log(),
    "matmul": lambda z, w, r: z @ w.t(), "eq": lambda z, w, r: z == w, "real_angle": lambda z, w, r: (r - 0.5).angle(),
    "times_float64": lambda z, w, r: z * r, "plus_1j": lambda z, w, r: r + 1j, "float_times_1j": lambda z, w, r: r.float() * 1j,
    "to_complex128": lambda z, w, r: z.to(_lib(z).complex128), "view_as_real": lambda z, w, r: _lib(z).view_as_real(z),
    "view_as_complex": lambda z, w, r: _lib(z).view_as_complex(_lib(z).view_as_real(z) * 2),
}


@pytest.mark.parametrize("op", sorted(COMPLEX_OPS))
def test_complex_ops_match_torch(op: str) -> None:
    rng = np.random.default_rng(4)
    (zt, zl), (wt, wl) = _complex_pair(rng, (3, 4)), _complex_pair(rng, (3, 4))
    r = rng.random((3, 4))  # float64
    _close(COMPLEX_OPS[op](zt, wt, torch.from_numpy(r)), COMPLEX_OPS[op](zl, wl, lg.from_numpy(r)))


def test_complex_parts_and_views_share_memory() -> None:
    z = lg.tensor([1 + 2j, 3 - 1j])
    z.real[0] = 5.0
    z.imag[1] = 7.0
    lg.view_as_real(z)[0, 1] = -4.0
    assert z.tolist() == [5 - 4j, 3 + 7j]
    r = lg.tensor([[1.0, 2.0], [3.0, 4.0]])
    c = lg.view_as_complex(r)
    c[1] = 0j
    assert r.tolist() == [[1.0, 2.0], [0.0, 0.0]]
    x = lg.tensor([1.0, 2.0])
    assert x.real is x and x.conj() is x and not x.is_complex() and z.is_complex()


def test_complex_errors_match_torch() -> None:
    for f in (lambda m: m.ones(3).imag, lambda m: m.view_as_real(m.ones(3)), lambda m: m.view_as_complex(m.ones(3)),
              lambda m: m.view_as_complex(m.ones(2, 3)[:, :2]), lambda m: m.view_as_complex(m.ones(2, 2, dtype=m.int64)),
              lambda m: m.view_as_complex(m.ones(2, 4)[:, ::2].contiguous().t())):
        assert _outcome(f, lg) == _outcome(f, torch)


def test_complex_numpy_round_trip_and_tensor_from_complex_numbers() -> None:
    for value in ([1 + 2j], 1j, [[1, 2.5j]]):
        assert lg.tensor(value).dtype.name == str(torch.tensor(value).dtype).replace("torch.", "")
        assert lg.tensor(value).tolist() == torch.tensor(value).tolist()
    lg.set_default_dtype(lg.float64)
    try:
        assert lg.tensor([1j]).dtype is lg.complex128
    finally:
        lg.set_default_dtype(lg.float32)
    a = np.array([1 + 1j, 2], np.complex128)
    assert lg.from_numpy(a).numpy() is not None and np.shares_memory(lg.from_numpy(a).numpy(), a)


def test_complex_paths_give_torchs_real_gradients() -> None:
    # (never a silently wrong gradient: lightgrad's real formulas without PyTorch's conjugates would
    # give the second one with its sign flipped)
    for f in (lambda m, x: (x.to(m.complex64) * (1 + 1j)).abs().sum(),
              lambda m, x: m.view_as_real(m.view_as_complex(x.reshape(1, 2)) * 1j).sum()):
        grads = []
        for m in (lg, torch):
            x = m.tensor([1.0, 2.0], requires_grad=True)
            f(m, x).backward()
            grads.append(x.grad.tolist())
        assert np.allclose(grads[0], grads[1])


# ---- uint16, uint32, uint64: PyTorch's few ops, its errors for the rest ------------------------------
UINT_OPS = ["v + v", "v - 1", "v * v", "v * 2", "v * True", "v / v", "v == v", "v != v", "v < v", "v > 1", "v <= v",
            "v >= v", "~v", "v & v", "v | v", "v ^ v", "v.max()", "v.min()", "v.max(0).values", "v.argmax()",
            "v.argmin()", "v.sum()", "v.prod()", "v.cumsum(0)", "v.mean()", "v.abs()", "-v", "v ** 2", "v // v",
            "v % v", "v.clamp(0, 1)", "v.sign()", "v.flip(0)", "v.nonzero()", "v.count_nonzero()", "v.topk(1).values",
            "v.sort().values", "v.unique()", "v.all()", "v.any()", "v.float()", "v.to(m.int32)", "v.bool()",
            "v.clone()", "v.reshape(3, 1)", "v[1:]", "m.cat([v, v])", "v.bitwise_left_shift(1)", "v + 1.5",
            "v * 1j", "v + m.tensor([1], dtype=m.int32)", "v.clone().fill_(3)", "v.clone().mul_(2)",
            "v.clone().add_(1)", "v.tolist()"]


@pytest.mark.parametrize("name", ["uint16", "uint32", "uint64"])
def test_bare_unsigned_ops_match_torch(name: str) -> None:
    def run(m, v, expr):
        try:
            r = eval(expr, {"m": m, "v": v})  # noqa: S307 - the expressions above
        except Exception as e:  # noqa: BLE001 - the exception is the outcome compared
            return type(e).__name__, str(e)
        return r if not hasattr(r, "dtype") else (str(r.dtype).split(".")[-1], r.tolist())
    t = torch.tensor([3, 1, 2], dtype=getattr(torch, name))
    x = lg.tensor([3, 1, 2], dtype=getattr(lg, name))
    for expr in UINT_OPS:
        assert run(lg, x, expr) == run(torch, t, expr), expr


# ---- reinterpreting and naming --------------------------------------------------------------------------
def test_view_as_another_dtype_and_type_by_name_match_torch() -> None:
    for f in (lambda m: m.ones(2, 4).view(m.int16).tolist(), lambda m: list(m.ones(2, 4).view(m.float64).shape),
              lambda m: m.tensor([1.5]).bfloat16().view(m.int16).tolist(), lambda m: m.ones(2, 4).t().view(m.float64),
              lambda m: m.ones(3).view(m.float64), lambda m: m.ones(2).type("torch.DoubleTensor").dtype,
              lambda m: m.ones(2).type("torch.BFloat16Tensor").dtype, lambda m: m.ones(2).bfloat16().type()):
        assert _outcome(f, lg) == _outcome(f, torch)
    x = lg.zeros(2)
    x.view(lg.int32)[0] = 1065353216  # (the bits of 1.0)
    assert x.tolist() == [1.0, 0.0]


def test_bfloat16_add_with_alpha_rounds_like_torch() -> None:
    rng = np.random.default_rng(6)
    (t1, l1), (t2, l2) = _bf16_pair(rng, (4, 64)), _bf16_pair(rng, (4, 64))  # (rows a multiple of PyTorch's vector)
    _same_bits(t1.add(t2, alpha=3.3), l1.add(l2, alpha=3.3))
    _same_bits(t1.clone().sub_(t2, alpha=0.1), l1.clone().sub_(l2, alpha=0.1))
