"""JAX 0.10.2's tree_util names (Partial, register_dataclass, register_static,
tree_broadcast, tree_reduce_associative, flatten_one_level..., treedef_tuple,
default_registry, KeyEntry/KeyPath), jax.tree's (broadcast, reduce_associative, static)
and flatten_util.ravel_pytree: against expected values, and against JAX where installed."""

import collections
import dataclasses
import functools
import operator

import numpy as np
import pytest

import transpiler
import transpiler.numpy as jnp
from transpiler import flatten_util
from transpiler import tree
from transpiler import tree_util as tu


@tu.register_dataclass
@dataclasses.dataclass
class Pair:
    x: object
    y: object
    op: str = dataclasses.field(default="add", metadata=dict(static=True))


@functools.partial(tu.register_dataclass, data_fields=["a"], meta_fields=["n"])
@dataclasses.dataclass
class Explicit:
    a: object
    n: int


@tu.register_dataclass
@dataclasses.dataclass
class WithStatic:
    v: object
    tag: str = tree.static(default="t")


@tu.register_static
class StaticStr(str):
    pass


NT = collections.namedtuple("NT", "a b")


# --- register_dataclass / register_static / tree.static ---------------------------------

def test_register_dataclass_flattens_data_fields_with_meta_as_node_data():
    m = Pair(np.ones(3, np.float32), np.arange(3.0, dtype=np.float32))
    leaves, treedef = tu.tree_flatten(m)
    assert len(leaves) == 2 and leaves[0] is m.x and leaves[1] is m.y
    assert repr(treedef) == "PyTreeDef(CustomNode(Pair[('add',)], [*, *]))"
    assert tu.tree_unflatten(treedef, leaves) == m
    paths = [p for p, _ in tu.tree_flatten_with_path(m)[0]]
    assert paths == [(tu.GetAttrKey("x"),), (tu.GetAttrKey("y"),)]
    assert tu.tree_leaves(Explicit(np.float32(1), 3)) == [np.float32(1)]
    assert tu.tree_structure(WithStatic(1.0)).node_data() == (WithStatic, ("t",))


def test_register_dataclass_errors():
    @dataclasses.dataclass
    class D:
        a: int
        b: int

    with pytest.raises(ValueError, match="Missing fields"):
        tu.register_dataclass(D, data_fields=["a"], meta_fields=[])
    with pytest.raises(TypeError, match="both be specified"):
        tu.register_dataclass(D, data_fields=["a", "b"])
    with pytest.raises(TypeError, match="required when nodetype is not a dataclass"):
        tu.register_dataclass(int)
    tu.register_dataclass(D, data_fields=["a"], meta_fields=[], drop_fields=["b"])


def test_dataclass_and_static_under_jit_and_grad():
    m = Pair(jnp.ones(3), jnp.arange(3.0))

    @transpiler.jit
    def f(m):
        return m.x + m.y if m.op == "add" else m.x - m.y

    np.testing.assert_allclose(f(m), [1, 2, 3])
    np.testing.assert_allclose(f(Pair(jnp.ones(3), jnp.arange(3.0), "sub")), [1, 0, -1])
    g = transpiler.grad(lambda m: jnp.sum(m.x * m.y))(m)
    assert isinstance(g, Pair) and g.op == "add"
    np.testing.assert_allclose(g.x, [0, 1, 2])
    assert tu.tree_leaves(StaticStr("add")) == []
    h = transpiler.jit(lambda x, y, s: x + y if s == "add" else x - y)
    assert int(h(1, 2, StaticStr("add"))) == 3 and int(h(1, 2, StaticStr("sub"))) == -1


# --- Partial -------------------------------------------------------------------------------

def test_partial_is_a_pytree_and_a_functools_partial():
    p = tu.Partial(operator.add, 1.0)
    assert isinstance(p, functools.partial) and p(2.0) == 3.0
    leaves, treedef = tu.tree_flatten(p)
    assert leaves == [1.0]
    assert treedef.node_data() == (tu.Partial, operator.add)
    q = tu.tree_map(lambda v: v * 10, p)
    assert isinstance(q, tu.Partial) and q(1.0) == 11.0
    kw = tu.Partial(np.clip, a_min=0.0, a_max=1.0)
    assert tu.tree_leaves(kw) == [1.0, 0.0]  # the keywords in sorted order
    # a partial's own bound arguments stay its function's (node data), as in JAX
    nested = tu.Partial(functools.partial(operator.add, 1.0))
    assert tu.tree_leaves(nested) == [] and nested(2.0) == 3.0


def test_partial_through_jit_and_grad():
    @transpiler.jit
    def call(f, *args):
        return f(*args)

    np.testing.assert_allclose(call(tu.Partial(jnp.add, 1.0), 2.0), 3.0)
    np.testing.assert_allclose(call(tu.Partial(jnp.add), 1.0, 2.0), 3.0)
    g = transpiler.grad(lambda p, x: p(x) ** 2)(tu.Partial(jnp.multiply, 3.0), 2.0)
    assert isinstance(g, tu.Partial)
    np.testing.assert_allclose(g.args[0], 24.0)


# --- tree functions ------------------------------------------------------------------------

def test_broadcast_and_reduce_associative():
    full = {"a": [1, 2], "b": (3, {"c": 4})}
    assert tu.tree_broadcast({"a": 0, "b": (5, 6)}, full) == {"a": [0, 0], "b": (5, {"c": 6})}
    assert tree.broadcast is tu.tree_broadcast
    calls = []

    def op(a, b):
        calls.append((a, b))
        return a + b

    assert tu.tree_reduce_associative(op, [1, 2, 3, 4]) == 10
    assert calls == [(1, 2), (3, 4), (3, 7)]
    assert tree.reduce_associative(operator.add, [], identity=0) == 0
    with pytest.raises(TypeError, match="identity"):
        tu.tree_reduce_associative(operator.add, [])
    with pytest.raises(ValueError):
        tu.tree_broadcast([1, 2], [1, 2, 3])


def test_flatten_one_level_and_is_tree_node():
    assert tu.flatten_one_level({"a": [1, 2], "b": {"c": 3}}) == (([1, 2], {"c": 3}), ("a", "b"))
    assert tu.flatten_one_level(NT(1, 2)) == ([1, 2], NT)
    assert tu.flatten_one_level(None) == ((), None)
    with pytest.raises(ValueError, match="can't tree-flatten"):
        tu.flatten_one_level(3)
    kc, aux = tu.flatten_one_level_with_keys({"b": 1, "a": 2})
    assert list(kc) == [(tu.DictKey("a"), 2), (tu.DictKey("b"), 1)] and aux == ("a", "b")
    kc, _ = tu.flatten_one_level_with_keys(Pair(1.0, 2.0))
    assert list(kc) == [(tu.GetAttrKey("x"), 1.0), (tu.GetAttrKey("y"), 2.0)]
    assert tu.is_tree_node(dict) and tu.is_tree_node(NT) and tu.is_tree_node(type(None))
    assert tu.is_tree_node(Pair) and tu.is_tree_node(tu.Partial)
    assert not tu.is_tree_node(int) and not tu.is_tree_node(np.ndarray)


def test_treedef_tuple_and_default_registry():
    x_tree, y_tree = tu.tree_structure([1, 2, 3]), tu.tree_structure({"a": 4, "b": 5})
    xy = tu.treedef_tuple([x_tree, y_tree])
    assert xy == tu.tree_structure(([1, 2, 3], {"a": 4, "b": 5})) and xy.num_leaves == 5
    reg = tu.default_registry
    leaves, treedef = reg.flatten({"a": 1, "b": [2]})
    assert leaves == [1, 2] and treedef == tu.tree_structure({"a": 1, "b": [2]})
    assert reg.flatten_one_level(3) is None
    assert reg.flatten_one_level([1, 2]) == ([1, 2], None)
    assert reg.is_node(list) and not reg.is_node(float)
    assert tu.KeyPath == tuple[tu.KeyEntry, ...]


# --- against JAX ---------------------------------------------------------------------------

def test_names_match_jax():
    jax_tu = pytest.importorskip("jax.tree_util")
    jax_tree = pytest.importorskip("jax.tree")
    public = [n for n in dir(jax_tu) if not n.startswith("_")]
    assert [n for n in public if not hasattr(tu, n)] == []
    assert [n for n in dir(jax_tree) if not n.startswith("_") and not hasattr(tree, n)] == []


def test_against_jax():
    jax_tu = pytest.importorskip("jax.tree_util")
    full = {"a": [1, 2], "b": (3, {"c": 4})}
    assert tu.tree_broadcast({"a": 0, "b": (5, 6)}, full) == jax_tu.tree_broadcast(
        {"a": 0, "b": (5, 6)}, full)
    for t in ({"a": [1, 2], "b": {"c": 3}}, [1, (2,)], (1, 2), NT(1, 2), None,
              collections.OrderedDict(b=1, a=2)):
        ours, theirs = tu.flatten_one_level(t), jax_tu.flatten_one_level(t)
        assert list(ours[0]) == list(theirs[0]) and ours[1] == theirs[1]
    seq = [1.0, 2.0, 3.0, 4.0, 5.0]
    assert tu.tree_reduce_associative(lambda a, b: (a, b), seq) == \
        jax_tu.tree_reduce_associative(lambda a, b: (a, b), seq)
    assert [tu.is_tree_node(t) for t in (int, dict, NT, type(None))] == \
        [jax_tu.is_tree_node(t) for t in (int, dict, NT, type(None))]
    p = tu.Partial(operator.add, 1.0, 2.0)
    jp = jax_tu.Partial(operator.add, 1.0, 2.0)
    assert [(tu.keystr(k), v) for k, v in tu.tree_flatten_with_path(p)[0]] == \
        [(jax_tu.keystr(k), v) for k, v in jax_tu.tree_flatten_with_path(jp)[0]]


# --- flatten_util.ravel_pytree -------------------------------------------------------------

PARAMS = {"w": np.arange(6, dtype=np.float32).reshape(2, 3), "b": np.float32(7.0),
          "layers": [np.ones(2, np.float32), (np.array([-1.0, -2.0], np.float32),)]}


def test_ravel_pytree_values_and_dtypes():
    flat, unravel = flatten_util.ravel_pytree(PARAMS)
    np.testing.assert_array_equal(flat, [7, 1, 1, -1, -2, 0, 1, 2, 3, 4, 5])
    assert flat.dtype == np.float32
    back = unravel(flat)
    assert tu.tree_structure(back) == tu.tree_structure(PARAMS)
    for a, b in zip(tu.tree_leaves(back), tu.tree_leaves(PARAMS)):
        np.testing.assert_array_equal(a, b)
        assert np.shape(a) == np.shape(b) and np.asarray(a).dtype == b.dtype
    mixed = (np.float16(1.5), np.arange(3, dtype=np.int32), True)
    flat, unravel = flatten_util.ravel_pytree(mixed)
    assert flat.dtype == np.float16  # JAX's lattice: float16 with int32 is float16
    np.testing.assert_array_equal(flat, [1.5, 0, 1, 2, 1])
    assert [np.asarray(v).dtype for v in unravel(flat)] == [np.float16, np.int32, np.bool_]
    with pytest.raises(TypeError, match="expected dtype float16"):
        unravel(jnp.zeros(5, jnp.int32))
    flat, unravel = flatten_util.ravel_pytree({})
    assert flat.shape == (0,) and flat.dtype == np.float32 and unravel(flat) == {}
    # all leaves of one dtype: unravel keeps the vector's dtype, as JAX's does
    flat, unravel = flatten_util.ravel_pytree([np.ones(2, np.float16)])
    assert np.asarray(unravel(jnp.ones(2))[0]).dtype == np.float32


def test_ravel_pytree_under_jit_and_vmap():
    flat, unravel = flatten_util.ravel_pytree(PARAMS)
    np.testing.assert_array_equal(
        transpiler.jit(lambda p: flatten_util.ravel_pytree(p)[0])(PARAMS), flat)
    back = transpiler.jit(lambda f: unravel(f))(flat * 2)
    np.testing.assert_array_equal(back["w"], PARAMS["w"] * 2)
    batched = transpiler.vmap(lambda f: unravel(f))(jnp.stack([flat, flat + 1]))
    np.testing.assert_array_equal(batched["b"], [7, 8])


def test_grad_through_unravel():
    flat, unravel = flatten_util.ravel_pytree(PARAMS)

    def loss(v):
        p = unravel(v)
        return jnp.sum(p["w"] ** 2) + 3 * p["b"] + jnp.sum(p["layers"][1][0])

    want = np.concatenate([[3.0], [0, 0], [1, 1], 2 * np.arange(6)]).astype(np.float32)
    np.testing.assert_allclose(transpiler.grad(loss)(flat), want)
    np.testing.assert_allclose(transpiler.jit(transpiler.grad(loss))(flat), want)


def test_ravel_pytree_against_jax():
    jfu = pytest.importorskip("jax.flatten_util")
    for tree_ in (PARAMS, (np.float16(1.5), np.arange(3, dtype=np.int32), True),
                  {"a": 1.0, "b": [2, 3]}, [np.ones((2, 2), np.float16)]):
        flat, unravel = flatten_util.ravel_pytree(tree_)
        jflat, junravel = jfu.ravel_pytree(tree_)
        np.testing.assert_array_equal(np.asarray(flat), np.asarray(jflat))
        assert np.asarray(flat).dtype == np.asarray(jflat).dtype
        ours, theirs = tu.tree_leaves(unravel(flat)), tu.tree_leaves(junravel(jflat))
        assert [np.asarray(v).dtype for v in ours] == [np.asarray(v).dtype for v in theirs]
