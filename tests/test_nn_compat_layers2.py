"""Layers PyTorch vision/recsys code uses, checked against PyTorch: Conv3d/ConvTranspose3d
(F.conv3d, F.conv_transpose3d), EmbeddingBag (F.embedding_bag), InstanceNorm3d and instance norms
tracking running statistics, the Lazy modules, and nn.utils.weight_norm / spectral_norm.

Outputs and every gradient are compared with PyTorch's in float64 (tight) and float32 on the same
inputs and upstream gradient; the 3-D convolutions' float64 gradients also against central finite
differences. State dicts go both ways; errors match PyTorch's exception types and leave no change.
"""

from __future__ import annotations

import random
import warnings
from typing import Any

import numpy as np
import pytest
from helpers import numeric_grads

import lightgrad as lg
import lightgrad.nn.functional as LF
from lightgrad.nn.parameter import UninitializedParameter, is_lazy

torch = pytest.importorskip("torch")
TF = torch.nn.functional
# a lazy instance norm without affine or running stats stays InstanceNorm(0), which warns on every call
pytestmark = pytest.mark.filterwarnings("ignore:input's size at dim")

TOL = {"float64": dict(rtol=1e-10, atol=1e-10), "float32": dict(rtol=2e-4, atol=2e-4)}


def _np(t: Any) -> np.ndarray:
    return t.detach().numpy() if t is not None else None


def _close(a: Any, b: Any, dtype: str, what: str = "") -> None:
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), err_msg=what, **TOL[dtype])


def _compare_fn(lg_fn: Any, t_fn: Any, arrays: list[np.ndarray | None], dtype: str, rng: np.random.Generator,
                **kw: Any) -> None:
    """Same float inputs (None kept) through both functions: outputs and all input gradients."""
    ts = [None if a is None else torch.tensor(a.astype(dtype), requires_grad=True) for a in arrays]
    ls = [None if a is None else lg.tensor(a.astype(dtype), requires_grad=True) for a in arrays]
    to, lo = t_fn(*ts, **kw), lg_fn(*ls, **kw)
    assert tuple(lo.shape) == tuple(to.shape), (kw, lo.shape, to.shape)
    _close(_np(lo), _np(to), dtype, f"output {kw}")
    g = rng.standard_normal(tuple(to.shape)).astype(dtype)
    to.backward(torch.tensor(g))
    lo.backward(lg.tensor(g))
    for i, (t, lt) in enumerate(zip(ts, ls)):
        if t is not None:
            _close(_np(lt.grad), _np(t.grad), dtype, f"grad {i} {kw}")


def _to_lg(sd: dict[str, Any]) -> dict[str, Any]:
    return {k: lg.tensor(v.detach().numpy()) for k, v in sd.items()}


def _to_torch(sd: dict[str, Any]) -> dict[str, Any]:
    return {k: torch.tensor(v.numpy()) for k, v in sd.items()}


# ---- 3-D convolution: functional ---------------------------------------------------------------

def _conv3d_cases(n: int, seed: int) -> list[dict[str, Any]]:
    """Random valid geometries: groups, kernel, stride, padding, dilation per axis, (un)batched."""
    r = random.Random(seed)
    out = []
    while len(out) < n:
        g, cg, og = r.choice([1, 2]), r.choice([1, 2, 3]), r.choice([1, 2])
        k = tuple(r.choice([1, 2, 3]) for _ in range(3))
        s = tuple(r.choice([1, 2]) for _ in range(3))
        d = tuple(r.choice([1, 2]) for _ in range(3))
        p = tuple(r.choice([0, 1, 2]) for _ in range(3))
        sp = tuple(r.randint(max(1, d[i] * (k[i] - 1) + 1 - 2 * p[i]), 6) for i in range(3))
        batch = (2,) if r.random() < 0.7 else ()
        out.append(dict(x=batch + (g * cg,) + sp, w=(g * og, cg) + k, b=r.random() < 0.6, stride=s, padding=p,
                        dilation=d, groups=g))
    return out


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_conv3d_matches_torch(dtype: str) -> None:
    rng = np.random.default_rng(0)
    for c in _conv3d_cases(25, 1):
        arrays = [rng.standard_normal(c["x"]), rng.standard_normal(c["w"]),
                  rng.standard_normal(c["w"][0]) if c["b"] else None]
        _compare_fn(LF.conv3d, TF.conv3d, arrays, dtype, rng, stride=c["stride"], padding=c["padding"],
                    dilation=c["dilation"], groups=c["groups"])


@pytest.mark.parametrize("padding", ["same", "valid"])
def test_conv3d_string_padding(padding: str) -> None:
    rng = np.random.default_rng(1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # PyTorch warns about even kernels with 'same'
        for k, d, g in [((3, 3, 3), 1, 1), ((2, 3, 1), (1, 2, 3), 2), ((1, 2, 3), 2, 1)]:
            arrays = [rng.standard_normal((2, 2 * g, 5, 6, 7)), rng.standard_normal((2 * g, 2) + k),
                      rng.standard_normal(2 * g)]
            _compare_fn(LF.conv3d, TF.conv3d, arrays, "float64", rng, padding=padding, dilation=d, groups=g)


def _conv_t3d_cases(n: int, seed: int) -> list[dict[str, Any]]:
    r = random.Random(seed)
    out = []
    while len(out) < n:
        g, cg, og = r.choice([1, 2]), r.choice([1, 2, 3]), r.choice([1, 2])
        k = tuple(r.choice([1, 2, 3]) for _ in range(3))
        s = tuple(r.choice([1, 2, 3]) for _ in range(3))
        d = tuple(r.choice([1, 2]) for _ in range(3))
        p = tuple(r.choice([0, 1, 2]) for _ in range(3))
        op = tuple(r.randint(0, max(s[i], d[i]) - 1) for i in range(3))
        sp = tuple(r.randint(1, 4) for _ in range(3))
        size = [(sp[i] - 1) * s[i] - 2 * p[i] + d[i] * (k[i] - 1) + op[i] + 1 for i in range(3)]
        if min(size) <= 0:
            continue
        batch = (2,) if r.random() < 0.7 else ()
        out.append(dict(x=batch + (g * cg,) + sp, w=(g * cg, og) + k, b=r.random() < 0.6, stride=s, padding=p,
                        output_padding=op, groups=g, dilation=d))
    return out


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_conv_transpose3d_matches_torch(dtype: str) -> None:
    rng = np.random.default_rng(2)
    for c in _conv_t3d_cases(25, 3):
        arrays = [rng.standard_normal(c["x"]), rng.standard_normal(c["w"]),
                  rng.standard_normal(c["w"][1] * c["groups"]) if c["b"] else None]
        _compare_fn(LF.conv_transpose3d, TF.conv_transpose3d, arrays, dtype, rng, stride=c["stride"],
                    padding=c["padding"], output_padding=c["output_padding"], groups=c["groups"],
                    dilation=c["dilation"])


@pytest.mark.parametrize("fn, kw, shapes", [
    (LF.conv3d, dict(stride=(2, 1, 1), padding=(1, 0, 1), dilation=(1, 2, 1), groups=2),
     [(1, 2, 4, 5, 3), (2, 1, 2, 2, 2), (2,)]),
    (LF.conv_transpose3d, dict(stride=(2, 1, 2), padding=(1, 0, 0), output_padding=(1, 0, 0), dilation=(1, 1, 2)),
     [(1, 2, 2, 3, 2), (2, 2, 2, 2, 2), (2,)]),
])
def test_conv3d_finite_differences(fn: Any, kw: dict[str, Any], shapes: list[tuple[int, ...]]) -> None:
    rng = np.random.default_rng(4)
    xs = [rng.standard_normal(s) for s in shapes]
    ts = [lg.tensor(a, requires_grad=True) for a in xs]
    out = fn(*ts, **kw)
    r = rng.standard_normal(tuple(out.shape))
    out.backward(lg.tensor(r))
    num = numeric_grads(lambda *a: fn(*[lg.tensor(v) for v in a], **kw).numpy(), xs, r)
    for t, n in zip(ts, num):
        np.testing.assert_allclose(t.grad.numpy(), n, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("call", [
    lambda F, t: F.conv3d(t.randn(1, 2, 4, 4, 4), t.randn(3, 3, 3, 3, 3)),  # channels
    lambda F, t: F.conv3d(t.randn(1, 2, 2, 4, 4), t.randn(3, 2, 3, 3, 3)),  # kernel larger than input
    lambda F, t: F.conv3d(t.randn(1, 2, 3, 4, 4, 4), t.randn(3, 2, 3, 3, 3)),  # 6-D input
    lambda F, t: F.conv3d(t.randn(1, 4, 4, 4, 4), t.randn(3, 2, 3, 3, 3), groups=2),  # O % groups
    lambda F, t: F.conv3d(t.randn(1, 2, 4, 4, 4), t.randn(3, 2, 3, 3, 3), stride=2, padding="same"),
    lambda F, t: F.conv3d(t.randn(1, 2, 4, 4, 4), t.randn(3, 2, 3, 3, 3), stride=(1, 2)),
    lambda F, t: F.conv3d(t.randn(1, 2, 4, 4, 4), t.randn(3, 2, 3, 3, 3), padding=-1),
    lambda F, t: F.conv3d(t.randn(1, 2, 4, 4, 4, dtype=t.float64), t.randn(3, 2, 3, 3, 3)),
    lambda F, t: F.conv_transpose3d(t.randn(1, 2, 4, 4, 4), t.randn(3, 2, 3, 3, 3)),
    lambda F, t: F.conv_transpose3d(t.randn(1, 2, 4, 4, 4), t.randn(2, 2, 3, 3, 3), stride=2, output_padding=2),
    lambda F, t: F.conv_transpose3d(t.randn(1, 2, 1, 1, 1), t.randn(2, 2, 1, 1, 1), padding=1),
])
def test_conv3d_errors_match_torch(call: Any) -> None:
    with pytest.raises(Exception) as te:
        call(TF, torch)
    with pytest.raises(type(te.value)):
        call(LF, lg)


# ---- 3-D convolution: modules ------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("cls, kw, xshape", [
    ("Conv3d", dict(in_channels=2, out_channels=4, kernel_size=3), (2, 2, 5, 5, 5)),
    ("Conv3d", dict(in_channels=4, out_channels=2, kernel_size=(1, 3, 2), stride=(1, 2, 1), padding=(0, 1, 1),
                    groups=2, bias=False), (4, 4, 6, 5)),
    ("Conv3d", dict(in_channels=2, out_channels=3, kernel_size=3, padding="same", dilation=(1, 2, 1)),
     (1, 2, 4, 6, 5)),
    ("Conv3d", dict(in_channels=2, out_channels=3, kernel_size=2, padding="valid"), (1, 2, 3, 4, 3)),
    ("Conv3d", dict(in_channels=2, out_channels=2, kernel_size=3, padding=(1, 2, 1), padding_mode="reflect"),
     (1, 2, 4, 5, 4)),
    ("Conv3d", dict(in_channels=2, out_channels=2, kernel_size=3, padding=1, padding_mode="replicate",
                    stride=2), (2, 2, 5, 4, 4)),
    ("Conv3d", dict(in_channels=2, out_channels=2, kernel_size=(2, 3, 3), padding="same",
                    padding_mode="circular"), (2, 4, 5, 5)),
    ("ConvTranspose3d", dict(in_channels=2, out_channels=4, kernel_size=3, stride=2, padding=1,
                             output_padding=1), (2, 2, 3, 3, 2)),
    ("ConvTranspose3d", dict(in_channels=4, out_channels=2, kernel_size=(2, 1, 3), groups=2, dilation=(2, 1, 1),
                             bias=False), (4, 2, 3, 3)),
])
def test_conv3d_modules_match_torch(cls: str, kw: dict[str, Any], xshape: tuple[int, ...], dtype: str) -> None:
    rng = np.random.default_rng(5)
    tdt = getattr(torch, dtype)
    tm = getattr(torch.nn, cls)(**kw).to(tdt)
    lm = getattr(lg.nn, cls)(**kw).to(getattr(lg, dtype))
    assert repr(lm) == repr(tm)
    assert {k: tuple(v.shape) for k, v in lm.state_dict().items()} == \
        {k: tuple(v.shape) for k, v in tm.state_dict().items()}
    lm.load_state_dict(_to_lg(tm.state_dict()))
    x = rng.standard_normal(xshape).astype(dtype)
    tx, lx = torch.tensor(x, requires_grad=True), lg.tensor(x, requires_grad=True)
    to, lo = tm(tx), lm(lx)
    _close(_np(lo), _np(to), dtype)
    g = rng.standard_normal(tuple(to.shape)).astype(dtype)
    to.backward(torch.tensor(g))
    lo.backward(lg.tensor(g))
    _close(lx.grad.numpy(), tx.grad.numpy(), dtype)
    for name, p in tm.named_parameters():
        _close(getattr(lm, name).grad.numpy(), p.grad.numpy(), dtype, name)
    # and back: a fresh torch module loads lightgrad's state
    tm2 = getattr(torch.nn, cls)(**kw).to(tdt)
    tm2.load_state_dict(_to_torch(lm.state_dict()))
    _close(_np(tm2(torch.tensor(x))), _np(lo), dtype)


def test_conv_transpose3d_output_size() -> None:
    rng = np.random.default_rng(6)
    tm = torch.nn.ConvTranspose3d(2, 3, 3, stride=2, padding=1).double()
    lm = lg.nn.ConvTranspose3d(2, 3, 3, stride=2, padding=1).double()
    lm.load_state_dict(_to_lg(tm.state_dict()))
    x = rng.standard_normal((1, 2, 3, 3, 4))
    for size in [(5, 6, 8), (1, 3, 6, 5, 7)]:
        _close(_np(lm(lg.tensor(x), output_size=size)), _np(tm(torch.tensor(x), output_size=size)), "float64")
    with pytest.raises(ValueError):
        tm(torch.tensor(x), output_size=(9, 9, 9))
    with pytest.raises(ValueError):
        lm(lg.tensor(x), output_size=(9, 9, 9))


@pytest.mark.parametrize("cls, transposed", [("Conv3d", False), ("ConvTranspose3d", True)])
def test_conv3d_default_init(cls: str, transposed: bool) -> None:
    lg.manual_seed(0)
    m = getattr(lg.nn, cls)(6, 8, (2, 3, 3), groups=2)
    fan_in = m.weight.shape[1] * 18
    w, b = m.weight.detach().numpy(), m.bias.detach().numpy()
    assert m.weight.shape == ((6, 4, 2, 3, 3) if transposed else (8, 3, 2, 3, 3))
    bound = 1 / np.sqrt(fan_in)  # kaiming_uniform_(a=sqrt(5)) and the bias share this bound
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.9 * bound
    assert np.abs(b).max() <= bound and w.std() > 0.4 * bound


@pytest.mark.parametrize("kw", [
    dict(in_channels=3, out_channels=4, kernel_size=3, groups=2),
    dict(in_channels=4, out_channels=3, kernel_size=3, groups=2),
    dict(in_channels=2, out_channels=2, kernel_size=3, padding="full"),
    dict(in_channels=2, out_channels=2, kernel_size=3, padding="same", stride=2),
    dict(in_channels=2, out_channels=2, kernel_size=3, padding_mode="mirror"),
])
def test_conv3d_constructor_errors(kw: dict[str, Any]) -> None:
    with pytest.raises(Exception) as te:
        torch.nn.Conv3d(**kw)
    with pytest.raises(type(te.value)):
        lg.nn.Conv3d(**kw)


def test_conv_transpose3d_constructor_errors() -> None:
    with pytest.raises(ValueError):
        torch.nn.ConvTranspose3d(2, 2, 3, padding_mode="reflect")
    with pytest.raises(ValueError, match="padding mode"):
        lg.nn.ConvTranspose3d(2, 2, 3, padding_mode="reflect")
    # stricter than PyTorch, whose constructors accept these and fail later (or never)
    with pytest.raises(ValueError, match="string padding"):
        lg.nn.ConvTranspose3d(2, 2, 3, padding="same")
    with pytest.raises(RuntimeError, match="list of 3 values"):
        lg.nn.Conv3d(2, 2, (3, 3))


# ---- EmbeddingBag ------------------------------------------------------------------------------

def _bag_cases(n: int, seed: int) -> list[dict[str, Any]]:
    r = random.Random(seed)
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        num, dim = r.randint(1, 7), r.randint(1, 4)
        mode = r.choice(["sum", "mean", "max"])
        if r.random() < 0.3:
            idx, offs, last = rng.integers(0, num, (r.randint(0, 4), r.randint(1, 4))), None, False
        else:
            m, nb = r.randint(0, 10), r.randint(1, 5)
            idx = rng.integers(0, num, m)
            offs = np.sort(rng.integers(0, m + 1, nb))
            offs[0] = 0
            last = r.random() < 0.4 and nb > 1
            if last:  # (the CSR form: PyTorch's kernels disagree with each other past offsets[-1])
                offs[-1] = m
        psw = mode == "sum" and r.random() < 0.5
        out.append(dict(num=num, dim=dim, idx=idx, offs=offs, mode=mode, include_last_offset=last, psw=psw,
                        padding_idx=r.choice([None, None, 0, num - 1, -1])))
    return out


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_embedding_bag_matches_torch(dtype: str) -> None:
    rng = np.random.default_rng(7)
    for c in _bag_cases(120, 8):
        w = rng.standard_normal((c["num"], c["dim"])).astype(dtype)
        psw = rng.standard_normal(c["idx"].shape).astype(dtype) if c["psw"] else None
        tw, lw = torch.tensor(w, requires_grad=True), lg.tensor(w, requires_grad=True)
        tp = torch.tensor(psw, requires_grad=True) if psw is not None else None
        lp = lg.tensor(psw, requires_grad=True) if psw is not None else None
        kw = dict(mode=c["mode"], include_last_offset=c["include_last_offset"], padding_idx=c["padding_idx"])
        offs = c["offs"]
        to = TF.embedding_bag(torch.tensor(c["idx"]), tw, None if offs is None else torch.tensor(offs),
                              per_sample_weights=tp, **kw)
        lo = LF.embedding_bag(lg.tensor(c["idx"]), lw, None if offs is None else lg.tensor(offs),
                              per_sample_weights=lp, **kw)
        assert tuple(lo.shape) == tuple(to.shape)
        _close(_np(lo), _np(to), dtype, str(c))
        if not to.numel():
            continue
        g = rng.standard_normal(tuple(to.shape)).astype(dtype)
        to.backward(torch.tensor(g))
        lo.backward(lg.tensor(g))
        _close(lw.grad.numpy(), tw.grad.numpy(), dtype, str(c))
        if psw is not None:
            _close(lp.grad.numpy() if lp.grad is not None else np.zeros_like(psw), tp.grad.numpy(), dtype)


def test_embedding_bag_module_and_state_dict() -> None:
    rng = np.random.default_rng(9)
    for kw in [dict(mode="sum"), dict(mode="max", padding_idx=2), dict(include_last_offset=True)]:
        lg.manual_seed(0)
        tm, lm = torch.nn.EmbeddingBag(6, 3, **kw).double(), lg.nn.EmbeddingBag(6, 3, **kw).double()
        assert repr(lm) == repr(tm)
        if "padding_idx" in kw:
            assert not lm.weight.detach().numpy()[2].any()
        lm.load_state_dict(_to_lg(tm.state_dict()))
        idx, offs = rng.integers(0, 6, 9), np.array([0, 3, 3, 9] if kw.get("include_last_offset") else [0, 4, 4])
        to, lo = tm(torch.tensor(idx), torch.tensor(offs)), lm(lg.tensor(idx), lg.tensor(offs))
        _close(_np(lo), _np(to), "float64")
        to.sum().backward()
        lo.sum().backward()
        _close(lm.weight.grad.numpy(), tm.weight.grad.numpy(), "float64")
        tm2 = torch.nn.EmbeddingBag(6, 3, **kw).double()
        tm2.load_state_dict(_to_torch(lm.state_dict()))
        _close(_np(tm2.weight), _np(lm.weight), "float64")


def test_embedding_bag_from_pretrained() -> None:
    w = np.random.default_rng(10).standard_normal((5, 2))
    for freeze in [True, False]:
        tm = torch.nn.EmbeddingBag.from_pretrained(torch.tensor(w), freeze=freeze, mode="max")
        lm = lg.nn.EmbeddingBag.from_pretrained(lg.tensor(w), freeze=freeze, mode="max")
        assert lm.weight.requires_grad == tm.weight.requires_grad == (not freeze)
        x = np.array([[0, 4], [3, 3], [1, 2]])
        _close(_np(lm(lg.tensor(x))), _np(tm(torch.tensor(x))), "float64")
    with pytest.raises(AssertionError):
        lg.nn.EmbeddingBag.from_pretrained(lg.ones(5))


@pytest.mark.parametrize("call", [
    lambda F, t, w: F.embedding_bag(t.tensor([[0, 1]]), w, t.tensor([0])),  # 2-D input with offsets
    lambda F, t, w: F.embedding_bag(t.tensor([0, 1]), w),  # 1-D input without offsets
    lambda F, t, w: F.embedding_bag(t.tensor([[[0]]]), w),  # 3-D input
    lambda F, t, w: F.embedding_bag(t.tensor([0, 1]), w, t.tensor([0]), mode="median"),
    lambda F, t, w: F.embedding_bag(t.tensor([0, 1]), w, t.tensor([0]), per_sample_weights=t.ones(2, dtype=w.dtype)),
    lambda F, t, w: F.embedding_bag(t.tensor([0, 1]), w, t.tensor([0]), mode="sum", per_sample_weights=t.ones(3)),
    lambda F, t, w: F.embedding_bag(t.tensor([0, 1]), w, t.tensor([0]), mode="max", scale_grad_by_freq=True),
    lambda F, t, w: F.embedding_bag(t.tensor([0, 1]), w, t.tensor([1]), mode="sum"),  # offsets[0] != 0
    lambda F, t, w: F.embedding_bag(t.tensor([0, 1]), w, t.tensor([0, 5]), mode="sum"),  # offsets past the end
    lambda F, t, w: F.embedding_bag(t.tensor([0.0, 1.0]), w, t.tensor([0]), mode="sum"),  # float indices
    lambda F, t, w: F.embedding_bag(t.tensor([0, 1]), w[0], t.tensor([0])),  # 1-D weight
])
def test_embedding_bag_errors_match_torch(call: Any) -> None:
    with pytest.raises(Exception) as te:
        call(TF, torch, torch.ones(4, 2, dtype=torch.float64))
    lw = lg.ones(4, 2, dtype=lg.float64)
    with pytest.raises(type(te.value)):
        call(LF, lg, lw)


def test_embedding_bag_max_norm_renormalises_before_errors_none() -> None:
    w = np.random.default_rng(11).standard_normal((5, 3)) * 3
    tw, lw = torch.tensor(w), lg.tensor(w)
    idx = np.array([0, 2, 2, 4])
    to = TF.embedding_bag(torch.tensor(idx), tw, torch.tensor([0, 1]), max_norm=1.0, mode="sum")
    lo = LF.embedding_bag(lg.tensor(idx), lw, lg.tensor([0, 1]), max_norm=1.0, mode="sum")
    _close(_np(lo), _np(to), "float64")
    _close(lw.numpy(), tw.numpy(), "float64")  # the used rows were rescaled in place, as PyTorch
    before = lw.numpy().copy()
    with pytest.raises(NotImplementedError):  # a bad call changes nothing
        LF.embedding_bag(lg.tensor(idx), lw, lg.tensor([0, 1]), max_norm=0.1, mode="mean",
                         per_sample_weights=lg.ones(4, dtype=lg.float64))
    np.testing.assert_array_equal(lw.numpy(), before)


# ---- instance norms ----------------------------------------------------------------------------

@pytest.mark.parametrize("cls, nd", [("InstanceNorm1d", 1), ("InstanceNorm2d", 2), ("InstanceNorm3d", 3)])
@pytest.mark.parametrize("affine, track, momentum", [(False, False, 0.1), (True, False, 0.1), (True, True, 0.3),
                                                     (False, True, None)])
def test_instance_norm_matches_torch(cls: str, nd: int, affine: bool, track: bool, momentum: Any) -> None:
    rng = np.random.default_rng(12)
    kw = dict(affine=affine, track_running_stats=track, momentum=momentum)
    tm, lm = getattr(torch.nn, cls)(3, **kw).double(), getattr(lg.nn, cls)(3, **kw).double()
    assert list(lm.state_dict()) == list(tm.state_dict()) and repr(lm) == repr(tm)
    if affine:
        with torch.no_grad():
            tm.weight.normal_()
            tm.bias.normal_()
    lm.load_state_dict(_to_lg(tm.state_dict()))
    for train, batched in [(True, True), (True, False), (False, True), (True, True), (False, False)]:
        tm.train(train)
        lm.train(train)
        x = rng.standard_normal(((2,) if batched else ()) + (3,) + (4,) * nd)
        tx, lx = torch.tensor(x, requires_grad=True), lg.tensor(x, requires_grad=True)
        to, lo = tm(tx), lm(lx)
        g = rng.standard_normal(tuple(to.shape))
        to.backward(torch.tensor(g))
        lo.backward(lg.tensor(g))
        _close(_np(lo), _np(to), "float64")
        _close(lx.grad.numpy(), tx.grad.numpy(), "float64")
        for k, v in tm.state_dict().items():
            _close(lm.state_dict()[k].numpy(), v.numpy(), "float64", k)
        for name, p in tm.named_parameters():
            _close(getattr(lm, name).grad.numpy(), p.grad.numpy(), "float64", name)


def test_instance_norm3d_input_checks() -> None:
    m = lg.nn.InstanceNorm3d(3, affine=True)
    with pytest.raises(ValueError, match="expected 4D or 5D input"):
        m(lg.randn(3, 4, 4))
    with pytest.raises(ValueError, match="num_features"):
        m(lg.randn(2, 4, 2, 2, 2))
    with pytest.raises(ValueError, match="num_features"):
        m(lg.randn(4, 2, 2, 2))


# ---- lazy modules ------------------------------------------------------------------------------

LAZY = [
    ("LazyLinear", (3,), {}, (2, 5)), ("LazyLinear", (3,), {"bias": False}, (4, 2, 5)),
    ("LazyConv1d", (4, 3), {}, (2, 3, 8)), ("LazyConv2d", (4, 3), {"groups": 2, "padding": 1}, (2, 6, 5, 5)),
    ("LazyConv3d", (2, 2), {"bias": False}, (3, 4, 4, 4)),
    ("LazyConvTranspose1d", (4, 3), {"stride": 2}, (2, 3, 5)),
    ("LazyConvTranspose2d", (4, 3), {"groups": 2}, (2, 6, 5, 5)),
    ("LazyConvTranspose3d", (2, 2), {}, (3, 3, 3, 3)),
    ("LazyBatchNorm1d", (), {}, (4, 3)), ("LazyBatchNorm2d", (), {"affine": False}, (4, 3, 2, 2)),
    ("LazyBatchNorm3d", (), {"track_running_stats": False}, (2, 3, 2, 2, 2)),
    ("LazyInstanceNorm1d", (), {}, (2, 3, 5)),
    ("LazyInstanceNorm2d", (), {"affine": False, "track_running_stats": False}, (2, 3, 4, 4)),
    ("LazyInstanceNorm3d", (), {"track_running_stats": False}, (2, 4, 3, 3, 3)),
    ("LazyInstanceNorm3d", (), {}, (1, 3, 2, 3, 3)),
]


@pytest.mark.parametrize("name, args, kw, shape", LAZY)
def test_lazy_modules_match_torch(name: str, args: tuple[Any, ...], kw: dict[str, Any],
                                  shape: tuple[int, ...]) -> None:
    rng = np.random.default_rng(13)
    tm, lm = getattr(torch.nn, name)(*args, **kw), getattr(lg.nn, name)(*args, **kw)
    assert repr(lm) == repr(tm)
    assert list(lm.state_dict()) == list(tm.state_dict())
    assert [is_lazy(p) for p in lm.parameters()] == [torch.nn.parameter.is_lazy(p) for p in tm.parameters()]
    x = rng.standard_normal(shape).astype(np.float32)
    with warnings.catch_warnings(record=True) as tw:
        warnings.simplefilter("always")
        tm(torch.tensor(x))
    with warnings.catch_warnings(record=True) as lw:
        warnings.simplefilter("always")
        lm(lg.tensor(x))
    assert [str(w.message) for w in lw] == [str(w.message) for w in tw]  # InstanceNorm(0) warns as torch
    assert type(lm).__name__ == type(tm).__name__ and repr(lm) == repr(tm)
    assert type(lm) is getattr(lg.nn, type(tm).__name__)
    assert not any(is_lazy(t) for t in list(lm.parameters()) + list(lm.buffers()))
    assert {k: tuple(v.shape) for k, v in lm.state_dict().items()} == \
        {k: tuple(v.shape) for k, v in tm.state_dict().items()}
    # materialised as torch would: same init family (identical after copying torch's values)
    lm.load_state_dict(_to_lg(tm.state_dict()))
    tx, lx = torch.tensor(x, requires_grad=True), lg.tensor(x, requires_grad=True)
    to, lo = tm(tx), lm(lx)
    _close(_np(lo), _np(to), "float32")
    to.sum().backward()
    lo.sum().backward()
    _close(lx.grad.numpy(), tx.grad.numpy(), "float32")
    for n, p in tm.named_parameters():
        _close(getattr(lm, n).grad.numpy(), p.grad.numpy(), "float32", n)


def test_lazy_linear_init_and_dtype() -> None:
    lg.manual_seed(0)
    m = lg.nn.LazyLinear(64, dtype=lg.float64)
    assert isinstance(m.weight, UninitializedParameter) and m.weight.dtype == lg.float64
    m(lg.randn(2, 50, dtype=lg.float64))
    w = m.weight.detach().numpy()
    assert m.weight.dtype == lg.float64 and type(m.weight) is lg.nn.Parameter
    assert np.abs(w).max() <= 1 / np.sqrt(50) and np.abs(w).max() > 0.9 / np.sqrt(50)


def test_lazy_errors_leave_module_lazy() -> None:
    m = lg.nn.LazyConv2d(4, 3, groups=2)
    with pytest.raises(RuntimeError, match="Expected 3D"):  # as torch
        m(lg.randn(2, 2, 2, 5, 5))
    with pytest.raises(ValueError, match="divisible by groups"):
        m(lg.randn(2, 3, 5, 5))
    assert type(m) is lg.nn.LazyConv2d and is_lazy(m.weight)
    with pytest.raises(RuntimeError, match="uninitialized parameter"):
        m.weight.shape  # noqa: B018
    t = torch.nn.LazyConv2d(4, 3, groups=2)
    with pytest.raises(RuntimeError):
        t(torch.randn(2, 2, 2, 5, 5))
    with pytest.raises(ValueError):
        t(torch.randn(2, 3, 5, 5))
    assert m(lg.randn(2, 4, 5, 5)).shape == (2, 4, 3, 3)


# ---- weight norm / spectral norm ---------------------------------------------------------------

def _pair(cls: str, *args: Any) -> tuple[Any, Any]:
    tm, lm = getattr(torch.nn, cls)(*args).double(), getattr(lg.nn, cls)(*args).double()
    lm.load_state_dict(_to_lg(tm.state_dict()))
    return tm, lm


def _step(tm: Any, lm: Any, x: np.ndarray, rng: np.random.Generator) -> None:
    for m in (tm, lm):
        for p in m.parameters():
            p.grad = None
    to, lo = tm(torch.tensor(x)), lm(lg.tensor(x))
    _close(_np(lo), _np(to), "float64")
    g = rng.standard_normal(tuple(to.shape))
    to.backward(torch.tensor(g))
    lo.backward(lg.tensor(g))
    lp = dict(lm.named_parameters())
    for n, p in tm.named_parameters():
        _close(lp[n].grad.numpy(), p.grad.numpy(), "float64", n)
    for k, v in tm.state_dict().items():
        _close(lm.state_dict()[k].numpy(), v.numpy(), "float64", k)


@pytest.mark.parametrize("cls, args, xshape, dim", [
    ("Linear", (4, 3), (2, 4), 0), ("Linear", (4, 3), (2, 4), None), ("Conv2d", (2, 3, 3), (2, 2, 5, 5), 1),
    ("ConvTranspose1d", (2, 3, 3), (2, 2, 5), -1),
])
def test_weight_norm_matches_torch(cls: str, args: tuple[int, ...], xshape: tuple[int, ...], dim: Any) -> None:
    rng = np.random.default_rng(14)
    tm, lm = _pair(cls, *args)
    with pytest.warns(FutureWarning):
        torch.nn.utils.weight_norm(tm, dim=dim)
    with pytest.warns(FutureWarning):
        lg.nn.utils.weight_norm(lm, dim=dim)
    assert list(lm.state_dict()) == list(tm.state_dict())
    with torch.no_grad():
        tm.weight_g.mul_(1.5)  # g no longer the norm of v: the weight is rescaled
    lm.load_state_dict(_to_lg(tm.state_dict()))
    _step(tm, lm, rng.standard_normal(xshape), rng)
    torch.nn.utils.remove_weight_norm(tm)
    lg.nn.utils.remove_weight_norm(lm)
    assert list(lm.state_dict()) == list(tm.state_dict()) and isinstance(lm.weight, lg.nn.Parameter)
    _step(tm, lm, rng.standard_normal(xshape), rng)


def test_weight_norm_errors() -> None:
    warnings.simplefilter("ignore", FutureWarning)
    m = lg.nn.utils.weight_norm(lg.nn.Linear(3, 2))
    keys = list(m.state_dict())
    with pytest.raises(RuntimeError, match="Cannot register two weight_norm hooks"):
        lg.nn.utils.weight_norm(m)
    assert list(m.state_dict()) == keys
    with pytest.raises(ValueError, match="weight_norm of 'bias' not found"):
        lg.nn.utils.remove_weight_norm(m, "bias")
    with pytest.raises(ValueError, match="uninitialized parameters"):
        lg.nn.utils.weight_norm(lg.nn.LazyLinear(3))
    with pytest.raises(ValueError):
        torch.nn.utils.remove_weight_norm(torch.nn.Linear(3, 2))
    with pytest.raises(ValueError):
        lg.nn.utils.remove_weight_norm(lg.nn.Linear(3, 2))


@pytest.mark.parametrize("cls, args, xshape", [
    ("Linear", (4, 3), (2, 4)), ("Conv2d", (2, 3, 3), (2, 2, 5, 5)), ("ConvTranspose2d", (2, 3, 3), (2, 2, 4, 4)),
])
@pytest.mark.parametrize("n_it", [1, 3])
def test_spectral_norm_matches_torch(cls: str, args: tuple[int, ...], xshape: tuple[int, ...], n_it: int) -> None:
    rng = np.random.default_rng(15)
    tm, lm = _pair(cls, *args)
    torch.nn.utils.spectral_norm(tm, n_power_iterations=n_it)
    lg.nn.utils.spectral_norm(lm, n_power_iterations=n_it)
    assert list(lm.state_dict()) == list(tm.state_dict())
    assert {k: tuple(v.shape) for k, v in lm.state_dict().items()} == \
        {k: tuple(v.shape) for k, v in tm.state_dict().items()}
    lm.load_state_dict(_to_lg(tm.state_dict()))  # the same random u, v
    for train in [True, True, False, True]:  # power iteration only in training
        tm.train(train)
        lm.train(train)
        _step(tm, lm, rng.standard_normal(xshape), rng)
    torch.nn.utils.remove_spectral_norm(tm)
    lg.nn.utils.remove_spectral_norm(lm)
    assert list(lm.state_dict()) == list(tm.state_dict())
    _close(_np(lm.weight), _np(tm.weight), "float64")
    assert "forward" not in lm.__dict__


def test_spectral_norm_errors() -> None:
    with pytest.raises(ValueError, match="n_power_iterations=0"):
        lg.nn.utils.spectral_norm(lg.nn.Linear(3, 2), n_power_iterations=0)
    m = lg.nn.utils.spectral_norm(lg.nn.Linear(3, 2))
    keys = list(m.state_dict())
    with pytest.raises(RuntimeError, match="Cannot register two spectral_norm hooks"):
        lg.nn.utils.spectral_norm(m)
    assert list(m.state_dict()) == keys
    with pytest.raises(ValueError, match="spectral_norm of 'weight' not found"):
        lg.nn.utils.remove_spectral_norm(lg.nn.Linear(3, 2))
    # both reparametrisations on one module, removed in either order
    warnings.simplefilter("ignore", FutureWarning)
    m = lg.nn.utils.weight_norm(lg.nn.utils.spectral_norm(lg.nn.Linear(3, 2)), name="bias", dim=None)
    y = m(lg.randn(4, 3))
    assert y.shape == (4, 2)
    lg.nn.utils.remove_spectral_norm(m)
    lg.nn.utils.remove_weight_norm(m, "bias")
    assert sorted(m.state_dict()) == ["bias", "weight"] and "forward" not in m.__dict__
