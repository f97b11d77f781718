"""``ExponentialFamily``: the base class of exponential-family distributions."""

from __future__ import annotations

from .distribution import Distribution


class ExponentialFamily(Distribution):
    """Base of distributions of the exponential family (Normal, Bernoulli, Exponential, ...)."""
