"""``jax.scipy.stats.beta``: the beta distribution on ``[loc, loc + scale]``."""

from __future__ import annotations

from typing import Any

from transpiler import dtypes
from transpiler import numpy as jnp
from transpiler.scipy.special import betainc, betaln, xlog1py, xlogy
from transpiler.scipy.promotion import as_dtype
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


def cdf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """``I_z(a, b)`` at ``z = (x - loc) / scale`` clipped to ``[0, 1]``. (Each argument is
    converted on its own: betainc has no derivative in `a` or `b`, so they must stay
    constant when `x` is differentiated.)"""
    dtype = dtypes.to_inexact(jnp.result_type(x, a, b, loc, scale))
    z = (as_dtype(x, dtype) - as_dtype(loc, dtype)) / as_dtype(scale, dtype)
    return betainc(as_dtype(a, dtype), as_dtype(b, dtype), jnp.clip(z, 0, 1))


def logcdf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return jnp.log(cdf(x, a, b, loc, scale))


def sf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """``I_(1-z)(b, a) = 1 - cdf``, computed without the cancellation."""
    dtype = dtypes.to_inexact(jnp.result_type(x, a, b, loc, scale))
    z = (as_dtype(x, dtype) - as_dtype(loc, dtype)) / as_dtype(scale, dtype)
    return betainc(as_dtype(b, dtype), as_dtype(a, dtype), 1 - jnp.clip(z, 0, 1))


def logsf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return jnp.log(sf(x, a, b, loc, scale))

