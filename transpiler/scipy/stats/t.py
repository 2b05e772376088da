"""``jax.scipy.stats.t``: Student's t distribution with `df` degrees of freedom."""

from __future__ import annotations

import math
from typing import Any

from transpiler import numpy as jnp
from transpiler.scipy.special import gammaln
from transpiler.scipy.stats.common import promote_inexact


def logpdf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, df, loc, scale = promote_inexact(x, df, loc, scale)
    z = (x - loc) / scale
    half = 0.5 * (df + 1)
    return (gammaln(half) - gammaln(0.5 * df) - 0.5 * jnp.log(df * math.pi) - jnp.log(scale)
            - half * jnp.log1p(z * z / df))


def pdf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return jnp.exp(logpdf(x, df, loc, scale))
