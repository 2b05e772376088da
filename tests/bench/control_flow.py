"""Control-flow benchmarks: a 1000-step `fori_loop` on a 1000-vector under jit, against
jax.jit with lax.fori_loop (when installed) and a NumPy loop; and its gradient. An RNN
(`lax.scan` of ``tanh(h @ w + x)``, 200 steps, 64 wide): forward and gradient, our default
(several steps per loop iteration) and rolled (``unroll=False``, one step an iteration)."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

import transpiler as tp
import transpiler.numpy as tnp
from transpiler import lax
from run import best_time, jax, ready, row

STEPS, SIZE = 1000, 1000
RNN_STEPS, RNN_WIDTH = 200, 64


def body(np_mod: Any) -> Callable:
    def step(i, x):
        return x * 0.999 + np_mod.sin(x) * 0.001
    return step


def loop_numpy(x: np.ndarray) -> np.ndarray:
    step = body(np)
    for i in range(STEPS):
        x = step(i, x)
    return x


def loop_ours(x: Any) -> Any:
    return lax.fori_loop(0, STEPS, body(tnp), x)


def loss_ours(x: Any) -> Any:
    return tnp.sum(loop_ours(x) ** 2)


def rnn(np_mod: Any, lax_mod: Any, unroll: Any = 1) -> tuple[Callable, Callable]:
    def hidden_states(w, xs, h0):
        def step(h, x):
            h = np_mod.tanh(h @ w + x)
            return h, h
        return lax_mod.scan(step, h0, xs, unroll=unroll)[1]

    def loss(w, xs, h0):
        return np_mod.sum(hidden_states(w, xs, h0) ** 2)
    return hidden_states, loss


def rnn_rows() -> None:
    rng = np.random.default_rng(0)
    args = ((rng.standard_normal((RNN_WIDTH, RNN_WIDTH)) * 0.1).astype(np.float32),
            rng.standard_normal((RNN_STEPS, RNN_WIDTH)).astype(np.float32),
            np.zeros(RNN_WIDTH, np.float32))
    ours_args = [tp.jit(lambda a: a)(a) for a in args]
    times = {}
    for unroll in (1, False):
        forward, loss = rnn(tnp, lax, unroll)
        f, g = tp.jit(forward), tp.jit(tp.grad(loss))
        times[unroll] = (best_time(lambda: ready(f(*ours_args))),
                         best_time(lambda: ready(g(*ours_args))))
    t_jax = (None, None)
    if jax is not None:
        import jax.numpy as jjnp
        forward, loss = rnn(jjnp, jax.lax)
        jf, jg = jax.jit(forward), jax.jit(jax.grad(loss))
        jargs = [jax.device_put(a) for a in args]
        ours_forward, ours_loss = rnn(tnp, lax)
        np.testing.assert_allclose(np.asarray(tp.jit(ours_forward)(*ours_args)),
                                   np.asarray(jf(*jargs)), rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(np.asarray(tp.jit(tp.grad(ours_loss))(*ours_args)),
                                   np.asarray(jg(*jargs)), rtol=1e-3, atol=1e-4)
        t_jax = (best_time(lambda: jf(*jargs).block_until_ready()),
                 best_time(lambda: jg(*jargs).block_until_ready()))
    name = f"RNN scan {RNN_STEPS} steps, {RNN_WIDTH} wide"
    row(name, times[1][0], None, t_jax[0])
    row("  the same, rolled (unroll=False)", times[False][0], None, t_jax[0])
    row(f"grad of {name}", times[1][1], None, t_jax[1])
    row("  the same, rolled (unroll=False)", times[False][1], None, t_jax[1])
    if jax is not None:  # the gradient's program, rolled as JAX's is
        from ad import print_op_counts
        ours_loss = rnn(tnp, lax, False)[1]
        print_op_counts(tp.jit(tp.grad(ours_loss)).lower(*ours_args).as_text(),
                        jg.lower(*jargs).as_text())


def main() -> None:
    rnn_rows()
    x = np.random.default_rng(0).uniform(-1, 1, SIZE).astype(np.float32)
    ours = tp.jit(loop_ours)
    xd = tp.jit(lambda a: a)(x)
    np.testing.assert_allclose(np.asarray(ours(xd)), loop_numpy(x), rtol=1e-4, atol=1e-5)
    t_ours = best_time(lambda: ready(ours(xd)))
    t_np = best_time(lambda: loop_numpy(x), min_time=1.0, repeats=3)
    t_jax = None
    grad_ours = tp.jit(tp.grad(loss_ours))
    t_grad = best_time(lambda: ready(grad_ours(xd)))
    t_grad_jax = None
    if jax is not None:
        import jax.numpy as jjnp
        jf = jax.jit(lambda a: jax.lax.fori_loop(0, STEPS, body(jjnp), a))
        xj = jax.device_put(x)
        np.testing.assert_allclose(np.asarray(jf(xj)), loop_numpy(x), rtol=1e-4, atol=1e-5)
        t_jax = best_time(lambda: jf(xj).block_until_ready())
        jg = jax.jit(jax.grad(lambda a: jjnp.sum(
            jax.lax.fori_loop(0, STEPS, body(jjnp), a) ** 2)))
        np.testing.assert_allclose(np.asarray(grad_ours(xd)), np.asarray(jg(xj)), rtol=1e-3,
                                   atol=1e-5)
        t_grad_jax = best_time(lambda: jg(xj).block_until_ready())
    row(f"fori_loop {STEPS} steps, n={SIZE}", t_ours, t_np, t_jax)
    row(f"grad of fori_loop {STEPS} steps, n={SIZE}", t_grad, None, t_grad_jax)


if __name__ == "__main__":
    main()
