"""Typed PRNG keys (``random.key``): JAX's shapes, dtype, data and printing; every sampler
takes them as it takes raw ``uint32[2]`` keys, with the same values; they stay typed
through jit, scan, fori_loop and cond; vmap maps a batch of them (keys made inside a
vmapped function are raw); key_data/wrap_key_data/key_impl/key_dtype/clone; clear errors."""

from __future__ import annotations

import numpy as np
import pytest

import transpiler as tp
import transpiler.numpy as jnp
from transpiler import lax
from transpiler import random as tr
from transpiler.errors import DTypeError

F32 = np.float32
MEAN = np.array([1.0, -2.0], F32)
COV = np.array([[2.0, 0.3], [0.3, 1.0]], F32)

# Every sampler, small: the same values from a typed key as from the raw key of its data.
SAMPLERS = {
    "bits": lambda k: tr.bits(k, (3,)),
    "uniform": lambda k: tr.uniform(k, (3,)),
    "normal": lambda k: tr.normal(k, (3,)),
    "truncated_normal": lambda k: tr.truncated_normal(k, -1.0, 1.0, (3,)),
    "gumbel": lambda k: tr.gumbel(k, (3,)),
    "randint": lambda k: tr.randint(k, (3,), 0, 10),
    "bernoulli": lambda k: tr.bernoulli(k, 0.3, (3,)),
    "categorical": lambda k: tr.categorical(k, jnp.zeros(4)),
    "exponential": lambda k: tr.exponential(k, (3,)),
    "laplace": lambda k: tr.laplace(k, (3,)),
    "logistic": lambda k: tr.logistic(k, (3,)),
    "cauchy": lambda k: tr.cauchy(k, (3,)),
    "pareto": lambda k: tr.pareto(k, 2.0, (3,)),
    "weibull_min": lambda k: tr.weibull_min(k, 1.0, 2.0, (3,)),
    "rayleigh": lambda k: tr.rayleigh(k, 1.0, (3,)),
    "triangular": lambda k: tr.triangular(k, 0.0, 0.5, 1.0, (3,)),
    "geometric": lambda k: tr.geometric(k, 0.3, (3,)),
    "lognormal": lambda k: tr.lognormal(k, 0.5, (3,)),
    "wald": lambda k: tr.wald(k, 1.0, (3,)),
    "maxwell": lambda k: tr.maxwell(k, (3,)),
    "rademacher": lambda k: tr.rademacher(k, (3,)),
    "double_sided_maxwell": lambda k: tr.double_sided_maxwell(k, 0.0, 1.0, (3,)),
    "multivariate_normal": lambda k: tr.multivariate_normal(k, MEAN, COV),
    "orthogonal": lambda k: tr.orthogonal(k, 2),
    "gamma": lambda k: tr.gamma(k, 2.0, (2,)),
    "loggamma": lambda k: tr.loggamma(k, 0.5, (2,)),
    "beta": lambda k: tr.beta(k, 2.0, 3.0),
    "dirichlet": lambda k: tr.dirichlet(k, np.array([1.0, 2.0], F32)),
    "chisquare": lambda k: tr.chisquare(k, 3.0),
    "t": lambda k: tr.t(k, 4.0),
    "f": lambda k: tr.f(k, 3.0, 4.0),
    "generalized_normal": lambda k: tr.generalized_normal(k, 1.5),
    "ball": lambda k: tr.ball(k, 2),
    "poisson": lambda k: tr.poisson(k, 3.0, (3,)),
    "binomial": lambda k: tr.binomial(k, 10.0, 0.4, (3,)),
    "multinomial": lambda k: tr.multinomial(k, 5.0, np.array([0.5, 0.5], F32)),
    "permutation": lambda k: tr.permutation(k, 5),
    "choice": lambda k: tr.choice(k, 5, (2,)),
}


@pytest.fixture(scope="module")
def jax():  # type: ignore[no-untyped-def]
    return pytest.importorskip("jax")


def data(keys) -> np.ndarray:  # type: ignore[no-untyped-def]
    return np.asarray(tr.key_data(keys))


def test_typed_keys_are_jaxs(jax):  # type: ignore[no-untyped-def]
    jr = jax.random
    for seed in [0, 1, 42, -1, 2**31, np.int32(7)]:
        ours, theirs = tr.key(seed), jr.key(seed)
        assert ours.shape == theirs.shape == () and ours.ndim == 0 and ours.size == 1
        assert str(ours.dtype) == str(theirs.dtype) == "key<fry>"
        np.testing.assert_array_equal(data(ours), jr.key_data(theirs))
        np.testing.assert_array_equal(data(ours), tr.PRNGKey(seed))
    k, kj = tr.key(5), jr.key(5)
    assert repr(k) == repr(kj) and str(tr.split(k, 3)) == str(jr.split(kj, 3))
    for num in [2, 3, (2, 3)]:
        keys, want = tr.split(k, num), jr.split(kj, num)
        assert keys.shape == want.shape and isinstance(keys, tr.KeyArray)
        np.testing.assert_array_equal(data(keys), jr.key_data(want))
    folded = tr.fold_in(k, 9)
    assert isinstance(folded, tr.KeyArray)
    np.testing.assert_array_equal(data(folded), jr.key_data(jr.fold_in(kj, 9)))
    assert tr.key_impl(k) == jr.key_impl(kj) == tr.key_impl(tr.PRNGKey(0)) == "threefry2x32"
    assert k.dtype == tr.key_dtype() and str(tr.key_dtype("threefry2x32")) == "key<fry>"
    assert tr.key(0, impl="threefry2x32").dtype == tr.key(0, dtype=tr.key_dtype()).dtype


def test_typed_key_arrays_index_like_jaxs(jax):  # type: ignore[no-untyped-def]
    jr = jax.random
    keys, want = tr.split(tr.key(1), (2, 3)), jr.split(jr.key(1), (2, 3))
    views = [lambda a: a[1], lambda a: a[0, 2], lambda a: a[:, 1:], lambda a: a[..., 0],
             lambda a: a.reshape(3, 2), lambda a: a.reshape(-1), lambda a: a.ravel(),
             lambda a: a.T, lambda a: a.transpose(1, 0), lambda a: a.swapaxes(0, 1),
             lambda a: a[None].squeeze(0), lambda a: a[np.array([1, 0])]]
    for i, view in enumerate(views):
        ours, theirs = view(keys), view(want)
        assert ours.shape == theirs.shape, i
        np.testing.assert_array_equal(data(ours), jr.key_data(theirs), err_msg=str(i))
    rows = list(keys)
    assert len(rows) == len(keys) == 2 and rows[1].shape == (3,)
    np.testing.assert_array_equal(data(rows[1]), jr.key_data(want[1]))
    np.testing.assert_array_equal(keys == keys, np.ones((2, 3), bool))
    assert not bool(keys[0, 0] == keys[0, 1]) and bool(keys[0, 0] != keys[0, 1])
    with pytest.raises(TypeError, match="unhashable"):
        hash(keys)
    with pytest.raises(IndexError):
        keys[0, 0, 0]


def test_key_data_and_wrap_key_data_round_trip(jax):  # type: ignore[no-untyped-def]
    raw = tr.split(tr.PRNGKey(4), 3)
    keys = tr.wrap_key_data(raw)
    assert isinstance(keys, tr.KeyArray) and keys.shape == (3,)
    np.testing.assert_array_equal(data(keys), raw)
    np.testing.assert_array_equal(data(raw), raw)  # a raw key array is its own data
    np.testing.assert_array_equal(tr.wrap_key_data(np.asarray(raw), impl="threefry2x32") == keys,
                                  [True] * 3)
    assert tr.clone(keys) is keys
    np.testing.assert_array_equal(np.asarray(keys), raw)  # (an extension: JAX refuses)
    want = jax.random.wrap_key_data(np.asarray(raw))
    np.testing.assert_array_equal(np.asarray(tr.normal(keys[2])),
                                  np.asarray(jax.random.normal(want[2])))


@pytest.mark.parametrize("name", list(SAMPLERS))
def test_every_sampler_takes_typed_keys(name):
    draw = SAMPLERS[name]
    typed, raw = draw(tr.key(17)), draw(tr.PRNGKey(17))
    assert typed.dtype == raw.dtype and typed.shape == raw.shape
    np.testing.assert_array_equal(np.asarray(typed), np.asarray(raw))


def test_samplers_with_typed_keys_give_jaxs_values(jax):  # type: ignore[no-untyped-def]
    jr = jax.random
    k, kj = tr.key(3), jr.key(3)
    np.testing.assert_array_equal(tr.uniform(k, (4,)), jr.uniform(kj, (4,)))
    np.testing.assert_array_equal(tr.randint(tr.split(k)[1], (4,), 0, 9),
                                  jr.randint(jr.split(kj)[1], (4,), 0, 9))
    np.testing.assert_array_equal(tr.poisson(tr.fold_in(k, 2), 5.0, (6,)),
                                  jr.poisson(jr.fold_in(kj, 2), 5.0, (6,)))
    np.testing.assert_allclose(tr.normal(k, (4,)), jr.normal(kj, (4,)), rtol=1e-6, atol=1e-6)


def _program(key):  # type: ignore[no-untyped-def]
    """A JAX-style program: split, unpack, fold_in, sample."""
    key, sub = tr.split(key)
    k1, k2 = tr.split(sub)
    return key, tr.normal(k1, (3,)) + tr.uniform(tr.fold_in(k2, 4), (3,))


def test_typed_keys_under_jit():
    key = tr.key(0)
    out_key, sample = tp.jit(_program)(key)
    eager_key, eager_sample = _program(key)
    assert isinstance(out_key, tr.KeyArray) and out_key.shape == ()
    np.testing.assert_array_equal(data(out_key), data(eager_key))
    np.testing.assert_allclose(sample, eager_sample, rtol=1e-6, atol=1e-6)
    keys = tp.jit(lambda k: tr.split(k, 3))(key)
    assert isinstance(keys, tr.KeyArray) and keys.shape == (3,)
    np.testing.assert_array_equal(data(keys), data(tr.split(key, 3)))
    made = tp.jit(lambda seed: tr.key(seed))(7)
    assert isinstance(made, tr.KeyArray)
    np.testing.assert_array_equal(data(made), [0, 7])
    np.testing.assert_allclose(tp.jit(lambda ks, i: tr.normal(ks[i]))(keys, 2),
                               tr.normal(keys[2]), rtol=1e-6)


def test_typed_keys_through_loops_and_branches():
    """scan over a batch of keys, a key carried by fori_loop, a key through cond: eagerly
    and under jit, typed where JAX's are."""
    key = tr.key(2)
    keys = tr.split(key, 3)

    def loops(key, keys):  # type: ignore[no-untyped-def]
        total, draws = lax.scan(lambda c, k: (c + tr.normal(k), tr.uniform(k)), 0.0, keys)

        def body(i, carry):  # type: ignore[no-untyped-def]
            k, acc = carry
            k, sub = tr.split(k)
            return k, acc + tr.normal(sub)

        carried, acc = lax.fori_loop(0, 3, body, (key, 0.0))
        chosen = lax.cond(total > 0, lambda k: tr.split(k)[0], lambda k: k, key)
        return total, draws, carried, acc, chosen

    eager, staged = loops(key, keys), tp.jit(loops)(key, keys)
    for a, b in zip(eager, staged):
        if isinstance(a, tr.KeyArray):
            assert isinstance(b, tr.KeyArray)
            a, b = data(a), data(b)
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-6, atol=1e-6)


def test_vmap_over_typed_keys(jax):  # type: ignore[no-untyped-def]
    jr = jax.random
    keys, keys_j = tr.split(tr.key(0), 4), jr.split(jr.key(0), 4)
    out = tp.vmap(lambda k: tr.normal(k, (3,)))(keys)
    want = jax.vmap(lambda k: jr.normal(k, (3,)))(keys_j)
    np.testing.assert_allclose(out, want, rtol=1e-6, atol=1e-6)
    looped = [_program(k) for k in keys]
    for fn in (tp.vmap(_program), tp.jit(tp.vmap(_program))):
        new_keys, samples = fn(keys)
        np.testing.assert_allclose(samples, np.stack([np.asarray(s) for _, s in looped]),
                                   rtol=1e-6, atol=1e-6)
        # keys made while vmap runs are raw: their data, batched
        np.testing.assert_array_equal(np.asarray(new_keys), np.stack([data(k) for k, _ in looped]))
    split = tp.vmap(lambda k: tr.split(k))(keys)
    np.testing.assert_array_equal(split, jr.key_data(jax.vmap(lambda k: jr.split(k))(keys_j)))
    np.testing.assert_array_equal(tp.vmap(tr.key_data)(keys), data(keys))
    key = tr.key(1)
    folded = tp.vmap(lambda i: tr.uniform(tr.fold_in(key, i)))(np.arange(3))
    want = jax.vmap(lambda i: jr.uniform(jr.fold_in(jr.key(1), i)))(np.arange(3))
    np.testing.assert_array_equal(folded, want)
    seeded = tp.vmap(lambda s: tr.uniform(tr.key(s)))(np.arange(3))
    np.testing.assert_array_equal(seeded, jax.vmap(lambda s: jr.uniform(jr.key(s)))(np.arange(3)))
    wrapped = tp.vmap(lambda d: tr.normal(tr.wrap_key_data(d)))(data(keys))
    np.testing.assert_allclose(wrapped, tp.vmap(tr.normal)(keys), rtol=1e-6)


def test_gradients_with_a_typed_key_argument():
    w = np.arange(1.0, 4.0, dtype=F32)

    def loss(w, key):  # type: ignore[no-untyped-def]
        return jnp.sum(w * tr.normal(key, w.shape))

    key = tr.key(0)
    want = np.asarray(tr.normal(key, (3,)))
    np.testing.assert_allclose(tp.grad(loss)(w, key), want, rtol=1e-6)
    np.testing.assert_allclose(tp.jit(tp.grad(loss))(w, key), want, rtol=1e-6)
    keys = tr.split(key, 2)
    np.testing.assert_allclose(tp.vmap(tp.grad(loss), in_axes=(None, 0))(w, keys),
                               np.stack([np.asarray(tr.normal(k, (3,))) for k in keys]),
                               rtol=1e-6)


def test_typed_keys_are_pytrees():
    key = tr.key(3)
    leaves, tree = tp.tree_util.tree_flatten(key)
    assert len(leaves) == 1
    np.testing.assert_array_equal(leaves[0], [0, 3])
    rebuilt = tp.tree_util.tree_unflatten(tree, leaves)
    assert isinstance(rebuilt, tr.KeyArray) and bool(rebuilt == key)


def test_the_original_threefry_scheme_with_typed_keys(monkeypatch):
    monkeypatch.setattr(tp.config, "threefry_partitionable", False)
    key = tr.key(9)
    np.testing.assert_array_equal(data(tr.split(key, 3)), tr.split(tr.PRNGKey(9), 3))
    np.testing.assert_array_equal(tr.normal(key, (2,)), tr.normal(tr.PRNGKey(9), (2,)))


def test_bad_keys_and_arguments():
    keys = tr.split(tr.key(0), 4)
    with pytest.raises(ValueError, match=r"normal accepts a single key, but was given a key "
                                         r"array of shape \(4,\)"):
        tr.normal(keys)
    with pytest.raises(ValueError, match="split accepts a single key"):
        tr.split(keys)
    for bad in (0, 1.5, np.zeros(2, F32), np.zeros((2, 2), np.uint32), [0, 0], None):
        with pytest.raises(TypeError, match="a PRNG key is a uint32 array of shape"):
            tr.uniform(bad)  # type: ignore[arg-type]
    with pytest.raises(DTypeError) as info:
        tr.poisson(np.zeros(3, np.uint32), 1.0)
    assert "test_random_keys.py" in str(info.value)  # located at the caller's line
    with pytest.raises(TypeError, match="scalar seed, but was given a PRNG key"):
        tr.key(tr.key(0))
    with pytest.raises(TypeError, match="scalar seed"):
        tr.key(np.arange(2))
    with pytest.raises(NotImplementedError, match="threefry2x32"):
        tr.key(0, impl="rbg")
    with pytest.raises(ValueError, match="unrecognized PRNG implementation"):
        tr.wrap_key_data(np.zeros(2, np.uint32), impl="nope")
    with pytest.raises(ValueError, match="both `impl` and `dtype`"):
        tr.key(0, impl="threefry2x32", dtype=tr.key_dtype())
    for bad_data in (np.zeros(3, np.uint32), np.zeros(2, np.int32), 5, keys):
        with pytest.raises(TypeError):
            tr.wrap_key_data(bad_data)
    with pytest.raises(TypeError, match="uint32 key data"):
        tr.key_data(np.zeros(2, F32))
