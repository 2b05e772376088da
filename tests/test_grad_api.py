"""grad / value_and_grad / vjp API: conventions, higher order, errors at the user's line."""

from __future__ import annotations

import numpy as np
import pytest

import transpiler as tp
import transpiler.numpy as jnp


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
