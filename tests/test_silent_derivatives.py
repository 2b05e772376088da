"""Derivatives that were once silently wrong (issue 17): each returned a value, no error.

The rule these guard: a callee that receives a differentiated or batched value and cannot be
transformed is an error at the user's line -- never a zero, never a dropped term.
"""

from __future__ import annotations

import functools
import sys
import types
from typing import Any, NamedTuple

import numpy as np
import pytest

import transpiler as tp
import transpiler.numpy as jnp
from transpiler import nn
from transpiler.errors import TranspileError
from tests.oracles import finite_differences

F32 = np.float32


# --- custom rules, with the transform applied to the custom function itself -----------------

@tp.custom_jvp
def log1pexp(x):
    return jnp.log(1.0 + jnp.exp(x))


@log1pexp.defjvp
def log1pexp_jvp(primals, tangents):
    (x,), (x_dot,) = primals, tangents
    return log1pexp(x), (1 - 1 / (1 + jnp.exp(x))) * x_dot


@tp.custom_jvp
def sided(x):
    return x


@sided.defjvp
def sided_jvp(primals, tangents):
    (x,), (x_dot,) = primals, tangents
    if x >= 0:
        return sided(x), x_dot
    return sided(x), 2 * x_dot


@tp.custom_jvp
def half_ruled(x, y):
    return x ** 2 * y


half_ruled.defjvps(lambda x_dot, out, x, y: 2 * x * y * x_dot, None)


@functools.partial(tp.custom_vjp, nondiff_argnums=(0,))
def app(f, x):
    return f(x)


app.defvjp(lambda f, x: (app(f, x), x), lambda f, x, g: (5 * g,))


CUSTOM = {
    "grad log1pexp(100)": (lambda: tp.grad(log1pexp)(100.0), 1.0),
    "jit(grad) log1pexp(100)": (lambda: tp.jit(tp.grad(log1pexp))(100.0), 1.0),
    "jvp log1pexp(100)": (lambda: tp.jvp(log1pexp, (100.0,), (1.0,))[1], 1.0),
    "vmap(grad) log1pexp": (lambda: tp.vmap(tp.grad(log1pexp))(np.array([100.0, 0.0], F32)),
                            [1.0, 0.5]),
    "jacrev log1pexp": (lambda: tp.jacrev(log1pexp)(np.array([0.0, 100.0], F32)),
                        np.diag([0.5, 1.0])),
    "jacfwd log1pexp": (lambda: tp.jacfwd(log1pexp)(np.array([0.0, 100.0], F32)),
                        np.diag([0.5, 1.0])),
    "rule with a Python if, x < 0": (lambda: tp.grad(sided)(-1.0), 2.0),
    "rule with a Python if, x >= 0": (lambda: tp.grad(sided)(1.0), 1.0),
    "defjvps None is a zero": (lambda: tp.grad(half_ruled, 1)(2.0, 3.0), 0.0),
    "defjvps rule": (lambda: tp.grad(half_ruled, 0)(2.0, 3.0), 12.0),
    "custom_vjp with nondiff_argnums": (lambda: tp.grad(app, 1)(lambda x: x ** 3, 3.0), 5.0),
}


@pytest.mark.parametrize("name", CUSTOM)
def test_custom_rule_of_the_transformed_function_is_used(name):
    fn, want = CUSTOM[name]
    np.testing.assert_allclose(np.asarray(fn()), want, rtol=1e-6)


def test_second_order_through_a_custom_jvp_and_a_custom_vjp_differentiates_the_rules():
    """As JAX does: reverse mode of the rule's tangent output (custom_jvp), of the bwd
    rule and the fwd rule's residuals (custom_vjp) -- log1pexp'' = sigmoid' = 0.25 at 0."""
    for x in (0.0, 1.5):
        s = 1 / (1 + np.exp(-x))
        for got in (tp.grad(tp.grad(lambda x: log1pexp(x)))(x), tp.grad(tp.grad(log1pexp))(x),
                    tp.jacfwd(tp.grad(log1pexp))(x), tp.hessian(log1pexp)(x),
                    tp.jit(tp.grad(tp.grad(log1pexp)))(x)):
            np.testing.assert_allclose(float(got), s * (1 - s), rtol=1e-5)

    @tp.custom_vjp
    def sin_ruled(x):
        return jnp.sin(x)

    sin_ruled.defvjp(lambda x: (sin_ruled(x), jnp.cos(x)), lambda c, g: (c * g,))
    for fn, scale in ((sin_ruled, 1.0), (lambda x: 2 * sin_ruled(x), 2.0)):
        for got in (tp.grad(tp.grad(fn))(1.0), tp.jit(tp.grad(tp.grad(fn)))(1.0)):
            np.testing.assert_allclose(float(got), -scale * np.sin(1.0), rtol=1e-5)


# --- relu's convention at the kink -----------------------------------------------------------

@pytest.mark.parametrize("fn, x, want", [
    (nn.relu, 0.0, 0.0), (nn.relu, 1.0, 1.0), (nn.relu, -1.0, 0.0),
    (nn.relu6, 0.0, 0.0), (nn.relu6, 6.0, 0.0), (nn.relu6, 3.0, 1.0)])
def test_relu_gradient_at_the_kinks_is_zero(fn, x, want):
    assert float(tp.grad(fn)(x)) == want
    assert float(tp.jit(tp.grad(fn))(x)) == want


def test_relu_keeps_nan():
    assert np.isnan(np.asarray(nn.relu(jnp.asarray(np.nan))))


# --- list.append in a loop -------------------------------------------------------------------

def appended(x):
    outs = []
    for i in range(3):
        outs.append(x * (i + 1))
    return jnp.sum(jnp.stack(outs))


def appended_under_if(x):
    outs = []
    for i in range(3):
        if i != 1:
            outs.append(x * (i + 1))
    return jnp.sum(jnp.stack(outs))


@pytest.mark.parametrize("fn, want", [(appended, 6.0), (appended_under_if, 4.0)])
@pytest.mark.parametrize("transform", ["grad", "jit(grad)", "jvp", "vmap(grad)"])
def test_values_collected_with_append_keep_their_gradient(fn, want, transform):
    if transform == "grad":
        got = tp.grad(fn)(1.0)
    elif transform == "jit(grad)":
        got = tp.jit(tp.grad(fn))(1.0)
    elif transform == "jvp":
        got = tp.jvp(fn, (1.0,), (1.0,))[1]
    else:
        got = tp.vmap(tp.grad(fn))(np.ones(2, F32))
    np.testing.assert_allclose(np.asarray(got), want)


# --- builtins over traced values ---------------------------------------------------------------

def with_builtins(x):
    return max(x[0], x[1]) + min(x[1], x[2]) + abs(x[2]) + sum([x[0], x[1]])


def test_builtin_max_min_abs_sum():
    x = np.array([1.0, 3.0, -2.0], F32)
    # d/dx: max picks x1, min picks x2, abs(x2) = -x2, sum adds x0 and x1
    np.testing.assert_allclose(tp.grad(with_builtins)(x), [1.0, 2.0, 0.0])
    np.testing.assert_allclose(tp.jvp(with_builtins, (x,), (np.ones(3, F32),))[1], 3.0)
    xs = np.stack([x, -x])
    np.testing.assert_allclose(tp.vmap(with_builtins)(xs), [with_builtins(r) for r in xs])
    np.testing.assert_allclose(tp.grad(lambda v: max(v) * 2.0)(np.array([1.0, 5.0, 2.0], F32)),
                               [0.0, 2.0, 0.0])
    assert float(tp.grad(lambda v: v * max(2, 3))(1.0)) == 3.0


def test_builtin_max_agrees_with_finite_differences():
    x = np.array([0.3, -1.2, 2.5], np.float64)
    g = np.asarray(tp.grad(with_builtins)(x.astype(F32)), np.float64)
    eps = 1e-4
    fd = [(with_builtins(x + eps * e) - with_builtins(x - eps * e)) / (2 * eps)
          for e in np.eye(3)]
    np.testing.assert_allclose(g, fd, atol=1e-3)


# --- builtins that return iterators, and loops over dicts: once zeros ----------------------------

class Pair(NamedTuple):
    w: Any
    b: Any


def _reversed_list(xs):
    return list(reversed(xs))[0] * 3.0 + xs[1] ** 2


def _zip_held(xs):
    pairs = zip(xs, xs[1:])
    return sum(a * b for a, b in pairs)


def _enumerate_listed(xs):
    return list(enumerate(xs))[1][1] * 2.0 + xs[0] ** 2


def _sorted_values(xs):
    return sorted(xs)[0] * 5.0 + sorted(xs, key=lambda v: -v, reverse=True)[1] ** 2


def _getattr_field(xs):
    return getattr(Pair(xs[0], xs[1]), "w") * 3.0 + getattr(Pair(xs[0], xs[1]), "b", 0.0)


def _dict_of_zip(xs):
    return dict(zip(["a", "b"], xs))["b"] * 3.0 + xs[0]


def _loop_over_int_keys(d):
    total = 0.0
    for k in d:                    # keys, not the values a lowered loop indexed by position
        total = total + d[k] ** 3 * (k + 1.0)
    return total


def _sum_over_keys(d):
    return sum(jnp.sum(d[k] ** 2) * i for i, k in enumerate(sorted(d)))


@pytest.mark.parametrize("fn", [_reversed_list, _zip_held, _enumerate_listed, _sorted_values,
                                _getattr_field, _dict_of_zip])
def test_iterator_builtins_keep_derivatives(fn):
    xs = [F32(1.5), F32(-0.5), F32(2.0)]
    want = finite_differences(lambda v: fn(list(v)), xs, 1e-3)
    np.testing.assert_allclose(np.array(tp.grad(fn)(xs)), want, rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(tp.jvp(fn, (xs,), ([F32(1)] * 3,))[1], want.sum(), rtol=1e-3)
    batch = [np.array([v, 2 * v], F32) for v in xs]
    if fn is _sorted_values:  # comparing traced values: an error under jit and vmap, as in JAX
        for transformed in (tp.jit(tp.grad(fn)), tp.vmap(fn)):
            with pytest.raises(Exception, match="bool|no single order") as info:
                transformed(batch if transformed.__class__.__name__ != "Jitted" else xs)
            assert f"{__file__}:" in str(info.value)
        return
    np.testing.assert_allclose(np.array(tp.jit(tp.grad(fn))(xs)), want, rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(tp.vmap(fn)(batch),
                               [fn([b[0] for b in batch]), fn([b[1] for b in batch])], rtol=1e-5)


def _own_zip(xs, zip=lambda a, b: [(a[0] * 2.0, b[0])]):
    pairs = zip(xs, xs)          # the function's own `zip`, not the builtin's stand-in
    return pairs[0][0] * pairs[0][1]


def test_a_local_name_shadowing_a_builtin_is_called():
    assert float(tp.grad(_own_zip)([F32(3.0)])[0]) == 12.0


def test_loops_over_dicts_iterate_their_keys():
    d = {0: F32(1.0), 1: F32(2.0)}
    grads = tp.grad(_loop_over_int_keys)(d)
    assert {k: float(v) for k, v in grads.items()} == {0: 3.0, 1: 24.0}
    assert float(tp.jvp(_loop_over_int_keys, (d,), (d,))[1]) == 3.0 * 1 + 24.0 * 2
    hess = tp.hessian(_loop_over_int_keys)(d)
    np.testing.assert_allclose([[float(hess[i][j]) for j in d] for i in d], [[6, 0], [0, 24]])
    np.testing.assert_allclose(tp.vmap(_loop_over_int_keys)({0: np.ones(2, F32),
                                                            1: np.full(2, 2, F32)}), [17, 17])
    arrays = {"b": np.array([3.0, 1.0], F32), "a": np.array([1.0, 2.0], F32)}
    g = tp.grad(_sum_over_keys)(arrays)
    np.testing.assert_allclose(g["a"], 0.0)
    np.testing.assert_allclose(g["b"], 2 * arrays["b"])


@pytest.mark.parametrize("call, error", [
    (lambda: tp.grad(lambda xs: next(iter(xs)) * 3.0)([F32(1), F32(2)]), "iterator"),
    (lambda: tp.jvp(lambda xs: next(iter(xs)) * 3.0, ([F32(1)],), ([F32(1)],)), "iter"),
    (lambda: tp.grad(lambda xs: float(xs[0]) * xs[1])([F32(1), F32(2)]), "drop its derivative"),
])
def test_values_hidden_from_the_transform_are_errors(call, error):
    with pytest.raises(TranspileError, match=error) as info:
        call()
    assert f"{__file__}:" in str(info.value)


def _branch_in_loop(x):
    total = 0.0
    for i in range(3):
        if i != 1:
            y = jnp.sin(x)       # assigned on some iterations only: saved by ad.defined
            total = total + y * x
    return total


def _map_of_square(v):
    return jnp.sum(list(map(jnp.square, [v, 2.0 * v]))[1]) + sum(map(jnp.sum, map(jnp.sin, [v])))


def _map_of_pairs(v):
    return jnp.sum(jnp.stack(list(map(lambda a, b: a * jnp.sin(b), [v, 2.0 * v], [v * v, v]))))


@pytest.mark.parametrize("fn, x", [(_branch_in_loop, np.float32(0.7)),
                                   (_map_of_square, np.array([0.3, -0.5], F32)),
                                   (_map_of_pairs, np.array([0.3, -0.5], F32))])
def test_second_derivatives_through_values_saved_on_some_paths(fn, x):
    """The tape of a loop whose body assigns a value on some paths only (once: its
    tangents dropped in forward-over-reverse, so the Hessian missed terms, and its batch
    axes in vmap(grad))."""
    g = tp.grad(fn)
    x64 = np.asarray(x, np.float64)
    eps = 1e-3
    basis = np.eye(x64.size).reshape((x64.size, *x64.shape))
    fd = np.stack([(np.asarray(g(np.asarray(x64 + eps * e, F32)), np.float64)
                    - np.asarray(g(np.asarray(x64 - eps * e, F32)), np.float64)) / (2 * eps)
                   for e in basis]).reshape(np.shape(tp.hessian(fn)(x)))
    np.testing.assert_allclose(np.asarray(tp.hessian(fn)(x)), fd, rtol=2e-3, atol=2e-3)
    # reverse over reverse (through map of one list: once an error, the tape of a loop
    # inside its derivative's loop; of several lists, zip's, still an error, never a value)
    if fn is _map_of_pairs:
        with pytest.raises(TranspileError, match="in place"):
            tp.jacrev(g)(x)
    else:
        np.testing.assert_allclose(np.asarray(tp.jacrev(g)(x)), fd, rtol=2e-3, atol=2e-3)
        np.testing.assert_allclose(np.asarray(tp.jit(tp.jacrev(g))(x)), fd, rtol=2e-3,
                                   atol=2e-3)
    batch = np.stack([x, 0.5 * x - 0.25])  # vmap(grad): the tape's batch axes (once lost)
    np.testing.assert_allclose(np.asarray(tp.vmap(g)(batch)),
                               np.stack([np.asarray(g(b)) for b in batch]), rtol=1e-5, atol=1e-6)


# --- a loop's variables across iterations, and second derivatives through list building -------

def _previous_iteration(x):
    total = 0.0
    for i in range(3):
        if i > 0:
            total = total + prev * x  # noqa: F821 (the value the previous iteration left)
        prev = jnp.sin(x * (i + 1))
    return total


def _first_iteration_starts(x):
    for i in range(3):
        if i == 0:
            h = jnp.sin(x)
        else:
            h = jnp.sin(h) * x  # (JAX's README MLP with its first layer apart)
    return h


def _read_in_the_other_branch(x):
    acc = x
    for i in range(4):
        if i % 2 == 0:
            t = jnp.sin(acc) * x
        else:
            acc = acc + t * t  # t from an earlier iteration's other branch
    return acc


def _list_built_in_branches(x):
    parts = []
    for i in range(3):
        if i > 0:
            t = jnp.sin(x * i)
            parts.append(t)
        else:
            parts.append(x)
    return jnp.sum(jnp.stack(parts))


LOOPS_ACROSS_ITERATIONS = [_previous_iteration, _first_iteration_starts,
                           _read_in_the_other_branch, _list_built_in_branches]


def _value_differences(fn, x, eps=1e-3):
    return (float(fn(F32(x + eps))) - float(fn(F32(x - eps)))) / (2 * eps)


@pytest.mark.parametrize("fn", LOOPS_ACROSS_ITERATIONS)
@pytest.mark.parametrize("jit", [False, True])
def test_a_variable_first_assigned_in_a_loop_carries_its_derivative_across_iterations(fn, jit):
    """A name first assigned inside a loop and read in a later iteration before it is
    assigned again (``prev``; ``h`` set on the first iteration) was not carried: its
    cotangent never reached the earlier iteration (a wrong gradient, no error; 1.35 for
    1.64), and reverse over reverse of such loops read an unassigned cotangent (a crash).
    Under jit, vmap of a second derivative through a loop was 0: the tape's entries read
    ``locals()`` of a converted branch, not the function's."""
    g = tp.jit(tp.grad(fn)) if jit else tp.grad(fn)
    for x in (0.3, -0.8):
        np.testing.assert_allclose(float(g(F32(x))), _value_differences(fn, x), rtol=2e-3,
                                   atol=2e-3)
        want = _value_differences(tp.grad(fn), x)
        second = tp.jit(tp.grad(tp.grad(fn))) if jit else tp.grad(tp.grad(fn))
        np.testing.assert_allclose(float(second(F32(x))), want, rtol=5e-3, atol=5e-3)
        np.testing.assert_allclose(float(tp.hessian(fn)(F32(x))), want, rtol=5e-3, atol=5e-3)
    xs = np.array([0.3, -0.8], F32)
    loop = [float(tp.grad(tp.grad(fn))(x)) for x in xs]
    for batched in (tp.vmap(tp.grad(tp.grad(fn))), tp.vmap(tp.hessian(fn))):
        np.testing.assert_allclose(np.asarray(tp.jit(batched)(xs) if jit else batched(xs)),
                                   loop, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("fn, x", [
    (lambda x: jnp.sum(jnp.sin(x[None])), F32(0.4)),
    (lambda x: jnp.sum(jnp.sin(jnp.concatenate([x[None], x[None]]))), F32(0.4)),
    (lambda v: jnp.sum(jnp.sin(v[:, None, 1]) * 2.0), np.arange(6, dtype=F32).reshape(2, 3) / 6),
    (lambda v: jnp.sum(jnp.sin(v[None, ..., None]) ** 2), np.arange(6, dtype=F32).reshape(2, 3) / 6),
], ids=["scalar", "scalar-concatenated", "slice-new-int", "new-ellipsis-new"])
def test_gradient_through_an_index_with_new_axes(fn, x):
    """The cotangent of ``x[None]`` (``None`` entries in a basic index) was an error ("cannot
    broadcast an array of shape [1] to shape []"): the new axes are dropped from it."""
    want = finite_differences(lambda a: fn(np.asarray(a, F32)), x, eps=1e-3)
    np.testing.assert_allclose(np.asarray(tp.grad(fn)(x)), want, rtol=2e-3, atol=2e-3)
    np.testing.assert_allclose(np.asarray(tp.jit(tp.grad(fn))(x)), want, rtol=2e-3, atol=2e-3)


def _rnn_total(w):
    total = 0.0
    h = jnp.zeros(3)
    for t in range(4):
        h = jnp.tanh(h * w + t)
        total = total + jnp.sum(h)
    return total


def _nested_loops_output(w):
    acc = w
    for i in range(2):
        for j in range(3):
            acc = jnp.sin(acc) + w
    return acc


@pytest.mark.parametrize("fn", [_rnn_total, _nested_loops_output, *LOOPS_ACROSS_ITERATIONS])
def test_value_and_grad_returns_the_value_a_loop_computed(fn):
    """value_and_grad of a function returning a loop's variable returned that variable's
    first value (0.0 for a loss summed in a loop): the backward loop rebinds the names its
    tape saved, and the output was read after it."""
    x = F32(0.7)
    for transform in (tp.value_and_grad, lambda f: tp.jit(tp.value_and_grad(f))):
        value, grad = transform(fn)(x)
        np.testing.assert_allclose(float(value), float(fn(x)), rtol=1e-6)
        np.testing.assert_allclose(float(grad), float(tp.grad(fn)(x)), rtol=1e-5)
    np.testing.assert_allclose(float(tp.vjp(fn, x)[0]), float(fn(x)), rtol=1e-6)


@pytest.mark.parametrize("fn", [
    lambda x: jnp.sum(jnp.sin(jnp.stack([x]))),
    lambda x: jnp.sum(jnp.sin(jnp.stack([x, 2.0 * x]))),
    lambda x: jnp.sum(jnp.sin(jnp.array([x, x * x]))),
    lambda x: jnp.sum(jnp.sin(jnp.array([[x], [x * x]]))),
    lambda x: jnp.sum(jnp.sin(jnp.concatenate([jnp.expand_dims(x, 0), jnp.ones(1) * x]))),
    lambda x: jnp.sum(jnp.sin(tp.lax.concatenate([jnp.reshape(x, (1,)),
                                                  jnp.reshape(x * x, (1,))], 0))),
], ids=["stack-one", "stack", "array", "array-nested", "concatenate", "lax.concatenate"])
def test_reverse_over_reverse_through_joining(fn):
    """grad(grad(f)) through concatenate's VJP (a list built by unpacking a tuple, whose
    appends reverse mode did not follow) was 0: every stack, jnp.array of traced values and
    concatenate dropped the second derivative."""
    for x in (0.4, -1.1):
        want = _value_differences(tp.grad(fn), x)
        np.testing.assert_allclose(float(tp.grad(tp.grad(fn))(F32(x))), want, rtol=5e-3,
                                   atol=5e-3)
        np.testing.assert_allclose(float(tp.jit(tp.grad(tp.grad(fn)))(F32(x))), want,
                                   rtol=5e-3, atol=5e-3)


# --- found by the hypothesis programs' second-order checks (crashes, once) ----------------------

def _mean_of_dict_values(x):
    d = {"p": jnp.sin(x), "q": x}
    return jnp.sum(sum(jnp.mean(v) for v in d.values()))


def _scaled_sum(u, w, scale=1.0):
    return u * scale + jnp.sin(w)


def _partial_with_static_keyword(x):
    g = functools.partial(_scaled_sum, scale=0.5)
    return jnp.sum(g(x, x))


@pytest.mark.parametrize("fn", [_mean_of_dict_values, _partial_with_static_keyword])
def test_vmap_of_grad_against_a_loop(fn):
    batch = np.stack([np.array([0.1, 0.2, 0.3], F32) * k for k in (1, -2, 3)])
    np.testing.assert_allclose(np.asarray(tp.vmap(tp.grad(fn))(batch)),
                               np.stack([np.asarray(tp.grad(fn)(b)) for b in batch]),
                               rtol=1e-6)


# --- introspection the transforms cannot follow --------------------------------------------

def reads_eval(x):
    y = x * 2
    return jnp.sum(eval("y * x"))


def reads_locals(x):
    y = x * 3
    return jnp.sum(locals()["y"])


@pytest.mark.parametrize("fn", [reads_eval, reads_locals])
@pytest.mark.parametrize("transform", [tp.grad, tp.vmap])
def test_eval_and_locals_are_errors_at_the_line(fn, transform):
    with pytest.raises(TranspileError) as info:
        transform(fn)(np.ones(3, F32))
    assert f"{__file__}:" in str(info.value)


def test_eval_runs_under_plain_jit():
    np.testing.assert_allclose(tp.jit(reads_eval)(np.ones(3, F32)), 6.0)


# --- decorated helpers ----------------------------------------------------------------------

def tripled(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return fn(*args, **kwargs) * 3.0
    return wrapper


@tripled
def doubled(x):
    return x * 2.0


def test_functools_wraps_helper_is_differentiated_through_the_wrapper():
    x = np.ones(3, F32)
    np.testing.assert_allclose(tp.grad(lambda v: jnp.sum(doubled(v)))(x), 6.0)
    np.testing.assert_allclose(tp.jit(tp.grad(lambda v: jnp.sum(doubled(v))))(x), 6.0)
    assert float(tp.grad(doubled)(1.0)) == 6.0
    np.testing.assert_allclose(tp.vmap(doubled)(x), 6.0)
    assert float(tp.jvp(doubled, (1.0,), (1.0,))[1]) == 6.0


# --- NumPy inputs to the Jacobians -----------------------------------------------------------

def stacked(x):
    return jnp.stack([jnp.sin(x[0]) * x[1], x[0] ** 2 + jnp.exp(x[1]), x[0] * x[1] * x[2]])


@pytest.mark.parametrize("kind", ["numpy", "transpiler"])
@pytest.mark.parametrize("jac", [tp.jacrev, tp.jacfwd])
def test_jacobians_of_numpy_inputs(jac, kind):
    x = np.array([0.5, 1.5, 2.0], F32)
    a, b, c = (float(v) for v in x)
    want = [[np.cos(a) * b, np.sin(a), 0.0], [2 * a, np.exp(b), 0.0], [b * c, a * c, a * b]]
    arg = {"numpy": x, "transpiler": jnp.asarray(x)}[kind]
    np.testing.assert_allclose(np.asarray(jac(stacked)(arg)), want, rtol=1e-5)


@pytest.mark.parametrize("arg", [2.0, np.float32(2.0), np.float64(2.0), np.array(2.0, F32)])
def test_scalar_inputs_of_every_kind(arg):
    f = lambda x: x ** 3
    assert float(tp.grad(f)(arg)) == pytest.approx(12.0)
    assert float(tp.jacfwd(f)(arg)) == pytest.approx(12.0)
    assert float(tp.jacrev(f)(arg)) == pytest.approx(12.0)
    assert float(tp.jvp(f, (arg,), (1.0,))[1]) == pytest.approx(12.0)


# --- globals and helpers rebound between calls -------------------------------------------------

def _module(source: str) -> types.ModuleType:
    """A module of `source`, written to a file so the transforms can read it."""
    import importlib.util
    import tempfile
    path = tempfile.NamedTemporaryFile("w", suffix=".py", delete=False)
    path.write(source)
    path.close()
    spec = importlib.util.spec_from_file_location(f"rebinding_{id(path)}", path.name)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


REBINDING = """
K = 1.0

def helper(x):
    return x * 2.0

def f(x):
    return helper(x) * K
"""


def test_grad_vmap_jvp_see_rebound_globals_and_helpers():
    m = _module(REBINDING)
    assert float(tp.grad(m.f)(1.0)) == 2.0
    m.K = 5.0
    assert float(tp.grad(m.f)(1.0)) == 10.0
    m.helper = lambda x: x * 3.0
    assert float(tp.grad(m.f)(1.0)) == 15.0
    assert float(tp.jit(tp.grad(m.f))(1.0)) == 15.0
    np.testing.assert_allclose(tp.vmap(m.f)(jnp.ones(2)), 15.0)
    assert float(tp.jvp(m.f, (1.0,), (1.0,))[1]) == 15.0


def test_jit_retraces_when_a_global_it_read_is_rebound():
    """Deliberately unlike JAX (which keeps the traced value): a jitted function never
    computes with a value its global no longer has."""
    m = _module("G = 0.0\n\ndef impure(x):\n    return x + G\n")
    f = tp.jit(m.impure)
    assert float(f(4.0)) == 4.0
    m.G = 10.0
    assert float(f(5.0)) == 15.0
    m.G = jnp.ones(3)
    np.testing.assert_allclose(f(1.0), [2.0, 2.0, 2.0])


CONVERTED = """
import transpiler as jax

@jax.jit
def step(x):
    for i in range(2):  # converted to lax control flow at the decorator
        x = x * scale
    return [v * scale for v in (x,)][0]
"""


def test_converted_code_sees_globals_defined_or_rebound_after_the_decorator():
    """The decorator converts `step`'s loop before `scale` exists (JAX's spmd MNIST
    example defines its step size under ``if __name__ == "__main__":``), and the
    conversion holds the names it read: it is made again when one changes."""
    m = _module(CONVERTED)
    m.scale = 2.0
    assert float(m.step(1.0)) == 8.0
    m.scale = 3.0
    assert float(m.step(1.0)) == 27.0


# --- values assigned again in every iteration of a Python loop --------------------------------

def last_iteration(x):
    for i in range(3):
        y = x * i
    return y


def last_taken_branch(x):
    for i in range(3):
        if i < 2:
            y = x * (i + 1)
    return y


def static_while(x):
    i = 0
    while i < 3:
        y = jnp.sin(x) * i
        i += 1
    return y


def nested_loops(x):
    for i in range(2):
        for j in range(3):
            y = x * (i + j)
    return y


def read_inside_and_after(x):
    acc = 0.0
    for i in range(3):
        y = x * i
        acc = acc + y
    return acc + y


def mlp(params, inputs):  # JAX's README: the loop variable changes shape
    for W, b in params:
        outputs = jnp.dot(inputs, W) + b
        inputs = jnp.tanh(outputs)
    return outputs


@pytest.mark.parametrize("fn, want", [
    (last_iteration, 2.0), (last_taken_branch, 2.0), (static_while, 2 * np.cos(1.0)),
    (nested_loops, 3.0), (read_inside_and_after, 5.0)])
def test_a_value_reassigned_in_a_loop_gets_only_its_last_cotangent(fn, want):
    np.testing.assert_allclose(tp.grad(fn)(1.0), want, rtol=1e-6)
    np.testing.assert_allclose(tp.jit(tp.grad(fn))(1.0), want, rtol=1e-6)
    np.testing.assert_allclose(tp.vmap(tp.grad(fn))(jnp.ones(2)), [want, want], rtol=1e-6)


def test_the_mlp_of_jax_readme_against_finite_differences():
    rng = np.random.default_rng(0)
    params = [(rng.normal(size=(3, 4)), rng.normal(size=4)),
              (rng.normal(size=(4, 2)), rng.normal(size=2))]
    x = rng.normal(size=(5, 3))

    def loss(p, inputs):
        return jnp.sum(mlp(p, inputs) ** 2)

    f32 = [(w.astype(F32), b.astype(F32)) for w, b in params]
    grads = tp.grad(loss)(f32, x.astype(F32))
    jitted = tp.jit(tp.grad(loss))(f32, x.astype(F32))

    def numpy_loss(p):
        h = x
        for w, b in p:
            out = h @ w + b
            h = np.tanh(out)
        return np.sum(out ** 2)

    eps = 1e-6
    for layer, (w, b) in enumerate(params):
        for k, leaf in enumerate((w, b)):
            fd = np.zeros_like(leaf)
            for idx in np.ndindex(leaf.shape):
                up = [[a.copy() for a in pair] for pair in params]
                down = [[a.copy() for a in pair] for pair in params]
                up[layer][k][idx] += eps
                down[layer][k][idx] -= eps
                fd[idx] = (numpy_loss(up) - numpy_loss(down)) / (2 * eps)
            np.testing.assert_allclose(grads[layer][k], fd, rtol=2e-3, atol=2e-3)
            np.testing.assert_allclose(jitted[layer][k], fd, rtol=2e-3, atol=2e-3)


# --- NumPy's functions on our arrays in transformed code ---------------------------------------

def numpy_calls(x):
    return np.sum(np.sin(x) * x) + np.mean(x)


def test_numpy_functions_are_transpiler_numpy_functions_in_transformed_code():
    x = np.arange(3, dtype=F32)
    want = np.sin(x) + x * np.cos(x) + 1 / 3
    np.testing.assert_allclose(tp.grad(numpy_calls)(x), want, rtol=1e-5)
    np.testing.assert_allclose(tp.jit(tp.grad(numpy_calls))(x), want, rtol=1e-5)
    xs = np.stack([x, 2 * x])  # a NumPy reduction over the batch would be wrong here
    np.testing.assert_allclose(tp.vmap(numpy_calls)(xs), [numpy_calls(r) for r in xs],
                               rtol=1e-6)
    np.testing.assert_allclose(tp.jvp(numpy_calls, (x,), (np.ones(3, F32),))[1], want.sum(),
                               rtol=1e-5)


# --- transforms of transforms, and what bad input gets -----------------------------------------

def test_third_derivative_of_a_primitive():
    np.testing.assert_allclose(tp.grad(tp.grad(tp.grad(jnp.sin)))(1.0), -np.cos(1.0), rtol=1e-6)


def test_has_aux_without_a_pair_is_an_error_at_the_call():
    with pytest.raises(TranspileError, match="must return a pair") as info:
        tp.grad(lambda x: x * 2, has_aux=True)(1.0)
    assert f"{__file__}:" in str(info.value)


def test_out_of_range_static_argnums_is_an_error():
    with pytest.raises(ValueError, match="static_argnums"):
        tp.jit(lambda x: x, static_argnums=3)
    assert float(tp.jit(lambda *xs: xs[0], static_argnums=3)(1.0, 2, 3, 4)) == 1.0


def test_control_flow_errors_are_messages_not_tuples():
    from transpiler import lax
    with pytest.raises(TypeError) as info:
        tp.jit(lambda x: lax.cond(x > 0, lambda v: v, lambda v: (v, v), x))(1.0)
    assert isinstance(info.value, TranspileError)
    assert not str(info.value).startswith("(") and f"{__file__}:" in str(info.value)


# --- found by the malformed-input corpus: once a value, now an error -----------------------------

class _Box:
    pass


def sets_an_attribute(x):
    box = _Box()
    setattr(box, "v", x * 3.0)
    return jnp.sum(box.v)


def total(x):
    return jnp.sum(x)


@pytest.mark.parametrize("call, error", [
    (lambda: tp.grad(sets_an_attribute)(np.ones(3, F32)), "setattr"),
    (lambda: tp.vmap(lambda x: jnp.sum(x) + len(dir()))(np.ones((2, 3), F32)), "dir"),
    (lambda: tp.grad(lambda x: None)(np.ones(3, F32)), "scalar"),
    (lambda: tp.vmap(tp.grad(total))(np.ones((2, 3), np.int32)), "real"),
    (lambda: tp.jit(tp.grad(total))(np.arange(3)), "real"),
])
def test_once_silent_now_an_error_at_the_line(call, error):
    with pytest.raises(TranspileError, match=error) as info:
        call()
    assert f"{__file__}:" in str(info.value)


@pytest.mark.parametrize("options", [{"has_aux": "yes"}, {"argnums": "0"}, {"argnums": 0.5},
                                     {"argnums": ()}, {"argnums": None}])
def test_bad_grad_options_are_type_errors_when_grad_is_created(options):
    with pytest.raises(TypeError, match="has_aux|argnums"):
        tp.grad(total, **options)


def test_names_bound_in_every_block_of_library_code_are_locals():
    """The transforms' local names include what a library composite binds inside
    try/except/else/finally, with and elif blocks (once only if/for/while were read, so a
    value bound in a `try` was taken for a global constant: its derivative dropped)."""
    import libcst as cst

    from transpiler.transforms.common.statements import _all_assigned
    func = cst.parse_module(
        "def f(x):\n"
        "    try:\n        a = x\n    except ValueError as err:\n        b = x\n"
        "    else:\n        c = x\n    finally:\n        d = x\n"
        "    with open(x) as e:\n        g = x\n"
        "    if x:\n        h = x\n    elif x:\n        i = x\n    else:\n        j = x\n"
        "    for k in x:\n        m = x\n"
        "    def inner():\n        n = x\n"
        "    return a\n").body[0]
    assert _all_assigned(func.body.body) == set("abcdeghijkm") | {"err", "inner"}


def _rebound_pack(x):
    g = (x * x, x)
    a, b = (None, None) if g is None else g  # `_t = (None, None)` on one path, `_t = g` on the other
    return a * b


def _rebound_pack_in_loop(x):
    pair = (1.0, 2.0)
    total = 0.0
    for _ in range(2):
        a, b = pair
        total = total + a * b
        pair = (x, x * x)
    return total


@pytest.mark.parametrize("fn, want", [(_rebound_pack, 12.0), (_rebound_pack_in_loop, 12.0)],
                         ids=["if-expression", "loop"])
def test_unpacking_a_name_bound_to_several_tuples_keeps_the_tangent(fn, want):
    """Forward mode follows `a, b = t` element by element only for a `t` bound once; a `t`
    bound to a constant tuple on one path and to a differentiated one on another gave 0."""
    _, tangent = tp.jvp(fn, (2.0,), (1.0,))
    assert float(tangent) == pytest.approx(want)
    assert float(tp.grad(fn)(2.0)) == pytest.approx(want)
    assert float(tp.jacfwd(fn)(2.0)) == pytest.approx(want)
