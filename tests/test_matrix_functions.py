"""``jax.scipy.linalg``'s functions of a matrix and the small solvers built on the
factorizations (sqrtm, funm, expm_frechet, polar, solve_sylvester, qr_multiply,
eigh_tridiagonal): the defining equations and NumPy as oracles, JAX's values when
installed, eagerly and under jit; derivatives against float64 finite differences; bad
input gets JAX's errors at the user's line."""

from __future__ import annotations

import numpy as np
import pytest

import transpiler as tp
import transpiler.numpy as jnp
import transpiler.scipy.linalg as tsl
from tests.oracles import finite_differences

rng = np.random.default_rng(17)
A = rng.normal(size=(4, 4)).astype(np.float32)
B = rng.normal(size=(3, 3)).astype(np.float32)
C = rng.normal(size=(4, 3)).astype(np.float32)
E = rng.normal(size=(4, 4)).astype(np.float32)
SPD = (A @ A.T + np.eye(4)).astype(np.float32)
TALL = rng.normal(size=(5, 3)).astype(np.float32)


@pytest.fixture(autouse=True, params=[False, True], ids=["loops", "lapack"])
def _lapack_on_host(request, monkeypatch):
    """Every test with the factorizations compiled as loops (what lower() stages) and as
    LAPACK calls on the host (what a jit called in this process stages)."""
    monkeypatch.setattr(tp.config, "lapack_on_host", request.param)


def _jax_scipy_linalg():
    return pytest.importorskip("jax.scipy.linalg")


def _close(got, want, tol=1e-4):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype, (got.dtype, want.dtype)
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "jit"])
def test_functions_of_a_matrix(compiled):
    run = tp.jit if compiled else (lambda f: f)
    root = np.asarray(run(tsl.sqrtm)(A))
    assert root.dtype == np.complex64  # JAX's: complex, from the complex Schur form
    np.testing.assert_allclose(root @ root, A, atol=1e-4)
    exp = np.asarray(run(lambda a: tsl.funm(a, jnp.exp))(A))
    np.testing.assert_allclose(exp, np.asarray(tsl.expm(A)), atol=1e-4)
    ea, frechet = run(tsl.expm_frechet)(A, E)
    eps = 1e-3  # the Frechet derivative is the directional derivative of expm
    numeric = (np.asarray(tsl.expm(A.astype(np.float64) + eps * E))
               - np.asarray(tsl.expm(A.astype(np.float64) - eps * E))) / (2 * eps)
    np.testing.assert_allclose(np.asarray(frechet), numeric, rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(np.asarray(ea), np.asarray(tsl.expm(A)), atol=1e-5)
    for side, a in (("right", TALL), ("left", TALL.T)):
        u, p = run(lambda x, side=side: tsl.polar(x, side))(a)
        u, p = np.asarray(u), np.asarray(p)
        np.testing.assert_allclose(u @ p if side == "right" else p @ u, a, atol=1e-4)
        np.testing.assert_allclose(p, p.T, atol=1e-5)
        assert np.linalg.eigvalsh(p).min() > -1e-5
    x = np.asarray(run(tsl.solve_sylvester)(A, B, C))
    np.testing.assert_allclose(A @ x + x @ B, C, atol=1e-4)


def test_small_solvers_match_numpy(monkeypatch):
    q, r = np.linalg.qr(TALL)
    c_right, c_left = rng.normal(size=(2, 5)).astype(np.float32), rng.normal(size=(3, 2))
    cq, rr = tsl.qr_multiply(TALL, c_right)
    np.testing.assert_allclose(np.abs(np.asarray(cq)), np.abs(c_right @ q), atol=1e-4)
    np.testing.assert_allclose(np.asarray(cq) @ np.asarray(rr), c_right @ TALL, atol=1e-4)
    qc, _ = tsl.qr_multiply(TALL, c_left.astype(np.float32), mode="left")
    np.testing.assert_allclose(np.asarray(qc).T @ np.asarray(qc), c_left.T @ c_left, atol=1e-4)
    assert np.asarray(tsl.qr_multiply(TALL, c_right[0])[0]).shape == (3,)
    d, e = rng.normal(size=6).astype(np.float32), rng.normal(size=5).astype(np.float32)
    dense = np.diag(d) + np.diag(e, 1) + np.diag(e, -1)
    np.testing.assert_allclose(np.asarray(tsl.eigh_tridiagonal(d, e, eigvals_only=True)),
                               np.linalg.eigvalsh(dense), atol=1e-5)
    w, v = tsl.eigh_tridiagonal(d, e, select="i", select_range=(1, 3))
    np.testing.assert_allclose(np.asarray(w), np.linalg.eigvalsh(dense)[1:4], atol=1e-5)
    np.testing.assert_allclose(dense @ np.asarray(v), np.asarray(v) * np.asarray(w), atol=1e-4)


def test_values_match_jax():
    jsl = _jax_scipy_linalg()
    jjnp = pytest.importorskip("jax.numpy")
    _close(tsl.sqrtm(A), jsl.sqrtm(A))
    _close(tsl.funm(A, jnp.exp), jsl.funm(A, jjnp.exp))
    for ours, theirs in zip(tsl.funm(A, jnp.sin, disp=False), jsl.funm(A, jjnp.sin, disp=False)):
        _close(ours, theirs)
    for ours, theirs in zip(tsl.expm_frechet(A, E), jsl.expm_frechet(A, E)):
        _close(ours, theirs)
    for side in ("right", "left"):
        for ours, theirs in zip(tsl.polar(A, side, method="svd"), jsl.polar(A, side, method="svd")):
            _close(ours, theirs)
    for ours, theirs in zip(tsl.polar(TALL), jsl.polar(TALL)):  # QDWH's factors
        _close(ours, theirs)
    _close(tsl.solve_sylvester(A, B, C), jsl.solve_sylvester(A, B, C))
    c = rng.normal(size=(2, 5)).astype(np.float32)
    for ours, theirs in zip(tsl.qr_multiply(TALL, c), jsl.qr_multiply(TALL, c)):
        _close(ours, theirs)
    d, e = rng.normal(size=6).astype(np.float32), rng.normal(size=5).astype(np.float32)
    _close(tsl.eigh_tridiagonal(d, e, eigvals_only=True),
           jsl.eigh_tridiagonal(d, e, eigvals_only=True))


def test_derivatives_against_finite_differences(monkeypatch):
    """Derivatives JAX does not have (its Schur decomposition has no rule): through the
    eigendecomposition, exact for matrices with distinct eigenvalues."""
    monkeypatch.setattr(tp.config, "enable_x64", True)
    weights = np.arange(16.0).reshape(4, 4)
    spd = SPD.astype(np.float64)
    a, b, c = A.astype(np.float64), B.astype(np.float64), C.astype(np.float64)
    losses = [
        (lambda m: jnp.sum(jnp.real(tsl.sqrtm(m)) * weights), spd),
        (lambda m: jnp.sum(jnp.imag(tsl.funm(m, jnp.sin)) + jnp.real(tsl.funm(m, jnp.sin))), a),
        (lambda m: jnp.sum(tsl.solve_sylvester(m, b, c) * weights[:, :3]), a),
        (lambda m: jnp.sum(tsl.expm_frechet(m, E.astype(np.float64))[1] * weights), a),
        (lambda m: jnp.sum(tsl.polar(m)[1] * weights), a),
    ]
    for loss, x in losses:
        np.testing.assert_allclose(np.asarray(tp.grad(loss)(x)), finite_differences(loss, x),
                                   rtol=1e-5, atol=1e-5)


def test_bad_input_gets_jaxs_errors_at_the_users_line():
    with pytest.raises(ValueError, match="Incompatible shapes for Sylvester") as err:
        tsl.solve_sylvester(A, B, C.T)
    assert "test_matrix_functions.py" in str(err.value)
    with pytest.raises(ValueError, match="Unrecognized method"):
        tsl.solve_sylvester(A, B, C, method="bartels")
    with pytest.raises(NotImplementedError, match="qdwh"):
        tsl.polar(TALL.T)  # QDWH takes tall matrices for side='right' (JAX's)
    with pytest.raises(ValueError, match="side"):
        tsl.polar(A, "top")
    with pytest.raises(ValueError, match="expected A and E to be the same shape"):
        tsl.expm_frechet(A, B)
    with pytest.raises(NotImplementedError, match="Blocked"):
        tsl.sqrtm(A, blocksize=2)
    with pytest.raises(ValueError, match="square"):
        tsl.funm(TALL, jnp.exp)
    with pytest.raises(ValueError, match="Q has 3 columns"):
        tsl.qr_multiply(TALL, np.ones((5, 2), np.float32), mode="left")
    with pytest.raises(TypeError, match="same dtype"):
        tsl.eigh_tridiagonal(np.ones(3, np.int32), np.ones(2, np.float32))
    with pytest.raises(NotImplementedError, match="specific range"):
        tsl.eigh_tridiagonal(np.ones(3, np.float32), np.ones(2, np.float32), select="v",
                             select_range=(0.0, 1.0))
    # a sum of eigenvalues below tol: no unique solution, NaN as in JAX
    x = tsl.solve_sylvester(np.eye(2, dtype=np.float32), -np.eye(2, dtype=np.float32),
                            np.ones((2, 2), np.float32))
    assert np.all(np.isnan(np.asarray(x)))
