"""nn.utils.prune against PyTorch: masks, iterative pruning, structured and global pruning, removal."""

from __future__ import annotations

from typing import Any

import pytest

import lightgrad as lg

torch = pytest.importorskip("torch")
pytest.importorskip("torch.nn.utils.prune")  # (a submodule torch does not import itself)


def _linear(lib: Any, src: Any) -> Any:
    m = lib.nn.Linear(src.in_features, src.out_features)
    m.load_state_dict({k: lib.tensor(v.detach().numpy()) for k, v in src.state_dict().items()})
    return m


def _both(fn: Any) -> None:
    torch.manual_seed(0)
    srcs = [torch.nn.Linear(4, 3), torch.nn.Linear(3, 3), torch.nn.Linear(3, 2)]
    a, b = fn(lg, [_linear(lg, s) for s in srcs]), fn(torch, [_linear(torch, s) for s in srcs])
    assert a == b, (a, b)


def test_l1_unstructured_masks_reparametrizes_and_prunes_again_among_the_rest() -> None:
    def run(lib: Any, mods: list[Any]) -> Any:
        lin, prune = mods[0], lib.nn.utils.prune
        prune.l1_unstructured(lin, "weight", amount=0.25)
        out = [sorted(n for n, _ in lin.named_parameters()), sorted(n for n, _ in lin.named_buffers()),
               lin.weight_mask.sum().item(), prune.is_pruned(lin)]
        prune.l1_unstructured(lin, "weight", amount=2)
        out.append(lin.weight_mask.tolist())
        lin(lib.ones(1, 4)).sum().backward()
        out.append([[round(v, 5) for v in row] for row in lin.weight_orig.grad.tolist()])
        prune.remove(lin, "weight")
        out.append((sorted(n for n, _ in lin.named_parameters()), (lin.weight == 0).sum().item(), prune.is_pruned(lin)))
        return out
    _both(run)


def test_structured_and_global_pruning() -> None:
    def run(lib: Any, mods: list[Any]) -> Any:
        prune = lib.nn.utils.prune
        prune.ln_structured(mods[0], "weight", amount=1, n=2, dim=0)
        prune.random_structured(mods[1], "weight", amount=0.0, dim=1)
        prune.global_unstructured([(mods[1], "weight"), (mods[2], "weight")], pruning_method=prune.L1Unstructured,
                                  amount=0.5)
        prune.custom_from_mask(mods[2], "bias", lib.tensor([1.0, 0.0]))
        return [mods[0].weight_mask.tolist(), (mods[1].weight_mask.sum() + mods[2].weight_mask.sum()).item(),
                mods[2].bias.tolist()[1]]
    _both(run)


def test_pruning_errors_leave_the_module_as_it_was() -> None:
    for lib in (lg, torch):
        lin = lib.nn.Linear(3, 2)
        with pytest.raises(ValueError, match="Structured pruning can only be applied to multidimensional tensors"):
            lib.nn.utils.prune.ln_structured(lin, "bias", amount=1, n=2, dim=0)
        assert sorted(n for n, _ in lin.named_parameters()) == ["bias", "weight"]
        with pytest.raises(ValueError, match="should either be a float in the range"):
            lib.nn.utils.prune.l1_unstructured(lin, "weight", amount=1.5)
        with pytest.raises(ValueError, match="has to be pruned before pruning can be removed"):
            lib.nn.utils.prune.remove(lin, "weight")
