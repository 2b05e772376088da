"""``lax.betainc(a, b, x)``: the regularized incomplete beta function
``I_x(a, b) = B(x; a, b) / B(a, b)``, as a primitive (special_primitive.py).

XLA's algorithm: the continued fraction of DLMF 8.17.22, evaluated by the modified Lentz
method, converges fast for ``x < (a + 1) / (a + b + 2)``; elsewhere the symmetry
``I_x(a, b) = 1 - I_(1-x)(b, a)`` brings it there. Derivative with respect to `x` only
(the integrand ``x^(a-1) (1-x)^(b-1) / B(a, b)``); with respect to `a` or `b` it is an
error, as in JAX.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from transpiler.lax.gamma_functions import lgamma_of
from transpiler.lax.special_primitive import define_special, finfo, loop
from transpiler.primitives.derivative_forms import elementwise


def _lentz(xp: Any, a: Any, b: Any, x: Any) -> Any:
    """The continued fraction ``1 / (1 + d_1 / (1 + d_2 / (1 + ...)))`` with DLMF's
    ``d_(2m+1) = -(a + m)(a + b + m) x / ((a + 2m)(a + 2m + 1))`` and
    ``d_(2m) = m (b - m) x / ((a + 2m - 1)(a + 2m))``."""
    info = finfo(x)
    tiny = float(info.eps) / 2
    limit = 200 if info.eps > 1e-10 else 600

    def numerator(iteration: Any) -> Any:
        m = (iteration - 1) // 2
        mf = xp.asarray(m, dtype=x.dtype) + xp.zeros_like(x)
        first = -(a + b) * x / (a + 1)
        even = xp.where(m == 0, first, -(a + mf) * (a + b + mf) * x
                        / ((a + 2 * mf) * (a + 2 * mf + 1)))
        odd = mf * (b - mf) * x / ((a + 2 * mf - 1) * (a + 2 * mf))
        value = xp.where(iteration % 2 == 0, even, odd)
        return xp.where(iteration == 1, xp.ones_like(x), value)

    def step(state: tuple) -> tuple:
        iteration, _, c, d, h = state
        p = numerator(iteration)
        c = 1 + p / c
        c = xp.where(xp.abs(c) < tiny, xp.full_like(c, tiny), c)
        d = 1 + p * d
        d = 1 / xp.where(xp.abs(d) < tiny, xp.full_like(d, tiny), d)
        delta = c * d
        return iteration + 1, xp.any(xp.abs(delta - 1) >= tiny), c, d, h * delta

    h = xp.full_like(x, tiny)
    start = (xp.asarray(1, dtype=np.int32), xp.asarray(True), h, xp.zeros_like(x), h)
    return loop(xp, lambda s: (s[0] < limit) & s[1], step, start)[4]


def betainc_algorithm(xp: Any, a: Any, b: Any, x: Any) -> Any:
    a_zero = (a == 0) | (b == np.inf)
    b_zero = (b == 0) | (a == np.inf)
    x_zero, x_one = x == 0, x == 1
    nan = xp.isnan(a) | xp.isnan(b) | xp.isnan(x)
    zero = (b_zero & ~x_one) | (a_zero & x_zero)
    one = (a_zero & ~x_zero) | (b_zero & x_one)
    undefined = (a < 0) | (b < 0) | (x < 0) | (x > 1) | (a_zero & b_zero) | nan

    rapid = x < (a + 1) / (a + b + 2)
    a, b, x = xp.where(rapid, a, b), xp.where(rapid, b, a), xp.where(rapid, x, 1 - x)
    fraction = _lentz(xp, a, b, x)
    # a Gamma(a) -> 1 as a -> 0: the factor x^a (1-x)^b / (a B(a, b)) without 1/a there.
    log_beta_rest = lgamma_of(xp, b) - lgamma_of(xp, a + b)
    very_small = 2 * float(finfo(x).tiny)
    factor = xp.where(a < very_small, xp.exp(xp.log1p(-x) * b - log_beta_rest),
                      xp.exp(xp.log(x) * a + xp.log1p(-x) * b - lgamma_of(xp, a)
                             - log_beta_rest) / a)
    result = fraction * factor
    result = xp.where(rapid, result, 1 - result)
    result = xp.where(zero, xp.zeros_like(result), result)
    result = xp.where(one, xp.ones_like(result), result)
    return xp.where(undefined, xp.full_like(result, np.nan), result)


betainc = define_special("regularized_incomplete_beta", betainc_algorithm,
                         doc="The regularized incomplete beta function I_x(a, b).")

betainc.def_rules(**elementwise(
    a="ad.no_derivative('betainc', 'a', {g})",
    b="ad.no_derivative('betainc', 'b', {g})",
    x="{g} * jnp.exp((b - 1) * jnp.log1p(-x) + (a - 1) * jnp.log(x) - lax.lgamma(a) "
      "- lax.lgamma(b) + lax.lgamma(a + b))"))
