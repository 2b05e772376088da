"""``jax.scipy.stats.poisson``: ``mu^k exp(-mu) / k!`` for integers ``k >= loc``."""

from __future__ import annotations

from typing import Any

from transpiler import numpy as jnp
from transpiler.scipy.special import gammaln, xlogy
from transpiler.scipy.stats.common import outside, promote_inexact


def logpmf(k: Any, mu: Any, loc: Any = 0) -> Any:
    k, mu, loc = promote_inexact(k, mu, loc)
    x = k - loc
    bad = (x < 0) | (x != jnp.round(x))
    inside = jnp.where(bad, jnp.zeros_like(x), x)
    return outside(bad, xlogy(inside, mu) - gammaln(inside + 1) - mu)


def pmf(k: Any, mu: Any, loc: Any = 0) -> Any:
    return jnp.exp(logpmf(k, mu, loc))
