"""Independent oracles the tests share: float64 central differences of scalar functions,
and a comparison of pytrees of arrays leaf by leaf."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np


def finite_differences(f: Callable[[np.ndarray], Any], x: Any, eps: float = 1e-6) -> np.ndarray:
    """The gradient of scalar ``f`` at ``x`` by central differences in float64, one element
    of ``x`` at a time (``f`` gets a float64 array shaped like ``x``)."""
    x = np.asarray(x, np.float64)
    grad = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        step = np.zeros_like(x)
        step[i] = eps
        grad[i] = (float(np.asarray(f(x + step))) - float(np.asarray(f(x - step)))) / (2 * eps)
    return grad


def assert_trees_close(got: Any, want: Any, tol: float = 1e-5) -> None:
    """`got` and `want` have as many array leaves, each pair equal within `tol`."""
    from transpiler import tree_util
    got_leaves, want_leaves = tree_util.tree_leaves(got), tree_util.tree_leaves(want)
    assert len(got_leaves) == len(want_leaves)
    for g, w in zip(got_leaves, want_leaves):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=tol, atol=tol)
