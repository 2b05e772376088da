"""The suite passes without its optional packages: every import of one is guarded, so a
user who runs `pytest` without JAX gets skips with a reason, never a failure.

`make test` installs the oracles (the `test` extra) and runs every cross-check; these tests
keep the suite honest for the environments that lack them: a static scan of every import
in tests/, and the suite's collection plus each guarded test run with the optional
packages made unimportable."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

TESTS = Path(__file__).parent
ROOT = TESTS.parent
# Import names of the packages the library does not depend on: the extras' oracles and
# what they bring along (jax brings jaxlib, scipy and opt_einsum).
OPTIONAL = {"jax", "jaxlib", "scipy", "opt_einsum", "matplotlib", "sklearn", "hypothesis"}
TEST_RUNNERS = {"pytest", "pytest-xdist", "ruff", "mypy"}  # (and `make lint`'s tools)
IMPORT_NAMES = {"scikit_learn": "sklearn"}  # distributions imported under another name


def _test_files():
    # tests/bench/ holds scripts run by `make bench`, which always has the test extra, and
    # tests/jax_docs/ the measurement of JAX's documentation and example programs against
    # JAX itself (run by hand, never collected by pytest).
    return sorted(p for p in TESTS.rglob("*.py")
                  if not {"bench", "jax_docs"} & set(p.relative_to(TESTS).parts))


def _optional_top(node: ast.AST) -> str | None:
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
        names = [node.module]
    else:
        return None
    tops = {name.partition(".")[0] for name in names} & OPTIONAL
    return min(tops) if tops else None


def _importorskip_of(node: ast.AST) -> str | None:
    """The top-level package a `pytest.importorskip("pkg.sub")` call guards, else None."""
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr == "importorskip" and node.args
            and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
        return node.args[0].value.partition(".")[0]
    return None


def _catches_import_error(handler: ast.ExceptHandler) -> bool:
    names = {n.id for n in ast.walk(handler.type) if isinstance(n, ast.Name)} if handler.type \
        else {"BaseException"}
    return bool(names & {"ImportError", "ModuleNotFoundError", "Exception", "BaseException"})


def unguarded_imports(path: Path) -> list[tuple[int, str]]:
    """(line, package) for each import of an optional package that is neither preceded, in
    its function or an enclosing scope, by a pytest.importorskip of the same package, nor
    inside a `try` that catches ImportError."""
    tree = ast.parse(path.read_text(), str(path))
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    guards = [(node, top) for node in ast.walk(tree) if (top := _importorskip_of(node))]

    def ancestors(node):
        while node in parents:
            node = parents[node]
            yield node

    def scope(node):
        return next(a for a in ancestors(node)
                    if isinstance(a, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Module)))

    def guarded(node, top):
        if any(isinstance(a, ast.Try) and any(map(_catches_import_error, a.handlers))
               for a in ancestors(node)):
            return True
        enclosing = set(ancestors(node))
        return any(guard_top == top and guard.lineno <= node.lineno and scope(guard) in enclosing
                   for guard, guard_top in guards)

    return [(node.lineno, top) for node in ast.walk(tree)
            if (top := _optional_top(node)) and not guarded(node, top)]


def test_every_optional_import_in_the_tests_is_guarded():
    found = [f"{path.relative_to(ROOT)}:{line} imports {top}"
             for path in _test_files() for line, top in unguarded_imports(path)]
    assert not found, ("import optional packages with pytest.importorskip('...') so the suite "
                       "skips without them:\n" + "\n".join(found))


def test_the_scan_catches_an_unguarded_import(tmp_path):
    sample = tmp_path / "test_sample.py"
    sample.write_text("import pytest\n\n"
                      "def test_a():\n    import jax.numpy\n\n"
                      "def test_b():\n    jnp = pytest.importorskip('jax.numpy')\n"
                      "    import jax\n\n"
                      "def test_c():\n    try:\n        import scipy\n"
                      "    except ImportError:\n        pass\n\n"
                      "from matplotlib import pyplot\n")
    assert sorted(unguarded_imports(sample)) == [(4, "jax"), (16, "matplotlib")]


def test_the_optional_list_covers_the_extras():
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    names = {req.partition("[")[0].partition(">")[0].partition("=")[0].strip().replace("-", "_")
             for reqs in extras["optional-dependencies"].values() for req in reqs}
    names = {IMPORT_NAMES.get(name, name) for name in names}
    runners = {name.replace("-", "_") for name in TEST_RUNNERS}
    assert names - runners <= OPTIONAL, names - runners - OPTIONAL


def _guarded_tests() -> list[str]:
    """Node ids of the test functions that import an optional package (after a guard)."""
    ids = []
    for path in _test_files():
        tree = ast.parse(path.read_text())
        for node in tree.body:
            if (isinstance(node, ast.FunctionDef) and node.name.startswith("test_")
                    and any(_optional_top(n) or _importorskip_of(n) in OPTIONAL
                            for n in ast.walk(node))):
                ids.append(f"{path.relative_to(ROOT)}::{node.name}")
    return ids


WITHOUT_OPTIONAL = ("import sys, pytest\n"
                    "for name in {names!r}: sys.modules[name] = None  # makes `import name` fail\n"
                    "sys.exit(pytest.main({args!r}))\n")


def _pytest_without_optional(*args: str) -> subprocess.CompletedProcess:
    # (no plugins autoloaded: hypothesis, when installed, is also a pytest plugin that
    # pytest would prepare to import)
    code = WITHOUT_OPTIONAL.format(names=sorted(OPTIONAL), args=["-q", *args])
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, timeout=600,
                          env={**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"})


@pytest.mark.slow
def test_the_suite_collects_without_the_optional_packages():
    done = _pytest_without_optional("--collect-only", "tests")
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert " error" not in done.stdout.splitlines()[-1], done.stdout[-4000:]


@pytest.mark.slow
def test_the_cross_checks_skip_without_the_optional_packages():
    ids = _guarded_tests()
    assert len(ids) >= 10, ids  # the scan finds the JAX cross-checks
    done = _pytest_without_optional("-rs", *ids)
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]
    assert "could not import 'jax" in done.stdout, done.stdout[-4000:]
    assert "failed" not in done.stdout.splitlines()[-1], done.stdout[-4000:]
