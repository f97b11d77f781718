"""Loss modules: thin wrappers of the ``functional`` losses, each taking ``reduction``
('none' | 'mean' | 'sum').

>>> nn.CrossEntropyLoss()(lightgrad.tensor([[2.0, 0.5]]), lightgrad.tensor([0]))
tensor(0.2014)
"""

from __future__ import annotations

from collections.abc import Callable

from ..tensor import Tensor
from . import functional as F
from .distance import PairwiseDistance
from .module import Module


class _Loss(Module):
    def __init__(self, size_average: bool | None = None, reduce: bool | None = None, reduction: str = "mean") -> None:
        super().__init__()
        self.reduction = F._reduction(size_average, reduce, reduction) if size_average is not None or \
            reduce is not None else reduction


class _WeightedLoss(_Loss):
    def __init__(self, weight: Tensor | None = None, size_average: bool | None = None, reduce: bool | None = None,
                 reduction: str = "mean") -> None:
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)


class MSELoss(_Loss):
    """Mean squared error: ``nn.MSELoss()(pred, target)``."""

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        """The squared error between ``input`` and ``target``, reduced per ``reduction``."""
        return F.mse_loss(input, target, reduction=self.reduction)


class L1Loss(_Loss):
    """Mean absolute error."""

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        """The absolute error between ``input`` and ``target``, reduced per ``reduction``."""
        return F.l1_loss(input, target, reduction=self.reduction)


class SmoothL1Loss(_Loss):
    """Quadratic below ``beta``, linear above."""

    def __init__(self, size_average: bool | None = None, reduce: bool | None = None, reduction: str = "mean",
                 beta: float = 1.0) -> None:
        super().__init__(size_average, reduce, reduction)
        self.beta = beta

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        """Squared error below ``beta``, absolute error above it, reduced per ``reduction``."""
        return F.smooth_l1_loss(input, target, reduction=self.reduction, beta=self.beta)


class HuberLoss(_Loss):
    """Quadratic below ``delta``, linear (slope delta) above."""

    def __init__(self, reduction: str = "mean", delta: float = 1.0) -> None:
        super().__init__(reduction=reduction)
        self.delta = delta

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        """Squared error below ``delta``, ``delta``-scaled absolute error above it, reduced per ``reduction``."""
        return F.huber_loss(input, target, reduction=self.reduction, delta=self.delta)


class NLLLoss(_WeightedLoss):
    """Negative log-likelihood of class indices given log-probabilities."""

    def __init__(self, weight: Tensor | None = None, size_average: bool | None = None, ignore_index: int = -100,
                 reduce: bool | None = None, reduction: str = "mean") -> None:
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        """Minus the log-probability ``input`` gives each ``target`` class, reduced per ``reduction``."""
        return F.nll_loss(input, target, weight=self.weight, ignore_index=self.ignore_index, reduction=self.reduction)


class CrossEntropyLoss(_WeightedLoss):
    """log_softmax + NLL over logits (N, C, *d); targets are class indices or probabilities."""

    def __init__(self, weight: Tensor | None = None, size_average: bool | None = None, ignore_index: int = -100,
                 reduce: bool | None = None, reduction: str = "mean", label_smoothing: float = 0.0) -> None:
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index, self.label_smoothing = ignore_index, label_smoothing

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        """Cross-entropy of the logits ``input`` against class indices or class probabilities, reduced per ``reduction``."""
        return F.cross_entropy(input, target, weight=self.weight, ignore_index=self.ignore_index,
                               reduction=self.reduction, label_smoothing=self.label_smoothing)


class BCELoss(_WeightedLoss):
    """Binary cross-entropy of probabilities."""

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        """Binary cross-entropy of the probabilities ``input`` against ``target``, reduced per ``reduction``."""
        return F.binary_cross_entropy(input, target, weight=self.weight, reduction=self.reduction)


class BCEWithLogitsLoss(_Loss):
    """Sigmoid + binary cross-entropy, stable for logits of any size; ``pos_weight`` weighs positives."""

    def __init__(self, weight: Tensor | None = None, size_average: bool | None = None, reduce: bool | None = None,
                 reduction: str = "mean", pos_weight: Tensor | None = None) -> None:
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)
        self.register_buffer("pos_weight", pos_weight)

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        """Binary cross-entropy of ``sigmoid(input)`` against ``target``, computed stably, reduced per ``reduction``."""
        return F.binary_cross_entropy_with_logits(input, target, self.weight, reduction=self.reduction,
                                                  pos_weight=self.pos_weight)


class KLDivLoss(_Loss):
    """KL divergence with log-probability input; use reduction='batchmean' for the true KL."""

    def __init__(self, size_average: bool | None = None, reduce: bool | None = None, reduction: str = "mean",
                 log_target: bool = False) -> None:
        super().__init__(size_average, reduce, reduction)
        self.log_target = log_target

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        """KL divergence of ``target`` from the log-probabilities ``input``, reduced per ``reduction``."""
        return F.kl_div(input, target, reduction=self.reduction, log_target=self.log_target)


class _MarginLoss(_Loss):
    def __init__(self, margin: float = 0.0, size_average: bool | None = None, reduce: bool | None = None,
                 reduction: str = "mean") -> None:
        super().__init__(size_average, reduce, reduction)
        self.margin = margin


class CosineEmbeddingLoss(_MarginLoss):
    """1 - cos(x1, x2) for target 1, max(0, cos - margin) for target -1."""

    def forward(self, input1: Tensor, input2: Tensor, target: Tensor) -> Tensor:
        """``1 - cos`` for pairs of target 1, ``max(0, cos - margin)`` for target -1, reduced per ``reduction``."""
        return F.cosine_embedding_loss(input1, input2, target, margin=self.margin, reduction=self.reduction)


class MarginRankingLoss(_MarginLoss):
    """max(0, -target * (x1 - x2) + margin)."""

    def forward(self, input1: Tensor, input2: Tensor, target: Tensor) -> Tensor:
        """``max(0, -target * (input1 - input2) + margin)``, reduced per ``reduction``."""
        return F.margin_ranking_loss(input1, input2, target, margin=self.margin, reduction=self.reduction)


class HingeEmbeddingLoss(_MarginLoss):
    """x for target 1, max(0, margin - x) for target -1."""

    def __init__(self, margin: float = 1.0, size_average: bool | None = None, reduce: bool | None = None,
                 reduction: str = "mean") -> None:
        super().__init__(margin, size_average, reduce, reduction)

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        """``input`` where target is 1, ``max(0, margin - input)`` where it is -1, reduced per ``reduction``."""
        return F.hinge_embedding_loss(input, target, margin=self.margin, reduction=self.reduction)


class SoftMarginLoss(_Loss):
    """log(1 + exp(-target * x))."""

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        """``log(1 + exp(-target * input))``, reduced per ``reduction``."""
        return F.soft_margin_loss(input, target, reduction=self.reduction)


class TripletMarginLoss(_Loss):
    """max(d(a, p) - d(a, n) + margin, 0)."""

    def __init__(self, margin: float = 1.0, p: float = 2.0, eps: float = 1e-6, swap: bool = False,
                 size_average: bool | None = None, reduce: bool | None = None, reduction: str = "mean") -> None:
        super().__init__(size_average, reduce, reduction)
        self.margin, self.p, self.eps, self.swap = margin, p, eps, swap

    def forward(self, anchor: Tensor, positive: Tensor, negative: Tensor) -> Tensor:
        """``max(d(anchor, positive) - d(anchor, negative) + margin, 0)``, d the p-norm distance, reduced per ``reduction``."""
        return F.triplet_margin_loss(anchor, positive, negative, margin=self.margin, p=self.p, eps=self.eps,
                                     swap=self.swap, reduction=self.reduction)


class PoissonNLLLoss(_Loss):
    """Poisson negative log-likelihood of log-rates (or rates, with log_input=False)."""

    def __init__(self, log_input: bool = True, full: bool = False, size_average: bool | None = None,
                 eps: float = 1e-8, reduce: bool | None = None, reduction: str = "mean") -> None:
        super().__init__(size_average, reduce, reduction)
        self.log_input, self.full, self.eps = log_input, full, eps

    def forward(self, log_input: Tensor, target: Tensor) -> Tensor:
        """The Poisson negative log-likelihood of ``target`` at the (log-)rate ``log_input``, reduced per ``reduction``."""
        return F.poisson_nll_loss(log_input, target, log_input=self.log_input, full=self.full, eps=self.eps,
                                  reduction=self.reduction)


class MultiMarginLoss(_WeightedLoss):
    """Multi-class hinge loss over scores (N, C) and class indices (N,).

    >>> nn.MultiMarginLoss()(lightgrad.tensor([[0.1, 0.2, 0.4, 0.8]]), lightgrad.tensor([3]))
    tensor(0.3250)
    """

    def __init__(self, p: int = 1, margin: float = 1.0, weight: Tensor | None = None,
                 size_average: bool | None = None, reduce: bool | None = None, reduction: str = "mean") -> None:
        if p not in (1, 2):
            raise ValueError("only p == 1 and p == 2 supported")
        if weight is not None and weight.ndim != 1:
            raise ValueError(f"MultiMarginLoss: expected weight to be None or 1D tensor, got {weight.ndim}D instead")
        super().__init__(weight, size_average, reduce, reduction)
        self.p, self.margin = p, margin

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        """The multi-class hinge loss of the scores ``input`` for class ``target``, reduced per ``reduction``."""
        return F.multi_margin_loss(input, target, p=self.p, margin=self.margin, weight=self.weight,
                                   reduction=self.reduction)


class MultiLabelMarginLoss(_Loss):
    """Multi-label hinge loss; each target row lists class indices, ended by -1."""

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        """The multi-label hinge loss of the scores against the listed target classes, reduced per ``reduction``."""
        return F.multilabel_margin_loss(input, target, reduction=self.reduction)


class MultiLabelSoftMarginLoss(_WeightedLoss):
    """Per-class logistic loss, averaged over classes."""

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        """Binary cross-entropy per class from logits, averaged over the classes, reduced per ``reduction``."""
        return F.multilabel_soft_margin_loss(input, target, weight=self.weight, reduction=self.reduction)


class GaussianNLLLoss(_Loss):
    """Negative log-likelihood of targets under N(input, var)."""

    def __init__(self, *, full: bool = False, eps: float = 1e-6, reduction: str = "mean") -> None:
        super().__init__(None, None, reduction)
        self.full, self.eps = full, eps

    def forward(self, input: Tensor, target: Tensor, var: Tensor | float) -> Tensor:
        """The negative log-likelihood of ``target`` under N(``input``, ``var``), reduced per ``reduction``."""
        return F.gaussian_nll_loss(input, target, var, full=self.full, eps=self.eps, reduction=self.reduction)


class TripletMarginWithDistanceLoss(_Loss):
    """Triplet loss with any distance function (``nn.PairwiseDistance()`` by default)."""

    def __init__(self, *, distance_function: Callable[[Tensor, Tensor], Tensor] | None = None,
                 margin: float = 1.0, swap: bool = False, reduction: str = "mean") -> None:
        if margin <= 0:
            raise ValueError(f"TripletMarginWithDistanceLoss: expected margin to be greater than 0, got {margin} "
                             "instead")
        super().__init__(size_average=None, reduce=None, reduction=reduction)
        self.distance_function = distance_function if distance_function is not None else PairwiseDistance()
        self.margin, self.swap = margin, swap

    def forward(self, anchor: Tensor, positive: Tensor, negative: Tensor) -> Tensor:
        """The triplet margin loss with ``distance_function``, reduced per ``reduction``."""
        return F.triplet_margin_with_distance_loss(anchor, positive, negative,
                                                   distance_function=self.distance_function, margin=self.margin,
                                                   swap=self.swap, reduction=self.reduction)


class CTCLoss(_Loss):
    """Connectionist temporal classification loss; see ``F.ctc_loss``.

    >>> nn.CTCLoss()(lightgrad.randn(5, 2, 4).log_softmax(2), lightgrad.tensor([[1, 2], [3, 3]]), [5, 4], [2, 2]).ndim
    0
    """

    def __init__(self, blank: int = 0, reduction: str = "mean", zero_infinity: bool = False) -> None:
        super().__init__(reduction=reduction)
        self.blank, self.zero_infinity = blank, zero_infinity

    def forward(self, log_probs: Tensor, targets: Tensor, input_lengths: Tensor, target_lengths: Tensor) -> Tensor:
        """The CTC loss of the per-step ``log_probs`` against the label sequences ``targets``, reduced per ``reduction``."""
        return F.ctc_loss(log_probs, targets, input_lengths, target_lengths, self.blank, self.reduction,
                          self.zero_infinity)


__all__ = ["BCELoss", "CTCLoss", "BCEWithLogitsLoss", "CosineEmbeddingLoss", "CrossEntropyLoss", "GaussianNLLLoss",
           "HingeEmbeddingLoss", "HuberLoss", "KLDivLoss", "L1Loss", "MSELoss", "MarginRankingLoss",
           "MultiLabelMarginLoss", "MultiLabelSoftMarginLoss", "MultiMarginLoss", "NLLLoss", "PoissonNLLLoss",
           "SmoothL1Loss", "SoftMarginLoss", "TripletMarginLoss", "TripletMarginWithDistanceLoss"]
