"""``jax.example_libraries.optimizers``: first-order optimizers over pytrees of arrays.

Each optimizer is a triple of functions, ``(init_fun, update_fun, get_params)``::

    opt_init, opt_update, get_params = optimizers.adam(1e-3)
    opt_state = opt_init(params)                         # any pytree of arrays
    opt_state = opt_update(i, grads, opt_state)          # step i, grads shaped like params
    params = get_params(opt_state)

An optimizer is written for one array (`optimizer` lifts it to pytrees): its state is a
pytree per parameter leaf, and ``OptimizerState`` holds their leaves, so it passes
through `jit`, `grad` and `vmap` like any other pytree. Step sizes are numbers or
schedules (functions of the step ``i``). Plain `transpiler.numpy` code: every update is
traced, compiled and differentiated as written.
"""

from __future__ import annotations

import builtins

import functools
from typing import Any, Callable, NamedTuple

import numpy as np

from transpiler import numpy as jnp
from transpiler.tree_util import (register_pytree_node, tree_flatten, tree_leaves, tree_map,
                                  tree_unflatten)

Schedule = Callable[[Any], Any]


class OptimizerState(NamedTuple):
    """The state of an optimizer over a pytree of parameters: each parameter's state
    flattened (`packed_state`), the parameters' structure (`tree_def`) and each state's
    (`subtree_defs`)."""

    packed_state: Any
    tree_def: Any
    subtree_defs: Any


def _unflatten_state(aux: Any, children: Any) -> OptimizerState:
    """The state from its flattened form: ``aux`` is (tree_def, subtree_defs), ``children``
    is (packed_state,)."""
    return OptimizerState(children[0], *aux)


register_pytree_node(OptimizerState,
                     lambda s: ((s.packed_state,), (s.tree_def, s.subtree_defs)),
                     _unflatten_state)


class Optimizer(NamedTuple):
    init_fn: Callable[[Any], OptimizerState]
    update_fn: Callable[[Any, Any, OptimizerState], OptimizerState]
    params_fn: Callable[[OptimizerState], Any]


def optimizer(opt_maker: Callable[..., tuple[Callable, Callable, Callable]]
              ) -> Callable[..., Optimizer]:
    """Lift an optimizer of one array -- ``opt_maker(*args)`` returning ``(init(x0) ->
    state, update(i, g, state) -> state, get_params(state) -> x)``, states being pytrees
    -- to one of pytrees of arrays."""
    @functools.wraps(opt_maker)
    def tree_opt_maker(*args: Any, **kwargs: Any) -> Optimizer:
        init, update, get_params = opt_maker(*args, **kwargs)

        def tree_init(x0_tree: Any) -> OptimizerState:
            x0_flat, tree = tree_flatten(x0_tree)
            states = [tree_flatten(init(x0)) for x0 in x0_flat]
            return OptimizerState([s for s, _ in states], tree, [d for _, d in states])

        def tree_update(i: Any, grad_tree: Any, opt_state: OptimizerState) -> OptimizerState:
            packed, tree, subtrees = opt_state
            grad_flat, grad_tree_def = tree_flatten(grad_tree)
            if grad_tree_def != tree:
                raise TypeError("optimizer update: the gradient's structure must match the "
                                f"parameters': got {grad_tree_def}, expected {tree}")
            new = []
            for g, leaves, subtree in zip(grad_flat, packed, subtrees):
                state, state_tree = tree_flatten(update(i, g, tree_unflatten(subtree, leaves)))
                if state_tree != subtree:
                    raise TypeError("optimizer update: the update function changed the "
                                    f"structure of a state: {state_tree}, expected {subtree}")
                new.append(state)
            return OptimizerState(new, tree, subtrees)

        def tree_get_params(opt_state: OptimizerState) -> Any:
            packed, tree, subtrees = opt_state
            return tree_unflatten(tree, [get_params(tree_unflatten(subtree, leaves))
                                         for leaves, subtree in zip(packed, subtrees)])

        return Optimizer(tree_init, tree_update, tree_get_params)
    return tree_opt_maker


# --- optimizers ----------------------------------------------------------------------------

def _identity(x: Any) -> Any:
    return x


def _first(state: Any) -> Any:
    return state[0]


def _with_one_moment(x0: Any) -> tuple:
    return x0, jnp.zeros_like(x0)


def _with_two_moments(x0: Any) -> tuple:
    return x0, jnp.zeros_like(x0), jnp.zeros_like(x0)


@optimizer
def sgd(step_size: Any) -> tuple:
    """Stochastic gradient descent: ``x - step_size(i) * g``."""
    step_size = make_schedule(step_size)

    def update(i: Any, g: Any, x: Any) -> Any:
        return x - step_size(i) * g
    return _identity, update, _identity


@optimizer
def momentum(step_size: Any, mass: float) -> tuple:
    """Heavy-ball momentum: ``v = mass * v + g; x - step_size(i) * v``."""
    step_size = make_schedule(step_size)

    def update(i: Any, g: Any, state: tuple) -> tuple:
        x, velocity = state
        velocity = mass * velocity + g
        return x - step_size(i) * velocity, velocity
    return _with_one_moment, update, _first


@optimizer
def nesterov(step_size: Any, mass: float) -> tuple:
    """Nesterov's accelerated gradient: ``v = mass * v + g; x - step_size(i) * (mass * v +
    g)``."""
    step_size = make_schedule(step_size)

    def update(i: Any, g: Any, state: tuple) -> tuple:
        x, velocity = state
        velocity = mass * velocity + g
        return x - step_size(i) * (mass * velocity + g), velocity
    return _with_one_moment, update, _first


@optimizer
def adagrad(step_size: Any, momentum: float = 0.9) -> tuple:
    """Adagrad with momentum: steps scaled by the inverse root of the summed squared
    gradients (Duchi et al., 2011)."""
    step_size = make_schedule(step_size)

    def update(i: Any, g: Any, state: tuple) -> tuple:
        x, g_sq, m = state
        g_sq = g_sq + jnp.square(g)
        scale = jnp.where(g_sq > 0, 1.0 / jnp.sqrt(jnp.where(g_sq > 0, g_sq, 1.0)), 0.0)
        m = (1.0 - momentum) * (g * scale) + momentum * m
        return x - step_size(i) * m, g_sq, m
    return _with_two_moments, update, _first


@optimizer
def rmsprop(step_size: Any, gamma: float = 0.9, eps: float = 1e-8) -> tuple:
    """RMSProp: steps scaled by the inverse root of a decaying mean of squared gradients."""
    step_size = make_schedule(step_size)

    def update(i: Any, g: Any, state: tuple) -> tuple:
        x, avg_sq_grad = state
        avg_sq_grad = avg_sq_grad * gamma + jnp.square(g) * (1.0 - gamma)
        return x - step_size(i) * g / jnp.sqrt(avg_sq_grad + eps), avg_sq_grad
    return _with_one_moment, update, _first


@optimizer
def rmsprop_momentum(step_size: Any, gamma: float = 0.9, eps: float = 1e-8,
                     momentum: float = 0.9) -> tuple:
    """RMSProp with momentum on the scaled steps."""
    step_size = make_schedule(step_size)

    def update(i: Any, g: Any, state: tuple) -> tuple:
        x, avg_sq_grad, mom = state
        avg_sq_grad = avg_sq_grad * gamma + jnp.square(g) * (1.0 - gamma)
        mom = momentum * mom + step_size(i) * g / jnp.sqrt(avg_sq_grad + eps)
        return x - mom, avg_sq_grad, mom
    return _with_two_moments, update, _first


@optimizer
def adam(step_size: Any, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8) -> tuple:
    """Adam (Kingma and Ba, 2014): bias-corrected first and second moment estimates."""
    step_size = make_schedule(step_size)

    def update(i: Any, g: Any, state: tuple) -> tuple:
        x, m, v = state
        m = (1 - b1) * g + b1 * m
        v = (1 - b2) * jnp.square(g) + b2 * v
        m_hat = m / (1 - jnp.asarray(b1, m.dtype) ** (i + 1))
        v_hat = v / (1 - jnp.asarray(b2, m.dtype) ** (i + 1))
        return x - step_size(i) * m_hat / (jnp.sqrt(v_hat) + eps), m, v
    return _with_two_moments, update, _first


@optimizer
def adamax(step_size: Any, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8) -> tuple:
    """AdaMax: Adam with the infinity norm of the gradients for the second moment."""
    step_size = make_schedule(step_size)

    def update(i: Any, g: Any, state: tuple) -> tuple:
        x, m, u = state
        m = (1 - b1) * g + b1 * m
        u = jnp.maximum(b2 * u, jnp.abs(g))
        x = x - (step_size(i) / (1 - jnp.asarray(b1, m.dtype) ** (i + 1))) * m / (u + eps)
        return x, m, u
    return _with_two_moments, update, _first


@optimizer
def sm3(step_size: Any, momentum: float = 0.9) -> tuple:
    """SM3 (Anil et al., 2019): Adagrad whose accumulator is covered by one vector per
    axis, so its memory is the sum of the dimensions rather than their product."""
    step_size = make_schedule(step_size)

    def init(x0: Any) -> tuple:
        x0 = jnp.atleast_1d(x0)
        return x0, jnp.zeros_like(x0), [jnp.zeros(n, x0.dtype) for n in x0.shape]

    def update(i: Any, g: Any, state: tuple) -> tuple:
        x, m, vs = state
        g = jnp.reshape(g, x.shape)
        covers = [jnp.reshape(v, [n if k == axis else 1 for k, n in enumerate(x.shape)])
                  for axis, v in enumerate(vs)]
        accum = functools.reduce(jnp.minimum, covers) + jnp.square(g)
        scale = jnp.where(accum > 0, 1.0 / jnp.sqrt(jnp.where(accum > 0, accum, 1.0)), 0.0)
        m = (1.0 - momentum) * (g * scale) + momentum * m
        vs = [jnp.max(accum, axis=tuple(k for k in range(x.ndim) if k != axis))
              for axis in range(x.ndim)]
        return x - step_size(i) * m, m, vs
    return init, update, _first


# --- schedules -------------------------------------------------------------------------------

def constant(step_size: Any) -> Schedule:
    def schedule(i: Any) -> Any:
        return step_size
    return schedule


def exponential_decay(step_size: Any, decay_steps: Any, decay_rate: Any) -> Schedule:
    def schedule(i: Any) -> Any:
        return step_size * decay_rate ** (i / decay_steps)
    return schedule


def inverse_time_decay(step_size: Any, decay_steps: Any, decay_rate: Any,
                       staircase: bool = False) -> Schedule:
    def schedule(i: Any) -> Any:
        steps = jnp.floor(i / decay_steps) if staircase else i / decay_steps
        return step_size / (1 + decay_rate * steps)
    return schedule


def polynomial_decay(step_size: Any, decay_steps: Any, final_step_size: Any,
                     power: float = 1.0) -> Schedule:
    def schedule(i: Any) -> Any:
        fraction = 1 - jnp.minimum(i, decay_steps) / decay_steps
        return fraction ** power * (step_size - final_step_size) + final_step_size
    return schedule


def piecewise_constant(boundaries: Any, values: Any) -> Schedule:
    """``values[k]`` for steps after ``boundaries[k - 1]`` (``values`` has one more)."""
    boundaries, values = jnp.array(boundaries), jnp.array(values)
    if not boundaries.ndim == values.ndim == 1:
        raise ValueError("piecewise_constant: boundaries and values must be sequences")
    if boundaries.shape[0] != values.shape[0] - 1:
        raise ValueError("piecewise_constant: values must have one more entry than "
                         f"boundaries, got {values.shape[0]} and {boundaries.shape[0]}")

    def schedule(i: Any) -> Any:
        return values[jnp.sum(i > boundaries)]
    return schedule


def make_schedule(scalar_or_schedule: Any) -> Schedule:
    if callable(scalar_or_schedule):
        return scalar_or_schedule
    if np.ndim(scalar_or_schedule) == 0:
        return constant(scalar_or_schedule)
    raise TypeError(f"a step size must be a scalar or a schedule (a function of the step), "
                    f"got {type(scalar_or_schedule).__name__}")


# --- utilities -------------------------------------------------------------------------------

def l2_norm(tree: Any) -> Any:
    """The Euclidean norm of all the leaves of `tree` together."""
    return jnp.sqrt(sum(jnp.vdot(x, x) for x in tree_leaves(tree)))


def clip_grads(grad_tree: Any, max_norm: Any) -> Any:
    """`grad_tree` scaled down to norm `max_norm` where its norm exceeds it."""
    norm = l2_norm(grad_tree)
    return tree_map(lambda g: jnp.where(norm < max_norm, g, g * (max_norm / norm)), grad_tree)


class JoinPoint:
    """Marks where a parameter's state subtree joins the parameters' tree (in the pytree
    `unpack_optimizer_state` returns: one per parameter leaf)."""

    def __init__(self, subtree: Any) -> None:
        self.subtree = subtree


def unpack_optimizer_state(opt_state: OptimizerState) -> Any:
    """`opt_state` as a pytree of the parameters' structure whose leaves are `JoinPoint`s
    holding each parameter's state (to save it with ordinary pytree tools)."""
    packed, tree, subtrees = opt_state
    return tree_unflatten(tree, [JoinPoint(tree_unflatten(subtree, leaves))
                                 for leaves, subtree in zip(packed, subtrees)])


def pack_optimizer_state(marked_pytree: Any) -> OptimizerState:
    """The inverse of `unpack_optimizer_state`."""
    joins, tree = tree_flatten(marked_pytree, is_leaf=lambda x: isinstance(x, JoinPoint))
    if not all(isinstance(j, JoinPoint) for j in joins):
        raise TypeError("pack_optimizer_state: expected a pytree whose leaves are JoinPoints "
                        "(from unpack_optimizer_state)")
    states = [tree_flatten(j.subtree) for j in joins]
    return OptimizerState([s for s, _ in states], tree, [d for _, d in states])


# JAX's list utilities, which its optimizers module exports (`map` and `zip` are its
# length-checked versions, as the code above then uses them too).
def safe_map(f: Callable, *args: Any) -> list:
    """``map`` into a list; the sequences must have one length."""
    args = tuple(builtins.map(list, args))
    n = len(args[0])
    for arg in args[1:]:
        if len(arg) != n:
            raise ValueError(f"length mismatch: {[len(a) for a in args]}")
    return list(builtins.map(f, *args))


def safe_zip(*args: Any) -> list:
    """``zip`` into a list; the sequences must have one length."""
    args = tuple(builtins.map(list, args))
    n = len(args[0])
    for arg in args[1:]:
        if len(arg) != n:
            raise ValueError(f"length mismatch: {[len(a) for a in args]}")
    return list(builtins.zip(*args))


def unzip2(xys: Any) -> tuple[tuple, tuple]:
    """Pairs into two tuples."""
    xs, ys = [], []
    for x, y in xys:
        xs.append(x)
        ys.append(y)
    return tuple(xs), tuple(ys)


map, zip = safe_map, safe_zip  # noqa: A001
