"""The adjoint of one ANF assignment: which rule applies, and the statements it emits."""

from __future__ import annotations

import inspect
from typing import Any, Optional, cast

import libcst as cst
from transpiler.frontend.cst_templates import parse_template_expression, parse_template_statement

from transpiler.array_methods import ArrayMethods
from transpiler.primitives.core import Primitive
from transpiler.rewritten import sequence
from transpiler.transforms.common import classify as cl
from transpiler.transforms.common.signature import source_signature
from transpiler.transforms.common.statements import (
    callee_name,
    TIGHT_EQUAL,
    _active_name,
    _jnp,
    _substitute,
    _targets,
    index_text,
)
from transpiler.transforms.common.rename import assigned_names
from transpiler.transforms.reverse.structural_rules import (
    AT_METHODS,
    at_rule,
    comprehension_rule,
    star_rule,
)


def adjoint_of(gen: Any, stmt: cst.BaseStatement, assign: cst.Assign) -> list[cst.BaseStatement]:
    target = assign.targets[0].target
    value = assign.value
    if isinstance(target, (cst.Tuple, cst.List)):  # a, (b, c) = t
        source = value.value if isinstance(value, cst.Name) else None
        if source is None:
            raise gen.error(stmt, "internal: unpacking from a non-name in ANF code")
        return gen.accumulate(source, parse_template_expression(
            f"ad.unpacked_cotangent({_unpacked_bar(gen, target)}, {source})"))
    t = target.value  # type: ignore[attr-defined]
    bar = cst.Name(gen.bar(t))
    op = gen.op_of(assign)
    if op.kind == "copy":
        return gen.accumulate(op.operands[0], bar)
    defined = cl.defined_names(op, gen.name_tuples)
    if defined is not None:  # ad.defined(locals(), names): each name's entry of the tuple
        flows: list[cst.BaseStatement] = []
        for k, name in enumerate(defined):
            if name not in gen.versions:  # (renamed here: the string no longer names it)
                raise gen.error(stmt, f"internal: a tape entry reads `{name}`, which this "
                                "reverse pass renamed; its derivative cannot be followed")
            flows += gen.accumulate(name, parse_template_expression(
                "ad.item({g}, {k})", g=bar, k=cst.Integer(str(k))))
        return flows
    if op.kind == "index":
        array = value.value.value  # type: ignore[attr-defined]
        index = parse_template_expression(index_text(value))  # type: ignore[arg-type]
        return gen.accumulate(array, parse_template_expression(
            "ad.index_bar({a}, {i}, {g})", a=cst.Name(array), i=index, g=bar))
    if op.kind in ("pack", "dict"):
        out: list[cst.BaseStatement] = []
        offset = ""  # `(*s, a, b)`: a's place is len(s) + 0, known at run time
        elements = value.elements  # type: ignore[attr-defined]
        for i, element in enumerate(elements):
            if isinstance(element, cst.StarredDictElement):  # `**d`: its keys' cotangents
                if not isinstance(element.value, cst.Name):
                    raise gen.error(stmt, "internal: unpacking a non-name in ANF code")
                later = ", ".join(f"*{cst.Module([]).code_for_node(e.value)}"
                                  if isinstance(e, cst.StarredDictElement) else
                                  cst.Module([]).code_for_node(e.key)
                                  for e in elements[i + 1:])
                out += gen.accumulate(element.value.value, parse_template_expression(
                    f"ad.unpacked_dict_bar({{g}}, {{d}}, [{later}])", g=bar,
                    d=element.value))
                continue
            key = cst.parse_expression(f"{offset}{i}") if op.kind == "pack" else element.key
            item = element.value
            if isinstance(element, cst.StarredElement) and isinstance(item, cst.Name) and \
                    not _active_name(gen, item) and op.kind == "pack":
                offset += f"len({item.value}) - 1 + "
                continue
            if isinstance(element, cst.StarredElement) and isinstance(item, cst.Name) and \
                    op.kind == "pack":  # `*xs`'s cotangents: a run of the literal's
                out += gen.accumulate(item.value, parse_template_expression(
                    f"ad.item({{g}}, slice({offset}{i}, {offset}{i} + len({{x}})))", g=bar,
                    x=item))
                offset += f"len({item.value}) - 1 + "
                continue
            if isinstance(element, cst.StarredElement):
                raise gen.error(stmt, "unpacking (*x) of a differentiated value in a "
                                "container literal is not supported yet")
            if isinstance(item, cst.Name):
                first = item.value not in gen.has_bar
                out += gen.accumulate(item.value, parse_template_expression(
                    "ad.item({g}, {k})", g=bar, k=key))
                if first and item.value in gen.has_bar:  # an element may get no cotangent
                    gen.maybe_none.add(item.value)
        return out
    if op.kind == "attribute":
        fn_name = cl.ATTRIBUTE_TO_FUNCTION.get(op.attr)
        if fn_name is None:  # a field of a NamedTuple, a dataclass, a registered pytree
            obj = value.value  # type: ignore[attr-defined]
            if not isinstance(obj, cst.Name):
                raise gen.error(stmt, f"cannot differentiate through the attribute `.{op.attr}`")
            return gen.accumulate(obj.value, parse_template_expression(
                "ad.attribute_bar({o}, {n}, {g})", o=obj, n=cst.SimpleString(repr(op.attr)),
                g=bar))
        return call_rule(gen, stmt, _jnp(fn_name), [cst.Arg(value.value)], t)  # type: ignore
    if op.kind == "binop" and op.callee in ("add", "multiply"):
        rule = sequence_binop_rule(gen, op.callee, value.left, value.right, bar)  # type: ignore
        if rule is not None:
            return rule
    if op.kind in ("binop", "unary"):
        args = [value.left, value.right] if op.kind == "binop" else [value.expression]  # type: ignore
        return call_rule(gen, stmt, _jnp(op.callee), [cst.Arg(a) for a in args], t)
    if op.kind == "call":
        return call_adjoint(gen, stmt, op, value, t)  # type: ignore[arg-type]
    if isinstance(value, cst.ListComp):
        return comprehension_rule(gen, stmt, value, t)
    raise gen.error(stmt, "cannot differentiate this statement",
                    "rewrite it with transpiler.numpy functions")


def _is_sequence(gen: Any, node: cst.BaseExpression) -> bool:
    """Whether `node` is a tuple or list the function builds (a display, a comprehension,
    ``list(...)``/``tuple(...)``): ``+`` and ``*`` on it concatenate and repeat."""
    if isinstance(node, (cst.List, cst.Tuple)):
        return True
    assign = gen.definitions.get(node.value) if isinstance(node, cst.Name) else None
    value = assign.value if assign is not None else None
    return isinstance(value, (cst.List, cst.Tuple, cst.ListComp)) or (
        isinstance(value, cst.Call) and isinstance(value.func, cst.Name)
        and value.func.value in ("list", "tuple"))


def sequence_binop_rule(gen: Any, callee: str, left: cst.BaseExpression,
                        right: cst.BaseExpression, bar: cst.Name) -> Optional[list]:
    """``xs + ys`` (concatenation) and ``xs * n`` (repetition) of tuples and lists: the
    cotangent splits back into the operands' places, or sums over the copies. None when
    neither operand is a sequence the function builds (arithmetic then)."""
    if not (_is_sequence(gen, left) or _is_sequence(gen, right)):
        return None
    out: list[cst.BaseStatement] = []
    if callee == "add":
        for node, part in ((left, "slice(None, len({a}))"), (right, "slice(len({a}), None)")):
            if isinstance(node, cst.Name) and _active_name(gen, node):
                out += gen.accumulate(node.value, parse_template_expression(
                    "ad.item({g}, " + part + ")", g=bar, a=left))
        return out
    seq, count = (left, right) if _is_sequence(gen, left) else (right, left)
    if isinstance(seq, cst.Name) and _active_name(gen, seq):
        out += gen.accumulate(seq.value, parse_template_expression(
            "ad.repeat_bar({g}, len({xs}))", g=bar, xs=seq))
    return out


# A dict's views: their cotangents and tangents are the entries' (ad/cotangents.py)
DICT_VIEWS = ("items", "values", "keys")


def call_adjoint(gen: Any, stmt: cst.BaseStatement, op: cl.Op, call: cst.Call,
                 t: str) -> list[cst.BaseStatement]:
    kind = cl.callee_kind(op.callee)
    args = list(call.args)
    if kind == "method":
        receiver = op.method_self
        assert receiver is not None  # classify records the receiver of every method call
        if op.callee[1] in cl.METHOD_OWN:
            method = getattr(ArrayMethods, op.callee[1])
            return call_rule(gen, stmt, method, [cst.Arg(cst.Name(receiver)), *args], t)
        if op.callee[1] in AT_METHODS:
            return at_rule(gen, stmt, op, args, t)
        if op.callee[1] in DICT_VIEWS:  # d.items(), d.values(): entries of the dict's
            if op.callee[1] == "keys":
                return []
            return gen.accumulate(receiver, parse_template_expression(
                f"ad.{op.callee[1]}_bar({{d}}, {{g}})", d=cst.Name(receiver),
                g=cst.Name(gen.bar(t))))
        name = cl.METHOD_TO_FUNCTION.get(op.callee[1])
        if name is None:  # a method of a Python class: its function, the receiver first
            func, args = cl.unbound_method(receiver, op.callee[1], args)
            return runtime_rule(gen, stmt, call.with_changes(func=func, args=args), args, t)
        return call_rule(gen, stmt, _jnp(name), [cst.Arg(cst.Name(receiver)), *args], t)
    if kind == "seed":  # t = ad.seed(out_bar, out, has_aux=...): the cotangent passes
        source = args[0].value
        has_aux = any(a.keyword is not None and a.keyword.value == "has_aux" and
                      isinstance(a.value, cst.Name) and a.value.value == "True" for a in args)
        seed_flow = parse_template_expression("ad.item({g}, 0)" if has_aux else "{g}",
                                              g=cst.Name(gen.bar(t)))
        return gen.accumulate(source.value, seed_flow) if isinstance(source, cst.Name) else []
    if kind == "pass":
        flow: cst.BaseExpression = cst.Name(gen.bar(t))
        if op.callee in (tuple, list):  # (of an array: its rows, stacked back)
            flow = parse_template_expression("ad.rows_bar({g}, {x})", g=flow, x=args[0].value)
        if op.callee is sequence:  # (of a dict: its keys, which take no cotangent)
            flow = parse_template_expression("ad.sequence_derivative({g}, {x})", g=flow,
                                             x=args[0].value)
        return gen.accumulate(args[0].value.value, flow)  # type: ignore
    if kind.startswith("cotangent_"):
        return cotangent_helper_rule(gen, kind, args, t)
    if kind in LINEAR_HELPERS:
        return linear_helper_rule(gen, kind, args, t)
    if kind == "jitted" and getattr(op.callee, "recomputes", False):
        return checkpoint_rule(gen, stmt, op.callee, args, t)
    if kind == "jitted":
        return call_rule(gen, stmt, op.callee._fun, args, t)
    if kind == "local":
        return local_rule(gen, stmt, op.callee[1], call, args, t)
    if kind == "runtime":  # vmap(f): its run-time rule (ad/vmapped.py)
        return runtime_rule(gen, stmt, call, args, t)
    if kind == "control":  # lax.cond, fori_loop, scan ...: rules of their own (ad/control.py)
        args = normalized_args(gen, stmt, op.callee, args)
        return runtime_rule(gen, stmt, call.with_changes(args=args), args, t)
    if kind == "custom":
        return custom_rule(gen, stmt, op.callee, call, args, t)
    if kind == "custom_jvp":  # reverse mode from its forward rule (see forward/custom_jvp.py)
        return runtime_rule(gen, stmt, call, args, t, helper="custom_jvp_vjp")
    if kind == "function" and any(a.star for a in args):  # f(*args, **kwargs): bound at run
        return runtime_rule(gen, stmt, call, args, t)     # time, as for a function argument
    if kind in ("primitive", "function"):
        return call_rule(gen, stmt, op.callee, args, t)
    return runtime_rule(gen, stmt, call, args, t)  # no source: traced (transforms/common/traced.py)


def _unpacked_bar(gen: Any, target: cst.BaseExpression) -> str:
    """The cotangent of the value unpacked into `target`, with the target's nesting:
    ``(d,), (dd,) = p, t`` gives ``((d_bar,), (dd_bar,),)``."""
    if isinstance(target, (cst.Tuple, cst.List)):
        return "(" + "".join(_unpacked_bar(gen, e.value) + ", " for e in target.elements) + ")"
    names = assigned_names(cast(cst.BaseAssignTargetExpression, target))  # an assignment's target
    return gen.bar_text(names[0]) if names else "None"


def checkpoint_rule(gen: Any, stmt: cst.BaseStatement, fn: Any, args: list[cst.Arg],
                    t: str) -> list[cst.BaseStatement]:
    """A checkpointed function (``jax.checkpoint``): its VJP, which recomputes it, called
    on its arguments behind ``ad.recompute`` (see transpiler/ad_checkpoint.py)."""
    call_args, position = [], 0
    for a in args:
        keyword = a.keyword.value if a.keyword is not None else None
        static = fn.is_static(position, keyword)
        if keyword is None:
            position += 1
        if not static and not a.star and isinstance(a.value, cst.Name):
            a = a.with_changes(value=parse_template_expression(
                "ad.recompute({x})" if fn.policy_name is None else
                f"ad.recompute({{x}}, {fn.policy_name!r})", x=a.value))
        call_args.append(a)
    return call_rule(gen, stmt, fn._fun, args, t, call_args)


def call_rule(gen: Any, stmt: cst.BaseStatement, fn: Any, args: list[cst.Arg],
              t: str, call_args: Optional[list[cst.Arg]] = None) -> list[cst.BaseStatement]:
    """`call_args`: the arguments the VJP of a function is called with, if not `args`."""
    positional = [a for a in args if a.keyword is None]
    if any(a.star for a in args):
        template = fn.vjp if isinstance(fn, Primitive) else None
        if template is not None and template.variadic and len(template.operands) == 1 and \
                len(positional) == 1 and positional[0].star == "*":
            return star_rule(gen, fn, positional[0].value, args, t)
        if template is not None and template.variadic and \
                len(positional) == len(template.operands) and positional[-1].star == "*" and \
                sum(1 for a in args if a.star) == 1 and not template.has_bar(template.operands[-1]):
            # prim(x, *indices): the starred rest takes no cotangent (dynamic_slice's starts)
            return template_rule(gen, stmt, fn, positional, args, t)
        raise gen.error(stmt, "star-arguments in a differentiated call are not supported yet")
    if isinstance(fn, Primitive):
        return template_rule(gen, stmt, fn, positional, args, t)
    return function_rule(gen, stmt, fn, positional, args, t, call_args)


def template_rule(gen: Any, stmt: cst.BaseStatement, prim: Primitive, positional: list,
                  args: list, t: str) -> list[cst.BaseStatement]:
    template = prim.vjp
    if template is None:
        raise gen.error(stmt, f"the primitive `{prim.name}` has no VJP rule")
    params = {a.keyword.value: a.value for a in args if a.keyword is not None}
    mapping: dict[str, cst.BaseExpression] = {"out": cst.Name(t), "out_bar": cst.Name(gen.bar(t))}
    contributions: list[tuple[str, str]] = []  # (variable, temp holding its cotangent)
    keep_targets: dict[str, str] = {}
    fixed = template.operands[:-1] if template.variadic else template.operands
    used = [_active_name(gen, a.value) for a in positional]
    for operand, a in zip(fixed, positional):
        mapping[operand] = a.value
        # An operand the template gives no cotangent is integral by the primitive's contract
        # (a predicate, indices): no derivative flows into it, whatever computed it.
        name = _active_name(gen, a.value) if template.has_bar(operand) else None
        if name and name not in gen.has_bar and used.count(name) == 1:
            keep_targets[f"{operand}_bar"] = gen.bar(name)  # the first contribution
            gen.has_bar.add(name)
        elif name:
            temp = gen.tmp()
            keep_targets[f"{operand}_bar"] = temp
            contributions.append((name, temp))
    if template.variadic:  # the rest of the operands form one list
        operand = template.operands[-1]
        rest = positional[len(fixed):]
        mapping[operand] = cst.List([cst.Element(a.value) for a in rest])
        if len(rest) == 1 and rest[0].star == "*":  # prim(x, *rest): the list itself
            mapping[operand] = parse_template_expression("list({r})", r=rest[0].value)
            rest = []
        if any(_active_name(gen, a.value) for a in rest):
            temp = gen.tmp()
            keep_targets[f"{operand}_bar"] = temp
            for i, a in enumerate(rest):
                name = _active_name(gen, a.value)
                if name:
                    contributions.append((name, f"{temp}[{i}]"))
    out: list[cst.BaseStatement] = []
    helpers: dict[str, str] = {}
    for line in template.statements:
        targets = _targets(line)
        if any(n.endswith("_bar") and n not in keep_targets for n in targets):
            continue  # the cotangent of an inactive operand
        for n in targets:
            if n not in keep_targets and n not in helpers:
                helpers[n] = gen.tmp("h")
        out.append(_substitute(gen, line, mapping, {**keep_targets, **helpers}, params, stmt,
                               prim))
    for name, temp in contributions:
        out += gen.accumulate(name, parse_template_expression(temp))
    return out


def function_rule(gen: Any, stmt: cst.BaseStatement, fn: Any, positional: list, args: list,
                  t: str, call_args: Optional[list] = None) -> list[cst.BaseStatement]:
    try:
        signature = source_signature(fn)
        bound = signature.bind_partial(*range(len(positional)), **{
            a.keyword.value: -1 - i for i, a in enumerate(args) if a.keyword is not None})
    except (TypeError, ValueError) as err:
        raise gen.error(stmt, f"cannot match this call to {getattr(fn, '__name__', fn)}: {err}")
    active: set[str] = set()
    for pname, slot in bound.arguments.items():
        slots = slot if isinstance(slot, tuple) else (slot,)
        for s in slots:
            if not isinstance(s, int):
                continue
            node = positional[s].value if s >= 0 else args[-1 - s].value
            if _active_name(gen, node):
                active.add(pname)
    if not active:
        return []
    base, vjp_fn = gen.vjp_of(fn, frozenset(active))
    vjp_name = callee_name(gen, base, vjp_fn, f"vjp_{gen.func.name.value}")
    gen.callees[vjp_name] = (fn, frozenset(active))
    temp = gen.tmp()
    call = cst.Call(func=cst.Name(vjp_name), args=[
        *[a.with_changes(comma=cst.MaybeSentinel.DEFAULT) for a in call_args or args],
        cst.Arg(cst.Name(gen.bar(t)), keyword=cst.Name(cotangent_param(vjp_fn)),
                equal=TIGHT_EQUAL)])
    positional_names = [n for n, p in signature.parameters.items()
                        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    keyword_only = sorted(n for n in active if n not in positional_names
                          and signature.parameters[n].kind == inspect.Parameter.KEYWORD_ONLY)
    # Keyword-only parameters' cotangents come back in a dict (third result): in generated
    # code the cotangent `_out_bar` of the level below is one, when differentiating twice.
    pick = "{c}[1]" if not keyword_only else "{c}"
    out: list[cst.BaseStatement] = [
        parse_template_statement("{g} = " + pick, g=cst.Name(temp), c=call)]
    bars = temp if not keyword_only else f"{temp}[1]"
    for i, a in enumerate(positional):
        name = _active_name(gen, a.value)
        if name:
            out += gen.accumulate(name, parse_template_expression(f"{bars}[{i}]"))
    for a in args:
        name = _active_name(gen, a.value) if a.keyword is not None else None
        if not name:
            continue
        if a.keyword.value in keyword_only:
            out += gen.accumulate(name, parse_template_expression(
                f"{temp}[2][{a.keyword.value!r}]"))
            continue
        if a.keyword.value not in positional_names:
            raise gen.error(stmt, f"a differentiated value passed as argument "
                            f"`{a.keyword.value}` is not supported yet")
        index = positional_names.index(a.keyword.value)
        out += gen.accumulate(name, parse_template_expression(f"{bars}[{index}]"))
    return out


def cotangent_helper_rule(gen: Any, kind: str, args: list, t: str) -> list[cst.BaseStatement]:
    """The adjoints of the linear helpers of generated code (a derivative differentiated):
    ``ad.add(a, b)`` passes its cotangent to both; ``ad.item(g, k)`` and
    ``ad.index_bar(x, k, g)`` are each other's transposes, and so are sort's
    ``ad.sorted_tangent`` and ``ad.unsorted_cotangent``."""
    names = [a.value.value if isinstance(a.value, cst.Name) else None for a in args]
    bar = cst.Name(gen.bar(t))
    out: list[cst.BaseStatement] = []
    if kind == "cotangent_add":
        for name in names[:2]:
            if name:
                out += gen.accumulate(name, bar)
    elif kind == "cotangent_item" and names[0]:
        out += gen.accumulate(names[0], parse_template_expression(
            "ad.index_bar({g}, {k}, {b})", g=args[0].value, k=args[1].value, b=bar))
    elif kind == "cotangent_index_bar" and names[2]:
        out += gen.accumulate(names[2], parse_template_expression(
            "ad.item({b}, {k})", k=args[1].value, b=bar))
    elif kind == "cotangent_attribute_bar" and names[2]:  # obj_bar from obj.<name>'s
        out += gen.accumulate(names[2], parse_template_expression(
            "ad.attribute_tangent({b}, {k})", k=args[1].value, b=bar))
    elif kind == "cotangent_attribute_tangent" and names[0]:  # obj_dot.<name>
        out += gen.accumulate(names[0], parse_template_expression(
            "ad.attribute_bar({o}, {k}, {b})", o=args[0].value, k=args[1].value, b=bar))
    elif kind in ("cotangent_items_bar", "cotangent_values_bar") and names[1]:  # transposed
        view = "items" if kind == "cotangent_items_bar" else "values"
        out += gen.accumulate(names[1], parse_template_expression(
            f"ad.{view}_tangent({{d}}, {{b}})", d=args[0].value, b=bar))
    elif kind == "cotangent_keyword_bars" and names[0]:  # a restriction: its own transpose
        out += gen.accumulate(names[0], parse_template_expression(
            "ad.keyword_bars({b}, {d})", b=bar, d=args[1].value))
    elif kind == "cotangent_unpacked_dict" and names[0]:  # a restriction: its own transpose
        out += gen.accumulate(names[0], parse_template_expression(
            "ad.unpacked_dict_bar({b}, {d}, {k})", b=bar, d=args[1].value, k=args[2].value))
    elif kind == "cotangent_without_item" and names[0]:  # a dict cotangent less one entry
        out += gen.accumulate(names[0], parse_template_expression(
            "ad.without_item({b}, {k})", b=bar, k=args[1].value))
    elif kind == "cotangent_with_item":  # a dict comprehension's next entry
        if names[0]:
            out += gen.accumulate(names[0], parse_template_expression(
                "ad.without_item({b}, {k})", b=bar, k=args[1].value))
        if names[2]:
            out += gen.accumulate(names[2], parse_template_expression(
                "ad.item({b}, {k})", b=bar, k=args[1].value))
    elif kind in ("sort_permuted", "sort_unpermuted") and names[0]:  # each other's transpose
        other = "unsorted_cotangent" if kind == "sort_permuted" else "sorted_tangent"
        out += gen.accumulate(names[0], parse_template_expression(
            f"ad.{other}({{b}}, {{x}}, {{d}}, {{s}})", b=bar, x=args[1].value,
            d=args[2].value, s=args[3].value))
    elif kind == "cotangent_unpacked" and names[0]:  # `a, b = x`'s cotangent of x
        out += gen.accumulate(names[0], parse_template_expression(
            "ad.unpacked_parts({b}, {p}, {x})", b=bar, p=args[0].value, x=args[1].value))
    elif kind == "cotangent_appended":  # xs.append(v), as reverse mode rewrote it
        if names[0]:
            out += gen.accumulate(names[0], parse_template_expression(
                "ad.item({b}, slice(None, -1))", b=bar))
        if names[1]:
            out += gen.accumulate(names[1], parse_template_expression("ad.item({b}, -1)", b=bar))
    return out


# Linear helpers of the code reverse mode reads for second derivatives through lax control
# flow (ad/control.py's rules and what they call): ``fill(bar, primal)`` -- `bar` with zeros
# where nothing flowed -- passes its cotangent back pruned to `bar`'s structure;
# ``_where(keep, new, old)`` splits it; a closure's derivative helpers
# (common/closures.py) pass it between the dict of its cells' and their list.
LINEAR_HELPERS = ("control_fill", "control_where", "closure_free_params",
                  "closure_free_values", "closure_free_bars", "closure_cell_tangents")


def linear_helper_rule(gen: Any, kind: str, args: list, t: str) -> list[cst.BaseStatement]:
    names = [a.value.value if isinstance(a.value, cst.Name) else None for a in args]
    bar = cst.Name(gen.bar(t))
    out: list[cst.BaseStatement] = []

    def flow(name: Optional[str], template: str, **nodes: cst.BaseExpression) -> None:
        if name:
            out.extend(gen.accumulate(name, parse_template_expression(template, b=bar,
                                                                      **nodes)))
    if kind == "control_fill":
        flow(names[0], "ad.control_unfill({b}, {x})", x=args[0].value)
    elif kind == "control_where":
        for name, side in ((names[1], "True"), (names[2], "False")):
            if name:
                flow(name, "ad.control_where_bar({k}, {b}, {x}, {s})", k=args[0].value,
                     x=cst.Name(name), s=cst.Name(side))
    elif kind == "closure_free_params":
        flow(names[0], "ad.free_params_bar({r}, {b})", r=cst.Name(t))
    elif kind == "closure_free_values":
        flow(names[0], "ad.free_values_bar({f}, {b})[0]", f=args[0].value)
        if len(args) > 1:
            flow(names[1], "ad.free_values_bar({f}, {b})[1]", f=args[0].value)
    elif kind == "closure_free_bars":
        flow(names[1], "ad.free_bars_bar({f}, {b})", f=args[0].value)
    elif kind == "closure_cell_tangents":
        flow(names[1], "ad.free_bars({f}, {b}, frozenset(ad.free_names({f})))",
             f=args[0].value)
    return out


def runtime_rule(gen: Any, stmt: cst.BaseStatement, call: cst.Call, args: list, t: str,
                 helper: str = "vjp_call", slots: Any = None) -> list[cst.BaseStatement]:
    """A callee only known at run time (a function passed as an argument): the cotangents
    come from ``ad.<helper>(f, args, kwargs, t_bar)``, one per positional argument; `slots`
    ((variable, index) pairs) says which to accumulate (default: the active positional)."""
    positional = [a for a in args if a.keyword is None and a.star != "**"]
    if slots is None and helper == "vjp_call" and any(
            _active_name(gen, a.value) for a in args if a.keyword is not None or a.star == "**"):
        return keyword_runtime_rule(gen, stmt, call, args, t)
    stars = [i for i, a in enumerate(positional) if a.star == "*"]
    if len(stars) > 1:
        raise gen.error(stmt, "more than one *-argument in a call of a function known only "
                        "at run time", "pass the arguments through one tuple")
    activity = _activity(gen, positional) if helper == "vjp_call" and slots is None else None
    temp, out = _runtime_helper_call(gen, helper, call, positional, args, t, activity)
    if slots is None:
        slots = [(_active_name(gen, a.value), i) for i, a in enumerate(positional)]
    after = len(positional) - 1 - stars[0] if stars else 0
    for name, index in slots:
        if not name:
            continue
        if stars and index == stars[0]:  # `*xs`: its cotangents are a run of the results
            end = f"len({temp}) - {after}" if after else ""
            picked = f"tuple({temp}[{index}:{end}])"
        elif stars and index > stars[0]:  # counted from the end
            picked = f"{temp}[{index - len(positional)}]"
        else:
            picked = f"{temp}[{index}]"
        out += gen.accumulate(name, parse_template_expression(picked))
    return out


def _activity(gen: Any, positional: list) -> Optional[cst.BaseExpression]:
    """Which positional arguments are active, as a tuple expression (a ``*xs`` argument
    spreads its one answer over its length) -- None when all are: ``vjp_call`` then leaves
    the inactive ones constant even where they hold floats (a custom_jvp rule's primals,
    reached from the transposition that needs only its tangents' cotangents)."""
    flags = [bool(_active_name(gen, a.value)) for a in positional]
    if all(flags):
        return None
    elements: list[cst.BaseElement] = []
    for a, on in zip(positional, flags):
        if a.star:
            elements.append(cst.StarredElement(parse_template_expression(
                "[{on}] * len({v})", on=cst.Name(str(on)), v=a.value)))
        else:
            elements.append(cst.Element(cst.Name(str(on))))
    return cst.Tuple(elements)


def _runtime_helper_call(gen: Any, helper: str, call: cst.Call, positional: list, args: list,
                         t: str, activity: Optional[cst.BaseExpression] = None
                         ) -> tuple[str, list[cst.BaseStatement]]:
    """``<temp> = ad.<helper>(f, (<positional>), {<keywords>}, t_bar[, activity])``: the temp
    and the line."""
    pos = cst.Tuple([cst.StarredElement(a.value) if a.star else cst.Element(a.value)
                     for a in positional]) if positional else cst.parse_expression("()")
    kw = cst.Dict([cst.StarredDictElement(a.value) if a.star == "**" else
                   cst.DictElement(cst.SimpleString(repr(a.keyword.value)), a.value)  # type: ignore[union-attr]
                   for a in args if a.keyword is not None or a.star == "**"])
    temp = gen.tmp()
    if activity is not None:
        return temp, [parse_template_statement(
            f"{{g}} = ad.{helper}({{f}}, {{p}}, {{k}}, {{b}}, {{a}})", g=cst.Name(temp),
            f=call.func, p=pos, k=kw, b=cst.Name(gen.bar(t)), a=activity)]
    return temp, [parse_template_statement(
        f"{{g}} = ad.{helper}({{f}}, {{p}}, {{k}}, {{b}})",
        g=cst.Name(temp), f=call.func, p=pos, k=kw, b=cst.Name(gen.bar(t)))]


def keyword_runtime_rule(gen: Any, stmt: cst.BaseStatement, call: cst.Call, args: list,
                         t: str, closure: str = "") -> list[cst.BaseStatement]:
    """`runtime_rule` for a call with differentiated keyword arguments:
    ``ad.vjp_call_keywords`` returns the positional cotangents and a dict of the keywords'.
    For a local function value `closure` that carries derivatives (its closure, or what a
    partial binds), ``ad.vjp_call_closure_keywords`` returns its cotangent third."""
    positional = [a for a in args if a.keyword is None and a.star != "**"]
    if any(a.star == "*" for a in positional[:-1]):
        raise gen.error(stmt, "a *-argument before others together with differentiated "
                        "keyword arguments in a call of a function known only at run time is "
                        "not supported", "pass the arguments one by one")
    helper = "vjp_call_closure_keywords" if closure else "vjp_call_keywords"
    temp, out = _runtime_helper_call(gen, helper, call, positional, args, t)
    if closure:
        out += gen.accumulate(closure, parse_template_expression(f"{temp}[2]"))
    for i, a in enumerate(positional):
        name = _active_name(gen, a.value)
        if name:  # (`*xs` last: the cotangents of the rest)
            picked = f"tuple({temp}[0][{i}:])" if a.star else f"{temp}[0][{i}]"
            out += gen.accumulate(name, parse_template_expression(picked))
    for a in args:
        name = _active_name(gen, a.value) if a.keyword is not None or a.star == "**" else None
        if not name:
            continue
        picked = f"ad.keyword_bars({temp}[1], {name})" if a.star == "**" else \
            f"ad.item({temp}[1], {a.keyword.value!r})"  # type: ignore[union-attr]
        out += gen.accumulate(name, parse_template_expression(picked))
    return out


def local_rule(gen: Any, stmt: cst.BaseStatement, callee: str, call: cst.Call, args: list,
               t: str) -> list[cst.BaseStatement]:
    """``t = f(...)`` for a local function value `f`. When `f` closes over differentiated
    values (a nested ``def`` or lambda), ``ad.vjp_call_closure`` also returns the cotangent
    of its closure, which flows back into `f` (and from there into the closed-over values)."""
    if callee not in gen.active:
        return runtime_rule(gen, stmt, call, args, t)
    if any(a.star or a.keyword is not None for a in args):  # f(x, *rest, rng=k, **options)
        return keyword_runtime_rule(gen, stmt, call, args, t, closure=callee)
    slots = [(_active_name(gen, a.value), i) for i, a in enumerate(args)]
    return runtime_rule(gen, stmt, call, args, t, "vjp_call_closure",
                        [*slots, (callee, len(args))])


def normalized_args(gen: Any, stmt: cst.BaseStatement, fn: Any, args: list) -> list:
    """The arguments of a call of `fn` as positional ones in its signature's order (keyword
    arguments moved into place, skipped parameters given their defaults): the run-time
    rules return one cotangent or tangent per position."""
    params = list(inspect.signature(fn).parameters.values())
    if any(a.star for a in args):
        raise gen.error(stmt, f"star-arguments in a differentiated call of lax.{fn.__name__} "
                        "are not supported", "pass the arguments one by one")
    positional = [a for a in args if a.keyword is None]
    keywords = {a.keyword.value: a for a in args if a.keyword is not None}
    if len(positional) >= len(params) or params[len(positional)].kind == params[0].VAR_POSITIONAL:
        if keywords:
            raise gen.error(stmt, f"keyword arguments after the operands of lax.{fn.__name__} "
                            "are not supported")
        return positional
    out = list(positional)
    named = [p for p in params[len(positional):] if p.kind != p.VAR_POSITIONAL]
    last = max((i for i, p in enumerate(named) if p.name in keywords), default=-1)
    for p in named[:last + 1]:
        if p.name in keywords:
            out.append(keywords.pop(p.name).with_changes(keyword=None, equal=cst.MaybeSentinel.DEFAULT))
        elif p.default is not p.empty:
            out.append(cst.Arg(cst.parse_expression(repr(p.default))))
        else:
            raise gen.error(stmt, f"lax.{fn.__name__}: missing argument `{p.name}`")
    if keywords:
        raise gen.error(stmt, f"lax.{fn.__name__} got unexpected keyword arguments "
                        f"{sorted(keywords)}")
    return out


def custom_rule(gen: Any, stmt: cst.BaseStatement, fn: Any, call: cst.Call, args: list,
                t: str) -> list[cst.BaseStatement]:
    """``t = f(...)`` for a `custom_vjp` function: its own fwd/bwd rules, run by
    ``ad.custom_vjp_bwd``, give one cotangent per positional parameter."""
    if any(a.star for a in args):
        raise gen.error(stmt, "star-arguments in a call of a custom_vjp function are not "
                        "supported yet", "pass the arguments one by one")
    params = [n for n, p in inspect.signature(fn.fun).parameters.items()
              if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    slots: list[tuple[str, int]] = []  # (active variable, index of its cotangent)
    for i, a in enumerate(args):
        name = _active_name(gen, a.value)
        if name is None:
            continue
        index = i if a.keyword is None else (
            params.index(a.keyword.value) if a.keyword.value in params else -1)
        if index < 0:
            raise gen.error(stmt, f"a differentiated value passed as keyword-only argument "
                            f"`{a.keyword.value}` of a custom_vjp function is not supported")
        if index in fn.nondiff_argnums:
            raise gen.error(stmt, f"argument {index} of the custom_vjp function "
                            f"{fn.__name__} is in nondiff_argnums, but it depends on a "
                            "differentiated value",
                            "nondiff_argnums is for static arguments; remove it from "
                            "nondiff_argnums, or wrap the value in lax.stop_gradient")
        slots.append((name, index))
    return runtime_rule(gen, stmt, call, args, t, "custom_vjp_bwd", slots)


def cotangent_param(generated: Any) -> str:
    """The keyword a generated vjp function takes its output cotangent by."""
    return getattr(generated, "cotangent_param", "_out_bar")
