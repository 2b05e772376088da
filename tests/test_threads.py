"""Tracing and compiling from several threads at once: each thread's traces, vmap axes and
pmap axes are its own (transpiler/per_thread.py), so first calls that trace and compile
run side by side with eager code in other threads."""

from __future__ import annotations

import threading
import traceback

import numpy as np

import transpiler as tp
import transpiler.numpy as jnp
from transpiler import lax


def loss(w, x):
    h = jnp.tanh(x @ w)
    return jnp.sum(h * h) + jnp.sum(-jnp.ones(3))


def test_first_calls_from_four_threads_beside_eager_code():
    jitted, jitted_grad = tp.jit(loss), tp.jit(tp.grad(loss))
    errors: list[str] = []
    done = threading.Event()
    eager_runs = [0]

    def first_calls(k: int) -> None:
        try:
            for n in range(2, 5):  # a new shape each time: a trace and a compile
                w = np.full((n + 3 * k, 3), 0.1, np.float32)
                x = np.ones((2, n + 3 * k), np.float32)
                np.testing.assert_allclose(np.asarray(jitted(w, x)), np.asarray(loss(w, x)),
                                           rtol=1e-4)
                np.testing.assert_allclose(np.asarray(jitted_grad(w, x)),
                                           np.asarray(tp.grad(loss)(w, x)), rtol=1e-4,
                                           atol=1e-6)
                batched = tp.vmap(lambda r: jnp.sum(r * 2))(x)
                np.testing.assert_allclose(np.asarray(batched), 2 * x.sum(1))
        except Exception:  # noqa: BLE001 (reported by the main thread)
            errors.append(traceback.format_exc())

    def eager() -> None:
        try:
            while not done.is_set():
                assert float(jnp.sum(jnp.arange(10.0) * 2)) == 90.0
                assert float(lax.fori_loop(0, 3, lambda i, c: c + 1, 0.0)) == 3.0
                eager_runs[0] += 1
        except Exception:  # noqa: BLE001
            errors.append(traceback.format_exc())

    workers = [threading.Thread(target=first_calls, args=(k,)) for k in range(4)]
    bystander = threading.Thread(target=eager)
    bystander.start()
    for t in workers:
        t.start()
    for t in workers:
        t.join()
    done.set()
    bystander.join()
    assert not errors, "\n".join(errors)
    assert eager_runs[0] > 0
