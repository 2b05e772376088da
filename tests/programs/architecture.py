"""Measures the package's architecture: files and lines per package, import cycles
(counting imports inside functions), lazy imports, and private names imported across
modules.  `python tests/programs/architecture.py` prints the report that issue notes quote;
tests/test_architecture.py holds the layering rules it checks.
"""
from __future__ import annotations

import ast
import collections
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("transpiler", "runtime")


def module_files() -> dict[str, Path]:
    """Dotted module name -> file, for every module of the two packages."""
    files = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            files[".".join(parts)] = path
    return files


def _resolve(module: str, path: Path, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".")
    if path.name != "__init__.py":
        base = base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


class Import(collections.namedtuple("Import", "source target names lazy line")):
    """One import statement: `lazy` when it sits inside a function."""


def imports(files: dict[str, Path]) -> list[Import]:
    found = []
    for module, path in files.items():
        tree = ast.parse(path.read_text(), str(path))
        lazy_lines = {
            inner.lineno
            for node in ast.walk(tree)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            for inner in ast.walk(node)
            if isinstance(inner, (ast.Import, ast.ImportFrom))
        }
        for node in ast.walk(tree):
            lazy = getattr(node, "lineno", None) in lazy_lines
            if isinstance(node, ast.Import):
                for alias in node.names:
                    found.append(Import(module, alias.name, (), lazy, node.lineno))
            elif isinstance(node, ast.ImportFrom):
                target = _resolve(module, path, node)
                names = tuple(alias.name for alias in node.names)
                found.append(Import(module, target, names, lazy, node.lineno))
    return found


def _project_target(target: str, name: str | None, files: dict[str, Path]) -> str | None:
    """The project module an import reaches (`from pkg import mod` reaches pkg.mod)."""
    if name and f"{target}.{name}" in files:
        return f"{target}.{name}"
    while target and target not in files:
        target = target.rpartition(".")[0]
    return target or None


def graph(files: dict[str, Path], found: list[Import]) -> dict[str, set[str]]:
    edges: dict[str, set[str]] = {module: set() for module in files}
    for imp in found:
        for name in imp.names or (None,):
            target = _project_target(imp.target, name, files)
            if target and target != imp.source:
                edges[imp.source].add(target)
    return edges


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components = []
    counter = 0
    for root in edges:
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges[child]))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        components.append(sorted(component))
    return sorted(components, key=len, reverse=True)


def private_imports(files: dict[str, Path], found: list[Import]) -> list[Import]:
    """`from project.module import _name` where the name is private to another module."""
    return [
        imp
        for imp in found
        if _project_target(imp.target, None, files)
        and any(name.startswith("_") and not name.startswith("__") for name in imp.names)
    ]


def package_of(module: str, files: dict[str, Path]) -> str:
    path = files[module]
    return str(path.parent.relative_to(ROOT))


def report() -> str:
    files = module_files()
    found = imports(files)
    edges = graph(files, found)
    lines = ["package                         files  lines"]
    sizes: dict[str, list[int]] = collections.defaultdict(lambda: [0, 0])
    for module, path in files.items():
        entry = sizes[package_of(module, files)]
        entry[0] += 1
        entry[1] += len(path.read_text().splitlines())
    for package, (count, total) in sorted(sizes.items()):
        lines.append(f"{package:<30} {count:>6} {total:>6}")
    lines.append(f"{'total':<30} {sum(c for c, _ in sizes.values()):>6} "
                 f"{sum(t for _, t in sizes.values()):>6}")
    lazy = [imp for imp in found if imp.lazy]
    project_lazy = [imp for imp in lazy if _project_target(imp.target, None, files)]
    lines.append(f"imports inside functions: {len(lazy)} ({len(project_lazy)} of project modules)")
    components = cycles(edges)
    lines.append(f"import cycles (counting imports inside functions): "
                 f"{[len(c) for c in components]}")
    for component in components[:3]:
        lines.append("  largest: " + ", ".join(component) if component is components[0]
                     else "  next: " + ", ".join(component))
    lines.append(f"imports of private names across modules: {len(private_imports(files, found))}")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.stdout.write(report() + "\n")
