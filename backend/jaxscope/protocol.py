"""The core wire schema of jaxscope: requests, the run lifecycle, errors and the shared views.

This module is the core of the one contract between the sandbox worker, the server, the CLI and the
browser. It holds what every run shares: the requests, the lifecycle events every run emits
(:class:`RunStarted`, :class:`StageStarted`, :class:`StageTimed`, :class:`StdoutPrinted`,
:class:`RunQueued`, and the terminal :class:`RunFinished`/:class:`RunFailed`), the staged jaxpr
most exhibits show (:class:`JaxprStaged`), the views several exhibits build their events from
(jaxprs, avals, source locations, value previews, rules) and the event base
:class:`EventBase`. Each exhibit's own events live in ``exhibits/<id>/events.py``.

The event union (``EventModel``, the discriminated ``Event`` and :data:`EVENT_ADAPTER`, which the
server re-validates every worker line with) is assembled in :mod:`jaxscope.events` from this
module's :data:`EVENTS` and every registered exhibit's ``events.py`` (``exhibits/registry.py``),
and assembling it fails on an event class that an events module defines but does not list, or on
two events with the same ``type``. Those modules import this one, so this module cannot import
them: ``from jaxscope.protocol import EVENT_ADAPTER`` (or ``EventModel``) resolves on first use
through :func:`__getattr__`; an exhibit's event classes are imported from its own
``exhibits.<id>.events``, never from here. Statically
(for mypy) ``EventModel`` is :class:`EventBase`: narrow with ``isinstance``. A module that the
registry imports (``exhibits/<id>/events.py``, ``artefacts.py``) annotates with
:class:`EventBase` instead, since the union is assembled while it loads.

The run options (:class:`RunOptions`) are the one part of the requests that exhibits own: each
exhibit with controls defines its options model in ``exhibits/<id>/options.py`` (fields, limits,
descriptions, ``x-exhibits``), its registry entry names it, and :mod:`jaxscope.run_options`
composes :class:`RunOptions` of them from the registry (re-exported here; this module imports no
exhibit). The CLI's flags, the page's shared links (``frontend/src/gen/run-options.schema.json``)
and :func:`option_exhibits` are derived from :class:`RunOptions`.

The frontend's TypeScript types are generated from :func:`jaxscope.events.json_schema`
(``python -m jaxscope.events`` prints it; ``frontend/src/gen/`` holds the result, and CI fails
when the two drift).

Conventions (see ``docs/architecture.md``):

* Every event carries ``type`` (past-tense verb + JAX noun), ``seq`` (0, 1, 2, ... per run, assigned
  by the supervisor) and ``run_id`` (chosen by the client).
* Every run ends in exactly one terminal event: :class:`RunFinished` or :class:`RunFailed`.
* Names follow JAX: jaxpr, eqn, invars, outvars, constvars, aval, weak_type, source_info.
* Source locations are 1-based lines (and 0-based columns, as Python's ``ast``/``traceback``) of
  the user's snippet only; JAX's own frames are never reported as a location.

This module imports nothing from JAX, nor do the registry and the options modules that
:mod:`jaxscope.run_options` imports: the server and the CLI import it without paying for JAX.
"""

from __future__ import annotations

import functools
import json
import sys
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal, Self, TypeAlias, get_args

from pydantic import BaseModel, Field, PrivateAttr, TypeAdapter, field_serializer

from jaxscope.run_options import RunOptions as RunOptions
from jaxscope.wire import WireModel as WireModel
from jaxscope.wire import WireModelT as WireModelT

# The largest snippet the server accepts, in characters. A bigger paste gets ``invalid_request``.
MAX_CODE_CHARS = 200_000


# --------------------------------------------------------------------------------------------
# Shared views
# --------------------------------------------------------------------------------------------


class CallerFrame(WireModel):
    """A snippet frame that called the one a :class:`SourceLoc` names: its line (1-based) and
    function (``<module>`` at top level)."""

    line: int
    function: str | None = None


class SourceLoc(WireModel):
    """A place in the user's snippet (never in JAX's files).

    ``line``/``end_line`` are 1-based; ``column``/``end_column`` 0-based, as in
    ``jax._src.source_info_util.Frame`` and Python's ``traceback``. ``function`` is the user
    function's name (``<module>`` at top level). ``callers``: for an eqn, the snippet frames
    that led to this line, innermost first (``layer_norm`` was called from ``block``'s line,
    which ``f``'s loop called...), from the eqn's ``source_info.traceback``; None when the
    line is in the outermost snippet frame, or for a place that is not an eqn's.
    """

    line: int
    column: int | None = None
    end_line: int | None = None
    end_column: int | None = None
    function: str | None = None
    callers: list[CallerFrame] | None = None


class AvalView(WireModel):
    """An abstract value (``jax.core.ShapedArray``): shape, dtype name and weak type.

    ``short`` is ``aval.str_short()`` (``f32[3]``); ``weak_type`` marks Python-scalar-derived
    avals (``str(aval)`` writes them with a ``~`` prefix, the jaxpr text does not).
    """

    shape: list[int]
    dtype: str
    weak_type: bool = False
    short: str


class VarView(WireModel):
    """A jaxpr variable or literal as JAX prints it.

    ``name`` is the name in JAX's own printout of the enclosing jaxpr (``a``, ``b``, ...); for a
    literal it is the printed literal (``2.0:f32[]``) and ``literal`` is true.
    """

    name: str
    aval: AvalView
    literal: bool = False


class ConstVarView(WireModel):
    """A constvar of a ClosedJaxpr with a preview of its value (``numpy`` repr, truncated)."""

    var: VarView
    value_preview: str


class InnerJaxprView(WireModel):
    """A jaxpr held in an eqn's params (``jit``'s ``jaxpr``, ``cond``'s ``branches``, ...).

    ``param`` is the params key, ``name`` the ``jit`` name when there is one (``_where``),
    ``text`` JAX's own printout of the inner jaxpr; ``constvars``/``invars``/``outvars``/``eqns``
    the same jaxpr's structure (``jaxpr.constvars`` ..., each eqn an :class:`EqnView`, with its
    own inner jaxprs and its snippet line), named as ``text`` and the enclosing jaxpr's text
    name them (one ``core.JaxprPpContext``), so the graph can open a call in place without
    reading JAX's printout back.
    """

    param: str
    name: str | None = None
    text: str
    constvars: list[VarView] = []
    invars: list[VarView] = []
    outvars: list[VarView] = []
    eqns: list[EqnView] = []


class EqnView(WireModel):
    """One equation of a jaxpr.

    ``index`` is its position in ``jaxpr.eqns``; ``text`` is JAX's printout of this eqn alone
    (names consistent with the enclosing jaxpr); ``params`` maps each param to its printed value;
    ``source`` is the user line from ``eqn.source_info`` (``source_info_util.user_frame``).
    ``name_stack`` is ``str(eqn.source_info.name_stack)``: the scopes the eqn was traced in
    (``jax.named_scope``, Flax linen module names, transforms such as ``jvp(layer3)/attn``), as
    JAX writes them into the HLO op names (``op_name="jit(f)/layer3/attn/dot_general"``);
    left off the wire when empty.
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
    name_stack: str = Field(
        default="", exclude_if=lambda v: not v, json_schema_extra={"x-wire-optional": True}
    )


InnerJaxprView.model_rebuild()


class EqnRange(WireModel):
    """Eqns ``[start, stop)`` of a jaxpr view that an ``on_demand`` run did not stream with it
    (design 0045): the page asks for them with a DetailRequest for ``detail_id``, answered by
    one ``jaxpr_eqns_sent``."""

    start: int
    stop: int
    detail_id: str


class ListRange(WireModel):
    """Items ``[start, stop)`` of the list ``field`` of the object holding this range (a
    :class:`JaxprView`'s ``constvars``/``invars``/``outvars``, or an event's list named in its
    ``ranged_lists``) that an ``on_demand`` run did not stream with it (design 0045, list
    ranges): the page asks for them with a DetailRequest for ``detail_id``, answered by one
    ``items_sent``. The ranges of one list come in order; the last one's ``stop`` is the
    list's whole length."""

    field: str
    start: int
    stop: int
    detail_id: str


class JaxprView(WireModel):
    """A ClosedJaxpr: JAX's own text plus a structured view of the same object.

    ``text`` is ``str(closed_jaxpr)`` byte for byte; the structured fields use the same names.
    ``arg_names``: for each invar, the keypath of its leaf in the traced function's arguments
    as JAX names it (``params['layers'][3]['w']``: ``jaxpr.debug_info.arg_names``); None when
    JAX recorded none (a jaxpr JAX built itself, e.g. a rule's). ``total_eqns``: None for a
    complete view; for a summary of a program too large to stream whole
    (``jaxscope.summaries``), the number of eqns of the whole jaxpr, of which ``eqns`` holds the
    first ones and ``text`` JAX's text of those with one line saying how many more there are.
    ``eqn_ranges``: in an ``on_demand`` run, a view too large for one event (design 0045) is
    streamed with its first eqns (``total_eqns`` set) and the rest as ranges to ask for, in
    order; each ``jaxpr_eqns_sent`` answer extends ``eqns`` and ``text`` by its range, and once
    all arrived the view is the whole one. Left off the wire when empty. ``list_ranges``: the
    same for a variable list too long for one event (20,000 residuals as constvars): its first
    items are here, the rest come as ``items_sent`` answers (:class:`ListRange`).
    """

    text: str
    constvars: list[ConstVarView]
    invars: list[VarView]
    outvars: list[VarView]
    eqns: list[EqnView]
    effects: list[str]
    arg_names: list[str] | None = None
    total_eqns: int | None = None
    eqn_ranges: list[EqnRange] = Field(
        default_factory=list,
        exclude_if=lambda v: not v,
        json_schema_extra={"x-wire-optional": True},
    )
    list_ranges: list[ListRange] = Field(
        default_factory=list,
        exclude_if=lambda v: not v,
        json_schema_extra={"x-wire-optional": True},
    )


class ArrayPreview(WireModel):
    """A concrete output array: shape, dtype and a truncated ``numpy`` printout."""

    path: str
    shape: list[int]
    dtype: str
    preview: str


class TracebackFrame(WireModel):
    """One frame of a user-code traceback (user frames only)."""

    line: int
    function: str
    text: str | None = None


# --------------------------------------------------------------------------------------------
# Requests (browser or CLI -> server)
# --------------------------------------------------------------------------------------------


def option_exhibits(name: str) -> tuple[str, ...]:
    """The exhibits that read the run option ``name`` (its ``x-exhibits``; a test checks them
    against what each probe reads)."""
    extra = RunOptions.model_fields[name].json_schema_extra
    exhibits = extra.get("x-exhibits", []) if isinstance(extra, dict) else []
    return tuple(str(e) for e in exhibits) if isinstance(exhibits, list) else ()


class RunRequest(WireModel):
    """Run ``exhibit`` on the snippet ``code``. Answered by a stream of events for ``run_id``."""

    type: Literal["run"] = "run"
    run_id: str = Field(min_length=1, max_length=64)
    exhibit: str = Field(min_length=1, max_length=64)
    code: str
    options: RunOptions = Field(default_factory=RunOptions)
    details: Literal["eager", "on_demand"] = Field(
        default="eager",
        description=(
            "eager: every event is streamed whole (the CLI, tests). on_demand: an event whose "
            "exhibit can summarise it is streamed as its summary (``detail_id`` set: values, "
            "previews and long texts left out) and the whole event stays in the session's "
            "worker until its next run; the page asks for it with a DetailRequest (the page)."
        ),
    )
    device: Literal["accelerator", "cpu"] | None = Field(
        default=None,
        description=(
            "Where a JAX exhibit runs on a host with an accelerator (design 0069): accelerator "
            "(the chip, one run at a time) or cpu (the 8 virtual CPU devices). None: the "
            "accelerator where the host has one. Ignored by exhibits of other worker kinds."
        ),
        exclude_if=lambda v: v is None,
        json_schema_extra={"x-wire-optional": True},
    )


class CancelRequest(WireModel):
    """Cancel the run ``run_id``: it ends with ``run_failed`` kind ``cancelled``."""

    type: Literal["cancel"] = "cancel"
    run_id: str = Field(min_length=1, max_length=64)


class DetailRequest(WireModel):
    """Ask for the whole event behind a summary of the run ``run_id`` (its ``detail_id``).
    Answered by one event: the whole event (``detail_of`` = ``detail_id``, the summary's
    ``seq``), or ``detail_failed`` when the run's details are gone (the session ran again, its
    worker was retired or reclaimed for another user's run) or the id is unknown."""

    type: Literal["detail"] = "detail"
    run_id: str = Field(min_length=1, max_length=64)
    detail_id: str = Field(min_length=1, max_length=64)


class FollowRequest(WireModel):
    """Follow the file that ``jaxscope watch FILE`` watches (``follow`` true): answered at once
    and after every save by a ``watched_file_changed``; ``follow`` false stops that. The file is
    the one the CLI user named: a page cannot name a path (design 0036)."""

    type: Literal["follow"] = "follow"
    follow: bool = True


# A room id and a teacher token as the server makes them (``secrets.token_urlsafe``): URL-safe
# base64 characters only, so a page can put a room id in a link unescaped (design 0044).
ROOM_ID_PATTERN = r"^[A-Za-z0-9_-]{8,64}$"


class OpenRoomRequest(WireModel):
    """Classroom mode (design 0044): open a room that this socket drives as its teacher,
    answered by ``room_opened`` (the room id and the teacher token) or ``room_refused`` (the
    server holds as many rooms as it allows). With ``room`` and ``token``: take back the room
    this teacher opened (the page reconnected), within the grace period after its socket went."""

    type: Literal["open_room"] = "open_room"
    room: str | None = Field(default=None, pattern=ROOM_ID_PATTERN)
    token: str | None = Field(default=None, min_length=1, max_length=128)


class JoinRoomRequest(WireModel):
    """Follow the room ``room`` as a student: answered by ``room_updated`` (the teacher's
    exhibit, code, options, run and stepper position) and the events of the teacher's current
    run so far, then every change live; or by ``room_refused`` (no such room, it ended, full)."""

    type: Literal["join_room"] = "join_room"
    room: str = Field(min_length=1, max_length=64)


class LeaveRoomRequest(WireModel):
    """Stop following a room (a student), or close it for everyone (its teacher: ``token``)."""

    type: Literal["leave_room"] = "leave_room"
    room: str = Field(min_length=1, max_length=64)
    token: str | None = Field(default=None, min_length=1, max_length=128)


class DriveRoomRequest(WireModel):
    """The teacher's page on screen, sent to the room's students: the exhibit, the editor's
    code, the options and the stepper position (``cursor``, an index into the run's events; -1:
    follow the newest). Refused (``room_refused``) without the room's teacher token, or from a
    socket that is not the room's teacher. A run needs no drive: the teacher's ``run`` requests
    are announced to the room, and their events relayed to it, by the server."""

    type: Literal["drive_room"] = "drive_room"
    room: str = Field(min_length=1, max_length=64)
    token: str = Field(min_length=1, max_length=128)
    exhibit: str = Field(min_length=1, max_length=64)
    code: str = Field(max_length=MAX_CODE_CHARS)
    options: RunOptions = Field(default_factory=RunOptions)
    cursor: int = Field(default=-1, ge=-1, le=10_000_000)


class ResumeRequest(WireModel):
    """Resume the run ``run_id`` on this socket after a reconnect (a server with a run queue,
    ``serve --queue``, design 0065): its events after ``after_seq`` are sent again from the
    run's stream, then the rest as they come. ``token``: the run's ``run_accepted`` token, which
    only the page that asked for the run was sent. Answered ``run_failed`` when the run's stream
    is gone (it ended more than a while ago) or the server keeps no run streams."""

    type: Literal["resume"] = "resume"
    run_id: str = Field(min_length=1, max_length=64)
    token: str = Field(min_length=1, max_length=64)
    after_seq: int = Field(default=-1, ge=-1)


RoomRequest: TypeAlias = OpenRoomRequest | JoinRoomRequest | LeaveRoomRequest | DriveRoomRequest
AnyRequest: TypeAlias = (
    RunRequest | CancelRequest | DetailRequest | FollowRequest | ResumeRequest | RoomRequest
)

Request = Annotated[AnyRequest, Field(discriminator="type")]
REQUEST_ADAPTER: TypeAdapter[AnyRequest] = TypeAdapter(Request)


# --------------------------------------------------------------------------------------------
# Events (worker -> server -> browser)
# --------------------------------------------------------------------------------------------


class EventBase(WireModel):
    """The base of every event: a subclass with a ``type`` literal (its default the same string)
    is an event, and belongs in the union (``EVENTS`` of the module that defines it)."""

    seq: int = 0
    run_id: str = ""
    # Details on demand (design 0023): a summary carries the ``detail_id`` to ask for its whole
    # event; the whole event, sent in answer to a DetailRequest, carries ``detail_of`` (the same
    # id) and the summary's ``seq``, and replaces it.
    # Left off the wire while None (most events), so they cost nothing there; the frontend's
    # types mark them optional (``x-wire-optional``, read by frontend/scripts/gen-protocol.mjs).
    detail_id: str | None = Field(
        default=None, exclude_if=lambda v: v is None, json_schema_extra={"x-wire-optional": True}
    )
    detail_of: str | None = Field(
        default=None, exclude_if=lambda v: v is None, json_schema_extra={"x-wire-optional": True}
    )
    # List ranges (design 0045): in an ``on_demand`` run, the event's lists named in
    # ``ranged_lists`` (an exhibit's class sets it) that make it too long for one line are
    # streamed with their first items; ``list_ranges`` names the rest (answered by
    # ``items_sent``). Off the wire while empty.
    ranged_lists: ClassVar[tuple[str, ...]] = ()
    # True for an event the page shows at once and a user waits for (the run's start, the
    # first jaxpr): the server sends it without waiting for others to share its frame
    # (``server/frames.py``, ``request_loop.serve_requests``; design 0076).
    shown_at_once: ClassVar[bool] = False
    list_ranges: list[ListRange] = Field(
        default_factory=list,
        exclude_if=lambda v: not v,
        json_schema_extra={"x-wire-optional": True},
    )
    if TYPE_CHECKING:
        # Every event declares its own ``type: Literal[...]``; this is for code that holds any.
        type: str

    def summarised(self) -> Self | None:
        """This event as streamed to a page that asks for details on demand: a copy without
        its bulky parts (value previews, per-leaf values), or None when it is streamed whole
        (the default). An exhibit's event overrides it; the whole event stays in the worker."""
        return None


# The stages of a run. JAX's: ``load`` (the snippet's module body), ``trace``, ``lower``,
# ``compile``, ``run``, ``call``. torch_xla's own words for the PyTorch/XLA exhibits (a torch
# run is not traced, lowered and compiled as a jit is; issue 31, item 5): ``client`` (the PJRT
# client created, the inputs copied to the device), ``lazy_trace`` (f runs on XLA tensors and
# torch_xla records the pending IR graph), ``sync`` (``torch_xla.sync()`` or a read of a value:
# the pending graph compiled, on a new graph hash, and executed), ``steps`` (a training loop,
# each step traced lazily and synced). A torch exhibit's ``call`` is a call of f itself (eager
# on the CPU, or a ``torch.compile`` of it).
Stage = Literal[
    "load", "trace", "lower", "compile", "run", "call", "client", "lazy_trace", "sync", "steps"
]


class RunStarted(EventBase):
    """The worker accepted the run. ``backend`` is ``jax.default_backend()``; ``devices`` the
    default backend's devices as ``str(device)``; ``cpu_device_count`` the virtual CPU devices."""

    type: Literal["run_started"] = "run_started"
    shown_at_once: ClassVar[bool] = True
    exhibit: str
    jax_version: str
    backend: str
    devices: list[str]
    cpu_device_count: int
    # A torch worker (``WorkerKind`` "torch", design 0025) has no JAX: ``jax_version`` is "",
    # ``backend`` the ``PJRT_DEVICE`` it runs with, ``devices`` empty (torch_xla creates its
    # PJRT client inside the run) and this field torch_xla's version.
    torch_xla_version: str | None = Field(
        default=None, exclude_if=lambda v: v is None, json_schema_extra={"x-wire-optional": True}
    )
    # Why a run meant for the host's accelerator runs on the virtual CPU devices beside it
    # (design 0069: it needs more devices than the accelerator has); absent otherwise.
    device_note: str | None = Field(
        default=None, exclude_if=lambda v: v is None, json_schema_extra={"x-wire-optional": True}
    )


class StageStarted(EventBase):
    """A stage of the run began (progress: the UI shows which stage runs and for how long)."""

    type: Literal["stage_started"] = "stage_started"
    stage: Stage
    call_index: int | None = None


class StageTimed(EventBase):
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


class StdoutPrinted(EventBase):
    """Text the user's code wrote to stdout; ``stage`` tells when (``trace``: printed while
    tracing; ``run``/``call``: printed while executing, e.g. by ``jax.debug.print``)."""

    type: Literal["stdout_printed"] = "stdout_printed"
    text: str
    stage: Stage
    call_index: int | None = None


class JaxprStaged(EventBase):
    """The finished jaxpr: ``str(jax.make_jaxpr(f, static_argnums=...)(*args))`` and its
    structured view; ``fun_name`` is the traced function's name."""

    type: Literal["jaxpr_staged"] = "jaxpr_staged"
    shown_at_once: ClassVar[bool] = True
    fun_name: str
    jaxpr: JaxprView


# --------------------------------------------------------------------------------------------
# Shared views of values and rules (the autodiff and batching exhibits' steps)
# --------------------------------------------------------------------------------------------

# Nested lists of numbers (a pytree of arrays as ``tolist()``), non-finite numbers written as the
# strings ``"nan"``, ``"inf"``, ``"-inf"`` (JSON has no NaN), as in ``../shared/cases``.
NestedNumbers = Any


class RuleView(WireModel):
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


# What a value is to the rule it goes into or comes out of (ValueView.role).
ValueRole = Literal["primal", "tangent", "residual", "undefined_primal", "literal", "cotangent"]


class PendingPreview:
    """A value's preview not formatted yet (details on demand, design 0013): ``make()`` returns
    the text, formatted on the first :meth:`text` call and kept. ``min_chars`` is a lower bound
    of its length (the runner decides from it, without formatting, that a step's summary is
    shorter than the whole step). Shared, never copied: ``copy.deepcopy`` returns it as is (a
    deep copy of an event must not copy the array it holds).

    ``costly``: the value itself is not computed yet (design 0068: a step's values computed
    when the page asks for the step): the runner then always streams the summary, whatever its
    length. ``nonfinite``: when given, the value's non-finiteness is read from it when the view
    is serialised (the view's own ``nonfinite`` stands until then: a summary does not know)."""

    __slots__ = ("_make", "_nonfinite", "_summaries", "_text", "costly", "min_chars")

    def __init__(
        self,
        make: Callable[[], str],
        min_chars: int,
        costly: bool = False,
        nonfinite: Callable[[], bool] | None = None,
    ) -> None:
        self._make: Callable[[], str] | None = make
        self._text: str | None = None
        self.min_chars = min_chars
        self.costly = costly
        self._nonfinite: Callable[[], bool] | bool | None = nonfinite
        # The summaries (``without_previews``) of the views holding this preview, by view: a
        # view shared by several events (a step's output is the next steps' input) is copied
        # once. Keyed by the view's id, with a weak reference to tell a view that died and whose
        # id was reused (the view is not kept alive by its own preview). A dict: one value may
        # be held by thousands of views (the bench's linear jaxpr: a list searched per view took
        # ~0.17 s of its walk's summaries).
        self._summaries: dict[int, tuple[weakref.ref[ValueView], ValueView]] | None = None

    def summary_of(self, view: ValueView) -> ValueView | None:
        """The summary :meth:`keep_summary` kept for ``view`` (the same object), or None."""
        if self._summaries is None:
            return None
        hit = self._summaries.get(id(view))
        if hit is None or hit[0]() is not view:
            return None
        return hit[1]

    def keep_summary(self, view: ValueView, summary: ValueView) -> None:
        if self._summaries is None:
            self._summaries = {}
        self._summaries[id(view)] = (weakref.ref(view), summary)

    def text(self) -> str:
        if self._text is None:
            assert self._make is not None
            self._text, self._make = self._make(), None  # the array is let go once printed
        return self._text

    def nonfinite(self) -> bool | None:
        """The value's non-finiteness when this preview computes it, else None."""
        if callable(self._nonfinite):
            self._nonfinite = self._nonfinite()
        return self._nonfinite

    def __deepcopy__(self, memo: dict[int, Any]) -> PendingPreview:
        return self


class ValueView(WireModel):
    """A value going into or out of a rule.

    ``role``: primal, tangent, residual (a known value the linear jaxpr reads), undefined_primal
    (``ad.UndefinedPrimal``: a linear input of a transpose rule), literal, or cotangent.
    ``zero`` marks a symbolic zero (``ad.Zero``: no array exists); ``preview`` is a truncated
    ``numpy`` printout (``None`` when the value is only abstract); ``var`` the jaxpr variable name
    when it has one; ``nonfinite`` true when the value holds a NaN or an Inf.

    A capture for a page (details on demand) may leave ``preview`` None and hold the value in
    ``pending`` instead (:meth:`with_pending`): the preview is formatted when the view is
    serialised (the whole event, asked for by the page), and is then the same text.
    """

    role: ValueRole
    aval: AvalView
    preview: str | None = None
    zero: bool = False
    var: str | None = None
    nonfinite: bool = False
    # True in a summary: the preview exists and stays in the worker (details on demand); off
    # the wire while false.
    deferred: bool = Field(
        default=False, exclude_if=lambda v: not v, json_schema_extra={"x-wire-optional": True}
    )
    _pending: PendingPreview | None = PrivateAttr(default=None)

    def with_pending(self, pending: PendingPreview) -> Self:
        """This view with its preview formatted only when serialised (``preview`` None)."""
        self._pending = pending
        return self

    @property
    def pending(self) -> PendingPreview | None:
        """The preview not formatted yet (None: ``preview`` is all there is)."""
        return self._pending

    @field_serializer("preview")
    def _serialised_preview(self, preview: str | None) -> str | None:
        if preview is None:
            pending = _pending_of(self)
            if pending is not None:
                return pending.text()
        return preview

    @field_serializer("nonfinite")
    def _serialised_nonfinite(self, nonfinite: bool) -> bool:
        pending = _pending_of(self) if self.preview is None else None
        known = pending.nonfinite() if pending is not None else None
        return nonfinite if known is None else known


class RunQueued(EventBase):
    """Not a step of the run: the run waits for a sandbox worker (every worker is busy, or the
    client holds its share of them). Sent by the server when the run starts waiting and whenever
    its place changes; the page shows it until the run's first event, and Cancel leaves the
    queue. ``position``: 1 = next to get a worker; ``waiting``: runs waiting in all;
    ``estimate_s``: about how long until a worker is free (seconds, from the recent hold times
    of workers; None while unknown); ``reason``: ``pool_full``, ``client_share`` (this client's
    other sessions hold its share: ``JAXSCOPE_MAX_WORKERS_PER_CLIENT``) or ``worker_starting``
    (no warm worker was ready: one of ``worker_kind`` is being started for it, and
    ``estimate_s`` is the pool's recent start time, or a first start's typical cost: a JAX
    worker template imports JAX once, a torch worker imports torch_xla; design 0053). Its
    ``seq`` is always 0 and it is never part of the stepper's event list."""

    type: Literal["run_queued"] = "run_queued"
    position: int
    waiting: int
    estimate_s: float | None = None
    reason: Literal["pool_full", "client_share", "worker_starting"] = "pool_full"
    worker_kind: WorkerKind | None = None


class RunAccepted(EventBase):
    """Not a step of the run: a server with a run queue (``serve --queue``, design 0065) took
    the run onto its queue. ``token`` resumes it on any of the server's replicas after the
    socket is lost (``ResumeRequest``); the page keeps it for the run. Its ``seq`` is always 0
    and it is never part of the stepper's event list."""

    type: Literal["run_accepted"] = "run_accepted"
    token: str
    lane: str


class BudgetScaled(EventBase):
    """The run's time limits grew with the size of the user's program, so that a real model is
    not held to a limit meant for snippets. Sent right after the first event that carries a
    jaxpr of more than ``jaxscope.settings.SCALE_FROM_EQNS`` eqns (and after a larger one).
    ``eqns``: that jaxpr's top-level eqns; ``wall_s``/``cpu_s``: the run's wall-clock and CPU
    limits from now on, in seconds (``jaxscope.settings.scaled_limit``: the exhibit's limit plus
    ``Limits.per_eqn_ms`` per eqn, at most ``Limits.ceiling_s``). The supervisor computes
    ``wall_s`` itself from ``eqns``; it is not the worker's word. Sent again when JAX lowers
    a larger program than any shown (before its compile: an exhibit that shows no jaxpr), and
    once after a load stage (the snippet's module body) of more than a second: ``load_s`` and
    ``load_cpu_s``, the wall and CPU seconds it took, which do not count against the run's
    limits (``jaxscope.settings.load_credit``: at most the load stage's own limit)."""

    type: Literal["budget_scaled"] = "budget_scaled"
    eqns: int = Field(ge=0)
    wall_s: float
    cpu_s: float
    load_s: float | None = Field(default=None, ge=0)
    load_cpu_s: float | None = Field(default=None, ge=0)


class RunFinished(EventBase):
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
    "host_lost",
]


class RunFailed(EventBase):
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


class DetailFailed(EventBase):
    """The answer to a DetailRequest that cannot be served: ``detail_id`` names what was asked;
    ``gone`` is true when the run's details no longer exist (the session ran again, or its
    worker was retired or reclaimed for another user's run: run again to see them), false for
    an id the run never had or a worker that failed while answering (``message`` says which).
    ``transient`` is true for a refusal that may pass (more detail requests waiting than the
    session answers, the run still running): the same request asked again later may be
    answered. Off the wire when false: every other answer stays the same when asked again."""

    type: Literal["detail_failed"] = "detail_failed"
    gone: bool = True
    message: str
    transient: bool = Field(
        default=False, exclude_if=lambda v: not v, json_schema_extra={"x-wire-optional": True}
    )


class JaxprEqnsSent(EventBase):
    """The answer to a DetailRequest for an :class:`EqnRange` of a jaxpr view (design 0045):
    ``detail_of`` the range's ``detail_id``, ``seq`` the seq of the event that holds the view
    (its field ``field``). ``eqns`` are the view's eqns ``start`` .. ``start + len(eqns)``, as
    the eager event has them; ``text`` is JAX's text of those eqns (the lines of the whole
    view's ``text`` from the first eqn's first line up to the next eqn's, or to the closing
    ``in (...)`` line, each ending in a newline); ``more``: the line that stands for the eqns
    still not sent after these (``""`` after the last range). The page puts ``text`` where the
    view's ``more`` line was, then ``more``."""

    type: Literal["jaxpr_eqns_sent"] = "jaxpr_eqns_sent"
    field: str
    start: int
    eqns: list[EqnView]
    text: str
    more: str = ""


class ItemsSent(EventBase):
    """The answer to a DetailRequest for a :class:`ListRange` (design 0045, list ranges):
    ``detail_of`` the range's ``detail_id``, ``seq`` the seq of the event that holds the list.
    ``path``: where the list is, from the event, dotted (``residuals``, ``known.outvars``,
    ``jaxpr.constvars``); ``items`` are that list's items ``start`` .. ``start + len(items)``
    as the eager event has them (:class:`VarView`, :class:`ConstVarView`, an exhibit's row). The
    page appends them to the list and drops the range from its holder's ``list_ranges``."""

    type: Literal["items_sent"] = "items_sent"
    path: str
    start: int
    items: list[Any]


class WatchedFileChanged(EventBase):
    """The file a page follows (``FollowRequest``), sent outside any run (``run_id`` ""): when
    the page starts following and after every save. ``path``: the file's absolute path;
    ``exhibit``: the exhibit ``jaxscope watch --exhibit`` names; ``code``: the file's text (at
    most ``MAX_CODE_CHARS`` characters), which the page runs as the user's code; None when there
    is none to run, ``problem`` then says why (the file was deleted or renamed, is too long, is
    not UTF-8, or this server watches no file) and the page keeps its last code."""

    type: Literal["watched_file_changed"] = "watched_file_changed"
    path: str
    exhibit: str
    code: str | None
    problem: str | None = None


class RoomOpened(EventBase):
    """The answer to ``open_room``, to the teacher's socket only: ``room`` goes in the students'
    link (``?room=``); ``token`` drives the room and stays in the teacher's page (it is never
    sent to a student). ``max_students`` and ``grace_s`` (how long the room waits for its
    teacher's page to come back before it ends) are the server's bounds."""

    type: Literal["room_opened"] = "room_opened"
    room: str
    token: str
    max_students: int
    grace_s: float


class RoomUpdated(EventBase):
    """A room's state, sent to its students (and its teacher, for ``students``) when one joins,
    the teacher drives or runs, or the number of students changes. ``teacher_run``: the teacher's
    current run (None before the first), whose events the server relays to the students (a
    student that joins late gets its events so far first, unless ``replayed`` is false: the run
    was too large to keep, and the student follows from the teacher's next run). ``teacher``:
    the teacher's page is connected (false during the grace period)."""

    type: Literal["room_updated"] = "room_updated"
    room: str
    exhibit: str
    code: str
    options: RunOptions = Field(default_factory=RunOptions)
    teacher_run: str | None = None
    cursor: int = -1
    students: int = 0
    teacher: bool = True
    replayed: bool = True


class RoomRefused(EventBase):
    """A room request that the server did not carry out, with why (``message``): an unknown or
    ended room, a full room or server, a drive without the teacher's token. The socket and its
    own runs carry on; a refused ``join_room`` follows nothing."""

    type: Literal["room_refused"] = "room_refused"
    room: str
    request: str
    message: str


class RoomClosed(EventBase):
    """The room ended for this socket: its teacher closed it or did not come back within the
    grace period, or the room sat idle too long, or this student fell too far behind the live
    stream (``message`` says which). The page stops following and keeps what it shows."""

    type: Literal["room_closed"] = "room_closed"
    room: str
    message: str


def without_previews(model: WireModelT) -> WireModelT:
    """A copy of ``model`` whose :class:`ValueView` previews are left out (``preview`` None,
    ``deferred`` true; a pending one dropped): the summary of a step event (its values stay in
    the worker). Only ``model`` itself and what holds a dropped preview are copied; the rest
    (avals, sources, texts) is shared with ``model``, so a summary must not be changed below its
    top level (the runner sets only its ``detail_id``)."""
    summary = _without_preview(model)
    return summary if summary is not model else model.model_copy()  # type: ignore[return-value]


def _pending_of(view: ValueView) -> PendingPreview | None:
    # The private attribute, read without pydantic's ``__getattr__`` (a step has dozens).
    private = view.__pydantic_private__
    return private.get("_pending") if private else None


def _without_preview(value: object) -> object:
    """``value`` with its previews left out: the same object when it holds none."""
    if isinstance(value, ValueView):
        pending = _pending_of(value)
        if value.preview is None and pending is None:
            return value
        if pending is not None:
            # A view is not changed once its event is built (a summary is never changed below
            # its top level): one summary serves every event that holds the view.
            kept = pending.summary_of(value)
            if kept is not None:
                return kept
        copy = value.model_copy(update={"preview": None, "deferred": True})
        copy._pending = None
        if pending is not None:
            pending.keep_summary(value, copy)
        return copy
    if isinstance(value, BaseModel):
        changed = _changes(value)
        return value.model_copy(update=changed) if changed else value
    if isinstance(value, (list, tuple)):
        items = [_without_preview(item) for item in value]
        if any(a is not b for a, b in zip(items, value, strict=True)):
            return items if isinstance(value, list) else tuple(items)
    return value


def _changes(model: BaseModel) -> dict[str, object]:
    changed: dict[str, object] = {}
    for name in _value_fields(type(model)):
        old = getattr(model, name)
        new = _without_preview(old)
        if new is not old:
            changed[name] = new
    return changed


@functools.cache
def _value_fields(cls: type[BaseModel]) -> tuple[str, ...]:
    """The fields of ``cls`` whose declared type can hold a :class:`ValueView` (a step's value
    lists, a write's values), so the walks above skip avals, sources and jaxpr views."""
    return tuple(
        name for name, f in cls.model_fields.items() if _may_hold_value(f.annotation, set())
    )


def _may_hold_value(tp: object, seen: set[type]) -> bool:
    if tp is ValueView:
        return True
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        if tp in seen:
            return False
        seen.add(tp)
        return any(_may_hold_value(f.annotation, seen) for f in tp.model_fields.values())
    return any(_may_hold_value(arg, seen) for arg in get_args(tp))


# What a summarised ValueView writes instead of its preview: ``"preview":null,"deferred":true``
# against the whole's ``"preview":"<text>"`` (the quotes around the text counted).
_DEFERRED_CHARS = len('null,"deferred":true') - len('""')


def deferred_margin(model: BaseModel) -> int:
    """A lower bound of how many bytes longer ``model``'s JSON is than its summary's
    (:func:`without_previews`) because of the previews still pending in it (each at least its
    ``PendingPreview.min_chars`` long); 0 when none is pending. The runner streams a summary
    from this without formatting them (docs/design/0013-ad-capture-speed.md)."""
    return deferred_state(model)[0]


def deferred_state(model: BaseModel) -> tuple[int, bool]:
    """:func:`deferred_margin`, and whether a pending preview's value is not computed yet
    (``PendingPreview.costly``: then the summary is streamed whatever its length, design
    0068)."""
    total = 0
    costly = False
    stack: list[object] = [model]
    while stack:
        value = stack.pop()
        if isinstance(value, ValueView):
            pending = _pending_of(value)
            if value.preview is None and pending is not None:
                total += pending.min_chars - _DEFERRED_CHARS
                costly = costly or pending.costly
        elif isinstance(value, BaseModel):
            stack.extend(getattr(value, name) for name in _value_fields(type(value)))
        elif isinstance(value, (list, tuple)):
            stack.extend(value)
    return total, costly


# The core's own events, in the order the union lists them; every exhibit's ``events.py`` has an
# ``EVENTS`` tuple of its own (``jaxscope.events`` checks that each lists every event it defines).
EVENTS: tuple[type[EventBase], ...] = (
    RunStarted,
    StageStarted,
    StageTimed,
    StdoutPrinted,
    JaxprStaged,
    RunQueued,
    RunAccepted,
    BudgetScaled,
    RunFinished,
    RunFailed,
    DetailFailed,
    JaxprEqnsSent,
    ItemsSent,
    WatchedFileChanged,
    RoomOpened,
    RoomUpdated,
    RoomRefused,
    RoomClosed,
)

TERMINAL_TYPES = frozenset({"run_finished", "run_failed"})


def is_terminal(event: EventBase) -> bool:
    """True for the events that end a run (``run_finished``, ``run_failed``)."""
    return event.type in TERMINAL_TYPES


if TYPE_CHECKING:
    # At run time these are the union of every event class (``jaxscope.events``).
    EventModel: TypeAlias = EventBase
    Event: TypeAlias = EventBase
    EVENT_ADAPTER: TypeAdapter[EventBase]

# The names resolved from ``jaxscope.events`` on first use (see the module docstring).
_UNION_NAMES = frozenset({"EventModel", "Event", "EVENT_ADAPTER", "EVENT_CLASSES", "json_schema"})


def __getattr__(name: str) -> Any:
    """``EventModel``, ``Event``, ``EVENT_ADAPTER``, ``EVENT_CLASSES`` and ``json_schema``, from
    :mod:`jaxscope.events` on first use. An exhibit's event class is not here: it is imported
    from ``exhibits.<id>.events`` (the AttributeError says so)."""
    if name.startswith("__"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    assembling = sys.modules.get("jaxscope.events")
    if assembling is not None and not getattr(assembling, "ASSEMBLED", False):
        raise ImportError(
            f"jaxscope.protocol.{name} was asked for while jaxscope.events assembles the event "
            "union, by a module the registry imports (exhibits/<id>/events.py, artefacts.py, "
            "exhibits/shown.py): such a module must not import the union at run time; annotate "
            "with jaxscope.protocol.EventBase, or import from an exhibit's events module"
        )
    from jaxscope import events

    if name in _UNION_NAMES:
        return getattr(events, name)
    owner = events.MODELS_BY_NAME.get(name)
    if owner is not None:
        raise AttributeError(
            f"module {__name__!r} has no attribute {name!r}: exhibits' events are imported "
            f"from their exhibit, {owner.__module__}"
        )
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# The kind of sandbox worker that runs an exhibit's probe (design 0025): "jax" (the JAX venv's
# interpreter, JAX imported), "torch" (the torch venv's interpreter: torch + torch_xla) or "tf"
# (the TensorFlow venv's: tensorflow-cpu, tf2jax and JAX, design 0066); "tpu_compile" (the JAX
# venv's, with libtpu from a folder of its own: compiles for a TPU v5e without one, design 0067);
# "accelerator" (a JAX worker that holds the host's accelerator: one at a time, design 0069).
WorkerKind = Literal["jax", "torch", "tf", "tpu_compile", "accelerator"]


class ExhibitInfo(WireModel):
    """One catalogue entry of ``GET /api/exhibits`` (static metadata; no JAX import).

    ``artefacts`` are the names ``jaxscope run --print`` accepts for this exhibit; ``worker``
    the kind of worker that runs it (the PyTorch/XLA track's are "torch"); ``unavailable`` why
    this server cannot run it and how to add it (the torch venv is not installed), else None.
    ``real_programs``: the programs of ``examples/real`` this exhibit's picker offers too (their
    sources in ``Catalogue.examples`` under ``real/<name>``); left off the wire when empty.
    """

    id: str
    title: str
    summary: str
    artefacts: list[str]
    default_example: str
    examples: list[str]
    real_programs: list[str] = Field(
        default_factory=list,
        exclude_if=lambda v: not v,
        json_schema_extra={"x-wire-optional": True},
    )
    worker: WorkerKind = "jax"
    unavailable: str | None = None


class Catalogue(WireModel):
    """The response of ``GET /api/exhibits``: exhibits plus the example sources by name."""

    exhibits: list[ExhibitInfo]
    examples: dict[str, str]


if __name__ == "__main__":
    # ``python -m jaxscope.protocol`` prints the whole wire schema, as ``-m jaxscope.events`` does.
    from jaxscope.events import json_schema as _json_schema

    print(json.dumps(_json_schema(), indent=2, sort_keys=True))
