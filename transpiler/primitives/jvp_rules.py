"""Forward-mode rules: a JVP template (``prim.jvp``) for every differentiable primitive.

Templates (see jvp_template.py) give one expression per operand:
its contribution to the output tangent, from ``<operand>_dot``, ``out``, the operands and
the params. The transform sums the contributions of the operands with nonzero tangents and
shapes the sum like the output (``ad.tangent_like``), so an elementwise contribution may
keep its operand's shape and let broadcasting do the rest. Helpers live in
transpiler/transforms/ad/tangents.py (``ad``).

Conventions at kinks are those of the VJP rules (vjp_rules.py), each rule being the
transpose of its VJP: abs takes +1 at 0, maximum/minimum and the reductions split ties
equally, cummax/cummin give a tie to the later element. Index operands (gather/scatter
`indices`, dynamic_slice starts) have no contribution: they are never differentiated.
"""

from __future__ import annotations

from transpiler.primitives import conversions as conv
from transpiler.primitives import dot as dot_p
from transpiler.primitives import elementwise as ew
from transpiler.primitives import indexing as idx_p
from transpiler.primitives import reductions as red_p
from transpiler.primitives import shape as sp
from transpiler.primitives.core import Primitive
from transpiler.primitives.jvp_template import jvp_template


def unary(prim: Primitive, x: str) -> None:
    """An elementwise unary rule: the tangent from ``x_dot``."""
    prim.jvp = jvp_template(("x",), x=x)


def binary(prim: Primitive, x: str, y: str) -> None:
    """An elementwise binary rule: one contribution per operand (broadcast by the sum)."""
    prim.jvp = jvp_template(("x", "y"), x=x, y=y)


def linear(prim: Primitive, x: str) -> None:
    """A linear unary primitive: the same operation applied to the tangent."""
    prim.jvp = jvp_template(("x",), x=x)


# --- elementwise unary (derivative from x or from the result `out`) -----------------------
unary(ew.exp, "x_dot * out")
unary(ew.log, "x_dot / x")
unary(ew.log1p, "x_dot / (x + 1)")
unary(ew.expm1, "x_dot * (out + 1)")
unary(ew.sqrt, "x_dot / (2 * out)")
unary(ew.rsqrt, "x_dot * (-0.5) * out / x")
unary(ew.cbrt, "x_dot / (3 * lax.integer_pow(out, 2))")
unary(ew.sin, "x_dot * jnp.cos(x)")
unary(ew.cos, "-(x_dot * jnp.sin(x))")
unary(ew.tan, "x_dot * (1 + jnp.square(out))")
unary(ew.tanh, "x_dot * (1 - jnp.square(out))")
unary(ew.arctan, "x_dot / (1 + jnp.square(x))")
unary(ew.logistic, "x_dot * out * (1 - out)")
unary(ew.negative, "-x_dot")
unary(ew.abs_, "jnp.where(x >= 0, x_dot, -x_dot)")  # JAX: +x_dot at 0
# Piecewise constant: a zero tangent, as in JAX.
for _prim in (ew.floor, ew.ceil, ew.round_, ew.sign):
    unary(_prim, "ad.zeros_tangent(out)")

# --- elementwise binary (broadcasting) ------------------------------------------------------
binary(ew.add, "x_dot", "y_dot")
binary(ew.subtract, "x_dot", "-y_dot")
binary(ew.multiply, "x_dot * y", "x * y_dot")
binary(ew.true_divide, "x_dot / y", "-y_dot * x / jnp.square(y)")
binary(ew.floor_divide, "ad.zeros_tangent(out)", "ad.zeros_tangent(out)")  # steps
# remainder = x - y * floor(x / y) (what jnp.remainder's jvp gives too, through lax.rem)
binary(ew.remainder, "x_dot", "-y_dot * jnp.floor(x / y)")
# x ** y: d/dx = y x**(y-1) (0 where y == 0), d/dy = log(x) x**y (0 where x == 0), as JAX.
binary(ew.power, "x_dot * jnp.where(y == 0, 0.0, y * jnp.power(x, y - 1))",
       "y_dot * out * jnp.log(jnp.where(x == 0, 1.0, x))")
# Ties take half of each tangent, as in JAX.
binary(ew.maximum, "x_dot * ad.balanced_eq(x, out, y)", "y_dot * ad.balanced_eq(y, out, x)")
binary(ew.minimum, "x_dot * ad.balanced_eq(x, out, y)", "y_dot * ad.balanced_eq(y, out, x)")
binary(ew.arctan2, "x_dot * y / (jnp.square(x) + jnp.square(y))",
       "-y_dot * x / (jnp.square(x) + jnp.square(y))")

# --- conversions, select, integer_pow -------------------------------------------------------
conv.convert_element_type.jvp = jvp_template(("x",), x="ad.convert_tangent(x_dot, out)")
conv.integer_pow.jvp = jvp_template(("x",), x="x_dot * ad.integer_pow_derivative(x, y)")
# The predicate is boolean: never differentiated.
conv.select.jvp = jvp_template(("pred", "x", "y"), x="jnp.where(pred, x_dot, 0.0)",
                               y="jnp.where(pred, 0.0, y_dot)")

# --- shape (linear) -------------------------------------------------------------------------
linear(sp.reshape, "jnp.reshape(x_dot, new_sizes)")
linear(sp.broadcast_to, "jnp.broadcast_to(x_dot, shape)")
linear(sp.transpose, "jnp.transpose(x_dot, permutation)")
linear(sp.rev, "ad.rev(x_dot, dimensions)")
linear(sp.slice_, "ad.slice_tangent(x_dot, start_indices, limit_indices, strides)")
sp.concatenate.jvp = jvp_template(("*xs",), xs="ad.concatenate_tangents(xs_dot, xs, axis)")
sp.pad.jvp = jvp_template(("x", "value"), x="ad.pad_tangent(x_dot, None, low, high, interior)",
                          value="ad.pad_value_tangent(value_dot, x, low, high, interior)")

# --- reductions and scans -------------------------------------------------------------------
linear(red_p.reduce_sum, "ad.reduce_sum_tangent(x_dot, axes)")
red_p.reduce_prod.jvp = jvp_template(("x",), x="ad.prod_tangent(x_dot, x, out, axes)")
# Ties share the tangent equally (JAX's chooser rule).
red_p.reduce_max.jvp = jvp_template(("x",), x="ad.chooser_tangent(x_dot, x, out, axes)")
red_p.reduce_min.jvp = jvp_template(("x",), x="ad.chooser_tangent(x_dot, x, out, axes)")
linear(red_p.cumsum, "ad.cumsum(x_dot, axis, reverse)")
red_p.cumprod.jvp = jvp_template(("x",), x="ad.cumprod_tangent(x_dot, x, axis, reverse)")
red_p.cummax.jvp = jvp_template(
    ("x",), x="ad.cumulative_chooser_tangent(x_dot, x, out, axis, reverse)")
red_p.cummin.jvp = jvp_template(
    ("x",), x="ad.cumulative_chooser_tangent(x_dot, x, out, axis, reverse)")

# --- dot_general (bilinear) -----------------------------------------------------------------
# Computed in the output's dtype (which a preferred_element_type param sets, when given).
dot_p.dot_general.jvp = jvp_template(
    ("lhs", "rhs"),
    lhs="ad.dot_general_tangent(lhs_dot, rhs, dimension_numbers, out)",
    rhs="ad.dot_general_tangent(lhs, rhs_dot, dimension_numbers, out)")

# --- indexing (index operands are never differentiated) -------------------------------------
idx_p.dynamic_slice.jvp = jvp_template(
    ("operand", "*starts"), operand="ad.dynamic_slice_tangent(operand_dot, starts, slice_sizes)")
idx_p.dynamic_update_slice.jvp = jvp_template(
    ("operand", "update", "*starts"),
    operand="ad.dynamic_update_slice_tangent(operand_dot, jnp.zeros_like(update), starts)",
    update="ad.dynamic_update_slice_tangent(jnp.zeros_like(operand), update_dot, starts)")
idx_p.gather.jvp = jvp_template(("operand", "indices"),
                                operand="ad.gather_tangent(operand_dot, indices)")
# set: overwritten positions lose the operand's tangent, the updates that won bring theirs;
# add: both pass through; multiply: product rule; min/max: ties share equally.
idx_p.scatter.jvp = jvp_template(
    ("operand", "indices", "updates"),
    operand="ad.scatter_operand_tangent(operand_dot, operand, indices, updates, out, mode)",
    updates="ad.scatter_updates_tangent(updates_dot, operand, indices, updates, out, mode)")

# --- not differentiable: integer or boolean results -----------------------------------------
# Comparisons, isnan/isfinite, logic, bitwise ops and shifts, iota, argmax/argmin,
# reduce_and/or, bitcast_convert_type and stop_gradient are defined with
# differentiable=False: they get no rule. tests/test_jvp_rules.py fails naming any
# differentiable primitive without one.
