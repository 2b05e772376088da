"""The exponential integrals of ``jax.scipy.special``: `expi`, `exp1`, `expn`, the sine and
cosine integrals `sici`, and Spence's function `spence`, written with `transpiler.numpy`
and `transpiler.lax` (they run eagerly, under ``jit`` and ``vmap``), each with its
analytic derivative as a `custom_jvp` rule.

The algorithms are JAX's ports of Cephes (ei.c, expn.c, sici.c, spence.c): rational
approximations on intervals, and for ``E_n`` a power series (``x <= 1``) or a continued
fraction (``x > 1``) summed by a ``lax.while_loop`` until the last term is below the
dtype's epsilon (under ``vmap`` the loop runs until every element has converged). Branches
are computed on safe operands. At a few edges we give SciPy's limits where JAX's
algorithm gives NaN: ``expi(0) = -inf``, ``expi(inf) = inf``, ``expi(-inf) = 0``,
``expn(n, inf) = 0``, and ``expn(n, 0) = 1 / (n - 1)`` for ``n >= 2`` (JAX: ``1 / n``).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from transpiler import dtypes, lax
from transpiler import numpy as jnp
from transpiler.primitives.core import abstractify
from transpiler.scipy.error_functions import horner, real_operand
from transpiler.scipy.promotion import promote_inexact
from transpiler.transforms.forward.custom_jvp import custom_jvp

_EULER_GAMMA = 0.57721566490153286061
_MAX_ITERATIONS = 1000  # a bound on the series and continued fraction (they need < 100)


def _eps(x: Any) -> float:
    return float(dtypes.finfo(abstractify(x).dtype).eps)


# --- Ei(x) -----------------------------------------------------------------------------------

# Cephes ei.c, highest degree first: on (0, 2], Ei(x) = gamma + log x + x A(x) / B(x); on
# (2^k, 2^(k+1)] (k = 1..5) and (64, inf), Ei(x) = exp(x) / x (1 + A(1/x) / (x B(1/x))).
_EI_SMALL = ((-5.350447357812542947283e0, 2.185049168816613393830e2, -4.176572384826693777058e3,
              5.541176756393557601232e4, -3.313381331178144034309e5, 1.592627163384945414220e6),
             (1.0, -5.250547959112862969197e1, 1.259616186786790571525e3,
              -1.756549581973534652631e4, 1.493062117002725991967e5, -7.294949239640527645655e5,
              1.592627163384945429726e6))
_EI_INTERVALS = (  # (upper end, numerator, denominator)
    (4.0, (1.981808503259689673238e-2, -1.271645625984917501326e0, -2.088160335681228318920e0,
           2.755544509187936721172e0, -4.409507048701600257171e-1, 4.665623805935891391017e-2,
           -1.545042679673485262580e-3, 7.059980605299617478514e-5),
     (1.0, 1.476498670914921440652e0, 5.629177174822436244827e-1, 1.699017897879307263248e-1,
      2.291647179034212017463e-2, 4.450150439728752875043e-3, 1.727439612206521482874e-4,
      3.953167195549672482304e-5)),
    (8.0, (-1.373215375871208729803e0, -7.084559133740838761406e-1, 1.580806855547941010501e0,
           -2.601500427425622944234e-1, 2.994674694113713763365e-2, -1.038086040188744005513e-3,
           4.371064420753005429514e-5, 2.141783679522602903795e-6),
     (1.0, 8.585231423622028380768e-1, 4.483285822873995129957e-1, 7.687932158124475434091e-2,
      2.449868241021887685904e-2, 8.832165941927796567926e-4, 4.590952299511353531215e-4,
      -4.729848351866523044863e-6, 2.665195537390710170105e-6)),
    (16.0, (-2.106934601691916512584e0, 1.732733869664688041885e0, -2.423619178935841904839e-1,
            2.322724180937565842585e-2, 2.372880440493179832059e-4, -8.343219561192552752335e-5,
            1.363408795605250394881e-5, -3.655412321999253963714e-7, 1.464941733975961318456e-8,
            6.176407863710360207074e-10),
     (1.0, -2.298062239901678075778e-1, 1.105077041474037862347e-1, -1.566542966630792353556e-2,
      2.761106850817352773874e-3, -2.089148012284048449115e-4, 1.708528938807675304186e-5,
      -4.459311796356686423199e-7, 1.394634930353847498145e-8, 6.150865933977338354138e-10)),
    (32.0, (-2.458119367674020323359e-1, -1.483382253322077687183e-1, 7.248291795735551591813e-2,
            -1.348315687380940523823e-2, 1.342775069788636972294e-3, -7.942465637159712264564e-5,
            2.644179518984235952241e-6, -4.239473659313765177195e-8),
     (1.0, -1.044225908443871106315e-1, -2.676453128101402655055e-1, 9.695000254621984627876e-2,
      -1.601745692712991078208e-2, 1.496414899205908021882e-3, -8.462452563778485013756e-5,
      2.728938403476726394024e-6, -4.239462431819542051337e-8)),
    (64.0, (1.212561118105456670844e-1, -5.823133179043894485122e-1, 2.348887314557016779211e-1,
            -3.040034318113248237280e-2, 1.510082146865190661777e-3, -2.523137095499571377122e-5),
     (1.0, -1.002252150365854016662e0, 2.928709694872224144953e-1, -3.337004338674007801307e-2,
      1.560544881127388842819e-3, -2.523137093603234562648e-5)),
    (np.inf, (-7.657847078286127362028e-1, 6.886192415566705051750e-1,
              -2.132598113545206124553e-1, 3.346107552384193813594e-2,
              -3.076541477344756050249e-3, 1.747119316454907477380e-4,
              -6.103711682274170530369e-6, 1.218032765428652199087e-7,
              -1.086076102793290233007e-9),
     (1.0, -1.888802868662308731041e0, 1.066691687211408896850e0, -2.751915982306380647738e-1,
      3.930852688233823569726e-2, -3.414684558602365085394e-3, 1.866844370703555398195e-4,
      -6.345146083130515357861e-6, 1.239754287483206878024e-7, -1.086076102793126632978e-9)),
)


def _expi_positive(x: Any) -> Any:
    """``Ei(x)`` for ``x > 0`` (Cephes's intervals; ``inf`` at ``inf``)."""
    small = x <= 2
    s = jnp.where(small, x, jnp.ones_like(x))
    value = s * horner(_EI_SMALL[0], s) / horner(_EI_SMALL[1], s) + _EULER_GAMMA + jnp.log(s)
    lower = 2.0
    for upper, numerator, denominator in _EI_INTERVALS:
        inside = (x > lower) & (x <= upper) & ~jnp.isinf(x)
        safe = jnp.where(inside, x, jnp.full_like(x, min(2 * lower, 128.0)))
        w = 1 / safe
        tail = jnp.exp(safe) * w * (1 + w * horner(numerator, w) / horner(denominator, w))
        value = jnp.where(inside, tail, value)
        lower = upper
    return jnp.where(jnp.isposinf(x), jnp.full_like(x, np.inf), value)


@custom_jvp
def _expi(x: Any) -> Any:
    negative = x < 0
    positive = jnp.where(negative | (x == 0), jnp.ones_like(x), x)
    value = jnp.where(negative, -exp1(jnp.where(negative, -x, jnp.ones_like(x))),
                      _expi_positive(positive))
    value = jnp.where(x == 0, jnp.full_like(x, -np.inf), value)
    return jnp.where(jnp.isnan(x), x, value)


@_expi.defjvp
def _expi_jvp(primals: tuple, tangents: tuple) -> tuple:
    """``Ei'(x) = exp(x) / x``."""
    x, = primals
    x_dot, = tangents
    return _expi(x), x_dot * jnp.exp(x) / x


def expi(x: Any) -> Any:
    """The exponential integral ``Ei(x) = int_-inf^x exp(t) / t dt`` (``-E1(-x)`` below
    0)."""
    return _expi(real_operand("expi", x))


# --- E_n(x) ----------------------------------------------------------------------------------

def _digamma_of_integer(n: Any) -> Any:
    """``digamma(n) = -gamma + sum_(i < n) 1/i`` for integer ``n >= 1``: the sum below 10,
    the asymptotic series above (its first omitted term below 1e-16 there). (Not
    ``lax.digamma``: under jit XLA's float32 algorithm is off by some 1e-6 at 1.)"""
    small = n < 10
    harmonic = jnp.zeros_like(n)
    for i in range(1, 10):
        harmonic = harmonic + jnp.where(i < n, jnp.full_like(n, 1 / i), jnp.zeros_like(n))
    m = jnp.where(small, jnp.full_like(n, 10.0), n)
    u = 1 / (m * m)
    tail = horner((-1 / 12, 691 / 32760, -1 / 132, 1 / 240, -1 / 252, 1 / 120, -1 / 12), u)
    return jnp.where(small, harmonic - _EULER_GAMMA, jnp.log(m) - 0.5 / m + u * tail)


def _expn_series(n: Any, x: Any) -> Any:
    """``E_n(x)`` for ``0 < x <= 1`` and integer ``n >= 1`` (Cephes):
    ``(-x)^(n-1) psi(n) / (n-1)! - sum_k (-x)^k / (k! (k - n + 1))`` (k != n - 1), with
    ``psi(n) = digamma(n) - log x``."""
    eps = _eps(x)
    one = jnp.ones_like(x)
    first = jnp.where(n == 1, jnp.zeros_like(x), 1 / (1 - jnp.where(n == 1, 2 * one, n)))

    def more(carry: tuple) -> Any:
        return jnp.any(carry[4] > eps)

    def term(carry: tuple) -> tuple:
        k, y, p, total, size = carry
        active = size > eps  # (a converged element stays as it is, as in Cephes)
        k = k + 1
        y = y * -x / k
        p = p + 1
        total = jnp.where(active & (p != 0), total + y / jnp.where(p != 0, p, one), total)
        change = jnp.where(total != 0, jnp.abs(y / jnp.where(total != 0, total, one)), one)
        return k, y, p, total, jnp.where(active, change, size)

    init = (jnp.zeros_like(x), one, 1 - n, first, jnp.full_like(x, np.inf))
    total = lax.while_loop(more, term, init, max_iters=_MAX_ITERATIONS)[3]
    psi = _digamma_of_integer(n) - jnp.log(x)
    # (-x)^(n-1) with its sign written out: under jit a negative base to a float power is
    # NaN even where the power is an integer; NaN for fractional n, as in JAX
    odd = jnp.fmod(n - 1, 2) == 1
    sign = jnp.where(n == jnp.floor(n), jnp.where(odd, -one, one), jnp.full_like(x, np.nan))
    return sign * x ** (n - 1) * psi / _factorial_below(n) - total


def _factorial_below(n: Any) -> Any:
    """``(n - 1)!`` for integer ``n >= 1``: the product up to 20, ``exp(lgamma(n))``
    above (where the term it divides is below 1e-17 of E_n; under jit XLA's float32
    ``lgamma(1)`` is 5e-7, not 0)."""
    product = jnp.ones_like(n)
    for i in range(2, 20):
        product = product * jnp.where(i < n, jnp.full_like(n, float(i)), jnp.ones_like(n))
    large = n > 20
    return jnp.where(large, jnp.exp(lax.lgamma(jnp.where(large, n, jnp.ones_like(n)))), product)


def _expn_fraction(n: Any, x: Any) -> Any:
    """``E_n(x)`` for ``x > 1``: the continued fraction of ``exp(x) E_n(x)`` (Cephes),
    its convergents rescaled by 2^-57 whenever they grow past 2^57."""
    eps = _eps(x)
    big = 1.44115188075855872e17
    one = jnp.ones_like(x)

    def more(carry: tuple) -> Any:
        return jnp.any(carry[6] > eps)

    def step(carry: tuple) -> tuple:
        k, p2, q2, p1, q1, value, previous = carry
        active = previous > eps  # (a converged element stays as it is, as in Cephes)
        k = k + 1
        odd = k % 2 == 1
        y = jnp.where(odd, one, x)
        w = jnp.where(odd, n + (k - 1) / 2, k / 2 * one)
        p = p1 * y + p2 * w
        q = q1 * y + q2 * w
        nonzero = q != 0
        ratio = p / jnp.where(nonzero, q, one)
        change = jnp.where(nonzero, jnp.abs((value - ratio) / ratio), one)
        scale = jnp.where(jnp.abs(p) > big, jnp.full_like(x, 1 / big), one)
        return (k, jnp.where(active, p1 * scale, p2), jnp.where(active, q1 * scale, q2),
                jnp.where(active, p * scale, p1), jnp.where(active, q * scale, q1),
                jnp.where(active & nonzero, ratio, value), jnp.where(active, change, previous))

    init = (jnp.ones_like(x), one, x, one, x + n, 1 / (x + n), jnp.full_like(x, np.inf))
    return lax.while_loop(more, step, init, max_iters=_MAX_ITERATIONS)[5] * jnp.exp(-x)


def _expn_large_order(n: Any, x: Any) -> Any:
    """``E_n(x)`` for ``n >= 5000``: the first terms of its asymptotic expansion in n."""
    xk = x + n
    yk = 1 / (xk * xk)
    ans = yk * n * (6 * x * x - 8 * n * x + n * n)
    ans = yk * (ans + n * (n - 2 * x))
    ans = yk * (ans + n)
    return (ans + 1) * jnp.exp(-x) / xk


@custom_jvp
def _expn(n: Any, x: Any) -> Any:
    n, x = jnp.broadcast_arrays(n, x)
    invalid = (n < 0) | (x < 0) | jnp.isnan(n) | jnp.isnan(x)
    at_zero = x == 0
    order_zero = n == 0
    large = n >= 5000
    infinite = jnp.isposinf(x)
    fraction = (x > 1) & ~large & ~order_zero & ~infinite
    series = (x > 0) & (x <= 1) & ~large & ~order_zero
    one = jnp.ones_like(x)
    safe_n = jnp.where(invalid | order_zero | large, one, n)
    values = jnp.where(series, _expn_series(safe_n, jnp.where(series, x, one)),
                       _expn_fraction(safe_n, jnp.where(fraction, x, 2 * one)))
    big_n = jnp.where(large, n, jnp.full_like(x, 5000.0))
    values = jnp.where(large, _expn_large_order(big_n, jnp.where(infinite, one, x)), values)
    positive = jnp.where(at_zero | infinite, one, x)
    values = jnp.where(order_zero, jnp.exp(-positive) / positive, values)
    values = jnp.where(infinite, jnp.zeros_like(x), values)
    pole = jnp.where(n < 2, jnp.full_like(x, np.inf), 1 / jnp.where(n < 2, 2 * one, n - 1))
    values = jnp.where(at_zero, pole, values)
    return jnp.where(invalid, jnp.full_like(x, np.nan), values)


@_expn.defjvp
def _expn_jvp(primals: tuple, tangents: tuple) -> tuple:
    """``d/dx E_n(x) = -E_(n-1)(x)`` (``-exp(-x) (1/x + 1/x^2)`` for ``n = 0``); none in
    `n`, as in JAX (integer orders)."""
    n, x = primals  # (unpacked apart from the tangents: the primals stay inactive)
    x_dot = tangents[1]
    out = _expn(n, x)
    lower = _expn(jnp.maximum(n - 1, 0), x)
    slope = jnp.where(n == 0, -lower * (1 + 1 / x), -lower)
    return out, x_dot * slope


def expn(n: Any, x: Any) -> Any:
    """The generalized exponential integral ``E_n(x) = int_1^inf exp(-xt) / t^n dt`` (NaN
    for ``n < 0`` or ``x < 0``); differentiable in `x` only."""
    n, x = promote_inexact(n, x)
    if dtypes.is_complex(abstractify(x).dtype):
        raise ValueError("expn does not support complex-valued inputs.")
    return _expn(lax.stop_gradient(n), x)


def exp1(x: Any) -> Any:
    """The exponential integral ``E1(x) = int_x^inf exp(-t) / t dt`` (``expn(1, x)``)."""
    x = real_operand("exp1", x)
    return _expn(jnp.ones_like(x), x)


# --- Si(x) and Ci(x) -------------------------------------------------------------------------

# Cephes sici.c, highest degree first: for x <= 4, Si = x SN(x^2) / SD(x^2) and
# Ci = gamma + log x + x^2 CN(x^2) / CD(x^2); for 4 < x <= 1e9 the auxiliary functions
# f = FN(z) / (x FD(z)), g = z GN(z) / GD(z) (z = 1/x^2; one pair below 8, one above).
_SN = (-8.39167827910303881427e-11, 4.62591714427012837309e-8, -9.75759303843632795789e-6,
       9.76945438170435310816e-4, -4.13470316229406538752e-2, 1.00000000000000000302e0)
_SD = (2.03269266195951942049e-12, 1.27997891179943299903e-9, 4.41827842801218905784e-7,
       9.96412122043875552487e-5, 1.42085239326149893930e-2, 9.99999999999999996984e-1)
_CN = (2.02524002389102268789e-11, -1.35249504915790756375e-8, 3.59325051419993077021e-6,
       -4.74007206873407909465e-4, 2.89159652607555242092e-2, -1.00000000000000000080e0)
_CD = (4.07746040061880559506e-12, 3.06780997581887812692e-9, 1.23210355685883423679e-6,
       3.17442024775032769882e-4, 5.10028056236446052392e-2, 4.00000000000000000080e0)
_FN4 = (4.23612862892216586994e0, 5.45937717161812843388e0, 1.62083287701538329132e0,
        1.67006611831323023771e-1, 6.81020132472518137426e-3, 1.08936580650328664411e-4,
        5.48900223421373614008e-7)
_FD4 = (1.0, 8.16496634205391016773e0, 7.30828822505564552187e0, 1.86792257950184183883e0,
        1.78792052963149907262e-1, 7.01710668322789753610e-3, 1.10034357153915731354e-4,
        5.48900252756255700982e-7)
_GN4 = (8.71001698973114191777e-2, 6.11379109952219284151e-1, 3.97180296392337498885e-1,
        7.48527737628469092119e-2, 5.38868681462177273157e-3, 1.61999794598934024525e-4,
        1.97963874140963632189e-6, 7.82579040744090311069e-9)
_GD4 = (1.0, 1.64402202413355338886e0, 6.66296701268987968381e-1, 9.88771761277688796203e-2,
        6.22396345441768420760e-3, 1.73221081474177119497e-4, 2.02659182086343991969e-6,
        7.82579218933534490868e-9)
_FN8 = (4.55880873470465315206e-1, 7.13715274100146711374e-1, 1.60300158222319456320e-1,
        1.16064229408124407915e-2, 3.49556442447859055605e-4, 4.86215430826454749482e-6,
        3.20092790091004902806e-8, 9.41779576128512936592e-11, 9.70507110881952024631e-14)
_FD8 = (1.0, 9.17463611873684053703e-1, 1.78685545332074536321e-1, 1.22253594771971293032e-2,
        3.58696481881851580297e-4, 4.92435064317881464393e-6, 3.21956939101046018377e-8,
        9.43720590350276732376e-11, 9.70507110881952025725e-14)
_GN8 = (6.97359953443276214934e-1, 3.30410979305632063225e-1, 3.84878767649974295920e-2,
        1.71718239052347903558e-3, 3.48941165502279436777e-5, 3.47131167084116673800e-7,
        1.70404452782044526189e-9, 3.85945925430276600453e-12, 3.14040098946363334640e-15)
_GD8 = (1.0, 1.68548898811011640017e0, 4.87852258695304967486e-1, 4.67913194259625806320e-2,
        1.90284426674399523638e-3, 3.68475504442561108162e-5, 3.57043223443740838771e-7,
        1.72693748966316146736e-9, 3.87830166023954706752e-12, 3.14040098946363335242e-15)


@custom_jvp
def _sici(x: Any) -> tuple:
    ax = jnp.abs(x)
    one = jnp.ones_like(ax)
    near = ax <= 4
    far = ax > 1e9
    s = jnp.where(near & (ax > 0), ax, one)
    t = s * s
    si_near = s * horner(_SN, t) / horner(_SD, t)
    ci_near = _EULER_GAMMA + jnp.log(s) + t * horner(_CN, t) / horner(_CD, t)
    m = jnp.where(near | far, jnp.full_like(ax, 5.0), ax)
    z = 1 / (m * m)
    below8 = m < 8
    f = jnp.where(below8, horner(_FN4, z) / horner(_FD4, z), horner(_FN8, z) / horner(_FD8, z)) / m
    g = z * jnp.where(below8, horner(_GN4, z) / horner(_GD4, z), horner(_GN8, z) / horner(_GD8, z))
    sin, cos = jnp.sin(m), jnp.cos(m)
    si_middle = np.pi / 2 - f * cos - g * sin
    ci_middle = f * sin - g * cos
    b = jnp.where(far & ~jnp.isinf(ax), ax, jnp.full_like(ax, 2e9))
    si_far = jnp.where(jnp.isinf(ax), jnp.full_like(ax, np.pi / 2), np.pi / 2 - jnp.cos(b) / b)
    ci_far = jnp.where(jnp.isinf(ax), jnp.zeros_like(ax), jnp.sin(b) / b)
    si = jnp.where(near, si_near, jnp.where(far, si_far, si_middle))
    ci = jnp.where(near, ci_near, jnp.where(far, ci_far, ci_middle))
    si = jnp.where(ax == 0, jnp.zeros_like(ax), si)
    ci = jnp.where(ax == 0, jnp.full_like(ax, -np.inf), ci)
    return jnp.sign(x) * si, jnp.where(jnp.isneginf(x), jnp.full_like(ax, np.nan), ci)


@_sici.defjvp
def _sici_jvp(primals: tuple, tangents: tuple) -> tuple:
    """``Si'(x) = sin(x) / x`` (1 at 0), ``Ci'(x) = cos(x) / x``."""
    x, = primals
    x_dot, = tangents
    return _sici(x), (jnp.sinc(x / np.pi) * x_dot, jnp.cos(x) / x * x_dot)


def sici(x: Any) -> tuple:
    """The sine and cosine integrals ``(Si(x), Ci(x))``: ``Si(x) = int_0^x sin(t) / t dt``,
    ``Ci(x) = gamma + log x + int_0^x (cos(t) - 1) / t dt`` (``Ci(|x|)`` below 0, as
    SciPy's real part; NaN at ``-inf``)."""
    x = jnp.asarray(x)
    if dtypes.is_complex(abstractify(x).dtype):
        raise ValueError(f"Argument `x` to sici must be real-valued. Got dtype "
                         f"{abstractify(x).dtype}.")
    return _sici(real_operand("sici", x))


# --- Spence's function -----------------------------------------------------------------------

# Cephes spence.c: spence(1 - w) = -w A(w) / B(w) for 0.5 <= 1 - w <= 1.5 (highest first).
_SPENCE_A = (4.65128586073990045278e-5, 7.31589045238094711071e-3, 1.33847639578309018650e-1,
             8.79691311754530315341e-1, 2.71149851196553469920e0, 4.25697156008121755724e0,
             3.29771340985225106936e0, 1.00000000000000000126e0)
_SPENCE_B = (6.90990488912553276999e-4, 2.54043763932544379113e-2, 2.82974860602568089943e-1,
             1.41172597751831069617e0, 3.63800533345137075418e0, 5.03278880143316990390e0,
             3.54771340985225096217e0, 9.99999999999999998740e-1)


@custom_jvp
def _spence(x: Any) -> Any:
    one = jnp.ones_like(x)
    positive = x > 0
    safe = jnp.where(positive, x, one)
    inverted = safe > 2
    y = jnp.where(inverted, 1 / jnp.where(inverted, safe, one), safe)
    above = y > 1.5
    below = y < 0.5
    w = jnp.where(above, 1 / y - 1, jnp.where(below, -y, y - 1))
    value = -w * horner(_SPENCE_A, w) / horner(_SPENCE_B, w)
    value = jnp.where(below, math.pi ** 2 / 6 - jnp.log(y) * jnp.log1p(-y) - value, value)
    value = jnp.where(inverted | above, -0.5 * jnp.log(y) ** 2 - value, value)
    value = jnp.where(x == 1, jnp.zeros_like(x), value)
    value = jnp.where(x == 0, jnp.full_like(x, math.pi ** 2 / 6), value)
    return jnp.where((x < 0) | jnp.isnan(x), jnp.full_like(x, np.nan), value)


@_spence.defjvp
def _spence_jvp(primals: tuple, tangents: tuple) -> tuple:
    """``spence'(x) = log(x) / (1 - x)`` (-1 at 1)."""
    x, = primals
    x_dot, = tangents
    at_one = x == 1
    safe = jnp.where(at_one, jnp.full_like(x, 2.0), x)
    slope = jnp.where(at_one, -jnp.ones_like(x), jnp.log(safe) / (1 - safe))
    return _spence(x), x_dot * slope


def spence(x: Any) -> Any:
    """Spence's function (the dilogarithm) ``int_1^x log(t) / (1 - t) dt`` for ``x >= 0``
    (NaN below, as in JAX); `x` must be float32 or float64."""
    x = jnp.asarray(x)
    dtype = abstractify(x).dtype
    if dtype not in (dtypes.float32, dtypes.float64):
        raise TypeError(f"x.dtype={dtype} is not supported, see docstring for supported "
                        "types.")
    return _spence(x)


__all__ = ["exp1", "expi", "expn", "sici", "spence"]
