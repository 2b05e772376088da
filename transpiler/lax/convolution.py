"""``lax.conv_general_dilated`` and its convenience forms (``conv``,
``conv_with_general_padding``, ``conv_transpose``, ``conv_general_dilated_patches``) with
JAX 0.10.2's signatures: the arguments are checked and put in canonical form here (layout
strings to dimension positions, padding strings to explicit pairs), then the
``conv_general_dilated`` primitive (primitives/convolution.py) runs."""

from __future__ import annotations

import math
from typing import Any, Optional, Sequence, Union

import numpy as np

from transpiler import dtypes
from transpiler.errors import located
from transpiler.primitives import convolution as conv_p
from transpiler.primitives import dot as dot_p
from transpiler.primitives import shape as sp
from transpiler.primitives.convolution import (ConvDimensionNumbers, conv_dimension_numbers,
                                               conv_general_permutations, dilate)
from transpiler.primitives.core import ShapedArray, abstractify

__all__ = ["ConvDimensionNumbers", "conv_dimension_numbers", "conv_general_dilated", "conv",
           "conv_with_general_padding", "conv_transpose", "conv_general_dilated_patches",
           "conv_general_dilated_local",
           "conv_shape_tuple", "conv_general_shape_tuple", "conv_transpose_shape_tuple",
           "conv_general_permutations"]

Padding = Union[str, Sequence[tuple[int, int]]]


def conv_general_dilated(lhs: Any, rhs: Any, window_strides: Sequence[int], padding: Padding,
                         lhs_dilation: Optional[Sequence[int]] = None,
                         rhs_dilation: Optional[Sequence[int]] = None,
                         dimension_numbers: Any = None, feature_group_count: int = 1,
                         batch_group_count: int = 1, precision: Any = None,
                         preferred_element_type: Any = None) -> Any:
    """``lax.conv_general_dilated``: the general n-D convolution (XLA's Conv).

    `padding` is 'SAME', 'SAME_LOWER', 'VALID' or ``n`` explicit ``(low, high)`` pairs;
    `lhs_dilation` (transposed convolution) and `rhs_dilation` (atrous) put ``d - 1``
    zeros between elements; `dimension_numbers` is None (``'NCH..', 'OIH..', 'NCH..'``),
    three layout strings such as ``('NHWC', 'HWIO', 'NHWC')`` or a `ConvDimensionNumbers`.
    `precision` is accepted for JAX's signature (the CPU computes at full precision)."""
    del precision
    op = "conv_general_dilated"
    lhs_aval, rhs_aval = abstractify(lhs, 0, op), abstractify(rhs, 1, op)
    numbers = conv_dimension_numbers(lhs_aval.shape, rhs_aval.shape, dimension_numbers)
    rank = lhs_aval.ndim - 2
    if rank < 0 or rhs_aval.ndim != lhs_aval.ndim:
        raise located(TypeError, f"{op}: lhs and rhs must both have rank n + 2 (batch, "
                      f"feature and n spatial dimensions), got {lhs_aval.str_short()} and "
                      f"{rhs_aval.str_short()}")
    strides = conv_p.static_ints(window_strides, "window_strides", rank)
    rhs_dil = (1,) * rank if rhs_dilation is None else conv_p.static_ints(rhs_dilation,
                                                                    "rhs_dilation", rank)
    lhs_dil = (1,) * rank if lhs_dilation is None else conv_p.static_ints(lhs_dilation,
                                                                    "lhs_dilation", rank)
    if isinstance(padding, str):
        if any(d != 1 for d in lhs_dil):
            raise located(ValueError, "String padding is not implemented for transposed "
                          "convolution using this op. Please either exactly specify the "
                          "required padding or use conv_transpose.")
        lhs_spec, rhs_spec, _ = numbers
        pads = conv_p.padtype_to_pads(
            [lhs_aval.shape[d] for d in lhs_spec[2:]],
            [dilate(rhs_aval.shape[d], r) for d, r in zip(rhs_spec[2:], rhs_dil)],
            strides, padding)
        padding_pairs = tuple((int(lo), int(hi)) for lo, hi in pads)
    else:
        padding_pairs = conv_p.normalize_padding(padding, rank)
    for name, count in (("feature_group_count", feature_group_count),
                        ("batch_group_count", batch_group_count)):
        if not isinstance(count, (int, np.integer)) or isinstance(count, bool):
            raise located(TypeError, f"{op}: {name} must be a static int, got {count!r}")
    preferred = None if preferred_element_type is None else dtypes.check_supported(
        dtypes.canonicalize(preferred_element_type), "preferred_element_type")
    return conv_p.conv_general_dilated(
        lhs, rhs, window_strides=strides, padding=padding_pairs, lhs_dilation=lhs_dil,
        rhs_dilation=rhs_dil, dimension_numbers=tuple(tuple(spec) for spec in numbers),
        feature_group_count=int(feature_group_count), batch_group_count=int(batch_group_count),
        preferred_element_type=preferred)


def conv(lhs: Any, rhs: Any, window_strides: Sequence[int], padding: str,
         precision: Any = None, preferred_element_type: Any = None) -> Any:
    """``lax.conv``: `conv_general_dilated` in the NCHW / OIHW layout, no dilation."""
    return conv_general_dilated(lhs, rhs, window_strides, padding, precision=precision,
                                preferred_element_type=preferred_element_type)


def conv_with_general_padding(lhs: Any, rhs: Any, window_strides: Sequence[int],
                              padding: Padding, lhs_dilation: Optional[Sequence[int]],
                              rhs_dilation: Optional[Sequence[int]], precision: Any = None,
                              preferred_element_type: Any = None) -> Any:
    """``lax.conv_with_general_padding``: `conv` with explicit padding and dilations."""
    return conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation=lhs_dilation,
                                rhs_dilation=rhs_dilation, precision=precision,
                                preferred_element_type=preferred_element_type)


def _transpose_padding(k: int, s: int, padding: Any) -> tuple[int, int]:
    """(before, after) padding of a transposed convolution's dimension with kernel extent
    `k` and stride `s`, for the forward convolution's `padding` (JAX's
    _conv_transpose_padding)."""
    if padding == "SAME":
        total = k + s - 2
        before = k - 1 if s > k - 1 else -(-total // 2)
    elif padding == "VALID":
        total = k + s - 2 + max(k - s, 0)
        before = k - 1
    elif isinstance(padding, tuple):
        pads = tuple(k - p - 1 for p in padding)
        before, total = pads[0], sum(pads)
    else:
        raise located(ValueError, f"conv_transpose: invalid padding mode {padding!r}",
                      "use 'SAME', 'VALID' or (low, high) pairs")
    return before, total - before


_TRANSPOSE_LAYOUTS = {2: ("NC", "IO", "NC"), 3: ("NHC", "HIO", "NHC"),
                      4: ("NHWC", "HWIO", "NHWC"), 5: ("NHWDC", "HWDIO", "NHWDC")}


def conv_transpose(lhs: Any, rhs: Any, strides: Sequence[int], padding: Padding,
                   rhs_dilation: Optional[Sequence[int]] = None, dimension_numbers: Any = None,
                   transpose_kernel: bool = False, precision: Any = None,
                   preferred_element_type: Any = None,
                   use_consistent_padding: bool = False) -> Any:
    """``lax.conv_transpose``: the fractionally strided convolution (strides become lhs
    dilation). Layouts default to TensorFlow's (NHWC, HWIO); `transpose_kernel` flips the
    kernel's spatial axes and swaps its in/out features (Keras' Conv2DTranspose). With
    'SAME'/'VALID' (or `use_consistent_padding`) `padding` is the forward convolution's;
    explicit pairs are otherwise the transposed convolution's own."""
    op = "conv_transpose"
    lhs_aval, rhs_aval = abstractify(lhs, 0, op), abstractify(rhs, 1, op)
    ndim = lhs_aval.ndim
    if ndim != rhs_aval.ndim or ndim < 2:
        raise located(TypeError, f"{op}: lhs and rhs must have the same rank (>= 2), got "
                      f"{lhs_aval.str_short()} and {rhs_aval.str_short()}")
    if dimension_numbers is None:
        if ndim not in _TRANSPOSE_LAYOUTS:
            raise located(ValueError, f"{op}: no default dimension_numbers for rank {ndim}",
                          "pass dimension_numbers")
        dimension_numbers = _TRANSPOSE_LAYOUTS[ndim]
    numbers = conv_dimension_numbers(lhs_aval.shape, rhs_aval.shape, dimension_numbers)
    rank = ndim - 2
    strides = conv_p.static_ints(strides, "strides", rank)
    rhs_dil = (1,) * rank if rhs_dilation is None else conv_p.static_ints(rhs_dilation,
                                                                    "rhs_dilation", rank)
    kernel = [rhs_aval.shape[d] for d in numbers.rhs_spec[2:]]
    pads: Padding
    if use_consistent_padding or (isinstance(padding, str) and padding in ("SAME", "VALID")):
        per_dim = [padding] * rank if isinstance(padding, str) else [
            tuple(p) for p in padding]
        pads = tuple(_transpose_padding(dilate(k, r), s, p)
                     for k, r, s, p in zip(kernel, rhs_dil, strides, per_dim))
    else:
        pads = padding
    if transpose_kernel:
        out_feature, in_feature = numbers.rhs_spec[0], numbers.rhs_spec[1]
        rhs = sp.rev(rhs, dimensions=tuple(numbers.rhs_spec[2:]))
        perm = list(range(ndim))
        perm[out_feature], perm[in_feature] = in_feature, out_feature
        rhs = sp.transpose(rhs, permutation=tuple(perm))
    return conv_general_dilated(lhs, rhs, (1,) * rank, pads, strides, rhs_dil, numbers,
                                precision=precision,
                                preferred_element_type=preferred_element_type)


def conv_general_dilated_patches(lhs: Any, filter_shape: Sequence[int],
                                 window_strides: Sequence[int], padding: Padding,
                                 lhs_dilation: Optional[Sequence[int]] = None,
                                 rhs_dilation: Optional[Sequence[int]] = None,
                                 dimension_numbers: Any = None, precision: Any = None,
                                 preferred_element_type: Any = None) -> Any:
    """``lax.conv_general_dilated_patches``: the patches a convolution with a
    `filter_shape` kernel would meet, as the output's features (``C * prod(filter_shape)``,
    channel major): a depthwise convolution with an identity kernel, as in JAX."""
    op = "conv_general_dilated_patches"
    aval = abstractify(lhs, 0, op)
    filter_shape = tuple(int(k) for k in filter_shape)
    numbers = conv_dimension_numbers(aval.shape, (1, 1) + filter_shape, dimension_numbers)
    lhs_spec, rhs_spec, _ = numbers
    spatial = math.prod(filter_shape)
    channels = aval.shape[lhs_spec[1]]
    eye = np.broadcast_to(np.eye(spatial, dtype=aval.dtype), (channels, spatial, spatial))
    kernel = np.moveaxis(eye.reshape(channels * spatial, 1, *filter_shape), (0, 1),
                         (rhs_spec[0], rhs_spec[1]))
    return conv_general_dilated(lhs, np.ascontiguousarray(kernel), window_strides, padding,
                                lhs_dilation, rhs_dilation, numbers,
                                feature_group_count=channels, precision=precision,
                                preferred_element_type=preferred_element_type)


def conv_general_dilated_local(lhs: Any, rhs: Any, window_strides: Sequence[int],
                               padding: Padding, filter_shape: Sequence[int],
                               lhs_dilation: Optional[Sequence[int]] = None,
                               rhs_dilation: Optional[Sequence[int]] = None,
                               dimension_numbers: Any = None, precision: Any = None) -> Any:
    """``lax.conv_general_dilated_local``: a locally connected layer, a convolution whose
    kernel is not shared -- `rhs` holds one for each output position: its spatial dims are
    the output's, and its input-feature dim the input's channels times the `filter_shape`
    window, channel major (as `conv_general_dilated_patches` lays the patches out). The
    patches, contracted with it position by position (one ``dot_general`` batched over the
    output's spatial dims)."""
    op = "conv_general_dilated_local"
    aval, kernel = abstractify(lhs, 0, op), abstractify(rhs, 1, op)
    filter_shape = tuple(int(k) for k in filter_shape)
    numbers = conv_dimension_numbers(aval.shape, (1, 1) + filter_shape, dimension_numbers)
    _, rhs_spec, out_spec = numbers
    patches = conv_general_dilated_patches(lhs, filter_shape, window_strides, padding,
                                           lhs_dilation, rhs_dilation, numbers, precision)
    want = patches.shape[out_spec[1]]
    if kernel.ndim != aval.ndim or kernel.shape[rhs_spec[1]] != want or \
            tuple(kernel.shape[d] for d in rhs_spec[2:]) != \
            tuple(patches.shape[d] for d in out_spec[2:]):
        raise located(ValueError, f"{op}: rhs has shape {kernel.shape}; its input-feature "
                      f"dim must be {want} (input channels x filter window) and its spatial "
                      f"dims the output's, {tuple(patches.shape[d] for d in out_spec[2:])}",
                      "one kernel per output position: compute the output shape with "
                      "conv_general_dilated_patches")
    spatial = len(filter_shape)
    out = dot_p.dot_general(patches, rhs, dimension_numbers=dot_p.normalize_dimension_numbers((
        ((out_spec[1],), (rhs_spec[1],)), (tuple(out_spec[2:]), tuple(rhs_spec[2:])))),
        preferred_element_type=None)
    # (spatial..., batch, out features) to the output layout
    order = [0] * (spatial + 2)
    order[out_spec[0]], order[out_spec[1]] = spatial, spatial + 1
    for i, d in enumerate(out_spec[2:]):
        order[d] = i
    return sp.transpose(out, permutation=tuple(order))


# --- shape helpers (JAX's) -------------------------------------------------------------------

def conv_shape_tuple(lhs_shape: Sequence[int], rhs_shape: Sequence[int],
                     strides: Sequence[int], pads: Padding,
                     batch_group_count: int = 1) -> tuple[int, ...]:
    """``lax.conv_shape_tuple``: the output shape of a convolution in canonical layout."""
    rank = len(lhs_shape) - 2
    if isinstance(pads, str):
        pads = conv_p.padtype_to_pads(lhs_shape[2:], rhs_shape[2:], strides, pads)
    return conv_p.conv_output_shape(
        ShapedArray(tuple(lhs_shape), np.dtype(np.float32)),
        ShapedArray(tuple(rhs_shape), np.dtype(np.float32)),
        window_strides=tuple(strides), padding=conv_p.normalize_padding(pads, rank),
        lhs_dilation=(1,) * rank, rhs_dilation=(1,) * rank,
        dimension_numbers=(tuple(range(rank + 2)),) * 3,
        feature_group_count=1, batch_group_count=batch_group_count)


def conv_general_shape_tuple(lhs_shape: Sequence[int], rhs_shape: Sequence[int],
                             window_strides: Sequence[int], padding: Padding,
                             dimension_numbers: tuple[str, str, str]) -> tuple[int, ...]:
    """``lax.conv_general_shape_tuple``: the output shape for layout strings."""
    lhs_perm, rhs_perm, out_perm = conv_general_permutations(dimension_numbers)
    canonical = conv_shape_tuple([lhs_shape[d] for d in lhs_perm],
                                 [rhs_shape[d] for d in rhs_perm], window_strides, padding)
    return tuple(canonical[i] for i in np.argsort(out_perm))


def conv_transpose_shape_tuple(lhs_shape: Sequence[int], rhs_shape: Sequence[int],
                               window_strides: Sequence[int], padding: Padding,
                               dimension_numbers: tuple[str, str, str]) -> tuple[int, ...]:
    """``lax.conv_transpose_shape_tuple``: the output shape of `conv_transpose`."""
    lhs_perm, rhs_perm, out_perm = conv_general_permutations(dimension_numbers)
    lhs_t = [lhs_shape[d] for d in lhs_perm]
    rhs_t = [rhs_shape[d] for d in rhs_perm]
    if isinstance(padding, str):
        padding = [_transpose_padding(k, s, padding) for k, s in zip(rhs_t[2:], window_strides)]
    totals = [sum(p) for p in padding]
    spatial = [(i - 1) * s - k + 2 + t
               for i, k, s, t in zip(lhs_t[2:], rhs_t[2:], window_strides, totals)]
    canonical = (lhs_t[0], rhs_t[0], *spatial)
    return tuple(int(canonical[i]) for i in np.argsort(out_perm))
