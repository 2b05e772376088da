"""``jax.scipy.stats.binom``: ``C(n, k) p^k (1 - p)^(n - k)`` for integers ``0 <= k <= n``."""

from __future__ import annotations

from typing import Any

from transpiler import numpy as jnp
from transpiler.scipy.special import gammaln, xlog1py, xlogy
from transpiler.scipy.stats.common import outside, promote_inexact


def logpmf(k: Any, n: Any, p: Any, loc: Any = 0) -> Any:
    k, n, p, loc = promote_inexact(k, n, p, loc)
    x = k - loc
    bad = (x < 0) | (x > n) | (x != jnp.round(x))
    inside = jnp.where(bad, jnp.zeros_like(x), x)
    choose = gammaln(n + 1) - gammaln(inside + 1) - gammaln(n - inside + 1)
    return outside(bad, choose + xlogy(inside, p) + xlog1py(n - inside, -p))


def pmf(k: Any, n: Any, p: Any, loc: Any = 0) -> Any:
    return jnp.exp(logpmf(k, n, p, loc))
