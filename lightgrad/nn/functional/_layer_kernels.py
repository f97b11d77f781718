"""Fused layer kernels: linear, layer norm, GELU and the losses (NLL, binary cross-entropy,
cross-entropy), each one ``Function``.

Each forward and backward runs a whole layer through the backend, so a layer is one graph node
instead of dozens. They sit on the nn side of the core: ``nn.functional`` and the layer modules
call them; the primitives in ``lightgrad.function`` know nothing of them."""

from __future__ import annotations

import math
from typing import Any

from ... import backend as B
from ...function import Function, _put, _zeros
from ...tensor import Tensor

# ---- linear and layer norm ---------------------------------------------------------------------

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
        out, xhat, rstd = self._normalized(x, w, b, n)
        self.saved = (x, w, xhat, rstd)
        return B.reshape(out, x.shape)

    def _normalized(self, x, w, b, n):
        """(out, xhat, rstd): x as rows of n entries, normalised (xhat), the rows' 1/std as (N, 1),
        and out = xhat w + b, a fresh array (the saved xhat must not be the output)."""
        return B.layer_norm(B.reshape(x, (-1, n)), None if w is None else B.reshape(w, (n,)),
                            None if b is None else B.reshape(b, (n,)), self.eps)

    def backward(self, g):
        x, w, xhat, rstd = self.saved
        axes, inv_n = self.axes, self.inv_n
        if xhat is None and not isinstance(g, Tensor):  # a second backward (retained graph): the first used xhat up
            _, xhat, rstd = self._normalized(x, None, None, self.n)
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


# ---- losses ------------------------------------------------------------------------------------

class NllLoss(Function):
    """Negative log-likelihood: the entries of ``x`` (class dim 1, or 0 when 1-D) picked by the
    class indices ``t``, times the class ``weight``, with ``ignore_index`` targets left out;
    negated, and summed and averaged as ``reduction`` says. Cross-entropy is log_softmax then this:
    one node, no one-hot matrix. The backward needs only the indices, so it is exact under
    create_graph too."""

    def forward(self, x, t, weight, ignore_index, reduction):
        cdim = 1 if x.ndim > 1 else 0
        c = x.shape[cdim]
        t = B.asarray(t, B.xp.int64)
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


# ---- GELU --------------------------------------------------------------------------------------

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
        elif type(g) is B.ndarray and g.shape == d.shape and g.dtype == d.dtype:
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


# ---- cross-entropy -----------------------------------------------------------------------------

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
        t = B.asarray(t, B.xp.int64)
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
