"""``lax.conv_general_dilated_local`` (a locally connected layer: one kernel per output
position) against JAX's, for three layouts, strides and paddings: values eagerly and under
``jit``, gradients of both operands, and the error for a kernel of the wrong shape."""

from __future__ import annotations

import numpy as np
import pytest

import transpiler as jax
import transpiler.numpy as jnp
from transpiler import lax

CASES = [(("NCHW", "OIHW", "NCHW"), (2, 3, 7, 6), (3, 2), (1, 1), "VALID"),
         (("NHWC", "HWIO", "NHWC"), (2, 7, 6, 3), (3, 3), (2, 1), "SAME"),
         (("NCH", "OIH", "NCH"), (1, 2, 9), (4,), (2,), [(1, 2)])]


def _operands(numbers, lhs_shape, filter_shape, strides, padding, seed=0):
    rng = np.random.default_rng(seed)
    lhs = rng.standard_normal(lhs_shape).astype(np.float32)
    patches = lax.conv_general_dilated_patches(lhs, filter_shape, strides, padding,
                                               dimension_numbers=numbers)
    _, rhs_spec, out_spec = lax.conv_dimension_numbers(lhs.shape, (1, 1) + filter_shape,
                                                       numbers)
    shape = [0] * len(lhs_shape)
    shape[rhs_spec[0]], shape[rhs_spec[1]] = 4, patches.shape[out_spec[1]]
    for i, d in enumerate(rhs_spec[2:]):
        shape[d] = patches.shape[out_spec[2 + i]]
    return lhs, rng.standard_normal(shape).astype(np.float32)


def _local(numbers, filter_shape, strides, padding, api=lax):
    def f(lhs, rhs):
        return api.conv_general_dilated_local(lhs, rhs, strides, padding, filter_shape,
                                              dimension_numbers=numbers)
    return f


def _reference(lhs, rhs, numbers, filter_shape, strides, padding):
    """Per output position, the patch there times that position's own kernel (NumPy)."""
    patches = np.asarray(lax.conv_general_dilated_patches(
        lhs, filter_shape, strides, padding, dimension_numbers=numbers))
    _, rhs_spec, out_spec = lax.conv_dimension_numbers(lhs.shape, (1, 1) + filter_shape,
                                                       numbers)
    p = np.moveaxis(patches, (out_spec[0], out_spec[1]), (0, 1))     # N, F, spatial...
    k = np.moveaxis(rhs, (rhs_spec[0], rhs_spec[1]), (0, 1))         # O, F, spatial...
    out = np.einsum("nf...,of...->no...", p, k)
    return np.moveaxis(out, (0, 1), (out_spec[0], out_spec[1]))


@pytest.mark.parametrize("case", CASES, ids=[c[0][0] for c in CASES])
def test_values_and_gradients(case):
    numbers, lhs_shape, filter_shape, strides, padding = case
    lhs, rhs = _operands(*case)
    f = _local(numbers, filter_shape, strides, padding)
    want = _reference(lhs, rhs, numbers, filter_shape, strides, padding)
    np.testing.assert_allclose(np.asarray(f(lhs, rhs)), want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.asarray(jax.jit(f)(lhs, rhs)), want, rtol=1e-5, atol=1e-5)
    # the loss is quadratic in each operand: its gradient is 2 * (d out / d operand)^T out
    grads = jax.grad(lambda a, b: jnp.sum(f(a, b) ** 2), (0, 1))(lhs, rhs)
    eps, rng = 1.0, np.random.default_rng(1)  # (exact for a quadratic: no step error)
    for i, (g, x) in enumerate(zip(grads, (lhs, rhs))):
        direction = rng.standard_normal(x.shape).astype(np.float32)
        moved = [lhs, rhs]

        def loss(t):
            moved[i] = (x + t * direction).astype(np.float64)
            return float(np.sum(_reference(moved[0], moved[1], numbers, filter_shape,
                                           strides, padding) ** 2))
        numeric = (loss(eps) - loss(-eps)) / (2 * eps)
        np.testing.assert_allclose(float(np.sum(np.asarray(g) * direction)), numeric,
                                   rtol=2e-3)


@pytest.mark.parametrize("case", CASES, ids=[c[0][0] for c in CASES])
def test_against_jax(case):
    real = pytest.importorskip("jax")
    numbers, lhs_shape, filter_shape, strides, padding = case
    lhs, rhs = _operands(*case)
    ours, theirs = (_local(numbers, filter_shape, strides, padding, api)
                    for api in (lax, real.lax))
    np.testing.assert_allclose(np.asarray(ours(lhs, rhs)), np.asarray(theirs(lhs, rhs)),
                               rtol=1e-5, atol=1e-5)
    g_ours = jax.grad(lambda a, b: jnp.sum(ours(a, b) ** 2), (0, 1))(lhs, rhs)
    g_theirs = real.grad(lambda a, b: real.numpy.sum(theirs(a, b) ** 2), (0, 1))(lhs, rhs)
    for a, b in zip(g_ours, g_theirs):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-4, atol=1e-4)


def test_a_kernel_of_the_wrong_shape_is_an_error():
    numbers, lhs_shape, filter_shape, strides, padding = CASES[0]
    lhs, rhs = _operands(*CASES[0])
    with pytest.raises(ValueError, match="input-feature dim must be 18") as info:
        _local(numbers, filter_shape, strides, padding)(lhs, rhs[:, :5])
    assert "test_conv_local.py" in str(info.value)
