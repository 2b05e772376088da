"""Cases for the shape primitives (transpiler/primitives/shape.py) and their composites."""

import numpy as np

import transpiler.numpy as jnp
from transpiler.primitives import shape as sp
from tests.cases import Case, bools, floats, ints

x = floats(2, 3, 4)
m = ints(3, 4)
v = floats(5, seed=1)
b = bools(3, 4)
h = floats(3, 4, dtype=np.float16)
s = np.float32(2.5)
one = floats(1, 3, 1, seed=2)

# --- reshape / broadcast_to / transpose ---------------------------------------------------
CASES = [
    Case("reshape", lambda a: jnp.reshape(a, (4, -1)), (x,), lambda a: a.reshape(4, -1)),
    Case("reshape", lambda a: jnp.reshape(a, ()), (np.array([7], np.int32),),
         lambda a: a.reshape(())),
    Case("reshape", jnp.ravel, (b,), np.ravel),
    Case("broadcast_to", lambda a: jnp.broadcast_to(a, (2, 3)), (s,),
         lambda a: np.broadcast_to(a, (2, 3))),
    Case("broadcast_to", lambda a, c: jnp.broadcast_arrays(a, c), (m, np.ones((2, 1, 1), bool)),
         lambda a, c: np.broadcast_arrays(a, c)),
    Case("transpose", lambda a: jnp.transpose(a, (1, -1, 0)), (x,),
         lambda a: np.transpose(a, (1, 2, 0))),
    Case("transpose", lambda a: jnp.moveaxis(a, 0, -1), (x,), lambda a: np.moveaxis(a, 0, -1)),
    Case("transpose", lambda a: jnp.swapaxes(a, -1, 0), (b,), lambda a: np.swapaxes(a, -1, 0)),
]

# --- concatenate --------------------------------------------------------------------------
CASES += [
    Case("concatenate", lambda a, c: jnp.concatenate([a, c], axis=1), (x, floats(2, 5, 4)),
         lambda a, c: np.concatenate([a, c], axis=1)),
    Case("concatenate", lambda a: jnp.concatenate([a, a, a], axis=-1), (m,),
         lambda a: np.concatenate([a, a, a], axis=-1)),
    Case("concatenate", lambda a, c: jnp.concatenate([a, c]), (m, x[0]),
         lambda a, c: np.concatenate([a, c]), name="int32+float32 promotes"),
    Case("concatenate", lambda a: jnp.concatenate([a, a], axis=None), (b,),
         lambda a: np.concatenate([a, a], axis=None)),
    Case("concatenate", lambda a: jnp.concatenate([a, np.zeros((0, 4), np.float16)]), (h,),
         lambda a: np.concatenate([a, np.zeros((0, 4), np.float16)]), rtol=1e-3),
    Case("concatenate", lambda a, c: jnp.stack([a, c], axis=-1), (v, v * 2),
         lambda a, c: np.stack([a, c], axis=-1)),
    Case("concatenate", lambda a: jnp.stack([a, a]), (s,), lambda a: np.stack([a, a])),
    Case("concatenate", lambda a, c: jnp.hstack([a, c]), (v, v), lambda a, c: np.hstack([a, c])),
    Case("concatenate", lambda a, c: jnp.vstack([a, c]), (m, m[:1]),
         lambda a, c: np.vstack([a, c])),
    Case("concatenate", lambda a: jnp.dstack([a, a]), (m,), lambda a: np.dstack([a, a])),
    Case("concatenate", lambda a, c: jnp.column_stack([a, c]), (v, ints(5, 2)),
         lambda a, c: np.column_stack([a, c])),
    Case("concatenate", lambda a: jnp.roll(a, (1, -5), (0, -1)), (x,),
         lambda a: np.roll(a, (1, -5), (0, -1))),
    Case("concatenate", lambda a: jnp.roll(a, 7), (m,), lambda a: np.roll(a, 7)),
    Case("concatenate", lambda a: jnp.repeat(a, [2, 0, 1], axis=0), (b,),
         lambda a: np.repeat(a, [2, 0, 1], axis=0)),
]

# --- pad ----------------------------------------------------------------------------------
CASES += [
    Case("pad", lambda a: sp.pad(a, np.float32(-1), low=(1, -1, 0), high=(0, 2, -2),
                                 interior=(1, 0, 2)), (x,),
         lambda a: sp.pad.impl(a, np.float32(-1), low=(1, -1, 0), high=(0, 2, -2),
                               interior=(1, 0, 2)), name="lax.pad negative and interior"),
    Case("pad", lambda a: jnp.pad(a, 2), (m,), lambda a: np.pad(a, 2)),
    Case("pad", lambda a: jnp.pad(a, ((1, 0), (0, 3)), constant_values=True), (b,),
         lambda a: np.pad(a, ((1, 0), (0, 3)), constant_values=True)),
    Case("pad", lambda a: jnp.pad(a, (1, 2), constant_values=((1, 2), (3, 4))), (m,),
         lambda a: np.pad(a, (1, 2), constant_values=((1, 2), (3, 4)))),
    Case("pad", lambda a: jnp.pad(a, 1, constant_values=9.5), (h,),
         lambda a: np.pad(a, 1, constant_values=9.5), rtol=1e-3),
    Case("pad", lambda a, c: jnp.pad(a, (2, 1), constant_values=c), (v, s),
         lambda a, c: np.pad(a, (2, 1), constant_values=c), name="traced pad value"),
    Case("pad", lambda a: jnp.diag(a, -1), (v,), lambda a: np.diag(a, -1)),
]
for mode in ("edge", "reflect", "symmetric", "wrap"):
    CASES += [
        Case("slice", lambda a, mode=mode: jnp.pad(a, ((2, 7), (0, 9)), mode=mode), (m,),
             lambda a, mode=mode: np.pad(a, ((2, 7), (0, 9)), mode=mode), name=f"pad {mode}"),
        Case("slice", lambda a, mode=mode: jnp.pad(a, 1, mode=mode), (x,),
             lambda a, mode=mode: np.pad(a, 1, mode=mode), name=f"pad {mode} 3-d"),
    ]

# --- rev ----------------------------------------------------------------------------------
CASES += [
    Case("rev", lambda a: sp.rev(a, dimensions=(0, 2)), (x,), lambda a: np.flip(a, (0, 2))),
    Case("rev", lambda a: jnp.flip(a), (b,), np.flip),
    Case("rev", lambda a: jnp.flip(a, -1), (m,), lambda a: np.flip(a, -1)),
    Case("rev", lambda a: jnp.flip(a), (s,), np.flip, name="0-d"),
    Case("rev", jnp.fliplr, (m,), np.fliplr),
    Case("rev", jnp.flipud, (v,), np.flipud),
    *[Case("rev", lambda a, k=k: jnp.rot90(a, k, axes=(-1, 0)), (x,),
           lambda a, k=k: np.rot90(a, k, axes=(-1, 0)), name=f"rot90 k={k}")
      for k in (-1, 1, 2, 3)],
]

# --- slice --------------------------------------------------------------------------------
CASES += [
    Case("slice", lambda a: sp.slice_(a, start_indices=(1, 0, 1), limit_indices=(2, 3, 4),
                                      strides=(1, 2, 2)), (x,), lambda a: a[1:2, 0:3:2, 1:4:2]),
    Case("slice", lambda a: sp.slice_(a, start_indices=(0,), limit_indices=(0,), strides=None),
         (v,), lambda a: a[0:0], name="empty"),
    Case("slice", lambda a: sp.slice_(a, start_indices=(), limit_indices=(), strides=()), (s,),
         lambda a: a, name="0-d"),
    Case("slice", lambda a: jnp.split(a, [1, 3], axis=-1), (m,),
         lambda a: np.split(a, [1, 3], axis=-1)),
    Case("slice", lambda a: jnp.split(a, 2, axis=0), (b[:2],), lambda a: np.split(a, 2, axis=0)),
    Case("slice", lambda a: jnp.array_split(a, 3), (v,), lambda a: np.array_split(a, 3)),
    Case("slice", lambda a: jnp.diagonal(a, 1), (m,), lambda a: np.diagonal(a, 1)),
    Case("slice", lambda a: jnp.diagonal(a, -1, 2, 0), (x,), lambda a: np.diagonal(a, -1, 2, 0)),
    Case("slice", lambda a: jnp.diag(a), (b,), np.diag),
]

# --- composites over reshape / broadcast / select ------------------------------------------
CASES += [
    Case("reshape", lambda a: jnp.expand_dims(a, (0, -1)), (m,),
         lambda a: np.expand_dims(a, (0, -1))),
    Case("reshape", lambda a: jnp.expand_dims(a, 0), (s,), lambda a: np.expand_dims(a, 0)),
    Case("reshape", jnp.squeeze, (one,), np.squeeze),
    Case("reshape", lambda a: jnp.squeeze(a, -1), (one,), lambda a: np.squeeze(a, -1)),
    Case("reshape", lambda a: jnp.atleast_1d(a), (s,), np.atleast_1d),
    Case("reshape", lambda a: jnp.atleast_2d(a), (v,), np.atleast_2d),
    Case("reshape", lambda a: jnp.atleast_3d(a), (m,), np.atleast_3d),
    Case("broadcast_to", lambda a: jnp.tile(a, (2, 1, 3)), (m,), lambda a: np.tile(a, (2, 1, 3))),
    Case("broadcast_to", lambda a: jnp.tile(a, 2), (b,), lambda a: np.tile(a, 2)),
    Case("broadcast_to", lambda a: jnp.repeat(a, 3, axis=-1), (x,),
         lambda a: np.repeat(a, 3, axis=-1)),
    Case("broadcast_to", lambda a: jnp.repeat(a, 2), (s,), lambda a: np.repeat(a, 2)),
    Case("select", lambda a: jnp.triu(a, 1), (m,), lambda a: np.triu(a, 1)),
    Case("select", lambda a: jnp.tril(a, -1), (x,), lambda a: np.tril(a, -1)),
    Case("select", lambda a: jnp.tril(a), (b,), np.tril),
    Case("select", lambda a: jnp.diag(a, 2), (v,), lambda a: np.diag(a, 2)),
]
