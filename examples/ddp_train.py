"""Data-parallel training with DistributedDataParallel: each process trains on its share of the data.

Launch 2 processes (from the repository root, after ``pip install -e '.[distributed]'``):

    .venv/bin/python -m lightgrad.distributed -n 2 examples/ddp_train.py

which runs ``mpiexec --oversubscribe -n 2 .venv/bin/python examples/ddp_train.py`` (plus
``--allow-run-as-root`` when run as root). Only the imports are lightgrad's: with ``torch`` in
their place the script runs under ``torchrun --nproc-per-node 2``.

A small MLP learns to classify points of three interleaved spirals. Every rank builds the same
data set, ``DistributedSampler`` gives each rank a disjoint share of each epoch, DDP averages the
gradients so all ranks take identical steps, and rank 0 alone prints and saves the checkpoint.
"""

import argparse
import math

import lightgrad as torch
import lightgrad.distributed as dist
from lightgrad import nn
from lightgrad.nn.parallel import DistributedDataParallel as DDP
from lightgrad.utils.data import DataLoader, DistributedSampler, TensorDataset


def spirals(n: int, classes: int = 3) -> TensorDataset:
    """``n`` 2-D points on ``classes`` noisy spiral arms (the same on every rank: fixed seed)."""
    g = torch.Generator().manual_seed(0)
    label = torch.randint(0, classes, (n,), generator=g)
    r = torch.rand(n, generator=g)
    angle = label.float() * (2 * math.pi / classes) + r * 3.0 + torch.randn(n, generator=g) * 0.15
    x = torch.stack([r * angle.cos(), r * angle.sin()], dim=1)
    return TensorDataset(x, label)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--epochs", type=int, default=20)
    p.add_argument("--samples", type=int, default=3000)
    p.add_argument("--batch-size", type=int, default=64, help="per rank")
    p.add_argument("--lr", type=float, default=0.1)
    p.add_argument("--save", default="", help="checkpoint path, written by rank 0")
    args = p.parse_args()

    dist.init_process_group("gloo")  # served by MPI in lightgrad
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(rank)  # different on purpose: DDP starts every rank from rank 0's weights

    data = spirals(args.samples)
    sampler = DistributedSampler(data, num_replicas=world, rank=rank, shuffle=True, seed=0)
    loader = DataLoader(data, batch_size=args.batch_size, sampler=sampler)
    model = DDP(nn.Sequential(nn.Linear(2, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 3)))
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()

    for epoch in range(1, args.epochs + 1):
        sampler.set_epoch(epoch)  # a new shuffle each epoch, the same on every rank
        model.train()
        total = torch.zeros(2, dtype=torch.float64)  # summed loss, batches
        for x, y in loader:
            opt.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()  # gradients are averaged across ranks here
            opt.step()
            total += torch.tensor([loss.item(), 1.0], dtype=torch.float64)
        dist.all_reduce(total)  # every rank's losses, for the report
        model.eval()
        with torch.no_grad():
            x, y = data.tensors
            acc = (model(x).argmax(1) == y).float().mean().item()
        if rank == 0:
            print(f"rank 0: epoch {epoch} loss {(total[0] / total[1]).item():.4f} accuracy {acc:.3f}", flush=True)

    if args.save and rank == 0:
        torch.save(model.module.state_dict(), args.save)  # unprefixed keys: loads into the bare model
    dist.barrier()  # the checkpoint is on disk before any rank goes on to read it
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
