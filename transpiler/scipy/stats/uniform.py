"""``jax.scipy.stats.uniform``: the uniform distribution on ``[loc, loc + scale]``."""

from __future__ import annotations

from typing import Any

from transpiler import numpy as jnp
from transpiler.scipy.stats.common import outside, promote_inexact


def logpdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, loc, scale = promote_inexact(x, loc, scale)
    return outside((x < loc) | (x > loc + scale), -jnp.log(scale) + jnp.zeros_like(x))


def pdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return jnp.exp(logpdf(x, loc, scale))


def cdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    x, loc, scale = promote_inexact(x, loc, scale)
    return jnp.clip((x - loc) / scale, 0, 1)


def ppf(q: Any, loc: Any = 0, scale: Any = 1) -> Any:
    q, loc, scale = promote_inexact(q, loc, scale)
    return outside((q < 0) | (q > 1), loc + q * scale, float("nan"))
