"""Captured and replayed steps (``lightgrad.compile``) next to eager PyTorch, and XOR 500 epochs.

``*_compiled``: the same training steps as nn_models / nn_spatial_models (forward, cross-entropy,
backward, plain SGD under no_grad), wrapped in ``lightgrad.compile``; PyTorch runs them eagerly.
``xor_500_epochs``: bare-lm's 2-4-1 sigmoid network, full batch of 4, SGD with momentum, 500
steps per sample; eagerly and compiled, with the hand-written NumPy loop as the floor.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from benchmarks import nn_models, nn_spatial_models

_X = np.array([[0, 0], [0, 1], [1, 0], [1, 1]], np.float32)
_Y = np.array([[0], [1], [1], [0]], np.float32)


def _compiled(T: Any, step: Callable[[], None]) -> Callable[[], None]:
    return T.compile(step) if T.__name__ == "lightgrad" else step  # PyTorch: eager


def _xor(T: Any, compiled: bool) -> Callable[[], None]:
    T.manual_seed(3)
    nn = T.nn
    model = nn.Sequential(nn.Linear(2, 4), nn.Sigmoid(), nn.Linear(4, 1), nn.Sigmoid())
    x, y = T.tensor(_X), T.tensor(_Y)
    opt = T.optim.SGD(model.parameters(), lr=2.0, momentum=0.9)

    def epoch() -> Any:
        loss = nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

    one = _compiled(T, epoch) if compiled else epoch

    def run() -> None:
        for _ in range(500):
            one()
    return run


def _floor_xor() -> Callable[[], None]:
    rng = np.random.default_rng(3)
    w1, b1 = rng.uniform(-0.7, 0.7, (2, 4)).astype(np.float32), np.zeros(4, np.float32)
    w2, b2 = rng.uniform(-0.5, 0.5, (4, 1)).astype(np.float32), np.zeros(1, np.float32)
    params = [w1, b1, w2, b2]
    moms = [np.zeros_like(p) for p in params]

    def run() -> None:
        for _ in range(500):
            h = 1 / (1 + np.exp(-(_X @ w1 + b1)))
            o = 1 / (1 + np.exp(-(h @ w2 + b2)))
            go = 2 * (o - _Y) / 4 * o * (1 - o)
            gh = (go @ w2.T) * h * (1 - h)
            for p, m, g in zip(params, moms, (_X.T @ gh, gh.sum(0), h.T @ go, go.sum(0))):
                m *= 0.9
                m += g
                p -= 2.0 * m
    return run


WORKLOADS: dict[str, Callable[[Any], Callable[[], None]]] = {
    "xor_500_epochs": lambda T: _xor(T, False),
    "xor_500_epochs_compiled": lambda T: _xor(T, True),
    "mlp_784_512_256_10_b128_train_step_compiled": lambda T: _compiled(T, nn_models._mlp_step(T)),
    "cnn_mnist_b64_train_step_compiled": lambda T: _compiled(T, nn_spatial_models._cnn_step(T)),
    "transformer_block_lm_b16_t64_train_step_compiled": lambda T: _compiled(T, nn_models._transformer_step(T)),
    "lstm_h128_t32_b32_train_step_compiled": lambda T: _compiled(T, nn_spatial_models._lstm_step(T)),
}

FLOORS: dict[str, Callable[[], Callable[[], None]]] = {
    "xor_500_epochs": _floor_xor,
    "xor_500_epochs_compiled": _floor_xor,
    "mlp_784_512_256_10_b128_train_step_compiled": nn_models.FLOORS["mlp_784_512_256_10_b128_train_step"],
    "cnn_mnist_b64_train_step_compiled": nn_spatial_models.FLOORS["cnn_mnist_b64_train_step"],
}
