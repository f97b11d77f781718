"""bare-lm's XOR network (2-4-1, sigmoid, 500 epochs, full batch of 4), with the arenas.

Parameters and optimizer state live in a permanent arena; everything one step creates (activations,
gradients of intermediates) is carved from a temporary arena that is reset in O(1) after the step,
so after the first step training allocates nothing.

    python examples/xor.py
    python examples/xor.py --compile           # the step captured once and replayed (lightgrad.compile)
    FRAMEWORK=torch python examples/xor.py     # same network on PyTorch (no arenas)

With ``--compile`` the step runs in the replay plan's own arena instead of the temporary one.
"""

from __future__ import annotations

import contextlib
import sys

import numpy as np

from common import framework, numpy_init

torch = framework()
nn = torch.nn


def main(epochs: int = 500, log: bool = True, compiled: bool = False) -> list[float]:
    arenas = hasattr(torch, "memory") and not compiled
    perm = torch.memory.Arena("1MB", name="permanent") if hasattr(torch, "memory") else contextlib.nullcontext()
    temp = torch.memory.Arena("1MB", name="temp") if arenas else None
    with perm:
        x = torch.tensor(np.array([[0, 0], [0, 1], [1, 0], [1, 1]], np.float32))
        y = torch.tensor(np.array([[0], [1], [1], [0]], np.float32))
        model = nn.Sequential(nn.Linear(2, 4), nn.Sigmoid(), nn.Linear(4, 1), nn.Sigmoid())
        numpy_init(torch, model, seed=3)
        opt = torch.optim.SGD(model.parameters(), lr=2.0, momentum=0.9)

    def step() -> torch.Tensor:
        loss = nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

    if compiled:
        step = torch.compile(step)
    losses = []
    for epoch in range(epochs):
        with temp if arenas else contextlib.nullcontext():
            losses.append(step().item())
        if arenas:
            temp.reset()
        if log and epoch % 100 == 0:
            print(f"epoch {epoch:3d}  loss {losses[-1]:.5f}")
    if log:
        with torch.no_grad():
            print("predictions:", [round(v, 3) for v in model(x).reshape(-1).tolist()])
        print(f"final loss {losses[-1]:.5f}")
        if hasattr(torch, "memory"):
            print(torch.memory.stats())
    return losses


if __name__ == "__main__":
    main(compiled="--compile" in sys.argv[1:])
