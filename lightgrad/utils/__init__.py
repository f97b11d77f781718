"""Utilities with ``torch.utils``'s layout: ``lightgrad.utils.data`` holds Dataset and DataLoader.

>>> from lightgrad.utils.data import DataLoader, TensorDataset
"""

from __future__ import annotations

import importlib
from typing import Any


def __getattr__(name: str) -> Any:
    # submodules load on first use (``lightgrad.utils.data``), as the top-level package does
    try:
        return importlib.import_module(f".{name}", __name__)
    except ModuleNotFoundError as e:
        if e.name != f"{__name__}.{name}":
            raise
        raise AttributeError(f"module '{__name__}' has no attribute '{name}'") from None
