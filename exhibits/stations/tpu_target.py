"""Compiling the stations' program for a TPU v5e on a machine without one (design 0067).

Runs only in a "tpu_compile" worker (``jaxscope.sandbox.kinds``): libtpu is loaded there, with
its offline topology's settings, and the CPU stays the default backend. The TPU's devices come
from ``jax.experimental.topologies`` (no chip is opened); the program's arguments become
``jax.ShapeDtypeStruct``s placed on one of them, so that ``lower(lowering_platforms=("tpu",))``
and ``compile()`` are the TPU compiler's own. The compiled program is never run.
"""

from __future__ import annotations

from typing import Any

import jax
from jax.experimental import topologies
from jax.sharding import SingleDeviceSharding

# libtpu refuses a 1x1 v5e topology (its default is 2x2 chips per host); the program is
# compiled for one device of this one, one chip, as a v5e host with one chip runs it.
TOPOLOGY = "v5e:2x2"
PLATFORMS = ("tpu",)
# The target's name in the page's and the CLI's words (JAX's device_kind says "TPU v5 lite").
NAME = "TPU v5e"
NOT_RUN = (
    "compiled for {kind} by libtpu on a machine without one (offline topology {topology}, one "
    "chip): the HLO, layouts, memory and cost are the TPU compiler's; the program is not run"
)


def tpu_device() -> Any:
    """Device 0 of libtpu's offline ``v5e:2x2`` topology (a ``TpuDevice``; no chip opened)."""
    return topologies.get_topology_desc(topology_name=TOPOLOGY, platform="tpu").devices[0]


def not_run_caveat(device: Any) -> str:
    """The caveat a TPU compile's ``ExecutableCompiled`` carries."""
    return NOT_RUN.format(kind=device.device_kind, topology=TOPOLOGY)


def placed_aval(leaf: Any, sharding: SingleDeviceSharding) -> Any:
    """``leaf`` as a ``jax.ShapeDtypeStruct`` on ``sharding`` when it is an array, a
    ``ShapeDtypeStruct`` or a Python number (weakly typed, as JAX traces one); any other leaf
    (a static value, None) unchanged."""
    aval: Any = jax.ShapeDtypeStruct  # untyped in JAX's stubs
    if isinstance(leaf, (bool, int, float, complex)):
        return aval((), jax.numpy.asarray(leaf).dtype, sharding=sharding, weak_type=True)
    shape, dtype = getattr(leaf, "shape", None), getattr(leaf, "dtype", None)
    if shape is None or dtype is None:
        return leaf
    weak = bool(getattr(leaf, "weak_type", False))
    return aval(tuple(shape), dtype, sharding=sharding, weak_type=weak)


def placed(
    args: tuple[Any, ...], kwargs: dict[str, Any], static: set[int], device: Any
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """``args`` (the static positions ``static`` kept as they are) and ``kwargs`` with every
    array leaf an abstract value on ``device`` (:func:`placed_aval`)."""
    sharding = SingleDeviceSharding(device)
    out = tuple(
        a if i in static else jax.tree.map(lambda x: placed_aval(x, sharding), a)
        for i, a in enumerate(args)
    )
    return out, jax.tree.map(lambda x: placed_aval(x, sharding), kwargs)
