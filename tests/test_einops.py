"""einops on lightgrad tensors: its common functions, forward and gradients, against PyTorch
doing the same; the backend registers whether einops loads before or after lightgrad."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import lightgrad as lg

einops = pytest.importorskip("einops")
torch = pytest.importorskip("torch")


def _pair(*shape: int) -> tuple[lg.Tensor, torch.Tensor]:
    data = np.random.default_rng(sum(shape)).standard_normal(shape).astype(np.float32)
    return lg.tensor(data, requires_grad=True), torch.tensor(data, requires_grad=True)


CASES = [
    ("rearrange flatten", lambda e, x: e.rearrange(x, "b c h w -> b (c h w)"), (2, 3, 4, 5)),
    ("rearrange split", lambda e, x: e.rearrange(x, "b (h p) w c -> b h w (p c)", p=2), (2, 4, 3, 2)),
    ("rearrange transpose", lambda e, x: e.rearrange(x, "b c h w -> b h w c"), (2, 3, 4, 5)),
    ("reduce mean", lambda e, x: e.reduce(x, "b c h w -> b c", "mean"), (2, 3, 4, 5)),
    ("reduce max pool", lambda e, x: e.reduce(x, "b c (h h2) (w w2) -> b c h w", "max", h2=2, w2=2), (2, 3, 4, 6)),
    ("reduce sum keep", lambda e, x: e.reduce(x, "b c h w -> b c 1 1", "sum"), (2, 3, 4, 5)),
    ("reduce prod", lambda e, x: e.reduce(x, "b c h -> b", "prod"), (2, 3, 2)),
    ("repeat new axis", lambda e, x: e.repeat(x, "h w -> h w c", c=3), (4, 5)),
    ("repeat tile", lambda e, x: e.repeat(x, "h w -> (r h) w", r=2), (4, 5)),
    ("einsum", lambda e, x: e.einsum(x, x, "b i j, b k j -> b i k"), (2, 3, 4)),
]


@pytest.mark.parametrize("name,fn,shape", CASES, ids=[c[0] for c in CASES])
def test_against_torch(name, fn, shape) -> None:
    x, tx = _pair(*shape)
    y, ty = fn(einops, x), fn(einops, tx)
    assert isinstance(y, lg.Tensor) and tuple(y.shape) == tuple(ty.shape)
    np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), rtol=1e-5, atol=1e-6)
    w = np.random.default_rng(0).standard_normal(tuple(ty.shape)).astype(np.float32)
    (y * lg.tensor(w)).sum().backward()
    (ty * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-5, atol=1e-5)


def test_pack_unpack() -> None:
    a, ta = _pair(2, 3, 5)
    b, tb = _pair(2, 5)
    packed, ps = einops.pack([a, b], "b * c")
    tpacked, tps = einops.pack([ta, tb], "b * c")
    assert ps == tps and tuple(packed.shape) == tuple(tpacked.shape) == (2, 4, 5)
    ua, ub = einops.unpack(packed * 2, ps, "b * c")
    tua, tub = einops.unpack(tpacked * 2, tps, "b * c")
    (ua.sum() + (ub * ub).sum()).backward()
    (tua.sum() + (tub * tub).sum()).backward()
    np.testing.assert_allclose(a.grad.numpy(), ta.grad.numpy(), rtol=1e-6)
    np.testing.assert_allclose(b.grad.numpy(), tb.grad.numpy(), rtol=1e-6)


def test_parse_shape_and_asnumpy() -> None:
    x = lg.zeros(2, 3, 4)
    assert einops.parse_shape(x, "b c _") == {"b": 2, "c": 3}
    assert isinstance(einops.asnumpy(x), np.ndarray)


@pytest.mark.parametrize("order", ["einops first", "lightgrad first"])
def test_registration_either_import_order(order: str) -> None:
    first, second = ("einops", "lightgrad") if order == "einops first" else ("lightgrad", "einops")
    code = (f"import sys, {first}, {second}\n"
            "import einops, lightgrad\n"
            "print(tuple(einops.rearrange(lightgrad.ones(2, 3), 'a b -> b a').shape))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "(3, 2)"


def test_lightgrad_does_not_import_einops() -> None:
    out = subprocess.run([sys.executable, "-c", "import sys, lightgrad; print('einops' in sys.modules)"],
                         capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
