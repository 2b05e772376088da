"""Cases for the indexing primitives (dynamic_slice, dynamic_update_slice, gather, scatter)."""

import numpy as np

import transpiler.numpy as jnp
from transpiler.primitives import indexing as ip
from tests.cases import Case, bools, floats, ints

x = floats(4, 5)
x3 = floats(2, 3, 4, seed=1)
i = ints(4, 5, low=-50, high=50)
b = bools(4, 5)
h = floats(6, dtype=np.float16)
bf = floats(6).astype(jnp.bfloat16)
s0 = np.float32(2.5)  # 0-d operand for the composite paths
J = jnp.asarray  # NumPy args -> Arrays, so x[...] and x.at[...] run our code eagerly


def np_scatter(operand, indices, updates, mode):
    """NumPy reference: drop out-of-range rows, then set (last wins) or ufunc.at."""
    k = indices.shape[-1]
    out = operand.copy()
    flat = indices.reshape(-1, k)
    vals = updates.reshape((-1,) + operand.shape[k:])
    ok = np.all((flat >= 0) & (flat < np.array(operand.shape[:k])), axis=1)
    where = tuple(flat[ok].T)
    ufunc = {"add": np.add, "multiply": np.multiply, "min": np.minimum, "max": np.maximum}
    if mode == "set":
        out[where] = vals[ok]
    else:
        ufunc[mode].at(out, where, vals[ok])
    return out


def np_gather(operand, indices):
    k = indices.shape[-1]
    clamped = np.clip(indices, 0, np.array(operand.shape[:k]) - 1)
    return operand[tuple(np.moveaxis(clamped, -1, 0))]


def np_dynamic_slice(operand, *starts, sizes):
    begin = [int(np.clip(s, 0, d - n)) for s, d, n in zip(starts, operand.shape, sizes)]
    return operand[tuple(slice(b_, b_ + n) for b_, n in zip(begin, sizes))]


def np_dynamic_update_slice(operand, update, *starts):
    out = operand.copy()
    begin = [int(np.clip(s, 0, d - n)) for s, d, n in zip(starts, operand.shape, update.shape)]
    out[tuple(slice(b_, b_ + n) for b_, n in zip(begin, update.shape))] = update
    return out


rows = np.array([[1], [3], [-1], [9], [1]], np.int32)           # out of range: -1, 9
pairs = np.array([[[0, 4], [3, 0]], [[2, 2], [5, -3]]], np.int32)  # (2, 2, 2)
updates5 = floats(5, 5, seed=3)
dup = np.array([[2, 1], [2, 1], [0, 0], [2, 1]], np.int32)       # duplicates accumulate


def _ds(*sizes):
    return lambda a, *s: ip.dynamic_slice(a, *s, slice_sizes=sizes)


CASES = [
    # dynamic_slice: starts are clamped so the window fits
    Case("dynamic_slice", _ds(2, 3), (x, np.int32(1), np.int32(1)),
         lambda a, *s: np_dynamic_slice(a, *s, sizes=(2, 3))),
    Case("dynamic_slice", _ds(2, 3), (x, np.int32(7), np.int32(-4)),
         lambda a, *s: np_dynamic_slice(a, *s, sizes=(2, 3)), name="clamped starts"),
    Case("dynamic_slice", _ds(1, 2, 4), (x3, np.int32(1), np.int32(2), np.int32(0)),
         lambda a, *s: np_dynamic_slice(a, *s, sizes=(1, 2, 4))),
    Case("dynamic_slice", _ds(2, 1), (b, np.int32(3), np.int32(4)),
         lambda a, *s: np_dynamic_slice(a, *s, sizes=(2, 1))),
    Case("dynamic_slice", lambda a, k: J(a)[k], (i, np.int32(-1)), lambda a, k: a[k],
         name="x[traced int]"),
    Case("dynamic_slice", lambda a, k: J(a)[1:, k, None], (x, np.int32(2)),
         lambda a, k: a[1:, k, None], name="x[1:, traced, None]"),
    # dynamic_update_slice
    Case("dynamic_update_slice", ip.dynamic_update_slice,
         (x, np.ones((2, 2), np.float32), np.int32(1), np.int32(2)), np_dynamic_update_slice),
    Case("dynamic_update_slice", ip.dynamic_update_slice,
         (x, np.ones((2, 3), np.float32), np.int32(9), np.int32(-1)), np_dynamic_update_slice,
         name="clamped starts"),
    Case("dynamic_update_slice", ip.dynamic_update_slice,
         (i, np.zeros((1, 5), np.int32), np.int32(2), np.int32(0)), np_dynamic_update_slice),
    # gather: leading-axes advanced indexing, indices clamped
    Case("gather", ip.gather, (x, rows), np_gather),
    Case("gather", ip.gather, (x, pairs), np_gather),
    Case("gather", ip.gather, (x3, np.array([[1, 2, 3], [0, 0, 9]], np.int32)), np_gather),
    Case("gather", ip.gather, (b, pairs), np_gather),
    Case("gather", ip.gather, (h, np.array([[5], [0], [2]], np.int32)), np_gather),
    Case("gather", lambda a: J(a)[[0, 2, -1]], (x,), lambda a: a[[0, 2, -1]], name="x[list]"),
    Case("gather", lambda a: J(a)[:, [1, 0], None], (x3,), lambda a: a[:, [1, 0], None],
         name="x[:, list, None]"),
    Case("gather", lambda a: J(a)[[0, 1], :, [2, 3]], (x3,), lambda a: a[[0, 1], :, [2, 3]],
         name="non-adjacent advanced"),
    Case("gather", lambda a: J(a)[np.array([1, 0, 1, 1], bool)], (x,),
         lambda a: a[np.array([1, 0, 1, 1], bool)], name="concrete mask"),
    Case("gather", lambda a: jnp.diagonal(a, 1), (x,), lambda a: np.diagonal(a, 1)),
    Case("gather", lambda a: jnp.take(a, np.array([3, -1, 0]), axis=1), (i,),
         lambda a: np.take(a, [3, -1, 0], axis=1)),
    # scatter: every combiner; out-of-range rows are dropped
    Case("scatter", lambda a, u: ip.scatter(a, rows, u, mode="set"), (x, updates5),
         lambda a, u: np_scatter(a, rows, u, "set"), name="set (duplicate rows equal)"),
    Case("scatter", lambda a, u: ip.scatter(a, rows, u, mode="add"), (x, updates5),
         lambda a, u: np_scatter(a, rows, u, "add"), name="add rows"),
    Case("scatter", lambda a: ip.scatter(a, dup, np.arange(4, dtype=np.float32), mode="add"),
         (x,), lambda a: np_scatter(a, dup, np.arange(4, dtype=np.float32), "add"),
         name="add duplicates"),
    Case("scatter", lambda a: ip.scatter(a, dup, np.array([2, 3, 4, -1], np.int32),
                                         mode="multiply"),
         (i,), lambda a: np_scatter(a, dup, np.array([2, 3, 4, -1], np.int32), "multiply")),
    Case("scatter", lambda a: ip.scatter(a, pairs, np.full((2, 2), -9.0, np.float32),
                                         mode="min"),
         (x,), lambda a: np_scatter(a, pairs, np.full((2, 2), -9.0, np.float32), "min")),
    Case("scatter", lambda a: ip.scatter(a, pairs, np.full((2, 2), 99, np.int32), mode="max"),
         (i,), lambda a: np_scatter(a, pairs, np.full((2, 2), 99, np.int32), "max")),
    Case("scatter", lambda a: ip.scatter(a, pairs, np.array([[True, False], [True, True]]),
                                         mode="add"),
         (b,), lambda a: np_scatter(a, pairs, np.array([[True, False], [True, True]]), "add"),
         name="bool add is or"),
    Case("scatter", lambda a: ip.scatter(a, np.array([[1], [1], [4]], np.int32),
                                         np.ones(3, a.dtype), mode="add"),
         (bf,), lambda a: np_scatter(a.astype(np.float32), np.array([[1], [1], [4]]),
                                     np.ones(3, np.float32), "add"), rtol=1e-2, atol=1e-2),
    Case("scatter", lambda a: J(a).at[1:3, ::2].add(1.0), (x,),
         lambda a: np_scatter(a, np.array([[r, c] for r in (1, 2) for c in (0, 2, 4)]),
                              np.ones(6, np.float32), "add"), name=".at[slices].add"),
    Case("scatter", lambda a: J(a).at[[0, 0, 5, -1]].add(np.float16(1)), (h,),
         lambda a: np_scatter(a, np.array([[0], [0], [5], [5]]), np.ones(4, np.float16), "add"),
         rtol=1e-3, name=".at[list].add f16"),
    Case("add", lambda a: J(a).at[()].add(1.0), (s0,), lambda a: a + np.float32(1),
         name="0-d .at[()]"),
]
