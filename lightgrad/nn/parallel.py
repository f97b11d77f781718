"""``DistributedDataParallel``: one model replica per process, gradients averaged over MPI.

    model = DistributedDataParallel(net)       # rank 0's parameters and buffers go to every rank
    loss_fn(model(x), y).backward()            # ...and the gradients are averaged here
    opt.step()                                 # every rank takes the same step

How the reduction is triggered without hooks: the engine has no gradient hooks, so ``forward``
runs the wrapped module with each parameter replaced, for that call only, by a *proxy*: an
identity node whose inputs are the parameter and one shared *token*, the output of a ``_Reduce``
node. Every use of a parameter therefore goes through its proxy, and the engine's topological
order reaches ``_Reduce`` only after every proxy has passed its parameter's gradient on; being
``runs_last``, its backward runs when the walk is over, every gradient in ``.grad`` (as PyTorch's
DDP queues its reduction as the engine's final callback) — that is, at the end of this replica's
``loss.backward()``. There it packs the gradients into flat buckets (``bucket_cap_mb`` each, per dtype), starts one
``Iallreduce`` per bucket, and divides by the world size. No extra call is needed, so PyTorch's
``loss.backward(); opt.step()`` works unchanged.

Overlap with backward: none. The engine's fixed topological order puts a node that only gathers
parameter gradients at the end of the pass, and MPI progresses non-blocking collectives only
inside MPI calls, which a NumPy backward pass does not make. The buckets' reductions do overlap
each other (all are started before the first is waited for), and unpacking bucket k overlaps the
transfer of bucket k+1. ``benchmarks/ddp_scaling.py`` measures the allreduce time per step.

During that forward call the module's ``_parameters`` hold the proxies (plain Tensors), so a
module must read its parameters as attributes (``self.weight``), as every lightgrad layer does;
one that kept its own reference to a Parameter object would bypass the reduction.

A parameter unused on some ranks contributes zeros there; one that is unused on every rank keeps
``grad=None`` (a used-count travels in each bucket), as in PyTorch. Reduction happens on
``.backward()``; ``autograd.grad`` through a DDP model is not reduced.
"""

from __future__ import annotations

import contextlib
import zlib
from collections.abc import Iterator
from typing import Any

from .. import backend as B
from .. import distributed as dist
from ..grad_mode import is_grad_enabled, no_grad
from ..function import Function
from ..tensor import Tensor
from .module import Module

__all__ = ["DataParallel", "DistributedDataParallel"]


class _Reduce(Function):
    """The node whose backward averages the gradients; its output is the proxies' shared token."""

    ddp: DistributedDataParallel

    def forward(self, dummy: B.ndarray) -> B.ndarray:
        return B.xp.zeros((), B.xp.float32)

    runs_last = True  # (gradients that add to existing ones land in .grad only at the walk's end)

    def backward(self, g: Any) -> tuple[Any, ...]:
        self.ddp._reduce_gradients()
        return (None,)


class _Proxy(Function):
    """Identity on a parameter; its second input ties it to the ``_Reduce`` node."""

    def forward(self, param: B.ndarray, token: B.ndarray) -> B.ndarray:
        return param

    def backward(self, g: Any) -> tuple[Any, ...]:
        return g, B.xp.zeros((), B.xp.float32)


class _Bucket:
    """Gradients of same-dtype parameters packed into one flat array, plus a used-count per parameter."""

    def __init__(self, params: list[Tensor], dtype: B.xp.dtype) -> None:
        self.params = params
        self.sizes = [p._data.size for p in params]
        self.offsets = B.cumsum([0] + self.sizes[:-1]).tolist()
        self.numel = sum(self.sizes)
        self.flat = B.xp.zeros(self.numel + len(params), dtype)
        self.views = [self.flat[o:o + n].reshape(p._data.shape) for p, o, n in zip(params, self.offsets, self.sizes)]
        self.used = self.flat[self.numel:]


class DistributedDataParallel(Module):
    """Data-parallel wrapper: ``model = DistributedDataParallel(net)`` after ``dist.init_process_group()``.

    >>> model = nn.parallel.DistributedDataParallel(nn.Linear(4, 2))  # doctest: +SKIP
    >>> model(x).sum().backward()  # every rank now holds the mean of all ranks' gradients

    ``state_dict`` keys are prefixed ``module.``; save ``model.module.state_dict()`` on rank 0 to
    get a checkpoint that loads into the bare model. ``gradient_as_bucket_view=True`` lets the
    engine write gradients straight into the buckets (``.grad`` are views of them). CPU only:
    ``device_ids``, ``output_device``, ``dim``, ``check_reduction`` and ``static_graph`` are
    accepted for PyTorch's API and change nothing; unused parameters are always handled, so
    ``find_unused_parameters`` is not needed.
    """

    def __init__(self, module: Module, device_ids: Any = None, output_device: Any = None, dim: int = 0,
                 broadcast_buffers: bool | None = None, init_sync: bool = True, process_group: Any = None,
                 bucket_cap_mb: float | None = None, find_unused_parameters: bool = False,
                 check_reduction: bool = False, gradient_as_bucket_view: bool = False,
                 static_graph: bool = False) -> None:
        super().__init__()
        if not isinstance(module, Module):
            raise TypeError(f"DistributedDataParallel wraps an nn.Module, got {type(module).__name__}")
        if device_ids not in (None, [], ()) and list(device_ids) not in (["cpu"], [-1]):
            raise ValueError(f"DistributedDataParallel device_ids must be None for CPU modules, got {device_ids}")
        cap = 25.0 if bucket_cap_mb is None else float(bucket_cap_mb)
        if not cap > 0:
            raise ValueError(f"bucket_cap_mb must be positive, got {bucket_cap_mb}")
        self._group = dist.collectives._default(process_group)
        self.module = module
        self.broadcast_buffers = True if broadcast_buffers is None else broadcast_buffers
        self.gradient_as_bucket_view = gradient_as_bucket_view
        self.find_unused_parameters = find_unused_parameters  # always handled: kept for PyTorch's API
        self.bucket_bytes_cap = int(cap * 1024 * 1024)
        self.require_backward_grad_sync = True
        self._params: list[Tensor] = [p for p in module.parameters() if p.requires_grad]
        self._check_same_model()
        if init_sync:
            self._sync_module_states()
        self._buckets = self._make_buckets()
        self._dummy = Tensor._make(B.xp.zeros((), B.xp.float32))
        self._dummy.requires_grad = True
        self._dummy._mem = None  # heap storage, even if the wrapper is made inside an arena

    # ---- setup -----------------------------------------------------------------------------
    def _check_same_model(self) -> None:
        """Every rank must wrap the same architecture, or the collectives below would mismatch."""
        g = self._group
        tensors = list(self.module.parameters()) + list(self.module.buffers())
        desc = ";".join(f"{tuple(t.shape)}{t._data.dtype}" for t in tensors)
        mine = B.array([len(tensors), sum(t._data.size for t in tensors), zlib.crc32(desc.encode())], B.xp.int64)
        every = B.xp.empty((g.size, 3), B.xp.int64)
        g.check()
        g.wait(g.comm.Iallgather(mine, every), "DistributedDataParallel's model check (allgather)")
        for r in range(g.size):
            if not B.xp.array_equal(every[r], mine):
                raise RuntimeError(
                    f"DistributedDataParallel: rank {r} wraps a different model than rank {g.rank}: "
                    f"{every[r][0]} parameters and buffers with {every[r][1]} elements vs {mine[0]} with "
                    f"{mine[1]} elements (or their shapes/dtypes differ)")

    def _sync_module_states(self) -> None:
        """Copy rank 0's parameters and buffers to every rank (all transfers in flight together)."""
        self._broadcast(list(self.module.parameters()) + list(self.module.buffers()), "parameters and buffers")

    def _broadcast(self, tensors: list[Tensor], what: str) -> None:
        """Copy rank 0's values of ``tensors`` to every rank: one Ibcast per dtype, all in flight together."""
        g = self._group
        if g.size == 1 or not tensors:
            return
        g.check()
        by_dtype: dict[B.xp.dtype, list[Tensor]] = {}
        for t in tensors:
            by_dtype.setdefault(t._data.dtype, []).append(t)
        pending = []
        for dtype, ts in by_dtype.items():
            flat = B.xp.empty(sum(t._data.size for t in ts), dtype)
            if g.rank == 0:
                B.concatenate([t._data.reshape(-1) for t in ts], out=flat)
            pending.append((ts, flat, g.comm.Ibcast(dist.collectives._buffer(flat), root=0)))
        for ts, flat, req in pending:
            g.wait(req, f"DistributedDataParallel's broadcast of {what} from rank 0")
            if g.rank == 0:
                continue
            off = 0
            for t in ts:
                n = t._data.size
                src = flat[off:off + n].reshape(t._data.shape)
                if t._data.flags.writeable:
                    t._data[...] = src  # in place: an optimizer's flat views keep pointing at it
                else:
                    t._data = src.copy()
                t._version[0] += 1
                off += n

    def _make_buckets(self) -> list[_Bucket]:
        # reverse order, as PyTorch: the last layers' gradients are complete first
        buckets: list[_Bucket] = []
        by_dtype: dict[B.xp.dtype, list[Tensor]] = {}
        for p in reversed(self._params):
            by_dtype.setdefault(p._data.dtype, []).append(p)
        for dtype, params in by_dtype.items():
            cur: list[Tensor] = []
            nbytes = 0
            for p in params:
                if cur and nbytes + p._data.nbytes > self.bucket_bytes_cap:
                    buckets.append(_Bucket(cur, dtype))
                    cur, nbytes = [], 0
                cur.append(p)
                nbytes += p._data.nbytes
            if cur:
                buckets.append(_Bucket(cur, dtype))
        if self.gradient_as_bucket_view:
            for b in buckets:
                for p, v in zip(b.params, b.views):
                    p._grad_buf = v  # the engine writes a fresh gradient straight into the bucket
        return buckets

    # ---- forward and the gradient reduction --------------------------------------------------
    def forward(self, *inputs: Any, **kwargs: Any) -> Any:
        """Run the wrapped module; in a synced backward its parameters' gradients are averaged over the processes."""
        if self.broadcast_buffers and self.require_backward_grad_sync and is_grad_enabled():
            with no_grad():  # as PyTorch: whenever this forward will be followed by a synced backward
                self._broadcast([b for b in self.module.buffers()], "buffers")
        if not (self.require_backward_grad_sync and is_grad_enabled() and self._params):
            return self.module(*inputs, **kwargs)
        node_token = _Reduce.apply(self._dummy)
        node_token._grad_fn.ddp = self
        proxies = {id(p): _Proxy.apply(p, node_token) for p in self._params}
        with self._swapped(proxies):
            return self.module(*inputs, **kwargs)

    @contextlib.contextmanager
    def _swapped(self, proxies: dict[int, Tensor]) -> Iterator[None]:
        """Let the module see each parameter's proxy during one forward call."""
        saved: list[tuple[dict[str, Any], str, Any]] = []
        for m in self.module.modules():
            reg: dict[str, Any] = m._parameters  # holds a plain Tensor (the proxy) for one call
            for name, p in reg.items():
                if p is not None and id(p) in proxies:
                    saved.append((reg, name, p))
                    reg[name] = proxies[id(p)]
        try:
            yield
        finally:
            for params, name, p in saved:
                params[name] = p

    def _reduce_gradients(self) -> None:
        """Average every parameter's ``.grad`` over the ranks, one Iallreduce per bucket."""
        g = self._group
        g.check()
        if g.size == 1:
            return  # the mean of one gradient is itself
        from mpi4py import MPI
        reqs = []
        for b in self._buckets:
            for i, p in enumerate(b.params):
                gr = p.grad
                if gr is None:
                    b.views[i][...] = 0
                    b.used[i] = 0
                else:
                    if gr._data is not b.views[i]:
                        B.copyto(b.views[i], gr._data)
                    b.used[i] = 1
            reqs.append(g.comm.Iallreduce(MPI.IN_PLACE, b.flat, op=MPI.SUM))
        for k, (b, req) in enumerate(zip(self._buckets, reqs)):
            g.wait(req, f"DistributedDataParallel's gradient all_reduce (bucket {k} of {len(reqs)}, "
                        f"{b.flat.nbytes} bytes)")
            for i, p in enumerate(b.params):
                if b.used[i] == 0:
                    continue  # unused on every rank: grad stays None, as in PyTorch
                v, gr = b.views[i], p.grad
                if gr is not None and (gr._data is v or (gr._data.flags.writeable and gr._data.shape == v.shape)):
                    B.xp.divide(v, g.size, out=gr._data)  # the mean, written where the gradient lives
                    continue
                # unused here but used elsewhere (or a read-only gradient): a new gradient, placed
                # as the engine would place it, in an optimizer's flat slot when there is one
                buf = p._grad_buf
                if buf is None or buf.shape != v.shape:
                    buf = B.xp.empty_like(v)
                B.xp.divide(v, g.size, out=buf)
                p.grad = Tensor._make(buf)
                p.grad._mem = p._mem  # it lives where its parameter lives, not in a step's arena

    @contextlib.contextmanager
    def no_sync(self) -> Iterator[None]:
        """Accumulate gradients locally; the first backward after the block averages them all.

        >>> with model.no_sync():  # doctest: +SKIP
        ...     model(x1).sum().backward()
        >>> model(x2).sum().backward()  # reduces the sum of both micro-batches' gradients
        """
        old = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = old


class DataParallel(Module):
    """``nn.DataParallel`` on a machine with one CPU device: a pass-through wrapper, as PyTorch's
    without CUDA. The wrapped model is ``.module`` and its state-dict keys get the ``module.`` prefix.

    >>> DataParallel(nn.Linear(2, 1)).state_dict().keys()
    odict_keys(['module.weight', 'module.bias'])
    """

    def __init__(self, module: Module, device_ids: Any = None, output_device: Any = None, dim: int = 0) -> None:
        super().__init__()
        self.module = module
        self.device_ids: list[Any] = []  # as PyTorch when no accelerator is available
        self.dim = dim
        self.output_device = output_device

    def forward(self, *inputs: Any, **kwargs: Any) -> Any:
        """Run the wrapped module on the inputs (one device: nothing to scatter)."""
        return self.module(*inputs, **kwargs)
