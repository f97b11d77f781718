"""Probability distributions with PyTorch's API (``torch.distributions``): sampling (``sample``, and
``rsample`` with gradients for reparameterizable families), ``log_prob``, ``entropy``, moments, and
``kl_divergence``. Everything is composite over lightgrad Tensor ops, so gradients come for free.

>>> import lightgrad as torch
>>> from torch.distributions import Normal, kl_divergence
>>> kl_divergence(Normal(torch.zeros(2), torch.ones(2)), Normal(0.0, 2.0)).shape
lightgrad.Size([2])
"""

from . import constraints
from .bernoulli import Bernoulli
from .categorical import Categorical
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .exponential import Exponential
from .independent import Independent
from .kl import kl_divergence, register_kl
from .laplace import Laplace
from .multivariate_normal import MultivariateNormal
from .normal import Normal
from .one_hot_categorical import OneHotCategorical
from .uniform import Uniform

__all__ = ["Bernoulli", "Categorical", "Distribution", "Exponential", "ExponentialFamily", "Independent",
           "Laplace", "MultivariateNormal", "Normal", "OneHotCategorical", "Uniform", "constraints",
           "kl_divergence", "register_kl"]
