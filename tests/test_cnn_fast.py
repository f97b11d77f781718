"""The CNN training step's fast paths against PyTorch where their blocking only shows on shapes
larger than the other tests use: ``ConvStride1``'s input gradient computed a few images at a
time (``_cols_matmul``), including a last block with fewer images."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import lightgrad as lg
from lightgrad.nn import _spatial
from lightgrad.nn._spatial import ConvStride1

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(11)


# (input, weight, conv2d arguments): C >= 8 and 4*C >= O, so channels-last with the input
# gradient as a full convolution; the second with uneven padding and dilation
GEOMETRY = [((7, 8, 6, 5), (12, 8, 3, 3), dict(padding=1)),
            ((7, 9, 8, 9), (3, 9, 4, 3), dict(padding="same", dilation=(2, 1)))]


@pytest.mark.parametrize("xs, ws, kw", GEOMETRY, ids=["3x3", "same_dilated"])
@pytest.mark.parametrize("images_per_block", [1, 3, 7, 100])
@pytest.mark.parametrize("dtype, tol", [(np.float64, 1e-10), (np.float32, 1e-4)], ids=["f64", "f32"])
@pytest.mark.parametrize("weight_grad", [True, False], ids=["all", "input_only"])
def test_blocked_input_gradient_matches_torch(monkeypatch: pytest.MonkeyPatch, xs: tuple[int, ...],
                                              ws: tuple[int, ...], kw: dict[str, Any], images_per_block: int,
                                              dtype: np.dtype, tol: float, weight_grad: bool) -> None:
    """7 images in blocks of 1, 3 (3 + 3 + 1), 7 and more than 7: the same gradients as PyTorch,
    with and without the weight's gradient asked for."""
    kk_bytes = xs[2] * xs[3] * ws[2] * ws[3] * ws[0] * np.dtype(dtype).itemsize  # one image's gradient columns
    monkeypatch.setattr(_spatial, "_BLOCK_BYTES", images_per_block * kk_bytes)
    x, w, b = (RNG.standard_normal(s).astype(dtype) for s in (xs, ws, (ws[0],)))
    grads: list[list[np.ndarray]] = []
    r = None
    for T in (lg, torch):
        ts = [T.tensor(a, requires_grad=i == 0 or weight_grad) for i, a in enumerate((x, w, b))]
        out = T.nn.functional.conv2d(*ts, **kw)
        if T is lg:
            assert type(out.grad_fn) is ConvStride1
            r = RNG.standard_normal(tuple(out.shape)).astype(dtype)
        (out * T.tensor(r)).sum().backward()
        grads.append([t.grad.numpy() for t in ts if t.requires_grad])
    for a, e in zip(*grads):
        np.testing.assert_allclose(a, e, rtol=tol, atol=tol)
