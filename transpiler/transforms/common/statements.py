"""What the source transforms share about ANF statements: what a statement list assigns
and reads, the generated function's parameters, and the template substitution the
derivative rules share."""

from __future__ import annotations

import ast
import importlib
import linecache
import os
from collections import Counter
from typing import Any, Optional, cast

import libcst as cst
import numpy as np

from transpiler.errors import TranspileError
from transpiler.frontend.passes import walk_statements
from transpiler.primitives.core import Primitive
from transpiler.transforms.common import classify as cl
from transpiler.transforms.common.rename import assigned_names
from transpiler.frontend.resolve_names import free_names
from transpiler.errors import _PACKAGE_DIR
from transpiler.codegen.disk_cache import portable_path
from transpiler import numpy as jnp
from transpiler import lax
from transpiler.transforms import ad

_MODULE_ALIASES = ("jnp", "lax", "np", "ad")
TIGHT_EQUAL = cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""),
                              whitespace_after=cst.SimpleWhitespace(""))


# --- statements: what they assign and read ----------------------------------------

def _is_copy(stmt: cst.BaseStatement, carried: dict[str, str]) -> bool:
    assign = _assign(stmt)
    return assign is not None and isinstance(assign.value, cst.Name) and \
        isinstance(assign.targets[0].target, cst.Name) and \
        assign.targets[0].target.value in carried.values()


def _top_assigned(stmts: Any) -> set[str]:
    """Names assigned by the statements themselves (not inside nested if/for/while)."""
    names: set[str] = set()
    for stmt in stmts:
        assign = _assign(stmt)
        if assign is not None:
            for t in assign.targets:
                names |= set(assigned_names(t.target))
    return names


def _reads(stmts: Any) -> set[str]:
    names: set[str] = set()
    for stmt in stmts:
        names.update(cl.names_in(stmt))
    return names


def _block(suite: cst.BaseSuite) -> list[cst.BaseStatement]:
    """The statements of an indented block (a function's, loop's or branch's body)."""
    return list(cast(cst.IndentedBlock, suite).body)


def nested_blocks(stmt: cst.BaseStatement) -> list[list[cst.BaseStatement]]:
    """The statement blocks inside a compound statement (if/else, loops, and the
    try/except of library code), or [] for a simple statement."""
    if not isinstance(stmt, (cst.For, cst.While, cst.If, cst.Try, cst.With)):
        return []
    blocks = [_block(stmt.body)]
    orelse = getattr(stmt, "orelse", None)
    if isinstance(orelse, cst.Else):
        blocks.append(_block(orelse.body))
    for handler in getattr(stmt, "handlers", ()):
        blocks.append(_block(handler.body))
    return blocks


def _bar(name: str) -> cst.Name:
    return cst.Name(f"{name}_bar")


def _assign(stmt: cst.BaseStatement) -> Optional[cst.Assign]:
    if isinstance(stmt, cst.SimpleStatementLine) and isinstance(stmt.body[0], cst.Assign):
        return stmt.body[0]
    return None


def _all_assigned(stmts: Any) -> set[str]:
    """The names `stmts` bind, in every block of their compound statements (if/else, loops,
    and the try/except and with of library code) -- not inside nested functions."""
    return set(bindings(stmts))


def bindings(stmts: Any) -> Counter[str]:
    """How many statements of `stmts` (in every block, as `_all_assigned`) bind each name."""
    names: Counter[str] = Counter()
    for stmt in stmts:
        if isinstance(stmt, cst.FunctionDef):
            names[stmt.name.value] += 1
        elif isinstance(stmt, cst.BaseCompoundStatement):
            blocks = [stmt.body.body, *(h.body.body for h in getattr(stmt, "handlers", ()))]
            for part in ("orelse", "finalbody"):
                extra = getattr(stmt, part, None)  # Else, Finally, or an `elif`'s If
                if extra is not None:
                    blocks.append([extra] if isinstance(extra, cst.If) else extra.body.body)
            for block in blocks:
                names.update(bindings(block))
            if isinstance(stmt, cst.For):
                names.update(assigned_names(stmt.target))
            for item in getattr(stmt, "items", ()):  # with ... as name
                if item.asname is not None:
                    names.update(assigned_names(item.asname.name))
            for handler in getattr(stmt, "handlers", ()):  # except ... as name
                if handler.name is not None:
                    names.update(assigned_names(handler.name.name))
        else:
            assign = _assign(stmt)
            if assign is not None:
                for t in assign.targets:
                    names.update(assigned_names(t.target))
    return names


def closure_reads(func: cst.FunctionDef, local_names: set[str]) -> list[str]:
    """The variables of the enclosing function that a nested ``def`` reads (its closure):
    a derivative flows from them into the function value, and back."""
    return sorted(n for n in free_names(func) if n in local_names)


def _param_names(func: cst.FunctionDef) -> list[str]:
    p = func.params
    names = [x.name.value for x in [*p.posonly_params, *p.params]]
    if isinstance(p.star_arg, cst.Param):
        names.append(p.star_arg.name.value)
    names += [x.name.value for x in p.kwonly_params]
    return names


def positional_params(func: cst.FunctionDef) -> list[str]:
    p = func.params
    return [x.name.value for x in [*p.posonly_params, *p.params]]


def _with_out_bar(params: cst.Parameters, name: str = "_out_bar") -> cst.Parameters:
    extra = cst.Param(name=cst.Name(name), default=cst.Name("None"), equal=TIGHT_EQUAL)
    star = params.star_arg if isinstance(params.star_arg, cst.Param) else cst.ParamStar()
    return params.with_changes(kwonly_params=[*params.kwonly_params, extra], star_arg=star)


def _source_line(loc: Any) -> str:
    text = linecache.getline(loc.file, loc.line).strip()
    return f"{os.path.basename(loc.file)}:{loc.line}  {text}"


def transform_namespace(parsed: Any) -> dict[str, Any]:
    """The names a transform resolves callees through: the function's free names, its local
    imports, and under `classify.USER_CODE` whether it is the user's code (NumPy's functions on
    arrays are `transpiler.numpy`'s there; the library calls them on static values)."""
    return {**parsed.namespace, **_local_imports(parsed.func),
            cl.USER_CODE: not str(parsed.filename).startswith(_PACKAGE_DIR)}


def _local_imports(func: cst.FunctionDef) -> dict[str, Any]:
    """Names bound by ``import`` statements inside the function (lazy imports in library
    code), resolved now so that calls through them can be differentiated."""
    found: dict[str, Any] = {}
    code = cst.Module([]).code_for_node

    class Imports(cst.CSTVisitor):
        def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
            if node.relative or node.module is None or isinstance(node.names, cst.ImportStar):
                return
            module = importlib.import_module(code(node.module))
            for alias in node.names:
                name = code(alias.name)
                bound = alias.asname.name.value if alias.asname else name  # type: ignore
                found[bound] = getattr(module, name)

        def visit_Import(self, node: cst.Import) -> None:
            for alias in node.names:
                if alias.asname is not None:
                    found[alias.asname.name.value] = importlib.import_module(  # type: ignore
                        code(alias.name))

    for statement in walk_statements(func.body):
        if isinstance(statement, (cst.Import, cst.ImportFrom)):
            statement.visit(Imports())
    return found


def _deferred_error(err: TranspileError, at: Any) -> cst.BaseStatement:
    """A statement that raises `err` when the backward pass reaches it. Library composites
    have branches that never run for arrays (list inputs, say); only a path that runs may
    fail. It names the statement's own location `at` unless `err` points into the same
    file: a location outside it is where the transform happened to be asked for first (a
    user's line), and generated code is cached and shared; ``ad.fail`` turns a library
    location into the user's line of the run that reaches it."""
    loc = err.loc if err.loc is not None and (at is None or err.loc.file == at.file) else at
    # The library's own files as <transpiler>/...: generated code is shipped (the bundle).
    where = f"{portable_path(loc.file)!r}, {loc.line}, {loc.col}" if loc is not None \
        else "None, 0, 0"
    return cst.parse_statement(f"ad.fail({err.message!r}, {err.hint!r}, {where})")


# --- shared by the adjoint rules ------------------------------------------------------

def _active_name(gen: Any, node: cst.BaseExpression) -> str | None:
    if isinstance(node, cst.Name) and node.value in gen.active:
        return node.value
    return None


def callee_name(gen: Any, base: str, fn: Any, own: str) -> str:
    """A name for generated callee `fn` in the function being built (`own`): `base`, or
    ``base_2``... when taken by another callee, a global, a local or the function itself;
    recorded in ``gen.extra`` (the names the generated code needs)."""
    name, k = base, 1
    while (gen.extra.get(name, fn) is not fn or name in gen.namespace
           or name in gen.local_names or name == own):
        k += 1
        name = f"{base}_{k}"
    gen.extra[name] = fn
    return name


def _jnp(name: str) -> Any:
    return getattr(jnp, name)


def _targets(line: cst.BaseStatement) -> list[str]:
    if isinstance(line, cst.SimpleStatementLine) and isinstance(line.body[0], cst.Assign):
        return [n for t in line.body[0].targets for n in assigned_names(t.target)]
    return []


def _substitute(gen: Any, line: cst.BaseStatement, mapping: dict, names: dict, params: dict,
                stmt: cst.BaseStatement, prim: Primitive) -> cst.BaseStatement:
    """A template statement with its Names replaced: by new names (`names`), else by the
    code of expressions (`mapping`, `params`). Done on the text -- the statement split once
    at its Names -- and parsed natively: a libcst transformer per line costs ~5x more."""
    values = dict(params)
    values.update(mapping)
    for alias in _MODULE_ALIASES:
        if alias in gen.namespace and gen.namespace[alias] is not _module(alias):
            names.setdefault(alias, f"_{alias}")
    parts = []
    for literal, name in _pieces(line):
        parts.append(literal)
        if name in names:
            parts.append(names[name])
        elif name in values:
            value = values[name]
            parts.append(value.value if type(value) is cst.Name else _code(value))
        else:
            parts.append(name)
    return cst.parse_statement("".join(parts))


_PIECES: dict[cst.BaseStatement, list[tuple[str, str]]] = {}


def _pieces(line: cst.BaseStatement) -> list[tuple[str, str]]:
    """`line`'s code as (literal text, Name) pairs, the last Name empty: value Names only
    (not attribute names, not keywords), found by Python's own parser."""
    pieces = _PIECES.get(line)
    if pieces is None:
        text = cst.Module(body=[line]).code  # type: ignore[list-item]
        starts = [0]
        for row in text.splitlines(keepends=True):
            starts.append(starts[-1] + len(row))
        spots = sorted((starts[n.lineno - 1] + n.col_offset, starts[n.end_lineno - 1]  # type: ignore[operator]
                        + n.end_col_offset, n.id)  # type: ignore[operator]
                       for n in ast.walk(ast.parse(text)) if isinstance(n, ast.Name))
        pieces, at = [], 0
        for begin, end, name in spots:
            pieces.append((text[at:begin], name))
            at = end
        pieces.append((text[at:], ""))
        _PIECES[line] = pieces
    return pieces


_EXPRESSION_PIECES: dict[str, list[tuple[str, str]]] = {}


def _expression_pieces(expression: str) -> list[tuple[str, str]]:
    """`_pieces` of an expression's source text (a JVP template's contribution)."""
    pieces = _EXPRESSION_PIECES.get(expression)
    if pieces is None:
        spots = sorted((n.col_offset, n.end_col_offset, n.id)  # type: ignore[misc]
                       for n in ast.walk(ast.parse(expression, mode="eval"))
                       if isinstance(n, ast.Name))
        pieces, at = [], 0
        for begin, end, name in spots:
            pieces.append((expression[at:begin], name))
            at = end  # type: ignore[assignment]
        pieces.append((expression[at:], ""))
        _EXPRESSION_PIECES[expression] = pieces
    return pieces


def _code(node: cst.CSTNode) -> str:
    return cst.Module(body=[]).code_for_node(node)


def atom_text(node: cst.CSTNode) -> str:
    """The code of an ANF atom; a negative constant parenthesized (it may become an operand)."""
    if type(node) is cst.Name:
        return node.value  # type: ignore[attr-defined]
    code = _code(node)
    return f"({code})" if code.startswith("-") else code


def _module(alias: str) -> Any:
    return {"jnp": jnp, "lax": lax, "np": np, "ad": ad}[alias]


def index_text(sub: cst.Subscript) -> str:
    """The index of ``a[...]`` as a Python expression: ``(slice(1, n), 0, None)``."""
    code = cst.Module([]).code_for_node
    parts = []
    for element in sub.slice:
        s = element.slice
        if isinstance(s, cst.Slice):
            parts.append("slice({}, {}, {})".format(
                *[code(x) if x is not None else "None" for x in (s.lower, s.upper, s.step)]))
        else:
            parts.append(code(s.value))  # type: ignore[attr-defined]
    if len(parts) == 1 and not (len(sub.slice) == 1 and sub.slice[0].comma != cst.MaybeSentinel.DEFAULT):
        return parts[0]
    return "(" + ", ".join(parts) + ",)"


class RenameModules(cst.CSTTransformer):
    """``ad.x`` -> ``_ad.x`` (and jnp, lax, np) in generated statements, for functions whose
    globals give those names to something else."""

    def __init__(self, renamed: dict[str, str]) -> None:
        super().__init__()
        self.renamed = renamed

    def leave_Attribute(self, original_node: cst.Attribute,
                        updated_node: cst.Attribute) -> cst.Attribute:
        base = updated_node.value
        if isinstance(base, cst.Name) and base.value in self.renamed:
            return updated_node.with_changes(value=cst.Name(self.renamed[base.value]))
        return updated_node


def dropped_derivative(gen: Any, stmt: cst.CSTNode) -> TranspileError:
    """The error for user code that turns a differentiated value into a Python or NumPy
    value (see `_drops`), which would silently drop its derivative."""
    return gen.error(stmt, "this converts a differentiated value to a plain Python or NumPy "
                     "value, which would silently drop its derivative",
                     "use transpiler.numpy (jnp) functions on it, or wrap it in "
                     "lax.stop_gradient if the derivative should be zero")


def _drops(op: cl.Op) -> bool:
    """Calls that turn an array into a Python number or a NumPy array (``float(x)``,
    ``np.asarray(x)``): their result carries no derivative."""
    if op.kind != "call" or isinstance(op.callee, tuple):
        return False
    if op.callee in (float, int, bool, complex):
        return True
    module = getattr(op.callee, "__module__", None) or ""
    return module == "numpy" or module.startswith("numpy.") or isinstance(op.callee, np.ufunc)


def _append(stmt: cst.BaseStatement) -> Optional[tuple[str, str]]:
    """``xs.append(v)`` (names only) as a statement: ``(xs, v)``, else None."""
    if not (isinstance(stmt, cst.SimpleStatementLine)
            and isinstance(stmt.body[0], (cst.Expr, cst.Assign))):
        return None
    call = stmt.body[0].value  # `xs.append(v)`, or `_t = xs.append(v)` in ANF
    if not (isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute)
            and call.func.attr.value == "append" and isinstance(call.func.value, cst.Name)
            and len(call.args) == 1 and isinstance(call.args[0].value, cst.Name)):
        return None
    return call.func.value.value, call.args[0].value.value


def split_return(gen: Any, func: cst.FunctionDef) -> tuple[list[cst.BaseStatement], Any]:
    """An ANF function's statements before its final ``return``, and that return."""
    body = _block(func.body)
    ret = body[-1]
    if not (isinstance(ret, cst.SimpleStatementLine) and isinstance(ret.body[0], cst.Return)):
        raise gen.error(ret, "internal: ANF function does not end with a return")
    return body[:-1], ret


def fixpoint(step: Any, grown: set) -> None:
    """Run `step` until it adds nothing to `grown` (flow-insensitive analyses: loops and
    branches reach a fixpoint)."""
    while True:
        before = len(grown)
        step()
        if len(grown) == before:
            return


def renamed_line(text: str, renamed: dict, prefix: Any) -> cst.BaseStatement:
    """A generated statement, with the helper modules (``ad.``, ``jnp.`` ...) under their
    ``_ad`` ... names when the function's own globals use those names otherwise."""
    if renamed:
        text = prefix.sub(lambda m: renamed.get(m.group(1), m.group(1)) + ".", text)
    return cst.parse_statement(text + "\n")
