"""x[...], x.at[...], take/take_along_axis/nonzero/diagonal: vs NumPy (and JAX when
installed), eagerly and under one jit per group; out-of-bounds rules; error messages."""

from __future__ import annotations

import numpy as np
import pytest

import transpiler as tp
import transpiler.numpy as jnp
from transpiler.errors import ShapeError

X = np.arange(60, dtype=np.float32).reshape(3, 4, 5)
MASK = np.arange(12).reshape(3, 4) % 3 == 0

# Index expressions, evaluated as `x[<expr>]` against NumPy.
EXPRESSIONS = [
    "1", "-1", "0, 2", "-1, -2, -3", ":", "...", "()", "1:", ":-1", "::2", "::-1", "1::-2",
    ":, 1:3", ":, ::-2, 1::2", "::-1, ::-1, ::-1", "-100:100", ":, 3:1", "None", "None, 1",
    "..., None", "None, 1, ..., None", "..., 2", "1, ..., 3", ":, None, :, None",
    "[0, 2, -1]", "[[0, 1], [2, 2]]", "np.array([2, 0])", ":, [1, 0]", "..., [4, 0, 4]",
    "[0, 1], :, [2, 3]", ":, [0, 1], [2, 3]", "1, :, [0, 1]", "[0, 1], [2, 3]",
    "[[0], [1]], [1, 2, 3]", "[0, 1], None, [2, 3]", "[0, 2], 1:3", "::-1, [0, 0, 1]",
    "np.array([True, False, True])", ":, np.array([True, False, True, True])", "MASK",
    "MASK, 1:4", "..., np.ones(5, bool)", "[]", "np.array([], dtype=np.int32), 0",
    "np.int32(2)", "np.array(1), [0, 1]",
]


def _check(got, want, label):
    got = np.asarray(got)
    assert got.shape == want.shape, f"{label}: shape {got.shape} != {want.shape}"
    assert got.dtype == want.dtype, f"{label}: dtype {got.dtype} != {want.dtype}"
    np.testing.assert_array_equal(got, want, err_msg=label)


def _index(expr):
    return eval(f"(lambda x: x[{expr}])")


def test_getitem_matches_numpy_eager_and_jit():
    fns = [_index(e) for e in EXPRESSIONS]
    for expr, fn in zip(EXPRESSIONS, fns):
        _check(fn(jnp.asarray(X)), fn(X), f"eager x[{expr}]")
    staged = tp.jit(lambda x: [fn(x) for fn in fns])(X)
    for expr, fn, got in zip(EXPRESSIONS, fns, staged):
        _check(got, fn(X), f"jit x[{expr}]")


def test_traced_indices_wrap_then_clamp():
    """x[i] with a traced i: negative wraps once, then clamps (JAX's rule)."""
    def f(x, i, idx):
        return [x[i], x[i, 1], x[:, i], x[1, :, i], x[i, [0, 1]], x[idx], x[:, idx, 0]]

    x = jnp.asarray(X)
    for i in (2, -1, -3, 7, -9):
        idx = np.array([i, 0, -1], np.int32)
        want = [X[c] for c in [np.clip(i + 3 if i < 0 else i, 0, 2)]][0]
        eager = f(x, jnp.asarray(np.int32(i)), jnp.asarray(idx))
        staged = tp.jit(f)(X, np.int32(i), idx)
        _check(eager[0], want, f"eager x[{i}]")
        for k, (e, s) in enumerate(zip(eager, staged)):
            _check(s, np.asarray(e), f"jit vs eager #{k} for i={i}")


def test_traced_indices_match_jax():
    jax = pytest.importorskip("jax")
    import jax.numpy as jjnp

    def f(x, i, idx):
        return [x[i], x[:, i], x[1, :, i], x[i, np.array([0, 1])], x[idx], x[:, idx, 0],
                x[idx, ::-1, i], x.at[i].add(1.0), x.at[idx, 1].set(0.0), x.at[:, i, idx].max(99.0)]

    for i in (2, -1, 7, -9):
        idx = np.array([i, 0, -5, 5], np.int32)
        want = jax.jit(f)(jjnp.asarray(X), np.int32(i), idx)
        got = tp.jit(f)(X, np.int32(i), idx)
        for k, (g, w) in enumerate(zip(got, want)):
            _check(g, np.asarray(w), f"x[...] #{k}, i={i}")


def _updates(x, xi):
    A = np.array  # noqa: N806 -- JAX rejects lists as indices, so the comparison uses arrays
    return [
        x.at[1].set(-1.0), x.at[A([0, 0, 2])].add(1.0), x.at[:, A([1, 1, 9, -1])].add(10.0),
        x.at[1:3, ::2].multiply(2.0), x.at[A([True, False, True, False])].set(7.0),
        x.at[2, 3].min(-5.0), x.at[..., -2].max(100.0), x.at[A([-7, 1])].set(9.0),
        x.at[A([0, 0, 0]), A([1, 1, 2])].add(A([1.0, 2.0, 4.0], np.float32)),
        x.at[A([3, 3])].mul(3.0), xi.at[0].divide(2), xi.at[1].power(2), x.at[0].get(),
        xi.at[A([1, 1, 9])].set(A([[5], [5], [6]], np.int32)), xi.at[:, None, 1].add(1),
        x.at[1:, A([0, 4])].set(A([[1.0], [2.0], [3.0]], np.float32)),
        x.at[::-1].apply(lambda v: v * 0.5), x.at[A([[0], [2]]), A([1, 3])].max(50.0),
    ]


def _reads(x, xi):
    return [
        jnp.take(x, np.array([7, -1, -6, 3])), jnp.take(xi, np.array([[7, -1], [0, 3]]), axis=1),
        jnp.take(x, np.array([7, -1]), axis=0, mode="clip"),
        jnp.take(xi, np.array([7, -1]), mode="wrap"),
        jnp.take(xi, np.array([0, 99]), axis=0, mode="fill", fill_value=-1),
        jnp.take_along_axis(x, np.array([[0, 4, -1]]), axis=1),
        jnp.take_along_axis(xi, np.array([[3], [0], [1], [9]]), axis=1),
        jnp.nonzero(xi % 3 == 0, size=9), jnp.nonzero(xi > 100, size=2, fill_value=-1),
        jnp.argwhere(xi % 7 == 1, size=4), jnp.flatnonzero(xi % 5 == 0, size=5),
        jnp.diagonal(x), jnp.diagonal(x, 1), jnp.diagonal(x, -2), jnp.diagonal(x, 9),
        jnp.diagonal(jnp.reshape(jnp.arange(24.0), (2, 3, 4)), -1, 2, 0),
    ]


def _compare_with_jax(fn):
    pytest.importorskip("jax")
    import jax.numpy as jjnp

    x = np.arange(20, dtype=np.float32).reshape(4, 5)
    xi = np.arange(20, dtype=np.int32).reshape(4, 5)
    jax_fn = _jax_namespace(fn, jjnp)
    want = jax_fn(jjnp.asarray(x), jjnp.asarray(xi))
    for tag, got in (("eager", fn(jnp.asarray(x), jnp.asarray(xi))),
                     ("jit", tp.jit(fn)(x, xi))):
        for k, (g, w) in enumerate(zip(got, want)):
            gs, ws = (g, w) if isinstance(g, tuple) else ((g,), (w,))
            for gg, ww in zip(gs, ws):
                _check(gg, np.asarray(ww), f"{tag} {fn.__name__} #{k}")


def _jax_namespace(fn, jjnp):
    """Run `fn`'s body with jax.numpy in place of transpiler.numpy."""
    import types
    return types.FunctionType(fn.__code__, {**fn.__globals__, "jnp": jjnp}, fn.__name__)


def test_at_updates_match_jax():
    """Duplicates accumulate for add/mul, out-of-bounds updates are dropped, negatives wrap."""
    _compare_with_jax(_updates)


def test_take_nonzero_diagonal_match_jax():
    _compare_with_jax(_reads)


def test_at_semantics_without_jax():
    x = jnp.zeros(5)
    y = x.at[np.array([1, 1, 1, -1, 5, -6])].add(1.0)
    np.testing.assert_array_equal(np.asarray(y), [0, 3, 0, 0, 1])  # 5 and -6 dropped
    np.testing.assert_array_equal(np.asarray(x), np.zeros(5))  # the original is unchanged
    staged = tp.jit(lambda v, i: v.at[i].add(1.0))(np.zeros(5, np.float32),
                                                  np.array([1, 1, 1, -1, 5, -6], np.int32))
    np.testing.assert_array_equal(np.asarray(staged), [0, 3, 0, 0, 1])


def test_half_precision_scatter():
    for dtype in (jnp.float16, jnp.bfloat16):
        x = np.zeros(4, dtype)
        f = lambda v: v.at[np.array([0, 0, 3])].add(1.5)  # noqa: E731
        # jnp.asarray(bfloat16 ndarray) is rejected by creation.asarray (reported), so astype
        eager, staged = f(jnp.zeros(4).astype(dtype)), tp.jit(f)(x)
        assert eager.dtype == staged.dtype == np.dtype(dtype)
        np.testing.assert_allclose(np.asarray(staged, np.float32), [3, 0, 0, 1.5])
        np.testing.assert_allclose(np.asarray(eager, np.float32), [3, 0, 0, 1.5])


def test_nonzero_eager_without_size():
    a = jnp.asarray(np.array([[0, 2], [3, 0]], np.int32))
    rows, cols = jnp.nonzero(a)
    np.testing.assert_array_equal(np.asarray(rows), [0, 1])
    np.testing.assert_array_equal(np.asarray(cols), [1, 0])
    assert rows.dtype == np.int32
    np.testing.assert_array_equal(np.asarray(jnp.argwhere(a)), [[0, 1], [1, 0]])


# --- errors name the user's line --------------------------------------------------------------
def _line_of(marker):
    import inspect
    source, start = inspect.getsourcelines(test_errors_name_the_user_line)
    return start + next(i for i, text in enumerate(source) if marker in text)


def test_errors_name_the_user_line():
    with pytest.raises(ShapeError) as err:
        tp.jit(lambda x: x[x > 0])(X)  # MARK-mask
    assert err.value.line == _line_of("MARK-mask") and err.value.file == __file__
    assert "jnp.where" in str(err.value) and "depend" in str(err.value)

    with pytest.raises(IndexError) as err:
        jnp.asarray(X)[0, 1, 2, 3]  # MARK-many
    assert err.value.line == _line_of("MARK-many")
    assert "too many indices for array: array is 3-dimensional, but 4 were indexed" in str(
        err.value)

    with pytest.raises(IndexError) as err:
        tp.jit(lambda x: x[:, 4])(X)  # MARK-range
    assert err.value.line == _line_of("MARK-range")
    assert "index 4 is out of bounds for axis 1 with size 4" in str(err.value)

    with pytest.raises(ShapeError) as err:
        tp.jit(lambda x: jnp.nonzero(x))(X)  # MARK-nonzero
    assert err.value.line == _line_of("MARK-nonzero") and "size=" in str(err.value)

    with pytest.raises(IndexError, match="boolean index"):
        jnp.asarray(X)[np.array([True, False])]
    with pytest.raises(IndexError, match="integer"):
        jnp.asarray(X)[np.array([0.5])]
    with pytest.raises(IndexError, match="single ellipsis"):
        jnp.asarray(X)[..., 0, ...]
    with pytest.raises(IndexError, match="static"):
        tp.jit(lambda x, i: x[i:])(X, np.int32(1))
