"""Vision functions and layers against PyTorch: padding, pixel/channel shuffle, interpolation, grid sampling.

Interpolation (nearest, linear, bilinear, bicubic, trilinear, area) and the Upsample modules are
checked against PyTorch and central differences in float64; the padding modules, pixel and
channel shuffles, affine_grid and grid_sample run each row in float64 (tight) and float32 on the
same inputs and upstream gradient; errors match PyTorch's types and messages.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from helpers import (check_case_against_torch, check_case_finite_differences, check_module_case_against_torch,
                     needs_torch, torch)
from helpers import G, Case, assert_error_like_torch, check_case_in_precision

import lightgrad as lg

RNG = np.random.default_rng(0)


# ---- interpolation: the functional table (id, fn(F, *inputs), input shapes, constant arrays) -----

CASES: list[tuple[str, Callable[..., Any], list[tuple[int, ...]], list[np.ndarray]]] = [
    ("nearest_size", lambda F, x: F.interpolate(x, size=(5, 7)), [(1, 2, 3, 4)], []),
    ("nearest_scale2", lambda F, x: F.interpolate(x, scale_factor=2), [(1, 2, 3, 4)], []),
    ("nearest_scale_frac", lambda F, x: F.interpolate(x, scale_factor=(1.5, 0.7)), [(1, 2, 4, 6)], []),
    ("nearest_exact", lambda F, x: F.interpolate(x, size=(5, 3), mode="nearest-exact"), [(1, 2, 4, 6)], []),
    ("nearest_1d", lambda F, x: F.interpolate(x, size=7), [(2, 2, 3)], []),
    ("bilinear", lambda F, x: F.interpolate(x, size=(5, 7), mode="bilinear"), [(1, 2, 3, 4)], []),
    ("bilinear_align", lambda F, x: F.interpolate(x, size=(5, 7), mode="bilinear", align_corners=True),
     [(1, 2, 3, 4)], []),
    ("bilinear_down_scale", lambda F, x: F.interpolate(x, scale_factor=0.6, mode="bilinear"), [(1, 2, 5, 6)], []),
    ("bilinear_scale_align", lambda F, x: F.interpolate(x, scale_factor=(2, 1.5), mode="bilinear", align_corners=True),
     [(1, 1, 3, 4)], []),
    ("bicubic", lambda F, x: F.interpolate(x, size=(6, 5), mode="bicubic"), [(1, 2, 4, 3)], []),
    ("bicubic_align", lambda F, x: F.interpolate(x, scale_factor=2, mode="bicubic", align_corners=True),
     [(1, 1, 3, 3)], []),
    ("linear_1d", lambda F, x: F.interpolate(x, size=7, mode="linear"), [(2, 2, 4)], []),
    ("trilinear", lambda F, x: F.interpolate(x, size=(3, 4, 2), mode="trilinear"), [(1, 1, 2, 3, 3)], []),
    ("area", lambda F, x: F.interpolate(x, size=(2, 3), mode="area"), [(1, 2, 5, 7)], []),
]


@needs_torch
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_matches_torch(case: Any) -> None:
    """Values and gradients of every input equal PyTorch's (float64)."""
    check_case_against_torch(case, RNG)


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_gradient_matches_finite_differences(case: Any) -> None:
    """Autograd equals central differences of the lightgrad forward (float64)."""
    check_case_finite_differences(case, RNG)


# ---- Upsample modules ----------------------------------------------------------------------------

MODULES = [
    ("Upsample_nearest", lambda nn: nn.Upsample(scale_factor=2), (1, 2, 3, 3)),
    ("Upsample_bilinear", lambda nn: nn.Upsample(size=(5, 4), mode="bilinear"), (1, 2, 3, 3)),
    ("UpsamplingNearest2d", lambda nn: nn.UpsamplingNearest2d(size=5), (1, 2, 3, 3)),
    ("UpsamplingBilinear2d", lambda nn: nn.UpsamplingBilinear2d(scale_factor=2), (1, 2, 3, 3)),
]


@needs_torch
@pytest.mark.parametrize("case", MODULES, ids=[c[0] for c in MODULES])
def test_module_matches_torch(case: Any) -> None:
    """Output, input gradient and parameter gradients with identical weights; same repr."""
    check_module_case_against_torch(case, RNG)


# ---- padding, shuffles, affine_grid, grid_sample: float64 and float32 (rows: name, fn(T, ...), specs, fd) ----

PRECISION_CASES: list[Case] = [
    # padding modules (batched and unbatched)
    ("zeropad1d", lambda T, x: T.nn.ZeroPad1d((1, 2))(x), [G(2, 3, 5)], True),
    ("zeropad2d", lambda T, x: T.nn.ZeroPad2d(1)(x), [G(3, 4, 4)], False),
    ("zeropad2d_crop", lambda T, x: T.nn.ZeroPad2d((-1, 1, 0, -1))(x), [G(1, 2, 4, 4)], False),
    ("zeropad3d", lambda T, x: T.nn.ZeroPad3d((1, 0, 2, 1, 0, 1))(x), [G(1, 2, 3, 3, 3)], False),
    ("constpad1d", lambda T, x: T.nn.ConstantPad1d(2, 3.5)(x), [G(3, 4)], False),
    ("constpad2d", lambda T, x: T.nn.ConstantPad2d((1, 0, 2, 1), -1.0)(x), [G(2, 2, 3, 3)], False),
    ("constpad3d", lambda T, x: T.nn.ConstantPad3d(1, 0.5)(x), [G(2, 2, 2, 3)], False),
    ("reflpad1d", lambda T, x: T.nn.ReflectionPad1d((2, 1))(x), [G(2, 3, 5)], True),
    ("reflpad1d_unb", lambda T, x: T.nn.ReflectionPad1d(3)(x), [G(3, 5)], False),
    ("reflpad2d", lambda T, x: T.nn.ReflectionPad2d((1, 2, 2, 1))(x), [G(1, 2, 4, 4)], True),
    ("reflpad3d", lambda T, x: T.nn.ReflectionPad3d(1)(x), [G(1, 2, 3, 3, 3)], False),
    ("reflpad3d_unb", lambda T, x: T.nn.ReflectionPad3d((1, 2, 0, 1, 2, 0))(x), [G(2, 3, 3, 4)], False),
    ("replpad1d", lambda T, x: T.nn.ReplicationPad1d((3, 1))(x), [G(2, 3, 4)], True),
    ("replpad2d", lambda T, x: T.nn.ReplicationPad2d(2)(x), [G(2, 3, 3)], True),
    ("replpad3d", lambda T, x: T.nn.ReplicationPad3d((1, 2, 0, 1, 2, 0))(x), [G(1, 2, 2, 3, 3)], False),
    ("circpad1d", lambda T, x: T.nn.CircularPad1d((2, 1))(x), [G(2, 3, 4)], True),
    ("circpad2d", lambda T, x: T.nn.CircularPad2d(1)(x), [G(2, 3, 3)], False),
    ("circpad3d", lambda T, x: T.nn.CircularPad3d((1, 0, 0, 2, 1, 1))(x), [G(1, 2, 2, 3, 3)], False),
    # pixel and channel shuffles
    ("pixel_shuffle", lambda T, x: T.nn.PixelShuffle(2)(x), [G(2, 8, 3, 2)], False),
    ("pixel_shuffle_unb", lambda T, x: T.nn.functional.pixel_shuffle(x, 3), [G(9, 2, 1)], False),
    ("pixel_shuffle_5d", lambda T, x: T.nn.functional.pixel_shuffle(x, 2), [G(2, 1, 4, 2, 3)], False),
    ("pixel_unshuffle", lambda T, x: T.nn.PixelUnshuffle(2)(x), [G(2, 2, 4, 6)], True),
    ("pixel_unshuffle_unb", lambda T, x: T.nn.functional.pixel_unshuffle(x, 3), [G(1, 3, 6)], False),
    ("channel_shuffle", lambda T, x: T.nn.functional.channel_shuffle(x, 3), [G(2, 6, 3)], False),
    ("channel_shuffle_mod", lambda T, x: T.nn.ChannelShuffle(2)(x), [G(2, 4, 2, 2)], True),
    # spatial transformers
    ("affine_grid_2d", lambda T, th: T.nn.functional.affine_grid(th, (2, 3, 4, 5), align_corners=False),
     [G(2, 2, 3)], True),
    ("affine_grid_2d_ac", lambda T, th: T.nn.functional.affine_grid(th, [2, 1, 3, 1], align_corners=True),
     [G(2, 2, 3)], False),
    ("affine_grid_3d", lambda T, th: T.nn.functional.affine_grid(th, (1, 2, 3, 2, 4), align_corners=True),
     [G(1, 3, 4)], True),
    ("affine_grid_3d_nac", lambda T, th: T.nn.functional.affine_grid(th, (2, 2, 2, 3, 1), align_corners=False),
     [G(2, 3, 4)], False),
]


for _mode in ("bilinear", "nearest", "bicubic"):
    for _pm in ("zeros", "border", "reflection"):
        for _ac in (False, True):
            PRECISION_CASES.append((f"grid_sample_{_mode}_{_pm}_{_ac}",
                          lambda T, x, g, m=_mode, p=_pm, a=_ac: T.nn.functional.grid_sample(
                              x, g, mode=m, padding_mode=p, align_corners=a),
                          [G(2, 2, 4, 5), G(2, 3, 4, 2, lo=-1.4, hi=1.4)], _mode != "nearest" and not _ac))


PRECISION_CASES.append(("grid_sample_affine", lambda T, x, th: T.nn.functional.grid_sample(
    x, T.nn.functional.affine_grid(th, (1, 2, 3, 3), align_corners=False), align_corners=False),
    [G(1, 2, 4, 4), G(1, 2, 3, scale=0.7)], True))


@needs_torch
@pytest.mark.parametrize("name,fn,specs,fd", PRECISION_CASES, ids=[c[0] for c in PRECISION_CASES])
@pytest.mark.parametrize("precision", ["float64", "float32"])
def test_against_torch(name: str, fn: Callable[..., Any], specs: list[Any], fd: bool, precision: str) -> None:
    check_case_in_precision(name, fn, specs, fd, precision)


@needs_torch
def test_padding_attribute() -> None:
    for name in ("ZeroPad1d", "ZeroPad3d", "ConstantPad2d", "ReflectionPad1d", "CircularPad3d"):
        args = (2,) if "Constant" not in name else (2, 0.0)
        assert getattr(lg.nn, name)(*args).padding == getattr(torch.nn, name)(*args).padding


def test_grid_sample_default_align_warns() -> None:
    with pytest.warns(UserWarning, match="align_corners=False"):
        lg.nn.functional.grid_sample(lg.zeros(1, 1, 2, 2), lg.zeros(1, 1, 1, 2))
    with pytest.warns(UserWarning, match="align_corners=False"):
        lg.nn.functional.affine_grid(lg.zeros(1, 2, 3), (1, 1, 2, 2))


# ---- errors: PyTorch's type and message ----------------------------------------------------------

MESSAGE_ERRORS: list[tuple[str, Callable[[Any], Any]]] = [
    ("pixel_shuffle_2d", lambda T: T.nn.functional.pixel_shuffle(T.zeros(2, 3), 2)),
    ("pixel_shuffle_channels", lambda T: T.nn.functional.pixel_shuffle(T.zeros(5, 3, 3), 2)),
    ("pixel_shuffle_factor", lambda T: T.nn.functional.pixel_shuffle(T.zeros(4, 3, 3), 0)),
    ("pixel_unshuffle_h", lambda T: T.nn.functional.pixel_unshuffle(T.zeros(4, 5, 4), 2)),
    ("pixel_unshuffle_w", lambda T: T.nn.functional.pixel_unshuffle(T.zeros(4, 4, 5), 2)),
    ("channel_shuffle_2d", lambda T: T.nn.functional.channel_shuffle(T.zeros(4, 6), 2)),
    ("channel_shuffle_groups", lambda T: T.nn.functional.channel_shuffle(T.zeros(4, 6, 2), 4)),
    ("channel_shuffle_zero", lambda T: T.nn.functional.channel_shuffle(T.zeros(4, 6, 2), 0)),
    ("circpad_dims", lambda T: T.nn.CircularPad2d(1)(T.zeros(3, 4))),
    ("reflpad_dims", lambda T: T.nn.ReflectionPad2d(1)(T.zeros(3, 4))),
    ("reflpad_too_big", lambda T: T.nn.ReflectionPad1d(3)(T.zeros(1, 2, 3))),
    ("affine_theta_shape", lambda T: T.nn.functional.affine_grid(T.zeros(2, 3, 3), (2, 1, 4, 4),
                                                                 align_corners=False)),
    ("affine_size", lambda T: T.nn.functional.affine_grid(T.zeros(2, 2, 3), (2, 1, 4), align_corners=False)),
    ("grid_mode", lambda T: T.nn.functional.grid_sample(T.zeros(2, 1, 4, 4), T.zeros(2, 3, 3, 2), mode="foo")),
    ("grid_padding", lambda T: T.nn.functional.grid_sample(T.zeros(2, 1, 4, 4), T.zeros(2, 3, 3, 2),
                                                           padding_mode="foo")),
    ("grid_batch", lambda T: T.nn.functional.grid_sample(T.zeros(2, 1, 4, 4), T.zeros(3, 3, 3, 2),
                                                         align_corners=False)),
    ("grid_last", lambda T: T.nn.functional.grid_sample(T.zeros(2, 1, 4, 4), T.zeros(2, 3, 3, 3),
                                                        align_corners=False)),
    ("affine_batch", lambda T: T.nn.functional.affine_grid(T.zeros(2, 2, 3), (3, 1, 4, 4), align_corners=False)),
]


# (PyTorch's message is terse here: the type has to match, and the message has to name what was
# expected and what was got)
_OWN_WORDING = {"affine_batch"}


@needs_torch
@pytest.mark.parametrize("name,call", MESSAGE_ERRORS, ids=[e[0] for e in MESSAGE_ERRORS])
def test_errors_match_torch(name: str, call: Callable[[Any], Any]) -> None:
    assert_error_like_torch(name, call, _OWN_WORDING)


def test_errors_leave_state_unchanged() -> None:
    w = lg.ones(3, 4)
    before = w.numpy().copy()
    with pytest.raises(ValueError):
        lg.nn.init.eye_(lg.ones(2, 3, 4))
    with pytest.raises(RuntimeError):
        lg.nn.functional.max_unpool2d(w.reshape(1, 1, 3, 4), lg.full((1, 1, 3, 4), 99), 2)
    np.testing.assert_array_equal(w.numpy(), before)
    x = lg.ones(2, 3, requires_grad=True)
    with pytest.raises(RuntimeError):
        lg.nn.functional.pixel_shuffle(x, 2)
    assert x.grad is None and x._version[0] == 0
