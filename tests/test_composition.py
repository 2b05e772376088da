"""What composition gives: forward mode through the named-axis collectives (each linear,
so its own JVP: ``jvp(psum)`` is ``psum`` of the tangent, as in JAX), and a custom_vjp
rule kept when the custom function is batched inside a derivative (``grad(vmap(f))``) or
its derivative is batched (``vmap(grad(f))``); eager and under jit, against NumPy and, where
installed, JAX."""

from __future__ import annotations

import functools

import numpy as np
import pytest

import transpiler as jax
import transpiler.numpy as jnp
from transpiler import lax
from transpiler.errors import TranspileError
from tests.oracles import finite_differences

B = 4
_rng = np.random.default_rng(3)
X = _rng.standard_normal((B, 3)).astype(np.float32)
T = _rng.standard_normal((B, 3)).astype(np.float32)


def _close(got, want, tol=1e-5):
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=tol, atol=tol)


def _jvp_over_axis(f):
    """``vmap(lambda x, t: jvp(f, (x,), (t,)), axis_name="i")``."""
    return jax.vmap(lambda x, t: jax.jvp(f, (x,), (t,)), axis_name="i")


# Each collective with the NumPy value it gives every member of the batch (batch axis 0).
COLLECTIVES = {
    "psum": (lambda v: lax.psum(v, "i"), lambda a: np.broadcast_to(a.sum(0), a.shape)),
    "pmean": (lambda v: lax.pmean(v, "i"), lambda a: np.broadcast_to(a.mean(0), a.shape)),
    "all_gather": (lambda v: lax.all_gather(v, "i"),
                   lambda a: np.broadcast_to(a, (B, *a.shape))),
    "ppermute": (lambda v: lax.ppermute(v, "i", [(k, (k + 1) % B) for k in range(B)]),
                 lambda a: np.roll(a, 1, axis=0)),
}


@pytest.mark.parametrize("name", sorted(COLLECTIVES))
@pytest.mark.parametrize("jit", [False, True])
def test_jvp_of_a_collective_is_the_collective_of_the_tangent(name, jit):
    collective, numpy_value = COLLECTIVES[name]
    f = _jvp_over_axis(lambda x: collective(jnp.sin(x)))
    out, tangent = (jax.jit(f) if jit else f)(X, T)
    _close(out, numpy_value(np.sin(X)))
    _close(tangent, numpy_value(np.cos(X) * T))


def test_forward_mode_through_psum_inside_a_loss():
    """jvp of a normalized batch (x / psum(x)), against central differences in float64."""
    def normalized(x):
        return x / lax.psum(x, "i")

    _, tangent = _jvp_over_axis(normalized)(X, T)
    x64, t64, eps = X.astype(np.float64), T.astype(np.float64), 1e-6
    want = ((x64 + eps * t64) / (x64 + eps * t64).sum(0)
            - (x64 - eps * t64) / (x64 - eps * t64).sum(0)) / (2 * eps)
    _close(tangent, want, tol=1e-3)


def test_pmax_stays_without_a_forward_rule():
    f = _jvp_over_axis(lambda x: lax.pmax(x, "i"))
    with pytest.raises(TranspileError, match="pmax has no differentiation rule"):
        f(X, T)


@jax.custom_vjp
def clipped_sin(x):
    return jnp.sin(x)


def _clipped_fwd(x):
    return jnp.sin(x), jnp.cos(x)


def _clipped_bwd(cos_x, g):
    return (jnp.clip(g * cos_x, -0.1, 0.1),)  # the custom rule: a clipped gradient


clipped_sin.defvjp(_clipped_fwd, _clipped_bwd)


def _rule(x):
    return np.clip(np.cos(x), -0.1, 0.1)


@pytest.mark.parametrize("jit", [False, True])
def test_grad_of_vmap_keeps_the_custom_rule(jit):
    f = jax.grad(lambda x: jnp.sum(jax.vmap(clipped_sin)(x)))
    _close((jax.jit(f) if jit else f)(X), _rule(X))


@pytest.mark.parametrize("jit", [False, True])
def test_vmap_of_grad_keeps_the_custom_rule(jit):
    f = jax.vmap(jax.grad(clipped_sin))
    _close((jax.jit(f) if jit else f)(X[:, 0]), _rule(X[:, 0]))


def test_grad_of_vmap_of_a_helper_calling_the_custom_function():
    def helper(v):
        return clipped_sin(v) * 2.0

    got = jax.grad(lambda x: jnp.sum(jax.vmap(helper)(x)))(X)
    _close(got, np.clip(2.0 * np.cos(X), -0.1, 0.1))  # the rule sees the cotangent 2.0


@jax.custom_jvp
def scaled_sin(x):
    return jnp.sin(x)


@scaled_sin.defjvp
def _scaled_sin_jvp(primals, tangents):
    return jnp.sin(primals[0]), 100.0 * tangents[0]  # the custom rule, not cos(x)


@pytest.mark.parametrize("custom", [scaled_sin, clipped_sin], ids=["custom_jvp", "custom_vjp"])
@pytest.mark.parametrize("wrap", ["cond", "partial", "scan", "fori_loop", "checkpoint", "jit",
                                  "closure"])
def test_grad_through_a_wrapper_keeps_the_custom_rule(custom, wrap):
    """The rule is what differentiates the function wherever it is called from, under grad
    and vmap(grad) (through a branch, a partial or a wrapper made in the differentiated
    function, both kinds once got their primal's derivative, without a word)."""
    calls = {
        "cond": lambda c: jax.lax.cond(True, custom, lambda v: v, c),
        "partial": lambda c: functools.partial(custom)(c),
        "scan": lambda c: jax.lax.scan(lambda s, _: (custom(s), None), c, None, length=1)[0],
        "fori_loop": lambda c: jax.lax.fori_loop(0, 1, lambda i, s: custom(s), c),
        "checkpoint": lambda c: jax.checkpoint(custom)(c),
        "jit": lambda c: jax.jit(custom)(c),
        "closure": lambda c: (lambda v: custom(v))(c),
    }
    x = np.float32(0.3)
    want = 100.0 if custom is scaled_sin else float(_rule(x))
    _close(jax.grad(calls[wrap])(x), want)
    _close(jax.vmap(jax.grad(calls[wrap]))(np.array([x, x])), np.array([want, want]))


def test_against_jax():
    jax_ = pytest.importorskip("jax")
    jjnp = pytest.importorskip("jax.numpy")

    @jax_.custom_vjp
    def theirs(x):
        return jjnp.sin(x)

    theirs.defvjp(lambda x: (jjnp.sin(x), jjnp.cos(x)),
                  lambda c, g: (jjnp.clip(g * c, -0.1, 0.1),))
    want = jax_.grad(lambda x: jjnp.sum(jax_.vmap(theirs)(x)))(X)
    _close(jax.grad(lambda x: jnp.sum(jax.vmap(clipped_sin)(x)))(X), want)
    f = jax_.vmap(lambda x, t: jax_.jvp(lambda v: jax_.lax.psum(jjnp.sin(v), "i"), (x,), (t,)),
                  axis_name="i")
    want_out, want_tangent = f(X, T)
    out, tangent = _jvp_over_axis(lambda x: lax.psum(jnp.sin(x), "i"))(X, T)
    _close(out, want_out)
    _close(tangent, want_tangent)


# --- second order through lax control flow ------------------------------------------------
# hessian is forward over reverse (jacfwd(jacrev(f))): forward mode reads the reverse rules
# of cond/switch (ad/control.py), so the second derivative of a branch is the forward mode
# of its generated reverse code, inside a cond again.

def _cond_closure(x):
    w = x[0]
    return jnp.sum(lax.cond(jnp.sum(x) > 0, lambda v: jnp.sin(v * w) * v, lambda v: v ** 3, x))


def _cond_false_branch(x):
    return jnp.sum(lax.cond(jnp.sum(x) < 0, lambda v: jnp.sin(v) * v, lambda v: v ** 3, x))


def _switch(x):
    return lax.switch(1, [lambda v: jnp.sum(jnp.sin(v)), lambda v: jnp.sum(v ** 3 * v[0]),
                          lambda v: jnp.sum(v)], x)


def _fd_hessian(f, x, eps=1e-3):
    """Central differences of our gradient, in float64 arithmetic on float32 gradients."""
    x = np.asarray(x, np.float64)
    rows = []
    for i in range(x.size):
        e = np.zeros_like(x)
        e[i] = eps
        plus = np.asarray(jax.grad(f)(jnp.asarray(x + e, jnp.float32)), np.float64)
        minus = np.asarray(jax.grad(f)(jnp.asarray(x - e, jnp.float32)), np.float64)
        rows.append((plus - minus) / (2 * eps))
    return np.stack(rows, axis=1)


@pytest.mark.parametrize("f", [_cond_closure, _cond_false_branch, _switch],
                         ids=["cond-closure", "cond-false", "switch"])
@pytest.mark.parametrize("jit", [False, True])
def test_hessian_through_cond_and_switch(f, jit):
    x = np.array([0.3, 0.7], np.float32)
    h = jax.jit(jax.hessian(f)) if jit else jax.hessian(f)
    _close(h(x), _fd_hessian(f, x), tol=2e-2)


def test_hessian_through_cond_against_jax():
    jax_ = pytest.importorskip("jax")
    jjnp = pytest.importorskip("jax.numpy")

    def theirs(x):
        w = x[0]
        return jjnp.sum(jax_.lax.cond(jjnp.sum(x) > 0, lambda v: jjnp.sin(v * w) * v,
                                      lambda v: v ** 3, x))

    x = np.array([0.3, 0.7], np.float32)
    _close(jax.hessian(_cond_closure)(x), jax_.hessian(theirs)(x), tol=1e-5)
    g = lambda v: jnp.sum(lax.cond(v > 0, jnp.sin, jnp.cos, v))  # noqa: E731
    _, ours = jax.jvp(jax.grad(g), (np.float32(0.4),), (np.float32(1.0),))
    _close(ours, -np.sin(np.float32(0.4)))


def _fori(x):
    w = x[0]  # (the body closes over a differentiated value)
    return jnp.sum(lax.fori_loop(0, 3, lambda i, c: jnp.sin(c) * c * w + c * i, x))


def _fori_long(x):  # (long enough for fori_loop's unrolled loop under jit)
    return jnp.sum(lax.fori_loop(0, 20, lambda i, c: jnp.sin(c) * 0.9 + c * 0.2, x))


def _scan(x):
    def body(c, xi):
        c = jnp.tanh(c * xi + x)
        return c, c * 2
    c, ys = lax.scan(body, x, jnp.arange(1.0, 4.0))
    return jnp.sum(c) + jnp.sum(ys ** 2)


def _scan_reverse_xs(x):
    def body(c, xi):
        return c * jnp.cos(xi), jnp.sum(c * xi)
    c, ys = lax.scan(body, x[0], x ** 2, reverse=True)
    return c + jnp.sum(ys * ys)


def _map(x):
    w = x[0]
    return jnp.sum(lax.map(lambda v: jnp.sin(v * w) * v, x))


def _while_eager(x):
    return jnp.sum(lax.while_loop(lambda c: jnp.sum(c) < 5.0, lambda c: c * 1.5 + jnp.sin(c), x))


@pytest.mark.parametrize("f", [_fori, _fori_long, _scan, _scan_reverse_xs, _map],
                         ids=["fori_loop", "fori_loop-unrolled", "scan", "scan-reverse", "map"])
@pytest.mark.parametrize("jit", [False, True])
def test_hessian_through_loops(f, jit):
    """Forward mode reads the loops' reverse rules (a forward `scan` storing the carries,
    a reverse `scan` running each step's generated VJP): their second derivative is forward
    mode of that code, loops again under jit."""
    x = np.array([0.3, 0.7], np.float32)
    h = jax.jit(jax.hessian(f)) if jit else jax.hessian(f)
    _close(h(x), _fd_hessian(f, x), tol=2e-2)


def test_hessian_through_an_eager_while_loop():
    x = np.array([0.3, 0.7], np.float32)
    _close(jax.hessian(_while_eager)(x), _fd_hessian(_while_eager, x), tol=5e-2)


def test_hessian_through_loops_against_jax():
    jax_ = pytest.importorskip("jax")
    jjnp = pytest.importorskip("jax.numpy")

    def fori(x):
        w = x[0]
        return jjnp.sum(jax_.lax.fori_loop(0, 3, lambda i, c: jjnp.sin(c) * c * w + c * i, x))

    def scan(x):
        def body(c, xi):
            c = jjnp.tanh(c * xi + x)
            return c, c * 2
        c, ys = jax_.lax.scan(body, x, jjnp.arange(1.0, 4.0))
        return jjnp.sum(c) + jjnp.sum(ys ** 2)

    x = np.array([0.3, 0.7], np.float32)
    _close(jax.hessian(_fori)(x), jax_.hessian(fori)(x), tol=1e-5)
    _close(jax.jit(jax.hessian(_scan))(x), jax_.hessian(scan)(x), tol=1e-5)
    _, ours = jax.jvp(jax.grad(_fori), (x,), (np.ones_like(x),))
    _, theirs = jax_.jvp(jax_.grad(fori), (x,), (np.ones_like(x),))
    _close(ours, theirs, tol=1e-5)


def _bounded_while(x):
    return jnp.sum(lax.while_loop(lambda c: jnp.sum(c) < 5.0, lambda c: c * 1.5 + jnp.sin(c), x,
                                  max_iters=20))


def _while_counted(x):
    return jnp.sum(lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, jnp.sin(c[1]) * c[1]),
                                  (0, x))[1])


# The second-order forms JAX users write besides hessian: forward over forward (the loops'
# forward rules are read by forward mode), reverse over forward (read by reverse mode), and
# a batch of hessians (the rules batched by vmap, which reads them too).
SECOND_ORDER = {
    "jacfwd(jacfwd)": lambda f: jax.jacfwd(jax.jacfwd(f)),
    "jacrev(jacfwd)": lambda f: jax.jacrev(jax.jacfwd(f)),
    "jacfwd(jacrev)": lambda f: jax.jacfwd(jax.jacrev(f)),
}


@pytest.mark.parametrize("f", [_cond_closure, _switch, _fori, _scan, _scan_reverse_xs, _map,
                               _while_eager, _while_counted],
                         ids=["cond", "switch", "fori_loop", "scan", "scan-reverse", "map",
                              "while_loop", "while_loop-counted"])
@pytest.mark.parametrize("form", SECOND_ORDER)
@pytest.mark.parametrize("jit", [False, True])
def test_second_order_forms_through_control_flow(f, form, jit):
    if jit and f in (_while_eager, _while_counted) and form == "jacfwd(jacrev)":
        pytest.skip("forward mode over a while_loop's reverse rule under jit is refused "
                    "(test_what_second_order_through_control_flow_still_refuses)")
    x = np.array([0.3, 0.7], np.float32)
    h = jax.jit(SECOND_ORDER[form](f)) if jit else SECOND_ORDER[form](f)
    _close(h(x), _fd_hessian(f, x), tol=2e-2)


@pytest.mark.parametrize("f", [_cond_closure, _fori, _scan, _while_counted,
                               lambda x: jnp.sum(jnp.sin(x) * x) * jnp.mean(x)],
                         ids=["cond", "fori_loop", "scan", "while_loop", "no-control-flow"])
@pytest.mark.parametrize("jit", [False, True])
def test_vmap_of_hessian(f, jit):
    """``vmap(hessian(f))`` (per-example hessians) equals a loop of hessians."""
    if jit and f is _while_counted:
        pytest.skip("hessian through a while_loop under jit is refused (see above)")
    xs = np.array([[0.3, 0.7], [0.5, -0.2], [1.1, 0.4]], np.float32)
    batched = jax.vmap(jax.hessian(f))
    got = jax.jit(batched)(xs) if jit else batched(xs)
    _close(got, np.stack([np.asarray(jax.hessian(f)(x)) for x in xs]), tol=1e-5)


@pytest.mark.parametrize("f", [_cond_closure, _switch, _fori, _scan, _map, _while_counted],
                         ids=["cond", "switch", "fori_loop", "scan", "map", "while_loop"])
def test_vmap_of_hessian_is_the_rules_batched(f, monkeypatch):
    """vmap reads the control-flow rules as code: a batch of hessians is one batched
    computation, not a loop over the members (`Vmapped.member_by_member`)."""
    from transpiler.transforms.batch.api import Vmapped

    def refuse(*args, **kwargs):
        raise AssertionError("mapped member by member")
    monkeypatch.setattr(Vmapped, "member_by_member", refuse)
    xs = np.array([[0.3, 0.7], [0.5, -0.2], [1.1, 0.4]], np.float32)
    got = jax.vmap(jax.hessian(f))(xs)
    _close(got, np.stack([np.asarray(jax.hessian(f)(x)) for x in xs]), tol=1e-5)
    got = jax.vmap(jax.grad(f))(xs)
    _close(got, np.stack([np.asarray(jax.grad(f)(x)) for x in xs]), tol=1e-5)


@pytest.mark.parametrize("jit", [False, True])
def test_vmap_of_hessian_through_a_collective_in_a_loop(jit):
    """A collective over the vmapped axis inside a loop, differentiated twice: the tangents
    of every member flow through `psum` (JAX: [4, 4] and [24, 24])."""
    def in_loop(v):
        return lax.fori_loop(0, 2, lambda i, c: lax.psum(c, "b") * c, v)

    x = np.array([0.3, 0.7], np.float32)
    for f, want in [(lambda v: lax.psum(v, "b") * v, 4.0), (in_loop, 24.0)]:
        h = jax.vmap(jax.hessian(f), axis_name="b")
        _close((jax.jit(h) if jit else h)(x), np.full(2, want, np.float32), tol=1e-5)


def test_vmap_of_hessian_keeps_in_and_out_axes():
    xs = np.array([[0.3, 0.7], [0.5, -0.2], [1.1, 0.4]], np.float32)
    scale = np.float32(1.5)

    def f(x, s):
        return jnp.sum(lax.fori_loop(0, 3, lambda i, c: jnp.sin(c) * s, x))

    got = jax.vmap(jax.hessian(f), in_axes=(1, None), out_axes=2)(xs.T, scale)
    want = np.stack([np.asarray(jax.hessian(f)(x, scale)) for x in xs], axis=2)
    _close(got, want, tol=1e-5)


# --- derivatives inside batched functions: a physics-informed network's residual --------------
def _network(np_):
    def u(params, x):  # a scalar input made a vector, as PINN code writes it
        h = np_.array([x])
        for w, b in params[:-1]:
            h = np_.tanh(h @ w + b)
        w, b = params[-1]
        return (h @ w + b)[0]
    return u


_PINN_PARAMS = [(_rng.standard_normal((1, 6)).astype(np.float32),
                 _rng.standard_normal(6).astype(np.float32) * 0.1),
                (_rng.standard_normal((6, 1)).astype(np.float32) * 0.3,
                 np.zeros(1, np.float32))]


def test_residual_with_second_derivatives_batched_over_points():
    """``vmap(residual)`` where the residual takes ``grad(grad(u, 1), 1)`` of a network
    that stacks its scalar input (``jnp.array([x])``): the second derivative was 0."""
    u = _network(jnp)
    uxx = jax.grad(jax.grad(u, argnums=1), argnums=1)
    xs = np.linspace(-1, 1, 5).astype(np.float32)
    got = jax.vmap(uxx, in_axes=(None, 0))(_PINN_PARAMS, xs)
    eps = 1e-2
    ux = jax.grad(u, argnums=1)
    want = [(float(ux(_PINN_PARAMS, np.float32(x + eps))) -
             float(ux(_PINN_PARAMS, np.float32(x - eps)))) / (2 * eps) for x in xs]
    _close(got, want, tol=2e-3)
    _close(jax.jit(jax.vmap(uxx, in_axes=(None, 0)))(_PINN_PARAMS, xs), got, tol=1e-5)


def _pinn_loss_np(w1, params, xs):
    """The residual loss of `_network` in float64 NumPy, its second derivative written out:
    u = v . tanh(w x + b) + c, so u_xx = sum_j v_j w_j^2 tanh''(w_j x + b_j)."""
    (_, b1), (v, _) = params
    z = np.outer(xs, w1[0]) + b1
    t = np.tanh(z)
    uxx = (-2 * t * (1 - t ** 2) * w1[0] ** 2) @ v[:, 0]
    return np.mean((uxx + np.sin(xs)) ** 2)


@pytest.mark.parametrize("jit", [False, True])
def test_training_a_physics_informed_network(jit):
    """``grad`` over the parameters of a loss built from ``vmap`` of ``grad(grad(u))``: a
    third derivative through ``jnp.array([x])`` batched over the points (a RecursionError
    before: a loop tape held its own scope)."""
    u = _network(jnp)
    uxx = jax.grad(jax.grad(u, argnums=1), argnums=1)
    xs = np.linspace(-1, 1, 5).astype(np.float32)

    def loss(params):
        return jnp.mean((jax.vmap(uxx, in_axes=(None, 0))(params, xs) + jnp.sin(xs)) ** 2)

    grad = jax.jit(jax.grad(loss)) if jit else jax.grad(loss)
    got = grad(_PINN_PARAMS)
    params64 = [(np.float64(w), np.float64(b)) for w, b in _PINN_PARAMS]
    want = finite_differences(lambda w1: _pinn_loss_np(w1, params64, np.float64(xs)),
                              params64[0][0])
    _close(got[0][0], want, tol=2e-4)


def _penalty(x):
    return jnp.sum(jax.grad(lambda v: jnp.sum(v ** 4 - v ** 2))(x) ** 2)


@pytest.mark.parametrize("jit", [False, True])
def test_vmap_of_grad_of_a_function_that_takes_a_gradient(jit):
    """``vmap(grad(f))`` where f calls ``grad(g)`` itself (a gradient penalty): the batched
    reverse mode of a call of a grad object was 'not supported'."""
    batched = jax.vmap(jax.grad(_penalty))
    got = jax.jit(batched)(X) if jit else batched(X)
    # d/dx sum((4x^3 - 2x)^2) = 2 (4x^3 - 2x)(12x^2 - 2)
    _close(got, 2 * (4 * X ** 3 - 2 * X) * (12 * X ** 2 - 2), tol=1e-4)


def _dict_loss(p, v):
    return jnp.sum(jnp.tanh(v @ p["w"] + p["b"]) ** 2)


_DICT_PARAMS = {"w": _rng.standard_normal((3, 2)).astype(np.float32),
                "b": np.zeros(2, np.float32)}


@pytest.mark.parametrize("jit", [False, True])
def test_vmap_of_hessian_with_respect_to_a_dict(jit):
    """Per-example hessians with respect to a dict of parameters: a Jacobian with respect
    to a pytree is not readable as one batched computation, so vmap maps it member by
    member (it was 'expected ndarray or scalar arguments, got dict')."""
    batched = jax.vmap(jax.hessian(_dict_loss), in_axes=(None, 0))
    got = (jax.jit(batched) if jit else batched)(_DICT_PARAMS, X)
    for i, x in enumerate(X):
        want = jax.hessian(_dict_loss)(_DICT_PARAMS, x)
        for a in _DICT_PARAMS:
            for b in _DICT_PARAMS:
                _close(np.asarray(got[a][b])[i], want[a][b], tol=1e-5)


def test_derivative_of_a_hessian_with_respect_to_a_dict_is_an_error_at_the_line():
    with pytest.raises(TranspileError, match="Jacobian with respect to a dict") as info:
        jax.grad(lambda p: jnp.sum(jax.hessian(_dict_loss)(p, X[0])["w"]["w"]))(_DICT_PARAMS)
    assert f"{__file__}:" in str(info.value)


def test_second_order_forms_through_control_flow_against_jax():
    jax_ = pytest.importorskip("jax")
    jjnp = pytest.importorskip("jax.numpy")

    def theirs(x):
        w = x[0]
        c = jax_.lax.fori_loop(0, 3, lambda i, c: jjnp.sin(c) * c * w + c * i, x)
        return jjnp.sum(jax_.lax.cond(jjnp.sum(c) > 0, lambda v: jjnp.sin(v) * v,
                                      lambda v: v ** 3, c))

    def ours(x):
        w = x[0]
        c = lax.fori_loop(0, 3, lambda i, c: jnp.sin(c) * c * w + c * i, x)
        return jnp.sum(lax.cond(jnp.sum(c) > 0, lambda v: jnp.sin(v) * v, lambda v: v ** 3, c))

    x = np.array([0.3, 0.7], np.float32)
    xs = np.stack([x, -x, 2 * x])
    _close(jax.jacfwd(jax.jacfwd(ours))(x), jax_.jacfwd(jax_.jacfwd(theirs))(x), tol=1e-4)
    _close(jax.jacrev(jax.jacfwd(ours))(x), jax_.jacrev(jax_.jacfwd(theirs))(x), tol=1e-4)
    _close(jax.jit(jax.vmap(jax.hessian(ours)))(xs), jax_.vmap(jax_.hessian(theirs))(xs),
           tol=1e-4)


# grad(grad(f)) and jacrev(jacrev(f)) are reverse over reverse: reverse mode reads the same
# rules (and the helpers they call: fill, _where, a closure's cells) as forward mode does.

_SECOND_ORDER = [_cond_closure, _cond_false_branch, _switch, _fori, _scan, _scan_reverse_xs,
                 _map, _while_eager]
_SECOND_ORDER_IDS = ["cond-closure", "cond-false", "switch", "fori_loop", "scan",
                     "scan-reverse", "map", "while-eager"]


@pytest.mark.parametrize("f", _SECOND_ORDER, ids=_SECOND_ORDER_IDS)
def test_reverse_over_reverse_through_control_flow(f):
    x = np.array([0.3, 0.7], np.float32)
    want = _fd_hessian(f, x)
    _close(jax.jacrev(jax.jacrev(f))(x), want, tol=2e-2)
    # a scalar function of the gradient: grad of it is hessian @ its cotangent
    g = np.asarray(jax.grad(f)(x), np.float64)
    _close(jax.grad(lambda v: jnp.sum(jax.grad(f)(v) ** 2))(x), 2 * want @ g, tol=2e-2)


@pytest.mark.parametrize("f", [_cond_closure, _fori, _scan, _bounded_while],
                         ids=["cond-closure", "fori_loop", "scan", "while-bounded"])
def test_reverse_over_reverse_through_control_flow_under_jit(f):
    x = np.array([0.3, 0.7], np.float32)
    _close(jax.jit(jax.jacrev(jax.jacrev(f)))(x), _fd_hessian(f, x), tol=2e-2)


def test_grad_of_grad_through_control_flow_against_jax():
    jax_ = pytest.importorskip("jax")
    jjnp = pytest.importorskip("jax.numpy")

    def ours(x):
        s = x * 2.0
        c = lax.cond(x > 0, lambda y: jnp.sin(y) * s, lambda y: y ** 3, x)
        return lax.fori_loop(0, 3, lambda i, v: jnp.sin(v) * s + v, c)

    def theirs(x):
        s = x * 2.0
        c = jax_.lax.cond(x > 0, lambda y: jjnp.sin(y) * s, lambda y: y ** 3, x)
        return jax_.lax.fori_loop(0, 3, lambda i, v: jjnp.sin(v) * s + v, c)

    for x in (np.float32(0.7), np.float32(-0.4)):
        _close(jax.grad(jax.grad(ours))(x), jax_.grad(jax_.grad(theirs))(x), tol=1e-4)
        _close(jax.jit(jax.grad(jax.grad(ours)))(x), jax_.grad(jax_.grad(theirs))(x),
               tol=1e-4)


def _apply_both(fs, y):
    return fs[0](y) + fs[1](y)


def test_closures_in_a_container_passed_to_a_function_known_at_run_time():
    """A list of closures passed to a function known only at run time carries their cells'
    derivatives (it was taken for a constant: a zero gradient, silently)."""
    def f(x, h):
        return h([lambda y: y * x, lambda y: jnp.sin(x) * y], 2.0)

    x = np.float32(0.5)
    _close(jax.grad(f)(x, _apply_both), 2 + 2 * np.cos(x), tol=1e-5)
    _close(jax.grad(jax.grad(f))(x, _apply_both), -2 * np.sin(x), tol=1e-5)
    _close(jax.jvp(lambda v: f(v, _apply_both), (x,), (np.float32(1.0),))[1],
           2 + 2 * np.cos(x), tol=1e-5)


@pytest.mark.parametrize("call, message", [
    (lambda x: jax.jit(jax.hessian(_bounded_while))(x),
     "second-order differentiation through this lax control flow"),
    (lambda x: jax.grad(jax.grad(jax.grad(lambda v: _cond_closure(v * x))))(np.float32(1.0)),
     "third-order differentiation through lax control flow"),
    (lambda x: jax.jvp(jax.grad(jax.grad(lambda v: _fori(v * x))), (np.float32(1.0),),
                       (np.float32(1.0),)),
     "third-order differentiation through lax control flow"),
])
def test_what_second_order_through_control_flow_still_refuses(call, message):
    """A bounded while_loop's rule under jit is not read by forward mode and no
    second-order rule is read again (third order): a clear error at the user's line, never
    a wrong value."""
    with pytest.raises(TranspileError, match=message) as info:
        call(np.array([0.3, 0.7], np.float32))
    assert f"{__file__}:" in str(info.value)


# --- grad of a vmap whose function calls vmap: JAX's advi.py and Gaussian-process example
def _elbo_like(api, np_):
    """advi.py's shape: an outer vmap over samples of a function that sums an inner vmap."""
    def elbo(params, xs):
        def per_sample(x, m):
            return np_.sum(api.vmap(lambda a, b: np_.sin(a) * b ** 2)(x, m))
        return np_.mean(api.vmap(per_sample, in_axes=(0, None))(xs, params))
    return elbo


def _covariance_loss(api, np_):
    """gaussian_process_regression.py's cov_map: a vmap of a vmap of a closure over the
    outer element, differentiated through the data it closes over."""
    def loss(log_scale, xs):
        def kernel(a, b):
            return np_.exp(-np_.sum((a - b) ** 2))
        scaled = xs / np_.exp(log_scale)
        cov = api.vmap(lambda x: api.vmap(lambda y: kernel(x, y))(scaled))(scaled)
        return np_.sum(cov ** 2) + np_.sum(cov[0])
    return loss


_SAMPLES = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)
_PARAMS = np.array([0.5, -1.0, 2.0], np.float32)
_POINTS = np.linspace(0, 1, 8, dtype=np.float32).reshape(4, 2)


def _numpy_covariance_loss(log_scale, points):
    scaled = points / np.exp(log_scale)
    cov = np.exp(-((scaled[:, None] - scaled[None]) ** 2).sum(-1))
    return (cov ** 2).sum() + cov[0].sum()


@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
def test_grad_of_a_vmap_that_calls_vmap(jit):
    grad = jax.grad(_elbo_like(jax, jnp))
    got = (jax.jit(grad) if jit else grad)(_PARAMS, _SAMPLES)
    want = finite_differences(lambda p: np.mean(np.sum(np.sin(_SAMPLES) * p ** 2, axis=1)),
                         _PARAMS)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-4, atol=1e-5)
    grad = jax.grad(_covariance_loss(jax, jnp), argnums=(0, 1))
    by_scale, by_points = (jax.jit(grad) if jit else grad)(np.float32(0.2), _POINTS)
    np.testing.assert_allclose(
        float(by_scale), float(finite_differences(lambda s: _numpy_covariance_loss(s, _POINTS),
                                             0.2)), rtol=1e-4)
    # the points': cotangents of values the inner closure closes over
    np.testing.assert_allclose(
        np.asarray(by_points),
        finite_differences(lambda p: _numpy_covariance_loss(0.2, p), _POINTS), rtol=1e-3,
        atol=1e-4)


def test_grad_of_a_vmap_that_calls_vmap_against_jax():
    real = pytest.importorskip("jax")
    real_jnp = pytest.importorskip("jax.numpy")
    for make, args in ((_elbo_like, (_PARAMS, _SAMPLES)),
                       (_covariance_loss, (np.float32(0.2), _POINTS))):
        ours = jax.grad(make(jax, jnp), argnums=(0, 1))(*args)
        theirs = real.grad(make(real, real_jnp), argnums=(0, 1))(*args)
        for o, t in zip(ours, theirs):
            np.testing.assert_allclose(np.asarray(o), np.asarray(t), rtol=2e-5, atol=1e-6)
