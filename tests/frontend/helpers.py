"""Test helpers for the frontend passes: parse a snippet with positions, run the passes."""

from __future__ import annotations

import keyword
import re
import textwrap
from collections.abc import Callable
from typing import Any

import libcst as cst
import numpy as np
from libcst.metadata import MetadataWrapper, PositionProvider

from transpiler.errors import SourceLocation
from transpiler.frontend.anf import to_anf
from transpiler.frontend.canonicalize import canonicalize_function
from transpiler.frontend.passes import Locations, function_code, iter_statements
from transpiler.rewritten import INTRODUCED

FILENAME = "user.py"
# Builtins that canonicalization introduces (loop lowering).
INTRODUCED_BUILTINS = {"range", "len", "min", "list", "True", "False", "None"}


def parse_function(source: str) -> tuple[cst.FunctionDef, Locations, str]:
    """The first function of ``source``, a source map of all its nodes, and the source."""
    source = textwrap.dedent(source).lstrip("\n")
    module = cst.parse_module(source)
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    positions = wrapper.resolve(PositionProvider)
    locations = {
        node: SourceLocation(FILENAME, pos.start.line, pos.start.column)
        for node, pos in positions.items()
    }
    func = module.body[0]
    assert isinstance(func, cst.FunctionDef)
    return func, locations, source


def canonical(source: str) -> tuple[cst.FunctionDef, Locations, str]:
    func, locations, text = parse_function(source)
    func, locations = canonicalize_function(func, FILENAME, locations)
    return func, locations, text


def anf(source: str) -> tuple[cst.FunctionDef, Locations, str]:
    func, locations, text = canonical(source)
    func, locations = to_anf(func, FILENAME, locations)
    return func, locations, text


def code(func: cst.FunctionDef) -> str:
    return function_code(func)


def compile_function(func_or_source: Any, namespace: dict[str, Any] | None = None) -> Callable:
    """Exec a function (CST node or source text) with ``np``/``jnp`` (NumPy) in scope."""
    text = func_or_source if isinstance(func_or_source, str) else function_code(func_or_source)
    text = textwrap.dedent(text)
    scope: dict[str, Any] = {"np": np, "jnp": np, **INTRODUCED, **(namespace or {})}
    exec(compile(text, FILENAME, "exec"), scope)
    name = re.search(r"def (\w+)", text).group(1)  # type: ignore[union-attr]
    return scope[name]


def _words(text: str) -> set[str]:
    return set(re.findall(r"[A-Za-z_]\w*", text))


def check_source_map(func: cst.FunctionDef, locations: Locations, source: str,
                     original_names: set[str]) -> None:
    """Every statement is located on a line where a user statement starts, and every user
    name a simple statement mentions occurs in the user statement of that line."""
    lines = source.splitlines()
    user_statement_lines = {
        loc.line for node, loc in locations.items() if isinstance(node, cst.CSTNode)
    }
    for statement in iter_statements(func):
        assert statement in locations, f"unlocated: {cst.Module([]).code_for_node(statement)!r}"
        loc = locations[statement]
        assert loc.file == FILENAME
        assert 1 <= loc.line <= len(lines)
        assert loc.line in user_statement_lines
        if isinstance(statement, cst.SimpleStatementLine):
            text = cst.Module([]).code_for_node(statement)
            user_words = {w for w in _words(text) if w in original_names} - INTRODUCED_BUILTINS
            user_words -= set(keyword.kwlist)
            line_text = lines[loc.line - 1]
            missing = {w for w in user_words if w not in _words(line_text)}
            assert not missing, f"{text.strip()!r} mapped to line {loc.line} {line_text!r}: {missing}"


def names_in(func: cst.FunctionDef) -> set[str]:
    import libcst.matchers as m

    return {n.value for n in m.findall(func, m.Name()) if isinstance(n, cst.Name)}
