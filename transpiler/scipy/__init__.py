"""``jax.scipy``: SciPy's functions on transpiler arrays, with JAX's signatures
(`special`, `linalg` and `stats` so far; optimize and integrate are to come)."""

from transpiler.scipy import linalg, special, stats  # noqa: F401
