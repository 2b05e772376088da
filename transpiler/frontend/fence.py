"""Stage ``fence``: reject unsupported syntax up front, at the user's file:line:col.

Each rejection says what is unsupported and what to write instead. Allowed on purpose:
nested ``def``s and ``lambda``s (undecorated), ``assert``, ``print``, strings and
f-strings, ``*args`` / ``**kwargs`` in calls, ``if``/``for``/``while``/``break``/
``continue``/early ``return`` (canonicalized later).
"""

from __future__ import annotations

from typing import Iterator, Optional

import libcst as cst
import transpiler.frontend.match as m

from transpiler.errors import SourceLocation, TranspileError

# node type -> (what is unsupported, what to do instead)
UNSUPPORTED: dict[type[cst.CSTNode], tuple[str, str]] = {
    cst.ClassDef: ("class definitions inside a transformed function are not supported",
                   "Define the class at module level."),
    cst.Yield: ("generators (`yield`) are not supported",
                "Return a list or an array instead of yielding values."),
    cst.Global: ("`global` declarations are not supported",
                 "Pass the value in as an argument and return the new value."),
    cst.Nonlocal: ("`nonlocal` declarations are not supported",
                   "Pass the value in as an argument and return the new value."),
    cst.Try: ("`try` statements are not supported",
              "Check the condition explicitly (e.g. with `jnp.where`) instead of catching."),
    cst.TryStar: ("`try`/`except*` statements are not supported",
                  "Check the condition explicitly instead of catching."),
    cst.With: ("`with` statements are not supported",
               "Move the `with` block outside the transformed function."),
    cst.Await: ("`await` is not supported", "Transform a plain (non-async) function."),
    cst.Del: ("`del` is not supported",
              "Just stop using the name (or rebind it to a new value)."),
    cst.Import: ("`import` inside a transformed function is not supported",
                 "Import at module level; the function sees module-level names."),
    cst.ImportFrom: ("`import` inside a transformed function is not supported",
                     "Import at module level; the function sees module-level names."),
    cst.NamedExpr: ("assignment expressions (`:=`) are not supported",
                    "Assign the value in a statement of its own first."),
    cst.Match: ("`match` statements are not supported", "Write an `if`/`elif` chain."),
}

# augmented operator -> the `.at[...]` method that does it
AT_METHODS: dict[type[cst.BaseAugOp], str] = {
    cst.AddAssign: "add",
    cst.MultiplyAssign: "multiply",
    cst.DivideAssign: "divide",
    cst.PowerAssign: "power",
}


class Fence:
    """Raises `TranspileError` at the first unsupported construct of a function."""

    def __init__(self, func: cst.FunctionDef, filename: str,
                 locations: dict[cst.CSTNode, SourceLocation]) -> None:
        self.func = func
        self.filename = filename
        self.locations = locations
        arrays, dicts, numpy_made = _updatable(func)
        self.updatable = arrays | dicts | numpy_made

    def error(self, node: cst.CSTNode, message: str, hint: str) -> TranspileError:
        return TranspileError(message, self.locations.get(node), hint)

    def check(self, node: cst.CSTNode) -> None:
        rule = UNSUPPORTED.get(type(node))
        if rule is not None:
            raise self.error(node, *rule)
        visit = getattr(self, f"visit_{type(node).__name__}", None)
        if visit is not None:
            visit(node)

    # --- functions ---------------------------------------------------------------------
    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        if node.asynchronous is not None:
            raise self.error(node, "`async def` functions are not supported",
                             "Transform a plain (non-async) function.")
        if node is not self.func and node.decorators:
            decorator = node.decorators[0]
            raise self.error(decorator, "decorators on nested functions are not supported",
                             f"Define `{node.name.value}` undecorated and apply the decorator "
                             f"by a call: `{node.name.value} = {_code(decorator.decorator)}"
                             f"({node.name.value})`.")

    # --- loops -------------------------------------------------------------------------
    def visit_For(self, node: cst.For) -> None:
        if node.asynchronous is not None:
            raise self.error(node, "`async for` is not supported", "Use a plain `for` loop.")
        self.check_targets(node.target, None)

    def visit_CompFor(self, node: cst.CompFor) -> None:
        if node.asynchronous is not None:
            raise self.error(node, "`async for` is not supported", "Use a plain `for` loop.")

    # --- assignments -------------------------------------------------------------------
    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            if len(node.targets) == 1 and self.item_update(target.target):
                continue
            self.check_targets(target.target, None, starred=len(node.targets) == 1)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self.check_targets(node.target, None)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        if not self.item_update(node.target):
            self.check_targets(node.target, node)

    def item_update(self, target: cst.BaseExpression) -> bool:
        """``y[i] = v`` on an array or dict this function made and shares with no other
        name: canonicalization makes it ``y = y.at[i].set(v)`` (``d = {**d, k: v}``)."""
        return isinstance(target, cst.Subscript) and isinstance(target.value, cst.Name) \
            and target.value.value in self.updatable

    def check_targets(self, target: cst.BaseExpression, aug: Optional[cst.AugAssign],
                      starred: bool = False) -> None:
        """Reject writes into arrays (``x[i] = v``), attributes and starred targets (but
        ``a, *rest = v`` with `starred`: one star among plain names, which canonicalization
        writes out as indexing)."""
        if starred and starred_names(target) is not None:
            return
        for leaf in _target_leaves(target):
            if m.matches(leaf, m.StarredElement()):
                raise self.error(leaf, "starred assignment targets (`a, *rest = ...`) are not "
                                 "supported", "Index explicitly: `a, rest = t[0], t[1:]`.")
            if m.matches(leaf, m.Subscript()):
                assert isinstance(leaf, cst.Subscript)
                raise self.error(leaf, "in-place update of an element of "
                                 f"`{_code(leaf.value)}`: only an array or dict this function "
                                 "creates (an array with a call or arithmetic, a dict with "
                                 "`{...}` or dict(...)) and no other name, container or call "
                                 "refers to is updated in place; this one may be an argument, "
                                 "a list, or shared", _at_hint(leaf, aug))
            if m.matches(leaf, m.Attribute()):
                assert isinstance(leaf, cst.Attribute)
                raise self.error(leaf, "assignment to an attribute is not supported (objects "
                                 "cannot be mutated inside a transformed function)",
                                 f"Bind a new local name instead of setting "
                                 f"`{_code(leaf)}`, and return it if the caller needs it.")


# Calls that make containers, not arrays
_CONTAINER_CALLS = frozenset({"list", "dict", "set", "tuple", "iter", "zip", "enumerate",
                              "range", "sorted", "reversed", "map", "filter"})


def updatable_arrays(func: cst.FunctionDef) -> set[str]:
    """Local names whose element updates (``y[i] = v``) can be functional: every value
    they are assigned is computed by a call or arithmetic (an array, not a list or dict),
    they are not parameters, and no other name, container or call argument ever holds the
    same object (``z = y``, ``[y]``, ``xs.append(y)``), so no one could see the change."""
    return _updatable(func)[0]


def numpy_arrays(func: cst.FunctionDef) -> set[str]:
    """Local names only ever assigned arrays NumPy's functions make (``np.ones(n)``): their
    element updates (``m[i] = v``) stay NumPy's in-place ones -- no transform's values are
    in them (a traced value put into one is an error at its line, as NumPy cannot hold it)."""
    return _updatable(func)[2]


def updatable_dicts(func: cst.FunctionDef) -> set[str]:
    """Local names of dicts whose item assignments (``d[k] = v``) can be functional (``d =
    {**d, k: v}``): every value they are assigned is a dict this function makes (``{...}``,
    a dict comprehension, ``dict(...)``), and, beyond `updatable_arrays`' rules, no call
    but a reading builtin's (``len(d)``, ``sorted(d)`` ...) is passed it, so no callee
    keeps the object whose later changes it would see."""
    return _updatable(func)[1]


# Builtins that read a dict passed to them and keep no reference to it
_READING_CALLS = frozenset({"len", "sorted", "list", "tuple", "set", "dict", "any", "all",
                            "str", "repr", "print", "isinstance", "sum", "min", "max"})


def _updatable(func: cst.FunctionDef) -> tuple[set[str], set[str], set[str]]:
    """(updatable arrays, updatable dicts, NumPy's arrays) of `func`: one walk over its
    body."""
    params = {p.name.value for p in [*func.params.params, *func.params.posonly_params,
                                     *func.params.kwonly_params]}
    for star in (func.params.star_arg, func.params.star_kwarg):
        if isinstance(star, cst.Param):
            params.add(star.name.value)
    made: set[str] = set()
    made_dicts: set[str] = set()
    numpy_made: set[str] = set()  # NumPy's own arrays (np.ones(...)): updated by NumPy
    other: set[str] = set(params)
    passed: set[str] = set()  # given to a call that may keep it
    for node in m.preorder(func.body):
        if isinstance(node, (cst.Assign, cst.AnnAssign, cst.AugAssign)):
            targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) \
                else [node.target]
            value = node.value
            for target in targets:
                if isinstance(target, cst.Name):
                    computed = isinstance(value, (cst.BinaryOperation, cst.UnaryOperation,
                                                  cst.Attribute)) or (
                        isinstance(value, cst.Call) and not (
                            isinstance(value.func, cst.Name)
                            and value.func.value in _CONTAINER_CALLS))
                    if _numpy_call(value):
                        numpy_made.add(target.value)
                    elif computed or isinstance(node, cst.AugAssign):
                        made.add(target.value)
                    elif _makes_dict(value) and not isinstance(node, cst.AugAssign):
                        made_dicts.add(target.value)
                    else:
                        other.add(target.value)
                elif not isinstance(target, (cst.Subscript, cst.Attribute)):
                    other.update(n.value for n in m.findall(target, m.Name())
                                 if isinstance(n, cst.Name))
            if isinstance(value, cst.Name):  # `z = y`: two names for one array
                other.add(value.value)
        elif isinstance(node, (cst.For, cst.CompFor)):
            other.update(n.value for n in m.findall(node.target, m.Name())
                         if isinstance(n, cst.Name))
        elif isinstance(node, (cst.Element, cst.DictElement)):
            if isinstance(node.value, cst.Name):
                other.add(node.value.value)  # held by a container
        elif isinstance(node, cst.Call):
            if isinstance(node.func, cst.Attribute) and \
                    node.func.attr.value in ("append", "extend", "insert", "add", "update"):
                other.update(a.value.value for a in node.args if isinstance(a.value, cst.Name))
            if not (isinstance(node.func, cst.Name) and node.func.value in _READING_CALLS):
                passed.update(a.value.value for a in node.args if isinstance(a.value, cst.Name))
    return made - other - made_dicts - numpy_made, made_dicts - made - other - passed, \
        numpy_made - made - made_dicts


# The names NumPy goes by in numeric code: a call of one of its functions makes an array of
# NumPy's, which Python updates in place as it is
_NUMPY_NAMES = frozenset({"np", "numpy", "onp"})


def _numpy_call(value: Optional[cst.BaseExpression]) -> bool:
    if not isinstance(value, cst.Call):
        return False
    func = value.func
    while isinstance(func, cst.Attribute):
        func = func.value
    return isinstance(func, cst.Name) and func.value in _NUMPY_NAMES and \
        isinstance(value.func, cst.Attribute)


def _makes_dict(value: Optional[cst.BaseExpression]) -> bool:
    return isinstance(value, (cst.Dict, cst.DictComp)) or (
        isinstance(value, cst.Call) and isinstance(value.func, cst.Name)
        and value.func.value == "dict")


def updates_in_place(func: cst.FunctionDef) -> bool:
    """Whether `func` sets elements of an array in place (``y[i] = v``, ``y[i] += v``):
    code the transforms rewrite into functional updates, which Python cannot run as is on
    immutable arrays."""
    return any(isinstance(node, cst.AssignTarget) and isinstance(node.target, cst.Subscript)
               or isinstance(node, cst.AugAssign) and isinstance(node.target, cst.Subscript)
               for node in m.preorder(func.body))


def fence(func: cst.FunctionDef, filename: str,
          locations: dict[cst.CSTNode, SourceLocation]) -> None:
    """Raise `TranspileError` at the first construct of `func` that transforms cannot handle
    (a walk over the nodes in source order: a libcst visitor costs ~3x more)."""
    fence = Fence(func, filename, locations)
    for node in m.preorder(func):
        fence.check(node)


# What no transform follows even in the library's own composites (whose other Python the
# fence lets through): a statement the transforms would copy without transforming its body.
LIBRARY_UNSUPPORTED = (cst.Match,)  # (`with`: forward mode follows it, the others refuse it)


def fence_library(func: cst.FunctionDef, filename: str,
                  locations: dict[cst.CSTNode, SourceLocation]) -> None:
    """The library's check: a `match` block in a composite would be copied into its
    derivative or batched code untransformed (a silent zero), so it is an error instead."""
    for node in m.preorder(func):
        if isinstance(node, LIBRARY_UNSUPPORTED):
            raise TranspileError(
                f"internal: {func.name.value} ({filename}) uses a `{type(node).__name__.lower()}` "
                "statement, which the transforms do not follow", locations.get(node),
                "move the block into a helper the transforms see as a call (or a rule)")


def starred_names(target: cst.BaseExpression) -> Optional[tuple[list[str], str, list[str]]]:
    """``a, b, *rest, z``: (names before the star, the starred name, names after), when the
    target is a tuple or list of plain names with exactly one star; None otherwise."""
    if not isinstance(target, (cst.Tuple, cst.List)):
        return None
    stars = [i for i, e in enumerate(target.elements) if isinstance(e, cst.StarredElement)]
    if len(stars) != 1 or not all(isinstance(e.value, cst.Name) for e in target.elements):
        return None
    names = [e.value.value for e in target.elements]  # type: ignore[attr-defined]
    return names[:stars[0]], names[stars[0]], names[stars[0] + 1:]


def _target_leaves(target: cst.BaseExpression) -> Iterator[cst.CSTNode]:
    """The individual targets of an assignment target (looking into tuples and lists)."""
    if m.matches(target, m.Tuple() | m.List()):
        assert isinstance(target, (cst.Tuple, cst.List))
        for element in target.elements:
            if m.matches(element, m.StarredElement()):
                yield element
            else:
                yield from _target_leaves(element.value)
    else:
        yield target


def _at_hint(target: cst.Subscript, aug: Optional[cst.AugAssign]) -> str:
    array = _code(target.value)
    index = ", ".join(_code(element.slice) for element in target.slice)
    at = f"{array} = {array}.at[{index}]"
    if aug is None:
        keyed = isinstance(target.value, cst.Name) and len(target.slice) == 1 and \
            isinstance(target.slice[0].slice, cst.Index)
        return f"Write `{at}.set(value)` instead" + (
            f" (of a dict: `{array} = {{**{array}, {index}: value}}`)." if keyed else ".")
    value = _code(aug.value)
    method = AT_METHODS.get(type(aug.operator))
    if method is not None:
        return f"Write `{at}.{method}({value})` instead."
    if m.matches(aug.operator, m.SubtractAssign()):
        return f"Write `{at}.add(-({value}))` instead."
    op = _code(aug.operator).strip().rstrip("=")
    return f"Write `{at}.set({_code(target)} {op} {value})` instead."


def _code(node: cst.CSTNode) -> str:
    return cst.Module(body=[]).code_for_node(node).strip()
