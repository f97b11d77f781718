"""PyTorch-like printing of tensors."""

from __future__ import annotations

from typing import Any

from . import backend as B


def _fmt_float(a: B.ndarray) -> Any:
    # PyTorch's rule: integers print as "1.", otherwise 4 decimals, or scientific notation when the
    # values span more than 3 orders of magnitude, exceed 1e8, or go below 1e-4
    finite = B.xp.abs(a[B.isfinite(a)])
    nz = finite[finite != 0]
    if finite.size and B.xp.all(finite == B.xp.round(finite)):
        if nz.size and nz.max() > 1e8:
            return lambda v: f"{v:.4e}"
        return lambda v: f"{v:.0f}." if B.isfinite(v) else str(v)
    if nz.size and (nz.max() / nz.min() > 1000 or nz.max() > 1e8 or nz.min() < 1e-4):
        return lambda v: f"{v:.4e}" if B.isfinite(v) else str(v)
    return lambda v: f"{v:.4f}" if B.isfinite(v) else str(v)


def tensor_repr(t: Any) -> str:
    """``tensor([1., 2.], requires_grad=True)`` the way PyTorch prints it."""
    a = t._data
    opts: dict[str, Any] = {"separator": ", ", "threshold": 1000, "edgeitems": 3, "max_line_width": 80}
    if a.dtype.kind == "f" and a.size:
        fmt = _fmt_float(a.astype(B.xp.float64))
        width = max(len(fmt(v)) for v in a.reshape(-1)[:2000].astype(B.xp.float64))
        opts["formatter"] = {"float_kind": lambda v: fmt(v).rjust(width)}
    if a.dtype.kind == "b":
        bw = 5 if a.size and not a.all() and a.ndim else 4
        opts["formatter"] = {"bool": lambda v: ("True" if v else "False").rjust(bw)}
    body = B.xp.array2string(a, prefix="tensor(", **opts) if a.ndim else (
        opts["formatter"]["float_kind"](float(a)) if "formatter" in opts and a.dtype.kind == "f"
        else ("True" if a.dtype.kind == "b" and bool(a) else "False" if a.dtype.kind == "b" else str(a.item())))
    extras = []
    if t.dtype.name not in ("float32", "int64", "bool") or (a.size == 0 and t.dtype.name != "float32"):
        extras.append(f"dtype=lightgrad.{t.dtype.name}")
    if a.size == 0 and a.ndim != 1:
        extras.insert(0, f"size={tuple(a.shape)}")
    if t._grad_fn is not None:
        extras.append(f"grad_fn=<{t._grad_fn.name()}>")
    elif t.requires_grad:
        extras.append("requires_grad=True")
    return "tensor(" + body + "".join(", " + e for e in extras) + ")"
