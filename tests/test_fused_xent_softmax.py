"""The fused cross-entropy node and the shift-free softmax path give PyTorch's results: values,
gradients (also differentiated twice) and errors, on both sides of every condition that picks
the fast path, and gradients match finite differences in float64."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import lightgrad as lg
from lightgrad import backend as B

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(0)


def _xent_grads(T: Any, x0: np.ndarray, t0: np.ndarray, **kw: Any) -> list[np.ndarray]:
    x = T.tensor(x0, requires_grad=True)
    loss = T.nn.functional.cross_entropy(x, T.tensor(t0), **kw)
    (g,) = T.autograd.grad(loss, x, create_graph=True)
    (gg,) = T.autograd.grad((g * g).sum(), x)
    return [loss.detach().numpy(), g.detach().numpy(), gg.numpy()]


@pytest.mark.parametrize("shape", [(37, 11), (300, 65)], ids=["small", "shift_free_sized"])
@pytest.mark.parametrize("row_shift", [0.0, 200.0, -40.0], ids=["plain", "overflowing_row", "vanishing_row"])
@pytest.mark.parametrize("reduction", ["mean", "sum"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_fused_cross_entropy_matches_torch_to_second_order(reduction: str, dtype: Any, row_shift: float,
                                                           shape: tuple[int, int]) -> None:
    # (300, 65) logits are large enough for backend.exp_sums to try the shift-free path
    x0 = (RNG.standard_normal(shape) * 5).astype(dtype)
    x0[3] += row_shift  # one row far from the others: the row maxima are needed again
    t0 = RNG.integers(0, shape[1], shape[0])
    theirs = _xent_grads(torch, x0, t0, reduction=reduction)
    ours = _xent_grads(lg, x0, t0, reduction=reduction)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


def test_fused_cross_entropy_is_one_node_and_backward_matches_torch() -> None:
    x0 = RNG.standard_normal((64, 65)).astype(np.float32)
    t0 = RNG.integers(0, 65, 64)
    res = []
    for T in (torch, lg):
        x = T.tensor(x0, requires_grad=True)
        loss = T.nn.functional.cross_entropy(x * 2, T.tensor(t0))
        loss.backward()
        res.append((loss.detach().numpy(), x.grad.numpy()))
        if T is lg:
            assert type(loss.grad_fn).__name__ == "CrossEntropy"
    np.testing.assert_allclose(res[1][0], res[0][0], rtol=1e-5)
    np.testing.assert_allclose(res[1][1], res[0][1], rtol=1e-5, atol=1e-7)


def test_fused_cross_entropy_gradient_matches_finite_differences() -> None:
    x0 = RNG.standard_normal((5, 4))
    t0 = np.array([0, 3, 1, 1, 2])
    x = lg.tensor(x0, requires_grad=True)
    lg.nn.functional.cross_entropy(x, lg.tensor(t0)).backward()

    def f(v: np.ndarray) -> float:
        return float(lg.nn.functional.cross_entropy(lg.tensor(v), lg.tensor(t0)).item())
    eps = 1e-6
    num = np.zeros_like(x0)
    for i in np.ndindex(x0.shape):
        d = np.zeros_like(x0)
        d[i] = eps
        num[i] = (f(x0 + d) - f(x0 - d)) / (2 * eps)
    np.testing.assert_allclose(x.grad.numpy(), num, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("ignore", ["default", "in_range", "all"])
@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_fused_cross_entropy_with_ignored_targets_matches_torch_to_second_order(reduction: str, ignore: str) -> None:
    x0 = RNG.standard_normal((9, 5))
    t0 = RNG.integers(0, 5, 9)
    kw: dict[str, Any] = {"reduction": reduction}
    if ignore == "default":
        t0[[1, 4, 5]] = -100
    elif ignore == "in_range":
        kw["ignore_index"] = int(t0[0])
    else:
        t0[:] = -100  # mean over no targets: nan, as PyTorch
    theirs = _xent_grads(torch, x0, t0, **kw)
    ours = _xent_grads(lg, x0, t0, **kw)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)


def test_compiled_step_checks_the_targets_of_every_step() -> None:
    # the fused path is chosen by shapes only, so a replay sees each batch's ignored and bad targets
    w = lg.zeros(4, 3, requires_grad=True)

    def step(x: lg.Tensor, t: lg.Tensor) -> lg.Tensor:
        w.grad = None
        loss = lg.nn.functional.cross_entropy(x @ w, t)
        loss.backward()
        return loss
    compiled = lg.compile(step)
    x = lg.tensor(RNG.standard_normal((6, 4)).astype(np.float32))
    for t0 in ([0, 1, 2, 0, 1, 2], [0, -100, 2, -100, 1, 2], [-100] * 6):
        t = lg.tensor(t0)
        got = (compiled(x, t).item(), w.grad.numpy().copy())
        want = (step(x, t).item(), w.grad.numpy().copy())
        np.testing.assert_array_equal(got[1], want[1])
        assert got[0] == want[0] or np.isnan(got[0]) and np.isnan(want[0])
    assert all(isinstance(v, dict) for v in compiled.stats().values())  # replayed, not eager
    with pytest.raises(IndexError):
        compiled(x, lg.tensor([0, 1, 2, 3, 1, 2]))


@pytest.mark.parametrize("case", ["weight", "smoothing", "none", "3d"])
def test_cross_entropy_off_the_fused_path_matches_torch(case: str) -> None:
    x0 = RNG.standard_normal((6, 5)).astype(np.float64)
    t0 = np.array([0, 2, 4, 1, 2, 3])
    kw: dict[str, Any] = {}
    if case == "weight":
        w = RNG.random(5)
        kw["weight"] = w
    elif case == "smoothing":
        kw["label_smoothing"] = 0.1
    elif case == "none":
        kw["reduction"] = "none"
    else:
        x0 = RNG.standard_normal((6, 5, 3))
        t0 = RNG.integers(0, 5, (6, 3))
    res = []
    for T in (torch, lg):
        kwt = {k: (T.tensor(v) if isinstance(v, np.ndarray) else v) for k, v in kw.items()}
        x = T.tensor(x0, requires_grad=True)
        loss = T.nn.functional.cross_entropy(x, T.tensor(t0), **kwt)
        loss.sum().backward()
        res.append((loss.detach().numpy(), x.grad.numpy()))
    np.testing.assert_allclose(res[1][0], res[0][0], rtol=1e-10)
    np.testing.assert_allclose(res[1][1], res[0][1], rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("bad", [5, -1])
def test_cross_entropy_target_out_of_range_raises_like_torch(bad: int) -> None:
    x0 = RNG.standard_normal((3, 5)).astype(np.float32)
    t0 = np.array([0, bad, 1])
    with pytest.raises(IndexError):
        torch.nn.functional.cross_entropy(torch.tensor(x0), torch.tensor(t0))
    with pytest.raises(IndexError):
        lg.nn.functional.cross_entropy(lg.tensor(x0), lg.tensor(t0))


def _causal_scores(shift: float, scale: float) -> np.ndarray:
    a = (RNG.standard_normal((4, 2, 64, 64)) * scale + shift).astype(np.float32)
    a[..., np.triu(np.ones((64, 64), bool), 1)] = -np.inf
    return a


@pytest.mark.parametrize("shift,scale", [(0.0, 1.0), (0.0, 100.0), (-30.0, 1.0), (55.0, 1.0), (-5.0, 0.1)],
                         ids=["plain", "overflowing", "vanishing", "near_limit", "small_sums"])
def test_softmax_with_and_without_the_shift_matches_torch(shift: float, scale: float) -> None:
    a = _causal_scores(shift, scale)
    assert a.size >= B._SOFTMAX_SHIFTLESS_MIN  # the size where the shift-free path is tried
    ours = B.softmax(a, 3)
    theirs = torch.softmax(torch.tensor(a), -1).numpy()
    np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-7)
    x = lg.tensor(a, requires_grad=True)
    xt = torch.tensor(a, requires_grad=True)
    g = RNG.standard_normal(a.shape).astype(np.float32)
    (x.softmax(-1) * lg.tensor(g)).sum().backward()
    (xt.softmax(-1) * torch.tensor(g)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-4, atol=1e-6)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # NaN in, NaN out
def test_softmax_rows_of_only_minus_inf_and_nan_are_nan_like_torch() -> None:
    a = _causal_scores(0.0, 1.0)
    a[0, 0, 5] = -np.inf
    a[1, 1, 7, 3] = np.nan
    ours = B.softmax(a, 3)
    theirs = torch.softmax(torch.tensor(a), -1).numpy()
    np.testing.assert_array_equal(np.isnan(ours), np.isnan(theirs))
    ok = ~np.isnan(theirs)
    np.testing.assert_allclose(ours[ok], theirs[ok], rtol=1e-5, atol=1e-7)


def test_softmax_along_a_middle_axis_matches_torch() -> None:
    a = RNG.standard_normal((8, 40, 70)).astype(np.float64)
    np.testing.assert_allclose(B.softmax(a, 1), torch.softmax(torch.tensor(a), 1).numpy(), rtol=1e-12)
