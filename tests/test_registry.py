"""Registry-driven tests: every primitive, eager (NumPy) vs IREE, values and dtypes."""

from __future__ import annotations

import importlib
import pkgutil

import numpy as np
import pytest

import transpiler as tp
from transpiler.primitives import REGISTRY
from tests import cases as cases_pkg

FAMILIES = sorted(m.name for m in pkgutil.iter_modules(cases_pkg.__path__))
ALL_CASES = {f: importlib.import_module(f"tests.cases.{f}").CASES for f in FAMILIES}


def _np(x):
    return np.asarray(x)


def _close(got, want, rtol, atol, label):
    got, want = _np(got), _np(want)
    assert got.shape == want.shape, f"{label}: shape {got.shape} != {want.shape}"
    if got.dtype == bool or want.dtype == bool:
        np.testing.assert_array_equal(got, want, err_msg=label)
    else:
        wide = np.complex128 if np.iscomplexobj(got) or np.iscomplexobj(want) else np.float64
        assert np.iscomplexobj(got) == np.iscomplexobj(want), f"{label}: {got.dtype} {want.dtype}"
        np.testing.assert_allclose(got.astype(wide), want.astype(wide),
                                   rtol=rtol, atol=atol, err_msg=label, equal_nan=True)


def test_every_primitive_has_cases():
    covered = {c.prim for cs in ALL_CASES.values() for c in cs}
    missing = sorted(set(REGISTRY) - covered)
    assert not missing, f"primitives without test cases: {missing}"
    unknown = sorted(covered - set(REGISTRY))
    assert not unknown, f"cases name unregistered primitives: {unknown}"


def test_every_primitive_has_every_rule_slot():
    for name, prim in REGISTRY.items():
        for rule in ("impl", "abstract_eval"):
            assert callable(getattr(prim, rule)), f"{name} lacks {rule}"
        staged = [r for r in ("lower", "composite") if callable(getattr(prim, r))]
        assert staged, f"{name} needs a lower rule or a composite"
        for slot in ("jvp", "vjp", "batch"):  # reserved for the transformation issues
            assert hasattr(prim, slot), f"{name} lacks the {slot} slot"


@pytest.mark.parametrize("family", FAMILIES)
def test_eager_matches_numpy(family):
    for case in ALL_CASES[family]:
        out = case.fn(*case.args, **case.kwargs)
        if case.ref is not None:
            want = case.ref(*case.args, **case.kwargs)
            outs = out if isinstance(out, (tuple, list)) else [out]
            wants = want if isinstance(want, (tuple, list)) else [want]
            for o, w in zip(outs, wants):
                _close(o, w, case.rtol, case.atol, case.label())


@pytest.mark.parametrize("family", FAMILIES)
def test_jit_matches_eager(family, monkeypatch):
    """All cases of a family compiled into one module: one IREE compile per family (the
    factorizations as their compiled loops, not LAPACK on the host)."""
    monkeypatch.setattr(tp.config, "lapack_on_host", False)
    _check_jit(family)


def test_jit_matches_eager_with_lapack_on_the_host(monkeypatch):
    """What a jit called in this process stages for the factorizations: host calls."""
    monkeypatch.setattr(tp.config, "lapack_on_host", True)
    _check_jit("linalg")


def _check_jit(family):
    cases = [c for c in ALL_CASES[family] if c.jit]
    args = [c.args for c in cases]

    def everything(all_args):
        return [c.fn(*a, **c.kwargs) for c, a in zip(cases, all_args)]

    staged = tp.jit(everything)(args)
    for case, got in zip(cases, staged):
        want = case.fn(*case.args, **case.kwargs)
        gots = got if isinstance(got, (tuple, list)) else [got]
        wants = want if isinstance(want, (tuple, list)) else [want]
        for g, w in zip(gots, wants):
            assert g.dtype == w.dtype, f"{case.label()}: jit dtype {g.dtype} != eager {w.dtype}"
            _close(g, w, max(case.rtol, 1e-5), max(case.atol, 1e-6), case.label())


def test_float64_elementwise_under_jit(monkeypatch):
    """With x64 on, every floating unary case runs in float64 through IREE too (its CPU
    backend cannot link libm's sin/cos/tanh/atan2 into embedded executables, nor legalize
    f64 cbrt: the compiler falls back to a system library, cbrt has its own lowering)."""
    from tests.cases.elementwise import UNARY
    monkeypatch.setattr(tp.config, "enable_x64", True)
    cases = [(name, fn, ref, a.astype(np.float64)) for name, fn, ref, a in UNARY
             if a.dtype == np.float32]
    cases.append(("arctan2", lambda a: __import__("transpiler").numpy.arctan2(a, a[::-1]),
                  lambda a: np.arctan2(a, a[::-1]), cases[0][3]))
    staged = tp.jit(lambda args: [fn(a) for (_, fn, _, _), a in zip(cases, args)])(
        [a for *_, a in cases])
    for (name, _, ref, a), got in zip(cases, staged):
        assert got.dtype == ref(a).dtype, name
        np.testing.assert_allclose(np.asarray(got), ref(a), rtol=1e-13, atol=1e-300,
                                   err_msg=name)


# --- every primitive on constants: trace-time folding against eager mode --------------------
# Inside jit, operations on constants are computed while tracing (lowering/fold.py): splats
# (every element equal) on one element, other small values by the eager rule. These run
# each family's cases with their arguments as constants and as splats, and reduce each
# case's result inside the module, where IREE once miscompiled reductions it could fold.

def _splat(value):
    array = np.asarray(value)
    if array.ndim == 0 or array.size == 0:
        return value
    return np.full_like(array, array.reshape(-1)[0])


def _eager_or_none(case, args):
    try:
        return case.fn(*args, **case.kwargs)
    except Exception:  # noqa: BLE001 (a case that needs its own values: not a splat case)
        return None


def _check_family(cases, arg_lists, staged):
    for case, args, got in zip(cases, arg_lists, staged):
        want = _eager_or_none(case, args)
        gots = got if isinstance(got, (tuple, list)) else [got]
        wants = want if isinstance(want, (tuple, list)) else [want]
        for g, w in zip(gots, wants):
            assert np.asarray(g).dtype == np.asarray(w).dtype, case.label()
            _close(g, w, max(case.rtol, 1e-5), max(case.atol, 1e-6), case.label())


@pytest.mark.parametrize("splats", [False, True], ids=["constants", "splats"])
@pytest.mark.parametrize("family", FAMILIES)
def test_jit_of_constants_matches_eager(family, splats):
    cases, arg_lists = [], []
    for case in ALL_CASES[family]:
        args = tuple(_splat(a) for a in case.args) if splats else case.args
        if case.jit and _eager_or_none(case, args) is not None:
            cases.append(case)
            arg_lists.append(args)
    staged = tp.jit(lambda: [c.fn(*a, **c.kwargs) for c, a in zip(cases, arg_lists)])()
    _check_family(cases, arg_lists, staged)


def _reduced(out):
    """Sums and maxima of a case's float results: a reduction consuming each primitive."""
    import transpiler.numpy as jnp
    outs = out if isinstance(out, (tuple, list)) else [out]
    return [(jnp.sum(o), jnp.max(o)) for o in outs
            if np.dtype(o.dtype).kind == "f" and np.prod(o.shape) > 0]


@pytest.mark.parametrize("family", FAMILIES)
def test_reductions_of_every_primitive_match_eager(family):
    cases = [c for c in ALL_CASES[family] if c.jit]
    staged = tp.jit(lambda all_args: [_reduced(c.fn(*a, **c.kwargs))
                                      for c, a in zip(cases, all_args)])([c.args for c in cases])
    for case, got in zip(cases, staged):
        want = _reduced(case.fn(*case.args, **case.kwargs))
        for (gs, gm), (ws, wm) in zip(got, want):
            _close(gs, ws, max(case.rtol, 1e-5), 1e-4, case.label() + " (sum)")
            _close(gm, wm, case.rtol, case.atol, case.label() + " (max)")
