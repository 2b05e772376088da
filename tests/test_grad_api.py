"""grad / value_and_grad / vjp API: conventions, higher order, errors at the user's line."""

from __future__ import annotations

import numpy as np
import pytest

import transpiler as tp
import transpiler.numpy as jnp
from tests.oracles import finite_differences


def cube_sin(x):
    return jnp.sin(x) * x ** 3


def test_higher_order_derivatives_match_closed_forms():
    x = np.float32(0.7)
    d1 = tp.grad(cube_sin)
    d2 = tp.grad(d1)
    d3 = tp.grad(d2)
    s, c = np.sin(0.7), np.cos(0.7)
    want1 = c * 0.7 ** 3 + 3 * 0.7 ** 2 * s
    want2 = -s * 0.7 ** 3 + 6 * 0.7 ** 2 * c + 6 * 0.7 * s
    want3 = -c * 0.7 ** 3 - 9 * 0.7 ** 2 * s + 18 * 0.7 * c + 6 * s
    np.testing.assert_allclose(float(d1(x)), want1, rtol=1e-5)
    np.testing.assert_allclose(float(d2(x)), want2, rtol=1e-4)
    np.testing.assert_allclose(float(d3(x)), want3, rtol=1e-3)
    np.testing.assert_allclose(float(tp.jit(d2)(x)), want2, rtol=1e-4)
    assert "vjp_" in d2.source


def tanh_layer(params, x):
    return jnp.sum(jnp.tanh(params["w"] * x) * params["b"])


def grad_w_norm(params, x):
    return jnp.sum(tp.grad(tanh_layer)(params, x)["w"] ** 2)


def test_second_order_with_pytree_arguments(monkeypatch):
    monkeypatch.setattr(tp.config, "enable_x64", True)
    params = {"w": np.array([0.5, -1.0]), "b": np.array([2.0, 3.0])}
    # d2/dx2 with a dict passed through: sum(b * tanh(w x)) -> sum(-2 b w^2 tanh sech^2)
    t = np.tanh(params["w"] * 0.7)
    want = np.sum(-2 * params["b"] * params["w"] ** 2 * t * (1 - t ** 2))
    d2 = tp.grad(tp.grad(tanh_layer, argnums=1), argnums=1)
    np.testing.assert_allclose(float(d2(params, 0.7)), want, rtol=1e-10)
    # grad w.r.t. a dict of a function of a grad w.r.t. that dict
    got = tp.grad(grad_w_norm)(params, 0.7)
    jitted = tp.jit(tp.grad(grad_w_norm))(params, 0.7)
    for key in ("w", "b"):
        want = finite_differences(lambda v: grad_w_norm({**params, key: v}, 0.7), params[key])
        np.testing.assert_allclose(np.asarray(got[key]), want, rtol=1e-6)
        np.testing.assert_allclose(np.asarray(jitted[key]), want, rtol=1e-6)


def two_args(x, y):
    return jnp.sum(x * jnp.exp(y)), {"aux": x}


def test_conventions_match_jax():
    x, y = np.arange(3, dtype=np.float32), np.ones(3, np.float32)
    (value, aux), (gx, gy) = tp.value_and_grad(two_args, argnums=(0, 1), has_aux=True)(x, y)
    np.testing.assert_allclose(value, np.sum(x * np.e), rtol=1e-6)
    np.testing.assert_allclose(gx, np.exp(y), rtol=1e-6)
    np.testing.assert_allclose(gy, x * np.e, rtol=1e-6)
    g, aux = tp.grad(two_args, has_aux=True)(x, y)
    np.testing.assert_allclose(g, np.exp(y), rtol=1e-6)
    out, vjp_fn, aux = tp.vjp(two_args, x, y, has_aux=True)
    cx, cy = vjp_fn(np.float32(2.0))
    np.testing.assert_allclose(cx, 2 * np.exp(y), rtol=1e-6)
    np.testing.assert_allclose(cy, 2 * x * np.e, rtol=1e-6)


def vector_out(x):
    return x * 2.0


def test_non_scalar_output_is_a_clear_error():
    with pytest.raises(tp.TranspileError, match="scalar"):
        tp.grad(vector_out)(np.ones(3, np.float32))


def int_input(n):
    return n * 2.0


def test_integer_inputs_are_rejected_like_jax():
    with pytest.raises(tp.TranspileError, match="int32"):
        tp.grad(int_input)(np.int32(3))


def uses_unknown(x):
    import math
    return math.fsum([x])


def mutates(x):
    x[0] = 1.0
    return jnp.sum(x)


def test_unsupported_code_errors_at_the_users_line():
    with pytest.raises(tp.TranspileError) as info:
        tp.grad(mutates)(np.ones(3, np.float32))
    assert info.value.file == __file__ and "x[0] = 1.0" in str(info.value)
    assert ".at[" in str(info.value)
    with pytest.raises(tp.TranspileError) as info:
        tp.grad(uses_unknown)(np.float32(1.0))
    assert info.value.file == __file__


def drops_derivative(x):
    return jnp.sum(x) + float(jnp.sum(x * x))


def test_converting_a_differentiated_value_to_python_is_an_error():
    with pytest.raises(tp.TranspileError, match="drop its derivative") as info:
        tp.grad(drops_derivative)(np.ones(3, np.float32))
    assert info.value.file == __file__


def sin_and_cos(x):
    return jnp.sin(x), jnp.cos(x)


def pick_one(x, flag):
    a, b = sin_and_cos(x)
    if flag:
        out = jnp.sum(a)
    else:
        out = jnp.sum(b)
    return out


def test_unpacked_pair_where_only_one_element_gets_a_cotangent():
    # Regression: the adjoint of `a, b = t` ran only when a's cotangent was not None.
    x = np.array([0.3, 0.5], np.float32)
    np.testing.assert_allclose(np.asarray(tp.grad(pick_one)(x, False)), -np.sin(x), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(tp.grad(pick_one)(x, True)), np.cos(x), rtol=1e-6)


def halve_until_small(x):
    y = x
    while jnp.abs(y) > 1e-3:  # the trip count depends on the value of x
        y = y * 0.5
    return y * x


def test_loop_with_a_data_dependent_trip_count():
    # Eagerly the loop runs on values (its tape is a Python list): x**2 * 0.5**10 at x=1.
    assert float(tp.grad(halve_until_small)(1.0)) == pytest.approx(2 * 0.5 ** 10)
    # Under jit the trip count is unknown while tracing: a clear error at the loop.
    with pytest.raises(tp.TranspileError, match="traced value") as info:
        tp.jit(tp.grad(halve_until_small))(1.0)
    assert info.value.file == __file__ and "while jnp.abs(y) > 1e-3" in str(info.value)


def test_second_process_reuses_generated_code(tmp_path):
    import os
    import subprocess
    import sys
    import textwrap
    module = tmp_path / "userprog.py"
    module.write_text(textwrap.dedent("""
        import transpiler.numpy as jnp
        def helper(w, x):
            return jnp.tanh(x @ w)
        def loss(w, x):
            return jnp.sum(helper(w, x) ** 2)
    """))
    script = textwrap.dedent("""
        import sys, numpy as np
        import transpiler as tp, transpiler.frontend as fe
        parsed = []
        original = fe.parse_function
        fe.parse_function = lambda fn: (parsed.append(fn.__name__), original(fn))[1]
        import userprog
        g = tp.grad(userprog.loss)(np.ones((3, 2), np.float32), np.ones((4, 3), np.float32))
        print(len(parsed), float(np.asarray(g).sum()))
    """)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, TRANSPILER_CACHE_DIR=str(tmp_path / "cache"),
               PYTHONPATH=os.pathsep.join([root, str(tmp_path)]))
    runs = [subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                           text=True) for _ in range(2)]
    assert all(r.returncode == 0 for r in runs), runs[0].stderr + runs[1].stderr
    (first_parses, first), (second_parses, second) = (r.stdout.split() for r in runs)
    assert int(first_parses) > 0 and int(second_parses) == 0 and first == second
    module.write_text(module.read_text().replace("** 2", "** 3"))  # a changed source
    third = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                           text=True)
    assert third.returncode == 0, third.stderr
    assert int(third.stdout.split()[0]) > 0 and third.stdout.split()[1] != first


def _unpacking_loss(p):
    a, (b, c) = p[0], p[1:]
    return a * b + jnp.sin(c) * a


def test_unpacking_an_array_gives_an_array_cotangent():
    """``a, b = params`` on an array: its cotangent is the parts stacked (it was a tuple,
    which broke every later use of the gradient)."""
    p = np.array([1.5, 2.0, 0.5], np.float32)
    a, b, c = (float(v) for v in p)
    want = np.array([b + np.sin(c), a, np.cos(c) * a], np.float32)
    for grad in (tp.grad(_unpacking_loss), tp.jit(tp.grad(_unpacking_loss))):
        got = grad(p)
        assert np.shape(got) == (3,)
        np.testing.assert_allclose(got, want, rtol=1e-6)
    hessian = np.array([[0, 1, np.cos(c)], [1, 0, 0], [np.cos(c), 0, -np.sin(c) * a]])
    np.testing.assert_allclose(tp.hessian(_unpacking_loss)(p), hessian, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(tp.jacrev(tp.grad(_unpacking_loss))(p), hessian, rtol=1e-5,
                               atol=1e-6)


def _array_of_values(x):
    m = jnp.array([[x, 2.0], [x * x, np.float32(3.0)]])
    return jnp.sum(m ** 2)


def _joined_with_constants(x):
    joined = jnp.concatenate([x, np.ones(2, np.float32), jnp.zeros(1), [4.0]])
    return jnp.sum(jnp.sin(joined) * jnp.arange(7.0))


def test_arrays_built_from_differentiated_values_and_constants():
    """``jnp.array([x, 2.0])`` and ``jnp.concatenate([x, numpy_constant])``: the derivative
    flows through the differentiated elements, the constants (NumPy arrays, Python and
    NumPy scalars) take none -- in every mode, eagerly and under jit."""
    x = 1.5
    want = 2 * x + 4 * x ** 3  # d/dx (x^2 + 4 + x^4 + 9)
    for got in (tp.grad(_array_of_values)(x), tp.jit(tp.grad(_array_of_values))(x),
                tp.jvp(_array_of_values, (x,), (1.0,))[1],
                tp.jacfwd(_array_of_values)(x)):
        np.testing.assert_allclose(float(got), want, rtol=1e-5)
    np.testing.assert_allclose(float(tp.hessian(_array_of_values)(x)), 2 + 12 * x ** 2,
                               rtol=1e-5)
    xs = np.arange(3, dtype=np.float32)
    np.testing.assert_allclose(np.asarray(tp.vmap(tp.grad(_array_of_values))(xs)),
                               2 * xs + 4 * xs ** 3, rtol=1e-5)
    v = np.array([0.3, -0.2, 0.9], np.float32)
    want = np.cos(v) * np.arange(3)  # the constants' positions 3..6 take no derivative
    for got in (tp.grad(_joined_with_constants)(v), tp.jit(tp.grad(_joined_with_constants))(v),
                tp.jacfwd(_joined_with_constants)(v)):
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-6)
