"""``jax.scipy.stats.bernoulli``: ``p`` at 1, ``1 - p`` at 0."""

from __future__ import annotations

from typing import Any

import numpy as np

from transpiler import numpy as jnp
from transpiler.scipy.special import xlog1py, xlogy
from transpiler.scipy.stats.common import outside, promote_inexact


def logpmf(k: Any, p: Any, loc: Any = 0) -> Any:
    k, p, loc = promote_inexact(k, p, loc)
    x = k - loc
    return outside((x != 0) & (x != 1), xlogy(x, p) + xlog1py(1 - x, -p))


def pmf(k: Any, p: Any, loc: Any = 0) -> Any:
    return jnp.exp(logpmf(k, p, loc))


def cdf(k: Any, p: Any) -> Any:
    """0 below 0, ``1 - p`` on ``[0, 1)``, 1 from 1; NaN for a NaN or a `p` outside
    ``[0, 1]``."""
    k, p = promote_inexact(k, p)
    bad = jnp.isnan(k) | jnp.isnan(p) | (p < 0) | (p > 1)
    value = jnp.where(k < 0, jnp.zeros_like(p), jnp.where(k < 1, 1 - p, jnp.ones_like(p)))
    return jnp.where(bad, jnp.full_like(value, np.nan), value)


def ppf(q: Any, p: Any) -> Any:
    """The least ``k`` in {0, 1} with ``cdf(k) >= q``; NaN outside the domain."""
    q, p = promote_inexact(q, p)
    bad = jnp.isnan(q) | jnp.isnan(p) | (p < 0) | (p > 1) | (q < 0) | (q > 1)
    value = jnp.where(q <= 1 - p, jnp.zeros_like(q * p), jnp.ones_like(q * p))
    return jnp.where(bad, jnp.full_like(value, np.nan), value)
