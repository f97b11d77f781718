"""Tensor and module hooks, side by side with PyTorch: what a hook sees, what its return does, order,
removal, and the errors PyTorch raises."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

import lightgrad as lg

torch = pytest.importorskip("torch")
LIBS = [lg, torch]


def _np(t: Any) -> Any:
    return None if t is None else t.detach().numpy().copy()


def _same(a: Any, b: Any) -> None:
    if isinstance(a, list | tuple):
        assert isinstance(b, list | tuple) and len(a) == len(b), (a, b)
        for x, y in zip(a, b):
            _same(x, y)
    elif isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    else:
        assert a == b, (a, b)


def _both(fn: Any) -> None:
    """Run ``fn(lib)`` with lightgrad and with PyTorch and compare what they return."""
    _same(fn(lg), fn(torch))


# ---- tensor hooks ---------------------------------------------------------------------------------

def test_leaf_hook_replaces_the_gradient_and_sees_it_once_summed() -> None:
    def run(lib: Any) -> Any:
        x = lib.tensor([1.0, -2.0, 3.0], requires_grad=True)
        seen: list[Any] = []
        x.register_hook(lambda g: seen.append(_np(g)) or g * 2)
        ((x * x).sum() + (3 * x).sum()).backward()  # x reaches the loss by two paths
        return [seen, _np(x.grad)]
    _both(run)


def test_non_leaf_hook_runs_before_retain_grad_and_changes_what_flows_on() -> None:
    def run(lib: Any) -> Any:
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        z = x * 3
        z.retain_grad()
        z.register_hook(lambda g: g + 1)
        z.register_hook(lambda g: g * 10)  # hooks chain in registration order
        (z * z).sum().backward()
        return [_np(z.grad), _np(x.grad)]
    _both(run)


def test_removed_hooks_do_not_run_and_handles_are_context_managers() -> None:
    def run(lib: Any) -> Any:
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        calls: list[str] = []
        h = x.register_hook(lambda g: calls.append("a"))
        with x.register_hook(lambda g: calls.append("b")):
            x.sum().backward()
        h.remove()
        h.remove()  # a second remove does nothing
        x.sum().backward()
        return [calls, _np(x.grad)]
    _both(run)


def test_hook_errors_are_pytorchs() -> None:
    for lib in LIBS:
        with pytest.raises(RuntimeError, match="cannot register a hook on a tensor that doesn't require gradient"):
            lib.ones(2).register_hook(lambda g: g)
        x = lib.ones(2, requires_grad=True)

        def grow(g: Any, lib: Any = lib) -> Any:
            return lib.ones(3)
        x.register_hook(grow)
        with pytest.raises(RuntimeError, match="hook 'grow' has changed the size of value"):
            (x * 2).sum().backward()
        y = lib.ones(2, requires_grad=True)
        y.register_hook(lambda g: 3)
        with pytest.raises(TypeError, match="expected Variable, but hook returned 'int'"):
            (y * 2).sum().backward()
        with pytest.raises(RuntimeError, match="post accumulate grad hooks cannot be registered on non-leaf tensors"):
            (x * 2).register_post_accumulate_grad_hook(lambda t: None)


def test_a_failed_backward_leaves_grads_as_they_were() -> None:
    x = lg.ones(2, requires_grad=True)
    w = lg.ones(2, requires_grad=True)
    x.register_hook(lambda g: lg.ones(3))
    with pytest.raises(RuntimeError):
        (x * w).sum().backward()
    assert x.grad is None and w.grad is None


def test_post_accumulate_grad_hook_sees_the_accumulated_grad() -> None:
    def run(lib: Any) -> Any:
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        seen: list[Any] = []
        x.register_post_accumulate_grad_hook(lambda t: seen.append(_np(t.grad)))
        (x * 2).sum().backward()
        (x * x).sum().backward()  # adds to the existing .grad
        return seen
    _both(run)


def test_optimizer_step_in_a_post_accumulate_hook() -> None:
    """PyTorch's optimizer-in-backward pattern: each parameter steps as soon as its grad is ready."""
    def run(lib: Any) -> Any:
        lib.manual_seed(0)
        w = lib.nn.Parameter(lib.tensor([[0.5, -0.25], [1.0, 2.0]]))
        opts = {w: lib.optim.SGD([w], lr=0.1)}

        def step(p: Any) -> None:
            opts[p].step()
            opts[p].zero_grad()
        w.register_post_accumulate_grad_hook(step)
        for _ in range(3):
            (w @ lib.tensor([1.0, -1.0])).pow(2).sum().backward()
        return [_np(w), w.grad is None]
    _both(run)


def test_hooks_apply_to_autograd_grad_and_create_graph() -> None:
    def run(lib: Any) -> Any:
        x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        x.register_hook(lambda g: g * 10)
        (g,) = lib.autograd.grad((x ** 3).sum(), x, create_graph=True)
        (gg,) = lib.autograd.grad(g.sum(), x)
        return [_np(g), _np(gg)]
    _both(run)


# ---- module hooks ---------------------------------------------------------------------------------

def _net(lib: Any) -> Any:
    torch.manual_seed(0)
    src = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2))
    net = lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.Tanh(), lib.nn.Linear(4, 2))
    net.load_state_dict({k: lib.tensor(v.detach().numpy()) for k, v in src.state_dict().items()})
    return net


X = [[1.0, 2.0, 3.0], [0.5, -1.0, 2.0]]


def test_forward_pre_hooks_and_forward_hooks_replace_args_and_outputs() -> None:
    def run(lib: Any) -> Any:
        net = _net(lib)
        log: list[Any] = []
        net[0].register_forward_pre_hook(lambda m, args: (args[0] * 2,))
        net[0].register_forward_pre_hook(lambda m, args: log.append(("first", _np(args[0]))), prepend=True)
        net[2].register_forward_hook(lambda m, args, out: out + 1)
        net[1].register_forward_hook(lambda m, args, kwargs, out: log.append(("kw", kwargs)), with_kwargs=True)
        net[1].register_forward_pre_hook(lambda m, args, kwargs: (args, kwargs), with_kwargs=True)
        out = net(lib.tensor(X))
        return [log, _np(out)]
    _both(run)


def test_forward_pre_hook_with_kwargs_must_return_a_pair() -> None:
    for lib in LIBS:
        m = lib.nn.Identity()
        m.register_forward_pre_hook(lambda m, a, k: 5, with_kwargs=True)
        with pytest.raises(RuntimeError, match="forward pre-hook must return None or a tuple of"):
            m(lib.ones(1))


def test_always_call_forward_hooks_run_when_forward_raises() -> None:
    def run(lib: Any) -> Any:
        class Bad(lib.nn.Module):
            def forward(self, x: Any) -> Any:
                raise ValueError("boom")
        m = Bad()
        log: list[Any] = []
        m.register_forward_hook(lambda m, a, o: log.append(("always", o)), always_call=True)
        m.register_forward_hook(lambda m, a, o: log.append(("plain", o)))
        with pytest.raises(ValueError, match="boom"):
            m(lib.ones(1))
        return log
    _both(run)


def test_full_backward_hooks_see_and_replace_boundary_gradients() -> None:
    def run(lib: Any) -> Any:
        net = _net(lib)
        log: list[Any] = []
        net[2].register_full_backward_pre_hook(lambda m, go: (go[0] * 3,))
        net[2].register_full_backward_hook(lambda m, gi, go: log.append(("bw2", [_np(g) for g in gi],
                                                                          [_np(g) for g in go])))
        net[0].register_full_backward_hook(lambda m, gi, go: (gi[0] * 0.5,))
        x = lib.tensor(X, requires_grad=True)
        net(x).sum().backward()
        return [log, _np(x.grad), _np(net[0].weight.grad)]
    _both(run)


def test_backward_hook_of_a_module_with_two_inputs_one_without_grad() -> None:
    def run(lib: Any) -> Any:
        class Mix(lib.nn.Module):
            def forward(self, a: Any, b: Any, scale: float) -> Any:
                return a * b * scale, a + b
        m = Mix()
        log: list[Any] = []
        m.register_full_backward_hook(lambda m, gi, go: log.append(([_np(g) for g in gi], [_np(g) for g in go])))
        a = lib.tensor([1.0, 2.0], requires_grad=True)
        b = lib.tensor([3.0, 4.0])
        p, s = m(a, b, 2.0)
        (p.sum() + 2 * s.sum()).backward()
        return [log, _np(a.grad)]
    _both(run)


def test_backward_hook_when_no_input_requires_grad_warns_and_runs() -> None:
    def run(lib: Any) -> Any:
        lin = _net(lib)[0]
        log: list[Any] = []
        lin.register_full_backward_hook(lambda m, gi, go: log.append((gi, [_np(g) for g in go])))
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            lin(lib.tensor(X)).sum().backward()
        return [log, any("no inputs require gradients" in str(x.message) for x in w)]
    _both(run)


def test_global_module_hooks_run_for_every_module_until_removed() -> None:
    def run(lib: Any) -> Any:
        net = _net(lib)
        log: list[str] = []
        mod = lib.nn.modules.module
        h1 = mod.register_module_forward_pre_hook(lambda m, a: log.append("pre " + type(m).__name__))
        h2 = mod.register_module_forward_hook(lambda m, a, o: log.append("post " + type(m).__name__))
        h3 = mod.register_module_full_backward_hook(lambda m, gi, go: log.append("bw " + type(m).__name__))
        net(lib.tensor(X, requires_grad=True)).sum().backward()
        for h in (h1, h2, h3):
            h.remove()
        net(lib.tensor(X)).sum()
        return log
    _both(run)


def test_state_dict_hooks() -> None:
    def run(lib: Any) -> Any:
        lin = _net(lib)[0]
        log: list[Any] = []
        lin.register_state_dict_pre_hook(lambda m, prefix, keep_vars: log.append(("pre", prefix, keep_vars)))
        lin.register_state_dict_post_hook(lambda m, sd, prefix, meta: log.append(("post", sorted(sd))))
        sd = lin.state_dict()

        def rename(m: Any, sd: Any, prefix: str, *rest: Any) -> None:
            if prefix + "w" in sd:
                sd[prefix + "weight"] = sd.pop(prefix + "w")
        lin.register_load_state_dict_pre_hook(rename)
        lin.register_load_state_dict_post_hook(lambda m, keys: log.append(("loaded", list(keys.missing_keys))))
        lin.load_state_dict({"w": sd["weight"] * 0, "bias": sd["bias"]})
        return [log, _np(lin.weight)]
    _both(run)


def test_registration_hooks() -> None:
    def run(lib: Any) -> Any:
        log: list[str] = []
        mod = lib.nn.modules.module
        hs = [mod.register_module_parameter_registration_hook(lambda m, n, p: log.append("param " + n)),
              mod.register_module_buffer_registration_hook(lambda m, n, b: log.append("buffer " + n)),
              mod.register_module_module_registration_hook(lambda m, n, s: log.append("module " + n))]
        lib.nn.Sequential(lib.nn.Linear(2, 2), lib.nn.BatchNorm1d(2))
        for h in hs:
            h.remove()
        lib.nn.Linear(2, 2)
        return log
    _both(run)


def test_a_module_without_hooks_calls_forward_directly() -> None:
    """The unhooked path costs one check: Module.__call__ must not build the hooked call's state."""
    lin = lg.nn.Linear(2, 2)
    assert not lin._has_hooks()
    h = lin.register_forward_hook(lambda m, a, o: None)
    assert lin._has_hooks()
    h.remove()
    assert not lin._has_hooks()


def test_hooks_make_a_compiled_step_run_eagerly() -> None:
    lin = lg.nn.Linear(3, 1)
    calls: list[int] = []
    lin.register_forward_hook(lambda m, a, o: calls.append(1))
    step = lg.compile(lambda x: lin(x).sum())
    with pytest.warns(UserWarning, match="runs eagerly"):
        step(lg.ones(2, 3))
    step(lg.ones(2, 3))
    assert len(calls) >= 2  # the hook ran on every call, not only while tracing


def test_in_place_ops_on_a_backward_hooked_modules_output_are_refused() -> None:
    for lib in LIBS:
        m = lib.nn.ReLU()
        m.register_full_backward_hook(lambda *a: None)
        y = m(lib.ones(2, requires_grad=True))
        with pytest.raises(RuntimeError, match="Output 0 of BackwardHookFunction is a view and is being modified"):
            y.add_(1)
        z = m(lib.ones(2, requires_grad=True)).clone()
        z.add_(1)  # a clone is the fix PyTorch's message gives
        z.sum().backward()
