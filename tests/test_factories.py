"""Factory signatures against PyTorch's: positional sizes, a tuple, a list, a Size, ``size=``,
``out=``, the dtype/device/requires_grad/layout/pin_memory/memory_format keywords, and PyTorch's
TypeErrors for wrong calls; the memory-format constants and ``is_contiguous(memory_format=)``."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import lightgrad as lg

torch = pytest.importorskip("torch")

# each case is one expression over T (torch or lightgrad) and x = T.zeros(2, 3)
CASES = [
    "T.empty(size=(3, 4))", "T.empty(3, 4)", "T.empty((3, 4))", "T.empty([3, 4])", "T.empty(T.Size([3, 4]))",
    "T.empty()", "T.zeros()", "T.zeros(size=(3, 4))", "T.zeros(size=[3])", "T.ones(size=(2,))",
    "T.zeros(2, 3, dtype=T.float64)", "T.zeros(2, requires_grad=True)", "T.zeros(2, layout=T.strided)",
    "T.zeros(2, pin_memory=False)", "T.zeros(2, device='cpu')", "T.ones(2, 3, device=T.device('cpu'))",
    "T.empty(2, memory_format=T.contiguous_format)", "T.empty(2, 3, 4, 5, memory_format=T.channels_last)",
    "T.empty(2, memory_format=T.channels_last)", "T.zeros(2, memory_format=T.channels_last)",
    "T.zeros(2, 3, size=(3,))", "T.zeros(2, foo=1)", "T.zeros(2.0)", "T.zeros('a')", "T.zeros((2, 3.0))",
    "T.zeros(2, out=T.empty(2))", "T.ones(2, out=T.empty(2, dtype=T.int64))", "T.empty(2, out=T.empty(2))",
    "T.full((2, 3), 1.5)", "T.full(size=(2, 3), fill_value=1)", "T.full([2], 1, dtype=T.float32)", "T.full(2, 1)",
    "T.full((2,), 1, layout=T.strided)", "T.full((2,), True)", "T.full((2,), 3, out=T.empty(2))",
    "T.arange(5)", "T.arange(1, 5, 2)", "T.arange(start=1, end=5)", "T.arange(end=5)", "T.arange(5, dtype=T.float32)",
    "T.arange(0, 1, 0.25)", "T.arange(5.0, requires_grad=True)", "T.arange(5, layout=T.strided)",
    "T.arange(5, out=T.empty(5, dtype=T.int64))",
    "T.linspace(0, 1, 5)", "T.linspace(0, 1, steps=5)", "T.linspace(start=0, end=1, steps=5)",
    "T.linspace(0, 1, 5, dtype=T.float64)", "T.logspace(0, 1, 5)", "T.logspace(0, 1, 5, base=2)",
    "T.logspace(0, 1, steps=3, dtype=T.float64)", "T.linspace(0, 1, 5, requires_grad=True)",
    "T.linspace(0, 1, 3, out=T.empty(3))",
    "T.eye(3)", "T.eye(2, 3)", "T.eye(n=3)", "T.eye(3, m=2)", "T.eye(3, dtype=T.int64)", "T.eye(3, requires_grad=True)",
    "T.eye(3, layout=T.strided)", "T.eye(3, out=T.empty(3, 3))",
    "T.empty_like(x)", "T.zeros_like(x, dtype=T.int64)", "T.ones_like(x, requires_grad=True)", "T.full_like(x, 7)",
    "T.full_like(x, 7, dtype=T.int32)", "T.zeros_like(x, memory_format=T.preserve_format)",
    "T.zeros_like(x, layout=T.strided)", "T.zeros_like(input=x)", "T.full_like(x, fill_value=2)",
    "T.zeros_like(x, foo=1)", "T.empty_like(x, memory_format=T.channels_last)",
    "x.new_empty((2, 3))", "x.new_empty(2, 3)", "x.new_zeros(size=(2,))", "x.new_ones(3, dtype=T.int64)",
    "x.new_full((2,), 3)", "x.new_full(size=(2,), fill_value=3)", "x.new_tensor([1, 2])",
    "x.new_tensor([1, 2], requires_grad=True)", "x.new_zeros(2, layout=T.strided)", "x.new_empty(2, pin_memory=False)",
    "x.new_zeros([2, 3])", "x.new_zeros()", "x.new_ones(T.Size([2]))", "x.new_zeros(2, foo=1)",
    "T.empty_strided((2, 3), (3, 1))", "T.empty_strided(size=(2, 3), stride=(1, 2))",
    "T.empty_strided((2, 3), (3, 1), dtype=T.float64)",
    "T.tensor([1, 2], dtype=T.float32, requires_grad=True)", "T.tensor(data=[1])",
    "T.tensor([1.0], device='cpu', pin_memory=False)", "T.as_tensor([1, 2], dtype=T.float32)",
    "T.as_tensor(data=[1], device='cpu')", "T.from_numpy(np.zeros(3))",
]


def _outcome(T: Any, code: str) -> tuple[Any, ...]:
    x = T.zeros(2, 3)
    try:
        r = eval(code, {"T": T, "x": x, "np": np})  # noqa: S307 - the table's own expressions
    except (TypeError, RuntimeError, ValueError) as e:
        return type(e).__name__, str(e).split("\n")[0]
    return "ok", tuple(r.shape), str(r.dtype).split(".")[-1], r.requires_grad, r.stride() if "strided" in code else None


@pytest.mark.parametrize("code", CASES)
def test_factory_call_matches_pytorch(code: str) -> None:
    assert _outcome(lg, code) == _outcome(torch, code)


@pytest.mark.parametrize("code", ["T.zeros(2, out=o)", "T.arange(3, out=o)", "T.full((2,), 4.0, out=o)"])
def test_out_is_written_and_returned(code: str) -> None:
    for T in (torch, lg):
        o = T.ones(2) if "arange" not in code else T.ones(3)
        r = eval(code, {"T": T, "o": o})  # noqa: S307
        assert r is o
    assert lg.zeros(2, out=(o := lg.ones(2))).tolist() == [0.0, 0.0] and o.tolist() == [0.0, 0.0]


# ---- layouts, memory formats, device-kind attributes ---------------------------------------------
ATTRIBUTES = ["is_cuda", "is_cpu", "is_xpu", "is_mps", "is_meta", "is_quantized", "is_sparse", "is_nested",
              "is_mkldnn", "is_vulkan", "is_ipu", "is_maia", "is_sparse_csr"]


@pytest.mark.parametrize("name", ATTRIBUTES)
def test_tensor_kind_attributes_match_pytorch_cpu(name: str) -> None:
    assert getattr(lg.zeros(2), name) is getattr(torch.zeros(2), name)


def test_layout_and_memory_format_constants() -> None:
    import copy
    import pickle
    assert lg.zeros(2).layout is lg.strided and repr(lg.strided) == repr(torch.strided) == "torch.strided"
    for name in ("strided", "sparse_coo", "contiguous_format", "channels_last", "channels_last_3d", "preserve_format"):
        ours, theirs = getattr(lg, name), getattr(torch, name)
        assert repr(ours) == repr(theirs)
        assert pickle.loads(pickle.dumps(ours)) is ours and copy.deepcopy(ours) is ours


# shapes and a permutation making the strides (None: row-major)
STRIDED = [((2, 3, 4, 5), None), ((2, 1, 4, 5), None), ((2, 3, 1, 1), None), ((1, 3, 4, 5), None),
           ((1, 1, 1, 1), None), ((3, 4, 5), None), ((2, 3, 4, 5, 6), None), ((2, 1, 4, 5, 6), None),
           ((2, 3, 4, 5), (0, 2, 3, 1)), ((2, 3, 4, 5, 6), (0, 2, 3, 4, 1)), ((2, 3, 4, 5), (0, 1, 3, 2))]


@pytest.mark.parametrize("shape, perm", STRIDED)
def test_is_contiguous_memory_format_matches_pytorch(shape: tuple[int, ...], perm: Any) -> None:
    def make(T: Any) -> Any:
        x = T.zeros(shape)
        if perm is None:
            return x
        inverse = [perm.index(i) for i in range(len(perm))]
        stored = [shape[p] for p in perm]
        return T.zeros(stored).permute(*inverse)
    for fmt in ("contiguous_format", "channels_last", "channels_last_3d", "preserve_format"):
        ours = make(lg).is_contiguous(memory_format=getattr(lg, fmt))
        assert ours == make(torch).is_contiguous(memory_format=getattr(torch, fmt)), fmt


@pytest.mark.parametrize("code", [
    "x4.contiguous(memory_format=T.channels_last)", "x2.contiguous(memory_format=T.channels_last)",
    "x4.contiguous(memory_format=T.channels_last_3d)", "x4.contiguous(memory_format=3)",
    "x4.contiguous(T.channels_last)", "x2.clone(memory_format=T.channels_last)",
    "x2.to(memory_format=T.channels_last_3d)", "x2.to(T.float64, memory_format=T.preserve_format)",
    "x2.is_contiguous(memory_format=3)", "x4.contiguous(memory_format=T.preserve_format)",
])
def test_memory_format_arguments_match_pytorch(code: str) -> None:
    def run(T: Any) -> Any:
        try:
            r = eval(code, {"T": T, "x4": T.ones(2, 3, 4, 5), "x2": T.ones(3, 4)})  # noqa: S307
        except (TypeError, RuntimeError) as e:  # (Python words a method's arity error its own way)
            return type(e).__name__, "arity" if "positional argument" in str(e) else str(e)
        return tuple(r.shape), str(r.dtype).split(".")[-1], float(r.sum())
    assert run(lg) == run(torch)


def test_model_to_channels_last_is_accepted_with_values_unchanged() -> None:
    m = lg.nn.Conv2d(3, 4, 3)
    x = lg.randn(1, 3, 5, 5)
    before = m(x).detach().numpy()
    assert m.to(memory_format=lg.channels_last) is m
    np.testing.assert_array_equal(m(x.contiguous(memory_format=lg.channels_last)).detach().numpy(), before)


def test_out_of_memory_error_is_pytorchs_shape() -> None:
    assert issubclass(lg.cuda.OutOfMemoryError, RuntimeError) and lg.cuda.OutOfMemoryError is lg.OutOfMemoryError
    assert issubclass(torch.cuda.OutOfMemoryError, RuntimeError)
    with pytest.raises(RuntimeError):
        try:
            raise lg.cuda.OutOfMemoryError("CUDA out of memory")
        except lg.cuda.OutOfMemoryError:
            raise


def test_float32_matmul_precision_as_pytorch() -> None:
    try:
        for T in (torch, lg):
            T.set_float32_matmul_precision("high")
        assert lg.get_float32_matmul_precision() == torch.get_float32_matmul_precision() == "high"
        assert lg.backends.cuda.matmul.allow_tf32 is torch.backends.cuda.matmul.allow_tf32 is True
    finally:
        for T in (torch, lg):
            T.set_float32_matmul_precision("highest")
