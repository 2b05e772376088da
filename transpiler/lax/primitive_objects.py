"""JAX's primitive objects (``lax.add_p``, ``lax.dot_general_p`` ...): the `Primitive` that
carries each operation here, under JAX's name, for code that calls ``prim.bind(*args,
**params)`` or compares primitives.

Only operations that are one primitive here are listed; a ``bind`` takes this library's
parameters (``reduce_sum_p.bind(x, axes=(0,))`` as in JAX, but ``convert_element_type_p``
takes ``dtype=``, ``concatenate_p`` ``axis=`` and ``argmax_p`` ``axis=``, and
``optimization_barrier_p`` one operand). JAX's control-flow primitives (``cond_p``,
``while_p``, ``scan_p``) and the operations written as composites of other primitives
here (``rem``, ``round``, ``clamp``, ``select_n``, ``exp2``, ``square``, ``erf``,
``broadcast_in_dim``, the shifts right, ``acos`` ...) have no object and are not listed;
nor are ``gather_p``/``scatter_p``: the ``gather`` and ``scatter`` primitives here are
simpler index operations (no dimension numbers) under which ``lax.gather``/``scatter`` are
written, not XLA's general ones.
"""

from __future__ import annotations

from transpiler.primitives.core import REGISTRY, Primitive


def _primitive(name: str) -> Primitive:
    return REGISTRY[name]


# elementwise arithmetic and comparisons
abs_p = _primitive("abs")
add_p = _primitive("add")
sub_p = _primitive("subtract")
mul_p = _primitive("multiply")
div_p = _primitive("true_divide")
neg_p = _primitive("negative")
sign_p = _primitive("sign")
max_p = _primitive("maximum")
min_p = _primitive("minimum")
pow_p = _primitive("power")
eq_p = _primitive("equal")
ne_p = _primitive("not_equal")
lt_p = _primitive("less")
le_p = _primitive("less_equal")
gt_p = _primitive("greater")
ge_p = _primitive("greater_equal")
is_finite_p = _primitive("isfinite")
floor_p = _primitive("floor")
ceil_p = _primitive("ceil")
# bitwise
and_p = _primitive("bitwise_and")
or_p = _primitive("bitwise_or")
xor_p = _primitive("bitwise_xor")
not_p = _primitive("invert")
shift_left_p = _primitive("left_shift")
# transcendental
exp_p = _primitive("exp")
expm1_p = _primitive("expm1")
log_p = _primitive("log")
log1p_p = _primitive("log1p")
sqrt_p = _primitive("sqrt")
rsqrt_p = _primitive("rsqrt")
cbrt_p = _primitive("cbrt")
logistic_p = _primitive("logistic")
sin_p = _primitive("sin")
cos_p = _primitive("cos")
tan_p = _primitive("tan")
tanh_p = _primitive("tanh")
atan_p = _primitive("arctan")
atan2_p = _primitive("arctan2")
# complex numbers
complex_p = _primitive("complex")
conj_p = _primitive("conj")
real_p = _primitive("real")
imag_p = _primitive("imag")
# special functions
lgamma_p = _primitive("lgamma")
digamma_p = _primitive("digamma")
polygamma_p = _primitive("polygamma")
zeta_p = _primitive("zeta")
igamma_p = _primitive("igamma")
igammac_p = _primitive("igammac")
igamma_grad_a_p = _primitive("igamma_grad_a")
bessel_i0e_p = _primitive("bessel_i0e")
bessel_i1e_p = _primitive("bessel_i1e")
regularized_incomplete_beta_p = _primitive("regularized_incomplete_beta")
# conversions
convert_element_type_p = _primitive("convert_element_type")
bitcast_convert_type_p = _primitive("bitcast_convert_type")
iota_p = _primitive("iota")
stop_gradient_p = _primitive("stop_gradient")
optimization_barrier_p = _primitive("optimization_barrier")
# reductions
reduce_sum_p = _primitive("reduce_sum")
reduce_prod_p = _primitive("reduce_prod")
reduce_max_p = _primitive("reduce_max")
reduce_min_p = _primitive("reduce_min")
reduce_and_p = _primitive("reduce_and")
reduce_or_p = _primitive("reduce_or")
argmax_p = _primitive("argmax")
argmin_p = _primitive("argmin")
cumsum_p = _primitive("cumsum")
cumprod_p = _primitive("cumprod")
cummax_p = _primitive("cummax")
cummin_p = _primitive("cummin")
# shapes and indexing
reshape_p = _primitive("reshape")
transpose_p = _primitive("transpose")
rev_p = _primitive("rev")
pad_p = _primitive("pad")
concatenate_p = _primitive("concatenate")
slice_p = _primitive("slice")
dynamic_slice_p = _primitive("dynamic_slice")
dynamic_update_slice_p = _primitive("dynamic_update_slice")
# products, convolutions, windows, sorting, FFT
dot_general_p = _primitive("dot_general")
conv_general_dilated_p = _primitive("conv_general_dilated")
reduce_window_sum_p = _primitive("reduce_window_sum")
reduce_window_max_p = _primitive("reduce_window_max")
reduce_window_min_p = _primitive("reduce_window_min")
select_and_scatter_add_p = _primitive("select_and_scatter_add")
select_and_gather_add_p = _primitive("select_and_gather_add")
sort_p = _primitive("sort")
fft_p = _primitive("fft")

__all__ = [name for name in list(globals()) if name.endswith("_p")]
