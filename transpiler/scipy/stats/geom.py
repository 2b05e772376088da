"""``jax.scipy.stats.geom``: ``(1 - p)^(k - 1) p`` for integers ``k >= 1 + loc``."""

from __future__ import annotations

from typing import Any

from transpiler import numpy as jnp
from transpiler.scipy.special import xlog1py
from transpiler.scipy.stats.common import outside, promote_inexact


def logpmf(k: Any, p: Any, loc: Any = 0) -> Any:
    k, p, loc = promote_inexact(k, p, loc)
    x = k - loc
    bad = (x < 1) | (x != jnp.round(x))
    inside = jnp.where(bad, jnp.ones_like(x), x)
    return outside(bad, xlog1py(inside - 1, -p) + jnp.log(p))


def pmf(k: Any, p: Any, loc: Any = 0) -> Any:
    return jnp.exp(logpmf(k, p, loc))
