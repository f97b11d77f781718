"""Fused layer kernels: convolution, pooling, recurrent layers, linear, layer norm and the losses.

Each is one ``Function`` whose forward and backward run a whole layer through the backend (a
convolution's kernel taps, an RNN's time loop, cross-entropy's softmax and pick), so a layer is one
graph node instead of dozens. They sit on the nn side of the core: ``nn.functional`` and the layer
modules call them; the primitives in ``lightgrad.function`` know nothing of them.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import backend as B
from ..function import Function, _put, _zeros
from ..tensor import Tensor


# ---- convolution and pooling -------------------------------------------------------------------
# Images are (N, C, H, W); 1-D ops reshape to H = 1 before calling these. Geometry arrives as
# pairs: kernel k, stride s, dilation d, and pads = (top, bottom, left, right), uneven so that
# padding='same' and ceil_mode pooling need no special case. Each op reads its input through a
# strided view of kernel windows (no copy) and loops over the kh*kw kernel taps, never pixels.

def _padded(x, pads, value=0):
    """x with its last two axes padded by ``pads`` and filled with ``value`` (x itself if no pads)."""
    pt, pb, pl, pr = pads
    if not (pt or pb or pl or pr):
        return x
    n, c, h, w = x.shape
    out = B.empty((n, c, h + pt + pb, w + pl + pr), x.dtype)
    out.fill(value)
    out[:, :, pt:pt + h, pl:pl + w] = x
    return out


def _out_hw(hw, k, s, d, pads):
    """Output size of a window op: (H + pads - d*(k-1) - 1) // s + 1 per axis."""
    return ((hw[0] + pads[0] + pads[1] - d[0] * (k[0] - 1) - 1) // s[0] + 1,
            (hw[1] + pads[2] + pads[3] - d[1] * (k[1] - 1) - 1) // s[1] + 1)


def _windows(xp, k, s, d, out_hw):
    """A read-only view (N, C, kh, kw, Ho, Wo) of every kernel window of padded ``xp``."""
    s0, s1, s2, s3 = xp.strides
    return B.as_strided(xp, (xp.shape[0], xp.shape[1], k[0], k[1], out_hw[0], out_hw[1]),
                        (s0, s1, s2 * d[0], s3 * d[1], s2 * s[0], s3 * s[1]), writeable=False)


def _tap(a, i, j, s, d, out_hw):
    """The strided slice of padded image ``a`` that kernel tap (i, j) covers, one entry per output."""
    h0, w0 = i * d[0], j * d[1]
    return a[:, :, h0:h0 + s[0] * (out_hw[0] - 1) + 1:s[0], w0:w0 + s[1] * (out_hw[1] - 1) + 1:s[1]]


def _im2col(x, k, s, d, pads, out_hw=None):
    """Columns (N, C*kh*kw, Ho*Wo) of zero-padded x (one copy); a matrix product then convolves.
    ``out_hw`` may ask for fewer windows than fit (a transposed conv's output_padding)."""
    out_hw = out_hw or _out_hw(x.shape[2:], k, s, d, pads)
    cols = B.copy(_windows(_padded(x, pads), k, s, d, out_hw))
    return B.reshape(cols, (x.shape[0], x.shape[1] * k[0] * k[1], out_hw[0] * out_hw[1]))


def _col2im(cols, shape, k, s, d, pads, out_hw=None):
    """The adjoint of ``_im2col``: adds every column entry back onto the pixel it was read from
    (one strided add per kernel tap) and returns the (N, C, H, W) image of ``shape``."""
    n, c, h, w = shape
    pt, pb, pl, pr = pads
    out_hw = out_hw or _out_hw((h, w), k, s, d, pads)
    c6 = B.reshape(cols, (n, c, k[0], k[1], out_hw[0], out_hw[1]))
    out = B.zeros((n, c, max(h + pt + pb, (out_hw[0] - 1) * s[0] + d[0] * (k[0] - 1) + 1),
                   max(w + pl + pr, (out_hw[1] - 1) * s[1] + d[1] * (k[1] - 1) + 1)), cols.dtype)
    for i in range(k[0]):
        for j in range(k[1]):
            B.iadd(_tap(out, i, j, s, d, out_hw), c6[:, :, i, j])
    return out[:, :, pt:pt + h, pl:pl + w]


def _unfold(x, k, s, d, pads, out_hw=None):
    """im2col of an array, or the differentiable op on a Tensor (backward under create_graph)."""
    if isinstance(x, Tensor):
        return Unfold.apply(x, k=k, s=s, d=d, pads=pads, out_hw=out_hw)
    return _im2col(x, k, s, d, pads, out_hw)


def _fold(cols, shape, k, s, d, pads, out_hw=None):
    if isinstance(cols, Tensor):
        return Fold.apply(cols, shape=shape, k=k, s=s, d=d, pads=pads, out_hw=out_hw)
    return _col2im(cols, shape, k, s, d, pads, out_hw)


class Unfold(Function):
    """Sliding blocks (im2col): (N, C, H, W) -> (N, C*kh*kw, L), as ``F.unfold``."""

    def forward(self, x, k, s, d, pads, out_hw=None):
        self.shape, self.geom = x.shape, (k, s, d, pads, out_hw)
        return _im2col(x, k, s, d, pads, out_hw)

    def backward(self, g):
        return (_fold(g, self.shape, *self.geom),)


class Fold(Function):
    """Sum sliding blocks back into an image (col2im), as ``F.fold``; the adjoint of Unfold."""

    def forward(self, cols, shape, k, s, d, pads, out_hw=None):
        self.geom = (k, s, d, pads, out_hw)
        return _col2im(cols, shape, k, s, d, pads, out_hw)

    def backward(self, g):
        return (_unfold(g, *self.geom),)


class Conv2d(Function):
    """Cross-correlation of x (N, C, H, W) with w (O, C/groups, kh, kw) and optional bias b (O,):
    im2col, then one batched matrix product laid out so its result already is (N, O, Ho, Wo)."""

    def forward(self, x, w, b, s, d, pads, groups):
        n, o, k = x.shape[0], w.shape[0], w.shape[2:]
        kk = w.shape[1] * k[0] * k[1]
        ho, wo = _out_hw(x.shape[2:], k, s, d, pads)
        cols = _im2col(x, k, s, d, pads)
        out = B.matmul(B.reshape(w, (groups, o // groups, kk)), B.reshape(cols, (n, groups, kk, ho * wo)))
        out = B.reshape(out, (n, o, ho, wo))  # (N, G, O/G, L) is (N, O, Ho, Wo) in memory
        if b is not None:
            out += B.reshape(b, (o, 1, 1))
        self.geom, self.groups = (k, s, d, pads), groups
        self.saved = (x, w, cols)
        return out

    def backward(self, g):
        x, w, cols = self.saved
        k, s, d, pads = self.geom
        n, o, ho, wo = g.shape
        grp, kk = self.groups, w.shape[1] * k[0] * k[1]
        g4 = B.reshape(g, (n, grp, o // grp, ho * wo))
        gx = gw = gb = None
        if self.needs(0):
            wt = B.swapaxes(B.reshape(w, (grp, o // grp, kk)), 1, 2)  # (G, kk, O/G)
            gx = _fold(B.reshape(B.matmul(wt, g4), (n, -1, ho * wo)), x.shape, k, s, d, pads)
        if self.needs(1):
            if isinstance(g, Tensor):  # create_graph: the columns must be a function of x
                cols = _unfold(x, k, s, d, pads)
            ct = B.swapaxes(B.reshape(cols, (n, grp, kk, ho * wo)), 2, 3)  # (N, G, L, kk)
            gw = B.reshape(B.sum(B.matmul(g4, ct), axis=0), w.shape)
        if self.needs(2):
            gb = B.sum(g, axis=(0, 2, 3))
        return gx, gw, gb


class ConvTranspose2d(Function):
    """Transposed convolution, x (N, C_in, H, W) with w (C_in, C_out/groups, kh, kw): the map
    Conv2d's backward sends to its input, i.e. one matrix product, then col2im into ``out_hw``."""

    def forward(self, x, w, b, s, d, pads, groups, out_hw):
        n, cin, h, wd = x.shape
        og, k = w.shape[1], w.shape[2:]
        cg, kk = cin // groups, og * k[0] * k[1]
        wt = B.swapaxes(B.reshape(w, (groups, cg, kk)), 1, 2)  # (G, kk, C_in/G)
        cols = B.matmul(wt, B.reshape(x, (n, groups, cg, h * wd)))  # (N, G, kk, H*W)
        out = _col2im(B.reshape(cols, (n, groups * kk, h * wd)), (n, groups * og, *out_hw), k, s, d, pads,
                      (h, wd))
        if b is not None:
            out += B.reshape(b, (-1, 1, 1))
        self.geom, self.groups = (k, s, d, pads), groups
        self.saved = (x, w)
        return out

    def backward(self, g):
        x, w = self.saved
        k, s, d, pads = self.geom
        n, cin, h, wd = x.shape
        grp = self.groups
        cg, kk = cin // grp, w.shape[1] * k[0] * k[1]
        gcols = B.reshape(_unfold(g, k, s, d, pads, (h, wd)), (n, grp, kk, h * wd))
        gx = gw = gb = None
        if self.needs(0):
            gx = B.reshape(B.matmul(B.reshape(w, (grp, cg, kk)), gcols), x.shape)
        if self.needs(1):
            x4 = B.reshape(x, (n, grp, cg, h * wd))
            gw = B.reshape(B.sum(B.matmul(x4, B.swapaxes(gcols, 2, 3)), axis=0), w.shape)
        if self.needs(2):
            gb = B.sum(g, axis=(0, 2, 3))
        return gx, gw, gb


def _scatter_taps(v, dtype, shape, k, s, d, pads, out_hw):
    """Route per-tap values v(t) (each (N, C, Ho, Wo)) back to the pixels tap t read; when
    windows cannot overlap (stride >= window) they are written instead of added."""
    n, c, h, w = shape
    pt, pb, pl, pr = pads
    out = B.zeros((n, c, h + pt + pb, w + pl + pr), dtype)
    overlap = s[0] < d[0] * (k[0] - 1) + 1 or s[1] < d[1] * (k[1] - 1) + 1
    for t in range(k[0] * k[1]):
        i, j = divmod(t, k[1])
        dst = _tap(out, i, j, s, d, out_hw)
        vt = v(t)
        if overlap:
            B.iadd(dst, vt)
        else:
            B.copyto(dst, vt)
    return out[:, :, pt:pt + h, pl:pl + w]


class MaxPool2d(Function):
    """Max over each window; its gradient goes to the first maximum of the window, as PyTorch's.
    ``sink``, when given a list, receives the argmax as flat indices into each input plane."""

    def forward(self, x, k, s, d, pads, out_hw, sink=None):
        self.shape, self.geom = x.shape, (k, s, d, pads, out_hw)
        self.pair = k == s == (2, 2) and d == (1, 1) and not any(pads)
        if self.pair:
            out = self._forward_pairs(x, out_hw)
        else:
            low = -np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).min
            v = _windows(_padded(x, pads, low), k, s, d, out_hw)
            out = B.copy(v[:, :, 0, 0])
            arg = B.zeros(out.shape, np.uint8 if k[0] * k[1] < 256 else np.int32)  # the winning tap
            for t in range(1, k[0] * k[1]):
                tap = v[:, :, t // k[1], t % k[1]]
                np.putmask(arg, B.greater(tap, out), t)  # strict: the first maximum wins ties
                np.maximum(out, tap, out=out)  # and NaN propagates, as in PyTorch
            self.saved = (arg,)
        if sink is not None:
            tap = self._arg().astype(np.int64)
            rows = np.arange(out_hw[0]).reshape(-1, 1) * s[0] + (tap // k[1]) * d[0] - pads[0]
            cols = np.arange(out_hw[1]) * s[1] + (tap % k[1]) * d[1] - pads[2]
            sink.append(rows * x.shape[3] + cols)
        return out

    def _forward_pairs(self, x, out_hw):
        """The common 2x2, stride-2 pool as two pairwise maxima: first along W, then along H."""
        n, c = x.shape[:2]
        ho, wo = out_hw
        if x.shape[2:] != (2 * ho, 2 * wo):
            x = x[:, :, :2 * ho, :2 * wo]
        v = B.reshape(x, (n, c, ho, 2, wo, 2))
        left, right = v[..., 0], v[..., 1]
        m = B.maximum(left, right)  # (N, C, Ho, 2, Wo)
        top, bottom = m[:, :, :, 0], m[:, :, :, 1]
        # the right/bottom element wins only when strictly greater: ties go to the first maximum
        self.saved = (B.greater(right, left), B.greater(bottom, top))
        return B.maximum(top, bottom)

    def _arg(self):
        """The winning tap of each window (0 .. kh*kw-1, row-major)."""
        if not self.pair:
            return self.saved[0]
        wsel, hsel = self.saved
        return B.add(B.multiply(hsel, 2), B.where(hsel, wsel[:, :, :, 1], wsel[:, :, :, 0])).astype(np.uint8)

    def backward(self, g):
        k, s, d, pads, out_hw = self.geom
        if isinstance(g, Tensor):  # create_graph: one-hot columns folded back, differentiably
            nk = k[0] * k[1]
            hot = B.equal(np.expand_dims(self._arg(), 2), np.arange(nk).reshape(nk, 1, 1)).astype(g.dtype.np)
            cols = g.unsqueeze(2) * Tensor._make(hot)
            return (Fold.apply(cols.reshape(g.shape[0], -1, out_hw[0] * out_hw[1]), shape=self.shape,
                               k=k, s=s, d=d, pads=pads),)
        if not self.pair:
            arg = self.saved[0]
            # multiplying by the mask is several times faster than np.where here
            return (_scatter_taps(lambda t: B.multiply(g, B.equal(arg, t)), g.dtype, self.shape, k, s, d, pads,
                                  out_hw),)
        wsel, hsel = self.saved
        n, c, h, w = self.shape
        ho, wo = out_hw
        gh = B.empty((n, c, ho, 2, wo), g.dtype)  # the gradient routed to the winning row ...
        np.multiply(g, hsel, out=gh[:, :, :, 1])
        np.multiply(g, B.logical_not(hsel), out=gh[:, :, :, 0])
        gx = B.empty((n, c, ho, 2, wo, 2), g.dtype)  # ... then to the winning column
        np.multiply(gh, wsel, out=gx[..., 1])
        np.multiply(gh, B.logical_not(wsel), out=gx[..., 0])
        gx = B.reshape(gx, (n, c, 2 * ho, 2 * wo))
        if (h, w) != (2 * ho, 2 * wo):  # odd sizes: the last row/column was never read
            gx = _put(_zeros(gx, self.shape), (slice(None), slice(None), slice(0, 2 * ho), slice(0, 2 * wo)),
                      gx, False)
        return (gx,)


class AvgPool2d(Function):
    """Window sums divided by ``div`` (a number, or per-output (Ho, Wo) counts); zero padding."""

    def forward(self, x, k, s, pads, out_hw, div):
        one = (1, 1)
        v = _windows(_padded(x, pads), k, s, one, out_hw)
        out = B.copy(v[:, :, 0, 0])
        for t in range(1, k[0] * k[1]):
            B.iadd(out, v[:, :, t // k[1], t % k[1]])
        out /= div
        self.shape, self.geom, self.div = x.shape, (k, s, one, pads, out_hw), div
        return out

    def backward(self, g):
        k, s, d, pads, out_hw = self.geom
        gd = B.divide(g, self.div)
        if isinstance(g, Tensor):
            nk = k[0] * k[1]
            cols = gd.unsqueeze(2).expand(g.shape[0], g.shape[1], nk, *out_hw)
            return (Fold.apply(cols.reshape(g.shape[0], -1, out_hw[0] * out_hw[1]), shape=self.shape,
                               k=k, s=s, d=d, pads=pads),)
        return (_scatter_taps(lambda t: gd, gd.dtype, self.shape, k, s, d, pads, out_hw),)


# ---- recurrent layers --------------------------------------------------------------------------
# One primitive per layer and direction runs the whole time loop in NumPy: for RNN and GRU the
# input projections xp (T, B, G) of every step come in precomputed (one matmul per layer,
# outside), so a step is one (B, H) x (H, G) product plus pointwise work; LSTM puts x_t and the
# bias into that product instead. The graph has one node instead of ~15 per step. Backward is
# backpropagation through time over the saved activations; the weights' gradients are one
# matrix product over all steps at the end.

_NO_DOUBLE = ("double backward through a fused RNN/LSTM/GRU layer is not supported "
              "(create_graph=True); unroll RNNCell/LSTMCell/GRUCell in a loop instead")


def _steps(t_len, reverse):
    return range(t_len - 1, -1, -1) if reverse else range(t_len)


def _prev_states(out, h0, reverse):
    """(T, B, H) state each step started from: h0, then the outputs in processing order."""
    t_len = out.shape[0]
    prev = B.empty(out.shape, out.dtype)
    if reverse:
        prev[:t_len - 1] = out[1:]
        prev[t_len - 1] = h0
    else:
        prev[1:] = out[:t_len - 1]
        prev[0] = h0
    return prev


def _sigmoid_(a):
    """In-place logistic sigmoid, as 0.5 * (1 + tanh(x / 2)), which never overflows."""
    a *= 0.5
    np.tanh(a, out=a)
    a += 1
    a *= 0.5


class RNNLayer(Function):
    """Elman RNN over a sequence: h_t = act(xp_t + h_{t-1} W_hh^T); returns the (T, B, H) outputs."""

    def forward(self, xp, w_hh, h0, relu, reverse):
        t_len = xp.shape[0]
        out = B.empty((t_len, *h0.shape), xp.dtype)
        whT = B.copy(B.transpose(w_hh))  # contiguous: a faster GEMM per step
        h = h0
        for t in _steps(t_len, reverse):
            a = out[t]
            np.matmul(h, whT, out=a)
            a += xp[t]
            if relu:
                np.maximum(a, 0, out=a)
            else:
                np.tanh(a, out=a)
            h = a
        self.relu, self.reverse = relu, reverse
        self.saved = (w_hh, h0, out)
        return out

    def backward(self, g):
        if isinstance(g, Tensor):
            raise RuntimeError(_NO_DOUBLE)
        w_hh, h0, out = self.saved
        da = B.empty(out.shape, out.dtype)
        dh = B.zeros(h0.shape, out.dtype)
        for t in _steps(out.shape[0], not self.reverse):
            d = da[t]
            np.add(g[t], dh, out=d)
            if self.relu:
                d *= out[t] > 0
            else:
                d *= 1 - out[t] * out[t]
            dh = B.matmul(d, w_hh)
        flat = B.reshape(da, (-1, da.shape[2]))
        gw = B.matmul(B.transpose(flat), B.reshape(_prev_states(out, h0, self.reverse), flat.shape))
        return da, gw, dh


class LSTMLayer(Function):
    """LSTM over a sequence x (T, B, I) with PyTorch's gate order (i, f, g, o); the biases may be
    None. Returns (T + 1, B, H): the T outputs, then the final cell state.

    Each step is one product [h_{t-1}, x_t, 1] (B, K) @ W (K, 4H), W = [W_hh^T; W_ih^T; b_ih + b_hh]:
    the input projection and both biases ride in the recurrent GEMM (no separate (T, B, 4H)
    array to read back and add each step), and the weight gradients are one product over all
    steps. The i, f, o columns of W are halved (exact: a power of two) because
    sigmoid(x) = (1 + tanh(x/2)) / 2: one tanh activates all four gates, and one multiply-add
    maps the i, f, o parts to (1 + tanh) / 2; every op is a whole, contiguous (B, 4H) block."""

    def forward(self, x, w_ih, w_hh, b_ih, b_hh, h0, c0, reverse):
        t_len, batch, n_in = x.shape
        hid = h0.shape[1]
        h2, h3 = 2 * hid, 3 * hid
        k = hid + n_in + (b_ih is not None)
        half = np.ones(4 * hid, x.dtype)
        half[:h2] = half[h3:] = 0.5
        shift = np.subtract(1, half)  # 0.5 for i, f, o; 0 for g
        w = B.empty((k, 4 * hid), x.dtype)
        np.multiply(B.transpose(w_hh), half, out=w[:hid])
        np.multiply(B.transpose(w_ih), half, out=w[hid:hid + n_in])
        hx = B.empty((t_len, batch, k), x.dtype)  # step t's [h_{t-1}, x_t, 1], saved for backward
        hx[:, :, hid:hid + n_in] = x
        if b_ih is not None:
            np.add(b_ih, b_hh, out=w[-1])
            w[-1] *= half
            hx[:, :, -1] = 1
        steps = _steps(t_len, reverse)
        hx[steps[0], :, :hid] = h0
        out = B.empty((t_len + 1, batch, hid), x.dtype)
        gates = B.empty((t_len, batch, 4 * hid), x.dtype)  # activated gates, saved for backward
        cells = B.empty((t_len, batch, hid), x.dtype)
        tanh_c = B.empty((t_len, batch, hid), x.dtype)
        tmp = np.empty((batch, hid), x.dtype)
        mm, add, mul, tanh = np.matmul, np.add, np.multiply, np.tanh
        c = c0
        step = -1 if reverse else 1
        for t in steps:
            z, cn, th, o = gates[t], cells[t], tanh_c[t], out[t]
            mm(hx[t], w, out=z)
            tanh(z, out=z)
            mul(z, half, out=z)
            add(z, shift, out=z)
            mul(z[:, hid:h2], c, out=cn)  # c' = f c + i g
            mul(z[:, :hid], z[:, h2:h3], out=tmp)
            add(cn, tmp, out=cn)
            tanh(cn, out=th)
            mul(z[:, h3:], th, out=o)  # h' = o tanh(c')
            if 0 <= t + step < t_len:
                hx[t + step, :, :hid] = o
            c = cn
        out[t_len] = c
        self.reverse = reverse
        self.saved = (w_ih, w_hh, c0, hx, out, gates, cells, tanh_c)
        return out

    def backward(self, g):
        if isinstance(g, Tensor):
            raise RuntimeError(_NO_DOUBLE)
        w_ih, w_hh, c0, hx, out, gates, cells, tanh_c = self.saved
        t_len, batch, k = hx.shape
        hid, n_in = c0.shape[1], w_ih.shape[1]
        # everything that does not depend on the recurrence first, so that the step loop is only
        # dh -> dc -> gate gradients -> dh through W_hh; in blocks of steps whose arrays stay
        # in the CPU cache across the dozen passes (whole arrays: ~3% slower per training step)
        dz = B.empty(gates.shape, gates.dtype)
        to_c = B.empty(tanh_c.shape, gates.dtype)
        for lo in range(0, t_len, _LSTM_BLOCK):
            _lstm_factors(gates, cells, tanh_c, c0, lo, min(lo + _LSTM_BLOCK, t_len), self.reverse, dz, to_c)
        z4 = B.reshape(dz, (t_len, batch, 4, hid))
        f = B.reshape(gates, z4.shape)[:, :, 1]
        dh = B.zeros((batch, hid), gates.dtype)
        dc = B.copy(g[t_len])
        tmp = np.empty((batch, hid), gates.dtype)
        for t in _steps(t_len, not self.reverse):
            dh += g[t]
            np.multiply(dh, to_c[t], out=tmp)
            dc += tmp
            zt = z4[t]
            np.multiply(zt[:, :3], dc[:, None, :], out=zt[:, :3])
            np.multiply(zt[:, 3], dh, out=zt[:, 3])
            dc *= f[t]
            np.matmul(dz[t], w_hh, out=dh)
        flat = B.reshape(dz, (-1, 4 * hid))
        gw = B.matmul(B.transpose(flat), B.reshape(hx, (-1, k)))  # (4H, K): [dW_hh, dW_ih, db]
        gb = gw[:, -1] if k > hid + n_in else None
        gx = B.reshape(B.matmul(flat, w_ih), (t_len, batch, n_in)) if self.needs(0) else None
        return gx, gw[:, hid:hid + n_in], gw[:, :hid], gb, gb, dh, dc


_LSTM_BLOCK = 8  # time steps per block of the backward's step-independent passes


def _lstm_factors(gates, cells, tanh_c, c0, lo, hi, reverse, dz, to_c):
    """For steps lo..hi-1: dz = each gate's factor, its derivative (s (1 - s) for i, f, o;
    1 - g^2 for g) times what the gate multiplies (g, c_{t-1}, i, tanh(c_t)), which the step
    loop scales by dc (i, f, g) or dh (o); to_c = d c_t / d h_t = o (1 - tanh(c_t)^2). Written
    in place: passes over memory, not temporaries, are what this costs."""
    t_len, hid = gates.shape[0], c0.shape[1]
    h2, h3 = 2 * hid, 3 * hid
    ga, d = gates[lo:hi], dz[lo:hi]
    g4, d4 = B.reshape(ga, (*ga.shape[:2], 4, hid)), B.reshape(d, (*d.shape[:2], 4, hid))
    np.multiply(ga, ga, out=d)
    np.subtract(ga[..., :h2], d[..., :h2], out=d[..., :h2])
    np.subtract(ga[..., h3:], d[..., h3:], out=d[..., h3:])
    np.subtract(1, d[..., h2:h3], out=d[..., h2:h3])
    np.multiply(d4[:, :, 0], g4[:, :, 2], out=d4[:, :, 0])
    # c_{t-1} is the cell of the step processed before (t + 1 when reversed), c0 for the first
    first = t_len - 1 if reverse else 0
    a, b, shift = (lo, min(hi, t_len - 1), 1) if reverse else (max(lo, 1), hi, -1)
    np.multiply(d4[a - lo:b - lo, :, 1], cells[a + shift:b + shift], out=d4[a - lo:b - lo, :, 1])
    if lo <= first < hi:
        np.multiply(d4[first - lo, :, 1], c0, out=d4[first - lo, :, 1])
    np.multiply(d4[:, :, 2], g4[:, :, 0], out=d4[:, :, 2])
    th, tc = tanh_c[lo:hi], to_c[lo:hi]
    np.multiply(d4[:, :, 3], th, out=d4[:, :, 3])
    np.multiply(th, th, out=tc)
    np.subtract(1, tc, out=tc)
    np.multiply(tc, g4[:, :, 3], out=tc)


class GRULayer(Function):
    """GRU over a sequence with PyTorch's gate order (r, z, n); xp holds b_ih, and b_hh stays
    inside (n = tanh(xp_n + r * (h W_hn^T + b_hn))). Returns the (T, B, H) outputs."""

    def forward(self, xp, w_hh, b_hh, h0, reverse):
        t_len, hid = xp.shape[0], h0.shape[1]
        out = B.empty((t_len, *h0.shape), xp.dtype)
        gates = B.empty(xp.shape, xp.dtype)  # activated r, z, n
        hn = B.empty((t_len, *h0.shape), xp.dtype)  # h W_hn^T + b_hn, saved for backward
        whT = B.copy(B.transpose(w_hh))  # contiguous: a faster GEMM per step
        h = h0
        for t in _steps(t_len, reverse):
            hp = B.matmul(h, whT)
            if b_hh is not None:
                hp += b_hh
            z = gates[t]
            np.add(xp[t, :, :2 * hid], hp[:, :2 * hid], out=z[:, :2 * hid])
            _sigmoid_(z[:, :2 * hid])
            hn[t] = hp[:, 2 * hid:]
            n = z[:, 2 * hid:]
            np.multiply(z[:, :hid], hn[t], out=n)
            n += xp[t, :, 2 * hid:]
            np.tanh(n, out=n)
            o = out[t]
            np.subtract(h, n, out=o)  # h' = n + u * (h - n)
            o *= z[:, hid:2 * hid]
            o += n
            h = o
        self.reverse = reverse
        self.saved = (w_hh, h0, out, gates, hn)
        return out

    def backward(self, g):
        if isinstance(g, Tensor):
            raise RuntimeError(_NO_DOUBLE)
        w_hh, h0, out, gates, hn = self.saved
        t_len, hid = gates.shape[0], h0.shape[1]
        prev = _prev_states(out, h0, self.reverse)
        g3 = B.reshape(gates, (*gates.shape[:2], 3, hid))
        r, u, n = g3[:, :, 0], g3[:, :, 1], g3[:, :, 2]
        # the factors that do not depend on the recurrence, for all steps at once
        to_n = B.multiply(B.subtract(1, u), B.subtract(1, B.multiply(n, n)))  # dh -> n's input
        to_r = B.multiply(hn, B.multiply(r, B.subtract(1, r)))  # n's input -> r's input
        to_u = B.multiply(B.subtract(prev, n), B.multiply(u, B.subtract(1, u)))  # dh -> u's input
        dx = B.empty(g3.shape, gates.dtype)  # gradient of the input projections
        dhp = B.empty(g3.shape, gates.dtype)  # gradient of h W_hh^T + b_hh
        dh = B.zeros(h0.shape, gates.dtype)
        for t in _steps(t_len, not self.reverse):
            dh += g[t]
            dn = dx[t, :, 2]
            np.multiply(dh, to_n[t], out=dn)
            np.multiply(dn, r[t], out=dhp[t, :, 2])
            np.multiply(dn, to_r[t], out=dhp[t, :, 0])
            np.multiply(dh, to_u[t], out=dhp[t, :, 1])
            dh *= u[t]
            dh += B.matmul(B.reshape(dhp[t], (-1, 3 * hid)), w_hh)
        dx[:, :, :2] = dhp[:, :, :2]
        flat = B.reshape(dhp, (-1, 3 * hid))
        gw = B.matmul(B.transpose(flat), B.reshape(prev, (-1, hid)))
        gb = B.sum(flat, axis=0) if self.needs(2) else None
        return B.reshape(dx, gates.shape), gw, gb, dh


# ---- layers, losses and normalization ----------------------------------------------------------

class Linear(Function):
    """x @ w.T + b with x (..., in), w (out, in), b (out,) or None: one node, the leading dims
    folded into one GEMM, and the weight gradient g.T @ x computed directly in w's layout."""

    traceable = True

    def forward(self, x, w, b):
        self.saved = (x, w)
        flat = x.ndim == 2  # (the usual batch of rows: no reshapes to make)
        out = B.matmul(x if flat else B.reshape(x, (-1, x.shape[-1])), B.transpose(w))  # (N, out)
        if b is not None:
            B.iadd(out, b)  # out is fresh: add the bias in place
        return out if flat else B.reshape(out, x.shape[:-1] + (w.shape[0],))

    def backward(self, g):
        x, w = self.saved
        e = self.edges
        flat = x.ndim == 2
        g2 = g if flat else B.reshape(g, (-1, g.shape[-1]))  # (N, out)
        gx = None if e[0] is None else B.matmul(g2, w) if flat else B.reshape(B.matmul(g2, w), x.shape)
        gw = None if e[1] is None else B.matmul(B.transpose(g2), x if flat else B.reshape(x, (-1, x.shape[-1])))
        gb = None if e[2] is None else B.sum(g2, axis=0)
        return gx, gw, gb


class LayerNorm(Function):
    """(x - mean) / sqrt(var + eps) over the last ``k`` axes, times ``w`` plus ``b`` (either may
    be None). One node instead of a dozen. Backward uses the saved normalised input and 1/std,
    and writes the input gradient over the normalised input (recomputed from x if a retained graph
    is walked again); under create_graph it recomputes them from x with differentiable ops, so
    higher-order gradients stay exact."""

    def forward(self, x, w, b, k, eps):
        self.axes = tuple(range(x.ndim - k, x.ndim))
        n = math.prod(x.shape[x.ndim - k:])
        self.n, self.inv_n, self.eps = n, 1.0 / max(n, 1), eps
        # rows of n entries: row sums are matrix-vector products, row dot products einsums, and
        # the full-size temporaries are updated in place (two allocations instead of five)
        xhat, rstd = self._normalized(x, n)
        self.saved = (x, w, xhat, rstd)
        if w is None and b is None:
            return B.reshape(B.copy(xhat), x.shape)  # the saved xhat must not be the output
        out = B.multiply(xhat, B.reshape(w, (n,))) if w is not None else B.copy(xhat)
        if b is not None:
            B.iadd(out, B.reshape(b, (n,)))
        return B.reshape(out, x.shape)

    def _normalized(self, x, n):
        """(xhat, rstd): x as rows of n entries, normalised, and the rows' 1/std as (N, 1)."""
        x2 = B.reshape(x, (-1, n))
        xc = B.subtract(x2, B.multiply(B.reduce(B.add, x2, (1,), True), self.inv_n))
        var = B.multiply(B.rowdot(xc, xc), self.inv_n)
        rstd = B.divide(1.0, B.sqrt(B.add(var, self.eps)))
        return B.imul(xc, rstd), rstd

    def backward(self, g):
        x, w, xhat, rstd = self.saved
        axes, inv_n = self.axes, self.inv_n
        if xhat is None and not isinstance(g, Tensor):  # a second backward (retained graph): the first used xhat up
            xhat, rstd = self._normalized(x, self.n)
        if isinstance(g, Tensor):  # create_graph: the statistics as differentiable functions of x
            xc = B.subtract(x, B.multiply(B.sum(x, axis=axes, keepdims=True), inv_n))
            var = B.multiply(B.sum(B.multiply(xc, xc), axis=axes, keepdims=True), inv_n)
            rstd = B.divide(1.0, B.sqrt(B.add(var, self.eps)))
            xhat = B.multiply(xc, rstd)
            gx = gw = None
            if self.needs(0):
                gy = B.multiply(g, w) if w is not None else g
                m1 = B.multiply(B.sum(gy, axis=axes, keepdims=True), inv_n)
                m2 = B.multiply(B.sum(B.multiply(gy, xhat), axis=axes, keepdims=True), inv_n)
                gx = B.multiply(B.subtract(B.subtract(gy, m1), B.multiply(xhat, m2)), rstd)
            if self.needs(1):
                gw = B.multiply(g, xhat)  # summed over the leading axes by the engine
            return gx, gw, (g if self.needs(2) else None)
        n = xhat.shape[1]
        g2 = B.reshape(g, (-1, n))
        if g2.dtype != xhat.dtype:  # (a gradient handed in another dtype: computed in the input's, as PyTorch)
            g2 = B.cast(g2, xhat.dtype)
        need = (self.needs(0), self.needs(1), self.needs(2))
        if need[0]:
            # xhat is this node's own array, not needed after this: the input gradient is written
            # over it, block by block in cache (a retained graph recomputes it from x)
            self.saved = (x, w, None, rstd)
        gx, gw, gb = B.layer_norm_backward_(g2, xhat, rstd, None if w is None else B.reshape(w, (n,)), inv_n, need)
        return (None if gx is None else B.reshape(gx, x.shape), None if gw is None else B.reshape(gw, w.shape),
                None if gb is None else B.reshape(gb, self.parents[2].shape))


class NllLoss(Function):
    """Negative log-likelihood: the entries of ``x`` (class dim 1, or 0 when 1-D) picked by the
    class indices ``t``, times the class ``weight``, with ``ignore_index`` targets left out;
    negated, and summed and averaged as ``reduction`` says. Cross-entropy is log_softmax then this:
    one node, no one-hot matrix. The backward needs only the indices, so it is exact under
    create_graph too."""

    def forward(self, x, t, weight, ignore_index, reduction):
        cdim = 1 if x.ndim > 1 else 0
        c = x.shape[cdim]
        t = B.asarray(t, np.int64)
        valid = B.not_equal(t, ignore_index)
        ignoring = not valid.all()
        tt = B.where(valid, t, 0) if ignoring else t
        if tt.size:
            lo, hi = tt.min(), tt.max()
            if lo < 0 or hi >= c:
                raise IndexError(f"Target {int(lo if lo < 0 else hi)} is out of bounds.")
        if cdim:
            grids = B.indices(tt.shape, sparse=True)
            index = (grids[0], tt) + tuple(grids[1:])  # picks x[n, t[n, *d], *d]
        else:
            index = (tt,)
        w = None
        if weight is not None or ignoring:
            w = B.asarray(weight[tt], x.dtype) if weight is not None else B.ones(tt.shape, x.dtype)
            if ignoring:
                w = B.asarray(B.where(valid, w, 0), x.dtype)
        if reduction == "none":
            denom = None
        elif reduction == "sum":
            denom = 1.0
        else:
            denom = float(w.sum()) if w is not None else float(tt.size)
        self.shape, self.index, self.weight, self.denom = x.shape, index, w, denom
        picked = B.take(x, index)
        if w is not None:
            picked = B.multiply(picked, w)
        if denom is None:
            return B.negative(picked)
        return B.asarray(B.reduce(B.add, picked, None) * self._scale(), x.dtype)

    def _scale(self) -> float:
        return -1.0 / self.denom if self.denom else float("nan")  # PyTorch: nan when all are ignored

    def backward(self, g):
        v = B.negative(g) if self.denom is None else B.multiply(g, self._scale())
        if self.weight is not None:
            v = B.multiply(v, self.weight)
        return (_put(_zeros(g, self.shape), self.index, v, False),)


class BinaryCrossEntropy(Function):
    """Elementwise -(t log x + (1 - t) log(1 - x)) with each log clamped at -100, as PyTorch; its
    input gradient is PyTorch's (x - t) / max(x (1 - x), 1e-12), finite where x is 0 or 1 (the
    composite of log and clamp would divide 0 by 0 there)."""

    def forward(self, x, t):
        self.saved = (x, t)
        with B.errstate(divide="ignore"):
            lx = B.maximum(B.log(x), -100.0)
            l1x = B.maximum(B.log(B.subtract(1, x)), -100.0)
        return B.negative(B.add(B.multiply(t, lx), B.multiply(B.subtract(1, t), l1x)))

    def backward(self, g):
        x, t = self.saved
        gx = gt = None
        if self.needs(0):
            gx = B.multiply(g, B.divide(B.subtract(x, t), B.maximum(B.multiply(x, B.subtract(1, x)), 1e-12)))
        if self.needs(1):
            with B.errstate(divide="ignore"):
                gt = B.multiply(g, B.subtract(B.maximum(B.log(B.subtract(1, x)), -100.0),
                                              B.maximum(B.log(x), -100.0)))
        return gx, gt


class Gelu(Function):
    """x * Phi(x), exact ('none') or with the tanh approximation ('tanh'): one blocked pass computes
    the output and, when a gradient is wanted (``deriv``), the derivative, so backward is one
    multiply. Under create_graph the derivative is rebuilt from x with differentiable ops."""

    def forward(self, x, approximate, deriv):
        out, d = B.gelu(x, approximate, deriv)
        self.approximate = approximate
        self.saved = (x, d)
        return out

    def backward(self, g):
        x, d = self.saved
        if isinstance(g, Tensor):
            return (B.multiply(g, _gelu_deriv(x, self.approximate)),)
        if d is None:  # a second backward through a retained graph: the first used d up
            d = B.gelu(x, self.approximate, True)[1]
        elif type(g) is np.ndarray and g.shape == d.shape and g.dtype == d.dtype:
            # d is this node's own array: the gradient is written into it (its memory is still
            # warm from forward; a fresh array's is not), so d is gone after this
            self.saved = (x, None)
            return (B.imul(d, g),)
        return (B.multiply(g, d),)


def _gelu_deriv(x: Any, approximate: str) -> Any:
    """d/dx of x Phi(x) from Tensor ops (so it can be differentiated again)."""
    if approximate == "none":
        phi = ((x * (1 / math.sqrt(2))).erf() + 1) * 0.5
        return phi + x * (x * x * -0.5).exp() * (1 / math.sqrt(2 * math.pi))
    c = math.sqrt(2 / math.pi)
    t = ((x + x * x * x * 0.044715) * c).tanh()
    return (t + 1) * 0.5 + x * (1 - t * t) * (x * x * (0.5 * c * 3 * 0.044715) + 0.5 * c)



# ---- fused cross-entropy ----------------------------------------------------------------------

class CrossEntropy(Function):
    """Mean or summed cross-entropy of (N, C) logits against N class indices (``ignore_index``
    ones left out, as NllLoss): log-softmax and the pick in one node. Forward keeps exp(x) or
    exp(x - max) and its row sums (backend.exp_sums), so backward is
    softmax(x) g / N with g / N taken off at the targets: two passes where log_softmax then
    nll_loss take six, and no (N, C) one-hot or zero matrix. The targets are checked here, not by
    the caller, so a replayed step (lightgrad.compile) checks each step's targets. Under
    create_graph the softmax is rebuilt from x with differentiable ops."""

    def forward(self, x, t, ignore_index, mean):
        n, c = x.shape
        t = B.asarray(t, np.int64)
        valid = B.not_equal(t, ignore_index)
        ignoring = not valid.all()
        tt = B.where(valid, t, 0) if ignoring else t
        if n:
            lo, hi = tt.min(), tt.max()
            if lo < 0 or hi >= c:
                raise IndexError(f"Target {int(lo if lo < 0 else hi)} is out of bounds.")
        self.count = count = int(valid.sum()) if ignoring else n
        self.scale = (1.0 / count if count else float("nan")) if mean else 1.0  # PyTorch: nan when all are ignored
        self.index = index = (B.arange(n), tt)
        self.keep = B.asarray(valid, x.dtype) if ignoring else None
        e, s, m = B.exp_sums(x, 1)
        picked = B.take(x, index)
        if m is not None:
            picked = B.subtract(picked, B.reshape(m, (n,)))  # x - max at the targets
        self.saved = (e, s)
        rows = B.subtract(B.log(B.reshape(s, (n,))), picked)
        if self.keep is not None:
            rows = B.multiply(rows, self.keep)
        return B.asarray(B.reduce(B.add, rows, None) * self.scale, x.dtype)

    def backward(self, g):
        e, s = self.saved
        keep = self.keep
        if not self.count:  # every target ignored: a zero gradient (PyTorch's), not nan
            if isinstance(g, Tensor):  # still part of the graph, as PyTorch's is
                return (B.multiply(self.parents[0].softmax(1), B.multiply(g, 0.0)),)
            return (_zeros(g, e.shape),)
        if isinstance(g, Tensor):
            onehot = B.zeros(e.shape, e.dtype)
            onehot[self.index] = 1
            gx = B.multiply(B.subtract(self.parents[0].softmax(1), Tensor._make(onehot)), B.multiply(g, self.scale))
            return (gx if keep is None else B.multiply(gx, Tensor._make(B.reshape(keep, (-1, 1)))),)
        c = B.multiply(g, self.scale)  # 0-d
        gx = B.multiply(e, B.divide(c, s))  # softmax * g / N, fresh
        gx[self.index] -= c
        if keep is not None:
            B.imul(gx, B.reshape(keep, (-1, 1)))  # ignored rows: no gradient
        return (gx,)

