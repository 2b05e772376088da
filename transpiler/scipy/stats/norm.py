"""``jax.scipy.stats.norm``: the normal distribution with `loc` and `scale`."""

from __future__ import annotations

import math
from typing import Any

from transpiler import numpy as jnp
from transpiler.scipy import special
from transpiler.scipy.stats.common import promote_inexact

_LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)


def logpdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, loc, scale = promote_inexact(x, loc, scale)
    z = (x - loc) / scale
    return -0.5 * z * z - _LOG_SQRT_2PI - jnp.log(scale)


def pdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return jnp.exp(logpdf(x, loc, scale))


def cdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, loc, scale = promote_inexact(x, loc, scale)
    return special.ndtr((x - loc) / scale)


def logcdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, loc, scale = promote_inexact(x, loc, scale)
    return special.log_ndtr((x - loc) / scale)


def sf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The survival function ``1 - cdf``, accurate in the upper tail."""
    x, loc, scale = promote_inexact(x, loc, scale)
    return special.ndtr(-(x - loc) / scale)


def logsf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, loc, scale = promote_inexact(x, loc, scale)
    return special.log_ndtr(-(x - loc) / scale)


def ppf(q: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The quantile function (inverse of `cdf`)."""
    q, loc, scale = promote_inexact(q, loc, scale)
    return loc + scale * special.ndtri(q)


def isf(q: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The inverse of `sf`."""
    q, loc, scale = promote_inexact(q, loc, scale)
    return loc - scale * special.ndtri(q)
