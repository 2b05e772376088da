"""Frontend stage get-source and resolve-names: source retrieval, positions, free names."""

from __future__ import annotations

import functools
import hashlib

import libcst as cst
import numpy as np
import pytest

import transpiler
import transpiler.numpy as tnp
from transpiler import jit
from transpiler.errors import TranspileError
from transpiler.frontend import read_function
from transpiler.frontend.get_source import get_source
from transpiler.frontend.resolve_names import free_names, resolve_names

SCALE = 2.0


def where(snippet: str) -> tuple[int, int]:
    """(1-based line, 0-based column) of the only occurrence of `snippet` in the fixtures."""
    with open(__file__, encoding="utf-8") as handle:
        text = handle.read().split("# " + "--- tests ---")[0]
    hits = [(n, line.index(snippet)) for n, line in enumerate(text.splitlines(), 1)
            if snippet in line]
    assert len(hits) == 1, (snippet, hits)
    return hits[0]


def code(func: cst.FunctionDef) -> str:
    return cst.Module(body=[func]).code


def located(source, text: str):
    """The location of the statement whose code is `text`."""
    found = [loc for node, loc in source.locations.items()
             if isinstance(node, cst.BaseSmallStatement)
             and cst.Module([]).code_for_node(node).strip() == text]
    assert len(found) == 1, (text, found)
    return found[0]


# --- fixtures --------------------------------------------------------------------------

def helper(x):
    return x * SCALE


def plain(x, y=SCALE):
    z = tnp.sin(x) + np.float32(y)  # plain-z
    return helper(z)


def make_closure(k):
    offset = 3.0

    def inner(x):
        value = tnp.cos(x) * k + offset  # inner-value
        return value

    return inner


PAIR = (lambda x: x + 1, lambda y: tnp.exp(y) * SCALE)  # two-lambdas
CURRY = lambda a: lambda b: a * b  # noqa: E731 curry


@transpiler.jit
def decorated(x):
    return x + SCALE  # decorated-return


@functools.partial(jit, static_argnums=0)
@functools.lru_cache(maxsize=None)
def decorated_partial(n):
    return n * 2  # partial-return


class Holder:
    def method(self, x):
        _text = """
not indented"""
        return x  # method-return


# --- tests -----------------------------------------------------------------------------

def test_plain_function():
    source = get_source(plain)
    assert source.name == "plain"
    assert source.filename == __file__
    assert source.first_line == where("def plain(")[0]
    assert source.col_offset == 0
    assert source.text.startswith("def plain(x, y=SCALE):")
    loc = located(source, "z = tnp.sin(x) + np.float32(y)")
    assert (loc.line, loc.col) == where("z = tnp.sin(x)")
    assert loc.end_col == loc.col + len("z = tnp.sin(x) + np.float32(y)")
    assert source.locations[source.func].line == where("def plain(")[0]


def test_nested_function_keeps_real_columns():
    inner = make_closure(2.0)
    source = get_source(inner)
    assert source.name == "inner"
    assert source.col_offset == 4
    assert source.text.startswith("def inner(x):\n    value =")  # dedented
    loc = located(source, "value = tnp.cos(x) * k + offset")
    assert (loc.line, loc.col) == where("value = tnp.cos(x) * k")


def test_closure_and_aliased_module_resolve():
    inner = make_closure(2.0)
    source, namespace = read_function(inner)
    assert namespace["tnp"] is tnp  # the user's alias for transpiler.numpy
    assert namespace["k"] == 2.0 and namespace["offset"] == 3.0  # closure cells
    assert "value" not in namespace and "x" not in namespace  # locals and params


def test_globals_builtins_and_defaults_resolve():
    source, namespace = read_function(plain)
    assert namespace["helper"] is helper
    assert namespace["np"] is np
    assert namespace["SCALE"] == SCALE  # read by a parameter default
    assert set(free_names(source.func)) == {"SCALE", "helper", "np", "tnp"}


def test_builtins_and_unresolvable_names():
    def uses_builtins(x):
        return len(x) + undefined_name  # noqa: F821

    namespace = resolve_names(uses_builtins, get_source(uses_builtins).func)
    assert namespace == {"len": len}  # unknown names are left out


def test_empty_closure_cell_is_an_error():
    def outer():
        def read_it():
            return missing
        with pytest.raises(TranspileError, match="'missing'") as info:
            read_function(read_it)
        missing = 1  # noqa: F841
        return info

    info = outer()
    assert info.value.line == outer.__code__.co_firstlineno + 2
    assert "return missing" in str(info.value) and "^^^^^^^" in str(info.value)


def test_two_lambdas_on_one_line():
    first, second = PAIR
    line = where("# two-lambdas")[0]
    a, b = get_source(first), get_source(second)
    assert (a.name, b.name) == (f"lambda_{line}_1", f"lambda_{line}_2")
    assert code(a.func) == f"def lambda_{line}_1(x):\n    return x + 1\n"
    assert code(b.func) == f"def lambda_{line}_2(y):\n    return tnp.exp(y) * SCALE\n"
    assert a.locations[a.func].col == where("lambda x: x + 1")[1]
    ret = b.locations[b.func.body.body[0].body[0]]
    assert (ret.line, ret.col) == where("lambda y: tnp.exp(y)")
    body = b.func.body.body[0].body[0].value
    assert b.locations[body].col == where("tnp.exp(y) * SCALE")[1]
    assert resolve_names(second, b.func) == {"tnp": tnp, "SCALE": SCALE}


def test_nested_lambdas():
    line = where("# noqa: E731 curry")[0]
    outer = get_source(CURRY)
    assert code(outer.func) == f"def lambda_{line}_1(a):\n    return lambda b: a * b\n"
    inner_fn = CURRY(3.0)
    inner = get_source(inner_fn)
    assert code(inner.func) == f"def lambda_{line}_2(b):\n    return a * b\n"
    assert resolve_names(inner_fn, inner.func) == {"a": 3.0}


def test_transpiler_decorators_are_stripped():
    raw = decorated.__wrapped__ if hasattr(decorated, "__wrapped__") else decorated.fun
    source = get_source(raw)
    assert code(source.func) == "def decorated(x):\n    return x + SCALE  # decorated-return\n"
    assert source.locations[source.func].line == where("def decorated(")[0]
    assert source.text.startswith("@transpiler.jit\n")  # the original text keeps them


def test_jit_object_is_looked_through():
    source, namespace = read_function(decorated)  # the `Jitted` object itself
    assert source.name == "decorated" and not source.func.decorators
    assert namespace == {"SCALE": SCALE}


def test_stacked_decorators_are_stripped():
    raw = decorated_partial.__wrapped__
    while hasattr(raw, "__wrapped__"):  # lru_cache wrapper -> the function
        raw = raw.__wrapped__
    source = get_source(raw)
    assert not source.func.decorators
    assert source.func.name.value == "decorated_partial"


def test_wrapper_is_transformed_not_the_wrapped_function():
    def logging_decorator(f):
        @functools.wraps(f)
        def wrapper(*args):
            return f(*args)  # wrapper-body
        return wrapper

    @logging_decorator
    def wrapped(x):
        return x

    source = get_source(wrapped)  # inspect.getsource would return `wrapped`'s source
    assert source.func.name.value == "wrapper"
    assert resolve_names(wrapped, source.func)["f"] is wrapped.__wrapped__


def test_method_in_class_body():
    source = get_source(Holder.method)
    loc = located(source, "return x")
    assert (loc.line, loc.col) == where("return x  # method-return")
    assert '"""\nnot indented"""' in code(source.func)


@pytest.mark.parametrize("fn", [len, np.sin, functools.partial(helper), Holder().method])
def test_no_python_source(fn):
    with pytest.raises(TranspileError, match="custom_vjp|plain function"):
        get_source(fn)


def test_exec_code_without_source():
    namespace: dict = {}
    exec(compile("def made(x):\n    return x\n", "<generated>", "exec"), namespace)
    with pytest.raises(TranspileError, match="(?s)source code is not available.*custom_vjp"):
        get_source(namespace["made"])


def test_parse_function_contract():
    pytest.importorskip("transpiler.frontend.anf")
    from transpiler.frontend import ParsedFunction, parse_function
    from transpiler.frontend.passes import iter_statements

    inner = make_closure(2.0)
    parsed = parse_function(inner)
    assert isinstance(parsed, ParsedFunction)
    assert (parsed.name, parsed.filename) == ("inner", __file__)
    assert _user_names(parsed.namespace) == {"tnp": tnp, "k": 2.0, "offset": 3.0}
    text = get_source(inner).text
    assert parsed.source_hash == hashlib.sha256(text.encode()).hexdigest()
    line = where("value = tnp.cos(x) * k")[0]
    statements = iter_statements(parsed.func)
    assert statements and all(parsed.locations[s].line == line for s in statements[:-2])
    assert parsed.func in parsed.locations

    lam = parse_function(PAIR[1])
    assert lam.name == f"lambda_{where('# two-lambdas')[0]}_2"
    assert _user_names(lam.namespace) == {"tnp": tnp, "SCALE": SCALE}


def _user_names(namespace):
    """The namespace without the names rewriting may introduce (range, len ...)."""
    from transpiler.frontend import REWRITE_BUILTINS
    from transpiler.rewritten import INTRODUCED
    return {k: v for k, v in namespace.items() if k not in (*REWRITE_BUILTINS, *INTRODUCED)}
