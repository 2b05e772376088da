"""Cases for `conv_general_dilated` (lax.conv_general_dilated, its wrappers and
jnp.convolve/correlate), checked against `loop_conv`: the convolution's definition
evaluated one output element at a time, with no windows, einsum or padding arrays."""

from __future__ import annotations

import itertools
from typing import Any, Optional, Sequence

import numpy as np

import transpiler.numpy as jnp
from transpiler import lax
from tests.cases import Case, bools, floats, ints


def _specs(ndim: int, dimension_numbers: Any) -> tuple[tuple[int, ...], ...]:
    """Dimension positions of three layout strings, worked out here (not by the library)."""
    if dimension_numbers is None:
        return (tuple(range(ndim)),) * 3
    if isinstance(dimension_numbers, lax.ConvDimensionNumbers):
        return tuple(tuple(s) for s in dimension_numbers)
    lhs, rhs, out = dimension_numbers
    spatial = [c for c in rhs if c not in "OI"]
    return ((lhs.index("N"), lhs.index("C"), *[lhs.index(c) for c in spatial]),
            (rhs.index("O"), rhs.index("I"), *[rhs.index(c) for c in spatial]),
            (out.index("N"), out.index("C"), *[out.index(c) for c in spatial]))


def same_pads(sizes: Sequence[int], windows: Sequence[int], strides: Sequence[int],
              lower: bool = False) -> list[tuple[int, int]]:
    pads = []
    for n, k, s in zip(sizes, windows, strides):
        total = max((-(-n // s) - 1) * s + k - n, 0)
        pads.append((total - total // 2, total // 2) if lower else (total // 2, total - total // 2))
    return pads


def loop_conv(lhs: np.ndarray, rhs: np.ndarray, window_strides: Sequence[int], padding: Any,
              lhs_dilation: Optional[Sequence[int]] = None,
              rhs_dilation: Optional[Sequence[int]] = None, dimension_numbers: Any = None,
              feature_group_count: int = 1, batch_group_count: int = 1,
              dtype: Any = None) -> np.ndarray:
    """XLA's convolution by its definition, in float64 (or complex128), cast to `dtype`
    (default: the lhs dtype)."""
    lspec, rspec, ospec = _specs(lhs.ndim, dimension_numbers)
    rank = lhs.ndim - 2
    ld = tuple(lhs_dilation or (1,) * rank)
    rd = tuple(rhs_dilation or (1,) * rank)
    wide = np.complex128 if np.iscomplexobj(lhs) else np.float64
    x = np.transpose(lhs, lspec).astype(wide)
    w = np.transpose(rhs, rspec).astype(wide)
    n_all, c_all = x.shape[:2]
    o_all, i_per = w.shape[:2]
    kernel = w.shape[2:]
    if isinstance(padding, str):
        sizes = x.shape[2:]
        windows = [(k - 1) * d + 1 for k, d in zip(kernel, rd)]
        padding = ([(0, 0)] * rank if padding == "VALID" else
                   same_pads(sizes, windows, window_strides, padding == "SAME_LOWER"))
    out_spatial = []
    for size, k, s, d_l, d_r, (lo, hi) in zip(x.shape[2:], kernel, window_strides, ld, rd,
                                             padding):
        extent = (size - 1) * d_l + 1 + lo + hi
        window = (k - 1) * d_r + 1
        out_spatial.append(max(0, (extent - window) // s + 1) if extent >= window else 0)
    g_f, g_b = feature_group_count, batch_group_count
    n_out = n_all // g_b
    out = np.zeros((n_out, o_all, *out_spatial), wide)
    for n, o in itertools.product(range(n_out), range(o_all)):
        group_f = o // (o_all // g_f)
        group_b = o // (o_all // g_b)
        batch = group_b * n_out + n
        for pos in itertools.product(*(range(m) for m in out_spatial)):
            total = 0
            for i in range(i_per):
                feature = group_f * i_per + i
                for k in itertools.product(*(range(m) for m in kernel)):
                    where = []
                    for p, kk, s, d_l, d_r, (lo, _), size in zip(
                            pos, k, window_strides, ld, rd, padding, x.shape[2:]):
                        spot = p * s + kk * d_r - lo  # in the dilated lhs
                        if spot % d_l or not 0 <= spot // d_l < size:
                            break
                        where.append(spot // d_l)
                    else:
                        total += x[(batch, feature, *where)] * w[(o, i, *k)]
            out[(n, o, *pos)] = total
    out = np.transpose(out, np.argsort(ospec))
    target = np.dtype(dtype or lhs.dtype)
    return (out != 0) if target == np.bool_ else out.astype(target)


def conv_case(lhs: np.ndarray, rhs: np.ndarray, *params: Any, name: str = "",
              dtype: Any = None, rtol: float = 1e-5, atol: float = 1e-5, **kwargs: Any) -> Case:
    """A case of lax.conv_general_dilated against `loop_conv`."""
    def fn(a: Any, b: Any) -> Any:
        return lax.conv_general_dilated(a, b, *params, **kwargs)

    def ref(a: Any, b: Any) -> Any:
        keywords = {k: v for k, v in kwargs.items() if k != "preferred_element_type"}
        return loop_conv(a, b, *params, dtype=dtype, **keywords)

    return Case("conv_general_dilated", fn, (lhs, rhs), ref, rtol=rtol, atol=atol, name=name)


def _np_convolve(mode: str) -> Any:
    return lambda a, v: np.convolve(a, v, mode).astype(np.result_type(a, v, np.float32))


CASES = [
    conv_case(floats(2, 3, 7), floats(4, 3, 3, seed=1), (1,), "VALID", name="1d valid"),
    conv_case(floats(2, 3, 7), floats(4, 3, 3, seed=1), (2,), [(2, -1)], (2,), (2,),
              name="1d strides, negative padding, both dilations"),
    conv_case(floats(2, 5, 6, 4), floats(3, 2, 2, 6, seed=2), (2, 1), "SAME", None, (1, 2),
              ("NHWC", "HWIO", "NCHW"), 2, name="2d NHWC groups"),
    conv_case(floats(2, 6, 5, 4), floats(6, 1, 3, 2, seed=3), (1, 1), "SAME_LOWER",
              feature_group_count=6, name="2d depthwise SAME_LOWER"),
    conv_case(floats(4, 3, 5, 4), floats(6, 3, 3, 2, seed=4), (1, 2), [(0, 1), (1, 0)],
              (2, 1), batch_group_count=2, name="2d batch groups, lhs dilation"),
    conv_case(floats(1, 2, 4, 3, 4), floats(2, 2, 2, 1, 3, seed=5), (1, 2, 1),
              [(1, 0), (0, 0), (1, 1)], None, (2, 1, 1), name="3d"),
    conv_case(ints(1, 2, 6), ints(3, 2, 2, seed=6), (1,), "SAME", name="int32"),
    conv_case(ints(1, 2, 6, dtype=np.int8), ints(3, 2, 2, dtype=np.int8, seed=6), (1,), "SAME",
              preferred_element_type=np.int32, dtype=np.int32, name="int8 -> int32"),
    conv_case(bools(1, 2, 6), bools(3, 2, 2, seed=7), (1,), "VALID", name="bool"),
    conv_case(floats(1, 2, 6, dtype=np.float16), floats(3, 2, 2, dtype=np.float16, seed=8),
              (1,), "SAME", rtol=1e-2, atol=1e-2, name="float16"),
    conv_case(floats(1, 2, 6) + 1j * floats(1, 2, 6, seed=9),
              floats(3, 2, 2, seed=10) - 1j * floats(3, 2, 2, seed=11), (1,), "SAME",
              name="complex64"),
    # the wrappers
    Case("conv_general_dilated", lambda a, b: lax.conv(a, b, (1, 1), "SAME"),
         (floats(1, 2, 4, 4), floats(2, 2, 3, 3, seed=12)),
         lambda a, b: loop_conv(a, b, (1, 1), "SAME"), rtol=1e-5, atol=1e-5, name="lax.conv"),
    Case("conv_general_dilated", lambda a, b: lax.conv_transpose(a, b, (2,), "SAME"),
         (floats(1, 4, 2), floats(3, 2, 3, seed=13)),
         lambda a, b: loop_conv(a, b, (1,), [(2, 1)], (2,), None, ("NHC", "HIO", "NHC")),
         rtol=1e-5, atol=1e-5, name="lax.conv_transpose"),
    Case("conv_general_dilated", lambda a, v: jnp.convolve(a, v), (floats(6), floats(3, seed=14)),
         _np_convolve("full"), name="jnp.convolve"),
    Case("conv_general_dilated", lambda a, v: jnp.correlate(a, v, "same"),
         (floats(3, seed=15), floats(5, seed=16)),
         lambda a, v: np.correlate(a, v, "same"), name="jnp.correlate"),
]
