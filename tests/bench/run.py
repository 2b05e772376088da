"""Benchmarks: transpiler.jit (IREE) against NumPy and, when installed, jax.jit.

Run with `make bench`. Every row is measured in this one run, so the ratios are
comparable even on a noisy shared machine; absolute times drift between runs.
"""

from __future__ import annotations

import sys
import time
from typing import Any, Callable, Optional

import numpy as np

import transpiler as tp
import transpiler.numpy as tnp

try:  # optional: the `bench` extra
    import jax
    import jax.numpy as jjnp
except ImportError:  # pragma: no cover
    jax = None


def best_time(fn: Callable[[], Any], min_time: float = 0.5, repeats: int = 5) -> float:
    """Best-of-`repeats` mean seconds per call, each repeat running >= min_time/repeats."""
    fn()
    start, n = time.perf_counter(), 0
    while time.perf_counter() - start < 0.05 or n < 3:
        fn()
        n += 1
    per_call = (time.perf_counter() - start) / n
    number = max(1, int(min_time / repeats / max(per_call, 1e-9)))
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        best = min(best, (time.perf_counter() - t0) / number)
    return best


def ready(x: Any) -> Any:
    return x.block_until_ready() if hasattr(x, "block_until_ready") else x


def chain(np_mod: Any) -> Callable:
    def f(x):
        y = np_mod.sin(x) * np_mod.cos(x) + np_mod.exp(-x * x) * 0.5 - np_mod.tanh(x)
        return np_mod.sum(y * y)
    return f


def mlp(np_mod: Any) -> Callable:
    def f(w1, b1, w2, b2, w3, b3, x):
        h = np_mod.tanh(x @ w1 + b1)
        h = np_mod.tanh(h @ w2 + b2)
        return h @ w3 + b3
    return f


def add(a, b):
    return a + b


def row(name: str, ours: float, numpy: Optional[float], jax_t: Optional[float]) -> None:
    parts = [f"{name:<34}", f"transpiler {ours * 1e3:9.3f} ms"]
    if numpy is not None:
        parts.append(f"numpy {numpy * 1e3:9.3f} ms  (numpy/ours {numpy / ours:6.2f}x)")
    if jax_t is not None:
        parts.append(f"jax {jax_t * 1e3:9.3f} ms  (ours/jax {ours / jax_t:5.2f}x)")
    print("  ".join(parts), flush=True)


def bench(name: str, fn_np: Callable, np_args: tuple, fn_ours: Callable,
          fn_jax: Optional[Callable], numpy_too: bool = True) -> None:
    ours_args = tuple(tp.jit(lambda a: a)(a) if isinstance(a, np.ndarray) and a.ndim else a
                      for a in np_args)  # device-resident inputs, as a real program keeps them
    jitted = tp.jit(fn_ours)
    t_ours = best_time(lambda: ready(jitted(*ours_args)))
    np.testing.assert_allclose(np.asarray(jitted(*ours_args)), fn_np(*np_args), rtol=2e-3,
                               atol=1e-3)
    t_np = best_time(lambda: fn_np(*np_args)) if numpy_too else None
    t_jax = None
    if jax is not None and fn_jax is not None:
        jf = jax.jit(fn_jax)
        jargs = tuple(jax.device_put(a) for a in np_args)
        t_jax = best_time(lambda: jf(*jargs).block_until_ready())
    row(name, t_ours, t_np, t_jax)


def per_call_overhead(rounds: int = 4) -> None:
    """Warm dispatch cost of a jitted scalar add on device-resident inputs. The two systems
    are measured in alternating rounds (best of each), since this machine's noise is larger
    than the difference."""
    ours = tp.jit(add)
    x = ours(np.float32(1.0), np.float32(2.0))
    times: dict[str, list[float]] = {"ours": [], "numpy": [], "jax": []}
    if jax is not None:
        jf = jax.jit(add)
        jx = jf(jjnp.float32(1.0), jjnp.float32(2.0))
    for _ in range(rounds):
        times["ours"].append(best_time(lambda: ours(x, x), min_time=0.4))
        times["numpy"].append(best_time(lambda: np.add(np.float32(1.0), np.float32(2.0)),
                                        min_time=0.2))
        if jax is not None:
            times["jax"].append(best_time(lambda: jf(jx, jx), min_time=0.4))
    t_ours, t_np = min(times["ours"]), min(times["numpy"])
    line = f"{'per-call overhead (scalar add)':<34}  transpiler {t_ours * 1e6:7.2f} us  " \
           f"numpy {t_np * 1e6:6.2f} us"
    if times["jax"]:
        t_jax = min(times["jax"])
        line += f"  jax {t_jax * 1e6:7.2f} us  (ours/jax {t_ours / t_jax:5.2f}x)"
    print(line, flush=True)


COLD_START = """
import sys, time, numpy as np
t0 = time.perf_counter()
import transpiler as tp, transpiler.numpy as jnp
from transpiler.compiler import CompileStats
sys.path.insert(0, {bench_dir!r})
from run import mlp
rng = np.random.default_rng(0)
args = [rng.standard_normal(s).astype(np.float32) for s in
        [(784, 512), (512,), (512, 256), (256,), (256, 10), (10,), (128, 784)]]
t1 = time.perf_counter()
out = tp.jit(mlp(jnp))(*args).block_until_ready()
t2 = time.perf_counter()
print(f"{{t2 - t1:.4f}} {{t1 - t0:.4f}} {{CompileStats.compiles}} {{CompileStats.seconds:.4f}}")
"""


def cold_start() -> None:
    """A fresh process's first call of a jitted MLP, with an empty and with a warm disk cache."""
    import os
    import subprocess
    import tempfile
    bench_dir = os.path.dirname(os.path.abspath(__file__))
    code = COLD_START.format(bench_dir=bench_dir)
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, TRANSPILER_CACHE_DIR=cache)
        runs = []
        for _ in range(2):
            out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                                 text=True, check=True).stdout.split()
            runs.append((float(out[0]), float(out[1]), int(out[2]), float(out[3])))
    (cold, imp, n_cold, compile_s), (warm, _, n_warm, _) = runs
    print(f"{'first call in a new process (MLP)':<34}  empty cache {cold:6.3f} s "
          f"({n_cold} compile, {compile_s:.3f} s in IREE)  warm disk cache {warm:6.3f} s "
          f"({n_warm} compiles; {compile_s / warm:4.1f}x less than the compile)  "
          f"import {imp:.2f} s", flush=True)


def main() -> None:
    rng = np.random.default_rng(0)
    print(f"transpiler bench  numpy {np.__version__}  jax {jax.__version__ if jax else 'absent'}"
          f"  python {sys.version.split()[0]}")
    cold_start()
    per_call_overhead()
    for n in (10**6, 10**7):
        x = rng.uniform(-1, 1, n).astype(np.float32)
        bench(f"elementwise chain + sum, n={n:.0e}", chain(np), (x,), chain(tnp),
              chain(jjnp) if jax else None)
    a = rng.standard_normal((1024, 1024)).astype(np.float32)
    b = rng.standard_normal((1024, 1024)).astype(np.float32)
    bench("matmul 1024x1024 f32", np.matmul, (a, b), tnp.matmul,
          jjnp.matmul if jax else None)
    sizes = [(784, 512), (512, 256), (256, 10)]
    params = []
    for fan_in, fan_out in sizes:
        params += [(rng.standard_normal((fan_in, fan_out)) / np.sqrt(fan_in)).astype(np.float32),
                   np.zeros(fan_out, np.float32)]
    xb = rng.standard_normal((128, 784)).astype(np.float32)
    bench("MLP forward 784-512-256-10, b=128", mlp(np), (*params, xb), mlp(tnp),
          mlp(jjnp) if jax else None)
    import ad  # tests/bench/ad.py: reverse-mode AD (transform time, jit(value_and_grad) step)
    ad.main()
    import control_flow  # tests/bench/control_flow.py: fori_loop under jit, and its gradient
    control_flow.main()
    import vmap  # tests/bench/vmap.py: per-example gradients, jit(vmap(grad(loss)))
    vmap.main()
    import pmap  # tests/bench/pmap.py: a data-parallel MLP step on 2 CPU devices
    pmap.main()
    import sorting  # tests/bench/sorting.py: sort, argsort, median, top_k
    sorting.main()
    import linalg  # tests/bench/linalg.py: Cholesky, solve, slogdet, a GP likelihood
    linalg.main()
    import fft  # tests/bench/fft.py: rfft of 2^20 points, batched, composite and 2-D FFTs
    fft.main()
    import nets  # tests/bench/nets.py: a LeNet training step and a transformer's gradient
    nets.main()


if __name__ == "__main__":
    main()
