"""Frontend stage fence: each unsupported construct -> TranspileError at file:line:col."""

from __future__ import annotations

import pytest

from transpiler.errors import TranspileError
from transpiler.frontend import read_function

# Each fixture's offending code carries a unique marker comment `# F:<name>`; the error must
# point at `snippet` on that line.


def class_def(x):
    class Local:  # F:class
        pass
    return x


def generator(x):
    yield x  # F:yield


def global_decl(x):
    global COUNTER  # F:global
    return x


def nonlocal_decl(x):
    y = x

    def inner():
        nonlocal y  # F:nonlocal
        return y
    return inner()


def try_stmt(x):
    try:  # F:try
        return x
    except ValueError:
        return x


def with_stmt(x):
    with open("f") as handle:  # F:with
        return handle


async def async_def(x):  # F:async
    return x


def del_stmt(x):
    y = x
    del y  # F:del
    return x


def import_stmt(x):
    import math  # F:import
    return math.sin(x)


def from_import(x):
    from math import sin  # F:from
    return sin(x)


def set_item(x, v):
    x[0] = v  # F:setitem
    return x


def aug_set_item(x, v):
    x[1:3] += v  # F:augitem
    return x


def tuple_set_item(x, v):
    y, x[2] = v, v  # F:tupleitem
    return y


def set_attr(x, v):
    x.value = v  # F:setattr
    return x


def walrus(x):
    if (y := x * 2) > 0:  # F:walrus
        return y
    return x


def starred_target(xs):
    (first, *rest), last = xs  # (nested; one level is written out) # F:starred
    return first


def nested_decorator(x):
    @staticmethod  # F:decorator
    def inner(y):
        return y
    return inner(x)


def match_stmt(x):
    match x:  # F:match
        case 0:
            return 1
    return x


# (fixture, marker, the text the caret starts at, the caret's width or None (to line end),
#  words the message must contain)
CASES = [
    (class_def, "class", "class Local:", None, "class definitions"),
    (generator, "yield", "yield x", len("yield x"), "generators"),
    (global_decl, "global", "global COUNTER", len("global COUNTER"), "`global`"),
    (nonlocal_decl, "nonlocal", "nonlocal y", len("nonlocal y"), "`nonlocal`"),
    (try_stmt, "try", "try:", None, "`try`"),
    (with_stmt, "with", "with open", None, "`with`"),
    (async_def, "async", "async def", None, "`async def`"),
    (del_stmt, "del", "del y", len("del y"), "`del`"),
    (import_stmt, "import", "import math", len("import math"), "`import`"),
    (from_import, "from", "from math", len("from math import sin"), "`import`"),
    (set_item, "setitem", "x[0]", len("x[0]"), "x = x.at[0].set(value)"),
    (aug_set_item, "augitem", "x[1:3]", len("x[1:3]"), "x = x.at[1:3].add(v)"),
    (tuple_set_item, "tupleitem", "x[2]", len("x[2]"), "x = x.at[2].set(value)"),
    (set_attr, "setattr", "x.value", len("x.value"), "assignment to an attribute"),
    (walrus, "walrus", "y := x * 2", len("y := x * 2"), "`:=`"),
    (starred_target, "starred", "*rest", len("*rest"), "starred"),
    (nested_decorator, "decorator", "@staticmethod", len("@staticmethod"),
     "inner = staticmethod(inner)"),
    (match_stmt, "match", "match x:", None, "`match`"),
]


def _marked_line(marker: str) -> tuple[int, str]:
    with open(__file__, encoding="utf-8") as handle:
        hits = [(n, line.rstrip("\n")) for n, line in enumerate(handle, 1)
                if line.rstrip().endswith(f"# F:{marker}")]
    assert len(hits) == 1, marker
    return hits[0]


@pytest.mark.parametrize("fn, marker, start, width, words", CASES,
                         ids=[case[1] for case in CASES])
def test_fence_rejects(fn, marker, start, width, words):
    line, text = _marked_line(marker)
    col = text.index(start)
    with pytest.raises(TranspileError) as info:
        read_function(fn)
    error = info.value
    message = str(error)
    assert (error.file, error.line, error.col) == (__file__, line, col)
    assert f"{__file__}:{line}:{col + 1}: " in message
    assert words in message
    stripped = text.lstrip()
    indent = len(text) - len(stripped)
    carets = width if width is not None else len(text) - col
    assert f"\n    {stripped}\n    {' ' * (col - indent)}{'^' * carets}" in message
    assert error.hint  # every rejection says what to do instead


def allowed(x, *args, **kwargs):
    """Constructs the fence lets through."""
    assert x is not None, "x must be given"
    print(f"x = {x}", *args)
    f = lambda y, scale=2: y * scale  # noqa: E731

    def helper(z):
        return z + 1

    total = 0
    for i in range(3):
        if i == 1:
            continue
        total += helper(f(x)) * i
    while total > 100:
        total = total / 2
        break
    return total


def test_fence_allows_supported_constructs():
    source, namespace = read_function(allowed)
    assert namespace["print"] is print and namespace["range"] is range
    assert "helper" not in namespace and "f" not in namespace
