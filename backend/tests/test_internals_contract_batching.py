"""The private JAX facts ``jaxscope.internals.batching_steps`` relies on, one test each.

When JAX changes one of them, this fails by name instead of the vmap exhibit showing wrong batch
dims.
"""

from __future__ import annotations

import inspect
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax._src import core, source_info_util
from jax._src.interpreters import batching as _batching
from jax._src.interpreters import partial_eval as pe
from jaxscope.internals import batching_steps

batching: Any = _batching


def test_batch_tracer_holds_val_and_batch_dim_and_its_trace() -> None:
    params = inspect.signature(batching.BatchTracer.__init__).parameters
    assert list(params)[:4] == ["self", "trace", "val", "batch_dim"]
    seen: list[Any] = []

    def f(x: Any) -> Any:
        seen.append(x)
        return x

    jax.vmap(f, in_axes=1)(np.ones((2, 3), np.float32))
    (t,) = seen
    assert isinstance(t, batching.BatchTracer)
    assert t.batch_dim == 1
    assert core.typeof(t.val).shape == (2, 3)
    assert core.typeof(t).shape == (2,)  # the per-example aval
    assert t._trace.axis_data.size == 3


def test_not_mapped_is_none() -> None:
    # a BatchTracer's batch_dim is an int or None (NotMapped), never a sentinel object
    assert batching.NotMapped is type(None)


def test_process_primitive_calls_the_fancy_rule_and_raises_without_one() -> None:
    src = inspect.getsource(batching.BatchTrace.process_primitive)
    assert "map(self.to_batch_info, tracers)" in src
    assert "if p in fancy_primitive_batchers:" in src
    assert "fancy_primitive_batchers[p](" in src
    assert "self.axis_data, vals_in, dims_in, **params)" in src
    assert "Batching rule for '{p}' not implemented" in src
    assert list(inspect.signature(batching.BatchTrace.process_primitive).parameters) == [
        "self",
        "p",
        "tracers",
        "params",
    ]
    assert isinstance(batching.fancy_primitive_batchers, dict)
    assert jax.lax.sin_p in batching.fancy_primitive_batchers


def test_to_batch_info_gives_value_and_dim() -> None:
    src = inspect.getsource(batching.BatchTrace.to_batch_info)
    assert "batch_dim" in src and "val" in src


def test_eval_jaxpr_binds_as_we_do() -> None:
    src = inspect.getsource(core.eval_jaxpr)
    assert "get_bind_params(eqn.params)" in src
    assert "source_info_util.user_context(traceback, name_stack=name_stack)" in src
    assert "eqn.ctx.manager" in src
    assert callable(source_info_util.current_name_stack)
    assert callable(source_info_util.register_exclusion)


def test_jaxpr_stack_frame_hooks_and_printing() -> None:
    assert list(inspect.signature(pe.JaxprStackFrame.add_eqn).parameters) == ["self", "eqn"]
    assert "debug_info" in inspect.signature(pe.JaxprStackFrame.__init__).parameters
    closed = jax.make_jaxpr(jnp.sin)(1.0)
    assert isinstance(closed, core.ClosedJaxpr)
    assert isinstance(closed.jaxpr.eqns[0].invars[0], core.Var)
    assert callable(core.pp_var) and callable(core.jaxpr_as_fun)
    assert isinstance(core.Literal(1.0, core.typeof(1.0)), core.Literal)  # type: ignore[no-untyped-call]


def test_pjit_of_jnp_functions_is_inlined_and_marked() -> None:
    # observe_vmap expands inline jit calls: jnp.multiply is such a jit, make_jaxpr inlines it.
    seen: list[Any] = []
    orig = batching.BatchTrace.process_primitive

    def spy(self: Any, p: Any, tracers: Any, params: Any, /) -> Any:
        seen.append((p.name, params.get("inline")))
        return orig(self, p, tracers, params)

    batching.BatchTrace.process_primitive = spy
    try:
        jax.clear_caches()  # type: ignore[no-untyped-call]
        jax.make_jaxpr(jax.vmap(lambda a, b: a * b))(jnp.ones(3), jnp.ones(3))
    finally:
        batching.BatchTrace.process_primitive = orig
    assert ("jit", True) in seen
    assert "jaxpr" in dict(jax.make_jaxpr(lambda a: jnp.where(a > 0, a, 0.0))(1.0).eqns[-1].params)


def test_observation_and_interpretation_agree_on_a_transpose() -> None:
    def f(x: Any, y: Any) -> Any:
        return x * y

    args = (np.ones((3, 4), np.float32), np.ones((4, 3), np.float32))
    observed = batching_steps.observe_vmap(f, (1, 0), 0, args)
    assert [(o.primitive, o.in_bdims, o.out_bdims) for o in observed] == [("mul", [1, 0], [0])]
