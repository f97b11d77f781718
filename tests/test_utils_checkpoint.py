"""utils.checkpoint: recomputation in backward gives the same gradients (dropout included) with less
memory held, as PyTorch's."""

from __future__ import annotations

import tracemalloc
import warnings
from typing import Any

import pytest

import lightgrad as lg
from lightgrad.utils.checkpoint import checkpoint, checkpoint_sequential

torch = pytest.importorskip("torch")


def _mlp(lib: Any, depth: int = 4, width: int = 8, p: float = 0.0) -> Any:
    torch.manual_seed(0)
    src = torch.nn.Sequential(*[m for _ in range(depth) for m in (torch.nn.Linear(width, width), torch.nn.Tanh())])
    net = lib.nn.Sequential(*[m for _ in range(depth) for m in (lib.nn.Linear(width, width), lib.nn.Dropout(p),
                                                                  lib.nn.Tanh())])
    state = {k: v.detach().numpy() for k, v in src.state_dict().items()}
    for i in range(depth):
        net[3 * i].weight.data = lib.tensor(state[f"{2 * i}.weight"])
        net[3 * i].bias.data = lib.tensor(state[f"{2 * i}.bias"])
    return net


@pytest.mark.parametrize("reentrant", [False, True])
def test_checkpointed_gradients_equal_plain_ones_and_pytorchs(reentrant: bool) -> None:
    grads = []
    for lib in (lg, torch):
        net = _mlp(lib)
        x = lib.tensor([[0.1 * i - 0.3 * j for i in range(8)] for j in range(3)], requires_grad=True)
        y = lib.utils.checkpoint.checkpoint_sequential(net, 2, x, use_reentrant=reentrant)
        y.sum().backward()
        got = [net[0].weight.grad.clone(), x.grad.clone()]
        net.zero_grad()
        x.grad = None
        net(x).sum().backward()
        for a, b in zip(got, [net[0].weight.grad, x.grad]):
            assert (a - b).abs().max().item() < 1e-6
        grads.append(got[0].detach().numpy())
    assert abs(grads[0] - grads[1]).max() < 1e-5


def test_parameters_get_gradients_when_the_input_needs_none() -> None:
    lin = lg.nn.Linear(3, 2)
    y = checkpoint(lin, lg.ones(4, 3), use_reentrant=False)
    y.sum().backward()
    assert lin.weight.grad is not None and lin.weight.grad.abs().sum().item() > 0
    lin.zero_grad()
    with pytest.warns(UserWarning, match="None of the inputs have requires_grad=True"):
        y = checkpoint(lin, lg.ones(4, 3), use_reentrant=True)
    assert not y.requires_grad  # PyTorch's reentrant variant: no gradient reaches the parameters


def test_recomputation_draws_the_same_dropout_masks() -> None:
    net = _mlp(lg, p=0.5)
    x = lg.ones(5, 8, requires_grad=True)
    lg.manual_seed(3)
    checkpoint_sequential(net, 2, x, use_reentrant=False).sum().backward()
    a = net[0].weight.grad.clone()
    net.zero_grad()
    lg.manual_seed(3)
    net(x).sum().backward()
    assert (a - net[0].weight.grad).abs().max().item() == 0.0


def test_missing_use_reentrant_warns_as_pytorch() -> None:
    lin = lg.nn.Linear(2, 2)
    with pytest.warns(UserWarning, match="the use_reentrant parameter should be passed explicitly"):
        checkpoint(lin, lg.ones(1, 2, requires_grad=True))


def _peak_mib(checkpointed: bool) -> float:
    lg.manual_seed(0)
    net = lg.nn.Sequential(*[m for _ in range(16) for m in (lg.nn.Linear(256, 256), lg.nn.ReLU())])
    x = lg.randn(512, 256)
    tracemalloc.start()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            y = checkpoint_sequential(net, 4, x, use_reentrant=False) if checkpointed else net(x)
        y.sum().backward()
        return tracemalloc.get_traced_memory()[1] / 2 ** 20
    finally:
        tracemalloc.stop()


def test_checkpointing_a_deep_mlp_lowers_peak_memory() -> None:
    plain, checkpointed = _peak_mib(False), _peak_mib(True)
    # 32 activations of 0.5 MiB are kept without checkpoints; with 4 segments, about 3 boundaries plus
    # one segment at a time
    assert checkpointed < 0.8 * plain, (plain, checkpointed)
