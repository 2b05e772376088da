"""The programs corpus through pmap's devices strategy (one multi-device IREE module):
every program on 2 shards against a Python loop over the shards, and per-shard gradients
averaged with lax.pmean (data-parallel training's pattern) against NumPy's mean of the
loop's gradients."""

from __future__ import annotations

import numpy as np
import pytest

import transpiler as tp
from transpiler import lax, tree_util
from tests.programs.corpus import PROGRAMS
from tests.test_vmap_programs import _batched, _close, _is_data, _loop, _setup

N = 2


def _statics(args):
    return tuple(i for i, a in enumerate(args) if not _is_data(a))


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.name)
def test_pmap_matches_loop(program):
    axes, _ = _setup(program)
    args = tuple(_batched(a, N) if ax == 0 else a for a, ax in zip(program.args, axes))
    want = _loop(program.fn, axes, args, N)
    statics = _statics(args)
    in_axes = tuple(None if i in statics else ax for i, ax in enumerate(axes))
    got = tp.pmap(program.fn, axis_name="i", in_axes=in_axes,
                  static_broadcasted_argnums=statics)(*args)
    _close(got, want)


def _data_besides_argnums(program):
    """The arguments a data-parallel step shards: data not being differentiated."""
    nums = (program.argnums,) if isinstance(program.argnums, int) else program.argnums
    return [i for i, a in enumerate(program.args) if _is_data(a) and i not in nums]


@pytest.mark.parametrize("program", [p for p in PROGRAMS if not p.has_aux and not p.pending
                                     and _data_besides_argnums(p)], ids=lambda p: p.name)
def test_pmean_of_per_shard_gradients(program):
    data = _data_besides_argnums(program)
    args = tuple(_batched(a, N) if i in data else a for i, a in enumerate(program.args))
    grad = tp.grad(program.fn, argnums=program.argnums)
    in_axes = tuple(0 if i in data else None for i in range(len(args)))
    statics = tuple(i for i in _statics(args) if i not in data)
    step = tp.pmap(lambda *a: lax.pmean(grad(*a), "i"), axis_name="i",
                   in_axes=in_axes, static_broadcasted_argnums=statics, out_axes=None)
    per_shard = _loop(grad, in_axes, args, N)
    want = tree_util.tree_map(lambda g: np.mean(np.asarray(g), axis=0), per_shard)
    _close(step(*args), want)
