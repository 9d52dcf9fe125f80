"""The sharding exhibit's probe: name the devices (``mesh``), annotate an array (``spec``), read
what the compiler did.

The snippet defines ``mesh`` (a ``jax.sharding.Mesh``, e.g. from ``jax.make_mesh``), ``spec``
(a ``PartitionSpec``; default ``P()``, replicated), ``f`` and ``args``. ``options.mesh`` /
``options.spec`` / ``options.array_shape`` override them (Python expressions evaluated in the
snippet's namespace, with ``jax``, ``jnp``, ``np``, ``P``, ``NamedSharding``, ``AxisType``
available); an ``array_shape`` replaces ``args[0]`` by ``arange`` of that shape in its dtype.

Events, in order:

* stage ``call``: :class:`ShardingPlaced` ``args[0]``:
  ``jax.device_put(args[0], NamedSharding(mesh, spec))`` and its ``addressable_shards``;
* stage ``trace``: :class:`JaxprStaged`, ``jax.jit(f).trace(x, *args[1:])`` (``x`` the placed
  ``args[0]``), under ``jax.set_mesh(mesh)`` (so that ``P(...)`` works as an ``out_sharding``);
* stages ``lower``/``compile``: :class:`CollectivesFound` from ``Compiled.as_text()``, then
  :class:`ShardingAnnotationsChecked`: whether the compiled program keeps each
  ``with_sharding_constraint``/``device_put`` written inside ``f`` (``kept.py``);
* stage ``run``: one :class:`ShardingPlaced` per output leaf of ``f(x, *args[1:])`` called as
  the user calls it (``output``, or ``output[i]``), then one per output leaf of ``jax.jit(f)``
  (``jax.jit(f) output``, ``jax.jit(f) output[i]``): inside ``jit``, a ``device_put`` to a
  ``NamedSharding`` of an Auto mesh lowers to nothing (JAX 0.10.2), so the two can differ.

JAX's sharding errors (``IndivisibleError``, ``DuplicateSpecError``, ``ShardingTypeError``) are
shown beside the picture: a :class:`ShardingErrorExplained` with JAX's class and message, then
the error propagates unchanged (the run ends in ``run_failed``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Literal

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import AxisType, Mesh, NamedSharding, PartitionSpec
from jaxscope.exhibit_api import (
    EventModel,
    InvalidSnippet,
    JaxprStaged,
    ProbeContext,
    blame_line,
    explain,
    jaxpr_view,
    mark_during,
    options_as,
    plan_call,
    setting_line,
)

from exhibits.sharding.events import CollectivesFound

from .kept import check as check_annotations
from .options import ShardingOptions
from .reading import collectives_in, counts_of, explain_error, placed
from .settings import (
    check_array_shape,
    check_first_arg,
    check_mesh,
    check_spec,
    eval_option,
)

MAX_ELEMENTS = 1 << 24


def _env(namespace: dict[str, Any]) -> dict[str, Any]:
    """The snippet's namespace, with the sharding names an expression is likely to use."""
    env: dict[str, Any] = {
        "jax": jax,
        "jnp": jnp,
        "np": np,
        "P": PartitionSpec,
        "PartitionSpec": PartitionSpec,
        "NamedSharding": NamedSharding,
        "AxisType": AxisType,
        "Mesh": Mesh,
    }
    env.update(namespace)
    return env


def _mesh(ctx: ProbeContext, env: dict[str, Any]) -> Mesh:
    option = eval_option(options_as(ctx.options, ShardingOptions).mesh, "mesh", env)
    if option is not None:
        return check_mesh(ctx.snippet, option, "options.mesh")
    return check_mesh(ctx.snippet, ctx.snippet.namespace.get("mesh"), "mesh")


def _spec(
    ctx: ProbeContext, env: dict[str, Any]
) -> tuple[PartitionSpec, Literal["spec", "options.spec"]]:
    """The spec to place ``args[0]`` with, and the name it came from (``options.spec`` or the
    snippet's ``spec``)."""
    option = eval_option(options_as(ctx.options, ShardingOptions).spec, "spec", env)
    if option is not None:
        return check_spec(ctx.snippet, option, "options.spec"), "options.spec"
    return check_spec(ctx.snippet, ctx.snippet.namespace.get("spec"), "spec"), "spec"


def _first_arg(ctx: ProbeContext, env: dict[str, Any], plan: Any) -> Any:
    shape = eval_option(options_as(ctx.options, ShardingOptions).array_shape, "array_shape", env)
    if shape is None:
        return check_first_arg(ctx.snippet, plan.args, plan.normalized_argnums())
    dims = check_array_shape(shape)
    size = math.prod(dims)
    if size > MAX_ELEMENTS:
        raise InvalidSnippet(
            f"options.array_shape {dims} has {size} elements (at most {MAX_ELEMENTS})"
        )
    dtype = getattr(plan.args[0], "dtype", np.float32) if plan.args else np.float32
    return np.arange(size, dtype=dtype).reshape(dims)


@contextmanager
def _explained(emit: Callable[[EventModel], None], where: str) -> Iterator[None]:
    """Emit JAX's sharding errors, explained, and let them propagate unchanged. A bare
    ``AssertionError`` (JAX's ``(0, P('x',))`` for a rank-0 array placed with ``P('x')`` on an
    Explicit mesh, wherever it is placed: args[0] or a ``device_put`` inside f) also carries the
    explanation and the fix into ``run_failed`` (the error panel, the CLI's ``why:``)."""
    try:
        yield
    except Exception as error:
        event = explain_error(error, where)
        if event is not None:
            emit(event)
            if isinstance(error, AssertionError):
                explain(error, f"{event.explanation} {event.fix or ''}".strip())
        raise


def run(ctx: ProbeContext) -> None:
    """Run the sharding exhibit on ``ctx.snippet`` (user exceptions propagate unchanged)."""
    plan = plan_call(ctx.snippet)
    env = _env(ctx.snippet.namespace)
    mesh = _mesh(ctx, env)
    spec, spec_name = _spec(ctx, env)
    first = _first_arg(ctx, env, plan)
    with ctx.stage("call"), _explained(ctx.emit, "args[0]"):
        try:
            x = jax.device_put(first, NamedSharding(mesh, spec))
        except Exception as exc:  # JAX's error, unchanged, at the line that sets the spec
            line = setting_line(ctx.snippet.source, spec_name) if spec_name == "spec" else None
            blame_line(
                exc,
                line or setting_line(ctx.snippet.source, "args"),
                explanation=f"JAX raised this placing args[0] with NamedSharding(mesh, "
                f"{spec_name}) = NamedSharding(mesh, {spec}), before f ran.",
            )
            raise mark_during(exc, "while placing args[0] (jax.device_put)") from None
    given = spec_name == "options.spec" or ctx.snippet.namespace.get("spec") is not None
    ctx.emit(placed("args[0]", x, spec_origin=spec_name if given else "default"))

    args = (x, *plan.args[1:])
    jf = plan.jit()
    with jax.set_mesh(mesh), _explained(ctx.emit, "f"):
        with ctx.stage("trace"):
            traced: Any = jf.trace(*args, **plan.kwargs, **plan.static_kwargs)
        ctx.emit(JaxprStaged(fun_name=plan.fun_name, jaxpr=jaxpr_view(traced.jaxpr)))
        with ctx.stage("lower"):
            lowered: Any = traced.lower()
        with ctx.stage("compile"):
            compiled: Any = lowered.compile()
        hlo = str(compiled.as_text())
        found = collectives_in(hlo)
        is_sharding = lambda s: isinstance(s, jax.sharding.Sharding)  # noqa: E731
        ctx.emit(
            CollectivesFound(
                hlo=hlo,
                collectives=found,
                counts=counts_of(found),
                input_shardings=[
                    str(s) for s in jax.tree.leaves(compiled.input_shardings, is_leaf=is_sharding)
                ],
                output_shardings=[
                    str(s) for s in jax.tree.leaves(compiled.output_shardings, is_leaf=is_sharding)
                ],
            )
        )
        ctx.emit(check_annotations(traced.jaxpr, compiled, mesh))
        with ctx.stage("run"):
            # What f returns as the user calls it (a device_put inside f places its output),
            # then what jax.jit(f) returns: inside jit a device_put to a NamedSharding on an
            # Auto mesh is not a constraint, and the partitioner may choose another layout.
            eager = _array_leaves(plan.call(plan.f, args))
            jitted = _array_leaves(plan.call(jf, args))
    for prefix, leaves in (("output", eager), ("jax.jit(f) output", jitted)):
        for i, leaf in enumerate(leaves):
            ctx.emit(placed(prefix if len(leaves) == 1 else f"{prefix}[{i}]", leaf))


def _array_leaves(out: Any) -> list[jax.Array]:
    leaves = [leaf for leaf in jax.tree.leaves(out) if isinstance(leaf, jax.Array)]
    jax.block_until_ready(leaves)  # type: ignore[no-untyped-call]
    return leaves
