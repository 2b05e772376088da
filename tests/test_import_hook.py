"""The import hook: opted-in modules are rewritten when imported; their generated code
lives in ``__transpiler__/`` next to the source, and a second import (a new process)
loads it without importing libcst."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

MODULE = '''
import transpiler as jax
import transpiler.numpy as jnp


def loss(w, x):
    return jnp.sum(jnp.tanh(x @ w) ** 2)


grad_loss = jax.grad(loss)
batched_loss = jax.vmap(loss, in_axes=(None, 0))
jacobian = jax.jacfwd(loss)
parallel_grad = jax.pmap(jax.grad(loss), in_axes=(None, 0))
hess = jax.hessian(loss)


@jax.jit
def step(w, x):
    return w - 0.1 * grad_loss(w, x)
'''

SCRIPT = '''
import sys, numpy as np, transpiler
transpiler.install_import_hook("hookpkg")
import hookpkg.models as m
print("libcst" in sys.modules)
w, x = np.ones((3, 2), np.float32), np.ones((4, 3), np.float32)
print(float(np.asarray(m.grad_loss(w, x)).sum()))
print(float(np.asarray(m.batched_loss(w, np.stack([x, 2 * x]))).sum()))
print(float(np.asarray(m.parallel_grad(w, np.stack([x, 2 * x]))).sum()))
print(float(np.asarray(m.hess(w, x)).sum()))
'''


def _run(tmp: Path, cache: Path) -> list[str]:
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{tmp}",
           "TRANSPILER_CACHE_DIR": str(cache)}
    result = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    return result.stdout.split()


def test_second_import_reuses_generated_code_without_libcst(tmp_path):
    package = tmp_path / "hookpkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "models.py").write_text(MODULE)
    first = _run(tmp_path, tmp_path / "cache1")
    assert first[0] == "True"  # rewritten on import: the frontend ran
    assert list((package / "__transpiler__").rglob("*.json")), "no generated code stored"
    second = _run(tmp_path, tmp_path / "cache2")  # a fresh user cache: only __transpiler__
    assert second == ["False", *first[1:]]
    (package / "models.py").write_text(MODULE.replace("** 2", "** 3"))  # source changed
    third = _run(tmp_path, tmp_path / "cache3")
    assert third[0] == "True" and third[1] != first[1]


def test_generation_errors_surface_at_import(tmp_path):
    package = tmp_path / "hookpkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "models.py").write_text(
        "import transpiler as jax\n\ndef f(x):\n    class A: pass\n    return x\n\n"
        "grad_loss = jax.grad(f)\n")
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{tmp_path}"}
    result = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True,
                            text=True, timeout=300)
    assert result.returncode != 0 and "models.py:4" in result.stderr


def test_decorators_rewrite_at_import_unless_turned_off(tmp_path):
    (tmp_path / "flagged.py").write_text(
        "import transpiler as jax\n\n@jax.grad\ndef f(x):\n    class A: pass\n    return x\n")
    code = "import flagged"
    base = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{tmp_path}"}
    lazy = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**base, "TRANSPILER_REWRITE_ON_IMPORT": "0"}, timeout=300)
    assert lazy.returncode == 0, lazy.stderr  # generated at first call
    eager = subprocess.run([sys.executable, "-c", code], env=base, capture_output=True,
                           text=True, timeout=300)  # the default: at the decorator
    assert eager.returncode != 0 and "flagged.py:5" in eager.stderr


def test_hessian_is_generated_at_the_decorator(tmp_path):
    (tmp_path / "hessmod.py").write_text(
        "import transpiler as jax\n\ndef f(x):\n    class A: pass\n    return x\n\n"
        "h = jax.hessian(f)\n")
    base = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{tmp_path}"}
    result = subprocess.run([sys.executable, "-c", "import hessmod"], env=base,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode != 0 and "hessmod.py:4" in result.stderr
