"""Registry-driven: every primitive's batching rule against a Python loop over the batch.

The primitive applications are the ones the registry's sample calls (tests/cases/) make:
each case runs once eagerly with `bind` recorded. Every recorded application is then
batched (a batch of 3: floating operands perturbed per member, others repeated) with the
batch axis at 0, 1 and -1 of every operand, and with only the first operand batched, and
the rule's result is compared with ``stack([prim(*members[b]) for b in range(3)])``.
"""

from __future__ import annotations

import importlib
import pkgutil
from typing import Any

import numpy as np
import pytest

import transpiler as tp
from transpiler.primitives import REGISTRY, core
from tests import cases as cases_pkg

FAMILIES = sorted(m.name for m in pkgutil.iter_modules(cases_pkg.__path__))
BATCH = 3


def test_every_primitive_has_a_batching_rule():
    missing = sorted(name for name, prim in REGISTRY.items() if prim.batch is None)
    assert not missing, f"primitives without a batching rule: {missing}"


def recorded_calls(family: str) -> list[tuple[Any, tuple, dict]]:
    """(primitive, operands as NumPy values or Python scalars, params) of every
    application the family's cases make, one per distinct signature."""
    calls: dict[Any, tuple[Any, tuple, dict]] = {}
    original = core.bind

    def record(prim: Any, args: Any, params: dict) -> Any:
        operands = tuple(a if isinstance(a, (bool, int, float, complex)) else np.asarray(a)
                         for a in args)
        key = (prim.name, tuple((np.shape(a), np.asarray(a).dtype.str) for a in operands),
               repr(sorted(params.items(), key=lambda kv: kv[0])))
        calls.setdefault(key, (prim, operands, dict(params)))
        return original(prim, args, params)

    core.bind = record
    try:
        for case in importlib.import_module(f"tests.cases.{family}").CASES:
            case.fn(*case.args, **case.kwargs)
    finally:
        core.bind = original
    return list(calls.values())


def _member(x: Any, b: int) -> Any:
    """Batch member `b` of operand `x`: floats shifted, everything else as it is."""
    if isinstance(x, np.ndarray) and x.dtype.kind == "f":
        return (x + np.asarray(0.125 * b, x.dtype)).astype(x.dtype)
    return x


def patterns(operands: tuple) -> list[tuple[Any, ...]]:
    """Batch axes to try: each array operand batched at 0, then at 1, then at -1 (its
    last axis), and only the first array operand batched (at 0)."""
    arrays = [i for i, a in enumerate(operands) if isinstance(a, np.ndarray)]
    out = []
    for where in ("first", "second", "last"):
        dims = []
        for i, a in enumerate(operands):
            if i not in arrays:
                dims.append(None)
            elif where == "first" or a.ndim == 0:
                dims.append(0)
            else:
                dims.append(1 if where == "second" else a.ndim)
        out.append(tuple(dims))
    if len(arrays) > 1:
        out.append(tuple(0 if i == arrays[0] else None for i in range(len(operands))))
    return list(dict.fromkeys(out))


def batched(operands: tuple, dims: tuple) -> list[Any]:
    return [np.stack([_member(a, b) for b in range(BATCH)], axis=d) if d is not None else a
            for a, d in zip(operands, dims)]


def loop(prim: Any, operands: tuple, dims: tuple, params: dict) -> Any:
    outs = [prim.bind(*[_member(a, b) if d is not None else a
                        for a, d in zip(operands, dims)], **params) for b in range(BATCH)]
    if prim.multiple_results:
        return tuple(np.stack([np.asarray(o[k]) for o in outs]) for k in range(len(outs[0])))
    return np.stack([np.asarray(o) for o in outs])


def _front(out: Any, dim: Any) -> np.ndarray:
    out = np.asarray(out)
    if dim is None:
        return np.stack([out] * BATCH)
    return np.moveaxis(out, dim, 0)


def check(prim: Any, got: Any, want: Any, label: str) -> None:
    outs, dims = got
    if not prim.multiple_results:
        outs, dims, want = (outs,), (dims,), (want,)
    for out, dim, expected in zip(outs, dims, want):
        front = _front(out, dim)
        assert front.shape == expected.shape, f"{label}: shape {front.shape} != {expected.shape}"
        assert front.dtype == expected.dtype, f"{label}: dtype {front.dtype} != {expected.dtype}"
        if expected.dtype.kind in "biu":
            np.testing.assert_array_equal(front, expected, err_msg=label)
        else:
            np.testing.assert_allclose(front, expected, rtol=1e-5, atol=1e-6, err_msg=label,
                                       equal_nan=True)


def _applications(family: str, every_pattern: bool = True) -> list[tuple[Any, tuple, dict, tuple]]:
    """Each recorded call with every batching pattern, or (for the jit test, whose one
    module per family would otherwise take a minute to compile) with one pattern per call,
    taking the patterns in turn."""
    apps = []
    for k, (prim, operands, params) in enumerate(recorded_calls(family)):
        chosen = patterns(operands)
        if not every_pattern:
            chosen = [chosen[k % len(chosen)]]
        apps += [(prim, operands, params, dims) for dims in chosen]
    return apps


@pytest.mark.parametrize("family", FAMILIES)
def test_batch_rules_match_a_python_loop(family):
    for prim, operands, params, dims in _applications(family):
        label = f"{prim.name} dims={dims} params={params}"
        want = loop(prim, operands, dims, params)
        got = prim.batch(batched(operands, dims), list(dims), **params)
        check(prim, got, want, label)


@pytest.mark.parametrize("family", FAMILIES)
def test_batch_rules_stage_under_jit(family):
    """The family's batched applications compiled into one module."""
    apps = _applications(family, every_pattern=False)
    if not apps:
        pytest.skip(f"no batching rules for {family} yet")
    args = [batched(operands, dims) for _, operands, _, dims in apps]

    def everything(all_args: list) -> list:
        return [prim.batch(a, list(dims), **params)[0]
                for (prim, _, params, dims), a in zip(apps, all_args)]

    staged = tp.jit(everything)(args)
    for (prim, operands, params, dims), out in zip(apps, staged):
        got = (out, prim.batch(batched(operands, dims), list(dims), **params)[1])
        check(prim, got, loop(prim, operands, dims, params), f"jit {prim.name} dims={dims}")
