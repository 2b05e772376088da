"""``jax.checkpoint`` (``jax.remat``), ``jax.checkpoint_policies`` and
``jax.ad_checkpoint.checkpoint_name``.

Checkpointing a function makes reverse mode recompute its intermediates instead of storing
them: memory traded for time, values and derivatives unchanged. In the generated reverse
code a call ``y = block(x)`` is differentiated by the block's own VJP, which runs the block
forward again (``vjp_block(x, _out_bar=y_bar)``): the caller keeps only ``x``. For a
checkpointed block that call reads ``vjp_block(ad.recompute(x), _out_bar=y_bar)``:
``ad.recompute`` (transforms/ad/remat.py) puts the arguments behind an optimization
barrier under ``jit``, so the compiler cannot merge the recomputation with the primal pass
and store the intermediates after all (JAX's ``prevent_cse``, on by default).

Policies: ``everything_saveable`` (and ``prevent_cse=False``) keep the plain call, whose
intermediates the compiler may share with the primal pass; ``nothing_saveable`` (and no
policy) recompute the whole block. The others save what they name, as JAX does: under
``jit`` the recomputation takes the primal pass's result of each operation the policy
saves -- ``dots_saveable``'s matrix products, ``save_only_these_names``' values named by
``checkpoint_name`` -- and computes the rest again (generated code:
``ad.recompute(x, "dots_saveable")``; transforms/ad/remat.py). A policy is a predicate
``policy(prim, *avals, **params)``, JAX's form, so a policy of the user's works too.
Eagerly a policy changes nothing: nothing is stored or shared.
"""

from __future__ import annotations

import ast
import functools
import inspect
import textwrap
from typing import Any, Callable, Optional

from transpiler.errors import located
from transpiler.transforms.ad import remat as recomputation
from transpiler.transforms.ad.remat import checkpoint_name
from transpiler.transforms.common.generated import ModuleCode, Staged, carries_its_function

__all__ = ["checkpoint", "remat", "checkpoint_name", "checkpoint_policies"]


class Checkpointed(Staged):
    """``checkpoint(fun)``: calls `fun`; the transforms see through it to `fun`, and reverse
    mode recomputes it (the module docstring)."""

    def __init__(self, fun: Callable, prevent_cse: bool, policy: Optional[Callable],
                 static_argnums: tuple[int, ...], static_argnames: tuple[str, ...]) -> None:
        self._fun = fun
        self.policy = policy
        self.static_argnums = static_argnums
        self.static_argnames = static_argnames
        # Whether reverse mode recomputes behind a barrier (else the compiler may share
        # the primal pass's intermediates).
        self.recomputes = bool(prevent_cse) and policy is not _always
        # What generated code calls the policy, when it saves anything.
        self.policy_name = None if policy in (None, _never) else recomputation.policy_name(policy)
        functools.update_wrapper(self, fun)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._fun(*args, **kwargs)

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        return self if obj is None else functools.partial(self, obj)

    def generate_code(self, module_name: str) -> None:
        if isinstance(self._fun, ModuleCode):
            self._fun.generate_code(module_name)

    def is_static(self, position: int, keyword: Optional[str]) -> bool:
        """Whether the argument at `position` (or passed as `keyword`) is static: passed
        to the recomputation as it is."""
        if keyword is not None:
            if keyword in self.static_argnames:
                return True
            try:
                names = list(inspect.signature(self._fun).parameters)
            except (TypeError, ValueError):
                return False
            return keyword in names and names.index(keyword) in self.static_argnums
        return position in self.static_argnums

    @property
    def code_options(self) -> str:
        """What code generated for a caller depends on (cached code keys on it)."""
        return f"[recomputes={self.recomputes}, policy={self.policy_name}, " \
               f"static={self.static_argnums}, {self.static_argnames}]"

    def __repr__(self) -> str:
        return f"checkpoint({getattr(self._fun, '__qualname__', self._fun)})"


def _argnums(value: Any, what: str) -> tuple:
    items = (value,) if isinstance(value, (int, str)) else tuple(value)
    kind = int if what == "static_argnums" else str
    for item in items:
        if not isinstance(item, kind) or isinstance(item, bool):
            raise located(TypeError, f"checkpoint: {what} must be "
                          f"{'ints' if kind is int else 'strs'}, got {item!r}")
    return items


def checkpoint(fun: Optional[Callable] = None, *, prevent_cse: Any = True,
               policy: Optional[Callable[..., bool]] = None, static_argnums: Any = (),
               static_argnames: Any = ()) -> Any:
    """``jax.checkpoint``: `fun`, recomputed by reverse mode instead of stored (see the
    module docstring); also usable as ``@checkpoint(policy=...)``."""
    if policy is not None and not callable(policy):
        raise located(TypeError, f"checkpoint: policy must be callable, got "
                      f"{type(policy).__name__}", "use a jax.checkpoint_policies entry")
    if fun is None:
        return functools.partial(checkpoint, prevent_cse=prevent_cse, policy=policy,
                                 static_argnums=static_argnums,
                                 static_argnames=static_argnames)
    if not callable(fun):
        raise located(TypeError, f"checkpoint expects a callable, got {type(fun).__name__}")
    argnums = _argnums(static_argnums, "static_argnums")
    if argnums and any(n < 0 for n in argnums):
        try:
            count = len(inspect.signature(fun).parameters)
        except (TypeError, ValueError):
            count = 0
        argnums = tuple(n % count if n < 0 and count else n for n in argnums)
    _refuse_effects(fun)
    return Checkpointed(fun, prevent_cse, policy, argnums,
                        _argnums(static_argnames, "static_argnames"))


remat = checkpoint
# c = checkpoint(closure) inside a transformed function: the closure's derivative passes
# through (differentiated as the closure itself: its recomputation is reverse mode's choice)
carries_its_function(checkpoint)

_EFFECTS = {"callback", "io_callback", "print"}  # jax.debug.print, debug.callback ...


def _refuse_effects(fun: Callable) -> None:
    """A checkpointed function runs twice under reverse mode (its primal pass and its
    recomputation): refuse the side effects that would show it -- state assigned through
    ``global``/``nonlocal`` and the debug callbacks -- at the user's line."""
    inner = getattr(fun, "__wrapped__", fun)
    try:
        source = textwrap.dedent(inspect.getsource(inner))
        first = inspect.getsourcelines(inner)[1]
        tree = ast.parse(source)
    except (OSError, TypeError, SyntaxError):
        return  # no source (a builtin, a primitive): nothing of ours runs twice
    for node in ast.walk(tree):
        effect = None
        if isinstance(node, (ast.Global, ast.Nonlocal)):
            effect = f"`{type(node).__name__.lower()} {', '.join(node.names)}`"
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                node.func.attr in _EFFECTS and isinstance(node.func.value, (ast.Name,
                                                                            ast.Attribute)) \
                and ast.unparse(node.func.value).split(".")[-1] in ("debug", "experimental"):
            effect = f"`{ast.unparse(node.func)}(...)`"
        if effect is not None:
            raise located(ValueError, f"checkpoint: {getattr(inner, '__qualname__', inner)} "
                          f"has a side effect, {effect} (line {first + getattr(node, 'lineno', 1) - 1}); "
                          f"reverse mode runs a checkpointed function twice (once to "
                          f"recompute it), so the effect would happen twice",
                          "return the value instead of assigning outer state, and move "
                          "debug printing out of the checkpointed function")


def _named(policy: Callable[..., bool], name: str) -> Callable[..., bool]:
    policy.policy_name = name  # type: ignore[attr-defined]  # (transforms/ad/remat.py)
    return policy


def _never(*_: Any, **__: Any) -> bool:
    return False


def _always(*_: Any, **__: Any) -> bool:
    return True


def _dot(prim: Any, *_: Any, **__: Any) -> bool:
    return getattr(prim, "name", prim) == "dot_general"


def _dot_without_batch(prim: Any, *_: Any, **params: Any) -> bool:
    (_, _), (lhs_batch, _) = params.get("dimension_numbers", (((), ()), ((), ())))
    return _dot(prim) and not lhs_batch


def _name_checks(names: tuple) -> tuple[str, ...]:
    for name in names:
        if not isinstance(name, str):
            raise located(TypeError, f"checkpoint policy names must be str, got {name!r}")
    return tuple(names)


def _only_names(*names: str) -> Callable[..., bool]:
    chosen = frozenset(_name_checks(names))
    return _named(lambda prim, *_, **params: prim is recomputation.NAME and params["name"] in chosen,
                  f"save_only_these_names({', '.join(sorted(chosen))})")


def _names_but(*names: str) -> Callable[..., bool]:
    """Values named by checkpoint_name, except these."""
    chosen = frozenset(_name_checks(names))
    return _named(lambda prim, *_, **params: prim is recomputation.NAME and
                  params["name"] not in chosen,
                  f"save_any_names_but_these({', '.join(sorted(chosen))})")


def _anything_but(*names: str) -> Callable[..., bool]:
    """Every result, except values named by checkpoint_name with these names."""
    chosen = frozenset(_name_checks(names))
    return _named(lambda prim, *_, **params: not (prim is recomputation.NAME and
                                                  params["name"] in chosen),
                  f"save_anything_except_these_names({', '.join(sorted(chosen))})")


for _policy, _policy_name in ((_always, "everything_saveable"), (_never, "nothing_saveable"),
                              (_dot, "dots_saveable"),
                              (_dot_without_batch, "dots_with_no_batch_dims_saveable")):
    _named(_policy, _policy_name)


class checkpoint_policies:  # noqa: N801 (JAX's name for this namespace)
    """``jax.checkpoint_policies``: which intermediates a checkpointed function stores
    for its derivative instead of computing them again (predicates over a primitive, its
    operands' avals and its parameters; see the module docstring)."""

    everything_saveable = staticmethod(_always)
    nothing_saveable = staticmethod(_never)
    dots_saveable = checkpoint_dots = staticmethod(_dot)
    dots_with_no_batch_dims_saveable = staticmethod(_dot_without_batch)
    checkpoint_dots_with_no_batch_dims = staticmethod(_dot_without_batch)
    save_only_these_names = staticmethod(_only_names)
    save_any_names_but_these = staticmethod(_names_but)
    save_anything_except_these_names = staticmethod(_anything_but)

    @staticmethod
    def save_from_both_policies(left: Callable[..., bool],
                                right: Callable[..., bool]) -> Callable[..., bool]:
        return _named(lambda *args, **kwargs: left(*args, **kwargs) or right(*args, **kwargs),
                      f"save_from_both_policies({recomputation.policy_name(left)}, "
                      f"{recomputation.policy_name(right)})")

    @staticmethod
    def save_and_offload_only_these_names(*, names_which_can_be_saved: Any = (),
                                          names_which_can_be_offloaded: Any = (),
                                          offload_src: str = "device",
                                          offload_dst: str = "pinned_host"
                                          ) -> Callable[..., bool]:
        # (offloading to host memory is saving, to IREE: it has one memory space here)
        return _only_names(*names_which_can_be_saved, *names_which_can_be_offloaded)

    @staticmethod
    def offload_dot_with_no_batch_dims(offload_src: str = "device",
                                       offload_dst: str = "pinned_host"
                                       ) -> Callable[..., bool]:
        return _dot_without_batch
