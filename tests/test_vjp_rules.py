"""Registry-driven checks of the VJP templates (declared with each primitive, transpiler/primitives/).

Every primitive call made by the registry cases (tests/cases/*.py) is recorded by wrapping
`core.bind`; each recorded call with floating operands is then replayed in float64 and its
template's cotangents are compared with central finite differences along random
directions: ``<bar_i, v_i> == <u, (f(x + eps v) - f(x - eps v)) / (2 eps)>``. Points at a
kink (one-sided differences disagree: max ties, floor steps, abs at 0) are skipped.
Extra calls below cover what the cases do not (zeros in products, duplicate and
out-of-bounds scatter indices, negative and interior padding, batched dot_general).
"""

from __future__ import annotations

import importlib
import pkgutil
import zlib
from collections import defaultdict
from typing import Any

import numpy as np
import pytest

import transpiler as tp
from tests import cases as cases_pkg
from transpiler import dtypes
from transpiler.config import config
from transpiler.primitives import REGISTRY, core
from transpiler.primitives.vjp_template import TemplateError, VJPTemplate, vjp_template
from transpiler.transforms.ad.templates import evaluate_vjp

EPS = 1e-6
RTOL = 1e-5
CALLS_PER_PRIMITIVE = 6


# --- recording the registry cases ----------------------------------------------------------

def _plain(value: Any) -> Any:
    return value if isinstance(value, (bool, int, float)) else np.asarray(value)


def _signature(prim: Any, args: tuple, params: dict) -> str:
    shown = [f"{np.asarray(a).dtype}{np.shape(a)}" for a in args]
    return f"{prim.name}({', '.join(shown)}; {sorted(params.items())!r})"


def _record_cases() -> dict[str, list[tuple[tuple, dict]]]:
    """(args, params) of distinct primitive calls made by every registry case, eagerly."""
    calls: dict[str, dict[str, tuple[tuple, dict]]] = defaultdict(dict)
    original = core.bind

    def recording_bind(prim: Any, args: Any, params: dict) -> Any:
        out = original(prim, args, params)
        if not core.trace_stack:
            calls[prim.name].setdefault(_signature(prim, tuple(args), params),
                                        (tuple(_plain(a) for a in args), dict(params)))
        return out

    families = [m.name for m in pkgutil.iter_modules(cases_pkg.__path__)]
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(core, "bind", recording_bind)
        for family in families:
            for case in importlib.import_module(f"tests.cases.{family}").CASES:
                case.fn(*case.args, **case.kwargs)
    def preference(call: tuple[tuple, dict]) -> tuple[bool, int]:  # small float calls first
        floating = any(dtypes.is_float(np.asarray(a).dtype) for a in call[0])
        return not floating, sum(np.size(a) for a in call[0])

    return {name: sorted(found.values(), key=preference)[:CALLS_PER_PRIMITIVE]
            for name, found in calls.items()}


RECORDED = _record_cases()


# --- calls the cases do not make -------------------------------------------------------------

def _x(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).uniform(-2, 2, shape)


_zeros_2d = np.array([[1.5, 0.0, 2.0, -1.0], [0.0, 0.0, 3.0, 2.0], [1.0, 2.0, -3.0, 0.5]])
_zeros_1d = np.array([2.0, 0.0, 3.0, -1.5, 0.0, 4.0, 0.5])
_dup = np.array([[1], [3], [1], [7], [-1], [3]], np.int32)      # duplicates, out of bounds
_nearly_zero_updates = np.where(np.arange(18).reshape(6, 3) == 4, 0.0, _x(6, 3, seed=5))
_dnums_batch = (((2,), (0,)), ((0,), (1,)))

EXTRA: dict[str, list[tuple[tuple, dict]]] = {
    "reduce_prod": [((_zeros_2d,), {"axes": (1,)}), ((_zeros_2d,), {"axes": (0, 1)}),
                    ((_x(2, 3, 4),), {"axes": (0, 2)})],
    "cumprod": [((_zeros_1d,), {"axis": 0, "reverse": False}),
                ((_zeros_1d,), {"axis": 0, "reverse": True}),
                ((_zeros_2d,), {"axis": 1, "reverse": False})],
    "cummax": [((_x(4, 6),), {"axis": 1, "reverse": True}), ((_x(5, 3),), {"axis": 0, "reverse": False})],
    "cummin": [((_x(4, 6),), {"axis": 0, "reverse": True}), ((_x(7),), {"axis": 0, "reverse": False})],
    "cumsum": [((_x(4, 6),), {"axis": 1, "reverse": True})],
    "reduce_max": [((_x(3, 4, 5),), {"axes": (0, 2)})],
    "reduce_min": [((_x(3, 4),), {"axes": (1,)})],
    "pad": [((_x(3, 4), np.float64(0.5)), {"low": (1, -1), "high": (-1, 2), "interior": (1, 2)}),
            ((_x(5,), np.float64(-1.0)), {"low": (-2,), "high": (3,), "interior": (0,)})],
    "slice": [((_x(5, 7),), {"start_indices": (1, 0), "limit_indices": (5, 7), "strides": (2, 3)}),
              ((_x(4, 6),), {"start_indices": (1, 2), "limit_indices": (3, 6), "strides": None})],
    "transpose": [((_x(2, 3, 4),), {"permutation": (2, 0, 1)})],
    "rev": [((_x(3, 4),), {"dimensions": (0, 1)})],
    "dot_general": [((_x(2, 3, 4), _x(4, 2, 5, seed=1)), {"dimension_numbers": _dnums_batch,
                                                           "preferred_element_type": None}),
                    ((_x(3, 4), _x(5, 3, seed=1)), {"dimension_numbers": (((0,), (1,)), ((), ())),
                                                    "preferred_element_type": None})],
    "gather": [((_x(5, 3), np.array([[0], [4], [9], [-3], [4]], np.int32)), {}),
               ((_x(4, 5, 2), np.array([[1, 2], [3, 0]], np.int32)), {})],
    "scatter": [((_x(5, 3), _dup, _x(6, 3, seed=m)), {"mode": mode})
                for m, mode in enumerate(("set", "add", "min", "max"))]
    + [((_x(5, 3), _dup, _nearly_zero_updates), {"mode": "multiply"})],
    "dynamic_slice": [((_x(6, 4), np.int32(5), np.int32(1)), {"slice_sizes": (3, 2)})],
    "dynamic_update_slice": [((_x(6, 4), _x(2, 3, seed=1), np.int32(-1), np.int32(3)), {})],
    "concatenate": [((_x(2, 3), _x(2, 1, seed=1), _x(2, 4, seed=2)), {"axis": 1})],
    "maximum": [((_x(3, 4), _x(4, seed=1)), {})],
    "minimum": [((_x(3, 4), _x(3, 1, seed=1)), {}), ((_x(3), 0.25), {})],
    "rsqrt": [((np.abs(_x(3, 4)) + 0.1,), {})],
    "negative": [((_x(3, 4),), {})],
    "integer_pow": [((_x(3, 4),), {"y": 3}), ((_x(5),), {"y": -2}), ((_x(2),), {"y": 0}),
                    ((_x(2),), {"y": 1})],
    "abs": [((_x(3, 4),), {})],
    "convert_element_type": [((_x(3, 4),), {"dtype": np.dtype(np.int32), "weak_type": False}),
                             ((_x(3),), {"dtype": np.dtype(np.float32), "weak_type": False})],
    "power": [((np.abs(_x(3, 4)) + 0.1, _x(4, seed=1)), {})],
    "remainder": [((_x(3, 4) * 3, np.abs(_x(4, seed=1)) + 0.5), {})],
}


# --- the numerical check ---------------------------------------------------------------------

def _as_float64(value: Any) -> Any:
    """Floats to float64, complex numbers to complex128."""
    if isinstance(value, np.ndarray) and dtypes.is_complex(value.dtype):
        return np.asarray(value, np.complex128)
    if isinstance(value, float) or (isinstance(value, np.ndarray)
                                    and dtypes.is_float(value.dtype)):
        return np.asarray(value, np.float64)
    return value


def _params64(params: dict) -> dict:
    out = {}
    for key, value in params.items():
        is_dtype = isinstance(value, np.dtype) or (isinstance(value, type)
                                                   and issubclass(value, np.generic))
        if is_dtype and dtypes.is_inexact(np.dtype(value)):
            value = np.dtype(np.complex128 if dtypes.is_complex(np.dtype(value)) else np.float64)
        out[key] = value
    return out


def _is_float(value: Any) -> bool:
    """Whether a (float64-replayed) operand carries a derivative: float64 or complex128."""
    return isinstance(value, np.ndarray) and value.dtype in (np.float64, np.complex128)


def random_like(rng: np.random.Generator, x: Any) -> np.ndarray:
    """A random direction (or cotangent) shaped like `x`: complex where `x` is."""
    shape = np.shape(x)
    if np.iscomplexobj(x):
        return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)
    return rng.standard_normal(shape)


def pairing(a: Any, b: Any) -> float:
    """``Re sum(a * b)``: the pairing under which JAX's VJPs are the transposes of its JVPs
    (no conjugation), which for real arrays is the dot product."""
    return float(np.real(np.sum(np.asarray(a) * np.asarray(b))))


def accepts_bfloat16(prim: Any, args: tuple, params: dict) -> bool:
    """Whether `prim` takes this call's floats as bfloat16 (the FFT and eig take only
    float32 and float64, as JAX's do)."""
    return prim.name != "fft" and not prim.name.startswith("eig_")


def carries_derivative(out: np.ndarray) -> bool:
    return out.dtype.kind in "fc"


def _check_call(prim: Any, args: tuple, params: dict, rng: np.random.Generator) -> int:
    """Check every floating operand of one call; returns how many were checked (not at a
    kink). Runs with x64 enabled (set by the caller)."""
    args = tuple(_as_float64(a) for a in args)
    params = _params64(params)
    out = np.asarray(prim.bind(*args, **params))
    if carries_derivative(out) and not np.all(np.isfinite(out)):
        return 0
    u = random_like(rng, out)
    bars = evaluate_vjp(prim.vjp, args, params, out, u)
    label = _signature(prim, args, params)
    checked = 0
    for i, x in enumerate(args):
        if not _is_float(x):
            continue
        assert bars[i] is not None, f"{label}: no cotangent for float operand {i}"
        bar = np.asarray(bars[i])
        assert bar.shape == x.shape, f"{label}: operand {i} bar shape {bar.shape} != {x.shape}"
        assert bar.dtype == x.dtype, f"{label}: operand {i} bar dtype {bar.dtype}"
        if not carries_derivative(out):  # integer/bool results carry no derivative
            np.testing.assert_array_equal(bar, 0, err_msg=label)
            continue
        v = random_like(rng, x)

        def f(step: float) -> np.ndarray:
            moved = list(args)
            moved[i] = x + step * v
            return np.asarray(prim.bind(*moved, **params), out.dtype)

        plus, minus = f(EPS), f(-EPS)
        central = (plus - minus) / (2 * EPS)
        forward, backward = (plus - out) / EPS, (out - minus) / EPS
        if not np.allclose(forward, backward, rtol=1e-3, atol=1e-3):
            continue  # at a kink: finite differences mean nothing here
        lhs, rhs = pairing(bar, v), pairing(u, central)
        scale = float(np.sum(np.abs(bar * v)) + np.sum(np.abs(u * central)))
        assert abs(lhs - rhs) <= RTOL * scale + 1e-9, (
            f"{label}: operand {i}: <bar, v> = {lhs} but finite differences give {rhs}")
        checked += 1
    return checked


DIFFERENTIABLE = sorted(n for n, p in REGISTRY.items() if p.differentiable)


@pytest.mark.parametrize("name", DIFFERENTIABLE)
def test_template_matches_finite_differences(name, monkeypatch):
    prim = REGISTRY[name]
    assert isinstance(prim.vjp, VJPTemplate), f"{name} has no VJP template"
    monkeypatch.setattr(config, "enable_x64", True)
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    checked = sum(_check_call(prim, args, params, rng)
                  for args, params in RECORDED.get(name, []) + EXTRA.get(name, []))
    assert checked, (f"{name}: no recorded call with floating operands away from kinks; "
                     "add a float case for it in tests/cases or in EXTRA here")


@pytest.mark.parametrize("name", DIFFERENTIABLE)
def test_bars_have_the_operand_shape_and_dtype(name):
    """In the recorded dtypes (float16, bfloat16, mixed promotions) and with the floats
    cast to bfloat16: cotangents take their operand's shape and dtype, as in JAX."""
    prim = REGISTRY[name]
    calls = RECORDED.get(name, []) + EXTRA.get(name, [])
    to_bf16 = lambda a: a.astype(dtypes.bfloat16) if isinstance(a, np.ndarray) and \
        dtypes.is_float(a.dtype) else a  # noqa: E731
    calls += [(tuple(to_bf16(a) for a in args), params) for args, params in calls
              if accepts_bfloat16(prim, args, params)]
    for args, params in calls:
        out = prim.bind(*args, **params)
        u = np.ones(out.shape, out.dtype)
        for i, (x, bar) in enumerate(zip(args, evaluate_vjp(prim.vjp, args, params, out, u))):
            if not (isinstance(x, np.ndarray) and dtypes.is_inexact(x.dtype)):
                continue
            label = f"{_signature(prim, args, params)} operand {i}"
            assert bar is not None, label
            assert bar.shape == x.shape and bar.dtype == dtypes.canonicalize(x.dtype), \
                f"{label}: bar {bar.dtype}{list(bar.shape)} for {x.dtype}{list(x.shape)}"


def test_every_primitive_has_a_template_or_is_not_differentiable():
    missing = sorted(n for n, p in REGISTRY.items() if p.differentiable and p.vjp is None)
    assert not missing, f"differentiable primitives without a VJP template: {missing}"
    stray = sorted(n for n, p in REGISTRY.items() if not p.differentiable and p.vjp is not None)
    assert not stray, f"non-differentiable primitives with a VJP template: {stray}"
    unexercised = sorted(n for n in DIFFERENTIABLE if n not in RECORDED and n not in EXTRA)
    assert not unexercised, f"differentiable primitives no case calls: {unexercised}"


# --- the same templates under jit -------------------------------------------------------------

JIT_CALLS = ["reduce_prod", "cumprod", "cummax", "pad", "dot_general", "scatter", "gather",
             "dynamic_update_slice", "maximum", "slice"]


def test_templates_stage_under_jit():
    """Templates are plain jnp code: staged in one jitted module they give the eager bars."""
    calls = [(REGISTRY[n], *EXTRA[n][0]) for n in JIT_CALLS]
    calls = [(p, tuple(np.asarray(a, np.float32) if _is_float(a) else a for a in args), params)
             for p, args, params in calls]
    outs = [np.asarray(p.bind(*args, **params)) for p, args, params in calls]
    cotangents = [np.random.default_rng(k).standard_normal(o.shape).astype(np.float32)
                  for k, o in enumerate(outs)]

    def all_bars(arguments, results, out_bars):
        return [evaluate_vjp(p.vjp, a, params, o, g) for (p, _, params), a, o, g
                in zip(calls, arguments, results, out_bars)]

    staged = tp.jit(all_bars)([a for _, a, _ in calls], outs, cotangents)
    eager = all_bars([a for _, a, _ in calls], outs, cotangents)
    for (prim, _, _), got, want in zip(calls, staged, eager):
        for g, w in zip(got, want):
            if w is None:
                assert g is None
                continue
            assert g.dtype == w.dtype, f"{prim.name}: {g.dtype} != {w.dtype}"
            np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-5, atol=1e-5,
                                       err_msg=prim.name)


# --- cross-checks against JAX (float32, JAX's default) ---------------------------------------

# Tied and duplicated inputs shared with tests/test_jvp_rules.py (kinks, scatter ties).
_ties = np.array([[1.0, 3.0, 3.0, 0.0, 3.0, -1.0], [2.0, 2.0, -1.0, 2.0, 2.0, 1.0]])
_unique = np.array([[3], [0], [7], [1]], np.int32)
_tied_updates = np.array([[0.5, 1.0, -1.0], [2.0, 0.0, 0.0], [9.0, 9.0, 9.0],
                          [-2.0, 0.25, 3.0]])
_tied_operand = np.array([[0.0, 1.0, 2.0], [-2.0, 1.0, 0.5], [3.0, 0.0, -1.0],
                          [0.5, 1.0, -1.0], [1.0, 1.0, 1.0]])


def _jax_cases() -> list[tuple[str, tuple, dict, Any]]:
    """(primitive, args, params, the same function in JAX): kinks, ties, index modes;
    the VJP and the JVP rules are both checked against JAX on them."""
    jax = pytest.importorskip("jax")
    jnp_, lax_ = jax.numpy, jax.lax
    f32 = lambda a: np.asarray(a, np.float32)  # noqa: E731
    dnums = lax_.ScatterDimensionNumbers(update_window_dims=(1,), inserted_window_dims=(0,),
                                         scatter_dims_to_operand_dims=(0,))
    gnums = lax_.GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,),
                                        start_index_map=(0,))
    drop, clip = lax_.GatherScatterMode.FILL_OR_DROP, lax_.GatherScatterMode.CLIP
    near_gather = np.array([[0], [4], [9], [-3], [4]], np.int32)
    op, upd = f32(_x(5, 3)), f32(_x(4, 3, seed=1))
    # (primitive, args, params, the same function in JAX)
    return [
        ("abs", (f32([0, -1, 2]),), {}, jnp_.abs),
        ("maximum", (f32([1, 2, 3]), f32([1, 0, 3])), {}, jnp_.maximum),
        ("minimum", (f32([1, 2, 3]), f32([1, 0, 3])), {}, jnp_.minimum),
        ("reduce_max", (f32(_ties),), {"axes": (1,)}, lambda x: jnp_.max(x, axis=1)),
        ("reduce_min", (f32(_ties),), {"axes": (0, 1)}, jnp_.min),
        ("sign", (f32([0, -1, 2]),), {}, jnp_.sign),
        ("floor", (f32([0.5, -1.5, 2]),), {}, jnp_.floor),
        ("remainder", (f32([5.5, -5.5, 3.0, -2.0]), f32([2.0, 2.0, -1.25, -0.75])), {},
         jnp_.remainder),
        ("power", (f32([0.5, 2.0, 0.0]), f32([1.5, 0.0, 2.0])), {}, jnp_.power),
        ("integer_pow", (f32([0.5, -2.0, 3.0]),), {"y": -2}, lambda x: lax_.integer_pow(x, -2)),
        ("logistic", (f32([-3, 0, 2]),), {}, lax_.logistic),
        ("rsqrt", (f32([0.5, 2.0]),), {}, lax_.rsqrt),
        ("cbrt", (f32([-8.0, 0.5, 27.0]),), {}, lax_.cbrt),
        ("arctan2", (f32([1, -2, 0.5]), f32([-1, 3, 0.25])), {}, jnp_.arctan2),
        ("true_divide", (f32([1, -2, 0.5]), f32([-1, 3, 0.25])), {}, jnp_.divide),
        ("select", (np.array([True, False, True]), f32([1, 2, 3]), f32([4, 5, 6])), {},
         lambda x, y: lax_.select(np.array([True, False, True]), x, y)),
        ("dot_general", (f32(_x(2, 3, 4)), f32(_x(4, 2, 5, seed=1))),
         {"dimension_numbers": _dnums_batch, "preferred_element_type": None},
         lambda a, b: lax_.dot_general(a, b, _dnums_batch)),
        ("cumprod", (f32(_zeros_1d),), {"axis": 0, "reverse": False}, lax_.cumprod),
        ("cumprod", (f32(_zeros_2d),), {"axis": 1, "reverse": True},
         lambda x: lax_.cumprod(x, axis=1, reverse=True)),
        ("cummax", (f32(_x(4, 6)),), {"axis": 1, "reverse": True},
         lambda x: lax_.cummax(x, axis=1, reverse=True)),
        ("cumsum", (f32(_x(4, 6)),), {"axis": 0, "reverse": True},
         lambda x: lax_.cumsum(x, axis=0, reverse=True)),
        ("reduce_prod", (f32(_zeros_2d),), {"axes": (1,)}, lambda x: jnp_.prod(x, axis=1)),
        ("reduce_prod", (f32([[0.0, 0.0, 2.0], [1.5, 2.0, -1.0]]),), {"axes": (1,)},
         lambda x: jnp_.prod(x, axis=1)),
        ("pad", (f32(_x(3, 4)), np.float32(0.5)),
         {"low": (1, -1), "high": (-1, 2), "interior": (1, 2)},
         lambda x, v: lax_.pad(x, v, [(1, -1, 1), (-1, 2, 2)])),
        ("slice", (f32(_x(5, 7)),), {"start_indices": (1, 0), "limit_indices": (5, 7),
                                     "strides": (2, 3)},
         lambda x: lax_.slice(x, (1, 0), (5, 7), (2, 3))),
        ("concatenate", (f32(_x(2, 3)), f32(_x(2, 1, seed=1))), {"axis": 1},
         lambda a, b: lax_.concatenate([a, b], 1)),
        ("dynamic_slice", (f32(_x(6, 4)), np.int32(5), np.int32(1)), {"slice_sizes": (3, 2)},
         lambda x: lax_.dynamic_slice(x, (5, 1), (3, 2))),
        ("dynamic_update_slice", (f32(_x(6, 4)), f32(_x(2, 3, seed=1)), np.int32(5),
                                  np.int32(3)), {},
         lambda x, u: lax_.dynamic_update_slice(x, u, (5, 3))),
        ("gather", (f32(_x(5, 3)), near_gather), {},
         lambda x: lax_.gather(x, near_gather, gnums, (1, 3), mode=clip)),
        ("scatter", (op, _dup, f32(_x(6, 3, seed=1))), {"mode": "add"},
         lambda x, u: lax_.scatter_add(x, _dup, u, dnums, mode=drop)),
        ("scatter", (op, _unique, upd), {"mode": "set"},
         lambda x, u: lax_.scatter(x, _unique, u, dnums, mode=drop)),
        ("scatter", (op, _unique, upd), {"mode": "multiply"},
         lambda x, u: lax_.scatter_mul(x, _unique, u, dnums, mode=drop, unique_indices=True)),
        ("scatter", (f32(_tied_operand), _unique, f32(_tied_updates)), {"mode": "max"},
         lambda x, u: lax_.scatter_max(x, _unique, u, dnums, mode=drop)),
        ("scatter", (f32(_tied_operand), _unique, f32(_tied_updates)), {"mode": "min"},
         lambda x, u: lax_.scatter_min(x, _unique, u, dnums, mode=drop)),
    ]


def test_bars_match_jax():
    jax = pytest.importorskip("jax")
    for name, args, params, jax_fn in _jax_cases():
        prim = REGISTRY[name]
        out = np.asarray(prim.bind(*args, **params))
        u = np.random.default_rng(1).standard_normal(out.shape).astype(np.float32)
        floats = [i for i, a in enumerate(args) if np.asarray(a).dtype == np.float32]
        ours = evaluate_vjp(prim.vjp, args, params, out, u)

        def jax_of_floats(*xs, _args=args):
            full = list(_args)
            for i, x in zip(floats, xs):
                full[i] = x
            return jax_fn(*[full[i] for i in floats])

        _, pullback = jax.vjp(jax.jit(jax_of_floats), *[args[i] for i in floats])
        for i, want in zip(floats, pullback(u)):
            np.testing.assert_allclose(np.asarray(ours[i]), np.asarray(want), rtol=1e-5,
                                       atol=1e-6, err_msg=f"{name} {params} operand {i}")


# --- the template API -------------------------------------------------------------------------

def _code(statements) -> str:
    import libcst as cst
    return cst.Module(body=statements).code


def test_instantiate_renames_and_drops_inactive_operands():
    template = vjp_template(("x", "y"), """
scale = jnp.shape(x)
x_bar = ad.unbroadcast(out_bar * y, scale)
y_bar = jnp.sum(out_bar * x, axis=axes)
""")
    assert template.temporaries == ("scale",)
    renames = {"x": "a", "y": "_t1", "out_bar": "_t3_bar", "y_bar": "_t1_bar",
               "axes": "(0, 1)", "shape": "WRONG", "axis": "WRONG"}
    assert _code(template.instantiate(renames, {"y"})) == \
        "_t1_bar = jnp.sum(_t3_bar * a, axis=(0, 1))\n"
    both = _code(template.instantiate({"axes": "-1"}, {"x", "y"}))
    assert "scale = jnp.shape(x)" in both and "axis=(-1)" in both
    assert template.instantiate({}, set()) == []


def test_malformed_templates_are_rejected():
    with pytest.raises(TemplateError, match="names no operand"):
        vjp_template(("x",), "z_bar = out_bar")
    with pytest.raises(TemplateError, match="reads"):
        vjp_template(("x", "y"), "x_bar = out_bar\ny_bar = x_bar * 2")
    with pytest.raises(TemplateError, match="name = expression"):
        vjp_template(("x",), "if x:\n    x_bar = out_bar")
    with pytest.raises(TemplateError, match="variadic"):
        vjp_template(("*xs", "y"), "y_bar = out_bar")


def test_importing_transpiler_does_not_import_libcst():
    import subprocess
    import sys
    code = "import sys, transpiler; assert 'libcst' not in sys.modules, 'libcst imported'"
    subprocess.run([sys.executable, "-c", code], check=True, cwd=str(
        __import__("pathlib").Path(__file__).parent.parent))
