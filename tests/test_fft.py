"""``jnp.fft`` and ``lax.fft``: values and dtypes against JAX 0.10.2 and NumPy, eagerly and
under jit (IREE's native FFT and the composite lengths: DFT matrix, four-step, Bluestein,
float64); gradients of real-valued losses through every transform against JAX and float64
finite differences; vmap against a loop; bad input named at the user's line."""

from __future__ import annotations

import numpy as np
import pytest

import transpiler as tp
import transpiler.lax as lax
import transpiler.numpy as jnp
from transpiler.config import config
from transpiler.errors import DTypeError, ShapeError

jax = pytest.importorskip("jax")
jjnp = jax.numpy

rng = np.random.default_rng(3)
X = rng.normal(size=(4, 6, 10)).astype(np.float32)
Z = (rng.normal(size=(4, 6, 10)) + 1j * rng.normal(size=(4, 6, 10))).astype(np.complex64)

CALLS = [
    ("fft", Z, {}), ("fft", X, {"n": 7, "axis": 1}), ("fft", X, {"n": 16, "norm": "ortho"}),
    ("ifft", Z, {"axis": 0, "norm": "forward"}), ("rfft", X, {}), ("rfft", X, {"n": 5, "axis": 0}),
    ("irfft", Z, {}), ("irfft", Z, {"n": 9, "axis": 1, "norm": "ortho"}), ("hfft", Z, {}),
    ("ihfft", X, {"n": 8}), ("fft2", Z, {}), ("ifft2", Z, {"s": (3, 12)}),
    ("rfft2", X, {"axes": (0, 2)}), ("irfft2", Z, {"s": (6, 11)}), ("fftn", X, {}),
    ("ifftn", Z, {"axes": (1,)}), ("rfftn", X, {"s": (5, 4, 8)}), ("irfftn", Z, {"norm": "forward"}),
    ("fftshift", X, {}), ("ifftshift", X, {"axes": 1}), ("fftshift", X, {"axes": (0, -1)}),
    ("fft", X.astype(np.float16), {}), ("rfft", np.arange(12), {}),
]


def _close(got, want, label, tol=2e-5):
    got, want = np.asarray(got), np.asarray(want)
    assert (got.dtype, got.shape) == (want.dtype, want.shape), label
    scale = np.max(np.abs(want), initial=1.0)
    np.testing.assert_allclose(got, want, rtol=0, atol=tol * scale, err_msg=label)


@pytest.mark.parametrize("name,arg,kw", CALLS, ids=[f"{c[0]}-{i}" for i, c in enumerate(CALLS)])
def test_numpy_fft_matches_jax(name, arg, kw):
    want = getattr(jjnp.fft, name)(arg, **kw)
    fn = lambda a: getattr(jnp.fft, name)(a, **kw)  # noqa: E731
    _close(fn(arg), want, f"{name} {kw} eager")
    _close(fn(jnp.asarray(arg)), want, f"{name} {kw} our array")
    _close(tp.jit(fn)(arg), want, f"{name} {kw} jit")


def test_frequencies_match_jax():
    for name, args, kw in [("fftfreq", (8,), {}), ("fftfreq", (7, 0.1), {}),
                           ("rfftfreq", (9,), {"d": 2.0}), ("rfftfreq", (8,), {}),
                           ("fftfreq", (6,), {"dtype": jnp.float16})]:
        _close(getattr(jnp.fft, name)(*args, **kw), getattr(jjnp.fft, name)(*args, **kw), name)


@pytest.mark.parametrize("n", [1, 2, 3, 12, 17, 64, 255, 256, 257, 300, 512, 1000, 1031, 4096])
def test_every_length_under_jit(n):
    """Native (power-of-two), DFT-matrix (<= 256), four-step and Bluestein lengths."""
    z = (rng.normal(size=(2, n)) + 1j * rng.normal(size=(2, n))).astype(np.complex64)
    r = z.real.copy()
    bins = z[:, :n // 2 + 1]
    for fft_type, arg, want in [("FFT", z, np.fft.fft(z)), ("IFFT", z, np.fft.ifft(z)),
                                ("RFFT", r, np.fft.rfft(r)),
                                ("IRFFT", bins, np.fft.irfft(bins, n))]:
        got = tp.jit(lambda a: lax.fft(a, fft_type, (n,)))(arg)
        _close(got, want.astype(np.asarray(got).dtype), f"{fft_type} n={n}", tol=2e-6)


@pytest.mark.parametrize("n", [8, 300, 512, 1031])
def test_float64_with_x64(n, monkeypatch):
    """IREE cannot compile a float64 stablehlo.fft: every length takes the composite."""
    monkeypatch.setattr(config, "enable_x64", True)
    z = rng.normal(size=(n,)) + 1j * rng.normal(size=(n,))
    for fn, ref in [(jnp.fft.fft, np.fft.fft), (jnp.fft.rfft, lambda a: np.fft.rfft(a.real)),
                    (jnp.fft.irfft, np.fft.irfft)]:
        arg = z.real if fn is jnp.fft.rfft else z
        for got in (fn(arg), tp.jit(fn)(arg)):
            _close(got, ref(arg), f"{fn.__name__} n={n}", tol=1e-13)


def _losses(np_):
    """Real scalar losses through each transform: (name, function, argument)."""
    w = np.linspace(0.5, 1.5, 6 * 10).reshape(6, 10).astype(np.float32)
    return [
        ("rfft_power", lambda x: np_.sum(np_.abs(np_.fft.rfft(x)) ** 2 * w[:, :6]), X[0]),
        ("fft_real", lambda x: np_.sum(np_.real(np_.fft.fft(x, n=16)) * np_.cos(x[:, :1])), X[0]),
        ("irfft", lambda x: np_.sum(np_.fft.irfft(np_.fft.rfft(x) * w[:, :6]) ** 2), X[0]),
        ("irfft_n", lambda z: np_.sum(np_.sin(np_.fft.irfft(z, n=7))), Z[0, :, :4]),
        ("fft2_complex", lambda z: np_.sum(np_.abs(np_.fft.fft2(z * w)) ** 2), Z[0]),
        ("ifft_ortho", lambda z: np_.sum(np_.imag(np_.fft.ifft(z, norm="ortho")) ** 2), Z[0]),
        ("rfft2", lambda x: np_.sum(np_.abs(np_.fft.rfft2(x)) * w[:, :6]), X[0]),
        ("rfftn_3d", lambda x: np_.sum(np_.abs(np_.fft.rfftn(x, s=(3, 6, 12))) ** 2), X[:3]),
        ("hfft", lambda z: np_.sum(np_.fft.hfft(z) ** 2), Z[0, :, :5]),
        ("ihfft", lambda x: np_.sum(np_.abs(np_.fft.ihfft(x)) ** 2), X[0]),
        ("four_step", lambda x: np_.sum(np_.abs(np_.fft.fft(x, n=300)) ** 2 * x[0, 0]), X[0]),
    ]


OURS = _losses(jnp)
THEIRS = {name: fn for name, fn, _ in _losses(jjnp)}


@pytest.mark.parametrize("index", range(len(OURS)), ids=[n for n, _, _ in OURS])
def test_gradients_match_jax(index):
    name, fn, arg = OURS[index]
    want = np.asarray(jax.grad(THEIRS[name])(arg))
    _close(tp.grad(fn)(arg), want, f"{name} eager", tol=1e-4)
    _close(tp.jit(tp.grad(fn))(arg), want, f"{name} jit", tol=1e-4)


@pytest.mark.parametrize("index", range(len(OURS)), ids=[n for n, _, _ in OURS])
def test_gradients_match_finite_differences(index, monkeypatch):
    monkeypatch.setattr(config, "enable_x64", True)
    name, fn, arg = OURS[index]
    wide = arg.astype(np.complex128 if np.iscomplexobj(arg) else np.float64)
    g = np.asarray(tp.grad(fn)(wide))
    local = np.random.default_rng(index)
    v = local.standard_normal(wide.shape)
    if np.iscomplexobj(wide):
        v = v + 1j * local.standard_normal(wide.shape)
    eps = 1e-6
    central = (float(fn(wide + eps * v)) - float(fn(wide - eps * v))) / (2 * eps)
    np.testing.assert_allclose(np.real(np.sum(g * v)), central, rtol=1e-6, err_msg=name)


def test_jvp_hessian_and_vmap():
    f = lambda x: jnp.sum(jnp.abs(jnp.fft.rfft(x)) ** 3)  # noqa: E731
    jf = lambda x: jjnp.sum(jjnp.abs(jjnp.fft.rfft(x)) ** 3)  # noqa: E731
    x, v = X[0, 0], X[0, 1]
    out, tangent = tp.jvp(f, (x,), (v,))
    j_out, j_tangent = jax.jvp(jf, (x,), (v,))
    np.testing.assert_allclose([out, tangent], [j_out, j_tangent], rtol=1e-4)
    np.testing.assert_allclose(tp.jit(tp.hessian(f))(x), jax.hessian(jf)(x), rtol=1e-3,
                               atol=1e-3)
    for fn, arg in ((lambda z: jnp.fft.fft(z, n=12), Z[:, 0]),
                    (lambda x: jnp.fft.irfft(jnp.fft.rfft(x) * 2.0), X[:, 0]),
                    (tp.grad(f), X[:, 0])):
        looped = np.stack([np.asarray(fn(a)) for a in arg])
        _close(tp.vmap(fn)(arg), looped, "vmap")
        _close(tp.jit(tp.vmap(fn))(arg), looped, "jit(vmap)")
        _close(tp.vmap(fn, in_axes=1, out_axes=1)(np.moveaxis(arg, 0, 1)),
               np.moveaxis(looped, 0, 1), "vmap axis 1")


def test_bad_input_is_named():
    with pytest.raises(DTypeError, match="RFFT takes a real operand") as info:
        jnp.fft.rfft(Z)
    assert "test_fft.py" in str(info.value)
    with pytest.raises(ValueError, match="invalid norm value 'sideways'"):
        jnp.fft.fft(Z, norm="sideways")
    with pytest.raises(ValueError, match="does not support repeated axes"):
        jnp.fft.fftn(Z, axes=(0, -3))
    with pytest.raises(ValueError, match="have different lengths"):
        jnp.fft.fftn(Z, s=(2, 3), axes=(0,))
    with pytest.raises(ValueError, match="invalid number of FFT data points"):
        jnp.fft.fft(Z, n=0)
    with pytest.raises(ValueError, match="axis must be an int"):
        jnp.fft.fft(Z, axis=(0, 1))
    with pytest.raises(ShapeError, match="needs trailing axes"):
        lax.fft(Z, "IRFFT", (10,))
    with pytest.raises(DTypeError, match="unknown fft_type"):
        lax.fft(Z, "DCT", (10,))
    assert lax.fft(Z, lax.FftType.IFFT, (10,)).dtype == jnp.complex64


@pytest.mark.parametrize("n", [6, 10, 16])
def test_hessians_through_the_fft_under_jit(n):
    """Native (n = 16) and composite lengths; a slice of the spectrum and |.|**3: IREE 3.13
    failed to compile the native FFT fused into these and computed a wrong complex abs."""
    x = X[0, 0, :n] if n <= 10 else np.tile(X[0, 0], 2)[:n]
    for ours, theirs in [(lambda v: jnp.sum(jnp.abs(jnp.fft.rfft(v)) ** 3),
                          lambda v: jjnp.sum(jjnp.abs(jjnp.fft.rfft(v)) ** 3)),
                         (lambda v: jnp.sum(jnp.abs(jnp.fft.fft(v)[:4]) ** 3),
                          lambda v: jjnp.sum(jjnp.abs(jjnp.fft.fft(v)[:4]) ** 3))]:
        want = np.asarray(jax.hessian(theirs)(x))
        got = np.asarray(tp.jit(tp.hessian(ours))(x))
        np.testing.assert_allclose(got, want, rtol=2e-4, atol=2e-4 * np.abs(want).max())
