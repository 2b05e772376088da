"""``lax.custom_root`` and ``lax.custom_linear_solve`` (JAX 0.10.2's signatures): their
values, and derivatives by implicit differentiation -- with respect to the values `f` and
`matvec` close over, and to `b` -- against float64 central differences of the exact
solution and against JAX, in forward and reverse mode, eagerly and under ``jit``; ``vmap``
against a loop; ``has_aux``; pytrees; and the errors for bad solvers.

The solvers are made for a namespace (``newton(jnp, tp)`` and JAX's ``newton(jax.numpy,
jax)``), so both libraries run them from one definition, as in JAX's
custom_root_test.py / custom_linear_solve_test.py."""

from __future__ import annotations

import functools

import numpy as np
import pytest

import transpiler as tp
import transpiler.numpy as jnp
from transpiler import lax, tree_util
from transpiler.errors import TranspileError
from tests.oracles import finite_differences


# --- solvers, for either library ----------------------------------------------------------------

def newton(xp, api, steps=12):
    """Newton's method with the derivative by autodiff (a Python loop: unrolled by jit)."""
    def solve(f, x0):
        x = x0
        for _ in range(steps):
            x = x - f(x) / api.grad(f)(x)
        return x
    return solve


def bisection(xp, lax_, low=0.0, high=10.0, steps=40):
    """Bisection on [low, high] for an increasing scalar f, in a fori_loop."""
    def solve(f, x0):
        def body(_, state):
            lo, hi = state
            mid = (lo + hi) / 2
            below = f(mid) < 0
            return xp.where(below, mid, lo), xp.where(below, hi, mid)
        lo, hi = lax_.fori_loop(0, steps, body, (xp.zeros_like(x0) + low,
                                                 xp.zeros_like(x0) + high))
        return (lo + hi) / 2
    return solve


def scalar_tangent_solve(g, y):
    return y / g(1.0)


def direct(xp, api):
    """Solve with the dense matrix of the linear map (its Jacobian)."""
    def solve(matvec, b):
        return xp.linalg.solve(api.jacobian(matvec)(b), b)
    return solve


def conjugate_gradient(xp, lax_, steps=20):
    """Plain CG for a symmetric positive definite map, a fixed number of steps."""
    def solve(matvec, b):
        def body(_, state):
            x, r, p, rs = state
            ap = matvec(p)
            alpha = rs / xp.maximum(xp.vdot(p, ap), 1e-30)
            x, r = x + alpha * p, r - alpha * ap
            rs_new = xp.vdot(r, r)
            p = r + (rs_new / xp.maximum(rs, 1e-30)) * p
            return x, r, p, rs_new
        x0 = xp.zeros_like(b)
        out = lax_.fori_loop(0, steps, body, (x0, b, b, xp.vdot(b, b)))
        return out[0]
    return solve


def sqrt_root(xp, lax_, solve):
    """The square root of `a` as the root of ``x**2 - a``: f closes over `a`."""
    def root(a):
        return lax_.custom_root(lambda x: x ** 2 - a, 1.0, solve, scalar_tangent_solve)
    return root


RNG = np.random.RandomState(0)
A = (RNG.randn(3, 3) + 4 * np.eye(3)).astype(np.float32)
SPD = (A @ A.T).astype(np.float32)
B = RNG.randn(3).astype(np.float32)
BS = RNG.randn(4, 3).astype(np.float32)


def linear(xp, lax_, solve, transpose_solve=None, symmetric=False):
    """``x`` with ``a @ x == b`` through custom_linear_solve: matvec closes over `a`."""
    def run(a, b):
        return lax_.custom_linear_solve(lambda x: xp.dot(a, x), b, solve,
                                        transpose_solve=transpose_solve, symmetric=symmetric)
    return run


def close(ours, theirs, rtol=2e-5, atol=2e-5):
    ours_leaves, theirs_leaves = tree_util.tree_leaves(ours), tree_util.tree_leaves(theirs)
    assert len(ours_leaves) == len(theirs_leaves)
    for a, b in zip(ours_leaves, theirs_leaves):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=rtol, atol=atol)


# --- custom_root -------------------------------------------------------------------------------

@pytest.mark.parametrize("solver", ["newton", "bisection"])
@pytest.mark.parametrize("jitted", [False, True], ids=["eager", "jit"])
def test_root_value_and_grad(solver, jitted):
    solve = newton(jnp, tp) if solver == "newton" else bisection(jnp, lax)
    root = sqrt_root(jnp, lax, solve)
    wrap = tp.jit if jitted else (lambda f: f)
    a = 2.0
    close(wrap(root)(a), np.sqrt(a), rtol=1e-6)
    expected = finite_differences(lambda x: np.sqrt(x), a)
    close(wrap(tp.grad(root))(a), expected, rtol=1e-5)
    value, tangent = wrap(lambda a, t: tp.jvp(root, (a,), (t,)))(a, 3.0)
    close(tangent, 3.0 * expected, rtol=1e-5)


def test_root_matches_jax():
    jax = pytest.importorskip("jax")
    ours = sqrt_root(jnp, lax, newton(jnp, tp))
    theirs = sqrt_root(jax.numpy, jax.lax, newton(jax.numpy, jax))
    for a in (0.5, 2.0, 7.0):
        close(ours(a), theirs(a))
        close(tp.grad(ours)(a), jax.grad(theirs)(a))
        close(tp.jvp(ours, (a,), (1.5,)), jax.jvp(theirs, (a,), (1.5,)))


def test_root_not_differentiated_through_solve():
    """The derivative comes from the implicit function theorem at the returned solution,
    not from the solver's steps: a solver that stops early still gets f's exact slope
    there, as in JAX (here three bisection steps, far from converged)."""
    jax = pytest.importorskip("jax")
    ours = sqrt_root(jnp, lax, bisection(jnp, lax, steps=3))
    theirs = sqrt_root(jax.numpy, jax.lax, bisection(jax.numpy, jax.lax, steps=3))
    close(ours(2.0), theirs(2.0))
    close(tp.grad(ours)(2.0), jax.grad(theirs)(2.0))
    x = float(ours(2.0))
    close(tp.grad(ours)(2.0), 1 / (2 * x))  # -(∂f/∂a) / (∂f/∂x) at the returned x


def test_root_initial_guess_has_no_derivative():
    def run(x0, a):
        return lax.custom_root(lambda x: x ** 2 - a, x0, newton(jnp, tp), scalar_tangent_solve)
    grads = tp.grad(run, argnums=(0, 1))(1.0, 2.0)
    close(grads, (0.0, finite_differences(np.sqrt, 2.0)), rtol=1e-5)


def test_root_nested_closures_and_several_values():
    """f closes over a function that closes over another value: both get derivatives."""
    def run(a, c):
        scale = lambda x: c * x ** 3
        return lax.custom_root(lambda x: scale(x) - a, 1.0, newton(jnp, tp),
                               scalar_tangent_solve)
    exact = lambda a, c: (a / c) ** (1 / 3)
    grads = tp.grad(run, argnums=(0, 1))(2.0, 1.5)
    close(grads[0], finite_differences(lambda a: exact(a, 1.5), 2.0), rtol=1e-4)
    close(grads[1], finite_differences(lambda c: exact(2.0, c), 1.5), rtol=1e-4)
    close(tp.jacfwd(run, argnums=(0, 1))(2.0, 1.5), grads, rtol=1e-5)


def vector_root(xp, api, lax_):
    """A root of ``x**3 + m @ x - b`` (m positive definite: one real root) by Newton with
    the Jacobian, tangent_solve with the linearization's Jacobian."""
    def solve(f, x0):
        x = x0
        for _ in range(15):
            x = x - xp.linalg.solve(api.jacobian(f)(x), f(x))
        return x

    def tangent_solve(g, y):
        return xp.linalg.solve(api.jacobian(g)(y), y)

    def run(m, b):
        return lax_.custom_root(lambda x: x ** 3 + xp.dot(m, x) - b, xp.zeros_like(b), solve,
                                tangent_solve)
    return run


def _vector_root_float64(m, b):
    x = np.zeros_like(b)
    for _ in range(30):
        jac = np.diag(3 * x ** 2) + m
        x = x - np.linalg.solve(jac, x ** 3 + m @ x - b)
    return x


@pytest.mark.parametrize("jitted", [False, True], ids=["eager", "jit"])
def test_root_vector_grad_against_differences(jitted):
    run = vector_root(jnp, tp, lax)
    wrap = tp.jit if jitted else (lambda f: f)
    weights = np.array([1.0, -2.0, 0.5])
    loss = lambda m, b: jnp.dot(weights, run(m, b))
    close(wrap(run)(SPD, B), _vector_root_float64(SPD.astype(np.float64), B), rtol=1e-4, atol=1e-5)
    grads = wrap(tp.grad(loss, argnums=(0, 1)))(SPD, B)
    exact = lambda m, b: weights @ _vector_root_float64(m, b)
    close(grads[0], finite_differences(lambda m: exact(m, B.astype(np.float64)), SPD),
          rtol=1e-3, atol=1e-5)
    close(grads[1], finite_differences(lambda b: exact(SPD.astype(np.float64), b), B),
          rtol=1e-3, atol=1e-5)
    jac = wrap(tp.jacfwd(run, argnums=1))(SPD, B)
    close(jac.T @ weights, grads[1], rtol=1e-4, atol=1e-6)


def test_root_vector_matches_jax():
    jax = pytest.importorskip("jax")
    ours, theirs = vector_root(jnp, tp, lax), vector_root(jax.numpy, jax, jax.lax)
    close(ours(SPD, B), theirs(SPD, B), rtol=1e-4)
    close(tp.jacrev(ours, argnums=(0, 1))(SPD, B), jax.jacrev(theirs, argnums=(0, 1))(SPD, B),
          rtol=1e-4, atol=1e-6)
    close(tp.jacfwd(ours, argnums=(0, 1))(SPD, B), jax.jacfwd(theirs, argnums=(0, 1))(SPD, B),
          rtol=1e-4, atol=1e-6)


def test_root_pytree():
    """A dict guess and solution; f closes over a dict of parameters."""
    def solve(f, x0):
        x = x0
        for _ in range(15):
            slope = tp.jvp(f, (x,), (tree_util.tree_map(jnp.ones_like, x),))[1]
            x = tree_util.tree_map(lambda xi, fi, si: xi - fi / si, x, f(x), slope)
        return x

    def tangent_solve(g, y):  # g is diagonal here
        slope = g(tree_util.tree_map(jnp.ones_like, y))
        return tree_util.tree_map(lambda yi, si: yi / si, y, slope)

    def run(params):
        f = lambda x: {"u": x["u"] ** 2 - params["a"], "v": x["v"] ** 3 - params["b"]}
        return lax.custom_root(f, {"u": 1.0, "v": 1.0}, solve, tangent_solve)

    params = {"a": 2.0, "b": 5.0}
    out = run(params)
    assert set(out) == {"u", "v"}
    close(out, {"u": np.sqrt(2.0), "v": 5.0 ** (1 / 3)}, rtol=1e-5)
    grads = tp.grad(lambda p: run(p)["u"] + 2 * run(p)["v"])(params)
    close(grads, {"a": finite_differences(np.sqrt, 2.0),
                  "b": 2 * finite_differences(lambda b: b ** (1 / 3), 5.0)}, rtol=1e-4)


def test_root_has_aux():
    def solve(f, x0):
        x = newton(jnp, tp)(f, x0)
        return x, {"steps": jnp.array(12), "residual": f(x)}

    def run(a):
        return lax.custom_root(lambda x: x ** 2 - a, 1.0, solve, scalar_tangent_solve,
                               has_aux=True)
    x, aux = run(2.0)
    close(x, np.sqrt(2.0), rtol=1e-6)
    assert int(aux["steps"]) == 12
    close(tp.grad(lambda a: run(a)[0])(2.0), finite_differences(np.sqrt, 2.0), rtol=1e-5)
    close(tp.jvp(lambda a: run(a)[0], (2.0,), (1.0,))[1], finite_differences(np.sqrt, 2.0),
          rtol=1e-5)
    # the aux gets no derivative
    close(tp.grad(lambda a: run(a)[1]["residual"])(2.0), 0.0)


def test_root_has_aux_matches_jax():
    jax = pytest.importorskip("jax")

    def make(xp, api, lax_):
        def solve(f, x0):
            x = newton(xp, api)(f, x0)
            return x, f(x)
        return lambda a: lax_.custom_root(lambda x: x ** 2 - a, 1.0, solve,
                                          scalar_tangent_solve, has_aux=True)
    ours, theirs = make(jnp, tp, lax), make(jax.numpy, jax, jax.lax)
    close(ours(3.0), theirs(3.0), atol=1e-6)
    close(tp.grad(lambda a: ours(a)[0])(3.0), jax.grad(lambda a: theirs(a)[0])(3.0))


def test_root_vmap_against_loop():
    root = sqrt_root(jnp, lax, bisection(jnp, lax))
    xs = np.array([0.5, 2.0, 4.0, 9.0], np.float32)
    close(tp.vmap(root)(xs), np.stack([np.asarray(root(x)) for x in xs]))
    close(tp.jit(tp.vmap(root))(xs), np.sqrt(xs), rtol=1e-5)


# --- custom_linear_solve -----------------------------------------------------------------------

def _loss_float64(a, b):
    return np.sum(np.linalg.solve(a, b) ** 2)


@pytest.mark.parametrize("jitted", [False, True], ids=["eager", "jit"])
def test_linear_direct_value_and_grads(jitted):
    solve = direct(jnp, tp)
    run = linear(jnp, lax, solve, transpose_solve=solve)
    wrap = tp.jit if jitted else (lambda f: f)
    close(wrap(run)(A, B), np.linalg.solve(A.astype(np.float64), B), rtol=1e-5, atol=1e-6)
    grads = wrap(tp.grad(lambda a, b: jnp.sum(run(a, b) ** 2), argnums=(0, 1)))(A, B)
    a64, b64 = A.astype(np.float64), B.astype(np.float64)
    close(grads[0], finite_differences(lambda a: _loss_float64(a, b64), a64), rtol=1e-4,
          atol=1e-6)
    close(grads[1], finite_differences(lambda b: _loss_float64(a64, b), b64), rtol=1e-4,
          atol=1e-6)
    jac = wrap(tp.jacfwd(run, argnums=(0, 1)))(A, B)
    exact_b = np.linalg.inv(a64)
    close(jac[1], exact_b, rtol=1e-4, atol=1e-6)
    x = np.linalg.solve(a64, b64)
    close(jac[0], -np.einsum("ij,k->ijk", exact_b, x), rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("symmetric", [False, True], ids=["transpose_solve", "symmetric"])
@pytest.mark.parametrize("jitted", [False, True], ids=["eager", "jit"])
def test_linear_cg_grads(symmetric, jitted):
    cg = conjugate_gradient(jnp, lax)
    run = linear(jnp, lax, cg, transpose_solve=None if symmetric else cg, symmetric=symmetric)
    wrap = tp.jit if jitted else (lambda f: f)
    # derivatives with respect to a symmetric matrix: through a @ a.T
    def loss(c, b):
        return jnp.sum(run(jnp.dot(c, c.T), b) ** 2)
    spd64 = lambda c: c @ c.T
    close(wrap(lambda c, b: run(jnp.dot(c, c.T), b))(A, B),
          np.linalg.solve(spd64(A.astype(np.float64)), B), rtol=1e-3, atol=1e-5)
    grads = wrap(tp.grad(loss, argnums=(0, 1)))(A, B)
    a64, b64 = A.astype(np.float64), B.astype(np.float64)
    close(grads[0], finite_differences(lambda c: _loss_float64(spd64(c), b64), a64),
          rtol=2e-3, atol=1e-5)
    close(grads[1], finite_differences(lambda b: _loss_float64(spd64(a64), b), b64),
          rtol=2e-3, atol=1e-5)


def test_linear_matches_jax():
    jax = pytest.importorskip("jax")
    ours = linear(jnp, lax, direct(jnp, tp), transpose_solve=direct(jnp, tp))
    theirs = linear(jax.numpy, jax.lax, direct(jax.numpy, jax),
                    transpose_solve=direct(jax.numpy, jax))
    close(ours(A, B), theirs(A, B), rtol=1e-5, atol=1e-6)
    close(tp.jacrev(ours, argnums=(0, 1))(A, B), jax.jacrev(theirs, argnums=(0, 1))(A, B),
          rtol=1e-4, atol=1e-6)
    close(tp.jacfwd(ours, argnums=(0, 1))(A, B), jax.jacfwd(theirs, argnums=(0, 1))(A, B),
          rtol=1e-4, atol=1e-6)
    cg_ours = linear(jnp, lax, conjugate_gradient(jnp, lax), symmetric=True)
    cg_theirs = linear(jax.numpy, jax.lax, conjugate_gradient(jax.numpy, jax.lax),
                       symmetric=True)
    close(cg_ours(SPD, B), cg_theirs(SPD, B), rtol=1e-4, atol=1e-6)
    loss_ours = lambda m, b: jnp.sum(cg_ours(m, b) ** 2)
    loss_theirs = lambda m, b: jax.numpy.sum(cg_theirs(m, b) ** 2)
    close(tp.grad(loss_ours, argnums=(0, 1))(SPD, B),
          jax.grad(loss_theirs, argnums=(0, 1))(SPD, B), rtol=1e-3, atol=1e-6)


def test_linear_pytree_b():
    """b a tuple of two vectors; matvec a block-diagonal map over the pair."""
    c = (np.diag([2.0, 3.0]) + 0.5).astype(np.float32)

    def solve(matvec, b):
        return jnp.linalg.solve(A, b[0]), jnp.linalg.solve(c, b[1])

    def transpose_solve(vecmat, b):
        return jnp.linalg.solve(A.T, b[0]), jnp.linalg.solve(c.T, b[1])

    def run(scale, b):
        matvec = lambda x: (jnp.dot(A, x[0]), scale * jnp.dot(c, x[1]) / scale)
        return lax.custom_linear_solve(matvec, b, solve, transpose_solve)

    b = (B, np.array([1.0, -1.0], np.float32))
    x = run(1.0, b)
    assert isinstance(x, tuple) and len(x) == 2
    close(x, (np.linalg.solve(A, B), np.linalg.solve(c, b[1])), rtol=1e-5, atol=1e-6)
    grads = tp.grad(lambda b: jnp.sum(run(1.0, b)[0]) + jnp.sum(run(1.0, b)[1] ** 2))(b)
    close(grads[0], np.linalg.solve(A.T, np.ones(3)), rtol=1e-5, atol=1e-6)
    close(grads[1], np.linalg.solve(c.T, 2 * np.linalg.solve(c, b[1])), rtol=1e-5, atol=1e-6)
    # matvec's closed-over `scale` cancels out: its derivative is zero
    close(tp.grad(lambda s: jnp.sum(run(s, b)[1]))(2.0), 0.0, atol=1e-5)


def test_linear_has_aux():
    def solve(matvec, b):
        return jnp.linalg.solve(tp.jacobian(matvec)(b), b), jnp.array(1)

    def run(a, b):
        def transpose_solve(vecmat, y):
            return jnp.linalg.solve(a.T, y), jnp.array(2)
        return lax.custom_linear_solve(lambda x: jnp.dot(a, x), b, solve, transpose_solve,
                                       has_aux=True)
    x, aux = run(A, B)
    close(x, np.linalg.solve(A, B), rtol=1e-5, atol=1e-6)
    assert int(aux) == 1
    a64, b64 = A.astype(np.float64), B.astype(np.float64)
    grad_b = tp.grad(lambda b: jnp.sum(run(A, b)[0] ** 2))(B)
    close(grad_b, finite_differences(lambda b: _loss_float64(a64, b), b64), rtol=1e-4,
          atol=1e-6)
    close(tp.jvp(lambda b: run(A, b)[0], (B,), (B,))[1], np.linalg.solve(A, B), rtol=1e-5,
          atol=1e-6)


def test_linear_vmap_against_loop():
    def run(a, b):
        return lax.custom_linear_solve(lambda x: jnp.dot(a, x), b,
                                       lambda mv, r: jnp.linalg.solve(a, r),
                                       lambda vm, r: jnp.linalg.solve(a.T, r))
    batched = tp.vmap(run, (None, 0))(A, BS)
    close(batched, np.stack([np.asarray(run(A, b)) for b in BS]), rtol=1e-6)
    matrices = np.stack([A, A + np.eye(3, dtype=np.float32)])
    close(tp.vmap(run, (0, None))(matrices, B),
          np.stack([np.asarray(run(m, B)) for m in matrices]), rtol=1e-6)
    loss = lambda a, b: jnp.sum(run(a, b) ** 2)
    per_row = tp.vmap(tp.grad(loss, argnums=(0, 1)), (None, 0))(A, BS)
    loop = [tp.grad(loss, argnums=(0, 1))(A, b) for b in BS]
    close(per_row, (np.stack([g[0] for g in loop]), np.stack([g[1] for g in loop])),
          rtol=1e-5, atol=1e-6)
    total = tp.jit(tp.grad(lambda a, bs: jnp.sum(tp.vmap(run, (None, 0))(a, bs) ** 2),
                           argnums=(0, 1)))(A, BS)
    close(total, (sum(g[0] for g in loop), np.stack([g[1] for g in loop])), rtol=1e-4,
          atol=1e-5)


# --- errors ------------------------------------------------------------------------------------

def test_tangent_solve_structure_mismatch():
    def run(a):
        return lax.custom_root(lambda x: x ** 2 - a, 1.0, newton(jnp, tp),
                               lambda g, y: (y / g(1.0), y))
    run(2.0)  # the value does not call tangent_solve
    with pytest.raises(TypeError, match=r"tangent_solve\(\) output pytree structure must match"):
        tp.grad(run)(2.0)
    with pytest.raises(TypeError, match=r"tangent_solve\(\) output pytree structure must match"):
        tp.jvp(run, (2.0,), (1.0,))


def test_solve_structure_mismatch():
    with pytest.raises(TypeError, match=r"solve\(\) output pytree structure must match"):
        lax.custom_root(lambda x: x ** 2 - 2.0, 1.0, lambda f, x0: (x0, x0),
                        scalar_tangent_solve)
    with pytest.raises(ValueError, match=r"output shapes must match b"):
        lax.custom_linear_solve(lambda x: x, B, lambda mv, b: b[:2])
    with pytest.raises(ValueError, match="has_aux was set to True"):
        lax.custom_linear_solve(lambda x: x, B, lambda mv, b: b, has_aux=True)


def test_reverse_mode_needs_transpose_solve():
    run = linear(jnp, lax, direct(jnp, tp))
    close(tp.jacfwd(run, argnums=1)(A, B), np.linalg.inv(A), rtol=1e-4, atol=1e-6)
    with pytest.raises(TypeError, match="transpose_solve required for backwards mode"):
        tp.grad(lambda b: jnp.sum(run(A, b)))(B)


@tree_util.register_pytree_node_class
class Scaled:
    """A callable pytree holding an array: its derivative cannot be routed back."""

    def __init__(self, a):
        self.a = a

    def __call__(self, x):
        return x ** 2 - self.a

    def tree_flatten(self):
        return (self.a,), None

    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(*children)


def test_callable_object_with_arrays_is_refused():
    run = lambda a: lax.custom_root(Scaled(a), 1.0, newton(jnp, tp), scalar_tangent_solve)
    close(run(2.0), np.sqrt(2.0), rtol=1e-6)
    with pytest.raises(TranspileError, match="cannot differentiate with respect to the values"):
        tp.grad(run)(2.0)
    # wrapped in a function that closes over it, it is differentiated
    wrapped = lambda a: lax.custom_root(functools.partial(Scaled.__call__, Scaled(a)), 1.0,
                                        newton(jnp, tp), scalar_tangent_solve)
    close(tp.grad(wrapped)(2.0), finite_differences(np.sqrt, 2.0), rtol=1e-5)


def test_second_order_is_an_error_not_a_wrong_answer():
    root = sqrt_root(jnp, lax, newton(jnp, tp))
    with pytest.raises(TranspileError):
        tp.grad(tp.grad(root))(2.0)


def test_wrapped_function_is_refused_not_dropped():
    """f wrapped in jit (or vmap, in reverse mode) closing over the differentiated value:
    the derivative would not flow back through the wrapper, so it is an error."""
    jitted = lambda a: lax.custom_root(tp.jit(lambda x: x ** 2 - a), 1.0, newton(jnp, tp),
                                       scalar_tangent_solve)
    close(jitted(2.0), np.sqrt(2.0), rtol=1e-6)
    with pytest.raises(TranspileError, match="it is a Jitted"):
        tp.grad(jitted)(2.0)
    with pytest.raises(TranspileError, match="it is a Jitted|closes over arrays"):
        tp.jvp(jitted, (2.0,), (1.0,))
    vmapped = lambda a: jnp.sum(lax.custom_root(
        tp.vmap(lambda x: x ** 2 - a), jnp.ones(2), lambda f, x0: jnp.sqrt(a) * x0,
        lambda g, y: y / g(jnp.ones(2))))
    close(tp.jvp(vmapped, (2.0,), (1.0,))[1], 2 * finite_differences(np.sqrt, 2.0), rtol=1e-5)
    with pytest.raises(TranspileError, match="it is a Vmapped"):
        tp.grad(vmapped)(2.0)
