"""Module hooks with PyTorch's semantics: forward pre-hooks and forward hooks (``with_kwargs``,
``always_call``), full backward pre-hooks and backward hooks, the global ``register_module_*`` family,
and state-dict hooks. Each registration returns a ``RemovableHandle``.

A module with no hooks pays one check per call (``Module.__call__``); the hooked path is
``HooksMixin._call_with_hooks``. Backward hooks see the gradients at the module's boundary through two
identity nodes with several outputs (function.MultiOutput): one over the tensors the module gets, one
over the tensors it returns, as PyTorch's BackwardHookFunction does.
"""

from __future__ import annotations

import warnings
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from .. import backend as B
from .._hooks import RemovableHandle, add_hook
from ..function import MultiOutput
from ..grad_mode import is_grad_enabled
from ..tensor import Tensor

# the global hooks (nn.modules.module.register_module_*): run for every module, before its own
_global_forward_pre_hooks: OrderedDict[int, Callable[..., Any]] = OrderedDict()
_global_forward_hooks: OrderedDict[int, Callable[..., Any]] = OrderedDict()
_global_forward_hooks_always_called: OrderedDict[int, bool] = OrderedDict()
_global_backward_pre_hooks: OrderedDict[int, Callable[..., Any]] = OrderedDict()
_global_backward_hooks: OrderedDict[int, Callable[..., Any]] = OrderedDict()
_global_buffer_registration_hooks: OrderedDict[int, Callable[..., Any]] = OrderedDict()
_global_module_registration_hooks: OrderedDict[int, Callable[..., Any]] = OrderedDict()
_global_parameter_registration_hooks: OrderedDict[int, Callable[..., Any]] = OrderedDict()

# whether any global forward/backward hook exists: Module.__call__ reads it on every call
_GLOBAL_ACTIVE = [False]

_HOOK_DICTS = ("_forward_pre_hooks", "_forward_pre_hooks_with_kwargs", "_forward_hooks",
               "_forward_hooks_with_kwargs", "_forward_hooks_always_called", "_backward_pre_hooks",
               "_backward_hooks", "_state_dict_pre_hooks", "_state_dict_hooks", "_load_state_dict_pre_hooks",
               "_load_state_dict_post_hooks")


class _GlobalHandle(RemovableHandle):
    """A handle of a global hook: removing it also updates the flag Module.__call__ reads."""

    __slots__ = ()

    def remove(self) -> None:
        super().remove()
        _refresh_global()


def _refresh_global() -> None:
    _GLOBAL_ACTIVE[0] = bool(_global_forward_pre_hooks or _global_forward_hooks or _global_backward_pre_hooks
                             or _global_backward_hooks)
    HooksMixin._hooks_on = _GLOBAL_ACTIVE[0]  # (every module without hooks of its own reads this)


def _add_global(registry: OrderedDict[int, Any], hook: Callable[..., Any],
                extra: tuple[OrderedDict[int, Any], ...] = ()) -> RemovableHandle:
    handle = _GlobalHandle(registry, extra_dict=list(extra) or None)
    registry[handle.id] = hook
    _refresh_global()
    return handle


def register_module_forward_pre_hook(hook: Callable[..., Any]) -> RemovableHandle:
    """Call ``hook(module, args)`` before every module's forward (before the module's own hooks)."""
    return _add_global(_global_forward_pre_hooks, hook)


def register_module_forward_hook(hook: Callable[..., Any], *, with_kwargs: bool = False,
                                 always_call: bool = False) -> RemovableHandle:
    """Call ``hook(module, args, output)`` after every module's forward."""
    if with_kwargs:  # (PyTorch's global forward hooks take no kwargs either)
        raise TypeError("register_module_forward_hook() got an unexpected keyword argument 'with_kwargs'")
    handle = _add_global(_global_forward_hooks, hook, (_global_forward_hooks_always_called,))
    if always_call:
        _global_forward_hooks_always_called[handle.id] = True
    return handle


def register_module_full_backward_pre_hook(hook: Callable[..., Any]) -> RemovableHandle:
    """Call ``hook(module, grad_output)`` for every module, when its outputs' gradients are known."""
    return _add_global(_global_backward_pre_hooks, hook)


def register_module_full_backward_hook(hook: Callable[..., Any]) -> RemovableHandle:
    """Call ``hook(module, grad_input, grad_output)`` for every module, when its inputs' gradients are known."""
    return _add_global(_global_backward_hooks, hook)


def register_module_backward_hook(hook: Callable[..., Any]) -> RemovableHandle:
    """PyTorch's deprecated non-full global backward hook: lightgrad runs it as a full one."""
    return register_module_full_backward_hook(hook)


def register_module_buffer_registration_hook(hook: Callable[..., Any]) -> RemovableHandle:
    """Call ``hook(module, name, buffer)`` whenever a buffer is registered; a Tensor it returns is registered."""
    return add_hook(_global_buffer_registration_hooks, hook)


def register_module_module_registration_hook(hook: Callable[..., Any]) -> RemovableHandle:
    """Call ``hook(module, name, submodule)`` whenever a submodule is registered."""
    return add_hook(_global_module_registration_hooks, hook)


def register_module_parameter_registration_hook(hook: Callable[..., Any]) -> RemovableHandle:
    """Call ``hook(module, name, param)`` whenever a parameter is registered."""
    return add_hook(_global_parameter_registration_hooks, hook)


_REGISTRATION = {"buffer": _global_buffer_registration_hooks, "module": _global_module_registration_hooks,
                 "parameter": _global_parameter_registration_hooks}


def registration_hooks(kind: str, module: Any, name: str, value: Any) -> Any:
    """Run the global registration hooks of ``kind`` ("buffer", "module", "parameter"): the value to register."""
    registry = _REGISTRATION[kind]
    if not registry:
        return value
    for hook in list(registry.values()):
        out = hook(module, name, value)
        if out is not None:
            value = out
    return value


# ---- backward hooks: identities at the module's boundary ------------------------------------------

def _tensor_positions(values: tuple[Any, ...]) -> list[int]:
    return [i for i, v in enumerate(values) if isinstance(v, Tensor)]


def _as_tensor_grad(g: Any) -> Any:
    return g if g is None or isinstance(g, Tensor) else Tensor._make(g)


def _as_engine_grad(g: Any, like: Any) -> Any:
    """A gradient a hook returned, back in the form the engine passes (an array, or a Tensor)."""
    if g is None or isinstance(like, Tensor):
        return g
    return g._data if isinstance(g, Tensor) else g


_INPLACE = ("Output {} of BackwardHookFunction is a view and is being modified inplace. This view was created "
            "inside a custom Function (or because an input was returned as-is) and the autograd logic to handle "
            "view+inplace would override the custom backward associated with the custom Function, leading to "
            "incorrect gradients. This behavior is forbidden. You can fix this by cloning the output of the custom "
            "Function.")


class _BoundaryIdentity(MultiOutput):
    """The identity over a module's input (``side`` "input") or output tensors, calling the
    module's backward hooks when the gradients pass."""

    hook: _BackwardHook
    side: str

    def forward(self) -> None:  # pragma: no cover - made by record(), never applied
        raise NotImplementedError

    def backward_all(self, grads: list[Any]) -> tuple[Any, ...]:
        bw = self.hook
        if self.side == "output":
            return tuple(_as_engine_grad(g, grads[i]) for i, g in enumerate(bw.output_passed(grads)))
        # (an input whose gradient did not arrive still sends none on)
        return tuple(None if grads[i] is None else _as_engine_grad(g, grads[i])
                     for i, g in enumerate(bw.input_passed(grads)))

    def name(self) -> str:
        return "BackwardHookFunctionBackward"


class _BackwardHook:
    """One forward's backward hooks (PyTorch's torch.utils.hooks.BackwardHook, in its semantics)."""

    def __init__(self, module: Any, hooks: list[Callable[..., Any]], pre_hooks: list[Callable[..., Any]]) -> None:
        self.module, self.hooks, self.pre_hooks = module, hooks, pre_hooks
        self.grad_outputs: tuple[Any, ...] | None = None
        self.n_inputs = 0
        self.input_index: list[int] | None = None
        self.inputs: tuple[Any, ...] = ()
        self.n_outputs = 0
        self.output_index: list[int] = []

    def _wrap(self, values: tuple[Any, ...], side: str) -> tuple[Any, ...] | None:
        """``values`` with its tensors replaced by the identity's outputs (None: nothing to wrap)."""
        index = _tensor_positions(values)
        tensors = tuple(values[i] for i in index)
        if not is_grad_enabled() or not any(t.requires_grad for t in tensors):
            return None
        node = _BoundaryIdentity()
        node.hook, node.side = self, side
        outs = node.record(tensors, [t._arr for t in tensors], [t.requires_grad for t in tensors])
        for k, t in enumerate(outs):  # (in-place ops on them would bypass the hooks: PyTorch refuses them)
            if t._grad_fn is not None:
                t._grad_fn.forbids_inplace = _INPLACE.format(k)
        new = list(values)
        for i, t in zip(index, outs):
            new[i] = t
        if side == "input":
            self.input_index, self.inputs = index, tensors
        else:
            self.output_index = index
        return tuple(new)

    def setup_input(self, args: tuple[Any, ...]) -> tuple[Any, ...]:
        self.n_inputs = len(args)
        wrapped = self._wrap(args, "input")
        return args if wrapped is None else wrapped

    def setup_output(self, result: Any) -> Any:
        single = not isinstance(result, tuple)
        values = (result,) if single else result
        self.n_outputs = len(values)
        wrapped = self._wrap(values, "output")
        if wrapped is None:
            return result
        return wrapped[0] if single else wrapped

    def _pack(self, index: list[int], grads: list[Any], n: int) -> tuple[Any, ...]:
        out: list[Any] = [None] * n
        for i, g in zip(index, grads):
            out[i] = _as_tensor_grad(g)
        return tuple(out)

    def output_passed(self, grads: list[Any]) -> list[Any]:
        """The gradients of the module's outputs arrived: the pre-hooks may replace them."""
        self.grad_outputs = self._pack(self.output_index, grads, self.n_outputs)
        for hook in self.pre_hooks:
            out = hook(self.module, self.grad_outputs)
            if out is None:
                continue
            out = out if isinstance(out, tuple) else (out,)
            if len(out) != len(self.grad_outputs):
                raise RuntimeError(f"Backward pre hook returned an invalid number of grad_output, got "
                                   f"{len(out)}, but expected {len(self.grad_outputs)}")
            self.grad_outputs = out
        local = self.grad_outputs
        if self.input_index is None:  # no input requires grad: the hooks run now, with no grad_input
            if self.hooks:
                warnings.warn("Full backward hook is firing when gradients are computed with respect to module "
                              "outputs since no inputs require gradients. See https://docs.pytorch.org/docs/main/"
                              "generated/torch.nn.Module.html#torch.nn.Module.register_full_backward_hook for more "
                              "details.", stacklevel=2)
            grad_inputs = (None,) * self.n_inputs
            for hook in self.hooks:
                res = hook(self.module, grad_inputs, self.grad_outputs)
                if res is not None and not (isinstance(res, tuple) and all(r is None for r in res)):
                    raise RuntimeError("Backward hook for Modules where no input requires gradient should always "
                                       "return None or None for all gradients.")
            self.grad_outputs = None
        return [local[i] for i in self.output_index]

    def input_passed(self, grads: list[Any]) -> list[Any]:
        """The gradients of the module's inputs arrived: the hooks may replace them."""
        assert self.input_index is not None  # (this side exists only when some input requires grad)
        # an input that got no gradient (or needs none) shows zeros, as PyTorch materializes them
        grads = [B.zeros(p._arr.shape, p._arr.dtype) if g is None else g for g, p in zip(grads, self.inputs)]
        res = self._pack(self.input_index, grads, self.n_inputs)
        if self.grad_outputs is None:  # the gradient reached the inputs without passing the outputs
            return list(grads)
        for hook in self.hooks:
            out = hook(self.module, res, self.grad_outputs)
            if out is None:
                continue
            out = out if isinstance(out, tuple) else (out,)
            if len(out) != len(res):
                raise RuntimeError(f"Backward hook returned an invalid number of grad_input, got {len(out)}, but "
                                   f"expected {len(res)}")
            res = out
        self.grad_outputs = None
        return [res[i] for i in self.input_index]


# ---- the Module side ------------------------------------------------------------------------------

class HooksMixin:
    """Module's hook registration and its hooked call path."""

    # whether a call may run hooks: True on a module with hooks of its own (its instance attribute,
    # set by register_*), else this class attribute, True while any global hook exists
    _hooks_on = False
    _forward_pre_hooks: OrderedDict[int, Callable[..., Any]]
    _forward_pre_hooks_with_kwargs: OrderedDict[int, bool]
    _forward_hooks: OrderedDict[int, Callable[..., Any]]
    _forward_hooks_with_kwargs: OrderedDict[int, bool]
    _forward_hooks_always_called: OrderedDict[int, bool]
    _backward_pre_hooks: OrderedDict[int, Callable[..., Any]]
    _backward_hooks: OrderedDict[int, Callable[..., Any]]
    _state_dict_pre_hooks: OrderedDict[int, Callable[..., Any]]
    _state_dict_hooks: OrderedDict[int, Callable[..., Any]]
    _load_state_dict_pre_hooks: OrderedDict[int, Callable[..., Any]]
    _load_state_dict_post_hooks: OrderedDict[int, Callable[..., Any]]
    forward: Callable[..., Any]

    def _init_hooks(self) -> None:
        d = self.__dict__  # type: ignore[attr-defined]
        for name in _HOOK_DICTS:
            d[name] = OrderedDict()

    def register_forward_pre_hook(self, hook: Callable[..., Any], *, prepend: bool = False,
                                  with_kwargs: bool = False) -> RemovableHandle:
        """Call ``hook(module, args)`` (``hook(module, args, kwargs)`` with_kwargs) before forward; what it
        returns (not None) replaces the arguments."""
        handle = add_hook(self._forward_pre_hooks, hook, prepend, (self._forward_pre_hooks_with_kwargs,))
        self.__dict__["_hooks_on"] = True  # type: ignore[attr-defined]  # Module.__call__ takes the hooked path
        if with_kwargs:
            self._forward_pre_hooks_with_kwargs[handle.id] = True
        return handle

    def register_forward_hook(self, hook: Callable[..., Any], *, prepend: bool = False, with_kwargs: bool = False,
                              always_call: bool = False) -> RemovableHandle:
        """Call ``hook(module, args, output)`` (``hook(module, args, kwargs, output)`` with_kwargs) after
        forward; what it returns (not None) replaces the output.

        >>> h = model.fc.register_forward_hook(lambda m, args, out: feats.append(out))
        """
        handle = add_hook(self._forward_hooks, hook, prepend,
                          (self._forward_hooks_with_kwargs, self._forward_hooks_always_called))
        self.__dict__["_hooks_on"] = True  # type: ignore[attr-defined]
        if with_kwargs:
            self._forward_hooks_with_kwargs[handle.id] = True
        if always_call:
            self._forward_hooks_always_called[handle.id] = True
        return handle

    def register_full_backward_pre_hook(self, hook: Callable[..., Any], prepend: bool = False) -> RemovableHandle:
        """Call ``hook(module, grad_output)`` when the gradients of the module's outputs are known; a tuple
        it returns replaces them."""
        return add_hook(self._backward_pre_hooks, hook, prepend)

    def register_full_backward_hook(self, hook: Callable[..., Any], prepend: bool = False) -> RemovableHandle:
        """Call ``hook(module, grad_input, grad_output)`` when the gradients of the module's inputs are
        known; a tuple it returns replaces grad_input."""
        self.__dict__["_hooks_on"] = True  # type: ignore[attr-defined]
        return add_hook(self._backward_hooks, hook, prepend)

    def register_backward_hook(self, hook: Callable[..., Any]) -> RemovableHandle:
        """PyTorch's deprecated non-full backward hook: lightgrad runs it as a full backward hook."""
        return self.register_full_backward_hook(hook)

    def register_state_dict_pre_hook(self, hook: Callable[..., Any]) -> RemovableHandle:
        """Call ``hook(module, prefix, keep_vars)`` before ``state_dict`` collects this module's entries."""
        return add_hook(self._state_dict_pre_hooks, hook)

    def register_state_dict_post_hook(self, hook: Callable[..., Any]) -> RemovableHandle:
        """Call ``hook(module, state_dict, prefix, local_metadata)`` once this module's entries are in."""
        return add_hook(self._state_dict_hooks, hook)

    def _register_state_dict_hook(self, hook: Callable[..., Any]) -> RemovableHandle:
        return self.register_state_dict_post_hook(hook)

    def register_load_state_dict_pre_hook(self, hook: Callable[..., Any]) -> RemovableHandle:
        """Call ``hook(module, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
        error_msgs)`` before loading; it may edit ``state_dict`` (rename keys, say)."""
        return add_hook(self._load_state_dict_pre_hooks, hook)

    def _register_load_state_dict_pre_hook(self, hook: Callable[..., Any], with_module: bool = False) -> RemovableHandle:
        if with_module:
            return self.register_load_state_dict_pre_hook(hook)
        return self.register_load_state_dict_pre_hook(lambda m, *a: hook(*a))

    def register_load_state_dict_post_hook(self, hook: Callable[..., Any]) -> RemovableHandle:
        """Call ``hook(module, incompatible_keys)`` after ``load_state_dict`` loaded this module."""
        return add_hook(self._load_state_dict_post_hooks, hook)

    def _has_hooks(self) -> bool:
        """Whether a call of this module runs hooks (its own or global ones); clears the flag
        Module.__call__ reads when its own are gone. A hook put into a registry directly, past the
        register_* methods, runs once the flag is set: call ``_hooks_changed()`` after such an edit."""
        d = self.__dict__  # type: ignore[attr-defined]
        own = bool(d.get("_forward_pre_hooks") or d.get("_forward_hooks") or d.get("_backward_pre_hooks")
                   or d.get("_backward_hooks"))
        if own:
            d["_hooks_on"] = True
        else:
            d.pop("_hooks_on", None)  # (the class's flag applies again: True while global hooks exist)
        return own or _GLOBAL_ACTIVE[0]

    def _hooks_changed(self) -> None:
        self._has_hooks()

    def _call_with_hooks(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """Module.__call__ when any hook applies (PyTorch's _call_impl, in its order)."""
        if not self._has_hooks():  # (the last hook was removed since the flag was set)
            return self.forward(*args, **kwargs)
        d = self.__dict__  # type: ignore[attr-defined]
        empty: OrderedDict[int, Any] = OrderedDict()
        pre = d.get("_forward_pre_hooks", empty)
        pre_kw = d.get("_forward_pre_hooks_with_kwargs", empty)
        post = d.get("_forward_hooks", empty)
        post_kw = d.get("_forward_hooks_with_kwargs", empty)
        always = d.get("_forward_hooks_always_called", empty)
        bw_pre = [*_global_backward_pre_hooks.values(), *d.get("_backward_pre_hooks", empty).values()]
        bw = [*_global_backward_hooks.values(), *d.get("_backward_hooks", empty).values()]
        called: set[int] = set()
        try:
            for hid, hook in (*_global_forward_pre_hooks.items(), *pre.items()):
                if hid in pre_kw:
                    res = hook(self, args, kwargs)
                    if res is not None:
                        if not (isinstance(res, tuple) and len(res) == 2):
                            raise RuntimeError("forward pre-hook must return None or a tuple of (new_args, "
                                               f"new_kwargs), but got {res}.")
                        args, kwargs = res
                else:
                    res = hook(self, args)
                    if res is not None:
                        args = res if isinstance(res, tuple) else (res,)
            bw_hook = None
            if bw or bw_pre:
                bw_hook = _BackwardHook(self, bw, bw_pre)
                args = bw_hook.setup_input(args)
            result = self.forward(*args, **kwargs)
            for hid, hook in (*_global_forward_hooks.items(), *post.items()):
                called.add(hid)
                res = hook(self, args, kwargs, result) if hid in post_kw else hook(self, args, result)
                if res is not None:
                    result = res
            if bw_hook is not None:
                result = bw_hook.setup_output(result)
            return result
        except Exception:
            # forward hooks registered with always_call run even when forward (or a hook) raised
            for hid, hook in (*_global_forward_hooks.items(), *post.items()):
                if hid not in called and (hid in always or hid in _global_forward_hooks_always_called):
                    try:
                        hook(self, args, kwargs, None) if hid in post_kw else hook(self, args, None)
                    except Exception as e:  # noqa: BLE001 - reported, the original error propagates
                        warnings.warn("forward hook with ``always_call=True`` raised an exception that was "
                                      f"silenced as another error was raised in forward: {e}", stacklevel=2)
            raise
