"""The private JAX facts ``internals/precision_loss.py`` relies on (the dtypes exhibit's
precision check), one test each: a JAX upgrade that changes one fails here by name.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax._src import core
from jaxscope.internals import precision_loss
from jaxscope.internals.interpret import bind_eqn


def _eqn(closed: core.ClosedJaxpr, name: str) -> core.JaxprEqn:
    found: list[core.JaxprEqn] = [e for e in closed.jaxpr.eqns if e.primitive.name == name]
    (eqn,) = found
    return eqn


def test_low_precision_dtypes_are_eqn_params_the_twin_can_replace() -> None:
    bf = jnp.ones(3, jnp.bfloat16)
    cast = _eqn(
        jax.make_jaxpr(lambda x: x.astype(jnp.bfloat16))(np.ones(3, np.float32)),
        "convert_element_type",
    )
    assert cast.params["new_dtype"] == np.dtype(jnp.bfloat16)
    dot = _eqn(
        jax.make_jaxpr(lambda a: jnp.dot(a, a, preferred_element_type=jnp.bfloat16))(bf),
        "dot_general",
    )
    assert dot.params["preferred_element_type"] == np.dtype(jnp.bfloat16)
    # JaxprEqn.replace gives the same eqn with the float32 params; bound on float32 operands it
    # computes in float32 (4097, which bfloat16 rounds to 4096)
    twin = dot.replace(params=precision_loss._twin_params(dot.params))
    assert twin.params["preferred_element_type"] == np.dtype(np.float32)
    ones = jnp.ones(4097, jnp.float32)
    (out,) = bind_eqn(twin, [ones, ones])
    assert out.dtype == np.float32 and float(out) == 4097.0
    (low,) = bind_eqn(dot, [ones.astype(jnp.bfloat16)] * 2)
    assert low.dtype == jnp.bfloat16 and float(low) == 4096.0


def test_control_flow_bodies_are_closed_jaxprs_in_params() -> None:
    def f(xs: jax.Array) -> jax.Array:
        return jax.lax.scan(lambda c, x: (c + x, None), jnp.zeros((), xs.dtype), xs)[0]

    closed = jax.make_jaxpr(f)(jnp.ones(300, jnp.bfloat16))
    scan = _eqn(closed, "scan")
    assert isinstance(scan.params["jaxpr"], core.ClosedJaxpr)
    assert list(core.jaxprs_in_params(scan.params))  # has_low_precision looks inside
    twin = scan.replace(params=precision_loss._twin_params(scan.params))
    (body_in,) = {v.aval.dtype for v in twin.params["jaxpr"].jaxpr.invars}
    assert body_in == np.dtype(np.float32)
    out = bind_eqn(twin, [jnp.zeros((), jnp.float32), jnp.ones(300, jnp.float32)])
    assert float(out[0]) == 300.0  # the float32 twin of a bfloat16 carry that stops at 256
