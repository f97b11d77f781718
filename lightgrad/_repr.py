"""PyTorch-like printing of tensors."""

from __future__ import annotations

from typing import Any

from . import backend as B
from . import dtypes as D


# set_printoptions' settings (PyTorch's defaults; its "default" profile)
PRINT_OPTS: dict[str, Any] = {"precision": 4, "threshold": 1000, "edgeitems": 3, "linewidth": 80, "sci_mode": None}
_PROFILES = {"default": (4, 1000, 3, 80), "short": (2, 1000, 2, 80), "full": (4, float("inf"), 3, 80)}


def set_printoptions(precision: int | None = None, threshold: float | None = None, edgeitems: int | None = None,
                     linewidth: int | None = None, profile: str | None = None, sci_mode: bool | None = None) -> None:
    """How tensors print, as PyTorch's: ``set_printoptions(precision=2)``, ``profile="full"`` (no summarizing)."""
    if profile is not None:
        if profile not in _PROFILES:
            raise ValueError(f"profile must be one of {sorted(_PROFILES)}, got {profile!r}")
        p, t, e, w = _PROFILES[profile]
        PRINT_OPTS.update(precision=p, threshold=t, edgeitems=e, linewidth=w)
    for key, value in (("precision", precision), ("threshold", threshold), ("edgeitems", edgeitems),
                       ("linewidth", linewidth)):
        if value is not None:
            PRINT_OPTS[key] = value
    PRINT_OPTS["sci_mode"] = sci_mode


def _fmt_float(a: B.ndarray) -> Any:
    # PyTorch's rule: integers print as "1.", otherwise `precision` decimals, or scientific notation when
    # the values span more than 3 orders of magnitude, exceed 1e8, or (not integers) go below 1e-4;
    # set_printoptions(sci_mode=) overrides the choice
    p = PRINT_OPTS["precision"]
    finite = B.xp.abs(a[B.isfinite(a)])
    nz = finite[finite != 0]
    integral = bool(finite.size) and bool(B.xp.all(finite == B.xp.round(finite)))
    wide = bool(nz.size) and (nz.max() / nz.min() > 1000 or nz.max() > 1e8 or (not integral and nz.min() < 1e-4))
    sci = wide if PRINT_OPTS["sci_mode"] is None else PRINT_OPTS["sci_mode"]
    if sci:
        return lambda v: f"{v:.{p}e}" if B.isfinite(v) else str(v)
    if integral:
        return lambda v: f"{v:.0f}." if B.isfinite(v) else str(v)
    return lambda v: f"{v:.{p}f}" if B.isfinite(v) else str(v)


def _complex_formatter(a: B.ndarray) -> Any:
    # PyTorch formats the real and the imaginary parts each by the float rule over all of its kind,
    # the real part right-aligned, the imaginary part unpadded after its sign: "-1.+0.5000j"
    re, im = a.real.astype(B.xp.float64), a.imag.astype(B.xp.float64)
    fre, fim = _fmt_float(re), _fmt_float(im)
    width = max(len(fre(v)) for v in re.reshape(-1)[:2000])

    def fmt(v: Any) -> str:
        i = fim(float(v.imag))
        return fre(float(v.real)).rjust(width) + (i if i[0] in "+-" else "+" + i) + "j"
    return fmt


def tensor_repr(t: Any) -> str:
    """``tensor([1., 2.], requires_grad=True)`` the way PyTorch prints it."""
    a = t._data
    if D.is_low_precision(a.dtype):
        a = a.astype(B.xp.float32)  # (bfloat16 values are exact in float32, and print by the float rule)
    threshold = PRINT_OPTS["threshold"]
    opts: dict[str, Any] = {"separator": ", ", "threshold": B.xp.iinfo(B.xp.intp).max if threshold == float("inf")
                            else int(threshold), "edgeitems": PRINT_OPTS["edgeitems"],
                            "max_line_width": PRINT_OPTS["linewidth"]}
    if a.dtype.kind == "c" and a.size:
        cfmt = _complex_formatter(a)
        opts["formatter"] = {"complex_kind": cfmt}
        if not a.ndim:
            opts["formatter"]["float_kind"] = cfmt  # (the 0-d case below reads float_kind)
    if a.dtype.kind == "f" and a.size:
        fmt = _fmt_float(a.astype(B.xp.float64))
        width = max(len(fmt(v)) for v in a.reshape(-1)[:2000].astype(B.xp.float64))
        opts["formatter"] = {"float_kind": lambda v: fmt(v).rjust(width)}
    if a.dtype.kind == "b":
        bw = 5 if a.size and not a.all() and a.ndim else 4
        opts["formatter"] = {"bool": lambda v: ("True" if v else "False").rjust(bw)}
    body = B.xp.array2string(a, prefix="tensor(", **opts) if a.ndim else (
        opts["formatter"]["float_kind"](a[()]) if "formatter" in opts and a.dtype.kind in "fc"
        else ("True" if a.dtype.kind == "b" and bool(a) else "False" if a.dtype.kind == "b" else str(a.item())))
    if a.size > opts["threshold"]:
        body = body.replace(", ..., ", ",  ..., ")  # (PyTorch pads its ellipsis like an entry: "2.,  ..., 7.")
    extras = []
    # (the default dtypes go unsaid: the default float's, int64, bool, and the default float's complex)
    plain = ("float32", "int64", "bool", D.default_complex().name)
    if t.dtype.name not in plain or (a.size == 0 and t.dtype.name != "float32"):
        extras.append(f"dtype=lightgrad.{t.dtype.name}")
    if a.size == 0 and a.ndim != 1:
        extras.insert(0, f"size={tuple(a.shape)}")
    if t._grad_fn is not None:
        extras.append(f"grad_fn=<{t._grad_fn.name()}>")
    elif t.requires_grad:
        extras.append("requires_grad=True")
    return "tensor(" + body + "".join(", " + e for e in extras) + ")"
