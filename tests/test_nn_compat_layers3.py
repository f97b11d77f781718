"""torch.nn pieces checked against PyTorch: DataParallel, SyncBatchNorm, nn.utils.fusion,
nn.utils.parametrize with parametrizations.weight_norm / spectral_norm, functional_call
(nn.utils.stateless and lightgrad.func), LPPool1d/2d/3d, FractionalMaxPool2d/3d (same random
samples), FeatureAlphaDropout, the in-place celu_/selu_/rrelu_, and CTCLoss.

Outputs and every gradient are compared with PyTorch's in float64 (tight) and float32 on the same
inputs and upstream gradient; state dicts go both ways; errors match PyTorch's exception types and
leave no change behind.
"""

from __future__ import annotations

import copy
import math
import warnings
from typing import Any

import numpy as np
import pytest

import lightgrad as lg
import lightgrad.nn.functional as LF
from lightgrad.nn.utils import parametrizations as LP
from lightgrad.nn.utils import parametrize as LZ

torch = pytest.importorskip("torch")
TF = torch.nn.functional
TP = torch.nn.utils.parametrizations
TZ = torch.nn.utils.parametrize

TOL = {"float64": dict(rtol=1e-10, atol=1e-10), "float32": dict(rtol=2e-4, atol=2e-4)}


def _np(t: Any) -> np.ndarray:
    return t.detach().numpy()


def _close(a: Any, b: Any, dtype: str, what: str = "") -> None:
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), err_msg=what, **TOL[dtype])


def _to_lg(sd: dict[str, Any]) -> dict[str, Any]:
    return {k: lg.tensor(v.detach().numpy()) for k, v in sd.items()}


def _to_torch(sd: dict[str, Any]) -> dict[str, Any]:
    return {k: torch.tensor(v.numpy()) for k, v in sd.items()}


def _compare_fn(lg_fn: Any, t_fn: Any, arrays: list[np.ndarray], dtype: str, rng: np.random.Generator,
                **kw: Any) -> None:
    """Same float inputs through both functions: outputs and all input gradients."""
    ts = [torch.tensor(a.astype(dtype), requires_grad=True) for a in arrays]
    ls = [lg.tensor(a.astype(dtype), requires_grad=True) for a in arrays]
    to, lo = t_fn(*ts, **kw), lg_fn(*ls, **kw)
    assert tuple(lo.shape) == tuple(to.shape), (kw, lo.shape, to.shape)
    _close(_np(lo), _np(to), dtype, f"output {kw}")
    g = rng.standard_normal(tuple(to.shape)).astype(dtype)
    to.backward(torch.tensor(g))
    lo.backward(lg.tensor(g))
    for i, (t, lt) in enumerate(zip(ts, ls, strict=True)):
        _close(_np(lt.grad), _np(t.grad), dtype, f"grad {i} {kw}")


def _grads_match(lm: Any, tm: Any, dtype: str) -> None:
    for (n, p), (tn, tp) in zip(lm.named_parameters(), tm.named_parameters(), strict=True):
        assert n == tn
        _close(_np(p.grad), _np(tp.grad), dtype, n)


# ---- DataParallel, SyncBatchNorm -----------------------------------------------------------------

def test_data_parallel_passthrough_and_state_dict() -> None:
    torch.manual_seed(0)
    tnet = torch.nn.DataParallel(torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2)))
    lnet = lg.nn.DataParallel(lg.nn.Sequential(lg.nn.Linear(3, 4), lg.nn.Tanh(), lg.nn.Linear(4, 2)))
    assert list(lnet.state_dict()) == list(tnet.state_dict())
    lnet.load_state_dict(_to_lg(tnet.state_dict()))
    assert isinstance(lnet.module, lg.nn.Sequential) and lnet.device_ids == tnet.device_ids
    x = np.random.default_rng(0).standard_normal((5, 3)).astype(np.float32)
    lo, to = lnet(lg.tensor(x)), tnet(torch.tensor(x))
    _close(_np(lo), _np(to), "float32")
    lo.sum().backward()
    to.sum().backward()
    _grads_match(lnet, tnet, "float32")
    tnet2 = torch.nn.DataParallel(torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2)))
    tnet2.load_state_dict(_to_torch(lnet.state_dict()))
    _close(_np(tnet2(torch.tensor(x))), _np(to), "float32")


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_sync_batchnorm_matches_torch(dtype: str) -> None:
    rng = np.random.default_rng(1)
    for shape in [(6, 3), (4, 3, 5), (2, 3, 4, 4), (2, 3, 2, 3, 2)]:
        tm, lm = torch.nn.SyncBatchNorm(3, momentum=0.3), lg.nn.SyncBatchNorm(3, momentum=0.3)
        tm, lm = tm.to(getattr(torch, dtype)), lm.to(getattr(lg, dtype))
        with torch.no_grad():
            tm.weight.uniform_(0.5, 1.5)
            tm.bias.uniform_(-1, 1)
        lm.load_state_dict(_to_lg(tm.state_dict()))
        for train in (True, False):
            tm.train(train)
            lm.train(train)
            x = rng.standard_normal(shape).astype(dtype)
            tx, lx = torch.tensor(x, requires_grad=True), lg.tensor(x, requires_grad=True)
            to, lo = tm(tx), lm(lx)
            _close(_np(lo), _np(to), dtype, str(shape))
            g = rng.standard_normal(shape).astype(dtype)
            to.backward(torch.tensor(g))
            lo.backward(lg.tensor(g))
            _close(_np(lx.grad), _np(tx.grad), dtype)
            _grads_match(lm, tm, dtype)
            for k, v in tm.state_dict().items():
                _close(lm.state_dict()[k].numpy(), v.numpy(), dtype, k)


def test_sync_batchnorm_errors_and_convert() -> None:
    lm, tm = lg.nn.SyncBatchNorm(3), torch.nn.SyncBatchNorm(3)
    for m, mod in ((lm, lg), (tm, torch)):
        with pytest.raises(ValueError):
            m(mod.ones(3))
    assert lm.num_batches_tracked.item() == 0
    tnet = torch.nn.Sequential(torch.nn.Conv2d(2, 3, 1), torch.nn.BatchNorm2d(3),
                               torch.nn.Sequential(torch.nn.BatchNorm1d(3, affine=False)))
    lnet = lg.nn.Sequential(lg.nn.Conv2d(2, 3, 1), lg.nn.BatchNorm2d(3),
                            lg.nn.Sequential(lg.nn.BatchNorm1d(3, affine=False)))
    lnet[1].eval()
    tconv, lconv = torch.nn.SyncBatchNorm.convert_sync_batchnorm(tnet), lg.nn.SyncBatchNorm.convert_sync_batchnorm(lnet)
    assert [type(m).__name__ for m in lconv.modules()] == [type(m).__name__ for m in tconv.modules()]
    assert list(lconv.state_dict()) == list(tconv.state_dict())
    assert lconv[1].weight is lnet[1].weight and lconv[1].running_mean is lnet[1].running_mean
    assert not lconv[1].training and lconv[2][0].training and lconv[2][0].weight is None
    top = lg.nn.SyncBatchNorm.convert_sync_batchnorm(lg.nn.BatchNorm1d(4))
    assert type(top) is lg.nn.SyncBatchNorm and top.num_features == 4


# ---- fusion --------------------------------------------------------------------------------------

def _trained_bn(tbn: Any, lbn: Any, rng: np.random.Generator) -> None:
    with torch.no_grad():
        tbn.running_mean.copy_(torch.tensor(rng.standard_normal(tbn.num_features)))
        tbn.running_var.copy_(torch.tensor(rng.uniform(0.5, 2, tbn.num_features)))
        if tbn.weight is not None:
            tbn.weight.copy_(torch.tensor(rng.uniform(0.5, 1.5, tbn.num_features)))
            tbn.bias.copy_(torch.tensor(rng.standard_normal(tbn.num_features)))
    lbn.load_state_dict(_to_lg(tbn.state_dict()))
    tbn.eval()
    lbn.eval()


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_fuse_conv_bn_matches_torch(dtype: str) -> None:
    rng = np.random.default_rng(2)
    td, ld = getattr(torch, dtype), getattr(lg, dtype)
    cases = [("Conv2d", dict(bias=True), False, "BatchNorm2d", True), ("Conv1d", dict(bias=False), False,
             "BatchNorm1d", False), ("ConvTranspose2d", dict(bias=True, groups=1), True, "BatchNorm2d", True)]
    for conv_name, kw, transpose, bn_name, affine in cases:
        tconv = getattr(torch.nn, conv_name)(2, 4, 3, **kw).to(td).eval()
        lconv = getattr(lg.nn, conv_name)(2, 4, 3, **kw).to(ld).eval()
        lconv.load_state_dict(_to_lg(tconv.state_dict()))
        tbn, lbn = getattr(torch.nn, bn_name)(4, affine=affine).to(td), getattr(lg.nn, bn_name)(4, affine=affine).to(ld)
        _trained_bn(tbn, lbn, rng)
        tf = torch.nn.utils.fuse_conv_bn_eval(tconv, tbn, transpose)
        lf = lg.nn.utils.fuse_conv_bn_eval(lconv, lbn, transpose)
        assert lconv.bias is None or lf.bias is not lconv.bias  # a copy: the original is untouched
        for k, v in tf.state_dict().items():
            _close(lf.state_dict()[k].numpy(), v.numpy(), dtype, k)
        assert lf.weight.dtype == ld and isinstance(lf.bias, lg.nn.Parameter)
        x = rng.standard_normal((2, 2, 6) + ((6,) if "2d" in conv_name else ())).astype(dtype)
        _close(_np(lf(lg.tensor(x))), _np(lbn(lconv(lg.tensor(x)))), dtype)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_fuse_linear_bn_matches_torch(dtype: str) -> None:
    rng = np.random.default_rng(3)
    td, ld = getattr(torch, dtype), getattr(lg, dtype)
    for bias in (True, False):
        tl, ll = torch.nn.Linear(3, 4, bias=bias).to(td).eval(), lg.nn.Linear(3, 4, bias=bias).to(ld).eval()
        ll.load_state_dict(_to_lg(tl.state_dict()))
        tbn, lbn = torch.nn.BatchNorm1d(4).to(td), lg.nn.BatchNorm1d(4).to(ld)
        _trained_bn(tbn, lbn, rng)
        tf, lf = torch.nn.utils.fuse_linear_bn_eval(tl, tbn), lg.nn.utils.fuse_linear_bn_eval(ll, lbn)
        for k, v in tf.state_dict().items():
            _close(lf.state_dict()[k].numpy(), v.numpy(), dtype, k)
        tw = torch.nn.utils.fusion.fuse_linear_bn_weights(tl.weight, tl.bias, tbn.running_mean, tbn.running_var,
                                                          tbn.eps, tbn.weight, tbn.bias)
        lw = lg.nn.utils.fusion.fuse_linear_bn_weights(ll.weight, ll.bias, lbn.running_mean, lbn.running_var,
                                                       lbn.eps, lbn.weight, lbn.bias)
        for a, b in zip(lw, tw, strict=True):
            _close(_np(a), _np(b), dtype)
            assert a.requires_grad == b.requires_grad


def test_fusion_errors() -> None:
    for mod in (torch, lg):
        conv, bn, lin = mod.nn.Conv2d(2, 3, 1), mod.nn.BatchNorm2d(3), mod.nn.Linear(2, 5)
        with pytest.raises(AssertionError):
            mod.nn.utils.fuse_conv_bn_eval(conv, bn)  # training mode
        with pytest.raises(AssertionError):
            mod.nn.utils.fuse_linear_bn_eval(lin.eval(), mod.nn.BatchNorm1d(3).eval())  # 5 vs 3 features


# ---- parametrize ---------------------------------------------------------------------------------

def _symmetric(mod: Any) -> Any:
    class Symmetric(mod.nn.Module):
        def forward(self, x: Any) -> Any:
            return x.triu() + x.triu(1).transpose(-1, -2)

        def right_inverse(self, a: Any) -> Any:
            return a.triu()
    return Symmetric()


def _scale(mod: Any) -> Any:
    class Scale(mod.nn.Module):  # a parametrization with its own parameter
        def __init__(self) -> None:
            super().__init__()
            self.s = mod.nn.Parameter(mod.tensor(1.5, dtype=mod.float64))

        def forward(self, x: Any) -> Any:
            return x * self.s
    return Scale()


def test_parametrize_matches_torch() -> None:
    rng = np.random.default_rng(4)
    tm, lm = torch.nn.Linear(3, 3).double(), lg.nn.Linear(3, 3).double()
    lm.load_state_dict(_to_lg(tm.state_dict()))
    for mod, m in ((torch, tm), (lg, lm)):
        Z = TZ if mod is torch else LZ
        assert not Z.is_parametrized(m)
        Z.register_parametrization(m, "weight", _symmetric(mod))
        Z.register_parametrization(m, "weight", _scale(mod))
        assert Z.is_parametrized(m) and Z.is_parametrized(m, "weight") and not Z.is_parametrized(m, "bias")
    assert type(lm).__name__ == type(tm).__name__ == "ParametrizedLinear"
    assert isinstance(lm, lg.nn.Linear)
    assert list(lm.state_dict()) == list(tm.state_dict())
    assert [n for n, _ in lm.named_parameters()] == [n for n, _ in tm.named_parameters()]
    _close(_np(lm.weight), _np(tm.weight), "float64")
    _close(_np(lm.weight), _np(lm.weight).T, "float64")  # symmetric
    x = rng.standard_normal((4, 3))
    lo, to = lm(lg.tensor(x)), tm(torch.tensor(x))
    _close(_np(lo), _np(to), "float64")
    g = rng.standard_normal((4, 3))
    lo.backward(lg.tensor(g))
    to.backward(torch.tensor(g))
    _grads_match(lm, tm, "float64")
    # assignment goes through right_inverse into `original`
    w = rng.standard_normal((3, 3))
    with pytest.raises(RuntimeError):  # Scale has no right_inverse
        lm.weight = lg.tensor(w)
    with pytest.raises(RuntimeError):
        tm.weight = torch.tensor(w)
    # state dict both ways
    tm2, lm2 = copy.deepcopy(tm), copy.deepcopy(lm)
    with torch.no_grad():
        for p in tm2.parameters():
            p.add_(1.0)
    lm2.load_state_dict(_to_lg(tm2.state_dict()))
    _close(_np(lm2.weight), _np(tm2.weight), "float64")
    tm.load_state_dict(_to_torch(lm2.state_dict()))
    _close(_np(tm.weight), _np(lm2.weight), "float64")
    # removal: leave the current value as a plain parameter, or restore the stored original
    for leave in (True, False):
        # fresh modules: a deepcopy shares the injected class, whose property removal would touch both
        t3, l3 = torch.nn.Linear(3, 3).double(), lg.nn.Linear(3, 3).double()
        TZ.register_parametrization(t3, "weight", _symmetric(torch))
        LZ.register_parametrization(l3, "weight", _symmetric(lg))
        t3.load_state_dict({k: v for k, v in tm2.state_dict().items() if not k.endswith(".1.s")})
        l3.load_state_dict({k: v for k, v in lm2.state_dict().items() if not k.endswith(".1.s")})
        TZ.remove_parametrizations(t3, "weight", leave_parametrized=leave)
        LZ.remove_parametrizations(l3, "weight", leave_parametrized=leave)
        assert type(l3) is lg.nn.Linear and type(t3) is torch.nn.Linear
        assert list(l3.state_dict()) == list(t3.state_dict()) == ["bias", "weight"]
        assert isinstance(l3.weight, lg.nn.Parameter) and not hasattr(l3, "parametrizations")
        _close(_np(l3.weight), _np(t3.weight), "float64")


def test_parametrize_right_inverse_assignment_and_buffer() -> None:
    rng = np.random.default_rng(5)
    tm, lm = torch.nn.Linear(3, 3).double(), lg.nn.Linear(3, 3).double()
    TZ.register_parametrization(tm, "weight", _symmetric(torch))
    LZ.register_parametrization(lm, "weight", _symmetric(lg))
    w = rng.standard_normal((3, 3))
    original = lm.parametrizations.weight.original
    tm.weight, lm.weight = torch.tensor(w), lg.tensor(w)
    assert lm.parametrizations.weight.original is original  # updated in place
    _close(_np(lm.parametrizations.weight.original), _np(tm.parametrizations.weight.original), "float64")
    _close(_np(lm.weight), _np(tm.weight), "float64")
    with pytest.raises(KeyError):  # a Parameter may not replace the parametrized name, as PyTorch
        lm.weight = lg.nn.Parameter(lg.zeros(3, 3))
    with pytest.raises(KeyError):
        tm.weight = torch.nn.Parameter(torch.zeros(3, 3))
    # a buffer stays a buffer
    for mod, Z in ((torch, TZ), (lg, LZ)):
        m = mod.nn.BatchNorm1d(3)
        Z.register_parametrization(m, "running_var", mod.nn.Softplus())
        assert "parametrizations.running_var.original" in m.state_dict()
        assert "parametrizations.running_var.original" in dict(m.named_buffers())


def test_parametrize_cached() -> None:
    calls = []

    class Count(lg.nn.Module):
        def forward(self, x: Any) -> Any:
            calls.append(1)
            return x * 2

    m = LZ.register_parametrization(lg.nn.Linear(2, 2), "weight", Count())
    n0 = len(calls)
    with LZ.cached():
        a, b = m.weight, m.weight
        assert a is b and len(calls) == n0 + 1
    c = m.weight
    assert c is not a and len(calls) == n0 + 2


def test_parametrize_errors_leave_module_unchanged() -> None:
    class Bad(lg.nn.Module):
        def forward(self, x: Any) -> Any:
            return x[0]  # changes the shape

    class TBad(torch.nn.Module):
        def forward(self, x: Any) -> Any:
            return x[0]

    for mod, Z, bad in ((torch, TZ, TBad()), (lg, LZ, Bad())):
        m = mod.nn.Linear(2, 3)
        keys = list(m.state_dict())
        with pytest.raises(ValueError):
            Z.register_parametrization(m, "weight", bad)
        with pytest.raises(ValueError):
            Z.register_parametrization(m, "nope", mod.nn.Identity())
        with pytest.raises(ValueError):
            Z.remove_parametrizations(m, "weight")
        assert list(m.state_dict()) == keys and not Z.is_parametrized(m) and type(m) is mod.nn.Linear
        Z.register_parametrization(m, "weight", mod.nn.Identity())
        with pytest.raises(ValueError):  # a second one that breaks the shape is refused, the first kept
            Z.register_parametrization(m, "weight", bad)
        assert len(m.parametrizations.weight) == 1


# ---- parametrizations.weight_norm / spectral_norm -------------------------------------------------

@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_parametrizations_weight_norm_matches_torch(dtype: str) -> None:
    rng = np.random.default_rng(6)
    td, ld = getattr(torch, dtype), getattr(lg, dtype)
    for name, args, dim, xshape in [("Linear", (4, 3), 0, (5, 4)), ("Conv2d", (2, 3, 3), 1, (2, 2, 5, 5)),
                                    ("Linear", (4, 3), None, (5, 4))]:
        tm, lm = getattr(torch.nn, name)(*args).to(td), getattr(lg.nn, name)(*args).to(ld)
        lm.load_state_dict(_to_lg(tm.state_dict()))
        TP.weight_norm(tm, dim=dim)
        LP.weight_norm(lm, dim=dim)
        assert list(lm.state_dict()) == list(tm.state_dict())
        for k, v in tm.state_dict().items():
            _close(lm.state_dict()[k].numpy(), v.numpy(), dtype, k)
        x = rng.standard_normal(xshape).astype(dtype)
        lo, to = lm(lg.tensor(x)), tm(torch.tensor(x))
        _close(_np(lo), _np(to), dtype)
        g = rng.standard_normal(tuple(to.shape)).astype(dtype)
        lo.backward(lg.tensor(g))
        to.backward(torch.tensor(g))
        _grads_match(lm, tm, dtype)
        # load torch's trained state into ours and back
        with torch.no_grad():
            tm.parametrizations.weight.original0.mul_(2)
        lm.load_state_dict(_to_lg(tm.state_dict()))
        _close(_np(lm.weight), _np(tm.weight), dtype)
        tm.load_state_dict(_to_torch(lm.state_dict()))
        LZ.remove_parametrizations(lm, "weight")
        TZ.remove_parametrizations(tm, "weight")
        _close(_np(lm.weight), _np(tm.weight), dtype)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_parametrizations_spectral_norm_matches_torch(dtype: str) -> None:
    rng = np.random.default_rng(7)
    td, ld = getattr(torch, dtype), getattr(lg, dtype)
    for name, args, kw, xshape in [("Linear", (4, 3), {}, (5, 4)), ("Conv2d", (2, 3, 3), {"n_power_iterations": 3},
                                   (2, 2, 5, 5)), ("ConvTranspose2d", (3, 2, 2), {}, (1, 3, 3, 3))]:
        tm, lm = getattr(torch.nn, name)(*args).to(td), getattr(lg.nn, name)(*args).to(ld)
        lm.load_state_dict(_to_lg(tm.state_dict()))
        TP.spectral_norm(tm, **kw)
        LP.spectral_norm(lm, **kw)
        assert list(lm.state_dict()) == list(tm.state_dict())
        lm.load_state_dict(_to_lg(tm.state_dict()))  # the same power-iteration start vectors
        for train in (True, False, True):
            tm.train(train)
            lm.train(train)
            x = rng.standard_normal(xshape).astype(dtype)
            lo, to = lm(lg.tensor(x)), tm(torch.tensor(x))
            _close(_np(lo), _np(to), dtype, f"{name} train={train}")
            g = rng.standard_normal(tuple(to.shape)).astype(dtype)
            lo.backward(lg.tensor(g))
            to.backward(torch.tensor(g))
            _grads_match(lm, tm, dtype)
            for k, v in tm.state_dict().items():
                _close(lm.state_dict()[k].numpy(), v.numpy(), dtype, k)
    # a 1-D parameter is normalised to unit norm
    tb, lb = torch.nn.BatchNorm1d(3), lg.nn.BatchNorm1d(3)
    TP.spectral_norm(tb)
    LP.spectral_norm(lb)
    _close(_np(lb.weight), _np(tb.weight), "float32")
    for mod, P in ((torch, TP), (lg, LP)):
        with pytest.raises(IndexError):
            P.spectral_norm(mod.nn.Linear(2, 3), dim=2)
        with pytest.raises(ValueError):
            P.spectral_norm(mod.nn.Linear(2, 3), n_power_iterations=0)
        with pytest.raises(ValueError):
            P.spectral_norm(mod.nn.Linear(2, 3), name="nope")


# ---- functional_call -----------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_functional_call_matches_torch(dtype: str) -> None:
    rng = np.random.default_rng(8)
    td, ld = getattr(torch, dtype), getattr(lg, dtype)
    tnet = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4), torch.nn.Linear(4, 2)).to(td)
    lnet = lg.nn.Sequential(lg.nn.Linear(3, 4), lg.nn.BatchNorm1d(4), lg.nn.Linear(4, 2)).to(ld)
    lnet.load_state_dict(_to_lg(tnet.state_dict()))
    before = {k: v.numpy().copy() for k, v in lnet.state_dict().items()}
    new = {k: rng.standard_normal(tuple(v.shape)).astype(dtype) for k, v in tnet.named_parameters()}
    new["1.running_var"] = rng.uniform(0.5, 2, 4).astype(dtype)
    x = rng.standard_normal((5, 3)).astype(dtype)
    for call in ("func", "stateless"):
        tnew = {k: torch.tensor(v, requires_grad=k != "1.running_var") for k, v in new.items()}
        lnew = {k: lg.tensor(v, requires_grad=k != "1.running_var") for k, v in new.items()}
        if call == "func":
            to = torch.func.functional_call(tnet, tnew, (torch.tensor(x),))
            lo = lg.func.functional_call(lnet, lnew, lg.tensor(x))
        else:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", FutureWarning)
                to = torch.nn.utils.stateless.functional_call(tnet, tnew, torch.tensor(x))
            with pytest.warns(FutureWarning):
                lo = lg.nn.utils.stateless.functional_call(lnet, lnew, (lg.tensor(x),))
        _close(_np(lo), _np(to), dtype)
        g = rng.standard_normal(tuple(to.shape)).astype(dtype)
        to.backward(torch.tensor(g))
        lo.backward(lg.tensor(g))
        for k in new:
            if k != "1.running_var":
                _close(_np(lnew[k].grad), _np(tnew[k].grad), dtype, k)
        _close(_np(lnew["1.running_var"]), _np(tnew["1.running_var"]), dtype)  # updated in place
        assert all(p.grad is None for p in lnet.parameters())
    after = lnet.state_dict()
    for k, v in before.items():
        if k not in ("1.running_mean", "1.num_batches_tracked"):  # the module's own mean is swapped in
            np.testing.assert_array_equal(after[k].numpy(), v, err_msg=k)
    _close(after["1.running_mean"].numpy(), tnet.state_dict()["1.running_mean"].numpy(), dtype)


def test_functional_call_tied_dicts_kwargs_and_errors() -> None:
    class Tied(lg.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.a = lg.nn.Linear(2, 2, bias=False)
            self.b = lg.nn.Linear(2, 2, bias=False)
            self.b.weight = self.a.weight

        def forward(self, x: Any, scale: float = 1.0) -> Any:
            return self.b(self.a(x)) * scale

    m = Tied()
    w = lg.eye(2, requires_grad=True)
    x = lg.tensor([[1.0, 2.0]])
    out = lg.func.functional_call(m, {"a.weight": w}, (x,), {"scale": 3.0})
    np.testing.assert_allclose(_np(out), x.numpy() * 3)  # both uses see w (tie_weights)
    out = lg.func.functional_call(m, {"a.weight": w}, (x,), tie_weights=False)
    np.testing.assert_allclose(_np(out), x.numpy() @ m.a.weight.detach().numpy().T)
    out = lg.func.functional_call(m, ({"a.weight": w}, {"b.weight": 2 * w}), (x,), tie_weights=False)
    np.testing.assert_allclose(_np(out), x.numpy() * 2)
    keep = m.a.weight
    for mod, net, mk in ((lg, m, lambda t: lg.tensor(t)), (torch, torch.nn.Linear(2, 2), torch.tensor)):
        with pytest.raises(ValueError):  # a key in two dicts
            mod.func.functional_call(net, ({"weight": mk(np.eye(2))}, {"weight": mk(np.eye(2))}), (mk(np.ones((1, 2))),))
    with pytest.raises(RuntimeError):  # strict: missing keys
        lg.func.functional_call(m, {"a.weight": w}, (x,), strict=True, tie_weights=False)
    with pytest.raises(RuntimeError):
        torch.func.functional_call(torch.nn.Linear(2, 2), {"weight": torch.eye(2)}, (torch.ones(1, 2),), strict=True)
    assert m.a.weight is keep and m.b.weight is keep


# ---- LPPool, FractionalMaxPool -----------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_lp_pool_matches_torch(dtype: str) -> None:
    rng = np.random.default_rng(9)
    for nd in (1, 2, 3):
        for batch in ((2,), ()):
            shape = batch + (3,) + (7,) * nd
            for p, k, s, ceil in [(2, 2, None, False), (3, 3, 2, True), (1.5, (2, 3, 1)[:nd] if nd > 1 else 2, 1,
                                                                        False), (math.inf, 2, None, False)]:
                x = rng.uniform(0.2, 1.5, shape) * rng.choice([-1, 1], shape) if p in (2, math.inf) else \
                    rng.uniform(0.2, 1.5, shape)
                lf = lambda t, p=p, k=k, s=s, ceil=ceil, nd=nd: getattr(LF, f"lp_pool{nd}d")(t, p, k, s, ceil)  # noqa: E731
                tf = lambda t, p=p, k=k, s=s, ceil=ceil, nd=nd: getattr(TF, f"lp_pool{nd}d")(t, p, k, s, ceil)  # noqa: E731
                _compare_fn(lf, tf, [x], dtype, rng)
            lm, tm = getattr(lg.nn, f"LPPool{nd}d")(2, 2, 1), getattr(torch.nn, f"LPPool{nd}d")(2, 2, 1)
            assert repr(lm) == repr(tm)
            x = rng.uniform(0.2, 1.5, shape).astype(dtype)
            _close(_np(lm(lg.tensor(x))), _np(tm(torch.tensor(x))), dtype)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_fractional_max_pool_matches_torch(dtype: str) -> None:
    rng = np.random.default_rng(10)
    cases = [(2, (2, 3, 9, 11), 2, dict(output_size=(5, 4))), (2, (3, 8, 8), 3, dict(output_size=6)),
             (2, (2, 2, 10, 7), (2, 3), dict(output_ratio=(0.5, 0.6))), (2, (1, 1, 5, 5), 2, dict(output_size=1)),
             (3, (2, 2, 6, 9, 7), 2, dict(output_size=(3, 5, 4))), (3, (2, 5, 6, 6), (1, 2, 3), dict(output_ratio=0.5))]
    for nd, shape, k, kw in cases:
        n = shape[0] if len(shape) == nd + 2 else 1
        c = shape[-nd - 1]
        samples = rng.random((n, c, nd)).astype(dtype)
        x = rng.standard_normal(shape).astype(dtype)
        tx, lx = torch.tensor(x, requires_grad=True), lg.tensor(x, requires_grad=True)
        to, ti = getattr(TF, f"fractional_max_pool{nd}d")(tx, k, return_indices=True,
                                                            _random_samples=torch.tensor(samples), **kw)
        lo, li = getattr(LF, f"fractional_max_pool{nd}d")(lx, k, return_indices=True,
                                                            _random_samples=lg.tensor(samples), **kw)
        _close(_np(lo), _np(to), dtype, str(shape))
        np.testing.assert_array_equal(li.numpy(), ti.numpy())
        g = rng.standard_normal(tuple(to.shape)).astype(dtype)
        to.backward(torch.tensor(g))
        lo.backward(lg.tensor(g))
        _close(_np(lx.grad), _np(tx.grad), dtype)
        # the module, with its samples as a buffer
        tm = getattr(torch.nn, f"FractionalMaxPool{nd}d")(k, _random_samples=torch.tensor(samples), **kw)
        lm = getattr(lg.nn, f"FractionalMaxPool{nd}d")(k, _random_samples=lg.tensor(samples), **kw)
        assert list(lm.state_dict()) == list(tm.state_dict())
        _close(_np(lm(lg.tensor(x))), _np(tm(torch.tensor(x))), dtype)
    # random windows: the output is still a max over a k-window of the input, and changes with the seed
    lg.manual_seed(0)
    x = lg.randn(2, 3, 12, 12)
    a = lg.nn.FractionalMaxPool2d(2, output_size=7)(x)
    b = lg.nn.FractionalMaxPool2d(2, output_size=7)(x)
    assert a.shape == (2, 3, 7, 7) and not np.array_equal(a.numpy(), b.numpy())
    assert np.isin(a.numpy(), x.numpy()).all()


def test_fractional_max_pool_errors() -> None:
    for mod in (torch, lg):
        with pytest.raises(ValueError):
            mod.nn.FractionalMaxPool2d(2)
        with pytest.raises(ValueError):
            mod.nn.FractionalMaxPool2d(2, output_size=3, output_ratio=0.5)
        with pytest.raises(ValueError):
            mod.nn.FractionalMaxPool3d(2, output_ratio=1.5)
        with pytest.raises(RuntimeError):
            mod.nn.functional.fractional_max_pool2d(mod.randn(1, 1, 5, 5), 3, output_size=4)  # windows too large
        with pytest.raises(ValueError):
            mod.nn.functional.fractional_max_pool2d(mod.randn(1, 1, 5, 5), 2)


# ---- dropout, in-place activations --------------------------------------------------------------

def test_feature_alpha_dropout() -> None:
    lg.manual_seed(1)
    p = 0.3
    x = lg.randn(40, 8, 5, requires_grad=True)
    m = lg.nn.FeatureAlphaDropout(p)
    assert repr(m) == repr(torch.nn.FeatureAlphaDropout(p))
    y = m(x)
    # PyTorch's constants: alpha' = -SELU scale * alpha; a, b from its formula
    alpha = -TF.selu(torch.tensor(-1e4, dtype=torch.float64)).item()
    a = 1.0 / math.sqrt((alpha * alpha * p + 1) * (1 - p))
    kept, dropped = _np(x) * a + alpha * a * p, np.broadcast_to(-alpha * a + alpha * a * p, x.shape)
    is_kept = np.isclose(_np(y), kept, rtol=1e-5, atol=1e-5).all(axis=2)
    is_dropped = np.isclose(_np(y), dropped, rtol=1e-5, atol=1e-5).all(axis=2)
    assert (is_kept | is_dropped).all()  # one draw per (sample, channel)
    assert 0.15 < is_dropped.mean() < 0.45
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.broadcast_to((is_kept * a)[..., None], x.shape), rtol=1e-6)
    m.eval()
    assert m(x) is x
    z = lg.randn(4, 3)
    assert LF.feature_alpha_dropout(z, 1.0, True).abs().sum().item() == 0
    for mod in (torch, lg):
        with pytest.raises(ValueError):
            mod.nn.functional.feature_alpha_dropout(mod.ones(3, 3), 1.5, True)
        with pytest.raises(RuntimeError):
            mod.nn.functional.feature_alpha_dropout(mod.ones(3), 0.5, True)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_inplace_activations_match_torch(dtype: str) -> None:
    rng = np.random.default_rng(11)
    x = rng.standard_normal((4, 5)).astype(dtype)
    g = rng.standard_normal((4, 5)).astype(dtype)
    # alpha 0.5: PyTorch's celu rounds 1/alpha to float32 even for float64 input
    for name, kw in [("celu_", dict(alpha=0.5)), ("selu_", {}), ("rrelu_", dict(lower=0.1, upper=0.3))]:
        tx, lx = torch.tensor(x, requires_grad=True), lg.tensor(x, requires_grad=True)
        ty, ly = tx * 1, lx * 1
        tr, lr = getattr(TF, name)(ty, **kw), getattr(LF, name)(ly, **kw)
        assert lr is ly and tr is ty
        _close(_np(ly), _np(ty), dtype, name)
        ty.backward(torch.tensor(g))
        ly.backward(lg.tensor(g))
        _close(_np(lx.grad), _np(tx.grad), dtype, name)
    lx = lg.tensor(-np.abs(x), requires_grad=True)
    ly = lx * 1
    LF.rrelu_(ly, 0.1, 0.3, training=True)
    slope = ly.detach().numpy() / lx.detach().numpy()
    assert ((slope >= 0.1) & (slope <= 0.3)).all() and slope.std() > 0


# ---- CTC loss ------------------------------------------------------------------------------------

def _ctc_case(rng: np.random.Generator, T: int, N: int, C: int, S: int) -> tuple[Any, ...]:
    tg = rng.integers(1, C, (N, S))
    tg[0, 1] = tg[0, 0]  # a repeated label needs a blank in between
    il = rng.integers(S + 2, T + 1, N)
    il[0] = T
    tl = rng.integers(0, S + 1, N)
    tl[0] = S
    return tg, il, tl


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_ctc_loss_matches_torch(dtype: str) -> None:
    rng = np.random.default_rng(12)
    T, N, C, S = 12, 4, 5, 4
    tg, il, tl = _ctc_case(rng, T, N, C, S)
    tl[-1] = 0  # an empty target
    concat = np.concatenate([tg[i, :tl[i]] for i in range(N)])
    for red in ("none", "mean", "sum"):
        for blank in (0, C - 1):
            tgb = np.where(tg == blank, 0 if blank else 1, tg) if blank else tg
            cat_b = np.concatenate([tgb[i, :tl[i]] for i in range(N)])
            for targets in (tgb, cat_b):
                for tgt_form in ("tensor", "list"):
                    def lf(x: Any, targets: Any = targets, red: str = red, blank: int = blank,
                           tgt_form: str = tgt_form) -> Any:
                        lens = (lg.tensor(il), lg.tensor(tl)) if tgt_form == "tensor" else (il.tolist(), tl.tolist())
                        return LF.ctc_loss(x.log_softmax(2), lg.tensor(targets), *lens, blank=blank, reduction=red)

                    def tf(x: Any, targets: Any = targets, red: str = red, blank: int = blank,
                           tgt_form: str = tgt_form) -> Any:
                        lens = (torch.tensor(il), torch.tensor(tl)) if tgt_form == "tensor" else \
                            (il.tolist(), tl.tolist())
                        return TF.ctc_loss(x.log_softmax(2), torch.tensor(targets), *lens, blank=blank, reduction=red)

                    _compare_fn(lf, tf, [rng.standard_normal((T, N, C))], dtype, rng)
    assert concat.ndim == 1
    # the module, unbatched input
    x = rng.standard_normal((T, C))
    tx, lx = torch.tensor(x, requires_grad=True), lg.tensor(x, requires_grad=True)
    to = torch.nn.CTCLoss(reduction="none")(tx.log_softmax(1), torch.tensor(tg[0]), torch.tensor(T), torch.tensor(S))
    lo = lg.nn.CTCLoss(reduction="none")(lx.log_softmax(1), lg.tensor(tg[0]), lg.tensor(T), lg.tensor(S))
    assert lo.shape == to.shape == ()
    _close(_np(lo), _np(to), "float64")
    to.backward()
    lo.backward()
    _close(_np(lx.grad), _np(tx.grad), "float64")


def test_ctc_loss_infeasible_and_zero_infinity() -> None:
    rng = np.random.default_rng(13)
    T, N, C = 6, 3, 4
    tg = np.array([[1, 1, 2, 3], [1, 2, 3, 1], [2, 2, 2, 2]])
    il = np.array([6, 3, 6])  # sample 1: 4 labels in 3 steps; sample 2: 4 repeats need 7 steps
    tl = np.array([4, 4, 4])
    x = rng.standard_normal((T, N, C))
    for zi in (False, True):
        for red in ("none", "sum"):
            tx, lx = torch.tensor(x, requires_grad=True), lg.tensor(x, requires_grad=True)
            to = TF.ctc_loss(tx.log_softmax(2), torch.tensor(tg), torch.tensor(il), torch.tensor(tl),
                             reduction=red, zero_infinity=zi)
            lo = LF.ctc_loss(lx.log_softmax(2), lg.tensor(tg), lg.tensor(il), lg.tensor(tl),
                             reduction=red, zero_infinity=zi)
            np.testing.assert_allclose(_np(lo), _np(to), rtol=1e-10)
            if zi:
                to.sum().backward()
                lo.sum().backward()
                _close(_np(lx.grad), _np(tx.grad), "float64")


def test_ctc_loss_errors() -> None:
    for mod in (torch, lg):
        lp = mod.randn(5, 2, 4).log_softmax(2)
        tg = mod.tensor([[1, 2], [3, 1]])
        with pytest.raises(RuntimeError):  # input length beyond T
            mod.nn.functional.ctc_loss(lp, tg, mod.tensor([6, 5]), mod.tensor([2, 2]))
        with pytest.raises(RuntimeError):  # target length beyond the padded targets
            mod.nn.functional.ctc_loss(lp, tg, mod.tensor([5, 5]), mod.tensor([3, 2]))
        with pytest.raises(RuntimeError):  # blank out of range
            mod.nn.functional.ctc_loss(lp, tg, mod.tensor([5, 5]), mod.tensor([2, 2]), blank=4)
        with pytest.raises(ValueError):
            mod.nn.CTCLoss(reduction="avg")(lp, tg, mod.tensor([5, 5]), mod.tensor([2, 2]))


def test_functional_call_parametrized_module() -> None:
    rng = np.random.default_rng(14)
    tm, lm = torch.nn.Linear(2, 3).double(), lg.nn.Linear(2, 3).double()
    lm.load_state_dict(_to_lg(tm.state_dict()))
    TP.weight_norm(tm)
    LP.weight_norm(lm)
    before = {k: v.numpy().copy() for k, v in lm.state_dict().items()}
    x, w, v = rng.standard_normal((4, 2)), rng.standard_normal((3, 2)), rng.standard_normal((3, 2))
    for key, val in (("weight", w), ("parametrizations.weight.original1", v)):
        tv, lv = torch.tensor(val, requires_grad=True), lg.tensor(val, requires_grad=True)
        with torch.no_grad():  # PyTorch's own call: forward only (its backward here fails on a version bump)
            ref = torch.func.functional_call(tm, {key: tv}, (torch.tensor(x),))
        g = tm.parametrizations.weight.original0.detach()
        to = TF.linear(torch.tensor(x), tv if key == "weight" else torch._weight_norm(tv, g, 0), tm.bias.detach())
        _close(_np(ref), _np(to), "float64", key)
        lo = lg.func.functional_call(lm, {key: lv}, (lg.tensor(x),))
        _close(_np(lo), _np(to), "float64", key)
        to.sum().backward()
        lo.sum().backward()
        _close(_np(lv.grad), _np(tv.grad), "float64", key)
    for k, val in lm.state_dict().items():  # nothing assigned through right_inverse
        np.testing.assert_array_equal(val.numpy(), before[k], err_msg=k)
    _close(_np(lm(lg.tensor(x))), _np(tm(torch.tensor(x))), "float64")


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_parametrizations_orthogonal_matches_torch(dtype: str) -> None:
    rng = np.random.default_rng(15)
    cases = [((3, 3), None), ((3, 3), "cayley"), ((4, 3), None), ((3, 5), None), ((4, 3), "matrix_exp"),
             ((4, 4), "householder"), ((4, 3), "cayley"), ((2, 4, 3), None), ((2, 3, 3), None)]
    for shape, omap in cases:
        tm, lm = torch.nn.Module(), lg.nn.Module()
        w = rng.standard_normal(shape).astype(dtype)
        tm.weight, lm.weight = torch.nn.Parameter(torch.tensor(w)), lg.nn.Parameter(lg.tensor(w))
        TP.orthogonal(tm, orthogonal_map=omap)
        LP.orthogonal(lm, orthogonal_map=omap)
        assert list(lm.state_dict()) == list(tm.state_dict()), shape
        if shape[-1] == shape[-2]:  # square: the registered weight is the orthogonal factor of w
            _close(_np(lm.weight), _np(tm.weight), dtype, f"init {shape} {omap}")
        with torch.no_grad():  # move off the identity, then ours takes PyTorch's state (incl. random base)
            tm.parametrizations.weight.original.add_(torch.tensor(rng.standard_normal(shape).astype(dtype) * 0.3))
        lm.load_state_dict(_to_lg(tm.state_dict()))
        tw, lw = tm.weight, lm.weight
        _close(_np(lw), _np(tw), dtype, f"{shape} {omap}")
        # orthogonal, except under householder, whose diagonal goes through .int() (0 for |x| < 1, as PyTorch)
        householder = omap == "householder" or omap is None and shape[-1] != shape[-2]
        q = _np(lw) if shape[-2] >= shape[-1] else np.swapaxes(_np(lw), -1, -2)
        if not householder:
            _close(np.swapaxes(q, -1, -2) @ q, np.broadcast_to(np.eye(q.shape[-1]), q.shape[:-2] + (q.shape[-1],) * 2),
                   "float32")
        g = rng.standard_normal(shape).astype(dtype)
        (tw * torch.tensor(g)).sum().backward()
        (lw * lg.tensor(g)).sum().backward()
        _close(_np(lm.parametrizations.weight.original.grad), _np(tm.parametrizations.weight.original.grad),
               dtype, f"grad {shape} {omap}")
    for mod, P in ((torch, TP), (lg, LP)):
        with pytest.raises(ValueError):
            P.orthogonal(mod.nn.Linear(2, 3), orthogonal_map="qr")
        with pytest.raises(ValueError):
            P.orthogonal(mod.nn.BatchNorm1d(3))
