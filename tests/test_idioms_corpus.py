"""The idioms corpus (tests/programs/idioms.py) crossed with the transforms and the kinds
of input: ordinary Python around the math -- partials, bound methods, pytree attributes,
comprehensions, builtins, NumPy functions, decorators, in-place updates, a shape-changing
loop -- under grad, jvp, vmap, jacrev and hessian for every kind of input (eagerly), and
under jit and jit(grad) for one kind per program (each costs an IREE compile).

Oracles, none of them the transform under test:
- derivatives: float64 central finite differences of the program run eagerly on float64
  NumPy inputs (`jax_enable_x64` on, restored after); see `fd_*` for the steps;
- vmap: a Python loop over the batch, the program run eagerly on each member;
- values, dtypes, shapes and pytree types: JAX itself where it is installed, running the same
  file with its imports swapped for `jax` (`jax_side`), and skipped where it is not.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import re
import sys
import types
from pathlib import Path

import numpy as np
import pytest

import transpiler as tp
import transpiler.numpy as jnp
from tests.programs import idioms
from tests.programs.idioms import BY_NAME, NAMES
from transpiler import tree_util as tu

# Each input kind says what a leaf of the arguments becomes: NumPy float32 arrays; NumPy
# scalars or Python floats for the 0-d leaves (the arrays stay NumPy); transpiler arrays;
# device arrays (what a jitted function returns); and a mix of kinds within one pytree.
KINDS = ("numpy_f32", "numpy_scalar", "python_float", "tp_array", "device_array", "mixed")
SCALAR_KINDS = ("numpy_scalar", "python_float")
MIXED = ("numpy_f32", "tp_array", "device_array", "numpy_scalar")
BATCH = 3

# Library failures, (transform, program, kind or "*") -> what is wrong. Each is strict: the
# test fails as soon as the library is fixed, so that the entry is removed. "WRONG VALUE"
# marks a silent wrong answer.
XFAIL: dict[tuple[str, str, str], str] = {}


def cases(transform, kinds=KINDS):
    for name in NAMES:
        for kind in kinds:
            reason = XFAIL.get((transform, name, kind)) or XFAIL.get((transform, name, "*"))
            marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
            yield pytest.param(name, kind, id=f"{name}-{kind}", marks=marks)


def one_kind_each(transform, shift):
    """jit compiles: one kind per program, rotating so every kind is compiled somewhere."""
    for i, name in enumerate(NAMES):
        kind = KINDS[(i + shift) % len(KINDS)]
        reason = XFAIL.get((transform, name, kind)) or XFAIL.get((transform, name, "*"))
        marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
        yield pytest.param(name, kind, id=f"{name}-{kind}", marks=marks)


# --- inputs -------------------------------------------------------------------------------

_identity = tp.jit(lambda v: v)


def to_device(a):
    d = _identity(a)
    assert isinstance(d, tp.DeviceArray)
    return d


def leaf_maker(kind, *, for_jax=False):
    """A function turning a base value into a leaf of `kind`; for JAX, transpiler and device
    arrays are the NumPy arrays they hold."""
    counter = itertools.count()

    def leaf(value):
        a = np.asarray(value, np.float32)
        k = MIXED[next(counter) % len(MIXED)] if kind == "mixed" else kind
        if k == "numpy_scalar" and a.ndim == 0:
            return np.float32(a)
        if k == "python_float" and a.ndim == 0:
            return float(a)
        if for_jax or k in ("numpy_f32", "numpy_scalar", "python_float"):
            return a
        return jnp.asarray(a) if k == "tp_array" else to_device(a)
    return leaf


def leaf64(value):
    # float32-representable, so that the float64 oracle sees exactly the library's inputs
    return np.asarray(np.asarray(value, np.float32), np.float64)


def base_args(name):
    return BY_NAME[name].example(leaf64)


def inputs(name, kind):
    return tu.tree_map(leaf_maker(kind), base_args(name))


def tangents_of(base, tree_map=tu.tree_map):
    return tree_map(lambda l: np.cos(np.arange(l.size) + 3.0 * l.ndim).reshape(l.shape),
                       base)


def check_kinds(args, kind):
    """The inputs are what the kind says (guards the harness itself)."""
    leaves = tu.tree_leaves(args)
    want = {"tp_array": tp.Array, "device_array": tp.DeviceArray}.get(kind)
    if want is not None:
        assert all(isinstance(l, want) for l in leaves)
    if kind == "python_float":
        assert any(type(l) is float for l in leaves)
    if kind == "numpy_scalar":
        assert any(type(l) is np.float32 for l in leaves)


def reference(name, vec=False):
    """What the oracles run eagerly: the program, or its `twin` where the program itself runs
    only under a transform (in-place updates)."""
    prog = BY_NAME[name]
    if prog.eager:
        return (prog.vec or prog.fn) if vec else prog.fn
    return (prog.vec_twin or prog.twin) if vec else prog.twin


# --- float64 oracles ----------------------------------------------------------------------

@contextlib.contextmanager
def x64():
    previous = tp.config.jax_enable_x64
    tp.config.update("jax_enable_x64", True)
    try:
        yield
    finally:
        tp.config.update("jax_enable_x64", previous)


class Flat:
    """The program as a function of one float64 vector holding every leaf of its arguments."""

    def __init__(self, fn, base):
        leaves, self.treedef = tu.tree_flatten(base)
        self.shapes = [l.shape for l in leaves]
        self.sizes = [l.size for l in leaves]
        self.v0 = np.concatenate([l.ravel() for l in leaves])
        self.fn = fn

    def args(self, v):
        parts = np.split(v, np.cumsum(self.sizes)[:-1])
        return tu.tree_unflatten(self.treedef, [p.reshape(s) for p, s in zip(parts, self.shapes)])

    def __call__(self, v):
        with x64():
            out = np.asarray(self.fn(*self.args(v)))
        assert out.dtype == np.float64, "the oracle must compute in float64"
        return out


# Central differences in float64. First derivatives, h = 1e-6: truncation ~h^2 = 1e-12,
# rounding ~eps/h = 1e-10. Second derivatives, h = 1e-4: both ~1e-8. Each is far below the
# float32 tolerance (2e-4) the library's float32 results are compared with.
def fd_jacobian(g, v0, h=1e-6):
    cols = []
    for i in range(v0.size):
        e = np.zeros_like(v0)
        e[i] = h
        cols.append(((g(v0 + e) - g(v0 - e)) / (2 * h)).ravel())
    return np.stack(cols, axis=1)


def fd_directional(g, v0, t, h=1e-6):
    return (g(v0 + h * t) - g(v0 - h * t)) / (2 * h)


def fd_hessian(g, v0, h=1e-4):
    n = v0.size
    hess = np.zeros((n, n))
    for i in range(n):
        for j in range(i, n):
            ei, ej = np.zeros(n), np.zeros(n)
            ei[i], ej[j] = h, h
            value = (g(v0 + ei + ej) - g(v0 + ei - ej) - g(v0 - ei + ej) + g(v0 - ei - ej))
            hess[i, j] = hess[j, i] = value / (4 * h * h)
    return hess


@functools.lru_cache(maxsize=None)
def oracle(name, what):
    """The float64 finite differences of a program (the same for every kind of input)."""
    g = Flat(reference(name, vec=what in ("jacobian", "directional", "vec_value")),
             base_args(name))
    if what in ("value", "vec_value"):
        return g(g.v0)
    if what in ("gradient", "jacobian"):
        return fd_jacobian(g, g.v0)
    if what == "directional":
        return fd_directional(g, g.v0, flat_leaves(tangents_of(base_args(name))))
    assert what == "hessian"
    return fd_hessian(g, g.v0)


def leaf_sizes(name):
    return [l.size for l in tu.tree_leaves(base_args(name))]


def assert_close(got, want, rtol=2e-4):
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    assert got.shape == want.shape, (got.shape, want.shape)
    scale = max(1.0, float(np.max(np.abs(want), initial=0.0)))
    np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol * scale)


def flat_leaves(tree):
    return np.concatenate([np.asarray(l, np.float64).ravel() for l in tu.tree_leaves(tree)])


def jacobian_matrix(jac, out_size):
    return np.concatenate([np.asarray(l, np.float64).reshape(out_size, -1)
                           for l in tu.tree_leaves(jac)], axis=1)


def hessian_matrix(hess, sizes):
    """JAX's layout: the rows' leaves (all arguments', in order), each holding the columns'."""
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    out = np.zeros((offsets[-1], offsets[-1]))
    blocks = iter(tu.tree_leaves(hess))
    for r, c in itertools.product(range(len(sizes)), repeat=2):
        block = np.asarray(next(blocks), np.float64).reshape(sizes[r], sizes[c])
        out[offsets[r]:offsets[r + 1], offsets[c]:offsets[c + 1]] = block
    assert next(blocks, None) is None
    return out


def check_like_inputs(grads, args):
    """A gradient has its input's pytree structure, and float32 leaves of its shapes."""
    assert tu.tree_structure(grads) == tu.tree_structure(tuple(args))
    for g, a in zip(tu.tree_leaves(grads), tu.tree_leaves(tuple(args))):
        assert np.shape(g) == np.shape(a)
        assert g.dtype == np.float32, g.dtype


# --- the JAX oracle -----------------------------------------------------------------------

@pytest.fixture(scope="module")
def jax_side():
    return load_jax_side()


@functools.lru_cache(maxsize=None)
def load_jax_side():
    """The corpus on JAX: tests/programs/idioms.py read again with `jax` for `transpiler`,
    or None where JAX is not installed (the JAX checks skip; the rest still run)."""
    try:
        import jax
    except ImportError:
        return None
    path = Path(idioms.__file__)
    source = path.read_text()
    swaps = {"import transpiler as tp\n": "import jax as tp\n",
             "import transpiler.numpy as jnp\n": "import jax.numpy as jnp\n"}
    for old, new in swaps.items():
        assert source.count(old) == 1, old
        source = source.replace(old, new)
    module = types.ModuleType("tests.programs.idioms_on_jax")
    module.__file__ = str(path)
    sys.modules[module.__name__] = module      # dataclasses look their module up
    exec(compile(source, str(path), "exec"), module.__dict__)
    return types.SimpleNamespace(jax=jax, by_name=module.BY_NAME)


def jax_program(jax_side, name, vec=False):
    prog = jax_side.by_name[name]
    if vec:
        return prog.vec_twin or prog.vec or prog.twin or prog.fn
    return prog.twin or prog.fn


def jax_inputs(jax_side, name, kind):
    base = jax_side.by_name[name].example(leaf64)
    return base, jax_side.jax.tree_util.tree_map(leaf_maker(kind, for_jax=True), base)


_JAX_ANSWERS: dict = {}


def jax_answer(jax_side, transform, name, kind, fn, args):
    """JAX's answer, compiled by jax.jit (its op-by-op mode compiles every primitive, ~10 s
    for a hessian), and kept for the other kinds: JAX sees a transpiler or device array as
    the NumPy array it holds, and a NumPy scalar or a Python float (weakly typed) as a
    float32 0-d array in these programs, whose results are float32 either way. Under vmap
    the scalar kinds leave their 0-d leaves unmapped, so they have an answer of their own."""
    key = (transform, name, transform == "vmap" and kind in SCALAR_KINDS)
    if key not in _JAX_ANSWERS:
        _JAX_ANSWERS[key] = jax_side.jax.jit(fn)(*args)
    return _JAX_ANSWERS[key]


def signature(tree):
    """Containers by type name, leaves by shape and dtype: comparable across libraries."""
    if isinstance(tree, tuple) and hasattr(tree, "_fields"):
        return (type(tree).__name__, tuple(signature(c) for c in tree))
    if isinstance(tree, (tuple, list)):
        return (type(tree).__name__, [signature(c) for c in tree])
    if isinstance(tree, dict):
        return ("dict", {k: signature(tree[k]) for k in sorted(tree)})
    if type(tree).__name__ in ("Linear", "Affine"):
        return (type(tree).__name__, {k: signature(v) for k, v in sorted(vars(tree).items())})
    dtype = tree.dtype if hasattr(tree, "dtype") else np.asarray(tree).dtype
    return (tuple(np.shape(tree)), str(np.dtype(dtype)))


def check_against_jax(got, want):
    # both in float32: a few ulps of the operands become 1e-4 of a small derivative
    assert signature(got) == signature(want)
    for g, w in zip(tu.tree_leaves(got), want_leaves(want)):
        assert_close(g, np.asarray(w), rtol=1e-4)


def want_leaves(tree):
    if isinstance(tree, tuple) and hasattr(tree, "_fields") or isinstance(tree, (tuple, list)):
        return [l for c in tree for l in want_leaves(c)]
    if isinstance(tree, dict):
        return [l for k in sorted(tree) for l in want_leaves(tree[k])]
    if type(tree).__name__ in ("Linear", "Affine"):
        return [l for c in vars(tree).values() for l in want_leaves(c)]
    return [tree]


def check_gradient(grads, args, name, kind, jax_side):
    """A gradient (eager or jitted) against the float64 oracle and against JAX's."""
    check_like_inputs(grads, args)
    assert_close(flat_leaves(grads), oracle(name, "gradient")[0])
    if jax_side is not None:
        _, jargs = jax_inputs(jax_side, name, kind)
        argnums = tuple(range(len(args)))
        fn = jax_side.jax.grad(jax_program(jax_side, name), argnums=argnums)
        check_against_jax(grads, jax_answer(jax_side, "grad", name, kind, fn, jargs))


# --- eager transforms, every kind of input -----------------------------------------------

@pytest.mark.parametrize("name,kind", list(cases("grad")))
def test_grad(name, kind, jax_side):
    args = inputs(name, kind)
    check_kinds(args, kind)
    argnums = tuple(range(len(args)))
    grads = tp.grad(BY_NAME[name].fn, argnums=argnums)(*args)
    check_gradient(grads, args, name, kind, jax_side)


@pytest.mark.parametrize("name,kind", list(cases("jvp")))
def test_jvp(name, kind, jax_side):
    prog = BY_NAME[name]
    args = inputs(name, kind)
    base = base_args(name)
    tangents = tu.tree_map(leaf_maker(kind), tangents_of(base))
    primal, tangent = tp.jvp(prog.vec or prog.fn, tuple(args), tuple(tangents))
    assert primal.dtype == tangent.dtype == np.float32
    assert_close(primal, oracle(name, "vec_value"))
    assert_close(tangent, oracle(name, "directional"))
    if jax_side is not None:
        jbase, jargs = jax_inputs(jax_side, name, kind)
        tmap = jax_side.jax.tree_util.tree_map
        jt = tmap(leaf_maker(kind, for_jax=True), tangents_of(jbase, tmap))
        program = jax_program(jax_side, name, vec=True)
        want = jax_answer(jax_side, "jvp", name, kind,
                          lambda p, t: jax_side.jax.jvp(program, p, t), (tuple(jargs), tuple(jt)))
        check_against_jax((primal, tangent), want)


@pytest.mark.parametrize("name,kind", list(cases("jacrev")))
def test_jacrev(name, kind, jax_side):
    prog = BY_NAME[name]
    args = inputs(name, kind)
    argnums = tuple(range(len(args)))
    jac = tp.jacrev(prog.vec or prog.fn, argnums=argnums)(*args)
    want = oracle(name, "jacobian")
    assert_close(jacobian_matrix(jac, want.shape[0]), want)
    if jax_side is not None:
        _, jargs = jax_inputs(jax_side, name, kind)
        fn = jax_side.jax.jacrev(jax_program(jax_side, name, vec=True), argnums=argnums)
        check_against_jax(jac, jax_answer(jax_side, "jacrev", name, kind, fn, jargs))


@pytest.mark.parametrize("name,kind", list(cases("hessian")))
def test_hessian(name, kind, jax_side):
    args = inputs(name, kind)
    argnums = tuple(range(len(args)))
    hess = tp.hessian(BY_NAME[name].fn, argnums=argnums)(*args)
    assert_close(hessian_matrix(hess, leaf_sizes(name)), oracle(name, "hessian"), rtol=5e-4)
    if jax_side is not None:
        _, jargs = jax_inputs(jax_side, name, kind)
        fn = jax_side.jax.hessian(jax_program(jax_side, name), argnums=argnums)
        check_against_jax(hess, jax_answer(jax_side, "hessian", name, kind, fn, jargs))


def batched(base, kind, tree_map=tu.tree_map):
    """Stack BATCH members of each leaf (0-d leaves of a scalar kind stay unmapped, as a
    Python float cannot carry a batch axis); returns the batched base and in_axes."""
    def mapped(l):
        return not (kind in SCALAR_KINDS and l.ndim == 0)
    stacked = tree_map(
        lambda l: np.stack([l * (1 + 0.15 * k) + 0.1 * k for k in range(BATCH)]) if mapped(l)
        else l, base)
    return stacked, tree_map(mapped, base)


def axes_of(mapped, tree_map, tree_leaves):
    """The in_axes of one argument: 0 or None when all its leaves agree (the common
    spelling), else a full tree of them."""
    flags = set(tree_leaves(mapped))
    if len(flags) == 1:
        return 0 if flags.pop() else None
    return tree_map(lambda m: 0 if m else None, mapped)


def member(stacked, mapped, k):
    return tu.tree_map(lambda l, m: l[k] if m else l, stacked, mapped)


@pytest.mark.parametrize("name,kind", list(cases("vmap")))
def test_vmap(name, kind, jax_side):
    stacked, mapped = batched(base_args(name), kind)
    args = tu.tree_map(leaf_maker(kind), stacked)
    in_axes = tuple(axes_of(m, tu.tree_map, tu.tree_leaves) for m in mapped)
    got = tp.vmap(BY_NAME[name].fn, in_axes=in_axes)(*args)
    ref = reference(name)
    loop = [ref(*tu.tree_map(leaf_maker("numpy_f32"), member(stacked, mapped, k)))
            for k in range(BATCH)]
    assert got.dtype == np.float32 and got.shape == (BATCH,)
    assert_close(got, np.stack([np.asarray(v) for v in loop]), rtol=1e-5)
    if jax_side is not None:
        tmap = jax_side.jax.tree_util.tree_map
        jstacked, jmapped = batched(jax_side.by_name[name].example(leaf64), kind, tmap)
        jargs = tmap(leaf_maker(kind, for_jax=True), jstacked)
        jaxes = tuple(axes_of(m, tmap, jax_side.jax.tree_util.tree_leaves) for m in jmapped)
        fn = jax_side.jax.vmap(jax_program(jax_side, name), in_axes=jaxes)
        check_against_jax(got, jax_answer(jax_side, "vmap", name, kind, fn, jargs))


# --- jit and jit(grad): one kind per program --------------------------------------------

def check_jit_refuses(name, jitted, args):
    """Python's control flow on traced values, refused under jit as JAX refuses it: an error
    at the program's line, never an answer."""
    with pytest.raises(Exception, match=re.escape(BY_NAME[name].jit_error)) as info:
        jitted(*args)
    assert "idioms.py:" in str(info.value)


@pytest.mark.parametrize("name,kind", list(one_kind_each("jit", 0)))
def test_jit(name, kind, jax_side):
    args = inputs(name, kind)
    if BY_NAME[name].jit_error:
        check_jit_refuses(name, tp.jit(BY_NAME[name].fn), args)
        return
    got = tp.jit(BY_NAME[name].fn)(*args)
    assert isinstance(got, tp.DeviceArray)
    assert_close(got, oracle(name, "value"), rtol=1e-5)
    if jax_side is not None:
        _, jargs = jax_inputs(jax_side, name, kind)
        check_against_jax(got, jax_answer(jax_side, "jit", name, kind,
                                          jax_program(jax_side, name), jargs))


@pytest.mark.parametrize("name,kind", list(one_kind_each("jit_grad", 3)))
def test_jit_grad(name, kind, jax_side):
    args = inputs(name, kind)
    argnums = tuple(range(len(args)))
    if BY_NAME[name].jit_error:
        check_jit_refuses(name, tp.jit(tp.grad(BY_NAME[name].fn, argnums=argnums)), args)
        return
    grads = tp.jit(tp.grad(BY_NAME[name].fn, argnums=argnums))(*args)
    check_gradient(grads, args, name, kind, jax_side)
