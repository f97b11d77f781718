"""``torch.cuda`` on a machine without CUDA: it answers that no device is present, and seeding,
syncing and cache calls are harmless no-ops, so scripts written for a GPU run on the CPU.

>>> lightgrad.cuda.is_available(), lightgrad.cuda.device_count()
(False, 0)
"""

from __future__ import annotations

from typing import Any

from . import amp as _amp
from .device import OutOfMemoryError

__all__ = ["OutOfMemoryError", "amp", "current_device", "device_count", "empty_cache", "is_available",
           "is_bf16_supported", "manual_seed", "manual_seed_all", "max_memory_allocated", "memory_allocated",
           "synchronize"]


def is_available() -> bool:
    """False: lightgrad runs on the CPU only."""
    return False


def device_count() -> int:
    """The number of CUDA devices: 0 (lightgrad runs on the CPU)."""
    return 0


def manual_seed(seed: int) -> None:
    """Does nothing: there is no CUDA generator to seed (PyTorch ignores this call without CUDA too)."""
    pass


manual_seed_all = manual_seed


def synchronize(device: Any = None) -> None:
    """Does nothing: no CUDA device has work to wait for."""
    pass


def empty_cache() -> None:
    """Does nothing: there is no CUDA caching allocator."""
    pass


def is_bf16_supported(including_emulation: bool = True) -> bool:
    """False: lightgrad has no CUDA device."""
    return False


def current_device() -> int:
    """Raises RuntimeError ("No CUDA GPUs are available"), as PyTorch on a machine without one."""
    raise RuntimeError("No CUDA GPUs are available")


def memory_allocated(device: Any = None) -> int:
    """Bytes of CUDA memory in use: 0 (lightgrad has no CUDA device)."""
    return 0


max_memory_allocated = memory_reserved = max_memory_reserved = memory_allocated


def reset_peak_memory_stats(device: Any = None) -> None:
    pass


class amp:
    """``torch.cuda.amp``: PyTorch's older spelling of ``torch.amp`` with ``device_type='cuda'``,
    so here autocast is off and the scaler disabled (as PyTorch does where CUDA is unavailable)."""

    @staticmethod
    def autocast(enabled: bool = True, dtype: Any = None, cache_enabled: bool = True) -> _amp.autocast:
        """``torch.cuda.amp.autocast``: autocast for device type 'cuda' (so off here)."""
        return _amp.autocast("cuda", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)

    @staticmethod
    def GradScaler(init_scale: float = 2.0 ** 16, growth_factor: float = 2.0, backoff_factor: float = 0.5,  # noqa: N802
                   growth_interval: int = 2000, enabled: bool = True) -> _amp.GradScaler:
        """``torch.cuda.amp.GradScaler``: a scaler for device type 'cuda' (so disabled here)."""
        return _amp.GradScaler("cuda", init_scale, growth_factor, backoff_factor, growth_interval, enabled)
