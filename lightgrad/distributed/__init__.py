"""Data-parallel training across processes over MPI, shaped like ``torch.distributed``.

Start N processes with MPI (``python -m lightgrad.distributed -n 2 train.py``, or the
command ``launch_command(2)`` gives), then in each::

    import lightgrad.distributed as dist
    dist.init_process_group("mpi")          # "gloo" is accepted and also runs over MPI
    t = lightgrad.ones(3) * dist.get_rank()
    dist.all_reduce(t, op=dist.ReduceOp.SUM)  # in place, on every rank

Collectives time out (``init_process_group(timeout=...)``, 300 s by default) with a
``DistBackendError`` naming the collective and rank, instead of hanging when another rank died.
MPI (mpi4py with an MPI library) is an optional extra: ``pip install 'lightgrad[distributed]'``;
this module imports without it and ``is_available()`` says whether it is there.
"""

from __future__ import annotations

from .collectives import (DEFAULT_TIMEOUT, DistBackendError, DistError, ReduceOp, Work, all_gather,
                          all_gather_into_tensor, all_gather_object, all_reduce, barrier, broadcast,
                          broadcast_object_list, destroy_process_group, get_backend, get_rank, get_world_size,
                          init_process_group, is_available, is_gloo_available, is_initialized, is_mpi_available,
                          is_nccl_available, reduce, reduce_scatter, reduce_scatter_tensor)
from .launch import launch_command


class group:  # lower case: PyTorch's name
    """``dist.group.WORLD``: the default process group, the only one here (passing it equals ``None``)."""

    WORLD = None


GroupMember = group

__all__ = ["DEFAULT_TIMEOUT", "DistBackendError", "DistError", "GroupMember", "ReduceOp", "Work", "all_gather",
           "all_gather_into_tensor", "all_gather_object", "all_reduce", "barrier", "broadcast",
           "broadcast_object_list", "destroy_process_group", "get_backend", "get_rank", "get_world_size", "group",
           "init_process_group", "is_available", "is_gloo_available", "is_initialized", "is_mpi_available",
           "is_nccl_available", "launch_command", "reduce", "reduce_scatter", "reduce_scatter_tensor"]
