"""Derivative rules written once for both modes: a primitive's JVP and VJP from one formula.

A family module declares each primitive's rules next to its definition (``define(...,
**linear(...))`` or ``prim.def_rules(...)``); the forms here build the JVP and VJP
templates (jvp_template.py, vjp_template.py) of the common cases from one formula:

- `elementwise`: a pointwise factor per operand; ``{g}`` in its expression stands for the
  incoming tangent (``x_dot``) in the JVP and for the cotangent (``out_bar``, summed back
  over broadcast axes for an n-ary primitive) in the VJP;
- `linear`: a primitive linear in its operand ``x``: its JVP is the primitive applied to
  the tangent, its VJP the transpose; both written with ``{t}`` for the value they map;
- `piecewise_constant`: a zero derivative almost everywhere (floor, sign ...), as in JAX.

Each returns the keyword arguments of `define`/`Primitive.def_rules` (``jvp=``, ``vjp=``).
The rest (reductions that pick elements, bilinear dot_general, indexing) give the two
templates side by side. Conventions at kinks are JAX's: abs takes +1 at 0, maximum /
minimum and the reductions split ties equally, cummax/cummin give a tie to the later
element. Index operands (gather/scatter `indices`, dynamic_slice starts) are never
differentiated. Primitives with integer or boolean results (comparisons, logic, bit
twiddling, iota, argmax, bitcasts, stop_gradient) are defined ``differentiable=False``;
tests/test_jvp_rules.py and tests/test_vjp_rules.py fail naming any differentiable
primitive without a rule.
"""

from __future__ import annotations

from typing import Any, Sequence

from transpiler.primitives.jvp_template import jvp_template
from transpiler.primitives.vjp_template import vjp_template

Rules = dict[str, Any]


def elementwise(**factors: str) -> Rules:
    """One expression per operand, ``{g}`` times that operand's partial derivative: the
    JVP contribution with ``{g}`` the operand's tangent, the VJP with ``{g}`` the
    cotangent (summed back over broadcast axes for an n-ary primitive)."""
    operands = tuple(factors)
    jvp = jvp_template(operands, **{o: f.format(g=f"{o}_dot") for o, f in factors.items()})
    if len(operands) == 1:
        (operand, factor), = factors.items()
        vjp = vjp_template(operands, f"{operand}_bar = {factor.format(g='out_bar')}")
    else:
        vjp = vjp_template(operands, "\n".join(
            f"{o}_bar = ad.unbroadcast_like({f.format(g='out_bar')}, {o})"
            for o, f in factors.items()))
    return {"jvp": jvp, "vjp": vjp}


def piecewise_constant(operands: Sequence[str] = ("x",)) -> Rules:
    """A zero derivative almost everywhere (floor, sign ...): zero tangent and cotangent,
    as in JAX."""
    operands = tuple(operands)
    return {"jvp": jvp_template(operands, **{o: "ad.zeros_tangent(out)" for o in operands}),
            "vjp": vjp_template(operands, "\n".join(f"{o}_bar = ad.zeros_cotangent({o})"
                                                    for o in operands))}


def linear(apply: str, transpose: str) -> Rules:
    """A primitive linear in its operand ``x``: its tangent is `apply` (the primitive with
    its params) of the tangent, its cotangent `transpose` of ``out_bar``; ``{t}`` is the
    value each maps."""
    return {"jvp": jvp_template(("x",), x=apply.format(t="x_dot")),
            "vjp": vjp_template(("x",), f"x_bar = {transpose.format(t='out_bar')}")}
