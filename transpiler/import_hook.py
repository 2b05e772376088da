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
import inspect
import importlib.machinery
import sys
from pathlib import Path
from typing import Any, Iterator, Optional, Sequence

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


def at_creation(value: Any) -> Any:
    """`value` (a grad/vmap/jit/jacobian object just created); its code generated now
    (a decorator rewrites at import) unless ``config.rewrite_on_import`` is off."""
    from transpiler.config import config
    if config.rewrite_on_import:
        inner = next((getattr(value, a) for a in ("_original", "fun", "_fun")
                      if hasattr(value, a)), None)
        module = getattr(getattr(inner, "_fun", inner), "__module__", None)
        if module is not None:
            _generate(value, module)
    return value


@contextlib.contextmanager
def _local_folder(module: Any) -> Iterator[None]:
    """Keep generated code in ``__transpiler__/`` next to the module's source meanwhile."""
    from transpiler.codegen import disk_cache
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
    from transpiler import tree_util
    from transpiler.jit import Jitted
    from transpiler.transforms.api import Transformed, vjp_function
    if isinstance(value, Transformed):
        fun = value._original
        if getattr(getattr(fun, "_fun", fun), "__module__", None) == module_name:
            vjp_function(fun, value._active_of(), value._has_aux)
    elif isinstance(value, Jitted):
        inner = value._fun
        if getattr(inner, "__module__", None) == module_name and \
                not isinstance(inner, (Transformed, Jitted)) and \
                type(inner).__name__ != "Vmapped":
            value._traced_fun()  # its control flow converted (autograph_cache.py)
        else:
            _generate(inner, module_name)  # jit(grad(f)), jit(vmap(f)): the inner code
    elif type(value).__name__ == "Jacobian" and \
            getattr(value.fun, "__module__", None) == module_name:
        from transpiler.transforms.api import _active_names
        from transpiler.transforms.forward_api import jvp_function
        active = _active_names(value.fun, value.argnums)
        if value.kind == "jacrev":
            vjp_function(value.fun, active, value.has_aux)
        elif value.kind == "jacfwd":
            jvp_function(value.fun, active)
        else:  # hessian: forward mode over the generated reverse code
            value.source  # noqa: B018 (generates both)
    elif type(value).__name__ == "Vmapped":  # its first level of batched code
        target = getattr(value.fun, "_fun", value.fun)
        mapped = any(a is not None for a in tree_util.tree_leaves(
            value.in_axes, is_leaf=lambda a: a is None))
        if getattr(target, "__module__", None) == module_name and mapped:
            value.source  # noqa: B018 (generates it)
    elif type(value).__name__ == "Pmapped":  # what its devices strategy traces per shard
        from transpiler.transforms.autograph_runtime import convert_for_jit
        fun = value.fun
        if inspect.isfunction(fun) and fun.__module__ == module_name:
            convert_for_jit(fun)  # its control flow converted, as jit's
        else:
            _generate(fun, module_name)  # pmap(grad(f)), pmap(vmap(f)): the inner code
