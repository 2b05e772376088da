"""Stage ``lower-comprehensions`` (the user's code for every transform, and vmap's frontend
for the library's): a list, set, dict or generator comprehension in a statement becomes
the loop it stands for, hoisted before the statement:

    names = [n for n, t in zip(names, ts) if t is not None]
->
    _c0 = []
    for _c1, _c2 in zip(names, ts):
        if _c2 is not None:
            _c0.append(_c1)
    names = _c0

so each element is computed by ordinary statements the batching transform rewrites one by
one (a comprehension's element can be any expression). Its variables get fresh names (they
do not leak, as in Python 3). A generator becomes an iterator over the computed list; a
dict comprehension adds each entry with ``_c0 = _with_item(_c0, key, value)``, a new
dict, so that reverse mode follows it as a value.
Comprehensions in a ``while`` test, a lambda or a nested comprehension's ``if`` stay.
"""

from __future__ import annotations

from typing import Any

import libcst as cst

from transpiler.frontend.passes import LocatedTransformer, Stage
from transpiler.rewritten import WITH_ITEM

_COMPREHENSIONS = (cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp)


class _Rename(cst.CSTTransformer):
    def __init__(self, mapping: dict[str, str]) -> None:
        super().__init__()
        self.mapping = mapping

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False  # (renamed in leave_Lambda: its parameters shadow the mapping)

    def leave_Lambda(self, original: cst.Lambda, updated: cst.Lambda) -> Any:
        """``lambda v, k=k: k * v`` in ``[... for k in ks]``: the default reads the loop's
        variable, the body its own parameters (and, where not shadowed, the loop's)."""
        params = updated.params
        every = [*params.posonly_params, *params.params, *params.kwonly_params]
        stars = [p for p in (params.star_arg, params.star_kwarg) if isinstance(p, cst.Param)]
        shadowed = {p.name.value for p in [*every, *stars]}
        inner = _Rename({k: v for k, v in self.mapping.items() if k not in shadowed})

        def default(p: cst.Param) -> cst.Param:
            return p.with_changes(default=p.default.visit(self)) if p.default else p
        params = params.with_changes(
            posonly_params=[default(p) for p in params.posonly_params],
            params=[default(p) for p in params.params],
            kwonly_params=[default(p) for p in params.kwonly_params])
        return updated.with_changes(params=params, body=updated.body.visit(inner))

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        return True

    def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute) -> Any:
        return updated.with_changes(attr=original.attr)

    def leave_Arg(self, original: cst.Arg, updated: cst.Arg) -> Any:
        return updated.with_changes(keyword=original.keyword)

    def leave_Name(self, original: cst.Name, updated: cst.Name) -> Any:
        new = self.mapping.get(original.value)
        return updated.with_changes(value=new) if new else updated


def _targets(node: cst.BaseExpression) -> list[str]:
    if isinstance(node, cst.Name):
        return [node.value]
    if isinstance(node, (cst.Tuple, cst.List)):
        return [n for e in node.elements for n in _targets(e.value)]
    return []


class _Hoist(cst.CSTTransformer):
    """Replace the comprehensions of one statement's expressions by fresh names; collect the
    loops that compute them."""

    def __init__(self, fresh: Any) -> None:
        super().__init__()
        self.fresh = fresh
        self.loops: list[cst.BaseStatement] = []

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False

    def leave_ListComp(self, original: Any, updated: Any) -> Any:
        return self._lower(updated, "list")

    def leave_SetComp(self, original: Any, updated: Any) -> Any:
        return self._lower(updated, "set")

    def leave_DictComp(self, original: Any, updated: Any) -> Any:
        return self._lower(updated, "dict")

    def leave_GeneratorExp(self, original: Any, updated: Any) -> Any:
        return self._lower(updated, "generator")

    def _lower(self, comp: Any, kind: str) -> cst.BaseExpression:
        clauses = []
        clause = comp.for_in
        while clause is not None:
            if clause.asynchronous is not None:
                return comp
            clauses.append(clause)
            clause = clause.inner_for_in
        mapping = {n: self.fresh("_c") for c in clauses for n in _targets(c.target)}
        rename = _Rename(mapping)
        acc = self.fresh("_c")
        code = cst.Module([]).code_for_node
        if kind == "dict":  # a new dict per entry: a value the transforms follow
            body = (f"{acc} = {WITH_ITEM}({acc}, {code(comp.key.visit(rename))}, "
                    f"{code(comp.value.visit(rename))})")
        else:
            body = f"{acc}.append({code(comp.elt.visit(rename))})"
        for c in reversed(clauses):
            for test in reversed(c.ifs):
                body = f"if {code(test.test.visit(rename))}:\n" + _indent(body)
            body = f"for {code(c.target.visit(rename))} in {code(c.iter.visit(rename))}:\n" \
                + _indent(body)
        self.loops.append(cst.parse_statement(f"{acc} = {{}}\n" if kind == "dict" else
                                              f"{acc} = []\n"))
        self.loops.append(cst.parse_statement(body + "\n"))
        if kind in ("set", "generator"):  # a set; a generator: an iterator over the computed
            wrap = "set" if kind == "set" else "iter"  # elements (a name of its own: the list
            made = self.fresh("_c")                    # is appended to, the set is not)
            self.loops.append(cst.parse_statement(f"{made} = {wrap}({acc})\n"))
            return cst.Name(made)
        return cst.Name(acc)


def _indent(text: str) -> str:
    return "\n".join("    " + line for line in text.split("\n"))


class LowerComprehensions(LocatedTransformer):
    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False

    def leave_SimpleStatementLine(self, original: cst.SimpleStatementLine,
                                  updated: cst.SimpleStatementLine) -> Any:
        return self._hoisted(original, updated, lambda hoist: updated.visit(hoist))

    def leave_If(self, original: cst.If, updated: cst.If) -> Any:
        return self._hoisted(original, updated, lambda hoist: updated.with_changes(
            test=updated.test.visit(hoist)))

    def _hoisted(self, original: Any, updated: Any, rewrite: Any) -> Any:
        """`updated` with its comprehensions (found by `rewrite`) computed by loops before
        it, located at the statement."""
        hoist = _Hoist(self.ctx.names.fresh)
        new = rewrite(hoist)
        if not hoist.loops:
            return updated
        loc = self.ctx.locations.get(original)
        for stmt in hoist.loops:
            if loc is not None:
                self.ctx.locate(stmt, loc)
        return cst.FlattenSentinel([*hoist.loops, new])


LOWER_COMPREHENSIONS = Stage("lower-comprehensions", LowerComprehensions,
                             triggers=_COMPREHENSIONS)
