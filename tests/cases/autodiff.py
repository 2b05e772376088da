"""Cases for the identity primitives the transforms and the compiler treat specially
(``lax.stop_gradient``, ``lax.optimization_barrier``)."""

import numpy as np

import transpiler.numpy as jnp
from transpiler import lax
from tests.cases import Case, floats, ints

x = floats(2, 3)
h = floats(3, 1, dtype=np.float16)



def _pytree(a: np.ndarray, b: np.ndarray) -> tuple:
    """lax.stop_gradient maps over the leaves of a pytree."""
    stopped = lax.stop_gradient((a, {"k": b, "n": 3}))
    return stopped[0], stopped[1]["k"], jnp.asarray(stopped[1]["n"])


CASES = [
    Case("stop_gradient", lax.stop_gradient, (x,), lambda a: a),
    Case("stop_gradient", lax.stop_gradient, (np.float32(1.5),), lambda a: a),
    Case("stop_gradient", lax.stop_gradient, (h,), lambda a: a, rtol=1e-3),
    Case("stop_gradient", lambda a: lax.stop_gradient(a) * 2, (ints(4),), lambda a: a * 2,
         name="int32 passes through"),
    Case("stop_gradient", _pytree, (x, floats(1, seed=3)), lambda a, b: (a, b, np.int32(3)),
         name="pytree"),
    Case("stop_gradient", lambda a: jnp.sin(lax.stop_gradient(a)) + a, (x,),
         lambda a: np.sin(a) + a),
    Case("optimization_barrier", lax.optimization_barrier, (x,), lambda a: a),
    Case("optimization_barrier", lambda a: jnp.sin(lax.optimization_barrier(a * 2)), (x,),
         lambda a: np.sin(a * 2)),
]
