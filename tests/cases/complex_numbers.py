"""Cases for complex numbers: the part primitives and the elementwise ops that take them."""

import numpy as np

import transpiler.numpy as jnp
from transpiler import lax
from tests.cases import Case, floats


def complexes(*shape: int, seed: int = 0) -> np.ndarray:
    return (floats(*shape, seed=seed) + 1j * floats(*shape, seed=seed + 7)).astype(np.complex64)


z, w = complexes(3, 4), complexes(4, seed=1)
x, y = floats(3, 4), floats(4, seed=2)

CASES = [
    Case("real", jnp.real, (z,), lambda a: a.real.astype(np.float32)), Case("imag", jnp.imag, (z,), np.imag),
    Case("conj", jnp.conj, (z,), np.conj),
    Case("complex", lax.complex, (x, y), lambda a, b: a + 1j * b),
    Case("abs", jnp.abs, (z,), np.abs), Case("exp", jnp.exp, (z,), np.exp, rtol=1e-5),
    Case("log", jnp.log, (z,), np.log, rtol=1e-5), Case("sqrt", jnp.sqrt, (z,), np.sqrt),
    Case("sin", jnp.sin, (z,), np.sin, rtol=1e-5), Case("tanh", jnp.tanh, (z,), np.tanh, rtol=1e-5),
    Case("multiply", jnp.multiply, (z, w), np.multiply),
    Case("true_divide", jnp.divide, (z, w), np.divide, rtol=1e-5),
    Case("add", lambda a, b: a + b, (z, x), np.add),
    Case("power", jnp.power, (z, w), np.power, rtol=1e-4, atol=1e-5),
    Case("integer_pow", lambda a: a ** 3, (z,), lambda a: a ** 3, rtol=1e-5),
    Case("less", jnp.less, (z, w), np.less), Case("greater_equal", jnp.greater_equal, (z, w),
                                                  np.greater_equal),
    Case("equal", jnp.equal, (z, z[0]), np.equal),
    Case("isnan", jnp.isnan, (np.array([1j, np.nan + 1j, 1 + 1j * np.nan], np.complex64),), np.isnan),
    Case("isfinite", jnp.isfinite, (np.array([1j, np.inf + 1j, 1 + 1j * np.nan], np.complex64),),
         np.isfinite),
    Case("convert_element_type", lambda a: jnp.astype(a, jnp.float32), (z,), lambda a: a.real.astype(np.float32)),
    Case("convert_element_type", lambda a: jnp.astype(a, jnp.complex64), (x,), lambda a: a + 0j),
    Case("convert_element_type", lambda a: jnp.astype(a, bool), (z * (x > 0),), lambda a: a != 0),
    Case("select", lambda c, a: jnp.where(c, a, 2.0), (x > 0, z), lambda c, a: np.where(c, a, 2.0)),
    Case("reduce_sum", lambda a: jnp.sum(a, axis=0), (z,), lambda a: a.sum(0)),
    Case("dot_general", jnp.matmul, (z, w), np.matmul, rtol=1e-5),
    Case("cumsum", lambda a: jnp.cumsum(a, axis=1), (z,), lambda a: np.cumsum(a, 1), rtol=1e-5),
    Case("pad", lambda a: jnp.pad(a, 1), (z,), lambda a: np.pad(a, 1)),
    Case("scatter", lambda a: jnp.asarray(a).at[np.array([0, 2, 0])].add(1j), (z,),
         lambda a: _add_at(a, [0, 2, 0], 1j)),
    Case("gather", lambda a: a[np.array([2, 0])], (z,), lambda a: a[[2, 0]]),
]


def _add_at(a: np.ndarray, rows: list, value: complex) -> np.ndarray:
    out = a.copy()
    np.add.at(out, rows, value)
    return out
