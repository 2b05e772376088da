"""transpiler.random: bit-for-bit equality with jax.random (both threefry schemes), eager
and jit agreement, and errors for bad keys and traced shapes."""

from __future__ import annotations

import numpy as np
import pytest

import transpiler as tj
from transpiler import random as tr
from transpiler.config import config
from transpiler.errors import DTypeError, ShapeError

SEEDS = [0, 1, 42, -1, 2**31, 123456789]
SHAPES = [(), (5,), (3, 7), (2, 4)]  # sizes 1, odd and even


@pytest.fixture(params=[True, False], ids=["partitionable", "original"])
def scheme(request: pytest.FixtureRequest):  # type: ignore[no-untyped-def]
    """Run under both threefry schemes, in transpiler and (when installed) in JAX."""
    jax = pytest.importorskip("jax")
    old_ours = getattr(config, "threefry_partitionable", True)
    old_jax = jax.config.jax_threefry_partitionable
    config.threefry_partitionable = request.param  # type: ignore[attr-defined]
    jax.config.update("jax_threefry_partitionable", request.param)
    yield jax
    config.threefry_partitionable = old_ours  # type: ignore[attr-defined]
    jax.config.update("jax_threefry_partitionable", old_jax)


def same(ours, theirs) -> None:  # type: ignore[no-untyped-def]
    a, b = np.asarray(ours), np.asarray(theirs)
    assert a.dtype == b.dtype and a.shape == b.shape, (a.dtype, a.shape, b.dtype, b.shape)
    np.testing.assert_array_equal(a, b)


def test_keys_match_jax() -> None:
    jax = pytest.importorskip("jax")
    for seed in SEEDS:
        same(tr.PRNGKey(seed), jax.random.PRNGKey(seed))
        same(tr.key(seed), jax.random.PRNGKey(seed))
        same(tr.PRNGKey(np.int32(seed if seed < 2**31 else -(2**31))),
             jax.random.PRNGKey(np.int32(seed if seed < 2**31 else -(2**31))))
    assert np.asarray(tr.PRNGKey(42)).tolist() == [0, 42]


def jax_reference(jax, key, shape):  # type: ignore[no-untyped-def]
    """Everything sampled with `shape`, as ONE jitted JAX call (JAX compiles per shape)."""
    def sample(k):  # type: ignore[no-untyped-def]
        jr = jax.random
        return {"bits": jr.bits(k, shape), "bits8": jr.bits(k, shape, np.uint8),
                "bits16": jr.bits(k, shape, np.uint16), "uniform": jr.uniform(k, shape),
                "randint": jr.randint(k, shape, -5, 17), "bernoulli": jr.bernoulli(k, 0.3, shape),
                "normal": jr.normal(k, shape), "gumbel": jr.gumbel(k, shape)}
    return jax.jit(sample)(key)


def ours_for(key, shape):  # type: ignore[no-untyped-def]
    return {"bits": tr.bits(key, shape), "bits8": tr.bits(key, shape, np.uint8),
            "bits16": tr.bits(key, shape, np.uint16), "uniform": tr.uniform(key, shape),
            "randint": tr.randint(key, shape, -5, 17), "bernoulli": tr.bernoulli(key, 0.3, shape),
            "normal": tr.normal(key, shape), "gumbel": tr.gumbel(key, shape)}


def test_split_fold_in_match_jax(scheme) -> None:  # type: ignore[no-untyped-def]
    jax = scheme
    for seed in [0, 42, -1]:
        ours, theirs = tr.PRNGKey(seed), jax.random.PRNGKey(seed)
        for num in [2, 3, (2, 3)]:
            same(tr.split(ours, num), jax.random.split(theirs, num))
        for data in [0, 7, 2**31 + 5, np.int32(-3)]:
            same(tr.fold_in(ours, data), jax.random.fold_in(theirs, data))


def test_samplers_match_jax(scheme) -> None:  # type: ignore[no-untyped-def]
    """Integer samplers and uniform are bit-exact; normal and gumbel go through log and
    erf_inv, whose float32 implementations differ from XLA's by an ulp or so."""
    jax = scheme
    for shape in SHAPES:
        for seed in [0, 42]:
            theirs = jax_reference(jax, jax.random.PRNGKey(seed), shape)
            ours = ours_for(tr.PRNGKey(seed), shape)
            for name in ["bits", "bits8", "bits16", "uniform", "randint", "bernoulli"]:
                same(ours[name], theirs[name])
            for name in ["normal", "gumbel"]:
                np.testing.assert_allclose(ours[name], theirs[name], rtol=1e-6, atol=1e-6)


def test_sampler_options_match_jax(scheme) -> None:  # type: ignore[no-untyped-def]
    jax = scheme
    ours, theirs = tr.PRNGKey(42), jax.random.PRNGKey(42)
    # floats * (max - min) + min: XLA fuses it into an FMA (one rounding), NumPy rounds
    # twice, so a scaled range may differ by one ulp.
    np.testing.assert_allclose(tr.uniform(ours, (9,), minval=-2.0, maxval=3.0),
                               jax.random.uniform(theirs, (9,), minval=-2.0, maxval=3.0),
                               rtol=2e-7, atol=2.5e-7)
    for dtype in [np.float16, jax.numpy.bfloat16]:
        same(tr.uniform(ours, (7,), dtype), jax.random.uniform(theirs, (7,), dtype))
    for dtype in [np.int8, np.uint8, np.int16, np.uint32]:
        same(tr.randint(ours, (9,), 0, 200, dtype),
             jax.random.randint(theirs, (9,), 0, 200, dtype))
    same(tr.randint(ours, (6,), 3, 3), jax.random.randint(theirs, (6,), 3, 3))
    same(tr.randint(ours, (2, 3), np.array([0, 10, 100]), 1000),
         jax.random.randint(theirs, (2, 3), np.array([0, 10, 100]), 1000))
    p = np.array([0.0, 0.2, 0.5, 0.9, 1.0], np.float32)
    same(tr.bernoulli(ours, p), jax.random.bernoulli(theirs, p))
    lo, hi = np.float32(-1.5), np.float32(0.5)
    np.testing.assert_allclose(tr.truncated_normal(ours, lo, hi, (50,)),
                               jax.random.truncated_normal(theirs, lo, hi, (50,)),
                               rtol=1e-5, atol=1e-5)
    logits = np.log(np.array([[0.1, 0.6, 0.3], [0.5, 0.25, 0.25]], np.float32))
    same(tr.categorical(ours, logits), jax.random.categorical(theirs, logits))
    same(tr.categorical(ours, logits, axis=0, shape=(4, 3)),
         jax.random.categorical(theirs, logits, axis=0, shape=(4, 3)))


def test_distribution_sanity() -> None:
    key = tr.PRNGKey(0)
    u = np.asarray(tr.uniform(key, (10000,)))
    assert u.min() >= 0.0 and u.max() < 1.0 and abs(u.mean() - 0.5) < 0.02
    n = np.asarray(tr.normal(key, (10000,)))
    assert abs(n.mean()) < 0.05 and abs(n.std() - 1.0) < 0.05
    r = np.asarray(tr.randint(key, (10000,), 0, 10))
    assert r.min() == 0 and r.max() == 9
    t = np.asarray(tr.truncated_normal(key, -1.0, 2.0, (1000,)))
    assert t.min() > -1.0 and t.max() < 2.0


def sample_all(key):  # type: ignore[no-untyped-def]
    k2 = tr.fold_in(key, 3)
    return {
        "split": tr.split(key, (2, 3)), "fold_in": k2, "bits": tr.bits(key, (5,)),
        "bits8": tr.bits(key, (7,), np.uint8), "uniform": tr.uniform(k2, (3, 5)),
        "uniform_range": tr.uniform(key, (4,), minval=-2.0, maxval=3.0),
        "normal": tr.normal(key, (9,)), "randint": tr.randint(key, (11,), 0, 10),
        "bernoulli": tr.bernoulli(key, 0.5, (6,)), "gumbel": tr.gumbel(key, (5,)),
        "seed_key": tr.PRNGKey(np.int32(5)),
    }


EXACT = ["split", "fold_in", "bits", "bits8", "uniform", "randint", "bernoulli", "seed_key"]


def test_jit_matches_eager() -> None:
    """One grouped jit: integer outputs are identical bits; float samplers that go through
    transcendentals (log, erf_inv) or a fused multiply-add agree to an ulp or two."""
    key = tr.PRNGKey(7)
    staged, eager = tj.jit(sample_all)(key), sample_all(key)
    for name, value in eager.items():
        a, b = np.asarray(staged[name]), np.asarray(value)
        assert a.dtype == b.dtype and a.shape == b.shape, name
        if name in EXACT:
            np.testing.assert_array_equal(a, b, err_msg=name)
        else:
            np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6, err_msg=name)


def test_jit_static_shape_argument() -> None:
    key = tr.PRNGKey(3)
    normal = tj.jit(tr.normal, static_argnums=1)
    np.testing.assert_allclose(normal(key, (3,)), tr.normal(key, (3,)), rtol=1e-6, atol=1e-6)
    with pytest.raises(ShapeError, match="static"):
        tj.jit(lambda k, n: tr.uniform(k, (n,)))(key, 3)


def test_bad_keys() -> None:
    for bad in [np.zeros((3,), np.uint32), np.zeros((2,), np.int32), 0,
                np.zeros((2, 2), np.uint32)]:
        with pytest.raises(TypeError, match=r"a PRNG key is a uint32 array of shape \(2,\)"):
            tr.uniform(bad, (2,))  # type: ignore[arg-type]
    with pytest.raises(DTypeError) as info:
        tr.split(np.zeros((2,), np.float32))
    assert "test_random.py" in str(info.value)
    with pytest.raises(TypeError, match="float dtype"):
        tr.uniform(tr.PRNGKey(0), (2,), np.int32)
    with pytest.raises(TypeError, match="scalar"):
        tr.PRNGKey(np.array([1, 2]))
    with pytest.raises(ShapeError, match="broadcast"):
        tr.uniform(tr.PRNGKey(0), (3,), minval=np.zeros(4, np.float32))
