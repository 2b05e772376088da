"""pmap: the devices strategy (one multi-device IREE module) against the emulated one (vmap
over the shards) and NumPy, on every collective, pytrees, statics, control flow, the
compositions with grad/vmap/jit, data-parallel training; pmap's errors."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import transpiler as jax
import transpiler.numpy as jnp
from transpiler import lax
from transpiler.errors import TranspileError

from tests.oracles import assert_trees_close as _close

ROOT = Path(__file__).resolve().parents[1]
N = 2  # the default number of CPU devices
_rng = np.random.default_rng(0)
X = _rng.standard_normal((N, 3)).astype(np.float32)
M = _rng.standard_normal((N, 4, 3)).astype(np.float32)


def _both(f, *args, **kw):
    """`f` pmapped by the devices strategy, checked against the emulated one; its result."""
    got = jax.pmap(f, **kw)(*args)
    _close(got, jax.pmap(f, strategy="emulated", **kw)(*args))
    return got


def test_default_devices():
    assert jax.local_device_count() >= 2 and len(jax.devices()) == jax.local_device_count()


COLLECTIVES = {
    "psum": (lambda x: lax.psum(x, "i"), lambda x: np.broadcast_to(x.sum(0), x.shape)),
    "pmean": (lambda x: lax.pmean(x, "i"), lambda x: np.broadcast_to(x.mean(0), x.shape)),
    "pmax": (lambda x: lax.pmax(x, "i"), lambda x: np.broadcast_to(x.max(0), x.shape)),
    "pmin": (lambda x: lax.pmin(x, "i"), lambda x: np.broadcast_to(x.min(0), x.shape)),
    "all_gather": (lambda x: lax.all_gather(x, "i"), lambda x: np.stack([x] * N)),
    "all_gather_axis1": (lambda x: lax.all_gather(x, "i", axis=1),
                         lambda x: np.stack([np.moveaxis(x, 0, 1)] * N)),
    "all_gather_tiled": (lambda x: lax.all_gather(x, "i", tiled=True),
                         lambda x: np.stack([x.reshape(-1, *x.shape[2:])] * N)),
    "ppermute_ring": (lambda x: lax.ppermute(x, "i", [(0, 1), (1, 0)]), lambda x: x[::-1]),
    "ppermute_partial": (lambda x: lax.ppermute(x, "i", [(0, 1)]),
                         lambda x: np.stack([np.zeros_like(x[0]), x[0]])),
    "axis_index": (lambda x: x * lax.axis_index("i"),
                   lambda x: x * np.arange(N).reshape(-1, *[1] * (x.ndim - 1))),
    "psum_scatter": (lambda x: lax.psum_scatter(x, "i"), lambda x: np.stack(
        [x.sum(0)[k] for k in range(N)])),
    "psum_scatter_tiled": (lambda x: lax.psum_scatter(x, "i", scatter_dimension=1, tiled=True),
                           lambda x: np.stack([x.sum(0)[:, 2 * k:2 * k + 2] for k in range(N)])),
}


@pytest.mark.parametrize("name", sorted(COLLECTIVES))
def test_collective_against_emulated_and_numpy(name):
    f, want = COLLECTIVES[name]
    x = _rng.standard_normal((N, 2, 4)).astype(np.float32)
    _close(_both(f, x, axis_name="i"), want(x))


def test_pytrees_replicated_arguments_and_out_axes():
    def f(params, batch):
        w, b = params["w"], params["b"]
        y = batch["x"] @ w + b
        return {"y": y, "total": lax.psum(jnp.sum(y), "i")}
    params = {"w": M[0], "b": X[0]}
    batch = {"x": _rng.standard_normal((N, 5, 4)).astype(np.float32)}
    got = _both(f, params, batch, axis_name="i", in_axes=(None, 0),
                out_axes={"y": 1, "total": None})
    y = batch["x"] @ params["w"] + params["b"]
    _close(got, {"total": y.sum(), "y": np.moveaxis(y, 0, 1)}, tol=1e-4)


def test_static_broadcasted_argnums_and_kwargs():
    def f(x, power, scale):
        return lax.psum(x ** power, "i") * scale
    p = jax.pmap(f, axis_name="i", static_broadcasted_argnums=1)
    scale = np.full((N, 3), 2, np.float32)
    _close(p(X, 3, scale=scale), np.broadcast_to(2 * (X ** 3).sum(0), X.shape), tol=1e-4)
    _close(p(X, 2, scale=scale), np.broadcast_to(2 * (X ** 2).sum(0), X.shape), tol=1e-4)
    emulated = jax.pmap(f, axis_name="i", static_broadcasted_argnums=1, strategy="emulated")
    _close(emulated(X, 3, scale=scale), p(X, 3, scale=scale), tol=1e-4)


def test_control_flow_in_the_per_shard_function():
    def f(x):
        y = lax.cond(jnp.sum(x) > 0, lambda v: v * 2, lambda v: v - 1, x)
        z = lax.fori_loop(0, 3, lambda i, c: c + i * y, y)
        return lax.psum(z, "i")
    want = [4 * (row * 2 if row.sum() > 0 else row - 1) for row in X]
    _close(_both(f, X, axis_name="i"), np.broadcast_to(np.sum(want, 0), X.shape), tol=1e-4)


def test_python_control_flow_is_converted_per_shard():
    def f(x):  # JAX's pmap refuses this `if`; the devices strategy converts it as jit does
        if jnp.sum(x) > 0:
            x = x + 100
        return lax.psum(x, "i")
    want = sum(row + 100 if row.sum() > 0 else row for row in X)
    _close(jax.pmap(f, axis_name="i")(X), np.broadcast_to(want, X.shape), tol=1e-4)


JOINT = {  # collectives inside control flow: one construct for all shards (joint_control.py)
    "fori_loop": lambda v: lax.fori_loop(0, 3, lambda i, c: c + 0.1 * lax.psum(c, "i"), v),
    "while_loop": lambda v: lax.while_loop(
        lambda c: c[0] < 4, lambda c: (c[0] + 1, c[1] * 0.5 + lax.pmean(c[1], "i")), (0, v))[1],
    "trip counts differ": lambda v: lax.while_loop(
        lambda c: jnp.sum(c) < 40, lambda c: c + jnp.abs(lax.pmax(c, "i")), jnp.abs(v)),
    "scan": lambda v: lax.scan(lambda c, x: (c + lax.psum(x, "i"), c * 2), v,
                               jnp.stack([v, 2 * v]))[0],
    "weak carry": lambda v: lax.fori_loop(0, 2, lambda i, c: c + lax.psum(jnp.sum(v), "i"), 0),
    "captured constant": lambda v: lax.fori_loop(
        0, 2, lambda i, c: c + jnp.arange(3.0) * lax.pmean(c, "i"), v),
    "training steps": lambda v: lax.fori_loop(  # per-shard gradients, averaged, 3 steps
        0, 3, lambda i, w: w - 0.1 * lax.pmean(jax.grad(_loss)(w, v[None, :3]), "i"),
        M[0][:3]),
    "cond": lambda v: lax.cond(jnp.sum(v) > 0, lambda u: lax.psum(u, "i"), lambda u: -u, v),
    "switch": lambda v: lax.switch(lax.axis_index("i"), [
        lambda u: lax.pmax(u, "i"), lambda u: u * 2, lambda u: lax.psum(u, "i")], v),
    "cond in a loop": lambda v: lax.fori_loop(0, 2, lambda i, c: lax.cond(
        i % 2 == 0, lambda u: lax.pmean(u, "i"), lambda u: u + 1, c), v),
}


@pytest.mark.parametrize("name", sorted(JOINT))
def test_collectives_inside_control_flow(name):
    _both(JOINT[name], X, axis_name="i")


def _loss(w, x):
    return jnp.sum(jnp.tanh(x @ w) ** 2)


def test_pmap_vmap_jit_grad():
    w = M[0]
    x = _rng.standard_normal((N, 5, 2, 4)).astype(np.float32)
    f = jax.pmap(jax.vmap(jax.jit(jax.grad(_loss)), in_axes=(None, 0)), in_axes=(None, 0))
    want = np.stack([np.stack([np.asarray(jax.grad(_loss)(w, x[i, j])) for j in range(5)])
                     for i in range(N)])
    _close(f(w, x), want, tol=1e-4)


def test_one_shard():
    _close(_both(lambda x: lax.psum(x, "i") * 2, X[:1], axis_name="i"), 2 * X[:1])


def test_jit_and_grad_of_pmap():
    f = jax.pmap(lambda x: jnp.sum(lax.psum(x ** 2, "i")), axis_name="i")
    _close(jax.jit(f)(X), np.full(N, (X ** 2).sum()), tol=1e-4)
    _close(jax.grad(lambda x: jnp.sum(f(x)))(X), 2 * N * X, tol=1e-4)
    _close(jax.grad(lambda x: jnp.sum(jax.pmap(jnp.sin)(x)))(X), np.cos(X), tol=1e-5)


def test_data_parallel_shards_keep_identical_parameters():
    def step(w, x):
        g = lax.pmean(jax.grad(_loss)(w, x), "batch")
        return w - 0.1 * g
    w = M[0]
    x = _rng.standard_normal((N, 6, 4)).astype(np.float32)
    for _ in range(3):
        shards = np.asarray(jax.pmap(step, "batch", in_axes=(None, 0))(w, x))
        assert all(np.array_equal(shards[0], s) for s in shards[1:])  # bitwise
        w = shards[0]


def test_data_parallel_training_matches_one_device():
    sys.path.insert(0, str(ROOT / "examples"))
    try:
        import data_parallel
    finally:
        sys.path.pop(0)
    assert data_parallel.main(steps=3, batch=32) < 1e-5


def test_source_shows_the_per_shard_function():
    def step(params, x):
        g = jax.grad(_loss)(params, x)
        return params - 0.1 * lax.pmean(g, axis_name="batch")
    text = jax.pmap(step, axis_name="batch", in_axes=(None, 0)).source
    assert "# sharded: x (axis 0); replicated on every shard: params" in text
    line = step.__code__.co_firstlineno + 2
    assert f"lax.pmean (test_pmap.py:{line})" in text and "def step(params, x):" in text
    assert "vjp__loss" in jax.pmap(jax.grad(_loss), in_axes=(None, 0)).source


def test_collectives_strategy_exports_stablehlo():
    p = jax.pmap(lambda x: lax.psum(x, "i") * lax.axis_index("i"), axis_name="i",
                 strategy="collectives")
    text = p.lower(np.ones((8, 3), np.float32)).as_text()  # 8 replicas: no devices needed
    assert "stablehlo.all_reduce" in text and "mhlo.num_replicas = 8" in text
    with pytest.raises(TranspileError, match="does not run here"):
        p(X)


def test_devices_module_places_each_shard():
    lowered = jax.pmap(lambda x: lax.psum(x, "i"), axis_name="i").lower(X)
    text = lowered.as_text()
    assert text.count("flow.tensor.transfer") == N * (N - 1)
    assert "#hal.device.promise<@dev1>" in text
    assert "@dev1" in lowered.as_text("flow")  # IREE's stages of the multi-device module


ERRORS = {
    "more shards than devices": (lambda: jax.pmap(lambda x: x)(np.ones((N + 1, 2))),
                                 "has size 3, but only 2 devices"),
    "sizes differ": (lambda: jax.pmap(lambda x, y: x + y)(np.ones((2, 2)), np.ones((1, 2))),
                     "different sizes: argument `x` has 2.*argument `y` has 1"),
    "unknown axis name": (lambda: jax.pmap(lambda x: lax.psum(x, "j"), "i")(X),
                          "unbound axis name 'j'.*bind \\['i'\\]"),
    "collective outside pmap": (lambda: lax.psum(X, "i"), "runs only inside vmap/pmap"),
    "too few in_axes": (lambda: jax.pmap(lambda x, y: x, in_axes=(0,))(X, X),
                        "in_axes has 1 entries"),
    "given devices": (lambda: jax.pmap(lambda x: x, devices=jax.devices()[:1])(X),
                      "size 2 but 1 devices were given"),
}


@pytest.mark.parametrize("case", sorted(ERRORS))
def test_errors_name_the_axis_and_sizes(case):
    run, match = ERRORS[case]
    with pytest.raises(TranspileError, match=match) as info:
        run()
    assert info.value.file == __file__


def test_unhashable_static_argument_and_unknown_strategy():
    with pytest.raises(TypeError, match="must be hashable"):
        jax.pmap(lambda x, n: x, static_broadcasted_argnums=1)(X, [1])
    with pytest.raises(ValueError, match="unknown strategy"):
        jax.pmap(lambda x: x, strategy="gpu")


def test_more_cpu_devices_by_environment():
    code = ("import numpy as np, transpiler as jax\nfrom transpiler import lax\n"
            "x = np.arange(8, dtype=np.float32).reshape(4, 2)\n"
            "print(jax.local_device_count(), np.asarray(jax.pmap(lambda v: lax.psum(v, 'i'), "
            "'i')(x))[3].tolist())\n")
    env = {**os.environ, "TRANSPILER_CPU_DEVICES": "4", "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["4", "[12.0,", "16.0]"]


def test_collectives_over_the_pmap_axis_from_vmapped_code():
    def g(v):
        return (lax.psum(v, "i") + lax.psum(v, "j"), lax.pmax(v, "i"),
                lax.all_gather(v, "i"), lax.all_gather(v, "i", axis=1, tiled=True),
                lax.ppermute(v, "i", [(0, 1)]), v * lax.axis_index("i"),
                lax.psum_scatter(jnp.stack([v, v * 3]), "i"))
    x = _rng.standard_normal((N, 3, 2, 2)).astype(np.float32)
    got = _both(jax.vmap(g, axis_name="j"), x, axis_name="i")
    _close(got[0][0, 0], x[:, 0].sum(0) + x[0].sum(0))
