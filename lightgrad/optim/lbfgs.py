"""L-BFGS with an optional strong-Wolfe line search, as ``torch.optim.LBFGS``.

The algorithm works on one flat vector of all parameters. Here that vector already exists: the
parameters live in the optimizer's flat buffers, so gathering the gradient is one copy per buffer and
moving along a direction is one in-place add. Scalars (``ys``, ``ro``, ``H_diag``...) are NumPy scalars of
the parameters' dtype, as PyTorch keeps them as 0-d tensors, so float32 problems round alike.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from .. import backend as B
from ..grad_mode import enable_grad
from ..tensor import Tensor
from .optimizer import Optimizer, _bump_versions, _own, _Pack, _scalar, check_lr

_STATE_ARRAYS = ("d", "prev_flat_grad")
_STATE_LISTS = ("old_dirs", "old_stps", "ro", "al")


def _cubic_interpolate(x1: Any, f1: Any, g1: Any, x2: Any, f2: Any, g2: Any,
                       bounds: tuple[Any, Any] | None = None) -> Any:
    """Minimiser of the cubic through (x1, f1, g1) and (x2, f2, g2), clipped to ``bounds``."""
    if bounds is not None:
        xmin_bound, xmax_bound = bounds
    else:
        xmin_bound, xmax_bound = (x1, x2) if x1 <= x2 else (x2, x1)
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    d2_square = d1 ** 2 - g1 * g2
    if d2_square >= 0:
        d2 = B.xp.sqrt(d2_square)
        if x1 <= x2:
            min_pos = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
        else:
            min_pos = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
        return min(max(min_pos, xmin_bound), xmax_bound)
    return (xmin_bound + xmax_bound) / 2.0


def _strong_wolfe(obj_func: Callable[..., tuple[float, B.ndarray]], x: list[B.ndarray], t: Any,
                  d: B.ndarray, f: float, g: B.ndarray, gtd: Any, c1: float = 1e-4, c2: float = 0.9,
                  tolerance_change: float = 1e-9, max_ls: int = 25) -> tuple[float, B.ndarray, Any, int]:
    """A line search along ``d`` satisfying the strong Wolfe conditions (PyTorch's port of minFunc)."""
    d_norm = B.xp.abs(d).max()
    g = g.copy()
    f_new, g_new = obj_func(x, t, d)
    ls_func_evals = 1
    gtd_new = g_new.dot(d)
    t_prev, f_prev, g_prev, gtd_prev = 0, f, g, gtd
    done = False
    ls_iter = 0
    bracket: list[Any] = []
    bracket_f: list[Any] = []
    bracket_g: list[Any] = []
    bracket_gtd: list[Any] = []
    while ls_iter < max_ls:
        if f_new > (f + c1 * t * gtd) or (ls_iter > 1 and f_new >= f_prev):
            bracket, bracket_f = [t_prev, t], [f_prev, f_new]
            bracket_g, bracket_gtd = [g_prev, g_new.copy()], [gtd_prev, gtd_new]
            break
        if abs(gtd_new) <= -c2 * gtd:
            bracket, bracket_f, bracket_g = [t], [f_new], [g_new]
            done = True
            break
        if gtd_new >= 0:
            bracket, bracket_f = [t_prev, t], [f_prev, f_new]
            bracket_g, bracket_gtd = [g_prev, g_new.copy()], [gtd_prev, gtd_new]
            break
        # interpolate between the last two points, extrapolating at most 10x
        min_step = t + 0.01 * (t - t_prev)
        max_step = t * 10
        tmp = t
        t = _cubic_interpolate(t_prev, f_prev, gtd_prev, t, f_new, gtd_new, bounds=(min_step, max_step))
        t_prev, f_prev, g_prev, gtd_prev = tmp, f_new, g_new.copy(), gtd_new
        f_new, g_new = obj_func(x, t, d)
        ls_func_evals += 1
        gtd_new = g_new.dot(d)
        ls_iter += 1
    if ls_iter == max_ls:
        bracket, bracket_f, bracket_g = [0, t], [f, f_new], [g, g_new]

    # zoom: shrink the bracket until a point satisfies the conditions
    insuf_progress = False
    low_pos, high_pos = (0, 1) if bracket_f[0] <= bracket_f[-1] else (1, 0)
    while not done and ls_iter < max_ls:
        if abs(bracket[1] - bracket[0]) * d_norm < tolerance_change:
            break
        t = _cubic_interpolate(bracket[0], bracket_f[0], bracket_gtd[0], bracket[1], bracket_f[1], bracket_gtd[1])
        # a point too close to an end of the bracket makes little progress: move it inwards
        eps = 0.1 * (max(bracket) - min(bracket))
        if min(max(bracket) - t, t - min(bracket)) < eps:
            if insuf_progress or t >= max(bracket) or t <= min(bracket):
                t = max(bracket) - eps if abs(t - max(bracket)) < abs(t - min(bracket)) else min(bracket) + eps
                insuf_progress = False
            else:
                insuf_progress = True
        else:
            insuf_progress = False
        f_new, g_new = obj_func(x, t, d)
        ls_func_evals += 1
        gtd_new = g_new.dot(d)
        ls_iter += 1
        if f_new > (f + c1 * t * gtd) or f_new >= bracket_f[low_pos]:
            bracket[high_pos], bracket_f[high_pos] = t, f_new
            bracket_g[high_pos], bracket_gtd[high_pos] = g_new.copy(), gtd_new
            low_pos, high_pos = (0, 1) if bracket_f[0] <= bracket_f[1] else (1, 0)
        else:
            if abs(gtd_new) <= -c2 * gtd:
                done = True
            elif gtd_new * (bracket[high_pos] - bracket[low_pos]) >= 0:
                bracket[high_pos], bracket_f[high_pos] = bracket[low_pos], bracket_f[low_pos]
                bracket_g[high_pos], bracket_gtd[high_pos] = bracket_g[low_pos], bracket_gtd[low_pos]
            bracket[low_pos], bracket_f[low_pos] = t, f_new
            bracket_g[low_pos], bracket_gtd[low_pos] = g_new.copy(), gtd_new
    return bracket_f[low_pos], bracket_g[low_pos], bracket[low_pos], ls_func_evals


class LBFGS(Optimizer):
    """``torch.optim.LBFGS``: needs a closure that re-evaluates the loss; one parameter group only.

    >>> opt = lightgrad.optim.LBFGS(model.parameters(), line_search_fn="strong_wolfe")
    >>> def closure(): opt.zero_grad(); loss = loss_fn(model(x), y); loss.backward(); return loss
    >>> opt.step(closure)
    """

    _scalars: ClassVar[dict[str, float]] = {}
    _flat = True

    def __init__(self, params: Any, lr: float = 1, max_iter: int = 20, max_eval: int | None = None,
                 tolerance_grad: float = 1e-7, tolerance_change: float = 1e-9, history_size: int = 100,
                 line_search_fn: str | None = None) -> None:
        check_lr(lr)
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        if line_search_fn not in (None, "strong_wolfe"):
            raise ValueError(f"only 'strong_wolfe' is supported as line_search_fn, got {line_search_fn!r}")
        defaults = dict(lr=lr, max_iter=max_iter, max_eval=max_eval, tolerance_grad=tolerance_grad,
                        tolerance_change=tolerance_change, history_size=history_size,
                        line_search_fn=line_search_fn)
        params = list(params) if not isinstance(params, Tensor) else params
        if isinstance(params, list) and len(params) > 1 and isinstance(params[0], dict):
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")
        super().__init__(params, defaults)
        self._params = self.param_groups[0]["params"]

    # ---- the flat vector ---------------------------------------------------------------------------
    def _gather_flat_grad(self, packs: list[_Pack]) -> B.ndarray:
        """A copy of all gradients as one vector (zeros where a grad is None)."""
        out = B.xp.empty(sum(p.size for p in packs), B.result_type(*[p.flat.dtype for p in packs]))
        off = 0
        for pack in packs:
            seg = out[off:off + pack.size]
            off += pack.size
            grads = [p.grad for p in pack.params]
            if all(g is not None and g._data is v for g, v in zip(grads, pack.gviews)):
                B.copyto(seg, pack.grad)
                continue
            for g, (a, b) in zip(grads, pack.bounds):
                seg[a:b] = 0 if g is None else g._data.reshape(-1)
        return out

    def _add_grad(self, packs: list[_Pack], step_size: Any, update: B.ndarray) -> None:
        """Parameters += step_size * update."""
        off = 0
        for pack in packs:
            pack.flat += update[off:off + pack.size] * step_size
            off += pack.size
            _bump_versions(pack.versions)

    def _set_param(self, packs: list[_Pack], x: list[B.ndarray]) -> None:
        for pack, xi in zip(packs, x):
            B.copyto(pack.flat, xi)
            _bump_versions(pack.versions)

    # ---- the step ----------------------------------------------------------------------------------
    def step(self, closure: Callable[[], Any]) -> Any:  # type: ignore[override]
        """Run up to ``max_iter`` L-BFGS iterations; returns the loss of the first closure call."""
        if closure is None:
            raise RuntimeError("LBFGS requires a closure that re-evaluates the model and returns the loss")
        group = self.param_groups[0]
        lr = _scalar(group["lr"])
        max_iter, max_eval = group["max_iter"], group["max_eval"]
        tolerance_grad, tolerance_change = group["tolerance_grad"], group["tolerance_change"]
        line_search_fn, history_size = group["line_search_fn"], group["history_size"]

        def evaluate() -> Any:
            with enable_grad():
                return closure()

        packs = self._packs_for_step(group)
        state = self.state[self._params[0]]
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)

        orig_loss = evaluate()
        loss = float(orig_loss)
        current_evals = 1
        state["func_evals"] += 1
        packs = self._packs_for_step(group)
        flat_grad = self._gather_flat_grad(packs)
        if B.xp.abs(flat_grad).max() <= tolerance_grad:
            return orig_loss

        dtype = flat_grad.dtype
        d, prev_flat_grad = (_unwrap(state.get(k), dtype) for k in _STATE_ARRAYS)
        old_dirs, old_stps, ro, al = (_unwrap(state.get(k), dtype) for k in _STATE_LISTS)
        t, H_diag, prev_loss = (_unwrap(state.get(k), dtype) for k in ("t", "H_diag", "prev_loss"))

        n_iter = 0
        while n_iter < max_iter:
            n_iter += 1
            state["n_iter"] += 1
            if state["n_iter"] == 1:
                d = -flat_grad
                old_dirs, old_stps, ro = [], [], []
                H_diag = 1
            else:
                # update the curvature pairs, then the two-loop recursion for d = -H g
                y = flat_grad - prev_flat_grad
                s = d * t
                ys = y.dot(s)
                if ys > 1e-10:
                    if len(old_dirs) == history_size:
                        old_dirs.pop(0)
                        old_stps.pop(0)
                        ro.pop(0)
                    old_dirs.append(y)
                    old_stps.append(s)
                    ro.append(1.0 / ys)
                    H_diag = ys / y.dot(y)
                num_old = len(old_dirs)
                if al is None:
                    al = [None] * history_size
                q = -flat_grad
                for i in range(num_old - 1, -1, -1):
                    al[i] = old_stps[i].dot(q) * ro[i]
                    q += old_dirs[i] * -al[i]
                d = r = q * H_diag
                for i in range(num_old):
                    be_i = old_dirs[i].dot(r) * ro[i]
                    r += old_stps[i] * (al[i] - be_i)
            if prev_flat_grad is None:
                prev_flat_grad = flat_grad.copy()
            else:
                B.copyto(prev_flat_grad, flat_grad)
            prev_loss = loss
            # the first step is scaled down: the curvature is not known yet
            t = min(1.0, 1.0 / B.xp.abs(flat_grad).sum()) * lr if state["n_iter"] == 1 else lr
            gtd = flat_grad.dot(d)
            if gtd > -tolerance_change:  # not a descent direction
                break

            ls_func_evals = 0
            if line_search_fn is not None:
                x_init = [pack.flat.copy() for pack in packs]

                def obj_func(x: list[B.ndarray], t: Any, d: B.ndarray) -> tuple[float, B.ndarray]:
                    self._add_grad(packs, t, d)
                    f = float(evaluate())
                    g = self._gather_flat_grad(packs)
                    self._set_param(packs, x)
                    return f, g

                loss, flat_grad, t, ls_func_evals = _strong_wolfe(obj_func, x_init, t, d, loss, flat_grad, gtd,
                                                                  max_ls=max_eval - current_evals)
                self._add_grad(packs, t, d)
                opt_cond = B.xp.abs(flat_grad).max() <= tolerance_grad
            else:
                self._add_grad(packs, t, d)
                opt_cond = False
                if n_iter != max_iter:
                    # re-evaluate, except on the last iteration, where the caller will anyway
                    loss = float(evaluate())
                    flat_grad = self._gather_flat_grad(packs)
                    opt_cond = B.xp.abs(flat_grad).max() <= tolerance_grad
                    ls_func_evals = 1
            current_evals += ls_func_evals
            state["func_evals"] += ls_func_evals

            if n_iter == max_iter or current_evals >= max_eval or opt_cond:
                break
            if B.xp.abs(d * t).max() <= tolerance_change or abs(loss - prev_loss) < tolerance_change:
                break

        state.update({"d": _wrap(d), "t": _wrap(t), "old_dirs": _wrap(old_dirs), "old_stps": _wrap(old_stps),
                      "ro": _wrap(ro), "H_diag": _wrap(H_diag), "prev_flat_grad": _wrap(prev_flat_grad),
                      "prev_loss": prev_loss})
        if al is not None:
            state["al"] = _wrap(al)
        return orig_loss


def _wrap(v: Any) -> Any:
    """State values as PyTorch keeps them: tensors (0-d for NumPy scalars), lists of tensors, numbers."""
    if isinstance(v, list):
        return [_wrap(x) for x in v]
    if isinstance(v, B.ndarray | B.xp.generic):
        return _own(B.asarray(v), None)  # LBFGS history lives on the heap
    return v


def _unwrap(v: Any, dtype: B.xp.dtype) -> Any:
    if isinstance(v, list):
        return [_unwrap(x, dtype) for x in v]
    if isinstance(v, Tensor):
        a = v._data.astype(dtype, copy=True) if v._data.dtype.kind == "f" else v._data.copy()
        return a if a.ndim else a[()]
    return v
