"""Stage ``resolve-names``: every free name of a function -> the object it denotes.

A free name is one the function reads but never binds (in its own scope or in a scope
nested inside it). It is resolved the way Python would at call time: the closure cell
(``fn.__code__.co_freevars`` / ``fn.__closure__``), then ``fn.__globals__``, then the
builtins. This is what lets ``jnp``, ``np``, constants and helper functions resolve under
whatever names the user's module gives them (``import transpiler.numpy as tnp``).
"""

from __future__ import annotations

import builtins
from typing import Any, Callable, Optional

import libcst as cst
import libcst.matchers as m
from libcst.metadata import MetadataWrapper, Scope, ScopeProvider

from transpiler.errors import SourceLocation, TranspileError
from transpiler.frontend.get_source import nodes_of

_MISSING = object()


def free_names(func: cst.FunctionDef) -> dict[str, cst.CSTNode]:
    """The names `func` reads without binding them, each with one node that reads it.

    Names in parameter defaults and annotations count too (they are read where the
    function is defined). Names read only inside string annotations are ignored.
    """
    wrapper = MetadataWrapper(cst.Module(body=[func]), unsafe_skip_copy=True)
    scopes = wrapper.resolve(ScopeProvider)
    inside = nodes_of(func)
    inner_scopes = {scope for node, scope in scopes.items()
                    if scope is not None and node in inside and node is not func}
    # The scope of the function body itself is the one whose `node` is `func`.
    inner_scopes = {s for s in inner_scopes if _within(s, func)}
    found: dict[str, cst.CSTNode] = {}
    for scope in {s for s in scopes.values() if s is not None}:
        for access in scope.accesses:
            name = _access_name(access.node)
            if name is None or access.node not in inside or name in found:
                continue
            if not _bound_inside(name, access.scope, inner_scopes):
                found[name] = access.node
    return dict(sorted(found.items()))


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


def _access_name(node: cst.CSTNode) -> Optional[str]:
    """The variable read by an access: a Name, or the leftmost Name of a dotted import."""
    while m.matches(node, m.Attribute()):
        assert isinstance(node, cst.Attribute)
        node = node.value
    return node.value if isinstance(node, cst.Name) else None


def _within(scope: Scope, func: cst.FunctionDef) -> bool:
    """Whether `scope` is the body scope of `func` or nested in it."""
    current: Optional[Scope] = scope
    seen: set[int] = set()
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if getattr(current, "node", None) is func:
            return True
        parent = current.parent
        current = parent if parent is not current else None
    return False


def _bound_inside(name: str, scope: Scope, inner_scopes: set[Scope]) -> bool:
    """Whether `name`, read in `scope`, is bound in a scope that belongs to the function."""
    current: Optional[Scope] = scope
    while current is not None and current in inner_scopes:
        if current.assignments[name]:
            return True
        parent = current.parent
        current = parent if parent is not current else None
    return False
