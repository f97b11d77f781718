"""lightgrad.distributions against torch.distributions: values, gradients, shapes, validation, sampling.

The families, their KL divergences and constraints; the transforms and TransformedDistribution;
LogNormal, Cauchy, Gumbel and Poisson (a class of their own below: their tests share names)."""

from __future__ import annotations

import math
import pickle
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import lightgrad as lg
import lightgrad.distributions as LD
from lightgrad.distributions import utils as lg_utils

torch = pytest.importorskip("torch")
TD = torch.distributions
TT = torch.distributions.transforms

rng = np.random.default_rng(0)
DTYPES = [("float32", 1e-5), ("float64", 1e-10)]


def _spd(n: int, batch: tuple[int, ...] = ()) -> np.ndarray:
    a = rng.standard_normal(batch + (n, n))
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)


# name -> (params as numpy, build(module, **tensors), value sampler, has cdf/icdf)
CASES: dict[str, tuple[dict[str, np.ndarray], Callable[..., Any], Callable[[], np.ndarray], bool]] = {
    "normal": ({"loc": rng.standard_normal((3, 2)), "scale": rng.uniform(0.5, 2, (3, 2))},
               lambda D, loc, scale: D.Normal(loc, scale), lambda: rng.standard_normal((4, 3, 2)), True),
    "uniform": ({"low": rng.uniform(-2, -1, (3,)), "high": rng.uniform(1, 2, (3,))},
                lambda D, low, high: D.Uniform(low, high), lambda: rng.uniform(-0.9, 0.9, (5, 3)), True),
    "exponential": ({"rate": rng.uniform(0.5, 2, (4,))}, lambda D, rate: D.Exponential(rate),
                    lambda: rng.uniform(0.1, 3, (2, 4)), True),
    "laplace": ({"loc": rng.standard_normal((3,)), "scale": rng.uniform(0.5, 2, (3,))},
                lambda D, loc, scale: D.Laplace(loc, scale), lambda: rng.standard_normal((2, 3)), True),
    "bernoulli_probs": ({"probs": rng.uniform(0.1, 0.9, (3, 2))}, lambda D, probs: D.Bernoulli(probs=probs),
                        lambda: rng.integers(0, 2, (3, 2)).astype(float), False),
    "bernoulli_logits": ({"logits": rng.standard_normal((3,))}, lambda D, logits: D.Bernoulli(logits=logits),
                         lambda: rng.integers(0, 2, (4, 3)).astype(float), False),
    "categorical_probs": ({"probs": rng.uniform(0.1, 1, (3, 4))}, lambda D, probs: D.Categorical(probs=probs),
                          lambda: rng.integers(0, 4, (2, 3)).astype(float), False),
    "categorical_logits": ({"logits": rng.standard_normal((2, 5))},
                           lambda D, logits: D.Categorical(logits=logits),
                           lambda: rng.integers(0, 5, (2,)).astype(float), False),
    "onehot": ({"logits": rng.standard_normal((3, 4))}, lambda D, logits: D.OneHotCategorical(logits=logits),
               lambda: np.eye(4)[rng.integers(0, 4, (2, 3))], False),
    "mvn_cov": ({"loc": rng.standard_normal((2, 3)), "cov": _spd(3, (2,))},
                lambda D, loc, cov: D.MultivariateNormal(loc, covariance_matrix=cov),
                lambda: rng.standard_normal((4, 2, 3)), False),
    "mvn_tril": ({"loc": rng.standard_normal((3,)), "tril": np.linalg.cholesky(_spd(3))},
                 lambda D, loc, tril: D.MultivariateNormal(loc, scale_tril=tril),
                 lambda: rng.standard_normal((2, 3)), False),
    "mvn_prec": ({"loc": rng.standard_normal((3,)), "prec": _spd(3)},
                 lambda D, loc, prec: D.MultivariateNormal(loc, precision_matrix=prec),
                 lambda: rng.standard_normal((2, 3)), False),
    "independent": ({"loc": rng.standard_normal((3, 2)), "scale": rng.uniform(0.5, 2, (3, 2))},
                    lambda D, loc, scale: D.Independent(D.Normal(loc, scale), 1),
                    lambda: rng.standard_normal((3, 2)), False),
}


def _pair(params: dict[str, np.ndarray], dtype: str) -> tuple[dict[str, Any], dict[str, Any]]:
    ours = {k: lg.tensor(v.astype(dtype), requires_grad=True) for k, v in params.items()}
    ref = {k: torch.tensor(v.astype(dtype), requires_grad=True) for k, v in params.items()}
    return ours, ref


def _close(a: Any, b: Any, tol: float) -> None:
    np.testing.assert_allclose(np.asarray(a.detach().numpy(), float), b.detach().numpy().astype(float),
                               rtol=tol * 10, atol=tol * 10)


@pytest.mark.parametrize("dtype,tol", DTYPES)
@pytest.mark.parametrize("name", list(CASES))
def test_values_and_grads_match_torch(name: str, dtype: str, tol: float) -> None:
    params, build, sample_value, has_cdf = CASES[name]
    ours, ref = _pair(params, dtype)
    d, t = build(LD, **ours), build(TD, **ref)
    assert d.batch_shape == tuple(t.batch_shape) and d.event_shape == tuple(t.event_shape)
    value = sample_value().astype(dtype)
    lp, tlp = d.log_prob(lg.tensor(value)), t.log_prob(torch.tensor(value))
    assert lp.dtype.name == dtype
    _close(lp, tlp, tol)
    _close(d.entropy(), t.entropy(), tol)
    for prop in ("mean", "variance", "stddev", "mode"):
        a, b = getattr(d, prop), getattr(t, prop)
        assert tuple(a.shape) == tuple(b.shape), prop
        if b.is_floating_point():
            np.testing.assert_array_equal(np.isnan(a.detach().numpy()), np.isnan(b.detach().numpy()))
            b = b.nan_to_num(0.0)
            a = a.nan_to_num(0.0)
        _close(a, b, tol)
    # gradients of log_prob, entropy (and cdf, icdf) w.r.t. every parameter
    weights = rng.standard_normal(tuple(tlp.shape)).astype(dtype)
    loss = (lp * lg.tensor(weights)).sum() + d.entropy().sum()
    tloss = (tlp * torch.tensor(weights)).sum() + t.entropy().sum()
    if has_cdf:
        cdf, tcdf = d.cdf(lg.tensor(value)), t.cdf(torch.tensor(value))
        _close(cdf, tcdf, tol)
        q = rng.uniform(0.05, 0.95, tuple(t.batch_shape)).astype(dtype)
        icdf, ticdf = d.icdf(lg.tensor(q)), t.icdf(torch.tensor(q))
        _close(icdf, ticdf, tol)
        loss = loss + cdf.sum() + icdf.sum()
        tloss = tloss + tcdf.sum() + ticdf.sum()
    loss.backward()
    tloss.backward()
    for k in params:
        assert ours[k].grad is not None, k
        _close(ours[k].grad, ref[k].grad, tol * 10)


KL_CASES: dict[str, tuple[Callable[[Any, dict[str, Any]], tuple[Any, Any]], dict[str, np.ndarray]]] = {
    "normal": (lambda D, p: (D.Normal(p["a"], p["b"]), D.Normal(p["c"], p["d"])),
               {"a": rng.standard_normal(3), "b": rng.uniform(0.5, 2, 3), "c": rng.standard_normal(3),
                "d": rng.uniform(0.5, 2, 3)}),
    "bernoulli": (lambda D, p: (D.Bernoulli(probs=p["a"]), D.Bernoulli(logits=p["b"])),
                  {"a": rng.uniform(0.1, 0.9, 4), "b": rng.standard_normal(4)}),
    "categorical": (lambda D, p: (D.Categorical(logits=p["a"]), D.Categorical(probs=p["b"])),
                    {"a": rng.standard_normal((2, 5)), "b": rng.uniform(0.1, 1, (2, 5))}),
    "onehot": (lambda D, p: (D.OneHotCategorical(logits=p["a"]), D.OneHotCategorical(logits=p["b"])),
               {"a": rng.standard_normal((2, 5)), "b": rng.standard_normal((2, 5))}),
    "uniform": (lambda D, p: (D.Uniform(p["a"], p["b"]), D.Uniform(p["c"], p["d"])),
                {"a": rng.uniform(-1, 0, 3), "b": rng.uniform(1, 2, 3), "c": rng.uniform(-3, -2, 3),
                 "d": rng.uniform(2, 3, 3)}),
    "exponential": (lambda D, p: (D.Exponential(p["a"]), D.Exponential(p["b"])),
                    {"a": rng.uniform(0.5, 2, 3), "b": rng.uniform(0.5, 2, 3)}),
    "laplace": (lambda D, p: (D.Laplace(p["a"], p["b"]), D.Laplace(p["c"], p["d"])),
                {"a": rng.standard_normal(3), "b": rng.uniform(0.5, 2, 3), "c": rng.standard_normal(3),
                 "d": rng.uniform(0.5, 2, 3)}),
    "mvn": (lambda D, p: (D.MultivariateNormal(p["a"], covariance_matrix=p["b"]),
                          D.MultivariateNormal(p["c"], scale_tril=p["d"])),
            {"a": rng.standard_normal((2, 3)), "b": _spd(3, (2,)), "c": rng.standard_normal(3),
             "d": np.linalg.cholesky(_spd(3))}),
    "independent": (lambda D, p: (D.Independent(D.Normal(p["a"], p["b"]), 1),
                                  D.Independent(D.Normal(p["c"], p["d"]), 1)),
                    {"a": rng.standard_normal((2, 3)), "b": rng.uniform(0.5, 2, (2, 3)),
                     "c": rng.standard_normal((2, 3)), "d": rng.uniform(0.5, 2, (2, 3))}),
}


@pytest.mark.parametrize("dtype,tol", DTYPES)
@pytest.mark.parametrize("name", list(KL_CASES))
def test_kl_divergence_matches_torch(name: str, dtype: str, tol: float) -> None:
    build, params = KL_CASES[name]
    ours, ref = _pair(params, dtype)
    kl = LD.kl_divergence(*build(LD, ours))
    tkl = TD.kl_divergence(*build(TD, ref))
    _close(kl, tkl, tol)
    w = rng.standard_normal(tuple(tkl.shape)).astype(dtype)
    (kl * lg.tensor(w)).sum().backward()
    (tkl * torch.tensor(w)).sum().backward()
    for k in params:
        if ref[k].grad is None:
            continue
        _close(ours[k].grad, ref[k].grad, tol * 10)


def test_kl_infinite_cases_and_unregistered_pair() -> None:
    p, q = LD.Uniform(lg.tensor([0.0]), lg.tensor([2.0])), LD.Uniform(lg.tensor([0.5]), lg.tensor([1.0]))
    tp, tq = TD.Uniform(torch.tensor([0.0]), torch.tensor([2.0])), TD.Uniform(torch.tensor([0.5]), torch.tensor([1.0]))
    assert LD.kl_divergence(p, q).tolist() == TD.kl_divergence(tp, tq).tolist()
    b = LD.kl_divergence(LD.Bernoulli(probs=lg.tensor([0.0, 0.5])), LD.Bernoulli(probs=lg.tensor([0.0, 0.0])))
    tb = TD.kl_divergence(TD.Bernoulli(probs=torch.tensor([0.0, 0.5])), TD.Bernoulli(probs=torch.tensor([0.0, 0.0])))
    assert b.tolist() == tb.tolist()
    with pytest.raises(NotImplementedError):
        LD.kl_divergence(LD.Normal(0.0, 1.0), LD.Categorical(logits=lg.zeros(2)))
    with pytest.raises(NotImplementedError):
        TD.kl_divergence(TD.Normal(0.0, 1.0), TD.Categorical(logits=torch.zeros(2)))


def test_register_kl_most_specific_rule_wins() -> None:
    class MyNormal(LD.Normal):
        pass

    calls = []

    @LD.register_kl(MyNormal, LD.Normal)
    def _kl(p: Any, q: Any) -> Any:
        calls.append(1)
        return lg.zeros(())

    try:
        assert LD.kl_divergence(MyNormal(0.0, 1.0), LD.Normal(1.0, 1.0)).item() == 0.0
        assert LD.kl_divergence(LD.Normal(0.0, 1.0), LD.Normal(1.0, 1.0)).item() == pytest.approx(0.5)
        assert calls == [1]
    finally:
        from lightgrad.distributions import kl as kl_module
        del kl_module._KL_REGISTRY[MyNormal, LD.Normal]
        kl_module._KL_MEMOIZE.clear()
    with pytest.raises(TypeError):
        LD.register_kl(int, LD.Normal)


def test_shapes_expand_and_sample_shapes() -> None:
    loc, scale = lg.zeros(3), lg.ones(3)
    cases = [
        (LD.Normal(loc, scale), TD.Normal(torch.zeros(3), torch.ones(3))),
        (LD.Normal(0.0, 1.0), TD.Normal(0.0, 1.0)),
        (LD.Bernoulli(logits=lg.zeros(3)), TD.Bernoulli(logits=torch.zeros(3))),
        (LD.Categorical(logits=lg.zeros(3, 4)), TD.Categorical(logits=torch.zeros(3, 4))),
        (LD.OneHotCategorical(probs=lg.ones(3, 4)), TD.OneHotCategorical(probs=torch.ones(3, 4))),
        (LD.MultivariateNormal(lg.zeros(3, 2), lg.eye(2)), TD.MultivariateNormal(torch.zeros(3, 2), torch.eye(2))),
        (LD.Independent(LD.Normal(lg.zeros(2, 3), 1.0), 1), TD.Independent(TD.Normal(torch.zeros(2, 3), 1.0), 1)),
        (LD.Uniform(lg.zeros(3), 1.0), TD.Uniform(torch.zeros(3), 1.0)),
        (LD.Exponential(lg.ones(3)), TD.Exponential(torch.ones(3))),
        (LD.Laplace(lg.zeros(3), 1.0), TD.Laplace(torch.zeros(3), 1.0)),
    ]
    for d, t in cases:
        assert (d.batch_shape, d.event_shape) == (tuple(t.batch_shape), tuple(t.event_shape)), t
        assert isinstance(d.batch_shape, lg.Size) and isinstance(d.event_shape, lg.Size)
        assert d.has_rsample == t.has_rsample and d.has_enumerate_support == t.has_enumerate_support, t
        assert tuple(d.sample().shape) == tuple(t.sample().shape), t
        assert tuple(d.sample((5, 2)).shape) == tuple(t.sample((5, 2)).shape), t
        assert d.sample().dtype.name == str(t.sample().dtype).split(".")[-1], t
        if t.has_enumerate_support:
            assert tuple(d.enumerate_support().shape) == tuple(t.enumerate_support().shape), t
            assert tuple(d.enumerate_support(False).shape) == tuple(t.enumerate_support(False).shape), t
        new_batch = (4,) + tuple(t.batch_shape) if t.batch_shape else (4,)
        de, te = d.expand(new_batch), t.expand(new_batch)
        assert type(de) is type(d)
        assert (de.batch_shape, de.event_shape) == (tuple(te.batch_shape), tuple(te.event_shape)), t
        assert tuple(de.sample((2,)).shape) == tuple(te.sample((2,)).shape), t
        x = te.sample()
        np.testing.assert_allclose(de.log_prob(lg.tensor(x.numpy())).numpy(), te.log_prob(x).numpy(), rtol=1e-5)
        assert repr(d) == repr(t).replace("torch.", "lightgrad."), t


def test_repr_and_constraints_match_torch() -> None:
    C, TC = LD.constraints, TD.constraints
    for name in ("real", "positive", "nonnegative", "unit_interval", "simplex", "boolean", "real_vector",
                 "lower_cholesky", "positive_definite", "one_hot"):
        assert repr(getattr(C, name)) == repr(getattr(TC, name)), name
    assert repr(C.interval(0.0, 2.0)) == repr(TC.interval(0.0, 2.0))
    assert repr(C.integer_interval(0, 3)) == repr(TC.integer_interval(0, 3))
    assert repr(LD.Normal(0.0, 1.0).support) == repr(TD.Normal(0.0, 1.0).support)
    assert repr(LD.Categorical(logits=lg.zeros(3)).support) == repr(TD.Categorical(logits=torch.zeros(3)).support)
    x = np.array([[1.0, 0.0], [0.5, 2.0]])
    for name in ("lower_cholesky", "positive_definite", "simplex", "real_vector", "one_hot"):
        for v in (x, x.T, -x, np.array([[0.2, 0.8], [1.0, 0.0]])):
            assert getattr(C, name).check(lg.tensor(v)).tolist() == getattr(TC, name).check(torch.tensor(v)).tolist()
    assert C.is_dependent(C.dependent) and C.is_dependent(LD.Uniform.support) and not C.is_dependent(C.real)


def test_validation_errors_match_torch() -> None:
    bad = [
        lambda D, T: D.Normal(T.zeros(2), -T.ones(2)),
        lambda D, T: D.Normal(T.zeros(2), T.ones(2)).log_prob(T.zeros(3)),
        lambda D, T: D.Bernoulli(),
        lambda D, T: D.Bernoulli(probs=T.tensor([0.5]), logits=T.tensor([0.0])),
        lambda D, T: D.Bernoulli(probs=T.tensor([1.5])),
        lambda D, T: D.Bernoulli(probs=T.tensor([0.5])).log_prob(T.tensor([0.5])),
        lambda D, T: D.Categorical(probs=T.tensor(1.0)),
        lambda D, T: D.Categorical(probs=T.tensor([-0.5, 1.5])),
        lambda D, T: D.Categorical(logits=T.zeros(3)).log_prob(T.tensor([3.0])),
        lambda D, T: D.Uniform(T.ones(2), T.zeros(2)),
        lambda D, T: D.Exponential(T.tensor([0.0])),
        lambda D, T: D.Exponential(T.tensor([1.0])).log_prob(T.tensor([-1.0])),
        lambda D, T: D.MultivariateNormal(T.zeros(2)),
        lambda D, T: D.MultivariateNormal(T.zeros(2), T.eye(2), scale_tril=T.eye(2)),
        lambda D, T: D.MultivariateNormal(T.tensor(0.0), T.eye(2)),
        lambda D, T: D.MultivariateNormal(T.zeros(2), -T.eye(2)),
        lambda D, T: D.MultivariateNormal(T.zeros(2), scale_tril=T.ones(2, 2)),
        lambda D, T: D.Independent(D.Normal(T.zeros(2), 1.0), 2),
        lambda D, T: D.Normal(T.zeros(2), T.ones(2)).log_prob([0.0, 0.0]),
    ]
    for i, f in enumerate(bad):
        with pytest.raises(Exception) as ref:  # noqa: PT011 (the type is whatever torch raises)
            f(TD, torch)
        with pytest.raises(ref.type) as ours:
            f(LD, lg)
        if ref.type is ValueError:
            first = str(ref.value).split("(")[0].split(":")[0]
            assert str(ours.value).startswith(first), (i, str(ours.value), str(ref.value))
    # validate_args=False skips the checks, like torch
    LD.Normal(lg.zeros(1), -lg.ones(1), validate_args=False)
    LD.Normal(lg.zeros(1), lg.ones(1), validate_args=False).log_prob(lg.zeros(3))


def test_sampling_statistics() -> None:
    lg.manual_seed(0)
    n = 40000
    loc, scale = lg.tensor([1.0, -2.0]), lg.tensor([0.5, 2.0])
    cases = [LD.Normal(loc, scale), LD.Uniform(lg.tensor([0.0, -1.0]), lg.tensor([1.0, 3.0])),
             LD.Exponential(lg.tensor([0.5, 3.0])), LD.Laplace(loc, scale),
             LD.Bernoulli(probs=lg.tensor([0.2, 0.7])),
             LD.OneHotCategorical(probs=lg.tensor([0.1, 0.2, 0.7])),
             LD.MultivariateNormal(loc, scale_tril=lg.tensor([[1.0, 0.0], [0.8, 0.6]]))]
    for d in cases:
        s = d.sample((n,)).numpy().astype(np.float64)
        se = np.sqrt(d.variance.numpy() / n)
        np.testing.assert_array_less(np.abs(s.mean(0) - d.mean.numpy()), 5 * se + 1e-9, err_msg=repr(d))
        np.testing.assert_allclose(s.var(0), d.variance.numpy(), rtol=0.05, err_msg=repr(d))
    mvn = cases[-1]
    cov = np.cov(mvn.sample((n,)).numpy().T)
    np.testing.assert_allclose(cov, mvn.covariance_matrix.numpy(), atol=0.05)
    probs = np.array([[0.1, 0.0, 0.6, 0.3], [0.25, 0.25, 0.25, 0.25]])
    cat = LD.Categorical(probs=lg.tensor(probs))
    s = cat.sample((n,)).numpy()
    assert s.dtype == np.int64 and s.min() >= 0 and s.max() <= 3
    freq = np.stack([(s == k).mean(0) for k in range(4)], -1)
    np.testing.assert_allclose(freq, probs, atol=0.015)
    assert not (s[:, 0] == 1).any()  # a zero-probability category is never drawn


def test_sample_is_seeded_and_detached() -> None:
    loc = lg.zeros(3, requires_grad=True)
    d = LD.Normal(loc, 1.0)
    lg.manual_seed(3)
    a = d.sample((2,))
    lg.manual_seed(3)
    b = d.sample((2,))
    assert a.tolist() == b.tolist()
    assert not a.requires_grad and d.rsample().requires_grad


def test_rsample_gradients_flow_to_parameters() -> None:
    for dtype in ("float32", "float64"):
        loc = lg.tensor(np.array([0.5, -1.0], dtype), requires_grad=True)
        scale = lg.tensor(np.array([1.5, 0.3], dtype), requires_grad=True)
        lg.manual_seed(1)
        x = LD.Normal(loc, scale).rsample((3,))
        lg.manual_seed(1)
        eps = lg.randn((3, 2), dtype=getattr(lg, dtype))  # the same draw
        x.sum().backward()
        np.testing.assert_allclose(loc.grad.numpy(), [3.0, 3.0])
        np.testing.assert_allclose(scale.grad.numpy(), eps.numpy().sum(0), rtol=1e-6)
    for d_fn in (lambda lo, sc: LD.Laplace(lo, sc), lambda lo, sc: LD.Uniform(lo, lo + sc),
                 lambda lo, sc: LD.Exponential(sc), lambda lo, sc: LD.MultivariateNormal(lo, scale_tril=lg.diag(sc))):
        lo = lg.tensor([0.5, -1.0], requires_grad=True)
        sc = lg.tensor([1.5, 0.3], requires_grad=True)
        d = d_fn(lo, sc)
        d.rsample((4,)).pow(2).sum().backward()
        assert sc.grad is not None and np.isfinite(sc.grad.numpy()).all() and (sc.grad.numpy() != 0).any()


def test_vae_loss_gradients_match_torch_with_fixed_noise(monkeypatch: pytest.MonkeyPatch) -> None:
    x = rng.uniform(0, 1, (4, 6))
    w_enc, w_dec = rng.standard_normal((6, 4)) * 0.3, rng.standard_normal((2, 6)) * 0.3
    eps = rng.standard_normal((4, 2))

    def loss(T: Any, D: Any, we: Any, wd: Any) -> Any:
        h = T.tensor(x) @ we  # (B, 4)
        mu, log_sigma = h[:, :2], h[:, 2:]
        q = D.Independent(D.Normal(mu, log_sigma.exp()), 1)
        z = q.rsample()  # (B, 2)
        logits = z @ wd
        rec = D.Independent(D.Bernoulli(logits=logits), 1).log_prob(T.tensor((x > 0.5).astype(float)))
        prior = D.Independent(D.Normal(T.zeros_like(mu), T.ones_like(mu)), 1)
        return (D.kl_divergence(q, prior) - rec).mean()

    monkeypatch.setattr(lg_utils, "_standard_normal", lambda shape, dtype: lg.tensor(eps).to(dtype))
    monkeypatch.setattr(torch.distributions.normal, "_standard_normal",
                        lambda shape, dtype, device: torch.tensor(eps).to(dtype))
    we, wd = lg.tensor(w_enc, requires_grad=True), lg.tensor(w_dec, requires_grad=True)
    twe, twd = torch.tensor(w_enc, requires_grad=True), torch.tensor(w_dec, requires_grad=True)
    ours, ref = loss(lg, LD, we, wd), loss(torch, TD, twe, twd)
    np.testing.assert_allclose(ours.item(), ref.item(), rtol=1e-10)
    ours.backward()
    ref.backward()
    np.testing.assert_allclose(we.grad.numpy(), twe.grad.numpy(), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(wd.grad.numpy(), twd.grad.numpy(), rtol=1e-9, atol=1e-12)


def test_policy_gradient_log_prob_grad_matches_torch() -> None:
    logits = rng.standard_normal((5, 3))
    actions = rng.integers(0, 3, 5)
    adv = rng.standard_normal(5)
    a = lg.tensor(logits, requires_grad=True)
    t = torch.tensor(logits, requires_grad=True)
    (-(LD.Categorical(logits=a).log_prob(lg.tensor(actions)) * lg.tensor(adv)).mean()
     - 0.01 * LD.Categorical(logits=a).entropy().mean()).backward()
    (-(TD.Categorical(logits=t).log_prob(torch.tensor(actions)) * torch.tensor(adv)).mean()
     - 0.01 * TD.Categorical(logits=t).entropy().mean()).backward()
    np.testing.assert_allclose(a.grad.numpy(), t.grad.numpy(), rtol=1e-9, atol=1e-12)


def test_log_prob_gradient_against_finite_differences() -> None:
    loc, cov = rng.standard_normal(3), _spd(3)
    value = rng.standard_normal(3)

    def f(loc_: np.ndarray, cov_: np.ndarray) -> float:
        sym = (cov_ + cov_.T) / 2
        return LD.MultivariateNormal(lg.tensor(loc_), lg.tensor(sym)).log_prob(lg.tensor(value)).item()

    lt, ct = lg.tensor(loc, requires_grad=True), lg.tensor(cov, requires_grad=True)
    LD.MultivariateNormal(lt, (ct + ct.mT) / 2).log_prob(lg.tensor(value)).backward()
    h = 1e-6
    for arr, grad in ((loc, lt.grad.numpy()), (cov, ct.grad.numpy())):
        num = np.zeros_like(arr)
        for idx in np.ndindex(arr.shape):
            old = arr[idx]
            arr[idx] = old + h
            hi = f(loc, cov)
            arr[idx] = old - h
            lo = f(loc, cov)
            arr[idx] = old
            num[idx] = (hi - lo) / (2 * h)
        np.testing.assert_allclose(grad, num, rtol=1e-5, atol=1e-7)


def test_torch_alias_import() -> None:
    import subprocess
    import sys
    code = ("import lightgrad as torch\n"
            "from torch.distributions import Normal, kl_divergence\n"
            "import torch.distributions as D\n"
            "from torch.distributions.categorical import Categorical\n"
            "from torch.distributions.kl import register_kl\n"
            "assert D is torch.distributions and Normal is D.Normal and Categorical is D.Categorical\n"
            "assert register_kl is D.register_kl\n"
            "print(type(kl_divergence(Normal(0.0, 1.0), D.Normal(1.0, 1.0))).__module__)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "lightgrad.tensor"


@pytest.mark.parametrize("kind", ["covariance_matrix", "precision_matrix", "scale_tril"])
def test_multivariate_normal_matrix_properties_match_torch(kind: str) -> None:
    loc, cov = rng.standard_normal((2, 3)), _spd(3, (2,))
    given = {"covariance_matrix": cov, "precision_matrix": np.linalg.inv(cov),
             "scale_tril": np.linalg.cholesky(cov)}[kind]
    d = LD.MultivariateNormal(lg.tensor(loc), **{kind: lg.tensor(given)})
    t = TD.MultivariateNormal(torch.tensor(loc), **{kind: torch.tensor(given)})
    for prop in ("covariance_matrix", "precision_matrix", "scale_tril", "variance", "stddev"):
        np.testing.assert_allclose(getattr(d, prop).numpy(), getattr(t, prop).numpy(), rtol=1e-9, atol=1e-12)
    assert repr(d) == repr(t).replace("torch.", "lightgrad.")
    e, te = d.expand((4, 2)), t.expand((4, 2))
    assert tuple(e.covariance_matrix.shape) == tuple(te.covariance_matrix.shape)
    x = rng.standard_normal((4, 2, 3))
    np.testing.assert_allclose(e.log_prob(lg.tensor(x)).numpy(), te.log_prob(torch.tensor(x)).numpy(), rtol=1e-9)


# ---- transforms and TransformedDistribution ------------------------------------------------------

def _affine_tanh(D: Any, loc: Any, scale: Any, a: Any) -> Any:
    T = D.transforms
    return D.TransformedDistribution(D.Normal(loc, scale), [T.AffineTransform(0.5, a), T.TanhTransform()])


def _sigmoid_affine(D: Any, loc: Any, scale: Any) -> Any:
    # decreasing overall (scale -2), so cdf/icdf go through the monotonizing flip
    T = D.transforms
    return D.TransformedDistribution(D.Laplace(loc, scale), [T.SigmoidTransform(), T.AffineTransform(1.0, -2.0)])


# name -> (build(module) -> transform, input sampler)
TRANSFORMS: dict[str, tuple[Callable[[Any], Any], Callable[[], np.ndarray]]] = {
    "exp": (lambda T: T.ExpTransform(), lambda: rng.standard_normal((3, 4))),
    "sigmoid": (lambda T: T.SigmoidTransform(), lambda: 3 * rng.standard_normal((3, 4))),
    "tanh": (lambda T: T.TanhTransform(), lambda: 2 * rng.standard_normal((3, 4))),
    "affine_number": (lambda T: T.AffineTransform(1.5, -2.0), lambda: rng.standard_normal((3, 4))),
    "affine_event": (lambda T: T.AffineTransform(0.5, 2.0, event_dim=1), lambda: rng.standard_normal((3, 4))),
    "compose": (lambda T: T.ComposeTransform([T.AffineTransform(0.5, 3.0), T.TanhTransform(),
                                              T.AffineTransform(1.0, 2.0, event_dim=1)]),
                lambda: rng.standard_normal((3, 4))),
    "exp_inv": (lambda T: T.ExpTransform().inv, lambda: rng.uniform(0.2, 3, (3, 4))),
    "compose_inv": (lambda T: T.ComposeTransform([T.ExpTransform(), T.AffineTransform(1.0, 2.0)]).inv,
                    lambda: rng.uniform(1.5, 4, (3, 4))),
}


@pytest.mark.parametrize("dtype,tol", DTYPES)
@pytest.mark.parametrize("name", list(TRANSFORMS))
def test_transform_forward_inverse_jacobian_match_torch(name: str, dtype: str, tol: float) -> None:
    build, sample = TRANSFORMS[name]
    t, tt = build(LD.transforms), build(TT)
    xn = sample().astype(dtype)
    x, tx = lg.tensor(xn, requires_grad=True), torch.tensor(xn, requires_grad=True)
    y, ty = t(x), tt(tx)
    _close(y, ty, tol)
    _close(t.inv(y), tt.inv(ty), tol * 100)  # (round trip through atanh/logit loses digits)
    ladj, tladj = t.log_abs_det_jacobian(x, y), tt.log_abs_det_jacobian(tx, ty)
    assert tuple(ladj.shape) == tuple(tladj.shape)
    _close(ladj, tladj, tol)
    (y.sum() + ladj.sum()).backward()
    (ty.sum() + tladj.sum()).backward()
    _close(x.grad, tx.grad, tol * 10)
    assert t.bijective == tt.bijective
    assert t.domain.event_dim == tt.domain.event_dim and t.codomain.event_dim == tt.codomain.event_dim
    assert t.inv.inv is t or t.inv.inv == t
    assert t.sign == tt.sign if isinstance(tt.sign, int) else bool((t.sign == lg.tensor(tt.sign.numpy())).all())


def test_tanh_jacobian_is_stable_and_matches_finite_differences() -> None:
    x = lg.tensor([-30.0, -5.0, 0.0, 0.3, 5.0, 30.0], dtype=lg.float64, requires_grad=True)
    t = LD.TanhTransform()
    ladj = t.log_abs_det_jacobian(x, t(x))
    assert bool(lg.isfinite(ladj).all())  # log(1 - tanh^2) would be -inf at |x| = 30
    xn = x.detach().numpy()[1:-1]
    np.testing.assert_allclose(ladj.detach().numpy()[1:-1], np.log1p(-np.tanh(xn) ** 2), rtol=1e-9)
    ladj.sum().backward()
    h = 1e-6
    fd = (np.log1p(-np.tanh(xn + h) ** 2) - np.log1p(-np.tanh(xn - h) ** 2)) / (2 * h)
    np.testing.assert_allclose(x.grad.numpy()[1:-1], fd, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(x.grad.numpy()[[0, -1]], [2.0, -2.0])  # d/dx log(1 - tanh^2) = -2 tanh(x)


@pytest.mark.parametrize("cache_size", [0, 1])
def test_sac_tanh_squashed_normal_log_prob_and_grads(monkeypatch: pytest.MonkeyPatch, cache_size: int) -> None:
    mu_n, log_std_n = rng.standard_normal((5, 2)), rng.uniform(-1, 0.3, (5, 2))
    eps = rng.standard_normal((5, 2))
    monkeypatch.setattr(lg_utils, "_standard_normal", lambda shape, dtype: lg.tensor(eps).to(dtype))

    def actor(M: Any, D: Any, mu: Any, log_std: Any, rsample: Callable[[Any], Any]) -> Any:
        dist = D.TransformedDistribution(D.Normal(mu, log_std.exp()), [D.TanhTransform(cache_size=cache_size)])
        action = rsample(dist)
        log_pi = dist.log_prob(action).sum(-1)
        return action, log_pi, (0.2 * log_pi - action.sum(-1)).mean()

    mu, log_std = lg.tensor(mu_n, requires_grad=True), lg.tensor(log_std_n, requires_grad=True)
    tmu, tlog_std = torch.tensor(mu_n, requires_grad=True), torch.tensor(log_std_n, requires_grad=True)
    a, lp, loss = actor(lg, LD, mu, log_std, lambda d: d.rsample())
    # torch with the same noise: the transform applied to the same pre-squash value
    ta, tlp, tloss = actor(torch, TD, tmu, tlog_std,
                           lambda d: d.transforms[0](d.base_dist.loc + torch.tensor(eps) * d.base_dist.scale))
    _close(a, ta, 1e-10)
    _close(lp, tlp, 1e-8)
    loss.backward()
    tloss.backward()
    _close(mu.grad, tmu.grad, 1e-8)
    _close(log_std.grad, tlog_std.grad, 1e-8)


def test_kl_of_differently_transformed_distributions_is_not_implemented() -> None:
    p = LD.TransformedDistribution(LD.Normal(0.0, 1.0), [LD.ExpTransform()])
    q = LD.TransformedDistribution(LD.Normal(0.0, 1.0), [LD.SigmoidTransform()])
    with pytest.raises(NotImplementedError):
        LD.kl_divergence(p, q)


def test_shapes_expand_and_event_dims() -> None:
    base = LD.Normal(lg.zeros(3, 4), lg.ones(3, 4))
    tbase = TD.Normal(torch.zeros(3, 4), torch.ones(3, 4))
    d = LD.TransformedDistribution(base, [LD.AffineTransform(lg.ones(4), 2.0, event_dim=1)])
    t = TD.TransformedDistribution(tbase, [TT.AffineTransform(torch.ones(4), 2.0, event_dim=1)])
    assert (d.batch_shape, d.event_shape) == (tuple(t.batch_shape), tuple(t.event_shape)) == ((3,), (4,))
    assert isinstance(d.base_dist, LD.Independent)
    assert tuple(d.rsample((2,)).shape) == (2, 3, 4)
    v = rng.standard_normal((2, 3, 4))
    _close(d.log_prob(lg.tensor(v)), t.log_prob(torch.tensor(v)), 1e-5)
    # a transform with batched parameters widens the base's batch
    wide = LD.TransformedDistribution(LD.Normal(0.0, 1.0), [LD.AffineTransform(lg.zeros(5), lg.ones(5))])
    assert wide.batch_shape == TD.TransformedDistribution(
        TD.Normal(0.0, 1.0), [TT.AffineTransform(torch.zeros(5), torch.ones(5))]).batch_shape == (5,)
    for dist in (LD.LogNormal(lg.zeros(3), 1.0), LD.Gumbel(lg.zeros(3), 1.0), LD.Cauchy(lg.zeros(3), 1.0),
                 LD.Poisson(lg.ones(3))):
        assert tuple(dist.sample((4, 2)).shape) == (4, 2, 3)
        e = dist.expand((2, 3))
        assert type(e) is type(dist) and e.batch_shape == (2, 3) and tuple(e.sample().shape) == (2, 3)
    assert LD.Gumbel(0.0, 1.0).batch_shape == () and tuple(LD.LogNormal(0.0, 1.0).sample((5,)).shape) == (5,)
    assert LD.Gumbel(lg.zeros(2), 1.0).expand((4, 2)).mean.shape == (4, 2)


def D_t(D: Any, values: list[float]) -> Any:  # noqa: N802
    """A tensor of the framework that ``D`` (a distributions module or a distribution) belongs to."""
    return torch.tensor(values) if type(D).__module__.startswith("torch") or D is TD else lg.tensor(values)


def test_transform_caching_and_equality() -> None:
    t = LD.TanhTransform(cache_size=1)
    x = lg.tensor([25.0])  # tanh rounds to 1: only the cache gives x back
    y = t(x)
    assert t.inv(y) is x and t(x) is y
    assert LD.TanhTransform()(x).item() == 1.0
    assert LD.ExpTransform() == LD.ExpTransform() and LD.ExpTransform() != LD.SigmoidTransform()
    assert LD.AffineTransform(1.0, 2.0) == LD.AffineTransform(1.0, 2.0) != LD.AffineTransform(1.0, 3.0)
    assert LD.ExpTransform().inv == LD.ExpTransform().inv
    c = LD.ComposeTransform([LD.ExpTransform(), LD.AffineTransform(0.0, 2.0)])
    assert c.inv.inv is c and c.bijective and c.sign == 1
    assert LD.AffineTransform(0.0, -2.0).sign == -1
    assert LD.transforms.identity_transform(x) is x
    for tr in (c, c.inv, LD.ExpTransform().inv, LD.AffineTransform(lg.ones(2), 3.0)):
        back = pickle.loads(pickle.dumps(tr))
        assert back == tr and back.inv(tr(lg.ones(2))).allclose(lg.ones(2))
    assert math.isclose(float(LD.SigmoidTransform().inv(lg.tensor([0.0])).item()),
                        float(TT.SigmoidTransform().inv(torch.tensor([0.0])).item()))


def test_transformed_distribution_support_and_repr() -> None:
    d = LD.TransformedDistribution(LD.Normal(lg.zeros(2), 1.0), [LD.SigmoidTransform()])
    t = TD.TransformedDistribution(TD.Normal(torch.zeros(2), 1.0), [TT.SigmoidTransform()])
    assert repr(d.support) == repr(t.support)
    assert bool(d.support.check(lg.tensor([0.5, 0.2])).all()) and not bool(d.support.check(lg.tensor(2.0)))
    assert repr(LD.ExpTransform()) == repr(TT.ExpTransform())
    ind = LD.TransformedDistribution(LD.Normal(lg.zeros(2, 3), 1.0), [LD.AffineTransform(0.0, 2.0, event_dim=1)])
    assert ind.support.event_dim == 1


# ---- LogNormal, Cauchy, Gumbel, Poisson ----------------------------------------------------------

class TestLogNormalCauchyGumbelPoisson:
    """LogNormal, Cauchy, Gumbel, Poisson and composed TransformedDistributions: values, gradients,
    moments, KL divergences, validation and sampling against torch.distributions (the checks the
    families above get, in a class because their tests share those names)."""

    # name -> (params, build(module, **tensors), value sampler, cdf/icdf defined, moments to compare)
    CASES: dict[str, tuple[dict[str, np.ndarray], Callable[..., Any], Callable[[], np.ndarray], bool,
                           tuple[str, ...]]] = {
        "lognormal": ({"loc": rng.standard_normal((3, 2)), "scale": rng.uniform(0.5, 1.5, (3, 2))},
                      lambda D, loc, scale: D.LogNormal(loc, scale), lambda: rng.uniform(0.1, 4, (4, 3, 2)), True,
                      ("mean", "variance", "stddev", "mode", "entropy")),
        "cauchy": ({"loc": rng.standard_normal((3,)), "scale": rng.uniform(0.5, 2, (3,))},
                   lambda D, loc, scale: D.Cauchy(loc, scale), lambda: 3 * rng.standard_normal((2, 3)), True,
                   ("mean", "variance", "mode", "entropy")),
        "gumbel": ({"loc": rng.standard_normal((4,)), "scale": rng.uniform(0.5, 2, (4,))},
                   lambda D, loc, scale: D.Gumbel(loc, scale), lambda: rng.standard_normal((2, 4)), True,
                   ("mean", "variance", "stddev", "mode", "entropy")),
        "poisson": ({"rate": rng.uniform(0.5, 6, (3,))}, lambda D, rate: D.Poisson(rate),
                    lambda: rng.integers(0, 9, (5, 3)).astype(float), False, ("mean", "variance", "mode")),
        "affine_tanh": ({"loc": rng.standard_normal((3,)), "scale": rng.uniform(0.3, 1, (3,)),
                         "a": rng.uniform(0.5, 2, (3,))}, _affine_tanh,
                        lambda: rng.uniform(-0.95, 0.95, (2, 3)), True, ()),
        "sigmoid_affine": ({"loc": rng.standard_normal((3,)), "scale": rng.uniform(0.3, 1, (3,))}, _sigmoid_affine,
                           lambda: rng.uniform(-0.9, 0.9, (2, 3)), True, ()),
    }

    @pytest.mark.parametrize("dtype,tol", DTYPES)
    @pytest.mark.parametrize("name", list(CASES))
    def test_values_and_grads_match_torch(self, name: str, dtype: str, tol: float) -> None:
        params, build, sample_value, has_cdf, props = self.CASES[name]
        ours, ref = _pair(params, dtype)
        d, t = build(LD, **ours), build(TD, **ref)
        assert d.batch_shape == tuple(t.batch_shape) and d.event_shape == tuple(t.event_shape)
        assert d.has_rsample == t.has_rsample
        value = sample_value().astype(dtype)
        lp, tlp = d.log_prob(lg.tensor(value)), t.log_prob(torch.tensor(value))
        assert lp.dtype.name == dtype and tuple(lp.shape) == tuple(tlp.shape)
        _close(lp, tlp, tol)
        weights = rng.standard_normal(tuple(tlp.shape)).astype(dtype)
        loss = (lp * lg.tensor(weights)).sum()
        tloss = (tlp * torch.tensor(weights)).sum()
        for prop in props:
            a = getattr(d, prop)() if prop == "entropy" else getattr(d, prop)
            b = getattr(t, prop)() if prop == "entropy" else getattr(t, prop)
            assert tuple(a.shape) == tuple(b.shape) and a.dtype.name == dtype, prop
            np.testing.assert_array_equal(np.isfinite(a.detach().numpy()), np.isfinite(b.detach().numpy()))
            if bool(torch.isfinite(b).all()):
                _close(a, b, tol)
                if b.requires_grad:
                    loss = loss + a.sum()
                    tloss = tloss + b.sum()
        if has_cdf:
            cdf, tcdf = d.cdf(lg.tensor(value)), t.cdf(torch.tensor(value))
            _close(cdf, tcdf, tol)
            q = rng.uniform(0.05, 0.95, tuple(t.batch_shape)).astype(dtype)
            icdf, ticdf = d.icdf(lg.tensor(q)), t.icdf(torch.tensor(q))
            _close(icdf, ticdf, tol * 10)
            loss = loss + cdf.sum() + icdf.sum()
            tloss = tloss + tcdf.sum() + ticdf.sum()
        loss.backward()
        tloss.backward()
        for k in params:
            assert ours[k].grad is not None, k
            _close(ours[k].grad, ref[k].grad, tol * 100)

    KL_CASES: dict[str, tuple[Callable[[Any, dict[str, Any]], tuple[Any, Any]], dict[str, np.ndarray]]] = {
        "lognormal": (lambda D, p: (D.LogNormal(p["a"], p["b"]), D.LogNormal(p["c"], p["d"])),
                      {"a": rng.standard_normal(3), "b": rng.uniform(0.5, 2, 3), "c": rng.standard_normal(3),
                       "d": rng.uniform(0.5, 2, 3)}),
        "cauchy": (lambda D, p: (D.Cauchy(p["a"], p["b"]), D.Cauchy(p["c"], p["d"])),
                   {"a": rng.standard_normal(3), "b": rng.uniform(0.5, 2, 3), "c": rng.standard_normal(3),
                    "d": rng.uniform(0.5, 2, 3)}),
        "gumbel": (lambda D, p: (D.Gumbel(p["a"], p["b"]), D.Gumbel(p["c"], p["d"])),
                   {"a": rng.standard_normal(3), "b": rng.uniform(0.5, 2, 3), "c": rng.standard_normal(3),
                    "d": rng.uniform(0.5, 2, 3)}),
        "poisson": (lambda D, p: (D.Poisson(p["a"]), D.Poisson(p["b"])),
                    {"a": rng.uniform(0.5, 5, 4), "b": rng.uniform(0.5, 5, 4)}),
        "normal_gumbel": (lambda D, p: (D.Normal(p["a"], p["b"]), D.Gumbel(p["c"], p["d"])),
                          {"a": rng.standard_normal(3), "b": rng.uniform(0.5, 2, 3), "c": rng.standard_normal(3),
                           "d": rng.uniform(0.5, 2, 3)}),
        "gumbel_normal": (lambda D, p: (D.Gumbel(p["a"], p["b"]), D.Normal(p["c"], p["d"])),
                          {"a": rng.standard_normal(3), "b": rng.uniform(0.5, 2, 3), "c": rng.standard_normal(3),
                           "d": rng.uniform(0.5, 2, 3)}),
        "exponential_gumbel": (lambda D, p: (D.Exponential(p["a"]), D.Gumbel(p["c"], p["d"])),
                               {"a": rng.uniform(0.5, 2, 3), "c": rng.standard_normal(3), "d": rng.uniform(0.5, 2, 3)}),
        "uniform_gumbel": (lambda D, p: (D.Uniform(p["a"], p["b"]), D.Gumbel(p["c"], p["d"])),
                           {"a": rng.uniform(-1, 0, 3), "b": rng.uniform(1, 2, 3), "c": rng.standard_normal(3),
                            "d": rng.uniform(0.5, 2, 3)}),
        "gumbel_uniform": (lambda D, p: (D.Gumbel(p["a"], p["b"]), D.Uniform(p["c"], p["d"])),
                           {"a": rng.standard_normal(3), "b": rng.uniform(0.5, 2, 3), "c": rng.uniform(-1, 0, 3),
                            "d": rng.uniform(1, 2, 3)}),
        "bernoulli_poisson": (lambda D, p: (D.Bernoulli(probs=p["a"]), D.Poisson(p["b"])),
                              {"a": rng.uniform(0.1, 0.9, 3), "b": rng.uniform(0.5, 3, 3)}),
    }

    @pytest.mark.parametrize("name", list(KL_CASES))
    def test_kl_matches_torch(self, name: str) -> None:
        build, params = self.KL_CASES[name]
        ours, ref = _pair(params, "float64")
        kl, tkl = LD.kl_divergence(*build(LD, ours)), TD.kl_divergence(*build(TD, ref))
        _close(kl, tkl, 1e-10)
        if bool(torch.isfinite(tkl).all()):
            kl.sum().backward()
            tkl.sum().backward()
            for k in params:
                _close(ours[k].grad, ref[k].grad, 1e-9)

    def test_validation_errors_match_torch(self) -> None:
        cases: list[tuple[Callable[[Any], Any], Callable[[Any], Any]]] = [
            (lambda D: D.LogNormal(D_t(D, [0.0]), D_t(D, [-1.0])), lambda D: None),
            (lambda D: D.Cauchy(D_t(D, [0.0]), D_t(D, [0.0])), lambda D: None),
            (lambda D: D.Gumbel(D_t(D, [0.0]), D_t(D, [-2.0])), lambda D: None),
            (lambda D: D.Poisson(D_t(D, [-1.0])), lambda D: None),
            (lambda D: D.LogNormal(0.0, 1.0), lambda d: d.log_prob(D_t(d, [-1.0]))),
            (lambda D: D.Poisson(D_t(D, [2.0])), lambda d: d.log_prob(D_t(d, [1.5]))),
            (lambda D: D.Poisson(D_t(D, [2.0])), lambda d: d.log_prob(D_t(d, [-1.0]))),
            (lambda D: D.TransformedDistribution(D.Normal(0.0, 1.0), [D.TanhTransform()]),
             lambda d: d.log_prob(D_t(d, [1.5]))),
            (lambda D: D.TransformedDistribution(D.Normal(0.0, 1.0), "exp"), lambda D: None),
            (lambda D: D.TransformedDistribution(D.Normal(0.0, 1.0), [D.ExpTransform(), "exp"]), lambda D: None),
            (lambda D: D.TransformedDistribution(D.Normal(0.0, 1.0), D.AffineTransform(0.0, 1.0, event_dim=1)),
             lambda D: None),
            (lambda D: D.ExpTransform(cache_size=2), lambda D: None),
        ]
        for i, (make, use) in enumerate(cases):
            errors = []
            for D in (LD, TD):
                try:
                    use(make(D))
                except Exception as e:  # noqa: BLE001 (the type is what is compared)
                    errors.append(type(e))
                else:
                    errors.append(None)
            assert errors[0] is errors[1] and errors[0] is not None, (i, errors)

    def test_sampling_statistics(self) -> None:
        lg.manual_seed(0)
        n = 40000
        loc, scale = lg.tensor([0.5, -1.0]), lg.tensor([0.5, 1.5])
        logs = LD.LogNormal(loc, scale).sample((n,)).log().numpy()
        np.testing.assert_allclose(logs.mean(0), loc.numpy(), atol=0.03)
        np.testing.assert_allclose(logs.std(0), scale.numpy(), rtol=0.03)
        c = LD.Cauchy(loc, scale).sample((n,)).numpy()
        # median and quartiles of a Cauchy are loc and loc -+ scale
        np.testing.assert_allclose(np.median(c, 0), loc.numpy(), atol=0.05)
        np.testing.assert_allclose(np.percentile(c, 75, 0) - np.percentile(c, 25, 0), 2 * scale.numpy(), rtol=0.05)
        g = LD.Gumbel(loc, scale)
        gs = g.sample((n,)).numpy()
        np.testing.assert_allclose(gs.mean(0), g.mean.numpy(), atol=0.05)
        np.testing.assert_allclose(gs.std(0), g.stddev.numpy(), rtol=0.03)
        rate = lg.tensor([0.3, 4.0, 25.0])
        p = LD.Poisson(rate)
        ps = p.sample((n,))
        assert ps.dtype == rate.dtype
        psn = ps.numpy()
        assert np.all(psn == np.round(psn)) and np.all(psn >= 0)
        np.testing.assert_allclose(psn.mean(0), rate.numpy(), rtol=0.03)
        np.testing.assert_allclose(psn.var(0), rate.numpy(), rtol=0.05)
        # Kolmogorov distance of Gumbel samples to its cdf
        srt = np.sort(gs[:, 0])
        emp = np.arange(1, n + 1) / n
        cdf = LD.Gumbel(0.5, 0.5).cdf(lg.tensor(srt)).numpy()
        assert np.max(np.abs(emp - cdf)) < 0.01

    def test_seeded_sampling_is_reproducible_and_rsample_has_grads(self) -> None:
        for make in (lambda: LD.Poisson(lg.tensor([3.0, 7.0])), lambda: LD.Gumbel(lg.zeros(2), 1.0),
                     lambda: LD.Cauchy(lg.zeros(2), 1.0), lambda: LD.LogNormal(lg.zeros(2), 1.0)):
            lg.manual_seed(3)
            a = make().sample((5,))
            lg.manual_seed(3)
            b = make().sample((5,))
            np.testing.assert_array_equal(a.numpy(), b.numpy())
        loc = lg.zeros(2, requires_grad=True)
        for d in (LD.LogNormal(loc, 1.0), LD.Cauchy(loc, 1.0), LD.Gumbel(loc, 1.0)):
            assert d.has_rsample
            s = d.rsample((3,))
            assert s.requires_grad and not d.sample((3,)).requires_grad
            loc.grad = None
            s.sum().backward()
            assert loc.grad is not None
        assert not LD.Poisson(lg.ones(2)).has_rsample

    def test_poisson_edge_values_match_torch(self) -> None:
        rate, value = [0.0, 0.0, 2.5, 1e-3], [0.0, 2.0, 0.0, 7.0]
        lp = LD.Poisson(lg.tensor(rate), validate_args=False).log_prob(lg.tensor(value))
        tlp = TD.Poisson(torch.tensor(rate), validate_args=False).log_prob(torch.tensor(value))
        np.testing.assert_allclose(lp.numpy(), tlp.numpy(), rtol=1e-6)
        _close(LD.Poisson(lg.tensor([2.7, 0.2])).mode, TD.Poisson(torch.tensor([2.7, 0.2])).mode, 0)
