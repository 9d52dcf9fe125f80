"""Whether the compiled program keeps each sharding annotation written inside ``f``.

``jax.lax.with_sharding_constraint(x, P('data'))`` on a dimension that the mesh axis does not
divide is accepted inside ``jit`` and compiled as replicated (jax-ml/jax#26946); a
``jax.device_put(x, sharding)`` inside ``jit`` lowers to nothing on an Auto mesh (JAX's lowering
rule for ``device_put`` returns its operand unchanged). JAX raises for neither. Each annotation
of ``f``'s jaxpr (``jaxscope.internals.api.sharding_annotations``) is compared with what the
compiler made of it: for one of ``f``'s outputs, ``Compiled.output_shardings`` of ``jax.jit(f)``
itself; for a value later eqns compute from, the same annotation compiled alone on a value of
its type (``jax.jit`` of the one call), since the compiled ``f`` names no sharding for
intermediates. Equivalence is ``Sharding.is_equivalent_to`` (JAX's own).
"""

from __future__ import annotations

import math
from typing import Any

import jax
from jax.sharding import AbstractMesh, Mesh, NamedSharding
from jaxscope.exhibit_api import ShardingAnnotation, sharding_annotations

from exhibits.sharding.events import AnnotationCheck, ShardingAnnotationsChecked

MAX_CHECKS = 32  # annotations compiled alone, at most (each is one small compile)


def _concrete(sharding: Any, mesh: Mesh) -> Any:
    """A ``P`` given under ``jax.set_mesh`` is recorded on the abstract mesh: the same spec
    on the probe's mesh."""
    if isinstance(sharding, NamedSharding) and isinstance(sharding.mesh, AbstractMesh):
        return NamedSharding(mesh, sharding.spec)
    return sharding


def spec_of(sharding: Any) -> str:
    """``replicated``, or the ``PartitionSpec`` of a ``NamedSharding``, else ``str``."""
    if sharding.is_fully_replicated:
        return "replicated"
    spec = getattr(sharding, "spec", None)
    return str(spec) if spec is not None else str(sharding)


def indivisible(sharding: Any, shape: tuple[int, ...]) -> str | None:
    """The first dimension of ``shape`` that ``sharding``'s mesh axes do not divide, in words."""
    spec = getattr(sharding, "spec", None)
    mesh = getattr(sharding, "mesh", None)
    if spec is None or mesh is None:
        return None
    sizes = dict(mesh.shape)
    for axis, (dim, names) in enumerate(zip(shape, spec, strict=False)):
        if names is None:
            continue
        names = (names,) if isinstance(names, str) else tuple(names)
        parts = math.prod(sizes.get(n, 1) for n in names)
        if parts > 1 and dim % parts:
            axes = ", ".join(f"'{n}'" for n in names)
            return (
                f"axis {axis} of size {dim} does not divide among the {parts} devices of mesh"
                f" axis {axes}"
            )
    return None


def _alone(a: ShardingAnnotation, requested: Any) -> Any:
    """The output sharding of the annotation compiled alone on a value of its type."""
    value = jax.ShapeDtypeStruct(a.shape, a.dtype)  # type: ignore[no-untyped-call]
    if a.primitive == "device_put":
        fn = lambda v: jax.device_put(v, requested)  # noqa: E731
    else:
        fn = lambda v: jax.lax.with_sharding_constraint(v, requested)  # type: ignore[no-untyped-call]  # noqa: E731
    (got,) = jax.tree.leaves(
        jax.jit(fn).trace(value).lower().compile().output_shardings,
        is_leaf=lambda s: isinstance(s, jax.sharding.Sharding),
    )
    return got


def check(closed_jaxpr: Any, compiled: Any, mesh: Mesh) -> ShardingAnnotationsChecked:
    """Each annotation of ``closed_jaxpr`` (``jax.jit(f)``'s, traced under ``jax.set_mesh``)
    against ``compiled`` (its compiled program) or compiled alone (module docstring). Call it
    under the same ``jax.set_mesh``."""
    outputs = jax.tree.leaves(
        compiled.output_shardings, is_leaf=lambda s: isinstance(s, jax.sharding.Sharding)
    )
    checks: list[AnnotationCheck] = []
    for a in sharding_annotations(closed_jaxpr)[:MAX_CHECKS]:
        requested = _concrete(a.sharding, mesh)
        cut = indivisible(requested, a.shape)
        reason = fix = None
        kept: bool | None
        if a.output_index is not None and a.output_index < len(outputs):
            got, where = outputs[a.output_index], f"output[{a.output_index}]"
        elif cut is not None and a.primitive != "device_put":
            # An intermediate split unevenly: XLA keeps it (padded), while the same constraint
            # compiled alone is a jit output, which comes back replicated whatever was kept.
            got, where = None, "inside f"
        else:
            got, where = _alone(a, requested), "inside f"
        if got is None:
            kept = None
            reason = (
                f"{cut}: inside f XLA may keep an uneven split (padded); the exhibit cannot read"
                " an intermediate's sharding from the compiled program"
            )
        elif not (kept := bool(got.is_equivalent_to(requested, len(a.shape)))):
            if a.primitive == "device_put":
                reason = "inside jit, jax.device_put to a sharding lowers to nothing (JAX's"
                reason += " lowering rule returns the value as it is): the compiler never sees it"
                fix = "use jax.lax.with_sharding_constraint inside jit, or jit's out_shardings"
            elif cut is not None:
                reason = f"{cut}: XLA replicates it instead of splitting it unevenly"
                fix = "pad that dimension to a multiple of the devices, or shard another axis"
            else:
                reason = "the compiler chose another layout for this value"
                fix = "constrain the value where it is returned, or use jit's out_shardings"
        checks.append(
            AnnotationCheck(
                primitive=a.primitive,
                source=a.source,
                spec=str(getattr(requested, "spec", requested)),
                shape=list(a.shape),
                dtype=a.dtype,
                kept=kept,
                got="not measured" if got is None else spec_of(got),
                where=where,
                reason=reason,
                fix=fix,
                user_jit=a.in_jit,
            )
        )
    return ShardingAnnotationsChecked(annotations=checks)
