"""Derivatives of ``conv_general_dilated`` (JAX's rules): it is bilinear, so a tangent is
the convolution of one operand's tangent with the other operand, and each cotangent is
itself a convolution -- of the output cotangent with the spatially reversed kernel (lhs),
or of the lhs with the output cotangent (rhs) -- so derivatives of every order are
convolutions too.

Written in the canonical ``(batch, feature)`` terms of a matmul ``[m, j] x [j, k] ->
[m, k]`` (spatial dimensions aside): the lhs cotangent is ``[m, k] x [k, j]``, the rhs
cotangent ``[j, m] x [m, k]``. With ``G`` feature groups the lhs cotangent moves the
groups from the kernel's output features to its input features (still feature groups) and
the rhs cotangent becomes a batch-grouped convolution; with batch groups it is the other
way round. Strides of the forward convolution become lhs dilations of the transposed
one and vice versa; the paddings are chosen so the result has the operand's shape.
"""

from __future__ import annotations

from typing import Any, Sequence

from transpiler.primitives import shape as sp
from transpiler.primitives.convolution import (conv_general_dilated, dilate, reshape_axis_into,
                                               reshape_axis_out_of)
from transpiler.primitives.core import abstractify
from transpiler.transforms.ad.shapes import cast_like, zeros_cotangent

Specs = tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]
Pairs = Sequence[tuple[int, int]]


def _swap(spec: Sequence[int]) -> tuple[int, ...]:
    """A spec with its first two entries (batch and feature) exchanged."""
    return (spec[1], spec[0], *spec[2:])


def conv_tangent(lhs: Any, rhs: Any, out: Any, window_strides: Sequence[int], padding: Pairs,
                 lhs_dilation: Sequence[int], rhs_dilation: Sequence[int],
                 dimension_numbers: Specs, feature_group_count: int,
                 batch_group_count: int) -> Any:
    """The convolution of `lhs` and `rhs` (one of them a tangent) in the primal output's
    dtype: a preferred_element_type of the primal is kept without naming it."""
    lhs_aval, rhs_aval = abstractify(lhs), abstractify(rhs)
    if lhs_aval.dtype != rhs_aval.dtype:  # a tangent in another dtype than its primal
        lhs = cast_like(lhs, rhs)
    out_dtype = abstractify(out).dtype
    return conv_general_dilated(
        lhs, rhs, window_strides=tuple(window_strides), padding=tuple(padding),
        lhs_dilation=tuple(lhs_dilation), rhs_dilation=tuple(rhs_dilation),
        dimension_numbers=dimension_numbers, feature_group_count=feature_group_count,
        batch_group_count=batch_group_count,
        preferred_element_type=None if out_dtype == rhs_aval.dtype else out_dtype)


def conv_lhs_cotangent(g: Any, lhs: Any, rhs: Any, window_strides: Sequence[int],
                       padding: Pairs, lhs_dilation: Sequence[int],
                       rhs_dilation: Sequence[int], dimension_numbers: Specs,
                       feature_group_count: int, batch_group_count: int) -> Any:
    """The cotangent of the lhs: `g` convolved with the reversed kernel, input and output
    features swapped (JAX's _conv_general_dilated_transpose_lhs)."""
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    lhs_shape, rhs_shape = abstractify(lhs).shape, abstractify(rhs).shape
    g_shape = abstractify(g).shape
    groups = max(feature_group_count, batch_group_count)
    kernel = rhs
    if groups > 1:  # the groups move from the kernel's out features to its in features
        kernel = reshape_axis_out_of(rhs_spec[0], groups, kernel)
        kernel = reshape_axis_into(rhs_spec[0], rhs_spec[1], kernel)
    kernel = sp.rev(kernel, dimensions=tuple(rhs_spec[2:]))
    pads = _lhs_padding([lhs_shape[d] for d in lhs_spec[2:]],
                        [rhs_shape[d] for d in rhs_spec[2:]], window_strides,
                        [g_shape[d] for d in out_spec[2:]], padding, lhs_dilation, rhs_dilation)
    out = conv_general_dilated(
        g, cast_like(kernel, g), window_strides=tuple(lhs_dilation), padding=pads,
        lhs_dilation=tuple(window_strides), rhs_dilation=tuple(rhs_dilation),
        dimension_numbers=(tuple(out_spec), _swap(rhs_spec), tuple(lhs_spec)),
        feature_group_count=groups, batch_group_count=1, preferred_element_type=None)
    if batch_group_count > 1:  # the groups go back from features to the batch
        out = reshape_axis_out_of(lhs_spec[1], batch_group_count, out)
        out = reshape_axis_into(lhs_spec[1], lhs_spec[0], out)
    return cast_like(out, lhs)


def conv_rhs_cotangent(g: Any, lhs: Any, rhs: Any, window_strides: Sequence[int],
                       padding: Pairs, lhs_dilation: Sequence[int],
                       rhs_dilation: Sequence[int], dimension_numbers: Specs,
                       feature_group_count: int, batch_group_count: int) -> Any:
    """The cotangent of the kernel: the lhs convolved with `g`, batch and feature roles
    swapped (JAX's _conv_general_dilated_transpose_rhs)."""
    g_aval = abstractify(g)
    if g_aval.size == 0:  # an empty output: the kernel met nothing
        return zeros_cotangent(rhs)
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    lhs_shape, rhs_shape = abstractify(lhs).shape, abstractify(rhs).shape
    pads = _rhs_padding([lhs_shape[d] for d in lhs_spec[2:]],
                        [rhs_shape[d] for d in rhs_spec[2:]], window_strides,
                        [g_aval.shape[d] for d in out_spec[2:]], padding, lhs_dilation,
                        rhs_dilation)
    out = conv_general_dilated(
        cast_like(lhs, g), g, window_strides=tuple(rhs_dilation), padding=pads,
        lhs_dilation=tuple(lhs_dilation), rhs_dilation=tuple(window_strides),
        dimension_numbers=(_swap(lhs_spec), _swap(out_spec), _swap(rhs_spec)),
        feature_group_count=batch_group_count, batch_group_count=feature_group_count,
        preferred_element_type=None)
    return cast_like(out, rhs)


def _lhs_padding(in_shape: Sequence[int], window: Sequence[int], strides: Sequence[int],
                 out_shape: Sequence[int], padding: Pairs, lhs_dilation: Sequence[int],
                 rhs_dilation: Sequence[int]) -> tuple[tuple[int, int], ...]:
    pairs = []
    for size, k, s, o, (low, _), ld, rd in zip(in_shape, window, strides, out_shape, padding,
                                               lhs_dilation, rhs_dilation):
        before = dilate(k, rd) - low - 1
        after = dilate(size, ld) + dilate(k, rd) - 1 - dilate(o, s) - before
        pairs.append((before, after))
    return tuple(pairs)


def _rhs_padding(in_shape: Sequence[int], window: Sequence[int], strides: Sequence[int],
                 out_shape: Sequence[int], padding: Pairs, lhs_dilation: Sequence[int],
                 rhs_dilation: Sequence[int]) -> tuple[tuple[int, int], ...]:
    pairs = []
    for size, k, s, o, (low, _), ld, rd in zip(in_shape, window, strides, out_shape, padding,
                                               lhs_dilation, rhs_dilation):
        high = dilate(o, s) - dilate(size, ld) + dilate(k, rd) - low - 1
        pairs.append((low, high))
    return tuple(pairs)
