"""Forward mode and Jacobians: jvp, linearize, jacfwd, jacrev, hessian, custom_jvp.

The programs corpus runs through jvp against float64 finite differences (eager) and
through jit against eager; Jacobians of every scalar program against grad; Hessians
(forward over reverse, reverse over forward, jacfwd(jacrev)) against each other and
finite differences of the gradient.
"""

from __future__ import annotations

import numpy as np
import pytest

import transpiler as tp
import transpiler.numpy as jnp
from tests.programs.corpus import PROGRAMS

RUNNABLE = [p for p in PROGRAMS if not p.pending]
IDS = [p.name for p in RUNNABLE]


def _nums(program):
    return (program.argnums,) if isinstance(program.argnums, int) else tuple(program.argnums)


def _cast(tree, dtype):
    """Floating leaves in `dtype` (as transpiler arrays); others unchanged."""
    def leaf(x):
        return jnp.asarray(np.asarray(x, dtype)) if np.asarray(x).dtype.kind == "f" else x
    return tp.tree_util.tree_map(leaf, tree)


def _tangents(program, args, seed=0):
    """A random direction for each differentiated argument, None for the others."""
    rng = np.random.default_rng(seed)
    return tuple(tp.tree_util.tree_map(
        lambda x: rng.standard_normal(np.shape(x)).astype(np.asarray(x).dtype), a)
        if i in _nums(program) else None for i, a in enumerate(args))


def _main(result, has_aux):
    return result[0] if has_aux else result


@pytest.mark.parametrize("program", RUNNABLE, ids=IDS)
def test_jvp_matches_finite_differences(program, monkeypatch):
    monkeypatch.setattr(tp.config, "enable_x64", True)
    args = tuple(_cast(a, np.float64) for a in program.args)
    tangents = _tangents(program, args)
    out, out_dot = tp.jvp(program.fn, args, tangents, has_aux=program.has_aux)[:2]
    eps = 1e-6

    def shifted(step):
        return [tp.tree_util.tree_map(lambda x, t: x + step * t, a, t) if t is not None else a
                for a, t in zip(args, tangents)]

    plus = _main(program.fn(*shifted(eps)), program.has_aux)
    minus = _main(program.fn(*shifted(-eps)), program.has_aux)
    np.testing.assert_allclose(np.asarray(out), np.asarray(_main(program.fn(*args),
                                                                 program.has_aux)))
    want = (np.asarray(plus) - np.asarray(minus)) / (2 * eps)
    np.testing.assert_allclose(np.asarray(out_dot), want, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("program", RUNNABLE, ids=IDS)
def test_jvp_under_jit_matches_eager(program):
    args = tuple(_cast(a, np.float32) for a in program.args)
    tangents = _tangents(program, args)
    eager = tp.jvp(program.fn, args, tangents, has_aux=program.has_aux)
    static = tuple(i for i, a in enumerate(program.args)  # flags and sizes stay Python values
                   if isinstance(a, (bool, int)) and not isinstance(a, float))
    staged = tp.jit(lambda *a: tp.jvp(program.fn, a, tangents, has_aux=program.has_aux),
                    static_argnums=static)(*args)
    for got, want in zip(tp.tree_util.tree_leaves(staged), tp.tree_util.tree_leaves(eager)):
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=2e-5, atol=1e-6)


SCALAR = [p for p in RUNNABLE if isinstance(p.argnums, int)
          and sum(np.size(x) for x in tp.tree_util.tree_leaves(p.args[p.argnums])) <= 64]


@pytest.mark.parametrize("program", SCALAR, ids=[p.name for p in SCALAR])
def test_jacobians_of_scalar_programs_are_the_gradient(program):
    args = tuple(_cast(a, np.float32) for a in program.args)
    grad = tp.grad(program.fn, argnums=program.argnums, has_aux=program.has_aux)(*args)
    fwd = tp.jacfwd(program.fn, argnums=program.argnums, has_aux=program.has_aux)(*args)
    rev = tp.jacrev(program.fn, argnums=program.argnums, has_aux=program.has_aux)(*args)
    if program.has_aux:
        grad, fwd, rev = grad[0], fwd[0], rev[0]
    for g, f, r in zip(*(tp.tree_util.tree_leaves(t) for t in (grad, fwd, rev))):
        np.testing.assert_allclose(np.asarray(f), np.asarray(g), rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(np.asarray(r), np.asarray(g), rtol=1e-4, atol=1e-5)


def cubic_mix(x):
    return jnp.sum(jnp.sin(x) * x ** 2) + jnp.prod(x[:2])


def test_hessian_four_ways_against_finite_differences(monkeypatch):
    monkeypatch.setattr(tp.config, "enable_x64", True)
    x = jnp.asarray(np.array([0.3, -0.5, 0.7, 1.1]))
    v = jnp.asarray(np.array([1.0, -1.0, 0.5, 2.0]))
    hessian = np.asarray(tp.hessian(cubic_mix)(x))
    grad = tp.grad(cubic_mix)
    eps = 1e-6
    fd = np.stack([(np.asarray(grad(x + eps * e)) - np.asarray(grad(x - eps * e))) / (2 * eps)
                   for e in np.eye(4)], axis=1)
    np.testing.assert_allclose(hessian, fd, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(hessian, hessian.T, rtol=1e-12)
    want = hessian @ np.asarray(v)
    forward_over_reverse = tp.jvp(grad, (x,), (v,))[1]
    reverse_over_forward = tp.grad(lambda y: tp.jvp(cubic_mix, (y,), (v,))[1])(x)
    np.testing.assert_allclose(np.asarray(forward_over_reverse), want, rtol=1e-10)
    np.testing.assert_allclose(np.asarray(reverse_over_forward), want, rtol=1e-10)
    np.testing.assert_allclose(np.asarray(tp.jacfwd(tp.jacrev(cubic_mix))(x)), hessian,
                               rtol=1e-12)
    # Under jit in float32 (IREE 3.13 fails to compile this float64 module: noted).
    monkeypatch.setattr(tp.config, "enable_x64", False)
    x32 = np.asarray(x, np.float32)
    np.testing.assert_allclose(np.asarray(tp.jit(tp.hessian(cubic_mix))(x32)),
                               np.asarray(tp.hessian(cubic_mix)(x32)), rtol=1e-5, atol=1e-6)


def two_outputs(x, y):
    return {"sum": jnp.sum(x * y), "prod": x * jnp.sin(y)}


def test_jacobian_layout_matches_jax_for_pytrees():
    x = np.array([0.2, 0.4, 0.6], np.float32)
    y = np.array([1.0, 2.0, 3.0], np.float32)
    fwd = tp.jacfwd(two_outputs, argnums=(0, 1))(x, y)
    rev = tp.jacrev(two_outputs, argnums=(0, 1))(x, y)
    assert np.shape(fwd["prod"][1]) == (3, 3) and np.shape(fwd["sum"][0]) == (3,)
    np.testing.assert_allclose(np.asarray(fwd["prod"][1]), np.diag(x * np.cos(y)), rtol=1e-6)
    for a, b in zip(tp.tree_util.tree_leaves(fwd), tp.tree_util.tree_leaves(rev)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-6, atol=1e-7)
    jax = pytest.importorskip("jax")
    jnp_jax = jax.numpy

    def jax_two(x, y):
        return {"sum": jnp_jax.sum(x * y), "prod": x * jnp_jax.sin(y)}

    want = jax.jacfwd(jax_two, argnums=(0, 1))(x, y)
    assert jax.tree_util.tree_structure(want) == jax.tree_util.tree_structure(
        tp.tree_util.tree_map(np.asarray, fwd))
    for a, b in zip(tp.tree_util.tree_leaves(fwd), jax.tree_util.tree_leaves(want)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-6, atol=1e-7)


def test_linearize_and_source():
    x = np.array([0.3, 0.5], np.float32)
    out, f_jvp = tp.linearize(cubic_mix, x)
    v = np.array([1.0, 2.0], np.float32)
    np.testing.assert_allclose(np.asarray(f_jvp(v)),
                               np.asarray(tp.jvp(cubic_mix, (x,), (v,))[1]), rtol=1e-6)
    source = tp.jvp(cubic_mix).source
    assert "def jvp_cubic_mix(x, *, x_dot=None):" in source
    assert "# jvp of: test_forward.py" in source and "x_dot * jnp.cos(x)" in source
    assert "def jvp_" in tp.jacfwd(cubic_mix).source and "def vjp_" in tp.jacrev(cubic_mix).source
    assert "def jvp_jacrev_cubic_mix" in tp.hessian(cubic_mix).source  # jacfwd(jacrev(f))


@tp.custom_jvp
def safe_log1pexp(x):
    return jnp.log1p(jnp.exp(x))


@safe_log1pexp.defjvp
def _safe_log1pexp_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return safe_log1pexp(x), t * 0.5  # deliberately not the true derivative


def uses_custom(x):
    return jnp.sum(safe_log1pexp(x) * 2.0)


def test_custom_jvp_rule_is_used_in_both_modes():
    x = np.array([0.3, -1.0, 2.0], np.float32)
    v = np.array([1.0, 1.0, -2.0], np.float32)
    out, out_dot = tp.jvp(uses_custom, (x,), (v,))
    np.testing.assert_allclose(float(out_dot), float(np.sum(v * 0.5 * 2.0)), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(tp.grad(uses_custom)(x)), np.full(3, 1.0), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(tp.jit(tp.grad(uses_custom))(x)), np.full(3, 1.0),
                               rtol=1e-6)


@tp.custom_vjp
def clip_gradient(x):
    return x


clip_gradient.defvjp(lambda x: (x, None), lambda _, g: (jnp.clip(g, -1.0, 1.0),))


def uses_custom_vjp(x):
    return jnp.sum(clip_gradient(x))


def test_custom_vjp_under_jvp_is_jaxs_error():
    x = np.ones(2, np.float32)
    with pytest.raises(tp.TranspileError, match="custom_vjp"):
        tp.jvp(uses_custom_vjp, (x,), (x,))


def int_scale(x, n):
    return x * n


def test_bad_tangents_are_clear_errors():
    x = np.ones(3, np.float32)
    with pytest.raises(TypeError, match="tuple or a list"):
        tp.jvp(cubic_mix, x, x)
    with pytest.raises(ValueError, match="shape"):
        tp.jvp(cubic_mix, (x,), (np.ones(2, np.float32),))
    with pytest.raises(TypeError, match="dtype"):
        tp.jvp(cubic_mix, (x,), (np.ones(3, np.int32),))
    with pytest.raises(TypeError, match="structure"):
        tp.jvp(lambda p: jnp.sum(p["a"]), ({"a": x},), ([x],))
    with pytest.raises(tp.TranspileError, match="primal 1 has dtype int32"):
        tp.jvp(int_scale, (x, np.int32(2)), (x, np.int32(1)))
    with pytest.raises(TypeError, match="sub-dtype of np.inexact"):
        tp.jacfwd(int_scale, argnums=1)(x, np.int32(2))
    with pytest.raises(TypeError, match="output must be an array"):
        tp.jacfwd(lambda y: "text")(x)


SMALL = [p for p in SCALAR
         if sum(np.size(x) for x in tp.tree_util.tree_leaves(p.args[p.argnums])) <= 16]


@pytest.mark.parametrize("program", SMALL, ids=[p.name for p in SMALL])
def test_hessian_of_corpus_programs(program, monkeypatch):
    """hessian (forward over the generated reverse code) against central differences of
    grad, in float64; the Hessian is symmetric."""
    monkeypatch.setattr(tp.config, "enable_x64", True)
    args = tuple(_cast(a, np.float64) for a in program.args)
    i = program.argnums
    hessian = tp.hessian(program.fn, argnums=i, has_aux=program.has_aux)(*args)
    grad = tp.grad(program.fn, argnums=i, has_aux=program.has_aux)
    if program.has_aux:
        hessian = hessian[0]
    leaves, treedef = tp.tree_util.tree_flatten(args[i])
    if len(leaves) != 1:  # pytree parameters: the layout is checked by the Jacobian tests
        return
    x = np.asarray(leaves[0])
    flat = np.asarray(hessian).reshape(x.size, x.size)
    eps = 1e-6
    for k in range(x.size):
        e = np.zeros(x.size)
        e[k] = eps
        step = [list(args), list(args)]
        step[0][i] = jnp.asarray(x + e.reshape(x.shape))
        step[1][i] = jnp.asarray(x - e.reshape(x.shape))
        gp, gm = (grad(*s) for s in step)
        if program.has_aux:
            gp, gm = gp[0], gm[0]
        column = (np.asarray(gp) - np.asarray(gm)).reshape(-1) / (2 * eps)
        np.testing.assert_allclose(flat[:, k], column, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(flat, flat.T, rtol=1e-8, atol=1e-9)


# All 29 small programs pass under jit (checked once, ~9 min); CI runs a sample.
# normalize_rows and sigmoid_mix: IREE's O3 fails on their unrolled Hessians ("operand
# does not dominate this use"); the compiler retries at O1.
JIT_JACOBIANS = [p for p in SMALL if p.name in (
    "sum_of_squares", "sin_cos", "rnn", "softplus_sum", "normalize_rows", "sigmoid_mix",
    "cumulative", "clipped", "log_sum_exp", "loop_over_rows")]


@pytest.mark.parametrize("program", JIT_JACOBIANS, ids=[p.name for p in JIT_JACOBIANS])
def test_jacobians_and_hessian_under_jit(program):
    args = tuple(_cast(a, np.float32) for a in program.args)
    static = tuple(k for k, a in enumerate(program.args)
                   if isinstance(a, (bool, int)) and not isinstance(a, float))
    for make in (tp.jacfwd, tp.jacrev, tp.hessian):
        transform = make(program.fn, argnums=program.argnums, has_aux=program.has_aux)
        eager = transform(*args)
        staged = tp.jit(transform, static_argnums=static)(*args)
        for got, want in zip(tp.tree_util.tree_leaves(staged), tp.tree_util.tree_leaves(eager)):
            np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-4, atol=1e-5)


class _Settings:
    scale = 2.0


ad = _Settings()  # a user global named like the generated code's helper module


def uses_ad_name(x):
    return jnp.sum(jnp.sin(x) * ad.scale)


def test_user_names_that_shadow_helper_modules():
    x = np.array([0.1, 0.2], np.float32)
    v = np.ones(2, np.float32)
    out_dot = tp.jvp(uses_ad_name, (x,), (v,))[1]
    np.testing.assert_allclose(float(out_dot), float(np.sum(np.cos(x) * 2.0)), rtol=1e-6)
    assert "_ad.tangent_like" in tp.jvp(uses_ad_name).source
    np.testing.assert_allclose(np.asarray(tp.grad(uses_ad_name)(x)), np.cos(x) * 2.0, rtol=1e-6)
