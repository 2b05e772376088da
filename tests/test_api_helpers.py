"""JAX's small top-level APIs: disable_jit, eval_shape, block_until_ready, typeof,
named_call/named_scope, ensure_compile_time_eval, checkpoint/remat, linear_transpose,
debug.print/callback, clear_caches, enable_x64, default_matmul_precision and the device and
process queries."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import transpiler as tj
import transpiler.numpy as jnp

X = np.arange(6, dtype=np.float32).reshape(2, 3)


def test_disable_jit_runs_the_python_every_call(capsys: pytest.CaptureFixture) -> None:
    calls = []

    @tj.jit
    def f(x: Any) -> Any:
        calls.append(type(x).__name__)
        print("inside f")
        if x.sum() > 0:  # concrete under disable_jit: plain Python control flow
            return x * 2
        return x

    expected = np.asarray(f(X))
    assert len(calls) == 1  # traced once, then the compiled code runs
    f(X)
    assert len(calls) == 1
    with tj.disable_jit():
        for _ in range(3):
            np.testing.assert_array_equal(np.asarray(f(X)), expected)
        assert all(name != "Tracer" for name in calls[1:])
        with tj.disable_jit(False):  # turned back on inside: the cached executable
            f(X)
    assert len(calls) == 4
    assert capsys.readouterr().out.count("inside f") == 4
    f(X)
    assert len(calls) == 4


def test_eval_shape_matches_jax() -> None:
    jax = pytest.importorskip("jax")

    def fun(a: Any, b: Any) -> Any:
        return {"prod": a @ b, "sum": a.sum(), "ints": b.argmax(axis=0)}, [a.T]

    b = np.ones((3, 4), np.float16)
    ours = tj.eval_shape(fun, tj.ShapeDtypeStruct((2, 3), np.float32), b)
    theirs = jax.eval_shape(fun, jax.ShapeDtypeStruct((2, 3), np.float32), b)
    flat = lambda tree, module: [(tuple(s.shape), np.dtype(s.dtype))  # noqa: E731
                                 for s in module.tree_util.tree_leaves(tree)]
    assert flat(ours, tj) == flat(theirs, jax)
    assert tj.tree_util.tree_structure(ours) == tj.tree_util.tree_structure(
        ({"prod": 0, "sum": 0, "ints": 0}, [0]))
    with pytest.raises(TypeError, match="callable"):
        tj.eval_shape(3, X)


def test_small_helpers() -> None:
    tree = {"a": jnp.ones(3), "b": [np.zeros(2), 4]}
    assert tj.block_until_ready(tree) is tree
    assert tj.jit(lambda x: x + 1)(X).block_until_ready() is not None
    aval = tj.typeof(X)
    assert aval.shape == (2, 3) and aval.dtype == np.float32
    assert tj.typeof(1.0).weak_type
    assert tj.tree.map(lambda v: v * 2, {"a": 1, "b": (2, 3)}) == {"a": 2, "b": (4, 6)}
    assert tj.jacobian is tj.jacrev

    def inner(x: Any) -> Any:
        return jnp.sin(x) * x

    named = tj.named_call(inner, name="inner")
    np.testing.assert_allclose(tj.grad(lambda x: jnp.sum(named(x)))(X),
                               tj.grad(lambda x: jnp.sum(inner(x)))(X))
    with tj.named_scope("block"):
        y = tj.jit(lambda x: x * 3)(X)
    np.testing.assert_array_equal(np.asarray(y), X * 3)
    with pytest.raises(TypeError, match="named_scope name must be a string"):
        with tj.named_scope(3):  # type: ignore[arg-type]
            pass
    with pytest.raises(TypeError, match="callable"):
        tj.named_call(3)


def test_ensure_compile_time_eval() -> None:
    @tj.jit
    def f(x: Any) -> Any:
        with tj.ensure_compile_time_eval():
            n = int(jnp.sum(jnp.arange(4)))  # concrete: a Python int while tracing
        return x * n + jnp.sum(x)  # traced values are staged as usual

    np.testing.assert_allclose(np.asarray(f(X)), X * 6 + X.sum())


def test_device_queries() -> None:
    assert tj.default_backend() == "cpu"
    assert tj.device_count() == tj.local_device_count() == len(tj.local_devices()) >= 1
    assert tj.local_devices() == tj.devices()
    assert (tj.process_count(), tj.process_index(), tj.process_indices()) == (1, 0, [0])
    assert (tj.host_count(), tj.host_id(), tj.host_ids()) == (1, 0, [0])
    with pytest.raises(RuntimeError, match="backend 'tpu' is not available"):
        tj.device_count("tpu")
    assert tj.devices("cpu") == tj.devices() and tj.device_count("cpu") == len(tj.devices())
    assert tj.local_devices(backend="cpu") == tj.devices()


def test_every_array_is_a_jax_array_with_its_devices_and_dlpack() -> None:
    host = jnp.arange(3.0)
    device = tj.jit(lambda a: a * 2)(np.ones(3, np.float32))
    seen = []
    tj.jit(lambda a: seen.append(isinstance(a, tj.Array)) or a)(host)
    assert isinstance(host, tj.Array) and isinstance(device, tj.Array) and seen == [True]
    assert not isinstance(np.ones(3), tj.Array) and tj.Array is jnp.ndarray
    with pytest.raises(TypeError, match="cannot be instantiated"):
        tj.Array(np.ones(3))
    assert host.devices() == {tj.devices()[0]} and host.sharding.device == tj.devices()[0]
    assert device.devices() == {device.device}
    np.testing.assert_array_equal(np.from_dlpack(host), [0.0, 1.0, 2.0])
    np.testing.assert_array_equal(np.from_dlpack(device), [2.0, 2.0, 2.0])
    assert host.__dlpack_device__() == (1, 0)
    jax = pytest.importorskip("jax")
    np.testing.assert_array_equal(np.asarray(jax.numpy.from_dlpack(device)), [2.0] * 3)


def test_checkpoint_is_the_function_under_every_transform() -> None:
    def layer(w: Any, x: Any) -> Any:
        return jnp.tanh(x @ w)

    def loss(w: Any, x: Any) -> Any:
        return jnp.sum(tj.checkpoint(layer)(w, x) ** 2)

    @tj.remat
    def loss_remat(w: Any, x: Any) -> Any:
        return jnp.sum(layer(w, x) ** 2)

    @tj.checkpoint(policy=tj.checkpoint_policies.dots_with_no_batch_dims_saveable)
    def loss_policy(w: Any, x: Any) -> Any:
        return jnp.sum(tj.ad_checkpoint.checkpoint_name(layer(w, x), "h") ** 2)

    def plain(w: Any, x: Any) -> Any:
        return jnp.sum(layer(w, x) ** 2)

    w = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)
    expected = np.asarray(tj.grad(plain)(w, X))
    for f in [loss, loss_remat, loss_policy]:
        np.testing.assert_allclose(np.asarray(tj.grad(f)(w, X)), expected, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(tj.jit(tj.grad(loss_remat))(w, X)), expected,
                               rtol=1e-5, atol=1e-5)
    policies = tj.checkpoint_policies
    assert policies.everything_saveable() and not policies.nothing_saveable()
    with pytest.raises(TypeError, match="policy must be callable"):
        tj.checkpoint(plain, policy="dots")
    jax = pytest.importorskip("jax")
    public = lambda m: {n for n in dir(m) if not n.startswith("_")}  # noqa: E731
    assert public(jax.checkpoint_policies) <= public(policies)


MATRIX = np.arange(6, dtype=np.float32).reshape(3, 2)


def test_linear_transpose_matches_jax() -> None:
    jax = pytest.importorskip("jax")

    def linear(x: Any, y: Any) -> Any:
        return {"a": 2 * x[::-1] + y.sum(), "b": x @ MATRIX - y[0]}  # (no jnp: JAX runs it)

    x, y = np.ones(3, np.float32), np.ones((3, 2), np.float32)
    cotangent = {"a": np.array([1.0, 2.0, 3.0], np.float32),
                 "b": np.array([0.5, -1.0], np.float32)}
    ours = tj.linear_transpose(linear, x, tj.ShapeDtypeStruct((3, 2), np.float32))(cotangent)
    theirs = jax.linear_transpose(linear, x, y)(cotangent)
    assert isinstance(ours, tuple) and len(ours) == 2
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-6)
    with pytest.raises(TypeError, match="float and complex"):
        tj.linear_transpose(lambda n: n * 2, np.ones(3, np.int32))


def test_debug_print_and_callback(capsys: pytest.CaptureFixture) -> None:
    def f(x: Any) -> Any:
        tj.debug.print("x={} total={total:.1f}", x, total=jnp.sum(x))
        return x + 1

    f(np.arange(3.0, dtype=np.float32))
    assert capsys.readouterr().out == "x=[0. 1. 2.] total=3.0\n"
    seen = []
    tj.debug.callback(lambda a, b: seen.append((type(a), b)), jnp.ones(2), b=5)
    assert seen == [(np.ndarray, 5)]
    jitted = tj.jit(f)
    with tj.disable_jit():
        jitted(np.ones(2, np.float32))
        jitted(np.ones(2, np.float32))
    assert capsys.readouterr().out.count("x=[1. 1.]") == 2
    jitted(np.ones(2, np.float32))  # staged: printed by the compiled module (test_debug.py)
    assert capsys.readouterr().out == "x=[1. 1.] total=2.0\n"


def test_clear_caches_retraces() -> None:
    traces = []

    @tj.jit
    def f(x: Any) -> Any:
        traces.append(1)
        return x * 2

    f(X)
    f(X)
    assert len(traces) == 1
    tj.clear_caches()
    np.testing.assert_array_equal(np.asarray(f(X)), X * 2)
    assert len(traces) == 2


def test_enable_x64_and_matmul_precision() -> None:
    assert jnp.ones(2).dtype == np.float32
    with tj.enable_x64():
        assert jnp.ones(2).dtype == np.float64
        with tj.enable_x64(False):
            assert jnp.ones(2).dtype == np.float32
        assert jnp.ones(2).dtype == np.float64
    assert jnp.ones(2).dtype == np.float32
    with tj.default_matmul_precision("float32"):
        np.testing.assert_allclose(np.asarray(tj.jit(jnp.matmul)(X, X.T)), X @ X.T)
    with pytest.raises(ValueError, match="unknown precision"):
        with tj.default_matmul_precision("triple"):
            pass
