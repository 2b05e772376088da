"""``jax.scipy.stats.chi2``: the chi-squared distribution, a gamma of shape ``df / 2`` and
scale 2."""

from __future__ import annotations

from typing import Any

from transpiler import numpy as jnp
from transpiler.scipy.stats import gamma
from transpiler.scipy.stats.common import promote_inexact


def logpdf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, df, loc, scale = promote_inexact(x, df, loc, scale)
    return gamma.logpdf(x, df / 2, loc, 2 * scale)


def pdf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return jnp.exp(logpdf(x, df, loc, scale))


def cdf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, df, loc, scale = promote_inexact(x, df, loc, scale)
    return gamma.cdf(x, df / 2, loc, 2 * scale)


def logcdf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return jnp.log(cdf(x, df, loc, scale))


def sf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, df, loc, scale = promote_inexact(x, df, loc, scale)
    return gamma.sf(x, df / 2, loc, 2 * scale)


def logsf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return jnp.log(sf(x, df, loc, scale))
