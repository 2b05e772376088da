"""``jax.checkpoint`` / ``jax.remat``: reverse mode recomputes a checkpointed function
instead of storing its intermediates -- the generated VJP calls the function's own VJP on
its arguments behind ``ad.recompute``, and under ``jit`` the recomputation survives the
compiler (counted in the compiled program) -- with values and derivatives unchanged:
against the plain function, float64 finite differences, a Python loop for ``vmap`` and,
where installed, JAX."""

from __future__ import annotations

import numpy as np
import pytest

import transpiler as jax
import transpiler.numpy as jnp
from transpiler import lax
from transpiler.ad_checkpoint import checkpoint_name
from tests.oracles import finite_differences

_rng = np.random.default_rng(7)
W = [(_rng.standard_normal((4, 4)) * 0.5).astype(np.float32) for _ in range(2)]
X = _rng.standard_normal((3, 4)).astype(np.float32)


def block(x, w):
    return jnp.tanh(x @ w)


def stack(block_fn):
    def loss(ws, x):
        for w in ws:
            x = block_fn(x, w)
        return jnp.sum(x ** 2)
    return loss


plain_loss = stack(block)
checkpointed_loss = stack(jax.checkpoint(block))


def _close(got, want, tol=1e-5):
    got, want = jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=tol, atol=tol)


def _numpy_loss(ws, x):
    for w in ws:
        x = np.tanh(x @ np.asarray(w, np.float64))
    return np.sum(x ** 2)


@pytest.mark.parametrize("jitted", [False, True], ids=["eager", "jit"])
def test_gradients_equal_the_plain_function_andfinite_differences(jitted):
    grad = jax.grad(checkpointed_loss, argnums=(0, 1))
    grad = jax.jit(grad) if jitted else grad
    got = grad(W, X)
    _close(got, jax.grad(plain_loss, argnums=(0, 1))(W, X))
    want_x = finite_differences(lambda x: _numpy_loss(W, x), X)
    want_w0 = finite_differences(lambda w: _numpy_loss([w, W[1]], X), W[0])
    _close(got[1], want_x, tol=2e-4)
    _close(got[0][0], want_w0, tol=2e-4)
    _close(jax.jit(checkpointed_loss)(W, X), plain_loss(W, X))


def test_the_generated_reverse_code_recomputes_the_block():
    source = jax.grad(checkpointed_loss).source
    assert "vjp_block(ad.recompute(x_1), ad.recompute(w), _out_bar=" in source
    assert "ad.recompute" not in jax.grad(plain_loss).source


def _tanh_count(loss):
    lowered = jax.jit(jax.grad(loss)).lower(W, X)
    return lowered.as_text().count("tanh"), lowered.as_text("flow").count(".tanh")


def test_under_jit_the_recomputation_survives_the_compiler():
    # Plain: each block's tanh once, its derivative reads the stored value. Checkpointed:
    # each block's tanh again in the backward pass, also after IREE's optimizations.
    assert _tanh_count(plain_loss) == (2, 2)
    assert _tanh_count(checkpointed_loss) == (4, 4)


@pytest.mark.parametrize("options", [{"prevent_cse": False},
                                     {"policy": jax.checkpoint_policies.everything_saveable}],
                         ids=["no-prevent-cse", "everything-saveable"])
def test_saving_everything_keeps_the_plain_call(options):
    loss = stack(jax.checkpoint(block, **options))
    assert "ad.recompute" not in jax.grad(loss).source
    _close(jax.jit(jax.grad(loss))(W, X), jax.grad(plain_loss)(W, X))


@pytest.mark.parametrize("policy", [
    "nothing_saveable", "dots_saveable", "checkpoint_dots",
    "dots_with_no_batch_dims_saveable", "checkpoint_dots_with_no_batch_dims"])
def test_policies_recompute_and_keep_the_derivatives(policy):
    loss = stack(jax.remat(block, policy=getattr(jax.checkpoint_policies, policy)))
    assert "ad.recompute" in jax.grad(loss).source
    _close(jax.jit(jax.grad(loss))(W, X), jax.grad(plain_loss)(W, X))


def _counts(loss):
    """(matrix products staged, sines and tanhs left after IREE's optimizations) in
    ``jit(grad(loss))``."""
    lowered = jax.jit(jax.grad(loss)).lower(W, X)
    flow = lowered.as_text("flow")
    return lowered.as_text().count("dot_general"), flow.count(".sin"), flow.count(".tanh")


def sine_block(x, w):
    return jnp.tanh(jnp.sin(x @ w))


def named_block(x, w):
    return jnp.tanh(checkpoint_name(jnp.sin(x @ w), "hidden"))


def test_a_policy_saves_what_it_names_and_recomputes_the_rest():
    # Two blocks. Plain: 2 products forward, 4 backward; each sin and tanh once.
    policies = jax.checkpoint_policies
    assert _counts(stack(sine_block)) == (6, 2, 2)
    assert _counts(stack(jax.checkpoint(sine_block))) == (8, 4, 4)  # everything again
    # the products stored, the sines and tanhs after them computed again
    assert _counts(stack(jax.checkpoint(sine_block, policy=policies.dots_saveable))) == \
        (6, 4, 4)
    # the named sine stored: the tanh after it computed again (the product and sine
    # staged before it are dead code the compiler drops)
    assert _counts(stack(jax.checkpoint(
        named_block, policy=policies.save_only_these_names("hidden"))))[1:] == (2, 4)
    assert _counts(stack(jax.checkpoint(
        named_block, policy=policies.save_only_these_names("other")))) == (8, 4, 4)
    # a policy of the user's, JAX's signature: the sines stored
    def sines(prim, *avals, **params):
        return prim.name == "sin" and avals[0].shape == (3, 4)
    assert _counts(stack(jax.checkpoint(sine_block, policy=sines)))[1:] == (2, 4)
    want = jax.grad(stack(sine_block))(W, X)
    for policy in (policies.dots_saveable, sines, policies.save_only_these_names("hidden")):
        loss = stack(jax.checkpoint(named_block, policy=policy))
        _close(jax.jit(jax.grad(loss))(W, X), want)
        _close(jax.grad(loss)(W, X), want)


def test_the_generated_code_names_the_policy():
    loss = stack(jax.checkpoint(block, policy=jax.checkpoint_policies.dots_saveable))
    assert "ad.recompute(x_1, 'dots_saveable')" in jax.grad(loss).source
    named = jax.checkpoint_policies.save_only_these_names("b", "a")
    loss = stack(jax.checkpoint(block, policy=named))
    assert "ad.recompute(w, 'save_only_these_names(a, b)')" in jax.grad(loss).source


def test_named_policies_and_checkpoint_name():
    @jax.checkpoint(policy=jax.checkpoint_policies.save_only_these_names("hidden"))
    def named(x, w):
        return jnp.sin(checkpoint_name(x @ w, "hidden"))

    loss = stack(named)
    want = jax.grad(stack(lambda x, w: jnp.sin(x @ w)))(W, X)
    _close(jax.grad(loss)(W, X), want)
    _close(jax.jit(jax.grad(loss))(W, X), want)
    both = jax.checkpoint_policies.save_from_both_policies(
        jax.checkpoint_policies.dots_saveable,
        jax.checkpoint_policies.save_any_names_but_these("hidden"))
    _close(jax.grad(stack(jax.checkpoint(block, policy=both)))(W, X),
           jax.grad(plain_loss)(W, X))


def test_static_argnums_pass_python_values_to_the_recomputation():
    def repeated(x, w, times):
        for _ in range(times):
            x = jnp.tanh(x @ w)
        return x

    ck = jax.checkpoint(repeated, static_argnums=(2,))

    def loss(w, x):
        return jnp.sum(ck(x, w, 2) ** 2)

    source = jax.grad(loss).source
    assert "ad.recompute(2)" not in source and "ad.recompute(w)" in source
    want = jax.grad(lambda w, x: jnp.sum(repeated(x, w, 2) ** 2))(W[0], X)
    _close(jax.grad(loss)(W[0], X), want)
    _close(jax.jit(jax.grad(loss))(W[0], X), want)


def test_second_order_forward_mode_and_vmap():
    ck = jax.checkpoint(lambda x: jnp.sin(x) * x ** 2)

    def f(x):
        return ck(x) + x

    x = 0.7
    # f'' = -sin x * x^2 + 4x cos x + 2 sin x
    want = -np.sin(x) * x ** 2 + 4 * x * np.cos(x) + 2 * np.sin(x)
    _close(jax.grad(jax.grad(f))(x), want)
    _close(jax.jit(jax.grad(jax.grad(f)))(x), want)
    _close(jax.jvp(f, (x,), (1.0,))[1], np.cos(x) * x ** 2 + 2 * x * np.sin(x) + 1)
    xs = np.linspace(-1, 1, 5).astype(np.float32)
    looped = np.array([float(jax.grad(f)(float(v))) for v in xs])
    _close(jax.vmap(jax.grad(f))(xs), looped)
    _close(jax.jit(jax.vmap(jax.grad(f)))(xs), looped)


def test_pytrees_scalars_and_arrays_users_pass():
    @jax.checkpoint
    def layer(params, x):
        return jnp.tanh(x @ params["w"] + params["b"])

    def loss(params, x):
        return jnp.sum(layer(params, layer(params, x)))

    params = {"w": W[0], "b": np.float32(0.1)}
    want = jax.grad(lambda p, x: jnp.sum(jnp.tanh(jnp.tanh(x @ p["w"] + p["b"]) @ p["w"]
                                                  + p["b"])))(params, X)
    _close(jax.grad(loss)(params, X), want)
    _close(jax.jit(jax.grad(loss))(params, jnp.asarray(X)), want)
    _close(jax.grad(lambda s: jax.checkpoint(lambda v: v * jnp.exp(v))(s))(0.5),
           np.exp(0.5) * 1.5)


def test_inside_scan_and_fori_loop():
    step = jax.checkpoint(lambda h, w: jnp.tanh(h @ w))

    def scanned(w, h):
        h, _ = lax.scan(lambda c, _: (step(c, w), None), h, None, length=3)
        return jnp.sum(h)

    def unrolled(w, h):
        for _ in range(3):
            h = jnp.tanh(h @ w)
        return jnp.sum(h)

    want = jax.grad(unrolled)(W[0], X)
    _close(jax.grad(scanned)(W[0], X), want)
    _close(jax.jit(jax.grad(scanned))(W[0], X), want)
    looped = lambda w, h: jnp.sum(lax.fori_loop(0, 3, lambda i, c: step(c, w), h))  # noqa: E731
    _close(jax.jit(jax.grad(looped))(W[0], X), want)


def test_matches_jax():
    jax_ = pytest.importorskip("jax")
    jjnp = pytest.importorskip("jax.numpy")

    def loss(block_fn, numpy):
        def f(ws, x):
            for w in ws:
                x = block_fn(x, w)
            return numpy.sum(x ** 2)
        return f

    theirs = jax_.grad(loss(jax_.checkpoint(lambda x, w: jjnp.tanh(x @ w)), jjnp))(W, X)
    _close(jax.jit(jax.grad(checkpointed_loss))(W, X), theirs)


def test_bad_input_is_refused_at_the_users_line():
    with pytest.raises(TypeError, match="checkpoint expects a callable"):
        jax.checkpoint(3)
    with pytest.raises(TypeError, match="policy must be callable") as info:
        jax.checkpoint(block, policy="dots")
    assert "test_checkpoint.py" in str(info.value)
    with pytest.raises(TypeError, match="static_argnums must be ints"):
        jax.checkpoint(block, static_argnums=("x",))
    with pytest.raises(TypeError, match="names must be str"):
        jax.checkpoint_policies.save_only_these_names(3)

    calls = []

    def counting(x):
        nonlocal calls
        calls = calls + [x]
        return x * 2

    with pytest.raises(ValueError, match=r"side effect, `nonlocal calls` \(line \d+\).*twice"):
        jax.checkpoint(counting)

    def printing(x):
        jax.debug.print("x={}", x)
        return x

    with pytest.raises(ValueError, match=r"jax.debug.print\(...\)"):
        jax.checkpoint(printing)
