"""Run under mpiexec (-n 2 or -n 3) with a checkpoint path: DistributedDataParallel end to end.

Every expected value comes from a plain (non-distributed) replica of the model trained or
differentiated on the data all ranks see together.
"""

import sys

import numpy as np

import lightgrad as lg
import lightgrad.distributed as dist
from lightgrad import nn
from lightgrad.nn.parallel import DistributedDataParallel as DDP

BATCH = 24  # divisible by 2 and 3


def make_net(seed: int) -> nn.Module:
    lg.manual_seed(seed)
    return nn.Sequential(nn.Linear(5, 16), nn.Tanh(), nn.Linear(16, 3)).double()


def flat(module: nn.Module) -> np.ndarray:
    return np.concatenate([p.detach().numpy().ravel() for p in module.parameters()])


def gathered(x: np.ndarray) -> list[np.ndarray]:
    mine = lg.tensor(x)
    outs = [lg.zeros(x.shape, dtype=mine.dtype) for _ in range(dist.get_world_size())]
    dist.all_gather(outs, mine)
    return [o.numpy() for o in outs]


def loss_of(model: nn.Module, x: np.ndarray, y: np.ndarray) -> lg.Tensor:
    return ((model(lg.tensor(x)) - lg.tensor(y)) ** 2).mean()


def grads_of(model: nn.Module, x: np.ndarray, y: np.ndarray) -> list[np.ndarray]:
    model.zero_grad()
    loss_of(model, x, y).backward()
    return [p.grad.numpy().copy() for p in model.parameters()]


def sgd(params: list, lr: float = 0.1) -> None:
    with lg.no_grad():
        for p in params:
            p -= lr * p.grad


def main() -> None:
    ckpt = sys.argv[1]
    dist.init_process_group("mpi", timeout=20)
    r, n = dist.get_rank(), dist.get_world_size()
    b = BATCH // n
    rng = np.random.default_rng(0)
    X, Y = rng.standard_normal((BATCH, 5)), rng.standard_normal((BATCH, 3))
    xs, ys = X[r * b:(r + 1) * b], Y[r * b:(r + 1) * b]

    # 1. construction copies rank 0's parameters to every rank
    model = DDP(make_net(100 + r))
    for other in gathered(flat(model)):
        np.testing.assert_array_equal(other, flat(make_net(100)))

    # 2. 20 steps on shards == 20 steps of one process on the whole batch (mean loss)
    ref = make_net(100)
    for _ in range(20):
        model.zero_grad()
        loss_of(model, xs, ys).backward()
        sgd(list(model.parameters()))
        ref.zero_grad()
        loss_of(ref, X, Y).backward()
        sgd(list(ref.parameters()))
        for other in gathered(flat(model)):
            np.testing.assert_array_equal(other, flat(model))  # identical on every rank, every step
    np.testing.assert_allclose(flat(model), flat(ref), rtol=0, atol=1e-6)
    assert np.abs(flat(model) - flat(make_net(100))).max() > 1e-3  # it did train

    # 2b. the same in float32 with lightgrad's SGD (flat gradient buffers) and momentum
    X32, Y32 = X.astype(np.float32), Y.astype(np.float32)
    m32, r32 = DDP(make_net(100 + r).float()), make_net(100).float()
    opts = [lg.optim.SGD(m.parameters(), lr=0.1, momentum=0.9) for m in (m32, r32)]
    for _ in range(20):
        for m, opt, x, y in ((m32, opts[0], X32[r * b:(r + 1) * b], Y32[r * b:(r + 1) * b]), (r32, opts[1], X32, Y32)):
            opt.zero_grad()
            loss_of(m, x, y).backward()
            opt.step()
        for other in gathered(flat(m32)):
            np.testing.assert_array_equal(other, flat(m32))
    np.testing.assert_allclose(flat(m32), flat(r32), rtol=0, atol=1e-6)

    # 2c. the same step captured and replayed (lightgrad.compile): the gradient all-reduce still runs on
    # every replay, so parameters match the eager run bit for bit
    def trained(compiled: bool) -> tuple[np.ndarray, dict]:
        m = DDP(make_net(100 + r).float())
        opt = lg.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
        x, y = lg.tensor(X32[r * b:(r + 1) * b]), lg.tensor(Y32[r * b:(r + 1) * b])

        def step() -> lg.Tensor:
            opt.zero_grad()
            loss = ((m(x) - y) ** 2).mean()
            loss.backward()
            opt.step()
            return loss
        run = lg.compile(step) if compiled else step
        for _ in range(10):
            run()
        return flat(m), run.stats() if compiled else {}
    eager, _ = trained(False)
    replayed, stats = trained(True)
    np.testing.assert_array_equal(replayed, eager)
    assert all(isinstance(v, dict) for v in stats.values()), stats  # replayed, not run eagerly

    # 3. no_sync accumulates locally; the next synced backward averages the accumulated sum
    ref.load_state_dict(model.module.state_dict())
    h = b // 2
    local_first = grads_of(ref, xs[:h], ys[:h])
    want = [np.zeros_like(g) for g in local_first]
    for k in range(n):
        xk, yk = X[k * b:(k + 1) * b], Y[k * b:(k + 1) * b]
        for w, g1, g2 in zip(want, grads_of(ref, xk[:h], yk[:h]), grads_of(ref, xk[h:], yk[h:])):
            w += (g1 + g2) / n
    model.zero_grad()
    with model.no_sync():
        loss_of(model, xs[:h], ys[:h]).backward()
    for p, g in zip(model.parameters(), local_first):
        np.testing.assert_allclose(p.grad.numpy(), g, rtol=1e-12, atol=1e-14)  # not reduced
    loss_of(model, xs[h:], ys[h:]).backward()
    for p, g in zip(model.parameters(), want):
        np.testing.assert_allclose(p.grad.numpy(), g, rtol=1e-10, atol=1e-14)

    # 4. one bucket per parameter, gradients as bucket views, both zero_grad styles
    small = DDP(make_net(7), bucket_cap_mb=1e-4, gradient_as_bucket_view=True)
    assert len(small._buckets) >= 3
    plain = make_net(7)
    want = [sum(g) / n for g in zip(*[grads_of(plain, X[k * b:(k + 1) * b], Y[k * b:(k + 1) * b])
                                      for k in range(n)])]
    for set_to_none in (True, False, True):
        small.zero_grad(set_to_none=set_to_none)
        loss_of(small, xs, ys).backward()
        for p, g in zip(small.parameters(), want):
            np.testing.assert_allclose(p.grad.numpy(), g, rtol=1e-10, atol=1e-14)

    # 5. a parameter used only on rank 0 gets rank 0's gradient / n everywhere; one never used stays None
    class Branchy(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.used, self.sometimes, self.never = nn.Linear(5, 3), nn.Linear(5, 3), nn.Linear(5, 3)

        def forward(self, x: lg.Tensor, extra: bool) -> lg.Tensor:
            out = self.used(x)
            return out + self.sometimes(x) if extra else out

    lg.manual_seed(3)
    branchy = Branchy().double()
    plain = Branchy().double()
    plain.load_state_dict(branchy.state_dict())
    model5 = DDP(branchy)
    model5(lg.tensor(xs), r == 0).sum().backward()
    plain(lg.tensor(X[:b]), True).sum().backward()
    assert branchy.never.weight.grad is None and branchy.never.bias.grad is None
    np.testing.assert_allclose(branchy.sometimes.weight.grad.numpy(), plain.sometimes.weight.grad.numpy() / n,
                               rtol=1e-12)

    # 6. buffers come from rank 0 at construction and at every forward that a synced backward follows
    class WithBuffer(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lin = nn.Linear(5, 3).double()
            self.register_buffer("stat", lg.full((3,), float(r), dtype=lg.float64))
            self.register_buffer("count", lg.full((2,), r, dtype=lg.int64))  # a second dtype

        def forward(self, x: lg.Tensor) -> lg.Tensor:
            return self.lin(x) + self.stat

    model6 = DDP(WithBuffer())
    np.testing.assert_array_equal(model6.module.stat.numpy(), np.zeros(3))
    np.testing.assert_array_equal(model6.module.count.numpy(), np.zeros(2))
    model6.module.stat.fill_(r + 10.0)
    model6.module.count.fill_(r + 5)
    model6(lg.tensor(xs))
    np.testing.assert_array_equal(model6.module.stat.numpy(), np.full(3, 10.0))
    np.testing.assert_array_equal(model6.module.count.numpy(), np.full(2, 5))
    model6.module.stat.fill_(r + 20.0)
    with lg.no_grad():  # no synced backward follows: PyTorch skips the broadcast too
        model6(lg.tensor(xs))
    with model6.no_sync():
        model6(lg.tensor(xs))
    np.testing.assert_array_equal(model6.module.stat.numpy(), np.full(3, r + 20.0))

    # 7. state_dict names, and a checkpoint saved on rank 0 and loaded on every rank
    keys = list(model.state_dict())
    assert keys == ["module." + k for k in model.module.state_dict()], keys
    if r == 0:
        lg.save(model.module.state_dict(), ckpt)
    dist.barrier()  # the file is complete before anyone reads it
    fresh = make_net(999)
    fresh.load_state_dict(lg.load(ckpt))
    np.testing.assert_array_equal(flat(fresh), flat(model))
    dist.destroy_process_group()
    print(f"OK rank {r} of {n}", flush=True)


if __name__ == "__main__":
    main()
