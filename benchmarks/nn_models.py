"""Model workloads: an MLP classifier and a one-block transformer language model, trained one step
at a time (forward, cross-entropy, backward, plain SGD update under no_grad).

Models are functions of the framework module (``lightgrad`` or ``torch``) and use only the API the
two share, so the same code is timed in both.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np


def mlp(T: Any) -> Any:
    """784-512-256-10 ReLU classifier (MNIST-shaped)."""
    nn = T.nn
    return nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(), nn.Linear(256, 10))


def transformer_block_lm(T: Any, vocab: int = 65, d: int = 128, heads: int = 4, seq: int = 64) -> Any:
    """Character-level LM: token + position embeddings, one pre-LayerNorm transformer block
    (causal self-attention, GELU MLP), final LayerNorm and a linear head over the vocabulary."""
    nn, F = T.nn, T.nn.functional
    hs = d // heads

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.ln1 = nn.LayerNorm(d)
            self.qkv = nn.Linear(d, 3 * d)
            self.proj = nn.Linear(d, d)
            self.ln2 = nn.LayerNorm(d)
            self.fc = nn.Linear(d, 4 * d)
            self.out = nn.Linear(4 * d, d)
            # True above the diagonal: positions a token may not attend to
            self.register_buffer("mask", T.triu(T.ones(seq, seq), diagonal=1) > 0, persistent=False)

        def forward(self, x: Any) -> Any:
            B, L, C = x.shape
            q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
            q = q.reshape(B, L, heads, hs).transpose(1, 2)  # (B, nh, L, hs)
            k = k.reshape(B, L, heads, hs).transpose(1, 2)
            v = v.reshape(B, L, heads, hs).transpose(1, 2)
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hs))  # (B, nh, L, L)
            att = att.masked_fill(self.mask[:L, :L], float("-inf")).softmax(dim=-1)
            y = (att @ v).transpose(1, 2).reshape(B, L, C)  # (B, L, C)
            x = x + self.proj(y)
            return x + self.out(F.gelu(self.fc(self.ln2(x))))

    class LM(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.tok = nn.Embedding(vocab, d)
            self.pos = nn.Embedding(seq, d)
            self.block = Block()
            self.ln_f = nn.LayerNorm(d)
            self.head = nn.Linear(d, vocab)

        def forward(self, idx: Any) -> Any:
            L = idx.shape[1]
            x = self.tok(idx) + self.pos(T.arange(L))  # (B, L, d)
            return self.head(self.ln_f(self.block(x)))  # (B, L, vocab)

    return LM()


def _sgd_step(T: Any, model: Any, loss_of: Callable[[], Any], lr: float) -> Callable[[], None]:
    params = list(model.parameters())

    def step() -> None:
        model.zero_grad(set_to_none=True)
        loss = loss_of()
        loss.backward()
        with T.no_grad():
            for p in params:
                p.add_(p.grad, alpha=-lr)
    return step


def _mlp_step(T: Any) -> Callable[[], None]:
    T.manual_seed(0)
    model = mlp(T)
    rng = np.random.default_rng(0)
    x = T.tensor(rng.standard_normal((128, 784)).astype(np.float32))
    y = T.tensor(rng.integers(0, 10, 128))
    return _sgd_step(T, model, lambda: T.nn.functional.cross_entropy(model(x), y), 0.01)


def _transformer_step(T: Any) -> Callable[[], None]:
    T.manual_seed(0)
    vocab, batch, seq = 65, 16, 64
    model = transformer_block_lm(T, vocab=vocab, seq=seq)
    rng = np.random.default_rng(0)
    data = rng.integers(0, vocab, (batch, seq + 1))
    idx, tgt = T.tensor(data[:, :-1]), T.tensor(data[:, 1:])
    return _sgd_step(T, model, lambda: T.nn.functional.cross_entropy(
        model(idx).reshape(-1, vocab), tgt.reshape(-1)), 0.01)


def _mlp_fwd_bwd(T: Any) -> Callable[[], None]:
    """Issue 3's workload (a) exactly: forward, cross-entropy and backward, no update."""
    T.manual_seed(0)
    model = mlp(T)
    rng = np.random.default_rng(0)
    x = T.tensor(rng.standard_normal((128, 784)).astype(np.float32))
    y = T.tensor(rng.integers(0, 10, 128))

    def step() -> None:
        model.zero_grad(set_to_none=True)
        T.nn.functional.cross_entropy(model(x), y).backward()
    return step


WORKLOADS: dict[str, Callable[[Any], Callable[[], None]]] = {
    "mlp_784_512_256_10_b128_fwd_bwd": _mlp_fwd_bwd,
    "mlp_784_512_256_10_b128_train_step": _mlp_step,
    "transformer_block_lm_b16_t64_train_step": _transformer_step,
}


def _floor_mlp() -> Callable[[], None]:
    """The same MLP step written by hand in NumPy: no autograd, no framework."""
    rng = np.random.default_rng(0)
    sizes = [784, 512, 256, 10]
    ws = [rng.uniform(-1, 1, (o, i)).astype(np.float32) / np.sqrt(i) for i, o in zip(sizes, sizes[1:])]
    bs = [np.zeros(o, np.float32) for o in sizes[1:]]
    x = rng.standard_normal((128, 784)).astype(np.float32)
    y = rng.integers(0, 10, 128)
    rows = np.arange(128)

    def step() -> None:
        acts = [x]
        for i, (w, b) in enumerate(zip(ws, bs)):
            h = acts[-1] @ w.T + b
            acts.append(np.maximum(h, 0) if i < 2 else h)
        z = acts[-1] - acts[-1].max(1, keepdims=True)
        p = np.exp(z)
        p /= p.sum(1, keepdims=True)
        p[rows, y] -= 1
        g = p / 128
        for i in (2, 1, 0):
            gw, gb = g.T @ acts[i], g.sum(0)
            if i:
                g = (g @ ws[i]) * (acts[i] > 0)
            ws[i] -= 0.01 * gw
            bs[i] -= 0.01 * gb
    return step


FLOORS = {"mlp_784_512_256_10_b128_train_step": _floor_mlp}
