"""Arena workloads: the MLP, CNN and transformer training steps (forward, cross-entropy, backward,
SGD-momentum step) with lightgrad's arenas, and the same steps on the heap.

``*_arena``: parameters and optimizer state in a permanent arena, each step in a temporary arena
reset afterwards (PyTorch runs the plain step: it has no arenas). ``*_heap``: plain allocation in
both. Compare the lightgrad columns of the two rows for time and peak RSS.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

import numpy as np

from benchmarks.nn_models import mlp, transformer_block_lm
from benchmarks.nn_spatial_models import cnn


def _data(T: Any, name: str) -> tuple[Any, Any, Callable[[Any, Any, Any], Any]]:
    rng = np.random.default_rng(0)
    ce = T.nn.functional.cross_entropy
    if name == "mlp":
        return (T.tensor(rng.standard_normal((128, 784)).astype(np.float32)), T.tensor(rng.integers(0, 10, 128)),
                lambda m, x, y: ce(m(x), y))
    if name == "cnn":
        return (T.tensor(rng.standard_normal((64, 1, 28, 28)).astype(np.float32)), T.tensor(rng.integers(0, 10, 64)),
                lambda m, x, y: ce(m(x), y))
    data = rng.integers(0, 65, (16, 65))
    return (T.tensor(data[:, :-1]), T.tensor(data[:, 1:]),
            lambda m, x, y: ce(m(x).reshape(-1, 65), y.reshape(-1)))


BUILD = {"mlp": mlp, "cnn": cnn, "transformer": transformer_block_lm}


def _step(T: Any, name: str, use_arena: bool) -> Callable[[], None]:
    T.manual_seed(0)
    arenas = use_arena and hasattr(T, "memory")
    perm = T.memory.Arena("64MB", name="permanent") if arenas else contextlib.nullcontext()
    temp = T.memory.Arena("256MB", name="temp") if arenas else None
    with perm:
        model = BUILD[name](T)
        x, y, loss_of = _data(T, name)
        opt = T.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

    def step() -> None:
        with temp if arenas else contextlib.nullcontext():
            opt.zero_grad()
            loss_of(model, x, y).backward()
            opt.step()
        if arenas:
            temp.reset()
    return step


WORKLOADS: dict[str, Callable[[Any], Callable[[], None]]] = {}
for _name in BUILD:
    WORKLOADS[f"{_name}_sgdm_step_arena"] = lambda T, n=_name: _step(T, n, True)
    WORKLOADS[f"{_name}_sgdm_step_heap"] = lambda T, n=_name: _step(T, n, False)
