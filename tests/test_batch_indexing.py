"""Batching rules of the indexing primitives with indices that differ per batch member
(tests/test_batch_rules.py repeats integer operands), eagerly and under jit, against a
Python loop over the batch. Indices include out-of-bounds ones (clamped / dropped)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import transpiler as tp
from transpiler.primitives import indexing as ip

B = 3
rng = np.random.default_rng(0)
X = rng.standard_normal((B, 5, 4, 3)).astype(np.float32)  # operand members
STARTS = [np.array([0, 4, -2], np.int32), np.array([1, 3, 2], np.int32),
          np.array([2, 0, 9], np.int32)]  # per-member scalar starts of 3 axes
IDX = rng.integers(-1, 6, size=(B, 4, 2, 2)).astype(np.int32)  # gather/scatter indices
UPD = rng.standard_normal((B, 4, 2, 3)).astype(np.float32)
# ... and, for "set" (whose order among duplicates is unspecified under jit), distinct ones
UNIQUE = np.stack([np.stack(np.unravel_index(rng.permutation(20)[:8], (5, 4)), axis=-1)
                   .reshape(4, 2, 2) for _ in range(B)]).astype(np.int32)
WIN = rng.standard_normal((B, 2, 3, 2)).astype(np.float32)


def _stack(x: np.ndarray, batched: bool, axis: int) -> Any:
    """Members (leading axis of `x`) with the batch axis at `axis`, or member 0."""
    return np.moveaxis(x, 0, axis % x.ndim) if batched else x[0]


def _run(prim: Any, members: list, flags: list, axes: list, params: dict, jit: bool) -> None:
    args = [_stack(m, f, a) for m, f, a in zip(members, flags, axes)]
    dims = [a % m.ndim if f else None for m, f, a in zip(members, flags, axes)]
    want = np.stack([np.asarray(prim.bind(*[m[b] if f else m[0] for m, f in
                                            zip(members, flags)], **params))
                     for b in range(B)])
    if jit:
        out = np.asarray(tp.jit(lambda xs: prim.batch(xs, dims, **params)[0])(args))
        dim = prim.batch(args, dims, **params)[1]
    else:
        out, dim = prim.batch(args, dims, **params)
    np.testing.assert_allclose(np.moveaxis(np.asarray(out), dim, 0), want, rtol=1e-6)


FLAGS3 = [(True, True, True), (False, True, True), (True, False, True), (True, True, False)]


@pytest.mark.parametrize("jit", [False, True])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_dynamic_slice_batched_starts(jit: bool, axis: int) -> None:
    starts = np.stack(STARTS, axis=1)  # (B, 3)
    for flags in [(True, True, False, True), (False, False, True, False), (True,) * 4]:
        members = [X, starts[:, 0], starts[:, 1], starts[:, 2]]
        _run(ip.dynamic_slice, members, list(flags), [axis, 0, 0, 0],
             {"slice_sizes": (2, 3, 2)}, jit)


@pytest.mark.parametrize("jit", [False, True])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_dynamic_update_slice_batched_starts(jit: bool, axis: int) -> None:
    starts = np.stack(STARTS, axis=1)
    for flags in [(True, True, True, False, True), (False, True, False, True, False),
                  (True, False, True, True, True), (False, False, True, False, False)]:
        members = [X, WIN, starts[:, 0], starts[:, 1], starts[:, 2]]
        _run(ip.dynamic_update_slice, members, list(flags), [axis, axis, 0, 0, 0], {}, jit)


@pytest.mark.parametrize("jit", [False, True])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_gather_batched_indices(jit: bool, axis: int) -> None:
    for flags in [(True, True), (False, True)]:
        _run(ip.gather, [X, IDX], list(flags), [axis, axis], {}, jit)


@pytest.mark.parametrize("jit", [False, True])
@pytest.mark.parametrize("mode", ["set", "add", "max"])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_scatter_batched_indices(jit: bool, mode: str, axis: int) -> None:
    indices = UNIQUE if mode == "set" and jit else IDX
    for flags in FLAGS3:
        _run(ip.scatter, [X, indices, UPD], list(flags), [axis, axis, axis], {"mode": mode},
             jit)


# --- x[:, i]: whole slices and scalar indices, some batched ---------------------------------
A3 = np.arange(60, dtype=np.float32).reshape(3, 4, 5)
PICKS = np.array([0, 3, -1, 2], np.int32)  # (negative counts from the end, as in NumPy)
SLICE_CASES = {
    "column": (lambda a, i: a[:, i], (None, 0), (A3[0], PICKS)),
    "middle": (lambda a, i: a[:, i, :], (None, 0), (A3, PICKS[:3])),
    "two scalars": (lambda a, i: a[i, :, i], (None, 0), (A3, np.array([0, 2, 1], np.int32))),
    "fixed and batched": (lambda a, i: a[1, :, i], (None, 0), (A3, PICKS)),
    "both batched": (lambda a, i: a[:, i], (0, 0), (A3, PICKS[:3])),
    "batched array only": (lambda a, i: a[:, i], (0, None), (A3, np.int32(2))),
}


@pytest.mark.parametrize("jit", [False, True])
@pytest.mark.parametrize("case", sorted(SLICE_CASES))
def test_whole_slices_with_batched_scalar_indices_against_a_loop(case: str, jit: bool) -> None:
    fn, in_axes, (a, i) = SLICE_CASES[case]
    mapped = tp.vmap(fn, in_axes=in_axes)
    if jit:
        mapped = tp.jit(mapped)
    size = (a.shape[0] if in_axes[0] == 0 else len(i))
    members = [fn(a[b] if in_axes[0] == 0 else a, i[b] if in_axes[1] == 0 else i)
               for b in range(size)]
    np.testing.assert_array_equal(np.asarray(mapped(a, i)),
                                  np.stack([np.asarray(m) for m in members]))


def test_gradient_through_a_batched_column_pick() -> None:
    a = A3[0] / 10
    loss = lambda w, i: (w[:, i] ** 2).sum()  # noqa: E731
    per_index = tp.vmap(tp.grad(loss), in_axes=(None, 0))(a, PICKS)
    want = np.stack([np.asarray(tp.grad(loss)(a, int(i))) for i in PICKS])
    np.testing.assert_allclose(np.asarray(per_index), want, rtol=1e-6)
    summed = tp.grad(lambda w: tp.vmap(lambda i: loss(w, i))(PICKS).sum())(a)
    np.testing.assert_allclose(np.asarray(summed), want.sum(0), rtol=1e-6)


UPDATES = {"set": lambda x, i, v: x.at[:, i].set(v), "add": lambda x, i, v: x.at[:, i].add(v),
           "max": lambda x, i, v: x.at[:, i].max(v)}


@pytest.mark.parametrize("method", sorted(UPDATES))
def test_updates_at_a_batched_column_against_a_loop(method: str) -> None:
    a = tp.numpy.asarray(A3[0])
    put = UPDATES[method]
    values = np.arange(16, dtype=np.float32).reshape(4, 4)  # one column per member
    for v, v_axis in ((values, 0), (np.float32(7.0), None)):
        got = tp.vmap(put, in_axes=(None, 0, v_axis))(a, PICKS, v)
        want = np.stack([np.asarray(put(a, int(i), v[b] if v_axis == 0 else v))
                         for b, i in enumerate(PICKS)])
        np.testing.assert_array_equal(np.asarray(got), want)


def test_an_update_reference_with_a_batched_index_must_be_used_at_once() -> None:
    """``getattr(x.at[:, i], "set")(v)`` lost the index's batch (every member's update
    landed in each member: a silent wrong answer); it is an error now."""
    def put(i, v):
        return getattr(tp.numpy.asarray(A3[0]).at[:, i], "set")(v)

    with pytest.raises(tp.TranspileError, match="cannot batch `x.at\\[index\\]` with a "
                       "batched index used other than by calling its method"):
        tp.vmap(put)(PICKS, np.zeros((4, 4), np.float32))


GLOBAL_ARRAY = tp.numpy.asarray(A3[0])


def test_updates_of_a_global_array_at_batched_indices() -> None:
    """``x.at[:, i]`` on a module-level array: vmap's transform crashed (IndexError)."""
    got = tp.vmap(lambda i, v: GLOBAL_ARRAY.at[:, i].max(v))(PICKS, np.full((4, 4), 50.0,
                                                                         np.float32))
    want = np.stack([np.asarray(GLOBAL_ARRAY.at[:, int(i)].max(50.0)) for i in PICKS])
    np.testing.assert_array_equal(np.asarray(got), want)
