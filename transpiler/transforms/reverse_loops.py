"""Reverse mode's loops and local functions (a mixin of `ReverseAD`, reverse_ad.py).

A loop that computes differentiated values records each iteration's values on a tape (a
Python list; under jit Python loops unroll and the list holds tracers, and a loop on a
traced condition is converted by transforms/autograph.py, which asks for a bound); the
backward pass replays the tape in reverse. A nested ``def``'s cotangent is the dict of its
closure's cotangents, which flows back into the closed-over variables.
"""

from __future__ import annotations

from typing import Any, cast

import libcst as cst
from transpiler.frontend.cst_templates import parse_template_expression, parse_template_statement

from transpiler.transforms.ad_utils import (RenameModules, _all_assigned, _block, _is_copy,
                                            _reads, _top_assigned)
from transpiler.transforms.rename import loop_assigned


class LoopAdjoints:
    """Tapes for loops and the adjoints of loops and nested functions."""

    ssa: Any
    active: set[str]
    has_bar: set[str]
    maybe_none: set[str]
    renamed: dict[str, str]
    tapes: dict[cst.CSTNode, tuple[str, list[str], list[tuple[str, str]]]]
    closures: dict[cst.FunctionDef, list[str]]
    backward_origin: dict[cst.CSTNode, Any]
    # ... and these methods of ReverseAD:
    bar: Any
    bar_node: Any
    tmp: Any
    location: Any
    accumulate: Any
    backward: Any

    def add_tapes(self, stmts: list[cst.BaseStatement]) -> list[cst.BaseStatement]:
        """Loops that compute differentiated values record each iteration's values on a
        tape (a Python list: under jit, Python loops unroll and the list holds tracers)."""
        out: list[cst.BaseStatement] = []
        for stmt in stmts:
            if isinstance(stmt, cst.If):
                if_body = stmt.body.with_changes(body=self.add_tapes(_block(stmt.body)))
                orelse = stmt.orelse
                if isinstance(orelse, cst.Else):
                    orelse = orelse.with_changes(body=orelse.body.with_changes(
                        body=self.add_tapes(_block(orelse.body))))
                new_if = stmt.with_changes(body=if_body, orelse=orelse)
                self.ssa.origin[new_if] = self.ssa.origin.get(stmt, stmt)
                out.append(new_if)
                continue
            if not isinstance(stmt, (cst.For, cst.While)) or not (
                    loop_assigned(stmt) & self.active):
                out.append(stmt)
                continue
            carried = self.ssa.loop_carried.get(stmt, {})
            body = self.add_tapes(_block(stmt.body))
            # The copy-backs SSA appended (a `c = acc` of the user's own, earlier in the
            # body, looks the same but is a statement to differentiate).
            count = self.ssa.copybacks.get(stmt, 0)
            copies = [(c.body[0].targets[0].target.value, c.body[0].value.value)  # type: ignore
                      for c in body[len(body) - count:]]
            assert all(_is_copy(c, carried) for c in body[len(body) - count:])
            core = body[:len(body) - len(copies)]
            top = _top_assigned(core)
            target = stmt.target.value if isinstance(stmt, cst.For) and \
                isinstance(stmt.target, cst.Name) else None
            always = {v for n, v in carried.items() if v != n or n == target}  # defined before
            saved = sorted(always | top)
            maybe = sorted(_all_assigned(core) - top - set(saved))
            tape = self.tmp("tape")
            items = ", ".join(saved)
            if maybe:  # assigned only on some paths through the body: saved when they exist
                items += f", ad.defined(locals(), {tuple(maybe)!r})"
                saved = saved + [f"({', '.join(maybe)},)"]
            push = cst.parse_statement(f"{tape}.append(({items},))")
            if self.renamed:
                push = cast(cst.SimpleStatementLine, push.visit(RenameModules(self.renamed)))
            new_loop = stmt.with_changes(body=stmt.body.with_changes(
                body=[*core, push, *body[len(core):]]))
            self.ssa.origin[new_loop] = self.ssa.origin.get(stmt, stmt)
            self.tapes[new_loop] = (tape, saved, copies)
            out += [cst.parse_statement(f"{tape} = []"), new_loop]
        return out

    def backward_closure(self, stmt: cst.FunctionDef) -> list[cst.BaseStatement]:
        """A nested ``def``'s cotangent is a dict over the variables it closes over (see
        runtime_helpers.vjp_call_closure): each entry flows back into its variable."""
        name = stmt.name.value
        if name not in self.active or name not in self.has_bar:
            return []
        lines: list[cst.BaseStatement] = []
        for free in self.closures.get(stmt, []):
            if free in self.active:
                lines += self.accumulate(free, parse_template_expression(
                    "ad.item({b}, {k})", b=self.bar_node(name), k=cst.SimpleString(repr(free))))
                self.maybe_none.add(free)
        loc = self.location(stmt)
        for line in lines:
            self.backward_origin[line] = loc
        return lines

    def backward_loop(self, stmt: cst.CSTNode) -> list[cst.BaseStatement]:
        """Replay the tape in reverse: each iteration's values, then its adjoint."""
        tape, saved, copies = self.tapes[stmt]
        body = list(stmt.body.body)  # type: ignore[attr-defined]
        core = body[:len(body) - len(copies) - 1]
        defined_inside = _all_assigned(core)
        outer = sorted((_reads(core) - defined_inside) | {c for c, _ in copies})
        init = []
        for name in outer:
            if name in self.active and name not in self.has_bar:
                init.append(parse_template_statement("{b} = None", b=self.bar_node(name)))
                self.has_bar.add(name)
                self.maybe_none.add(name)
        before = set(self.has_bar)
        lines: list[cst.BaseStatement] = []
        for carried, version in reversed(copies):  # `carried = version`, then a fresh carry
            if carried in self.active:
                lines += self.accumulate(version, self.bar_node(carried))
                lines.append(parse_template_statement("{b} = None", b=self.bar_node(carried)))
                self.maybe_none |= {carried, version}
        # A value assigned in the body whose cotangent exists before the body's adjoint
        # (one read after the loop) is a new value each iteration: the cotangent reaches
        # the last iteration's only, so it starts over once that assignment's adjoint ran.
        outlives = (defined_inside & before) - set(outer)
        self.maybe_none |= outlives
        enclosing = self.resets
        self.resets = enclosing | outlives | {c for c, _ in copies}
        lines += self.backward(core)
        self.resets = enclosing
        self.has_bar = before | (self.has_bar - defined_inside)
        unpack = cast(cst.For, cst.parse_statement(
            f"for ({', '.join(saved)},) in {tape}[::-1]:\n    pass\n"))
        loop = unpack.with_changes(body=unpack.body.with_changes(
            body=lines or [cst.parse_statement("pass")]))
        return [*init, loop]
