"""``jax.scipy.stats.logistic``: the logistic distribution (its CDF is the sigmoid)."""

from __future__ import annotations

from typing import Any

from transpiler import numpy as jnp
from transpiler.nn import softplus
from transpiler.scipy import special
from transpiler.scipy.stats.common import promote_inexact


def logpdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, loc, scale = promote_inexact(x, loc, scale)
    z = (x - loc) / scale
    return -z - 2 * softplus(-z) - jnp.log(scale)


def pdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return jnp.exp(logpdf(x, loc, scale))


def cdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, loc, scale = promote_inexact(x, loc, scale)
    return special.expit((x - loc) / scale)


def sf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, loc, scale = promote_inexact(x, loc, scale)
    return special.expit(-(x - loc) / scale)


def ppf(q: Any, loc: Any = 0, scale: Any = 1) -> Any:
    q, loc, scale = promote_inexact(q, loc, scale)
    return loc + scale * special.logit(q)


def isf(q: Any, loc: Any = 0, scale: Any = 1) -> Any:
    q, loc, scale = promote_inexact(q, loc, scale)
    return loc - scale * special.logit(q)
