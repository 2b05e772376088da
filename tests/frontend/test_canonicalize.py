"""Canonicalization passes: golden outputs, source map, errors, and unchanged behaviour."""

from __future__ import annotations

import copy
import textwrap

import numpy as np
import pytest

from tests.frontend.helpers import (
    FILENAME,
    canonical,
    check_source_map,
    code,
    compile_function,
    names_in,
    parse_function,
)
from transpiler.errors import TranspileError
from transpiler.frontend.canonicalize import CANONICALIZE_PASSES, canonicalize_function
from transpiler.frontend.passes import dump_stages

GOLDEN = {
    "aug_assign": ('''
        def f(x, y):
            x += y
            x *= y + 1.0
            x **= 2
            return x
        ''', '''
        def f(x, y):
            x = x + y
            x = x * (y + 1.0)
            x = x ** 2
            return x
        '''),
    "early_return": ('''
        def f(x, flag):
            if flag > 0:
                return x * 2.0
            y = x + 1.0
            return y * y
        ''', '''
        def f(x, flag):
            if flag > 0:
                _ret = x * 2.0
            else:
                y = x + 1.0
                _ret = y * y
            return _ret
        '''),
    "nested_early_return_and_elif": ('''
        def f(x, a, b):
            if a > 0:
                if b > 0:
                    return x
                y = x * 2
            elif b < 0:
                return -x
            z = x + 1
            return z
        ''', '''
        def f(x, a, b):
            if a > 0:
                if b > 0:
                    _ret = x
                else:
                    y = x * 2
                    z = x + 1
                    _ret = z
            else:
                if b < 0:
                    _ret = -x
                else:
                    z = x + 1
                    _ret = z
            return _ret
        '''),
    "no_return": ('''
        def f(x):
            y = x + 1
        ''', '''
        def f(x):
            y = x + 1
            return None
        '''),
    "for_array": ('''
        def f(xs):
            total = 0.0
            for x in xs:
                total = total + x * x
            return total
        ''', '''
        def f(xs):
            total = 0.0
            _seq0 = _sequence(xs)
            for _i0 in range(len(_seq0)):
                x = _seq0[_i0]
                total = total + x * x
            return total
        '''),
    "enumerate": ('''
        def f(xs):
            total = 0.0
            for i, x in enumerate(xs):
                total = total + i * x
            return total
        ''', '''
        def f(xs):
            total = 0.0
            _seq0 = _sequence(xs)
            for i in range(len(_seq0)):
                x = _seq0[i]
                total = total + i * x
            return total
        '''),
    "enumerate_zip_start": ('''
        def f(xs, ys):
            total = 0.0
            for k, (a, b) in enumerate(zip(xs, ys), 1):
                total = total + k * a * b
            return total
        ''', '''
        def f(xs, ys):
            total = 0.0
            _seq0 = _sequence(xs)
            _seq1 = _sequence(ys)
            for _i0 in range(min(len(_seq0), len(_seq1))):
                k = _i0 + 1
                a = _seq0[_i0]
                b = _seq1[_i0]
                total = total + k * a * b
            return total
        '''),
    "iterables_hoisted_range_kept": ('''
        def f(d, n, g):
            s = 0
            for k, v in d.items():
                s = s + v
            for i in range(n - 1):
                s = s + i
            for e in g(n):
                s = s + e
            return s
        ''', '''
        def f(d, n, g):
            s = 0
            _seq0 = list(d.items())
            for _i0 in range(len(_seq0)):
                k, v = _seq0[_i0]
                s = s + v
            for i in range(n - 1):
                s = s + i
            _seq1 = _sequence(g(n))
            for _i1 in range(len(_seq1)):
                e = _seq1[_i1]
                s = s + e
            return s
        '''),
    "break_continue": ('''
        def f(xs):
            total = 0.0
            for x in xs:
                if x < 0:
                    continue
                if total > 5:
                    break
                total += x
            return total
        ''', '''
        def f(xs):
            total = 0.0
            _seq0 = _sequence(xs)
            _brk0 = False
            for _i0 in range(len(_seq0)):
                if not _brk0:
                    _cont0 = False
                    x = _seq0[_i0]
                    if x < 0:
                        _cont0 = True
                    if not _cont0:
                        if total > 5:
                            _brk0 = True; _cont0 = True
                        if not _cont0:
                            total = total + x
            return total
        '''),
    "while_break_else": ('''
        def f(x):
            i = 0
            while x > 1:
                if i > 10:
                    break
                x = x / 2
                i = i + 1
            else:
                x = -x
            return x
        ''', '''
        def f(x):
            i = 0
            _brk0 = False
            while not _brk0 and (x > 1):
                if i > 10:
                    _brk0 = True
                if not _brk0:
                    x = x / 2
                    i = i + 1
            if not _brk0:
                x = -x
            return x
        '''),
    "range_break_keeps_target": ('''
        def f(n):
            for i in range(n):
                if i * i > n:
                    break
            return i
        ''', '''
        def f(n):
            _brk0 = False
            for _i0 in range(n):
                if not _brk0:
                    i = _i0
                    if i * i > n:
                        _brk0 = True
            return i
        '''),
}


def _dedent(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_golden(name: str) -> None:
    source, expected = GOLDEN[name]
    func, _, _ = canonical(source)
    assert code(func) == _dedent(expected)


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_source_map_covers_every_statement(name: str) -> None:
    func, locations, source = parse_function(GOLDEN[name][0])
    names = names_in(func)
    out, out_locations = canonicalize_function(func, FILENAME, locations)
    check_source_map(out, out_locations, source, names)


def test_source_map_lines() -> None:
    out, locations = canonical(GOLDEN["early_return"][0])[:2]
    then_branch = out.body.body[0].body.body[0]  # `_ret = x * 2.0`
    else_first = out.body.body[0].orelse.body.body[0]  # `y = x + 1.0`
    final = out.body.body[-1]  # `return _ret`
    assert locations[then_branch].line == 3
    assert locations[else_first].line == 4
    assert locations[final].line == 5  # the last user return


SAMPLES = {
    "aug_assign": [(np.arange(3.0), np.ones(3))],
    "early_return": [(np.arange(3.0), 1.0), (np.arange(3.0), -1.0)],
    "nested_early_return_and_elif": [(2.0, a, b) for a in (-1, 1) for b in (-1, 0, 1)],
    "no_return": [(1.0,)],
    "for_array": [(np.arange(4.0),), (np.zeros(0),)],
    "enumerate": [(np.arange(4.0),)],
    "enumerate_zip_start": [(np.arange(4.0), np.arange(3.0) + 1)],
    "iterables_hoisted_range_kept": [({"a": 1, "b": 2}, 4, lambda n: list(range(n)))],
    "break_continue": [(np.array([1.0, -2.0, 3.0, 4.0, -1.0, 5.0]),)],
    "while_break_else": [(10.0,), (1e6,)],
    "range_break_keeps_target": [(3,), (20,)],
}


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_same_results(name: str) -> None:
    original = compile_function(_dedent(GOLDEN[name][0]))
    rewritten = compile_function(canonical(GOLDEN[name][0])[0])
    for args in SAMPLES[name]:
        np.testing.assert_array_equal(rewritten(*copy.deepcopy(args)), original(*copy.deepcopy(args)))


def test_return_in_loop_is_an_error_at_its_line() -> None:
    with pytest.raises(TranspileError, match="`return` inside a loop") as info:
        canonical('''
            def f(xs):
                for x in xs:
                    if x > 0:
                        return x
                return 0
            ''')
    assert info.value.line == 4 and info.value.file == FILENAME
    assert "restructure" in info.value.hint


def test_enumerate_must_be_unpacked() -> None:
    with pytest.raises(TranspileError, match="unpack `enumerate`") as info:
        canonical('''
            def f(xs):
                for pair in enumerate(xs):
                    y = pair
                return y
            ''')
    assert info.value.line == 2


def test_dump_after_every_stage() -> None:
    func, locations, _ = parse_function(GOLDEN["aug_assign"][0])
    codes = dump_stages(func, FILENAME, locations, CANONICALIZE_PASSES)
    assert list(codes) == [stage.name for stage in CANONICALIZE_PASSES]
    assert "x += y" not in codes["expand-aug-assign"]
    assert "x = x + y" in codes["expand-aug-assign"]
