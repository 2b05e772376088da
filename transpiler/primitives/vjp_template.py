"""VJP templates: each primitive's adjoint written as a few lines of Python source.

A template assigns ``<operand>_bar`` for each differentiable operand from ``out_bar`` (the
cotangent of the output), ``out`` (the primal output), the operands and the primitive's
params, all referred to by name::

    vjp_template(("x",), "x_bar = out_bar * jnp.cos(x)")  # sin (elementwise.py)

Module aliases available in templates: ``jnp`` (transpiler.numpy), ``lax``
(transpiler.lax), ``ad`` (transpiler.transforms.ad) and ``np`` (NumPy). A template is a
declaration: this module checks it and instantiates it as libcst statements; what runs
one on values (tests, and rules called at run time) is transforms/ad/templates.py, which
binds those aliases -- so the primitives never import the transforms.

Rules a template follows (checked when it is defined):

- every statement is a plain assignment ``name = expression``;
- each ``<operand>_bar`` is computed by exactly one statement of its own, and no other
  statement reads it -- so the transform can drop the statement of an inactive operand;
- a variadic operand is named ``*xs`` (last); its statement assigns the list ``xs_bar``;
- other assigned names are helper temporaries (`VJPTemplate.temporaries`), kept when a
  statement that is kept reads them.

Templates are checked with `ast` at definition time and parsed with libcst on first use,
so defining ~80 of them costs nothing at ``import transpiler``.
"""

from __future__ import annotations

import ast
import textwrap
from typing import TYPE_CHECKING, Any, Optional, Sequence, Union, cast

if TYPE_CHECKING:  # libcst is imported on first use only (it takes ~0.3 s to import)
    import libcst as cst  # lazy: loads on first use

BAR_SUFFIX = "_bar"
MODULE_ALIASES = ("jnp", "lax", "ad", "np")


class TemplateError(ValueError):
    """A malformed VJP template (a bug in a rule table, not in user code)."""


def operand_names(operands: Sequence[str]) -> tuple[tuple[str, ...], bool]:
    """A template's operand names (``("x", "*xs")``) as (names, whether the last is variadic)."""
    names = tuple(op.lstrip("*") for op in operands)
    starred = [op.startswith("*") for op in operands]
    if any(starred[:-1]):
        raise TemplateError(f"only the last operand may be variadic, got {tuple(operands)}")
    return names, bool(starred) and starred[-1]


class VJPTemplate:
    """The adjoint of one primitive as source statements (see the module docstring)."""

    def __init__(self, operands: Sequence[str], source: str) -> None:
        self.operands, self.variadic = operand_names(operands)
        self.source: str = textwrap.dedent(source).strip() + "\n"
        self.targets: list[str] = []        # the name each statement assigns, in order
        self.reads: list[set[str]] = []     # the names each statement reads
        self._check()
        self._statements: Optional[list[cst.BaseStatement]] = None
        self._code: dict[frozenset[str], Any] = {}

    # --- checks at definition time (stdlib ast: cheap) ---------------------------------------
    def _check(self) -> None:
        try:
            tree = ast.parse(self.source)
        except SyntaxError as err:
            raise TemplateError(f"VJP template does not parse: {err}\n{self.source}") from None
        bars = {f"{op}{BAR_SUFFIX}" for op in self.operands}
        for stmt in tree.body:
            if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1
                    and isinstance(stmt.targets[0], ast.Name)):
                raise TemplateError("VJP template statements must be `name = expression`, "
                                    f"got:\n{ast.unparse(stmt)}")
            target = stmt.targets[0].id
            if target.endswith(BAR_SUFFIX) and target not in bars:
                raise TemplateError(f"VJP template assigns {target}, which names no operand "
                                    f"of {self.operands}")
            if target in bars and target in self.targets:
                raise TemplateError(f"VJP template assigns {target} twice")
            reads = {n.id for n in ast.walk(stmt.value) if isinstance(n, ast.Name)}
            if reads & bars:
                raise TemplateError(f"VJP template statement for {target} reads "
                                    f"{sorted(reads & bars)}; each `_bar` must be computed "
                                    "from out_bar, out, operands and params only")
            self.targets.append(target)
            self.reads.append(reads)

    def has_bar(self, operand: str) -> bool:
        """Whether the template computes `operand`'s cotangent. One it does not is integral
        by the primitive's contract (a predicate, indices) and never carries a derivative."""
        return f"{operand}{BAR_SUFFIX}" in self.targets

    @property
    def temporaries(self) -> tuple[str, ...]:
        """Helper names the template assigns (not ``<operand>_bar``); the transform may
        rename them through `instantiate`'s `renames` to keep them unique."""
        bars = {f"{op}{BAR_SUFFIX}" for op in self.operands}
        return tuple(dict.fromkeys(t for t in self.targets if t not in bars))

    @property
    def statements(self) -> list[cst.BaseStatement]:
        """The template's statements as libcst nodes (parsed once, on first use)."""
        if self._statements is None:
            import libcst as cst  # lazy: loads on first use
            self._statements = list(cst.parse_module(self.source).body)
        return self._statements

    # --- used by the transform ---------------------------------------------------------------
    def instantiate(self, renames: dict[str, str], active: set[str]) -> list[cst.BaseStatement]:
        """The statements computing the bars of the `active` operands, names substituted.

        `active` holds operand names (as in `operands`). `renames` maps template names
        (operands, ``out``, ``out_bar``, ``<operand>_bar``, params, temporaries) to the
        code that replaces them: a name, or any expression source (e.g. a param value
        ``"(0, 1)"``). Names not in `renames` are kept. Helper statements that no kept
        statement reads are dropped as well."""
        keep = self.live_statements(active)
        if not renames:
            return [self.statements[i] for i in keep]
        renamer = _renamer(renames)
        return [self.statements[i].visit(renamer) for i in keep]  # type: ignore[misc]

    def live_statements(self, active: set[str]) -> list[int]:
        wanted = {f"{op}{BAR_SUFFIX}" for op in self.operands if op in active}
        needed: set[str] = set()
        keep: list[int] = []
        for i in reversed(range(len(self.targets))):
            target = self.targets[i]
            if target in wanted or target in needed:
                keep.append(i)
                needed |= self.reads[i]
        return keep[::-1]

    def statement_source(self, index: int) -> str:
        """The source of statement `index` (with its newline)."""
        import libcst as cst  # lazy: loads on first use
        statement = cast(Union[cst.SimpleStatementLine, cst.BaseCompoundStatement],
                         self.statements[index])
        return cst.Module(body=[statement]).code

    def compiled(self, active: frozenset[str]) -> Any:
        """The code object of `instantiate` for `active` (compiled once per active set)."""
        if active not in self._code:
            import libcst as cst  # lazy: loads on first use
            body = cast(Sequence[Union[cst.SimpleStatementLine, cst.BaseCompoundStatement]],
                        self.instantiate({}, set(active)))
            self._code[active] = compile(cst.Module(body=body).code, "<vjp template>", "exec")
        return self._code[active]

    def __repr__(self) -> str:
        shown = ", ".join(self.operands[:-1] + (("*" if self.variadic else "")
                                                + self.operands[-1],) if self.operands else ())
        return f"VJPTemplate(({shown}), {self.source!r})"


def vjp_template(operands: Sequence[str], source: str) -> VJPTemplate:
    """Define a VJP template: ``vjp_template(("x", "y"), "x_bar = ...\\ny_bar = ...")``."""
    return VJPTemplate(operands, source)


def _renamer(renames: dict[str, str]) -> Any:
    """A libcst transformer replacing Names in expression position (not attribute names
    such as the ``shape`` of ``jnp.shape``, nor keyword-argument names)."""
    import libcst as cst  # lazy: loads on first use

    replacements = {name: _expression(code) for name, code in renames.items()}

    class RenameNames(cst.CSTTransformer):
        def leave_Name(self, original_node: cst.Name, updated_node: cst.Name) -> Any:
            return replacements.get(original_node.value, updated_node)

        def leave_Attribute(self, original_node: cst.Attribute,
                            updated_node: cst.Attribute) -> cst.Attribute:
            return updated_node.with_changes(attr=original_node.attr)

        def leave_Arg(self, original_node: cst.Arg, updated_node: cst.Arg) -> cst.Arg:
            return updated_node.with_changes(keyword=original_node.keyword)

    return RenameNames()


def _expression(code: str) -> Any:
    """Parse replacement code; anything but an atom gets parentheses (precedence)."""
    import libcst as cst  # lazy: loads on first use
    expr = cst.parse_expression(code)
    atoms = (cst.Name, cst.Attribute, cst.Call, cst.Subscript, cst.Integer, cst.Float,
             cst.SimpleString, cst.List, cst.Dict)
    if isinstance(expr, atoms) or expr.lpar:
        return expr
    return expr.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
