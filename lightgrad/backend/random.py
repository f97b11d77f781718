"""PyTorch's CPU random generator, bit for bit: the mt19937 engine, its state bytes, and the transforms
ATen's CPU kernels apply to its words (uniform, normal, integers, bernoulli, exponential, ...).

Facts carried over from ATen (core/MT19937RNGEngine.h, CPUGeneratorImpl.cpp, core/DistributionsHelper.h,
core/TransformationHelper.h, native/cpu/DistributionTemplates.h, native/TensorFactories.cpp) and checked
against torch 2.13 on this machine (tests/test_random_streams.py):

- The engine is mt19937 seeded by ``init_genrand(seed & 0xffffffff)``; NumPy's ``MT19937`` with its legacy
  seeding is that engine, and ``random_raw`` gives its 32-bit words without a Python loop. ``random64``
  joins two words, the first one high.
- A float uniform is the low 24 bits of one word times 2**-24, a double the low 53 bits of a random64
  times 2**-53, then ``fma(x, to - from, from)``: ATen's kernels are compiled with FMA contraction, so
  every ``a * b + c`` of theirs is one rounding here too (``_fma32``/``_fma64`` emulate it exactly).
- normal_ on 16 or more contiguous elements fills uniforms, then Box-Muller per block of 16 (the last
  block recomputed from 16 fresh uniforms when the size is not a multiple of 16); float32 takes ATen's
  AVX2 kernel (the AVX-512 build keeps it, see REGISTER_NO_AVX512_DISPATCH), whose log and sincos are
  Cephes polynomials in float32, reproduced here operation for operation with the same fusions. Below
  16 elements, or strided, each value comes from the double Box-Muller pair whose second half waits in
  the generator (``next_double``, part of its state) for the next draw.
- Double results of log, log1p, exp, tan come from glibc's libm (through ``math``), as ATen's do: NumPy's
  own SIMD versions differ from glibc in the last bit for about 1 value in 600 (log) to 1 in 11
  (log1p). Float results round those away, so float samplers use NumPy's (a flip needs a double error
  within an ulp of a float rounding boundary: about 1 in 10**8).
- bernoulli_(p) takes the double path, as ATen does on non-Intel CPUs; on Intel CPUs PyTorch's MKL
  build draws one word and runs MKL's own stream instead (not reproduced).
- A fill of a strided array runs in TensorIterator's order: memory order, the largest stride outermost.

Where the native kernels are built (native.random, from native/random.c), the mt19937 words (on
NumPy's own MT19937 state: 2M words 0.47 ms against 5.6 through NumPy), the float Box-Muller, the
randperm swaps and the per-element glibc calls run there, with the same values as the NumPy code here
(tests/test_native_random.py compares the two bit for bit).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from . import native
from .shapes import Array
from .threads import parallel

DEFAULT_SEED = 67280421310721  # a fresh process's seed, as PyTorch's default_rng_seed_val
STATE_BYTES = 5056  # sizeof(CPUGeneratorImplState)
_N = 624  # mt19937's state words

# CPUGeneratorImplState, little-endian x86-64 layout: the legacy THGeneratorState, then the float cache
STATE_DTYPE = np.dtype([("seed", "<u8"), ("left", "<i4"), ("seeded", "<i4"), ("next", "<u8"),
                        ("state", "<u8", (_N,)), ("normal_x", "<f8"), ("normal_y", "<f8"),
                        ("normal_rho", "<f8"), ("normal_is_valid", "<i4"), ("pad", "<i4"),
                        ("next_float", "<f4"), ("next_float_valid", "u1"), ("pad2", "u1", (3,))])
assert STATE_DTYPE.itemsize == STATE_BYTES

_U32 = np.uint64(0xFFFFFFFF)
_F32, _F64 = np.dtype(np.float32), np.dtype(np.float64)


_mt_layout: list[bool | None] = [None]  # NumPy's MT19937 state layout checked (None: not yet)


def _mt_layout_checked(k: Any) -> bool:
    """Whether random.c's mt_words reads NumPy's MT19937 state as NumPy does (its layout is NumPy's
    internal struct): checked once, on scratch generators, across a key regeneration."""
    if _mt_layout[0] is None:
        a, b = np.random.MT19937(0), np.random.MT19937(0)
        a.random_raw(600)
        b.random_raw(600)
        out = np.empty(700, np.uint32)
        k.mt_words(a.ctypes.state_address, out)
        _mt_layout[0] = bool(np.array_equal(out, b.random_raw(700).astype(np.uint32))
                             and a.random_raw() == b.random_raw())
    return bool(_mt_layout[0])


class Engine:
    """One mt19937 stream with PyTorch's CPU generator's state: seed, words, and the cached normal."""

    __slots__ = ("_bg", "_words", "_seed", "_fresh", "next_double", "next_float")

    def __init__(self, seed: int = DEFAULT_SEED) -> None:
        self._bg: Any = None  # NumPy's MT19937, made on first draw: numpy.random imports slowly
        self._words: Any = None  # its Generator's ``integers``: the raw words, faster than random_raw
        self.manual_seed(seed)

    def manual_seed(self, seed: int) -> None:
        self._seed = seed
        self._bg = None
        self._fresh = True  # seeded, nothing drawn: PyTorch's state says next=0 rather than 624
        self.next_double: float | None = None
        self.next_float: float | None = None

    def initial_seed(self) -> int:
        return self._seed

    @property
    def bg(self) -> Any:
        if self._bg is None:
            bg = np.random.MT19937(0)
            bg._legacy_seeding(self._seed & 0xFFFFFFFF)  # init_genrand, as mt19937's constructor
            self._bg = bg
            self._words = np.random.Generator(bg).integers
        return self._bg

    # ---- words ------------------------------------------------------------------------------------
    def random(self, n: int) -> Array:
        """``n`` 32-bit words (a uint64 or uint32 array), as CPUGeneratorImpl::random (the full-range
        uint32 ``integers`` of NumPy's Generator is mt19937's words, one each)."""
        self._fresh = False
        if n < 4096:  # (random_raw calls cheaply; integers makes the words faster)
            return self.bg.random_raw(n)
        bg = self.bg
        k = native.random
        if k is not None and _mt_layout_checked(k):  # native mt19937 on NumPy's own state: the same words
            out = np.empty(n, np.uint32)
            k.mt_words(bg.ctypes.state_address, out)
            return out
        return self._words(0, 1 << 32, n, np.uint32)

    def random64(self, n: int) -> Array:
        """``n`` 64-bit words, as CPUGeneratorImpl::random64: the first word of each pair is high."""
        w = self.random(2 * n)
        if w.dtype == np.uint64:
            return (w[0::2] << np.uint64(32)) | w[1::2]
        x = w.view(np.uint64)  # (little-endian: each holds its pair's low word first)
        return (x << np.uint64(32)) | (x >> np.uint64(32))

    # ---- state --------------------------------------------------------------------------------------
    def get_state(self) -> Array:
        """The state as PyTorch's 5056 bytes (uint8 array)."""
        st = np.zeros((), STATE_DTYPE)
        s = self.bg.state["state"]
        pos = int(s["pos"])
        st["seed"] = self._seed
        st["seeded"] = 1
        st["state"] = s["key"]
        # PyTorch reads word `next` after decrementing `left` to 0 triggers the twist; NumPy's `pos` is both
        if pos >= _N:
            st["left"], st["next"] = 1, 0 if self._fresh else _N
        else:
            st["left"], st["next"] = _N + 1 - pos, pos
        if self.next_double is not None:
            st["normal_is_valid"], st["normal_y"] = 1, self.next_double
        if self.next_float is not None:
            st["next_float_valid"], st["next_float"] = 1, self.next_float
        return np.frombuffer(st.tobytes(), np.uint8).copy()

    def set_state(self, data: Array) -> None:
        """Restore from PyTorch's state bytes (validated by the caller's size check)."""
        st = np.frombuffer(np.ascontiguousarray(data, np.uint8).tobytes(), STATE_DTYPE)[0]
        left, nxt = int(st["left"]), int(st["next"])
        if not (st["seeded"] and 0 < left <= _N and nxt <= _N):
            raise RuntimeError("Invalid mt19937 state")
        bg = self.bg
        pos = _N if left == 1 else nxt
        bg.state = {"bit_generator": "MT19937",
                    "state": {"key": st["state"].astype(np.uint32), "pos": pos}}
        self._seed = int(st["seed"])
        self._fresh = left == 1 and nxt == 0
        self.next_double = float(st["normal_y"]) if st["normal_is_valid"] else None
        self.next_float = float(st["next_float"]) if st["next_float_valid"] else None


# ---- exact arithmetic: ATen's fused multiply-adds ------------------------------------------------

def _two_sum(a: Array, b: Array) -> tuple[Array, Array]:
    s = a + b
    bp = s - a
    return s, (a - (s - bp)) + (b - bp)


def _odd(s: Array, e: Array) -> Array:
    """s rounded to odd given its error e: the neighbour toward e when s is inexact and even. A sum
    rounded to odd at 53 bits rounds correctly to fewer bits, and into the next sum (Boldo-Melquiond)."""
    bits = np.array(s, np.float64, copy=True).view(np.int64)
    fix = (e != 0) & ((bits & 1) == 0)
    if fix.any():
        bits[fix] += np.where((e[fix] > 0) == (s[fix] > 0), 1, -1)
    return bits.view(np.float64)


def _fma32(a: Any, b: Any, c: Any) -> Array:
    """float32 fma(a, b, c), one rounding: the product is exact in double and the double sum rounds
    to float32 correctly unless it lands on a float32 midpoint, where it is redone rounded to odd."""
    s = np.multiply(a, b, dtype=np.float64)
    s += c
    r = s.astype(np.float32)
    tie = (s.view(np.uint64) & np.uint64(0x1FFFFFFF)) == np.uint64(0x10000000)
    if tie.any():  # (rare, and mostly exact sums, which the redo leaves as they are)
        at = np.flatnonzero(tie)
        a, b, c = (np.ravel(np.broadcast_to(v, s.shape))[at].astype(np.float64) if np.ndim(v) else np.float64(v)
                   for v in (a, b, c))
        t, e = _two_sum(a * b, np.broadcast_to(c, at.shape))
        r.reshape(-1)[at] = _odd(t, e).astype(np.float32)
    return r


def _split(a: Array) -> tuple[Array, Array]:
    t = 134217729.0 * a  # 2**27 + 1: Dekker's split into two 26-bit halves
    h = t - (t - a)
    return h, a - h


def _fma64(a: Any, b: Any, c: Any) -> Array:
    """float64 fma(a, b, c), one rounding: an exact product, an exact sum, the tail rounded to odd."""
    a, b, c = (np.asarray(v, np.float64) for v in np.broadcast_arrays(a, b, c))
    p = a * b
    ah, al = _split(a)
    bh, bl = _split(b)
    pe = ((ah * bh - p) + ah * bl + al * bh) + al * bl
    th, tl = _two_sum(c, p)
    v, ve = _two_sum(tl, pe)
    return th + _odd(v, ve)


def _fma(a: Array, b: float, c: float, dt: np.dtype) -> Array:
    """fma in ``dt`` (float32 or float64), skipping the emulation where it is a plain product."""
    if c == 0:
        return a * dt.type(b) + dt.type(0) if b != 1 else a + dt.type(0)
    return _fma32(a, np.float32(b), np.float32(c)) if dt == _F32 else _fma64(a, b, c)


def _c_log(v: float) -> float:
    """glibc's log as C calls it: -inf at 0 and NaN below (where ``math.log`` raises)."""
    return math.log(v) if v > 0 else -math.inf if v == 0 else math.nan


def _c_exp(v: float) -> float:
    """glibc's exp as C calls it: inf past the range (where ``math.exp`` raises)."""
    try:
        return math.exp(v)
    except OverflowError:
        return math.inf


# the native kernel's number for each function (random.c's libm: the same glibc functions)
_LIBM_OPS = {math.log: 0, _c_log: 0, math.log1p: 1, math.exp: 2, _c_exp: 2, math.tan: 3, math.cos: 4, math.sin: 5}


def _libm(f: Any, x: Array) -> Array:
    """glibc's double ``f`` per element (ATen's results), for double outputs."""
    k = native.random
    if k is not None:
        x = np.ascontiguousarray(x, np.float64)
        out = np.empty(x.shape, np.float64)
        k.libm(_LIBM_OPS[f], x, out)
        return out
    flat = np.ravel(x)
    return np.fromiter(map(f, flat.tolist()), np.float64, flat.size).reshape(np.shape(x))


# ---- uniforms --------------------------------------------------------------------------------------

def _u24(words: Array) -> Array:
    """Float uniforms from 32-bit words: the low 24 bits times 2**-24."""
    x = (words & words.dtype.type(0xFFFFFF)).astype(np.float32)
    x *= np.float32(2.0 ** -24)
    return x


def _u53(words: Array) -> Array:
    """Double uniforms from 64-bit words: the low 53 bits times 2**-53."""
    x = (words & np.uint64((1 << 53) - 1)).view(np.int64).astype(np.float64)  # (signed: NumPy converts it faster)
    x *= 2.0 ** -53
    return x


def _opmath(dt: np.dtype) -> np.dtype:
    """ATen's opmath type: float64 stays, every other float computes in float32."""
    return _F64 if dt == _F64 else _F32


# ---- the order a fill runs in -------------------------------------------------------------------

def _perm(out: Array) -> list[int]:
    """TensorIterator's order of out's dimensions: by stride, largest first (size-1 ones anywhere)."""
    return sorted(range(out.ndim), key=lambda d: -abs(out.strides[d]) if out.shape[d] > 1 else 0)


def _iter_view(out: Array) -> Array:
    """A view of ``out`` whose C order is TensorIterator's for it."""
    return out if out.flags.c_contiguous else out.transpose(_perm(out))


def _narrow(v: Array, dt: np.dtype) -> Array:
    """A double result in ``dt`` as ATen's ``static_cast``: half and bfloat16 through float."""
    if dt.itemsize == 2 and dt != np.int16 and dt != np.uint16:
        v = v.astype(_F32)
    return v.astype(dt, copy=False)


def _store(out: Array, values: Array) -> None:
    v = _iter_view(out)
    v[...] = values.reshape(v.shape)


# ---- samplers: each fills ``out`` (any float or int dtype as ATen allows) --------------------------

def uniform_(eng: Engine, out: Array, low: float, high: float) -> None:
    """U(low, high), as uniform_kernel: a value that rounds up to ``high`` becomes ``low``."""
    n, dt = out.size, out.dtype
    if n == 0:
        return
    if n <= 16 and low == 0 and high == 1 and dt == _F32 and out.flags.c_contiguous:  # rand(): a few words
        out.reshape(-1)[...] = [(w & 0xFFFFFF) * 2.0 ** -24 for w in eng.random(n).tolist()]
        return
    op = _opmath(dt)
    lo, hi = op.type(low), op.type(high)
    x = _u53(eng.random64(n)) if op == _F64 else _u24(eng.random(n))
    width = hi - lo
    if lo == 0 and width == 1 and op == dt:
        v = x  # (below 1: nothing rounds up to ``high``)
    else:
        v = _fma(x, float(width), float(lo), op).astype(dt, copy=False)
        v[v == dt.type(high)] = dt.type(low)
    _store(out, v)


# float32 Box-Muller: ATen's AVX2 kernel (log256_ps, sincos256_ps of avx_mathfun.h, Cephes polynomials)
_LOG_P = [np.float32(c) for c in (7.0376836292e-2, -1.1514610310e-1, 1.1676998740e-1, -1.2420140846e-1,
                                  1.4249322787e-1, -1.6668057665e-1, 2.0000714765e-1, -2.4999993993e-1,
                                  3.3333331174e-1)]
_LOG_Q1, _LOG_Q2 = np.float32(-2.12194440e-4), np.float32(0.693359375)
_SQRTHF = np.float32(0.707106781186547524)
_DP = [np.float32(c) for c in (-0.78515625, -2.4187564849853515625e-4, -3.77489497744594108e-8)]
_SIN_P = [np.float32(c) for c in (-1.9515295891e-4, 8.3321608736e-3, -1.6666654611e-1)]
_COS_P = [np.float32(c) for c in (2.443315711809948e-005, -1.388731625493765e-003, 4.166664568298827e-002)]
_FOPI = np.float32(1.27323954473516)  # 4 / pi
_TWO_PI32 = np.float32(2.0 * math.pi)
_HALF, _ONE = np.float32(0.5), np.float32(1.0)


def _log_ps(x: Array) -> Array:
    """log256_ps for x in (0, 1]: exponent and mantissa split, a degree-9 polynomial, fused as GCC fuses it."""
    bits = np.maximum(x, np.float32(1.1754944e-38)).view(np.uint32)
    e = ((bits >> np.uint32(23)).astype(np.int32) - 127).astype(np.float32) + _ONE
    m = ((bits & np.uint32(0x807FFFFF)) | np.uint32(0x3F000000)).view(np.float32)  # mantissa in [0.5, 1)
    low = m < _SQRTHF
    m = (m - _ONE) + np.where(low, m, np.float32(0))
    e = e - low.astype(np.float32)
    z = m * m
    y = _fma32(_LOG_P[0], m, _LOG_P[1])
    for p in _LOG_P[2:]:
        y = _fma32(y, m, p)
    y = _fma32(y * m, z, e * _LOG_Q1)
    y = y - z * _HALF
    return _fma32(e, _LOG_Q2, m + y)


def _sincos_ps(x: Array) -> tuple[Array, Array]:
    """sincos256_ps for x >= 0: octant by 4/pi, a three-part reduction, two polynomials, fused as GCC does."""
    j = (x * _FOPI).astype(np.int32)
    j = (j + 1) & ~1
    y = j.astype(np.float32)
    for d in _DP:
        x = _fma32(y, d, x)
    z = x * x
    c = _fma32(_fma32(_COS_P[0], z, _COS_P[1]), z, _COS_P[2])
    c = _fma32(c * z, z, -(z * _HALF)) + _ONE
    s = _fma32(_fma32(_SIN_P[0], z, _SIN_P[1]), z, _SIN_P[2])
    s = _fma32(s * z, x, x)
    first = (j & 2) == 0  # which polynomial is the sine
    sin: Array = np.where(first, s, c)
    cos: Array = np.where(first, c, s)
    # the signs, flipped by bit 2 of the octant (the sine's) and of the octant - 2 (the cosine's)
    sin.view(np.uint32)[...] ^= (j & 4).astype(np.uint32) << np.uint32(29)
    cos.view(np.uint32)[...] ^= (~(j - 2) & 4).astype(np.uint32) << np.uint32(29)
    return sin, cos


_ROWS = 2048  # rows of 16 per block: each pass over a block stays in the CPU cache


def _box_muller16_f32(u: Array) -> Array:
    """ATen's float NormalFill16 on rows of 16 uniforms: 8 radii from the first half, 8 angles from
    the second; block by block, the blocks shared out to the worker threads."""
    out = np.empty(u.shape, np.float32)
    r = _ROWS
    parallel(lambda lo, hi: (_box_muller_rows, (u[lo * r:hi * r], out[lo * r:hi * r]), {}), -(-u.shape[0] // r))
    return out


def _box_muller_rows(u: Array, out: Array) -> None:
    with np.errstate(all="ignore"):
        for i in range(0, u.shape[0], _ROWS):
            blk = u[i:i + _ROWS]
            radius = np.sqrt(np.float32(-2.0) * _log_ps(_ONE - blk[:, :8]))
            sin, cos = _sincos_ps(_TWO_PI32 * blk[:, 8:])
            np.multiply(radius, cos, out=out[i:i + _ROWS, :8])
            np.multiply(radius, sin, out=out[i:i + _ROWS, 8:])


def _box_muller16_f64(u: Array) -> Array:
    """ATen's double NormalFill16 (glibc log; NumPy's cos and sin are glibc's on x86-64, and slower
    than the native kernel's calls to them)."""
    radius = np.sqrt(-2.0 * _libm(math.log, 1.0 - u[:, :8]))
    theta = (2.0 * math.pi) * u[:, 8:]
    if native.random is not None:
        return np.concatenate([radius * _libm(math.cos, theta), radius * _libm(math.sin, theta)], 1)
    return np.concatenate([radius * np.cos(theta), radius * np.sin(theta)], 1)


def _normal_blocks(eng: Engine, n: int, dt: np.dtype) -> Array:
    """normal_fill's standard normals for n >= 16 contiguous values of ``dt``, in opmath precision."""
    op = _opmath(dt)
    draw = (lambda k: _u53(eng.random64(k))) if op == _F64 else (lambda k: _u24(eng.random(k)))
    bm = _box_muller16_f64 if op == _F64 else _box_muller16_f32
    full = n - n % 16
    # float and double fill all n uniforms first; half and bfloat16 only the whole blocks. The last
    # block, when recomputed from 16 fresh uniforms, goes through the same call as the others
    u = draw(n if op == dt else full)[:full]
    if n % 16:
        u = np.concatenate([u, draw(16)])
    v = bm(u.reshape(-1, 16)).ravel()
    if n % 16 == 0:
        return v
    out = np.empty(n, op)
    out[:full] = v[:full]
    out[n - 16:] = v[full:]
    return out


def _normal_blocks_native(eng: Engine, out: Array, mean: float, std: float) -> None:
    """_normal_blocks and the affine step of normal_ for float opmath in one native pass (random.c's
    normal_f32): the same words drawn in the same order, the same values."""
    k = native.random
    assert k is not None
    n, dt = out.size, out.dtype
    full = n - n % 16
    s32, m32 = float(_F32.type(std)), float(_F32.type(mean))
    # normal_'s affine step as _fma computes it: none, a product plus 0 when the mean rounds to 0, an fma
    affine = 0 if (mean == 0 and std == 1) else 1 if m32 == 0 else 2
    v = out if dt == _F32 else np.empty(n, _F32)
    words = eng.random(n if dt == _F32 else full)  # (float fills all n uniforms first, as _normal_blocks)
    k.normal_f32(words[:full], v[:full], affine, s32, m32)
    if n % 16:  # the last block from 16 fresh uniforms
        tail = np.empty(16, _F32)
        k.normal_f32(eng.random(16), tail, affine, s32, m32)
        v[n - 16:] = tail
    if v is not out:
        out[...] = v.astype(dt)


def _normal_scalar(eng: Engine, n: int, exact: bool) -> Array:
    """n values of normal_distribution<double>: a cached second value first, then cos/sin pairs whose
    last unused sine stays cached. ``exact``: glibc's functions (double outputs)."""
    head = []
    if eng.next_double is not None and n:
        head, eng.next_double = [eng.next_double], None
    pairs = (n - len(head) + 1) // 2
    if pairs <= 16:  # a few values: Python's floats cost less than NumPy's calls
        w = eng.random(4 * pairs).tolist()
        for i in range(0, 4 * pairs, 4):
            u1 = (((w[i] & 0x1FFFFF) << 32) | w[i + 1]) * 2.0 ** -53
            u2 = (((w[i + 2] & 0x1FFFFF) << 32) | w[i + 3]) * 2.0 ** -53
            r, theta = math.sqrt(-2.0 * math.log1p(-u2)), 2.0 * math.pi * u1
            head += (r * math.cos(theta), r * math.sin(theta))
        if len(head) > n:
            eng.next_double = head.pop()
        return np.array(head, np.float64)
    u = _u53(eng.random64(2 * pairs)).reshape(pairs, 2)
    if exact or pairs <= 64:  # (a short loop costs less than NumPy's calls)
        r = np.sqrt(-2.0 * _libm(math.log1p, -u[:, 1]))
        theta = (2.0 * math.pi) * u[:, 0]
        cos, sin = r * _libm(math.cos, theta), r * _libm(math.sin, theta)
    else:
        r = np.sqrt(-2.0 * np.log1p(-u[:, 1]))
        theta = (2.0 * math.pi) * u[:, 0]
        cos, sin = r * np.cos(theta), r * np.sin(theta)
    vals = np.concatenate([np.asarray(head, np.float64), np.stack([cos, sin], 1).ravel()])
    if vals.size > n:  # the unused sine waits in the state, glibc's value as PyTorch's
        r1 = math.sqrt(-2.0 * math.log1p(-float(u[-1, 1])))
        eng.next_double = r1 * math.sin(2.0 * math.pi * float(u[-1, 0]))
    return vals[:n]


def normal_(eng: Engine, out: Array, mean: float = 0.0, std: float = 1.0) -> None:
    """N(mean, std^2), as normal_kernel: the block path for 16+ contiguous values, else the scalar one."""
    n, dt = out.size, out.dtype
    if n == 0:
        return
    if n >= 16 and out.flags.c_contiguous:
        op = _opmath(dt)
        if op == _F32 and native.random is not None:
            _normal_blocks_native(eng, out.reshape(-1), mean, std)
            return
        v = _normal_blocks(eng, n, dt)
        if not (mean == 0 and std == 1):
            v = _fma(v, float(op.type(std)), float(op.type(mean)), op)
        out.reshape(-1)[...] = v.astype(dt, copy=False)
        return
    v = _normal_scalar(eng, n, dt == _F64)
    if not (mean == 0 and std == 1):
        v = _fma(v, std, mean, _F64)
    _store(out, _narrow(v, dt))


def log_normal_(eng: Engine, out: Array, mean: float, std: float) -> None:
    """exp of normal_distribution<double>(mean, std) per element (the scalar normal path, cache and all)."""
    exact = out.dtype == _F64
    v = _fma(_normal_scalar(eng, out.size, exact), std, mean, _F64)
    _store(out, _narrow(_libm(_c_exp, v) if exact else np.exp(v), out.dtype))


def exponential_(eng: Engine, out: Array, lambd: float) -> None:
    """-1/lambda * log1p(-u) with a double uniform u, per element."""
    u = _u53(eng.random64(out.size))
    lg = _libm(math.log1p, -u) if out.dtype == _F64 else np.log1p(-u)
    _store(out, _narrow((-1.0 / lambd) * lg, out.dtype))


def cauchy_(eng: Engine, out: Array, median: float, sigma: float) -> None:
    """median + sigma * tan(pi * (u - 0.5)) with a double uniform u, per element."""
    u = _u53(eng.random64(out.size))
    t = _libm(math.tan, math.pi * (u - 0.5)) if out.dtype == _F64 else np.tan(math.pi * (u - 0.5))
    _store(out, _narrow(_fma(t, sigma, median, _F64), out.dtype))


def geometric_(eng: Engine, out: Array, p: float) -> None:
    """ceil(log(u) / log1p(-p)) with a double uniform u, per element."""
    u = _u53(eng.random64(out.size))
    with np.errstate(divide="ignore"):
        lg = _libm(_c_log, u) if out.dtype == _F64 else np.log(u)
    _store(out, _narrow(np.ceil(lg / math.log1p(-p)), out.dtype))


def bernoulli_scalar_(eng: Engine, out: Array, p: float) -> None:
    """1 where a double uniform < p, per element."""
    _store(out, (_u53(eng.random64(out.size)) < p).astype(out.dtype))


def bernoulli_tensor_(eng: Engine, out: Array, p: Array) -> None:
    """1 where a uniform < p (p broadcast to out): a double one for double p, else a float one."""
    pv = np.broadcast_to(p, out.shape)
    pv = pv.transpose(_perm(out)) if not out.flags.c_contiguous else pv
    n = out.size
    u = _u53(eng.random64(n)) if p.dtype == _F64 else _u24(eng.random(n))
    _store(out, (u.reshape(pv.shape) < pv.astype(_F64 if p.dtype == _F64 else _F32)).astype(out.dtype))


# ---- integers ---------------------------------------------------------------------------------------

def _digits(dt: np.dtype) -> int:
    """std::numeric_limits<T>::digits of a float dtype (mantissa bits with the hidden one)."""
    return {8: 53, 4: 24}.get(dt.itemsize, 11) if dt.name != "bfloat16" else 8


def random_from_to_(eng: Engine, out: Array, span: int, base: int) -> None:
    """(word % span) + base: a 32-bit word below 2**28, else a 64-bit one (span 2**64: the raw word)."""
    n = out.size
    w = eng.random(n) if span < (1 << 28) else eng.random64(n)
    if span >= (1 << 64):  # the full int64 range: the word itself
        _store(out, w.view(np.int64).astype(out.dtype))
        return
    v = (w % np.uint64(span) + np.uint64(base & 0xFFFFFFFFFFFFFFFF)).view(np.int64)
    _store(out, v.astype(out.dtype))


def random_(eng: Engine, out: Array) -> None:
    """random_() without bounds: [0, 2**digits] for floats, [0, max] for integers, a bit for bool."""
    dt, n = out.dtype, out.size
    wide = dt in (_F64, np.dtype(np.int64))
    w = eng.random64(n) if wide else eng.random(n)
    if dt == np.bool_:
        v = w & np.uint64(1)
    elif dt.kind == "f" or dt.name == "bfloat16":
        v = w % np.uint64((1 << _digits(dt)) + 1)
    else:
        v = w % np.uint64(int(np.iinfo(dt).max) + 1)
    _store(out, v.astype(dt))


def randperm(eng: Engine, n: int) -> Array:
    """randperm_cpu: swap i with i + word % (n - i) for i < n - 1 (64-bit words and the inside-out
    shuffle from n >= 2**32 / 20, as ATen). The swaps are random.c's loop, else one Python loop over
    a list."""
    small = n < (1 << 32) // 20
    k = native.random
    if k is not None:
        out = np.empty(n, np.int64)
        k.randperm(eng.random(max(n - 1, 0)) if small else eng.random64(n), out, not small)
        return out
    if small:
        z = (eng.random(max(n - 1, 0)) % np.arange(n, 1, -1, dtype=np.uint64)).tolist()
        perm = list(range(n))
        for i, k in enumerate(z):
            j = i + k
            perm[i], perm[j] = perm[j], perm[i]
        return np.array(perm, np.int64)
    z = (eng.random64(n) % np.arange(1, n + 1, dtype=np.uint64)).tolist()
    perm = [0] * n
    for i, k in enumerate(z):
        perm[i] = perm[k]
        perm[k] = i
    return np.array(perm, np.int64)


# ---- categorical --------------------------------------------------------------------------------

def multinomial(eng: Engine, probs: Array, n_sample: int, replacement: bool) -> Array:
    """Category indices for the rows of a 2-D ``probs``, as ATen: without replacement (or one sample)
    the argmax / top-k of p / q with q ~ Exp(1) in p's dtype; with replacement a search of the row's
    normalised running sum (in p's dtype) for one double uniform per sample."""
    if not replacement or n_sample == 1:
        q = np.empty(probs.shape, probs.dtype)
        exponential_(eng, q, 1.0)
        with np.errstate(divide="ignore", invalid="ignore"):
            q = probs / q
        if n_sample == 1:
            return np.argmax(q, -1)[:, None]
        return np.argsort(-q, -1, kind="stable")[:, :n_sample]
    out = np.empty((probs.shape[0], n_sample), np.int64)
    for i, row in enumerate(probs):
        cum = np.cumsum(row, dtype=row.dtype)
        cum = cum / cum[-1]
        cum[-1] = 1
        out[i] = np.searchsorted(cum.astype(np.float64), _u53(eng.random64(n_sample)), side="left")
    return out


def poisson(eng: Engine, rates: Array) -> Array:
    """Poisson samples for float64 ``rates`` (C order), as ATen's sample_poisson: transformed rejection
    (Hormann's PTRS) from rate 10, a product of uniforms below, 0 for rate 0."""
    flat = rates.ravel()
    out = np.empty(flat.size, np.float64)
    for i, lam in enumerate(flat.tolist()):
        out[i] = _poisson_one(eng, lam)
    return out.reshape(rates.shape)


def _uniform1(eng: Engine) -> float:
    return float(_u53(eng.random64(1))[0])


def _poisson_one(eng: Engine, lam: float) -> float:
    if lam >= 10:
        slam, loglam = math.sqrt(lam), math.log(lam)
        b = 0.931 + 2.53 * slam
        a = -0.059 + 0.02483 * b
        invalpha = 1.1239 + 1.1328 / (b - 3.4)
        vr = 0.9277 - 3.6224 / (b - 2)
        while True:
            u = _uniform1(eng) - 0.5
            v = _uniform1(eng)
            us = 0.5 - abs(u)
            k = math.floor((2 * a / us + b) * u + lam + 0.43)
            if us >= 0.07 and v <= vr:
                return float(k)
            if k < 0 or (us < 0.013 and v > us):
                continue
            if (math.log(v) + math.log(invalpha) - math.log(a / (us * us) + b)
                    <= -lam + k * loglam - math.lgamma(k + 1)):
                return float(k)
    if lam == 0:
        return 0.0
    enlam, k, prod = math.exp(-lam), 0, 1.0
    while True:
        prod *= _uniform1(eng)
        if prod > enlam:
            k += 1
        else:
            return float(k)


def rrelu_noise(eng: Engine, x: Array, lower: float, upper: float) -> Array:
    """RReLU's slopes for x (C order): a double U(lower, upper) for each x <= 0 in turn (ATen's
    Activation.cpp, built without FMA contraction), 1 elsewhere; in x's dtype."""
    x = np.ascontiguousarray(x)
    neg = x <= 0
    noise = np.ones(x.shape, x.dtype)
    op = _opmath(x.dtype)  # the bounds are read in opmath precision first
    lo, hi = float(op.type(lower)), float(op.type(upper))
    u = _u53(eng.random64(int(neg.sum())))
    noise[neg] = (u * (hi - lo) + lo).astype(x.dtype)
    return noise
