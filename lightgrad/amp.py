"""``torch.amp``: autocast and the gradient scaler.

lightgrad's autocast is a no-op for the ops: inside ``autocast("cpu", dtype=torch.bfloat16)``
PyTorch runs its lower-precision list (matmul, mm, bmm, addmm, baddbmm, addbmm, linear, conv and
conv_transpose 1-3d, prelu, scaled_dot_product_attention, ...) in bfloat16 or float16 and casts
its float32 list up; lightgrad computes every op in its inputs' dtypes (float32, so results are
more precise than PyTorch's and not bit-identical to them). The block's state is kept as
PyTorch's (``is_autocast_enabled``, ``get_autocast_dtype``, nesting, the dtype checks and their
warnings), and the first block entered warns once that ops keep their dtypes.

``GradScaler("cpu")`` scales the loss, unscales the gradients, skips steps whose gradients are not
finite and adapts the scale exactly as PyTorch's; ``GradScaler()`` (device "cuda") is disabled, as
PyTorch's is where CUDA is unavailable.

>>> with lightgrad.autocast("cpu", enabled=False):
...     lightgrad.is_autocast_enabled("cpu")
False
"""

from __future__ import annotations

import math
import warnings
from typing import Any

from . import dtypes as D
from .device import _autocast_state
from .grad_mode import no_grad
from .tensor import Tensor, tensor

__all__ = ["GradScaler", "autocast", "get_autocast_dtype", "is_autocast_available", "is_autocast_enabled"]

# PyTorch's device types (its error lists them in this order)
_DEVICE_TYPES = ("cpu", "cuda", "ipu", "xpu", "mkldnn", "opengl", "opencl", "ideep", "hip", "ve", "fpga", "maia",
                 "xla", "lazy", "vulkan", "mps", "meta", "hpu", "mtia", "privateuseone")
_warned_noop = False


def _device_type(device_type: Any) -> str:
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    kind = device_type.split(":")[0]
    if kind not in _DEVICE_TYPES:
        raise RuntimeError(f"Expected one of {', '.join(_DEVICE_TYPES)} device type at start of device string: "
                           f"{device_type}")
    return kind


def _default_dtype(kind: str) -> Any:
    # bfloat16 on the CPU, float16 elsewhere (PyTorch's defaults); float16 where bfloat16 is missing
    return getattr(D, "bfloat16", D.float16) if kind == "cpu" else D.float16


def is_autocast_available(device_type: str) -> bool:
    """Whether autocast can be enabled for ``device_type`` (the CPU only, here)."""
    return _device_type(device_type) == "cpu"


def is_autocast_enabled(device_type: str | None = None) -> bool:
    """Whether an enabled autocast block is active for ``device_type`` (CUDA's when omitted, as PyTorch)."""
    return _autocast_state.get(_device_type(device_type or "cuda"), (False, None))[0]


def get_autocast_dtype(device_type: str) -> Any:
    """The dtype autocast would use for ``device_type``: the active block's, else the default."""
    kind = _device_type(device_type)
    state = _autocast_state.get(kind)
    return state[1] if state is not None and state[1] is not None else _default_dtype(kind)


class autocast:
    """``with autocast("cpu", dtype=torch.bfloat16):``, also as a decorator. A no-op for the ops
    (see the module's docstring): they keep their dtypes; the state and checks are PyTorch's."""

    def __init__(self, device_type: str, dtype: Any = None, enabled: bool = True,
                 cache_enabled: bool | None = None) -> None:
        self.device = kind = _device_type(device_type)
        self.fast_dtype = D.to_dtype(dtype) if dtype is not None else get_autocast_dtype(kind)
        self._enabled = bool(enabled)
        self._cache_enabled = True if cache_enabled is None else cache_enabled
        if not self._enabled:
            return
        if kind == "cuda":
            warnings.warn("CUDA is not available or torch_xla is imported. Disabling autocast.", stacklevel=2)
            self._enabled = False
        elif kind == "cpu" and self.fast_dtype not in (getattr(D, "bfloat16", None), D.float16):
            warnings.warn("In CPU autocast, but the target dtype is not supported. Disabling autocast.\n"
                          "CPU Autocast only supports dtypes of torch.bfloat16, torch.float16 currently.",
                          stacklevel=2)
            self._enabled = False

    def __enter__(self) -> autocast:
        global _warned_noop
        self._prev = _autocast_state.get(self.device)
        _autocast_state[self.device] = (self._enabled, self.fast_dtype)
        if self._enabled and not _warned_noop:
            _warned_noop = True
            warnings.warn(f"lightgrad's autocast does not change dtypes: ops inside it compute in their inputs' "
                          f"dtypes, where PyTorch would run matmul, linear and conv in {self.fast_dtype}",
                          stacklevel=2)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._prev is None:
            _autocast_state.pop(self.device, None)
        else:
            _autocast_state[self.device] = self._prev

    def __call__(self, func: Any) -> Any:
        """As a decorator: ``func`` runs inside a fresh block with these arguments."""
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with autocast(self.device, self.fast_dtype, self._enabled, self._cache_enabled):
                return func(*args, **kwargs)
        wrapper.__name__, wrapper.__doc__ = getattr(func, "__name__", "wrapper"), func.__doc__
        return wrapper


# ---- the gradient scaler --------------------------------------------------------------------------
_READY, _UNSCALED, _STEPPED = 0, 1, 2  # an optimizer's stage since the last update()


class GradScaler:
    """Loss scaling for low-precision training: ``scaler.scale(loss).backward(); scaler.step(opt);
    scaler.update()``. Enabled for device "cpu" (PyTorch's algorithm), disabled for "cuda"."""

    def __init__(self, device: str = "cuda", init_scale: float = 2.0 ** 16, growth_factor: float = 2.0,
                 backoff_factor: float = 0.5, growth_interval: int = 2000, enabled: bool = True) -> None:
        self._device = device
        self._enabled = enabled
        if enabled and device.split(":")[0] == "cuda":
            warnings.warn("torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  Disabling.",
                          stacklevel=2)
            self._enabled = False
        if self._enabled:
            if growth_factor <= 1.0:
                raise AssertionError("The growth factor must be > 1.0.")
            if backoff_factor >= 1.0:
                raise AssertionError("The backoff factor must be < 1.0.")
        self._init_scale, self._growth_factor, self._backoff_factor = init_scale, growth_factor, backoff_factor
        self._growth_interval = growth_interval
        self._scale: Tensor | None = None
        self._growth_tracker = 0
        self._per_optimizer: dict[int, dict[str, Any]] = {}

    def _state(self, optimizer: Any) -> dict[str, Any]:
        return self._per_optimizer.setdefault(id(optimizer), {"stage": _READY, "found_inf": False})

    def _scale_tensor(self) -> Tensor:
        if self._scale is None:
            self._scale = tensor(self._init_scale, dtype=D.float32)
        return self._scale

    def scale(self, outputs: Any) -> Any:
        """``outputs`` (a tensor or nested lists/tuples of them) times the scale."""
        if not self._enabled:
            return outputs
        if isinstance(outputs, Tensor):
            return outputs * self._scale_tensor()
        if isinstance(outputs, list | tuple):
            return type(outputs)(self.scale(o) for o in outputs)
        raise ValueError("outputs must be a Tensor or an iterable of Tensors")

    def unscale_(self, optimizer: Any) -> None:
        """Divide ``optimizer``'s gradients by the scale in place, noting any inf or nan."""
        if not self._enabled:
            return
        state = self._state(optimizer)
        if state["stage"] == _UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since the last update().")
        if state["stage"] == _STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        # PyTorch's reciprocal: of the float32 scale, in double, rounded to float32
        inv = float(D.float32.np.type(1.0 / float(self._scale_tensor().item())))
        found = False
        with no_grad():
            for group in optimizer.param_groups:
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    if not bool(p.grad.isfinite().all()):
                        found = True
                    p.grad.mul_(inv)
        state["found_inf"], state["stage"] = found, _UNSCALED

    def step(self, optimizer: Any, *args: Any, **kwargs: Any) -> Any:
        """``optimizer.step()`` unless the unscaled gradients hold an inf or nan (then skipped)."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is enabled.")
        state = self._state(optimizer)
        if state["stage"] == _STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if state["stage"] == _READY:
            self.unscale_(optimizer)
        result = None if state["found_inf"] else optimizer.step(*args, **kwargs)
        state["stage"] = _STEPPED
        return result

    def update(self, new_scale: float | Tensor | None = None) -> None:
        """Set the scale for the next step: backed off after an inf, grown after growth_interval clean steps."""
        if not self._enabled:
            return
        if new_scale is not None:
            value = float(new_scale.item() if isinstance(new_scale, Tensor) else new_scale)
            self._scale = tensor(value, dtype=D.float32)
        else:
            if not self._per_optimizer:
                raise AssertionError("No inf checks were recorded prior to update.")
            scale = float(self._scale_tensor().item())
            if any(s["found_inf"] for s in self._per_optimizer.values()):
                scale, self._growth_tracker = scale * self._backoff_factor, 0
            else:
                self._growth_tracker += 1
                if self._growth_tracker == self._growth_interval:
                    grown = scale * self._growth_factor
                    scale, self._growth_tracker = (grown if math.isfinite(float(D.float32.np.type(grown))) else scale), 0
            self._scale = tensor(scale, dtype=D.float32)
        self._per_optimizer = {}

    def get_scale(self) -> float:
        """The current scale factor (1.0 when the scaler is disabled)."""
        return float(self._scale_tensor().item()) if self._enabled else 1.0

    def is_enabled(self) -> bool:
        """Whether the scaler scales at all."""
        return self._enabled

    def get_growth_factor(self) -> float:
        """The factor the scale grows by after ``growth_interval`` steps without inf/NaN."""
        return self._growth_factor

    def set_growth_factor(self, new_factor: float) -> None:
        """Set the factor the scale grows by."""
        self._growth_factor = new_factor

    def get_backoff_factor(self) -> float:
        """The factor the scale is multiplied by when a step finds inf/NaN gradients."""
        return self._backoff_factor

    def set_backoff_factor(self, new_factor: float) -> None:
        """Set the factor the scale backs off by."""
        self._backoff_factor = new_factor

    def get_growth_interval(self) -> int:
        """How many consecutive steps without inf/NaN make the scale grow."""
        return self._growth_interval

    def set_growth_interval(self, new_interval: int) -> None:
        """Set how many clean steps make the scale grow."""
        self._growth_interval = new_interval

    def state_dict(self) -> dict[str, Any]:
        """The scale and its schedule (empty when disabled, as PyTorch's)."""
        if not self._enabled:
            return {}
        return {"scale": self.get_scale(), "growth_factor": self._growth_factor,
                "backoff_factor": self._backoff_factor, "growth_interval": self._growth_interval,
                "_growth_tracker": self._growth_tracker}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore the scale and its growth settings from ``state_dict()``'s output."""
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError("The source state dict is empty, possibly because it was saved from a disabled "
                               "instance of GradScaler.")
        self._init_scale = state_dict["scale"]
        self._scale = tensor(float(state_dict["scale"]), dtype=D.float32)
        self._growth_factor, self._backoff_factor = state_dict["growth_factor"], state_dict["backoff_factor"]
        self._growth_interval, self._growth_tracker = state_dict["growth_interval"], state_dict["_growth_tracker"]
