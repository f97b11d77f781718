"""The Module system: registration, traversal order and names, state dicts, modes, containers, lazy modules.

Where PyTorch defines the answer (names, orders, reprs, exception types), the same model is built
with both frameworks from one definition and compared.
"""

from __future__ import annotations

import copy
import pickle
import warnings
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from helpers import (FRAMEWORKS, assert_close_by_dtype, assert_same_results, needs_torch, numpy_forced, numpy_of,
                     results_on_both, state_to_lg, torch)

import lightgrad as lg
from lightgrad import nn
from lightgrad.nn.parameter import UninitializedParameter, is_lazy

# a lazy instance norm without affine or running stats stays InstanceNorm(0), which warns on every call
pytestmark = pytest.mark.filterwarnings("ignore:input's size at dim")


def make_net(T: Any) -> Any:
    """A small tree with nesting, a shared submodule, buffers (one non-persistent) and a None parameter."""
    class Block(T.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = T.nn.Linear(4, 4)
            self.bn = T.nn.BatchNorm1d(4)
            self.register_buffer("scale", T.ones(4))
            self.register_buffer("cache", T.zeros(2), persistent=False)
            self.register_parameter("unused", None)

        def forward(self, x: Any) -> Any:
            return self.bn(self.fc(x)) * self.scale

    class Net(T.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.embed = T.nn.Linear(3, 4)
            self.blocks = T.nn.ModuleList([Block(), Block()])
            self.head = T.nn.Sequential(OrderedDict([("act", T.nn.ReLU()), ("out", T.nn.Linear(4, 2))]))
            self.tied = self.embed  # the same module under two names
            self.alpha = T.nn.Parameter(T.ones(1))

        def forward(self, x: Any) -> Any:
            x = self.embed(x)
            for b in self.blocks:
                x = b(x)
            return self.head(x) * self.alpha

    return Net()


# ---- registration and traversal ----------------------------------------------------------------

@needs_torch
def test_names_and_orders_match_torch() -> None:
    t, m = make_net(torch), make_net(lg)
    assert [n for n, _ in m.named_parameters()] == [n for n, _ in t.named_parameters()]
    assert [n for n, _ in m.named_parameters(remove_duplicate=False)] == \
        [n for n, _ in t.named_parameters(remove_duplicate=False)]
    assert [n for n, _ in m.named_buffers()] == [n for n, _ in t.named_buffers()]
    assert [n for n, _ in m.named_modules()] == [n for n, _ in t.named_modules()]
    assert [n for n, _ in m.named_modules(remove_duplicate=False)] == \
        [n for n, _ in t.named_modules(remove_duplicate=False)]
    assert [n for n, _ in m.named_children()] == [n for n, _ in t.named_children()]
    assert [n for n, _ in m.named_parameters(prefix="model", recurse=False)] == \
        [n for n, _ in t.named_parameters(prefix="model", recurse=False)]
    assert list(m.state_dict()) == list(t.state_dict())
    assert len(list(m.parameters())) == len(list(t.parameters()))
    assert len(list(m.modules())) == len(list(t.modules()))
    assert len(list(m.children())) == len(list(t.children()))


def test_setattr_routes_to_registries() -> None:
    m = nn.Module()
    m.w = nn.Parameter(lg.zeros(2))
    m.register_buffer("b", lg.ones(2))
    m.sub = nn.Linear(2, 2)
    m.plain = 3
    assert list(m._parameters) == ["w"] and list(m._buffers) == ["b"] and list(m._modules) == ["sub"]
    assert "plain" in m.__dict__ and "w" not in m.__dict__
    m.b = lg.zeros(3)  # a tensor assigned to a buffer name replaces the buffer
    assert m._buffers["b"].shape == (3,)
    m.w = None
    assert m._parameters["w"] is None and m.w is None
    m.sub = nn.ReLU()
    assert isinstance(m._modules["sub"], nn.ReLU)
    m.x = nn.Buffer(lg.ones(2), persistent=False)
    assert "x" in m._buffers and "x" not in m.state_dict()
    del m.sub
    assert "sub" not in m._modules
    with pytest.raises(AttributeError, match="'Module' object has no attribute 'sub'"):
        _ = m.sub
    assert "b" in dir(m) and "w" in dir(m)


@needs_torch
@pytest.mark.parametrize("bad", [
    lambda T, m: setattr(m, "weight", T.zeros(2)),
    lambda T, m: m.register_buffer("a.b", T.zeros(1)),
    lambda T, m: m.register_buffer("", T.zeros(1)),
    lambda T, m: m.register_buffer("x", [1, 2]),
    lambda T, m: m.register_buffer("training", T.zeros(1)),
    lambda T, m: m.register_parameter("p", T.zeros(2)),
    lambda T, m: m.register_parameter("p", T.nn.Parameter(T.zeros(2)) * 2),
    lambda T, m: m.add_module("m", 3),
    lambda T, m: setattr(m, "sub", 3),
    lambda T, m: m.get_submodule("sub.nope"),
    lambda T, m: m.get_parameter("sub.nope"),
    lambda T, m: m.no_such_attribute,
])
def test_registration_errors_match_torch(bad: Any) -> None:
    def build(T: Any) -> Any:
        m = T.nn.Linear(2, 2)
        m.sub = T.nn.Linear(2, 2)
        return m

    tm = build(torch)
    with pytest.raises(Exception) as te:
        bad(torch, tm)
    lm = build(lg)
    before = {k: v.numpy().copy() for k, v in lm.state_dict().items()}
    with pytest.raises(type(te.value)):
        bad(lg, lm)
    after = lm.state_dict()
    assert list(after) == list(before)


def test_assign_before_init_raises() -> None:
    class Bad(nn.Module):
        def __init__(self) -> None:
            self.w = nn.Parameter(lg.zeros(1))

    with pytest.raises(AttributeError, match="before Module.__init__"):
        Bad()


def test_get_submodule_parameter_buffer() -> None:
    m = make_net(lg)
    assert m.get_submodule("blocks.1.fc") is m.blocks[1].fc
    assert m.get_submodule("") is m
    assert m.get_parameter("blocks.0.bn.weight") is m.blocks[0].bn.weight
    assert m.get_buffer("blocks.0.bn.running_mean") is m.blocks[0].bn.running_mean
    with pytest.raises(AttributeError):
        m.get_parameter("blocks.0.bn.running_mean")


def test_shared_parameters_listed_once() -> None:
    m = make_net(lg)
    ids = [id(p) for p in m.parameters()]
    assert len(ids) == len(set(ids))
    names = [n for n, _ in m.named_parameters()]
    assert "tied.weight" not in names and "embed.weight" in names
    assert "tied.weight" in [n for n, _ in m.named_parameters(remove_duplicate=False)]


# ---- state dict --------------------------------------------------------------------------------

def test_state_dict_is_detached_and_shares_storage() -> None:
    m = nn.Linear(3, 2)
    sd = m.state_dict()
    assert isinstance(sd, OrderedDict) and list(sd) == ["weight", "bias"]
    assert not sd["weight"].requires_grad and not isinstance(sd["weight"], nn.Parameter)
    sd["weight"][0, 0] = 7.0
    assert m.weight[0, 0].item() == 7.0
    kv = m.state_dict(keep_vars=True)
    assert kv["weight"] is m.weight


def test_state_dict_round_trip_keeps_identity() -> None:
    lg.manual_seed(0)
    src, dst = make_net(lg), make_net(lg)
    src.blocks[0].bn(lg.randn(5, 4))  # non-trivial running statistics
    params = {n: (p, p.data_ptr()) for n, p in dst.named_parameters()}
    res = dst.load_state_dict(src.state_dict())
    assert res.missing_keys == [] and res.unexpected_keys == [] and repr(res) == "<All keys matched successfully>"
    for k, v in src.state_dict().items():
        np.testing.assert_array_equal(dst.state_dict()[k].numpy(), v.numpy())
    for n, p in dst.named_parameters():
        assert params[n][0] is p and p.data_ptr() == params[n][1]  # copied in place
    x = lg.randn(5, 3)
    src.eval(), dst.eval()
    np.testing.assert_array_equal(dst(x).detach().numpy(), src(x).detach().numpy())


def test_load_state_dict_from_numpy_and_into_flat_buffer_views() -> None:
    m = nn.Linear(3, 2)
    flat = np.zeros(8, np.float32)
    # what an optimizer with flat buffers does: parameters become views of one array
    m.weight.data = lg.from_numpy(flat[:6].reshape(2, 3))
    m.bias.data = lg.from_numpy(flat[6:])
    w = np.arange(6, dtype=np.float64).reshape(2, 3)
    m.load_state_dict({"weight": w, "bias": np.array([1.0, 2.0])})
    np.testing.assert_array_equal(flat, [0, 1, 2, 3, 4, 5, 1, 2])
    assert m.weight.dtype == lg.float32  # values are cast to the parameter's dtype


@needs_torch
def test_load_state_dict_from_torch() -> None:
    t, m = make_net(torch), make_net(lg)
    with torch.no_grad():
        t.blocks[1].bn.running_var.fill_(3.0)
    m.load_state_dict(t.state_dict())
    for k, v in t.state_dict().items():
        np.testing.assert_array_equal(m.state_dict()[k].numpy(), v.numpy())


def test_load_state_dict_reports_every_problem_and_changes_nothing() -> None:
    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = nn.Linear(3, 4)
            self.out = nn.Linear(4, 2)

    m = Net()
    before = {k: v.numpy().copy() for k, v in m.state_dict().items()}
    bad = {
        "fc.weight": lg.zeros(3, 4),  # transposed
        "fc.bias": lg.zeros(4),  # fine, but must not be copied either
        "out.weight": lg.zeros(2, 4),
        "extra.weight": lg.zeros(1),
        "extra2": lg.zeros(1),
    }  # out.bias missing
    with pytest.raises(RuntimeError) as e:
        m.load_state_dict(bad)
    msg = str(e.value)
    assert msg.startswith("Error(s) in loading state_dict for Net:")
    assert 'Missing key(s) in state_dict: "out.bias".' in msg
    assert 'Unexpected key(s) in state_dict: "extra.weight", "extra2".' in msg
    assert ("size mismatch for fc.weight: copying a param with shape (3, 4) from checkpoint, the shape in "
            "current model is (4, 3).") in msg
    assert msg.index("Missing") < msg.index("Unexpected") < msg.index("size mismatch")
    for k, v in m.state_dict().items():
        np.testing.assert_array_equal(v.numpy(), before[k])



_COPY_ERROR = ('Error(s) in loading state_dict for Linear:\n\tWhile copying the parameter named "bias", whose '
               "dimensions in the model are lightgrad.Size([2]) and whose dimensions in the checkpoint are "
               "lightgrad.Size([2]), an exception occurred : ")


@pytest.mark.parametrize("bias", [np.array(["a", "b"]), np.array(["1", "2"]), np.array([None, None])],
                         ids=["str", "numeric-str", "object"])
def test_load_state_dict_value_of_wrong_dtype_changes_nothing(bias: Any) -> None:
    # right shape, but not numbers: every value is checked before the first is copied
    m = nn.Linear(2, 2)
    before = {k: v.numpy().copy() for k, v in m.state_dict().items()}
    with pytest.raises(RuntimeError) as e:
        m.load_state_dict({"weight": lg.ones(2, 2), "bias": bias})
    assert str(e.value).startswith(_COPY_ERROR)
    assert str(e.value) == _COPY_ERROR + f"('expected a tensor of numbers, but got dtype {bias.dtype}',)."
    for k, v in m.state_dict().items():
        np.testing.assert_array_equal(v.numpy(), before[k])
    if torch is not None:  # PyTorch's message for a copy that fails (though it has copied the weight by then)
        t = torch.nn.Linear(2, 2)
        with pytest.raises(RuntimeError) as te:
            t.load_state_dict({"weight": torch.ones(2, 2), "bias": torch.empty(2, device="meta")})
        assert str(te.value).replace("torch.Size", "lightgrad.Size").startswith(_COPY_ERROR)


def test_failed_load_leaves_lazy_placeholders_uninitialized() -> None:
    m = nn.LazyLinear(2)
    with pytest.raises(RuntimeError, match='While copying the parameter named "bias"'):
        m.load_state_dict({"weight": lg.ones(2, 3), "bias": np.array(["a", "b"])})
    assert isinstance(m.weight, nn.UninitializedParameter) and isinstance(m.bias, nn.UninitializedParameter)
    m.load_state_dict({"weight": lg.ones(2, 3), "bias": lg.zeros(2)})
    np.testing.assert_array_equal(m.weight.detach().numpy(), np.ones((2, 3), np.float32))
    assert not isinstance(m.weight, nn.UninitializedParameter)


def test_load_state_dict_non_strict() -> None:
    m = nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 1))
    sd = {"0.weight": lg.ones(2, 2), "0.bias": lg.ones(2), "9.bias": lg.ones(1)}
    res = m.load_state_dict(sd, strict=False)
    assert res.missing_keys == ["1.weight", "1.bias"] and res.unexpected_keys == ["9.bias"]
    missing, unexpected = res
    assert missing == res.missing_keys
    np.testing.assert_array_equal(m[0].weight.detach().numpy(), 1)
    # a shape mismatch is an error even when not strict (as in PyTorch)
    with pytest.raises(RuntimeError, match="size mismatch for 0.bias"):
        m.load_state_dict({"0.bias": lg.ones(3)}, strict=False)
    with pytest.raises(RuntimeError, match='"0.bias", expected torch.Tensor'):
        m.load_state_dict({"0.bias": "nope"}, strict=False)
    with pytest.raises(TypeError, match="dict-like"):
        m.load_state_dict([1, 2])


def test_load_state_dict_assign_replaces_tensors() -> None:
    m = nn.Linear(2, 1)
    w = lg.tensor([[3.0, 4.0]])
    m.load_state_dict({"weight": w, "bias": lg.tensor([1.0])}, assign=True)
    assert isinstance(m.weight, nn.Parameter) and m.weight.requires_grad
    np.testing.assert_array_equal(m.weight.detach().numpy(), [[3.0, 4.0]])


def test_non_persistent_buffers_not_saved() -> None:
    m = make_net(lg)
    assert "blocks.0.cache" not in m.state_dict() and "blocks.0.scale" in m.state_dict()
    assert "blocks.0.cache" in dict(m.named_buffers())


# ---- modes, gradients, conversion --------------------------------------------------------------

def test_train_eval_propagate_and_return_self() -> None:
    m = make_net(lg)
    assert m.eval() is m
    assert all(not x.training for x in m.modules())
    assert m.train() is m and all(x.training for x in m.modules())
    m.blocks.train(False)
    assert m.training and not m.blocks[0].bn.training
    with pytest.raises(ValueError, match="boolean"):
        m.train("yes")  # type: ignore[arg-type]


def test_zero_grad_and_requires_grad() -> None:
    m = nn.Linear(3, 2)
    m(lg.randn(4, 3)).sum().backward()
    g = m.weight.grad
    m.zero_grad(set_to_none=False)
    assert m.weight.grad is g and (g.numpy() == 0).all()
    m.zero_grad()
    assert m.weight.grad is None and m.bias.grad is None
    assert m.requires_grad_(False) is m and not any(p.requires_grad for p in m.parameters())
    m(lg.randn(4, 3))  # no error: nothing requires grad


def test_apply_visits_children_first() -> None:
    m = nn.Sequential(nn.Linear(2, 2), nn.Sequential(nn.ReLU(), nn.Linear(2, 1)))
    seen: list[str] = []
    assert m.apply(lambda mod: seen.append(type(mod).__name__)) is m
    assert seen == ["Linear", "ReLU", "Linear", "Sequential", "Sequential"]

    def init_weights(mod: nn.Module) -> None:
        if isinstance(mod, nn.Linear):
            nn.init.constant_(mod.weight, 0.5)
    m.apply(init_weights)
    assert (m[1][1].weight.detach().numpy() == 0.5).all()


def test_dtype_conversion_keeps_parameter_identity() -> None:
    m = nn.Sequential(nn.Linear(2, 3), nn.BatchNorm1d(3))
    w = m[0].weight
    assert m.double() is m
    assert m[0].weight is w and w.dtype == lg.float64
    assert m[1].running_mean.dtype == lg.float64
    assert m[1].num_batches_tracked.dtype == lg.int64  # integer buffers keep their dtype
    m.to(lg.float32)
    assert w.dtype == lg.float32
    m.half()
    assert w.dtype == lg.float16
    m.float()
    assert m.to("cpu") is m and m.cpu() is m
    with pytest.raises(RuntimeError):
        m.cuda()
    with pytest.raises(RuntimeError):
        m.to("cuda")
    y = m(lg.randn(4, 2))
    assert y.dtype == lg.float32


def test_call_and_missing_forward() -> None:
    class KW(nn.Module):
        def forward(self, x: Any, *, scale: float = 1.0) -> Any:
            return x * scale

    assert KW()(lg.tensor(2.0), scale=3.0).item() == 6.0
    with pytest.raises(NotImplementedError, match='missing the required "forward"'):
        nn.Module()(lg.zeros(1))


# ---- Parameter ---------------------------------------------------------------------------------

def test_parameter_basics() -> None:
    t = lg.tensor([1.0, 2.0])
    p = nn.Parameter(t)
    assert isinstance(p, lg.Tensor) and p.requires_grad and p.is_leaf
    assert p.data_ptr() == t.data_ptr()  # shares storage, as in PyTorch
    assert repr(p) == "Parameter containing:\ntensor([1., 2.], requires_grad=True)"
    assert not nn.Parameter(t, requires_grad=False).requires_grad
    with pytest.raises(RuntimeError, match="floating point"):
        nn.Parameter(lg.tensor([1, 2]))
    y = p * 2
    assert type(y) is lg.Tensor and not isinstance(y, nn.Parameter)
    assert nn.parameter.Parameter is nn.Parameter


@needs_torch
def test_parameter_repr_matches_torch() -> None:
    assert repr(nn.Parameter(lg.tensor([[1.5, -2.0]]))) == \
        repr(torch.nn.Parameter(torch.tensor([[1.5, -2.0]])))


def test_deepcopy_and_pickle_module() -> None:
    m = make_net(lg)
    m(lg.randn(5, 3)).sum().backward()
    c = copy.deepcopy(m)
    assert isinstance(c.embed.weight, nn.Parameter) and c.embed.weight is not m.embed.weight
    assert c.tied is c.embed  # sharing is preserved
    c.embed.weight.data.fill_(0.0)
    assert m.embed.weight.abs().sum().item() > 0
    s = nn.Sequential(nn.Linear(3, 2), nn.BatchNorm1d(2), nn.GELU(), nn.LeakyReLU(0.3))  # classes importable
    s(lg.randn(4, 3))
    r = pickle.loads(pickle.dumps(s))
    assert isinstance(r[0].weight, nn.Parameter) and r[3].negative_slope == 0.3
    for k, v in s.state_dict().items():
        np.testing.assert_array_equal(r.state_dict()[k].numpy(), v.numpy())


# ---- repr --------------------------------------------------------------------------------------

@needs_torch
def test_repr_matches_torch() -> None:
    def build(T: Any) -> Any:
        n = T.nn
        return n.Sequential(
            n.Linear(4, 3), n.ReLU(), n.LeakyReLU(0.2), n.GELU(approximate="tanh"), n.BatchNorm1d(3),
            n.LayerNorm(3), n.Embedding(5, 2, padding_idx=0), n.Dropout(0.1), n.Softmax(dim=-1),
            n.ModuleList([n.Linear(2, 2) for _ in range(3)] + [n.Tanh()]), n.ModuleDict({"a": n.ELU()}),
            n.ParameterList([T.nn.Parameter(T.zeros(2, 3))]), n.CrossEntropyLoss(), n.Softplus(beta=2.0),
            n.Hardtanh(), n.Threshold(0.1, 2.0), n.GroupNorm(1, 3), n.RMSNorm([3]), n.Flatten(), n.Identity(),
            n.Bilinear(2, 3, 4, bias=False), n.PReLU(), n.Softshrink(), n.ReLU6(inplace=True), n.GLU(),
            n.Unflatten(1, (2, 2)), n.Dropout2d(), n.BatchNorm2d(4, affine=False), n.Sigmoid(),
            n.ParameterDict({"p": T.nn.Parameter(T.ones(1))}))

    assert repr(build(lg)).replace("lightgrad.", "torch.") == repr(build(torch))


# ---- containers --------------------------------------------------------------------------------

def test_sequential_behaviour() -> None:
    a, b, c = nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1)
    s = nn.Sequential(a, b, c)
    assert len(s) == 3 and s[0] is a and s[-1] is c and list(s) == [a, b, c]
    sl = s[1:]
    assert isinstance(sl, nn.Sequential) and list(sl._modules) == ["1", "2"] and sl[0] is b
    x = lg.randn(4, 2)
    np.testing.assert_array_equal(s(x).detach().numpy(), c(b(a(x))).detach().numpy())
    d = nn.Sequential(OrderedDict([("fc", a), ("act", b)]))
    assert d.fc is a and list(d._modules) == ["fc", "act"]
    s.append(nn.Tanh())
    assert len(s) == 4 and isinstance(s[3], nn.Tanh)
    del s[1]
    assert list(s._modules) == ["0", "1", "2"] and s[1] is c
    s.insert(0, nn.Identity())
    assert isinstance(s[0], nn.Identity) and s[1] is a
    s[0] = nn.ReLU()
    assert isinstance(s[0], nn.ReLU)
    assert len(s + nn.Sequential(nn.ReLU())) == len(s) + 1
    with pytest.raises(IndexError):
        s[10]


def test_module_list_and_dict() -> None:
    ml = nn.ModuleList([nn.Linear(2, 2) for _ in range(3)])
    assert len(ml) == 3 and len(list(ml.parameters())) == 6
    ml.append(nn.ReLU())
    ml.extend([nn.Tanh()])
    ml.insert(1, nn.Sigmoid())
    assert [type(x).__name__ for x in ml] == ["Linear", "Sigmoid", "Linear", "Linear", "ReLU", "Tanh"]
    assert isinstance(ml[1:3], nn.ModuleList) and len(ml[1:3]) == 2
    del ml[0]
    assert list(ml._modules) == [str(i) for i in range(5)]
    ml += [nn.ReLU()]
    assert len(ml) == 6 and isinstance(ml[-1], nn.ReLU)
    with pytest.raises(IndexError):
        ml[6]
    md = nn.ModuleDict({"a": nn.Linear(1, 1)})
    md["b"] = nn.ReLU()
    md.update([("c", nn.Tanh())])
    assert list(md) == ["a", "b", "c"] and "b" in md and len(md) == 3
    assert list(md.keys()) == ["a", "b", "c"] and isinstance(md.pop("b"), nn.ReLU)
    assert [n for n, _ in md.named_parameters()] == ["a.weight", "a.bias"]


def test_parameter_list_and_dict() -> None:
    pl = nn.ParameterList([lg.zeros(2), nn.Parameter(lg.ones(3))])
    assert all(isinstance(p, nn.Parameter) for p in pl) and len(pl) == 2
    pl.append(lg.zeros(1))
    assert [n for n, _ in pl.named_parameters()] == ["0", "1", "2"]
    assert pl[-1].shape == (1,)
    pd = nn.ParameterDict({"a": lg.zeros(2)})
    pd["b"] = nn.Parameter(lg.ones(1))
    assert list(pd) == ["a", "b"] and isinstance(pd["a"], nn.Parameter) and "a" in pd
    assert [n for n, _ in pd.named_parameters()] == ["a", "b"]
    pd.pop("a")
    assert list(pd.keys()) == ["b"] and len(list(pd.parameters())) == 1


def test_flatten_unflatten_identity() -> None:
    x = lg.randn(2, 3, 4)
    assert nn.Flatten()(x).shape == (2, 12)
    assert nn.Flatten(0, 1)(x).shape == (6, 4)
    assert nn.Unflatten(2, (2, 2))(x).shape == (2, 3, 2, 2)
    assert nn.Identity(54, unused="x")(x) is x


def test_loss_modules_register_weight_buffers() -> None:
    w = lg.tensor([1.0, 2.0])
    ce = nn.CrossEntropyLoss(weight=w)
    assert list(ce.state_dict()) == ["weight"] and ce.weight is w
    assert list(nn.BCEWithLogitsLoss(pos_weight=w).state_dict()) == ["pos_weight"]
    assert list(nn.MSELoss().state_dict()) == []


# ---- reprs of more layers: padding, shuffles, pools, unpooling, losses, distances ----------------

@needs_torch
@pytest.mark.parametrize("ctor", [
    lambda T: T.nn.ZeroPad2d(1), lambda T: T.nn.ConstantPad1d(2, 3.5), lambda T: T.nn.ReflectionPad3d(1),
    lambda T: T.nn.CircularPad1d((1, 2)), lambda T: T.nn.ReplicationPad2d((1, 2, 3, 4)),
    lambda T: T.nn.PixelShuffle(2), lambda T: T.nn.PixelUnshuffle(3), lambda T: T.nn.ChannelShuffle(2),
    lambda T: T.nn.LocalResponseNorm(2), lambda T: T.nn.MaxUnpool2d(2), lambda T: T.nn.MaxUnpool1d(3, 2),
    lambda T: T.nn.AvgPool3d(2), lambda T: T.nn.MaxPool3d(2), lambda T: T.nn.AdaptiveAvgPool3d(2),
    lambda T: T.nn.AdaptiveMaxPool3d((1, 2, 3)), lambda T: T.nn.MultiMarginLoss(), lambda T: T.nn.GaussianNLLLoss(),
    lambda T: T.nn.TripletMarginWithDistanceLoss(), lambda T: T.nn.CosineSimilarity(),
    lambda T: T.nn.PairwiseDistance(), lambda T: T.nn.MultiLabelSoftMarginLoss(), lambda T: T.nn.MaxUnpool3d(2),
])
def test_repr(ctor: Callable[[Any], Any]) -> None:
    assert repr(ctor(lg)) == repr(ctor(torch))


# ---- lazy modules: materialised by the first forward, or loaded before it ------------------------

LAZY = [
    ("LazyLinear", (3,), {}, (2, 5)), ("LazyLinear", (3,), {"bias": False}, (4, 2, 5)),
    ("LazyConv1d", (4, 3), {}, (2, 3, 8)), ("LazyConv2d", (4, 3), {"groups": 2, "padding": 1}, (2, 6, 5, 5)),
    ("LazyConv3d", (2, 2), {"bias": False}, (3, 4, 4, 4)),
    ("LazyConvTranspose1d", (4, 3), {"stride": 2}, (2, 3, 5)),
    ("LazyConvTranspose2d", (4, 3), {"groups": 2}, (2, 6, 5, 5)),
    ("LazyConvTranspose3d", (2, 2), {}, (3, 3, 3, 3)),
    ("LazyBatchNorm1d", (), {}, (4, 3)), ("LazyBatchNorm2d", (), {"affine": False}, (4, 3, 2, 2)),
    ("LazyBatchNorm3d", (), {"track_running_stats": False}, (2, 3, 2, 2, 2)),
    ("LazyInstanceNorm1d", (), {}, (2, 3, 5)),
    ("LazyInstanceNorm2d", (), {"affine": False, "track_running_stats": False}, (2, 3, 4, 4)),
    ("LazyInstanceNorm3d", (), {"track_running_stats": False}, (2, 4, 3, 3, 3)),
    ("LazyInstanceNorm3d", (), {}, (1, 3, 2, 3, 3)),
]


@needs_torch
@pytest.mark.parametrize("name, args, kw, shape", LAZY)
def test_lazy_modules_match_torch(name: str, args: tuple[Any, ...], kw: dict[str, Any],
                                  shape: tuple[int, ...]) -> None:
    rng = np.random.default_rng(13)
    tm, lm = getattr(torch.nn, name)(*args, **kw), getattr(lg.nn, name)(*args, **kw)
    assert repr(lm) == repr(tm)
    assert list(lm.state_dict()) == list(tm.state_dict())
    assert [is_lazy(p) for p in lm.parameters()] == [torch.nn.parameter.is_lazy(p) for p in tm.parameters()]
    x = rng.standard_normal(shape).astype(np.float32)
    with warnings.catch_warnings(record=True) as tw:
        warnings.simplefilter("always")
        tm(torch.tensor(x))
    with warnings.catch_warnings(record=True) as lw:
        warnings.simplefilter("always")
        lm(lg.tensor(x))
    assert [str(w.message) for w in lw] == [str(w.message) for w in tw]  # InstanceNorm(0) warns as torch
    assert type(lm).__name__ == type(tm).__name__ and repr(lm) == repr(tm)
    assert type(lm) is getattr(lg.nn, type(tm).__name__)
    assert not any(is_lazy(t) for t in list(lm.parameters()) + list(lm.buffers()))
    assert {k: tuple(v.shape) for k, v in lm.state_dict().items()} == \
        {k: tuple(v.shape) for k, v in tm.state_dict().items()}
    # materialised as torch would: same init family (identical after copying torch's values)
    lm.load_state_dict(state_to_lg(tm.state_dict()))
    tx, lx = torch.tensor(x, requires_grad=True), lg.tensor(x, requires_grad=True)
    to, lo = tm(tx), lm(lx)
    assert_close_by_dtype(numpy_of(lo), numpy_of(to), "float32")
    to.sum().backward()
    lo.sum().backward()
    assert_close_by_dtype(lx.grad.numpy(), tx.grad.numpy(), "float32")
    for n, p in tm.named_parameters():
        assert_close_by_dtype(getattr(lm, n).grad.numpy(), p.grad.numpy(), "float32", n)


def test_lazy_linear_init_and_dtype() -> None:
    lg.manual_seed(0)
    m = lg.nn.LazyLinear(64, dtype=lg.float64)
    assert isinstance(m.weight, UninitializedParameter) and m.weight.dtype == lg.float64
    m(lg.randn(2, 50, dtype=lg.float64))
    w = m.weight.detach().numpy()
    assert m.weight.dtype == lg.float64 and type(m.weight) is lg.nn.Parameter
    assert np.abs(w).max() <= 1 / np.sqrt(50) and np.abs(w).max() > 0.9 / np.sqrt(50)


@needs_torch
def test_lazy_errors_leave_module_lazy() -> None:
    m = lg.nn.LazyConv2d(4, 3, groups=2)
    with pytest.raises(RuntimeError, match="Expected 3D"):  # as torch
        m(lg.randn(2, 2, 2, 5, 5))
    with pytest.raises(ValueError, match="divisible by groups"):
        m(lg.randn(2, 3, 5, 5))
    assert type(m) is lg.nn.LazyConv2d and is_lazy(m.weight)
    with pytest.raises(RuntimeError, match="uninitialized parameter"):
        m.weight.shape  # noqa: B018
    t = torch.nn.LazyConv2d(4, 3, groups=2)
    with pytest.raises(RuntimeError):
        t(torch.randn(2, 2, 2, 5, 5))
    with pytest.raises(ValueError):
        t(torch.randn(2, 3, 5, 5))
    assert m(lg.randn(2, 4, 5, 5)).shape == (2, 4, 3, 3)


def _torch_state(m: Any) -> dict[str, Any]:
    return {k: v.detach().numpy().copy() for k, v in m.state_dict().items()}


@needs_torch
def test_lazy_linear_strict_load_then_forward() -> None:
    torch.manual_seed(0)
    ref = torch.nn.Linear(3, 2)
    sd = _torch_state(ref)
    x = np.linspace(-1, 1, 12).reshape(4, 3).astype(np.float32)
    outs = []
    for T in FRAMEWORKS:
        m = T.nn.LazyLinear(2)
        keys = m.load_state_dict({k: T.tensor(v) for k, v in sd.items()}, strict=True)
        before = (type(m).__name__, m.in_features, tuple(m.weight.shape))
        y = m(T.tensor(x))
        y.sum().backward()
        outs.append((y, m.weight.grad, m.bias.grad, list(keys.missing_keys), before,
                     type(m).__name__, m.in_features))
    assert_same_results(outs[0], outs[1])
    np.testing.assert_allclose(numpy_forced(outs[0][0]), numpy_forced(ref(torch.tensor(x))), rtol=1e-6)


@needs_torch
def test_lazy_modules_in_a_tree_load_then_forward() -> None:
    torch.manual_seed(0)
    ref = torch.nn.Sequential(torch.nn.Conv2d(2, 4, 3), torch.nn.BatchNorm2d(4), torch.nn.Flatten(),
                              torch.nn.Linear(4 * 3 * 3, 5), torch.nn.BatchNorm1d(5))
    ref(torch.randn(6, 2, 5, 5))  # (running statistics that are not the defaults)
    sd = _torch_state(ref)
    x = np.linspace(-2, 2, 3 * 2 * 5 * 5).reshape(3, 2, 5, 5).astype(np.float32)
    outs = []
    for T in FRAMEWORKS:
        nn = T.nn
        m = nn.Sequential(nn.LazyConv2d(4, 3), nn.LazyBatchNorm2d(), nn.Flatten(), nn.LazyLinear(5),
                          nn.LazyBatchNorm1d())
        m.load_state_dict({k: T.tensor(v) for k, v in sd.items()})
        m.eval()
        outs.append((m(T.tensor(x)), [type(c).__name__ for c in m]))
    assert_same_results(outs[0], outs[1], rtol=1e-5)
    ref.eval()
    np.testing.assert_allclose(numpy_forced(outs[0][0]), numpy_forced(ref(torch.tensor(x))), rtol=1e-5, atol=1e-6)


@needs_torch
def test_lazy_state_dict_loaded_into_lazy_module_stays_lazy() -> None:
    def f(T: Any) -> Any:
        m = T.nn.LazyLinear(3)
        keys = m.load_state_dict(T.nn.LazyLinear(3).state_dict())
        lazy = (type(m.weight).__name__, type(m.bias).__name__, list(keys.missing_keys))
        y = m(T.ones(2, 4))
        return (lazy[0], lazy[1], str(lazy[2]), type(m).__name__, tuple(y.shape) == (2, 3))

    got, want = results_on_both(f)
    assert got == want


def test_lazy_state_dict_survives_save_and_load(tmp_path: Any) -> None:
    path = tmp_path / "lazy.pt"
    lg.save(lg.nn.LazyLinear(3).state_dict(), path)
    m = lg.nn.LazyLinear(3)
    m.load_state_dict(lg.load(path))
    assert lg.nn.parameter.is_lazy(m.weight)
    assert tuple(m(lg.ones(2, 4)).shape) == (2, 3)


@needs_torch
def test_lazy_load_with_missing_key() -> None:
    def strict(T: Any) -> Any:
        src = T.nn.Linear(3, 2)
        T.nn.LazyLinear(2).load_state_dict({"weight": src.weight.detach()})

    got, want = results_on_both(strict)
    assert isinstance(want, RuntimeError) and isinstance(got, RuntimeError)
    assert 'Missing key(s) in state_dict: "bias"' in str(got)

    def loose(T: Any) -> Any:
        m = T.nn.LazyLinear(2)
        keys = m.load_state_dict({"weight": T.nn.Linear(3, 2).weight.detach()}, strict=False)
        return (list(keys.missing_keys), type(m.weight).__name__, type(m.bias).__name__)

    got, want = results_on_both(loose)
    assert got == want


@needs_torch
def test_lazy_linear_load_then_forward_with_wrong_input_size() -> None:
    def f(T: Any) -> Any:
        m = T.nn.LazyLinear(2)
        m.load_state_dict(T.nn.Linear(3, 2).state_dict())
        m(T.ones(1, 4))

    got, want = results_on_both(f)
    assert type(got) is type(want) and str(got) == str(want)
