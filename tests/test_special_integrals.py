"""The exponential integrals (exp1, expi, expn, sici, spence) and the error function's
relatives (dawsn, erfcx, fresnel, owens_t, wofz) of `transpiler.scipy.special`: values
against SciPy in float32 and float64, eager and under jit, against JAX when installed;
derivatives against float64 finite differences of SciPy's functions; vmap against a loop;
the edge values and the errors JAX gives."""

from __future__ import annotations

import numpy as np
import pytest

import transpiler as tp
import transpiler.numpy as jnp
from tests.oracles import finite_differences
from transpiler.scipy import special as sp

rng = np.random.default_rng(0)
REAL = np.concatenate([rng.uniform(-9, 9, 24), [0.5, 1.0, -1.0, 2.0, 1e-3, -4.5, 6.3]])
POS = np.concatenate([rng.uniform(0.02, 40, 24), [1e-3, 0.5, 1.0, 1.5, 2.0, 4.0, 60.0]])
ORDERS = np.array([0, 1, 2, 3, 5, 8, 40] * 4 + [1, 2, 6000])
H = rng.uniform(-4, 4, 31)
A = np.concatenate([rng.uniform(-3, 3, 28), [1.0, -1.0, 0.0]])
Z = np.concatenate([rng.uniform(-5, 5, 24) + 1j * rng.uniform(-1.5, 5, 24),
                    [0.5 + 0j, 2j, -1 - 0.2j, 3 - 1j]])

# name -> (our function, SciPy's by name, float64 arguments, float32 rtol, float64 rtol, atol)
FUNCTIONS = {
    "exp1": (sp.exp1, "exp1", (POS,), 2e-6, 1e-13, 0.0),
    "expi": (sp.expi, "expi", (np.concatenate([REAL * 4, [-60.0, 70.0]]),), 2e-6, 1e-13, 0.0),
    "expn": (sp.expn, "expn", (ORDERS, POS), 2e-6, 1e-13, 0.0),
    "sici": (sp.sici, "sici", (REAL * 3,), 2e-6, 1e-13, 1e-6),
    "spence": (sp.spence, "spence", (np.abs(REAL) * 2,), 2e-6, 1e-13, 1e-7),
    "dawsn": (sp.dawsn, "dawsn", (REAL * 2,), 2e-6, 1e-13, 0.0),
    "erfcx": (sp.erfcx, "erfcx", (np.concatenate([REAL / 2 + 3, [-3.0, 26.0, 1e4]]),), 2e-6,
              1e-13, 0.0),
    "fresnel": (sp.fresnel, "fresnel", (np.concatenate([REAL, [40.0, -3e4]]),), 2e-6, 1e-13,
                1e-7),
    "owens_t": (sp.owens_t, "owens_t", (H, A), 2e-6, 1e-12, 1e-7),
    "wofz": (sp.wofz, "wofz", (Z,), 2e-6, 1e-12, 0.0),
}
REAL_FUNCTIONS = [name for name in FUNCTIONS if name != "wofz"]


@pytest.fixture(params=[False, True], ids=["float32", "float64"])
def x64(request, monkeypatch):
    monkeypatch.setattr(tp.config, "enable_x64", request.param)
    return request.param


def _arguments(name: str, x64: bool) -> tuple:
    args = FUNCTIONS[name][2]
    if name == "expn":  # integer orders, as SciPy wants them
        return (args[0].astype(np.int32), args[1].astype(np.float64 if x64 else np.float32))
    if name == "wofz":
        return (args[0].astype(np.complex128 if x64 else np.complex64),)
    return tuple(a.astype(np.float64 if x64 else np.float32) for a in args)


def _outputs(value) -> list:
    return [np.asarray(v) for v in (value if isinstance(value, tuple) else (value,))]


def _check(name: str, ours, expected, x64: bool) -> None:
    rtol, atol = FUNCTIONS[name][4 if x64 else 3], FUNCTIONS[name][5]
    for got, want in zip(_outputs(ours), _outputs(expected)):
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=name)


@pytest.mark.parametrize("name", list(FUNCTIONS))
def test_values_against_scipy(name, x64):
    ss = pytest.importorskip("scipy.special")
    fn, scipy_name, _, *_ = FUNCTIONS[name]
    args = _arguments(name, x64)
    # SciPy in float64 on the same (rounded) arguments
    expected = getattr(ss, scipy_name)(*[a.astype(np.complex128 if name == "wofz" else
                                                   np.float64) for a in args])
    dtype = (np.complex128 if x64 else np.complex64) if name == "wofz" else (
        np.float64 if x64 else np.float32)
    for ours in (fn(*args), tp.jit(fn)(*args)):
        for out in _outputs(ours):
            assert out.dtype == dtype, (name, out.dtype)
        _check(name, ours, expected, x64)


@pytest.mark.parametrize("name", list(FUNCTIONS))
def test_values_against_jax(name, x64):
    pytest.importorskip("jax")
    import jax
    import jax.scipy.special as jss
    fn = FUNCTIONS[name][0]
    args = _arguments(name, x64)
    previous = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", x64)
    try:
        want = _outputs(getattr(jss, name)(*args))
    finally:
        jax.config.update("jax_enable_x64", previous)
    got = _outputs(fn(*args))
    for g, w in zip(got, want):
        assert g.dtype == w.dtype, (name, g.dtype, w.dtype)
    if name == "erfcx" and not x64:  # JAX's float32 erfcx loses its accuracy near 9.4
        return
    _check(name, tuple(got), tuple(want), x64)


@pytest.mark.parametrize("name", list(FUNCTIONS))
def test_dtypes_of_integer_and_scalar_arguments(name):
    pytest.importorskip("jax")
    import jax.scipy.special as jss
    if name == "spence":  # float32/float64 only (a TypeError otherwise, below)
        return
    args = (2, 1) if name in ("expn", "owens_t") else (1,)
    for got, want in zip(_outputs(getattr(sp, name)(*args)),
                         _outputs(getattr(jss, name)(*args))):
        assert got.dtype == want.dtype, (name, got.dtype, want.dtype)


# derivative points away from the branch cuts and the points where a derivative is singular
GRAD_POINTS = {
    "exp1": (np.array([0.3, 1.0, 1.7, 5.0, 25.0]),),
    "expi": (np.array([-6.0, -0.4, 0.3, 1.9, 3.0, 12.0, 40.0]),),
    "expn": (np.array([0, 1, 2, 3, 7]), np.array([0.4, 2.5, 0.9, 1.3, 6.0])),
    "sici": (np.array([-5.0, -0.3, 0.2, 3.9, 4.1, 9.0, 30.0]),),
    "spence": (np.array([0.1, 0.7, 1.2, 1.9, 3.0, 12.0]),),
    "dawsn": (np.array([-7.0, -2.0, 0.3, 3.0, 5.0]),),
    "erfcx": (np.array([-2.0, -0.3, 0.5, 4.0, 12.0]),),
    "fresnel": (np.array([-2.0, 0.4, 1.5, 1.7, 3.0]),),
    "owens_t": (np.array([-1.2, 0.3, 0.8, 2.0, 0.0]), np.array([0.5, -2.0, 1.0, 3.0, 0.7])),
}


@pytest.mark.parametrize("name", REAL_FUNCTIONS)
def test_gradients_against_finite_differences(name, monkeypatch):
    ss = pytest.importorskip("scipy.special")
    monkeypatch.setattr(tp.config, "enable_x64", True)
    fn, scipy_name = FUNCTIONS[name][:2]
    points = GRAD_POINTS[name]
    outputs = len(_outputs(getattr(ss, scipy_name)(*points)))
    for k in range(outputs):
        def ours(*args, k=k):
            return jnp.sum(_outputs_traced(fn(*args))[k])

        def theirs(*args, k=k):
            value = getattr(ss, scipy_name)(*args)
            return np.sum(value[k] if isinstance(value, tuple) else value)

        differentiable = [i for i in range(len(points)) if not (name == "expn" and i == 0)]
        grads = tp.grad(ours, argnums=tuple(differentiable))(*points)
        for i, g in zip(differentiable, grads):
            expected = [finite_differences(
                lambda v, i=i, e=e: theirs(*[p[e] if j != i else v for j, p in enumerate(points)]),
                points[i][e], eps=1e-6 * max(1.0, abs(points[i][e])))
                for e in range(len(points[i]))]
            np.testing.assert_allclose(np.asarray(g), expected, rtol=1e-6, atol=1e-8,
                                       err_msg=f"{name} output {k} argument {i}")


def _outputs_traced(value) -> tuple:
    return value if isinstance(value, tuple) else (value,)


def test_gradients_under_jit_and_second_derivatives(monkeypatch):
    ss = pytest.importorskip("scipy.special")
    monkeypatch.setattr(tp.config, "enable_x64", True)
    x = np.array([0.4, 1.5, 3.0])
    np.testing.assert_allclose(tp.jit(tp.grad(lambda v: jnp.sum(sp.expn(2, v))))(x),
                               -ss.expn(1, x), rtol=1e-12)
    np.testing.assert_allclose(tp.jit(tp.vmap(tp.grad(sp.expi)))(x), np.exp(x) / x,
                               rtol=1e-12)
    # d2/dx2 erfcx = 2 erfcx + 2x erfcx'
    second = tp.grad(tp.grad(sp.erfcx))(0.7)
    first = 2 * 0.7 * ss.erfcx(0.7) - 2 / np.sqrt(np.pi)
    np.testing.assert_allclose(second, 2 * ss.erfcx(0.7) + 2 * 0.7 * first, rtol=1e-12)
    # no derivative in expn's order (JAX's nondiff argument): zero, as JAX gives
    assert float(tp.grad(lambda n: sp.expn(n, 1.5))(2.0)) == 0.0


def test_wofz_derivative(monkeypatch):
    ss = pytest.importorskip("scipy.special")
    monkeypatch.setattr(tp.config, "enable_x64", True)
    z = np.array([0.7 + 0.4j, -1.2 - 0.3j, 2.0 + 1.5j])
    _, tangent = tp.jvp(sp.wofz, (z,), (np.ones_like(z),))
    np.testing.assert_allclose(tangent, -2 * z * ss.wofz(z) + 2j / np.sqrt(np.pi), rtol=1e-12)
    # grad of the real part: JAX's convention gives w'(z) itself for this holomorphic w
    g = tp.grad(lambda v: jnp.real(sp.wofz(v)))(z[0])
    np.testing.assert_allclose(g, -2 * z[0] * ss.wofz(z[0]) + 2j / np.sqrt(np.pi), rtol=1e-12)


@pytest.mark.parametrize("name", list(FUNCTIONS))
def test_vmap_against_a_loop(name, x64):
    fn = FUNCTIONS[name][0]
    args = tuple(a[:6] for a in _arguments(name, x64))
    batched = _outputs(tp.vmap(fn)(*args))
    for i in range(6):
        single = _outputs(fn(*[a[i] for a in args]))
        for b, s in zip(batched, single):
            np.testing.assert_allclose(b[i], s, rtol=1e-6 if not x64 else 1e-14, atol=0,
                                       err_msg=name)


EDGES = np.array([-np.inf, -2.0, -0.0, 0.0, 1.0, np.inf, np.nan])


@pytest.mark.parametrize("name", ["exp1", "expi", "sici", "spence", "dawsn", "erfcx",
                                  "fresnel"])
def test_edge_values_are_scipys(name, monkeypatch):
    ss = pytest.importorskip("scipy.special")
    monkeypatch.setattr(tp.config, "enable_x64", True)
    fn = FUNCTIONS[name][0]
    expected = _outputs(getattr(ss, name)(EDGES))
    for ours in (fn(EDGES), tp.jit(fn)(EDGES)):
        for got, want in zip(_outputs(ours), expected):
            np.testing.assert_allclose(got, want, rtol=1e-13, err_msg=name)


def test_expn_edges(monkeypatch):
    ss = pytest.importorskip("scipy.special")
    monkeypatch.setattr(tp.config, "enable_x64", True)
    n = np.array([-1, 0, 1, 2, 3, 0, 1, 2, 5, 2, 1])
    x = np.array([1.0, 0.0, 0.0, 0.0, 0.0, np.inf, np.inf, -1.0, np.nan, 700.0, 0.5])
    np.testing.assert_allclose(sp.expn(n, x), ss.expn(n, x), rtol=1e-14)
    # JAX's: NaN for a fractional order below x = 1 (its series), the continued fraction above
    assert np.isnan(float(sp.expn(2.5, 0.5)))
    assert np.isfinite(float(sp.expn(2.5, 2.0)))


def test_owens_t_and_wofz_edges(monkeypatch):
    ss = pytest.importorskip("scipy.special")
    monkeypatch.setattr(tp.config, "enable_x64", True)
    h = np.array([0.0, 1.0, 0.5, np.nan, 2.0, -1.0])
    a = np.array([0.5, np.inf, 1.0, 1.0, np.nan, -4.0])
    np.testing.assert_allclose(sp.owens_t(h, a), ss.owens_t(h, a), rtol=1e-13)
    z = np.array([0j, 1e10 + 0j, -3.0 + 0j, 1e-3j])
    np.testing.assert_allclose(sp.wofz(z), ss.wofz(z), rtol=1e-12)
    assert np.asarray(sp.wofz(np.float32(1.0))).dtype == np.complex64
    assert np.asarray(sp.wofz(1.0)).dtype == np.complex128
    # erfcx of a complex argument is wofz(iz)
    np.testing.assert_allclose(sp.erfcx(z), ss.erfcx(z), rtol=1e-12)


def test_errors_are_jaxs():
    with pytest.raises(ValueError, match="complex"):
        sp.dawsn(1 + 1j)
    for fn in (sp.expi, sp.exp1, sp.sici):
        with pytest.raises(ValueError):
            fn(np.complex64(1 + 1j))
    with pytest.raises(ValueError):
        sp.expn(1, np.complex64(1 + 1j))
    with pytest.raises(NotImplementedError):
        sp.fresnel(np.complex64(1 + 1j))
    with pytest.raises(TypeError):
        sp.spence(jnp.arange(3))
