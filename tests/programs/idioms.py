"""The idioms corpus: ordinary Python a JAX user writes around the math, one small program
per construct (tests/test_idioms_corpus.py crosses them with the transforms and with each
kind of input).

Every program takes float arguments, among them a 0-d one (a scale, a bias, a temperature)
so that NumPy scalars and Python floats reach it too. `fn` returns a scalar (grad,
hessian); `vec`, where there is one, returns an array (jacrev, jvp). `example(leaf)` builds
the arguments, `leaf` turning each base value into one kind of input.

The file is read twice: as itself, and by the tests with its two `transpiler` imports
swapped for `jax` (the JAX oracle). So it uses only what both libraries spell alike, and a
program JAX refuses (`y[0] = v`, `np.sin` of a tracer, Python's `max` under vmap) names a
`twin`: the same function written as JAX accepts it, which the JAX oracle runs instead (and
the float64 oracle too, where the program itself runs only under a transform).
"""

from __future__ import annotations

import dataclasses
import functools
import logging
from typing import Any, Callable, NamedTuple

import numpy as np

import transpiler as tp
import transpiler.numpy as jnp

log = logging.getLogger(__name__)

F32 = np.float32
WEIGHTS = np.array([1.0, 0.5, -2.0], F32)
X_DATA = np.array([0.5, -1.0, 2.0], F32)
TARGET = np.array([0.25, -0.5, 0.75], F32)


def normal(seed: int, *shape: int) -> np.ndarray:
    """Moderate values (|v| < ~2), the same in both readings of this file."""
    return np.round(np.random.default_rng(seed).standard_normal(shape) * 0.6, 3)


@dataclasses.dataclass
class Idiom:
    name: str
    fn: Callable[..., Any]                  # scalar output
    example: Callable[[Callable], tuple]    # example(leaf) -> the arguments
    vec: Callable[..., Any] | None = None   # array output, for jacrev and jvp
    twin: Callable[..., Any] | None = None  # fn as JAX accepts it (the JAX oracle runs it)
    vec_twin: Callable[..., Any] | None = None
    eager: bool = True   # fn runs untransformed; if not, the float64 oracle runs the twin
    jit_error: str = ""  # what jit says when it refuses fn as JAX's jit does


IDIOMS: list[Idiom] = []


def add(name, fn, example, vec=None, twin=None, vec_twin=None, eager=True, jit_error=""):
    IDIOMS.append(Idiom(name, fn, example, vec, twin, vec_twin, eager, jit_error))


def vector_and_scale(leaf):
    return (leaf(normal(1, 3)), leaf(1.25))


# --- functools.partial: transformed, inside, and a partial of a partial ------------------

def weighted_loss(x, s, *, weights, power):
    return s * jnp.sum(weights * jnp.tanh(x) ** power)


partial_loss = functools.partial(weighted_loss, weights=WEIGHTS, power=2)
partial_of_partial = functools.partial(functools.partial(weighted_loss, weights=WEIGHTS),
                                       power=3)


def _affine(w, x, bias):
    return w * x + bias


def _scaled_tanh(x, scale):
    return jnp.tanh(x) * scale


def partial_inside_vec(x, s):
    act = functools.partial(_scaled_tanh, scale=s)      # binds a traced scalar
    layer = functools.partial(functools.partial(_affine, WEIGHTS), bias=0.5)
    return act(layer(x))


def partial_inside(x, s):
    return jnp.sum(partial_inside_vec(x, s) ** 2)


add("partial-transformed", partial_loss, vector_and_scale)
add("partial-of-partial", partial_of_partial, vector_and_scale)
add("partial-inside", partial_inside, vector_and_scale, vec=partial_inside_vec)


# --- bound methods, methods called inside, an object with __call__ ----------------------

class Model:
    def __init__(self, temperature, weights):
        self.temperature = temperature
        self.weights = weights

    def predict(self, x):
        return jnp.tanh(x * self.weights) / self.temperature

    def loss(self, x, s):
        return s * jnp.sum(self.predict(x) ** 2)


MODEL = Model(2.0, WEIGHTS)


class Regularized:
    def __init__(self, l2):
        self.l2 = l2

    def __call__(self, x, s):
        return jnp.sum(jnp.sin(x * s)) + self.l2 * jnp.sum(x ** 2)


regularized = Regularized(0.1)


def methods_inside_vec(x, s):
    return MODEL.predict(x * s) + regularized(x, s)


def methods_inside(x, s):
    return MODEL.loss(x, s) + jnp.sum(methods_inside_vec(x, s))


add("bound-method", MODEL.loss, vector_and_scale)
add("callable-object", regularized, vector_and_scale)
add("methods-inside", methods_inside, vector_and_scale, vec=methods_inside_vec)


# --- attributes of NamedTuple, dataclass and registered-pytree parameters --------------

class Params(NamedTuple):
    w: Any
    b: Any


def namedtuple_vec(p, s):
    return s * (jnp.tanh(p.w * X_DATA + p.b) - TARGET)


def namedtuple_loss(p, s):
    return jnp.sum(namedtuple_vec(p, s) ** 2)


add("namedtuple-attributes", namedtuple_loss,
    lambda leaf: (Params(leaf(normal(2, 3)), leaf(0.3)), leaf(1.5)), vec=namedtuple_vec)


@tp.tree_util.register_pytree_node_class
@dataclasses.dataclass
class Linear:
    w: Any
    b: Any

    def tree_flatten(self):
        return (self.w, self.b), None

    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(*children)

    def apply(self, x):
        return jnp.dot(x, self.w) + self.b


def dataclass_vec(layer, s):
    return jnp.sin(layer.apply(X_DATA) * s)


def dataclass_loss(layer, s):
    return jnp.sum(dataclass_vec(layer, s) ** 2) + jnp.sum(layer.b)


add("dataclass-attributes", dataclass_loss,
    lambda leaf: (Linear(leaf(normal(3, 3, 2)), leaf(normal(4, 2))), leaf(0.75)),
    vec=dataclass_vec)


class Affine:
    """A plain class registered with register_pytree_node (flatten and unflatten functions)."""

    def __init__(self, log_scale, shift):
        self.log_scale = log_scale
        self.shift = shift


tp.tree_util.register_pytree_node(Affine, lambda a: ((a.log_scale, a.shift), None),
                                  lambda aux, children: Affine(*children))


def registered_vec(t, x):
    return jnp.exp(t.log_scale) * x + t.shift


def registered_loss(t, x):
    return jnp.sum(registered_vec(t, x) ** 2)


add("registered-attributes", registered_loss,
    lambda leaf: (Affine(leaf(-0.4), leaf(normal(5, 3))), leaf(normal(6, 3))),
    vec=registered_vec)


# --- comprehensions and generator expressions --------------------------------------------

def generator_expression(xs, s):
    return s * sum(jnp.sum(v ** 2) for v in xs) + sum(jnp.sum(jnp.sin(v)) for v in xs)


add("generator-expression", generator_expression,
    lambda leaf: ([leaf(normal(7, 3)), leaf(normal(8, 2))], leaf(0.8)))


def list_comprehension_vec(xs, s):
    return jnp.stack([jnp.tanh(v * s) for v in xs])


def list_comprehension(xs, s):
    return jnp.sum(list_comprehension_vec(xs, s) ** 2)


add("list-comprehension", list_comprehension,
    lambda leaf: ([leaf(normal(9, 3)), leaf(normal(10, 3))], leaf(1.1)),
    vec=list_comprehension_vec)


def dict_comprehension_vec(d, s):
    scaled = {k: v * s for k, v in d.items()}
    return scaled["a"] * jnp.cos(scaled["b"])


def dict_comprehension(d, s):
    return jnp.sum(dict_comprehension_vec(d, s))


add("dict-comprehension", dict_comprehension,
    lambda leaf: ({"a": leaf(normal(11, 3)), "b": leaf(normal(12, 3))}, leaf(0.9)),
    vec=dict_comprehension_vec)


def set_comprehension_sorted(d, s):
    weight_names = {k for k in d if k.startswith("w")}       # a set of static keys
    sizes = {d[k].shape for k in weight_names}
    assert len(sizes) == 1, "weights must share a shape"
    total = sum(jnp.sum(d[k] ** 2) * i for i, k in enumerate(sorted(weight_names), 1))
    return s * total + d["bias"] ** 2


add("set-comprehension-sorted", set_comprehension_sorted,
    lambda leaf: ({"w1": leaf(normal(13, 3)), "w2": leaf(normal(14, 3)), "bias": leaf(0.6)},
                  leaf(0.7)))


# --- builtins -----------------------------------------------------------------------------

def builtins_sum_len_zip_enumerate(xs, s):
    pairs = zip(xs, xs[1:])
    total = sum(i * jnp.sum(a * b) for i, (a, b) in enumerate(pairs, start=1))
    return s * total / len(xs)


add("builtins-sum-len-zip-enumerate", builtins_sum_len_zip_enumerate,
    lambda leaf: ((leaf(normal(15, 2)), leaf(normal(16, 2)), leaf(normal(17, 2))),
                  leaf(1.3)))


def builtins_max_min_abs(x, s):
    # the inputs keep every comparison far from a tie: the picked operand gets the gradient
    big = max(jnp.sum(x ** 2), jnp.sum(x) + 10.0)
    small = min(jnp.max(x), s)
    return big * abs(s - 3.0) + small * abs(jnp.min(x))


def builtins_max_min_abs_twin(x, s):
    # JAX's vmap refuses Python's max of batched values (a traced bool)
    big = jnp.maximum(jnp.sum(x ** 2), jnp.sum(x) + 10.0)
    small = jnp.minimum(jnp.max(x), s)
    return big * jnp.abs(s - 3.0) + small * jnp.abs(jnp.min(x))


add("builtins-max-min-abs", builtins_max_min_abs,
    lambda leaf: (leaf(np.array([0.6, -1.2, 0.9])), leaf(1.7)), twin=builtins_max_min_abs_twin,
    jit_error="Python `if`/`while`/`and`/`or`")   # jax.jit: TracerBoolConversionError


def builtins_map_vec(xs, s):
    acts = list(map(lambda v: jnp.tanh(v * s), xs))
    return jnp.concatenate(list(map(jnp.ravel, acts)))


def builtins_map(xs, s):
    return sum(map(jnp.sum, map(jnp.square, xs))) * s + jnp.sum(builtins_map_vec(xs, s))


add("builtins-map", builtins_map,
    lambda leaf: ([leaf(normal(18, 2)), leaf(normal(19, 3))], leaf(0.6)),
    vec=builtins_map_vec)


def builtins_sorted_static(d, s):
    # sorted on static values: the names, and each array's size
    names = sorted(d, key=lambda k: (d[k].size, k))
    return s * sum(jnp.sum(jnp.sin(d[k])) * (i + 1) for i, k in enumerate(names))


add("builtins-sorted-static", builtins_sorted_static,
    lambda leaf: ({"z": leaf(normal(20, 2)), "a": leaf(normal(21, 3))}, leaf(1.4)))


# --- NumPy functions on arrays inside the function --------------------------------------

def numpy_functions_vec(x, s):
    return np.sin(x) * s + np.exp(x) / np.sum(np.square(x))


def numpy_functions(x, s):
    return np.sum(np.sin(x) * s) + np.mean(x ** 2) + np.dot(x, WEIGHTS)


def numpy_functions_vec_twin(x, s):
    return jnp.sin(x) * s + jnp.exp(x) / jnp.sum(jnp.square(x))


def numpy_functions_twin(x, s):
    return jnp.sum(jnp.sin(x) * s) + jnp.mean(x ** 2) + jnp.dot(x, WEIGHTS)


add("numpy-functions", numpy_functions, vector_and_scale, vec=numpy_functions_vec,
    twin=numpy_functions_twin, vec_twin=numpy_functions_vec_twin)


# --- f-strings, print, assert, isinstance, logging on static values -----------------------

def static_checks(x, s):
    assert x.ndim == 1, f"expected a vector, got shape {x.shape}"
    n = x.shape[0]
    print(f"static_checks: {n} elements of {x.dtype}")
    log.debug("static_checks shape %s", x.shape)
    log.info(f"n = {n}")
    scale = 1.0 / n if isinstance(n, int) else 0.0
    return scale * s * jnp.sum(x ** 3)


add("fstring-print-assert-isinstance-logging", static_checks, vector_and_scale)


# --- lambda default arguments --------------------------------------------------------------

def lambda_defaults_vec(x, s):
    fs = [lambda v, k=k: jnp.sin(k * v) for k in (1.0, 2.0, 3.0)]
    return s * jnp.stack([f(x) for f in fs])


def lambda_defaults(x, s):
    fs = [lambda v, k=k: jnp.sin(k * v) for k in (1.0, 2.0, 3.0)]
    return s * sum(jnp.sum(f(x)) for f in fs)


add("lambda-default-arguments", lambda_defaults, vector_and_scale, vec=lambda_defaults_vec)


# --- *args, **kwargs, keyword-only arguments ---------------------------------------------

def _combine(*terms, scale, offset=0.0, **options):
    total = sum(jnp.sum(t ** 2) for t in terms)
    if options.get("normalize", False):
        total = total / len(terms)
    return scale * total + offset


def varargs_inside(x, s):
    return _combine(x, jnp.sin(x), scale=s, offset=1.0, normalize=True)


def varargs_transformed(*args, power=2, **options):
    x, s = args
    return s * jnp.sum(jnp.cos(x) ** power) * options.get("weight", 1.0)


add("varargs-kwargs-inside", varargs_inside, vector_and_scale)
add("varargs-kwargs-transformed", varargs_transformed, vector_and_scale)


# --- nested decorators built with functools.wraps ----------------------------------------

def scaled(factor):
    def decorate(fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            return factor * fn(*args, **kwargs)
        return wrapper
    return decorate


def logged(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        log.debug("calling %s", fn.__name__)
        return fn(*args, **kwargs)
    return wrapper


@logged
@scaled(0.5)
def decorated_loss(x, s):
    return jnp.sum(jnp.exp(x * s))


@logged
@scaled(2.0)
def _decorated_helper(x, s):
    return jnp.tanh(x) * s


def decorated_helper_inside(x, s):
    return jnp.sum(_decorated_helper(x, s) ** 2)


add("decorators-wraps-transformed", decorated_loss, vector_and_scale)
add("decorators-wraps-inside", decorated_helper_inside, vector_and_scale,
    vec=_decorated_helper)


# --- list.append in a loop, then jnp.stack -----------------------------------------------

def append_then_stack_vec(x, s):
    rows = []
    h = x
    for k in range(3):
        h = jnp.sin(h * s) + k
        rows.append(h)
    return jnp.stack(rows)


def append_then_stack(x, s):
    return jnp.sum(append_then_stack_vec(x, s) ** 2)


add("list-append-then-stack", append_then_stack, vector_and_scale, vec=append_then_stack_vec)


# --- a dict built by item assignment (JAX's onnx2xla interpreter's environment) ----------

def dict_item_updates_vec(x, s):
    vals = {"a": x * s}
    for i, name in enumerate(["b", "c"]):
        vals[name] = jnp.sin(vals["a"]) * (i + 1)
    vals["a"] += vals["b"] * vals["c"]
    return vals["a"] + vals["c"]


def dict_item_updates(x, s):
    return jnp.sum(dict_item_updates_vec(x, s) ** 2)


add("dict-item-updates", dict_item_updates, vector_and_scale, vec=dict_item_updates_vec)


def dict_of_keywords_and_mappings_vec(x, s):
    base = dict(a=x * s, b=jnp.sin(x))
    merged = dict({"c": base["a"] * 2}, **base, d=x)
    merged["b"] = merged["b"] * merged["c"]
    return merged["a"] + merged["b"] + {**merged, "d": x * x}["d"]


def dict_of_keywords_and_mappings(x, s):
    return jnp.sum(dict_of_keywords_and_mappings_vec(x, s) ** 2)


add("dict-keywords-and-unpacking", dict_of_keywords_and_mappings, vector_and_scale,
    vec=dict_of_keywords_and_mappings_vec)


def comprehension_in_a_loop_vec(x, s):
    """An interpreter's loop (onnx2xla): each step gathers its operands from the
    environment with a comprehension, and stores its result back."""
    env = {"a": x, "b": x * s}
    for node in (("a", "b"), ("b", "a"), ("a", "a")):
        args = [env[name] for name in node]
        env[node[0]] = jnp.sin(args[0]) * args[1]
    return env["a"] + env["b"]


def comprehension_in_a_loop(x, s):
    return jnp.sum(comprehension_in_a_loop_vec(x, s) ** 2)


add("comprehension-in-a-loop", comprehension_in_a_loop, vector_and_scale,
    vec=comprehension_in_a_loop_vec)


# --- NumPy-style in-place updates of a local array ---------------------------------------

def inplace_updates_vec(x, s):
    y = jnp.zeros(4)
    y[0] = x[0] * 2
    y[1:3] += x[1:3] * s
    y[3] = jnp.sum(x) ** 2
    y *= s
    return y


def inplace_updates(x, s):
    y = jnp.zeros(4)
    y[0] = x[0] * 2
    y[1:3] += x[1:3] * s
    y[3] = jnp.sum(x) ** 2
    y *= s
    return jnp.sum(y ** 2)


def inplace_updates_in_helper(x, s):
    return jnp.sum(inplace_updates_vec(x, s) ** 2)


def inplace_updates_vec_twin(x, s):
    y = jnp.zeros(4)
    y = y.at[0].set(x[0] * 2)
    y = y.at[1:3].add(x[1:3] * s)
    y = y.at[3].set(jnp.sum(x) ** 2)
    return y * s


def inplace_updates_twin(x, s):
    return jnp.sum(inplace_updates_vec_twin(x, s) ** 2)


add("inplace-updates", inplace_updates, vector_and_scale, vec=inplace_updates_vec,
    twin=inplace_updates_twin, vec_twin=inplace_updates_vec_twin, eager=False)
add("inplace-updates-in-helper", inplace_updates_in_helper, vector_and_scale,
    twin=inplace_updates_twin, eager=False)


# --- a loop variable whose shape changes (JAX README's MLP) ------------------------------

def mlp_predict(params, inputs):
    for W, b in params:
        outputs = jnp.tanh(jnp.dot(inputs, W) + b)
        inputs = outputs
    return outputs


def mlp_loss(params, inputs, s):
    return s * jnp.sum(mlp_predict(params, inputs) ** 2)


def mlp_vec(params, inputs, s):
    return mlp_predict(params, inputs) * s


add("mlp-shape-changing-loop", mlp_loss,
    lambda leaf: ([(leaf(normal(22, 2, 3)), leaf(normal(23, 3))),
                   (leaf(normal(24, 3, 2)), leaf(normal(25, 2)))],
                  leaf(normal(26, 2)), leaf(0.9)),
    vec=mlp_vec)


# --- starred assignment -------------------------------------------------------------------

def starred_assignment(xs, s):
    first, *rest = xs
    a, *others = first          # unpacks an array's elements
    return s * a * sum(jnp.sum(r ** 2) for r in rest) + jnp.sum(jnp.stack(others) ** 3)


add("starred-assignment", starred_assignment,
    lambda leaf: ([leaf(normal(27, 3)), leaf(normal(28, 2)), leaf(normal(29, 2))], leaf(1.2)))


# --- a recursive helper with a static depth ----------------------------------------------

def _deep(x, s, depth):
    if depth == 0:
        return x
    return jnp.sin(_deep(x, s, depth - 1) * s) + x


def recursive_vec(x, s):
    return _deep(x, s, 3)


def recursive_loss(x, s):
    return jnp.sum(_deep(x, s, 3) ** 2)


add("recursive-static-depth", recursive_loss, vector_and_scale, vec=recursive_vec)


NAMES = [idiom.name for idiom in IDIOMS]
assert len(set(NAMES)) == len(NAMES)
BY_NAME = {idiom.name: idiom for idiom in IDIOMS}
