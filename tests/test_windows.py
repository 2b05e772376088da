"""lax.reduce_window, lax.reduce, lax.associative_scan, the cumulative reductions and stax
pooling: values against explicit loops (tests/cases/windows.py) and JAX, eager against
jit, gradients against JAX and float64 central differences, second derivatives, vmap
against a loop, generic (non-monoid) and variadic computations, and the errors for
computations that cannot run on whole arrays."""

from __future__ import annotations

import operator

import numpy as np
import pytest

import transpiler as tp
import transpiler.numpy as jnp
from tests.cases.windows import COMPUTATION, IDENTITY, OPTIONS, loop_window, params_of
from transpiler import lax
from transpiler.config import config
from transpiler.errors import TranspileError
from transpiler.lax.windows import read_computation

rng = np.random.default_rng(0)
X = rng.normal(size=(5, 7)).astype(np.float32)
POSITIVE = rng.uniform(0.5, 1.5, size=(5, 7)).astype(np.float32)
F32 = np.dtype(np.float32)


def pool(kind, option, init=None):
    window, strides, padding, base, dilation = OPTIONS[option]
    start = IDENTITY[kind] if init is None else init
    return lambda v: lax.reduce_window(v, start, COMPUTATION[kind], window, strides, padding,
                                       base, dilation)


def jax_pool(kind, option):
    jlax = pytest.importorskip("jax.lax")
    window, strides, padding, base, dilation = OPTIONS[option]
    computation = {"sum": jlax.add, "prod": jlax.mul, "max": jlax.max, "min": jlax.min}[kind]
    return lambda v: jlax.reduce_window(v, IDENTITY[kind], computation, window, strides,
                                        padding, base, dilation)


def _weights(shape, seed=1):
    return np.random.default_rng(seed).normal(size=shape).astype(np.float32)


def loss(kind, option, weights, numpy=jnp):
    """A weighted sum of squares of the pooled values; windows without an element (their
    value is +-inf) count as 0."""
    apply = pool(kind, option) if numpy is jnp else jax_pool(kind, option)

    def f(v):
        p = apply(v)
        return numpy.sum(numpy.where(numpy.isfinite(p), p, 0.0) ** 2 * weights)
    return f


def _close(got, want, rtol=1e-5, atol=1e-6, label=""):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (label, got.dtype, want.dtype,
                                                                 got.shape, want.shape)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=str(label))


def _central_differences(f, x, direction, eps=1e-6):
    return (float(f(x + eps * direction)) - float(f(x - eps * direction))) / (2 * eps)


# --- values ------------------------------------------------------------------------------

@pytest.mark.parametrize("option", sorted(OPTIONS))
@pytest.mark.parametrize("kind", ["sum", "prod", "max", "min"])
def test_values_match_jax_and_a_loop(kind, option):
    pytest.importorskip("jax")
    x = POSITIVE if kind == "prod" else X
    got = pool(kind, option)(x)
    _close(got, jax_pool(kind, option)(x))
    _close(got, loop_window(x, kind, params_of(x.shape, OPTIONS[option])))


def test_padding_helpers_match_jax():
    pytest.importorskip("jax")
    from jax import lax as jlax
    for shape, window, strides in (((8, 5), (5, 2), (1, 2)), ((7, 4), (2, 3), (3, 1))):
        for padding in ("SAME", "SAME_LOWER", "VALID"):
            assert lax.padtype_to_pads(shape, window, strides, padding) == \
                [tuple(p) for p in jlax.padtype_to_pads(shape, window, strides, padding)]
        pads = lax.padtype_to_pads(shape, window, strides, "SAME")
        assert lax.reduce_window_shape_tuple(shape, window, strides, pads, (2, 1), (1, 2)) == \
            tuple(jlax.reduce_window_shape_tuple(shape, window, strides, pads, (2, 1), (1, 2)))


def test_init_values_like_jax():
    """A non-identity init value is combined once per window; padding and holes hold no
    element (XLA's semantics on the CPU, not the init value)."""
    pytest.importorskip("jax")
    from jax import lax as jlax
    ones = np.ones(3, np.float32)
    for mine, theirs, init in ((lax.add, jlax.add, 1.0), (lax.mul, jlax.mul, 3.0),
                               (lax.max, jlax.max, 2.5), (lax.min, jlax.min, 0.5)):
        for kwargs in ({"padding": [(1, 0)]}, {"padding": "VALID", "base_dilation": (2,)}):
            _close(lax.reduce_window(ones * 2, init, mine, (2,), (1,), **kwargs),
                   jlax.reduce_window(ones * 2, init, theirs, (2,), (1,), **kwargs))
    ints = np.arange(6, dtype=np.int32).reshape(2, 3)
    _close(lax.reduce_window(ints, 0, lax.add, (1, 2), (1, 1), "SAME"),
           jlax.reduce_window(ints, 0, jlax.add, (1, 2), (1, 1), "SAME"))


def test_jit_matches_eager_with_traced_init_and_padding_types():
    cases = [(kind, option) for kind in ("sum", "max", "min", "prod") for option in OPTIONS]

    def everything(x, p, init):
        outs = [pool(kind, option)(p if kind == "prod" else x) for kind, option in cases]
        outs.append(lax.reduce_window(x, init, lax.add, (2, 2), (1, 1), "SAME_LOWER"))
        outs.append(lax.reduce_window(x, init, jnp.maximum, (3, 1), (2, 1), "SAME"))
        outs.append(lax.reduce_window(x, init, lambda a, b: a * 0.5 + b, (2, 2), (1, 2), "SAME"))
        return outs

    staged = tp.jit(everything)(X, POSITIVE, np.float32(0.25))
    eager = everything(X, POSITIVE, np.float32(0.25))
    for label, got, want in zip(cases + ["init sum", "init max", "generic"], staged, eager):
        _close(got, want, label=label)


@pytest.mark.parametrize("computation,kind", [
    (lax.add, "sum"), (jnp.add, "sum"), (operator.add, "sum"), (lambda a, b: a + b, "sum"),
    (lambda a, b: b * a, "prod"), (jnp.multiply, "prod"), (lax.mul, "prod"),
    (operator.mul, "prod"), (jnp.maximum, "max"), (lambda x, y: jnp.maximum(x, y), "max"),
    (lax.max, "max"), (lambda x, y: lax.min(y, x), "min"), (jnp.minimum, "min"),
    (tp.jit(lambda a, b: a + b), "sum")])
def test_monoids_are_recognized(computation, kind):
    assert read_computation(computation, [F32], None, "test") == kind
    got = lax.reduce_window(POSITIVE, IDENTITY[kind], computation, (2, 2), (1, 1), "VALID")
    want = loop_window(POSITIVE, kind, params_of(POSITIVE.shape, ((2, 2), (1, 1), "VALID",
                                                                   None, None)))
    _close(got, want)


@pytest.mark.parametrize("computation", [
    lambda a, b: a - b, lambda a, b: a + b + 0.0, lambda a, b: jnp.maximum(a, b) * 1.0,
    lambda a, b: a, jnp.logaddexp])
def test_other_elementwise_computations_run_generically(computation):
    assert read_computation(computation, [F32], None, "test") is None


def _generic_cases():
    """(name, ours, JAX's, init, arguments): computations JAX runs as a generic
    reduce_window; the non-commutative ones without padding, whose order XLA fixes."""
    jjnp = pytest.importorskip("jax.numpy")
    return [
        ("logaddexp", jnp.logaddexp, jjnp.logaddexp, -np.inf, ((2, 3), (1, 2), "SAME")),
        ("logaddexp dilated", jnp.logaddexp, jjnp.logaddexp, -np.inf,
         ((2, 2), (2, 1), "SAME", (1, 2), (2, 1))),
        ("where-max", lambda a, b: jnp.where(a > b, a, b),
         lambda a, b: jjnp.where(a > b, a, b), -np.inf, ((3, 2), (2, 1), ((1, 1), (0, 1)))),
        ("subtract", lambda a, b: a - b, lambda a, b: a - b, 0.5, ((2, 3), (1, 2), "VALID")),
        ("subtract 1-d", lambda a, b: a - b, lambda a, b: a - b, 0.0, ((3,), (1,), "SAME")),
    ]


def test_generic_reduce_window_matches_jax_eagerly_and_under_jit():
    pytest.importorskip("jax")
    from jax import lax as jlax
    for name, mine, theirs, init, args in _generic_cases():
        x = X[0] if len(args[0]) == 1 else X
        want = jlax.reduce_window(x, init, theirs, *args)
        _close(lax.reduce_window(x, init, mine, *args), want, label=name)
        _close(tp.jit(lambda v: lax.reduce_window(v, init, mine, *args))(x), want,  # noqa: B023
               label=f"jit {name}")


def test_variadic_reduce_window_matches_jax():
    """A pytree of operands: a max pool that also returns the flat index of each max."""
    jax = pytest.importorskip("jax")
    from jax import lax as jlax
    index = np.arange(X.size, dtype=np.int32).reshape(X.shape)

    def pick(numpy):
        return lambda a, b: (numpy.maximum(a[0], b[0]), numpy.where(a[0] >= b[0], a[1], b[1]))
    args = ((2, 3), (1, 2), "SAME")
    want = jlax.reduce_window((X, index), (-np.inf, np.int32(-1)), pick(jax.numpy), *args)
    got = lax.reduce_window((X, index), (-np.inf, np.int32(-1)), pick(jnp), *args)
    staged = tp.jit(lambda x, i: lax.reduce_window((x, i), (-np.inf, np.int32(-1)), pick(jnp),
                                                   *args))(X, index)
    for out in (got, staged):
        assert isinstance(out, tuple) and len(out) == 2
        for g, w in zip(out, want):
            _close(g, w)
    tree = lax.reduce_window({"a": X, "b": X * 2}, {"a": 0.0, "b": 1.0},
                             lambda p, q: {"a": p["a"] + q["a"], "b": p["b"] * q["b"]},
                             (2, 2), (1, 1), "VALID")
    _close(tree["a"], lax.reduce_window(X, 0.0, lax.add, (2, 2), (1, 1), "VALID"))
    _close(tree["b"], lax.reduce_window(X * 2, 1.0, lax.mul, (2, 2), (1, 1), "VALID"))
    one = lax.reduce_window((X,), (0.0,), lambda a, b: (a[0] + b[0],), (2, 2), (1, 1), "VALID")
    assert isinstance(one, tuple) and len(one) == 1
    _close(one[0], lax.reduce_window(X, 0.0, lax.add, (2, 2), (1, 1), "VALID"))


# --- errors at the user's line --------------------------------------------------------------

def test_computations_that_cannot_run_on_whole_arrays_are_clear_errors():
    with pytest.raises(NotImplementedError, match="reduce_sum.*not an elementwise") as err:
        lax.reduce_window(X, 0.0, lambda a, b: jnp.sum(a) + b, (2, 2), (1, 1), "VALID")
    assert "test_windows.py" in str(err.value)

    def branchy(a, b):
        if a > b:
            return a
        return b
    with pytest.raises(TranspileError, match="bool.*reduction's computation") as err:
        lax.reduce(X, 0.0, branchy, (0,))
    assert "test_windows.py" in str(err.value)
    with pytest.raises(TypeError, match="must return what it takes"):
        lax.reduce_window(X, 0.0, lambda a, b: (a, b), (2, 2), (1, 1), "VALID")
    with pytest.raises(TypeError, match="must return a int32 scalar"):
        lax.reduce(np.arange(4, dtype=np.int32), 0, lambda a, b: a + 0.5 * b, (0,))
    with pytest.raises(TypeError, match="init value of dtype float32 for an operand of dtype "
                       "int32"):  # (as in JAX; an identity init of another dtype is accepted)
        lax.reduce_window(np.arange(6, dtype=np.int32), 0.5, lax.add, (2,), (1,), "VALID")
    with pytest.raises(ValueError, match="init values must have the operands' structure"):
        lax.reduce_window((X, X), 0.0, lambda a, b: a, (2, 2), (1, 1), "VALID")
    with pytest.raises(TranspileError, match="not an elementwise"):
        tp.jit(lambda v: lax.reduce(v, 0.0, lambda a, b: a + jnp.mean(b), (1,)))(X)


@pytest.mark.parametrize("args,message", [
    (((2,), (1,), "VALID"), "window_dimensions \\(2,\\) has 1 entries"),
    (((2, 2), (1,), "VALID"), "window_strides \\(1,\\) has 1 entries"),
    (((2, 2), (1, 1), "FULL"), "unrecognized padding 'FULL'"),
    (((2, 2), (1, 1), ((1, 1),)), "padding"),
    (((2, 2), (1, 1), ((-1, 0), (0, 0))), "non-negative"),
    (((2, 0), (1, 1), "VALID"), "window_dimensions must be positive"),
])
def test_bad_window_arguments_name_the_users_line(args, message):
    with pytest.raises(TranspileError, match=message) as err:
        lax.reduce_window(X, 0.0, lax.add, *args)
    assert "test_windows.py" in str(err.value)
    with pytest.raises(TranspileError, match=message):
        tp.jit(lambda v: lax.reduce_window(v, 0.0, lax.add, *args))(X)


# --- derivatives -----------------------------------------------------------------------------

@pytest.mark.parametrize("option", sorted(OPTIONS))
@pytest.mark.parametrize("kind", ["sum", "max", "min"])
def test_gradients_match_jax(kind, option):
    jax = pytest.importorskip("jax")
    import jax.numpy as jjnp
    if kind != "sum" and OPTIONS[option][4] is not None:
        pytest.skip("JAX has no VJP of max pooling with window dilation "
                    "(checked against finite differences below)")
    w = _weights(np.shape(pool(kind, option)(X)))
    got = tp.grad(loss(kind, option, w))(X)
    want = jax.grad(loss(kind, option, w, jjnp))(X)
    _close(got, want, atol=1e-5)


def test_ties_go_to_the_first_max_like_jax():
    jax = pytest.importorskip("jax")
    import jax.numpy as jjnp
    from jax import lax as jlax
    ties = np.array([[1, 3, 3, 0, 2], [3, 3, 1, 3, 0], [0, 2, 2, 2, 1]], np.float32)
    for mine, theirs, init in ((lax.max, jlax.max, -np.inf), (lax.min, jlax.min, np.inf),
                               (lambda a, b: jnp.maximum(b, a), jlax.max, -np.inf)):
        def f(v):
            return jnp.sum(lax.reduce_window(v, init, mine, (2, 2), (1, 1), "SAME"))  # noqa: B023
        want = jax.grad(lambda v: jjnp.sum(jlax.reduce_window(v, init, theirs, (2, 2),  # noqa: B023
                                                              (1, 1), "SAME")))(ties)
        np.testing.assert_array_equal(np.asarray(tp.grad(f)(ties)), np.asarray(want))
        np.testing.assert_array_equal(np.asarray(tp.jit(tp.grad(f))(ties)), np.asarray(want))


def test_jit_of_gradients_matches_eager():
    cases = [(kind, option) for kind in ("sum", "max", "min", "prod")
             for option in ("strided same", "all", "same dilated")]
    weights = [_weights(np.shape(pool(kind, option)(X)), seed=k)
               for k, (kind, option) in enumerate(cases)]

    def grads(x, p):
        return [tp.grad(loss(kind, option, w))(p if kind == "prod" else x)
                for (kind, option), w in zip(cases, weights)]

    for label, got, want in zip(cases, tp.jit(grads)(X, POSITIVE), grads(X, POSITIVE)):
        _close(got, want, atol=1e-5, label=label)


@pytest.mark.parametrize("kind", ["sum", "prod", "max", "min", "generic"])
def test_vjp_and_jvp_against_finite_differences_in_float64(kind, monkeypatch):
    monkeypatch.setattr(config, "enable_x64", True)
    r = np.random.default_rng(3)
    x = r.uniform(0.5, 1.5, size=(5, 7)) if kind in ("prod", "generic") \
        else r.normal(size=(5, 7))
    for option in OPTIONS:
        window, strides, padding, base, dilation = OPTIONS[option]
        if kind == "generic":
            def f(v, w=None):
                out = lax.reduce_window(v, 0.25, lambda a, b: a * jnp.sqrt(b) + jnp.sin(b),  # noqa: B023
                                        window, strides, padding, base, dilation)  # noqa: B023
                return out if w is None else jnp.sum(out ** 2 * w)
            w = r.normal(size=np.shape(f(x)))
            fn = lambda v: f(v, w)  # noqa: E731,B023
        else:
            w = r.normal(size=np.shape(pool(kind, option)(x)))
            fn = loss(kind, option, w)
        direction = r.normal(size=x.shape)
        numeric = _central_differences(fn, x, direction)
        reverse = float(np.sum(np.asarray(tp.grad(fn)(x)) * direction))
        forward = float(tp.jvp(fn, (x,), (direction,))[1])
        assert abs(reverse - numeric) < 1e-6 * max(1.0, abs(numeric)), (option, reverse, numeric)
        assert abs(forward - numeric) < 1e-6 * max(1.0, abs(numeric)), (option, forward, numeric)


def test_gradients_of_generic_and_variadic_computations(monkeypatch):
    """Through the user's computation: closures over differentiated values, pytrees of
    operands, against float64 central differences (JAX has no VJP of a generic
    reduce_window)."""
    monkeypatch.setattr(config, "enable_x64", True)
    r = np.random.default_rng(5)
    x = r.uniform(0.5, 1.5, size=(4, 6))
    direction = r.normal(size=x.shape)

    def closure(v):
        s = v[0, 0]
        return jnp.sum(lax.reduce_window(v, 0.0, lambda a, b: a + b * s, (2, 2), (1, 2),
                                         "SAME") ** 2)

    def variadic(v):
        total, biggest = lax.reduce_window((v, v * 2), (0.0, -np.inf),
                                           lambda a, b: (a[0] + b[0], jnp.maximum(a[1], b[1])),
                                           (2, 3), (1, 1), "VALID")
        return jnp.sum(total * biggest)

    def smooth_max(v):
        return jnp.sum(jnp.sin(lax.reduce(v, -np.inf, jnp.logaddexp, (1,))))

    def arg_max(v):
        index = jnp.broadcast_to(jnp.arange(6), (4, 6)).astype(jnp.float64)
        best, at = lax.reduce((v, index), (-np.inf, -1.0), lambda a, b: (
            jnp.maximum(a[0], b[0]), jnp.where(a[0] >= b[0], a[1], b[1])), (1,))
        return jnp.sum(best ** 2 + at)

    for f in (closure, variadic, smooth_max, arg_max):
        numeric = _central_differences(f, x, direction)
        reverse = float(np.sum(np.asarray(tp.grad(f)(x)) * direction))
        forward = float(tp.jvp(f, (x,), (direction,))[1])
        staged = float(np.sum(np.asarray(tp.jit(tp.grad(f))(x)) * direction))
        for got in (reverse, forward, staged):
            assert abs(got - numeric) < 1e-6 * max(1.0, abs(numeric)), (f.__name__, got, numeric)


def test_gradient_with_respect_to_the_init_value(monkeypatch):
    monkeypatch.setattr(config, "enable_x64", True)
    x = np.random.default_rng(4).normal(size=(4, 5))
    for computation in (lax.add, lax.mul, lax.max, lambda a, b: a * 0.5 + b):
        def f(init):
            return jnp.sum(lax.reduce_window(x, init, computation, (2, 2), (1, 2),  # noqa: B023
                                             "SAME") ** 2)
        got = float(tp.grad(f)(0.3))
        assert abs(got - _central_differences(f, 0.3, 1.0)) < 1e-6 * max(1.0, abs(got))


@pytest.mark.parametrize("kind,option", [("max", "strided same"), ("sum", "all"),
                                         ("min", "base dilation"), ("prod", "explicit pad")])
def test_second_derivatives(kind, option):
    """Forward over reverse and reverse over reverse, against JAX (reverse over reverse of
    a product of windows: JAX has no VJP of it, so against forward over reverse)."""
    x = POSITIVE if kind == "prod" else X
    w = _weights(np.shape(pool(kind, option)(x)))
    v = _weights(x.shape, seed=2)
    f = loss(kind, option, w)
    fwd = np.asarray(tp.jvp(tp.grad(f), (x,), (v,))[1])
    rev = np.asarray(tp.grad(lambda u: jnp.sum(tp.grad(f)(u) * v))(x))
    np.testing.assert_allclose(rev, fwd, rtol=1e-4, atol=1e-4)
    staged = np.asarray(tp.jit(tp.grad(lambda u: jnp.sum(tp.grad(f)(u) * v)))(x))
    np.testing.assert_allclose(staged, rev, rtol=1e-4, atol=1e-4)
    if kind == "prod":
        return
    jax = pytest.importorskip("jax")
    import jax.numpy as jjnp
    want = jax.jvp(jax.grad(loss(kind, option, w, jjnp)), (x,), (v,))[1]
    np.testing.assert_allclose(fwd, np.asarray(want), rtol=1e-4, atol=1e-4)


# --- vmap -------------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["sum", "prod", "max", "min"])
def test_vmap_matches_a_loop(kind):
    batch = np.random.default_rng(5).uniform(0.5, 1.5, size=(3, 5, 7)).astype(np.float32)
    apply = pool(kind, "all")
    want = np.stack([np.asarray(apply(batch[b])) for b in range(3)])
    for axis in (0, 1, 2):
        got = tp.vmap(apply, in_axes=axis)(np.moveaxis(batch, 0, axis))
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6, err_msg=str(axis))
    f = loss(kind, "strided same", _weights(np.shape(pool(kind, "strided same")(batch[0]))))
    grads = np.stack([np.asarray(tp.grad(f)(batch[b])) for b in range(3)])
    np.testing.assert_allclose(np.asarray(tp.vmap(tp.grad(f))(batch)), grads, rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_allclose(np.asarray(tp.jit(tp.vmap(tp.grad(f)))(batch)), grads,
                               rtol=1e-5, atol=1e-6)


def test_vmap_of_generic_computations_matches_a_loop():
    batch = np.random.default_rng(6).uniform(0.5, 1.5, size=(3, 5, 7)).astype(np.float32)

    def window(v):
        return lax.reduce_window(v, 0.0, lambda a, b: a + jnp.sin(b), (2, 3), (2, 1),
                                 ((1, 0), (2, 1)), (1, 2), (2, 1))

    def pair(v):
        return lax.reduce((v, v * 2), (0.0, 1.0), lambda a, b: (a[0] + b[0], a[1] * b[1]),
                          (1,))[1]

    def grad_window(v):
        return tp.grad(lambda u: jnp.sum(window(u) ** 2))(v)

    for fn in (window, pair, grad_window):
        want = np.stack([np.asarray(fn(batch[b])) for b in range(3)])
        for axis in (0, 2):
            moved = np.moveaxis(batch, 0, axis)
            np.testing.assert_allclose(np.asarray(tp.vmap(fn, in_axes=axis)(moved)), want,
                                       rtol=1e-5, atol=1e-6, err_msg=fn.__name__)
        np.testing.assert_allclose(np.asarray(tp.jit(tp.vmap(fn))(batch)), want, rtol=1e-5,
                                   atol=1e-6, err_msg=fn.__name__)


# --- lax.reduce -------------------------------------------------------------------------------

def test_reduce_matches_jax():
    jax = pytest.importorskip("jax")
    from jax import lax as jlax
    ints = np.arange(12, dtype=np.int32).reshape(3, 4) - 5
    bools = ints % 3 == 0
    cases = [(X, 0.0, lax.add, jlax.add, (0,)), (X, 2.0, lax.mul, jlax.mul, (1,)),
             (X, -np.inf, lax.max, jlax.max, (0, 1)), (X, 0.0, lax.min, jlax.min, (1,)),
             (X, -np.inf, jnp.logaddexp, jax.numpy.logaddexp, (0,)),
             (ints, np.int32(0), lax.add, jlax.add, (0,)),
             (ints, np.int32(3), lax.max, jlax.max, (1,)),
             (ints, -np.inf, lax.max, jlax.max, (0,)), (X, 0, lax.add, jlax.add, (1,)),
             (ints, np.int32(0), lax.bitwise_xor, jlax.bitwise_xor, (0, 1)),
             (ints, np.int32(-1), lax.bitwise_and, jlax.bitwise_and, (1,)),
             (bools, False, lax.bitwise_or, jlax.bitwise_or, (0,)),
             (bools, True, jnp.logical_and, jax.numpy.logical_and, (1,)),
             (X, 0.0, lax.add, jlax.add, ())]
    for k, (x, init, mine, theirs, dims) in enumerate(cases):
        want = jlax.reduce(x, init, theirs, dims)
        _close(lax.reduce(x, init, mine, dims), want, label=k)
        _close(tp.jit(lambda v: lax.reduce(v, init, mine, dims))(x), want,  # noqa: B023
               label=f"jit {k}")
    f = lambda v: jnp.sum(lax.reduce(v, 1.0, lambda a, b: a * b, (1,)))  # noqa: E731
    g = lambda v: jax.numpy.sum(jlax.reduce(v, 1.0, jlax.mul, (1,)))  # noqa: E731
    _close(tp.grad(f)(POSITIVE), jax.grad(g)(POSITIVE))
    _close(tp.jit(f)(POSITIVE), g(POSITIVE))


def test_variadic_reduce_matches_jax():
    """JAX's argmax-by-reduce: values and indices reduced together."""
    jax = pytest.importorskip("jax")
    from jax import lax as jlax
    x = np.array([[0.5, 2.0, 2.0, -1.0], [1.5, -0.5, 3.0, 3.0]], np.float32)
    index = np.broadcast_to(np.arange(4, dtype=np.int32), x.shape)

    def pick(numpy):
        return lambda a, b: (numpy.maximum(a[0], b[0]), numpy.where(a[0] >= b[0], a[1], b[1]))
    for dims in ((1,), (0,), (0, 1)):
        want = jlax.reduce((x, index), (-np.inf, np.int32(0)), pick(jax.numpy), dims)
        for got in (lax.reduce((x, index), (-np.inf, np.int32(0)), pick(jnp), dims),
                    tp.jit(lambda v, i: lax.reduce((v, i), (-np.inf, np.int32(0)),  # noqa: B023
                                                   pick(jnp), dims))(x, index)):  # noqa: B023
            for g, w in zip(got, want):
                _close(g, w, label=dims)


# --- associative_scan, cumlogsumexp, the cumulative reductions ----------------------------------

def _affine(p, q):
    """Composition of affine maps ``x -> a x + b``: associative, not commutative."""
    return (p[0] * q[0], p[1] * q[0] + q[1])


@pytest.mark.parametrize("n", [1, 2, 7, 8])
def test_associative_scan_matches_jax(n):
    jax = pytest.importorskip("jax")
    from jax import lax as jlax
    a = np.random.default_rng(n).normal(size=(n, 3)).astype(np.float32)
    for reverse in (False, True):
        for axis, jax_axis in ((0, 0), (-2, 0), (1, 1)):
            got = lax.associative_scan(jnp.add, a, reverse=reverse, axis=axis)
            want = jlax.associative_scan(jax.numpy.add, a, reverse=reverse, axis=jax_axis)
            _close(got, want, atol=1e-5)
        pair = (a, a[::-1] * 0.5)
        got = lax.associative_scan(_affine, pair, reverse=reverse)
        want = jlax.associative_scan(_affine, pair, reverse=reverse)
        assert isinstance(got, tuple)
        for g, w in zip(got, want):
            _close(g, w, atol=1e-5)
        got = tp.jit(lambda p: lax.associative_scan(_affine, p, reverse=reverse))(pair)  # noqa: B023
        for g, w in zip(got, want):
            _close(g, w, atol=1e-5)


def test_associative_scan_under_every_transform(monkeypatch):
    jax = pytest.importorskip("jax")
    a = np.random.default_rng(6).normal(size=(6, 3)).astype(np.float32)

    def scan(v):
        return lax.associative_scan(lambda p, q: p * q + q, v, axis=0)

    def f(v):
        return jnp.sum(scan(v) ** 2)

    def pair(v):
        return jnp.sum(lax.associative_scan(_affine, (v, v * 0.5), reverse=True)[1] ** 2)

    def jax_pair(v):
        scanned = jax.lax.associative_scan(_affine, (v, v * 0.5), reverse=True)[1]
        return jax.numpy.sum(scanned ** 2)

    _close(tp.jit(scan)(a), scan(a))
    loop = np.stack([np.asarray(scan(a[:, k])) for k in range(3)], axis=1)
    _close(tp.vmap(scan, in_axes=1, out_axes=1)(a), loop)
    _close(tp.grad(pair)(a), jax.grad(jax_pair)(a), atol=1e-5)
    grads = np.stack([np.asarray(tp.grad(f)(a[:, k])) for k in range(3)], axis=1)
    _close(tp.jit(tp.vmap(tp.grad(f), in_axes=1, out_axes=1))(a), grads, atol=1e-5)
    monkeypatch.setattr(config, "enable_x64", True)
    wide = a.astype(np.float64)
    direction = np.random.default_rng(7).normal(size=a.shape)
    numeric = _central_differences(f, wide, direction)
    reverse = float(np.sum(np.asarray(tp.grad(f)(wide)) * direction))
    forward = float(tp.jvp(f, (wide,), (direction,))[1])
    assert abs(reverse - numeric) < 1e-6 * abs(numeric)
    assert abs(forward - numeric) < 1e-6 * abs(numeric)


def test_cumlogsumexp_matches_jax():
    jax = pytest.importorskip("jax")
    from jax import lax as jlax
    a = np.random.default_rng(8).normal(size=(5, 4)).astype(np.float32) * 30
    w = _weights(a.shape)
    for axis in (0, 1):
        for reverse in (False, True):
            _close(lax.cumlogsumexp(a, axis=axis, reverse=reverse),
                   jlax.cumlogsumexp(a, axis=axis, reverse=reverse), atol=1e-5)
            f = lambda v: jnp.sum(jnp.sin(lax.cumlogsumexp(v, axis=axis, reverse=reverse)) * w)  # noqa: E731,B023
            g = lambda v: jax.numpy.sum(jax.numpy.sin(  # noqa: E731
                jlax.cumlogsumexp(v, axis=axis, reverse=reverse)) * w)  # noqa: B023
            _close(tp.grad(f)(a), jax.grad(g)(a), rtol=1e-4, atol=1e-5)
    staged = tp.jit(lambda v: lax.cumlogsumexp(v, axis=1, reverse=True))(a)
    _close(staged, jlax.cumlogsumexp(a, axis=1, reverse=True), atol=1e-5)


@pytest.mark.parametrize("name", ["cumsum", "cumprod", "cummax", "cummin"])
def test_cumulative_reductions_match_jax(name):
    """Values (ties included), and gradients on tie-free inputs: at a tie, cummax/cummin
    give the derivative to the later element, where JAX's scan tree splits it."""
    jax = pytest.importorskip("jax")
    from jax import lax as jlax
    ties = np.array([[0.5, 2.0, 2.0, -1.0, 3.0], [1.5, -0.5, 1.5, 0.7, 0.7]], np.float32)
    a = np.random.default_rng(9).uniform(0.5, 1.5, size=(3, 5)).astype(np.float32)
    mine, theirs = getattr(lax, name), getattr(jlax, name)
    w = _weights(a.shape)
    for axis in (0, 1):
        for reverse in (False, True):
            label = f"{name} axis={axis} reverse={reverse}"
            _close(mine(ties, axis=axis, reverse=reverse), theirs(ties, axis=axis, reverse=reverse),
                   label=label)
            _close(tp.jit(lambda v: mine(v, axis=axis, reverse=reverse))(a),  # noqa: B023
                   theirs(a, axis=axis, reverse=reverse), label=label)
            grad = tp.grad(lambda v: jnp.sum(mine(v, axis=axis, reverse=reverse) * w))(a)  # noqa: B023
            want = jax.grad(lambda v: jax.numpy.sum(theirs(v, axis=axis, reverse=reverse) * w))(a)  # noqa: B023
            _close(grad, want, label=label)
    if name in ("cummax", "cummin"):
        tie = np.array([1.0, 3.0, 3.0, 2.0], np.float32)
        got = tp.grad(lambda v: jnp.sum(lax.cummax(v) * np.arange(1.0, 5.0)))(tie)
        np.testing.assert_array_equal(np.asarray(got), [1.0, 2.0, 7.0, 0.0])


# --- stax pooling -----------------------------------------------------------------------------

@pytest.mark.parametrize("layer", ["MaxPool", "SumPool", "AvgPool"])
def test_stax_pooling_matches_jax(layer):
    jax = pytest.importorskip("jax")
    from jax.example_libraries import stax as jax_stax
    from transpiler.example_libraries import stax
    x = np.random.default_rng(9).normal(size=(2, 6, 5, 3)).astype(np.float32)
    for kwargs in ({"window_shape": (2, 2)}, {"window_shape": (3, 2), "strides": (2, 1),
                                              "padding": "SAME"},
                   {"window_shape": (2, 2), "spec": "NCHW"}):
        init, apply = getattr(stax, layer)(**kwargs)
        jax_init, jax_apply = getattr(jax_stax, layer)(**kwargs)
        shape, params = init(None, x.shape)
        assert tuple(shape) == tuple(jax_init(jax.random.PRNGKey(0), x.shape)[0])
        want = np.asarray(jax_apply((), x))
        _close(apply(params, x), want)
        _close(tp.jit(lambda v: apply(params, v))(x), want)  # noqa: B023
        w = _weights(want.shape)
        got = tp.grad(lambda v: jnp.sum(apply(params, v) * w))(x)  # noqa: B023
        expected = jax.grad(lambda v: jax.numpy.sum(jax_apply((), v) * w))(x)  # noqa: B023
        _close(got, expected)
    batch = np.stack([x, x * 2])
    init, apply = getattr(stax, layer)((2, 2), padding="SAME")
    _, params = init(None, x.shape)
    _close(tp.vmap(lambda v: apply(params, v))(batch),
           np.stack([np.asarray(apply(params, x)), np.asarray(apply(params, x * 2))]))
