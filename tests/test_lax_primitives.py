"""JAX's primitive objects in `transpiler.lax` (lax/primitive_objects.py): each binds and
gives the value of the lax function of the same operation, eagerly and under jit."""

import ml_dtypes
import numpy as np
import pytest

import transpiler
from transpiler import lax
from transpiler.lax import primitive_objects
from transpiler.primitives.core import Primitive

X = np.array([[0.5, -1.25, 2.0], [3.0, 0.25, -0.75]], np.float32)
Y = np.array([[1.5, 2.0, -0.5], [0.75, 4.0, 1.25]], np.float32)
P = np.abs(X) + 0.5
I = np.array([[3, -5, 7], [12, 0, -1]], np.int32)
J = np.array([[1, 2, 3], [4, 1, 2]], np.int32)

# (primitive, its params, the lax function's call of the same operation, operands)
CASES = {
    "add_p": (lax.add_p, {}, lax.add, (X, Y)),
    "sub_p": (lax.sub_p, {}, lax.sub, (X, Y)),
    "mul_p": (lax.mul_p, {}, lax.mul, (X, Y)),
    "div_p": (lax.div_p, {}, lax.div, (X, Y)),
    "max_p": (lax.max_p, {}, lax.max, (X, Y)),
    "min_p": (lax.min_p, {}, lax.min, (X, Y)),
    "pow_p": (lax.pow_p, {}, lax.pow, (P, Y)),
    "atan2_p": (lax.atan2_p, {}, lax.atan2, (X, Y)),
    "lt_p": (lax.lt_p, {}, lax.lt, (X, Y)),
    "ge_p": (lax.ge_p, {}, lax.ge, (X, Y)),
    "eq_p": (lax.eq_p, {}, lax.eq, (X, X)),
    "neg_p": (lax.neg_p, {}, lax.neg, (X,)),
    "abs_p": (lax.abs_p, {}, lax.abs, (X,)),
    "sign_p": (lax.sign_p, {}, lax.sign, (X,)),
    "floor_p": (lax.floor_p, {}, lax.floor, (X,)),
    "is_finite_p": (lax.is_finite_p, {}, lax.is_finite, (X,)),
    "exp_p": (lax.exp_p, {}, lax.exp, (X,)),
    "log_p": (lax.log_p, {}, lax.log, (P,)),
    "sqrt_p": (lax.sqrt_p, {}, lax.sqrt, (P,)),
    "sin_p": (lax.sin_p, {}, lax.sin, (X,)),
    "tanh_p": (lax.tanh_p, {}, lax.tanh, (X,)),
    "logistic_p": (lax.logistic_p, {}, lax.logistic, (X,)),
    "lgamma_p": (lax.lgamma_p, {}, lax.lgamma, (P,)),
    "digamma_p": (lax.digamma_p, {}, lax.digamma, (P,)),
    "igamma_p": (lax.igamma_p, {}, lax.igamma, (P, P + 1)),
    "bessel_i0e_p": (lax.bessel_i0e_p, {}, lax.bessel_i0e, (X,)),
    "and_p": (lax.and_p, {}, lax.bitwise_and, (I, J)),
    "or_p": (lax.or_p, {}, lax.bitwise_or, (I, J)),
    "xor_p": (lax.xor_p, {}, lax.bitwise_xor, (I, J)),
    "not_p": (lax.not_p, {}, lax.bitwise_not, (I,)),
    "shift_left_p": (lax.shift_left_p, {}, lax.shift_left, (I, J)),
    "convert_element_type_p": (lax.convert_element_type_p, {"dtype": np.dtype(np.int32)},
                               lambda x: lax.convert_element_type(x, np.int32), (X,)),
    "reduce_sum_p": (lax.reduce_sum_p, {"axes": (1,)}, lambda x: lax.reduce_sum(x, (1,)),
                     (X,)),
    "reduce_max_p": (lax.reduce_max_p, {"axes": (0,)}, lambda x: lax.reduce_max(x, (0,)),
                     (X,)),
    "reduce_prod_p": (lax.reduce_prod_p, {"axes": (0, 1)},
                      lambda x: lax.reduce_prod(x, (0, 1)), (X,)),
    "cumsum_p": (lax.cumsum_p, {"axis": 1, "reverse": True},
                 lambda x: lax.cumsum(x, 1, reverse=True), (X,)),
    "argmax_p": (lax.argmax_p, {"axis": 1, "index_dtype": np.dtype(np.int32)},
                 lambda x: lax.argmax(x, 1, np.int32), (X,)),
    "transpose_p": (lax.transpose_p, {"permutation": (1, 0)},
                    lambda x: lax.transpose(x, (1, 0)), (X,)),
    "reshape_p": (lax.reshape_p, {"new_sizes": (3, 2)}, lambda x: lax.reshape(x, (3, 2)),
                  (X,)),
    "rev_p": (lax.rev_p, {"dimensions": (0,)}, lambda x: lax.rev(x, (0,)), (X,)),
    "slice_p": (lax.slice_p, {"start_indices": (0, 1), "limit_indices": (2, 3),
                              "strides": None},
                lambda x: lax.slice(x, (0, 1), (2, 3)), (X,)),
    "concatenate_p": (lax.concatenate_p, {"axis": 0},
                      lambda x, y: lax.concatenate([x, y], 0), (X, Y)),
    "dot_general_p": (lax.dot_general_p,
                      {"dimension_numbers": (((1,), (1,)), ((), ()))},
                      lambda x, y: lax.dot_general(x, y, (((1,), (1,)), ((), ()))), (X, Y)),
    "stop_gradient_p": (lax.stop_gradient_p, {}, lax.stop_gradient, (X,)),
}


def test_every_primitive_object_is_a_primitive_with_bind():
    names = primitive_objects.__all__
    assert len(names) > 60
    for name in names:
        prim = getattr(lax, name)
        assert isinstance(prim, Primitive), name
        assert callable(prim.bind)


def test_no_fake_control_flow_primitives():
    for name in ("cond_p", "while_p", "scan_p", "rem_p", "round_p", "clamp_p"):
        assert not hasattr(lax, name)


@pytest.mark.parametrize("name", sorted(CASES))
def test_bind_matches_lax_function(name):
    prim, params, fn, args = CASES[name]
    want = np.asarray(fn(*args))
    got = prim.bind(*args, **params)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6)
    assert np.asarray(got).dtype == want.dtype
    jitted = transpiler.jit(lambda *xs: prim.bind(*xs, **params))(*args)
    np.testing.assert_allclose(np.asarray(jitted), want, rtol=2e-6, atol=1e-6)


def test_names_are_jax_names():
    jax_lax = pytest.importorskip("jax.lax")
    for name in primitive_objects.__all__:
        assert hasattr(jax_lax, name), name


@pytest.mark.parametrize("name", ["add_p", "sub_p", "mul_p", "max_p", "lt_p"])
def test_elementwise_values_match_jax(name):
    jax_lax = pytest.importorskip("jax.lax")
    _, params, _, args = CASES[name]
    want = np.asarray(getattr(jax_lax, name).bind(*args, **params))
    np.testing.assert_allclose(np.asarray(getattr(lax, name).bind(*args)), want, rtol=1e-6)


# --- lax.reduce_precision and lax.shape_as_value -------------------------------------------

RP_X = np.concatenate([
    np.random.default_rng(0).standard_normal(120).astype(np.float32)
    * np.float32(10.0) ** np.random.default_rng(1).integers(-44, 38, 120).astype(np.float32),
    np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 65504, 65520, 1e-8, 3.4e38, 1.5, 2.5,
              -1.0000001, 1e-40], np.float32)]).astype(np.float32)
RP_FORMATS = [(5, 10), (8, 7), (4, 3), (5, 2), (3, 0), (8, 23), (11, 52)]


def _same(a, b):
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype
    np.testing.assert_array_equal(np.where(np.isnan(a), 0, a).view(np.uint32),
                                  np.where(np.isnan(b), 0, b).view(np.uint32))
    np.testing.assert_array_equal(np.isnan(a), np.isnan(b))


def test_reduce_precision_expected_values():
    half = np.array([1.0, 1 + 2 ** -11, 1 + 3 * 2 ** -11, 65504, 65520, 1e-8, np.nan],
                    np.float32)
    out = np.asarray(lax.reduce_precision(half, 5, 10))
    np.testing.assert_array_equal(out[:6], np.array([1.0, 1.0, 1 + 2 ** -9, 65504, np.inf,
                                                     0.0], np.float32))
    assert np.isnan(out[6])
    bf16 = lax.reduce_precision(RP_X, 8, 7)
    finite = np.abs(RP_X) > 1.2e-38
    np.testing.assert_array_equal(np.asarray(bf16)[finite],
                                  RP_X[finite].astype(ml_dtypes.bfloat16).astype(np.float32))


@pytest.mark.parametrize("fmt", RP_FORMATS)
def test_reduce_precision_jit_matches_eager(fmt):
    e, m = fmt
    eager = lax.reduce_precision(RP_X, e, m)
    _same(transpiler.jit(lambda v: lax.reduce_precision(v, e, m))(RP_X), eager)


def test_reduce_precision_matches_jax():
    jax_lax = pytest.importorskip("jax.lax")
    for e, m in RP_FORMATS:
        _same(lax.reduce_precision(RP_X, e, m), jax_lax.reduce_precision(RP_X, e, m))
    x16 = np.array([1.0, 1.0009765625, 3.14159, -2.5e-3, 6e4], np.float16)
    np.testing.assert_array_equal(np.asarray(lax.reduce_precision(x16, 4, 3)),
                                  np.asarray(jax_lax.reduce_precision(x16, 4, 3)))


def test_reduce_precision_derivative_and_errors():
    g = transpiler.grad(lambda x: lax.reduce_precision(x, 5, 10) * 2.0)(np.float32(1.2345))
    np.testing.assert_allclose(g, 2.0)
    with pytest.raises(Exception, match="floating-point"):
        lax.reduce_precision(np.arange(3), 5, 10)


def test_shape_as_value():
    out = lax.shape_as_value((2, 3))
    np.testing.assert_array_equal(out, [2, 3])
    assert out.dtype == np.int32 and lax.shape_as_value(()).shape == (0,)
