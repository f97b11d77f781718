"""The op table: every op, forward and backward, against NumPy, finite differences and PyTorch.

Each row is (name, fn, input shapes, options). ``fn(T, *xs)`` is written once against the shared
API and runs with T = lightgrad and T = torch. Inputs are float64 for the finite-difference check.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from helpers import builtin_type, numeric_grads, torch

import lightgrad as lg

POS = "pos"  # inputs must be positive (log, sqrt, ...)
UNIT = "unit"  # inputs in (-1, 1)
AWAY = "away"  # inputs kept away from 0 (kinks of abs, relu, sign; poles)
NOGRAD = "nograd"  # output not differentiable: forward only
LOWPREC = "lowprec"  # goes through float32: no float64 finite differences

S, M = (3,), (2, 3)
IDX = np.array([[0, 2, 1], [1, 1, 0]])
SIDX = np.array([[0, 2, 0], [3, 3, 3]])  # scatter_reduce: repeats, and a position never written

OPS: list[tuple[str, Any, list[tuple[int, ...]], set[str]]] = [
    # arithmetic and broadcasting
    ("add", lambda T, a, b: a + b, [M, M], set()),
    ("add_bcast", lambda T, a, b: a + b, [(2, 1, 3), (4, 1)], set()),
    ("add_scalar", lambda T, a: a + 2.5, [M], set()),
    ("radd", lambda T, a: 2.5 + a, [M], set()),
    ("add_alpha", lambda T, a, b: T.add(a, b, alpha=2.0), [M, S], set()),
    ("sub", lambda T, a, b: a - b, [M, S], set()),
    ("rsub", lambda T, a: 1.5 - a, [M], set()),
    ("mul", lambda T, a, b: a * b, [M, (2, 1)], set()),
    ("rmul", lambda T, a: 3 * a, [M], set()),
    ("div", lambda T, a, b: a / b, [M, M], {AWAY}),
    ("rdiv", lambda T, a: 2.0 / a, [M], {AWAY}),
    ("fmod", lambda T, a, b: T.fmod(a * 3, b), [M, M], {AWAY}),
    ("remainder", lambda T, a, b: a * 3 % b, [M, M], {AWAY}),
    ("remainder_scalar", lambda T, a: T.remainder(a * 3, 1.3), [M], set()),
    ("rmod", lambda T, a: 5.0 % a, [M], {AWAY, NOGRAD}),  # (PyTorch has no derivative for a number % tensor)
    ("norm_p3_zero_row", lambda T, a: (a * T.tensor([[0.0], [1.0]], dtype=a.dtype)).norm(3, dim=1), [M], set()),
    ("pow_scalar2", lambda T, a: a ** 2, [M], set()),
    ("pow_scalar3", lambda T, a: a ** 3, [M], set()),
    ("pow_frac", lambda T, a: a ** 1.5, [M], {POS}),
    ("pow_tensor", lambda T, a, b: a ** b, [M, M], {POS}),
    ("rpow", lambda T, a: 2.0 ** a, [M], set()),
    ("neg", lambda T, a: -a, [M], set()),
    ("square", lambda T, a: T.square(a), [M], set()),
    ("reciprocal", lambda T, a: a.reciprocal(), [M], {AWAY}),
    # elementwise math
    ("abs", lambda T, a: a.abs(), [M], {AWAY}),
    ("sign", lambda T, a: a.sign(), [M], {AWAY, NOGRAD}),
    ("exp", lambda T, a: a.exp(), [M], set()),
    ("log", lambda T, a: a.log(), [M], {POS}),
    ("log1p", lambda T, a: a.log1p(), [M], {POS}),
    ("expm1", lambda T, a: a.expm1(), [M], set()),
    ("log2", lambda T, a: a.log2(), [M], {POS}),
    ("sqrt", lambda T, a: a.sqrt(), [M], {POS}),
    ("rsqrt", lambda T, a: a.rsqrt(), [M], {POS}),
    ("sin", lambda T, a: a.sin(), [M], set()),
    ("cos", lambda T, a: a.cos(), [M], set()),
    ("tan", lambda T, a: a.tan(), [M], {UNIT}),
    ("tanh", lambda T, a: a.tanh(), [M], set()),
    ("sigmoid", lambda T, a: a.sigmoid(), [M], set()),
    ("relu", lambda T, a: a.relu(), [M], {AWAY}),
    ("erf", lambda T, a: a.erf(), [M], set()),
    ("sinh", lambda T, a: a.sinh(), [M], set()),
    ("cosh", lambda T, a: a.cosh(), [M], set()),
    ("clamp", lambda T, a: a.clamp(-0.5, 0.5), [M], {AWAY}),
    ("clamp_min", lambda T, a: a.clamp(min=0.1), [M], {AWAY}),
    ("clamp_tensor", lambda T, a, lo: a.clamp(min=lo), [M, S], set()),
    ("maximum", lambda T, a, b: T.maximum(a, b), [M, S], set()),
    ("minimum", lambda T, a, b: T.minimum(a, b), [M, M], set()),
    ("where", lambda T, a, b: T.where(a > 0, a, b), [M, S], {AWAY}),
    ("where_scalar", lambda T, a: T.where(a > 0, a, 0.0), [M], {AWAY}),
    ("masked_fill", lambda T, a: a.masked_fill(a < 0, 2.0), [M], {AWAY}),
    ("lerp", lambda T, a, b: T.lerp(a, b, 0.3), [M, M], set()),
    # comparisons and logic (forward only)
    ("gt", lambda T, a, b: (a > b).float(), [M, S], {NOGRAD}),
    ("le_scalar", lambda T, a: (a <= 0.1).float(), [M], {NOGRAD}),
    ("eq", lambda T, a: (a == a).float(), [M], {NOGRAD}),
    ("logical_and", lambda T, a, b: T.logical_and(a > 0, b > 0).float(), [M, M], {NOGRAD}),
    ("logical_not", lambda T, a: T.logical_not(a > 0).float(), [M], {NOGRAD}),
    ("isclose", lambda T, a: T.isclose(a, a + 1e-9).float(), [M], {NOGRAD}),
    # reductions
    ("sum", lambda T, a: a.sum(), [(2, 3, 4)], set()),
    ("sum_dim", lambda T, a: a.sum(1), [(2, 3, 4)], set()),
    ("sum_dims_keep", lambda T, a: a.sum((0, 2), keepdim=True), [(2, 3, 4)], set()),
    ("sum_neg_dim", lambda T, a: a.sum(-1), [(2, 3, 4)], set()),
    ("mean", lambda T, a: a.mean(), [(2, 3, 4)], set()),
    ("mean_dim", lambda T, a: a.mean((1, 2)), [(2, 3, 4)], set()),
    ("var", lambda T, a: a.var(), [(2, 3, 4)], set()),
    ("var_dim", lambda T, a: a.var(1, keepdim=True), [(2, 3, 4)], set()),
    ("var_corr0", lambda T, a: a.var(0, correction=0), [(3, 4)], set()),
    ("std", lambda T, a: a.std(-1), [(2, 5)], set()),
    # a constant row and a size-1 dim: the deviation is 0 there, and so is PyTorch's gradient (not NaN)
    ("std_constant_row", lambda T, a: (a * T.tensor([[0.0], [1.0]], dtype=a.dtype)).std(1, correction=0), [M], set()),
    ("std_size1_dim", lambda T, a: a.std(1, correction=0), [(3, 1)], set()),
    ("var_size1_dim", lambda T, a: a.var(1, correction=0), [(3, 1)], set()),
    ("prod", lambda T, a: a.prod(), [(2, 3)], set()),
    ("prod_dim", lambda T, a: a.prod(1), [(2, 3, 2)], set()),
    ("amax", lambda T, a: a.amax(), [(2, 3, 4)], set()),
    ("amax_dim", lambda T, a: a.amax(1), [(2, 3, 4)], set()),
    ("amin_dims", lambda T, a: a.amin((0, 2), keepdim=True), [(2, 3, 4)], set()),
    ("max_all", lambda T, a: a.max(), [(2, 3)], set()),
    ("max_dim", lambda T, a: a.max(1).values, [(2, 3, 4)], set()),
    ("max_dim_keep", lambda T, a: a.max(-1, keepdim=True)[0], [(2, 3, 4)], set()),
    ("min_dim", lambda T, a: a.min(0).values, [(2, 3)], set()),
    ("max_indices", lambda T, a: a.max(1).indices.float(), [(2, 3, 4)], {NOGRAD}),
    ("argmax", lambda T, a: a.argmax(1).float(), [(2, 3, 4)], {NOGRAD}),
    ("argmin_all", lambda T, a: a.argmin().float(), [(2, 3, 4)], {NOGRAD}),
    ("logsumexp", lambda T, a: a.logsumexp(1), [(2, 3, 4)], set()),
    ("logsumexp_big", lambda T, a: (a * 1000).logsumexp(-1), [(2, 3)], set()),
    ("cumsum", lambda T, a: a.cumsum(1), [(2, 3, 4)], set()),
    ("norm", lambda T, a: a.norm(), [(2, 3)], set()),
    ("norm_dim", lambda T, a: a.norm(dim=1), [(2, 3)], set()),
    ("norm_p1", lambda T, a: a.norm(p=1, dim=0), [(2, 3)], {AWAY}),
    ("norm_p3", lambda T, a: a.norm(p=3), [(2, 3)], {AWAY}),
    ("all", lambda T, a: (a > 0).all(1).float(), [(2, 3)], {NOGRAD}),
    ("any", lambda T, a: (a > 0).any().float(), [(2, 3)], {NOGRAD}),
    ("softmax", lambda T, a: a.softmax(-1), [(2, 3, 4)], set()),
    ("log_softmax", lambda T, a: a.log_softmax(1), [(2, 3, 4)], set()),
    # a 0-d tensor reduces along dim 0 or -1 as along one dim of size 1, and keeps its shape ()
    ("cumsum_0d", lambda T, a: a.cumsum(0), [()], set()),
    ("cumprod_0d_neg", lambda T, a: a.cumprod(-1), [()], set()),
    ("softmax_0d", lambda T, a: a.softmax(0), [()], set()),
    ("log_softmax_0d", lambda T, a: T.nn.functional.log_softmax(a, -1), [()], set()),
    ("sum_0d_dim", lambda T, a: a.sum(0), [()], set()),
    ("amax_0d_dim", lambda T, a: a.amax(-1), [()], set()),
    ("logsumexp_empty", lambda T, a: a.logsumexp(1), [(2, 0)], set()),  # log(0): -inf, not amax's error
    # sorting, scans, indexing (compat)
    ("sort", lambda T, a: a.sort(1).values, [(2, 3, 4)], set()),
    ("sort_desc", lambda T, a: a.sort(dim=0, descending=True).values, [(3, 4)], set()),
    ("sort_stable_indices", lambda T, a: a.sort(dim=-1, stable=True)[1].float(), [(2, 5)], {NOGRAD}),
    ("argsort_desc", lambda T, a: a.argsort(1, descending=True).float(), [(2, 4, 3)], {NOGRAD}),
    ("msort", lambda T, a: T.msort(a), [(3, 2)], set()),
    ("topk", lambda T, a: a.topk(2, 1).values, [(2, 4, 3)], set()),
    ("topk_smallest", lambda T, a: T.topk(a, 2, dim=0, largest=False)[0], [(3, 4)], set()),
    ("topk_indices", lambda T, a: a.topk(3).indices.float(), [(2, 5)], {NOGRAD}),
    ("kthvalue", lambda T, a: a.kthvalue(2, 1).values, [(2, 4, 3)], set()),
    ("kthvalue_keep", lambda T, a: T.kthvalue(a, 3, -1, True)[0], [(2, 5)], set()),
    ("kthvalue_indices", lambda T, a: a.kthvalue(2, 0).indices.float(), [(3, 4)], {NOGRAD}),
    ("median_all", lambda T, a: a.median(), [(3, 4)], set()),
    ("median_dim", lambda T, a: a.median(1).values, [(2, 4, 3)], set()),
    ("median_dim_keep_idx", lambda T, a: a.median(-1, keepdim=True).indices.float(), [(3, 4)], {NOGRAD}),
    ("nanmedian", lambda T, a: T.nanmedian(a, 0).values, [(4, 3)], set()),
    ("mode", lambda T, a: T.round(a * 2).mode(1).values, [(3, 6)], {NOGRAD}),
    ("mode_indices", lambda T, a: T.round(a * 2).mode(0)[1].float(), [(7, 3)], {NOGRAD}),
    ("cumprod", lambda T, a: a.cumprod(1), [(2, 3, 4)], set()),
    ("cumprod_dim0", lambda T, a: T.cumprod(a, 0), [(4, 2)], set()),
    ("cummax", lambda T, a: a.cummax(1).values, [(2, 5)], set()),
    ("cummin", lambda T, a: T.cummin(a, 0)[0], [(5, 2)], set()),
    ("cummax_indices", lambda T, a: a.cummax(-1).indices.float(), [(2, 6)], {NOGRAD}),
    ("logcumsumexp", lambda T, a: a.logcumsumexp(1), [(2, 3, 4)], set()),
    ("logcumsumexp_big", lambda T, a: (a * 1000).logcumsumexp(-1), [(2, 3)], set()),
    ("nansum", lambda T, a: T.nansum(a, 1), [(2, 3)], set()),
    ("nanmean", lambda T, a: a.nanmean(), [(2, 3)], set()),
    ("aminmax_min", lambda T, a: a.aminmax().min, [(2, 3)], set()),
    ("aminmax_dim_max", lambda T, a: T.aminmax(a, dim=1, keepdim=True).max, [(2, 3)], set()),
    ("std_mean", lambda T, a: T.stack(T.std_mean(a, 1)), [(2, 4)], set()),
    ("var_mean_corr0", lambda T, a: T.stack(T.var_mean(a, 0, correction=0, keepdim=True)), [(3, 2)], set()),
    ("index_add", lambda T, a, b: a.index_add(1, T.tensor([0, 2, 0]), b, alpha=2.0), [(2, 3), (2, 3)], set()),
    ("index_copy", lambda T, a, b: T.index_copy(a, 0, T.tensor([2, 0]), b), [(3, 2), (2, 2)], set()),
    ("index_fill", lambda T, a: a.index_fill(1, T.tensor([0, 2]), -1.0), [(2, 3)], set()),
    ("scatter_reduce_sum", lambda T, a, b: a.scatter_reduce(1, T.tensor(SIDX), b, "sum"), [(2, 4), (2, 3)], set()),
    ("scatter_reduce_sum_noself", lambda T, a, b: a.scatter_reduce(1, T.tensor(SIDX), b, "sum", include_self=False),
     [(2, 4), (2, 3)], set()),
    ("scatter_reduce_mean", lambda T, a, b: a.scatter_reduce(1, T.tensor(SIDX), b, "mean"), [(2, 4), (2, 3)], set()),
    ("scatter_reduce_mean_noself", lambda T, a, b: a.scatter_reduce(1, T.tensor(SIDX), b, "mean", include_self=False),
     [(2, 4), (2, 3)], set()),
    ("scatter_reduce_prod", lambda T, a, b: a.scatter_reduce(1, T.tensor(SIDX), b, "prod"), [(2, 4), (2, 3)], set()),
    ("scatter_reduce_prod_noself", lambda T, a, b: a.scatter_reduce(1, T.tensor(SIDX), b, "prod", include_self=False),
     [(2, 4), (2, 3)], set()),
    ("scatter_reduce_amax", lambda T, a, b: a.scatter_reduce(1, T.tensor(SIDX), b, "amax"), [(2, 4), (2, 3)], set()),
    ("scatter_reduce_amin_noself", lambda T, a, b: a.scatter_reduce(0, T.tensor(SIDX).T, b, "amin", include_self=False),
     [(4, 2), (3, 2)], set()),
    ("take", lambda T, a: a.take(T.tensor([[0, 5], [3, 3]])), [(2, 3)], set()),
    ("put_acc", lambda T, a, b: a.put(T.tensor([1, 4, 1]), b, accumulate=True), [(2, 3), (3,)], set()),
    ("unique", lambda T, a: T.unique(T.round(a)), [(3, 4)], {NOGRAD}),
    ("unique_consecutive", lambda T, a: T.round(a).unique_consecutive(), [(8,)], {NOGRAD}),
    ("searchsorted", lambda T, a, b: T.searchsorted(a.sort().values, b, right=True).float(), [(2, 5), (2, 3)],
     {NOGRAD}),
    ("bucketize", lambda T, a, b: T.bucketize(b, a.sort().values).float(), [(5,), (2, 3)], {NOGRAD}),
    ("bincount_weights", lambda T, a: T.bincount(T.tensor([0, 2, 2, 5, 1, 0]), a, minlength=8), [(6,)], {NOGRAD}),
    ("histc", lambda T, a: a.histc(bins=5), [(4, 5)], {NOGRAD}),
    ("histc_range", lambda T, a: T.histc(a, 4, -1, 1), [(4, 5)], {NOGRAD}),
    ("isin", lambda T, a: T.isin(T.round(a), T.tensor([0.0, 1.0])).float(), [(3, 4)], {NOGRAD}),
    # shape
    ("reshape", lambda T, a: a.reshape(3, -1) * 1.0, [(2, 3, 2)], set()),
    ("view", lambda T, a: a.contiguous().view(-1), [(2, 3)], set()),
    ("flatten", lambda T, a: a.flatten(1), [(2, 3, 2)], set()),
    ("unflatten", lambda T, a: a.unflatten(1, (2, 3)), [(2, 6)], set()),
    ("squeeze", lambda T, a: a.squeeze(), [(2, 1, 3)], set()),
    ("squeeze_dim", lambda T, a: a.squeeze(1), [(2, 1, 3)], set()),
    ("unsqueeze", lambda T, a: a.unsqueeze(-1), [(2, 3)], set()),
    ("permute", lambda T, a: a.permute(2, 0, 1), [(2, 3, 4)], set()),
    ("transpose", lambda T, a: a.transpose(0, 2), [(2, 3, 4)], set()),
    ("T", lambda T, a: a.T, [(2, 3)], set()),
    ("mT", lambda T, a: a.mT, [(2, 3, 4)], set()),
    ("expand", lambda T, a: a.expand(4, 2, 3), [(2, 1)], set()),
    ("expand_as", lambda T, a, b: a.expand_as(b) * b, [(1, 3), M], set()),
    ("broadcast_to", lambda T, a: T.broadcast_to(a, (2, 3, 3)), [S], set()),
    ("repeat", lambda T, a: a.repeat(2, 1, 3), [(2, 3)], set()),
    ("cat", lambda T, a, b: T.cat([a, b], 1), [(2, 3), (2, 2)], set()),
    ("cat_neg", lambda T, a, b: T.cat([a, b], -2), [(2, 3), (1, 3)], set()),
    # a 1-d empty input joins any shape, and gets an empty gradient of its own (not None)
    ("cat_empty_input", lambda T, e, a: T.cat([e, a, e], 1), [(0,), (2, 3)], set()),
    ("cat_one", lambda T, a: T.cat([a]), [(2, 3)], set()),
    ("stack", lambda T, a, b: T.stack([a, b], 1), [M, M], set()),
    ("split", lambda T, a: a.split(2, 1)[1], [(2, 5)], set()),
    ("split_sizes", lambda T, a: a.split([1, 4], 1)[1], [(2, 5)], set()),
    ("chunk", lambda T, a: a.chunk(3, 0)[2], [(5, 2)], set()),
    ("tensor_split_indices", lambda T, a: a.tensor_split([1, -1], 1)[1], [(2, 5)], set()),
    ("unbind", lambda T, a: a.unbind(1)[2], [(2, 3)], set()),
    ("flip", lambda T, a: a.flip(0, 2), [(2, 3, 4)], set()),
    ("flip_dims_kw", lambda T, a: T.flip(a, dims=(0, -1)), [(2, 3, 4)], set()),
    ("flip_dims_kw_method", lambda T, a: a.flip(dims=[1]), [(2, 3)], set()),
    ("roll", lambda T, a: a.roll(1, 1), [(2, 3)], set()),
    ("roll_multi", lambda T, a: a.roll((1, -1), (0, 1)), [(2, 3)], set()),
    ("tril", lambda T, a: a.tril(), [(3, 4)], set()),
    ("triu_k", lambda T, a: a.triu(1), [(2, 3, 3)], set()),
    ("narrow", lambda T, a: a.narrow(1, 1, 2), [(2, 4)], set()),
    ("narrow_neg_start", lambda T, a: a.narrow(1, -3, 2), [(2, 4)], set()),
    ("movedim", lambda T, a: a.movedim(0, -1), [(2, 3, 4)], set()),
    ("movedim_tuple", lambda T, a: a.movedim((0, 1), (2, 0)), [(2, 3, 4)], set()),
    ("movedim_0d", lambda T, a: a.movedim(0, -1) * 1.0, [()], set()),
    ("diagonal", lambda T, a: a.diagonal(), [(3, 3)], set()),
    ("diagonal_offset_dims", lambda T, a: a.diagonal(-1, 2, 0), [(3, 2, 4)], set()),
    ("trace", lambda T, a: a.trace(), [(3, 3)], set()),
    # indexing
    ("getitem_int", lambda T, a: a[1], [(2, 3)], set()),
    ("getitem_slice_step", lambda T, a: a[:, ::2], [(2, 5)], set()),
    ("getitem_neg_slice", lambda T, a: a[-1:, 1:-1], [(3, 4)], set()),
    ("getitem_none_ellipsis", lambda T, a: a[None, ..., 1], [(2, 3, 4)], set()),
    ("getitem_list", lambda T, a: a[[0, 0, 1]], [(2, 3)], set()),
    ("getitem_tensor_idx", lambda T, a: a[T.tensor([2, 0, 2, 2])], [(3, 2)], set()),
    ("getitem_2d_adv", lambda T, a: a[T.tensor([0, 1, 1]), T.tensor([2, 2, 0])], [(2, 3)], set()),
    ("getitem_mixed", lambda T, a: a[:, T.tensor([1, 1])], [(2, 3, 2)], set()),
    ("getitem_bool", lambda T, a: a[a > 0], [(2, 3)], {AWAY}),
    ("gather", lambda T, a: a.gather(1, T.tensor(IDX)), [(2, 3)], set()),
    ("gather_dim0", lambda T, a: a.gather(0, T.tensor([[1, 0, 1]])), [(2, 3)], set()),
    ("take_along_dim", lambda T, a: T.take_along_dim(a, T.tensor([[0], [2]]), 1), [(2, 3)], set()),
    ("take_along_dim_neg", lambda T, a: T.take_along_dim(a, T.tensor([[-1], [-3]]), 1), [(2, 3)], set()),
    ("gather_0d", lambda T, a: a.gather(0, T.tensor([0, 0])), [()], set()),
    ("scatter_0d", lambda T, a, b: a.scatter_add(0, T.tensor(0), b), [(), ()], set()),
    ("index_select_0d", lambda T, a: a.index_select(-1, T.tensor([0])), [()], set()),
    ("index_fill_neg", lambda T, a: a.index_fill(1, T.tensor([-1]), 2.0), [(2, 3)], set()),
    ("scatter", lambda T, a, b: a.scatter(1, T.tensor([[0, 2], [1, 0]]), b), [(2, 3), (2, 2)], set()),
    ("scatter_add", lambda T, a, b: a.scatter_add(1, T.tensor([[0, 0], [1, 1]]), b), [(2, 3), (2, 2)], set()),
    ("index_select", lambda T, a: a.index_select(1, T.tensor([2, 0, 2])), [(2, 3)], set()),
    ("masked_select", lambda T, a: a.masked_select(a > 0), [(2, 3)], {AWAY}),
    ("index_put_fn", lambda T, a, v: a.index_put((T.tensor([0, 1]),), v), [(2, 3), (3,)], set()),
    ("index_put_acc", lambda T, a, v: a.index_put((T.tensor([0, 0]),), v, accumulate=True), [(2, 3), (3,)], set()),
    ("setitem", lambda T, a, v: _setitem(a, v), [(2, 3), (2,)], set()),
    # linear algebra
    ("matmul_2d", lambda T, a, b: a @ b, [(2, 3), (3, 4)], set()),
    ("matmul_1d_1d", lambda T, a, b: a @ b, [(3,), (3,)], set()),
    ("matmul_1d_2d", lambda T, a, b: a @ b, [(3,), (3, 2)], set()),
    ("matmul_2d_1d", lambda T, a, b: a @ b, [(2, 3), (3,)], set()),
    ("matmul_batched", lambda T, a, b: a @ b, [(2, 2, 3), (2, 3, 4)], set()),
    ("matmul_bcast", lambda T, a, b: a @ b, [(2, 1, 2, 3), (3, 3, 2)], set()),
    ("matmul_1d_3d", lambda T, a, b: T.matmul(a, b), [(3,), (2, 3, 2)], set()),
    ("bmm", lambda T, a, b: T.bmm(a, b), [(2, 2, 3), (2, 3, 2)], set()),
    ("mm", lambda T, a, b: T.mm(a, b), [(2, 3), (3, 2)], set()),
    ("dot", lambda T, a, b: T.dot(a, b), [S, S], set()),
    ("outer", lambda T, a, b: T.outer(a, b), [S, (2,)], set()),
    ("einsum_mm", lambda T, a, b: T.einsum("ij,jk->ik", a, b), [(2, 3), (3, 4)], set()),
    ("einsum_batch", lambda T, a, b: T.einsum("bij,bkj->bik", a, b), [(2, 2, 3), (2, 4, 3)], set()),
    ("einsum_trace", lambda T, a: T.einsum("ii", a), [(3, 3)], set()),
    ("einsum_diag", lambda T, a: T.einsum("ii->i", a), [(3, 3)], set()),
    ("einsum_outer_sum", lambda T, a, b: T.einsum("i,j->", a, b), [S, (2,)], set()),
    ("einsum_ellipsis", lambda T, a, b: T.einsum("...ij,...jk", a, b), [(2, 2, 3), (3, 2)], set()),
    ("einsum_bcast_only", lambda T, a, b: T.einsum("ij,k->ijk", a, b), [(2, 3), (2,)], set()),
    # dtype casts inside the graph
    ("to_float32", lambda T, a: a.float().double() * 2, [M], {LOWPREC}),
    ("clone", lambda T, a: a.clone() * 2, [M], set()),
    # more math, BLAS-style, shapes, linalg (compat)
    ("asin", lambda T, a: a.asin(), [M], {UNIT}),
    ("acos", lambda T, a: T.acos(a), [M], {UNIT}),
    ("atan", lambda T, a: a.atan(), [M], set()),
    ("asinh", lambda T, a: a.asinh(), [M], set()),
    ("acosh", lambda T, a: (a + 1.0).acosh(), [M], {POS}),
    ("atanh", lambda T, a: a.atanh(), [M], {UNIT}),
    ("atan2", lambda T, a, b: T.atan2(a, b), [M, S], {AWAY}),
    ("erfc", lambda T, a: (a * 2).erfc(), [M], set()),
    ("erfinv", lambda T, a: a.erfinv(), [M], {UNIT}),
    ("lgamma", lambda T, a: a.lgamma(), [M], {POS}),
    ("lgamma_big", lambda T, a: (a * 20).lgamma(), [M], {POS}),
    ("digamma", lambda T, a: a.digamma(), [M], {POS}),
    ("digamma_neg", lambda T, a: (a * 0.4 - 0.5).digamma(), [M], {POS}),
    ("polygamma1", lambda T, a: T.polygamma(1, a), [M], {POS}),
    ("polygamma3", lambda T, a: T.polygamma(3, a * 3), [M], {POS}),
    ("polygamma2_neg", lambda T, a: (a * 0.4 - 0.5).polygamma(2), [M], {POS}),
    ("logit", lambda T, a: (a * 0.4 + 0.5).logit(), [M], {UNIT}),
    ("logit_eps", lambda T, a: (a * 0.6 + 0.5).logit(eps=0.2), [M], {UNIT}),
    ("xlogy", lambda T, a, b: T.xlogy(T.where(a > 1, a, 0.0), b), [M, S], {POS}),
    ("logaddexp", lambda T, a, b: T.logaddexp(a, b * 30), [M, S], set()),
    ("logaddexp2", lambda T, a, b: a.logaddexp2(b), [M, M], set()),
    ("hypot", lambda T, a, b: T.hypot(a, b), [M, S], {AWAY}),
    ("nan_to_num", lambda T, a: T.cat([a, T.tensor([math.nan], dtype=a.dtype)]).nan_to_num(), [S], set()),
    ("nan_to_num_vals", lambda T, a: T.cat([a, T.tensor([math.nan, -math.inf], dtype=a.dtype)]).nan_to_num(
        1.5, posinf=2.0, neginf=-3.0), [S], set()),
    ("fmax", lambda T, a, b: T.fmax(a, b), [M, S], set()),
    ("fmin", lambda T, a, b: a.fmin(b), [M, M], set()),
    ("copysign", lambda T, a: T.copysign(a, a.detach().flip(-1)), [M], {AWAY}),
    ("signbit", lambda T, a: a.signbit().double(), [M], {NOGRAD}),
    ("isposinf", lambda T, a: (a * math.inf).isposinf().double() + (a * math.inf).isneginf().double() * 2,
     [M], {NOGRAD, AWAY}),
    ("positive", lambda T, a: T.positive(a) * 2, [M], set()),
    ("float_power", lambda T, a: T.float_power(a, 2.5), [M], {POS}),
    ("float_power_tensor", lambda T, a, b: a.float_power(b), [M, S], {POS}),
    ("heaviside", lambda T, a, b: T.heaviside(T.cat([a, a * 0]), T.cat([b, b])), [S, S], {NOGRAD}),
    ("sinc", lambda T, a: T.sinc(T.cat([a, a * 0])), [M], set()),
    ("deg2rad", lambda T, a: a.deg2rad(), [M], set()),
    ("rad2deg", lambda T, a: T.rad2deg(a), [M], set()),
    ("fix", lambda T, a: (a * 3).fix(), [M], {NOGRAD, AWAY}),
    ("addmm", lambda T, i, a, b: T.addmm(i, a, b, beta=0.5, alpha=2.0), [(2, 4), (2, 3), (3, 4)], set()),
    ("addmm_bcast", lambda T, i, a, b: i.addmm(a, b), [(4,), (2, 3), (3, 4)], set()),
    ("addmm_beta0", lambda T, i, a, b: T.addmm(i, a, b, beta=0), [(2, 4), (2, 3), (3, 4)], set()),
    ("addmv", lambda T, i, a, v: T.addmv(i, a, v, alpha=3.0), [(2,), (2, 3), (3,)], set()),
    ("addbmm", lambda T, i, a, b: T.addbmm(i, a, b, beta=2.0), [(2, 4), (3, 2, 5), (3, 5, 4)], set()),
    ("baddbmm", lambda T, i, a, b: i.baddbmm(a, b, alpha=0.5), [(2, 4), (3, 2, 5), (3, 5, 4)], set()),
    ("addr", lambda T, i, a, b: T.addr(i, a, b, beta=-1.0), [(2, 3), (2,), (3,)], set()),
    ("addcmul", lambda T, i, a, b: T.addcmul(i, a, b, value=0.5), [M, M, S], set()),
    ("addcdiv", lambda T, i, a, b: i.addcdiv(a, b, value=2.0), [M, M, S], {AWAY}),
    ("tile", lambda T, a: a.tile((2,)), [(2, 3)], set()),
    ("tile_more", lambda T, a: T.tile(a, (2, 1, 2)), [(2, 3)], set()),
    ("ravel", lambda T, a: T.ravel(a) * 1.0, [(2, 3)], set()),
    ("diff", lambda T, a: a.diff(), [(2, 5)], set()),
    ("diff_n2_pre_app", lambda T, a, p, q: T.diff(a, n=2, dim=1, prepend=p, append=q), [(2, 4), (2, 1), (2, 2)],
     set()),
    ("kron", lambda T, a, b: T.kron(a, b), [(2, 3), (3, 2)], set()),
    ("kron_ndim", lambda T, a, b: a.kron(b), [(2,), (2, 3)], set()),
    ("tensordot", lambda T, a, b: T.tensordot(a, b, dims=1), [(2, 3), (3, 4)], set()),
    ("tensordot_lists", lambda T, a, b: T.tensordot(a, b, dims=([1, 0], [0, 2])), [(3, 2, 4), (2, 5, 3)], set()),
    ("vdot", lambda T, a, b: T.vdot(a, b), [S, S], set()),
    ("cross", lambda T, a, b: T.cross(a, b, dim=1), [(4, 3), (1, 3)], set()),
    ("cross_dim0", lambda T, a, b: a.cross(b, dim=0), [(3, 2), (3, 2)], set()),
    ("rot90", lambda T, a: a.rot90(1, (1, 2)) * 1.0, [(2, 3, 4)], set()),
    ("rot90_neg", lambda T, a: T.rot90(a, -1) * 1.0, [(2, 3)], set()),
    ("rot90_2", lambda T, a: T.rot90(a, 2, [1, 0]) * 1.0, [(2, 3)], set()),
    ("atleast_3d", lambda T, a: T.atleast_3d(a) * 1.0, [S], set()),
    ("column_stack", lambda T, a, b: T.column_stack([a, b]), [S, (3, 2)], set()),
    ("hsplit", lambda T, a: a.hsplit([1, 3])[1] * 2, [(2, 4)], set()),
    ("vsplit", lambda T, a: T.vsplit(a, 2)[1] * 2, [(4, 3)], set()),
    ("dsplit", lambda T, a: a.dsplit([1])[1] * 2, [(2, 2, 3)], set()),
    ("cartesian_prod", lambda T, a, b: T.cartesian_prod(a, b), [S, (2,)], set()),
    ("block_diag", lambda T, a, b, c: T.block_diag(a, b, c), [(2, 3), S, ()], set()),
    ("diag_embed", lambda T, a: a.diag_embed(), [(2, 3)], set()),
    ("diag_embed_dims", lambda T, a: T.diag_embed(a, 1, 0, 2), [(2, 3)], set()),
    ("diag_embed_neg", lambda T, a: a.diag_embed(-2, dim1=-1, dim2=0), [(2, 3)], set()),
    ("diagflat", lambda T, a: T.diagflat(a, -1), [(2, 2)], set()),
    ("inv", lambda T, a: T.linalg.inv(a + 3 * T.eye(3, dtype=a.dtype)), [(3, 3)], set()),
    ("inverse_batched", lambda T, a: (a + 3 * T.eye(3, dtype=a.dtype)).inverse(), [(2, 3, 3)], set()),
    ("det", lambda T, a: T.linalg.det(a), [(3, 3)], set()),
    ("det_batched", lambda T, a: T.det(a), [(2, 3, 3)], set()),
    ("det_singular", lambda T, a: T.linalg.det(T.stack([a[0], a[1], a[0] + a[1]])), [(3, 3)], set()),
    ("slogdet", lambda T, a: T.linalg.slogdet(a)[1], [(2, 3, 3)], set()),
    ("logdet", lambda T, a: (a @ a.mT + T.eye(3, dtype=a.dtype)).logdet(), [(2, 3, 3)], set()),
    ("solve", lambda T, a, b: T.linalg.solve(a + 3 * T.eye(3, dtype=a.dtype), b), [(3, 3), (3, 2)], set()),
    ("solve_vec_batched", lambda T, a, b: T.linalg.solve(a + 3 * T.eye(3, dtype=a.dtype), b), [(2, 3, 3), (3,)],
     set()),
    ("solve_right", lambda T, a, b: T.linalg.solve(a + 3 * T.eye(3, dtype=a.dtype), b, left=False),
     [(3, 3), (2, 3)], set()),
    ("matrix_power", lambda T, a: T.linalg.matrix_power(a, 3), [(2, 3, 3)], set()),
    ("matrix_power_neg", lambda T, a: (a + 3 * T.eye(3, dtype=a.dtype)).matrix_power(-2), [(3, 3)], set()),
    ("cholesky", lambda T, a: T.linalg.cholesky(a @ a.mT + T.eye(3, dtype=a.dtype)), [(2, 3, 3)], set()),
    ("cholesky_upper", lambda T, a: T.linalg.cholesky(a @ a.mT + T.eye(3, dtype=a.dtype), upper=True),
     [(3, 3)], set()),
    ("vector_norm", lambda T, a: T.linalg.vector_norm(a, 3, dim=1), [(2, 3, 4)], {AWAY}),
    ("vector_norm_inf", lambda T, a: T.linalg.vector_norm(a, math.inf, dim=(0, 2), keepdim=True), [(2, 3, 4)],
     set()),
    ("vector_norm_neg", lambda T, a: T.linalg.vector_norm(a, -1.5), [(2, 3)], {AWAY}),
    ("matrix_norm_fro", lambda T, a: T.linalg.matrix_norm(a), [(2, 3, 4)], set()),
    ("matrix_norm_1", lambda T, a: T.linalg.matrix_norm(a, 1), [(2, 3, 4)], {AWAY}),
    ("matrix_norm_ninf", lambda T, a: T.linalg.matrix_norm(a, -math.inf, dim=(0, 2), keepdim=True), [(2, 3, 4)],
     {AWAY}),
    ("linalg_norm", lambda T, a: T.linalg.norm(a), [(2, 3, 4)], set()),
    ("linalg_norm_ord", lambda T, a: T.linalg.norm(a, math.inf), [(3, 4)], {AWAY}),
    # tensor method gaps (compat 2)
    ("absolute_", lambda T, a: (a * 1).absolute_(), [M], {AWAY}),
    ("ceil_", lambda T, a: (a * 3).ceil_(), [M], {NOGRAD}),
    ("floor_", lambda T, a: (a * 3).floor_(), [M], {NOGRAD}),
    ("round_dec", lambda T, a: (a * 3).round_(decimals=1), [M], {NOGRAD}),
    ("trunc_", lambda T, a: (a * 3).trunc_(), [M], {NOGRAD}),
    ("frac_", lambda T, a: (a * 3).frac_(), [M], {AWAY}),
    ("sin_", lambda T, a: (a * 1).sin_(), [M], set()),
    ("cos_", lambda T, a: (a * 1).cos_(), [M], set()),
    ("tan_", lambda T, a: (a * 1).tan_(), [M], {UNIT}),
    ("sinh_", lambda T, a: (a * 1).sinh_(), [M], set()),
    ("cosh_", lambda T, a: (a * 1).cosh_(), [M], set()),
    ("exp2_", lambda T, a: (a * 1).exp2_(), [M], set()),
    ("expm1_", lambda T, a: (a * 1).expm1_(), [M], set()),
    ("log10_", lambda T, a: (a * 1).log10_(), [M], {POS}),
    ("log1p_", lambda T, a: (a * 1).log1p_(), [M], {POS}),
    ("log2_", lambda T, a: (a * 1).log2_(), [M], {POS}),
    ("rsqrt_", lambda T, a: (a * 1).rsqrt_(), [M], {POS}),
    ("reciprocal_", lambda T, a: (a * 1).reciprocal_(), [M], {AWAY}),
    ("negative_", lambda T, a: (a * 1).negative_(), [M], set()),
    ("sign_", lambda T, a: (a * 1).sign_(), [M], {AWAY, NOGRAD}),
    ("sgn_", lambda T, a: (a * 1).sgn_(), [M], {AWAY, NOGRAD}),
    ("square_", lambda T, a: (a * 1).square_(), [M], set()),
    ("erf_", lambda T, a: (a * 1).erf_(), [M], set()),
    ("clamp_min_", lambda T, a: (a * 1).clamp_min_(0.5), [M], {AWAY}),
    ("clamp_max_tensor_", lambda T, a, b: (a * 1).clamp_max_(b), [M, S], set()),
    ("cumsum_", lambda T, a: (a * 1).cumsum_(1), [(2, 3, 4)], set()),
    ("fmod_", lambda T, a, b: (a * 3).fmod_(b), [M, M], {AWAY}),
    ("remainder_", lambda T, a, b: (a * 3).remainder_(b), [M, S], {AWAY}),
    ("floor_divide_", lambda T, a, b: (a * 3).floor_divide_(b), [M, M], {AWAY, NOGRAD}),
    ("true_divide_", lambda T, a, b: (a * 1).true_divide_(b), [M, M], {AWAY}),
    ("divide_trunc_", lambda T, a, b: (a * 3).divide_(b, rounding_mode="trunc"), [M, M], {AWAY, NOGRAD}),
    ("multiply_", lambda T, a, b: (a * 1).multiply_(b), [M, S], set()),
    ("subtract_", lambda T, a, b: (a * 1).subtract_(b, alpha=2), [M, S], set()),
    ("tril_", lambda T, a: (a * 1).tril_(-1), [(3, 4)], set()),
    ("triu_", lambda T, a: (a * 1).triu_(1), [(2, 3, 4)], set()),
    ("eq_", lambda T, a: (a * 1).eq_(a[0]), [M], {NOGRAD}),
    ("ne_", lambda T, a: (a * 1).ne_(0.5), [M], {NOGRAD}),
    ("lt_", lambda T, a, b: (a * 1).lt_(b), [M, S], {NOGRAD}),
    ("le_", lambda T, a: (a * 1).le_(0.1), [M], {NOGRAD}),
    ("gt_", lambda T, a, b: (a * 1).gt_(b), [M, M], {NOGRAD}),
    ("ge_", lambda T, a: (a * 1).ge_(-0.2), [M], {NOGRAD}),
    ("greater_", lambda T, a, b: (a * 1).greater_(b), [M, S], {NOGRAD}),
    ("greater_equal_", lambda T, a, b: (a * 1).greater_equal_(b), [M, S], {NOGRAD}),
    ("less_", lambda T, a, b: (a * 1).less_(b), [M, S], {NOGRAD}),
    ("less_equal_", lambda T, a, b: (a * 1).less_equal_(b), [M, S], {NOGRAD}),
    ("not_equal_", lambda T, a: (a * 1).not_equal_(a.amax()), [M], {NOGRAD}),
    ("logical_and_", lambda T, a, b: (a * 1).logical_and_(b > 0), [M, M], {AWAY, NOGRAD}),
    ("logical_or_", lambda T, a, b: (a > 0).float().logical_or_(b > 0), [M, M], {AWAY, NOGRAD}),
    ("logical_xor_", lambda T, a, b: (a * 1).logical_xor_(b > 0), [M, M], {AWAY, NOGRAD}),
    ("logical_not_", lambda T, a: (a > 0).float().logical_not_(), [M], {AWAY, NOGRAD}),
    ("bitwise_and", lambda T, a, b: T.bitwise_and((a * 9).long(), (b * 9).long()).float(), [M, M], {NOGRAD}),
    ("bitwise_or", lambda T, a, b: (a * 9).long().bitwise_or((b * 9).long()).float(), [M, S], {NOGRAD}),
    ("bitwise_xor_scalar", lambda T, a: T.bitwise_xor((a * 9).long(), 5).float(), [M], {NOGRAD}),
    ("bitwise_not", lambda T, a: T.bitwise_not((a * 9).long()).float(), [M], {NOGRAD}),
    ("bitwise_bool", lambda T, a, b: T.bitwise_or(a > 0, b > 0).float(), [M, M], {AWAY, NOGRAD}),
    ("bitwise_shifts", lambda T, a: T.bitwise_right_shift(T.bitwise_left_shift((a * 9).long(), 3), 1).float(),
     [M], {NOGRAD}),
    ("bitwise_and_", lambda T, a: (a * 9).long().bitwise_and_(6).float(), [M], {NOGRAD}),
    ("gcd_lcm", lambda T, a, b: T.gcd((a * 20).long(), (b * 12).long()).float()
     + (a * 9).long().lcm((b * 6).long()).float(), [M, M], {NOGRAD}),
    ("ldexp", lambda T, a: T.ldexp(a, T.tensor([[1, 0, 3]])), [M], set()),
    ("ldexp_int", lambda T, a: T.ldexp((a * 9).long(), T.tensor([1, 2, 3])), [M], {NOGRAD}),
    ("frexp", lambda T, a: T.frexp(a * 5).mantissa, [M], set()),
    ("frexp_exponent", lambda T, a: a.frexp()[1].float(), [M], {NOGRAD}),
    ("nextafter", lambda T, a, b: (T.nextafter(a, b) - a) * 1e6, [M, M], {NOGRAD}),
    ("unfold", lambda T, a: a.unfold(1, 2, 1), [(2, 5)], set()),
    ("unfold_step", lambda T, a: a.unfold(0, 2, 2), [(5, 3)], set()),
    ("unfold_0d", lambda T, a: a.unfold(0, 1, 1), [()], set()),
    ("unfold_overlap", lambda T, a: a.unfold(-1, 3, 1), [(2, 5)], set()),
    # (1-d inputs: as_strided reads the storage, which a non-contiguous layout orders otherwise)
    ("as_strided_overlap", lambda T, a: a.as_strided((3, 2), (1, 2)), [(6,)], set()),
    ("as_strided_offset", lambda T, a: a.as_strided((2, 2), (2, 1), 1), [(6,)], set()),
    ("select", lambda T, a: a.select(1, -1), [(2, 3, 4)], set()),
    ("select_scatter", lambda T, a, b: T.select_scatter(a, b, 1, 0), [(2, 3), (2,)], set()),
    ("slice_scatter", lambda T, a, b: a.slice_scatter(b, 1, 0, 3, 2), [(2, 4), (2, 2)], set()),
    ("diagonal_scatter", lambda T, a, b: T.diagonal_scatter(a, b, 1), [(3, 4), (3,)], set()),
    ("diagonal_scatter_dims", lambda T, a, b: a.diagonal_scatter(b, -1, 2, 0), [(3, 2, 4), (2, 3)], set()),
    ("split_with_sizes", lambda T, a: a.split_with_sizes([1, 3], 1)[1], [(2, 4)], set()),
    ("sum_to_size", lambda T, a: a.sum_to_size(3, 1), [(2, 3, 4)], set()),
    ("masked_scatter", lambda T, a, b: a.masked_scatter(a > 0, b), [M, (7,)], {AWAY}),
    ("masked_scatter_bcast", lambda T, a, b: T.masked_scatter(a, T.tensor([True, False, True]), b), [M, (2, 2)],
     set()),
    ("masked_scatter_", lambda T, a, b: (a * 1).masked_scatter_(a < 0, b), [M, (6,)], {AWAY}),
    ("fill_diagonal_", lambda T, a: (a * 1).fill_diagonal_(2.0), [(3, 4)], set()),
    ("fill_diagonal_wrap", lambda T, a: (a * 1).fill_diagonal_(-1.0, wrap=True), [(7, 3)], set()),
    ("argwhere", lambda T, a: T.argwhere(a > 0).float(), [(3, 4)], {NOGRAD}),
    ("renorm", lambda T, a: a.renorm(2, 0, 1.0), [(3, 4)], set()),
    ("renorm_p1_dim1", lambda T, a: T.renorm(a, 1, 1, 1.5), [(4, 3)], {AWAY}),
    ("renorm_", lambda T, a: (a * 1).renorm_(3, -1, 0.8), [(2, 3, 2)], {AWAY}),
    ("dist", lambda T, a, b: a.dist(b), [M, S], set()),
    ("dist_p3", lambda T, a, b: T.dist(a, b, 3), [M, M], set()),
    ("quantile", lambda T, a: a.quantile(0.3), [(3, 4)], set()),
    ("quantile_dim_tensor_q", lambda T, a: a.quantile(T.tensor([0.0, 0.25, 0.6, 1.0], dtype=a.dtype), dim=1,
                                                        keepdim=True), [(2, 5)], set()),
    ("quantile_lower", lambda T, a: T.quantile(a, 0.4, 0, interpolation="lower"), [(4, 3)], set()),
    ("quantile_higher", lambda T, a: a.quantile(0.4, -1, interpolation="higher"), [(2, 4)], set()),
    ("quantile_midpoint", lambda T, a: a.quantile(0.55, 1, interpolation="midpoint"), [(2, 3, 2)], set()),
    ("quantile_nearest", lambda T, a: a.quantile(T.tensor([0.1, 0.7], dtype=a.dtype), interpolation="nearest"),
     [(2, 3)], set()),
    ("quantile_nan", lambda T, a: a.masked_fill(a > 1.0, math.nan).quantile(0.5, 1).nan_to_num(7.0), [(4, 5)],
     set()),
    ("nanquantile", lambda T, a: a.masked_fill(a > 0.8, math.nan).nanquantile(0.4, 1), [(3, 6)], set()),
    ("cov", lambda T, a: a.cov(), [(3, 5)], set()),
    ("cov_1d", lambda T, a: T.cov(a, correction=0), [(5,)], set()),
    ("cov_weights", lambda T, a, w: T.cov(a, fweights=T.tensor([1, 2, 1, 3]), aweights=w.abs() + 0.5),
     [(2, 4), (4,)], set()),
    ("corrcoef", lambda T, a: a.corrcoef()[0, 1:], [(3, 5)], set()),
    ("trapezoid", lambda T, a: T.trapezoid(a), [(2, 5)], set()),
    ("trapezoid_x", lambda T, a, x: T.trapezoid(a, x, dim=0), [(4, 3), (4,)], set()),
    ("trapezoid_dx", lambda T, a: T.trapezoid(a, dx=0.5, dim=1), [(2, 3, 2)], set()),
    ("trapz", lambda T, a, x: T.trapz(a, x), [(2, 4), (2, 4)], set()),
    ("cumulative_trapezoid", lambda T, a: T.cumulative_trapezoid(a, dx=2.0), [(2, 5)], set()),
    ("cumulative_trapezoid_x", lambda T, a, x: T.cumulative_trapezoid(a, x, dim=0), [(3, 2), (3, 2)], set()),
    ("vander", lambda T, a: T.vander(a), [(4,)], {NOGRAD}),
    ("vander_n_inc", lambda T, a: T.vander(a, N=3, increasing=True), [(2,)], {NOGRAD}),
    ("vander_int", lambda T, a: T.vander((a * 5).long(), 3).float(), [(3,)], {NOGRAD}),
    ("index_reduce_prod", lambda T, a, s: a.index_reduce(0, T.tensor([0, 2, 0]), s, "prod"), [(3, 2), (3, 2)],
     set()),
    ("index_reduce_mean", lambda T, a, s: a.index_reduce(1, T.tensor([1, 1, 0, 2]), s, "mean",
                                                         include_self=False), [(2, 3), (2, 4)], set()),
    ("index_reduce_amax", lambda T, a, s: T.index_reduce(a, 0, T.tensor([1, 0]), s, "amax"), [(3, 2), (2, 2)],
     set()),
    ("index_reduce_amin_", lambda T, a, s: (a * 1).index_reduce_(0, T.tensor([1, 1]), s, "amin",
                                                                  include_self=False), [(3, 2), (2, 2)], set()),
    # fft (complex results seen as real numbers: view_as_real, abs, parts; complex inputs built as a + 1j b;
    # resolve_conj, as PyTorch returns some results as lazy conjugates)
    ("fft_fft", lambda T, a: T.view_as_real(T.fft.fft(a)), [M], set()),
    ("fft_ifft_n_ortho", lambda T, a: T.view_as_real(T.fft.ifft(a, n=5, norm="ortho").resolve_conj()), [M],
     set()),
    ("fft_fft_complex", lambda T, a: T.view_as_real(T.fft.fft(a[0] + 1j * a[1], dim=0)), [(2, 4, 3)], set()),
    ("fft_rfft_abs", lambda T, a: T.fft.rfft(a).abs(), [(2, 6)], set()),
    ("fft_irfft_rfft", lambda T, a: T.fft.irfft(T.fft.rfft(a) * 2, n=5), [(2, 5)], set()),
    ("fft_irfft_complex", lambda T, a: T.fft.irfft(a[0] + 1j * a[1], norm="forward"), [(2, 3, 4)], set()),
    ("fft_hfft", lambda T, a: T.fft.hfft(a[0] + 1j * a[1], n=6), [(2, 4)], set()),
    ("fft_ihfft", lambda T, a: T.fft.ihfft(a).resolve_conj().imag, [(3, 5)], set()),
    ("fft_fft2", lambda T, a: T.view_as_real(T.fft.fft2(a, s=(3, 4))), [(2, 2, 3)], set()),
    ("fft_ifftn_complex", lambda T, a: (T.fft.ifftn(a[0] - 2j * a[1], dim=(0, 1)) * (1 + 1j)).real, [(2, 3, 4)],
     set()),
    ("fft_rfftn", lambda T, a: T.view_as_real(T.fft.rfftn(a, dim=(0, 2), norm="ortho")), [(2, 3, 4)], set()),
    ("fft_irfftn", lambda T, a: T.fft.irfftn(T.fft.rfftn(a), s=(3, 4)), [(3, 4)], set()),
    ("fft_rfft2_sq", lambda T, a: T.fft.rfft2(a).abs() ** 2, [(3, 4)], set()),
    ("fft_ihfftn", lambda T, a: T.fft.ihfftn(a).real, [(2, 3)], set()),
    ("fft_hfftn", lambda T, a: T.fft.hfftn(a[0] - 2j * a[1]), [(2, 3, 3)], set()),
    ("fft_fftshift", lambda T, a: T.fft.fftshift(a, dim=1), [(2, 5)], set()),
    ("fft_ifftshift", lambda T, a: T.fft.ifftshift(a), [(3, 4)], set()),
    ("fft_fftfreq", lambda T, a: a * T.fft.fftfreq(3, 0.5, dtype=a.dtype), [M], set()),
    ("fft_rfftfreq", lambda T, a: a + T.fft.rfftfreq(4, dtype=a.dtype), [S], set()),
    # special
    ("special_erfcx", lambda T, a: T.special.erfcx(a), [M], set()),
    ("special_log_ndtr", lambda T, a: T.special.log_ndtr(a * 3), [M], set()),
    ("special_ndtr", lambda T, a: T.special.ndtr(a), [M], set()),
    ("special_ndtri", lambda T, a: T.special.ndtri(a * 0.5 + 0.5), [M], {UNIT}),
    ("special_i0", lambda T, a: T.special.i0(a * 3), [M], set()),
    ("special_i0e", lambda T, a: T.special.i0e(a * 3), [M], {AWAY}),
    ("special_i1", lambda T, a: T.special.i1(a * 3), [M], set()),
    ("special_i1e", lambda T, a: T.special.i1e(a * 3), [M], {AWAY}),
    ("special_entr", lambda T, a: T.special.entr(a), [M], {POS}),
    ("special_xlog1py", lambda T, a, b: T.special.xlog1py(a, b), [M, M], {POS}),
    ("special_xlogy", lambda T, a, b: T.special.xlogy(a, b), [M, M], {POS}),
    ("special_gammainc", lambda T, x: T.special.gammainc(T.tensor([[1.5, 2.0, 0.7]], dtype=x.dtype), x), [M],
     {POS}),
    ("special_gammaincc", lambda T, x: T.special.gammaincc(T.tensor([[1.5, 2.0, 0.7]], dtype=x.dtype), x * 3), [M],
     {POS}),
    ("special_zeta", lambda T, q: T.special.zeta(T.tensor([[2.5, 3.0, 4.2]], dtype=q.dtype), q), [M], {POS}),
    ("special_multigammaln", lambda T, a: T.special.multigammaln(a + 2, 3), [M], {POS}),
    ("special_expit", lambda T, a: T.special.expit(a), [M], set()),
    ("special_gammaln", lambda T, a: T.special.gammaln(a), [M], {POS}),
    ("special_psi", lambda T, a: T.special.psi(a), [M], {POS}),
    ("special_digamma", lambda T, a: T.special.digamma(a), [M], {POS}),
    ("special_polygamma", lambda T, a: T.special.polygamma(2, a), [M], {POS}),
    ("special_logit", lambda T, a: T.special.logit(a * 0.4 + 0.5), [M], {UNIT}),
    ("special_logit_eps", lambda T, a: T.special.logit(a * 0.4 + 0.5, eps=0.2), [M], {UNIT}),
    ("special_exp2", lambda T, a: T.special.exp2(a), [M], set()),
    ("special_expm1", lambda T, a: T.special.expm1(a), [M], set()),
    ("special_log1p", lambda T, a: T.special.log1p(a), [M], {POS}),
    ("special_erf", lambda T, a: T.special.erf(a), [M], set()),
    ("special_erfc", lambda T, a: T.special.erfc(a), [M], set()),
    ("special_erfinv", lambda T, a: T.special.erfinv(a), [M], {UNIT}),
    ("special_sinc", lambda T, a: T.special.sinc(a), [M], {AWAY}),
    ("special_round", lambda T, a: T.special.round(a * 3), [M], set()),
    ("special_softmax", lambda T, a: T.special.softmax(a, 1), [M], set()),
    ("special_log_softmax", lambda T, a: T.special.log_softmax(a, 0), [M], set()),
    ("special_logsumexp", lambda T, a: T.special.logsumexp(a, 1), [M], set()),
    ("special_spherical_bessel_j0", lambda T, a: T.special.spherical_bessel_j0(a * 4), [M], {NOGRAD}),
    ("special_modified_bessel_i0", lambda T, a: T.special.modified_bessel_i0(a * 4), [M], {NOGRAD}),
    ("special_modified_bessel_i1", lambda T, a: T.special.modified_bessel_i1(a * 4), [M], {NOGRAD}),
    ("special_bessel_j0", lambda T, a: T.special.bessel_j0(a * 2 + 18), [M], {NOGRAD}),
    ("special_bessel_j1", lambda T, a: T.special.bessel_j1(a * 2 + 18), [M], {NOGRAD}),
    ("special_bessel_y0", lambda T, a: T.special.bessel_y0(a * 2 + 18), [M], {NOGRAD}),
    ("special_bessel_y1", lambda T, a: T.special.bessel_y1(a * 2 + 18), [M], {NOGRAD}),
    ("special_modified_bessel_k0", lambda T, a: T.special.modified_bessel_k0(a * 4), [M], {NOGRAD, POS}),
    ("special_modified_bessel_k1", lambda T, a: T.special.modified_bessel_k1(a * 4), [M], {NOGRAD, POS}),
    ("special_scaled_modified_bessel_k0", lambda T, a: T.special.scaled_modified_bessel_k0(a * 4), [M],
     {NOGRAD, POS}),
    ("special_scaled_modified_bessel_k1", lambda T, a: T.special.scaled_modified_bessel_k1(a * 4), [M],
     {NOGRAD, POS}),
    ("special_chebyshev_t", lambda T, a: T.special.chebyshev_polynomial_t(a, 5), [M], {NOGRAD}),
    ("special_chebyshev_u", lambda T, a: T.special.chebyshev_polynomial_u(a, 4), [M], {NOGRAD}),
    ("special_chebyshev_v", lambda T, a: T.special.chebyshev_polynomial_v(a, 3), [M], {NOGRAD}),
    ("special_chebyshev_w", lambda T, a: T.special.chebyshev_polynomial_w(a, 3), [M], {NOGRAD}),
    ("special_shifted_chebyshev_t", lambda T, a: T.special.shifted_chebyshev_polynomial_t(a, 4), [M], {NOGRAD}),
    ("special_shifted_chebyshev_u", lambda T, a: T.special.shifted_chebyshev_polynomial_u(a, 4), [M], {NOGRAD}),
    ("special_shifted_chebyshev_v", lambda T, a: T.special.shifted_chebyshev_polynomial_v(a, 4), [M], {NOGRAD}),
    ("special_shifted_chebyshev_w", lambda T, a: T.special.shifted_chebyshev_polynomial_w(a, 4), [M], {NOGRAD}),
    ("special_hermite_h", lambda T, a: T.special.hermite_polynomial_h(a, 4), [M], {NOGRAD}),
    ("special_hermite_he", lambda T, a: T.special.hermite_polynomial_he(a, 4), [M], {NOGRAD}),
    ("special_laguerre_l", lambda T, a: T.special.laguerre_polynomial_l(a, 4), [M], {NOGRAD}),
    ("special_legendre_p", lambda T, a: T.special.legendre_polynomial_p(a, 4), [M], {NOGRAD}),
]


def _setitem(a: Any, v: Any) -> Any:
    b = a * 1.0
    b[:, 1] = v
    return b


def _inputs(shapes: list[tuple[int, ...]], opts: set[str], seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    xs = []
    for s in shapes:
        if POS in opts:
            x = rng.uniform(0.5, 2.0, s)
        elif UNIT in opts:
            x = rng.uniform(-0.9, 0.9, s)
        elif AWAY in opts:
            x = rng.uniform(0.3, 1.5, s) * rng.choice([-1.0, 1.0], s)
        else:
            x = rng.normal(size=s)
        xs.append(x)
    return xs


def _run_lg(fn: Any, arrays: list[np.ndarray], dtype: Any, noncontig: bool) -> tuple[Any, list[Any]]:
    ts = []
    for a in arrays:
        if noncontig and a.ndim >= 2:
            # a non-contiguous view holding the same values
            t = lg.tensor(np.ascontiguousarray(a.swapaxes(0, -1)), dtype=dtype).transpose(0, -1)
            t = t.detach().requires_grad_()
        else:
            t = lg.tensor(a, dtype=dtype, requires_grad=True)
        ts.append(t)
    return fn(lg, *ts), ts


def _numeric_grads(f: Any, xs: list[np.ndarray], r: np.ndarray, eps: float = 1e-6) -> list[np.ndarray]:
    """numeric_grads, an empty input's gradient being empty (NumPy cannot iterate over it)."""
    full = [i for i, x in enumerate(xs) if x.size]

    def some(*arrays: np.ndarray) -> np.ndarray:
        args = list(xs)
        for i, a in zip(full, arrays):
            args[i] = a
        return f(*args)
    grads = [np.zeros_like(x) for x in xs]
    for i, g in zip(full, numeric_grads(some, [xs[i] for i in full], r, eps)):
        grads[i] = g
    return grads


@pytest.mark.parametrize("layout", ["contig", "noncontig"])
@pytest.mark.parametrize("name,fn,shapes,opts", OPS, ids=[o[0] for o in OPS])
def test_grad_finite_differences(name: str, fn: Any, shapes: Any, opts: set[str], layout: str) -> None:
    xs = _inputs(shapes, opts, seed=len(name))
    out, ts = _run_lg(fn, xs, lg.float64, layout == "noncontig")
    if NOGRAD in opts or LOWPREC in opts:
        return
    rng = np.random.default_rng(1)
    r = rng.normal(size=out.shape)
    (out * lg.tensor(r)).sum().backward()

    def f(*arrays: np.ndarray) -> np.ndarray:
        with lg.no_grad():
            return np.asarray(fn(lg, *[lg.tensor(a) for a in arrays])._data, np.float64)
    num = _numeric_grads(f, [x.copy() for x in xs], r)
    for t, n in zip(ts, num):
        assert t.grad is not None, f"{name}: no gradient reached an input"
        assert t.grad.shape == t.shape
        np.testing.assert_allclose(t.grad._data, n, rtol=1e-5, atol=1e-6, err_msg=name)


@pytest.mark.skipif(torch is None, reason="PyTorch not installed")
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name,fn,shapes,opts", OPS, ids=[o[0] for o in OPS])
def test_against_torch(name: str, fn: Any, shapes: Any, opts: set[str], dtype: str) -> None:
    xs = _inputs(shapes, opts, seed=len(name) + 7)
    ldt, tdt = getattr(lg, dtype), getattr(torch, dtype)
    lts = [lg.tensor(x, dtype=ldt, requires_grad=True) for x in xs]
    tts = [torch.tensor(x, dtype=tdt, requires_grad=True) for x in xs]
    lo, to = fn(lg, *lts), fn(torch, *tts)
    assert tuple(lo.shape) == tuple(to.shape), name
    assert lo.dtype.name == str(to.dtype).replace("torch.", ""), name
    tol = dict(rtol=1e-4, atol=1e-5) if dtype == "float32" else dict(rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(lo.detach().numpy(), to.detach().numpy(), **tol, err_msg=name)
    if NOGRAD in opts:
        return
    r = np.random.default_rng(2).normal(size=tuple(to.shape))
    (lo * lg.tensor(r, dtype=ldt)).sum().backward()
    (to * torch.tensor(r, dtype=tdt)).sum().backward()
    for lt, tt in zip(lts, tts):
        np.testing.assert_allclose(lt.grad.numpy(), tt.grad.numpy(), **tol, err_msg=name)


def _weighted_grad_sum(fn: Any, arrays: list[np.ndarray], create_graph: bool) -> tuple[Any, list[Any]]:
    """sum(grad(sum(fn(x) * r)) * r2) with fixed random weights r, r2, and the inputs x."""
    ts = [lg.tensor(a, requires_grad=True) for a in arrays]
    out = fn(lg, *ts)
    r = lg.tensor(np.random.default_rng(3).normal(size=tuple(out.shape)))
    grads = lg.autograd.grad((out * r).sum(), ts, create_graph=create_graph, allow_unused=True)
    total: Any = 0.0
    for k, g in enumerate(grads):
        if g is not None:
            total = total + (g * lg.tensor(np.random.default_rng(4 + k).normal(size=tuple(g.shape)))).sum()
    return total, ts


@pytest.mark.parametrize("name,fn,shapes,opts", OPS, ids=[o[0] for o in OPS])
def test_second_derivative_finite_differences_or_raises(name: str, fn: Any, shapes: Any, opts: set[str]) -> None:
    """Every op's gradient differentiated again (create_graph=True) matches finite differences of the
    gradient, or lightgrad raises: a backward formula that computes on plain arrays must never give a
    silently constant gradient (digamma's second derivative was 0)."""
    if NOGRAD in opts or LOWPREC in opts:
        return
    xs = _inputs(shapes, opts, seed=len(name) + 11)
    try:
        total, ts = _weighted_grad_sum(fn, xs, create_graph=True)
        if not isinstance(total, lg.Tensor) or not total.requires_grad:
            second = [None] * len(ts)  # a linear op: its gradient is a constant
        else:
            second = lg.autograd.grad(total, ts, allow_unused=True)
    except RuntimeError as e:
        assert "cannot be differentiated again" in str(e), (name, e)
        return  # refused: never silently wrong

    def first(*arrays: np.ndarray) -> np.ndarray:
        return np.asarray(float(_weighted_grad_sum(fn, list(arrays), create_graph=False)[0]))
    num = _numeric_grads(first, [x.copy() for x in xs], np.ones(()), eps=1e-5)
    for h, n in zip(second, num):
        np.testing.assert_allclose(0.0 if h is None else h.detach().numpy(), n, rtol=1e-4, atol=1e-5, err_msg=name)


# reference NumPy forwards for the rows that have an obvious one (checked without PyTorch)
NUMPY_REF = {
    "add_bcast": lambda a, b: a + b, "mul": lambda a, b: a * b, "div": lambda a, b: a / b,
    "exp": np.exp, "log": np.log, "sqrt": np.sqrt, "tanh": np.tanh, "sin": np.sin,
    "sigmoid": lambda a: 1 / (1 + np.exp(-a)), "relu": lambda a: np.maximum(a, 0),
    "erf": lambda a: np.vectorize(math.erf)(a),
    "sum_dims_keep": lambda a: a.sum((0, 2), keepdims=True), "mean_dim": lambda a: a.mean((1, 2)),
    "var": lambda a: a.var(ddof=1), "std": lambda a: a.std(-1, ddof=1), "prod_dim": lambda a: a.prod(1),
    "amax_dim": lambda a: a.max(1), "logsumexp": lambda a: np.log(np.exp(a).sum(1)),
    "cumsum": lambda a: a.cumsum(1), "norm_dim": lambda a: np.linalg.norm(a, axis=1),
    "softmax": lambda a: np.exp(a) / np.exp(a).sum(-1, keepdims=True),
    "permute": lambda a: a.transpose(2, 0, 1), "repeat": lambda a: np.tile(a, (2, 1, 3)),
    "flip": lambda a: a[::-1, :, ::-1], "roll": lambda a: np.roll(a, 1, 1), "tril": np.tril,
    "getitem_2d_adv": lambda a: a[[0, 1, 1], [2, 2, 0]], "gather": lambda a: np.take_along_axis(a, IDX, 1),
    "matmul_bcast": np.matmul, "einsum_batch": lambda a, b: np.einsum("bij,bkj->bik", a, b),
    "einsum_trace": np.trace,
}


@pytest.mark.parametrize("name", sorted(NUMPY_REF))
def test_forward_against_numpy(name: str) -> None:
    _, fn, shapes, opts = next(o for o in OPS if o[0] == name)
    xs = _inputs(shapes, opts, seed=3)
    with lg.no_grad():
        got = fn(lg, *[lg.tensor(x) for x in xs]).numpy()
    np.testing.assert_allclose(got, NUMPY_REF[name](*xs), rtol=1e-6, atol=1e-9)


# ---- errors: same exception type as PyTorch, message naming what was expected and got ----------

class Exact(str):
    """An ERRORS text that is the whole message: lightgrad's, and PyTorch's where it is installed,
    both raised as exactly that built-in exception type."""


ERRORS: list[tuple[str, Any, type[Exception], str]] = [
    ("add_shape", lambda T: T.ones(2, 3) + T.ones(2, 4), RuntimeError, "size of tensor a (3)"),
    ("matmul_shape", lambda T: T.ones(2, 3) @ T.ones(4, 5), RuntimeError, "2x3 and 4x5"),
    ("matmul_0d", lambda T: T.matmul(T.tensor(1.0), T.ones(2)), RuntimeError, "1D"),
    # PyTorch promotes neither operand of a matrix product: each kernel says so in its words
    ("matmul_dtypes_mm", lambda T: T.ones(2, 3) @ T.ones(3, 2, dtype=T.float64), RuntimeError,
     Exact("expected m1 and m2 to have the same dtype, but got: float != double")),
    ("matmul_dtypes_int", lambda T: T.ones(4, 2, 3, dtype=T.int64) @ T.ones(3, 2), RuntimeError,
     Exact("expected m1 and m2 to have the same dtype, but got: long int != float")),
    ("matmul_dtypes_dot", lambda T: T.ones(3).dot(T.ones(3, dtype=T.float64)), RuntimeError,
     Exact("dot : expected both vectors to have same dtype, but found Float and Double")),
    ("matmul_dtypes_mv", lambda T: T.ones(2, 3).mv(T.ones(3, dtype=T.float64)), RuntimeError,
     Exact("addmv input tensors must have the same dtype, but got Double, Float, and Double")),
    ("matmul_dtypes_bmm", lambda T: T.ones(4, 2, 3).bmm(T.ones(4, 3, 2, dtype=T.float64)), RuntimeError,
     Exact("expected scalar type Float but found Double")),
    ("matmul_sizes_before_dtypes", lambda T: T.ones(2, 4, dtype=T.float64) @ T.ones(3, 2), RuntimeError,
     Exact("mat1 and mat2 shapes cannot be multiplied (2x4 and 3x2)")),
    ("mv_sizes", lambda T: T.ones(2, 4) @ T.ones(3), RuntimeError, Exact("size mismatch, got input (2), mat (2x4), vec (3)")),
    ("dim_range", lambda T: T.ones(2, 3).sum(2), IndexError, "range"),
    ("dim_range_neg", lambda T: T.ones(2, 3).softmax(-3), IndexError, "range"),
    ("item_many", lambda T: T.ones(2).item(), RuntimeError, "2 elements"),
    ("reshape_bad", lambda T: T.ones(2, 3).reshape(5), RuntimeError, "[5]"),
    ("reshape_negative", lambda T: T.ones(6).reshape(-2, 3), RuntimeError,
     Exact("invalid shape dimension -2 at index 0 of shape [-2, 3]")),
    ("view_negative", lambda T: T.ones(6).view(3, -3), RuntimeError,
     Exact("invalid shape dimension -3 at index 1 of shape [3, -3]")),
    ("view_two_inferred", lambda T: T.ones(6).view(-1, -1), RuntimeError, Exact("only one dimension can be inferred")),
    ("view_noncontiguous", lambda T: T.ones(3, 4).t().view(12), RuntimeError,
     Exact("view size is not compatible with input tensor's size and stride (at least one dimension spans across "
           "two contiguous subspaces). Use .reshape(...) instead.")),
    ("index_oob", lambda T: T.ones(2, 3)[5], IndexError, "5"),
    ("index_float", lambda T: T.ones(3)[T.tensor([1.0])], IndexError, "indices"),
    ("too_many_idx", lambda T: T.ones(3)[0, 0], IndexError, "dimension"),
    ("cat_shape", lambda T: T.cat([T.ones(2, 3), T.ones(2, 4)]), RuntimeError, "Sizes of tensors"),
    ("stack_shape", lambda T: T.stack([T.ones(2), T.ones(3)]), RuntimeError, "equal size"),
    ("expand_bad", lambda T: T.ones(2, 3).expand(4, 3), RuntimeError, "must match"),
    ("backward_nonscalar", lambda T: T.ones(2, requires_grad=True).mul(2).backward(), RuntimeError, "scalar"),
    ("backward_nograd", lambda T: T.ones(2).sum().backward(), RuntimeError, "does not require grad"),
    ("bool_many", lambda T: bool(T.ones(2)), RuntimeError, "ambiguous"),
    ("leaf_inplace", lambda T: T.ones(2, requires_grad=True).add_(1), RuntimeError, "leaf"),
    ("int_requires_grad", lambda T: T.ones(2, dtype=T.int64).requires_grad_(), RuntimeError, "floating point"),
    ("numpy_requires_grad", lambda T: T.ones(2, requires_grad=True).numpy(), RuntimeError, "requires grad"),
    ("gather_dims", lambda T: T.ones(2, 3).gather(1, T.tensor([0, 1])), RuntimeError, "same number of dimensions"),
    ("gather_float_index", lambda T: T.ones(2, 3).gather(1, T.tensor([[0.0]])), RuntimeError, "int64"),
    ("mean_int", lambda T: T.ones(2, dtype=T.int64).mean(), RuntimeError, "floating point"),
    ("bmm_dims", lambda T: T.bmm(T.ones(2, 3), T.ones(3, 2)), RuntimeError, "3D"),
    ("dot_dims", lambda T: T.dot(T.ones(2, 2), T.ones(2)), RuntimeError, "1D"),
    ("setitem_shape", lambda T: T.ones(2, 3).__setitem__(0, T.ones(4)), RuntimeError, "shape"),
    ("masked_fill_nonbool", lambda T: T.ones(2).masked_fill(T.ones(2), 0.0), RuntimeError, "bool"),
    ("cuda", lambda T: T.ones(2).to("cuda"), RuntimeError, ""),
    ("inplace_int_from_float", lambda T: T.ones(2, dtype=T.int64).add_(T.ones(2) * 0.5), RuntimeError, "can't be cast"),
    ("second_backward", lambda T: _twice(T), RuntimeError, "second time"),
    # sorting, scans, indexing (compat)
    ("topk_k_range", lambda T: T.ones(2, 3).topk(4), RuntimeError, "k out of range"),
    ("kthvalue_k_range", lambda T: T.ones(2, 3).kthvalue(0), RuntimeError, "out of range for dimension 1"),
    ("sort_dim_range", lambda T: T.ones(2, 3).sort(2), IndexError, "got 2"),
    ("cumprod_dim_range", lambda T: T.cumprod(T.ones(2, 3), -3), IndexError, "got -3"),
    ("median_empty_dim", lambda T: T.ones(2, 0).median(1), IndexError, "non-zero size"),
    ("mode_empty", lambda T: T.ones(0).mode(), IndexError, "non-zero size"),
    ("nanmean_int", lambda T: T.ones(2, dtype=T.int64).nanmean(), RuntimeError, "floating point"),
    ("index_add_float_index", lambda T: T.ones(2, 3).index_add(1, T.tensor([0.0]), T.ones(2, 1)), RuntimeError,
     "int32/int64"),
    ("index_add_count", lambda T: T.ones(2, 3).index_add(1, T.tensor([0, 1]), T.ones(2, 3)), RuntimeError,
     "Number of indices (2)"),
    ("index_add_dtype", lambda T: T.ones(3).index_add(0, T.tensor([0]), T.ones(1, dtype=T.float64)), RuntimeError,
     "same scalar type"),
    ("index_copy_oob", lambda T: T.ones(3).index_copy(0, T.tensor([3]), T.ones(1)), IndexError, "out of bounds"),
    ("scatter_reduce_bad", lambda T: T.ones(2).scatter_reduce(0, T.tensor([0]), T.ones(1), "foo"), RuntimeError,
     "got foo"),
    ("take_oob", lambda T: T.ones(2, 3).take(T.tensor([6])), IndexError, "index 6 on a tensor of 6"),
    ("bincount_float", lambda T: T.ones(3).bincount(), NotImplementedError, "Float"),
    ("bincount_negative", lambda T: T.tensor([-1, 2]).bincount(), RuntimeError, "non-negative"),
    ("searchsorted_side", lambda T: T.searchsorted(T.ones(3), T.ones(2), side="middle"), RuntimeError, "middle"),
    ("searchsorted_shape", lambda T: T.searchsorted(T.ones(2, 3), T.ones(3, 1)), RuntimeError, "[2, 3]"),
    # more math, BLAS-style, shapes, linalg (compat)
    ("atan2_shape", lambda T: T.atan2(T.ones(2), T.ones(3)), RuntimeError, "size of tensor a (2)"),
    ("addmm_1d", lambda T: T.addmm(T.ones(2), T.ones(2), T.ones(2, 2)), RuntimeError, "mat1 must be a matrix"),
    ("addmm_input", lambda T: T.addmm(T.ones(3), T.ones(2, 3), T.ones(3, 4)), RuntimeError, "expanded size"),
    ("addmm_shapes", lambda T: T.addmm(T.ones(2, 2), T.ones(2, 3), T.ones(2, 2)), RuntimeError, "2x3 and 2x2"),
    ("addr_2d", lambda T: T.addr(T.ones(2, 2), T.ones(2, 1), T.ones(2)), RuntimeError, "Expected 1-D argument vec1"),
    ("addcdiv_int", lambda T: T.addcdiv(T.ones(2), T.ones(2, dtype=T.int64), T.ones(2, dtype=T.int64)),
     RuntimeError, "Integer division"),
    ("diff_0d", lambda T: T.tensor(1.0).diff(), RuntimeError, "one-dimensional"),
    ("rot90_same", lambda T: T.ones(2, 2).rot90(1, (0, 0)), RuntimeError, "to be different"),
    ("rot90_1d", lambda T: T.ones(2).rot90(), RuntimeError, "total dims >= 2"),
    ("hsplit_uneven", lambda T: T.ones(2, 5).hsplit(2), RuntimeError, "not divisible"),
    ("vsplit_1d", lambda T: T.ones(4).vsplit(2), RuntimeError, "at least 2 dimension"),
    ("cross_len", lambda T: T.cross(T.ones(2, 2), T.ones(2, 2), dim=1), RuntimeError, "must have length 3"),
    ("tensordot_sizes", lambda T: T.tensordot(T.ones(2, 3), T.ones(4, 2), dims=1), RuntimeError,
     "contracted dimensions need to match"),
    ("block_diag_3d", lambda T: T.block_diag(T.ones(2), T.ones(1, 1, 1)), RuntimeError, "2 or fewer dimensions"),
    ("diag_embed_same", lambda T: T.ones(3).diag_embed(0, 0, 0), RuntimeError, "cannot be identical"),
    ("heaviside_dtypes", lambda T: T.heaviside(T.ones(2), T.ones(2, dtype=T.float64)), RuntimeError,
     "different dtypes"),
    ("float_power_inplace", lambda T: T.ones(2).float_power_(2), RuntimeError, "Double"),
    ("asin_inplace_int", lambda T: T.ones(2, dtype=T.int64).asin_(), RuntimeError, "can't be cast"),
    ("is_nonzero_many", lambda T: T.ones(2).is_nonzero(), RuntimeError, "more than one value"),
    ("positive_bool", lambda T: T.positive(T.ones(2, dtype=T.bool)), RuntimeError, "bool"),
    ("inv_singular", lambda T: T.linalg.inv(T.ones(3, 3)), RuntimeError, "singular"),
    ("inv_batch_singular", lambda T: T.linalg.inv(T.stack([T.eye(2), T.ones(2, 2)])), RuntimeError,
     "(Batch element 1)"),
    ("inv_nonsquare", lambda T: T.linalg.inv(T.ones(2, 3)), RuntimeError, "2 by 3 matrices"),
    ("inv_int", lambda T: T.linalg.inv(T.ones(2, 2, dtype=T.int64)), RuntimeError, "floating point"),
    ("det_1d", lambda T: T.linalg.det(T.ones(3)), RuntimeError, "at least 2 dimensions"),
    ("solve_singular", lambda T: T.linalg.solve(T.ones(2, 2), T.ones(2)), RuntimeError, "singular"),
    ("solve_shapes", lambda T: T.linalg.solve(T.eye(2), T.ones(3, 1)), RuntimeError, "Incompatible shapes"),
    ("cholesky_not_pd", lambda T: T.linalg.cholesky(T.tensor([[1.0, 2.0], [2.0, 1.0]])), RuntimeError,
     "leading minor of order 2 is not positive-definite"),
    ("matrix_norm_ord", lambda T: T.linalg.matrix_norm(T.ones(2, 2), ord=3), RuntimeError, "not supported"),
    ("vector_norm_int", lambda T: T.linalg.vector_norm(T.ones(2, dtype=T.int64)), RuntimeError, "floating point"),
    # tensor method gaps (compat 2)
    ("bitwise_and_float", lambda T: T.ones(2).bitwise_and(T.ones(2)), NotImplementedError, "not implemented for"),
    ("bitwise_not_float", lambda T: T.bitwise_not(T.ones(2)), NotImplementedError, "bitwise_not"),
    ("bitwise_and_float_scalar", lambda T: T.ones(2, dtype=T.int64).bitwise_and(1.5), NotImplementedError,
     "bitwise_and"),
    ("lshift_bool", lambda T: T.ones(2, dtype=T.bool).bitwise_left_shift(T.ones(2, dtype=T.bool)),
     NotImplementedError, "'Bool'"),
    ("gcd_float", lambda T: T.gcd(T.ones(2, dtype=T.int64), T.ones(2)), NotImplementedError, "gcd"),
    ("nextafter_int", lambda T: T.nextafter(T.ones(2, dtype=T.int64), T.ones(2, dtype=T.int64)),
     NotImplementedError, "nextafter"),
    ("frexp_int", lambda T: T.ones(3, dtype=T.int64).frexp(), RuntimeError, "floating-point dtypes"),
    ("true_divide__int", lambda T: T.ones(2, dtype=T.int64).true_divide_(2), RuntimeError, "can't be cast"),
    ("sin__int", lambda T: T.ones(2, dtype=T.int64).sin_(), RuntimeError, "can't be cast"),
    ("clamp_min__leaf", lambda T: T.ones(2, requires_grad=True).clamp_min_(0.5), RuntimeError, "leaf"),
    ("eq__shape", lambda T: T.ones(2).eq_(T.ones(3, 2)), RuntimeError, "doesn't match the broadcast shape"),
    ("unfold_size", lambda T: T.ones(3).unfold(0, 5, 1), RuntimeError, "is 3 but size is 5"),
    ("unfold_step", lambda T: T.ones(4).unfold(0, 2, 0), RuntimeError, "step is 0"),
    ("as_strided_out_of_bounds", lambda T: T.ones(4).as_strided((3,), (2,)), RuntimeError,
     "requiring a storage size of 20 are out of bounds for storage of size 16"),
    ("as_strided_negative_stride", lambda T: T.ones(4).as_strided((2,), (-1,), 3), RuntimeError,
     "Negative strides are not supported"),
    ("as_strided_lengths", lambda T: T.ones(4).as_strided((2, 1), (1,)), RuntimeError,
     "mismatch in length of strides and shape"),
    ("select_range", lambda T: T.ones(2, 3).select(1, 3), IndexError, "index 3 out of range"),
    ("select_scatter_size", lambda T: T.ones(3, 3).select_scatter(T.ones(2), 0, 0), RuntimeError,
     "src size = [2], slice size = [3]"),
    ("slice_scatter_size", lambda T: T.ones(3, 3).slice_scatter(T.ones(2, 3), 0, 0, 1), RuntimeError,
     "slice size = [1, 3]"),
    ("diagonal_scatter_size", lambda T: T.ones(3, 3).diagonal_scatter(T.ones(2)), RuntimeError,
     "src size = [2], slice size = [3]"),
    ("diagonal_same_dims", lambda T: T.ones(3, 3).diagonal(0, 1, -1), RuntimeError, "cannot be identical"),
    ("split_with_sizes_sum", lambda T: T.ones(4).split_with_sizes([1, 2]), RuntimeError, "sum exactly to 4"),
    ("sum_to_size_bad", lambda T: T.ones(2, 3).sum_to_size(2), RuntimeError, "is not expandable to size"),
    ("masked_scatter_few", lambda T: T.ones(3).masked_scatter(T.tensor([True, True, False]), T.ones(1)),
     RuntimeError, "Number of elements of source < number of ones in mask"),
    ("masked_scatter_mask", lambda T: T.ones(3).masked_scatter(T.ones(3), T.ones(3)), RuntimeError,
     "only supports boolean masks"),
    ("masked_scatter_dtype", lambda T: T.ones(3).masked_scatter(T.ones(3) > 0, T.ones(3, dtype=T.float64)),
     RuntimeError, "same dtypes"),
    ("fill_diagonal_1d", lambda T: T.ones(3).fill_diagonal_(0), RuntimeError, "dimensions must larger than 1"),
    ("fill_diagonal_unequal", lambda T: T.ones(2, 2, 3).fill_diagonal_(0), RuntimeError, "equal length"),
    ("renorm_p", lambda T: T.ones(3, 2).renorm(0, 0, 1.0), RuntimeError, "non-positive-norm"),
    ("renorm_maxnorm", lambda T: T.ones(3, 2).renorm(2, 0, -1.0), RuntimeError, "maxnorm to be >= 0"),
    ("quantile_q", lambda T: T.ones(3).quantile(1.5), RuntimeError, "in the range [0, 1]"),
    ("quantile_q_tensor", lambda T: T.ones(3).quantile(T.tensor([0.5, -0.1])), RuntimeError, "in the range [0, 1]"),
    ("quantile_int", lambda T: T.ones(3, dtype=T.int64).quantile(0.5), RuntimeError, "float or double"),
    ("quantile_q_dtype", lambda T: T.ones(3).quantile(T.tensor([0.5], dtype=T.float64)), RuntimeError,
     "same dtype as the input"),
    ("quantile_empty", lambda T: T.ones(0).nanquantile(0.5), RuntimeError, "non-empty"),
    ("quantile_q_2d", lambda T: T.ones(3).quantile(T.ones(1, 1) * 0.5), RuntimeError, "scalar or 1D"),
    ("quantile_interpolation", lambda T: T.ones(3).quantile(0.5, interpolation="foo"), RuntimeError,
     "but got foo"),
    ("cov_3d", lambda T: T.cov(T.ones(2, 2, 2)), RuntimeError, "two or fewer dimensions"),
    ("cov_fweights_float", lambda T: T.cov(T.ones(2, 3), fweights=T.ones(3)), RuntimeError, "integral dtype"),
    ("cov_aweights_numel", lambda T: T.cov(T.ones(2, 3), aweights=T.ones(2)), RuntimeError, "2 != 3"),
    ("trapezoid_x_len", lambda T: T.trapezoid(T.ones(3), T.ones(2)), RuntimeError, "one `x` value"),
    ("vander_2d", lambda T: T.vander(T.ones(2, 2)), RuntimeError, "one-dimensional"),
    ("vander_neg", lambda T: T.vander(T.ones(2), -1), RuntimeError, "non-negative"),
    ("unravel_index_float", lambda T: T.unravel_index(T.tensor([1.0]), (2, 3)), TypeError, "integer dtype"),
    ("index_reduce_reduce", lambda T: T.ones(3).index_reduce(0, T.tensor([0]), T.ones(1), "sum"), RuntimeError,
     "prod, mean, amax or amin but got sum"),
    ("index_reduce_index_dtype", lambda T: T.ones(3).index_reduce(0, T.tensor([0.0]), T.ones(1), "prod"),
     RuntimeError, "int32/int64"),
    ("index_reduce_count", lambda T: T.ones(3).index_reduce(0, T.tensor([0, 1]), T.ones(1), "prod"), RuntimeError,
     "Number of indices (2)"),
    # PyTorch's exact words (Exact: the whole message, lightgrad's and PyTorch's, and the same
    # built-in exception type): where lightgrad used to accept, or said it in NumPy's words
    ("narrow_past_end", lambda T: T.ones(2, 3).narrow(1, 1, 5), RuntimeError,
     Exact("start (1) + length (5) exceeds dimension size (3).")),
    ("narrow_neg_start_past_end", lambda T: T.ones(2, 3).narrow(1, -2, 3), RuntimeError,
     Exact("start (1) + length (3) exceeds dimension size (3).")),
    ("narrow_start_range", lambda T: T.ones(2, 3).narrow(1, -4, 1), IndexError,
     Exact("start out of range (expected to be in range of [-3, 3], but got -4)")),
    ("narrow_neg_length", lambda T: T.ones(2, 3).narrow(1, 0, -1), RuntimeError,
     Exact("narrow(): length must be non-negative.")),
    ("narrow_0d", lambda T: T.tensor(1.0).narrow(0, 0, 1), RuntimeError,
     Exact("narrow() cannot be applied to a 0-dim tensor.")),
    ("narrow_copy_past_end", lambda T: T.ones(3).narrow_copy(0, 2, 2), RuntimeError,
     Exact("start (2) + length (2) exceeds dimension size (3).")),
    ("split_negative", lambda T: T.ones(2, 3).split(-1), RuntimeError,
     Exact("split expects split_size be non-negative, but got split_size=-1")),
    ("split_zero", lambda T: T.ones(2, 3).split(0), RuntimeError,
     Exact("split_size can only be 0 if dimension size is 0, but got dimension size of 2")),
    ("split_sizes_negative", lambda T: T.ones(2, 3).split([4, -1], 1), RuntimeError,
     Exact("split_with_sizes expects split_sizes have only non-negative entries, but got split_sizes=[4, -1]")),
    ("split_0d", lambda T: T.tensor(1.0).split(1), RuntimeError, Exact("split expects at least a 1-dimensional tensor")),
    ("split_float", lambda T: T.ones(4).split(1.5), TypeError,
     Exact("split_with_sizes(): argument 'split_sizes' (position 2) must be tuple of ints, not float")),
    ("chunk_zero", lambda T: T.ones(2, 3).chunk(0), RuntimeError,
     Exact("chunk expects `chunks` to be greater than 0, got: 0")),
    ("chunk_0d", lambda T: T.tensor(1.0).chunk(1), RuntimeError, Exact("chunk expects at least a 1-dimensional tensor")),
    ("tensor_split_zero", lambda T: T.ones(2, 3).tensor_split(0), RuntimeError,
     Exact("number of sections must be larger than 0, got 0")),
    ("tensor_split_0d", lambda T: T.tensor(1.0).tensor_split(1), RuntimeError,
     Exact("tensor_split expected at least a 1-dimensional tensor, but got a tensor with 0 dims")),
    ("floordiv_int_zero", lambda T: T.tensor([1, 2]) // T.tensor([0, 1]), RuntimeError, Exact("ZeroDivisionError")),
    ("mod_int_zero_scalar", lambda T: T.tensor([1, 2]) % 0, RuntimeError, Exact("ZeroDivisionError")),
    ("rfloordiv_int_zero", lambda T: 5 // T.tensor([0, 1], dtype=T.int32), RuntimeError, Exact("ZeroDivisionError")),
    ("fmod_int_zero", lambda T: T.fmod(T.tensor([3], dtype=T.uint8), 0), RuntimeError, Exact("ZeroDivisionError")),
    ("remainder__int_zero", lambda T: T.tensor([3]).remainder_(T.tensor(0)), RuntimeError,
     Exact("ZeroDivisionError")),
    ("div_floor_int_zero", lambda T: T.tensor([4]).div(0, rounding_mode="floor"), RuntimeError,
     Exact("ZeroDivisionError")),
    ("div_trunc_int_zero", lambda T: T.div(T.tensor([4]), T.tensor([0]), rounding_mode="trunc"), RuntimeError,
     Exact("ZeroDivisionError")),
    ("sum_0d_dim", lambda T: T.tensor(1.0).sum(1), IndexError,
     Exact("Dimension out of range (expected to be in range of [-1, 0], but got 1)")),
    ("mean_0d_dim", lambda T: T.tensor(1.0).mean(-2), IndexError,
     Exact("Dimension out of range (expected to be in range of [-1, 0], but got -2)")),
    ("prod_0d_dim", lambda T: T.tensor(1.0).prod(1), IndexError,
     Exact("Dimension out of range (expected to be in range of [-1, 0], but got 1)")),
    ("amax_0d_dims", lambda T: T.tensor(1.0).amax((0, 1)), IndexError,
     Exact("Dimension out of range (expected to be in range of [-1, 0], but got 1)")),
    ("all_0d_dim", lambda T: T.tensor(True).all(1), IndexError,
     Exact("Dimension out of range (expected to be in range of [-1, 0], but got 1)")),
    ("transpose_0d", lambda T: T.tensor(1.0).transpose(0, 1), IndexError,
     Exact("Dimension out of range (expected to be in range of [-1, 0], but got 1)")),
    ("flatten_0d_dim", lambda T: T.tensor(1.0).flatten(0, 1), IndexError,
     Exact("Dimension out of range (expected to be in range of [-1, 0], but got 1)")),
    ("softmax_0d_dim", lambda T: T.tensor(1.0).softmax(1), IndexError,
     Exact("Dimension out of range (expected to be in range of [-1, 0], but got 1)")),
    ("cumsum_0d_dim", lambda T: T.tensor(1.0).cumsum(-2), IndexError,
     Exact("Dimension out of range (expected to be in range of [-1, 0], but got -2)")),
    ("movedim_0d_dim", lambda T: T.tensor(1.0).movedim(0, 1), IndexError,
     Exact("Dimension out of range (expected to be in range of [-1, 0], but got 1)")),
    ("cummax_0d_dim", lambda T: T.tensor(1.0).cummax(1), IndexError,
     Exact("cummax(): Expected reduction dim -1 or 0 for scalar but got 1")),
    ("dims_repeated", lambda T: T.ones(2, 3).sum((0, -2)), RuntimeError,
     Exact("dim 0 appears multiple times in the list of dims")),
    ("size_0d", lambda T: T.tensor(1.0).size(-1), IndexError, Exact("Dimension specified as -1 but tensor has no dimensions")),
    ("unbind_0d", lambda T: T.tensor(1.0).unbind(-1), IndexError,
     Exact("Dimension specified as 0 but tensor has no dimensions")),
    ("roll_0d", lambda T: T.tensor(1.0).roll(1, 0), IndexError, Exact("Dimension specified as 0 but tensor has no dimensions")),
    ("select_0d", lambda T: T.tensor(1.0).select(0, 0), IndexError, Exact("select() cannot be applied to a 0-dim tensor.")),
    ("renorm_1d", lambda T: T.ones(3).renorm(2, 0, 1.0), RuntimeError,
     Exact("renorm: input needs at least 2 dimensions, got 1 dimensions")),
    ("movedim_repeated", lambda T: T.ones(2, 3, 4).movedim((0, 0), (1, 2)), RuntimeError,
     Exact("movedim: repeated dim in `source` ([0, 0])")),
    ("movedim_lengths", lambda T: T.ones(2, 3, 4).movedim((0, 1), (1,)), RuntimeError,
     Exact("movedim: Invalid source or destination dims: source ([0, 1] dims) should contain the same number of "
           "dims as destination ([1] dims)")),
    ("cat_0d", lambda T: T.cat([T.tensor(1.0), T.tensor(2.0)]), RuntimeError,
     Exact("zero-dimensional tensor (at position 0) cannot be concatenated")),
    ("compare_shapes", lambda T: T.ones(2) == T.ones(3), RuntimeError,
     Exact("The size of tensor a (2) must match the size of tensor b (3) at non-singleton dimension 0")),
    ("floordiv_shapes", lambda T: T.tensor([1, 2]) // T.tensor([1, 2, 3]), RuntimeError,
     Exact("The size of tensor a (2) must match the size of tensor b (3) at non-singleton dimension 0")),
    ("linear_double_input", lambda T: T.nn.Linear(3, 2)(T.ones(2, 3, dtype=T.float64)), RuntimeError,
     Exact("mat1 and mat2 must have the same dtype, but got Double and Float")),
    ("linear_long_input", lambda T: T.nn.functional.linear(T.ones(4, 2, 3, dtype=T.int64), T.ones(2, 3), T.ones(2)),
     RuntimeError, Exact("mat1 and mat2 must have the same dtype, but got Long and Float")),
    ("linear_bias_dtype", lambda T: T.nn.functional.linear(T.ones(2, 3), T.ones(2, 3), T.ones(2, dtype=T.float64)),
     RuntimeError, Exact("self and mat2 must have the same dtype, but got Double and Float")),
    ("linear_no_bias_dtype", lambda T: T.nn.functional.linear(T.ones(3, dtype=T.float64), T.ones(2, 3)), RuntimeError,
     Exact("expected m1 and m2 to have the same dtype, but got: double != float")),
    ("linear_no_bias_shape_first", lambda T: T.nn.functional.linear(T.ones(2, 4, dtype=T.float64), T.ones(2, 3)),
     RuntimeError, Exact("mat1 and mat2 shapes cannot be multiplied (2x4 and 3x2)")),
    ("softmax_int", lambda T: T.tensor([1, 2]).softmax(0), NotImplementedError,
     Exact("\"softmax_lastdim_kernel_impl\" not implemented for 'Long'")),
    ("softmax_int_dim0", lambda T: T.nn.functional.softmax(T.ones(2, 3, dtype=T.int32), 0), NotImplementedError,
     Exact("\"softmax_kernel_impl\" not implemented for 'Int'")),
    ("log_softmax_int", lambda T: T.tensor([1, 2]).log_softmax(-1), NotImplementedError,
     Exact("\"log_softmax_lastdim_kernel_impl\" not implemented for 'Long'")),
    ("softmax_float_to_int", lambda T: T.ones(2).softmax(0, dtype=T.int64), NotImplementedError,
     Exact("\"softmax_lastdim_kernel_impl\" not implemented for 'Long'")),
    ("cross_entropy_int32", lambda T: T.nn.functional.cross_entropy(T.ones(2, 3), T.tensor([0, 1], dtype=T.int32)),
     RuntimeError, Exact("expected target dtype to be Long or Byte, but got Int")),
    ("nll_loss_int16", lambda T: T.nn.functional.nll_loss(T.ones(2, 3), T.tensor([0, 1], dtype=T.int16)),
     RuntimeError, Exact("expected target dtype to be Long or Byte, but got Short")),
    ("cross_entropy_float_indices", lambda T: T.nn.functional.cross_entropy(T.ones(2, 3), T.tensor([0.0, 1.0])),
     RuntimeError, Exact("expected target dtype to be Long or Byte, but got Float")),
    ("cross_entropy_int_probs", lambda T: T.nn.functional.cross_entropy(T.ones(2, 3), T.ones(2, 3, dtype=T.int64)),
     RuntimeError, Exact("Expected floating point type for target with class probabilities, got Long")),
    ("gather_oob", lambda T: T.ones(3).gather(0, T.tensor([5])), RuntimeError,
     Exact("index 5 is out of bounds for dimension 0 with size 3")),
    ("gather_negative", lambda T: T.ones(2, 3).gather(1, T.tensor([[0, -1]])), RuntimeError,
     Exact("index -1 is out of bounds for dimension 1 with size 3")),
    ("gather_0d_oob", lambda T: T.tensor(1.0).gather(0, T.tensor(1)), RuntimeError,
     Exact("index 1 is out of bounds for dimension 0 with size 1")),
    ("scatter__oob", lambda T: T.zeros(3).scatter_(0, T.tensor([5]), T.ones(1)), RuntimeError,
     Exact("index 5 is out of bounds for dimension 0 with size 3")),
    ("scatter_add_oob", lambda T: T.zeros(3, 4).scatter_add(1, T.tensor([[0, 7], [9, 0]]), T.ones(2, 2)), RuntimeError,
     Exact("index 7 is out of bounds for dimension 1 with size 4")),
    ("scatter_reduce_oob", lambda T: T.zeros(3).scatter_reduce(0, T.tensor([-1]), T.ones(1), "amax"), RuntimeError,
     Exact("index -1 is out of bounds for dimension 0 with size 3")),
    ("scatter_dims", lambda T: T.zeros(3, 4).scatter(0, T.tensor([0]), 1.0), RuntimeError,
     Exact("Index tensor must have the same number of dimensions as self tensor")),
    ("take_along_dim_oob", lambda T: T.take_along_dim(T.ones(3, 4), T.tensor([13])), RuntimeError,
     Exact("index 13 is out of bounds for dimension 0 with size 12")),
    ("take_along_dim_dims", lambda T: T.ones(3).take_along_dim(T.tensor([[0]]), 0), RuntimeError,
     Exact("torch.take_along_dim(): input and indices should have the same number of dimensions, but got 1 "
           "dimensions for input, and 2 dimensions for indices")),
    ("take_along_dim_shapes", lambda T: T.take_along_dim(T.ones(3, 4), T.tensor([[-1, 3]]), 0), RuntimeError,
     Exact("The size of tensor a (4) must match the size of tensor b (2) at non-singleton dimension 1")),
    ("index_add__oob", lambda T: T.zeros(3).index_add_(0, T.tensor([5]), T.ones(1)), IndexError,
     Exact("index out of range in self")),
    ("index_add_oob_2d", lambda T: T.zeros(3, 4).index_add(0, T.tensor([3]), T.ones(1, 4)), RuntimeError,
     Exact("index 3 is out of bounds for dimension 0 with size 3")),
    ("index_add_oob_alpha", lambda T: T.zeros(3, 4).index_add(0, T.tensor([3]), T.ones(1, 4), alpha=2), IndexError,
     Exact("index out of range in self")),
    ("index_add_oob_middle", lambda T: T.zeros(3, 4, 5).index_add(1, T.tensor([-1]), T.ones(3, 1, 5)), IndexError,
     Exact("index out of range in self")),
    ("index_add_shape", lambda T: T.zeros(3, 4).index_add(0, T.tensor([0]), T.ones(1, 5)), RuntimeError,
     Exact("source tensor shape must match self tensor shape, excluding the specified dimension. Got self.shape = "
           "[3, 4] source.shape = [1, 5]")),
    ("index_add_index_2d", lambda T: T.zeros(3, 4).index_add(0, T.tensor([[0]]), T.ones(1, 4)), IndexError,
     Exact("index_add_(): Index is supposed to be a vector, but got dim: 2 with type: Long and size: [1, 1]")),
    ("index_copy__oob", lambda T: T.zeros(3).index_copy_(0, T.tensor([5]), T.ones(1)), IndexError,
     Exact("index_copy_(): index 5 is out of bounds for dimension 0 with size 3")),
    ("index_copy_index_dtype", lambda T: T.zeros(3, 4).index_copy(0, T.tensor([0], dtype=T.int32), T.ones(1, 4)),
     RuntimeError, Exact("index_copy_(): Expected a long tensor for index, but got Int")),
    ("index_copy_slices", lambda T: T.zeros(3, 4, 5).index_copy(1, T.tensor([0]), T.ones(3, 1, 6)), RuntimeError,
     Exact("index_copy_(): Source/destination tensor must have same slice shapes. Destination slice shape: 3 5 at "
           "dimension 1 and source slice shape: 3 6 at dimension 0.")),
    ("index_copy_count", lambda T: T.zeros(3, 4).index_copy(0, T.tensor([7]), T.ones(2, 4)), IndexError,
     Exact("index_copy_(): Number of indices (1) should be equal to source.size(dim) (2)")),
    ("index_fill__oob", lambda T: T.zeros(3).index_fill_(0, T.tensor([5]), 1.0), IndexError,
     Exact("index 5 is out of bounds for dimension 0 with size 3")),
    ("index_fill_index_dtype", lambda T: T.zeros(3).index_fill(0, T.tensor([0.0]), 1.0), IndexError,
     Exact("index_fill_(): Expected dtype int64 for index.")),
    ("index_fill_value_dims", lambda T: T.zeros(3).index_fill(0, T.tensor([0]), T.ones(2)), RuntimeError,
     Exact("index_fill_ only supports a 0-dimensional value tensor, but got tensor with 1 dimension(s).")),
    ("index_select_oob", lambda T: T.zeros(3).index_select(0, T.tensor([5])), IndexError,
     Exact("index out of range in self")),
    ("index_select_oob_dim1", lambda T: T.zeros(3, 4).index_select(1, T.tensor([0, 7, 9])), RuntimeError,
     Exact("INDICES element is out of DATA bounds, id=7 axis_dim=4")),
    ("index_select_empty_dim", lambda T: T.zeros(0, 3).index_select(0, T.tensor([0])), RuntimeError,
     Exact("index_select(): self indexing axis dim should be positive")),
    ("index_select_0d_many", lambda T: T.tensor(1.0).index_select(0, T.tensor([0, 0])), RuntimeError,
     Exact("index_select(): Index to scalar can have only 1 value, got 2 value(s)")),
    ("index_reduce_oob", lambda T: T.zeros(3).index_reduce(0, T.tensor([5]), T.ones(1), "prod"), IndexError,
     Exact("index out of range in self")),
    ("argmax_empty", lambda T: T.empty(0).argmax(), IndexError,
     Exact("argmax(): Expected reduction dim to be specified for input.numel() == 0.")),
    ("argmin_empty_dim", lambda T: T.empty(0, 2).argmin(0), IndexError,
     Exact("argmin(): Expected reduction dim 0 to have non-zero size.")),
    ("max_empty", lambda T: T.empty(0).max(), RuntimeError,
     Exact("max(): Expected reduction dim to be specified for input.numel() == 0. Specify the reduction dim with "
           "the 'dim' argument.")),
    ("min_empty_dim", lambda T: T.empty(2, 0).min(-1), IndexError,
     Exact("min(): Expected reduction dim 1 to have non-zero size.")),
    ("amax_empty_dim", lambda T: T.empty(0, 2).amax(-2), IndexError,
     Exact("amax(): Expected reduction dim -2 to have non-zero size.")),
    ("aminmax_empty", lambda T: T.empty(0).aminmax(), RuntimeError,
     Exact("aminmax(): cannot compute aminmax over an empty dimension as the operation has no identity.")),
    ("aminmax_empty_dim", lambda T: T.empty(2, 0).aminmax(dim=-1), IndexError,
     Exact("aminmax: Expected reduction dim 1 to have non-zero size.")),
    ("kthvalue_empty", lambda T: T.empty(0).kthvalue(1), IndexError,
     Exact("kthvalue(): Expected reduction dim 0 to have non-zero size.")),
    ("norm_inf_empty", lambda T: T.empty(0).norm(float("-inf")), RuntimeError,
     Exact("linalg.vector_norm cannot compute the -inf norm on an empty tensor because the operation does not have "
           "an identity")),
    ("norm_inf_empty_dim", lambda T: T.empty(0, 2).norm(float("inf"), dim=0), RuntimeError,
     Exact("linalg.vector_norm cannot compute the inf norm on the dimension 0because this dimension is empty and "
           "the operation does not have an identity")),
    ("einsum_sizes", lambda T: T.einsum("ij,jk->ik", T.ones(2, 3), T.ones(4, 2)), RuntimeError,
     Exact("einsum(): subscript j has size 4 for operand 1 which does not broadcast with previously seen size 3")),
    ("einsum_repeated", lambda T: T.einsum("iij->j", T.ones(2, 3, 4)), RuntimeError,
     Exact("einsum(): subscript i is repeated for operand 0 but the sizes don't match, 3 != 2")),
    ("einsum_ellipsis", lambda T: T.einsum("...i,...i->...", T.ones(5, 2, 3), T.ones(4, 3)), RuntimeError,
     Exact("einsum(): dimension 0 covered by ellipsis in operand 1has size 4 which does not broadcast with "
           "previously seen ellipsis with size 2 for the respective dimension")),
]


def _twice(T: Any) -> None:
    x = T.ones(2, requires_grad=True)
    y = (x * x).sum()
    y.backward()
    y.backward()


@pytest.mark.parametrize("name,fn,exc,text", ERRORS, ids=[e[0] for e in ERRORS])
def test_errors(name: str, fn: Any, exc: type[Exception], text: str) -> None:
    with pytest.raises(exc) as info:
        fn(lg)
    assert text in str(info.value), f"{name}: message {str(info.value)!r} lacks {text!r}"
    if isinstance(text, Exact):
        assert builtin_type(info.value) is exc and str(info.value) == text, f"{name}: {info.value!r}"
    if torch is not None and name != "cuda":
        with pytest.raises(exc) as theirs:
            fn(torch)
        if isinstance(text, Exact):  # (the row's text is PyTorch's own)
            assert builtin_type(theirs.value) is exc and str(theirs.value) == text, f"{name}: torch {theirs.value!r}"
