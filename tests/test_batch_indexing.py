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
