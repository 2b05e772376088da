"""Stage ``resolve-names``: every free name of a function -> the object it denotes.

A free name is one the function reads but never binds (in its own scope or in a scope
nested inside it). It is resolved the way Python would at call time: the closure cell
(``fn.__code__.co_freevars`` / ``fn.__closure__``), then ``fn.__globals__``, then the
builtins. This is what lets ``jnp``, ``np``, constants and helper functions resolve under
whatever names the user's module gives them (``import transpiler.numpy as tnp``).
"""

from __future__ import annotations

import builtins
import symtable
from typing import Any, Callable, Optional

import libcst as cst
import transpiler.frontend.match as m

from transpiler.errors import SourceLocation, TranspileError
from transpiler.rewritten import DEFAULT_PREFIX, MISSING, default_value

_MISSING = object()


def free_names(func: cst.FunctionDef) -> dict[str, cst.CSTNode]:
    """The names `func` reads without binding them, each with one node that reads it.

    Names in parameter defaults and annotations count too (they are read where the
    function is defined). Names read only inside string annotations are ignored.
    """
    names = _free_names(cst.Module(body=[func]).code, func.name.value)
    found: dict[str, cst.CSTNode] = {}
    for node in m.findall(func, m.Name()):
        assert isinstance(node, cst.Name)
        if node.value in names:
            found.setdefault(node.value, node)
    return dict(sorted(found.items()))


def _free_names(text: str, name: str) -> set[str]:
    """The free names of the function ``name`` defined by `text` (Python's own symbol
    tables, in C: a scope analysis over the CST would cost ~30 ms per function).

    `text` holds the function alone at the top level, so every name it reads from an
    enclosing scope -- closure cells, globals, builtins -- is a global of the snippet.
    """
    top = symtable.symtable(text, "<function>", "exec")
    found = {s.get_name() for s in top.get_symbols()
             if s.is_referenced() and s.get_name() != name}  # defaults, annotations
    stack = list(top.get_children())
    while stack:
        table = stack.pop()
        found.update(s.get_name() for s in table.get_symbols()
                     if s.is_global() and s.is_referenced())
        stack.extend(table.get_children())
    return found


def resolve_names(fn: Callable[..., Any], func: cst.FunctionDef,
                  locations: Optional[dict[cst.CSTNode, SourceLocation]] = None
                  ) -> dict[str, Any]:
    """Every free name of `func` (the source of `fn`) that resolves, mapped to its object.

    Names that resolve nowhere are left out: using one is reported where it is used.
    An empty closure cell (a variable of the enclosing function read before it is
    assigned) raises `TranspileError` naming the variable.
    """
    namespace: dict[str, Any] = {}
    for name, node in free_names(func).items():
        value = lookup(fn, name, (locations or {}).get(node))
        if value is not _MISSING:
            namespace[name] = value
    return namespace


def lookup(fn: Callable[..., Any], name: str, loc: Optional[SourceLocation] = None) -> Any:
    """`name` as `fn` would see it: closure cell, then globals, then builtins.

    Returns the module-private sentinel `_MISSING` when the name is bound nowhere; use
    `is_missing` to test for it.
    """
    code = getattr(fn, "__code__", None)
    closure = getattr(fn, "__closure__", None) or ()
    if code is not None and name in code.co_freevars:
        cell = closure[code.co_freevars.index(name)]
        try:
            return cell.cell_contents
        except ValueError:
            raise TranspileError(
                f"free variable {name!r} of {code.co_qualname!r} has no value yet: the "
                "enclosing function assigns it after this function was transformed",
                loc, hint=f"Assign {name!r} before the transform is applied, or pass it as "
                          "an argument.") from None
    fn_globals = getattr(fn, "__globals__", {})
    if name in fn_globals:
        return fn_globals[name]
    scope_builtins = fn_globals.get("__builtins__", builtins)
    if isinstance(scope_builtins, dict):
        return scope_builtins.get(name, _MISSING)
    return getattr(scope_builtins, name, _MISSING)


def is_missing(value: Any) -> bool:
    """Whether `lookup` found nothing."""
    return value is _MISSING


def bind_defaults(fn: Callable[..., Any], func: cst.FunctionDef,
                  namespace: dict[str, Any]) -> cst.FunctionDef:
    """`func` with each parameter default whose expression reads a name that does not
    resolve (a variable of the enclosing scope: the default was evaluated when the
    function was made) replaced by ``_default_<param>``, bound in `namespace` to the value
    `fn` holds."""
    def bound(param: cst.Param) -> cst.Param:
        if param.default is None:
            return param
        reads = {n.value for n in m.findall(param.default, m.Name())}  # type: ignore[attr-defined]
        if reads <= set(namespace) | {"None", "True", "False"}:
            return param
        name = DEFAULT_PREFIX + param.name.value
        value = default_value(fn, name)
        if value is MISSING:
            return param
        namespace[name] = value
        return param.with_changes(default=cst.Name(name))

    params = func.params
    new = params.with_changes(posonly_params=[bound(p) for p in params.posonly_params],
                              params=[bound(p) for p in params.params],
                              kwonly_params=[bound(p) for p in params.kwonly_params])
    return func if new.deep_equals(params) else func.with_changes(params=new)
