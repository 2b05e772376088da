"""Ordinary Python around the math (issue 17): comprehensions, generator expressions,
`assert`, f-strings and logging on static values -- under grad, jit(grad), jvp and vmap,
against hand-derived gradients; and in-place container changes reverse mode cannot follow
are errors at the line, never a dropped derivative."""

from __future__ import annotations

import logging

import numpy as np
import pytest

import transpiler as tp
import transpiler.numpy as jnp
from transpiler.errors import TranspileError

F32 = np.float32
XS = [np.array([1.0, -2.0], F32), np.array([0.5, 3.0], F32)]


def list_comprehension(xs):
    return jnp.sum(jnp.stack([v ** 2 for v in xs]))


def generator_expression(xs):
    return sum(jnp.sum(v ** 2) for v in xs)


def filtered_nested(xs):
    return jnp.sum(jnp.stack([v * w for v in xs for w in xs if w is not v]))


def next_of_a_generator(xs):
    return jnp.sum(next(v for v in xs) ** 2)


def static_checks(xs):
    assert len(xs) == 2, f"expected two arrays, got {len(xs)}"
    logging.getLogger("tests").debug(f"shapes {[v.shape for v in xs]}")
    if isinstance(xs, (list, tuple)):
        return jnp.sum(xs[0] * xs[1])
    return 0.0


CASES = {
    "list comprehension": (list_comprehension, [2 * XS[0], 2 * XS[1]]),
    "generator expression": (generator_expression, [2 * XS[0], 2 * XS[1]]),
    "nested comprehension with a filter": (filtered_nested, [2 * XS[1], 2 * XS[0]]),
    "next of a generator": (next_of_a_generator, [2 * XS[0], 0 * XS[1]]),
    "assert, f-string, logging, isinstance": (static_checks, [XS[1], XS[0]]),
}


@pytest.mark.parametrize("name", CASES)
def test_gradients(name):
    fn, want = CASES[name]
    for got in (tp.grad(fn)(XS), tp.jit(tp.grad(fn))(XS)):
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-6)
    tangents = [np.ones(2, F32), np.ones(2, F32)]
    np.testing.assert_allclose(tp.jvp(fn, (XS,), (tangents,))[1],
                               sum(float(np.sum(w)) for w in want), rtol=1e-6)


@pytest.mark.parametrize("name", CASES)
def test_batched(name):
    fn, _ = CASES[name]
    batch = [np.stack([v, 2 * v]) for v in XS]
    want = [float(fn([b[i] for b in batch])) for i in range(2)]
    np.testing.assert_allclose(tp.vmap(fn)(batch), want, rtol=1e-6)


def test_assert_still_checks():
    with pytest.raises(AssertionError, match="expected two arrays, got 3"):
        tp.grad(static_checks)(XS + [XS[0]])


def appends_to_an_argument(x, acc):
    acc.append(x * 2)
    return jnp.sum(jnp.stack(acc))


def appends_while_shared(x):
    acc = []
    alias = acc
    acc.append(x * 2)
    return jnp.sum(jnp.stack(alias))


@pytest.mark.parametrize("fn, args", [(appends_to_an_argument, (XS[0], [])),
                                      (appends_while_shared, (XS[0],))])
def test_in_place_appends_reverse_mode_cannot_follow_are_errors(fn, args):
    with pytest.raises(TranspileError, match="in place") as info:
        tp.grad(fn)(*args)
    assert f"{__file__}:" in str(info.value)


def convolve(x, w):  # the first example of JAX's "Automatic vectorization" page
    output = []
    for i in range(1, len(x) - 1):
        output.append(jnp.dot(x[i - 1:i + 2], w))
    return jnp.array(output)


def test_jax_vmap_docs_first_example():
    x, w = np.arange(5, dtype=F32), np.array([2.0, 3.0, 4.0], F32)
    xs, ws = np.stack([x, x]), np.stack([w, w])
    want = np.stack([np.convolve(x, w[::-1], "valid")] * 2)
    np.testing.assert_allclose(tp.vmap(convolve)(xs, ws), want)
    np.testing.assert_allclose(tp.jit(tp.vmap(convolve))(xs, ws), want)
    np.testing.assert_allclose(tp.vmap(convolve, in_axes=[0, None])(xs, w), want)
    grads = tp.vmap(tp.grad(lambda x, w: jnp.sum(convolve(x, w))))(xs, ws)
    np.testing.assert_allclose(grads[0], [2, 5, 9, 7, 4])


def test_array_of_batched_elements():
    x = np.arange(8, dtype=F32).reshape(4, 2)
    np.testing.assert_allclose(tp.vmap(lambda v: jnp.array([v[0], v[1] * 2]))(x),
                               np.stack([x[:, 0], 2 * x[:, 1]], axis=1))
    got = tp.vmap(lambda a, b: jnp.array([[a, b], [b, 2.0]]), (0, None))(x[:, 0], F32(5))
    assert got.shape == (4, 2, 2) and got.dtype == np.float32
    np.testing.assert_allclose(got[:, 1, 1], 2.0)
    np.testing.assert_allclose(got[:, 0, 0], x[:, 0])


def numpy_style_updates(x):
    y = jnp.zeros(4)
    y[0] = x[0] * 2
    y[1:3] += x[1:3] ** 2
    y[3] -= x[3]
    y[y > 100] = 0.0
    return jnp.sum(y * y)


def test_in_place_updates_of_a_local_array():
    x = np.array([1.0, 2.0, 3.0, 4.0], F32)
    want_grad = [8.0, 32.0, 108.0, 8.0]  # y = [2 x0, x1^2, x2^2, -x3]
    np.testing.assert_allclose(tp.jit(numpy_style_updates)(x), 117.0)
    np.testing.assert_allclose(tp.grad(numpy_style_updates)(x), want_grad)
    np.testing.assert_allclose(tp.jit(tp.grad(numpy_style_updates))(x), want_grad)
    # 20 x: y = [40, 1600, 3600, -80], and the mask zeroes the two above 100
    np.testing.assert_allclose(tp.vmap(numpy_style_updates)(np.stack([x, 20 * x])),
                               [117.0, 40.0 ** 2 + 80.0 ** 2])
    np.testing.assert_allclose(tp.jvp(numpy_style_updates, (x,), (np.ones(4, F32),))[1],
                               sum(want_grad))


def updates_an_argument(x):
    x[0] = 1.0
    return jnp.sum(x)


def updates_a_shared_array(x):
    y = x * 2
    z = y
    y[0] = 0.0
    return jnp.sum(z)


@pytest.mark.parametrize("fn", [updates_an_argument, updates_a_shared_array])
def test_in_place_updates_that_could_be_seen_elsewhere_are_errors(fn):
    with pytest.raises(TranspileError, match="in-place update") as info:
        tp.grad(fn)(np.ones(3, F32))
    assert ".at[0].set" in str(info.value) and f"{__file__}:" in str(info.value)


def _keeps(d):
    _KEPT.append(d)
    return 0.0


_KEPT: list = []


def updates_a_dict_a_callee_was_given(x):
    d = {"a": x * 2}
    offset = _keeps(d)  # it may keep d, and would see the update
    d["a"] = x * 3
    return jnp.sum(d["a"]) + offset


def test_updating_a_dict_another_function_may_hold_is_an_error():
    with pytest.raises(TranspileError, match="in-place update of an element of `d`") as info:
        tp.grad(updates_a_dict_a_callee_was_given)(np.ones(3, F32))
    assert "d = {**d, \"a\": value}" in str(info.value) and f"{__file__}:" in str(info.value)


def test_eager_item_assignment_says_what_to_do():
    with pytest.raises(TypeError, match="immutable") as info:
        jnp.zeros(3)[0] = 1.0
    assert ".at[index].set(value)" in str(info.value)


def dict_comprehension(d):
    doubled = {k: v * 2 for k, v in d.items()}
    return jnp.sum(doubled["a"] * doubled["b"]) + sum(jnp.sum(v) for v in d.values())


def set_comprehension(xs):
    sizes = {len(v) for v in xs}  # a set of static values
    return jnp.sum(xs[0] ** 2) * len(sizes)


def test_dict_and_set_comprehensions():
    d = {"a": np.array([1.0, 2.0], F32), "b": np.array([3.0, -1.0], F32)}
    want = {"a": 4 * d["b"] + 1, "b": 4 * d["a"] + 1}
    for g in (tp.grad(dict_comprehension)(d), tp.jit(tp.grad(dict_comprehension))(d)):
        for k in d:
            np.testing.assert_allclose(g[k], want[k], rtol=1e-6)
    ones = {k: np.ones(2, F32) for k in d}
    np.testing.assert_allclose(tp.jvp(dict_comprehension, (d,), (ones,))[1],
                               sum(float(np.sum(w)) for w in want.values()), rtol=1e-6)
    batch = {k: np.stack([v, 2 * v]) for k, v in d.items()}
    np.testing.assert_allclose(tp.vmap(dict_comprehension)(batch),
                               [float(dict_comprehension({k: v[i] for k, v in batch.items()}))
                                for i in range(2)], rtol=1e-6)
    xs = [np.array([1.0, 2.0], F32), np.ones(3, F32)]
    np.testing.assert_allclose(tp.grad(set_comprehension)(xs)[0], 4 * xs[0], rtol=1e-6)


def starred_list(xs):
    a, *rest = xs
    return jnp.sum(a * 2) + sum(jnp.sum(r ** 2) for r in rest)


def starred_rows(x):
    first, *middle, last = x  # rows of an array; `middle` is a list, as in Python
    return first * last + jnp.sum(jnp.stack(middle))


def test_starred_assignment_targets():
    xs = [F32(1.0), F32(2.0), F32(3.0)]
    for got in (tp.grad(starred_list)(xs), tp.jit(tp.grad(starred_list))(xs)):
        np.testing.assert_allclose([float(g) for g in got], [2.0, 4.0, 6.0])
    assert float(tp.jvp(starred_list, (xs,), (xs,))[1]) == 28.0  # 2 + 2*2*2 + 2*3*3
    x = np.array([1.0, 2.0, 3.0, 4.0], F32)
    for got in (tp.grad(starred_rows)(x), tp.jacfwd(starred_rows)(x), tp.jit(tp.grad(starred_rows))(x)):
        np.testing.assert_allclose(got, [4.0, 1.0, 1.0, 1.0])
    np.testing.assert_allclose(tp.vmap(starred_rows)(np.stack([x, 2 * x])), [9.0, 26.0])
    assert float(tp.jit(starred_rows)(x)) == 9.0


def numpy_scratch_arrays(x):
    """JAX's ONNX interpreter example: shapes built in a NumPy array updated in place."""
    shape = np.ones(x.ndim + 2, dtype="int64")
    shape[1:3] = x.shape
    weights = np.zeros(3, np.float32)
    weights[0] = 2.0
    return jnp.sum(jnp.reshape(x, shape) * 3) * jnp.asarray(weights)[0]


def test_numpy_arrays_a_function_makes_keep_numpys_in_place_updates():
    x = np.ones((2, 3), F32)
    assert float(numpy_scratch_arrays(x)) == 36.0
    assert float(tp.jit(numpy_scratch_arrays)(x)) == 36.0
    for grad in (tp.grad(numpy_scratch_arrays), tp.jit(tp.grad(numpy_scratch_arrays))):
        np.testing.assert_allclose(np.asarray(grad(x)), np.full((2, 3), 6.0))
    np.testing.assert_allclose(np.asarray(tp.vmap(numpy_scratch_arrays)(np.ones((4, 2, 3),
                                                                                F32))), 36.0)
    assert float(tp.jvp(numpy_scratch_arrays, (x,), (x,))[1]) == 36.0


def differentiated_value_into_numpy(x):
    weights = np.zeros(3, np.float32)
    weights[0] = x[0]
    return jnp.sum(jnp.asarray(weights) * x)


def test_a_differentiated_value_put_into_a_numpy_array_is_an_error():
    x = np.ones(3, F32)
    with pytest.raises(TranspileError, match="set to a differentiated value in place") as info:
        tp.grad(differentiated_value_into_numpy)(x)
    assert f"{__file__}:" in str(info.value)
    with pytest.raises(TranspileError, match="setting an element of a ndarray in place"):
        tp.jvp(differentiated_value_into_numpy, (x,), (x,))
    with pytest.raises(TranspileError, match="stored into a NumPy array") as info:
        tp.jit(differentiated_value_into_numpy)(x)  # (NumPy wraps float()'s error in its own)
    assert f"{__file__}:{differentiated_value_into_numpy.__code__.co_firstlineno + 2}:" in \
        str(info.value) and "jnp.zeros(3).at[0].set(x)" in str(info.value)


def module_passed_as_argument(x, lax=tp.lax, np_like=jnp):
    return jnp.sum(np_like.tanh(lax.sin(x) * x))


@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
def test_a_module_passed_as_an_argument_is_a_namespace_not_a_value(jit):
    """``def f(x, lax=lax)``: ``lax.sin(x)`` calls the module's function under every
    transform (the module is no differentiated value, though it has a ``dtype`` function)."""
    x = np.array([0.5, -1.0, 2.0], F32)
    wrap = tp.jit if jit else (lambda f: f)
    want = (np.cos(x) * x + np.sin(x)) / np.cosh(np.sin(x) * x) ** 2
    np.testing.assert_allclose(np.asarray(wrap(tp.grad(module_passed_as_argument))(x)), want,
                               rtol=1e-5)
    _, dot = tp.jvp(module_passed_as_argument, (x,), (np.ones(3, F32),))
    np.testing.assert_allclose(float(dot), want.sum(), rtol=1e-5)
    rows = np.stack([x, 2 * x])
    np.testing.assert_allclose(np.asarray(wrap(tp.vmap(tp.grad(module_passed_as_argument)))(
        rows)), (np.cos(rows) * rows + np.sin(rows)) / np.cosh(np.sin(rows) * rows) ** 2,
        rtol=1e-5)
    second = tp.grad(lambda v, l=tp.lax: l.sin(v) * v)
    np.testing.assert_allclose(float(tp.grad(second)(1.0)), 2 * np.cos(1.0) - np.sin(1.0),
                               rtol=1e-5)
