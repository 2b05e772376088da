"""``jax.scipy.special``: the special functions built from `transpiler.numpy` and
`transpiler.nn` (each differentiable and batchable as the code it is).

The approximations are XLA's and Cephes' float32 ones (``erfc``; ``gammaln`` is Lanczos'
with g = 7, accurate in float64 too), so float64 inputs get float32 accuracy where noted.
Branches are computed on safe operands (``where(c, f(safe_x), g(x))``), so that a branch
not taken never puts NaN into a derivative.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from transpiler import dtypes
from transpiler import numpy as jnp
from transpiler.nn import erf, erf_inv, log_softmax, logsumexp, sigmoid, softmax
from transpiler.primitives import conversions as conv
from transpiler.primitives.core import abstractify

erfinv = erf_inv
expit = sigmoid


def _inexact(x: Any) -> Any:
    """`x` as an array of its float type (integers promote to the default float)."""
    x = jnp.asarray(x)
    if dtypes.is_float(abstractify(x).dtype):
        return x
    return conv.convert_element_type(x, dtype=dtypes.default_float())


def _polynomial(x: Any, coefficients: Any) -> Any:
    """Horner's rule, highest-degree coefficient first."""
    p = jnp.zeros_like(x)
    for c in coefficients:
        p = p * x + c
    return p


_ERFC_P = (2.326819970068386e-2, -1.387039388740657e-1, 3.687424674597105e-1,
           -5.824733027278666e-1, 6.210004621745983e-1, -4.944515323274145e-1,
           3.404879937665872e-1, -2.741127028184656e-1, 5.638259427386472e-1)
_ERFC_R = (-1.047766399936249e1, 1.297719955372516e1, -7.495518717768503e0,
           2.921019019210786e0, -1.015265279202700e0, 4.218463358204948e-1,
           -2.820767439740514e-1, 5.641895067754075e-1)


def erfc(x: Any) -> Any:
    """``1 - erf(x)``, accurate in the tails (XLA's float32 form: ``exp(-x^2) / x`` times a
    rational function of ``1/x^2`` for ``|x| >= 1``)."""
    x = _inexact(x)
    ax = jnp.abs(x)
    tail = ax >= 1
    safe = jnp.where(tail, ax, jnp.ones_like(ax))
    q = 1 / safe
    y = q * q
    p = jnp.where(safe < 2, _polynomial(y, _ERFC_P), _polynomial(y, _ERFC_R))
    far = jnp.exp(-safe * safe) * q * p
    far = jnp.where(x < 0, 2 - far, far)
    return jnp.where(tail, far, 1 - erf(x))


def logit(x: Any) -> Any:
    """``log(x / (1 - x))``, the inverse of `expit`."""
    return jnp.log(x / (1 - x))


# --- the gamma family ------------------------------------------------------------------------

_LANCZOS_G = 7.0
_LANCZOS = (0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313,
            -176.61503916999185, 12.507343278686905, -0.13857109526572012,
            9.9843695780195716e-6, 1.5056327351493116e-7)
_LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)


def _gammaln_right(x: Any) -> Any:
    """``log Gamma(x)`` for ``x >= 0.5`` (Lanczos)."""
    z = x - 1
    series = jnp.full_like(z, _LANCZOS[0])
    for k, c in enumerate(_LANCZOS[1:], start=1):
        series = series + c / (z + k)
    t = z + _LANCZOS_G + 0.5
    return _LOG_SQRT_2PI + (z + 0.5) * jnp.log(t) - t + jnp.log(series)


def gammaln(x: Any) -> Any:
    """``log |Gamma(x)|``; ``inf`` at 0 and the negative integers. Left of 0.5 by the
    reflection ``log(pi / |sin(pi x)|) - log Gamma(1 - x)``."""
    x = _inexact(x)
    left = x < 0.5
    right_x = jnp.where(left, 1 - x, x)
    right = _gammaln_right(right_x)
    sine = jnp.abs(jnp.sin(np.pi * jnp.where(left, x, jnp.full_like(x, 0.25))))
    reflected = math.log(math.pi) - jnp.log(sine) - right
    pole = left & (x == jnp.floor(x))  # 0 and the negative integers
    return jnp.where(pole, jnp.full_like(x, np.inf), jnp.where(left, reflected, right))


def gamma(x: Any) -> Any:
    """``Gamma(x)``: ``exp(gammaln(x))`` with the sign of Gamma (negative on
    ``(-2k-1, -2k)``)."""
    x = _inexact(x)
    negative = (x < 0) & (jnp.floor(x) % 2 == 1)
    magnitude = jnp.exp(gammaln(x))
    value = jnp.where(negative, -magnitude, magnitude)
    # JAX's (and SciPy's) values at the poles: +-inf at +-0, NaN at the negative integers.
    return jnp.where(x == 0, 1 / x, jnp.where((x < 0) & (x == jnp.floor(x)),
                                              jnp.full_like(x, np.nan), value))


def digamma(x: Any) -> Any:
    """``d/dx log Gamma(x)``: six steps of ``psi(x) = psi(x + 1) - 1/x`` up to ``x + 6``,
    then the asymptotic series; left of 0.5 by the reflection
    ``psi(1 - x) - pi / tan(pi x)``."""
    x = _inexact(x)
    left = x < 0.5
    z = jnp.where(left, 1 - x, x)
    shift = jnp.zeros_like(z)
    for k in range(6):
        shift = shift + 1 / (z + k)
    w = z + 6
    inv2 = 1 / (w * w)
    series = inv2 * (1 / 12 - inv2 * (1 / 120 - inv2 * (1 / 252 - inv2 * (1 / 240
                                                                        - inv2 / 132))))
    right = jnp.log(w) - 0.5 / w - series - shift
    tangent = jnp.tan(np.pi * jnp.where(left, x, jnp.full_like(x, 0.25)))
    pole = left & (x == jnp.floor(x))  # NaN at 0 and the negative integers, as in JAX
    return jnp.where(pole, jnp.full_like(x, np.nan), jnp.where(left, right - np.pi / tangent,
                                                                right))


def betaln(a: Any, b: Any) -> Any:
    """``log |B(a, b)| = gammaln(a) + gammaln(b) - gammaln(a + b)``."""
    a, b = _inexact(a), _inexact(b)
    return gammaln(a) + gammaln(b) - gammaln(a + b)


def multigammaln(a: Any, d: int) -> Any:
    """The log of the multivariate gamma function of dimension `d` (a static int)."""
    if not isinstance(d, (int, np.integer)) or isinstance(d, bool) or d < 1:
        raise TypeError(f"multigammaln: d must be a positive static int, got {d!r}")
    a = _inexact(a)
    total = jnp.full_like(a, d * (d - 1) / 4 * math.log(math.pi))
    for j in range(int(d)):
        total = total + gammaln(a - j / 2)
    return total


# --- logs and entropies ----------------------------------------------------------------------

def xlogy(x: Any, y: Any) -> Any:
    """``x * log(y)``, 0 where ``x == 0`` (also when ``y == 0``)."""
    x, y = _inexact(x), _inexact(y)
    zero = x == 0
    return jnp.where(zero, jnp.zeros_like(x * y), x * jnp.log(jnp.where(zero, 1, y)))


def xlog1py(x: Any, y: Any) -> Any:
    """``x * log1p(y)``, 0 where ``x == 0``."""
    x, y = _inexact(x), _inexact(y)
    zero = x == 0
    return jnp.where(zero, jnp.zeros_like(x * y), x * jnp.log1p(jnp.where(zero, 0, y)))


def entr(x: Any) -> Any:
    """``-x log(x)`` for ``x > 0``, 0 at 0, ``-inf`` below."""
    x = _inexact(x)
    positive = x > 0
    inner = -x * jnp.log(jnp.where(positive, x, 1))
    return jnp.where(positive, inner, jnp.where(x == 0, jnp.zeros_like(x),
                                                jnp.full_like(x, -np.inf)))


# --- the normal distribution -----------------------------------------------------------------

def ndtr(x: Any) -> Any:
    """The standard normal CDF ``(1 + erf(x / sqrt 2)) / 2``, through `erfc` in the tails."""
    x = _inexact(x)
    return 0.5 * erfc(-x * np.sqrt(0.5))


def log_ndtr(x: Any) -> Any:
    """``log(ndtr(x))``, accurate in both tails: ``log1p(-ndtr(-x))`` above 0 and the
    asymptotic series ``-x^2/2 - log(-x sqrt(2 pi)) + log(1 - 1/x^2 + 3/x^4 - 15/x^6)``
    below -10."""
    x = _inexact(x)
    high, low = x > 0, x < -10
    middle = jnp.log(ndtr(jnp.where(high | low, jnp.zeros_like(x), x)))
    upper = jnp.log1p(-ndtr(-jnp.where(high, x, jnp.ones_like(x))))
    t = jnp.where(low, x, jnp.full_like(x, -11.0))
    inv2 = 1 / (t * t)
    lower = -0.5 * t * t - jnp.log(-t) - _LOG_SQRT_2PI + jnp.log1p(
        inv2 * (-1 + inv2 * (3 - 15 * inv2)))
    return jnp.where(high, upper, jnp.where(low, lower, middle))


def ndtri(p: Any) -> Any:
    """The standard normal quantile (inverse of `ndtr`): ``sqrt 2 erfinv(2p - 1)`` in the
    middle, ``-sqrt(-2 log p)`` in the tails, refined by three Newton steps on
    ``log_ndtr`` (from below the median, mirrored above it)."""
    p = _inexact(p)
    upper = p > 0.5
    q = jnp.where(upper, 1 - p, p)  # the lower-tail probability, in (0, 0.5]
    inside = (q > 0) & (q < 0.5)
    safe = jnp.where(inside, q, jnp.full_like(q, 0.25))
    middle = np.sqrt(2.0) * erf_inv(2 * safe - 1)
    tail = -jnp.sqrt(-2 * jnp.log(safe))
    x = jnp.where(safe < 1e-3, tail - jnp.log(-tail * np.sqrt(2 * np.pi)) / tail, middle)
    log_q = jnp.log(safe)
    for _ in range(3):  # Newton on log ndtr(x) = log q; its slope is pdf(x) / ndtr(x)
        log_cdf = log_ndtr(x)
        slope = jnp.exp(-0.5 * x * x - _LOG_SQRT_2PI - log_cdf)
        x = x - (log_cdf - log_q) / slope
    x = jnp.where(q == 0, jnp.full_like(x, -np.inf), jnp.where(q == 0.5, jnp.zeros_like(x), x))
    x = jnp.where((p < 0) | (p > 1) | jnp.isnan(p), jnp.full_like(x, np.nan), x)
    return jnp.where(upper, -x, x)


__all__ = ["betaln", "digamma", "entr", "erf", "erfc", "erfinv", "expit", "gamma", "gammaln",
           "log_ndtr", "log_softmax", "logit", "logsumexp", "multigammaln", "ndtr", "ndtri",
           "softmax", "xlog1py", "xlogy"]
