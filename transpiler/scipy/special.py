"""``jax.scipy.special``: SciPy's special functions with JAX's signatures.

The gamma, incomplete gamma and beta, zeta and Bessel families are the `transpiler.lax`
primitives (lax/gamma_functions.py, incomplete_gamma.py, incomplete_beta.py, bessel.py:
derivative rules of their own, XLA's algorithms under ``jit``); the rest is built from
`transpiler.numpy` and `transpiler.nn`, differentiable and batchable as the code it is.
The exponential integrals (exp1, expi, expn, sici, spence) are in exponential_integrals.py,
the error function's relatives (dawsn, erfcx, fresnel, owens_t, wofz) in
error_functions.py, each with its analytic derivative as a ``custom_jvp`` rule.
The hypergeometric functions (hyp1f1, hyp2f1, custom_jvp too) are in hypergeometric.py,
bessel_jn in bessel_series.py, sph_harm_y in spherical_harmonics.py, bernoulli and comb in
combinatorics.py, boxcox and boxcox1p in power_transforms.py.
``erfc`` is XLA's float32 approximation, so float64 inputs get float32 accuracy there.
Branches are computed on safe operands (``where(c, f(safe_x), g(x))``), so that a branch
not taken never puts NaN into a derivative.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from transpiler import dtypes, lax
from transpiler import numpy as jnp
from transpiler.errors import located
from transpiler.lax.special import erfc
from transpiler.nn import erf, erf_inv, log_softmax, logsumexp, sigmoid, softmax
from transpiler.primitives import conversions as conv
from transpiler.primitives.core import abstractify
from transpiler.scipy.bessel_series import bessel_jn
from transpiler.scipy.combinatorics import bernoulli, comb
from transpiler.scipy.error_functions import dawsn, erfcx, fresnel, owens_t, wofz
from transpiler.scipy.exponential_integrals import exp1, expi, expn, sici, spence
from transpiler.scipy.hypergeometric import hyp1f1, hyp2f1
from transpiler.scipy.power_transforms import boxcox, boxcox1p
from transpiler.scipy.promotion import as_dtype, promote_inexact
from transpiler.scipy.spherical_harmonics import sph_harm_y

erfinv = erf_inv
expit = sigmoid


def _inexact(x: Any) -> Any:
    """`x` as an array of its float type (integers promote to the default float)."""
    x = jnp.asarray(x)
    if dtypes.is_float(abstractify(x).dtype):
        return x
    return conv.convert_element_type(x, dtype=dtypes.default_float())



def logit(x: Any) -> Any:
    """``log(x / (1 - x))``, the inverse of `expit`."""
    return jnp.log(x / (1 - x))


# --- the gamma family ------------------------------------------------------------------------

_LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)


def gammaln(x: Any) -> Any:
    """``log |Gamma(x)|`` (``lax.lgamma``); ``inf`` at 0 and the negative integers."""
    return lax.lgamma(_inexact(x))


def gammasgn(x: Any) -> Any:
    """The sign of ``Gamma(x)``: -1 on ``(-2k-1, -2k)`` and at -0, NaN at the negative
    integers and NaN, else 1."""
    x = _inexact(x)
    floor = jnp.floor(x)
    negative = x < 0
    return jnp.where((negative & (x == floor)) | jnp.isnan(x), jnp.full_like(x, np.nan),
                     jnp.where((negative & (floor % 2 != 0)) | ((x == 0) & jnp.signbit(x)),
                               -jnp.ones_like(x), jnp.ones_like(x)))


def gamma(x: Any) -> Any:
    """``Gamma(x) = gammasgn(x) exp(gammaln(x))``."""
    x = _inexact(x)
    return gammasgn(x) * jnp.exp(lax.lgamma(x))


def loggamma(x: Any) -> Any:
    """``log Gamma(x)`` for real ``x > 0`` (NaN where Gamma is negative, as SciPy's real
    loggamma)."""
    x = _inexact(x)
    return jnp.where(gammasgn(x) < 0, jnp.full_like(x, np.nan), lax.lgamma(x))


def digamma(x: Any) -> Any:
    """``d/dx log Gamma(x)`` (``lax.digamma``); NaN at 0 and the negative integers."""
    return lax.digamma(_inexact(x))


def polygamma(n: Any, x: Any) -> Any:
    """``psi^(n)(x)``, the n-th derivative of `digamma`; `n` must be of an integer dtype
    (JAX's rule)."""
    if not dtypes.is_int(abstractify(n).dtype):
        raise located(ValueError, f"polygamma: argument `n` must be of integer type, got "
                      f"{abstractify(n).dtype}", "pass an integer order, e.g. 1 or "
                      "jnp.asarray(n, int)")
    dtype = dtypes.to_inexact(jnp.result_type(n, x))
    return lax.polygamma(as_dtype(n, dtype), as_dtype(x, dtype))


def zeta(x: Any, q: Any = None) -> Any:
    """Hurwitz's zeta function ``sum_k (q + k)^-x`` (``lax.zeta``)."""
    if q is None:
        raise located(NotImplementedError, "Riemann zeta function not implemented; pass "
                      "q != None to compute the Hurwitz Zeta function.", "zeta(x, 1.0) is "
                      "Riemann's zeta for x > 1")
    dtype = dtypes.to_inexact(jnp.result_type(x, q))
    return lax.zeta(as_dtype(x, dtype), as_dtype(q, dtype))


def gammainc(a: Any, x: Any) -> Any:
    """The regularized lower incomplete gamma function ``P(a, x)`` (``lax.igamma``)."""
    dtype = dtypes.to_inexact(jnp.result_type(a, x))
    return lax.igamma(as_dtype(a, dtype), as_dtype(x, dtype))


def gammaincc(a: Any, x: Any) -> Any:
    """The regularized upper incomplete gamma function ``Q(a, x) = 1 - P(a, x)``."""
    dtype = dtypes.to_inexact(jnp.result_type(a, x))
    return lax.igammac(as_dtype(a, dtype), as_dtype(x, dtype))


def betainc(a: Any, b: Any, x: Any) -> Any:
    """The regularized incomplete beta function ``I_x(a, b)`` (``lax.betainc``)."""
    dtype = dtypes.to_inexact(jnp.result_type(a, b, x))
    return lax.betainc(as_dtype(a, dtype), as_dtype(b, dtype), as_dtype(x, dtype))


def factorial(n: Any, exact: bool = False) -> Any:
    """``n! = Gamma(n + 1)`` as a float, 0 for negative `n`."""
    if exact:
        raise located(NotImplementedError, "factorial with exact=True",
                      "use math.factorial for exact integers")
    n = _inexact(n)
    return jnp.where(n < 0, jnp.zeros_like(n), jnp.exp(lax.lgamma(n + 1)))


def poch(z: Any, m: Any) -> Any:
    """The rising factorial ``Gamma(z + m) / Gamma(z)`` (1 where ``m == 0``), as
    ``exp(gammaln(z + m) - gammaln(z))`` with the signs, so that it does not overflow where
    the two gammas do (JAX's quotient is NaN from ``z = 35`` in float32); the quotient at
    the poles."""
    z, m = promote_inexact(z, m)
    zm = z + m
    finite = (gammasgn(z) == gammasgn(z)) & (gammasgn(zm) == gammasgn(zm))  # not at a pole
    logs = gammasgn(zm) * gammasgn(z) * jnp.exp(gammaln(zm) - gammaln(z))
    value = jnp.where(finite, logs, gamma(zm) / gamma(z))
    return jnp.where(m == 0, jnp.ones_like(value), value)


# --- Bessel functions ------------------------------------------------------------------------

def i0e(x: Any) -> Any:
    """``exp(-|x|) I0(x)`` (``lax.bessel_i0e``)."""
    return lax.bessel_i0e(_inexact(x))


def i1e(x: Any) -> Any:
    """``exp(-|x|) I1(x)`` (``lax.bessel_i1e``)."""
    return lax.bessel_i1e(_inexact(x))


def i0(x: Any) -> Any:
    """The modified Bessel function ``I0(x)``."""
    x = _inexact(x)
    return jnp.exp(jnp.abs(x)) * lax.bessel_i0e(x)


def i1(x: Any) -> Any:
    """The modified Bessel function ``I1(x)``."""
    x = _inexact(x)
    return jnp.exp(jnp.abs(x)) * lax.bessel_i1e(x)


def betaln(a: Any, b: Any) -> Any:
    """``log |B(a, b)| = gammaln(a) + gammaln(b) - gammaln(a + b)``."""
    a, b = promote_inexact(a, b)
    return gammaln(a) + gammaln(b) - gammaln(a + b)


def beta(a: Any, b: Any) -> Any:
    """``B(a, b) = Gamma(a) Gamma(b) / Gamma(a + b)``, with its sign."""
    a, b = promote_inexact(a, b)
    return gammasgn(a) * gammasgn(b) * gammasgn(a + b) * jnp.exp(betaln(a, b))


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


def rel_entr(p: Any, q: Any) -> Any:
    """``p log(p / q)`` for ``p, q > 0``, 0 where ``p == 0 <= q``, ``inf`` elsewhere (the
    elementwise relative entropy)."""
    p, q = promote_inexact(p, q)
    both = (p > 0) & (q > 0)
    safe_p = jnp.where(both, p, jnp.ones_like(p))
    safe_q = jnp.where(both, q, jnp.ones_like(q))
    value = safe_p * jnp.log(safe_p) - xlogy(safe_p, safe_q)
    return jnp.where(both, value, jnp.where((p == 0) & (q >= 0), jnp.zeros_like(value),
                                            jnp.full_like(value, np.inf)))


def kl_div(p: Any, q: Any) -> Any:
    """``p log(p / q) - p + q`` (`rel_entr` plus the terms that make it a divergence
    between unnormalized measures)."""
    p, q = promote_inexact(p, q)
    return rel_entr(p, q) - p + q


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


__all__ = ["bernoulli", "bessel_jn", "beta", "betainc", "betaln", "boxcox", "boxcox1p",
           "comb", "dawsn", "digamma", "entr", "erf", "erfc",
           "erfcx", "erfinv", "exp1", "expi", "expit", "expn", "factorial", "fresnel",
           "gamma", "gammainc", "gammaincc", "gammaln", "gammasgn", "hyp1f1", "hyp2f1", "i0",
           "i0e", "i1", "i1e", "kl_div", "log_ndtr", "log_softmax", "loggamma", "logit", "logsumexp",
           "multigammaln", "ndtr", "ndtri", "owens_t", "poch", "polygamma", "rel_entr",
           "sici", "softmax", "sph_harm_y", "spence", "wofz", "xlog1py", "xlogy", "zeta"]
