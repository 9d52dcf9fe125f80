"""Contract tests: every private JAX name ``jaxscope.internals.trace_stack`` relies on still exists
and behaves as assumed in jax 0.10.2 (the tracer classes, the attributes through which a tracer
wraps the values of outer transforms, ``Tracer._trace``, ``core.jaxprs_in_params``, and which
tracer class each public transform hands the function). A JAX upgrade that changes one of them
fails here, loudly, before the transform_order exhibit draws a wrong trace diagram."""

from __future__ import annotations

from typing import Any, get_args

import jax
import jax.numpy as jnp
from jax._src import core as _core
from jax._src.interpreters import ad as _ad
from jax._src.interpreters import batching as _batching
from jax._src.interpreters import partial_eval as _pe
from jaxscope.internals.trace_stack import (
    TRANSFORM_OF_TRACE,
    WRAPPED,
    TraceNode,
    TraceRole,
    count_eqns,
    observing,
    tracer_nest,
)

from exhibits.transform_order import events as transform_order_events

# JAX's private modules are untyped: read them as Any (this file is mypy strict).
core: Any = _core
ad: Any = _ad
batching: Any = _batching
pe: Any = _pe


def test_tracer_classes_and_their_wrapped_attributes() -> None:
    assert set(WRAPPED) == {ad.JVPTracer, ad.LinearizeTracer, batching.BatchTracer}
    assert ad.JVPTracer.__slots__ == ["primal", "tangent"]
    assert ad.LinearizeTracer.__slots__ == ["primal", "tangent"]
    assert batching.BatchTracer.__slots__ == ["val", "batch_dim", "source_info"]
    for cls in (ad.JVPTracer, ad.LinearizeTracer, batching.BatchTracer, pe.DynamicJaxprTracer):
        assert issubclass(cls, core.Tracer)


def test_trace_classes_named_in_the_table_exist() -> None:
    traces = {ad.JVPTrace, ad.LinearizeTrace, batching.BatchTrace, pe.DynamicJaxprTrace}
    assert {t.__name__ for t in traces} == set(TRANSFORM_OF_TRACE)
    for t in traces:
        assert issubclass(t, core.Trace)


def test_tracers_carry_their_trace_and_inner_values() -> None:
    seen: dict[str, Any] = {}

    def f(x: Any) -> Any:
        seen["x"] = x
        return jnp.sum(jnp.sin(x))

    xs = jnp.ones((4, 3))
    jax.vmap(jax.grad(f))(xs)
    x = seen["x"]
    assert type(x) is ad.LinearizeTracer and type(x._trace) is ad.LinearizeTrace
    assert type(x.primal) is batching.BatchTracer and type(x.primal._trace) is batching.BatchTrace
    assert x.primal.batch_dim == 0 and x.primal.val.shape == (4, 3)
    assert type(x.tangent) is pe.DynamicJaxprTracer
    jax.jacfwd(f)(jnp.ones(3))
    x = seen["x"]
    assert type(x) is ad.JVPTracer and type(x.tangent) is batching.BatchTracer
    assert x.tangent.val.shape == (3, 3)


def test_tracer_nest_and_observing() -> None:
    wrapped, seen = observing(lambda x: jnp.sum(jnp.sin(x)))
    jax.jit(jax.vmap(wrapped))(jnp.ones((4, 3)))
    assert seen.calls == 1
    (arg,) = seen.args
    assert [(n.depth, n.role, n.tracer, n.aval) for n in arg.nodes] == [
        (0, "argument", "BatchTracer", "f32[3]"),
        (1, "val", "DynamicJaxprTracer", "f32[4,3]"),
    ]
    assert tracer_nest(jnp.ones(2))[0].trace is None


def test_the_records_are_what_the_exhibits_views_hold() -> None:
    """The walker returns records (design 0059), and transform_order's probe makes its views of
    them field by field: the same fields, the same roles as the wire's."""
    assert get_args(TraceRole) == get_args(transform_order_events.TraceRole)
    fields = set(TraceNode.__dataclass_fields__)
    assert fields == set(transform_order_events.TraceNodeView.model_fields)


def test_jaxprs_in_params_counts_inner_eqns() -> None:
    closed = jax.make_jaxpr(lambda x: jax.jit(jnp.sin)(x) + 1.0)(jnp.ones(3))
    (pjit,) = [e for e in closed.jaxpr.eqns if e.primitive.name == "jit"]
    inner = list(core.jaxprs_in_params(pjit.params))
    assert len(inner) == 1 and len(inner[0].eqns) == 1
    assert count_eqns(closed.jaxpr) == len(closed.jaxpr.eqns) + 1
