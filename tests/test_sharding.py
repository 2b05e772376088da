"""jax.sharding's API: meshes, partition specs, NamedSharding's pieces against NumPy
slicing, device_put/reshard with shardings, jit with in/out shardings, and
with_sharding_constraint through the transforms; the errors of bad specs."""

from __future__ import annotations

import numpy as np
import pytest

import transpiler as jax
import transpiler.numpy as jnp
from transpiler import lax
from transpiler.sharding import (AxisType, Mesh, NamedSharding, PartitionSpec as P,
                                 SingleDeviceSharding)

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
