"""The eigendecomposition of a general matrix (`jnp.linalg.eig`, `eigvals`,
`lax.linalg.eig`): values against NumPy's LAPACK and the defining equations, eagerly and
under jit, single matrices and batches; derivatives against float64 finite differences and
(when installed) JAX; vmap against a loop; what cannot be differentiated is an error."""

from __future__ import annotations

import numpy as np
import pytest

import transpiler as tp
import transpiler.lax as lax
import transpiler.numpy as jnp
from tests.oracles import finite_differences

rng = np.random.default_rng(5)
A = rng.normal(size=(2, 5, 5)).astype(np.float32)
ROT = (A[0] - A[0].T + 0.3 * A[1]).astype(np.float32)  # complex eigenvalues


def _check_decomposition(a, w, vl, vr, tol):
    a, w, vl, vr = (np.asarray(x) for x in (a, w, vl, vr))
    np.testing.assert_allclose(a @ vr, vr * w[..., None, :], atol=tol)
    vlh = np.conj(np.swapaxes(vl, -1, -2))
    np.testing.assert_allclose(vlh @ a, w[..., :, None] * vlh, atol=tol)
    for v in (vl, vr):  # LAPACK's normalization: unit norm, largest component real
        np.testing.assert_allclose(np.linalg.norm(v, axis=-2), 1, atol=tol)
        top = np.take_along_axis(v, np.argmax(np.abs(v), axis=-2)[..., None, :], axis=-2)
        np.testing.assert_allclose(np.imag(top), 0, atol=tol)


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "jit"])
@pytest.mark.parametrize("a", [A, ROT, A.astype(np.complex64) + 1j * A[::-1]],
                         ids=["real batch", "complex eigenvalues", "complex64"])
def test_values_and_vectors_match_lapack(a, compiled):
    run = tp.jit(lax.linalg.eig) if compiled else lax.linalg.eig
    w, vl, vr = run(a)
    assert np.asarray(w).dtype == np.complex64 and np.asarray(vr).dtype == np.complex64
    want_w, want_v = np.linalg.eig(a)
    np.testing.assert_allclose(np.asarray(w), want_w, rtol=1e-5, atol=1e-5)  # LAPACK's order
    np.testing.assert_allclose(np.asarray(vr), want_v, rtol=1e-4, atol=1e-5)
    _check_decomposition(a, w, vl, vr, 1e-4)
    eig = tp.jit(jnp.linalg.eig) if compiled else jnp.linalg.eig
    w2, v2 = eig(a)
    np.testing.assert_allclose(np.asarray(w2), want_w, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.asarray(v2), want_v, rtol=1e-4, atol=1e-5)
    eigvals = tp.jit(jnp.linalg.eigvals) if compiled else jnp.linalg.eigvals
    np.testing.assert_allclose(np.asarray(eigvals(a)), want_w, rtol=1e-5, atol=1e-5)


def test_dtypes_follow_jax(monkeypatch):
    assert np.asarray(jnp.linalg.eigvals(np.eye(3, dtype=np.int32))).dtype == np.complex64
    monkeypatch.setattr(tp.config, "enable_x64", True)
    w, v = jnp.linalg.eig(A[0].astype(np.float64))
    assert np.asarray(w).dtype == np.complex128 and np.asarray(v).dtype == np.complex128
    w, vr = lax.linalg.eig(A[0], compute_left_eigenvectors=False)
    assert np.asarray(w).dtype == np.complex64


def test_vmap_matches_a_loop():
    for fn in (jnp.linalg.eigvals, lambda a: jnp.linalg.eig(a)[1]):
        want = np.stack([np.asarray(fn(m)) for m in A])
        np.testing.assert_allclose(np.asarray(tp.vmap(fn)(A)), want, atol=1e-5)
        np.testing.assert_allclose(np.asarray(tp.jit(tp.vmap(fn))(A)), want, atol=1e-5)


def _eigenvalue_loss(a):
    w = jnp.linalg.eigvals(a)
    return jnp.sum(jnp.real(w) ** 2 + 0.3 * jnp.imag(w) ** 3 + jnp.abs(w))


def _eigenvector_loss(a):
    w, vr = lax.linalg.eig(a, enable_eigvec_derivs=True, compute_left_eigenvectors=False)
    return jnp.sum(jnp.real(vr) ** 2 * jnp.arange(5.0) + 0.7 * jnp.imag(vr)) + jnp.sum(jnp.real(w))


def _left_vector_loss(a):  # (|vl|: LAPACK fixes a real vector's sign as it computes it)
    vl = lax.linalg.eig(a, enable_eigvec_derivs=True, compute_right_eigenvectors=False)[1]
    return jnp.sum(jnp.abs(vl) ** 2 * jnp.arange(5.0)[:, None] * jnp.arange(1.0, 6.0))


@pytest.mark.parametrize("loss", [_eigenvalue_loss, _eigenvector_loss, _left_vector_loss],
                         ids=["eigenvalues", "eigenvectors", "left eigenvectors"])
def test_derivatives_against_finite_differences(loss, monkeypatch):
    monkeypatch.setattr(tp.config, "enable_x64", True)
    a = ROT.astype(np.float64)
    want = finite_differences(loss, a)
    np.testing.assert_allclose(np.asarray(tp.grad(loss)(a)), want, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(np.asarray(tp.jit(tp.grad(loss))(a)), want, rtol=1e-6, atol=1e-6)
    t = rng.normal(size=a.shape)
    np.testing.assert_allclose(float(tp.jvp(loss, (a,), (t,))[1]), np.sum(want * t), rtol=1e-6)
    grad = tp.grad(loss)
    eps = 1e-6
    numeric = np.stack([(np.asarray(grad(a + eps * e)) - np.asarray(grad(a - eps * e))) / (2 * eps)
                        for e in np.eye(a.size).reshape(a.size, *a.shape)], -1)
    np.testing.assert_allclose(np.asarray(tp.hessian(loss)(a)), numeric.reshape(5, 5, 5, 5),
                               rtol=1e-5, atol=1e-6)


def test_batched_gradients_match_a_loop():
    grad = tp.grad(_eigenvalue_loss)
    want = np.stack([np.asarray(grad(m)) for m in A])
    np.testing.assert_allclose(np.asarray(tp.vmap(grad)(A)), want, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(np.asarray(tp.jit(tp.vmap(grad))(A)), want, rtol=1e-4, atol=1e-4)


def test_gradients_match_jax():
    jax = pytest.importorskip("jax")
    jjnp = jax.numpy

    def jax_values(a):
        w = jjnp.linalg.eigvals(a)
        return jjnp.sum(jjnp.real(w) ** 2 + 0.3 * jjnp.imag(w) ** 3 + jjnp.abs(w))

    def jax_vectors(a):
        w, vr = jax.lax.linalg.eig(a, enable_eigvec_derivs=True, compute_left_eigenvectors=False)
        return jjnp.sum(jjnp.real(vr) ** 2 * jjnp.arange(5.0) + 0.7 * jjnp.imag(vr)) \
            + jjnp.sum(jjnp.real(w))

    def jax_left(a):
        vl = jax.lax.linalg.eig(a, enable_eigvec_derivs=True, compute_right_eigenvectors=False)[1]
        return jjnp.sum(jjnp.abs(vl) ** 2 * jjnp.arange(5.0)[:, None] * jjnp.arange(1.0, 6.0))

    for ours, theirs in ((_eigenvalue_loss, jax_values), (_eigenvector_loss, jax_vectors),
                         (_left_vector_loss, jax_left)):
        np.testing.assert_allclose(np.asarray(tp.grad(ours)(ROT)), np.asarray(jax.grad(theirs)(ROT)),
                                   rtol=2e-3, atol=2e-3)
    np.testing.assert_allclose(np.asarray(jnp.linalg.eigvals(ROT)),
                               np.asarray(jjnp.linalg.eigvals(ROT)), rtol=1e-5, atol=1e-5)


def test_what_cannot_be_differentiated_is_an_error():
    with pytest.raises(NotImplementedError, match="enable_eigvec_derivs=True") as err:
        tp.grad(lambda a: jnp.sum(jnp.real(jnp.linalg.eig(a)[1])))(ROT)
    assert "test_linalg_eig.py" in str(err.value)
    with pytest.raises(NotImplementedError, match="enable_eigvec_derivs=True"):
        tp.grad(lambda a: jnp.sum(jnp.real(
            lax.linalg.eig(a, compute_right_eigenvectors=False)[1])))(ROT)


def test_bad_input_names_the_function_and_the_line():
    with pytest.raises(ValueError, match="eig: expected a square matrix") as err:
        jnp.linalg.eig(np.ones((3, 4), np.float32))
    assert "test_linalg_eig.py" in str(err.value)
    with pytest.raises(TypeError, match="eig: expected a float32.*float16"):
        jnp.linalg.eigvals(np.eye(3, dtype=np.float16))
