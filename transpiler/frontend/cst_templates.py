"""Code templates: ``parse_template_statement("{b} = ad.add({b}, {v})", b=..., v=...)``.

The same calls as ``libcst.helpers.parse_template_*`` for the one kind of placeholder the
transforms use -- an expression in an expression position -- at a fifth of the cost:
placeholders become unique names, libcst's native parser reads the text, and one small
transformer splices the given nodes in. (libcst's own helpers support placeholders in
every syntactic position, and pay for it on each of the thousands of calls a transform of
a library-heavy function makes.)
"""

from __future__ import annotations

import re

import libcst as cst

_PLACEHOLDER = re.compile(r"\{(\w+)\}")


class _Splice(cst.CSTTransformer):
    def __init__(self, nodes: dict[str, cst.BaseExpression]) -> None:
        super().__init__()
        self.nodes = nodes

    def leave_Name(self, original_node: cst.Name, updated_node: cst.Name
                   ) -> cst.BaseExpression:
        return self.nodes.get(original_node.value, updated_node)


def _mangle(template: str, nodes: dict[str, cst.BaseExpression]
            ) -> tuple[str, dict[str, cst.BaseExpression]]:
    for name, node in nodes.items():
        if not isinstance(node, cst.BaseExpression):
            raise TypeError(f"template placeholder {name!r} takes an expression node, got "
                            f"{type(node).__name__}")
    by_name = {f"__tpl_{name}__": node for name, node in nodes.items()}

    def replace(match: re.Match) -> str:
        name = match.group(1)
        if name not in nodes:
            raise ValueError(f"template {template!r} has no value for {{{name}}}")
        return f"__tpl_{name}__"

    return _PLACEHOLDER.sub(replace, template), by_name


def _as_text(template: str, nodes: dict[str, cst.BaseExpression]) -> str | None:
    """The template's text with each placeholder replaced by its node's code, when every
    replacement is an atom (a Name, an attribute, a call, a subscript ...: most are), so
    that the text means what the tree would: one native parse, no splicing pass."""
    codes = {}
    for name, node in nodes.items():
        if type(node) is cst.Name:
            codes[name] = node.value
        elif isinstance(node, _ATOMS) or node.lpar:
            codes[name] = _EMPTY.code_for_node(node)
        else:
            return None

    def replace(match: re.Match) -> str:
        name = match.group(1)
        if name not in codes:
            raise ValueError(f"template {template!r} has no value for {{{name}}}")
        return codes[name]

    return _PLACEHOLDER.sub(replace, template)


_EMPTY = cst.Module(body=[])
# Expressions whose code binds tighter than any operator a template may put around them.
_ATOMS = (cst.Name, cst.Attribute, cst.Call, cst.Subscript, cst.Integer, cst.Float,
          cst.SimpleString, cst.List, cst.Dict)


def parse_template_expression(template: str, **nodes: cst.BaseExpression) -> cst.BaseExpression:
    plain = _as_text(template, nodes)
    if plain is not None:
        return cst.parse_expression(plain)
    text, by_name = _mangle(template, nodes)
    expr = cst.parse_expression(text)
    if not by_name:
        return expr
    result = expr.visit(_Splice(by_name))
    assert isinstance(result, cst.BaseExpression)
    return result


def parse_template_statement(template: str, **nodes: cst.BaseExpression) -> cst.BaseStatement:
    plain = _as_text(template, nodes)
    if plain is not None:
        return cst.parse_statement(plain if plain.endswith("\n") else plain + "\n")
    text, by_name = _mangle(template, nodes)
    statement = cst.parse_statement(text if text.endswith("\n") else text + "\n")
    if not by_name:
        return statement
    result = statement.visit(_Splice(by_name))
    assert isinstance(result, cst.BaseStatement)
    return result
