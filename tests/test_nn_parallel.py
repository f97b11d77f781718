"""nn.DataParallel and nn.SyncBatchNorm in one process, against PyTorch: outputs, gradients, state dicts."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import assert_close_by_dtype, assert_param_grads_match, numpy_of, state_to_lg, state_to_torch

import lightgrad as lg

torch = pytest.importorskip("torch")


def test_data_parallel_passthrough_and_state_dict() -> None:
    torch.manual_seed(0)
    tnet = torch.nn.DataParallel(torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2)))
    lnet = lg.nn.DataParallel(lg.nn.Sequential(lg.nn.Linear(3, 4), lg.nn.Tanh(), lg.nn.Linear(4, 2)))
    assert list(lnet.state_dict()) == list(tnet.state_dict())
    lnet.load_state_dict(state_to_lg(tnet.state_dict()))
    assert isinstance(lnet.module, lg.nn.Sequential) and lnet.device_ids == tnet.device_ids
    x = np.random.default_rng(0).standard_normal((5, 3)).astype(np.float32)
    lo, to = lnet(lg.tensor(x)), tnet(torch.tensor(x))
    assert_close_by_dtype(numpy_of(lo), numpy_of(to), "float32")
    lo.sum().backward()
    to.sum().backward()
    assert_param_grads_match(lnet, tnet, "float32")
    tnet2 = torch.nn.DataParallel(torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2)))
    tnet2.load_state_dict(state_to_torch(lnet.state_dict()))
    assert_close_by_dtype(numpy_of(tnet2(torch.tensor(x))), numpy_of(to), "float32")


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_sync_batchnorm_matches_torch(dtype: str) -> None:
    rng = np.random.default_rng(1)
    for shape in [(6, 3), (4, 3, 5), (2, 3, 4, 4), (2, 3, 2, 3, 2)]:
        tm, lm = torch.nn.SyncBatchNorm(3, momentum=0.3), lg.nn.SyncBatchNorm(3, momentum=0.3)
        tm, lm = tm.to(getattr(torch, dtype)), lm.to(getattr(lg, dtype))
        with torch.no_grad():
            tm.weight.uniform_(0.5, 1.5)
            tm.bias.uniform_(-1, 1)
        lm.load_state_dict(state_to_lg(tm.state_dict()))
        for train in (True, False):
            tm.train(train)
            lm.train(train)
            x = rng.standard_normal(shape).astype(dtype)
            tx, lx = torch.tensor(x, requires_grad=True), lg.tensor(x, requires_grad=True)
            to, lo = tm(tx), lm(lx)
            assert_close_by_dtype(numpy_of(lo), numpy_of(to), dtype, str(shape))
            g = rng.standard_normal(shape).astype(dtype)
            to.backward(torch.tensor(g))
            lo.backward(lg.tensor(g))
            assert_close_by_dtype(numpy_of(lx.grad), numpy_of(tx.grad), dtype)
            assert_param_grads_match(lm, tm, dtype)
            for k, v in tm.state_dict().items():
                assert_close_by_dtype(lm.state_dict()[k].numpy(), v.numpy(), dtype, k)


def test_sync_batchnorm_errors_and_convert() -> None:
    lm, tm = lg.nn.SyncBatchNorm(3), torch.nn.SyncBatchNorm(3)
    for m, mod in ((lm, lg), (tm, torch)):
        with pytest.raises(ValueError):
            m(mod.ones(3))
    assert lm.num_batches_tracked.item() == 0
    tnet = torch.nn.Sequential(torch.nn.Conv2d(2, 3, 1), torch.nn.BatchNorm2d(3),
                               torch.nn.Sequential(torch.nn.BatchNorm1d(3, affine=False)))
    lnet = lg.nn.Sequential(lg.nn.Conv2d(2, 3, 1), lg.nn.BatchNorm2d(3),
                            lg.nn.Sequential(lg.nn.BatchNorm1d(3, affine=False)))
    lnet[1].eval()
    tconv, lconv = torch.nn.SyncBatchNorm.convert_sync_batchnorm(tnet), lg.nn.SyncBatchNorm.convert_sync_batchnorm(lnet)
    assert [type(m).__name__ for m in lconv.modules()] == [type(m).__name__ for m in tconv.modules()]
    assert list(lconv.state_dict()) == list(tconv.state_dict())
    assert lconv[1].weight is lnet[1].weight and lconv[1].running_mean is lnet[1].running_mean
    assert not lconv[1].training and lconv[2][0].training and lconv[2][0].weight is None
    top = lg.nn.SyncBatchNorm.convert_sync_batchnorm(lg.nn.BatchNorm1d(4))
    assert type(top) is lg.nn.SyncBatchNorm and top.num_features == 4
