"""Fused kernels: GELU (with its derivative), layer norm forward and backward, ReLU and its mask,
the Adam update, 2x2 max pooling, one LSTM or GRU step's gate math and whole LSTM and GRU layers'
time loops. Each runs the native kernel (backend/native) on a float32 C-contiguous array and
otherwise its NumPy path: erf and GELU in one blocked pass each, the layer norm by blocks of rows
(the recurrent layers keep their own NumPy gate math)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from . import native
from .elementwise import (add, cast, copy, divide, empty, exp, iadd, imul, less_equal, logical_not, mask, maximum, multiply,
                          sqrt, subtract, zeros)
from .reductions import _ones, reduce, rowdot
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


def _native(x: Any) -> Any:
    """The native kernels if they take ``x`` (a float32, C-contiguous, large enough array), else None."""
    k = native.kernels
    if k is None or type(x) is not np.ndarray or x.dtype != np.float32 or x.size < native.MIN_SIZE \
            or not x.flags.c_contiguous:
        return None
    return k


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
    k = _native(x)
    if k is not None:  # one pass; its erf is more accurate than the blocked one (see kernels.c)
        out, dv = empty(x.shape, x.dtype), (empty(x.shape, x.dtype) if deriv else None)
        k.gelu(x, out, dv, approximate == "tanh")
        return out, dv
    kernel = _gelu_block if approximate == "none" else _gelu_tanh_block
    res = _blocked(kernel, x, 2 if deriv else 1, 3)
    return res[0], (res[1] if deriv else None)


def layer_norm(x: Array, w: Array | None, b: Array | None, eps: float) -> tuple[Array, Array, Array]:
    """(out, xhat, rstd): the layer norm of the rows of a 2-D array, xhat = (x - mean) rstd with
    rstd = 1 / sqrt(var + eps) as an (N, 1) column, and out = xhat w + b (w, b: (n,) or None) as a
    fresh array (never xhat itself, which the caller saves)."""
    N, n = x.shape
    k = _native(x)
    if k is not None and (w is None or _native(w) is not None) and (b is None or _native(b) is not None):
        out, xhat, rstd = empty(x.shape, x.dtype), empty(x.shape, x.dtype), empty((N, 1), x.dtype)
        k.layer_norm(x, w, b, out, xhat, rstd, n, eps)
        return out, xhat, rstd
    # rows of n entries: row sums are matrix-vector products, row dot products einsums, and the
    # full-size temporaries are updated in place (two allocations instead of five)
    inv_n = 1.0 / max(n, 1)
    xc = subtract(x, multiply(reduce(add, x, (1,), True), inv_n))
    var = multiply(rowdot(xc, xc), inv_n)
    rstd = divide(1.0, sqrt(add(var, eps)))
    xhat = imul(xc, rstd)
    if w is None and b is None:
        return copy(xhat), xhat, rstd
    out = multiply(xhat, w) if w is not None else copy(xhat)
    if b is not None:
        iadd(out, b)
    return out, xhat, rstd


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
    k = _native(xhat)
    if k is not None and _native(g) is not None and _native(rstd) is not None and (w is None or _native(w) is not None):
        cw, cb = (empty((n,), xhat.dtype) if need[1] else None), (empty((n,), xhat.dtype) if need[2] else None)
        k.layer_norm_backward(g, xhat, rstd, w, xhat if need[0] else None, cw, cb, n)
        return (xhat if need[0] else None), cw, cb
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


# ---- ReLU --------------------------------------------------------------------------------------

def relu(x: Array) -> Array:
    """max(x, 0), as PyTorch's clamp_min: NaN stays NaN (and the kernel keeps -0.0, as PyTorch)."""
    k = _native(x)
    if k is not None:
        out = empty(x.shape, x.dtype)
        k.relu(x, out)
        return out
    return maximum(x, x.dtype.type(0))


def relu_backward(g: Array, out: Array) -> Array:
    """ReLU's input gradient from its output, PyTorch's threshold_backward: 0 where out <= 0, else g
    (so a NaN output passes its gradient, as PyTorch's does)."""
    k = _native(out)
    if k is not None and _native(g) is not None and g.shape == out.shape:
        gx = empty(out.shape, out.dtype)
        k.relu_backward(g, out, gx)
        return gx
    return mask(g, logical_not(less_equal(out, 0)))


# How a compiled replay calls these into its planned buffer (see reductions' ``raw``): the native
# kernel when it takes the arrays, else NumPy's own call; the gradient only where the kernel took
# the traced arrays (NumPy's mask needs a temporary the plan does not hold).
def _relu_into(x: np.ndarray, out: np.ndarray) -> np.ndarray:
    k = _native(x)
    if k is not None and _native(out) is not None and out.shape == x.shape:
        k.relu(x, out)
        return out
    return np.maximum(x, x.dtype.type(0), out=out)


def _relu_backward_into(g: np.ndarray, y: np.ndarray, out: np.ndarray) -> np.ndarray:
    k = _native(y)
    if k is not None and _native(g) is not None and _native(out) is not None and g.shape == y.shape == out.shape:
        k.relu_backward(g, y, out)
        return out
    return np.multiply(g, np.logical_not(np.less_equal(y, 0)), out=out, dtype=g.dtype)


relu.raw = lambda x: (_relu_into, (0,), {}) if isinstance(x, np.ndarray) else None  # type: ignore[attr-defined]
relu_backward.raw = lambda g, y: (  # type: ignore[attr-defined]
    (_relu_backward_into, (0, 1), {}) if _native(y) is not None and _native(g) is not None and g.shape == y.shape
    else None)


# ---- Adam --------------------------------------------------------------------------------------

def adam_(p: Array, g: Array, m: Array, v: Array, vmax: Array | None, shrink: float | None, wd: float,
          maximize: bool, lerp_mode: bool, lerp_k: float, beta2: float, one_minus_beta2: float, neg_step: float,
          eps: float) -> bool:
    """The Adam update of one chunk of flat float32 buffers in place, in one native pass, with the
    float32 operations of the optimizer's NumPy rule in their order (so its results are the same):
    p *= shrink (decoupled decay, None: none); the gradient used, -g if ``maximize`` and + wd p;
    exp_avg m by lerp (``lerp_mode``: g - (g - m) lerp_k, else m + (g - m) lerp_k); exp_avg_sq v =
    beta2 v + (1 - beta2) g g; vmax = max(vmax, v) (amsgrad, else None); p += m neg_step /
    (sqrt(v or vmax) + eps). Returns False, doing nothing, where the kernel does not take the arrays:
    the caller then runs its NumPy rule."""
    k = _native(p)
    if k is None or _native(g) is None or _native(m) is None or _native(v) is None \
            or (vmax is not None and _native(vmax) is None):
        return False
    k.adam(p, g, m, v, vmax, shrink, wd, maximize, lerp_mode, lerp_k, beta2, one_minus_beta2, neg_step, eps)
    return True


# ---- 2x2 max pooling ---------------------------------------------------------------------------

def max_pool2x2(x: Array) -> tuple[Array, Array] | None:
    """(out, arg): the 2x2 stride-2 max pooling of (N, C, H, W) float32 x in one native pass, with
    each window's winning tap (uint8 0..3, row-major) by PyTorch's rule (ties to the first maximum,
    a NaN always wins, so the last NaN of a window gets its gradient); None where the kernel does
    not take x (the caller pools with NumPy)."""
    k = _native(x)
    if k is None or x.ndim != 4 or x.shape[2] < 2 or x.shape[3] < 2:
        return None
    n, c, h, w = x.shape
    out, arg = empty((n, c, h // 2, w // 2), x.dtype), empty((n, c, h // 2, w // 2), np.uint8)
    k.max_pool2x2(x, out, arg, h, w)
    return out, arg


def max_pool2x2_backward(g: Array, arg: Array, shape: tuple[int, ...]) -> Array | None:
    """The input gradient (of ``shape``) of max_pool2x2 from its taps, or None where the kernel does
    not take g."""
    if type(g) is np.ndarray and not g.flags.c_contiguous:
        g = copy(g)  # (a broadcast gradient, from a mean say): one copy costs less than the NumPy path
    k = _native(g)
    if k is None or g.shape != arg.shape:
        return None
    gx = empty(shape, g.dtype)
    k.max_pool2x2_backward(g, arg, gx, shape[2], shape[3])
    return gx


# ---- LSTM and GRU cells ------------------------------------------------------------------------

def rnn_native(*arrays: Array) -> bool:
    """Whether the native LSTM/GRU step kernels take these arrays (float32, C-contiguous). A layer
    asks once for the arrays it did not make itself, then calls ``lstm_cell``, ``gru_cell`` and
    their backwards at every step; where this is False it runs its NumPy gate math instead."""
    return all(_native(a) is not None for a in arrays)


def lstm_cell(z: Array, zh: Array | None, bias: Array | None, c_prev: Array, c: Array, tanh_c: Array, h: Array,
              h_next: Array | None) -> None:
    """One LSTM step's gate math in one native pass (only after ``rnn_native`` said yes): z (B, 4H)
    holds the pre-activations in PyTorch's gate order with the i, f, o columns halved (plus zh (B, 4H)
    and bias (4H) where given: the input projection in z, the recurrent product in zh) and becomes
    the activated gates; c = f c_prev + i g, tanh_c = tanh(c), h = o tanh_c (all (B, H)), and h is
    also copied into the first H columns of h_next (B, K >= H; None: the last step)."""
    hid = c.shape[-1]
    ld = hid if h_next is None else h_next.shape[-1]
    native.kernels.lstm_cell(z, zh, bias, c_prev, c, tanh_c, h, h_next, hid, ld)  # type: ignore[union-attr]


def lstm_cell_backward(gh: Array, dh: Array, dc: Array, gates: Array, c_prev: Array, tanh_c: Array,
                       dz: Array) -> None:
    """One LSTM step's backward gate math in one native pass (only after ``rnn_native`` said yes):
    from the gradient reaching h from later steps (dh) plus the step's output gradient (gh), the one
    reaching c (dc), and the forward's activated gates, c_prev and tanh_c, the pre-activation
    gradients dz (B, 4H); dc becomes the gradient reaching c_prev (dz W_hh gives h_prev's)."""
    native.kernels.lstm_cell_backward(gh, dh, dc, gates, c_prev, tanh_c, dz, dc.shape[-1])  # type: ignore[union-attr]


def rnn_layer_takes(hid: int, *arrays: Array | None) -> bool:
    """Whether the whole-layer kernels (``lstm_layer``, ``gru_layer`` and their backwards) take a
    layer of this hidden size and these arrays (float32, C-contiguous; None is let through): the
    native kernels built with their small-matrix product for this CPU (AVX2 and FMA) and hid a
    multiple of 32. Where this is False a layer runs ``lstm_cell``/``gru_cell`` (or its NumPy gate
    math) a step at a time."""
    k = native.kernels
    return k is not None and hid % 32 == 0 and bool(k.gemm_variant()) \
        and all(a is None or _native(a) is not None for a in arrays)


def lstm_layer(gates: Array, w_hh: Array, bias: Array | None, h0: Array, c0: Array, cells: Array, tanh_c: Array,
               out: Array, hx: Array, reverse: bool) -> None:
    """A whole LSTM layer's time loop in one native call (only after ``rnn_layer_takes`` said yes):
    gates (T, B, 4H) holds the input projections x_t W_ih^T and becomes the activated gates; each
    step adds bias (b_ih + b_hh, or None) and h_{t-1} W_hh^T (w_hh (4H, H) as PyTorch stores it),
    then does the gate math into cells, tanh_c and out (T + 1, B, H: the last block is left to the
    caller), copying h into hx's next row block (the weight gradients' product reads hx)."""
    hid = h0.shape[-1]
    pack = empty((hid * 4 * hid,), gates.dtype)
    native.kernels.lstm_layer(gates, w_hh, bias, h0, c0, cells, tanh_c, out, hx, pack, hid,  # type: ignore[union-attr]
                              hx.shape[-1], reverse)


def lstm_layer_backward(g: Array, dz: Array, dh: Array, dc: Array, gates: Array, cells: Array, tanh_c: Array,
                        c0: Array, w_hh: Array, reverse: bool) -> None:
    """The backward of ``lstm_layer``'s time loop in one native call (only after ``rnn_layer_takes``
    said yes): g (T + 1, B, H) is the outputs' gradient (its last block, the final cell's, already
    in dc); dh comes in as zeros. Writes each step's pre-activation gradients into dz (T, B, 4H) and
    leaves dh, dc holding the gradients reaching h0 and c0."""
    hid = c0.shape[-1]
    pack = empty((4 * hid * hid,), gates.dtype)
    native.kernels.lstm_layer_backward(g, dz, dh, dc, gates, cells, tanh_c, c0, w_hh, pack,  # type: ignore[union-attr]
                                       hid, reverse)


def gru_layer(xp: Array, w_hh: Array, b_hh: Array | None, h0: Array, gates: Array, hn: Array, out: Array,
              reverse: bool) -> None:
    """A whole GRU layer's time loop in one native call (only after ``rnn_layer_takes`` said yes):
    from the input projections xp (T, B, 3H, with b_ih), each step's h_{t-1} W_hh^T (w_hh (3H, H)),
    then ``gru_cell``'s gate math with b_hh (3H or None) into gates (T, B, 3H), hn and out (T, B, H)."""
    hid = h0.shape[-1]
    hp = empty((h0.shape[0], 3 * hid), xp.dtype)
    pack = empty((3 * hid * hid,), xp.dtype)
    native.kernels.gru_layer(xp, w_hh, b_hh, h0, hp, gates, hn, out, pack, hid, reverse)  # type: ignore[union-attr]


def gru_layer_backward(g: Array, carry: Array, dm: Array, gates: Array, hn: Array, prev: Array, dx: Array,
                       dhp: Array, w_hh: Array, reverse: bool) -> None:
    """The backward of ``gru_layer``'s time loop in one native call (only after ``rnn_layer_takes``
    said yes): g (T, B, H) the outputs' gradient, prev (T, B, H) the state each step started from;
    carry and dm come in as zeros and leave summing to h0's gradient; writes dx and dhp (T, B, 3H),
    the gradients of the input projections and of h W_hh^T + b_hh."""
    hid = carry.shape[-1]
    pack = empty((3 * hid * hid,), gates.dtype)
    native.kernels.gru_layer_backward(g, carry, dm, gates, hn, prev, dx, dhp, w_hh, pack,  # type: ignore[union-attr]
                                      hid, reverse)


def gru_cell(xp: Array, hp: Array, b_hh: Array | None, h_prev: Array, gates: Array, hn: Array, h: Array) -> None:
    """One GRU step's gate math in one native pass (only after ``rnn_native`` said yes): from the
    step's input projection xp (B, 3H, with b_ih), the product hp = h_prev W_hh^T (B, 3H) and b_hh
    (3H or None), the gates r, u = sigmoid(xp + hp + b_hh) and n = tanh(xp_n + r hn) into gates
    (B, 3H), hn = hp_n + b_hn, and h = (h_prev - n) u + n (all (B, H))."""
    native.kernels.gru_cell(xp, hp, b_hh, h_prev, gates, hn, h, h.shape[-1])  # type: ignore[union-attr]


def gru_cell_backward(gh: Array, carry: Array, dm: Array, gates: Array, hn: Array, h_prev: Array, dx: Array,
                      dhp: Array) -> None:
    """One GRU step's backward gate math in one native pass (only after ``rnn_native`` said yes):
    the gradient reaching h is carry + dm + gh (carry: the part through u from the later step; dm:
    the later step's dhp W_hh; gh: the step's output gradient); writes dx (B, 3H), the input
    projection's gradient, and dhp (B, 3H), that of h_prev W_hh^T + b_hh, and carry becomes the
    gradient times u (h_prev's gradient is carry + dhp W_hh)."""
    native.kernels.gru_cell_backward(gh, carry, dm, gates, hn, h_prev, dx, dhp, carry.shape[-1])  # type: ignore[union-attr]
