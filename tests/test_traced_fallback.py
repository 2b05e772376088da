"""Callees the frontend cannot read (builtins and C functions calling back into our arrays,
class constructors, functions made by exec) are traced and their record differentiated and
batched (transpiler/transforms/common/traced.py); recursion with a static depth is resolved at run
time; integral operands (predicates, indices) computed from differentiated values carry no
derivative. Oracles: float64 central differences, Python loops, JAX where installed."""

from __future__ import annotations

import collections
import functools
import logging
import math
import operator

import numpy as np
import pytest

import transpiler as tp
import transpiler.numpy as jnp
from transpiler.errors import TranspileError

F32 = np.float32
X = np.array([0.5, -1.25, 2.0], F32)
Pair = collections.namedtuple("Pair", "w b")
_namespace = {"jnp": jnp}
exec("def made_by_exec(x):\n    return jnp.sin(x) * x\n", _namespace)  # no source file
made_by_exec = _namespace["made_by_exec"]


def power(x, n):  # recursion with a static depth
    if n == 0:
        return jnp.ones_like(x)
    return x * power(x, n - 1)


def rows_in_a_loop(x):  # a list made afresh in each iteration (its cotangent starts over)
    out = []
    for i in range(3):
        items = []
        items.append(x[i])
        items.append(x[i] * 2)
        out.append(items[0] * items[1])
    return sum(out)


PROGRAMS = {
    "functools.reduce(operator.mul)": lambda x: functools.reduce(operator.mul, [x[0], x[1], x[2]]),
    "functools.reduce(lambda)": lambda x: functools.reduce(lambda a, b: a * b + 1.0, list(x)),
    "sum(map(jnp.sin, ...))": lambda x: sum(map(jnp.sin, list(x))),
    "operator.mul on arrays": lambda x: jnp.sum(operator.mul(x, jnp.tanh(x))),
    "NamedTuple constructor": lambda x: jnp.sum(Pair(x, 2.0 * x).b * x),
    "function made by exec": lambda x: jnp.sum(made_by_exec(x)),
    "recursion, static depth": lambda x: jnp.sum(power(x, 3)),
    "where with a float condition": lambda x: jnp.sum(jnp.where(x, x * 2, x) * x),
    "a list made in each iteration": rows_in_a_loop,
}


def central_differences(f, x, eps=1e-4):
    """float64 central differences of `f` evaluated in float64 (x64 on, then restored)."""
    tp.config.update("jax_enable_x64", True)
    try:
        x = x.astype(np.float64)
        grad = np.zeros_like(x)
        for i in range(x.size):
            step = np.zeros_like(x)
            step[i] = eps
            grad[i] = (float(f(x + step)) - float(f(x - step))) / (2 * eps)
        return grad
    finally:
        tp.config.update("jax_enable_x64", False)


@pytest.mark.parametrize("name", PROGRAMS)
def test_derivatives_against_finite_differences(name):
    f = PROGRAMS[name]
    want = central_differences(f, X)
    for got in (tp.grad(f)(X), tp.jacfwd(f)(X), tp.jacrev(f)(X)):
        np.testing.assert_allclose(got, want, rtol=2e-3, atol=2e-3)
    np.testing.assert_allclose(tp.jvp(f, (X,), (np.ones(3, F32),))[1], want.sum(), rtol=2e-3,
                               atol=2e-3)


def test_indices_computed_from_differentiated_values_carry_no_derivative():
    f = lambda x: jnp.sum(jnp.take(x, (x * 0).astype(jnp.int32)) * x)  # noqa: E731
    np.testing.assert_allclose(tp.grad(f)(X), central_differences(f, X), rtol=2e-3, atol=2e-3)
    np.testing.assert_allclose(tp.jit(tp.grad(f))(X), tp.grad(f)(X), rtol=1e-6)


@pytest.mark.parametrize("name", ["functools.reduce(operator.mul)", "NamedTuple constructor",
                                  "function made by exec", "recursion, static depth"])
def test_under_jit(name):
    f = PROGRAMS[name]
    np.testing.assert_allclose(tp.jit(tp.grad(f))(X), tp.grad(f)(X), rtol=1e-5)
    np.testing.assert_allclose(tp.jit(f)(X), f(X), rtol=1e-6)


@pytest.mark.parametrize("name", PROGRAMS)
def test_vmap_against_a_loop(name):
    f = PROGRAMS[name]
    batch = np.stack([X, 2 * X, -X])
    np.testing.assert_allclose(tp.vmap(f)(batch), [float(f(b)) for b in batch], rtol=1e-5)
    np.testing.assert_allclose(tp.vmap(tp.grad(f))(batch), [tp.grad(f)(b) for b in batch],
                               rtol=1e-5, atol=1e-6)


def test_against_jax():
    jax = pytest.importorskip("jax")
    jax_jnp = pytest.importorskip("jax.numpy")
    f = lambda x: functools.reduce(operator.mul, [x[0], x[1], x[2]])  # noqa: E731
    np.testing.assert_allclose(tp.grad(f)(X), jax.grad(f)(X), rtol=1e-6)
    g = lambda x: jax_jnp.sum(jax_jnp.where(x, x * 2, x) * x)  # noqa: E731
    np.testing.assert_allclose(tp.grad(PROGRAMS["where with a float condition"])(X),
                               jax.grad(g)(X), rtol=1e-6)


def test_the_record_is_readable_python_with_the_users_lines(caplog):
    f = lambda x: functools.reduce(lambda a, b: a * jnp.sin(b), [x[0], x[1]])  # noqa: E731
    with caplog.at_level(logging.INFO, logger="transpiler.traced"):
        tp.grad(f)(X + 0.125)
    paths = [r.args[2] for r in caplog.records
             if r.name == "transpiler.traced" and "traced" in r.getMessage()]
    assert paths, caplog.text
    source = open(paths[-1]).read()
    assert "prim.sin(" in source and "test_traced_fallback.py:" in source, source


def test_python_control_flow_on_traced_values_is_an_error_at_the_line():
    f = lambda x: math.sin(x[0])  # noqa: E731  (float() of an array inside a C function)
    with pytest.raises(TranspileError, match="traced value") as info:
        tp.grad(f)(X)
    assert f"{__file__}:" in str(info.value)


def test_a_callback_closing_over_arrays_is_refused():
    def f(x):
        return functools.reduce(lambda a, b: a * b * x[0], [x[1], x[2]])
    for transform in (tp.grad, tp.jacfwd, tp.vmap):
        with pytest.raises(TranspileError, match="closes over arrays"):
            transform(f)(X if transform is not tp.vmap else np.stack([X, X]))


def test_a_partial_binding_a_differentiated_value_is_differentiated_through_it():
    """transforms/common/partials.py: a partial made inside the function carries its bound
    values' derivatives (once refused; before that, silently dropped)."""
    def scaled(w, x):
        return jnp.sum(w * jnp.sin(x))

    def f(w):
        return functools.partial(scaled, w)(X) + functools.partial(scaled, x=w)(w)
    np.testing.assert_allclose(tp.grad(f)(X), central_differences(f, X), rtol=2e-3, atol=2e-3)
    np.testing.assert_allclose(tp.jacfwd(f)(X), tp.grad(f)(X), rtol=1e-5)
    np.testing.assert_allclose(tp.jit(tp.grad(f))(X), tp.grad(f)(X), rtol=1e-5)
    batch = np.stack([X, 2 * X])
    np.testing.assert_allclose(tp.vmap(f)(batch), [float(f(b)) for b in batch], rtol=1e-5)
    np.testing.assert_allclose(tp.hessian(f)(X), tp.jacfwd(tp.grad(f))(X), rtol=1e-4)
