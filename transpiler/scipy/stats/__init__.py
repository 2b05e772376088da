"""``jax.scipy.stats``: distributions as modules of functions with JAX's (and SciPy's)
signatures -- ``norm.logpdf(x, loc, scale)`` and so on -- written with `transpiler.numpy`
and `transpiler.scipy.special`, so every transform reads them as code.

Continuous: norm, multivariate_normal, expon, uniform, laplace, logistic, cauchy, t,
gamma, chi2, beta, dirichlet. Discrete: poisson, bernoulli, binom, geom. The CDFs of
gamma, chi2, poisson and beta are the incomplete gamma and beta functions.
"""

from transpiler.scipy.stats import (  # noqa: F401
    bernoulli, beta, binom, cauchy, chi2, dirichlet, expon, gamma, geom, laplace, logistic,
    multivariate_normal, norm, poisson, t, uniform)

__all__ = ["bernoulli", "beta", "binom", "cauchy", "chi2", "dirichlet", "expon", "gamma",
           "geom", "laplace", "logistic", "multivariate_normal", "norm", "poisson", "t",
           "uniform"]
