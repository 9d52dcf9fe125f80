"""Contract tests: what ``jaxscope.internals.pmap_collectives`` (and the pmap exhibit) rely on in
jax 0.10.2: ``jax.make_jaxpr(jax.pmap(f))`` is one ``jit`` eqn around one ``shard_map`` eqn with
the params read (``mesh`` of one axis, ``in_specs``, ``out_specs``, ``check_vma=False``,
``jaxpr``), ``core.Jaxpr.replace`` cuts a body, and a cut body's collective, run on the devices,
gives numpy's values. A JAX upgrade that changes one of them fails here."""

from __future__ import annotations

import jax
import numpy as np
from jaxscope.internals.pmap_collectives import collective_values, shard_map_body


def test_pmap_is_one_jit_around_one_shard_map_and_its_psum_moves_numpys_values() -> None:
    n = min(jax.local_device_count(), 4)
    x = np.arange(n * 3, dtype=np.float32).reshape(n, 3)
    closed = jax.make_jaxpr(
        jax.pmap(lambda v: jax.lax.psum(v * 2, "i"), axis_name="i")  # type: ignore[no-untyped-call]
    )(x)
    (jit_eqn,) = closed.jaxpr.eqns
    assert jit_eqn.primitive.name == "jit"
    (sm,) = jit_eqn.params["jaxpr"].jaxpr.eqns
    assert sm.primitive.name == "shard_map"
    assert sm.params["mesh"].axis_names == ("i",) and sm.params["mesh"].size == n
    assert [str(s) for s in sm.params["in_specs"]] == ["P('i',)"]
    assert [str(s) for s in sm.params["out_specs"]] == ["P('i',)"]
    assert sm.params["check_vma"] is False
    body = shard_map_body(sm)
    names = [e.primitive.name for e in body.jaxpr.eqns]
    assert names == ["squeeze", "mul", "psum", "broadcast_in_dim"]
    before, after = collective_values(sm, [x], names.index("psum"))
    np.testing.assert_allclose(np.stack(before), x * 2)
    np.testing.assert_allclose(np.stack(after), np.broadcast_to((x * 2).sum(0), x.shape))
