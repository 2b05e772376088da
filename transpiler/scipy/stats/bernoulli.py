"""``jax.scipy.stats.bernoulli``: ``p`` at 1, ``1 - p`` at 0."""

from __future__ import annotations

from typing import Any

from transpiler import numpy as jnp
from transpiler.scipy.special import xlog1py, xlogy
from transpiler.scipy.stats.common import outside, promote_inexact


def logpmf(k: Any, p: Any, loc: Any = 0) -> Any:
    k, p, loc = promote_inexact(k, p, loc)
    x = k - loc
    return outside((x != 0) & (x != 1), xlogy(x, p) + xlog1py(1 - x, -p))


def pmf(k: Any, p: Any, loc: Any = 0) -> Any:
    return jnp.exp(logpmf(k, p, loc))
