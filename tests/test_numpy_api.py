"""The `transpiler.numpy` surface: names, JAX dtype semantics, eager vs jit on programs."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import transpiler as tp
import transpiler.numpy as jnp

REQUIRED = """array asarray zeros ones zeros_like ones_like full full_like arange linspace eye
where exp log log1p expm1 sqrt abs square sin cos tan tanh arctan arctan2 power sign maximum
minimum clip isnan isfinite floor ceil round sum mean max min prod any all argmax argmin cumsum
var std reshape transpose concatenate stack expand_dims squeeze broadcast_to split tile repeat
pad moveaxis swapaxes flip ravel einsum matmul dot outer tensordot take take_along_axis
logical_and logical_or logical_not allclose astype float32 float16 bfloat16 float64 int32
int64 bool_ pi inf newaxis finfo""".split()


def test_required_names_exist():
    missing = [n for n in REQUIRED if not hasattr(jnp, n)]
    assert not missing, f"transpiler.numpy lacks {missing}"
    assert callable(jnp.linalg.norm)
    assert jnp.newaxis is None and jnp.pi == np.pi and jnp.inf == np.inf
    assert jnp.finfo(jnp.bfloat16).bits == 16


DTYPES = [np.bool_, np.int8, np.uint8, np.int32, np.uint32, np.float16, jnp.bfloat16,
          np.float32]
SCALARS = [True, 3, 2.5]


def test_promotion_matches_jax():
    jax = pytest.importorskip("jax")
    jjnp = jax.numpy
    operands = [("array", d) for d in DTYPES] + [("scalar", s) for s in SCALARS]

    def ours(kind, v):
        return jnp.ones(2, v) if kind == "array" else v

    def theirs(kind, v):
        return jjnp.ones(2, v) if kind == "array" else v

    for (ka, a), (kb, b) in itertools.product(operands, operands):
        if ka == kb == "scalar":
            continue
        got = jnp.add(ours(ka, a), ours(kb, b))
        want = jjnp.add(theirs(ka, a), theirs(kb, b))
        assert got.dtype == want.dtype, f"{a} + {b}: {got.dtype} vs jax {want.dtype}"
        assert got.weak_type == want.weak_type, f"{a} + {b}: weak_type differs"


def test_unary_and_reduction_dtypes_match_jax():
    jax = pytest.importorskip("jax")
    jjnp = jax.numpy
    for dt in [np.bool_, np.int32, np.float16, np.float32]:
        x, y = jnp.ones((2, 3), dt), jjnp.ones((2, 3), dt)
        for name in ["sin", "sqrt", "abs", "sum", "mean", "argmax", "cumsum", "var", "max"]:
            if dt == np.bool_ and name in ("abs",):
                continue
            got, want = getattr(jnp, name)(x), getattr(jjnp, name)(y)
            assert got.dtype == want.dtype, f"{name}({np.dtype(dt)}): {got.dtype} vs {want.dtype}"


def test_eager_arrays_are_immutable_and_isolated_from_user_arrays():
    data = np.arange(4.0, dtype=np.float32)
    x = jnp.asarray(data)
    y = jnp.reshape(data, (2, 2))
    data[0] = 100.0  # the user mutates their NumPy array afterwards
    assert float(x[0]) == 0.0 and float(y[0, 0]) == 0.0
    with pytest.raises(ValueError):
        np.asarray(x)[0] = 5.0
    z = x.at[0].set(7.0)
    assert float(z[0]) == 7.0 and float(x[0]) == 0.0


def test_numpy_interop():
    x = jnp.arange(3.0)
    assert isinstance(np.ones(3, np.float32) + x, tp.Array)  # our __radd__, JAX semantics
    np.testing.assert_allclose(np.sin(x), np.sin(np.arange(3.0)), rtol=1e-6)
    assert repr(jnp.array([1.0, 2.0])) == "Array([1., 2.], dtype=float32)"
    assert float(jnp.sum(x)) == 3.0 and int(jnp.argmax(x)) == 2 and len(x) == 3


def mlp_program(params, x):
    h = x
    for w, b in params[:-1]:
        h = jnp.maximum(h @ w + b, 0.0)
    w, b = params[-1]
    logits = h @ w + b
    logits = logits - jnp.max(logits, axis=-1, keepdims=True)
    return logits - jnp.log(jnp.sum(jnp.exp(logits), axis=-1, keepdims=True))


def mlp_numpy(params, x):
    h = x
    for w, b in params[:-1]:
        h = np.maximum(h @ w + b, 0.0)
    w, b = params[-1]
    logits = h @ w + b
    logits = logits - logits.max(axis=-1, keepdims=True)
    return logits - np.log(np.exp(logits).sum(axis=-1, keepdims=True))


def test_mlp_program_eager_jit_numpy_agree():
    rng = np.random.default_rng(0)
    sizes = [(20, 16), (16, 8), (8, 5)]
    params = [(rng.standard_normal(s).astype(np.float32) / 4, rng.standard_normal(s[1]).astype(np.float32))
              for s in sizes]
    x = rng.standard_normal((6, 20)).astype(np.float32)
    want = mlp_numpy(params, x)
    eager = mlp_program(params, x)
    staged = tp.jit(mlp_program)(params, x)
    np.testing.assert_allclose(eager, want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(staged, want, rtol=1e-5, atol=1e-5)
    assert eager.dtype == staged.dtype == np.float32
