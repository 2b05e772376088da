"""Data-parallel MLP training step with ``pmap`` and ``shard_map`` over 2 CPU devices, against
one device and against JAX's ``pmap``, ``shard_map`` and sharded ``jit`` over 2 host devices.

Run directly (``python tests/bench/pmap.py``) or as part of ``run.py``. The step is
examples/data_parallel.py's (784-512-10 MLP, the global batch split across the devices,
per-device gradients averaged with ``lax.pmean``, parameters replicated in and out: in_axes
``(None, 0, 0)``, out_axes ``None``), applied to its own output step after step. Rows:

1. ours, ``pmap`` by the devices strategy (one IREE module, shard k on CPU device k);
2. ours, ``pmap`` by the emulated strategy under ``jit`` (vmap over the shards, one device);
3. ours, ``shard_map`` over a mesh of the 2 devices (in_specs ``(P(), P("devices"),
   P("devices"))``, out_specs ``P()``): the same per-shard program by pmap's devices
   strategy, the batch split by reshapes;
4. ours, ``jit`` with ``in_shardings`` (replicated parameters, batch-sharded data) and
   replicated ``out_shardings``: checked and recorded, run on one device;
5. ours, ``jit`` of the same step on the whole batch on one device;
6. JAX, ``jax.pmap`` and ``jax.shard_map`` over 2 host devices, ``jax.jit`` with the same
   shardings (XLA's partitioner splits the program) and ``jax.jit`` on one device, in a
   subprocess started with ``--xla_force_host_platform_device_count=2`` (JAX fixes its
   device count when it starts), timed the same way.

Both parameter copies are checked against the one-device step before timing. With 2
cores, the 2 devices' thread pools share the same 2 cores that one device already uses:
scaling comes only from overlapping the two shards' dispatches, not from more hardware.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "examples"))
sys.path.insert(0, str(Path(__file__).parent))

import transpiler as tp  # noqa: E402
from run import best_time, jax  # noqa: E402

SIZES = (784, 512, 10)
BATCH = 256


def inputs():
    import data_parallel as dp
    params = dp.init(0, SIZES)
    xs, ys = dp.data(1, BATCH)
    return params, xs[0], ys[0]


def ours() -> dict:
    import data_parallel as dp
    params, x, y = inputs()
    n = 2
    devices = tp.pmap(dp.shard_step, axis_name="devices", in_axes=(None, 0, 0),
                      out_axes=(None, None))
    emulated = tp.jit(tp.pmap(dp.shard_step, axis_name="devices", in_axes=(None, 0, 0),
                              out_axes=(None, None), strategy="emulated"))
    from transpiler.sharding import NamedSharding, PartitionSpec as P
    mesh = tp.make_mesh((n,), ("devices",))
    sharded = tp.shard_map(dp.shard_step, mesh=mesh, in_specs=(P(), P("devices"), P("devices")),
                           out_specs=P())
    rep, data = NamedSharding(mesh, P()), NamedSharding(mesh, P("devices"))
    with_shardings = tp.jit(dp.single_step.__wrapped__, in_shardings=(rep, data, data),
                            out_shardings=rep)
    xs, ys = dp.shard(x, n), dp.shard(y, n)
    want, _ = dp.single_step(params, x, y)
    for step, *data_args in ((devices, xs, ys), (emulated, xs, ys), (sharded, x, y),
                             (with_shardings, x, y)):
        got, _ = step(params, *data_args)
        for g, w in zip(got, want):
            np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-4, atol=1e-5)

    def run(step, *data):
        state = [params]

        def once():
            state[0], loss = step(state[0], *data)
            np.asarray(loss)
        return best_time(once, min_time=1.0)
    return {"pmap devices": run(devices, xs, ys), "pmap emulated (jit)": run(emulated, xs, ys),
            "shard_map devices": run(sharded, x, y),
            "jit with shardings": run(with_shardings, x, y),
            "jit one device": run(dp.single_step, x, y)}


JAX_SCRIPT = r"""
import json, sys
sys.path[:0] = [sys.argv[1], sys.argv[2]]
import numpy as np, jax, jax.numpy as jnp
from run import best_time
import pmap as bench
params, x, y = bench.inputs()

def loss(p, x, labels):
    w1, b1, w2, b2 = p
    h = jnp.tanh(x @ w1 + b1)
    return -jnp.mean(jnp.sum(jax.nn.log_softmax(h @ w2 + b2, axis=-1) * labels, axis=-1))

def update(p, g):
    return tuple(a - 0.1 * b for a, b in zip(p, g))

def shard_step(p, x, labels):
    g = jax.lax.pmean(jax.grad(loss)(p, x, labels), "devices")
    return update(p, g), jax.lax.pmean(loss(p, x, labels), "devices")

from jax.sharding import NamedSharding, PartitionSpec as P
pstep = jax.pmap(shard_step, axis_name="devices", in_axes=(None, 0, 0), out_axes=(None, None))
step = lambda p, x, labels: (update(p, jax.grad(loss)(p, x, labels)), loss(p, x, labels))
sstep = jax.jit(step)
mesh = jax.make_mesh((2,), ("devices",), axis_types=(jax.sharding.AxisType.Auto,))
rep, data = NamedSharding(mesh, P()), NamedSharding(mesh, P("devices"))
mstep = jax.jit(jax.shard_map(shard_step, mesh=mesh, in_specs=(P(), P("devices"),
                                                               P("devices")), out_specs=P()))
jstep = jax.jit(step, in_shardings=(rep, data, data), out_shardings=rep)
xs, ys = x.reshape(2, -1, x.shape[1]), y.reshape(2, -1, y.shape[1])

def run(step, *data):
    state = [tuple(jnp.asarray(a) for a in params)]
    def once():
        state[0], l = step(state[0], *data)
        l.block_until_ready()
    return best_time(once, min_time=1.0)
xd, yd = jax.device_put(x, data), jax.device_put(y, data)
print(json.dumps({"jax.pmap 2 devices": run(pstep, xs, ys),
                  "jax.shard_map 2 devices": run(mstep, xd, yd),
                  "jax.jit shardings 2 dev": run(jstep, xd, yd),
                  "jax.jit one device": run(sstep, x, y), "devices": jax.device_count()}))
"""


def jax_times() -> dict:
    if jax is None:
        return {}
    env = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=2"}
    out = subprocess.run([sys.executable, "-c", JAX_SCRIPT, str(Path(__file__).parent),
                          str(ROOT / "examples")], env=env, capture_output=True, text=True,
                         timeout=600)
    if out.returncode != 0:
        print("  (JAX run failed:", out.stderr.strip().splitlines()[-1], ")")
        return {}
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    print(f"\nData-parallel MLP step ({SIZES[0]}-{SIZES[1]}-{SIZES[2]}, global batch {BATCH}, "
          f"2 CPU devices; {os.cpu_count()} cores)")
    times = ours()
    times.update(jax_times())
    times.pop("devices", None)
    base = times["jit one device"]
    for name, seconds in times.items():
        print(f"  {name:<22} {seconds * 1e3:8.2f} ms   {seconds / base:5.2f}x ours on one device")
    if "jax.pmap 2 devices" in times:
        print(f"  ours pmap / jax.pmap: {times['pmap devices'] / times['jax.pmap 2 devices']:.2f}"
              f"x; scaling (one device / pmap): ours "
              f"{base / times['pmap devices']:.2f}x, JAX "
              f"{times['jax.jit one device'] / times['jax.pmap 2 devices']:.2f}x")
        print(f"  ours shard_map / jax.shard_map: "
              f"{times['shard_map devices'] / times['jax.shard_map 2 devices']:.2f}x; ours jit "
              f"with shardings (one device) / jax.jit with shardings (2 devices): "
              f"{times['jit with shardings'] / times['jax.jit shardings 2 dev']:.2f}x")


if __name__ == "__main__":
    main()
