"""Derivative rules: every differentiable primitive's JVP and VJP, declared together.

Both are source templates (jvp_template.py, vjp_template.py): a JVP gives one expression
per operand -- its contribution to the output tangent, from ``<operand>_dot`` -- and a VJP
assigns ``<operand>_bar`` from ``out_bar``; both read ``out``, the operands and the params
by name, and the helpers of transpiler/transforms/ad (``ad``), ``jnp`` and ``lax``.

Where one formula gives both, it is written once:

- an elementwise primitive's derivative is a pointwise factor: ``{g}`` in its expression
  stands for the incoming tangent (``x_dot``) in the JVP and for the cotangent
  (``out_bar``, summed back over broadcast axes) in the VJP (`elementwise`);
- a linear primitive's JVP is the primitive itself applied to the tangent, and its VJP
  is the transpose (`linear`): both written with ``{t}`` for the value they map.

The rest (reductions that pick elements, bilinear dot_general, indexing) declare the two
side by side with `rules`. Conventions at kinks are JAX's: abs takes +1 at 0, maximum /
minimum and the reductions split ties equally, cummax/cummin give a tie to the later
element. Index operands (gather/scatter `indices`, dynamic_slice starts) are never
differentiated. Primitives with integer or boolean results (comparisons, logic, bit
twiddling, iota, argmax, bitcasts, stop_gradient) are defined ``differentiable=False``;
tests/test_jvp_rules.py and tests/test_vjp_rules.py fail naming any differentiable
primitive without a rule.
"""

from __future__ import annotations

from transpiler.primitives import conversions as conv
from transpiler.primitives import dot as dot_p
from transpiler.primitives import elementwise as ew
from transpiler.primitives import indexing as idx_p
from transpiler.primitives import reductions as red_p
from transpiler.primitives import shape as sp
from transpiler.primitives import sorting as sort_p
from transpiler.primitives.core import Primitive
from transpiler.primitives.jvp_template import jvp_template
from transpiler.primitives.vjp_template import vjp_template


def elementwise(prim: Primitive, **factors: str) -> None:
    """One expression per operand, ``{g}`` times that operand's partial derivative: the
    JVP contribution with ``{g}`` the operand's tangent, the VJP with ``{g}`` the
    cotangent (summed back over broadcast axes for a binary primitive)."""
    operands = tuple(factors)
    jvp = jvp_template(operands, **{o: f.format(g=f"{o}_dot") for o, f in factors.items()})
    if len(operands) == 1:
        vjp = vjp_template(operands, f"x_bar = {factors['x'].format(g='out_bar')}")
    else:
        vjp = vjp_template(operands, "\n".join(
            f"{o}_bar = ad.unbroadcast_like({f.format(g='out_bar')}, {o})"
            for o, f in factors.items()))
    prim.def_rules(jvp=jvp, vjp=vjp)


def piecewise_constant(prim: Primitive) -> None:
    """A zero derivative almost everywhere (floor, sign ...): zero tangent and cotangent,
    as in JAX."""
    operands = ("x",) if prim.name != "floor_divide" else ("x", "y")
    prim.def_rules(
        jvp=jvp_template(operands, **{o: "ad.zeros_tangent(out)" for o in operands}),
        vjp=vjp_template(operands, "\n".join(f"{o}_bar = ad.zeros_cotangent({o})"
                                             for o in operands)))


def linear(prim: Primitive, apply: str, transpose: str) -> None:
    """A primitive linear in its operand ``x``: its tangent is `apply` (the primitive with
    its params) of the tangent, its cotangent `transpose` of ``out_bar``; ``{t}`` is the
    value each maps."""
    prim.def_rules(jvp=jvp_template(("x",), x=apply.format(t="x_dot")),
                   vjp=vjp_template(("x",), f"x_bar = {transpose.format(t='out_bar')}"))


def rules(prim: Primitive, *, jvp: object, vjp: object) -> None:
    prim.def_rules(jvp=jvp, vjp=vjp)


# --- elementwise unary (derivative from x or from the result `out`) -----------------------
elementwise(ew.exp, x="{g} * out")
elementwise(ew.log, x="{g} / x")
elementwise(ew.log1p, x="{g} / (x + 1)")
elementwise(ew.expm1, x="{g} * (out + 1)")
elementwise(ew.sqrt, x="{g} / (2 * out)")
elementwise(ew.rsqrt, x="{g} * (-0.5) * out / x")
elementwise(ew.cbrt, x="{g} / (3 * lax.integer_pow(out, 2))")
elementwise(ew.sin, x="{g} * jnp.cos(x)")
elementwise(ew.cos, x="-({g} * jnp.sin(x))")
elementwise(ew.tan, x="{g} * (1 + jnp.square(out))")
elementwise(ew.tanh, x="{g} * (1 - jnp.square(out))")
elementwise(ew.arctan, x="{g} / (1 + jnp.square(x))")
elementwise(ew.logistic, x="{g} * out * (1 - out)")
elementwise(ew.negative, x="-{g}")
# JAX: +1 at 0; of a complex x, the real part of {g} conj(x) / |x| (0 at 0).
rules(ew.abs_, jvp=jvp_template(("x",), x="ad.abs_tangent(x_dot, x)"),
      vjp=vjp_template(("x",), "x_bar = ad.abs_cotangent(out_bar, x)"))
for _prim in (ew.floor, ew.ceil, ew.round_, ew.sign, ew.floor_divide):
    piecewise_constant(_prim)

# --- elementwise binary (broadcasting) ------------------------------------------------------
elementwise(ew.add, x="{g}", y="{g}")
elementwise(ew.subtract, x="{g}", y="-{g}")
elementwise(ew.multiply, x="{g} * y", y="{g} * x")
elementwise(ew.true_divide, x="{g} / y", y="-{g} * x / jnp.square(y)")
# remainder = x - y * floor(x / y) (what jnp.remainder's jvp gives too, through lax.rem)
elementwise(ew.remainder, x="{g}", y="-{g} * jnp.floor(x / y)")
# x ** y: d/dx = y x**(y-1) (0 where y == 0), d/dy = log(x) x**y (0 where x == 0), as JAX.
elementwise(ew.power, x="{g} * jnp.where(y == 0, 0.0, y * jnp.power(x, y - 1))",
            y="{g} * out * jnp.log(jnp.where(x == 0, 1.0, x))")
# Ties split the derivative 0.5/0.5 between the operands, as in JAX.
elementwise(ew.maximum, x="{g} * ad.balanced_eq(x, out, y)", y="{g} * ad.balanced_eq(y, out, x)")
elementwise(ew.minimum, x="{g} * ad.balanced_eq(x, out, y)", y="{g} * ad.balanced_eq(y, out, x)")
elementwise(ew.arctan2, x="{g} * y / (jnp.square(x) + jnp.square(y))",
            y="-{g} * x / (jnp.square(x) + jnp.square(y))")

# --- complex parts (linear over the reals; JAX's transposes, no conjugation) ----------------
linear(ew.real, "lax.real({t})", "lax.complex({t}, jnp.zeros_like({t}))")
linear(ew.imag, "lax.imag({t})", "lax.complex(jnp.zeros_like({t}), -{t})")
linear(ew.conj, "lax.conj({t})", "lax.conj({t})")
rules(ew.complex_,
      jvp=jvp_template(("x", "y"), x="lax.complex(x_dot, jnp.zeros_like(x_dot))",
                       y="lax.complex(jnp.zeros_like(y_dot), y_dot)"),
      vjp=vjp_template(("x", "y"), """
x_bar = ad.unbroadcast_like(lax.real(out_bar), x)
y_bar = ad.unbroadcast_like(-lax.imag(out_bar), y)
"""))

# --- conversions, select, integer_pow -------------------------------------------------------
rules(conv.convert_element_type,
      jvp=jvp_template(("x",), x="ad.convert_tangent(x_dot, out)"),
      vjp=vjp_template(("x",), "x_bar = ad.convert_cotangent(out_bar, out, x)"))
elementwise(conv.integer_pow, x="{g} * ad.integer_pow_derivative(x, y)")
# The predicate is boolean: never differentiated.
rules(conv.select,
      jvp=jvp_template(("pred", "x", "y"), x="jnp.where(pred, x_dot, 0.0)",
                       y="jnp.where(pred, 0.0, y_dot)"),
      vjp=vjp_template(("pred", "x", "y"), """
x_bar = ad.unbroadcast_like(jnp.where(pred, out_bar, 0.0), x)
y_bar = ad.unbroadcast_like(jnp.where(pred, 0.0, out_bar), y)
"""))

# --- shape (linear) -------------------------------------------------------------------------
linear(conv.optimization_barrier, "lax.optimization_barrier({t})",
       "lax.optimization_barrier({t})")
linear(sp.reshape, "jnp.reshape({t}, new_sizes)", "jnp.reshape({t}, jnp.shape(x))")
linear(sp.broadcast_to, "jnp.broadcast_to({t}, shape)", "ad.unbroadcast_like({t}, x)")
linear(sp.transpose, "jnp.transpose({t}, permutation)",
       "jnp.transpose({t}, ad.inverse_permutation(permutation))")
linear(sp.rev, "ad.rev({t}, dimensions)", "ad.rev({t}, dimensions)")
linear(sp.slice_, "ad.slice_tangent({t}, start_indices, limit_indices, strides)",
       "ad.unslice({t}, jnp.shape(x), start_indices, limit_indices, strides)")
rules(sp.concatenate,
      jvp=jvp_template(("*xs",), xs="ad.concatenate_tangents(xs_dot, xs, axis)"),
      vjp=vjp_template(("*xs",), "xs_bar = ad.split_concatenated(out_bar, xs, axis)"))
rules(sp.pad,
      jvp=jvp_template(("x", "value"), x="ad.pad_tangent(x_dot, None, low, high, interior)",
                       value="ad.pad_value_tangent(value_dot, x, low, high, interior)"),
      vjp=vjp_template(("x", "value"), """
x_bar = ad.unpad(out_bar, low, high, interior)
value_bar = ad.pad_value_cotangent(out_bar, low, high, interior, value)
"""))

# --- reductions and scans -------------------------------------------------------------------
linear(red_p.reduce_sum, "ad.reduce_sum_tangent({t}, axes)",
       "ad.expand_reduced({t}, jnp.shape(x), axes)")
linear(red_p.cumsum, "ad.cumsum({t}, axis, reverse)", "ad.cumsum({t}, axis, not reverse)")
rules(red_p.reduce_prod,
      jvp=jvp_template(("x",), x="ad.prod_tangent(x_dot, x, out, axes)"),
      vjp=vjp_template(("x",), "x_bar = ad.prod_cotangent(out_bar, x, axes)"))
# Ties share the derivative equally (JAX's chooser rule).
for _prim in (red_p.reduce_max, red_p.reduce_min):
    rules(_prim, jvp=jvp_template(("x",), x="ad.chooser_tangent(x_dot, x, out, axes)"),
          vjp=vjp_template(("x",), "x_bar = ad.chooser_cotangent(out_bar, x, out, axes)"))
rules(red_p.cumprod,
      jvp=jvp_template(("x",), x="ad.cumprod_tangent(x_dot, x, axis, reverse)"),
      vjp=vjp_template(("x",), "x_bar = ad.cumprod_cotangent(out_bar, x, out, axis, reverse)"))
for _prim in (red_p.cummax, red_p.cummin):
    rules(_prim,
          jvp=jvp_template(("x",),
                           x="ad.cumulative_chooser_tangent(x_dot, x, out, axis, reverse)"),
          vjp=vjp_template(("x",), """
x_bar = ad.cumulative_chooser_cotangent(out_bar, x, out, axis, reverse)
"""))

# --- dot_general (bilinear) -----------------------------------------------------------------
# Tangents are computed in the output's dtype (which a preferred_element_type param sets,
# when given). Cotangents contract out_bar with the other operand, transposed back to the
# operand's layout (JAX's _dot_general_transpose_lhs/rhs), cast to the operand's dtype
# (which also undoes a preferred_element_type).
rules(dot_p.dot_general,
      jvp=jvp_template(("lhs", "rhs"),
                       lhs="ad.dot_general_tangent(lhs_dot, rhs, dimension_numbers, out)",
                       rhs="ad.dot_general_tangent(lhs, rhs_dot, dimension_numbers, out)"),
      vjp=vjp_template(("lhs", "rhs"), """
lhs_bar = ad.dot_transpose_lhs(out_bar, lhs, rhs, dimension_numbers)
rhs_bar = ad.dot_transpose_rhs(out_bar, lhs, rhs, dimension_numbers)
"""))

# --- indexing (index operands are never differentiated) -------------------------------------
rules(idx_p.dynamic_slice,
      jvp=jvp_template(("operand", "*starts"),
                       operand="ad.dynamic_slice_tangent(operand_dot, starts, slice_sizes)"),
      vjp=vjp_template(("operand", "*starts"), """
operand_bar = ad.dynamic_slice_cotangent(out_bar, operand, starts)
"""))
rules(idx_p.dynamic_update_slice,
      jvp=jvp_template(
          ("operand", "update", "*starts"),
          operand="ad.dynamic_update_slice_tangent(operand_dot, jnp.zeros_like(update), starts)",
          update="ad.dynamic_update_slice_tangent(jnp.zeros_like(operand), update_dot, starts)"),
      vjp=vjp_template(("operand", "update", "*starts"), """
operand_bar = ad.dynamic_update_slice_operand_cotangent(out_bar, update, starts)
update_bar = ad.dynamic_update_slice_update_cotangent(out_bar, update, starts)
"""))
rules(idx_p.gather,
      jvp=jvp_template(("operand", "indices"), operand="ad.gather_tangent(operand_dot, indices)"),
      vjp=vjp_template(("operand", "indices"), """
operand_bar = ad.gather_cotangent(out_bar, operand, indices)
"""))
# set: overwritten positions lose the operand's derivative, the updates that won bring
# theirs; add: both pass through; multiply: product rule (exact with zero updates);
# min/max: ties share equally.
rules(idx_p.scatter,
      jvp=jvp_template(
          ("operand", "indices", "updates"),
          operand="ad.scatter_operand_tangent(operand_dot, operand, indices, updates, out, mode)",
          updates="ad.scatter_updates_tangent(updates_dot, operand, indices, updates, out, mode)"),
      vjp=vjp_template(("operand", "indices", "updates"), """
operand_bar = ad.scatter_operand_cotangent(out_bar, operand, indices, updates, out, mode)
updates_bar = ad.scatter_updates_cotangent(out_bar, operand, indices, updates, out, mode)
"""))

# --- sort -----------------------------------------------------------------------------------
# The tangent is put in the order the sort put x (stable: tied elements keep their order,
# reversed when descending -- JAX's rule); the cotangent is moved back.
rules(sort_p.sort,
      jvp=jvp_template(("x",), x="ad.sorted_tangent(x_dot, x, dimension, descending)"),
      vjp=vjp_template(("x",), "x_bar = ad.unsorted_cotangent(out_bar, x, dimension, descending)"))

# --- windowed reductions (primitives/windows.py; helpers in transforms/ad/windows.py) --------
# A window sum is linear: its transpose sums windows of the spread-out cotangent (JAX's
# rule). Max/min pooling route the derivative to each window's first max/min, JAX's
# select_and_gather_add (tangent) and select_and_scatter_add (cotangent), which are each
# other's transposes and have zero derivative in the operand they select by.
from transpiler.primitives import windows as win_p  # noqa: E402

_WINDOW = "window_dimensions, window_strides, padding, base_dilation, window_dilation"
linear(win_p.reduce_window_sum, f"ad.reduce_window_sum({{t}}, {_WINDOW})",
       f"ad.window_sum_transpose({{t}}, x, {_WINDOW})")
rules(win_p.reduce_window_prod,
      jvp=jvp_template(("x",), x=f"ad.window_prod_tangent(x_dot, x, {_WINDOW})"),
      vjp=vjp_template(("x",), f"x_bar = ad.window_prod_cotangent(out_bar, x, {_WINDOW})"))
for _kind, _prim in (("max", win_p.reduce_window_max), ("min", win_p.reduce_window_min)):
    rules(_prim,
          jvp=jvp_template(("x",), x=f"ad.select_and_gather_add(x_dot, x, {_kind!r}, {_WINDOW})"),
          vjp=vjp_template(("x",), f"""
x_bar = ad.select_and_scatter_add(out_bar, x, {_kind!r}, {_WINDOW})
"""))
rules(win_p.select_and_gather_add,
      jvp=jvp_template(("tangents", "operand"),
                       tangents=f"ad.select_and_gather_add(tangents_dot, operand, kind, {_WINDOW})",
                       operand="ad.zeros_tangent(out)"),
      vjp=vjp_template(("tangents", "operand"), f"""
tangents_bar = ad.select_and_scatter_add(out_bar, operand, kind, {_WINDOW})
operand_bar = ad.zeros_cotangent(operand)
"""))
rules(win_p.select_and_scatter_add,
      jvp=jvp_template(("source", "operand"),
                       source=f"ad.select_and_scatter_add(source_dot, operand, kind, {_WINDOW})",
                       operand="ad.zeros_tangent(out)"),
      vjp=vjp_template(("source", "operand"), f"""
source_bar = ad.select_and_gather_add(out_bar, operand, kind, {_WINDOW})
operand_bar = ad.zeros_cotangent(operand)
"""))

# --- conv_general_dilated (bilinear; helpers in transforms/ad/convolution.py) ---------------
# The tangent convolves one operand's tangent with the other operand; each cotangent is a
# convolution too (JAX's _conv_general_dilated_transpose_lhs/rhs), so every order works.
from transpiler.primitives import convolution as conv_p  # noqa: E402

_CONV = ("window_strides, padding, lhs_dilation, rhs_dilation, dimension_numbers, "
         "feature_group_count, batch_group_count")
rules(conv_p.conv_general_dilated,
      jvp=jvp_template(("lhs", "rhs"), lhs=f"ad.conv_tangent(lhs_dot, rhs, out, {_CONV})",
                       rhs=f"ad.conv_tangent(lhs, rhs_dot, out, {_CONV})"),
      vjp=vjp_template(("lhs", "rhs"), f"""
lhs_bar = ad.conv_lhs_cotangent(out_bar, lhs, rhs, {_CONV})
rhs_bar = ad.conv_rhs_cotangent(out_bar, lhs, rhs, {_CONV})
"""))
