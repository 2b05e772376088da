"""``jax.scipy.stats.gamma``: the gamma distribution with shape `a`."""

from __future__ import annotations

from typing import Any

from transpiler import numpy as jnp
from transpiler.scipy.special import gammaln, xlogy
from transpiler.scipy.stats.common import outside, promote_inexact


def logpdf(x: Any, a: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, a, loc, scale = promote_inexact(x, a, loc, scale)
    z = (x - loc) / scale
    inside = jnp.where(z < 0, jnp.ones_like(z), z)
    value = xlogy(a - 1, inside) - inside - gammaln(a) - jnp.log(scale)
    return outside(z < 0, value)


def pdf(x: Any, a: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return jnp.exp(logpdf(x, a, loc, scale))
