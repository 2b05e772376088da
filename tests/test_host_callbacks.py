"""``jax.pure_callback`` and ``jax.experimental.io_callback``: NumPy/SciPy code called on
the values of a computation, eagerly and under ``jit`` -- where the compiled module calls
an imported host function (``transpiler_host.NAME``, runtime/callbacks.py) each time it
reaches the call, in loops and branches too. Checked against the eager run, NumPy and,
where installed, JAX: results, dtypes (bool and ints cross as bytes and integers), pytrees,
untraced arguments, ``vmap`` by each ``vmap_method``, derivatives through ``custom_jvp``,
and the errors: a differentiated value flowing into a callback, a result of the wrong
shape or dtype, a batched call without a ``vmap_method``, a module loaded in a process
that cannot provide its host functions."""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pytest

import transpiler as jax
import transpiler.numpy as jnp
from transpiler import lax
from transpiler.experimental import io_callback

X = np.linspace(-1.0, 1.5, 6).astype(np.float32)


_erf = np.vectorize(math.erf)  # SciPy-free: NumPy code a callback runs


def host_erf(x):
    return _erf(x).astype(x.dtype)


def erf_program(x, scale):
    y = jnp.sin(x) * scale
    z = jax.pure_callback(host_erf, jax.ShapeDtypeStruct(y.shape, y.dtype), y)
    return z * 2 + x


@pytest.mark.parametrize("scale", [np.float32(0.5), 2.0, np.array(3.0, np.float32)])
def test_results_flow_back_into_the_computation_eager_and_jit(scale):
    want = _erf(np.sin(X) * np.float32(scale)) * 2 + X
    eager = erf_program(jnp.asarray(X), scale)
    jitted = jax.jit(erf_program)(X, scale)
    np.testing.assert_allclose(np.asarray(eager), want, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(np.asarray(jitted), want, rtol=1e-6, atol=1e-6)
    assert jitted.dtype == np.float32


def test_pytrees_bools_ints_untraced_arguments_and_keywords():
    def host(mask, values, offset, *, power):
        return {"flipped": np.logical_not(mask),
                "count": (mask.sum() + offset).astype(np.int32),
                "powered": (values ** power).astype(np.float32)}

    def f(x):
        shapes = {"flipped": jax.ShapeDtypeStruct(x.shape, bool),
                  "count": jax.ShapeDtypeStruct((), np.int32),
                  "powered": jax.ShapeDtypeStruct(x.shape, np.float32)}
        return jax.pure_callback(host, shapes, x > 0, x, np.int32(10), power=3)

    want = host(X > 0, X, 10, power=3)
    for out in (f(jnp.asarray(X)), jax.jit(f)(X)):
        assert set(out) == set(want)
        for key in want:
            np.testing.assert_allclose(np.asarray(out[key]), want[key], rtol=1e-6)
            assert np.asarray(out[key]).dtype == want[key].dtype, key


def test_called_each_iteration_inside_scan_and_only_in_the_branch_taken():
    seen = []

    def host(v):
        seen.append(float(v))
        return np.cos(v)

    def step(c, x):
        c = c + jax.pure_callback(host, jax.ShapeDtypeStruct((), np.float32), c * x)
        return c, c

    @jax.jit
    def f(xs):
        c, ys = lax.scan(step, jnp.float32(0.5), xs)
        return lax.cond(c > 0, lambda v: jax.pure_callback(host, v, v * 10),
                        lambda v: -v, c), ys

    out, ys = f(np.arange(4, dtype=np.float32))
    c, want = np.float32(0.5), []
    for x in np.arange(4, dtype=np.float32):
        c = c + np.cos(c * x)
        want.append(c)
    np.testing.assert_allclose(np.asarray(ys), want, rtol=1e-6)
    np.testing.assert_allclose(float(out), np.cos(want[-1] * 10), rtol=1e-5)
    assert len(seen) == 5  # four iterations, one branch


def test_a_callback_may_run_jitted_code_itself():
    inner = jax.jit(lambda v: jnp.sum(v * v))

    @jax.jit
    def f(x):
        total = jax.pure_callback(lambda v: np.asarray(inner(v)),
                                  jax.ShapeDtypeStruct((), np.float32), x)
        return total + 1

    assert float(f(np.ones(3, np.float32))) == 4.0


def test_io_callback_runs_in_program_order_each_call():
    log = []

    @jax.jit
    def f(x):
        io_callback(lambda v: log.append(("before", float(v))), None, x)
        y = x * 2
        io_callback(lambda v: log.append(("after", float(v))), None, y)
        return y

    f(1.0)
    f(3.0)
    assert log == [("before", 1.0), ("after", 2.0), ("before", 3.0), ("after", 6.0)]


def vmapped_program(method):
    def f(x, y):
        return jax.pure_callback(lambda a, b: (a * b + a.shape[0]).astype(np.float32),
                                 jax.ShapeDtypeStruct(x.shape, x.dtype), x, y,
                                 vmap_method=method)
    return f


@pytest.mark.parametrize("method", ["sequential", "expand_dims", "broadcast_all",
                                    "legacy_vectorized"])
def test_vmap_follows_the_vmap_method(method):
    xs, y = np.arange(6, dtype=np.float32).reshape(2, 3), np.arange(3, dtype=np.float32)
    # What the callback sees: one row (sequential), or the batch with y as (1, 3), (2, 3)
    # or (3,): a.shape[0] is 3 per element and 2 batched.
    want = xs * y + (3 if method == "sequential" else 2)
    f = jax.vmap(vmapped_program(method), in_axes=(0, None))
    np.testing.assert_allclose(np.asarray(f(xs, y)), want)
    np.testing.assert_allclose(np.asarray(jax.jit(f)(xs, y)), want)
    # batched along another axis: moved first
    g = jax.vmap(vmapped_program(method), in_axes=(1, None), out_axes=1)
    np.testing.assert_allclose(np.asarray(g(xs.T, y)), want.T)


@pytest.mark.parametrize("method", ["sequential", "expand_dims", "broadcast_all"])
def test_vmap_matches_jax(method):
    real = pytest.importorskip("jax")
    xs, y = np.arange(6, dtype=np.float32).reshape(2, 3), np.arange(3, dtype=np.float32)

    def program(api):
        def f(x, y):
            return api.pure_callback(lambda a, b: (a * b + a.ndim).astype(np.float32),
                                     api.ShapeDtypeStruct(x.shape, x.dtype), x, y,
                                     vmap_method=method)
        return api.vmap(f, in_axes=(0, None))

    np.testing.assert_allclose(np.asarray(program(jax)(xs, y)),
                               np.asarray(program(real)(xs, y)))


def test_derivatives_through_a_custom_jvp_around_the_callback():
    @jax.custom_jvp
    def erf(x):
        return jax.pure_callback(host_erf, jax.ShapeDtypeStruct(x.shape, x.dtype), x,
                                 vmap_method="expand_dims")

    @erf.defjvp
    def erf_jvp(primals, tangents):
        (x,), (x_dot,) = primals, tangents
        return erf(x), 2 / jnp.sqrt(jnp.pi) * jnp.exp(-x * x) * x_dot

    def loss(x):
        return jnp.sum(erf(x) ** 2)

    want = 2 * _erf(X) * 2 / np.sqrt(np.pi) * np.exp(-X * X)
    for g in (jax.grad(loss), jax.jit(jax.grad(loss))):
        np.testing.assert_allclose(np.asarray(g(X)), want, rtol=1e-5, atol=1e-6)
    rows = np.stack([X, X / 2])
    np.testing.assert_allclose(np.asarray(jax.vmap(jax.grad(loss))(rows)),
                               [want, 2 * _erf(X / 2) * 2 / np.sqrt(np.pi) *
                                np.exp(-X * X / 4)], rtol=1e-5, atol=1e-6)


def test_a_differentiated_value_flowing_into_a_callback_is_an_error():
    def f(x):
        return jnp.sum(jax.pure_callback(np.sin, jax.ShapeDtypeStruct(x.shape, x.dtype), x))

    for transform in (jax.grad, lambda f: jax.jit(jax.grad(f)),
                      lambda f: (lambda x: jax.jvp(f, (x,), (x,)))):
        with pytest.raises(ValueError, match="pure_callback is not differentiable") as err:
            transform(f)(X)
        assert "test_host_callbacks.py" in str(err.value)
        assert "custom_jvp" in str(err.value)


def test_constants_flowing_into_a_callback_differentiate_as_constants():
    c = np.arange(3, dtype=np.float32)

    def f(x):
        return x * jnp.sum(jax.pure_callback(np.sin, jax.ShapeDtypeStruct((3,), np.float32),
                                             c))

    assert float(jax.grad(f)(2.0)) == pytest.approx(np.sin(c).sum(), rel=1e-6)


def test_wrong_results_and_missing_vmap_method_are_errors_at_the_users_line():
    shape = jax.ShapeDtypeStruct((3,), np.float32)
    with pytest.raises(ValueError, match=r"shape \(2,\) for result 0.*promised \(3,\)"):
        jax.pure_callback(lambda v: v[:2], shape, X[:3])
    with pytest.raises(ValueError, match=r"shape \(2,\)"):
        jax.jit(lambda x: jax.pure_callback(lambda v: v[:2], shape, x))(X[:3])
    with pytest.raises(TypeError, match="returned int64 for result 0.*float32"):
        jax.pure_callback(lambda v: np.arange(3), shape, X[:3])
    with pytest.raises(TypeError, match="promised"):
        jax.pure_callback(lambda v: (v, v), shape, X[:3])
    with pytest.raises(TypeError, match="ShapeDtypeStruct"):
        jax.pure_callback(np.sin, 3, X)
    with pytest.raises(ValueError, match="vmap_method must be one of"):
        jax.pure_callback(np.sin, shape, X[:3], vmap_method="parallel")
    with pytest.raises(jax.TranspileError, match="needs a vmap_method") as err:
        jax.vmap(lambda x: jax.pure_callback(np.sin, x, x))(np.ones((2, 3), np.float32))
    assert "test_host_callbacks.py" in str(err.value)
    # a Python scalar result takes the promised dtype
    out = jax.pure_callback(lambda v: 1.5, jax.ShapeDtypeStruct((), np.float32), X)
    assert np.asarray(out).dtype == np.float32 and float(out) == 1.5


def test_a_module_built_ahead_of_time_names_the_host_functions_it_needs(tmp_path):
    path = tmp_path / "callback.vmfb"
    jax.jit(lambda x: jax.pure_callback(np.cos, x, x) + 1).lower(X).compile().save(path)
    result = subprocess.run(
        [sys.executable, "-c", "import runtime, numpy as np\n"
         f"runtime.load({str(path)!r}).main(np.ones(6, np.float32))"],
        capture_output=True, text=True, timeout=120)
    assert result.returncode != 0
    assert "transpiler_host" in result.stderr
    assert "pure_callback" in result.stderr and "one process with jit" in result.stderr


def test_a_process_that_used_callbacks_exits_cleanly():
    code = ("import numpy as np, transpiler as jax\n"
            "f = jax.jit(lambda x: jax.pure_callback(np.cos, x, x) * 2)\n"
            "print(float(f(np.float32(0))))\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "2.0"
    assert "leaked" not in result.stderr
