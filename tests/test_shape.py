"""Shape composites vs NumPy (eager and one grouped jit), dtypes vs JAX, and error messages."""

from __future__ import annotations

import os

import numpy as np
import pytest

import transpiler as tp
import transpiler.numpy as jnp
from transpiler.errors import ShapeError

HERE = os.path.basename(__file__)

x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
m = np.arange(12, dtype=np.int32).reshape(3, 4)
v = np.arange(5, dtype=np.int32)
b = (m % 3 == 0)

# (name, transpiler call, numpy reference); all run eagerly and inside ONE jit.
CHECKS = [
    ("concatenate None", lambda: jnp.concatenate([x, m], axis=None),
     lambda: np.concatenate([x, m], None)),
    ("stack -1", lambda: jnp.stack([m, m], axis=-1), lambda: np.stack([m, m], -1)),
    ("hstack 2-d", lambda: jnp.hstack([m, m]), lambda: np.hstack([m, m])),
    ("vstack 1-d", lambda: jnp.vstack([v, v]), lambda: np.vstack([v, v])),
    ("dstack 1-d", lambda: jnp.dstack([v, v]), lambda: np.dstack([v, v])),
    ("column_stack", lambda: jnp.column_stack([v, v]), lambda: np.column_stack([v, v])),
    ("expand_dims", lambda: jnp.expand_dims(m, (0, 3)), lambda: np.expand_dims(m, (0, 3))),
    ("squeeze axis", lambda: jnp.squeeze(np.ones((1, 3, 1)), axis=(0, 2)),
     lambda: np.squeeze(np.ones((1, 3, 1), np.float32), axis=(0, 2))),
    ("split indices", lambda: jnp.split(v, [1, 3]), lambda: np.split(v, [1, 3])),
    ("split past end", lambda: jnp.split(v, [2, 9]), lambda: np.split(v, [2, 9])),
    ("array_split", lambda: jnp.array_split(m, 3, axis=1), lambda: np.array_split(m, 3, axis=1)),
    ("hsplit", lambda: jnp.hsplit(m, 2), lambda: np.hsplit(m, 2)),
    ("vsplit", lambda: jnp.vsplit(m, 3), lambda: np.vsplit(m, 3)),
    ("tile", lambda: jnp.tile(m, (2, 1, 2)), lambda: np.tile(m, (2, 1, 2))),
    ("tile int", lambda: jnp.tile(v, 3), lambda: np.tile(v, 3)),
    ("repeat flat", lambda: jnp.repeat(m, 2), lambda: np.repeat(m, 2)),
    ("repeat seq", lambda: jnp.repeat(m, [1, 0, 3], axis=0), lambda: np.repeat(m, [1, 0, 3], 0)),
    ("repeat total", lambda: jnp.repeat(v, 2, total_repeat_length=12),
     lambda: np.concatenate([np.repeat(v, 2), [4, 4]])),
    *[(f"pad {mode} {w}", lambda mode=mode, w=w: jnp.pad(m, w, mode=mode),
       lambda mode=mode, w=w: np.pad(m, w, mode=mode))
      for mode in ("constant", "edge", "reflect", "symmetric", "wrap")
      for w in (1, ((2, 7), (0, 9)), ((5, 0), (3, 1)))],
    ("pad reflect size 1", lambda: jnp.pad(np.array([5.0], np.float32), 3, mode="reflect"),
     lambda: np.pad(np.array([5.0], np.float32), 3, mode="reflect")),
    ("pad per-axis values", lambda: jnp.pad(m, 2, constant_values=((1, 2), (3, 4))),
     lambda: np.pad(m, 2, constant_values=((1, 2), (3, 4)))),
    ("moveaxis", lambda: jnp.moveaxis(x, [0, 1], [-1, 0]), lambda: np.moveaxis(x, [0, 1], [-1, 0])),
    ("swapaxes", lambda: jnp.swapaxes(x, 0, -1), lambda: np.swapaxes(x, 0, -1)),
    ("flip", lambda: jnp.flip(x, (0, 2)), lambda: np.flip(x, (0, 2))),
    ("roll flat", lambda: jnp.roll(x, 5), lambda: np.roll(x, 5)),
    ("roll axes", lambda: jnp.roll(x, (1, -2), (0, 2)), lambda: np.roll(x, (1, -2), (0, 2))),
    ("roll one shift two axes", lambda: jnp.roll(x, 1, (0, 1)), lambda: np.roll(x, 1, (0, 1))),
    *[(f"rot90 {k}", lambda k=k: jnp.rot90(x, k, (1, 2)), lambda k=k: np.rot90(x, k, (1, 2)))
      for k in range(-1, 5)],
    *[(f"triu {k}", lambda k=k: jnp.triu(m, k), lambda k=k: np.triu(m, k)) for k in (-1, 0, 2)],
    ("tril batched", lambda: jnp.tril(x, -1), lambda: np.tril(x, -1)),
    ("tril 1-d", lambda: jnp.tril(v), lambda: np.tril(v)),
    *[(f"diagonal {k}", lambda k=k: jnp.diagonal(m, k), lambda k=k: np.diagonal(m, k))
      for k in (-3, -1, 0, 1, 3, 5)],
    ("diagonal axes", lambda: jnp.diagonal(x, 1, 0, 2), lambda: np.diagonal(x, 1, 0, 2)),
    *[(f"diag {k}", lambda k=k: jnp.diag(v, k), lambda k=k: np.diag(v, k)) for k in (-2, 0, 1)],
    ("diag of matrix", lambda: jnp.diag(m, 1), lambda: np.diag(m, 1)),
    ("atleast_3d", lambda: jnp.atleast_3d(v), lambda: np.atleast_3d(v)),
    ("atleast many", lambda: jnp.atleast_2d(v, m), lambda: np.atleast_2d(v, m)),
    ("broadcast_arrays", lambda: jnp.broadcast_arrays(v, np.ones((3, 1), np.int32)),
     lambda: np.broadcast_arrays(v, np.ones((3, 1), np.int32))),
]


def _flat(value):
    return list(value) if isinstance(value, (list, tuple)) else [value]


def test_composites_match_numpy_eager_and_jit():
    def everything():
        return [fn() for _, fn, _ in CHECKS]

    eager = everything()
    staged = tp.jit(everything)()
    for (name, _, ref), e, s in zip(CHECKS, eager, staged):
        wants = _flat(ref())
        assert len(_flat(e)) == len(wants), name
        for got_e, got_s, want in zip(_flat(e), _flat(s), wants):
            want = np.asarray(want)
            assert got_e.shape == want.shape, f"{name}: {got_e.shape} != {want.shape}"
            np.testing.assert_array_equal(np.asarray(got_e), want, err_msg=name)
            np.testing.assert_array_equal(np.asarray(got_s), want, err_msg=f"{name} (jit)")
            assert got_s.dtype == got_e.dtype, name


def test_dtypes_match_jax():
    jax_np = pytest.importorskip("jax.numpy")
    f16 = np.ones((2,), np.float16)
    samples = [
        lambda n: n.concatenate([np.ones(2, np.int32), np.ones(2, np.float32)]),
        lambda n: n.concatenate([np.ones(2, np.int32), np.ones(2, bool)]),
        lambda n: n.stack([f16, np.ones(2, np.int32)]),
        lambda n: n.hstack([np.ones(2, np.uint8), np.ones(2, np.int8)]),
        lambda n: n.pad(np.ones(2, np.int32), 1, constant_values=2.7),
        lambda n: n.repeat(np.ones(2, bool), 2),
        lambda n: n.tril(np.ones((2, 2), bool)),
        lambda n: n.diag(np.ones(3, np.int32)),
    ]
    for i, sample in enumerate(samples):
        got, want = sample(jnp), sample(jax_np)
        assert got.dtype == want.dtype, f"sample {i}: {got.dtype} != {want.dtype}"
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want), err_msg=f"sample {i}")


def test_repeat_traced_with_total_length():
    if not hasattr(jnp, "sum"):
        pytest.skip("needs jnp.sum from the reductions family")
    f = tp.jit(lambda a, r: jnp.repeat(a, r, total_repeat_length=7))
    out = f(np.array([1.0, 2.0, 3.0], np.float32), np.array([2, 0, 3], np.int32))
    np.testing.assert_array_equal(np.asarray(out), [1, 1, 3, 3, 3, 3, 3])


# --- errors: each names the user's line (this file) -----------------------------------------

def _raises(exc, fn, *fragments):
    with pytest.raises(exc) as info:
        fn()
    text = str(info.value)
    for fragment in fragments:
        assert fragment in text, f"{fragment!r} not in {text!r}"
    return text


def test_error_bad_axis():
    _raises(ShapeError, lambda: jnp.concatenate([m, m], axis=2), HERE, "axis 2")
    _raises(ShapeError, lambda: jnp.flip(m, -3), HERE, "axis -3")
    _raises(ShapeError, lambda: jnp.expand_dims(m, 4), HERE, "axis 4")


def test_error_concatenate_shapes_named():
    _raises(ShapeError, lambda: jnp.concatenate([m, np.ones((3, 5), np.int32)]),
            HERE, "[3, 4]", "[3, 5]")
    _raises(ShapeError, lambda: jnp.concatenate([m, v]), HERE, "[3, 4]", "[5]")
    _raises(ShapeError, lambda: jnp.stack([m, m[:2]]), HERE, "[3, 4]", "[2, 4]")


def test_error_reshape_size():
    _raises(ShapeError, lambda: jnp.reshape(m, (5, 3)), HERE, "[3, 4]", "[5, 3]")
    _raises(ShapeError, lambda: jnp.reshape(m, (5, -1)), HERE, "[3, 4]")


def test_error_squeeze_non_unit_axis():
    _raises(ShapeError, lambda: jnp.squeeze(m, 1), HERE, "axis 1", "size 4")


def test_error_inside_jit_names_user_line():
    def f(a):
        return jnp.squeeze(a, 0)
    _raises(ShapeError, lambda: tp.jit(f)(m), HERE, "axis 0", "size 3")


def test_error_split_and_pad_and_repeat():
    _raises(ValueError, lambda: jnp.split(v, 2), "equal division")
    _raises(NotImplementedError, lambda: jnp.pad(m, 1, mode="median"), "'median'")
    traced = tp.jit(lambda a, r: jnp.repeat(a, r))
    _raises(ShapeError, lambda: traced(v, np.int32(2)), "total_repeat_length")
    _raises(ShapeError, lambda: jnp.concatenate([np.float32(1), np.float32(2)]),
            HERE, "zero-dimensional")
