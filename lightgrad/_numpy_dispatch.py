"""Tensors where arrays are expected: the backend's functions called on Tensors, and NumPy's protocols.

``GRAPH`` maps each backend function that backward formulas call to its differentiable Tensor op:
with ``create_graph=True`` the engine hands the formulas Tensors, the backend sends each call on one
here (``backend.graph``), and the gradient computation itself is recorded. ``bind`` gives this module
Tensor and registers the table, once, from lightgrad.tensor's late binding.

NumPy's protocols (``Tensor.__array_ufunc__`` / ``__array_function__``) serve user code only:
``np.exp(t)`` is ``t.exp()``, other NumPy calls see plain arrays. A backward formula never goes
through them; inside one that records a graph (``_recording``), any NumPy call on a Tensor raises:
its result would silently be a constant of the second derivative.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from . import backend as B
from ._ops.common import _as_tensor
from ._ops.elementwise import where
from ._ops.linalg import einsum
from .grad_mode import _recording, not_differentiable_twice

if TYPE_CHECKING:
    from .tensor import Tensor
else:
    Tensor = None  # bound by lightgrad.tensor (the one late binding: bind)


def _t(x: Any) -> Any:
    return x if isinstance(x, Tensor) or isinstance(x, int | float | bool) else _as_tensor(B.asarray(x))


def _constant(f: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """A piecewise-constant function: its derivative is 0, so its value is its exact graph."""
    return lambda a: Tensor._make(f(_t(a)._data))


def _reduce(f: Any, x: Any, axes: Any, keepdims: bool = False, dtype: Any = None) -> Any:
    x = _t(x)
    if f is B.xp.add:
        return x.sum(axes, keepdims)
    if f is B.xp.multiply:
        for d in sorted(range(x.ndim) if axes is None else (a % x.ndim for a in axes), reverse=True):
            x = x.prod(d, keepdims)
        return x
    raise not_differentiable_twice(f"the backend's reduce of {f.__name__}")


# ---- the backend's functions on Tensors, by the backend's names -----------------------------------

GRAPH: dict[str, Callable[..., Any]] = {
    # arithmetic (either operand may be the Tensor)
    "add": lambda a, b: _t(a) + b if isinstance(_t(a), Tensor) else _t(b) + a,
    "subtract": lambda a, b: _t(a) - b if isinstance(_t(a), Tensor) else (-_t(b)) + a,
    "multiply": lambda a, b: _t(a) * b if isinstance(_t(a), Tensor) else _t(b) * a,
    "divide": lambda a, b: _t(a) / b if isinstance(_t(a), Tensor) else _t(b).reciprocal() * a,
    "power": lambda a, b: _t(a) ** b if isinstance(_t(a), Tensor) else b.__rpow__(a),
    "maximum": lambda a, b: _t(a).maximum(_t(b)),
    "minimum": lambda a, b: _t(a).minimum(_t(b)),
    "matmul": lambda a, b: _t(a).matmul(_t(b)),
    "einsum": lambda spec, *ops, **kw: einsum(spec, *[_t(o) for o in ops]),
    # unary math
    "negative": lambda a: -a,
    "exp": lambda a: a.exp(),
    "log": lambda a: a.log(),
    "log1p": lambda a: a.log1p(),
    "expm1": lambda a: a.expm1(),
    "sqrt": lambda a: a.sqrt(),
    "sin": lambda a: a.sin(),
    "cos": lambda a: a.cos(),
    "tan": lambda a: a.tan(),
    "tanh": lambda a: a.tanh(),
    "absolute": lambda a: a.abs(),
    "sign": lambda a: a.sign(),
    "floor": _constant(B.floor),
    "ceil": _constant(B.ceil),
    "trunc": _constant(B.trunc),
    "round_": _constant(B.round_),
    # comparisons and logic (no derivative: boolean Tensors)
    "greater": lambda a, b: _t(a) > b if isinstance(_t(a), Tensor) else _t(b) < a,
    "greater_equal": lambda a, b: _t(a) >= b if isinstance(_t(a), Tensor) else _t(b) <= a,
    "less": lambda a, b: _t(a) < b if isinstance(_t(a), Tensor) else _t(b) > a,
    "less_equal": lambda a, b: _t(a) <= b if isinstance(_t(a), Tensor) else _t(b) >= a,
    "equal": lambda a, b: _t(a) == b if isinstance(_t(a), Tensor) else _t(b) == a,
    "not_equal": lambda a, b: _t(a) != b if isinstance(_t(a), Tensor) else _t(b) != a,
    "logical_and": lambda a, b: _t(a).logical_and(_t(b)),
    "logical_not": lambda a: _t(a).logical_not(),
    # selection
    "where": lambda c, a, b: where(_t(c), _t(a), _t(b)),
    "mask": lambda g, keep: where(_t(keep), _t(g), 0),
    # reductions and scans
    "sum": lambda x, axis=None, keepdims=False: _t(x).sum(axis, keepdims),
    "reduce": _reduce,
    "cumsum": lambda x, axis=None: _t(x).cumsum(axis),
    "cumprod": lambda x, axis=None: _t(x).cumprod(axis),
    # shapes and views
    "reshape": lambda x, shape: _t(x).reshape(shape),
    "expand": lambda x, shape: _t(x).expand(shape),
    "broadcast_to": lambda x, shape: _t(x).expand(shape),
    "transpose": lambda x, axes=None: _t(x).permute(*(axes if axes is not None else reversed(range(x.ndim)))),
    "swapaxes": lambda x, a, b: _t(x).transpose(a, b),
    "flip": lambda x, axis=None: _t(x).flip(axis if axis is not None else tuple(range(x.ndim))),
    "roll": lambda x, shift, axis=None: _t(x).roll(shift, axis),
    "expand_dims": lambda x, axis: _t(x).unsqueeze(axis),
}


def bind(tensor: type) -> None:
    """The one late binding (see lightgrad.tensor): this module's Tensor, and the backend's table."""
    globals()["Tensor"] = tensor
    B.graph.bind(GRAPH)


# ---- NumPy's protocols, for user code -------------------------------------------------------------

def _sum(x: Any, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: bool = False, **kw: Any) -> Any:
    return _t(x).sum(axis, keepdims)


# NumPy's functions as Tensor ops, by their names in NumPy (their signatures are NumPy's)
_FUNCS: dict[str, Callable[..., Any]] = {
    "sum": _sum,
    "reshape": lambda x, shape, **kw: _t(x).reshape(shape),
    "broadcast_to": lambda x, shape, **kw: _t(x).expand(shape),
    "transpose": lambda x, axes=None: GRAPH["transpose"](x, axes),
    "swapaxes": GRAPH["swapaxes"],
    "where": GRAPH["where"],
    "flip": GRAPH["flip"],
    "roll": GRAPH["roll"],
    "cumsum": lambda x, axis=None, **kw: _t(x).cumsum(axis),
    "einsum": GRAPH["einsum"],
    "expand_dims": GRAPH["expand_dims"],
    "squeeze": lambda x, axis=None: _t(x).squeeze(axis),
}


def _plain(x: Any) -> Any:
    if isinstance(x, Tensor):
        return x._data
    if isinstance(x, list | tuple):
        return type(x)(_plain(v) for v in x)
    return x


def _refuse_recording(what: str) -> None:
    if _recording.get() is not None:  # (a backward formula computes with the backend's functions)
        raise not_differentiable_twice(what)


def array_ufunc(ufunc: Any, method: str, inputs: tuple[Any, ...], kw: dict[str, Any]) -> Any:
    _refuse_recording(f"NumPy's {ufunc.__name__}" + (f".{method}" if method != "__call__" else ""))
    # (a ufunc's name is the backend's for every ufunc in GRAPH, with the same arguments)
    f = GRAPH.get(ufunc.__name__) if method == "__call__" and not kw else None
    if f is not None and getattr(getattr(B, ufunc.__name__, None), "ufunc", ufunc) is ufunc:
        return f(*inputs)
    res = getattr(ufunc, method)(*_plain(inputs), **{k: _plain(v) for k, v in kw.items()})
    if "out" in kw:
        return kw["out"][0] if isinstance(kw["out"], tuple) else kw["out"]
    return Tensor._make(res) if isinstance(res, B.ndarray) else res


def array_function(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    _refuse_recording(f"NumPy's {getattr(func, '__name__', func)}")
    name = getattr(func, "__name__", "")
    f = _FUNCS.get(name)
    if f is not None and getattr(B.xp, name, None) is func:
        return f(*args, **kwargs)
    return func(*_plain(args), **{k: _plain(v) for k, v in kwargs.items()})
