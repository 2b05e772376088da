"""``lax.lgamma``, ``lax.digamma``, ``lax.polygamma`` and ``lax.zeta`` (Hurwitz's) as
primitives (special_primitive.py).

Under a trace each lowers to its CHLO op (XLA's algorithms, so compiled results are
JAX's). Eagerly they run the algorithms below in NumPy, accurate to float64:

- ``lgamma``: ten steps of ``lgamma(x) = lgamma(x + 1) - log(x)``, then Stirling's series
  right of 1/2; the reflection ``log(pi / |sin(pi x)|) - lgamma(1 - x)`` left of it;
- ``digamma``: ten steps of ``psi(x) = psi(x + 1) - 1/x``, then the asymptotic series in
  ``1 / x^2`` (Bernoulli numbers); the reflection ``psi(1 - x) - pi / tan(pi x)`` left of 1/2;
- ``zeta(s, q)``: the Euler-Maclaurin formula after 16 terms of the sum ``(q + k)^-s``;
- ``polygamma(m, x) = (-1)^(m+1) m! zeta(m + 1, x)`` for integer ``m >= 1``, digamma for 0.

Derivatives: ``lgamma' = digamma``, ``digamma' = polygamma(1, .)``, ``polygamma(m, .)' =
polygamma(m + 1, .)``, ``d zeta(s, q) / dq = -s zeta(s + 1, q)`` and ``d zeta / ds`` from the
derivative of the Euler-Maclaurin formula (JAX differentiates a series too); none with
respect to the order ``m`` (an error, as in JAX).
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np

from transpiler import numpy as jnp
from transpiler.lax.special_primitive import define_special
from transpiler.primitives.derivative_forms import elementwise

_LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)


def _bernoulli(count: int) -> list[Fraction]:
    """B_0 ... B_(count - 1), from ``sum_{j<=m} C(m+1, j) B_j = 0``."""
    b: list[Fraction] = [Fraction(1)]
    for m in range(1, count):
        b.append(-sum((math.comb(m + 1, j) * b[j] for j in range(m)), Fraction(0)) / (m + 1))
    return b


_B = _bernoulli(28)


_STEPS = 10  # recurrence steps before an asymptotic series
_STIRLING = [float(_B[2 * k] / (2 * k * (2 * k - 1))) for k in range(1, 8)]  # k = 1 ... 7
_PSI_SERIES = [float(_B[2 * k] / (2 * k)) for k in range(1, 8)]


def _series_in(xp: Any, w: Any, coefficients: list[float]) -> Any:
    """``sum_k coefficients[k-1] / w^(2k)`` (Horner's rule in ``1 / w^2``)."""
    inv2 = 1 / (w * w)
    total = xp.zeros_like(w)
    for c in reversed(coefficients):
        total = (total + c) * inv2
    return total


def _lgamma_right(xp: Any, x: Any) -> Any:
    """``log Gamma(x)`` for ``x >= 1/2``: ``lgamma(x + 10) - log(x (x + 1) ... (x + 9))``,
    the first by Stirling's series."""
    shift = xp.zeros_like(x)
    for k in range(_STEPS):
        shift = shift + xp.log(x + k)
    w = x + _STEPS
    stirling = (w - 0.5) * xp.log(w) - w + _LOG_SQRT_2PI + w * _series_in(xp, w, _STIRLING)
    return stirling - shift


def lgamma_algorithm(xp: Any, x: Any) -> Any:
    """``log |Gamma(x)|``; ``inf`` at 0, the negative integers and +-inf."""
    left = x < 0.5
    right = _lgamma_right(xp, xp.where(left, 1 - x, x))
    sine = xp.abs(xp.sin(np.pi * xp.where(left, x, xp.full_like(x, 0.25))))
    reflected = math.log(math.pi) - xp.log(sine) - right
    pole = (left & (x == xp.floor(x))) | (xp.abs(x) == np.inf)
    return xp.where(pole, xp.full_like(x, np.inf), xp.where(left, reflected, right))


def digamma_algorithm(xp: Any, x: Any) -> Any:
    """``d/dx log Gamma(x)``; NaN at 0 and the negative integers (JAX's value)."""
    left = x < 0.5
    z = xp.where(left, 1 - x, x)
    shift = xp.zeros_like(z)
    for k in range(_STEPS):
        shift = shift + 1 / (z + k)
    w = z + _STEPS
    right = xp.log(w) - 0.5 / w - _series_in(xp, w, _PSI_SERIES) - shift
    tangent = xp.tan(np.pi * xp.where(left, x, xp.full_like(x, 0.25)))
    pole = left & (x == xp.floor(x))
    return xp.where(pole, xp.full_like(x, np.nan),
                    xp.where(left, right - np.pi / tangent, right))


_TERMS = 16
_EULER_MACLAURIN = [float(_B[2 * j] / math.factorial(2 * j)) for j in range(1, 13)]


def zeta_algorithm(xp: Any, s: Any, q: Any) -> Any:
    """Hurwitz's ``zeta(s, q) = sum_k (q + k)^-s``: ``inf`` at ``s == 1`` and at the poles
    ``q = 0, -1, ...``; NaN for ``s < 1`` and for a negative ``q`` with a fractional ``s``
    (SciPy's and XLA's domain)."""
    total = xp.zeros_like(q)
    for k in range(_TERMS):
        total = total + xp.power(q + k, -s)
    w = q + _TERMS
    total = total + xp.power(w, 1 - s) / (s - 1) + 0.5 * xp.power(w, -s)
    rising = s  # s (s + 1) ... (s + 2j - 2)
    power = xp.power(w, -s - 1)  # w^(-s - 2j + 1)
    inv2 = 1 / (w * w)
    for j, c in enumerate(_EULER_MACLAURIN, start=1):
        total = total + c * rising * power
        rising = rising * (s + 2 * j - 1) * (s + 2 * j)
        power = power * inv2
    pole = (q <= 0) & (q == xp.floor(q))
    total = xp.where(pole | (s == 1), xp.full_like(total, np.inf), total)
    undefined = (s < 1) | ((q < 0) & (s != xp.floor(s)) & ~pole) | xp.isnan(s) | xp.isnan(q)
    return xp.where(undefined, xp.full_like(total, np.nan), total)


def zeta_s_derivative_algorithm(xp: Any, s: Any, q: Any) -> Any:
    """``d zeta(s, q) / ds``: the derivative of `zeta_algorithm`'s formula, term by term."""
    total = xp.zeros_like(q)
    for k in range(_TERMS):
        total = total - xp.log(q + k) * xp.power(q + k, -s)
    w = q + _TERMS
    log_w = xp.log(w)
    total = total - xp.power(w, 1 - s) * (log_w / (s - 1) + 1 / ((s - 1) * (s - 1))) \
        - 0.5 * log_w * xp.power(w, -s)
    rising, slope = s, xp.ones_like(s)  # R_j(s) = s (s + 1) ... (s + 2j - 2), and R_j'
    power = xp.power(w, -s - 1)
    inv2 = 1 / (w * w)
    for j, c in enumerate(_EULER_MACLAURIN, start=1):
        total = total + c * (slope - log_w * rising) * power
        a, b = s + 2 * j - 1, s + 2 * j
        rising, slope = rising * a * b, slope * a * b + rising * (a + b)
        power = power * inv2
    return total


def zeta_s_derivative(s: Any, q: Any) -> Any:
    """``d zeta(s, q) / ds`` of traced or eager arrays (the rule of `zeta` in `s`)."""
    return zeta_s_derivative_algorithm(jnp, s, q)


def polygamma_algorithm(xp: Any, m: Any, x: Any) -> Any:
    """``psi^(m)(x)``; NaN unless `m` is a nonnegative integer."""
    order = (m >= 0) & (m == xp.floor(m))
    safe = xp.where(order & (m > 0), m, xp.ones_like(m))
    sign = xp.where(safe % 2 == 1, xp.ones_like(m), -xp.ones_like(m))
    value = sign * xp.exp(lgamma_algorithm(xp, safe + 1)) * zeta_algorithm(xp, safe + 1, x)
    value = xp.where(m == 0, digamma_algorithm(xp, x), value)
    return xp.where(order, value, xp.full_like(value, np.nan))


lgamma = define_special("lgamma", lgamma_algorithm, chlo="chlo.lgamma",
                        doc="``log |Gamma(x)|``, elementwise.")
digamma = define_special("digamma", digamma_algorithm, chlo="chlo.digamma",
                         doc="The digamma function ``psi(x)``, elementwise.")
polygamma = define_special("polygamma", polygamma_algorithm, chlo="chlo.polygamma",
                           doc="The polygamma function ``psi^(m)(x)``, elementwise.")
zeta = define_special("zeta", zeta_algorithm, chlo="chlo.zeta",
                      doc="Hurwitz's zeta function ``zeta(x, q)``, elementwise.")



def lgamma_of(xp: Any, x: Any) -> Any:
    """``lgamma(x)`` inside another algorithm in namespace `xp`: the primitive when
    tracing (its CHLO op), the NumPy algorithm eagerly."""
    return lgamma_algorithm(np, x) if xp is np else lgamma(x)


def digamma_of(xp: Any, x: Any) -> Any:
    return digamma_algorithm(np, x) if xp is np else digamma(x)


lgamma.def_rules(**elementwise(x="{g} * lax.digamma(x)"))
digamma.def_rules(**elementwise(x="{g} * lax.polygamma(1, x)"))
polygamma.def_rules(**elementwise(
    m="ad.no_derivative('polygamma', 'm', {g})",
    x="{g} * lax.polygamma(m + 1, x)"))
zeta.def_rules(**elementwise(
    x="{g} * ad.zeta_s_derivative(x, q)",
    q="{g} * -x * lax.zeta(x + 1, q)"))
