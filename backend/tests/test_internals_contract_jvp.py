"""The private JAX facts ``jaxscope.internals.jvp_steps`` relies on, one test each.

When JAX changes one of them, this fails by name instead of the jvp exhibit showing wrong steps.
"""

from __future__ import annotations

import inspect
from typing import Any

import jax
import jax.numpy as jnp
from jax._src import core, source_info_util
from jax._src.interpreters import ad as _ad
from jax._src.interpreters import partial_eval as pe
from jaxscope.internals import jvp_steps

ad: Any = _ad  # ad.Zero and friends are re-exported there without __all__


def test_jvp_tracer_holds_primal_and_tangent_and_zero_tangents_are_not_wrapped() -> None:
    assert ad.JVPTracer.__slots__ == ["primal", "tangent"]
    src = inspect.getsource(ad.maybe_jvp_tracer)
    assert "type(tangent) is Zero" in src and "return primal" in src
    zero: Any = ad.Zero(core.ShapedArray((3,), jnp.float32))
    assert zero.aval.shape == (3,)
    assert type(zero) is ad.Zero


def test_process_primitive_skips_the_rule_on_all_zero_tangents_and_looks_up_primitive_jvps() -> (
    None
):
    src = inspect.getsource(ad.JVPTrace.process_primitive)
    assert "all(type(t) is Zero for t in tangents_in)" in src
    assert "primitive_jvps.get(primitive)" in src
    assert "jvp(primals_in, tangents_in, **params)" in src
    assert hasattr(ad.JVPTrace, "process_custom_jvp_call")
    assert hasattr(ad.JVPTrace, "process_custom_vjp_call")


def test_eval_jaxpr_binds_as_we_do() -> None:
    src = inspect.getsource(core.eval_jaxpr)
    assert "get_bind_params(eqn.params)" in src
    assert "source_info_util.user_context(traceback, name_stack=name_stack)" in src
    assert "eqn.ctx.manager" in src
    assert callable(source_info_util.current_name_stack)


def test_jaxpr_stack_frame_hooks() -> None:
    assert list(inspect.signature(pe.JaxprStackFrame.add_eqn).parameters) == ["self", "eqn"]
    assert "debug_info" in inspect.signature(pe.JaxprStackFrame.__init__).parameters


def test_custom_jvp_call_params_carry_the_functions_source() -> None:
    cj = jax.make_jaxpr(jax.nn.relu)(jnp.ones(3))
    eqn = cj.jaxpr.eqns[0]
    assert eqn.primitive.name == "custom_jvp_call"
    info = eqn.params["call_jaxpr"].jaxpr.debug_info.func_src_info
    assert info.startswith("relu at ") and "nn/functions.py:" in info
    assert eqn.primitive not in ad.primitive_jvps


def test_interpretation_reproduces_jaxs_jvp_jaxpr_and_counts_eqns() -> None:
    """The eqn-by-eqn interpretation prints JAX's JVP jaxpr exactly (the attribution relies on
    it), and the per-eqn eqn counts cover every eqn."""
    from jaxscope.internals.calling import plan_call
    from jaxscope.sandbox.snippet import load_snippet

    snippet = load_snippet(
        "import jax.numpy as jnp\ndef f(x):\n    return jnp.sum(jnp.sin(x) * x)\n"
        "args = (jnp.ones(3),)\n"
    )
    plan = plan_call(snippet)
    capture = jvp_steps.capture_jvp(plan, plan.make_jaxpr())
    assert str(capture.interpreted_jaxpr) == str(capture.jvp_jaxpr)
    assert capture.staged.attributed
    assert None not in capture.staged.eqn_origin


def _rule_alone_primitives(eqn: core.JaxprEqn, zero_in: list[bool]) -> list[str]:
    """``jax.make_jaxpr`` of ``ad.primitive_jvps[eqn.primitive]`` alone (hooks doc section 3),
    with symbolic zeros where the step had them: the primitives it emits."""
    rule = ad.primitive_jvps[eqn.primitive]
    avals: list[Any] = [v.aval for v in eqn.invars]
    sds = [jax.ShapeDtypeStruct(a.shape, a.dtype) for a in avals]  # type: ignore[no-untyped-call]

    def run(p: list[jax.Array], t: list[jax.Array]) -> object:
        tangents = [
            ad.Zero(a.to_tangent_aval()) if z else ti
            for a, z, ti in zip(avals, zero_in, t, strict=True)
        ]
        out = rule(p, tangents, **eqn.params)
        return jax.tree.map(
            lambda x: None if type(x) is ad.Zero else x, out, is_leaf=lambda x: type(x) is ad.Zero
        )

    closed = jax.make_jaxpr(run)(sds, sds)
    return [e.primitive.name for e in closed.jaxpr.eqns]


def test_per_step_eqns_equal_the_rule_alone() -> None:
    from jaxscope.internals.calling import plan_call
    from jaxscope.sandbox.snippet import load_snippet

    source = (
        "import jax.numpy as jnp\ndef f(x, w):\n    h = jnp.tanh(x @ w)\n"
        "    return jnp.sum(jnp.exp(h) * 2.0 - h / 3.0)\n"
        "args = (jnp.ones((2, 3)), jnp.ones((3, 4)))\n"
    )
    plan = plan_call(load_snippet(source))
    primal = plan.make_jaxpr()
    capture = jvp_steps.capture_jvp(plan, primal)
    checked = 0
    for step in capture.steps:
        if step.mechanism != "rule":
            continue
        eqn = primal.jaxpr.eqns[step.index]
        if any(isinstance(v, core.Literal) for v in eqn.invars):
            continue  # literals are not arguments of the rule-alone trace
        zero_in = [t.zero for t in step.tangents_in]
        shown = [t.split(" = ", 1)[1].split("[")[0].split()[0] for t in step.tangent_eqns]
        assert shown == _rule_alone_primitives(eqn, zero_in), step.primitive
        checked += 1
    assert checked >= 4


def test_typeof_a_tracer_is_its_aval() -> None:
    """``jvp_steps._Recorder.slot`` reads a tracer's aval as ``x.aval`` (``core.typeof``'s
    answer for one, without its type look-up)."""
    seen: list[bool] = []

    def f(x: jax.Array) -> jax.Array:
        y = jnp.sin(x)
        seen.append(isinstance(y, core.Tracer) and core.typeof(y) is y.aval)
        return y

    jax.make_jaxpr(f)(jnp.ones(3))
    jax.make_jaxpr(lambda x: jax.jvp(f, (x,), (x,)))(jnp.ones(3))
    assert seen == [True, True]


def test_a_returned_tracers_val_is_its_outvar() -> None:
    """``capture_jvp`` reads a traced value's var as its tracer's ``val`` (what ``to_jaxpr``
    makes the outvar of a returned tracer), bound by the eqn that made it."""
    kept: list[Any] = []

    def f(x: jax.Array) -> Any:
        y = jnp.sin(x)
        z = y * 2.0
        kept.extend([y, z])
        return z

    closed = jax.make_jaxpr(f)(jnp.ones(3))
    y, z = kept
    assert closed.jaxpr.outvars == [z.val]
    assert closed.jaxpr.eqns[0].outvars == [y.val]
    assert "outvars = [t.val for t in out_tracers]" in inspect.getsource(
        pe.JaxprStackFrame.to_jaxpr
    )
