"""Registry-driven checks of the JVP templates (declared with each primitive, transpiler/primitives/).

The primitive calls are those of tests/test_vjp_rules.py (every call the registry cases
make, plus its EXTRA calls) and a few kinks below. Each call is replayed in float64 and:

1. each operand's tangent is compared with central finite differences along a random
   direction, ``(f(x + eps v) - f(x - eps v)) / (2 eps)``, away from kinks;
2. the JVP is checked against the VJP template by the dot-product test
   ``<u, jvp(v)> == sum_i <vjp(u)_i, v_i>`` -- also at kinks, where both rules must follow
   the same convention (ties, abs at 0);
3. tangents have the output's shape and dtype in the recorded dtypes and in bfloat16.

A few calls are also compared with ``jax.jvp`` when JAX is installed.
"""

from __future__ import annotations

import ast
import inspect
import zlib
from typing import Any

import numpy as np
import pytest

import transpiler as tp
from tests.test_vjp_rules import (EXTRA, RECORDED, _as_float64, _is_float, _jax_cases,
                                  _params64, _signature, _tied_operand, _tied_updates, _ties,
                                  _unique, _x, accepts_bfloat16, carries_derivative, pairing,
                                  random_like)
from transpiler import dtypes
from transpiler.config import config
from transpiler.primitives import REGISTRY
from transpiler.transforms import ad as adjoint_helpers
from transpiler.transforms.ad import tangents as tangent_helpers
from transpiler.primitives.jvp_template import JVPTemplate, jvp_template
from transpiler.primitives.vjp_template import TemplateError
from transpiler.transforms.ad.templates import evaluate_jvp, evaluate_vjp

EPS = 1e-6


# Kinks, where the dot-product test pins the JVP to the VJP's convention.
KINKS: dict[str, list[tuple[tuple, dict]]] = {
    "abs": [((np.array([0.0, -1.0, 2.0, 0.0]),), {})],
    "maximum": [((np.array([1.0, 2.0, 3.0]), np.array([1.0, 0.0, 3.0])), {}),
                ((_ties, np.float64(2.0)), {})],
    "minimum": [((np.array([1.0, 2.0, 3.0]), np.array([1.0, 0.0, 3.0])), {})],
    "reduce_max": [((_ties,), {"axes": (1,)}), ((_ties,), {"axes": (0, 1)})],
    "reduce_min": [((_ties,), {"axes": (0,)})],
    "cummax": [((_ties,), {"axis": 1, "reverse": False}), ((_ties,), {"axis": 1, "reverse": True})],
    "cummin": [((_ties,), {"axis": 1, "reverse": False}), ((_ties.T,), {"axis": 0, "reverse": True})],
    "scatter": [((_tied_operand, np.concatenate([_unique, _unique[:1]]),
                  np.concatenate([_tied_updates, _tied_updates[:1]])), {"mode": mode})
                for mode in ("min", "max", "set", "multiply")],
    "concatenate": [((_x(2, 3), np.ones((2, 2), np.int32), _x(2, 1, seed=1)), {"axis": 1})],
    "select": [((_ties > 1.5, _ties, np.float64(-1.0)), {})],
    "power": [((np.array([0.0, 2.0, 0.5]), np.array([2.0, 0.0, 1.5])), {})],
}

DIFFERENTIABLE = sorted(n for n, p in REGISTRY.items() if p.differentiable)


def _calls(name: str) -> list[tuple[tuple, dict]]:
    return RECORDED.get(name, []) + EXTRA.get(name, []) + KINKS.get(name, [])


def _prepared(prim: Any, args: tuple, params: dict) -> tuple[tuple, dict, np.ndarray]:
    args = tuple(_as_float64(a) for a in args)
    params = _params64(params)
    return args, params, np.asarray(prim.bind(*args, **params))


def _jvp(prim: Any, args: tuple, tangents: list, params: dict, out: np.ndarray) -> Any:
    return evaluate_jvp(prim.jvp, args, tangents, params, out)


# --- 1. every differentiable primitive has a rule ---------------------------------------------

def test_every_differentiable_primitive_has_a_jvp_rule():
    missing = sorted(n for n, p in REGISTRY.items()
                     if p.differentiable and not isinstance(p.jvp, JVPTemplate))
    assert not missing, f"differentiable primitives without a JVP template: {missing}"
    stray = sorted(n for n, p in REGISTRY.items() if not p.differentiable and p.jvp is not None)
    assert not stray, f"non-differentiable primitives with a JVP template: {stray}"
    for name in DIFFERENTIABLE:
        jvp, vjp = REGISTRY[name].jvp, REGISTRY[name].vjp
        assert (jvp.operands, jvp.variadic) == (vjp.operands, vjp.variadic), \
            f"{name}: JVP operands {jvp.operands} differ from the VJP's {vjp.operands}"


# --- 2. finite differences --------------------------------------------------------------------

def _check_finite_differences(prim: Any, args: tuple, params: dict,
                              rng: np.random.Generator) -> int:
    """Each floating operand's tangent alone against central differences; returns how
    many elements were compared (kinks, where one-sided differences disagree, are not)."""
    args, params, out = _prepared(prim, args, params)
    if carries_derivative(out) and not np.all(np.isfinite(out)):
        return 0
    label = _signature(prim, args, params)
    compared = 0
    for i, x in enumerate(args):
        if not _is_float(x):
            continue
        v = random_like(rng, x)
        tangents = [v if j == i else None for j in range(len(args))]
        t = np.asarray(_jvp(prim, args, tangents, params, out))
        assert t.shape == out.shape, f"{label}: operand {i}: tangent shape {t.shape}"
        if not carries_derivative(out):  # integer/bool results carry no derivative
            np.testing.assert_array_equal(t, 0, err_msg=label)
            continue
        assert t.dtype == out.dtype, f"{label}: operand {i}: tangent dtype {t.dtype}"

        def f(step: float, i: int = i, x: np.ndarray = x, v: np.ndarray = v) -> np.ndarray:
            moved = list(args)
            moved[i] = x + step * v
            return np.asarray(prim.bind(*moved, **params), out.dtype)

        plus, minus = f(EPS), f(-EPS)
        central = (plus - minus) / (2 * EPS)
        smooth = np.isclose((plus - out) / EPS, (out - minus) / EPS, rtol=1e-3, atol=1e-3)
        scale = 1e-6 * (1 + np.max(np.abs(central[smooth]), initial=0.0))
        np.testing.assert_allclose(t[smooth], central[smooth], rtol=1e-5, atol=scale,
                                   err_msg=f"{label}: operand {i}")
        compared += int(np.sum(smooth))
    return compared


@pytest.mark.parametrize("name", DIFFERENTIABLE)
def test_jvp_matches_finite_differences(name, monkeypatch):
    monkeypatch.setattr(config, "enable_x64", True)
    prim = REGISTRY[name]
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    compared = sum(_check_finite_differences(prim, args, params, rng)
                   for args, params in _calls(name))
    assert compared, f"{name}: no call with floating operands away from kinks"


# --- 3. the dot-product test against the VJP template -----------------------------------------

def _check_transpose(prim: Any, args: tuple, params: dict, rng: np.random.Generator) -> bool:
    args, params, out = _prepared(prim, args, params)
    if not carries_derivative(out) or not np.all(np.isfinite(out)):
        return False
    u = random_like(rng, out)
    tangents = [random_like(rng, a) if _is_float(a) else None for a in args]
    if all(t is None for t in tangents):
        return False
    jvp = np.asarray(_jvp(prim, args, tangents, params, out))
    bars = evaluate_vjp(prim.vjp, args, params, out, u)
    pairs = [(np.asarray(bar), v) for bar, v in zip(bars, tangents) if v is not None]
    if not (np.all(np.isfinite(jvp)) and all(np.all(np.isfinite(b)) for b, _ in pairs)):
        return False
    lhs = pairing(u, jvp)
    rhs = sum(pairing(bar, v) for bar, v in pairs)
    scale = float(np.sum(np.abs(u * jvp))) + sum(float(np.sum(np.abs(b * v))) for b, v in pairs)
    assert abs(lhs - rhs) <= 1e-8 * scale + 1e-12, (
        f"{_signature(prim, args, params)}: <u, jvp(v)> = {lhs} but <vjp(u), v> = {rhs}")
    return True


@pytest.mark.parametrize("name", DIFFERENTIABLE)
def test_jvp_is_the_transpose_of_the_vjp(name, monkeypatch):
    monkeypatch.setattr(config, "enable_x64", True)
    prim = REGISTRY[name]
    rng = np.random.default_rng(zlib.crc32(name.encode()) + 1)
    checked = [_check_transpose(prim, args, params, rng) for args, params in _calls(name)]
    assert any(checked), f"{name}: no call with a floating result to check"


@pytest.mark.parametrize("name", DIFFERENTIABLE)
def test_tangents_have_the_output_shape_and_dtype(name):
    """In the recorded dtypes (float16, bfloat16, mixed promotions) and with the floats
    cast to bfloat16."""
    prim = REGISTRY[name]
    to_bf16 = lambda a: a.astype(dtypes.bfloat16) if isinstance(a, np.ndarray) and \
        dtypes.is_float(a.dtype) else a  # noqa: E731
    calls = RECORDED.get(name, []) + EXTRA.get(name, [])
    calls += [(tuple(to_bf16(a) for a in args), params) for args, params in calls
              if accepts_bfloat16(prim, args, params)]
    for args, params in calls:
        out = prim.bind(*args, **params)
        floats = [isinstance(a, np.ndarray) and dtypes.is_inexact(a.dtype) for a in args]
        tangents = [np.ones(a.shape, a.dtype) if f else None for a, f in zip(args, floats)]
        t = _jvp(prim, args, tangents, params, out)
        label = _signature(prim, args, params)
        if not any(floats):
            assert t is None, label
            continue
        assert t.shape == out.shape, f"{label}: tangent shape {t.shape} for {out.shape}"
        if dtypes.is_inexact(out.dtype):
            assert t.dtype == out.dtype, f"{label}: tangent {t.dtype} for {out.dtype}"


# --- the same templates under jit -------------------------------------------------------------

JIT_CALLS = ["reduce_prod", "cumprod", "cummax", "pad", "dot_general", "scatter", "gather",
             "dynamic_update_slice", "dynamic_slice", "slice", "concatenate", "reduce_max"]


def test_templates_stage_under_jit():
    """The helpers are plain jnp code: staged in one jitted module they give the eager
    tangents."""
    calls = [(REGISTRY[n], *EXTRA[n][0]) for n in JIT_CALLS]
    calls = [(p, tuple(np.asarray(a, np.float32) if _is_float(a) else a for a in args), params)
             for p, args, params in calls]
    outs = [np.asarray(p.bind(*args, **params)) for p, args, params in calls]
    tangents = [[np.random.default_rng(k).standard_normal(np.shape(a)).astype(np.float32)
                 if isinstance(a, np.ndarray) and a.dtype == np.float32 else None for a in args]
                for k, (_, args, _) in enumerate(calls)]

    def all_tangents(arguments, results, dots):
        return [evaluate_jvp(p.jvp, a, t, params, o) for (p, _, params), a, o, t
                in zip(calls, arguments, results, dots)]

    staged = tp.jit(all_tangents)([a for _, a, _ in calls], outs, tangents)
    eager = all_tangents([a for _, a, _ in calls], outs, tangents)
    for (prim, _, _), got, want in zip(calls, staged, eager):
        assert got.dtype == want.dtype, f"{prim.name}: {got.dtype} != {want.dtype}"
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5, atol=1e-5,
                                   err_msg=prim.name)


# --- cross-checks against jax.jvp (float32, JAX's default) ------------------------------------

def test_tangents_match_jax():
    jax = pytest.importorskip("jax")
    cases = _jax_cases()
    primals, tangents, ours = [], [], []
    for k, (name, args, params, _) in enumerate(cases):
        prim = REGISTRY[name]
        out = np.asarray(prim.bind(*args, **params))
        rng = np.random.default_rng(k)
        floats = [i for i, a in enumerate(args) if np.asarray(a).dtype == np.float32]
        dots = [rng.standard_normal(np.shape(a)).astype(np.float32) if i in floats else None
                for i, a in enumerate(args)]
        ours.append(np.asarray(evaluate_jvp(prim.jvp, args, dots, params, out)))
        primals.append(tuple(args[i] for i in floats))
        tangents.append(tuple(dots[i] for i in floats))

    @jax.jit  # one compile for all the cases
    def jax_tangents(primals, tangents):
        return [jax.jvp(fn, p, t)[1] for (_, _, _, fn), p, t in zip(cases, primals, tangents)]

    for (name, _, params, _), got, want in zip(cases, ours, jax_tangents(primals, tangents)):
        np.testing.assert_allclose(got, np.asarray(want), rtol=1e-5, atol=1e-6,
                                   err_msg=f"{name} {params}")


# --- the template API -------------------------------------------------------------------------

def test_contributions_and_evaluate():
    template = jvp_template(("x", "*xs"), x="x_dot * 2", xs="ad.tangents_or_zeros(xs_dot, xs)[0]")
    assert template.differentiable == ("x", "xs") and template.variadic
    assert template.contribution("x") == "x_dot * 2"
    assert "xs_dot" in template.reads["xs"]
    one = np.ones(3)
    assert evaluate_jvp(template, [one, one, one], [None, None, None], {}, one) is None
    got = evaluate_jvp(template, [one, one, one], [one, None, 3 * one], {}, one)
    np.testing.assert_array_equal(np.asarray(got), 2 * one)  # xs_dot[0] is None: zeros
    scatter = REGISTRY["scatter"].jvp
    with pytest.raises(TemplateError, match="not differentiated"):
        scatter.contribution("indices")


def test_malformed_templates_are_rejected():
    with pytest.raises(TemplateError, match="names no operand"):
        jvp_template(("x",), z="x_dot")
    with pytest.raises(TemplateError, match="reads"):
        jvp_template(("x", "y"), x="x_dot + y_dot")
    with pytest.raises(TemplateError, match="reads"):
        jvp_template(("x",), x="out_bar * x_dot")
    with pytest.raises(TemplateError, match="one expression"):
        jvp_template(("x",), x="t = x_dot")
    with pytest.raises(TemplateError, match="variadic"):
        jvp_template(("*xs", "y"), y="y_dot")


def test_tangent_helpers_shadow_no_ad_name():
    """`adjoint_helpers` re-exports tangent_helpers with a star import: no name of it may
    replace one that the ``ad`` namespace already has."""
    tree = ast.parse(inspect.getsource(adjoint_helpers))
    own: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            own.add(node.name)
        elif isinstance(node, ast.ImportFrom) and node.module != tangent_helpers.__name__:
            own |= {alias.asname or alias.name for alias in node.names}
        elif isinstance(node, ast.Assign):
            own |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    assert not own & set(tangent_helpers.__all__), sorted(own & set(tangent_helpers.__all__))
    for name in tangent_helpers.__all__:
        assert getattr(adjoint_helpers, name) is getattr(tangent_helpers, name)
