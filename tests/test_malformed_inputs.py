"""Malformed inputs: a corpus of user mistakes, each answered by a clear error at the user's
line. Unsupported syntax inside transformed functions, bad arguments to grad/jvp/jacrev,
jit arguments that should have been static, bad in_axes/out_axes for vmap and pmap, shape
and dtype errors in jnp calls, bad command lines (one error line, nothing half-written) and
damaged caches (a warning, then the right answer). Each case asserts the exception type and
that the message names this file at the line that holds the mistake (``# @tag`` marks it)."""

from __future__ import annotations

import contextlib
import io
import json
import logging
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

import transpiler.cli
import transpiler as tp
import transpiler.numpy as jnp
from transpiler import lax
from transpiler.cache_files import sealed, unsealed
from transpiler.errors import DTypeError, ShapeError, TracerError, TranspileError

THIS = Path(__file__).resolve()
_LINES = THIS.read_text().splitlines()

X = np.array([0.5, -1.0, 2.0], np.float32)
XB = np.ones((2, 3), np.float32)
M34 = np.ones((3, 4), np.float32)


def line_of(tag: str) -> int:
    hits = [n for n, text in enumerate(_LINES, 1) if text.rstrip().endswith(f"# @{tag}")]
    assert len(hits) == 1, (tag, hits)
    return hits[0]


def assert_at(err: BaseException, tag: str) -> None:
    """`err` is a TranspileError whose message names this file at the line tagged `tag`."""
    assert isinstance(err, TranspileError), repr(err)
    assert f"{__file__}:{line_of(tag)}:" in str(err), str(err)


def check(case: tuple) -> None:
    """A case (tag, exception type, message pattern, what raises it): the exception is that
    type, says that, and names the tagged line of this file."""
    tag, error, message, thunk = case
    with pytest.raises(error, match=message) as info:
        thunk()
    assert_at(info.value, tag)


def ids(cases: list) -> list[str]:
    return [case[0] for case in cases]


# --- unsupported syntax inside transformed functions ---------------------------------------------

G = 1.0


def s_try(x):
    try:  # @s-try
        y = x * 2.0
    except ValueError:
        y = x
    return jnp.sum(y)


def s_with(x):
    with open(__file__) as handle:  # @s-with
        handle.read()
    return jnp.sum(x)


def s_yield(x):
    yield jnp.sum(x)  # @s-yield


def s_yield_from(x):
    yield from [jnp.sum(x)]  # @s-yield-from


def s_global(x):
    global G  # @s-global
    return jnp.sum(x) * G


def s_nonlocal(x):
    y = x

    def double():
        nonlocal y  # @s-nonlocal
        y = y * 2.0
    double()
    return jnp.sum(y)


async def s_async(x):  # @s-async
    return jnp.sum(x)


def s_walrus(x):
    y = (z := x * 2.0)  # @s-walrus
    return jnp.sum(y + z)


def s_walrus_in_comprehension(x):
    ys = [(z := x * k) for k in range(2)]  # @s-walrus-comp
    return jnp.sum(ys[0])


def s_match(x):
    match x.ndim:  # @s-match
        case 1:
            y = x
        case _:
            y = -x
    return jnp.sum(y)


def s_class(x):
    class Box:  # @s-class
        pass
    return jnp.sum(x)


def s_del(x):
    y = x * 2.0
    del y  # @s-del
    return jnp.sum(x)


def s_import(x):
    import math  # @s-import
    return jnp.sum(x) * math.pi


def s_import_from(x):
    from math import pi  # @s-import-from
    return jnp.sum(x) * pi


def s_starred(x):
    (a, *rest), b = (x, x), x  # (nested; one level is written out) # @s-starred
    return jnp.sum(a)


def s_starred_for(x):
    for a, *rest in [(x, x)]:  # @s-starred-for
        pass
    return jnp.sum(x)


class Holder:
    value = 1.0


def s_attribute(x):
    h = Holder()
    h.value = x  # @s-attribute
    return jnp.sum(h.value)


def s_attribute_aug(x):
    h = Holder()
    h.value += 1.0  # @s-attribute-aug
    return jnp.sum(x)


def s_attribute_ann(x):
    h = Holder()
    h.value: float = 2.0  # @s-attribute-ann
    return jnp.sum(x)


def s_decorated_nested(x):
    @staticmethod  # @s-decorator
    def double(v):
        return v * 2.0
    return jnp.sum(double(x))


def s_try_star(x):
    try:  # @s-try-star
        y = x
    except* ValueError:
        y = -x
    return jnp.sum(y)


def s_update_argument(x):
    x[0] = 1.0  # @s-update-arg
    return jnp.sum(x)


def s_aug_update_argument(x):
    x[0] += 1.0  # @s-aug-update-arg
    return jnp.sum(x)


def s_update_list(x):
    parts = [x, x]
    parts[0] = x * 2.0  # @s-update-list
    return jnp.sum(parts[0])


def s_update_shared(x):
    y = x * 2.0
    z = y
    y[0] = 1.0  # @s-update-shared
    return jnp.sum(z)


def s_return_in_loop(x):
    for k in range(3):
        if k == 1:
            return jnp.sum(x)  # @s-return-in-loop
    return jnp.sum(x * 2.0)


def s_eval(x):
    return eval("jnp.sum(x)")  # @s-eval


def s_exec(x):
    exec("y = 1")  # @s-exec
    return jnp.sum(x)


def s_locals(x):
    names = locals()  # @s-locals
    return jnp.sum(names["x"])


def s_globals(x):
    return jnp.sum(x) * globals()["G"]  # @s-globals


def s_raise(x):
    if x.ndim != 1:
        raise ValueError("a vector please")  # @s-raise
    return jnp.sum(x)


TRANSFORMS = {
    "grad": lambda f: tp.grad(f)(X),
    "value_and_grad": lambda f: tp.value_and_grad(f)(X),
    "vjp": lambda f: tp.vjp(f, X),
    "jvp": lambda f: tp.jvp(f, (X,), (X,)),
    "linearize": lambda f: tp.linearize(f, X),
    "jacrev": lambda f: tp.jacrev(f)(X),
    "jacfwd": lambda f: tp.jacfwd(f)(X),
    "hessian": lambda f: tp.hessian(f)(X),
    "vmap": lambda f: tp.vmap(f)(XB),
}

SYNTAX = [  # (tag, function, transform, message)
    ("s-try", s_try, "grad", r"`try` statements are not supported"),
    ("s-with", s_with, "vmap", r"`with` statements are not supported"),
    ("s-yield", s_yield, "jvp", r"generators \(`yield`\) are not supported"),
    ("s-yield-from", s_yield_from, "value_and_grad", r"generators \(`yield`\)"),
    ("s-global", s_global, "jacrev", r"`global` declarations are not supported"),
    ("s-nonlocal", s_nonlocal, "grad", r"`nonlocal` declarations are not supported"),
    ("s-async", s_async, "vmap", r"`async def` functions are not supported"),
    ("s-walrus", s_walrus, "hessian", r"assignment expressions \(`:=`\)"),
    ("s-walrus-comp", s_walrus_in_comprehension, "grad", r"assignment expressions \(`:=`\)"),
    ("s-match", s_match, "vmap", r"`match` statements are not supported"),
    ("s-class", s_class, "jvp", r"class definitions inside a transformed function"),
    ("s-del", s_del, "grad", r"`del` is not supported"),
    ("s-import", s_import, "vmap", r"`import` inside a transformed function"),
    ("s-import-from", s_import_from, "jacfwd", r"`import` inside a transformed function"),
    ("s-starred", s_starred, "grad", r"starred assignment targets"),
    ("s-starred-for", s_starred_for, "vmap", r"starred assignment targets"),
    ("s-attribute", s_attribute, "jvp", r"assignment to an attribute is not supported"),
    ("s-attribute-aug", s_attribute_aug, "grad", r"assignment to an attribute"),
    ("s-attribute-ann", s_attribute_ann, "linearize", r"assignment to an attribute"),
    ("s-decorator", s_decorated_nested, "grad", r"decorators on nested functions"),
    ("s-try-star", s_try_star, "vmap", r"`try`/`except\*` statements are not supported"),
    ("s-update-arg", s_update_argument, "grad", r"(?s)in-place update of an element of `x`"
     r".*x = x\.at\[0\]\.set\(value\)"),
    ("s-aug-update-arg", s_aug_update_argument, "jvp", r"(?s)in-place update.*\.at\[0\]\.add"),
    ("s-update-list", s_update_list, "vmap", r"in-place update of an element of `parts`"),
    ("s-update-shared", s_update_shared, "grad", r"in-place update of an element of `y`"),
    ("s-return-in-loop", s_return_in_loop, "vjp", r"`return` inside a loop is not supported"),
    ("s-eval", s_eval, "vmap", r"`eval\(\)` reads variables by name"),
    ("s-exec", s_exec, "jvp", r"`exec\(\)` reads variables by name"),
    ("s-locals", s_locals, "grad", r"`locals\(\)` reads variables by name"),
    ("s-globals", s_globals, "vmap", r"`globals\(\)` reads variables by name"),
    ("s-raise", s_raise, "grad", r"`raise` statements are not supported"),
]


@pytest.mark.parametrize("tag, fn, transform, message", SYNTAX, ids=ids(SYNTAX))
def test_unsupported_syntax_is_rejected_at_its_line(tag, fn, transform, message):
    with pytest.raises(TranspileError, match=message) as info:
        TRANSFORMS[transform](fn)
    assert_at(info.value, tag)


# --- bad arguments to the transforms -------------------------------------------------------------

def total(x, y=1.0):
    return jnp.sum(x * y)


def doubled(x):
    return x * 2.0


def pair_out(x):
    return jnp.sum(x), jnp.sum(x * 2.0)


def list_out(x):
    return [jnp.sum(x)]


def index_out(x):
    return jnp.argmax(x)


def three_out(x):
    return jnp.sum(x), 1, 2


@tp.custom_vjp
def clipped_sin(x):
    return jnp.sin(x)


def clipped_sin_fwd(x):
    return jnp.sin(x), x


def clipped_sin_bwd(residual, g):  # @a-custom-bwd
    return g, g  # one cotangent too many


clipped_sin.defvjp(clipped_sin_fwd, clipped_sin_bwd)


def uses_clipped_sin(x):
    return jnp.sum(clipped_sin(x))


REAL = r"requires floating or complex inputs"
SCALAR = r"grad requires a real scalar output"
ARGS = [  # (tag, exception, message pattern, what raises it)
    ("a-int-array", TranspileError, REAL + r", but argument 0 has dtype int32",
     lambda: tp.grad(total)(np.arange(3))),  # @a-int-array
    ("a-int-scalar", TranspileError, REAL,
     lambda: tp.grad(total)(3)),  # @a-int-scalar
    ("a-bool", TranspileError, r"argument 0 has dtype bool",
     lambda: tp.grad(total)(np.array([True]))),  # @a-bool
    ("a-uint8", TranspileError, r"argument 0 has dtype uint8",
     lambda: tp.grad(total)(np.ones(3, np.uint8))),  # @a-uint8
    ("a-argnums-int", TranspileError, r"argument 1 has dtype int32",
     lambda: tp.grad(total, argnums=1)(X, 3)),  # @a-argnums-int
    ("a-argnums-tuple", TranspileError, r"argument 1 has dtype int32",
     lambda: tp.grad(total, argnums=(0, 1))(X, np.int32(2))),  # @a-argnums-tuple
    ("a-dict-int-leaf", TranspileError, REAL,
     lambda: tp.grad(lambda p: total(p["w"]))({"w": np.arange(3)})),  # @a-dict-int-leaf
    ("a-vag-int", TranspileError, REAL,
     lambda: tp.value_and_grad(total)(np.arange(3))),  # @a-vag-int
    ("a-string", DTypeError, r"requires ndarray or scalar arguments, got str at position 0",
     lambda: tp.grad(total)("abc")),  # @a-string
    ("a-jvp-string", DTypeError, r"got str at position 0",
     lambda: tp.jvp(total, ("abc",), ("abc",))),  # @a-jvp-string
    ("a-jvp-tangent-string", DTypeError, r"got str at position 0",
     lambda: tp.jvp(total, (X,), ("abc",))),  # @a-jvp-tangent-string
    ("a-jvp-int", TranspileError, r"primal 0 has dtype int32; forward mode differentiates floating",
     lambda: tp.jvp(total, (np.arange(3),), (np.arange(3),))),  # @a-jvp-int
    ("a-linearize-int", TranspileError, r"primal 0 has dtype int32",
     lambda: tp.linearize(total, np.arange(3))),  # @a-linearize-int
    ("a-jacrev-string", DTypeError, r"got str at position 0",
     lambda: tp.jacrev(doubled)("abc")),  # @a-jacrev-string
    ("a-vector-out", TranspileError, SCALAR + r", got float32\[3\]",
     lambda: tp.grad(doubled)(X)),  # @a-vector-out
    ("a-matrix-out", TranspileError, SCALAR + r", got float32\[3,3\]",
     lambda: tp.grad(lambda m: m @ m.T)(M34)),  # @a-matrix-out
    ("a-vag-vector-out", TranspileError, SCALAR,
     lambda: tp.value_and_grad(doubled)(X)),  # @a-vag-vector-out
    ("a-int-out", TranspileError, SCALAR + r", got int32\[\]",
     lambda: tp.grad(index_out)(X)),  # @a-int-out
    ("a-tuple-out", TranspileError,
     r"grad requires the function to return a scalar array, got tuple",
     lambda: tp.grad(pair_out)(X)),  # @a-tuple-out
    ("a-list-out", TranspileError, r"return a scalar array, got list",
     lambda: tp.grad(list_out)(X)),  # @a-list-out
    ("a-has-aux-single", TranspileError,
     r"with has_aux=True the function must return a pair \(output, aux\), got Array",
     lambda: tp.grad(total, has_aux=True)(X)),  # @a-has-aux-single
    ("a-vag-has-aux-single", TranspileError, r"must return a pair \(output, aux\)",
     lambda: tp.value_and_grad(total, has_aux=True)(X)),  # @a-vag-has-aux-single
    ("a-has-aux-triple", TranspileError, r"must return a pair \(output, aux\), got tuple of 3",
     lambda: tp.grad(three_out, has_aux=True)(X)),  # @a-has-aux-triple
    ("a-custom-bwd", TranspileError,
     r"bwd rule clipped_sin_bwd returned 2 cotangents, but clipped_sin has 1",
     lambda: tp.grad(uses_clipped_sin)(X)),
]


@pytest.mark.parametrize("case", ARGS, ids=ids(ARGS))
def test_bad_arguments_to_transforms(case):
    check(case)


# --- jit: arguments that should be static --------------------------------------------------------

def scale_by(x, n):
    return x * n


def reshape_by(x, n):
    return x.reshape(n, -1)  # @j-reshape-traced


def squared(x):
    return x ** 2  # @j-list-argument


class Scaler:
    def __init__(self):
        self.w = 2.0

    @tp.jit
    def apply(self, x):
        return self.w * x


def repeat_list(x, n):
    return [x] * n  # @j-list-times-traced


def head(x, n):
    return x[:n]  # @j-slice-traced


def as_float(x):
    return float(x) * 2.0  # @j-float


def as_item(x):
    return x.item()  # @j-item


def as_list(x):
    return x.tolist()  # @j-tolist


def as_numpy(x):
    return np.asarray(x) * 2.0  # @j-numpy


def as_bool(x):
    return bool(x > 0)  # @j-bool


def asserts_positive(x):
    assert jnp.sum(x) > 0  # @j-assert
    return x


def collects(x, n):
    out = []
    i = 0
    while i < n:  # @j-append
        out.append(x)
        i = i + 1
    return out


JIT = [
    ("j-static-out-of-range", ValueError,
     r"static_argnums=\(5,\), but scale_by only accepts 2 positional arguments",
     lambda: tp.jit(scale_by, static_argnums=5)),  # @j-static-out-of-range
    ("j-static-negative", ValueError, r"static_argnums=\(-3,\)",
     lambda: tp.jit(scale_by, static_argnums=-3)),  # @j-static-negative
    ("j-static-one-of-two", ValueError, r"only accepts 2 positional arguments",
     lambda: tp.jit(scale_by, static_argnums=(1, 2))),  # @j-static-one-of-two
    ("j-string-not-static", TypeError, r"jit\(scale_by\): argument `n` is not an array: got str",
     lambda: tp.jit(scale_by)(X, "twice")),  # @j-string-not-static
    ("j-object-not-static", TypeError, r"argument `n` is not an array: got object",
     lambda: tp.jit(scale_by)(X, object())),  # @j-object-not-static
    ("j-list-argument", TypeError, r"got `x` as a list, which jit \(like JAX\) takes as a "
     r"pytree of separate values(?s:.*)jnp\.asarray\(x\)",
     lambda: tp.jit(squared)([1.0, 2.0])),
    ("j-method-self", TypeError, r"(?s)jit\(apply\): argument `self` is not an array: got "
     r"Scaler.*a jitted method gets `self` as an argument",
     lambda: Scaler().apply(X)),  # @j-method-self
    ("j-lower-string", TypeError, r"jit\(doubled\): argument `x` is not an array: got str",
     lambda: tp.jit(doubled).lower("abc")),  # @j-lower-string
    ("j-reshape-traced", TracerError,
     r"(?s)int\(\) on a traced value \(int32\[\]\) inside jit.*make it static",
     lambda: tp.jit(reshape_by)(X, 3)),
    ("j-list-times-traced", TracerError, r"(?s)Python index on a traced value.*static_argnums",
     lambda: tp.jit(repeat_list)(X, 3)),
    ("j-slice-traced", IndexError, r"slice bounds must be static Python ints inside jit",
     lambda: tp.jit(head)(X, 2)),
    ("j-float", TracerError, r"float\(\) on a traced value",
     lambda: tp.jit(as_float)(np.float32(1.0))),
    ("j-item", TracerError, r"\.item\(\) on a traced value",
     lambda: tp.jit(as_item)(np.float32(1.0))),
    ("j-tolist", TracerError, r"\.tolist\(\) on a traced value",
     lambda: tp.jit(as_list)(X)),
    ("j-numpy", TracerError, r"conversion to a NumPy array on a traced value",
     lambda: tp.jit(as_numpy)(X)),
    ("j-bool", TracerError, r"\(bool\(\)\) on a traced value \(bool\[3\]\) inside jit",
     lambda: tp.jit(as_bool)(X)),
    ("j-assert", TracerError, r"on a traced value \(bool\[\]\)",
     lambda: tp.jit(asserts_positive)(X)),
    ("j-append", TranspileError,
     r"(?s)`out\.append\(\.\.\.\)` inside `while` on a traced value.*lax\.scan",
     lambda: tp.jit(collects)(X, np.int32(3))),
]


@pytest.mark.parametrize("case", JIT, ids=ids(JIT))
def test_jit_arguments_that_must_be_static(case):
    check(case)


# --- vmap and pmap: bad in_axes / out_axes -------------------------------------------------------

def times(x, y):
    return x * y


def twice(x):
    return x * 2.0


def two_outputs(x):
    return x, x * 2.0


def branches_on_batch(x):
    if jnp.sum(x) > 0:  # @v-python-if
        return x
    return -x


def psum_other_axis(x):
    return lax.psum(x, "j")  # @v-unbound-axis


P24 = np.ones((2, 4), np.float32)
VMAP = [
    ("v-in-axes-long", TranspileError,
     r"in_axes has 3 entries but the function was called with 2 positional",
     lambda: tp.vmap(times, in_axes=(0, 0, 0))(M34, M34)),  # @v-in-axes-long
    ("v-in-axes-short", TranspileError, r"in_axes has 1 entries",
     lambda: tp.vmap(times, in_axes=(0,))(M34, M34)),  # @v-in-axes-short
    ("v-in-axis-range", TranspileError,
     r"in_axes 2 is out of range for argument `x` of shape \(3, 4\) \(rank 2\)",
     lambda: tp.vmap(twice, in_axes=2)(M34)),  # @v-in-axis-range
    ("v-in-axis-negative", TranspileError, r"in_axes -3 is out of range",
     lambda: tp.vmap(twice, in_axes=-3)(M34)),  # @v-in-axis-negative
    ("v-scalar-mapped", TranspileError,
     r"in_axes 0 is out of range for argument `x` of shape \(\) \(rank 0\)",
     lambda: tp.vmap(twice)(np.float32(1.0))),  # @v-scalar-mapped
    ("v-nested-too-deep", TranspileError, r"out of range for argument `x` of shape \(\)",
     lambda: tp.vmap(tp.vmap(twice))(X)),  # @v-nested-too-deep
    ("v-nothing-mapped", TranspileError,
     r"no argument is mapped \(in_axes None\) and no axis_size was given",
     lambda: tp.vmap(twice, in_axes=None)(M34)),  # @v-nothing-mapped
    ("v-nothing-mapped-tuple", TranspileError, r"no argument is mapped \(in_axes \(None, None\)\)",
     lambda: tp.vmap(times, in_axes=(None, None))(M34, M34)),  # @v-nothing-mapped-tuple
    ("v-no-arguments", TranspileError, r"no argument is mapped",
     lambda: tp.vmap(twice)()),  # @v-no-arguments
    ("v-sizes-differ", TranspileError,
     r"mapped axes have different sizes: argument `x` axis 0 has size 3; "
     r"argument `y` axis 0 has size 5",
     lambda: tp.vmap(times)(M34, np.ones((5, 4), np.float32))),  # @v-sizes-differ
    ("v-sizes-differ-axes", TranspileError, r"argument `y` axis 1 has size 4",
     lambda: tp.vmap(times, in_axes=(0, 1))(M34, M34)),  # @v-sizes-differ-axes
    ("v-sizes-differ-list", TranspileError, r"different sizes",
     lambda: tp.vmap(jnp.sum)([M34, P24])),  # @v-sizes-differ-list
    ("v-sizes-differ-keyword", TranspileError, r"keyword argument `y` axis 0 has size 2",
     lambda: tp.vmap(times)(M34, y=P24)),  # @v-sizes-differ-keyword
    ("v-axis-size-differs", TranspileError, r"has size 3; axis_size=7",
     lambda: tp.vmap(twice, axis_size=7)(M34)),  # @v-axis-size-differs
    ("v-out-axis-range", TranspileError,
     r"out_axes 3 is out of range for the output \(rank 2 with the batch axis\)",
     lambda: tp.vmap(twice, out_axes=3)(M34)),  # @v-out-axis-range
    ("v-out-axis-negative", TranspileError, r"out_axes -4 is out of range",
     lambda: tp.vmap(twice, out_axes=-4)(M34)),  # @v-out-axis-negative
    ("v-out-axis-none", TranspileError,
     r"the output differs across the batch, but its out_axes is None",
     lambda: tp.vmap(twice, out_axes=None)(M34)),  # @v-out-axis-none
    ("v-out-axes-structure", TranspileError,
     r"out_axes \(0, 0, 0\) does not match the structure of the output",
     lambda: tp.vmap(two_outputs, out_axes=(0, 0, 0))(M34)),  # @v-out-axes-structure
    ("v-out-axes-leaf-range", TranspileError, r"out_axes 5 is out of range for the output\[1\]",
     lambda: tp.vmap(two_outputs, out_axes=(0, 5))(M34)),  # @v-out-axes-leaf-range
    ("v-dict-keys", TranspileError,
     r"is a dict with keys \['a'\], but argument `x` is a dict with keys \['b'\]",
     lambda: tp.vmap(twice, in_axes=({"a": 0},))({"b": M34})),  # @v-dict-keys
    ("v-dict-for-array", TranspileError, r"in_axes for argument `x` is a dict",
     lambda: tp.vmap(twice, in_axes=({"a": 0},))(M34)),  # @v-dict-for-array
    ("v-tuple-for-array", TranspileError, r"in_axes for argument `x` is a tuple of length 2",
     lambda: tp.vmap(twice, in_axes=((0, 0),))(M34)),  # @v-tuple-for-array
    ("v-string-mapped", TranspileError,
     r"argument `x` is mapped \(axis 0\) but is a str, not an array",
     lambda: tp.vmap(twice)("abc")),  # @v-string-mapped
    ("v-python-if", TranspileError, r"tests a value that differs across the vmapped batch",
     lambda: tp.vmap(branches_on_batch)(M34)),
    ("v-unbound-axis", TranspileError,
     r"unbound axis name 'j': the enclosing vmap/pmap bind \['i'\]",
     lambda: tp.vmap(psum_other_axis, axis_name="i")(M34)),
    ("v-pmap-in-axes-long", TranspileError, r"pmap\(times\): in_axes has 3 entries",
     lambda: tp.pmap(times, in_axes=(0, 0, 0))(P24, P24)),  # @v-pmap-in-axes-long
    ("v-pmap-sizes-differ", TranspileError, r"pmap\(times\): the mapped axes have different sizes",
     lambda: tp.pmap(times)(P24, M34)),  # @v-pmap-sizes-differ
    ("v-pmap-in-axis-range", TranspileError,
     r"in_axes 3 is out of range for argument `x` of shape \(2, 4\)",
     lambda: tp.pmap(twice, in_axes=3)(P24)),  # @v-pmap-in-axis-range
]


@pytest.mark.parametrize("case", VMAP, ids=ids(VMAP))
def test_bad_batch_axes(case):
    check(case)


# --- shape and dtype errors in jnp calls ---------------------------------------------------------

A23, B45 = jnp.ones((2, 3)), jnp.ones((4, 5))
V3, V4, I3 = jnp.ones(3), jnp.ones(4), jnp.arange(3)


def jit_reshape(x):
    return jnp.reshape(x, (7,))  # @n-jit-reshape


def grad_broadcast(x):
    return jnp.sum(x + jnp.ones(5))  # @n-grad-broadcast


def vmap_matmul(x):
    return x @ jnp.ones((5, 2))  # @n-vmap-matmul


def jvp_axis(x):
    return jnp.mean(x, axis=3)  # @n-jvp-axis


def cond_shapes(x):
    return lax.cond(jnp.sum(x) > 0, lambda v: v, lambda v: v[:2], x)  # @n-cond-shapes


def cond_vector_pred(x):
    return lax.cond(x > 0, lambda v: v, lambda v: -v, x)  # @n-cond-vector-pred


def loop_grows(x):
    return lax.fori_loop(0, 3, lambda i, c: jnp.concatenate([c, c]), x)  # @n-loop-grows


MATMUL = r"contracting dimensions differ"
OUT_OF_BOUNDS = r"is out of bounds for an array of rank"
SHAPES = [
    ("n-matmul", ShapeError,
     r"matmul: contracting dimensions differ: lhs float32\[2,3\] dim 1 \(3\) vs rhs "
     r"float32\[4,5\] dim 0 \(4\)",
     lambda: A23 @ B45),  # @n-matmul
    ("n-matmul-scalar", ShapeError, r"operand 1 must have at least 1 dimension",
     lambda: jnp.matmul(A23, 2.0)),  # @n-matmul-scalar
    ("n-einsum-sizes", ShapeError, r"einsum: subscript 'j' has incompatible sizes 3 and 4",
     lambda: jnp.einsum("ij,jk->ik", A23, B45)),  # @n-einsum-sizes
    ("n-einsum-output", ShapeError, r"output subscript 'k' does not appear in the inputs",
     lambda: jnp.einsum("i,j->k", V3, V3)),  # @n-einsum-output
    ("n-broadcast", ShapeError, r"add: shapes \[2, 3\] and \[4, 5\] cannot be broadcast together",
     lambda: A23 + B45),  # @n-broadcast
    ("n-broadcast-to", ShapeError, r"cannot broadcast an array of shape \[3\] to shape \[4, 4\]",
     lambda: jnp.broadcast_to(V3, (4, 4))),  # @n-broadcast-to
    ("n-reshape", ShapeError,
     r"cannot reshape array of shape \[2, 3\] \(size 6\) into shape \[4, 2\]",
     lambda: jnp.reshape(A23, (4, 2))),  # @n-reshape
    ("n-reshape-two-unknown", ShapeError, r"can only specify one unknown dimension",
     lambda: A23.reshape(-1, -1)),  # @n-reshape-two-unknown
    ("n-sum-axis", ShapeError, r"sum: axis 2 " + OUT_OF_BOUNDS + " 2",
     lambda: jnp.sum(A23, axis=2)),  # @n-sum-axis
    ("n-repeated-axis", ShapeError, r"sum: repeated axis in \(0, 0\)",
     lambda: jnp.sum(A23, axis=(0, 0))),  # @n-repeated-axis
    ("n-concatenate-axis", ShapeError, r"concatenate: axis 2 " + OUT_OF_BOUNDS,
     lambda: jnp.concatenate([A23, A23], axis=2)),  # @n-concatenate-axis
    ("n-concatenate-shapes", ShapeError,
     r"cannot concatenate arrays of shapes \[2, 3\] and \[4, 5\] along axis 0",
     lambda: jnp.concatenate([A23, B45])),  # @n-concatenate-shapes
    ("n-transpose", ShapeError, r"axes \(0, 0\) are not a permutation",
     lambda: jnp.transpose(A23, (0, 0))),  # @n-transpose
    ("n-squeeze", ShapeError, r"cannot squeeze axis 0 of an array of shape \[2, 3\]",
     lambda: jnp.squeeze(A23, axis=0)),  # @n-squeeze
    ("n-take-along-axis", ShapeError, r"indices of rank 2 do not match an array of rank 1",
     lambda: jnp.take_along_axis(V3, jnp.zeros((2, 2), jnp.int32), 0)),  # @n-take-along-axis
    ("n-pad", ShapeError, r"pad_width .* does not fit an array of rank 1",
     lambda: jnp.pad(V3, ((1, 1), (1, 1)))),  # @n-pad
    ("n-trace", ShapeError, r"trace: needs an array of rank >= 2",
     lambda: jnp.trace(V3)),  # @n-trace
    ("n-at-set", ShapeError, r"cannot broadcast an array of shape \[3\] to shape \[2\]",
     lambda: V3.at[0:2].set(jnp.ones(3))),  # @n-at-set
    ("n-index-bounds", IndexError, r"index 5 is out of bounds for axis 0 with size 3",
     lambda: V3[5]),  # @n-index-bounds
    ("n-index-float", IndexError, r"only integers, slices",
     lambda: V3[1.5]),  # @n-index-float
    ("n-index-float-array", IndexError,
     r"arrays used as indices must be of integer \(or boolean\) type, got float32",
     lambda: V3[jnp.array([0.5])]),  # @n-index-float-array
    ("n-mask-shape", IndexError,
     r"boolean index of shape \[2\] does not match the indexed axes \[3\]",
     lambda: V3[jnp.array([True, False])]),  # @n-mask-shape
    ("n-bitwise-float", DTypeError,
     r"bitwise_and requires integer or boolean arguments, got float32",
     lambda: jnp.bitwise_and(V3, V3)),  # @n-bitwise-float
    ("n-shift-float", DTypeError, r"right_shift requires integer or boolean arguments",
     lambda: jnp.right_shift(V3, I3)),  # @n-shift-float
    ("n-string", DTypeError, r"sin requires ndarray or scalar arguments, got str at position 0",
     lambda: jnp.sin("abc")),  # @n-string
    ("n-list", DTypeError, r"got list at position 0",
     lambda: jnp.sum([1.0, 2.0])),  # @n-list
    ("n-jit-reshape", ShapeError,
     r"cannot reshape array of shape \[3\] \(size 3\) into shape \[7\]",
     lambda: tp.jit(jit_reshape).lower(X)),
    ("n-grad-broadcast", ShapeError, r"shapes \[3\] and \[5\] cannot be broadcast together",
     lambda: tp.grad(grad_broadcast)(X)),
    ("n-vmap-matmul", ShapeError, r"lhs float32\[3\] dim 0 \(3\) vs rhs float32\[5,2\]",
     lambda: tp.vmap(vmap_matmul)(XB)),
    ("n-jvp-axis", ShapeError, r"mean: axis 3",
     lambda: tp.jvp(jvp_axis, (X,), (X,))),
    ("n-cond-shapes", TypeError,
     r"lax.cond: the branches return different types for output leaf 0: float32\[3\] "
     r"\(true_fun\), float32\[2\] \(false_fun\)",
     lambda: tp.jit(cond_shapes).lower(X)),
    ("n-cond-vector-pred", TypeError,
     r"lax.cond: pred must be a scalar, got an array of shape \[3\]",
     lambda: cond_vector_pred(X)),
    ("n-loop-grows", TypeError,
     r"changes the shape of carry leaf .* from float32\[3\] to float32\[6\]",
     lambda: tp.jit(loop_grows).lower(X)),
]


@pytest.mark.parametrize("case", SHAPES, ids=ids(SHAPES))
def test_shape_and_dtype_errors_name_the_users_line(case):
    check(case)


# --- the command line ----------------------------------------------------------------------------

def cli_double(x: "f32[4]"):
    return x * 2.0


def cli_reshape(x: "f32[3]"):
    return jnp.reshape(x, (2, 2))  # @cli-reshape


def cli_matmul(x: "f32[3]", w: "f32[4,2]"):
    return x @ w  # @cli-matmul


def cli_bits(x: "f32[3]"):
    return jnp.bitwise_and(x, x)  # @cli-bits


def cli_plain(x):
    return x


def cli(*argv: str) -> tuple[int, str, str]:
    """`transpiler ARGV...` in this process: (exit status, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = transpiler.cli.main(list(argv))
        except SystemExit as exit_:
            code = exit_.code
    return code, out.getvalue(), err.getvalue()


def leftovers(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*") if p.name.endswith(".tmp")] if folder.exists() else []


# (id, command with {this}/{tmp}/{out} to fill in, stderr pattern); each fails with status 2
# (a CliError, printed as one line) before writing anything.
BUILD_ERRORS = [
    ("missing-file", "build {tmp}/nowhere.py -o {out}", r"nowhere\.py: no such file"),
    ("unknown-function", "build {this}::nope -o {out}", r"has no function 'nope'; it defines: "),
    ("unknown-target", "build {this}::cli_double -o {out} --target tpu",
     r"unknown target 'tpu'; available targets: llvm-cpu, vulkan-spirv, cuda, rocm, stablehlo"),
    ("one-unknown-target", "build {this}::cli_double -o {out} --target llvm-cpu,cuda,gpu",
     r"unknown target 'gpu'"),
    ("bad-dtype", "build {this}::cli_double -o {out} --args q32[4]",
     r"cannot parse the signature 'q32\[4\]': write dtype\[dims\]"),
    ("bad-dims", "build {this}::cli_double -o {out} --args f32[a,b]",
     r"cannot parse the dimensions of 'f32\[a,b\]'"),
    ("unclosed-dims", "build {this}::cli_double -o {out} --args f32[4",
     r"cannot parse the signature 'f32\[4'"),
    ("no-signatures", "build {this}::cli_plain -o {out}",
     r"cli_plain: no argument signatures; annotate the parameters"),
    ("args-for-a-file", "build {this} -o {out} --args f32[4]",
     r"--args needs one function: FILE.py::name"),
    ("nothing-annotated", "build {tmp}/plain.py -o {out}",
     r"plain\.py: no function has annotated argument signatures"),
    ("syntax-error", "build {tmp}/broken.py -o {out}", r"broken\.py:2:\d+: "),
    ("output-under-a-file", "build {this}::cli_double -o {tmp}/plain.py/out",
     r"cannot write to .*plain\.py/out"),
    ("show-unnamed", "show {this}", r"name the function: FILE\.py::name"),
    ("show-plain", "show {this}::cli_plain --stage python", r"cli_plain is a plain function"),
    ("show-no-signatures", "show {this}::cli_plain --stage stablehlo",
     r"cli_plain: no argument signatures"),
    ("show-missing-file", "show {tmp}/nowhere.py::f", r"nowhere\.py: no such file"),
]


@pytest.mark.parametrize("name, command, message", BUILD_ERRORS, ids=ids(BUILD_ERRORS))
def test_bad_build_and_show_commands(tmp_path, name, command, message):
    (tmp_path / "plain.py").write_text("def f(x):\n    return x\n")
    (tmp_path / "broken.py").write_text("def f(x):\n    return (x\n")
    out = tmp_path / "out"
    argv = command.format(this=THIS, tmp=tmp_path, out=out).split()
    code, stdout, stderr = cli(*argv)
    assert code == 2, (stdout, stderr)
    assert stderr.startswith(f"transpiler {argv[0]}: error: ")
    assert len(stderr.strip().splitlines()) == 1, stderr  # one line, no traceback
    assert re.search(message, stderr), stderr
    assert not out.exists() and not (tmp_path / "plain.py" / "out").exists()
    assert not leftovers(tmp_path)


USAGE_ERRORS = [
    ("bad-cpu", "build {this} -o {out} --cpu weird", r"argument --cpu: invalid choice: 'weird'"),
    ("bad-jobs", "build {this} -o {out} --jobs many", r"argument --jobs: invalid int value"),
    ("no-output", "build {this}", r"the following arguments are required: -o/--output"),
    ("bad-stage", "show {this}::cli_double --stage ptx", r"argument --stage: invalid choice"),
    ("bad-cache-action", "cache purge", r"argument action: invalid choice: 'purge'"),
    ("bad-command", "compile {this}", r"invalid choice: 'compile'"),
]


@pytest.mark.parametrize("name, command, message", USAGE_ERRORS, ids=ids(USAGE_ERRORS))
def test_command_line_usage_errors(tmp_path, name, command, message):
    out = tmp_path / "out"
    code, _, stderr = cli(*command.format(this=THIS, out=out).split())
    assert code == 2 and "usage: transpiler" in stderr
    assert re.search(message, stderr), stderr
    assert not out.exists()


TRACE_FAILURES = [
    ("cli-reshape", r"cannot reshape array of shape \[3\] \(size 3\) into shape \[2, 2\]"),
    ("cli-matmul", MATMUL),
    ("cli-bits", r"bitwise_and requires integer or boolean arguments"),
]


@pytest.mark.parametrize("tag, message", TRACE_FAILURES, ids=ids(TRACE_FAILURES))
def test_build_of_a_function_that_fails_to_trace(tmp_path, tag, message):
    name = tag.replace("-", "_")
    out = tmp_path / "out"
    code, stdout, stderr = cli("build", f"{THIS}::{name}", "-o", str(out),
                               "--target", "llvm-cpu,stablehlo")
    assert code == 1, stdout + stderr  # the function failed; the build reports, not crashes
    failed = [line for line in stdout.splitlines() if "FAILED" in line]
    assert len(failed) == 2, stdout  # one line per target
    for line in failed:
        assert f"{__file__}:{line_of(tag)}:" in line, line
        assert re.search(message, line), line
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["functions"] == {}
    assert not list(out.glob(f"{name}.*")) and not leftovers(out)  # no half of an artifact


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("built")
    code, stdout, stderr = cli("build", f"{THIS}::cli_double", "-o", str(out / "build"))
    assert code == 0, stdout + stderr
    inputs = out / "inputs"
    inputs.mkdir()
    np.save(inputs / "good.npy", np.arange(4, dtype=np.float32))
    np.save(inputs / "long.npy", np.arange(5, dtype=np.float32))
    np.save(inputs / "ints.npy", np.arange(4, dtype=np.int32))
    np.save(inputs / "objects.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    (inputs / "text.npy").write_text("not an array\n")
    raw = (inputs / "good.npy").read_bytes()
    (inputs / "truncated.npy").write_bytes(raw[:-5])
    return out


def _unlink(path: Path) -> None:
    path.unlink()


# (id, what follows `transpiler run BUILD/`, damage to the build, stderr pattern); each fails
# with status 2 and one line, and writes no output.
ARTIFACT = "cli_double.llvm-cpu.vmfb"
RUN_ERRORS = [
    ("missing-input", "cli_double --input {inputs}/gone.npy", None,
     r"input 0 \(.*gone\.npy\): not a readable \.npy file \(\[Errno 2\]"),
    ("wrong-shape", "cli_double --input {inputs}/long.npy", None,
     r"input 0 \(.*long\.npy\) is float32\[5\], but cli_double takes float32\[4\]"),
    ("wrong-dtype", "cli_double --input {inputs}/ints.npy", None,
     r"is int32\[4\], but cli_double takes float32\[4\]"),
    ("too-many-inputs", "cli_double --input {inputs}/good.npy {inputs}/good.npy", None,
     r"cli_double takes 1 inputs \(float32\[4\]\), got 2"),
    ("no-inputs", "cli_double", None, r"cli_double takes 1 inputs \(float32\[4\]\), got 0"),
    ("pickled-objects", "cli_double --input {inputs}/objects.npy", None,
     r"not a readable \.npy file \(Object arrays cannot be loaded"),
    ("text-file", "cli_double --input {inputs}/text.npy", None,
     r"input 0 \(.*text\.npy\): not a readable \.npy file"),
    ("truncated-input", "cli_double --input {inputs}/truncated.npy", None,
     r"not a readable \.npy file \(Failed to read"),
    ("directory-input", "cli_double --input {inputs}", None,
     r"not a readable \.npy file \(\[Errno 21\]"),
    ("unknown-device", "cli_double --input {inputs}/good.npy --device tpu", None,
     r"unknown device 'tpu'; choose from local-sync, local-task, vulkan, cuda, hip"),
    ("not-built-for-device", "cli_double --input {inputs}/good.npy --device vulkan", None,
     r"cli_double was not built for vulkan-spirv \(device vulkan\); built for: llvm-cpu"),
    ("unknown-function", "triple --input {inputs}/good.npy", None,
     r"no function 'triple' in .*manifest\.json; built: cli_double"),
    ("not-a-build", "cli_double --input {inputs}/good.npy",
     lambda build: _unlink(build / "manifest.json"),
     r"manifest\.json: no such file; is .* a `transpiler build` folder\?"),
    ("manifest-not-json", "cli_double --input {inputs}/good.npy",
     lambda build: (build / "manifest.json").write_text("{not json"),
     r"manifest\.json: not a readable manifest"),
    ("foreign-manifest", "cli_double --input {inputs}/good.npy",
     lambda build: (build / "manifest.json").write_text('{"format": "x"}'),
     r"not a transpiler build manifest \(format 'x', expected 'transpiler-build/1'\)"),
    ("corrupt-artifact", "cli_double --input {inputs}/good.npy",
     lambda build: (build / ARTIFACT).write_bytes(b"not a module"),
     r"cli_double\.llvm-cpu\.vmfb: its hash does not match the manifest"),
    ("missing-artifact", "cli_double --input {inputs}/good.npy",
     lambda build: _unlink(build / ARTIFACT),
     r"cli_double\.llvm-cpu\.vmfb: No such file or directory"),
]


@pytest.mark.parametrize("name, command, damage, message", RUN_ERRORS, ids=ids(RUN_ERRORS))
def test_bad_run_commands(built, tmp_path, name, command, damage, message):
    build = tmp_path / "build"
    shutil.copytree(built / "build", build)
    if damage is not None:
        damage(build)
    out = tmp_path / "out"
    argv = command.format(inputs=built / "inputs").split()
    code, stdout, stderr = cli("run", str(build), *argv, "--output", str(out))
    assert code == 2, stdout + stderr
    assert stderr.startswith("transpiler run: error: ")
    assert len(stderr.strip().splitlines()) == 1, stderr
    assert re.search(message, stderr), stderr
    assert not out.exists() and not leftovers(tmp_path)  # no output, not even half of one


# --- damaged caches heal: a warning, then the right answer ---------------------------------------

def make_loss():
    """A new function object each call (the in-memory caches key on it), the same code (the
    disk caches key on that): each call's transform reads the disk cache."""
    def heal_loss(w):
        return jnp.sum(jnp.tanh(w) ** 2)
    return heal_loss


def make_branch():
    """The same for a function whose `if` jit converts (its conversion is cached on disk)."""
    def heal_branch(w):
        if jnp.sum(w) > 0:
            y = w * 2.0
        else:
            y = -w
        return jnp.sum(y)
    return heal_branch


W = np.linspace(-1.0, 1.0, 4).astype(np.float32)
WANT_VALUE = float(np.sum(np.tanh(W) ** 2))
WANT_GRAD = 2 * np.tanh(W) * (1 - np.tanh(W) ** 2)
W_UP = W + 0.5
WANT_BRANCH = float(2 * np.sum(W_UP))


def _kind(path: Path) -> str:
    from transpiler import codegen
    from transpiler.codegen import disk_cache
    from transpiler.compiler import _VMFB
    return {".tpc": codegen._CODE, ".json": disk_cache._RECORD, ".vmfb": _VMFB}[path.suffix]


DAMAGE = {
    "truncated": lambda path, data: data[: len(data) // 2],
    "corrupted": lambda path, data: data[:-40] + bytes(b ^ 0x5A for b in data[-40:]),
    "empty": lambda path, data: b"",
    "foreign": lambda path, data: b"\x00not a cache entry\n" * 8,
    # intact seal, wrong contents: a record that is no record, code compiled from other code
    "sealed-garbage": lambda path, data: sealed(_kind(path), b"garbage"),
}
BYTE_DAMAGE = ["truncated", "corrupted", "empty", "foreign"]
MODULE_DAMAGE = BYTE_DAMAGE + ["sealed-garbage"]  # (sealed, but no compiled module inside)


def _incomplete_record(path: Path, data: bytes) -> bytes:
    """An intact seal around a record of this format with a key missing."""
    import json
    record = json.loads(unsealed(_kind(path), data))
    record.pop("callees" if "callees" in record else "infos")
    return sealed(_kind(path), json.dumps(record).encode())


def _damage(path: Path, how: str, data: bytes | None = None) -> None:
    path.write_bytes(DAMAGE[how](path, path.read_bytes() if data is None else data))


def _entries(cache: Path, name: str) -> list[Path]:
    """The cache entries of generated function `name`: its record and its compiled code."""
    records = [p for p in cache.glob("ad/*/*.json") if f'"{name}"'.encode() in p.read_bytes()]
    return records + sorted(cache.glob(f"generated/{name}_*.tpc"))


def _reports(caplog, path: Path, level: int = logging.WARNING) -> int:
    return sum(1 for r in caplog.records
               if r.name == "transpiler.cache" and r.levelno == level and str(path) in r.message)


@pytest.fixture
def cache(tmp_path, monkeypatch, caplog) -> Path:
    root = tmp_path / "cache"
    monkeypatch.setattr(tp.config, "cache_dir", root)
    caplog.set_level(logging.DEBUG, logger="transpiler.cache")
    return root


@pytest.mark.parametrize("damage, suffix", [  # (a record can also lack keys; code cannot)
    *((d, s) for s in (".json", ".tpc") for d in DAMAGE), ("sealed-incomplete", ".json")])
def test_damaged_derivative_code_heals(cache, caplog, damage, suffix):
    np.testing.assert_allclose(tp.grad(make_loss())(W), WANT_GRAD, rtol=1e-5)
    [path] = [p for p in _entries(cache, "vjp_heal_loss") if p.suffix == suffix]
    if damage == "sealed-incomplete":
        path.write_bytes(_incomplete_record(path, path.read_bytes()))
    else:
        _damage(path, damage)
    caplog.clear()
    np.testing.assert_allclose(tp.grad(make_loss())(W), WANT_GRAD, rtol=1e-5)
    assert _reports(caplog, path) == 1, caplog.text  # reported once, then rebuilt intact
    assert unsealed(_kind(path), path.read_bytes()) is not None
    caplog.clear()
    np.testing.assert_allclose(tp.grad(make_loss())(W), WANT_GRAD, rtol=1e-5)
    assert "cache entry" not in caplog.text  # healed: nothing more to report
    assert not leftovers(cache)


def test_derivative_code_of_another_version_is_replaced_quietly(cache, caplog):
    tp.grad(make_loss())(W)
    entries = _entries(cache, "vjp_heal_loss")
    assert len(entries) == 2
    for path in entries:
        path.write_bytes(b"TPXYZ9\n" + path.read_bytes())  # another format's header
    caplog.clear()
    np.testing.assert_allclose(tp.grad(make_loss())(W), WANT_GRAD, rtol=1e-5)
    for path in entries:  # on the debug log only: an upgrade is no damage
        assert _reports(caplog, path, logging.DEBUG) == 1, caplog.text
        assert unsealed(_kind(path), path.read_bytes()) is not None
    assert not leftovers(cache)


def _compiled(tmp_path_factory, make, args, want) -> dict[str, bytes]:
    """The compiled modules of jit(make()) (compiled once): their place in a cache, bytes."""
    root = tmp_path_factory.mktemp("pristine")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(tp.config, "cache_dir", root)
        assert float(tp.jit(make())(args)) == pytest.approx(want, rel=1e-5)
    return {str(p.relative_to(root)): p.read_bytes() for p in root.glob("vmfb/*/*.vmfb")}


@pytest.fixture(scope="module")
def loss_module(tmp_path_factory) -> tuple[str, bytes]:
    [(where, data)] = _compiled(tmp_path_factory, make_loss, W, WANT_VALUE).items()
    return where, data


@pytest.fixture(scope="module")
def branch_modules(tmp_path_factory) -> dict[str, bytes]:
    return _compiled(tmp_path_factory, make_branch, W_UP, WANT_BRANCH)


@pytest.mark.parametrize("damage", MODULE_DAMAGE)
def test_damaged_compiled_module_heals(cache, caplog, loss_module, damage):
    where, data = loss_module
    path = cache / where
    path.parent.mkdir(parents=True)
    _damage(path, damage, data)
    assert float(tp.jit(make_loss())(W)) == pytest.approx(WANT_VALUE, rel=1e-5)
    assert _reports(caplog, path) == 1, caplog.text
    assert unsealed(_kind(path), path.read_bytes()) is not None  # recompiled and stored
    caplog.clear()
    assert float(tp.jit(make_loss())(W)) == pytest.approx(WANT_VALUE, rel=1e-5)
    assert "cache entry" not in caplog.text
    assert not leftovers(cache)


def test_compiled_module_of_another_version_is_replaced_quietly(cache, caplog, loss_module):
    where, data = loss_module
    path = cache / where
    path.parent.mkdir(parents=True)
    path.write_bytes(b"TPVMFB0\n" + data)
    assert float(tp.jit(make_loss())(W)) == pytest.approx(WANT_VALUE, rel=1e-5)
    assert _reports(caplog, path, logging.DEBUG) == 1, caplog.text
    assert unsealed(_kind(path), path.read_bytes()) is not None
    assert not leftovers(cache)


def test_compiled_module_blocked_by_a_folder_warns_and_still_runs(cache, caplog, loss_module):
    where, _ = loss_module
    path = cache / where
    path.mkdir(parents=True)  # a folder where the entry goes: it cannot be read or written
    assert float(tp.jit(make_loss())(W)) == pytest.approx(WANT_VALUE, rel=1e-5)
    assert any(r.levelno == logging.WARNING and "could not write the compile cache"
               in r.getMessage() for r in caplog.records), caplog.text
    assert path.is_dir() and not leftovers(cache)


@pytest.mark.parametrize("suffix", [".json", ".tpc"])
@pytest.mark.parametrize("damage", BYTE_DAMAGE)
def test_damaged_control_flow_conversion_heals(cache, caplog, branch_modules, damage, suffix):
    for where, data in branch_modules.items():  # compiled already: only the conversion runs
        (cache / where).parent.mkdir(parents=True, exist_ok=True)
        (cache / where).write_bytes(data)
    assert float(tp.jit(make_branch())(W_UP)) == pytest.approx(WANT_BRANCH, rel=1e-5)
    [path] = [p for p in _entries(cache, "cf_heal_branch") if p.suffix == suffix]
    _damage(path, damage)
    caplog.clear()
    assert float(tp.jit(make_branch())(W_UP)) == pytest.approx(WANT_BRANCH, rel=1e-5)
    assert _reports(caplog, path) == 1, caplog.text
    assert unsealed(_kind(path), path.read_bytes()) is not None
    assert not leftovers(cache)
