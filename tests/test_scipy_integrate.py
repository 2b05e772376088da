"""``transpiler.scipy.integrate.trapezoid`` and ``jnp.trapezoid`` against NumPy's
trapezoid (float64, an independent oracle) and JAX's (float32 values and dtypes): sample
points `x` 1-d or full, a spacing `dx` scalar or per row, `axis`, integer inputs; eagerly
and under jit; gradients against central differences and JAX's."""

from __future__ import annotations

import numpy as np
import pytest

import transpiler as tp
import transpiler.numpy as jnp
from transpiler.scipy.integrate import trapezoid

rng = np.random.default_rng(7)
Y = rng.normal(size=(3, 6)).astype(np.float32)
X_1D = np.sort(rng.uniform(0, 2, 6)).astype(np.float32)
X_2D = np.sort(rng.uniform(0, 2, (3, 6)), axis=1).astype(np.float32)
DX_ROWS = np.array([[0.5], [1.0], [2.0]], np.float32)

# (name, y, keyword arguments): each call is trapezoid(y, **kwargs)
CASES = [
    ("1-d", Y[0], {}),
    ("1-d x", Y[0], {"x": X_1D}),
    ("dx", Y, {"dx": 0.25}),
    ("dx per row", Y, {"dx": DX_ROWS}),
    ("x 1-d, 2-d y", Y, {"x": X_1D}),
    ("x 2-d", Y, {"x": X_2D}),
    ("axis 0", Y.T, {"axis": 0}),
    ("axis 0, x 2-d", Y.T, {"x": X_2D.T, "axis": 0}),
    ("axis 0, dx", Y.T, {"dx": 3.0, "axis": 0}),
    ("two points", Y[:, :2], {"x": X_1D[:2]}),
    ("3-d, axis 1", rng.normal(size=(2, 5, 3)).astype(np.float32), {"axis": 1}),
    ("integers", np.arange(7), {}),
]


def _numpy_trapezoid(y, x=None, dx=1.0, axis=-1):
    wide = lambda a: np.asarray(a, np.float64)
    if x is not None:
        return np.trapezoid(wide(y), wide(x), axis=axis)
    return np.trapezoid(wide(y), dx=wide(dx), axis=axis)


@pytest.mark.parametrize("name,y,kwargs", CASES, ids=[c[0] for c in CASES])
def test_trapezoid_matches_numpy(name, y, kwargs):
    want = _numpy_trapezoid(y, **kwargs)
    for label, fn in (("eager", trapezoid), ("jit", tp.jit(trapezoid, static_argnames="axis"))):
        got = fn(y, **kwargs)
        assert np.asarray(got).dtype == np.float32, (name, label)
        np.testing.assert_allclose(np.asarray(got), want, rtol=2e-6, atol=2e-6,
                                   err_msg=f"{name} {label}")


@pytest.mark.parametrize("name,y,kwargs", CASES, ids=[c[0] for c in CASES])
def test_trapezoid_matches_jax(name, y, kwargs):
    jax = pytest.importorskip("jax")
    want = jax.scipy.integrate.trapezoid(y, **kwargs)
    got = jnp.trapezoid(y, **kwargs)
    assert np.asarray(got).dtype == want.dtype and np.shape(got) == want.shape, name
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=2e-6, atol=2e-6,
                               err_msg=name)


def test_jnp_and_scipy_names_are_one_function():
    assert tp.scipy.integrate.trapezoid is jnp.trapezoid is trapezoid


def _loss(y, x, dx):
    return jnp.sum(trapezoid(jnp.sin(y), x) ** 2) + jnp.sum(trapezoid(y * y, dx=dx, axis=0))


def test_gradients_match_central_differences(monkeypatch):
    monkeypatch.setattr(tp.config, "enable_x64", True)
    y, x, dx = Y.astype(np.float64), X_2D.astype(np.float64), 0.3
    grads = tp.grad(_loss, argnums=(0, 1, 2))(y, x, dx)
    jitted = tp.jit(tp.grad(_loss, argnums=(0, 1, 2)))(y, x, dx)
    eps = 1e-6
    for k, arg in enumerate((y, x, dx)):
        direction = np.random.default_rng(k).normal(size=np.shape(arg))
        moved = [list((y, x, dx)) for _ in range(2)]
        moved[0][k], moved[1][k] = arg + eps * direction, arg - eps * direction
        central = (float(_loss(*moved[0])) - float(_loss(*moved[1]))) / (2 * eps)
        for label, g in (("eager", grads[k]), ("jit", jitted[k])):
            np.testing.assert_allclose(np.sum(np.asarray(g) * direction), central, rtol=1e-6,
                                       atol=1e-8, err_msg=f"argument {k} {label}")


def test_gradients_match_jax():
    jax = pytest.importorskip("jax")
    jjnp = jax.numpy

    def theirs(y, x, dx):
        integrate = jax.scipy.integrate.trapezoid
        return jjnp.sum(integrate(jjnp.sin(y), x) ** 2) + jjnp.sum(integrate(y * y, dx=dx, axis=0))

    want = jax.grad(theirs, argnums=(0, 1, 2))(Y, X_2D, 0.3)
    got = tp.grad(_loss, argnums=(0, 1, 2))(Y, X_2D, 0.3)
    for k in range(3):
        np.testing.assert_allclose(np.asarray(got[k]), np.asarray(want[k]), rtol=1e-5,
                                   atol=1e-6, err_msg=f"argument {k}")
