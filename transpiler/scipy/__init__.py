"""``jax.scipy``: SciPy's functions on transpiler arrays, with JAX's signatures:
`special`, `linalg`, `stats`, `optimize` (``minimize`` with BFGS) and `integrate`
(``trapezoid``)."""

from transpiler.scipy import integrate, linalg, optimize, special, stats  # noqa: F401
