"""The transpose exhibit's gradient check: the walk's gradient held to the float64 finite
differences at its dtype's precision, and the verdict that :class:`GradientChecked` leads with.

:func:`compare_fd` goes through every element a finite difference was taken at
(``jaxscope.finite_diff.central_differences``, whose statuses say which are derivatives) and
sorts it: *checked* (the difference is known, finite and precise enough there) and then
agreeing or disagreeing, or *left out* with a reason (a kink, a NaN/Inf difference, an element
``f`` rounds inside, a difference too imprecise there). A NaN/Inf gradient where the difference
is known and finite always disagrees. The tolerance and the scale it multiplies are
:class:`GradientChecked`'s docstring's. :func:`headline` words the verdict: ``disagree`` names
the first disagreeing element, ``incomplete`` the first one left out; left-out elements never
read as agreement.

Worker code (it runs inside the sandbox, beside ``probe.py``); no private JAX.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import jax
import numpy as np
from jaxscope.exhibit_api import (
    FLAT,
    KINK,
    NONFINITE,
    NOT_SAMPLED,
    ROUNDED,
    SMOOTH,
    FiniteDifferences,
    gradient_tolerance,
    is_float_leaf,
    narrower,
    preview_value,
)

from exhibits.transpose.events import FdDisagreement, FdNotCompared

# At most this many elements are listed as disagreeing, and as left out.
MAX_LISTED = 64
# A leaf is held to at least this fraction of the largest finite difference of every leaf: a
# leaf whose true gradient is 0 is not held to the rounding noise of its own float32 gradient.
GLOBAL_FLOOR = 1e-2

Verdict = Literal["agree", "disagree", "incomplete"]


@dataclass
class LeafCheck:
    """One leaf's part of the check: ``held_at`` the dtype whose tolerance ``tol`` applies."""

    held_at: str
    tol: float
    checked: int = 0
    disagree: int = 0


@dataclass
class FdComparison:
    """What :func:`compare_fd` found: the figures of the rules (``max_abs_err``,
    ``max_rel_err`` over ``compared`` elements: the float64 walk against the differences), the
    verdict, the elements checked, the disagreements and the elements left out (the first
    :data:`MAX_LISTED` of each; the counts are of all), per leaf (argnums then leaves order)."""

    max_abs_err: float | None
    max_rel_err: float | None
    compared: int
    not_compared: list[FdNotCompared]
    not_compared_count: int
    checked: int = 0
    disagreements: list[FdDisagreement] = field(default_factory=list)
    disagree_count: int = 0
    leaves: list[LeafCheck] = field(default_factory=list)
    # Every element of the gradient and every difference checked is exactly 0 (and something
    # was checked): what a vanishing gradient looks like (GradientChecked.all_zero).
    all_zero: bool = False

    @property
    def verdict(self) -> Verdict:
        if self.disagree_count:
            return "disagree"
        if self.not_compared_count or not self.checked:
            return "incomplete"
        return "agree"


def number(x: float) -> Any:
    """A float as the wire writes it: non-finite as ``"nan"``/``"inf"``/``"-inf"``."""
    if not np.isfinite(x):
        return "nan" if np.isnan(x) else ("inf" if x > 0 else "-inf")
    return float(x)


def nonfinite_positions(
    argnums: Sequence[int], gradient: Sequence[Any], limit: int = MAX_LISTED
) -> list[tuple[int, int, int]]:
    """``(k, leaf_index, flat_index)`` of the first ``limit`` elements whose gradient is NaN or
    Inf (``k`` indexes ``argnums``): the finite differences are taken there too, so that a NaN
    gradient past the even sample is still held to something."""
    out: list[tuple[int, int, int]] = []
    for k in range(len(argnums)):
        for j, leaf in enumerate(jax.tree.leaves(gradient[k])):
            arr = np.asarray(leaf)
            if not is_float_leaf(arr):
                continue
            bad = np.flatnonzero(~np.isfinite(arr.astype(np.float64).reshape(-1)))
            out.extend((k, j, int(i)) for i in bad[: limit - len(out)])
            if len(out) >= limit:
                return out
    return out


def _leaves(tree: Any) -> list[np.ndarray]:
    return [np.asarray(x) for x in jax.tree.leaves(tree)]


def compare_fd(
    args: tuple[Any, ...],
    argnums: Sequence[int],
    gradient: Sequence[Any],
    grad64: Sequence[Any] | None,
    fd: FiniteDifferences,
    compute_dtype: Any = None,
) -> FdComparison:
    """Hold the walk's ``gradient`` (one tree per ``argnums``) to the finite differences ``fd``
    (module docstring). ``grad64``: the float64 walk's gradient (the figures and the
    disagreement rows; ``None`` when it was skipped: the figures then use ``gradient``).
    ``compute_dtype``: the narrowest floating dtype ``f`` computes in; a leaf is held at the
    narrower of its own dtype and it."""
    no64 = grad64 is None
    g64_trees = gradient if grad64 is None else grad64
    statuses = fd.status
    assert statuses is not None, "central_differences sets every element's status"
    noises = fd.noise if fd.noise is not None else [None] * len(argnums)
    columns = []
    for k, i in enumerate(argnums):
        paths = jax.tree_util.tree_flatten_with_path(args[i])[0]
        g_leaves = _leaves(gradient[k])
        noise_tree = noises[k]
        noise_leaves = (
            _leaves(noise_tree)
            if noise_tree is not None
            else [np.zeros(np.shape(g)) for g in g_leaves]
        )
        columns.append(
            list(
                zip(
                    paths,
                    g_leaves,
                    _leaves(g64_trees[k]),
                    _leaves(fd.values[k]),
                    _leaves(statuses[k]),
                    noise_leaves,
                    strict=True,
                )
            )
        )
    # The scale every leaf is held to at least (GLOBAL_FLOOR of the largest difference).
    known_fd = [
        np.abs(fv[_known(st) & np.isfinite(fv)]) for col in columns for (_, _, _, fv, st, _) in col
    ]
    top = max((float(a.max()) for a in known_fd if a.size), default=0.0)
    out = FdComparison(None, None, 0, [], 0)
    # Stays true while every gradient element (checked or not) and every checked difference is 0.
    zeros = True
    diffs: list[np.ndarray] = []
    scales: list[np.ndarray] = []
    for k, i in enumerate(argnums):
        for (path, _), g, g64, fv, st, noise in columns[k]:
            where = f"args[{i}]{jax.tree_util.keystr(path)}"
            dtype = str(g.dtype) if is_float_leaf(g) else "float32"
            held = str(narrower(dtype, compute_dtype)) if compute_dtype is not None else dtype
            tol = gradient_tolerance(held)
            leaf = LeafCheck(held_at=held, tol=tol)
            out.leaves.append(leaf)
            g32 = np.asarray(g, np.float64)
            g64a = np.asarray(g64, np.float64)
            fva = np.asarray(fv, np.float64)
            sta = np.asarray(st)
            noise_a = np.asarray(noise, np.float64)
            known = _known(sta) & np.isfinite(fva)
            leaf_scale = float(np.abs(fva[known]).max()) if known.any() else 0.0
            scale = np.maximum(np.abs(fva), max(leaf_scale, GLOBAL_FLOOR * top))
            allowed = tol * scale + noise_a
            bad_g = ~np.isfinite(g32)
            # Where every difference is 0 the gradient must be 0, within the differences' noise.
            resolved = (noise_a <= tol * scale) | (scale == 0)
            checked = known & (resolved | bad_g)
            disagree = checked & (bad_g | (np.abs(g32 - fva) > allowed))
            leaf.checked = int(checked.sum())
            leaf.disagree = int(disagree.sum())
            zeros = zeros and not np.any(g32 != 0) and not np.any(fva[checked] != 0)
            out.checked += leaf.checked
            out.disagree_count += leaf.disagree
            figures = checked & ~bad_g & np.isfinite(g64a)
            diffs.append(np.abs(g64a[figures] - fva[figures]))
            scales.append(np.abs(fva[figures]))
            for index in np.argwhere(disagree)[: max(0, MAX_LISTED - len(out.disagreements))]:
                at = tuple(int(n) for n in index)
                out.disagreements.append(
                    _disagreement(where, at, g, g64a, fva, allowed, held, no64)
                )
            left_out = (sta != NOT_SAMPLED) & ~checked
            # A NaN/Inf gradient past the sample: nothing holds it, so it is left out too.
            left_out |= (sta == NOT_SAMPLED) & bad_g
            out.not_compared_count += int(left_out.sum())
            for index in np.argwhere(left_out)[: max(0, MAX_LISTED - len(out.not_compared))]:
                at = tuple(int(n) for n in index)
                out.not_compared.append(
                    _left_out(
                        where, at, g, g64a, fva, int(sta[at]), bool(known[at]), no64, fd.dtype
                    )
                )
    out.all_zero = zeros and out.checked > 0 and out.disagree_count == 0
    diff = np.concatenate(diffs) if diffs else np.zeros(0)
    out.compared = int(diff.size)
    if out.compared:
        out.max_abs_err = float(np.max(diff))
        largest = float(np.max(np.concatenate(scales)))
        out.max_rel_err = out.max_abs_err / largest if largest > 0 else out.max_abs_err
    return out


def _known(status: np.ndarray) -> np.ndarray:
    known: np.ndarray = (status == SMOOTH) | (status == FLAT)
    return known


def gradient_text(value: float, dtype: str) -> str:
    """A gradient element in its dtype's digits, as numpy prints it (``0.3333`` for a float16
    0.333251953125, ``0.333333`` for a float32 1/3)."""
    try:
        return str(preview_value(np.asarray(value).astype(dtype)))
    except TypeError:
        return str(preview_value(np.float64(value)))


def f64_text(value: float) -> str:
    """A float64 value (a finite difference) as numpy prints it at 6 digits."""
    return str(preview_value(np.float64(value)))


def _where(where: str, at: tuple[int, ...]) -> str:
    return f"{where}[{', '.join(map(str, at))}]" if at else where


def _disagreement(
    where: str,
    at: tuple[int, ...],
    g: np.ndarray,
    g64: np.ndarray,
    fd: np.ndarray,
    allowed: np.ndarray,
    held: str,
    no64: bool,
) -> FdDisagreement:
    gv, fv = float(np.asarray(g, np.float64)[at]), float(fd[at])
    dtype = str(g.dtype)
    g_text, fd_text = gradient_text(gv, dtype), f64_text(fv)
    if not np.isfinite(gv):
        kind: Literal["nonfinite", "zero", "off"] = "nonfinite"
        why = f"the gradient is {g_text} where the finite difference is {fd_text}"
    elif gv == 0:
        kind = "zero"
        why = f"the gradient is {g_text} where the finite difference is {fd_text}"
    else:
        kind = "off"
        why = (
            f"the gradient is {g_text}, the finite difference {fd_text}: off by "
            f"{abs(gv - fv):.3g}, past {float(allowed[at]):.2g} at {held} precision"
        )
    g64v = None if no64 else float(g64[at])
    if g64v is not None:
        if np.isfinite(g64v) and abs(g64v - fv) <= float(allowed[at]):
            why += (
                f"; the same walk in float64 gives {f64_text(g64v)}, so {dtype} arithmetic lost "
                "it, not a wrong rule"
            )
        else:
            why += f"; the float64 walk gives {f64_text(g64v)} too: a derivative rule is wrong here"
    return FdDisagreement(
        path=where,
        index=list(at),
        gradient=number(gv),
        gradient_f64=None if g64v is None else number(g64v),
        finite_difference=number(fv),
        kind=kind,
        allowed=float(allowed[at]),
        dtype=held,
        why=why,
    )


_REASONS: dict[int, Literal["kink", "nonfinite", "rounded"]] = {
    KINK: "kink",
    NONFINITE: "nonfinite",
    ROUNDED: "rounded",
}


def _left_out(
    where: str,
    at: tuple[int, ...],
    g: np.ndarray,
    g64: np.ndarray,
    fd: np.ndarray,
    status: int,
    known: bool,
    no64: bool,
    fd_dtype: str = "float64",
) -> FdNotCompared:
    gv, fv = float(np.asarray(g, np.float64)[at]), float(fd[at])
    g_text = gradient_text(gv, str(g.dtype))
    reason: Literal["kink", "nonfinite", "rounded", "unresolved", "not_sampled"]
    if status == NOT_SAMPLED:
        reason, why = "not_sampled", "past the sampled elements: no finite difference taken"
    elif known:
        reason = "unresolved"
        inside = f"f computes in {fd_dtype} inside" if fd_dtype != "float64" else "f's rounding"
        why = (
            f"the finite difference {f64_text(fv)} is too imprecise here ({inside}: its error "
            "over the step is past the tolerance) to hold the gradient to"
        )
    else:
        reason = _REASONS.get(status, "kink")
        why = {
            "kink": "a kink: the one-sided differences disagree, no derivative to hold it to",
            "nonfinite": f"the finite difference is {f64_text(fv)} (f is not finite near here)",
            "rounded": f"f rounds this input inside (it computes in {fd_dtype}): no finite "
            "difference is precise enough here"
            if fd_dtype in ("bfloat16", "float16")
            else "f rounds this input inside (a cast to a narrower dtype): flat at float64's "
            "step, so no finite difference means anything here",
        }.get(reason, "")
    if not np.isfinite(gv):
        why += f"; the gradient is {g_text}"
    show_fd = known or status in (NONFINITE, KINK)
    return FdNotCompared(
        path=where,
        index=list(at),
        gradient=number(gv),
        gradient_f64=None if no64 else number(float(g64[at])),
        finite_difference=number(fv) if show_fd and status != KINK else None,
        why=why,
        reason=reason,
    )


# How far f's float64 value at args may be from its float32 one (relative, scaled by
# max(1, |value|)) before the float64 function counts as another function: far past float32's
# and bfloat16's rounding of a whole program, far short of a different random draw.
SAME_FUNCTION_RTOL = 0.05


def another_function(cmp: FdComparison, value: float, value64: float) -> FdComparison:
    """``cmp`` with nothing compared when ``f``'s float64 value ``value64`` at ``args`` is not
    its float32 ``value`` (:data:`SAME_FUNCTION_RTOL`): the differences are then of another
    function (random bits drawn with x64 on differ, a branch on the dtype), and holding the
    gradient to them would report a disagreement about the wrong function. ``cmp`` unchanged
    when the values agree or either is not finite (the non-finite checks say more there)."""
    if not (math.isfinite(value) and math.isfinite(value64)):
        return cmp
    if abs(value64 - value) <= SAME_FUNCTION_RTOL * max(1.0, abs(value)):
        return cmp
    why = (
        f"f's value at args is {value:.6g} in float32 but {value64:.6g} in float64: the "
        "float64 run computes another function (a random draw gives other bits with x64 on; a "
        "branch or a dtype chosen by x64), so its finite differences cannot check this gradient"
    )
    note = FdNotCompared(
        path="f(*args)",
        index=[],
        gradient=number(value),
        gradient_f64=number(value64),
        finite_difference=None,
        why=why,
        reason="another_function",
    )
    for leaf in cmp.leaves:
        leaf.checked = leaf.disagree = 0
    return dataclasses.replace(
        cmp,
        checked=0,
        disagreements=[],
        disagree_count=0,
        all_zero=False,
        not_compared=[note],
        not_compared_count=1,
    )


def headline(cmp: FdComparison, elements: int, sampled: int, unsampled_leaves: int = 0) -> str:
    """The verdict as one sentence (module docstring). ``unsampled_leaves``: the non-empty
    leaves without a single difference (the sample had fewer elements than there are leaves:
    the spread alone, some leaves none), said instead of "a few of each leaf"."""
    if cmp.not_compared and cmp.not_compared[0].reason == "another_function":
        return f"Not checked: {cmp.not_compared[0].why}."
    held = sorted({leaf.held_at for leaf in cmp.leaves if leaf.checked})
    precision = " and ".join(held) if held else "its dtype's"
    everywhere = (
        f"every element ({cmp.checked:,})"
        if sampled >= elements
        else (
            f"the {cmp.checked:,} sampled elements (of {elements:,}; a few of each leaf, "
            "the rest evenly spaced)"
            if not unsampled_leaves
            else f"the {cmp.checked:,} sampled elements (of {elements:,}, evenly spaced; "
            f"{unsampled_leaves:,} leaves not sampled at all)"
        )
    )
    if cmp.verdict == "disagree":
        first = cmp.disagreements[0]
        where = _where(first.path, tuple(first.index))
        return (
            f"The gradient disagrees with the float64 finite differences at "
            f"{cmp.disagree_count:,} of {cmp.checked:,} checked elements; first at {where}: "
            f"{first.why}."
        )
    if cmp.verdict == "agree":
        agrees = (
            f"The gradient agrees with the float64 finite differences at {everywhere}, within "
            f"{precision} precision"
        )
        return f"{agrees}: {zero_note(sampled >= elements)}." if cmp.all_zero else f"{agrees}."
    if not cmp.not_compared:
        return "Nothing to check: no element was differenced."
    first_out = cmp.not_compared[0]
    where = _where(first_out.path, tuple(first_out.index))
    agree = "element agrees" if cmp.checked == 1 else "elements agree"
    others = (
        f"the {cmp.checked:,} other checked {agree} at {precision} precision"
        if cmp.checked
        else "no element could be held to a finite difference"
    )
    zero = f" {_capital(zero_note(False, checked=True))}." if cmp.all_zero else ""
    return (
        f"Not fully checked: {cmp.not_compared_count:,} element"
        f"{'s were' if cmp.not_compared_count != 1 else ' was'} left out, first {where}: "
        f"{first_out.why}; {others}.{zero}"
    )


def zero_note(every: bool, checked: bool = False) -> str:
    """The words a check whose values are all exactly 0 adds to its headline: agreement between
    zeros says nothing about the rules: f is flat there (a stationary point, or a vanishing
    gradient). ``every``: every element was
    differenced; ``checked``: some were left out (the differences named are the checked ones)."""
    if checked:
        differences = "every finite difference checked"
    elif every:
        differences = "of the finite difference"
    else:
        differences = "every finite difference taken"
    return (
        f"every element of the gradient and {differences} is 0 — f is flat at these inputs at "
        "float64 precision (a stationary point, or a vanishing gradient: an underflow, a map "
        "that forgets its input)"
    )


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:]
