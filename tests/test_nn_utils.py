"""nn.utils against PyTorch: gradient clipping, parameter vectors, weight and spectral norm, parametrize, fusion.

Outputs and every gradient are compared in float64 (tight) and float32 on the same inputs and
upstream gradient; state dicts go both ways; errors match PyTorch's types and leave no change.
"""

from __future__ import annotations

import copy
import warnings
from typing import Any

import numpy as np
import pytest
from helpers import (assert_close_by_dtype, assert_param_grads_match, needs_torch, numpy_of, state_to_lg,
                     state_to_torch, torch)

import lightgrad as lg
from lightgrad.nn.utils import parametrizations as LP
from lightgrad.nn.utils import parametrize as LZ

if torch is not None:
    TP = torch.nn.utils.parametrizations
    TZ = torch.nn.utils.parametrize


# ---- gradient clipping, parameters as one vector -------------------------------------------------

@needs_torch
@pytest.mark.parametrize("norm_type", [2.0, 1.0, 3.0, float("inf")])
def test_clip_grad_norm_matches_torch(norm_type: float) -> None:
    rng = np.random.default_rng(0)
    gs = [rng.standard_normal(s) for s in [(3, 4), (5,), (2, 2)]]
    lps = [lg.nn.Parameter(lg.zeros(*g.shape, dtype=lg.float64)) for g in gs]
    tps = [torch.nn.Parameter(torch.zeros(*g.shape, dtype=torch.float64)) for g in gs]
    for lp, tp, g in zip(lps, tps, gs):
        lp.grad, tp.grad = lg.tensor(g), torch.tensor(g)
    buf = lps[0].grad
    ln = lg.nn.utils.clip_grad_norm_(lps, 1.5, norm_type)
    tn = torch.nn.utils.clip_grad_norm_(tps, 1.5, norm_type)
    assert isinstance(ln, lg.Tensor)
    np.testing.assert_allclose(ln.item(), tn.item(), rtol=1e-10)
    for lp, tp in zip(lps, tps):
        np.testing.assert_allclose(lp.grad.numpy(), tp.grad.numpy(), rtol=1e-10)
    assert lps[0].grad is buf  # clipped in place


def test_clip_grad_errors_and_value() -> None:
    p = lg.nn.Parameter(lg.zeros(3))
    p.grad = lg.tensor([1.0, float("inf"), -3.0])
    with pytest.raises(RuntimeError, match="non-finite"):
        lg.nn.utils.clip_grad_norm_([p], 1.0, error_if_nonfinite=True)
    p.grad = lg.tensor([0.5, -3.0, 2.0])
    lg.nn.utils.clip_grad_value_(p, 1.0)
    np.testing.assert_array_equal(p.grad.numpy(), [0.5, -1.0, 1.0])
    assert lg.nn.utils.clip_grad_norm_([lg.nn.Parameter(lg.zeros(2))], 1.0).item() == 0.0


def test_parameters_vector_round_trip() -> None:
    m = lg.nn.Sequential(lg.nn.Linear(3, 2), lg.nn.Linear(2, 1))
    params = list(m.parameters())
    vec = lg.nn.utils.parameters_to_vector(m.parameters())
    assert tuple(vec.shape) == (sum(p.numel() for p in params),)
    new = lg.arange(vec.numel(), dtype=lg.float32)
    ptrs = [p.data_ptr() for p in params]
    lg.nn.utils.vector_to_parameters(new, m.parameters())
    np.testing.assert_array_equal(lg.nn.utils.parameters_to_vector(m.parameters()).detach().numpy(), new.numpy())
    assert [p.data_ptr() for p in m.parameters()] == ptrs
    with pytest.raises(TypeError):
        lg.nn.utils.vector_to_parameters(new.numpy(), m.parameters())


# ---- weight_norm, spectral_norm (the hooks) ------------------------------------------------------

def _pair(cls: str, *args: Any) -> tuple[Any, Any]:
    tm, lm = getattr(torch.nn, cls)(*args).double(), getattr(lg.nn, cls)(*args).double()
    lm.load_state_dict(state_to_lg(tm.state_dict()))
    return tm, lm


def _step(tm: Any, lm: Any, x: np.ndarray, rng: np.random.Generator) -> None:
    for m in (tm, lm):
        for p in m.parameters():
            p.grad = None
    to, lo = tm(torch.tensor(x)), lm(lg.tensor(x))
    assert_close_by_dtype(numpy_of(lo), numpy_of(to), "float64")
    g = rng.standard_normal(tuple(to.shape))
    to.backward(torch.tensor(g))
    lo.backward(lg.tensor(g))
    lp = dict(lm.named_parameters())
    for n, p in tm.named_parameters():
        assert_close_by_dtype(lp[n].grad.numpy(), p.grad.numpy(), "float64", n)
    for k, v in tm.state_dict().items():
        assert_close_by_dtype(lm.state_dict()[k].numpy(), v.numpy(), "float64", k)


@needs_torch
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
    lm.load_state_dict(state_to_lg(tm.state_dict()))
    _step(tm, lm, rng.standard_normal(xshape), rng)
    torch.nn.utils.remove_weight_norm(tm)
    lg.nn.utils.remove_weight_norm(lm)
    assert list(lm.state_dict()) == list(tm.state_dict()) and isinstance(lm.weight, lg.nn.Parameter)
    _step(tm, lm, rng.standard_normal(xshape), rng)


@needs_torch
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


@needs_torch
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
    lm.load_state_dict(state_to_lg(tm.state_dict()))  # the same random u, v
    for train in [True, True, False, True]:  # power iteration only in training
        tm.train(train)
        lm.train(train)
        _step(tm, lm, rng.standard_normal(xshape), rng)
    torch.nn.utils.remove_spectral_norm(tm)
    lg.nn.utils.remove_spectral_norm(lm)
    assert list(lm.state_dict()) == list(tm.state_dict())
    assert_close_by_dtype(numpy_of(lm.weight), numpy_of(tm.weight), "float64")
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


# ---- fusion --------------------------------------------------------------------------------------

def _trained_bn(tbn: Any, lbn: Any, rng: np.random.Generator) -> None:
    with torch.no_grad():
        tbn.running_mean.copy_(torch.tensor(rng.standard_normal(tbn.num_features)))
        tbn.running_var.copy_(torch.tensor(rng.uniform(0.5, 2, tbn.num_features)))
        if tbn.weight is not None:
            tbn.weight.copy_(torch.tensor(rng.uniform(0.5, 1.5, tbn.num_features)))
            tbn.bias.copy_(torch.tensor(rng.standard_normal(tbn.num_features)))
    lbn.load_state_dict(state_to_lg(tbn.state_dict()))
    tbn.eval()
    lbn.eval()


@needs_torch
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_fuse_conv_bn_matches_torch(dtype: str) -> None:
    rng = np.random.default_rng(2)
    td, ld = getattr(torch, dtype), getattr(lg, dtype)
    cases = [("Conv2d", dict(bias=True), False, "BatchNorm2d", True), ("Conv1d", dict(bias=False), False,
             "BatchNorm1d", False), ("ConvTranspose2d", dict(bias=True, groups=1), True, "BatchNorm2d", True)]
    for conv_name, kw, transpose, bn_name, affine in cases:
        tconv = getattr(torch.nn, conv_name)(2, 4, 3, **kw).to(td).eval()
        lconv = getattr(lg.nn, conv_name)(2, 4, 3, **kw).to(ld).eval()
        lconv.load_state_dict(state_to_lg(tconv.state_dict()))
        tbn, lbn = getattr(torch.nn, bn_name)(4, affine=affine).to(td), getattr(lg.nn, bn_name)(4, affine=affine).to(ld)
        _trained_bn(tbn, lbn, rng)
        tf = torch.nn.utils.fuse_conv_bn_eval(tconv, tbn, transpose)
        lf = lg.nn.utils.fuse_conv_bn_eval(lconv, lbn, transpose)
        assert lconv.bias is None or lf.bias is not lconv.bias  # a copy: the original is untouched
        for k, v in tf.state_dict().items():
            assert_close_by_dtype(lf.state_dict()[k].numpy(), v.numpy(), dtype, k)
        assert lf.weight.dtype == ld and isinstance(lf.bias, lg.nn.Parameter)
        x = rng.standard_normal((2, 2, 6) + ((6,) if "2d" in conv_name else ())).astype(dtype)
        assert_close_by_dtype(numpy_of(lf(lg.tensor(x))), numpy_of(lbn(lconv(lg.tensor(x)))), dtype)


@needs_torch
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_fuse_linear_bn_matches_torch(dtype: str) -> None:
    rng = np.random.default_rng(3)
    td, ld = getattr(torch, dtype), getattr(lg, dtype)
    for bias in (True, False):
        tl, ll = torch.nn.Linear(3, 4, bias=bias).to(td).eval(), lg.nn.Linear(3, 4, bias=bias).to(ld).eval()
        ll.load_state_dict(state_to_lg(tl.state_dict()))
        tbn, lbn = torch.nn.BatchNorm1d(4).to(td), lg.nn.BatchNorm1d(4).to(ld)
        _trained_bn(tbn, lbn, rng)
        tf, lf = torch.nn.utils.fuse_linear_bn_eval(tl, tbn), lg.nn.utils.fuse_linear_bn_eval(ll, lbn)
        for k, v in tf.state_dict().items():
            assert_close_by_dtype(lf.state_dict()[k].numpy(), v.numpy(), dtype, k)
        tw = torch.nn.utils.fusion.fuse_linear_bn_weights(tl.weight, tl.bias, tbn.running_mean, tbn.running_var,
                                                          tbn.eps, tbn.weight, tbn.bias)
        lw = lg.nn.utils.fusion.fuse_linear_bn_weights(ll.weight, ll.bias, lbn.running_mean, lbn.running_var,
                                                       lbn.eps, lbn.weight, lbn.bias)
        for a, b in zip(lw, tw, strict=True):
            assert_close_by_dtype(numpy_of(a), numpy_of(b), dtype)
            assert a.requires_grad == b.requires_grad


@needs_torch
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


@needs_torch
def test_parametrize_matches_torch() -> None:
    rng = np.random.default_rng(4)
    tm, lm = torch.nn.Linear(3, 3).double(), lg.nn.Linear(3, 3).double()
    lm.load_state_dict(state_to_lg(tm.state_dict()))
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
    assert_close_by_dtype(numpy_of(lm.weight), numpy_of(tm.weight), "float64")
    assert_close_by_dtype(numpy_of(lm.weight), numpy_of(lm.weight).T, "float64")  # symmetric
    x = rng.standard_normal((4, 3))
    lo, to = lm(lg.tensor(x)), tm(torch.tensor(x))
    assert_close_by_dtype(numpy_of(lo), numpy_of(to), "float64")
    g = rng.standard_normal((4, 3))
    lo.backward(lg.tensor(g))
    to.backward(torch.tensor(g))
    assert_param_grads_match(lm, tm, "float64")
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
    lm2.load_state_dict(state_to_lg(tm2.state_dict()))
    assert_close_by_dtype(numpy_of(lm2.weight), numpy_of(tm2.weight), "float64")
    tm.load_state_dict(state_to_torch(lm2.state_dict()))
    assert_close_by_dtype(numpy_of(tm.weight), numpy_of(lm2.weight), "float64")
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
        assert_close_by_dtype(numpy_of(l3.weight), numpy_of(t3.weight), "float64")


@needs_torch
def test_parametrize_right_inverse_assignment_and_buffer() -> None:
    rng = np.random.default_rng(5)
    tm, lm = torch.nn.Linear(3, 3).double(), lg.nn.Linear(3, 3).double()
    TZ.register_parametrization(tm, "weight", _symmetric(torch))
    LZ.register_parametrization(lm, "weight", _symmetric(lg))
    w = rng.standard_normal((3, 3))
    original = lm.parametrizations.weight.original
    tm.weight, lm.weight = torch.tensor(w), lg.tensor(w)
    assert lm.parametrizations.weight.original is original  # updated in place
    assert_close_by_dtype(numpy_of(lm.parametrizations.weight.original), numpy_of(tm.parametrizations.weight.original),
                          "float64")
    assert_close_by_dtype(numpy_of(lm.weight), numpy_of(tm.weight), "float64")
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


@needs_torch
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


# ---- parametrizations: weight_norm, spectral_norm, orthogonal ------------------------------------

@needs_torch
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_parametrizations_weight_norm_matches_torch(dtype: str) -> None:
    rng = np.random.default_rng(6)
    td, ld = getattr(torch, dtype), getattr(lg, dtype)
    for name, args, dim, xshape in [("Linear", (4, 3), 0, (5, 4)), ("Conv2d", (2, 3, 3), 1, (2, 2, 5, 5)),
                                    ("Linear", (4, 3), None, (5, 4))]:
        tm, lm = getattr(torch.nn, name)(*args).to(td), getattr(lg.nn, name)(*args).to(ld)
        lm.load_state_dict(state_to_lg(tm.state_dict()))
        TP.weight_norm(tm, dim=dim)
        LP.weight_norm(lm, dim=dim)
        assert list(lm.state_dict()) == list(tm.state_dict())
        for k, v in tm.state_dict().items():
            assert_close_by_dtype(lm.state_dict()[k].numpy(), v.numpy(), dtype, k)
        x = rng.standard_normal(xshape).astype(dtype)
        lo, to = lm(lg.tensor(x)), tm(torch.tensor(x))
        assert_close_by_dtype(numpy_of(lo), numpy_of(to), dtype)
        g = rng.standard_normal(tuple(to.shape)).astype(dtype)
        lo.backward(lg.tensor(g))
        to.backward(torch.tensor(g))
        assert_param_grads_match(lm, tm, dtype)
        # load torch's trained state into ours and back
        with torch.no_grad():
            tm.parametrizations.weight.original0.mul_(2)
        lm.load_state_dict(state_to_lg(tm.state_dict()))
        assert_close_by_dtype(numpy_of(lm.weight), numpy_of(tm.weight), dtype)
        tm.load_state_dict(state_to_torch(lm.state_dict()))
        LZ.remove_parametrizations(lm, "weight")
        TZ.remove_parametrizations(tm, "weight")
        assert_close_by_dtype(numpy_of(lm.weight), numpy_of(tm.weight), dtype)


@needs_torch
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_parametrizations_spectral_norm_matches_torch(dtype: str) -> None:
    rng = np.random.default_rng(7)
    td, ld = getattr(torch, dtype), getattr(lg, dtype)
    for name, args, kw, xshape in [("Linear", (4, 3), {}, (5, 4)), ("Conv2d", (2, 3, 3), {"n_power_iterations": 3},
                                   (2, 2, 5, 5)), ("ConvTranspose2d", (3, 2, 2), {}, (1, 3, 3, 3))]:
        tm, lm = getattr(torch.nn, name)(*args).to(td), getattr(lg.nn, name)(*args).to(ld)
        lm.load_state_dict(state_to_lg(tm.state_dict()))
        TP.spectral_norm(tm, **kw)
        LP.spectral_norm(lm, **kw)
        assert list(lm.state_dict()) == list(tm.state_dict())
        lm.load_state_dict(state_to_lg(tm.state_dict()))  # the same power-iteration start vectors
        for train in (True, False, True):
            tm.train(train)
            lm.train(train)
            x = rng.standard_normal(xshape).astype(dtype)
            lo, to = lm(lg.tensor(x)), tm(torch.tensor(x))
            assert_close_by_dtype(numpy_of(lo), numpy_of(to), dtype, f"{name} train={train}")
            g = rng.standard_normal(tuple(to.shape)).astype(dtype)
            lo.backward(lg.tensor(g))
            to.backward(torch.tensor(g))
            assert_param_grads_match(lm, tm, dtype)
            for k, v in tm.state_dict().items():
                assert_close_by_dtype(lm.state_dict()[k].numpy(), v.numpy(), dtype, k)
    # a 1-D parameter is normalised to unit norm
    tb, lb = torch.nn.BatchNorm1d(3), lg.nn.BatchNorm1d(3)
    TP.spectral_norm(tb)
    LP.spectral_norm(lb)
    assert_close_by_dtype(numpy_of(lb.weight), numpy_of(tb.weight), "float32")
    for mod, P in ((torch, TP), (lg, LP)):
        with pytest.raises(IndexError):
            P.spectral_norm(mod.nn.Linear(2, 3), dim=2)
        with pytest.raises(ValueError):
            P.spectral_norm(mod.nn.Linear(2, 3), n_power_iterations=0)
        with pytest.raises(ValueError):
            P.spectral_norm(mod.nn.Linear(2, 3), name="nope")


@needs_torch
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
            assert_close_by_dtype(numpy_of(lm.weight), numpy_of(tm.weight), dtype, f"init {shape} {omap}")
        with torch.no_grad():  # move off the identity, then ours takes PyTorch's state (incl. random base)
            tm.parametrizations.weight.original.add_(torch.tensor(rng.standard_normal(shape).astype(dtype) * 0.3))
        lm.load_state_dict(state_to_lg(tm.state_dict()))
        tw, lw = tm.weight, lm.weight
        assert_close_by_dtype(numpy_of(lw), numpy_of(tw), dtype, f"{shape} {omap}")
        # orthogonal, except under householder, whose diagonal goes through .int() (0 for |x| < 1, as PyTorch)
        householder = omap == "householder" or omap is None and shape[-1] != shape[-2]
        q = numpy_of(lw) if shape[-2] >= shape[-1] else np.swapaxes(numpy_of(lw), -1, -2)
        if not householder:
            assert_close_by_dtype(np.swapaxes(q, -1, -2) @ q, np.broadcast_to(np.eye(q.shape[-1]),
                                                                              q.shape[:-2] + (q.shape[-1],) * 2),
                                  "float32")
        g = rng.standard_normal(shape).astype(dtype)
        (tw * torch.tensor(g)).sum().backward()
        (lw * lg.tensor(g)).sum().backward()
        assert_close_by_dtype(numpy_of(lm.parametrizations.weight.original.grad),
                              numpy_of(tm.parametrizations.weight.original.grad),
                              dtype, f"grad {shape} {omap}")
    for mod, P in ((torch, TP), (lg, LP)):
        with pytest.raises(ValueError):
            P.orthogonal(mod.nn.Linear(2, 3), orthogonal_map="qr")
        with pytest.raises(ValueError):
            P.orthogonal(mod.nn.BatchNorm1d(3))
