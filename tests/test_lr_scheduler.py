"""LR schedulers: the LR (and momentum) sequences against PyTorch and against each schedule's definition.

Against PyTorch over 50 steps, and against values derived by hand from each schedule's definition."""

from __future__ import annotations

import copy
import math
import warnings
from bisect import bisect_right
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import lightgrad as lg
from lightgrad.optim import lr_scheduler as S

try:
    import torch
except ImportError:  # the PyTorch comparisons are skipped
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch not installed")

LRS = (0.1, 0.02)  # two param groups with their own LRs


def _opt(T: Any, kind: str = "sgd") -> Any:
    a, b = T.zeros(3, requires_grad=True), T.zeros(2, requires_grad=True)
    groups = [{"params": [a], "lr": LRS[0]}, {"params": [b], "lr": LRS[1]}]
    if kind == "adam":
        return T.optim.Adam(groups)
    return T.optim.SGD(groups, momentum=0.9)


def run(T: Any, make: Callable[[Any, Any], Any], steps: int = 50, kind: str = "sgd",
        metrics: list[float] | None = None) -> list[tuple[Any, ...]]:
    """(lrs, momenta) after construction and after each of ``steps`` scheduler steps."""
    opt = _opt(T, kind)
    sched = make(T.optim.lr_scheduler, opt)

    def record() -> tuple[Any, ...]:
        mom = tuple(g["betas"][0] if kind == "adam" else g["momentum"] for g in opt.param_groups)
        return tuple(sched.get_last_lr()) + tuple(g["lr"] for g in opt.param_groups) + mom
    out = [record()]
    for i in range(steps):
        opt.step()
        if metrics is not None:
            sched.step(metrics[i])
        else:
            sched.step()
        out.append(record())
    return out


SCHEDULES: list[tuple[str, Callable[[Any, Any], Any], str]] = [
    ("step", lambda M, o: M.StepLR(o, step_size=7, gamma=0.5), "sgd"),
    ("multistep", lambda M, o: M.MultiStepLR(o, milestones=[5, 12, 12, 30], gamma=0.3), "sgd"),
    ("exponential", lambda M, o: M.ExponentialLR(o, gamma=0.93), "sgd"),
    ("cosine", lambda M, o: M.CosineAnnealingLR(o, T_max=10, eta_min=0.001), "sgd"),
    ("cosine_restarts", lambda M, o: M.CosineAnnealingWarmRestarts(o, T_0=5, T_mult=2, eta_min=1e-4), "sgd"),
    ("linear", lambda M, o: M.LinearLR(o, start_factor=0.2, end_factor=0.9, total_iters=8), "sgd"),
    ("constant", lambda M, o: M.ConstantLR(o, factor=0.5, total_iters=6), "sgd"),
    ("lambda", lambda M, o: M.LambdaLR(o, lr_lambda=lambda e: 0.9 ** e), "sgd"),
    ("lambda_list", lambda M, o: M.LambdaLR(o, lr_lambda=[lambda e: 1 / (e + 1), lambda e: 0.5]), "sgd"),
    ("multiplicative", lambda M, o: M.MultiplicativeLR(o, lr_lambda=lambda e: 0.95), "sgd"),
    ("polynomial", lambda M, o: M.PolynomialLR(o, total_iters=20, power=2.0), "sgd"),
    ("onecycle_cos", lambda M, o: M.OneCycleLR(o, max_lr=[0.1, 0.05], total_steps=50), "sgd"),
    ("onecycle_linear_3phase", lambda M, o: M.OneCycleLR(o, max_lr=0.3, epochs=5, steps_per_epoch=10,
                                                          anneal_strategy="linear", three_phase=True), "sgd"),
    ("onecycle_adam_betas", lambda M, o: M.OneCycleLR(o, max_lr=0.01, total_steps=60, pct_start=0.25,
                                                       base_momentum=0.8, max_momentum=0.92), "adam"),
    ("onecycle_no_momentum", lambda M, o: M.OneCycleLR(o, max_lr=0.01, total_steps=50, cycle_momentum=False), "sgd"),
    ("cyclic_triangular2", lambda M, o: M.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=4, step_size_down=6,
                                                    mode="triangular2"), "sgd"),
    ("cyclic_exp_range_adam", lambda M, o: M.CyclicLR(o, base_lr=[0.001, 0.002], max_lr=0.01, step_size_up=5,
                                                       mode="exp_range", gamma=0.97), "adam"),
    ("sequential", lambda M, o: M.SequentialLR(o, [M.LinearLR(o, start_factor=0.1, total_iters=5),
                                                   M.ExponentialLR(o, gamma=0.9)], milestones=[5]), "sgd"),
    ("sequential_three", lambda M, o: M.SequentialLR(o, [M.ConstantLR(o, factor=0.5, total_iters=3),
                                                         M.CosineAnnealingLR(o, T_max=8),
                                                         M.StepLR(o, step_size=4)], milestones=[4, 20]), "sgd"),
    ("chained", lambda M, o: M.ChainedScheduler([M.ConstantLR(o, factor=0.1, total_iters=3),
                                                 M.ExponentialLR(o, gamma=0.9)]), "sgd"),
]


@needs_torch
@pytest.mark.parametrize("name,make,kind", SCHEDULES, ids=[s[0] for s in SCHEDULES])
def test_sequence_matches_torch(name, make, kind):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # PyTorch warns about some construction orders; not under test
        ours, theirs = run(lg, make, kind=kind), run(torch, make, kind=kind)
    # the same float arithmetic in the same order: equal to the last bit
    assert ours == theirs


PLATEAU = [10, 9, 9, 9, 9, 8.9995, 8, 8, 8, 8, 8, 8, 7, 7.5, 7.5, 7.5, 7.5, 7.5, 7.5, 7.5, 7.5, 7.5] * 2


@needs_torch
@pytest.mark.parametrize("kw", [dict(patience=2), dict(mode="max", factor=0.5, patience=1, threshold_mode="abs"),
                                dict(patience=1, cooldown=2, min_lr=[0.05, 0.001], threshold=0.01),
                                dict(patience=0, factor=0.2, min_lr=0.005, eps=1e-3)])
def test_reduce_on_plateau_matches_torch(kw):
    make = lambda M, o: M.ReduceLROnPlateau(o, **kw)  # noqa: E731
    ours = run(lg, make, steps=len(PLATEAU), metrics=PLATEAU)
    theirs = run(torch, make, steps=len(PLATEAU), metrics=PLATEAU)
    assert ours == theirs


# ---- values derived by hand ---------------------------------------------------------------------
def _lrs(make: Callable[[Any, Any], Any], steps: int = 50, **kw: Any) -> np.ndarray:
    return np.array([r[:2] for r in run(lg, make, steps, **kw)])


def _expect(f: Callable[[int, float], float], steps: int = 50) -> np.ndarray:
    return np.array([[f(e, base) for base in LRS] for e in range(steps + 1)])


def test_step_multistep_exponential_by_hand():
    np.testing.assert_allclose(_lrs(lambda M, o: M.StepLR(o, step_size=7, gamma=0.5)),
                               _expect(lambda e, b: b * 0.5 ** (e // 7)), rtol=1e-12)
    ms = [5, 12, 12, 30]
    np.testing.assert_allclose(_lrs(lambda M, o: M.MultiStepLR(o, milestones=ms, gamma=0.3)),
                               _expect(lambda e, b: b * 0.3 ** bisect_right(ms, e)), rtol=1e-12)
    np.testing.assert_allclose(_lrs(lambda M, o: M.ExponentialLR(o, gamma=0.93)),
                               _expect(lambda e, b: b * 0.93 ** e), rtol=1e-12)


def test_cosine_annealing_recursive_form_follows_the_closed_form():
    # PyTorch's recursive form: equal to eta_min + (b - eta_min)(1 + cos(pi e / T)) / 2 up to rounding,
    # across several periods (it goes back up after T_max)
    got = _lrs(lambda M, o: M.CosineAnnealingLR(o, T_max=10, eta_min=0.001))
    want = _expect(lambda e, b: 0.001 + (b - 0.001) * (1 + math.cos(math.pi * e / 10)) / 2)
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-15)
    assert got[10, 0] == pytest.approx(0.001) and got[20, 0] == pytest.approx(0.1)


def test_cosine_warm_restarts_by_hand():
    def expected(e: int, b: float) -> float:
        t_i, start = 5, 0
        while e >= start + t_i:  # restarts at 5, 15, 35: periods 5, 10, 20
            start, t_i = start + t_i, t_i * 2
        return 1e-4 + (b - 1e-4) * (1 + math.cos(math.pi * (e - start) / t_i)) / 2
    got = _lrs(lambda M, o: M.CosineAnnealingWarmRestarts(o, T_0=5, T_mult=2, eta_min=1e-4))
    np.testing.assert_allclose(got, _expect(expected), rtol=1e-12)


def test_linear_constant_polynomial_by_hand():
    np.testing.assert_allclose(
        _lrs(lambda M, o: M.LinearLR(o, start_factor=0.2, end_factor=0.9, total_iters=8)),
        _expect(lambda e, b: b * (0.2 + 0.7 * min(e, 8) / 8)), rtol=1e-12)
    np.testing.assert_allclose(_lrs(lambda M, o: M.ConstantLR(o, factor=0.5, total_iters=6)),
                               _expect(lambda e, b: b * (0.5 if e < 6 else 1.0)), rtol=1e-12)
    np.testing.assert_allclose(_lrs(lambda M, o: M.PolynomialLR(o, total_iters=20, power=2.0)),
                               _expect(lambda e, b: b * (1 - min(e, 20) / 20) ** 2), rtol=1e-9, atol=1e-15)


def test_onecycle_by_hand():
    rows = run(lg, lambda M, o: M.OneCycleLR(o, max_lr=0.1, total_steps=100, pct_start=0.3), steps=99)
    lr = np.array([r[0] for r in rows])
    mom = np.array([r[4] for r in rows])
    assert lr[0] == pytest.approx(0.1 / 25) and mom[0] == pytest.approx(0.95)
    assert lr[29] == pytest.approx(0.1) and mom[29] == pytest.approx(0.85)  # peak at pct_start * total - 1
    assert lr[99] == pytest.approx(0.1 / 25 / 1e4) and mom[99] == pytest.approx(0.95)
    # cosine warm-up, then cosine annealing
    assert np.all(np.diff(lr[:30]) > 0) and np.all(np.diff(lr[29:]) < 0)
    np.testing.assert_allclose(lr[14], 0.004 + (0.1 - 0.004) * (1 - math.cos(math.pi * 14 / 29)) / 2, rtol=1e-12)
    lin = run(lg, lambda M, o: M.OneCycleLR(o, max_lr=0.1, total_steps=11, pct_start=0.5, anneal_strategy="linear",
                                            three_phase=True), steps=10)
    # three phases: up until step 4.5, down until step 9, then annealing to min_lr at step 10
    np.testing.assert_allclose([r[0] for r in lin],
                               [0.004 + (0.1 - 0.004) * s / 4.5 for s in range(5)]
                               + [0.1 - (0.1 - 0.004) * (s - 4.5) / 4.5 for s in range(5, 10)]
                               + [0.004 / 1e4], rtol=1e-12)
    opt = _opt(lg)
    sched = S.OneCycleLR(opt, max_lr=0.1, total_steps=11)
    with pytest.raises(ValueError, match="Tried to step 12 times"):
        for _ in range(12):
            opt.step()
            sched.step()


def test_reduce_on_plateau_by_hand():
    rows = run(lg, lambda M, o: M.ReduceLROnPlateau(o, patience=2, factor=0.5), steps=len(PLATEAU[:14]),
               metrics=PLATEAU[:14])
    lr = [r[0] for r in rows]
    # best 10, 9 (epoch 2); 9, 9 are bad epochs 1, 2; the third bad one (epoch 5) halves the LR; 8.9995
    # is not 1e-4 (relative) better than 9 -> bad 1; 8 is better; 8 x5: bad 1, 2, 3 -> halve at epoch 10
    want = [0.1] * 5 + [0.05] * 5 + [0.025] * 5
    np.testing.assert_allclose(lr, want[:len(lr)], rtol=1e-12)


def test_lambda_and_multiplicative_by_hand():
    np.testing.assert_allclose(_lrs(lambda M, o: M.LambdaLR(o, lr_lambda=lambda e: 1 / (e + 1))),
                               _expect(lambda e, b: b / (e + 1)), rtol=1e-12)
    np.testing.assert_allclose(_lrs(lambda M, o: M.MultiplicativeLR(o, lr_lambda=lambda e: 0.9)),
                               _expect(lambda e, b: b * 0.9 ** e), rtol=1e-12)


def test_cycle_momentum_sets_momentum_and_betas():
    rows = run(lg, lambda M, o: M.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=2, base_momentum=0.8,
                                           max_momentum=0.9), steps=4)
    np.testing.assert_allclose([r[0] for r in rows], [0.01, 0.055, 0.1, 0.055, 0.01], rtol=1e-12)
    np.testing.assert_allclose([r[4] for r in rows], [0.9, 0.85, 0.8, 0.85, 0.9], rtol=1e-12)
    with pytest.raises(ValueError, match="optimizer must support momentum"):
        S.OneCycleLR(lg.optim.Adagrad([lg.zeros(1, requires_grad=True)]), max_lr=0.1, total_steps=10)


# ---- state, warnings, errors --------------------------------------------------------------------
@pytest.mark.parametrize("make", [lambda o: S.StepLR(o, step_size=3, gamma=0.5),
                                  lambda o: S.CosineAnnealingLR(o, T_max=7),
                                  lambda o: S.OneCycleLR(o, max_lr=0.5, total_steps=40),
                                  lambda o: S.SequentialLR(o, [S.LinearLR(o, 0.5, total_iters=4),
                                                               S.ExponentialLR(o, 0.8)], milestones=[4]),
                                  lambda o: S.ReduceLROnPlateau(o, patience=1)])
def test_state_dict_round_trip(make):
    def stepper(s):
        return (lambda i: s.step(10.0 - (i % 3))) if isinstance(s, S.ReduceLROnPlateau) else (lambda i: s.step())
    opt = _opt(lg)
    sched = make(opt)
    for i in range(10):
        opt.step()
        stepper(sched)(i)
    sd, osd = copy.deepcopy(sched.state_dict()), copy.deepcopy(opt.state_dict())
    assert "optimizer" not in sd
    opt2 = _opt(lg)
    sched2 = make(opt2)
    opt2.load_state_dict(osd)
    sched2.load_state_dict(sd)
    for i in range(10, 20):
        for o, s in ((opt, sched), (opt2, sched2)):
            o.step()
            stepper(s)(i)
        assert sched2.get_last_lr() == sched.get_last_lr()
        assert sched2.last_epoch == sched.last_epoch


def test_last_epoch_and_initial_lr():
    opt = _opt(lg)
    sched = S.ExponentialLR(opt, gamma=0.5)
    assert sched.last_epoch == 0 and opt.param_groups[0]["initial_lr"] == 0.1
    opt.step()
    sched.step()
    assert sched.last_epoch == 1 and sched.get_last_lr() == [0.05, 0.01]
    with pytest.raises(KeyError, match="initial_lr"):
        S.StepLR(_opt(lg), step_size=2, last_epoch=5)


def test_warns_when_stepped_before_optimizer():
    opt = _opt(lg)
    sched = S.StepLR(opt, step_size=2)
    with pytest.warns(UserWarning, match="before `optimizer.step\\(\\)`"):
        sched.step()
    opt2 = _opt(lg)
    sched2 = S.StepLR(opt2, step_size=2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        opt2.step()
        sched2.step()
    with pytest.warns(UserWarning, match="get_last_lr"):
        sched2.get_lr()


@pytest.mark.parametrize("make,exc,msg", [
    (lambda o: S.StepLR(object(), step_size=1), TypeError, "is not an Optimizer"),
    (lambda o: S.LinearLR(o, start_factor=0), ValueError, "Starting multiplicative factor"),
    (lambda o: S.ConstantLR(o, factor=2), ValueError, "between 0 and 1"),
    (lambda o: S.LambdaLR(o, [lambda e: 1.0]), ValueError, "Expected 2 lr_lambdas, but got 1"),
    (lambda o: S.OneCycleLR(o, max_lr=0.1), ValueError, "total_steps OR"),
    (lambda o: S.OneCycleLR(o, max_lr=[0.1], total_steps=5), ValueError, "max_lr must have the same length"),
    (lambda o: S.CosineAnnealingWarmRestarts(o, T_0=0), ValueError, "Expected positive integer T_0"),
    (lambda o: S.ReduceLROnPlateau(o, factor=1.0), ValueError, "Factor should be < 1.0"),
    (lambda o: S.ReduceLROnPlateau(o, mode="avg"), ValueError, "mode avg is unknown"),
    (lambda o: S.SequentialLR(o, [S.StepLR(o, 2)], milestones=[3]), ValueError, "number of milestones"),
    (lambda o: S.ChainedScheduler([S.StepLR(o, 2), S.StepLR(_opt(lg), 2)]), ValueError, "same optimizer"),
])
def test_errors(make, exc, msg):
    with pytest.raises(exc, match=msg):
        make(_opt(lg))


def test_scheduler_drives_optimizer_updates():
    w = lg.tensor([1.0], dtype=lg.float64, requires_grad=True)
    opt = lg.optim.SGD([w], lr=1.0)
    sched = S.StepLR(opt, step_size=1, gamma=0.5)
    for _ in range(3):
        opt.zero_grad()
        w.sum().backward()  # gradient 1: each step moves w by the current lr
        opt.step()
        sched.step()
    assert w.item() == pytest.approx(1.0 - 1.0 - 0.5 - 0.25)
