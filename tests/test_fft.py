"""lightgrad.fft against torch.fft: every transform, forward and backward, for real and complex inputs,
with n/s, dim and norm; dtypes; PyTorch's errors; second derivatives; fftfreq and the shifts."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import lightgrad as lg

torch = pytest.importorskip("torch")

ONE_D = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft"]
N_D = ["fft2", "ifft2", "fftn", "ifftn", "rfft2", "irfft2", "rfftn", "irfftn", "hfft2", "ihfft2", "hfftn", "ihfftn"]
REAL_ONLY = {"rfft", "ihfft", "rfft2", "ihfft2", "rfftn", "ihfftn"}
ONE_D_ARGS: list[dict[str, Any]] = [{}, {"n": 7}, {"n": 3}, {"norm": "ortho"}, {"norm": "forward"}, {"dim": 0}]
N_D_ARGS: list[dict[str, Any]] = [{}, {"s": (3, 6)}, {"s": (5, 3), "dim": (0, 2)}, {"norm": "ortho"},
                                  {"dim": (0, 1), "norm": "forward"}, {"s": (-1, 4)}]
CASES = [(n, kw, c) for n in ONE_D for kw in ONE_D_ARGS for c in (False, True) if not (c and n in REAL_ONLY)]
CASES += [(n, kw, c) for n in N_D for kw in N_D_ARGS for c in (False, True) if not (c and n in REAL_ONLY)]


def _np(t: Any) -> np.ndarray:
    if isinstance(t, lg.Tensor):
        return t.detach().numpy()
    return t.detach().resolve_conj().numpy()


def _as_real(t: Any, T: Any) -> Any:
    """The output as real numbers (complex ones as (real, imag) pairs), for a real-valued loss."""
    if not t.is_complex():
        return t
    return T.view_as_real(t.resolve_conj() if T is torch else t)


@pytest.mark.parametrize("name,kw,complex_input", CASES,
                         ids=[f"{n}-{kw}-{'complex' if c else 'real'}" for n, kw, c in CASES])
def test_transform_and_gradient_match_torch(name: str, kw: dict[str, Any], complex_input: bool) -> None:
    rng = np.random.default_rng(len(name) + len(kw))
    a = rng.normal(size=(4, 3, 5))
    if complex_input:
        a = a + 1j * rng.normal(size=a.shape)
    x, y = lg.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    lo, to = getattr(lg.fft, name)(x, **kw), getattr(torch.fft, name)(y, **kw)
    assert tuple(lo.shape) == tuple(to.shape)
    assert lo.dtype.name == str(to.dtype).replace("torch.", "")
    np.testing.assert_allclose(_np(lo), _np(to), rtol=1e-10, atol=1e-10)
    r = rng.normal(size=tuple(_as_real(to, torch).shape))
    (_as_real(lo, lg) * lg.tensor(r)).sum().backward()
    (_as_real(to, torch) * torch.tensor(r)).sum().backward()
    assert x.grad is not None and x.grad.dtype == x.dtype
    np.testing.assert_allclose(_np(x.grad), _np(y.grad), rtol=1e-9, atol=1e-10)


@pytest.mark.parametrize("name", ["fft", "rfft", "irfft", "hfft", "ihfft", "fftn", "irfftn"])
def test_float32_dtypes_and_values(name: str) -> None:
    a = np.random.default_rng(0).normal(size=(3, 8)).astype(np.float32)
    if name in ("irfft", "hfft", "irfftn"):
        a = a + 1j * a[::-1]  # (complex64 in, float32 out)
        a = a.astype(np.complex64)
    lo, to = getattr(lg.fft, name)(lg.tensor(a)), getattr(torch.fft, name)(torch.tensor(a))
    assert lo.dtype.name == str(to.dtype).replace("torch.", "")
    np.testing.assert_allclose(_np(lo), _np(to), rtol=1e-5, atol=1e-5)


def test_integer_and_bool_inputs_take_the_default_float() -> None:
    for T in (lg, torch):
        assert str(T.fft.fft(T.tensor([1, 2, 3])).dtype).endswith("complex64")
        assert str(T.fft.ifft(T.tensor([True, False])).dtype).endswith("complex64")
        assert str(T.fft.rfft(T.tensor([1, 2, 3, 4])).dtype).endswith("complex64")
    np.testing.assert_allclose(lg.fft.rfft(lg.tensor([1.0, 2.0, 3.0, 4.0])).numpy(), [10, -2 + 2j, -2])


ERRORS = [
    lambda T: T.fft.fft(T.randn(4).half()),
    lambda T: T.fft.fft(T.randn(4), n=0),
    lambda T: T.fft.fft(T.randn(4), norm="bad"),
    lambda T: T.fft.fftn(T.ones(3, 3), dim=(0, 0)),
    lambda T: T.fft.fft(T.randn(4), dim=3),
    lambda T: T.fft.rfft(T.randn(4).to(T.complex64)),
    lambda T: T.fft.fftn(T.ones(3, 3), s=(2,), dim=(0, 1)),
    lambda T: T.fft.irfft(T.ones(1, dtype=T.complex64)),
    lambda T: T.fft.fft(T.tensor(1.0)),
    lambda T: T.fft.fftfreq(5, dtype=T.int64),
]


@pytest.mark.parametrize("k", range(len(ERRORS)))
def test_errors_match_torch(k: int) -> None:
    f = ERRORS[k]
    with pytest.raises(Exception) as ref:
        f(torch)
    with pytest.raises(type(ref.value)) as got:
        f(lg)
    assert str(got.value) == str(ref.value)


@pytest.mark.parametrize("loss", ["rfft_abs", "irfft_rfft", "fft_complex", "hfft"])
def test_second_derivative_matches_torch(loss: str) -> None:
    a = np.random.default_rng(1).normal(size=(6,))

    def f(T: Any, x: Any) -> Any:
        if loss == "rfft_abs":
            return (T.fft.rfft(x).abs() ** 2).sum()
        if loss == "irfft_rfft":
            return (T.fft.irfft(T.fft.rfft(x) * T.fft.rfft(x), n=6) ** 2).sum()
        if loss == "fft_complex":
            z = T.fft.fft(x)
            return T.view_as_real(z * z).pow(2).sum()
        return (T.fft.hfft(T.fft.ifft(x)) ** 3).sum()

    out = []
    for T in (lg, torch):
        x = T.tensor(a, requires_grad=True)
        (g,) = T.autograd.grad(f(T, x), [x], create_graph=True)
        (h,) = T.autograd.grad((g * g).sum(), [x])
        out.append((_np(g), _np(h)))
    np.testing.assert_allclose(out[0][0], out[1][0], rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(out[0][1], out[1][1], rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("n,d", [(5, 1.0), (6, 0.1), (1, 2.0), (8, 0.3)])
@pytest.mark.parametrize("dtype", [None, "float64"])
def test_fftfreq_and_rfftfreq_bit_for_bit(n: int, d: float, dtype: str | None) -> None:
    for name in ("fftfreq", "rfftfreq"):
        lo = getattr(lg.fft, name)(n, d, dtype=None if dtype is None else getattr(lg, dtype))
        to = getattr(torch.fft, name)(n, d, dtype=None if dtype is None else getattr(torch, dtype))
        assert lo.dtype.name == str(to.dtype).replace("torch.", "")
        assert lo.numpy().tobytes() == to.numpy().tobytes()


@pytest.mark.parametrize("dim", [None, 0, 1, (0, 1), -1])
def test_fftshift_and_ifftshift(dim: Any) -> None:
    a = np.arange(30.0).reshape(5, 6)
    for name in ("fftshift", "ifftshift"):
        x, y = lg.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
        lo, to = getattr(lg.fft, name)(x, dim), getattr(torch.fft, name)(y, dim)
        np.testing.assert_array_equal(_np(lo), _np(to))
        w = np.random.default_rng(0).normal(size=a.shape)
        (lo * lg.tensor(w)).sum().backward()
        (to * torch.tensor(w)).sum().backward()
        np.testing.assert_array_equal(_np(x.grad), _np(y.grad))


def test_out_argument_and_0d_fftn() -> None:
    out = lg.empty(4, dtype=lg.complex64)
    res = lg.fft.fft(lg.tensor([1.0, 0.0, 0.0, 0.0]), out=out)
    assert res is out
    np.testing.assert_allclose(out.numpy(), np.ones(4))
    z = lg.fft.fftn(lg.tensor(2.0))
    assert z.shape == () and z.dtype == lg.complex64 and complex(z) == 2


# ---- complex autograd the transforms rest on -------------------------------------------------------

COMPLEX_LOSSES = {
    "real": lambda T, z: z.real.sum(),
    "imag": lambda T, z: (z.imag * 3).sum(),
    "abs": lambda T, z: z.abs().sum(),
    "angle": lambda T, z: z.angle().sum(),
    "conj_mul": lambda T, z: (z * z.conj()).real.sum(),
    "mul_div": lambda T, z: T.view_as_real(z * (2 - 1j) / (z + 3)).sum(),
    "view_as_real": lambda T, z: (T.view_as_real(z) * T.tensor([1.0, 2.0], dtype=T.float64)).sum(),
    "add_sub_mean": lambda T, z: ((z + 1j) - z * 0.5).abs().mean(),
}


@pytest.mark.parametrize("name", list(COMPLEX_LOSSES))
def test_complex_gradients_match_torch(name: str) -> None:
    a = np.array([1 + 2j, 0.5 - 1j, -3 + 0.5j])
    z, w = lg.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    COMPLEX_LOSSES[name](lg, z).backward()
    COMPLEX_LOSSES[name](torch, w).backward()
    np.testing.assert_allclose(_np(z.grad), _np(w.grad), rtol=1e-12, atol=1e-12)


def test_real_input_through_complex_numbers_gets_a_real_gradient() -> None:
    a = np.array([0.5, -1.0, 2.0])
    x, y = lg.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    (x.to(lg.complex128) * (1 + 2j)).imag.sum().backward()
    (y.to(torch.complex128) * (1 + 2j)).imag.sum().backward()
    assert x.grad.dtype == lg.float64
    np.testing.assert_allclose(_np(x.grad), _np(y.grad))


def test_complex_op_without_a_complex_gradient_raises_instead_of_being_wrong() -> None:
    z = lg.tensor(np.array([1 + 2j]), requires_grad=True)
    with pytest.raises(RuntimeError, match="does not differentiate exp of complex tensors"):
        z.exp().real.sum().backward()


def test_backward_of_a_complex_scalar_raises_as_torch() -> None:
    z = lg.tensor(np.array([1 + 2j]), requires_grad=True)
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for real scalar outputs"):
        z.sum().backward()


def test_import_does_not_load_fft_or_special() -> None:
    import subprocess
    import sys
    code = "import sys, lightgrad; print('lightgrad.fft' in sys.modules, 'lightgrad.special' in sys.modules, "
    code += "lightgrad.dtypes.GUARDED[0])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "False", "None"]
