"""``jax.scipy.stats.expon``: the exponential distribution, ``exp(-(x - loc) / scale) /
scale`` for ``x >= loc``."""

from __future__ import annotations

from typing import Any

from transpiler import numpy as jnp
from transpiler.scipy.stats.common import outside, promote_inexact


def logpdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, loc, scale = promote_inexact(x, loc, scale)
    z = (x - loc) / scale
    return outside(z < 0, -z - jnp.log(scale))


def pdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return jnp.exp(logpdf(x, loc, scale))


def cdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, loc, scale = promote_inexact(x, loc, scale)
    z = (x - loc) / scale
    return outside(z < 0, -jnp.expm1(-jnp.maximum(z, 0)), 0.0)


def logcdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return jnp.log(cdf(x, loc, scale))


def sf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return jnp.exp(logsf(x, loc, scale))


def logsf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, loc, scale = promote_inexact(x, loc, scale)
    z = (x - loc) / scale
    return outside(z < 0, -z, 0.0)


def ppf(q: Any, loc: Any = 0, scale: Any = 1) -> Any:
    q, loc, scale = promote_inexact(q, loc, scale)
    return outside((q < 0) | (q > 1), loc - scale * jnp.log1p(-q), float("nan"))
