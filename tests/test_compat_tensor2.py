"""Behaviour of the compat-2 Tensor methods that the op table cannot show: in-place forms on views
and leaves, version counters, dtype rules, and ops PyTorch itself cannot differentiate."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from helpers import numeric_grads

import lightgrad as lg

torch = pytest.importorskip("torch")

UNARY_INPLACE = ["absolute_", "sin_", "cos_", "tan_", "sinh_", "cosh_", "exp2_", "expm1_", "log1p_",
                 "reciprocal_", "negative_", "square_", "erf_", "frac_"]


def _both(fn: Any, *arrays: np.ndarray) -> tuple[Any, Any, list[Any], list[Any]]:
    """Run fn on lightgrad and torch float64 leaves holding the same values."""
    lts = [lg.tensor(a, requires_grad=True) for a in arrays]
    tts = [torch.tensor(a, requires_grad=True) for a in arrays]
    return fn(lg, *lts), fn(torch, *tts), lts, tts


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


def test_inplace_on_saved_output_is_detected() -> None:
    for T in (lg, torch):
        x = T.ones(3, requires_grad=True)
        y = x.exp()
        y.sin_()  # exp saved its output for backward; now it is stale
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            y.sum().backward()


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


@pytest.mark.parametrize("dtype", ["int64", "int32", "int16", "uint8", "bool"])
def test_bitwise_dtypes_match_torch(dtype: str) -> None:
    a = np.array([0, 1, 5, 6, 12]).astype(np.bool_ if dtype == "bool" else getattr(np, dtype))
    b = np.array([3, 1, 4, 0, 10]).astype(a.dtype)
    la, lb = lg.tensor(a), lg.tensor(b)
    ta, tb = torch.tensor(a), torch.tensor(b)
    ops = ["bitwise_and", "bitwise_or", "bitwise_xor"]
    if dtype != "bool":
        ops += ["bitwise_left_shift", "bitwise_right_shift", "gcd", "lcm"]
    for op in ops:
        lo, to = getattr(lg, op)(la, lb), getattr(torch, op)(ta, tb)
        assert lo.dtype.name == str(to.dtype).replace("torch.", ""), op
        np.testing.assert_array_equal(lo.numpy(), to.numpy(), err_msg=op)
        lo, to = getattr(la.clone(), op + "_")(lb), getattr(ta.clone(), op + "_")(tb)
        np.testing.assert_array_equal(lo.numpy(), to.numpy(), err_msg=op + "_")
    np.testing.assert_array_equal(la.bitwise_not().numpy(), ta.bitwise_not().numpy())
    np.testing.assert_array_equal(lg.bitwise_and(la, 3).numpy(), torch.bitwise_and(ta, 3).numpy())


def test_number_dtype_rules() -> None:
    i32 = np.array([1, 2, 3], np.int32)
    cases = [
        (lambda T: T.ldexp(T.tensor(i32), T.tensor([2, 0, 1])), "ldexp int"),
        (lambda T: T.ldexp(T.tensor([1.0, 2.0], dtype=T.float64), T.tensor([2, 1])), "ldexp double"),
        (lambda T: T.frexp(T.tensor([3.0, -0.5, 0.0, 1e-30]))[1], "frexp exponent"),
        (lambda T: T.frexp(T.tensor([3.0, -0.5], dtype=T.float64)).mantissa, "frexp mantissa"),
        (lambda T: T.nextafter(T.tensor([1.0, 0.0]), T.tensor([2.0, -1.0])), "nextafter"),
        (lambda T: T.vander(T.tensor(i32), 4), "vander int32"),
        (lambda T: T.vander(T.tensor([True, False])), "vander bool"),
        (lambda T: T.cov(T.tensor([[1, 2, 4], [0, 3, 3]])), "cov int"),
        (lambda T: T.trapezoid(T.tensor([1, 2, 4])), "trapezoid int"),
        (lambda T: T.tensor(i32).argwhere(), "argwhere"),
        (lambda T: T.ones(2, 3, dtype=T.float64).new([1, 2]), "new data"),
        (lambda T: T.tensor(i32).sum_to_size(1), "sum_to_size int"),
    ]
    for fn, what in cases:
        lo, to = fn(lg), fn(torch)
        assert lo.dtype.name == str(to.dtype).replace("torch.", ""), what
        np.testing.assert_allclose(lo.numpy(), to.numpy(), rtol=1e-6, err_msg=what)


def test_new_legacy_constructor() -> None:
    x = lg.ones(2, 3, dtype=lg.float64)
    for args in [(), (4,), (2, 5), ((3, 1),)]:
        r = x.new(*(lg.Size(a) if isinstance(a, tuple) else a for a in args))
        t = torch.ones(2, 3).new(*(torch.Size(a) if isinstance(a, tuple) else a for a in args))
        assert r.dtype == lg.float64 and tuple(r.shape) == tuple(t.shape), args


@pytest.mark.parametrize("shape", [(2, 3), (4,), (1, 5, 2), ()])
def test_unravel_index_matches_torch(shape: tuple[int, ...]) -> None:
    n = int(np.prod(shape))
    idx = np.array([0, n - 1, -1, n + 2, 2 * n - 1 if n > 1 else 0])
    lo, to = lg.unravel_index(lg.tensor(idx), shape), torch.unravel_index(torch.tensor(idx), shape)
    assert len(lo) == len(to)
    for a, b in zip(lo, to):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


@pytest.mark.parametrize("shape,wrap", [((3, 3, 3), False), ((7, 3), True), ((7, 3), False), ((2, 5), True)])
def test_fill_diagonal_matches_torch(shape: tuple[int, ...], wrap: bool) -> None:
    a = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    lo = lg.tensor(a).fill_diagonal_(-1.0, wrap=wrap)
    to = torch.tensor(a).fill_diagonal_(-1.0, wrap=wrap)
    np.testing.assert_array_equal(lo.numpy(), to.numpy())


def test_vander_gradient_finite_differences() -> None:
    # (PyTorch's own vander fails in backward, so the op table checks only its forward)
    x = np.random.default_rng(3).normal(size=4)
    r = np.random.default_rng(4).normal(size=(4, 3))
    t = lg.tensor(x, requires_grad=True)
    (lg.vander(t, 3, increasing=False) * lg.tensor(r)).sum().backward()
    num = numeric_grads(lambda a: lg.vander(lg.tensor(a), 3).numpy(), [x.copy()], r)
    np.testing.assert_allclose(t.grad.numpy(), num[0], rtol=1e-6, atol=1e-8)


def test_quantile_shapes_and_nan_rows_match_torch() -> None:
    a = np.random.default_rng(5).normal(size=(3, 4, 5)).astype(np.float32)
    a[1, 2, 3] = np.nan
    a[2, 0, :] = np.nan
    q = np.array([0.0, 0.5, 0.9], np.float32)
    for dim in (None, 0, -1):
        for keepdim in (False, True):
            for fn in ("quantile", "nanquantile"):
                for qq in (0.25, q):
                    lq = lg.tensor(qq) if isinstance(qq, np.ndarray) else qq
                    tq = torch.tensor(qq) if isinstance(qq, np.ndarray) else qq
                    lo = getattr(lg.tensor(a), fn)(lq, dim, keepdim)
                    to = getattr(torch.tensor(a), fn)(tq, dim, keepdim)
                    assert tuple(lo.shape) == tuple(to.shape), (fn, dim, keepdim)
                    np.testing.assert_allclose(lo.numpy(), to.numpy(), rtol=1e-5, err_msg=f"{fn} {dim}")


def test_masked_scatter_inplace_and_unfold_view_shapes() -> None:
    base = np.arange(12.0).reshape(3, 4)
    mask = base % 3 == 0
    src = -np.arange(10.0)
    lo = lg.tensor(base).masked_scatter_(lg.tensor(mask), lg.tensor(src))
    to = torch.tensor(base).masked_scatter_(torch.tensor(mask), torch.tensor(src))
    np.testing.assert_array_equal(lo.numpy(), to.numpy())
    for args in [(0, 2, 1), (1, 3, 2), (-1, 4, 4), (1, 1, 3)]:
        lu, tu = lg.tensor(base).unfold(*args), torch.tensor(base).unfold(*args)
        np.testing.assert_array_equal(lu.numpy(), tu.numpy(), err_msg=str(args))


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


@pytest.mark.parametrize("value", [0.0, 2.5])
def test_argwhere_scalar_matches_torch(value: float) -> None:
    lo, to = lg.tensor(value).argwhere(), torch.tensor(value).argwhere()
    assert tuple(lo.shape) == tuple(to.shape) and lo.dtype.name == "int64"


def test_sampling_methods_draw_from_their_distributions() -> None:
    lg.manual_seed(0)
    p = lg.tensor([[0.0, 0.0, 1.0], [1.0, 0.0, 0.0]])
    assert p.multinomial(2, replacement=True).tolist() == [[2, 2], [0, 0]]
    b = lg.full((20000,), 0.25).bernoulli()
    assert abs(b.mean().item() - 0.25) < 0.02
    ln = lg.empty(20000, dtype=lg.float64).log_normal_(0.0, 0.5)
    assert abs(ln.log().std().item() - 0.5) < 0.02
    c = lg.empty(20001, dtype=lg.float64).cauchy_(3.0, 2.0)
    assert abs(c.median().item() - 3.0) < 0.1
    g = lg.empty(20000, dtype=lg.float64).geometric_(0.5)
    assert g.min().item() >= 1 and abs(g.mean().item() - 2.0) < 0.05
    with pytest.raises(RuntimeError, match="leaf Variable"):
        lg.ones(3, requires_grad=True).cauchy_()
