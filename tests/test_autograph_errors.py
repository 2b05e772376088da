"""Errors of the control-flow conversion (transforms/autograph/convert.py): each names the
variable, the construct and both of the user's lines."""

from __future__ import annotations

import numpy as np
import pytest

import transpiler as jax
import transpiler.numpy as jnp
from transpiler import TranspileError
from transpiler.errors import TracerError
from transpiler.transforms.autograph.runtime import convert
from tests.test_autograph import f32, line_of as shared_line_of


def line_of(marker: str) -> int:
    return shared_line_of(marker, __file__)


# --- errors ---------------------------------------------------------------------------------

def grows(x):
    acc = jnp.zeros(3)  # acc-init
    while jnp.sum(acc) < 10.0:
        acc = jnp.concatenate([acc, x])  # acc-grows
    return acc


def one_branch(x):
    if x > 0:  # one-branch-if
        y = x * 2.0  # one-branch-set
    return y


def dtype_per_branch(x):
    if x > 0:  # dtype-if
        y = x.astype(jnp.int32)  # dtype-int
    else:
        y = x * 2.0  # dtype-float
    return y


def appends_each_step(x, n):
    out = []
    i = 0
    while i < n:
        out.append(x)
        i = i + 1
    return out


def test_shape_change_in_while_names_variable_and_both_lines():
    with pytest.raises(TranspileError) as info:
        jax.jit(grows)(f32([1.0, 2.0, 3.0]))
    err, text = info.value, str(info.value)
    assert err.file == __file__ and err.line == line_of("acc-grows")
    assert "`while` on a traced value changes the shape of `acc`" in text
    assert "float32[3] before, float32[6] after" in text and "lax.scan" in text
    assert f"test_autograph_errors.py:{line_of('acc-init')}" in text
    assert f"test_autograph_errors.py:{line_of('acc-grows')}" in text


def test_variable_defined_in_one_branch_only():
    with pytest.raises(TranspileError) as info:
        jax.jit(one_branch)(f32(1.0))
    err, text = info.value, str(info.value)
    assert err.line == line_of("one-branch-if")
    assert "`y` is assigned in only one branch" in text
    assert f"test_autograph_errors.py:{line_of('one-branch-set')}" in text
    assert convert(one_branch)(1.0) == 2.0  # eagerly: Python semantics


def test_dtype_change_across_branches():
    with pytest.raises(TranspileError) as info:
        jax.jit(dtype_per_branch)(f32(1.0))
    err, text = info.value, str(info.value)
    assert err.line == line_of("dtype-if") and "different dtypes" in text
    assert "int32[]" in text and "float32[]" in text
    assert f"test_autograph_errors.py:{line_of('dtype-int')}" in text
    assert f"test_autograph_errors.py:{line_of('dtype-float')}" in text


def test_list_growing_in_traced_loop_suggests_scan():
    with pytest.raises(TranspileError, match=r"(?s)`out.append\(...\)` inside `while`.*lax.scan"):
        jax.jit(appends_each_step)(f32(1.0), np.int32(3))


def test_unconvertible_function_keeps_static_control_flow_and_explains_traced():
    def static_unconvertible(x):
        try:  # (`try` is not converted: the function is traced as written)
            parts = [x * k for k in range(3)]
        finally:
            pass
        if len(parts) == 3:
            return parts[0] + parts[2]
        return x

    def traced_unconvertible(x):
        try:
            parts = [x * k for k in range(3)]
        finally:
            pass
        if jnp.sum(parts[1]) > 0:
            return parts[2]
        return x

    def traced_listcomp(x):  # list comprehensions are read: its `if` is converted
        parts = [x * k for k in range(3)]
        if jnp.sum(parts[1]) > 0:
            return parts[2]
        return x

    np.testing.assert_allclose(jax.jit(static_unconvertible)(f32(2.0)), 4.0)
    with pytest.raises(TracerError, match="not converted.*`try` statements"):
        jax.jit(traced_unconvertible)(f32(2.0))
    np.testing.assert_allclose(jax.jit(traced_listcomp)(f32(2.0)), 4.0)
    np.testing.assert_allclose(jax.jit(traced_listcomp)(f32(-2.0)), -2.0)
