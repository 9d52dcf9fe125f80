"""The private JAX facts ``jaxscope.internals`` relies on, one test each.

When JAX is upgraded, a change in any of these fails here, loudly and by name, instead of as a
blank panel in the browser. Only this test file and ``jaxscope.internals`` import ``jax._src``.
"""

from __future__ import annotations

import dataclasses
import inspect
import logging
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import jaxscope.internals as internals
import pytest
from jax._src import core, pjit, source_info_util
from jax._src.interpreters import mlir
from jax._src.interpreters import partial_eval as pe
from jaxscope.internals import cache, monitoring, recording, views
from jaxscope.internals.calling import plan_call
from jaxscope.internals.compiled import hlo_links, stack_frame_index
from jaxscope.internals.lowering import op_links, parsed_op_counts
from jaxscope.sandbox.probe_api import SNIPPET_FILENAME
from jaxscope.sandbox.snippet import load_snippet

SNIPPET = """
import jax.numpy as jnp

def f(x, y):
    z = jnp.sin(x) * 2.0
    return jnp.sum(z + y)

args = (jnp.ones(3), 1.0)
"""

ROOT = Path(__file__).resolve().parents[2]


def test_jax_version_is_the_pinned_one() -> None:
    assert jax.__version__ == "0.10.2"


# ------------------------------------------------------------------ printing (views.py)


def test_pp_toplevel_jaxpr_builds_one_context_named_in_core() -> None:
    src = inspect.getsource(core.pp_toplevel_jaxpr)
    assert "JaxprPpContext(" in src  # looked up as a module global at call time
    assert "pp_toplevel_jaxpr" in inspect.getsource(core.Jaxpr.pretty_print)
    assert inspect.getsource(core.ClosedJaxpr.__str__).strip().endswith("str(self.jaxpr)")


def test_printing_helpers_have_the_signatures_we_call() -> None:
    assert list(inspect.signature(core.pp_var).parameters)[:2] == ["v", "context"]
    assert list(inspect.signature(core.pp_eqn).parameters) == ["eqn", "context", "settings"]
    assert list(inspect.signature(core.pp_kv_pair).parameters) == ["k", "v", "context", "settings"]
    assert list(inspect.signature(core.pp_jaxpr).parameters) == ["jaxpr", "context", "settings"]
    assert core.JaxprPpSettings()._fields[:2] == ("print_shapes", "source_info")
    # Shared jaxprs (printed once as `let name = ... in`) are printed in full with these:
    assert list(inspect.signature(core.pp_jaxpr_skeleton).parameters) == [
        "jaxpr",
        "eqns_fn",
        "context",
        "settings",
    ]
    assert list(inspect.signature(core.pp_eqns).parameters) == ["eqns", "context", "settings"]
    assert isinstance(core.JaxprPpContext().shared_jaxprs, dict)


def test_fun_name_follows_partials() -> None:
    import functools

    from jax._src import util as jax_util

    def g(x: int, y: int) -> int:
        return x + y

    assert jax_util.fun_name(functools.partial(g, y=1)) == "g"


def test_captured_context_names_match_the_text() -> None:
    closed = jax.make_jaxpr(lambda x, y: jnp.sin(x) * y)(jnp.ones(2), 2.0)
    text, ctx = views.print_with_context(closed.jaxpr)
    assert text == str(closed)
    names = [str(core.pp_var(v, ctx)) for v in closed.jaxpr.invars]
    assert text.startswith("{ lambda ; " + " ".join(f"{n}:" for n in names[:1]))
    assert core.JaxprPpContext is not None and core.JaxprPpContext.__name__ == "JaxprPpContext"


def test_pp_eqns_looks_up_pp_eqn_in_core_at_call_time() -> None:
    """``views._capturing_pp_context`` replaces ``core.pp_eqn`` while JAX prints, to keep the
    doc built for each eqn (reused for ``EqnView.text``): ``pp_eqns`` must call it by its module
    global name, and a doc must format the same each time (the C++ ``Doc`` is immutable)."""
    assert "pp_eqn(e, context, settings)" in inspect.getsource(core.pp_eqns)
    closed = jax.make_jaxpr(lambda x: jnp.sin(x) * 2.0)(jnp.ones(2))
    eqn = closed.jaxpr.eqns[0]
    original = core.pp_eqn
    with views._capturing_pp_context() as created:
        assert core.pp_eqn is not original
        str(closed)
    assert core.pp_eqn is original
    memo = views._memo(created[0])
    assert set(memo.eqn_docs) == {id(e) for e in closed.jaxpr.eqns}
    doc = memo.eqn_docs[id(eqn)][1]
    fresh = original(eqn, created[0], views._DEFAULT_SETTINGS)
    assert doc.format() == doc.format() == fresh.format()
    # The settings str(jaxpr) prints with are the defaults (NamedTuple equality).
    assert inspect.signature(core.Jaxpr.pretty_print).parameters["source_info"].default is False
    assert core.JaxprPpSettings() == views._DEFAULT_SETTINGS


def test_pp_context_takes_attributes_and_tracebacks_hash_by_frames() -> None:
    """``views._memo`` keeps its per-context memo in the context's ``__dict__``;
    ``views.snippet_source`` is cached per ``Traceback``, which hashes and compares by frames."""
    assert "__slots__" not in vars(core.JaxprPpContext)
    assert isinstance(core.JaxprPpContext().__dict__, dict)
    snippet = load_snippet(SNIPPET)
    traced = []
    for _ in range(2):  # a new function object each time: traced again, same frames
        traced.append(jax.make_jaxpr(lambda x: snippet.f(x, 1.0))(snippet.args[0]))
    tbs = [e.source_info.traceback for e in traced[0].jaxpr.eqns]
    tb0, tb1 = tbs[0], traced[1].jaxpr.eqns[0].source_info.traceback
    assert tb0 is not tb1 and tb0 == tb1 and hash(tb0) == hash(tb1)
    assert tb0.raw_frames() == tb1.raw_frames()
    other = [t for t in tbs if t.raw_frames() != tb0.raw_frames()]
    assert other and all(t != tb0 for t in other)


def test_literals_print_value_and_type() -> None:
    closed = jax.make_jaxpr(lambda x: x * 2.0)(jnp.ones(2))
    lit = closed.jaxpr.eqns[0].invars[1]
    assert isinstance(lit, core.Literal)
    assert lit.pretty_print(core.JaxprPpContext()) == "2.0:f32[]"


def test_avals_have_str_short_with_short_dtypes_and_weak_type() -> None:
    aval = jax.typeof(1.0)
    assert aval.weak_type is True
    assert aval.str_short(short_dtypes=True) == "f32[]"
    assert str(aval) == "~float32[]"


# ------------------------------------------------------------------ source info


def test_traceback_raw_frames_and_frame_fields() -> None:
    snippet = load_snippet(SNIPPET)
    closed = jax.make_jaxpr(snippet.f)(*snippet.args)
    tb = closed.jaxpr.eqns[0].source_info.traceback
    codes, lastis = tb.raw_frames()
    assert len(codes) == len(lastis)
    assert SNIPPET_FILENAME in [c.co_filename for c in codes]
    frame = source_info_util.raw_frame_to_frame(codes[0], lastis[0])
    assert set(frame._fields) >= {
        "file_name",
        "function_name",
        "start_line",
        "start_column",
        "end_line",
        "end_column",
    }
    src = views.snippet_source(tb)
    assert src is not None and (src.line, src.function) == (5, "f")


def test_register_exclusion_hides_jaxscope_and_exhibits() -> None:
    assert internals.EXCLUDED_ROOTS
    assert callable(source_info_util.register_exclusion)
    assert not source_info_util.is_user_filename(internals.__file__)
    assert not source_info_util.is_user_filename(internals.EXCLUDED_ROOTS[-1] + "probe.py")
    assert source_info_util.is_user_filename(SNIPPET_FILENAME)


# ------------------------------------------------------------------ recording.py


def test_jaxpr_stack_frame_add_eqn_and_tracing_eqn() -> None:
    assert list(inspect.signature(pe.JaxprStackFrame.add_eqn).parameters) == ["self", "eqn"]
    assert "debug_info" in pe.JaxprStackFrame.__slots__
    names: list[str] = []
    x = jnp.ones(2)  # (an eager op traces a small jaxpr of its own)

    @jax.jit
    def inner(y: jax.Array) -> jax.Array:
        return y * 2

    with recording.watching_traces(names):
        jax.make_jaxpr(lambda x: inner(x))(x)
    assert names[:2] == ["<lambda>", "inner"]  # DebugInfo.func_name of each frame opened
    assert "auto_dce" in pe.JaxprStackFrame.__slots__
    fields = inspect.signature(pe.TracingEqn.__init__).parameters
    assert list(fields)[1:] == [
        "in_tracers",
        "outvars",
        "primitive",
        "params",
        "effects",
        "source_info",
        "ctx",
    ]
    assert isinstance(pe.TracingEqn.invars, property)


def test_make_jaxpr_and_jit_trace_keep_every_recorded_eqn() -> None:
    # auto_dce=False for these top-level traces: nothing recorded is dropped, so recorded
    # index == index in the final jaxpr. A dead eqn shows that.
    seen: list[bool] = []
    orig = pe.JaxprStackFrame.add_eqn

    def spy(self: pe.JaxprStackFrame, eqn: pe.TracingEqn) -> None:
        seen.append(self.auto_dce)
        orig(self, eqn)

    pe.JaxprStackFrame.add_eqn = spy  # type: ignore[method-assign]
    try:
        closed = jax.make_jaxpr(lambda x: (jnp.cos(x), x * 2)[1])(jnp.ones(2))
    finally:
        pe.JaxprStackFrame.add_eqn = orig  # type: ignore[method-assign]
    assert [e.primitive.name for e in closed.jaxpr.eqns] == ["cos", "mul"]
    assert seen and seen[-1] is False


def test_recording_streams_the_top_frame_and_restores_on_errors() -> None:
    before = (pe.JaxprStackFrame.__init__, pe.JaxprStackFrame.add_eqn)
    snippet = load_snippet(SNIPPET)
    got: list[Any] = []
    with recording.recording_eqns(got.append):
        closed = plan_call(snippet).make_jaxpr()
    assert [e.primitive for e in got] == [e.primitive.name for e in closed.jaxpr.eqns]

    def boom(x: jax.Array) -> jax.Array:
        if x.sum() > 0:
            return x
        return -x

    with pytest.raises(jax.errors.TracerBoolConversionError), recording.recording_eqns(got.append):
        jax.make_jaxpr(boom)(jnp.ones(2))
    assert (pe.JaxprStackFrame.__init__, pe.JaxprStackFrame.add_eqn) == before


def test_recorded_param_texts_are_a_fresh_print_when_the_helpers_traces_are_cached() -> None:
    # A second trace of the same program hits the jnp helpers' cached traces (the same inner
    # jaxpr objects), whose param texts the first one kept (recording._param_texts): each
    # recorded eqn's params are still JAX's own print of them with a fresh context.
    code = (ROOT / "exhibits" / "tracing" / "examples" / "mlp_loss.py").read_text()
    for attempt in range(2):
        got: list[Any] = []
        with recording.recording_eqns(got.append):
            closed = plan_call(load_snippet(code)).make_jaxpr()
        eqns = closed.jaxpr.eqns
        assert [r.primitive for r in got] == [e.primitive.name for e in eqns]
        inner = [e for e in eqns if any(isinstance(v, core.ClosedJaxpr) for v in e.params.values())]
        assert inner, "the program must hold eqns with inner jaxprs (jnp helpers)"
        for record, eqn in zip(got, eqns, strict=True):
            fresh = {
                k: core.pp_kv_pair(k, v, core.JaxprPpContext(), core.JaxprPpSettings()).format()[
                    len(k) + 1 :
                ]
                for k, v in eqn.params.items()
            }
            assert record.params == fresh, (attempt, eqn.primitive.name)
    assert len(recording._ONE_JAXPR_TEXTS) > 0


def test_tracer_errors_are_public_classes() -> None:
    assert issubclass(jax.errors.TracerBoolConversionError, jax.errors.ConcretizationTypeError)
    assert issubclass(jax.errors.ConcretizationTypeError, TypeError)


# ------------------------------------------------------------------ cache.py / monitoring.py


def test_tracing_caches_and_explain_hooks() -> None:
    for fn in (pjit._infer_params_cached, pe.trace_to_jaxpr):
        assert callable(fn.cache_clear) and callable(fn.cache_info)
    assert isinstance(pe.callsites_with_tracing_cache_miss, set)
    assert pe.logger.name == cache.EXPLAIN_LOGGER
    assert callable(jax.explain_cache_misses)


def test_fresh_caches_make_jit_trace_again_after_make_jaxpr() -> None:
    def g(x: jax.Array) -> jax.Array:
        return x + 1

    def g2(x: jax.Array) -> jax.Array:
        return x + 2

    # make_jaxpr fills the tracing caches that jit shares (but not jit's C++ cache):
    jax.make_jaxpr(g)(jnp.ones(2))
    with cache.observe_call("g") as hit:
        jax.jit(g)(jnp.ones(2))
    assert hit.trace_events == 1  # JAX times the (cached) trace step...
    assert not hit.traced  # ...but g's body does not run
    jax.make_jaxpr(g2)(jnp.ones(2))
    cache.fresh_caches()
    jg2 = jax.jit(g2)
    with cache.observe_call("g2") as miss:
        jg2(jnp.ones(2))
    assert miss.traced and "g2" in miss.traced_functions
    assert cache.cache_size(jg2) == 1


def test_explain_cache_misses_logs_at_warning() -> None:
    def h(x: jax.Array) -> jax.Array:
        return x * 3

    jh = jax.jit(h)
    with cache.observe_call("h") as first:
        jh(jnp.ones(2))
    with cache.observe_call("h") as second:
        jh(jnp.ones(3))
    assert "TRACING CACHE MISS" in first.explanation
    assert "never seen function" in first.explanation
    assert "now f32[3] and before f32[2]" in second.explanation
    # Our handler is removed again after the call.
    handlers = logging.getLogger(cache.EXPLAIN_LOGGER).handlers
    assert not any(type(h_).__name__ == "_ListHandler" for h_ in handlers)


def test_monitoring_event_names_and_listener_api() -> None:
    from jax._src import dispatch

    names = {v for k, v in vars(dispatch).items() if isinstance(v, str) and v.startswith("/jax/")}
    assert {monitoring.TRACE_EVENT, monitoring.LOWER_EVENT, monitoring.COMPILE_EVENT} <= names
    assert callable(jax.monitoring.register_event_duration_secs_listener)
    assert callable(jax.monitoring.unregister_event_duration_listener)
    got: list[Any] = []
    with monitoring.stage_timers(got.append, "k"):

        def k(x: jax.Array) -> jax.Array:
            return x - 1

        jax.jit(k).lower(jnp.ones(4)).compile()
    assert [t.stage for t in got] == ["trace", "lower", "compile"]


# ------------------------------------------------------------------ lowering.py


def test_debug_locations_and_mlir_context() -> None:
    snippet = load_snippet(SNIPPET)
    lowered = jax.jit(snippet.f).lower(*snippet.args)
    debug = lowered.as_text(debug_info=True)
    assert '"<snippet>":5:' in debug  # file locations as "file":line:col
    assert "callsite(" in debug or "#loc" in debug
    assert '"jit(f)/sin"' in debug  # name-stack location of the sin op
    links = op_links(lowered.as_text(), debug, jax.make_jaxpr(snippet.f)(*snippet.args))
    assert any(link.op == "stablehlo.sine" and link.eqn_indices == [0] for link in links)
    assert callable(mlir.make_ir_context)
    counts = parsed_op_counts(lowered.as_text())
    assert counts["stablehlo.sine"] == 1


def test_compiled_stats_field_names() -> None:
    compiled = jax.jit(lambda x: x @ x).lower(jnp.ones((2, 2))).compile()
    stats = compiled.memory_analysis()
    for name in ("argument_size_in_bytes", "output_size_in_bytes", "temp_size_in_bytes"):
        assert hasattr(stats, name)
    cost = compiled.cost_analysis()
    assert isinstance(cost, dict) and "flops" in cost


def test_optimized_hlo_text_carries_metadata_and_stack_frames() -> None:
    """``compiled.py`` reads instruction metadata from ``Compiled.as_text()`` because jaxlib
    gives no structured form: no ``HloModuleProto`` classes, and an ``HloInstruction`` binding
    without metadata. The text prints the four stack frame tables and, on each instruction,
    ``metadata={op_name=... stack_frame_id=N}``; the instructions it names are the module's."""
    snippet = load_snippet(SNIPPET)
    closed = jax.make_jaxpr(snippet.f)(*snippet.args)
    compiled = jax.jit(snippet.f).lower(*snippet.args).compile()
    text = compiled.as_text()
    assert text is not None
    lines = text.splitlines()
    for table in ("FileNames", "FunctionNames", "FileLocations", "StackFrames"):
        assert table in lines
    assert 'op_name="jit(f)/sin" stack_frame_id=' in text
    frames = stack_frame_index(lines)
    assert SNIPPET_FILENAME in frames.file_names.values()
    executable = compiled.runtime_executable()
    assert executable is not None
    (module,) = executable.hlo_modules()
    instructions = {
        (c.name, i.name): i.opcode.name for c in module.computations() for i in c.instructions()
    }
    assert not hasattr(next(iter(module.computations())).instructions()[0], "metadata")
    links = hlo_links(text, closed)
    assert {(link.computation, link.instruction) for link in links} <= set(instructions)
    (sine,) = [link for link in links if link.opcode == "sine"]
    assert instructions[(sine.computation, sine.instruction)] == "kSin"
    assert sine.eqn_indices == [0] and sine.source is not None and sine.source.line == 5


def test_jaxprs_in_params_yields_the_inner_jaxprs_of_jit_cond_and_scan() -> None:
    """``internals.trace_stack.count_eqns`` (a program's size for its limits) walks
    ``core.jaxprs_in_params``: it yields the ``Jaxpr`` of a ``jit`` eqn, each ``cond`` branch
    and the ``scan`` body."""

    @jax.jit
    def inner(x: Any) -> Any:
        return jnp.sin(x)

    def f(x: Any) -> Any:
        y = jax.lax.cond(x.sum() > 0, inner, jnp.cos, x)
        y, _ = jax.lax.scan(lambda c, _: (c * 2.0, None), y, None, length=3)
        return inner(y)

    eqns = jax.make_jaxpr(f)(jnp.ones(3)).jaxpr.eqns
    found = {
        e.primitive.name: list(core.jaxprs_in_params(e.params))
        for e in eqns
        if e.primitive.name in ("jit", "cond", "scan")
    }
    assert [len(found[k]) for k in ("jit", "cond", "scan")] == [1, 2, 1]
    assert all(isinstance(j, core.Jaxpr) for js in found.values() for j in js)


def test_the_stations_records_are_what_its_events_hold() -> None:
    """``module_lowered``, ``executable_compiled`` and ``program_executed`` return records
    (design 0059) that the stations probe makes its events of, field by field: the same fields
    (``values``, the outputs themselves, stays in the worker; ``zeros_for`` is the probe's)."""
    from jaxscope.internals.compiled import CompiledModule, HloLinkRecord
    from jaxscope.internals.execution import ProgramRun
    from jaxscope.internals.lowering import LoweredModule, OpLinkRecord
    from jaxscope.protocol import EventBase

    from exhibits.stations import events

    base = set(EventBase.model_fields) | {"type"}
    assert set(HloLinkRecord.__dataclass_fields__) == set(events.HloLink.model_fields)
    assert set(OpLinkRecord.__dataclass_fields__) == set(events.OpLink.model_fields)
    # ``compiled_for``, ``topology`` (which target it compiled for, design 0067) and ``memory_peak``
    # (read from XLA's buffer assignment of a TPU compile, design 0073) are the probe's.
    probe_set = {"compiled_for", "topology", "memory_peak"}
    assert (
        set(CompiledModule.__dataclass_fields__)
        == set(events.ExecutableCompiled.model_fields) - base - probe_set
    )
    assert set(LoweredModule.__dataclass_fields__) == set(events.ModuleLowered.model_fields) - base
    executed = set(events.ProgramExecuted.model_fields) - base - {"zeros_for"}
    assert set(ProgramRun.__dataclass_fields__) - {"values"} == executed


def _fields(record: type) -> set[str]:
    """The field names of the dataclass ``record``."""
    return {f.name for f in dataclasses.fields(record)}


def test_the_recompile_diagnosis_entries_are_what_the_key_entry_event_holds() -> None:
    """``recompiles.diagnose`` returns ``KeyEntryRecord`` rows (design 0059) that the
    recompile_hunt probe makes its ``KeyEntryDiff`` events of, field by field."""
    from jaxscope.internals.recompiles import KeyEntryRecord

    from exhibits.caches import events

    assert _fields(KeyEntryRecord) == set(events.KeyEntryDiff.model_fields)


def test_the_cache_layer_words_are_what_the_caches_events_hold() -> None:
    """``cache_layers.JitCallRecord.layer()`` and ``cells()`` answer in the literals the caches
    exhibit's ``JitCallObserved`` holds (its probe passes them through)."""
    from typing import get_args

    from jaxscope.internals import cache_layers

    from exhibits.caches import events

    assert get_args(cache_layers.CacheLayer) == get_args(events.CacheLayer)
    assert get_args(cache_layers.CacheCell) == get_args(events.CacheCell)


def test_the_batching_records_are_what_the_vmap_events_hold() -> None:
    """``batching_steps`` returns records (design 0059) that the vmap probe makes its events
    of, field by field: the same fields as the events, less the base's."""
    from jaxscope.internals import batching_steps as records
    from jaxscope.protocol import EventBase

    from exhibits.vmap import events

    base = set(EventBase.model_fields) | {"type"}
    assert _fields(records.MappedInputRecord) == set(events.MappedInput.model_fields)
    assert _fields(records.BatchStepRecord) == set(events.BatchRuleApplied.model_fields) - base
    staged = set(events.BatchedJaxprStaged.model_fields) - base
    assert _fields(records.BatchedJaxprRecord) == staged


def test_the_jvp_records_are_what_the_jvp_events_hold() -> None:
    """``capture_jvp`` returns records (design 0059) that the jvp probe makes its events of,
    field by field, its mechanisms the events' literals."""
    from typing import get_args

    from jaxscope.internals import jvp_steps as records
    from jaxscope.protocol import EventBase

    from exhibits.jvp import events

    base = set(EventBase.model_fields) | {"type"}
    assert _fields(records.JvpStepRecord) == set(events.JvpRuleApplied.model_fields) - base
    assert _fields(records.JvpJaxprRecord) == set(events.JvpJaxprStaged.model_fields) - base
    assert get_args(records.JvpMechanism) == get_args(events.JvpMechanism)


def test_the_transpose_walk_records_are_what_the_transpose_events_hold() -> None:
    """``transpose_walk`` returns records (design 0059): ``linear_jaxpr_staged(lin)`` and each
    step's ``view``, that the transpose and nan_finder probes make their events of, field by
    field (``exhibits/transpose/walk_events.py``; ``output_leaf`` is the probe's)."""
    from jaxscope.internals import transpose_walk as records
    from jaxscope.protocol import EventBase

    from exhibits.transpose import events

    base = set(EventBase.model_fields) | {"type"}
    assert _fields(records.TransposeStepView) == set(events.TransposeStepped.model_fields) - base
    assert _fields(records.CotangentWriteView) == set(events.CotangentWrite.model_fields)
    staged = set(events.LinearJaxprStaged.model_fields) - base - {"output_leaf"}
    assert _fields(records.LinearJaxprRecord) == staged
