"""``transpiler.random``: JAX's counter-based PRNG and its samplers, bit for bit, eagerly
and under ``jit``.

- core.py: keys (``PRNGKey``/``key``, ``split``, ``fold_in``), the threefry bits, and the
  basic samplers (uniform, normal, truncated_normal, gumbel, randint, bernoulli,
  categorical);
- distributions.py: samplers that transform those draws (exponential, laplace, ...,
  multivariate_normal, orthogonal) and the gamma family (gamma, loggamma, beta, dirichlet,
  chisquare, t);
- permutations.py: ``permutation`` and ``choice``.
"""

from transpiler.random.core import (  # noqa: F401
    PRNGKey, bernoulli, bits, categorical, fold_in, gumbel, key, normal, randint, split,
    threefry2x32, truncated_normal, uniform)
from transpiler.random.distributions import (  # noqa: F401
    beta, cauchy, chisquare, dirichlet, double_sided_maxwell, exponential, gamma, geometric,
    laplace, loggamma, logistic, lognormal, maxwell, multivariate_normal, orthogonal, pareto,
    rademacher, rayleigh, t, triangular, wald, weibull_min)
from transpiler.random.permutations import choice, permutation  # noqa: F401

__all__ = ["PRNGKey", "bernoulli", "beta", "bits", "categorical", "cauchy", "chisquare",
           "choice", "dirichlet", "double_sided_maxwell", "exponential", "fold_in", "gamma",
           "geometric", "gumbel", "key", "laplace", "loggamma", "logistic", "lognormal",
           "maxwell", "multivariate_normal", "normal", "orthogonal", "pareto", "permutation",
           "rademacher", "randint", "rayleigh", "split", "t", "threefry2x32", "triangular",
           "truncated_normal", "uniform", "wald", "weibull_min"]
