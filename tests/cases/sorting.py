"""Cases for the sorting primitives (transpiler/primitives/sorting.py) through their
`transpiler.numpy` functions: short axes (IREE's own sort) and long ones (the bitonic
network, padded when not a power of two), any axis, descending, ties, NaN and -0.0, ints,
bools and several keys."""

import numpy as np

import transpiler.numpy as jnp
from tests.cases import Case, bools, floats, ints

x = floats(3, 4, 5)
long_ = floats(2, 300, seed=1)                      # bitonic, padded to 512
ties = ints(4, 200, low=0, high=5, seed=2)          # bitonic with many ties: stability
i8 = ints(130, dtype=np.int8, seed=3)
b = bools(3, 150, seed=4)
b2 = bools(4, 200, seed=6)
special = np.array([[0.0, -0.0, np.nan, 1.0, -np.inf, np.inf, -1.0, np.nan, 0.0]], np.float32)
h = floats(2, 140, dtype=np.float16, seed=5)
I32 = np.int32


def _argsort(a, axis=-1, descending=False):
    if not descending:
        return np.argsort(a, axis=axis, kind="stable").astype(I32)
    n = a.shape[axis]
    flipped = np.argsort(np.flip(a, axis), axis=axis, kind="stable")
    return (n - 1 - np.flip(flipped, axis)).astype(I32)


CASES = [
    Case("sort", jnp.sort, (x,), np.sort),
    Case("sort", lambda a: jnp.sort(a, axis=0), (x,), lambda a: np.sort(a, axis=0)),
    Case("sort", lambda a: jnp.sort(a, axis=1, descending=True), (x,),
         lambda a: np.flip(np.sort(a, axis=1), 1)),
    Case("sort", lambda a: jnp.sort(a, axis=None), (x,), lambda a: np.sort(a, axis=None)),
    Case("sort", jnp.sort, (long_,), np.sort, name="bitonic"),
    Case("sort", lambda a: jnp.sort(a, axis=0), (long_.T.copy(),),
         lambda a: np.sort(a, axis=0), name="bitonic, first axis"),
    Case("sort", lambda a: jnp.sort(a, descending=True), (long_,),
         lambda a: np.flip(np.sort(a), -1), name="bitonic descending"),
    Case("sort", jnp.sort, (ties,), np.sort, name="bitonic ints"),
    Case("sort", jnp.sort, (i8,), np.sort),
    Case("sort", jnp.sort, (b,), np.sort),
    Case("sort", jnp.sort, (special,), np.sort, name="NaN, -0.0, inf"),
    Case("sort", jnp.sort, (h,), np.sort),
    Case("sort_permutation", jnp.argsort, (x,), _argsort),
    Case("sort_permutation", lambda a: jnp.argsort(a, axis=0, descending=True), (x,),
         lambda a: _argsort(a, 0, True)),
    Case("sort_permutation", jnp.argsort, (long_,), _argsort, name="bitonic packed key"),
    Case("sort_permutation", jnp.argsort, (ties,), _argsort, name="bitonic stable ties"),
    Case("sort_permutation", lambda a: jnp.argsort(a, descending=True), (ties,),
         lambda a: _argsort(a, -1, True), name="bitonic stable descending"),
    Case("sort_permutation", jnp.argsort, (special,), _argsort, name="NaN, -0.0, inf"),
    Case("sort_permutation", jnp.argsort, (b,), _argsort),
    Case("sort_permutation", jnp.argsort, (h,), _argsort),
    Case("sort_permutation", lambda a, c: jnp.lexsort([a, c]), (ties, b2),
         lambda a, c: np.lexsort([a, c]).astype(I32), name="two keys, bitonic"),
    Case("sort_permutation", lambda a, c: jnp.lexsort([a, c], axis=0), (x, x > 0),
         lambda a, c: np.lexsort([a, c], axis=0).astype(I32), name="two keys, short"),
]
