"""The ``transpiler`` command end to end: build examples/mlp.py for the CPU and a cross
target, run it with the runtime alone (no iree.compiler imported), show, cache, and the
one-line errors for bad input."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "mlp.py"


def cli(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "transpiler", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("build")
    result = cli("build", f"{EXAMPLE}::predict", "-o", str(out), "--target",
                 "llvm-cpu,vulkan-spirv,cuda,rocm,stablehlo")
    assert result.returncode == 0, result.stderr + result.stdout
    assert "[1/5] predict" in result.stdout and "wrote" in result.stdout
    return out


def _inputs(tmp: Path) -> tuple[list[str], list[np.ndarray]]:
    rng = np.random.default_rng(0)
    shapes = [(784, 128), (128,), (128, 10), (10,), (128, 784)]
    arrays = [(rng.standard_normal(s) * 0.1).astype(np.float32) for s in shapes]
    files = []
    for i, a in enumerate(arrays):
        files.append(str(tmp / f"in{i}.npy"))
        np.save(files[-1], a)
    return files, arrays


def test_build_writes_artifacts_and_manifest(built):
    manifest = json.loads((built / "manifest.json").read_text())
    entry = manifest["functions"]["predict"]
    assert entry["inputs"][4] == {"dtype": "float32", "shape": [128, 784]}
    assert entry["outputs"] == [{"dtype": "float32", "shape": [128, 10]}]
    assert set(entry["artifacts"]) == {"llvm-cpu", "vulkan-spirv", "cuda", "rocm"}  # stablehlo: the .mlir
    assert (built / "predict.mlir").read_text().startswith("module")
    assert manifest["tools"]["iree-compiler"]
    assert not [p for p in built.iterdir() if p.name.endswith(".tmp")]


def test_run_with_the_runtime_alone(built, tmp_path):
    files, arrays = _inputs(tmp_path)
    code = ("import sys, runtime.cli as c; rc = c.main(sys.argv[1:]); "
            "assert 'iree.compiler' not in sys.modules and 'transpiler' not in sys.modules; "
            "sys.exit(rc)")
    result = subprocess.run([sys.executable, "-c", code, "run", str(built), "predict",
                             "--input", *files, "--output", str(tmp_path)],
                            env={**os.environ, "PYTHONPATH": str(ROOT)},
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert "float32[128, 10]  written to" in result.stdout
    got = np.load(tmp_path / "predict.out.npy")
    sys.path.insert(0, str(ROOT / "examples"))
    import mlp
    np.testing.assert_allclose(got, np.asarray(mlp.predict(*arrays)), rtol=1e-4, atol=1e-5)


def test_run_errors(built, tmp_path):
    files, _ = _inputs(tmp_path)
    bad = tmp_path / "bad.npy"
    np.save(bad, np.zeros((3, 3), np.float32))
    result = cli("run", str(built), "predict", "--input", *files[:4], str(bad))
    assert result.returncode == 2
    assert "input 4" in result.stderr and "float32[3, 3]" in result.stderr \
        and "float32[128, 784]" in result.stderr
    assert "takes 5 inputs" in cli("run", str(built), "predict", "--input", files[0]).stderr
    assert "no function 'nope'" in cli("run", str(built), "nope").stderr
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "manifest.json").write_text('{"format": "other"}')
    assert "not a transpiler build manifest" in cli("run", str(foreign), "predict").stderr
    corrupt = tmp_path / "corrupt"
    corrupt.mkdir()
    for f in built.iterdir():
        (corrupt / f.name).write_bytes(f.read_bytes())
    (corrupt / "predict.llvm-cpu.vmfb").write_bytes(b"not a module")
    result = cli("run", str(corrupt), "predict", "--input", *files)
    assert result.returncode == 2 and "does not match the manifest" in result.stderr


def test_show(tmp_path):
    source = tmp_path / "prog.py"
    source.write_text("import transpiler as jax\nimport transpiler.numpy as jnp\n\n"
                      "def f(x):\n    return jnp.sum(jnp.sin(x))\n\ng = jax.grad(f)\n")
    result = cli("show", f"{source}::g")
    assert result.returncode == 0 and "def vjp_f(" in result.stdout
    result = cli("show", f"{source}::f", "--stage", "stablehlo", "--args", "f32[3]")
    assert "stablehlo.sine" in result.stdout
    result = cli("show", f"{source}::f")  # no signatures: its code, and how to see more
    assert result.returncode == 0 and "a plain function without argument signatures" in \
        result.stdout and "def f(x):" in result.stdout
    assert "has no function 'h'; it defines: f, g" in cli("show", f"{source}::h").stderr
    assert "cannot parse the signature 'q32[3]'" in cli(
        "show", f"{source}::f", "--stage", "stablehlo", "--args", "q32[3]").stderr


def test_build_errors(tmp_path):
    broken = tmp_path / "broken.py"
    broken.write_text("def f(x:\n")
    result = cli("build", str(broken), "-o", str(tmp_path / "o"))
    assert result.returncode == 2 and f"{broken}:1" in result.stderr
    result = cli("build", str(EXAMPLE), "-o", str(tmp_path / "o"), "--target", "tpu")
    assert "unknown target 'tpu'; available targets: llvm-cpu, vulkan-spirv, cuda, rocm, " \
        "stablehlo" in result.stderr
    blocker = tmp_path / "file"
    blocker.write_text("")
    result = cli("build", f"{EXAMPLE}::predict", "-o", str(blocker / "sub"))
    assert result.returncode == 2 and "cannot write to" in result.stderr


def test_cache_info_and_help(tmp_path):
    result = cli("cache", "info")
    assert result.returncode == 0 and "cache folder:" in result.stdout
    assert "show" in cli("--help").stdout and "--stage" in cli("show", "--help").stdout
    assert "--input" in cli("run", "--help").stdout


def test_build_example_args_jobs_and_partial_failure(tmp_path):
    source = tmp_path / "prog.py"
    source.write_text(
        "import transpiler as jax\nimport transpiler.numpy as jnp\n\n"
        "@jax.jit(example_args=(jax.ShapeDtypeStruct((4,), 'float32'),))\n"
        "def double(x):\n    return x * 2\n\n"
        "def broken(x: 'f32[3]'):\n    return jnp.reshape(x, (2, 2))\n\n"
        "def scaled(x: 'f32[2,2]', s: 'f32'):\n    return x * s\n")
    out = tmp_path / "out"
    result = cli("build", str(source), "-o", str(out), "--jobs", "2")
    assert result.returncode == 1, result.stdout + result.stderr  # one function failed
    assert "broken       llvm-cpu       FAILED" in result.stdout
    assert "prog.py:9" in result.stdout  # the user's line
    manifest = json.loads((out / "manifest.json").read_text())
    assert set(manifest["functions"]) == {"double", "scaled"}
    assert manifest["functions"]["scaled"]["inputs"][1] == {"dtype": "float32", "shape": []}
    np.save(tmp_path / "x.npy", np.arange(4, dtype=np.float32))
    result = cli("run", str(out), "double", "--input", str(tmp_path / "x.npy"), "--print")
    assert result.returncode == 0 and "[0. 2. 4. 6.]" in result.stdout


def test_built_python_module_runs_on_the_runtime_alone(built, tmp_path):
    files, arrays = _inputs(tmp_path)
    for i, a in enumerate(arrays):
        np.save(tmp_path / f"a{i}.npy", a)
    code = (f"import sys, numpy as np; sys.path.insert(0, {str(built)!r}); "
            "import mlp_transpiled as m; "
            f"args = [np.load({str(tmp_path)!r} + f'/a{{i}}.npy') for i in range(5)]; "
            f"np.save({str(tmp_path / 'got.npy')!r}, m.predict(*args)); "
            "assert 'iree.compiler' not in sys.modules and 'transpiler' not in sys.modules")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=300)
    assert result.returncode == 0, result.stderr
    sys.path.insert(0, str(ROOT / "examples"))
    import mlp
    np.testing.assert_allclose(np.load(tmp_path / "got.npy"), np.asarray(mlp.predict(*arrays)),
                               rtol=1e-4, atol=1e-5)


def test_compile_save_and_load_in_a_fresh_process(tmp_path):
    import transpiler as jax
    import transpiler.numpy as jnp
    x = np.linspace(0, 1, 8, dtype=np.float32)
    lowered = jax.jit(lambda v: jnp.sin(v) * 2).lower(x)
    assert "stablehlo.sine" in lowered.as_text() and "linalg" in lowered.as_text("linalg")
    lowered.compile().save(tmp_path / "f.vmfb")
    for target in ("vulkan-spirv", "cuda"):  # cross-compiled: saved, not loaded here
        cross = lowered.compile(target=target)
        cross.save(tmp_path / f"f.{target}.vmfb")
        assert (tmp_path / f"f.{target}.vmfb").stat().st_size > 1000
        with pytest.raises(RuntimeError, match=f"compiled for {target}"):
            cross(x)
    code = (f"import sys, numpy as np, runtime; m = runtime.load({str(tmp_path / 'f.vmfb')!r}); "
            "out = np.asarray(m['main'](np.linspace(0, 1, 8, dtype=np.float32))); "
            "print(' '.join(f'{v:.6f}' for v in out)); "
            "assert 'iree.compiler' not in sys.modules")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=300)
    assert result.returncode == 0, result.stderr
    np.testing.assert_allclose([float(v) for v in result.stdout.split()], np.sin(x) * 2,
                               rtol=1e-5)


ANNOTATED = """import transpiler as jax
import transpiler.numpy as jnp

def loss(w: "f32[3]", x: "f32[4,3]"):
    return jnp.sum(jnp.tanh(x @ w))

dloss = jax.grad(loss)

def helper(a, b):
    return a + b
"""


def test_signatures_flow_through_transforms_and_skips_are_reported(tmp_path):
    source = tmp_path / "prog.py"
    source.write_text(ANNOTATED)
    result = cli("show", f"{source}::loss")  # a plain function: its StableHLO by default
    assert result.returncode == 0 and "stablehlo.tanh" in result.stdout
    result = cli("show", f"{source}::dloss", "--stage", "stablehlo")
    assert result.returncode == 0 and "-> tensor<3xf32>" in result.stdout
    out = tmp_path / "out"
    old = os.umask(0o022)
    try:
        result = cli("build", str(source), "-o", str(out))
    finally:
        os.umask(old)
    assert result.returncode == 0, result.stderr
    assert "skipped helper: no argument signatures" in result.stdout
    assert {"loss", "dloss"} <= set(json.loads((out / "manifest.json").read_text())
                                    ["functions"])
    assert {oct(p.stat().st_mode & 0o777) for p in out.iterdir()} == {"0o644"}  # the umask's


def test_run_on_a_missing_device_is_one_line(tmp_path):
    import runtime
    try:
        runtime.devices("vulkan")
        pytest.skip("this machine has Vulkan")
    except runtime.DeviceNotFoundError:
        pass
    source = tmp_path / "prog.py"
    source.write_text(ANNOTATED)
    out = tmp_path / "out"
    assert cli("build", f"{source}::loss", "-o", str(out), "--target",
               "vulkan-spirv").returncode == 0
    np.save(tmp_path / "w.npy", np.ones(3, np.float32))
    np.save(tmp_path / "x.npy", np.ones((4, 3), np.float32))
    result = cli("run", str(out), "loss", "--device", "vulkan", "--input",
                 str(tmp_path / "w.npy"), str(tmp_path / "x.npy"))
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1
    assert result.stderr.startswith("transpiler run: error: device 'vulkan' is not available")


def test_show_colours_python_and_mlir_by_pygments():
    import re

    from transpiler.cli.highlight import highlight
    mlir = "func.func @main(%arg0: tensor<4x3xf32>) -> tensor<f32> {  // a comment\n" \
           "  %0 = stablehlo.add %arg0, %arg0 : tensor<4x3xf32>\n}\n"
    python = "def f(x):\n    return x * 2  # twice\n"
    for text, kind in ((mlir, "mlir"), (python, "python")):
        coloured = highlight(text, kind)
        assert "\033[" in coloured
        assert re.sub(r"\033\[[\d;]*m", "", coloured) == text  # colour added, nothing lost
