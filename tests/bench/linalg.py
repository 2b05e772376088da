"""Linear algebra under jit against NumPy (LAPACK) and jax.jit (LAPACK): Cholesky with a
solve, a general solve, a log-determinant, eigenvalues, singular values, QR, and the
gradient of a GP negative log-likelihood.

Run directly (``python tests/bench/linalg.py``) or as part of ``run.py``. A jit called in
this process calls LAPACK on the host for the factorizations, as JAX's CPU backend does
(transpiler/lax/linalg/common.py); the rows marked "loops" time what `lower()` stages for
modules that leave the process (IREE has no LAPACK): `fori_loop`s over columns, one
matrix-vector product and a few elementwise steps per column, where LAPACK runs blocked,
cache-tiled kernels. Rows are checked against NumPy before timing.
"""

from __future__ import annotations

import contextlib
from typing import Iterator

import numpy as np

import transpiler as tp
import transpiler.numpy as tnp
import transpiler.scipy.linalg as tsl
from run import bench, best_time, jax, ready, row

if jax is not None:
    import jax.numpy as jjnp
    import jax.scipy.linalg as jsl


def _cho_solve(lib: object, slib: object):
    def f(a, b):
        return slib.cho_solve(slib.cho_factor(a, lower=True), b)
    return f


def _gp_nll(np_mod: object, sl: object):
    def nll(log_scale, x, y):
        d = x[:, None] - x[None, :]
        k = np_mod.exp(-0.5 * d * d / np_mod.exp(2 * log_scale)) + 0.1 * np_mod.eye(x.shape[0])
        factor = np_mod.linalg.cholesky(k)
        alpha = sl.cho_solve((factor, True), y)
        return 0.5 * y @ alpha + np_mod.sum(np_mod.log(np_mod.diagonal(factor)))
    return nll


@contextlib.contextmanager
def _loops() -> Iterator[None]:
    """The compiled loops, not LAPACK on the host (what lower() stages)."""
    tp.config.update("lapack_on_host", False)
    try:
        yield
    finally:
        tp.config.update("lapack_on_host", True)


def main() -> None:
    rng = np.random.default_rng(0)
    for n in (128, 512):
        g = rng.standard_normal((n, n)).astype(np.float32)
        spd = g @ g.T / n + np.eye(n, dtype=np.float32)
        rhs = rng.standard_normal((n, 4)).astype(np.float32)
        bench(f"cholesky + cho_solve {n}x{n}",
              lambda a, b: np.linalg.solve(a, b), (spd, rhs), _cho_solve(tnp, tsl),
              _cho_solve(jjnp, jsl) if jax else None)
        with _loops():
            bench(f"cholesky + cho_solve {n}x{n} (loops)",
                  lambda a, b: np.linalg.solve(a, b), (spd, rhs), _cho_solve(tnp, tsl),
                  _cho_solve(jjnp, jsl) if jax else None, numpy_too=False)
    for n in (64, 256):
        a = rng.standard_normal((n, n)).astype(np.float32) + n ** 0.5 * np.eye(n, dtype=np.float32)
        rhs = rng.standard_normal((n, 4)).astype(np.float32)
        bench(f"solve {n}x{n} (LU, partial pivoting)", np.linalg.solve, (a, rhs),
              tnp.linalg.solve, jjnp.linalg.solve if jax else None)
        bench(f"slogdet {n}x{n}", lambda m: np.linalg.slogdet(m)[1], (a,),
              lambda m: tnp.linalg.slogdet(m)[1],
              (lambda m: jjnp.linalg.slogdet(m)[1]) if jax else None)
    for n in (32, 128):
        g = rng.standard_normal((n, n)).astype(np.float32)
        sym = (g + g.T) / 2
        bench(f"eigvalsh {n}x{n}", np.linalg.eigvalsh, (sym,), tnp.linalg.eigvalsh,
              jjnp.linalg.eigvalsh if jax else None)
        bench(f"svdvals {n}x{n}",
              lambda m: np.linalg.svd(m, compute_uv=False), (g,), tnp.linalg.svdvals,
              jjnp.linalg.svdvals if jax else None)
        bench(f"qr {n}x{n} R", lambda m: np.abs(np.linalg.qr(m)[1]), (g,),
              lambda m: tnp.abs(tnp.linalg.qr(m)[1]),
              (lambda m: jjnp.abs(jjnp.linalg.qr(m)[1])) if jax else None)
    g = rng.standard_normal((128, 128)).astype(np.float32)
    sym = (g + g.T) / 2
    bench("eigh 128x128 vectors", lambda m: np.abs(np.linalg.eigh(m)[1]), (sym,),
          lambda m: tnp.abs(tnp.linalg.eigh(m)[1]),
          (lambda m: jjnp.abs(jjnp.linalg.eigh(m)[1])) if jax else None)
    tall = rng.standard_normal((128, 64)).astype(np.float32)
    bench("svd 128x64 U",
          lambda m: np.abs(np.linalg.svd(m, full_matrices=False)[0]), (tall,),
          lambda m: tnp.abs(tnp.linalg.svd(m, full_matrices=False)[0]),
          (lambda m: jjnp.abs(jjnp.linalg.svd(m, full_matrices=False)[0])) if jax else None)
    n = 500
    x = np.sort(rng.uniform(0, 10, n)).astype(np.float32)
    y = (np.sin(x) + 0.3 * rng.standard_normal(n)).astype(np.float32)
    ours = tp.jit(tp.value_and_grad(_gp_nll(tnp, tsl)))
    args = (np.float32(0.0), x, y)
    value, grad = ours(*args)
    t_ours = best_time(lambda: ready(ours(*args)[1]))
    t_jax = None
    if jax is not None:
        theirs = jax.jit(jax.value_and_grad(_gp_nll(jjnp, jsl)))
        jv, jg = theirs(*args)
        np.testing.assert_allclose(float(value), float(jv), rtol=1e-3)
        np.testing.assert_allclose(float(grad), float(jg), rtol=1e-2)
        t_jax = best_time(lambda: theirs(*args)[1].block_until_ready())
    row(f"GP NLL value_and_grad, {n} points", t_ours, None, t_jax)


if __name__ == "__main__":
    main()
