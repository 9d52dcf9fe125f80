"""The export exhibit's round trip: ``exported.serialize()`` -> ``jax.export.deserialize`` ->
``.call`` against ``jax.jit(f)`` at the snippet's ``args``, and, for a shape-polymorphic
export, at another value of the dimension variables (each doubled: ``b=3`` -> ``b=6``, with the
arguments' data repeated to the new shapes by ``np.resize``) and at 0, which JAX's shape check
refuses. Also the key paths JAX's messages
name flat arguments by. Public ``jax.export``; the dimension values through
``jaxscope.internals.api``."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jaxscope.exhibit_api import CallPlan, block_until_ready, concrete_shape, dim_values

from .events import ExportRoundTripped, RoundTripCall

# The Exported fields a deserialized export must give back unchanged.
SAME_FIELDS = (
    "fun_name",
    "in_tree",
    "in_avals",
    "out_tree",
    "out_avals",
    "platforms",
    "calling_convention_version",
    "nr_devices",
    "module_kept_var_idx",
    "uses_global_constants",
    "mlir_module_serialized",
)

# np.allclose's tolerance for floating outputs (the exported module and jit(f) compile the same
# StableHLO but a polymorphic module may fuse differently).
RTOL, ATOL = 1e-5, 1e-6


def same_field(a: Any, b: Any, name: str) -> bool:
    """Whether two ``Exported`` fields are the same: avals by their text, since a deserialized
    export's dimension variables live in a new ``SymbolicScope`` and never compare equal to the
    original's (``b == b`` across scopes is an error, not False)."""
    if name.endswith("_avals"):
        return [str(_strong(x)) for x in a] == [str(_strong(x)) for x in b]
    return bool(a == b)


def _strong(aval: Any) -> Any:
    """``aval`` without its weak type: JAX serializes an aval's shape and dtype only, so a
    deserialized export's in_avals are never weakly typed (``~float32[]`` comes back
    ``float32[]``); that loss is said in the round trip's note, not counted as a difference."""
    return aval.update(weak_type=False) if getattr(aval, "weak_type", False) else aval


def weak_types_lost(exported: Any, back: Any) -> str | None:
    """The note for the avals that were weakly typed before the round trip (a Python scalar
    argument, a result computed from one only) and are not after it, or None."""
    pairs = [
        *zip(flat_paths(exported.in_tree), exported.in_avals, back.in_avals, strict=True),
        *zip(out_paths(exported.out_tree), exported.out_avals, back.out_avals, strict=True),
    ]
    lost = [
        f"{path} ({a})"
        for path, a, b in pairs
        if getattr(a, "weak_type", False) and not getattr(b, "weak_type", False)
    ]
    if not lost:
        return None
    return (
        "the deserialized export's avals are strongly typed where the original's were weak: "
        f"{', '.join(lost)} (a serialized aval keeps its shape and dtype only)"
    )


def flat_paths(in_tree: Any) -> list[str]:
    """The key path of each flat leaf of an ``(args, kwargs)`` tree as JAX's export messages
    write it (``args[1]``, ``args[0]['w1']``, ``kwargs['y']``)."""
    args, kwargs = jax.tree_util.tree_unflatten(in_tree, range(in_tree.num_leaves))
    return [
        prefix + jax.tree_util.keystr(path)
        for prefix, tree in (("args", args), ("kwargs", kwargs))
        for path, _ in jax.tree_util.tree_flatten_with_path(tree)[0]
    ]


def out_paths(out_tree: Any) -> list[str]:
    """The key path of each flat result (``out``, ``out[0]``, ``out['y']``)."""
    tree = jax.tree_util.tree_unflatten(out_tree, range(out_tree.num_leaves))
    return [
        "out" + jax.tree_util.keystr(p) for p, _ in jax.tree_util.tree_flatten_with_path(tree)[0]
    ]


def dynamic_tree(plan: CallPlan, args: Sequence[Any], dynamic: Sequence[int]) -> Any:
    """The ``(args, kwargs)`` an ``Exported`` is called with: the dynamic positional ones."""
    return (tuple(args[i] for i in dynamic), plan.kwargs)


def dim_values_of(exported: Any, plan: CallPlan, dynamic: Sequence[int]) -> dict[str, int]:
    """Each dimension variable's value for the snippet's ``args``, as the module computes it."""
    leaves = jax.tree_util.tree_leaves(dynamic_tree(plan, plan.args, dynamic))
    return dim_values(exported.in_avals, exported.in_tree, [np.shape(x) for x in leaves])


def round_trip(
    exported: Any, plan: CallPlan, jitted: Any, dynamic: Sequence[int]
) -> ExportRoundTripped:
    """Serialize, deserialize, and call the deserialized export against ``jitted``."""
    start = time.perf_counter()
    blob = exported.serialize()
    serialize_ms = (time.perf_counter() - start) * 1e3
    start = time.perf_counter()
    back = jax.export.deserialize(blob)
    deserialize_ms = (time.perf_counter() - start) * 1e3
    same = all(same_field(getattr(back, k), getattr(exported, k), k) for k in SAME_FIELDS)
    platform = jax.export.default_export_platform()
    calls: list[RoundTripCall] = []
    note = weak_types_lost(exported, back)
    if platform not in exported.platforms:
        note = "; ".join(
            n
            for n in (
                f"exported for {', '.join(exported.platforms)}: this worker's platform, "
                f"{platform}, is not among them, so the deserialized export cannot be called here",
                note,
            )
            if n
        )
    else:
        symbolic = any(not isinstance(d, int) for a in exported.in_avals for d in a.shape)
        try:
            values = dim_values_of(exported, plan, dynamic) if symbolic else {}
        except ValueError:
            # args break a constraint (one the snippet gave: `b >= 5` with 3 rows): the module
            # refuses even this call, and its row shows JAX's message.
            calls.append(call_once("args", back, plan, jitted, plan.args, dynamic, {}))
            values = {}
        else:
            calls.append(
                call_once("args", back, plan, jitted, plan.args, dynamic, values, raising=True)
            )
        if values:
            other = {v: 2 * n for v, n in values.items()}
            label = ", ".join(f"{v}={n}" for v, n in other.items())
            resized = resized_args(exported, plan, dynamic, other)
            calls.append(call_once(label, back, plan, jitted, resized, dynamic, other))
            # Every variable 0 breaks the ">= 1" JAX derives for each: the deserialized module
            # refuses the call with the message of its shape assertion.
            zero = {v: 0 for v in values}
            try:
                empty = resized_args(exported, plan, dynamic, zero)
            except ValueError:  # a dimension such as b - 1 has no size at b=0: no check call
                empty = None
            if empty is not None:
                label = ", ".join(f"{v}=0" for v in zero)
                check = call_once(label, back, plan, jitted, empty, dynamic, zero)
                calls.append(check.model_copy(update={"constraint_check": True}))
    return ExportRoundTripped(
        serialized_bytes=len(blob),
        same_fields=same,
        backend=platform,
        callable_here=platform in exported.platforms,
        calls=calls,
        note=note,
        serialize_ms=round(serialize_ms, 1),
        deserialize_ms=round(deserialize_ms, 1),
    )


def resized_args(
    exported: Any, plan: CallPlan, dynamic: Sequence[int], values: dict[str, int]
) -> tuple[Any, ...]:
    """``args`` with each argument leaf of a symbolic aval resized (``np.resize``: its data
    repeated) to that aval's shape at ``values``; the others as they are."""
    leaves, tree = jax.tree_util.tree_flatten(dynamic_tree(plan, plan.args, dynamic))
    new = [
        x
        if all(isinstance(d, int) for d in aval.shape)
        else np.resize(np.asarray(x), concrete_shape(aval.shape, values))
        for x, aval in zip(leaves, exported.in_avals, strict=True)
    ]
    dyn_args, _ = jax.tree_util.tree_unflatten(tree, new)
    full = list(plan.args)
    for i, a in zip(dynamic, dyn_args, strict=True):
        full[i] = a
    return tuple(full)


def call_once(
    label: str,
    back: Any,
    plan: CallPlan,
    jitted: Any,
    args: Sequence[Any],
    dynamic: Sequence[int],
    values: dict[str, int],
    raising: bool = False,
) -> RoundTripCall:
    """Call the deserialized export and ``jitted`` on ``args``; compare their outputs. JAX's
    error at another size (a shape assertion, ``f`` itself) is the row's ``error`` unless
    ``raising``."""
    dyn_args, kwargs = dynamic_tree(plan, args, dynamic)
    shapes = [
        jax.typeof(x).str_short(short_dtypes=True) for x in jax.tree_util.tree_leaves(dyn_args)
    ]
    start = time.perf_counter()
    try:
        got = block_until_ready(back.call(*dyn_args, **kwargs))
        call_ms = (time.perf_counter() - start) * 1e3
        want = jitted(*args, **kwargs)
    except Exception as exc:  # JAX's own error, shown on the row
        if raising:
            raise
        return RoundTripCall(
            label=label,
            dim_values=values,
            arg_shapes=shapes,
            out_avals=[],
            equal=False,
            identical=False,
            max_abs_diff=None,
            error=f"{type(exc).__name__}: {exc}",
            call_ms=round((time.perf_counter() - start) * 1e3, 1),
        )
    got_leaves, want_leaves = jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)
    equal, identical, diff = compare(got_leaves, want_leaves)
    return RoundTripCall(
        label=label,
        dim_values=values,
        arg_shapes=shapes,
        out_avals=[jax.typeof(x).str_short(short_dtypes=True) for x in got_leaves],
        equal=equal,
        identical=identical,
        max_abs_diff=diff,
        call_ms=round(call_ms, 1),
    )


def compare(got: Sequence[Any], want: Sequence[Any]) -> tuple[bool, bool, float | None]:
    """``(equal, identical, max_abs_diff)`` of two lists of output leaves (see
    ``RoundTripCall``)."""
    if len(got) != len(want):
        return False, False, None
    equal = identical = True
    diffs: list[float | None] = []
    for g, w in zip(got, want, strict=True):
        a, b = np.asarray(jax.device_get(g)), np.asarray(jax.device_get(w))
        if a.shape != b.shape or a.dtype != b.dtype:
            return False, False, None
        if jnp.issubdtype(a.dtype, jnp.inexact) and a.dtype.kind not in "fc":
            # bfloat16, float8_*: numpy's kind is 'V', so NaN == NaN was False (a false
            # difference) and no diff was taken; their values are exact in float64.
            a, b = a.astype(np.float64), b.astype(np.float64)
        floating = a.dtype.kind in "fc"
        identical = identical and bool(np.array_equal(a, b, equal_nan=floating))
        if floating:
            equal = equal and bool(np.allclose(a, b, rtol=RTOL, atol=ATOL, equal_nan=True))
        else:
            equal = equal and bool(np.array_equal(a, b))
        if a.dtype.kind in "biufc" and a.size:
            diffs.append(_max_abs_diff(a, b))
    if not diffs or None in diffs:
        return equal, identical, None
    return equal, identical, max(d for d in diffs if d is not None)


def _max_abs_diff(a: np.ndarray[Any, Any], b: np.ndarray[Any, Any]) -> float | None:
    """The largest ``|a - b|`` over the elements that differ (0.0 when none does): equal
    infinities and NaN beside NaN do not differ (``inf - inf`` is NaN, which made the whole
    maximum NaN, sent as None); None when an element differs by an infinite or NaN amount."""
    wide = np.complex128 if a.dtype.kind == "c" else np.float64
    x, y = a.astype(wide), b.astype(wide)
    same = (x == y) | (np.isnan(x) & np.isnan(y))
    with np.errstate(invalid="ignore"):  # inf - inf, where ``same`` already holds
        gaps = np.abs(x - y)[~same]
    if not gaps.size:
        return 0.0
    d = float(np.max(gaps))
    return d if np.isfinite(d) else None
