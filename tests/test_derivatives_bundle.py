"""The library's shipped derivative code (``transpiler/data/derivatives``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _run(code: str, cache: Path, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, env={**os.environ, "PYTHONPATH": str(ROOT),
                                          "TRANSPILER_CACHE_DIR": str(cache), **env})


def test_bundle_is_what_the_transforms_generate():
    out = subprocess.run([sys.executable, "tests/programs/derivatives.py", "--check"],
                         cwd=ROOT, capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert out.returncode == 0, out.stdout + out.stderr


LOAD_MEAN = """
import sys
import transpiler.numpy as jnp
from transpiler.transforms.reverse.api import vjp_function
name, f = vjp_function(jnp.mean, frozenset({"a"}))  # `a` differentiated
print(name, "libcst" in sys.modules, "<transpiler>" not in f.source, f.source_path)
"""


def test_fresh_cache_loads_library_derivatives_without_libcst(tmp_path):
    out = _run(LOAD_MEAN, tmp_path)
    assert out.returncode == 0, out.stderr
    name, libcst_loaded, *_ = out.stdout.split()
    assert name == "vjp_mean" and libcst_loaded == "False"  # nothing was transformed


def test_without_the_bundle_the_same_code_is_generated(tmp_path):
    shipped = _run(LOAD_MEAN.replace("print(name", "print(f.source); print(name"),
                   tmp_path / "a")
    generated = _run(LOAD_MEAN.replace("print(name", "print(f.source); print(name"),
                     tmp_path / "b", TRANSPILER_BUNDLED_DERIVATIVES="0")
    assert shipped.returncode == generated.returncode == 0, shipped.stderr + generated.stderr
    source = lambda out: out.stdout.rsplit("\n", 2)[0]  # noqa: E731 -- drop the last line
    assert source(shipped) == source(generated)
    assert shipped.stdout.splitlines()[-1].split()[1] == "False"  # loaded from the bundle
    assert generated.stdout.splitlines()[-1].split()[1] == "True"  # transformed


def test_bundle_names_no_path_of_this_checkout():
    """Shipped entries name the package's files as <transpiler>/...: the same everywhere."""
    from transpiler.codegen.disk_cache import BUNDLE_DIR, PACKAGE_ROOT
    for path in BUNDLE_DIR.glob("*.json"):
        assert PACKAGE_ROOT not in path.read_text(), path.name
