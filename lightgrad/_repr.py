"""PyTorch-like printing of tensors."""

from __future__ import annotations

from typing import Any

import numpy as np


def _fmt_float(a: np.ndarray) -> Any:
    finite = a[np.isfinite(a)]
    if finite.size and np.all(finite == np.round(finite)) and np.abs(finite).max() < 1e8:
        return lambda v: (f"{v:.0f}." if np.isfinite(v) else str(v).replace("inf", "inf"))
    big = np.abs(finite).max() if finite.size else 0
    small = np.abs(finite[finite != 0]).min() if np.any(finite != 0) else 1
    if big >= 1e8 or small < 1e-4:
        return lambda v: f"{v:.4e}"
    return lambda v: f"{v:.4f}"


def tensor_repr(t: Any) -> str:
    """``tensor([1., 2.], requires_grad=True)`` the way PyTorch prints it."""
    a = t._data
    opts: dict[str, Any] = {"separator": ", ", "threshold": 1000, "edgeitems": 3, "max_line_width": 80}
    if a.dtype.kind == "f" and a.size:
        fmt = _fmt_float(a.astype(np.float64))
        width = max(len(fmt(v)) for v in a.reshape(-1)[:2000].astype(np.float64))
        opts["formatter"] = {"float_kind": lambda v: fmt(v).rjust(width)}
    if a.dtype.kind == "b":
        opts["formatter"] = {"bool": lambda v: "True" if v else "False"}
    body = np.array2string(a, prefix="tensor(", **opts) if a.ndim else (
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
