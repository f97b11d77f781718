"""Linear and polynomial regression with mini-batch SGD on synthetic data.

    python examples/regression.py              # lightgrad
    FRAMEWORK=torch python examples/regression.py
"""

from __future__ import annotations

import numpy as np

from common import framework, numpy_init

torch = framework()
nn = torch.nn


def data(n: int = 512, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.uniform(-2, 2, (n, 3)).astype(np.float32)
    y = (1.5 * x[:, :1] - 2.0 * x[:, 1:2] ** 2 + 0.5 * x[:, 2:] ** 3 + 0.3
         + rng.normal(0, 0.05, (n, 1))).astype(np.float32)
    return x, y


def main(steps: int = 600, log: bool = True) -> list[float]:
    x, y = (torch.tensor(a) for a in data())
    model = nn.Sequential(nn.Linear(3, 32), nn.Tanh(), nn.Linear(32, 1))
    numpy_init(torch, model)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    losses = []
    for step in range(steps):
        i = (step * 64) % 512
        xb, yb = x[i:i + 64], y[i:i + 64]
        loss = nn.functional.mse_loss(model(xb), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
        if log and step % 100 == 0:
            print(f"step {step:4d}  mse {loss.item():.4f}")
    with torch.no_grad():
        final = nn.functional.mse_loss(model(x), y).item()
    if log:
        print(f"final mse on all data: {final:.4f}")
    return losses


if __name__ == "__main__":
    main()
