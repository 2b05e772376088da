"""Tests for the `runtime` package (IREE devices, arrays and modules).

The IREE compiler is used here only to build test modules; it is compiled
once per session.
"""

from __future__ import annotations

import gc
import operator
import os
import subprocess
import sys
import weakref

import numpy as np
import pytest

import runtime
from runtime import Device, DeviceArray, DeviceNotFoundError

ml_dtypes = pytest.importorskip("ml_dtypes")
BF16 = np.dtype(ml_dtypes.bfloat16)

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# (mlir element type, numpy dtype, test values)
ROUNDTRIP = [
    ("f32", np.float32, [1.5, -2.0, 3.25]),
    ("f16", np.float16, [1.5, -2.0, 3.25]),
    ("bf16", BF16, [1.5, -2.0, 3.25]),
    ("f64", np.float64, [1.5, -2.0, 1e300]),
    ("i32", np.int32, [1, -2, 2**30]),
    ("i64", np.int64, [1, -2, 2**40]),
    ("ui32", np.uint32, [1, 2, 2**31]),
    ("ui8", np.uint8, [1, 2, 100]),
    ("i8", np.int8, [1, -2, 60]),
    ("i1", np.bool_, [True, False, True]),
]


def _mlir() -> str:
    fns = [
        """
func.func @add(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = stablehlo.add %a, %b : tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}
func.func @scalar_add(%a: tensor<f32>, %b: tensor<f32>) -> tensor<f32> {
  %0 = stablehlo.add %a, %b : tensor<f32>
  return %0 : tensor<f32>
}
func.func @sum_prod(%a: tensor<3xi32>, %b: tensor<3xi32>) -> (tensor<3xi32>, tensor<3xi32>) {
  %0 = stablehlo.add %a, %b : tensor<3xi32>
  %1 = stablehlo.multiply %a, %b : tensor<3xi32>
  return %0, %1 : tensor<3xi32>, tensor<3xi32>
}
func.func @neg_dyn(%a: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %0 = stablehlo.negate %a : tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}
func.func @nothing(%a: tensor<f32>) -> () {
  return
}
func.func @greater(%a: tensor<3xf32>, %b: tensor<3xf32>) -> tensor<3xi1> {
  %0 = stablehlo.compare GT, %a, %b : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xi1>
  return %0 : tensor<3xi1>
}
"""
    ]
    for t, _, _ in ROUNDTRIP:
        # Called as id_t(x, x): max(x, x) == x and (x, x) == x, computed on device.
        op = "stablehlo.and" if t == "i1" else "stablehlo.maximum"
        ty = f"tensor<3x{t}>"
        fns.append(f"func.func @id_{t}(%a: {ty}, %b: {ty}) -> {ty} {{\n"
                   f"  %0 = {op} %a, %b : {ty}\n  return %0 : {ty}\n}}")
    return "\n".join(fns)


@pytest.fixture(scope="session")
def vmfb_path(tmp_path_factory) -> str:
    from iree.compiler import compile_str  # tests only; never in runtime/

    vmfb = compile_str(
        _mlir(),
        target_backends=["llvm-cpu"],
        input_type="stablehlo",
        extra_args=[
            "--iree-llvmcpu-target-cpu=host",
            "--iree-input-demote-f64-to-f32=false",
        ],
    )
    path = tmp_path_factory.mktemp("vmfb") / "test.vmfb"
    path.write_bytes(vmfb)
    return str(path)


@pytest.fixture(scope="session")
def mod(vmfb_path):
    return runtime.load(vmfb_path, "local-sync")


# ------------------------------------------------------------------ devices
def test_device_caching_and_attributes():
    d = Device("local-sync")
    assert d is Device("local-sync") is Device("local-sync", 0)
    assert d.kind == "local-sync" and d.index == 0 and d.platform == "cpu"
    assert repr(d) == "Device(local-sync:0)"
    assert d.hal is not None and d.instance is Device("local-task").instance
    assert Device("local-task", 0) is not Device("local-task", 1)
    assert Device("local-task", 0).hal is not Device("local-task", 1).hal


def test_devices_and_counts():
    assert runtime.local_device_count() == int(os.environ.get("TRANSPILER_CPU_DEVICES", "2"))
    devs = runtime.devices()
    assert devs == [Device("local-task", i) for i in range(len(devs))]
    assert runtime.default_device() is Device("local-task", 0)
    assert len(runtime.devices("local-sync")) == runtime.local_device_count("local-sync")


def test_device_index_out_of_range():
    with pytest.raises(DeviceNotFoundError, match="local-task:99"):
        Device("local-task", 99)


@pytest.mark.parametrize("kind", ["cuda", "vulkan", "hip", "tpu"])
def test_missing_device_raises(kind):
    try:
        dev = Device(kind)
    except DeviceNotFoundError as e:
        assert isinstance(e, RuntimeError)
        assert kind in str(e) and "local-task" in str(e)
    else:  # A real GPU is present on this machine.
        assert dev.platform == "gpu"


# ------------------------------------------------------------ put / read
@pytest.mark.parametrize("t,dtype,values", ROUNDTRIP, ids=[r[0] for r in ROUNDTRIP])
@pytest.mark.parametrize("kind", ["local-sync", "local-task"])
def test_put_roundtrip(kind, t, dtype, values):
    host = np.array(values, dtype=dtype).reshape(3, 1)
    a = Device(kind).put(host)
    assert isinstance(a, DeviceArray)
    assert a.dtype == np.dtype(dtype) and a.shape == (3, 1)
    back = np.asarray(a)
    assert back.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(back, host)


def test_put_casts_scalars_and_noncontiguous():
    d = Device("local-sync")
    a = d.put([1, 2, 3], dtype=np.float32)
    assert a.dtype == np.float32
    x = np.arange(12, dtype=np.int32).reshape(3, 4)[:, ::2]
    np.testing.assert_array_equal(np.asarray(d.put(x)), x)
    s = d.put(2.5)
    assert s.shape == () and float(s) == 2.5 and s.dtype == np.float64
    assert d.put(np.zeros((0, 3), np.float32)).shape == (0, 3)


@pytest.mark.parametrize("bad", [np.array(["a"]), np.array([object()]), np.array(["2020-01-01"], "M8[s]")])
def test_put_unsupported_dtype(bad):
    with pytest.raises(TypeError, match="supported dtypes"):
        Device("local-sync").put(bad)


def test_put_complex_and_bigendian():
    d = Device("local-sync")
    c = np.array([1 + 2j, 3 - 4j], np.complex64)
    np.testing.assert_array_equal(np.asarray(d.put(c)), c)
    be = np.array([1.0, 2.0], dtype=">f4")
    np.testing.assert_array_equal(np.asarray(d.put(be)), be)


# ------------------------------------------------------------- modules
def test_load_path_and_bytes(vmfb_path):
    m1 = runtime.load(vmfb_path, Device("local-sync"))
    with open(vmfb_path, "rb") as f:
        m2 = runtime.load(f.read())
    assert m2.device is runtime.default_device()
    assert "add" in m1.function_names and m1.function_names == m2.function_names
    assert m1.add is m1["add"]
    assert "add" in repr(m1) and "add" in dir(m1)
    x = np.ones((2, 3), np.float32)
    np.testing.assert_array_equal(np.asarray(m2.add(x, x)), 2 * x)


def test_unknown_function(mod):
    with pytest.raises(AttributeError, match="available: .*add"):
        mod.nope
    with pytest.raises(KeyError, match="nope"):
        mod["nope"]


def test_missing_and_corrupt_files(tmp_path):
    missing = tmp_path / "missing.vmfb"
    with pytest.raises(FileNotFoundError, match="missing.vmfb"):
        runtime.load(missing)
    bad = tmp_path / "bad.vmfb"
    for payload in [b"garbage" * 20, b"", b"\x00" * 64, open(__file__, "rb").read()]:
        bad.write_bytes(payload)
        with pytest.raises(ValueError, match="not a valid IREE module.*bad.vmfb"):
            runtime.load(bad)
    with pytest.raises(ValueError, match="not a valid IREE module.*<bytes>"):
        runtime.load(b"not a module")
    with pytest.raises(TypeError):
        runtime.load(123)


@pytest.mark.parametrize("t,dtype,values", ROUNDTRIP, ids=[r[0] for r in ROUNDTRIP])
def test_call_roundtrip_dtypes(mod, t, dtype, values):
    fn = mod[f"id_{t}"]
    assert fn.input_signature == [((3,), np.dtype(dtype))] * 2
    host = np.array(values, dtype=dtype)
    out = fn(Device("local-sync").put(host), host)
    assert out.dtype == np.dtype(dtype) and out.shape == (3,)
    np.testing.assert_array_equal(np.asarray(out), host)


def test_call_with_device_arrays_and_numpy(mod):
    d = Device("local-sync")
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    r1 = mod.add(d.put(x), d.put(x))
    r2 = mod.add(x, x)
    r3 = mod.add(r1, x)  # results feed back in
    np.testing.assert_array_equal(np.asarray(r1), 2 * x)
    np.testing.assert_array_equal(np.asarray(r2), 2 * x)
    np.testing.assert_array_equal(np.asarray(r3), 3 * x)
    assert r1.device is d


def test_cross_device_cpu_buffers(vmfb_path):
    m = runtime.load(vmfb_path, Device("local-task", 1))
    a = Device("local-sync").put(np.float32(2))
    assert float(m.scalar_add(a, a)) == 4.0


def test_scalars_multi_result_none_and_bool(mod):
    assert float(mod.scalar_add(1, 2.5)) == 3.5
    s, p = mod.sum_prod(np.array([1, 2, 3]), [4, 5, 6])  # int64 -> int32 is same_kind
    assert s.dtype == np.int32
    np.testing.assert_array_equal(np.asarray(s), [5, 7, 9])
    np.testing.assert_array_equal(np.asarray(p), [4, 10, 18])
    assert mod.nothing(1.0) is None
    g = mod.greater([1, 5, 3], np.array([2, 2, 2], np.float32))
    assert g.dtype == np.bool_
    np.testing.assert_array_equal(np.asarray(g), [False, True, True])


def test_dynamic_shapes(mod):
    fn = mod.neg_dyn
    assert fn.input_signature == [((None, 4), np.dtype(np.float32))]
    for n in (0, 1, 5):
        x = np.arange(4 * n, dtype=np.float32).reshape(n, 4)
        out = fn(x)
        assert out.shape == (n, 4)
        np.testing.assert_array_equal(np.asarray(out), -x)
    with pytest.raises(ValueError, match=r"argument 0 .*float32\[\?,4\].*\(2, 3\)"):
        fn(np.zeros((2, 3), np.float32))


def test_dtype_casting_rules(mod):
    x64 = np.ones((2, 3), np.float64)
    np.testing.assert_array_equal(np.asarray(mod.add(x64, x64)), 2 * x64)  # f64->f32 ok
    xi = np.ones((2, 3), np.int32)
    np.testing.assert_array_equal(np.asarray(mod.add(xi, xi)), 2 * xi)  # int->float ok
    with pytest.raises(TypeError, match=r"argument 0 .*expects dtype int32, got float64"):
        mod.sum_prod(np.ones(3), np.ones(3, np.int32))
    with pytest.raises(TypeError, match=r"argument 1 .*float32.*DeviceArray of dtype float64"):
        mod.add(np.ones((2, 3), np.float32), Device("local-sync").put(x64))
    with pytest.raises(TypeError, match="expects dtype float32, got <U"):
        mod.scalar_add("a", 1.0)


def test_wrong_arg_count_and_shapes(mod):
    x = np.ones((2, 3), np.float32)
    with pytest.raises(TypeError, match=r"add\(\) takes 2 arguments "
                       r"\(input0: float32\[2,3\], input1: float32\[2,3\]\), got 3"):
        mod.add(x, x, x)
    with pytest.raises(ValueError, match=r"argument 1 \(input1\) expects shape float32\[2,3\], got shape \(3, 2\)"):
        mod.add(x, x.T.copy())
    with pytest.raises(ValueError, match=r"argument 0"):
        mod.add(Device("local-sync").put(np.ones(6, np.float32)), x)


def test_signatures_and_invoke_flat(mod):
    fn = mod.sum_prod
    assert fn.output_signature == [((3,), np.dtype(np.int32))] * 2
    assert "sum_prod(input0: int32[3], input1: int32[3])" in repr(fn)
    d = Device("local-sync")
    a = d.put(np.array([1, 2, 3], np.int32))
    outs = fn.invoke_flat([a.buffer_view, a.buffer_view])
    assert len(outs) == 2 and list(outs[1].shape) == [3]
    # IREE's own failures become RuntimeError naming the function.
    bad = d.put(np.ones(4, np.int32))
    with pytest.raises(RuntimeError, match="sum_prod"):
        fn.invoke_flat([bad.buffer_view, bad.buffer_view])


def test_ui32_signature_uses_abi_encoding(mod):
    assert mod.id_ui32.input_signature[0][1] == np.uint32
    with pytest.raises(TypeError):
        mod.id_ui32(np.array([-1, 2, 3], np.int32), np.zeros(3, np.uint32))


# ------------------------------------------------------------- lifetimes
def test_results_outlive_module_and_context(vmfb_path):
    m = runtime.load(vmfb_path, "local-sync")
    fn = m.scalar_add
    r = fn(np.float32(1), np.float32(2))
    mref = weakref.ref(m)
    del m, fn
    gc.collect()
    assert mref() is None
    assert float(r) == 3.0 and r.tolist() == 3.0


def test_function_keeps_module_alive(vmfb_path):
    fn = runtime.load(vmfb_path, "local-sync").scalar_add
    gc.collect()
    assert float(fn(1, 2)) == 3.0


def test_host_copy_outlives_array(mod):
    r = mod.add(np.ones((2, 3), np.float32), np.ones((2, 3), np.float32))
    host = np.asarray(r)
    mine = r.to_numpy()
    del r
    gc.collect()
    for _ in range(3):  # churn allocations that could reuse the buffer
        mod.add(np.zeros((2, 3), np.float32), np.zeros((2, 3), np.float32))
    np.testing.assert_array_equal(host, np.full((2, 3), 2, np.float32))
    mine[0, 0] = 7  # to_numpy() is a writable private copy
    assert not host.flags.writeable


def test_runtime_does_not_import_compiler():
    code = ("import runtime, sys; "
            "assert not any(m.startswith('iree.compiler') for m in sys.modules)")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO_ROOT)


# ------------------------------------------------------ DeviceArray fallback
def test_devicearray_protocols():
    d = Device("local-sync")
    x = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
    a = d.put(x)
    assert a.ndim == 2 and a.size == 4 and a.nbytes == 16 and len(a) == 2
    assert a.block_until_ready() is a
    assert repr(a) == "DeviceArray([[1., 2.],\n             [3., 4.]], dtype=float32)"
    assert repr(d.put(np.array([1, 2], np.int32))) == "DeviceArray([1, 2], dtype=int32)"
    assert [row.tolist() for row in a] == x.tolist()
    assert a.tolist() == x.tolist()
    np.testing.assert_array_equal(a[1], x[1])
    np.testing.assert_array_equal(a[:, d.put(np.int32(0))], x[:, 0])
    s = d.put(np.int32(3))
    assert int(s) == 3 and float(s) == 3.0 and bool(s) and s.item() == 3
    assert [10, 20, 30, 40][s] == 40 and operator.index(s) == 3
    with pytest.raises(TypeError):
        operator.index(d.put(np.float32(1)))
    with pytest.raises(TypeError):
        len(s)
    with pytest.raises(TypeError):
        hash(a)
    with pytest.raises(ValueError):
        bool(a)
    with pytest.raises(TypeError):
        a[0] = 1
    with pytest.raises(TypeError):
        DeviceArray()


def test_devicearray_operators_numpy_semantics():
    d = Device("local-sync")
    x = np.array([1.0, 2.0, 3.0], np.float32)
    a = d.put(x)
    for res, want in [
        (a + 1, x + 1), (1 + a, 1 + x), (a * a, x * x), (-a, -x), (a / 2, x / 2),
        (a ** 2, x ** 2), (a > 1.5, x > 1.5), (a == x, x == x), (x - a, x - x),
        (np.sin(a), np.sin(x)), (np.sum(a), np.sum(x)), (abs(-a), x),
    ]:
        assert isinstance(res, (np.ndarray, np.generic)), type(res)
        np.testing.assert_allclose(res, want)
    assert (a + 1).dtype == np.float32
    assert np.asarray(a, dtype=np.int32).dtype == np.int32
    assert np.array(a) is not np.asarray(a)


def test_devicearray_subclass_wrap():
    class Sub(DeviceArray):
        __slots__ = ()

        def __add__(self, other):
            return "sub-add"

    base = Device("local-sync").put(np.ones(2, np.float32))
    s = Sub._wrap(base.buffer_view, base.device, base.dtype, base.shape)
    assert s + 1 == "sub-add" and isinstance(s, DeviceArray)
    np.testing.assert_array_equal(np.asarray(s), [1, 1])
    assert weakref.ref(s)() is s
    assert not hasattr(s, "__dict__")


def test_load_with_array_class(vmfb_path):
    class Sub(DeviceArray):
        __slots__ = ()

    m = runtime.load(vmfb_path, "local-sync", array_class=Sub)
    assert type(m.scalar_add(1, 2)) is Sub
