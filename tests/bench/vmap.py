"""Per-example gradients with ``jit(vmap(grad(loss)))``, against JAX, a Python loop and NumPy.

Run directly (``python tests/bench/vmap.py``) or as part of ``run.py``. Rows:

1. Linear model, batch 128, 100 features: ``loss(w, b, x, y) = (x @ w + b - y) ** 2`` per
   example, its gradient in ``(w, b)`` vmapped over ``x, y`` (in_axes ``(None, None, 0, 0)``).
   Against ``jax.jit(jax.vmap(jax.grad(loss)))``, a Python loop of our ``jit(grad(loss))``
   over the 128 examples (results left as a list: no stacking is timed) and the hand-written
   NumPy gradient ``2 r[:, None] * x, 2 r``. The warm cost of a trivial jitted call (scalar
   add) of both systems is shown with it: at this size the call is most of the time.
2. The MLP of ad.py (784-512-256-10, dict parameters, ``ad.mlp_loss``) applied to one
   example (a batch of one: ``x[None]``), its parameter gradient vmapped over the 128
   examples of ad.py's batch. Against JAX, the Python loop, and JAX's own StableHLO for the
   same program compiled and run by IREE the way ours is (IREE's floor for it here).
   The minor page faults per call of each are shown: the 262 MiB of gradients land in
   fresh buffers every call, and mapping them in dominates these times on this machine.
3. StableHLO op counts of both programs (ours from ``jit(f).lower(*args).as_text()``), and
   what vmap added to ours (against the one-example ``jit(grad)`` program).

Every value is checked (allclose) against JAX (and NumPy / the loop) before timing. The
systems are timed in alternating rounds, best of each, since this machine's load drifts
more than the differences; only the ratios of one run are comparable.
"""

from __future__ import annotations

import collections
import contextlib
import types
from typing import Any, Callable, Iterator, Optional
from unittest import mock

import numpy as np

import transpiler as tp
from transpiler import compiler
from ad import BATCH, make_inputs, mlp_loss, op_counts, with_modules
from run import best_time, jax, ready

FEATURES = 100
NO_DATA_TILING = "--iree-opt-data-tiling=false"
SHOWN_OPS = ("dot_general", "transpose", "broadcast_in_dim", "reshape", "reduce")


# --- the user functions: plain JAX style -----------------------------------------------------

def linear_loss(w, b, x, y):
    """Squared error of a linear model on one example."""
    return (x @ w + b - y) ** 2


def mlp_example_loss(params, x, targets):
    """ad.py's MLP loss on one example (a batch of one)."""
    return mlp_loss(params, x[None], targets[None])


def numpy_linear_grads(w, b, x, y):
    """Per-example ``(d/dw, d/db)`` of `linear_loss`, by hand."""
    r2 = 2 * (x @ w + b - y)
    return r2[:, None] * x, r2


def jax_version(fn: Callable, **scope: Any) -> Callable:
    """`fn` with its globals re-bound (e.g. ``mlp_loss`` to ad.py's loss over jax.numpy)."""
    return types.FunctionType(fn.__code__, dict(fn.__globals__, **scope), fn.__name__)


# --- helpers ---------------------------------------------------------------------------------

def block(tree: Any) -> Any:
    """Wait for every leaf of an output pytree of ours."""
    for leaf in tp.tree_util.tree_leaves(tree):
        ready(leaf)
    return tree


def leaves(tree: Any) -> list[np.ndarray]:
    return [np.asarray(leaf) for leaf in tp.tree_util.tree_leaves(tree)]


def assert_trees_close(got: Any, want: Any, what: str, rtol: float = 1e-4,
                       atol: float = 1e-5) -> None:
    got_leaves, want_leaves = leaves(got), leaves(want)
    assert len(got_leaves) == len(want_leaves), what
    for a, b in zip(got_leaves, want_leaves):
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, err_msg=what)


def alternate(fns: dict[str, Callable[[], Any]], rounds: int = 3,
              **kwargs: Any) -> dict[str, float]:
    """Best time of each function over `rounds` alternating rounds."""
    times: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            times[name].append(best_time(fn, **kwargs))
    return {name: min(ts) for name, ts in times.items()}


@contextlib.contextmanager
def iree_flags(extra: tuple[str, ...]) -> Iterator[None]:
    """Compile with `extra` appended to `compiler.compile_flags` (nothing when empty)."""
    if not extra:
        yield
        return
    original = compiler.compile_flags
    with mock.patch.object(compiler, "compile_flags",
                           lambda *a, **k: original(*a, **k) + list(extra)):
        yield


def compile_first_call(make: Callable[[], Any], args: tuple
                       ) -> tuple[Any, Any, tuple[str, ...]]:
    """``jit`` `make()` and call it once. IREE 3.13's data-tiled CPU codegen rejects some
    per-example-gradient programs (JAX's StableHLO for them too): a matmul fused with the
    elementwise consumer that writes the (batch, fan_in, fan_out) gradients exceeds its
    32 KiB stack limit. Such a program is measured without data tiling, and the row says so.
    Returns (jitted, first output, extra flags used)."""
    jitted = make()
    try:
        return jitted, block(jitted(*args)), ()
    except tp.TranspileError as error:
        if "exceeded stack allocation limit" not in str(error):
            raise
    jitted = make()
    with iree_flags((NO_DATA_TILING,)):
        return jitted, block(jitted(*args)), (NO_DATA_TILING,)


def flags_note(extra: tuple[str, ...]) -> str:
    return f"  [default flags: IREE compile error (stack limit); measured with {extra[0]}]" \
        if extra else ""


def ops_line(name: str, ours_text: str, jax_text: Optional[str], one_text: str) -> None:
    """Op counts of ours/JAX's batched program, and what vmap added to ours: the batched
    program's counts minus those of the one-example ``jit(grad)`` program `one_text`."""
    ours_ops = op_counts(ours_text)
    jax_ops = op_counts(jax_text) if jax_text is not None else collections.Counter()
    one_ops = op_counts(one_text)
    parts = [f"{op} {ours_ops[op]}/{jax_ops[op]}" for op in SHOWN_OPS]
    added = [f"{op} {ours_ops[op] - one_ops[op]:+d}" for op in SHOWN_OPS]
    print(f"{'  StableHLO ops (ours/jax) ' + name:<34}  total {sum(ours_ops.values())}/"
          f"{sum(jax_ops.values())};  " + ", ".join(parts) + ";  vmap added (vs one "
          "example's jit(grad)): " + ", ".join(added), flush=True)


def page_faults(fn: Callable[[], Any], calls: int = 3) -> float:
    """Minor page faults per call of `fn` (fresh output buffers the OS must map and zero)."""
    import resource
    fn()
    start = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(calls):
        fn()
    return (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - start) / calls


def trivial_call_times() -> dict[str, float]:
    """Warm time of a jitted scalar add on device-resident inputs (ours, and JAX's)."""
    add = tp.jit(lambda a, b: a + b)
    x = add(np.float32(1.0), np.float32(2.0))
    fns = {"ours": lambda: add(x, x)}
    if jax is not None:
        jadd = jax.jit(lambda a, b: a + b)
        jx = jadd(np.float32(1.0), np.float32(2.0))
        fns["jax"] = lambda: jadd(jx, jx).block_until_ready()
    return alternate(fns, min_time=0.3)


# --- 1. linear model -------------------------------------------------------------------------

def linear() -> None:
    rng = np.random.default_rng(0)
    w = rng.standard_normal(FEATURES).astype(np.float32)
    b = np.float32(0.5)
    x = rng.standard_normal((BATCH, FEATURES)).astype(np.float32)
    y = rng.standard_normal(BATCH).astype(np.float32)
    to_device = tp.jit(lambda a: a)
    dw, db, dx, dy = (to_device(a) for a in (w, b, x, y))
    in_axes = (None, None, 0, 0)
    args = (dw, db, dx, dy)
    ours, got, extra = compile_first_call(
        lambda: tp.jit(tp.vmap(tp.grad(linear_loss, argnums=(0, 1)), in_axes=in_axes)), args)
    want = numpy_linear_grads(w, b, x, y)
    assert_trees_close(got, want, "linear: ours vs NumPy")
    one = tp.jit(tp.grad(linear_loss, argnums=(0, 1)))
    members = [(to_device(x[i]), to_device(y[i])) for i in range(BATCH)]
    looped = [one(dw, db, xi, yi) for xi, yi in members]
    assert_trees_close([np.stack(g) for g in zip(*map(leaves, looped))], want,
                       "linear: loop vs NumPy")
    fns = {"ours": lambda: block(ours(*args)),
           "loop": lambda: block([one(dw, db, xi, yi) for xi, yi in members]),
           "numpy": lambda: numpy_linear_grads(w, b, x, y)}
    jax_text = None
    if jax is not None:
        jf = jax.jit(jax.vmap(jax.grad(linear_loss, argnums=(0, 1)), in_axes=in_axes))
        jargs = tuple(jax.device_put(a) for a in (w, b, x, y))
        assert_trees_close(got, jf(*jargs), "linear: ours vs JAX")
        fns["jax"] = lambda: jax.block_until_ready(jf(*jargs))
        jax_text = jf.lower(*jargs).as_text()
    ours_text = ours.lower(*args).as_text()
    t = alternate({k: fns[k] for k in ("ours", "jax", "numpy") if k in fns}, min_time=0.3)
    t["loop"] = best_time(fns["loop"], min_time=1.0, repeats=3)
    calls = trivial_call_times()
    name = f"per-example grad, linear b={BATCH}"
    line = (f"{name:<34}  transpiler {t['ours'] * 1e6:8.1f} us  loop of jit(grad) "
            f"{t['loop'] * 1e6:8.1f} us ({t['loop'] / t['ours']:5.1f}x ours)  numpy "
            f"{t['numpy'] * 1e6:6.1f} us (numpy/ours {t['numpy'] / t['ours']:5.2f}x)")
    if "jax" in t:
        line += (f"  jax {t['jax'] * 1e6:8.1f} us  (ours/jax {t['ours'] / t['jax']:5.2f}x) "
                 f"[target <=0.5x]")
    line += f"  trivial jitted call: ours {calls['ours'] * 1e6:5.1f} us"
    if "jax" in calls:
        line += f", jax {calls['jax'] * 1e6:5.1f} us"
    print(line + "  values agree" + flags_note(extra), flush=True)
    ops_line("linear", ours_text, jax_text, one.lower(dw, db, *members[0]).as_text())


# --- 2. MLP ----------------------------------------------------------------------------------

def mlp() -> None:
    params, x, targets = make_inputs()
    to_device = tp.jit(lambda a: a)
    d_params = tp.tree_util.tree_map(to_device, params)
    d_x, d_targets = to_device(x), to_device(targets)
    args = (d_params, d_x, d_targets)
    in_axes = (None, 0, 0)
    ours, got, extra = compile_first_call(
        lambda: tp.jit(tp.vmap(tp.grad(mlp_example_loss), in_axes=in_axes)), args)
    members = [(to_device(x[i]), to_device(targets[i])) for i in range(BATCH)]
    one, _, one_extra = compile_first_call(lambda: tp.jit(tp.grad(mlp_example_loss)),
                                           (d_params, *members[0]))
    looped = [block(one(d_params, xi, ti)) for xi, ti in members]
    lowered = ours.lower(*args)
    ours_text = lowered.as_text()
    stacked = [np.stack(g) for g in zip(*map(leaves, looped))]
    assert_trees_close(got, stacked, "MLP: ours vs loop", atol=1e-6)
    del looped, stacked
    fns = {"ours": lambda: block(ours(*args))}
    jax_text = None
    if jax is not None:
        jloss = jax_version(mlp_example_loss, mlp_loss=with_modules(jax.numpy, jax.nn))
        jf = jax.jit(jax.vmap(jax.grad(jloss), in_axes=in_axes))
        jargs = (jax.tree_util.tree_map(jax.device_put, params), jax.device_put(x),
                 jax.device_put(targets))
        assert_trees_close(got, jf(*jargs), "MLP: ours vs JAX", atol=1e-6)
        fns["jax"] = lambda: jax.block_until_ready(jf(*jargs))
        jax_text = jf.lower(*jargs).as_text()
        # JAX's StableHLO, compiled and run by IREE like ours: IREE's floor for the program.
        import runtime
        device = runtime.Device("local-task")
        with iree_flags(extra):
            floor = runtime.load(compiler.compile_vmfb(jax_text.encode()), device).main
        floor_args = [device.put(a) for a in leaves((params, x, targets))]
        assert_trees_close(got, floor(*floor_args), "MLP: ours vs JAX's module in IREE",
                           atol=1e-6)
        fns["floor"] = lambda: block(floor(*floor_args))
    del got
    faults = {name: page_faults(fn) for name, fn in fns.items()}
    t = alternate(fns)
    t["loop"] = best_time(lambda: [block(one(d_params, xi, ti)) for xi, ti in members],
                          min_time=1.0, repeats=3)
    name = f"per-example grad, MLP b={BATCH}"
    line = (f"{name:<34}  transpiler {t['ours'] * 1e3:8.2f} ms  loop of jit(grad) "
            f"{t['loop'] * 1e3:8.2f} ms ({t['loop'] / t['ours']:5.1f}x ours)")
    if "jax" in t:
        line += (f"  jax {t['jax'] * 1e3:8.2f} ms  (ours/jax {t['ours'] / t['jax']:5.2f}x) "
                 f"[target <=1.3x]")
    loop_note = f"  [loop of jit(grad) also measured with {one_extra[0]}]" if one_extra else ""
    print(line + "  values agree" + flags_note(extra) + loop_note, flush=True)
    if "floor" in t:
        print(f"{'  jax StableHLO run by IREE':<34}  {t['floor'] * 1e3:8.2f} ms  (its/jax "
              f"{t['floor'] / t['jax']:5.2f}x, ours/it {t['ours'] / t['floor']:5.2f}x: IREE's "
              f"floor here)", flush=True)
    out_mb = sum(a.size * a.dtype.itemsize for a in lowered.out_avals) / 2**20
    print(f"{'  minor page faults per call':<34}  " + ", ".join(
        f"{name} {n:,.0f}" for name, n in faults.items()) +
        f"  ({out_mb:.0f} MiB of gradients written per call)", flush=True)
    ops_line("MLP", ours_text, jax_text, one.lower(d_params, *members[0]).as_text())


def main() -> None:
    """All vmap rows."""
    linear()
    mlp()


if __name__ == "__main__":
    main()
