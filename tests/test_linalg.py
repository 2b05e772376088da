"""Linear algebra (transpiler/lax/linalg/, numpy/linalg.py, scipy/linalg.py): values
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
SYM = (A + np.swapaxes(A, -1, -2)) / 2
TALL = rng.normal(size=(2, 6, 4)).astype(np.float32)
RANK2 = TALL[..., :2] @ TALL[..., :2, :]  # 2 x (6 x 4) of rank 2
B6 = rng.normal(size=(6, 3)).astype(np.float32)


@pytest.fixture(autouse=True, params=[False, True], ids=["loops", "lapack"])
def _lapack_on_host(request, monkeypatch):
    """Every test with the factorizations compiled as loops (what lower() stages) and as
    LAPACK calls on the host (what a jit called in this process stages)."""
    monkeypatch.setattr(tp.config, "lapack_on_host", request.param)


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
    ("eigvalsh", lambda m, a: m.linalg.eigvalsh(a), SYM),
    ("eigvalsh upper", lambda m, a: m.linalg.eigvalsh(a, UPLO="U", symmetrize_input=False), A),
    ("svdvals", lambda m, a: m.linalg.svd(a, compute_uv=False), TALL),
    ("svdvals wide", lambda m, a: m.linalg.svd(np.swapaxes(a, -1, -2), compute_uv=False), TALL),
    ("svdvals rank 2", lambda m, a: m.linalg.svd(a, compute_uv=False), RANK2),
    ("qr", lambda m, a: tuple(m.linalg.qr(a)), TALL),
    ("qr complete", lambda m, a: tuple(m.linalg.qr(a, mode="complete")), TALL),
    ("qr r wide", lambda m, a: m.linalg.qr(np.swapaxes(a, -1, -2), mode="r"), TALL),
    ("pinv", lambda m, a: m.linalg.pinv(a), TALL),
    ("pinv rank 2", lambda m, a: m.linalg.pinv(a), RANK2),
    ("matrix_rank", lambda m, a: m.linalg.matrix_rank(a), RANK2),
    ("matrix_rank vector", lambda m, a: m.linalg.matrix_rank(a[0, 0]), TALL),
    ("cond", lambda m, a: m.linalg.cond(a), A),
    ("cond -2", lambda m, a: m.linalg.cond(a, -2), TALL),
    ("cond inf", lambda m, a: m.linalg.cond(a, np.inf), A),
    ("norm 2", lambda m, a: m.linalg.norm(a, 2, axis=(-2, -1)), A),
    ("norm -2", lambda m, a: m.linalg.norm(a[0], -2), TALL),
    ("norm nuc keepdims", lambda m, a: m.linalg.norm(a, "nuc", axis=(2, 1), keepdims=True), TALL),
    ("lstsq", lambda m, a: tuple(m.linalg.lstsq(a[0], B6)), TALL),
    ("lstsq vector rank 2", lambda m, a: tuple(m.linalg.lstsq(a[0], B6[:, 0])), RANK2),
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
    ("eigh eigvals_only upper", lambda s, a: s.eigh(a[0], lower=False, eigvals_only=True), A),
    ("svd s", lambda s, a: s.svd(a[0], compute_uv=False), A),
    ("qr economic", lambda s, a: s.qr(TALL[0], mode="economic"), A),
    ("qr full", lambda s, a: s.qr(TALL[0]), A),
    ("qr r", lambda s, a: s.qr(TALL[0], mode="r"), A),
    ("expm", lambda s, a: s.expm(a), A),
    ("expm scaled and squared", lambda s, a: s.expm(4 * a[0]), A),
    ("expm upper triangular", lambda s, a: s.expm(np.triu(a[0]), upper_triangular=True), A),
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


# --- eigh, svd, qr: vectors up to sign, derivatives, batching, degenerate input -------------

def _unsigned(vectors, reference):
    """`vectors` with each column's sign matched to `reference`'s (both orthonormal)."""
    signs = np.sign(np.sum(np.asarray(vectors) * np.asarray(reference), axis=-2, keepdims=True))
    return np.asarray(vectors) * signs


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "jit"])
def test_eigh_and_svd_vectors_match_jax_up_to_sign(compiled):
    run = tp.jit if compiled else (lambda f: f)
    w, v = run(jnp.linalg.eigh)(SYM)
    jw, jv = jjnp.linalg.eigh(SYM)
    _same(w, jw, "eigenvalues")
    _same(_unsigned(v, jv), jv, "eigenvectors", rtol=1e-3)
    _same(v @ (np.asarray(w)[..., :, None] * np.swapaxes(v, -1, -2)), SYM, "V diag(w) V^T")
    for shape in [(2, 6, 4), (2, 4, 6), (3, 3), (5, 7, 5)]:
        x = rng.normal(size=shape).astype(np.float32)
        for full in (False, True):
            u, s, vh = run(lambda m, full=full: jnp.linalg.svd(m, full_matrices=full))(x)
            ju, js, jvh = jjnp.linalg.svd(x, full_matrices=full)
            label = f"svd {shape} full_matrices={full}"
            _same(s, js, label + " s")
            assert np.shape(u) == np.shape(ju) and np.shape(vh) == np.shape(jvh), label
            k = min(shape[-2:])
            _same(_unsigned(np.asarray(u)[..., :k], np.asarray(ju)[..., :k]),
                  np.asarray(ju)[..., :k], label + " U", rtol=1e-3)
            for q in (np.asarray(u), np.swapaxes(np.asarray(vh), -1, -2)):
                eye = np.broadcast_to(np.eye(q.shape[-1], dtype=np.float32),
                                      q.shape[:-2] + (q.shape[-1],) * 2)
                _same(np.swapaxes(q, -1, -2) @ q, eye, label + " orthonormal", rtol=1e-5)
            _same(np.asarray(u)[..., :k] * np.asarray(s)[..., None, :] @ np.asarray(vh)[..., :k, :],
                  x, label + " U S Vh", rtol=1e-5)


def _spectral_losses(m):
    def eigvals(a):
        return m.sum(m.sin(m.linalg.eigvalsh(a)))

    def eigvecs(a):
        w, v = m.linalg.eigh(a)
        return m.sum(v[:, 1] ** 2 * C5) + m.sum(v[:, 3] ** 2 * w)

    def svals(a):
        return m.sum(m.linalg.svd(a, compute_uv=False) ** 1.5)

    def svd(a):
        u, s, vh = m.linalg.svd(a, full_matrices=False)
        return m.sum(u[:, 0] ** 2 * s[1]) + m.sum(vh[1] ** 2 * C4)

    def svd_wide(a):
        u, s, vh = m.linalg.svd(a.T, full_matrices=False)
        return m.sum(u[:, 1] ** 2) * s[0] + m.sum(vh[0] ** 2 * C6)

    def qr(a):
        q, r = m.linalg.qr(a)
        return m.sum(m.sin(q)) + m.sum(m.cos(r))

    def pinv(a):
        return m.sum(m.sin(m.linalg.pinv(a)))

    def norms(a):
        return m.linalg.norm(a, "nuc") + m.linalg.norm(a, 2) + m.linalg.cond(a)

    def lstsq(a):
        return m.sum(m.linalg.lstsq(a, B6[:, 0] + 1.0)[0] ** 2)

    return dict(eigvals=(eigvals, SYM[0]), eigvecs=(eigvecs, SYM[0]), svals=(svals, TALL[0]),
                svd=(svd, TALL[0]), svd_wide=(svd_wide, TALL[0]), qr=(qr, TALL[0]),
                qr_square=(qr, A[0]), pinv=(pinv, TALL[0]), norms=(norms, TALL[0]),
                lstsq=(lstsq, TALL[0]))


C4, C5, C6 = (rng.normal(size=n).astype(np.float32) for n in (4, 5, 6))
OURS, THEIRS = _spectral_losses(jnp), _spectral_losses(jjnp)


@pytest.mark.parametrize("name", sorted(OURS))
def test_spectral_gradients_match_jax(name):
    (f, x), (jf, _) = OURS[name], THEIRS[name]
    want = jax.grad(jf)(x)
    _same(tp.grad(f)(x), want, name + " grad", rtol=2e-4)
    _same(tp.jit(tp.grad(f))(x), want, name + " jit(grad)", rtol=2e-4)
    t = rng.normal(size=x.shape).astype(np.float32)
    _same(tp.jvp(f, (x,), (t,))[1], jax.jvp(jf, (x,), (t,))[1], name + " jvp", rtol=2e-4)


def test_spectral_second_derivatives_against_finite_differences(monkeypatch):
    monkeypatch.setattr(tp.config, "enable_x64", True)
    x0 = rng.normal(size=(4, 3))

    def f(v):
        m = jnp.reshape(v, (4, 3))
        # (jnp.linalg's results are NamedTuples: structures at any order, not opaque calls)
        u, s, vh = jnp.linalg.svd(m, full_matrices=False)
        q, r = jnp.linalg.qr(m)
        w = jnp.linalg.eigvalsh(m.T @ m + jnp.eye(3))
        sign, logdet = jnp.linalg.slogdet(m.T @ m)
        return (jnp.sum(s ** 3) + jnp.sum(u[0] ** 2 * s) + jnp.sum(jnp.sin(r)) + jnp.sum(w ** 2)
                + logdet + jnp.sum(lax.linalg.svd(m, full_matrices=False)[2] ** 4))

    x = x0.ravel()
    eps = 1e-6
    grad = tp.grad(f)
    numeric = np.array([(grad(x + eps * e) - grad(x - eps * e)) / (2 * eps) for e in np.eye(12)])
    np.testing.assert_allclose(tp.hessian(f)(x), numeric, rtol=1e-5, atol=1e-6)


def test_repeated_eigenvalues_and_zero_singular_values_differentiate_like_jax():
    """Only the vectors' derivatives divide by eigenvalue gaps: values stay finite."""
    eye = np.eye(4, dtype=np.float32)
    _same(tp.grad(lambda a: jnp.sum(jnp.linalg.eigvalsh(a) ** 2))(eye),
          jax.grad(lambda a: jjnp.sum(jjnp.linalg.eigvalsh(a) ** 2))(eye), "eigvalsh at I")
    rank2 = RANK2[0]
    ours = tp.grad(lambda a: jnp.linalg.norm(a, "nuc"))(rank2)
    theirs = jax.grad(lambda a: jjnp.linalg.norm(a, "nuc"))(rank2)
    assert np.isfinite(np.asarray(ours)).all()
    # The nuclear norm's gradient at a rank-deficient matrix is a subgradient (LAPACK's
    # vectors for the zero singular values are arbitrary): both agree on the range.
    u = np.linalg.svd(rank2)[0][:, :2]
    _same(u.T @ np.asarray(ours), u.T @ np.asarray(theirs), "nuc on the range", rtol=1e-4)


def test_spectral_batching_matches_a_loop():
    fns = [jnp.linalg.eigvalsh, lambda m: jnp.linalg.eigh(m)[1] ** 2,
           lambda m: jnp.linalg.svd(m[:, :4], compute_uv=False),
           lambda m: jnp.abs(jnp.linalg.svd(m, full_matrices=False)[0]),
           lambda m: jnp.linalg.qr(m)[1], jnp.linalg.pinv,
           lambda m: tp.grad(lambda x: jnp.sum(jnp.linalg.eigvalsh(x) ** 3))(m)]
    for fn in fns:
        want = np.stack([np.asarray(fn(m)) for m in SYM])
        np.testing.assert_allclose(tp.vmap(fn)(SYM), want, rtol=2e-4, atol=2e-4)
        np.testing.assert_allclose(tp.jit(tp.vmap(fn))(SYM), want, rtol=2e-4, atol=2e-4)


def test_larger_odd_matrices_and_half_precision_under_jit():
    g = rng.normal(size=(33, 33)).astype(np.float32)
    sym = (g + g.T) / 2
    w, v = tp.jit(jnp.linalg.eigh)(sym)
    np.testing.assert_allclose(w, np.linalg.eigvalsh(sym.astype(np.float64)), rtol=1e-4,
                               atol=1e-4)
    np.testing.assert_allclose(np.asarray(v).T @ np.asarray(v), np.eye(33), atol=1e-5)
    s = tp.jit(jnp.linalg.svdvals)(g[:, :20])
    np.testing.assert_allclose(s, np.linalg.svd(g[:, :20].astype(np.float64), compute_uv=False),
                               rtol=1e-4, atol=1e-4)
    half = sym[:6, :6].astype(np.float16)
    for got in (jnp.linalg.eigvalsh(half), tp.jit(jnp.linalg.eigvalsh)(half)):
        assert np.asarray(got).dtype == np.float16
        np.testing.assert_allclose(np.asarray(got, np.float32),
                                   np.linalg.eigvalsh(half.astype(np.float32)), atol=2e-2)


def test_spectral_bad_input_gets_clear_errors():
    with pytest.raises(ValueError, match="eigh: expected a square matrix") as err:
        jnp.linalg.eigh(np.ones((3, 4), np.float32))
    assert "test_linalg.py" in str(err.value)
    with pytest.raises(NotImplementedError, match="mode='raw'"):
        jnp.linalg.qr(A[0], mode="raw")
    with pytest.raises(ValueError, match="unsupported mode"):
        jnp.linalg.qr(A[0], mode="full")
    with pytest.raises(ValueError, match="UPLO"):
        jnp.linalg.eigh(A[0], UPLO="X")
    with pytest.raises(NotImplementedError, match="derivative of Q"):
        tp.grad(lambda a: jnp.sum(jnp.linalg.qr(a)[0]))(np.swapaxes(TALL[0], -1, -2))
    with pytest.raises(TypeError, match="numpy_resid=True"):
        tp.jit(lambda a: jnp.linalg.lstsq(a, B6, numpy_resid=True)[1])(TALL[0])
    np.testing.assert_allclose(jnp.linalg.svd(np.arange(6).reshape(3, 2), compute_uv=False),
                               np.linalg.svd(np.arange(6.0).reshape(3, 2), compute_uv=False),
                               rtol=1e-5)


def _expm_loss(a):
    return jnp.sum(jnp.sin(tsl.expm(a)))


def test_expm_gradients_and_edge_values():
    want = jax.grad(lambda a: jjnp.sum(jjnp.sin(jsl.expm(a))))(A[0])
    _same(tp.grad(_expm_loss)(A[0]), want, "grad expm", rtol=1e-4)
    _same(tp.jit(tp.grad(_expm_loss))(A[0]), want, "jit(grad expm)", rtol=1e-4)
    _same(tsl.expm(np.zeros((3, 3), np.float32)), np.eye(3, dtype=np.float32), "expm(0)")
    huge = np.full((2, 2), 1e30, np.float32)
    assert np.isnan(np.asarray(tsl.expm(huge))).all()  # more than max_squarings: JAX's NaN
    with pytest.raises(TypeError, match="not supported"):
        tsl.expm(np.eye(2, dtype=np.float16))


def test_factorization_primitives_take_half_types_under_jit():
    """Bound directly (the public functions widen first), a primitive's eager rule runs
    half types in float32; eigh's and svd's host call returns two results, both cast back
    (once an AttributeError on the tuple)."""
    from transpiler.lax.linalg import spectral
    a = (SYM[0] + 3 * np.eye(5, dtype=np.float32)).astype(np.float16)
    for prim in (spectral.eigh_values_p, spectral.eigh_vectors_p,
                 spectral.singular_values_p, spectral.svd_vectors_p):
        got, want = np.asarray(tp.jit(prim)(a)), np.asarray(prim(a))
        assert got.dtype == want.dtype == np.float16, prim
        np.testing.assert_allclose(np.abs(got.astype(np.float32)),
                                   np.abs(want.astype(np.float32)), atol=1e-2, err_msg=str(prim))
