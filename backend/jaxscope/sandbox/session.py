"""One user's session with the sandbox: a websocket connection, or one CLI invocation.

A session validates each request before touching a worker (oversized code, unknown exhibit →
``run_failed`` ``invalid_request``), leases a fresh worker from the pool for every run (a worker
serves one run and is killed after it, so a run sees the state of a fresh worker whatever the
session's or anyone's earlier runs did), runs one job at a time, and kills its worker when it
closes. A worker found gone before a job started (killed for writing or computing while idle:
:class:`~jaxscope.sandbox.worker.WorkerGone`) is replaced and the job retried once,
transparently. When the pool is at its ``max_workers`` cap, the run waits in the pool's fair
queue, never refused, and the session sends ``run_queued`` with its place until it gets a worker
or is cancelled. With a :class:`~jaxscope.sandbox.tenancy.Tenancy`, a client holds at most its
share of workers and idle sessions give theirs up to busy ones (see ``tenancy.py``).

Details on demand (``RunRequest.details == "on_demand"``, design 0023): the worker of a finished
run that streamed summaries is kept, for that run's DetailRequests only, until the session's
next run, its end, :data:`DETAILS_KEPT_S` without a request, or the pool's need of the slot for
someone's run; a DetailRequest after that is answered ``detail_failed`` (gone).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Collection
from typing import Literal

from jaxscope.protocol import (
    MAX_CODE_CHARS,
    DetailFailed,
    DetailRequest,
    EventModel,
    RunFailed,
    RunFinished,
    RunQueued,
    RunRequest,
    RunStarted,
    WorkerKind,
)
from jaxscope.sandbox import accelerators
from jaxscope.sandbox.kinds import kind_problem, worker_kind
from jaxscope.sandbox.pool import WorkerPool
from jaxscope.sandbox.tenancy import Tenancy
from jaxscope.sandbox.worker import (
    DETAILS_GONE,
    Emit,
    WorkerGone,
    WorkerProcess,
    WorkerStartError,
)

# How often a waiting run checks its place in the queue (seconds).
QUEUE_REPORT_S = 0.25
# A run that has waited this long (s) for the worker started for it is told so: a fork from the
# warm template takes a few tenths of a second and needs no word; a first start (the template
# imports JAX) or a torch worker's start takes seconds (design 0053).
START_REPORT_S = 1.0
# How long a finished run's details are kept without a DetailRequest (seconds), and at most
# in all (requests do not keep a worker, and its memory, forever).
DETAILS_KEPT_S = 600.0
DETAILS_MAX_S = 1800.0

# Clean-up tasks of killed workers, referenced so that they are not garbage-collected early.
_REAPERS: set[asyncio.Future[int | None]] = set()


async def reap_all() -> None:
    """Wait for the background clean-up of every worker a session dropped (before the event
    loop closes: a CLI run, a test)."""
    while _REAPERS:
        await asyncio.gather(*list(_REAPERS), return_exceptions=True)


def _reap(worker: WorkerProcess) -> None:
    """Kill ``worker`` and reap it in the background."""
    worker.kill()
    reaper = asyncio.ensure_future(worker.wait_closed())
    _REAPERS.add(reaper)
    reaper.add_done_callback(_REAPERS.discard)


def _abandon(acquiring: asyncio.Future[WorkerProcess]) -> None:
    """Give up a pending ``pool.acquire``: cancel it, or kill the worker it already got."""
    if not acquiring.done():
        acquiring.cancel()
    elif not acquiring.cancelled() and acquiring.exception() is None:
        worker = acquiring.result()
        worker.kill()
        reaper = asyncio.ensure_future(worker.wait_closed())
        _REAPERS.add(reaper)
        reaper.add_done_callback(_REAPERS.discard)


def request_problem(request: RunRequest, exhibits: Collection[str]) -> str | None:
    """Why ``request`` is refused before any worker sees it, or None when it is acceptable."""
    if len(request.code) > MAX_CODE_CHARS:
        return (
            f"the code is {len(request.code):,} characters long; jaxscope accepts at most "
            f"{MAX_CODE_CHARS:,}"
        )
    if request.exhibit not in exhibits:
        return f"unknown exhibit {request.exhibit!r}; known: {', '.join(sorted(exhibits))}"
    return kind_problem(worker_kind(request.exhibit, request.options, request.device))


# Events a run sends before the user's program has produced anything: an accelerator run holds
# them back until it is clear the run stays there (HeldPreamble).
_PREAMBLE = frozenset({"run_started", "stage_started", "stage_timed", "stdout_printed"})


class HeldPreamble:
    """An ``emit`` that holds an accelerator run's first events (:data:`_PREAMBLE`) back until
    the run sends anything else; when the run fails before that because the program needs more
    devices than the accelerator has (``accelerators.needs_more_devices``), the held events are
    dropped, nothing is emitted and :attr:`fallback` says why (the run then goes again to the
    CPU devices, design 0069). Queue events (``seq`` 0, not steps) pass at once."""

    def __init__(self, emit: Emit) -> None:
        self._emit = emit
        self._held: list[EventModel] = []
        self._streaming = False
        self.fallback: str | None = None

    async def emit(self, event: EventModel) -> None:
        if self._streaming or event.type in ("run_queued", "run_accepted"):
            await self._emit(event)
            return
        if event.type in _PREAMBLE:
            self._held.append(event)
            return
        started = next((e for e in self._held if isinstance(e, RunStarted)), None)
        if (
            isinstance(event, RunFailed)
            and started is not None
            and accelerators.needs_more_devices(event.message, accelerators.CPU_DEVICES)
        ):
            self._held = []
            self.fallback = accelerators.fallback_note(
                accelerators.attached() or started.backend, len(started.devices)
            )
            return
        self._streaming = True
        held, self._held = self._held, []
        for early in held:
            await self._emit(early)
        await self._emit(event)


class Session:
    """Runs a session's requests one at a time on its leased worker."""

    def __init__(
        self,
        pool: WorkerPool,
        exhibits: Collection[str],
        *,
        tenancy: Tenancy | None = None,
        owner: str | None = None,
        report_starts: bool = False,
    ) -> None:
        self.pool = pool
        # Whether a run that waits for a worker start is told so (``run_queued`` with reason
        # ``worker_starting``, after START_REPORT_S): the page's sessions; the CLI's need not.
        self.report_starts = report_starts
        self.exhibits = exhibits
        self.worker: WorkerProcess | None = None
        # The worker that served the session's last run (killed after it; kept for its pid and
        # stderr tail).
        self.last_worker: WorkerProcess | None = None
        self._lock = asyncio.Lock()
        self._cancel: asyncio.Event | None = None
        self.current_run_id: str | None = None
        # ``owner``: the client (address) the session serves (its share: tenancy.py).
        self.tenancy, self.owner = tenancy, owner
        if tenancy is not None:
            tenancy.join(self)
        # Details on demand: the worker that finished the session's last run, kept to answer
        # its DetailRequests (``details_run_id``) until the next run, the session's end,
        # DETAILS_KEPT_S of no request, or the pool's need of the slot (``WorkerPool.keep``).
        self.details_worker: WorkerProcess | None = None
        self.details_run_id: str | None = None
        # The pool the details worker came from (``WorkerPool.for_exhibit``).
        self._details_pool: WorkerPool = pool
        self._details_lock = asyncio.Lock()
        self._details_timer: asyncio.TimerHandle | None = None
        self._details_until = 0.0
        # The session's last run when it ended with ``run_failed`` and left no details (its
        # worker stopped: cancelled, a limit, a crash): (run_id, kind), so that a page asking
        # for one of its details is told why they are gone, not "the session ran again".
        self._ended_early: tuple[str, str] | None = None

    def holds_worker(self) -> bool:
        """Whether the session holds a live worker."""
        return self.worker is not None and self.worker.alive

    def held_kind(self) -> WorkerKind | None:
        """The kind of the live worker the session holds (tenancy.py), or None."""
        return self.worker.kind if self.worker is not None and self.worker.alive else None

    def cancel(self, run_id: str | None = None) -> bool:
        """Cancel the current run (if ``run_id`` is given, only when it is that run).
        Returns whether a run was cancelled; it ends with ``run_failed`` ``cancelled``."""
        if self._cancel is None or (run_id is not None and run_id != self.current_run_id):
            return False
        self._cancel.set()
        return True

    async def run(
        self, request: RunRequest, emit: Emit, *, wall_s: float | None = None
    ) -> RunFinished | RunFailed:
        """Run ``request``; every event goes through ``emit``, the last one (returned) being the
        run's only terminal event. ``wall_s`` overrides the pool's wall-clock limit."""
        problem = request_problem(request, self.exhibits)
        if problem is not None:
            failed = RunFailed(kind="invalid_request", message=problem, run_id=request.run_id)
            await emit(failed)
            return failed
        async with self._lock:
            # The previous run's details go with its worker before this run takes a slot.
            self.release_details()
            cancel = asyncio.Event()
            self._cancel, self.current_run_id = cancel, request.run_id
            try:
                return await self._run_locked(request, emit, cancel, wall_s)
            finally:
                self._cancel, self.current_run_id = None, None

    async def _run_locked(
        self, request: RunRequest, emit: Emit, cancel: asyncio.Event, wall_s: float | None
    ) -> RunFinished | RunFailed:
        if worker_kind(request.exhibit, request.options, request.device) != "accelerator":
            return await self._run_once(request, emit, cancel, wall_s)
        # On the accelerator, a program that asks for a larger mesh than the chip's devices
        # fails at once: it runs again on the 8 virtual CPU devices, and says so (design 0069).
        held = HeldPreamble(emit)
        terminal = await self._run_once(request, held.emit, cancel, wall_s)
        note = held.fallback
        if note is None:
            return terminal
        self.release_details()
        on_cpu = request.model_copy(update={"device": "cpu"})

        async def noted(event: EventModel) -> None:
            if isinstance(event, RunStarted):
                event = event.model_copy(update={"device_note": note})
            await emit(event)

        return await self._run_once(on_cpu, noted, cancel, wall_s)

    async def _run_once(
        self, request: RunRequest, emit: Emit, cancel: asyncio.Event, wall_s: float | None
    ) -> RunFinished | RunFailed:
        for attempt in (1, 2):
            worker = await self._lease(request, emit, cancel, wall_s)
            if isinstance(worker, RunFailed):
                self._ended_early = (request.run_id, worker.kind)
                return worker
            try:
                terminal = await worker.run(request, emit, cancel=cancel, wall_s=wall_s)
            except WorkerGone as exc:
                # Nothing was emitted for this run: retry it once on a fresh worker.
                self._drop(worker)
                if attempt == 2:
                    failed = RunFailed(
                        kind="worker_crashed", message=str(exc), run_id=request.run_id
                    )
                    await emit(failed)
                    return failed
                continue
            except BaseException:
                # The consumer went away (websocket closed, task cancelled) mid-run: the worker
                # is still busy with this job, so it cannot be reused.
                self._drop(worker)
                raise
            # A worker serves one run (worker.run kills it after the terminal event, unless it
            # keeps the run's details): reap it in the background; the session's next run
            # leases a fresh one.
            self.last_worker = worker
            self._ended_early = (
                (request.run_id, terminal.kind)
                if isinstance(terminal, RunFailed) and not worker.keeps_details
                else None
            )
            if worker.keeps_details:
                self.worker = None
                self._keep_details(worker, request)
            else:
                self._drop(worker)
            return terminal
        raise AssertionError("unreachable")

    def _keep_details(self, worker: WorkerProcess, request: RunRequest) -> None:
        self.details_worker, self.details_run_id = worker, request.run_id
        self._details_until = asyncio.get_running_loop().time() + DETAILS_MAX_S
        self._details_pool = self.pool.for_exhibit(request.exhibit, request.options, request.device)
        self._details_pool.keep(worker, self.release_details)
        self._restart_details_timer()

    def _restart_details_timer(self) -> None:
        if self._details_timer is not None:
            self._details_timer.cancel()
        loop = asyncio.get_running_loop()
        delay = min(DETAILS_KEPT_S, max(0.0, self._details_until - loop.time()))
        self._details_timer = loop.call_later(delay, self.release_details)

    def release_details(self) -> None:
        """Kill the worker that holds the last run's details (they are gone from now on)."""
        if self._details_timer is not None:
            self._details_timer.cancel()
            self._details_timer = None
        worker, self.details_worker = self.details_worker, None
        if worker is not None:
            self._details_pool.unkeep(worker)
            _reap(worker)

    def _gone_message(self, run_id: str) -> str:
        """Why the details of ``run_id`` are gone: its own early end when it was the session's
        last run (cancelled, stopped by a limit), else :data:`DETAILS_GONE`."""
        ended = self._ended_early
        if ended is None or ended[0] != run_id:
            return DETAILS_GONE
        how = "was cancelled" if ended[1] == "cancelled" else f"ended early ({ended[1]})"
        return (
            f"this run {how}: its worker was stopped, and its details with it: "
            "run again to see them"
        )

    async def detail(self, request: DetailRequest, emit: Emit) -> None:
        """Answer ``request`` with one event: the whole event behind the summary it names, or
        ``detail_failed`` (the run still running, its details gone, an unknown id)."""
        async with self._details_lock:
            worker = self.details_worker
            transient = False
            if request.run_id == self.current_run_id:
                message, gone = "the run is still running: its details come once it ends", False
                transient = True
            elif self.last_worker is None and worker is None:
                message, gone = "this session has run nothing yet: there are no details", True
            elif worker is None or request.run_id != self.details_run_id:
                message, gone = self._gone_message(request.run_id), True
            else:
                self._restart_details_timer()
                await worker.detail(request.run_id, request.detail_id, emit)
                if not worker.alive:
                    self.release_details()
                return
            await emit(
                DetailFailed(
                    run_id=request.run_id,
                    detail_id=request.detail_id,
                    gone=gone,
                    message=message,
                    transient=transient,
                )
            )

    def _drop(self, worker: WorkerProcess) -> None:
        """Kill ``worker`` and reap it in the background."""
        self.worker = None
        _reap(worker)

    async def _lease(
        self, request: RunRequest, emit: Emit, cancel: asyncio.Event, wall_s: float | None
    ) -> WorkerProcess | RunFailed:
        """The session's live worker, or a new one from the pool; or the terminal event (already
        emitted) when the run was cancelled while waiting, the pool stayed full for the run's
        wall-clock limit, or the worker could not start."""
        pool = self.pool.for_exhibit(request.exhibit, request.options, request.device)
        worker = self.worker
        if worker is not None and worker.alive and worker.kind == pool.kind:
            return worker
        if worker is not None and worker.alive:
            self._drop(worker)  # a worker of another kind cannot run this exhibit
        self.worker = None
        tenancy = self.tenancy
        share = pool.client_share  # a pool beside the main one: its own share (tenancy.py)
        eligible = None if tenancy is None else lambda: not tenancy.over_cap(self, pool.kind, share)
        now = pool.lease_now(eligible, self._leased)
        if now is not None:
            self.worker = now
            return now
        # A run is never refused for capacity: it waits in the pool's queue (no timeout) until
        # it gets a worker or is cancelled, and the page is told its place. Within the queue a
        # run whose client holds its share of workers lets the others by (tenancy.py).
        ticket = object()
        acquiring = asyncio.ensure_future(
            pool.acquire(eligible=eligible, ticket=ticket, on_lease=self._leased)
        )
        waiting = asyncio.ensure_future(cancel.wait())
        # The reporter ends on ``done`` as well as on its cancel: an ``emit`` that swallows a
        # cancellation (a Redis client retrying a command cut by it, a pool host's emit) would
        # otherwise keep its loop, and this run awaiting it, alive for good (design 0071).
        done = asyncio.Event()
        reporting = asyncio.ensure_future(self._report_queue(pool, request, emit, ticket, done))
        try:
            await asyncio.wait({acquiring, waiting}, return_when=asyncio.FIRST_COMPLETED)
        except BaseException:
            # This run itself was cancelled (its websocket closed) while waiting: the pool must
            # not hand the worker to nobody, which would hold it leased for good.
            _abandon(acquiring)
            raise
        finally:
            done.set()
            waiting.cancel()
            reporting.cancel()
            with contextlib.suppress(BaseException):
                await reporting
        failed: RunFailed | None = None
        if not acquiring.done():
            acquiring.cancel()
            with contextlib.suppress(BaseException):
                await acquiring
            failed = RunFailed(
                kind="cancelled", message="the run was cancelled", run_id=request.run_id
            )
        else:
            try:
                worker = acquiring.result()
            except WorkerStartError as exc:
                failed = RunFailed(kind="worker_crashed", message=str(exc), run_id=request.run_id)
        if failed is not None:
            await emit(failed)
            return failed
        assert worker is not None
        self.worker = worker
        return worker

    def _leased(self, worker: WorkerProcess) -> None:
        # At once, inside pool.acquire: the client's share counts this worker before the pool
        # looks at the next waiter (tenancy.py reads holds_worker()).
        self.worker = worker

    async def _report_queue(
        self,
        pool: WorkerPool,
        request: RunRequest,
        emit: Emit,
        ticket: object,
        done: asyncio.Event,
    ) -> None:
        """While the run waits in ``pool``'s queue, send ``run_queued`` when it starts waiting
        and whenever its place or the reason changes (checked every :data:`QUEUE_REPORT_S`),
        until cancelled or ``done`` is set."""
        last: tuple[int, str] | None = None
        waited_s = 0.0
        while not done.is_set():
            await asyncio.sleep(QUEUE_REPORT_S)
            waited_s += QUEUE_REPORT_S
            position = pool.queue_position(ticket)
            if position is None:
                continue
            reason: Literal["pool_full", "client_share", "worker_starting"] = (
                "pool_full" if pool.is_eligible(ticket) else "client_share"
            )
            estimate_s = pool.estimate_s(position)
            if reason == "pool_full" and not pool.must_wait(position):
                # Not a full pool: no warm worker was ready, and one is starting for this run.
                if not (self.report_starts and waited_s >= START_REPORT_S and pool.starting()):
                    continue
                reason, estimate_s = "worker_starting", pool.start_estimate_s()
            if (position, reason) == last:
                continue
            last = (position, reason)
            await emit(
                RunQueued(
                    run_id=request.run_id,
                    position=position,
                    waiting=pool.waiting(),
                    estimate_s=estimate_s,
                    reason=reason,
                    worker_kind=pool.kind,
                )
            )

    async def close(self) -> None:
        """Cancel any run and kill this session's worker."""
        if self.tenancy is not None:
            self.tenancy.leave(self)
        self.cancel()
        async with self._lock:
            self.release_details()
            if self.worker is not None:
                worker, self.worker = self.worker, None
                with contextlib.suppress(Exception):
                    await worker.close()
