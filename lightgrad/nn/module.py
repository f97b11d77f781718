"""Module: the base of every layer, with PyTorch's registration, traversal and state-dict rules.

Parameters, buffers and submodules assigned as attributes land in three ordered registries
(``_parameters``, ``_buffers``, ``_modules``), filled by ``__setattr__``. One generator,
``_named_members``, walks the module tree; every ``named_*``/``parameters``/``buffers`` method is
built on it.
"""

from __future__ import annotations

from collections import OrderedDict, namedtuple
from collections.abc import Callable, Iterator, Mapping
from typing import Any, TypeVar

from .. import backend as B
from .. import dtypes as D
from ..device import device as _device
from ..grad_mode import no_grad
from ..tensor import Size, Tensor
from .hooks import _HOOK_DICTS, HooksMixin, registration_hooks
from .hooks import (register_module_backward_hook, register_module_buffer_registration_hook,  # noqa: F401
                    register_module_forward_hook, register_module_forward_pre_hook,
                    register_module_full_backward_hook, register_module_full_backward_pre_hook,
                    register_module_module_registration_hook, register_module_parameter_registration_hook)
from .parameter import Buffer, Parameter, is_lazy

T = TypeVar("T", bound="Module")


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    """What ``load_state_dict(strict=False)`` returns: missing and unexpected keys."""

    def __repr__(self) -> str:
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


def _typename(v: Any) -> str:
    """PyTorch's ``torch.typename``: 'torch.FloatTensor' for tensors, the qualified class name else."""
    if isinstance(v, Tensor):
        return v.type()
    module = type(v).__module__
    return type(v).__qualname__ if module in ("", "builtins") else f"{module}.{type(v).__qualname__}"


def _addindent(s: str, n: int) -> str:
    lines = s.split("\n")
    if len(lines) == 1:
        return s
    return lines[0] + "\n" + "\n".join(" " * n + line for line in lines[1:])


def _as_array(value: Any) -> B.ndarray | None:
    """The array behind a state-dict value (lightgrad Tensor, NumPy array, or anything with
    ``__array__``), or None when it is not tensor-like."""
    if isinstance(value, Tensor):
        return value._data
    if isinstance(value, B.ndarray):
        return value
    if hasattr(value, "__array__") and hasattr(value, "shape"):
        if hasattr(value, "detach"):  # a tensor of another framework that may require grad
            value = value.detach()
        return B.asarray(value)
    return None


def _shape_str(shape: tuple[int, ...]) -> str:
    return str(tuple(int(s) for s in shape))


class Module(HooksMixin):
    """Base class of all layers: subclass it, assign layers and Parameters in ``__init__``, and
    write ``forward``.

    >>> class Net(nn.Module):
    ...     def __init__(self): super().__init__(); self.fc = nn.Linear(4, 2)
    ...     def forward(self, x): return self.fc(x).relu()
    """

    training: bool
    _parameters: dict[str, Parameter | None]
    _buffers: dict[str, Tensor | None]
    _modules: dict[str, Module | None]
    _non_persistent_buffers_set: set[str]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if args or kwargs:
            raise TypeError(f"{type(self).__name__}.__init__() got unexpected arguments: "
                            f"{args or ''}{kwargs or ''}")
        set_ = object.__setattr__
        set_(self, "training", True)
        set_(self, "_parameters", OrderedDict())
        set_(self, "_buffers", OrderedDict())
        set_(self, "_non_persistent_buffers_set", set())
        set_(self, "_modules", OrderedDict())
        self._init_hooks()

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        """The computation the layer performs: every subclass defines it (call the module, not forward)."""
        raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required "forward" function')

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        # one attribute read for every registry, global ones included (HooksMixin._hooks_on): this
        # check runs for every layer call
        if self._hooks_on:
            return self._call_with_hooks(args, kwargs)
        return self.forward(*args, **kwargs)

    # ---- registration --------------------------------------------------------------------------
    def _check_name(self, name: Any, kind: str, registry: dict[str, Any]) -> None:
        if "_parameters" not in self.__dict__:
            raise AttributeError(f"cannot assign {kind} before Module.__init__() call")
        if not isinstance(name, str):
            raise TypeError(f"{kind} name should be a string. Got {type(name).__name__}")
        if "." in name:
            raise KeyError(f'{kind} name can\'t contain ".", got: {name}')
        if name == "":
            raise KeyError(f'{kind} name can\'t be empty string ""')
        if hasattr(self, name) and name not in registry:
            raise KeyError(f"attribute '{name}' already exists")

    def register_buffer(self, name: str, tensor: Tensor | None, persistent: bool = True) -> None:
        """Register a tensor that is state but not a parameter (e.g. BatchNorm's running mean)."""
        self._check_name(name, "buffer", self._buffers)
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign '{_typename(tensor)}' object to buffer '{name}' "
                            "(torch Tensor or None required)")
        if isinstance(tensor, Buffer):
            persistent = tensor.persistent
            tensor = tensor.detach()
        tensor = registration_hooks("buffer", self, name, tensor)
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def register_parameter(self, name: str, param: Parameter | None) -> None:
        """Register a Parameter (or None, a declared but absent parameter) under ``name``."""
        self._check_name(name, "parameter", self._parameters)
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{_typename(param)}' object to parameter '{name}' "
                            "(torch.nn.Parameter or None required)")
        if param is not None and param.grad_fn is not None:
            raise ValueError(f"Cannot assign non-leaf Tensor to parameter '{name}'. Model parameters must be "
                             f"created explicitly. To express '{name}' as a function of another Tensor, "
                             "compute the value in the forward() method.")
        self._parameters[name] = registration_hooks("parameter", self, name, param)

    def add_module(self, name: str, module: Module | None) -> None:
        """Register a submodule under ``name``; same as assigning ``self.name = module``."""
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{_typename(module)} is not a Module subclass")
        self._check_name(name, "module", self._modules)
        self._modules[name] = registration_hooks("module", self, name, module)

    register_module = add_module

    def get_submodule(self, target: str) -> Module:
        """The submodule at a dotted path: ``model.get_submodule('encoder.0')``."""
        if target == "":
            return self
        mod: Module = self
        for item in target.split("."):
            if not hasattr(mod, item):
                raise AttributeError(f"{mod._get_name()} has no attribute `{item}`")
            mod = getattr(mod, item)
            if not isinstance(mod, Module):
                raise AttributeError(f"`{item}` is not an nn.Module")
        return mod

    def get_parameter(self, target: str) -> Parameter:
        """The parameter at a dotted path: ``model.get_parameter('fc.weight')``."""
        module_path, _, name = target.rpartition(".")
        mod = self.get_submodule(module_path)
        if not hasattr(mod, name):
            raise AttributeError(f"{mod._get_name()} has no attribute `{name}`")
        param = getattr(mod, name)
        if not isinstance(param, Parameter):
            raise AttributeError(f"`{name}` is not an nn.Parameter")
        return param

    def get_buffer(self, target: str) -> Tensor:
        """The buffer at a dotted path: ``model.get_buffer('bn.running_mean')``."""
        module_path, _, name = target.rpartition(".")
        mod = self.get_submodule(module_path)
        if name not in mod._buffers:
            raise AttributeError(f"`{name}` is not a buffer")
        return mod._buffers[name]  # type: ignore[return-value]

    # ---- attribute protocol --------------------------------------------------------------------
    def __getattr__(self, name: str) -> Any:
        # only reached when normal lookup fails: registered items live in the registries
        d = self.__dict__
        for reg in ("_parameters", "_buffers", "_modules"):
            r = d.get(reg)
            if r is not None and name in r:
                return r[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __setattr__(self, name: str, value: Any) -> None:
        d = self.__dict__
        params = d.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            self._forget(name, keep="_parameters")
            self.register_parameter(name, value)
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{_typename(value)}' as parameter '{name}' "
                                "(torch.nn.Parameter or None expected)")
            params[name] = None
        elif isinstance(value, Module):
            if params is None:
                raise AttributeError("cannot assign module before Module.__init__() call")
            self._forget(name, keep="_modules")
            self._modules[name] = registration_hooks("module", self, name, value)
        elif d.get("_modules") is not None and name in d["_modules"]:
            if value is not None:
                raise TypeError(f"cannot assign '{_typename(value)}' as child module '{name}' "
                                "(torch.nn.Module or None expected)")
            d["_modules"][name] = None
        elif isinstance(value, Buffer):
            if params is None:
                raise AttributeError("cannot assign buffer before Module.__init__() call")
            self._forget(name, keep="_buffers")
            self.register_buffer(name, value)
        elif d.get("_buffers") is not None and name in d["_buffers"]:
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"cannot assign '{_typename(value)}' as buffer '{name}' "
                                "(torch.Tensor or None expected)")
            d["_buffers"][name] = value
        else:
            object.__setattr__(self, name, value)

    def _forget(self, name: str, keep: str) -> None:
        """Remove ``name`` from every place an attribute can live except the registry ``keep``,
        where re-registering it keeps its position (as in PyTorch)."""
        d = self.__dict__
        d.pop(name, None)
        for reg in ("_parameters", "_buffers", "_modules"):
            if reg != keep:
                d[reg].pop(name, None)
        if keep != "_buffers":
            d["_non_persistent_buffers_set"].discard(name)

    def __delattr__(self, name: str) -> None:
        d = self.__dict__
        if name in d.get("_parameters", ()):
            del d["_parameters"][name]
        elif name in d.get("_buffers", ()):
            del d["_buffers"][name]
            d["_non_persistent_buffers_set"].discard(name)
        elif name in d.get("_modules", ()):
            del d["_modules"][name]
        else:
            object.__delattr__(self, name)

    def __dir__(self) -> list[str]:
        keys = list(super().__dir__())
        keys += list(self._parameters) + list(self._buffers) + list(self._modules)
        return sorted(k for k in set(keys) if not k[0].isdigit())

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.__dict__.setdefault("_non_persistent_buffers_set", set())
        for name in _HOOK_DICTS:  # (a module pickled before hooks existed)
            self.__dict__.setdefault(name, OrderedDict())

    # ---- traversal -----------------------------------------------------------------------------
    def _named_members(self, get_members: Callable[[Module], Any], prefix: str = "", recurse: bool = True,
                       remove_duplicate: bool = True) -> Iterator[tuple[str, Any]]:
        """The one walk over the tree: (dotted name, member) for each module's members."""
        memo: set[int] = set()
        modules = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) if recurse \
            else [(prefix, self)]
        for module_prefix, module in modules:
            for k, v in get_members(module):
                if v is None or id(v) in memo:
                    continue
                if remove_duplicate:
                    memo.add(id(v))
                yield (module_prefix + "." + k if module_prefix else k), v

    def named_modules(self, memo: set[int] | None = None, prefix: str = "",
                      remove_duplicate: bool = True) -> Iterator[tuple[str, Module]]:
        """Every module in the tree, self first, with dotted names: ``('', net), ('fc', fc), ...``."""
        if memo is None:
            memo = set()
        if id(self) in memo:
            return
        if remove_duplicate:
            memo.add(id(self))
        yield prefix, self
        for name, module in self._modules.items():
            if module is None:
                continue
            sub = prefix + ("." if prefix else "") + name
            yield from module.named_modules(memo, sub, remove_duplicate)

    def modules(self) -> Iterator[Module]:
        """Iterate over this module and all its submodules, each once."""
        for _, m in self.named_modules():
            yield m

    def named_children(self) -> Iterator[tuple[str, Module]]:
        """Direct submodules with their names (each module once)."""
        memo: set[int] = set()
        for name, module in self._modules.items():
            if module is not None and id(module) not in memo:
                memo.add(id(module))
                yield name, module

    def children(self) -> Iterator[Module]:
        """Iterate over the direct submodules."""
        for _, m in self.named_children():
            yield m

    def named_parameters(self, prefix: str = "", recurse: bool = True,
                         remove_duplicate: bool = True) -> Iterator[tuple[str, Parameter]]:
        """``('fc.weight', Parameter), ...`` in registration order; shared parameters once."""
        return self._named_members(lambda m: m._parameters.items(), prefix, recurse, remove_duplicate)

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        """All parameters of the tree (what an optimizer takes): ``SGD(model.parameters(), 0.1)``."""
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix: str = "", recurse: bool = True,
                      remove_duplicate: bool = True) -> Iterator[tuple[str, Tensor]]:
        """Iterate over (dotted name, buffer) pairs, of submodules too when ``recurse``."""
        return self._named_members(lambda m: m._buffers.items(), prefix, recurse, remove_duplicate)

    def buffers(self, recurse: bool = True) -> Iterator[Tensor]:
        """Iterate over the buffers, of submodules too when ``recurse``."""
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    # ---- state dict ----------------------------------------------------------------------------
    def _state_items(self) -> Iterator[tuple[str, Tensor]]:
        """This module's own entries of its state dict: parameters, then persistent buffers."""
        for name, p in self._parameters.items():
            if p is not None:
                yield name, p
        for name, b in self._buffers.items():
            if b is not None and name not in self._non_persistent_buffers_set:
                yield name, b

    def _save_to_state_dict(self, destination: dict[str, Any], prefix: str, keep_vars: bool) -> None:
        for name, t in self._state_items():
            destination[prefix + name] = t if keep_vars else t.detach()

    def state_dict(self, *args: Any, destination: Any = None, prefix: str = "",
                   keep_vars: bool = False) -> dict[str, Any]:
        """Parameters and persistent buffers by dotted name, as detached tensors sharing storage.

        >>> nn.Linear(2, 1).state_dict().keys()
        odict_keys(['weight', 'bias'])
        """
        if args:  # PyTorch's deprecated positional form: state_dict(destination, prefix, keep_vars)
            destination = args[0]
            prefix = args[1] if len(args) > 1 else prefix
            keep_vars = args[2] if len(args) > 2 else keep_vars
        if destination is None:
            destination = OrderedDict()
        for hook in list(self.__dict__.get("_state_dict_pre_hooks", {}).values()):
            hook(self, prefix, keep_vars)
        self._save_to_state_dict(destination, prefix, keep_vars)
        for name, module in self._modules.items():
            if module is not None:
                module.state_dict(destination=destination, prefix=prefix + name + ".", keep_vars=keep_vars)
        for hook in list(self.__dict__.get("_state_dict_hooks", {}).values()):
            out = hook(self, destination, prefix, {"version": 1})
            if out is not None:
                destination = out
        return destination

    def load_state_dict(self, state_dict: Mapping[str, Any], strict: bool = True,
                        assign: bool = False) -> _IncompatibleKeys:
        """Copy values from ``state_dict`` into this tree's parameters and buffers, in place.

        Every key is checked first (missing, unexpected, shape, a value that is not numbers); any
        problem raises one RuntimeError listing all of them and nothing is modified (lazy placeholders
        included: they take their loaded shapes only once every check has passed).

        >>> net.load_state_dict(other.state_dict())
        <All keys matched successfully>
        """
        if not isinstance(state_dict, Mapping):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        hooked = [(p, m) for p, m in self.named_modules(remove_duplicate=False) if m.__dict__.get("_load_state_dict_pre_hooks")]
        if hooked:  # they may edit the state dict (rename keys): a copy, as in PyTorch
            state_dict = OrderedDict(state_dict)
            for mprefix, module in hooked:
                for hook in list(module._load_state_dict_pre_hooks.values()):
                    hook(module, state_dict, mprefix + "." if mprefix else "", {"version": 1}, strict, [], [], [])
        targets = self._load_targets()
        missing = [k for k in targets if k not in state_dict]
        unexpected = [k for k in state_dict if k not in targets]
        errors: list[str] = []
        sources: dict[str, B.ndarray] = {}
        for key, (_, _, t) in targets.items():
            if key not in state_dict:
                continue
            value = state_dict[key]
            arr = _as_array(value)
            if arr is None:
                errors.append(f'While copying the parameter named "{key}", expected torch.Tensor or Tensor-like '
                              f"object from checkpoint but received {type(value)}")
                continue
            # a lazy module's placeholder takes the loaded shape (its _lazy_load_hook, run below)
            takes_shape = is_lazy(t) and not is_lazy(value) and tuple(arr.shape) != (0,)
            if arr.shape != t._data.shape and not takes_shape:
                errors.append(f"size mismatch for {key}: copying a param with shape {_shape_str(arr.shape)} from "
                              f"checkpoint, the shape in current model is {_shape_str(t._data.shape)}.")
                continue
            if arr.dtype.kind not in "biufc":  # (a copy would fail half way, or parse strings as numbers)
                model_size = Size(arr.shape if takes_shape else t._data.shape)
                errors.append(f'While copying the parameter named "{key}", whose dimensions in the model are '
                              f"{model_size!r} and whose dimensions in the checkpoint are {Size(arr.shape)!r}, an "
                              f"exception occurred : ('expected a tensor of numbers, but got dtype {arr.dtype}',).")
                continue
            sources[key] = arr
        if strict:
            if unexpected:
                errors.insert(0, "Unexpected key(s) in state_dict: {}. ".format(", ".join(f'"{k}"' for k in unexpected)))
            if missing:
                errors.insert(0, "Missing key(s) in state_dict: {}. ".format(", ".join(f'"{k}"' for k in missing)))
        if errors:
            raise RuntimeError("Error(s) in loading state_dict for {}:\n\t{}".format(
                type(self).__name__, "\n\t".join(errors)))
        # everything is checked: only now do placeholders take their shapes, and values get copied
        lazy = False
        for mprefix, module in self.named_modules(remove_duplicate=False):
            lazy_hook = getattr(module, "_lazy_load_hook", None)
            if lazy_hook is not None:
                lazy_hook(state_dict, mprefix + "." if mprefix else "")
                lazy = True
        if lazy:
            targets = self._load_targets()
        with no_grad():
            for key, arr in sources.items():
                module, name, t = targets[key]
                if assign:
                    new = Tensor._make(B.array(arr, dtype=t._data.dtype, copy=True))
                    if isinstance(t, Parameter):
                        module._parameters[name] = Parameter(new, t.requires_grad)
                    else:
                        module._buffers[name] = new
                elif t._data.flags.writeable:
                    # in place, so parameter identity and any optimizer flat buffers stay valid
                    B.copyto(t._data, arr, casting="unsafe")
                    t._version[0] += 1
                else:
                    t._data = B.array(arr, dtype=t._data.dtype, copy=True)
        result = _IncompatibleKeys(missing, unexpected)
        for _, module in self.named_modules(remove_duplicate=False):
            for hook in list(module.__dict__.get("_load_state_dict_post_hooks", {}).values()):
                hook(module, result)
        return result

    def _load_targets(self) -> dict[str, tuple[Module, str, Tensor]]:
        """Every state-dict entry of the tree by dotted key: (its module, its name there, the tensor)."""
        targets: dict[str, tuple[Module, str, Tensor]] = {}
        for mprefix, module in self.named_modules(remove_duplicate=False):
            for name, t in module._state_items():
                targets[(mprefix + "." if mprefix else "") + name] = (module, name, t)
        return targets

    # ---- modes and gradients -------------------------------------------------------------------
    def train(self: T, mode: bool = True) -> T:
        """Set training mode on this module and all submodules; returns self."""
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        for m in self.modules():
            object.__setattr__(m, "training", mode)
        return self

    def eval(self: T) -> T:
        """Evaluation mode (``train(False)``): dropout off, BatchNorm uses running statistics."""
        return self.train(False)

    def requires_grad_(self: T, requires_grad: bool = True) -> T:
        """Set ``requires_grad`` on every parameter; returns self."""
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset every parameter's gradient (to None by default, as in PyTorch)."""
        for p in self.parameters():
            if p.grad is None:
                continue
            if set_to_none:
                p.grad = None
            else:
                p.grad._grad_fn = None
                p.grad.requires_grad = False
                p.grad._data[...] = 0

    def apply(self: T, fn: Callable[[Module], None]) -> T:
        """Call ``fn`` on every submodule (children first) and then on self: ``net.apply(init_fn)``."""
        for m in self.children():
            m.apply(fn)
        fn(self)
        return self

    # ---- conversion ----------------------------------------------------------------------------
    def _apply(self: T, fn: Callable[[Tensor], Tensor]) -> T:
        """Convert every parameter, gradient and buffer with ``fn``, keeping Parameter objects."""
        for m in self.modules():
            with no_grad():
                for p in m._parameters.values():
                    if p is None:
                        continue
                    new = fn(p)
                    if new._data is not p._data:
                        if new._data.dtype != p._data.dtype or new._data.shape != p._data.shape:
                            p.__dict__.pop("_grad_buf", None)  # a gradient home of the old dtype
                        p._data = new._data
                    if p.grad is not None:
                        g = fn(p.grad)
                        if g._data is not p.grad._data:
                            p.grad = Tensor._make(g._data)
                for name, b in m._buffers.items():
                    if b is not None:
                        m._buffers[name] = fn(b)
        return self

    def to(self: T, *args: Any, **kwargs: Any) -> T:
        """``model.to(lightgrad.float64)``, ``model.to('cpu')``: floating tensors take the dtype."""
        dt = kwargs.get("dtype")
        for a in list(args) + [kwargs.get("device"), kwargs.get("tensor")]:
            if isinstance(a, Tensor):
                dt = a.dtype
            elif isinstance(a, D.dtype) or (isinstance(a, str) and a in D._BY_NAME):
                dt = a
            elif a is not None and not isinstance(a, bool):
                _device(a)  # validates: only the CPU exists here
        if dt is None:
            return self
        dt = D.to_dtype(dt)
        if not dt.is_floating_point:
            raise TypeError(f"nn.Module.to only accepts floating point dtypes, but got desired dtype={dt}")
        return self._apply(lambda t: t.to(dt) if t.is_floating_point() else t)

    def type(self: T, dst_type: Any) -> T:
        """Convert every parameter and buffer to ``dst_type``; returns self."""
        return self._apply(lambda t: t.to(dst_type))

    def float(self: T) -> T:
        """Cast the floating-point parameters and buffers to float32; returns self."""
        return self._apply(lambda t: t.float() if t.is_floating_point() else t)

    def double(self: T) -> T:
        """Cast the floating-point parameters and buffers to float64; returns self."""
        return self._apply(lambda t: t.double() if t.is_floating_point() else t)

    def half(self: T) -> T:
        """Cast the floating-point parameters and buffers to float16; returns self."""
        return self._apply(lambda t: t.half() if t.is_floating_point() else t)

    def bfloat16(self: T) -> T:
        """Cast to bfloat16: raises TypeError, as lightgrad has no bfloat16 dtype."""
        raise TypeError("lightgrad has no bfloat16 dtype")

    def cpu(self: T) -> T:
        """Move to the CPU: already there, so returns self."""
        return self

    def cuda(self: T, device: Any = None) -> T:
        """Move to a CUDA device: raises RuntimeError, as lightgrad has none."""
        raise RuntimeError("lightgrad has no CUDA device here (lightgrad.cuda.is_available() is False)")

    def share_memory(self: T) -> T:
        """Share the tensors across processes: a no-op here; returns self."""
        return self

    # ---- printing ------------------------------------------------------------------------------
    def extra_repr(self) -> str:
        """The text inside ``Name(...)`` besides children; layers override it."""
        return ""

    def _get_name(self) -> str:
        return type(self).__name__

    def __repr__(self) -> str:
        extra = self.extra_repr()
        extra_lines = extra.split("\n") if extra else []
        child_lines = [f"({key}): " + _addindent(repr(module), 2) for key, module in self._modules.items()]
        lines = extra_lines + child_lines
        main = self._get_name() + "("
        if lines:
            if len(extra_lines) == 1 and not child_lines:
                main += extra_lines[0]
            else:
                main += "\n  " + "\n  ".join(lines) + "\n"
        return main + ")"


__all__ = ["Module"]
