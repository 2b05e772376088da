"""Cases for the linear-algebra primitives (transpiler/lax/linalg/) through
`transpiler.numpy.linalg` and `lax.linalg`: single matrices and batches, against NumPy."""

import numpy as np

import transpiler.numpy as jnp
from transpiler import lax
from tests.cases import Case, floats, rng

a = floats(4, 4, seed=1) + 4 * np.eye(4, dtype=np.float32)      # well conditioned
batch = floats(2, 5, 5, seed=2) + 5 * np.eye(5, dtype=np.float32)
g = rng(3).normal(size=(2, 5, 5)).astype(np.float32)
spd = g @ np.swapaxes(g, -1, -2) + 5 * np.eye(5, dtype=np.float32)
b = floats(4, 2, seed=4)
bb = floats(2, 5, 3, seed=5)
lower = np.tril(a)


def _solve_tri(t, rhs, lower_, transpose=False):
    t = np.tril(t) if lower_ else np.triu(t)
    return np.linalg.solve(np.swapaxes(t, -1, -2) if transpose else t, rhs)


CASES = [
    Case("cholesky", jnp.linalg.cholesky, (spd,), np.linalg.cholesky, rtol=1e-4, atol=1e-5),
    Case("cholesky", lambda m: lax.linalg.cholesky(m, symmetrize_input=False), (spd[0],),
         np.linalg.cholesky, rtol=1e-4, atol=1e-5),
    Case("triangular_solve", lambda t, r: lax.linalg.triangular_solve(
        t, r, left_side=True, lower=True), (lower, b), lambda t, r: _solve_tri(t, r, True),
        rtol=1e-4, atol=1e-5),
    Case("triangular_solve", lambda t, r: lax.linalg.triangular_solve(
        t, r, left_side=True, lower=False, transpose_a=True), (a, b),
        lambda t, r: _solve_tri(t, r, False, True), rtol=1e-4, atol=1e-5),
    Case("triangular_solve", lambda t, r: lax.linalg.triangular_solve(
        t, np.swapaxes(r, -1, -2), left_side=False, lower=True), (batch, bb),
        lambda t, r: np.swapaxes(_solve_tri(t, r, True, True), -1, -2), rtol=1e-4, atol=1e-5),
    Case("linear_solve", jnp.linalg.solve, (a, b), np.linalg.solve, rtol=1e-4, atol=1e-5),
    Case("linear_solve", jnp.linalg.solve, (batch, bb), np.linalg.solve, rtol=1e-4, atol=1e-5),
    Case("linear_solve", jnp.linalg.inv, (batch,), np.linalg.inv, rtol=1e-4, atol=1e-5),
    Case("logabsdet", lambda m: jnp.linalg.slogdet(m)[1], (batch,),
         lambda m: np.linalg.slogdet(m)[1], rtol=1e-5, atol=1e-5),
    Case("det_sign", lambda m: jnp.linalg.slogdet(m)[0], (g,),
         lambda m: np.linalg.slogdet(m)[0]),
    Case("logabsdet", jnp.linalg.det, (a,), np.linalg.det, rtol=1e-4),
]

tall = floats(2, 6, 4, seed=6)
sym = batch + np.swapaxes(batch, -1, -2)


def _signed(vectors):
    """Each column with its entry of largest magnitude positive (the primitives' signs)."""
    at = np.argmax(np.abs(vectors), axis=-2)[..., None, :]
    return vectors * np.where(np.take_along_axis(vectors, at, axis=-2) < 0, -1, 1)


CASES += [
    Case("eigh_vectors", lambda m: lax.linalg.eigh(m)[0], (sym,),
         lambda m: _signed(np.linalg.eigh(m)[1]), rtol=1e-4, atol=1e-4),
    Case("eigh_values", jnp.linalg.eigvalsh, (sym,), np.linalg.eigvalsh, rtol=1e-4, atol=1e-4),
    Case("svd_vectors", lambda m: jnp.swapaxes(jnp.linalg.svd(m, full_matrices=False)[2], -1, -2),
         (tall,),
         lambda m: _signed(np.swapaxes(np.linalg.svd(m)[2], -1, -2)), rtol=1e-4, atol=1e-4),
    Case("singular_values", jnp.linalg.svdvals, (tall,),
         lambda m: np.linalg.svd(m, compute_uv=False), rtol=1e-4, atol=1e-4),
    Case("householder_q", lambda m: jnp.linalg.qr(m)[0], (tall,), lambda m: np.linalg.qr(m)[0],
         rtol=1e-4, atol=1e-4),
    Case("householder_q", lambda m: jnp.linalg.qr(m, mode="complete")[0], (a,),
         lambda m: np.linalg.qr(m, mode="complete")[0], rtol=1e-4, atol=1e-4),
]

general = floats(2, 4, 4, seed=7) + np.diag(np.arange(4.0, dtype=np.float32))  # distinct


def _eig(m):
    return lax.linalg.eig(m, enable_eigvec_derivs=True)


def _left_numpy(m):
    """LAPACK's left eigenvectors from NumPy's right ones: columns of ``V^-H`` at unit norm
    with their largest component real."""
    vl = np.conj(np.swapaxes(np.linalg.inv(np.linalg.eig(m)[1]), -1, -2))
    vl = vl / np.linalg.norm(vl, axis=-2, keepdims=True)
    top = np.take_along_axis(vl, np.argmax(np.abs(vl), axis=-2)[..., None, :], axis=-2)
    return vl * np.conj(top) / np.abs(top)


CASES += [
    Case("eig_values", jnp.linalg.eigvals, (general,), lambda m: np.linalg.eigvals(m),
         rtol=1e-4, atol=1e-4),
    Case("eig_vectors", lambda m: _eig(m)[2], (general,), lambda m: np.linalg.eig(m)[1],
         rtol=1e-4, atol=1e-4),
    Case("eig_left_vectors", lambda m: _eig(m)[1], (general,), _left_numpy, rtol=1e-4, atol=1e-4),
    Case("eig_vectors_inverse", lax.linalg.nonsymmetric.eig_vectors_inverse_p, (general[0],),
         lambda m: np.linalg.inv(np.linalg.eig(m)[1]), rtol=1e-4, atol=1e-4),
]
