"""Ordinary Python around the math (issue 17): comprehensions, generator expressions,
`assert`, f-strings and logging on static values -- under grad, jit(grad), jvp and vmap,
against hand-derived gradients; and in-place container changes reverse mode cannot follow
are errors at the line, never a dropped derivative."""

from __future__ import annotations

import logging

import numpy as np
import pytest

import transpiler as tp
import transpiler.numpy as jnp
from transpiler.errors import TranspileError

F32 = np.float32
XS = [np.array([1.0, -2.0], F32), np.array([0.5, 3.0], F32)]


def list_comprehension(xs):
    return jnp.sum(jnp.stack([v ** 2 for v in xs]))


def generator_expression(xs):
    return sum(jnp.sum(v ** 2) for v in xs)


def filtered_nested(xs):
    return jnp.sum(jnp.stack([v * w for v in xs for w in xs if w is not v]))


def next_of_a_generator(xs):
    return jnp.sum(next(v for v in xs) ** 2)


def static_checks(xs):
    assert len(xs) == 2, f"expected two arrays, got {len(xs)}"
    logging.getLogger("tests").debug(f"shapes {[v.shape for v in xs]}")
    if isinstance(xs, (list, tuple)):
        return jnp.sum(xs[0] * xs[1])
    return 0.0


CASES = {
    "list comprehension": (list_comprehension, [2 * XS[0], 2 * XS[1]]),
    "generator expression": (generator_expression, [2 * XS[0], 2 * XS[1]]),
    "nested comprehension with a filter": (filtered_nested, [2 * XS[1], 2 * XS[0]]),
    "next of a generator": (next_of_a_generator, [2 * XS[0], 0 * XS[1]]),
    "assert, f-string, logging, isinstance": (static_checks, [XS[1], XS[0]]),
}


@pytest.mark.parametrize("name", CASES)
def test_gradients(name):
    fn, want = CASES[name]
    for got in (tp.grad(fn)(XS), tp.jit(tp.grad(fn))(XS)):
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-6)
    tangents = [np.ones(2, F32), np.ones(2, F32)]
    np.testing.assert_allclose(tp.jvp(fn, (XS,), (tangents,))[1],
                               sum(float(np.sum(w)) for w in want), rtol=1e-6)


@pytest.mark.parametrize("name", CASES)
def test_batched(name):
    fn, _ = CASES[name]
    batch = [np.stack([v, 2 * v]) for v in XS]
    want = [float(fn([b[i] for b in batch])) for i in range(2)]
    np.testing.assert_allclose(tp.vmap(fn)(batch), want, rtol=1e-6)


def test_assert_still_checks():
    with pytest.raises(AssertionError, match="expected two arrays, got 3"):
        tp.grad(static_checks)(XS + [XS[0]])


def appends_to_an_argument(x, acc):
    acc.append(x * 2)
    return jnp.sum(jnp.stack(acc))


def appends_while_shared(x):
    acc = []
    alias = acc
    acc.append(x * 2)
    return jnp.sum(jnp.stack(alias))


@pytest.mark.parametrize("fn, args", [(appends_to_an_argument, (XS[0], [])),
                                      (appends_while_shared, (XS[0],))])
def test_in_place_appends_reverse_mode_cannot_follow_are_errors(fn, args):
    with pytest.raises(TranspileError, match="in place") as info:
        tp.grad(fn)(*args)
    assert f"{__file__}:" in str(info.value)


def convolve(x, w):  # the first example of JAX's "Automatic vectorization" page
    output = []
    for i in range(1, len(x) - 1):
        output.append(jnp.dot(x[i - 1:i + 2], w))
    return jnp.array(output)


def test_jax_vmap_docs_first_example():
    x, w = np.arange(5, dtype=F32), np.array([2.0, 3.0, 4.0], F32)
    xs, ws = np.stack([x, x]), np.stack([w, w])
    want = np.stack([np.convolve(x, w[::-1], "valid")] * 2)
    np.testing.assert_allclose(tp.vmap(convolve)(xs, ws), want)
    np.testing.assert_allclose(tp.jit(tp.vmap(convolve))(xs, ws), want)
    np.testing.assert_allclose(tp.vmap(convolve, in_axes=[0, None])(xs, w), want)
    grads = tp.vmap(tp.grad(lambda x, w: jnp.sum(convolve(x, w))))(xs, ws)
    np.testing.assert_allclose(grads[0], [2, 5, 9, 7, 4])


def test_array_of_batched_elements():
    x = np.arange(8, dtype=F32).reshape(4, 2)
    np.testing.assert_allclose(tp.vmap(lambda v: jnp.array([v[0], v[1] * 2]))(x),
                               np.stack([x[:, 0], 2 * x[:, 1]], axis=1))
    got = tp.vmap(lambda a, b: jnp.array([[a, b], [b, 2.0]]), (0, None))(x[:, 0], F32(5))
    assert got.shape == (4, 2, 2) and got.dtype == np.float32
    np.testing.assert_allclose(got[:, 1, 1], 2.0)
    np.testing.assert_allclose(got[:, 0, 0], x[:, 0])
