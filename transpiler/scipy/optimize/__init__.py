"""``jax.scipy.optimize``: `minimize` with ``method="BFGS"`` (JAX's BFGS and its strong
Wolfe line search, eagerly and under `jit`), returning `OptimizeResults`."""

from transpiler.scipy.optimize._minimize import OptimizeResults, minimize

__all__ = ["OptimizeResults", "minimize"]
