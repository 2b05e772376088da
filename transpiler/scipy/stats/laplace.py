"""``jax.scipy.stats.laplace``: ``exp(-|x - loc| / scale) / (2 scale)``."""

from __future__ import annotations

import math
from typing import Any

from transpiler import numpy as jnp
from transpiler.scipy.stats.common import promote_inexact


def logpdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, loc, scale = promote_inexact(x, loc, scale)
    return -jnp.abs(x - loc) / scale - math.log(2) - jnp.log(scale)


def pdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return jnp.exp(logpdf(x, loc, scale))


def cdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, loc, scale = promote_inexact(x, loc, scale)
    z = (x - loc) / scale
    half = 0.5 * jnp.exp(-jnp.abs(z))
    return jnp.where(z < 0, half, 1 - half)
