"""``conv_general_dilated``: XLA's convolution, with JAX's params, shapes and dtypes.

The params are those of ``jax.lax.conv_general_dilated`` in canonical form:
``window_strides``, ``padding`` (explicit ``(low, high)`` pairs, possibly negative),
``lhs_dilation`` and ``rhs_dilation`` (one int per spatial dimension),
``dimension_numbers`` (three tuples: lhs ``(batch, feature, spatial...)``, rhs ``(out
feature, in feature, spatial...)``, out ``(batch, feature, spatial...)`` -- the positions
of those dimensions in each array), ``feature_group_count``, ``batch_group_count`` and
``preferred_element_type``. Spatial dimension ``i`` of the three arrays is matched through
the specs, in the rhs's order.

In canonical layout (lhs ``N, C, S...``, rhs ``O, I, K...``) with ``G`` feature groups,
``out[n, o, s] = sum over i, k of lhs~[n, g I + i, s * stride + k * rhs_dilation] *
rhs[o, i, k]`` where ``g = o // (O / G)`` and ``lhs~`` is lhs dilated by ``lhs_dilation``
(zeros between elements) and padded by ``padding``; with ``B`` batch groups the lhs batch
splits as ``(B, N / B)`` (group major), group ``b`` meeting output features
``b O / B ... (b + 1) O / B - 1``.

Eagerly: the dilated, padded lhs is cut into its windows (one strided slice per kernel
offset) and contracted with the kernel by one ``einsum`` per call. Lowered: one
``stablehlo.convolution`` in channels-last layouts (four real ones for complex operands;
`_conv_lower`, `_channels_last_convolution`).
"""

from __future__ import annotations

import itertools
import math
from typing import Any, NamedTuple, Optional, Sequence

import numpy as np
from iree.compiler import ir

from transpiler import dtypes
from transpiler.errors import located
from transpiler.lowering.builder import LoweringContext, attr, i64_array, tensor_type
from transpiler.primitives import conversions as cv
from transpiler.primitives import shape as sp
from transpiler.primitives.core import ShapedArray, abstractify, define, dtype_error, shape_error
from transpiler.primitives.jvp_template import jvp_template
from transpiler.primitives.vjp_template import vjp_template

Pairs = tuple[tuple[int, int], ...]
Specs = tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]


class ConvDimensionNumbers(NamedTuple):
    """Where the batch, feature and spatial dimensions are: ``lhs_spec`` is ``(batch
    dimension, feature dimension, spatial dimensions...)``, ``rhs_spec`` ``(out feature
    dimension, in feature dimension, spatial dimensions...)``, ``out_spec`` as lhs_spec."""

    lhs_spec: Sequence[int]
    rhs_spec: Sequence[int]
    out_spec: Sequence[int]


# --- params: dimension numbers and padding ---------------------------------------------------

def conv_dimension_numbers(lhs_shape: Sequence[int], rhs_shape: Sequence[int],
                           dimension_numbers: Any) -> ConvDimensionNumbers:
    """``lax.conv_dimension_numbers``: `dimension_numbers` (None, three layout strings such
    as ``('NHWC', 'HWIO', 'NHWC')``, or a `ConvDimensionNumbers`) as a
    `ConvDimensionNumbers` of int tuples. None is ``('NC...', 'OI...', 'NC...')``."""
    if isinstance(dimension_numbers, ConvDimensionNumbers):
        return ConvDimensionNumbers(*(tuple(int(d) for d in spec)
                                      for spec in dimension_numbers))
    if len(lhs_shape) != len(rhs_shape):
        raise located(TypeError, f"convolution requires lhs and rhs ndim to be equal, got "
                      f"{len(lhs_shape)} and {len(rhs_shape)} (shapes {tuple(lhs_shape)} and "
                      f"{tuple(rhs_shape)})")
    if dimension_numbers is None:
        iota = tuple(range(len(lhs_shape)))
        return ConvDimensionNumbers(iota, iota, iota)
    if not isinstance(dimension_numbers, (list, tuple)):
        raise located(TypeError, "convolution dimension_numbers must be a tuple/list of "
                      f"three strings, a ConvDimensionNumbers or None, got "
                      f"{type(dimension_numbers).__name__}")
    if len(dimension_numbers) != 3:
        raise located(TypeError, "convolution dimension_numbers list/tuple must be length 3, "
                      f"got {len(dimension_numbers)}")
    if not all(isinstance(spec, str) for spec in dimension_numbers):
        raise located(TypeError, "convolution dimension_numbers elements must be strings, got "
                      f"{tuple(type(spec).__name__ for spec in dimension_numbers)}",
                      "e.g. ('NHWC', 'HWIO', 'NHWC'), or a ConvDimensionNumbers of ints")
    for i, spec in enumerate(dimension_numbers):
        if len(spec) != len(lhs_shape):
            raise located(TypeError, f"convolution dimension_numbers[{i}] must have len equal "
                          f"to the ndim of lhs and rhs, got {len(spec)} ({spec!r}) for lhs and "
                          f"rhs shapes {tuple(lhs_shape)} and {tuple(rhs_shape)}")
    return ConvDimensionNumbers(*conv_general_permutations(tuple(dimension_numbers)))


def conv_general_permutations(specs: Sequence[str]) -> Specs:
    """``lax.conv_general_permutations``: the dimension positions named by three layout
    strings (JAX's rules: 'N' and 'C' in lhs and out, 'O' and 'I' in rhs, the same
    spatial letters in all three, ordered as in rhs)."""
    lhs, rhs, out = specs
    letters = (("N", "C"), ("O", "I"), ("N", "C"))
    for i, (spec, (a, b)) in enumerate(zip(specs, letters)):
        if not spec.count(a) == spec.count(b) == 1:
            raise located(TypeError, f"convolution dimension_numbers[{i}] must contain the "
                          f"characters '{a}' and '{b}' exactly once, got {spec!r}")
        if len(spec) != len(set(spec)):
            raise located(TypeError, f"convolution dimension_numbers[{i}] cannot have "
                          f"duplicate characters, got {spec!r}")
    spatial = [set(spec) - set(pair) for spec, pair in zip(specs, letters)]
    if not spatial[0] == spatial[1] == spatial[2]:
        raise located(TypeError, "convolution dimension_numbers elements must each have the "
                      f"same set of spatial characters, got {specs}")

    def positions(spec: str, pair: tuple[str, str]) -> tuple[int, ...]:
        others = [i for i, c in enumerate(spec) if c not in pair]
        others.sort(key=lambda i: rhs.index(spec[i]))
        return (spec.index(pair[0]), spec.index(pair[1]), *others)

    return (positions(lhs, letters[0]), positions(rhs, letters[1]), positions(out, letters[2]))


def dilate(size: int, dilation: int) -> int:
    """The length of `size` elements with ``dilation - 1`` zeros between neighbours."""
    return 0 if size == 0 else 1 + dilation * (size - 1)


def padtype_to_pads(in_shape: Sequence[int], window_shape: Sequence[int],
                    window_strides: Sequence[int], padding: str) -> list[tuple[int, int]]:
    """The explicit ``(low, high)`` pairs of ``'SAME'``, ``'SAME_LOWER'`` or ``'VALID'``
    (JAX's: SAME keeps ``ceil(in / stride)`` outputs, the odd element of padding going
    high; SAME_LOWER sends it low)."""
    kind = padding.upper() if isinstance(padding, str) else padding
    if kind == "VALID":
        return [(0, 0)] * len(in_shape)
    if kind not in ("SAME", "SAME_LOWER"):
        raise located(ValueError, f"Unrecognized padding type: expected 'VALID', 'SAME', or "
                      f"'SAME_LOWER', got {padding!r}", "or pass explicit (low, high) pairs")
    pads = []
    for size, window, stride in zip(in_shape, window_shape, window_strides):
        total = max((-(-size // stride) - 1) * stride + window - size, 0)
        small, large = total // 2, total - total // 2
        pads.append((small, large) if kind == "SAME" else (large, small))
    return pads


def static_ints(value: Any, name: str, rank: int, positive: bool = True) -> tuple[int, ...]:
    """A static sequence of `rank` ints (a clear error for anything else)."""
    try:
        values = tuple(int(v) for v in value)
        exact = all(float(v) == int(v) for v in value)
    except (TypeError, ValueError):
        values, exact = (), False
    if not exact or len(values) != rank:
        raise located(TypeError, f"conv_general_dilated: {name} must be a sequence of {rank} "
                      f"ints (one per spatial dimension), got {value!r}",
                      "strides, dilations and padding are static Python values")
    if positive and any(v < 1 for v in values):
        raise shape_error(f"conv_general_dilated: {name} must be positive, got {values}")
    return values


def normalize_padding(padding: Any, rank: int) -> Pairs:
    """Explicit padding as a tuple of `rank` ``(low, high)`` int pairs."""
    try:
        pairs = tuple((int(lo), int(hi)) for lo, hi in padding)
    except (TypeError, ValueError):
        pairs = ()
    if len(pairs) != rank:
        raise located(ValueError, "padding argument to conv_general_dilated should be a "
                      "string ('SAME', 'SAME_LOWER', 'VALID') or a sequence of "
                      f"{rank} (low, high) pairs, got {padding!r}")
    return pairs


# --- abstract evaluation ---------------------------------------------------------------------

def _check_specs(lhs: ShapedArray, rhs: ShapedArray, specs: Specs) -> None:
    if lhs.ndim != rhs.ndim:
        raise shape_error(f"conv_general_dilated: lhs and rhs must have the same number of "
                          f"dimensions, got lhs {lhs.str_short()} and rhs {rhs.str_short()}")
    if lhs.ndim < 2:
        raise shape_error(f"conv_general_dilated: operands need a batch and a feature "
                          f"dimension (rank >= 2), got lhs {lhs.str_short()}")
    for name, spec in zip(("lhs_spec", "rhs_spec", "out_spec"), specs):
        if sorted(spec) != list(range(lhs.ndim)):
            raise shape_error(f"conv_general_dilated: dimension_numbers.{name} {tuple(spec)} "
                              f"is not a permutation of the {lhs.ndim} dimensions")


def conv_output_shape(lhs: ShapedArray, rhs: ShapedArray, *, window_strides: Sequence[int],
                      padding: Pairs, lhs_dilation: Sequence[int], rhs_dilation: Sequence[int],
                      dimension_numbers: Specs, feature_group_count: int,
                      batch_group_count: int) -> tuple[int, ...]:
    """The output shape, after JAX's checks (each error names the sizes involved)."""
    _check_specs(lhs, rhs, dimension_numbers)
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    rank = lhs.ndim - 2
    for name, value in (("window_strides", window_strides), ("lhs_dilation", lhs_dilation),
                        ("rhs_dilation", rhs_dilation), ("padding", padding)):
        if len(value) != rank:
            raise shape_error(f"conv_general_dilated: {name} has {len(value)} entries for "
                              f"{rank} spatial dimensions (lhs {lhs.str_short()})")
    where = f"lhs {lhs.str_short()}, rhs {rhs.str_short()}"
    for name, count in (("feature_group_count", feature_group_count),
                        ("batch_group_count", batch_group_count)):
        if count < 1:
            raise shape_error(f"conv_general_dilated: {name} must be a positive integer, "
                              f"got {count}")
    if feature_group_count > 1 and batch_group_count > 1:
        raise shape_error("conv_general_dilated: at most one of batch_group_count and "
                          f"feature_group_count may be > 1, got batch_group_count="
                          f"{batch_group_count} and feature_group_count={feature_group_count}")
    batch, features = lhs.shape[lhs_spec[0]], lhs.shape[lhs_spec[1]]
    out_features, in_features = rhs.shape[rhs_spec[0]], rhs.shape[rhs_spec[1]]
    if features % feature_group_count:
        raise shape_error(f"conv_general_dilated: feature_group_count must divide lhs feature "
                          f"dimension size, but {feature_group_count} does not divide "
                          f"{features} ({where})")
    if features // feature_group_count != in_features:
        raise shape_error(
            f"conv_general_dilated: lhs feature dimension size divided by feature_group_count "
            f"must equal the rhs input feature dimension size, but {features} // "
            f"{feature_group_count} != {in_features} ({where})",
            "check dimension_numbers: which rhs dimension is 'I' (in features)")
    for name, count in (("feature_group_count", feature_group_count),
                        ("batch_group_count", batch_group_count)):
        if out_features % count:
            raise shape_error(f"conv_general_dilated: rhs output feature dimension size must "
                              f"be a multiple of {name}, but {out_features} is not a multiple "
                              f"of {count} ({where})")
    if batch % batch_group_count:
        raise shape_error(f"conv_general_dilated: batch_group_count must divide lhs batch "
                          f"dimension size, but {batch_group_count} does not divide {batch} "
                          f"({where})")
    spatial = []
    for i in range(rank):
        size = dilate(lhs.shape[lhs_spec[i + 2]], lhs_dilation[i])
        padded = size + padding[i][0] + padding[i][1]
        if padded < 0:
            raise shape_error(f"conv_general_dilated: negative padding {padding[i]} is larger "
                              f"than spatial dimension {i} of the lhs (size {size}; {where})")
        window = dilate(rhs.shape[rhs_spec[i + 2]], rhs_dilation[i])
        spatial.append(max(0, (padded - window) // window_strides[i] + 1)
                       if padded >= window else 0)
    canonical = (batch // batch_group_count, out_features, *spatial)
    shape = [0] * lhs.ndim
    for axis, size in zip(out_spec, canonical):
        shape[axis] = size
    return tuple(shape)


def conv_dtypes(lhs: ShapedArray, rhs: ShapedArray,
                preferred_element_type: Optional[np.dtype]) -> tuple[np.dtype, np.dtype]:
    """(result dtype, dtype the sums run in). The operands must agree (JAX's rule; the
    public functions promote first); a preferred type must be as wide and of the same kind
    (integers may also ask for a float)."""
    if lhs.dtype != rhs.dtype:
        raise dtype_error(f"lax.conv_general_dilated requires arguments to have the same "
                          f"dtypes, got {lhs.dtype}, {rhs.dtype}",
                          "convert one with lax.convert_element_type (jnp.convolve promotes)")
    dtype = lhs.dtype
    result = dtype if preferred_element_type is None else preferred_element_type
    if preferred_element_type is not None:
        preferred = preferred_element_type
        int_to_float = dtype.kind in "iu" and dtypes.is_float(preferred)
        same_kind = all((dtype.kind in kinds) == (preferred.kind in kinds)
                        for kinds in ("iu", "f", "c")) and dtype != dtypes.bool_
        if not int_to_float and not same_kind:
            raise dtype_error(f"conv_general_dilated: preferred_element_type {preferred} is "
                              f"incompatible with {dtype} operands", "the compatible "
                              "combinations are (integral, integral), (integral, floating), "
                              "(floating, floating), (complex, complex)")
        if not int_to_float and dtype.kind == "i" and preferred.kind != "i":
            raise dtype_error("conv_general_dilated: preferred_element_type must have the "
                              f"same signedness as the operands, got {preferred} for {dtype}")
        if preferred.itemsize < dtype.itemsize:
            raise dtype_error("conv_general_dilated: preferred_element_type must not be "
                              f"narrower than the operands, got {preferred} for {dtype}")
    if result in (dtypes.float16, dtypes.bfloat16):
        return result, dtypes.float32
    if result == dtypes.bool_:
        return result, dtypes.int32
    return result, result


def _conv_eval(lhs: ShapedArray, rhs: ShapedArray, *,
               preferred_element_type: Optional[np.dtype] = None, **params: Any) -> ShapedArray:
    result, _ = conv_dtypes(lhs, rhs, preferred_element_type)
    return ShapedArray(conv_output_shape(lhs, rhs, **params), result, False)


# --- eager: windows and one einsum -----------------------------------------------------------

def _spread(x: np.ndarray, padding: Pairs, dilation: Sequence[int]) -> np.ndarray:
    """Canonical `x` (``N, C, S...``) dilated along S and padded (negative pads crop)."""
    spatial = x.shape[2:]
    spread = np.zeros(x.shape[:2] + tuple(dilate(s, d) for s, d in zip(spatial, dilation)),
                      x.dtype)
    every: tuple[Any, ...] = (Ellipsis, *(slice(None, None, d) for d in dilation))
    spread[every] = x
    widths = [(0, 0), (0, 0)] + [(max(lo, 0), max(hi, 0)) for lo, hi in padding]
    padded = np.pad(spread, widths)
    crop = tuple(slice(max(-lo, 0), padded.shape[i + 2] - max(-hi, 0))
                 for i, (lo, hi) in enumerate(padding))
    return padded[(slice(None), slice(None), *crop)]


def _windows(x: np.ndarray, kernel: Sequence[int], out: Sequence[int],
             strides: Sequence[int], dilation: Sequence[int]) -> np.ndarray:
    """``(N, C, prod(kernel), prod(out))``: element ``[n, c, k, m]`` is the input that
    kernel offset `k` meets at output position `m`."""
    n, c = x.shape[:2]
    m = math.prod(out)
    taps = []
    for offsets in itertools.product(*(range(k) for k in kernel)):
        cut = tuple(slice(o * d, o * d + (size - 1) * s + 1, s) if size else slice(0, 0)
                    for o, d, size, s in zip(offsets, dilation, out, strides))
        taps.append(x[(slice(None), slice(None), *cut)].reshape(n, c, m))
    if not taps:
        return np.zeros((n, c, 0, m), x.dtype)
    return np.stack(taps, axis=2)


def _conv_impl(lhs: np.ndarray, rhs: np.ndarray, *, window_strides: Sequence[int],
               padding: Pairs, lhs_dilation: Sequence[int], rhs_dilation: Sequence[int],
               dimension_numbers: Specs, feature_group_count: int, batch_group_count: int,
               preferred_element_type: Optional[np.dtype] = None) -> np.ndarray:
    lhs_aval = ShapedArray(lhs.shape, lhs.dtype)
    rhs_aval = ShapedArray(rhs.shape, rhs.dtype)
    result, work = conv_dtypes(lhs_aval, rhs_aval, preferred_element_type)
    shape = conv_output_shape(lhs_aval, rhs_aval, window_strides=window_strides,
                              padding=padding, lhs_dilation=lhs_dilation,
                              rhs_dilation=rhs_dilation, dimension_numbers=dimension_numbers,
                              feature_group_count=feature_group_count,
                              batch_group_count=batch_group_count)
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    x = np.transpose(lhs, lhs_spec).astype(work)
    w = np.transpose(rhs, rhs_spec).astype(work)
    out_spatial = tuple(shape[d] for d in out_spec[2:])
    patches = _windows(_spread(x, padding, lhs_dilation), w.shape[2:], out_spatial,
                       window_strides, rhs_dilation)
    n, c, k, m = patches.shape
    o = w.shape[0]
    w = w.reshape(o, w.shape[1], k)
    with np.errstate(all="ignore"):
        if batch_group_count > 1:
            b = batch_group_count
            out = np.einsum("bnckm,bock->nbom", patches.reshape(b, n // b, c, k, m),
                            w.reshape(b, o // b, c, k), optimize=True)
        else:
            g = feature_group_count
            out = np.einsum("ngckm,gock->ngom", patches.reshape(n, g, c // g, k, m),
                            w.reshape(g, o // g, c // g, k), optimize=True)
    canonical = out.reshape(out.shape[0], o, *out_spatial)
    out = np.transpose(canonical, np.argsort(out_spec))
    if result == dtypes.bool_:
        return out != 0
    return out.astype(result)


# --- lowering --------------------------------------------------------------------------------

def _conv_lower(ctx: LoweringContext, lhs: Any, rhs: Any, *, window_strides: Sequence[int],
                padding: Pairs, lhs_dilation: Sequence[int], rhs_dilation: Sequence[int],
                dimension_numbers: Specs, feature_group_count: int, batch_group_count: int,
                preferred_element_type: Optional[np.dtype] = None) -> Any:
    """One ``stablehlo.convolution`` in the compute dtype, in channels-last layouts
    (`_channels_last_convolution`; IREE 3.13 compiled every option -- strides, explicit and
    negative padding, both dilations, feature and batch groups, any layout, 1-D to 3-D --
    to eager's values; tests/test_convolution.py). A complex convolution is four real ones,
    ``(a + ib) * (c + id) = (a*c - b*d) + i(a*d + b*c)``: IREE 3.13 cannot compile a
    complex128 one (it zero-fills the accumulator with an i128 splat), and dot_general's
    complex products are split the same way."""
    lhs_aval, rhs_aval = ctx.avals_in
    out = ctx.aval_out
    result, work = conv_dtypes(lhs_aval, rhs_aval, preferred_element_type)
    lhs = ctx.convert(lhs, lhs_aval, work)
    rhs = ctx.convert(rhs, rhs_aval, work)

    def convolve(x: Any, y: Any, dtype: np.dtype) -> Any:
        return _channels_last_convolution(
            ctx, x, y, dtype, lhs_aval.shape, rhs_aval.shape, out.shape,
            window_strides=window_strides, padding=padding, lhs_dilation=lhs_dilation,
            rhs_dilation=rhs_dilation, dimension_numbers=dimension_numbers,
            feature_group_count=feature_group_count, batch_group_count=batch_group_count)

    if dtypes.is_complex(work):
        part = dtypes.real_dtype(work)
        (a, b) = ctx.complex_parts(lhs, lhs_aval.update(dtype=work))
        (c, d) = ctx.complex_parts(rhs, rhs_aval.update(dtype=work))
        ac, bd, ad, bc = (convolve(x, y, part) for x, y in ((a, c), (b, d), (a, d), (b, c)))
        real = ctx.op("stablehlo.subtract", [ac, bd], ac.type)
        imag = ctx.op("stablehlo.add", [ad, bc], ac.type)
        value = ctx.op("stablehlo.complex", [real, imag], tensor_type(out.shape, work))
    else:
        value = convolve(lhs, rhs, work)
    return ctx.convert(value, out.update(dtype=work), result)


def _channels_last_convolution(ctx: LoweringContext, lhs: Any, rhs: Any, dtype: np.dtype,
                               lhs_shape: Sequence[int], rhs_shape: Sequence[int],
                               out_shape: Sequence[int], *, dimension_numbers: Specs,
                               feature_group_count: int, batch_group_count: int,
                               **params: Any) -> Any:
    """The convolution of operands transposed to ``(N, S..., C)`` and ``(S..., I, O)``,
    its ``(N, S..., O)`` result transposed back to `dimension_numbers`' layout.

    IREE 3.13 vectorizes a convolution only in these layouts: any other (NCHW, the
    ``(O, I)``-swapped kernel of every lhs cotangent, the batch/feature-swapped operands of
    every kernel cotangent) became a scalar loop nest, 5-60x slower (LeNet's training step
    2.0x jax.jit's time before, tests/bench/nets.py). An operand's transpose goes behind an
    optimization barrier, or IREE folds it back into the convolution's indexing. An input
    feature dimension of size 1 (a grayscale image's channel) is padded to 2 with zeros:
    IREE drops the unit dimension and then takes the same slow path (5x at LeNet's first
    convolution). (Padding a single output feature the same way made IREE 3.13 fail to
    compile ``jnp.correlate`` of short vectors.) Lowering to patches times kernel (im2col:
    strided slices and one dot_general) measured as fast or slower than this for LeNet's
    convolutions and their cotangents."""
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    rank = len(lhs_spec) - 2
    lhs_perm = (lhs_spec[0], *lhs_spec[2:], lhs_spec[1])
    rhs_perm = (*rhs_spec[2:], rhs_spec[1], rhs_spec[0])
    out_perm = (out_spec[0], *out_spec[2:], out_spec[1])
    x_shape = [lhs_shape[d] for d in lhs_perm]
    y_shape = [rhs_shape[d] for d in rhs_perm]
    shape = [out_shape[d] for d in out_perm]
    x = _transpose(ctx, lhs, lhs_shape, lhs_perm, dtype, wall=True)
    y = _transpose(ctx, rhs, rhs_shape, rhs_perm, dtype, wall=True)
    if feature_group_count == batch_group_count == 1 and x_shape[-1] == 1:
        x, x_shape = _widen(ctx, x, x_shape, rank + 1, dtype)  # a zero second feature
        y, y_shape = _widen(ctx, y, y_shape, rank, dtype)
    spatial = tuple(range(1, rank + 1))
    canonical = ((0, rank + 1, *spatial), (rank + 1, rank, *range(rank)),
                 (0, rank + 1, *spatial))
    value = ctx.op("stablehlo.convolution", [x, y], tensor_type(shape, dtype), _attributes(
        dimension_numbers=canonical, feature_group_count=feature_group_count,
        batch_group_count=batch_group_count, **params))
    return _transpose(ctx, value, shape, [int(a) for a in np.argsort(out_perm)], dtype)


def _transpose(ctx: LoweringContext, x: Any, shape: Sequence[int], perm: Sequence[int],
               dtype: np.dtype, wall: bool = False) -> Any:
    """`x` transposed to `perm`; with `wall`, behind an optimization barrier. One that
    moves only dimensions of size 1 is a reshape."""
    out = [shape[p] for p in perm]
    if [p for p in perm if shape[p] != 1] == [a for a in range(len(shape)) if shape[a] != 1]:
        return x if list(out) == list(shape) else ctx.reshape(x, dtype, out)
    value = ctx.op("stablehlo.transpose", [x], tensor_type(out, dtype),
                   {"permutation": i64_array(perm)})
    return ctx.barrier(value) if wall else value


def _widen(ctx: LoweringContext, x: Any, shape: Sequence[int], axis: int,
           dtype: np.dtype) -> tuple[Any, list[int]]:
    """`x` with zeros appended along `axis` (of size 1) to size 2: (value, its shape)."""
    high = [int(a == axis) for a in range(len(shape))]
    out = [size + extra for size, extra in zip(shape, high)]
    zero = ctx.constant(0, dtype)
    return ctx.op("stablehlo.pad", [x, zero], tensor_type(out, dtype), {
        "edge_padding_low": i64_array([0] * len(shape)), "edge_padding_high": i64_array(high),
        "interior_padding": i64_array([0] * len(shape))}), out


def _attributes(window_strides: Sequence[int], padding: Pairs, lhs_dilation: Sequence[int],
                rhs_dilation: Sequence[int], dimension_numbers: Specs,
                feature_group_count: int, batch_group_count: int) -> dict[str, Any]:
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    show = lambda dims: "[" + ", ".join(str(d) for d in dims) + "]"  # noqa: E731
    numbers = attr(
        "#stablehlo.conv<raw "
        f"input_batch_dimension = {lhs_spec[0]}, input_feature_dimension = {lhs_spec[1]}, "
        f"input_spatial_dimensions = {show(lhs_spec[2:])}, "
        f"kernel_input_feature_dimension = {rhs_spec[1]}, "
        f"kernel_output_feature_dimension = {rhs_spec[0]}, "
        f"kernel_spatial_dimensions = {show(rhs_spec[2:])}, "
        f"output_batch_dimension = {out_spec[0]}, output_feature_dimension = {out_spec[1]}, "
        f"output_spatial_dimensions = {show(out_spec[2:])}>")
    pads = np.asarray(padding, np.int64).reshape(len(padding), 2)
    return {"dimension_numbers": numbers,
            "window_strides": i64_array(window_strides),
            "padding": ir.DenseElementsAttr.get(pads),
            "lhs_dilation": i64_array(lhs_dilation),
            "rhs_dilation": i64_array(rhs_dilation),
            "feature_group_count": ir.IntegerAttr.get(ir.IntegerType.get_signless(64),
                                                      feature_group_count),
            "batch_group_count": ir.IntegerAttr.get(ir.IntegerType.get_signless(64),
                                                    batch_group_count)}


conv_general_dilated = define("conv_general_dilated", impl=_conv_impl, abstract_eval=_conv_eval,
                              lower=_conv_lower, doc=__doc__ or "")

# --- layout helpers of the derivative and batching rules (JAX's _reshape_axis_into/out_of) --

def reshape_axis_into(src: int, dst: int, x: Any) -> Any:
    """`x` with axis `src` merged into axis `dst` as its major part; `dst` counts the
    axes of `x` without `src`."""
    shape = abstractify(x).shape
    perm = [i for i in range(len(shape)) if i != src]
    perm.insert(dst, src)
    sizes = [shape[i] for i in perm]
    merged = sizes[:dst] + [sizes[dst] * sizes[dst + 1]] + sizes[dst + 2:]
    if perm != sorted(perm):
        x = sp.transpose(x, permutation=tuple(perm))
    return sp.reshape(x, new_sizes=tuple(merged))


def reshape_axis_out_of(src: int, size: int, x: Any) -> Any:
    """`x` with axis `src` split into ``(size, rest)``."""
    shape = list(abstractify(x).shape)
    shape[src:src + 1] = [size, shape[src] // size]
    return sp.reshape(x, new_sizes=tuple(shape))


# --- batching (JAX's rule): a convolution has one batch dimension and one feature dimension
# per operand, so a vmapped axis folds into them and unfolds from the result:
#
# * lhs batched: the vmapped axis joins the lhs batch dimension (major), the result's
#   batch dimension splits back. With batch groups the lhs batch is ``(groups, n)``, so the
#   vmapped axis goes between the two to keep each group's members together.
# * rhs batched: the vmapped axis joins the kernel's output features and splits out of the
#   result's features; with groups it goes inside each group's block of output features.
# * both: the vmapped axis becomes extra feature groups (or, with batch groups, extra batch
#   groups) -- member ``b`` of the lhs meets only member ``b`` of the kernel.
#
# Empty batches are answered with zeros (the folds would build convolutions of size 0).

def _conv_rule(args: Sequence[Any], dims: Sequence[Optional[int]], *,
               dimension_numbers: Any, feature_group_count: int, batch_group_count: int,
               **params: Any) -> tuple[Any, Optional[int]]:
    (lhs, rhs), (lhs_dim, rhs_dim) = args, dims
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    groups = dict(dimension_numbers=dimension_numbers, feature_group_count=feature_group_count,
                  batch_group_count=batch_group_count)
    if lhs_dim is None and rhs_dim is None:
        return conv_general_dilated(lhs, rhs, **groups, **params), None
    lhs_aval, rhs_aval = abstractify(lhs), abstractify(rhs)
    if lhs_dim is not None:
        lhs_dim %= lhs_aval.ndim
    if rhs_dim is not None:
        rhs_dim %= rhs_aval.ndim
    if lhs_dim is not None:
        size = lhs_aval.shape[lhs_dim]
    else:
        assert rhs_dim is not None
        size = rhs_aval.shape[rhs_dim]
    if size == 0:
        return _empty(lhs_aval, rhs_aval, lhs_dim, rhs_dim, groups, params), 0

    if lhs_dim is not None and rhs_dim is not None:
        if batch_group_count > 1:
            new_lhs = reshape_axis_into(lhs_dim, lhs_spec[0], lhs)
            groups["batch_group_count"] = batch_group_count * size
        else:
            new_lhs = reshape_axis_into(lhs_dim, lhs_spec[1], lhs)
            groups["feature_group_count"] = feature_group_count * size
        new_rhs = reshape_axis_into(rhs_dim, rhs_spec[0], rhs)
        out = conv_general_dilated(new_lhs, new_rhs, **groups, **params)
        return reshape_axis_out_of(out_spec[1], size, out), out_spec[1]

    if lhs_dim is not None:
        if batch_group_count == 1:
            new_lhs = reshape_axis_into(lhs_dim, lhs_spec[0], lhs)
        else:  # (groups, n) batch: the vmapped axis goes inside each group
            new_lhs = reshape_axis_out_of(lhs_spec[0] + int(lhs_dim <= lhs_spec[0]),
                                          batch_group_count, lhs)
            new_lhs = reshape_axis_into(lhs_dim + int(lhs_spec[0] < lhs_dim),
                                        lhs_spec[0] + 1, new_lhs)
            new_lhs = reshape_axis_into(lhs_spec[0], lhs_spec[0], new_lhs)
        out = conv_general_dilated(new_lhs, rhs, **groups, **params)
        return reshape_axis_out_of(out_spec[0], size, out), out_spec[0]

    assert rhs_dim is not None
    count = max(feature_group_count, batch_group_count)
    if count == 1:
        new_rhs = reshape_axis_into(rhs_dim, rhs_spec[0], rhs)
        out = conv_general_dilated(lhs, new_rhs, **groups, **params)
        return reshape_axis_out_of(out_spec[1], size, out), out_spec[1]
    # groups stay outermost in the output features: the vmapped axis goes inside them
    new_rhs = reshape_axis_out_of(rhs_spec[0] + int(rhs_dim <= rhs_spec[0]), count, rhs)
    new_rhs = reshape_axis_into(rhs_dim + int(rhs_spec[0] < rhs_dim), rhs_spec[0] + 1, new_rhs)
    new_rhs = reshape_axis_into(rhs_spec[0], rhs_spec[0], new_rhs)
    out = conv_general_dilated(lhs, new_rhs, **groups, **params)
    out = reshape_axis_out_of(out_spec[1], count, out)
    out = reshape_axis_out_of(out_spec[1] + 1, size, out)
    out = reshape_axis_into(out_spec[1], out_spec[1] + 1, out)
    return out, out_spec[1]


def _empty(lhs_aval: Any, rhs_aval: Any, lhs_dim: Optional[int], rhs_dim: Optional[int],
           groups: dict, params: dict) -> Any:
    """Zeros of the batched result's shape, batch axis first, for a batch of size 0."""
    unbatched = [aval.update(shape=tuple(s for i, s in enumerate(aval.shape) if i != d))
                 if d is not None else aval
                 for aval, d in ((lhs_aval, lhs_dim), (rhs_aval, rhs_dim))]
    out = conv_general_dilated.abstract_eval(*unbatched, **groups, **params)
    zero = cv.convert_element_type(np.zeros((), out.dtype), dtype=out.dtype)
    return sp.broadcast_to(zero, shape=(0, *out.shape))


# --- derivatives (bilinear; helpers in transforms/ad/convolution.py): the tangent convolves
# one operand's tangent with the other operand; each cotangent is a convolution too (JAX's
# _conv_general_dilated_transpose_lhs/rhs), so every order works.
_CONV = ("window_strides, padding, lhs_dilation, rhs_dilation, dimension_numbers, "
         "feature_group_count, batch_group_count")
conv_general_dilated.def_rules(
    batch=_conv_rule,
    jvp=jvp_template(("lhs", "rhs"), lhs=f"ad.conv_tangent(lhs_dot, rhs, out, {_CONV})",
                     rhs=f"ad.conv_tangent(lhs, rhs_dot, out, {_CONV})"),
    vjp=vjp_template(("lhs", "rhs"), f"""
lhs_bar = ad.conv_lhs_cotangent(out_bar, lhs, rhs, {_CONV})
rhs_bar = ad.conv_rhs_cotangent(out_bar, lhs, rhs, {_CONV})
"""))


__all__ = ["conv_general_dilated", "ConvDimensionNumbers", "conv_dimension_numbers",
           "conv_general_permutations", "conv_output_shape", "conv_dtypes", "static_ints",
           "padtype_to_pads", "normalize_padding", "dilate", "reshape_axis_into",
           "reshape_axis_out_of"]
