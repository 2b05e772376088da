"""``jax.scipy``: SciPy's functions on transpiler arrays, with JAX's signatures (`special`
so far; the rest of jax.scipy -- linalg, stats, ... -- is issue 19's)."""

from transpiler.scipy import special  # noqa: F401
