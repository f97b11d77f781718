"""Fused recurrent layers: one ``Function`` per RNN, LSTM or GRU layer and direction.

Each runs the whole time loop through the backend: for RNN and GRU the input projections xp
(T, B, G) of every step come in precomputed (one matmul per layer, outside), so a step is one
(B, H) x (H, G) product plus pointwise work; LSTM puts x_t and the bias into that product instead.
The graph has one node instead of ~15 per step. Backward is backpropagation through time over the
saved activations; the weights' gradients are one matrix product over all steps at the end."""

from __future__ import annotations

from ... import backend as B
from ...function import Function
from ...tensor import Tensor

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
    B.xp.tanh(a, out=a)
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
            B.xp.matmul(h, whT, out=a)
            a += xp[t]
            if relu:
                B.xp.maximum(a, 0, out=a)
            else:
                B.xp.tanh(a, out=a)
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
            B.xp.add(g[t], dh, out=d)
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
    maps the i, f, o parts to (1 + tanh) / 2; every op is a whole, contiguous (B, 4H) block.
    Where the native kernels take the arrays (float32), the input projections of all steps are
    one product before the loop, and the whole time loop is one native call (``B.lstm_layer``:
    each step's h W_hh by a small-matrix kernel, then the gate math), its backward likewise
    (``B.lstm_layer_backward``); where that kernel is not built for the CPU or the hidden size
    (a multiple of 32), a step is BLAS's h W_hh plus one native pass (``B.lstm_cell``) that adds it
    and the bias to the step's projection and does the gate math (``B.lstm_cell_backward`` back)."""

    def forward(self, x, w_ih, w_hh, b_ih, b_hh, h0, c0, reverse):
        t_len, batch, n_in = x.shape
        hid = h0.shape[1]
        k = hid + n_in + (b_ih is not None)
        hx = B.empty((t_len, batch, k), x.dtype)  # step t's [h_{t-1}, x_t, 1], saved for backward
        hx[:, :, hid:hid + n_in] = x
        if b_ih is not None:
            hx[:, :, -1] = 1
        steps = _steps(t_len, reverse)
        hx[steps[0], :, :hid] = h0
        out = B.empty((t_len + 1, batch, hid), x.dtype)
        gates = B.empty((t_len, batch, 4 * hid), x.dtype)  # activated gates, saved for backward
        cells = B.empty((t_len, batch, hid), x.dtype)
        tanh_c = B.empty((t_len, batch, hid), x.dtype)
        if B.rnn_layer_takes(hid, h0, c0, w_hh, b_ih, b_hh):
            # the input projections of all steps in one product (one large GEMM runs faster than
            # the x parts of T small ones: 0.79 against 0.92 ms at the benchmark's shapes), then the
            # whole time loop in one native call
            B.xp.matmul(B.reshape(x, (t_len * batch, n_in)), B.transpose(w_ih),
                        out=B.reshape(gates, (t_len * batch, 4 * hid)))
            bias = B.add(b_ih, b_hh) if b_ih is not None else None
            B.lstm_layer(gates, w_hh, bias, h0, c0, cells, tanh_c, out, hx, reverse)
            out[t_len] = cells[steps[-1]]
        else:
            out[t_len] = self._forward_steps(x, w_ih, w_hh, b_ih, b_hh, h0, c0, steps, hx, out, gates, cells, tanh_c)
        self.reverse = reverse
        self.saved = (w_ih, w_hh, c0, hx, out, gates, cells, tanh_c)
        return out

    @staticmethod
    def _forward_steps(x, w_ih, w_hh, b_ih, b_hh, h0, c0, steps, hx, out, gates, cells, tanh_c):
        """The forward a step at a time, with the halved weights W (see the class): a native pass a
        step after BLAS's product where the step kernel takes the arrays, else NumPy's gate math.
        Returns the final cell state."""
        t_len, batch, n_in = x.shape
        hid = h0.shape[1]
        h2, h3 = 2 * hid, 3 * hid
        half = B.ones(4 * hid, x.dtype)
        half[:h2] = half[h3:] = 0.5
        shift = B.xp.subtract(1, half)  # 0.5 for i, f, o; 0 for g
        w = B.empty((hx.shape[2], 4 * hid), x.dtype)
        B.xp.multiply(B.transpose(w_hh), half, out=w[:hid])
        B.xp.multiply(B.transpose(w_ih), half, out=w[hid:hid + n_in])
        if b_ih is not None:
            B.xp.add(b_ih, b_hh, out=w[-1])
            w[-1] *= half
        mm, add, mul, tanh = B.xp.matmul, B.xp.add, B.xp.multiply, B.xp.tanh
        c = c0
        step = steps.step
        if B.rnn_native(h0, c0, gates):
            # the input projections in one product, then a native pass a step that adds BLAS's
            # h W_hh and the bias, and does the gate math
            mm(B.reshape(x, (t_len * batch, n_in)), w[hid:hid + n_in], out=B.reshape(gates, (t_len * batch, 4 * hid)))
            bias = w[-1] if b_ih is not None else None
            zh = B.xp.empty((batch, 4 * hid), x.dtype)
            h = h0
            for t in steps:
                nxt = hx[t + step] if 0 <= t + step < t_len else None
                mm(h, w[:hid], out=zh)
                B.lstm_cell(gates[t], zh, bias, c, cells[t], tanh_c[t], out[t], nxt)
                c, h = cells[t], out[t]
            return c
        tmp = B.xp.empty((batch, hid), x.dtype)
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
        return c

    def backward(self, g):
        if isinstance(g, Tensor):
            raise RuntimeError(_NO_DOUBLE)
        w_ih, w_hh, c0, hx, out, gates, cells, tanh_c = self.saved
        t_len, batch, k = hx.shape
        hid, n_in = c0.shape[1], w_ih.shape[1]
        dz = B.empty(gates.shape, gates.dtype)
        dh = B.zeros((batch, hid), gates.dtype)
        dc = B.copy(g[t_len])
        if B.rnn_layer_takes(hid, g, c0, gates, w_hh):  # the whole loop in one native call
            B.lstm_layer_backward(g, dz, dh, dc, gates, cells, tanh_c, c0, w_hh, self.reverse)
        elif B.rnn_native(g, c0, gates):  # each step's gate math in one native pass
            first, back = (t_len - 1, 1) if self.reverse else (0, -1)  # c_{t-1} is cells[t + back]
            for t in _steps(t_len, not self.reverse):
                B.lstm_cell_backward(g[t], dh, dc, gates[t], c0 if t == first else cells[t + back], tanh_c[t], dz[t])
                B.xp.matmul(dz[t], w_hh, out=dh)
        else:
            _lstm_backward_steps(g, gates, cells, tanh_c, c0, w_hh, self.reverse, dz, dh, dc)
        flat = B.reshape(dz, (-1, 4 * hid))
        gw = B.matmul(B.transpose(flat), B.reshape(hx, (-1, k)))  # (4H, K): [dW_hh, dW_ih, db]
        gb = gw[:, -1] if k > hid + n_in else None
        gx = B.reshape(B.matmul(flat, w_ih), (t_len, batch, n_in)) if self.needs(0) else None
        return gx, gw[:, hid:hid + n_in], gw[:, :hid], gb, gb, dh, dc


_LSTM_BLOCK = 8  # time steps per block of the backward's step-independent passes


def _lstm_backward_steps(g, gates, cells, tanh_c, c0, w_hh, reverse, dz, dh, dc):
    """The NumPy path of the LSTM backward's step loop: dz, and dh, dc (given as zeros and the final
    cell's gradient) become the gradients reaching h0 and c0."""
    t_len, batch, hid = tanh_c.shape
    # everything that does not depend on the recurrence first, so that the step loop is only
    # dh -> dc -> gate gradients -> dh through W_hh; in blocks of steps whose arrays stay
    # in the CPU cache across the dozen passes (whole arrays: ~3% slower per training step)
    to_c = B.empty(tanh_c.shape, gates.dtype)
    for lo in range(0, t_len, _LSTM_BLOCK):
        _lstm_factors(gates, cells, tanh_c, c0, lo, min(lo + _LSTM_BLOCK, t_len), reverse, dz, to_c)
    z4 = B.reshape(dz, (t_len, batch, 4, hid))
    f = B.reshape(gates, z4.shape)[:, :, 1]
    tmp = B.xp.empty((batch, hid), gates.dtype)
    for t in _steps(t_len, not reverse):
        dh += g[t]
        B.xp.multiply(dh, to_c[t], out=tmp)
        dc += tmp
        zt = z4[t]
        B.xp.multiply(zt[:, :3], dc[:, None, :], out=zt[:, :3])
        B.xp.multiply(zt[:, 3], dh, out=zt[:, 3])
        dc *= f[t]
        B.xp.matmul(dz[t], w_hh, out=dh)


def _lstm_factors(gates, cells, tanh_c, c0, lo, hi, reverse, dz, to_c):
    """For steps lo..hi-1: dz = each gate's factor, its derivative (s (1 - s) for i, f, o;
    1 - g^2 for g) times what the gate multiplies (g, c_{t-1}, i, tanh(c_t)), which the step
    loop scales by dc (i, f, g) or dh (o); to_c = d c_t / d h_t = o (1 - tanh(c_t)^2). Written
    in place: passes over memory, not temporaries, are what this costs."""
    t_len, hid = gates.shape[0], c0.shape[1]
    h2, h3 = 2 * hid, 3 * hid
    ga, d = gates[lo:hi], dz[lo:hi]
    g4, d4 = B.reshape(ga, (*ga.shape[:2], 4, hid)), B.reshape(d, (*d.shape[:2], 4, hid))
    B.xp.multiply(ga, ga, out=d)
    B.xp.subtract(ga[..., :h2], d[..., :h2], out=d[..., :h2])
    B.xp.subtract(ga[..., h3:], d[..., h3:], out=d[..., h3:])
    B.xp.subtract(1, d[..., h2:h3], out=d[..., h2:h3])
    B.xp.multiply(d4[:, :, 0], g4[:, :, 2], out=d4[:, :, 0])
    # c_{t-1} is the cell of the step processed before (t + 1 when reversed), c0 for the first
    first = t_len - 1 if reverse else 0
    a, b, shift = (lo, min(hi, t_len - 1), 1) if reverse else (max(lo, 1), hi, -1)
    B.xp.multiply(d4[a - lo:b - lo, :, 1], cells[a + shift:b + shift], out=d4[a - lo:b - lo, :, 1])
    if lo <= first < hi:
        B.xp.multiply(d4[first - lo, :, 1], c0, out=d4[first - lo, :, 1])
    B.xp.multiply(d4[:, :, 2], g4[:, :, 0], out=d4[:, :, 2])
    th, tc = tanh_c[lo:hi], to_c[lo:hi]
    B.xp.multiply(d4[:, :, 3], th, out=d4[:, :, 3])
    B.xp.multiply(th, th, out=tc)
    B.xp.subtract(1, tc, out=tc)
    B.xp.multiply(tc, g4[:, :, 3], out=tc)


class GRULayer(Function):
    """GRU over a sequence with PyTorch's gate order (r, z, n); xp holds b_ih, and b_hh stays
    inside (n = tanh(xp_n + r * (h W_hn^T + b_hn))). Returns the (T, B, H) outputs. Where the
    native kernels take the layer (float32, a hidden size that is a multiple of 32), the whole time
    loop is one native call each way (``B.gru_layer``, ``B.gru_layer_backward``); else a native pass
    a step after BLAS's product, or NumPy's gate math."""

    def forward(self, xp, w_hh, b_hh, h0, reverse):
        t_len, hid = xp.shape[0], h0.shape[1]
        out = B.empty((t_len, *h0.shape), xp.dtype)
        gates = B.empty(xp.shape, xp.dtype)  # activated r, z, n
        hn = B.empty((t_len, *h0.shape), xp.dtype)  # h W_hn^T + b_hn, saved for backward
        self.reverse = reverse
        self.saved = (w_hh, h0, out, gates, hn)
        if B.rnn_layer_takes(hid, xp, h0, w_hh, b_hh):  # the whole time loop in one native call
            B.gru_layer(xp, w_hh, b_hh, h0, gates, hn, out, reverse)
            return out
        whT = B.copy(B.transpose(w_hh))  # contiguous: a faster GEMM per step
        h = h0
        if B.rnn_native(xp, h0, gates) and (b_hh is None or B.rnn_native(b_hh)):  # one native pass a step
            hp = B.xp.empty((h0.shape[0], 3 * hid), xp.dtype)
            for t in _steps(t_len, reverse):
                B.xp.matmul(h, whT, out=hp)
                B.gru_cell(xp[t], hp, b_hh, h, gates[t], hn[t], out[t])
                h = out[t]
        else:
            for t in _steps(t_len, reverse):
                hp = B.matmul(h, whT)
                if b_hh is not None:
                    hp += b_hh
                z = gates[t]
                B.xp.add(xp[t, :, :2 * hid], hp[:, :2 * hid], out=z[:, :2 * hid])
                _sigmoid_(z[:, :2 * hid])
                hn[t] = hp[:, 2 * hid:]
                n = z[:, 2 * hid:]
                B.xp.multiply(z[:, :hid], hn[t], out=n)
                n += xp[t, :, 2 * hid:]
                B.xp.tanh(n, out=n)
                o = out[t]
                B.xp.subtract(h, n, out=o)  # h' = n + u * (h - n)
                o *= z[:, hid:2 * hid]
                o += n
                h = o
        return out

    def backward(self, g):
        if isinstance(g, Tensor):
            raise RuntimeError(_NO_DOUBLE)
        w_hh, h0, out, gates, hn = self.saved
        t_len, hid = gates.shape[0], h0.shape[1]
        prev = _prev_states(out, h0, self.reverse)
        if B.rnn_layer_takes(hid, gates, w_hh) and g.dtype == gates.dtype:  # the whole loop in one native call
            if not g.flags.c_contiguous:  # (a bidirectional layer's half of the concatenated gradient)
                g = B.copy(g)
            dx, dhp = B.empty(gates.shape, gates.dtype), B.empty(gates.shape, gates.dtype)
            carry, dm = B.zeros(h0.shape, gates.dtype), B.zeros(h0.shape, gates.dtype)
            B.gru_layer_backward(g, carry, dm, gates, hn, prev, dx, dhp, w_hh, self.reverse)
            return self._weight_grads(dx, dhp, prev, B.add(carry, dm))
        if B.rnn_native(g, gates):  # one native pass a step
            dx, dhp = B.empty(gates.shape, gates.dtype), B.empty(gates.shape, gates.dtype)
            carry, dm = B.zeros(h0.shape, gates.dtype), B.zeros(h0.shape, gates.dtype)
            for t in _steps(t_len, not self.reverse):
                B.gru_cell_backward(g[t], carry, dm, gates[t], hn[t], prev[t], dx[t], dhp[t])
                B.xp.matmul(dhp[t], w_hh, out=dm)
            return self._weight_grads(dx, dhp, prev, B.add(carry, dm))
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
            B.xp.multiply(dh, to_n[t], out=dn)
            B.xp.multiply(dn, r[t], out=dhp[t, :, 2])
            B.xp.multiply(dn, to_r[t], out=dhp[t, :, 0])
            B.xp.multiply(dh, to_u[t], out=dhp[t, :, 1])
            dh *= u[t]
            dh += B.matmul(B.reshape(dhp[t], (-1, 3 * hid)), w_hh)
        dx[:, :, :2] = dhp[:, :, :2]
        return self._weight_grads(dx, dhp, prev, dh)

    def _weight_grads(self, dx, dhp, prev, dh):
        """(input projections', W_hh's, b_hh's, h0's gradients) from the step loop's results."""
        hid = prev.shape[2]
        flat = B.reshape(dhp, (-1, 3 * hid))
        gw = B.matmul(B.transpose(flat), B.reshape(prev, (-1, hid)))
        gb = B.sum(flat, axis=0) if self.needs(2) else None
        return B.reshape(dx, (*prev.shape[:2], 3 * hid)), gw, gb, dh
