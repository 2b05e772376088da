"""transpiler.random's distributions (the gamma family included), permutation and choice:
JAX's values for a key
(bit-for-bit where the computation is elementwise on the same bits, to rounding where it
goes through transcendental functions or a factorization), eagerly and under jit, with
vmap over keys and clear errors for bad arguments."""

from __future__ import annotations

import numpy as np
import pytest

import transpiler as tp
from transpiler import random as tr

jax = pytest.importorskip("jax")
jr = jax.random
ss = pytest.importorskip("scipy.special")  # (JAX's dependency)
KEY = 1234
MEAN = np.array([1.0, -2.0, 0.5], np.float32)
_g = np.random.default_rng(0).normal(size=(3, 3))
COV = (_g @ _g.T + np.eye(3)).astype(np.float32)

SAMPLERS = [
    ("exponential", lambda r, k: r.exponential(k, (4, 5))),
    ("laplace", lambda r, k: r.laplace(k, (7,))),
    ("logistic", lambda r, k: r.logistic(k, (7,))),
    ("cauchy", lambda r, k: r.cauchy(k, (7,))),
    ("pareto", lambda r, k: r.pareto(k, np.float32(2.5), (6,))),
    ("weibull_min", lambda r, k: r.weibull_min(k, 2.0, 1.5, (6,))),
    ("rayleigh", lambda r, k: r.rayleigh(k, np.ones(5, np.float32) * 2)),
    ("triangular", lambda r, k: r.triangular(k, 0.0, 0.3, 2.0, (9,))),
    ("geometric", lambda r, k: r.geometric(k, np.float32(0.3), (9,))),
    ("lognormal", lambda r, k: r.lognormal(k, 0.5, (6,))),
    ("wald", lambda r, k: r.wald(k, np.float32(1.5), (6,))),
    ("maxwell", lambda r, k: r.maxwell(k, (5,))),
    ("rademacher", lambda r, k: r.rademacher(k, (9,))),
    ("double_sided_maxwell", lambda r, k: r.double_sided_maxwell(k, 1.0, 2.0, (4,))),
    ("multivariate_normal", lambda r, k: r.multivariate_normal(k, MEAN, COV, (5,))),
    ("multivariate_normal eigh", lambda r, k: r.multivariate_normal(k, MEAN, COV, (5,),
                                                                    method="eigh")),
    ("multivariate_normal svd", lambda r, k: r.multivariate_normal(k, MEAN, COV, (5,),
                                                                   method="svd")),
    ("orthogonal", lambda r, k: r.orthogonal(k, 4, (2,))),
    ("orthogonal wide", lambda r, k: r.orthogonal(k, 3, m=5)),
    ("gamma", lambda r, k: r.gamma(k, np.array([0.3, 1.0, 2.5, 7.0], np.float32))),
    ("gamma shape", lambda r, k: r.gamma(k, 2.0, (3, 2))),
    ("loggamma", lambda r, k: r.loggamma(k, np.array([0.01, 0.5, 3.0], np.float32))),
    ("beta", lambda r, k: r.beta(k, 2.0, 3.0, (4,))),
    ("dirichlet", lambda r, k: r.dirichlet(k, np.array([0.5, 1.0, 2.0], np.float32), (2,))),
    ("chisquare", lambda r, k: r.chisquare(k, 3.0, (4,))),
    ("t", lambda r, k: r.t(k, 4.0, (4,))),
    ("permutation int", lambda r, k: r.permutation(k, 10)),
    ("permutation rows", lambda r, k: r.permutation(k, np.arange(12.0).reshape(4, 3))),
    ("permutation axis 1 independent",
     lambda r, k: r.permutation(k, np.arange(12).reshape(3, 4), axis=1, independent=True)),
    ("permutation 5000", lambda r, k: r.permutation(k, 5000)),
    ("choice", lambda r, k: r.choice(k, 10, (3, 2))),
    ("choice array axis 1", lambda r, k: r.choice(k, np.arange(12).reshape(3, 4), (2,), axis=1)),
    ("choice no replace", lambda r, k: r.choice(k, np.arange(8.0), (5,), replace=False)),
    ("choice p", lambda r, k: r.choice(k, 5, (6,), p=np.array([0.1, 0.2, 0.3, 0.15, 0.25]))),
    ("choice p no replace", lambda r, k: r.choice(k, 5, (3,), replace=False,
                                                  p=np.array([0.1, 0.2, 0.3, 0.15, 0.25]))),
]
# Through transcendental functions or a factorization (LAPACK in JAX, Jacobi/Householder
# here): equal to rounding, not bit for bit.
ROUNDED = {"laplace", "logistic", "cauchy", "pareto", "weibull_min", "rayleigh", "lognormal",
           "wald", "maxwell", "double_sided_maxwell", "multivariate_normal",
           "multivariate_normal eigh", "multivariate_normal svd", "orthogonal",
           "orthogonal wide", "exponential", "triangular", "gamma", "gamma shape", "loggamma",
           "beta", "dirichlet", "chisquare", "t"}


@pytest.mark.parametrize("name,draw", SAMPLERS, ids=[s[0] for s in SAMPLERS])
def test_samplers_give_jaxs_values(name, draw):
    want = np.asarray(draw(jr, jr.PRNGKey(KEY)))
    for label, fn in (("eager", lambda k: draw(tr, k)), ("jit", tp.jit(lambda k: draw(tr, k)))):
        got = np.asarray(fn(tr.PRNGKey(KEY)))
        assert (got.dtype, got.shape) == (want.dtype, want.shape), (name, label)
        if name in ROUNDED:
            np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-5, err_msg=name + label)
        else:
            np.testing.assert_array_equal(got, want, err_msg=name + label)


def test_vmap_over_keys_matches_a_loop():
    keys = tr.split(tr.PRNGKey(3), 4)

    def draw(k):
        return (tr.permutation(k, 6), tr.laplace(k, (2,)), tr.choice(k, 9, (3,), replace=False),
                tr.gamma(k, 1.5, (2,)))

    looped = [draw(k) for k in keys]
    for out in (tp.vmap(draw)(keys), tp.jit(tp.vmap(draw))(keys)):
        for i, part in enumerate(out):
            np.testing.assert_allclose(part, np.stack([np.asarray(x[i]) for x in looped]),
                                       rtol=1e-6)


def test_samples_have_the_right_moments():
    k = tr.PRNGKey(0)
    g = np.asarray(tp.jit(lambda key: tr.gamma(key, np.float32(0.7), (4000,)))(k))
    np.testing.assert_allclose([g.mean(), g.var()], [0.7, 0.7], rtol=0.08)
    samples = np.asarray(tr.multivariate_normal(k, MEAN, COV, (20000,)))
    np.testing.assert_allclose(samples.mean(0), MEAN, atol=0.05)
    np.testing.assert_allclose(np.cov(samples.T), COV, rtol=0.05, atol=0.05)
    q = np.asarray(tr.orthogonal(k, 5, (3,)))
    np.testing.assert_allclose(np.swapaxes(q, -1, -2) @ q, np.broadcast_to(np.eye(5), (3, 5, 5)),
                               atol=1e-5)
    perm = np.asarray(tr.permutation(k, 100))
    assert sorted(perm.tolist()) == list(range(100))


def test_bad_arguments():
    k = tr.PRNGKey(0)
    with pytest.raises(ValueError, match="larger sample"):
        tr.choice(k, 3, (4,), replace=False)
    with pytest.raises(ValueError, match="p must be None or a 1-d vector"):
        tr.choice(k, 3, (2,), p=np.ones(4) / 4)
    with pytest.raises(TypeError, match="shape must be a sequence"):
        tr.choice(k, 3, 2)
    with pytest.raises(TypeError, match="x must be an integer"):
        tr.permutation(k, 2.5)
    with pytest.raises(ValueError, match="method must be one of"):
        tr.multivariate_normal(k, MEAN, COV, method="qr")
    with pytest.raises(ValueError, match="cov.shape"):
        tr.multivariate_normal(k, MEAN, np.eye(2, dtype=np.float32))
    with pytest.raises(TypeError, match="static value"):
        tp.jit(lambda n: tr.permutation(k, n))(5)


def _gamma_total(a):
    return tp.numpy.sum(tr.gamma(tr.PRNGKey(0), a, (3,)))


def _gamma_scaled(a):
    return tp.numpy.sum(tr.gamma(tr.PRNGKey(0), tp.lax.stop_gradient(a), (3,)) * a)


def _loggamma_total(a):
    return tp.numpy.sum(tr.loggamma(tr.PRNGKey(1), a, (4,)))


def _beta_total(a):
    return tp.numpy.sum(tr.beta(tr.PRNGKey(2), a, 2.0, (4,)))


def test_gamma_samples_differentiate_by_implicit_reparameterization():
    """A sample x with P(a, x) = u (u fixed by the key) moves by -(dP/da) / (dP/dx): JAX's
    derivative, checked against the inverse CDF's finite differences with SciPy and against
    jax.grad; eagerly, under jit and in forward mode; loggamma and beta through it."""
    a = np.float32(2.0)
    samples = np.asarray(tr.gamma(tr.PRNGKey(0), a, (3,)), np.float64)
    u = ss.gammainc(2.0, samples)
    want = ((ss.gammaincinv(2.0 + 1e-5, u) - ss.gammaincinv(2.0 - 1e-5, u)) / 2e-5).sum()
    np.testing.assert_allclose(tp.grad(_gamma_total)(a), want, rtol=1e-4)
    np.testing.assert_allclose(tp.jit(tp.grad(_gamma_total))(a), want, rtol=1e-4)
    np.testing.assert_allclose(tp.jvp(_gamma_total, (a,), (np.float32(1.0),))[1], want,
                               rtol=1e-4)
    np.testing.assert_allclose(tp.grad(_gamma_scaled)(a), samples.sum(), rtol=1e-6)
    for ours, theirs in [
            (_gamma_total, lambda a: jax.random.gamma(jax.random.PRNGKey(0), a, (3,)).sum()),
            (_loggamma_total,
             lambda a: jax.random.loggamma(jax.random.PRNGKey(1), a, (4,)).sum()),
            (_beta_total, lambda a: jax.random.beta(jax.random.PRNGKey(2), a, 2.0, (4,)).sum())]:
        for at in (np.float32(0.4), np.float32(3.0)):
            np.testing.assert_allclose(tp.grad(ours)(at), jax.grad(theirs)(at), rtol=2e-4)


def test_second_derivative_of_a_gamma_sample_in_its_shape_is_an_error():
    """It needs d^2 P / da^2, which JAX does not have either: an error, never a zero."""
    with pytest.raises(ValueError, match="random_gamma_grad has no derivative"):
        tp.grad(tp.grad(_gamma_total))(np.float32(2.0))
