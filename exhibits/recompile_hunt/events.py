"""The recompile_hunt exhibit's events: ``training_step_observed`` (one step of the watched
loop: compiled or not, and why) and ``training_stopped`` (the loop stopped early).

``KeyEntryDiff`` comes from ``exhibits/caches/events.py`` (the caches exhibit owns it).

It imports only pydantic and ``jaxscope.protocol`` (the core views) and the caches exhibit's
``events.py``; ``jaxscope.events`` puts ``EVENTS`` into the event union (see its docstring).
"""

from __future__ import annotations

from typing import Literal

from jaxscope.exhibit_api import EventBase, JaxprView, SourceLoc, WireModel

from exhibits.caches.events import KeyEntryDiff


class StepCompileView(WireModel):
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


class TrainingStepObserved(EventBase):
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


class TrainingStopped(EventBase):
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


# This exhibit's events, in the order the union lists them (checked: every event class
# defined here must be listed, see ``jaxscope.events``).
EVENTS: tuple[type[EventBase], ...] = (
    TrainingStepObserved,
    TrainingStopped,
)
