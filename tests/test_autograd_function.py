"""Custom ``autograd.Function``s, gradcheck/gradgradcheck, anomaly detection and saved-tensor hooks,
side by side with PyTorch."""

from __future__ import annotations

import warnings
from typing import Any

import pytest

import lightgrad as lg

torch = pytest.importorskip("torch")


def _both(fn: Any) -> None:
    a, b = fn(lg), fn(torch)
    assert a == b, (a, b)


def _square(lib: Any) -> Any:
    class Square(lib.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: Any, k: float) -> Any:
            ctx.save_for_backward(x)
            ctx.k = k
            ctx.seen = ctx.needs_input_grad
            return x * x * k

        @staticmethod
        def backward(ctx: Any, g: Any) -> Any:
            (x,) = ctx.saved_tensors
            return 2 * x * g * ctx.k, None
    return Square


def test_ctx_style_forward_backward_and_needs_input_grad() -> None:
    def run(lib: Any) -> Any:
        x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        y = _square(lib).apply(x, 3.0)
        y.sum().backward()
        return [y.grad_fn.seen, x.grad.tolist(), y.tolist(), y.requires_grad]
    _both(run)


def test_setup_context_style_several_outputs_and_non_differentiable() -> None:
    def run(lib: Any) -> Any:
        log: list[Any] = []

        class Split(lib.autograd.Function):
            @staticmethod
            def forward(x: Any) -> Any:
                return x * 2, x * 3, 7

            @staticmethod
            def setup_context(ctx: Any, inputs: Any, output: Any) -> None:
                ctx.mark_non_differentiable(output[1])
                ctx.save_for_backward(output[0])  # an output, saved

            @staticmethod
            def backward(ctx: Any, ga: Any, gb: Any, gc: Any) -> Any:
                (a,) = ctx.saved_tensors
                log.append((gb.tolist(), gc, a.tolist()))
                return ga * 2
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        a, b, c = Split.apply(x)
        a.sum().backward()
        return [log, (a.requires_grad, b.requires_grad, c), x.grad.tolist()]
    _both(run)


def test_two_outputs_both_used_get_their_own_gradients() -> None:
    def run(lib: Any) -> Any:
        class SinCos(lib.autograd.Function):
            @staticmethod
            def forward(ctx: Any, x: Any) -> Any:
                ctx.save_for_backward(x)
                return x.sin(), x.cos()

            @staticmethod
            def backward(ctx: Any, gs: Any, gc: Any) -> Any:
                (x,) = ctx.saved_tensors
                return gs * x.cos() - gc * x.sin()
        x = lib.tensor([0.5, 1.0], dtype=lib.float64, requires_grad=True)
        s, c = SinCos.apply(x)
        (3 * s + c * c).sum().backward()
        return [round(v, 12) for v in x.grad.tolist()]
    _both(run)


def test_mark_dirty_returns_the_input_with_new_history() -> None:
    def run(lib: Any) -> Any:
        class Double(lib.autograd.Function):
            @staticmethod
            def forward(ctx: Any, x: Any) -> Any:
                x.mul_(2)
                ctx.mark_dirty(x)
                return x

            @staticmethod
            def backward(ctx: Any, g: Any) -> Any:
                return g * 2
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        z = x.clone()
        w = Double.apply(z)
        (w * w).sum().backward()
        return [w is z, z.tolist(), x.grad.tolist()]
    _both(run)


def test_materialize_grads_off_passes_none() -> None:
    def run(lib: Any) -> Any:
        log: list[Any] = []

        class Two(lib.autograd.Function):
            @staticmethod
            def forward(ctx: Any, x: Any) -> Any:
                ctx.set_materialize_grads(False)
                return x + 1, x + 2

            @staticmethod
            def backward(ctx: Any, g1: Any, g2: Any) -> Any:
                log.append((g1 is None, g2 is None))
                return g2
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        _, q = Two.apply(x)
        q.sum().backward()
        return [log, x.grad.tolist()]
    _both(run)


def test_saved_tensors_errors() -> None:
    for lib in (lg, torch):
        x = lib.tensor([1.0], requires_grad=True)
        y = _square(lib).apply(x, 1.0)
        y.sum().backward()
        with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
            _ = y.grad_fn.saved_tensors
        z = lib.tensor([1.0, 2.0], requires_grad=True).clone()
        out = _square(lib).apply(z, 1.0)
        z.add_(1)  # the saved input changes after forward
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            out.sum().backward()


def test_wrong_number_of_gradients_is_refused() -> None:
    for lib in (lg, torch):
        class Bad(lib.autograd.Function):
            @staticmethod
            def forward(ctx: Any, x: Any, y: Any) -> Any:
                return x + y

            @staticmethod
            def backward(ctx: Any, g: Any) -> Any:
                return g
        a, b = lib.ones(2, requires_grad=True), lib.ones(2, requires_grad=True)
        with pytest.raises(RuntimeError, match="returned an incorrect number of gradients"):
            Bad.apply(a, b).sum().backward()


def test_once_differentiable_backward_cannot_record_a_graph() -> None:
    def run(lib: Any) -> Any:
        class Cube(lib.autograd.Function):
            @staticmethod
            def forward(ctx: Any, x: Any) -> Any:
                ctx.save_for_backward(x)
                return x ** 3

            @staticmethod
            @lib.autograd.function.once_differentiable
            def backward(ctx: Any, g: Any) -> Any:
                (x,) = ctx.saved_tensors
                return 3 * x * x * g
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        (g,) = lib.autograd.grad(Cube.apply(x).sum(), x, create_graph=True)
        return [g.tolist(), g.requires_grad]
    _both(run)


def test_custom_function_under_func_transforms() -> None:
    Square = _square(lg)
    g = lg.func.grad(lambda x: Square.apply(x, 2.0).sum())(lg.tensor([1.0, 3.0]))
    assert g.tolist() == [4.0, 12.0]
    v = lg.func.vmap(lambda x: Square.apply(x, 1.0))(lg.tensor([[1.0, 2.0], [3.0, 4.0]]))
    assert v.tolist() == [[1.0, 4.0], [9.0, 16.0]]


# ---- gradcheck, anomaly mode, saved-tensor hooks --------------------------------------------------

def test_gradcheck_and_gradgradcheck_pass_on_correct_gradients() -> None:
    for lib in (lg, torch):
        x = lib.tensor([0.5, -1.2, 2.0], dtype=lib.float64, requires_grad=True)
        y = lib.tensor([[1.0, 2.0], [3.0, 0.5], [0.1, 0.2]], dtype=lib.float64, requires_grad=True)
        assert lib.autograd.gradcheck(lambda a, b: (a.sin() @ b, a * 2), (x, y))
        assert lib.autograd.gradgradcheck(lambda a, b: (a.sin() @ b).tanh(), (x, y))


def test_gradcheck_reports_a_wrong_backward_as_pytorch_does() -> None:
    msgs = []
    for lib in (lg, torch):
        class Wrong(lib.autograd.Function):
            @staticmethod
            def forward(ctx: Any, a: Any) -> Any:
                return a * a

            @staticmethod
            def backward(ctx: Any, g: Any) -> Any:
                return g * 3
        x = lib.tensor([0.5, 2.0], dtype=lib.float64, requires_grad=True)
        with pytest.raises(RuntimeError) as info:
            lib.autograd.gradcheck(Wrong.apply, (x,))
        assert type(info.value).__name__ == "GradcheckError"
        msgs.append(str(info.value).split("\n")[0])
        assert lib.autograd.gradcheck(Wrong.apply, (x,), raise_exception=False) is False
    assert msgs[0] == msgs[1] == "Jacobian mismatch for output 0 with respect to input 0,"


def test_gradcheck_warns_about_single_precision() -> None:
    x = lg.tensor([1.0, 2.0], requires_grad=True)
    with pytest.warns(UserWarning, match="is not a double precision floating point"):
        lg.autograd.gradcheck(lambda a: a * 2, (x,), atol=1e-2, rtol=1e-2, eps=1e-3)


def test_detect_anomaly_names_the_backward_that_made_nan() -> None:
    for lib in (lg, torch):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with lib.autograd.detect_anomaly():
                assert lib.is_anomaly_enabled()
                b = lib.tensor([0.0, 1.0], requires_grad=True)
                with pytest.raises(RuntimeError, match=r"Function 'DivBackward0' returned nan values in its 1th output\."):
                    (b / b).sum().backward()
        assert not lib.is_anomaly_enabled()
        c = lib.tensor([0.0, 1.0], requires_grad=True)
        (c / c).sum().backward()  # off again: NaN gradients pass silently, as in PyTorch
        assert c.grad.isnan().any().item()


def test_saved_tensors_hooks_wrap_custom_functions_saved_tensors() -> None:
    def run(lib: Any) -> Any:
        log: list[str] = []
        with lib.autograd.graph.saved_tensors_hooks(lambda t: (log.append("pack"), t)[1],
                                                    lambda t: (log.append("unpack"), t)[1]):
            x = lib.tensor([1.0, 2.0], requires_grad=True)
            y = _square(lib).apply(x, 1.0)
        y.sum().backward()
        with lib.autograd.graph.save_on_cpu():
            z = (x * x).sum()
        z.backward()
        return [log[:1], log[-1:], x.grad.tolist()]
    _both(run)
