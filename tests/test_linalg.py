"""Linear algebra (transpiler/lax/linalg.py, numpy/linalg.py, scipy/linalg.py): values
against JAX 0.10.2 and NumPy, eagerly and under jit, single matrices and batches;
gradients against JAX; batching against a loop; singular matrices give JAX's inf/NaN;
bad shapes are errors at the user's line."""

from __future__ import annotations

import numpy as np
import pytest

import transpiler as tp
import transpiler.lax as lax
import transpiler.numpy as jnp
import transpiler.scipy.linalg as tsl

jax = pytest.importorskip("jax")
jjnp = jax.numpy
jsl = pytest.importorskip("jax.scipy.linalg")

rng = np.random.default_rng(11)
A = rng.normal(size=(2, 5, 5)).astype(np.float32)
G = rng.normal(size=(2, 5, 5)).astype(np.float32)
SPD = G @ np.swapaxes(G, -1, -2) + 5 * np.eye(5, dtype=np.float32)
L = np.linalg.cholesky(SPD)
b = rng.normal(size=5).astype(np.float32)
B = rng.normal(size=(2, 5, 3)).astype(np.float32)
BR = rng.normal(size=(2, 3, 5)).astype(np.float32)


def _same(got, want, name, rtol=2e-4):
    got = tuple(got) if isinstance(got, (tuple, list)) else (got,)
    want = tuple(want) if isinstance(want, (tuple, list)) else (want,)
    for g, w in zip(got, want, strict=True):
        g, w = np.asarray(g), np.asarray(w)
        assert (g.dtype, g.shape) == (w.dtype, w.shape), name
        np.testing.assert_allclose(g, w, rtol=rtol, atol=rtol, err_msg=name)


NUMPY_LINALG = [
    ("cholesky", lambda m, a: m.linalg.cholesky(a), SPD),
    ("cholesky upper", lambda m, a: m.linalg.cholesky(a, upper=True), SPD),
    ("solve vector", lambda m, a: m.linalg.solve(a[0], b), A),
    ("solve batch", lambda m, a: m.linalg.solve(a, B), A),
    ("solve broadcast", lambda m, a: m.linalg.solve(a, B[0]), A),
    ("inv", lambda m, a: m.linalg.inv(a), A),
    ("det", lambda m, a: m.linalg.det(a), A),
    ("slogdet", lambda m, a: tuple(m.linalg.slogdet(a)), A),
    ("matrix_power 3", lambda m, a: m.linalg.matrix_power(a, 3), A),
    ("matrix_power -2", lambda m, a: m.linalg.matrix_power(a, -2), A),
    ("matrix_power 0", lambda m, a: m.linalg.matrix_power(a, 0), A),
]


@pytest.mark.parametrize("name,fn,arg", NUMPY_LINALG, ids=[c[0] for c in NUMPY_LINALG])
def test_numpy_linalg_matches_jax(name, fn, arg):
    want = fn(jjnp, arg)
    _same(fn(jnp, arg), want, name)
    _same(tp.jit(lambda a: fn(jnp, a))(arg), want, name + " under jit")


SCIPY_LINALG = [
    ("cholesky", lambda s, a: s.cholesky(a), SPD),
    ("cholesky lower", lambda s, a: s.cholesky(a, lower=True), SPD),
    ("cho_solve", lambda s, a: s.cho_solve(s.cho_factor(a[0]), b), SPD),
    ("cho_solve lower batch", lambda s, a: s.cho_solve(s.cho_factor(a, lower=True), B), SPD),
    ("solve_triangular", lambda s, a: s.solve_triangular(np.tril(a[0]), b, lower=True), A),
    ("solve_triangular trans", lambda s, a: s.solve_triangular(np.triu(a[0]), B[0], trans=1),
     A),
    ("lu", lambda s, a: s.lu(a[0]), A),
    ("lu_factor", lambda s, a: s.lu_factor(a[0]), A),
    ("lu_solve", lambda s, a: s.lu_solve(s.lu_factor(a[0]), b), A),
    ("lu_solve trans", lambda s, a: s.lu_solve(s.lu_factor(a[0]), B[0], trans=1), A),
    ("solve pos", lambda s, a: s.solve(a[0], b, assume_a="pos"), SPD),
    ("block_diag", lambda s, a: s.block_diag(a[0], a[1][:2, :3], 7.0), A),
]


@pytest.mark.parametrize("name,fn,arg", SCIPY_LINALG, ids=[c[0] for c in SCIPY_LINALG])
def test_scipy_linalg_matches_jax(name, fn, arg):
    _same(fn(tsl, arg), fn(jsl, arg), name)


TRIANGULAR = [dict(left_side=left, lower=lower, transpose_a=tr, unit_diagonal=unit)
              for left in (True, False) for lower in (True, False) for tr in (False, True)
              for unit in (False, True)]


@pytest.mark.parametrize("kw", TRIANGULAR, ids=[str(sorted(k.items())) for k in TRIANGULAR])
def test_triangular_solve_and_its_gradients_match_jax(kw):
    a = L if kw["lower"] else np.swapaxes(L, -1, -2)
    rhs = B if kw["left_side"] else BR
    want = jax.lax.linalg.triangular_solve(a, rhs, **kw)
    _same(lax.linalg.triangular_solve(a, rhs, **kw), want, "eager")
    _same(tp.jit(lambda x, y: lax.linalg.triangular_solve(x, y, **kw))(a, rhs), want, "jit")
    grads = tp.grad(lambda x, y: jnp.sum(jnp.sin(lax.linalg.triangular_solve(x, y, **kw))),
                    (0, 1))(a, rhs)
    wants = jax.grad(lambda x, y: jjnp.sum(jjnp.sin(jax.lax.linalg.triangular_solve(x, y, **kw))),
                     (0, 1))(a, rhs)
    _same(grads, wants, "grad", rtol=1e-3)


def _loss(a, spd):
    return (jnp.sum(jnp.sin(jnp.linalg.solve(a, B))) + jnp.sum(jnp.linalg.slogdet(a)[1])
            + jnp.sum(jnp.linalg.cholesky(spd) ** 2) + jnp.sum(jnp.linalg.inv(a)[..., 0])
            + jnp.sum(jnp.linalg.det(a[:, :2, :2])))


def _jax_loss(a, spd):
    return (jjnp.sum(jjnp.sin(jjnp.linalg.solve(a, B))) + jjnp.sum(jjnp.linalg.slogdet(a)[1])
            + jjnp.sum(jjnp.linalg.cholesky(spd) ** 2) + jjnp.sum(jjnp.linalg.inv(a)[..., 0])
            + jjnp.sum(jjnp.linalg.det(a[:, :2, :2])))


def test_gradients_match_jax():
    want = jax.grad(_jax_loss, (0, 1))(A, SPD)
    _same(tp.grad(_loss, (0, 1))(A, SPD), want, "grad", rtol=1e-3)
    _same(tp.jit(tp.grad(_loss, (0, 1)))(A, SPD), want, "jit(grad)", rtol=1e-3)


def test_second_derivatives_against_finite_differences(monkeypatch):
    monkeypatch.setattr(tp.config, "enable_x64", True)
    g = rng.normal(size=(4, 4))
    x0 = g @ g.T + 4 * np.eye(4)

    def f(v):
        m = jnp.reshape(v, (4, 4))
        factor = jnp.linalg.cholesky(m)
        return jnp.sum(jnp.log(jnp.diagonal(factor))) + jnp.sum(jnp.linalg.solve(m, np.ones(4)))

    x = x0.ravel()
    eps = 1e-6
    basis = np.eye(16)
    grad = tp.grad(f)
    numeric = np.array([(grad(x + eps * e) - grad(x - eps * e)) / (2 * eps) for e in basis])
    np.testing.assert_allclose(tp.hessian(f)(x), numeric, rtol=1e-5, atol=1e-6)


def test_batching_matches_a_loop():
    fns = [jnp.linalg.inv, jnp.linalg.det, lambda m: jnp.linalg.solve(m, b),
           lambda m: jnp.linalg.cholesky(m @ m.T + 5 * jnp.eye(5)),
           lambda m: tp.grad(lambda x: jnp.linalg.slogdet(x)[1])(m)]
    for fn in fns:
        want = np.stack([np.asarray(fn(m)) for m in A])
        np.testing.assert_allclose(tp.vmap(fn)(A), want, rtol=2e-4, atol=2e-4)
        np.testing.assert_allclose(tp.jit(tp.vmap(fn))(A), want, rtol=2e-4, atol=2e-4)


def test_singular_and_indefinite_matrices_give_jaxs_inf_and_nan():
    singular = np.zeros((2, 3, 3), np.float32)
    singular[1] = np.eye(3)
    singular[1, 2, 2] = 0
    ones = np.ones((2, 3, 1), np.float32)
    want = jax.scipy.linalg.solve(singular, ones)
    for got in (jnp.linalg.solve(singular, ones), tp.jit(jnp.linalg.solve)(singular, ones)):
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    assert float(jnp.linalg.det(singular[0])) == 0.0
    sign, logdet = jnp.linalg.slogdet(singular[0])
    assert float(sign) == 0.0 and float(logdet) == -np.inf
    indefinite = -SPD
    for got in (jnp.linalg.cholesky(indefinite), tp.jit(jnp.linalg.cholesky)(indefinite)):
        assert np.isnan(np.asarray(got)).all()


def test_a_constant_right_hand_side_under_jit():
    """IREE 3.13's aggressive fusion failed at run time on a solve whose b was a constant of
    the program; the loops' inputs are behind optimization barriers."""
    np.testing.assert_allclose(tp.jit(lambda a: jnp.linalg.solve(a, B))(A),
                               np.linalg.solve(A, B), rtol=1e-4, atol=1e-5)


def test_bad_input_names_the_function_and_the_line():
    with pytest.raises(ValueError, match="cholesky: expected a square matrix") as err:
        jnp.linalg.cholesky(np.ones((3, 4), np.float32))
    assert "test_linalg.py" in str(err.value)
    with pytest.raises(ValueError, match="solve: b of shape"):
        jnp.linalg.solve(A, np.ones((4, 2), np.float32))
    with pytest.raises(TypeError, match="static int"):
        jnp.linalg.matrix_power(A, 1.5)
    with pytest.raises(ValueError, match="triangular_solve"):
        lax.linalg.triangular_solve(L, BR, left_side=True, lower=True)


def test_chained_solves_of_twenty_or_more_steps_under_jit():
    """Two substitution loops of 16+ steps in one program failed to compile ("operand
    does not dominate this use") while loops were unrolled; they are not now."""
    g = rng.normal(size=(40, 40)).astype(np.float32)
    spd = g @ g.T / 40 + np.eye(40, dtype=np.float32)
    rhs = rng.normal(size=(40, 3)).astype(np.float32)

    def f(a, b):
        return tsl.cho_solve(tsl.cho_factor(a, lower=True), b)

    np.testing.assert_allclose(tp.jit(f)(spd, rhs), np.linalg.solve(spd, rhs), rtol=1e-3,
                               atol=1e-4)


def test_gradients_of_device_arrays_and_our_arrays():
    """jit's results (device arrays) and our arrays are differentiated like NumPy input:
    jnp.asarray passes them through instead of converting them inside a `try`."""
    def f(a):
        return jnp.linalg.slogdet(a)[1] + jnp.sum(jnp.sort(a[0])) + jnp.median(a)

    want = tp.grad(f)(SPD[0])
    for value in (tp.jit(lambda a: a)(SPD[0]), jnp.asarray(SPD[0])):
        np.testing.assert_allclose(tp.grad(f)(value), want, rtol=1e-6)
        np.testing.assert_allclose(tp.jit(tp.grad(f))(value), want, rtol=1e-5, atol=1e-6)
