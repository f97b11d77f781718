"""The array API standard's namespace: found by array_api_compat, and its functions checked
against NumPy's own array API namespace (NumPy 2 implements the standard)."""

from __future__ import annotations

import numpy as np
import pytest

import lightgrad as lg

array_api_compat = pytest.importorskip("array_api_compat")

RNG = np.random.default_rng(0)
A = RNG.standard_normal((3, 4)).astype(np.float32)
B = RNG.standard_normal((3, 4)).astype(np.float32)
M = RNG.standard_normal((2, 3, 3)).astype(np.float64)
SPD = M @ np.swapaxes(M, -1, -2) + 3 * np.eye(3)
V = np.array([3.0, 1.0, 2.0, 1.0, 3.0], dtype=np.float32)


def test_array_namespace_is_lightgrads() -> None:
    x = lg.ones(2)
    xp = array_api_compat.array_namespace(x)
    assert xp is x.__array_namespace__() and xp.__array_api_version__ == "2023.12"
    assert array_api_compat.array_namespace(x, api_version="2022.12") is xp
    with pytest.raises(ValueError, match="Unrecognized array API version"):
        x.__array_namespace__(api_version="1999.01")


CASES = [
    ("concat", lambda xp, a, b: xp.concat([a, b], axis=1)),
    ("concat None", lambda xp, a, b: xp.concat([a, b], axis=None)),
    ("stack", lambda xp, a, b: xp.stack([a, b], axis=-1)),
    ("permute_dims", lambda xp, a, b: xp.permute_dims(a, (1, 0))),
    ("matrix_transpose", lambda xp, a, b: xp.matrix_transpose(a)),
    ("vecdot", lambda xp, a, b: xp.vecdot(a, b)),
    ("matmul", lambda xp, a, b: xp.matmul(a, xp.matrix_transpose(b))),
    ("expand_dims", lambda xp, a, b: xp.expand_dims(a, axis=1)),
    ("squeeze", lambda xp, a, b: xp.squeeze(xp.expand_dims(a, axis=0), axis=0)),
    ("flip", lambda xp, a, b: xp.flip(a, axis=1)),
    ("roll", lambda xp, a, b: xp.roll(a, 2, axis=1)),
    ("tile", lambda xp, a, b: xp.tile(a, (2, 1))),
    ("repeat", lambda xp, a, b: xp.repeat(a, 2, axis=0)),
    ("moveaxis", lambda xp, a, b: xp.moveaxis(xp.reshape(a, (3, 2, 2)), 0, -1)),
    ("sum", lambda xp, a, b: xp.sum(a, axis=1, keepdims=True)),
    ("mean", lambda xp, a, b: xp.mean(a, axis=0)),
    ("max", lambda xp, a, b: xp.max(a, axis=(0, 1))),
    ("min", lambda xp, a, b: xp.min(a)),
    ("prod", lambda xp, a, b: xp.prod(a, axis=1)),
    ("std", lambda xp, a, b: xp.std(a, axis=1, correction=1)),
    ("var", lambda xp, a, b: xp.var(a)),
    ("cumulative_sum", lambda xp, a, b: xp.cumulative_sum(a, axis=1, include_initial=True)),
    ("argmax", lambda xp, a, b: xp.argmax(a, axis=1)),
    ("argsort", lambda xp, a, b: xp.argsort(a, axis=1)),
    ("sort", lambda xp, a, b: xp.sort(a, axis=0)),
    ("where", lambda xp, a, b: xp.where(xp.greater(a, b), a, b)),
    ("clip", lambda xp, a, b: xp.clip(a, min=-0.5, max=0.5)),
    ("elementwise", lambda xp, a, b: xp.add(xp.multiply(a, b), xp.divide(xp.subtract(a, b), xp.exp(b)))),
    ("astype", lambda xp, a, b: xp.astype(a, xp.float64)),
    ("take", lambda xp, a, b: xp.take(a, xp.asarray([2, 0]), axis=1)),
    ("any all", lambda xp, a, b: xp.stack([xp.all(xp.greater(a, -9.0), axis=1), xp.any(xp.greater(a, 1.0), axis=1)])),
    ("vector_norm", lambda xp, a, b: xp.linalg.vector_norm(a, axis=1, ord=1)),
    ("matrix_norm", lambda xp, a, b: xp.linalg.matrix_norm(a)),
    ("trace", lambda xp, a, b: xp.linalg.trace(xp.linalg.matmul(a, xp.matrix_transpose(b)))),
    ("outer", lambda xp, a, b: xp.linalg.outer(a[0], b[0])),
]


@pytest.mark.parametrize("name,fn", CASES, ids=[c[0] for c in CASES])
def test_against_numpy(name, fn) -> None:
    x = lg.tensor(A)
    xp = x.__array_namespace__()
    ours = fn(xp, x, lg.tensor(B))
    ref = fn(np, A, B)
    assert isinstance(ours, lg.Tensor)
    assert tuple(ours.shape) == ref.shape
    np.testing.assert_allclose(ours.numpy(), ref, rtol=1e-5, atol=1e-6)


def test_linalg_against_numpy() -> None:
    xp = lg.tensor(SPD).__array_namespace__()
    s = lg.tensor(SPD)
    np.testing.assert_allclose(xp.linalg.cholesky(s).numpy(), np.linalg.cholesky(SPD), rtol=1e-10)
    np.testing.assert_allclose(xp.linalg.det(s).numpy(), np.linalg.det(SPD), rtol=1e-10)
    np.testing.assert_allclose(xp.linalg.inv(s).numpy(), np.linalg.inv(SPD), rtol=1e-9)
    np.testing.assert_allclose(xp.linalg.eigvalsh(s).numpy(), np.linalg.eigvalsh(SPD), rtol=1e-10)
    np.testing.assert_allclose(xp.linalg.svdvals(s).numpy(), np.linalg.svdvals(SPD), rtol=1e-10)
    sign, logdet = xp.linalg.slogdet(s)
    np.testing.assert_allclose(logdet.numpy(), np.linalg.slogdet(SPD).logabsdet, rtol=1e-10)


def test_sets_and_searching() -> None:
    v = lg.tensor(V)
    xp = v.__array_namespace__()
    np.testing.assert_array_equal(xp.unique_values(v).numpy(), np.unique_values(V))
    values, counts = xp.unique_counts(v)
    ref = np.unique_counts(V)
    np.testing.assert_array_equal(values.numpy(), ref.values)
    np.testing.assert_array_equal(counts.numpy(), ref.counts)
    values, inverse = xp.unique_inverse(v)
    np.testing.assert_array_equal(values.numpy()[inverse.numpy()], V)
    (idx,) = xp.nonzero(xp.greater(v, 1.5))
    np.testing.assert_array_equal(idx.numpy(), np.nonzero(V > 1.5)[0])
    s = xp.sort(v)
    np.testing.assert_array_equal(xp.searchsorted(s, lg.tensor([2.0])).numpy(), np.searchsorted(np.sort(V), [2.0]))


def test_creation_dtypes_and_info() -> None:
    xp = lg.ones(1).__array_namespace__()
    assert xp.asarray([1, 2]).dtype == xp.int64 and xp.asarray([1.0]).dtype == xp.float32
    t = lg.ones(3)
    assert xp.asarray(t) is t and xp.asarray(t, copy=True) is not t
    np.testing.assert_array_equal(xp.arange(5).numpy(), np.arange(5))
    assert xp.isdtype(xp.float32, "real floating") and not xp.isdtype(xp.int8, ("real floating", "bool"))
    assert xp.isdtype(xp.uint8, "integral") and xp.result_type(xp.int32, xp.float32) == xp.float32
    info = xp.__array_namespace_info__()
    assert info.default_dtypes()["real floating"] == xp.float32
    assert set(info.dtypes(kind="signed integer")) == {"int8", "int16", "int32", "int64"}


def test_gradients_flow_through_the_namespace() -> None:
    torch = pytest.importorskip("torch")
    x = lg.tensor(A, requires_grad=True)
    xp = x.__array_namespace__()
    xp.sum(xp.vecdot(xp.permute_dims(x, (1, 0)), xp.permute_dims(x, (1, 0)), axis=0)).backward()
    tx = torch.tensor(A, requires_grad=True)
    torch.linalg.vecdot(tx.T, tx.T, dim=0).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-6)
