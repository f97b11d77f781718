"""Spatial and recurrent model workloads: a small MNIST-shaped CNN and a one-layer LSTM, trained
one step at a time (forward, cross-entropy, backward, plain SGD update under no_grad).

Models are built from the framework module (``lightgrad`` or ``torch``) with only the API the two
share, so the same code is timed in both. ``FLOORS`` holds the CNN step written by hand in NumPy
(im2col convolutions, no autograd, no framework).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np


def cnn(T: Any) -> Any:
    """64x1x28x28 -> conv 1->16 3x3 pad 1, ReLU, maxpool 2 -> conv 16->32 3x3 pad 1, ReLU,
    maxpool 2 -> linear 1568->10."""
    nn = T.nn
    return nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Flatten(), nn.Linear(32 * 7 * 7, 10))


class _LSTMClassifier:
    """LSTM(64 -> 128) over 32 steps; a Linear head on the last step's output."""

    def __init__(self, T: Any) -> None:
        self.lstm = T.nn.LSTM(64, 128)
        self.head = T.nn.Linear(128, 10)

    def __call__(self, x: Any) -> Any:
        out, _ = self.lstm(x)  # (T, B, 128)
        return self.head(out[-1])

    def parameters(self) -> list[Any]:
        return list(self.lstm.parameters()) + list(self.head.parameters())


def _sgd_step(T: Any, params: list[Any], loss_of: Callable[[], Any], lr: float) -> Callable[[], None]:
    def step() -> None:
        for p in params:
            p.grad = None
        loss = loss_of()
        loss.backward()
        with T.no_grad():
            for p in params:
                p.add_(p.grad, alpha=-lr)
    return step


def _cnn_step(T: Any) -> Callable[[], None]:
    T.manual_seed(0)
    model = cnn(T)
    rng = np.random.default_rng(0)
    x = T.tensor(rng.standard_normal((64, 1, 28, 28)).astype(np.float32))
    y = T.tensor(rng.integers(0, 10, 64))
    return _sgd_step(T, list(model.parameters()), lambda: T.nn.functional.cross_entropy(model(x), y), 0.01)


def _lstm_step(T: Any) -> Callable[[], None]:
    T.manual_seed(0)
    model = _LSTMClassifier(T)
    rng = np.random.default_rng(0)
    x = T.tensor(rng.standard_normal((32, 32, 64)).astype(np.float32))  # (seq, batch, features)
    y = T.tensor(rng.integers(0, 10, 32))
    return _sgd_step(T, model.parameters(), lambda: T.nn.functional.cross_entropy(model(x), y), 0.01)


WORKLOADS: dict[str, Callable[[Any], Callable[[], None]]] = {
    "cnn_mnist_b64_train_step": _cnn_step,
    "lstm_h128_t32_b32_train_step": _lstm_step,
}


# ---- the NumPy floor ---------------------------------------------------------------------------

def _windows(xp: np.ndarray, k: int, h: int, w: int) -> np.ndarray:
    """(N, C, k, k, H, W) view of every 3x3 window of the padded image (stride 1)."""
    s0, s1, s2, s3 = xp.strides
    return np.lib.stride_tricks.as_strided(xp, (xp.shape[0], xp.shape[1], k, k, h, w), (s0, s1, s2, s3, s2, s3))


def _conv_fwd(x: np.ndarray, w: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    n, c, h, wd = x.shape
    xp = np.zeros((n, c, h + 2, wd + 2), x.dtype)
    xp[:, :, 1:-1, 1:-1] = x
    cols = _windows(xp, 3, h, wd).reshape(n, c * 9, h * wd)  # im2col: one copy
    out = np.matmul(w.reshape(w.shape[0], -1), cols) + b[:, None]
    return out.reshape(n, -1, h, wd), cols


def _conv_bwd(g: np.ndarray, cols: np.ndarray, w: np.ndarray, x_shape: tuple[int, ...] | None) -> tuple[Any, ...]:
    n, o, h, wd = g.shape
    g3 = g.reshape(n, o, h * wd)
    gw = np.matmul(g3, cols.transpose(0, 2, 1)).sum(0).reshape(w.shape)
    gb = g3.sum((0, 2))
    if x_shape is None:
        return None, gw, gb
    gcols = np.matmul(w.reshape(o, -1).T, g3).reshape(n, -1, 3, 3, h, wd)
    gxp = np.zeros((n, x_shape[1], h + 2, wd + 2), g.dtype)
    for i in range(3):
        for j in range(3):
            gxp[:, :, i:i + h, j:j + wd] += gcols[:, :, i, j]
    return gxp[:, :, 1:-1, 1:-1], gw, gb


def _pool_fwd(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    n, c, h, w = x.shape
    v = x.reshape(n, c, h // 2, 2, w // 2, 2)
    # pairwise maxima: NumPy's max over two strided axes at once is several times slower
    out = np.maximum(np.maximum(v[:, :, :, 0, :, 0], v[:, :, :, 0, :, 1]),
                     np.maximum(v[:, :, :, 1, :, 0], v[:, :, :, 1, :, 1]))
    mask = v == out[:, :, :, None, :, None]  # ties share the gradient here: fine for a floor
    return out, mask


def _floor_cnn() -> Callable[[], None]:
    """The CNN step by hand: im2col convolutions, 2x2 max pool by reshape, softmax cross-entropy."""
    rng = np.random.default_rng(0)
    w1 = (rng.uniform(-1, 1, (16, 1, 3, 3)) / 3).astype(np.float32)
    w2 = (rng.uniform(-1, 1, (32, 16, 3, 3)) / 12).astype(np.float32)
    w3 = (rng.uniform(-1, 1, (10, 1568)) / np.sqrt(1568)).astype(np.float32)
    b1, b2, b3 = np.zeros(16, np.float32), np.zeros(32, np.float32), np.zeros(10, np.float32)
    x = rng.standard_normal((64, 1, 28, 28)).astype(np.float32)
    y = rng.integers(0, 10, 64)
    rows = np.arange(64)
    lr = 0.01

    def step() -> None:
        a1, cols1 = _conv_fwd(x, w1, b1)
        r1 = np.maximum(a1, 0)
        p1, m1 = _pool_fwd(r1)
        a2, cols2 = _conv_fwd(p1, w2, b2)
        r2 = np.maximum(a2, 0)
        p2, m2 = _pool_fwd(r2)
        flat = p2.reshape(64, -1)
        z = flat @ w3.T + b3
        z -= z.max(1, keepdims=True)
        p = np.exp(z)
        p /= p.sum(1, keepdims=True)
        p[rows, y] -= 1
        g = p / 64
        gw3, gb3 = g.T @ flat, g.sum(0)
        gp2 = (g @ w3).reshape(p2.shape)
        gr2 = (m2 * gp2[:, :, :, None, :, None]).reshape(r2.shape) * (a2 > 0)
        gp1, gw2, gb2 = _conv_bwd(gr2, cols2, w2, p1.shape)
        gr1 = (m1 * gp1[:, :, :, None, :, None]).reshape(r1.shape) * (a1 > 0)
        _, gw1, gb1 = _conv_bwd(gr1, cols1, w1, None)
        for prm, grd in ((w1, gw1), (b1, gb1), (w2, gw2), (b2, gb2), (w3, gw3), (b3, gb3)):
            prm -= lr * grd
    return step


FLOORS = {"cnn_mnist_b64_train_step": _floor_cnn}
