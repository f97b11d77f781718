"""``torch.func``: function transforms (grad, vjp, jvp, jacrev, jacfwd, hessian, vmap) and
``functional_call``, a module as a function of its parameters and buffers.

>>> lightgrad.func.grad(lambda x: (x ** 2).sum())(lightgrad.tensor([1.0, 2.0]))
tensor([2., 4.])
>>> lightgrad.func.vmap(lambda x: x.sum())(lightgrad.ones(3, 2))
tensor([2., 2., 2.])

The transforms are built on reverse mode, not on functorch's levels and batching rules:

- ``grad``/``vjp``/``jacrev`` run ``func`` once on copies of the differentiated inputs that require
  grad (detached copies; a clone, so the graph continues, where the caller's tensor already requires
  grad) and call ``autograd.grad``; the caller's tensors and their ``.grad`` are untouched. A result
  keeps a graph only when it reaches a tensor from outside the transform that requires grad (the
  caller's input, a closed-over parameter, an enclosing transform's input) with grad mode on, which
  is what PyTorch does in the common cases; so ``grad(grad(f))`` and ``jacfwd(jacrev(f))`` nest.
- ``jvp`` and ``jacfwd`` are computed exactly by reverse mode: ``jvp`` with the double-vjp trick
  (J t = d/du <J^T u, t>), ``jacfwd`` as ``jacrev`` (same values, one backward per output element).
- ``vmap`` calls ``func`` once per slice along ``in_dims`` and stacks the results along
  ``out_dims``; ``chunk_size`` only checks its argument. ``randomness='error'`` raises when ``func``
  draws from the default generator, ``'same'`` replays one generator state for every slice.
  An empty batch (size 0) is refused with ValueError (PyTorch runs it on its batched tensors), and
  ``out_dims=None`` accepts an output that is equal across slices rather than one that is unbatched.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from . import autograd, random
from .grad_mode import enable_grad, is_grad_enabled
from .nn.module import Module
from .nn.utils.stateless import _functional_call
from .tensor import Tensor, eye, stack, zeros, zeros_like

__all__ = ["functional_call", "grad", "grad_and_value", "hessian", "jacfwd", "jacrev", "jvp", "vjp", "vmap"]


def functional_call(module: Module, parameter_and_buffer_dicts: Mapping[str, Tensor] | Sequence[Mapping[str, Tensor]],
                    args: Any = None, kwargs: dict[str, Any] | None = None, *, tie_weights: bool = True,
                    strict: bool = False) -> Any:
    """``module(*args, **kwargs)`` with the given tensors (one dict, or several with distinct keys) in
    place of the module's parameters and buffers; gradients flow to those tensors.

    >>> functional_call(nn.Linear(2, 1), {}, lightgrad.ones(1, 2)).shape
    lightgrad.Size([1, 1])
    """
    if isinstance(parameter_and_buffer_dicts, Mapping):
        merged = dict(parameter_and_buffer_dicts)
    elif isinstance(parameter_and_buffer_dicts, Sequence):
        if not all(isinstance(d, Mapping) for d in parameter_and_buffer_dicts):
            raise ValueError("Expected all elements of parameter_and_buffer_dicts to be dictionaries")
        seen: dict[str, int] = {}
        for d in parameter_and_buffer_dicts:
            for k in d:
                seen[k] = seen.get(k, 0) + 1
        repeated = [k for k, n in seen.items() if n > 1]
        if repeated:
            raise ValueError(f"{repeated} appeared in multiple dictionaries; behavior of functional call is ambiguous")
        merged = {k: v for d in parameter_and_buffer_dicts for k, v in d.items()}
    else:
        raise ValueError(f"Expected parameter_and_buffer_dicts to be a dict, or a list/tuple of dicts, "
                         f"but got {type(parameter_and_buffer_dicts)}")
    return _functional_call(module, merged, args, kwargs, tie_weights=tie_weights, strict=strict)


# ---- pytrees: tuples, lists, namedtuples and dicts of leaves ----

def _flatten(tree: Any) -> tuple[list[Any], Any]:
    """(leaves, spec); the spec is None for a leaf, else (type, keys or None, child specs)."""
    if isinstance(tree, (tuple, list)):
        leaves: list[Any] = []
        specs = []
        for c in tree:
            ls, s = _flatten(c)
            leaves += ls
            specs.append(s)
        return leaves, (type(tree), None, specs)
    if isinstance(tree, dict):
        leaves, specs = [], []
        for c in tree.values():
            ls, s = _flatten(c)
            leaves += ls
            specs.append(s)
        return leaves, (type(tree), list(tree), specs)
    return [tree], None


def _unflatten(leaves: Sequence[Any], spec: Any) -> Any:
    it = iter(leaves)

    def build(s: Any) -> Any:
        if s is None:
            return next(it)
        typ, keys, specs = s
        children = [build(c) for c in specs]
        if keys is not None:
            return typ(zip(keys, children))
        return typ(*children) if hasattr(typ, "_fields") else typ(children)
    return build(spec)


def _spec_str(spec: Any) -> str:
    if spec is None:
        return "*"
    typ, keys, specs = spec
    inner = ", ".join(_spec_str(s) if keys is None else f"{k!r}: {_spec_str(s)}" for k, s in zip(keys or specs, specs))
    return f"{typ.__name__}({inner})"


def _prefix_leaves(prefix: Any, tree: Any) -> list[Any] | None:
    """``prefix`` (a leaf applies to a whole subtree) expanded to one entry per leaf of ``tree``;
    None when the structures do not match."""
    if not isinstance(prefix, (tuple, list, dict)):
        return [prefix] * len(_flatten(tree)[0])
    if isinstance(prefix, dict):
        if not isinstance(tree, dict) or set(prefix) != set(tree):
            return None
        pairs = [(prefix[k], tree[k]) for k in tree]
    else:
        # a list matches a list only, a tuple a tuple (as PyTorch's tree specs)
        if not isinstance(tree, (tuple, list)) or isinstance(prefix, list) != isinstance(tree, list) \
                or len(prefix) != len(tree):
            return None
        pairs = list(zip(prefix, tree))
    out: list[Any] = []
    for p, t in pairs:
        sub = _prefix_leaves(p, t)
        if sub is None:
            return None
        out += sub
    return out


# ---- shared machinery of the differentiating transforms ----

def _check_argnums(argnums: Any, nargs: int) -> tuple[int, ...]:
    if isinstance(argnums, int) and not isinstance(argnums, bool):
        nums: tuple[int, ...] = (argnums,)
    elif isinstance(argnums, tuple) and all(isinstance(a, int) and not isinstance(a, bool) for a in argnums):
        if not argnums:
            raise RuntimeError("argnums must be non-empty")
        nums = argnums
    else:
        raise RuntimeError(f"argnums must be int or Tuple[int, ...], got: {type(argnums)}")
    for a in nums:
        if not -nargs <= a < nargs:
            raise RuntimeError(f"Got argnum={a}, but only {nargs} positional inputs")
    nums = tuple(a % nargs for a in nums)
    if len(set(nums)) != len(nums):
        raise RuntimeError(f"argnums must be unique, got {argnums}")
    return nums


def _diff_copy(t: Any, private: set[int]) -> Tensor:
    """The tensor a transform differentiates with respect to, in place of the caller's ``t``."""
    if not isinstance(t, Tensor):
        raise ValueError(f"Thing passed to transform API must be Tensor, got {type(t)}")
    if t.requires_grad:
        return t.clone()  # a non-leaf alias: the graph continues to the caller's tensor
    c = t.detach().requires_grad_()
    private.add(id(c))
    return c


def _reaches_outside(tensors: Sequence[Any], private: set[int]) -> bool:
    """Whether the graph of ``tensors`` reaches a leaf that requires grad and is not one of the
    transform's own copies (then results keep their graph, as under PyTorch's nested levels)."""
    stack: list[Any] = [t._grad_fn or t for t in tensors if isinstance(t, Tensor) and t.requires_grad]
    seen: set[int] = set()
    while stack:
        n = stack.pop()
        if isinstance(n, Tensor):
            if id(n) not in private:
                return True
            continue
        if id(n) in seen:
            continue
        seen.add(id(n))
        edges = getattr(n, "edges", None)
        if edges is None:
            return True  # a node we cannot look into: keep the graph to be safe
        stack.extend(e for e in edges if e is not None)
    return False


def _unwrap(tree: Any, private: set[int], keep: bool) -> Any:
    """Tensors of ``tree`` detached unless they carry a graph that reaches outside the transform."""
    leaves, spec = _flatten(tree)
    return _unflatten([t.detach() if isinstance(t, Tensor) and t.requires_grad
                       and not (keep and _reaches_outside([t], private)) else t for t in leaves], spec)


def _grads(outs: list[Tensor], ins: list[Tensor], gos: list[Any], create_graph: bool) -> list[Tensor]:
    """d(outs)/d(ins) contracted with ``gos``, zeros where an input is unused."""
    pairs = [(o, g) for o, g in zip(outs, gos) if o.requires_grad]
    if not pairs:
        return [zeros_like(i) for i in ins]
    res = autograd.grad([o for o, _ in pairs], ins, [g for _, g in pairs], retain_graph=True,
                        create_graph=create_graph, allow_unused=True)
    return [zeros_like(i) if r is None else r for r, i in zip(res, ins)]


def _call_with_copies(func: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any],
                      nums: Sequence[int]) -> tuple[Any, list[tuple[list[Tensor], Any]], set[int]]:
    """Run ``func`` with copies of ``args[nums]`` that require grad: (output, per argnum (copies, spec), private ids)."""
    private: set[int] = set()
    new = list(args)
    diff = []
    for a in nums:
        leaves, spec = _flatten(args[a])
        copies = [_diff_copy(t, private) for t in leaves]
        new[a] = _unflatten(copies, spec)
        diff.append((copies, spec))
    with enable_grad():
        out = func(*new, **kwargs)
    return out, diff, private


def _split_aux(out: Any, has_aux: bool, where: str) -> tuple[Any, Any]:
    if not has_aux:
        return out, None
    if not (isinstance(out, tuple) and len(out) == 2):
        raise RuntimeError(f"{where}: output of function f should be a tuple: (output, aux) if has_aux is True")
    for t in _flatten(out[1])[0]:
        if not isinstance(t, Tensor):
            raise RuntimeError(f"Expected tensors, got unsupported type {type(t)}")
    return out[0], out[1]


def _tensor_leaves(out: Any) -> tuple[list[Tensor], Any]:
    leaves, spec = _flatten(out)
    for t in leaves:
        if not isinstance(t, Tensor):
            # (PyTorch's message for every transform built on vjp)
            raise RuntimeError(f"vjp(f, *primals): expected f(*primals) to return only tensors, got unsupported "
                               f"type {type(t)}")
    return leaves, spec


# ---- grad, vjp, jvp ----

def grad_and_value(func: Callable[..., Any], argnums: int | tuple[int, ...] = 0,
                   has_aux: bool = False) -> Callable[..., Any]:
    """``(gradient, value)`` of a scalar function, w.r.t. the arguments ``argnums``.

    >>> grad_and_value(lambda x: (x ** 2).sum())(lightgrad.tensor([3.0]))
    (tensor([6.]), tensor(9.))
    """
    where = "grad_and_value(f)(*args)"

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        nums = _check_argnums(argnums, len(args))
        outer = is_grad_enabled()
        out, diff, private = _call_with_copies(func, args, kwargs, nums)
        out, aux = _split_aux(out, has_aux, where)
        if not isinstance(out, Tensor):
            raise RuntimeError(f"{where}: Expected f(*args) to return a Tensor, got {type(out)}")
        if out.dim() != 0:
            raise RuntimeError(f"{where}: Expected f(*args) to return a scalar Tensor, got tensor with "
                               f"{out.dim()} dims. Maybe you wanted to use the vjp or jacrev APIs instead?")
        keep = outer and _reaches_outside([out], private)
        flat = [c for cs, _ in diff for c in cs]
        gs = _grads([out], flat, [None], keep)
        per_arg, k = [], 0
        for cs, spec in diff:
            per_arg.append(_unflatten(gs[k:k + len(cs)], spec))
            k += len(cs)
        g = _unwrap(per_arg[0] if isinstance(argnums, int) else tuple(per_arg), private, keep)
        value = _unwrap(out, private, keep)
        if has_aux:
            return g, (value, _unwrap(aux, private, keep))
        return g, value
    return wrapper


def grad(func: Callable[..., Any], argnums: int | tuple[int, ...] = 0, has_aux: bool = False) -> Callable[..., Any]:
    """The gradient of a scalar function w.r.t. the arguments ``argnums`` (with ``has_aux``: (grad, aux)).

    >>> grad(lambda x: (x ** 3).sum())(lightgrad.tensor([1.0, 2.0]))
    tensor([ 3., 12.])
    """
    gv = grad_and_value(func, argnums, has_aux)

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        g, value = gv(*args, **kwargs)
        return (g, value[1]) if has_aux else g
    return wrapper


def vjp(func: Callable[..., Any], *primals: Any, has_aux: bool = False) -> tuple[Any, ...]:
    """``(func(*primals), vjp_fn)``; ``vjp_fn(cotangents)`` gives one vector-Jacobian product per primal.

    >>> out, fn = vjp(lambda x: x * 2, lightgrad.ones(2)); fn(lightgrad.ones(2))
    (tensor([2., 2.]),)
    """
    where = "vjp(f, *primals)"
    outer = is_grad_enabled()
    out, diff, private = _call_with_copies(func, primals, {}, range(len(primals)))
    out, aux = _split_aux(out, has_aux, where)
    outs, out_spec = _tensor_leaves(out)
    keep = outer and _reaches_outside(outs, private)

    def vjp_fn(cotangents: Any, *, retain_graph: bool = True, create_graph: bool | None = None) -> tuple[Any, ...]:
        cts, ct_spec = _flatten(cotangents)
        if ct_spec != out_spec:
            raise RuntimeError(f"Expected pytree structure of cotangents to be the same as pytree structure of "
                               f"outputs to the function. cotangents: {_spec_str(ct_spec)}, primal output: "
                               f"{_spec_str(out_spec)}")
        for i, (c, o) in enumerate(zip(cts, outs)):
            if not isinstance(c, Tensor) or c.shape != o.shape:
                got = c.shape if isinstance(c, Tensor) else type(c)
                raise RuntimeError(f"Mismatch in shape: grad_output[{i}] has a shape of {got} and output[{i}] "
                                   f"has a shape of {o.shape}.")
        cg = (keep or any(c.requires_grad for c in cts)) if create_graph is None else create_graph
        flat = [c for cs, _ in diff for c in cs]
        gs = _grads(outs, flat, cts, bool(cg) and is_grad_enabled())
        res, k = [], 0
        for cs, spec in diff:
            res.append(_unflatten(gs[k:k + len(cs)], spec))
            k += len(cs)
        return _unwrap(tuple(res), private, bool(cg))

    value = _unwrap(out, private, keep)
    return (value, vjp_fn, _unwrap(aux, private, keep)) if has_aux else (value, vjp_fn)


def jvp(func: Callable[..., Any], primals: Any, tangents: Any, *, strict: bool = False,
        has_aux: bool = False) -> tuple[Any, ...]:
    """``(func(*primals), J @ tangents)``, exact, by the double-vjp trick (J t = d/du <J^T u, t>).

    >>> jvp(lambda x: x ** 2, (lightgrad.tensor([3.0]),), (lightgrad.tensor([1.0]),))
    (tensor([9.]), tensor([6.]))
    """
    where = "jvp(f, primals, tangents)"
    if not isinstance(primals, tuple):
        raise RuntimeError(f"{where}: Expected primals to be a tuple. E.g. it should be valid to call f(*primals).")
    p_leaves, p_spec = _flatten(primals)
    t_leaves, t_spec = _flatten(tangents)
    if not isinstance(tangents, tuple) or p_spec != t_spec:
        raise RuntimeError(f"{where}: Expected primals and tangents to have the same python structure. For "
                           f"example, if primals is a tuple of 3 tensors, tangents also must be. Got primals "
                           f"with structure {_spec_str(p_spec)} and tangents with structure {_spec_str(t_spec)}")
    for p, t in zip(p_leaves, t_leaves):
        if not isinstance(t, Tensor) or not isinstance(p, Tensor):
            raise RuntimeError(f"{where}: Expected primals and tangents to be Tensors, got {type(p)} and {type(t)}")
        if t.shape != p.shape:
            raise RuntimeError("Trying to set a forward gradient that has a different size than that of the "
                               f"original Tensor, this is not supported. Tensor is of size {list(p.shape)} while "
                               f"the given forward gradient is of size {list(t.shape)}.")
    outer = is_grad_enabled()
    out, diff, private = _call_with_copies(func, primals, {}, range(len(primals)))
    out, aux = _split_aux(out, has_aux, where)
    outs, out_spec = _tensor_leaves(out)
    keep = outer and (_reaches_outside(outs, private) or any(t.requires_grad for t in t_leaves))
    flat = [c for cs, _ in diff for c in cs]
    # u: a dummy cotangent per output; J^T u is linear in u, and its vjp with t is J t
    live = [o for o in outs if o.requires_grad]
    us = [zeros_like(o).requires_grad_() for o in live]
    jts = autograd.grad(live, flat, us, create_graph=True, allow_unused=True) if live else []
    pairs = [(g, t) for g, t in zip(jts, t_leaves) if g is not None and g.requires_grad]
    if pairs:
        jv = autograd.grad([g for g, _ in pairs], us, [t for _, t in pairs], create_graph=keep, allow_unused=True)
    else:
        jv = (None,) * len(us)
    by_out = {id(o): j for o, j in zip(live, jv)}
    tans = [zeros_like(o) if by_out.get(id(o)) is None else by_out[id(o)] for o in outs]
    result = (_unwrap(out, private, keep), _unwrap(_unflatten(tans, out_spec), private, keep))
    return result + (_unwrap(aux, private, keep),) if has_aux else result


# ---- Jacobians ----

def jacrev(func: Callable[..., Any], argnums: int | tuple[int, ...] = 0, *, has_aux: bool = False,
           chunk_size: int | None = None) -> Callable[..., Any]:
    """The Jacobian of ``func`` w.r.t. the arguments ``argnums``, one backward per output element;
    each block has shape ``output.shape + input.shape``.

    >>> jacrev(lambda x: x * 2)(lightgrad.ones(2))
    tensor([[2., 0.],
            [0., 2.]])
    """
    if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size <= 0):
        raise ValueError(f"jacrev: `chunk_size` should be greater than 0, got {chunk_size}.")
    return _jacobian(func, argnums, has_aux, "jacrev(f, argnums)(*args)")


def jacfwd(func: Callable[..., Any], argnums: int | tuple[int, ...] = 0, has_aux: bool = False, *,
           randomness: str = "error") -> Callable[..., Any]:
    """The Jacobian of ``func`` w.r.t. ``argnums``, as ``jacrev`` gives it (computed by reverse mode here).

    >>> jacfwd(lambda x: x ** 2)(lightgrad.tensor([1.0, 3.0]))
    tensor([[2., 0.],
            [0., 6.]])
    """
    _check_randomness(randomness)
    return _jacobian(func, argnums, has_aux, "jacfwd(f, argnums)(*args)")


def hessian(func: Callable[..., Any], argnums: int | tuple[int, ...] = 0) -> Callable[..., Any]:
    """The Hessian of a scalar function, ``jacfwd(jacrev(func, argnums), argnums)``.

    >>> hessian(lambda x: (x ** 3).sum())(lightgrad.tensor([1.0, 2.0]))
    tensor([[ 6.,  0.],
            [ 0., 12.]])
    """
    return jacfwd(jacrev(func, argnums), argnums)


def _jacobian(func: Callable[..., Any], argnums: int | tuple[int, ...], has_aux: bool,
              where: str) -> Callable[..., Any]:
    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        nums = _check_argnums(argnums, len(args))
        outer = is_grad_enabled()
        out, diff, private = _call_with_copies(func, args, kwargs, nums)
        out, aux = _split_aux(out, has_aux, where)
        outs, out_spec = _tensor_leaves(out)
        keep = outer and _reaches_outside(outs, private)
        flat = [c for cs, _ in diff for c in cs]
        blocks = []
        for o in outs:
            n = o.numel()
            if o.requires_grad and n:
                basis = eye(n, dtype=o.dtype)
                rows = [_grads([o], flat, [basis[k].reshape(o.shape)], keep) for k in range(n)]
                jac = [stack([r[j] for r in rows]).reshape(tuple(o.shape) + tuple(c.shape))
                       for j, c in enumerate(flat)]
            else:
                jac = [zeros(tuple(o.shape) + tuple(c.shape), dtype=c.dtype) for c in flat]
            per_arg, k = [], 0
            for cs, spec in diff:
                per_arg.append(_unflatten(jac[k:k + len(cs)], spec))
                k += len(cs)
            blocks.append(per_arg[0] if isinstance(argnums, int) else tuple(per_arg))
        res = _unwrap(_unflatten(blocks, out_spec), private, keep)
        return (res, _unwrap(aux, private, keep)) if has_aux else res
    return wrapper


# ---- vmap ----

def _check_randomness(randomness: str) -> None:
    if randomness not in ("error", "different", "same"):
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or 'same'. Got {randomness}")


def vmap(func: Callable[..., Any], in_dims: Any = 0, out_dims: Any = 0, randomness: str = "error", *,
         chunk_size: int | None = None) -> Callable[..., Any]:
    """``func`` mapped over dimension ``in_dims`` of its inputs, results stacked along ``out_dims``.

    >>> vmap(lambda x, w: x @ w, in_dims=(0, None))(lightgrad.ones(4, 3), lightgrad.ones(3)).shape
    lightgrad.Size([4])
    """
    _check_randomness(randomness)
    if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size <= 0):
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. (got {chunk_size})")
    name = getattr(func, "__name__", repr(func))

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        where = f"vmap({name}, in_dims={in_dims}, ...)(<inputs>)"
        if not isinstance(in_dims, (int, tuple)) or isinstance(in_dims, bool):
            raise ValueError(f"{where}: expected `in_dims` to be int or a (potentially nested) tuple matching "
                             f"the structure of inputs, got: {type(in_dims)}.")
        if not args:
            raise ValueError(f"{where}: vmap requires at least one positional argument")
        dims = _prefix_leaves(in_dims, args)
        if dims is None:
            raise ValueError(f"{where}: in_dims is not compatible with the structure of `inputs`. in_dims has "
                             f"structure {_spec_str(_flatten(in_dims)[1])} but inputs has structure "
                             f"{_spec_str(_flatten(args)[1])}.")
        leaves, spec = _flatten(args)
        sizes = []
        for d, x in zip(dims, leaves):
            if d is None:
                continue
            if not isinstance(d, int) or isinstance(d, bool):
                raise ValueError(f"{where}: in_dims must be int or None, got {type(d)}")
            if not isinstance(x, Tensor):
                raise ValueError(f"{where}: Got in_dim={d} for an input but the input is of type {type(x)}. We "
                                 "cannot vmap over non-Tensor arguments, please use None as the respective in_dim")
            if not -x.dim() <= d < x.dim():
                raise ValueError(f"{where}: Got in_dim={d} for some input, but that input is a Tensor of "
                                 f"dimensionality {x.dim()} so expected in_dim to satisfy "
                                 f"-{x.dim()} <= in_dim < {x.dim()}.")
            sizes.append(x.shape[d])
        if not sizes:
            raise ValueError(f"{where}: at least one input must be batched over (in_dims all None)")
        if len(set(sizes)) != 1:
            raise ValueError(f"vmap: Expected all tensors to have the same size in the mapped dimension, got "
                             f"sizes {sizes} for the mapped dimension")
        size = sizes[0]
        if size == 0:
            raise ValueError(f"{where}: the mapped dimension has size 0; lightgrad's vmap needs at least one slice")
        start = random.get_rng_state() if randomness != "different" else None
        results = []
        for i in range(size):
            if randomness == "same":
                random.set_rng_state(start)
            sliced = [x if d is None else x.select(d, i) for d, x in zip(dims, leaves)]
            results.append(func(*_unflatten(sliced, spec), **kwargs))
            if randomness == "error" and not _same_state(start, random.get_rng_state()):
                raise RuntimeError("vmap: called random operation while in randomness error mode. Please either "
                                   "use the 'same' or 'different' randomness flags on vmap or perform the "
                                   "randomness operation out of vmap")
        out_leaves = [_flatten(r)[0] for r in results]
        first_spec = _flatten(results[0])[1]
        odims = _prefix_leaves(out_dims, results[0])
        if odims is None:
            raise ValueError(f"vmap({name}, ..., out_dims={out_dims})(<inputs>): out_dims is not compatible with "
                             f"the structure of `outputs`. out_dims has structure {_spec_str(_flatten(out_dims)[1])} "
                             f"but outputs has structure {_spec_str(first_spec)}.")
        stacked = []
        for j, d in enumerate(odims):
            col = [ls[j] for ls in out_leaves]
            if d is None:
                if any(not (c is col[0] or isinstance(c, Tensor) and isinstance(col[0], Tensor)
                            and c.shape == col[0].shape and bool((c == col[0]).all())) for c in col):
                    raise ValueError(f"vmap({name}, ...): `{name}` can not return a BatchedTensor when out_dim is None")
                stacked.append(col[0])
                continue
            if not isinstance(col[0], Tensor):
                raise ValueError(f"vmap({name}, ...): `{name}` must only return Tensors, got type {type(col[0])}. "
                                 "Did you mean to set out_dims= to None for output?")
            if not -(col[0].dim() + 1) <= d <= col[0].dim():
                raise ValueError(f"vmap({name}, ...): out_dim={d} is out of range for an output of "
                                 f"dimensionality {col[0].dim()} (expected {-(col[0].dim() + 1)} <= out_dim <= "
                                 f"{col[0].dim()})")
            stacked.append(stack(col, dim=d))
        return _unflatten(stacked, first_spec)
    return wrapper


def _same_state(a: Any, b: Any) -> bool:
    return a is b or (a.shape == b.shape and bool((a == b).all()))
