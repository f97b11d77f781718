"""optim.swa_utils against PyTorch: AveragedModel (SWA and EMA), SWALR's schedule, update_bn."""

from __future__ import annotations

from typing import Any

import pytest

import lightgrad as lg

torch = pytest.importorskip("torch")


def _run(lib: Any, strategy: str) -> Any:
    torch.manual_seed(0)
    src = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4), torch.nn.Linear(4, 1))
    net = lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.BatchNorm1d(4), lib.nn.Linear(4, 1))
    net.load_state_dict({k: lib.tensor(v.detach().numpy()) for k, v in src.state_dict().items()})
    swa_utils = lib.optim.swa_utils
    opt = lib.optim.SGD(net.parameters(), lr=0.5)
    swa = swa_utils.AveragedModel(net)
    ema = swa_utils.AveragedModel(net, multi_avg_fn=swa_utils.get_ema_multi_avg_fn(0.9))
    ema2 = swa_utils.AveragedModel(net, avg_fn=swa_utils.get_ema_avg_fn(0.8), use_buffers=True)
    sched = swa_utils.SWALR(opt, swa_lr=0.05, anneal_epochs=3, anneal_strategy=strategy)
    x = lib.tensor([[1.0, 2.0, 3.0], [0.0, -1.0, 2.0], [1.0, 1.0, 1.0], [2.0, 0.0, -1.0]])
    lrs = []
    for _ in range(5):
        opt.zero_grad()
        net(x).pow(2).mean().backward()
        opt.step()
        for m in (swa, ema, ema2):
            m.update_parameters(net)
        sched.step()
        lrs.append(round(opt.param_groups[0]["lr"], 10))
    swa_utils.update_bn([x, x * 2], swa)

    def r(t: Any) -> Any:
        return [round(v, 5) for v in t.detach().reshape(-1).tolist()]
    return [lrs, r(swa.module[0].weight), r(ema.module[2].weight), r(ema2.module[1].running_var),
            r(swa.module[1].running_mean), int(swa.n_averaged)]


@pytest.mark.parametrize("strategy", ["cos", "linear"])
def test_swa_utils_match_pytorch(strategy: str) -> None:
    assert _run(lg, strategy) == _run(torch, strategy)


def test_swalr_argument_errors() -> None:
    opt = lg.optim.SGD([lg.nn.Parameter(lg.ones(1))], lr=0.1)
    with pytest.raises(ValueError, match="anneal_strategy must by one of 'cos' or 'linear'"):
        lg.optim.swa_utils.SWALR(opt, 0.05, anneal_strategy="exp")
    with pytest.raises(ValueError, match="anneal_epochs must be equal or greater than 0"):
        lg.optim.swa_utils.SWALR(opt, 0.05, anneal_epochs=-1)
