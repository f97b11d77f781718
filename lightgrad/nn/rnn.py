"""Recurrent layers (RNN, LSTM, GRU) and their cells, as ``torch.nn``.

Parameter names, shapes, gate order (LSTM: i, f, g, o; GRU: r, z, n) and init match PyTorch, so
a state_dict loads either way. Each layer and direction runs its time loop inside one fused
primitive (``lightgrad.function``): RNN and GRU get the input projections of all time steps from
one matrix product beforehand; LSTM folds its input projection into each step's product. A
PackedSequence input runs step by step in Tensor ops instead, each step over the sequences still running.

>>> out, (h, c) = nn.LSTM(4, 8, batch_first=True)(lightgrad.randn(2, 5, 4)); out.shape, h.shape
(lightgrad.Size([2, 5, 8]), lightgrad.Size([1, 2, 8]))
"""

from __future__ import annotations

import math
import warnings
from typing import Any

from .functional import _rnn_kernels as K
from ..tensor import Tensor, cat, empty, stack, zeros
from . import functional as F
from . import init
from .module import Module
from .parameter import Parameter
from .utils.rnn import PackedSequence

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]

_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}


class RNNBase(Module):
    """Shared by RNN, LSTM and GRU: the parameters of every layer and direction, and the loop over
    layers; ``mode`` is 'RNN_TANH', 'RNN_RELU', 'LSTM' or 'GRU'."""

    def __init__(self, mode: str, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False,
                 proj_size: int = 0, device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        if not isinstance(dropout, int | float) or not 0 <= dropout <= 1 or isinstance(dropout, bool):
            raise ValueError("dropout should be a number in range [0, 1] representing the probability of an "
                             "element being zeroed")
        if dropout > 0 and num_layers == 1:
            warnings.warn("dropout option adds dropout after all but last recurrent layer, so non-zero dropout "
                          f"expects num_layers greater than 1, but got dropout={dropout} and "
                          f"num_layers={num_layers}", stacklevel=2)
        if not isinstance(hidden_size, int) or hidden_size <= 0:
            raise ValueError(f"hidden_size must be a positive integer, got {hidden_size!r}")
        if not isinstance(num_layers, int) or num_layers <= 0:
            raise ValueError(f"num_layers must be a positive integer, got {num_layers!r}")
        if proj_size:
            raise NotImplementedError("LSTM with proj_size > 0 is not supported by lightgrad")
        if mode not in _GATES:
            raise ValueError(f"Unrecognized RNN mode: {mode}")
        self.mode, self.input_size, self.hidden_size = mode, input_size, hidden_size
        self.num_layers, self.bias, self.batch_first = num_layers, bias, batch_first
        self.dropout, self.bidirectional, self.proj_size = float(dropout), bidirectional, proj_size
        gate_size = _GATES[mode] * hidden_size
        dirs = 2 if bidirectional else 1
        self._flat_weights_names: list[str] = []
        for layer in range(num_layers):
            for direction in range(dirs):
                fan_in = input_size if layer == 0 else hidden_size * dirs
                sfx = f"_l{layer}" + ("_reverse" if direction else "")
                shapes: list[tuple[str, tuple[int, ...]]] = [("weight_ih", (gate_size, fan_in)),
                                                             ("weight_hh", (gate_size, hidden_size))]
                if bias:
                    shapes += [("bias_ih", (gate_size,)), ("bias_hh", (gate_size,))]
                for name, shape in shapes:
                    setattr(self, name + sfx, Parameter(empty(*shape, dtype=dtype, device=device)))
                    self._flat_weights_names.append(name + sfx)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Redraw every weight and bias uniform in +-1/sqrt(hidden_size)."""
        stdv = 1.0 / math.sqrt(self.hidden_size)
        for w in self.parameters():
            init.uniform_(w, -stdv, stdv)

    def flatten_parameters(self) -> None:
        """A no-op kept for PyTorch compatibility (there is no cuDNN weight buffer here)."""

    @property
    def _flat_weights(self) -> list[Tensor]:
        return [getattr(self, n) for n in self._flat_weights_names]

    @property
    def all_weights(self) -> list[list[Tensor]]:
        """The parameters per layer and direction: ``[w_ih, w_hh, b_ih, b_hh]`` (no biases without bias)."""
        per = 4 if self.bias else 2
        w = self._flat_weights
        return [w[i:i + per] for i in range(0, len(w), per)]

    def extra_repr(self) -> str:
        """The constructor options the module's repr shows."""
        s = f"{self.input_size}, {self.hidden_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if self.batch_first is not False:
            s += f", batch_first={self.batch_first}"
        if self.dropout != 0:
            s += f", dropout={self.dropout}"
        if self.bidirectional is not False:
            s += f", bidirectional={self.bidirectional}"
        return s

    # ---- forward -------------------------------------------------------------------------------
    def _check(self, x: Tensor, hx: Any, batched: bool) -> None:
        if x.shape[-1] != self.input_size:
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected {self.input_size}, "
                               f"got {x.shape[-1]}")
        if x.shape[0] == 0:
            raise RuntimeError("Expected sequence length to be larger than 0 in RNN")
        dirs = 2 if self.bidirectional else 1
        want = (self.num_layers * dirs, x.shape[1], self.hidden_size)
        for h in (hx if isinstance(hx, tuple) else (hx,)):
            if h is not None and tuple(h.shape) != want:
                raise RuntimeError(f"Expected hidden size {want}, got {list(h.shape)}")

    def _layer(self, x: Tensor, sfx: str, h0: Tensor, c0: Tensor | None, reverse: bool) -> tuple[Any, ...]:
        """One layer and direction: (outputs (T, B, H), h_last, c_last or None)."""
        t_len, batch = x.shape[0], x.shape[1]
        w_ih, w_hh = getattr(self, "weight_ih" + sfx), getattr(self, "weight_hh" + sfx)
        b_ih: Tensor | None = None
        b_hh: Tensor | None = None
        b_in: Tensor | None = None
        if self.bias:
            b_ih, b_hh = getattr(self, "bias_ih" + sfx), getattr(self, "bias_hh" + sfx)
        last = 0 if reverse else t_len - 1
        if self.mode == "LSTM":  # (its input projection rides in each step's product)
            res = K.LSTMLayer.apply(x, w_ih, w_hh, b_ih, b_hh, h0, c0, reverse=reverse)
            return res[:t_len], res[last], res[t_len]
        if b_ih is not None and b_hh is not None:
            b_in = b_ih if self.mode == "GRU" else b_ih + b_hh
        # all steps' input projections in one fused product with the bias: (T*B, G) -> (T, B, G)
        xp = F.linear(x.reshape(t_len * batch, x.shape[2]), w_ih, b_in).reshape(t_len, batch, -1)
        if self.mode == "GRU":
            res = K.GRULayer.apply(xp, w_hh, b_hh if self.bias else None, h0, reverse=reverse)
        else:
            res = K.RNNLayer.apply(xp, w_hh, h0, relu=self.mode == "RNN_RELU", reverse=reverse)
        return res, res[last], None

    def _packed_layer(self, x: Tensor, bs: list[int], sfx: str, h0: Tensor, c0: Tensor | None,
                      reverse: bool) -> tuple[Any, ...]:
        """One layer and direction over packed steps ``x`` (N, in), ``bs[t]`` sequences running at step
        t: (outputs (N, H), each sequence's last state (B, H), the same for c or None). The running
        sequences are a prefix of the sorted batch, so each step updates the first ``bs[t]`` states."""
        w_hh = getattr(self, "weight_hh" + sfx)
        b_ih = getattr(self, "bias_ih" + sfx) if self.bias else None
        b_hh = getattr(self, "bias_hh" + sfx) if self.bias else None
        xp = F.linear(x, getattr(self, "weight_ih" + sfx), b_ih)  # every step's input projection: (N, G)
        offsets = [0]
        for n in bs:
            offsets.append(offsets[-1] + n)

        def cell(gi: Tensor, h: Tensor, c: Any) -> tuple[Tensor, Any]:
            gh = F.linear(h, w_hh, b_hh)
            if self.mode == "LSTM":
                i, f, g, o = (gi + gh).chunk(4, 1)
                c = f.sigmoid() * c + i.sigmoid() * g.tanh()
                return o.sigmoid() * c.tanh(), c
            if self.mode == "GRU":
                ir, iz, in_ = gi.chunk(3, 1)
                hr, hz, hn = gh.chunk(3, 1)
                r, z = (ir + hr).sigmoid(), (iz + hz).sigmoid()
                n = (in_ + r * hn).tanh()
                return n + z * (h - n), None
            a = gi + gh
            return (a.tanh() if self.mode == "RNN_TANH" else a.relu()), None

        steps = len(bs)
        outs: list[Any] = [None] * steps
        if not reverse:  # sequences finish from the end of the batch: keep their states as they do
            h, c = h0, c0
            done_h: list[Tensor] = []
            done_c: list[Any] = []
            for t in range(steps):
                n = bs[t]
                if n < h.shape[0]:
                    done_h.append(h[n:])
                    done_c.append(c[n:] if c is not None else None)
                    h, c = h[:n], (c[:n] if c is not None else None)
                h, c = cell(xp[offsets[t]:offsets[t + 1]], h, c)
                outs[t] = h
            h_last = cat([h, *done_h[::-1]])
            c_last = cat([c, *done_c[::-1]]) if c is not None else None
        else:  # backwards every sequence ends at step 0; the longer ones start earlier
            h, c = h0[:bs[-1]], (c0[:bs[-1]] if c0 is not None else None)
            for t in range(steps - 1, -1, -1):
                n, m = bs[t], h.shape[0]
                if n > m:
                    h = cat([h, h0[m:n]])
                    c = cat([c, c0[m:n]]) if c is not None and c0 is not None else None
                h, c = cell(xp[offsets[t]:offsets[t + 1]], h, c)
                outs[t] = h
            h_last, c_last = h, c
        return cat(outs), h_last, c_last

    def _forward_packed(self, input: PackedSequence, hx: Any) -> tuple[PackedSequence, Any]:
        """The layers over a PackedSequence; ``hx`` and the returned states are in the original batch order."""
        lstm = self.mode == "LSTM"
        x, batch_sizes, sorted_indices, unsorted_indices = input
        bs = [int(n) for n in batch_sizes.tolist()]
        if x.shape[-1] != self.input_size:
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected {self.input_size}, "
                               f"got {x.shape[-1]}")
        if x.dtype != self.weight_ih_l0.dtype:
            raise RuntimeError(f"input must have the type {self.weight_ih_l0.dtype}, got type {x.dtype}")
        dirs = 2 if self.bidirectional else 1
        shape = (self.num_layers * dirs, bs[0], self.hidden_size)
        if lstm and hx is not None and not (isinstance(hx, tuple | list) and len(hx) == 2):
            raise RuntimeError("LSTM expects hx to be a tuple (h_0, c_0)")
        if hx is None:
            h0 = zeros(*shape, dtype=x.dtype)
            c0 = zeros(*shape, dtype=x.dtype) if lstm else None
        else:
            h0, c0 = tuple(hx) if lstm else (hx, None)
            for h in (h0, c0):
                if h is not None and tuple(h.shape) != shape:
                    raise RuntimeError(f"Expected hidden size {shape}, got {list(h.shape)}")
            if sorted_indices is not None:  # the states follow the sequences into sorted order
                h0 = h0.index_select(1, sorted_indices)
                c0 = c0.index_select(1, sorted_indices) if c0 is not None else None
        out_data, h_n, c_n = self._layers(
            x, h0, c0, lambda inp, sfx, h, c, rev: self._packed_layer(inp, bs, sfx, h, c, rev))
        output = PackedSequence(out_data, batch_sizes, sorted_indices, unsorted_indices)
        if unsorted_indices is not None:
            h_n = h_n.index_select(1, unsorted_indices)
            c_n = c_n.index_select(1, unsorted_indices) if c_n is not None else None
        return output, ((h_n, c_n) if lstm else h_n)

    def forward(self, input: Tensor, hx: Any = None) -> tuple[Any, Any]:
        """Run over the sequence: ``(output, h_n)``, ``h_n`` being ``(h_n, c_n)`` for LSTM; takes PackedSequence too."""
        if isinstance(input, PackedSequence):
            return self._forward_packed(input, hx)
        lstm = self.mode == "LSTM"
        if input.ndim not in (2, 3):
            raise ValueError(f"{type(self).__name__}: Expected input to be 2D or 3D, got {input.ndim}D instead")
        batched = input.ndim == 3
        x = input if batched else input.unsqueeze(1)
        if batched and self.batch_first:
            x = x.transpose(0, 1)
        if hx is not None and not batched:
            hx = tuple(h.unsqueeze(1) for h in hx) if lstm else hx.unsqueeze(1)
        if lstm and hx is not None and not (isinstance(hx, tuple | list) and len(hx) == 2):
            raise RuntimeError("LSTM expects hx to be a tuple (h_0, c_0)")
        if lstm and hx is not None:
            hx = tuple(hx)
        self._check(x, hx, batched)
        dirs = 2 if self.bidirectional else 1
        if x.dtype != self.weight_ih_l0.dtype:
            raise RuntimeError(f"input must have the type {self.weight_ih_l0.dtype}, got type {x.dtype}")
        shape = (self.num_layers * dirs, x.shape[1], self.hidden_size)
        if hx is None:
            h0 = zeros(*shape, dtype=x.dtype)
            c0 = zeros(*shape, dtype=x.dtype) if lstm else None
        else:
            h0, c0 = hx if lstm else (hx, None)
        output, h_n, c_n = self._layers(x, h0, c0, self._layer)
        if batched and self.batch_first:
            output = output.transpose(0, 1)
        if not batched:
            output, h_n = output.squeeze(1), h_n.squeeze(1)
        if lstm:
            return output, (h_n, c_n if batched else c_n.squeeze(1))
        return output, h_n

    def _layers(self, x: Tensor, h0: Tensor, c0: Tensor | None, run: Any) -> tuple[Any, Tensor, Any]:
        """Every layer and direction over x by ``run(input, suffix, h, c, reverse)`` -> (out, h, c),
        with dropout between layers: (last layer's output, stacked final h, stacked final c or None)."""
        dirs = 2 if self.bidirectional else 1
        hs, cs = [], []
        layer_in = x
        for layer in range(self.num_layers):
            outs = []
            for d in range(dirs):
                k = layer * dirs + d
                out, h, c = run(layer_in, f"_l{layer}" + ("_reverse" if d else ""), h0[k],
                                c0[k] if c0 is not None else None, d == 1)
                outs.append(out)
                hs.append(h)
                cs.append(c)
            layer_in = outs[0] if dirs == 1 else cat(outs, -1)
            if self.dropout and self.training and layer < self.num_layers - 1:
                layer_in = F.dropout(layer_in, self.dropout, True)
        return layer_in, stack(hs), (stack(cs) if c0 is not None else None)


class RNN(RNNBase):
    """Elman RNN, h_t = tanh(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh) (or relu); returns (output, h_n).

    >>> out, h = nn.RNN(4, 8, num_layers=2)(lightgrad.randn(5, 3, 4)); out.shape, h.shape
    (lightgrad.Size([5, 3, 8]), lightgrad.Size([2, 3, 8]))
    """

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, nonlinearity: str = "tanh",
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False,
                 device: Any = None, dtype: Any = None) -> None:
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or 'relu'.")
        self.nonlinearity = nonlinearity
        super().__init__("RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU", input_size, hidden_size,
                         num_layers, bias, batch_first, dropout, bidirectional, 0, device, dtype)


class LSTM(RNNBase):
    """Long short-term memory; returns (output, (h_n, c_n)).

    >>> out, (h, c) = nn.LSTM(4, 8, bidirectional=True)(lightgrad.randn(5, 3, 4)); out.shape, c.shape
    (lightgrad.Size([5, 3, 16]), lightgrad.Size([2, 3, 8]))
    """

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False,
                 proj_size: int = 0, device: Any = None, dtype: Any = None) -> None:
        super().__init__("LSTM", input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional,
                         proj_size, device, dtype)


class GRU(RNNBase):
    """Gated recurrent unit; returns (output, h_n).

    >>> out, h = nn.GRU(4, 8, batch_first=True)(lightgrad.randn(3, 5, 4)); out.shape, h.shape
    (lightgrad.Size([3, 5, 8]), lightgrad.Size([1, 3, 8]))
    """

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__("GRU", input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional,
                         0, device, dtype)


# ---- cells -------------------------------------------------------------------------------------

class RNNCellBase(Module):
    """Shared by the cells: weight_ih (G, input), weight_hh (G, hidden), biases (G,), all
    U(-1/sqrt(hidden), 1/sqrt(hidden))."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool, num_chunks: int, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        self.input_size, self.hidden_size, self.bias = input_size, hidden_size, bias
        g = num_chunks * hidden_size
        self.weight_ih = Parameter(empty(g, input_size, dtype=dtype, device=device))
        self.weight_hh = Parameter(empty(g, hidden_size, dtype=dtype, device=device))
        if bias:
            self.bias_ih = Parameter(empty(g, dtype=dtype, device=device))
            self.bias_hh = Parameter(empty(g, dtype=dtype, device=device))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Redraw every weight and bias uniform in +-1/sqrt(hidden_size)."""
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for w in self.parameters():
            init.uniform_(w, -stdv, stdv)

    def extra_repr(self) -> str:
        """The constructor options the module's repr shows."""
        s = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        nl = getattr(self, "nonlinearity", "tanh")
        return s + (f", nonlinearity={nl}" if nl != "tanh" else "")

    def _prepare(self, input: Tensor, hx: Any, n: int) -> tuple[Tensor, Any, bool]:
        """Batch an unbatched input, check sizes, and default the state to zeros."""
        if input.ndim not in (1, 2):
            raise ValueError(f"{type(self).__name__}: Expected input to be 1D or 2D, got {input.ndim}D instead")
        if input.shape[-1] != self.input_size:
            raise RuntimeError(f"input has inconsistent input_size: got {input.shape[-1]} expected "
                               f"{self.input_size}")
        batched = input.ndim == 2
        x = input if batched else input.unsqueeze(0)
        if hx is None:
            states = tuple(zeros(x.shape[0], self.hidden_size, dtype=x.dtype) for _ in range(n))
        else:
            states = tuple(hx) if n == 2 else (hx,)
            states = tuple(h if batched else h.unsqueeze(0) for h in states)
            for h in states:
                if tuple(h.shape) != (x.shape[0], self.hidden_size):
                    raise RuntimeError(f"hidden state has inconsistent size: got {list(h.shape)} expected "
                                       f"{[x.shape[0], self.hidden_size]}")
        return x, states, batched

    def _gates(self, x: Tensor, h: Tensor) -> tuple[Tensor, Tensor]:
        """(x W_ih^T + b_ih, h W_hh^T + b_hh)."""
        gi, gh = x.matmul(self.weight_ih.t()), h.matmul(self.weight_hh.t())
        if self.bias:
            gi, gh = gi + self.bias_ih, gh + self.bias_hh
        return gi, gh


class RNNCell(RNNCellBase):
    """One Elman RNN step: h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh) (or relu).

    >>> nn.RNNCell(4, 8)(lightgrad.randn(3, 4)).shape
    lightgrad.Size([3, 8])
    """

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, nonlinearity: str = "tanh",
                 device: Any = None, dtype: Any = None) -> None:
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity: {nonlinearity}")
        self.nonlinearity = nonlinearity
        super().__init__(input_size, hidden_size, bias, 1, device, dtype)

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        """One step: ``h' = act(x W_ih^T + b_ih + h W_hh^T + b_hh)``, ``h`` zeros when ``hx`` is None."""
        x, (h,), batched = self._prepare(input, hx, 1)
        gi, gh = self._gates(x, h)
        a = gi + gh
        out = a.tanh() if self.nonlinearity == "tanh" else a.relu()
        return out if batched else out.squeeze(0)


class LSTMCell(RNNCellBase):
    """One LSTM step with gates (i, f, g, o); returns (h', c').

    >>> h, c = nn.LSTMCell(4, 8)(lightgrad.randn(3, 4)); h.shape
    lightgrad.Size([3, 8])
    """

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__(input_size, hidden_size, bias, 4, device, dtype)

    def forward(self, input: Tensor, hx: Any = None) -> tuple[Tensor, Tensor]:
        """One LSTM step: ``(h', c')`` from ``input`` and ``hx = (h, c)`` (zeros when None)."""
        x, (h, c), batched = self._prepare(input, hx, 2)
        gi, gh = self._gates(x, h)
        i, f, g, o = (gi + gh).chunk(4, 1)
        c2 = f.sigmoid() * c + i.sigmoid() * g.tanh()
        h2 = o.sigmoid() * c2.tanh()
        return (h2, c2) if batched else (h2.squeeze(0), c2.squeeze(0))


class GRUCell(RNNCellBase):
    """One GRU step with gates (r, z, n): n = tanh(x_n + r * (h W_hn^T + b_hn)), h' = (1-z) n + z h.

    >>> nn.GRUCell(4, 8)(lightgrad.randn(3, 4)).shape
    lightgrad.Size([3, 8])
    """

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__(input_size, hidden_size, bias, 3, device, dtype)

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        """One GRU step: ``h'`` from ``input`` and ``hx`` (zeros when None)."""
        x, (h,), batched = self._prepare(input, hx, 1)
        gi, gh = self._gates(x, h)
        ir, iz, in_ = gi.chunk(3, 1)
        hr, hz, hn = gh.chunk(3, 1)
        r, z = (ir + hr).sigmoid(), (iz + hz).sigmoid()
        n = (in_ + r * hn).tanh()
        out = n + z * (h - n)
        return out if batched else out.squeeze(0)
