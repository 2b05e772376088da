"""The `jax.numpy` names added to `transpiler.numpy` (aliases, elementwise functions, index
tricks, array edits, set operations, polynomials, windows, statistics, functional tools):
values against NumPy, values and dtypes against JAX (skipped without it), eager against
jit, gradients against float64 central differences of NumPy's function, vmap against a
loop, and the errors for bad input."""

from __future__ import annotations

import numpy as np
import pytest

import transpiler as tp
import transpiler.numpy as jnp

rng = np.random.default_rng(0)
X = rng.normal(size=(3, 4)).astype(np.float32)
V = rng.normal(size=5).astype(np.float32)
POS = rng.uniform(0.5, 2.0, size=5).astype(np.float32)
INTS = np.array([12, -18, 0, 7, 30], np.int32)
A1 = np.array([5, 1, 3, 3, 7, 9, 1], np.int32)
A2 = np.array([3, 4, 1, 1, 8, 10], np.int32)
XP = np.array([0.0, 1.0, 2.0, 4.0], np.float32)
FP = np.array([0.0, 2.0, 3.0, -1.0], np.float32)
XS = np.linspace(-1, 5, 13).astype(np.float32)
SAMPLE = rng.normal(size=(40, 2)).astype(np.float32)


def _jax_numpy():
    return pytest.importorskip("jax").numpy


def _close(got, want, rtol=1e-5, atol=1e-5, dtype=True, label=""):
    """Equal values (nested tuples and lists too); with `dtype`, equal dtypes."""
    if isinstance(want, (tuple, list)):
        assert isinstance(got, (tuple, list)) and len(got) == len(want), label
        for g, w in zip(got, want):
            _close(g, w, rtol, atol, dtype, label)
        return
    got_a, want_a = np.asarray(got), np.asarray(want)
    assert got_a.shape == want_a.shape, (label, got_a.shape, want_a.shape)
    np.testing.assert_allclose(got_a.astype(np.result_type(got_a, np.float64)),
                               want_a.astype(np.result_type(want_a, np.float64)),
                               rtol=rtol, atol=atol, err_msg=label)
    if dtype:
        assert got_a.dtype == want_a.dtype, (label, got_a.dtype, want_a.dtype)


def _square(v):
    return v * v


def _add(a, b):
    return a + b


def _row_stats(v):
    return jnp.stack([v.sum(), v.max()])


# name, args, kwargs, NumPy's function (None: the same name in NumPy; absent: JAX only)
CASES = [
    ("acos", (np.float32([0.1, -0.5]),), {}, np.arccos),
    ("atan2", (V, POS), {}, np.arctan2),
    ("atanh", (np.float32([0.1, -0.5]),), {}, np.arctanh),
    ("bitwise_invert", (INTS,), {}, np.invert),
    ("bitwise_left_shift", (INTS, 2), {}, np.left_shift),
    ("bitwise_count", (INTS,), {}, lambda x: np.bitwise_count(np.abs(x))),
    ("concat", ([X, X],), {"axis": 1}, np.concatenate),
    ("permute_dims", (X,), {"axes": (1, 0)}, lambda a, axes: np.transpose(a, axes)),
    ("matrix_transpose", (np.ones((2, 3, 4), np.float32),), {}, lambda a: a.swapaxes(-1, -2)),
    ("unstack", (X,), {"axis": 1}, lambda a, axis: tuple(np.moveaxis(a, axis, 0))),
    ("copy", (X,), {}, None),
    ("fabs", (V,), {}, None),
    ("fmod", (V, np.float32(0.7)), {}, None),
    ("fmod", (INTS, 7), {}, None),
    ("divmod", (V, np.float32(0.7)), {}, None),
    ("divmod", (INTS, 7), {}, None),
    ("modf", (V,), {}, None),
    ("frexp", (np.float32([1.5, -2.5, 0.0, 6e30]),), {}, None),
    ("ldexp", (np.float32([1.5, -2.5, 0.0, 3.0]), np.int32([1, -3, 4, -140])), {}, None),
    ("gcd", (INTS, np.int32(8)), {}, None),
    ("lcm", (INTS, np.int32(8)), {}, None),
    ("heaviside", (np.float32([-1.0, 0.0, 2.0]), np.float32(0.5)), {}, None),
    ("sinc", (np.float32([-1.5, 0.0, 0.25, 3.0]),), {}, None),
    ("spacing", (np.float32([1.5, -2.5, 100.0]),), {}, None),
    ("nextafter", (V, np.float32(0.0)), {}, None),
    ("float_power", (POS, np.float32(1.5)), {}, None),
    ("logaddexp2", (V, POS), {}, None),
    ("i0", (V,), {}, None),
    ("append", (X, X[:1]), {"axis": 0}, None),
    ("insert", (X, 1, np.float32([9, 9, 9])), {"axis": 1}, None),
    ("insert", (np.arange(5), np.array([1, 3]), np.array([7, 8])), {}, None),
    ("delete", (X, 1), {"axis": 1}, None),
    ("delete", (X, np.array([0, 2])), {}, None),
    ("delete", (X, slice(0, 2)), {"axis": 0}, None),
    ("diff", (X,), {}, None),
    ("diff", (X,), {"n": 2, "axis": 0, "prepend": 0.0}, None),
    ("ediff1d", (X,), {"to_begin": np.float32([-1.0]), "to_end": np.float32([7.0, 8.0])}, None),
    ("gradient", (X,), {}, None),
    ("gradient", (V, np.float32([0, 1, 2, 4, 5])), {}, None),
    ("cross", (X[:, :3], X[::-1, 1:]), {}, None),
    ("cross", (X[:, :2], X[:, 1:3]), {}, lambda a, b: a[:, 0] * b[:, 1] - a[:, 1] * b[:, 0]),
    ("meshgrid", (np.arange(3), np.arange(2)), {}, None),
    ("meshgrid", (np.arange(3), np.arange(2)), {"sparse": True, "indexing": "ij"}, None),
    ("indices", ((2, 3),), {}, None),
    ("ix_", (np.array([0, 1]), np.array([2, 3, 4])), {}, None),
    ("diag_indices", (3,), {}, None),
    ("diag_indices_from", (np.zeros((3, 3)),), {}, None),
    ("tril_indices", (3,), {"k": 1, "m": 4}, None),
    ("triu_indices", (3,), {}, None),
    ("tril_indices_from", (np.zeros((3, 4)),), {"k": -1}, None),
    ("triu_indices_from", (np.zeros((4, 3)),), {}, None),
    ("unravel_index", (np.array([0, 5, 11]), (3, 4)), {}, None),
    ("ravel_multi_index", ((np.array([0, 1, 2]), np.array([3, 0, 1])), (3, 4)), {}, None),
    ("ravel_multi_index", ((np.array([0, 1, 4]), np.array([3, 5, -1])), (3, 4)),
     {"mode": "clip"}, None),
    ("ravel_multi_index", ((np.array([0, 1, 4]), np.array([3, 5, -1])), (3, 4)),
     {"mode": "wrap"}, None),
    ("diagflat", (np.array([[1, 2], [3, 4]]),), {"k": 1}, None),
    ("vander", (V,), {"N": 3}, None),
    ("vander", (np.array([1, 2, 3]),), {"increasing": True}, None),
    ("geomspace", (1.0, 1000.0, 4), {}, None),
    ("logspace", (0.0, 2.0, 5), {"base": 2.0}, None),
    ("isin", (X.round(), np.float32([0.0, 1.0])), {}, None),
    ("isin", (INTS, np.int32([0, 7])), {"invert": True}, None),
    ("intersect1d", (A1, A2), {}, None),
    ("union1d", (A1, A2), {}, None),
    ("setdiff1d", (A1, A2), {}, None),
    ("setxor1d", (A1, A2), {}, None),
    ("unstack", (X,), {}, lambda a: tuple(a)),
    ("block", ([[np.eye(2), np.zeros((2, 3))], [np.ones((1, 2)), np.ones((1, 3))]],), {},
     None),
    ("choose", (np.array([0, 2, 1, 0]), [np.arange(4), np.arange(4) * 10,
                                         np.arange(4) * 100]), {}, None),
    ("compress", (np.array([True, False, True]), X), {"axis": 0}, None),
    ("extract", (X > 0, X), {}, None),
    ("select", ([X < -0.5, X > 0.5], [X, -X]), {"default": 7.0}, None),
    ("resize", (X, (5, 3)), {}, None),
    ("rollaxis", (np.zeros((2, 3, 4, 5)), 3, 1), {}, None),
    ("trim_zeros", (np.array([0, 0, 1, 2, 0, 3, 0]),), {}, None),
    ("trim_zeros", (np.array([0, 0, 1, 2, 0, 3, 0]),), {"trim": "b"}, None),
    ("unravel_index", (7, (2, 5)), {}, None),
    ("packbits", (np.array([[1, 0, 1], [0, 0, 1]]),), {}, None),
    ("packbits", (np.array([1, 0, 1, 1, 0, 0, 0, 0, 1]),), {"bitorder": "little"}, None),
    ("unpackbits", (np.array([[5, 255], [0, 7]], np.uint8),), {"axis": 1}, None),
    ("unpackbits", (np.array([5, 255], np.uint8),), {"count": 11}, None),
    ("array_equal", (X, X.copy()), {}, None),
    ("array_equal", (X, X[:2]), {}, None),
    ("array_equal", (np.float32([np.nan]), np.float32([np.nan])), {"equal_nan": True}, None),
    ("array_equiv", (X[0], np.stack([X[0], X[0]])), {}, None),
    ("interp", (XS, XP, FP), {}, None),
    ("interp", (XS, XP, FP), {"left": -5.0, "right": 9.0}, None),
    ("interp", (XS, XP, FP), {"period": 3.0}, None),
    ("corrcoef", (X,), {}, None),
    ("cov", (X,), {}, None),
    ("cov", (X, X[0]), {"bias": True}, None),
    ("cov", (X,), {"fweights": np.array([1, 2, 1, 3]),
               "aweights": np.float32([0.5, 1.0, 1.0, 2.0])}, None),
    ("nancumsum", (np.float32([[1, np.nan, 2], [np.nan, 3, 4]]),), {"axis": 1}, None),
    ("nancumprod", (np.float32([[1, np.nan, 2], [np.nan, 3, 4]]),), {}, None),
    ("unwrap", (np.float32([0.0, 3.0, 6.5, 0.5, 7.0, -4.0]),), {}, None),
    ("histogram2d", (SAMPLE[:, 0], SAMPLE[:, 1]), {"bins": (3, 4)}, None),
    ("histogramdd", (SAMPLE,), {"bins": 3, "density": True}, None),
    ("poly", (np.float32([1, 2, 3]),), {}, None),
    ("polyadd", (np.float32([1, 2]), np.float32([1, 2, 3])), {}, None),
    ("polysub", (np.float32([1, 2]), np.float32([1, 2, 3])), {}, None),
    ("polymul", (np.float32([1, 2]), np.float32([1, 2, 3])), {}, None),
    ("polydiv", (np.float32([1, 5, 6, 2]), np.float32([1, 2])), {}, None),
    ("polyder", (np.float32([1, 5, 6, 2]),), {"m": 2}, None),
    ("polyint", (np.float32([1, 5, 6, 2]),), {"m": 2, "k": np.float32([1.0, 2.0])}, None),
    ("polyval", (np.float32([1, -2, 3]), V), {}, None),
    ("polyfit", (np.linspace(0, 1, 10, dtype=np.float32),
                 np.linspace(0, 1, 10, dtype=np.float32) ** 2 * 3 - 1), {"deg": 2}, None),
    ("bartlett", (7,), {}, None),
    ("blackman", (7,), {}, None),
    ("hamming", (7,), {}, None),
    ("hanning", (7,), {}, None),
    ("kaiser", (7, 3.0), {}, None),
    ("hanning", (1,), {}, None),
    ("matvec", (np.ones((2, 3, 4), np.float32), V[:4]), {},
     lambda a, b: a @ b),
    ("vecmat", (V[:3], np.ones((2, 3, 4), np.float32)), {}, lambda a, b: a @ b),
    ("vecdot", (X, X), {}, lambda a, b: (a * b).sum(-1)),
    ("sort_complex", (np.array([3 + 1j, 1 - 2j, 1 + 1j, 2], np.complex64),), {}, None),
    ("fromfunction", (_add, (2, 3)), {}, None),
    ("apply_along_axis", (_row_stats, 1, X), {},
     lambda f, axis, a: np.stack([a.sum(1), a.max(1)], 1)),
    ("apply_over_axes", (jnp.sum, X, [0, 1]), {},
     lambda f, a, axes: np.apply_over_axes(np.sum, a, axes)),
    ("frombuffer", (b"\x01\x02\x03",), {"dtype": np.uint8}, None),
    ("fromstring", ("1 2 3.5",), {"sep": " "}, None),
]
# NumPy 2's names or behaviour differ from JAX's for these: JAX only
JAX_ONLY = {"polydiv"}  # NumPy trims the remainder; JAX keeps its length

IDS = [f"{name}-{i}" for i, (name, *_) in enumerate(CASES)]


@pytest.mark.parametrize("name,args,kwargs,reference", CASES, ids=IDS)
def test_values_match_numpy(name, args, kwargs, reference):
    got = getattr(jnp, name)(*args, **kwargs)
    if name in JAX_ONLY:
        pytest.skip(f"{name}: NumPy's result differs from JAX's by design")
    if reference is None:
        reference = getattr(np, name, None)
        if reference is None:
            pytest.skip(f"NumPy has no {name}")
    if name == "apply_along_axis" or name == "fromfunction":
        want = reference(*[np.add if a is _add else a for a in args], **kwargs)
    else:
        want = reference(*args, **kwargs)
    if name in ("tril_indices", "triu_indices", "tril_indices_from", "triu_indices_from"):
        want = tuple(want)
    if name == "histogramdd":
        want = (want[0], list(want[1]))
    _close(got, want, rtol=2e-5, atol=2e-5, dtype=False, label=name)


@pytest.mark.parametrize("name,args,kwargs,reference", CASES, ids=IDS)
def test_values_and_dtypes_match_jax(name, args, kwargs, reference):
    jjnp = _jax_numpy()
    jax_args = [jjnp.sum if a is jnp.sum else a for a in args]
    if name in ("apply_along_axis",):
        jax_args[0] = lambda v: jjnp.stack([v.sum(), v.max()])
    got = getattr(jnp, name)(*args, **kwargs)
    want = getattr(jjnp, name)(*jax_args, **kwargs)
    if name == "polyfit":
        _close(got, want, rtol=1e-3, atol=1e-3, label=name)
    else:
        _close(got, want, rtol=2e-5, atol=2e-5, label=name)


def test_jax_only_cases_have_numpy_counterparts_or_are_listed():
    names = {name for name, *_ in CASES}
    assert JAX_ONLY <= names


# --- under jit ---------------------------------------------------------------------------

JIT_CASES = [
    ("diff", lambda x: jnp.diff(x, axis=0)),
    ("gradient", lambda x: jnp.gradient(x, 0.5, axis=1)),
    ("cross", lambda x: jnp.cross(x[:, :3], x[:, 1:])),
    ("interp", lambda x: jnp.interp(x, XP, FP)),
    ("polyval", lambda x: jnp.polyval(x[0], x)),
    ("frexp", lambda x: jnp.frexp(x)),
    ("ldexp", lambda x: jnp.ldexp(x, 3)),
    ("gcd", lambda x: jnp.gcd(jnp.astype(x * 10, jnp.int32), 6)),
    ("sinc", lambda x: jnp.sinc(x)),
    ("logaddexp2", lambda x: jnp.logaddexp2(x, 1.0)),
    ("insert", lambda x: jnp.insert(x, jnp.array([1, 3]), 0.5, axis=1)),
    ("delete", lambda x: jnp.delete(x, jnp.array([0, 2]), axis=1, assume_unique_indices=True)),
    ("setdiff1d", lambda x: jnp.setdiff1d(jnp.round(x), jnp.array([0.0]), size=6)),
    ("intersect1d", lambda x: jnp.intersect1d(jnp.round(x), jnp.array([0.0, 1.0]), size=3)),
    ("union1d", lambda x: jnp.union1d(jnp.round(x), jnp.array([5.0]), size=12)),
    ("compress", lambda x: jnp.compress(x[0] > 0, x, axis=1, size=2, fill_value=-1.0)),
    ("put", lambda x: jnp.put(x, jnp.array([0, 5]), 9.0, inplace=False)),
    ("histogramdd", lambda x: jnp.histogramdd(x, bins=3, range=[(-2, 2)] * 4)[0]),
    ("cov", lambda x: jnp.corrcoef(x)),
    ("kaiser", lambda x: jnp.kaiser(5, x[0, 0] + 3.0)),
]


@pytest.mark.parametrize("name,fn", JIT_CASES, ids=[n for n, _ in JIT_CASES])
def test_jit_matches_eager(name, fn):
    _close(tp.jit(fn)(X), fn(X), rtol=1e-5, atol=1e-5, label=name)


# --- derivatives -------------------------------------------------------------------------

W = rng.normal(size=64)


def _weighted(out):
    out = np.asarray(out, np.float64).ravel()
    return float(np.sum(out * W[:out.size]))


GRAD_CASES = [
    ("diff", lambda m: lambda x: m.diff(x, n=2, axis=1), X),
    ("ediff1d", lambda m: lambda x: m.ediff1d(x), V),
    ("gradient", lambda m: lambda x: m.gradient(x, axis=0), X),
    ("cross", lambda m: lambda x: m.cross(x[:, :3], x[:, 1:]), X),
    ("interp", lambda m: lambda x: m.interp(x, XP, FP), np.float32([-0.5, 0.3, 1.7, 2.5, 4.5])),
    ("interp-fp", lambda m: lambda x: m.interp(XS, XP, x), FP),
    ("polyval", lambda m: lambda x: m.polyval(x, np.float32([0.5, -1.5, 2.0])), V),
    ("polyval-x", lambda m: lambda x: m.polyval(np.float32([1, -2, 3]), x), V),
    ("polymul", lambda m: lambda x: m.polymul(x, np.float32([1, 2, 3])), V),
    ("vander", lambda m: lambda x: m.vander(x, 3), V),
    ("sinc", lambda m: lambda x: m.sinc(x), V),
    ("logaddexp2", lambda m: lambda x: m.logaddexp2(x, x[::-1]), V),
    ("float_power", lambda m: lambda x: m.float_power(x, 2.5), POS),
    ("cov", lambda m: lambda x: m.cov(x), X),
    ("corrcoef", lambda m: lambda x: m.corrcoef(x), X),
    ("unwrap", lambda m: lambda x: m.unwrap(x * 3), V),
    ("append", lambda m: lambda x: m.append(x, x[:2] * 2), V),
    ("select", lambda m: lambda x: m.select([x < 0], [x * x], x), V),
    ("trapezoid-like", lambda m: lambda x: m.diff(m.cumsum(x)), V),
]


@pytest.mark.parametrize("name,make,x", GRAD_CASES, ids=[n for n, *_ in GRAD_CASES])
def test_grad_matches_central_differences(name, make, x):
    """`make(module)` is the function built on `module`: transpiler.numpy or NumPy."""
    ours, theirs = make(jnp), make(np)
    w = W[:np.asarray(theirs(x.astype(np.float64))).size].astype(np.float32)
    got = tp.grad(lambda v: jnp.sum(jnp.ravel(ours(v)) * w))(x)
    x64, h = x.astype(np.float64), 1e-6
    want = np.zeros_like(x64)
    for i in np.ndindex(x.shape):
        up, down = x64.copy(), x64.copy()
        up[i] += h
        down[i] -= h
        want[i] = (_weighted(theirs(up)) - _weighted(theirs(down))) / (2 * h)
    _close(got, want.astype(np.float32), rtol=2e-3, atol=2e-3, label=name)


def test_grad_of_kaiser_beta_and_sinc_at_zero():
    beta = 2.0
    got = tp.grad(lambda b: jnp.sum(jnp.kaiser(6, b)))(beta)
    h = 1e-6
    want = (np.sum(np.kaiser(6, beta + h)) - np.sum(np.kaiser(6, beta - h))) / (2 * h)
    assert abs(float(got) - want) < 1e-3 * max(1.0, abs(want))
    assert float(tp.grad(jnp.sinc)(0.0)) == 0.0


def test_grad_through_vectorize_and_apply_along_axis():
    got = tp.grad(lambda a: jnp.sum(jnp.vectorize(_add)(a, a) ** 2))(X)
    _close(got, 8 * X, label="vectorize")
    got = tp.grad(lambda a: jnp.sum(jnp.vectorize(_add)(a, 1.0) ** 2))(X)
    _close(got, 2 * (X + 1), label="vectorize with a Python scalar")
    got = tp.grad(lambda a: jnp.sum(jnp.apply_along_axis(_square, 1, a)))(X)
    _close(got, 2 * X, label="apply_along_axis")


def test_vmap_matches_a_loop():
    for fn in (lambda r: jnp.diff(r), lambda r: jnp.interp(r, XP, FP),
               lambda r: jnp.polyval(r, 0.5), lambda r: jnp.sinc(r),
               lambda r: jnp.cross(r[:3], r[1:])):
        got = tp.vmap(fn)(X)
        want = np.stack([np.asarray(fn(jnp.asarray(row))) for row in X])
        _close(got, want)


# --- names, types and dtypes ---------------------------------------------------------------

def test_ndarray_covers_every_array_kind():
    assert isinstance(jnp.zeros(2), jnp.ndarray)
    assert isinstance(tp.jit(lambda a: a + 1)(jnp.zeros(2)), jnp.ndarray)
    assert not isinstance(np.zeros(2), jnp.ndarray)
    assert issubclass(tp.Array, jnp.ndarray) and issubclass(tp.DeviceArray, jnp.ndarray)
    seen = []
    tp.grad(lambda v: (seen.append(isinstance(v, jnp.ndarray)), jnp.sum(v))[1])(jnp.ones(2))
    with pytest.raises(TypeError):
        jnp.ndarray()


def test_aliases_and_dtype_names():
    assert jnp.acos is jnp.arccos and jnp.atan2 is jnp.arctan2 and jnp.asinh is jnp.arcsinh
    assert jnp.bitwise_right_shift is jnp.right_shift
    assert jnp.single is jnp.float32 and jnp.double is jnp.float64
    assert jnp.csingle is jnp.complex64 and jnp.cdouble is jnp.complex128
    assert jnp.int_ is jnp.int64 and jnp.uint is jnp.uint64 and jnp.float_ is jnp.float64
    assert jnp.bool is jnp.bool_ and jnp.object_ is np.object_
    assert issubclass(jnp.ComplexWarning, Warning)
    assert "fft" in dir(jnp) and "linalg" in dir(jnp)


def test_dtype_queries():
    assert jnp.isdtype(jnp.int8, "signed integer") and not jnp.isdtype(jnp.uint8, "bool")
    assert jnp.isdtype(jnp.bfloat16, "real floating")
    assert jnp.isdtype(jnp.float32, ("bool", jnp.float32))
    assert jnp.isdtype(jnp.complex64, "numeric")
    with pytest.raises(ValueError, match="Unrecognized kind"):
        jnp.isdtype(jnp.int8, "foo")
    assert jnp.can_cast(jnp.int8, jnp.int32) and not jnp.can_cast(jnp.float32, jnp.int32)
    assert not jnp.can_cast(jnp.zeros(2), jnp.int32)
    with pytest.raises(TypeError):
        jnp.can_cast(1, jnp.int32)
    assert jnp.isscalar(1.0) and jnp.isscalar(jnp.array(1)) and not jnp.isscalar([1])
    assert jnp.iterable([1]) and not jnp.iterable(1)


def test_weak_types_follow_jax():
    assert jnp.float_power(2, 3).weak_type and jnp.float_power(2, 3).dtype == np.float32
    assert not jnp.fabs(jnp.array([1, -2])).weak_type
    assert jnp.fabs(jnp.array([1, -2])).dtype == np.float32


# --- index tricks and grids ----------------------------------------------------------------

def test_grids_and_concatenation_helpers_match_numpy():
    _close(jnp.mgrid[0:2, 0:3], np.mgrid[0:2, 0:3], dtype=False)
    _close(jnp.mgrid[0:1:5j], np.mgrid[0:1:5j], dtype=False)
    _close(jnp.ogrid[0:2, 0:3], np.ogrid[0:2, 0:3], dtype=False)
    _close(jnp.r_[1:3, 5, [7, 8]], np.r_[1:3, 5, [7, 8]], dtype=False)
    _close(jnp.r_["0,2", [1, 2], [3, 4]], np.r_["0,2", [1, 2], [3, 4]], dtype=False)
    _close(jnp.r_["r", [1, 2]], np.array([[1, 2]]), dtype=False)
    _close(jnp.c_[[1, 2], [3, 4]], np.c_[[1, 2], [3, 4]], dtype=False)
    _close(jnp.c_[np.ones((2, 2)), [3, 4]], np.c_[np.ones((2, 2)), [3, 4]], dtype=False)
    assert jnp.s_[1:2] == np.s_[1:2] and jnp.index_exp[1] == np.index_exp[1]
    assert jnp.mgrid[0:2, 0:3].dtype == np.int32
    _close(jnp.mask_indices(3, jnp.triu, 1), np.mask_indices(3, np.triu, 1), dtype=False)


def test_unravel_index_clips_like_jax():
    out = jnp.unravel_index(jnp.array([-1, 6, -7, 100]), (2, 3))
    _close(out, (np.int32([1, 1, 0, 1]), np.int32([2, 2, 0, 2])))


# --- functional edits ------------------------------------------------------------------------

def test_functional_forms_of_in_place_numpy_functions():
    a = np.zeros((3, 4), np.float32)
    want = a.copy()
    np.fill_diagonal(want, 5.0)
    _close(jnp.fill_diagonal(a, 5.0, inplace=False), want)
    want = np.arange(6)
    np.put(want, [0, 2], [10, 20])
    _close(jnp.put(np.arange(6), [0, 2], [10, 20], inplace=False), want, dtype=False)
    _close(jnp.put(np.arange(6), [0, 9], [10, 20], mode="wrap", inplace=False),
           np.array([10, 1, 2, 20, 4, 5]), dtype=False)
    want = np.arange(6)
    np.place(want, want % 2 == 0, [10, 20])
    _close(jnp.place(np.arange(6), np.arange(6) % 2 == 0, [10, 20], inplace=False), want,
           dtype=False)
    idx = np.array([[1], [0], [3]])
    want = np.arange(12).reshape(3, 4)
    np.put_along_axis(want, idx, 99, axis=1)
    _close(jnp.put_along_axis(np.arange(12).reshape(3, 4), idx, 99, axis=1, inplace=False),
           want, dtype=False)
    for fn in (lambda: jnp.put(np.arange(3), [0], [1]),
               lambda: jnp.place(np.arange(3), np.arange(3) > 0, [1]),
               lambda: jnp.put_along_axis(np.arange(3), np.array([0]), 1, axis=0)):
        with pytest.raises(ValueError, match="inplace=False"):
            fn()
    with pytest.raises(NotImplementedError, match="inplace=False"):
        jnp.fill_diagonal(a, 1.0)


def test_piecewise_and_choose_modes():
    x = np.linspace(-2, 2, 9).astype(np.float32)
    got = jnp.piecewise(x, [x < 0, x > 1], [lambda v: -v, lambda v: v * 10, 0.5])
    _close(got, np.piecewise(x, [x < 0, x > 1], [lambda v: -v, lambda v: v * 10, 0.5]))
    choices = [np.arange(4), np.arange(4) * 10, np.arange(4) * 100]
    idx = np.array([0, 4, -2, 1])
    _close(jnp.choose(idx, choices, mode="wrap"), np.choose(idx, choices, mode="wrap"),
           dtype=False)
    _close(jnp.choose(idx, choices, mode="clip"), np.choose(idx, choices, mode="clip"),
           dtype=False)
    with pytest.raises(ValueError, match="invalid entry"):
        jnp.choose(idx, choices)


def test_sized_set_operations_match_jax():
    jjnp = _jax_numpy()
    for name in ("union1d", "intersect1d", "setdiff1d", "setxor1d"):
        for size in (2, 6, 12):
            for fill in (None, -1):
                got = getattr(jnp, name)(A1, A2, size=size, fill_value=fill)
                want = getattr(jjnp, name)(A1, A2, size=size, fill_value=fill)
                _close(got, want, label=f"{name} size={size} fill={fill}")
    got = jnp.intersect1d(A1, A2, return_indices=True)
    _close(got, jjnp.intersect1d(A1, A2, return_indices=True))
    got = jnp.intersect1d(A1, A2, return_indices=True, size=4)
    _close(got, jjnp.intersect1d(A1, A2, return_indices=True, size=4))


def test_set_operations_values_match_numpy():
    _close(jnp.intersect1d(A1, A2, return_indices=True),
           np.intersect1d(A1, A2, return_indices=True), dtype=False)
    _close(jnp.setxor1d(A1, A2), np.setxor1d(A1, A2), dtype=False)
    out = tp.jit(lambda a, b: jnp.setxor1d(a, b, size=5, fill_value=0))(A1, A2)
    _close(out, np.int32([4, 5, 7, 8, 9]), dtype=False)


def test_roots_and_poly_of_a_matrix():
    _close(np.sort_complex(np.asarray(jnp.roots(np.float32([1, -3, 2])))),
           np.complex64([1, 2]))
    _close(jnp.roots(np.float32([0, 1, -3, 2, 0])).shape, (3,), dtype=False)
    m = np.float32([[2, 0], [0, 3]])
    _close(jnp.poly(m), np.poly(m), dtype=False)
    assert np.asarray(jnp.poly(m)).dtype == np.complex64  # JAX's: through the eigenvalues
    _close(tp.jit(jnp.poly)(m), np.poly(m), dtype=False)
    with pytest.raises(ValueError, match="concrete"):
        tp.jit(jnp.roots)(np.float32([1, -3, 2]))
    # without strip_zeros the coefficients may be traced (JAX's): a NaN per leading zero
    traced = tp.jit(lambda p: jnp.roots(p, strip_zeros=False))
    got = np.asarray(traced(np.float32([0, 1, -3, 2])))
    _close(np.sort_complex(got[:2]), np.complex64([1, 2]))
    assert np.isnan(got[2])
    # and differentiated: d(root)/d(coefficients) of x^2 - 3x + 2, against finite differences
    largest = lambda p: jnp.max(jnp.real(jnp.roots(p, strip_zeros=False)))  # noqa: E731
    p0 = np.float32([1, -3, 2])
    eps = 1e-3
    fd = [(float(largest(p0 + eps * e)) - float(largest(p0 - eps * e))) / (2 * eps)
          for e in np.eye(3, dtype=np.float32)]
    np.testing.assert_allclose(np.asarray(tp.grad(largest)(p0)), fd, rtol=2e-2, atol=2e-2)


def test_vectorize_signature_and_excluded():
    x = jnp.asarray(X)
    _close(jnp.vectorize(_add)(x, 1.0), X + 1)

    def matvec(m, v):
        return m @ v

    got = jnp.vectorize(matvec, signature="(n,k),(k)->(n)")(np.ones((4, 2, 3), np.float32),
                                                           V[:3])
    assert got.shape == (4, 2)

    def scaled(a, n, *, scale):
        return a * n * scale

    _close(jnp.vectorize(scaled, excluded={1, "scale"})(x, 3, scale=2.0), X * 6)
    _close(tp.jit(lambda a: jnp.vectorize(_add)(a, a))(x), 2 * X)
    with pytest.raises(ValueError, match="valid gufunc signature"):
        jnp.vectorize(_add, signature="(n)->")


def test_frompyfunc_ufunc_methods():
    add = jnp.frompyfunc(_add, 2, 1, identity=0)
    assert isinstance(add, jnp.ufunc) and add.nin == 2 and add.nout == 1
    _close(add(X, 1.0), X + 1)
    _close(add.outer(np.arange(2), np.arange(3)), np.add.outer(np.arange(2), np.arange(3)),
           dtype=False)
    _close(add.reduce(X, axis=1), X.sum(1), rtol=1e-5)
    _close(add.accumulate(X, axis=1), np.cumsum(X, 1), rtol=1e-5)


def test_printing_and_buffers():
    assert jnp.array_str(jnp.arange(3.0)) == "[0. 1. 2.]"
    with jnp.printoptions(precision=2):
        assert jnp.get_printoptions()["precision"] == 2
    with pytest.raises(NotImplementedError):
        jnp.fromiter(range(3), float)
    _close(jnp.from_dlpack(np.arange(3.0)), np.arange(3.0), dtype=False)


def test_einsum_path_returns_a_contraction_order():
    path, report = jnp.einsum_path("ij,jk,kl->il", np.ones((2, 3)), np.ones((3, 4)),
                                   np.ones((4, 5)))
    assert len(path) == 2 and all(isinstance(step, tuple) for step in path)
    assert "Complete contraction" in report


# --- bad input -------------------------------------------------------------------------------

BAD = [
    (TypeError, lambda: jnp.gcd(np.float32([1.5]), 2)),
    (TypeError, lambda: jnp.fabs(np.complex64([1j]))),
    (TypeError, lambda: jnp.frexp(np.complex64([1j]))),
    (ValueError, lambda: jnp.ldexp(np.float32([1.0]), np.float32([2.0]))),
    (ValueError, lambda: jnp.i0(np.complex64([1j]))),
    (ValueError, lambda: jnp.matrix_transpose(np.ones(3))),
    (ValueError, lambda: jnp.unstack(np.float32(1.0))),
    (ValueError, lambda: jnp.diff(np.float32(1.0))),
    (ValueError, lambda: jnp.diff(V, n=-1)),
    (ValueError, lambda: jnp.gradient(np.float32([1.0]))),
    (ValueError, lambda: jnp.cross(np.ones(4), np.ones(3))),
    (ValueError, lambda: jnp.interp(XS, XP, FP, left="nope")),
    (ValueError, lambda: jnp.interp(XS, XP, FP[:2])),
    (ValueError, lambda: jnp.meshgrid(np.ones((2, 2)))),
    (ValueError, lambda: jnp.meshgrid(np.ones(2), indexing="xx")),
    (ValueError, lambda: jnp.ravel_multi_index((np.array([5]),), (3,))),
    (ValueError, lambda: jnp.ravel_multi_index((np.array([1]),), (3,), mode="bad")),
    (TypeError, lambda: jnp.unravel_index(np.float32([1.0]), (3,))),
    (ValueError, lambda: jnp.r_["bad", [1]]),
    (ValueError, lambda: jnp.select([X > 0], [X, X])),
    (ValueError, lambda: jnp.piecewise(X, [X > 0], [1, 2, 3])),
    (ValueError, lambda: jnp.choose(np.float32([0.0]), [X])),
    (ValueError, lambda: jnp.compress(np.ones((2, 2)), X)),
    (ValueError, lambda: jnp.insert(X, np.ones((2, 2), np.int32), 0)),
    (ValueError, lambda: jnp.delete(X, np.float32([1.0]))),
    (ValueError, lambda: jnp.block([])),
    (ValueError, lambda: jnp.block(([1], [2]))),
    (ValueError, lambda: jnp.fill_diagonal(np.ones(3), 1.0, inplace=False)),
    (TypeError, lambda: jnp.packbits(np.float32([1.0]))),
    (TypeError, lambda: jnp.unpackbits(np.int32([1]))),
    (ValueError, lambda: jnp.packbits(np.int32([1]), bitorder="middle")),
    (ValueError, lambda: jnp.isin(X, X, method="fast")),
    (ValueError, lambda: jnp.polyder(V, -1)),
    (ValueError, lambda: jnp.polyint(V, 2, k=np.float32([1.0, 2.0, 3.0]))),
    (ValueError, lambda: jnp.polyfit(V, V, -1)),
    (TypeError, lambda: jnp.polyfit(X, X, 1)),
    (ValueError, lambda: jnp.vander(X)),
    (ValueError, lambda: jnp.cov(np.ones((2, 2, 2)))),
    (TypeError, lambda: jnp.cov(X, fweights=[0.5, 1.0, 1.0, 1.0])),
    (ValueError, lambda: jnp.histogramdd(SAMPLE, bins=[2, 3, 4])),
    (ValueError, lambda: jnp.histogramdd(SAMPLE, weights=np.ones(3))),
    (ValueError, lambda: jnp.rollaxis(X, 0, 5)),
    (ValueError, lambda: jnp.resize(X, (-1, 2))),
    (ValueError, lambda: jnp.unwrap(np.complex64([1j]))),
    (TypeError, lambda: jnp.vectorize(_add, excluded={1.5})),
    (ValueError, lambda: jnp.apply_over_axes(lambda a, axis: a[None], X, [0])),
    (ValueError, lambda: tp.jit(lambda a: jnp.setdiff1d(a, A2))(A1)),
]


@pytest.mark.parametrize("error,call", BAD, ids=[str(i) for i in range(len(BAD))])
def test_bad_input_is_a_clear_error(error, call):
    with pytest.raises(error):
        call()


@pytest.mark.parametrize("name, make", [
    ("cross", lambda r: (r.normal(size=(2, 3, 3)), r.normal(size=(2, 3, 3)))),
    ("diagonal", lambda r: (r.normal(size=(2, 3, 4)),)),
    ("matrix_transpose", lambda r: (r.normal(size=(2, 3, 4)),)),
    ("multi_dot", lambda r: ([r.normal(size=3), r.normal(size=(3, 4)), r.normal(size=(4, 2))],)),
    ("tensorinv", lambda r: (r.normal(size=(4, 6, 8, 3)),)),
    ("tensorsolve", lambda r: (r.normal(size=(6, 4, 2, 3, 4)), r.normal(size=(6, 4)))),
])
def test_small_linalg_functions_match_numpy(name, make):
    args = tp.tree_util.tree_map(lambda a: np.asarray(a, np.float32),
                                  make(np.random.default_rng(0)))
    want = getattr(np.linalg, name)(*args) if name not in ("diagonal", "matrix_transpose") \
        else {"diagonal": lambda x: np.diagonal(x, axis1=-2, axis2=-1),
              "matrix_transpose": lambda x: np.swapaxes(x, -1, -2)}[name](*args)
    got = getattr(jnp.linalg, name)(*args)
    np.testing.assert_allclose(np.asarray(got), want, rtol=2e-4, atol=2e-5)
    jitted = tp.jit(lambda *a: getattr(jnp.linalg, name)(*a))(*args)
    np.testing.assert_allclose(np.asarray(jitted), want, rtol=2e-4, atol=2e-5)


def test_small_linalg_functions_refuse_bad_shapes():
    with pytest.raises(ValueError, match="size 3 along axis"):
        jnp.linalg.cross(np.ones(2), np.ones(2))
    with pytest.raises(ValueError, match="must be equal"):
        jnp.linalg.tensorinv(np.ones((2, 3)), ind=1)
    with pytest.raises(ValueError, match="at least 2 arrays"):
        jnp.linalg.multi_dot([np.ones((2, 2))])
