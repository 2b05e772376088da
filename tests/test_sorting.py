"""Sorting, searching, order statistics and counting (transpiler/numpy/sorting.py,
quantiles.py, counting.py; lax.sort / sort_key_val / top_k): values and dtypes against
JAX 0.10.2 (which they follow where NumPy differs), eagerly and under jit; gradients
against JAX and float64 finite differences; batching against a Python loop; bad input."""

from __future__ import annotations

import numpy as np
import pytest

import transpiler as tp
import transpiler.lax as lax
import transpiler.numpy as jnp

jax = pytest.importorskip("jax")
jjnp = jax.numpy

rng = np.random.default_rng(7)
X = rng.normal(size=(4, 150)).astype(np.float32)
X[0, :60] = 0.5                      # ties
X[1, 7], X[1, 90] = np.nan, np.nan   # NaN sorts last
X[2, 3], X[2, 4] = -0.0, 0.0         # equal zeros keep their order
SMALL = rng.normal(size=(4, 6, 5)).astype(np.float32)
SMALL_NAN = SMALL.copy()
SMALL_NAN[0, 1, 2] = np.nan
SMALL_NAN[1, :, 3] = np.nan
INTS = rng.integers(0, 6, size=(5, 4)).astype(np.int32)
KEYS = rng.integers(0, 4, size=(4, 150)).astype(np.int32)
EDGES = np.array([-1.0, 0.0, 0.5, 2.0], np.float32)


def _same(got, want, name, rtol=0.0):
    got = tuple(got) if isinstance(got, (tuple, list)) else (got,)
    want = tuple(want) if isinstance(want, (tuple, list)) else (want,)
    assert len(got) == len(want), name
    for g, w in zip(got, want):
        g, w = np.asarray(g), np.asarray(w)
        assert (g.dtype, g.shape) == (w.dtype, w.shape), name
        if rtol:
            np.testing.assert_allclose(g, w, rtol=rtol, atol=rtol, err_msg=name)
        else:
            np.testing.assert_array_equal(g, w, err_msg=name)


SORTING = [  # (name, ours, JAX's, argument, rtol)
    ("sort", lambda m, a: m.sort(a), X),
    ("sort axis 0 descending", lambda m, a: m.sort(a, axis=0, descending=True), X),
    ("sort flattened", lambda m, a: m.sort(a, axis=None), SMALL),
    ("argsort", lambda m, a: m.argsort(a), X),
    ("argsort descending", lambda m, a: m.argsort(a, descending=True), X),
    ("argsort axis 1", lambda m, a: m.argsort(a, axis=1), SMALL),
    ("lexsort", lambda m, a: m.lexsort([a, KEYS]), X),
    ("partition", lambda m, a: m.partition(a, 3), SMALL),
    ("partition axis 0", lambda m, a: m.partition(a, -2, axis=0), SMALL),
    ("argpartition", lambda m, a: m.argpartition(a, 3), SMALL),
    ("argpartition long", lambda m, a: m.argpartition(m.nan_to_num(a), 100), X),
    ("searchsorted left", lambda m, a: m.searchsorted(m.sort(a[2]), a), X),
    ("searchsorted right", lambda m, a: m.searchsorted(m.sort(a[0]), a, side="right"), X),
    ("searchsorted sorter", lambda m, a: m.searchsorted(a[3], a, sorter=m.argsort(a[3])), X),
    ("digitize", lambda m, a: m.digitize(a, EDGES), SMALL),
    ("digitize decreasing right", lambda m, a: m.digitize(a, EDGES[::-1], right=True), SMALL),
]


@pytest.mark.parametrize("name,fn,arg", SORTING, ids=[c[0] for c in SORTING])
def test_sorting_matches_jax(name, fn, arg):
    want = fn(jjnp, arg)
    _same(fn(jnp, arg), want, name)
    _same(tp.jit(lambda a: fn(jnp, a))(arg), want, name + " under jit")


LAX = [
    ("lax.sort", lambda L, a: L.sort(a)),
    ("lax.sort several", lambda L, a: L.sort((KEYS, a, a * 2), num_keys=2, dimension=0)),
    ("sort_key_val", lambda L, a: L.sort_key_val(KEYS, a)),
    ("top_k", lambda L, a: L.top_k(a, 5)),
]


@pytest.mark.parametrize("name,fn", LAX, ids=[c[0] for c in LAX])
def test_lax_sorting_matches_jax(name, fn):
    want = fn(jax.lax, X)
    _same(fn(lax, X), want, name)
    _same(tp.jit(lambda a: fn(lax, a))(X), want, name + " under jit")


METHODS = ("linear", "lower", "higher", "midpoint", "nearest", "inverted_cdf")
QUANTILES = [
    *[(f"quantile {m}", lambda n, a, m=m: n.quantile(a, 0.3, axis=1, method=m), SMALL)
      for m in METHODS],
    *[(f"quantiles {m} keepdims", lambda n, a, m=m: n.quantile(
        a, n.array([0.1, 0.5, 0.95]), axis=(0, 2), method=m, keepdims=True), SMALL)
      for m in METHODS],
    *[(f"nanquantile {m}", lambda n, a, m=m: n.nanquantile(a, n.array([0.25, 0.75]), axis=1,
                                                           method=m), SMALL_NAN)
      for m in METHODS],
    ("quantile of NaN is NaN", lambda n, a: n.quantile(a, 0.5, axis=2), SMALL_NAN),
    ("median", lambda n, a: n.median(a), SMALL),
    ("median keepdims", lambda n, a: n.median(a, axis=-1, keepdims=True), SMALL),
    ("median of ints", lambda n, a: n.median(a, axis=0), INTS),
    ("nanmedian", lambda n, a: n.nanmedian(a, axis=1), SMALL_NAN),
    ("percentile", lambda n, a: n.percentile(a, 90, axis=0), SMALL),
    ("nanpercentile", lambda n, a: n.nanpercentile(a, n.array([10.0, 50.0])), SMALL_NAN),
    ("weighted inverted_cdf", lambda n, a: n.quantile(a, 0.3, axis=1, method="inverted_cdf",
                                                      weights=abs(a) + 1), SMALL),
]


@pytest.mark.parametrize("name,fn,arg", QUANTILES, ids=[c[0] for c in QUANTILES])
def test_quantiles_match_jax(name, fn, arg):
    want = fn(jjnp, arg)
    _same(fn(jnp, arg), want, name, rtol=1e-5)
    _same(tp.jit(lambda a: fn(jnp, a))(arg), want, name + " under jit", rtol=1e-5)


def test_quantiles_match_numpy():
    """(``nearest`` is JAX's -- ties round down -- not NumPy's round-half-to-even.)"""
    for method in ("linear", "lower", "higher", "midpoint"):
        np.testing.assert_allclose(jnp.quantile(SMALL, [0.2, 0.7], axis=1, method=method),
                                   np.quantile(SMALL, [0.2, 0.7], axis=1, method=method),
                                   rtol=1e-5)
    np.testing.assert_allclose(jnp.nanmedian(SMALL_NAN, axis=2),
                               np.nanmedian(SMALL_NAN, axis=2), rtol=1e-6)


COUNTING_EAGER = [
    ("unique all", lambda n, a: n.unique(a, True, True, True), INTS),
    ("unique with NaN", lambda n, a: n.unique(a, True, True, True), SMALL_NAN[1, 0]),
    ("unique NaN distinct", lambda n, a: n.unique(a, equal_nan=False), SMALL_NAN[1, 0]),
    ("unique rows", lambda n, a: n.unique(a, True, True, True, axis=0), INTS[:, :2] % 2),
    ("bincount", lambda n, a: n.bincount(a.ravel()), INTS),
    ("bincount weights", lambda n, a: n.bincount(a.ravel(), weights=n.arange(20.0),
                                                 minlength=9), INTS),
    ("unique_counts", lambda n, a: tuple(n.unique_counts(a)), INTS),
    ("unique_all", lambda n, a: tuple(n.unique_all(a)), INTS),
]
COUNTING_JIT = [
    ("unique size", lambda n, a: n.unique(a, True, True, True, size=8), INTS),
    ("unique size fill", lambda n, a: n.unique(a, True, True, True, size=9, fill_value=-1), INTS),
    ("unique size too small", lambda n, a: n.unique(a, size=3), INTS),
    ("bincount length", lambda n, a: n.bincount(a.ravel() - 1, length=4), INTS),
    ("histogram", lambda n, a: n.histogram(a), X[3]),
    ("histogram range density", lambda n, a: n.histogram(a, bins=5, range=(-1, 1),
                                                         density=True), X[3]),
    ("histogram edges weights", lambda n, a: n.histogram(a, bins=n.array(EDGES),
                                                         weights=a * 2), X[3]),
    ("histogram of ints", lambda n, a: n.histogram(a, bins=4), INTS),
]


@pytest.mark.parametrize("name,fn,arg", COUNTING_EAGER + COUNTING_JIT,
                         ids=[c[0] for c in COUNTING_EAGER + COUNTING_JIT])
def test_counting_matches_jax(name, fn, arg):
    want = fn(jjnp, arg)
    _same(fn(jnp, arg), want, name, rtol=1e-6)
    if (name, fn, arg) in COUNTING_JIT:
        _same(tp.jit(lambda a: fn(jnp, a))(arg), want, name + " under jit", rtol=1e-6)


def _loss(a):
    return (jnp.sum(jnp.sort(a, axis=1) * jnp.arange(150.0)) + jnp.sum(lax.top_k(a, 3)[0] ** 2)
            + jnp.sum(jnp.partition(a, 2, axis=0)[:1] ** 2)
            + jnp.sum(lax.sort_key_val(KEYS, a)[1] * jnp.arange(150.0))
            + jnp.sum(jnp.quantile(a, jnp.array([0.3, 0.5]), axis=1)) + jnp.median(a)
            + jnp.sum(jnp.sort(a[:, :9], descending=True) * jnp.arange(9.0)))


def _jax_loss(a):
    return (jjnp.sum(jjnp.sort(a, axis=1) * jjnp.arange(150.0))
            + jjnp.sum(jax.lax.top_k(a, 3)[0] ** 2)
            + jjnp.sum(jjnp.partition(a, 2, axis=0)[:1] ** 2)
            + jjnp.sum(jax.lax.sort_key_val(KEYS, a)[1] * jjnp.arange(150.0))
            + jjnp.sum(jjnp.quantile(a, jjnp.array([0.3, 0.5]), axis=1)) + jjnp.median(a)
            + jjnp.sum(jjnp.sort(a[:, :9], descending=True) * jjnp.arange(9.0)))


def test_gradients_match_jax_ties_included():
    x = np.nan_to_num(X)
    want = jax.grad(_jax_loss)(x)
    np.testing.assert_allclose(tp.grad(_loss)(x), want, rtol=1e-5)
    np.testing.assert_allclose(tp.jit(tp.grad(_loss))(x), want, rtol=1e-5)


def test_derivatives_against_finite_differences(monkeypatch):
    """Second order too: forward over reverse through sort, in float64."""
    monkeypatch.setattr(tp.config, "enable_x64", True)
    x = rng.normal(size=12)

    def f(a):
        return jnp.sum(jnp.sort(a) ** 3 * jnp.arange(12.0)) + jnp.median(a) ** 2

    eps = 1e-6
    basis = np.eye(12)
    numeric = np.array([(f(x + eps * e) - f(x - eps * e)) / (2 * eps) for e in basis])
    np.testing.assert_allclose(tp.grad(f)(x), numeric, rtol=1e-6, atol=1e-6)
    g = tp.grad(f)
    numeric_h = np.array([(g(x + eps * e) - g(x - eps * e)) / (2 * eps) for e in basis])
    np.testing.assert_allclose(tp.hessian(f)(x), numeric_h, rtol=1e-5, atol=1e-5)


def test_batching_matches_a_loop():
    fns = [lambda a: jnp.sort(a), lambda a: jnp.argsort(a, descending=True),
           lambda a: lax.top_k(a, 4)[1], lambda a: jnp.median(a),
           lambda a: jnp.searchsorted(jnp.sort(X[3]), a),
           lambda a: tp.grad(lambda v: jnp.sum(jnp.sort(v) * jnp.arange(150.0)))(a)]
    x = np.nan_to_num(X)
    for fn in fns:
        want = np.stack([np.asarray(fn(row)) for row in x])
        np.testing.assert_allclose(tp.vmap(fn)(x), want, rtol=1e-6)
        np.testing.assert_allclose(tp.jit(tp.vmap(fn))(x), want, rtol=1e-6)


def test_long_sorts_use_the_network_and_stay_stable():
    x = rng.integers(0, 3, size=5000).astype(np.float32)
    np.testing.assert_array_equal(tp.jit(jnp.argsort)(x), np.argsort(x, kind="stable"))
    np.testing.assert_array_equal(tp.jit(jnp.sort)(x), np.sort(x))
    text = tp.jit(jnp.sort).lower(x).as_text()
    assert "stablehlo.sort" not in text  # IREE's sort is quadratic: the bitonic network


@pytest.mark.parametrize("n", [100, 3000], ids=["native", "network"])
@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.uint32])
def test_unsigned_keys_under_jit(dtype, n):
    """Unsigned keys of 2^31 and more sorted first under jit (a 32-bit key shifted into the
    high half of the packed int64 overflowed), and the network did not compile on unsigned
    tensors: both now sort the keys' signed image (the top bit flipped)."""
    x = rng.integers(0, np.iinfo(dtype).max, size=n, dtype=dtype)
    ties = rng.integers(0, 3, size=n).astype(dtype)

    def orders(v, w):
        return (jnp.argsort(v), jnp.sort(v), jnp.sort(v, descending=True),
                jnp.lexsort((v, w)))

    want = (np.argsort(x, kind="stable"), np.sort(x), np.sort(x)[::-1], np.lexsort((x, ties)))
    for got, expected in zip(tp.jit(orders)(x, ties), want):
        np.testing.assert_array_equal(got, expected)


def test_bad_input_names_the_function_and_the_line():
    with pytest.raises(ValueError, match="a should be 1-dimensional"):
        jnp.searchsorted(SMALL, 0.0)
    with pytest.raises(ValueError, match="'middle' is an invalid value"):
        jnp.searchsorted(X[0], 0.0, side="middle")
    with pytest.raises(ValueError, match="kth 9 is out of bounds"):
        jnp.partition(SMALL, 9)
    with pytest.raises(TypeError, match="'kind' argument to sort is not supported"):
        jnp.sort(X, kind="quicksort")
    with pytest.raises(ValueError, match="method can only be"):
        jnp.quantile(X, 0.5, method="cubic")
    with pytest.raises(ValueError, match="same shape"):
        jnp.lexsort([X, SMALL])
    with pytest.raises(TypeError, match="bincount must have an integer type"):
        jnp.bincount(X[0])
    with pytest.raises(ValueError, match="top_k: k=200"):
        lax.top_k(X, 200)
    with pytest.raises(TypeError, match="(?s)unique.*size=") as err:
        tp.jit(lambda a: jnp.unique(a))(INTS)
    assert "test_sorting.py" in str(err.value)
    with pytest.raises(TypeError, match="(?s)bincount.*length="):
        tp.jit(lambda a: jnp.bincount(a))(INTS[0])
