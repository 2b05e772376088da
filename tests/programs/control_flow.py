"""Control-flow programs in ordinary JAX style (``lax.cond``/``switch``/``while_loop``/
``fori_loop``/``scan``, and the same kinds of programs in Python ``if``/``while``/``for``,
converted under jit), each with a plain NumPy reference implementation of the same
computation. tests/test_control_flow.py runs every one eagerly, under jit, and through
grad and jvp."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

import transpiler.numpy as jnp
from transpiler import lax

from tests.programs.corpus import normal


@dataclass
class Program:
    name: str
    fn: Callable[..., Any]
    reference: Callable[..., Any]   # the same computation in NumPy (float64)
    args: tuple
    argnums: Any = 0
    jit_grad: str = ""  # non-empty: jit(grad) is expected to fail with this message


# --- piecewise functions: cond and switch ------------------------------------------------

def piecewise(x, a):
    y = lax.cond(jnp.sum(x) > 0.0, lambda v: jnp.sin(v) * a, lambda v: v * v - a, x)
    k = jnp.clip(jnp.floor(jnp.mean(x) * 2.0 + 1.0), 0, 2).astype(jnp.int32)
    z = lax.switch(k, [lambda v: v + a, lambda v: jnp.tanh(v) * a, lambda v: v * a * a], y)
    return jnp.sum(z)


def piecewise_np(x, a):
    y = np.sin(x) * a if np.sum(x) > 0 else x * x - a
    k = int(np.clip(np.floor(np.mean(x) * 2.0 + 1.0), 0, 2))
    z = [y + a, np.tanh(y) * a, y * a * a][k]
    return np.sum(z)


# --- Newton iteration with a tolerance: while_loop ---------------------------------------

def newton_cbrt(a):
    def cond(state):
        x, _ = state
        return jnp.max(jnp.abs(x ** 3 - a)) > 1e-9

    def body(state):
        x, n = state
        return x - (x ** 3 - a) / (3.0 * x ** 2), n + 1

    x, _ = lax.while_loop(cond, body, (jnp.ones_like(a), 0), max_iters=60)
    return jnp.sum(x)


def newton_cbrt_np(a):
    x, n = np.ones_like(a), 0
    while np.max(np.abs(x ** 3 - a)) > 1e-9 and n < 60:
        x, n = x - (x ** 3 - a) / (3.0 * x ** 2), n + 1
    return np.sum(x)


# --- an RNN: scan over a sequence, closing over the parameters ---------------------------

def rnn_loss(params, xs):
    def step(h, x):
        h = jnp.tanh(params["w"] @ h + params["u"] @ x + params["b"])
        return h, jnp.sum(h * params["v"])

    h, ys = lax.scan(step, jnp.zeros(4), xs)
    return jnp.sum(ys ** 2) + jnp.sum(h)


def rnn_loss_np(params, xs):
    h, ys = np.zeros(4), []
    for x in xs:
        h = np.tanh(params["w"] @ h + params["u"] @ x + params["b"])
        ys.append(np.sum(h * params["v"]))
    return np.sum(np.array(ys) ** 2) + np.sum(h)


# --- a simulation: fori_loop over Euler steps of a damped spring ---------------------------

def spring(params, x0):
    k, c = params

    def step(i, state):
        x, v = state
        acc = -k * x - c * v
        return x + 0.05 * v, v + 0.05 * acc

    x, v = lax.fori_loop(0, 40, step, (x0, jnp.zeros_like(x0)))
    return jnp.sum(x ** 2 + v ** 2)


def spring_np(params, x0):
    k, c = params
    x, v = x0, np.zeros_like(x0)
    for _ in range(40):
        acc = -k * x - c * v
        x, v = x + 0.05 * v, v + 0.05 * acc
    return np.sum(x ** 2 + v ** 2)


# --- nested loops and branches ------------------------------------------------------------

def nested(w, xs):
    def outer(i, acc):
        def inner(c, x):
            c = lax.cond(x > 0.0, lambda: c * w + x, lambda: c - w * x)
            return c, c * c
        c, ys = lax.scan(inner, acc, xs)
        return c * 0.5 + jnp.sum(ys) * 0.01
    return lax.fori_loop(0, 3, outer, 0.5)


def nested_np(w, xs):
    acc = 0.5
    for _ in range(3):
        c, ys = acc, []
        for x in xs:
            c = c * w + x if x > 0 else c - w * x
            ys.append(c * c)
        acc = c * 0.5 + np.sum(ys) * 0.01
    return acc


# --- the same kinds of programs in plain Python control flow (converted under jit) -------

def piecewise_py(x, a):
    s = jnp.sum(x)
    if s > 1.0:
        y = jnp.sin(x) * a
    elif s > 0.0:
        y = x * x * a
    else:
        y = x - a
    return jnp.sum(y * y)


def piecewise_py_np(x, a):
    s = np.sum(x)
    y = np.sin(x) * a if s > 1.0 else (x * x * a if s > 0.0 else x - a)
    return np.sum(y * y)


def newton_py(a):
    x = jnp.ones_like(a)
    while jnp.max(jnp.abs(x ** 3 - a)) > 1e-5 * jnp.max(a):
        x = x - (x ** 3 - a) / (3.0 * x ** 2)
    return jnp.sum(x)


def newton_py_np(a):
    x = np.ones_like(a)
    while np.max(np.abs(x ** 3 - a)) > 1e-5 * np.max(a):
        x = x - (x ** 3 - a) / (3.0 * x ** 2)
    return np.sum(x)


def simulation_py(params, x0):
    k, c = params
    x, v = x0, jnp.zeros_like(x0)
    for i in range(20):
        acc = -k * x - c * v
        if jnp.sum(x * v) > 0.0:   # a damper that only acts while moving outward
            acc = acc - 0.5 * v
        x, v = x + 0.05 * v, v + 0.05 * acc
    return jnp.sum(x ** 2 + v ** 2)


def simulation_py_np(params, x0):
    k, c = params
    x, v = x0, np.zeros_like(x0)
    for _ in range(20):
        acc = -k * x - c * v
        if np.sum(x * v) > 0.0:
            acc = acc - 0.5 * v
        x, v = x + 0.05 * v, v + 0.05 * acc
    return np.sum(x ** 2 + v ** 2)


def nested_py(w, xs):
    acc = 0.5
    for _ in range(2):
        c = acc
        for i in range(4):
            if xs[i] > 0.0:
                c = c * w + xs[i]
            else:
                c = c - w * xs[i]
        acc = c * 0.5
    return acc


def nested_py_np(w, xs):
    acc = 0.5
    for _ in range(2):
        c = acc
        for i in range(4):
            c = c * w + xs[i] if xs[i] > 0.0 else c - w * xs[i]
        acc = c * 0.5
    return acc


def _rnn_params() -> dict:
    return {"w": normal(4, 4) * 0.5, "u": normal(4, 3) * 0.5, "b": normal(4) * 0.1,
            "v": normal(4)}


PROGRAMS = [
    Program("piecewise_pos", piecewise, piecewise_np,
            (np.array([0.3, 0.2, 0.4], np.float32), np.float32(0.7)), (0, 1)),
    Program("piecewise_neg", piecewise, piecewise_np,
            (np.array([-0.9, -0.6, -0.7], np.float32), np.float32(1.3)), (0, 1)),
    Program("newton_cbrt", newton_cbrt, newton_cbrt_np,
            (np.array([2.0, 27.5, 0.5], np.float32),)),
    Program("rnn_scan", rnn_loss, rnn_loss_np, (_rnn_params(), normal(5, 3)), (0, 1)),
    Program("spring_fori", spring, spring_np,
            ((np.float32(2.0), np.float32(0.3)), np.array([1.0, -0.5], np.float32)), (0, 1)),
    Program("nested_loops_branches", nested, nested_np,
            (np.float32(0.8), np.array([0.5, -0.3, 0.9, -1.2], np.float32)), (0, 1)),
    Program("python_if_elif", piecewise_py, piecewise_py_np,
            (np.array([0.3, 0.2, 0.4], np.float32), np.float32(0.7)), (0, 1)),
    Program("python_if_else_branch", piecewise_py, piecewise_py_np,
            (np.array([-0.3, 0.2, -0.4], np.float32), np.float32(0.7)), (0, 1)),
    Program("python_newton_while", newton_py, newton_py_np,
            (np.array([2.0, 27.5, 0.5], np.float32),),
            jit_grad="reverse-mode differentiation of a `while` whose trip count depends"),
    Program("python_simulation_for", simulation_py, simulation_py_np,
            ((np.float32(2.0), np.float32(0.3)), np.array([1.0, -0.5], np.float32)), (0, 1)),
    Program("python_nested_for_if", nested_py, nested_py_np,
            (np.float32(0.8), np.array([0.5, -0.3, 0.9, -1.2], np.float32)), (0, 1)),
]
