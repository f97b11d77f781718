"""A small convolutional autoencoder compresses 8x8 digit-like images to 8 numbers and back.

The images are generated (blurred random strokes), so the example needs no data set.

    python examples/autoencoder.py
    FRAMEWORK=torch python examples/autoencoder.py
"""

from __future__ import annotations

import numpy as np

from common import framework, numpy_init

torch = framework()
nn = torch.nn


def images(n: int = 256, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    img = np.zeros((n, 1, 8, 8), np.float32)
    for k in range(n):
        r, c = rng.integers(1, 7, 2)
        if rng.random() < 0.5:
            img[k, 0, r, 1:7] = 1.0  # a horizontal stroke
        else:
            img[k, 0, 1:7, c] = 1.0  # a vertical stroke
        img[k, 0] += 0.5 * np.roll(img[k, 0], 1, axis=int(rng.integers(0, 2)))
    return np.clip(img, 0, 1)


def model() -> nn.Module:
    return nn.Sequential(
        nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),      # (B, 8, 4, 4)
        nn.Flatten(), nn.Linear(128, 8),                                  # (B, 8): the code
        nn.Linear(8, 128), nn.ReLU(), nn.Unflatten(1, (8, 4, 4)),         # (B, 8, 4, 4)
        nn.ConvTranspose2d(8, 1, 2, stride=2), nn.Sigmoid(),             # (B, 1, 8, 8)
    )


def main(steps: int = 300, log: bool = True) -> list[float]:
    x = torch.tensor(images())
    net = model()
    numpy_init(torch, net)
    opt = torch.optim.Adam(net.parameters(), lr=3e-3)
    losses = []
    for step in range(steps):
        batch = x[(step * 32) % 256:(step * 32) % 256 + 32]
        loss = nn.functional.binary_cross_entropy(net(batch), batch)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
        if log and step % 50 == 0:
            print(f"step {step:3d}  reconstruction bce {loss.item():.4f}")
    if log:
        print(f"final bce {losses[-1]:.4f}")
    return losses


if __name__ == "__main__":
    main()
