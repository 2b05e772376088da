"""The frontend: a Python function -> fenced, canonical, ANF libcst code with positions.

Pipeline (each stage in its own module):

1. ``get-source``    (`get_source.py`)    source text via the code object; lambdas become
                                          ``def lambda_<line>``; decorators dropped; every
                                          node located in the user's file
2. ``fence``         (`fence.py`)         unsupported syntax -> `TranspileError` with a caret
3. ``resolve-names`` (`resolve_names.py`) free names -> objects (closure, globals, builtins)
4. ``canonicalize``  (`canonicalize.py`)  elif, augmented assignment, for loops, break,
                                          continue, early returns
5. ``anf``           (`anf.py`)           one operation per statement

`parse_function` runs them all; `read_function` stops after the fence (no rewriting).
"""

from __future__ import annotations

import builtins
import hashlib
import importlib
from dataclasses import dataclass
from typing import Any, Callable

import libcst as cst

from transpiler.errors import SourceLocation, TranspileError
from transpiler.frontend.fence import fence
from transpiler.frontend.get_source import FunctionSource, get_source, unwrap_transpiler
from transpiler.frontend.passes import run_stages
from transpiler.frontend.resolve_names import resolve_names

Locations = dict[cst.CSTNode, SourceLocation]


@dataclass
class ParsedFunction:
    """A function ready for the transforms (see the frontend output contract)."""

    name: str                      # function name ("<lambda>" -> "lambda_<line>")
    func: cst.FunctionDef          # after fence + canonicalize + ANF
    filename: str                  # the user's file
    namespace: dict[str, Any]      # every free name resolved: closure cells, globals, builtins
    locations: Locations           # node of `func` -> the user's original position
    source_hash: str               # sha256 of the original source text


# Modules whose functions are derivative rules run by the transforms, never their input.
_RULE_MODULES = frozenset({"transpiler.transforms.control_ad", "transpiler.lax_control",
                           "transpiler.lax_scan"})

# The builtins canonicalization and ANF may introduce into rewritten code.
REWRITE_BUILTINS = ("range", "len", "min", "list", "reversed", "enumerate", "zip")


def is_library(fn: Callable[..., Any]) -> bool:
    """Whether `fn` is one of transpiler's own functions (composites, helpers)."""
    module = getattr(fn, "__module__", None) or ""
    return module == "transpiler" or module.startswith("transpiler.")


def read_function(fn: Callable[..., Any]) -> tuple[FunctionSource, dict[str, Any]]:
    """Stages ``get-source``, ``fence`` and ``resolve-names``: the user's code, unrewritten.

    Returns the located source and the namespace of its free names. The project's own
    wrappers (a ``jit`` object) are looked through.
    """
    fn = unwrap_transpiler(fn)
    source = get_source(fn)
    if not is_library(fn):  # our own composites may use any Python for their static logic
        fence(source.func, source.filename, source.locations)
    namespace = resolve_names(fn, source.func, source.locations)
    return source, namespace


def parse_function(fn: Callable[..., Any], closure_params: tuple[str, ...] = (),
                   lower_comprehensions: bool = False) -> ParsedFunction:
    """The whole frontend: `fn` -> fenced, canonicalized ANF code with its source map.

    The variables in `closure_params` (of those `fn` closes over, ``co_freevars``) become
    leading parameters instead of resolved constants, so derivatives can flow into the
    closed-over values (closure conversion, see transforms/closures.py).

    Raises `TranspileError` (at the user's file:line:col) for functions without source and
    for unsupported syntax.
    """
    fn = unwrap_transpiler(fn)
    if getattr(fn, "__module__", None) in _RULE_MODULES:
        from transpiler.errors import user_location
        raise TranspileError(
            "second-order differentiation through lax control flow (cond, switch, "
            "while_loop, fori_loop, scan, map) is not supported yet: their derivative rules "
            f"(`{getattr(fn, '__qualname__', fn)}`) cannot be differentiated again",
            user_location(), "take first-order derivatives through control flow; for "
            "second order, write the loop or branch as Python control flow (it unrolls)")
    source, namespace = read_function(fn)
    func = source.func
    if closure_params:
        for name in closure_params:
            namespace.pop(name, None)
        func = _with_leading_params(func, closure_params)
        if source.func in source.locations:
            source.locations[func] = source.locations[source.func]
    func, locations = _rewrite(func, source.filename, source.locations, is_library(fn),
                               lower_comprehensions)
    # Rewriting introduces reads of a few builtins (``range``, ``len``, ``min``, ``list``).
    for name in REWRITE_BUILTINS:
        namespace.setdefault(name, getattr(builtins, name))
    return ParsedFunction(
        name=source.name,
        func=func,
        filename=source.filename,
        namespace=namespace,
        locations=locations,
        source_hash=hashlib.sha256(source.text.encode("utf-8")).hexdigest(),
    )


def _with_leading_params(func: cst.FunctionDef, names: tuple[str, ...]) -> cst.FunctionDef:
    params = func.params
    new = [cst.Param(cst.Name(n)) for n in names]
    if params.posonly_params:
        return func.with_changes(params=params.with_changes(
            posonly_params=[*new, *params.posonly_params]))
    return func.with_changes(params=params.with_changes(params=[*new, *params.params]))


def _rewrite(func: cst.FunctionDef, filename: str, locations: Locations,
             library: bool = False, lower_comprehensions: bool = False
             ) -> tuple[cst.FunctionDef, Locations]:
    """Stages ``canonicalize`` and ``anf``, run as one pipeline (one scan of the function,
    one pruning of its source map); vmap's frontend lowers comprehensions to loops first
    (frontend/comprehensions.py)."""
    canonicalize = _stage_module("canonicalize")
    anf = _stage_module("anf")
    stages = [*canonicalize.CANONICALIZE_PASSES,
              *(anf.ANF_PASSES_OPAQUE if library else anf.ANF_PASSES)]
    func, locations = run_stages(func, filename, locations, stages)
    if lower_comprehensions:  # on ANF code (each comprehension is a statement's value, in
        # the branch that computes it), then once more through the pipeline for the loops
        from transpiler.frontend.comprehensions import LOWER_COMPREHENSIONS
        lowered, locations = run_stages(func, filename, locations, [LOWER_COMPREHENSIONS])
        if lowered is not func:
            func, locations = run_stages(lowered, filename, locations, stages)
    return func, locations


def _stage_module(name: str) -> Any:
    try:
        return importlib.import_module(f"transpiler.frontend.{name}")
    except ModuleNotFoundError as error:
        if error.name != f"transpiler.frontend.{name}":
            raise
        raise TranspileError(f"internal: the frontend stage {name!r} is not built yet "
                             f"(TODO: transpiler/frontend/{name}.py)") from None


__all__ = ["ParsedFunction", "parse_function", "read_function", "get_source", "fence",
           "resolve_names"]
