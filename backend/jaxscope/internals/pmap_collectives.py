"""The collectives of a ``shard_map`` body, run on the devices one eqn at a time (the pmap
exhibit's data movement).

``jax.pmap(f)`` stages, in JAX 0.10.2, a ``jit`` whose jaxpr is one ``shard_map`` eqn
(``jax._src.pmap._cached_shard_map``): its params hold the one-axis ``mesh``, ``in_specs``/
``out_specs`` (one ``PartitionSpec`` per flat input/output), ``check_vma=False`` and ``jaxpr``,
the body each device runs. To show what a collective eqn of that body moves, the body is cut
after the eqn (``core.Jaxpr.replace``: the same eqns up to it, the eqn's operand and result as
the outputs) and run as pmap runs the whole body, a ``jit`` of a ``shard_map`` over the same
mesh and specs; each value comes back with a leading axis of 1, which ``out_specs=P(axis)``
stacks over the devices. The values are the devices' own, not a re-enactment.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax._src import core
from jax.sharding import PartitionSpec


def shard_map_body(eqn: core.JaxprEqn) -> core.ClosedJaxpr:
    """The body of a ``shard_map`` eqn, closed with no consts (staging hoists the body's
    consts into leading inputs)."""
    return core.ClosedJaxpr(eqn.params["jaxpr"], ())


def collective_values(
    eqn: core.JaxprEqn, inputs: Sequence[Any], index: int, operand: int = 0
) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Operand ``operand`` of body eqn ``index`` of the ``shard_map`` eqn ``eqn``, and its
    result, on every device of the eqn's mesh (mesh order): the body cut after that eqn, run
    under ``jax.jit(jax.shard_map(..., check_vma=False))`` on ``inputs`` (the global arrays the
    eqn reads, one per invar)."""
    body = eqn.params["jaxpr"]
    target = body.eqns[index]
    cut = body.replace(
        outvars=[target.invars[operand], target.outvars[operand]],
        eqns=body.eqns[: index + 1],
        debug_info=body.debug_info.with_unknown_names(),
    )
    fun = core.jaxpr_as_fun(core.ClosedJaxpr(cut, ()))
    mesh = eqn.params["mesh"]
    (axis,) = mesh.axis_names

    def per_device(*xs: Any) -> list[Any]:
        return [jnp.expand_dims(v, 0) for v in fun(*xs)]

    run = jax.jit(
        jax.shard_map(
            per_device,
            mesh=mesh,
            in_specs=tuple(eqn.params["in_specs"]),
            out_specs=PartitionSpec(axis),
            check_vma=False,
        )
    )
    before, after = run(*inputs)
    return [np.asarray(r) for r in before], [np.asarray(r) for r in after]
