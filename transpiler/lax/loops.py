"""``lax`` loops with a known trip count: `fori_loop`, `scan`, `map` (see lax/control.py
for the design). Under jit they are `while_loop`s; a long static `fori_loop` or `scan`
with a small body runs several steps per iteration (`scan`'s `unroll`), and a long `scan`
that stacks large outputs runs as nested scans. Both answer IREE 3.13's costs: ~3 us on
the host per iteration, and a copy of every loop-carried buffer the iteration writes (its
scf.for iter_args reach the stream dialect as `stream.async.transfer`s from an unknown
affinity, which are not elided: a 200x64 float32 ``ys`` copied 200 times)."""

from __future__ import annotations

from typing import Any, Callable, Optional

import numpy as np

from transpiler import dtypes, tree_util
from transpiler.errors import located
from transpiler.lax.control import _check_callable, _converted, _traced, while_loop
from transpiler.lowering.regions import active_trace, probe, probe_with_size
from transpiler.primitives.core import ShapedArray, abstractify
from transpiler import numpy as jnp
from transpiler.primitives import indexing as idx_p

__all__ = ["fori_loop", "scan", "map"]


def _index_dtype(lower: Any, upper: Any) -> np.dtype:
    avals = [abstractify(b, 0, "lax.fori_loop") for b in (lower, upper)]
    for a in avals:
        if a.shape != () or a.dtype.kind not in "iu":
            raise located(TypeError, f"lax.fori_loop: lower and upper must be integer "
                          f"scalars, got {a}")
    strong = [a.dtype for a in avals if not a.weak_type]
    return strong[0] if strong else dtypes.int32


def fori_loop(lower: Any, upper: Any, body_fun: Callable[[Any, Any], Any],
              init_val: Any) -> Any:
    """``for i in range(lower, upper): val = body_fun(i, val)``; `i` is an integer array."""
    _check_callable(body_fun, "body_fun", "fori_loop")
    dtype = _index_dtype(lower, upper)
    if active_trace() is None:
        val = init_val
        for i in range(int(lower), int(upper)):
            val = body_fun(jnp.asarray(i, dtype=dtype), val)
        return val
    lo = jnp.asarray(lower, dtype=dtype)
    hi = jnp.asarray(upper, dtype=dtype)
    body_fun = _converted(body_fun)
    unroll = 1
    if not (_traced(lower) or _traced(upper)) and int(upper) - int(lower) >= 16:
        unroll = _unroll_factor(body_fun, lo, init_val)
    if unroll > 1:  # n % unroll steps first, then n // unroll iterations of `unroll` steps
        start, n = int(lower), int(upper) - int(lower)
        val = init_val
        for i in range(start, start + n % unroll):
            val = body_fun(jnp.asarray(i, dtype=dtype), val)
        lo = jnp.asarray(start + n % unroll, dtype=dtype)

        def unrolled(state: tuple) -> tuple:
            i, val = state
            for _ in range(unroll):
                val = body_fun(i, val)
                i = i + 1
            return i, val

        return while_loop(lambda state: state[0] < hi, unrolled, (lo, val))[1]

    def test(state: tuple) -> Any:
        return state[0] < hi

    def step(state: tuple) -> tuple:
        i, val = state
        return i + 1, body_fun(i, val)

    return while_loop(test, step, (lo, init_val))[1]


def _unroll_factor(body_fun: Callable, i: Any, init_val: Any) -> int:
    """Steps per iteration for a long static loop: `stablehlo.while` costs 2-7 us an
    iteration on the host, so small bodies run several steps per iteration (x8 made a
    1000-step elementwise loop 2x faster); large bodies are not repeated (compile time)."""
    _, size = probe_with_size(body_fun, i, init_val)
    return 8 if size <= 24 else 4 if size <= 96 else 1


def _scan_length(xs_leaves: list[Any], length: Optional[int]) -> int:
    sizes = {}
    for i, leaf in enumerate(xs_leaves):
        aval = abstractify(leaf, i, "lax.scan")
        if aval.ndim == 0:
            raise located(ValueError, f"lax.scan: xs leaf {i} is a scalar; every leaf of xs "
                          "needs a leading axis to scan over")
        sizes[i] = aval.shape[0]
    found = set(sizes.values())
    if len(found) > 1:
        shown = ", ".join(f"leaf {i}: {n}" for i, n in sizes.items())
        raise located(ValueError, f"lax.scan: the leaves of xs have different leading sizes "
                      f"({shown})", "scan over arrays of the same length")
    if length is not None:
        if found and found != {int(length)}:
            raise located(ValueError, f"lax.scan: length={length} does not match the leading "
                          f"size {found.pop()} of xs")
        return int(length)
    if not found:
        raise located(ValueError, "lax.scan: give xs or length (the number of steps)")
    return found.pop()


def _pair(out: Any) -> tuple[Any, Any]:
    if not (isinstance(out, (tuple, list)) and len(out) == 2):
        raise located(TypeError, "lax.scan: f must return a pair (carry, y), got "
                      f"{type(out).__name__}")
    return out[0], out[1]


def scan(f: Callable[[Any, Any], Any], init: Any, xs: Any = None,
         length: Optional[int] = None, reverse: bool = False, unroll: int = 1,
         _split_transpose: bool = False) -> tuple[Any, Any]:
    """``carry, ys = scan(f, init, xs)``: ``carry, y = f(carry, x)`` for each leading slice
    ``x`` of `xs` (from the end when `reverse`), the ``y`` stacked. Under jit, `unroll`
    steps run per loop iteration (JAX's hint; ``True``: no loop, ``False``: one step an
    iteration; by default by the body's size, `_scan_unroll`); `_split_transpose` (private
    here) keeps a long scan in one loop (see `_segment_length`)."""
    _check_callable(f, "f", "scan")
    xs_leaves, xs_tree = tree_util.tree_flatten(xs)
    n = _scan_length(xs_leaves, length)

    def x_at(i: Any) -> Any:
        return tree_util.tree_unflatten(xs_tree, [_index(leaf, i) for leaf in xs_leaves])

    def x_template() -> Any:  # a slice's shape and dtype (xs may have length 0)
        return tree_util.tree_unflatten(xs_tree, [
            jnp.zeros(abstractify(leaf).shape[1:], abstractify(leaf).dtype)
            for leaf in xs_leaves])

    if active_trace() is None:
        carry, ys = init, []
        for i in (range(n - 1, -1, -1) if reverse else range(n)):
            carry, y = _pair(f(carry, x_at(i)))
            ys.append(y)
        if reverse:
            ys.reverse()
        if not ys:
            return carry, _stacked_zeros(probe(lambda: _pair(f(init, x_template()))[1]), 0)
        return carry, tree_util.tree_map(lambda *ls: jnp.stack(ls), *ys)

    f = _converted(f)
    y_avals, size = probe_with_size(lambda: _pair(f(init, x_template()))[1])
    buffers = _stacked_zeros(y_avals, n)
    if n == 0:
        return init, buffers
    inner = _segment_length(n, y_avals) if not _split_transpose else 1
    if inner > 1:
        return _two_level_scan(f, init, xs, n, inner, reverse, unroll)
    steps = _scan_unroll(unroll, n, size)
    if steps > 1:
        return _unrolled_scan(f, init, xs, n, steps, reverse, y_avals)
    buf_leaves, y_tree = tree_util.tree_flatten(buffers)

    def step(state: tuple) -> tuple:
        i, carry, bufs = state
        index = (n - 1) - i if reverse else i
        carry, y = _pair(f(carry, x_at(index)))
        y_leaves, tree = tree_util.tree_flatten(y)
        if tree != y_tree:
            raise located(TypeError, f"lax.scan: f returned y structured as {tree}, "
                          f"expected {y_tree}")
        return i + 1, carry, [_put(b, y, index) for b, y in zip(bufs, y_leaves)]

    _, carry, bufs = while_loop(lambda s: s[0] < n, step,
                                (jnp.asarray(0, dtype=jnp.int32), init, buf_leaves))
    return carry, tree_util.tree_unflatten(y_tree, bufs)


# IREE 3.13 does not update a loop-carried buffer in place: each iteration of a `while`
# that writes one row of a [n, ...] buffer copies the whole buffer (O(n^2) traffic; 0.3 ms
# an iteration for a 1000x1000 float32 buffer). A scan whose stacked outputs exceed this
# many bytes runs as a short outer scan (4 or a few more iterations, each copying the
# whole buffer once) of inner scans, each split again while it is long and large: the
# traffic is a few times the buffer per level, O(n log n). (Outer scans of ~sqrt(n)
# iterations copied 3x more: 40 copies of 4 MB for a 1000-step gradient tape.)
_SPLIT_BYTES = 1 << 16


def _segment_length(n: int, y_avals: Any) -> int:
    """The inner length of a two-level scan (``n`` over its smallest divisor from 4 to 16,
    else over its smallest one), or 1 for a scan that stays one loop (a prime `n`)."""
    size = sum(n * a.size * a.dtype.itemsize for a in tree_util.tree_leaves(y_avals)
               if isinstance(a, ShapedArray))
    if size <= _SPLIT_BYTES or n < 16:
        return 1
    divisors = [d for d in range(2, n // 2 + 1) if n % d == 0]
    outer = min([d for d in divisors if 4 <= d <= 16] or divisors, default=n)
    return n // outer


def _two_level_scan(f: Callable, init: Any, xs: Any, n: int, inner: int,
                    reverse: bool, unroll: Any) -> tuple[Any, Any]:
    outer = n // inner

    def split(leaf: Any) -> Any:
        shape = abstractify(leaf).shape
        return jnp.reshape(leaf, (outer, inner) + tuple(shape[1:]))

    def segment(carry: Any, xs_segment: Any) -> tuple[Any, Any]:
        return scan(f, carry, xs_segment, length=inner, reverse=reverse, unroll=unroll)

    carry, ys = scan(segment, init, tree_util.tree_map(split, xs), length=outer,
                     reverse=reverse)
    return carry, tree_util.tree_map(
        lambda y: jnp.reshape(y, (n,) + tuple(abstractify(y).shape[2:])), ys)


def _scan_unroll(unroll: Any, n: int, size: int) -> int:
    """Steps per loop iteration: JAX's `unroll` hint when given (``True``: all of them),
    else as for `fori_loop` by the body's size -- each iteration of a `stablehlo.while`
    costs IREE 3.13 ~3 us on the host and a copy of every carried buffer it writes (the
    stacked ``ys``), and `unroll` steps per iteration divide both."""
    if unroll is True:
        return n
    if isinstance(unroll, (bool, np.bool_)) or int(unroll) < 1:
        return 1
    if int(unroll) > 1:
        return min(int(unroll), n)
    return 1 if n < 16 else 8 if size <= 24 else 4 if size <= 96 else 1


def _unrolled_scan(f: Callable, init: Any, xs: Any, n: int, steps: int, reverse: bool,
                   y_avals: Any) -> tuple[Any, Any]:
    """`scan` running `steps` steps per loop iteration: each iteration reads its ``xs``
    rows as one slice and writes its ``ys`` rows as one update. The ``n % steps`` steps
    left over run after the loop, unrolled (the lowest indices when `reverse`)."""
    xs_leaves, xs_tree = tree_util.tree_flatten(xs)
    rounds, left = divmod(n, steps)
    first = left if reverse else 0  # the loop covers indices [first, first + rounds * steps)
    y_tree = tree_util.tree_structure(y_avals)

    def run(carry: Any, xs_rows: list, count: int) -> tuple:
        """`count` steps over the rows `xs_rows` (each with `count` leading rows) in scan
        order; the ys stacked in index order."""
        ys = []
        for j in range(count):
            row = (count - 1) - j if reverse else j
            x = tree_util.tree_unflatten(xs_tree, [leaf[row] for leaf in xs_rows])
            carry, y = _pair(f(carry, x))
            y_leaves, tree = tree_util.tree_flatten(y)
            if tree != y_tree:
                raise located(TypeError, f"lax.scan: f returned y structured as {tree}, "
                              f"expected {y_tree}")
            ys.append(y_leaves)
        if reverse:
            ys.reverse()
        return carry, [jnp.stack([jnp.astype(y[k], a.dtype) for y in ys])
                       for k, a in enumerate(tree_util.tree_leaves(y_avals))]

    def step(state: tuple) -> tuple:
        i, carry, bufs = state
        offset = (rounds - 1 - i if reverse else i) * steps  # (the buffers' row)
        rows = [_rows(leaf, first + offset, steps) for leaf in xs_leaves]
        carry, blocks = run(carry, rows, steps)
        return i + 1, carry, [_put_rows(b, y, offset) for b, y in zip(bufs, blocks)]

    if rounds == 1 and not left:  # unrolled in full: no loop
        carry, blocks = run(init, xs_leaves, n)
        return carry, tree_util.tree_unflatten(y_tree, blocks)
    buffers = tree_util.tree_leaves(_stacked_zeros(y_avals, rounds * steps))
    _, carry, bufs = while_loop(lambda s: s[0] < rounds, step,
                                (jnp.asarray(0, dtype=jnp.int32), init, buffers))
    if left:
        rest = 0 if reverse else rounds * steps
        carry, blocks = run(carry, [leaf[rest:rest + left] for leaf in xs_leaves], left)
        bufs = [jnp.concatenate([b, y] if not reverse else [y, b])
                for b, y in zip(bufs, blocks)]
    return carry, tree_util.tree_unflatten(y_tree, bufs)


def _rows(leaf: Any, start: Any, count: int) -> Any:
    """``leaf[start:start + count]`` for a traced `start` (in range)."""
    shape = abstractify(leaf).shape
    return idx_p.dynamic_slice(leaf, start, *(0,) * (len(shape) - 1),
                               slice_sizes=(count,) + tuple(shape[1:]))


def _put_rows(buffer: Any, rows: Any, start: Any) -> Any:
    shape = abstractify(buffer).shape
    return idx_p.dynamic_update_slice(buffer, rows, start, *(0,) * (len(shape) - 1))


def _index(leaf: Any, i: Any) -> Any:
    """``leaf[i]`` for a Python or traced index."""
    if not _traced(i):
        return leaf[i]
    shape = abstractify(leaf).shape  # `i` is in range: no wrapping of negative starts
    window = idx_p.dynamic_slice(leaf, i, *(0,) * (len(shape) - 1),
                                 slice_sizes=(1,) + tuple(shape[1:]))
    return window.reshape(shape[1:])


def _put(buffer: Any, y: Any, i: Any) -> Any:
    shape = abstractify(buffer).shape
    update = jnp.reshape(jnp.astype(y, abstractify(buffer).dtype), (1,) + tuple(shape[1:]))
    return idx_p.dynamic_update_slice(buffer, update, i, *(0,) * (len(shape) - 1))


def _stacked_zeros(avals: Any, n: int) -> Any:

    def zeros(a: Any) -> Any:
        if not isinstance(a, ShapedArray):
            raise located(TypeError, f"lax.scan: f returned a {type(a).__name__} as part of "
                          "y; per-step outputs must be arrays")
        return jnp.zeros((n,) + a.shape, dtype=a.dtype)
    return tree_util.tree_map(zeros, avals)


def map(f: Callable[[Any], Any], xs: Any) -> Any:  # noqa: A001 (JAX's name)
    """``lax.map``: ``stack([f(x) for x in xs])`` as a scan (one loop under jit)."""
    return scan(lambda _, x: (None, f(x)), None, xs)[1]
