"""Tensor API behaviour: creation, dtypes and promotion, interop, printing, devices, shape functions.

Also the dtype information (finfo, iinfo, Size), the legacy constructor and sampling methods. (The
operators that write into a temporary operand's array: tests/test_refcount.py.)"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from helpers import assert_like_torch, needs_torch, torch

import lightgrad as lg


def test_default_dtypes() -> None:
    assert lg.tensor([1.0, 2.0]).dtype == lg.float32
    assert lg.tensor([1, 2]).dtype == lg.int64
    assert lg.tensor([True]).dtype == lg.bool
    assert lg.tensor(np.zeros(2, np.float64)).dtype == lg.float64
    assert lg.zeros(2).dtype == lg.float32
    assert lg.arange(3).dtype == lg.int64
    assert lg.arange(0, 1, 0.5).dtype == lg.float32
    assert lg.full((2,), 7).dtype == lg.int64
    assert lg.randint(0, 5, (3,)).dtype == lg.int64


def test_set_default_dtype() -> None:
    lg.set_default_dtype(lg.float64)
    try:
        assert lg.tensor([1.0]).dtype == lg.float64
        assert (lg.tensor([1]) * 0.5).dtype == lg.float64
    finally:
        lg.set_default_dtype(lg.float32)
    with pytest.raises(TypeError):
        lg.set_default_dtype(lg.int64)


DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64"]


@needs_torch
@pytest.mark.parametrize("a,b", list(itertools.product(DTYPES, DTYPES)))
def test_promotion_matches_torch(a: str, b: str) -> None:
    assert lg.promote_types(getattr(lg, a), getattr(lg, b)).name == \
        str(torch.promote_types(getattr(torch, a), getattr(torch, b))).replace("torch.", "")


@needs_torch
@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("other", [2, 2.5, True, "zero_dim_f64", "zero_dim_i32", "dim_f16"])
def test_op_result_dtype_matches_torch(dt: str, other) -> None:
    def make(T):
        x = T.ones(3, dtype=getattr(T, dt))
        if other == "zero_dim_f64":
            o = T.tensor(1.0, dtype=T.float64)
        elif other == "zero_dim_i32":
            o = T.tensor(1, dtype=T.int32)
        elif other == "dim_f16":
            o = T.ones(3, dtype=T.float16)
        else:
            o = other
        return (x * o).dtype
    assert make(lg).name == str(make(torch)).replace("torch.", "")


def test_true_division_of_integers_is_float() -> None:
    assert (lg.tensor([1, 2]) / 2).dtype == lg.float32
    np.testing.assert_allclose((lg.tensor([1, 3]) / lg.tensor([2, 2])).numpy(), [0.5, 1.5])


def test_integer_division_by_zero_of_nothing_is_nothing() -> None:
    # (PyTorch raises for each quotient with a zero divisor; an empty tensor has none)
    assert (lg.tensor([], dtype=lg.int64) // 0).shape == (0,)
    assert (lg.ones(0, 2, dtype=lg.int32) % lg.zeros(2, dtype=lg.int32)).shape == (0, 2)
    assert (lg.tensor([7]) // lg.tensor([2])).tolist() == [3]


def test_attributes() -> None:
    x = lg.zeros(2, 3, 4)
    assert x.shape == (2, 3, 4) and x.size() == (2, 3, 4) and x.size(-1) == 4
    assert x.dim() == 3 and x.ndim == 3 and x.numel() == 24 and len(x) == 2
    assert str(x.device) == "cpu" and x.device == lg.device("cpu")
    assert isinstance(x.shape, lg.Size) and x.shape.numel() == 24
    assert lg.tensor(3.5).item() == 3.5
    assert lg.tensor([[1, 2], [3, 4]]).tolist() == [[1, 2], [3, 4]]


def test_bool_only_for_one_element() -> None:
    assert bool(lg.tensor([1.0])) and not bool(lg.tensor(0.0))
    with pytest.raises(RuntimeError):
        bool(lg.ones(2))


def test_iteration_and_len() -> None:
    rows = list(lg.arange(6).reshape(3, 2))
    assert len(rows) == 3 and rows[1].tolist() == [2, 3]
    with pytest.raises(TypeError):
        len(lg.tensor(1.0))


def test_numpy_interop_shares_memory_both_ways() -> None:
    a = np.arange(4, dtype=np.float32)
    t = lg.from_numpy(a)
    a[0] = 10
    assert t[0].item() == 10
    t.numpy()[1] = 20
    assert a[1] == 20
    assert np.shares_memory(np.asarray(t), a)
    assert lg.as_tensor(a).numpy() is a
    c = lg.tensor(a)
    a[2] = 30
    assert c[2].item() != 30  # tensor() copies


def test_numpy_refuses_when_grad_is_required() -> None:
    t = lg.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="detach"):
        t.numpy()
    assert t.detach().numpy().tolist() == [1.0, 1.0]


def test_unsupported_dtype_is_refused() -> None:
    with pytest.raises(TypeError, match="can't convert np.ndarray of type numpy.str_"):
        lg.from_numpy(np.array(["a"]))


def test_dlpack_roundtrip_with_numpy() -> None:
    t = lg.arange(6, dtype=lg.float32).reshape(2, 3)
    a = np.from_dlpack(t)
    assert np.shares_memory(a, t.numpy())
    back = lg.from_dlpack(a)
    back[0, 0] = 42
    assert t[0, 0].item() == 42


@needs_torch
def test_dlpack_with_torch_both_ways() -> None:
    t = lg.arange(6, dtype=lg.float32)
    tt = torch.from_dlpack(t)
    tt[0] = 9
    assert t[0].item() == 9
    back = lg.from_dlpack(torch.ones(3))
    assert back.tolist() == [1.0, 1.0, 1.0]


def test_conversions() -> None:
    x = lg.tensor([1.7, -2.2])
    assert x.long().tolist() == [1, -2] and x.long().dtype == lg.int64
    assert x.int().dtype == lg.int32 and x.double().dtype == lg.float64 and x.half().dtype == lg.float16
    assert x.bool().dtype == lg.bool and x.float() is x
    assert x.to(lg.float64).dtype == lg.float64 and x.to("cpu") is x and x.cpu() is x
    assert x.to(lg.zeros(1, dtype=lg.int32)).dtype == lg.int32
    assert float(lg.tensor(2.5)) == 2.5 and int(lg.tensor(3)) == 3


def test_clone_and_contiguous() -> None:
    x = lg.arange(6).reshape(2, 3)
    c = x.clone()
    c[0, 0] = 100
    assert x[0, 0].item() == 0
    t = x.T
    assert not t.is_contiguous() and t.contiguous().is_contiguous()


@needs_torch
@pytest.mark.parametrize("make", [
    lambda T: T.tensor([1.0, 2.5, -3.0]),
    lambda T: T.tensor([[1.0, 2.0], [3.0, 4.0]]),
    lambda T: T.tensor([1, 2, 3]),
    lambda T: T.tensor([True, False]),
    lambda T: T.tensor(2.5),
    lambda T: T.tensor([0.001, 12.5]),
    lambda T: T.tensor([1.0, 2.0], dtype=T.float64),
    lambda T: T.tensor([1.0, 2.0], requires_grad=True),
    lambda T: T.tensor([1, 2], dtype=T.int32),
])
def test_repr_matches_torch(make) -> None:
    assert repr(make(lg)).replace("lightgrad.", "torch.") == repr(make(torch))


def test_manual_seed_reproducible() -> None:
    lg.manual_seed(123)
    a = lg.randn(5), lg.rand(3), lg.randint(0, 10, (4,)), lg.randperm(6)
    lg.manual_seed(123)
    b = lg.randn(5), lg.rand(3), lg.randint(0, 10, (4,)), lg.randperm(6)
    for x, y in zip(a, b):
        assert x.tolist() == y.tolist()
    g = lg.Generator().manual_seed(1)
    assert lg.rand(2, generator=g).tolist() == lg.rand(2, generator=lg.Generator().manual_seed(1)).tolist()


def test_rng_state_roundtrip() -> None:
    lg.manual_seed(0)
    state = lg.get_rng_state()
    a = lg.randn(4).tolist()
    lg.set_rng_state(state)
    assert lg.randn(4).tolist() == a


def test_creation_functions() -> None:
    assert lg.zeros_like(lg.ones(2, 3, dtype=lg.int32)).dtype == lg.int32
    assert lg.ones_like(lg.ones(2)).tolist() == [1.0, 1.0]
    assert lg.full_like(lg.ones(2), 3.0).tolist() == [3.0, 3.0]
    assert lg.empty(2, 3).shape == (2, 3) and lg.empty_like(lg.ones(4)).shape == (4,)
    np.testing.assert_allclose(lg.linspace(0, 1, 5).numpy(), np.linspace(0, 1, 5), rtol=1e-6)
    assert lg.eye(2).tolist() == [[1.0, 0.0], [0.0, 1.0]]
    assert lg.arange(1, 7, 2).tolist() == [1, 3, 5]
    assert lg.zeros((2, 3)).shape == (2, 3) and lg.ones([4]).shape == (4,)
    r = lg.randn(2, 3, requires_grad=True)
    assert r.requires_grad and r.is_leaf


# sizes PyTorch's creation functions refuse, with its exception type and words (the whole message;
# PyTorch's must be the same, where it is installed)
_CREATION_ERRORS = [
    ("empty_float", lambda T: T.empty(2.5), TypeError,
     "empty(): argument 'size' (position 1) must be tuple of ints, not float"),
    ("zeros_float_entry", lambda T: T.zeros(2, 2.5), TypeError,
     "zeros(): argument 'size' failed to unpack the object at pos 2 with error \"type must be tuple of ints,but got "
     "float\""),
    ("zeros_float_in_list", lambda T: T.zeros([3, 2, 2.5]), TypeError,
     "zeros(): argument 'size' failed to unpack the object at pos 3 with error \"type must be tuple of ints,but got "
     "float\""),
    ("ones_float_first", lambda T: T.ones((2.5,)), TypeError,
     "ones(): argument 'size' (position 1) must be tuple of ints, but found element of type float at pos 0"),
    ("zeros_bool", lambda T: T.zeros(True), TypeError, "zeros(): argument 'size' (position 1) must be tuple of ints, not bool"),
    ("zeros_float_tensor", lambda T: T.zeros(T.tensor(2.0)), TypeError,
     "zeros(): argument 'size' (position 1) must be tuple of ints, not Tensor"),
    ("zeros_float_then_int", lambda T: T.zeros(2.5, 2), TypeError, "zeros() takes 1 positional argument but 2 were given"),
    ("full_int_size", lambda T: T.full(2, 1.0), TypeError, "full(): argument 'size' (position 1) must be tuple of ints, not int"),
    ("new_zeros_float", lambda T: T.ones(2).new_zeros(2.5), TypeError,
     "new_zeros(): argument 'size' (position 1) must be tuple of ints, not float"),
    ("empty_negative", lambda T: T.empty(-1), RuntimeError, "Trying to create tensor with negative dimension -1: [-1]"),
    ("ones_negative", lambda T: T.ones(-2, 3), RuntimeError, "Trying to create tensor with negative dimension -2: [-2, 3]"),
    ("zeros_negative", lambda T: T.zeros(2, -1), RuntimeError, "zeros: Dimension size must be non-negative."),
    ("full_negative", lambda T: T.full((-1,), 1.0), RuntimeError, "Trying to create tensor with negative dimension -1: [-1]"),
    ("new_empty_negative", lambda T: T.ones(2).new_empty((2, -3)), RuntimeError,
     "Trying to create tensor with negative dimension -3: [2, -3]"),
    ("new_zeros_negative", lambda T: T.ones(2).new_zeros(-1), RuntimeError,
     "Trying to create tensor with negative dimension -1: [-1]"),
    ("zeros_overflow", lambda T: T.zeros(2**62), RuntimeError,
     "Storage size calculation overflowed with sizes=[4611686018427387904]"),
    ("empty_overflow_2d", lambda T: T.empty(2**31, 2**31), RuntimeError,
     "Storage size calculation overflowed with sizes=[2147483648, 2147483648]"),
    ("new_ones_overflow", lambda T: T.ones(2, dtype=T.float64).new_ones(2**61), RuntimeError,
     "Storage size calculation overflowed with sizes=[2305843009213693952]"),
    # 4 EiB: more than any address space, so the allocation fails on every machine
    ("empty_unallocatable", lambda T: T.empty(2**62, dtype=T.uint8), RuntimeError,
     "[enforce fail at alloc_cpu.cpp:127] err == 0. DefaultCPUAllocator: can't allocate memory: you tried to "
     "allocate 4611686018427387904 bytes. Error code 12 (Cannot allocate memory)"),
    ("eye_negative", lambda T: T.eye(-1), RuntimeError, "n must be greater or equal to 0, got -1"),
    ("eye_negative_m", lambda T: T.eye(2, -1), RuntimeError, "m must be greater or equal to 0, got -1"),
    ("eye_float", lambda T: T.eye(2.5), TypeError, "eye(): argument 'n' (position 1) must be int, not float"),
    ("arange_step_sign", lambda T: T.arange(0, 10, -1), RuntimeError,
     "upper bound and lower bound inconsistent with step sign"),
    ("arange_backwards", lambda T: T.arange(-1), RuntimeError, "upper bound and lower bound inconsistent with step sign"),
    ("arange_nan", lambda T: T.arange(0, float("nan")), RuntimeError, "unsupported range: 0 -> nan"),
    ("arange_inf", lambda T: T.arange(1.5, float("inf")), RuntimeError, "unsupported range: 1.5 -> inf"),
    ("arange_step_zero", lambda T: T.arange(0, 1, 0), RuntimeError, "step must be nonzero"),
    ("arange_overflow", lambda T: T.arange(0, 2**62), RuntimeError,
     "Storage size calculation overflowed with sizes=[4611686018427387904]"),
    ("arange_size", lambda T: T.arange(0, 1e300), RuntimeError, "invalid size, possible overflow?"),
    ("linspace_negative", lambda T: T.linspace(0, 1, -1), RuntimeError, "number of steps must be non-negative"),
    ("logspace_negative", lambda T: T.logspace(0, 1, -2), RuntimeError, "number of steps must be non-negative"),
    # the samplers read their sizes the same way
    ("rand_negative", lambda T: T.rand(-1), RuntimeError, "Trying to create tensor with negative dimension -1: [-1]"),
    ("rand_negative_2d", lambda T: T.rand(2, -3), RuntimeError,
     "Trying to create tensor with negative dimension -3: [2, -3]"),
    ("randn_float", lambda T: T.randn(2.5), TypeError, "randn(): argument 'size' (position 1) must be tuple of ints, not float"),
    ("randn_float_entry", lambda T: T.randn((2, 2.0)), TypeError,
     "randn(): argument 'size' failed to unpack the object at pos 2 with error \"type must be tuple of ints,but got "
     "float\""),
    ("randn_overflow", lambda T: T.randn(2**62, 4), RuntimeError,
     "Storage size calculation overflowed with sizes=[4611686018427387904, 4]"),
    ("randint_negative", lambda T: T.randint(0, 5, (-1,)), RuntimeError,
     "Trying to create tensor with negative dimension -1: [-1]"),
    ("randint_empty_range", lambda T: T.randint(5, 0, (3,)), RuntimeError,
     "random_ expects 'from' to be less than 'to', but got from=5 >= to=0"),
    ("randperm_negative", lambda T: T.randperm(-1), RuntimeError, "Trying to create tensor with negative dimension -1: [-1]"),
]


@pytest.mark.parametrize("name,fn,exc,text", _CREATION_ERRORS, ids=[e[0] for e in _CREATION_ERRORS])
def test_creation_errors_are_pytorchs(name: str, fn, exc: type[Exception], text: str) -> None:
    with pytest.raises(exc) as info:
        fn(lg)
    assert type(info.value) is exc and str(info.value) == text, f"{name}: {info.value!r}"
    if torch is not None:
        with pytest.raises(exc) as theirs:
            fn(torch)
        assert type(theirs.value) is exc and str(theirs.value) == text, f"{name}: torch says {theirs.value!r}"


@pytest.mark.parametrize("make,shape", [
    (lambda T: T.zeros(size=(2, 3)), (2, 3)), (lambda T: T.empty(size=[2, 3]), (2, 3)),
    (lambda T: T.ones(2, True), (2, 1)), (lambda T: T.zeros(np.int64(2), T.tensor(3)), (2, 3)),
    (lambda T: T.full(T.Size([2, 3]), 1.5), (2, 3)), (lambda T: T.zeros(0, 3), (0, 3)),
    (lambda T: T.ones(2).new_full([2, 3], 7), (2, 3)), (lambda T: T.arange(5, 5, -1), (0,)),
    (lambda T: T.eye(0, 3), (0, 3)), (lambda T: T.linspace(0, 1, 0), (0,)),
    (lambda T: T.randint(3, (2,)), (2,)), (lambda T: T.randint(1, 3, (2, 2)), (2, 2)), (lambda T: T.randn([2, 3]), (2, 3)),
    (lambda T: T.rand(()), ()), (lambda T: T.randperm(0), (0,)),
])
def test_creation_sizes_pytorch_accepts(make, shape: tuple[int, ...]) -> None:
    assert tuple(make(lg).shape) == shape
    if torch is not None:
        assert tuple(make(torch).shape) == shape


def test_cat_is_a_new_tensor() -> None:
    x = lg.ones(2, 3)
    y = lg.cat([x])
    y.add_(1)  # (cat of one tensor is a copy, as PyTorch's, not the tensor itself)
    assert y is not x and x.tolist() == [[1.0] * 3] * 2


def test_device_api_answers_truthfully() -> None:
    assert lg.cuda.is_available() is False and lg.cuda.device_count() == 0
    assert lg.accelerator.is_available() is False and lg.accelerator.current_accelerator() is None
    lg.cuda.manual_seed_all(0)
    lg.backends.cudnn.benchmark = True
    assert lg.backends.mps.is_available() is False
    lg.set_default_device("cpu")
    with pytest.raises(RuntimeError, match="CPU only"):
        lg.device("cuda")
    with pytest.raises(RuntimeError):
        lg.ones(2, device="cuda")
    assert lg.ones(2, device="cpu").device.type == "cpu"
    scaler = lg.amp.GradScaler(enabled=False)
    loss = lg.tensor(2.0)
    assert scaler.scale(loss) is loss
    with lg.autocast("cpu", enabled=False):
        assert (lg.ones(2) * 2).dtype == lg.float32


def test_numpy_functions_accept_tensors() -> None:
    t = lg.tensor([1.0, 4.0])
    assert float(np.mean(t)) == 2.5
    assert isinstance(np.sqrt(t), lg.Tensor)
    np.testing.assert_allclose(np.asarray(t), [1.0, 4.0])


def test_functional_namespace() -> None:
    x = lg.tensor([[1.0, -2.0], [3.0, 4.0]])
    assert lg.sum(x).item() == 6.0 and lg.exp(lg.zeros(1)).item() == 1.0
    assert lg.max(x).item() == 4.0 and lg.max(x, 1).indices.tolist() == [0, 1]
    assert lg.maximum(x, lg.zeros(2)).tolist() == [[1.0, 0.0], [3.0, 4.0]]
    assert lg.where(x > 0, x, lg.zeros(1)).tolist() == [[1.0, 0.0], [3.0, 4.0]]
    assert lg.is_tensor(x) and lg.numel(x) == 4


# ---- dtype information: finfo, iinfo, Size -------------------------------------------------------

@needs_torch
@pytest.mark.parametrize("name", ["float16", "float32", "float64", None])
def test_finfo_matches_torch(name: Any) -> None:
    a = lg.finfo(getattr(lg, name)) if name else lg.finfo()
    b = torch.finfo(getattr(torch, name)) if name else torch.finfo()
    assert repr(a) == repr(b)
    for k in ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution", "dtype"):
        assert getattr(a, k) == getattr(b, k), k


@needs_torch
@pytest.mark.parametrize("name", ["uint8", "int8", "int16", "int32", "int64"])
def test_iinfo_matches_torch(name: str) -> None:
    a, b = lg.iinfo(getattr(lg, name)), torch.iinfo(getattr(torch, name))
    assert repr(a) == repr(b) and (a.bits, a.max, a.min, a.dtype) == (b.bits, b.max, b.min, b.dtype)


@needs_torch
@pytest.mark.parametrize("call", [lambda T: T.finfo(T.int32), lambda T: T.iinfo(T.float32), lambda T: T.iinfo(T.bool)])
def test_finfo_and_iinfo_refuse_other_kinds_as_torch(call: Callable[[Any], Any]) -> None:
    msgs = []
    for T in (torch, lg):
        with pytest.raises(TypeError) as e:
            call(T)
        msgs.append(str(e.value))
    assert msgs[1] == msgs[0]


@needs_torch
def test_size_arithmetic_stays_a_size() -> None:
    for make in (lambda s: s + (5,), lambda s: (1,) + s, lambda s: s * 2, lambda s: 2 * s):
        a, b = make(lg.Size([2, 3, 4])), make(torch.Size([2, 3, 4]))
        assert type(a) is lg.Size and type(b) is torch.Size and tuple(a) == tuple(b)
    assert type(lg.Size([2, 3])[0]) is int


@needs_torch
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


# ---- the legacy constructor, small methods, sampling methods -------------------------------------

@needs_torch
def test_new_legacy_constructor() -> None:
    x = lg.ones(2, 3, dtype=lg.float64)
    for args in [(), (4,), (2, 5), ((3, 1),)]:
        r = x.new(*(lg.Size(a) if isinstance(a, tuple) else a for a in args))
        t = torch.ones(2, 3).new(*(torch.Size(a) if isinstance(a, tuple) else a for a in args))
        assert r.dtype == lg.float64 and tuple(r.shape) == tuple(t.shape), args


@needs_torch
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


# ---- shape functions -----------------------------------------------------------------------------

@needs_torch
@pytest.mark.parametrize("row,col,offset", [(3, 3, 0), (4, 3, 1), (3, 5, -2), (0, 3, 0), (2, 2, 5)])
def test_tri_indices(row: int, col: int, offset: int) -> None:
    for name in ("tril_indices", "triu_indices"):
        assert_like_torch(getattr(lg, name)(row, col, offset), getattr(torch, name)(row, col, offset))
    assert_like_torch(lg.tril_indices(row, col, offset, dtype=lg.int32), torch.tril_indices(row, col, offset,
                                                                                            dtype=torch.int32))


@needs_torch
def test_atleast_and_stacks() -> None:
    xs = [np.array(1.5), np.arange(3.0), np.ones((2, 2)), np.ones((2, 1, 2))]
    for name in ("atleast_1d", "atleast_2d", "atleast_3d"):
        f, g = getattr(lg, name), getattr(torch, name)
        for x in xs:
            assert_like_torch(f(lg.tensor(x)), g(torch.tensor(x)))
        lo, to = f(*[lg.tensor(x) for x in xs]), g(*[torch.tensor(x) for x in xs])
        assert isinstance(lo, tuple) and len(lo) == len(to)
        for a, b in zip(lo, to):
            assert_like_torch(a, b)
        lo1, to1 = f([lg.tensor(xs[0])]), g([torch.tensor(xs[0])])
        assert isinstance(lo1, tuple) and isinstance(to1, tuple)
        assert_like_torch(lo1[0], to1[0])
    assert_like_torch(lg.column_stack([lg.tensor(1.0), lg.tensor([2.0])]), torch.column_stack([torch.tensor(1.0),
                                                                                              torch.tensor([2.0])]))


@needs_torch
@pytest.mark.parametrize("name,shape,arg", [("hsplit", (2, 6), 3), ("hsplit", (6,), [2, -1, 10]),
                                            ("hsplit", (2, 5), [4, 2]), ("vsplit", (4, 2), [1]),
                                            ("dsplit", (1, 2, 4), 2), ("vsplit", (0, 2), 2)])
def test_splits(name: str, shape: tuple[int, ...], arg: Any) -> None:
    x = np.arange(math.prod(shape), dtype=np.float64).reshape(shape)
    lo, to = getattr(lg.tensor(x), name)(arg), getattr(torch.tensor(x), name)(arg)
    assert len(lo) == len(to)
    for a, b in zip(lo, to):
        assert_like_torch(a, b)
    lo2 = getattr(lg, name)(lg.tensor(x), arg)
    assert [tuple(t.shape) for t in lo2] == [tuple(t.shape) for t in to]


@needs_torch
def test_misc_shape_helpers() -> None:
    b = np.array([True, False, False, True])
    assert_like_torch(lg.tensor(b).diff(), torch.tensor(b).diff())
    i = np.array([[1, 4, 9, 16], [2, 3, 5, 7]])
    assert_like_torch(lg.tensor(i).diff(n=3), torch.tensor(i).diff(n=3))
    assert_like_torch(lg.tensor(i).diff(n=5), torch.tensor(i).diff(n=5))
    assert_like_torch(lg.tensor(i).tile((2, 1, 1)), torch.tensor(i).tile((2, 1, 1)))
    assert_like_torch(lg.kron(lg.tensor(i), lg.tensor([1, -1])), torch.kron(torch.tensor(i), torch.tensor([1, -1])))
    assert_like_torch(lg.tensordot(lg.tensor(i * 1.0), lg.tensor(np.array([1.0, 2.0])), dims=0),
                      torch.tensordot(torch.tensor(i * 1.0), torch.tensor(np.array([1.0, 2.0])), dims=0))
    assert_like_torch(lg.cartesian_prod(lg.tensor([1, 2])), torch.cartesian_prod(torch.tensor([1, 2])))
    assert_like_torch(lg.block_diag(lg.tensor([[1, 2]]), lg.tensor(3.0)), torch.block_diag(torch.tensor([[1, 2]]),
                                                                                           torch.tensor(3.0)))
    x = np.arange(24.0).reshape(2, 3, 4)
    for k in range(-5, 6):
        assert_like_torch(lg.tensor(x).rot90(k, (2, 0)), torch.tensor(x).rot90(k, (2, 0)))
    assert_like_torch(lg.tensor([1.0, 2.0, 3.0]).cross(lg.tensor([4.0, 5.0, 6.0])),
                      torch.tensor([1.0, 2.0, 3.0]).cross(torch.tensor([4.0, 5.0, 6.0]), dim=0))
    c1, c2 = np.arange(12.0).reshape(2, 2, 3), np.ones((1, 2, 3))
    assert_like_torch(lg.linalg.cross(lg.tensor(c1), lg.tensor(c2)), torch.linalg.cross(torch.tensor(c1),
                                                                                        torch.tensor(c2)))
    assert_like_torch(lg.tensor(np.arange(6.0)).reshape(2, 3).diag_embed(2, 0, 1),
                      torch.tensor(np.arange(6.0)).reshape(2, 3).diag_embed(2, 0, 1))
    assert_like_torch(lg.tensor(3.0).diagflat(), torch.tensor(3.0).diagflat())
    assert lg.tensor([0.0]).is_nonzero() is torch.tensor([0.0]).is_nonzero() is False
    assert lg.tensor([[2]]).is_nonzero() is True
    with pytest.raises(RuntimeError, match="no values"):
        lg.tensor([]).is_nonzero()
    assert lg.ones(2, 3).is_same_size(lg.zeros(2, 3)) and not lg.ones(2, 3).is_same_size(lg.ones(3, 2))
    for dt in ("float32", "int64", "uint8", "bool", "int8"):
        assert lg.ones(1, dtype=getattr(lg, dt)).is_signed() == torch.ones(1, dtype=getattr(torch, dt)).is_signed()
