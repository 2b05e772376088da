"""transpiler.random's poisson, binomial, multinomial, f, generalized_normal and ball, and
the samplers' other modes (bernoulli and gumbel 'high', categorical without replacement):
JAX's values for a key (counts exactly, floats to rounding), eagerly and under jit; their
distributions against scipy.stats; JAX's shapes, dtypes and answers for bad parameters;
vmap over keys and over parameters."""

from __future__ import annotations

import functools

import numpy as np
import pytest

import transpiler as tp
from transpiler import random as tr
from transpiler.errors import DTypeError, ShapeError

KEY = 1234
F32 = np.float32
LAMS = np.array([0.0, 0.5, 3.0, 9.99, 10.0, 37.5, 1e3, -1.0, np.nan], F32)
N_EDGE = np.array([0, 5, 100, 1000, -1, np.inf, np.nan, 20, 20, 20, 5.5], F32)
P_EDGE = np.array([0.5, 0.9, 0.7, 0.2, 0.5, 0.5, 0.5, -0.1, 1.2, np.nan, 1.0], F32)
PROBS = np.array([0.2, 0.3, 0.5], F32)
LOGITS = np.log(np.array([[0.1, 0.2, 0.3, 0.25, 0.15], [0.5, 0.1, 0.1, 0.2, 0.1]], F32))

# Integer-valued samples (counts, booleans, indices): JAX's exactly.
COUNTS = {
    "poisson knuth": lambda r, k: r.poisson(k, 3.0, (40,)),
    "poisson rejection": lambda r, k: r.poisson(k, 40.0, (40,)),
    "poisson lam array": lambda r, k: r.poisson(k, LAMS),
    "poisson broadcast int16": lambda r, k: r.poisson(k, np.array([1.0, 20.0], F32), (3, 2),
                                                      np.int16),
    "binomial inversion": lambda r, k: r.binomial(k, 10.0, 0.3, (40,)),
    "binomial btrs": lambda r, k: r.binomial(k, 200.0, 0.4, (40,)),
    "binomial reflected": lambda r, k: r.binomial(k, np.array([30.0, 300.0], F32),
                                                  np.array([0.9, 0.7], F32), (20, 2)),
    "binomial edges": lambda r, k: r.binomial(k, N_EDGE, P_EDGE),
    "multinomial": lambda r, k: r.multinomial(k, 20.0, PROBS),
    "multinomial batch": lambda r, k: r.multinomial(k, np.array([5.0, 500.0], F32), PROBS,
                                                    shape=(2, 3)),
    "bernoulli high": lambda r, k: r.bernoulli(k, np.array([1e-9, 0.3, 0.9], F32), (4, 3),
                                               mode="high"),
    "categorical no replace": lambda r, k: r.categorical(k, LOGITS, shape=(3, 2),
                                                         replace=False),
    "categorical axis 0 no replace": lambda r, k: r.categorical(k, LOGITS, axis=0,
                                                                shape=(2, 5), replace=False),
    "categorical high": lambda r, k: r.categorical(k, LOGITS, shape=(4, 2), mode="high"),
}
# Through log, pow and the gamma sampler's transcendentals: JAX's to rounding.
ROUNDED = {
    "f": lambda r, k: r.f(k, 3.0, 5.0, (4,)),
    "f arrays": lambda r, k: r.f(k, np.array([1.0, 4.0, 10.0], F32), 6.0),
    "generalized_normal": lambda r, k: r.generalized_normal(k, 1.5, (4,)),
    "generalized_normal p 0.5": lambda r, k: r.generalized_normal(k, 0.5, (3,)),
    "ball": lambda r, k: r.ball(k, 3, 2, (2,)),
    "ball p 1": lambda r, k: r.ball(k, 2, 1.0),
    "gumbel high": lambda r, k: r.gumbel(k, (6,), mode="high"),
}
SAMPLERS = {**COUNTS, **ROUNDED}
# Compared eagerly only: the jit groups already compile their methods' loops, and every
# loop adds compile time.
EAGER_ONLY = {"poisson broadcast int16", "multinomial", "f arrays", "generalized_normal p 0.5"}


@pytest.fixture(scope="module")
def jr():  # type: ignore[no-untyped-def]
    return pytest.importorskip("jax").random


@functools.lru_cache(maxsize=None)
def jax_values(group: str) -> dict:
    """Every sampler of a group, as one jitted JAX call."""
    jax = pytest.importorskip("jax")
    table = COUNTS if group == "counts" else ROUNDED
    return jax.jit(lambda k: {n: draw(jax.random, k) for n, draw in table.items()})(
        jax.random.PRNGKey(KEY))


def check(name: str, got, want, where: str) -> None:  # type: ignore[no-untyped-def]
    got, want = np.asarray(got), np.asarray(want)
    assert (got.dtype, got.shape) == (want.dtype, want.shape), (name, where)
    if name in COUNTS:
        np.testing.assert_array_equal(got, want, err_msg=f"{name} {where}")
    else:
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-5, err_msg=f"{name} {where}")


@pytest.mark.parametrize("name", list(SAMPLERS))
def test_samplers_give_jaxs_values_eagerly(jr, name):  # type: ignore[no-untyped-def]
    group = "counts" if name in COUNTS else "rounded"
    check(name, SAMPLERS[name](tr, tr.PRNGKey(KEY)), jax_values(group)[name], "eager")


@pytest.mark.slow  # (compiling the loops: ~30 s each without the compile cache)
@pytest.mark.parametrize("group", ["counts", "rounded"])
def test_samplers_give_jaxs_values_under_jit(jr, group):  # type: ignore[no-untyped-def]
    """One compiled module per group: every sampler's loops, side by side."""
    table = {n: draw for n, draw in (COUNTS if group == "counts" else ROUNDED).items()
             if n not in EAGER_ONLY}
    got = tp.jit(lambda k: {n: draw(tr, k) for n, draw in table.items()})(tr.PRNGKey(KEY))
    for name in table:
        check(name, got[name], jax_values(group)[name], "jit")


def test_jaxs_answers_for_bad_parameters():
    """Negative or NaN rates count -1; p outside [0, 1], NaN p and negative or NaN n give
    NaN, infinite n inf (JAX's values, also compared bit for bit above)."""
    k = tr.PRNGKey(0)
    lam = np.array([-1.0, np.nan, 0.0], F32)
    assert np.asarray(tr.poisson(k, lam)).tolist() == [-1, -1, 0]
    n = np.array([5, 5, -1, np.nan, np.inf, 0, 5, 5], F32)
    p = np.array([-0.1, 1.1, 0.5, 0.5, 0.5, 0.5, 0.0, 1.0], F32)
    got = np.asarray(tr.binomial(k, n, p))
    np.testing.assert_array_equal(got, [np.nan, np.nan, np.nan, np.nan, np.inf, 0, 0, 5])


def _ecdf_gap(samples: np.ndarray, cdf) -> float:  # type: ignore[no-untyped-def]
    """The largest gap between the empirical CDF of integer samples and `cdf`."""
    values = np.arange(samples.min(), samples.max() + 1)
    empirical = np.searchsorted(np.sort(samples), values, side="right") / samples.size
    return float(np.max(np.abs(empirical - cdf(values))))


# For 20000 draws the DKW inequality bounds the CDF gap by 0.019 with probability 1 - 1e-6.
GAP = 0.019


@pytest.mark.parametrize("lam", [0.7, 3.0, 9.5, 10.0, 30.0, 250.0])
def test_poisson_follows_the_poisson_distribution(lam):
    stats = pytest.importorskip("scipy.stats")
    samples = np.asarray(tr.poisson(tr.PRNGKey(7), lam, (20000,)))
    assert samples.dtype == np.int32 and samples.min() >= 0
    assert _ecdf_gap(samples, stats.poisson(lam).cdf) < GAP
    np.testing.assert_allclose([samples.mean(), samples.var()], [lam, lam], rtol=0.05)


@pytest.mark.parametrize("n, p", [(10, 0.3), (20, 0.95), (200, 0.4), (150, 0.8), (7.9, 0.5)])
def test_binomial_follows_the_binomial_distribution(n, p):
    """Inversion (n p <= 10) and BTRS, each for p below and above 1/2; n is floored."""
    stats = pytest.importorskip("scipy.stats")
    samples = np.asarray(tr.binomial(tr.PRNGKey(3), n, p, (20000,)))
    assert samples.dtype == np.float32 and np.all(samples == np.floor(samples))
    trials = np.floor(n)
    assert 0 <= samples.min() and samples.max() <= trials
    assert _ecdf_gap(samples.astype(np.int64), stats.binom(trials, p).cdf) < GAP
    np.testing.assert_allclose(samples.mean(), trials * p, rtol=0.03)
    np.testing.assert_allclose(samples.var(), trials * p * (1 - p), rtol=0.06)


def test_multinomial_counts_add_up_and_have_the_right_means():
    n = np.array([30.0, 3.0], F32)
    counts = np.asarray(tr.multinomial(tr.PRNGKey(5), n[:, None], PROBS, shape=(2, 4000, 3)))
    assert counts.shape == (2, 4000, 3) and counts.dtype == np.float32
    np.testing.assert_array_equal(counts.sum(-1), np.broadcast_to(n[:, None], (2, 4000)))
    np.testing.assert_allclose(counts.mean(1), n[:, None] * PROBS, rtol=0.06, atol=0.02)
    zero = np.asarray(tr.multinomial(tr.PRNGKey(5), 9.0, np.array([0.5, 0.0, 0.5], F32)))
    assert zero[1] == 0 and zero.sum() == 9


@pytest.mark.slow  # (~20 s to compile without the compile cache)
def test_continuous_samplers_follow_their_distributions():
    """Kolmogorov-Smirnov against scipy.stats (one compiled module; the gamma draws are
    slow eagerly): F, the generalized normal, and the radius of points uniform in an Lp
    ball, whose d-th power is uniform on [0, 1]."""
    stats = pytest.importorskip("scipy.stats")

    def draw(k):  # type: ignore[no-untyped-def]
        keys = tr.split(k, 4)
        return (tr.f(keys[0], 4.0, 7.0, (3000,)), tr.generalized_normal(keys[1], 1.5, (3000,)),
                tr.ball(keys[2], 3, 2, (1500,)), tr.ball(keys[3], 2, 1.0, (1500,)))

    f, gn, ball2, ball1 = (np.asarray(x) for x in tp.jit(draw)(tr.PRNGKey(11)))
    assert stats.kstest(f, stats.f(4.0, 7.0).cdf).pvalue > 1e-4
    assert stats.kstest(gn, stats.gennorm(1.5).cdf).pvalue > 1e-4
    radius2 = np.linalg.norm(ball2, axis=-1)
    radius1 = np.abs(ball1).sum(-1)
    assert radius2.max() < 1 and radius1.max() < 1
    assert stats.kstest(radius2 ** 3, "uniform").pvalue > 1e-4
    assert stats.kstest(radius1 ** 2, "uniform").pvalue > 1e-4
    directions = ball2 / radius2[:, None]  # uniform on the sphere: mean zero
    np.testing.assert_allclose(directions.mean(0), 0, atol=0.1)


def test_shapes_and_dtypes_are_jaxs(jr):  # type: ignore[no-untyped-def]
    jax = pytest.importorskip("jax")
    k, kj = tr.PRNGKey(0), jax.random.PRNGKey(0)
    cases = [
        lambda r, k: r.poisson(k, 3.0),
        lambda r, k: r.poisson(k, np.ones((2, 1), F32), (3, 2, 4), np.uint8),
        lambda r, k: r.binomial(k, 5, np.float16(0.3)),
        lambda r, k: r.binomial(k, np.ones(3, F32) * 4, 0.5, dtype=np.float16),
        lambda r, k: r.multinomial(k, 5, PROBS, dtype=np.int32),
        lambda r, k: r.multinomial(k, np.array([5.0, 6.0]), PROBS, shape=(3, 2, 3)),
        lambda r, k: r.f(k, np.ones(3, F32), 2.0),
        lambda r, k: r.generalized_normal(k, 2.0, (2, 1)),
        lambda r, k: r.ball(k, 4, 3.0, (2,)),
        lambda r, k: r.categorical(k, LOGITS, shape=(4, 2), replace=False),
    ]
    for i, case in enumerate(cases):
        want = jax.eval_shape(lambda: case(jax.random, kj))
        got = case(tr, k)
        assert (got.shape, got.dtype) == (want.shape, want.dtype), i


def test_x64_dtypes(monkeypatch):
    """With x64 the counts are int64 and the float samplers float64, as in JAX."""
    monkeypatch.setattr(tp.config, "enable_x64", True)
    k = tr.PRNGKey(0)
    assert tr.poisson(k, 3.0, (3,)).dtype == np.int64
    for sample in (tr.binomial(k, 5, 0.5), tr.multinomial(k, 5, np.array([0.5, 0.5])),
                   tr.f(k, 2.0, 3.0), tr.ball(k, 2), tr.generalized_normal(k, 2.0)):
        assert sample.dtype == np.float64
    np.testing.assert_array_equal(tr.poisson(k, 30.0, (5,)), [22, 27, 23, 36, 25])  # JAX's


def _draw(k):  # type: ignore[no-untyped-def]
    return (tr.poisson(k, 4.0, (2,)), tr.poisson(k, 40.0, (2,)), tr.binomial(k, 20.0, 0.3, (2,)),
            tr.binomial(k, 300.0, 0.6, (2,)), tr.multinomial(k, 10.0, PROBS), tr.f(k, 3.0, 4.0),
            tr.ball(k, 2), tr.generalized_normal(k, 3.0))


def test_vmap_over_keys_matches_a_loop():
    keys = tr.split(tr.PRNGKey(3), 3)
    looped = [_draw(k) for k in keys]
    for i, part in enumerate(tp.vmap(_draw)(keys)):
        np.testing.assert_allclose(part, np.stack([np.asarray(x[i]) for x in looped]),
                                   rtol=1e-6, err_msg=str(i))


def test_jit_of_vmap_over_keys_and_rates():
    keys = tr.split(tr.PRNGKey(4), 3)
    lam = np.array([1.0, 5.0, 25.0], F32)
    n = np.array([3.0, 40.0, 400.0], F32)

    def draw(k, lam, n):  # type: ignore[no-untyped-def]
        return tr.poisson(k, lam, (4,)), tr.binomial(k, n, 0.4, (4,))

    want = [draw(k, a, b) for k, a, b in zip(keys, lam, n)]
    for out in (tp.vmap(draw)(keys, lam, n), tp.jit(tp.vmap(draw))(keys, lam, n)):
        for i, part in enumerate(out):
            np.testing.assert_array_equal(part, np.stack([np.asarray(w[i]) for w in want]))


def test_bad_arguments():
    k = tr.PRNGKey(0)
    for bad_key in (0, np.zeros(3, np.uint32), np.zeros(2, F32)):
        for sampler in (lambda key: tr.poisson(key, 2.0), lambda key: tr.binomial(key, 3, 0.5),
                        lambda key: tr.f(key, 2.0, 3.0), lambda key: tr.ball(key, 2)):
            with pytest.raises(TypeError, match="a PRNG key is a uint32 array of shape"):
                sampler(bad_key)
    with pytest.raises(DTypeError, match="integer dtype"):
        tr.poisson(k, 2.0, dtype=np.float32)
    for sampler in (lambda: tr.binomial(k, 5, 0.5, dtype=np.int32),
                    lambda: tr.f(k, 2.0, 3.0, dtype=np.int32),
                    lambda: tr.generalized_normal(k, 2.0, (3,), np.int32)):
        with pytest.raises(DTypeError, match="float dtype"):
            sampler()
    with pytest.raises(ShapeError):
        tr.poisson(k, np.ones(3, F32), (2,))
    with pytest.raises(ShapeError, match="does not broadcast"):
        tr.binomial(k, np.ones(3, F32), 0.5, (2,))
    with pytest.raises(TypeError):
        tr.ball(k, 2.5)
    with pytest.raises(ValueError, match="at least one axis"):
        tr.multinomial(k, 5.0, 0.5)
    with pytest.raises(ValueError, match="cannot exceed number of categories"):
        tr.categorical(k, np.zeros(3, F32), shape=(4,), replace=False)
    with pytest.raises(ValueError, match="valid mode"):
        tr.gumbel(k, mode="bad")
    with pytest.raises(NotImplementedError, match="highest"):
        tr.gumbel(k, mode="highest")
    with pytest.raises(ValueError, match="expected 'high' or 'low'"):
        tr.bernoulli(k, mode="x")
    with pytest.raises(ShapeError, match="static"):
        tp.jit(lambda key, n: tr.poisson(key, 2.0, (n,)))(k, 3)


def test_names_are_jaxs(jr):  # type: ignore[no-untyped-def]
    """Every public sampler of jax.random is here, with JAX's parameter names."""
    import inspect
    skip = {"random_gamma_p"}  # (a JAX primitive, not a function)
    for name in dir(jr):
        if name.startswith("_") or name in skip or not callable(getattr(jr, name)):
            continue
        assert hasattr(tr, name), name
        theirs = [p for p in inspect.signature(getattr(jr, name)).parameters
                  if p != "out_sharding"]
        ours = list(inspect.signature(getattr(tr, name)).parameters)
        assert ours == theirs, name

