"""``jax.make_jaxpr`` prints the program ``jit`` traces in JAX's form (typed variables, one
operation per line with the user's line, loops and branches as indented sub-programs);
JAX's error classes (``jax.errors.TracerBoolConversionError`` ...) are what a traced value
raises where a concrete one is needed, so code that catches them catches ours; and the
small environment functions."""

from __future__ import annotations

import numpy as np
import pytest

import transpiler as jax
import transpiler.numpy as jnp
from transpiler import lax

X = np.ones((2, 3), np.float32)
W = np.ones((3, 4), np.float32)


def dense(x, w):
    y = jnp.tanh(x @ w)
    return jnp.sum(y ** 2), y.mean()


def test_a_straight_line_program():
    jaxpr = jax.make_jaxpr(dense)(X, W)
    text = str(jaxpr)
    lines = text.splitlines()
    assert lines[0] == "{ lambda ; a:f32[2,3] b:f32[3,4]. let"
    assert lines[1].startswith("    c:f32[2,4] = dot_general a b  dot_dimension_numbers=")
    assert lines[1].endswith("# test_make_jaxpr.py:21")
    assert "    d:f32[2,4] = tanh c  # test_make_jaxpr.py:21" in lines
    assert any(" = reduce_sum " in line and "dimensions=(0,)" in line for line in lines)
    assert lines[-2].startswith("  in (") and lines[-1] == "  }"
    assert [a.shape for a in jaxpr.in_avals] == [(2, 3), (3, 4)]
    assert [a.shape for a in jaxpr.out_avals] == [(), ()]
    assert jaxpr.jaxpr is jaxpr and any(e.startswith("d:f32[2,4] = tanh c") for e in jaxpr.eqns)


def test_loops_branches_and_derivatives():
    def f(x):
        c = lax.fori_loop(0, 3, lambda i, c: c * 2, x).sum()
        return lax.cond(c > 1, lambda v: v, lambda v: -v, c)

    text = str(jax.make_jaxpr(f)(np.ones(3, np.float32)))
    assert " = while " in text and "      cond: { lambda ; " in text
    assert "      body: { lambda ; " in text and " = if " in text
    assert "      branch1: { lambda ; . let" in text and " = negate " in text
    assert text.splitlines()[-2].count(",") == 1  # one output (loop results kept for IREE
    # are not shown)
    grad_text = str(jax.make_jaxpr(jax.grad(lambda x: jnp.sum(jnp.sin(x))))(np.ones(3,
                                                                                  np.float32)))
    assert " = cosine a" in grad_text and " = sine a" in grad_text


def test_return_shape_and_static_argnums():
    jaxpr, shape = jax.make_jaxpr(lambda x, n: x * n, static_argnums=1,
                                  return_shape=True)(X, 3)
    assert shape == jax.ShapeDtypeStruct((2, 3), np.float32)
    assert "value=3" in str(jaxpr)


def test_bad_input():
    with pytest.raises(TypeError, match="make_jaxpr expects a callable"):
        jax.make_jaxpr(3)
    with pytest.raises(NotImplementedError, match="axis_env"):
        jax.make_jaxpr(dense, axis_env=[("i", 2)])(X, W)


@pytest.mark.parametrize("fn, error", [
    (lambda x: bool(x > 0), "TracerBoolConversionError"),
    (lambda x: int(x), "TracerIntegerConversionError"),
    (lambda x: [1, 2][x], "TracerIntegerConversionError"),
    (lambda x: float(x), "ConcretizationTypeError"),
    (lambda x: np.asarray(x), "TracerArrayConversionError"),
])
def test_jax_error_classes(fn, error):
    with pytest.raises(getattr(jax.errors, error)) as info:
        jax.jit(fn)(np.int32(1))
    assert isinstance(info.value, TypeError) and isinstance(info.value, jax.TranspileError)
    assert issubclass(jax.errors.TracerBoolConversionError, jax.errors.ConcretizationTypeError)


def test_an_escaped_tracer_is_an_unexpected_tracer_error():
    leaked = []

    @jax.jit
    def keep(x):
        leaked.append(x)
        return x

    keep(X)
    with pytest.raises(jax.errors.UnexpectedTracerError, match="escaped"):
        jax.jit(lambda y: y + leaked[0])(X)


def test_environment_functions(capsys):
    text = jax.print_environment_info(return_string=True)
    assert "iree-base-runtime:   3.13" in text and "transpiler:" in text
    jax.print_environment_info()
    assert capsys.readouterr().out == text
    assert jax.config.config_with_absl() is None
