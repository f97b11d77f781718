"""Fused kernels over cache blocks: erf and GELU (with its derivative) in one blocked pass each, and
the layer norm's backward by blocks of rows."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .elementwise import add, cast, empty, exp, multiply, zeros
from .reductions import _ones
from .shapes import Array
from .special import _erf64
from .threads import _big, parallel

# A formula of many passes (erf is ~20) runs block by block, so each pass reads and writes a
# block that stays in the CPU cache instead of whole arrays in memory: about 1.5x faster, and
# the blocks are shared out to the worker threads.

_BLOCK = 1 << 15  # elements per block: 128 KiB of float32, a few of them fit in L2
_SIGN32 = np.uint32(0x80000000)
# Abramowitz-Stegun 7.1.26: erf(z) = 1 - t (a1 + t (a2 + ...)) exp(-z^2), t = 1 / (1 + p z), z >= 0
_AS_P = 0.3275911
_AS_A = (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429)  # a1 .. a5


def _blocked(kernel: Any, x: np.ndarray, nout: int, nscratch: int) -> list[np.ndarray]:
    """``kernel(x_block, out_blocks, scratch_blocks)`` over cache-sized blocks of flat x; returns
    the ``nout`` outputs (x's shape and dtype)."""
    xf = np.ascontiguousarray(x).reshape(-1)
    outs = [empty(x.shape, x.dtype) for _ in range(nout)]
    flat = [o.reshape(-1) for o in outs]
    n = xf.size
    nb = -(-n // _BLOCK)

    def run(lo: int, hi: int, scratch: list[np.ndarray] | None = None) -> None:
        if scratch is None:  # a range of its own (one per thread): its own scratch
            scratch = [np.empty(min(_BLOCK, n), x.dtype) for _ in range(nscratch)]
        for b in range(lo, hi):
            s, e = b * _BLOCK, min((b + 1) * _BLOCK, n)
            kernel(xf[s:e], [f[s:e] for f in flat], [t[:e - s] for t in scratch])
    if _big(xf):
        parallel(lambda lo, hi: (run, (lo, hi), {}), nb)
    else:
        run(0, nb, [empty((min(_BLOCK, n),), x.dtype) for _ in range(nscratch)])  # from the arena if one is active
    return outs


def _as_tail(t: np.ndarray, out: np.ndarray, coef: tuple[float, ...]) -> None:
    """out = t (c0 + t (c1 + ...)) by Horner."""
    np.multiply(t, coef[-1], out=out)
    for c in coef[-2::-1]:
        out += c
        out *= t


def _set_sign(out: np.ndarray, x: np.ndarray, tmp: np.ndarray) -> None:
    """out = copysign(out, x) for out >= 0, float32: one OR of sign bits (np.copysign is a slow
    scalar loop)."""
    u = tmp.view(np.uint32)
    np.bitwise_and(x.view(np.uint32), _SIGN32, out=u)
    o = out.view(np.uint32)
    np.bitwise_or(o, u, out=o)


def _erf_block(x: np.ndarray, outs: list[np.ndarray], s: list[np.ndarray]) -> None:
    out, (a, t) = outs[0], s
    np.absolute(x, out=a)
    np.multiply(a, _AS_P, out=t)
    t += 1
    np.divide(1.0, t, out=t)
    _as_tail(t, out, _AS_A)
    np.multiply(a, a, out=a)
    np.negative(a, out=a)
    np.exp(a, out=a)
    out *= a
    np.subtract(1.0, out, out=out)
    _set_sign(out, x, a)


def erf(x: Array) -> Array:
    """Gauss error function. float64 is exact (math.erf per element, slow); other dtypes use
    Abramowitz-Stegun 7.1.26 in float32 (absolute error < 1.5e-7, float32's scale)."""
    if x.dtype == np.float64:
        return np.asarray(_erf64(x), np.float64)
    if x.dtype != np.float32:
        return cast(erf(x.astype(np.float32)), x.dtype)
    return _blocked(_erf_block, x, 1, 2)[0]


_SQRT1_2 = 1 / math.sqrt(2)
_INV_SQRT_2PI = 1 / math.sqrt(2 * math.pi)
_GELU_A = tuple(0.5 * c for c in _AS_A)  # Phi(-|x|) = 0.5 erfc(|x|/sqrt 2): the 0.5 folded in
_TANH_C = math.sqrt(2 / math.pi)


# Phi(-|x|) = t P(t) exp(-x^2/2) with t = 1 / (1 + p |x| / sqrt 2) (Abramowitz-Stegun 7.1.26, the
# 0.5 of Phi folded in). Scaled to t' = s t with s^5 = a5 / 2, P is monic in t' (Horner saves its
# first multiply), and t' = K2 / (-|x|/2 - K) comes from -|x|/2, which also gives -x^2/2: 23 passes
# over a block for output and derivative instead of 25. The constants are 0-d float32 arrays (the
# kernel runs on float32 only): NumPy takes them faster than Python floats, 4% of the kernel.
_GELU_S = _GELU_A[4] ** 0.2
_GELU_K = math.sqrt(2) / (2 * _AS_P)
_G32 = {name: np.array(v, np.float32) for name, v in [
    ("K", _GELU_K), ("K2", -_GELU_S * _GELU_K), ("half", 0.5), ("-half", -0.5), ("c", _INV_SQRT_2PI)]}
_GELU_B = [np.array(c * _GELU_S ** -(i + 1), np.float32) for i, c in enumerate(_GELU_A[:4])]  # of t'^1 .. t'^4


def _gelu_block(x: np.ndarray, outs: list[np.ndarray], s: list[np.ndarray]) -> None:
    """out = x Phi(x) and, when asked, its derivative Phi(x) + x phi(x), in one pass over a float32
    block."""
    out, deriv = outs[0], (outs[1] if len(outs) > 1 else None)
    h, t, q = s
    c = _G32
    a = out  # |x| lives in the output until the output is written
    np.absolute(x, out=a)
    np.multiply(a, c["-half"], out=h)
    np.subtract(h, c["K"], out=t)
    np.divide(c["K2"], t, out=t)  # t'
    np.multiply(a, h, out=h)
    np.exp(h, out=h)  # exp(-x^2/2), shared by Phi and its derivative
    np.add(t, _GELU_B[3], out=q)
    for b in _GELU_B[2::-1]:
        np.multiply(q, t, out=q)
        np.add(q, b, out=q)
    np.multiply(q, t, out=q)
    np.multiply(q, h, out=q)  # Phi(-|x|)
    np.subtract(c["half"], q, out=q)
    _set_sign(q, x, t)
    np.add(q, c["half"], out=q)  # Phi(x) = 0.5 + copysign(0.5 - Phi(-|x|), x)
    np.multiply(x, q, out=out)
    if deriv is not None:
        np.multiply(x, h, out=deriv)
        np.multiply(deriv, c["c"], out=deriv)
        np.add(deriv, q, out=deriv)


def _gelu_tanh_block(x: np.ndarray, outs: list[np.ndarray], s: list[np.ndarray]) -> None:
    """The tanh approximation: Phi(x) ~ (1 + tanh(c (x + 0.044715 x^3))) / 2, and its derivative."""
    out, deriv = outs[0], (outs[1] if len(outs) > 1 else None)
    x2, u, h = s
    np.multiply(x, x, out=x2)
    np.multiply(x2, _TANH_C * 0.044715, out=u)
    u += _TANH_C
    u *= x
    np.tanh(u, out=u)
    np.multiply(u, 0.5, out=h)
    h += 0.5  # Phi
    np.multiply(x, h, out=out)
    if deriv is not None:
        # d/dx = Phi + x (1 - tanh^2) c (1 + 3 * 0.044715 x^2) / 2
        np.multiply(u, u, out=u)
        np.subtract(1.0, u, out=u)
        u *= x
        x2 *= 0.5 * _TANH_C * 3 * 0.044715
        x2 += 0.5 * _TANH_C
        u *= x2
        np.add(u, h, out=deriv)


def gelu(x: Array, approximate: str, deriv: bool) -> tuple[Array, Array | None]:
    """GELU of a float array, x * Phi(x), and (if ``deriv``) its derivative, each in one blocked
    pass. 'none' is exact through erf (as ``erf`` above for float32; float64 exact); 'tanh' is the
    tanh approximation."""
    if x.dtype == np.float64 and approximate == "none":  # exact: no approximation of erf
        phi = multiply(add(erf(multiply(x, _SQRT1_2)), 1.0), 0.5)
        d = add(phi, multiply(x, multiply(exp(multiply(multiply(x, x), -0.5)), _INV_SQRT_2PI))) if deriv else None
        return multiply(x, phi), d
    if x.dtype not in (np.float32, np.float64):
        out, d = gelu(x.astype(np.float32), approximate, deriv)
        return cast(out, x.dtype), (None if d is None else cast(d, x.dtype))
    kernel = _gelu_block if approximate == "none" else _gelu_tanh_block
    res = _blocked(kernel, x, 2 if deriv else 1, 3)
    return res[0], (res[1] if deriv else None)


_LN_BLOCK = 1 << 16  # entries per block of layer_norm_backward_: fewer, larger blocks pay there (fewer calls)


def _row_outer(left: np.ndarray, r: np.ndarray, right: np.ndarray, out: np.ndarray) -> np.ndarray:
    """out[i, j] = r[i] * right[0, j] for a (k, 1) column r: one BLAS product of (k, 2) by (2, n)
    (``left``'s second column and ``right``'s second row are zeros). NumPy's own loop takes a K = 1
    product (9x slower), and a broadcast multiply of r by a row runs a slow strided loop."""
    np.copyto(left[:, :1], r)
    return np.matmul(left, right, out=out)


def layer_norm_backward_(g: Array, xhat: Array, rstd: Array, w: Array | None, inv_n: float,
                         need: tuple[bool, bool, bool]) -> tuple[Array | None, Array | None, Array | None]:
    """The gradients (input, weight, bias) of a layer norm over the rows of (N, n) arrays, as
    ``need`` asks: gx = rstd (g w - mean(g w) - xhat mean(g w xhat)) (w: (n,) or None), written
    over ``xhat`` (when asked for), gw = column sums of g xhat, gb = column sums of g. Done by
    blocks of rows, so each block's passes run in cache and no full-size array is made (a fresh
    one's memory is cold: writing it costs as much as the arithmetic). Every row and column sum is
    a BLAS matrix-vector product (over g, or over p = g xhat), and rstd w enters as one
    outer-product matrix: g w is never formed, and only two passes broadcast a column."""
    N, n = xhat.shape
    rows = max(1, min(N, _LN_BLOCK // max(n, 1)))
    dt = xhat.dtype
    ones = _ones(max(n, rows), dt)
    wv = ones[:n] if w is None else w
    gw: Any = None
    gb: Any = None
    col: Any = None
    if need[1] or need[2]:
        col = empty((n,), dt)
    if need[1]:
        gw = zeros((n,), dt)
    if need[2]:
        gb = zeros((n,), dt)
    if need[0] or need[1]:
        p = empty((rows, n), dt)
    if need[0]:
        a, c = empty((rows, 1), dt), empty((rows, 1), dt)
        left, right = zeros((rows, 2), dt), zeros((2, n), dt)
        right[0] = wv
    for i in range(0, N, rows):
        gc = g[i:i + rows]
        k = gc.shape[0]
        xc, r = xhat[i:i + k], rstd[i:i + k]
        if need[2]:
            np.matmul(ones[:k], gc, out=col)  # column sums by BLAS (see _sum_gemv)
            gb += col
        if not (need[0] or need[1]):
            continue
        pk = p[:k]
        np.multiply(gc, xc, out=pk)
        if need[1]:
            np.matmul(ones[:k], pk, out=col)
            gw += col
        if not need[0]:
            continue
        ak, ck = a[:k], c[:k]
        np.matmul(gc, wv, out=ak.reshape(-1))  # sum_j g w
        np.matmul(pk, wv, out=ck.reshape(-1))  # sum_j g w xhat
        # gx = g (rstd w) - rstd mean(g w) - xhat rstd mean(g w xhat)
        ak *= r
        ak *= -inv_n
        ck *= r
        ck *= -inv_n
        xc *= ck
        xc += ak
        rk = _row_outer(left[:k], r, right, pk)  # (p is spent: its block takes rstd w)
        rk *= gc
        xc += rk
    return (xhat if need[0] else None), gw, gb
