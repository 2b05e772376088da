"""Named-axis collectives (lax.psum, pmean, pmax, pmin, all_gather, axis_index,
psum_scatter, ppermute) under vmap, against NumPy: one batch, nested batches (merged into
one batch axis, and an inner vmap whose arguments the outer one does not batch), pytrees,
batch axes other than 0, eager and under jit; unbound axis names."""

from __future__ import annotations

import numpy as np
import pytest

import transpiler as jax
import transpiler.numpy as jnp
from transpiler import lax
from transpiler.errors import TranspileError

B = 4
_rng = np.random.default_rng(0)
X = _rng.standard_normal((B, 3)).astype(np.float32)
Y = _rng.standard_normal((B, 3, 2)).astype(np.float32)


def _modes(f):
    """`f` eagerly and under jit."""
    return [f, jax.jit(f)]


def _close(got, want, tol=1e-5):
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=tol, atol=tol)


@pytest.mark.parametrize("jit", [False, True])
def test_pmean_centers(jit):
    f = jax.vmap(lambda x: x - lax.pmean(x, "i"), axis_name="i")
    _close((jax.jit(f) if jit else f)(X), X - X.mean(0))


@pytest.mark.parametrize("jit", [False, True])
def test_psum_normalizes(jit):
    f = jax.vmap(lambda x: x / lax.psum(x, "i"), axis_name="i")
    _close((jax.jit(f) if jit else f)(X), X / X.sum(0))


def test_pmax_pmin_and_unbatched_results():
    f = jax.vmap(lambda x: (lax.pmax(x, "i"), lax.pmin(x, "i"), lax.psum(x, "i")),
                 axis_name="i")
    for g in _modes(f):
        hi, lo, total = g(X)
        _close(hi, np.broadcast_to(X.max(0), X.shape))
        _close(lo, np.broadcast_to(X.min(0), X.shape))
        _close(total, np.broadcast_to(X.sum(0), X.shape))


@pytest.mark.parametrize("axis,tiled", [(0, False), (1, False), (-1, False), (0, True),
                                        (1, True)])
def test_all_gather(axis, tiled):
    f = jax.vmap(lambda y: lax.all_gather(y, "i", axis=axis, tiled=tiled), axis_name="i")
    gathered = np.concatenate(list(Y), axis=axis) if tiled else np.stack(list(Y), axis=axis)
    want = np.broadcast_to(gathered, (B, *gathered.shape))
    for g in _modes(f):
        _close(g(Y), want)


def test_axis_index():
    f = jax.vmap(lambda x: (lax.axis_index("i"), x * lax.axis_index("i")), axis_name="i")
    for g in _modes(f):
        index, scaled = g(X)
        assert np.asarray(index).dtype == np.int32
        np.testing.assert_array_equal(np.asarray(index), np.arange(B))
        _close(scaled, X * np.arange(B)[:, None])


def test_psum_of_unbatched_value_is_batch_size():
    f = jax.vmap(lambda x: (lax.psum(1, "i"), x / lax.psum(1, "i")), axis_name="i")
    for g in _modes(f):
        size, scaled = g(X)
        np.testing.assert_array_equal(np.asarray(size), np.full(B, B))
        _close(scaled, X / B)


def test_psum_pytree_with_unbatched_leaf():
    c = np.float32(2.5)
    f = jax.vmap(lambda t: lax.psum(t, "i"), in_axes=({"a": 0, "b": (0, None)},),
                 axis_name="i")
    for g in _modes(f):
        out = g({"a": X, "b": (Y, c)})
        _close(out["a"], np.broadcast_to(X.sum(0), X.shape))
        _close(out["b"][0], np.broadcast_to(Y.sum(0), Y.shape))
        _close(out["b"][1], np.full(B, B * c))


def test_batch_axis_not_first():
    xt = np.ascontiguousarray(X.T)  # (3, B): batch at axis 1, output at axis 1 too
    f = jax.vmap(lambda x: x - lax.pmean(x, "i") + lax.axis_index("i"), in_axes=1,
                 out_axes=1, axis_name="i")
    for g in _modes(f):
        _close(g(xt), (X - X.mean(0) + np.arange(B)[:, None]).T)


def test_nested_vmaps_two_names():
    z = _rng.standard_normal((2, 3, 5)).astype(np.float32)  # i: 2, j: 3, member: (5,)

    def f(v):
        return (lax.psum(v, "i"), lax.psum(v, "j"), lax.psum(v, ("i", "j")),
                lax.pmax(v, "j"), lax.axis_index("i"), lax.axis_index(("i", "j")),
                lax.all_gather(v, "j"))
    g = jax.vmap(jax.vmap(f, axis_name="j"), axis_name="i")
    full = (2, 3, 5)
    want = (np.broadcast_to(z.sum(0, keepdims=True), full),
            np.broadcast_to(z.sum(1, keepdims=True), full),
            np.broadcast_to(z.sum((0, 1), keepdims=True), full),
            np.broadcast_to(z.max(1, keepdims=True), full),
            np.broadcast_to(np.arange(2)[:, None], (2, 3)),
            np.arange(6).reshape(2, 3),
            np.broadcast_to(z[:, None], (2, 3, 3, 5)))
    for h in _modes(g):
        for got, expected in zip(h(z), want):
            _close(got, expected)


def test_inner_vmap_over_unbatched_values():
    """The inner vmap's arguments do not carry the outer batch: along 'i' they are all the
    same, so psum over 'i' scales by its size and all_gather repeats."""
    c = np.arange(3, dtype=np.float32)

    def outer(x):
        inner = jax.vmap(lambda v: (lax.psum(v, "i"), lax.psum(v, ("i", "j")),
                                    lax.all_gather(v, ("i", "j"))), axis_name="j")
        per_i, both, gathered = inner(c)
        return x + per_i, both, gathered
    f = jax.vmap(outer, axis_name="i")
    shifted, both, gathered = f(X)
    _close(shifted, X + B * c)
    _close(both, np.full((B, 3), B * c.sum()))
    _close(gathered, np.broadcast_to(np.tile(c, B), (B, 3, B * 3)))


def test_psum_scatter_and_ppermute():
    m = _rng.standard_normal((B, B, 2)).astype(np.float32)
    scatter = jax.vmap(lambda v: lax.psum_scatter(v, "i"), axis_name="i")
    tiled = jax.vmap(lambda v: lax.psum_scatter(v, "i", scatter_dimension=1, tiled=True),
                     axis_name="i")
    perm = [(k, (k + 1) % B) for k in range(B - 1)]  # member 0 receives nothing
    shift = jax.vmap(lambda v: lax.ppermute(v, "i", perm), axis_name="i")
    w = _rng.standard_normal((B, 3, 2 * B)).astype(np.float32)
    want_shift = np.concatenate([np.zeros_like(X[:1]), X[:-1]])
    for g, h, p in zip(_modes(scatter), _modes(tiled), _modes(shift)):
        _close(g(m), m.sum(0))
        _close(h(w), np.stack(np.split(w.sum(0), B, axis=1)))
        _close(p(X), want_shift)


def test_collective_in_helper_function():
    def center(v):
        return v - lax.pmean(v, "i")
    f = jax.vmap(lambda x: center(x) * 2.0, axis_name="i")
    for g in _modes(f):
        _close(g(X), 2.0 * (X - X.mean(0)))


def test_unbound_axis_name():
    f = jax.vmap(lambda x: lax.psum(x, "j"), axis_name="i")
    with pytest.raises(TranspileError, match=r"unbound axis name 'j': the enclosing "
                                             r"vmap/pmap bind \['i'\]"):
        f(X)
    with pytest.raises(TranspileError, match=r"unbound axis name 'i'"):
        jax.jit(jax.vmap(lambda x: lax.all_gather(x, "i"), axis_name="k"))(X)
    with pytest.raises(TranspileError, match=r"unbound axis name 'i': the enclosing "
                                             r"vmap/pmap bind \[\]"):
        lax.psum(jnp.ones(3), "i")  # eagerly there is no axis
    with pytest.raises(TranspileError, match=r"unbound axis name 'i'"):
        lax.axis_index("i")
    with pytest.raises(TranspileError) as info:  # located at the user's line
        jax.vmap(lambda x: lax.pmean(x, "nope"), axis_name="i")(X)
    assert info.value.file == __file__


def test_reexports():
    assert jax.lax.psum is lax.psum
    for name in ("psum", "pmean", "pmax", "pmin", "all_gather", "axis_index",
                 "psum_scatter", "ppermute"):
        assert callable(getattr(jax.lax, name))


def test_grad_through_collectives():
    """grad of a vmapped function is the vmapped VJP: each collective's cotangent is the
    transpose collective over all members' cotangents."""
    x = X[:, 0]
    w = np.float32(1.5) + np.arange(B, dtype=np.float32)

    def centered(x):
        return jnp.sum(jax.vmap(lambda v: (v - lax.pmean(v, "i")) ** 2, axis_name="i")(x))

    def gathered(x):  # every member sees sum_k w_k x_k
        return jnp.sum(jax.vmap(lambda v: jnp.sum(lax.all_gather(v, "i") * w),
                                axis_name="i")(x))

    perm = [(k, k + 1) for k in range(B - 1)]

    def shifted(x):  # member m gets x_{m-1} (member 0 gets zero), weighted by m + 1
        out = jax.vmap(lambda v: lax.ppermute(v, "i", perm) * (1.0 + lax.axis_index("i")),
                       axis_name="i")(x)
        return jnp.sum(out)

    def scaled(x):  # sum_m psum(x) * x_m
        return jnp.sum(jax.vmap(lambda v: lax.psum(v, "i") * v, axis_name="i")(x))
    for g in _modes(jax.grad(centered)):
        _close(g(x), 2 * (x - x.mean()))
    _close(jax.grad(gathered)(x), B * w)
    _close(jax.grad(shifted)(x), np.array([2.0, 3.0, 4.0, 0.0], np.float32))
    _close(jax.grad(scaled)(x), np.full(B, 2 * x.sum()))
    per_member = jax.vmap(jax.grad(lambda v: lax.psum(v, "i") * v), axis_name="i")
    _close(per_member(x), np.full(B, 2 * x.sum()))
    with pytest.raises(TranspileError, match="pmax has no differentiation rule"):
        jax.grad(lambda x: jnp.sum(jax.vmap(lambda v: lax.pmax(v, "i"), axis_name="i")(x)))(x)
    # forward mode: psum is linear, its own JVP (tests/test_composition.py has the others)
    out, tangent = jax.jvp(jax.vmap(lambda v: lax.psum(v, "i"), axis_name="i"), (x,), (w,))
    _close(out, np.full(B, x.sum()))
    _close(tangent, np.full(B, w.sum()))
