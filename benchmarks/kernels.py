"""Per-kernel workloads: one fused op's forward and backward at the shape the model benchmarks use
(``python -m benchmarks --kernel-table`` times each on lightgrad's NumPy path, its native kernels on 1
and 2 threads, and PyTorch on 1 and 2 threads).

Each step is ``y = op(x); y.backward(g)`` on a leaf x, through the public API, so the time includes
the autograd node and the gradient's accumulation, as in training.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def _unary(shape: tuple[int, ...], op: Callable[[Any, Any], Any]) -> Callable[[Any], Callable[[], None]]:
    def make(T: Any) -> Callable[[], None]:
        T.manual_seed(0)
        x = T.randn(*shape, requires_grad=True)
        g = T.randn_like(op(T, x).detach())

        def step() -> None:
            x.grad = None
            op(T, x).backward(g)
        return step
    return make


def _layer_norm(T: Any) -> Callable[[], None]:
    T.manual_seed(0)
    ln = T.nn.LayerNorm(128)
    x = T.randn(1024, 128, requires_grad=True)
    g = T.randn(1024, 128)

    def step() -> None:
        x.grad = None
        ln.zero_grad()
        ln(x).backward(g)
    return step


def _causal_softmax(T: Any, x: Any) -> Any:
    mask = T.ones(64, 64, dtype=T.bool).triu(1)
    return T.softmax(x.masked_fill(mask, float("-inf")), dim=-1)


def _adam(T: Any) -> Callable[[], None]:
    T.manual_seed(0)
    p = T.randn(535_000, requires_grad=True)
    opt = T.optim.Adam([p], lr=1e-3)
    (p * T.randn(535_000)).sum().backward()
    return opt.step


def _rnn_layer(kind: str) -> Callable[[Any], Callable[[], None]]:
    """One LSTM or GRU (64 -> 128) layer over 32 steps of batch 32 (the LSTM model's), outputs'
    gradient given."""
    def make(T: Any) -> Callable[[], None]:
        T.manual_seed(0)
        layer = getattr(T.nn, kind)(64, 128)
        x = T.randn(32, 32, 64, requires_grad=True)
        g = T.randn(32, 32, 128)

        def step() -> None:
            x.grad = None
            layer.zero_grad()
            layer(x)[0].backward(g)
        return step
    return make


WORKLOADS: dict[str, Callable[[Any], Callable[[], None]]] = {
    "kernel_gelu_tanh_1024x512": _unary((1024, 512), lambda T, x: T.nn.functional.gelu(x, approximate="tanh")),
    "kernel_gelu_exact_1024x512": _unary((1024, 512), lambda T, x: T.nn.functional.gelu(x)),
    "kernel_layer_norm_1024x128": _layer_norm,
    "kernel_softmax_causal_16x4x64x64": _unary((16, 4, 64, 64), _causal_softmax),
    "kernel_relu_64x16x28x28": _unary((64, 16, 28, 28), lambda T, x: T.relu(x)),
    "kernel_max_pool2x2_64x16x28x28": _unary((64, 16, 28, 28), lambda T, x: T.nn.functional.max_pool2d(x, 2)),
    "kernel_adam_535k": _adam,
    "kernel_lstm_layer_t32_b32_64x128": _rnn_layer("LSTM"),
    "kernel_gru_layer_t32_b32_64x128": _rnn_layer("GRU"),
}
