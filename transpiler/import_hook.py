"""Rewrite on import: ``transpiler.install_import_hook("mypkg")``.

Modules of the opted-in packages are rewritten when they are imported, not at first call:
once a module has run, each ``grad``/``value_and_grad``, ``jacfwd``/``jacrev`` and
``vmap`` (also under ``jit`` or ``pmap``) it defines at module level over its own functions
has its ``vjp_<name>`` / ``jvp_<name>`` / ``vmap_<name>`` generated right away, and each
``jit`` and ``pmap`` its control-flow conversion, each ``hessian`` its forward-over-reverse
code. (The library callees of vmap code are generated at first call.) Generated code is kept next to the source in
``__transpiler__/`` (like ``__pycache__``), keyed by the code objects and what their names
refer to, so it is reused while the source is unchanged: a second import loads it without
importing libcst. A module whose generation fails raises the
TranspileError at the user's line during the import.
"""

from __future__ import annotations

import contextlib
import importlib.abc
import importlib.machinery
import sys
from pathlib import Path
from typing import Any, Iterator, Optional, Sequence
from transpiler.codegen import disk_cache
from transpiler.transforms.common.generated import ModuleCode

CACHE_FOLDER = "__transpiler__"


class _Loader(importlib.abc.Loader):
    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def create_module(self, spec: Any) -> Any:
        return self.inner.create_module(spec)

    def exec_module(self, module: Any) -> None:
        # The module's folder is where its code is kept while its body runs too: with
        # ``config.rewrite_on_import`` its decorators generate their code as they are applied.
        with _local_folder(module):
            self.inner.exec_module(module)
            rewrite_module(module)

    def __getattr__(self, name: str) -> Any:  # get_source, get_code ... of the file loader
        return getattr(self.inner, name)


class ImportHook(importlib.abc.MetaPathFinder):
    """The finder `install_import_hook` puts first on ``sys.meta_path``."""

    def __init__(self, packages: Sequence[str]) -> None:
        self.packages = tuple(packages)

    def matches(self, fullname: str) -> bool:
        return any(fullname == p or fullname.startswith(p + ".") for p in self.packages)

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Optional[Any]:
        if not self.matches(fullname):
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None or not spec.origin or \
                not spec.origin.endswith(".py"):
            return spec
        spec.loader = _Loader(spec.loader)
        return spec

    def remove(self) -> None:
        if self in sys.meta_path:
            sys.meta_path.remove(self)


def install_import_hook(*packages: str) -> ImportHook:
    """Rewrite the modules of `packages` (and their submodules) when they are imported;
    returns the hook (``hook.remove()`` uninstalls it). Import the packages after this."""
    if not packages or not all(isinstance(p, str) and p for p in packages):
        raise TypeError("install_import_hook: name the packages to rewrite, e.g. "
                        "install_import_hook('mymodels')")
    hook = ImportHook(packages)
    sys.meta_path.insert(0, hook)
    return hook


@contextlib.contextmanager
def _local_folder(module: Any) -> Iterator[None]:
    """Keep generated code in ``__transpiler__/`` next to the module's source meanwhile."""
    origin = getattr(module, "__file__", None)
    if not origin:
        yield
        return
    disk_cache.LOCAL_DIRS.append(Path(origin).parent / CACHE_FOLDER)
    try:
        yield
    finally:
        disk_cache.LOCAL_DIRS.pop()


def rewrite_module(module: Any) -> None:
    """Generate the code of the module's transform objects now (see the module docstring)."""
    if not getattr(module, "__file__", None):
        return
    with _local_folder(module):
        for value in list(vars(module).values()):
            _generate(value, module.__name__)


def _generate(value: Any, module_name: str) -> None:
    if isinstance(value, ModuleCode):
        value.generate_code(module_name)
