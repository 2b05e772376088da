"""Reductions: JAX's dtype rules, errors at the user's line, and the shape of the lowering."""

from __future__ import annotations

import os
import re

import numpy as np
import pytest

import transpiler as tp
import transpiler.numpy as jnp
from transpiler.errors import ShapeError, TranspileError

HERE = os.path.basename(__file__)
rng = np.random.default_rng(0)
INPUTS = {
    "int32": rng.integers(-5, 6, (3, 4)).astype(np.int32),
    "int8": rng.integers(-5, 6, (3, 4)).astype(np.int8),
    "uint8": rng.integers(0, 6, (3, 4)).astype(np.uint8),
    "bool": rng.integers(0, 2, (3, 4)).astype(bool),
    "float16": rng.uniform(-2, 2, (3, 4)).astype(np.float16),
    "float32": rng.uniform(-2, 2, (3, 4)).astype(np.float32),
}
FUNCTIONS = ["sum", "prod", "mean", "max", "argmax", "argmin", "var", "std", "cumsum",
             "cumprod", "any", "count_nonzero", "nansum", "nanmax", "ptp"]
JIT_FUNCTIONS = ["sum", "mean", "argmax", "var", "cumsum"]  # jit: one compile for all inputs


def _calls(x, names):
    """(label, fn) for each function and axis; JAX rejects ptp on bool (tested below)."""
    return [(f"{name}(axis={axis}) on {x.dtype}", name, axis) for name in names
            for axis in (None, 1) if not (name == "ptp" and x.dtype == bool)]


def _run(module, x, names):
    return [getattr(module, name)(x, axis=axis) for _, name, axis in _calls(x, names)]


def _check(label, got, want, kind):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype, f"{label}: dtype {got.dtype}, JAX {want.dtype}"
    assert got.shape == want.shape, f"{label}: shape {got.shape}, JAX {want.shape}"
    tol = 2e-2 if kind == "float16" else 1e-5
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=tol,
                               atol=tol, err_msg=label)


def test_dtypes_and_values_match_jax_eager_and_jit():
    jax = pytest.importorskip("jax")
    staged = tp.jit(lambda xs: [_run(jnp, x, JIT_FUNCTIONS) for x in xs])(list(INPUTS.values()))
    for (kind, x), got_jit in zip(INPUTS.items(), staged):
        want = jax.jit(lambda a: _run(jax.numpy, a, FUNCTIONS))(x)
        got = _run(jnp, x, FUNCTIONS)
        for (label, name, _), g, w in zip(_calls(x, FUNCTIONS), got, want):
            _check(label, g, w, kind)
        want_jit = [w for (_, name, _), w in zip(_calls(x, FUNCTIONS), want)
                    if name in JIT_FUNCTIONS]
        for (label, _, _), j, w in zip(_calls(x, JIT_FUNCTIONS), got_jit, want_jit):
            _check("jit " + label, j, w, kind)


def test_keepdims_negative_and_tuple_axes_match_numpy():
    x = rng.uniform(-1, 1, (2, 3, 4)).astype(np.float32)
    for axis in (None, 0, -1, (0, 2), (-1, -3)):
        np.testing.assert_allclose(np.asarray(jnp.sum(x, axis=axis, keepdims=True)),
                                   np.sum(x, axis=axis, keepdims=True), rtol=1e-5)
        assert jnp.max(x, axis=axis, keepdims=True).shape == \
            np.max(x, axis=axis, keepdims=True).shape
    assert jnp.argmax(x, axis=-2, keepdims=True).shape == (2, 1, 4)
    assert jnp.argmin(x, keepdims=True).shape == (1, 1, 1)


def test_axis_errors_name_the_users_line():
    x = np.ones((2, 3), np.float32)
    for call in (lambda: jnp.sum(x, axis=2), lambda: jnp.mean(x, axis=(0, -3)),
                 lambda: jnp.argmax(x, axis=5), lambda: jnp.cumsum(x, axis=-4),
                 lambda: jnp.max(x, axis=(1, 1))):
        with pytest.raises(ShapeError) as info:
            call()
        assert HERE in str(info.value), str(info.value)
    with pytest.raises(TranspileError) as info:
        tp.jit(lambda a: jnp.sum(a, axis=7))(x)
    assert HERE in str(info.value) and "axis 7" in str(info.value)


def test_empty_reductions_like_numpy():
    empty = np.zeros((0, 3), np.float32)
    with pytest.raises(ValueError, match="initial"):
        jnp.max(empty, axis=0)
    with pytest.raises(ValueError, match="empty"):
        jnp.argmax(empty)
    np.testing.assert_array_equal(np.asarray(jnp.max(empty, axis=0, initial=-5.0)), [-5.0] * 3)
    np.testing.assert_array_equal(np.asarray(jnp.sum(empty, axis=0)), [0.0] * 3)
    with pytest.raises(ValueError, match="initial"):
        jnp.min(np.ones(3, np.float32), where=np.array([True, False, True]))


def test_nan_handling():
    x = np.array([[1.0, np.nan, 7.0, np.nan], [np.nan, np.nan, np.nan, np.nan],
                  [3.0, 3.0, -1.0, 3.0]], np.float32)

    def f(a):
        return [jnp.argmax(a, axis=1), jnp.argmin(a, axis=1), jnp.max(a, axis=1),
                jnp.nanmax(a, axis=1), jnp.nanmin(a, axis=1), jnp.nanargmax(a[::2], axis=1)]

    want = [np.argmax(x, 1), np.argmin(x, 1), np.max(x, 1), np.array([7.0, np.nan, 3.0]),
            np.array([1.0, np.nan, -1.0]), np.array([2, 0])]
    for got in (f(x), tp.jit(f)(x)):
        for g, w in zip(got, want):
            np.testing.assert_array_equal(np.asarray(g), w.astype(np.asarray(g).dtype))


def test_large_sum_is_a_tree_of_blocks_and_accurate():
    big = rng.uniform(0, 1, 1_000_000).astype(np.float32)
    fn = tp.jit(lambda a: jnp.sum(a))
    text = fn.lower(big).as_text()
    # blocks of 80 (the largest of 128, 112, 96, 80, 64 dividing 10^6), then the 12500 sums
    # padded to 98 blocks of 128, then one reduce of 98
    assert len(re.findall(r"stablehlo\.reduce\(", text)) == 3, text
    assert "tensor<12500x80xf32>" in text and "tensor<98x128xf32>" in text, text
    small = tp.jit(lambda a: jnp.sum(a)).lower(big[:128]).as_text()
    assert len(re.findall(r"stablehlo\.reduce\(", small)) == 1, small
    total = float(np.asarray(fn(big)))
    np.testing.assert_allclose(total, big.astype(np.float64).sum(), rtol=1e-6)


@pytest.mark.parametrize("n", [10**5, 10**6, 10**7])
def test_float32_sums_are_accurate(n):
    """Within a few ulps times log2(n) of the exact sum (the bound of a pairwise sum, as
    NumPy's), relative to the sum of magnitudes: a sequential float32 sum of 10^7 values of
    0.1 was off by 6e-3."""
    ones = np.full(n, 0.1, np.float32)
    values = rng.standard_normal(n).astype(np.float32) + 0.5
    fn = tp.jit(lambda a: (jnp.sum(a), jnp.mean(a.reshape(100, -1), axis=1)))
    for x in (ones, values):
        total, rows = fn(x)
        exact = x.astype(np.float64)
        bound = 2 * 2.0**-24 * np.log2(n)
        assert abs(float(np.asarray(total)) - exact.sum()) <= bound * np.abs(exact).sum()
        row_error = np.abs(np.asarray(rows) - exact.reshape(100, -1).mean(axis=1))
        assert np.all(row_error <= bound * np.abs(exact).reshape(100, -1).mean(axis=1))


def test_array_methods_forward_under_jit():
    x = rng.uniform(-1, 1, (3, 4)).astype(np.float32)

    def f(a):
        return [a.sum(), a.mean(axis=0), a.max(1), a.min(keepdims=True), a.prod(axis=-1),
                a.argmax(), a.argmin(axis=0), a.cumsum(axis=1), a.var(), a.std(axis=1),
                (a > 0).any(axis=0), (a > 0).all()]

    want = [x.sum(), x.mean(0), x.max(1), x.min(keepdims=True), x.prod(-1), x.argmax(),
            x.argmin(0), x.cumsum(1), x.var(), x.std(1), (x > 0).any(0), (x > 0).all()]
    for got in (f(jnp.asarray(x)), tp.jit(f)(x)):
        for g, w in zip(got, want):
            np.testing.assert_allclose(np.asarray(g), w, rtol=1e-5, atol=1e-6)


def test_ptp_of_bool_is_a_type_error_like_jax():
    with pytest.raises(TypeError, match="boolean"):
        jnp.ptp(np.array([True, False]))


def test_out_argument_is_rejected_clearly():
    with pytest.raises(NotImplementedError, match="immutable"):
        jnp.sum(np.ones(3, np.float32), out=np.zeros((), np.float32))


def test_reductions_of_python_scalars_are_strongly_typed_like_jax():
    for result in (jnp.sum(2.0), jnp.max(2.0), jnp.mean(2), jnp.cumsum(2.0)):
        assert not result.aval.weak_type
