"""Products: ``matmul``, ``dot``, ``vdot``, ``inner``, ``outer``, ``tensordot``, ``einsum``,
``kron`` and ``trace`` -- composites over the `dot_general` primitive, with NumPy's shape
rules and JAX's dtype promotion."""

from __future__ import annotations

import builtins
from typing import Any, Optional, Sequence

import numpy as np

from transpiler import dtypes
from transpiler.errors import located
from transpiler.numpy.creation import astype, eye, ones
from transpiler.numpy.complex_numbers import conj
from transpiler.numpy.math import multiply, where
from transpiler.numpy.reductions import sum as _reduce_sum
from transpiler.numpy.shape import broadcast_to, moveaxis, reshape, transpose
from transpiler.primitives.core import (ShapedArray, abstractify, broadcast_shapes,
                                        normalize_axis, promote_avals, shape_error)
from transpiler.primitives.dot import check_dot_shapes, dot_general as _dot_general_p

__all__ = ["matmul", "dot", "vdot", "inner", "outer", "tensordot", "einsum", "kron", "trace",
           "matvec", "vecmat", "vecdot", "einsum_path"]


def _dot(op: str, a: Any, b: Any, contracting: tuple[Sequence[int], Sequence[int]],
         batch: tuple[Sequence[int], Sequence[int]] = ((), ()),
         preferred_element_type: Any = None) -> Any:
    """Check shapes under the user-facing name `op`, then bind `dot_general`."""
    numbers = ((tuple(contracting[0]), tuple(contracting[1])), (tuple(batch[0]), tuple(batch[1])))
    check_dot_shapes(op, abstractify(a, 0, op), abstractify(b, 1, op), numbers)
    return _dot_general_p(a, b, dimension_numbers=numbers,
                          preferred_element_type=_preferred(preferred_element_type))


def _preferred(dtype: Any) -> Optional[np.dtype]:
    return None if dtype is None else dtypes.canonicalize(dtype)


def _sum_axes(x: Any, axes: Sequence[int]) -> Any:
    """Sum `x` over `axes` keeping its dtype: a contraction with a vector of ones."""
    if not axes:
        return x
    aval = abstractify(x)
    shape = aval.shape
    ones_ = ones(tuple([shape[a] for a in axes]), dtype=aval.dtype)
    return _dot_general_p(x, ones_, dimension_numbers=((tuple(axes), tuple(range(len(axes)))),
                                                       ((), ())))


def _ndim_at_least_1(op: str, *avals: ShapedArray) -> None:
    for i, aval in enumerate(avals):
        if aval.ndim == 0:
            raise shape_error(f"{op}: operand {i} must have at least 1 dimension, got a scalar "
                              f"{aval.str_short()}", "use jnp.multiply (or *) for scalars")


# --- matmul, dot, vdot, inner, outer, tensordot -------------------------------------------

def matmul(a: Any, b: Any, *, precision: Any = None, preferred_element_type: Any = None) -> Any:
    """``a @ b`` with NumPy's rules: 1-d operands are vectors, leading dims broadcast."""
    av, bv = abstractify(a, 0, "matmul"), abstractify(b, 1, "matmul")
    _ndim_at_least_1("matmul", av, bv)
    lhs_k, rhs_k = av.ndim - 1, builtins.max(bv.ndim - 2, 0)
    if av.shape[lhs_k] != bv.shape[rhs_k]:
        raise shape_error(f"matmul: contracting dimensions differ: lhs {av.str_short()} dim "
                          f"{lhs_k} ({av.shape[lhs_k]}) vs rhs {bv.str_short()} dim {rhs_k} "
                          f"({bv.shape[rhs_k]})", "the last axis of a must match the "
                          "second-to-last axis of b (the only axis of a 1-d b)")
    if av.ndim == 1 or bv.ndim == 1:  # a vector contracts against every batch of the other
        return _dot("matmul", a, b, ((lhs_k,), (rhs_k,)),
                    preferred_element_type=preferred_element_type)
    batch = broadcast_shapes("matmul", av.shape[:-2], bv.shape[:-2])
    if av.shape[:-2] != batch:
        a = broadcast_to(a, batch + av.shape[-2:])
    if bv.shape[:-2] != batch:
        b = broadcast_to(b, batch + bv.shape[-2:])
    n = len(batch)
    return _dot("matmul", a, b, ((n + 1,), (n,)), (tuple(range(n)), tuple(range(n))),
                preferred_element_type)


def dot(a: Any, b: Any, *, precision: Any = None, preferred_element_type: Any = None) -> Any:
    """NumPy's ``dot``: scalars multiply; otherwise contract a's last axis with b's
    second-to-last (its only axis when b is 1-d)."""
    av, bv = abstractify(a, 0, "dot"), abstractify(b, 1, "dot")
    if av.ndim == 0 or bv.ndim == 0:
        out = multiply(a, b)
        return out if preferred_element_type is None else astype(out, preferred_element_type)
    rhs_k = 0 if bv.ndim == 1 else bv.ndim - 2
    return _dot("dot", a, b, ((av.ndim - 1,), (rhs_k,)),
                preferred_element_type=preferred_element_type)


def vdot(a: Any, b: Any, *, precision: Any = None, preferred_element_type: Any = None) -> Any:
    """Dot product of the flattened operands, conjugating the first."""
    av, bv = abstractify(a, 0, "vdot"), abstractify(b, 1, "vdot")
    if av.size != bv.size:
        raise shape_error(f"vdot: operands have different sizes: {av.str_short()} "
                          f"({av.size} elements) vs {bv.str_short()} ({bv.size} elements)")
    return _dot("vdot", reshape(conj(a), (-1,)), reshape(b, (-1,)), ((0,), (0,)),
                preferred_element_type=preferred_element_type)


def inner(a: Any, b: Any, *, precision: Any = None, preferred_element_type: Any = None) -> Any:
    """Contract the last axes of `a` and `b`; scalars multiply."""
    av, bv = abstractify(a, 0, "inner"), abstractify(b, 1, "inner")
    if av.ndim == 0 or bv.ndim == 0:
        return multiply(a, b)
    return _dot("inner", a, b, ((av.ndim - 1,), (bv.ndim - 1,)),
                preferred_element_type=preferred_element_type)


def outer(a: Any, b: Any, out: Any = None) -> Any:
    """``outer(a, b)[i, j] = a.ravel()[i] * b.ravel()[j]``."""
    if out is not None:
        raise located(NotImplementedError, "outer: the out argument is not supported (arrays are "
                      "immutable)", "use the returned value")
    return multiply(reshape(a, (-1, 1)), reshape(b, (1, -1)))


def _tensordot_axes(axes: Any, av: ShapedArray, bv: ShapedArray) -> tuple[list[int], list[int]]:
    if isinstance(axes, (builtins.int, np.integer)):
        n = builtins.int(axes)
        if n < 0 or n > builtins.min(av.ndim, bv.ndim):
            raise shape_error(f"tensordot: axes={n} is out of range for {av.str_short()} and "
                              f"{bv.str_short()}", "axes must be between 0 and the smaller rank")
        return list(range(av.ndim - n, av.ndim)), list(range(n))
    try:
        a_axes, b_axes = axes
    except (TypeError, ValueError):
        raise shape_error(f"tensordot: axes must be an int or a pair of sequences, got {axes!r}")\
            from None
    a_axes = [a_axes] if isinstance(a_axes, (builtins.int, np.integer)) else list(a_axes)
    b_axes = [b_axes] if isinstance(b_axes, (builtins.int, np.integer)) else list(b_axes)
    if len(a_axes) != len(b_axes):
        raise shape_error(f"tensordot: axes {a_axes} and {b_axes} have different lengths")
    return ([normalize_axis(builtins.int(x), av.ndim, "tensordot") for x in a_axes],
            [normalize_axis(builtins.int(x), bv.ndim, "tensordot") for x in b_axes])


def tensordot(a: Any, b: Any, axes: Any = 2, *, precision: Any = None,
              preferred_element_type: Any = None) -> Any:
    """Sum products over `axes` (an int: a's last n axes with b's first n; or two lists)."""
    av, bv = abstractify(a, 0, "tensordot"), abstractify(b, 1, "tensordot")
    a_axes, b_axes = _tensordot_axes(axes, av, bv)
    return _dot("tensordot", a, b, (a_axes, b_axes), preferred_element_type=preferred_element_type)


# --- kron and trace -------------------------------------------------------------------------

def kron(a: Any, b: Any) -> Any:
    """Kronecker product: blocks ``a[i, j] * b`` (operands padded with leading 1s)."""
    av, bv = abstractify(a, 0, "kron"), abstractify(b, 1, "kron")
    nd = builtins.max(av.ndim, bv.ndim)
    a_shape = (1,) * (nd - av.ndim) + av.shape
    b_shape = (1,) * (nd - bv.ndim) + bv.shape
    a_spread = reshape(a, tuple(d for s in a_shape for d in (s, 1)))
    b_spread = reshape(b, tuple(d for s in b_shape for d in (1, s)))
    return reshape(multiply(a_spread, b_spread), tuple(x * y for x, y in zip(a_shape, b_shape)))


def _sum_dtype(dtype: np.dtype) -> np.dtype:
    """JAX's sum dtype: bools and narrow integers accumulate in the default int width."""
    if dtype == dtypes.bool_ or (dtype.kind == "i" and dtype.itemsize < 4):
        return dtypes.default_int()
    if dtype.kind == "u" and dtype.itemsize < 4:
        return np.dtype(np.uint32)
    return dtype


def trace(a: Any, offset: int = 0, axis1: int = 0, axis2: int = 1, dtype: Any = None,
          out: Any = None) -> Any:
    """Sum along a diagonal of the 2-d slices picked by `axis1`/`axis2`."""
    if out is not None:
        raise located(NotImplementedError, "trace: the out argument is not supported",
                      "use the returned value (arrays are immutable)")
    aval = abstractify(a, 0, "trace")
    if aval.ndim < 2:
        raise shape_error(f"trace: needs an array of rank >= 2, got {aval.str_short()}")
    ax1 = normalize_axis(axis1, aval.ndim, "trace")
    ax2 = normalize_axis(axis2, aval.ndim, "trace")
    if ax1 == ax2:
        raise shape_error(f"trace: axis1 and axis2 must differ, both are {ax1}")
    target = dtypes.canonicalize(dtype) if dtype is not None else _sum_dtype(aval.dtype)
    x = astype(a, target) if target != aval.dtype else a
    mask_shape = [1] * aval.ndim
    mask_shape[ax1], mask_shape[ax2] = aval.shape[ax1], aval.shape[ax2]
    mask = eye(aval.shape[ax1], aval.shape[ax2], k=offset, dtype=dtypes.bool_)
    if ax1 > ax2:
        mask = transpose(mask)
    masked = where(reshape(mask, tuple(mask_shape)), x, astype(0, target))
    return _sum_axes(masked, sorted((ax1, ax2)))


# --- einsum ---------------------------------------------------------------------------------

def _parse_einsum(subscripts: str, avals: Sequence[ShapedArray]) -> tuple[list[str], str]:
    """Per-operand label strings and the output labels, with ``...`` expanded to fresh labels."""
    spec = subscripts.replace(" ", "")
    inputs_spec, arrow, output_spec = spec.partition("->")
    inputs = inputs_spec.split(",")
    if len(inputs) != len(avals):
        raise shape_error(f"einsum: subscripts {subscripts!r} name {len(inputs)} operands but "
                          f"{len(avals)} were given")
    used = set(spec) - set(",->.")
    for ch in used:
        if not ch.isalpha():
            raise shape_error(f"einsum: invalid subscript {ch!r} in {subscripts!r}",
                              "use letters a-z, A-Z and '...'")
    fresh = (chr(c) for c in range(0x100, 0x2000) if chr(c).isalpha() and chr(c) not in used)
    ellipsis_rank = 0
    for term, aval in zip(inputs, avals):
        named = len(term.replace("...", ""))
        if "..." in term:
            ellipsis_rank = builtins.max(ellipsis_rank, aval.ndim - named)
        if ("..." in term and named > aval.ndim) or ("..." not in term and named != aval.ndim):
            raise shape_error(f"einsum: subscripts {term!r} do not match operand "
                              f"{aval.str_short()} of rank {aval.ndim}")
    ell = "".join(next(fresh) for _ in range(ellipsis_rank))
    labels = []
    for term, aval in zip(inputs, avals):
        k = aval.ndim - len(term.replace("...", ""))
        labels.append(term.replace("...", ell[ellipsis_rank - k:]) if "..." in term else term)
    if arrow:
        out = output_spec.replace("...", ell)
        if "." in out:
            raise shape_error(f"einsum: malformed output subscripts {output_spec!r}")
    else:
        counts = {ch: sum(term.count(ch) for term in inputs) for ch in used}
        out = ell + "".join(sorted(ch for ch, n in counts.items() if n == 1))
    for ch in out:
        if out.count(ch) > 1:
            raise shape_error(f"einsum: output subscript {ch!r} appears more than once")
        if not any(ch in term for term in labels):
            raise shape_error(f"einsum: output subscript {ch!r} does not appear in the inputs")
    return labels, out


def _take_diagonals(x: Any, labels: str) -> tuple[Any, str]:
    """Collapse a label repeated within one operand (``ii``) to its diagonal."""
    repeated = next((ch for ch in labels if labels.count(ch) > 1), None)
    while repeated is not None:
        aval = abstractify(x)
        p = labels.index(repeated)
        q = labels.index(repeated, p + 1)
        if aval.shape[p] != aval.shape[q]:
            raise shape_error(f"einsum: subscript {repeated!r} is repeated for dimensions of "
                              f"different sizes {aval.shape[p]} and {aval.shape[q]}")
        mask_shape = tuple(aval.shape[p] if k in (p, q) else 1 for k in range(aval.ndim))
        mask = reshape(eye(aval.shape[p], dtype=dtypes.bool_), mask_shape)
        x = _sum_axes(where(mask, x, astype(0, aval.dtype)), [q])
        labels = labels[:q] + labels[q + 1:]
        repeated = next((ch for ch in labels if labels.count(ch) > 1), None)
    return x, labels


def _cast_to(x: Any, dtype: np.dtype) -> Any:
    return astype(x, dtype) if abstractify(x).dtype != dtype else x


def _kept_axes(shapes: list[tuple[int, ...]], labels: list[str]) -> list[list[int]]:
    """Broadcasting of size-1 dimensions: for each operand, the axes it keeps. A label of
    size 1 where another operand has size n is dropped from that operand (its values are
    constant along the label)."""
    sizes: dict[str, int] = {}
    for shape, term in zip(shapes, labels):
        for ch, n in zip(term, shape):
            if n != 1 and sizes.get(ch, 1) not in (1, n):
                raise shape_error(f"einsum: subscript {ch!r} has incompatible sizes "
                                  f"{sizes[ch]} and {n}")
            sizes[ch] = n if n != 1 else sizes.get(ch, 1)
    return [[j for j, ch in enumerate(term) if not (shape[j] == 1 and sizes[ch] != 1)]
            for shape, term in zip(shapes, labels)]


def _einsum_plan(avals: Sequence[ShapedArray], labels: list[str],
                 out: str) -> list[tuple[str, list[int], list[int], str]]:
    """For each operand, from shapes and labels alone: its labels, the axes it keeps after
    taking diagonals (size-1 broadcasting), the axes summed out because no other operand
    nor the output has them, and the labels it is left with."""
    diagonal = ["".join(ch for k, ch in enumerate(term) if ch not in term[:k])
                for term in labels]
    shapes = [tuple(n for k, (ch, n) in enumerate(zip(term, aval.shape)) if ch not in term[:k])
              for term, aval in zip(labels, avals)]
    kept = _kept_axes(shapes, diagonal)
    unified = ["".join(term[j] for j in keep) for term, keep in zip(diagonal, kept)]
    plan = []
    for i, term in enumerate(unified):
        others = out + "".join(unified[:i] + unified[i + 1:])
        summed = [j for j, ch in enumerate(term) if ch not in others]
        plan.append((labels[i], kept[i], summed, "".join(ch for ch in term if ch in others)))
    return plan


def _prepared(x: Any, labels: str, keep: list[int], summed: list[int]) -> Any:
    """One operand as `_einsum_plan` says: diagonals taken, size-1 axes dropped, axes
    summed out. (Operands go one at a time through this: no list is updated in place, so
    the transforms that generate code from this source see every step.)"""
    x, _ = _take_diagonals(x, labels)
    shape = abstractify(x).shape
    if len(keep) != len(shape):
        x = reshape(x, tuple(shape[j] for j in keep))
    return _sum_axes(x, summed)


def einsum(subscripts: str, *operands: Any, optimize: Any = "optimal", precision: Any = None,
           preferred_element_type: Any = None) -> Any:
    """Einstein summation: diagonals, single-operand sums, then pairwise left-to-right
    `dot_general` contractions and a final transpose to the output order."""
    if not isinstance(subscripts, str):
        raise located(NotImplementedError, "einsum: only the subscripts-string form is supported",
                      "pass the subscripts as one string: einsum('ij,jk->ik', a, b)")
    avals = [abstractify(x, i, "einsum") for i, x in enumerate(operands)]
    labels, out = _parse_einsum(subscripts, avals)
    dtype = promote_avals(*avals)[0] if avals else dtypes.default_float()
    plan = _einsum_plan(avals, labels, out)
    finals = [step[3] for step in plan]
    result = _prepared(_cast_to(operands[0], dtype), plan[0][0], plan[0][1], plan[0][2])
    current = finals[0]
    for i in range(1, len(operands)):
        rhs = _prepared(_cast_to(operands[i], dtype), plan[i][0], plan[i][1], plan[i][2])
        rhs_labels = finals[i]
        later = out + "".join(finals[i + 1:])
        shared = [ch for ch in current if ch in rhs_labels]
        batch = [ch for ch in shared if ch in later]
        contract = [ch for ch in shared if ch not in later]
        numbers = (([current.index(c) for c in contract], [rhs_labels.index(c) for c in contract]),
                   ([current.index(c) for c in batch], [rhs_labels.index(c) for c in batch]))
        result = _dot("einsum", result, rhs, numbers[0], numbers[1])
        current = "".join(batch) + "".join(ch for ch in current if ch not in shared) + \
            "".join(ch for ch in rhs_labels if ch not in shared)
    result = transpose(result, [current.index(ch) for ch in out])
    if preferred_element_type is not None:
        result = astype(result, preferred_element_type)
    return result


# --- the array API's vector products -----------------------------------------------------

def matvec(x1: Any, x2: Any, /) -> Any:
    """Matrix-vector products over stacks: ``x1 (..., M, N) @ x2 (..., N) -> (..., M)``."""
    av1, av2 = abstractify(x1, 0, "matvec"), abstractify(x2, 1, "matvec")
    if av1.ndim < 2 or av2.ndim < 1:
        raise ValueError(f"matvec: x1 must be at least 2-d and x2 at least 1-d, got shapes "
                         f"{av1.shape} and {av2.shape}")
    out = matmul(x1, reshape(x2, (*av2.shape, 1)))
    return reshape(out, abstractify(out).shape[:-1])


def vecmat(x1: Any, x2: Any, /) -> Any:
    """Vector-matrix products over stacks: ``conj(x1) (..., M) @ x2 (..., M, N) ->
    (..., N)``."""
    av1, av2 = abstractify(x1, 0, "vecmat"), abstractify(x2, 1, "vecmat")
    if av1.ndim < 1 or av2.ndim < 2:
        raise ValueError(f"vecmat: x1 must be at least 1-d and x2 at least 2-d, got shapes "
                         f"{av1.shape} and {av2.shape}")
    out = matmul(reshape(conj(x1), (*av1.shape[:-1], 1, av1.shape[-1])), x2)
    shape = abstractify(out).shape
    return reshape(out, (*shape[:-2], shape[-1]))


def vecdot(x1: Any, x2: Any, /, *, axis: int = -1, precision: Any = None,
           preferred_element_type: Any = None) -> Any:
    """The conjugate dot product ``sum(conj(x1) * x2)`` along `axis`, broadcasting the
    other axes."""
    av1, av2 = abstractify(x1, 0, "vecdot"), abstractify(x2, 1, "vecdot")
    if av1.ndim == 0 or av2.ndim == 0 or av1.shape[axis] != av2.shape[axis]:
        raise ValueError(f"axes must match; got shapes {av1.shape} and {av2.shape} with "
                         f"axis={axis}")
    product = multiply(conj(moveaxis(x1, axis, -1)), moveaxis(x2, axis, -1))
    out = _reduce_sum(product, axis=-1)
    target = _preferred(preferred_element_type)
    return out if target is None else astype(out, target)


def einsum_path(subscripts: str, /, *operands: Any,
                optimize: Any = "auto") -> tuple[list, str]:
    """The contraction order `einsum` could use (NumPy's ``einsum_path`` on the operands'
    shapes): the list of contracted operand pairs, and NumPy's report as a string."""
    if optimize is True or optimize == "auto":
        optimize = "greedy"
    shapes = [np.broadcast_to(np.zeros((), abstractify(op).dtype), abstractify(op).shape)
              for op in operands]
    path, report = np.einsum_path(subscripts, *shapes, optimize=optimize)
    return [tuple(step) for step in path[1:]], report
