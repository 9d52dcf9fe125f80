"""Contract tests for what ``jaxscope.internals.custom_rules`` (and the custom_vjp lab) rely on in
JAX: each fails loudly, naming the fact, when a JAX upgrade changes it."""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import pytest
from jax._src import source_info_util
from jaxscope.internals import custom_rules


def _vjp() -> jax.custom_vjp:  # type: ignore[type-arg]
    @partial(jax.custom_vjp, nondiff_argnums=(1,))
    def g(x, n):  # type: ignore[no-untyped-def]
        return x * n

    def fwd(x, n):  # type: ignore[no-untyped-def]
        return g(x, n), None

    def bwd(n, res, ct):  # type: ignore[no-untyped-def]
        return (ct * n,)

    g.defvjp(fwd, bwd)
    return g


def test_custom_vjp_object_attributes() -> None:
    g = _vjp()
    assert type(g) is jax.custom_vjp, (
        "jax.custom_vjp(f) no longer returns a custom_vjp (custom_vjp3?)"
    )
    on = getattr(jax.config, "jax_custom_vjp3")  # noqa: B009 - the flag must exist
    assert not on, "jax_custom_vjp3 is on: custom_vjp objects differ"
    assert callable(g.fun) and g.fun.__name__ == "g", (
        "custom_vjp.fun is not the undecorated function"
    )
    assert g.nondiff_argnums == (1,), "custom_vjp.nondiff_argnums is not a sorted tuple"
    assert (
        getattr(g.fwd, "__name__", None) == "fwd" and getattr(g.bwd, "__name__", None) == "bwd"
    ), "defvjp no longer sets .fwd/.bwd"
    assert getattr(g, "__wrapped__", None) is g.fun, (
        "custom_vjp no longer wraps (update_wrapper) its function"
    )


def test_custom_jvp_object_attributes() -> None:
    @jax.custom_jvp
    def h(x):  # type: ignore[no-untyped-def]
        return jnp.sin(x)

    @h.defjvp
    def h_jvp(p, t):  # type: ignore[no-untyped-def]
        return h(p[0]), jnp.cos(p[0]) * t[0]

    assert type(h) is jax.custom_jvp
    assert h.fun.__name__ == "h" and h.jvp is h_jvp and h.nondiff_argnums == ()
    d = custom_rules.describe(h)
    assert d.kind == "custom_jvp" and d.rules == {"jvp": h_jvp}


def test_error_texts_the_lab_recognises() -> None:
    from exhibits.custom_vjp import explain

    @jax.custom_vjp
    def g(x, y):  # type: ignore[no-untyped-def]
        return x * y

    g.defvjp(lambda x, y: (g(x, y), (x, y)), lambda res, ct: (ct,))
    with pytest.raises(TypeError) as info:
        jax.grad(g)(1.0, 2.0)
    assert str(info.value).startswith(explain.BWD_STRUCTURE)
    cause = info.value.__cause__
    assert isinstance(cause, source_info_util.JaxStackTraceBeforeTransformation), (
        "the backward-pass error no longer chains JaxStackTraceBeforeTransformation"
    )

    g.defvjp(lambda x, y: (g(x, y), (x, y)), lambda res, ct: (ct, jnp.ones(3)))
    with pytest.raises(ValueError) as info2:
        jax.grad(g)(1.0, 2.0)
    assert str(info2.value).startswith(explain.BWD_TYPE)

    g.defvjp(lambda x, y: g(x, y), lambda res, ct: (ct, ct))
    with pytest.raises(TypeError) as info3:
        jax.grad(g)(1.0, 2.0)
    assert str(info3.value).startswith(explain.FWD_RULE) and "instead of a pair" in str(info3.value)

    @jax.custom_jvp
    def h(x):  # type: ignore[no-untyped-def]
        return x

    h.defjvp(lambda p, t: (p[0], jnp.ones(3)))
    with pytest.raises(TypeError) as info4:
        jax.jvp(h, (1.0,), (1.0,))
    assert str(info4.value).startswith(explain.JVP_RULE)


def test_custom_call_primitives_in_jaxpr() -> None:
    g = _vjp()
    closed = jax.make_jaxpr(lambda x: g(x, 2.0))(1.0)
    assert [e.primitive.name for e in closed.jaxpr.eqns] == ["custom_vjp_call"]
    assert custom_rules.CUSTOM_CALL_PRIMITIVES == {
        "custom_vjp": "custom_vjp_call",
        "custom_jvp": "custom_jvp_call",
    }
    h = jax.nn.relu  # a custom_jvp from jax.nn
    closed2 = jax.make_jaxpr(h)(1.0)
    assert "custom_jvp_call" in [e.primitive.name for e in closed2.jaxpr.eqns]


def test_register_exclusion_exists() -> None:
    assert callable(source_info_util.register_exclusion)
