"""Cases for the windowed reductions (transpiler/primitives/windows.py) through
``lax.reduce_window``, and the select primitives of max pooling's derivatives: strides,
SAME/VALID/explicit padding, base and window dilation; float32, float16, int32, uint8,
bool, complex64; ties and NaN. References are explicit loops over windows (`loop_window`,
`loop_select`), independent of the NumPy implementation."""

import itertools

import numpy as np

from tests.cases import Case, bools, floats, ints
from transpiler import lax
from transpiler.primitives import reductions as red_p
from transpiler.primitives import windows as win_p

x = floats(5, 7)
x3 = floats(2, 4, 5, seed=1)
h = floats(4, 6, dtype=np.float16, seed=2)
i = ints(5, 6, seed=3)
u = ints(4, 6, dtype=np.uint8, low=0, high=250, seed=4)
b = bools(4, 5, seed=5)
c = (floats(3, 5, seed=6) + 1j * floats(3, 5, seed=7)).astype(np.complex64)
near_one = floats(4, 6, low=0.5, high=1.5, seed=8)
ties = np.array([[1, 3, 3, 0, 2], [3, 3, 1, 3, 0], [0, 2, 2, 2, 1]], np.float32)
nan = np.array([[1.0, np.nan, 5.0, 2.0], [4.0, 2.0, np.nan, -1.0], [0.0, 3.0, 1.0, 1.0]],
               np.float32)

IDENTITY = {"sum": 0.0, "prod": 1.0, "max": -np.inf, "min": np.inf}
COMPUTATION = {"sum": lax.add, "prod": lax.mul, "max": lax.max, "min": lax.min}
UFUNC = {"sum": np.add, "prod": np.multiply, "max": np.maximum, "min": np.minimum}

# window options: (window_dimensions, strides, padding, base_dilation, window_dilation)
OPTIONS = {
    "valid": ((2, 3), (1, 1), "VALID", None, None),
    "strided same": ((3, 2), (2, 3), "SAME", None, None),
    "explicit pad": ((2, 2), (1, 2), ((1, 2), (0, 1)), None, None),
    "base dilation": ((3, 2), (1, 1), ((1, 0), (2, 1)), (2, 1), None),
    "window dilation": ((2, 2), (2, 1), ((0, 1), (1, 1)), None, (2, 3)),
    "all": ((2, 2), (2, 3), ((1, 2), (0, 1)), (1, 2), (2, 1)),
    "same dilated": ((3, 2), (1, 2), "SAME", (2, 1), (2, 2)),
}


def params_of(shape, option):
    """The primitive's params for an option, as `lax.reduce_window` computes them."""
    window, strides, padding, base, dilation = option
    ones = (1,) * len(shape)
    dilated = tuple(win_p.dilate(w, d) for w, d in zip(window, dilation or ones))
    pads = tuple(lax.padtype_to_pads(shape, dilated, strides, padding)) \
        if isinstance(padding, str) else padding
    return {"window_dimensions": window, "window_strides": strides, "padding": pads,
            "base_dilation": base or ones, "window_dilation": dilation or ones}


def _members(shape, params):
    """Per output index, the operand indices its window covers, in window order."""
    out_shape = win_p.check_window("loop", win_p.ShapedArray(tuple(shape), np.dtype("f4")),
                                   **params)
    for index in itertools.product(*(range(o) for o in out_shape)):
        found = []
        for offset in itertools.product(*(range(w) for w in params["window_dimensions"])):
            position = []
            for o, k, s, (lo, _), bd, wd, n in zip(
                    index, offset, params["window_strides"], params["padding"],
                    params["base_dilation"], params["window_dilation"], shape):
                at = o * s + k * wd - lo
                position.append(at // bd if at % bd == 0 and 0 <= at // bd < n else None)
            found.append(None if None in position else tuple(position))
        yield index, found
    return out_shape


def loop_window(a, kind, params):
    """`kind` over each window, one element at a time (in float64 for floats)."""
    a = np.asarray(a)
    out_shape = win_p.check_window("loop", win_p.ShapedArray(a.shape, a.dtype), **params)
    wide = np.complex128 if a.dtype.kind == "c" else np.float64 if a.dtype.kind == "f" else a.dtype
    fill = IDENTITY[kind] if a.dtype.kind in "fc" else \
        {"sum": 0, "prod": 1, "max": np.iinfo(a.dtype).min if a.dtype != bool else False,
         "min": np.iinfo(a.dtype).max if a.dtype != bool else True}[kind]
    out = np.full(out_shape, fill, wide)
    for index, found in _members(a.shape, params):
        for position in found:
            if position is not None:
                out[index] = UFUNC[kind](out[index], a[position])
    return out.astype(a.dtype)


def loop_select(values, operand, kind, params, scatter):
    """select_and_scatter_add / select_and_gather_add by a loop: the first max (min)."""
    operand = np.asarray(operand)
    out_shape = win_p.check_window("loop", win_p.ShapedArray(operand.shape, operand.dtype),
                                   **params)
    out = np.zeros(operand.shape if scatter else out_shape, np.asarray(values).dtype)
    better = (lambda v, w: v > w or (np.isnan(v) and not np.isnan(w))) if kind == "max" else \
        (lambda v, w: v < w or (np.isnan(v) and not np.isnan(w)))
    for index, found in _members(operand.shape, params):
        chosen = None
        for position in found:
            if position is not None and (chosen is None or better(operand[position],
                                                                  operand[chosen])):
                chosen = position
        if chosen is None:
            continue
        if scatter:
            out[chosen] += values[index]
        else:
            out[index] = values[chosen]
    return out


def window_case(kind, a, option, name, **tolerances):
    def fn(v):
        window, strides, padding, base, dilation = OPTIONS[option]
        dtype = np.dtype(v.dtype)
        init = IDENTITY[kind] if dtype.kind in "fc" else dtype.type(red_p.identity(kind, dtype))
        return lax.reduce_window(v, init, COMPUTATION[kind], window, strides,
                                 padding, base, dilation)
    return Case(f"reduce_window_{kind}", fn, (a,),
                lambda v: loop_window(v, kind, params_of(np.shape(v), OPTIONS[option])),
                name=f"{option} {name}", **tolerances)


def select_case(prim, kind, a, option, scatter):
    params = params_of(a.shape, OPTIONS[option])
    out_shape = win_p.check_window("case", win_p.ShapedArray(a.shape, a.dtype), **params)
    values = floats(*(out_shape if scatter else a.shape), seed=11)
    return Case(prim.name, lambda v, op: prim(v, op, kind=kind, **params), (values, a),
                lambda v, op: loop_select(v, op, kind, params, scatter),
                name=f"{kind} {option}")


CASES = [window_case(kind, x, option, "f32") for kind in ("sum", "max", "min")
         for option in OPTIONS]
CASES += [window_case("prod", near_one, option, "f32") for option in OPTIONS]
CASES += [
    Case("reduce_window_sum", lambda v: lax.reduce_window(v, 0.0, lax.add, (1, 2, 2), (1, 2, 1),
                                                          "SAME"),
         (x3,), lambda v: loop_window(v, "sum", params_of(v.shape, ((1, 2, 2), (1, 2, 1),
                                                                    "SAME", None, None))),
         name="rank 3"),
    window_case("sum", h, "strided same", "f16", rtol=2e-2, atol=2e-2),
    window_case("max", h, "base dilation", "f16"),
    window_case("sum", i, "all", "i32"),
    window_case("max", i, "window dilation", "i32"),
    window_case("min", i, "explicit pad", "i32"),
    window_case("prod", ints(4, 5, low=-2, high=3, seed=9), "valid", "i32"),
    window_case("sum", u, "strided same", "u8 (wraps)"),
    window_case("max", u, "all", "u8"),
    window_case("min", u, "explicit pad", "u8"),
    window_case("max", b, "strided same", "bool"),
    window_case("min", b, "base dilation", "bool"),
    window_case("sum", c, "explicit pad", "c64"),
    window_case("prod", c * np.complex64(0.5), "valid", "c64"),
    window_case("max", ties, "strided same", "ties"),
    window_case("max", nan, "valid", "NaN"),
    window_case("min", nan, "explicit pad", "NaN"),
    Case("reduce_window_sum", lambda v: lax.reduce_window(v, 1.5, lax.add, (2, 2), (1, 1),
                                                          "SAME"),
         (x,), lambda v: loop_window(v, "sum", params_of(v.shape, (
             (2, 2), (1, 1), "SAME", None, None))) + np.float32(1.5), name="init value"),
    Case("reduce_window_max", lambda v: lax.reduce_window(v, 0.0, lax.max, (3, 3), (2, 2),
                                                          "SAME"),
         (x,), lambda v: np.maximum(loop_window(v, "max", params_of(v.shape, (
             (3, 3), (2, 2), "SAME", None, None))), 0), name="relu-like init"),
]
CASES += [select_case(win_p.select_and_scatter_add, kind, a, option, True)
          for kind, a, option in (("max", x, "valid"), ("max", ties, "strided same"),
                                  ("min", x, "all"), ("max", nan, "explicit pad"),
                                  ("max", x, "window dilation"), ("min", x, "base dilation"))]
CASES += [select_case(win_p.select_and_gather_add, kind, a, option, False)
          for kind, a, option in (("max", x, "valid"), ("max", ties, "strided same"),
                                  ("min", x, "all"), ("min", nan, "explicit pad"),
                                  ("max", x, "base dilation"))]
