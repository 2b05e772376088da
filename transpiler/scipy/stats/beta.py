"""``jax.scipy.stats.beta``: the beta distribution on ``[loc, loc + scale]``."""

from __future__ import annotations

from typing import Any

from transpiler import numpy as jnp
from transpiler.scipy.special import betaln, xlog1py, xlogy
from transpiler.scipy.stats.common import outside, promote_inexact


def logpdf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, a, b, loc, scale = promote_inexact(x, a, b, loc, scale)
    z = (x - loc) / scale
    out_of_support = (z < 0) | (z > 1)
    inside = jnp.where(out_of_support, jnp.full_like(z, 0.5), z)
    value = xlogy(a - 1, inside) + xlog1py(b - 1, -inside) - betaln(a, b) - jnp.log(scale)
    return outside(out_of_support, value)


def pdf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return jnp.exp(logpdf(x, a, b, loc, scale))
