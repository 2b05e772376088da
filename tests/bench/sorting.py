"""Sorting under jit against NumPy and jax.jit: values, the stable permutation, a median
and top_k.

Run directly (``python tests/bench/sorting.py``) or as part of ``run.py``. IREE 3.13 lowers
``stablehlo.sort`` to a quadratic loop on CPU, so axes longer than 128 sort by our bitonic
network (transpiler/primitives/sorting.py): ``log2(n) * (log2(n) + 1) / 2`` elementwise
compare-exchange steps (210 for 10^6 elements), each a pass over the whole array. JAX calls
a std::sort-style routine per row. Rows are checked against NumPy before timing.
"""

from __future__ import annotations

import numpy as np

import transpiler.lax as lax
import transpiler.numpy as tnp
from run import bench, jax

if jax is not None:
    import jax.numpy as jjnp


def main() -> None:
    rng = np.random.default_rng(0)
    for n in (2**16, 10**6):
        x = rng.standard_normal(n).astype(np.float32)
        bench(f"sort {n:.0e} float32", np.sort, (x,), tnp.sort, jjnp.sort if jax else None)
        bench(f"argsort {n:.0e} float32 (stable)", lambda a: np.argsort(a, kind="stable"),
              (x,), tnp.argsort, jjnp.argsort if jax else None)
    rows = rng.standard_normal((512, 1000)).astype(np.float32)
    bench("median of 512 rows of 1000", lambda a: np.median(a, axis=1), (rows,),
          lambda a: tnp.median(a, axis=1), (lambda a: jjnp.median(a, axis=1)) if jax else None)
    bench("top_k k=8 of 512 rows of 1000", lambda a: -np.sort(-a, axis=1)[:, :8], (rows,),
          lambda a: lax.top_k(a, 8)[0], (lambda a: jax.lax.top_k(a, 8)[0]) if jax else None)


if __name__ == "__main__":
    main()
