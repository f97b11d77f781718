"""NumPy's dispatch protocols for Tensors.

Backward formulas are written with backend (NumPy) calls. With ``create_graph=True`` the engine
hands them Tensors, and these tables route each call to the differentiable lightgrad op, so the
gradient computation itself is recorded. Other NumPy calls on Tensors see plain arrays; inside such
a backward (``autograd._recording``) one that would take a Tensor that requires grad to a float
array raises, since its result would silently be a constant of the second derivative.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .grad_mode import _recording, not_differentiable_twice
from .tensor import Tensor, _as_tensor, einsum, where


def _t(x: Any) -> Any:
    return x if isinstance(x, Tensor) or isinstance(x, int | float | bool) else _as_tensor(np.asarray(x))


_UFUNCS: dict[Any, Any] = {
    np.add: lambda a, b: _t(a) + b if isinstance(_t(a), Tensor) else _t(b) + a,
    np.subtract: lambda a, b: _t(a) - b if isinstance(_t(a), Tensor) else (-_t(b)) + a,
    np.multiply: lambda a, b: _t(a) * b if isinstance(_t(a), Tensor) else _t(b) * a,
    np.true_divide: lambda a, b: _t(a) / b if isinstance(_t(a), Tensor) else _t(b).reciprocal() * a,
    np.power: lambda a, b: _t(a) ** b if isinstance(_t(a), Tensor) else b.__rpow__(a),
    np.matmul: lambda a, b: _t(a).matmul(_t(b)),
    np.maximum: lambda a, b: _t(a).maximum(_t(b)),
    np.minimum: lambda a, b: _t(a).minimum(_t(b)),
    np.negative: lambda a: -a,
    np.exp: lambda a: a.exp(),
    np.log: lambda a: a.log(),
    np.log1p: lambda a: a.log1p(),
    np.expm1: lambda a: a.expm1(),
    np.sqrt: lambda a: a.sqrt(),
    np.sin: lambda a: a.sin(),
    np.cos: lambda a: a.cos(),
    np.tan: lambda a: a.tan(),
    np.tanh: lambda a: a.tanh(),
    np.absolute: lambda a: a.abs(),
    np.sign: lambda a: a.sign(),
    np.greater: lambda a, b: _t(a) > b if isinstance(_t(a), Tensor) else _t(b) < a,
    np.greater_equal: lambda a, b: _t(a) >= b if isinstance(_t(a), Tensor) else _t(b) <= a,
    np.less: lambda a, b: _t(a) < b if isinstance(_t(a), Tensor) else _t(b) > a,
    np.less_equal: lambda a, b: _t(a) <= b if isinstance(_t(a), Tensor) else _t(b) >= a,
    np.equal: lambda a, b: _t(a) == b if isinstance(_t(a), Tensor) else _t(b) == a,
    np.logical_and: lambda a, b: _t(a).logical_and(_t(b)),
}


def _sum(x: Any, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: bool = False, **kw: Any) -> Any:
    return _t(x).sum(axis, keepdims)


_FUNCS: dict[Any, Any] = {
    np.sum: _sum,
    np.reshape: lambda x, shape, **kw: _t(x).reshape(shape),
    np.broadcast_to: lambda x, shape, **kw: _t(x).expand(shape),
    np.transpose: lambda x, axes=None: _t(x).permute(*(axes if axes is not None else reversed(range(x.ndim)))),
    np.swapaxes: lambda x, a, b: _t(x).transpose(a, b),
    np.where: lambda c, a, b: where(_t(c), _t(a), _t(b)),
    np.flip: lambda x, axis=None: _t(x).flip(axis if axis is not None else tuple(range(x.ndim))),
    np.roll: lambda x, shift, axis=None: _t(x).roll(shift, axis),
    np.cumsum: lambda x, axis=None, **kw: _t(x).cumsum(axis),
    np.einsum: lambda spec, *ops, **kw: einsum(spec, *[_t(o) for o in ops]),
    np.expand_dims: lambda x, axis: _t(x).unsqueeze(axis),
    np.squeeze: lambda x, axis=None: _t(x).squeeze(axis),
}


def _plain(x: Any) -> Any:
    if isinstance(x, Tensor):
        return x._data
    if isinstance(x, list | tuple):
        return type(x)(_plain(v) for v in x)
    return x


# piecewise constant: their derivative is 0, so a plain array is their exact graph
_CONSTANT = {np.floor, np.ceil, np.rint, np.trunc, np.sign, np.signbit, np.isnan, np.isinf, np.isfinite,
             np.floor_divide}


def _graph_lost(func: Any, args: Any) -> bool:
    """Whether computing ``func`` on plain arrays here would cut a graph being recorded."""
    if _recording.get() is None or func in _CONSTANT:
        return False
    stack = list(args)
    while stack:
        a = stack.pop()
        if isinstance(a, Tensor):
            if a.requires_grad:
                return True
        elif isinstance(a, list | tuple):
            stack.extend(a)
    return False


def _check_kept(func: Any, args: Any, res: Any) -> None:
    # (integer and boolean results, masks and indices, carry no derivative)
    if isinstance(res, np.ndarray | np.generic) and res.dtype.kind not in "fc":
        return
    if _graph_lost(func, args):
        raise not_differentiable_twice(f"NumPy's {getattr(func, '__name__', func)}")


def array_ufunc(ufunc: Any, method: str, inputs: tuple[Any, ...], kw: dict[str, Any]) -> Any:
    f = _UFUNCS.get(ufunc)
    if method == "__call__" and f is not None and not kw:
        return f(*inputs)
    # (a ufunc with no floating-point outputs, as comparisons and logic, carries no derivative)
    if any(t[-1] in "efdgFDG" for t in ufunc.types) and _graph_lost(ufunc, (inputs, list(kw.values()))):
        raise not_differentiable_twice(f"NumPy's {ufunc.__name__}" + (f".{method}" if method != "__call__" else ""))
    res = getattr(ufunc, method)(*_plain(inputs), **{k: _plain(v) for k, v in kw.items()})
    if "out" in kw:
        return kw["out"][0] if isinstance(kw["out"], tuple) else kw["out"]
    return Tensor._make(res) if isinstance(res, np.ndarray) else res


def array_function(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    f = _FUNCS.get(func)
    if f is not None:
        return f(*args, **kwargs)
    res = func(*_plain(args), **{k: _plain(v) for k, v in kwargs.items()})
    _check_kept(func, (args, list(kwargs.values())), res)
    return res
