"""Derivatives of the windowed reductions (primitives/windows.py), as the templates declared
with them call them: ``ad.window_sum_transpose(out_bar, x, <params>)``.

All of it binds primitives, so it is itself differentiable: second derivatives of max
pooling go through ``select_and_gather_add``/``select_and_scatter_add``, which are each
other's transposes; those of products of windows through slices and pads.

``<params>`` are the window params in their order, `WINDOW_PARAMS`: window_dimensions,
window_strides, padding, base_dilation, window_dilation.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from transpiler.primitives import reductions as red_p
from transpiler.primitives import shape as sp
from transpiler.primitives import windows as win_p
from transpiler.primitives.core import abstractify

Pairs = Sequence[tuple[int, int]]


def reduce_window_sum(t: Any,
                      window_dimensions: Sequence[int], window_strides: Sequence[int],
                      padding: Pairs, base_dilation: Sequence[int],
                      window_dilation: Sequence[int]) -> Any:
    """The sum of each window of `t` (the tangent of a window sum)."""
    return win_p.reduce_window_sum(
        t, window_dimensions=window_dimensions, window_strides=window_strides,
        padding=padding, base_dilation=base_dilation, window_dilation=window_dilation)


def window_sum_transpose(g: Any, x: Any, window_dimensions: Sequence[int],
                         window_strides: Sequence[int], padding: Pairs,
                         base_dilation: Sequence[int], window_dilation: Sequence[int]) -> Any:
    """reduce_window_sum's adjoint (JAX's ``_reduce_window_sum_transpose_rule``): `g`
    spread out by the strides and padded by the window less the padding, then summed over
    windows taken every `base_dilation` elements."""
    shape = abstractify(x).shape
    g_aval = abstractify(g)
    low, high = [], []
    for n, w, s, (lo, _), b, d, o in zip(shape, window_dimensions, window_strides, padding,
                                         base_dilation, window_dilation, g_aval.shape):
        before = win_p.dilate(w, d) - lo - 1
        low.append(before)
        high.append(win_p.dilate(n, b) + win_p.dilate(w, d) - 1 - win_p.dilate(o, s) - before)
    spread = sp.pad(g, np.zeros((), g_aval.dtype), low=tuple(low), high=tuple(high),
                    interior=tuple(s - 1 for s in window_strides))
    ones = (1,) * len(shape)
    return win_p.reduce_window_sum(spread, window_dimensions=tuple(window_dimensions),
                                   window_strides=tuple(base_dilation),
                                   padding=((0, 0),) * len(shape), base_dilation=ones,
                                   window_dilation=tuple(window_dilation))


def select_and_gather_add(t: Any, operand: Any, kind: str,
                          window_dimensions: Sequence[int], window_strides: Sequence[int],
                          padding: Pairs, base_dilation: Sequence[int],
                          window_dilation: Sequence[int]) -> Any:
    """Per window, `t` where `operand` has its first max (min): max pooling's tangent."""
    return win_p.select_and_gather_add(
        t, operand, kind=kind, window_dimensions=window_dimensions, window_strides=window_strides,
        padding=padding, base_dilation=base_dilation, window_dilation=window_dilation)


def select_and_scatter_add(g: Any, operand: Any, kind: str,
                           window_dimensions: Sequence[int], window_strides: Sequence[int],
                           padding: Pairs, base_dilation: Sequence[int],
                           window_dilation: Sequence[int]) -> Any:
    """Each window's `g` added where `operand` has its first max (min): max pooling's
    cotangent."""
    return win_p.select_and_scatter_add(
        g, operand, kind=kind, window_dimensions=window_dimensions, window_strides=window_strides,
        padding=padding, base_dilation=base_dilation, window_dilation=window_dilation)


# --- products of windows: through the windows' elements, laid out as a last axis ----------

def patches(x: Any, fill: Any,
            window_dimensions: Sequence[int], window_strides: Sequence[int],
            padding: Pairs, base_dilation: Sequence[int],
            window_dilation: Sequence[int]) -> Any:
    """``out_shape + (window size,)``: the elements of every window (`fill` where none)."""
    aval = abstractify(x)
    out_shape = win_p.check_window("reduce_window", aval, window_dimensions, window_strides,
                                   padding, base_dilation, window_dilation)
    spread = sp.pad(x, np.asarray(fill, aval.dtype), low=tuple(lo for lo, _ in padding),
                    high=tuple(hi for _, hi in padding),
                    interior=tuple(b - 1 for b in base_dilation))
    strides = tuple(window_strides)
    pieces = []
    for start in win_p.window_starts(window_dimensions, window_dilation):
        limit = tuple(a + win_p.dilate(o, s) for a, o, s in zip(start, out_shape, strides))
        piece = sp.slice_(spread, start_indices=start, limit_indices=limit, strides=strides)
        pieces.append(sp.reshape(piece, new_sizes=(*out_shape, 1)))
    return sp.concatenate(*pieces, axis=len(out_shape))


def unpatches(p_bar: Any, x: Any,
              window_dimensions: Sequence[int], window_strides: Sequence[int],
              padding: Pairs, base_dilation: Sequence[int],
              window_dilation: Sequence[int]) -> Any:
    """`patches`' adjoint: each window element's value added back where it came from."""
    shape = abstractify(x).shape
    p_aval = abstractify(p_bar)
    out_shape = p_aval.shape[:-1]
    zero = np.zeros((), p_aval.dtype)
    spread = win_p.spread_shape(shape, padding, base_dilation)
    strides = tuple(window_strides)
    rank = len(shape)
    total = None
    for k, start in enumerate(win_p.window_starts(window_dimensions, window_dilation)):
        piece = sp.slice_(p_bar, start_indices=(0,) * rank + (k,),
                          limit_indices=(*out_shape, k + 1), strides=None)
        limit = tuple(a + win_p.dilate(o, s) for a, o, s in zip(start, out_shape, strides))
        placed = sp.pad(sp.reshape(piece, new_sizes=tuple(out_shape)), zero, low=start,
                        high=tuple(n - b for n, b in zip(spread, limit)),
                        interior=tuple(s - 1 for s in strides))
        total = placed if total is None else total + placed
    return sp.slice_(total, start_indices=tuple(lo for lo, _ in padding),
                     limit_indices=tuple(lo + win_p.dilate(n, b) for n, (lo, _), b in
                                         zip(shape, padding, base_dilation)),
                     strides=tuple(base_dilation))


def _others_product(values: Any) -> Any:
    """Along the last axis, the product of every element but each one (no division, so
    exact with zeros): exclusive products from both sides."""
    aval = abstractify(values)
    rank = aval.ndim
    one = np.ones((), aval.dtype)
    edges = (0,) * (rank - 1)
    before = sp.pad(values, one, low=edges + (1,), high=edges + (-1,), interior=(0,) * rank)
    after = sp.pad(values, one, low=edges + (-1,), high=edges + (1,), interior=(0,) * rank)
    return (red_p.cumprod(before, axis=rank - 1, reverse=False)
            * red_p.cumprod(after, axis=rank - 1, reverse=True))


def window_prod_tangent(t: Any, x: Any,
                        window_dimensions: Sequence[int], window_strides: Sequence[int],
                        padding: Pairs, base_dilation: Sequence[int],
                        window_dilation: Sequence[int]) -> Any:
    """reduce_window_prod's tangent: ``sum_i t_i prod_{j != i} x_j`` per window."""
    others = _others_product(patches(x, 1, window_dimensions, window_strides, padding,
                                     base_dilation, window_dilation))
    terms = patches(t, 0, window_dimensions, window_strides, padding, base_dilation,
                    window_dilation) * others
    return red_p.reduce_sum(terms, axes=(abstractify(terms).ndim - 1,))


def window_prod_cotangent(g: Any, x: Any,
                          window_dimensions: Sequence[int], window_strides: Sequence[int],
                          padding: Pairs, base_dilation: Sequence[int],
                          window_dilation: Sequence[int]) -> Any:
    """reduce_window_prod's adjoint: `g` times the product of the window's other elements,
    summed back where each element came from."""
    others = _others_product(patches(x, 1, window_dimensions, window_strides, padding,
                                     base_dilation, window_dilation))
    g_aval = abstractify(g)
    spread = sp.broadcast_to(sp.reshape(g, new_sizes=(*g_aval.shape, 1)),
                             shape=abstractify(others).shape)
    return unpatches(spread * others, x, window_dimensions, window_strides, padding,
                     base_dilation, window_dilation)
