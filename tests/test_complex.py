"""Complex numbers end to end: values against NumPy eagerly and under jit, gradients of
real-valued functions of complex inputs and intermediates against JAX 0.10.2 (its
convention: a VJP is the transpose of the JVP, so grad(|z|**2) is 2 conj(z)) and against
float64 finite differences, batching against a loop, and clear errors where complex
numbers have no meaning (ordering, a complex grad output)."""

from __future__ import annotations

import numpy as np
import pytest

import transpiler as tp
import transpiler.lax as lax
import transpiler.numpy as jnp
from transpiler.config import config
from transpiler.errors import DTypeError, TranspileError

rng = np.random.default_rng(5)
Z = (rng.normal(size=(3, 4)) + 1j * rng.normal(size=(3, 4))).astype(np.complex64)
W = (rng.normal(size=(4,)) + 1j * rng.normal(size=(4,))).astype(np.complex64)
X = rng.normal(size=(3, 4)).astype(np.float32)


def programs(np_, lax_):
    """Real scalar functions with complex inputs or intermediates, written once for both
    libraries: (name, function, argument)."""
    return [
        ("abs2", lambda z: np_.sum(np_.abs(z) ** 2), Z),
        ("abs", lambda z: np_.sum(np_.abs(z)), Z),
        ("phase", lambda x: np_.sum(np_.real(np_.exp(1j * x) * x)), X),
        ("sin_conj", lambda z: np_.real(np_.sum(np_.sin(z) * np_.conj(z))), Z),
        ("parts", lambda x: np_.sum(np_.abs(lax_.complex(x, x[::-1] * 2) ** 2 / (1 + 2j))), X),
        ("vdot", lambda z: np_.real(np_.vdot(z[0], W)) + np_.sum(np_.imag(z @ W)), Z),
        ("sqrt", lambda x: np_.sum(np_.abs(np_.sqrt(x + 1j))), X),
        ("angle", lambda z: np_.sum(np_.angle(z) * np_.abs(z)), Z),
        ("var", lambda z: np_.var(z) + np_.abs(np_.mean(z)), Z),
        ("log_div", lambda z: np_.sum(np_.real(np_.log(z) / (z + 3.0))), Z),
        ("index", lambda z: np_.sum(np_.abs(z.at[0].set(2j) * z[::-1])), Z),
        ("gather_add", lambda z: np_.sum(np_.abs(z.at[np_.array([0, 2, 0])].add(z[1]))), Z),
        ("pad_concat", lambda z: np_.sum(np_.abs(np_.concatenate([np_.pad(z, 1)[1:, 2:], z * 1j]))), Z),
        ("where", lambda z: np_.sum(np_.abs(np_.where(np_.real(z) > 0, z, z * z))), Z),
        ("to_real", lambda z: np_.sum(z.astype(np_.real(z).dtype) * np_.imag(z)), Z),
        ("cumsum", lambda z: np_.sum(np_.abs(np_.cumsum(z, axis=1))), Z),
        ("matmul", lambda z: np_.sum(np_.abs(z.T @ z)), Z),
        ("power", lambda z: np_.sum(np_.abs(z ** 3 + z ** 2.5)), Z),
    ]


jax = pytest.importorskip("jax")
jjnp = jax.numpy
OURS = programs(jnp, lax)
THEIRS = {name: fn for name, fn, _ in programs(jjnp, jax.lax)}
NAMES = [name for name, _, _ in OURS]


@pytest.mark.parametrize("index", range(len(OURS)), ids=NAMES)
def test_values_and_gradients_match_jax(index):
    name, fn, arg = OURS[index]
    want_value = np.asarray(THEIRS[name](jjnp.asarray(arg)))
    want = np.asarray(jax.grad(THEIRS[name])(jjnp.asarray(arg)))
    for label, got_value, got in [
            ("eager", fn(jnp.asarray(arg)), tp.grad(fn)(jnp.asarray(arg))),
            ("jit", tp.jit(fn)(arg), tp.jit(tp.grad(fn))(arg))]:
        np.testing.assert_allclose(np.asarray(got_value), want_value, rtol=2e-5, atol=2e-5,
                                   err_msg=f"{name} {label} value")
        got = np.asarray(got)
        assert got.dtype == want.dtype, f"{name} {label}: {got.dtype} != {want.dtype}"
        np.testing.assert_allclose(got, want, rtol=2e-4, atol=2e-4, err_msg=f"{name} {label}")


@pytest.mark.parametrize("index", range(len(OURS)), ids=NAMES)
def test_gradients_match_finite_differences_in_float64(index, monkeypatch):
    """d f(z + eps v) / d eps = Re sum(grad * v): the pairing of JAX's convention."""
    monkeypatch.setattr(config, "enable_x64", True)
    name, fn, arg = OURS[index]
    wide = arg.astype(np.complex128 if np.iscomplexobj(arg) else np.float64)
    g = np.asarray(tp.grad(fn)(jnp.asarray(wide)))
    assert g.dtype == wide.dtype
    direction = np.random.default_rng(index).standard_normal(wide.shape)
    if np.iscomplexobj(wide):
        direction = direction + 1j * np.random.default_rng(index + 1).standard_normal(wide.shape)
    eps = 1e-6
    f = lambda step: float(fn(jnp.asarray(wide + step * direction)))  # noqa: E731
    central = (f(eps) - f(-eps)) / (2 * eps)
    np.testing.assert_allclose(np.real(np.sum(g * direction)), central, rtol=1e-5, atol=1e-6,
                               err_msg=name)


def test_jvp_vmap_and_hessian_match_jax():
    f = lambda x: jnp.sum(jnp.abs(jnp.exp(1j * x) + x) ** 2)  # noqa: E731
    jf = lambda x: jjnp.sum(jjnp.abs(jjnp.exp(1j * x) + x) ** 2)  # noqa: E731
    v = np.ones_like(X)
    out, tangent = tp.jvp(f, (X,), (v,))
    j_out, j_tangent = jax.jvp(jf, (X,), (v,))
    np.testing.assert_allclose([out, tangent], [j_out, j_tangent], rtol=2e-5)
    row = X[0]
    np.testing.assert_allclose(tp.hessian(f)(row), jax.hessian(jf)(row), rtol=2e-4, atol=2e-4)
    np.testing.assert_allclose(tp.jit(tp.hessian(f))(row), jax.hessian(jf)(row), rtol=2e-4,
                               atol=2e-4)
    # complex inputs batched: a vmap of grad against a loop
    g = tp.grad(lambda z: jnp.sum(jnp.abs(jnp.sin(z)) ** 2))
    batched = np.asarray(tp.vmap(g)(Z))
    looped = np.stack([np.asarray(g(z)) for z in Z])
    np.testing.assert_allclose(batched, looped, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(tp.jit(tp.vmap(g))(Z)), looped, rtol=1e-5, atol=1e-6)


def test_inputs_users_pass():
    """Python complex scalars are weak (complex64), NumPy complex128 is canonicalized, and
    our arrays, NumPy arrays and scalars give the same answers eagerly and under jit."""
    f = lambda z: jnp.abs(z * (2 - 1j)) ** 2  # noqa: E731
    for value in (1 + 2j, np.complex64(1 + 2j), np.complex128(1 + 2j), jnp.asarray(1 + 2j)):
        assert float(f(value)) == pytest.approx(25.0)
        assert float(tp.jit(f)(value)) == pytest.approx(25.0)
        assert complex(tp.grad(f)(value)) == pytest.approx(10 * (1 - 2j))
    assert jnp.asarray([1 + 1j, 2]).dtype == jnp.complex64
    assert (jnp.ones(3, jnp.float32) * 1j).dtype == jnp.complex64
    assert jnp.real(np.arange(3.0)).dtype == jnp.float32
    assert jnp.iscomplexobj(Z) and jnp.isrealobj(X)
    np.testing.assert_array_equal(jnp.iscomplex(np.array([1 + 0j, 1j])), [False, True])


def test_complex128_with_x64(monkeypatch):
    monkeypatch.setattr(config, "enable_x64", True)
    z = Z.astype(np.complex128) / 3
    for fn, ref in [(jnp.exp, np.exp), (jnp.sqrt, np.sqrt), (lambda a: a @ a.T, lambda a: a @ a.T),
                    (lambda a: jnp.abs(a), np.abs), (lambda a: 1 / (a + 1j), lambda a: 1 / (a + 1j))]:
        want = ref(z)
        for got in (fn(jnp.asarray(z)), tp.jit(fn)(z)):
            got = np.asarray(got)
            assert got.dtype == want.dtype
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-13)


def test_ordering_is_lexicographic_where_numpy_orders():
    a = np.array([1 + 1j, 1 + 2j, 0 + 5j, 2 - 1j], np.complex64)
    b = np.array([1 + 1j, 1 + 1j, 1 + 0j, 2 + 0j], np.complex64)
    for op, ref in [(jnp.less, np.less), (jnp.less_equal, np.less_equal),
                    (jnp.greater, np.greater), (jnp.greater_equal, np.greater_equal)]:
        np.testing.assert_array_equal(op(a, b), ref(a, b))
        np.testing.assert_array_equal(tp.jit(op)(a, b), ref(a, b))


def test_where_complex_has_no_meaning_the_error_says_so():
    with pytest.raises(DTypeError, match="maximum does not accept complex"):
        jnp.maximum(Z, W)
    with pytest.raises(DTypeError, match="complex numbers are not ordered"):
        jnp.max(Z)
    with pytest.raises(DTypeError, match="complex numbers are not ordered"):
        tp.jit(lambda z: jnp.min(z, axis=0))(Z)
    with pytest.raises(DTypeError, match="floor does not accept complex"):
        jnp.floor(Z)
    with pytest.raises(DTypeError, match="real requires a complex argument"):
        lax.real(X)
    with pytest.raises(DTypeError, match="complex requires floating arguments"):
        lax.complex(np.arange(3), np.arange(3))
    with pytest.raises(TranspileError, match="real scalar output") as info:
        tp.grad(lambda z: jnp.sum(z * z))(Z)
    assert "test_complex.py" in str(info.value)
    with pytest.raises(TranspileError, match="floating or complex inputs"):
        tp.grad(lambda i: jnp.sum(i * 1.0))(np.arange(3))


def _second_order(np_):
    w = (np.linspace(-1, 1, 16).reshape(4, 4) + 1j * np.linspace(2, -1, 16).reshape(4, 4)
         ).astype(np.complex64)
    return [
        ("real_matmul_cubed", lambda x: np_.sum(np_.real(x @ w) ** 3)),
        ("broadcast_sum_cubed", lambda x: np_.sum(np_.real(np_.sum(x[:, None] * w, 0)) ** 3)),
        ("abs_cubed", lambda x: np_.sum(np_.abs(x @ w) ** 3)),
        ("abs_slice_cubed", lambda x: np_.sum(np_.abs((x @ w)[:3]) ** 3)),
    ]


@pytest.mark.parametrize("index", range(4), ids=[n for n, _ in _second_order(np)])
def test_hessians_under_jit_match_jax(index):
    """Each of these was a silent wrong answer of IREE 3.13 under jit (complex dot_general,
    complex abs, O3 on complex programs): the lowering now avoids each."""
    name, f = _second_order(jnp)[index]
    want = np.asarray(jax.hessian(_second_order(jjnp)[index][1])(X[0]))
    for label, fn in [("hessian", tp.hessian(f)), ("jacrev", tp.jacrev(tp.grad(f))),
                      ("jacfwd", tp.jacfwd(tp.grad(f)))]:
        np.testing.assert_allclose(tp.jit(fn)(X[0]), want, rtol=1e-4, atol=1e-4,
                                   err_msg=f"{name} jit({label})")
