import collections
import pickle

import numpy as np
import pytest

from transpiler import tree_util as tu

NT = collections.namedtuple("NT", ["x", "y"])
Other = collections.namedtuple("Other", ["x", "y"])


class Box:
    """A custom node registered with register_pytree_node."""

    def __init__(self, a, b, tag="t"):
        self.a, self.b, self.tag = a, b, tag

    def __eq__(self, other):
        return (type(other) is Box and self.tag == other.tag
                and _eq(self.a, other.a) and _eq(self.b, other.b))


tu.register_pytree_node(
    Box, lambda x: ((x.a, x.b), x.tag), lambda tag, ch: Box(ch[0], ch[1], tag)
)


@tu.register_pytree_node_class
class Pair:
    def __init__(self, left, right):
        self.left, self.right = left, right

    def tree_flatten(self):
        return (self.left, self.right), None

    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(*children)

    def __eq__(self, other):
        return type(other) is Pair and _eq(self.left, other.left) and _eq(self.right, other.right)


@tu.register_pytree_with_keys_class
class Named:
    def __init__(self, w, b):
        self.w, self.b = w, b

    def tree_flatten_with_keys(self):
        return ((tu.GetAttrKey("w"), self.w), (tu.GetAttrKey("b"), self.b)), None

    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(*children)

    def __eq__(self, other):
        return type(other) is Named and _eq(self.w, other.w) and _eq(self.b, other.b)


def _eq(a, b):
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return type(a) is type(b) and np.array_equal(a, b)
    if type(a) is not type(b):
        return False
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_eq(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        if list(a.keys()) != list(b.keys()):
            return False
        if isinstance(a, collections.defaultdict) and a.default_factory is not b.default_factory:
            return False
        return all(_eq(a[k], b[k]) for k in a)
    return a == b


def _dd(factory, items):
    d = collections.defaultdict(factory)
    d.update(items)
    return d


TREES = [
    1,
    None,
    (),
    [],
    {},
    (1,),
    (1, 2.0),
    [1, [2, (3, None)]],
    {"b": (1, 2), "a": 3},
    {"params": {"w": np.ones(3), "b": np.zeros(2)}, "opt": [np.ones(1), (2, None)]},
    NT(1, [2, 3]),
    NT(x={"a": 1}, y=None),
    collections.OrderedDict([("z", 1), ("a", (2, 3))]),
    _dd(list, {"b": 1, "a": [2]}),
    Box(1, (2, 3)),
    Pair([1, 2], {"k": Box(3, 4, "u")}),
    Named(np.arange(3), 5),
    [None, None, ()],
    "a string is a leaf",
    np.float32(1.5),
]


# ---------------------------------------------------------------------------
# flatten / unflatten
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("tree", TREES, ids=range(len(TREES)))
def test_round_trip(tree):
    leaves, treedef = tu.tree_flatten(tree)
    assert treedef.num_leaves == len(leaves)
    out = tu.tree_unflatten(treedef, leaves)
    if isinstance(tree, dict) and type(tree) is dict:
        # JAX rebuilds dicts in sorted-key order.
        assert out == dict(sorted(tree.items())) or _eq(out, {k: tree[k] for k in sorted(tree)})
    else:
        assert _eq(out, tree) or out == tree
    assert tu.tree_structure(out) == treedef
    assert tu.tree_leaves(tree) == leaves or all(_eq(a, b) for a, b in zip(tu.tree_leaves(tree), leaves))


def test_basic_leaves_and_order():
    tree = {"b": (1, 2), "a": 3, "c": [4, None, {"z": 5, "y": 6}]}
    leaves, td = tu.tree_flatten(tree)
    assert leaves == [3, 1, 2, 4, 6, 5]
    assert td.num_leaves == 6
    # nodes: dict, a, tuple, 1, 2, list, 4, None, dict, y, z
    assert td.num_nodes == 11
    assert repr(td) == "PyTreeDef({'a': *, 'b': (*, *), 'c': [*, None, {'y': *, 'z': *}]})"


def test_none_is_node_not_leaf():
    leaves, td = tu.tree_flatten(None)
    assert leaves == []
    assert td.num_leaves == 0 and td.num_nodes == 1
    assert repr(td) == "PyTreeDef(None)"
    assert tu.tree_unflatten(td, []) is None
    assert tu.tree_leaves([1, None, 2]) == [1, 2]


def test_dict_sorted_and_rebuilt_sorted():
    leaves, td = tu.tree_flatten({"b": 1, "a": 2})
    assert leaves == [2, 1]
    out = td.unflatten([10, 20])
    assert list(out.items()) == [("a", 10), ("b", 20)]
    assert td == tu.tree_structure({"a": 0, "b": 0})


def test_unsortable_dict_keys():
    with pytest.raises(ValueError, match="sorting pytree dictionary keys"):
        tu.tree_flatten({1: "a", "b": 2})


def test_dict_keys_equal_but_distinct_types_do_not_alias():
    tu.tree_flatten({1: 0})
    out = tu.tree_map(lambda x: x, {True: 0})
    assert type(next(iter(out))) is bool


def test_namedtuple_keeps_type():
    leaves, td = tu.tree_flatten(NT(1, (2, 3)))
    assert leaves == [1, 2, 3]
    out = td.unflatten([4, 5, 6])
    assert type(out) is NT and out == NT(4, (5, 6))
    assert repr(td) == "PyTreeDef(CustomNode(namedtuple[NT], [*, (*, *)]))"
    assert td != tu.tree_structure(Other(1, (2, 3)))
    assert td != tu.tree_structure((1, (2, 3)))


def test_ordereddict_keeps_insertion_order():
    od = collections.OrderedDict([("z", 1), ("a", 2)])
    leaves, td = tu.tree_flatten(od)
    assert leaves == [1, 2]
    out = td.unflatten([3, 4])
    assert type(out) is collections.OrderedDict
    assert list(out.items()) == [("z", 3), ("a", 4)]
    assert repr(td) == "PyTreeDef(CustomNode(OrderedDict[('z', 'a')], [*, *]))"
    assert td != tu.tree_structure({"z": 1, "a": 2})
    assert td != tu.tree_structure(collections.OrderedDict([("a", 1), ("z", 2)]))


def test_defaultdict_keeps_factory():
    d = _dd(list, {"b": 1, "a": 2})
    leaves, td = tu.tree_flatten(d)
    assert leaves == [2, 1]
    out = td.unflatten([5, 6])
    assert type(out) is collections.defaultdict
    assert out.default_factory is list
    assert dict(out) == {"a": 5, "b": 6}
    assert td != tu.tree_structure(_dd(set, {"b": 1, "a": 2}))
    assert td != tu.tree_structure({"b": 1, "a": 2})


def test_subclasses_are_leaves():
    class MyDict(dict):
        pass

    class MyList(list):
        pass

    for x in (MyDict(a=1), MyList([1, 2])):
        leaves, td = tu.tree_flatten(x)
        assert leaves == [x] and leaves[0] is x
        assert repr(td) == "PyTreeDef(*)"


def test_arrays_and_objects_are_leaves():
    a = np.ones((2, 2))
    obj = object()
    leaves, td = tu.tree_flatten([a, obj, "s", 3, 4.0, b"x"])
    assert leaves[0] is a and leaves[1] is obj
    assert td.num_leaves == 6


def test_unflatten_wrong_leaf_count():
    td = tu.tree_structure((1, {"a": 2}))
    with pytest.raises(ValueError, match="expected 2, got 1"):
        td.unflatten([1])
    with pytest.raises(ValueError, match="expected 2, got 3"):
        tu.tree_unflatten(td, [1, 2, 3])


def test_unflatten_accepts_iterables():
    td = tu.tree_structure([1, (2, 3)])
    assert td.unflatten(iter([4, 5, 6])) == [4, (5, 6)]
    assert td.unflatten((x for x in range(3))) == [0, (1, 2)]


def test_leaf_treedef():
    leaves, td = tu.tree_flatten(np.float64(2.0))
    assert td.num_leaves == 1 and td.num_nodes == 1
    assert repr(td) == "PyTreeDef(*)"
    assert td.children() == []
    assert tu.treedef_is_leaf(td)
    assert td.unflatten([7]) == 7


def test_children():
    td = tu.tree_structure((1, {"a": 2, "b": [3, 4]}, None))
    kids = td.children()
    assert [repr(k) for k in kids] == [
        "PyTreeDef(*)", "PyTreeDef({'a': *, 'b': [*, *]})", "PyTreeDef(None)"]
    assert tu.treedef_children(td) == kids


def test_repr_formats():
    assert repr(tu.tree_structure({"a": 1, "b": (2, 3)})) == "PyTreeDef({'a': *, 'b': (*, *)})"
    assert repr(tu.tree_structure((1,))) == "PyTreeDef((*,))"
    assert repr(tu.tree_structure(())) == "PyTreeDef(())"
    assert repr(tu.tree_structure([])) == "PyTreeDef([])"
    assert repr(tu.tree_structure({})) == "PyTreeDef({})"
    assert repr(tu.tree_structure([Box(1, (2, 3), "aux")])) == \
        "PyTreeDef([CustomNode(Box[aux], [*, (*, *)])])"
    assert repr(tu.tree_structure(_dd(list, {"b": 1, "a": 2}))) == \
        "PyTreeDef(CustomNode(defaultdict[(<class 'list'>, ('a', 'b'))], [*, *]))"


# ---------------------------------------------------------------------------
# treedef equality / hashing
# ---------------------------------------------------------------------------


def test_treedef_eq_hash():
    t1 = tu.tree_structure({"a": (1, 2), "b": [np.ones(2)]})
    t2 = tu.tree_structure({"b": [np.zeros(5)], "a": ("x", "y")})
    assert t1 == t2 and hash(t1) == hash(t2)
    assert len({t1, t2}) == 1
    assert t1 != tu.tree_structure({"a": (1, 2), "b": (np.ones(2),)})
    assert t1 != tu.tree_structure({"a": (1, 2), "c": [1]})
    assert tu.tree_structure((1, 2)) != tu.tree_structure([1, 2])
    assert tu.tree_structure((1, 2)) != tu.tree_structure((1, 2, 3))
    assert tu.tree_structure((1, None)) != tu.tree_structure((1, 2))
    assert tu.tree_structure(Box(1, 2, "p")) != tu.tree_structure(Box(1, 2, "q"))
    assert tu.tree_structure(Box(1, 2, "p")) == tu.tree_structure(Box(3, 4, "p"))
    assert t1 != "not a treedef"
    # usable as a dict key (jit caches)
    cache = {t1: "hit"}
    assert cache[tu.tree_structure({"a": (0, 0), "b": [0]})] == "hit"


def test_treedef_pickle():
    td = tu.tree_structure({"a": (1, None), "b": NT(1, 2)})
    td2 = pickle.loads(pickle.dumps(td))
    assert td2 == td and hash(td2) == hash(td)


# ---------------------------------------------------------------------------
# custom nodes
# ---------------------------------------------------------------------------


def test_custom_node_register():
    leaves, td = tu.tree_flatten([Box(1, (2, 3), "tag")])
    assert leaves == [1, 2, 3]
    out = td.unflatten([4, 5, 6])
    assert out == [Box(4, (5, 6), "tag")]


def test_custom_unflatten_receives_tuple():
    seen = []

    class C:
        def __init__(self, xs):
            self.xs = xs

    tu.register_pytree_node(
        C, lambda c: (c.xs, None), lambda aux, ch: seen.append(type(ch)) or C(list(ch)))
    out = tu.tree_map(lambda x: x + 1, C([1, 2]))
    assert out.xs == [2, 3]
    assert seen == [tuple]


def test_register_pytree_node_class():
    p = Pair(1, [2, 3])
    leaves, td = tu.tree_flatten(p)
    assert leaves == [1, 2, 3]
    assert td.unflatten([7, 8, 9]) == Pair(7, [8, 9])
    assert "CustomNode(Pair[None]" in repr(td)


def test_duplicate_registration():
    with pytest.raises(ValueError, match="Duplicate"):
        tu.register_pytree_node(Box, lambda x: ((), None), lambda a, c: Box(1, 2))
    with pytest.raises(ValueError, match="Duplicate"):
        tu.register_pytree_node(dict, lambda x: ((), None), lambda a, c: {})


def test_registration_after_first_use_as_leaf():
    class Late:
        def __init__(self, v):
            self.v = v

    x = Late(3)
    assert tu.tree_leaves([x]) == [x]
    tu.register_pytree_node(Late, lambda o: ((o.v,), None), lambda a, c: Late(c[0]))
    assert tu.tree_leaves([x]) == [3]


# ---------------------------------------------------------------------------
# is_leaf
# ---------------------------------------------------------------------------


def test_is_leaf():
    tree = {"a": (1, 2), "b": [3, (4, 5)]}
    leaves = tu.tree_leaves(tree, is_leaf=lambda x: isinstance(x, tuple))
    assert leaves == [(1, 2), 3, (4, 5)]
    out = tu.tree_map(lambda x: len(x) if isinstance(x, tuple) else x, tree,
                      is_leaf=lambda x: isinstance(x, tuple))
    assert out == {"a": 2, "b": [3, 2]}
    # is_leaf can make None a leaf, and the root a leaf
    assert tu.tree_leaves([None, 1], is_leaf=lambda x: x is None) == [None, 1]
    leaves, td = tu.tree_flatten(tree, is_leaf=lambda x: isinstance(x, dict))
    assert leaves == [tree] and td.num_leaves == 1
    assert tu.tree_leaves([1, [2, [3]]], is_leaf=lambda x: x == [3]) == [1, 2, [3]]


# ---------------------------------------------------------------------------
# tree_map
# ---------------------------------------------------------------------------


def test_tree_map_single():
    tree = {"b": (1, 2), "a": [3, None], "c": NT(4, 5)}
    out = tu.tree_map(lambda x: x * 10, tree)
    assert out == {"a": [30, None], "b": (10, 20), "c": NT(40, 50)}
    assert type(out["c"]) is NT


def test_tree_map_multiple():
    a = {"x": (1, 2), "y": [3]}
    b = {"y": [30], "x": (10, 20)}
    c = {"x": (100, 200), "y": [300]}
    assert tu.tree_map(lambda p, q, r: p + q + r, a, b, c) == {"x": (111, 222), "y": [333]}


def test_tree_map_rest_may_be_deeper():
    out = tu.tree_map(lambda a, b: (a, b), (1, 2), ([3], {"x": 4}))
    assert out == ((1, [3]), (2, {"x": 4}))
    # leaf of the first tree may face None in the other tree
    assert tu.tree_map(lambda a, b: b, [1, 2], [None, 3]) == [None, 3]


def test_tree_map_none_must_match_none():
    assert tu.tree_map(lambda x, y: x + y, [1, None], [2, None]) == [3, None]
    with pytest.raises(ValueError, match="tree_map: tree 1"):
        tu.tree_map(lambda x, y: x, [1, None], [2, 3])


def test_tree_map_mismatch_messages():
    with pytest.raises(ValueError) as ei:
        tu.tree_map(lambda a, b: a, {"a": 1}, {"b": 1})
    msg = str(ei.value)
    assert "tree_map: tree 1 has structure PyTreeDef({'b': *}) but tree 0 has PyTreeDef({'a': *})" in msg
    assert "key" in msg

    with pytest.raises(ValueError) as ei:
        tu.tree_map(lambda a, b: a, (1, 2), [1, 2])
    msg = str(ei.value)
    assert "PyTreeDef([*, *])" in msg and "PyTreeDef((*, *))" in msg
    assert "tuple" in msg and "list" in msg

    with pytest.raises(ValueError) as ei:
        tu.tree_map(lambda a, b, c: a, {"a": (1, 2)}, {"a": (1, 2)}, {"a": (1,)})
    msg = str(ei.value)
    assert msg.startswith("tree_map: tree 2 has structure PyTreeDef({'a': (*,)})")
    assert "['a']" in msg and "expected length 2, got 1" in msg

    with pytest.raises(ValueError, match="namedtuple|NT|Other"):
        tu.tree_map(lambda a, b: a, NT(1, 2), Other(1, 2))
    with pytest.raises(ValueError, match="node data mismatch"):
        tu.tree_map(lambda a, b: a, Box(1, 2, "p"), Box(1, 2, "q"))


def test_tree_map_with_path():
    tree = {"a": [1, NT(2, 3)], "b": Box(4, 5)}
    out = tu.tree_map_with_path(lambda p, x: tu.keystr(p), tree)
    assert out["a"] == ["['a'][0]", NT("['a'][1].x", "['a'][1].y")]
    assert out["b"] == Box("['b'][<flat index 0>]", "['b'][<flat index 1>]")
    out2 = tu.tree_map_with_path(lambda p, x, y: (len(p), x + y), [1, (2,)], [10, (20,)])
    assert out2 == [(1, 11), ((2, 22),)]


# ---------------------------------------------------------------------------
# key paths
# ---------------------------------------------------------------------------


def test_flatten_with_path():
    tree = {"a": [1, NT(2, 3)], "b": collections.OrderedDict([("z", 4)]), "c": None}
    path_leaves, td = tu.tree_flatten_with_path(tree)
    assert td == tu.tree_structure(tree)
    paths = [p for p, _ in path_leaves]
    assert [x for _, x in path_leaves] == [1, 2, 3, 4]
    assert paths == [
        (tu.DictKey("a"), tu.SequenceKey(0)),
        (tu.DictKey("a"), tu.SequenceKey(1), tu.GetAttrKey("x")),
        (tu.DictKey("a"), tu.SequenceKey(1), tu.GetAttrKey("y")),
        (tu.DictKey("b"), tu.DictKey("z")),
    ]
    assert [tu.keystr(p) for p in paths] == ["['a'][0]", "['a'][1].x", "['a'][1].y", "['b']['z']"]
    assert tu.tree_leaves_with_path(tree) == path_leaves


def test_key_repr_and_keystr():
    assert repr(tu.DictKey("a")) == "DictKey(key='a')"
    assert repr(tu.SequenceKey(0)) == "SequenceKey(idx=0)"
    assert repr(tu.GetAttrKey("x")) == "GetAttrKey(name='x')"
    keys = (tu.DictKey("a"), tu.SequenceKey(0), tu.GetAttrKey("x"), tu.FlattenedIndexKey(3))
    assert tu.keystr(keys) == "['a'][0].x[<flat index 3>]"
    assert tu.keystr(keys[:3], simple=True, separator="/") == "a/0/x"
    assert tu.DictKey("a") == tu.DictKey("a") and hash(tu.SequenceKey(1)) == hash(tu.SequenceKey(1))


def test_custom_keys():
    path_leaves, _ = tu.tree_flatten_with_path([Named(1, 2), Box(3, 4)])
    assert [tu.keystr(p) for p, _ in path_leaves] == [
        "[0].w", "[0].b", "[1][<flat index 0>]", "[1][<flat index 1>]"]
    path_leaves, _ = tu.tree_flatten_with_path({"k": (1, 2)}, is_leaf=lambda x: isinstance(x, tuple))
    assert path_leaves == [((tu.DictKey("k"),), (1, 2))]


# ---------------------------------------------------------------------------
# flatten_up_to
# ---------------------------------------------------------------------------


def test_flatten_up_to():
    td = tu.tree_structure({"a": 1, "b": (2, 3)})
    assert tu.flatten_up_to(td, {"a": [1, 2], "b": (3, {"q": 4})}) == [[1, 2], 3, {"q": 4}]
    assert td.flatten_up_to({"b": (None, 5), "a": 0}) == [0, None, 5]
    assert tu.flatten_up_to(tu.tree_structure(0), {"x": 1}) == [{"x": 1}]
    assert tu.flatten_up_to(tu.tree_structure((0, 0)), (1, [2])) == [1, [2]]
    # in_axes-style prefix
    assert tu.flatten_up_to(tu.tree_structure((0, None)), ((1, 2), None)) == [(1, 2)]


def test_flatten_up_to_errors():
    td = tu.tree_structure({"a": 1, "b": (2, 3)})
    with pytest.raises(ValueError, match=r"key path \['b'\].*expected length 2, got 1"):
        tu.flatten_up_to(td, {"a": 1, "b": (3,)})
    with pytest.raises(ValueError, match="at the root: expected dict node but got list"):
        tu.flatten_up_to(td, [1])
    with pytest.raises(ValueError, match="expected keys \\['a', 'b'\\]"):
        tu.flatten_up_to(td, {"a": 1, "c": 2})
    with pytest.raises(ValueError, match="expected NoneType node but got int"):
        tu.flatten_up_to(tu.tree_structure([None]), [1])
    with pytest.raises(ValueError, match="default_factory"):
        tu.flatten_up_to(tu.tree_structure(_dd(list, {"a": 1})), _dd(set, {"a": 1}))
    with pytest.raises(ValueError, match="expected tuple node but got list"):
        tu.flatten_up_to(tu.tree_structure((1, 2)), [1, 2])


# ---------------------------------------------------------------------------
# reductions / transpose
# ---------------------------------------------------------------------------


def test_tree_reduce_and_all():
    assert tu.tree_reduce(lambda a, b: a + b, {"a": 1, "b": [2, 3]}) == 6
    assert tu.tree_reduce(lambda a, b: a + b, [], 0) == 0
    assert tu.tree_reduce(lambda a, b: a + b, [1, 2], 10) == 13
    with pytest.raises(TypeError):
        tu.tree_reduce(lambda a, b: a + b, [])
    assert tu.tree_all([True, (1, {"a": True})])
    assert not tu.tree_all([True, (1, 0)])
    assert tu.tree_all([])
    assert tu.tree_all([None])


def test_tree_transpose():
    outer = tu.tree_structure([0, 0])
    inner = tu.tree_structure((0, 0, 0))
    assert tu.tree_transpose(outer, inner, [(1, 2, 3), (4, 5, 6)]) == ([1, 4], [2, 5], [3, 6])
    assert tu.tree_transpose(outer, None, [(1, 2, 3), (4, 5, 6)]) == ([1, 4], [2, 5], [3, 6])
    with pytest.raises(TypeError):
        tu.tree_transpose(outer, inner, [(1, 2, 3), (4, 5)])


def test_all_leaves():
    assert tu.all_leaves([1, np.ones(2), "x"])
    assert not tu.all_leaves([1, (2,)])
    assert tu.all_leaves([1, (2,)], is_leaf=lambda x: isinstance(x, tuple))


# ---------------------------------------------------------------------------
# fast paths must agree with the general path
# ---------------------------------------------------------------------------


def test_fast_paths_agree_with_general_path():
    a, b = np.ones(2), np.zeros(3)
    never = lambda x: False  # noqa: E731  (forces the general path)
    for tree in [(a, b), [a, b], {"w": a, "b": b}, (a, (b,)), {"w": a, "n": None}, {1: a, 2: b}]:
        l1, t1 = tu.tree_flatten(tree)
        l2, t2 = tu.tree_flatten(tree, is_leaf=never)
        assert t1 == t2 and hash(t1) == hash(t2) and repr(t1) == repr(t2)
        assert all(x is y for x, y in zip(l1, l2))
        assert t1.num_leaves == t2.num_leaves == len(l1)


# ---------------------------------------------------------------------------
# optional cross-check against jax.tree_util
# ---------------------------------------------------------------------------


def test_cross_check_with_jax():
    jax_tu = pytest.importorskip("jax.tree_util")
    trees = [t for t in TREES if not isinstance(t, (Box, Pair, Named))]
    trees += [
        {"b": {"d": [1, 2], "c": None}, "a": (3, NT(4, 5))},
        [collections.OrderedDict([("z", 1), ("a", 2)]), _dd(list, {"y": 1, "x": 2})],
        ((), [None, ()], {}),
    ]
    for tree in trees:
        ours_leaves, ours_td = tu.tree_flatten(tree)
        jax_leaves, jax_td = jax_tu.tree_flatten(tree)
        assert len(ours_leaves) == len(jax_leaves)
        assert all(x is y for x, y in zip(ours_leaves, jax_leaves))
        assert ours_td.num_leaves == jax_td.num_leaves
        assert ours_td.num_nodes == jax_td.num_nodes
        assert repr(ours_td) == repr(jax_td)
        ours_paths = [tu.keystr(p) for p, _ in tu.tree_flatten_with_path(tree)[0]]
        jax_paths = [jax_tu.keystr(p) for p, _ in jax_tu.tree_flatten_with_path(tree)[0]]
        assert ours_paths == jax_paths


def test_jit_of_a_pytree_with_dict_aux_data():
    """JAX's "201/jit" cell: aux data is a dict (unhashable); a changed static field
    retraces, the same one reuses the trace."""
    import transpiler as tp
    import transpiler.numpy as jnp

    class Scaled:
        def __init__(self, x, mul):
            self.x, self.mul = x, mul

        @tp.jit
        def calc(self, y):
            if self.mul:
                return self.x * y
            return y

    tu.register_pytree_node(Scaled, lambda s: ((s.x,), {"mul": s.mul}),
                            lambda aux, children: Scaled(*children, **aux))
    c = Scaled(jnp.array(2.0), True)
    assert float(c.calc(3.0)) == 6.0
    c.mul = False
    assert float(c.calc(3.0)) == 3.0


def test_jax_tree_short_names():
    import transpiler as tp
    params = {"w": np.ones((2, 3), np.float32), "b": [np.zeros(3, np.float32), 2.0]}
    doubled = tp.tree.map(lambda v: v * 2, params)
    assert [np.asarray(v).tolist() for v in tp.tree.leaves(doubled)] == \
        [[0.0] * 3, 4.0, [[2.0] * 3] * 2]
    leaves, treedef = tp.tree.flatten(params)
    assert tp.tree.structure(params) == treedef
    assert tp.tree.unflatten(treedef, leaves)["b"][1] == 2.0
    assert tp.tree.reduce(lambda a, b: a + np.sum(b), params, 0.0) == 8.0
    assert tp.tree.all(tp.tree.map(lambda v: np.all(np.asarray(v) >= 0), params))
