"""jit: specialization, caching, pytrees, static arguments, devices, errors, inspection."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import runtime
import transpiler as jax
import transpiler.numpy as jnp
from transpiler import TranspileError
from transpiler.compiler import CompileStats

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_jit_matches_numpy_and_stays_on_device():
    f = jax.jit(lambda x, y: jnp.tanh(x * y + 1.0))
    x = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)
    out = f(x, x)
    assert isinstance(out, jax.DeviceArray)
    assert out.dtype == np.float32 and out.shape == (3, 4)
    np.testing.assert_allclose(out, np.tanh(x * x + 1), rtol=1e-6)
    again = f(out, out)  # device results go straight back in
    np.testing.assert_allclose(again, np.tanh(np.asarray(out) ** 2 + 1), rtol=1e-6)
    eager = (out + 1) * 2  # and can be used like any array
    np.testing.assert_allclose(eager, (np.asarray(out) + 1) * 2, rtol=1e-6)
    assert out.block_until_ready() is out


def test_specializes_on_shape_dtype_weak_type_and_caches():
    traces = []

    def f(x):
        traces.append(x.aval)
        return x * 2

    g = jax.jit(f)
    g(np.ones(3, np.float32))
    g(np.ones(3, np.float32))
    assert len(traces) == 1
    g(np.ones(4, np.float32))
    assert len(traces) == 2
    out = g(np.ones(3, np.int32))
    assert out.dtype == np.int32 and len(traces) == 3
    out = g(2.0)  # a weak Python float
    assert out.dtype == np.float32 and len(traces) == 4
    g(3.0)
    assert len(traces) == 4


def test_pytrees_kwargs_and_static_args():
    @jax.jit
    def loss(params, x, scale=1.0):
        h = x @ params["w"] + params["b"]
        return {"out": h * scale, "parts": (h.sum(), [h.mean()])}

    params = {"w": np.eye(3, dtype=np.float32), "b": np.ones(3, np.float32)}
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    res = loss(params, x, scale=2.0)
    np.testing.assert_allclose(res["out"], (x + 1) * 2)
    np.testing.assert_allclose(res["parts"][0], (x + 1).sum())
    np.testing.assert_allclose(res["parts"][1][0], (x + 1).mean())

    def power(x, n):
        out = x
        for _ in range(n - 1):  # a static Python loop: unrolled at trace time
            out = out * x
        return out

    p = jax.jit(power, static_argnums=1)
    np.testing.assert_allclose(p(np.float32(2.0), 5), 32.0)
    np.testing.assert_allclose(p(np.float32(2.0), 3), 8.0)
    q = jax.jit(power, static_argnames="n")
    np.testing.assert_allclose(q(np.float32(3.0), n=2), 9.0)
    with pytest.raises(TypeError, match="must be hashable"):
        p(np.float32(2.0), [3])


def test_python_if_on_traced_value_compiles_to_structured_control_flow():
    def f(x):
        if x.sum() > 0:
            return x
        return -x

    for x in (np.ones(3, np.float32), -np.ones(3, np.float32)):
        np.testing.assert_allclose(np.asarray(jax.jit(f)(x)), np.abs(x))
    assert '"stablehlo.if"' in jax.jit(f).lower(np.ones(3, np.float32)).as_text()


def test_python_bool_on_traced_value_names_the_users_line():
    def f(x):
        assert x.sum() > 0  # the offending line
        return x

    with pytest.raises(TranspileError) as info:
        jax.jit(f)(np.ones(3, np.float32))
    err = info.value
    assert err.file == __file__ and "assert x.sum() > 0" in str(err)
    assert "jnp.where" in str(err) and "static_argnums" in str(err)


def test_shape_errors_name_the_users_line():
    def f(x, y):
        return x + y  # incompatible shapes

    with pytest.raises(TranspileError) as info:
        jax.jit(f)(np.ones(3, np.float32), np.ones(4, np.float32))
    assert info.value.file == __file__ and "[3] and [4]" in str(info.value)
    assert "return x + y" in str(info.value)


def test_bad_arguments_get_clear_errors():
    f = jax.jit(lambda x: x + 1)
    with pytest.raises(TypeError, match="str"):
        f("hello")
    with pytest.raises(TypeError, match="object"):
        f(np.array([object()]))
    with pytest.raises(TypeError, match="positional argument"):
        f(1.0, 2.0)
    with pytest.raises(TypeError):
        jax.jit(42)


def test_lower_as_text_stages_and_locations():
    def f(x):
        return jnp.sin(x) * 2.0

    lowered = jax.jit(f).lower(np.ones((2, 2), np.float32))
    text = lowered.as_text()
    assert "stablehlo.sine" in text and "tensor<2x2xf32>" in text
    located = lowered.as_text(debug_info=True)
    assert f'"{__file__}"' in located  # ops carry the user's file:line:col
    assert "linalg.generic" in lowered.as_text("linalg")


def test_compile_save_and_load_without_the_compiler(tmp_path):
    f = jax.jit(lambda x, y: x * y + 1)
    args = (np.arange(4, dtype=np.float32), np.float32(3.0))
    compiled = f.lower(*args).compile()
    np.testing.assert_allclose(compiled(*args), np.arange(4) * 3 + 1)
    path = tmp_path / "f.vmfb"
    compiled.save(path)
    code = textwrap.dedent(f"""
        import sys, numpy as np, runtime
        m = runtime.load({str(path)!r})
        out = m.main(np.arange(4, dtype=np.float32), np.float32(3.0))
        assert np.allclose(np.asarray(out), np.arange(4) * 3 + 1), out
        assert not any(k.startswith("iree.compiler") for k in sys.modules)
        print("ok")
    """)
    res = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert res.returncode == 0 and "ok" in res.stdout, res.stderr


def test_second_process_compiles_nothing(tmp_path):
    script = tmp_path / "prog.py"
    script.write_text(textwrap.dedent("""
        import time, numpy as np
        import transpiler as jax, transpiler.numpy as jnp
        from transpiler.compiler import CompileStats
        f = jax.jit(lambda x: jnp.exp(x).sum())
        t = time.perf_counter()
        out = f(np.ones(16, np.float32))
        print(CompileStats.compiles, CompileStats.cache_hits, float(out))
    """))
    env = dict(os.environ, TRANSPILER_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=ROOT)
    runs = [subprocess.run([sys.executable, str(script)], env=env, capture_output=True,
                           text=True, cwd=ROOT) for _ in range(2)]
    for r in runs:
        assert r.returncode == 0, r.stderr
    first, second = (r.stdout.split() for r in runs)
    assert first[:2] == ["1", "0"] and second[:2] == ["0", "1"]
    assert abs(float(second[2]) - 16 * np.e) < 1e-3

    # A corrupt entry is detected and rebuilt.
    (entry,) = (tmp_path / "cache" / "vmfb").glob("*/*.vmfb")
    entry.write_bytes(entry.read_bytes()[:-100] + b"x" * 100)
    third = subprocess.run([sys.executable, str(script)], env=env, capture_output=True,
                           text=True, cwd=ROOT)
    assert third.returncode == 0 and third.stdout.split()[:2] == ["1", "0"]
    assert "is corrupt" in third.stderr


def test_scalar_arguments_share_a_buffer_only_with_the_same_bits():
    """A scalar argument's device buffer is kept for the next call with the same value:
    -0.0 is not 0.0, NaN is NaN, a Python number takes the argument's dtype, and more
    distinct values than are kept still give their own answers."""
    divide = jax.jit(lambda x, s: x / s)
    x = np.ones(2, np.float32)
    values = [0.0, -0.0, 2.0, np.float32(2.0), np.float32(-0.0), 3, np.nan, 0.5]
    values += [float(v) for v in range(100)] + [np.float32(v) for v in range(100)]
    for v in values * 2:
        with np.errstate(divide="ignore", invalid="ignore"):
            want = x / np.float32(v)
        got = np.asarray(divide(x, v))
        np.testing.assert_array_equal(got, want)
        assert np.array_equal(np.signbit(got), np.signbit(want))
    flag = jax.jit(lambda x, b: jnp.where(b, x, -x))
    assert np.asarray(flag(x, True)).tolist() == [1.0, 1.0]
    assert np.asarray(flag(x, np.bool_(False))).tolist() == [-1.0, -1.0]


def test_devices_and_driver_choice():
    small = jax.jit(lambda x: x + 1)
    out = small(np.ones(4, np.float32))
    assert out.device.kind == "local-sync"  # tiny work: the low-overhead driver
    big = jax.jit(lambda x: x + 1)
    assert big(np.ones(1 << 17, np.float32)).device.kind == "local-task"
    pinned = jax.jit(lambda x: x + 1, device="local-task")
    assert pinned(np.ones(4, np.float32)).device.kind == "local-task"
    assert jax.local_device_count() >= 2 and len(jax.devices()) == jax.local_device_count()
    with pytest.raises(runtime.DeviceNotFoundError, match="cuda"):
        jax.jit(lambda x: x, device="cuda")(np.ones(2, np.float32))


def test_jit_inside_jit_inlines_and_leaked_tracers_are_caught():
    inner = jax.jit(lambda x: x * 3)
    outer = jax.jit(lambda x: inner(x) + 1)
    np.testing.assert_allclose(outer(np.float32(2.0)), 7.0)

    leaked = []

    @jax.jit
    def leak(x):
        leaked.append(x)
        return x

    leak(np.float32(1.0))
    with pytest.raises(TranspileError, match="escaped"):
        jnp.sin(leaked[0])


def test_x64_keeps_float64(monkeypatch):
    monkeypatch.setattr(jax.config, "enable_x64", True)
    f = jax.jit(lambda x: x * 1.0000000001)
    x = np.array([1.0, 2.0])
    out = f(x)
    assert out.dtype == np.float64
    np.testing.assert_allclose(out, x * 1.0000000001, rtol=1e-15)
    assert jnp.arange(3).dtype == np.int64


def test_default_dtypes_without_x64():
    assert jnp.array([1.0, 2.0]).dtype == np.float32
    assert jnp.array([1, 2]).dtype == np.int32
    assert jnp.asarray(np.array([1.0])).dtype == np.float32  # float64 canonicalized
    out = jax.jit(lambda x: x + 1)(np.array([1.0, 2.0]))
    assert out.dtype == np.float32
    assert CompileStats.compiles + CompileStats.cache_hits > 0


def test_a_non_array_argument_is_named_past_a_static_one():
    def f(x, n, y):
        return x * n

    with pytest.raises(TypeError, match=r"jit\(f\): argument `y` is not an array: got str"):
        jax.jit(f, static_argnames="n")(np.ones(2, np.float32), 2, "s")
