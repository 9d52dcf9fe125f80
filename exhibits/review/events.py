"""The review exhibit's events: the code review questions about a training step, answered from
what the step did while it ran (``docs/design/0033-review.md``).

* ``review_step_ran``: one per step (a call of ``f``): the XLA executables it launched, what JAX
  traced and compiled during it, its device-to-host reads.
* ``review_args_read``: for each jitted function the steps called, each argument static or
  dynamic, as ``jax.jit(...).trace(...).args_info`` says.
* ``review_findings_found``: the findings, each at the snippet line where it happens, with the
  fix.

Imports only pydantic and ``jaxscope.protocol``.
"""

from __future__ import annotations

from typing import Literal

from jaxscope.exhibit_api import EventBase, WireModel

FindingKind = Literal[
    "BakedConstant",
    "ImplicitRandomness",
    "TracerBoolConversion",
    "ConcretizationTypeError",
    "TracerIntegerConversion",
    "TracerArrayConversion",
    "NonConcreteBooleanIndex",
    "UnexpectedTracer",
    "HostToDevice",
    "DeviceToHost",
    "JitInLoop",
    "StaticChanged",
]


class NameCount(WireModel):
    """A function name (``jit(loss_fn)``, ``loss_fn``) and how many times it happened."""

    name: str
    count: int


class ReviewStepRan(EventBase):
    """Step ``index`` (the ``index``-th call of ``f``): ``executables``, the XLA executables it
    launched (a ``jax.profiler`` trace's executions: a jitted call is one, each eager op
    between jits another); ``compiles``/``traces``: JAX's ``backend_compile_duration`` and
    ``jaxpr_trace_duration`` events during the step, per ``fun_name`` (each is one
    ``jax_log_compiles`` line); ``host_reads``: device-to-host reads from the snippet;
    ``wall_ms``: the step's wall time, outputs waited for."""

    type: Literal["review_step_ran"] = "review_step_ran"
    index: int
    executables: int
    compiles: list[NameCount]
    traces: list[NameCount]
    host_reads: int
    wall_ms: float


class ReviewArg(WireModel):
    """One argument of a jitted function: position ``index``, its parameter ``name`` (``None``:
    no signature), ``static`` (absent from ``args_info``) and ``detail``: the static value's
    ``repr``, or the dynamic leaves' avals (``f32[8,16]``, ``~`` for a weak type)."""

    index: int
    name: str | None
    static: bool
    detail: str


class ReviewJitArgs(WireModel):
    """A jitted function the steps called: its ``function`` name, the snippet ``line`` of the
    first call (``None``: the probe called ``f`` itself), and its ``args``."""

    function: str
    line: int | None
    args: list[ReviewArg]


class ReviewArgsRead(EventBase):
    """The static/dynamic table of every jitted function the steps called, in first-call
    order."""

    type: Literal["review_args_read"] = "review_args_read"
    functions: list[ReviewJitArgs]


class ReviewFinding(WireModel):
    """One finding: its ``kind``, the snippet ``line`` where it happens (``None``: no snippet
    line, said in the message), the ``message`` (what was seen, with counts) and the ``fix``;
    ``steps``: in how many steps it was seen (``0``: found outside the counted steps)."""

    kind: FindingKind
    line: int | None
    message: str
    fix: str
    steps: int


class ReviewFindingsFound(EventBase):
    """The run's findings in line order, and ``steps``: how many steps ran (``f`` called)."""

    type: Literal["review_findings_found"] = "review_findings_found"
    steps: int
    findings: list[ReviewFinding]


# This exhibit's events (checked: every event class defined here must be listed, see
# ``jaxscope.events``).
EVENTS: tuple[type[EventBase], ...] = (ReviewStepRan, ReviewArgsRead, ReviewFindingsFound)
