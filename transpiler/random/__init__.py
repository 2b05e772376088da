"""``transpiler.random``: JAX's counter-based PRNG and its samplers, bit for bit, eagerly
and under ``jit``.

- keys.py: typed keys (``random.key``'s ``key<fry>`` arrays) and ``key_data``,
  ``wrap_key_data``, ``key_impl``, ``key_dtype``, ``clone``;
- core.py: keys (``PRNGKey``/``key``, ``split``, ``fold_in``), the threefry bits, and the
  basic samplers (uniform, normal, truncated_normal, gumbel, randint, bernoulli,
  categorical);
- distributions.py: samplers that transform those draws (exponential, laplace, ...,
  multivariate_normal, orthogonal) and the gamma family (gamma, loggamma, beta, dirichlet,
  chisquare, t, f, generalized_normal, ball);
- counts.py: poisson, binomial and multinomial (rejection loops);
- permutations.py: ``permutation`` and ``choice``.
"""

from transpiler.random.core import (  # noqa: F401
    PRNGKey, bernoulli, bits, categorical, fold_in, gumbel, key, normal, randint, split,
    threefry2x32, truncated_normal, uniform)
from transpiler.random.counts import binomial, multinomial, poisson  # noqa: F401
from transpiler.random.distributions import (  # noqa: F401
    ball, beta, cauchy, chisquare, dirichlet, double_sided_maxwell, exponential, f, gamma,
    generalized_normal, geometric, laplace, loggamma, logistic, lognormal, maxwell,
    multivariate_normal, orthogonal, pareto, rademacher, rayleigh, t, triangular, wald,
    weibull_min)
from transpiler.random.keys import (  # noqa: F401
    KeyArray, clone, key_data, key_dtype, key_impl, wrap_key_data)
from transpiler.random.permutations import choice, permutation  # noqa: F401

__all__ = ["KeyArray", "PRNGKey", "ball", "bernoulli", "beta", "binomial", "bits",
           "categorical", "cauchy", "chisquare", "choice", "clone", "dirichlet",
           "double_sided_maxwell", "exponential", "f", "fold_in", "gamma",
           "generalized_normal", "geometric", "gumbel", "key", "key_data", "key_dtype",
           "key_impl", "laplace", "loggamma", "logistic", "lognormal", "maxwell",
           "multinomial", "multivariate_normal", "normal", "orthogonal", "pareto",
           "permutation", "poisson", "rademacher", "randint", "rayleigh", "split", "t",
           "threefry2x32", "triangular", "truncated_normal", "uniform", "wald", "weibull_min",
           "wrap_key_data"]
