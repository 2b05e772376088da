"""The regularized incomplete gamma functions as primitives (special_primitive.py):
``lax.igamma(a, x) = P(a, x)``, ``lax.igammac(a, x) = Q(a, x) = 1 - P(a, x)``, and the
derivatives ``lax.igamma_grad_a(a, x) = dP/da`` and ``lax.random_gamma_grad(a, x)`` (the
derivative of a Gamma(a, 1) sample ``x`` with respect to ``a``, by implicit
differentiation of ``P(a, x) = u``: ``-(dP/da) / (dP/dx)``).

The algorithms are XLA's (Cephes'): ``P`` by its power series where ``x < 1`` or
``x <= a``, ``Q`` by its continued fraction elsewhere, the other one as the complement;
the loops carry the derivative with respect to ``a`` alongside the value (forward mode,
stopping when it has converged), which gives ``dP/da``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from transpiler.lax.gamma_functions import digamma_of, lgamma_of
from transpiler.lax.special_primitive import define_special, finfo, loop
from transpiler.primitives.derivative_forms import elementwise

VALUE, DERIVATIVE, SAMPLE_DERIVATIVE = "value", "derivative", "sample derivative"
_MAX_FRACTION_TERMS = 2000


def _series(xp: Any, ax: Any, x: Any, a: Any, enabled: Any, mode: str) -> Any:
    """``P(a, x) = x^a e^-x / Gamma(a + 1) * sum_n x^n / ((a + 1) ... (a + n))`` where
    `enabled` (``ax = x^a e^-x / Gamma(a)``), or its derivative (`mode`)."""
    eps = float(finfo(x).eps)

    def step(state: tuple) -> tuple:
        on, r, c, ans, dc_da, dans_da = state
        r1 = r + 1
        dc_da1 = dc_da * (x / r1) - (c * x) / (r1 * r1)
        dans_da1 = dans_da + dc_da1
        c1 = c * (x / r1)
        ans1 = ans + c1
        if mode == VALUE:
            going = on & (c1 / ans1 > eps)
        else:
            going = on & (xp.abs(dc_da1 / dans_da1) > eps)
        return (going, *[xp.where(on, new, old) for new, old in
                         ((r1, r), (c1, c), (ans1, ans), (dc_da1, dc_da), (dans_da1, dans_da))])

    one, zero = xp.ones_like(a), xp.zeros_like(a)
    _, _, _, ans, _, dans_da = loop(xp, lambda s: xp.any(s[0]), step,
                                    (enabled, a, one, one, zero, zero))
    if mode == VALUE:
        return ans * ax / a
    dlogax_da = xp.log(x) - digamma_of(xp, a + 1)
    if mode == DERIVATIVE:
        return ax * (ans * dlogax_da + dans_da) / a
    return -(dans_da + ans * dlogax_da) * x / a


def _continued_fraction(xp: Any, ax: Any, x: Any, a: Any, enabled: Any, mode: str) -> Any:
    """``Q(a, x)`` by Legendre's continued fraction where `enabled`, or its derivative."""
    eps = float(finfo(x).eps)

    def step(state: tuple) -> tuple:
        (on, ans, y, z, c, pkm1, qkm1, pkm2, qkm2,
         dpkm2_da, dqkm2_da, dpkm1_da, dqkm1_da, dans_da) = state
        c = c + 1
        y1, z1 = y + 1, z + 2
        yc = y1 * c
        pk = pkm1 * z1 - pkm2 * yc
        qk = qkm1 * z1 - qkm2 * yc
        nonzero = qk != 0
        r = pk / xp.where(nonzero, qk, xp.ones_like(qk))
        t = xp.where(nonzero, xp.abs((ans - r) / r), xp.ones_like(r))
        ans1 = xp.where(nonzero, r, ans)
        dpk_da = dpkm1_da * z1 - pkm1 - dpkm2_da * yc + pkm2 * c
        dqk_da = dqkm1_da * z1 - qkm1 - dqkm2_da * yc + qkm2 * c
        dans_da1 = xp.where(nonzero, (dpk_da - ans1 * dqk_da) / xp.where(nonzero, qk, 1),
                            dans_da)
        grad_change = xp.where(nonzero, xp.abs(dans_da1 - dans_da), xp.ones_like(dans_da))
        # Rescale when the convergents grow past 1 / eps (they only matter as a ratio).
        scale = xp.where(xp.abs(pk) > 1 / eps, xp.full_like(pk, eps), xp.ones_like(pk))
        news = (ans1, y1, z1, pk * scale, qk * scale, pkm1 * scale, qkm1 * scale,
                dpkm1_da * scale, dqkm1_da * scale, dpk_da * scale, dqk_da * scale, dans_da1)
        olds = (ans, y, z, pkm1, qkm1, pkm2, qkm2, dpkm2_da, dqkm2_da, dpkm1_da, dqkm1_da,
                dans_da)
        going = on & ((t > eps) if mode == VALUE else (grad_change > eps))
        kept = [xp.where(on, new, old) for new, old in zip(news, olds)]
        return (going, kept[0], kept[1], kept[2], c, *kept[3:])

    y = 1 - a
    z = x + y + 1
    pkm1, qkm1 = x + 1, z * x
    ans = pkm1 / qkm1
    zero = xp.zeros_like(x)
    dqkm1_da = -x
    count = xp.zeros((), dtype=x.dtype)  # the terms taken, the same for every element
    state = (enabled, ans, y, z, count, pkm1, qkm1, xp.ones_like(x), x,
             zero, zero, zero, dqkm1_da, -ans * dqkm1_da / qkm1)
    final = loop(xp, lambda s: (s[4] < _MAX_FRACTION_TERMS) & xp.any(s[0]), step, state)
    ans, dans_da = final[1], final[13]
    if mode == VALUE:
        return ans * ax
    dlogax_da = xp.log(x) - digamma_of(xp, a)
    if mode == DERIVATIVE:
        return ax * (ans * dlogax_da + dans_da)
    return -(dans_da + ans * dlogax_da) * x


def _prefactor(xp: Any, a: Any, x: Any) -> tuple[Any, Any]:
    """``(x^a e^-x / Gamma(a), whether it underflows)``."""
    log_ax = a * xp.log(x) - x - lgamma_of(xp, a)
    return xp.exp(log_ax), log_ax < -np.log(finfo(x).max)


def igamma_algorithm(xp: Any, a: Any, x: Any) -> Any:
    nan = xp.isnan(a) | xp.isnan(x)
    x_inf, x_zero, a_zero = x == np.inf, x == 0, a == 0
    domain = (x < 0) | (a < 0) | (a_zero & x_zero) | nan
    complement = (x >= 1) & (x > a)
    ax, underflow = _prefactor(xp, a, x)
    enabled = ~(x_zero | domain | underflow | x_inf)
    out = xp.where(complement,
                   1 - _continued_fraction(xp, ax, x, a, enabled & complement, VALUE),
                   _series(xp, ax, x, a, enabled & ~complement, VALUE))
    out = xp.where(x_zero | ((a == np.inf) & ~x_inf), xp.zeros_like(out), out)  # (JAX: NaN)
    out = xp.where(x_inf, xp.ones_like(out), out)
    return xp.where(domain, xp.full_like(out, np.nan), out)


def igammac_algorithm(xp: Any, a: Any, x: Any) -> Any:
    nan = xp.isnan(a) | xp.isnan(x)
    x_inf, x_zero, a_zero = x == np.inf, x == 0, a == 0
    domain = (x < 0) | (a < 0) | (a_zero & x_zero) | nan
    series = (x < 1) | (x < a)
    ax, underflow = _prefactor(xp, a, x)
    enabled = ~(domain | underflow | x_inf | a_zero)
    out = xp.where(series, 1 - _series(xp, ax, x, a, enabled & series, VALUE),
                   _continued_fraction(xp, ax, x, a, enabled & ~series, VALUE))
    out = xp.where(x_inf | a_zero, xp.zeros_like(out), out)
    out = xp.where((a == np.inf) & ~x_inf, xp.ones_like(out), out)  # (JAX: NaN)
    return xp.where(domain, xp.full_like(out, np.nan), out)


def _derivative(xp: Any, a: Any, x: Any, mode: str) -> Any:
    nan = xp.isnan(a) | xp.isnan(x)
    x_zero = x == 0
    domain = (x < 0) | (a <= 0)
    complement = (x > 1) & (x > a)
    ax, underflow = _prefactor(xp, a, x)
    enabled = ~(x_zero | domain | underflow | nan)
    out = xp.where(complement,
                   -_continued_fraction(xp, ax, x, a, enabled & complement, mode),
                   _series(xp, ax, x, a, enabled & ~complement, mode))
    out = xp.where(x_zero, xp.zeros_like(out), out)
    return xp.where(domain | nan, xp.full_like(out, np.nan), out)


def igamma_grad_a_algorithm(xp: Any, a: Any, x: Any) -> Any:
    return _derivative(xp, a, x, DERIVATIVE)


def random_gamma_grad_algorithm(xp: Any, a: Any, x: Any) -> Any:
    return _derivative(xp, a, x, SAMPLE_DERIVATIVE)


igamma = define_special("igamma", igamma_algorithm,
                        doc="The regularized lower incomplete gamma function P(a, x).")
igammac = define_special("igammac", igammac_algorithm,
                         doc="The regularized upper incomplete gamma function Q(a, x).")
igamma_grad_a = define_special("igamma_grad_a", igamma_grad_a_algorithm,
                               doc="dP(a, x)/da, elementwise.")
random_gamma_grad = define_special(
    "random_gamma_grad", random_gamma_grad_algorithm,
    doc="The derivative of a Gamma(a, 1) sample x with respect to a.")

# dP/dx is the density x^(a-1) e^-x / Gamma(a).
_DENSITY = "jnp.exp((a - 1) * jnp.log(x) - x - lax.lgamma(a))"
igamma.def_rules(**elementwise(a="{g} * lax.igamma_grad_a(a, x)", x="{g} * " + _DENSITY))
igammac.def_rules(**elementwise(a="-{g} * lax.igamma_grad_a(a, x)", x="-{g} * " + _DENSITY))
igamma_grad_a.def_rules(**elementwise(
    a="ad.no_derivative('igamma_grad_a', 'a', {g})",
    x=f"{{g}} * {_DENSITY} * (jnp.log(x) - lax.digamma(a))"))
# With P_a = dP/da and p the density: out = -P_a / p, so d out / dx = -(P_ax p - P_a p_x) / p^2
# = -(log x - digamma(a)) - out ((a - 1) / x - 1).
random_gamma_grad.def_rules(**elementwise(
    a="ad.no_derivative('random_gamma_grad', 'a', {g})",
    x="{g} * (lax.digamma(a) - jnp.log(x) - out * ((a - 1) / x - 1))"))
