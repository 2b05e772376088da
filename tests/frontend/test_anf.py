"""A-normal form: golden outputs, the output contract, source map and unchanged behaviour."""

from __future__ import annotations

import copy
import textwrap

import libcst as cst
import numpy as np
import pytest

from tests.frontend.helpers import (
    FILENAME,
    anf,
    check_source_map,
    code,
    compile_function,
    names_in,
    parse_function,
)
from transpiler.errors import TranspileError
from transpiler.frontend.anf import _is_constant, to_anf
from transpiler.frontend.canonicalize import canonicalize_function
from transpiler.frontend.passes import dump_stages, frontend_stages

GOLDEN = {
    "mlp_loss": ('''
        def loss(params, x, y):
            h = jnp.tanh(x @ params["w1"] + params["b1"])
            pred = h @ params["w2"] + params["b2"]
            return jnp.mean((pred - y) ** 2)
        ''', '''
        def loss(params, x, y):
            _t0 = params["w1"]
            _t1 = x @ _t0
            _t2 = params["b1"]
            _t3 = _t1 + _t2
            h = jnp.tanh(_t3)
            _t4 = params["w2"]
            _t5 = h @ _t4
            _t6 = params["b2"]
            pred = _t5 + _t6
            _t7 = pred - y
            _t8 = _t7 ** 2
            _t9 = jnp.mean(_t8)
            return _t9
        '''),
    "nested_calls": ('''
        def f(x):
            return jnp.sum(jnp.exp(jnp.sin(x) * 2.0), axis=0, keepdims=True)
        ''', '''
        def f(x):
            _t0 = jnp.sin(x)
            _t1 = _t0 * 2.0
            _t2 = jnp.exp(_t1)
            _t3 = jnp.sum(_t2, axis=0, keepdims=True)
            return _t3
        '''),
    "methods": ('''
        def f(x, h):
            s = x.sum(axis=1)
            return h.T @ x.reshape(-1, 2).mean(axis=0) + s.max()
        ''', '''
        def f(x, h):
            s = x.sum(axis=1)
            _t0 = h.T
            _t1 = x.reshape(-1, 2)
            _t2 = _t1.mean(axis=0)
            _t3 = _t0 @ _t2
            _t4 = s.max()
            _t5 = _t3 + _t4
            return _t5
        '''),
    "slicing": ('''
        def f(x, n):
            a = x[1:n, ::2]
            b = x[None, :, 0]
            return a.sum() + b[..., -1].sum() + x[n - 1, 0]
        ''', '''
        def f(x, n):
            a = x[1:n, ::2]
            b = x[None, :, 0]
            _t0 = a.sum()
            _t1 = b[..., -1]
            _t2 = _t1.sum()
            _t3 = _t0 + _t2
            _t4 = n - 1
            _t5 = x[_t4, 0]
            _t6 = _t3 + _t5
            return _t6
        '''),
    "early_return": ('''
        def f(x, flag):
            if flag > 0:
                return x * 2.0
            y = x + 1.0
            return y * y
        ''', '''
        def f(x, flag):
            _t0 = flag > 0
            if _t0:
                _ret = x * 2.0
            else:
                y = x + 1.0
                _ret = y * y
            return _ret
        '''),
    "aug_assign": ('''
        def f(x, y):
            x += y
            x *= y + 1.0
            x **= 2
            return x
        ''', '''
        def f(x, y):
            x = x + y
            _t0 = y + 1.0
            x = x * _t0
            x = x ** 2
            return x
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
            _t0 = len(_seq0)
            for _i0 in range(_t0):
                x = _seq0[_i0]
                _t1 = x * x
                total = total + _t1
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
            _t0 = len(_seq0)
            for i in range(_t0):
                x = _seq0[i]
                _t1 = i * x
                total = total + _t1
            return total
        '''),
    "zip": ('''
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
            _t0 = len(_seq0)
            _t1 = len(_seq1)
            _t2 = min(_t0, _t1)
            for _i0 in range(_t2):
                k = _i0 + 1
                a = _seq0[_i0]
                b = _seq1[_i0]
                _t3 = k * a
                _t4 = _t3 * b
                total = total + _t4
            return total
        '''),
    "while": ('''
        def f(x):
            n = 0
            while jnp.abs(x) > 1.0:
                x = x / 2.0
                n = n + 1
            return x, n
        ''', '''
        def f(x):
            n = 0
            _t0 = jnp.abs(x)
            _t1 = _t0 > 1.0
            while _t1:
                x = x / 2.0
                n = n + 1
                _t2 = jnp.abs(x)
                _t1 = _t2 > 1.0
            _t3 = (x, n)
            return _t3
        '''),
    "ternary": ('''
        def f(x, c):
            y = x * 2.0 if c > 0 else -x
            return y
        ''', '''
        def f(x, c):
            _t0 = c > 0
            if _t0:
                y = x * 2.0
            else:
                y = -x
            return y
        '''),
    "and_or": ('''
        def f(a, b):
            return (a > 0 and b > 0) or a == b
        ''', '''
        def f(a, b):
            _t0 = a > 0
            if _t0:
                _t0 = b > 0
            if _t0:
                pass
            else:
                _t0 = a == b
            return _t0
        '''),
    "chained_compare": ('''
        def f(lo, x, hi):
            return lo < x + 1 <= hi
        ''', '''
        def f(lo, x, hi):
            _t1 = x + 1
            _t0 = lo < _t1
            if _t0:
                _t0 = _t1 <= hi
            return _t0
        '''),
    "tuple_unpack": ('''
        def f(x):
            a, b = jnp.split(x, 2)
            b, a = a, b
            return a - b
        ''', '''
        def f(x):
            _t0 = jnp.split(x, 2)
            a, b = _t0
            _t1 = (a, b)
            b, a = _t1
            _t2 = a - b
            return _t2
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
            _t0 = len(_seq0)
            for _i0 in range(_t0):
                _t1 = not _brk0
                if _t1:
                    _cont0 = False
                    x = _seq0[_i0]
                    _t2 = x < 0
                    if _t2:
                        _cont0 = True
                    _t3 = not _cont0
                    if _t3:
                        _t4 = total > 5
                        if _t4:
                            _brk0 = True
                            _cont0 = True
                        _t5 = not _cont0
                        if _t5:
                            total = total + x
            return total
        '''),
    "no_return": ('''
        def f(x):
            y = x + 1
        ''', '''
        def f(x):
            y = x + 1
            _t0 = None
            return _t0
        '''),
    "literals": ('''
        def f(x, w):
            params = {"w": w * 2.0, "b": [x, 1.0]}
            return jnp.asarray(params["b"][0], dtype=jnp.float32) + (x, w)[1]
        ''', '''
        def f(x, w):
            _t0 = w * 2.0
            _t1 = [x, 1.0]
            params = {"w": _t0, "b": _t1}
            _t2 = params["b"]
            _t3 = _t2[0]
            _t4 = jnp.float32
            _t5 = jnp.asarray(_t3, dtype=_t4)
            _t6 = (x, w)
            _t7 = _t6[1]
            _t8 = _t5 + _t7
            return _t8
        '''),
}


def _dedent(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


# ------------------------------------------------------------------ the output contract
def _is_atom(expr: cst.BaseExpression) -> bool:
    return (isinstance(expr, cst.Name) or _is_constant(expr)) and not expr.lpar


def _is_variable(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Name) and not _is_constant(expr)


def _is_dotted(expr: cst.BaseExpression) -> bool:
    while isinstance(expr, cst.Attribute):
        expr = expr.value
    return isinstance(expr, cst.Name)


def _is_index(element: cst.SubscriptElement) -> bool:
    index = element.slice
    if isinstance(index, cst.Index):
        return _is_atom(index.value) or isinstance(index.value, cst.Ellipsis)
    return all(b is None or _is_atom(b) for b in (index.lower, index.upper, index.step))


def _is_anf_value(value: cst.BaseExpression) -> bool:
    if _is_atom(value):
        return True
    if isinstance(value, cst.Call):
        return _is_dotted(value.func) and all(_is_atom(arg.value) for arg in value.args)
    if isinstance(value, cst.BinaryOperation):
        left = value.left.with_changes(lpar=[], rpar=[])  # `(-1) ** x`
        return _is_atom(left) and _is_atom(value.right)
    if isinstance(value, cst.UnaryOperation):
        return _is_atom(value.expression)
    if isinstance(value, cst.Comparison):
        return (len(value.comparisons) == 1 and _is_atom(value.left)
                and _is_atom(value.comparisons[0].comparator))
    if isinstance(value, cst.Subscript):
        return _is_variable(value.value) and all(_is_index(e) for e in value.slice)
    if isinstance(value, cst.Attribute):
        return _is_dotted(value.value)
    if isinstance(value, (cst.Tuple, cst.List, cst.Set)):
        return all(_is_atom(e.value) for e in value.elements)
    if isinstance(value, cst.Dict):
        return all(_is_atom(e.key) and _is_atom(e.value) for e in value.elements)  # type: ignore[union-attr]
    return False


def assert_anf_block(statements, top: bool = False) -> None:  # type: ignore[no-untyped-def]
    for k, statement in enumerate(statements):
        text = cst.Module([]).code_for_node(statement).strip()
        if isinstance(statement, cst.SimpleStatementLine):
            assert len(statement.body) == 1, text
            (small,) = statement.body
            if isinstance(small, cst.Return):
                assert top and k == len(statements) - 1 and _is_variable(small.value), text
            elif isinstance(small, cst.Assign):
                (target,) = small.targets
                if isinstance(target.target, cst.Name):
                    assert _is_anf_value(small.value), text
                else:
                    assert isinstance(target.target, (cst.Tuple, cst.List)), text
                    assert _is_variable(small.value), text
            else:
                assert isinstance(small, cst.Pass), text
        elif isinstance(statement, cst.If):
            assert _is_variable(statement.test), text
            assert_anf_block(statement.body.body)
            if statement.orelse is not None:
                assert isinstance(statement.orelse, cst.Else), text
                assert_anf_block(statement.orelse.body.body)
        elif isinstance(statement, cst.For):
            assert isinstance(statement.target, cst.Name) and statement.orelse is None, text
            assert isinstance(statement.iter, cst.Call) and statement.iter.func.value == "range"
            assert all(_is_atom(arg.value) for arg in statement.iter.args), text
            assert_anf_block(statement.body.body)
        elif isinstance(statement, cst.While):
            assert _is_variable(statement.test) and statement.orelse is None, text
            assert_anf_block(statement.body.body)
        else:
            raise AssertionError(f"not ANF: {text}")
    if top:
        assert isinstance(statements[-1].body[0], cst.Return)


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_golden(name: str) -> None:
    source, expected = GOLDEN[name]
    func, _, _ = anf(source)
    assert code(func) == _dedent(expected)
    assert_anf_block(func.body.body, top=True)


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_source_map_covers_every_statement(name: str) -> None:
    func, locations, source = parse_function(GOLDEN[name][0])
    names = names_in(func)
    func, locations = canonicalize_function(func, FILENAME, locations)
    func, locations = to_anf(func, FILENAME, locations)
    check_source_map(func, locations, source, names)


def test_source_map_lines_and_expressions() -> None:
    func, locations, _ = anf(GOLDEN["mlp_loss"][0])
    lines = [locations[s].line for s in func.body.body]
    assert lines == [2, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4]
    # hoisted operations keep the user's column of the expression they came from
    tanh_arg = func.body.body[3].body[0].value  # `_t1 + _t2` from `x @ params["w1"] + params["b1"]`
    assert locations[tanh_arg].line == 2 and locations[tanh_arg].col == 17
    # statements nested in a generated `if` map to the user statement they came from
    func, locations, _ = anf(GOLDEN["while"][0])
    loop = func.body.body[3]
    assert isinstance(loop, cst.While)
    assert [locations[s].line for s in loop.body.body] == [4, 5, 3, 3]


def test_temporaries_skip_user_names() -> None:
    func, _, _ = anf('''
        def f(x, _t0):
            return x * _t0 + 1
        ''')
    assert code(func) == _dedent('''
        def f(x, _t0):
            _t1 = x * _t0
            _t2 = _t1 + 1
            return _t2
        ''')


def test_multiple_targets_subscript_target_and_docstring() -> None:
    func, _, _ = anf('''
        def f(x, y, flag):
            """Docstring is dropped."""
            a = b = x + y
            L = [1, 2]
            L[0] = a
            while flag:
                flag = False
            return L[0] + b
        ''')
    assert code(func) == _dedent('''
        def f(x, y, flag):
            _t0 = x + y
            a = _t0
            b = _t0
            L = [1, 2]
            L[0] = a
            while flag:
                flag = False
            _t1 = L[0]
            _t2 = _t1 + b
            return _t2
        ''')


def test_unsupported_expression_is_an_error_at_its_line() -> None:
    with pytest.raises(TranspileError, match="Yield") as info:
        anf('''
            def f(x):
                y = x + 1
                g = (yield x)
                return y
            ''')
    assert info.value.line == 3


def test_lambda_becomes_a_nested_def_in_anf() -> None:
    func, locations, _ = anf('''
        def f(x, w):
            g = lambda t: jnp.sin(t * w)
            return g(x)
        ''')
    assert cst.Module(body=[func]).code == _dedent('''
        def f(x, w):
            def _lambda0(t):
                _t0 = t * w
                _t1 = jnp.sin(_t0)
                return _t1
            g = _lambda0
            _t2 = g(x)
            return _t2
        ''')
    nested = func.body.body[0]
    assert isinstance(nested, cst.FunctionDef) and locations[nested].line == 2


def test_dump_after_every_frontend_stage() -> None:
    func, locations, _ = parse_function(GOLDEN["aug_assign"][0])
    codes = dump_stages(func, FILENAME, locations, frontend_stages())
    assert list(codes)[-1] == "to-anf"
    assert codes["to-anf"] == _dedent(GOLDEN["aug_assign"][1])


# ------------------------------------------------------------------ same results
RNG = np.random.default_rng(0)
PARAMS = {"w1": RNG.normal(size=(3, 4)), "b1": RNG.normal(size=4),
          "w2": RNG.normal(size=(4, 2)), "b2": RNG.normal(size=2)}
SAMPLES = {
    "mlp_loss": [(PARAMS, RNG.normal(size=(5, 3)), RNG.normal(size=(5, 2)))],
    "nested_calls": [(RNG.normal(size=(3, 4)),)],
    "methods": [(RNG.normal(size=(4, 6)), RNG.normal(size=(2, 3)))],
    "slicing": [(RNG.normal(size=(4, 5, 3)), 3)],
    "early_return": [(np.arange(3.0), 1.0), (np.arange(3.0), -1.0)],
    "aug_assign": [(np.arange(3.0), np.ones(3))],
    "for_array": [(np.arange(4.0),)],
    "enumerate": [(np.arange(4.0),)],
    "zip": [(np.arange(4.0), np.arange(3.0) + 1)],
    "while": [(37.0,), (0.5,)],
    "ternary": [(np.arange(3.0), 1), (np.arange(3.0), -1)],
    "and_or": [(a, b) for a in (-1, 0, 1) for b in (-1, 0, 1)],
    "chained_compare": [(0, x, 3) for x in (-2, 0, 1, 2, 3)],
    "tuple_unpack": [(np.arange(4.0),)],
    "break_continue": [(np.array([1.0, -2.0, 3.0, 4.0, -1.0, 5.0]),)],
    "no_return": [(1.0,)],
    "literals": [(np.arange(3.0), 2.0)],
}


def test_every_golden_has_samples() -> None:
    assert set(SAMPLES) == set(GOLDEN)


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_same_results(name: str) -> None:
    original = compile_function(_dedent(GOLDEN[name][0]))
    rewritten = compile_function(anf(GOLDEN[name][0])[0])
    for args in SAMPLES[name]:
        expected = original(*copy.deepcopy(args))
        got = rewritten(*copy.deepcopy(args))
        if isinstance(expected, tuple):
            assert isinstance(got, tuple) and len(got) == len(expected)
            for e, g in zip(expected, got):
                np.testing.assert_array_equal(g, e)
        else:
            np.testing.assert_array_equal(got, expected)


def test_same_results_with_transpiler_numpy() -> None:
    import transpiler.numpy as tnp

    namespace = {"jnp": tnp}
    original = compile_function(_dedent(GOLDEN["mlp_loss"][0]), namespace)
    rewritten = compile_function(anf(GOLDEN["mlp_loss"][0])[0], namespace)
    params = {k: v.astype(np.float32) for k, v in PARAMS.items()}
    x, y = (RNG.normal(size=s).astype(np.float32) for s in ((5, 3), (5, 2)))
    np.testing.assert_allclose(np.asarray(rewritten(params, x, y)),
                               np.asarray(original(params, x, y)), rtol=1e-6)
