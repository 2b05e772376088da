"""The named special matrices of ``jax.scipy.linalg`` (transpiler/scipy/special_matrices.py):
values against SciPy, values, shapes and dtypes against JAX, gradients against float64
finite differences, vmap against a loop, jit against eager, and JAX's errors."""

from __future__ import annotations

import numpy as np
import pytest

import transpiler as tp
import transpiler.numpy as jnp
import transpiler.scipy.special_matrices as sm

rng = np.random.default_rng(0)
X = rng.normal(size=(2, 4)).astype(np.float32)
Y = rng.normal(size=(3, 1, 5)).astype(np.float32)


def _close(got, want, dtype, what):
    tol = 1e-12 if np.dtype(dtype) in (np.float64, np.complex128) else 2e-6
    np.testing.assert_allclose(np.asarray(got), want, rtol=tol, atol=tol, err_msg=what)


# --- values against SciPy --------------------------------------------------------------------

ARRAY_CASES = [
    ("toeplitz", lambda m, v, w: m.toeplitz(v)),
    ("toeplitz c r", lambda m, v, w: m.toeplitz(v, w)),
    ("hankel", lambda m, v, w: m.hankel(v)),
    ("hankel c r", lambda m, v, w: m.hankel(v, w)),
    ("circulant", lambda m, v, w: m.circulant(v)),
    ("companion", lambda m, v, w: m.companion(v)),
    ("fiedler", lambda m, v, w: m.fiedler(v)),
    ("fiedler_companion", lambda m, v, w: m.fiedler_companion(v)),
    ("leslie", lambda m, v, w: m.leslie(v, w[:len(v) - 1])),
    ("convolution_matrix full", lambda m, v, w: m.convolution_matrix(v, 3)),
    ("convolution_matrix same", lambda m, v, w: m.convolution_matrix(v, 7, "same")),
    ("convolution_matrix valid", lambda m, v, w: m.convolution_matrix(v, 2, "valid")),
]


@pytest.mark.parametrize("size", [2, 3, 6])
@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.complex64])
@pytest.mark.parametrize("name,fn", ARRAY_CASES, ids=[c[0] for c in ARRAY_CASES])
def test_array_constructors_match_scipy(name, fn, dtype, size):
    sl = pytest.importorskip("scipy.linalg")  # (the oracle: JAX's dependency)
    v = (rng.integers(1, 9, size=size) + (1j * rng.integers(1, 9, size=size)
                                          if dtype == np.complex64 else 0)).astype(dtype)
    w = rng.integers(-5, 5, size=size + 2).astype(dtype)
    got, want = fn(sm, v, w), fn(sl, v, w)
    assert got.shape == want.shape
    _close(got, want, np.complex64 if dtype == np.complex64 else np.float32, name)


STATIC_CASES = [
    ("hilbert", lambda m, n: m.hilbert(n)),
    ("invhilbert", lambda m, n: m.invhilbert(n)),
    ("pascal", lambda m, n: m.pascal(n)),
    ("pascal lower", lambda m, n: m.pascal(n, "lower")),
    ("pascal upper", lambda m, n: m.pascal(n, "upper")),
    ("invpascal", lambda m, n: m.invpascal(n)),
    ("invpascal lower", lambda m, n: m.invpascal(n, "lower")),
    ("invpascal upper", lambda m, n: m.invpascal(n, "upper")),
    ("helmert", lambda m, n: m.helmert(n)),
    ("helmert full", lambda m, n: m.helmert(n, full=True)),
    ("dft", lambda m, n: m.dft(n)),
    ("dft sqrtn", lambda m, n: m.dft(n, "sqrtn")),
    ("dft n", lambda m, n: m.dft(n, "n")),
]


@pytest.mark.parametrize("x64", [False, True], ids=["x32", "x64"])
@pytest.mark.parametrize("n", [1, 4, 7])
@pytest.mark.parametrize("name,fn", STATIC_CASES, ids=[c[0] for c in STATIC_CASES])
def test_static_constructors_match_scipy(name, fn, n, x64, monkeypatch):
    sl = pytest.importorskip("scipy.linalg")  # (the oracle: JAX's dependency)
    monkeypatch.setattr(tp.config, "enable_x64", x64)
    got, want = fn(sm, n), fn(sl, n)
    assert got.shape == want.shape
    wide = x64 and not name.startswith("pascal")  # JAX's pascal is float32 even with x64
    if name.startswith("dft"):
        expected = np.complex128 if wide else np.complex64
    else:
        expected = np.float64 if wide else np.float32
    assert np.asarray(got).dtype == expected
    _close(got, np.asarray(want, np.complex128 if name.startswith("dft") else np.float64),
           got.dtype, name)


@pytest.mark.parametrize("n", [1, 2, 8, 32])
def test_hadamard_matches_scipy(n, monkeypatch):
    sl = pytest.importorskip("scipy.linalg")  # (the oracle: JAX's dependency)
    got = sm.hadamard(n)
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, sl.hadamard(n))
    assert sm.hadamard(n, dtype=np.float32).dtype == np.float32
    monkeypatch.setattr(tp.config, "enable_x64", True)
    assert sm.hadamard(n).dtype == np.int64


def test_large_orders_are_exact_and_overflow_to_inf():
    sl = pytest.importorskip("scipy.linalg")  # (the oracle: JAX's dependency)
    # Exact integers rounded once (JAX's lgamma-based formulas are within ~1e-5).
    np.testing.assert_array_equal(sm.pascal(12), sl.pascal(12).astype(np.float32))
    np.testing.assert_array_equal(sm.invhilbert(9), sl.invhilbert(9, exact=True)
                                  .astype(np.float64).astype(np.float32))
    assert np.isinf(np.asarray(sm.invhilbert(40))).any()  # past float32, as in JAX


# --- values, shapes and dtypes against JAX -----------------------------------------------------

A = np.array
JAX_CASES = [
    ("toeplitz", (X,)), ("toeplitz", (X, Y)), ("toeplitz", (A([1, 2, 3]),)),
    ("toeplitz", (A([1 + 2j, 2, 3]),)), ("toeplitz", (2,)), ("toeplitz", (np.zeros(0), X)),
    ("hankel", (X,)), ("hankel", (X, Y)), ("hankel", (A([1, 2, 3]), A([4, 5]))),
    ("circulant", (X,)), ("circulant", (5.0,)), ("circulant", (A([1, 2, 3]),)),
    ("leslie", (A([1, 2]), A([3]))), ("leslie", (np.ones((2, 3)), np.ones((4, 1, 2)))),
    ("leslie", (A([1, 2]), 3.0)), ("leslie", (X, Y[..., :3])),
    ("companion", (A([1, 2, 3]),)), ("companion", (X,)), ("companion", (A([1 + 1j, 2, 3]),)),
    ("companion", (A([0.0, 1, 2]),)), ("companion", (A([1, 2]),)),
    ("fiedler", (3,)), ("fiedler", (X,)), ("fiedler", (A([1, 2, 5]),)),
    ("fiedler_companion", (A([2.0]),)), ("fiedler_companion", (A([1, 2]),)),
    ("fiedler_companion", (rng.normal(size=(2, 7)).astype(np.float32),)),
    ("fiedler_companion", (A([1, 2, 3, 4, 5, 6]),)),
    ("convolution_matrix", (A([1, 2, 3]), 2, "same")), ("convolution_matrix", (X, 3, "valid")),
    ("convolution_matrix", (X, 6, "same")), ("convolution_matrix", (X, 2)),
    ("hilbert", (5,)), ("hilbert", (0,)), ("invhilbert", (5,)), ("pascal", (5,)),
    ("pascal", (5, "lower")), ("invpascal", (5,)), ("invpascal", (5, "upper")),
    ("helmert", (1,)), ("helmert", (1, True)), ("helmert", (5, True)), ("hadamard", (8,)),
    ("hadamard", (4, np.float32)), ("dft", (5,)), ("dft", (4, "sqrtn")), ("dft", (6, "n")),
    ("dft", (0,)), ("dft", (3,), {"dtype": np.complex128}),
]


@pytest.mark.filterwarnings("ignore:Explicitly requested dtype complex128")
@pytest.mark.parametrize("case", JAX_CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(JAX_CASES)])
def test_matches_jax(case):
    jsl = pytest.importorskip("jax.scipy.linalg")
    name, args = case[0], case[1]
    kwargs = case[2] if len(case) > 2 else {}
    want = getattr(jsl, name)(*args, **kwargs)
    got = getattr(sm, name)(*args, **kwargs)
    assert (got.shape, np.asarray(got).dtype) == (want.shape, want.dtype)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=2e-5, atol=1e-5)


# --- gradients, vmap, jit ----------------------------------------------------------------------

F = rng.normal(size=5)
G = rng.normal(size=4)
DIFFERENTIABLE = [
    ("toeplitz", lambda a: sm.toeplitz(a)),
    ("toeplitz c r", lambda a: sm.toeplitz(a, G)),
    ("toeplitz r", lambda a: sm.toeplitz(G, a)),
    ("hankel", lambda a: sm.hankel(a)),
    ("hankel c r", lambda a: sm.hankel(a, G)),
    ("circulant", lambda a: sm.circulant(a)),
    ("companion", lambda a: sm.companion(a)),
    ("convolution_matrix", lambda a: sm.convolution_matrix(a, 3)),
    ("convolution_matrix same", lambda a: sm.convolution_matrix(a, 7, "same")),
    ("fiedler", lambda a: sm.fiedler(a)),
    ("fiedler_companion", lambda a: sm.fiedler_companion(a)),
    ("leslie f", lambda a: sm.leslie(a, G)),
    ("leslie s", lambda a: sm.leslie(jnp.concatenate([a, a[:1]]), a)),
]


def _weights(shape):
    return np.cos(np.arange(int(np.prod(shape)))).reshape(shape)


@pytest.mark.parametrize("name,fn", DIFFERENTIABLE, ids=[c[0] for c in DIFFERENTIABLE])
def test_gradients_against_finite_differences(name, fn, monkeypatch):
    monkeypatch.setattr(tp.config, "enable_x64", True)
    a = F[:4] if name == "leslie s" else F
    weights = _weights(fn(a).shape)

    def loss(x):
        return jnp.sum(jnp.sin(fn(x)) * weights)

    eps = 1e-6
    numeric = np.array([(loss(a + eps * e) - loss(a - eps * e)) / (2 * eps)
                        for e in np.eye(a.size)])
    grad = tp.grad(loss)(a)
    assert np.asarray(grad).dtype == np.float64
    np.testing.assert_allclose(grad, numeric, rtol=1e-6, atol=1e-8, err_msg=name)
    np.testing.assert_allclose(tp.jit(tp.grad(loss))(a), numeric, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("name,fn", DIFFERENTIABLE, ids=[c[0] for c in DIFFERENTIABLE])
def test_vmap_matches_a_loop_and_jit_matches_eager(name, fn):
    a = (F[:4] if name == "leslie s" else F).astype(np.float32)
    batch = np.stack([a, 2 * a - 1, a ** 2])
    want = np.stack([np.asarray(fn(row)) for row in batch])
    np.testing.assert_allclose(tp.vmap(fn)(batch), want, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(tp.jit(fn)(a), fn(a), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(tp.jit(tp.vmap(fn))(batch), want, rtol=1e-6, atol=1e-6)


def test_batched_inputs_match_a_loop():
    sl = pytest.importorskip("scipy.linalg")  # (the oracle: JAX's dependency)
    c, r = X, Y  # leading dims (2,) and (3, 1) broadcast to (3, 2)
    got = sm.toeplitz(c, r)
    assert got.shape == (3, 2, 4, 5)
    for i in range(3):
        for j in range(2):
            np.testing.assert_array_equal(got[i, j], sl.toeplitz(c[j], r[i, 0]))
            np.testing.assert_array_equal(sm.hankel(c, r)[i, j], sl.hankel(c[j], r[i, 0]))
    for j in range(2):
        np.testing.assert_array_equal(sm.circulant(X)[j], sl.circulant(X[j]))
        np.testing.assert_allclose(sm.companion(X)[j], sl.companion(X[j]), rtol=1e-6)
        np.testing.assert_allclose(sm.fiedler_companion(X)[j], sl.fiedler_companion(X[j]),
                                   rtol=1e-6)
        np.testing.assert_array_equal(sm.fiedler(X)[j], sl.fiedler(X[j]))
        np.testing.assert_array_equal(sm.convolution_matrix(X, 3)[j],
                                      sl.convolution_matrix(X[j], 3))
    np.testing.assert_array_equal(tp.vmap(sm.toeplitz, in_axes=(0, None))(X, Y[0, 0]),
                                  np.stack([sl.toeplitz(X[j], Y[0, 0]) for j in range(2)]))


def test_static_constructors_under_jit():
    sl = pytest.importorskip("scipy.linalg")  # (the oracle: JAX's dependency)
    out = tp.jit(lambda s: s * sm.hilbert(3) + sm.pascal(3) + sm.helmert(3, full=True))(2.0)
    want = 2 * sl.hilbert(3) + sl.pascal(3) + sl.helmert(3, full=True)
    np.testing.assert_allclose(out, want, rtol=1e-6)
    np.testing.assert_allclose(tp.jit(lambda s: s * sm.dft(4))(2.0), 2 * sl.dft(4), atol=1e-6)


# --- bad input -----------------------------------------------------------------------------------

BAD = [
    (lambda: sm.hankel(3.0), "c must be at least 1-dimensional"),
    (lambda: sm.hankel(X, 3.0), "r must be at least 1-dimensional"),
    (lambda: sm.toeplitz(np.ones((2, 3)), np.ones((3, 2))), "broadcast"),
    (lambda: sm.companion(np.ones(1)), "at least 2"),
    (lambda: sm.companion(2.0), "at least 2"),
    (lambda: sm.leslie(np.ones(1), np.ones(0)), "at least 2"),
    (lambda: sm.leslie(np.ones(3), np.ones(1)), "one less than the length of f"),
    (lambda: sm.fiedler_companion(np.ones(0)), "nonzero length"),
    (lambda: sm.convolution_matrix(np.ones(2), 0), "positive integer"),
    (lambda: sm.convolution_matrix(np.ones(2), 2, "wide"), "mode must be one of"),
    (lambda: sm.convolution_matrix(1.0, 2), "at least 1-dimensional"),
    (lambda: sm.convolution_matrix(np.ones(0), 2), "at least 1"),
    (lambda: sm.hadamard(3), "power of 2"),
    (lambda: sm.helmert(0), "positive integer"),
    (lambda: sm.pascal(3, "diagonal"), "Expected kind"),
    (lambda: sm.invpascal(3, "diagonal"), "Expected kind"),
    (lambda: sm.dft(3, "half"), "scale must be"),
    (lambda: sm.dft(3, dtype=np.float32), "complex floating-point"),
]


@pytest.mark.parametrize("call,message", BAD, ids=[m for _, m in BAD])
def test_bad_input_raises_jaxs_errors(call, message):
    with pytest.raises(ValueError, match=message):
        call()


@pytest.mark.parametrize("name", ["toeplitz", "hankel", "circulant", "companion", "fiedler",
                                  "fiedler_companion"])
def test_lists_are_rejected_like_jax(name):
    with pytest.raises(TypeError, match="ndarray or scalar arguments, got list"):
        getattr(sm, name)([1.0, 2.0, 3.0])
    with pytest.raises(TypeError, match="got list at position 1"):
        sm.leslie(np.ones(3), [1.0, 2.0])


def test_zero_leading_coefficient_gives_inf_like_jax():
    # JAX does not check a[0] != 0 (SciPy raises): the first row is -a[1:] / 0.
    got = np.asarray(sm.companion(np.array([0.0, 1.0, 2.0])))
    np.testing.assert_array_equal(got, [[-np.inf, -np.inf], [1.0, 0.0]])
    assert np.isinf(np.asarray(sm.fiedler_companion(np.array([0.0, 1.0, 2.0])))).any()
