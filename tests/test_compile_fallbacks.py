"""When IREE crashes on or rejects a module, the compile is retried with flag sets known
to avoid its failures; a crash never reaches the user as a stack dump."""

from __future__ import annotations

import logging

import numpy as np
import pytest

import transpiler as tp
import transpiler.numpy as jnp
from transpiler import compiler
from transpiler.errors import TranspileError


def test_a_module_that_crashes_iree_compiles_with_data_tiling_off(tmp_path, monkeypatch,
                                                                     caplog):
    """iree-compile 3.13 segfaults in PackOp::getResultShape on this gradient (data tiling)."""
    monkeypatch.setattr(tp.config, "cache_dir", str(tmp_path))  # a cold compile
    f = lambda x, y: jnp.sum(jnp.sum(y @ x.T, axis=-1, keepdims=True) * x)  # noqa: E731
    rng = np.random.default_rng(0)
    x, y = (rng.standard_normal((2, 4)).astype(np.float32) for _ in range(2))
    with caplog.at_level(logging.INFO, logger="transpiler.compiler"):
        got = tp.jit(tp.grad(f))(x, y)
    np.testing.assert_allclose(np.asarray(got), np.asarray(tp.grad(f)(x, y)), rtol=1e-5)
    said = caplog.text
    assert "crashed with signal" in said and "--iree-opt-data-tiling=false" in said, said


CRASH = ("IREE failed to compile for llvm-cpu:\nError invoking IREE compiler tool "
         "iree-compile\nError code: -11\nDiagnostics:\nsomething broke in a pass\n"
         "Please report issues to https://github.com/iree-org/iree/issues and include the "
         "crash backtrace.\n #0 0x00007f5ea0b5a0ab llvm::sys::PrintStackTrace(llvm::raw_"
         "ostream&, int) Signals.cpp:0:0\n #1 0x00007f5ea0b571fe llvm::sys::RunSignalHandlers"
         "() Signals.cpp:0:0\nStack dump:\n0.\tProgram arguments: iree-compile -\n")


def test_every_safe_flag_set_is_tried_then_a_clean_error(monkeypatch):
    tried = []

    def always_crash(source, tgt, flags):
        tried.append(list(flags))
        raise TranspileError(CRASH)

    monkeypatch.setattr(compiler, "_invoke_compiler", always_crash)
    with pytest.raises(TranspileError) as caught:
        compiler._compile_with_fallbacks(b"", compiler.target("llvm-cpu"),
                                         ["--iree-opt-level=O3", "--iree-opt-data-tiling"])
    assert len(tried) == 1 + len(compiler.SAFE_FLAG_SETS)
    for flags, safe in zip(tried[1:], compiler.SAFE_FLAG_SETS):
        assert all(flag in flags for flag in safe), (flags, safe)
        options = [flag.split("=")[0] for flag in flags]
        assert len(options) == len(set(options)), flags  # each option set once
    message = str(caught.value)
    assert "crashed on this module" in message and "something broke in a pass" in message
    assert "Stack dump" not in message and "PrintStackTrace" not in message, message
    assert "--iree-opt-level=O1" in message  # the sets tried are named


def test_a_known_failure_takes_its_fix_first(monkeypatch):
    tried = []

    def fail_on_large_vectors(source, tgt, flags):
        tried.append(list(flags))
        if compiler.LARGE_VECTOR_FLAG not in flags:
            raise TranspileError("error: One or more operations with large vector sizes")
        return b"vmfb"

    monkeypatch.setattr(compiler, "_invoke_compiler", fail_on_large_vectors)
    out = compiler._compile_with_fallbacks(b"", compiler.target("llvm-cpu"), ["--a"])
    assert out == b"vmfb" and tried == [["--a"], ["--a", compiler.LARGE_VECTOR_FLAG]]
