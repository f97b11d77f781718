"""An LSTM learns to predict the next value of noisy sine waves (sequence regression).

    python examples/lstm_sequence.py
    FRAMEWORK=torch python examples/lstm_sequence.py
"""

from __future__ import annotations

import numpy as np

from common import framework, numpy_init

torch = framework()
nn = torch.nn


class Forecaster(nn.Module):
    def __init__(self, hidden: int = 32) -> None:
        super().__init__()
        self.lstm = nn.LSTM(1, hidden, batch_first=True)
        self.head = nn.Linear(hidden, 1)

    def forward(self, x):
        out, _ = self.lstm(x)  # (B, T, hidden)
        return self.head(out)  # (B, T, 1): a prediction after every step


def data(n: int = 64, t: int = 30, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    phase = rng.uniform(0, 2 * np.pi, (n, 1))
    freq = rng.uniform(0.2, 0.5, (n, 1))
    s = np.sin(phase + freq * np.arange(t + 1)) + rng.normal(0, 0.02, (n, t + 1))
    return s.astype(np.float32)[..., None]  # (n, t + 1, 1)


def main(steps: int = 150, log: bool = True) -> list[float]:
    seq = torch.tensor(data())
    x, y = seq[:, :-1], seq[:, 1:]
    model = Forecaster()
    numpy_init(torch, model)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    losses = []
    for step in range(steps):
        loss = nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        losses.append(loss.item())
        if log and step % 25 == 0:
            print(f"step {step:3d}  mse {loss.item():.5f}")
    if log:
        print(f"final mse {losses[-1]:.5f} (predicting zero would give {float((y ** 2).mean()):.3f})")
    return losses


if __name__ == "__main__":
    main()
