"""Compile feedback (transpiler/compile_log.py): the compile log and its recompile reasons,
the status line on an interactive stderr, and ``jit(f).cache_info()``."""

from __future__ import annotations

import io
import logging
import sys
import time

import numpy as np
import pytest

import transpiler as jax
import transpiler.numpy as jnp
from transpiler import compile_log
from transpiler.config import Config, config

HERE = __file__
OFFSET = 1.0  # a global a jitted function reads, rebound by a test


@pytest.fixture
def compile_records(monkeypatch, caplog):
    """Compile logging on; returns a function giving the messages logged so far."""
    monkeypatch.setattr(config, "log_compiles", True)
    caplog.set_level(logging.WARNING, logger="transpiler")

    def messages() -> list[str]:
        return [r.getMessage() for r in caplog.records
                if r.name == "transpiler" and r.levelno == logging.WARNING]
    return messages


def test_a_first_compile_and_a_disk_cache_hit_are_logged(compile_records, monkeypatch,
                                                          tmp_path):
    monkeypatch.setattr(config, "cache_dir", tmp_path)  # empty: the first compile is IREE's

    def scaled(x, y):
        return jnp.sin(x) * y

    f = jax.jit(scaled)
    f(np.ones(3, np.float32), 2.0)
    f(np.ones(3, np.float32), 3.0)  # the in-memory cache: nothing logged
    [first] = compile_records()
    line = scaled.__code__.co_firstlineno
    assert first.startswith(f"compiling scaled ({HERE}:{line}) for "
                            "(x: float32[3], y: float32[] weak): traced in ")
    assert "compiled by IREE in " in first and "because" not in first

    f.clear_cache()
    f(np.ones(3, np.float32), 2.0)
    second = compile_records()[1]
    assert second.startswith("compiling scaled (")  # after clear_cache: a first compile
    assert "loaded from the disk cache in " in second
    [info] = f.cache_info()
    assert info.from_disk_cache and info.reason == "first compile"


def test_each_recompile_reason_is_named(compile_records):
    def f(x, y):
        return x * y

    g = jax.jit(f)
    g(np.ones(3, np.float32), 2.0)
    g(np.ones(4, np.float32), 2.0)  # a new shape
    g(np.ones(4, np.int32), 2.0)  # a new dtype
    g(np.ones(4, np.int32), np.float32(2.0))  # weak -> strong
    g(np.ones(4, np.int32), 2.0)  # back to weak: cached, not logged
    messages = compile_records()
    assert len(messages) == 4
    assert all(m.startswith("recompiling f (") for m in messages[1:])
    assert messages[1].endswith("; specialization 2, because x has a new shape: float32[4], "
                                "was float32[3]")
    assert "specialization 3, because x has a new dtype: int32[4], was float32[4]" \
        in messages[2]
    assert "specialization 4, because y is strongly typed now: float32[], was float32[] " \
           "weak (a Python scalar) -- compared with the closest of the 3 earlier " \
           "specializations" in messages[3]

    h = jax.jit(f)
    h(np.ones(3, np.float32), np.float32(2.0))
    h(np.ones(3, np.float32), 2.0)
    assert "because y is weakly typed now (a Python scalar): float32[] weak, was float32[]" \
        in compile_records()[-1]


def test_a_new_static_value_and_a_rebound_global_are_named(compile_records, monkeypatch):
    def power(x, n):
        return x ** n * OFFSET

    p = jax.jit(power, static_argnums=1)
    p(np.ones(2, np.float32), 2)
    p(np.ones(2, np.float32), 3)
    assert "(x: float32[2], n=2)" in compile_records()[0]
    assert compile_records()[1].endswith("because static argument n has a new value: 3, "
                                         "was 2")
    monkeypatch.setitem(globals(), "OFFSET", 5.0)
    p(np.ones(2, np.float32), 3)
    assert "because OFFSET was rebound: 5.0, was 1.0" in compile_records()[2]


def test_arguments_are_named_by_their_path(compile_records):
    def f(params, *rest, scale=1.0):
        return params["w"] @ rest[0] * scale

    g = jax.jit(f)
    g({"w": np.ones((2, 3), np.float32)}, np.ones(3, np.float32), scale=np.float32(2))
    assert "for (params['w']: float32[2,3], rest[0]: float32[3], scale: float32[])" \
        in compile_records()[0]
    g({"w": np.ones((2, 3), np.float32)}, np.ones(3, np.float32))
    assert "because the arguments' structure changed: PyTreeDef(" in compile_records()[1]


def test_nothing_is_logged_when_off(caplog):
    assert not config.log_compiles
    caplog.set_level(logging.DEBUG, logger="transpiler")
    f = jax.jit(lambda x: x + 1)
    f(np.ones(3, np.float32))
    f(np.ones(5, np.float32))
    assert [r for r in caplog.records if r.name == "transpiler"] == []
    assert len(f.cache_info()) == 2  # still recorded


def test_the_flag_from_the_environment_and_its_jax_name(monkeypatch):
    monkeypatch.setenv("TRANSPILER_LOG_COMPILES", "1")
    monkeypatch.setenv("TRANSPILER_COMPILE_STATUS", "0")
    fresh = Config()
    assert fresh.log_compiles and not fresh.compile_status
    monkeypatch.delenv("TRANSPILER_LOG_COMPILES")
    assert not Config().log_compiles
    fresh.update("jax_log_compiles", False)
    assert not fresh.log_compiles


def test_cache_info_lists_the_specializations():
    f = jax.jit(lambda x, n: x * n, static_argnames="n")
    assert f.cache_info() == []
    f(np.ones(3, np.float32), n=2)
    f(np.ones(3, np.float32), n=2)
    f(np.ones((2, 2), np.float32), n=2)
    infos = f.cache_info()
    assert [i.signature for i in infos] == ["(x: float32[3], n=2)", "(x: float32[2,2], n=2)"]
    assert all(i.trace_seconds > 0 and i.compile_seconds > 0 for i in infos)
    assert infos[0].reason == "first compile"
    assert infos[1].reason == "x has a new shape: float32[2,2], was float32[3]"
    assert isinstance(infos[0], compile_log.Specialization)
    assert "our extension" in jax.jit(abs).cache_info.__doc__.lower()
    f.clear_cache()
    assert f.cache_info() == []


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_status_line_shows_on_a_terminal_and_is_erased(monkeypatch):
    terminal = FakeTerminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    monkeypatch.setattr(compile_log, "STATUS_AFTER_SECONDS", 0)  # show it at once
    f = jax.jit(lambda x: x - 1)
    f(np.ones((4, 5), np.float32))
    line = "compiling <lambda> (x: float32[4,5]) ..."
    assert terminal.getvalue() == "\r" + line + "\r" + " " * len(line) + "\r"
    f(np.ones((4, 5), np.float32))  # a cache hit: nothing
    assert terminal.getvalue().count("compiling") == 1

    monkeypatch.setattr(config, "compile_status", False)
    f(np.ones((4, 6), np.float32))
    assert terminal.getvalue().count("compiling") == 1


def test_no_status_line_off_a_terminal(monkeypatch):
    stream = io.StringIO()  # isatty() is False
    monkeypatch.setattr(sys, "stderr", stream)
    monkeypatch.setattr(compile_log, "STATUS_AFTER_SECONDS", 0)
    jax.jit(lambda x: x * 3)(np.ones(2, np.float32))
    assert stream.getvalue() == ""


def test_the_status_line_waits_for_a_slow_compile(monkeypatch):
    terminal = FakeTerminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    monkeypatch.setattr(compile_log, "STATUS_AFTER_SECONDS", 0.05)
    with compile_log.StatusLine("compiling quick ..."):
        pass
    assert terminal.getvalue() == ""
    with compile_log.StatusLine("compiling slow ..."):
        time.sleep(1.0)
    assert terminal.getvalue() == "\rcompiling slow ...\r" + " " * 18 + "\r"
