"""Infrastructure shared by the frontend's source-to-source passes.

Every pass is a libcst transformer class ``VerbObject`` with a stage name ``verb-object``.
A pipeline is an explicit ordered list of `Stage`s (see ``CANONICALIZE_PASSES`` in
`canonicalize.py` and ``ANF_PASSES`` in `anf.py`); `run_stages` applies one and can hand
the code after every stage to a ``dump`` callback, and `dump_stages` returns that code.

Source map: `PassContext.locations` maps CST nodes to the user's `SourceLocation`. It is
keyed by node identity; `LocatedTransformer` copies the entry of an original node to the
node(s) that replace it, so a pass only has to locate the statements it synthesizes.
After each stage, a statement still without an entry takes the location of the statement
it is nested in (used for statements generated inside a generated ``if``); the function's
own location is the last resort.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

import libcst as cst
import transpiler.frontend.match as m

from transpiler.errors import SourceLocation, TranspileError

Locations = dict[cst.CSTNode, SourceLocation]
NodeT = TypeVar("NodeT", bound=cst.CSTNode)
StatementNode = cst.BaseStatement | cst.BaseSmallStatement


class NameGenerator:
    """Deterministic fresh names (``_t0, _t1, ...``) that never clash with the user's."""

    def __init__(self, used: Iterable[str]) -> None:
        self.used = set(used)
        self.counters: dict[str, int] = {}
        self.generated: set[str] = set()

    @classmethod
    def for_function(cls, func: cst.FunctionDef) -> NameGenerator:
        return cls(name.value for name in m.findall(func, m.Name()) if isinstance(name, cst.Name))

    def fresh(self, prefix: str) -> str:
        """The next unused ``prefix<N>`` (N counts up per prefix)."""
        n = self.counters.get(prefix, 0)
        while f"{prefix}{n}" in self.used:
            n += 1
        self.counters[prefix] = n + 1
        return self._claim(f"{prefix}{n}")

    def fresh_plain(self, name: str) -> str:
        """``name`` itself when unused, else a numbered variant."""
        return self._claim(name) if name not in self.used else self.fresh(name)

    def _claim(self, name: str) -> str:
        self.used.add(name)
        self.generated.add(name)
        return name


@dataclass
class PassContext:
    """What every pass of one function shares: file, source map and fresh names."""

    filename: str
    locations: Locations
    names: NameGenerator
    function_location: SourceLocation | None = None

    def location_of(self, *nodes: cst.CSTNode | None) -> SourceLocation | None:
        """The location of the first of ``nodes`` that has one."""
        for node in nodes:
            if node is not None and node in self.locations:
                return self.locations[node]
        return self.function_location

    def locate(self, node: cst.CSTNode, loc: SourceLocation | None) -> None:
        """Give ``node`` (a synthesized statement or expression) the location ``loc``."""
        if loc is not None and node not in self.locations:
            self.locations[node] = loc

    def relocate(self, new: NodeT, old: cst.CSTNode) -> NodeT:
        """Give ``new`` (built from ``old`` with ``with_changes``) the location of ``old``."""
        self.locate(new, self.location_of(old))
        return new

    def locate_line(self, line: cst.SimpleStatementLine, loc: SourceLocation | None) -> None:
        """Locate a statement line and each of its small statements."""
        self.locate(line, loc)
        for small in line.body:
            self.locate(small, loc)

    def error(self, message: str, node: cst.CSTNode | None, hint: str = "") -> TranspileError:
        return TranspileError(message, self.location_of(node), hint)


class LocatedTransformer(cst.CSTTransformer):
    """A transformer whose replacement nodes inherit the original node's location."""

    def __init__(self, ctx: PassContext) -> None:
        super().__init__()
        self.ctx = ctx

    def on_leave(self, original_node, updated_node):  # type: ignore[no-untyped-def, override]
        result = super().on_leave(original_node, updated_node)
        if result is original_node:  # unchanged: it keeps its own location
            return result
        loc = self.ctx.locations.get(original_node)
        if loc is not None:
            nodes = result.nodes if isinstance(result, cst.FlattenSentinel) else [result]
            for node in nodes:
                if isinstance(node, cst.CSTNode):
                    self.ctx.locate(node, loc)
        return result


@dataclass(frozen=True)
class Stage:
    """One pass of a pipeline: its stage name and its transformer class."""

    name: str
    transformer: type[LocatedTransformer]
    doc: str = field(default="", compare=False)
    # The node types the pass rewrites: it is skipped for functions that have none of them
    # (each pass is a full libcst traversal; most functions need few of them).
    triggers: tuple[type, ...] = field(default=(), compare=False)
    # Or a finer test: ``needed(func, counts)`` with the count of each node type in `func`.
    needed: Callable[[cst.FunctionDef, Counter[type]], bool] | None = field(
        default=None, compare=False)

    def applies(self, func: cst.FunctionDef, counts: Counter[type]) -> bool:
        if self.triggers and not any(counts[t] for t in self.triggers):
            return False
        return self.needed is None or self.needed(func, counts)


def function_code(func: cst.FunctionDef) -> str:
    """The source text of a function node."""
    return cst.Module(body=[func]).code


def is_statement(node: cst.CSTNode) -> bool:
    return isinstance(node, (cst.BaseStatement, cst.BaseSmallStatement))


_CHILD_FIELDS: dict[type, tuple[str, ...]] = {}
_SKIPPED_FIELDS = {"lpar", "rpar", "comma", "semicolon", "leading_lines", "trailing_whitespace",
                   "lines_after_decorators", "header", "footer", "equal", "colon", "dot",
                   "star", "whitespace"}


def child_nodes(node: cst.CSTNode) -> list[cst.CSTNode]:
    """The children of `node` in field order, whitespace and punctuation left out."""
    kind = type(node)
    fields = _CHILD_FIELDS.get(kind)
    if fields is None:
        fields = _CHILD_FIELDS[kind] = tuple(
            name for name in kind.__dataclass_fields__  # type: ignore[attr-defined]
            if name not in _SKIPPED_FIELDS and not name.startswith(("whitespace", "__")))
    children: list[cst.CSTNode] = []
    for name in fields:
        value = getattr(node, name)
        if isinstance(value, cst.CSTNode):
            children.append(value)
        elif type(value) in (list, tuple):
            children.extend(v for v in value if isinstance(v, cst.CSTNode))
    return children


def iter_nodes(root: cst.CSTNode) -> Iterable[cst.CSTNode]:
    """`root` and the nodes below it, whitespace and punctuation left out: a plain walk
    over the node fields, ~3x cheaper than a libcst visitor (which rebuilds each node)."""
    stack = [root]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(child_nodes(node))


def iter_statements(func: cst.FunctionDef) -> list[StatementNode]:
    """Every statement inside ``func`` (compound, lines and small statements), nested too."""
    return list(walk_statements(func.body))


def walk_statements(*roots: cst.CSTNode) -> Iterable[StatementNode]:
    """The statements in `roots` (themselves included), outer first, without visiting
    expressions: ~20x cheaper than a visitor over every node."""
    stack: list[cst.CSTNode | None] = list(reversed(roots))
    while stack:
        node = stack.pop()
        if node is None:
            continue
        if isinstance(node, cst.SimpleStatementLine):
            yield node
            yield from node.body
        elif isinstance(node, cst.BaseSmallStatement):
            yield node
        elif isinstance(node, (cst.IndentedBlock, cst.SimpleStatementSuite)):
            stack.extend(reversed(node.body))
        else:  # a compound statement, or its else / except / finally part
            if isinstance(node, cst.BaseCompoundStatement):
                yield node
            parts: list[cst.CSTNode | None] = [getattr(node, "body", None)]
            for name in ("handlers", "orelse", "finalbody"):
                child = getattr(node, name, None)
                parts.extend(child if isinstance(child, (list, tuple)) else [child])
            stack.extend(reversed(parts))


def fill_locations(func: cst.FunctionDef, ctx: PassContext, prune: bool = False) -> None:
    """Give every unlocated statement the location of its enclosing statement; with
    `prune`, also drop the entries of nodes no longer in `func`."""
    locations = ctx.locations
    stack: list[tuple[cst.CSTNode | None, SourceLocation | None]] = [
        (func.body, ctx.location_of(func))]
    while stack:  # statements only, each with the location of the one it is nested in
        node, outer = stack.pop()
        if node is None:
            continue
        if is_statement(node):
            if node not in locations and outer is not None:
                locations[node] = outer
            outer = locations.get(node, outer)
            if isinstance(node, cst.BaseSmallStatement):
                continue
        children: list[cst.CSTNode | None]
        if isinstance(node, (cst.SimpleStatementLine, cst.IndentedBlock,
                             cst.SimpleStatementSuite)):
            children = list(node.body)
        else:  # a compound statement, or its else / except / finally part
            children = [getattr(node, "body", None)]
            for name in ("handlers", "orelse", "finalbody"):
                child = getattr(node, name, None)
                children.extend(child if isinstance(child, (list, tuple)) else [child])
        stack.extend((child, outer) for child in reversed(children))
    if prune:
        ctx.locations = {node: locations[node] for node in iter_nodes(func)
                         if node in locations}


def run_stages(
    func: cst.FunctionDef,
    filename: str,
    locations: Locations,
    stages: Sequence[Stage],
    dump: Callable[[str, str], None] | None = None,
) -> tuple[cst.FunctionDef, Locations]:
    """Apply ``stages`` in order; ``dump(stage_name, code)`` sees the code after each one."""
    counts, names = _scan(func)
    ctx = PassContext(
        filename=filename,
        locations=dict(locations),
        names=NameGenerator(names),
        function_location=locations.get(func),
    )
    # Node counts are taken once, before the first stage: a stage's `applies` test reads
    # what the user wrote (each stage keeps the node types the later ones look for).
    todo = [stage for stage in stages if stage.applies(func, counts)]
    for stage in stages:
        if stage not in todo:
            if dump is not None:  # nothing to rewrite: the code is unchanged
                dump(stage.name, function_code(func))
            continue
        result = func.visit(stage.transformer(ctx))
        assert isinstance(result, cst.FunctionDef), f"stage {stage.name} did not return a function"
        if func in ctx.locations:
            ctx.locate(result, ctx.locations[func])
        func = result
        last = stage is todo[-1]
        fill_locations(func, ctx, prune=last)
        if dump is not None:
            dump(stage.name, function_code(func))
    if not todo:
        fill_locations(func, ctx, prune=True)
    return func, ctx.locations


def dump_stages(
    func: cst.FunctionDef, filename: str, locations: Locations, stages: Sequence[Stage]
) -> dict[str, str]:
    """The code after each stage of ``stages``, by stage name (for debugging and the CLI)."""
    codes: dict[str, str] = {}
    run_stages(func, filename, locations, stages, dump=lambda name, code: codes.__setitem__(name, code))
    return codes


def frontend_stages() -> list[Stage]:
    """The whole frontend pipeline after the fence: canonicalization, then ANF."""
    from transpiler.frontend.anf import ANF_PASSES  # cycle: anf imports this module
    from transpiler.frontend.canonicalize import CANONICALIZE_PASSES  # cycle: it imports this module

    return [*CANONICALIZE_PASSES, *ANF_PASSES]


# Expressions that print correctly as an operand without parentheses.
_ATOMIC = (
    cst.Name, cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString, cst.ConcatenatedString,
    cst.FormattedString, cst.Call, cst.Subscript, cst.Attribute, cst.List, cst.Dict, cst.Set,
    cst.Ellipsis,
)


def parenthesize(expr: cst.BaseExpression) -> cst.BaseExpression:
    """``expr`` wrapped in parentheses unless it is atomic or already parenthesized.

    libcst prints operands verbatim, so an operand spliced into a larger expression (or a
    template, whose placeholders drop parentheses) must carry its own.
    """
    if isinstance(expr, _ATOMIC) or expr.lpar:
        return expr
    return expr.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])


def _scan(func: cst.FunctionDef) -> tuple[Counter[type], set[str]]:
    """How many nodes of each libcst type `func` holds, and every name it uses (one walk:
    the stages' `applies` tests and the fresh-name generator share it)."""
    counts: Counter[type] = Counter()
    names: set[str] = set()
    for node in iter_nodes(func):
        kind = type(node)
        counts[kind] += 1
        if kind is cst.Name:
            names.add(node.value)  # type: ignore[attr-defined]
    return counts, names
