"""Nested functions and lambdas inside differentiated code (transforms/common/closures.py): their
closed-over values get derivatives, in reverse and forward mode, checked against finite
differences; Python's late binding is honoured or reported."""

from __future__ import annotations

import functools

import numpy as np
import pytest

import transpiler as tp
import transpiler.numpy as jnp
from transpiler.errors import TranspileError
from tests.oracles import finite_differences


def _float32_differences(f, x: np.ndarray) -> np.ndarray:
    """Finite differences of `f` called on float32 arrays (a step float32 can resolve)."""
    return finite_differences(lambda v: f(jnp.asarray(v, jnp.float32)), x, 1e-3)


def lambda_in_a_loop(x):
    acc = 0.0
    for i in range(3):
        g = lambda v: jnp.sin(v * x[i]) + i  # noqa: E731
        acc = acc + jnp.sum(g(x))
    return acc


def closure_called_before_its_variable_changes(x):
    c = x
    for _ in range(3):
        g = lambda v: v * c  # noqa: E731
        y = g(x)
        c = c + y
    return jnp.sum(c)


def nested_closures(x):
    def outer(v):
        def inner(u):
            return u * v * x
        return inner(v) + v
    return jnp.sum(outer(x * 2.0))


def list_of_lambdas(x):
    fs = [lambda v: v * x, lambda v: jnp.cos(v) * x]
    return jnp.sum(fs[0](x) + fs[1](x))


def late_binding(x):
    w = x * 2.0
    h = lambda v: v * w  # noqa: E731  # the-closure
    w = w * 3.0  # h sees this value when it is called below
    return jnp.sum(h(x))


PROGRAMS = [lambda_in_a_loop, closure_called_before_its_variable_changes, nested_closures,
            list_of_lambdas]
X = np.array([0.3, -0.4, 0.7], np.float32)


@pytest.mark.parametrize("f", PROGRAMS, ids=lambda f: f.__name__)
def test_reverse_mode_matches_finite_differences(f):
    np.testing.assert_allclose(np.asarray(tp.grad(f)(jnp.asarray(X))), _float32_differences(f, X),
                               rtol=1e-2, atol=1e-3)


@pytest.mark.parametrize("f", [*PROGRAMS, late_binding], ids=lambda f: f.__name__)
def test_forward_mode_matches_finite_differences(f):
    tangent = np.array([1.0, -0.5, 2.0], np.float32)
    _, dot = tp.jvp(f, (jnp.asarray(X),), (jnp.asarray(tangent),))
    want = float(np.sum(_float32_differences(f, X) * tangent))
    np.testing.assert_allclose(float(dot), want, rtol=1e-2, atol=1e-3)


def test_reverse_mode_reports_a_closure_called_after_its_variable_changed():
    with pytest.raises(tp.TranspileError, match="reads `w`, which is assigned again before "
                                                "the function is called") as info:
        tp.grad(late_binding)(jnp.asarray(X))
    assert info.value.file == __file__ and "the-closure" in str(info.value)


def test_a_lambda_created_on_every_call_is_transformed_once():
    from transpiler.transforms.common import closures
    grad = tp.grad(lambda_in_a_loop)
    grad(jnp.asarray(X))
    before = len(closures._GENERATED)
    grad(jnp.asarray(X * 2.0))
    assert len(closures._GENERATED) == before


def jit_of_a_lambda(a):
    f = tp.jit(lambda x: x * jnp.sin(a))
    return f(3.0)


def jit_of_a_nested_function(a):
    def f(x, power):
        return x * a ** power
    return tp.jit(f)(3.0, 2)


def jit_with_static_arguments(a):
    f = tp.jit(lambda x, n: x * a ** n, static_argnums=1)
    return f(3.0, 3)


def checkpoint_of_a_closure(a):
    block = tp.checkpoint(lambda x: jnp.sin(x * a))
    return block(2.0)


def inner_gradient(a):
    g = tp.grad(lambda x: x * x * a ** 3)
    return g(2.0)  # 4 a^3


def inner_value_and_gradient(a):
    value, slope = tp.value_and_grad(lambda x: jnp.sin(x * a))(2.0)
    return value + slope  # sin(2a) + a cos(2a)


@pytest.mark.parametrize("f, slope, curvature", [
    (jit_of_a_lambda, lambda a: 3 * np.cos(a), lambda a: -3 * np.sin(a)),
    (jit_of_a_nested_function, lambda a: 6 * a, lambda a: 6.0),
    (jit_with_static_arguments, lambda a: 9 * a ** 2, lambda a: 18 * a),
    (checkpoint_of_a_closure, lambda a: 2 * np.cos(2 * a), lambda a: -4 * np.sin(2 * a)),
    (inner_gradient, lambda a: 12 * a ** 2, lambda a: 24 * a),
    (inner_value_and_gradient, lambda a: 3 * np.cos(2 * a) - 2 * a * np.sin(2 * a),
     lambda a: -8 * np.sin(2 * a) - 4 * a * np.cos(2 * a)),
], ids=lambda v: getattr(v, "__name__", ""))
def test_a_transform_of_a_closure_passes_the_closed_over_derivative(f, slope, curvature):
    """``f = jit(lambda x: x * a)`` or ``g = grad(lambda x: x * x * a)`` inside a
    differentiated function: `a`'s derivative flows through the jitted closure or the inner
    gradient (both once gave 0 under grad, without a word) -- under grad, jit(grad), jvp,
    a second outer grad, vmap and vmap(grad)."""
    a = 0.7
    np.testing.assert_allclose(float(tp.grad(f)(a)), slope(a), rtol=1e-5)
    np.testing.assert_allclose(float(tp.jit(tp.grad(f))(a)), slope(a), rtol=1e-5)
    np.testing.assert_allclose(float(tp.jvp(f, (a,), (1.0,))[1]), slope(a), rtol=1e-5)
    np.testing.assert_allclose(float(tp.grad(tp.grad(f))(a)), curvature(a), rtol=1e-4)
    batch = np.array([0.5, -1.5], np.float32)
    np.testing.assert_allclose(np.asarray(tp.vmap(f)(batch)), [float(f(b)) for b in batch],
                               rtol=1e-6)
    np.testing.assert_allclose(np.asarray(tp.vmap(tp.grad(f))(batch)), slope(batch), rtol=1e-5)


def _maml(grad, vmap, np_module):
    """A MAML-style meta-loss: one inner gradient step per task (a closure over the task),
    batched over the tasks, differentiated with respect to the shared parameters."""
    def adapted(params, task):
        step = grad(lambda p: np_module.sum(np_module.sin(p * task) ** 2))(params)
        return params - 0.1 * step

    def meta_loss(params, tasks):
        return np_module.sum(vmap(lambda t: np_module.sum(adapted(params, t) ** 2))(tasks))
    return meta_loss


def test_a_maml_meta_gradient_matches_jax():
    jax = pytest.importorskip("jax")
    params = np.array([0.3, -0.7, 1.1], np.float32)
    tasks = np.arange(6, dtype=np.float32).reshape(2, 3) / 5
    ours, theirs = _maml(tp.grad, tp.vmap, jnp), _maml(jax.grad, jax.vmap, jax.numpy)
    for argnums in (0, 1):
        want = np.asarray(jax.grad(theirs, argnums=argnums)(params, tasks))
        np.testing.assert_allclose(np.asarray(tp.grad(ours, argnums=argnums)(params, tasks)),
                                   want, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(np.asarray(tp.jit(tp.grad(ours, argnums=argnums))(
            params, tasks)), want, rtol=1e-5, atol=1e-6)


def partial_of_a_closure(a):
    bound = functools.partial(lambda x, y: jnp.sin(x * y * a), 2.0)
    return bound(1.5) + functools.partial(bound)(0.5)  # sin(3a) + sin(a)


def jacobians_of_a_closure(a):
    square = lambda x: x * x * a  # noqa: E731
    return tp.jacfwd(square)(2.0) + tp.jacrev(square)(3.0)  # 4a + 6a


def vmap_of_a_gradient_of_a_closure(a):
    slopes = tp.vmap(tp.grad(lambda x: x * x * a))(jnp.arange(3.0))  # 2 x a
    return jnp.sum(slopes) + jnp.sum(tp.vmap(tp.jacfwd(lambda x: x * a))(jnp.ones(2)))


@pytest.mark.parametrize("f, slope", [
    (partial_of_a_closure, lambda a: 3 * np.cos(3 * a) + np.cos(a)),
    (jacobians_of_a_closure, lambda a: 10.0 + 0 * a),
], ids=lambda v: getattr(v, "__name__", ""))
def test_partials_and_jacobians_of_a_closure_pass_its_derivative(f, slope):
    """``functools.partial(closure, ...)``, ``jacfwd(closure)`` and ``jacrev(closure)``:
    the closed-over values' derivative flows through them (all once gave 0)."""
    a = 0.7
    np.testing.assert_allclose(float(tp.grad(f)(a)), slope(a), rtol=1e-5)
    np.testing.assert_allclose(float(tp.jit(tp.grad(f))(a)), slope(a), rtol=1e-5)
    np.testing.assert_allclose(float(tp.jvp(f, (a,), (1.0,))[1]), slope(a), rtol=1e-5)
    batch = np.array([0.5, -1.5], np.float32)
    np.testing.assert_allclose(np.asarray(tp.vmap(f)(batch)), [float(f(b)) for b in batch],
                               rtol=1e-6)


def test_vmap_of_a_gradient_of_a_closure_passes_its_derivative():
    np.testing.assert_allclose(float(tp.grad(vmap_of_a_gradient_of_a_closure)(0.7)), 8.0,
                               rtol=1e-6)
    np.testing.assert_allclose(float(tp.jit(tp.grad(vmap_of_a_gradient_of_a_closure))(0.7)),
                               8.0, rtol=1e-6)
    np.testing.assert_allclose(float(tp.jvp(vmap_of_a_gradient_of_a_closure, (0.7,),
                                            (1.0,))[1]), 8.0, rtol=1e-6)
    with pytest.raises(TranspileError, match="outer batch is not supported yet"):
        tp.vmap(vmap_of_a_gradient_of_a_closure)(np.ones(2, np.float32))


def test_vmap_of_vmap_of_a_closure_is_refused_under_grad():
    """Its batched code holds the closed-over values as constants: an error naming the fix,
    never the zero it once gave."""
    def f(a):
        return jnp.sum(tp.vmap(tp.vmap(lambda x: x * a))(jnp.ones((2, 2))))
    with pytest.raises(TranspileError, match="closes over is not supported yet"):
        tp.grad(f)(1.5)


def custom_rule_over_a_closure(a, kind):
    def base(x):
        return x * a
    if kind == "custom_vjp":
        g = tp.custom_vjp(base)
        g.defvjp(lambda x: (x * a, None), lambda _, bar: (bar * a,))
    else:
        g = tp.custom_jvp(base)
        g.defjvp(lambda p, t: (g(p[0]), t[0] * a))
    return g(2.0)


@pytest.mark.parametrize("kind", ["custom_vjp", "custom_jvp"])
def test_a_custom_rule_made_over_differentiated_values_is_refused(kind):
    """Its rule gives the derivative of its arguments only: an error at the call, never
    the zero it once gave for the closed-over values."""
    with pytest.raises(TranspileError, match="closes over"):
        tp.grad(custom_rule_over_a_closure)(1.5, kind)
