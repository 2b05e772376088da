"""Callables that are not plain functions (issue 17): `functools.partial` (and partials of
partials and of methods), bound methods, methods called inside a transformed function,
objects with `__call__` -- under every transform, against hand-derived answers."""

from __future__ import annotations

import functools

import numpy as np
import pytest

import transpiler as tp
import transpiler.numpy as jnp

F32 = np.float32
X = np.array([1.0, 2.0, -0.5], F32)


def scaled_dot(x, y, scale=1.0):
    return jnp.sum(x * y) * scale


class Model:
    def __init__(self, c):
        self.c = c

    def loss(self, w):
        return jnp.sum(w ** 2) * self.c

    def __call__(self, w):
        return self.loss(w) + 1.0


MODEL = Model(2.0)
PARTIAL = functools.partial(scaled_dot, scale=2.0)
PARTIAL_OF_PARTIAL = functools.partial(PARTIAL, X)
PARTIAL_OF_METHOD = functools.partial(Model(3.0).loss)


def calls_a_method(obj, w):
    return obj.loss(w) * 2


def calls_a_global_method(w):
    return MODEL.loss(w) + MODEL(w)


# name -> (callable, its arguments, its gradient wrt argument 0 (or the argnums given))
CASES = {
    "partial with a keyword": (PARTIAL, (X, X), 2 * X),
    "partial of a partial": (PARTIAL_OF_PARTIAL, (X,), 2 * X),
    "partial of a bound method": (PARTIAL_OF_METHOD, (X,), 6 * X),
    "bound method": (MODEL.loss, (X,), 4 * X),
    "callable object": (MODEL, (X,), 4 * X),
    "method of a global object": (calls_a_global_method, (X,), 8 * X),
}


@pytest.mark.parametrize("name", CASES)
def test_gradients(name):
    fn, args, want = CASES[name]
    np.testing.assert_allclose(tp.grad(fn)(*args), want, rtol=1e-6)
    np.testing.assert_allclose(tp.jit(tp.grad(fn))(*args), want, rtol=1e-6)
    np.testing.assert_allclose(tp.jacrev(fn)(*args), want, rtol=1e-6)
    np.testing.assert_allclose(tp.jvp(fn, args, (np.ones(3, F32),) + tuple(
        np.zeros_like(a) for a in args[1:]))[1], want.sum(), rtol=1e-6)


@pytest.mark.parametrize("name", CASES)
def test_values_batched_and_jitted(name):
    fn, args, _ = CASES[name]
    batch = np.stack([args[0], 2 * args[0]])
    in_axes = (0,) + (None,) * (len(args) - 1)
    want = [float(fn(b, *args[1:])) for b in batch]
    np.testing.assert_allclose(tp.vmap(fn, in_axes=in_axes)(batch, *args[1:]), want, rtol=1e-6)
    np.testing.assert_allclose(tp.jit(fn)(*args), fn(*args), rtol=1e-6)


def test_method_of_an_argument():
    np.testing.assert_allclose(tp.grad(calls_a_method, 1)(MODEL, X), 8 * X, rtol=1e-6)
    np.testing.assert_allclose(tp.jvp(lambda w: calls_a_method(MODEL, w), (X,), (X,))[1],
                               8 * np.sum(X * X), rtol=1e-6)
    np.testing.assert_allclose(tp.vmap(calls_a_method, (None, 0))(MODEL, np.stack([X, X])),
                               [2 * float(MODEL.loss(X))] * 2, rtol=1e-6)


def test_hessian_of_a_bound_method():
    np.testing.assert_allclose(tp.hessian(MODEL.loss)(X), 4 * np.eye(3), rtol=1e-6)


def test_partial_built_inside_a_transformed_function():
    def f(w):
        return functools.partial(scaled_dot, scale=3.0)(w, w)
    np.testing.assert_allclose(tp.grad(f)(X), 6 * X, rtol=1e-6)


def test_partial_binding_a_differentiated_value_carries_its_derivative():
    def f(w):
        return functools.partial(scaled_dot, w)(X)   # once silently zero, then refused
    np.testing.assert_allclose(tp.grad(f)(X), tp.grad(lambda w: scaled_dot(w, X))(X),
                               rtol=1e-6)


def test_generated_wrapper_is_readable():
    source = tp.grad(PARTIAL).source
    assert "_function(x, y, scale=scale)" in source, source
