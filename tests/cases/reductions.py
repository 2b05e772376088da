"""Cases for the reduction primitives (transpiler/primitives/reductions.py) and their
`transpiler.numpy` composites: shapes 0-d, (7,), (3, 4, 5); axes None, int, negative, tuple;
keepdims; float32, int32, bool, float16; NaN; one large full reduction (partial-sum path)."""

import numpy as np

import transpiler.numpy as jnp
from tests.cases import Case, bools, floats, ints
from transpiler.primitives import reductions as red

x = floats(3, 4, 5)
v = floats(7, seed=1)
s = np.float32(1.5)
i = ints(3, 4, 5)
b = bools(3, 4, 5)
b_all = np.ones((2, 3), bool)
h = floats(3, 4, 5, dtype=np.float16)
one = floats(1, 4, seed=2)                       # a size-1 reduced axis
big = floats(300_000, low=0.0, high=1.0, seed=3)  # full reductions split into partials
odd = floats(70_001, seed=4)                     # a size with no (16, 8, 4, 2) split: padded
ties = np.array([[1, 3, 3, 0], [2, 2, -1, 2]], np.int32)
nan = np.array([[1.0, np.nan, 5.0, np.nan], [4.0, 2.0, 4.0, -1.0]], np.float32)
long_ = floats(2, 300, seed=5)                   # cumulative along a long axis
u = ints(2, 300, dtype=np.uint32, low=0, high=1000, seed=6)  # unsigned scans: bitcast / doubling

F16 = {"rtol": 2e-2, "atol": 2e-2}
I32 = np.int32


def _sum(a, axis=None, keepdims=False, dtype=None):
    """NumPy's sum with JAX's dtypes: bools and ints accumulate in int32."""
    a = np.asarray(a)
    target = dtype or (I32 if a.dtype.kind in "bi" else a.dtype)
    work = np.float32 if target == np.float16 else target
    return np.sum(a.astype(work), axis=axis, keepdims=keepdims).astype(target)


CASES = [
    # reduce_sum
    Case("reduce_sum", jnp.sum, (x,), np.sum),
    Case("reduce_sum", lambda a: jnp.sum(a, axis=1), (x,), lambda a: a.sum(1)),
    Case("reduce_sum", lambda a: jnp.sum(a, axis=-1, keepdims=True), (x,),
         lambda a: a.sum(-1, keepdims=True)),
    Case("reduce_sum", lambda a: jnp.sum(a, axis=(0, 2)), (i,), lambda a: _sum(a, (0, 2))),
    Case("reduce_sum", lambda a: jnp.sum(a, axis=0), (b,), lambda a: _sum(a, 0)),
    Case("reduce_sum", jnp.sum, (s,), np.sum, name="0-d"),
    Case("reduce_sum", jnp.sum, (v,), np.sum),
    Case("reduce_sum", lambda a: jnp.sum(a, axis=0), (one,), lambda a: a.sum(0)),
    Case("reduce_sum", lambda a: jnp.sum(a, axis=(1, 2)), (h,), lambda a: _sum(a, (1, 2)), **F16),
    Case("reduce_sum", lambda a: jnp.asarray(a).sum(axis=-2), (x,), lambda a: a.sum(-2), name="method"),
    Case("reduce_sum", lambda a: jnp.sum(a, axis=1, where=a > 0, initial=1.0), (x,),
         lambda a: np.sum(a, 1, where=a > 0, initial=1.0), name="where+initial"),
    Case("reduce_sum", jnp.sum, (big,), lambda a: np.sum(a, dtype=np.float64), rtol=1e-5,
         name="large full sum (partials)"),
    Case("reduce_sum", jnp.sum, (odd,), lambda a: np.sum(a, dtype=np.float64), rtol=1e-4,
         atol=1e-3, name="large full sum (padded partials)"),
    Case("reduce_sum", jnp.count_nonzero, (i,), lambda a: np.count_nonzero(a).astype(I32)),
    Case("reduce_sum", jnp.nansum, (nan,), np.nansum),
    # reduce_prod
    Case("reduce_prod", lambda a: jnp.prod(a, axis=0), (x,), lambda a: a.prod(0)),
    Case("reduce_prod", lambda a: jnp.prod(a, axis=-1), (i,), lambda a: a.prod(-1).astype(I32)),
    Case("reduce_prod", jnp.prod, (s,), np.prod),
    # reduce_max / reduce_min
    Case("reduce_max", jnp.max, (x,), np.max),
    Case("reduce_max", lambda a: jnp.max(a, axis=(0, 1), keepdims=True), (i,),
         lambda a: a.max((0, 1), keepdims=True)),
    Case("reduce_max", lambda a: jnp.max(a, axis=1), (nan,), lambda a: np.max(a, 1),
         name="NaN propagates"),
    Case("reduce_max", lambda a: jnp.max(a, axis=-1), (b,), lambda a: a.max(-1)),
    Case("reduce_max", lambda a: jnp.amax(a, axis=0), (h,), lambda a: a.max(0)),
    Case("reduce_max", jnp.max, (big,), np.max, name="large full max"),
    Case("reduce_max", lambda a: jnp.max(a, axis=0, where=a > 0, initial=-1.0), (x,),
         lambda a: np.max(a, 0, where=a > 0, initial=-1.0), name="where+initial"),
    Case("reduce_max", lambda a: jnp.nanmax(a, axis=1), (nan,), lambda a: np.nanmax(a, 1)),
    Case("reduce_min", lambda a: jnp.min(a, axis=-1), (x,), lambda a: a.min(-1)),
    Case("reduce_min", jnp.min, (i,), np.min),
    Case("reduce_min", lambda a: jnp.min(a, axis=(0, 2)), (b,), lambda a: a.min((0, 2))),
    Case("reduce_min", jnp.min, (s,), np.min),
    Case("reduce_min", lambda a: jnp.ptp(a, axis=1), (x,), lambda a: np.ptp(a, 1)),
    Case("reduce_min", lambda a: jnp.nanmin(a, axis=0), (nan,), lambda a: np.nanmin(a, 0)),
    # reduce_and / reduce_or
    Case("reduce_and", jnp.all, (b,), np.all),
    Case("reduce_and", lambda a: jnp.all(a, axis=1), (b_all,), lambda a: a.all(1)),
    Case("reduce_and", lambda a: jnp.asarray(a).all(axis=-1), (i,), lambda a: a.all(-1), name="int method"),
    Case("reduce_or", lambda a: jnp.any(a, axis=(0, 1)), (b,), lambda a: a.any((0, 1))),
    Case("reduce_or", lambda a: jnp.any(a, keepdims=True), (x,), lambda a: a.any(keepdims=True)),
    # argmax / argmin
    Case("argmax", jnp.argmax, (x,), lambda a: np.argmax(a).astype(I32)),
    Case("argmax", lambda a: jnp.argmax(a, axis=-1), (ties,),
         lambda a: np.argmax(a, -1).astype(I32), name="ties: first index"),
    Case("argmax", lambda a: jnp.argmax(a, axis=1), (nan,),
         lambda a: np.argmax(a, 1).astype(I32), name="first NaN wins"),
    Case("argmax", lambda a: jnp.argmax(a, axis=0, keepdims=True), (b,),
         lambda a: np.argmax(a, 0, keepdims=True).astype(I32)),
    Case("argmax", lambda a: jnp.asarray(a).argmax(axis=1), (h,), lambda a: np.argmax(a, 1).astype(I32)),
    Case("argmax", jnp.argmax, (v,), lambda a: np.argmax(a).astype(I32)),
    Case("argmin", lambda a: jnp.argmin(a, axis=1), (x,), lambda a: np.argmin(a, 1).astype(I32)),
    Case("argmin", lambda a: jnp.argmin(a, axis=0), (ties,),
         lambda a: np.argmin(a, 0).astype(I32)),
    Case("argmin", jnp.argmin, (nan,), lambda a: np.argmin(a).astype(I32), name="NaN"),
    Case("argmin", jnp.argmin, (s,), lambda a: np.argmin(a).astype(I32), name="0-d"),
    # cumulative
    Case("cumsum", jnp.cumsum, (x,), np.cumsum),
    Case("cumsum", lambda a: jnp.cumsum(a, axis=1), (i,), lambda a: np.cumsum(a, 1).astype(I32)),
    Case("cumsum", lambda a: jnp.cumsum(a, axis=-1), (b,), lambda a: np.cumsum(a, -1).astype(I32)),
    Case("cumsum", lambda a: jnp.cumsum(a, axis=0), (one,), lambda a: np.cumsum(a, 0),
         name="length-1 axis"),
    Case("cumsum", lambda a: jnp.cumsum(a, axis=1), (long_,), lambda a: np.cumsum(a, 1),
         rtol=1e-4, atol=1e-4, name="long axis"),
    Case("cumsum", jnp.cumsum, (s,), lambda a: np.cumsum(a), name="0-d"),
    Case("cumsum", lambda a: red.cumsum(a, axis=0, reverse=True), (v,),
         lambda a: np.cumsum(a[::-1])[::-1], name="reverse"),
    Case("cumsum", lambda a: red.cumsum(a, axis=1, reverse=True), (long_,),
         lambda a: np.cumsum(a[:, ::-1], 1)[:, ::-1], rtol=1e-4, atol=1e-4, name="long reverse"),
    Case("cumsum", lambda a: jnp.cumsum(a, axis=2), (h,),
         lambda a: np.cumsum(a.astype(np.float32), 2), **F16),
    Case("cumprod", lambda a: jnp.cumprod(a, axis=0), (x,), lambda a: np.cumprod(a, 0)),
    Case("cumprod", lambda a: jnp.cumprod(a, axis=-1), (i,), lambda a: np.cumprod(a, -1)),
    Case("cumprod", lambda a: red.cumprod(a, axis=1, reverse=True), (long_ * 0 + 1.001,),
         lambda a: np.cumprod(a[:, ::-1], 1)[:, ::-1], rtol=1e-4, name="long reverse"),
    Case("cummax", lambda a: red.cummax(a, axis=2, reverse=False), (x,),
         lambda a: np.maximum.accumulate(a, 2)),
    Case("cummax", lambda a: red.cummax(a, axis=0, reverse=True), (b,),
         lambda a: np.maximum.accumulate(a[::-1], 0)[::-1]),
    Case("cummax", lambda a: red.cummax(a, axis=1, reverse=False), (long_,),
         lambda a: np.maximum.accumulate(a, 1), name="long axis"),
    Case("cummax", lambda a: red.cummax(a, axis=1, reverse=False), (u,),
         lambda a: np.maximum.accumulate(a, 1), name="unsigned: doubling scan"),
    Case("cummin", lambda a: red.cummin(a, axis=1, reverse=True), (u,),
         lambda a: np.minimum.accumulate(a[:, ::-1], 1)[:, ::-1], name="unsigned reverse"),
    Case("cummin", lambda a: red.cummin(a, axis=0, reverse=False), (u[:1],),
         lambda a: a, name="unsigned length-1"),
    Case("cumsum", lambda a: jnp.cumsum(a, axis=1), (u,),
         lambda a: np.cumsum(a, 1).astype(np.uint32), name="unsigned sum via bitcast"),
    Case("cummin", lambda a: red.cummin(a, axis=1, reverse=False), (i,),
         lambda a: np.minimum.accumulate(a, 1)),
    Case("cummin", lambda a: red.cummin(a, axis=0, reverse=True), (v,),
         lambda a: np.minimum.accumulate(a[::-1])[::-1]),
    # composites built from the primitives above
    Case("reduce_sum", lambda a: jnp.mean(a, axis=(0, 2)), (x,), lambda a: a.mean((0, 2))),
    Case("reduce_sum", lambda a: jnp.asarray(a).mean(axis=-1, keepdims=True), (i,),
         lambda a: a.mean(-1, keepdims=True).astype(np.float32)),
    Case("reduce_sum", lambda a: jnp.mean(a, 0), (h,), lambda a: a.astype(np.float32).mean(0),
         **F16),
    Case("reduce_sum", jnp.mean, (big,), lambda a: a.astype(np.float64).mean(), rtol=1e-5),
    Case("reduce_sum", lambda a: jnp.mean(a, axis=1, where=a > -1.0), (x,),
         lambda a: np.mean(a, 1, where=a > -1.0)),
    Case("reduce_sum", lambda a: jnp.var(a, axis=1), (x,), lambda a: a.var(1), rtol=1e-4),
    Case("reduce_sum", lambda a: jnp.std(a, ddof=1), (i,),
         lambda a: a.std(ddof=1).astype(np.float32), rtol=1e-4),
    Case("reduce_sum", lambda a, w: jnp.average(a, axis=-1, weights=w), (x, floats(5, low=0.1)),
         lambda a, w: np.average(a, -1, w), rtol=1e-4),
    Case("reduce_sum", lambda a: jnp.nanmean(a, axis=1), (nan,), lambda a: np.nanmean(a, 1)),
]
