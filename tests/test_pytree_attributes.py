"""Attributes and methods of pytree parameters (issue 17): NamedTuples, dataclasses and
registered classes are differentiated and batched through their leaves, `p.w` and
`model.energy(x)` included, with the input's structure in the gradient."""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import numpy as np
import pytest

import transpiler as tp
import transpiler.numpy as jnp
from transpiler import tree_util

F32 = np.float32


class Params(NamedTuple):
    w: object
    b: object


@tree_util.register_pytree_node_class
@dataclasses.dataclass
class Layer:
    w: object
    b: object

    def tree_flatten(self):
        return (self.w, self.b), None

    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(*children)

    def energy(self, x):
        return jnp.sum(self.w * x + self.b)


W, B, X = np.array([1.0, 2.0], F32), np.array([3.0, -1.0], F32), np.array([0.5, 2.0], F32)


def attribute_loss(p):
    return jnp.sum(p.w ** 2 * p.b)


def method_loss(layer, x):
    return layer.energy(x) ** 2


@pytest.mark.parametrize("make", [Params, Layer], ids=["NamedTuple", "registered dataclass"])
def test_gradient_through_attributes_has_the_input_structure(make):
    p = make(W, B)
    for g in (tp.grad(attribute_loss)(p), tp.jit(tp.grad(attribute_loss))(p)):
        assert type(g) is make
        np.testing.assert_allclose(g.w, 2 * W * B, rtol=1e-6)
        np.testing.assert_allclose(g.b, W ** 2, rtol=1e-6)
    tangent = make(np.ones(2, F32), np.zeros(2, F32))
    np.testing.assert_allclose(tp.jvp(attribute_loss, (p,), (tangent,))[1], np.sum(2 * W * B),
                               rtol=1e-6)


def test_hessian_and_per_example_gradients_of_a_namedtuple():
    p = Params(W, B)
    h = tp.hessian(lambda q: jnp.sum(q.w ** 3))(p)
    np.testing.assert_allclose(h.w.w, np.diag(6 * W), rtol=1e-6)
    batch = Params(np.stack([W, 2 * W]), np.stack([B, B]))
    g = tp.vmap(tp.grad(attribute_loss))(batch)
    np.testing.assert_allclose(g.w, 2 * batch.w * batch.b, rtol=1e-6)


def test_method_of_a_differentiated_pytree():
    layer = Layer(W, B)
    energy = float(np.sum(W * X + B))
    for g in (tp.grad(method_loss)(layer, X), tp.jit(tp.grad(method_loss))(layer, X)):
        assert type(g) is Layer
        np.testing.assert_allclose(g.w, 2 * energy * X, rtol=1e-6)
        np.testing.assert_allclose(g.b, 2 * energy * np.ones(2), rtol=1e-6)
    np.testing.assert_allclose(tp.grad(method_loss, 1)(layer, X), 2 * energy * W, rtol=1e-6)


def test_vmap_over_a_registered_pytree():
    layers = Layer(np.stack([W, 2 * W, 3 * W]), np.stack([B, B, B]))
    want = [float(Layer(layers.w[i], layers.b[i]).energy(X)) for i in range(3)]
    np.testing.assert_allclose(tp.vmap(lambda l: l.energy(X))(layers), want, rtol=1e-6)
    np.testing.assert_allclose(tp.vmap(attribute_loss)(layers),
                               [float(attribute_loss(Layer(layers.w[i], layers.b[i])))
                                for i in range(3)], rtol=1e-6)


def test_an_attribute_that_is_not_a_pytree_child_is_an_error_not_a_zero():
    @tree_util.register_pytree_node_class
    class Hidden:
        def __init__(self, w):
            self.w, self.scale = w, w * 2  # `scale` is derived, not a child

        def tree_flatten(self):
            return (self.w,), None

        @classmethod
        def tree_unflatten(cls, aux, children):
            return cls(*children)

    from transpiler.errors import TranspileError
    with pytest.raises(TranspileError, match="not one of its pytree children"):
        tp.grad(lambda h: jnp.sum(h.scale))(Hidden(W))
