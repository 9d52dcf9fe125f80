"""Contract tests for what the sharding exhibit reads from JAX's text (``exhibits/sharding/
reading.py`` uses public APIs only, but parses JAX's error messages and XLA's HLO text): fail
loudly when a JAX upgrade changes a message or a printed form the exhibit depends on."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

if "xla_force_host_platform_device_count" not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (
        os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=8"
    )

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import AxisType, NamedSharding, PartitionSpec

from exhibits.sharding.reading import (
    collectives_in,
    explain_error,
    spec_entries,
)

# PartitionSpec's constructor is untyped
P: Callable[..., PartitionSpec] = PartitionSpec


@pytest.fixture(scope="module")
def mesh() -> jax.sharding.Mesh:
    assert jax.device_count() >= 8, "needs XLA_FLAGS=--xla_force_host_platform_device_count=8"
    return jax.make_mesh((2, 4), ("x", "y"), axis_types=(AxisType.Auto,) * 2)


def test_make_mesh_default_axis_type_is_explicit_and_mesh_is_auto() -> None:
    assert [t.name for t in jax.make_mesh((2, 4), ("x", "y")).axis_types] == ["Explicit"] * 2
    devices = np.array(jax.devices()[:8]).reshape(2, 4)
    assert [t.name for t in jax.sharding.Mesh(devices, ("x", "y")).axis_types] == ["Auto"] * 2


def test_indivisible_error_message_is_parsed(mesh: jax.sharding.Mesh) -> None:
    with pytest.raises(Exception) as info:
        jax.device_put(np.zeros((6, 8)), NamedSharding(mesh, P(("x", "y"))))
    assert type(info.value).__name__ == "IndivisibleError"
    ev = explain_error(info.value, "args[0]")
    assert ev is not None
    assert (ev.axis, ev.dim_size, ev.partitions, ev.shape) == (0, 6, 8, [6, 8])
    assert (ev.mesh_axes, ev.mesh_axis_sizes) == (["x", "y"], [2, 4])


def test_duplicate_spec_error_message_is_parsed(mesh: jax.sharding.Mesh) -> None:
    with pytest.raises(Exception) as info:
        NamedSharding(mesh, P("y", "y"))
    assert type(info.value).__name__ == "DuplicateSpecError"
    ev = explain_error(info.value, "args[0]")
    assert ev is not None and ev.mesh_axes == ["y"] and ev.spec == "P('y', 'y')"


def test_sharding_type_error_class_name() -> None:
    m = jax.make_mesh((2, 4), ("x", "y"))
    a = jax.device_put(jnp.ones((8, 16)), NamedSharding(m, P("x", "y")))
    w = jax.device_put(jnp.ones((16, 8)), NamedSharding(m, P("y")))
    with pytest.raises(Exception) as info:
        jax.jit(lambda a, w: a @ w).trace(a, w)
    assert type(info.value).__name__ == "ShardingTypeError"
    assert "out_sharding" in str(info.value)
    ev = explain_error(info.value, "f")
    assert ev is not None and ev.kind == "sharding_type"


def test_printed_partition_spec_is_a_python_literal() -> None:
    for spec in (
        P(),
        P("x"),
        P("x", None),
        P(
            ("x", "y"),
        ),
        P(None, ("x", "y")),
    ):
        assert spec_entries(str(spec)) == tuple(spec)


def test_compiled_hlo_prints_collectives_as_parsed(mesh: jax.sharding.Mesh) -> None:
    a = jax.device_put(jnp.ones((8, 16)), NamedSharding(mesh, P("x", "y")))
    hlo = jax.jit(lambda a: a.sum(0)).lower(a).compile().as_text()
    (c,) = collectives_in(str(hlo))
    assert c.op == "all-reduce" and c.replica_groups.startswith("replica_groups=")
    assert c.groups is not None and sorted(map(sorted, c.groups)) == [
        [0, 4],
        [1, 5],
        [2, 6],
        [3, 7],
    ]


def test_device_put_inside_jit_is_not_a_constraint_on_auto_mesh(mesh: jax.sharding.Mesh) -> None:
    """The exhibit shows both ``f``'s and ``jax.jit(f)``'s outputs because of this."""
    x = jnp.ones((8, 16))

    def put(a: jax.Array) -> Any:
        return jax.device_put(a, NamedSharding(mesh, P("x")))

    assert put(x).sharding.spec == P("x")
    assert jax.jit(put)(x).sharding.spec == P()
