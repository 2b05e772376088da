"""The inexact line search of JAX's BFGS: Wright and Nocedal's Algorithm 3.5 (double the
step until it brackets a point satisfying the strong Wolfe conditions) with its `_zoom`
(Algorithm 3.6: cubic, then quadratic, then bisection steps into the bracket).

Both are `lax.while_loop`s whose branches are `jnp.where` selects over a NamedTuple state,
so they run eagerly and under `jit` alike. Each doubling step runs both zooms of the
algorithm; the one whose bracket was not found passes through without iterating. The
choices are JAX's, odd ones included (they decide which iterates come out): the second
zoom starts with its bracket reversed, which its width test reports as a failure, and a
float32 zoom gives up at a bracket narrower than 1e-5.
"""

from __future__ import annotations

from typing import Any, Callable, NamedTuple

from transpiler import dtypes
from transpiler import numpy as jnp
from transpiler.lax.control import while_loop
from transpiler.primitives.core import abstractify

# f(x) -> (f(x), grad f(x)): minimize passes the objective's value_and_grad down.
ValueAndGrad = Callable[[Any], tuple[Any, Any]]
# t -> f, its slope and its gradient at ``xk + t * pk``: f restricted to the search ray.
Restricted = Callable[[Any], tuple[Any, Any, Any]]


class LineSearchResults(NamedTuple):
    """What the line search found: step `a_k` with value `f_k` and gradient `g_k` there.

    `status` is 0 when the strong Wolfe conditions hold, 1 when the zoom failed and 3 when
    `maxiter` doublings found no bracket; `failed` is set in both of the latter cases."""
    failed: Any
    nit: Any
    nfev: Any
    ngev: Any
    k: Any
    a_k: Any
    f_k: Any
    g_k: Any
    status: Any


class _Wolfe(NamedTuple):
    """The strong Wolfe conditions for steps from value `phi_0` and slope `dphi_0`."""
    phi_0: Any
    dphi_0: Any
    c1: float
    c2: float

    def too_high(self, a: Any, phi: Any) -> Any:
        """The sufficient-decrease condition fails."""
        return phi > self.phi_0 + self.c1 * a * self.dphi_0

    def flat_enough(self, dphi: Any) -> Any:
        """The curvature condition holds."""
        return jnp.abs(dphi) <= -self.c2 * self.dphi_0


def _select(pred: Any, state: Any, **new: Any) -> Any:
    """`state` with the named fields replaced by `new`'s where `pred` holds."""
    return state._replace(**{name: jnp.where(pred, value, getattr(state, name))
                             for name, value in new.items()})


# --- zoom -------------------------------------------------------------------------------

class _ZoomState(NamedTuple):
    done: Any
    failed: Any
    j: Any
    a_lo: Any
    phi_lo: Any
    dphi_lo: Any
    a_hi: Any
    phi_hi: Any
    dphi_hi: Any
    a_rec: Any  # the previous a_hi or a_lo, the cubic's third point
    phi_rec: Any
    a_star: Any
    phi_star: Any
    dphi_star: Any
    g_star: Any
    nfev: Any
    ngev: Any


def _cubicmin(a: Any, fa: Any, fpa: Any, b: Any, fb: Any, c: Any, fc: Any) -> Any:
    """The minimizer of the cubic through (a, fa) with slope fpa, (b, fb) and (c, fc)."""
    db, dc = b - a, c - a
    denom = (db * dc) ** 2 * (db - dc)
    rb, rc = fb - fa - fpa * db, fc - fa - fpa * dc
    cubic = (dc ** 2 * rb - db ** 2 * rc) / denom
    quadratic = (-dc ** 3 * rb + db ** 3 * rc) / denom
    radical = quadratic * quadratic - 3.0 * cubic * fpa
    return a + (-quadratic + jnp.sqrt(radical)) / (3.0 * cubic)


def _quadmin(a: Any, fa: Any, fpa: Any, b: Any, fb: Any) -> Any:
    """The minimizer of the parabola through (a, fa) with slope fpa and (b, fb)."""
    db = b - a
    curvature = (fb - fa - fpa * db) / (db ** 2)
    return a - fpa / (2.0 * curvature)


def _zoom(restricted: Restricted, wolfe: _Wolfe, a_lo: Any, phi_lo: Any, dphi_lo: Any,
          a_hi: Any, phi_hi: Any, dphi_hi: Any, g_0: Any, pass_through: Any) -> _ZoomState:
    """Shrink the bracket [a_lo, a_hi] to a step satisfying the strong Wolfe conditions
    (no iteration at all where `pass_through` holds)."""
    dtype = abstractify(a_hi).dtype
    # JAX's stop: a bracket this narrow fails the zoom. Its width is signed, as in JAX, so
    # a reversed bracket -- the second zoom's, always -- fails at once (jax-ml/jax#40228).
    too_narrow = 1e-5 if dtypes.finfo(dtype).bits < 64 else 1e-10
    delta1, delta2 = 0.2, 0.1  # how far inside the bracket a cubic or quadratic step must be

    def body(state: _ZoomState) -> _ZoomState:
        width = state.a_hi - state.a_lo
        left = jnp.minimum(state.a_hi, state.a_lo)
        right = jnp.maximum(state.a_hi, state.a_lo)
        state = state._replace(failed=state.failed | (width <= too_narrow))

        # The cubic is sometimes NaN; then its bounds check fails.
        a_cubic = _cubicmin(state.a_lo, state.phi_lo, state.dphi_lo, state.a_hi,
                            state.phi_hi, state.a_rec, state.phi_rec)
        use_cubic = (state.j > 0) & (a_cubic > left + delta1 * width) \
            & (a_cubic < right - delta1 * width)
        a_quad = _quadmin(state.a_lo, state.phi_lo, state.dphi_lo, state.a_hi, state.phi_hi)
        use_quad = ~use_cubic & (a_quad > left + delta2 * width) \
            & (a_quad < right - delta2 * width)
        a_bisect = (state.a_lo + state.a_hi) / 2.0
        a_j = jnp.where(use_cubic, a_cubic, state.a_rec)
        a_j = jnp.where(use_quad, a_quad, a_j)
        a_j = jnp.where(~use_cubic & ~use_quad, a_bisect, a_j)

        phi_j, dphi_j, g_j = restricted(a_j)
        phi_j = phi_j.astype(state.phi_lo.dtype)
        dphi_j = dphi_j.astype(state.dphi_lo.dtype)
        g_j = g_j.astype(state.g_star.dtype)
        state = state._replace(nfev=state.nfev + 1, ngev=state.ngev + 1)

        hi_to_j = wolfe.too_high(a_j, phi_j) | (phi_j >= state.phi_lo)
        star_to_j = wolfe.flat_enough(dphi_j) & ~hi_to_j
        hi_to_lo = (dphi_j * (state.a_hi - state.a_lo) >= 0.0) & ~hi_to_j & ~star_to_j
        lo_to_j = ~hi_to_j & ~star_to_j

        state = _select(hi_to_j, state, a_hi=a_j, phi_hi=phi_j, dphi_hi=dphi_j,
                        a_rec=state.a_hi, phi_rec=state.phi_hi)
        state = _select(star_to_j, state, a_star=a_j, phi_star=phi_j, dphi_star=dphi_j,
                        g_star=g_j)
        state = state._replace(done=star_to_j | state.done)
        state = _select(hi_to_lo, state, a_hi=state.a_lo, phi_hi=state.phi_lo,
                        dphi_hi=state.dphi_lo, a_rec=state.a_hi, phi_rec=state.phi_hi)
        state = _select(lo_to_j & ~hi_to_lo, state, a_rec=state.a_lo, phi_rec=state.phi_lo)
        state = _select(lo_to_j, state, a_lo=a_j, phi_lo=phi_j, dphi_lo=dphi_j)
        # (JAX allows more zoom steps than SciPy's 10: float32 needs them)
        return state._replace(j=state.j + 1, failed=state.failed | (state.j + 1 >= 30))

    def cond(state: _ZoomState) -> Any:
        return ~state.done & ~pass_through & ~state.failed

    init = _ZoomState(
        done=jnp.asarray(False), failed=jnp.asarray(False), j=0,
        a_lo=a_lo, phi_lo=phi_lo, dphi_lo=dphi_lo, a_hi=a_hi, phi_hi=phi_hi, dphi_hi=dphi_hi,
        a_rec=(a_lo + a_hi) / 2.0, phi_rec=(phi_lo + phi_hi) / 2.0,
        a_star=jnp.asarray(1.0, dtype), phi_star=phi_lo, dphi_star=dphi_lo, g_star=g_0,
        nfev=0, ngev=0)
    return while_loop(cond, body, init)


# --- the line search --------------------------------------------------------------------

class _SearchState(NamedTuple):
    done: Any
    failed: Any
    i: Any
    a_i1: Any  # the previous step, its value and slope
    phi_i1: Any
    dphi_i1: Any
    nfev: Any
    ngev: Any
    a_star: Any
    phi_star: Any
    dphi_star: Any
    g_star: Any


def line_search(value_and_grad: ValueAndGrad, xk: Any, pk: Any, old_fval: Any = None,
                old_old_fval: Any = None, gfk: Any = None, c1: float = 1e-4, c2: float = 0.9,
                maxiter: int = 20) -> LineSearchResults:
    """A step along the descent direction `pk` from `xk` satisfying the strong Wolfe
    conditions with constants `c1` and `c2` (JAX's ``line_search``, given the objective's
    `value_and_grad`). `old_fval` and `gfk` are f and its gradient at `xk` (computed when
    not given); `old_old_fval`, f at the previous iterate, sets the first trial step."""
    xk, pk = jnp.asarray(xk), jnp.asarray(pk)
    dtype = dtypes.promote_types(xk.dtype, pk.dtype)
    if not dtypes.is_inexact(dtype):
        dtype = dtypes.default_float()
    xk, pk = xk.astype(dtype), pk.astype(dtype)

    def restricted(t: Any) -> tuple[Any, Any, Any]:
        phi, g = value_and_grad(xk + jnp.asarray(t, dtype) * pk)
        return phi, jnp.real(jnp.dot(g, pk)), g

    evaluated = 0
    if old_fval is None or gfk is None:
        phi_0, dphi_0, gfk = restricted(0.0)
        evaluated = 1
    else:
        phi_0, dphi_0 = old_fval, jnp.real(jnp.dot(gfk, pk))
    if old_old_fval is None:
        start: Any = 1.0
    else:
        # the step a quadratic through the last two values would take, at most 1
        candidate = 1.01 * 2 * (phi_0 - old_old_fval) / dphi_0
        start = jnp.where(candidate > 1, 1.0, candidate)
    wolfe = _Wolfe(phi_0, dphi_0, c1, c2)
    step_dtype = jnp.result_type(start)

    def body(state: _SearchState) -> _SearchState:
        # (no largest step: double it, as SciPy does)
        a_i = jnp.where(state.i == 1, start, state.a_i1 * 2.0)
        phi_i, dphi_i, g_i = restricted(a_i)
        state = state._replace(nfev=state.nfev + 1, ngev=state.ngev + 1)

        star_to_zoom1 = wolfe.too_high(a_i, phi_i) | ((phi_i >= state.phi_i1) & (state.i > 1))
        star_to_i = wolfe.flat_enough(dphi_i) & ~star_to_zoom1
        star_to_zoom2 = (dphi_i >= 0.0) & ~star_to_zoom1 & ~star_to_i

        zoom1 = _zoom(restricted, wolfe, state.a_i1, state.phi_i1, state.dphi_i1,
                      a_i, phi_i, dphi_i, gfk, ~star_to_zoom1)
        zoom2 = _zoom(restricted, wolfe, a_i, phi_i, dphi_i,
                      state.a_i1, state.phi_i1, state.dphi_i1, gfk, ~star_to_zoom2)
        state = state._replace(nfev=state.nfev + zoom1.nfev + zoom2.nfev,
                               ngev=state.ngev + zoom1.ngev + zoom2.ngev)

        state = _select(star_to_i, state, a_star=a_i, phi_star=phi_i, dphi_star=dphi_i,
                        g_star=g_i)
        for found, zoom in ((star_to_zoom1, zoom1), (star_to_zoom2, zoom2)):
            state = _select(found, state, a_star=zoom.a_star, phi_star=zoom.phi_star,
                            dphi_star=zoom.dphi_star, g_star=zoom.g_star)
            state = state._replace(failed=state.failed | (found & zoom.failed))
        state = state._replace(done=state.done | star_to_zoom1 | star_to_i | star_to_zoom2)
        return state._replace(i=state.i + 1, a_i1=a_i, phi_i1=phi_i, dphi_i1=dphi_i)

    def cond(state: _SearchState) -> Any:
        return ~state.done & (state.i <= maxiter) & ~state.failed

    init = _SearchState(
        done=jnp.asarray(False), failed=jnp.asarray(False), i=1,
        a_i1=jnp.zeros((), step_dtype), phi_i1=phi_0, dphi_i1=dphi_0,
        nfev=evaluated, ngev=evaluated,
        a_star=jnp.zeros((), step_dtype), phi_star=phi_0, dphi_star=dphi_0, g_star=gfk)
    state = while_loop(cond, body, init)

    status = jnp.where(state.failed, jnp.asarray(1),
                       jnp.where(state.i > maxiter, jnp.asarray(3), jnp.asarray(0)))
    alpha_k = jnp.asarray(state.a_star)
    if dtypes.finfo(alpha_k.dtype).bits != 64:
        # A float32 step this small leaves the iterate where it is: BFGS would stall.
        alpha_k = jnp.where(jnp.abs(alpha_k) < 1e-8, jnp.sign(alpha_k) * 1e-8, alpha_k)
    return LineSearchResults(failed=state.failed | ~state.done, nit=state.i - 1,
                             nfev=state.nfev, ngev=state.ngev, k=state.i, a_k=alpha_k,
                             f_k=state.phi_star, g_k=state.g_star, status=status)
