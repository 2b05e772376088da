"""Forward mode of the run-time helpers that generated code calls (``ad.add``, ``ad.item``,
a closure's and a partial's derivative helpers): second derivatives -- forward mode over
generated reverse-mode code -- run through them.

Each helper is linear in the derivatives it is given, so the tangent of its result is the
same helper, or its partner, applied to the tangents. A rule maps ``(t, x, d)`` -- the
result's name, the arguments' source texts and their tangents' texts -- to the expression
of the result's tangent. transforms/common/classify.py names each helper's kind; the reverse
rules of the same helpers are adjoints.cotangent_helper_rule.
"""

from __future__ import annotations

from typing import Callable

Rule = Callable[[str, list[str], list[str]], str]

RULES: dict[str, Rule] = {
    # containers of cotangents (ad/cotangents.py)
    "cotangent_add": lambda t, x, d: f"ad.add({d[0]}, {d[1]})",
    "cotangent_item": lambda t, x, d: f"ad.item({d[0]}, {x[1]})",
    "cotangent_index_bar": lambda t, x, d: f"ad.index_bar({x[0]}, {x[1]}, {d[2]})",
    "cotangent_appended": lambda t, x, d: f"ad.appended_tangent({x[0]}, {d[0]}, {d[1]})",
    "cotangent_unpacked": lambda t, x, d: f"ad.unpacked_cotangent({d[0]}, {x[1]})",
    "cotangent_with_item": lambda t, x, d: f"ad.with_item_tangent({x[0]}, {d[0]}, {x[1]}, "
                                           f"{d[2]})",
    "cotangent_without_item": lambda t, x, d: f"ad.without_item({d[0]}, {x[1]})",
    "cotangent_unpacked_dict": lambda t, x, d: f"ad.unpacked_dict_bar({d[0]}, {x[1]}, "
                                               f"{x[2]})",
    "cotangent_items_bar": lambda t, x, d: f"ad.items_bar({x[0]}, {d[1]})",
    "cotangent_values_bar": lambda t, x, d: f"ad.values_bar({x[0]}, {d[1]})",
    "cotangent_keyword_bars": lambda t, x, d: f"ad.keyword_bars({d[0]}, {x[1]})",
    "cotangent_attribute_bar": lambda t, x, d: f"ad.attribute_bar({x[0]}, {x[1]}, {d[2]})",
    "cotangent_attribute_tangent": lambda t, x, d: f"ad.attribute_tangent({d[0]}, {x[1]})",
    # the reverse rules of lax control flow (ad/control.py, which forward mode reads for
    # second derivatives): `fill(bar, primal)` -- zeros where bar is None, shaped by primal
    # -- and `_where(keep, new, old)`, a select leaf by leaf
    "control_fill": lambda t, x, d: f"ad.control_fill({d[0]}, {x[1]})",
    "control_where": lambda t, x, d: f"ad.control_where({x[0]}, ad.control_fill({d[1]}, "
                                     f"{x[1]}), ad.control_fill({d[2]}, {x[2]}))",
    # sort's derivatives (ad/indexing.py): permutations of `t`, constant in `x`
    "sort_permuted": lambda t, x, d: f"ad.sorted_tangent({d[0]}, {x[1]}, {x[2]}, {x[3]})",
    "sort_unpermuted": lambda t, x, d: f"ad.unsorted_cotangent({d[0]}, {x[1]}, {x[2]}, "
                                       f"{x[3]})",
    # a closure's derivative: the dict of its cells' (common/closures.py)
    "closure_free_params": lambda t, x, d: f"ad.free_params_tangent({t}, {d[0]})",
    "closure_free_values": lambda t, x, d: f"ad.free_values_tangent({d[0]}, {d[1]}, {x[0]}, "
                                           f"{x[1]})",
    "closure_free_bars": lambda t, x, d: f"ad.free_bars({x[0]}, {d[1]}, {x[2]})",
    "closure_cell_tangents": lambda t, x, d: f"ad.cell_tangents({x[0]}, {d[1]})",
    # a partial's derivative: its bound arguments' (common/partials.py)
    "partial_bound": lambda t, x, d: f"ad.partial_bound_tangent({x[0]}, {d[0]}, {d[1]}, "
                                     f"{d[2]}, {x[1]})",
    "partial_make_vjp": lambda t, x, d: f"ad.partial_make_vjp({x[0]}, {x[1]}, {d[2]})",
    "partial_pair": lambda t, x, d: f"ad.partial_pair({x[0]}, {d[1]})",
    "partial_own_bars": lambda t, x, d: f"ad.partial_own_bars({x[0]}, {d[1]}, {d[2]} or {{}}, "
                                        f"{d[3] if len(d) > 3 else None})",
}
