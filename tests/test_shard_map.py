"""shard_map and smap: every collective and spec pattern against NumPy, by both strategies
(the devices strategy of a one-axis mesh and the emulated one) and under jit; gradients
against single-device gradients and float64 finite differences; vmap against loops;
meshes of several axes (in a 4-device child process); the errors of bad specs."""

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
from transpiler.sharding import PartitionSpec as P

from tests.oracles import assert_trees_close as _close, finite_differences

ROOT = Path(__file__).resolve().parents[1]
MESH = jax.make_mesh((2,), ("x",))
_rng = np.random.default_rng(0)
A = _rng.standard_normal((4, 6)).astype(np.float32)


def _every_way(f, *args, **kw):
    """`shard_map(f, ...)(*args)` by the devices strategy, checked against the emulated
    one and against jit of each; its result."""
    got = jax.shard_map(f, mesh=MESH, **kw)(*args)
    for strategy in ("emulated", "devices"):
        sm = jax.shard_map(f, mesh=MESH, strategy=strategy, **kw)
        _close(sm(*args), got)
        _close(jax.jit(sm)(*args), got)
    return got


def _blocks(x, axis=0):
    return np.split(x, 2, axis=axis)


# (per-shard function, NumPy result for A split into two row blocks and joined as out_specs)
COLLECTIVES = {
    "psum": (lambda a: lax.psum(a, "x"), P(), lambda: sum(_blocks(A))),
    "pmean": (lambda a: lax.pmean(a, "x"), P(), lambda: sum(_blocks(A)) / 2),
    "pmax": (lambda a: lax.pmax(a, "x"), P(), lambda: np.maximum(*_blocks(A))),
    "pmin": (lambda a: lax.pmin(a, "x"), P(), lambda: np.minimum(*_blocks(A))),
    "all_gather": (lambda a: lax.all_gather(a, "x"), P(), lambda: np.stack(_blocks(A))),
    "all_gather_tiled": (lambda a: lax.all_gather(a, "x", tiled=True), P(), lambda: A),
    "all_gather_axis1": (lambda a: lax.all_gather(a, "x", axis=1, tiled=True), P(),
                         lambda: np.concatenate(_blocks(A), axis=1)),
    "psum_scatter": (lambda a: lax.psum_scatter(a, "x", tiled=True), P("x"),
                     lambda: sum(_blocks(A))),
    "ppermute": (lambda a: lax.ppermute(a, "x", [(0, 1), (1, 0)]), P("x"),
                 lambda: np.concatenate(_blocks(A)[::-1])),
    "all_to_all": (lambda a: lax.all_to_all(a, "x", 1, 0, tiled=True), P("x"),
                   lambda: np.concatenate([np.concatenate([b[:, k * 3:(k + 1) * 3]
                                                           for b in _blocks(A)])
                                           for k in range(2)])),
    "axis_index": (lambda a: a * lax.axis_index("x"), P("x"),
                   lambda: np.concatenate([b * k for k, b in enumerate(_blocks(A))])),
}


@pytest.mark.parametrize("name", sorted(COLLECTIVES))
def test_every_collective_over_a_mesh_axis(name):
    f, out_spec, want = COLLECTIVES[name]
    got = _every_way(f, A, in_specs=P("x"), out_specs=out_spec)
    _close(got, want())


SPECS = [  # (in_specs, out_specs, NumPy of the identity per shard)
    (P("x"), P("x"), lambda a: a),
    (P(None, "x"), P(None, "x"), lambda a: a),
    (P(None, "x"), P("x"), lambda a: np.concatenate(_blocks(a, 1), axis=0)),
    (P("x"), P(None, "x"), lambda a: np.concatenate(_blocks(a, 0), axis=1)),
    (P(), P(), lambda a: a),
    (P(), P("x"), lambda a: np.concatenate([a, a])),
    (P(("x",)), P(("x",), None), lambda a: a),
]


@pytest.mark.parametrize("case", range(len(SPECS)))
def test_spec_patterns_split_and_join_the_blocks(case):
    in_specs, out_specs, want = SPECS[case]
    _close(_every_way(lambda a: a, A, in_specs=in_specs, out_specs=out_specs), want(A))


def test_blocks_each_shard_sees():
    shapes = []

    def f(a, b):
        shapes.append((a.shape, b.shape))
        return a.sum(0, keepdims=True) + b.sum()

    got = jax.shard_map(f, mesh=MESH, in_specs=(P("x"), P()), out_specs=P("x"),
                        strategy="emulated")(A, np.ones(3, np.float32))
    assert shapes[0] == ((2, 6), (3,))
    _close(got, np.stack([blk.sum(0) for blk in _blocks(A)]) + 3)


def test_pytrees_of_arguments_and_outputs_with_per_leaf_specs():
    def f(params, x):
        y = x @ params["w"] + params["b"]
        return {"y": y, "total": lax.psum(jnp.sum(y), "x")}

    params = {"w": _rng.standard_normal((6, 3)).astype(np.float32),
              "b": _rng.standard_normal(3).astype(np.float32)}
    got = _every_way(f, params, A, in_specs=({"w": P(), "b": P()}, P("x")),
                     out_specs={"y": P("x"), "total": P()})
    want = A @ params["w"] + params["b"]
    _close(got, {"total": want.sum(), "y": want})


def test_data_parallel_gradient_equals_the_single_device_gradient():
    w = _rng.standard_normal((6, 2)).astype(np.float32)
    y = _rng.standard_normal((4, 2)).astype(np.float32)

    def loss(w, x, y):
        return jnp.mean((jnp.tanh(x @ w) - y) ** 2)

    sharded = jax.shard_map(lambda w, x, y: lax.pmean(loss(w, x, y), "x"), mesh=MESH,
                            in_specs=(P(), P("x"), P("x")), out_specs=P())
    want = jax.grad(loss)(w, A, y)
    _close(sharded(w, A, y), loss(w, A, y))
    _close(jax.grad(sharded)(w, A, y), want)
    _close(jax.jit(jax.grad(sharded))(w, A, y), want)
    _close(jax.grad(sharded, argnums=1)(w, A, y), jax.grad(loss, argnums=1)(w, A, y))
    fd = finite_differences(lambda v: np.mean((np.tanh(A.astype(np.float64) @ v) - y) ** 2), w)
    _close(jax.grad(sharded)(w, A, y), fd, tol=1e-4)


def test_forward_mode_through_a_shard_map():
    sm = jax.shard_map(lambda a, s: a * jnp.sin(s) + lax.psum(a, "x"), mesh=MESH,
                       in_specs=(P("x"), P()), out_specs=P("x"))
    out, tangent = jax.jvp(lambda s: sm(A, s), (0.3,), (1.0,))
    block_sum = np.concatenate([sum(_blocks(A))] * 2)
    _close(out, A * np.sin(0.3) + block_sum)
    _close(tangent, A * np.cos(0.3))
    _close(jax.jit(lambda s: jax.jvp(lambda t: sm(A, t), (s,), (1.0,))[1])(0.3),
           A * np.cos(0.3))


def test_vmap_of_a_shard_map_and_of_its_gradient_against_loops():
    sm = jax.shard_map(lambda a, w: lax.psum(jnp.sum(jnp.sin(a * w)), "x") + a * w,
                       mesh=MESH, in_specs=(P("x"), P()), out_specs=P("x"))
    ws = np.array([0.5, 1.0, -2.0], np.float32)
    _close(jax.vmap(sm, in_axes=(None, 0))(A, ws), np.stack([sm(A, w) for w in ws]))
    batch = _rng.standard_normal((3, 4, 6)).astype(np.float32)
    _close(jax.jit(jax.vmap(sm, in_axes=(0, None)))(batch, 0.7),
           np.stack([sm(a, 0.7) for a in batch]))
    _close(jax.vmap(sm, in_axes=(2, None), out_axes=1)(np.moveaxis(batch, 0, 2), 0.7),
           np.stack([sm(a, 0.7) for a in batch], axis=1))
    scalar = jax.shard_map(lambda a, w: lax.psum(jnp.sum(jnp.sin(a * w)), "x"), mesh=MESH,
                           in_specs=(P("x"), P()), out_specs=P())
    per_w = jax.vmap(jax.grad(scalar, argnums=1), in_axes=(None, 0))(A, ws)
    _close(per_w, np.array([np.sum(np.cos(A * w) * A) for w in ws]), tol=1e-4)
    per_a = jax.vmap(jax.grad(scalar), in_axes=(0, None))(batch, 0.7)
    _close(per_a, np.cos(batch * 0.7) * 0.7)


def test_smap_maps_one_axis_of_the_current_mesh():
    with jax.set_mesh(MESH):
        f = jax.smap(lambda a: a * 2 + lax.axis_index("x"), in_axes=1, out_axes=-1,
                     axis_name="x")
        got = f(A)
        pairs = jax.smap(lambda a, b: (a + b, lax.psum(b, "x")), in_axes=(0, None),
                         out_axes=(0, None), axis_name="x")(A, np.ones(6, np.float32))
    _close(got, np.concatenate([b * 2 + k for k, b in enumerate(_blocks(A, 1))], axis=1))
    _close(pairs, (A + 1, np.full(6, 2.0)))


def test_a_shard_map_uses_the_current_mesh_and_infers_specs_from_placement():
    data = jax.device_put(A, jax.NamedSharding(MESH, P("x")))
    sm = jax.shard_map(lambda a: lax.psum(a, "x"), out_specs=P())
    with jax.set_mesh(MESH):
        _close(sm(data), sum(_blocks(A)))
    with pytest.raises(TranspileError, match="no mesh"):
        sm(data)


def test_source_shows_the_per_shard_code_and_its_collectives():
    sm = jax.shard_map(lambda a: lax.psum(a, "x"), mesh=MESH, in_specs=P("x"),
                       out_specs=P())
    source = sm.source
    assert "shard_map of <lambda> over mesh {'x': 2}" in source
    assert "in_specs P('x',); out_specs P()" in source
    assert "lax.psum" in source and "lambda a: lax.psum(a, \"x\")" in source


def test_check_vma_false_takes_the_first_shards_block():
    sm = jax.shard_map(lambda a: a, mesh=MESH, in_specs=P("x"), out_specs=P(),
                       check_vma=False)
    _close(sm(A), A[:2])


def test_bad_specs_are_errors_at_the_users_line():
    identity = lambda a: a  # noqa: E731
    with pytest.raises(ValueError, match="names mesh axis 'z', which is not in the mesh") as e:
        jax.shard_map(identity, mesh=MESH, in_specs=P("z"), out_specs=P())(A)
    assert "test_shard_map.py" in str(e.value)
    with pytest.raises(ValueError, match=r"argument 0 has shape \(3,\).*2 does not divide 3"):
        jax.shard_map(identity, mesh=MESH, in_specs=P("x"), out_specs=P("x"))(np.ones(3))
    with pytest.raises(TranspileError, match="unbound axis name 'q'"):
        jax.shard_map(lambda a: lax.psum(a, "q"), mesh=MESH, in_specs=P("x"),
                      out_specs=P("x"))(A)
    with pytest.raises(TranspileError, match="in_specs has 2 entries but the function was "
                                             "called with 1"):
        jax.shard_map(identity, mesh=MESH, in_specs=(P("x"), P()), out_specs=P("x"))(A)
    with pytest.raises(TranspileError, match="keyword arguments"):
        jax.shard_map(identity, mesh=MESH, in_specs=P("x"), out_specs=P("x"))(a=A)
    with pytest.raises(TypeError, match="specs must be PartitionSpecs"):
        jax.shard_map(identity, mesh=MESH, in_specs="x", out_specs=P())
    with pytest.raises(TranspileError, match="output 0 has 1 dimensions per shard but its "
                                             "out_specs"):
        jax.shard_map(lambda a: a[0], mesh=MESH, in_specs=P("x"),
                      out_specs=P(None, "x"))(A)


def test_an_output_claimed_replicated_that_differs_is_an_error_eagerly_and_under_jit():
    sm = jax.shard_map(lambda a: a, mesh=MESH, in_specs=P("x"), out_specs=P())
    with pytest.raises(TranspileError, match="says it is the same on every shard along mesh "
                                             "axis 'x'.*but it differs across 'x'") as e:
        sm(A)
    assert "test_shard_map.py" in str(e.value)
    with pytest.raises(ValueError, match="differs across 'x' \\(at .*test_shard_map.py"):
        jax.jit(sm)(A)
    same = jax.shard_map(lambda a: lax.pmax(a, "x"), mesh=MESH, in_specs=P("x"),
                         out_specs=P())
    _close(jax.jit(same)(A), np.maximum(*_blocks(A)))


MESH_OF_4 = r"""
import numpy as np, transpiler as jax
from transpiler import lax
from transpiler.sharding import PartitionSpec as P
mesh = jax.make_mesh((2, 2), ("x", "y"))
x = np.arange(16.0, dtype=np.float32).reshape(4, 4)
sm = lambda f, i, o: jax.shard_map(f, mesh=mesh, in_specs=i, out_specs=o)
out = {
    "psum_y": sm(lambda a: lax.psum(a, "y"), P("x", "y"), P("x", None))(x),
    "psum_xy": sm(lambda a: lax.psum(a, ("x", "y")), P("x", "y"), P())(x),
    "index_x": sm(lambda a: a * lax.axis_index("x"), P("x"), P("x"))(x),
    "index_y": sm(lambda a: a + 10 * lax.axis_index("y"), P(None, "y"), P(None, "y"))(x),
    "major": sm(lambda a: a, P(("x", "y")), P(("y", "x")))(np.arange(8.0, dtype=np.float32)),
    "tile_y": sm(lambda a: a, P("x"), P("x", "y"))(np.arange(8.0, dtype=np.float32)
                                                    .reshape(2, 4)),
    "grad": jax.grad(lambda w: sm(lambda a, w: lax.psum(jax.numpy.sum(a * w), ("x", "y")),
                                  (P("x", "y"), P()), P())(x, w))(2.0),
}
try:
    sm(lambda a: lax.psum(a, "x"), P("x", "y"), P("x", None))(x)
    out["claim"] = "no error"
except Exception as err:
    out["claim"] = str(err).split(": ", 1)[1][:60]
print(repr({k: np.asarray(v).tolist() if not isinstance(v, str) else v
            for k, v in out.items()}))
"""


def test_meshes_of_two_axes_against_numpy(tmp_path):
    env = {**os.environ, "TRANSPILER_CPU_DEVICES": "4", "PYTHONPATH": str(ROOT)}
    script = tmp_path / "mesh_of_4.py"  # (a file: vmap batches the functions' source)
    script.write_text(MESH_OF_4)
    run = subprocess.run([sys.executable, str(script)], env=env, capture_output=True,
                         text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    got = {k: v if isinstance(v, str) else np.array(v)
           for k, v in eval(run.stdout.strip()).items()}  # noqa: S307 (our child's repr)
    x = np.arange(16.0).reshape(4, 4)
    # psum over y: each (x) row block sums its two column blocks, joined by rows
    _close(got["psum_y"], x[:, :2] + x[:, 2:])
    _close(got["psum_xy"], x[:2, :2] + x[:2, 2:] + x[2:, :2] + x[2:, 2:])
    _close(got["index_x"], np.concatenate([x[:2] * 0, x[2:] * 1]))
    _close(got["index_y"], np.concatenate([x[:, :2], x[:, 2:] + 10], axis=1))
    _close(got["major"], np.array([0, 1, 4, 5, 2, 3, 6, 7]))  # JAX's answer
    _close(got["tile_y"], np.array([[0, 1, 2, 3, 0, 1, 2, 3], [4, 5, 6, 7, 4, 5, 6, 7]]))
    _close(got["grad"], x.sum())
    assert got["claim"].startswith("shard_map(<lambda>): out_specs P('x', None) of output 0"), \
        got["claim"]


def test_export_is_the_per_block_program_with_native_collectives(tmp_path):
    from tests.test_pmap_native import run_on_replicas

    w = _rng.standard_normal((6, 2)).astype(np.float32)
    sm = jax.shard_map(lambda a, w: lax.psum(a @ w, "x"), mesh=MESH, in_specs=(P("x"), P()),
                       out_specs=P())
    exported = sm.export(A, w)
    text = exported.as_text()
    assert "mhlo.num_replicas = 2" in text and "stablehlo.all_reduce" in text
    assert "tensor<2x6xf32>" in text  # one block of A per replica
    assert "iree.abi.affinity" in sm.lower(A, w).as_text()  # the devices strategy's
    blocks = np.stack(_blocks(A))
    results = run_on_replicas(tmp_path, {"psum": (exported.staged, [blocks, np.stack([w] * 2)])})
    for k in range(2):
        _close(results["psum"][k], sm(A, w))
    multi = jax.shard_map(lambda a: a, mesh=jax.make_mesh((2, 1), ("x", "y")),
                          in_specs=P("x"), out_specs=P("x"))
    with pytest.raises(TranspileError, match="a mesh of 2 axes runs emulated"):
        multi.export(A)


ALL_TO_ALL = [(0, 0, False), (0, 1, False), (1, 0, False), (0, 1, True), (0, 0, True),
              (1, 0, True)]


@pytest.mark.parametrize("split, concat, tiled", ALL_TO_ALL)
def test_all_to_all_against_jax_by_vmap_pmap_and_jit(split, concat, tiled):
    jax_ = pytest.importorskip("jax")
    x = _rng.standard_normal((2, 4, 2) if split == 0 else (2, 3, 4)).astype(np.float32)
    if not tiled:
        x = x[:, :2] if split == 0 else x[:, :, :2]

    def f(v):
        return lax.all_to_all(v, "i", split, concat, tiled=tiled)

    def theirs(v):
        return jax_.lax.all_to_all(v, "i", split, concat, tiled=tiled)

    want = jax_.vmap(theirs, axis_name="i")(x)
    for got in (jax.vmap(f, axis_name="i")(x), jax.pmap(f, axis_name="i")(x),
                jax.jit(jax.vmap(f, axis_name="i"))(x)):
        _close(got, np.asarray(want))
    w = _rng.standard_normal(np.shape(want)).astype(np.float32)
    want_grad = jax_.grad(lambda v: jax_.numpy.sum(jax_.vmap(theirs, axis_name="i")(v) * w))(x)
    _close(jax.grad(lambda v: jnp.sum(jax.vmap(f, axis_name="i")(v) * w))(x), want_grad)
