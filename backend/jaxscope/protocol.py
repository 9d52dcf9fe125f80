"""The wire schema of jaxscope: request models and the discriminated union of run events.

This module is the one contract between the sandbox worker, the server, the CLI and the browser.
The worker writes events as NDJSON, the server re-validates every line with :data:`EVENT_ADAPTER`
before forwarding it on the websocket, and the frontend's TypeScript types are generated from
:func:`json_schema` (``python -m jaxscope.protocol`` prints it; ``frontend/src/gen/`` holds the
result, and CI fails when the two drift).

Conventions (see ``docs/architecture.md``):

* Every event carries ``type`` (past-tense verb + JAX noun), ``seq`` (0, 1, 2, ... per run, assigned
  by the supervisor) and ``run_id`` (chosen by the client).
* Every run ends in exactly one terminal event: :class:`RunFinished` or :class:`RunFailed`.
* Names follow JAX: jaxpr, eqn, invars, outvars, constvars, aval, weak_type, source_info.
* Source locations are 1-based lines (and 0-based columns, as Python's ``ast``/``traceback``) of
  the user's snippet only; JAX's own frames are never reported as a location.

This module imports nothing from JAX: the server and the CLI import it without paying for JAX.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

# The largest snippet the server accepts, in characters. A bigger paste gets ``invalid_request``.
MAX_CODE_CHARS = 200_000


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=False)


# --------------------------------------------------------------------------------------------
# Shared views
# --------------------------------------------------------------------------------------------


class SourceLoc(_Model):
    """A place in the user's snippet (never in JAX's files).

    ``line``/``end_line`` are 1-based; ``column``/``end_column`` 0-based, as in
    ``jax._src.source_info_util.Frame`` and Python's ``traceback``. ``function`` is the user
    function's name (``<module>`` at top level).
    """

    line: int
    column: int | None = None
    end_line: int | None = None
    end_column: int | None = None
    function: str | None = None


class AvalView(_Model):
    """An abstract value (``jax.core.ShapedArray``): shape, dtype name and weak type.

    ``short`` is ``aval.str_short()`` (``f32[3]``); ``weak_type`` marks Python-scalar-derived
    avals (``str(aval)`` writes them with a ``~`` prefix, the jaxpr text does not).
    """

    shape: list[int]
    dtype: str
    weak_type: bool = False
    short: str


class VarView(_Model):
    """A jaxpr variable or literal as JAX prints it.

    ``name`` is the name in JAX's own printout of the enclosing jaxpr (``a``, ``b``, ...); for a
    literal it is the printed literal (``2.0:f32[]``) and ``literal`` is true.
    """

    name: str
    aval: AvalView
    literal: bool = False


class ConstVarView(_Model):
    """A constvar of a ClosedJaxpr with a preview of its value (``numpy`` repr, truncated)."""

    var: VarView
    value_preview: str


class InnerJaxprView(_Model):
    """A jaxpr held in an eqn's params (``jit``'s ``jaxpr``, ``cond``'s ``branches``, ...).

    ``param`` is the params key, ``name`` the ``jit`` name when there is one (``_where``),
    ``text`` JAX's own printout of the inner jaxpr.
    """

    param: str
    name: str | None = None
    text: str


class EqnView(_Model):
    """One equation of a jaxpr.

    ``index`` is its position in ``jaxpr.eqns``; ``text`` is JAX's printout of this eqn alone
    (names consistent with the enclosing jaxpr); ``params`` maps each param to its printed value;
    ``source`` is the user line from ``eqn.source_info`` (``source_info_util.user_frame``).
    """

    index: int
    primitive: str
    params: dict[str, str]
    invars: list[VarView]
    outvars: list[VarView]
    effects: list[str] = []
    source: SourceLoc | None = None
    text: str
    inner_jaxprs: list[InnerJaxprView] = []


class JaxprView(_Model):
    """A ClosedJaxpr: JAX's own text plus a structured view of the same object.

    ``text`` is ``str(closed_jaxpr)`` byte for byte; the structured fields use the same names.
    """

    text: str
    constvars: list[ConstVarView]
    invars: list[VarView]
    outvars: list[VarView]
    eqns: list[EqnView]
    effects: list[str]


class ArrayPreview(_Model):
    """A concrete output array: shape, dtype and a truncated ``numpy`` printout."""

    path: str
    shape: list[int]
    dtype: str
    preview: str


class TracebackFrame(_Model):
    """One frame of a user-code traceback (user frames only)."""

    line: int
    function: str
    text: str | None = None


class OpLink(_Model):
    """A StableHLO op line linked back to the jaxpr and the user's source.

    ``line`` is the 0-based line index in :attr:`ModuleLowered.stablehlo`; ``op`` the op name
    (``stablehlo.sine``); ``name_stack`` the location name JAX attached (``jit(f)/sin``);
    ``source`` the user line from the op's debug location; ``eqn_indices`` the top-level eqns of
    the staged jaxpr lowered into this op (matched by user line and primitive).
    """

    line: int
    op: str
    name_stack: str | None = None
    source: SourceLoc | None = None
    eqn_indices: list[int] = []


class CallSpec(_Model):
    """One extra call of the jitted function in the tracing exhibit's "call again" control.

    ``change``: ``same`` re-uses ``args``; ``shape`` grows axis 0 of every array argument by one
    (scalars become 1-vectors); ``dtype`` casts floating arguments to float16 and integer ones to
    int16; ``expr`` evaluates ``expr`` (a Python expression giving an args tuple) in the snippet.
    """

    change: Literal["same", "shape", "dtype", "expr"] = "same"
    expr: str | None = None


# The transforms the transform_order exhibit stacks (outermost first).
TransformName = Literal[
    "jit", "grad", "value_and_grad", "vmap", "jacfwd", "jacrev", "hessian", "jvp", "vjp"
]


class RunOptions(_Model):
    """Per-run options. ``calls``: extra calls after the first (tracing exhibit). ``known``:
    the partial_eval exhibit's known/unknown toggle, one flag per input of the JVP jaxpr
    (primals then tangents, flattened); ``None`` = primals known, tangents unknown.
    ``in_axes``/``out_axes``: the vmap exhibit's axes as Python expressions (``None`` = the
    snippet's own ``in_axes``/``out_axes``, else 0). ``stack``: the transform_order exhibit's
    chips, outermost first (``None`` = the snippet's ``stack`` or its default). ``preset``: a
    named call sequence or loop of the cache exhibits; ``perturb``: the cache_key exhibit's one
    changed ingredient; ``steps``: the recompile hunt's step count; ``xla_flags``: flags the
    cache_key exhibit filters as JAX does. ``mesh``/``spec``/``array_shape``: the device
    exhibits' mesh, PartitionSpec and array shape as Python expressions (``None`` = the
    snippet's ``mesh``/``spec``)."""

    calls: list[CallSpec] = Field(default_factory=list, max_length=16)
    known: list[bool] | None = Field(default=None, max_length=4096)
    in_axes: str | None = Field(default=None, max_length=2000)
    out_axes: str | None = Field(default=None, max_length=2000)
    stack: list[TransformName] | None = Field(default=None, max_length=8)
    preset: str | None = Field(default=None, max_length=200)
    perturb: str | None = Field(default=None, max_length=200)
    steps: int | None = Field(default=None, ge=1, le=200)
    xla_flags: str | None = Field(default=None, max_length=2000)
    mesh: str | None = Field(default=None, max_length=2000)
    spec: str | None = Field(default=None, max_length=2000)
    array_shape: str | None = Field(default=None, max_length=200)


# --------------------------------------------------------------------------------------------
# Requests (browser or CLI -> server)
# --------------------------------------------------------------------------------------------


class RunRequest(_Model):
    """Run ``exhibit`` on the snippet ``code``. Answered by a stream of events for ``run_id``."""

    type: Literal["run"] = "run"
    run_id: str = Field(min_length=1, max_length=64)
    exhibit: str = Field(min_length=1, max_length=64)
    code: str
    options: RunOptions = Field(default_factory=RunOptions)


class CancelRequest(_Model):
    """Cancel the run ``run_id``: it ends with ``run_failed`` kind ``cancelled``."""

    type: Literal["cancel"] = "cancel"
    run_id: str = Field(min_length=1, max_length=64)


Request = Annotated[RunRequest | CancelRequest, Field(discriminator="type")]
REQUEST_ADAPTER: TypeAdapter[RunRequest | CancelRequest] = TypeAdapter(Request)


# --------------------------------------------------------------------------------------------
# Events (worker -> server -> browser)
# --------------------------------------------------------------------------------------------


class _Event(_Model):
    seq: int = 0
    run_id: str = ""


Stage = Literal["load", "trace", "lower", "compile", "run", "call"]


class RunStarted(_Event):
    """The worker accepted the run. ``backend`` is ``jax.default_backend()``; ``devices`` the
    default backend's devices as ``str(device)``; ``cpu_device_count`` the virtual CPU devices."""

    type: Literal["run_started"] = "run_started"
    exhibit: str
    jax_version: str
    backend: str
    devices: list[str]
    cpu_device_count: int


class StageStarted(_Event):
    """A stage of the run began (progress: the UI shows which stage runs and for how long)."""

    type: Literal["stage_started"] = "stage_started"
    stage: Stage
    call_index: int | None = None


class StageTimed(_Event):
    """A duration reported by ``jax.monitoring`` (``register_event_duration_secs_listener``).

    ``event`` is JAX's event name (``/jax/core/compile/jaxpr_trace_duration``,
    ``.../jaxpr_to_mlir_module_duration``, ``.../backend_compile_duration``); ``stage`` the
    station it belongs to; ``duration_ms`` in milliseconds; ``fun_name`` JAX's ``fun_name`` kwarg.
    """

    type: Literal["stage_timed"] = "stage_timed"
    stage: Stage
    event: str
    duration_ms: float
    fun_name: str | None = None


class EqnRecorded(_Event):
    """An eqn recorded by JAX's tracer in a user frame, streamed as it is recorded.

    Comes from ``pe.JaxprStackFrame.add_eqn``. ``index`` is the order among the eqns recorded in
    the traced function's own frame (equal to its index in the staged jaxpr); ``in_avals`` and
    ``out_avals`` are the avals going in and out (weak types marked); ``params`` printed values.
    """

    type: Literal["eqn_recorded"] = "eqn_recorded"
    index: int
    primitive: str
    params: dict[str, str]
    in_avals: list[AvalView]
    out_avals: list[AvalView]
    source: SourceLoc | None = None


class StdoutPrinted(_Event):
    """Text the user's code wrote to stdout; ``stage`` tells when (``trace``: printed while
    tracing; ``run``/``call``: printed while executing, e.g. by ``jax.debug.print``)."""

    type: Literal["stdout_printed"] = "stdout_printed"
    text: str
    stage: Stage
    call_index: int | None = None


class JaxprStaged(_Event):
    """The finished jaxpr: ``str(jax.make_jaxpr(f, static_argnums=...)(*args))`` and its
    structured view; ``fun_name`` is the traced function's name."""

    type: Literal["jaxpr_staged"] = "jaxpr_staged"
    fun_name: str
    jaxpr: JaxprView


class JitCalled(_Event):
    """One call of ``jax.jit(f)`` in the tracing exhibit's call sequence.

    ``traced`` says whether this call traced ``f`` again (a cache miss), read from
    ``jax.monitoring``'s trace-duration event; ``cache_size`` is the jitted function's
    ``_cache_size()`` after the call; ``explanation`` JAX's ``jax_explain_cache_misses`` text
    for this call (empty on a hit); ``arg_avals`` the flattened argument avals.
    """

    type: Literal["jit_called"] = "jit_called"
    call_index: int
    change: Literal["same", "shape", "dtype", "expr"]
    arg_avals: list[AvalView]
    traced: bool
    cache_size: int
    printed: str
    explanation: str


class ModuleLowered(_Event):
    """``Lowered``: ``stablehlo`` is ``Lowered.as_text()``; ``hlo`` is
    ``Lowered.as_text(dialect='hlo')``; ``op_links`` map StableHLO op lines to eqns and source
    via the debug locations of ``Lowered.as_text(debug_info=True)``."""

    type: Literal["module_lowered"] = "module_lowered"
    stablehlo: str
    hlo: str
    op_links: list[OpLink]


class ExecutableCompiled(_Event):
    """``Compiled``: ``compiled_text`` is ``Compiled.as_text()`` (optimized HLO);
    ``cost`` is ``Compiled.cost_analysis()`` (flops, transcendentals, bytes accessed, ...);
    ``memory`` the fields of ``Compiled.memory_analysis()`` in bytes; ``caveats`` say where
    those numbers are estimates or unavailable on this backend."""

    type: Literal["executable_compiled"] = "executable_compiled"
    compiled_text: str
    cost: dict[str, float] | None
    memory: dict[str, int] | None
    caveats: list[str]


class ProgramExecuted(_Event):
    """The compiled program ran on ``device``.

    ``dispatch_ms``: time until the call returned (async dispatch, no wait); ``blocked_ms``: time
    until ``block_until_ready`` returned for the same kind of call (median of ``repeats`` warm
    calls each); ``ready_after_dispatch``: ``is_ready()`` right after the first call returned;
    ``zeros_for``: the arguments given as ``jax.ShapeDtypeStruct`` (no values), by key path
    (``args[0]``, ``kwargs['w']``), which the program ran on as zeros of that shape and dtype.
    """

    type: Literal["program_executed"] = "program_executed"
    device: str
    platform: str
    outputs: list[ArrayPreview]
    dispatch_ms: float
    blocked_ms: float
    repeats: int
    ready_after_dispatch: bool
    zeros_for: list[str] = []


# --------------------------------------------------------------------------------------------
# Autodiff exhibits (jvp, partial_eval, transpose, custom_vjp, nan_finder). Each exhibit owns
# its event classes below; shared views first.
# --------------------------------------------------------------------------------------------

# Nested lists of numbers (a pytree of arrays as ``tolist()``), non-finite numbers written as the
# strings ``"nan"``, ``"inf"``, ``"-inf"`` (JSON has no NaN), as in ``../shared/cases``.
NestedNumbers = Any


class RuleView(_Model):
    """Where a rule of JAX's AD tables comes from.

    ``table`` is the dict it was found in (``primitive_jvps``, ``primitive_transposes``,
    ``fancy_transposes``); ``name`` the rule function's qualified name (``functools.partial``
    unwrapped); ``file`` the path below site-packages (``jax/_src/lax/lax.py``) and ``line`` the
    1-based line where the rule is registered (or defined, when no registration line is found).
    """

    table: str
    name: str
    file: str | None = None
    line: int | None = None


class ValueView(_Model):
    """A value going into or out of a rule.

    ``role``: primal, tangent, residual (a known value the linear jaxpr reads), undefined_primal
    (``ad.UndefinedPrimal``: a linear input of a transpose rule), literal, or cotangent.
    ``zero`` marks a symbolic zero (``ad.Zero``: no array exists); ``preview`` is a truncated
    ``numpy`` printout (``None`` when the value is only abstract); ``var`` the jaxpr variable name
    when it has one; ``nonfinite`` true when the value holds a NaN or an Inf.
    """

    role: Literal["primal", "tangent", "residual", "undefined_primal", "literal", "cotangent"]
    aval: AvalView
    preview: str | None = None
    zero: bool = False
    var: str | None = None
    nonfinite: bool = False


# ---- jvp -----------------------------------------------------------------------------------


class JvpRuleApplied(_Event):
    """One primal eqn went through ``ad.JVPTrace`` (one step of the jvp exhibit).

    ``index`` is the primal eqn's index in the staged jaxpr (:class:`JaxprStaged`); ``source``
    its user line. ``mechanism`` says what JAX did with it: ``rule`` = the JVP rule
    ``ad.primitive_jvps[primitive]`` ran (``rule`` says which, with its registration file:line);
    ``zero_tangents`` = every tangent in was a symbolic zero (``ad.Zero``), so
    ``JVPTrace.process_primitive`` bound the primal eqn alone and no rule ran; ``custom_jvp`` /
    ``custom_vjp`` = the function's own rule ran (``JVPTrace.process_custom_jvp_call`` /
    ``process_custom_vjp_call``; ``rule`` names the function). ``note`` explains a special case
    (an eqn with an inner jaxpr is one step with its own rule). ``tangent_eqns`` is JAX's printout
    of each eqn this step added to the JVP jaxpr (names as in :class:`JvpJaxprStaged`'s text,
    the primal recomputation included), ``jvp_eqn_indices`` their indices there (empty when the
    attribution is not exact). Values are at the user's ``args`` with the exhibit's tangents;
    primal values carry the primal jaxpr's var names, tangents the JVP jaxpr's.
    """

    type: Literal["jvp_rule_applied"] = "jvp_rule_applied"
    index: int
    primitive: str
    source: SourceLoc | None = None
    rule: RuleView | None = None
    mechanism: Literal["rule", "zero_tangents", "custom_jvp", "custom_vjp"] = "rule"
    note: str | None = None
    primals_in: list[ValueView]
    tangents_in: list[ValueView]
    tangent_eqns: list[str]
    jvp_eqn_indices: list[int] = []
    primals_out: list[ValueView]
    tangents_out: list[ValueView]


class JvpJaxprStaged(_Event):
    """The whole JVP jaxpr: ``jaxpr.text`` is ``str(jax.make_jaxpr(lambda primals, tangents:
    jax.jvp(f_closed, primals, tangents))(primals, tangents))`` (``expression``; ``f_closed`` is
    ``f`` with static and keyword arguments closed over, the dynamic positional arguments are the
    primals). ``eqn_origin[i]`` is the primal eqn index that JVP eqn ``i`` came from (``None``:
    none, e.g. zeros instantiated for the outputs); ``attributed`` is true when that attribution
    is exact (the eqn-by-eqn interpretation printed the very same jaxpr). ``tangents_in`` the
    tangents used (key paths ``tangents[0]['w1']``); ``primals_out``/``tangents_out`` the JVP
    jaxpr evaluated at ``args``; ``jax_primals_out``/``jax_tangents_out`` what
    ``jax.jvp(f_closed, primals, tangents)`` returns, and ``max_abs_diff`` the largest absolute
    difference between the two (``matches_jax_jvp``: within rtol 1e-5, atol 1e-6)."""

    type: Literal["jvp_jaxpr_staged"] = "jvp_jaxpr_staged"
    jaxpr: JaxprView
    expression: str = ""
    eqn_origin: list[int | None]
    attributed: bool = False
    tangents_in: list[ArrayPreview]
    primals_out: list[ArrayPreview]
    tangents_out: list[ArrayPreview]
    jax_primals_out: list[ArrayPreview] = []
    jax_tangents_out: list[ArrayPreview] = []
    matches_jax_jvp: bool
    max_abs_diff: float | None


# ---- partial_eval --------------------------------------------------------------------------


class ResidualView(_Model):
    """A residual: a value the known (forward) jaxpr hands to the unknown (linear) one, or a
    value ``jax.checkpoint`` saves for the backward pass.

    ``aval``; ``source`` the user line of the eqn that produced it (``None`` for an input);
    ``description`` what produced it (``output of sin``, ``the argument primal args[0]``; for
    remat JAX's own text from ``saved_residuals``); ``bytes`` its size (``float0``: 0);
    ``known_eqn`` the index of the producing eqn in the known jaxpr (split only).
    """

    aval: AvalView
    source: SourceLoc | None = None
    description: str
    bytes: int = 0
    known_eqn: int | None = None


class JaxprSplit(_Event):
    """``pe.partial_eval_jaxpr_nounits`` split the JVP jaxpr ``jvp`` (inputs: ``n_primals``
    primal leaves, then as many tangent leaves): ``known_inputs`` the flags used (one per input,
    ``input_labels``/``input_avals`` naming each), the known and unknown jaxprs,
    ``out_unknowns`` (one per JVP output), and the residuals in order (the known jaxpr's last
    outvars, the unknown jaxpr's first invars). ``split_calls``: indices in ``jvp.eqns`` of the
    call-like eqns (``jit``, ``scan``, ``cond``, ...) whose own partial-eval rule split them, one
    part in each jaxpr; ``dropped``: ``len(jvp.eqns) + len(split_calls) - len(known.eqns) -
    len(unknown.eqns)``, the JVP eqns in neither jaxpr (unknown eqns whose results reach no
    output: the partial evaluator stages only what the outputs need)."""

    type: Literal["jaxpr_split"] = "jaxpr_split"
    input_labels: list[str]
    input_avals: list[AvalView]
    known_inputs: list[bool]
    n_primals: int
    jvp: JaxprView
    known: JaxprView
    unknown: JaxprView
    out_unknowns: list[bool]
    residuals: list[ResidualView]
    split_calls: list[int] = []
    dropped: int = 0


class RematPolicyMeasured(_Event):
    """``jax.checkpoint(f, policy=...)`` under ``jax.grad`` (w.r.t. the floating-point leaves):
    ``policy`` the Python expression (``no checkpoint`` for plain ``f``), ``aliases`` other
    names of the same policy in ``jax.checkpoint_policies``; ``saved`` as
    ``print_saved_residuals`` reports them, their total bytes, the compiled ``memory_analysis``
    temp bytes (``None``: not reported), the median step time in milliseconds of the compiled
    grad over ``repeats`` calls on the worker's device, and ``grad_max_abs_diff`` the largest
    difference of its gradient to the un-checkpointed one (NaNs at the same places count as
    equal; ``None``: the two disagree on where the gradient is NaN or Inf). ``grad_of`` says what is
    differentiated: ``f`` (a scalar output) or ``sum of f's outputs`` (any other output)."""

    type: Literal["remat_policy_measured"] = "remat_policy_measured"
    index: int
    policy: str
    aliases: list[str] = []
    saved: list[ResidualView]
    residual_bytes: int
    temp_bytes: int | None
    step_ms: float
    repeats: int
    device: str
    grad_of: str
    grad_max_abs_diff: float | None


class RematUnavailable(_Event):
    """The remat table could not be computed: ``jax.grad`` (reverse mode, which every row
    needs) raised, e.g. a ``lax.while_loop`` with a traced bound has a JVP but no transpose.
    ``error_class``/``message``: JAX's (or the user's) exception class and text;
    ``explanation``: why, in plain words. The split above it stays valid (forward mode)."""

    type: Literal["remat_unavailable"] = "remat_unavailable"
    error_class: str
    message: str
    explanation: str
    # ``too_large``: not attempted, ``f`` is too big to compile once per policy within the run's
    # time (``error_class``/``message`` then say how big); ``grad_fails``: as above.
    reason: Literal["grad_fails", "too_large"] = "grad_fails"


# ---- transpose and nan_finder --------------------------------------------------------------


class CotangentWrite(_Model):
    """A cotangent a transpose rule sent to a linear variable: ``mode`` set (first write) or
    accumulate (``ad.add_tangents`` with what was there), the contribution and the running sum."""

    var: str
    mode: Literal["set", "accumulate"]
    contribution: ValueView
    running: ValueView


class TransposeStepped(_Event):
    """One step of the backward pass: the transpose rule of one linear eqn.

    ``step`` counts from 0 in walk order (last eqn first); ``eqn_index`` indexes the linear
    jaxpr; ``primal_primitive`` the primal eqn whose JVP rule emitted this eqn, when known.
    ``rule`` is ``None`` when neither ``ad.fancy_transposes`` nor ``ad.primitive_transposes``
    has an entry for ``primitive``.

    A failing step (the last of a walk whose backward pass raised, as ``jax.grad`` does):
    ``error_class``/``error`` are the exception its transpose rule raised (JAX's
    ``NotImplementedError`` for a primitive with no rule, or what the rule raised, e.g. a
    ``custom_vjp`` ``bwd``'s error) and ``writes`` what it accumulated before raising.
    """

    type: Literal["transpose_stepped"] = "transpose_stepped"
    step: int
    eqn_index: int
    primitive: str
    primal_primitive: str | None = None
    source: SourceLoc | None = None
    rule: RuleView | None = None
    eqn_text: str
    cts_in: list[ValueView]
    args: list[ValueView]
    writes: list[CotangentWrite]
    error_class: str | None = None
    error: str | None = None


class InnerStepView(_Model):
    """One step of the backward pass inside a call (a ``jit`` body, the branch a ``cond`` took,
    one iteration of a ``scan`` body): as :class:`TransposeStepped` without the values in
    (``step`` counts within that walk; ``eqn_text`` names vars as the body prints them)."""

    step: int
    primitive: str
    primal_primitive: str | None = None
    source: SourceLoc | None = None
    eqn_text: str
    writes: list[CotangentWrite]


class InnerWalkView(_Model):
    """The backward pass of one call's body: ``iteration`` the scan iteration (index along the
    scanned axis; ``None`` for ``jit``/``cond``), ``steps`` its steps (at most
    ``TransposeCallOpened`` ``max_steps``; ``truncated`` how many more there were)."""

    iteration: int | None = None
    steps: list[InnerStepView]
    truncated: int = 0


class TransposeCallOpened(_Event):
    """What the transpose rule of a call step (``step``: a ``jit``, ``cond`` or ``scan`` step of the
    walk) runs inside: the same walk over the call's body with the cotangents the step received
    (``transpose_walk.inside``/``walk_scan_body``: the backward pass JAX's
    ``_pjit_transpose_fancy``/``_cond_transpose_fancy`` run on the body, and
    ``_scan_transpose_fancy`` scans over the iterations, last first). ``name``: the jitted
    function's name, or ``branch i`` for a cond. For a scan, ``walks`` holds the first iterations
    walked (at most ``max_iterations``) and ``more_iterations`` how many were not shown. Calls
    inside the body are one step each here."""

    type: Literal["transpose_call_opened"] = "transpose_call_opened"
    step: int
    primitive: str
    name: str | None = None
    walks: list[InnerWalkView]
    more_iterations: int = 0
    max_steps: int = 0
    max_iterations: int = 0


class LinearJaxprStaged(_Event):
    """The linear jaxpr the backward pass walks (residuals first), with the residual values."""

    type: Literal["linear_jaxpr_staged"] = "linear_jaxpr_staged"
    jaxpr: JaxprView
    residuals: list[ValueView]


class GradientLeaf(_Model):
    """One leaf of a differentiated argument in :class:`GradientChecked`: ``path`` its key path
    (``args[0]['b1']``: ``args[i]`` then ``jax.tree_util.keystr``), ``aval`` its abstract value,
    and the walk's gradient, ``jax.grad``'s, ``jax.vjp``'s and the finite differences at that
    leaf (nested lists of floats, as in :class:`GradientChecked`)."""

    arg: int
    path: str
    aval: AvalView
    gradient: NestedNumbers
    jax_grad: NestedNumbers
    jax_vjp: NestedNumbers
    finite_difference: NestedNumbers


class FdNotCompared(_Model):
    """An element :class:`GradientChecked`'s error figures leave out because a gradient there is
    NaN or Inf, or the finite difference is: ``path`` the leaf (as in :class:`GradientLeaf`),
    ``index`` the element's position in it (``[]`` for a scalar), ``gradient`` the walk's value
    (float32 as shown), ``gradient_f64`` the float64 walk's, ``finite_difference`` the central
    difference (``None`` at a kink); non-finite numbers as ``"nan"``/``"inf"``/``"-inf"``.
    ``why``: the reason in words (``the gradient is nan``, ``the finite difference is nan``, ``a
    kink (no finite difference) and the gradient is inf``; empty from older servers)."""

    path: str
    index: list[int]
    gradient: NestedNumbers
    gradient_f64: NestedNumbers
    finite_difference: NestedNumbers
    why: str = ""


class GradientChecked(_Event):
    """The walk's final cotangents beside ``jax.grad``/``jax.vjp`` and central finite
    differences in float64.

    ``gradient``, ``jax_grad``, ``jax_vjp``, ``finite_difference``: one entry per element of
    ``args``: ``None`` for an argument not differentiated, an array argument as nested lists of
    floats, any other pytree as the list of its leaves in ``jax.tree.leaves`` order (each nested
    lists of floats; a dict's leaves in sorted key order); non-finite numbers as
    ``"nan"``/``"inf"``; ``None`` inside ``finite_difference`` at a kink. ``leaves``: the same
    values one differentiated leaf at a time, with its key path and aval (what the view shows).
    ``argnums`` the differentiated positions; ``seed`` the output cotangent the walk started from
    (``1.0`` for a scalar output, as ``jax.grad``; for a non-scalar output an all-ones cotangent,
    i.e. the gradient of ``sum(f)``, and ``jax_grad`` is then ``jax.grad`` of ``sum(f)``).
    ``equal_to_jax``: the walk's gradient is bit-identical to both ``jax_grad`` and ``jax_vjp``.
    ``max_abs_err = max |g64 - fd|`` over the compared elements: those where ``fd`` is known and
    finite and both the walk's gradient and ``g64`` are finite, with ``g64`` the same walk run in
    float64 (``jax.enable_x64``) and ``fd`` the central differences; ``max_rel_err = max_abs_err
    / max |fd|`` (the error relative to the largest gradient entry, infinity norm). Both
    ``None`` when nothing could be compared. ``compared``: how many elements were compared;
    ``not_compared``: the elements left out because a gradient or ``fd`` is NaN or Inf (the
    first 64, in leaf order; ``not_compared_count`` all of them). A kink (``fd`` unknown) with
    finite gradients is left out silently, as before (``None`` in ``finite_difference``).
    """

    type: Literal["gradient_checked"] = "gradient_checked"
    argnums: list[int] = []
    seed: str = "1.0"
    gradient: NestedNumbers
    jax_grad: NestedNumbers
    jax_vjp: NestedNumbers
    equal_to_jax: bool
    finite_difference: NestedNumbers
    max_abs_err: float | None
    max_rel_err: float | None
    leaves: list[GradientLeaf] = []
    compared: int | None = None
    not_compared: list[FdNotCompared] = []
    not_compared_count: int = 0


class GradAttempted(_Event):
    """One way of taking the gradient (``eager`` = ``jax.grad(f, argnums)(*args)``, ``jit`` =
    ``jax.jit(jax.grad(f, argnums), static_argnums).trace(*args)``: traced with abstract
    arguments): whether it worked and, if not, JAX's error (``error_class``, ``message``), the
    deepest snippet line on its traceback, a plain ``explanation`` and the ``fix``."""

    type: Literal["grad_attempted"] = "grad_attempted"
    mode: Literal["eager", "jit"]
    ok: bool
    error_class: str | None = None
    message: str | None = None
    source: SourceLoc | None = None
    explanation: str | None = None
    fix: str | None = None


class MarkedValue(_Model):
    """A value at the NaN step with its NaN/Inf elements located (nan_finder).

    ``label`` says what it is (``cotangent arriving at e``, ``residual a``, ``cotangent sent to
    d``); ``value`` the value itself; ``numbers`` its elements as nested lists (NaN/Inf written
    ``"nan"``/``"inf"``/``"-inf"``) when it has at most 64 elements, else ``None``;
    ``nonfinite_at`` the flat (C-order) indices of its first 64 non-finite elements;
    ``nonfinite_count`` how many elements are NaN or Inf in all.
    """

    label: str
    value: ValueView
    numbers: NestedNumbers = None
    nonfinite_at: list[int] = []
    nonfinite_count: int = 0


class CureView(_Model):
    """The double-``where`` rewrite of the user's code at the NaN step (nan_finder).

    ``guarded`` the functions whose argument gets the inner ``where`` (``sqrt``, ``log``, ``/``);
    ``start_line`` the 1-based snippet line where ``before`` (the original lines) starts;
    ``after`` their replacement, ``changed`` 0-based indices of its new or changed lines;
    ``form`` ``two_lines`` (a ``safe_x = where(...)`` line inserted) or ``inline``;
    ``source`` the whole rewritten snippet; ``verified`` whether ``jax.grad`` of the rewritten
    snippet at the same ``args`` is finite everywhere (``None``: could not be checked, see
    ``verify_error``), ``cured_gradient`` that gradient (one entry per element of ``args``).
    """

    pattern: Literal["double_where"] = "double_where"
    guarded: list[str]
    explanation: str
    start_line: int
    before: str
    after: str
    changed: list[int]
    form: Literal["two_lines", "inline"]
    source: str
    verified: bool | None = None
    verify_error: str | None = None
    cured_gradient: NestedNumbers = None


class EnclosingCall(_Model):
    """A call-like step of the backward pass the NaN finder descended into (``jit``, and
    ``cond``'s taken branch — ``name`` is then ``branch <index>``: its transpose is a backward
    pass over its own jaxpr, which JAX itself re-runs de-optimised under
    ``jax_debug_nans``; ``scan``: the body's backward pass per iteration, as ``scan``'s transpose
    runs it; ``remat2``, a ``jax.checkpoint``: its body, recomputed and transposed as
    ``remat_transpose`` does): ``step`` is its step in the walk it belongs to, ``primitive`` its
    primitive, ``name`` the called function's name (the eqn's ``name`` param; the checkpointed
    function's for ``remat2``), ``source`` the
    user line of the call; for a ``scan``, ``iteration`` the (0-based, forward-order) iteration
    whose body's backward pass went bad first (``scan``'s transpose walks the iterations last
    first)."""

    step: int
    primitive: str
    name: str | None = None
    source: SourceLoc | None = None
    iteration: int | None = None
    # scan only: ``reverse`` as the scan ran (then its transpose walks index 0 first), and the
    # first iteration, in the order the forward pass ran, whose extensive residuals (values and
    # derivative factors the forward pass saved) hold NaN/Inf (``None``: none do). Iterations are
    # indices along the scanned axis.
    reverse: bool = False
    forward_nonfinite_iteration: int | None = None


class NonfiniteFound(_Event):
    """The first backward-pass step whose cotangent became NaN or Inf (``found`` false: none).

    ``step``/``eqn_index``/``eqn_text``/``primitive`` name the linear eqn (as in
    :class:`TransposeStepped`), ``primal_primitive`` the primal eqn whose JVP emitted it and
    ``source`` its user line; ``kind`` ``nan`` when a NaN was written, else ``inf``;
    ``values_in`` the cotangent arriving and the residuals the rule read, ``values_out`` the
    cotangents it sent (contributions); ``forward_value`` the primal eqn's output at ``args`` and
    ``forward_nonfinite`` whether it was already NaN/Inf (``None``: not known);
    ``debug_nans`` what ``jax.grad(f)(*args)`` raises under ``jax_debug_nans`` (JAX's error class
    and text, ``None`` when it raises nothing); ``gradient`` ``jax.grad``'s result (one entry per
    element of ``args``, ``None`` for arguments not differentiated); ``steps_walked`` the steps
    emitted; ``cure`` the double-``where`` rewrite where it applies, else ``no_cure`` says why.
    ``inside``: when the first bad step is a ``jit``, ``cond``, ``scan`` or ``remat2`` call, the
    finder walks that call's body the same way (recursively), outermost call first; then ``step``
    is still the top-level step (the one the stepper shows), ``inner_step`` the step in the
    innermost body's walk, and
    ``eqn_index``/``eqn_text``/``primitive``/``primal_primitive``/``source``/values/``kind``
    name that innermost step (``eqn_index`` into the body's jaxpr).
    """

    type: Literal["nonfinite_found"] = "nonfinite_found"
    found: bool
    kind: Literal["nan", "inf"] | None = None
    step: int | None = None
    eqn_index: int | None = None
    eqn_text: str | None = None
    primitive: str | None = None
    primal_primitive: str | None = None
    source: SourceLoc | None = None
    values_in: list[MarkedValue] = []
    values_out: list[MarkedValue] = []
    forward_value: MarkedValue | None = None
    forward_nonfinite: bool | None = None
    debug_nans: str | None = None
    gradient: NestedNumbers = None
    steps_walked: int = 0
    cure: CureView | None = None
    no_cure: str | None = None
    inside: list[EnclosingCall] = []
    inner_step: int | None = None
    # The differentiated arguments whose values already hold a NaN or an Inf (``args[i]`` plus
    # the leaf's key path), with how many elements: then the bad cotangent came in with them.
    inputs_nonfinite: list[str] = []
    # Why the finder did not walk inside the bad step's call (a scan too long to walk per
    # iteration, or the walk of its body failed in jaxscope's machinery); ``None`` when it did,
    # or the step is no call.
    not_descended: str | None = None
    # The output cotangent the walk started from, as :class:`GradientChecked`'s ``seed``: "1.0"
    # (a scalar output, as ``jax.grad``), or "ones(f32[3]): ..." for a non-scalar output (the
    # gradient of ``sum(f)``; ``gradient`` is then ``jax.vjp`` with that cotangent).
    seed: str = "1.0"
    # Whether ``f``'s own output (the forward pass's result) holds a NaN or an Inf (``None``:
    # not known): then a non-finite forward value may be what f returns, not a discarded one.
    output_nonfinite: bool | None = None
    # For an Inf-only finding: what the same gradient raises under ``jax_debug_infs`` (JAX's
    # class and first line; ``None`` when nothing, or not asked).
    debug_infs: str | None = None
    # When the bad step is a ``custom_lin`` (a custom_vjp's backward rule): the rule's name,
    # and the first eqn of its trace with a NaN/Inf output (``bwd_primitive`` at
    # ``bwd_source``), run on the step's residuals and cotangent; the landing goes there.
    bwd_name: str | None = None
    bwd_primitive: str | None = None
    bwd_source: SourceLoc | None = None


# ---- custom_vjp ----------------------------------------------------------------------------


class ArgumentCheck(_Model):
    """One floating leaf of ``f``'s arguments, its gradient three ways.

    ``path`` the leaf's key path (``args[0][1]``) and ``aval`` its aval; ``custom`` is
    ``jax.grad`` of ``f`` with the custom rule (``None`` when that failed); ``autodiff``
    ``jax.grad`` of the same math with the custom function replaced by its undecorated ``.fun``
    (the rule removed); ``finite_difference`` central differences in float64
    (``jaxscope.finite_diff``; ``None`` entries at kinks). ``max_abs_diff_*`` is the largest
    absolute difference of ``custom`` to each (``None`` when one side is missing);
    ``agrees_*`` whether that is within ``tolerance`` (absolute, scaled by ``max(1, |ref|)``:
    1e-4 for float32, 1e-6 for float64).
    """

    path: str
    aval: AvalView
    custom: NestedNumbers
    autodiff: NestedNumbers
    finite_difference: NestedNumbers
    max_abs_diff_autodiff: float | None
    max_abs_diff_fd: float | None
    agrees_autodiff: bool | None = None
    agrees_fd: bool | None = None
    tolerance: float


class CustomArgView(_Model):
    """One leaf of the arguments the custom function received in ``f`` (its first call).

    ``position`` the positional argument it belongs to, ``path`` its key path
    (``args[2]``), ``preview`` the value (``None`` when it was a tracer), ``nondiff`` whether
    ``position`` is in ``nondiff_argnums``, ``integer`` whether it is an int (a Python int or an
    integer dtype: no cotangent exists for it).
    """

    position: int
    path: str
    aval: AvalView
    preview: str | None = None
    nondiff: bool = False
    integer: bool = False


class SavedResidual(_Model):
    """One leaf of the residuals ``fwd`` returned (the second element of its pair), called
    eagerly on the arguments the custom function received: ``path`` its key path in the
    residual pytree (``res[0]``), ``input_path`` the argument it is (by identity), if any
    (JAX then saves no copy: ``_filter_forwarded_inputs``)."""

    path: str
    aval: AvalView
    preview: str | None = None
    input_path: str | None = None


class TangentCheck(_Model):
    """``custom_jvp`` only: one output leaf of ``jax.jvp`` of the custom function at the
    arguments it received, with the rule (``custom``) and of ``.fun`` (``autodiff``), same
    tangents in; ``max_abs_diff`` between them."""

    path: str
    aval: AvalView
    custom: NestedNumbers
    autodiff: NestedNumbers
    max_abs_diff: float | None
    agrees: bool | None = None


class GradientAttempt(_Model):
    """One way of taking ``f``'s gradient with the custom rule: ``eager`` is
    ``jax.grad(f)(*args)``, ``jit`` is ``jax.jit(jax.grad(f))(*args)``; ``ok`` whether it
    worked, else JAX's error class and text and the snippet line (``source``)."""

    mode: Literal["eager", "jit"]
    ok: bool
    error_class: str | None = None
    message: str | None = None
    source: SourceLoc | None = None


class RuleProblem(_Model):
    """A mistake found in a custom rule, explained.

    ``kind``: ``bwd_structure`` (wrong number/structure of cotangents), ``bwd_shape`` (a
    cotangent of the wrong shape/dtype), ``fwd_not_pair``, ``fwd_output`` (fwd's primal output
    differs from the function's), ``jvp_rule`` (a custom_jvp rule's output rejected),
    ``int_not_nondiff`` (an int argument not in ``nondiff_argnums``), ``jit_failed`` (eager
    grad works, ``jit(grad)`` does not), ``grad_failed`` (another error), ``differs_autodiff``,
    ``differs_fd``, ``jvp_differs``, ``autodiff_failed`` (autodiff of ``.fun`` is not finite or
    raises where the rule gives a value: often why the rule exists). ``severity``: ``error`` (it
    does not work), ``warning`` (a value differs), ``note`` (for information). ``title`` one
    clear sentence; ``explanation`` why and the
    fix; ``error_class``/``error_message`` JAX's real error, kept verbatim; ``source`` the
    snippet line; ``argument`` the key path concerned.
    """

    kind: Literal[
        "bwd_structure",
        "bwd_shape",
        "fwd_not_pair",
        "fwd_output",
        "jvp_rule",
        "int_not_nondiff",
        "jit_failed",
        "grad_failed",
        "differs_autodiff",
        "differs_fd",
        "jvp_differs",
        "autodiff_failed",
    ]
    severity: Literal["error", "warning", "note"]
    title: str
    explanation: str
    error_class: str | None = None
    error_message: str | None = None
    source: SourceLoc | None = None
    argument: str | None = None


class CustomCallRecorded(_Event):
    """Step 1 for one custom function ``f`` calls: what it received and what its rule sees.

    ``name`` the function's ``__name__``, ``kind``, ``source`` its ``def`` line, ``call_source``
    the snippet line of its first call; ``rule_names`` the rule functions (``fwd``, ``bwd`` or
    ``jvp``) and ``rule_lines`` their ``def`` lines in the snippet; ``call_args`` the leaves it
    received; ``residuals`` what ``fwd`` saved (custom_vjp; empty when fwd failed);
    ``jvp_check`` (custom_jvp) the rule's tangents against autodiff of ``.fun``, with
    ``tangents_in`` the tangents used (a fixed pseudo-random draw).
    """

    type: Literal["custom_call_recorded"] = "custom_call_recorded"
    name: str
    kind: Literal["custom_vjp", "custom_jvp"]
    source: SourceLoc | None = None
    call_source: SourceLoc | None = None
    rule_names: dict[str, str]
    rule_lines: dict[str, int] = {}
    nondiff_argnums: list[int]
    call_args: list[CustomArgView]
    residuals: list[SavedResidual]
    tangents_in: list[ArrayPreview] = []
    jvp_check: list[TangentCheck] = []


class CustomRuleChecked(_Event):
    """Step 2 for one custom function: ``f``'s gradient with the rule against autodiff without
    it and finite differences, per floating leaf of ``args`` (``arguments``); ``attempts`` the
    eager and jitted gradient; ``problems`` the mistakes found, explained; ``verdict`` ``agrees``
    (every check within tolerance), ``differs`` (a value disagrees) or ``error`` (the gradient
    could not be taken)."""

    type: Literal["custom_rule_checked"] = "custom_rule_checked"
    name: str
    kind: Literal["custom_vjp", "custom_jvp"]
    nondiff_argnums: list[int]
    arguments: list[ArgumentCheck]
    attempts: list[GradientAttempt]
    problems: list[RuleProblem]
    verdict: Literal["agrees", "differs", "error"]


# --------------------------------------------------------------------------------------------
# Batching exhibits (vmap, transform_order). Each exhibit owns its event classes below.
# --------------------------------------------------------------------------------------------


class MappedInput(_Model):
    """One leaf of the positional arguments as ``jax.vmap`` sees it: ``path`` (``args[0]``,
    ``args[1]['w']``), ``bdim`` its mapped axis (``None`` = not mapped; negative ``in_axes``
    resolved), ``aval`` its full (batched) aval and ``example_aval`` the per-example aval (the
    mapped axis removed), read off the ``BatchTracer`` vmap made of it. ``static``: a static
    argument (``static_argnums``), closed over, never traced."""

    path: str
    bdim: int | None = None
    aval: AvalView | None = None
    example_aval: AvalView | None = None
    static: bool = False


class VmapInputsMapped(_Event):
    """How ``jax.vmap(f, in_axes, out_axes)`` maps the snippet's ``args``: the axes as given
    (Python expressions), the mapped size, and each argument leaf (:class:`MappedInput`).
    ``axis_size`` ``None`` (and no ``inputs``): ``jax.vmap`` rejected the axes or the arguments
    before mapping anything, and the run fails next with its error; the axes are still the
    ones the run tried."""

    type: Literal["vmap_inputs_mapped"] = "vmap_inputs_mapped"
    in_axes: str
    out_axes: str
    axis_size: int | None
    inputs: list[MappedInput]


class BatchRuleApplied(_Event):
    """JAX's batching rule (``batching.fancy_primitive_batchers[primitive]``) ran on one eqn of
    the unbatched (per-example) jaxpr, inside ``jax.vmap``'s ``BatchTrace``.

    ``index`` is the eqn's index in the per-example jaxpr (:class:`JaxprStaged`); ``in_vars`` /
    ``out_vars`` its var names there (``None`` for a literal). ``in_bdims``/``out_bdims``: the
    batch dim of each value (``None`` = not mapped) as ``BatchTracer.batch_dim`` held it.
    ``example_in_avals``/``example_out_avals``: the per-example avals (the eqn's own);
    ``in_avals``/``out_avals``: the batched values' avals (the batch axis at its bdim).
    ``mechanism``: ``rule`` = the rule ran; ``not_mapped`` = no input was mapped, so
    ``BatchTrace.process_primitive`` bound the eqn unbatched and no rule ran. ``emitted``: JAX's
    printout of each eqn this step added to the batched jaxpr (:class:`BatchedJaxprStaged`'s
    names), ``batched_eqn_indices`` their indices there; ``moves`` the subset that moves or
    broadcasts an axis (``transpose``, ``broadcast_in_dim``, ``reshape``, ...) rather than
    computing the eqn itself."""

    type: Literal["batch_rule_applied"] = "batch_rule_applied"
    index: int
    primitive: str
    source: SourceLoc | None = None
    rule: RuleView | None = None
    mechanism: Literal["rule", "not_mapped"] = "rule"
    note: str | None = None
    in_vars: list[str | None] = []
    out_vars: list[str] = []
    in_bdims: list[int | None]
    out_bdims: list[int | None]
    example_in_avals: list[AvalView] = []
    example_out_avals: list[AvalView] = []
    in_avals: list[AvalView]
    out_avals: list[AvalView]
    emitted: list[str] = []
    batched_eqn_indices: list[int] = []
    moves: list[str] = []


class BatchedJaxprStaged(_Event):
    """The batched jaxpr: ``jaxpr.text`` is ``str(jax.make_jaxpr(jax.vmap(f, in_axes,
    out_axes), static_argnums)(*args))``; ``outputs`` are ``jax.vmap(f, in_axes,
    out_axes)(*args)``'s leaves and ``matches_jax_vmap`` says the step-by-step interpretation
    computed the same values; ``interpreted_text_equal`` that its jaxpr prints identically.
    ``result_bdims``: each output leaf's batch dim before vmap moved it to ``out_axes``;
    ``output_moves`` the eqns that move did add."""

    type: Literal["batched_jaxpr_staged"] = "batched_jaxpr_staged"
    in_axes: str
    out_axes: str
    jaxpr: JaxprView
    outputs: list[ArrayPreview]
    matches_jax_vmap: bool
    interpreted_text_equal: bool = False
    result_bdims: list[int | None] = []
    output_moves: list[str] = []


class TraceNodeView(_Model):
    """One value in the nest of tracers that reached the user's ``f`` (transform_order exhibit).

    ``depth`` 0 is the argument ``f`` received; a node's children (``depth + 1``) are the values
    its tracer wraps: ``primal``/``tangent`` of a ``JVPTracer``/``LinearizeTracer``, ``val`` of a
    ``BatchTracer``. ``tracer`` is ``type(value).__name__``; ``trace`` the tracer's trace class
    (``BatchTrace``, ``JVPTrace``, ``LinearizeTrace``, ``DynamicJaxprTrace``; ``None`` for a
    concrete array); ``aval`` the short aval (``f32[3]``) the value has at this level;
    ``batch_dim`` a ``BatchTracer``'s batch dim of its ``val``; ``transform`` the chip that
    creates this kind of trace, in words."""

    depth: int
    role: Literal["argument", "primal", "tangent", "val"]
    tracer: str
    trace: str | None = None
    aval: str
    batch_dim: int | None = None
    transform: str | None = None


class ArgTraceView(_Model):
    """The nest of tracers one argument leaf of ``f`` carried on ``f``'s first call (``path``:
    ``jax.tree_util.keystr`` of the leaf in the positional arguments, its leading ``[i]``
    replaced by the parameter's name where ``f`` has one, e.g. ``params['w']``), nodes in
    depth-first order (parents before children)."""

    path: str
    nodes: list[TraceNodeView]


class TransformStackEvaluated(_Event):
    """One stack of transforms (outermost first) applied to a function: whether JAX accepted it,
    its jaxpr (``jax.make_jaxpr`` of the composed function), the value on the example input, or
    JAX's error (class, text, user line) and a plain explanation.

    ``group``: ``user`` for the user's stack (emitted first), else the built-in comparison it
    belongs to (``per_example``, ``jacobian``, ``model``). ``code`` is the Python expression
    evaluated. ``traces``: the tracers that reached the function, per argument leaf.
    ``eqn_count`` counts the jaxpr's eqns, inner jaxprs included; ``flops`` is
    ``jax.jit(g).lower(...).compile().cost_analysis()["flops"]``; ``time_ms`` the median wall
    time of a warm call of the jitted function (``block_until_ready``). ``check``: what the
    result was compared with (built-in comparisons), ``check_ok`` whether it matched."""

    type: Literal["transform_stack_evaluated"] = "transform_stack_evaluated"
    stack: list[str]
    label: str
    group: str = "user"
    code: str = ""
    in_axes: str | None = None
    ok: bool
    jaxpr: JaxprView | None = None
    result: list[ArrayPreview] = []
    error_class: str | None = None
    message: str | None = None
    source: SourceLoc | None = None
    explanation: str | None = None
    fix: str | None = None
    traces: list[ArgTraceView] = []
    eqn_count: int | None = None
    flops: float | None = None
    time_ms: float | None = None
    check: str | None = None
    check_ok: bool | None = None


# --------------------------------------------------------------------------------------------
# Pytree and control-flow exhibits (pytree, control_flow). Each exhibit owns its classes below.
# --------------------------------------------------------------------------------------------


class PytreeNodeVisited(_Event):
    """One node visited while ``tree_flatten`` walks a container, in JAX's visit order (read off
    an ``is_leaf`` spy passed to ``tree_flatten_with_path``): ``tree`` (``args`` or ``other``),
    its key path (``keystr``), type (qualname), how it is registered (``leaf``, ``None``,
    ``builtin``, ``namedtuple``, ``is_leaf``, ``register_pytree_node``, ``register_dataclass``,
    ...), what ``is_leaf`` returned (``None``: no ``is_leaf`` given), the children's keys in the
    order JAX visits them (dict keys sorted), and for a leaf its index among the leaves and aval
    (``f32[2]``, ``~`` marks a weak type); ``aux`` is a registered node's aux data (``repr``)."""

    type: Literal["pytree_node_visited"] = "pytree_node_visited"
    tree: str = "args"
    index: int
    keypath: str
    node_type: str
    registration: str
    is_leaf_result: bool | None = None
    children: list[str] = []
    leaf_index: int | None = None
    parent: int | None = None
    depth: int = 0
    aux: str | None = None
    aval: str | None = None


class PytreeFlattened(_Event):
    """The result of ``jax.tree_util.tree_flatten_with_path``: leaves with their key paths,
    JAX's treedef string, leaf and node counts (``treedef.num_leaves``/``num_nodes``), each
    leaf's type (``module.qualname``) and aval, and whether ``tree_unflatten(treedef, leaves)``
    gave back a container with the same treedef and the very same leaf objects.
    ``keypaths``/``leaf_types``/``avals`` (and ``leaves``, the previews) are the first leaves
    only on a large container: ``leaves_omitted`` says how many leaves they leave out;
    ``treedef`` is cut at a few thousand characters (``treedef_chars``: its full length)."""

    type: Literal["pytree_flattened"] = "pytree_flattened"
    name: str
    keypaths: list[str]
    leaves: list[ArrayPreview]
    leaf_types: list[str] = []
    avals: list[str] = []
    treedef: str
    num_leaves: int
    num_nodes: int
    roundtrip_ok: bool
    unflattened: str = ""
    leaves_omitted: int = 0
    treedef_chars: int = 0


class TreedefsCompared(_Event):
    """Two containers' treedefs (``args`` and ``other``): equal or not (``treedef ==``), and the
    first node in visit order where they differ: its key path and ``kind`` (``leaf/node``,
    ``type``, ``keys``, ``arity``, ``aux data``) with a sentence; ``jax_error`` is what
    ``jax.tree.map`` over the two raises (JAX's own "pytree structure error" text), if any."""

    type: Literal["treedefs_compared"] = "treedefs_compared"
    left: str
    right: str
    equal: bool
    keypath: str | None = None
    kind: str | None = None
    difference: str | None = None
    jax_error: str | None = None


class PytreeCalled(_Event):
    """``f`` called on the snippet's ``args``: ``jax.jit(f)(*args)`` (the arguments flattened to
    leaves and rebuilt from the treedef inside) and eager ``f(*args)`` (the user's containers
    as they are); outputs as leaf previews with key paths, and whether the two agree
    (``numpy.allclose`` per leaf, same output treedef)."""

    type: Literal["pytree_called"] = "pytree_called"
    fun_name: str
    jit_outputs: list[ArrayPreview]
    eager_outputs: list[ArrayPreview]
    out_treedef: str
    agree: bool


class CarryLeafView(_Model):
    """One leaf of a control-flow carry (or of a branch's output) as JAX's check saw it.

    ``path`` is ``jax.tree_util.keystr`` of the leaf's key path in the carry (``.n_pos``,
    ``['w']``, ``[1]``; ``""`` for a carry that is a single array); ``types`` one aval per
    column of :class:`CarryChecked` (``None`` where that side has no such leaf); ``matches``
    ``core.typematch`` of the two compared sides (the predicate JAX's check uses); ``promoted``:
    JAX converted this weak-typed init leaf to the body's output type
    (``loops._promote_weak_typed_input``) and traced the body again."""

    path: str
    types: list[AvalView | None]
    matches: bool
    promoted: bool = False


class CarryChecked(_Event):
    """JAX's type check of one ``lax.scan`` / ``while_loop`` / ``fori_loop`` carry or of one
    ``cond`` / ``switch``'s branch outputs, observed while ``jax.make_jaxpr(f)`` traced
    (``jaxscope.internals.control_flow``).

    ``api`` is JAX's own label (``scan body``, ``while_loop body``, ``cond``, ``switch``);
    ``primitive`` the jaxpr primitive (``scan``, ``while``, ``cond``); ``fori``: the body is
    ``fori_loop``'s wrapper (its carry is ``(i, your carry)`` for scan, ``(i, upper, your
    carry)`` for while). ``columns`` names the compared sides: ``carry in``/``carry out`` for a
    loop (preceded by ``init`` when JAX promoted a weak-typed init leaf), ``true_fun``/
    ``false_fun`` for cond, ``branch 0``, ``branch1``... for switch. ``leaves`` row by row,
    ``entry``/``exit`` the short types (``f32[]``) of the first/last column. ``ok``/
    ``error_class``/``message``: JAX's verdict (its exception text verbatim); ``leaf_path``
    the first leaf that differs (``None`` when JAX accepted). ``source`` the snippet line of
    the call, ``bodies`` the user's functions (name and definition line). ``eqn_index``: the
    top-level eqn of ``f``'s jaxpr holding the staged primitive; ``eqn_carry_in``/
    ``eqn_carry_out`` the carry types in that eqn's params (after JAX moved loop-invariant
    carries to consts); ``branch_out`` each branch's output types in ``branches`` order."""

    type: Literal["carry_checked"] = "carry_checked"
    index: int
    primitive: str
    api: str
    fori: bool = False
    source: SourceLoc | None = None
    bodies: list[SourceLoc] = []
    columns: list[str]
    leaves: list[CarryLeafView]
    trees: list[str]
    entry: list[str]
    exit: list[str]
    leaf_paths: list[str]
    ok: bool
    error_class: str | None = None
    message: str | None = None
    leaf_path: str | None = None
    eqn_index: int | None = None
    eqn_carry_in: list[str] = []
    eqn_carry_out: list[str] = []
    branch_out: list[list[str]] = []
    length: int | None = None


class ControlFlowShown(_Event):
    """One semantics fact shown with the jaxpr that proves it (``cond`` traces both branches,
    ``cond`` under ``vmap`` becomes ``select_n``, static ``fori_loop`` becomes ``scan``, ...).

    ``topic`` a stable id; ``claim`` the sentence; ``holds`` whether the jaxpr shows it (read
    off the jaxpr's primitives, ``primitives``); ``code`` the small function it was computed on
    (``on_user_code``: the user's own ``f``); ``jaxpr`` ``make_jaxpr`` of it; ``error_class``/
    ``message`` JAX's error where the claim is a refusal (``grad`` through ``while``);
    ``figures`` numbers the claim rests on (HLO op counts of ``jit(...).lower(...).compile()
    .as_text()``, a gradient value)."""

    type: Literal["control_flow_shown"] = "control_flow_shown"
    topic: str
    claim: str
    holds: bool
    code: str = ""
    on_user_code: bool = False
    jaxpr: JaxprView | None = None
    primitives: list[str] = []
    error_class: str | None = None
    message: str | None = None
    figures: dict[str, float] = {}


# --------------------------------------------------------------------------------------------
# Cache and configuration exhibits (caches, cache_key, recompile_hunt, config). Each exhibit
# owns its classes below.
# --------------------------------------------------------------------------------------------


class KeyEntryDiff(_Model):
    """One entry of what JAX keyed a jit call on (``args[0]`` aval, a static argument, the
    function's identity, a sharding, the tracing context), here and in the closest earlier call;
    ``differs`` marks the entries that changed."""

    name: str
    now: str
    before: str | None = None
    differs: bool = False


class CacheCounterView(_Model):
    """One of JAX's Python-level caches (a ``weakref_lru_cache``) read with ``cache_info()``
    right before and right after a call; ``source`` names where JAX defines it."""

    name: str
    source: str
    hits_before: int
    hits_after: int
    misses_before: int
    misses_after: int


CacheLayer = Literal["cpp", "jaxpr", "lowering", "executable", "persistent", "compile"]
CacheCell = Literal["hit", "miss", "skipped", "off"]


class CachesReset(_Event):
    """The caches exhibit starts from a clean cache state: what it cleared, how the snippet is
    run (``calls``: ``jit(f)`` on each tuple of ``calls``; ``driver``: ``f(*args)`` itself calls
    jitted functions, each observed), and whether the persistent cache is in use
    (``persistent_dir``: the directory, when the run itself turned it on: the ``persistent``
    preset uses a new temporary one)."""

    type: Literal["caches_reset"] = "caches_reset"
    mode: Literal["calls", "driver"]
    cleared: list[str]
    persistent_enabled: bool = False
    persistent_dir: str | None = None


class JitCallObserved(_Event):
    """One call of a jitted function, with the cache layer that answered it (``layer``; see
    ``internals/cache_layers.py``), per layer ``hit``/``miss``/``skipped``/``off`` (``cells``,
    keys ``cpp``, ``jaxpr``, ``lowering``, ``executable``, ``persistent``), JAX's own counters
    before and after, the C++ cache size before/after (``jitted._cache_size()``), the
    ``jax.monitoring`` timers (ms, keys ``trace``/``lower``/``compile``), JAX's explain-cache-miss
    text, and the structured diff against the closest earlier call (``closest``: its index).
    ``function_object``: 1 for the first function object seen in the run, 2 for the next...
    ``defined_line``: the line where the function is defined (in the snippet). ``source``: the
    snippet line that made the call (driver mode). ``cause``: why it traced or compiled again,
    from the diff (``None`` for a call with nothing earlier to compare with, or no new work).
    ``jaxpr``: for a call that traced, the jaxpr JAX traced (``jitted.trace(*args).jaxpr``,
    read after the call from the cache the call filled). ``persistent_key``: with the persistent
    cache on, the key JAX looked up on disk for this call's own program (``jit_<name>-<sha256>``,
    as ``jax._src.compiler`` logs it; the file is ``<key>-cache`` in the cache directory), and
    ``persistent_lookup`` whether that lookup hit or missed; ``None`` when not consulted."""

    type: Literal["jit_call_observed"] = "jit_call_observed"
    index: int
    function: str
    function_object: int = 1
    defined_line: int | None = None
    source: SourceLoc | None = None
    layer: CacheLayer
    cells: dict[str, CacheCell] = {}
    traced: bool = False
    compiled: bool = False
    cpp_size_before: int = 0
    cpp_size_after: int = 0
    counters: list[CacheCounterView] = []
    timers_ms: dict[str, float] = {}
    explanation: str = ""
    closest: int | None = None
    entries: list[KeyEntryDiff] = []
    cause: str | None = None
    jaxpr: JaxprView | None = None
    persistent_key: str | None = None
    persistent_lookup: Literal["hit", "miss"] | None = None
    # After a miss: why JAX did not write this program to the disk cache, as it logs it
    # (``compiler._cache_write``: host callbacks, under the size or compile-time threshold).
    persistent_not_written: str | None = None


class CacheKeyIngredientView(_Model):
    """One ingredient of the persistent cache key (``jax._src.cache_key.get``'s ``entries``):
    ``digest`` is the sha256 hex of what its helper (``helper``) feeds the hash alone, ``running``
    the hex of the running sha256 after it; ``detail`` says what was hashed."""

    name: str
    digest: str
    running: str
    helper: str = ""
    detail: str = ""


class CacheKeyComputed(_Event):
    """The persistent compilation cache key, ingredient by ingredient in JAX's order, each with
    its digest and the running digest; ``key`` as recomputed with JAX's per-ingredient helpers,
    ``jax_key`` as JAX logged it (``compiler``: ``PERSISTENT COMPILATION CACHE MISS/hit ... with
    key``), ``returned_key`` what ``cache_key.get`` returned, ``cache_file`` the file JAX wrote
    (``<key>-cache``) in ``cache_dir``; ``persistent`` is ``miss`` or ``hit``. A perturbed key
    (``perturbation``: body, shapes, donate_argnums, compiler_options, xla_flag, custom_hook,
    name, line) lists the ingredients whose digest differs from the base key in ``changed``.
    ``stripped_module`` is the module text after ``strip-debuginfo`` (what ``computation``
    hashes, as bytecode)."""

    type: Literal["cache_key_computed"] = "cache_key_computed"
    perturbation: str | None = None
    perturbation_detail: str = ""
    function: str = ""
    ingredients: list[CacheKeyIngredientView]
    changed: list[str] = []
    key: str
    jax_key: str
    returned_key: str = ""
    cache_file: str | None = None
    cache_dir: str = ""
    persistent: str = ""
    equal: bool
    stripped_module: str = ""


class XlaFlagVerdictView(_Model):
    """One XLA flag through ``cache_key._hash_xla_flags``: ``kept`` in the key or dropped (it is
    in ``xla_flags_to_exclude_from_cache_key``), and why."""

    flag: str
    kept: bool
    reason: str = ""


class XlaFlagsFiltered(_Event):
    """The cache_key exhibit's XLA flag filter: each flag as JAX's ``_hash_xla_flags`` judged it
    (sorted, as JAX hashes them), the resulting "XLA flags" digest, JAX's exclusion list."""

    type: Literal["xla_flags_filtered"] = "xla_flags_filtered"
    flags: list[XlaFlagVerdictView]
    digest: str
    excluded: list[str] = []


class StepCompileView(_Model):
    """One XLA compilation inside a recompile-hunt step (a ``backend_compile_duration`` event of
    ``jax.monitoring``), with the key record it belongs to: ``function`` (the Python function's
    name), ``fun_name`` (JAX's, e.g. ``jit(update)``), ``user`` (defined in the snippet; else a
    JAX-internal program such as an eager op), ``kind``/``cause``/``fix`` from our structured
    diff, the call site, and the trace/lower/compile timers (ms)."""

    function: str
    fun_name: str
    user: bool
    kind: str | None = None
    cause: str | None = None
    fix: str | None = None
    source: SourceLoc | None = None
    defined_line: int | None = None
    timers_ms: dict[str, float] = {}


class TrainingStepObserved(_Event):
    """One step of the recompile hunt (0-based ``step``): compiled or not (any XLA compilation
    while it ran), its wall time (ms, outputs waited for), the compilations, and for the first
    compilation of a user function: ``kind`` (first, new_function, weak_type, dtype, shape,
    static, pytree, context, placement, unknown), the cause, the user's line (``source``, the
    call site), the fix, the structured diff ``entries`` against the closest earlier key
    (``compared_step``: the step that key came from), JAX's explain-cache-miss text, the
    ``jax_log_compiles`` lines, and the jaxpr JAX traced. ``watched`` says what a step is."""

    type: Literal["training_step_observed"] = "training_step_observed"
    step: int
    compiled: bool
    duration_ms: float
    cause: str | None = None
    source: SourceLoc | None = None
    fix: str | None = None
    kind: str | None = None
    function: str | None = None
    defined_line: int | None = None
    compared_step: int | None = None
    entries: list[KeyEntryDiff] = []
    compiles: list[StepCompileView] = []
    explanation: str = ""
    log: list[str] = []
    jaxpr: JaxprView | None = None
    watched: str = ""


class TrainingStopped(_Event):
    """The recompile hunt stopped the loop early: the watched loop ran for ``budget_s`` seconds
    (wall clock, ``elapsed_s`` measured), or, when ``max_steps`` is set, it had run that many
    steps (the most the hunt watches) and called ``step`` again; so the step after ``steps_run``
    steps was not run (the driver was interrupted there and the run finishes with the steps it
    has). ``requested_n``: the ``n`` the driver was called with (``f(n)``, a single int
    argument), ``None`` when ``f`` takes something else."""

    type: Literal["training_stopped"] = "training_stopped"
    steps_run: int
    budget_s: float
    elapsed_s: float
    max_steps: int | None = None
    requested_n: int | None = None


class ConfigOptionView(_Model):
    """One ``jax.config`` option: current value (printed), whether a context manager can scope
    it, whether it is part of the tracing context (changing it forces a retrace), its help.
    ``value_json``: the value as JSON text when it is a bool, int, finite float, str or None
    (``null`` for None), else ``None`` (then only the ``repr`` in ``value`` stands for it)."""

    name: str
    value: str
    value_json: str | None = None
    scoped: bool
    trace_context: bool
    help: str = ""
    kind: str = ""
    option_type: str = ""


class ConfigOptionsListed(_Event):
    """Every ``jax.config`` option (the config exhibit), sorted by name; ``trace_context_names``
    is ``jax._src.config.trace_context_names()`` (config options and context managers)."""

    type: Literal["config_options_listed"] = "config_options_listed"
    options: list[ConfigOptionView]
    trace_context_names: list[str] = []


class ConfigRetraceChecked(_Event):
    """The config exhibit's experiment: one option flipped (``with option(value):``) around a
    call of an already-traced ``jax.jit(fun)``; ``traces`` counts how often ``fun``'s Python body
    ran (1 before the flip), ``retraced`` whether the flipped call traced it again; ``jaxpr`` the
    jaxpr traced under the flipped option."""

    type: Literal["config_retrace_checked"] = "config_retrace_checked"
    option: str
    value: str
    trace_context: bool
    retraced: bool
    traces: int
    fun_name: str
    jaxpr: JaxprView | None = None


# --------------------------------------------------------------------------------------------
# Device exhibits (sharding, shard_map, rules). Each exhibit owns its classes below.
# --------------------------------------------------------------------------------------------


class ShardView(_Model):
    """One device's block of a sharded array, read from ``jax.Array.addressable_shards``: the
    device (``str(shard.device)``) and its id, the block's index ranges per array dimension
    (``[start, stop)``, from ``shard.index``), the block's shape (``shard.data.shape``),
    ``shard.replica_id`` (0 = the first copy) and the other devices holding the same block."""

    device: str
    device_id: int = 0
    index: list[list[int]]
    shape: list[int]
    replica_id: int = 0
    replica_of: list[str] = []


class ShardingPlaced(_Event):
    """An array of ``shape``/``dtype`` placed with a sharding (``NamedSharding(mesh, spec)``
    for ``args[0]``; the sharding ``jax.jit(f)`` gave an output): the mesh (axis names, sizes,
    types ``"Auto"``/``"Explicit"``/``"Manual"``, device ids in mesh order, row-major), the
    spec (``str(PartitionSpec)``; ``None`` for a sharding that is not a ``NamedSharding``),
    ``str(sharding)``, ``sharding.shard_shape(shape)`` and every device's block
    (``addressable_shards``, in device order). ``name``: ``"args[0]"``, ``"output"`` (a single
    output) or ``"output[i]"`` (leaf ``i`` of several). ``spec_origin`` (``args[0]`` only): where
    its spec came from, the snippet's ``spec``, ``options.spec`` (the view's form) or
    ``default`` (the snippet defines no ``spec``: ``P()``)."""

    type: Literal["sharding_placed"] = "sharding_placed"
    name: str
    mesh_axes: list[str]
    mesh_shape: list[int]
    axis_types: list[str]
    mesh_device_ids: list[int] = []
    spec: str | None
    sharding: str = ""
    shape: list[int]
    dtype: str = ""
    shard_shape: list[int] = []
    shards: list[ShardView]
    spec_origin: Literal["spec", "options.spec", "default"] | None = None


class CollectiveView(_Model):
    """One collective instruction of the compiled per-device HLO: ``op`` (``all-reduce``,
    ``all-gather``, ``reduce-scatter``, ``collective-permute``, ``all-to-all``; an async
    ``-start`` counts as its op), the instruction name, its 0-based ``line`` in the HLO text,
    the result type, the ``replica_groups`` (or ``source_target_pairs``) text as XLA prints it,
    ``groups``: those groups expanded to device ids (``None`` when the format is not one we
    expand), and the instruction's text."""

    op: str
    name: str
    line: int
    result: str
    replica_groups: str
    groups: list[list[int]] | None = None
    text: str


class CollectivesFound(_Event):
    """The collectives the SPMD partitioner inserted in the compiled per-device HLO
    (``jax.jit(f).lower(*args).compile().as_text()``), ``counts`` op -> number of instructions,
    and ``Compiled.input_shardings`` / ``output_shardings`` (``str`` of each leaf's sharding)."""

    type: Literal["collectives_found"] = "collectives_found"
    hlo: str
    collectives: list[CollectiveView]
    counts: dict[str, int]
    input_shardings: list[str]
    output_shardings: list[str]


class ShardingErrorExplained(_Event):
    """A sharding error JAX raised (its class and message, unchanged) read back into what went
    wrong: ``kind`` ``indivisible`` (array ``axis`` of ``dim_size`` split ``partitions`` ways by
    the mesh axes ``mesh_axes`` of sizes ``mesh_axis_sizes``), ``duplicate_axis`` (mesh axis
    ``mesh_axes[0]`` named twice in ``spec``), ``sharding_type`` (an Explicit-mode ambiguity:
    the ``out_sharding`` fix) or ``other``. ``where``: ``"args[0]"`` (placing the input) or
    ``"f"`` (inside ``jax.jit(f)``); ``explanation``/``fix`` in plain words."""

    type: Literal["sharding_error_explained"] = "sharding_error_explained"
    error_class: str
    message: str
    kind: Literal["indivisible", "duplicate_axis", "sharding_type", "other"]
    where: str
    spec: str | None = None
    shape: list[int] = []
    axis: int | None = None
    dim_size: int | None = None
    partitions: int | None = None
    mesh_axes: list[str] = []
    mesh_axis_sizes: list[int] = []
    explanation: str
    fix: str


class ShardMapSpecView(_Model):
    """One ``PartitionSpec`` of ``in_specs``/``out_specs``: its key path in that tree
    (``keystr``, ``""`` for a bare ``P``), ``str(P)`` and one text per entry (``None``, ``'x'``,
    ``('x', 'y')``). A non-``P`` leaf has ``entries == []`` and ``is_spec`` false."""

    specs: Literal["in_specs", "out_specs"]
    path: str
    spec: str
    entries: list[str]
    is_spec: bool = True


class ShardMapFault(_Model):
    """A spec at fault in a failed check: ``entries`` are positions inside the ``P`` (empty: the
    whole spec or tree), ``axes`` the mesh axes involved (the unknown name, the mesh axes that do
    not divide, the unmentioned axes the output varies over)."""

    specs: Literal["in_specs", "out_specs"]
    path: str
    spec: str
    entries: list[int] = []
    axes: list[str] = []


class ShardMapCheck(_Model):
    """One of shard_map's checks (``jax/_src/shard_map.py``, JAX's order): ``name`` (unknown_axis,
    in_arity, spec_rank, divisibility, out_arity, out_rank, replication, duplicate_axis), what it
    requires, the
    JAX helper that runs it, its status (``passed``/``failed``/``not_reached`` after an earlier
    failure/``off`` with ``check_vma=False``) and, when failed, JAX's error class and message."""

    name: str
    title: str
    source: str
    status: Literal["passed", "failed", "not_reached", "off"]
    error_class: str | None = None
    message: str | None = None
    faults: list[ShardMapFault] = []


class ShardMapValueView(_Model):
    """A value of the body: ``name`` (the argument's key path, ``out`` path, or jaxpr variable),
    the global shape outside shard_map and its spec (``None`` for body-internal values), the
    per-device ``aval`` inside the body and its varying manual axes (``aval.mat.varying``, mesh
    order; printed ``{V:(x,y)}``)."""

    name: str
    spec: str | None = None
    global_shape: list[int] | None = None
    aval: AvalView
    vma: list[str]


class ShardMapCollective(_Model):
    """A body eqn that names mesh axes (psum, psum_invariant, all_gather, ppermute, ...);
    ``source_text``: the snippet's line at ``source.line``, stripped (the call the user wrote)."""

    eqn_index: int
    primitive: str
    axes: list[str]
    text: str
    source: SourceLoc | None = None
    source_text: str | None = None


class ShardMapBodyTraced(_Event):
    """The per-device body as ``jax.shard_map`` traced it: each input's per-device aval and
    varying axes (observed with ``jax.typeof`` inside the body), each output's, every body value's
    varying axes, the collectives, and the body jaxpr (the ``jaxpr`` param of the ``shard_map``
    eqn; ``jaxpr_note`` says when it had to be traced with ``check_vma=False``)."""

    type: Literal["shard_map_body_traced"] = "shard_map_body_traced"
    inputs: list[ShardMapValueView]
    outputs: list[ShardMapValueView]
    values: list[ShardMapValueView]
    collectives: list[ShardMapCollective]
    jaxpr: JaxprView | None = None
    jaxpr_note: str | None = None


class ShardMapChecked(_Event):
    """shard_map's checks around the per-device body, each passed or failed with JAX's message,
    the specs (each entry, for highlighting the one at fault), the mesh, and the verdict: what
    ``jax.jit(jax.shard_map(f, ...))(*args)`` itself did (``ok``, or its error class and message;
    ``check``: the failed check, ``body`` for an error raised by the body itself;
    ``explanation``: plain words beside JAX's error where its message says little, e.g. a
    collective naming an axis the mesh lacks, which JAX fails as a bare AssertionError;
    ``line``: the snippet line of the specs at fault when one of shard_map's spec checks failed,
    e.g. the ``out_specs`` line for an axis the mesh lacks)."""

    type: Literal["shard_map_checked"] = "shard_map_checked"
    mesh_axes: list[str]
    mesh_shape: list[int]
    axis_types: list[str]
    check_vma: bool
    in_specs: str
    out_specs: str
    specs: list[ShardMapSpecView]
    arg_shapes: list[list[int]]
    checks: list[ShardMapCheck]
    ok: bool
    error_class: str | None = None
    message: str | None = None
    check: str | None = None
    explanation: str | None = None
    line: int | None = None


class ShardMapShard(_Model):
    """One device's block of an output: device, index ranges ``[start, stop)`` per dimension."""

    device: str
    index: list[list[int]]
    shape: list[int]


class ShardMapOutput(_Model):
    """An output of ``jax.shard_map``: global shape/dtype, its out_specs entry, every device's
    block (``addressable_shards``), a preview, and the comparison with the reference."""

    path: str
    spec: str
    shape: list[int]
    dtype: str
    shards: list[ShardMapShard]
    preview: str
    reference_preview: str | None = None
    matches_reference: bool | None = None
    max_abs_diff: float | None = None


class ShardMapOutputsAssembled(_Event):
    """The per-device outputs assembled into global arrays by ``jax.shard_map`` (under
    ``jax.jit``), compared with ``reference`` (the snippet's ``reference(*args)``, else ``f(*args)``
    on the global arrays when the body uses no collectives, else ``none``)."""

    type: Literal["shard_map_outputs_assembled"] = "shard_map_outputs_assembled"
    outputs: list[ShardMapOutput]
    reference: Literal["reference", "f", "none"]
    reference_note: str


class RuleCell(_Model):
    """One cell of the coverage matrix: the table that holds the rule (``ad.primitive_jvps``,
    ``ad.fancy_transposes``, ``mlir._lowerings``, ``mlir._platform_specific_lowerings['cpu']``
    ...), the rule function's name (``partial``/``lower_fun`` unwrapped), where it was
    registered (``file`` below site-packages, 1-based ``line``) and ``text``, the statement
    of the installed JAX source starting on that line (with its continuation lines while its
    parentheses are open, at most 6; dedented)."""

    table: str
    name: str
    file: str | None = None
    line: int | None = None
    text: str | None = None


class RuleRow(_Model):
    """One primitive: its name, the global that creates it (``var`` in ``file`` at ``line``),
    and its cells by column id (a column absent from ``cells`` has no rule); ``used`` when the
    primitive appears in the snippet's jaxpr (matched by object, not by name). ``own``: the
    snippet's own ``Primitive`` object (a row of its own even when a JAX primitive has the same
    name: ``Primitive("add")`` beside ``lax.add_p``)."""

    primitive: str
    var: str | None = None
    file: str | None = None
    line: int | None = None
    cells: dict[str, RuleCell]
    used: bool = False
    own: bool = False


class RulesTabulated(_Event):
    """The coverage matrix: one row per primitive JAX knows, one column per rule table (jvp,
    transpose, batching, lowering, then one per platform), each cell the registration file:line.
    ``counts``: column -> filled cells, equal to ``len()`` of the column's JAX table (the union
    of keys for transpose); ``table_sizes``: JAX table expression -> ``len()``;
    ``column_tables``: column -> the tables it reads in lookup order. ``imported`` are the
    modules imported before tabulating, ``not_imported`` those named but not installed (flax).
    ``jaxpr`` is the snippet's function (or the default one), whose primitives are ``used``."""

    type: Literal["rules_tabulated"] = "rules_tabulated"
    columns: list[str]
    column_tables: dict[str, list[str]]
    rows: list[RuleRow]
    counts: dict[str, int]
    table_sizes: dict[str, int]
    imported: list[str]
    not_imported: list[str]
    jax_version: str
    fun_name: str
    jaxpr: JaxprView | None = None
    jaxpr_primitives: list[str] = []


class RunQueued(_Event):
    """Not a step of the run: the run waits for a sandbox worker (every worker is busy, or the
    client holds its share of them). Sent by the server when the run starts waiting and whenever
    its place changes; the page shows it until the run's first event, and Cancel leaves the
    queue. ``position``: 1 = next to get a worker; ``waiting``: runs waiting in all;
    ``estimate_s``: about how long until a worker is free (seconds, from the recent hold times
    of workers; None while unknown); ``reason``: ``pool_full`` or ``client_share`` (this client's
    other sessions hold its share: ``JAXSCOPE_MAX_WORKERS_PER_CLIENT``). Its ``seq`` is always 0
    and it is never part of the stepper's event list."""

    type: Literal["run_queued"] = "run_queued"
    position: int
    waiting: int
    estimate_s: float | None = None
    reason: Literal["pool_full", "client_share"] = "pool_full"


class RunFinished(_Event):
    """Terminal: the run completed. ``duration_ms`` is the worker-side wall time."""

    type: Literal["run_finished"] = "run_finished"
    duration_ms: float


ErrorKind = Literal[
    "syntax",
    "user_exception",
    "tracer_error",
    "invalid_snippet",
    "invalid_request",
    "timeout",
    "memory",
    "worker_crashed",
    "cancelled",
    "invalid_event",
]


class RunFailed(_Event):
    """Terminal: the run failed.

    ``kind`` classifies the failure; ``error_class`` is the Python exception class name (JAX's
    own, e.g. ``TracerBoolConversionError``) when there is one; ``message`` the exception text;
    ``source`` the deepest user-snippet frame (or the syntax error position); ``traceback`` the
    user frames only; ``explanation``/``fix`` a plain-language account and the fix that applies.
    ``stage`` is the stage the exception escaped from; ``during``, when the probe knows it, says
    more precisely what JAX was doing (``while transposing double (the backward pass of
    jax.grad)``, ``while jax.vmap mapped the arguments``: ``probe_api.mark_during``), since the
    stages name only load/trace/lower/compile/run/call.
    """

    type: Literal["run_failed"] = "run_failed"
    kind: ErrorKind
    error_class: str | None = None
    message: str
    source: SourceLoc | None = None
    traceback: list[TracebackFrame] = []
    explanation: str | None = None
    fix: str | None = None
    stage: Stage | None = None
    during: str | None = None


EventModel = (
    RunStarted
    | StageStarted
    | StageTimed
    | EqnRecorded
    | StdoutPrinted
    | JaxprStaged
    | JitCalled
    | ModuleLowered
    | ExecutableCompiled
    | ProgramExecuted
    | JvpRuleApplied
    | JvpJaxprStaged
    | JaxprSplit
    | RematPolicyMeasured
    | RematUnavailable
    | TransposeStepped
    | TransposeCallOpened
    | LinearJaxprStaged
    | GradientChecked
    | GradAttempted
    | NonfiniteFound
    | CustomCallRecorded
    | CustomRuleChecked
    | VmapInputsMapped
    | BatchRuleApplied
    | BatchedJaxprStaged
    | TransformStackEvaluated
    | PytreeNodeVisited
    | PytreeFlattened
    | TreedefsCompared
    | PytreeCalled
    | CarryChecked
    | ControlFlowShown
    | CachesReset
    | JitCallObserved
    | CacheKeyComputed
    | XlaFlagsFiltered
    | TrainingStepObserved
    | TrainingStopped
    | ConfigOptionsListed
    | ConfigRetraceChecked
    | ShardingPlaced
    | CollectivesFound
    | ShardingErrorExplained
    | ShardMapBodyTraced
    | ShardMapChecked
    | ShardMapOutputsAssembled
    | RulesTabulated
    | RunQueued
    | RunFinished
    | RunFailed
)
# The discriminated union the wire is validated with (the same classes, keyed by ``type``).
Event = Annotated[EventModel, Field(discriminator="type")]
EVENT_ADAPTER: TypeAdapter[EventModel] = TypeAdapter(Event)

TERMINAL_TYPES = frozenset({"run_finished", "run_failed"})


def is_terminal(event: EventModel) -> bool:
    """True for the events that end a run (``run_finished``, ``run_failed``)."""
    return event.type in TERMINAL_TYPES


class ExhibitInfo(_Model):
    """One catalogue entry of ``GET /api/exhibits`` (static metadata; no JAX import).

    ``artefacts`` are the names ``jaxscope run --print`` accepts for this exhibit.
    """

    id: str
    title: str
    summary: str
    artefacts: list[str]
    default_example: str
    examples: list[str]


class Catalogue(_Model):
    """The response of ``GET /api/exhibits``: exhibits plus the example sources by name."""

    exhibits: list[ExhibitInfo]
    examples: dict[str, str]


class WireSchema(_Model):
    """Root of the generated JSON Schema: one field per top-level type the frontend uses."""

    request: Request
    event: Event
    catalogue: Catalogue


def json_schema() -> dict[str, object]:
    """The JSON Schema that ``frontend/src/gen/protocol.ts`` is generated from."""
    return WireSchema.model_json_schema()


if __name__ == "__main__":
    print(json.dumps(json_schema(), indent=2, sort_keys=True))
