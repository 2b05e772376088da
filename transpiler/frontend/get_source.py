"""Stage ``get-source``: a Python function object -> its libcst ``FunctionDef``.

The function is found through its code object (``co_filename``, ``co_firstlineno``), not
through ``inspect.getsource(fn)``: ``inspect`` follows ``__wrapped__``, which would hand us
the source of a function other than the one that runs. Python's own parser (``ast``, fast)
locates the definition in the file; libcst then parses just that snippet.

- ``def`` functions (top level, nested, in a class body): an indented snippet is parsed
  inside an ``if True:`` block, so every column is the column in the user's file.
- ``lambda``s: the lambda whose body holds the code object's instruction positions (Python
  3.11 ``co_positions()``) is chosen, so two lambdas on one line are told apart; it becomes
  ``def lambda_<line>(<params>): return <body>``.
- Decorators are dropped (see `strip_decorators`).

Every node of the result is mapped to its position in the user's file (`locations`).
"""

from __future__ import annotations

import ast
import functools
import linecache
import types
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Union

import libcst as cst
import transpiler.frontend.match as m

from transpiler.codegen.lines import node_ranges
from transpiler.errors import SourceLocation, TranspileError

NO_SOURCE_HINT = ("Transform a function written in Python, or give this operation a "
                  "hand-written derivative with `transpiler.custom_vjp`.")

AstFunction = Union[ast.FunctionDef, ast.AsyncFunctionDef]


@dataclass
class FunctionSource:
    """A function's source, parsed, and where each of its nodes sits in the user's file."""

    name: str                      # "f", or "lambda_<line>" for a lambda
    func: cst.FunctionDef          # decorators stripped; a lambda already turned into a def
    text: str                      # the original source text, dedented
    filename: str                  # the user's file (``co_filename``)
    first_line: int                # 1-based line of the file where `text` starts
    col_offset: int                # columns removed from every line of `text` by dedenting
    locations: dict[cst.CSTNode, SourceLocation]  # every node of `func` -> user position


@dataclass(frozen=True)
class PositionMap:
    """Maps a position in the parsed snippet to the user's file.

    ``line + line_offset``; the snippet's first line is also shifted by ``first_col_offset``
    columns (a lambda cut out of the middle of a line).
    """

    filename: str
    line_offset: int
    first_col_offset: int = 0

    def location(self, start: tuple[int, int], end: tuple[int, int]) -> SourceLocation:
        (line, col), (end_line, end_col) = start, end
        col += self.first_col_offset if line == 1 else 0
        last_col = None
        if end_line == line:
            last_col = end_col + (self.first_col_offset if end_line == 1 else 0)
        return SourceLocation(self.filename, line + self.line_offset, col, last_col)

    def locate_all(self, module: cst.Module) -> dict[cst.CSTNode, SourceLocation]:
        """Every node of `module` -> its position in the user's file."""
        return {node: self.location(start, end)
                for node, (start, end) in node_ranges(module).items()}


# --- entry point ---------------------------------------------------------------------------

def get_source(fn: Callable[..., Any]) -> FunctionSource:
    """The parsed source of `fn` with every node located in the user's file.

    Raises `TranspileError` when `fn` has no Python source that can be retrieved.
    """
    code = _code_of(fn)
    lines = _file_lines(code, fn)
    tree = _parse_file(code.co_filename, "".join(lines))
    if code.co_name == "<lambda>":
        return _lambda_source(code, lines, tree)
    return _def_source(code, lines, tree)


def strip_decorators(source: FunctionSource) -> FunctionSource:
    """Drop the decorators of the function being transformed.

    `fn` is, by construction, the undecorated function: its code object is this ``def``.
    The decorators above it (``@transpiler.jit``, ``@partial(jit, ...)``, ``@grad``, the
    user's own) were applied to it -- or to the result of another decorator -- *after* it
    was created, and are not part of what `fn` computes; keeping them in the generated code
    would apply them a second time. (A decorator that replaced the function by a wrapper
    hands the transform the wrapper's code object, so the wrapper is what gets transformed.)
    """
    old = source.func
    if not old.decorators:
        return source
    new = old.with_changes(decorators=())
    locations = dict(source.locations)
    locations[new] = locations.pop(old)
    return FunctionSource(source.name, new, source.text, source.filename, source.first_line,
                          source.col_offset, locations)


def unwrap_transpiler(fn: Any) -> Any:
    """The Python function inside the project's own wrappers (``jit(f)`` -> ``f``).

    Only objects whose class lives in ``transpiler`` are unwrapped (through their
    ``__wrapped__``); any other wrapper is transformed as the code it runs.
    """
    while (not isinstance(fn, types.FunctionType)
           and type(fn).__module__.split(".")[0] == "transpiler"
           and getattr(fn, "__wrapped__", None) is not None):
        fn = fn.__wrapped__
    return fn


# --- finding the code and the file --------------------------------------------------------

def _code_of(fn: Any) -> types.CodeType:
    if isinstance(fn, types.MethodType):
        raise TranspileError(
            f"cannot transform the bound method {fn.__qualname__!r}",
            hint="Transform the plain function and pass the instance as an argument.")
    code = getattr(fn, "__code__", None)
    if not isinstance(fn, types.FunctionType) or not isinstance(code, types.CodeType):
        name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or repr(fn)
        raise TranspileError(
            f"cannot transform {name!r}: it is a {type(fn).__name__}, not a Python function, "
            "so it has no Python source to rewrite", hint=NO_SOURCE_HINT)
    return code


def _file_lines(code: types.CodeType, fn: Any) -> list[str]:
    filename = code.co_filename
    lines = linecache.getlines(filename, getattr(fn, "__globals__", None))
    if not lines:
        raise TranspileError(
            f"cannot transform {code.co_qualname!r}: its source code is not available "
            f"(defined in {filename!r}, e.g. by exec() or in an interactive session without "
            "source)", hint="Define the function in a .py file, or give it a hand-written "
                            "derivative with `transpiler.custom_vjp`.")
    return lines


@functools.lru_cache(maxsize=64)
def _parse_file(filename: str, text: str) -> ast.Module:
    try:
        return ast.parse(text, filename)
    except SyntaxError as error:
        raise TranspileError(
            f"cannot read the source of a function in {filename!r}: the file no longer "
            f"parses ({error.msg}); was it edited after it was imported?") from None


def _source_changed(code: types.CodeType) -> TranspileError:
    return TranspileError(
        f"cannot find the source of {code.co_qualname!r} at "
        f"{code.co_filename}:{code.co_firstlineno}: the file was probably edited after it was "
        "imported", hint="Re-import the module (or restart) so source and code agree.")


# --- def functions ------------------------------------------------------------------------

def _def_source(code: types.CodeType, lines: list[str], tree: ast.Module) -> FunctionSource:
    node = _find_def(tree, code)
    first_line = node.decorator_list[0].lineno if node.decorator_list else node.lineno
    last_line = node.end_lineno or node.lineno
    raw = "".join(lines[first_line - 1:last_line])
    indent = len(raw) - len(raw.lstrip(" \t"))
    # An indented snippet parses inside ``if True:``, which keeps every column unchanged.
    text = raw if indent == 0 else "if True:\n" + raw
    line_offset = first_line - 1 - (0 if indent == 0 else 1)
    module = _parse_snippet(text, code)
    locations = PositionMap(code.co_filename, line_offset).locate_all(module)
    func = module.body[0] if indent == 0 else _only_def_in_if(module)
    if not m.matches(func, m.FunctionDef(name=m.Name(code.co_name))):
        raise _source_changed(code)
    assert isinstance(func, cst.FunctionDef)
    # The snippet holds nothing but `func` (and the ``if True:`` around an indented one):
    # the few wrapper nodes located with it are harmless extra keys.
    source = FunctionSource(code.co_name, func, module.code_for_node(func), code.co_filename,
                            first_line, indent, locations)
    return strip_decorators(source)


def _find_def(tree: ast.Module, code: types.CodeType) -> AstFunction:
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == code.co_name:
            start = node.decorator_list[0].lineno if node.decorator_list else node.lineno
            if start == code.co_firstlineno:
                return node
    raise _source_changed(code)


def _only_def_in_if(module: cst.Module) -> cst.CSTNode:
    block = module.body[0]
    assert isinstance(block, cst.If) and isinstance(block.body, cst.IndentedBlock)
    return block.body.body[0]


def _parse_snippet(text: str, code: types.CodeType) -> cst.Module:
    try:
        return cst.parse_module(text)
    except cst.ParserSyntaxError as error:
        raise TranspileError(
            f"cannot parse the source of {code.co_qualname!r} "
            f"({code.co_filename}:{code.co_firstlineno}): {error.message}") from None


# --- lambdas ------------------------------------------------------------------------------

def _lambda_source(code: types.CodeType, lines: list[str], tree: ast.Module) -> FunctionSource:
    node = _find_lambda(tree, code)
    same_line = [n for n in ast.walk(tree)
                 if isinstance(n, ast.Lambda) and n.lineno == node.lineno]
    same_line.sort(key=lambda n: n.col_offset)
    name = f"lambda_{node.lineno}"
    if len(same_line) > 1:
        name += f"_{same_line.index(node) + 1}"
    start_col = _char_col(lines[node.lineno - 1], node.col_offset)
    raw = _cut(lines, node.lineno, node.col_offset, node.end_lineno or node.lineno,
               node.end_col_offset or 0)
    # "(" keeps a multi-line lambda parseable; it shifts the first line by one column.
    module = _parse_snippet(f"({raw})\n", code)
    locations = PositionMap(code.co_filename, node.lineno - 1, start_col - 1).locate_all(module)
    lam = m.findall(module, m.Lambda())[0]
    assert isinstance(lam, cst.Lambda)
    func = _lambda_to_def(lam, name)
    here = SourceLocation(code.co_filename, node.lineno, start_col,
                          _char_col(lines[node.lineno - 1], node.end_col_offset or 0)
                          if node.end_lineno == node.lineno else None)
    # `locations` also holds the ``(...)`` around the lambda: harmless keys.
    for new in _new_nodes(func, lam):
        locations[new] = here
    return FunctionSource(name, func, raw, code.co_filename, node.lineno, start_col, locations)


def _find_lambda(tree: ast.Module, code: types.CodeType) -> ast.Lambda:
    """The lambda whose code is `code`: the innermost one whose body covers its positions."""
    candidates = [n for n in ast.walk(tree)
                  if isinstance(n, ast.Lambda) and n.lineno == code.co_firstlineno]
    spans = [(p[0], p[2], p[1], p[3]) for p in code.co_positions()
             if None not in p and (p[0], p[2]) != (p[1], p[3])]
    if spans:
        start = min((s[0], s[1]) for s in spans)
        end = max((s[2], s[3]) for s in spans)
        candidates = [n for n in candidates
                      if (n.body.lineno, n.body.col_offset) <= start
                      and end <= (n.body.end_lineno, n.body.end_col_offset)]
        candidates.sort(key=lambda n: (n.body.lineno, n.body.col_offset), reverse=True)
    if not candidates or (not spans and len(candidates) > 1):
        raise _source_changed(code)
    return candidates[0]


def _char_col(line: str, byte_col: int) -> int:
    """ast and code positions count UTF-8 bytes; libcst and carets count characters."""
    return len(line.encode("utf-8")[:byte_col].decode("utf-8", errors="replace"))


def _cut(lines: list[str], line: int, col: int, end_line: int, end_col: int) -> str:
    """The text between two (line, byte column) positions."""
    chunk = [text.encode("utf-8") for text in lines[line - 1:end_line]]
    if len(chunk) == 1:
        return chunk[0][col:end_col].decode("utf-8")
    return b"".join([chunk[0][col:], *chunk[1:-1], chunk[-1][:end_col]]).decode("utf-8")


_LAMBDA_TEMPLATE = cst.parse_statement("def _lambda():\n    return None\n")


def _lambda_to_def(lam: cst.Lambda, name: str) -> cst.FunctionDef:
    """``lambda <params>: <body>`` -> ``def <name>(<params>): return <body>``.

    The parameter and body nodes are reused as they are, so their locations carry over.
    """
    template = _LAMBDA_TEMPLATE
    assert isinstance(template, cst.FunctionDef) and isinstance(template.body, cst.IndentedBlock)
    line = template.body.body[0]
    assert isinstance(line, cst.SimpleStatementLine)
    ret = line.body[0]
    assert isinstance(ret, cst.Return)
    new_line = line.with_changes(body=[ret.with_changes(value=lam.body)])
    return template.with_changes(name=cst.Name(name), params=lam.params,
                                 body=template.body.with_changes(body=[new_line]))


def _new_nodes(func: cst.FunctionDef, lam: cst.Lambda) -> Iterator[cst.CSTNode]:
    """The nodes of the lambda's ``def`` that are not nodes of the lambda itself."""
    yield func
    yield func.name
    yield func.body
    line = func.body.body[0]
    yield line
    assert isinstance(line, cst.SimpleStatementLine)
    yield line.body[0]

