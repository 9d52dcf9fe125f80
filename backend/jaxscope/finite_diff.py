"""Numeric checks, in one place: central finite differences in float64 (the independent truth the
autodiff exhibits check JAX's gradients against) and the comparison of two results at the
precision of their dtype.

Finite differences. Only public JAX is used: the function is evaluated under
``jax.enable_x64(True)`` on float64 copies of the floating-point arguments (jitted when it can
be, eagerly otherwise): the *upcast function*. A float16 or bfloat16 value widens to float64
exactly, so the differences are taken at the input's own value. One element at a time:
``(f(x + h e_i) - f(x - h e_i)) / 2h`` with ``h = cbrt(eps) * max(1, |x_i|)`` where ``eps`` is
the machine epsilon of the narrowest floating dtype the upcast function computes in
(:func:`narrowest_float` of its jaxpr): float64 for a plain program (h is about 6e-6 for
``|x_i| <= 1``, truncation and rounding errors of order 1e-11); a program that casts inside (a
bfloat16 compute dtype, an ``astype(jnp.float32)`` of its result) is only as smooth as that
dtype, and the step grows to its resolution (4.9e-3 for float32, 0.2 for bfloat16), the step
that balances truncation against that dtype's rounding. Each element gets a status
(:class:`FiniteDifferences` ``status``):

* ``SMOOTH``: the central difference is known. At a kink the left and right one-sided
  differences disagree (``KINK``; ``None`` in :meth:`FiniteDifferences.nested`, as in
  ``../shared/cases``: "null where the left and right differences disagree"); a NaN/Inf
  difference is ``NONFINITE``. The one-sided differences agree when their gap is within 1% of
  the larger (plus the noise below); otherwise they are taken again at ``h / 2``: a smooth
  function's gap halves and its central difference stays (curvature), a kink's does not. A kink
  within the step but not at ``x`` (a ReLU or a max switching between ``x`` and ``x + h``) is
  outside the step ``h / 16``, where the difference is taken once more.
* ``FLAT``: ``f(x - h)``, ``f(x)`` and ``f(x + h)`` are equal bit for bit, and still at the
  coarse step ``2**-7 * max(1, |x_i|)`` (about one bfloat16 spacing, several of float16's):
  ``f`` does not depend on the element there, and the difference is 0. When ``f`` changes at the
  coarse step in a way the flatness at ``h`` rules out for a smooth function (a jump, or a slope
  that would have moved ``f`` at ``h``), ``f`` rounds the element inside (a cast to a narrower
  dtype): ``ROUNDED``, no difference is meaningful there. Where the upcast function computes in
  a dtype narrower than float64, every difference is also taken at ``h / 2``; the two must agree
  (a staircase of rounded inputs does not) or the element is ``ROUNDED``.
* ``noise``: the rounding error the difference can carry, ``8 * eps * max|f| / h`` (``f``'s
  values at the three points), for the comparison to tell what it cannot resolve.

Comparison. :func:`tolerance` is the tolerance of a dtype (float64 1e-6, float32 1e-4, narrower
floats 1e-2), scaled by ``max(1, |reference|)``; :func:`compare` holds a result to a reference at
it, :func:`max_abs_diff` / :func:`max_abs_diff_leaves` give the largest difference. In all three
a NaN on both sides (or the same infinity on both) counts as equal, and a NaN/Inf on one side
only makes the difference unbounded (``None``). :func:`gradient_tolerance` is the tolerance a
gradient is held to against the finite differences (the same, but at least 8 spacings of a
narrow dtype: bfloat16 6.25e-2).
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
# Where f is flat at h, the difference is retried at this step (times max(1, |x|)): one
# bfloat16 spacing at |x| in [1, 2), at least one everywhere else; 8 float16 spacings.
COARSE_STEP = 2.0**-7
# f's value carries about this many of its dtype's spacings of rounding (the noise bound).
_EPS32 = float(np.finfo(np.float32).eps)
_NOISE_ULPS = 8.0
# More elements than this are sampled evenly; the others are reported as None.
MAX_ELEMENTS = 4096
# At most this many argument elements are read by all the evaluations together (two per
# sample), and at least MIN_SAMPLES elements are differenced: a huge argument stays checkable.
MAX_WORK = 200_000_000
MIN_SAMPLES = 16

# FiniteDifferences.status, per element (see the module docstring).
NOT_SAMPLED, SMOOTH, KINK, NONFINITE, FLAT, ROUNDED = 0, 1, 2, 3, 4, 5
STATUS_NAMES = ("not_sampled", "smooth", "kink", "nonfinite", "flat", "rounded")


@dataclass(frozen=True)
class FiniteDifferences:
    """Central differences of a scalar function, one entry per differentiated argument.

    ``values[k]`` has the pytree structure of ``args[argnums[k]]`` with float64 ``numpy`` arrays
    as leaves (NaN where nothing was taken); ``known[k]`` the same structure with bool arrays:
    true where the difference is the derivative (``SMOOTH`` or ``FLAT``), false at a kink, a
    NaN/Inf difference, an element ``f`` rounds inside, or one not sampled (more than
    :data:`MAX_ELEMENTS`). ``sampled[k]`` (bool) true where a difference was taken. ``status[k]``
    (int8): the outcome per element, :data:`STATUS_NAMES`; ``noise[k]`` (float64) the rounding
    error the difference can carry there, ``steps[k]`` (float64) the step ``h`` it was taken
    with (0 where not sampled). ``dtype``: the narrowest floating dtype the upcast function
    computes in (``float64`` for a program without casts), whose epsilon sets the step.
    """

    values: list[Any]
    known: list[Any]
    sampled: list[Any] | None = None
    status: list[Any] | None = None
    noise: list[Any] | None = None
    steps: list[Any] | None = None
    dtype: str = "float64"
    # ``fun(*args)`` itself, in float64: what every difference is taken around
    f0: float = math.nan

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


def narrowest_float(closed_jaxpr: Any) -> np.dtype[Any] | None:
    """The narrowest floating dtype (fewest bits; bfloat16 before float16) among the outputs of
    every eqn of ``closed_jaxpr`` (a ``jax.make_jaxpr`` result), the jaxprs in its eqns' params
    included (jit bodies, cond branches, scan bodies, custom rules); ``None`` without any."""
    found: list[np.dtype[Any]] = []
    seen: set[int] = set()

    def visit(jaxpr: Any) -> None:
        inner = getattr(jaxpr, "jaxpr", None)
        if inner is not None and not hasattr(jaxpr, "eqns"):
            jaxpr = inner  # a ClosedJaxpr
        if id(jaxpr) in seen or not hasattr(jaxpr, "eqns"):
            return
        seen.add(id(jaxpr))
        for eqn in jaxpr.eqns:
            for var in eqn.outvars:
                dtype = getattr(getattr(var, "aval", None), "dtype", None)
                if dtype is not None and jnp.issubdtype(dtype, jnp.floating):
                    found.append(np.dtype(dtype))
            for param in eqn.params.values():
                for p in param if isinstance(param, (tuple, list)) else (param,):
                    if hasattr(p, "eqns") or hasattr(p, "jaxpr"):
                        visit(p)

    visit(closed_jaxpr)
    if not found:
        return None
    out = found[0]
    for d in found[1:]:
        out = narrower(out, d)
    return out


def _finfo(dtype: Any) -> Any:
    # jnp.finfo knows bfloat16 and the float8s (numpy's does not); it is untyped.
    return jnp.finfo(dtype)  # type: ignore[no-untyped-call]


def _eps(dtype: Any) -> float:
    return float(_finfo(dtype).eps)


def central_differences(
    fun: Callable[..., Any],
    args: Sequence[Any],
    argnums: Sequence[int],
    also: Sequence[tuple[int, int, int]] = (),
    max_elements: int = MAX_ELEMENTS,
    per_leaf: int = 0,
) -> FiniteDifferences:
    """Central differences in float64 of the scalar ``fun(*args)`` w.r.t. ``args[i]`` for ``i``
    in ``argnums`` (only their floating-point leaves; other leaves get NaN and ``known`` false).

    ``fun`` receives float64 copies of the floating-point leaves of every argument. ``also``:
    elements ``(k, leaf_index, flat_index)`` (``k`` indexes ``argnums``, ``leaf_index`` the
    argument's ``jax.tree.leaves``) to difference besides the even sample (e.g. where a
    gradient is NaN). ``max_elements`` and ``per_leaf``: the sample (:func:`sample_count`,
    :func:`_positions`). Raises ``TypeError`` when the output is not a scalar, and whatever
    ``fun`` raises.
    """
    with jax.enable_x64(True):
        args64 = [jax.tree.map(_to_float64, a) for a in args]
        evaluate = _evaluator(fun, args64)
        positions = _positions(args64, argnums, max_elements, per_leaf)
        taken = set(positions)
        positions += [p for p in also if p not in taken]
        leaves = [[np.array(x, copy=True) for x in jax.tree.leaves(args64[i])] for i in argnums]
        shapes = [[np.shape(x) for x in leaf_list] for leaf_list in leaves]
        values = [[np.full(s, np.nan, np.float64) for s in ss] for ss in shapes]
        status = [[np.zeros(s, np.int8) for s in ss] for ss in shapes]
        noise = [[np.zeros(s, np.float64) for s in ss] for ss in shapes]
        steps = [[np.zeros(s, np.float64) for s in ss] for ss in shapes]
        f0 = evaluate(argnums, leaves)
        inner = _upcast_dtype(fun, args64, evaluate.out_dtype)
        step = _eps(inner) ** (1.0 / 3.0)
        for k, leaf_index, flat_index in positions:
            leaf = leaves[k][leaf_index]
            x = float(leaf.reshape(-1)[flat_index]) if leaf.ndim else float(leaf)

            def at(x_new: float, k: int = k, j: int = leaf_index, i: int = flat_index) -> float:
                return _perturbed(evaluate, argnums, leaves, k, j, i, x_new)

            value, state, error, h = _difference(at, x, f0, step, _eps(inner), inner != np.float64)
            np.put(values[k][leaf_index], flat_index, value)
            np.put(status[k][leaf_index], flat_index, state)
            np.put(noise[k][leaf_index], flat_index, error)
            np.put(steps[k][leaf_index], flat_index, h)
        treedefs = [jax.tree.structure(args64[i]) for i in argnums]

        def trees(per_leaf: list[list[np.ndarray]]) -> list[Any]:
            return [jax.tree.unflatten(t, v) for t, v in zip(treedefs, per_leaf, strict=True)]

        known = [[(s == SMOOTH) | (s == FLAT) for s in ss] for ss in status]
        sampled = [[s != NOT_SAMPLED for s in ss] for ss in status]
        return FiniteDifferences(
            values=trees(values),
            known=trees(known),
            sampled=trees(sampled),
            status=trees(status),
            noise=trees(noise),
            steps=trees(steps),
            dtype=str(inner),
            f0=float(f0),
        )


def _upcast_dtype(fun: Callable[..., Any], args64: list[Any], out_dtype: Any) -> np.dtype[Any]:
    """The narrowest floating dtype the upcast function computes in: its jaxpr's (float64 when
    it cannot be traced, e.g. Python control flow on values), and its output's."""
    candidates = [np.dtype(np.float64)]
    if out_dtype is not None and jnp.issubdtype(out_dtype, jnp.floating):
        candidates.append(np.dtype(out_dtype))
    try:
        found = narrowest_float(jax.make_jaxpr(fun)(*args64))
    except Exception:  # traced values in Python control flow: the output's dtype is all we know
        found = None
    if found is not None:
        candidates.append(found)
    out = candidates[0]
    for d in candidates[1:]:
        out = narrower(out, d)
    return out


def _difference(
    at: Callable[[float], float], x: float, f0: float, step: float, eps: float, narrow: bool
) -> tuple[float, int, float, float]:
    """``(value, status, noise, h)`` of one element's difference (see the module docstring):
    ``at(x')`` is ``f`` with the element set to ``x'``; ``narrow``: the upcast function
    computes in a dtype narrower than float64 (``eps`` its epsilon)."""
    scale = max(1.0, abs(x))
    if eps > _EPS32:
        # f rounds to bfloat16/float16 inside: a difference cannot resolve a gradient at that
        # precision (its error is about eps^(2/3), 4e-2 for bfloat16, past the tolerance);
        # only an element f does not depend on at all (flat at the coarse step) is known.
        h = COARSE_STEP * scale
        f_plus, f_minus = at(x + h), at(x - h)
        noise = _noise(eps, h, f0, f_plus, f_minus)
        if f_plus == f0 == f_minus and math.isfinite(f0):
            return 0.0, FLAT, noise, h
        central, _ = _central(f_plus, f0, f_minus, h)
        return central, (ROUNDED if math.isfinite(central) else NONFINITE), noise, h
    h = step * scale
    f_plus, f_minus = at(x + h), at(x - h)
    if f_plus == f0 == f_minus and math.isfinite(f0):
        coarse = max(h, COARSE_STEP * scale)
        if coarse == h:
            return 0.0, FLAT, _noise(eps, h, f0), h
        f_plus, f_minus = at(x + coarse), at(x - coarse)
        if f_plus == f0 == f_minus:
            return 0.0, FLAT, _noise(eps, coarse, f0), coarse
        central, smooth = _central(f_plus, f0, f_minus, coarse)
        # A smooth f flat at h has |f'| * h below f's resolution; a larger slope at the coarse
        # step means f jumped in between: it rounds the element inside.
        resolution = 2 * eps * max(abs(f0), abs(f_plus), abs(f_minus)) + 1e-300
        if smooth and abs(central) * h <= resolution:
            return central, SMOOTH, _noise(eps, coarse, f0, f_plus, f_minus), coarse
        return central, ROUNDED, _noise(eps, coarse, f0, f_plus, f_minus), coarse
    central, left, right = _sides(f_plus, f0, f_minus, h)
    noise = _noise(eps, h, f0, f_plus, f_minus)
    if not math.isfinite(central):
        return central, NONFINITE, noise, h
    gap = abs(left - right)
    if gap <= _KINK_RTOL * max(abs(left), abs(right)) + 4 * noise and not narrow:
        return central, SMOOTH, noise, h
    # The one-sided differences differ: curvature (their gap shrinks with the step), a kink at
    # or near x (it does not), or, in a program that rounds inside, a staircase (the difference
    # itself changes with the step). Taken again at h / 2 to tell.
    if _steady(at, x, f0, h, central, gap, eps):
        return central, SMOOTH, noise, h
    if narrow and gap <= _KINK_RTOL * max(abs(left), abs(right)) + 4 * noise:
        return central, ROUNDED, noise, h
    if not narrow:
        # A kink within the step but not at x (a ReLU or a max that switches between x and
        # x + h): 16 times closer it is outside, and the difference there is the derivative.
        near = h / 16
        f_plus, f_minus = at(x + near), at(x - near)
        central, left, right = _sides(f_plus, f0, f_minus, near)
        noise = _noise(eps, near, f0, f_plus, f_minus)
        gap = abs(left - right)
        if math.isfinite(central) and _steady(at, x, f0, near, central, gap, eps):
            return central, SMOOTH, noise, near
    return central, KINK, noise, h


def _steady(
    at: Callable[[float], float],
    x: float,
    f0: float,
    h: float,
    central: float,
    gap: float,
    eps: float,
) -> bool:
    """Whether the difference at ``h`` (one-sided gap ``gap``) is a smooth function's: taken
    again at ``h / 2``, the gap halves (curvature) and the central difference stays."""
    f_plus, f_minus = at(x + h / 2), at(x - h / 2)
    half, left, right = _sides(f_plus, f0, f_minus, h / 2)
    noise = _noise(eps, h / 2, f0, f_plus, f_minus)
    halves = abs(abs(left - right) - gap / 2) <= 0.15 * gap + 4 * noise
    steady = abs(half - central) <= _KINK_RTOL * max(abs(half), abs(central)) + 2 * noise
    return math.isfinite(half) and halves and steady


def _sides(f_plus: float, f0: float, f_minus: float, h: float) -> tuple[float, float, float]:
    """The central difference and the left and right one-sided ones."""
    return (f_plus - f_minus) / (2 * h), (f0 - f_minus) / h, (f_plus - f0) / h


def _central(f_plus: float, f0: float, f_minus: float, h: float) -> tuple[float, bool]:
    """The central difference and whether the one-sided ones agree (no kink, as far as one step
    tells: the flat retry's test)."""
    central, left, right = _sides(f_plus, f0, f_minus, h)
    scale = max(1.0, abs(left), abs(right))
    smooth = math.isfinite(central) and abs(left - right) <= _KINK_RTOL * scale
    return central, smooth


def _noise(eps: float, h: float, *fs: float) -> float:
    """The rounding error a difference at step ``h`` can carry: a few of ``f``'s spacings."""
    finite = [abs(v) for v in fs if math.isfinite(v)]
    return _NOISE_ULPS * eps * max(finite, default=0.0) / h


def sample_count(total: int, evaluated: int, max_elements: int = MAX_ELEMENTS) -> int:
    """How many of ``total`` differentiable elements are differenced when each evaluation of
    ``fun`` reads ``evaluated`` elements: all up to ``max_elements`` (:data:`MAX_ELEMENTS`),
    and at most :data:`MAX_WORK` elements read over the two evaluations per sample (at least
    :data:`MIN_SAMPLES`): a 4,000 x 4,000 argument gets 16 samples, not 4,096."""
    by_work = MAX_WORK // max(1, 2 * evaluated)
    return min(total, max_elements, max(MIN_SAMPLES, by_work))


def _positions(
    args64: Sequence[Any],
    argnums: Sequence[int],
    max_elements: int = MAX_ELEMENTS,
    per_leaf: int = 0,
) -> list[tuple[int, int, int]]:
    """``(k, leaf_index, flat_index)`` of the elements to difference, evenly spaced over the
    floating leaves of the differentiated arguments (without listing every element first).

    ``per_leaf``: when not every element is taken, each leaf first gets up to this many of the
    :func:`sample_count` samples, evenly spaced within it (its first and last element first;
    fewer each when the sample is smaller than ``per_leaf`` times the leaves: at least one
    each while the sample has one per leaf; none past that), and the rest are spaced evenly
    over all the leaves together: a small leaf (a bias beside large weights) is not skipped.
    ``0``: the even spread only."""
    leaves = [
        (k, leaf_index, int(np.size(leaf)))
        for k, i in enumerate(argnums)
        for leaf_index, leaf in enumerate(jax.tree.leaves(args64[i]))
        if is_float_leaf(leaf)
    ]
    total = sum(size for _, _, size in leaves)
    evaluated = sum(int(np.size(x)) for a in args64 for x in jax.tree.leaves(a))
    n = sample_count(total, evaluated, max_elements)
    starts = np.cumsum([0] + [size for _, _, size in leaves])
    if n >= total:
        picks = np.arange(total)
    else:
        quota = min(per_leaf, n // max(1, len(leaves)))
        own = [
            starts[j] + np.unique(np.linspace(0, size - 1, min(size, quota)).round())
            for j, (_, _, size) in enumerate(leaves)
            if quota > 0 and size > 0
        ]
        first = np.concatenate(own).astype(np.int64) if own else np.zeros(0, np.int64)
        picks = np.unique(first)
        spread = n - picks.size
        # The even spread may meet the leaves' own picks: widened until there are n in all (or
        # as close below n as the rounding allows).
        while picks.size < n and spread <= total:
            even = np.linspace(0, total - 1, spread).round().astype(np.int64)
            more = np.unique(np.concatenate([first, even]))
            if more.size > n:
                break
            picks = more
            spread += n - more.size
    out = []
    for p in picks.tolist():
        j = int(np.searchsorted(starts, p, side="right")) - 1
        k, leaf_index, _ = leaves[j]
        out.append((k, leaf_index, p - int(starts[j])))
    return out


def _perturbed(
    evaluate: _Evaluator,
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
        element = (flat_index, x) if leaf.dtype == np.float64 else None
        return evaluate(argnums, leaves, changed=(k, leaf_index), element=element)
    finally:
        if leaf.ndim:
            leaf.reshape(-1)[flat_index] = old
        else:
            leaves[k][leaf_index] = np.array(old)


class _Evaluator:
    """``evaluate(argnums, leaves)``: ``fun`` on ``args64`` with the leaves of the differentiated
    arguments replaced; jitted (one compile, then fast calls) unless ``fun`` cannot be jitted.
    ``out_dtype``: the dtype of the last output (the upcast function's result dtype).

    The jitted function takes the differentiated arguments' leaves as flat positional arguments
    (one per ``argnums``, built back into their pytrees inside): the same jaxpr, with its inputs
    in the same order, as passing the pytrees, but a call skips jit's flattening of the argument
    pytrees (a 36-layer MLP's 144 leaves: 0.53 -> 0.21 ms a call, for thousands of calls)."""

    def __init__(self, fun: Callable[..., Any], args64: list[Any]) -> None:
        self.fun = fun
        self.args64 = args64
        self.treedefs = {i: jax.tree.structure(a) for i, a in enumerate(args64)}
        self.use_jit = True
        self.out_dtype: Any = None
        # One jitted function per argnums (a tuple: the argument positions, in order).
        self.compiled: dict[tuple[int, ...], Callable[..., Any]] = {}
        # Device copies of the unperturbed leaves, made on the first call: a perturbed call
        # passes them and only the changed leaf from the host. Passing every leaf as numpy
        # copied each to the device on every call (a model's ~150 leaves: ~1 ms a call, for
        # thousands of calls). The values are the same, so is every result.
        self.device: list[list[Any]] | None = None
        self.flat_device: list[Any] = []
        # where each argument's leaves start in the flat list (by its index in argnums)
        self.starts: list[int] = []

    def _jitted(self, argnums: tuple[int, ...]) -> Callable[..., Any]:
        hit = self.compiled.get(argnums)
        if hit is not None:
            return hit
        args64, fun = self.args64, self.fun
        treedefs = [self.treedefs[i] for i in argnums]
        counts = [len(jax.tree.leaves(args64[i])) for i in argnums]

        def jitted_fun(*flat: Any) -> Any:
            full = list(args64)
            start = 0
            for i, treedef, n in zip(argnums, treedefs, counts, strict=True):
                end = start + n
                full[i] = jax.tree.unflatten(treedef, flat[start:end])
                start = end
            return fun(*full)

        compiled = self.compiled[argnums] = jax.jit(jitted_fun)
        return compiled

    def __call__(
        self,
        argnums: Sequence[int],
        leaves: list[list[np.ndarray]],
        changed: tuple[int, int] | None = None,
        element: tuple[int, float] | None = None,
    ) -> float:
        """``fun`` at ``leaves``; ``changed`` ``(k, leaf_index)``: the only leaf that differs
        from the leaves of the first call (a perturbation, undone before the next call);
        ``element`` ``(flat_index, value)``: the one element of it that differs (a float64
        leaf), the rest of it as in the first call."""
        if self.use_jit:
            try:
                if changed is None and self.device is None:
                    # copies: the host leaves are perturbed in place later
                    self.device = [
                        [jax.device_put(np.array(x, copy=True)) for x in leaf_list]
                        for leaf_list in leaves
                    ]
                    self.flat_device = [x for leaf_list in self.device for x in leaf_list]
                    self.starts = [0]
                    for leaf_list in self.device[:-1]:
                        self.starts.append(self.starts[-1] + len(leaf_list))
                    flat = list(self.flat_device)
                elif changed is not None and self.device is not None:
                    k, j = changed
                    flat = list(self.flat_device)
                    if element is None:
                        flat[self.starts[k] + j] = leaves[k][j]
                    else:
                        # The changed leaf is made on the device from its copy (the element
                        # set, exactly): every call passes device arrays only, one signature
                        # for jit's C++ dispatch. A host array at another position missed it
                        # once per leaf (~6 ms each: 0.85 s of a 144-leaf model's 8,192
                        # calls); jax.device_put of it cost ~0.1 ms a call.
                        index, value = element
                        flat[self.starts[k] + j] = _set_element(
                            self.device[k][j], np.int64(index), np.float64(value)
                        )
                else:
                    flat = [x for leaf_list in leaves for x in leaf_list]
                out = self._jitted(tuple(argnums))(*flat)
            except Exception:
                # Python control flow on values, or an int argument used as a shape: evaluate
                # eagerly from now on (slower, same math).
                self.use_jit = False
            else:
                return self._scalar(out)
        full = list(self.args64)
        for i, leaf_list in zip(argnums, leaves, strict=True):
            full[i] = jax.tree.unflatten(self.treedefs[i], leaf_list)
        return self._scalar(self.fun(*full))

    def _scalar(self, out: Any) -> float:
        self.out_dtype = getattr(out, "dtype", None)
        return _scalar(out)


@jax.jit
def _set_element(leaf: Any, index: Any, value: Any) -> Any:
    """``leaf`` with its ``index``-th element (row-major) set to ``value`` (same dtype)."""
    return leaf.reshape(-1).at[index].set(value).reshape(leaf.shape)


def _evaluator(fun: Callable[..., Any], args64: list[Any]) -> _Evaluator:
    return _Evaluator(fun, args64)


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


def gradient_tolerance(dtype: Any) -> float:
    """The relative tolerance a gradient of ``dtype`` is held to against the float64 finite
    differences: :func:`tolerance`, but at least 8 spacings of the dtype at 1 (8 * eps): float64
    1e-6, float32 1e-4, float16 1e-2, bfloat16 6.25e-2 (its 8-bit significand is right to about
    1 part in 256 after one rounding; a gradient adds several roundings)."""
    return max(tolerance(dtype), 8 * _eps(dtype))


def narrower(a: Any, b: Any) -> np.dtype[Any]:
    """The narrower of two floating dtypes (fewer bits; bfloat16 before float16)."""
    return min(np.dtype(a), np.dtype(b), key=lambda d: (d.itemsize, int(_finfo(d).nmant)))


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


def first_difference(
    actual: Any, reference: Any, tol: float
) -> tuple[list[int], float, float] | None:
    """The first element (row-major) where ``actual`` and ``reference`` (same shape) differ past
    ``tol * max(1, |reference|)``, or where one side only is NaN/Inf: ``(index, actual value,
    reference value)`` in float64; ``None`` when every element agrees (equal non-finite pairs
    agree). The element :func:`compare` found out of tolerance, named for the user."""
    r = np.asarray(reference, dtype=np.float64)
    c = np.broadcast_to(np.asarray(actual, dtype=np.float64), r.shape)
    same_nonfinite = (np.isnan(c) & np.isnan(r)) | (np.isinf(c) & (c == r))
    with np.errstate(invalid="ignore"):
        bad = ~same_nonfinite & ~(np.abs(c - r) <= tol * np.maximum(1.0, np.abs(r)))
    if r.ndim == 0:  # argwhere of a 0-d array has no columns
        return ([], float(c), float(r)) if bool(bad) else None
    where = np.argwhere(bad)
    if not len(where):
        return None
    index = tuple(int(i) for i in where[0])
    return list(index), float(c[index]), float(r[index])
