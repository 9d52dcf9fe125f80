"""Precision lost in a bfloat16/float16 result (issue 33, class 5): ``f`` run eqn by eqn as
written and in float32 (``jaxscope.internals.precision_loss``, through ``exhibit_api``), each
origin of a loss turned into a :class:`DtypeChange` of kind ``precision_lost`` with the fix that
applies to its eqn: a float32 accumulator for an eqn that accumulates (``dot_general``:
``preferred_element_type``; a sum: ``dtype=``), a float32 carry for a loop or a ``cond``, a later
cast for an explicit ``astype``, else float32 operands; each then says to carry the float32
value through what it meets and cast down only at the end (:data:`CARRY`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax
import numpy as np
from jaxscope.exhibit_api import PrecisionLoss, precision_losses

from .events import DtypeChange

_CONTROL_FLOW = frozenset({"scan", "while", "cond"})
_SUMS = frozenset({"reduce_sum", "cumsum", "reduce_prod", "cumprod"})
# What the user calls to convert on purpose (a conversion inside a library function, such as
# jnp.linalg.norm's back to float16, is that function's: the fix is its operand's dtype).
_CASTS = frozenset({"astype", "asarray", "array", "convert_element_type"})


# What the float32 value must meet after the fix: a {dtype} operand it meets later would be
# promoted to float32 by JAX, but narrowing the float32 value instead (the generic advice for a
# promotion) restores the loss (issue 33 audit; docs/design/0062).
CARRY = (
    "carry the float32 value through what it meets after this line (upcast the {dtype} values"
    " it meets there too, `y.astype(jnp.float32)`, rather than casting it back to {dtype}),"
    " and cast down to {dtype} only at the end, where the lost digits no longer matter"
)


def _called(api: str) -> str:
    """The function ``api`` names, without its module or a leading underscore."""
    return api.rsplit(".", 1)[-1].lstrip("_")


def fix_for(loss: PrecisionLoss) -> str:
    """The fix that applies to the eqn that lost precision."""
    dtype = loss.dtype
    if loss.primitive in ("dot_general", "conv_general_dilated"):
        return (
            "accumulate and return float32: `preferred_element_type=jnp.float32` in this"
            " `jnp.dot`/`jnp.matmul`/`jnp.einsum`/`lax.dot_general`/`lax.conv` call (the"
            f" operands stay {dtype}); {CARRY.format(dtype=dtype)}"
        )
    if loss.primitive in _SUMS:
        return (
            "reduce in float32: `dtype=jnp.float32` in this `jnp.sum`/`jnp.cumsum`/`jnp.prod`"
            f" (or upcast its operand, `x.astype(jnp.float32)`; the operand stays {dtype});"
            f" {CARRY.format(dtype=dtype)}"
        )
    if loss.primitive in _CONTROL_FLOW:
        return (
            f"keep the loop's carry (or the branch's result) in float32: `jnp.float32` for the"
            f" initial value, the {dtype} values upcast as they are added"
            " (`c + x.astype(jnp.float32)`); after the loop, "
            + CARRY.format(dtype=dtype).replace(" after this line", "")
        )
    # ``x.astype`` is JAX's ``_astype`` method: its name with the underscore is the user's cast
    if loss.primitive == "convert_element_type" and _called(loss.api) in _CASTS:
        return (
            f"keep this value in float32 (or an int dtype): {dtype} cannot hold it; cast to"
            f" {dtype} only what tolerates its rounding"
        )
    return (
        "compute this line in float32: upcast the operands (`x.astype(jnp.float32)`); "
        + CARRY.format(dtype=dtype)
    )


def _example(loss: PrecisionLoss) -> str:
    at = "[" + ", ".join(map(str, loss.index)) + "]" if loss.index else ""
    return f"result{at}: {loss.value!r} where float32 gives {loss.reference!r}"


def flat_arguments(plan_args: Sequence[Any], kwargs: dict[str, Any]) -> list[Any] | None:
    """The leaves ``jax.make_jaxpr(f)`` takes as its inputs (dynamic positional arguments,
    then keywords), as arrays; None when one is abstract (a ``jax.ShapeDtypeStruct``)."""
    leaves = jax.tree_util.tree_leaves((tuple(plan_args), kwargs))
    if any(isinstance(x, jax.ShapeDtypeStruct) for x in leaves):
        return None
    return [x if hasattr(x, "dtype") else np.asarray(x) for x in leaves]


def precision_changes(
    closed: Any, leaves: list[Any] | None
) -> tuple[list[DtypeChange], str | None]:
    """The ``precision_lost`` changes of ``closed`` run on ``leaves``, and why none was
    looked for (None when they were)."""
    if leaves is None:
        low = [x for x in jax.tree_util.tree_leaves(closed.in_avals) if _low(x.dtype)]
        return (
            [],
            "abstract arguments (jax.ShapeDtypeStruct): no values to compare" if low else None,
        )
    if len(leaves) != len(closed.jaxpr.invars):
        return [], "the arguments do not match the jaxpr's inputs one to one"
    try:
        found = precision_losses(closed, [jax.numpy.asarray(x) for x in leaves])
    except Exception as exc:  # an eqn that cannot run on its own: the other findings stand
        return [], f"f could not run eqn by eqn ({type(exc).__name__})"
    if found is None:
        return [], "f has too many eqns to run twice eqn by eqn, or a callback whose result it uses"
    return [
        DtypeChange(
            kind="precision_lost",
            api=loss.api,
            source=loss.source,
            from_dtype=loss.dtype,
            to_dtype="float32",
            from_type=loss.type,
            to_type=loss.type.replace(_short(loss.dtype), "f32", 1),
            changed=loss.changed,
            total=loss.total,
            example=_example(loss),
            corrupted=loss.changed,
            corruption=loss.kind,
            corrupt_example=_example(loss),
            count=loss.count,
            primitive=loss.primitive,
            fix=fix_for(loss),
            finding=True,
        )
        for loss in found
    ], None


def _low(dtype: Any) -> bool:
    return bool(jax.numpy.issubdtype(dtype, jax.numpy.floating)) and np.dtype(dtype).itemsize < 4


def _short(dtype: str) -> str:
    return {"bfloat16": "bf16", "float16": "f16"}.get(dtype, dtype.replace("float", "f"))
