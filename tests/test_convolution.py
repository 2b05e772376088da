"""lax.conv_general_dilated and what builds on it (lax.conv, conv_with_general_padding,
conv_transpose, conv_general_dilated_patches, jnp.convolve/correlate).

Oracles: the convolution's definition evaluated element by element (tests/cases/
convolution.py `loop_conv`), eager against IREE for every option (each group of checks
compiled as one module), JAX for values, dtypes, derivatives and batching, float64 central
finite differences for the VJP and JVP, and a Python loop for vmap."""

from __future__ import annotations

import numpy as np
import pytest

import transpiler as tp
import transpiler.numpy as jnp
from transpiler import lax
from tests.cases.convolution import loop_conv

RNG = np.random.default_rng(0)

# name -> (lhs shape, rhs shape, positional params after (lhs, rhs), keyword params)
CONFIGS = {
    "1d valid": ((2, 3, 7), (4, 3, 3), ((1,), "VALID"), {}),
    "1d strided SAME": ((2, 3, 8), (4, 3, 3), ((3,), "SAME"), {}),
    "1d lhs dilation": ((2, 3, 5), (2, 3, 3), ((1,), [(2, 1)], (3,)), {}),
    "1d negative padding": ((1, 2, 9), (3, 2, 2), ((2,), [(-2, 1)], None, (3,)), {}),
    "2d NHWC/HWIO": ((2, 5, 4, 3), (3, 2, 3, 4), ((2, 1), "SAME", None, (1, 2),
                                                  ("NHWC", "HWIO", "NHWC")), {}),
    "2d mixed layouts": ((3, 4, 2, 5), (2, 3, 4, 2), ((1, 1), [(1, 0), (0, 2)], (1, 2), (2, 1),
                                                      ("HCNW", "OHIW", "WNCH")), {}),
    "2d feature groups": ((2, 6, 5, 4), (4, 3, 3, 2), ((1, 2), "SAME_LOWER", None, (2, 1)),
                          {"feature_group_count": 2}),
    "2d depthwise": ((2, 5, 4, 3), (3, 2, 1, 6), ((1, 1), "SAME", None, None,
                                                  ("NHWC", "HWIO", "NHWC")),
                     {"feature_group_count": 3}),
    "2d batch groups": ((4, 3, 5, 4), (6, 3, 3, 2), ((1, 2), [(0, 1), (1, 0)], (2, 1), (1, 2)),
                        {"batch_group_count": 2}),
    "3d everything": ((2, 4, 4, 3, 4), (2, 3, 2, 2, 4), ((2, 1, 1), [(1, 0), (0, 1), (-1, 1)],
                                                         (1, 2, 1), (1, 1, 2),
                                                         ("NDHWC", "DHWIO", "NCDHW")),
                      {"feature_group_count": 2}),
    # strided convolutions, whose lhs cotangent is a sub-pixel sum of stride-1 convolutions
    "2d strided NHWC": ((2, 9, 8, 3), (3, 3, 3, 4), ((2, 2), "SAME", None, None,
                                                     ("NHWC", "HWIO", "NHWC")), {}),
    "2d 1x1 kernel, stride > kernel": ((2, 3, 7, 6), (5, 3, 1, 1), ((2, 3), "VALID"), {}),
    "2d strided grouped": ((2, 4, 7, 7), (8, 1, 3, 3), ((3, 2), [(1, 2), (0, 1)]),
                           {"feature_group_count": 4}),
    "1d strided batch groups": ((4, 2, 9), (4, 2, 2), ((3,), [(2, 0)]),
                                {"batch_group_count": 2}),
}
NAMES = list(CONFIGS)


def _operands(name: str, dtype=np.float32, seed: int = 0):
    lhs_shape, rhs_shape, _, _ = CONFIGS[name]
    rng = np.random.default_rng(seed + NAMES.index(name))
    return (rng.standard_normal(lhs_shape).astype(dtype),
            rng.standard_normal(rhs_shape).astype(dtype))


def _conv(name: str, lax_module=lax):
    _, _, params, keywords = CONFIGS[name]
    return lambda x, w: lax_module.conv_general_dilated(x, w, *params, **keywords)


# --- values ------------------------------------------------------------------------------------

def test_eager_matches_the_definition():
    for name in NAMES:
        x, w = _operands(name)
        _, _, params, keywords = CONFIGS[name]
        got = _conv(name)(x, w)
        want = loop_conv(x, w, *params, **keywords)
        assert got.dtype == np.float32 and got.shape == want.shape, name
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-5, err_msg=name)


def test_jit_matches_eager_for_every_option():
    """IREE compiles every option to eager's values (one module for all of them)."""
    operands = [_operands(name) for name in NAMES]
    staged = tp.jit(lambda ops: [_conv(n)(x, w) for n, (x, w) in zip(NAMES, ops)])(operands)
    for name, (x, w), got in zip(NAMES, operands, staged):
        want = _conv(name)(x, w)
        assert got.dtype == want.dtype and got.shape == want.shape, name
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5, atol=1e-5,
                                   err_msg=name)


def test_values_match_jax():
    jax = pytest.importorskip("jax")
    for name in NAMES:
        x, w = _operands(name)
        want = np.asarray(_conv(name, jax.lax)(x, w))
        np.testing.assert_allclose(np.asarray(_conv(name)(x, w)), want, rtol=1e-5, atol=1e-5,
                                   err_msg=name)


DTYPE_CASES = [  # (operand dtype, preferred_element_type)
    (np.float16, None), ("bfloat16", None), (np.int8, None), (np.int32, None), (np.uint8, None),
    (np.bool_, None), (np.complex64, None), (np.int8, np.int32), (np.int16, np.float32),
    (np.float16, np.float32), (np.complex64, np.complex64),
]


def _typed(dtype, shape, seed):
    rng = np.random.default_rng(seed)
    dtype = jnp.dtype(jnp.bfloat16) if dtype == "bfloat16" else np.dtype(dtype)
    if dtype == np.bool_:
        return rng.integers(0, 2, shape).astype(bool)
    if dtype.kind in "iu":
        return rng.integers(0 if dtype.kind == "u" else -4, 5, shape).astype(dtype)
    if dtype.kind == "c":
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def test_dtypes_match_jax_eagerly_and_under_jit():
    jax = pytest.importorskip("jax")
    name = "2d feature groups"
    _, _, params, keywords = CONFIGS[name]
    lhs_shape, rhs_shape = CONFIGS[name][:2]
    operands = [(_typed(d, lhs_shape, 1), _typed(d, rhs_shape, 2)) for d, _ in DTYPE_CASES]

    def run(module, x, w, preferred):
        return module.conv_general_dilated(x, w, *params, **keywords,
                                           preferred_element_type=preferred)

    staged = tp.jit(lambda ops: [run(lax, x, w, p) for (x, w), (_, p)
                                 in zip(ops, DTYPE_CASES)])(operands)
    for (x, w), (dtype, preferred), got in zip(operands, DTYPE_CASES, staged):
        label = f"{dtype} -> {preferred}"
        eager = run(lax, x, w, preferred)
        want = np.asarray(run(jax.lax, x, w, preferred))
        assert eager.dtype == want.dtype == got.dtype, label
        exact = want.dtype.kind in "iub"
        tol = 0 if exact else (2e-2 if want.dtype.itemsize <= 2 else 1e-4)
        for value in (eager, got):
            np.testing.assert_allclose(np.asarray(value).astype(np.complex128),
                                       want.astype(np.complex128), rtol=tol, atol=tol,
                                       err_msg=label)


def test_float64_and_complex128_under_jit(monkeypatch):
    """complex128 goes through four real convolutions (IREE cannot compile a complex128
    convolution)."""
    monkeypatch.setattr(tp.config, "enable_x64", True)
    x, w = _operands("2d batch groups", np.float64)
    z = x + 1j * x[::-1]
    v = w - 2j * w[::-1]
    f = _conv("2d batch groups")
    got = tp.jit(lambda a, b, c, d: (f(a, b), f(c, d)))(x, w, z, v)
    _, _, params, keywords = CONFIGS["2d batch groups"]
    for value, (a, b) in zip(got, ((x, w), (z, v))):
        assert value.dtype == a.dtype
        np.testing.assert_allclose(np.asarray(value), loop_conv(a, b, *params, **keywords),
                                   rtol=1e-12, atol=1e-12)


def test_empty_operands():
    jax = pytest.importorskip("jax")
    cases = [((0, 3, 5), (4, 3, 2)), ((2, 3, 1), (4, 3, 3)), ((2, 0, 5), (4, 0, 2))]
    for lhs_shape, rhs_shape in cases:
        x, w = np.ones(lhs_shape, np.float32), np.ones(rhs_shape, np.float32)
        want = np.asarray(jax.lax.conv_general_dilated(x, w, (1,), "VALID"))
        for got in (lax.conv_general_dilated(x, w, (1,), "VALID"),
                    tp.jit(lambda a, b: lax.conv_general_dilated(a, b, (1,), "VALID"))(x, w)):
            assert got.shape == want.shape
            np.testing.assert_array_equal(np.asarray(got), want)


# --- the lowering: channels-last layouts, a single input feature widened -----------------------

# Shapes that take each path of the lowering (primitives/convolution.py,
# `_channels_last_convolution`): operands and result transposed (or, when only unit
# dimensions move, reshaped), a single input feature padded to two, and the cases that
# are left alone (one feature per group, a single output feature).
LAYOUT_CASES = {
    "one channel, NHWC": ((3, 7, 6, 1), (3, 2, 1, 4),
                          ((1, 1), "VALID", None, None, ("NHWC", "HWIO", "NHWC")), {}),
    "one channel, NCHW, strided SAME": ((2, 1, 7, 6), (3, 1, 3, 2), ((2, 1), "SAME"), {}),
    "one channel, 1d, both dilations": ((2, 1, 9), (2, 1, 3), ((1,), [(1, 2)], (2,), (2,)), {}),
    "one channel, 3d": ((2, 1, 4, 3, 5), (2, 1, 2, 2, 3), ((1, 1, 2), "SAME"), {}),
    "one output feature, NCHW": ((2, 3, 6, 5), (1, 3, 2, 2), ((1, 1), "SAME"), {}),
    "every layout transposed": ((5, 6, 2, 3), (4, 2, 3, 2),
                                ((1, 2), [(1, 0), (0, 1)], None, (1, 1),
                                 ("HWCN", "OHWI", "CWHN")), {}),
    "only unit dimensions move": ((1, 1, 6, 5), (2, 1, 3, 1), ((1, 1), "VALID"), {}),
    "one channel per group": ((2, 3, 6, 5), (6, 1, 2, 2), ((1, 1), "VALID"),
                              {"feature_group_count": 3}),
}
LAYOUT_NAMES = list(LAYOUT_CASES)


def _layout_operands(name: str, dtype=np.float32):
    lhs_shape, rhs_shape, _, _ = LAYOUT_CASES[name]
    rng = np.random.default_rng(100 + LAYOUT_NAMES.index(name))
    return (rng.standard_normal(lhs_shape).astype(dtype),
            rng.standard_normal(rhs_shape).astype(dtype))


def _layout_conv(name: str, lax_module=lax):
    _, _, params, keywords = LAYOUT_CASES[name]
    return lambda x, w: lax_module.conv_general_dilated(x, w, *params, **keywords)


def _layout_loss(name: str, module, lax_module):
    conv = _layout_conv(name, lax_module)

    def loss(x, w):
        y = conv(x, w)
        return module.sum(module.sin(y) * y)
    return loss


def test_lowered_layouts_match_the_definition_eagerly_and_under_jit():
    operands = [_layout_operands(name) for name in LAYOUT_NAMES]
    staged = tp.jit(lambda ops: [_layout_conv(n)(x, w)
                                 for n, (x, w) in zip(LAYOUT_NAMES, ops)])(operands)
    for name, (x, w), jitted in zip(LAYOUT_NAMES, operands, staged):
        _, _, params, keywords = LAYOUT_CASES[name]
        want = loop_conv(x, w, *params, **keywords)
        for value in (_layout_conv(name)(x, w), jitted):
            assert value.dtype == np.float32 and value.shape == want.shape, name
            np.testing.assert_allclose(np.asarray(value), want, rtol=1e-5, atol=1e-5,
                                       err_msg=name)


def test_lowered_layouts_gradients_under_jit_match_jax():
    """The cotangent convolutions of those shapes (a single input feature becomes the
    kernel cotangent's batch and the lhs cotangent's single output feature)."""
    jax = pytest.importorskip("jax")
    operands = [_layout_operands(name) for name in LAYOUT_NAMES]

    def grads(ops):
        return [tp.grad(_layout_loss(n, jnp, lax), argnums=(0, 1))(x, w)
                for n, (x, w) in zip(LAYOUT_NAMES, ops)]

    staged = tp.jit(grads)(operands)
    for name, (x, w), got in zip(LAYOUT_NAMES, operands, staged):
        want = jax.grad(_layout_loss(name, jax.numpy, jax.lax), argnums=(0, 1))(x, w)
        for g, v, which in zip(got, want, ("lhs", "rhs")):
            np.testing.assert_allclose(np.asarray(g), np.asarray(v), rtol=1e-4, atol=1e-4,
                                       err_msg=f"{name} {which}")


def test_convolutions_are_lowered_channels_last():
    """Every stablehlo.convolution, the cotangents' too, is in the (N, S..., C) x
    (S..., I, O) layouts that IREE vectorizes, and a single input channel is widened."""
    name = "one channel, NCHW, strided SAME"
    x, w = _layout_operands(name)
    text = tp.jit(tp.grad(_layout_loss(name, jnp, lax), argnums=(0, 1))).lower(x, w).as_text()
    convolutions = [line for line in text.splitlines() if "stablehlo.convolution" in line]
    assert len(convolutions) >= 3  # the forward one and the two cotangents
    for line in convolutions:
        assert "dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]" in line, line
    forward = tp.jit(_layout_conv(name)).lower(x, w).as_text()
    assert "(tensor<2x7x6x2xf32>, tensor<3x2x2x3xf32>) -> tensor<2x4x6x3xf32>" in forward


# --- derivatives -------------------------------------------------------------------------------

def _loss(name, module, lax_module):
    conv = _conv(name, lax_module)

    def loss(x, w):
        y = conv(x, w)
        return module.sum(module.sin(y) * y)
    return loss


def test_gradients_match_jax(monkeypatch):
    jax = pytest.importorskip("jax")
    monkeypatch.setattr(tp.config, "enable_x64", True)
    with jax.enable_x64(True):
        for name in NAMES:
            x, w = _operands(name, np.float64)
            got = tp.grad(_loss(name, jnp, lax), argnums=(0, 1))(x, w)
            want = jax.grad(_loss(name, jax.numpy, jax.lax), argnums=(0, 1))(x, w)
            for g, v, which in zip(got, want, ("lhs", "rhs")):
                np.testing.assert_allclose(np.asarray(g), np.asarray(v), rtol=1e-10,
                                           atol=1e-10, err_msg=f"{name} {which}")


def test_vjp_and_jvp_match_finite_differences(monkeypatch):
    monkeypatch.setattr(tp.config, "enable_x64", True)
    eps = 1e-6
    for name in NAMES:
        x, w = _operands(name, np.float64)
        f = _conv(name)
        rng = np.random.default_rng(NAMES.index(name))
        dx, dw = rng.standard_normal(x.shape), rng.standard_normal(w.shape)
        numeric = (np.asarray(f(x + eps * dx, w + eps * dw))
                   - np.asarray(f(x - eps * dx, w - eps * dw))) / (2 * eps)
        out, tangent = tp.jvp(f, (x, w), (dx, dw))
        np.testing.assert_allclose(np.asarray(tangent), numeric, rtol=1e-6, atol=1e-7,
                                   err_msg=f"{name} jvp")
        u = rng.standard_normal(out.shape)
        _, pullback = tp.vjp(f, x, w)
        x_bar, w_bar = pullback(u)
        assert x_bar.shape == x.shape and w_bar.shape == w.shape, name
        projected = np.sum(np.asarray(x_bar) * dx) + np.sum(np.asarray(w_bar) * dw)
        np.testing.assert_allclose(projected, np.sum(u * numeric), rtol=1e-6, err_msg=name)


def test_jit_of_grad_matches_eager_grad():
    """The cotangent convolutions (strides become lhs dilations, groups move between
    features and batch) compile with IREE: one module for every option."""
    operands = [_operands(name) for name in NAMES]

    def grads(ops):
        return [tp.grad(_loss(n, jnp, lax), argnums=(0, 1))(x, w)
                for n, (x, w) in zip(NAMES, ops)]

    staged = tp.jit(grads)(operands)
    for name, got, want in zip(NAMES, staged, grads(operands)):
        for g, v in zip(got, want):
            np.testing.assert_allclose(np.asarray(g), np.asarray(v), rtol=1e-4, atol=1e-4,
                                       err_msg=name)


def test_second_derivatives_match_jax(monkeypatch):
    jax = pytest.importorskip("jax")
    monkeypatch.setattr(tp.config, "enable_x64", True)
    names = ("1d lhs dilation", "2d batch groups", "2d feature groups")
    with jax.enable_x64(True):
        for name in names:
            x, w = _operands(name, np.float64)
            ours = tp.hessian(_loss(name, jnp, lax), argnums=1)(x, w)
            theirs = jax.hessian(_loss(name, jax.numpy, jax.lax), argnums=1)(x, w)
            np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), rtol=1e-9,
                                       atol=1e-9, err_msg=name)

            def grad_norm(module, lax_module, grad):
                return lambda x: module.sum(
                    grad(_loss(name, module, lax_module), argnums=1)(x, w) ** 2)

            ours = tp.grad(grad_norm(jnp, lax, tp.grad))(x)
            theirs = jax.grad(grad_norm(jax.numpy, jax.lax, jax.grad))(x)
            np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), rtol=1e-9,
                                       atol=1e-9, err_msg=f"{name} grad of grad")


def test_grad_of_grad_under_jit():
    x, w = _operands("2d feature groups")

    def second(x, w):
        inner = tp.grad(_loss("2d feature groups", jnp, lax), argnums=1)
        return tp.grad(lambda x: jnp.sum(inner(x, w) ** 2))(x)

    np.testing.assert_allclose(np.asarray(tp.jit(second)(x, w)), np.asarray(second(x, w)),
                               rtol=1e-4, atol=1e-3)


# --- batching ----------------------------------------------------------------------------------

VMAP_NAMES = ("1d lhs dilation", "2d mixed layouts", "2d feature groups", "2d depthwise",
              "2d batch groups", "3d everything")
AXES = [(0, None), (None, 0), (0, 0), (2, None), (None, 1), (1, 3), (-1, -1)]


def _batched(name, axes, size=3):
    x, w = _operands(name)
    xs = [x + 0.5 * b for b in range(size)]
    ws = [w - 0.25 * b for b in range(size)]
    args = []
    for members, single, axis in ((xs, x, axes[0]), (ws, w, axes[1])):
        args.append(single if axis is None else np.stack(members, axis=axis))
    want = np.stack([np.asarray(_conv(name)(xs[b] if axes[0] is not None else x,
                                            ws[b] if axes[1] is not None else w))
                     for b in range(size)])
    return args, want


def test_vmap_matches_a_loop():
    for name in VMAP_NAMES:
        for axes in AXES:
            args, want = _batched(name, axes)
            got = tp.vmap(_conv(name), in_axes=axes)(*args)
            np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-5,
                                       err_msg=f"{name} in_axes={axes}")


def test_vmap_matches_jax_and_stages_under_jit():
    jax = pytest.importorskip("jax")
    cases = [(name, axes) for name in VMAP_NAMES for axes in AXES[:3]]
    arg_lists = [_batched(name, axes)[0] for name, axes in cases]
    staged = tp.jit(lambda all_args: [tp.vmap(_conv(n), in_axes=a)(*args)
                                      for (n, a), args in zip(cases, all_args)])(arg_lists)
    for (name, axes), args, got in zip(cases, arg_lists, staged):
        want = np.asarray(jax.vmap(_conv(name, jax.lax), in_axes=axes)(*args))
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-5,
                                   err_msg=f"{name} in_axes={axes}")


def test_vmap_of_grad_and_empty_batches():
    name = "2d batch groups"
    args, _ = _batched(name, (0, 0))
    loss = _loss(name, jnp, lax)
    got = tp.vmap(tp.grad(loss, argnums=(0, 1)))(*args)
    for b in range(3):
        want = tp.grad(loss, argnums=(0, 1))(args[0][b], args[1][b])
        for g, v in zip(got, want):
            np.testing.assert_allclose(np.asarray(g)[b], np.asarray(v), rtol=1e-5, atol=1e-5)
    x, w = _operands(name)
    empty = tp.vmap(_conv(name), in_axes=(0, None))(np.zeros((0, *x.shape), np.float32), w)
    assert empty.shape == (0, *_conv(name)(x, w).shape)


# --- the wrappers ------------------------------------------------------------------------------

def test_conv_and_conv_with_general_padding_match_jax():
    jax = pytest.importorskip("jax")
    x, w = _operands("2d feature groups")
    w = RNG.standard_normal((4, 6, 3, 2)).astype(np.float32)
    for padding in ("SAME", "VALID"):
        np.testing.assert_allclose(np.asarray(lax.conv(x, w, (2, 1), padding)),
                                   np.asarray(jax.lax.conv(x, w, (2, 1), padding)),
                                   rtol=1e-5, atol=1e-5)
    for args in (((1, 2), [(1, 0), (2, 1)], (2, 1), (1, 2)), ((1, 1), "SAME", None, (2, 2))):
        np.testing.assert_allclose(np.asarray(lax.conv_with_general_padding(x, w, *args)),
                                   np.asarray(jax.lax.conv_with_general_padding(x, w, *args)),
                                   rtol=1e-5, atol=1e-5)
    assert callable(lax.conv) and lax.conv.__module__ == "transpiler.lax.convolution"


TRANSPOSE_CASES = [  # (lhs shape, rhs shape, strides, padding, keywords)
    ((2, 5, 4, 3), (3, 3, 3, 2), (2, 2), "SAME", {}),
    ((2, 5, 4, 3), (3, 2, 2, 3), (2, 1), "VALID", {"transpose_kernel": True,
                                                   "rhs_dilation": (1, 2)}),
    ((2, 5, 4, 3), (3, 2, 2, 3), (3, 2), "SAME", {"transpose_kernel": True}),
    ((2, 5, 4, 3), (3, 3, 3, 2), (2, 2), [(1, 2), (0, 1)], {}),
    ((2, 5, 4, 3), (3, 3, 3, 2), (2, 2), [(1, 1), (0, 1)], {"use_consistent_padding": True}),
    ((2, 7, 3), (3, 3, 4), (2,), "SAME", {}),
    ((2, 3, 7), (4, 3, 3), (3,), "VALID", {"dimension_numbers": ("NCH", "OIH", "NCH")}),
    ((1, 3, 3, 4, 2), (2, 2, 2, 2, 3), (1, 2, 2), "SAME", {}),
]


def test_conv_transpose_matches_jax_eagerly_and_under_jit():
    jax = pytest.importorskip("jax")
    operands = [(RNG.standard_normal(ls).astype(np.float32),
                 RNG.standard_normal(rs).astype(np.float32)) for ls, rs, *_ in TRANSPOSE_CASES]

    def run(module, ops):
        return [module.conv_transpose(x, w, s, p, **kw)
                for (x, w), (_, _, s, p, kw) in zip(ops, TRANSPOSE_CASES)]

    eager = run(lax, operands)
    staged = tp.jit(lambda ops: run(lax, ops))(operands)
    for case, got, jitted, want in zip(TRANSPOSE_CASES, eager, staged, run(jax.lax, operands)):
        for value in (got, jitted):
            np.testing.assert_allclose(np.asarray(value), np.asarray(want), rtol=1e-5,
                                       atol=1e-5, err_msg=str(case))


def test_conv_transpose_is_the_gradient_of_conv():
    """With transpose_kernel, conv_transpose of a cotangent is the lhs cotangent of the
    strided convolution (the Keras Conv2DTranspose identity)."""
    x = RNG.standard_normal((1, 8, 8, 2)).astype(np.float32)
    w = RNG.standard_normal((3, 3, 2, 4)).astype(np.float32)
    dn = ("NHWC", "HWIO", "NHWC")
    y = lax.conv_general_dilated(x, w, (2, 2), "SAME", dimension_numbers=dn)
    g = RNG.standard_normal(y.shape).astype(np.float32)
    _, pullback = tp.vjp(lambda x: lax.conv_general_dilated(x, w, (2, 2), "SAME",
                                                            dimension_numbers=dn), x)
    want = pullback(g)[0]
    got = lax.conv_transpose(g, w, (2, 2), "SAME", dimension_numbers=dn, transpose_kernel=True)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-4, atol=1e-5)


def test_conv_general_dilated_patches_and_shape_tuples_match_jax():
    jax = pytest.importorskip("jax")
    x = RNG.standard_normal((2, 3, 5, 4)).astype(np.float32)
    cases = [((2, 3), (1, 1), "VALID", {}), ((3, 2), (2, 1), "SAME", {"rhs_dilation": (1, 2)}),
             ((2, 2), (1, 2), [(1, 0), (0, 1)],
              {"dimension_numbers": ("NCHW", "OIHW", "NHWC"), "lhs_dilation": (2, 1)})]
    for filter_shape, strides, padding, kw in cases:
        want = np.asarray(jax.lax.conv_general_dilated_patches(x, filter_shape, strides,
                                                               padding, **kw))
        got = lax.conv_general_dilated_patches(x, filter_shape, strides, padding, **kw)
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6, atol=1e-6,
                                   err_msg=str(filter_shape))
    dn = ("NHWC", "HWIO", "NCHW")
    assert lax.conv_general_permutations(dn) == jax.lax.conv_general_permutations(dn)
    for pads in ("SAME", "VALID", [(1, 2), (0, 1)]):
        assert lax.conv_general_shape_tuple((2, 9, 8, 3), (3, 2, 3, 4), (2, 3), pads, dn) == \
            tuple(jax.lax.conv_general_shape_tuple((2, 9, 8, 3), (3, 2, 3, 4), (2, 3), pads, dn))
        assert lax.conv_shape_tuple((2, 3, 9, 8), (4, 3, 3, 2), (2, 3), pads) == \
            tuple(jax.lax.conv_shape_tuple((2, 3, 9, 8), (4, 3, 3, 2), (2, 3), pads))
    for pads in ("SAME", "VALID"):
        assert lax.conv_transpose_shape_tuple((2, 9, 8, 3), (3, 2, 3, 4), (2, 3), pads, dn) == \
            tuple(jax.lax.conv_transpose_shape_tuple((2, 9, 8, 3), (3, 2, 3, 4), (2, 3), pads,
                                                     dn))


def test_dimension_numbers_forms_agree():
    jax = pytest.importorskip("jax")
    x = RNG.standard_normal((2, 5, 4, 3)).astype(np.float32)
    w = RNG.standard_normal((3, 2, 3, 4)).astype(np.float32)
    strings = ("NHWC", "HWIO", "NCHW")
    numbers = lax.conv_dimension_numbers(x.shape, w.shape, strings)
    assert isinstance(numbers, lax.ConvDimensionNumbers)
    assert tuple(map(tuple, numbers)) == \
        tuple(map(tuple, jax.lax.conv_dimension_numbers(x.shape, w.shape, strings)))
    by_string = lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=strings)
    by_tuple = lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=numbers)
    by_fields = lax.conv_general_dilated(
        x, w, (1, 1), "SAME", dimension_numbers=lax.ConvDimensionNumbers((0, 3, 1, 2),
                                                                         (3, 2, 0, 1),
                                                                         (0, 1, 2, 3)))
    for value in (by_tuple, by_fields):
        np.testing.assert_array_equal(np.asarray(value), np.asarray(by_string))


# --- jnp.convolve and jnp.correlate ------------------------------------------------------------

CONVOLVE_OPERANDS = [
    (RNG.standard_normal(7).astype(np.float32), RNG.standard_normal(3).astype(np.float32)),
    (RNG.standard_normal(2).astype(np.float32), RNG.standard_normal(5).astype(np.float32)),
    (np.arange(6, dtype=np.int32), np.array([1, -2, 3], np.int32)),
    (np.array([True, False, True]), np.array([True, True])),
    (RNG.standard_normal(5) + 1j * RNG.standard_normal(5), RNG.standard_normal(4) - 2j),
    (RNG.standard_normal(4).astype(np.float16), np.array([1.0, 2.0], np.float32)),
]
MODES = ("full", "same", "valid")


def test_convolve_and_correlate_match_jax_and_numpy():
    jax = pytest.importorskip("jax")
    calls = [(op, mode, i) for op in ("convolve", "correlate") for mode in MODES
             for i in range(len(CONVOLVE_OPERANDS))]

    def run(module, operands):
        return [getattr(module, op)(*operands[i], mode) for op, mode, i in calls]

    eager = run(jnp, CONVOLVE_OPERANDS)
    staged = tp.jit(lambda ops: run(jnp, ops))(CONVOLVE_OPERANDS)
    for (op, mode, i), got, jitted, want in zip(calls, eager, staged,
                                                run(jax.numpy, CONVOLVE_OPERANDS)):
        label = f"{op} {mode} operands {i}"
        want = np.asarray(want)
        a, v = CONVOLVE_OPERANDS[i]
        reference = getattr(np, op)(a.astype(want.dtype), v.astype(want.dtype), mode)
        np.testing.assert_allclose(want.astype(np.complex128), reference, rtol=1e-2, atol=1e-2,
                                   err_msg=label)
        for value in (got, jitted):
            assert value.dtype == want.dtype, label
            np.testing.assert_allclose(np.asarray(value), want, rtol=1e-5, atol=1e-5,
                                       err_msg=label)


def test_convolve_preferred_element_type_and_grad():
    jax = pytest.importorskip("jax")
    a, v = np.arange(5, dtype=np.int8), np.array([1, 2, -1], np.int8)
    got = jnp.convolve(a, v, preferred_element_type=np.int32)
    want = jax.numpy.convolve(a, v, preferred_element_type=np.int32)
    assert got.dtype == want.dtype == np.int32
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    x, k = CONVOLVE_OPERANDS[0]
    for op in ("convolve", "correlate"):
        def loss(module, op=op):
            return lambda x, k: module.sum(getattr(module, op)(x, k, "same") ** 2)
        for g, w in zip(tp.grad(loss(jnp), argnums=(0, 1))(x, k),
                        jax.grad(loss(jax.numpy), argnums=(0, 1))(x, k)):
            np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-5, atol=1e-5)


# --- errors ------------------------------------------------------------------------------------

def _raises_here(error, function, *args, match, **kwargs):
    """`function(*args)` raises `error` matching `match`, located in this file (the
    call below is the user's line)."""
    with pytest.raises(error, match=match) as info:
        function(*args, **kwargs)
    assert f"{__file__}:" in str(info.value), str(info.value)


def test_bad_arguments_raise_clear_errors_at_the_users_line():
    x = np.ones((2, 4, 5), np.float32)
    w = np.ones((3, 2, 3), np.float32)
    good = np.ones((3, 4, 3), np.float32)
    conv = lax.conv_general_dilated
    _raises_here(ValueError, conv, x, w, (1,), "VALID",
                 match=r"4 // 1 != 2.*lhs float32\[2,4,5\], rhs float32\[3,2,3\]")
    _raises_here(ValueError, conv, x, np.ones((3, 2, 3), np.float32), (1,), "VALID",
                 feature_group_count=3, match="feature_group_count must divide")
    _raises_here(ValueError, conv, x, np.ones((4, 2, 3), np.float32), (1,), "VALID",
                 feature_group_count=2, batch_group_count=2, match="at most one")
    _raises_here(ValueError, conv, x, np.ones((3, 4, 3), np.float32), (1,), "VALID",
                 batch_group_count=2, match="multiple of batch_group_count")
    _raises_here(TypeError, conv, x, good, (1,), "VALID", dimension_numbers=("NCH", "OIX", "NCH"),
                 match="same set of spatial characters")
    _raises_here(TypeError, conv, x, good, (1,), "VALID", dimension_numbers=("NCHW", "OIH", "NCH"),
                 match=r"dimension_numbers\[0\] must have len equal")
    _raises_here(TypeError, conv, x, good, (1,), "VALID", dimension_numbers=("NNH", "OIH", "NCH"),
                 match="'N' and 'C' exactly once")
    _raises_here(TypeError, conv, x, good, (1,), "VALID", dimension_numbers="NCH",
                 match="tuple/list of three strings")
    _raises_here(ValueError, conv, x, good, (1,), "FULL", match="Unrecognized padding type")
    _raises_here(ValueError, conv, x, good, (1,), [(1, 2, 3)], match="padding argument")
    _raises_here(ValueError, conv, x, good, (1,), [(1, 1), (0, 0)], match="padding argument")
    _raises_here(ValueError, conv, x, good, (1,), [(-9, 0)], match="negative padding")
    _raises_here(ValueError, conv, x, good, (1,), "SAME", lhs_dilation=(2,),
                 match="String padding is not implemented")
    _raises_here(TypeError, conv, x, good, (1, 1), "VALID", match="window_strides must be")
    _raises_here(ValueError, conv, x, good, (0,), "VALID", match="window_strides must be positive")
    _raises_here(TypeError, conv, x, w.astype(np.float16), (1,), "VALID",
                 match="same dtypes, got float32, float16")
    _raises_here(TypeError, conv, x, good, (1,), "VALID", preferred_element_type=np.int32,
                 match="incompatible")
    _raises_here(TypeError, conv, x, np.ones((3, 4), np.float32), (1,), "VALID",
                 match="ndim to be equal")
    _raises_here(ValueError, jnp.convolve, x, w, match="1-dimensional")
    _raises_here(ValueError, jnp.correlate, np.ones(3), np.ones(0), match="cannot be empty")
    _raises_here(ValueError, jnp.convolve, np.ones(3), np.ones(2), "middle", match="mode")


def test_errors_under_jit_name_the_users_line():
    x = np.ones((2, 4, 5), np.float32)
    w = np.ones((3, 2, 3), np.float32)
    with pytest.raises(ValueError, match="rhs input feature") as info:
        tp.jit(lambda a, b: lax.conv_general_dilated(a, b, (1,), "VALID"))(x, w)
    assert f"{__file__}:" in str(info.value)
