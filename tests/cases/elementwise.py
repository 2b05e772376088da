"""Cases for elementwise primitives (elementwise.py and conversions.py)."""

import numpy as np

import transpiler.numpy as jnp
from transpiler import lax
from tests.cases import Case, bools, floats, ints, positives

x, y = floats(3, 4), floats(3, 4, seed=1)
row = floats(4, seed=2)
p = positives(3, 4)
i, j = ints(3, 4), ints(3, 4, seed=1, low=1)
b, c = bools(3, 4), bools(3, 4, seed=1)
u = ints(5, dtype=np.uint32, low=0, high=1000)
h = floats(6, dtype=np.float16)
bf = floats(6).astype(jnp.bfloat16)

UNARY = [  # (primitive, jnp function, numpy reference, input)
    ("exp", jnp.exp, np.exp, x), ("log", jnp.log, np.log, p), ("log1p", jnp.log1p, np.log1p, p),
    ("expm1", jnp.expm1, np.expm1, x), ("sqrt", jnp.sqrt, np.sqrt, p),
    ("rsqrt", lambda a: 1 / jnp.sqrt(a), lambda a: 1 / np.sqrt(a), p),
    ("cbrt", jnp.cbrt, np.cbrt, x), ("sin", jnp.sin, np.sin, x), ("cos", jnp.cos, np.cos, x),
    ("tan", jnp.tan, np.tan, x), ("tanh", jnp.tanh, np.tanh, x),
    ("arctan", jnp.arctan, np.arctan, x), ("floor", jnp.floor, np.floor, x),
    ("ceil", jnp.ceil, np.ceil, x), ("round", jnp.round, np.round, x * 3),
    ("abs", jnp.abs, np.abs, x), ("abs", jnp.abs, np.abs, i), ("negative", jnp.negative, np.negative, i),
    ("sign", jnp.sign, np.sign, x), ("sign", jnp.sign, np.sign, i),
    ("isnan", jnp.isnan, np.isnan, np.array([1.0, np.nan, np.inf], np.float32)),
    ("isfinite", jnp.isfinite, np.isfinite, np.array([1.0, np.nan, -np.inf], np.float32)),
    ("logical_not", jnp.logical_not, np.logical_not, b), ("invert", jnp.invert, np.invert, i),
    ("exp", jnp.exp, lambda a: np.exp(a.astype(np.float32)), i),  # ints promote to float
    ("sin", jnp.sin, lambda a: np.sin(a.astype(np.float32)), h),
    ("tanh", jnp.tanh, lambda a: np.tanh(a.astype(np.float32)), bf),
]
BINARY = [
    ("add", jnp.add, np.add, x, y), ("add", jnp.add, np.add, x, row),
    ("add", jnp.add, np.add, i, j), ("subtract", jnp.subtract, np.subtract, x, row),
    ("multiply", jnp.multiply, np.multiply, i, j), ("true_divide", jnp.divide, np.divide, x, p),
    ("true_divide", jnp.divide, np.divide, i, j),
    ("floor_divide", jnp.floor_divide, np.floor_divide, i, j),
    ("floor_divide", jnp.floor_divide, np.floor_divide, x, p),
    ("floor_divide", jnp.floor_divide, lambda a, b: np.zeros_like(a), i, np.zeros_like(i)),
    ("remainder", jnp.remainder, np.remainder, i, j), ("remainder", jnp.remainder, np.remainder, x, p),
    ("remainder", jnp.remainder, np.remainder, -x, p),
    ("power", jnp.power, np.power, p, y), ("power", jnp.power, np.power, i, np.abs(j)),
    ("maximum", jnp.maximum, np.maximum, x, y), ("minimum", jnp.minimum, np.minimum, i, j),
    ("arctan2", jnp.arctan2, np.arctan2, x, y),
    ("equal", jnp.equal, np.equal, i, j), ("not_equal", jnp.not_equal, np.not_equal, i, j),
    ("less", jnp.less, np.less, x, y), ("less_equal", jnp.less_equal, np.less_equal, i, j),
    ("greater", jnp.greater, np.greater, x, row), ("greater_equal", jnp.greater_equal, np.greater_equal, x, y),
    ("logical_and", jnp.logical_and, np.logical_and, b, c), ("logical_or", jnp.logical_or, np.logical_or, b, c),
    ("logical_xor", jnp.logical_xor, np.logical_xor, b, c),
    ("bitwise_and", jnp.bitwise_and, np.bitwise_and, i, j), ("bitwise_or", jnp.bitwise_or, np.bitwise_or, u, u // 3),
    ("bitwise_xor", jnp.bitwise_xor, np.bitwise_xor, u, u * 7),
    ("left_shift", jnp.left_shift, np.left_shift, u, np.uint32(3)),
    ("right_shift", jnp.right_shift, np.right_shift, u, np.uint32(2)),
    ("right_shift", jnp.right_shift, np.right_shift, i, np.int32(1)),
]

CASES = [Case(prim, fn, (a,), ref, rtol=1e-5 if np.asarray(a).dtype == np.float32 else 2e-2,
              atol=1e-6 if np.asarray(a).dtype == np.float32 else 2e-2)
         for prim, fn, ref, a in UNARY]
CASES += [Case(prim, fn, (a, b_), ref) for prim, fn, ref, a, b_ in BINARY]
CASES += [
    Case("integer_pow", lambda a: a ** 3, (x,), lambda a: a ** 3),
    Case("integer_pow", lambda a: a ** -2, (p,), lambda a: a ** -2.0, rtol=1e-4),
    Case("integer_pow", jnp.square, (i,), np.square),
    Case("select", jnp.where, (b, x, y), np.where),
    Case("select", lambda c_, a: jnp.where(c_, a, 0.0), (b, row), lambda c_, a: np.where(c_, a, 0.0)),
    Case("convert_element_type", lambda a: a.astype(jnp.int32), (x * 3,), lambda a: a.astype(np.int32)),
    Case("convert_element_type", lambda a: a.astype(bool), (x,), lambda a: a.astype(bool)),
    Case("convert_element_type", lambda a: a.astype(jnp.float16), (x,), lambda a: a.astype(np.float16), rtol=1e-3),
    Case("bitcast_convert_type", lambda a: lax.bitcast_convert_type(a, jnp.uint32), (x,),
         lambda a: a.view(np.uint32)),
    Case("iota", lambda: jnp.arange(7), (), lambda: np.arange(7)),
    Case("iota", lambda: jnp.eye(3, 4, k=1), (), lambda: np.eye(3, 4, k=1)),
    Case("add", lambda a: a + 1.5, (h,), lambda a: a + np.float32(1.5), rtol=2e-3, name="weak scalar keeps f16"),
]
CASES += [
    Case("logistic", lambda a: lax.logistic(a), (x,), lambda a: 1 / (1 + np.exp(-a))),
    Case("reshape", lambda a: a.reshape(4, 3), (x,), lambda a: a.reshape(4, 3)),
    Case("reshape", lambda a: jnp.reshape(a, (-1,)), (i,), lambda a: a.reshape(-1)),
    Case("broadcast_to", lambda a: jnp.broadcast_to(a, (2, 3, 4)), (row,),
         lambda a: np.broadcast_to(a, (2, 3, 4))),
    Case("transpose", lambda a: a.T, (x,), lambda a: a.T),
    Case("transpose", lambda a: jnp.transpose(a[None], (2, 0, 1)) if False else jnp.transpose(a), (i,),
         lambda a: a.T),
]
