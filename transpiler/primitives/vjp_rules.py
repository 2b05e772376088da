"""Reverse-mode rules: a VJP template (``prim.vjp``) for every differentiable primitive.

Templates are Python source (see vjp_template.py): they assign
``<operand>_bar`` from ``out_bar``, ``out``, the operands and the params. The helpers they
call live in transpiler/transforms/ad/__init__.py (``ad``). Primitives whose outputs
are integers or booleans (comparisons, logic, bit twiddling, iota, argmax, bitcasts) are
marked ``differentiable=False`` instead: their outputs are never active.

Operands that are indices (gather/scatter `indices`, dynamic_slice starts) get no template
statement: they are never differentiated.
"""

from __future__ import annotations

from transpiler.primitives import conversions as conv
from transpiler.primitives import dot as dot_p
from transpiler.primitives import elementwise as ew
from transpiler.primitives import indexing as idx_p
from transpiler.primitives import reductions as red_p
from transpiler.primitives import shape as sp
from transpiler.primitives.core import Primitive
from transpiler.primitives.vjp_template import vjp_template


def unary(prim: Primitive, x_bar: str) -> None:
    """An elementwise unary rule: ``x_bar = <expression>``."""
    prim.vjp = vjp_template(("x",), f"x_bar = {x_bar}")


def binary(prim: Primitive, x_bar: str, y_bar: str) -> None:
    """An elementwise binary rule; each expression is summed back over broadcast axes."""
    prim.vjp = vjp_template(("x", "y"), f"""
x_bar = ad.unbroadcast_like({x_bar}, x)
y_bar = ad.unbroadcast_like({y_bar}, y)
""")


# --- elementwise unary (derivative from x or from the result `out`) -----------------------
unary(ew.exp, "out_bar * out")
unary(ew.log, "out_bar / x")
unary(ew.log1p, "out_bar / (x + 1)")
unary(ew.expm1, "out_bar * (out + 1)")
unary(ew.sqrt, "out_bar / (2 * out)")
unary(ew.rsqrt, "out_bar * (-0.5) * out / x")
unary(ew.cbrt, "out_bar / (3 * lax.integer_pow(out, 2))")
unary(ew.sin, "out_bar * jnp.cos(x)")
unary(ew.cos, "-(out_bar * jnp.sin(x))")
unary(ew.tan, "out_bar * (1 + jnp.square(out))")
unary(ew.tanh, "out_bar * (1 - jnp.square(out))")
unary(ew.arctan, "out_bar / (1 + jnp.square(x))")
unary(ew.logistic, "out_bar * out * (1 - out)")
unary(ew.negative, "-out_bar")
unary(ew.abs_, "jnp.where(x >= 0, out_bar, -out_bar)")  # JAX: +g at 0
# Piecewise constant: a zero cotangent, as in JAX.
for _prim in (ew.floor, ew.ceil, ew.round_, ew.sign):
    unary(_prim, "ad.zeros_cotangent(x)")

# --- elementwise binary (broadcasting) ------------------------------------------------------
binary(ew.add, "out_bar", "out_bar")
binary(ew.subtract, "out_bar", "-out_bar")
binary(ew.multiply, "out_bar * y", "out_bar * x")
binary(ew.true_divide, "out_bar / y", "-out_bar * x / jnp.square(y)")
binary(ew.floor_divide, "jnp.zeros_like(out_bar)", "jnp.zeros_like(out_bar)")  # steps
# remainder = x - y * floor(x / y)
binary(ew.remainder, "out_bar", "-out_bar * jnp.floor(x / y)")
# x ** y: d/dx = y x**(y-1) (0 where y == 0), d/dy = log(x) x**y (0 where x == 0), as JAX.
binary(ew.power, "out_bar * jnp.where(y == 0, 0.0, y * jnp.power(x, y - 1))",
       "out_bar * out * jnp.log(jnp.where(x == 0, 1.0, x))")
# Ties split 0.5/0.5 between the operands, as in JAX.
binary(ew.maximum, "out_bar * ad.balanced_eq(x, out, y)", "out_bar * ad.balanced_eq(y, out, x)")
binary(ew.minimum, "out_bar * ad.balanced_eq(x, out, y)", "out_bar * ad.balanced_eq(y, out, x)")
binary(ew.arctan2, "out_bar * y / (jnp.square(x) + jnp.square(y))",
       "-out_bar * x / (jnp.square(x) + jnp.square(y))")

# --- conversions, select, integer_pow -------------------------------------------------------
conv.convert_element_type.vjp = vjp_template(("x",), "x_bar = ad.convert_cotangent(out_bar, out, x)")
conv.integer_pow.vjp = vjp_template(("x",), "x_bar = out_bar * ad.integer_pow_derivative(x, y)")
# The predicate is boolean: never differentiated.
conv.select.vjp = vjp_template(("pred", "x", "y"), """
x_bar = ad.unbroadcast_like(jnp.where(pred, out_bar, 0.0), x)
y_bar = ad.unbroadcast_like(jnp.where(pred, 0.0, out_bar), y)
""")

# --- shape ----------------------------------------------------------------------------------
sp.reshape.vjp = vjp_template(("x",), "x_bar = jnp.reshape(out_bar, jnp.shape(x))")
sp.broadcast_to.vjp = vjp_template(("x",), "x_bar = ad.unbroadcast_like(out_bar, x)")
sp.transpose.vjp = vjp_template(
    ("x",), "x_bar = jnp.transpose(out_bar, ad.inverse_permutation(permutation))")
sp.concatenate.vjp = vjp_template(("*xs",), "xs_bar = ad.split_concatenated(out_bar, xs, axis)")
sp.pad.vjp = vjp_template(("x", "value"), """
x_bar = ad.unpad(out_bar, low, high, interior)
value_bar = ad.pad_value_cotangent(out_bar, low, high, interior, value)
""")
sp.rev.vjp = vjp_template(("x",), "x_bar = ad.rev(out_bar, dimensions)")
sp.slice_.vjp = vjp_template(("x",), """
x_bar = ad.unslice(out_bar, jnp.shape(x), start_indices, limit_indices, strides)
""")

# --- reductions and scans -------------------------------------------------------------------
red_p.reduce_sum.vjp = vjp_template(("x",), "x_bar = ad.expand_reduced(out_bar, jnp.shape(x), axes)")
red_p.reduce_prod.vjp = vjp_template(("x",), "x_bar = ad.prod_cotangent(out_bar, x, axes)")
# Ties share the cotangent equally (JAX's chooser rule).
red_p.reduce_max.vjp = vjp_template(("x",), "x_bar = ad.chooser_cotangent(out_bar, x, out, axes)")
red_p.reduce_min.vjp = vjp_template(("x",), "x_bar = ad.chooser_cotangent(out_bar, x, out, axes)")
red_p.cumsum.vjp = vjp_template(("x",), "x_bar = ad.cumsum(out_bar, axis, not reverse)")
red_p.cumprod.vjp = vjp_template(("x",), """
x_bar = ad.cumprod_cotangent(out_bar, x, out, axis, reverse)
""")
red_p.cummax.vjp = vjp_template(("x",), """
x_bar = ad.cumulative_chooser_cotangent(out_bar, x, out, axis, reverse)
""")
red_p.cummin.vjp = vjp_template(("x",), """
x_bar = ad.cumulative_chooser_cotangent(out_bar, x, out, axis, reverse)
""")

# --- dot_general ----------------------------------------------------------------------------
# Contract out_bar with the other operand, transposed back to the operand's layout (JAX's
# _dot_general_transpose_lhs/rhs); the result is cast to the operand's dtype, which also
# undoes a preferred_element_type.
dot_p.dot_general.vjp = vjp_template(("lhs", "rhs"), """
lhs_bar = ad.dot_transpose_lhs(out_bar, lhs, rhs, dimension_numbers)
rhs_bar = ad.dot_transpose_rhs(out_bar, lhs, rhs, dimension_numbers)
""")

# --- indexing (index operands are never differentiated) -------------------------------------
idx_p.dynamic_slice.vjp = vjp_template(("operand", "*starts"), """
operand_bar = ad.dynamic_slice_cotangent(out_bar, operand, starts)
""")
idx_p.dynamic_update_slice.vjp = vjp_template(("operand", "update", "*starts"), """
operand_bar = ad.dynamic_update_slice_operand_cotangent(out_bar, update, starts)
update_bar = ad.dynamic_update_slice_update_cotangent(out_bar, update, starts)
""")
idx_p.gather.vjp = vjp_template(("operand", "indices"), """
operand_bar = ad.gather_cotangent(out_bar, operand, indices)
""")
# set: overwritten positions get nothing, the updates that won get theirs; add: both pass
# through; multiply: exact with zero updates; min/max: ties share equally (reduce_max).
idx_p.scatter.vjp = vjp_template(("operand", "indices", "updates"), """
operand_bar = ad.scatter_operand_cotangent(out_bar, operand, indices, updates, out, mode)
updates_bar = ad.scatter_updates_cotangent(out_bar, operand, indices, updates, out, mode)
""")

# --- not differentiable: integer or boolean results -----------------------------------------
# Comparisons, isnan/isfinite, logic, bitwise ops and shifts, iota, argmax/argmin,
# reduce_and/or and bitcast_convert_type are defined with differentiable=False already.
# tests/test_vjp_rules.py fails naming any differentiable primitive without a template.
