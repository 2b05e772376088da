"""``jax.scipy.stats.cauchy``: ``1 / (pi scale (1 + ((x - loc) / scale)^2))``."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from transpiler import numpy as jnp
from transpiler.scipy.stats.common import promote_inexact


def logpdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, loc, scale = promote_inexact(x, loc, scale)
    z = (x - loc) / scale
    return -math.log(math.pi) - jnp.log(scale) - jnp.log1p(z * z)


def pdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return jnp.exp(logpdf(x, loc, scale))


def cdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, loc, scale = promote_inexact(x, loc, scale)
    return 0.5 + jnp.arctan((x - loc) / scale) / np.pi


def logcdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return jnp.log(cdf(x, loc, scale))


def sf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, loc, scale = promote_inexact(x, loc, scale)
    return 0.5 - jnp.arctan((x - loc) / scale) / np.pi


def logsf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return jnp.log(sf(x, loc, scale))


def ppf(q: Any, loc: Any = 0, scale: Any = 1) -> Any:
    q, loc, scale = promote_inexact(q, loc, scale)
    return loc + scale * jnp.tan(np.pi * (q - 0.5))


def isf(q: Any, loc: Any = 0, scale: Any = 1) -> Any:
    q, loc, scale = promote_inexact(q, loc, scale)
    return loc - scale * jnp.tan(np.pi * (q - 0.5))
