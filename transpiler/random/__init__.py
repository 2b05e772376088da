"""``transpiler.random``: JAX's counter-based PRNG and its samplers, bit for bit, eagerly
and under ``jit``.

- core.py: keys (``PRNGKey``/``key``, ``split``, ``fold_in``), the threefry bits, and the
  basic samplers (uniform, normal, truncated_normal, gumbel, randint, bernoulli,
  categorical);
- distributions.py: samplers that transform those draws (exponential, laplace, ...,
  multivariate_normal, orthogonal);
- permutations.py: ``permutation`` and ``choice``.
"""

from transpiler.random.core import (  # noqa: F401
    PRNGKey, bernoulli, bits, categorical, fold_in, gumbel, key, normal, randint, split,
    threefry2x32, truncated_normal, uniform)
from transpiler.random.distributions import (  # noqa: F401
    cauchy, double_sided_maxwell, exponential, geometric, laplace, logistic, lognormal,
    maxwell, multivariate_normal, orthogonal, pareto, rademacher, rayleigh, triangular, wald,
    weibull_min)
from transpiler.random.permutations import choice, permutation  # noqa: F401

__all__ = ["PRNGKey", "bernoulli", "bits", "categorical", "cauchy", "choice",
           "double_sided_maxwell", "exponential", "fold_in", "geometric", "gumbel", "key",
           "laplace", "logistic", "lognormal", "maxwell", "multivariate_normal", "normal",
           "orthogonal", "pareto", "permutation", "rademacher", "randint", "rayleigh",
           "split", "threefry2x32", "triangular", "truncated_normal", "uniform", "wald",
           "weibull_min"]
