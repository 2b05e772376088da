"""Tracebacks of user errors show the user's frames and the generated code's, not the
library's (transpiler/tracebacks.py), under every public transform; the switch shows all."""

from __future__ import annotations

import traceback

import numpy as np
import pytest

import transpiler as tp
import transpiler.numpy as jnp
from transpiler.errors import TranspileError
from transpiler.tracebacks import NOTE

LIBRARY = tp.__file__.rsplit("/", 1)[0] + "/"


def mismatched(x):
    return jnp.dot(x, jnp.ones((5, 2)))


def vector_output(x):
    return x * 2.0


X = np.ones((3, 4), np.float32)
CALLS = {
    "jit": lambda: tp.jit(mismatched)(X),
    "grad": lambda: tp.grad(lambda x: jnp.sum(mismatched(x)))(X),
    "grad of a vector output": lambda: tp.grad(vector_output)(jnp.ones(3)),
    "jit(grad)": lambda: tp.jit(tp.grad(lambda x: jnp.sum(mismatched(x))))(X),
    "vmap": lambda: tp.vmap(mismatched)(np.ones((2, 3, 4), np.float32)),
    "jacfwd": lambda: tp.jacfwd(lambda x: mismatched(x))(X),
}


def _frames(call):
    with pytest.raises(TranspileError) as info:
        call()
    return info.value, traceback.extract_tb(info.value.__traceback__)


@pytest.mark.parametrize("name", list(CALLS))
def test_a_user_error_shows_the_users_frames(name):
    error, frames = _frames(CALLS[name])
    library = [f for f in frames if f.filename.startswith(LIBRARY)]
    assert len(frames) <= 10, frames
    assert len(library) <= 1, library  # the entry point that re-raised it, as in JAX
    assert any(f.filename == __file__ for f in frames)
    assert NOTE in getattr(error, "__notes__", ())


def test_the_switch_shows_every_frame(monkeypatch):
    monkeypatch.setattr(tp.config, "traceback_filtering", "off")
    error, frames = _frames(CALLS["jit"])
    assert sum(f.filename.startswith(LIBRARY) for f in frames) > 3
    assert NOTE not in getattr(error, "__notes__", ())


def test_a_caught_error_can_be_raised_again():
    """Filtering keeps the exception itself: its type, message and location."""
    error, _ = _frames(CALLS["jit"])
    assert "contracting dimensions differ" in str(error) and error.file == __file__
    with pytest.raises(TranspileError):
        raise error
