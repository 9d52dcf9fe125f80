"""Numeric checks, in one place: central finite differences in float64 (the independent truth the
autodiff exhibits check JAX's gradients against) and the comparison of two results at the
precision of their dtype.

Finite differences. Only public JAX is used: the function is evaluated under
``jax.enable_x64(True)`` on float64 copies of the floating-point arguments (jitted when it can
be, eagerly otherwise), one element at a time: ``(f(x + h e_i) - f(x - h e_i)) / 2h`` with
``h = cbrt(eps64) * max(1, |x_i|)`` (about 6e-6 for ``|x_i| <= 1``, truncation and rounding
errors of order 1e-11). At a kink the left and right one-sided differences disagree; that element
is reported as ``None`` (as in ``../shared/cases``: "null where the left and right differences
disagree").

Comparison. :func:`tolerance` is the tolerance of a dtype (float64 1e-6, float32 1e-4, narrower
floats 1e-2), scaled by ``max(1, |reference|)``; :func:`compare` holds a result to a reference at
it, :func:`max_abs_diff` / :func:`max_abs_diff_leaves` give the largest difference. In all three
a NaN on both sides (or the same infinity on both) counts as equal, and a NaN/Inf on one side
only makes the difference unbounded (``None``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

# h = eps^(1/3) * max(1, |x|) balances truncation (h^2 f''') against rounding (eps f / h).
_STEP = float(np.finfo(np.float64).eps) ** (1.0 / 3.0)
# One-sided differences differ by about h * f'' where f is smooth; a kink shows as an O(1) gap.
_KINK_RTOL = 1e-2
# More elements than this are sampled evenly; the others are reported as None.
MAX_ELEMENTS = 4096
# At most this many argument elements are read by all the evaluations together (two per
# sample), and at least MIN_SAMPLES elements are differenced: a huge argument stays checkable.
MAX_WORK = 200_000_000
MIN_SAMPLES = 16


@dataclass(frozen=True)
class FiniteDifferences:
    """Central differences of a scalar function, one entry per differentiated argument.

    ``values[k]`` has the pytree structure of ``args[argnums[k]]`` with float64 ``numpy`` arrays
    as leaves (NaN where ``known[k]`` is false); ``known[k]`` the same structure with bool arrays:
    false at a kink or at an element not sampled (more than :data:`MAX_ELEMENTS`). ``sampled[k]``
    (same structure, bool) true where the difference was taken: sampled but not known is a kink
    when the value is finite, and a NaN/Inf difference (``f`` not finite near the point) when not.
    """

    values: list[Any]
    known: list[Any]
    sampled: list[Any] | None = None

    def nested(self) -> list[Any]:
        """``values`` as nested lists of floats, ``None`` where not known (JSON-ready)."""
        out = []
        for value, known in zip(self.values, self.known, strict=True):
            out.append(
                jax.tree.map(lambda v, k: _nested_array(np.asarray(v), np.asarray(k)), value, known)
            )
        return [_tree_to_lists(v) for v in out]


def _nested_array(value: np.ndarray, known: np.ndarray) -> Any:
    if value.ndim == 0:
        return float(value) if bool(known) else None
    return [_nested_array(v, k) for v, k in zip(value, known, strict=True)]


def _tree_to_lists(tree: Any) -> Any:
    """Containers to lists (dicts in key order, as ``tree_leaves``), leaves kept."""
    if isinstance(tree, dict):
        return [_tree_to_lists(tree[k]) for k in sorted(tree)]
    if isinstance(tree, (list, tuple)):
        return [_tree_to_lists(t) for t in tree]
    return tree


def is_float_leaf(x: Any) -> bool:
    """True for a floating-point array (bfloat16 and float16 included) or a Python float: the
    leaves that get a gradient."""
    if isinstance(x, float):
        return True
    dtype = getattr(x, "dtype", None)
    # jnp.issubdtype knows JAX's extended floats (bfloat16, float8_*), numpy's does not.
    return dtype is not None and bool(jnp.issubdtype(dtype, jnp.floating))


def _to_float64(x: Any) -> Any:
    return np.asarray(x, dtype=np.float64) if is_float_leaf(x) else x


def _scalar(value: Any) -> float:
    arr = np.asarray(value)
    if arr.shape != ():
        raise TypeError(f"finite differences need a scalar output, got shape {arr.shape}")
    return float(arr)


def central_differences(
    fun: Callable[..., Any], args: Sequence[Any], argnums: Sequence[int]
) -> FiniteDifferences:
    """Central differences in float64 of the scalar ``fun(*args)`` w.r.t. ``args[i]`` for ``i``
    in ``argnums`` (only their floating-point leaves; other leaves get NaN and ``known`` false).

    ``fun`` receives float64 copies of the floating-point leaves of every argument. Raises
    ``TypeError`` when the output is not a scalar, and whatever ``fun`` raises.
    """
    with jax.enable_x64(True):
        args64 = [jax.tree.map(_to_float64, a) for a in args]
        evaluate = _evaluator(fun, args64)
        positions = _positions(args64, argnums)
        leaves = [[np.array(x, copy=True) for x in jax.tree.leaves(args64[i])] for i in argnums]
        values = [
            [np.full(np.shape(x), np.nan, np.float64) for x in leaf_list] for leaf_list in leaves
        ]
        known = [[np.zeros(np.shape(x), bool) for x in leaf_list] for leaf_list in leaves]
        sampled = [[np.zeros(np.shape(x), bool) for x in leaf_list] for leaf_list in leaves]
        f0 = evaluate(argnums, leaves)
        for k, leaf_index, flat_index in positions:
            leaf = leaves[k][leaf_index]
            flat = leaf.reshape(-1) if leaf.ndim else None
            x = float(flat[flat_index]) if flat is not None else float(leaf)
            h = _STEP * max(1.0, abs(x))
            f_plus = _perturbed(evaluate, argnums, leaves, k, leaf_index, flat_index, x + h)
            f_minus = _perturbed(evaluate, argnums, leaves, k, leaf_index, flat_index, x - h)
            central = (f_plus - f_minus) / (2 * h)
            left, right = (f0 - f_minus) / h, (f_plus - f0) / h
            scale = max(1.0, abs(left), abs(right))
            smooth = math.isfinite(central) and abs(left - right) <= _KINK_RTOL * scale
            np.put(values[k][leaf_index], flat_index, central)
            np.put(known[k][leaf_index], flat_index, smooth)
            np.put(sampled[k][leaf_index], flat_index, True)
        treedefs = [jax.tree.structure(args64[i]) for i in argnums]
        return FiniteDifferences(
            values=[jax.tree.unflatten(t, v) for t, v in zip(treedefs, values, strict=True)],
            known=[jax.tree.unflatten(t, k) for t, k in zip(treedefs, known, strict=True)],
            sampled=[jax.tree.unflatten(t, k) for t, k in zip(treedefs, sampled, strict=True)],
        )


def sample_count(total: int, evaluated: int) -> int:
    """How many of ``total`` differentiable elements are differenced when each evaluation of
    ``fun`` reads ``evaluated`` elements: all up to :data:`MAX_ELEMENTS`, and at most
    :data:`MAX_WORK` elements read over the two evaluations per sample (at least
    :data:`MIN_SAMPLES`): a 4,000 x 4,000 argument gets 16 samples, not 4,096."""
    by_work = MAX_WORK // max(1, 2 * evaluated)
    return min(total, MAX_ELEMENTS, max(MIN_SAMPLES, by_work))


def _positions(args64: Sequence[Any], argnums: Sequence[int]) -> list[tuple[int, int, int]]:
    """``(k, leaf_index, flat_index)`` of the elements to difference, evenly spaced over the
    floating leaves of the differentiated arguments (without listing every element first)."""
    leaves = [
        (k, leaf_index, int(np.size(leaf)))
        for k, i in enumerate(argnums)
        for leaf_index, leaf in enumerate(jax.tree.leaves(args64[i]))
        if is_float_leaf(leaf)
    ]
    total = sum(size for _, _, size in leaves)
    evaluated = sum(int(np.size(x)) for a in args64 for x in jax.tree.leaves(a))
    n = sample_count(total, evaluated)
    if n >= total:
        picks = np.arange(total)
    else:
        picks = np.unique(np.linspace(0, total - 1, n).round().astype(np.int64))
    starts = np.cumsum([0] + [size for _, _, size in leaves])
    out = []
    for p in picks.tolist():
        j = int(np.searchsorted(starts, p, side="right")) - 1
        k, leaf_index, _ = leaves[j]
        out.append((k, leaf_index, p - int(starts[j])))
    return out


def _perturbed(
    evaluate: Callable[[Sequence[int], list[list[np.ndarray]]], float],
    argnums: Sequence[int],
    leaves: list[list[np.ndarray]],
    k: int,
    leaf_index: int,
    flat_index: int,
    x: float,
) -> float:
    leaf = leaves[k][leaf_index]
    old = float(leaf.reshape(-1)[flat_index]) if leaf.ndim else float(leaf)
    if leaf.ndim:
        leaf.reshape(-1)[flat_index] = x
    else:
        leaves[k][leaf_index] = np.array(x)
    try:
        return evaluate(argnums, leaves)
    finally:
        if leaf.ndim:
            leaf.reshape(-1)[flat_index] = old
        else:
            leaves[k][leaf_index] = np.array(old)


def _evaluator(
    fun: Callable[..., Any], args64: list[Any]
) -> Callable[[Sequence[int], list[list[np.ndarray]]], float]:
    """``evaluate(argnums, leaves)``: ``fun`` on ``args64`` with the leaves of the differentiated
    arguments replaced; jitted (one compile, then fast calls) unless ``fun`` cannot be jitted."""
    treedefs = {i: jax.tree.structure(a) for i, a in enumerate(args64)}

    def assemble(argnums: Sequence[int], leaves: list[list[np.ndarray]]) -> list[Any]:
        full = list(args64)
        for i, leaf_list in zip(argnums, leaves, strict=True):
            full[i] = jax.tree.unflatten(treedefs[i], leaf_list)
        return full

    def jitted_fun(diff_args: list[Any], argnums: tuple[int, ...]) -> Any:
        full = list(args64)
        for i, a in zip(argnums, diff_args, strict=True):
            full[i] = a
        return fun(*full)

    compiled = jax.jit(jitted_fun, static_argnums=(1,))
    use_jit = True

    def evaluate(argnums: Sequence[int], leaves: list[list[np.ndarray]]) -> float:
        nonlocal use_jit
        full = assemble(argnums, leaves)
        if use_jit:
            try:
                out = compiled([full[i] for i in argnums], tuple(argnums))
            except Exception:
                # Python control flow on values, or an int argument used as a shape: evaluate
                # eagerly from now on (slower, same math).
                use_jit = False
            else:
                return _scalar(out)
        return _scalar(fun(*full))

    return evaluate


# ---- comparison at dtype precision --------------------------------------------------------


def tolerance(dtype: Any) -> float:
    """The absolute tolerance (scaled by ``max(1, |reference|)``) for a result of ``dtype``:
    1e-6 for float64, 1e-4 for float32, 1e-2 for anything narrower (bfloat16, float16)."""
    dt = np.dtype(dtype)
    if dt == np.float64:
        return 1e-6
    if dt == np.float32:
        return 1e-4
    return 1e-2


def _finite_pairs(
    actual: Any, reference: Any, known: Any | None
) -> tuple[np.ndarray, np.ndarray] | None:
    """The elements (marked by ``known``; all when ``None``) of ``actual`` (broadcast to
    ``reference``'s shape) and ``reference`` in float64 that are not equal non-finite pairs (NaN
    and NaN, or the same infinity); ``None`` when any of those is non-finite on one side."""
    r = np.asarray(reference, dtype=np.float64)
    c = np.broadcast_to(np.asarray(actual, dtype=np.float64), r.shape)
    if known is not None:
        mask = np.asarray(known, bool)
        c, r = c[mask], r[mask]
    same_nonfinite = (np.isnan(c) & np.isnan(r)) | (np.isinf(c) & (c == r))
    c, r = c[~same_nonfinite], r[~same_nonfinite]
    if not (np.all(np.isfinite(c)) and np.all(np.isfinite(r))):
        return None
    return c, r


def max_abs_diff(actual: Any, reference: Any, known: Any | None = None) -> float | None:
    """Largest ``|actual - reference|`` (float64) over the elements ``known`` marks (all when
    ``None``); equal non-finite pairs count as equal; ``None`` when one side only is NaN/Inf
    somewhere; ``0.0`` when nothing finite is compared."""
    pairs = _finite_pairs(actual, reference, known)
    if pairs is None:
        return None
    c, r = pairs
    return float(np.max(np.abs(c - r))) if c.size else 0.0


def max_abs_diff_leaves(a: Any, b: Any) -> float | None:
    """:func:`max_abs_diff` over the leaves of two pytrees of one structure: the largest, or
    ``None`` when any leaf's is ``None``."""
    worst = 0.0
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True):
        d = max_abs_diff(x, y)
        if d is None:
            return None
        worst = max(worst, d)
    return worst


def compare(
    actual: Any, reference: Any, known: Any | None, tol: float
) -> tuple[float | None, bool]:
    """``(max abs difference, within tolerance)`` of ``actual`` against ``reference`` over the
    elements ``known`` marks (all when ``None``): within when every finite element differs by at
    most ``tol * max(1, |reference|)`` (``tol``: :func:`tolerance` of the dtype). Equal
    non-finite pairs count as equal; a NaN/Inf on one side only gives ``(None, False)``; no
    element compared gives ``(None, True)``."""
    shape = np.shape(reference)
    if known is None and int(np.prod(shape)) == 0:
        return None, True
    if known is not None and not np.asarray(known, bool).any():
        return None, True
    pairs = _finite_pairs(actual, reference, known)
    if pairs is None:
        return None, False
    c, r = pairs
    if not c.size:
        return 0.0, True
    diff = np.abs(c - r)
    return float(diff.max()), bool(np.all(diff <= tol * np.maximum(1.0, np.abs(r))))
