"""The ``lax`` namespace with JAX's names and signatures: shape operations, elementwise
and bit operations, reductions, products (dot, batch_matmul, ragged_dot), gather and the
scatters, approx_max_k/min_k and the staging helpers, against jax.lax eagerly and under one
jit; derivatives of the differentiable ones against jax.grad; clear errors."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import transpiler as tj
import transpiler.numpy as jnp
from transpiler import lax

RNG = np.random.default_rng(3)
F = RNG.normal(size=(3, 4)).astype(np.float32)
F3 = RNG.normal(size=(2, 3, 4)).astype(np.float32)
G = RNG.normal(size=(3, 4)).astype(np.float32)
U = RNG.uniform(-0.9, 0.9, size=(3, 4)).astype(np.float32)
BIG = (np.abs(F) + 1.1).astype(np.float32)
NONFINITE = np.array([1, np.inf, -np.inf, np.nan], np.float32)
TIES = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, -0.49, 3.7], np.float32)
I = RNG.integers(-50, 50, size=(3, 4)).astype(np.int32)
J = np.where(RNG.integers(-7, 7, size=(3, 4)) == 0, 3, RNG.integers(-7, 7, size=(3, 4))) \
    .astype(np.int32)
BITS = np.array([0, 1, -1, 7, 2**31 - 1, -(2**31), 12345, -999], np.int32)
UBITS = BITS.view(np.uint32)
SHIFTS = np.array([0, 1, 31, 32, 33, -1, 5, 16], np.int32)
B = RNG.uniform(size=(3, 4)) > 0.5
V = RNG.normal(size=(4,)).astype(np.float32)
IDX = np.array([[2], [0], [2]], np.int32)
ROWS = RNG.normal(size=(3, 4)).astype(np.float32)


def table(m: Any) -> dict:
    """name -> thunk computing one lax call through the lax module `m` (ours or jax.lax)."""
    gather_rows = m.GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,),
                                           start_index_map=(0,))
    gather_window = m.GatherDimensionNumbers(offset_dims=(1, 2), collapsed_slice_dims=(),
                                             start_index_map=(0, 1))
    scatter_rows = m.ScatterDimensionNumbers(update_window_dims=(1,), inserted_window_dims=(0,),
                                             scatter_dims_to_operand_dims=(0,))
    return {
        # shapes
        "reshape": lambda x: m.reshape(x, (4, 3)),
        "reshape_dims": lambda x: m.reshape(x, (2, 6), dimensions=(1, 0)),
        "transpose": lambda x: m.transpose(x, (1, 0)),
        "squeeze": lambda x: m.squeeze(x[None, :, None], (0, 2)),
        "expand_dims": lambda x: m.expand_dims(x, (0, 3)),
        "collapse": lambda x: m.collapse(m.broadcast(x, (2,)), 0, 2),
        "rev": lambda x: m.rev(x, (0, 1)),
        "broadcast": lambda x: m.broadcast(x, (2, 1)),
        "broadcast_in_dim": lambda x: m.broadcast_in_dim(x[:1], (2, 3, 4), (1, 2)),
        "broadcast_to_rank": lambda x: m.broadcast_to_rank(x, 4),
        "pad": lambda x: m.pad(x, np.float32(-1), [(1, 2, 1), (-1, 0, 2)]),
        "concatenate": lambda x: m.concatenate([x, x * 2, x[:1]], 0),
        "split": lambda x: m.split(x, (1, 3), axis=1),
        "tile": lambda x: m.tile(x, (2, 3)),
        "stack": lambda x: m.stack([x, -x], axis=1),
        "unstack": lambda x: m.unstack(x, axis=1),
        "slice": lambda x: m.slice(x, (0, 1), (3, 4), (2, 2)),
        "slice_in_dim": lambda x: m.slice_in_dim(x, 1, -1, axis=1),
        "index_in_dim": lambda x: m.index_in_dim(x, -1, axis=0, keepdims=False),
        "dynamic_index_in_dim": lambda x: m.dynamic_index_in_dim(x, np.int32(2), 1),
        "dynamic_update_slice_in_dim": lambda x: m.dynamic_update_slice_in_dim(
            x, x[:, :2] * 10, np.int32(3), axis=1),
        "dynamic_update_index_in_dim": lambda x: m.dynamic_update_index_in_dim(
            x, x[0] * 5, np.int32(-1), 0),
        "full": lambda x: m.full((2, 3), 1.5) + m.full_like(x, 2, np.int32).sum(),
        "broadcast_like": lambda x: m.broadcast_like(x[0], x),
        # elementwise
        "neg_abs_sign": lambda x: m.neg(m.abs(x)) * m.sign(x),
        "floor_ceil": lambda x: m.floor(x * 3) + m.ceil(x * 3),
        "round_away": lambda x: m.round(TIES),
        "round_even": lambda x: m.round(TIES, m.RoundingMethod.TO_NEAREST_EVEN),
        "is_finite": lambda x: m.is_finite(x * NONFINITE),
        "exp2_log1p_expm1": lambda x: m.exp2(x) + m.log1p(BIG) + m.expm1(x),
        "trig": lambda x: m.tan(U) + m.atan(x) + m.asin(U) + m.acos(U),
        "hyperbolic": lambda x: m.sinh(x) + m.cosh(x) + m.asinh(x) + m.acosh(BIG) + m.atanh(U),
        "atan2": lambda x: m.atan2(x, G),
        "pow": lambda x: m.pow(BIG, x) + m.pow(x, np.int32(3)),
        "cbrt_square_reciprocal": lambda x: m.cbrt(x) + m.square(x) + m.reciprocal(BIG),
        "rem_float": lambda x: m.rem(x * 7, G),
        "rem_int": lambda x: m.rem(I, J),
        "nextafter": lambda x: m.nextafter(x, G),
        "compare": lambda x: (m.eq(x, G) | m.ne(x, x)) ^ m.lt(x, G) ^ m.le(x, x) ^ m.gt(x, G)
        ^ m.ge(G, x),
        "clamp": lambda x: m.clamp(np.float32(-0.5), x, np.float32(0.5)),
        "clamp_arrays": lambda x: m.clamp(-U - 0.2, x, U + 0.2),
        "select_n_bool": lambda x: m.select_n(B, x, G),
        "select_n_int": lambda x: m.select_n(np.abs(I) % 3, x, G, x * G),
        "bitwise": lambda x: m.bitwise_xor(m.bitwise_and(I, J), m.bitwise_or(I, m.bitwise_not(J))),
        "population_count": lambda x: m.population_count(BITS),
        "population_count_u8": lambda x: m.population_count(UBITS.astype(np.uint8)),
        "clz": lambda x: m.clz(BITS),
        "clz_u16": lambda x: m.clz(UBITS.astype(np.uint16)),
        "shift_right_logical": lambda x: m.shift_right_logical(BITS, SHIFTS),
        "shift_right_arithmetic": lambda x: m.shift_right_arithmetic(BITS, SHIFTS),
        "shift_right_arithmetic_u32": lambda x: m.shift_right_arithmetic(UBITS, SHIFTS.view(
            np.uint32)),
        "shift_left": lambda x: m.shift_left(BITS, np.abs(SHIFTS) % 32),
        "erfc": lambda x: m.erfc(x * 2),
        "mulhi": lambda x: m.mulhi(BITS, BITS[::-1]),
        # reductions
        "reduce_sum": lambda x: m.reduce_sum(x, (0,)),
        "reduce_prod": lambda x: m.reduce_prod(x, (1,)),
        "reduce_max_min": lambda x: m.reduce_max(x, (0, 1)) + m.reduce_min(x, (1,)),
        "reduce_bits": lambda x: m.reduce_and(B, (1,)) ^ m.reduce_or(B, (0, 1)),
        "reduce_and_int": lambda x: m.reduce_and(I, (0,)) + m.reduce_or(J, (0,)),
        "reduce_xor": lambda x: m.reduce_xor(I, (0,)),
        "reduce_xor_bool": lambda x: m.reduce_xor(B, (1,)),
        "argmax_argmin": lambda x: (m.argmax(x, 0, np.int32), m.argmin(x, 1, np.int32)),
        # products
        "dot": lambda x: m.dot(x, x.T),
        "dot_vector": lambda x: m.dot(x, V, precision=m.Precision.HIGHEST),
        "dot_general": lambda x: m.dot_general(F3, x, (((2,), (1,)), ((), ()))),
        "dot_dimension_numbers": lambda x: m.dot(F3, F3, dimension_numbers=(((2,), (2,)),
                                                                           ((0,), (0,)))),
        "batch_matmul": lambda x: m.batch_matmul(F3, m.transpose(F3, (0, 2, 1))),
        "ragged_dot": lambda x: m.ragged_dot(m.concatenate([x, x[:2] * 2], 0),
                                             np.stack([F.T, G.T]),
                                             np.array([4, 1], np.int32)),  # (last row: 0)
        # gather and scatter
        "gather_rows": lambda x: m.gather(x, IDX, gather_rows, (1, 4)),
        "gather_window": lambda x: m.gather(x, np.array([[0, 1], [2, 3], [1, 0]], np.int32),
                                            gather_window, (2, 2)),
        "gather_window_in_bounds": lambda x: m.gather(
            x, np.array([[0, 1], [1, 2], [1, 0]], np.int32), gather_window, (2, 2)),
        "gather_fill": lambda x: m.gather(x, np.array([[2, 3], [1, 1]], np.int32),
                                          gather_window, (2, 2), mode="fill", fill_value=-7.0),
        "scatter_add": lambda x: m.scatter_add(x, IDX, ROWS, scatter_rows),
        "scatter": lambda x: m.scatter(x, np.array([[1], [7]], np.int32), ROWS[:2],
                                       scatter_rows),
        "scatter_mul": lambda x: m.scatter_mul(x, IDX, ROWS, scatter_rows),
        "scatter_min": lambda x: m.scatter_min(x, IDX, ROWS, scatter_rows),
        "scatter_max": lambda x: m.scatter_max(x, IDX, ROWS, scatter_rows),
        "scatter_sub_clip": lambda x: m.scatter_sub(x, np.array([[5], [0]], np.int32),
                                                    ROWS[:2], scatter_rows, mode="clip"),
        "index_take": lambda x: m.index_take(x, (np.array([0, 2, 5], np.int32),
                                                 np.array([3, 1, 0], np.int32)), (0, 1)),
        # approximate top k (exact here, as on JAX's CPU)
        "approx_max_k": lambda x: m.approx_max_k(x, 2),
        "approx_max_k_values": lambda x: m.approx_max_k(x, 3, reduction_dimension=0)[0],
        "approx_min_k": lambda x: m.approx_min_k(x, 2, reduction_dimension=0),
        # staging helpers
        "platform_dependent": lambda x: m.platform_dependent(x, cpu=lambda v: v + 1,
                                                             default=lambda v: v - 1),
    }


OURS = table(lax)
COMPARISONS = list(OURS)


def close(ours: Any, theirs: Any, rtol: float = 2e-6, atol: float = 2e-6) -> None:
    for a, b in zip(tj.tree_util.tree_leaves(ours), tj.tree_util.tree_leaves(theirs)):
        a, b = np.asarray(a), np.asarray(b)
        assert a.dtype == b.dtype and a.shape == b.shape, (a.dtype, a.shape, b.dtype, b.shape)
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, equal_nan=True)
    assert len(tj.tree_util.tree_leaves(ours)) == len(tj.tree_util.tree_leaves(theirs))


def test_names_jax_programs_use_are_here() -> None:
    jax = pytest.importorskip("jax")
    public = {n for n in dir(jax.lax) if not n.startswith("_") and not n.endswith("_p")}
    missing = public - set(dir(lax))
    # JAX internals, tokens and effects, collectives, sharding types and primitives not built
    expected_missing = {
        "AccuracyMode", "ConvGeneralDilatedDimensionNumbers", "DotAlgorithm",
        "RaggedDotDimensionNumbers", "RandomAlgorithm", "Tolerance", "after_all",
        "all_to_all", "create_token", "dce_sink", "pbroadcast", "pcast", "precv", "psend", "pshuffle",
        "pswapaxes", "ragged_all_to_all", "ragged_dot_general",
        "rng_bit_generator", "rng_uniform", "scaled_dot", "scatter_apply", "shape_as_value",
        "stage"}
    assert missing <= expected_missing, sorted(missing - expected_missing)


@pytest.mark.parametrize("name", COMPARISONS)
def test_matches_jax(name: str) -> None:
    jax = pytest.importorskip("jax")
    ours = OURS[name](F)
    theirs = table(jax.lax)[name](F)
    tolerance = 1e-5 if name in {"erfc", "exp2_log1p_expm1", "hyperbolic", "pow", "trig"} else 2e-6
    close(ours, theirs, rtol=tolerance, atol=tolerance)


def test_jit_matches_eager() -> None:
    jitted = tj.jit(lambda x: {name: f(x) for name, f in OURS.items()})(F)
    for name, f in OURS.items():
        tolerance = 1e-5 if name in {"erfc", "exp2_log1p_expm1", "hyperbolic", "pow",
                                     "trig"} else 2e-6
        close(jitted[name], f(F), rtol=tolerance, atol=tolerance)


DIFFERENTIABLE = ["reshape_dims", "transpose", "collapse", "rev", "broadcast_in_dim", "pad",
                  "concatenate", "tile", "stack", "slice", "dynamic_index_in_dim",
                  "dynamic_update_slice_in_dim", "clamp", "clamp_arrays", "round_away",
                  "atan2", "rem_float", "select_n_int", "reduce_prod", "reduce_max_min",
                  "dot_general", "ragged_dot", "gather_window_in_bounds", "gather_fill", "scatter_add",
                  "scatter", "scatter_mul", "scatter_min", "scatter_max", "index_take",
                  "approx_max_k_values"]
# (lax.gather's default mode: JAX's promise_in_bounds drops an out-of-bounds window from the
# derivative; ours clamps it, as the values are, so the derivatives agree in bounds only)


def weighted_sum(f: Any, weights: np.ndarray) -> Any:
    return lambda x: (f(x) * weights).sum()


def test_gradients_match_jax() -> None:
    jax = pytest.importorskip("jax")
    theirs = table(jax.lax)
    for name in DIFFERENTIABLE:
        f, g = OURS[name], theirs[name]
        weights = RNG.normal(size=np.shape(g(F))).astype(np.float32)
        ours = tj.grad(weighted_sum(f, weights))(F)
        expected = jax.grad(weighted_sum(g, weights))(F)
        close(ours, expected, rtol=1e-5, atol=1e-5)


def test_dynamic_indices_traced_clamped_and_differentiated() -> None:
    jax = pytest.importorskip("jax")

    def ops(m: Any) -> Any:
        def f(x: Any, i: Any) -> Any:
            return (m.dynamic_index_in_dim(x, i, 1, keepdims=False),
                    m.dynamic_index_in_dim(x, i, 0, allow_negative_indices=False),
                    m.dynamic_update_slice_in_dim(x, x[:2, :2] * -3, i, axis=1),
                    m.dynamic_update_index_in_dim(x, x[0] * 5, i, 0))
        return f

    ours, theirs = tj.jit(ops(lax)), ops(jax.lax)
    for i in [-5, -1, 0, 2, 3, 9]:
        close(ours(F, np.int32(i)), theirs(F, np.int32(i)))
        close(ops(lax)(F, np.int32(i)), theirs(F, np.int32(i)))
        weights = [RNG.normal(size=np.shape(out)).astype(np.float32) for out in theirs(F, 0)]

        def loss(f: Any) -> Any:
            return lambda x: sum((out * w).sum() for out, w in zip(f(x, np.int32(i)), weights))

        close(tj.grad(loss(ops(lax)))(F), jax.grad(loss(theirs))(F))
    with pytest.raises(ValueError, match="allow_negative_indices=False"):
        lax.dynamic_update_slice_in_dim(F, F[:1], -1, 0, allow_negative_indices=False)


def test_staging_helpers() -> None:
    assert lax.dtype(1.0) == np.float32 and lax.dtype(np.int8(1)) == np.int8
    assert lax.dtype(np.float64) == np.float32  # canonicalized (x64 off)
    assert lax.dtype(np.float64, canonicalize=False) == np.float64
    double = lax.composite(lambda x, *, k: x * k, name="my.double")
    np.testing.assert_array_equal(np.asarray(tj.jit(lambda x: double(x, k=2.0))(F)), F * 2)
    with pytest.raises(NotImplementedError, match="no branch for the 'cpu'"):
        lax.platform_dependent(F, tpu=lambda v: v)

    def times_size(v: Any) -> Any:
        return v * lax.axis_size("i")

    np.testing.assert_array_equal(np.asarray(tj.vmap(times_size, axis_name="i")(V)), V * 4)
    np.testing.assert_array_equal(
        np.asarray(tj.jit(tj.vmap(times_size, axis_name="i"))(V)), V * 4)
    with pytest.raises(tj.TranspileError, match="unbound axis name"):
        lax.axis_size("i")
    assert isinstance(lax.Precision("highest"), lax.Precision)
    tree = {"a": F, "b": [V]}
    out = tj.jit(lambda t: lax.with_sharding_constraint(t, None))(tree)
    np.testing.assert_array_equal(np.asarray(out["b"][0]), V)
    lax.dot(F, V, precision=lax.DotAlgorithmPreset.F32_F32_F32)


def test_errors() -> None:
    with pytest.raises(ValueError, match="cannot reshape"):
        lax.reshape(F, (5, 3))
    with pytest.raises(ValueError, match="not a permutation"):
        lax.transpose(F, (0, 0))
    with pytest.raises(ValueError, match="has size 3, not 1"):
        lax.squeeze(F, (0,))
    with pytest.raises(ValueError, match="broadcast_dimensions"):
        lax.broadcast_in_dim(V, (4, 3), (0, 1))
    with pytest.raises(TypeError, match="one dtype"):
        lax.concatenate([F, I], 0)
    with pytest.raises(ValueError, match="sum to the length"):
        lax.split(F, (1, 1), axis=1)
    with pytest.raises(TypeError, match="requires an integer operand"):
        lax.population_count(F)
    with pytest.raises(TypeError, match="one integer type"):
        lax.mulhi(BITS, UBITS)
    with pytest.raises(TypeError, match="index_dtype is required"):
        lax.argmax(F, 0, None)
    with pytest.raises(ValueError, match="dimension_numbers must be given"):
        lax.dot(F3, F3)
    with pytest.raises(ValueError, match="precision argument"):
        lax.dot(F, V, precision="sloppy")
    with pytest.raises(ValueError, match="group_sizes"):
        lax.ragged_dot(F, F3, np.array([1, 2, 3], np.int32))
    with pytest.raises(ValueError, match="k=5"):
        lax.approx_max_k(F, 5)
    with pytest.raises(TypeError, match="floating point"):
        lax.approx_min_k(I, 2)
    with pytest.raises(NotImplementedError, match="aggregate_to_topk"):
        lax.approx_max_k(F, 2, aggregate_to_topk=False)
    rows = lax.GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,),
                                      start_index_map=(0,))
    with pytest.raises(TypeError, match="indices must be integers"):
        lax.gather(F, IDX.astype(np.float32), rows, (1, 4))
    with pytest.raises(ValueError, match="slice_sizes"):
        lax.gather(F, IDX, rows, (1, 4, 1))


def test_grad_through_dynamic_slices():
    """lax.dynamic_slice / dynamic_update_slice / dynamic_slice_in_dim call their
    primitives with starred start indices; reverse mode differentiates them (the starts
    take no cotangent), to second order, eagerly and under jit, against finite
    differences."""
    x = np.arange(12.0).reshape(4, 3)

    def sliced(v):
        return jnp.sum(lax.dynamic_slice(v, (1, 0), (2, 2)) ** 3) + \
            jnp.sum(lax.dynamic_slice_in_dim(v, 1, 2, axis=1) ** 2)

    def updated(v):
        return jnp.sum(lax.dynamic_update_slice(v, v[:2, :2] * 2.0, (1, 1)) ** 2)

    for f in (sliced, updated):
        want = np.zeros_like(x)
        for i in np.ndindex(x.shape):
            e = np.zeros_like(x)
            e[i] = 0.05  # (f is a cubic: the central difference is off by eps**2 = 0.0025)
            want[i] = (float(f(x + e)) - float(f(x - e))) / 0.1
        for grad in (tj.grad(f), tj.jit(tj.grad(f))):
            np.testing.assert_allclose(np.asarray(grad(x.astype(np.float32))), want,
                                       rtol=1e-3, atol=2e-2)
    second = tj.grad(tj.grad(lambda s: jnp.sum(lax.dynamic_slice(x * s, (1, 0), (2, 2)) ** 3)))
    np.testing.assert_allclose(float(second(2.0)), 6 * 2.0 * np.sum(x[1:3, :2] ** 3), rtol=1e-5)
