"""Convolution (1-D, 2-D, 3-D, transposed) and fold/unfold (``F.conv2d``, ``F.unfold`` ...).

2-D convolution runs through the window kernels (im2col and one matrix product per convolution),
except stride-1 convolutions, which take ``K.ConvStride1`` (bias folded into the product,
channels-last; its docstring gives the measured choices). 1-D ops are the 2-D ops on a height-1
image; 3-D ones are composed from 2-D ones."""

from __future__ import annotations

from typing import Any

from ... import function as Fn
from ...tensor import Tensor, stack
from . import _window_kernels as K
from ._common import IntOr, _as_2d, _batched, _tuple

# ---- geometry and checks -----------------------------------------------------------------------

def _conv_pads(padding: Any, k: tuple[int, ...], s: tuple[int, ...], d: tuple[int, ...],
               name: str) -> tuple[int, int, int, int]:
    """(top, bottom, left, right) from an int, a tuple, 'valid' or 'same' (extra on the far side)."""
    if isinstance(padding, str):
        if padding == "valid":
            return (0, 0, 0, 0)
        if padding != "same":
            raise ValueError(f"Invalid padding string '{padding}', should be one of ('valid', 'same')")
        if any(si != 1 for si in s):
            raise RuntimeError("padding='same' is not supported for strided convolutions")
        tot = [di * (ki - 1) for di, ki in zip(d, k)]
        return (tot[0] // 2, tot[0] - tot[0] // 2, tot[1] // 2, tot[1] - tot[1] // 2)
    p = _tuple(padding, 2, "padding")
    if min(p) < 0:
        raise RuntimeError(f"{name}: negative padding is not supported, got padding={list(p)}")
    return (p[0], p[0], p[1], p[1])


def _check_conv(name: str, x: Tensor, w: Tensor, b: Tensor | None, groups: int, cin: int) -> None:
    if w.ndim != x.ndim:
        raise RuntimeError(f"{name}: expected weight to be {x.ndim}-dimensional for input of size "
                           f"{list(x.shape)}, but got weight of size {list(w.shape)}")
    if groups < 1:
        raise RuntimeError(f"non-positive groups is not supported, got groups={groups}")
    if x.dtype != w.dtype or (b is not None and b.dtype != w.dtype):
        got = f"bias type ({b.dtype})" if b is not None and b.dtype != w.dtype else f"weight type ({w.dtype})"
        raise RuntimeError(f"Input type ({x.dtype}) and {got} should be the same")
    if x.shape[1] != cin:
        raise RuntimeError(f"Given groups={groups}, weight of size {list(w.shape)}, expected input"
                           f"{list(x.shape)} to have {cin} channels, but got {x.shape[1]} channels instead")


def _conv_out(x: Tensor, k: tuple[int, ...], s: tuple[int, ...], d: tuple[int, ...],
              pads: tuple[int, int, int, int]) -> tuple[int, int]:
    ho, wo = K._out_hw(x.shape[2:], k, s, d, pads)
    if ho <= 0 or wo <= 0:
        ph, pw = x.shape[2] + pads[0] + pads[1], x.shape[3] + pads[2] + pads[3]
        raise RuntimeError(f"Calculated padded input size per channel: ({ph} x {pw}). Kernel size: "
                           f"({d[0] * (k[0] - 1) + 1} x {d[1] * (k[1] - 1) + 1}). Kernel size can't be "
                           "greater than actual input size")
    return ho, wo


def _fast_conv(x: Tensor, w: Tensor, s: tuple[int, ...], pads: tuple[int, int, int, int], d: tuple[int, ...],
               groups: int) -> bool:
    """Whether conv2d takes ``K.ConvStride1``: float, groups 1, stride 1, and padding at most the
    dilated kernel's reach (so that the input gradient is a plain full convolution)."""
    k = w.shape[2:]
    return (groups == 1 and s == (1, 1) and x._data.dtype.kind == "f"
            and pads[0] <= d[0] * (k[0] - 1) and pads[1] <= d[0] * (k[0] - 1)
            and pads[2] <= d[1] * (k[1] - 1) and pads[3] <= d[1] * (k[1] - 1))


# ---- 1-D and 2-D convolution -------------------------------------------------------------------

def _conv(name: str, nd: int, input: Tensor, weight: Tensor, bias: Tensor | None, stride: Any,
          padding: Any, dilation: Any, groups: int) -> Tensor:
    x, batched = _batched(input, nd, name)
    w = weight
    if nd == 1:
        x, w = _as_2d(x), (_as_2d(w) if w.ndim == 3 else w)
        s, d = (1,) + _tuple(stride, 1, "stride"), (1,) + _tuple(dilation, 1, "dilation")
    else:
        s, d = _tuple(stride, 2, "stride"), _tuple(dilation, 2, "dilation")
    if w.ndim != 4:
        raise RuntimeError(f"{name}: expected weight to be {nd + 2}-dimensional, but got weight of size "
                           f"{list(weight.shape)}")
    if w.shape[0] % groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by {groups} at dimension 0, "
                           f"but got weight of size {list(weight.shape)} instead")
    _check_conv(name, x, w, bias, groups, w.shape[1] * groups)
    if min(s) <= 0:
        raise RuntimeError(f"non-positive stride is not supported, got stride={list(s[-nd:])}")
    k = (w.shape[2], w.shape[3])
    if isinstance(padding, str) or nd == 2:
        pads = _conv_pads(padding, k, s, d, name)
    else:
        p = _tuple(padding, 1, "padding")[0]
        pads = (0, 0, p, p)
    _conv_out(x, k, s, d, pads)
    op = K.ConvStride1 if _fast_conv(x, w, s, pads, d, groups) else K.Conv2d
    out = op.apply(x, w, bias, s=s, d=d, pads=pads, groups=groups)
    if nd == 1:
        out = out.squeeze(2)
    return out if batched else out.squeeze(0)


def conv2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: IntOr = 1,
           padding: IntOr | str = 0, dilation: IntOr = 1, groups: int = 1) -> Tensor:
    """2-D convolution (cross-correlation) of (N, C, H, W) with weight (O, C/groups, kh, kw).

    >>> conv2d(lightgrad.randn(1, 3, 8, 8), lightgrad.randn(4, 3, 3, 3), padding=1).shape
    lightgrad.Size([1, 4, 8, 8])
    """
    return _conv("conv2d", 2, input, weight, bias, stride, padding, dilation, groups)


def conv1d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: IntOr = 1,
           padding: IntOr | str = 0, dilation: IntOr = 1, groups: int = 1) -> Tensor:
    """1-D convolution of (N, C, L) with weight (O, C/groups, k).

    >>> conv1d(lightgrad.randn(1, 2, 10), lightgrad.randn(3, 2, 3)).shape
    lightgrad.Size([1, 3, 8])
    """
    return _conv("conv1d", 1, input, weight, bias, stride, padding, dilation, groups)


def _conv_transpose(name: str, nd: int, input: Tensor, weight: Tensor, bias: Tensor | None,
                    stride: Any, padding: Any, output_padding: Any, groups: int, dilation: Any) -> Tensor:
    x, batched = _batched(input, nd, name)
    w = weight
    if nd == 1:
        x, w = _as_2d(x), (_as_2d(w) if w.ndim == 3 else w)
        s, d = (1,) + _tuple(stride, 1, "stride"), (1,) + _tuple(dilation, 1, "dilation")
        p, op = (0,) + _tuple(padding, 1, "padding"), (0,) + _tuple(output_padding, 1, "output_padding")
    else:
        s, d = _tuple(stride, 2, "stride"), _tuple(dilation, 2, "dilation")
        p, op = _tuple(padding, 2, "padding"), _tuple(output_padding, 2, "output_padding")
    if w.ndim != 4:
        raise RuntimeError(f"{name}: expected weight to be {nd + 2}-dimensional, but got weight of size "
                           f"{list(weight.shape)}")
    if w.shape[0] % groups:
        raise RuntimeError(f"Given transposed=1, weight of size {list(weight.shape)}, expected the weight's "
                           f"dimension 0 to be divisible by groups={groups}")
    if x.shape[1] != w.shape[0]:
        raise RuntimeError(f"Given transposed=1, weight of size {list(weight.shape)}, expected input"
                           f"{list(input.shape)} to have {w.shape[0]} channels, but got {x.shape[1]} "
                           "channels instead")
    _check_conv(name, x, w, bias, groups, w.shape[0])
    for i in range(2):
        if op[i] >= s[i] and op[i] >= d[i]:
            raise RuntimeError(f"output padding must be smaller than either stride or dilation, but got "
                               f"output_padding={list(op[-nd:])}, stride={list(s[-nd:])}, "
                               f"dilation={list(d[-nd:])}")
    k = (w.shape[2], w.shape[3])
    out_hw = tuple((x.shape[2 + i] - 1) * s[i] - 2 * p[i] + d[i] * (k[i] - 1) + op[i] + 1 for i in range(2))
    if min(out_hw) <= 0:
        raise RuntimeError(f"Given input size per channel: {list(x.shape[2:])}, calculated output size "
                           f"per channel: {list(out_hw)}. Output size is too small")
    out = K.ConvTranspose2d.apply(x, w, bias, s=s, d=d, pads=(p[0], p[0], p[1], p[1]), groups=groups,
                                   out_hw=out_hw)
    if nd == 1:
        out = out.squeeze(2)
    return out if batched else out.squeeze(0)


def conv_transpose2d(input: Tensor, weight: Tensor, bias: Tensor | None = None,
                     stride: IntOr = 1, padding: IntOr = 0, output_padding: IntOr = 0, groups: int = 1,
                     dilation: IntOr = 1) -> Tensor:
    """2-D transposed convolution of (N, C_in, H, W) with weight (C_in, C_out/groups, kh, kw).

    >>> conv_transpose2d(lightgrad.randn(1, 4, 5, 5), lightgrad.randn(4, 2, 3, 3), stride=2).shape
    lightgrad.Size([1, 2, 11, 11])
    """
    return _conv_transpose("conv_transpose2d", 2, input, weight, bias, stride, padding, output_padding,
                           groups, dilation)


def conv_transpose1d(input: Tensor, weight: Tensor, bias: Tensor | None = None,
                     stride: IntOr = 1, padding: IntOr = 0, output_padding: IntOr = 0, groups: int = 1,
                     dilation: IntOr = 1) -> Tensor:
    """1-D transposed convolution of (N, C_in, L) with weight (C_in, C_out/groups, k).

    >>> conv_transpose1d(lightgrad.randn(1, 4, 5), lightgrad.randn(4, 2, 3)).shape
    lightgrad.Size([1, 2, 7])
    """
    return _conv_transpose("conv_transpose1d", 1, input, weight, bias, stride, padding, output_padding,
                           groups, dilation)


# ---- 3-D convolution ---------------------------------------------------------------------------

# A 3-D convolution is one 2-D convolution: the kd depth taps of the input are stacked into the
# channels (within each group, so groups still split them) and the output depths go into the
# batch. The transpose is one 2-D transpose whose kd*O outputs per input depth are then
# scattered to depth z*sd + i*dd by zero-insertion and padding. Both are composite (exact,
# gradients for free) and leave the 2-D paths untouched.
def _check_conv3d(name: str, x: Tensor, w: Tensor, b: Tensor | None, groups: int, transposed: bool) -> None:
    if w.ndim != 5:
        raise RuntimeError(f"{name}: expected weight to be 5-dimensional, but got weight of size {list(w.shape)}")
    if groups < 1:
        raise RuntimeError(f"non-positive groups is not supported, got groups={groups}")
    if w.shape[0] % groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by {groups} at dimension 0, "
                           f"but got weight of size {list(w.shape)} instead")
    cin = w.shape[0] if transposed else w.shape[1] * groups
    if x.shape[1] != cin:
        pre = "transposed=1" if transposed else f"groups={groups}"
        raise RuntimeError(f"Given {pre}, weight of size {list(w.shape)}, expected input{list(x.shape)} to have "
                           f"{cin} channels, but got {x.shape[1]} channels instead")
    if x.dtype != w.dtype or (b is not None and b.dtype != w.dtype):
        got = f"bias type ({b.dtype})" if b is not None and b.dtype != w.dtype else f"weight type ({w.dtype})"
        raise RuntimeError(f"Input type ({x.dtype}) and {got} should be the same")
    if b is not None and tuple(b.shape) != (w.shape[1] * groups if transposed else w.shape[0],):
        want = w.shape[1] * groups if transposed else w.shape[0]
        raise RuntimeError(f"Given weight of size {list(w.shape)}, expected bias to be 1-dimensional with {want} "
                           f"elements, but got bias of size {list(b.shape)} instead")


def _stride_dilation3(stride: IntOr, dilation: IntOr) -> tuple[tuple[int, ...], tuple[int, ...]]:
    s, d = _tuple(stride, 3, "stride"), _tuple(dilation, 3, "dilation")
    if min(s) <= 0:
        raise RuntimeError(f"non-positive stride is not supported, got stride={list(s)}")
    if min(d) <= 0:
        raise RuntimeError(f"dilation should be greater than zero, got dilation={list(d)}")
    return s, d


def conv3d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: IntOr = 1,
           padding: IntOr | str = 0, dilation: IntOr = 1, groups: int = 1) -> Tensor:
    """3-D convolution of (N, C, D, H, W) with weight (O, C/groups, kd, kh, kw).

    >>> conv3d(lightgrad.randn(1, 2, 5, 6, 6), lightgrad.randn(4, 2, 3, 3, 3), padding=1).shape
    lightgrad.Size([1, 4, 5, 6, 6])
    """
    x, batched = _batched(input, 3, "conv3d")
    w = weight
    _check_conv3d("conv3d", x, w, bias, groups, False)
    s, d = _stride_dilation3(stride, dilation)
    k = tuple(w.shape[2:])
    if isinstance(padding, str):
        if padding not in ("valid", "same"):
            raise ValueError(f"Invalid padding string '{padding}', should be one of ('valid', 'same')")
        if padding == "same" and any(si != 1 for si in s):
            raise RuntimeError("padding='same' is not supported for strided convolutions")
        tot = [di * (ki - 1) if padding == "same" else 0 for di, ki in zip(d, k)]
        pairs = [(t // 2, t - t // 2) for t in tot]
    else:
        p = _tuple(padding, 3, "padding")
        if min(p) < 0:
            raise RuntimeError("negative padding is not supported")
        pairs = [(pi, pi) for pi in p]
    padded = [x.shape[2 + i] + pairs[i][0] + pairs[i][1] for i in range(3)]
    reach = [d[i] * (k[i] - 1) + 1 for i in range(3)]
    if any(padded[i] < reach[i] for i in range(3)):
        raise RuntimeError(f"Calculated padded input size per channel: ({' x '.join(map(str, padded))}). Kernel "
                           f"size: ({' x '.join(map(str, reach))}). Kernel size can't be greater than actual "
                           "input size")
    n, c = x.shape[:2]
    o, cg, kd = w.shape[0], w.shape[1], k[0]
    do = (padded[0] - reach[0]) // s[0] + 1
    xp = x
    if pairs[0] != (0, 0):
        xp = Fn.Pad.apply(x, pads=((0, 0), (0, 0), pairs[0], (0, 0), (0, 0)), value=0)
    taps = [xp[:, :, i * d[0]: i * d[0] + s[0] * (do - 1) + 1: s[0]] for i in range(kd)]  # (N, C, Do, H, W)
    h, wd = x.shape[3], x.shape[4]
    xs = taps[0].unsqueeze(1) if kd == 1 else stack(taps, 1)  # (N, kd, C, Do, H, W)
    xs = xs.reshape(n, kd, groups, cg, do, h, wd).permute(0, 4, 2, 1, 3, 5, 6)  # (N, Do, G, kd, Cg, H, W)
    x2 = xs.reshape(n * do, groups * kd * cg, h, wd)
    w2 = w.permute(0, 2, 1, 3, 4).reshape(o, kd * cg, k[1], k[2])  # (O, kd*Cg, kh, kw): taps match x2
    if pairs[1][0] == pairs[1][1] and pairs[2][0] == pairs[2][1]:
        p2: Any = (pairs[1][0], pairs[2][0])
    else:
        p2 = "same"  # only 'same' pads asymmetrically, and conv2d splits it the same way
    y = _conv("conv2d", 2, x2, w2, bias, s[1:], p2, d[1:], groups)  # (N*Do, O, Ho, Wo)
    out = y.reshape(n, do, o, y.shape[2], y.shape[3]).permute(0, 2, 1, 3, 4)
    return out if batched else out.squeeze(0)


def conv_transpose3d(input: Tensor, weight: Tensor, bias: Tensor | None = None,
                     stride: IntOr = 1, padding: IntOr = 0, output_padding: IntOr = 0, groups: int = 1,
                     dilation: IntOr = 1) -> Tensor:
    """3-D transposed convolution of (N, C_in, D, H, W) with weight (C_in, C_out/groups, kd, kh, kw).

    >>> conv_transpose3d(lightgrad.randn(1, 4, 3, 5, 5), lightgrad.randn(4, 2, 3, 3, 3), stride=2).shape
    lightgrad.Size([1, 2, 7, 11, 11])
    """
    x, batched = _batched(input, 3, "conv_transpose3d")
    w = weight
    _check_conv3d("conv_transpose3d", x, w, bias, groups, True)
    s, d = _stride_dilation3(stride, dilation)
    p, op = _tuple(padding, 3, "padding"), _tuple(output_padding, 3, "output_padding")
    if min(p) < 0:
        raise RuntimeError("negative padding is not supported")
    if any(op[i] >= s[i] and op[i] >= d[i] for i in range(3)):
        raise RuntimeError(f"output padding must be smaller than either stride or dilation, but got "
                           f"output_padding={list(op)}, stride={list(s)}, dilation={list(d)}")
    k = tuple(w.shape[2:])
    size = [(x.shape[2 + i] - 1) * s[i] - 2 * p[i] + d[i] * (k[i] - 1) + op[i] + 1 for i in range(3)]
    if min(size) <= 0:
        raise RuntimeError(f"Given input size per channel: ({' x '.join(map(str, x.shape[2:]))}). Calculated "
                           f"output size per channel: ({' x '.join(map(str, size))}). Output size is too small")
    n, c, dep, h, wd = x.shape
    og, kd = w.shape[1], k[0]
    o = og * groups
    x2 = x.permute(0, 2, 1, 3, 4).reshape(n * dep, c, h, wd)
    w2 = w.permute(0, 2, 1, 3, 4).reshape(c, kd * og, k[1], k[2])  # per group, outputs ordered (kd, Og)
    y = _conv_transpose("conv_transpose2d", 2, x2, w2, None, s[1:], p[1:], op[1:], groups, d[1:])
    ho, wo = y.shape[2], y.shape[3]
    y = y.reshape(n, dep, groups, kd, og, ho, wo)
    out: Tensor | None = None
    for i in range(kd):
        z = y[:, :, :, i].reshape(n, dep, o, ho, wo).permute(0, 2, 1, 3, 4)  # (N, O, D, Ho, Wo)
        if s[0] > 1:  # zero-insertion: input depth z lands at z*sd
            z = Fn.Pad.apply(z.unsqueeze(3), pads=((0, 0),) * 3 + ((0, s[0] - 1), (0, 0), (0, 0)), value=0)
            z = z.reshape(n, o, dep * s[0], ho, wo)
        # tap i starts at i*dd - pd of the output: keep the depths that land inside it
        lo = i * d[0] - p[0]
        a, b = max(-lo, 0), min(z.shape[2], size[0] - lo)
        if a >= b:
            continue
        z = z[:, :, a:b] if (a, b) != (0, z.shape[2]) else z
        z = Fn.Pad.apply(z, pads=((0, 0), (0, 0), (lo + a, size[0] - lo - b), (0, 0), (0, 0)), value=0)
        out = z if out is None else out + z
    if out is None:  # every tap fell into the cropped padding
        out = y.sum() * 0 + x.new_zeros((n, o, size[0], ho, wo))
    if bias is not None:
        out = out + bias.reshape(1, o, 1, 1, 1)
    return out if batched else out.squeeze(0)


# ---- fold / unfold -----------------------------------------------------------------------------

def unfold(input: Tensor, kernel_size: IntOr, dilation: IntOr = 1, padding: IntOr = 0,
           stride: IntOr = 1) -> Tensor:
    """Sliding local blocks (im2col): (N, C, H, W) -> (N, C*kh*kw, L).

    >>> unfold(lightgrad.randn(1, 2, 4, 4), 2).shape
    lightgrad.Size([1, 8, 9])
    """
    if input.ndim not in (3, 4):
        raise RuntimeError(f"Input Error: Only 3D or 4D input Tensors are supported (got {input.ndim}D)")
    x = input if input.ndim == 4 else input.unsqueeze(0)
    k, d = _tuple(kernel_size, 2, "kernel_size"), _tuple(dilation, 2, "dilation")
    p, s = _tuple(padding, 2, "padding"), _tuple(stride, 2, "stride")
    pads = (p[0], p[0], p[1], p[1])
    _conv_out(x, k, s, d, pads)
    out = K.Unfold.apply(x, k=k, s=s, d=d, pads=pads)
    return out if input.ndim == 4 else out.squeeze(0)


def fold(input: Tensor, output_size: IntOr, kernel_size: IntOr, dilation: IntOr = 1,
         padding: IntOr = 0, stride: IntOr = 1) -> Tensor:
    """Sum sliding local blocks into an image (col2im): (N, C*kh*kw, L) -> (N, C, H, W).

    >>> fold(lightgrad.ones(1, 4, 9), (4, 4), 2).shape
    lightgrad.Size([1, 1, 4, 4])
    """
    if input.ndim not in (2, 3):
        raise RuntimeError(f"Input Error: Only unbatched (2D) or batched (3D) input Tensors are supported "
                           f"(got {input.ndim}D)")
    x = input if input.ndim == 3 else input.unsqueeze(0)
    hw, k = _tuple(output_size, 2, "output_size"), _tuple(kernel_size, 2, "kernel_size")
    d, p, s = _tuple(dilation, 2, "dilation"), _tuple(padding, 2, "padding"), _tuple(stride, 2, "stride")
    pads = (p[0], p[0], p[1], p[1])
    kk = k[0] * k[1]
    if x.shape[1] % kk:
        raise RuntimeError(f"Expected size of input's dimension 1 to be divisible by the product of "
                           f"kernel_size, but got input.size(1)={x.shape[1]} and kernel_size={k}")
    blocks = K._out_hw(hw, k, s, d, pads)
    if x.shape[2] != blocks[0] * blocks[1]:
        raise RuntimeError(f"Given output_size={hw}, kernel_size={k}, dilation={d}, padding={p}, stride={s}, "
                           f"expected size of input's dimension 2 to match the calculated number of sliding "
                           f"blocks {blocks[0]} * {blocks[1]} = {blocks[0] * blocks[1]}, but got "
                           f"input.size(2)={x.shape[2]}.")
    out = K.Fold.apply(x, shape=(x.shape[0], x.shape[1] // kk, *hw), k=k, s=s, d=d, pads=pads)
    return out if input.ndim == 3 else out.squeeze(0)
