"""Contract tests for the private JAX names the partial_eval exhibit relies on
(``jaxscope.internals.split`` and ``jaxscope.internals.remat``). A JAX upgrade that changes any of
them fails here, loudly, before the exhibit shows anything wrong."""

from __future__ import annotations

import inspect

import jax
import jax.ad_checkpoint
import jax.numpy as jnp
import numpy as np
from jax._src import ad_checkpoint, core, source_info_util
from jax._src.interpreters import partial_eval as pe
from jaxscope.internals import remat


def _f(x: jax.Array) -> jax.Array:
    return jnp.sum((jnp.sin(x) * x) ** 2)


X = np.array([0.0, 1.0, 2.0], np.float32)


def test_partial_eval_jaxpr_nounits_signature() -> None:
    params = list(inspect.signature(pe.partial_eval_jaxpr_nounits).parameters)
    assert params == ["jaxpr", "unknowns", "instantiate"]


def test_partial_eval_jaxpr_nounits_returns_known_unknown_out_unknowns_residuals() -> None:
    jvp = jax.make_jaxpr(lambda x, t: jax.jvp(_f, (x,), (t,)))(X, X)
    known, unknown, out_uk, res = pe.partial_eval_jaxpr_nounits(
        jvp, unknowns=[False, True], instantiate=False
    )
    assert isinstance(known, core.ClosedJaxpr) and isinstance(unknown, core.ClosedJaxpr)
    assert list(out_uk) == [False, True]
    assert [str(a) for a in res] == ["float32[3]"] * 4
    # known: known inputs -> known outputs then residuals; unknown: residuals then unknown inputs
    assert len(known.jaxpr.invars) == 1
    assert len(known.jaxpr.outvars) == 1 + len(res)
    assert len(unknown.jaxpr.invars) == len(res) + 1
    assert len(unknown.jaxpr.outvars) == 1
    outs = core.eval_jaxpr(known.jaxpr, known.consts, X)
    tan = core.eval_jaxpr(unknown.jaxpr, unknown.consts, *outs[1:], np.ones(3, np.float32))
    want_y, want_t = jax.jvp(_f, (X,), (np.ones(3, np.float32),))
    np.testing.assert_allclose(outs[0], want_y, rtol=1e-6)
    np.testing.assert_allclose(tan[0], want_t, rtol=1e-6)


def test_eqns_keep_source_info_and_jaxpr_api() -> None:
    jvp = jax.make_jaxpr(lambda x, t: jax.jvp(_f, (x,), (t,)))(X, X)
    known, *_ = pe.partial_eval_jaxpr_nounits(jvp, unknowns=[False, True], instantiate=False)
    eqn = known.jaxpr.eqns[0]
    assert eqn.primitive.name == "sin"
    assert eqn.source_info.traceback is not None
    assert hasattr(core, "Literal") and hasattr(core, "JaxprEqn")
    assert callable(source_info_util.register_exclusion)


def test_saved_residuals_returns_aval_and_text() -> None:
    saved = ad_checkpoint.saved_residuals(_f, X)
    assert len(saved) == 4
    assert all(isinstance(a, core.ShapedArray) and isinstance(d, str) for a, d in saved)
    assert saved[0][1] == "from the argument x"
    assert any(d.startswith("output of sin from ") for _, d in saved)
    # print_saved_residuals prints this very list, one line each
    assert jax.ad_checkpoint.print_saved_residuals is ad_checkpoint.print_saved_residuals


def test_saved_residuals_names_checkpoint_names() -> None:
    def g(x: jax.Array) -> jax.Array:
        h = jax.ad_checkpoint.checkpoint_name(jnp.sin(x), "h")  # type: ignore[no-untyped-call]
        return jnp.sum(jnp.cos(h))

    policy = jax.checkpoint_policies.save_only_these_names("h")
    saved = ad_checkpoint.saved_residuals(jax.checkpoint(g, policy=policy), X)
    assert [d.split(" from ")[0] for _, d in saved] == ["from the argument x", "named 'h'"]
    closed = jax.make_jaxpr(g)(X)
    assert remat.checkpoint_names(closed) == ["h"]
    assert hasattr(core, "jaxprs_in_params")


def test_the_tables_primal_trace_is_checkpoints_and_its_first_row_traces_f_no_more() -> None:
    """``remat.primal_jaxpr`` traces f under ``jax.checkpoint``: the output avals and the
    checkpoint names of plain ``make_jaxpr(f)``, and JAX's checkpoint cache
    (``ad_checkpoint._trace_to_jaxpr``, not keyed by the policy) then spares the first
    checkpointed row's ``saved_residuals`` a trace of f; its residuals are those of a fresh
    call (design 0082). When JAX refuses f under ``jax.checkpoint``, plain ``make_jaxpr``."""
    calls = [0]

    def g(x: jax.Array, kw: dict[str, jax.Array]) -> jax.Array:
        calls[0] += 1
        h = jax.ad_checkpoint.checkpoint_name(jnp.sin(x) * kw["y"], "h")  # type: ignore[no-untyped-call]
        k = jax.ad_checkpoint.checkpoint_name(jnp.cos(h), "k")  # type: ignore[no-untyped-call]
        return jnp.sum(k * h)

    args = (X, {"y": X + 1})
    closed = remat.primal_jaxpr(g, *args)
    assert calls[0] == 1
    plain = jax.make_jaxpr(g)(*args)
    assert closed.out_avals == plain.out_avals
    assert remat.checkpoint_names(closed) == remat.checkpoint_names(plain) == ["h", "k"]
    assert [e.primitive for e in closed.jaxpr.eqns] == [ad_checkpoint.remat_p]
    assert isinstance(closed.jaxpr.eqns[0].params["jaxpr"], core.Jaxpr)
    calls[0] = 0
    policy = jax.checkpoint_policies.save_only_these_names("h")
    saved = ad_checkpoint.saved_residuals(jax.checkpoint(g, policy=policy), *args)
    assert calls[0] == 0  # the trace primal_jaxpr made
    fresh = ad_checkpoint.saved_residuals(
        jax.checkpoint(lambda x, kw: g(x, kw), policy=policy), *args
    )
    assert calls[0] == 1
    assert [(str(a), d.split(" from ")[0]) for a, d in saved] == [
        (str(a), d.split(" from ")[0]) for a, d in fresh
    ]

    def refused(*a: object, **k: object) -> object:
        raise TypeError("not under checkpoint")

    original = jax.checkpoint
    jax.checkpoint = refused  # type: ignore[assignment]
    try:
        fallback = remat.primal_jaxpr(g, *args)
    finally:
        jax.checkpoint = original
    assert str(fallback) == str(plain)


def test_checkpoint_policies_argument_free_set() -> None:
    """The policies the table measures: every attribute that accepts ``**params``."""
    names = [n for n, _ in remat.policy_names()]
    assert names == [
        "everything_saveable",
        "nothing_saveable",
        "dots_saveable",
        "dots_with_no_batch_dims_saveable",
    ]
    assert dict(remat.policy_names())["dots_saveable"] == ["checkpoint_dots"]
    factories = {
        "save_only_these_names",
        "save_any_names_but_these",
        "offload_dot_with_no_batch_dims",
    }
    assert factories <= set(vars(jax.checkpoint_policies))


def test_tracer_error_origin_names_fun_sourceinfo_and_debug_info_arg_names() -> None:
    """``split.in_user_terms`` rewrites a tracer error's "tracing the function X at file:line"
    (``DynamicJaxprTracer._origin_msg``: ``debug_info.func_src_info`` =
    ``api_util.fun_sourceinfo``) and its argument names (``api_util.debug_info(...).arg_names``,
    key paths like ``p[0][0]``)."""
    from jax._src import api_util

    def wrapper(p: tuple[jax.Array, ...], t: tuple[jax.Array, ...]) -> jax.Array:
        return jnp.where(p[0] > 0, p[0], t[0]) if bool(p[0][0] > 0) else p[0]

    primals, tangents = (jnp.ones(2),), (jnp.ones(2),)
    source = api_util.fun_sourceinfo(wrapper)
    assert source.startswith("wrapper at ") and source.endswith(
        f":{wrapper.__code__.co_firstlineno}"
    )
    names = api_util.debug_info("jit", wrapper, (primals, tangents), {}).arg_names
    assert list(names or ()) == ["p[0]", "t[0]"]
    try:
        jax.make_jaxpr(wrapper)(primals, tangents)
    except jax.errors.TracerBoolConversionError as exc:
        assert f"tracing the function {source} for jit" in str(exc)
        assert "depends on the value of the argument p[0]." in str(exc)
    else:
        raise AssertionError("expected a TracerBoolConversionError")


def test_the_remat_records_are_what_the_exhibits_event_holds() -> None:
    """``remat_table`` yields records (design 0059) that the partial_eval probe makes its
    ``remat_policy_measured`` events of, field by field: the same fields."""
    from jaxscope.internals.split import Residual
    from jaxscope.protocol import EventBase

    from exhibits.partial_eval.events import RematPolicyMeasured, ResidualView

    wire = set(RematPolicyMeasured.model_fields) - set(EventBase.model_fields) - {"type"}
    assert set(remat.RematRow.__dataclass_fields__) == wire
    assert set(Residual.__dataclass_fields__) == set(ResidualView.model_fields)


def test_the_split_record_is_what_the_exhibits_event_holds() -> None:
    """``split_program`` returns a record (design 0059) the partial_eval probe makes its
    ``jaxpr_split`` event of: the same fields but the two the probe adds."""
    from jaxscope.internals.split import SplitRecord
    from jaxscope.protocol import EventBase

    from exhibits.partial_eval.events import JaxprSplit

    wire = set(JaxprSplit.model_fields) - set(EventBase.model_fields) - {"type"}
    assert set(SplitRecord.__dataclass_fields__) == wire - {"split_calls", "dropped"}
