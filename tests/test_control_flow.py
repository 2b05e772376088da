"""Control flow: the programs corpus (tests/programs/control_flow.py: `lax` forms and
Python `if`/`while`/`for`, converted under jit) against NumPy, under jit, and through grad
(against float64 finite differences of the NumPy reference) and jvp; the `lax` API's
semantics, its lowering, and its errors."""

from __future__ import annotations

import re

import numpy as np
import pytest

import transpiler as tp
import transpiler.numpy as jnp
from transpiler import lax, tree_util
from tests.programs.control_flow import PROGRAMS, Program


def _nums(p: Program) -> tuple:
    return (p.argnums,) if isinstance(p.argnums, int) else tuple(p.argnums)


def _to64(x):
    return np.asarray(x, np.float64) if isinstance(x, (np.ndarray, np.floating)) else x


def _arrays(args):
    return tree_util.tree_map(lambda x: jnp.asarray(x) if isinstance(x, (np.ndarray, np.generic))
                              else x, args)


def reference_gradient(p: Program, i: int, eps: float = 1e-6) -> list[np.ndarray]:
    """Central differences of the NumPy reference, in float64: an independent oracle."""
    args = tree_util.tree_map(_to64, p.args)
    leaves, tree = tree_util.tree_flatten(args[i])
    grads = []
    for k, leaf in enumerate(leaves):
        leaf = np.asarray(leaf, np.float64)
        g = np.zeros(leaf.shape)
        for idx in np.ndindex(leaf.shape):
            values = []
            for sign in (1, -1):
                moved = [np.array(lf, np.float64) for lf in leaves]
                moved[k][idx] += sign * eps
                new_args = list(args)
                new_args[i] = tree_util.tree_unflatten(tree, moved)
                values.append(float(p.reference(*new_args)))
            g[idx] = (values[0] - values[1]) / (2 * eps)
        grads.append(g)
    return grads


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.name)
def test_eager_matches_numpy(program):
    got = program.fn(*_arrays(program.args))
    want = program.reference(*tree_util.tree_map(_to64, program.args))
    np.testing.assert_allclose(np.asarray(got), want, rtol=2e-4, atol=1e-5)


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.name)
def test_jit_matches_eager(program):
    args = _arrays(program.args)
    eager = program.fn(*args)
    staged = tp.jit(program.fn)(*args)
    np.testing.assert_allclose(np.asarray(staged), np.asarray(eager), rtol=2e-5, atol=1e-6)


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.name)
def test_grad_matches_finite_differences(program, monkeypatch):
    monkeypatch.setattr(tp.config, "enable_x64", True)
    args = _arrays(tree_util.tree_map(_to64, program.args))
    grads = tp.grad(program.fn, argnums=_nums(program))(*args)
    for i, g in zip(_nums(program), grads):
        got = [np.asarray(leaf) for leaf in tree_util.tree_leaves(g)]
        want = reference_gradient(program, i)
        assert len(got) == len(want)
        for a, b in zip(got, want):
            assert a.dtype == np.float64
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6, err_msg=program.name)


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.name)
def test_jit_grad_matches_eager_grad(program):
    args = _arrays(program.args)
    grad_fn = tp.grad(program.fn, argnums=_nums(program))
    if program.jit_grad:  # a Python while on a traced value: reverse mode needs a bound
        with pytest.raises(tp.TranspileError, match=re.escape(program.jit_grad)):
            tp.jit(grad_fn)(*args)
        return
    eager, staged = grad_fn(*args), tp.jit(grad_fn)(*args)
    for a, b in zip(tree_util.tree_leaves(eager), tree_util.tree_leaves(staged)):
        np.testing.assert_allclose(np.asarray(b), np.asarray(a), rtol=2e-4, atol=1e-5,
                                   err_msg=program.name)


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.name)
@pytest.mark.parametrize("staged", [False, True], ids=["eager", "jit"])
def test_jvp_is_the_gradient_along_the_tangent(program, staged):
    args = _arrays(program.args)
    nums = _nums(program)
    rng = np.random.default_rng(1)
    tangents = tuple(tree_util.tree_map(
        lambda x: jnp.asarray(rng.standard_normal(np.shape(x)).astype(np.float32)), args[i])
        for i in nums)

    assert nums == tuple(range(len(args)))  # the corpus differentiates every argument

    def along(*primals):
        return tp.jvp(program.fn, primals, tangents)

    out, out_dot = (tp.jit(along) if staged else along)(*args)
    grads = tp.grad(program.fn, argnums=nums)(*args)
    want = sum(float(np.sum(np.asarray(g) * np.asarray(t)))
               for gi, ti in zip(grads, tangents)
               for g, t in zip(tree_util.tree_leaves(gi), tree_util.tree_leaves(ti)))
    np.testing.assert_allclose(float(out), float(program.fn(*args)), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(float(out_dot), want, rtol=2e-4, atol=1e-5)


# --- semantics -----------------------------------------------------------------------------

def test_eager_semantics_match_python():
    x = jnp.arange(4.0)
    assert float(jnp.sum(lax.cond(True, lambda v: v + 1, lambda v: v - 1, x))) == 10.0
    assert float(lax.switch(7, [lambda: 1.0, lambda: 2.0, lambda: 3.0])) == 3.0   # clamped
    assert float(lax.switch(-2, [lambda: 1.0, lambda: 2.0])) == 1.0
    assert float(lax.fori_loop(2, 5, lambda i, c: c + i, 0)) == 9
    assert int(lax.while_loop(lambda c: c < 10, lambda c: c * 2, 1)) == 16
    assert int(lax.while_loop(lambda c: c < 10, lambda c: c * 2, 1, max_iters=2)) == 4
    carry, ys = lax.scan(lambda c, v: (c + v, c * v), 0.0, x, reverse=True)
    np.testing.assert_allclose(np.asarray(ys), [0.0 * 6, 1.0 * 5, 2.0 * 3, 0.0])
    assert float(carry) == 6.0
    carry, ys = lax.scan(lambda c, _: (c + 1, None), 0, None, length=3)
    assert int(carry) == 3 and ys is None
    np.testing.assert_allclose(np.asarray(lax.map(jnp.sin, x)), np.sin(np.arange(4.0)),
                               rtol=1e-6)


@pytest.mark.parametrize("n", [0, 1, 3])
def test_scan_under_jit_matches_eager_with_pytrees(n):
    xs = {"a": jnp.arange(float(n * 2)).reshape(n, 2), "b": jnp.arange(n)}

    def f(xs):
        def step(c, x):
            return c + jnp.sum(x["a"]) * x["b"], {"s": x["a"] * 2.0, "t": c}
        return lax.scan(step, 0.0, xs)

    eager, staged = f(xs), tp.jit(f)(xs)
    for a, b in zip(tree_util.tree_leaves(eager), tree_util.tree_leaves(staged)):
        np.testing.assert_allclose(np.asarray(b), np.asarray(a))
        assert np.asarray(a).shape == np.asarray(b).shape


def test_lowering_is_structured_control_flow():
    x = jnp.ones(3)

    def f(x, i):
        y = lax.cond(jnp.sum(x) > 0, lambda v: v * 2.0, lambda v: -v, x)
        y = lax.switch(i, [lambda v: v, lambda v: v + 1.0, lambda v: v * v], y)
        return lax.while_loop(lambda v: jnp.sum(v) < 100.0, lambda v: v * 1.5, y)

    text = tp.jit(f).lower(x, 1).as_text()
    assert len(re.findall(r"stablehlo\.while", text)) == 1
    assert len(re.findall(r'"stablehlo\.if"', text)) == 1
    assert len(re.findall(r'"stablehlo\.case"', text)) == 1
    # a static predicate or index picks its branch at trace time
    static = tp.jit(lambda x: lax.cond(True, lambda v: v, lambda v: -v, x)).lower(x).as_text()
    assert "stablehlo.if" not in static


def test_weak_carry_takes_the_body_dtype():
    f = tp.jit(lambda x: lax.fori_loop(0, 3, lambda i, c: c * x, 1))
    out = f(jnp.asarray(2.0))
    assert out.dtype == np.float32 and float(out) == 8.0


def test_branches_and_bodies_close_over_traced_values():
    def f(x, w):
        def body(i, c):
            return c * w + x[i]
        return lax.fori_loop(0, 3, body, jnp.zeros(()))
    x = jnp.array([1.0, 2.0, 3.0])
    assert float(tp.jit(f)(x, 2.0)) == float(f(x, 2.0)) == 11.0


def test_nested_functions_and_lambdas_are_differentiated_with_their_closures():
    def f(x, w):
        g = lambda y: jnp.sin(y * w)  # noqa: E731
        def h(z):
            return z * w + g(z)
        return jnp.sum(h(x))
    x, w = jnp.ones(3), jnp.asarray(2.0)
    gx, gw = tp.grad(f, argnums=(0, 1))(x, w)
    np.testing.assert_allclose(np.asarray(gx), np.full(3, 2.0 + 2.0 * np.cos(2.0)), rtol=1e-6)
    np.testing.assert_allclose(float(gw), 3.0 * (1.0 + np.cos(2.0)), rtol=1e-6)
    _, dot = tp.jvp(f, (x, w), (jnp.zeros(3), jnp.asarray(1.0)))
    np.testing.assert_allclose(float(dot), float(gw), rtol=1e-6)


# --- errors --------------------------------------------------------------------------------

def test_branch_type_mismatch_names_the_leaf_and_the_branches():
    f = tp.jit(lambda x: lax.cond(jnp.sum(x) > 0, lambda v: v, lambda v: v[:2], x))
    with pytest.raises(TypeError, match=r"float32\[3\] \(true_fun\), float32\[2\] \(false_fun\)"):
        f(jnp.ones(3))


def test_loop_body_that_changes_the_carry_shape_is_an_error():
    f = tp.jit(lambda x: lax.while_loop(lambda v: jnp.sum(v) < 10.0,
                                        lambda v: jnp.concatenate([v, v]), x))
    with pytest.raises(TypeError, match=r"changes the shape of carry leaf 0 from float32\[3\] "
                                        r"to float32\[6\]"):
        f(jnp.ones(3))


def test_scan_over_arrays_of_different_lengths_is_an_error():
    with pytest.raises(ValueError, match="leaf 0: 3, leaf 1: 4"):
        lax.scan(lambda c, x: (c, x), 0.0, (jnp.ones(3), jnp.ones(4)))


def test_while_loop_condition_must_be_a_boolean_scalar():
    with pytest.raises(TypeError, match="boolean scalar"):
        tp.jit(lambda x: lax.while_loop(lambda v: v < 3.0, lambda v: v + 1.0, x))(jnp.ones(2))


def test_reverse_mode_of_a_while_under_jit_needs_no_bound():
    def f(x):
        return lax.while_loop(lambda v: v < 10.0, lambda v: v * 2.0, x)
    assert float(tp.grad(f)(jnp.asarray(1.5))) == 8.0   # eagerly the trip count is known
    assert float(tp.jit(tp.grad(f))(jnp.asarray(1.5))) == 8.0  # checkpointed (test_while_gradient)
    bounded = tp.jit(tp.grad(lambda x: lax.while_loop(lambda v: v < 10.0, lambda v: v * 2.0,
                                                       x, max_iters=20)))
    assert float(bounded(jnp.asarray(1.5))) == 8.0


def test_reverse_mode_of_fori_loop_with_traced_bounds_is_an_error():
    f = tp.jit(tp.grad(lambda x, n: lax.fori_loop(0, n, lambda i, c: c * x, 1.0)))
    with pytest.raises(tp.TranspileError, match="static trip count"):
        f(jnp.asarray(2.0), 3)


def test_every_control_flow_function_has_derivative_rules_every_transform_reads():
    """One rule per control-flow function and direction; forward mode, reverse mode and
    vmap transform the rule itself (second derivatives, batched derivatives)."""
    from transpiler.rule_code import readers
    from transpiler.transforms.common import classify
    from transpiler.transforms.ad import control as control_ad
    for name in classify._CONTROL_FLOW:
        fn = getattr(lax, name)
        assert classify.callee_kind(fn) == "control"
        for rules in (control_ad.VJP_RULES, control_ad.JVP_RULES):
            assert readers(rules[name], derivative_rules_only=True) == {
                "forward mode", "reverse mode", "vmap"}, name


def test_switch_inside_a_loop_differentiates_under_jit():
    def f(w, x):
        def body(i, c):
            return lax.switch(i % 3, [lambda v: v * w, lambda v: jnp.sin(v) + w,
                                      lambda v: v * v * w], c)
        return jnp.sum(lax.fori_loop(0, 5, body, x))
    w, x = jnp.asarray(0.9), jnp.array([0.3, -0.2, 0.5])
    grad_fn = tp.grad(f, argnums=(0, 1))
    eager, staged = grad_fn(w, x), tp.jit(grad_fn)(w, x)
    for a, b in zip(eager, staged):
        np.testing.assert_allclose(np.asarray(b), np.asarray(a), rtol=1e-5, atol=1e-6)
    eps = 1e-3
    numeric = (float(f(w + eps, x)) - float(f(w - eps, x))) / (2 * eps)
    np.testing.assert_allclose(float(eager[0]), numeric, rtol=2e-2)


def _until_done(x):
    """A `done` flag the body replaces without reading it, which the condition reads."""
    return lax.while_loop(lambda c: ~c[1] & (c[0] < 3),
                          lambda c: (c[0] + 1, c[2][0] > 2.0, c[2] + 1.0),
                          (0, jnp.asarray(False), x))


def test_while_body_may_replace_a_flag_it_does_not_read():
    """IREE 3.13 crashed (signal 11) compiling such a loop when its flag was returned; the
    body now reads every carry (regions._reading_every_argument)."""
    x = np.ones(2, np.float32)
    done = tp.jit(lambda v: _until_done(v)[1])(x)
    assert bool(done) is True
    flag, values = tp.jit(lambda v: (_until_done(v)[1], _until_done(v)[2]))(x)
    assert bool(flag) is True
    np.testing.assert_array_equal(values, [4.0, 4.0])
