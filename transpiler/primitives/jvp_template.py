"""JVP templates: each primitive's forward-mode rule as one expression per operand.

A template gives, for each differentiable operand, the Python expression of that operand's
*contribution* to the output tangent, written with the operand names (primal values),
``<operand>_dot`` (that operand's tangent), ``out`` (the primal output) and the
primitive's params, all referred to by name::

    jvp_template(("x", "y"), x="x_dot * y", y="x * y_dot")  # multiply (elementwise.py)

The forward transform sums the contributions of the operands whose tangents are nonzero
and wraps the sum as ``ad.tangent_like(<sum>, out)`` (the output's shape and dtype).
Module aliases available in templates are those of VJP templates: ``jnp``
(transpiler.numpy), ``lax`` (transpiler.lax), ``ad`` (transpiler.transforms.ad)
and ``np`` (NumPy), bound where a template runs (transforms/ad/templates.py).

Rules a template follows (checked with `ast` when it is defined):

- each contribution is a single Python expression;
- it reads no tangent but its own operand's ``<operand>_dot``, and no ``_bar`` name;
- a variadic operand is named ``*xs`` (last); its contribution sees the list ``xs`` and
  the list ``xs_dot``, holding None where a tangent is zero (at least one is not None);
- operands without a contribution (gather/scatter `indices`, dynamic_slice `starts`) are
  never differentiated.
"""

from __future__ import annotations

import ast
from typing import Any, Sequence

from transpiler.primitives.vjp_template import BAR_SUFFIX, TemplateError, operand_names

DOT_SUFFIX = "_dot"


class JVPTemplate:
    """The forward-mode rule of one primitive (see the module docstring)."""

    def __init__(self, operands: Sequence[str], contributions: dict[str, str]) -> None:
        self.operands, self.variadic = operand_names(operands)
        self.contributions: dict[str, str] = {}
        self.reads: dict[str, frozenset[str]] = {}  # the names each contribution reads
        for operand, source in contributions.items():
            self.reads[operand] = self._check(operand, source)
            self.contributions[operand] = source.strip()
        self._code: dict[str, Any] = {}

    # --- checks at definition time (stdlib ast: cheap) ---------------------------------------
    def _check(self, operand: str, source: str) -> frozenset[str]:
        if operand not in self.operands:
            raise TemplateError(f"JVP template gives a contribution for {operand}, which "
                                f"names no operand of {self.operands}")
        try:
            tree = ast.parse(source.strip(), mode="eval")
        except SyntaxError as err:
            raise TemplateError(f"JVP contribution of {operand} is not one expression: "
                                f"{err}\n{source}") from None
        reads = frozenset(n.id for n in ast.walk(tree) if isinstance(n, ast.Name))
        own = f"{operand}{DOT_SUFFIX}"
        foreign = sorted(name for name in reads if name != own and (
            name.endswith(BAR_SUFFIX) or name in {f"{op}{DOT_SUFFIX}" for op in self.operands}))
        if foreign:
            raise TemplateError(f"JVP contribution of {operand} reads {foreign}; it may use "
                                f"only its own tangent {own}, out, operands and params")
        return reads

    # --- used by the transform ---------------------------------------------------------------
    @property
    def differentiable(self) -> tuple[str, ...]:
        """The operands with a contribution, in operand order."""
        return tuple(op for op in self.operands if op in self.contributions)

    def contribution(self, operand: str) -> str:
        """The expression source of `operand`'s contribution to the output tangent."""
        if operand not in self.contributions:
            raise TemplateError(f"operand {operand} of {self.operands} is not differentiated "
                                f"(it has no JVP contribution)")
        return self.contributions[operand]

    def compiled(self, operand: str) -> Any:
        if operand not in self._code:
            self._code[operand] = compile(self.contributions[operand],
                                          f"<jvp template: {operand}>", "eval")
        return self._code[operand]

    def __repr__(self) -> str:
        shown = list(self.operands)
        if self.variadic:
            shown[-1] = "*" + shown[-1]
        rules = ", ".join(f"{op}={src!r}" for op, src in self.contributions.items())
        return f"JVPTemplate(({', '.join(shown)}), {rules})"


def jvp_template(operands: Sequence[str], **contributions: str) -> JVPTemplate:
    """Define a JVP template: ``jvp_template(("x", "y"), x="x_dot * y", y="x * y_dot")``."""
    return JVPTemplate(operands, contributions)
