"""``minimize``: JAX's front door to its optimizers, one entry of `_METHODS` per method."""

from __future__ import annotations

from typing import Any, Callable, Mapping, NamedTuple, Optional

from transpiler import dtypes
from transpiler import numpy as jnp
from transpiler.scipy.optimize._bfgs import minimize_bfgs


class OptimizeResults(NamedTuple):
    """What `minimize` found (JAX's fields, in JAX's order).

    x: the solution. success: whether it converged with no line search failing.
    status: 0 converged, 1 `maxiter` iterations reached, 3 the line search's zoom failed,
    5 the line search's iterations ran out, -1 undefined. fun, jac: the objective and its
    gradient at x. hess_inv: the estimate of the inverse Hessian. nfev, njev: evaluations
    of the objective and of its gradient. nit: iterations of the method."""
    x: Any
    success: Any
    status: Any
    fun: Any
    jac: Any
    hess_inv: Any
    nfev: Any
    njev: Any
    nit: Any


def _bfgs(value_and_grad: Callable, x0: Any, options: Mapping[str, Any]) -> OptimizeResults:
    results = minimize_bfgs(value_and_grad, x0, **options)
    return OptimizeResults(
        x=results.x_k, success=results.converged & ~results.failed, status=results.status,
        fun=results.f_k, jac=results.g_k, hess_inv=results.H_k,
        nfev=jnp.asarray(results.nfev), njev=jnp.asarray(results.ngev),
        nit=jnp.asarray(results.k))


# method (lower case) -> its solver and the options it takes
_METHODS = {"bfgs": (_bfgs, ("maxiter", "norm", "gtol", "line_search_maxiter"))}


def minimize(fun: Callable, x0: Any, args: tuple = (), *, method: str,
             tol: Optional[float] = None,
             options: Optional[Mapping[str, Any]] = None) -> OptimizeResults:
    """Minimize ``fun(x, *args)`` over the 1-d array `x` from `x0`, with JAX's semantics.

    `method` is required; ``"BFGS"`` (any case) is the one method. Gradients come from
    differentiating `fun`. `options`: ``maxiter`` (default ``200 * x0.size``), ``gtol``
    (stop when the gradient's norm is below it, default 1e-5), ``norm`` (its order,
    default inf) and ``line_search_maxiter`` (default 10). `tol` is accepted and, as in
    JAX, unused. Works eagerly and under `jit`; differentiating through `minimize` is not
    supported (nor is it in JAX)."""
    # (a lazy import: minimize reaches up from the array library to the transforms, as it
    # must to differentiate the objective)
    from transpiler.transforms.reverse.api import value_and_grad

    if not isinstance(args, tuple):
        raise TypeError(f"args argument to jax.scipy.optimize.minimize must be a tuple, "
                        f"got {args!r}")
    if method.lower() not in _METHODS:
        raise ValueError(f"Method {method} not recognized")
    solver, known = _METHODS[method.lower()]
    options = dict(options or {})
    unknown = sorted(set(options) - set(known))
    if unknown:
        raise TypeError(f"minimize: unknown options {unknown} for method {method!r} "
                        f"(known: {', '.join(known)})")
    x0 = jnp.asarray(x0)
    if x0.ndim != 1:
        raise ValueError(f"minimize: x0 must be a 1-d array, got shape {x0.shape}")
    if not dtypes.is_float(x0.dtype):
        raise TypeError(f"minimize: x0 must be a floating-point array (the objective is "
                        f"differentiated with respect to it), got {x0.dtype}")
    objective = value_and_grad(fun)
    return solver(lambda x: objective(x, *args), x0, options)
