"""Activity analysis for forward mode: which variables of a function carry tangents.

Activity is flow-insensitive: a variable is active if any assignment to it depends on a
differentiated input; every assignment to an active variable then sets its tangent (zeros
when that particular value is constant), so an active variable always has a tangent array.
Of those, only the values that also reach the output keep their tangents: library code
computes many static things from arrays (dtypes, shapes, flags).

On the way the analysis records what the tangent rules (tangents.py) read about the code:
the ``x.at`` and ``x.at[i]`` links of ``.at[]`` update chains, and the tuples of names that
``ad.defined`` reads.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Callable, Optional

import libcst as cst

from transpiler.errors import TranspileError
from transpiler.transforms.common import classify as cl
from transpiler.transforms.common.rename import assigned_names
from transpiler.transforms.common.statements import (
    _append,
    _assign,
    _drops,
    atom_text,
    bindings,
    closure_reads,
    dropped_derivative,
    fixpoint,
    index_text,
    nested_blocks,
)


class ActivityAnalysis:
    """The active variables of one function (`active`) for one set of differentiated
    parameters, and the facts about its statements that the tangent rules read."""

    def __init__(self, active_params: frozenset[str], namespace: dict[str, Any],
                 local_names: set[str], user_code: bool,
                 error: Callable[..., TranspileError]) -> None:
        self.active_params = active_params
        self.namespace = namespace
        self.local_names = local_names  # (the emitter's set: it adds its temporaries)
        self.user_code = user_code  # (user code that drops a derivative is an error now)
        self.error = error  # (stmt, message, hint) -> the error located at the statement
        self.active: set[str] = set(active_params)
        self.bound: Counter[str] = Counter()  # name -> how many statements assign it
        self.definitions: dict[str, str] = {}  # name -> "at" | "at_index" (x.at, x.at[i])
        self.at_parts: dict[str, tuple[str, Optional[str]]] = {}  # name -> (x, index text)
        self.packs: dict[str, list[Optional[str]]] = {}  # t = (a, b): t -> ["a", "b"]
        # t = ("a", "b"): the names ``ad.defined(locals(), t)`` reads (a loop's tape)
        self.name_tuples: dict[str, list[str]] = {}
        self.closures: dict[cst.FunctionDef, list[str]] = {}  # nested def -> what it reads

    def run(self, stmts: list[cst.BaseStatement], out: cst.BaseExpression) -> None:
        """Mark the variables of `stmts` that depend on the differentiated parameters and
        reach `out` (the returned value)."""
        self.bound = bindings(stmts)
        fixpoint(lambda: self.analyze(stmts), self.active)
        useful = {out.value} if isinstance(out, cst.Name) else set()
        fixpoint(lambda: self.reaching(stmts, useful), useful)
        self.active &= useful | set(self.active_params)

    def op_of(self, assign: cst.Assign) -> cl.Op:
        return cl.classify(assign.value, self.namespace, self.local_names)

    def closure(self, stmt: cst.FunctionDef) -> list[str]:
        """The enclosing function's variables a nested ``def`` reads."""
        if stmt not in self.closures:
            self.closures[stmt] = closure_reads(stmt, self.local_names)
        return self.closures[stmt]

    # --- what depends on the differentiated parameters ----------------------------------------
    def analyze(self, stmts: list[cst.BaseStatement]) -> None:
        for stmt in stmts:
            if isinstance(stmt, cst.FunctionDef):  # a function value carries its closure
                if any(n in self.active for n in self.closure(stmt)):
                    self.active.add(stmt.name.value)
                continue
            if isinstance(stmt, cst.BaseCompoundStatement):
                for block in nested_blocks(stmt):
                    self.analyze(block)
                continue
            append = _append(stmt)
            if append is not None:  # xs.append(v) (a tape of generated reverse code)
                if append[1] in self.active:
                    self.active.add(append[0])
                continue
            assign = _assign(stmt)
            if assign is None:
                continue
            item = item_set(assign)
            if item is not None:  # d[k] = v: d carries v's derivative from here on
                if item[2] in self.active:
                    self.active.add(item[0])
                continue
            op = self.op_of(assign)
            target = assign.targets[0].target
            if isinstance(target, cst.Name):  # `.at` chains, for the tangents' at_rule
                if op.kind == "attribute" and op.attr == "at":
                    self.definitions[target.value] = "at"
                    self.at_parts[target.value] = (op.operands[0], None)
                elif op.kind == "index" and op.operands and \
                        self.definitions.get(op.operands[0]) == "at":
                    self.definitions[target.value] = "at_index"
                    self.at_parts[target.value] = (self.at_parts[op.operands[0]][0],
                                                   index_text(assign.value))  # type: ignore
            if isinstance(target, cst.Name) and op.kind == "pack" and \
                    self.bound[target.value] == 1:  # (bound once: else per value, below)
                self.packs[target.value] = [  # element-wise activity through `a, b = (x, y)`
                    e.value.value if isinstance(e.value, cst.Name) else None
                    for e in assign.value.elements]  # type: ignore[attr-defined]
            strings = cl.string_tuple(assign.value)
            if isinstance(target, cst.Name) and strings is not None:
                self.name_tuples[target.value] = strings
            defined = cl.defined_names(op, self.name_tuples)
            if defined is not None:  # ad.defined(locals(), names): active through the names
                if any(n in self.active for n in defined):
                    self.active.update(assigned_names(target))
                continue
            if isinstance(target, (cst.Tuple, cst.List)) and isinstance(assign.value, cst.Name) \
                    and assign.value.value in self.packs:
                elements = self.packs[assign.value.value]
                names = assigned_names(target)
                if len(names) == len(elements):
                    self.active.update(n for n, e in zip(names, elements) if e in self.active)
                    continue
            reads = cl.reads(op)
            if any(n in self.active for n in reads) and cl.propagates(op) \
                    and not self.static_comprehension(assign.value):
                for t in assign.targets:
                    self.active.update(assigned_names(t.target))
            elif any(n in self.active for n in reads) and self.user_code and _drops(op):
                raise dropped_derivative(self, stmt)

    def static_comprehension(self, value: cst.BaseExpression) -> bool:
        return cl.static_comprehension(value, self.namespace, self.local_names)

    # --- what reaches the output ----------------------------------------------------------
    def reaching(self, stmts: list[cst.BaseStatement], useful: set[str]) -> None:
        """Add to `useful` the operands of statements whose results are useful."""
        for stmt in stmts:
            if isinstance(stmt, cst.FunctionDef):
                if stmt.name.value in useful:
                    useful.update(self.closure(stmt))
                continue
            if isinstance(stmt, cst.BaseCompoundStatement):
                for block in nested_blocks(stmt):
                    self.reaching(block, useful)
                continue
            append = _append(stmt)
            if append is not None and append[0] in useful:
                useful.add(append[1])
            assign = _assign(stmt)
            if assign is None:
                continue
            item = item_set(assign)
            if item is not None:  # d[k] = v: v's derivative is useful where d's is
                if item[0] in useful:
                    useful.add(item[2])
                continue
            targets = [n for t in assign.targets for n in assigned_names(t.target)]
            source = assign.value.value if isinstance(assign.value, cst.Name) else None
            if len(targets) > 1 and source in self.packs and \
                    len(self.packs[source]) == len(targets):  # a, b = (x, y): element-wise
                for n, e in zip(targets, self.packs[source]):
                    if n in useful and e is not None:
                        useful.update((e, source))
                continue
            op = self.op_of(assign)
            defined = cl.defined_names(op, self.name_tuples)
            if defined is not None:
                if any(n in useful for n in targets):
                    useful.update(defined)
                continue
            if any(n in useful for n in targets) and cl.propagates(op) \
                    and not self.static_comprehension(assign.value):
                useful.update(cl.reads(op))
                if op.kind == "call" and op.method_self:  # x.at[i].set(v): the chain
                    useful.add(op.method_self)


def item_set(assign: cst.Assign) -> Optional[tuple[str, str, str]]:
    """``d[k] = v`` (a container's element set in place, in the library's code): (d, the
    key's text, v), for a Name `d` and an atom `v`; else None."""
    target = assign.targets[0].target
    if len(assign.targets) != 1 or not isinstance(target, cst.Subscript) or \
            not isinstance(target.value, cst.Name) or not isinstance(assign.value, cst.Name) \
            or len(target.slice) != 1 or not isinstance(target.slice[0].slice, cst.Index):
        return None
    return target.value.value, atom_text(target.slice[0].slice.value), assign.value.value
