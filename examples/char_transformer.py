"""A small GPT learns a generated language character by character, then writes some of its own.

The text comes from a tiny seeded grammar, so nothing is downloaded. The model is a pre-LayerNorm
transformer (nanoGPT's layout): token + position embeddings, causal self-attention, a GELU MLP.

    python examples/char_transformer.py
    FRAMEWORK=torch python examples/char_transformer.py
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from common import framework, numpy_init

torch = framework()
nn = torch.nn
F = nn.functional


def make_text(n_sentences: int = 400, seed: int = 0) -> str:
    rng = np.random.default_rng(seed)
    subjects = ["the cat", "a dog", "my friend", "the old man", "a small bird", "the teacher"]
    verbs = ["sees", "likes", "finds", "carries", "draws", "follows"]
    objects = ["the ball", "a red apple", "the river", "a green hat", "the moon", "a long road"]
    endings = [".", " today.", " again.", " at night."]
    pick = lambda xs: xs[int(rng.integers(len(xs)))]  # noqa: E731
    return " ".join(f"{pick(subjects)} {pick(verbs)} {pick(objects)}{pick(endings)}"
                    for _ in range(n_sentences))


@dataclass
class Config:
    vocab: int = 32
    block: int = 32      # context length
    d: int = 64          # embedding width
    heads: int = 4
    layers: int = 2


class Block(nn.Module):
    def __init__(self, c: Config) -> None:
        super().__init__()
        self.heads = c.heads
        self.ln1, self.ln2 = nn.LayerNorm(c.d), nn.LayerNorm(c.d)
        self.qkv = nn.Linear(c.d, 3 * c.d)
        self.proj = nn.Linear(c.d, c.d)
        self.fc, self.out = nn.Linear(c.d, 4 * c.d), nn.Linear(4 * c.d, c.d)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)                   # 3 x (B, T, d)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)       # (B, nh, T, hs)
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, d))             # (B, T, d)
        return x + self.out(F.gelu(self.fc(self.ln2(x))))


class GPT(nn.Module):
    def __init__(self, c: Config) -> None:
        super().__init__()
        self.block = c.block
        self.tok, self.pos = nn.Embedding(c.vocab, c.d), nn.Embedding(c.block, c.d)
        self.blocks = nn.ModuleList([Block(c) for _ in range(c.layers)])
        self.ln, self.head = nn.LayerNorm(c.d), nn.Linear(c.d, c.vocab)

    def forward(self, idx):
        t = idx.shape[1]
        if t > self.block:
            raise ValueError(f"Cannot forward sequence of length {t}, block size is only {self.block}")
        x = self.tok(idx) + self.pos(torch.arange(t))                     # (B, T, d)
        for blk in self.blocks:
            x = blk(x)
        return self.head(self.ln(x))                                      # (B, T, vocab)


def main(steps: int = 300, log: bool = True, sample_chars: int = 120) -> list[float]:
    text = make_text()
    chars = sorted(set(text))
    stoi = {ch: i for i, ch in enumerate(chars)}
    data = np.array([stoi[ch] for ch in text], np.int64)
    c = Config(vocab=len(chars))
    model = GPT(c)
    numpy_init(torch, model)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
    rng = np.random.default_rng(1)
    losses = []
    for step in range(steps):
        starts = rng.integers(0, len(data) - c.block - 1, 16)
        xb = torch.tensor(np.stack([data[s:s + c.block] for s in starts]))
        yb = torch.tensor(np.stack([data[s + 1:s + c.block + 1] for s in starts]))
        logits = model(xb)
        loss = F.cross_entropy(logits.reshape(-1, c.vocab), yb.reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
        if log and step % 50 == 0:
            print(f"step {step:3d}  loss {loss.item():.3f}  (uniform guess: {math.log(c.vocab):.3f})")
    if log and sample_chars:
        torch.manual_seed(0)
        idx = torch.tensor([[stoi["t"]]])
        with torch.no_grad():
            for _ in range(sample_chars):
                probs = F.softmax(model(idx[:, -c.block:])[:, -1], dim=-1)
                idx = torch.cat([idx, torch.multinomial(probs, 1)], dim=1)
        print("sample:", "".join(chars[i] for i in idx[0].tolist()))
    return losses


if __name__ == "__main__":
    main()
