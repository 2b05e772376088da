"""Behaviour of products beyond the registry cases: errors, dtype rules vs JAX, a large matmul."""

from __future__ import annotations

import numpy as np
import pytest

import transpiler as tp
import transpiler.numpy as jnp
from transpiler.errors import ShapeError
from transpiler.primitives.dot import dot_general


def _line_of(marker: str) -> int:
    with open(__file__) as f:
        return next(i for i, line in enumerate(f, 1) if marker in line)


# --- errors name the shapes and the user's line -------------------------------------------

def test_matmul_shape_error_names_both_shapes_and_line():
    a, b = np.ones((3, 4), np.float32), np.ones((5, 6), np.float32)
    with pytest.raises(ShapeError) as info:
        jnp.matmul(a, b)  # MATMUL-ERROR
    message = str(info.value)
    assert "matmul: contracting dimensions differ: lhs float32[3,4] dim 1 (4) vs rhs " \
        "float32[5,6] dim 0 (5)" in message
    assert f"test_products.py:{_line_of('# MATMUL-ERROR')}" in message


def test_matmul_operator_error_under_jit():
    def f(a, b):
        return a @ b  # AT-ERROR

    with pytest.raises(ShapeError) as info:
        tp.jit(f)(np.ones((2, 3), np.float32), np.ones((2, 3), np.float32))
    assert "float32[2,3] dim 1 (3) vs rhs float32[2,3] dim 0 (2)" in str(info.value)
    assert f"test_products.py:{_line_of('# AT-ERROR')}" in str(info.value)


def test_matmul_batch_mismatch_and_scalars():
    with pytest.raises(ShapeError, match=r"matmul: shapes \[2\] and \[3\] cannot be broadcast"):
        jnp.matmul(np.ones((2, 3, 4)), np.ones((3, 4, 5)))
    with pytest.raises(ShapeError, match="at least 1 dimension"):
        jnp.matmul(np.float32(2), np.ones(3))


def test_dot_general_errors():
    a, b = np.ones((2, 3, 4), np.float32), np.ones((3, 4, 5), np.float32)
    with pytest.raises(ShapeError, match=r"batch dimensions differ: lhs float32\[2,3,4\] dim 0 "
                                         r"\(2\) vs rhs float32\[3,4,5\] dim 0 \(3\)"):
        dot_general(a, b, dimension_numbers=(((2,), (1,)), ((0,), (0,))))
    with pytest.raises(ShapeError, match="out of range"):
        dot_general(a, b, dimension_numbers=(((3,), (1,)), ((), ())))
    with pytest.raises(ShapeError, match="same number of contracting dimensions"):
        dot_general(a, b, dimension_numbers=(((1, 2), (1,)), ((), ())))


def test_einsum_errors():
    m = np.ones((3, 4), np.float32)
    with pytest.raises(ShapeError, match="einsum: subscript 'j' has incompatible sizes"):
        jnp.einsum("ij,jk->ik", m, m)
    with pytest.raises(ShapeError, match="name 2 operands but 1 were given"):
        jnp.einsum("ij,jk", m)
    with pytest.raises(ShapeError, match="output subscript 'z' does not appear"):
        jnp.einsum("ij->z", m)
    with pytest.raises(ShapeError, match="do not match operand float32\\[3,4\\]"):
        jnp.einsum("ijk->i", m)


def test_tensordot_and_vdot_errors():
    with pytest.raises(ShapeError, match="tensordot: contracting dimensions differ"):
        jnp.tensordot(np.ones((2, 3)), np.ones((4, 2)), axes=1)
    with pytest.raises(ShapeError, match="vdot: operands have different sizes"):
        jnp.vdot(np.ones(3), np.ones(4))


def test_norm_orders_from_singular_values():
    m = np.arange(12, dtype=np.float32).reshape(3, 4) / 7
    for order in ("nuc", 2, -2):
        np.testing.assert_allclose(jnp.linalg.norm(m, order), np.linalg.norm(m, order),
                                   rtol=1e-5, atol=1e-5)


# --- dtype rules vs JAX -------------------------------------------------------------------

DTYPE_PAIRS = [(np.float32, np.float32), (np.int32, np.int32), (np.int32, np.float32),
               (np.float16, np.float32), (np.float16, np.float16), ("bfloat16", "bfloat16"),
               (np.int8, np.int8), (np.int8, np.int32), (np.uint8, np.int8), (bool, bool),
               (bool, np.int32), (np.float16, "bfloat16")]


def _make(dtype, shape, jnp_module):
    dtype = jnp_module.bfloat16 if dtype == "bfloat16" else dtype
    return np.ones(shape).astype(dtype)


def test_dtypes_match_jax():
    jax_jnp = pytest.importorskip("jax.numpy")
    for left, right in DTYPE_PAIRS:
        a, b = _make(left, (2, 3), jnp), _make(right, (3, 2), jnp)
        a_ref, b_ref = _make(left, (2, 3), jax_jnp), _make(right, (3, 2), jax_jnp)
        for name in ("matmul", "dot", "inner", "tensordot", "outer", "kron"):
            fn, ref = getattr(jnp, name), getattr(jax_jnp, name)
            rhs, rhs_ref = (b.T, b_ref.T) if name == "inner" else (b, b_ref)
            extra = (1,) if name == "tensordot" else ()
            try:
                want = ref(a_ref, rhs_ref, *extra)
            except TypeError:  # e.g. jnp.kron of bools: JAX rejects it, we need not match
                continue
            got = fn(a, rhs, *extra)
            assert got.dtype == want.dtype, f"{name}({left}, {right}): {got.dtype} != {want.dtype}"
            assert got.shape == want.shape
            np.testing.assert_allclose(np.asarray(got).astype(np.float64),
                                       np.asarray(want).astype(np.float64))
        got = jnp.einsum("ij,jk->ik", a, b)
        want = jax_jnp.einsum("ij,jk->ik", a_ref, b_ref)
        assert got.dtype == want.dtype, f"einsum({left}, {right}): {got.dtype} != {want.dtype}"
    for dtype in (np.int32, np.int8, bool, np.float16):
        x = np.ones((3, 3)).astype(dtype)
        assert jnp.trace(x).dtype == jax_jnp.trace(x).dtype, dtype
        assert jnp.linalg.norm(x).dtype == jax_jnp.linalg.norm(x).dtype, dtype


def test_weak_scalar_dot():
    x = np.ones(3, np.float16)
    assert jnp.dot(x, 2.0).dtype == np.float16
    assert jnp.dot(2, 3).dtype == jnp.int32


def test_preferred_element_type():
    a = np.ones((2, 3), jnp.bfloat16)
    out = jnp.matmul(a, a.T, preferred_element_type=np.float32)
    assert out.dtype == np.float32
    np.testing.assert_allclose(np.asarray(out), np.full((2, 2), 3.0))
    i8 = np.full((2, 200), 100, np.int8)
    out = dot_general(i8, i8, dimension_numbers=(((1,), (1,)), ((), ())),
                      preferred_element_type=np.int32)
    assert out.dtype == np.int32 and int(np.asarray(out)[0, 0]) == 100 * 100 * 200


# --- one jitted module: large matmul plus the composites under jit -----------------------

def test_large_matmul_and_composites_under_jit():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((256, 256)).astype(np.float32)
    b = rng.standard_normal((256, 256)).astype(np.float32)
    v = rng.standard_normal(256).astype(np.float32)
    bools = rng.integers(0, 2, (4, 4)).astype(bool)

    def f(a, b, v, bools):
        return [a @ b, jnp.einsum("ij,j->i", a, v), jnp.linalg.norm(a, axis=0),
                jnp.matmul(bools, bools), jnp.trace(a), jnp.outer(v, b)]

    got = tp.jit(f)(a, b, v, bools)
    np.testing.assert_allclose(np.asarray(got[0]), a @ b, rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(np.asarray(got[1]), a @ v, rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(np.asarray(got[2]), np.linalg.norm(a, axis=0), rtol=1e-5)
    assert got[3].dtype == np.bool_
    np.testing.assert_array_equal(np.asarray(got[3]), np.matmul(bools, bools))
    np.testing.assert_allclose(np.asarray(got[4]), np.trace(a), rtol=1e-4)
    np.testing.assert_allclose(np.asarray(got[5]), np.outer(v, b), rtol=1e-6)
