"""The series and recurrence functions of `transpiler.scipy.special` (bernoulli, comb,
boxcox, boxcox1p, bessel_jn, sph_harm_y, hyp1f1, hyp2f1): values against SciPy in float32
and float64, eagerly and under jit, against JAX where installed (its conventions are the
bar); derivatives against float64 central differences; vmap against a loop."""

from __future__ import annotations

import numpy as np
import pytest

import transpiler as tp
import transpiler.numpy as jnp
from transpiler.scipy import special as sp
from tests.oracles import finite_differences

rng = np.random.default_rng(3)
POS = rng.uniform(0.2, 6.0, 12)
LAM = np.concatenate([rng.uniform(-2, 2, 11), [0.0]])
TOL = {np.float32: 2e-5, np.float64: 1e-11}


@pytest.fixture(params=[np.float32, np.float64], ids=["f32", "f64"])
def dtype(request, monkeypatch):
    if request.param is np.float64:
        monkeypatch.setattr(tp.config, "enable_x64", True)
    return request.param


def _close(ours, want, dtype, scale=1.0):
    np.testing.assert_allclose(np.asarray(ours), want, rtol=TOL[dtype] * scale,
                               atol=TOL[dtype] * scale)


# --- boxcox, boxcox1p, comb, bernoulli --------------------------------------------------------

@pytest.mark.parametrize("name", ["boxcox", "boxcox1p"])
def test_boxcox_values(name, dtype):
    ss = pytest.importorskip("scipy.special")
    x, lam = POS.astype(dtype), LAM.astype(dtype)
    want = getattr(ss, name)(x.astype(np.float64), lam.astype(np.float64))
    f = getattr(sp, name)
    _close(f(x, lam), want, dtype, 10)
    _close(tp.jit(f)(x, lam), want, dtype, 10)
    assert np.asarray(f(x, lam)).dtype == dtype
    assert np.isnan(np.asarray(sp.boxcox(dtype(-1.0), dtype(0.5))))


def test_boxcox_grads(monkeypatch):
    monkeypatch.setattr(tp.config, "enable_x64", True)
    for f in (sp.boxcox, sp.boxcox1p):
        for x, lam in [(2.0, 0.5), (0.7, -1.3), (3.0, 1e-3)]:
            g = tp.grad(f, (0, 1))(x, lam)
            want_x = finite_differences(lambda v: f(v, lam), x)
            want_l = finite_differences(lambda v: f(x, v), lam)
            np.testing.assert_allclose([float(g[0]), float(g[1])], [want_x, want_l], rtol=1e-6)
    assert float(tp.grad(sp.boxcox, 1)(2.0, 0.0)) == 0.0  # JAX's branch at lambda == 0


def test_boxcox_complex_and_vmap():
    jax = pytest.importorskip("jax")
    jsp = jax.scipy.special
    np.testing.assert_allclose(complex(sp.boxcox(1 + 2j, 0.5)), complex(jsp.boxcox(1 + 2j, 0.5)),
                               rtol=1e-5)
    x, lam = POS.astype(np.float32), LAM.astype(np.float32)
    batched = tp.vmap(sp.boxcox1p)(x, lam)
    np.testing.assert_allclose(batched, [float(sp.boxcox1p(a, b)) for a, b in zip(x, lam)],
                               rtol=1e-6)


def test_comb(dtype):
    ss = pytest.importorskip("scipy.special")
    N = np.array([5, 10, 7.5, 3, 0, -1, 4, 20], dtype)
    k = np.array([2, 3, 2.5, 5, 0, 2, -1, 7], dtype)
    want = ss.comb(N.astype(np.float64), k.astype(np.float64))
    _close(sp.comb(N, k), want, dtype, 50)
    _close(tp.jit(sp.comb)(N, k), want, dtype, 50)
    rep = ss.comb(N[:5].astype(np.float64), k[:5].astype(np.float64), repetition=True)
    _close(sp.comb(N[:5], k[:5], repetition=True), rep, dtype, 50)
    if dtype is np.float64:  # (float64 central differences need float64 evaluations)
        g = tp.grad(sp.comb, (0, 1))(7.5, 2.5)
        np.testing.assert_allclose([float(g[0]), float(g[1])],
                                   [finite_differences(lambda v: sp.comb(v, 2.5), 7.5),
                                    finite_differences(lambda v: sp.comb(7.5, v), 2.5)],
                                   rtol=1e-6)
    with pytest.raises(TypeError):
        sp.comb(5 + 1j, 2)


def test_bernoulli(dtype):
    ss = pytest.importorskip("scipy.special")
    for n in (0, 1, 2, 3, 6, 20):
        ours = np.asarray(sp.bernoulli(n))
        assert ours.dtype == dtype and ours.shape == (n + 1,)
        np.testing.assert_allclose(ours, ss.bernoulli(n), rtol=TOL[dtype] * 10, atol=1e-7)
    with pytest.raises(ValueError):
        sp.bernoulli(-1)
    with pytest.raises(TypeError):
        sp.bernoulli(2.5)


def test_bernoulli_matches_jax():
    jax = pytest.importorskip("jax")
    np.testing.assert_allclose(sp.bernoulli(30), jax.scipy.special.bernoulli(30), rtol=1e-5)


# --- bessel_jn --------------------------------------------------------------------------------

Z = np.array([5.0, 7.5, 12.0, 17.0, 24.0, 3.5])


def test_bessel_jn_values(dtype):
    ss = pytest.importorskip("scipy.special")
    z = Z.astype(dtype)
    want = np.stack([ss.jv(v, Z) for v in range(4)])
    ours = sp.bessel_jn(z, v=3)
    assert np.asarray(ours).dtype == dtype and ours.shape == (4, 6)
    _close(ours, want, dtype, 20)
    _close(tp.jit(lambda z: sp.bessel_jn(z, v=3))(z), want, dtype, 20)
    assert sp.bessel_jn(2.0, v=0).shape == (1,)


def test_bessel_jn_matches_jax_outside_its_range():
    jax = pytest.importorskip("jax")
    z = np.array([0.0, 1.0, 2.5, -3.0, 5.0, 30.0, 60.0], np.float32)
    np.testing.assert_allclose(sp.bessel_jn(z, v=2), jax.scipy.special.bessel_jn(z, v=2),
                               rtol=1e-5, atol=1e-6)  # NaN where JAX's recurrence overflows


def test_bessel_jn_grad_vmap_and_errors(monkeypatch):
    monkeypatch.setattr(tp.config, "enable_x64", True)
    f = lambda z: sp.bessel_jn(z, v=2)[2]  # noqa: E731
    for z in (5.0, 11.0):
        want = finite_differences(f, z)
        np.testing.assert_allclose(float(tp.grad(f)(z)), want, rtol=1e-6)
        np.testing.assert_allclose(float(tp.jit(tp.grad(f))(z)), want, rtol=1e-6)
    batched = tp.vmap(lambda z: sp.bessel_jn(z, v=2))(Z)
    np.testing.assert_allclose(batched, np.stack([sp.bessel_jn(z, v=2) for z in Z]), rtol=1e-12)
    with pytest.raises(ValueError):
        sp.bessel_jn(1j, v=1)
    with pytest.raises(TypeError):
        sp.bessel_jn(1.0, v=1.5)


# --- sph_harm_y -------------------------------------------------------------------------------

N_ = np.array([0, 1, 2, 3, 4, 5, 3, 2])
M_ = np.array([0, -1, 2, -3, 1, -4, 0, -1])
THETA = np.array([0.3, 1.0, 2.0, 0.7, 2.9, 1.5, 0.01, 3.1])
PHI = np.array([0.5, 2.0, 4.0, 6.0, 1.0, 3.3, 0.2, 5.0])


def test_sph_harm_y_values(dtype):
    ss = pytest.importorskip("scipy.special")
    want = ss.sph_harm_y(N_, M_, THETA, PHI)
    theta, phi = THETA.astype(dtype), PHI.astype(dtype)
    ours = sp.sph_harm_y(N_, M_, theta, phi)
    assert np.asarray(ours).dtype == np.result_type(dtype, np.complex64)
    _close(ours, want, dtype, 20)
    jitted = tp.jit(lambda n, m, t, p: sp.sph_harm_y(n, m, t, p, n_max=5))
    _close(jitted(N_, M_, theta, phi), want, dtype, 20)


def test_sph_harm_y_matches_jax():
    jax = pytest.importorskip("jax")
    jsp = jax.scipy.special
    n, m = np.array([5, -1, 2, 2]), np.array([6, 0, 3, -5])  # out of range: JAX's clipping
    t = np.array([0.3, 0.2, 0.1, 0.4], np.float32)
    np.testing.assert_allclose(sp.sph_harm_y(n, m, t, 0.5, n_max=3),
                               jsp.sph_harm_y(n, m, t, 0.5, n_max=3), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(sp.sph_harm_y(np.array([2]), np.array([1]), 0.3, 0.5),
                               jsp.sph_harm_y(np.array([2]), np.array([1]), 0.3, 0.5), rtol=1e-5)


def test_sph_harm_y_grad_vmap_and_errors(monkeypatch):
    monkeypatch.setattr(tp.config, "enable_x64", True)
    n, m = np.array([3]), np.array([-2])
    for part in (jnp.real, jnp.imag):
        f = lambda t, p: part(sp.sph_harm_y(n, m, t, p, n_max=3)[0])  # noqa: E731
        g = tp.grad(f, (0, 1))(np.array([0.8]), np.array([1.3]))
        np.testing.assert_allclose(
            [float(g[0][0]), float(g[1][0])],
            [finite_differences(lambda v: f(v, np.array([1.3])), np.array([0.8]))[0],
             finite_differences(lambda v: f(np.array([0.8]), v), np.array([1.3]))[0]],
            rtol=1e-6)
    batched = tp.vmap(lambda t: sp.sph_harm_y(N_, M_, t, PHI, n_max=5))(np.stack([THETA,
                                                                               THETA / 2]))
    np.testing.assert_allclose(batched, np.stack([sp.sph_harm_y(N_, M_, THETA, PHI),
                                                  sp.sph_harm_y(N_, M_, THETA / 2, PHI)]),
                               rtol=1e-12)
    with pytest.raises(TypeError):  # n_max from a traced n
        tp.jit(lambda n: sp.sph_harm_y(n, n, np.array([0.3]), 0.5))(np.array([1]))
    with pytest.raises(NotImplementedError):
        sp.sph_harm_y(N_, M_, THETA, PHI, diff_n=1)


# --- hyp1f1, hyp2f1 ---------------------------------------------------------------------------

H1 = (np.array([1.0, 0.5, 2.5, 3.0, 0.7, 1.2]), np.array([2.0, 1.5, 3.5, 1.1, 4.0, 2.2]),
      np.array([3.0, -2.0, 0.5, 8.0, 20.0, -0.3]))
H2 = (np.array([1.0, 0.5, 1.5, -2.0, 0.3, 1.0, 0.2]),
      np.array([2.0, 1.5, 2.0, 2.0, 0.7, 1.5, 0.4]),
      np.array([3.5, 2.5, 3.5, 3.0, 1.9, 4.0, 1.1]),
      np.array([0.5, -0.6, 0.95, 0.5, 0.3, 0.8, 0.85]))


def test_hyp1f1_values(dtype):
    ss = pytest.importorskip("scipy.special")
    args = [a.astype(dtype) for a in H1]
    want = ss.hyp1f1(*H1)
    _close(sp.hyp1f1(*args), want, dtype, 50)
    _close(tp.jit(sp.hyp1f1)(*args), want, dtype, 50)
    assert np.asarray(sp.hyp1f1(*args)).dtype == dtype


def test_hyp2f1_values(dtype):
    ss = pytest.importorskip("scipy.special")
    args = [a.astype(dtype) for a in H2]
    want = ss.hyp2f1(*H2)
    _close(sp.hyp2f1(*args), want, dtype, 100)
    _close(tp.jit(sp.hyp2f1)(*args), want, dtype, 100)


def test_hypergeometric_match_jax_conventions():
    jax = pytest.importorskip("jax")
    jsp = jax.scipy.special
    cases1 = [(0.0, 0.0, 1.0), (1.0, 0.0, 1.0), (1.0, 2.0, -150.0), (1.0, 2.5, 120.0),
              (2.0, 2.0, 1.5), (1.0, 2.0, 101.0)]
    for a in cases1:
        np.testing.assert_allclose(float(sp.hyp1f1(*a)), float(jsp.hyp1f1(*a)), rtol=1e-5)
    cases2 = [(1.0, 2.0, 3.0, 1.5), (1.0, 2.0, 3.0, 1.0), (-3.0, 2.0, -5.0, 0.5),
              (1.0, 2.0, 4.0, 0.95), (1.0, 2.0, 2.5, 0.95), (1.0, 2.0, 3.0, 0.95),
              (2.0, 1.0, 2.0, 0.4), (-2.0, 2.0, 3.0, 0.5), (1.5, 2.0, 3.0, 0.0)]
    for a in cases2:
        np.testing.assert_allclose(float(sp.hyp2f1(*a)), float(jsp.hyp2f1(*a)), rtol=1e-5)
    with pytest.raises(ValueError):
        sp.hyp1f1(1.0, 2.0, 1j)


def test_hypergeometric_grads(monkeypatch):
    monkeypatch.setattr(tp.config, "enable_x64", True)
    for f, point in ((sp.hyp1f1, (1.0, 2.0, 3.0)), (sp.hyp1f1, (0.5, 1.5, -2.0)),
                     (sp.hyp2f1, (1.0, 2.0, 3.5, 0.5)), (sp.hyp2f1, (0.5, 1.5, 2.5, -0.6))):
        argnums = tuple(range(len(point)))
        grads = tp.grad(f, argnums)(*point)
        for i in argnums:
            def along(v, i=i):
                return f(*point[:i], v, *point[i + 1:])
            np.testing.assert_allclose(float(grads[i]), finite_differences(along, point[i]),
                                       rtol=1e-6, atol=1e-9)


def test_hypergeometric_grads_under_jit(monkeypatch):
    monkeypatch.setattr(tp.config, "enable_x64", True)
    for f, point in ((sp.hyp1f1, (1.0, 2.0, 3.0)), (sp.hyp2f1, (0.5, 1.5, 2.5, 0.3)),
                     (sp.hyp2f1, (1.0, 2.0, 3.0, 0.95)),  # the digamma transformation
                     (sp.hyp2f1, (-2.0, 2.0, 3.0, 0.5))):  # the terminating polynomial
        argnums = tuple(range(len(point)))
        jitted = tp.jit(tp.grad(f, argnums))(*point)
        eager = tp.grad(f, argnums)(*point)
        np.testing.assert_allclose([float(g) for g in jitted], [float(g) for g in eager],
                                   rtol=1e-10)  # (d/da is NaN at a = -2, as in JAX)


def _second(f, point, i, j):
    """d^2 f / (d point[i] d point[j]) by reverse over reverse mode, and by float64 central
    differences of the first derivative."""
    def first(v):
        return tp.grad(f, i)(*point[:j], v, *point[j + 1:])
    return float(tp.grad(tp.grad(f, i), j)(*point)), float(finite_differences(first, point[j]))


@pytest.mark.parametrize("point, pairs", [
    ((1.0, 2.0, 3.0, 0.95), [(0, 0), (2, 3)]),  # x > 0.9, c - a - b = 0
    ((1.5, 2.0, 1.5, 0.93), [(1, 3), (3, 3)]),  # x > 0.9, c - a - b = -2 (the finite sum)
    ((-2.0, 2.0, 3.0, 0.5), [(3, 3)]),  # the terminating polynomial in a
    ((0.5, -3.0, 2.5, 0.4), [(3, 3)]),  # ... in b
])
def test_hyp2f1_second_derivatives(monkeypatch, point, pairs):
    """The rules call hyp2f1 itself (never its implementation), so every order of
    derivative goes through them: the branches whose loop length depends on the arguments
    are evaluated, never differentiated."""
    monkeypatch.setattr(tp.config, "enable_x64", True)
    for i, j in pairs:
        ours, want = _second(sp.hyp2f1, point, i, j)
        np.testing.assert_allclose(ours, want, rtol=1e-6, atol=1e-8, err_msg=f"{(i, j)}")


def test_hyp2f1_second_derivatives_at_a_terminating_parameter(monkeypatch):
    """At ``a = -2`` the parameter series of d/da is NaN (JAX's value). Forward over reverse
    (`hessian`) gives JAX's Hessian: NaN in the rows of a and x, right elsewhere. Reverse over
    reverse multiplies that NaN series by a zero cotangent (dense zeros): NaN, never a wrong
    number."""
    monkeypatch.setattr(tp.config, "enable_x64", True)
    point = (-2.0, 2.0, 3.0, 0.5)
    hessian = np.array(tp.hessian(sp.hyp2f1, (0, 1, 2, 3))(*point), dtype=np.float64)
    assert np.isnan(hessian[0]).all() and np.isnan(hessian[3]).all()
    for i in (1, 2):
        for j in (1, 2, 3):
            def first(v, i=i, j=j):
                return tp.grad(sp.hyp2f1, i)(*point[:j], v, *point[j + 1:])
            np.testing.assert_allclose(hessian[i, j], finite_differences(first, point[j]),
                                       rtol=1e-6, atol=1e-8, err_msg=f"{(i, j)}")
    assert np.isnan(float(tp.grad(tp.grad(sp.hyp2f1, 1), 3)(*point)))
    jitted = tp.jit(tp.grad(tp.grad(sp.hyp2f1, 3), 3))(*point)
    np.testing.assert_allclose(float(jitted), _second(sp.hyp2f1, point, 3, 3)[1], rtol=1e-6)


def test_hyp1f1_second_derivatives(monkeypatch):
    monkeypatch.setattr(tp.config, "enable_x64", True)
    for point in ((1.0, 2.0, 3.0), (0.5, 1.5, -2.0)):
        for i, j in [(2, 2), (0, 2), (1, 1)]:
            ours, want = _second(sp.hyp1f1, point, i, j)
            np.testing.assert_allclose(ours, want, rtol=1e-6, atol=1e-8, err_msg=f"{(i, j)}")


def test_hypergeometric_vmap(dtype):
    for f, args in ((sp.hyp1f1, H1), (sp.hyp2f1, H2)):
        args = [a.astype(dtype) for a in args]
        rows = [[a[k] for a in args] for k in range(len(args[0]))]
        looped = np.array([float(f(*row)) for row in rows])
        _close(tp.vmap(f)(*args), looped, dtype, 10)
        _close(tp.jit(tp.vmap(f))(*args), looped, dtype, 100)
        if dtype is np.float32:
            continue
        argnums = tuple(range(len(args)))
        grads = tp.vmap(tp.grad(f, argnums))(*args)
        want = np.array([[float(g) for g in tp.grad(f, argnums)(*row)] for row in rows])
        np.testing.assert_allclose(np.stack([np.asarray(g) for g in grads], 1), want,
                                   rtol=TOL[dtype] * 10)  # (NaN where a = -2, as JAX's)
