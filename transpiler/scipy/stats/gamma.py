"""``jax.scipy.stats.gamma``: the gamma distribution with shape `a`."""

from __future__ import annotations

from typing import Any

import numpy as np

from transpiler import numpy as jnp
from transpiler.scipy.special import gammainc, gammaincc, gammaln, xlogy
from transpiler.scipy.stats.common import outside, promote_inexact


def logpdf(x: Any, a: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, a, loc, scale = promote_inexact(x, a, loc, scale)
    z = (x - loc) / scale
    inside = jnp.where(z < 0, jnp.ones_like(z), z)
    value = xlogy(a - 1, inside) - inside - gammaln(a) - jnp.log(scale)
    return outside(z < 0, value)


def pdf(x: Any, a: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return jnp.exp(logpdf(x, a, loc, scale))


def cdf(x: Any, a: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """``P(a, (x - loc) / scale)``, 0 below `loc`."""
    x, a, loc, scale = promote_inexact(x, a, loc, scale)
    return gammainc(a, jnp.clip((x - loc) / scale, 0, np.inf))


def logcdf(x: Any, a: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return jnp.log(cdf(x, a, loc, scale))


def sf(x: Any, a: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """``Q(a, (x - loc) / scale)``, 1 below `loc`."""
    x, a, loc, scale = promote_inexact(x, a, loc, scale)
    y = (x - loc) / scale
    return jnp.where(y < 0, jnp.ones_like(y), gammaincc(a, jnp.where(y < 0, 0, y)))


def logsf(x: Any, a: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return jnp.log(sf(x, a, loc, scale))
