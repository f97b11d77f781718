"""Devices as PyTorch code expects them; only the CPU exists here, and the rest answers truthfully."""

from __future__ import annotations

import contextlib
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
    return _CPU


class _Cuda:
    """``lightgrad.cuda``: no CUDA device here; seeding and syncing are harmless no-ops."""

    @staticmethod
    def is_available() -> bool:
        return False

    @staticmethod
    def device_count() -> int:
        return 0

    @staticmethod
    def manual_seed(seed: int) -> None:
        pass

    manual_seed_all = manual_seed

    @staticmethod
    def synchronize(device: Any = None) -> None:
        pass

    @staticmethod
    def empty_cache() -> None:
        pass

    @staticmethod
    def is_bf16_supported() -> bool:
        return False

    @staticmethod
    def current_device() -> int:
        raise RuntimeError("No CUDA GPUs are available")

    @staticmethod
    def memory_allocated(device: Any = None) -> int:
        return 0

    max_memory_allocated = memory_allocated

    class amp:
        @staticmethod
        def autocast(enabled: bool = True, dtype: Any = None, cache_enabled: bool = True) -> Any:
            return autocast("cuda", dtype=dtype, enabled=enabled)

        @staticmethod
        def GradScaler(*args: Any, **kwargs: Any) -> GradScaler:  # noqa: N802
            return GradScaler(*args, **kwargs)


cuda = _Cuda()


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
    def __init__(self, **kw: Any) -> None:
        self.__dict__.update(kw)

    def is_available(self) -> bool:
        return False

    def is_built(self) -> bool:
        return False


class _Backends:
    def __init__(self) -> None:
        self.cudnn = _Flags(benchmark=False, deterministic=False, enabled=True, allow_tf32=True)
        self.cuda = _Flags(matmul=_Flags(allow_tf32=False, allow_fp16_reduced_precision_reduction=True))
        self.mps = _Flags()
        self.mkldnn = _Flags(enabled=True)
        self.openmp = _Flags()


backends = _Backends()


class autocast(contextlib.ContextDecorator):
    """Mixed precision is not implemented: inside this block ops keep their dtypes (float32)."""

    def __init__(self, device_type: str = "cpu", dtype: Any = None, enabled: bool = True,
                 cache_enabled: bool | None = None) -> None:
        self.device_type, self.dtype, self.enabled = device_type, dtype, enabled

    def __enter__(self) -> autocast:
        return self

    def __exit__(self, *exc: object) -> None:
        pass


class GradScaler:
    """Loss scaling is needed only for float16 training, which lightgrad does not autocast to, so
    this scaler is disabled: ``scale`` returns the loss and ``step`` calls ``optimizer.step()``."""

    def __init__(self, device: str = "cpu", init_scale: float = 2.0 ** 16, growth_factor: float = 2.0,
                 backoff_factor: float = 0.5, growth_interval: int = 2000, enabled: bool = True) -> None:
        self._enabled = False

    def scale(self, outputs: Any) -> Any:
        return outputs

    def unscale_(self, optimizer: Any) -> None:
        pass

    def step(self, optimizer: Any, *args: Any, **kwargs: Any) -> Any:
        return optimizer.step(*args, **kwargs)

    def update(self, new_scale: Any = None) -> None:
        pass

    def get_scale(self) -> float:
        return 1.0

    def is_enabled(self) -> bool:
        return self._enabled

    def state_dict(self) -> dict[str, Any]:
        return {}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        pass


class _Amp:
    autocast = autocast
    GradScaler = GradScaler


amp = _Amp()
