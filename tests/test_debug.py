"""``jax.debug.print`` and ``jax.debug.callback`` under ``jit``: the compiled module calls
back into Python each time it runs (an IREE ``flow.tensor.trace`` op and the HAL module's
debug sink, runtime/callbacks.py), in program order, inside ``scan``/``fori_loop``/
``while_loop`` bodies and ``cond`` branches, with the values of that run; ``vmap`` calls
them once per batch element and ``grad`` once, as JAX does. Output captured and compared
with the eager run and, where installed, JAX's."""

from __future__ import annotations

import numpy as np
import pytest

import runtime
import runtime.callbacks
import transpiler as jax
import transpiler.numpy as jnp
from transpiler import lax

X = np.arange(3, dtype=np.float32)


def program(x, n):
    jax.debug.print("x={} total={total:.1f} n={n}", x, total=jnp.sum(x), n=n)
    y = x * 2
    jax.debug.print("mask={}", y > 1)

    def body(c, i):
        jax.debug.print("step {} carry {}", i, c)
        return c + 1, None

    c, _ = lax.scan(body, jnp.float32(0), jnp.arange(3))
    lax.cond(c > 1, lambda v: jax.debug.print("big {}", v),
             lambda v: jax.debug.print("small {}", v), c)
    jax.debug.print("last {}", jnp.sin(y)[0])
    return y


EXPECTED = ("x=[0. 1. 2.] total=3.0 n=3\nmask=[False  True  True]\nstep 0 carry 0.0\n"
            "step 1 carry 1.0\nstep 2 carry 2.0\nbig 3.0\nlast 0.0\n")


def test_under_jit_prints_in_program_order_every_call(capsys):
    program(X, 3)
    assert capsys.readouterr().out == EXPECTED
    jitted = jax.jit(program, static_argnums=1)
    np.testing.assert_allclose(np.asarray(jitted(X, 3)), X * 2)
    assert capsys.readouterr().out == EXPECTED
    jitted(X + 1, 3)  # the same compiled module, new values
    assert capsys.readouterr().out.splitlines()[0] == "x=[1. 2. 3.] total=6.0 n=3"


def test_loops_and_branches_print_per_iteration_and_branch_taken(capsys):
    @jax.jit
    def f(x):
        def body(i, c):
            jax.debug.print("i={} c={}", i, c)
            return c * 2
        c = lax.fori_loop(0, 3, body, x)
        c = lax.while_loop(lambda v: v < 20, lambda v: (jax.debug.print("w {}", v), v + 5)[1],
                           c)
        return lax.cond(c > 100, lambda v: v, lambda v: (jax.debug.print("no {}", v), -v)[1],
                        c)

    assert float(f(np.float32(1))) == -23.0
    assert capsys.readouterr().out == ("i=0 c=1.0\ni=1 c=2.0\ni=2 c=4.0\nw 8.0\nw 13.0\n"
                                       "w 18.0\nno 23.0\n")


def test_callback_gets_numpy_arrays_and_static_values():
    seen = []

    @jax.jit
    def f(x, flags):
        jax.debug.callback(lambda a, b, c, d: seen.append((a, b, c, d)), x, 5,
                           {"neg": -x, "ints": jnp.arange(2)}, d=flags)
        return x

    f(X, np.array([True, False]))
    ((a, b, c, d),) = seen
    assert isinstance(a, np.ndarray) and a.dtype == np.float32 and b == 5
    np.testing.assert_array_equal(c["neg"], -X)
    assert c["ints"].dtype == np.int32 and d.dtype == np.bool_ and d.tolist() == [True, False]


def test_constants_that_print_alike_keep_their_own_values():
    seen = []
    record = seen.append
    one, two = np.zeros(2000), np.zeros(2000)  # (their reprs are the same: "...")
    one[1000], two[1000] = 1, 2

    def total(a, b):
        record(b.sum())

    @jax.jit
    def f(x):
        jax.debug.callback(total, x, one)
        jax.debug.callback(total, x, two)
        return x

    f(np.float32(0))
    assert seen == [1.0, 2.0]


def test_vmap_prints_each_element_and_grad_once(capsys):
    def f(x):
        jax.debug.print("x is {} and {}", x, 3)
        return jnp.sum(x * 2)

    for run in (jax.vmap(f), jax.jit(jax.vmap(f))):
        run(X)
        assert capsys.readouterr().out == "x is 0.0 and 3\nx is 1.0 and 3\nx is 2.0 and 3\n"
    for run in (jax.grad(f), jax.jit(jax.grad(f))):
        np.testing.assert_allclose(np.asarray(run(X)), [2, 2, 2])
        assert capsys.readouterr().out == "x is [0. 1. 2.] and 3\n"


def test_matches_jax(capsys):
    jax_ = pytest.importorskip("jax")
    jlax = pytest.importorskip("jax.lax")
    jjnp = pytest.importorskip("jax.numpy")

    def make(debug, lax_, numpy):
        def f(x):
            debug.print("x={}", x)
            c = lax_.fori_loop(0, 2, lambda i, c: (debug.print("i={} c={}", i, c), c + 1)[1],
                               numpy.sum(x))
            debug.print("c={c}", c=c)
            return c
        return f

    jax_.jit(make(jax_.debug, jlax, jjnp))(X).block_until_ready()
    theirs = capsys.readouterr().out
    jax.jit(make(jax.debug, lax, jnp))(X)
    assert capsys.readouterr().out == theirs


def test_a_module_built_elsewhere_prints_under_its_key(capsys):
    lowered = jax.jit(lambda x: (jax.debug.print("v={}", x), x + 1)[1]).lower(X)
    vmfb = lowered.compile().executable.vmfb
    key = next(k for k in runtime.callbacks._HANDLERS if k.startswith("jax.debug.print 'v={}'"))
    del runtime.callbacks._HANDLERS[key]  # as in a process that did not trace it
    module = runtime.load(vmfb)
    np.testing.assert_allclose(np.asarray(module.main(X)), X + 1)
    assert capsys.readouterr().out == f"{key}: [0. 1. 2.]\n"


def test_bad_arguments():
    with pytest.raises(TypeError, match="the format must be a str"):
        jax.jit(lambda x: jax.debug.print(x, x))(X)
    with pytest.raises(TypeError, match="expects a callable"):
        jax.jit(lambda x: jax.debug.callback(3, x))(X)
