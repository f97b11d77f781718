"""Anomaly detection: ``with autograd.detect_anomaly():`` a backward formula that produces NaN raises,
naming the node (and so the forward op) whose backward produced it."""

from __future__ import annotations

import warnings
from typing import Any

from ..grad_mode import _anomaly


def is_anomaly_enabled() -> bool:
    """Whether anomaly detection is on."""
    return _anomaly[0]


def is_anomaly_check_nan_enabled() -> bool:
    """Whether anomaly detection checks gradients for NaN."""
    return _anomaly[1]


class set_detect_anomaly:
    """Turn anomaly detection on or off (also as a context manager, restoring on exit)."""

    def __init__(self, mode: bool, check_nan: bool = True) -> None:
        self.prev = (_anomaly[0], _anomaly[1])
        _anomaly[0], _anomaly[1] = bool(mode), bool(check_nan)

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc: object) -> None:
        _anomaly[0], _anomaly[1] = self.prev


class detect_anomaly:
    """``with detect_anomaly():`` (or as a decorator) a backward that produces NaN raises
    ``RuntimeError: Function 'DivBackward0' returned nan values in its 0th output.``"""

    def __init__(self, check_nan: bool = True) -> None:
        self.check_nan = check_nan
        self.prev = (False, True)
        warnings.warn("Anomaly Detection has been enabled. This mode will increase the runtime and should only be "
                      "enabled for debugging.", stacklevel=2)

    def __enter__(self) -> None:
        self.prev = (_anomaly[0], _anomaly[1])
        _anomaly[0], _anomaly[1] = True, self.check_nan

    def __exit__(self, *exc: object) -> None:
        _anomaly[0], _anomaly[1] = self.prev

    def __call__(self, fn: Any) -> Any:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with self.__class__(self.check_nan):
                return fn(*args, **kwargs)
        return wrapper
