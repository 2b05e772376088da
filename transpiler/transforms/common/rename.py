"""SSA renaming of ANF code: every name is assigned once on each path.

Reverse mode reads forward values in the backward pass, so a reassigned variable
(``x = x * 2; x = sin(x)``) must keep both values: the second assignment becomes
``x_1 = sin(x)``. After an ``if`` whose branches give a name different versions, each
branch ends with a copy into a fresh version (a phi node written as an assignment).
"""

from __future__ import annotations

from typing import Sequence, TypeVar, cast

import libcst as cst
from transpiler.frontend.anf_nodes import _local_names
from transpiler.frontend.resolve_names import free_names
from transpiler.transforms.common.classify import names_in


class RenameNames(cst.CSTTransformer):
    """Rename value Names (not attribute or keyword names) through a mapping."""

    def __init__(self, mapping: dict[str, str]) -> None:
        self.mapping = mapping

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        return True

    def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute) -> cst.Attribute:
        return updated.with_changes(attr=original.attr)

    def leave_Arg(self, original: cst.Arg, updated: cst.Arg) -> cst.Arg:
        return updated.with_changes(keyword=original.keyword)

    def leave_Param(self, original: cst.Param, updated: cst.Param) -> cst.Param:
        return updated.with_changes(name=original.name)

    def leave_Name(self, original: cst.Name, updated: cst.Name) -> cst.Name:
        new = self.mapping.get(original.value)
        return updated.with_changes(value=new) if new else updated


_Node = TypeVar("_Node", bound=cst.CSTNode)


def rename(node: _Node, mapping: dict[str, str]) -> _Node:
    # RenameNames only replaces Names, never removes or flattens a node.
    changes = {old: new for old, new in mapping.items() if old != new}
    if not changes:
        return node
    if isinstance(node, cst.BaseExpression):  # most values: skip the transformer if untouched
        if not any(name in changes for name in names_in(node)):
            return node
    return cast(_Node, node.visit(RenameNames(changes)))


def assigned_names(target: cst.BaseAssignTargetExpression) -> list[str]:
    if isinstance(target, cst.Name):
        return [target.value]
    if isinstance(target, (cst.Tuple, cst.List)):
        return [n for e in target.elements for n in assigned_names(e.value)]  # type: ignore
    return []


def _binds_names_only(target: cst.BaseExpression) -> bool:
    if isinstance(target, cst.Name):
        return True
    if isinstance(target, (cst.Tuple, cst.List)):
        return all(_binds_names_only(e.value) for e in target.elements)
    return False


def loop_assigned(stmt: cst.CSTNode) -> set[str]:
    """Every name a statement (a loop, say) assigns anywhere inside it."""
    names: set[str] = set()

    class Collect(cst.CSTVisitor):
        def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
            names.update(assigned_names(node.target))

        def visit_For(self, node: cst.For) -> None:
            names.update(assigned_names(node.target))

    stmt.visit(Collect())
    return names


def upward_exposed(body: Sequence[cst.BaseStatement]) -> set[str]:
    """The names a loop body reads, on some path through one iteration, before assigning
    them: values an earlier iteration left (``if i > 0: total += prev`` ... ``prev = v``)."""
    exposed: set[str] = set()
    _exposed(body, set(), exposed)
    return exposed


def _exposed(body: Sequence[cst.BaseStatement], assigned: set[str], exposed: set[str]) -> set[str]:
    """Add to `exposed` the names `body` reads before `assigned` or its own assignments
    hold them; return the names assigned on every path through it."""
    def read(node: cst.CSTNode) -> None:
        exposed.update(n for n in names_in(node) if n not in assigned)

    for stmt in body:
        if isinstance(stmt, cst.If):
            read(stmt.test)
            taken = _exposed(cast(cst.IndentedBlock, stmt.body).body, set(assigned), exposed)
            orelse = stmt.orelse
            other = [] if orelse is None else [orelse] if isinstance(orelse, cst.If) else \
                cast(cst.IndentedBlock, orelse.body).body
            assigned |= taken & _exposed(other, set(assigned), exposed)
        elif isinstance(stmt, (cst.For, cst.While)):  # (it may run no iteration)
            read(stmt.iter if isinstance(stmt, cst.For) else stmt.test)
            inner = set(assigned)
            if isinstance(stmt, cst.For):
                inner.update(assigned_names(stmt.target))
            _exposed(cast(cst.IndentedBlock, stmt.body).body, inner, exposed)
        elif isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                targets: list[str] = []
                if isinstance(small, cst.Assign):
                    read(small.value)
                    for t in small.targets:
                        if _binds_names_only(t.target):
                            targets += assigned_names(t.target)
                        else:  # x[i] = v, x.a = v: reads x
                            read(t.target)
                elif isinstance(small, cst.AugAssign):
                    read(small.target)
                    read(small.value)
                    targets = assigned_names(small.target)
                else:
                    read(small)
                assigned.update(targets)
        else:
            read(stmt)
    return assigned


class SSA:
    """Renames a function body; `origin` maps every new statement to the one it came from."""

    def __init__(self, taken: set[str]) -> None:
        self.taken = set(taken)
        self.counters: dict[str, int] = {}
        self.origin: dict[cst.CSTNode, cst.CSTNode] = {}
        self.copybacks: dict[cst.CSTNode, int] = {}  # loop -> how many of its last lines
                                                    # are copy-backs (`carried = version`)
        self.loop_carried: dict[cst.CSTNode, dict[str, str]] = {}
        # Versions a loop defines that were not defined before it: after a loop that ran
        # zero times they are unassigned (a later loop's carry reads them with care).
        self.maybe_unassigned: set[str] = set()
        # Late binding: a nested def reads the enclosing variables when it is called. One
        # called after such a variable was assigned again would see the new value, which
        # the renamed code cannot give it (reverse mode reports `late_bound`).
        self.closed: dict[str, list[cst.FunctionDef]] = {}  # variable -> defs reading it
        self.functions: dict[str, cst.FunctionDef] = {}  # a def's name (or alias) -> def
        self.stale: dict[cst.FunctionDef, str] = {}  # def -> a variable assigned since
        self.late_bound: list[tuple[cst.FunctionDef, str]] = []

    def fresh(self, name: str) -> str:
        base = name
        n = self.counters.get(base, 0)
        while True:
            n += 1
            candidate = f"{base}_{n}"
            if candidate not in self.taken:
                break
        self.counters[base] = n
        self.taken.add(candidate)
        return candidate

    def body(self, stmts: Sequence[cst.BaseStatement], env: dict[str, str],
             defined: set[str]) -> list[cst.BaseStatement]:
        out: list[cst.BaseStatement] = []
        for stmt in stmts:
            out.extend(self.statement(stmt, env, defined))
        return out

    def statement(self, stmt: cst.BaseStatement, env: dict[str, str],
                  defined: set[str]) -> list[cst.BaseStatement]:
        if isinstance(stmt, cst.If):
            return self.branch(stmt, env, defined)
        if isinstance(stmt, (cst.For, cst.While)):
            return self.loop(stmt, env, defined)
        if isinstance(stmt, cst.FunctionDef):
            return [self.function(stmt, env, defined)]
        if isinstance(stmt, cst.SimpleStatementLine) and isinstance(stmt.body[0], cst.Assign):
            assign = stmt.body[0]
            self.late_binding(assign)
            value = rename(assign.value, env)
            targets = []
            new: cst.BaseStatement
            for t in assign.targets:
                if not _binds_names_only(t.target):  # x[i] = v (library code): reads names
                    targets.append(t.with_changes(target=rename(t.target, env)))
                    continue
                mapping = {}
                for name in assigned_names(t.target):
                    for closure in self.closed.get(name, ()):
                        self.stale[closure] = name
                    if name in defined:
                        mapping[name] = self.fresh(name)
                    defined.add(name)
                    env[name] = mapping.get(name, name)
                targets.append(t.with_changes(target=rename(t.target, mapping)))
            new = stmt.with_changes(body=[assign.with_changes(targets=targets, value=value)])
        else:
            new = rename(stmt, env)
        self.origin[new] = stmt
        return [new]

    def late_binding(self, assign: cst.Assign) -> None:
        """Record a call of a nested def whose closed-over variable changed since."""
        for name in names_in(assign.value):
            closure = self.functions.get(name)
            if closure is not None and closure in self.stale:
                self.late_bound.append((closure, self.stale[closure]))
        targets = [n for t in assign.targets for n in assigned_names(t.target)]
        if isinstance(assign.value, cst.Name) and assign.value.value in self.functions:
            for name in targets:  # `h = _lambda0`: an alias of the function
                self.functions[name] = self.functions[assign.value.value]
        else:
            for name in targets:
                self.functions.pop(name, None)

    def function(self, stmt: cst.FunctionDef, env: dict[str, str],
                 defined: set[str]) -> cst.FunctionDef:
        """A nested ``def``: it reads the current versions of the enclosing variables (its
        own parameters and locals keep their names), and binds its name like an assignment."""
        inner = _local_names(stmt)
        for name in free_names(stmt):
            if name in defined:
                self.closed.setdefault(name, []).append(stmt)
        self.stale.pop(stmt, None)
        self.functions[stmt.name.value] = stmt
        new = rename(stmt, {k: v for k, v in env.items() if k not in inner})
        name = stmt.name.value
        version = self.fresh(name) if name in defined else name
        new = new.with_changes(name=cst.Name(version))
        env[name] = version
        defined.add(name)
        self.origin[new] = stmt
        return new

    def loop(self, stmt: cst.For | cst.While, env: dict[str, str],
             defined: set[str]) -> list[cst.BaseStatement]:
        """A loop: each name the body assigns is one *carried* variable across iterations.

        Inside the body every assignment gets a fresh version (so one iteration's values are
        all distinct and can be saved on a tape); the body ends with copy-backs
        ``carried = version``. A name already defined before the loop is carried in a fresh
        name, initialized by a copy before the loop, so earlier values stay intact."""
        before: list[cst.BaseStatement] = []
        carried: dict[str, str] = {}
        target = stmt.target.value if isinstance(stmt, cst.For) and \
            isinstance(stmt.target, cst.Name) else None
        # A name first assigned inside the loop but read, in some iteration, before it is
        # assigned there holds the value an earlier iteration left: carried as well, from
        # None (what no iteration assigned yet).
        exposed = upward_exposed(cast(cst.IndentedBlock, stmt.body).body) - set(defined)
        for name in sorted(loop_assigned(stmt)):
            if name == target:
                carried[name] = self.fresh(name) if name in defined else name
            elif name in defined:
                carried[name] = self.fresh(name)
                value = f"ad.defined(locals(), ({env[name]!r},))[0]" \
                    if env[name] in self.maybe_unassigned else env[name]
                before.append(cst.parse_statement(f"{carried[name]} = {value}"))
            elif name in exposed:
                carried[name] = self.fresh(name)
                before.append(cst.parse_statement(f"{carried[name]} = None"))
            else:
                carried[name] = name
        self.taken.update(carried.values())
        head = {k: v for k, v in env.items()}
        head.update(carried)
        body_env = dict(head)
        # Names first defined inside the loop keep their names (nothing reads them before
        # they are assigned in an iteration); the others are carried.
        body_defined = set(defined) | {carried[n] for n in carried if n in defined} | \
            {n for n in carried if n in exposed}
        body = self.body(list(cast(cst.IndentedBlock, stmt.body).body), body_env, body_defined)
        copies: list[cst.BaseStatement] = []
        for name, name_c in carried.items():
            if name != target and body_env.get(name, name_c) != name_c:
                copies.append(cst.parse_statement(f"{name_c} = {body_env[name]}"))

        body += copies
        new: cst.For | cst.While
        if isinstance(stmt, cst.For):
            new = stmt.with_changes(
                target=cst.Name(carried[target]) if target else stmt.target,
                iter=rename(stmt.iter, env), body=stmt.body.with_changes(body=body))
        else:
            new = stmt.with_changes(test=rename(stmt.test, head),
                                    body=stmt.body.with_changes(body=body))
        for name, name_c in carried.items():
            if name not in defined:
                self.maybe_unassigned.add(name_c)
            env[name] = name_c
            defined.add(name)
        self.origin[new] = stmt
        self.loop_carried[new] = carried
        self.copybacks[new] = len(copies)
        return [*before, new]

    def branch(self, stmt: cst.If, env: dict[str, str], defined: set[str]) -> list[cst.BaseStatement]:
        test = rename(stmt.test, env)
        entry = {n: v for n, v in env.items() if n not in defined}  # (a loop's own names)
        envs, bodies, defs = [], [], []
        blocks: list[Sequence[cst.BaseStatement]] = [cast(cst.IndentedBlock, stmt.body).body]
        orelse = stmt.orelse
        if orelse is not None:
            blocks.append(cast(cst.IndentedBlock, orelse.body).body
                          if isinstance(orelse, cst.Else) else [orelse])
        else:
            blocks.append([])
        for block in blocks:
            e, d = dict(env), set(defined)
            bodies.append(self.body(block, e, d))
            envs.append(e)
            defs.append(d)
        for name in sorted(set(envs[0]) | set(envs[1])):
            versions = [e.get(name) for e in envs]
            if versions[0] == versions[1] or None in versions:
                env[name] = next(v for v in versions if v is not None)
                if None in versions:  # assigned on one path only
                    self.maybe_unassigned.add(env[name])
                if name in defs[0] or name in defs[1]:
                    defined.add(name)
                continue
            joined = self.fresh(name)
            for body, version in zip(bodies, versions):
                # first assigned in a loop that may not run, or on the other path of this
                # branch inside a loop (unassigned here before that path first ran)
                if version in self.maybe_unassigned or entry.get(name) == version:
                    self.maybe_unassigned.add(joined)
                    body.append(cst.parse_statement(
                        f"{joined} = ad.defined(locals(), ({version!r},))[0]"))
                else:
                    body.append(cst.parse_statement(f"{joined} = {version}"))
            env[name] = joined
            defined.add(name)
        new_body = stmt.body.with_changes(body=bodies[0] or [cst.parse_statement("pass")])
        new_else = cst.Else(body=cst.IndentedBlock(body=bodies[1])) if bodies[1] else None
        new = stmt.with_changes(test=test, body=new_body, orelse=new_else)
        self.origin[new] = stmt
        return [new]
