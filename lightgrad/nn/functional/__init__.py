"""Functional forms of the layers, activations and losses, as ``torch.nn.functional``.

Everything here is composed from Tensor ops, so gradients come for free; formulas are written
in their numerically stable forms (no ``exp`` of a large argument is ever taken, even in a branch
that ``where`` discards, because its gradient would be ``0 * inf = nan``).

>>> F.cross_entropy(lightgrad.tensor([[2.0, 0.5]]), lightgrad.tensor([0]))
tensor(0.2014)

One module per subject: activation, dense (linear, bilinear), sparse (embeddings, one-hot),
dropouts, normalization, distance, loss, conv (convolution, fold/unfold), pooling, vision
(padding, shuffles, interpolation, grid sampling) and attention; the fused kernels they run sit
beside them (_window_kernels, _rnn_kernels, _layer_kernels), the shared argument helpers in
_common. This package re-exports the public functions.
"""

from __future__ import annotations

from ...grad_mode import is_grad_enabled, no_grad
from ...tensor import Tensor, where
from ._common import _tuple
from .activation import (
    celu,
    celu_,
    elu,
    elu_,
    gelu,
    glu,
    gumbel_softmax,
    hardshrink,
    hardsigmoid,
    hardswish,
    hardtanh,
    hardtanh_,
    leaky_relu,
    leaky_relu_,
    log_softmax,
    logsigmoid,
    mish,
    prelu,
    relu,
    relu6,
    relu_,
    rrelu,
    rrelu_,
    selu,
    selu_,
    sigmoid,
    silu,
    softmax,
    softmin,
    softplus,
    softshrink,
    softsign,
    tanh,
    tanhshrink,
    threshold,
    threshold_,
)
from .attention import (
    scaled_dot_product_attention,
)
from .conv import (
    conv1d,
    conv2d,
    conv3d,
    conv_transpose1d,
    conv_transpose2d,
    conv_transpose3d,
    fold,
    unfold,
)
from .dense import (
    bilinear,
    linear,
)
from .distance import (
    cosine_similarity,
    pairwise_distance,
    pdist,
)
from .dropouts import (
    alpha_dropout,
    dropout,
    dropout1d,
    dropout2d,
    dropout3d,
    feature_alpha_dropout,
)
from .loss import (
    _reduction,
    binary_cross_entropy,
    binary_cross_entropy_with_logits,
    cosine_embedding_loss,
    cross_entropy,
    ctc_loss,
    gaussian_nll_loss,
    hinge_embedding_loss,
    huber_loss,
    kl_div,
    l1_loss,
    margin_ranking_loss,
    mse_loss,
    multi_margin_loss,
    multilabel_margin_loss,
    multilabel_soft_margin_loss,
    nll_loss,
    poisson_nll_loss,
    smooth_l1_loss,
    soft_margin_loss,
    triplet_margin_loss,
    triplet_margin_with_distance_loss,
)
from .normalization import (
    batch_norm,
    group_norm,
    instance_norm,
    layer_norm,
    local_response_norm,
    normalize,
    rms_norm,
)
from .pooling import (
    adaptive_avg_pool1d,
    adaptive_avg_pool2d,
    adaptive_avg_pool3d,
    adaptive_max_pool1d,
    adaptive_max_pool1d_with_indices,
    adaptive_max_pool2d,
    adaptive_max_pool2d_with_indices,
    adaptive_max_pool3d,
    adaptive_max_pool3d_with_indices,
    avg_pool1d,
    avg_pool2d,
    avg_pool3d,
    fractional_max_pool2d,
    fractional_max_pool2d_with_indices,
    fractional_max_pool3d,
    fractional_max_pool3d_with_indices,
    lp_pool1d,
    lp_pool2d,
    lp_pool3d,
    max_pool1d,
    max_pool1d_with_indices,
    max_pool2d,
    max_pool2d_with_indices,
    max_pool3d,
    max_pool3d_with_indices,
    max_unpool1d,
    max_unpool2d,
    max_unpool3d,
)
from .sparse import (
    embedding,
    embedding_bag,
    one_hot,
)
from .vision import (
    affine_grid,
    channel_shuffle,
    grid_sample,
    interpolate,
    native_channel_shuffle,
    pad,
    pixel_shuffle,
    pixel_unshuffle,
    upsample,
    upsample_bilinear,
    upsample_nearest,
)
