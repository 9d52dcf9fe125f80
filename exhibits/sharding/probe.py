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
* stages ``lower``/``compile``: :class:`CollectivesFound` from ``Compiled.as_text()``;
* stage ``run``: one :class:`ShardingPlaced` per output leaf of ``f(x, *args[1:])`` called as
  the user calls it (``output``, or ``output[i]``), then one per output leaf of ``jax.jit(f)``
  (``jax.jit(f) output``, ``jax.jit(f) output[i]``): inside ``jit``, a ``device_put`` to a
  ``NamedSharding`` of an Auto mesh lowers to nothing (JAX 0.10.2), so the two can differ.

JAX's sharding errors (``IndivisibleError``, ``DuplicateSpecError``, ``ShardingTypeError``) are
shown beside the picture: a :class:`ShardingErrorExplained` with JAX's class and message, then
the error propagates unchanged (the run ends in ``run_failed``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import AxisType, Mesh, NamedSharding, PartitionSpec
from jaxscope.internals.calling import plan_call
from jaxscope.internals.views import jaxpr_view
from jaxscope.protocol import CollectivesFound, EventModel, JaxprStaged
from jaxscope.sandbox.probe_api import ProbeContext

from .reading import collectives_in, counts_of, explain_error, placed

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


def _eval(option: str | None, namespace: dict[str, Any]) -> Any:
    if option is None or not option.strip():
        return None
    return eval(option, _env(namespace))  # the user's own expression, in the sandbox


def _as_spec(value: Any) -> PartitionSpec:
    if value is None:
        return PartitionSpec()  # type: ignore[no-untyped-call]
    if isinstance(value, PartitionSpec):
        return value
    if isinstance(value, tuple | list):
        return PartitionSpec(*value)  # type: ignore[no-untyped-call]
    if isinstance(value, str):
        return PartitionSpec(value)  # type: ignore[no-untyped-call]
    raise TypeError(f"spec must be a jax.sharding.PartitionSpec, got {type(value).__name__}")


def _mesh(ctx: ProbeContext) -> Mesh:
    namespace = ctx.snippet.namespace
    value = _eval(ctx.options.mesh, namespace)
    if value is None:
        value = namespace.get("mesh")
    if value is None:
        raise NameError(
            "the sharding exhibit needs a `mesh`: define one in the snippet, e.g. "
            "mesh = jax.make_mesh((2, 4), ('x', 'y'))"
        )
    if not isinstance(value, Mesh):
        raise TypeError(f"mesh must be a jax.sharding.Mesh, got {type(value).__name__}")
    return value


def _first_arg(ctx: ProbeContext, args: tuple[Any, ...]) -> Any:
    shape = _eval(ctx.options.array_shape, ctx.snippet.namespace)
    if shape is None:
        if not args:
            raise ValueError("the sharding exhibit places args[0]: args is empty")
        return args[0]
    dims = (int(shape),) if isinstance(shape, int) else tuple(int(d) for d in shape)
    size = int(np.prod(dims)) if dims else 1
    if size > MAX_ELEMENTS:
        raise ValueError(f"array_shape {dims} has {size} elements (at most {MAX_ELEMENTS})")
    dtype = getattr(args[0], "dtype", np.float32) if args else np.float32
    return np.arange(size, dtype=dtype).reshape(dims)


@contextmanager
def _explained(emit: Callable[[EventModel], None], where: str) -> Iterator[None]:
    """Emit JAX's sharding errors, explained, and let them propagate unchanged."""
    try:
        yield
    except Exception as error:
        event = explain_error(error, where)
        if event is not None:
            emit(event)
        raise


def run(ctx: ProbeContext) -> None:
    """Run the sharding exhibit on ``ctx.snippet`` (user exceptions propagate unchanged)."""
    plan = plan_call(ctx.snippet)
    mesh = _mesh(ctx)
    spec_value = _eval(ctx.options.spec, ctx.snippet.namespace)
    if spec_value is None:
        spec_value = ctx.snippet.namespace.get("spec")
    with ctx.stage("call"), _explained(ctx.emit, "args[0]"):
        spec = _as_spec(spec_value)
        first = _first_arg(ctx, plan.args)
        x = jax.device_put(first, NamedSharding(mesh, spec))
    ctx.emit(placed("args[0]", x))

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
