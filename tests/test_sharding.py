"""jax.sharding's API: meshes, partition specs, NamedSharding's pieces against NumPy
slicing, device_put/reshard with shardings, jit with in/out shardings, and
with_sharding_constraint through the transforms; the errors of bad specs."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import transpiler as jax
import transpiler.numpy as jnp
from transpiler import lax
from transpiler.sharding import (AxisType, Mesh, NamedSharding, PartitionSpec as P,
                                 SingleDeviceSharding)

ROOT = Path(__file__).resolve().parents[1]
MESH = jax.make_mesh((2,), ("batch",))
X = np.arange(24, dtype=np.float32).reshape(4, 6)


def test_make_mesh_lays_out_the_first_devices():
    assert MESH.shape == {"batch": 2} and MESH.axis_names == ("batch",)
    assert MESH.size == 2 and MESH.axis_sizes == (2,)
    assert list(MESH.devices.flat) == jax.devices()[:2]
    typed = jax.make_mesh((2,), ("b",), axis_types=(AxisType.Explicit,))
    assert typed.axis_types == (AxisType.Explicit,)
    grid = Mesh(np.array(jax.devices()[:2]).reshape(1, 2), ("a", "b"))
    assert grid.shape == {"a": 1, "b": 2}
    assert MESH == jax.make_mesh((2,), ("batch",)) and hash(MESH) == hash(jax.make_mesh(
        (2,), ("batch",)))


def test_mesh_errors():
    with pytest.raises(ValueError, match=r"needs 8 devices, and 2 are available") as e:
        jax.make_mesh((8,), ("x",))
    assert "TRANSPILER_CPU_DEVICES" in str(e.value) and "test_sharding.py" in str(e.value)
    with pytest.raises(ValueError, match="2 axis names"):
        Mesh(np.array(jax.devices()[:2]), ("a", "b"))
    with pytest.raises(ValueError, match="appears twice"):
        Mesh(np.array([jax.devices()[0]] * 2), ("a",))


def test_partition_specs():
    assert P("x") == P("x", None) and P() != P("x") and repr(P("b")) == "P('b',)"
    assert repr(P("b", None)) == "P('b', None)" and len(P("a", None)) == 2
    assert P(("a", "b")).axes_of(0) == ("a", "b") and P(None, "a").axes_of(0) == ()
    with pytest.raises(TypeError, match="PartitionSpec entries"):
        P(3)


def test_named_sharding_pieces_match_numpy_slicing():
    s = NamedSharding(MESH, P("batch"))
    assert s.shard_shape((4, 6)) == (2, 6) and not s.is_fully_replicated
    pieces = s.devices_indices_map((4, 6))
    assert [X[i].tolist() for i in pieces.values()] == [X[:2].tolist(), X[2:].tolist()]
    cols = NamedSharding(MESH, P(None, "batch")).devices_indices_map((4, 6))
    assert [X[i].shape for i in cols.values()] == [(4, 3), (4, 3)]
    assert NamedSharding(MESH, P()).is_fully_replicated
    assert NamedSharding(MESH, P("batch")) == NamedSharding(MESH, P("batch", None))


def test_device_put_with_a_named_sharding():
    x = jax.device_put(X, NamedSharding(MESH, P("batch")))
    assert isinstance(x, jax.DeviceArray) and x.sharding == NamedSharding(MESH, P("batch"))
    shards = x.addressable_shards
    assert [s.device for s in shards] == jax.devices()[:2]
    assert [s.replica_id for s in shards] == [0, 0]
    for shard in shards:
        np.testing.assert_array_equal(np.asarray(shard.data), X[shard.index])
        assert shard.data.device == shard.device
    assert x.devices() == set(jax.devices()[:2])
    replicated = jax.device_put(X, NamedSharding(MESH, P()))
    assert [s.replica_id for s in replicated.addressable_shards] == [0, 1]
    np.testing.assert_array_equal(np.asarray(replicated.addressable_shards[1].data), X)
    plain = jax.device_put(x, jax.devices()[0])
    assert plain.sharding == SingleDeviceSharding(jax.devices()[0])
    tree = jax.device_put({"w": X, "b": X[0]}, {"w": NamedSharding(MESH, P("batch")),
                                                 "b": NamedSharding(MESH, P())})
    assert tree["w"].sharding.spec == P("batch") and tree["b"].sharding.spec == P()
    params = jax.device_put([(X, X[0])], NamedSharding(MESH, P()))
    assert params[0][1].sharding.spec == P()


def test_placement_errors_name_the_axis_and_sizes():
    with pytest.raises(ValueError, match="names mesh axis 'model', which is not in the "
                                         r"mesh \(its axes: \('batch',\)\)") as e:
        NamedSharding(MESH, P("model"))
    assert "test_sharding.py" in str(e.value)
    with pytest.raises(ValueError, match=r"shape \(3, 6\): its dimension 0 \(size 3\) splits "
                                         "over mesh axis 'batch' \\(2\\) into 2 parts"):
        jax.device_put(X[:3], NamedSharding(MESH, P("batch")))
    with pytest.raises(ValueError, match="uses mesh axis 'batch' for more than one"):
        NamedSharding(MESH, P("batch", "batch"))
    with pytest.raises(TypeError, match="expected a Device or a Sharding"):
        jax.device_put(X, "cpu")


def test_reshard_places_eagerly_and_passes_through_jit():
    x = jax.sharding.reshard(X, NamedSharding(MESH, P("batch")))
    assert x.sharding.spec == P("batch")
    with jax.set_mesh(MESH):
        assert jax.reshard(X, P(None, "batch")).sharding.spec == P(None, "batch")
        doubled = jax.jit(lambda v: jax.reshard(v * 2, P("batch")))(X)
    np.testing.assert_array_equal(np.asarray(doubled), X * 2)
    with pytest.raises(ValueError, match="needs a mesh, and none is set"):
        jax.reshard(X, P("batch"))


def test_jit_with_in_and_out_shardings():
    data, rep = NamedSharding(MESH, P("batch")), NamedSharding(MESH, P())
    f = jax.jit(lambda w, x: (x @ w).sum(0), in_shardings=(rep, data), out_shardings=rep)
    w = np.ones((6, 2), np.float32)
    out = f(w, X)
    np.testing.assert_allclose(np.asarray(out), (X @ w).sum(0))
    assert out.sharding == rep
    with pytest.raises(ValueError, match=r"in_shardings: a value has shape \(3, 6\)"):
        f(w, X[:3])
    with pytest.raises(TypeError, match="expected Shardings or PartitionSpecs"):
        jax.jit(lambda v: v, in_shardings="batch")
    with jax.set_mesh(MESH):
        g = jax.jit(lambda v: v + 1, out_shardings=P("batch"))
        assert g(X).sharding == data
    decorated = jax.jit(out_shardings=data)(lambda v: v * 3)
    assert decorated(X).sharding == data


def test_with_sharding_constraint_is_the_identity_through_the_transforms():
    spec = NamedSharding(MESH, P("batch"))

    def f(x):
        return jnp.sum(lax.with_sharding_constraint(jnp.sin(x), spec) ** 2)

    x = X / 10  # (where float32 sin, on IREE too, is accurate to ~1e-6)
    want = np.sum(np.sin(x) ** 2)
    np.testing.assert_allclose(f(x), want, rtol=1e-5)
    np.testing.assert_allclose(jax.jit(f)(x), want, rtol=1e-5)
    grad = 2 * np.sin(x) * np.cos(x)
    np.testing.assert_allclose(jax.grad(f)(x), grad, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(jax.jit(jax.grad(f))(x), grad, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(jax.vmap(f)(x), np.sum(np.sin(x) ** 2, axis=1), rtol=1e-5)
    _, tangent = jax.jvp(f, (x,), (np.ones_like(x),))
    np.testing.assert_allclose(tangent, grad.sum(), rtol=1e-4)
    with pytest.raises(ValueError, match="names mesh axis 'model'"):
        with jax.set_mesh(MESH):
            jax.jit(lambda x: lax.with_sharding_constraint(x, P("model")))(x)


# --- exported for XLA: shardings in XLA's notation, partitioned by XLA on 2 host devices -------
PARTITIONED_RUNNER = textwrap.dedent("""
    import json, sys
    import numpy as np
    import jax, jax.extend.backend
    from jax._src.lib import xla_client as xc
    from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

    folder = sys.argv[1]
    backend = jax.extend.backend.get_backend("cpu")
    devices = backend.local_devices()[:2]
    mesh = Mesh(np.array(devices), ("batch",))
    options = xc.CompileOptions()
    build = options.executable_build_options
    build.num_replicas, build.num_partitions = 1, 2
    build.use_spmd_partitioning = True
    build.device_assignment = xc.DeviceAssignment.create(np.array([[d.id for d in devices]]))
    exe = backend.compile_and_load(open(f"{folder}/step.mlir").read(),
                                   executable_devices=xc.DeviceList(tuple(devices)),
                                   compile_options=options)
    inputs = np.load(f"{folder}/inputs.npz")
    specs = json.load(open(f"{folder}/specs.json"))
    args = [jax.device_put(inputs[str(i)], NamedSharding(mesh, P(*spec)))
            for i, spec in enumerate(specs)]
    outs = exe.execute_sharded(args).disassemble_into_single_device_arrays()
    np.savez(f"{folder}/results.npz", **{f"{o}_{k}": np.asarray(b)
                                         for o, per in enumerate(outs)
                                         for k, b in enumerate(per)})
""")


def test_exported_shardings_in_xlas_notation_partition_on_two_devices(tmp_path):
    data, rep = NamedSharding(MESH, P("batch")), NamedSharding(MESH, P())

    def step(w, x, y):  # a data-parallel gradient step: XLA adds the all-reduce
        g = jax.grad(lambda w: jnp.mean((x @ w - y) ** 2))(w)
        return w - 0.1 * g, x * 2

    f = jax.jit(step, in_shardings=(rep, data, data), out_shardings=(rep, data))
    rng = np.random.default_rng(0)
    w, x, y = (rng.standard_normal(s).astype(np.float32) for s in ((3, 2), (8, 3), (8, 2)))
    text = f.lower(w, x, y).as_text()
    assert "mhlo.num_partitions = 2" in text and '{mhlo.sharding = "{replicated}"}' in text
    assert '{mhlo.sharding = "{devices=[2,1]0,1}"}' in text
    want_w, want_x = (np.asarray(v) for v in jax.jit(step)(w, x, y))
    if importlib.util.find_spec("jax") is None:
        pytest.skip("jax is not installed (the partitioned run needs jaxlib's PJRT client)")
    (tmp_path / "step.mlir").write_text(text)
    np.savez(tmp_path / "inputs.npz", **{"0": w, "1": x, "2": y})
    (tmp_path / "specs.json").write_text(json.dumps([[], ["batch"], ["batch"]]))
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=2",
               JAX_PLATFORMS="cpu")
    done = subprocess.run([sys.executable, "-c", PARTITIONED_RUNNER, str(tmp_path)], env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-4000:]
    results = np.load(tmp_path / "results.npz")
    for k in range(2):  # the replicated result on each device, the sharded one in halves
        np.testing.assert_allclose(results[f"0_{k}"], want_w, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.concatenate([results["1_0"], results["1_1"]]), want_x)


HLO_OF_4 = r'''
import transpiler as jax
from transpiler.sharding import NamedSharding, PartitionSpec as P
from transpiler.sharding.hlo import hlo_sharding
mesh = jax.make_mesh((2, 2), ("x", "y"))
for spec in (P("x", None), P(None, "x"), P("y", "x"), P(("x", "y")), P()):
    print(hlo_sharding(NamedSharding(mesh, spec), 2))
'''


def test_xla_sharding_strings_of_a_two_axis_mesh(tmp_path):
    env = {**os.environ, "TRANSPILER_CPU_DEVICES": "4", "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", HLO_OF_4], env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-4000:]
    assert done.stdout.split("\n")[:5] == [  # XLA's notation for these (HloSharding)
        "{devices=[2,1,2]0,1,2,3 last_tile_dim_replicate}",
        "{devices=[1,2,2]0,1,2,3 last_tile_dim_replicate}",
        "{devices=[2,2]0,2,1,3}", "{devices=[4,1]0,1,2,3}", "{replicated}"]


def test_visualize_and_inspect_array_sharding(capsys):
    rows = jax.device_put(X, NamedSharding(MESH, P("batch")))
    jax.debug.visualize_array_sharding(rows)
    jax.debug.visualize_array_sharding(jax.device_put(X, NamedSharding(MESH, P(None, "batch"))))
    jax.debug.visualize_array_sharding(jax.device_put(X, NamedSharding(MESH, P())))
    drawn = capsys.readouterr().out.splitlines()
    assert [line.strip("│┌┐└┘├┤─┬┴┼ ") for line in drawn] == [
        "", "CPU 0", "", "CPU 1", "", "", "CPU 0          │         CPU 1", "", "", "CPU 0,1",
        ""]
    seen = []
    jax.debug.inspect_array_sharding(rows, callback=seen.append)
    jax.jit(lambda v: jax.debug.inspect_array_sharding(v, callback=seen.append) or v)(rows)
    assert seen == [NamedSharding(MESH, P("batch")), SingleDeviceSharding(jax.devices()[0])]
    with pytest.raises(ValueError, match="only 1-D and 2-D arrays"):
        jax.debug.visualize_sharding((2, 2, 2), NamedSharding(MESH, P()))


def test_arrays_made_from_blocks():
    rows = NamedSharding(MESH, P("batch"))
    made = jax.make_array_from_callback((4, 6), rows, lambda index: X[index])
    np.testing.assert_array_equal(np.asarray(made), X)
    assert made.sharding == rows
    blocks = [X[:2], X[2:]]
    joined = jax.make_array_from_single_device_arrays((4, 6), rows, blocks)
    np.testing.assert_array_equal(np.asarray(joined), X)
    local = jax.make_array_from_process_local_data(rows, X)
    assert local.sharding == rows and np.array_equal(np.asarray(local), X)
    with pytest.raises(ValueError, match=r"the block for .* has shape \(3, 6\)"):
        jax.make_array_from_single_device_arrays((4, 6), rows, [X[:3], X[3:]])
    with pytest.raises(ValueError, match="1 arrays for a sharding over 2 devices"):
        jax.make_array_from_single_device_arrays((4, 6), rows, [X])
