"""The confluent and Gauss hypergeometric functions of ``jax.scipy.special``: `hyp1f1`
and `hyp2f1`, for real arguments, by JAX's algorithms (Pearson, Olver and Porter 2014,
arXiv:1407.7786: Taylor series, the asymptotic series of 1F1 for ``|x| >= 100``, the
terminating polynomial of 2F1 and the digamma transformation near ``x = 1``, AMS 55
15.3.10-12), with JAX's conventions (``hyp1f1(0, 0, x) = 1``) and JAX's values outside
the domain.

JAX computes each element with its own ``while_loop`` (``vectorize``); here each loop runs
on whole arrays and an element keeps its state once its own condition fails, which gives
the same terms, also under ``vmap`` (the loops are written out, cond and body local, so
that the transforms read them).

Both functions are ``custom_jvp`` with JAX's derivatives: series in the parameters (their
digamma-weighted Taylor series) and ``d/dx 1F1(a; b; x) = a/b 1F1(a+1; b+1; x)``,
``d/dx 2F1 = ab/c 2F1(a+1, b+1; c+1; x)``. The rules call the ``custom_jvp`` functions
themselves, never the implementations, so a derivative of any order goes through a rule
again: the implementations are only evaluated, and their loops whose length depends on the
arguments (the terminating polynomial, the finite sum of the digamma transformation) are
never differentiated. The parameter series are differentiated (second derivatives); they
carry ``max_iters``, so that reverse mode runs under ``jit``."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from transpiler import dtypes, lax
from transpiler import numpy as jnp
from transpiler.errors import located
from transpiler.primitives.core import abstractify
from transpiler.scipy import special  # (its gamma and digamma, looked up when called:
from transpiler.scipy.promotion import promote_inexact  # special.py re-exports this module)

_MAX_TERMS = 250  # JAX's bound on every series (k < 250)


def _with_rule(fun: Callable, rule: Callable) -> Any:
    """`fun` as a ``custom_jvp`` function with `rule` as its JVP."""
    from transpiler.transforms.forward.custom_jvp import custom_jvp  # upward: the transforms
    wrapped = custom_jvp(fun)
    wrapped.defjvp(rule)
    return wrapped


def gamma(x: Any) -> Any:
    return special.gamma(x)


def digamma(x: Any) -> Any:
    return special.digamma(x)


def _eps(x: Any) -> float:
    return float(dtypes.finfo(abstractify(x).dtype).eps)


# --- 1F1 -------------------------------------------------------------------------------------

def _hyp1f1_taylor(a: Any, b: Any, x: Any) -> Any:
    """``1 + sum_k t_k``, ``t_1 = a x / b``, ``t_{k+1} = t_k (a+k)/(b+k) x/(k+1)``, until a
    term falls to eps of the sum or ``k`` reaches 250."""
    eps = _eps(x)

    def going(s: tuple) -> Any:
        serie, k, term = s
        return (k < _MAX_TERMS) & (jnp.abs(term) / jnp.abs(serie) > eps)

    def any_going(s: tuple) -> Any:
        return jnp.any(going(s))

    def step(s: tuple) -> tuple:
        serie, k, term = s
        on = going(s)
        return (jnp.where(on, serie + term, serie), jnp.where(on, k + 1, k),
                jnp.where(on, term * ((a + k) / (b + k) * x / (k + 1)), term))

    init = (jnp.ones_like(x), jnp.ones_like(x), a / b * x)
    return lax.while_loop(any_going, step, init, max_iters=_MAX_TERMS)[0]


def _hyp1f1_asymptotic(a: Any, b: Any, x: Any) -> Any:
    """``Gamma(b) / Gamma(a) e^x x^(a-b) sum_k (b-a)_k (1-a)_k / (k! x^k)`` (NaN for
    negative x where ``a - b`` is not an integer, as JAX's power)."""
    eps = _eps(x)

    def going(s: tuple) -> Any:
        serie, k, term = s
        return (k < _MAX_TERMS) & (jnp.abs(term) / jnp.abs(serie) > eps)

    def any_going(s: tuple) -> Any:
        return jnp.any(going(s))

    def step(s: tuple) -> tuple:
        serie, k, term = s
        on = going(s)
        return (jnp.where(on, serie + term, serie), jnp.where(on, k + 1, k),
                jnp.where(on, term * ((b - a + k) * (1 - a + k) / (k + 1) / x), term))

    init = (jnp.ones_like(x), jnp.ones_like(x), (b - a) * (1 - a) / x)
    serie = lax.while_loop(any_going, step, init, max_iters=_MAX_TERMS)[0]
    return gamma(b) / gamma(a) * jnp.exp(x) * x ** (a - b) * serie


def _hyp1f1(a: Any, b: Any, x: Any) -> Any:
    """1F1 on promoted, broadcast arrays: the Taylor series for ``|x| < 100``, else the
    asymptotic one (each computed on a placeholder x where the other is used); 1 where
    ``a == 0``, ``e^x`` where ``a == b``, ``inf`` where ``b == 0``."""
    near = jnp.abs(x) < 100
    taylor = _hyp1f1_taylor(a, b, jnp.where(near, x, jnp.zeros_like(x)))
    asymptotic = _hyp1f1_asymptotic(a, b, jnp.where(near, jnp.full_like(x, 100), x))
    value = jnp.where(near, taylor, asymptotic)
    nonzero = a != 0
    case = ((a == 0) * 1 + ((a == b) & nonzero) * 2 + ((b == 0) & nonzero) * 3)
    return lax.select_n(case, value, jnp.ones_like(x), jnp.exp(x), jnp.full_like(x, np.inf))


def _hyp1f1_dparam(a: Any, b: Any, x: Any, w: Any, sign: float) -> Any:
    """The derivative in a parameter: the Taylor series of 1F1 less its first term, the
    k-th term weighted by ``sign (digamma(w + k) - digamma(w))`` (``w = a``, ``sign = 1``
    for ``d/da``; ``w = b``, ``sign = -1`` for ``d/db``)."""
    eps = _eps(x)

    def going(s: tuple) -> Any:
        serie, k, term = s
        return (k < _MAX_TERMS) & (jnp.abs(term) / jnp.abs(serie) > eps)

    def any_going(s: tuple) -> Any:
        return jnp.any(going(s))

    def step(s: tuple) -> tuple:
        serie, k, term = s
        on = going(s)
        weighted = term * (sign * (digamma(w + k) - digamma(w)))
        return (jnp.where(on, serie + weighted, serie), jnp.where(on, k + 1, k),
                jnp.where(on, term * ((a + k) / (b + k) * x / (k + 1)), term))

    init = (jnp.zeros_like(x), jnp.ones_like(x), a / b * x)
    return lax.while_loop(any_going, step, init, max_iters=_MAX_TERMS)[0]


def _hyp1f1_jvp(primals: tuple, tangents: tuple) -> tuple:
    a, b, x = primals
    a_dot, b_dot, x_dot = tangents
    d_x = a / b * _hyp1f1_custom(a + 1, b + 1, x)
    return _hyp1f1_custom(a, b, x), (_hyp1f1_dparam(a, b, x, a, 1.0) * a_dot
                                     + _hyp1f1_dparam(a, b, x, b, -1.0) * b_dot + d_x * x_dot)


_hyp1f1_custom = _with_rule(_hyp1f1, _hyp1f1_jvp)


def _promoted_real(name: str, *args: Any) -> list:
    """The arguments promoted to one float dtype and broadcast (JAX's ``vectorize``)."""
    args = promote_inexact(*args)
    if dtypes.is_complex(abstractify(args[0]).dtype):
        raise located(ValueError, f"{name} does not support complex-valued inputs.")
    return jnp.broadcast_arrays(*args)


def hyp1f1(a: Any, b: Any, x: Any) -> Any:
    """The confluent hypergeometric function ``1F1(a; b; x) = sum_k (a)_k / ((b)_k k!) x^k``
    for real arguments (JAX's algorithm; ``hyp1f1(0, 0, x) = 1``, unlike SciPy). Large
    values lose accuracy in float32."""
    return _hyp1f1_custom(*_promoted_real("hyp1f1", a, b, x))


# --- 2F1 -------------------------------------------------------------------------------------

def _is_nonpositive_int(a: Any, eps: float) -> Any:
    return (a <= 0) & (jnp.abs(a - jnp.round(a)) < eps)


def _hyp2f1_taylor(a: Any, b: Any, c: Any, x: Any) -> Any:
    """``sum_k (a)_k (b)_k / (c)_k x^k / k!`` until a term is below eps of the sum."""
    eps = _eps(x)

    def going(s: tuple) -> Any:
        serie, k, term = s
        return (k < _MAX_TERMS) & (jnp.abs(term) > eps * jnp.abs(serie))

    def any_going(s: tuple) -> Any:
        return jnp.any(going(s))

    def step(s: tuple) -> tuple:
        serie, k, term = s
        on = going(s)
        return (jnp.where(on, serie + term, serie), jnp.where(on, k + 1, k),
                jnp.where(on, term * ((a + k - 1) * (b + k - 1) / (c + k - 1) / k * x), term))

    init = (jnp.zeros_like(x), jnp.ones_like(x), jnp.ones_like(x))
    return lax.while_loop(any_going, step, init, max_iters=_MAX_TERMS)[0]


def _hyp2f1_terminal(a: Any, b: Any, c: Any, x: Any, used: Any) -> Any:
    """The polynomial that the series is when ``a`` (or ``b``) is a non-positive integer
    ``-n``: its ``n + 1`` terms (the integer of larger magnitude that is not beyond a
    non-positive integer ``c``). Elements where it is not `used` run no terms. (Its length
    depends on the arguments: evaluated, never differentiated; see the module docstring.)"""
    eps = _eps(x) * 50
    c_pole_between = (c % 1 == 0) & (c <= 0) & (c > b)
    swap = (b < a) & (jnp.abs(b - jnp.round(b)) < eps) & ~c_pole_between
    a, b = jnp.where(swap, b, a), jnp.where(swap, a, b)
    n = jnp.where(used, jnp.abs(a), jnp.zeros_like(a))

    def going(s: tuple) -> Any:
        serie, i, term = s
        return i < n + 1

    def any_going(s: tuple) -> Any:
        return jnp.any(going(s))

    def step(s: tuple) -> tuple:
        serie, i, term = s
        on = going(s)
        term = jnp.where(on, term * (-(n - i + 1) / (c + i - 1) * (b + i - 1) / i * x), term)
        return jnp.where(on, serie + term, serie), jnp.where(on, i + 1, i), term

    one = jnp.ones_like(x)
    return lax.while_loop(any_going, step, (one, one, one))[0]


def _hyp2f1_digamma_transform(a: Any, b: Any, c: Any, x: Any, used: Any) -> Any:
    """2F1 near ``x = 1`` when ``c - a - b`` is an integer ``+-m`` (AMS 55 15.3.10-12): a
    series in ``1 - x`` with digamma coefficients plus a finite sum of ``m - 1`` terms
    (evaluated, never differentiated, as the terminating polynomial). Elements where it is
    not `used` run no terms."""
    eps = _eps(x)
    zero = jnp.zeros_like(x)
    one = jnp.ones_like(x)
    d = c - a - b
    s = 1 - x
    rd = jnp.round(d)
    e = jnp.where(rd >= 0, d, -d)
    d1 = jnp.where(rd >= 0, d, zero)
    d2 = jnp.where(rd >= 0, zero, d)
    m = jnp.where(used, jnp.abs(rd), zero)  # the finite sum's length
    log_s = jnp.log(s)

    y = (digamma(one) + digamma(1.0 + e) - digamma(a + d1) - digamma(b + d1)
         - log_s) / gamma(e + 1.0)
    p = (a + d1) * (b + d1) * s / gamma(e + 2.0)

    def going(st: tuple) -> Any:
        y, p, q, t = st
        return used & (t < _MAX_TERMS) & (jnp.abs(q) >= eps * jnp.abs(y))

    def any_going(st: tuple) -> Any:
        return jnp.any(going(st))

    def step(st: tuple) -> tuple:
        y, p, q, t = st
        on = going(st)
        r = digamma(1.0 + t) + digamma(1.0 + t + e) - digamma(a + t + d1) \
            - digamma(b + t + d1) - log_s
        q_next = p * r
        p_next = p * (s * (a + t + d1) / (t + 1.0)) * ((b + t + d1) / (t + 1.0 + e))
        return (jnp.where(on, y + q_next, y), jnp.where(on, p_next, p),
                jnp.where(on, q_next, q), jnp.where(on, t + 1.0, t))

    # IREE 3.13 fuses all of 2F1's loop-invariant scalars into one dispatch; in jit(grad)
    # it had 35 buffers, past the runtime's 32 ("binding count 35 > 32"): a barrier here
    # splits it
    y, p, e, d1, d2, log_s, m = lax.optimization_barrier((y, p, e, d1, d2, log_s, m))
    y = lax.while_loop(any_going, step, (y, p, y, one))[0]

    def sum_going(st: tuple) -> Any:
        i, p, t, y1 = st
        return i < m

    def any_sum_going(st: tuple) -> Any:
        return jnp.any(sum_going(st))

    def sum_step(st: tuple) -> tuple:
        i, p, t, y1 = st
        on = sum_going(st)
        p_next = p * (s * (a + t + d2) * (b + t + d2) / (1.0 - e + t)) / (t + 1.0)
        return (jnp.where(on, i + 1, i), jnp.where(on, p_next, p),
                jnp.where(on, t + 1.0, t), jnp.where(on, y1 + p_next, y1))

    y1 = lax.while_loop(any_sum_going, sum_step, (one, one, zero, one))[3]
    gamma_c = gamma(c)
    y1 = y1 * gamma(e) * gamma_c / (gamma(a + d1) * gamma(b + d1))
    y2 = y * gamma_c / (gamma(a + d2) * gamma(b + d2))
    y2 = jnp.where(m % 2 != 0, -y2, y2)
    q = s ** rd
    summed = jnp.where(rd > 0, y2 * q + y1, y2 + y1 * q)
    return jnp.where(rd == 0, y * gamma_c / (gamma(a) * gamma(b)), summed)


def _hyp2f1_terminal_or_series(a: Any, b: Any, c: Any, x: Any) -> Any:
    """The terminating polynomial where ``a`` or ``b`` is a non-positive integer, else the
    digamma transformation for ``x > 0.9`` and integer ``c - a - b``, else the series."""
    eps = _eps(x) * 50
    d = c - a - b
    terminates = _is_nonpositive_int(a, eps) | _is_nonpositive_int(b, eps)
    integer_d = jnp.abs(d - jnp.round(d)) < eps
    case = jnp.where((x > 0.9) & ~terminates, jnp.where(integer_d, 1, 0),
                     jnp.where(terminates, 2, 0))
    return lax.select_n(case, _hyp2f1_taylor(a, b, c, x),
                        _hyp2f1_digamma_transform(a, b, c, x, case == 1),
                        _hyp2f1_terminal(a, b, c, x, case == 2))


def _hyp2f1(a: Any, b: Any, c: Any, x: Any) -> Any:
    """2F1 on promoted, broadcast arrays, JAX's cases in order: 1 at ``x == 0`` or a zero
    ``a``/``b`` (``c != 0``); ``inf`` at a non-positive integer ``c``; Euler's transform
    ``(1-x)^(c-a-b) 2F1(c-a, c-b; c; x)`` for ``c - a - b <= -1``; ``(1-x)^-a`` where
    ``b == c`` and ``(1-x)^-b`` where ``a == c``; ``inf`` for ``x > 1``; Gauss's sum at
    ``x == 1``; else the series (`_hyp2f1_terminal_or_series`)."""
    eps = _eps(x) * 50
    d = c - a - b
    s = 1 - x
    ca, cb = c - a, c - b
    rounded = jnp.abs(d - jnp.round(d)) < eps
    case = jnp.where((x == 0) | (((a == 0) | (b == 0)) & (c != 0)), 0,
           jnp.where((c == 0) | ((c < 0) & (c % 1 == 0)), 1,
           jnp.where((d <= -1) & ~(~rounded & (s < 0)), 2,
           jnp.where((d <= 0) & (x == 1), 1,
           jnp.where((x < 1) & (b == c), 3,
           jnp.where((x < 1) & (a == c), 4,
           jnp.where(x > 1, 1,
           jnp.where(x == 1, 5, 6))))))))
    euler = case == 2  # the series of 2F1(c-a, c-b; c; x) there, of 2F1(a, b; c; x) else
    series = _hyp2f1_terminal_or_series(jnp.where(euler, ca, a), jnp.where(euler, cb, b), c, x)
    return lax.select_n(case, jnp.ones_like(x), jnp.full_like(x, np.inf), s ** d * series,
                        s ** (-a), s ** (-b), gamma(c) * gamma(d) / (gamma(ca) * gamma(cb)),
                        series)


def _hyp2f1_dparam(a: Any, b: Any, c: Any, x: Any, w: Any, sign: Any) -> Any:
    """The derivatives in the parameters: the Taylor series of 2F1 less its first term, the
    k-th term weighted by ``sign (digamma(w + k) - digamma(w))`` (``w = a`` or ``b`` with
    ``sign = 1``; ``w = c`` with ``sign = -1``), for `w` and `sign` stacked on a leading
    axis (one loop for the three)."""
    eps = _eps(x)

    def going(s: tuple) -> Any:
        serie, k, term = s
        return (k < _MAX_TERMS) & (jnp.abs(term) / jnp.abs(serie) > eps)

    def any_going(s: tuple) -> Any:
        return jnp.any(going(s))

    def step(s: tuple) -> tuple:
        serie, k, term = s
        on = going(s)
        weighted = term * (sign * (digamma(w + k) - digamma(w)))
        return (jnp.where(on, serie + weighted, serie), jnp.where(on, k + 1, k),
                jnp.where(on, term * ((a + k) * (b + k) / (c + k) / (k + 1) * x), term))

    init = (jnp.zeros_like(w), jnp.ones_like(w), jnp.broadcast_to(a * b / c * x, w.shape))
    return lax.while_loop(any_going, step, init, max_iters=_MAX_TERMS)[0]


def _hyp2f1_jvp(primals: tuple, tangents: tuple) -> tuple:
    a, b, c, x = primals
    a_dot, b_dot, c_dot, x_dot = tangents
    # the three parameter series as one loop over a stacked axis
    sign = jnp.reshape(jnp.asarray([1.0, 1.0, -1.0], dtype=x.dtype), (3,) + (1,) * x.ndim)
    d_a, d_b, d_c = _hyp2f1_dparam(a, b, c, x, jnp.stack([a, b, c]), sign)
    d_x = a * b / c * _hyp2f1_custom(a + 1, b + 1, c + 1, x)
    return (_hyp2f1_custom(a, b, c, x),
            d_a * a_dot + d_b * b_dot + d_c * c_dot + d_x * x_dot)


_hyp2f1_custom = _with_rule(_hyp2f1, _hyp2f1_jvp)


def hyp2f1(a: Any, b: Any, c: Any, x: Any) -> Any:
    """The Gauss hypergeometric function ``2F1(a, b; c; x) = sum_k (a)_k (b)_k / (c)_k
    x^k / k!`` for real arguments (JAX's algorithm and its values outside ``x < 1``: ``inf``
    for ``x > 1``). Large values lose accuracy in float32."""
    return _hyp2f1_custom(*_promoted_real("hyp2f1", a, b, c, x))


__all__ = ["hyp1f1", "hyp2f1"]
