"""``jax.scipy``: SciPy's functions on transpiler arrays, with JAX's signatures (`special`
and `linalg` so far; stats, optimize, integrate are to come)."""

from transpiler.scipy import linalg, special  # noqa: F401
