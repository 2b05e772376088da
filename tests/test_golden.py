"""Golden snapshots of generated derivative code: changes to it show up in review.

Regenerate after an intended change with ``TRANSPILER_UPDATE_GOLDEN=1 make test``."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import transpiler as tp
from tests.programs import corpus

GOLDEN = Path(__file__).parent / "golden"
SNAPSHOTS = {
    "mlp_loss": (corpus.mlp_loss, 0),
    "rnn": (corpus.rnn, 0),
    "at_update": (corpus.at_update, 0),
    "static_branch": (corpus.static_branch, 0),
}


def _body(source: str) -> str:
    """The generated code without its first line (which names an absolute path)."""
    return source.split("\n", 1)[1]


@pytest.mark.parametrize("name", sorted(SNAPSHOTS))
def test_generated_code_matches_snapshot(name):
    fn, argnums = SNAPSHOTS[name]
    _check(_body(tp.grad(fn, argnums=argnums).source), GOLDEN / f"grad_{name}.py.txt")


def _check(got: str, path: Path) -> None:
    if os.environ.get("TRANSPILER_UPDATE_GOLDEN"):
        path.write_text(got)
    assert path.exists(), f"no snapshot {path}; run with TRANSPILER_UPDATE_GOLDEN=1"
    assert got == path.read_text(), f"generated code in {path.name} changed; review and update"


VMAP_SNAPSHOTS = {
    "mlp_loss": (corpus.mlp_loss, (None, 0, 0)),
    "at_update": (corpus.at_update, 0),
    "rnn": (corpus.rnn, (None, 0)),
}


@pytest.mark.parametrize("name", sorted(VMAP_SNAPSHOTS))
def test_batched_code_matches_snapshot(name):
    fn, in_axes = VMAP_SNAPSHOTS[name]
    _check(_body(tp.vmap(fn, in_axes=in_axes).source), GOLDEN / f"vmap_{name}.py.txt")
