"""Differential tests on random programs (tests/programs/random_programs.py): every program
runs eagerly and compiled by IREE under several transforms, and the two must agree.

- ``jit(f)`` against eager ``f``;
- ``jit(grad(f, argnums))`` against eager ``grad``, and eager ``grad`` against float64
  central finite differences on the smooth programs of each module;
- ``jit(vmap(f, in_axes))`` against a Python loop of eager ``f`` over a batch of 3;
- ``jit(lambda x, t: jvp(f, x, t))`` against eager ``jvp``;
- where JAX is installed, eager values and gradients against the very same source run with
  ``jnp`` bound to ``jax.numpy`` (JAX is an oracle only).

Why modules of many programs: an IREE compile costs 0.3-2 s here even for a small function,
so each test compiles ONE module that calls every program of a group of `PER_MODULE` and
returns all their results (a few seconds for 25 programs).
When a module disagrees, the failing programs are run again one at a time, and the message
gives each one's source, the transform, what jit and eager gave and, where JAX is there,
which of the two JAX agrees with.

``make fuzz FUZZ_PROGRAMS=3000 FUZZ_SEED=123`` runs the same tests on more programs: the
module reads `FUZZ_SEED` and `FUZZ_PROGRAMS` (CI: the fixed seed and 300 programs).
"""

from __future__ import annotations

import functools
import math
import os
import traceback
import types
from dataclasses import dataclass
from typing import Any, Callable, Optional

import numpy as np
import pytest

import transpiler as tp
import transpiler.numpy as jnp
from tests.programs import random_programs
from tests.programs.random_programs import RandomProgram
from tests.oracles import finite_differences

DEFAULT_SEED, DEFAULT_PROGRAMS = 16, 300   # what `make test` (CI) runs
SEED = int(os.environ.get("FUZZ_SEED", DEFAULT_SEED))
N_PROGRAMS = int(os.environ.get("FUZZ_PROGRAMS", DEFAULT_PROGRAMS))
PER_MODULE = 25          # programs compiled together into one IREE module
VMAP_SIZE = 3            # members of the vmap batch
FD_PER_MODULE = 2        # smooth programs per module checked against finite differences
RTOL, ATOL = 2e-4, 1e-5  # float32; ATOL scales with the magnitude of the wanted array

GROUPS = [range(start, min(start + PER_MODULE, N_PROGRAMS))
          for start in range(0, N_PROGRAMS, PER_MODULE)]
GROUP_IDS = [f"programs{g.start}-{g.stop - 1}" for g in GROUPS]


@dataclass(frozen=True)
class Case:
    program: RandomProgram
    fn: Callable


@functools.cache
def _cases(group: int) -> list[Case]:
    """The programs of `group`, imported from their generated module (written once; the
    content-named file is shared by the test workers and by later runs)."""
    programs = random_programs.generate_many(SEED, GROUPS[group].start, GROUPS[group].stop)
    return [Case(p, fn) for p, fn in zip(programs, random_programs.load(programs))]


# --------------------------------------------------------------------------------------
# Comparing results


def _leaves(x) -> list:
    if isinstance(x, (tuple, list)):
        return [leaf for item in x for leaf in _leaves(item)]
    return [x]


def _mismatch(got, want, rtol: float = RTOL, atol: float = ATOL) -> Optional[str]:
    """Why `got` is not `want` (structure, shape, dtype, values), or None when they agree.
    Floats agree within rtol, and atol times the largest magnitude in `want` (at least 1);
    integers and booleans exactly. A NaN or inf anywhere is a disagreement: the programs
    keep every value finite."""
    got_leaves, want_leaves = _leaves(got), _leaves(want)
    if len(got_leaves) != len(want_leaves):
        return f"{len(got_leaves)} results, want {len(want_leaves)}"
    for i, (g, w) in enumerate(zip(got_leaves, want_leaves)):
        g, w = np.asarray(g), np.asarray(w)
        where = f"result {i}: " if len(got_leaves) > 1 else ""
        if g.shape != w.shape:
            return f"{where}shape {g.shape}, want {w.shape}"
        if g.dtype != w.dtype:
            return f"{where}dtype {g.dtype}, want {w.dtype}"
        if g.dtype.kind in "biu":
            if not np.array_equal(g, w):
                return f"{where}integers differ"
            continue
        if not (np.all(np.isfinite(g)) and np.all(np.isfinite(w))):
            return f"{where}not finite"
        scale = max(1.0, float(np.max(np.abs(w), initial=0.0)))
        if not np.allclose(g, w, rtol=rtol, atol=atol * scale):
            error = float(np.max(np.abs(g.astype(np.float64) - w)))
            return f"{where}max abs error {error:.3g} (scale {scale:.3g})"
    return None


def _show(x) -> str:
    leaves = [np.asarray(leaf) for leaf in _leaves(x)]
    shown = [np.array2string(a, precision=6, separator=", ", max_line_width=100)
             + f"  ({a.dtype})" for a in leaves]
    return shown[0] if len(shown) == 1 else "(" + ",\n ".join(shown) + ")"


def _error(exc: BaseException) -> str:
    lines = traceback.format_exception_only(type(exc), exc)
    return "raised " + "".join(lines).strip()[:1500]


# --------------------------------------------------------------------------------------
# The transforms


def _arrays(args: tuple) -> tuple:
    """Arguments as library arrays (programs call methods such as ``x.at`` on them)."""
    return tuple(jnp.asarray(a) for a in args)


def _loop(fn: Callable, program: RandomProgram, batched: tuple) -> np.ndarray:
    """`fn` over the members of a vmap batch, one call each, stacked."""
    outs = []
    for i in range(VMAP_SIZE):
        member = tuple(a[i] if axis == 0 else a for a, axis in zip(batched, program.in_axes))
        outs.append(np.asarray(fn(*_arrays(member))))
    return np.stack(outs)


@dataclass(frozen=True)
class Transform:
    """What one differential check runs: `staged` is the function compiled under jit (it
    takes `inputs(program)`), `eager` computes the same result without jit (`eager_name`
    says how), and `oracle` computes it with JAX for the diagnosis of a failure."""
    name: str
    eager_name: str
    inputs: Callable[[RandomProgram], tuple]
    staged: Callable[[Case], Callable]
    eager: Callable[[Case, tuple], Any]
    oracle: Callable[[Any, Case, tuple], Any]   # (jax, case with the JAX function, inputs)
    # The transform without jit, where `eager` is not that already (vmap's is a loop): a
    # failure says whether the transform or the compile went wrong.
    unjitted: Optional[Callable[[Case, tuple], Any]] = None


def _staged_jvp(case: Case) -> Callable:
    def jvp_of(primals, tangents):
        return tp.jvp(case.fn, tuple(primals), tuple(tangents))
    return jvp_of


TRANSFORMS = {
    "jit": Transform(
        name="jit(f)", eager_name="eager f",
        inputs=lambda p: p.arguments(),
        staged=lambda c: c.fn,
        eager=lambda c, inputs: c.fn(*_arrays(inputs)),
        oracle=lambda jax, c, inputs: c.fn(*map(jax.numpy.asarray, inputs))),
    "grad": Transform(
        name="jit(grad(f))", eager_name="eager grad(f)",
        inputs=lambda p: p.arguments(),
        staged=lambda c: tp.grad(c.fn, argnums=c.program.argnums),
        eager=lambda c, inputs: tp.grad(c.fn, argnums=c.program.argnums)(*_arrays(inputs)),
        oracle=lambda jax, c, inputs: jax.grad(c.fn, argnums=c.program.argnums)(*inputs)),
    "vmap": Transform(
        name="jit(vmap(f))", eager_name="a loop of eager f over the batch",
        inputs=lambda p: p.batched_arguments(VMAP_SIZE),
        staged=lambda c: tp.vmap(c.fn, in_axes=c.program.in_axes),
        eager=lambda c, inputs: _loop(c.fn, c.program, inputs),
        oracle=lambda jax, c, inputs: jax.vmap(c.fn, in_axes=c.program.in_axes)(*inputs),
        unjitted=lambda c, inputs: tp.vmap(c.fn, in_axes=c.program.in_axes)(*_arrays(inputs))),
    "jvp": Transform(
        name="jit(jvp(f))", eager_name="eager jvp(f)",
        inputs=lambda p: (p.arguments(), p.tangents()),
        staged=_staged_jvp,
        eager=lambda c, inputs: tp.jvp(c.fn, _arrays(inputs[0]), _arrays(inputs[1])),
        oracle=lambda jax, c, inputs: jax.jvp(c.fn, tuple(inputs[0]), tuple(inputs[1]))),
}


# --------------------------------------------------------------------------------------
# Failures: located program by program, described for the person who fixes them


@dataclass
class Failure:
    cases: list[Case]   # one program, or the programs that fail only together
    transform: str
    detail: str


def _describe(failures: list[Failure]) -> str:
    parts = [f"{len(failures)} disagreement(s); reproduce a program with "
             f"tests.programs.random_programs.generate(seed, index)"]
    for f in failures:
        programs = [c.program for c in f.cases]
        header = f"--- {f.transform} of " + " with ".join(p.name for p in programs)
        sources = "".join(
            f"# seed {p.seed}, index {p.index}; argument shapes {[q.shape for q in p.params]}, "
            f"argnums {p.argnums}, in_axes {p.in_axes}\n{p.source}" for p in programs)
        parts.append(f"{header}\n{sources}{f.detail}")
    return "\n\n".join(parts)


def _jax_function(jax, case: Case) -> Case:
    """The program's own code object with ``jnp``/``nn`` bound to JAX's."""
    namespace = dict(case.fn.__globals__, jnp=jax.numpy, nn=jax.nn)
    return Case(case.program, types.FunctionType(case.fn.__code__, namespace, case.fn.__name__))


def _oracle_verdict(transform: Transform, case: Case, inputs: tuple, got, want) -> str:
    """Which side JAX agrees with, when JAX is installed (it only diagnoses)."""
    try:
        import jax
    except ImportError:
        return ""
    try:
        oracle = transform.oracle(jax, _jax_function(jax, case), inputs)
    except Exception as exc:  # the oracle failing is worth saying, never a test failure
        return f"\nJAX: {_error(exc)}"
    verdict = []
    for label, value in (("jit", got), ("eager", want)):
        if not isinstance(value, BaseException):
            agrees = _mismatch(value, oracle) is None
            verdict.append(f"{label} {'agrees' if agrees else 'disagrees'}")
    return f"\nJAX gives {_show(oracle)}\n  ({', '.join(verdict)} with JAX)"


def _detail(transform: Transform, case: Case, inputs: tuple, got, want, alone=None) -> str:
    lines = []
    if isinstance(got, BaseException):
        lines.append(f"jit {_error(got)}")
    else:
        lines.append(f"got  (jit)   {_show(got)}\n  ({_mismatch(got, want)})")
    if alone is not None:
        lines.append("alone in its own module: "
                     + (_error(alone) if isinstance(alone, BaseException) else
                        "agrees with eager (fails only with the other programs)"
                        if _mismatch(alone, want) is None else f"got {_show(alone)}"))
    lines.append(f"want (eager) {_show(want)}")
    if transform.unjitted is not None:
        try:
            unjitted = transform.unjitted(case, inputs)
            problem = _mismatch(unjitted, want)
            lines.append("without jit: " + ("agrees with eager" if problem is None else
                                            f"{_show(unjitted)}\n  ({problem})"))
        except Exception as exc:
            lines.append(f"without jit: {_error(exc)}")
    return "\n".join(lines) + _oracle_verdict(transform, case, inputs, got, want)


def _run_staged(transform: Transform, cases: list[Case], inputs: list[tuple]):
    """One IREE module computing `transform` of every program in `cases`."""
    staged = [transform.staged(c) for c in cases]

    def every_program(all_inputs):
        return [fn(*args) for fn, args in zip(staged, all_inputs)]

    return tp.jit(every_program)(inputs)


def _run_alone(transform: Transform, case: Case, inputs: tuple):
    try:
        return _run_staged(transform, [case], [inputs])[0]
    except Exception as exc:
        return exc


def _raises(transform: Transform, pairs: list[tuple[Case, tuple]]) -> bool:
    try:
        _run_staged(transform, [c for c, _ in pairs], [a for _, a in pairs])
        return False
    except Exception:
        return True


def _culprits(transform: Transform, cases: list[Case], inputs: list[tuple]) -> list[Case]:
    """A small set of programs whose module still fails, when the module of all of them
    fails and each alone passes: delta debugging, dropping one of n chunks while the rest
    still fails (n doubles when no chunk can go)."""
    pairs = list(zip(cases, inputs))
    chunks = 2
    while len(pairs) >= 2:
        size = math.ceil(len(pairs) / chunks)
        for start in range(0, len(pairs), size):
            rest = pairs[:start] + pairs[start + size:]
            if rest and _raises(transform, rest):
                pairs, chunks = rest, max(chunks - 1, 2)
                break
        else:
            if chunks >= len(pairs):
                break
            chunks = min(len(pairs), 2 * chunks)
    return [c for c, _ in pairs]


def check_under_jit(key: str, group: int) -> None:
    """`TRANSFORMS[key]` of a group of programs under jit, against eager."""
    transform = TRANSFORMS[key]
    failures: list[Failure] = []
    cases, inputs, wants = [], [], []
    for case in _cases(group):
        args = transform.inputs(case.program)
        try:
            want = transform.eager(case, args)
        except Exception as exc:
            failures.append(Failure([case], transform.eager_name, f"eager {_error(exc)}"))
            continue
        cases.append(case)
        inputs.append(args)
        wants.append(want)
    try:
        results = _run_staged(transform, cases, inputs)
    except Exception as exc:  # find the programs that make the module fail
        results = [_run_alone(transform, c, a) for c, a in zip(cases, inputs)]
        if not any(isinstance(r, BaseException) for r in results):
            culprits = _culprits(transform, cases, inputs)
            failures.append(Failure(
                culprits, transform.name,
                f"the module of all {len(cases)} programs of the group {_error(exc)}\n"
                f"each program passes alone; these {len(culprits)} fail together"))
    for case, args, got, want in zip(cases, inputs, results, wants):
        if isinstance(got, BaseException) or _mismatch(got, want) is not None:
            alone = None if isinstance(got, BaseException) else _run_alone(transform, case, args)
            failures.append(Failure([case], transform.name,
                                    _detail(transform, case, args, got, want, alone)))
    assert not failures, _describe(failures)


@pytest.mark.parametrize("group", range(len(GROUPS)), ids=GROUP_IDS)
@pytest.mark.parametrize("transform", ["jit", "grad", "vmap", "jvp"])
def test_compiled_matches_eager(transform, group):
    """jit(f), jit(grad(f)), jit(vmap(f)) and jit(jvp(f)) against their eager versions."""
    check_under_jit(transform, group)


# --------------------------------------------------------------------------------------
# Eager gradients against finite differences, eager results against JAX


def _finite_differences(fn: Callable, args: tuple, argnum: int, eps: float = 1e-4):
    """Central differences in float64 of the scalar `fn` along each element of an argument."""
    def along(a: np.ndarray) -> Any:
        return fn(*_arrays(args[:argnum] + (a,) + args[argnum + 1:]))
    return finite_differences(along, args[argnum], eps)


@pytest.mark.parametrize("group", range(len(GROUPS)), ids=GROUP_IDS)
def test_grad_matches_finite_differences(group, monkeypatch):
    """On the first smooth programs of the group (no kinks for a step to cross), in float64.
    Constants a program makes in float32 (``np.float32``, ``dtype=jnp.float32``) stay so,
    hence the loose tolerance."""
    monkeypatch.setattr(tp.config, "enable_x64", True)
    failures = []
    for case in [c for c in _cases(group) if c.program.smooth][:FD_PER_MODULE]:
        p = case.program
        args = tuple(a.astype(np.float64) for a in p.arguments())
        try:
            got = tp.grad(case.fn, argnums=p.argnum_tuple)(*_arrays(args))
        except Exception as exc:
            failures.append(Failure([case], "eager grad(f) in float64", f"eager {_error(exc)}"))
            continue
        want = tuple(_finite_differences(case.fn, args, i) for i in p.argnum_tuple)
        got = tuple(np.asarray(g, np.float64) for g in got)
        problem = _mismatch(got, want, rtol=1e-3, atol=1e-4)
        if problem is not None:
            failures.append(Failure([case], "eager grad(f) against finite differences",
                                    f"got  (grad) {_show(got)}\n  ({problem})\n"
                                    f"want (finite differences) {_show(want)}"))
    assert not failures, _describe(failures)


@pytest.mark.parametrize("group", range(len(GROUPS)), ids=GROUP_IDS)
def test_eager_matches_jax(group):
    """Values and gradients of the same source run with ``jnp = jax.numpy`` (under one
    ``jax.jit`` per group, to keep JAX's own compiles few). A program JAX rejects is a
    failure too: the generator must only write programs that are valid JAX."""
    jax = pytest.importorskip("jax")
    cases = _cases(group)
    all_args = [c.program.arguments() for c in cases]

    def values_and_grads(jax_cases, all_args):
        return [(c.fn(*args), jax.grad(c.fn, argnums=c.program.argnums)(*args))
                for c, args in zip(jax_cases, all_args)]

    def oracle(some_cases, some_args):
        jax_cases = [_jax_function(jax, c) for c in some_cases]
        return jax.jit(functools.partial(values_and_grads, jax_cases))(some_args)

    failures = []
    try:
        results = oracle(cases, all_args)
    except Exception:  # find the programs JAX rejects, keep the others
        results = []
        for case, args in zip(cases, all_args):
            try:
                results.append(oracle([case], [args])[0])
            except Exception as exc:
                failures.append(Failure([case], "JAX", f"JAX {_error(exc)}"))
                results.append(None)
    for case, args, result in zip(cases, all_args, results):
        if result is None:
            continue
        value, grad = result
        for label, compute, want in (
                ("eager f", lambda: case.fn(*_arrays(args)), value),
                ("eager grad(f)",
                 lambda: tp.grad(case.fn, argnums=case.program.argnums)(*_arrays(args)), grad)):
            try:
                got = compute()
            except Exception as exc:
                failures.append(Failure([case], f"{label} against JAX", f"eager {_error(exc)}"))
                continue
            problem = _mismatch(got, want)
            if problem is not None:
                failures.append(Failure([case], f"{label} against JAX",
                                        f"got  (eager) {_show(got)}\n  ({problem})\n"
                                        f"want (JAX)   {_show(want)}"))
    assert not failures, _describe(failures)


# --------------------------------------------------------------------------------------
# The generator itself


def test_generator_is_deterministic_and_covers_its_tables():
    """Program i of a seed does not depend on how many are generated, and the CI programs
    (whatever seed a fuzz run uses) use every op of the generator's tables that the library
    has (else a change to the generator silently stops testing something; the ones it lacks
    are left out and named in `random_programs.MISSING`)."""
    first = random_programs.generate(DEFAULT_SEED, 7)
    assert random_programs.generate(DEFAULT_SEED, 7) == first
    assert random_programs.generate_many(DEFAULT_SEED, 5, 9)[2] == first
    tags = set().union(*(random_programs.generate(DEFAULT_SEED, i).tags
                         for i in range(DEFAULT_PROGRAMS)))
    wanted = {f"unary:{op.tag}" for op in random_programs.UNARY
              if random_programs.available(op.template)}
    wanted |= {f"binary:{op.tag}:variable" for op in random_programs.BINARY
               if random_programs.available(op.template)}
    wanted |= {"constant_reduction", "scalar_unbroadcast", "where", "clip", "index",
               "index_update:set", "index_update:add", "join:jnp.concatenate", "join:jnp.stack",
               "reduce:sum", "reduce:prod", "reduce:max", "cumulative:jnp.cumsum", "looped"}
    assert not wanted - tags, f"never generated: {sorted(wanted - tags)}"
