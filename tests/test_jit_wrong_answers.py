"""Answers `jit` once got wrong without a word (issue 16), each checked eager vs jit vs JAX.

IREE 3.13 miscompiles a reduction of a value it can fold to a constant (dispatch formation
fuses the constant into the reduction's body, the CPU vectorizer then adds it once per
vector tile): trace-time constant folding (lowering/fold.py) keeps such reductions from
reaching it.
"""

from __future__ import annotations

import numpy as np
import pytest

import transpiler as tp
import transpiler.numpy as jnp
from transpiler import lax

X8 = np.arange(8, dtype=np.int32)

# name -> (function of one argument, argument, JAX's answer)
CONSTANT_REDUCTIONS = {
    "sum of a negated broadcast": (lambda x: jnp.sum(-jnp.ones(8)) + x, 0.0, -8.0),
    "mean of a negated broadcast": (lambda x: jnp.mean(-jnp.ones((3, 3))) + x, 0.0, -1.0),
    "prod": (lambda x: jnp.prod(-2 * jnp.ones(8)) + x, 0.0, 256.0),
    "max and min": (lambda x: jnp.max(-jnp.ones(8)) + jnp.min(3 * jnp.ones(4)) + x, 0.0, 2.0),
    "argmax": (lambda x: jnp.argmax(-jnp.ones(8)) + x, 0, 0),
    "along an axis": (lambda x: jnp.sum(-jnp.ones((3, 5)), axis=1) + x, 0.0, -5.0 * np.ones(3)),
    "cumsum": (lambda x: jnp.cumsum(-jnp.ones(4)) + x, 0.0, -np.arange(1.0, 5.0)),
    "a splat of 2^21 elements": (lambda x: jnp.sum(-jnp.ones(1 << 21)) + x, 0.0,
                                 -float(1 << 21)),
    "a dot of constants": (lambda x: jnp.dot(-jnp.ones((4, 8)), 2 * jnp.ones(8)) + x, 0.0,
                           -16.0 * np.ones(4)),
    # IREE folds these on unknown values, and then miscompiles the reduction the same way
    "select with a constant predicate": (
        lambda x: jnp.sum(jnp.where(True, -2 * jnp.ones(8), x)), np.ones(8, np.float32), -16.0),
    "integers equal to themselves": (lambda x: jnp.sum(x == x), X8, 8),
    "isnan of integers": (lambda x: jnp.sum(~jnp.isnan(x)), X8, 8),
    "a scalar's gradient through an unbroadcast": (
        lambda y: tp.grad(lambda x, y: jnp.sum(x - y), argnums=1)(np.arange(8.0), y),
        np.float32(0.5), -8.0),
    "a divisor's gradient": (
        lambda y: tp.grad(lambda x, y: jnp.sum(x / y), argnums=1)(np.ones(4), y),
        np.float32(2.0), -1.0),
}


@pytest.mark.parametrize("name", CONSTANT_REDUCTIONS)
def test_reductions_of_constants(name):
    fn, arg, want = CONSTANT_REDUCTIONS[name]
    np.testing.assert_allclose(np.asarray(fn(arg)), want, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(tp.jit(fn)(arg)), want, rtol=1e-6)


def test_reductions_of_constants_match_jax():
    jax = pytest.importorskip("jax")
    jjnp = pytest.importorskip("jax.numpy")
    x, y = np.arange(8.0, dtype=np.float32), np.float32(0.5)
    want = jax.jit(jax.grad(lambda x, y: jjnp.sum(x - y), argnums=1))(x, y)
    got = tp.jit(tp.grad(lambda x, y: jnp.sum(x - y), argnums=1))(x, y)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want))
    want = jax.jit(lambda x: jjnp.mean(-jjnp.ones((3, 3))) + x)(0.0)
    np.testing.assert_allclose(np.asarray(tp.jit(lambda x: jnp.mean(-jnp.ones((3, 3))) + x)(0.0)),
                               np.asarray(want))


def test_constants_fold_out_of_the_module():
    text = tp.jit(lambda x: jnp.sum(-jnp.ones(8)) + x).lower(0.0).as_text()
    assert "stablehlo.reduce" not in text and "dense<-8.0" in text, text


def test_large_constants_stay_operations():
    """A non-splat constant too large to fold is computed by the module, not embedded."""
    text = tp.jit(lambda x: jnp.arange(100_000.0) * 2 + x).lower(0.0).as_text()
    assert "stablehlo.iota" in text and "stablehlo.multiply" in text
    got = tp.jit(lambda x: jnp.sum(jnp.arange(100_000.0) * 2) + x)(0.0)
    np.testing.assert_allclose(np.asarray(got), 2 * np.arange(100_000.0).sum(), rtol=1e-6)


def test_folded_constants_inside_control_flow():
    def f(x):
        c = -jnp.ones(4)  # folded outside; used inside both branches and the loop
        y = lax.cond(x > 0, lambda v: v + jnp.sum(c), lambda v: v * jnp.sum(c), x)
        return lax.fori_loop(0, 3, lambda i, v: v + jnp.prod(2 * c), y)
    for x in (1.0, -1.0):
        np.testing.assert_allclose(np.asarray(tp.jit(f)(x)), np.asarray(f(x)))


def test_reductions_of_constants_inside_pmap():
    x = np.zeros((2, 3), np.float32)
    got = tp.pmap(lambda v: v + jnp.sum(-jnp.ones(8)) + jnp.prod(-2 * jnp.ones(8)),
                  axis_name="i")(x)
    np.testing.assert_allclose(np.asarray(got), np.full((2, 3), 248.0))
    got = tp.pmap(tp.grad(lambda v: jnp.sum(np.arange(3.0) - v[0])), axis_name="i")(x)
    np.testing.assert_allclose(np.asarray(got), [[-3.0, 0, 0], [-3.0, 0, 0]])


def _batched_dot_of_a_max(x):  # found by the random programs (a jit(vmap) of jnp.inner)
    v = jnp.reshape(x, (3, 4, 2))
    return jnp.inner(v, jnp.max(v, axis=-2)).mean()


def _batch_matmul_of_a_broadcast_max(z, w):
    m = jnp.max(w, axis=1)
    return jnp.einsum("bjk,bkl->bjl", z, jnp.broadcast_to(m[:, :, None], m.shape + m.shape[-1:]))


@pytest.mark.parametrize("shape", [(3, 4, 2), (2, 8, 4), (4, 64, 64)])
def test_batched_dot_of_a_reduction(shape):
    """IREE 3.13 with data tiling miscompiled a batched dot_general whose operand a
    reduction computes (off by up to 7.5 at 4x64x64); an optimization barrier keeps the
    reduction out of the matmul's dispatch."""
    rng = np.random.default_rng(0)
    z, w = (rng.uniform(-2, 2, shape).astype(np.float32) for _ in range(2))
    np.testing.assert_allclose(np.asarray(tp.jit(_batch_matmul_of_a_broadcast_max)(z, w)),
                               np.asarray(_batch_matmul_of_a_broadcast_max(z, w)),
                               rtol=1e-5, atol=1e-5)
    xs = rng.uniform(-2, 2, (3, 24)).astype(np.float32)
    np.testing.assert_allclose(np.asarray(tp.jit(tp.vmap(_batched_dot_of_a_max))(xs)),
                               np.asarray(tp.vmap(_batched_dot_of_a_max)(xs)), rtol=1e-5)


SPECIAL = np.array([0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 1e-30, -2.5], np.float32)


def _same(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    np.testing.assert_array_equal(np.signbit(got[~np.isnan(got)]),
                                  np.signbit(want[~np.isnan(want)]))
    np.testing.assert_allclose(got, want, rtol=1e-6, equal_nan=True)


def test_arctan2_at_signed_zeros_and_infinities():
    """IREE's atan2 gave NaN for two zeros and two infinities and +pi for y = -0, x < 0."""
    y, x = (a.ravel() for a in np.meshgrid(SPECIAL, SPECIAL, indexing="ij"))
    want = np.arctan2(y, x)
    _same(jnp.arctan2(y, x), want)
    _same(tp.jit(jnp.arctan2)(y, x), want)
    _same(tp.jit(jnp.arctan2)(y.astype(np.float16), x.astype(np.float16)),
          np.arctan2(y.astype(np.float16), x.astype(np.float16)))


def test_arctan2_matches_jax():
    jjnp = pytest.importorskip("jax.numpy")
    y, x = (a.ravel() for a in np.meshgrid(SPECIAL, SPECIAL, indexing="ij"))
    _same(tp.jit(jnp.arctan2)(y, x), jjnp.arctan2(y, x))


FLOATS = np.array([np.nan, np.inf, -np.inf, 3e9, -3e9, 1.5, -1.5, 2147483520.0,
                   -2147483648.0, 255.9, 256.0, -0.9, -1.0, 1e20], np.float32)
# what JAX gives on the CPU: toward zero, saturated at the bounds, NaN to 0
SATURATED = {
    "int32": [0, 2**31 - 1, -2**31, 2**31 - 1, -2**31, 1, -1, 2147483520, -2**31, 255, 256,
              0, -1, 2**31 - 1],
    "uint8": [0, 255, 0, 255, 0, 1, 0, 255, 0, 255, 255, 0, 0, 255],
    "int8": [0, 127, -128, 127, -128, 1, -1, 127, -128, 127, 127, 0, -1, 127],
}


@pytest.mark.parametrize("dtype", SATURATED)
def test_float_to_int_conversion_saturates(dtype):
    want = np.array(SATURATED[dtype], dtype=dtype)
    for source in (np.float32, np.float16, jnp.bfloat16):
        with np.errstate(over="ignore"):
            x = FLOATS.astype(source)
        expected = want if source == np.float32 else np.asarray(
            jnp.asarray(x.astype(np.float32)).astype(dtype))
        np.testing.assert_array_equal(np.asarray(jnp.asarray(x).astype(dtype)), expected)
        np.testing.assert_array_equal(np.asarray(tp.jit(lambda v: v.astype(dtype))(x)), expected)


def test_float_to_int_conversion_matches_jax():
    jjnp = pytest.importorskip("jax.numpy")
    for dtype in ("int32", "uint32", "int16", "uint8", "bool"):
        want = np.asarray(jjnp.asarray(FLOATS).astype(dtype))
        np.testing.assert_array_equal(np.asarray(tp.jit(lambda v: v.astype(dtype))(FLOATS)), want)
        np.testing.assert_array_equal(np.asarray(jnp.asarray(FLOATS).astype(dtype)), want)


def test_two_broadcasts_of_one_reduction():
    """IREE 3.13 kept only the diagonal of `v[:, None] + v[None, :]` with v a reduction's
    result (found by tests/test_hypothesis_programs.py): the pairwise-distance pattern."""
    def pairwise(x):
        v = jnp.sum(x, axis=1)
        return v[:, None] + v[None, :], v[:, None] * v[None, :]

    def distances(x):
        sq = jnp.sum(x * x, axis=1)
        return sq[:, None] + sq[None, :] - 2 * x @ x.T

    x = np.arange(12, dtype=np.float32).reshape(4, 3) / 6
    v = x.sum(1)
    for got, want in zip(tp.jit(pairwise)(x), (v[:, None] + v[None, :], v[:, None] * v[None, :])):
        np.testing.assert_allclose(got, want, rtol=1e-6)
    sq = (x * x).sum(1)
    np.testing.assert_allclose(tp.jit(distances)(x), sq[:, None] + sq[None, :] - 2 * x @ x.T,
                               rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_boolean_matrix_converted_into_a_matmul(dtype):
    """IREE fused the i1 -> number convert into the matmul as a signed one (True == -1):
    `(x > 0).astype(f32) @ b` came out negated. Bools now convert by a select."""
    x = np.array([1.0, -1.0, 2.0], np.float32)
    b = np.ones((3, 1), dtype)

    def f(x, b):
        return (x[:, None] > jnp.zeros(3)[None, :]).astype(dtype) @ b

    np.testing.assert_array_equal(tp.jit(f)(x, b), f(x, b))
    np.testing.assert_array_equal(tp.jit(f)(x, b).ravel(), [3, 0, 3])


def _called_four_times(fn, arg, want):
    jitted = tp.jit(fn)
    for _ in range(4):
        np.testing.assert_allclose(np.asarray(jitted(arg)), want, rtol=1e-4, atol=1e-4)


def test_every_call_gives_the_same_answer():
    """A jitted function is checked on repeated calls, not only its first (see below)."""
    rng = np.random.default_rng(0)
    signal = rng.standard_normal((4, 300)).astype(np.float32)
    sym = rng.standard_normal((32, 32)).astype(np.float32) / 8
    _called_four_times(jnp.fft.rfft, signal, np.fft.rfft(signal))
    _called_four_times(lambda x: lax.fori_loop(0, 5, lambda i, m: m @ x, jnp.eye(32)), sym,
                       np.linalg.matrix_power(sym, 5))


_G = np.random.default_rng(0).standard_normal((32, 32)).astype(np.float32)
_SYM = (_G + _G.T) / 2
_V = np.random.default_rng(1).standard_normal(40).astype(np.float32)
_I = np.array([3, 0, 3, 7], np.int32)

# name -> (function, argument, NumPy's answer): programs with an op that IREE runs in place
# (sort, scatter, dynamic_update_slice) on an operand built from constants (an iota, zeros).
IN_PLACE_ON_CONSTANTS = {
    "eigvalsh": (jnp.linalg.eigvalsh, _SYM, np.linalg.eigvalsh(_SYM)),
    "svdvals": (jnp.linalg.svdvals, _G, np.linalg.svd(_G, compute_uv=False)),
    "argsort": (jnp.argsort, _V, np.argsort(_V, kind="stable")),
    "sort_key_val": (lambda v: lax.sort_key_val(v, jnp.arange(40))[1], _V,
                     np.argsort(_V, kind="stable")),
    "top_k indices": (lambda v: lax.top_k(v, 5)[1], _V, np.argsort(-_V, kind="stable")[:5]),
    "median": (jnp.median, _V, np.median(_V)),
    "random.permutation": (lambda k: tp.random.permutation(k, 40), tp.random.PRNGKey(3),
                           np.asarray(tp.random.permutation(tp.random.PRNGKey(3), 40))),
    "two sorts of one iota": (lambda v: (jnp.argsort(v), jnp.lexsort((v, -v))), _V,
                              np.stack([np.argsort(_V, kind="stable"), np.lexsort((_V, -_V))])),
    "scatter-add into zeros": (lambda i: jnp.zeros(8).at[i].add(1.0), _I,
                               np.bincount(_I, minlength=8).astype(np.float32)),
    "two scatters into one zeros": (
        lambda i: (jnp.zeros(8).at[i].add(1.0), jnp.zeros(8).at[i].add(2.0)), _I,
        np.outer([1.0, 2.0], np.bincount(_I, minlength=8))),
    "dynamic_update_slice of zeros": (
        lambda v: lax.dynamic_update_slice(jnp.zeros(50), v, (jnp.argmax(v) % 10,)), _V,
        np.concatenate([np.zeros(np.argmax(_V) % 10), _V, np.zeros(10 - np.argmax(_V) % 10)])),
    "solve_triangular": (lambda m: tp.scipy.linalg.solve_triangular(
        m + 40 * jnp.eye(32), jnp.ones(32), lower=True), _G,
        np.linalg.solve(np.tril(_G + 40 * np.eye(32)), np.ones(32))),
}


@pytest.mark.parametrize("name", list(IN_PLACE_ON_CONSTANTS))
def test_in_place_op_on_a_constant_is_right_on_every_call(name):
    """IREE 3.13 ran an op that writes its operand in place (the sort of ``argsort``'s iota)
    on the global it hoisted that constant into when an optimization barrier stood between
    them: every call after the first read the previous call's permutation (eigvalsh, svd
    and everything through them); with no barrier, two sorts of one iota gave zeros. A
    constant behind a barrier is now a fresh tensor on each call (builder.barrier)."""
    fn, arg, want = IN_PLACE_ON_CONSTANTS[name]
    _called_four_times(fn, arg, want)


def test_a_negative_base_to_an_integral_float_power():
    """IREE's CPU power is ``exp(y log x)``, NaN for every negative base; NumPy and JAX give
    ``(-2.) ** 3. == -8``: the lowering keeps C's sign rules (helper's finding)."""
    base = np.array([-2.0, -3.0, 2.0, -2.0, -0.5, 0.0, -1.5, -2.0], np.float32)
    power = np.array([3.0, 2.0, 2.5, 0.5, -3.0, 2.0, 0.0, -2.0], np.float32)
    with np.errstate(invalid="ignore", divide="ignore"):
        want = np.power(base, power)  # (-2.) ** 0.5 is NaN in all three
    np.testing.assert_allclose(np.asarray(tp.jit(lambda a, b: a ** b)(base, power)), want,
                               rtol=1e-5)
    np.testing.assert_allclose(np.asarray(tp.jit(jnp.power)(-2.0, 3.0)), -8.0)
    slope = tp.jit(tp.grad(lambda a, b: a ** b))(-2.0, 3.0)
    np.testing.assert_allclose(float(slope), 12.0, rtol=1e-6)
