"""Devices as PyTorch code expects them; only the CPU exists here, and the rest answers truthfully.
With them the constants that describe a tensor's storage (layouts, memory formats), the error a
failed device allocation raises, and autocast's state (a leaf, so any layer can read it).
"""

from __future__ import annotations

from typing import Any


class device:
    """``lightgrad.device('cpu')``; asking for another device raises a clear error."""

    __slots__ = ("type", "index")

    def __init__(self, type: Any = "cpu", index: int | None = None) -> None:  # noqa: A002
        name = f"{type.type}:{type.index}" if isinstance(type, device) and type.index is not None else str(type)  # type: ignore[has-type]
        kind, _, idx = name.partition(":")
        if kind != "cpu":
            raise RuntimeError(f"lightgrad runs on the CPU only; device '{name}' is not available "
                               "(lightgrad.cuda.is_available() is False)")
        self.type = "cpu"
        self.index = int(idx) if idx else index

    def __eq__(self, other: object) -> bool:
        try:
            return device(other).type == self.type  # type: ignore[arg-type]
        except RuntimeError:
            return False

    def __hash__(self) -> int:
        return hash(self.type)

    def __str__(self) -> str:
        return self.type

    def __repr__(self) -> str:
        return f"device(type='{self.type}')"

    def __enter__(self) -> device:
        return self

    def __exit__(self, *exc: object) -> None:
        pass


_CPU = device("cpu")


def set_default_device(d: Any) -> None:
    """Only 'cpu' (or None) is accepted."""
    if d is not None:
        device(d)


def get_default_device() -> device:
    """The device new tensors are created on (cpu unless ``set_default_device`` changed it)."""
    return _CPU


class _Accelerator:
    """``lightgrad.accelerator``: reports that no accelerator is present."""

    @staticmethod
    def is_available() -> bool:
        return False

    @staticmethod
    def current_accelerator(check_available: bool = False) -> None:
        return None

    @staticmethod
    def device_count() -> int:
        return 0


accelerator = _Accelerator()


class _Flags:
    """A ``torch.backends`` namespace: its flags as attributes (``cudnn.benchmark = True`` is kept)."""

    def __init__(self, **kw: Any) -> None:
        self.__dict__.update(kw)

    def __getattr__(self, name: str) -> Any:  # (only for names not set: the usual error; typed as any flag)
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def is_available(self) -> bool:
        return False

    def is_built(self) -> bool:
        return False

    def version(self) -> None:
        return None


class _Backends:
    def __init__(self) -> None:
        self.cudnn = _Flags(benchmark=False, deterministic=False, enabled=True, allow_tf32=True)
        self.cuda = _Flags(matmul=_Flags(allow_tf32=False, allow_fp16_reduced_precision_reduction=True,
                                         allow_bf16_reduced_precision_reduction=True))
        self.mps = _Flags()
        self.mkldnn = _Flags(enabled=True)
        self.openmp = _Flags()


backends = _Backends()



# ---- storage: layouts and memory formats ---------------------------------------------------------
class _NamedConstant:
    """A module-level constant PyTorch names ``torch.<name>``: it pickles and deep-copies to itself."""

    __slots__ = ("_name",)

    def __init__(self, name: str) -> None:
        self._name = name

    def __repr__(self) -> str:
        return f"torch.{self._name}"

    def __reduce__(self) -> str:
        return self._name  # (the global's name: unpickling and copying give the same object)


class layout(_NamedConstant):
    """A tensor's storage kind: every lightgrad tensor is ``strided`` (dense)."""

    __slots__ = ()


strided, sparse_coo, sparse_csr, sparse_csc, sparse_bsr, sparse_bsc, _mkldnn = (
    layout(n) for n in ("strided", "sparse_coo", "sparse_csr", "sparse_csc", "sparse_bsr", "sparse_bsc", "_mkldnn"))


class memory_format(_NamedConstant):
    """How a 4-D or 5-D tensor's dims are ordered in memory, as PyTorch names it. lightgrad accepts
    every format where PyTorch does and answers ``is_contiguous(memory_format=...)`` from a tensor's
    real strides, but keeps its own (row-major) layout when asked to convert."""

    __slots__ = ()


contiguous_format, channels_last, channels_last_3d, preserve_format = (
    memory_format(n) for n in ("contiguous_format", "channels_last", "channels_last_3d", "preserve_format"))


class OutOfMemoryError(RuntimeError):
    """``torch.OutOfMemoryError`` (also ``torch.cuda.OutOfMemoryError``): a device allocation failed."""


# ---- autocast's state --------------------------------------------------------------------------
# (enabled, dtype) per device type, set by lightgrad.amp.autocast. A leaf, so that an op that would
# cast under autocast reads one dict entry; today no op does (see lightgrad.amp).
_autocast_state: dict[str, tuple[bool, Any]] = {}
