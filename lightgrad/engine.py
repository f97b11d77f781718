"""The backward engine: an iterative topological walk over graph nodes."""

from __future__ import annotations

from typing import Any

import numpy as np

from . import backend as B
from .autograd import _enabled
from .function import Function, unbroadcast
from .tensor import Tensor

_FREED = ("Trying to backward through the graph a second time (or directly access saved tensors after "
          "they have already been freed). Saved intermediate values of the graph are freed when you call "
          ".backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the "
          "graph a second time or if you need to access saved tensors after calling backward.")


def _topo(roots: list[Function]) -> list[Function]:
    """Nodes reachable from ``roots``, each after every node that feeds it a gradient."""
    order: list[Function] = []
    seen: set[int] = set()
    stack: list[tuple[Function, bool]] = [(r, False) for r in roots]
    while stack:
        fn, done = stack.pop()
        if done:
            order.append(fn)
            continue
        if id(fn) in seen:
            continue
        seen.add(id(fn))
        stack.append((fn, True))
        for p in fn.parents:
            if isinstance(p, Tensor) and p._grad_fn is not None and id(p._grad_fn) not in seen:
                stack.append((p._grad_fn, False))
    order.reverse()
    return order


def _check_saved(node: Function) -> None:
    if node.saved is None:
        raise RuntimeError(_FREED)
    saved = node.saved
    for i, p in enumerate(node.parents):
        if isinstance(p, Tensor) and p._version[0] != node.vers[i] and any(s is p._data for s in saved):
            raise RuntimeError(
                "one of the variables needed for gradient computation has been modified by an inplace "
                f"operation: [{p.dtype.name} {list(p.shape)}], which is input {i} of {node.name()}, is at "
                f"version {p._version[0]}; expected version {node.vers[i]} instead.")
    if node.saves_out and node.out_version[0] != 0:
        raise RuntimeError("one of the variables needed for gradient computation has been modified by an "
                           f"inplace operation: the output of {node.name()} is at version "
                           f"{node.out_version[0]}; expected version 0 instead.")


def _graph_backward(node: Function, g: Tensor) -> tuple[Any, ...]:
    """Run a node's backward on Tensors so that it records a graph (create_graph=True)."""
    saved = node.saved
    if not saved:
        return node.backward(g)
    by_id = {id(p._data): p for p in node.parents if isinstance(p, Tensor)}
    mapped = [by_id.get(id(s), s) for s in saved]
    if node.saves_out:
        out = Tensor._make(saved[-1])
        out.requires_grad, out._grad_fn = True, node
        mapped[-1] = out
    node.saved = tuple(mapped)
    try:
        return node.backward(g)
    finally:
        node.saved = saved


def run_backward(outputs: list[Tensor], grad_outputs: list[Any], retain_graph: bool = False,
                 create_graph: bool = False, inputs: list[Tensor] | None = None,
                 accumulate_only: Any = None) -> list[Any]:
    """Backpropagate from ``outputs``; accumulate into leaves' ``.grad``, or, with ``inputs``,
    return the gradients of those tensors instead."""
    grads: dict[int, Any] = {}
    roots: list[Function] = []
    capture: dict[int, int] = {id(t): i for i, t in enumerate(inputs)} if inputs is not None else {}
    results: list[Any] = [None] * (len(inputs) if inputs is not None else 0)
    leaf_ok = None
    if accumulate_only is not None:
        leaf_ok = {id(t) for t in ([accumulate_only] if isinstance(accumulate_only, Tensor) else accumulate_only)}
    nodes_by_id: dict[int, Function] = {}
    # a non-leaf input of autograd.grad is reached through its grad_fn
    capture_fn = {id(t._grad_fn): i for i, t in enumerate(inputs or ()) if t._grad_fn is not None}

    def deliver(t: Tensor, g: Any) -> None:
        fn = t._grad_fn
        if fn is None:
            k = capture.get(id(t))
            if k is not None:
                results[k] = g if results[k] is None else results[k] + g
            elif inputs is None and (leaf_ok is None or id(t) in leaf_ok):
                _accumulate(t, g, create_graph)
            return
        key = id(fn)
        if key in grads:
            grads[key] = grads[key] + g if create_graph else B.add(grads[key], g)
        else:
            grads[key] = g
            nodes_by_id[key] = fn

    for t, g in zip(outputs, grad_outputs):
        if not t.requires_grad:
            raise RuntimeError("element 0 of tensors does not require grad and does not have a grad_fn")
        if g is None:
            if t.numel() != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            garr: Any = np.ones(t._data.shape, t._data.dtype)
        else:
            garr = g._data if isinstance(g, Tensor) else np.asarray(g, t._data.dtype)
            if garr.shape != t._data.shape:
                raise RuntimeError(f"Mismatch in shape: grad_output[0] has a shape of {tuple(garr.shape)} and "
                                   f"output[0] has a shape of {tuple(t.shape)}.")
        if create_graph:
            garr = g if isinstance(g, Tensor) else Tensor._make(garr)
        if t._grad_fn is not None:
            roots.append(t._grad_fn)
        deliver(t, garr)

    token = _enabled.set(create_graph)
    try:
        for node in _topo(roots):
            g = grads.pop(id(node), None)
            if g is None:
                continue
            _check_saved(node)
            if node.retained is not None:
                _accumulate(node.retained, g, create_graph)
            k = capture_fn.get(id(node))
            if k is not None:
                results[k] = g
            pgrads = _graph_backward(node, g) if create_graph else node.backward(g)
            for p, pg in zip(node.parents, pgrads):
                if pg is None or not isinstance(p, Tensor) or not p.requires_grad:
                    continue
                if pg.shape != p._data.shape:
                    pg = unbroadcast(pg, p._data.shape)
                deliver(p, pg)
            if not retain_graph and node.saved:
                node.saved = None
    finally:
        _enabled.reset(token)
    if create_graph:
        return [r if r is None or isinstance(r, Tensor) else Tensor._make(r) for r in results]
    return [None if r is None else Tensor._make(np.array(r, copy=True) if not r.flags.writeable or r.base is not None else r)
            for r in results]


def _accumulate(t: Tensor, g: Any, create_graph: bool) -> None:
    if create_graph:
        g = g if isinstance(g, Tensor) else Tensor._make(g)
        t.grad = g if t.grad is None else t.grad + g
        return
    if g.dtype != t._data.dtype:
        g = g.astype(t._data.dtype)
    if t.grad is None:
        buf = t.__dict__.get("_grad_buf") if hasattr(t, "__dict__") else None
        if buf is not None and buf.shape == g.shape:
            # an optimizer's flat gradient buffer: the gradient lands in its slice, no allocation
            B.copyto(buf, g)
            t.grad = Tensor._make(buf)
        else:
            t.grad = Tensor._make(B.copy(g))  # a copy: g may be shared with other nodes or a view
    else:
        gd = t.grad._data
        if gd.flags.writeable and gd.shape == g.shape:
            B.iadd(gd, g)
        else:
            t.grad = Tensor._make(B.add(gd, g))
