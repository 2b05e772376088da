"""The Broyden-Fletcher-Goldfarb-Shanno method as JAX runs it: Wright and Nocedal's
Algorithm 6.1, one `lax.while_loop` over a NamedTuple state, each step taken by the strong
Wolfe line search of `_line_search`."""

from __future__ import annotations

from typing import Any, NamedTuple, Optional

import numpy as np

from transpiler import numpy as jnp
from transpiler.lax.control import while_loop
from transpiler.numpy import linalg as jla
from transpiler.scipy.optimize._line_search import ValueAndGrad, line_search


class BFGSResults(NamedTuple):
    """The state of the iteration, and its result.

    `x_k`, `f_k` and `g_k` are the last iterate, f and its gradient there, `H_k` the
    estimate of the inverse Hessian; `k`, `nfev`, `ngev` count iterations, evaluations of
    f and of its gradient. `status` (set at the end): 0 converged, 1 `maxiter` reached,
    2 + the line search's status when it failed (3: its zoom failed, 5: no bracket)."""
    converged: Any
    failed: Any
    k: Any
    nfev: Any
    ngev: Any
    nhev: Any
    x_k: Any
    f_k: Any
    g_k: Any
    H_k: Any
    old_old_fval: Any
    status: Any
    line_search_status: Any


def _flag(condition: Any) -> Any:
    """`condition` as the int32 0 or 1 the loop carries for a boolean.

    (IREE 3.13 mishandles this loop's boolean carries: a segfault compiling it, or a run
    that stops at "indirect buffer reference slot 0 is out range"; int32 carries compile
    and run. And each flag is set as ``maximum(flag, new)``, reading its previous value --
    the same, since the loop runs only while both are 0 -- because IREE also crashes
    compiling a loop whose body replaces a carried value without reading it: it drops the
    value from the loop's arguments but not from its results.)"""
    return jnp.asarray(condition).astype(jnp.int32)


def minimize_bfgs(value_and_grad: ValueAndGrad, x0: Any, maxiter: Optional[int] = None,
                  norm: Any = np.inf, gtol: float = 1e-5,
                  line_search_maxiter: int = 10) -> BFGSResults:
    """Minimize f, given as its `value_and_grad`, from `x0` (1-d) until the `norm`-norm of
    the gradient is below `gtol` or `maxiter` (default ``200 * x0.size``) iterations."""
    if maxiter is None:
        maxiter = np.size(x0) * 200
    d = x0.shape[0]
    f_0, g_0 = value_and_grad(x0)
    init = BFGSResults(
        converged=_flag(jla.norm(g_0, ord=norm) < gtol), failed=_flag(False),
        k=0, nfev=1, ngev=1, nhev=0, x_k=x0, f_k=f_0, g_k=g_0,
        H_k=jnp.eye(d, dtype=x0.dtype), old_old_fval=f_0 + jla.norm(g_0) / 2,
        status=0, line_search_status=0)

    def cond(state: BFGSResults) -> Any:
        return (state.converged == 0) & (state.failed == 0) & (state.k < maxiter)

    def body(state: BFGSResults) -> BFGSResults:
        p_k = -jnp.dot(state.H_k, state.g_k)
        search = line_search(value_and_grad, state.x_k, p_k, old_fval=state.f_k,
                             old_old_fval=state.old_old_fval, gfk=state.g_k,
                             maxiter=line_search_maxiter)
        s_k = search.a_k * p_k
        y_k = search.g_k - state.g_k
        rho_k = jnp.reciprocal(jnp.dot(y_k, s_k))
        # H <- (I - rho s y^T) H (I - rho y s^T) + rho s s^T, kept when y.s is 0
        w = jnp.eye(d, dtype=rho_k.dtype) - rho_k * s_k[:, None] * y_k[None, :]
        H_kp1 = w @ state.H_k @ w.T + rho_k * s_k[:, None] * s_k[None, :]
        return state._replace(
            converged=jnp.maximum(state.converged,
                                  _flag(jla.norm(search.g_k, ord=norm) < gtol)),
            failed=jnp.maximum(state.failed, _flag(search.failed)),
            k=state.k + 1,
            nfev=state.nfev + search.nfev,
            ngev=state.ngev + search.ngev,
            x_k=state.x_k + s_k,
            f_k=search.f_k,
            g_k=search.g_k,
            H_k=jnp.where(jnp.isfinite(rho_k), H_kp1, state.H_k),
            old_old_fval=state.f_k,
            # (the search's status; reading the previous one for IREE, as `_flag` says)
            line_search_status=jnp.where(state.failed != 0, state.line_search_status,
                                         search.status))

    state = while_loop(cond, body, init)
    converged, failed = state.converged != 0, state.failed != 0
    status = jnp.where(converged, 0,
                       jnp.where(state.k == maxiter, 1,
                                 jnp.where(failed, 2 + state.line_search_status, -1)))
    return state._replace(converged=converged, failed=failed, status=status)
