"""Cases for `dot_general` and the products built on it (matmul, einsum, tensordot ...)."""

import numpy as np

import transpiler.numpy as jnp
from transpiler.primitives.dot import dot_general
from tests.cases import Case, bools, floats, ints


def dg(dimension_numbers, preferred=None):
    """A jnp-level wrapper binding dot_general with fixed dimension numbers."""
    return lambda a, b: dot_general(a, b, dimension_numbers=dimension_numbers,
                                    preferred_element_type=preferred)


def np_dg(dimension_numbers, dtype=None):
    """NumPy reference: tensordot over contracting dims, batch dims looped with einsum."""
    (lc, rc), (lb, rb) = dimension_numbers

    def ref(a, b):
        letters = iter("abcdefghijklmnop")
        la, lb_ = [None] * a.ndim, [None] * b.ndim
        for x, y in list(zip(lb, rb)) + list(zip(lc, rc)):
            la[x] = lb_[y] = next(letters)
        la = [c or next(letters) for c in la]
        lb_ = [c or next(letters) for c in lb_]
        out = [la[d] for d in lb] + [c for i, c in enumerate(la) if i not in lc + lb] + \
            [c for i, c in enumerate(lb_) if i not in rc + rb]
        work = np.float32 if a.dtype in (np.float16, jnp.bfloat16) else None
        res = np.einsum(f"{''.join(la)},{''.join(lb_)}->{''.join(out)}",
                        a.astype(work or a.dtype), b.astype(work or b.dtype))
        return res.astype(dtype or a.dtype)
    return ref


BATCHED = (((2,), (1,)), ((0,), (0,)))          # bij,bjk->bik
TWO_BATCH = (((3,), (2,)), ((0, 1), (1, 0)))    # abij,bajk->abik
PLAIN = (((1,), (0,)), ((), ()))                # ij,jk->ik
MULTI = (((0, 2), (1, 0)), ((), ()))            # contract two dims
OUTER = (((), ()), ((), ()))                    # no contraction: outer product

a3, b3 = floats(2, 3, 4), floats(2, 4, 5, seed=1)
m34, m45 = floats(3, 4), floats(4, 5, seed=1)
v4 = floats(4, seed=2)
h34, h45 = m34.astype(np.float16), m45.astype(np.float16)
bf34, bf45 = m34.astype(jnp.bfloat16), m45.astype(jnp.bfloat16)
i34, i45 = ints(3, 4), ints(4, 5, seed=1)

HALF = dict(rtol=2e-2, atol=2e-2)

CASES = [
    # the primitive itself
    Case("dot_general", dg(BATCHED), (a3, b3), np_dg(BATCHED), rtol=1e-4, atol=1e-5),
    Case("dot_general", dg(TWO_BATCH), (floats(2, 3, 1, 4), floats(3, 2, 4, 5, seed=3)),
         np_dg(TWO_BATCH), rtol=1e-4, atol=1e-5),
    Case("dot_general", dg(PLAIN), (m34, m45), np_dg(PLAIN), rtol=1e-4, atol=1e-5),
    Case("dot_general", dg(MULTI), (floats(2, 3, 4), floats(4, 2, 5, seed=4)), np_dg(MULTI),
         rtol=1e-4, atol=1e-5),
    Case("dot_general", dg(OUTER), (v4, floats(3, seed=5)), np_dg(OUTER)),
    Case("dot_general", dg(PLAIN), (i34, i45), np_dg(PLAIN), name="int32"),
    Case("dot_general", dg(PLAIN), (h34, h45), np_dg(PLAIN), name="float16", **HALF),
    Case("dot_general", dg(PLAIN), (bf34, bf45), np_dg(PLAIN), name="bfloat16", **HALF),
    Case("dot_general", dg(PLAIN, np.float32), (bf34, bf45), np_dg(PLAIN, np.float32),
         name="bfloat16 -> float32 preferred", rtol=1e-2, atol=1e-2),
    Case("dot_general", dg(PLAIN), (i34, m45), lambda a, b: a.astype(np.float32) @ b,
         name="int32 x float32 promotes", rtol=1e-4, atol=1e-5),
    Case("dot_general", dg((((0,), (0,)), ((), ()))), (v4, v4), lambda a, b: np.dot(a, b),
         name="vector dot to 0-d", rtol=1e-5),
    Case("dot_general", dg(PLAIN), (bools(3, 4), bools(4, 5, seed=1)),
         lambda a, b: np.matmul(a, b), name="bool"),
    Case("dot_general", dg(PLAIN), (floats(0, 4), floats(4, 2)), lambda a, b: a @ b,
         name="empty"),
    # matmul
    Case("dot_general", jnp.matmul, (m34, m45), np.matmul, rtol=1e-4, atol=1e-5),
    Case("dot_general", jnp.matmul, (v4, m45), np.matmul, name="1-d @ 2-d", rtol=1e-4, atol=1e-5),
    Case("dot_general", jnp.matmul, (m34, v4), np.matmul, name="2-d @ 1-d", rtol=1e-4, atol=1e-5),
    Case("dot_general", jnp.matmul, (v4, v4), np.matmul, name="1-d @ 1-d", rtol=1e-4, atol=1e-5),
    Case("dot_general", jnp.matmul, (floats(2, 1, 3, 4), floats(5, 4, 2, seed=1)), np.matmul,
         name="batch broadcast", rtol=1e-4, atol=1e-5),
    Case("dot_general", jnp.matmul, (floats(1, 4), floats(3, 4, 1, seed=1)), np.matmul,
         name="size-1 dims", rtol=1e-4, atol=1e-5),
    Case("dot_general", lambda a, b: a @ b, (i34, i45), np.matmul, name="@ int32"),
    Case("dot_general", jnp.matmul, (h34, h45),
         lambda a, b: (a.astype(np.float32) @ b.astype(np.float32)).astype(np.float16),
         name="matmul float16", **HALF),
    # dot, vdot, inner, outer, tensordot
    Case("dot_general", jnp.dot, (a3, floats(6, 4, 2, seed=1)), np.dot, rtol=1e-4, atol=1e-5),
    Case("dot_general", jnp.dot, (a3, v4), np.dot, rtol=1e-4, atol=1e-5),
    Case("dot_general", jnp.vdot, (m34, m34), np.vdot, rtol=1e-4, atol=1e-5),
    Case("dot_general", jnp.inner, (a3, floats(5, 4, seed=1)), np.inner, rtol=1e-4, atol=1e-5),
    Case("multiply", jnp.outer, (v4, m34), np.outer),
    Case("dot_general", jnp.tensordot, (floats(2, 3, 4), floats(3, 4, 5, seed=1)), np.tensordot,
         rtol=1e-4, atol=1e-5),
    Case("dot_general", lambda a, b: jnp.tensordot(a, b, axes=([1, 0], [2, 0])),
         (floats(3, 2, 4), floats(3, 5, 2, seed=1)),
         lambda a, b: np.tensordot(a, b, axes=([1, 0], [2, 0])), rtol=1e-4, atol=1e-5),
    Case("dot_general", lambda a, b: jnp.tensordot(a, b, axes=1), (m34, m45),
         lambda a, b: np.tensordot(a, b, axes=1), rtol=1e-4, atol=1e-5),
    # kron, trace
    Case("multiply", jnp.kron, (floats(2, 3), floats(2, 2, seed=1)), np.kron),
    Case("dot_general", jnp.trace, (m34,), np.trace, rtol=1e-5),
    Case("dot_general", lambda a: jnp.trace(a, 1, 2, 0), (floats(3, 4, 5),),
         lambda a: np.trace(a, 1, 2, 0), rtol=1e-5),
    Case("dot_general", jnp.trace, (i34,), np.trace, name="trace int32"),
]

EINSUM = [
    ("ij,jk->ik", (m34, m45)), ("bij,bjk->bik", (a3, b3)), ("i,i->", (v4, v4)),
    ("ij->ji", (m34,)), ("...ij,...jk", (floats(2, 3, 4), floats(2, 4, 5, seed=1))),
    ("...ij,...jk->...ik", (floats(2, 1, 3, 4), floats(5, 4, 2, seed=1))),
    ("ij,jk", (m34, m45)), ("ij->", (m34,)), ("ij->j", (m34,)), ("ii->i", (floats(4, 4),)),
    ("ij,kj,k->i", (m34, floats(5, 4, seed=1), floats(5, seed=2))),
    ("abc,cd,de->aeb", (a3, floats(4, 3, seed=1), floats(3, 2, seed=2))),
    ("i,j->ij", (v4, floats(3, seed=1))), ("ij,ij->i", (m34, m34)),
]
CASES += [Case("dot_general", lambda *ops, s=s: jnp.einsum(s, *ops), ops,
               lambda *ops, s=s: np.einsum(s, *ops), name=f"einsum {s}", rtol=1e-4, atol=1e-5)
          for s, ops in EINSUM]
CASES += [
    Case("dot_general", lambda a, b: jnp.einsum("ij,jk->ik", a, b), (i34, i45),
         lambda a, b: np.einsum("ij,jk->ik", a, b), name="einsum int32"),
    Case("dot_general", lambda a, b: jnp.einsum("ij,jk->ik", a, b), (h34, h45),
         lambda a, b: np.einsum("ij,jk->ik", a.astype(np.float32), b.astype(np.float32)),
         name="einsum float16", **HALF),
]
CASES += [  # jnp.linalg norms (composites over reductions)
    Case("sqrt", jnp.linalg.norm, (floats(2, 3, 4),), np.linalg.norm, rtol=1e-5),
    Case("abs", lambda a: jnp.linalg.norm(a, 1, axis=-1, keepdims=True), (floats(3, 4),),
         lambda a: np.linalg.norm(a, 1, axis=-1, keepdims=True), rtol=1e-5),
    Case("abs", lambda a: jnp.linalg.norm(a, np.inf), (floats(3, 4),),
         lambda a: np.linalg.norm(a, np.inf), rtol=1e-5),
    Case("abs", lambda a: jnp.linalg.norm(a, -1, axis=(1, 0)), (floats(2, 3, 4),),
         lambda a: np.linalg.norm(a, -1, axis=(1, 0)), rtol=1e-5),
    Case("power", lambda a: jnp.linalg.norm(a, 3), (floats(5),),
         lambda a: np.linalg.norm(a, 3), rtol=1e-4),
    Case("sqrt", jnp.linalg.norm, (ints(3, 4),), lambda a: np.linalg.norm(a).astype(np.float32),
         name="norm of int32 is float32", rtol=1e-5),
]
