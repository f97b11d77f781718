"""Fused kernels over sliding windows: convolution, fold/unfold and pooling, each one ``Function``.

Images are (N, C, H, W); 1-D ops reshape to H = 1 before calling these. Geometry arrives as
pairs: kernel k, stride s, dilation d, and pads = (top, bottom, left, right), uneven so that
padding='same' and ceil_mode pooling need no special case. Each op reads its input through a
strided view of kernel windows (no copy) and loops over the kh*kw kernel taps, never pixels.
Stride-1 convolutions have their own kernel, ``ConvStride1``: channels-last columns with the bias
folded into the product."""

from __future__ import annotations

from ... import backend as B
from ...function import Function, _put, _zeros
from ...tensor import Tensor

# ---- window geometry ---------------------------------------------------------------------------

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


# ---- fold / unfold and convolution -------------------------------------------------------------

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


# ---- stride-1 convolution, channels-last -------------------------------------------------------

def _split(a: B.ndarray, shapes: tuple[tuple[int, ...], ...]) -> B.ndarray:
    """A writeable view of ``a`` with each axis i split into the axes ``shapes[i]`` (C order
    inside each axis): the reshape of a sliced buffer, guaranteed to be a view."""
    shape: list[int] = []
    strides: list[int] = []
    for st, sub in zip(a.strides, shapes):
        inner, sts = st, []
        for size in reversed(sub):
            sts.append(inner)
            inner *= size
        shape += sub
        strides += reversed(sts)
    return B.as_strided(a, tuple(shape), tuple(strides))


def _zero_border(xp: B.ndarray, pads: tuple[int, int, int, int], h: int, w: int) -> None:
    """Zero the border strips of a channels-last (N, H', W', C) buffer padded around an h x w interior."""
    pt, _, pl, _ = pads
    for strip in (xp[:, :pt], xp[:, pt + h:], xp[:, pt:pt + h, :pl], xp[:, pt:pt + h, pl + w:]):
        strip.fill(0)


def _windows_last(xp: B.ndarray, k: tuple[int, int], d: tuple[int, int], out_hw: tuple[int, int]) -> B.ndarray:
    """The stride-1 windows of a padded channels-last image, (N, Ho, Wo, kh, kw, C), as a read-only view."""
    s0, s1, s2, s3 = xp.strides
    return B.as_strided(xp, (xp.shape[0], *out_hw, k[0], k[1], xp.shape[3]), (s0, s1, s2, s1 * d[0], s2 * d[1], s3),
                        writeable=False)


def _padded_last(x: B.ndarray, pads: tuple[int, int, int, int]) -> B.ndarray:
    """(N, H, W, C) channels-last copy of x (N, C, H, W), zero-padded by (top, bottom, left,
    right): one copy of the interior, and only the border strips are zeroed."""
    n, c, h, w = x.shape
    pt, pb, pl, pr = pads
    out = B.empty((n, h + pt + pb, w + pl + pr, c), x.dtype)
    _zero_border(out, pads, h, w)
    B.copyto(out[:, pt:pt + h, pl:pl + w], x.transpose(0, 2, 3, 1))
    return out


def _cols_last(xp: B.ndarray, k: tuple[int, int], d: tuple[int, int], out_hw: tuple[int, int],
               extra: int) -> B.ndarray:
    """Stride-1 im2col of a padded channels-last image: (N*Ho*Wo, kh*kw*C + extra), columns in
    (tap row, tap col, channel) order, one copy whose inner runs are C contiguous values (not
    W's handful as in NCHW); ``extra`` trailing columns are left for the caller (a ones column
    makes the bias part of the matrix product)."""
    n, _, _, c = xp.shape
    ho, wo = out_hw
    kk = k[0] * k[1] * c
    cols = B.empty((n * ho * wo, kk + extra), xp.dtype)
    B.copyto(_split(cols[:, :kk], ((n, ho, wo), (k[0], k[1], c))), _windows_last(xp, k, d, out_hw))
    return cols


# Bytes of columns per block of ``_cols_matmul``: a block must still be in cache (L2 here is 2 MiB
# a core) when the product reads it back; 0.25-4 MiB measured, 1 MiB best
_BLOCK_BYTES = 1 << 20


def _cols_matmul(x: B.ndarray, pads: tuple[int, int, int, int], k: tuple[int, int],
                 d: tuple[int, int], out_hw: tuple[int, int], wm: B.ndarray) -> B.ndarray:
    """``_cols_last`` of x (N, C, H, W) zero-padded by ``pads``, times ``wm``: (N*Ho*Wo, O).
    A few images at a time, each block padded channels-last, cut into columns
    and multiplied in buffers reused from block to block, so that the product reads columns
    still in cache instead of all of them written out to memory and read back. Measured on the
    input gradient of a 64x16x14x14 -> 32 channel 3x3 convolution (columns 14 MB): its CNN
    training step 15.9 -> 14.5 ms."""
    n, c, h, w = x.shape
    ho, wo = out_hw
    kk = k[0] * k[1] * c
    rows = ho * wo
    nb = max(1, min(n, _BLOCK_BYTES // (rows * kk * x.itemsize)))
    out = B.empty((n * rows, wm.shape[1]), x.dtype)
    buf = B.empty((nb * rows, kk), x.dtype)
    pt, pb, pl, pr = pads
    xp = B.empty((nb, h + pt + pb, w + pl + pr, c), x.dtype)
    _zero_border(xp, pads, h, w)  # once: each block rewrites only the interior
    inner = xp[:, pt:pt + h, pl:pl + w]
    src = x.transpose(0, 2, 3, 1)
    win = _windows_last(xp, k, d, out_hw)
    dst = _split(buf, ((nb, ho, wo), (k[0], k[1], c)))  # views made once: a block is a slice of each
    for n0 in range(0, n, nb):
        m = min(nb, n - n0)
        B.copyto(inner[:m], src[n0:n0 + m])
        B.copyto(dst[:m], win[:m])
        B.matmul_into(buf[:m * rows], wm, out[n0 * rows:(n0 + m) * rows])
    return out


# Bytes of the per-image products ``_image_products_sum`` holds at once (before summing them)
_SUM_BYTES = 4 << 20


def _image_products_sum(g: B.ndarray, cols: B.ndarray) -> B.ndarray:
    """sum over n of g[n] @ cols[n], for g (N, O, L) and cols (N, L, K): the weight gradient of
    a convolution, (O, K), as one product per image, a bounded chunk of images at a time (the
    products are N*O*K values). Against one long-K product of all columns with g made
    channels-last, it needs no transposed copy of g and each product reads one image's columns:
    the CNN training step (64x16x14x14 -> 32 channels, 3x3) 0.4-0.5 ms faster (of 13)."""
    n, o, _ = g.shape
    nb = max(1, min(n, _SUM_BYTES // (o * cols.shape[2] * g.itemsize)))
    out = B.sum(B.matmul(g[:nb], cols[:nb]), axis=0)
    for n0 in range(nb, n, nb):
        B.iadd(out, B.sum(B.matmul(g[n0:n0 + nb], cols[n0:n0 + nb]), axis=0))
    return out


def _to_first(y: B.ndarray, shape: tuple[int, int, int, int]) -> B.ndarray:
    """(N*H*W, C) channels-last rows as a contiguous (N, C, H, W) array."""
    n, c, h, w = shape
    out = B.empty(shape, y.dtype)
    B.copyto(out, y.reshape(n, h, w, c).transpose(0, 3, 1, 2))
    return out


def _grid_input_grad(g: B.ndarray, w: B.ndarray, x_shape: tuple[int, int, int, int], d: tuple[int, int],
                     pads: tuple[int, int, int, int]) -> B.ndarray:
    """The input gradient (N, C, H, W) of a stride-1 convolution whose padding is at most the
    dilated kernel's reach, from g (N, O, Ho, Wo), as one wide product and kh*kw shifted adds.

    g is laid out channels-first on a flat grid, (O, N*Hg*Wg): each row of Wo values followed by
    zw zeros, each image's Ho rows by zh zero rows, zeros before and after. Then every kernel tap
    (i, j) is a fixed shift of the flat index (a tap that reads outside g reads one of the zeros),
    so the product P = (kh*kw*C, O) @ (O, grid) holds every tap's contribution and the gradient is
    the sum of kh*kw shifted slices of P, adds over runs of the whole grid. Against im2col of the
    padded gradient (``_cols_matmul``) it copies no columns and is one product wide enough for
    both BLAS threads (im2col's blocks of a few images barely use the second): 64x16x14x14 input,
    32 3x3 filters, 2.2 -> 1.5 ms alone, the MNIST CNN training step about 5% faster (with one
    BLAS thread both take the same time). It adds (kh*kw-1)*C values per grid entry where im2col
    copies kh*kw*O, so it is used only with fewer input than output channels."""
    n, o, ho, wo = g.shape
    _, c, h, wd = x_shape
    kh, kw = w.shape[2:]
    pt, pb, pl, pr = pads
    rh, rw = d[0] * (kh - 1), d[1] * (kw - 1)  # the kernel's reach
    zh, zw = max(rh - pt, rh - pb), max(rw - pl, rw - pr)  # rows and columns of zeros between
    hg, wg = ho + zh, wo + zw
    ng = n * hg * wg
    lead = (rh - pt) * wg + rw - pl  # the most negative tap offset, before the grid ...
    tot = lead + ng + pt * wg + pl  # ... and the most positive one, after it
    gp = B.empty((o, tot), g.dtype)
    gp[:, :lead].fill(0)
    gp[:, lead + ng:].fill(0)
    grid = B.reshape(gp[:, lead:lead + ng], (o, n, hg, wg))  # a view (the last axis split): written through
    grid[:, :, ho:].fill(0)
    grid[:, :, :ho, wo:].fill(0)
    B.copyto(grid[:, :, :ho, :wo], g.transpose(1, 0, 2, 3))
    wt = B.empty((kh, kw, c, o), w.dtype)
    B.copyto(wt, w.transpose(2, 3, 1, 0))
    p = B.reshape(B.matmul(B.reshape(wt, (kh * kw * c, o)), gp), (kh * kw, c, tot))
    # gx[h, w] gets tap (i, j) of g[h + pt - i*d0, w + pl - j*d1]: a shift of the flat index
    starts = [lead + (pt - i * d[0]) * wg + pl - j * d[1] for i in range(kh) for j in range(kw)]
    out = B.empty((c, ng), g.dtype)
    if len(starts) == 1:
        B.copyto(out, p[0, :, starts[0]:starts[0] + ng])
    else:
        B.xp.add(p[0, :, starts[0]:starts[0] + ng], p[1, :, starts[1]:starts[1] + ng], out=out)
        for t in range(2, len(starts)):
            B.iadd(out, p[t, :, starts[t]:starts[t] + ng])
    gx = B.empty(x_shape, g.dtype)
    B.copyto(gx, B.reshape(out, (c, n, hg, wg))[:, :, :h, :wd].transpose(1, 0, 2, 3))
    return gx


# Measured on (64, C, 28, 28) and (64, C, 14, 14) images with 16-32 output channels: below 8
# input channels NCHW columns are the cheaper copy and col2im the cheaper input gradient (the
# full convolution's columns are kh*kw*O wide, col2im adds kh*kw*C values per pixel)
_LAST_MIN_CHANNELS = 8


class ConvStride1(Conv2d):
    """Conv2d (groups 1, stride 1) as plain matrix products with the bias folded in: the columns
    carry a row (or column) of ones, the weight matrix the bias, so the forward is one product
    and the weight and bias gradients are products of the gradient with the same columns (one
    per image, summed: ``_image_products_sum``).

    With several input channels the columns are channels-last, (N*Ho*Wo, kh*kw*C + 1): the copy's
    inner runs are C contiguous values (not a handful of W's as in NCHW), and each product is
    one 2-D GEMM. With few channels they are NCHW, (N, C*kh*kw + 1, Ho*Wo), whose product
    already is (N, O, Ho*Wo). With channels-last columns the input gradient is the full
    convolution of the gradient with the flipped kernel instead of col2im's scatter-adds: with
    fewer input than output channels one product over the zero-spaced grid of g and shifted
    adds (``_grid_input_grad``), else channels-last im2col of the padded gradient and GEMM, a
    block of images at a time (``_cols_matmul``). Inputs and outputs stay (N, C, H, W).
    Under create_graph it falls back to Conv2d's differentiable backward.

    Measured (64x16x14x14 input, 32 3x3 filters, float32): forward 2.8 -> 1.7 ms, backward
    6.9 -> 3.7 ms (the input gradient 4.2 -> 2.6 ms, of which col2im's adds were 3.4 ms; the
    grid product then took it to 1.5 ms)."""

    def name(self) -> str:
        return "Conv2dBackward0"

    def forward(self, x, w, b, s, d, pads, groups):
        n, c, h, wd = x.shape
        o, _, kh, kw = w.shape
        k = (kh, kw)
        ho, wo = _out_hw((h, wd), k, s, d, pads)
        kk = kh * kw * c
        extra = b is not None
        self.last = c >= _LAST_MIN_CHANNELS
        if self.last:
            cols = _cols_last(_padded_last(x, pads), k, d, (ho, wo), extra)
            wm = B.empty((kk + extra, o), w.dtype)  # (kh*kw*C [+1], O)
            B.copyto(B.reshape(wm[:kk], (kh, kw, c, o)), w.transpose(2, 3, 1, 0))  # wm[:kk] is contiguous
            if extra:
                cols[:, kk] = 1
                wm[kk] = b
            out = _to_first(B.matmul(cols, wm), (n, o, ho, wo))
        else:
            cols = B.empty((n, kk + extra, ho * wo), x.dtype)
            B.copyto(_split(cols[:, :kk], ((n,), (c, kh, kw), (ho, wo))),
                      _windows(_padded(x, pads), k, s, d, (ho, wo)))
            wm = B.empty((o, kk + extra), w.dtype)  # (O, C*kh*kw [+1])
            B.copyto(wm[:, :kk], B.reshape(w, (o, kk)))
            if extra:
                cols[:, kk] = 1
                wm[:, kk] = b
            out = B.reshape(B.matmul(wm, cols), (n, o, ho, wo))
        self.geom, self.groups = (k, s, d, pads), groups
        self.saved = (x, w, cols)
        return out

    def backward(self, g):
        if isinstance(g, Tensor):
            return super().backward(g)  # its formulas recompute NCHW columns from x
        x, w, cols = self.saved
        k, s, d, pads = self.geom
        n, c, h, wd = x.shape
        o, kh, kw = w.shape[0], k[0], k[1]
        kk = kh * kw * c
        ho, wo = g.shape[2:]
        gx = gw = gb = None
        if self.needs(1) or self.needs(2):
            # (O, kh*kw*C [+1]) as one product per image, summed; the columns are (N, Ho*Wo, K)
            # channels-last, (N, K, Ho*Wo) else
            cn = B.reshape(cols, (n, ho * wo, -1)) if self.last else B.swapaxes(cols, 1, 2)
            gwb = _image_products_sum(B.reshape(g, (n, o, ho * wo)), cn)
            if self.needs(1):
                if self.last:
                    gw = B.empty(w.shape, w.dtype)
                    B.copyto(gw, gwb[:, :kk].reshape(o, kh, kw, c).transpose(0, 3, 1, 2))
                else:
                    gw = B.reshape(B.copy(gwb[:, :kk]), w.shape)
            if self.needs(2):
                gb = B.copy(gwb[:, kk])
        if self.needs(0) and not self.last:
            wt = B.swapaxes(B.reshape(w, (o, kk)), 0, 1)  # (C*kh*kw, O)
            gx = _col2im(B.matmul(wt, B.reshape(g, (n, o, ho * wo))), x.shape, k, s, d, pads)
        elif self.needs(0) and c < o:
            gx = _grid_input_grad(g, w, x.shape, d, pads)
        elif self.needs(0):
            # g padded by the kernel's reach less the forward padding, correlated with the
            # flipped kernel: tap (i, j) of this full convolution is tap (kh-1-i, kw-1-j) of w
            reach = (d[0] * (kh - 1), d[1] * (kw - 1))
            gpads = (reach[0] - pads[0], reach[0] - pads[1], reach[1] - pads[2], reach[1] - pads[3])
            wf = B.empty((kh, kw, o, c), w.dtype)
            B.copyto(wf, w[:, :, ::-1, ::-1].transpose(2, 3, 0, 1))
            wf2 = B.reshape(wf, (kh * kw * o, c))  # (kh*kw*O, C)
            y = _cols_matmul(g, gpads, k, d, (h, wd), wf2)
            gx = _to_first(y, x.shape)
        return gx, gw, gb


# ---- pooling -----------------------------------------------------------------------------------

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
        # the native kernel: values and winning taps
        fused = B.max_pool2x2(x) if self.pair and tuple(out_hw) == (x.shape[2] // 2, x.shape[3] // 2) else None
        if fused is not None:
            self.pair = False  # (its taps are saved as the general path's)
            out, arg = fused
            self.saved = (arg,)
        elif self.pair:
            out = self._forward_pairs(x, out_hw)
        else:
            low = -B.xp.inf if x.dtype.kind == "f" else B.xp.iinfo(x.dtype).min
            v = _windows(_padded(x, pads, low), k, s, d, out_hw)
            out = B.copy(v[:, :, 0, 0])
            arg = B.zeros(out.shape, B.xp.uint8 if k[0] * k[1] < 256 else B.xp.int32)  # the winning tap
            for t in range(1, k[0] * k[1]):
                tap = v[:, :, t // k[1], t % k[1]]
                # strict: the first maximum wins ties; a NaN always takes the window (PyTorch's
                # `val > max || isnan(val)`: the last NaN gets the gradient)
                win = B.greater(tap, out)
                if x.dtype.kind == "f":
                    win |= B.not_equal(tap, tap)  # (isnan, with its mask from the arena when one is active)
                B.xp.putmask(arg, win, t)
                B.xp.maximum(out, tap, out=out)  # and NaN propagates, as in PyTorch
            self.saved = (arg,)
        if sink is not None:
            tap = self._arg().astype(B.xp.int64)
            rows = B.arange(out_hw[0]).reshape(-1, 1) * s[0] + (tap // k[1]) * d[0] - pads[0]
            cols = B.arange(out_hw[1]) * s[1] + (tap % k[1]) * d[1] - pads[2]
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
        # the right/bottom element wins only when strictly greater (ties go to the first maximum)
        # or when it is NaN: PyTorch's scan gives a window's gradient to its last NaN
        wsel, hsel = B.greater(right, left), B.greater(bottom, top)
        if x.dtype.kind == "f":
            wsel |= B.not_equal(right, right)  # (isnan, with its mask from the arena when one is active)
            hsel |= B.not_equal(bottom, bottom)
        self.saved = (wsel, hsel)
        return B.maximum(top, bottom)

    def _arg(self):
        """The winning tap of each window (0 .. kh*kw-1, row-major)."""
        if not self.pair:
            return self.saved[0]
        wsel, hsel = self.saved
        return B.add(B.multiply(hsel, 2), B.where(hsel, wsel[:, :, :, 1], wsel[:, :, :, 0])).astype(B.xp.uint8)

    def backward(self, g):
        k, s, d, pads, out_hw = self.geom
        if isinstance(g, Tensor):  # create_graph: one-hot columns folded back, differentiably
            nk = k[0] * k[1]
            hot = B.equal(B.expand_dims(self._arg(), 2), B.arange(nk).reshape(nk, 1, 1)).astype(g.dtype.np)
            cols = g.unsqueeze(2) * Tensor._make(hot)
            return (Fold.apply(cols.reshape(g.shape[0], -1, out_hw[0] * out_hw[1]), shape=self.shape,
                               k=k, s=s, d=d, pads=pads),)
        if not self.pair:
            arg = self.saved[0]
            if k == s == (2, 2) and d == (1, 1) and not any(pads):
                gx = B.max_pool2x2_backward(g, arg, self.shape)
                if gx is not None:
                    return (gx,)
            # multiplying by the mask is several times faster than a ``where`` here
            return (_scatter_taps(lambda t: B.multiply(g, B.equal(arg, t)), g.dtype, self.shape, k, s, d, pads,
                                  out_hw),)
        wsel, hsel = self.saved
        n, c, h, w = self.shape
        ho, wo = out_hw
        gh = B.empty((n, c, ho, 2, wo), g.dtype)  # the gradient routed to the winning row ...
        B.xp.multiply(g, hsel, out=gh[:, :, :, 1])
        B.xp.multiply(g, B.logical_not(hsel), out=gh[:, :, :, 0])
        gx = B.empty((n, c, ho, 2, wo, 2), g.dtype)  # ... then to the winning column
        B.xp.multiply(gh, wsel, out=gx[..., 1])
        B.xp.multiply(gh, B.logical_not(wsel), out=gx[..., 0])
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
