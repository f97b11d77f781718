"""What every example shares: pick the framework, and start both frameworks from the same weights.

``FRAMEWORK=torch python examples/X.py`` runs an example on PyTorch; by default it runs on
lightgrad. The examples import the framework as ``torch``, so the code is the same for both.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np


def framework() -> Any:
    """The module named by $FRAMEWORK: ``lightgrad`` (default) or ``torch``."""
    name = os.environ.get("FRAMEWORK", "lightgrad")
    if name not in ("lightgrad", "torch"):
        raise ValueError(f"FRAMEWORK must be 'lightgrad' or 'torch', got {name!r}")
    return __import__(name)


def numpy_init(torch: Any, model: Any, seed: int = 0) -> None:
    """Overwrite every parameter with values drawn from NumPy (PyTorch's default scale: uniform
    within 1/sqrt(fan_in)), so lightgrad and PyTorch start from identical weights."""
    rng = np.random.default_rng(seed)
    state = {}
    for name, value in model.state_dict().items():
        shape = tuple(value.shape)
        if name.endswith(("running_mean", "running_var", "num_batches_tracked")):
            state[name] = value  # the same deterministic defaults in both frameworks
        elif name.endswith("weight") and len(shape) == 1:
            state[name] = torch.ones(shape)  # a norm layer's scale
        else:
            fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else shape[0]
            bound = 1.0 / np.sqrt(max(fan_in, 1))
            state[name] = torch.tensor(rng.uniform(-bound, bound, shape).astype(np.float32))
    model.load_state_dict(state)
