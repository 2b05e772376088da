"""Caches that heal (issue 17): every on-disk cache entry is sealed with its format and a
checksum; a damaged or foreign one is reported once, deleted and rebuilt, and concurrent
writers never leave half an entry."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from transpiler.cache_files import read_sealed, sealed, unsealed, write_sealed

ROOT = str(Path(__file__).resolve().parents[1])

PROGRAM = textwrap.dedent("""
    import numpy as np
    import transpiler as jax, transpiler.numpy as jnp

    def loss(w, x):
        h = jnp.tanh(x @ w)
        for i in range(2):
            y = h * (i + 1)
        return jnp.sum(y ** 2)

    w, x = np.full((3, 2), 0.5, np.float32), np.ones((4, 3), np.float32)
    print(float(jnp.sum(jax.grad(loss)(w, x))), float(jnp.sum(jax.jit(jax.grad(loss))(w, x))))
""")


def _run(script: Path, cache: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, TRANSPILER_CACHE_DIR=str(cache), PYTHONPATH=ROOT)
    return subprocess.run([sys.executable, str(script)], env=env, capture_output=True,
                          text=True, cwd=ROOT, timeout=600)


def _entries(cache: Path) -> dict[str, list[Path]]:
    return {"generated code": sorted((cache / "generated").glob("*.tpc")),
            "transform records": sorted((cache / "ad").glob("*/*.json")),
            "compiled modules": sorted((cache / "vmfb").glob("*/*.vmfb"))}


DAMAGE = {
    "truncated": lambda data: data[: len(data) // 2],
    "corrupted": lambda data: data[:-40] + bytes(b ^ 0x5A for b in data[-40:]),
    "empty": lambda data: b"",
    "foreign": lambda data: b"\x00not a cache entry\n" * 8,
}


@pytest.mark.parametrize("damage", DAMAGE)
def test_damaged_entries_are_reported_deleted_and_rebuilt(tmp_path, damage):
    script = tmp_path / "prog.py"
    script.write_text(PROGRAM)
    cache = tmp_path / "cache"
    first = _run(script, cache)
    assert first.returncode == 0, first.stderr
    entries = _entries(cache)
    assert all(entries.values()), entries
    damaged = [path for paths in entries.values() for path in paths]
    for path in damaged:
        path.write_bytes(DAMAGE[damage](path.read_bytes()))
    second = _run(script, cache)
    assert second.returncode == 0, second.stderr
    assert second.stdout == first.stdout
    for path in damaged:  # reported once each, and rebuilt intact
        assert second.stderr.count(str(path)) == 1, (path, second.stderr)
        assert path.exists() and unsealed(_kind(path), path.read_bytes()) is not None, path
    third = _run(script, cache)  # healed: nothing more to report
    assert third.returncode == 0 and third.stdout == first.stdout
    assert "cache entry" not in third.stderr, third.stderr


def _kind(path: Path) -> str:
    from transpiler import codegen
    from transpiler.codegen import disk_cache
    from transpiler.compiler import _VMFB
    return {".tpc": codegen._CODE, ".json": disk_cache._RECORD, ".vmfb": _VMFB}[path.suffix]


def test_concurrent_first_runs_share_one_cache(tmp_path):
    script = tmp_path / "prog.py"
    script.write_text(PROGRAM)
    cache = tmp_path / "cache"
    env = dict(os.environ, TRANSPILER_CACHE_DIR=str(cache), PYTHONPATH=ROOT)
    runs = [subprocess.Popen([sys.executable, str(script)], env=env, cwd=ROOT,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for _ in range(4)]
    outputs = [r.communicate(timeout=600) for r in runs]
    assert all(r.returncode == 0 for r in runs), [err for _, err in outputs]
    assert len({out for out, _ in outputs}) == 1
    assert not any("cache entry" in err for _, err in outputs)
    for paths in _entries(cache).values():
        for path in paths:
            assert unsealed(_kind(path), path.read_bytes()) is not None, path
    assert not list(cache.rglob("*.tmp"))


def test_sealed_entries_round_trip_and_reject_other_kinds(tmp_path):
    path = tmp_path / "entry"
    write_sealed(path, "TEST1", b"payload")
    assert read_sealed(path, "TEST1") == b"payload"
    assert unsealed("TEST2", sealed("TEST1", b"payload")) is None
    assert read_sealed(path, "TEST2") is None and not path.exists()  # another version
    assert read_sealed(tmp_path / "missing", "TEST1") is None
