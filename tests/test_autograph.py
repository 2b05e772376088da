"""Python ``if``/``while``/``for`` on traced values under jit (transforms/autograph/convert.py).

Each program is checked three ways: plain Python on NumPy (the oracle), the converted
function run eagerly (it must be the same function), and under ``jit``.
"""

from __future__ import annotations

import functools
import os
import subprocess
import sys

import numpy as np
import pytest

import transpiler as jax
import transpiler.numpy as jnp
from transpiler import TranspileError
from transpiler.transforms.autograph.runtime import convert

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def line_of(marker: str, path: str = __file__) -> int:
    """The line of `path` (this file) that holds the comment ``# <marker>``."""
    with open(path) as handle:
        for number, text in enumerate(handle, 1):
            if text.rstrip().endswith(f"# {marker}"):
                return number
    raise AssertionError(marker)


def f32(x):
    return np.asarray(x, dtype=np.float32)


# --- programs -------------------------------------------------------------------------------

def piecewise(x):
    if x < -1.0:
        y = -x - 1.0
    elif x < 1.0:
        y = x * x - 1.0
    else:
        y = jnp.sin(x)
    return y * 2.0


def newton_sqrt(a):
    x = a
    dx = a
    while jnp.abs(dx) > 1e-4 * a:
        dx = (x * x - a) / (2.0 * x)
        x = x - dx
    return x


def nested(x, n):
    total = jnp.zeros_like(x)
    for i in range(n):
        j = 0
        while j < i:
            if jnp.sum(total) > 20.0:
                total = total * 0.5
            else:
                total = total + x * j
            j = j + 1
    return total


def nested_np(x, n):
    total = np.zeros_like(x)
    for i in range(n):
        for j in range(i):
            total = total * 0.5 if total.sum() > 20.0 else total + x * j
    return total


def power_sum(x, n):
    acc = x * 0.0
    for i in range(n):
        acc = acc + x ** 2 * i
    return acc


def early_return(x):
    if x > 0:
        return x * 3.0
    y = x - 1.0
    return y * y


def first_over(x, limit):
    steps = 0
    while True:
        x = x * 1.5
        steps = steps + 1
        if x > limit:
            break
    return x, steps


def soft_clip(v):
    if v > 1.0:
        return 1.0 + 0.1 * (v - 1.0)
    return v


def uses_helper(x):
    return soft_clip(x * 2.0) + 1.0


def mean_if_positive(x):
    return jnp.mean(x) if jnp.sum(x) > 0 else -jnp.mean(x)


def both_positive(x, y):
    if x > 0 and y > 0 or not x > -5:
        return x + y
    return x - y


def weak_carry(x, n):
    s = 0
    i = 0
    while i < n:
        s = s + x
        i = i + 1
    return s


def loop_over_dict(params, x):
    total = x
    for key in params:
        total = total + params[key]
    if jnp.sum(total) > 0:
        total = total * 2.0
    return total


# --- eager: converted code is the same function ---------------------------------------------

@pytest.mark.parametrize("fn, args", [
    (piecewise, (-2.0,)), (piecewise, (0.5,)), (piecewise, (3.0,)),
    (newton_sqrt, (2.0,)), (nested, (f32([1.0, 2.0]), 5)), (power_sum, (1.5, 4)),
    (early_return, (2.0,)), (early_return, (-2.0,)), (first_over, (1.0, 10.0)),
    (uses_helper, (0.3,)), (uses_helper, (0.8,)), (mean_if_positive, (f32([1.0, -3.0]),)),
    (both_positive, (1.0, -2.0)), (both_positive, (-6.0, -2.0)), (weak_carry, (2.5, 3)),
])
def test_converted_function_runs_eagerly_like_the_original(fn, args):
    expected = fn(*args)
    got = convert(fn)(*args)
    np.testing.assert_allclose(np.asarray(got, dtype=np.float64),
                               np.asarray(expected, dtype=np.float64), rtol=1e-6)


def test_converted_source_is_readable_python():
    source = convert(piecewise).source
    assert "def cf_piecewise(x):" in source and "def _if_true_0(y):" in source
    assert "_cf.if_stmt(x < -1.0, _if_true_0, _if_false_0" in source
    assert "_cf.Undefined('y')" in source
    assert jax.jit(piecewise).converted_source == source
    assert "_cf.call(soft_clip, x * 2.0)" in jax.jit(uses_helper).converted_source
    assert jax.jit(lambda x: jnp.sin(x)).converted_source is None  # nothing to convert


# --- under jit ------------------------------------------------------------------------------

@pytest.mark.parametrize("x", [-2.0, 0.5, 3.0])
def test_if_elif_else_on_traced_value(x):
    np.testing.assert_allclose(jax.jit(piecewise)(f32(x)), piecewise(x), rtol=1e-6)


def test_newton_while_is_one_stablehlo_while():
    jitted = jax.jit(newton_sqrt)
    for a in (2.0, 9.0, 0.25):
        np.testing.assert_allclose(jitted(f32(a)), np.sqrt(a), rtol=1e-4)
    text = jitted.lower(f32(2.0)).as_text()
    assert text.count("stablehlo.while") == 1


def test_nested_loops_and_branch_with_traced_and_static_trip_counts():
    x = f32([1.0, 2.0])
    expected = nested_np(np.asarray(x, np.float64), 6)
    np.testing.assert_allclose(jax.jit(nested)(x, np.int32(6)), expected, rtol=1e-5)
    np.testing.assert_allclose(jax.jit(nested, static_argnums=1)(x, 6), expected, rtol=1e-5)


def test_for_range_traced_bound_is_a_loop_and_static_bound_unrolls():
    x = f32(1.5)
    traced = jax.jit(power_sum)
    np.testing.assert_allclose(traced(x, np.int32(4)), power_sum(1.5, 4), rtol=1e-6)
    np.testing.assert_allclose(traced(x, np.int32(0)), 0.0)
    assert traced.lower(x, np.int32(4)).as_text().count("stablehlo.while") == 1
    static = jax.jit(power_sum, static_argnums=1)
    np.testing.assert_allclose(static(x, 4), power_sum(1.5, 4), rtol=1e-6)
    assert "stablehlo.while" not in static.lower(x, 4).as_text()


def test_early_return_and_break_on_traced_values():
    for x in (2.0, -2.0):
        np.testing.assert_allclose(jax.jit(early_return)(f32(x)), early_return(x), rtol=1e-6)
    value, steps = jax.jit(first_over)(f32(1.0), f32(10.0))
    expected_value, expected_steps = first_over(1.0, 10.0)
    np.testing.assert_allclose(value, expected_value, rtol=1e-6)
    assert int(steps) == expected_steps


def test_user_helper_with_traced_if_is_converted_through_the_call():
    jitted = jax.jit(uses_helper)
    for x in (0.3, 0.8):
        np.testing.assert_allclose(jitted(f32(x)), uses_helper(x), rtol=1e-6)


def test_conditional_expression_and_boolean_operators_on_traced_values():
    for v in ([1.0, 2.0], [1.0, -3.0]):
        np.testing.assert_allclose(jax.jit(mean_if_positive)(f32(v)),
                                   mean_if_positive(np.asarray(v)), rtol=1e-6)
    for x, y in ((1.0, 2.0), (1.0, -2.0), (-6.0, -2.0)):
        np.testing.assert_allclose(jax.jit(both_positive)(f32(x), f32(y)),
                                   both_positive(x, y), rtol=1e-6)


def test_weak_python_scalar_carry_is_promoted_and_dicts_loop_in_python():
    out = jax.jit(weak_carry)(f32(2.5), np.int32(3))
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, 7.5)
    params = {"a": f32([1.0, -1.0]), "b": f32([0.5, 0.5])}
    np.testing.assert_allclose(jax.jit(loop_over_dict)(params, f32([1.0, 1.0])),
                               [5.0, 1.0])


# --- derivatives ----------------------------------------------------------------------------

def branchy(x):
    if x > 0.5:
        y = jnp.sin(x) * x
    else:
        y = jnp.cos(x) - x
    return y * y


def branchy_np(x):
    y = np.sin(x) * x if x > 0.5 else np.cos(x) - x
    return y * y


def loop_of_branches(x):
    y = x
    for _ in range(3):
        if y > 0:
            t = jnp.exp(y * 0.1)
            y = y * t
        else:
            y = y - 1.0
    return soft_clip(y)


def loop_of_branches_np(x):
    y = x
    for _ in range(3):
        y = y * np.exp(y * 0.1) if y > 0 else y - 1.0
    return soft_clip(y)


def sines(x, n):
    i = 0
    while i < n:
        x = jnp.sin(x)
        i = i + 1
    return x


@pytest.mark.parametrize("fn, oracle", [(branchy, branchy_np),
                                        (loop_of_branches, loop_of_branches_np)])
def test_jit_grad_of_traced_if_matches_eager_grad_and_finite_differences(fn, oracle):
    jitted = jax.jit(jax.grad(fn))
    for x in (0.7, 0.2, -0.4, 1.3):
        eager = jax.grad(fn)(x)
        staged = jitted(f32(x))
        h = 1e-6
        numeric = (oracle(x + h) - oracle(x - h)) / (2 * h)
        np.testing.assert_allclose(staged, eager, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(staged, numeric, rtol=1e-3, atol=1e-4)


def test_reverse_mode_of_while_with_traced_trip_count_needs_a_static_bound():
    with pytest.raises(TranspileError, match="reverse-mode differentiation of a `while`.*"
                                             "static bound"):
        jax.jit(jax.grad(sines))(f32(1.0), np.int32(3))
    np.testing.assert_allclose(jax.jit(jax.grad(sines), static_argnums=1)(f32(1.0), 2),
                               np.cos(np.sin(1.0)) * np.cos(1.0), rtol=1e-5)


def test_import_does_not_load_libcst():
    code = ("import sys, transpiler as jax, transpiler.numpy as jnp\n"
            "f = jax.jit(lambda x: jnp.sin(x) * 2.0)\n"
            "f(1.0)\n"
            "assert 'libcst' not in sys.modules, 'libcst imported'\n")
    env = dict(os.environ, PYTHONPATH=ROOT)
    subprocess.run([sys.executable, "-c", code], check=True, env=env, cwd=ROOT)


def stepped(x, a, b):
    s = x * 0.0
    for i in range(b, a, -2):
        s = s + x * i
    return s


class Scaler:
    def __init__(self, scale):
        self.scale = scale

    def apply(self, x):
        if x > 0:
            return x * self.scale
        return -x


def test_stepped_range_methods_partials_and_nested_jit():
    for a, b in ((1, 10), (5, 1)):
        np.testing.assert_allclose(jax.jit(stepped)(f32(1.0), np.int32(a), np.int32(b)),
                                   stepped(1.0, a, b))
    np.testing.assert_allclose(jax.jit(Scaler(3.0).apply)(f32(2.0)), 6.0)
    np.testing.assert_allclose(jax.jit(functools.partial(both_positive, y=f32(2.0)))(f32(1.0)),
                               3.0)
    inner = jax.jit(piecewise)
    np.testing.assert_allclose(jax.jit(lambda x: inner(x) + 1.0)(f32(0.5)), piecewise(0.5) + 1)


def test_jit_value_and_grad_with_argnums_and_aux():
    def f(x, y):
        z = x * y if x > y else x + jnp.sin(y)
        return z * z, {"z": z}

    x, y = f32(0.5), f32(0.2)
    value, grads = jax.jit(jax.value_and_grad(lambda a, b: f(a, b)[0], argnums=(0, 1)))(x, y)
    np.testing.assert_allclose(value, 0.01, rtol=1e-5)
    np.testing.assert_allclose(grads, (0.04, 0.1), rtol=1e-5)
    grad, aux = jax.jit(jax.grad(f, has_aux=True))(x, y)
    np.testing.assert_allclose(grad, 0.04, rtol=1e-5)
    np.testing.assert_allclose(aux["z"], 0.1, rtol=1e-5)


HELPERS = (piecewise, soft_clip)


def calls_known_at_run_time(x):
    return jax.grad(branchy)(x) * 2.0 + HELPERS[1](x)


def test_callees_known_only_at_run_time_are_converted():
    expected = jax.grad(branchy)(0.7) * 2.0 + soft_clip(0.7)
    np.testing.assert_allclose(jax.jit(calls_known_at_run_time)(f32(0.7)), expected,
                               rtol=1e-5)
    assert "_cf.call(jax.grad(branchy), x)" in jax.jit(calls_known_at_run_time).converted_source
