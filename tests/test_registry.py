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
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64),
                                   rtol=rtol, atol=atol, err_msg=label, equal_nan=True)


def test_every_primitive_has_cases():
    covered = {c.prim for cs in ALL_CASES.values() for c in cs}
    missing = sorted(set(REGISTRY) - covered)
    assert not missing, f"primitives without test cases: {missing}"
    unknown = sorted(covered - set(REGISTRY))
    assert not unknown, f"cases name unregistered primitives: {unknown}"


def test_every_primitive_has_every_rule_slot():
    for name, prim in REGISTRY.items():
        for rule in ("impl", "abstract_eval", "lower"):
            assert callable(getattr(prim, rule)), f"{name} lacks {rule}"
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
def test_jit_matches_eager(family):
    """All cases of a family compiled into one module: one IREE compile per family."""
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
