"""Building blocks of the ANF pass: what counts as a constant or an atom, and small
statement constructors."""

from __future__ import annotations

import libcst as cst
import transpiler.frontend.match as m

from transpiler.frontend.cst_templates import parse_template_statement
from transpiler.frontend.passes import walk_statements

Statements = list[cst.BaseStatement]
Linearized = tuple[Statements, cst.BaseExpression]

_NUMBER = m.Integer() | m.Float() | m.Imaginary()
_CONSTANT = (_NUMBER | m.SimpleString() | m.ConcatenatedString()
             | m.Name("True") | m.Name("False") | m.Name("None")
             | m.UnaryOperation(operator=m.Minus() | m.Plus(), expression=_NUMBER))
# Expressions that need control flow of their own (short-circuit evaluation).
_BRANCHING = m.IfExp() | m.BooleanOperation() | m.Comparison(comparisons=[m.DoNotCare(), m.AtLeastN(n=1)])


def _is_constant(expr: cst.BaseExpression) -> bool:
    return m.matches(expr, _CONSTANT)


def _is_variable(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Name) and not _is_constant(expr)


def _bare(expr: cst.BaseExpression) -> cst.BaseExpression:
    """``expr`` without redundant parentheses (a tuple keeps or gets its own)."""
    if isinstance(expr, (cst.Tuple, cst.GeneratorExp)):
        return expr.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    return expr.with_changes(lpar=[], rpar=[]) if expr.lpar else expr


def _assign(target: str, value: cst.BaseExpression) -> cst.SimpleStatementLine:
    return cst.SimpleStatementLine(body=[cst.Assign(
        targets=[cst.AssignTarget(target=cst.Name(target))], value=_bare(value))])


def _if(test: cst.Name, body: Statements, orelse: Statements | None = None) -> cst.If:
    template = "if {test}:\n    pass\nelse:\n    pass\n" if orelse else "if {test}:\n    pass\n"
    node = parse_template_statement(template, test=test)
    assert isinstance(node, cst.If)
    node = node.with_changes(body=node.body.with_changes(body=body))
    if orelse:
        assert node.orelse is not None
        node = node.with_changes(orelse=node.orelse.with_changes(
            body=node.orelse.body.with_changes(body=orelse)))
    return node


def _root_name(expr: cst.BaseExpression) -> str | None:
    """``a`` for a dotted chain of names ``a.b.c``, else None."""
    while isinstance(expr, cst.Attribute):
        expr = expr.value
    return expr.value if isinstance(expr, cst.Name) else None


def _local_names(func: cst.FunctionDef) -> set[str]:
    """Parameters and every name the function binds."""
    params = func.params
    names = {p.name.value for p in (*params.posonly_params, *params.params,
                                    *params.kwonly_params, params.star_arg, params.star_kwarg)
             if isinstance(p, cst.Param)}
    for node in walk_statements(func.body):
        if isinstance(node, cst.Assign):
            for target in node.targets:
                _target_names(target.target, names)
        elif isinstance(node, (cst.For, cst.AnnAssign)):
            _target_names(node.target, names)
    return names


def _target_names(target: cst.BaseExpression, names: set[str]) -> None:
    """Every Name in an assignment target (subscripts and attributes included)."""
    if isinstance(target, cst.Name):
        names.add(target.value)
    elif isinstance(target, (cst.Tuple, cst.List)):
        for element in target.elements:
            _target_names(element.value, names)
    else:
        names.update(n.value for n in m.findall(target, m.Name()) if isinstance(n, cst.Name))
