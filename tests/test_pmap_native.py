"""pmap by native collectives (transpiler/spmd/native.py): the per-replica StableHLO
program, checked against the emulated semantics (vmap with an axis name) and, where jax is
installed, run on two replicas by jaxlib's PJRT CPU client."""

import importlib.util
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import transpiler as jax_t
import transpiler.numpy as jnp
from transpiler import lax
from transpiler.primitives.core import ShapedArray
from transpiler.spmd.native import NativeAxis, trace_spmd

N = 2
F32 = np.dtype(np.float32)
X = np.random.default_rng(0).normal(size=(N, 2, 4)).astype(np.float32)  # replica k: X[k]

# name -> (per-replica function, the op it must emit, NumPy result of replica k)
CASES = {
    "psum": (lambda x: lax.psum(x, "i"), "stablehlo.all_reduce", lambda k: X.sum(0)),
    "pmean": (lambda x: lax.pmean(x, "i"), "stablehlo.all_reduce", lambda k: X.mean(0)),
    "pmax": (lambda x: lax.pmax(x, "i"), "stablehlo.all_reduce", lambda k: X.max(0)),
    "pmin": (lambda x: lax.pmin(x, "i"), "stablehlo.all_reduce", lambda k: X.min(0)),
    "all_gather0": (lambda x: lax.all_gather(x, "i"), "stablehlo.all_gather", lambda k: X),
    "all_gather1": (lambda x: lax.all_gather(x, "i", axis=1), "stablehlo.all_gather",
                    lambda k: np.stack(list(X), axis=1)),
    "all_gather0_tiled": (lambda x: lax.all_gather(x, "i", tiled=True), "stablehlo.all_gather",
                          lambda k: np.concatenate(list(X), axis=0)),
    "all_gather1_tiled": (lambda x: lax.all_gather(x, "i", axis=1, tiled=True),
                          "stablehlo.all_gather", lambda k: np.concatenate(list(X), axis=1)),
    "psum_scatter": (lambda x: lax.psum_scatter(x, "i"), "stablehlo.reduce_scatter",
                     lambda k: X.sum(0)[k]),
    "psum_scatter1_tiled": (lambda x: lax.psum_scatter(x, "i", scatter_dimension=1, tiled=True),
                            "stablehlo.reduce_scatter", lambda k: X.sum(0)[:, 2 * k:2 * k + 2]),
    "ppermute": (lambda x: lax.ppermute(x, "i", [(0, 1)]), "stablehlo.collective_permute",
                 lambda k: X[0] if k == 1 else np.zeros_like(X[0])),
    "axis_index": (lambda x: lax.axis_index("i"), "stablehlo.replica_id",
                   lambda k: np.int32(k)),
}


def stage(fun, in_avals, size=N):
    return trace_spmd(lambda *args: [fun(*args)], in_avals, NativeAxis("i", size))


def emulated(name):
    return np.asarray(jax_t.vmap(CASES[name][0], axis_name="i")(X))


@pytest.mark.parametrize("name", sorted(CASES))
def test_module_has_the_collective(name):
    fun, op, _ = CASES[name]
    staged = stage(fun, [ShapedArray(X.shape[1:], F32)])
    text = staged.text()
    assert f'"{op}"' in text or f" {op} " in text
    assert "mhlo.num_replicas = 2 : i32" in text and "mhlo.num_partitions = 1 : i32" in text
    with staged.context:
        staged.module.operation.verify()
    (aval,) = staged.out_avals
    want = emulated(name)
    assert (aval.shape, aval.dtype) == (want.shape[1:], want.dtype)


def test_groups_cover_every_replica():
    text = stage(lambda x: lax.psum(x, "i"), [ShapedArray((3,), F32)], size=4).text()
    assert "replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>" in text
    assert "channel_handle" not in text  # cross-replica: the groups number replicas


def test_bad_scatter_dimension_is_an_error():
    with pytest.raises(jax_t.TranspileError, match="axis size 2"):
        stage(lambda x: lax.psum_scatter(x, "i", scatter_dimension=1), [ShapedArray((2, 3), F32)])


# --- run on two replicas by jaxlib's PJRT CPU client ---------------------------------------------
RUNNER = textwrap.dedent("""
    import json, sys
    import numpy as np
    import jax, jax.extend.backend
    from jax._src.lib import xla_client as xc
    from jax.sharding import Mesh, NamedSharding, PartitionSpec

    n, folder = int(sys.argv[1]), sys.argv[2]
    backend = jax.extend.backend.get_backend("cpu")
    devices = backend.local_devices()[:n]
    assert len(devices) == n, devices
    # Each argument is a list of n per-replica buffers; a "replicated" sharding over the n
    # devices only carries them to execute_sharded, which passes replica k its buffer k.
    sharding = NamedSharding(Mesh(np.array(devices), ("r",)), PartitionSpec())
    options = xc.CompileOptions()
    build = options.executable_build_options
    build.num_replicas, build.num_partitions = n, 1
    build.device_assignment = xc.DeviceAssignment.create(np.array([[d.id] for d in devices]))
    results = {}
    for case in json.load(open(f"{folder}/cases.json")):
        text = open(f"{folder}/{case}.mlir").read()
        exe = backend.compile_and_load(text, executable_devices=xc.DeviceList(tuple(devices)),
                                       compile_options=options)
        inputs = np.load(f"{folder}/{case}.npz")
        args = []
        for a in range(len(inputs.files) // n):
            shards = [jax.device_put(inputs[f"{a}_{k}"], d) for k, d in enumerate(devices)]
            args.append(jax.make_array_from_single_device_arrays(shards[0].shape, sharding,
                                                                 shards))
        outs = exe.execute_sharded(args).disassemble_into_single_device_arrays()
        for o, per_replica in enumerate(outs):
            for k, buffer in enumerate(per_replica):
                results[f"{case}/{o}/{k}"] = np.asarray(buffer)
    np.savez(f"{folder}/results.npz", **results)
""")


def run_on_replicas(tmp_path, programs):
    """{case: (staged, [per-replica arrays of each argument])} -> {case: [outputs of each
    replica]}, run by jaxlib in a subprocess with N host devices."""
    if importlib.util.find_spec("jax") is None or importlib.util.find_spec("jaxlib") is None:
        pytest.skip("jax is not installed")
    for case, (staged, args) in programs.items():
        (tmp_path / f"{case}.mlir").write_text(staged.text())
        np.savez(tmp_path / f"{case}.npz",
                 **{f"{a}_{k}": arg[k] for a, arg in enumerate(args) for k in range(N)})
    (tmp_path / "cases.json").write_text(json.dumps(list(programs)))
    env = dict(os.environ, XLA_FLAGS=f"--xla_force_host_platform_device_count={N}",
               JAX_PLATFORMS="cpu")
    done = subprocess.run([sys.executable, "-c", RUNNER, str(N), str(tmp_path)], env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-4000:]
    results = np.load(tmp_path / "results.npz")
    return {case: [results[f"{case}/0/{k}"] for k in range(N)] for case in programs}


def test_collectives_run_on_two_replicas(tmp_path):
    programs = {name: (stage(fun, [ShapedArray(X.shape[1:], F32)]), [X])
                for name, (fun, _, _) in CASES.items()}
    results = run_on_replicas(tmp_path, programs)
    for name, (_, _, expect) in CASES.items():
        want = emulated(name)
        for k in range(N):
            got = results[name][k]
            np.testing.assert_allclose(got, expect(k), rtol=1e-6, atol=1e-6, err_msg=name)
            np.testing.assert_allclose(got, want[k], rtol=1e-6, atol=1e-6, err_msg=name)


def _loss(w, x, y):
    r = x @ w - y
    return jnp.mean(r * r)


def test_data_parallel_gradient_step(tmp_path):
    rng = np.random.default_rng(1)
    w = rng.normal(size=3).astype(np.float32)
    xs = rng.normal(size=(N, 4, 3)).astype(np.float32)
    ys = rng.normal(size=(N, 4)).astype(np.float32)

    def step(w, x, y):
        return lax.pmean(jax_t.grad(_loss)(w, x, y), "i")

    avals = [ShapedArray((3,), F32), ShapedArray((4, 3), F32), ShapedArray((4,), F32)]
    staged = stage(step, avals)
    results = run_on_replicas(tmp_path, {"step": (staged, [np.stack([w] * N), xs, ys])})
    grads = [2 / 4 * x.T @ (x @ w - y) for x, y in zip(xs, ys)]
    for k in range(N):
        np.testing.assert_allclose(results["step"][k], np.mean(grads, axis=0), rtol=1e-5,
                                   atol=1e-6)
