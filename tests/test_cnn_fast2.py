"""``ConvStride1``'s gradients as the CNN training step computes them: the weight and bias
gradients as one product per image summed over the batch (both column layouts), the input
gradient as a blocked full convolution read straight from the NCHW gradient; against PyTorch and
finite differences, with every subset of gradients asked for and gradients that arrive
non-contiguous or broadcast."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import lightgrad as lg
from lightgrad.nn import _spatial
from lightgrad.nn._spatial import _LAST_MIN_CHANNELS, ConvStride1
from tests.helpers import numeric_grads

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(23)

# (input, weight, conv2d arguments): NCHW columns (C < _LAST_MIN_CHANNELS), channels-last with
# col2im (4*C < O) and channels-last with the full convolution (4*C >= O); padding, 'same' with
# an even kernel, dilation; batches of several images so that the per-image sums matter
GEOMETRY = [
    ((5, 2, 7, 6), (6, 2, 3, 3), dict(padding=1)),
    ((4, 8, 6, 7), (40, 8, 3, 3), dict(padding=1)),
    ((5, 9, 7, 6), (12, 9, 3, 3), dict(padding=1)),
    ((3, 10, 8, 9), (4, 10, 4, 3), dict(padding="same", dilation=(2, 1))),
    ((4, 8, 9, 8), (5, 8, 3, 3), dict(padding=(2, 1), dilation=2)),
    ((3, 12, 5, 6), (7, 12, 2, 2), dict()),
]
IDS = ["nchw", "last_col2im", "last_full", "same_dilated", "pad_dilated", "valid_even"]


def test_geometry_covers_both_layouts_and_input_gradients() -> None:
    last = [xs[1] >= _LAST_MIN_CHANNELS for xs, _, _ in GEOMETRY]
    routes = {(la, la and 4 * xs[1] >= ws[0]) for la, (xs, ws, _) in zip(last, GEOMETRY)}
    assert routes == {(False, False), (True, False), (True, True)}


def _grads(T: Any, x: np.ndarray, w: np.ndarray, b: np.ndarray | None, r: np.ndarray, kw: dict[str, Any],
           needs: tuple[bool, bool, bool], permuted: bool) -> list[np.ndarray | None]:
    ts = [T.tensor(a, requires_grad=n) if a is not None else None for a, n in zip((x, w, b), needs)]
    out = T.nn.functional.conv2d(ts[0], ts[1], ts[2], **kw)
    if T is lg:
        assert type(out.grad_fn) is ConvStride1
    if permuted:  # the gradient reaches the convolution as a non-contiguous (transposed) array
        loss = (out.permute(0, 2, 3, 1) * T.tensor(r.transpose(0, 2, 3, 1).copy())).sum()
    else:
        loss = (out * T.tensor(r)).sum()
    loss.backward()
    return [t.grad.numpy() if t is not None and t.requires_grad else None for t in ts]


@pytest.mark.parametrize("xs, ws, kw", GEOMETRY, ids=IDS)
@pytest.mark.parametrize("needs", [(True, True, True), (False, True, True), (False, True, False),
                                   (False, False, True), (True, False, False)],
                         ids=["all", "weight_bias", "weight", "bias", "input"])
@pytest.mark.parametrize("permuted", [False, True], ids=["contiguous", "permuted"])
def test_gradients_match_torch_float64(xs: tuple[int, ...], ws: tuple[int, ...], kw: dict[str, Any],
                                       needs: tuple[bool, bool, bool], permuted: bool) -> None:
    x, w, b = (RNG.standard_normal(s) for s in (xs, ws, (ws[0],)))
    with torch.no_grad():
        r = RNG.standard_normal(tuple(torch.nn.functional.conv2d(torch.tensor(x), torch.tensor(w), **kw).shape))
    got = _grads(lg, x, w, b, r, kw, needs, permuted)
    want = _grads(torch, x, w, b, r, kw, needs, permuted)
    for name, a, e in zip(("input", "weight", "bias"), got, want):
        assert (a is None) == (e is None), name
        if a is not None:
            np.testing.assert_allclose(a, e, rtol=1e-10, atol=1e-10, err_msg=name)


@pytest.mark.parametrize("xs, ws, kw", GEOMETRY, ids=IDS)
def test_gradients_match_torch_float32_without_bias(xs: tuple[int, ...], ws: tuple[int, ...],
                                                    kw: dict[str, Any]) -> None:
    x, w = (RNG.standard_normal(s).astype(np.float32) for s in (xs, ws))
    with torch.no_grad():
        r = RNG.standard_normal(tuple(torch.nn.functional.conv2d(torch.tensor(x), torch.tensor(w), **kw).shape))
    r = r.astype(np.float32)
    got = _grads(lg, x, w, None, r, kw, (True, True, False), False)
    want = _grads(torch, x, w, None, r, kw, (True, True, False), False)
    for a, e in zip(got[:2], want[:2]):
        assert a is not None and a.dtype == np.float32
        np.testing.assert_allclose(a, e, rtol=1e-4, atol=1e-4)


def test_broadcast_gradient_of_a_sum() -> None:
    """out.sum().backward() hands the op a broadcast (zero-stride) gradient of ones."""
    x, w, b = (RNG.standard_normal(s) for s in ((3, 9, 6, 5), (12, 9, 3, 3), (12,)))
    res = []
    for T in (lg, torch):
        ts = [T.tensor(a, requires_grad=True) for a in (x, w, b)]
        T.nn.functional.conv2d(*ts, padding=1).sum().backward()
        res.append([t.grad.numpy() for t in ts])
    for a, e in zip(*res):
        np.testing.assert_allclose(a, e, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("xs, ws, kw", [GEOMETRY[0], GEOMETRY[2], GEOMETRY[3]], ids=[IDS[0], IDS[2], IDS[3]])
def test_gradients_match_finite_differences(xs: tuple[int, ...], ws: tuple[int, ...], kw: dict[str, Any]) -> None:
    small = (2,) + xs[1:]
    x, w, b = (RNG.standard_normal(s) for s in (small, ws, (ws[0],)))
    out_shape = lg.nn.functional.conv2d(lg.tensor(x), lg.tensor(w), **kw).shape
    r = RNG.standard_normal(tuple(out_shape))

    def f(*arrs: np.ndarray) -> np.ndarray:
        return lg.nn.functional.conv2d(*(lg.tensor(a) for a in arrs), **kw).numpy()

    ts = [lg.tensor(a, requires_grad=True) for a in (x, w, b)]
    (lg.nn.functional.conv2d(*ts, **kw) * lg.tensor(r)).sum().backward()
    for t, num in zip(ts, numeric_grads(f, [x, w, b], r)):
        np.testing.assert_allclose(t.grad.numpy(), num, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("images_per_block", [1, 2, 100])
def test_blocked_input_gradient_from_nchw(monkeypatch: pytest.MonkeyPatch, images_per_block: int) -> None:
    """The full convolution a few images at a time, straight from the NCHW gradient: blocks of
    1 and 2 of 5 images (a last block with fewer images) and one block, input gradient only."""
    xs, ws = (5, 9, 7, 6), (12, 9, 3, 3)
    monkeypatch.setattr(_spatial, "_BLOCK_BYTES", images_per_block * xs[2] * xs[3] * 9 * ws[0] * 8)
    x, w = (RNG.standard_normal(s) for s in (xs, ws))
    r = RNG.standard_normal((xs[0], ws[0], xs[2], xs[3]))
    got = _grads(lg, x, w, None, r, dict(padding=1), (True, False, False), True)
    want = _grads(torch, x, w, None, r, dict(padding=1), (True, False, False), True)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("xs, ws, kw", [GEOMETRY[0], GEOMETRY[2]], ids=[IDS[0], IDS[2]])
@pytest.mark.parametrize("images_per_chunk", [1, 2, 100])
def test_weight_gradient_summed_in_chunks_of_images(monkeypatch: pytest.MonkeyPatch, xs: tuple[int, ...],
                                                    ws: tuple[int, ...], kw: dict[str, Any],
                                                    images_per_chunk: int) -> None:
    """The per-image products summed 1 and 2 images at a time (a last chunk with fewer) and all
    at once: the same weight and bias gradients, in both column layouts."""
    k = xs[1] * ws[2] * ws[3] + 1  # one image's product is O x (kh*kw*C + 1), the bias column included
    monkeypatch.setattr(_spatial, "_SUM_BYTES", images_per_chunk * ws[0] * k * 8)
    x, w, b = (RNG.standard_normal(s) for s in (xs, ws, (ws[0],)))
    with torch.no_grad():
        r = RNG.standard_normal(tuple(torch.nn.functional.conv2d(torch.tensor(x), torch.tensor(w), **kw).shape))
    got = _grads(lg, x, w, b, r, kw, (False, True, True), False)
    want = _grads(torch, x, w, b, r, kw, (False, True, True), False)
    for a, e in zip(got[1:], want[1:]):
        np.testing.assert_allclose(a, e, rtol=1e-10, atol=1e-10)
