"""Tensor API behaviour: creation, dtypes and promotion, interop, printing, devices."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from helpers import torch

import lightgrad as lg

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch not installed")


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
    with pytest.raises(TypeError, match="complex"):
        lg.from_numpy(np.zeros(2, np.complex64))


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
