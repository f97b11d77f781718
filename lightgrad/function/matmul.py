"""Matrix products: batched ``MatMul`` and ``Einsum``."""

from __future__ import annotations

from .. import backend as B
from .base import Function


class MatMul(Function):
    """Batched matrix product of operands with at least 2 dims (1-D cases are reshaped around it)."""

    traceable = True

    def forward(self, x, y):
        self.saved = (x, y)
        return B.bmm(x, y)

    def backward(self, g):
        x, y = self.saved
        gx = B.bmm(g, B.swapaxes(y, -1, -2)) if self.needs(0) else None
        gy = B.bmm(B.swapaxes(x, -1, -2), g) if self.needs(1) else None
        return gx, gy


class Einsum(Function):
    def forward(self, *xs, ins, out):
        self.ins, self.out = ins, out
        self.saved = xs
        return B.einsum(",".join(ins) + "->" + out, *xs)

    def backward(self, g):
        xs = self.saved
        grads = []
        for i, sub in enumerate(self.ins):
            if not self.needs(i):
                grads.append(None)
                continue
            others = [s for j, s in enumerate(self.ins) if j != i]
            uniq = "".join(dict.fromkeys(sub))
            have = set(self.out).union(*others) if others else set(self.out)
            target = "".join(c for c in uniq if c in have)
            spec = ",".join([self.out] + others) + "->" + target
            gi = B.einsum(spec, g, *[x for j, x in enumerate(xs) if j != i])
            shape = xs[i].shape
            sizes = dict(zip(sub, shape))
            if target != uniq:  # letters only this operand has: the gradient is broadcast
                idx = tuple(slice(None) if c in target else None for c in uniq)
                gi = B.broadcast_to(gi[idx], tuple(sizes[c] for c in uniq))
            if uniq != sub:  # repeated letters (a diagonal): place the gradient on it
                # by gathering it at each position's letters and masking the off-diagonal ones out
                # (no writes: the same steps record a graph when gi is a Tensor, under create_graph)
                diag = B.xp.zeros(shape, B.xp.bool_)
                B.einsum(sub + "->" + uniq, diag)[...] = True
                at = B.indices(shape, sparse=True)
                gi = B.where(diag, gi[tuple(at[sub.index(c)] for c in uniq)], 0.0)
            grads.append(gi)
        return tuple(grads)
