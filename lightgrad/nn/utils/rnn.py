"""Variable-length sequences for the recurrent layers, as ``torch.nn.utils.rnn``.

A ``PackedSequence`` holds the valid steps of a batch of sequences time-major and without padding:
``data`` is step 0 of every sequence, then step 1 of those at least 2 long, ...; ``batch_sizes[t]``
says how many sequences are still running at step t, the sequences sorted by decreasing length.
Every conversion here is one gather of rows (``x[index]``) whose index is worked out in NumPy, so
they are all differentiable through the ordinary indexing op.

>>> p = pack_padded_sequence(lightgrad.randn(4, 3, 2), [4, 2, 1]); p.batch_sizes
tensor([3, 2, 1, 1])
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from ... import backend as B
from ...dtypes import float32, float64
from ...tensor import Tensor, cat, full, stack

__all__ = ["PackedSequence", "invert_permutation", "pack_padded_sequence", "pad_packed_sequence", "pad_sequence",
           "unpad_sequence", "pack_sequence", "unpack_sequence"]


def _long(a: Any) -> Tensor:
    return Tensor._make(B.xp.ascontiguousarray(a, B.xp.int64))


class _PackedFields(NamedTuple):
    data: Tensor
    batch_sizes: Tensor
    sorted_indices: Tensor | None
    unsorted_indices: Tensor | None


class PackedSequence(_PackedFields):
    """The packed steps of a batch of sequences: (data, batch_sizes, sorted_indices, unsorted_indices).

    >>> pack_sequence([lightgrad.ones(3, 2), lightgrad.ones(1, 2)]).batch_sizes
    tensor([2, 1, 1])
    """

    def __new__(cls, data: Tensor, batch_sizes: Tensor | None = None, sorted_indices: Tensor | None = None,
                unsorted_indices: Tensor | None = None) -> PackedSequence:
        if batch_sizes is None:  # PyTorch also accepts the (data, batch_sizes) pair as the first argument
            data, batch_sizes = data  # type: ignore[misc]
        if unsorted_indices is None and sorted_indices is not None:
            unsorted_indices = invert_permutation(sorted_indices)
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def to(self, *args: Any, **kwargs: Any) -> PackedSequence:
        """``data`` converted with ``Tensor.to``; the index tensors stay as they are."""
        data = self.data.to(*args, **kwargs)
        return self if data is self.data else type(self)(data, self.batch_sizes, self.sorted_indices,
                                                          self.unsorted_indices)

    def double(self) -> PackedSequence:
        """The same sequence with float64 data."""
        return self.to(float64)

    def float(self) -> PackedSequence:
        """The same sequence with float32 data."""
        return self.to(float32)

    def cpu(self, *args: Any, **kwargs: Any) -> PackedSequence:
        """The sequence on the CPU: itself."""
        return self

    @property
    def is_cuda(self) -> bool:
        """Whether the data is on a CUDA device: never here."""
        return False

    def is_pinned(self) -> bool:
        """Whether the data is in pinned memory: never here."""
        return False


def invert_permutation(permutation: Tensor | None) -> Tensor | None:
    """The permutation that undoes ``permutation`` (None stays None)."""
    if permutation is None:
        return None
    perm = B.asarray(permutation._data, B.xp.int64)
    out = B.xp.empty_like(perm)
    out[perm] = B.arange(perm.size)
    return _long(out)


def _lengths(lengths: Any) -> B.ndarray:
    """``lengths`` (a list or a 1-D int64 tensor) as a 1-D int64 array, checked as PyTorch does."""
    if isinstance(lengths, Tensor):
        if lengths.ndim != 1:
            raise RuntimeError("'lengths' argument should be a 1D CPU int64 tensor, but got "
                               f"{lengths.ndim}D cpu {lengths.dtype} tensor")
        arr = lengths._data
    else:
        arr = B.asarray(lengths)
        if arr.ndim != 1:
            raise RuntimeError(f"'lengths' argument should be a 1D CPU int64 tensor, but got {arr.ndim}D")
    return arr.astype(B.xp.int64)


def pack_padded_sequence(input: Tensor, lengths: Any, batch_first: bool = False,
                         enforce_sorted: bool = True) -> PackedSequence:
    """Pack a padded batch (T, B, *) (or (B, T, *) with ``batch_first``) of sequences of ``lengths``.

    >>> pack_padded_sequence(lightgrad.zeros(3, 2, 4), [3, 1]).data.shape
    lightgrad.Size([4, 4])
    """
    lens = _lengths(lengths)
    batch = input.shape[0 if batch_first else 1]
    if lens.size != batch:
        raise RuntimeError(f"Expected `len(lengths)` to be equal to batch_size, but got {lens.size} "
                           f"(batch_size={batch})")
    if lens.size and lens.min() <= 0:
        raise RuntimeError("Length of all samples has to be greater than 0, but found an element in 'lengths' "
                           "that is <= 0")
    steps = input.shape[1 if batch_first else 0]
    if lens.size and lens.max() > steps:
        raise RuntimeError(f"Expected all lengths to be at most the sequence length {steps}, but got "
                           f"{int(lens.max())}")
    if enforce_sorted:
        if B.xp.any(lens[1:] > lens[:-1]):
            raise RuntimeError("`lengths` array must be sorted in decreasing order when `enforce_sorted` is True. "
                               "You can pass `enforce_sorted=False` to pack_padded_sequence and/or pack_sequence "
                               "to sidestep this requirement if you do not need ONNX exportability.")
        order = B.arange(batch)
        sorted_indices = None
    else:
        order = B.argsort(-lens, kind="stable")  # PyTorch's CPU sort keeps ties in order too
        sorted_indices = _long(order)
    lens = lens[order]
    batch_sizes = (lens[None, :] > B.arange(int(lens[0]) if lens.size else 0)[:, None]).sum(1)
    # packed row k is step t of sorted sequence j < batch_sizes[t]: row t * B + b of the (T*B, *) view
    t_idx = B.xp.repeat(B.arange(batch_sizes.size), batch_sizes)
    j_idx = B.concatenate([B.arange(n) for n in batch_sizes]) if batch_sizes.size else B.xp.zeros(0, B.xp.int64)
    b_idx = order[j_idx]
    rows = b_idx * steps + t_idx if batch_first else t_idx * batch + b_idx
    flat = input.reshape(steps * batch, *input.shape[2:])
    return PackedSequence(flat[_long(rows)], _long(batch_sizes), sorted_indices,
                          invert_permutation(sorted_indices))


def pad_packed_sequence(sequence: PackedSequence, batch_first: bool = False, padding_value: float = 0.0,
                        total_length: int | None = None) -> tuple[Tensor, Tensor]:
    """Undo ``pack_padded_sequence``: (padded (T, B, *) or (B, T, *), lengths), in the original batch order.

    >>> x, lengths = pad_packed_sequence(pack_sequence([lightgrad.ones(3), lightgrad.ones(1)])); lengths
    tensor([3, 1])
    """
    data, bs = sequence.data, B.asarray(sequence.batch_sizes._data, B.xp.int64)
    steps, batch = int(bs.size), int(bs[0])
    if total_length is not None:
        if total_length < steps:
            raise ValueError("Expected total_length to be at least the length of the longest sequence in input, "
                             f"but got total_length={total_length} and max sequence length being {steps}")
        steps = total_length
    # (T, B) row of each padded position in `data`, or the extra padding row after the data
    offsets = B.concatenate([[0], B.cumsum(bs)[:-1]])
    j = B.arange(batch)
    rows = B.full((steps, batch), data.shape[0], B.xp.int64)
    valid = j[None, :] < bs[:, None]
    rows[:bs.size][valid] = (offsets[:, None] + j[None, :])[valid]
    lens = valid.sum(0)
    if sequence.unsorted_indices is not None:
        unsorted = B.asarray(sequence.unsorted_indices._data, B.xp.int64)
        rows, lens = rows[:, unsorted], lens[unsorted]
    if batch_first:
        rows = rows.T
    pad = full((1, *data.shape[1:]), padding_value, dtype=data.dtype)
    padded = cat([data, pad])[_long(rows.reshape(-1))].reshape(*rows.shape, *data.shape[1:])
    return padded, _long(lens)


def pad_sequence(sequences: Sequence[Tensor] | Tensor, batch_first: bool = False, padding_value: float = 0.0,
                 padding_side: str = "right") -> Tensor:
    """Stack sequences of different lengths (L_i, *) into (T, B, *) (or (B, T, *)), padding each.

    >>> pad_sequence([lightgrad.ones(3), lightgrad.ones(1)]).shape
    lightgrad.Size([3, 2])
    """
    if padding_side not in ("left", "right"):
        raise RuntimeError(f"Expected padding_side to be one of left or right, but got {padding_side}.")
    seqs = list(sequences.unbind(0)) if isinstance(sequences, Tensor) else list(sequences)
    if not seqs:
        raise RuntimeError("received an empty list of sequences")
    steps = max(s.shape[0] for s in seqs)
    rows = []
    for s in seqs:
        n = steps - s.shape[0]
        if n:
            pad = full((n, *s.shape[1:]), padding_value, dtype=s.dtype)
            s = cat([s, pad] if padding_side == "right" else [pad, s])
        rows.append(s)
    return stack(rows, 0 if batch_first else 1)


def unpad_sequence(padded_sequences: Tensor, lengths: Any, batch_first: bool = False) -> list[Tensor]:
    """Split a padded batch back into its sequences, ``lengths`` long.

    >>> [s.shape[0] for s in unpad_sequence(lightgrad.zeros(3, 2), lightgrad.tensor([3, 1]))]
    [3, 1]
    """
    x = padded_sequences if batch_first else padded_sequences.transpose(0, 1)
    return [x[i, :int(n)] for i, n in enumerate(_lengths(lengths))]


def pack_sequence(sequences: Sequence[Tensor], enforce_sorted: bool = True) -> PackedSequence:
    """Pack a list of sequences (L_i, *): ``pack_padded_sequence(pad_sequence(sequences), lengths)``.

    >>> pack_sequence([lightgrad.ones(2), lightgrad.ones(3)], enforce_sorted=False).batch_sizes
    tensor([2, 2, 1])
    """
    lengths = [s.shape[0] for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences: PackedSequence) -> list[Tensor]:
    """The list of sequences a PackedSequence holds, in the original order.

    >>> [s.shape[0] for s in unpack_sequence(pack_sequence([lightgrad.ones(2), lightgrad.ones(3)], False))]
    [2, 3]
    """
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
