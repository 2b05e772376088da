"""Structural patterns over libcst nodes: the part of ``libcst.matchers`` the frontend uses.

``import transpiler.frontend.match as m`` then ``m.matches(node, m.Return())``,
``m.findall(tree, m.For() | m.While())``, ``m.Name("x")``, sequences with
``m.DoNotCare()`` / ``m.AtLeastN(n=1)``. ``libcst.matchers`` is a generated module of
~15,000 lines that takes ~0.5 s to import -- more than a whole cold transform -- so the
frontend matches with these few dozen lines instead.

A pattern ``m.<NodeType>(*values, **fields)`` matches an instance of ``cst.<NodeType>``
whose fields (positional values in the node's field order) match: a pattern matches
recursively, a list or tuple matches element-wise, anything else by equality.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, Callable, Iterator, Sequence

import libcst as cst
from transpiler.frontend.passes import child_nodes


class BaseMatcherNode(ABC):
    """A pattern; ``a | b`` matches what either matches."""

    @abstractmethod
    def match(self, value: Any) -> bool:
        ...

    def __or__(self, other: BaseMatcherNode) -> BaseMatcherNode:
        return OneOf(self, other)


class NodePattern(BaseMatcherNode):
    def __init__(self, kind: type, values: tuple, fields: dict[str, Any]) -> None:
        names = [n for n in kind.__dataclass_fields__ if n != "__slots__"]  # type: ignore[attr-defined]
        self.kind = kind
        self.fields = {**dict(zip(names, values)), **fields}

    def match(self, value: Any) -> bool:
        return isinstance(value, self.kind) and all(
            _match(want, getattr(value, name)) for name, want in self.fields.items())

    def __repr__(self) -> str:
        return f"m.{self.kind.__name__}({self.fields})"


class OneOf(BaseMatcherNode):
    def __init__(self, *options: BaseMatcherNode) -> None:
        self.options = options

    def match(self, value: Any) -> bool:
        return any(option.match(value) for option in self.options)


class DoNotCare(BaseMatcherNode):
    def match(self, value: Any) -> bool:
        return True


class AtLeastN(BaseMatcherNode):
    """In a sequence pattern: `n` or more elements (matching `matcher`, if given)."""

    def __init__(self, matcher: BaseMatcherNode | None = None, *, n: int) -> None:
        self.matcher = matcher or DoNotCare()
        self.n = n

    def match(self, value: Any) -> bool:
        return self.matcher.match(value)


def _match(want: Any, value: Any) -> bool:
    if isinstance(want, BaseMatcherNode):
        return want.match(value)
    if isinstance(want, (list, tuple)):
        return isinstance(value, (list, tuple)) and _match_sequence(want, value)
    return bool(want == value)


def _match_sequence(wants: Sequence[Any], values: Sequence[Any]) -> bool:
    if not wants:
        return not values
    first, rest = wants[0], wants[1:]
    if isinstance(first, AtLeastN):
        for taken in range(first.n, len(values) - len(rest) + 1):
            if all(first.match(v) for v in values[:taken]) and \
                    _match_sequence(rest, values[taken:]):
                return True
        return False
    return bool(values) and _match(first, values[0]) and _match_sequence(rest, values[1:])


def matches(node: Any, pattern: BaseMatcherNode) -> bool:
    return pattern.match(node)


def findall(tree: cst.CSTNode, pattern: BaseMatcherNode) -> list[cst.CSTNode]:
    """Every node under `tree` (itself included) that matches, in source order."""
    return [node for node in preorder(tree) if pattern.match(node)]


def preorder(root: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """`root` and the nodes below it in source order (whitespace and punctuation left out)."""
    stack = [root]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(reversed(child_nodes(node)))

def _pattern(kind: type) -> Callable[..., NodePattern]:
    def pattern(*values: Any, **fields: Any) -> NodePattern:
        return NodePattern(kind, values, fields)

    pattern.__name__ = kind.__name__
    return pattern


# The node types the frontend matches on (add one here to match on it).
AnnAssign = _pattern(cst.AnnAssign)
Arg = _pattern(cst.Arg)
AsName = _pattern(cst.AsName)
Assign = _pattern(cst.Assign)
AssignTarget = _pattern(cst.AssignTarget)
Attribute = _pattern(cst.Attribute)
AugAssign = _pattern(cst.AugAssign)
BooleanOperation = _pattern(cst.BooleanOperation)
Break = _pattern(cst.Break)
Call = _pattern(cst.Call)
CompFor = _pattern(cst.CompFor)
Comparison = _pattern(cst.Comparison)
ConcatenatedString = _pattern(cst.ConcatenatedString)
Continue = _pattern(cst.Continue)
Element = _pattern(cst.Element)
Ellipsis = _pattern(cst.Ellipsis)
Float = _pattern(cst.Float)
For = _pattern(cst.For)
FunctionDef = _pattern(cst.FunctionDef)
IfExp = _pattern(cst.IfExp)
Imaginary = _pattern(cst.Imaginary)
Integer = _pattern(cst.Integer)
Lambda = _pattern(cst.Lambda)
List = _pattern(cst.List)
ListComp = _pattern(cst.ListComp)
Minus = _pattern(cst.Minus)
NamedExpr = _pattern(cst.NamedExpr)
Name = _pattern(cst.Name)
Param = _pattern(cst.Param)
Plus = _pattern(cst.Plus)
Return = _pattern(cst.Return)
SimpleStatementLine = _pattern(cst.SimpleStatementLine)
SimpleString = _pattern(cst.SimpleString)
StarredElement = _pattern(cst.StarredElement)
Subscript = _pattern(cst.Subscript)
SubtractAssign = _pattern(cst.SubtractAssign)
Tuple = _pattern(cst.Tuple)
UnaryOperation = _pattern(cst.UnaryOperation)
While = _pattern(cst.While)
