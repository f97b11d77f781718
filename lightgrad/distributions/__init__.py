"""Probability distributions with PyTorch's API (``torch.distributions``): sampling (``sample``, and
``rsample`` with gradients for reparameterizable families), ``log_prob``, ``entropy``, moments, and
``kl_divergence``. Everything is composite over lightgrad Tensor ops, so gradients come for free.

>>> import lightgrad as torch
>>> from torch.distributions import Normal, kl_divergence
>>> kl_divergence(Normal(torch.zeros(2), torch.ones(2)), Normal(0.0, 2.0)).shape
lightgrad.Size([2])
"""

from . import constraints, transforms
from .bernoulli import Bernoulli
from .categorical import Categorical
from .cauchy import Cauchy
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .exponential import Exponential
from .gumbel import Gumbel
from .independent import Independent
from .kl import kl_divergence, register_kl
from .laplace import Laplace
from .log_normal import LogNormal
from .multivariate_normal import MultivariateNormal
from .normal import Normal
from .one_hot_categorical import OneHotCategorical
from .poisson import Poisson
from .transformed_distribution import TransformedDistribution
from .transforms import AffineTransform, ComposeTransform, ExpTransform, SigmoidTransform, TanhTransform, Transform
from .uniform import Uniform

__all__ = ["AffineTransform", "Bernoulli", "Categorical", "Cauchy", "ComposeTransform", "Distribution", "ExpTransform",
           "Exponential", "ExponentialFamily", "Gumbel", "Independent", "Laplace", "LogNormal", "MultivariateNormal",
           "Normal", "OneHotCategorical", "Poisson", "SigmoidTransform", "TanhTransform", "Transform",
           "TransformedDistribution", "Uniform", "constraints", "kl_divergence", "register_kl", "transforms"]
