"""The sandbox worker process: ``python -m jaxscope.sandbox.runner --limits JSON``.

Spawned by :mod:`jaxscope.sandbox.worker` (never forked). Start-up: keep fd 1 as the private
*event pipe* (``dup``) and point fd 1 at stderr (``dup2(2, 1)``) so stray C-level writes cannot
corrupt the event stream; keep fd 0 as the private *job pipe* and point fd 0 at /dev/null; apply
the rlimits; import JAX, initialise the backend, jit one tiny function (no exhibit's probe: each
job imports the probe of its exhibit, :class:`Probes`); install the audit hook; write one
handshake line ``{"ready": ...}``.

Then one job per line on the job pipe (``{"request": RunRequest, "cpu_s": float}``); for each,
NDJSON events on the event pipe ending in exactly one terminal event (``run_finished`` or
``run_failed``). ``sys.stdout`` becomes a writer that turns the user's prints into
``stdout_printed`` events attributed to the current stage.
"""

from __future__ import annotations

import _thread
import argparse
import builtins
import contextlib
import faulthandler
import gc
import io
import itertools
import json
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import ModuleType
from typing import TYPE_CHECKING, Any, NoReturn, get_args

from pydantic_core import PydanticSerializationError

from jaxscope.protocol import (
    BudgetScaled,
    DetailFailed,
    EqnView,
    EventBase,
    ItemsSent,
    JaxprEqnsSent,
    JaxprView,
    RunFailed,
    RunFinished,
    RunOptions,
    RunRequest,
    RunStarted,
    Stage,
    StageStarted,
    StdoutPrinted,
    WorkerKind,
    deferred_state,
)
from jaxscope.sandbox.kinds import serves
from jaxscope.sandbox.probe_api import Snippet
from jaxscope.sandbox.snippet import SNIPPET_MODULE
from jaxscope.settings import (
    SCALE_FROM_EQNS,
    TRACE_GROWTH_EQNS,
    Limits,
    load_credit,
    load_limit,
    scaled_limit,
)
from jaxscope.summaries import (
    RANGES_FROM_BYTES,
    STREAM_LIMIT_BYTES,
    least_view_bytes,
    split_event,
    summarise_event,
)
from jaxscope.user_text import PRINT_CAP_BYTES, TRUNCATED_NOTE, utf8_prefix

# Annotations only: a worker imports the events of the exhibit it runs, not the event union
# (every exhibit's events.py; issue 36).
if TYPE_CHECKING:
    from jaxscope.protocol import EventModel

# An exception's message and class name are cut after MAX_MESSAGE_CHARS (jaxscope.user_text,
# shared with the exhibits' events: sandbox.errors.describe_failure).

# The user's printed text: one stdout_printed event carries at most this many characters, and a
# run prints at most PRINT_CAP_BYTES (UTF-8); the rest is dropped after one TRUNCATED_NOTE (the
# run goes on), so a print loop cannot flood the supervisor and the browser.
PRINT_CHUNK_CHARS = 64 * 1024
# Completed lines are sent at most this often (seconds); the rest waits in the buffer for the
# next line, a chunk's worth of text, or the next stage or event (which flush it).
PRINT_INTERVAL_S = 0.05

# Exit status of a worker that retires right after a run's terminal event (threads the user
# started are still alive, or its lifetime CPU budget is nearly spent). The supervisor sees a dead
# worker at the session's next run and leases a fresh one.
RETIRE_EXIT_CODE = 0

# The real ``os._exit``: the runner's own exits use it; user code gets :func:`_exit_naming_line`.
_os_exit = os._exit


def _exit_naming_line(status: int) -> NoReturn:
    """``os._exit`` as user code sees it: first writes the calling thread's Python stack to
    stderr (``faulthandler``, "Stack (most recent call first):"), so that the supervisor can
    name the snippet line that ended the worker (``worker.stuck_at``, as for a timeout)."""
    with contextlib.suppress(Exception):
        faulthandler.dump_traceback(file=2, all_threads=False)
    _os_exit(status)


def _make_line_writer(fd: int) -> Callable[[bytes], None]:
    """A function writing whole lines to ``fd`` (``os.write`` may write less than asked on a
    pipe); the fd lives only in this closure, not in a module global user code could import."""
    lock = threading.Lock()
    write = os.write

    def write_line(data: bytes) -> None:
        with lock:
            view = memoryview(data)
            while view:
                n = write(fd, view)
                view = view[n:]

    return write_line


def _not_started(data: bytes) -> None:
    raise RuntimeError("the event channel is not open (main() has not run)")


_write_event_line: Callable[[bytes], None] = _not_started
# Details on demand: an event is streamed as its summary only when it is at least this long
# (bytes of JSON) and its summary shorter (a step of a few scalars is cheaper whole).
SUMMARY_FROM_BYTES = 1024
# How often (in events) a run's size is re-checked against its limits (as the supervisor does).
SIZE_CHECK_EVERY = 256
# The worker's limits (set once by main); a run's limits scale with its program from these.
_LIMITS = Limits()
# The cyclic collector's thresholds in a worker (Python's default: 700, 10, 10). A capture
# allocates millions of short-lived objects (jaxpr views, eqn texts, pydantic models): with the
# default, the collector took ~20% of the autodiff exhibits' capture CPU (bench/ad_overhead.py,
# design 0013: 2.45 -> 2.0 CPU s at these, 1.9 s with no collection at all). Cycles still go,
# after 50,000 allocations instead of 700; a worker runs one job, and _settle collects all.
GC_THRESHOLDS = (50_000, 20, 20)
# A worker that retires after a run sends its capture before the terminal event (it will not stay
# to answer): at most this many bytes of it, summaries' whole events first, then ranges' answers
# (design 0045). The run's own stream stays far below the supervisor's MAX_RUN_BYTES (64 MiB).
RETIRED_DETAIL_BYTES = 16 * 2**20
# ... and a failed run's, for at most this long (an 8,000-op transpose walk failing at its end
# held 18.6 MB, ~2.8 s to send).
FAILED_DETAIL_S = 1.0
# An eager run (the CLI's) sends an event over STREAM_LIMIT_BYTES in ranges with their answers
# (design 0051) only while its whole stream stays within this: the supervisor's MAX_RUN_BYTES
# (64 MiB) less 8 MiB for what the run sends after it. Past it the event is summarised.
EAGER_STREAM_BYTES = 56 * 2**20
RANGE_ANSWERS = (JaxprEqnsSent, ItemsSent)
# A load stage (the snippet's module body) shorter than this is not credited (design 0046): a
# snippet loads in milliseconds, and its runs send no extra budget_scaled.
LOAD_CREDIT_FROM_S = 1.0
# ``jaxscope.internals.program_size.reporting_sizes`` in a JAX worker (set by ``_warm_up``):
# tells the run the size of each program JAX lowers, before XLA compiles it.
_REPORTING_SIZES: (
    Callable[[Callable[[int], None]], contextlib.AbstractContextManager[None]] | None
) = None


def _view_eqns(eqns: list[EqnView]) -> int:
    """The eqns of a jaxpr view with those of the inner jaxprs its eqns hold (a model under one
    ``jit`` call is one eqn at the top): what its limits scale with."""
    total = len(eqns)
    for eqn in eqns:
        for inner in eqn.inner_jaxprs:
            total += _view_eqns(inner.eqns)
    return total


def _surely_ranged(event: EventModel) -> bool:
    """Whether ``event`` goes in ranges (``split_event``) whatever its exact line: a top-level
    event with no summary of its own (``EventBase.summarised``) whose jaxpr views alone are over
    ``RANGES_FROM_BYTES`` by a lower bound of their JSON (``summaries.least_view_bytes``)."""
    if event.detail_of is not None or type(event).summarised is not EventBase.summarised:
        return False
    least = 0
    for value in vars(event).values():
        if isinstance(value, JaxprView):
            least += least_view_bytes(value)
            if least > RANGES_FROM_BYTES:
                return True
    return False


def event_json(event: EventModel) -> bytes:
    """One NDJSON line for ``event``, valid UTF-8 whatever its text holds: a lone surrogate
    (``"\\udcff"`` in a print or an exception message) is replaced by ``?`` instead of failing
    pydantic's serialisation."""
    try:
        return event.model_dump_json().encode() + b"\n"
    except (PydanticSerializationError, UnicodeEncodeError):
        text = json.dumps(event.model_dump(mode="json"), ensure_ascii=False)
        return text.encode("utf-8", "replace") + b"\n"


def send_event(event: EventModel) -> None:
    _write_event_line(event_json(event))


class RunContext:
    """The runner's :class:`~jaxscope.sandbox.probe_api.ProbeContext` for one job."""

    def __init__(self, request: RunRequest, budget: float = 1.0) -> None:
        self.run_id = request.run_id
        self.exhibit = request.exhibit
        # The exhibit's limit multiplier, and CPU seconds used when the job began: the CPU limit
        # is raised from there once the run shows a large program (``_scale_budget``).
        self.budget = budget
        self.cpu_at_start = 0.0
        self.emitted = 0  # events this run sent
        self.size = 0  # the size its limits were scaled for (eqns or events)
        self.reported_eqns = 0  # the largest jaxpr told to the supervisor (BudgetScaled)
        self.options: RunOptions = request.options
        self.snippet: Snippet
        self.current_stage: Stage = "load"
        self.current_call: int | None = None
        # The innermost stage an exception escaped from (reported in run_failed.stage).
        self.error_stage: Stage | None = None
        # Details on demand: the whole events behind the summaries this run streamed, by
        # detail_id (kept after the run for DetailRequests: :func:`serve_detail`).
        self.on_demand = request.details == "on_demand"
        self.capture: dict[str, EventModel] = {}
        self.range_ids = itertools.count()  # eqn ranges' detail ids: r0, r1, ...
        self.streamed_bytes = 0  # the lines emit wrote (an eager run's budget for answers)

    def emit(self, event: EventModel) -> None:
        _STDOUT.drain()
        event.run_id = self.run_id
        summarised = self._summarised_unprinted(event) if self.on_demand else None
        # Surely over RANGES_FROM_BYTES and with no summary: serialised once, after its ranges
        # are cut (a whole line only to learn its length was ~20 ms of partial_eval's split on
        # bench/ad_overhead.py, design 0082).
        ranged = summarised is None and self.on_demand and _surely_ranged(event)
        if summarised is not None:
            event, line = summarised
        else:
            line = b"" if ranged else event_json(event)
        if (
            summarised is None
            and not ranged
            and self.on_demand
            and event.detail_of is None
            and len(line) > SUMMARY_FROM_BYTES
        ):
            summary = event.summarised()
            if summary is not None:
                summary.detail_id = f"d{len(self.capture)}"
                summary_line = event_json(summary)
                if len(summary_line) < len(line):
                    # The whole event stays here; the page asks for it when it shows it.
                    self.capture[summary.detail_id] = event
                    event, line = summary, summary_line
        # The limits scale with the whole program, before a view of it is summarised; the
        # supervisor hears of it right after the event that showed it.
        self.emitted += 1
        scaled = self._scale_budget(event)
        if ranged or (self.on_demand and event.detail_of is None and len(line) > RANGES_FROM_BYTES):
            # Its large jaxpr views go in eqn ranges, each kept for the page (design 0045).
            ranges = split_event(event, lambda: f"r{next(self.range_ids)}")
            for sent in ranges:
                assert sent.detail_of is not None
                self.capture[sent.detail_of] = sent
            if ranges or ranged:
                line = event_json(event)
        if not self.on_demand and event.detail_of is None and len(line) > STREAM_LIMIT_BYTES:
            # A run for the CLI gets every part of it (design 0051): its large views and lists
            # in ranges as a page's, each range's answer sent right after it, put back together
            # by the CLI (jaxscope.whole_events) rather than summarised.
            # split_event replaces the views and lists it cuts, and extends the event's own
            # list_ranges in place: the copy gets a list of its own.
            cut = event.model_copy(update={"list_ranges": list(event.list_ranges)})
            answers = split_event(cut, lambda: f"r{next(self.range_ids)}")
            for answer in answers:
                answer.run_id = self.run_id
            answer_lines = [event_json(answer) for answer in answers]
            cut_line = event_json(cut) if answers else line
            whole = self.streamed_bytes + len(cut_line) + sum(map(len, answer_lines))
            if len(cut_line) <= STREAM_LIMIT_BYTES and whole <= EAGER_STREAM_BYTES:
                event, line = cut, cut_line
            else:
                # still too long, or the run's stream would pass the supervisor's limit:
                # summarised below, as before (lossy)
                answer_lines = []
        else:
            answer_lines = []
        if len(line) > STREAM_LIMIT_BYTES and summarise_event(event, len(line)):
            line = event_json(event)
        _write_event_line(line)
        self.streamed_bytes += len(line)
        for answer_line in answer_lines:
            _write_event_line(answer_line)
            self.streamed_bytes += len(answer_line)
        if scaled is not None:
            send_event(scaled)

    def _summarised_unprinted(self, event: EventModel) -> tuple[EventModel, bytes] | None:
        """The summary of an event whose value previews are still pending (a capture for a
        page prints them only when asked: ``jaxscope.internals.previews``) and its line, when
        the rule above (at least ``SUMMARY_FROM_BYTES``, summary shorter) holds for a lower
        bound of the whole event's length (``deferred_margin``), so the previews are not
        printed; None otherwise (then the whole event is serialised, previews printed, and the
        rule applied to its exact length). An event holding values not computed yet
        (``PendingPreview.costly``, design 0068) is always summarised: its values are computed
        when the page asks for it."""
        if event.detail_of is not None or type(event).summarised is EventBase.summarised:
            return None
        margin, costly = deferred_state(event)
        if margin <= 0 and not costly:
            return None
        summary = event.summarised()
        if summary is None:
            return None
        summary.detail_id = f"d{len(self.capture)}"
        summary_line = event_json(summary)
        # The whole line is at least this long: the summary's, less its `"detail_id":"dN",`
        # (the whole has none), plus what the pending previews add.
        least = len(summary_line) - len(f'"detail_id":"{summary.detail_id}",') + margin
        if not costly and (least <= SUMMARY_FROM_BYTES or len(summary_line) >= least):
            return None
        self.capture[summary.detail_id] = event
        return summary, summary_line

    def _scale_budget(self, event: EventModel) -> BudgetScaled | None:
        """Let the run's limits grow with its size (``settings.scaled_limit``): the eqns of the
        largest jaxpr it showed (a :class:`JaxprView` field of an event), or the events it sent
        (checked every ``SIZE_CHECK_EVERY``), whichever is more. The CPU limit is this
        process's own; a larger jaxpr is also told to the supervisor (``BudgetScaled``), which
        moves its wall clock (it counts the events itself)."""
        views = [v for v in vars(event).values() if isinstance(v, JaxprView)]
        eqns = max((_view_eqns(v.eqns) for v in views), default=0)
        return self._scale_to(eqns)

    def _scale_to(self, eqns: int) -> BudgetScaled | None:
        """:meth:`_scale_budget` for a program of ``eqns`` eqns. While the run is in its trace
        stage, the events it sent count only up to ``settings.TRACE_GROWTH_EQNS``: a trace that
        streams more is ended by the supervisor as one that keeps growing."""
        if eqns <= self.reported_eqns and self.emitted % SIZE_CHECK_EVERY:
            return None
        streamed = self.emitted
        if self.current_stage == "trace":
            streamed = min(streamed, TRACE_GROWTH_EQNS)
        size = max(self.size, eqns, streamed)
        if size <= self.size:
            return None
        self.size = size
        cpu_s = scaled_limit(_LIMITS.cpu_s, self.budget, size, _LIMITS)
        if cpu_s <= _LIMITS.cpu_s * self.budget:
            return None
        from jaxscope.sandbox import guard

        guard.set_cpu_budget(self.cpu_at_start + cpu_s - guard.cpu_seconds_used())
        if eqns > self.reported_eqns:
            self.reported_eqns = eqns
            wall_s = scaled_limit(_LIMITS.wall_s, self.budget, size, _LIMITS)
            scaled = BudgetScaled(eqns=eqns, wall_s=wall_s, cpu_s=cpu_s)
            scaled.run_id = self.run_id
            return scaled
        return None

    def note_program_size(self, eqns: int) -> None:
        """JAX is about to lower (then compile) a program of ``eqns`` top-level eqns
        (``internals.program_size``): the limits grow with it now, before its compile, as they
        would after an event showing it. Only the main thread's lowerings count (a user thread
        writing events would interleave with the main thread's)."""
        if (
            eqns <= SCALE_FROM_EQNS
            or eqns <= self.reported_eqns
            or threading.current_thread() is not threading.main_thread()
        ):
            return
        scaled = self._scale_to(eqns)
        if scaled is not None:
            send_event(scaled)

    def credit_load(self, load_s: float, load_cpu_s: float) -> None:
        """The load stage (the snippet's module body: a Flax model's build, its parameters'
        init) took ``load_s`` wall and ``load_cpu_s`` CPU seconds: up to the load stage's own
        limit, that time does not count against the run's limits (``settings.load_credit``).
        The CPU limit is set for the rest of the run; the supervisor hears of a load of a
        second or more in a ``BudgetScaled`` (a shorter one is not credited)."""
        from jaxscope.sandbox import guard

        cpu_credit = load_credit(load_cpu_s, _LIMITS.cpu_s * self.budget)
        self.cpu_at_start += cpu_credit
        cpu_s = scaled_limit(_LIMITS.cpu_s, self.budget, self.size, _LIMITS)
        guard.set_cpu_budget(self.cpu_at_start + cpu_s - guard.cpu_seconds_used())
        if load_s < LOAD_CREDIT_FROM_S:
            return
        wall_credit = load_credit(load_s, _LIMITS.wall_s * self.budget)
        wall_s = scaled_limit(_LIMITS.wall_s, self.budget, self.size, _LIMITS)
        self.emit(
            BudgetScaled(
                eqns=self.reported_eqns,
                wall_s=round(wall_s + wall_credit, 3),
                cpu_s=round(cpu_s + cpu_credit, 3),
                load_s=round(load_s, 3),
                load_cpu_s=round(load_cpu_s, 3),
            )
        )

    @contextmanager
    def stage(self, stage: Stage, call_index: int | None = None) -> Iterator[None]:
        _STDOUT.drain()
        previous = (self.current_stage, self.current_call)
        self.current_stage, self.current_call = stage, call_index
        self.emit(StageStarted(stage=stage, call_index=call_index))
        try:
            yield
        except BaseException:
            if self.error_stage is None:
                self.error_stage = stage
            raise
        finally:
            _STDOUT.drain()
            self.current_stage, self.current_call = previous


class StdoutEvents(io.TextIOBase):
    """``sys.stdout`` of the worker: each completed line the user prints during a job becomes a
    ``stdout_printed`` event (stage and call index of the current :class:`RunContext`), split
    into events of at most :data:`PRINT_CHUNK_CHARS` characters, at most one per
    :data:`PRINT_INTERVAL_S` unless a chunk is full, and capped at :data:`PRINT_CAP_BYTES` of
    UTF-8 per run (then one :data:`TRUNCATED_NOTE`, the rest dropped); outside
    a job, text goes to stderr. Thread-safe (``jax.debug.print`` prints from XLA's threads).
    It has no ``buffer`` and no file descriptor (``fileno()`` raises
    ``io.UnsupportedOperation``)."""

    def __init__(self) -> None:
        super().__init__()
        self.ctx: RunContext | None = None
        self._buf = ""
        self._printed = 0
        self._truncated = False
        self._last_send = 0.0
        self._lock = threading.RLock()

    def start(self, ctx: RunContext | None) -> None:
        """Attribute prints to ``ctx`` (a new run: the cap starts again), or to stderr (None)."""
        with self._lock:
            self.ctx = ctx
            self._buf = ""
            self._printed = 0
            self._truncated = False

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return "utf-8"

    @property
    def errors(self) -> str:  # type: ignore[override]
        return "replace"

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return False

    def write(self, s: str) -> int:
        if not isinstance(s, str):
            raise TypeError(f"write() argument must be str, not {type(s).__name__}")
        with self._lock:
            if self.ctx is None:
                sys.stderr.write(s)
                return len(s)
            if self._truncated:
                return len(s)
            self._buf += s
            if len(self._buf) >= PRINT_CHUNK_CHARS:
                text, self._buf = self._buf, ""
                self._send(text)
            elif "\n" in self._buf and time.monotonic() - self._last_send >= PRINT_INTERVAL_S:
                # Whole lines, at most one event per PRINT_INTERVAL_S: a print loop sends a few
                # large events instead of one per line (593,883 frames for a million prints).
                head, _, self._buf = self._buf.rpartition("\n")
                self._send(head + "\n")
            return len(s)

    def flush(self) -> None:
        """The user's ``flush()`` (``print(..., flush=True)``): sends what is buffered at most
        once per :data:`PRINT_INTERVAL_S`, so a flushing print loop is coalesced like any other;
        the runner itself empties the buffer with :meth:`drain`."""
        with self._lock:
            if time.monotonic() - self._last_send >= PRINT_INTERVAL_S:
                self.drain()

    def drain(self) -> None:
        """Send everything buffered now (before each event, at stage boundaries, at the end)."""
        with self._lock:
            if self._buf and self.ctx is not None:
                text, self._buf = self._buf, ""
                self._send(text)

    def _send(self, text: str) -> None:
        ctx = self.ctx
        assert ctx is not None
        self._last_send = time.monotonic()
        # The cap counts UTF-8 bytes, what goes on the wire (an emoji is 4 of them).
        data = text.encode("utf-8", "replace")
        room = PRINT_CAP_BYTES - self._printed
        if len(data) > room:
            text = utf8_prefix(text, room)
            data = text.encode("utf-8")
            self._truncated = True
        for i in range(0, len(text), PRINT_CHUNK_CHARS):
            self._emit(ctx, text[i : i + PRINT_CHUNK_CHARS])
        self._printed += len(data)
        if self._truncated:
            self._buf = ""
            # On a line of its own, not glued to the half-printed text before it.
            self._emit(ctx, TRUNCATED_NOTE if text.endswith("\n") else "\n" + TRUNCATED_NOTE)

    @staticmethod
    def _emit(ctx: RunContext, text: str) -> None:
        ev = StdoutPrinted(
            text=text, stage=ctx.current_stage, call_index=ctx.current_call, run_id=ctx.run_id
        )
        send_event(ev)


_STDOUT = StdoutEvents()


def _warm_up(kind: WorkerKind = "jax") -> dict[str, Any]:
    """Import JAX, initialise the default backend (its devices), compile and run one tiny
    function (one XLA compile: an eager ``jnp.ones`` made it two, design 0074). A torch worker
    (design 0025) imports torch and torch_xla instead and creates no PJRT client: torch_xla
    holds one per process and reads ``PJRT_DEVICE`` and its other settings when the run
    creates it."""
    if kind == "torch":
        return _warm_up_torch()
    if kind == "tf":
        # A TensorFlow worker (design 0066) is a JAX worker that has imported TensorFlow and
        # both bridges as well; TensorFlow creates its own CPU device at its first op, in the run.
        import tensorflow  # noqa: F401
        import tf2jax  # noqa: F401
        from jax.experimental import jax2tf  # noqa: F401
    import jax

    if kind == "tpu_compile":
        # Load libtpu and make the offline TPU topology now (4-5 s), not in the first run
        # (design 0067); the CPU stays the default backend (JAX_PLATFORMS=cpu).
        from jax.experimental import topologies

        from jaxscope.sandbox.kinds import TPU_TOPOLOGY

        topologies.get_topology_desc(topology_name=TPU_TOPOLOGY, platform="tpu")
    # The one import of internals the sandbox makes (test_import_rules.ALLOWED, design 0046).
    from jaxscope.internals.program_size import install, reporting_sizes

    global _REPORTING_SIZES
    install()
    _REPORTING_SIZES = reporting_sizes
    devices = jax.devices()
    # One compile and one execution before any user code: XLA starts threads of its own at the
    # first of each (the compile's SlowOperationAlarm among them), which must exist before a
    # snippet may lower RLIMIT_NPROC (hostile/test_resources: fork_bomb_to_a_lowered_nproc).
    # A numpy argument: no second compile for it (``jnp.ones`` was one, ~35 ms; design 0074).
    # The identity: XLA's compile of an empty computation starts the same threads (17 in all,
    # counted in /proc/self/task) for ~25 ms of CPU where ``x * 2 + 1`` took ~53 (its codegen).
    import numpy as np

    jax.jit(lambda x: x)(np.ones(3, np.float32)).block_until_ready()
    return {
        "jax_version": jax.__version__,
        "backend": jax.default_backend(),
        "devices": [str(d) for d in devices],
        "cpu_device_count": len(jax.devices("cpu")),
    }


def _preload_jax() -> None:
    """What a JAX template imports for its forks beyond JAX and the probes (design 0074): the
    modules every worker imported after the fork (guard, namespaces: ~7 ms CPU) and those of
    JAX's first lowering (``program_size.import_lowering``: ~16 ms)."""
    from jaxscope.internals.program_size import import_lowering
    from jaxscope.sandbox import guard, namespaces  # noqa: F401

    import_lowering()


def _warm_up_torch() -> dict[str, Any]:
    import torch
    import torch_xla
    import torch_xla.debug.metrics  # the probes read its counters

    return {
        "jax_version": "",
        "torch_xla_version": torch_xla.__version__,
        "torch_version": torch.__version__,
        "backend": os.environ.get("PJRT_DEVICE", ""),
        "devices": [],
        "cpu_device_count": 0,
    }


def _import_probes(kind: WorkerKind = "jax") -> tuple[dict[str, ModuleType], dict[str, str]]:
    """Import ``exhibits.<id>.probe`` for every registry id whose exhibit runs in a worker of
    ``kind`` (the warm template's preload, ``zygote._preload``: its forks share them); import
    errors are kept, not fatal (a run of such an exhibit fails with the import error,
    :class:`Probes`)."""
    import importlib

    from exhibits.registry import EXHIBITS

    probes: dict[str, ModuleType] = {}
    errors: dict[str, str] = {}
    for exhibit_id, exhibit in EXHIBITS.items():
        if exhibit.worker != kind:
            errors[exhibit_id] = f"it runs in a {exhibit.worker} worker, not a {kind} worker"
            continue
        try:
            probes[exhibit_id] = importlib.import_module(f"exhibits.{exhibit_id}.probe")
        except Exception as exc:
            errors[exhibit_id] = f"{type(exc).__name__}: {exc}"
    return probes, errors


def _needs_snippet(exhibit_id: str) -> bool:
    """``Exhibit.needs_snippet`` of the registry (True for an unknown id)."""
    from exhibits.registry import EXHIBITS

    exhibit = EXHIBITS.get(exhibit_id)
    return exhibit.needs_snippet if exhibit is not None else True


class ProbeMissing(Exception):
    """The exhibit's probe could not be imported in this worker."""


class Probes:
    """The probes of a worker of ``kind``, each imported when a job first runs its exhibit: a
    worker imports only the exhibit it runs (issue 36). A forked worker finds every JAX probe
    imported by its template (``zygote._preload``, shared pages), so there this is a lookup in
    ``sys.modules``; a bubblewrap-started one pays for its own exhibit's probe only."""

    def __init__(self, kind: WorkerKind) -> None:
        self.kind = kind

    def load(self, exhibit_id: str) -> ModuleType:
        """``exhibits.<id>.probe``; raises :class:`ProbeMissing` saying why not (an unknown
        exhibit, one of another worker kind, the import's error)."""
        import importlib

        from exhibits.registry import EXHIBITS

        exhibit = EXHIBITS.get(exhibit_id)
        if exhibit is None:
            why = "unknown exhibit"
        elif not serves(self.kind, exhibit_id):
            why = f"it runs in a {exhibit.worker} worker, not a {self.kind} worker"
        else:
            try:
                return importlib.import_module(f"exhibits.{exhibit_id}.probe")
            except Exception as exc:
                why = f"{type(exc).__name__}: {exc}"
        raise ProbeMissing(f"the probe of exhibit {exhibit_id!r} could not be imported: {why}")


def _settle(ctx: RunContext) -> None:
    """Finish the run's pending work inside the run, so it counts against this run's limits:
    JAX's pending effects and callbacks (``jax.effects_barrier``), then the user's objects
    (``__del__`` methods run in ``gc.collect``). A torch worker has no JAX effects to await."""
    if "jax" in sys.modules:
        import jax

        jax.effects_barrier()  # type: ignore[no-untyped-call]
    ctx.__dict__.pop("snippet", None)
    # The snippet's module is registered in sys.modules while it runs (load_snippet): drop it,
    # so that its globals are collected here, inside the run.
    sys.modules.pop(SNIPPET_MODULE, None)
    gc.collect()


def _snippet_f(ctx: RunContext) -> object:
    snippet = ctx.__dict__.get("snippet")
    return None if snippet is None else snippet.f


# Python stack lent to :func:`_failure` while it describes an exception: a RecursionError is
# caught with the stack nearly full, and JAX's C++ pytree flatten can leave the interpreter's
# recursion counter exhausted after raising one (jaxlib 0.10.2).
_FAILURE_EXTRA_RECURSION = 20_000


def _failure(exc: BaseException, ctx: RunContext) -> RunFailed:
    """The ``run_failed`` event for ``exc``: :func:`~jaxscope.sandbox.errors.describe_failure`
    (``classify``; if that fails, a summary that reads nothing but the exception's class and
    its snippet frames: no ``str`` of the exception, no user code), with extra recursion
    headroom; its message and class cut (``jaxscope.user_text``)."""
    from jaxscope.sandbox.errors import describe_failure

    stage = ctx.error_stage or ctx.current_stage
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(limit + _FAILURE_EXTRA_RECURSION)
    try:
        failed = describe_failure(exc, stage, f=_snippet_f(ctx), catch=BaseException)
        failed.run_id = ctx.run_id
        return failed
    finally:
        sys.setrecursionlimit(limit)


# Captured at import, before any user code (a snippet may monkeypatch ``json.loads``, and
# ``builtins.print`` for its own later runs).
_json_loads = json.loads
_print = builtins.print

# Captured at import, before any user code: the number of threads started through ``_thread``
# (``threading.Thread`` included) that are alive. XLA's native threads do not count, even when
# they call into Python (``jax.debug.print``).
_started_threads = _thread._count


# The last :func:`global_state` read: after the warm-up, then after each run (``run_job``).
_STATE: list[tuple[object, ...]] = []

# Modules whose public attributes a snippet could replace for the session's later runs.
_WATCHED_MODULES = ("jax", "jax.numpy", "jax.lax", "jax.nn", "jax.random", "jax.tree_util")


def global_state() -> tuple[object, ...]:
    """A fingerprint of the process-wide state a snippet can change and a later run of the
    session would inherit: every ``jax.config`` value, the identity of the public attributes of
    the main ``jax`` modules, and the working directory. The runner retires a worker whose run
    changed it (:func:`state_changed`), so that results never depend on what ran before. A
    torch worker has no JAX: there, only the working directory (it retires after every run)."""
    if "jax" not in sys.modules:
        return (), {}, os.getcwd()
    import jax

    config = tuple(sorted((k, repr(v)) for k, v in jax.config.values.items()))
    attributes = {
        (name, key): id(value)
        for name in _WATCHED_MODULES
        if (module := sys.modules.get(name)) is not None
        for key, value in list(vars(module).items())
        if not key.startswith("_")
    }
    return config, attributes, os.getcwd()


def state_changed(before: tuple[object, ...], after: tuple[object, ...]) -> bool:
    """True when a config value or the cwd changed, or an attribute that existed before was
    replaced or deleted. New attributes do not count: importing a submodule (``jax.extend``)
    adds one, and a probe may import modules lazily."""
    config_b, attrs_b, cwd_b = before
    config_a, attrs_a, cwd_a = after
    assert isinstance(attrs_b, dict) and isinstance(attrs_a, dict)
    if config_b != config_a or cwd_b != cwd_a:
        return True
    return any(attrs_a.get(key) != ident for key, ident in attrs_b.items())


def run_job(
    request: RunRequest,
    cpu_s: float,
    info: dict[str, Any],
    probes: Probes,
) -> str | None:
    """Run one job; emits events ending in exactly one terminal event. Never raises.

    Before the terminal event, JAX's pending effects are awaited and the user's objects
    collected (:func:`_settle`). Returns why the worker must retire after this run (threads the
    snippet started are still running, less than one CPU budget is left of its lifetime, the
    run changed :func:`global_state`, or it halted the TPU core: :func:`_core_halted`), or None
    when it can take the session's next run."""
    from jaxscope.sandbox import guard
    from jaxscope.sandbox.snippet import check_plain_call, donates_inside, load_snippet

    started = time.perf_counter()
    # A previous run of the session may have replaced these (its own damage, but the runner
    # relies on them): collection on, prints to events, input() finds nothing.
    gc.enable()
    sys.stdout = _STDOUT
    sys.stdin = io.StringIO("")
    builtins.print = _print
    threads_before = _started_threads()
    # The state the last run left, or the warm-up (read before the ready line, off the run's
    # path: ~1-3 ms of a small run; design 0076); a run that changed it retired its worker.
    state_before = _STATE[0] if _STATE else global_state()
    _core_halted(None)  # forget a halt described before this run
    guard.set_cpu_budget(cpu_s)
    cpu_at_start = guard.cpu_seconds_used()
    # No jax.clear_caches() here (measured, see docs/design/0001-sandbox.md): every run executes
    # the snippet anew, so `f` is a new object and JAX traces, lowers and compiles it afresh
    # (probes empty the tracing caches they need with internals.cache.fresh_caches), while the
    # eager kernels of the snippet's module body (`jax.random.normal` for parameters...) stay
    # compiled for the session's next runs: clearing them cost 2.4-7 s per run of the conv-net
    # example on a 2-core box, against 0.2-0.4 s for the whole run with them kept.
    ctx = RunContext(request, budget=cpu_s / _LIMITS.cpu_s if _LIMITS.cpu_s > 0 else 1.0)
    ctx.cpu_at_start = cpu_at_start
    _STDOUT.start(ctx)
    terminal: RunFinished | RunFailed
    try:
        ctx.emit(
            RunStarted(
                exhibit=request.exhibit,
                jax_version=info["jax_version"],
                backend=info["backend"],
                devices=info["devices"],
                cpu_device_count=info["cpu_device_count"],
                torch_xla_version=info.get("torch_xla_version"),
            )
        )
        # The exhibit's probe, imported before this run's snippet runs (its code has not
        # touched the import system, or the modules the probe binds, yet).
        probe = probes.load(request.exhibit)
        load_started, load_cpu = time.perf_counter(), guard.cpu_seconds_used()
        # The load stage's own CPU limit (settings.load_limit); credit_load sets the run's after.
        guard.set_cpu_budget(load_limit(cpu_s))
        with ctx.stage("load"):
            ctx.snippet = load_snippet(request.code, require_f=_needs_snippet(request.exhibit))
            # A donation inside an unjitted f fails plain f(*args) but not a trace of f: such an
            # f is called once as plain JAX calls it (design 0060), unless the probe calls f
            # as it is anyway.
            if ctx.snippet.defines_f and not getattr(probe, "CALLS_F_AS_IS", False):
                if donates_inside(ctx.snippet):
                    check_plain_call(ctx.snippet)
        ctx.credit_load(time.perf_counter() - load_started, guard.cpu_seconds_used() - load_cpu)
        ctx.current_stage = "trace"
        sizes = (
            contextlib.nullcontext()
            if _REPORTING_SIZES is None
            else _REPORTING_SIZES(ctx.note_program_size)
        )
        with sizes:
            probe.run(ctx)
        _settle(ctx)
        _STDOUT.drain()
        terminal = RunFinished(duration_ms=(time.perf_counter() - started) * 1e3)
    except BaseException as exc:  # the user's code may raise anything, SystemExit included
        with contextlib.suppress(Exception):
            _STDOUT.drain()
        terminal = _failure(exc, ctx)
    if isinstance(terminal, RunFailed):
        # Outside the except block, so the traceback (and the user's frames) can be freed.
        with contextlib.suppress(BaseException):
            _settle(ctx)
        with contextlib.suppress(Exception):
            _STDOUT.drain()
    terminal.run_id = ctx.run_id
    _STDOUT.start(None)
    ctx.__dict__.pop("snippet", None)
    try:
        retire = _retire_reason(terminal, threads_before, cpu_s, state_before)
    except BaseException:  # the snippet broke what the checks read (guard, threading): retire
        retire = "the run broke the runner's own checks"
    if isinstance(terminal, RunFinished) and retire is None:
        _CAPTURE.update(ctx.capture)
    else:
        # This worker will not stay to answer detail requests (it retires, or the run failed:
        # the supervisor stops a failed run's worker): the whole events go now, before the
        # terminal one (each replaces its summary; the supervisor checks them), so that a
        # failed run's last steps still show their values. A failed run sends them for at most
        # FAILED_DETAIL_S: the time counts against its limits, and a run that failed near its
        # wall-clock limit must still end with its own error, not a timeout.
        _send_capture(ctx, FAILED_DETAIL_S if isinstance(terminal, RunFailed) else None)
    send_event(terminal)
    return retire


def _send_capture(ctx: RunContext, seconds: float | None = None) -> None:
    """Send the run's held whole events (:func:`_send_whole`), summaries first, then ranges, up
    to RETIRED_DETAIL_BYTES (and for ``seconds`` at most, when given): a 20,000-eqn program's
    ranges are tens of MB the page never asked for, and would pass the run's byte limit. Those
    not sent answer "gone" (the worker is stopped). Never raises: the terminal event goes out
    whatever."""
    deadline = None if seconds is None else time.monotonic() + seconds
    with contextlib.suppress(BaseException):
        sent = 0
        for detail_id, event in sorted(
            ctx.capture.items(), key=lambda item: isinstance(item[1], RANGE_ANSWERS)
        ):
            if sent >= RETIRED_DETAIL_BYTES or (
                deadline is not None and time.monotonic() > deadline
            ):
                break
            sent += _send_whole(event, detail_id, ctx.run_id)


def _retire_reason(
    terminal: RunFinished | RunFailed,
    threads_before: int,
    cpu_s: float,
    state_before: tuple[object, ...],
) -> str | None:
    """Why the worker must retire after this run (see :func:`run_job`), or None."""
    from jaxscope.sandbox import guard

    if isinstance(terminal, RunFailed) and terminal.error_class == "RecursionError":
        return "a RecursionError can leave the interpreter's recursion counter unbalanced"
    if _core_halted(terminal):
        return CORE_HALT_RETIRE
    if _started_threads() > threads_before:
        return "threads started by the snippet are still running"
    if guard.cpu_lifetime_left() < cpu_s:
        return "its lifetime CPU budget is nearly spent"
    try:
        state = global_state()
        changed = state_changed(state_before, state)
        _STATE[:] = [state]
    except BaseException:  # the snippet broke what the fingerprint reads: retire all the same
        changed = True
    if changed:
        return "the run changed global JAX state (jax.config, the jax modules or the cwd)"
    return None


CORE_HALT_RETIRE = "the run halted the TPU core: the chip runs nothing more in this process"


def _core_halted(terminal: RunFinished | RunFailed | None) -> bool:
    """Whether the run halted the TPU core (design 0073): its ``run_failed`` is XLA's runtime
    error saying so (``errors.core_halted``: an out-of-bounds block's DMA bounds check, or a
    later program's "The program continuator has halted unexpectedly"), or an exhibit described
    such an error in its own event (``errors.take_core_halt_seen``, which this resets: ``None``
    only resets it). Every later program in the process would fail: the worker must retire."""
    # Only when something imported it (a failure described, an exhibit that noted a halt):
    # importing it here would load every exhibit's explainer into each worker at its first run.
    errors = sys.modules.get("jaxscope.sandbox.errors")
    if errors is None:
        return False
    seen = errors.take_core_halt_seen()
    return (
        isinstance(terminal, RunFailed)
        and terminal.error_class in ("JaxRuntimeError", "XlaRuntimeError")
        and errors.core_halted(terminal.message)
    ) or (terminal is not None and seen)


# The whole events behind the last run's summaries (details on demand), by detail_id: kept
# until the worker's next job (the supervisor never gives a worker a second run, so in practice
# until the worker is killed).
_CAPTURE: dict[str, EventModel] = {}


def serve_detail(detail_id: str, tag: str) -> None:
    """Answer one DetailRequest of the last run: its whole event (``detail_of`` = ``detail_id``,
    ``run_id`` = ``tag``), or ``detail_failed`` for an id it never had. Never raises."""
    event = _CAPTURE.get(detail_id)
    if event is None:
        send_event(
            DetailFailed(
                run_id=tag,
                detail_id=detail_id,
                gone=False,
                message=f"the run has no detail {detail_id[:64]!r}",
            )
        )
        return
    _send_whole(event, detail_id, tag)


def _send_whole(event: EventModel, detail_id: str, tag: str) -> int:
    """Send the whole event behind the summary ``detail_id`` (``detail_of`` set, ``run_id`` =
    ``tag``: the detail job's, or the run's when it goes out before the terminal event);
    returns the bytes of its line."""
    whole = event.model_copy(update={"run_id": tag, "detail_of": detail_id, "detail_id": None})
    line = event_json(whole)
    if len(line) > STREAM_LIMIT_BYTES and summarise_event(whole):
        line = event_json(whole)
    _write_event_line(line)
    return len(line)


def _read_jobs(fd: int) -> Iterator[bytes]:
    with os.fdopen(fd, "rb", buffering=0) as raw, io.BufferedReader(raw) as jobs:
        yield from jobs


def main(argv: list[str] | None = None) -> int:
    global _write_event_line
    parser = argparse.ArgumentParser(prog="python -m jaxscope.sandbox.runner")
    parser.add_argument("--limits", default="{}", help="Limits as JSON (see jaxscope.settings)")
    parser.add_argument("--parent-pid", type=int, default=0, help="die when this process dies")
    parser.add_argument(
        "--uid", type=int, default=0, help="(root, no namespaces) the uid to run user code as"
    )
    parser.add_argument(
        "--kind",
        choices=get_args(WorkerKind),
        default="jax",
        help="the worker kind (designs 0025, 0066, 0067)",
    )
    ns = parser.parse_args(argv)
    limits = Limits(**json.loads(ns.limits))
    global _LIMITS
    _LIMITS = limits

    from jaxscope.sandbox import guard

    # Only the three pipes: whatever else the supervisor's process held open (a server started
    # under uvloop, a socket handed over by systemd, a log file) must not reach user code.
    guard.close_inherited_fds()
    # A uid's kernel keyrings outlive its processes: clear what a previous holder of this
    # worker's uid may have left, before any user code.
    guard.clear_keyrings()
    # Private pipes first, before anything can write to fd 1 or read fd 0. os.dup gives
    # close-on-exec fds; the event fd's number lives only in the writer's closure.
    event_fd = os.dup(1)
    os.dup2(2, 1)
    job_fd = os.dup(0)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    os.set_inheritable(event_fd, False)
    os.set_inheritable(job_fd, False)
    write_ready = _write_event_line = _make_line_writer(event_fd)
    del event_fd

    if ns.parent_pid:
        guard.die_with_parent(ns.parent_pid)
    guard.apply_startup_limits(limits)
    kind: WorkerKind = ns.kind
    info = _warm_up(kind)
    probes = Probes(kind)
    info["threads"] = guard.thread_count()
    # Before any user code: become unprivileged (root only), fix the lifetime CPU limit, remove
    # the spawners that raise no audit event, then install the audit hook.
    info["uid"] = guard.drop_privileges(os.getcwd(), ns.parent_pid, ns.uid) or os.getuid()
    # Room for the longest run: a credited load stage (up to LOAD_LIMIT_FACTOR × 3 × cpu_s), then
    # the ceiling.
    guard.set_cpu_lifetime(limits.cpu_s, floor_s=limits.ceiling_s + 10 * limits.cpu_s)
    guard.remove_unaudited_spawners()
    sys.stdin = io.StringIO("")
    sys.stdout = _STDOUT
    # On SIGUSR1 (sent by the supervisor just before it kills a run at its wall-clock limit)
    # and on SIGXCPU (the CPU limit), write every thread's Python stack to stderr, so that a
    # timeout can name the snippet line that was running. faulthandler's handler is C code: it
    # works while the main thread is stuck in a C loop (an XLA while_loop) too.
    faulthandler.register(signal.SIGUSR1, file=2, all_threads=True)
    faulthandler.register(signal.SIGXCPU, file=2, all_threads=True, chain=True)
    # And on a fatal signal (SIGSEGV, SIGABRT, SIGFPE, SIGBUS, SIGILL: a ctypes crash,
    # os.abort()), so that "killed by SIGSEGV" names the line too; the signal then proceeds.
    faulthandler.enable(file=2, all_threads=True)
    # A snippet that calls os._exit writes its stack first: the death message names its line.
    # (Only for a better message: posix._exit stays reachable, and exits with no line.)
    os._exit = _exit_naming_line
    guard.install_audit_hook()
    _STATE[:] = [global_state()]
    # Move everything alive after warm-up (JAX, probes, the hook) out of the collector's reach:
    # the full collection in each job then scans only the job's objects (45 ms -> ~0 ms), and
    # gc.get_objects() could not list the hook even if its audit event were allowed.
    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)
    ready = {"ready": True, **info, "pid": os.getpid()}
    write_ready(json.dumps(ready).encode() + b"\n")

    for line in _read_jobs(job_fd):
        if not line.strip():
            continue
        job = _json_loads(line)
        if "detail" in job:
            serve_detail(str(job["detail"]), str(job["tag"]))
            continue
        _CAPTURE.clear()
        request = RunRequest.model_validate(job["request"])
        cpu_s = float(job["cpu_s"])
        retire = run_job(request, cpu_s, info, probes)
        if retire is not None:
            # The terminal event is written (os.write, unbuffered); leave before the snippet's
            # threads can do more. The supervisor replaces a dead worker at the next run.
            with contextlib.suppress(Exception):
                sys.stderr.write(f"jaxscope worker retiring: {retire}\n")
                sys.stderr.flush()
            _os_exit(RETIRE_EXIT_CODE)
    return 0


if __name__ == "__main__":
    sys.exit(main())
