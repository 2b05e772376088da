"""The special functions of `transpiler.scipy.special` and their `lax` primitives (gamma,
incomplete gamma and beta, zeta, polygamma, Bessel): values against SciPy in float32 and
float64, eager and under jit, against JAX when installed; derivatives against float64
finite differences; vmap against a loop; the errors JAX gives."""

from __future__ import annotations

import numpy as np
import pytest

import transpiler as tp
import transpiler.numpy as jnp
from transpiler import lax
from transpiler.config import config
from transpiler.scipy import special as sp
from transpiler.scipy import stats

try:
    import scipy.special as ss
    import scipy.stats as st
except ImportError:  # the oracle: each test that needs it skips
    ss = st = None


def _scipy():
    if ss is None:
        pytest.skip("SciPy (the oracle) is not installed")
    return ss

rng = np.random.default_rng(0)
X = np.concatenate([rng.uniform(-8, 8, 30), [0.5, 1.0, 2.0, 1e-3, 25.0, -2.5]])
POS = np.concatenate([rng.uniform(0.05, 12, 30), [0.5, 1.0, 2.0, 1e-3, 25.0, 80.0]])
POS2 = np.concatenate([rng.uniform(0.05, 15, 30), [0.3, 1.0, 4.0, 2.0, 30.0, 60.0]])
UNIT = np.concatenate([rng.uniform(0, 1, 30), [0.0, 1.0, 0.5, 1e-4, 0.9999, 0.3]])
ORDERS = rng.integers(0, 5, 36).astype(np.int32)

# name -> (our function, SciPy's (by name), arguments)
FUNCTIONS = {
    "gammaln": (sp.gammaln, "gammaln", (X,)),
    "digamma": (sp.digamma, "digamma", (X,)),
    "gamma": (sp.gamma, "gamma", (X / 2,)),
    "gammasgn": (sp.gammasgn, "gammasgn", (X,)),
    "loggamma": (sp.loggamma, "loggamma", (POS,)),
    "polygamma": (sp.polygamma, "polygamma", (ORDERS, POS)),
    "zeta": (sp.zeta, "zeta", (POS + 1.2, POS2)),
    "gammainc": (sp.gammainc, "gammainc", (POS, POS2)),
    "gammaincc": (sp.gammaincc, "gammaincc", (POS, POS2)),
    "betainc": (sp.betainc, "betainc", (POS, POS2, UNIT)),
    "beta": (sp.beta, "beta", (POS / 3, POS2 / 3)),
    "factorial": (sp.factorial, "factorial", (np.arange(-2.0, 16.0),)),
    "poch": (sp.poch, "poch", (POS / 2, UNIT * 4)),
    "rel_entr": (sp.rel_entr, "rel_entr", (UNIT * 2 - 0.2, POS / 4 - 0.5)),
    "kl_div": (sp.kl_div, "kl_div", (UNIT * 2 - 0.2, POS / 4 - 0.5)),
    "i0e": (sp.i0e, "i0e", (X * 4,)),
    "i1e": (sp.i1e, "i1e", (X * 4,)),
    "i0": (sp.i0, "i0", (X,)),
    "i1": (sp.i1, "i1", (X,)),
}


def _cast(args, dtype):
    return tuple(a.astype(dtype) if a.dtype.kind == "f" else a for a in args)


def _check(got, want, rtol, atol=0.0):
    got = np.asarray(got, np.float64)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, equal_nan=True)


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_values_match_scipy_in_float32(name):
    fn, ref, args = FUNCTIONS[name]
    ref = getattr(_scipy(), ref)
    args32 = _cast(args, np.float32)
    want = ref(*[a.astype(np.float64) for a in args32])
    eager = fn(*args32)
    assert np.asarray(eager).dtype == np.float32
    _check(eager, want, rtol=2e-5, atol=1e-7)
    compiled = tp.jit(fn)(*args32)
    assert np.asarray(compiled).dtype == np.float32
    _check(compiled, want, rtol=5e-4, atol=1e-6)


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_values_match_scipy_in_float64(name, monkeypatch):
    monkeypatch.setattr(config, "enable_x64", True)
    fn, ref, args = FUNCTIONS[name]
    want = getattr(_scipy(), ref)(*args)
    eager = fn(*args)
    assert np.asarray(eager).dtype == np.float64
    _check(eager, want, rtol=1e-11, atol=1e-13)
    _check(tp.jit(fn)(*args), want, rtol=1e-10, atol=1e-13)


def test_domain_edges_match_scipy(monkeypatch):
    """Poles, zeros, infinities and NaN: SciPy's (and XLA's) values, eagerly and jitted."""
    monkeypatch.setattr(config, "enable_x64", True)
    _scipy()
    edges = np.array([0.0, -1.0, -2.0, np.inf, -np.inf, np.nan, 1e-300, 1e300])
    a = np.array([0.0, 0.0, 1.0, 2.0, -1.0, np.nan, 3.0, np.inf])
    x = np.array([0.0, 1.0, 0.0, np.inf, 1.0, 1.0, -1.0, 2.0])
    def gammaln_like_jax(x):  # SciPy's gammaln(-inf) is -inf, JAX's (XLA's) inf
        return np.where(x == -np.inf, np.inf, ss.gammaln(x))

    for fn, ref, args in [(sp.gammaln, gammaln_like_jax, (edges,)), (sp.gamma, ss.gamma, (edges,)),
                          (sp.gammainc, ss.gammainc, (a[1:], x[1:])),
                          (sp.gammaincc, ss.gammaincc, (a[1:], x[1:])),
                          (sp.i0e, ss.i0e, (edges,)), (sp.i1e, ss.i1e, (edges,)),
                          (sp.betainc, ss.betainc, (np.array([1.0, 2.0, -1.0, 2.0]),
                                                    np.array([2.0, 1.0, 1.0, 3.0]),
                                                    np.array([0.0, 1.0, 0.5, 1.5])))]:
        want = ref(*args)
        _check(fn(*args), want, rtol=1e-12)
        _check(tp.jit(fn)(*args), want, rtol=1e-12)


def test_lax_primitives_match_jax():
    """Under jit the CHLO ops and XLA's algorithms give JAX's float32 values."""
    jax = pytest.importorskip("jax")
    for name, args in [("lgamma", (X,)), ("digamma", (X,)), ("polygamma", (ORDERS, POS)),
                       ("zeta", (POS + 1.2, POS2)), ("igamma", (POS, POS2)),
                       ("igammac", (POS, POS2)), ("igamma_grad_a", (POS, POS2)),
                       ("random_gamma_grad", (POS, POS2)), ("bessel_i0e", (X * 4,)),
                       ("bessel_i1e", (X * 4,)), ("betainc", (POS, POS2, UNIT))]:
        args32 = tuple(a.astype(np.float32) for a in args)
        want = np.asarray(getattr(jax.lax, name)(*args32))
        got = np.asarray(tp.jit(getattr(lax, name))(*args32))
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=1e-6, equal_nan=True,
                                   err_msg=name)


# name -> (function of the differentiated argument, point, the other arguments)
DERIVATIVES = {
    "gammainc in a": (lambda a: sp.gammainc(a, 2.5), 1.7),
    "gammainc in x": (lambda x: sp.gammainc(1.7, x), 2.5),
    "gammainc in a, continued fraction": (lambda a: sp.gammainc(a, 9.0), 3.2),
    "gammaincc in a": (lambda a: sp.gammaincc(a, 6.0), 2.2),
    "gammaincc in x": (lambda x: sp.gammaincc(4.0, x), 6.0),
    "betainc in x": (lambda x: sp.betainc(2.5, 1.5, x), 0.4),
    "zeta in s": (lambda s: sp.zeta(s, 1.5), 2.7),
    "zeta in q": (lambda q: sp.zeta(2.7, q), 1.5),
    "polygamma in x": (lambda x: sp.polygamma(2, x), 1.3),
    "digamma": (sp.digamma, 0.7),
    "kl_div in p": (lambda p: sp.kl_div(p, 0.7), 0.4),
    "kl_div in q": (lambda q: sp.kl_div(0.4, q), 0.7),
    "gammaln": (sp.gammaln, -1.3),
    "i0e": (sp.i0e, -2.1),
    "i1e": (sp.i1e, 0.6),
    "i1e at 0": (sp.i1e, 0.0),
    "gamma.cdf in x": (lambda x: stats.gamma.cdf(x, 2.5, 0.2, 1.3), 3.0),
    "gamma.cdf in a": (lambda a: stats.gamma.cdf(3.0, a), 2.5),
    "chi2.sf in x": (lambda x: stats.chi2.sf(x, 3.0), 2.0),
    "beta.cdf in x": (lambda x: stats.beta.cdf(x, 2.0, 3.0), 0.3),
    "poisson.cdf in mu": (lambda mu: stats.poisson.cdf(4.0, mu), 3.5),
    "random_gamma_grad in x": (lambda x: lax.random_gamma_grad(2.5, x), 1.8),
}


@pytest.mark.parametrize("name", sorted(DERIVATIVES))
def test_derivatives_match_finite_differences(name, monkeypatch):
    monkeypatch.setattr(config, "enable_x64", True)
    fn, at = DERIVATIVES[name]
    h = 1e-6
    want = (float(fn(at + h)) - float(fn(at - h))) / (2 * h)
    np.testing.assert_allclose(float(tp.grad(fn)(at)), want, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(float(tp.jit(tp.grad(fn))(at)), want, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(float(tp.jvp(fn, (at,), (1.0,))[1]), want, rtol=1e-6,
                               atol=1e-9)


def test_second_derivatives(monkeypatch):
    """lgamma'' = polygamma(1, .), digamma'' = polygamma(2, .), and i0e's and gammainc's
    second derivatives in x against finite differences of the first."""
    monkeypatch.setattr(config, "enable_x64", True)
    for fn, at in [(sp.gammaln, 2.3), (sp.digamma, 1.4), (sp.i0e, 1.1),
                   (lambda x: sp.gammainc(2.0, x), 1.5), (lambda q: sp.zeta(3.0, q), 2.0)]:
        first = tp.grad(fn)
        h = 1e-5
        want = (float(first(at + h)) - float(first(at - h))) / (2 * h)
        np.testing.assert_allclose(float(tp.grad(first)(at)), want, rtol=1e-6)
        np.testing.assert_allclose(float(tp.jit(tp.grad(first))(at)), want, rtol=1e-6)


def test_gradients_match_jax():
    jax = pytest.importorskip("jax")
    jss = pytest.importorskip("jax.scipy.special")
    a, x = np.float32(2.2), np.float32(3.1)
    for ours, theirs in [(lambda a: sp.gammainc(a, x), lambda a: jss.gammainc(a, x)),
                         (lambda a: sp.gammaincc(a, x), lambda a: jss.gammaincc(a, x)),
                         (lambda x: sp.i1e(x), lambda x: jss.i1e(x)),
                         (lambda x: sp.zeta(x, 1.5), lambda x: jss.zeta(x, 1.5))]:
        np.testing.assert_allclose(float(tp.grad(ours)(a)), float(jax.grad(theirs)(a)),
                                   rtol=1e-4)


def test_vmap_matches_a_loop():
    _scipy()
    a = POS[:8].astype(np.float32)
    x = POS2[:8].astype(np.float32)
    looped = np.stack([np.asarray(sp.gammainc(ai, x)) for ai in a])
    np.testing.assert_allclose(tp.vmap(lambda ai: sp.gammainc(ai, x))(a), looped, rtol=1e-6)
    per_example = tp.vmap(tp.grad(lambda ai, xi: sp.gammainc(ai, xi)))(a, x)
    looped = [float(tp.grad(lambda ai: sp.gammainc(ai, xi))(ai)) for ai, xi in zip(a, x)]
    np.testing.assert_allclose(per_example, looped, rtol=1e-5)
    np.testing.assert_allclose(tp.jit(tp.vmap(sp.i0e))(X.astype(np.float32)),
                               ss.i0e(X), rtol=1e-5)


def test_inputs_users_pass(monkeypatch):
    """Python scalars, NumPy scalars, integer arrays and our arrays."""
    _scipy()
    assert abs(float(sp.gammainc(2, 3)) - ss.gammainc(2, 3)) < 1e-6
    assert abs(float(sp.gammaln(np.float32(4.5))) - ss.gammaln(4.5)) < 1e-5
    assert np.asarray(sp.gammaln(np.arange(1, 5))).dtype == np.float32
    np.testing.assert_allclose(sp.zeta(jnp.asarray([2.0, 3.0]), 1), ss.zeta([2.0, 3.0], 1),
                               rtol=1e-6)
    np.testing.assert_allclose(sp.polygamma(jnp.arange(3), 2.5), ss.polygamma([0, 1, 2], 2.5),
                               rtol=1e-5)


def test_errors_like_jax():
    with pytest.raises(ValueError, match="polygamma: argument `n` must be of integer type"):
        sp.polygamma(1.0, 2.0)
    with pytest.raises(NotImplementedError, match="Riemann zeta function not implemented"):
        sp.zeta(2.0)
    with pytest.raises(NotImplementedError, match="exact=True"):
        sp.factorial(3, exact=True)


@pytest.mark.parametrize("fn", [lambda a: sp.betainc(a, 2.0, 0.4),
                                lambda b: stats.beta.cdf(0.4, 2.0, b),
                                lambda m: lax.polygamma(m, 2.0),
                                lambda a: lax.random_gamma_grad(a, 2.0)],
                         ids=["betainc a", "beta.cdf b", "polygamma m", "random_gamma_grad a"])
def test_no_derivative_is_an_error_at_the_users_line(fn):
    """Where JAX has no derivative, differentiating is an error naming the argument --
    never a zero -- eagerly and under jit; the other arguments still differentiate."""
    with pytest.raises(ValueError, match="has no derivative with respect to its argument") \
            as caught:
        tp.grad(fn)(1.5)
    assert "test_special_functions.py" in str(caught.value)
    with pytest.raises(ValueError, match="has no derivative"):
        tp.jit(tp.grad(fn))(1.5)


# --- the distributions' CDFs ------------------------------------------------------------------

Q = np.linspace(-1.0, 12.0, 27)
U = np.linspace(-0.2, 1.2, 15)
K = np.arange(-2.0, 15.0)
CDFS = {
    "gamma.cdf": (lambda x: stats.gamma.cdf(x, 2.5, 0.3, 1.4),
                  lambda x: st.gamma.cdf(x, 2.5, 0.3, 1.4), Q),
    "gamma.sf": (lambda x: stats.gamma.sf(x, 2.5), lambda x: st.gamma.sf(x, 2.5), Q),
    "gamma.logcdf": (lambda x: stats.gamma.logcdf(x, 0.7), lambda x: st.gamma.logcdf(x, 0.7),
                     Q[4:]),
    "gamma.logsf": (lambda x: stats.gamma.logsf(x, 4.0), lambda x: st.gamma.logsf(x, 4.0), Q),
    "chi2.cdf": (lambda x: stats.chi2.cdf(x, 3), lambda x: st.chi2.cdf(x, 3), Q),
    "chi2.sf": (lambda x: stats.chi2.sf(x, 5, 1.0, 2.0), lambda x: st.chi2.sf(x, 5, 1.0, 2.0), Q),
    "chi2.logcdf": (lambda x: stats.chi2.logcdf(x, 3), lambda x: st.chi2.logcdf(x, 3), Q[3:]),
    "chi2.logsf": (lambda x: stats.chi2.logsf(x, 3), lambda x: st.chi2.logsf(x, 3), Q),
    "beta.cdf": (lambda x: stats.beta.cdf(x, 2.0, 3.5), lambda x: st.beta.cdf(x, 2.0, 3.5), U),
    "beta.sf": (lambda x: stats.beta.sf(x, 0.5, 0.7), lambda x: st.beta.sf(x, 0.5, 0.7), U),
    "beta.logcdf": (lambda x: stats.beta.logcdf(x, 2.0, 3.5),
                    lambda x: st.beta.logcdf(x, 2.0, 3.5), U[2:]),
    "beta.logsf": (lambda x: stats.beta.logsf(x, 2.0, 3.5, -0.1, 1.2),
                   lambda x: st.beta.logsf(x, 2.0, 3.5, -0.1, 1.2), U[:-3]),
    "poisson.cdf": (lambda k: stats.poisson.cdf(k, 3.5), lambda k: st.poisson.cdf(k, 3.5), K),
    "poisson.cdf loc": (lambda k: stats.poisson.cdf(k, 2.0, 1.0),
                        lambda k: st.poisson.cdf(k, 2.0, 1.0), K + 0.5),
    "bernoulli.cdf": (lambda k: stats.bernoulli.cdf(k, 0.3), lambda k: st.bernoulli.cdf(k, 0.3),
                      np.array([-1.0, 0.0, 0.5, 1.0, 2.0])),
    "bernoulli.ppf": (lambda q: stats.bernoulli.ppf(q, 0.3), lambda q: st.bernoulli.ppf(q, 0.3),
                      np.array([0.1, 0.5, 0.7, 0.71, 1.0])),
}


@pytest.mark.parametrize("name", sorted(CDFS))
def test_distribution_functions_match_scipy(name, monkeypatch):
    monkeypatch.setattr(config, "enable_x64", True)
    _scipy()
    ours, theirs, at = CDFS[name]
    want = theirs(at)
    _check(ours(at), want, rtol=1e-9, atol=1e-12)
    _check(tp.jit(ours)(at), want, rtol=1e-9, atol=1e-12)


def test_poisson_entropy(monkeypatch):
    """Summed below mu = 100, JAX's asymptotic formula (to 1e-6 there) above."""
    monkeypatch.setattr(config, "enable_x64", True)
    _scipy()
    mu = np.array([0.0, 0.5, 3.0, 40.0, 99.0, 150.0, 400.0])
    _check(stats.poisson.entropy(mu), st.poisson.entropy(mu), rtol=1e-6)
    _check(tp.jit(stats.poisson.entropy)(mu[:5]), st.poisson.entropy(mu[:5]), rtol=1e-9)


def test_bernoulli_ppf_and_poisson_entropy_follow_jax():
    """Where SciPy and JAX differ (ppf(0) is -1 in SciPy, 0 in JAX), JAX's answer."""
    jst = pytest.importorskip("jax.scipy.stats")
    q = np.array([0.0, 0.2, 0.7, 1.0, 1.5], np.float32)
    np.testing.assert_array_equal(stats.bernoulli.ppf(q, 0.3), jst.bernoulli.ppf(q, 0.3))
    mu = np.array([0.0, 0.5, 3.0, 40.0, 99.0, 150.0], np.float32)
    np.testing.assert_allclose(tp.jit(stats.poisson.entropy)(mu), jst.poisson.entropy(mu),
                               rtol=2e-5)
